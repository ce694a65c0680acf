//! Placing the failing paths with the nodes' own rules, on real captures
//! (tests/fixtures/firewall): node b (10.0.0.1) drops a (10.0.0.2) and c (10.0.0.3) on 2379 and
//! 2380 with `ip saddr { 10.0.0.2, 10.0.0.3 } tcp dport { 2379, 2380 } counter drop`.

use serde_json::json;

use super::*;
use crate::analyse::matrix;
use crate::probe::firewall::Firewall;
use crate::probe::output::ProbeOutput;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/firewall/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn read(tool: &str, text: &str) -> FirewallRead {
    FirewallRead {
        tool: tool.into(),
        outcome: ReadOutcome::Ok,
        text: Some(text.into()),
        lines: 10,
        kept: 10,
        cut: 0,
        detail: None,
    }
}

const EMPTY_NFT: &str = "table inet filter { # handle 1\n\tchain input { # handle 1\n\t\ttype filter hook input priority filter; policy accept;\n\t}\n}\n";

fn both(text: &str) -> Firewall {
    Firewall {
        before: vec![read("nft", text)],
        after: vec![read("nft", text)],
    }
}

/// Nodes a (10.0.0.2), b (10.0.0.1): a's path to b on `port` as `to_b`, b's to a working.
fn nodes(fa: Firewall, fb: Firewall, to_b: &str, port: u16) -> Vec<NodeReport> {
    let probe = |ip: &str, peer: &str, state: &str, fw: Firewall| -> ProbeOutput {
        let mut p: ProbeOutput = serde_json::from_value(json!({
            "schemaVersion": 1,
            "nodeIp": ip,
            "paths": [
                {"target": ip, "port": port, "own": true, "tcp": "Connected", "tls": "Completed", "httpStatus": 200},
                {"target": peer, "port": port, "own": false, "tcp": state, "tls": if state == "Connected" { "Completed" } else { "NotTried" }, "httpStatus": 200}
            ]
        }))
        .unwrap();
        p.firewall = fw;
        p
    };
    let node = |name: &str, ip: &str, p: ProbeOutput| NodeReport {
        name: name.into(),
        ip: Some(ip.parse().unwrap()),
        outcome: Ok(p),
        reach_from: None,
        reach: vec![],
        host_key: None,
    };
    vec![
        node("a", "10.0.0.2", probe("10.0.0.2", "10.0.0.1", to_b, fa)),
        node(
            "b",
            "10.0.0.1",
            probe("10.0.0.1", "10.0.0.2", "Connected", fb),
        ),
    ]
}

fn locate_on(n: &[NodeReport], port: u16) -> PacketPlaces {
    locate(n, &[matrix::build(n, port)], NetworkStack::Unknown).expect("firewalls were read")
}

#[test]
fn a_rule_whose_counter_grew_is_inside_the_guest_named_with_its_packets() {
    let fb = Firewall {
        before: vec![read("nft", &fixture("nft-counter-before.txt"))],
        after: vec![read("nft", &fixture("nft-counter-after.txt"))],
    };
    let n = nodes(both(EMPTY_NFT), fb, "Timeout", 2380);
    let loc = locate_on(&n, 2380);
    assert_eq!(loc.paths.len(), 1);
    let p = &loc.paths[0];
    assert_eq!((p.from.as_str(), p.to.as_str()), ("a", "b"));
    assert_eq!(p.place, Place::InsideGuest);
    assert_eq!(p.rules[0].node, "b");
    assert_eq!(p.rules[0].rule, "handle 8");
    assert_eq!(p.rules[0].packets, Some(2));
    let ev = evidence(&loc).join("\n");
    assert!(
        ev.contains(
            "node b's own firewall drops it, inside the guest: nft inet filter input handle 8"
        ),
        "{ev}"
    );
    assert!(ev.contains("+2 packets during the checks"), "{ev}");
    assert!(!ev.contains(OUTSIDE), "{ev}");
    let steps = next_steps(&loc);
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert!(
        steps[0].contains("Node b's own firewall counted the dropped packets, inside the guest")
            && steps[0].contains("`nft -a list chain inet filter input`"),
        "{steps:?}"
    );
}

#[test]
fn a_hostile_name_never_reaches_a_command() {
    let hit = FirewallRule {
        node: "b".into(),
        tool: "nft".into(),
        table: "inet filter".into(),
        chain: "input; rm -rf /".into(),
        rule: "handle 8".into(),
        text: "drop".into(),
        packets: Some(3),
    };
    assert!(list_command(&hit).is_err());
    // A name the tool would read as an option (`-F` flushes the table).
    let option = FirewallRule {
        chain: "-F".into(),
        ..hit.clone()
    };
    assert!(list_command(&option).is_err());
    let ipt = FirewallRule {
        tool: "iptables-legacy".into(),
        table: "ip filter".into(),
        chain: "INPUT".into(),
        ..hit.clone()
    };
    assert_eq!(
        list_command(&ipt).as_deref(),
        Ok("iptables -t filter -L INPUT -v -n --line-numbers")
    );
}

