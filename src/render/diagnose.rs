//! `diagnose` as tables: a summary, the nodes, the 2379 and 2380 matrices (FROM rows, TO
//! columns), the etcd log findings and the verdict with its evidence and next steps.

use super::{control_plane_cell, or_none, structured, Format, Lines, Paint, Tone};
use crate::error::Result;
use crate::report::v1alpha2::{
    CellState, HealthOutcome, LeaderState, Matrix, NodeLogs, RuntimeQuery, VerdictCode,
};
use crate::report::{DiagnoseReport, DiagnosedNode};

/// `--dry-run`: the pods a run would create, as YAML documents (`---` each) or, with `-o json`,
/// one JSON document per pod. Pods are Kubernetes objects, not a report: they have no table.
pub(crate) fn dry_run(pods: &[k8s_openapi::api::core::v1::Pod], format: Format) -> Result<String> {
    let format = if format == Format::Json {
        Format::Json
    } else {
        Format::Yaml
    };
    let mut out = String::new();
    for pod in pods {
        if format == Format::Yaml {
            out.push_str("---\n");
        }
        out.push_str(&structured(pod, format)?);
    }
    Ok(out)
}

/// Every section (`--details`; `Tabular` is implemented in [`super::summary`], whose first
/// screen is the default).
pub(super) fn diagnose_table(r: &DiagnoseReport, wide: bool, paint: Paint) -> String {
    let mut out = Lines::new(paint);
    out.table(
        &[
            "CLUSTER",
            "NAMESPACE",
            "CONTROL PLANE",
            "WORKLOAD API",
            "ROUTE",
        ],
        &[vec![
            r.header.cluster.name.clone(),
            r.header.namespace.clone(),
            control_plane_cell(&r.header.control_plane),
            super::api_state(r.workload_api.state).to_string(),
            format!("{} ({})", r.route.name, r.route.reason),
        ]],
    );

    out.blank();
    let mut header = vec![
        "NODE", "IP", "ETCD", "RESTARTS", "KUBELET", "OWN 2379", "/HEALTH",
    ];
    // From the etcd logs' raft lines; only when some log has one.
    let leaders = r.logs.iter().any(|l| l.summary.leader.is_some());
    if leaders {
        header.push("LEADER");
    }
    // From the probes that read the API server (older probes did not).
    let api_servers = r
        .nodes
        .iter()
        .any(|n| n.probe.as_ref().is_some_and(|p| p.api_server.is_some()));
    if api_servers {
        header.push("API SERVER");
    }
    if wide {
        header.extend(["CERT EXPIRY", "PROBE TIME", "CLOCK"]);
    }
    let rows: Vec<Vec<String>> = r
        .nodes
        .iter()
        .map(|n| {
            let mut row = node_row(r, n, wide);
            if leaders {
                row.insert(7, leader_cell(r, &n.name));
            }
            if api_servers {
                row.insert(7 + usize::from(leaders), api_server_cell(n));
            }
            row
        })
        .collect();
    out.table(&header, &rows);
    // The verdict's evidence lists them when it is about them; else say it here.
    let listed = r.verdict.code == VerdictCode::NodesUnreachable;
    for n in r.nodes.iter().filter(|n| !n.reached && !listed) {
        if let Some(e) = &n.error {
            out.line(format!("  {}: not probed: {}", n.name, e.message));
        }
    }

    if wide {
        members_table(&mut out, r);
        if api_servers {
            api_servers_table(&mut out, r);
        }
    }

    if r.nodes.iter().any(|n| !n.supervisor_reach.is_empty()) {
        out.blank();
        let from = r.nodes.iter().find_map(|n| n.reach_from);
        out.line(match from {
            Some(crate::report::v1alpha2::Vantage::ThisMachine) => "From this machine (ssh):",
            _ => "From the Supervisor (jumpbox):",
        });
        let rows = super::supervisor_reach_rows(r);
        out.table(&["NODE", "22", "2379", "2380", "6443"], &rows);
    } else if r.nodes.iter().any(|n| n.reached) {
        // Said, not left out silently: the ports were not looked at from outside the VMs.
        let why = match r.route.name.as_str() {
            "pod" => Some("not checked on the pod route (from here a VM's address is often not routable on NSX or VPC; each node checked its own)"),
            "ssh" => Some("not checked (ssh goes through a ProxyJump or ProxyCommand, not from this machine)"),
            _ => None,
        };
        if let Some(why) = why {
            out.blank();
            out.line(format!("Ports from outside the VMs: {why}."));
        }
    }

    for m in &r.matrices {
        out.blank();
        matrix_table(&mut out, m);
    }

    let logs: Vec<String> = r
        .logs
        .iter()
        .filter(|l| !l.summary.findings.is_empty())
        .map(|l| {
            let kinds: Vec<String> = l
                .summary
                .findings
                .iter()
                .map(|f| format!("{} ×{}", f.kind.phrase(), f.count))
                .collect();
            format!("  {}: {}", l.node, kinds.join(", "))
        })
        .collect();
    if !logs.is_empty() {
        out.blank();
        out.line(
            match r.logs.iter().find_map(|l| l.summary.window.as_ref()) {
                Some(w) => format!(
                    "etcd log findings (the last {} before each probe; older lines are notes):",
                    humantime::format_duration(std::time::Duration::from_secs(w.seconds))
                ),
                None => "etcd log findings:".to_string(),
            },
        );
        for l in logs {
            out.line(l);
        }
    }

    if let Some(a) = &r.network_policy {
        super::network::section(&mut out, a, wide);
    }
    if let Some(n) = &r.nsx_manager {
        super::nsx_manager::section(&mut out, n, wide);
    }

    let v = &r.verdict;
    let tone = if v.code == VerdictCode::Healthy {
        Tone::Good
    } else {
        Tone::Bad
    };
    out.blank();
    out.marked("VERDICT: ", tone, &v.code.to_string(), "");
    out.line(format!("  {}", v.summary));
    if !v.evidence.is_empty() {
        out.blank();
        out.line("Evidence:");
        for e in &v.evidence {
            out.line(format!("  - {e}"));
        }
    }
    if !v.next_steps.is_empty() {
        out.blank();
        out.line("Next steps:");
        for (i, s) in v.next_steps.iter().enumerate() {
            out.line(format!("  {}. {s}", i + 1));
        }
    }
    if !v.notes.is_empty() {
        out.blank();
        out.line("Notes (the past, and what is too minor to decide):");
        for n in &v.notes {
            out.line(format!("  - {n}"));
        }
    }
    super::timeline::section(&mut out, r.timeline.as_ref(), wide);
    if let Some(l) = &r.packet_location {
        super::location::section(&mut out, l, wide);
    }
    super::metrics::section(&mut out, r);
    if let Some(g) = &r.remediation_guard {
        super::guard::section(&mut out, g, wide);
    }
    out.finish()
}

