//! The parsers on real captures (tests/fixtures/firewall, made in a network namespace with
//! nft 1.0.6 and iptables 1.8.9), as the probe's filter keeps them and as the tools print them.

use std::net::IpAddr;

use super::*;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/firewall/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The SYN of from → to:port, as `to` sees it coming in.
fn syn_in(from: &str, to: &str, port: u16) -> Packet {
    Packet {
        src: ip(from),
        dst: ip(to),
        sport: None,
        dport: Some(port),
        new: true,
        incoming: true,
    }
}

fn chain<'a>(set: &'a Ruleset, table: &str, name: &str) -> &'a Chain {
    set.chains
        .iter()
        .find(|c| c.table == table && c.name == name)
        .unwrap_or_else(|| panic!("no chain {table} {name} in {set:#?}"))
}

fn rule(c: &Chain, id: RuleId) -> &Rule {
    c.rules.iter().find(|r| r.id == Some(id)).unwrap()
}

#[test]
fn nft_ruleset_reads_tables_chains_hooks_policies_handles_counters() {
    let set = Ruleset::parse_nft("nft", &fixture("nft-policy-drop.txt"));
    let input = chain(&set, "inet filter", "input");
    assert_eq!(input.hook, Hook::In);
    assert!(!input.policy_drop);
    let counted = rule(input, RuleId::Handle(8));
    assert_eq!(counted.action, Action::Drop);
    assert_eq!(counted.packets, Some(0));
    assert_eq!(
        counted.text,
        "ip saddr { 10.0.0.2, 10.0.0.3 } tcp dport { 2379, 2380 } drop"
    );
    let uncounted = rule(input, RuleId::Handle(9));
    assert_eq!(uncounted.packets, None);
    let output = chain(&set, "inet filter", "output");
    assert_eq!(output.hook, Hook::Out);
    assert_eq!(rule(output, RuleId::Handle(11)).action, Action::Reject);
    let hardening = chain(&set, "ip hardening", "input");
    assert!(hardening.policy_drop);
    assert_eq!(chain(&set, "ip hardening", "user").hook, Hook::Unknown);
    // The set's body is no chain.
    assert_eq!(set.chains.len(), 4);
}

#[test]
fn nft_counter_grows_between_two_reads() {
    let before = Ruleset::parse_nft("nft", &fixture("nft-counter-before.txt"));
    let after = Ruleset::parse_nft("nft", &fixture("nft-counter-after.txt"));
    let r = |s: &Ruleset| rule(chain(s, "inet filter", "input"), RuleId::Handle(8)).packets;
    assert_eq!(r(&before), Some(0));
    assert_eq!(r(&after), Some(2));
}

#[test]
fn nft_rules_fit_the_paths_they_can_touch() {
    let set = Ruleset::parse_nft("nft", &fixture("nft-policy-drop.txt"));
    let input = chain(&set, "inet filter", "input");
    let counted = rule(input, RuleId::Handle(8));
    assert_eq!(
        counted.fit(&syn_in("10.0.0.2", "10.0.0.1", 2380)),
        Fit::Surely
    );
    assert_eq!(
        counted.fit(&syn_in("10.0.0.2", "10.0.0.1", 2379)),
        Fit::Surely
    );
    // Another source, another port, another family.
    assert_eq!(counted.fit(&syn_in("10.0.0.9", "10.0.0.1", 2380)), Fit::No);
    assert_eq!(counted.fit(&syn_in("10.0.0.2", "10.0.0.1", 22)), Fit::No);
    assert_eq!(counted.fit(&syn_in("fd00::2", "fd00::1", 2380)), Fit::No);
    // A reply to the node's own connection: its destination port is ephemeral.
    let reply = Packet {
        src: ip("10.0.0.2"),
        dst: ip("10.0.0.1"),
        sport: Some(2380),
        dport: None,
        new: false,
        incoming: true,
    };
    assert_eq!(counted.fit(&reply), Fit::No);
    // A named set is not read: may match.
    assert_eq!(
        rule(input, RuleId::Handle(9)).fit(&syn_in("10.0.0.7", "10.0.0.1", 2380)),
        Fit::Maybe
    );
    // ct state invalid never matches a SYN; established accepts a reply only.
    assert_eq!(
        rule(input, RuleId::Handle(5)).fit(&syn_in("10.0.0.2", "10.0.0.1", 2380)),
        Fit::No
    );
    let hardening = chain(&set, "ip hardening", "input");
    let accept_2379 = rule(hardening, RuleId::Handle(4));
    assert_eq!(accept_2379.action, Action::Accept);
    assert_eq!(
        accept_2379.fit(&syn_in("10.0.0.2", "10.0.0.1", 2379)),
        Fit::Surely
    );
    assert_eq!(
        accept_2379.fit(&syn_in("10.0.0.2", "10.0.0.1", 2380)),
        Fit::No
    );
    assert_eq!(
        rule(hardening, RuleId::Handle(5)).fit(&syn_in("10.0.0.2", "10.0.0.1", 53)),
        Fit::No,
        "udp never fits a TCP packet"
    );
}

