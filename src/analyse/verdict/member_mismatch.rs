//! Rule 7, EtcdMemberMismatch: members that reject each other, or a membership that does not
//! match the Machines.

use super::evidence::{log_evidence, nodes_with_logs, removed_member_fault};
use super::members;
use super::{strings, verdict, Ctx, Verdict, VerdictCode};
use crate::probe::etcdlog::LogKind;

pub(super) fn member_mismatch(ctx: &Ctx) -> Option<Verdict> {
    // What makes members reject each other. Not `MemberRemovedInfo`: every member logs "removed
    // member" on each machine replacement (every rolling update); only a removed member that
    // still talks is a fault. Not `MemberUnknown` alone either: a member that lags behind a
    // membership change logs it until it catches up; it is quoted when the rule holds.
    let kinds = [
        LogKind::ClusterIdMismatch,
        LogKind::MemberIdMismatch,
        LogKind::MemberAlreadyBootstrapped,
    ];
    let mut nodes = nodes_with_logs(ctx, &kinds);
    for n in ctx.logs.keys() {
        if !nodes.contains(n) && removed_member_fault(ctx, n) {
            nodes.push(n.clone());
        }
    }
    // Every node's own member list, against the others' and the Machines'.
    let lists = ctx.membership();
    for n in &lists.nodes {
        if !nodes.contains(n) {
            nodes.push(n.clone());
        }
    }
    nodes.sort();
    if nodes.is_empty() && lists.problems.is_empty() {
        return None;
    }
    let quoted = [
        LogKind::ClusterIdMismatch,
        LogKind::MemberRemoved,
        LogKind::MemberIdMismatch,
        LogKind::MemberAlreadyBootstrapped,
        LogKind::MemberUnknown,
    ];
    let mut evidence = lists.problems.clone();
    evidence.extend(nodes.iter().flat_map(|n| log_evidence(ctx, n, &quoted)));
    let mut next = Vec::new();
    // Only members a majority of the lists agree on (members.rs), and a few of them: each step
    // removes a member, and a list is a node's word.
    for (id, url) in lists.strays.iter().take(members::MAX_REMOVALS) {
        next.push(format!(
            "Member {id} ({url}) has no Machine: KCP will not remove it. On a node with a healthy member: etcdctl member remove {id} (with --endpoints https://127.0.0.1:2379 and the certs under /etc/kubernetes/pki/etcd/), after checking with etcdctl member list -w table that it is the one named here"
        ));
    }
    if lists.strays.len() > members::MAX_REMOVALS {
        next.push(format!(
            "and {} more members without a Machine named in the evidence: compare etcdctl member list -w table with the control-plane Machines before removing any",
            lists.strays.len() - members::MAX_REMOVALS
        ));
    }
    next.extend(strings(&[
        "On a node with a healthy member: etcdctl member list -w table (with the certs under /etc/kubernetes/pki/etcd/) and compare with the control-plane Machines",
    ]));
    // The run's kubectl and the namespace as the API server takes it; `<name>` the admin's.
    next.push(format!(
        "A member from another cluster, one that was removed, or a Machine whose node is no member cannot heal by itself: let KCP remediate it (its MachineHealthCheck), or replace its Machine ({}) so KCP creates a fresh member",
        ctx.facts.kubectl.run(&format!(
            "delete machine <name> -n {}",
            crate::command::namespace(&ctx.facts.namespace)
        ))
    ));
    let summary = if lists.problems.is_empty() {
        format!("the network is fine, but etcd members reject each other ({}): cluster ID mismatch, removed member or member ID mismatch", nodes.join(", "))
    } else {
        format!(
            "the network is fine, but etcd's membership does not match the control plane: {}",
            lists.problems[0]
        )
    };
    verdict(
        VerdictCode::EtcdMemberMismatch,
        summary,
        nodes,
        evidence,
        next,
    )
}
