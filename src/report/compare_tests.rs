//! The comparison of two judged reports: each kind of change from a report changed in that
//! one way, and nothing else named.

use super::*;
use crate::report::v1alpha2::{
    EtcdMetrics, LeaderView, NetworkAssessment, PeerMetrics, PolicyEvaluation, PortReach,
    ReadResult,
};

use crate::testing::peers_dropped as blocked;

/// The same cluster with every path open and the verdict Healthy.
fn healthy() -> DiagnoseReport {
    crate::testing::healed(blocked())
}

fn compare(before: &DiagnoseReport, after: &DiagnoseReport) -> Comparison {
    let judged = |r, created: &str| Judged {
        bundle: format!("{created}.tar.gz"),
        created: created.into(),
        plugin_version: "0.0.0".into(),
        report: r,
    };
    Comparison::of(
        &judged(before, "2026-12-07T03:40:00Z"),
        &judged(after, "2026-12-07T03:50:22Z"),
    )
}

fn failing_peer_cells(r: &DiagnoseReport) -> BTreeSet<(u16, String, String)> {
    r.matrices
        .iter()
        .flat_map(|m| m.peer_cells().filter(|c| !c.state.is_ok()))
        .map(|c| (c.port, c.from.clone(), c.to.clone()))
        .collect()
}

#[test]
fn a_cut_is_the_paths_that_broke_and_nothing_else() {
    let (good, new) = (healthy(), blocked());
    let c = compare(&good, &new);
    let broke: BTreeSet<(u16, String, String)> = c
        .paths
        .iter()
        .inspect(|p| assert_eq!(p.change, PathMove::Broke, "{p:?}"))
        .map(|p| (p.port, p.from.clone(), p.to.clone()))
        .collect();
    assert_eq!(broke, failing_peer_cells(&new));
    assert!(!broke.is_empty());
    assert_eq!(c.before.verdict, VerdictCode::Healthy);
    assert_eq!(c.after.verdict, new.verdict.code);
    assert_eq!(c.exit_code, new.result.exit_code);
    assert!(c.nodes.is_empty() && c.members.is_empty() && c.rules.is_empty());
    assert!(c.metrics.is_empty() && c.conditions.is_empty());
    assert!(!c.is_unchanged());
    // A bundle against itself: nothing changed.
    assert!(
        compare(&new, &new).is_unchanged(),
        "{:?}",
        compare(&new, &new)
    );
}

#[test]
fn paths_that_work_again_are_recovered() {
    let c = compare(&blocked(), &healthy());
    assert!(!c.paths.is_empty());
    assert!(c.paths.iter().all(|p| p.change == PathMove::Recovered));
    assert_eq!(c.paths.len(), failing_peer_cells(&blocked()).len());
}

#[test]
fn a_path_failing_otherwise_is_changed_and_one_probed_once_is_a_note() {
    let good = blocked();
    let mut new = blocked();
    let cell = new.matrices[1]
        .cells
        .iter_mut()
        .find(|c| c.from != c.to && !c.state.is_ok())
        .unwrap();
    let was = cell.state;
    cell.state = CellState::Refused;
    let (from, to) = (cell.from.clone(), cell.to.clone());
    let other = new.matrices[0]
        .cells
        .iter_mut()
        .find(|c| c.from != c.to)
        .unwrap();
    other.state = CellState::NotProbed;
    let c = compare(&good, &new);
    assert_eq!(c.paths.len(), 1, "{:?}", c.paths);
    let p = &c.paths[0];
    assert_eq!(
        (&p.from, &p.to, p.before, p.after),
        (&from, &to, was, CellState::Refused)
    );
    assert_eq!(p.change, PathMove::Changed);
    assert!(
        c.notes.iter().any(|n| n.starts_with("1 path(s)")),
        "{:?}",
        c.notes
    );
}

