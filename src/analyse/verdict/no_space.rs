//! Rule 8, EtcdNoSpace: a NOSPACE alarm raised now.

use super::evidence::{last_time, log_evidence};
use super::{strings, verdict, Ctx, Verdict, VerdictCode};
use crate::probe::etcdlog::LogKind;
use crate::probe::output::{HealthOutcome, QueryOutcome};
use crate::probe::NodeReport;

/// Whether a NOSPACE alarm is raised now on this node, and what says so: etcd's `/health` body
/// (3.5+ names the alarm: `{"health":"false","reason":"ALARM NOSPACE"}`, etcdhttp/health.go),
/// else etcd's alarm list where it answered (an answer without NOSPACE says it is off), else a
/// `/health` that is not true while etcd's metrics put the database at or over its quota, or
/// while the log's newest NOSPACE line is newer than its newest "alarm disarmed" (3.4's body does not say why; the alarm survives restarts, so the log's
/// history counts here). An old `alarm raised` that was disarmed since is history.
fn nospace_now(ctx: &Ctx, n: &NodeReport) -> Option<String> {
    let p = n.probe()?;
    if let Some(body) = p.health.body.as_deref().filter(|b| b.contains("NOSPACE")) {
        return Some(format!("{}: /health says {body}", n.name));
    }
    // etcd's own alarm list (it needs quorum to answer): NOSPACE raised for any member.
    if p.alarms.outcome == QueryOutcome::Ok {
        let nospace: Vec<String> = p
            .alarms
            .alarms
            .iter()
            .filter(|a| a.alarm == "NOSPACE")
            .map(|a| {
                a.member_id
                    .map_or_else(|| "?".to_string(), |id| id.to_string())
            })
            .collect();
        if !nospace.is_empty() {
            return Some(format!(
                "{}: etcd's alarm list has NOSPACE raised (member {})",
                n.name,
                nospace.join(", ")
            ));
        }
        // The list answered without NOSPACE: the alarm is not on, whatever the log says.
        if p.health.outcome != HealthOutcome::Healthy {
            return None;
        }
    }
    if p.health.outcome == HealthOutcome::Healthy {
        return None;
    }
    // etcd's metrics: the database at or over its quota (the alarm's own condition).
    if let Some(line) = crate::analyse::metrics::over_quota(n) {
        return Some(line);
    }
    let s = ctx.logs.get(&n.name)?;
    let raised = last_time(s, LogKind::NoSpace)?;
    match last_time(s, LogKind::AlarmDisarmed) {
        Some(disarmed) if disarmed >= raised => None,
        _ => Some(format!(
            "{}: /health is {} and the newest NOSPACE line ({}) has no \"alarm disarmed\" after it",
            n.name,
            p.health.outcome.phrase(),
            crate::when::stamp(&raised)
        )),
    }
}

pub(super) fn no_space(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for &n in &ctx.nodes {
        if let Some(line) = nospace_now(ctx, n) {
            evidence.push(line);
            evidence.extend(log_evidence(ctx, &n.name, &[LogKind::NoSpace]));
            nodes.push(n.name.clone());
        }
    }
    if nodes.is_empty() {
        return None;
    }
    verdict(
        VerdictCode::EtcdNoSpace,
        "the network is fine, but etcd's database is over its quota (NOSPACE alarm): etcd accepts no writes".into(),
        nodes,
        evidence,
        strings(&[
            "etcdctl endpoint status -w table (DB size vs quota); etcdctl alarm list",
            "Compact and defragment (etcdctl compact <rev>; etcdctl defrag, one member at a time), then etcdctl alarm disarm",
        ]),
    )
}