/// A node names the program its rules were read with; the pasted command's program is never
/// that name, only one of nft, iptables, ip6tables.
#[test]
fn a_node_picks_no_program() {
    for tool in [
        "bash",
        "sh",
        "/usr/sbin/nft",
        "nft;reboot",
        "iptables-save",
        "",
    ] {
        let hit = FirewallRule {
            node: "b".into(),
            tool: tool.into(),
            table: "ip filter".into(),
            chain: "INPUT".into(),
            rule: "handle 8".into(),
            text: "drop".into(),
            packets: Some(3),
        };
        let why = list_command(&hit).unwrap_err();
        assert!(
            why.starts_with("no command: the node named its firewall tool"),
            "{why}"
        );
    }
    let hit = |tool: &str| FirewallRule {
        node: "b".into(),
        tool: tool.into(),
        table: "ip filter".into(),
        chain: "INPUT".into(),
        rule: "handle 8".into(),
        text: "drop".into(),
        packets: Some(3),
    };
    assert!(list_command(&hit("ip6tables-legacy"))
        .unwrap()
        .starts_with("ip6tables -t filter"));
    assert!(list_command(&hit("nft"))
        .unwrap()
        .starts_with("nft -a list chain ip filter INPUT"));
}

#[test]
fn a_counter_that_did_not_grow_is_not_the_drop() {
    // The same rule, not counting during the checks: nothing inside, both ends read.
    let text = fixture("nft-counter-after.txt");
    let n = nodes(both(EMPTY_NFT), both(&text), "Timeout", 2380);
    let loc = locate_on(&n, 2380);
    assert_eq!(loc.paths[0].place, Place::OutsideGuests);
    let ev = evidence(&loc).join("\n");
    assert!(ev.contains("the drop is outside the guests"), "{ev}");
}

#[test]
fn both_ends_read_and_nothing_is_outside_the_guests() {
    let n = nodes(both(EMPTY_NFT), both(EMPTY_NFT), "Timeout", 2379);
    let loc = locate_on(&n, 2379);
    assert_eq!(loc.paths[0].place, Place::OutsideGuests);
    let ev = evidence(&loc);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].starts_with("no firewall rule inside any node counted these packets: the drop is outside the guests"), "{ev:?}");
}

#[test]
fn a_rule_without_counter_or_a_policy_drop_may_be_inside_never_outside() {
    // nft-policy-drop: b's `ip hardening` input drops by policy, 2380 has no accept before
    // it; its chain `user` (no hook: reached from anywhere) drops 2380 and keeps no counter.
    // `inet filter` input's counted rule surely matches and counted nothing: the packets never
    // reached it, nor the rule after it.
    let text = fixture("nft-policy-drop.txt");
    let n = nodes(both(EMPTY_NFT), both(&text), "Timeout", 2380);
    let loc = locate_on(&n, 2380);
    let p = &loc.paths[0];
    assert_eq!(p.place, Place::MayBeInsideGuest);
    let names: Vec<String> = p.rules.iter().map(FirewallRule::name).collect();
    assert_eq!(
        names,
        [
            "nft ip hardening input policy",
            "nft ip hardening user handle 6"
        ]
    );
    let ev = evidence(&loc).join("\n");
    assert!(ev.contains("may be inside the guest"), "{ev}");
    assert!(!ev.contains(OUTSIDE), "{ev}");
    // On 2379 the hardening chain accepts first and the counted rule counted nothing.
    let n = nodes(both(EMPTY_NFT), both(&text), "Timeout", 2379);
    assert_eq!(locate_on(&n, 2379).paths[0].place, Place::OutsideGuests);
}

#[test]
fn an_end_not_read_leaves_the_path_undecided() {
    let denied = Firewall {
        before: vec![FirewallRead {
            tool: "nft".into(),
            outcome: ReadOutcome::Denied,
            detail: Some(
                "netlink: Error: cache initialization failed: Operation not permitted".into(),
            ),
            ..Default::default()
        }],
        after: vec![FirewallRead {
            tool: "nft".into(),
            outcome: ReadOutcome::Denied,
            ..Default::default()
        }],
    };
    let n = nodes(both(EMPTY_NFT), denied, "Timeout", 2380);
    let loc = locate_on(&n, 2380);
    assert_eq!(loc.paths[0].place, Place::Undecided);
    assert_eq!(loc.nodes[1].read, FirewallReadState::NotRead);
    let ev = evidence(&loc).join("\n");
    assert!(!ev.contains(OUTSIDE), "{ev}");
    assert!(
        ev.contains("node b: nft Denied before the checks: netlink"),
        "{ev}"
    );
    // A read cut past the probe's cap cannot say "nothing" either.
    let mut cut = both(EMPTY_NFT);
    cut.after[0].cut = 3;
    let n = nodes(both(EMPTY_NFT), cut, "Timeout", 2380);
    assert_eq!(locate_on(&n, 2380).paths[0].place, Place::Undecided);
}

#[test]
fn legacy_iptables_counters_place_the_drop_too() {
    let fb = Firewall {
        before: vec![
            read("nft", EMPTY_NFT),
            read("iptables-legacy", &fixture("iptables-legacy-before.txt")),
        ],
        after: vec![
            read("nft", EMPTY_NFT),
            read("iptables-legacy", &fixture("iptables-legacy-after.txt")),
        ],
    };
    let n = nodes(both(EMPTY_NFT), fb, "Timeout", 2380);
    let p = &locate_on(&n, 2380).paths[0];
    assert_eq!(p.place, Place::InsideGuest);
    assert_eq!(p.rules[0].name(), "iptables-legacy ip filter INPUT rule 2");
    assert_eq!(p.rules[0].packets, Some(2));
}

#[test]
fn probes_that_do_not_read_the_firewall_change_nothing() {
    let n = nodes(Firewall::default(), Firewall::default(), "Timeout", 2380);
    assert_eq!(
        locate(&n, &[matrix::build(&n, 2380)], NetworkStack::Unknown),
        None
    );
    // One node read, the other's probe older: undecided, never outside.
    let n = nodes(both(EMPTY_NFT), Firewall::default(), "Timeout", 2380);
    assert_eq!(locate_on(&n, 2380).paths[0].place, Place::Undecided);
}
