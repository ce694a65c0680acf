//! The fabric's verdicts on captured rulesets (captures/README.md: what the lab loads for each
//! fault, listed by nft 1.0.6), and on the shapes newer nft writes.

use super::*;

const NODES: [&str; 3] = ["cp1", "cp2", "cp3"];

fn links() -> Vec<Link> {
    (1..=3)
        .map(|i| Link {
            node: format!("cp{i}"),
            ip: Ipv4Addr::new(198, 18, 0, 10 + i),
            device: format!("v{i}"),
        })
        .collect()
}

fn ip(node: &str) -> Ipv4Addr {
    links().into_iter().find(|l| l.node == node).unwrap().ip
}

fn capture(name: &str) -> (String, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fabric/captures");
    let read = |ext: &str| {
        std::fs::read_to_string(dir.join(format!("{name}.{ext}")))
            .unwrap_or_else(|e| panic!("{name}.{ext}: {e}"))
    };
    (read("json"), read("nft"))
}

fn fabric(name: &str) -> Fabric {
    let (json, text) = capture(name);
    Fabric::parse(&json, Some(&text), links()).unwrap()
}

/// Every ordered pair of different nodes.
fn pairs() -> Vec<(&'static str, &'static str)> {
    NODES
        .iter()
        .flat_map(|a| NODES.iter().map(move |b| (*a, *b)))
        .filter(|(a, b)| a != b)
        .collect()
}

fn comment(v: &Verdict) -> Option<&str> {
    v.rule()?.comment.as_deref()
}

#[test]
fn nft_1_0_6_json_needs_the_text_for_the_devices() {
    let (json, text) = capture("block-port-2380");
    let err = Fabric::parse(&json, None, links()).unwrap_err().to_string();
    assert!(err.contains("no device"), "{err}");
    let devices = devices_from_text(&text);
    assert_eq!(devices.len(), 6, "{devices:?}");
    assert_eq!(devices[&("etcdnet".into(), "in1".into())], ["v1"]);
    assert_eq!(devices[&("etcdnet".into(), "out3".into())], ["v3"]);
}

#[test]
fn healthy_delivers_everything() {
    let f = fabric("healthy");
    for (a, b) in pairs() {
        for port in [22, 2379, 2380, 6443] {
            assert_eq!(
                f.syn(a, ip(b), port),
                Verdict::Delivered,
                "{a} → {b}:{port}"
            );
        }
    }
}

#[test]
fn block_port_drops_that_port_only() {
    let f = fabric("block-port-2380");
    for (a, b) in pairs() {
        let v = f.syn(a, ip(b), 2380);
        let Verdict::Dropped(rule) = &v else {
            panic!("{a} → {b}:2380: {v:?}");
        };
        // At the sender's own link, by the fault's rule.
        assert_eq!(rule.chain, format!("in{}", &a[2..]), "{v:?}");
        assert_eq!(comment(&v), Some("etcdnet-lab block-port:2380"));
        assert!(rule.handle.is_some());
        assert_eq!(f.syn(a, ip(b), 2379), Verdict::Delivered, "{a} → {b}:2379");
        assert_eq!(f.syn(a, ip(b), 22), Verdict::Delivered, "{a} → {b}:22");
    }
    // A node's own address never leaves it; the jumpbox is no member.
    assert_eq!(f.syn("cp1", ip("cp1"), 2380), Verdict::Delivered);
    assert_eq!(
        f.syn("cp1", Ipv4Addr::new(198, 18, 0, 1), 2380),
        Verdict::Delivered
    );
}

#[test]
fn drop_all_peers_drops_both_ports() {
    let f = fabric("drop-all-peers");
    for (a, b) in pairs() {
        for port in [2379, 2380] {
            let v = f.syn(a, ip(b), port);
            assert!(matches!(v, Verdict::Dropped(_)), "{a} → {b}:{port}: {v:?}");
            assert_eq!(comment(&v), Some("etcdnet-lab drop-all-peers"));
        }
        assert!(f.syn(a, ip(b), 6443).delivered());
    }
}