/// `-o wide`: every node's own member list (its peer listener's `/members`), one row a member,
/// so lists that differ stand side by side; a node whose list could not be read says why.
fn members_table(out: &mut Lines, r: &DiagnoseReport) {
    use crate::report::v1alpha2::QueryOutcome;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for n in &r.nodes {
        let Some(p) = &n.probe else { continue };
        match p.members.outcome {
            QueryOutcome::Ok => {
                for m in &p.members.members {
                    rows.push(vec![
                        n.name.clone(),
                        or_none(p.members.cluster_id.as_deref()),
                        or_none(m.id.map(|id| id.to_string()).as_deref()),
                        m.name.clone().unwrap_or_else(|| "<never started>".into()),
                        m.peer_urls.join(","),
                        if m.is_learner { "yes" } else { "no" }.into(),
                    ]);
                }
            }
            QueryOutcome::Error => errors.push(format!(
                "  {}: member list not read: {}",
                n.name,
                p.members.detail.as_deref().unwrap_or("?")
            )),
            QueryOutcome::Skipped => {}
        }
    }
    if rows.is_empty() && errors.is_empty() {
        return;
    }
    out.blank();
    out.line("MEMBERS (each node's own list):");
    if !rows.is_empty() {
        out.table(
            &[
                "NODE",
                "CLUSTER ID",
                "MEMBER ID",
                "NAME",
                "PEER URLS",
                "LEARNER",
            ],
            &rows,
        );
    }
    for e in errors {
        out.line(e);
    }
}

