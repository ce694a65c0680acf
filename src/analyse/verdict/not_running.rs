//! Rule 3, EtcdNotRunning: a member that does not run, for a reason of its own.

use super::evidence::{describe, ip_of, log_evidence, newest, removed_member_fault, short_id};
use super::member_mismatch::member_mismatch;
use super::node::{etcd_running, own_cell, own_problem};
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::probe::etcdlog::LogKind;
use crate::probe::output::RuntimeQuery;
use crate::probe::NodeReport;

pub(super) fn not_running(ctx: &Ctx) -> Option<Verdict> {
    let stopped: Vec<&NodeReport> = ctx
        .nodes
        .iter()
        .copied()
        .filter(|n| {
            etcd_running(ctx, n) == Some(false)
                && (removed_member_fault(ctx, &n.name) || own_problem(ctx, &n.name))
        })
        .collect();
    if stopped.is_empty() {
        return None;
    }
    // A member that stopped because its own log says it was removed from the cluster (a VM
    // restored from an old snapshot restarts on a removed member's data) is a membership
    // problem, not a process one: say that, with the line that says so.
    if stopped.iter().all(|n| removed_member_fault(ctx, &n.name)) {
        return member_mismatch(ctx);
    }
    let names: Vec<String> = stopped.iter().map(|n| n.name.clone()).collect();
    let mut evidence = Vec::new();
    for n in &stopped {
        let p = n.probe().expect("etcd_running needs a probe");
        match newest(&p.etcd.containers) {
            Some(c) => evidence.push(format!(
                "{}: crictl ps -a --name etcd: newest container {} is {} (attempt {})",
                n.name,
                short_id(&c.id),
                c.state,
                c.attempt.unwrap_or(0)
            )),
            None if p.etcd.query == RuntimeQuery::Ok => evidence.push(format!(
                "{}: crictl ps -a --name etcd lists no etcd container",
                n.name
            )),
            None => evidence.push(format!(
                "{}: the container runtime could not be asked ({}), and its own etcd port refuses",
                n.name, p.etcd.query
            )),
        }
        if let Some(c) = own_cell(ctx, &n.name, 2379) {
            evidence.push(format!(
                "{}: its own {}:2379 is {}",
                n.name,
                ip_of(ctx, &n.name),
                describe(c)
            ));
        }
        evidence.extend(log_evidence(ctx, &n.name, &[LogKind::Fatal]));
    }
    // The other members' logs tell the same story: refused dials to the stopped members.
    for n in ctx
        .nodes
        .iter()
        .copied()
        .filter(|n| !names.contains(&n.name))
    {
        evidence.extend(log_evidence(ctx, &n.name, &[LogKind::ConnectionRefused]));
    }
    verdict(
        VerdictCode::EtcdNotRunning,
        format!("etcd is not running on {}: a separate issue from etcd networking", names.join(", ")),
        names.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs <container id>; journalctl -u kubelet --since -1h | grep -i etcd", names.join(", ")),
            "Check the static-pod manifest /etc/kubernetes/manifests/etcd.yaml and that kubelet is running".into(),
        ],
    )
}
