//! Notes on a verdict: what is past or minor, said so that nobody mistakes it for the reason.
//! History (log lines older than the window), a slow fsync too rare to be a slow disk, restarts
//! of a member that is healthy now, and many elections in the window on a `Healthy` cluster.

use super::evidence::{created_ms, newest};
use super::slow_disk::SLOW_FSYNC_MIN;
use super::{Ctx, Said, Verdict, VerdictCode};
use crate::probe::etcdlog::{self, LogKind};
use crate::probe::output::HealthOutcome;

/// Leader changes in the window that make a `Healthy` cluster "unstable". A rolling update moves
/// leadership at most once per Machine (KCP forwards leadership off a Machine before it removes
/// its member: CAPI controlplane/kubeadm/internal/workload_cluster_etcd.go
/// `ForwardEtcdLeadership`), so three for a three-node control plane; five is more than any
/// rollout explains.
pub(super) const ELECTIONS_WARN: usize = 5;

/// Kinds that say nothing wrong: never worth a history note.
const ROUTINE: &[LogKind] = &[
    LogKind::PeerActive,
    LogKind::MemberRemovedInfo,
    LogKind::LeaderElected,
    LogKind::LeaderChanged,
];

/// At most this many kinds per node's history line: the rest is in `-o json`.
const HISTORY_KINDS: usize = 8;

pub(super) fn notes(ctx: &Ctx, v: &Verdict) -> Vec<String> {
    let mut out = Vec::new();
    let since = humantime::format_duration(ctx.since).to_string();
    let healthy = v.code == VerdictCode::Healthy;

    // Many elections in the window: the cluster works now, but not steadily.
    if healthy {
        if let Some((node, changes)) = ctx
            .logs
            .iter()
            .map(|(n, s)| {
                let count = |k| s.finding(k).map_or(0, |f| f.count);
                (
                    n,
                    count(LogKind::LeaderElected) + count(LogKind::LeaderChanged),
                )
            })
            .max_by_key(|(_, c)| *c)
            .filter(|(_, c)| *c >= ELECTIONS_WARN)
        {
            out.push(format!(
                "warning: unstable: {changes} elections in {since} ({node}'s etcd log): leadership keeps moving; check the network between the VMs and the disk under etcd"
            ));
        }
    }

    // The rollout: shown, never deciding.
    let rollout: Vec<String> = ctx
        .facts
        .rollout_nodes()
        .map(|(n, r)| {
            let what = match r {
                crate::supervisor::RolloutPhase::Deleting { .. } => "Deleting".to_string(),
                crate::supervisor::RolloutPhase::Provisioning { waiting_for, .. } => {
                    format!("Provisioning (waiting for {})", waiting_for.describe())
                }
            };
            let since = r.since().map(|t| format!(" since {t}")).unwrap_or_default();
            format!("{} {what}{since}", n.name)
        })
        .collect();
    if !rollout.is_empty() || ctx.facts.kcp_rollout().is_some() {
        out.push(format!(
            "rollout in progress{}{}: these nodes are shown but do not decide the verdict",
            ctx.facts
                .kcp_rollout()
                .map(|k| format!(" ({k})"))
                .unwrap_or_default(),
            if rollout.is_empty() {
                String::new()
            } else {
                format!(": {}", rollout.join(", "))
            }
        ));
    }
    // On EtcdMemberMismatch too: a list that departs from the majority is said there as well.
    out.extend(ctx.membership().notes.iter().cloned());
    // What was wrong with a node's document (Inconclusive has it in its evidence already).
    if !v.code.says(Said::DocumentProblems) {
        for &n in &ctx.nodes {
            for d in n
                .probe()
                .map(|p| p.document_problems.as_slice())
                .unwrap_or_default()
            {
                out.push(format!("warning: {}'s probe document: {d}", n.name));
            }
        }
    }
    // (A certificate verdict has them in its evidence already.)
    if !v.code.says(Said::ClockDrift) {
        out.extend(clock_drift(ctx));
    }
    for (node, s) in &ctx.logs {
        // A slow fsync too rare to be a slow disk.
        if !v.code.says(Said::SlowFsync) {
            if let Some(f) = s
                .finding(LogKind::SlowFdatasync)
                .filter(|f| f.count < SLOW_FSYNC_MIN)
            {
                out.push(format!(
                    "{node}: {}× slow fdatasync in the last {since} ({}): fewer than the {SLOW_FSYNC_MIN} that make EtcdSlowDisk (a VM snapshot or vMotion stun gives one)",
                    f.count,
                    when(f)
                ));
            }
        }
        // History: what the log said before the window.
        let old: Vec<String> = s
            .history
            .iter()
            .filter(|f| !ROUTINE.contains(&f.kind))
            .take(HISTORY_KINDS)
            .map(|f| format!("{} {}× ({})", f.kind.phrase(), f.count, when(f)))
            .collect();
        if !old.is_empty() {
            let before = s
                .window
                .as_ref()
                .map(|w| format!(" before {}", crate::when::stamp(&w.since)))
                .unwrap_or_default();
            out.push(format!(
                "{node} etcd log{before} (history, outside --since {since}; not a reason for this verdict): {}",
                old.join(", ")
            ));
        }
    }

    // Restarts of a member that runs and is healthy now.
    for &n in &ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let Some(c) = newest(&p.etcd.containers) else {
            continue;
        };
        let attempt = c.attempt.unwrap_or(0);
        if attempt > 0 && c.is_running() && p.health.outcome == HealthOutcome::Healthy {
            out.push(format!(
                "{}: etcd was restarted {attempt} time{} before; the newest container runs{} and /health is true",
                n.name,
                if attempt == 1 { "" } else { "s" },
                c.created_at
                    .as_deref()
                    .and_then(created_ms)
                    .and_then(|ms| k8s_openapi::jiff::Timestamp::from_millisecond(ms).ok())
                    .map(|t| format!(" since {}", crate::when::instant(t.into())))
                    .unwrap_or_default()
            ));
        }
    }
    out
}