pub(super) fn node_row(r: &DiagnoseReport, n: &DiagnosedNode, wide: bool) -> Vec<String> {
    // An address not from the guest's own report says whose it is (docs/output.md).
    let from = n.vm.as_ref().and_then(|v| v.ip_source.short());
    let ip = match (n.ip, from) {
        (Some(ip), Some(from)) => format!("{ip} ({from})"),
        (Some(ip), None) => ip.to_string(),
        (None, _) => "<pending>".into(),
    };
    let Some(p) = &n.probe else {
        let why = n
            .error
            .as_ref()
            .map(|e| e.kind.phrase())
            .unwrap_or_default();
        let mut row = vec![n.name.clone(), ip, format!("<not probed: {why}>")];
        row.resize(if wide { 10 } else { 7 }, String::new());
        return row;
    };
    let newest = p
        .etcd
        .containers
        .iter()
        .max_by_key(|c| c.attempt.unwrap_or(0));
    let etcd = match (p.etcd.query, newest) {
        (_, Some(c)) => c.state.trim_start_matches("CONTAINER_").to_string(),
        (RuntimeQuery::Ok, None) => "none".into(),
        (q, None) => q.to_string(),
    };
    let own = r
        .matrices
        .iter()
        .find(|m| m.port == 2379)
        .and_then(|m| m.cell(&n.name, &n.name))
        .map(|c| cell_text(c.state, c.ms))
        .unwrap_or_else(|| "-".into());
    let health = match p.health.outcome {
        HealthOutcome::Healthy => "true".to_string(),
        HealthOutcome::Unhealthy => "false".to_string(),
        HealthOutcome::Error => "error".to_string(),
        HealthOutcome::Skipped => "-".to_string(),
    };
    let mut row = vec![
        n.name.clone(),
        ip,
        etcd,
        or_none(newest.and_then(|c| c.attempt)),
        or_none(p.kubelet.active.clone()),
        own,
        health,
    ];
    if wide {
        let soonest = p
            .certs
            .iter()
            .filter_map(|c| Some((c.expires_in_s?, c.not_after.clone()?)))
            .min_by_key(|(s, _)| *s)
            .map(|(_, at)| at);
        row.push(or_none(soonest));
        row.push(or_none(p.duration_ms.map(crate::when::millis)));
        // Against the median of the nodes' clocks, not one node's: a node that lies about its
        // clock then marks only itself as skewed.
        let reference = crate::analyse::clock::median(
            r.nodes.iter().filter_map(|n| n.probe.as_ref()?.clock_ms),
        );
        row.push(or_none(
            p.clock_ms
                .zip(reference)
                .map(|(c, base)| crate::analyse::clock::offset_text(c, base)),
        ));
    }
    row
}

/// The node's API server in a word or two: `ready`, `not ready`, `crash loop`, `cert expired`...
pub(super) fn api_server_cell(n: &DiagnosedNode) -> String {
    use crate::report::v1alpha2::ApiServerState as S;
    let Some(a) = n.probe.as_ref().and_then(|p| p.api_server.as_ref()) else {
        return "-".into();
    };
    match a.state {
        S::Ready => "ready",
        S::CertificateExpired => "cert expired",
        S::CertificateNotYetValid => "cert not yet valid",
        S::NotReady => "not ready",
        S::Answering => "answers",
        S::CrashLooping => "crash loop",
        S::NotRunning => "not running",
        S::NoAnswer => "no answer",
        S::Unknown => "?",
    }
    .into()
}

/// `-o wide`: each node's API server in full: its container, `/readyz`, its serving
/// certificate's dates and its log's telling line.
fn api_servers_table(out: &mut Lines, r: &DiagnoseReport) {
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for n in &r.nodes {
        let Some(a) = n.probe.as_ref().and_then(|p| p.api_server.as_ref()) else {
            continue;
        };
        let readyz = match (a.readyz_status, &a.readyz_error) {
            (Some(code), _) if a.failed_checks.is_empty() => code.to_string(),
            (Some(code), _) => format!("{code} [-]{}", a.failed_checks.join(",[-]")),
            (None, Some(_)) => "no answer".into(),
            (None, None) => "-".into(),
        };
        rows.push(vec![
            n.name.clone(),
            api_server_cell(n),
            or_none(a.container_state.clone()),
            or_none(a.restarts),
            or_none(a.started_at.clone()),
            readyz,
            or_none(a.cert_not_after.clone()),
        ]);
        if let Some(f) = a.log.first() {
            lines.push(format!(
                "  {}: {} ×{}: {}",
                n.name,
                f.kind.phrase(),
                f.count,
                f.line
            ));
        }
    }
    out.blank();
    out.line("API SERVERS (each node's own kube-apiserver):");
    out.table(
        &[
            "NODE",
            "STATE",
            "CONTAINER",
            "RESTARTS",
            "STARTED",
            "/READYZ",
            "CERT NOT AFTER",
        ],
        &rows,
    );
    for l in lines {
        out.line(l);
    }
}