#[test]
fn iptables_save_reads_positions_counters_and_policies() {
    let raw = Ruleset::parse_iptables("iptables-legacy", &fixture("iptables-legacy-after.txt"));
    let input = chain(&raw, "ip filter", "INPUT");
    assert_eq!(input.hook, Hook::In);
    let multiport = rule(input, RuleId::Position(2));
    assert_eq!(multiport.action, Action::Drop);
    assert_eq!(multiport.packets, Some(2));
    assert_eq!(
        multiport.fit(&syn_in("10.0.0.2", "10.0.0.1", 2380)),
        Fit::Surely
    );
    assert_eq!(
        multiport.fit(&syn_in("10.0.0.3", "10.0.0.1", 2380)),
        Fit::No
    );
    let reject = rule(input, RuleId::Position(3));
    assert_eq!(reject.action, Action::Reject);
    assert_eq!(
        reject.fit(&syn_in("10.0.0.3", "10.0.0.1", 2380)),
        Fit::Surely
    );
    let output = chain(&raw, "ip filter", "OUTPUT");
    assert_eq!(output.policy_packets, Some(2));
    // The localnet rule (quoted comment, negated source, conntrack): never a path between nodes.
    let kube = chain(&raw, "ip filter", "KUBE-FIREWALL");
    assert_eq!(kube.hook, Hook::Unknown);
    assert_eq!(
        rule(kube, RuleId::Position(1)).fit(&syn_in("10.0.0.2", "10.0.0.1", 2380)),
        Fit::No
    );
    let six = Ruleset::parse_iptables("ip6tables-legacy", &fixture("ip6tables-legacy.txt"));
    let input6 = chain(&six, "ip6 filter", "INPUT");
    assert!(input6.policy_drop);
    assert_eq!(input6.policy_packets, Some(0));
}

#[test]
fn the_probe_filter_keeps_positions_of_the_rules_it_drops() {
    // As the probe keeps it: the JUMP line dropped, the others prefixed by their position.
    let kept = "*filter\n:INPUT ACCEPT [0:0]\n@2 [2:120] -A INPUT -s 10.0.0.2/32 -p tcp -m multiport --dports 2379,2380 -j DROP\nCOMMIT\n";
    let set = Ruleset::parse_iptables("iptables", kept);
    let r = rule(chain(&set, "ip filter", "INPUT"), RuleId::Position(2));
    assert_eq!(r.packets, Some(2));
}

#[test]
fn garbage_reads_as_nothing_and_never_panics() {
    for text in [
        "",
        "}}}}",
        "table",
        "\tchain x {",
        "*\n:\n@ [\n-A",
        "table ip t {\n\tchain c {\n\t\tip saddr { drop\n",
    ] {
        let _ = Ruleset::parse_nft("nft", text);
        let _ = Ruleset::parse_iptables("iptables", text);
    }
    let set = Ruleset::parse_nft("nft", "table ip t {\n\tchain c {\n\t\tip saddr 10.0.0.0/8 tcp dport 2000-3000 counter packets 5 bytes 1 drop # handle 3\n\t}\n}\n");
    let r = rule(chain(&set, "ip t", "c"), RuleId::Handle(3));
    assert_eq!(r.fit(&syn_in("10.1.2.3", "10.0.0.1", 2380)), Fit::Surely);
    assert_eq!(r.packets, Some(5));
}