#[test]
fn a_supervisor_port_that_closes_broke_unless_seen_from_elsewhere() {
    let mut good = blocked();
    let name = good.nodes[0].name.clone();
    good.nodes[0].supervisor_reach = vec![PortReach {
        port: 2380,
        state: PortState::Open,
    }];
    let mut new = good.clone();
    new.nodes[0].supervisor_reach[0].state = PortState::Timeout;
    let c = compare(&good, &new);
    assert_eq!(c.supervisor_reach.len(), 1);
    let r = &c.supervisor_reach[0];
    assert_eq!((&r.node, r.port, r.change), (&name, 2380, PathMove::Broke));
    // Seen from this machine (ssh) after the Supervisor (jumpbox): not a change.
    new.nodes[0].reach_from = Some(crate::report::v1alpha2::Vantage::ThisMachine);
    good.nodes[0].reach_from = Some(crate::report::v1alpha2::Vantage::Supervisor);
    let c = compare(&good, &new);
    assert!(c.supervisor_reach.is_empty());
    assert!(c.notes.iter().any(|n| n.contains(&name)), "{:?}", c.notes);
}

fn leader_says(r: &mut DiagnoseReport, node: usize, leader: Option<usize>) {
    let ids = ["8e9e05c52164694d", "91bc3c398fb3c146", "fd422379fda50e48"];
    for (i, l) in r.logs.iter_mut().enumerate() {
        l.summary.local_member_id = Some(ids[i].into());
    }
    r.logs[node].summary.leader = Some(LeaderView {
        state: if leader.is_some() {
            LeaderState::Known
        } else {
            LeaderState::NoLeader
        },
        leader_id: leader.map(|i| ids[i].to_string()),
        since: None,
        term: None,
        last_change: None,
        changes: 0,
    });
}

#[test]
fn the_leader_changed_lost_and_regained() {
    let mut one = healthy();
    for n in 0..3 {
        leader_says(&mut one, n, Some(0));
    }
    let mut other = healthy();
    for n in 0..3 {
        leader_says(&mut other, n, Some(2));
    }
    let mut none = blocked();
    for n in 0..3 {
        leader_says(&mut none, n, None);
    }
    let (first, third) = (one.nodes[0].name.clone(), one.nodes[2].name.clone());
    let c = compare(&one, &other);
    assert_eq!(c.leader.change, LeaderMove::Changed);
    assert_eq!(c.leader.before.names, vec![first.clone()]);
    assert_eq!(c.leader.after.names, vec![third]);
    assert_eq!(compare(&one, &none).leader.change, LeaderMove::Lost);
    assert_eq!(compare(&none, &one).leader.change, LeaderMove::Regained);
    assert_eq!(compare(&one, &one).leader.change, LeaderMove::Same);
    // Nothing said in one bundle: not compared, not a loss.
    assert_eq!(compare(&healthy(), &one).leader.change, LeaderMove::Unknown);
    // One node without a leader while the others name one: split, the leader lost.
    let mut split = one.clone();
    leader_says(&mut split, 1, None);
    let c = compare(&one, &split);
    assert_eq!(c.after.verdict, VerdictCode::Healthy);
    assert_eq!(c.leader.after.seen, LeaderSeen::Split);
    assert_eq!(c.leader.change, LeaderMove::Lost);
}

fn with_blocking(r: &mut DiagnoseReport, rule: &str, paths: &[PathRef]) {
    let json = serde_json::json!({
        "read": [], "realization": [],
        "evaluation": {
            "namespace": "ns-prod", "vms": [], "policies": [], "paths": [],
            "blocking": [{
                "rule": {
                    "namespace": "ns-prod", "policy": rule, "group": "crd.nsx.vmware.com",
                    "priority": 10, "ruleIndex": 0, "action": "Drop", "direction": "In"
                },
                "paths": paths,
            }],
            "warnings": [], "covering": [], "notes": []
        }
    });
    r.network_policy =
        Some(serde_json::from_value::<NetworkAssessment<PolicyEvaluation>>(json).unwrap());
}

fn empty_network(r: &mut DiagnoseReport) {
    let json = serde_json::json!({
        "read": [], "realization": [],
        "evaluation": {
            "namespace": "ns-prod", "vms": [], "policies": [], "paths": [], "blocking": [],
            "warnings": [], "covering": [], "notes": []
        }
    });
    r.network_policy =
        Some(serde_json::from_value::<NetworkAssessment<PolicyEvaluation>>(json).unwrap());
}

