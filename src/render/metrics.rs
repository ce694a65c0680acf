//! The ETCD METRICS section of the `diagnose` table, under the verdict: each node's etcd as it
//! counts itself (its `/metrics`, read right before and right after the path checks). Shown only
//! when some probe read them. Every text goes out through [`Lines`] (made visible).

use super::Lines;
use crate::probe::output::QueryOutcome;
use crate::report::v1alpha2::{EtcdMetrics, Latency};
use crate::report::DiagnoseReport;

/// At most this many peers named in one cell; the rest are counted.
const PEERS_SHOWN: usize = 4;

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// p99, and how many were over 1 s when any were.
fn latency(l: &Option<Latency>) -> String {
    let Some(l) = l else { return "-".into() };
    let p99 = or_dash(l.p99_ms.map(crate::when::millis));
    if l.over_one_second > 0 {
        format!("{p99} ({} of {} > 1 s)", l.over_one_second, l.count)
    } else {
        p99
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

fn size(m: &EtcdMetrics) -> String {
    match (m.db_size_bytes, m.quota_bytes) {
        (Some(s), Some(q)) => format!("{} / {}", mib(s), mib(q)),
        (Some(s), None) => mib(s),
        _ => "-".into(),
    }
}

/// The peers etcd failed to send to during the checks, by node (else member ID).
fn failed_sends(m: &EtcdMetrics) -> String {
    if !m.both_answered() {
        return "-".into();
    }
    let failing: Vec<String> = m
        .peers
        .iter()
        .filter(|p| p.sent_failures_during_checks.is_some_and(|d| d > 0))
        .map(|p| {
            let who = p.node.clone().unwrap_or_else(|| p.id.to_string());
            format!("{who} +{}", p.sent_failures_during_checks.unwrap_or(0))
        })
        .collect();
    match failing.len() {
        0 => "none".into(),
        n if n > PEERS_SHOWN => format!(
            "{} and {} more",
            failing[..PEERS_SHOWN].join(", "),
            n - PEERS_SHOWN
        ),
        _ => failing.join(", "),
    }
}

pub(crate) fn section(out: &mut Lines, r: &DiagnoseReport) {
    if r.etcd_metrics.is_empty() {
        return;
    }
    out.blank();
    out.line("ETCD METRICS (each node's etcd, read before and after the checks):");
    let rows: Vec<Vec<String>> = r
        .etcd_metrics
        .iter()
        .map(|m| {
            vec![
                m.node.clone(),
                m.has_leader
                    .map_or("-", |l| if l { "yes" } else { "no" })
                    .into(),
                or_dash(m.leader_changes),
                failed_sends(m),
                latency(&m.wal_fsync),
                latency(&m.backend_commit),
                size(m),
            ]
        })
        .collect();
    out.table(
        &[
            "NODE",
            "HAS LEADER",
            "LEADER CHANGES",
            "FAILED SENDS DURING CHECKS",
            "WAL FSYNC P99",
            "COMMIT P99",
            "DB / QUOTA",
        ],
        &rows,
    );
    for m in &r.etcd_metrics {
        for (when, read) in [("before", &m.before), ("after", &m.after)] {
            if read.outcome == QueryOutcome::Error {
                out.line(format!(
                    "  {}: /metrics not read {when} the checks: {}",
                    m.node,
                    read.detail.as_deref().unwrap_or("?")
                ));
            }
        }
    }
}