#[test]
fn reject_is_told_from_drop() {
    let f = fabric("reject-all-peers");
    let v = f.syn("cp1", ip("cp3"), 2379);
    assert!(matches!(v, Verdict::Rejected(_)), "{v:?}");
    assert!(v.stopped() && !v.delivered());
    assert!(matches!(
        f.syn("cp2", ip("cp1"), 2380),
        Verdict::Rejected(_)
    ));
    // cp3's chain is empty in this capture: its SYNs pass.
    assert_eq!(f.syn("cp3", ip("cp1"), 2380), Verdict::Delivered);
}

#[test]
fn isolate_cuts_one_node_off_both_ways() {
    let f = fabric("isolate-cp3");
    for other in ["cp1", "cp2"] {
        for port in [22, 2379, 2380] {
            assert!(
                f.syn(other, ip("cp3"), port).stopped(),
                "{other} → cp3:{port}"
            );
            assert!(
                f.syn("cp3", ip(other), port).stopped(),
                "cp3 → {other}:{port}"
            );
        }
    }
    assert!(f.syn("cp1", ip("cp2"), 2380).delivered());
}

#[test]
fn one_way_drops_the_syn_by_its_flags() {
    let f = fabric("one-way");
    // The first rule (`tcp flags & (syn | ack) == syn`) takes cp1's SYN to any port of cp2.
    let v = f.syn("cp1", ip("cp2"), 6443);
    assert!(matches!(v, Verdict::Dropped(_)), "{v:?}");
    assert_eq!(comment(&v), Some("etcdnet-lab drop-one-way:cp1:cp2"));
    assert!(f.syn("cp1", ip("cp2"), 2380).stopped());
    assert!(f.syn("cp2", ip("cp1"), 2380).delivered());
    assert!(f.syn("cp1", ip("cp3"), 2380).delivered());
}

#[test]
fn a_syn_is_small_from_an_ephemeral_port_and_ssh_is_dropped_on_delivery() {
    let f = fabric("cut-and-large");
    // `tcp sport { 2379, 2380 }` and `ip length > 1000` do not match a client's SYN.
    assert!(f.syn("cp1", ip("cp2"), 2380).delivered());
    assert!(f.syn("cp1", ip("cp3"), 2379).delivered());
    // block-ssh:cp2 sits in the egress towards cp2: every sender meets it.
    for from in ["cp1", "cp3"] {
        let v = f.syn(from, ip("cp2"), 22);
        let Verdict::Dropped(rule) = &v else {
            panic!("{from} → cp2:22: {v:?}");
        };
        assert_eq!(rule.chain, "out2");
        assert_eq!(comment(&v), Some("etcdnet-lab block-ssh:cp2"));
    }
    assert!(f.syn("cp2", ip("cp1"), 22).delivered());
}

/// The shapes of newer nft (`dev` in the chain object, a list of devices), a policy drop,
/// `jump`/`goto`/`return`/`accept`, ranges and prefixes, and what is not understood.
const NEWER: &str = r#"{"nftables": [
 {"metainfo": {"version": "1.1.1", "json_schema_version": 1}},
 {"table": {"family": "netdev", "name": "t", "handle": 1}},
 {"set": {"family": "netdev", "name": "nets", "table": "t", "type": "ipv4_addr",
          "flags": ["interval"], "elem": [{"prefix": {"addr": "198.18.0.0", "len": 30}}]}},
 {"chain": {"family": "netdev", "table": "t", "name": "edge", "handle": 1, "type": "filter",
            "hook": "ingress", "prio": -10, "policy": "drop", "dev": ["v1", "v2"]}},
 {"chain": {"family": "netdev", "table": "t", "name": "late", "handle": 2, "type": "filter",
            "hook": "ingress", "prio": 10, "policy": "accept", "dev": "v1"}},
 {"chain": {"family": "netdev", "table": "t", "name": "ports", "handle": 3}},
 {"chain": {"family": "netdev", "table": "t", "name": "odd", "handle": 4}},
 {"rule": {"family": "netdev", "table": "t", "chain": "edge", "handle": 5, "expr": [
   {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}},
              "right": {"set": [{"range": ["198.18.0.11", "198.18.0.12"]}]}}},
   {"counter": {"packets": 0, "bytes": 0}},
   {"jump": {"target": "ports"}}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "edge", "handle": 6, "expr": [
   {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}},
              "right": "@nets"}},
   {"goto": {"target": "odd"}}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "edge", "handle": 7, "expr": [
   {"match": {"op": "!=", "left": {"payload": {"protocol": "tcp", "field": "dport"}},
              "right": 22}},
   {"accept": null}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "ports", "handle": 8, "expr": [
   {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}},
              "right": {"range": [2379, 2380]}}},
   {"return": null}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "ports", "handle": 9, "expr": [
   {"accept": null}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "odd", "handle": 10, "expr": [
   {"queue": {"num": 1}}]}},
 {"rule": {"family": "netdev", "table": "t", "chain": "late", "handle": 11, "comment": "late",
   "expr": [{"match": {"op": ">=", "left": {"payload": {"protocol": "tcp", "field": "dport"}},
              "right": 6443}}, {"reject": {"type": "tcp reset"}}]}}
]}"#;