#[test]
fn a_security_policy_rule_that_now_blocks_is_named() {
    let mut good = healthy();
    empty_network(&mut good);
    let mut new = blocked();
    let path = PathRef {
        port: 2380,
        from: new.nodes[0].name.clone(),
        to: new.nodes[1].name.clone(),
    };
    with_blocking(&mut new, "deny-peers", std::slice::from_ref(&path));
    let c = compare(&good, &new);
    assert_eq!(c.rules.len(), 1, "{:?}", c.rules);
    let r = &c.rules[0];
    assert_eq!(r.source, RuleSource::SecurityPolicy);
    assert_eq!(r.change, RuleMove::NowMatches);
    assert!(r.rule.contains("deny-peers"), "{}", r.rule);
    assert_eq!(r.after, vec![path.clone()]);
    assert!(r.before.is_empty());
    // And the way back.
    let back = compare(&new, &good);
    assert_eq!(back.rules[0].change, RuleMove::NoLongerMatches);
    // Evaluated in one bundle only: a note, not a rule that appeared.
    let c = compare(&healthy(), &new);
    assert!(c.rules.is_empty());
    assert!(
        c.notes.iter().any(|n| n.contains("SecurityPolicies")),
        "{:?}",
        c.notes
    );
}

fn metrics_of(node: &str, leader_changes: u64, failures: u64, db: u64) -> EtcdMetrics {
    let read = ReadResult {
        outcome: crate::probe::output::QueryOutcome::Ok,
        detail: None,
    };
    let mut m: EtcdMetrics = serde_json::from_value(serde_json::json!({
        "node": node,
        "before": read,
        "after": read,
    }))
    .unwrap();
    m.leader_changes = Some(leader_changes);
    m.db_size_bytes = Some(db);
    m.peers = vec![serde_json::from_value::<PeerMetrics>(serde_json::json!({"id": "1"})).unwrap()];
    m.peers[0].sent_failures = Some(failures);
    m
}

#[test]
fn only_metrics_that_moved_enough_are_named() {
    let mut good = healthy();
    let mut new = blocked();
    let node = good.nodes[0].name.clone();
    const MIB: u64 = 1024 * 1024;
    good.etcd_metrics = vec![metrics_of(&node, 2, 0, 100 * MIB)];
    // Leader changes and failed sends went up; the database grew by 1 MiB: no news.
    new.etcd_metrics = vec![metrics_of(&node, 5, 1200, 101 * MIB)];
    let c = compare(&good, &new);
    let moved: Vec<(MetricName, u64, u64)> = c
        .metrics
        .iter()
        .map(|m| (m.metric, m.before, m.after))
        .collect();
    assert_eq!(
        moved,
        vec![
            (MetricName::LeaderChanges, 2, 5),
            (MetricName::FailedSends, 0, 1200)
        ]
    );
    assert!(c.metrics.iter().all(|m| m.node == node));
    // A metric of a node only one bundle has is not compared.
    new.etcd_metrics[0].node = "elsewhere".into();
    assert!(compare(&good, &new).metrics.is_empty());
}

#[test]
fn what_moves_enough_to_matter() {
    use MetricName::*;
    assert!(moved(LeaderChanges, 3, 4));
    assert!(moved(LeaderChanges, 9, 0), "a restart resets the counters");
    assert!(!moved(FailedSends, 7, 7));
    assert!(!moved(WalFsyncP99Ms, 2, 8), "under 10 ms");
    assert!(moved(WalFsyncP99Ms, 8, 32));
    assert!(!moved(BackendCommitP99Ms, 100, 112), "not half again");
    assert!(moved(BackendCommitP99Ms, 256, 16));
    const MIB: u64 = 1024 * 1024;
    assert!(!moved(DbSizeBytes, 100 * MIB, 105 * MIB));
    assert!(!moved(DbSizeBytes, 400 * MIB, 420 * MIB), "under a tenth");
    assert!(moved(DbSizeBytes, 100 * MIB, 200 * MIB));
}

