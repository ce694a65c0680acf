//! Membership from the nodes' own member lists, and rollouts: a provisioning or deleting
//! Machine is shown, never deciding; a member no Machine stands for, a learner that never caught
//! up, two cluster IDs or a Machine whose node is no member is `EtcdMemberMismatch`.

use super::tests::*;
use super::*;
use crate::probe::output::*;
use crate::probe::{ReachError, ReachErrorKind};
use crate::supervisor::*;
use crate::testing::facts_with_vms;

fn member(i: u8, name: Option<&str>, learner: bool) -> Member {
    Member {
        id: format!("aaaa{i}").parse().ok(),
        name: name.map(str::to_string),
        peer_urls: vec![format!("https://198.18.0.1{i}:2380")],
        client_urls: vec![],
        is_learner: learner,
    }
}

fn lists(p: &mut [ProbeOutput], cluster: &str, members: &[Member]) {
    for x in p.iter_mut() {
        x.members = Members {
            outcome: QueryOutcome::Ok,
            http_status: Some(200),
            cluster_id: Some(cluster.into()),
            members: members.to_vec(),
            truncated: false,
            ms: Some(2),
            detail: None,
        };
    }
}

fn three() -> Vec<Member> {
    (1..=3)
        .map(|i| member(i, Some(&format!("cp{i}")), false))
        .collect()
}

fn judge(facts: &ClusterFacts, p: Vec<ProbeOutput>) -> Verdict {
    diagnose(facts, &cluster(p), DEFAULT_SINCE).verdict
}

#[test]
fn matching_lists_are_healthy() {
    let mut p = healthy3();
    lists(&mut p, "c1", &three());
    let v = judge(&facts_with_vms(3), p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
}

/// A VM deleted by hand left its member: quorum holds, every path works, and yet.
#[test]
fn a_member_without_a_machine_is_a_mismatch() {
    let mut p = healthy3();
    let mut m = three();
    m.push(member(4, Some("cp4"), false));
    lists(&mut p, "c1", &m);
    let v = judge(&facts_with_vms(3), p);
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.evidence[0].starts_with(
            "member aaaa4 (cp4, peer URL https://198.18.0.14:2380; listed by cp1, cp2, cp3): no control-plane Machine's VM has its address"
        ),
        "{v:#?}"
    );
    assert!(
        v.next_steps[0].contains("etcdctl member remove aaaa4"),
        "{v:#?}"
    );
}

#[test]
fn a_learner_that_never_caught_up() {
    let mut p = healthy3();
    let mut m = three();
    m[2].is_learner = true;
    lists(&mut p, "c1", &m);
    let v = judge(&facts_with_vms(3), p.clone());
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    assert!(v.evidence[0].contains("still a learner on cp3"), "{v:#?}");

    // During a rollout (a fourth Machine provisioning) a learner is the join under way.
    let mut facts = facts_with_vms(4);
    facts.nodes[3].vm.as_mut().unwrap().ip = None;
    facts.nodes[3].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Provisioning {
        since: Some("2026-12-04T07:55:00Z".into()),
        machine_phase: Some("Provisioned".into()),
        waiting_for: ProvisioningStep::NodeJoin,
    });
    let v = judge(&facts, p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
}

#[test]
fn two_cluster_ids() {
    let mut p = healthy3();
    lists(&mut p, "c1", &three());
    p[2].members.cluster_id = Some("c2".into());
    let v = judge(&facts_with_vms(3), p);
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    assert!(
        v.evidence[0].contains("cp1, cp2 answer with cluster ID c1; cp3 answer with cluster ID c2")
    );
}

#[test]
fn a_machine_whose_node_is_no_member() {
    let mut p = healthy3();
    lists(&mut p, "c1", &three()[..2]);
    let v = judge(&facts_with_vms(3), p);
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.evidence[0].starts_with("cp3: its Machine's VM (198.18.0.13) is no etcd member"),
        "{v:#?}"
    );
}