/// etcd's own clock check, from the window: each member's prober compares its peers' clocks
/// with its own and warns over 1 s ("prober found high clock drift", rafthttp/probing_status.go
/// `maxClockDrift = time.Second`, 3.4 to 3.6). Clocks that disagree break leases and make a
/// certificate look expired (or not yet valid) to the node whose clock is off.
pub(super) fn clock_drift(ctx: &Ctx) -> Vec<String> {
    ctx.logs
        .iter()
        .filter_map(|(node, s)| {
            let f = s.finding(LogKind::ClockDrift)?;
            let peers: Vec<String> = f
                .peer_ids
                .iter()
                .map(|id| etcdlog::member_name(
                        ctx.logs
                            .iter()
                            .map(|(n, s)| (n.as_str(), s.local_member_id.as_deref())),
                        id,
                    ))
                .collect();
            Some(format!(
                "warning: clocks disagree: {node}'s etcd found its clock over 1 s off {} ({}× in the window, {}): check NTP (chronyc tracking) on the VMs; a certificate judged by a node whose clock is off may look expired or not yet valid",
                if peers.is_empty() {
                    "a peer's".to_string()
                } else {
                    format!("{}'s", peers.join(", "))
                },
                f.count,
                when(f)
            ))
        })
        .collect()
}

/// `2026-12-03T05:12:03Z` or `2026-12-03T05:12:03Z over 48m` ([`crate::when::during`]), from a
/// finding's first and last times.
fn when(f: &etcdlog::Finding) -> String {
    match (&f.first, &f.last) {
        (Some(a), Some(b)) => crate::when::during(a, b),
        (Some(a), None) => crate::when::stamp(a),
        _ => "no time".into(),
    }
}