#[test]
fn conditions_that_changed_on_objects_in_both() {
    let good = healthy();
    let mut new = blocked();
    let kcp = new.header.control_plane.kcp.as_mut().unwrap();
    let kcp_name = kcp.name.clone();
    let c0 = kcp.conditions[0].clone();
    kcp.conditions[0].status = if c0.status == "True" { "False" } else { "True" }.into();
    let c = compare(&good, &new);
    assert_eq!(c.conditions.len(), 1, "{:?}", c.conditions);
    let k = &c.conditions[0];
    assert_eq!(k.object, format!("KubeadmControlPlane {kcp_name}"));
    assert_eq!(k.kind, c0.kind);
    assert_eq!(k.before.as_ref().unwrap().status, c0.status);
}

#[test]
fn members_added_removed_and_changed() {
    use crate::report::v1alpha2::Member;
    let member = |id: &str, name: &str, url: &str| Member {
        id: Some(id.parse().unwrap()),
        name: Some(name.into()),
        peer_urls: vec![url.into()],
        client_urls: vec![],
        is_learner: false,
    };
    let set = |r: &mut DiagnoseReport, ms: Vec<Member>| {
        let p = r.nodes[0].probe.as_mut().unwrap();
        p.members.outcome = QueryOutcome::Ok;
        p.members.members = ms;
    };
    let mut good = healthy();
    set(
        &mut good,
        vec![
            member("a1", "cp1", "https://198.18.0.11:2380"),
            member("b2", "cp2", "https://198.18.0.12:2380"),
        ],
    );
    let mut new = healthy();
    set(
        &mut new,
        vec![
            member("a1", "cp1", "https://198.18.0.21:2380"),
            member("c3", "cp3", "https://198.18.0.13:2380"),
        ],
    );
    let c = compare(&good, &new);
    let got: Vec<(Presence, Option<String>)> = c
        .members
        .iter()
        .map(|m| {
            (
                m.change,
                m.after
                    .as_ref()
                    .or(m.before.as_ref())
                    .and_then(|m| m.name.clone()),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Presence::Changed, Some("cp1".into())),
            (Presence::Removed, Some("cp2".into())),
            (Presence::Added, Some("cp3".into())),
        ]
    );
    // Read in one bundle only: a note.
    let c = compare(&healthy(), &new);
    assert!(c.members.is_empty());
    assert!(
        c.notes.iter().any(|n| n.contains("member list")),
        "{:?}",
        c.notes
    );
}

#[test]
fn the_comparison_round_trips_as_json() {
    let c = compare(&healthy(), &blocked());
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["kind"], "DiagnoseComparison");
    assert_eq!(json["paths"][0]["change"], "Broke");
    assert_eq!(json["before"]["verdict"], "Healthy");
    assert_eq!(serde_json::from_value::<Comparison>(json).unwrap(), c);
}

#[test]
fn a_guest_firewall_rule_that_now_drops_is_named() {
    use crate::report::v1alpha2::{FirewallRule, PacketLocation, PathPlace, Place};
    let mut good = healthy();
    good.packet_location = Some(PacketLocation {
        summary: vec![],
        paths: vec![],
        nodes: vec![],
    });
    let mut new = blocked();
    let (a, b) = (new.nodes[0].name.clone(), new.nodes[1].name.clone());
    let rule = FirewallRule {
        node: b.clone(),
        tool: "nft".into(),
        table: "inet filter".into(),
        chain: "input".into(),
        rule: "handle 7".into(),
        text: "tcp dport 2380 drop".into(),
        packets: Some(3),
    };
    new.packet_location = Some(PacketLocation {
        summary: vec![],
        paths: vec![PathPlace {
            from: a.clone(),
            to: b.clone(),
            port: 2380,
            state: CellState::Timeout,
            place: Place::InsideGuest,
            rules: vec![rule],
            why: None,
        }],
        nodes: vec![],
    });
    let c = compare(&good, &new);
    assert_eq!(c.rules.len(), 1, "{:?}", c.rules);
    let r = &c.rules[0];
    assert_eq!(
        (r.source, r.change),
        (RuleSource::GuestFirewall, RuleMove::NowMatches)
    );
    assert_eq!(
        r.rule,
        format!("{b}: nft inet filter input: tcp dport 2380 drop")
    );
    assert_eq!(
        r.after,
        vec![PathRef {
            port: 2380,
            from: a,
            to: b
        }]
    );
}