/// Scale-up: a fourth Machine still provisioning, no IP, not probed: a rollout, not
/// `NodesUnreachable`.
#[test]
fn a_provisioning_machine_does_not_decide() {
    let mut facts = facts_with_vms(4);
    facts.nodes[3].vm.as_mut().unwrap().ip = None;
    facts.nodes[3].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Provisioning {
        since: Some("2026-12-04T07:55:00Z".into()),
        machine_phase: Some("Provisioning".into()),
        waiting_for: ProvisioningStep::IpAddress,
    });
    let mut nodes = cluster(healthy3());
    nodes.push(NodeReport {
        name: "cp4".into(),
        ip: None,
        outcome: Err(ReachError {
            kind: ReachErrorKind::NoAddress,
            message: "the VM has no IP yet".into(),
        }),
        reach_from: None,
        reach: vec![],
        host_key: None,
    });
    let d = diagnose(&facts, &nodes, DEFAULT_SINCE);
    assert_eq!(d.verdict.code, VerdictCode::Healthy, "{:#?}", d.verdict);
    assert!(
        d.verdict
            .notes
            .iter()
            .any(|n| n.starts_with("rollout in progress")
                && n.contains(
                    "cp4 Provisioning (waiting for an IP address) since 2026-12-04T07:55:00Z"
                )),
        "{:#?}",
        d.verdict
    );
    // Shown: the matrices have the fourth node.
    assert_eq!(d.matrices[0].nodes.len(), 4);
}

/// Scale-down: the member of the Machine being deleted was removed; kubelet keeps restarting
/// its static pod and its peers reject it. Part of the rollout while its Machine is deleting;
/// the same rejection with no Machine deleting is `EtcdMemberMismatch`.
#[test]
fn a_removed_member_of_a_deleting_machine_is_the_rollout() {
    let rejected = r#"{"level":"warn","ts":"2025-12-02T07:59:00.000Z","caller":"rafthttp/http.go:500","msg":"rejected stream from remote peer because it was removed","local-member-id":"aaaa1","remote-peer-id-stream-handler":"aaaa1","remote-peer-id-from":"aaaa4"}"#;
    let removed = r#"{"level":"info","ts":"2025-12-02T07:58:59.000Z","caller":"membership/cluster.go:472","msg":"removed member","cluster-id":"c1","local-member-id":"aaaa1","removed-remote-peer-id":"aaaa4","removed-remote-peer-urls":["https://198.18.0.14:2380"]}"#;
    let mut p = healthy3();
    lists(&mut p, "c1", &three());
    for x in p.iter_mut() {
        *x = with_log(x.clone(), &format!("{removed}\n{rejected}\n{rejected}"));
    }
    // cp4: still running its old member (its own list names it), kubelet restarting it.
    let mut p4 = healthy_probe(0);
    p4.node_ip = "198.18.0.14".into();
    p4.etcd.containers[0].state = "CONTAINER_EXITED".into();
    p4.etcd.containers[0].attempt = Some(5);
    // Its own last words before each exit (etcdserver/server.go: the removed member's log).
    let p4 = with_log(
        p4,
        r#"{"level":"warn","ts":"2025-12-02T07:59:30.000Z","caller":"etcdserver/server.go:1130","msg":"server error","error":"the member has been permanently removed from the cluster"}"#,
    );
    let mut nodes = cluster(p);
    nodes.push(NodeReport {
        name: "cp4".into(),
        ip: Some("198.18.0.14".parse().unwrap()),
        outcome: Ok(p4),
        reach_from: None,
        reach: vec![],
        host_key: None,
    });
    let mut facts = facts_with_vms(4);
    facts.nodes[3].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Deleting {
        since: Some("2026-12-04T07:58:00Z".into()),
        machine_phase: Some("Deleting".into()),
    });
    let v = diagnose(&facts, &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("cp4 Deleting since 2026-12-04T07:58:00Z")),
        "{v:#?}"
    );
    // No Machine deleting: cp4 is one of the control plane, and its peers reject it.
    let facts = facts_with_vms(4);
    let v = diagnose(&facts, &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
}