/// `cp2 since 2026-12-03T08:41:11Z` (the leader this node's log last named), `none since
/// 2026-12-03T08:40:25Z`, or `-`.
fn leader_cell(r: &DiagnoseReport, node: &str) -> String {
    let Some(v) = r
        .logs
        .iter()
        .find(|l| l.node == node)
        .and_then(|l| l.summary.leader.as_ref())
    else {
        return "-".into();
    };
    let since = v
        .since
        .as_deref()
        .map(|t| format!(" since {}", crate::when::stamp(t)))
        .unwrap_or_default();
    match v.state {
        LeaderState::NoLeader => format!("none{since}"),
        LeaderState::Known => {
            let who = v
                .leader_id
                .as_deref()
                .map(|id| NodeLogs::member_name(&r.logs, id))
                .unwrap_or_else(|| "?".into());
            format!("{who}{since}")
        }
    }
}

fn cell_text(state: CellState, ms: Option<u64>) -> String {
    match (state, ms) {
        (CellState::Ok, Some(ms)) => format!("ok {}", crate::when::millis(ms)),
        (s, _) => s.label().to_string(),
    }
}

/// FROM rows, TO columns; the diagonal is each node's own path.
fn matrix_table(out: &mut Lines, m: &Matrix) {
    let corner = format!("{} FROM → TO", m.port);
    let mut header: Vec<&str> = vec![&corner];
    header.extend(m.nodes.iter().map(String::as_str));
    let cells = m.index();
    let rows: Vec<Vec<String>> = m
        .nodes
        .iter()
        .map(|from| {
            let mut row = vec![from.clone()];
            row.extend(m.nodes.iter().map(|to| {
                cells
                    .cell(from, to)
                    .map(|c| cell_text(c.state, c.ms))
                    .unwrap_or_else(|| "-".into())
            }));
            row
        })
        .collect();
    out.table(&header, &rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::v1alpha2::LeaderView;

    /// The CLOCK column (`-o wide`) is each node's clock against the median of the nodes'
    /// clocks: a node whose clock reads far behind shows as the one that is off, and the honest
    /// ones stay near +0ms (against the earliest clock, the liar's, they all looked skewed).
    #[test]
    fn clock_column_is_against_the_median() {
        let mut r = crate::testing::peers_dropped();
        let base = 1_764_688_528_000_i64;
        for (n, c) in r.nodes.iter_mut().zip([base, base + 12, 0]) {
            n.probe.as_mut().unwrap().clock_ms = Some(c);
        }
        // The last cell of each node's row, in the report's order.
        let clocks = |r: &DiagnoseReport| -> Vec<String> {
            let out = diagnose_table(r, true, Paint { on: false });
            r.nodes
                .iter()
                .map(|n| {
                    out.lines()
                        .find(|l| l.starts_with(&n.name) && l.contains("RUNNING"))
                        .and_then(|l| l.split_whitespace().last())
                        .unwrap_or_else(|| panic!("no row for {}: {out}", n.name))
                        .to_string()
                })
                .collect()
        };
        assert_eq!(clocks(&r), ["+0ms", "+12ms", &format!("-{base}ms")]);

        // Any i64 a node writes: no overflow, the honest ones unmoved.
        r.nodes[2].probe.as_mut().unwrap().clock_ms = Some(i64::MAX);
        assert_eq!(
            clocks(&r),
            ["-12ms", "+0ms", &format!("+{}ms", i64::MAX - base - 12)]
        );
    }

    /// The LEADER column: the leader a node's log last named (by node name when some log says
    /// it is that member), or none and since when; absent when no log has a leader line.
    #[test]
    fn leader_column() {
        let mut r = crate::testing::peers_dropped();
        let plain = diagnose_table(&r, false, Paint { on: false });
        assert!(!plain.contains("LEADER"), "{plain}");
        let view = |state, id: Option<&str>, since: &str| LeaderView {
            state,
            leader_id: id.map(str::to_string),
            since: Some(since.to_string()),
            term: Some(2),
            last_change: Some(since.to_string()),
            changes: 1,
        };
        let leader_id = r.logs[1].summary.local_member_id.clone().unwrap();
        let leader_node = r.logs[1].node.clone();
        r.logs[0].summary.leader = Some(view(
            LeaderState::Known,
            Some(&leader_id),
            "2026-12-02T15:15:30.100000Z",
        ));
        r.logs[2].summary.leader = Some(view(
            LeaderState::NoLeader,
            None,
            "2026-12-02T15:15:34.287000Z",
        ));
        for wide in [false, true] {
            let out = diagnose_table(&r, wide, Paint { on: false });
            assert!(out.contains("LEADER"), "{out}");
            let row = |node: &str| {
                out.lines()
                    .find(|l| l.starts_with(node) && l.contains("RUNNING"))
                    .unwrap()
                    .to_string()
            };
            assert!(
                row(&r.logs[0].node).contains(&format!("{leader_node} since 2026-12-02T15:15:30Z")),
                "{out}"
            );
            let cells: Vec<String> = row(&r.logs[1].node)
                .split_whitespace()
                .map(str::to_string)
                .collect();
            assert_eq!(cells[9], "-", "{out}"); // "ok 0 ms" is three words
            assert!(
                row(&r.logs[2].node).contains("none since 2026-12-02T15:15:34Z"),
                "{out}"
            );
        }
    }

    /// The API SERVER column (short) and `-o wide`'s section (each node's in full, its log's
    /// telling line sanitized); neither when no probe read an API server.
    #[test]
    fn api_server_column_and_wide_section() {
        use crate::report::v1alpha2::{ApiLogFinding, ApiLogKind, ApiServerState, ApiServerStatus};
        let mut r = crate::testing::peers_dropped();
        let plain = diagnose_table(&r, true, Paint { on: false });
        assert!(!plain.contains("API SERVER"), "{plain}");
        let server = |state| ApiServerStatus {
            state,
            container_state: Some("CONTAINER_RUNNING".into()),
            restarts: Some(2),
            started_at: Some("2026-12-02T15:10:00Z".into()),
            containers_error: None,
            readyz_status: Some(500),
            failed_checks: vec!["etcd".into()],
            readyz_error: None,
            cert_not_before: Some("2025-12-01T00:00:00Z".into()),
            cert_not_after: Some("2026-12-01T00:00:00Z".into()),
            cert_error: None,
            log: vec![ApiLogFinding {
                kind: ApiLogKind::EtcdUnreachable,
                count: 3,
                line: "E1202 etcdserver: request timed out \u{1b}[2J".into(),
                at: None,
            }],
        };
        let states = [
            ApiServerState::NotReady,
            ApiServerState::CertificateExpired,
            ApiServerState::CrashLooping,
        ];
        for (n, s) in r.nodes.iter_mut().zip(states) {
            n.probe.as_mut().unwrap().api_server = Some(server(s));
        }
        let out = diagnose_table(&r, false, Paint { on: false });
        assert!(out.contains("API SERVER"), "{out}");
        for cell in ["not ready", "cert expired", "crash loop"] {
            assert!(out.contains(cell), "{cell}: {out}");
        }
        assert!(
            !out.contains("API SERVERS ("),
            "the details are -o wide's: {out}"
        );
        let wide = diagnose_table(&r, true, Paint { on: false });
        assert!(
            wide.contains("API SERVERS (each node's own kube-apiserver):"),
            "{wide}"
        );
        assert!(wide.contains("500 [-]etcd"), "{wide}");
        assert!(wide.contains("2026-12-01T00:00:00Z"), "{wide}");
        assert!(
            wide.contains("etcd unreachable ×3: E1202 etcdserver: request timed out"),
            "{wide}"
        );
        assert!(!wide.contains('\u{1b}'), "sanitized: {wide}");
    }
}
