//! Rule 2, EtcdCrashLooping: a member that keeps restarting for a reason of its own.

use super::evidence::{created_ms, log_evidence, newest, removed_member_fault, short_id};
use super::member_mismatch::member_mismatch;
use super::node::own_problem;
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::probe::etcdlog::LogKind;
use crate::probe::output::HealthOutcome;

/// Restarted at least this often and exited, or restarted within the window: crash looping.
pub(super) const CRASH_ATTEMPTS: u32 = 3;
pub(super) const CRASH_WINDOW_MS: i64 = 15 * 60 * 1000;

pub(super) fn crash_looping(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for &n in &ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let Some(c) = newest(&p.etcd.containers) else {
            continue;
        };
        let attempt = c.attempt.unwrap_or(0);
        let recent = match (c.created_at.as_deref().and_then(created_ms), p.clock_ms) {
            // Both times are the node's word (any i64): saturate rather than overflow.
            (Some(created), Some(now)) => now.saturating_sub(created) < CRASH_WINDOW_MS,
            _ => false,
        };
        // A member that runs and whose /health is true is not crash looping, however often it
        // was restarted: the restarts are a note (kubelet restarted it during a past outage).
        let healthy_now = c.is_running() && p.health.outcome == HealthOutcome::Healthy;
        if attempt >= CRASH_ATTEMPTS
            && (!c.is_running() || recent)
            && !healthy_now
            && own_problem(ctx, &n.name)
        {
            nodes.push(n.name.clone());
            evidence.push(format!(
                "{}: etcd container {} is {} after {attempt} restarts{}",
                n.name,
                short_id(&c.id),
                c.state,
                if recent {
                    " (last one within 15 minutes)"
                } else {
                    ""
                }
            ));
            evidence.extend(log_evidence(
                ctx,
                &n.name,
                &[
                    LogKind::Fatal,
                    LogKind::NoSpace,
                    LogKind::ClusterIdMismatch,
                    LogKind::MemberRemoved,
                    LogKind::MemberAlreadyBootstrapped,
                    LogKind::CertExpired,
                ],
            ));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    // Restarted because its peers reject it as removed (and no Machine of it is being deleted:
    // that would be a rollout, left out before the rules): a membership problem, as for a
    // stopped member below.
    if nodes.iter().all(|n| removed_member_fault(ctx, n)) {
        return member_mismatch(ctx);
    }
    verdict(
        VerdictCode::EtcdCrashLooping,
        format!("etcd keeps restarting on {}: a separate issue from etcd networking", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs --tail 100 <container id> (the last lines before each exit)", nodes.join(", ")),
            "Check /etc/kubernetes/manifests/etcd.yaml, the data directory /var/lib/etcd and free disk space on the node".into(),
        ],
    )
}