#[test]
fn newer_shapes_jumps_and_policies() {
    let f = Fabric::parse(NEWER, None, links()).unwrap();
    // cp1 → cp2:2380: edge jumps to ports, which returns for 2379-2380; @nets (198.18.0.0/30)
    // does not hold .12; `dport != 22` accepts; then `late` (v1 only) does not match 2380.
    assert_eq!(f.syn("cp1", ip("cp2"), 2380), Verdict::Delivered);
    // cp1 → cp2:6443: ports accepts at once (edge done), then `late` rejects.
    let v = f.syn("cp1", ip("cp2"), 6443);
    assert!(matches!(v, Verdict::Rejected(_)), "{v:?}");
    assert_eq!(comment(&v), Some("late"));
    // cp2 → cp1:22 (no `late` on v2): 22 is outside 2379-2380, so `ports` accepts it.
    assert!(f.syn("cp2", ip("cp1"), 22).delivered());
    // cp1 → cp3:22: no range, not @nets, dport 22: falls off `edge`, whose policy drops.
    let v = f.syn("cp1", ip("cp3"), 22);
    let Verdict::Dropped(rule) = &v else {
        panic!("{v:?}")
    };
    assert_eq!((rule.chain.as_str(), rule.handle), ("edge", None));
    // v3 has no chain at all.
    assert!(f.syn("cp3", ip("cp1"), 22).delivered());
}

#[test]
fn what_is_not_understood_is_unknown_never_a_guess() {
    // 198.18.0.1 (in @nets, /30) goes to `odd`, whose `queue` is not modelled.
    let f = Fabric::parse(NEWER, None, links()).unwrap();
    let v = f.syn("cp1", Ipv4Addr::new(198, 18, 0, 1), 2380);
    let Verdict::Unknown(why) = &v else {
        panic!("{v:?}")
    };
    assert!(why.contains("queue") && why.contains("odd"), "{why}");
    assert!(decided(v).is_err());
    // A node the fabric has no link for.
    assert!(matches!(f.syn("cp9", ip("cp1"), 2380), Verdict::Unknown(_)));
    // A bridge table sees bridged frames: not modelled.
    let bridged = NEWER.replace(
        r#"{"table": {"family": "netdev", "name": "t", "handle": 1}},"#,
        r#"{"table": {"family": "netdev", "name": "t", "handle": 1}},
 {"table": {"family": "bridge", "name": "b", "handle": 2}},
 {"chain": {"family": "bridge", "table": "b", "name": "fwd", "handle": 1, "type": "filter",
            "hook": "forward", "prio": 0, "policy": "accept"}},"#,
    );
    let f = Fabric::parse(&bridged, None, links()).unwrap();
    assert!(matches!(f.syn("cp1", ip("cp2"), 2380), Verdict::Unknown(_)));
    // Not nft's JSON at all.
    assert!(Fabric::parse("{}", None, links()).is_err());
    assert!(Fabric::parse("not json", None, links()).is_err());
}
