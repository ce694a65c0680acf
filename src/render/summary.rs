//! `diagnose`'s first screen (issue 38): what is read at 3 a.m. before anything scrolls away.
//! In order: one header line; the verdict, where and since when; the next steps, paste-ready;
//! one table (a line a node: its etcd, its 2379/2380 to each node, the Supervisor's view of it);
//! at most five evidence lines, what is alike said once ("3/3 nodes", "12/12 peer paths");
//! then only the sections that add to the verdict (the timeline when staggered, where the
//! packets die when a guest may hold them, the remediation guard unless nothing is armed: what
//! not to do meanwhile, or the reminder to unpause). Everything else, as it was,
//! is `--details`' ([`super::diagnose`]); json and yaml are the same report whichever is shown.
//!
//! Text from outside (names, reasons, rules) goes through [`Lines`] (so [`super::visible`]);
//! long names are shortened here only, with `…`: `--details` and json keep them whole. A
//! command is never cut: it goes on a line of its own, whole, even past the width.

use std::collections::BTreeMap;

use super::diagnose::{api_server_cell, diagnose_table, node_row};
use super::{visible, Lines, Paint, Tabular, Tone, View};
use crate::command::Kubectl;
use crate::report::v1alpha2::{
    CellState, GuardState, HealthOutcome, LeaderState, NetworkStack, Place, PortState,
    TimelineShape, Vantage, VerdictCode,
};
use crate::report::DiagnoseReport;

impl Tabular for DiagnoseReport {
    type Document = Self;

    fn document(&self) -> &Self {
        self
    }

    /// Every section (`--details`).
    fn table(&self, paint: Paint) -> String {
        diagnose_table(self, false, paint)
    }

    /// Every section with more columns (`--details -o wide`).
    fn wide(&self, paint: Paint) -> String {
        diagnose_table(self, true, paint)
    }

    /// The first screen, the default.
    fn first_screen(&self, paint: Paint, wide: bool, view: &View) -> String {
        render(self, wide, paint, view)
    }
}

/// The most evidence lines the first screen shows.
const EVIDENCE: usize = 5;
/// The longest a node's name is shown in the table's first column.
const NAME: usize = 40;

/// The first screen of `r`; `wide` (`-o wide`) adds the node columns of `--details`' table and
/// each cell's connect times.
pub(super) fn render(r: &DiagnoseReport, wide: bool, paint: Paint, view: &View) -> String {
    let width = view.width.max(40);
    let kubectl = view
        .kubectl
        .clone()
        .unwrap_or_else(|| Kubectl::new(Some(&r.header.context), None));
    let mut out = Lines::new(paint);
    out.line(header(r, view, width));

    // The verdict, where and since when.
    let v = &r.verdict;
    let tone = if v.code == VerdictCode::Healthy {
        Tone::Good
    } else {
        Tone::Bad
    };
    out.blank();
    out.marked("VERDICT: ", tone, &v.code.to_string(), "");
    for l in wrap(&v.summary, width, "  ", "  ") {
        out.line(l);
    }
    if let Some(w) = where_seen(r) {
        out.line(fit(&format!("  where: {w}"), width));
    }
    if let Some(s) = since(r, view) {
        out.line(fit(&format!("  since: {s}"), width));
    }
    let evidence = evidence(r);
    for e in evidence.iter().take(EVIDENCE) {
        out.line(fit(&format!("  - {e}"), width));
    }

    let steps = steps(r, &kubectl);
    if !steps.is_empty() {
        out.blank();
        out.line("NEXT STEPS:");
        for (i, s) in steps.iter().enumerate() {
            for l in step_lines(i + 1, s, width) {
                out.line(l);
            }
        }
    }

    if !r.nodes.is_empty() {
        out.blank();
        node_table(&mut out, r, wide);
    }

    // The sections that add to the verdict.
    if let Some(t) = &r.timeline {
        if t.shape == Some(TimelineShape::Staggered) {
            super::timeline::section(&mut out, Some(t), wide);
        }
    }
    if let Some(l) = &r.packet_location {
        let mut guests = l.clone();
        guests
            .paths
            .retain(|p| !matches!(p.place, Place::OutsideGuests));
        super::location::section(&mut out, &guests, wide);
    }
    if let Some(g) = &r.remediation_guard {
        // Armed or unknown: what not to do meanwhile; paused: the reminder to unpause.
        if g.state != GuardState::NotArmed {
            super::guard::section(&mut out, g, wide);
        }
    }

    out.line(fit(&more(r, evidence.len()), width));
    out.finish()
}

/// One line (issue 38): `tkc-prod -n ns-prod, context supervisor, 2026-12-07T03:50:19Z, v0.4.0,
/// jumpbox (workload API down)`: the route last, its reason in a few words (what decided it:
/// the workload API's state, or `--via`); the whole reason is `--details`'. Past `width`, the
/// reason goes first, then the line is cut.
fn header(r: &DiagnoseReport, view: &View, width: usize) -> String {
    let line = format!(
        "{} -n {}, context {}, {}, v{}, {}",
        r.header.cluster.name,
        r.header.namespace,
        r.header.context,
        crate::when::instant(view.at),
        env!("CARGO_PKG_VERSION"),
        r.route.name,
    );
    let with_reason = format!("{line} ({})", route_why(r));
    if chars(&visible(&with_reason)) <= width {
        return with_reason;
    }
    fit(&line, width)
}

/// Why this route, in a few words: `workload API down` (`auto` took the jumpbox or ssh), `workload
/// API up` (the pod route), `--via` (asked for).
fn route_why(r: &DiagnoseReport) -> String {
    use crate::report::v1alpha2::ApiState as S;
    if !r.route.reason.starts_with("auto") {
        return "--via".into();
    }
    let api = match r.workload_api.state {
        S::Reachable => "up",
        S::HttpError => "not ready",
        S::Timeout | S::Refused | S::TlsError | S::Unreachable => "down",
        S::Unknown => "not checked",
        S::Untrusted => "not contacted",
    };
    format!("workload API {api}")
}

/// Where the failing paths' packets die: the nodes' own firewalls (`packetLocation`), NSX
/// Manager's rule when it names one; `None` when nothing fails or nothing says.
fn where_seen(r: &DiagnoseReport) -> Option<String> {
    let mut said = Vec::new();
    if let Some(n) = r.nsx_manager.as_ref().filter(|n| !n.blocking.is_empty()) {
        said.push(n.summary.clone());
    }
    if let Some(l) = r.packet_location.as_ref().filter(|l| !l.paths.is_empty()) {
        let total = l.paths.len();
        let mut places: BTreeMap<&str, usize> = BTreeMap::new();
        for p in &l.paths {
            *places
                .entry(super::location::place_words(p.place))
                .or_default() += 1;
        }
        let rule = l.paths.iter().flat_map(|p| p.rules.first()).next();
        let parts: Vec<String> = places
            .iter()
            .map(|(place, n)| {
                if *n == total {
                    format!("{place} ({n}/{total} failing paths")
                } else {
                    format!("{place} ({n}/{total}")
                }
            })
            .collect();
        let mut s = parts.join("), ");
        match rule {
            Some(rule) => s.push_str(&format!(
                "), rule {}: {} {} {} {}",
                rule.node, rule.tool, rule.table, rule.chain, rule.rule
            )),
            None if places.len() == 1 && places.contains_key("outside the guests") => {
                s.push_str("; no firewall inside a node counted them)")
            }
            None => s.push(')'),
        }
        said.push(s);
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// Since when: the failing pairs' onset with its age and shape, else the leader lost on the
/// nodes; `None` when no log tells.
fn since(r: &DiagnoseReport, view: &View) -> Option<String> {
    let t = r.timeline.as_ref()?;
    let now = view.at;
    let first = |times: Vec<&str>| {
        times
            .into_iter()
            .filter_map(crate::when::parse)
            .min()
            .map(|at| crate::when::since(at, now))
    };
    let onsets: Vec<&str> = t.pairs.iter().filter_map(|p| p.onset.as_deref()).collect();
    let pairs = t.pairs.len();
    if let Some(at) = first(onsets.clone()) {
        let how = match t.shape {
            Some(TimelineShape::OneChange) if onsets.len() == pairs => {
                format!("all {pairs} pairs at once")
            }
            Some(TimelineShape::OneChange) => format!("{}/{pairs} pairs at once", onsets.len()),
            Some(TimelineShape::Staggered) => "staggered (below)".to_string(),
            None => format!("{}/{pairs} pairs", onsets.len()),
        };
        return Some(format!("{at}, {how}"));
    }
    let leaderless: Vec<&str> = t
        .no_leader
        .iter()
        .filter_map(|n| n.since.as_deref())
        .collect();
    let at = first(leaderless)?;
    let nodes = r.nodes.len().max(t.no_leader.len());
    let mut s = format!("{at}, no leader on {}/{nodes} nodes", t.no_leader.len());
    if pairs > 0 {
        s.push_str(" (no log tells when the paths failed)");
    }
    Some(s)
}

/// The evidence, grouped: the peer paths when some fail; on the peer-network verdicts what
/// etcd's own counters and logs say of them (the verdict's lines there are those, per node and
/// per path); on every other verdict its own lines (a certificate, the API server, a member
/// list), alike lines of several nodes said once.
fn evidence(r: &DiagnoseReport) -> Vec<String> {
    let code = r.verdict.code;
    let network = matches!(
        code,
        VerdictCode::EtcdPeerNetworkBlocked
            | VerdictCode::EtcdPeerNetworkPartial
            | VerdictCode::EtcdPeerPortRefused
    );
    let mut lines = Vec::new();
    if code != VerdictCode::Healthy {
        lines.extend(paths_line(r));
    }
    if network {
        lines.extend(silent_drop_line(r));
        lines.extend(logs_line(r));
    }
    if !network || lines.is_empty() {
        lines.extend(grouped(&r.verdict.evidence, r));
    }
    lines
}

/// `12/12 peer paths fail on 2379/2380 (timeout 12); own etcd ok on 3/3 nodes`.
fn paths_line(r: &DiagnoseReport) -> Option<String> {
    let mut total = 0;
    let mut failing: BTreeMap<&str, usize> = BTreeMap::new();
    let mut own_ok = 0;
    let mut own = 0;
    let mut ports = Vec::new();
    for m in &r.matrices {
        ports.push(m.port.to_string());
        for c in &m.cells {
            if c.from == c.to {
                if m.port == 2379 {
                    own += 1;
                    own_ok += usize::from(c.state.is_ok());
                }
                continue;
            }
            if !c.state.is_known() {
                continue;
            }
            total += 1;
            if !c.state.is_ok() {
                *failing.entry(c.state.label()).or_default() += 1;
            }
        }
    }
    if total == 0 {
        return None;
    }
    let ports = ports.join("/");
    let failed: usize = failing.values().sum();
    let mut s = if failed == 0 {
        format!("{total}/{total} peer paths connect on {ports}")
    } else {
        let how: Vec<String> = failing.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "{failed}/{total} peer paths fail on {ports} ({})",
            how.join(", ")
        )
    };
    if own > 0 {
        s.push_str(&format!("; own 2379 ok on {own_ok}/{own} nodes"));
    }
    Some(s)
}

/// etcd's counters during the checks: kept sending to a peer whose 2380 failed, nothing back,
/// no failed send: the packets were dropped, not refused.
fn silent_drop_line(r: &DiagnoseReport) -> Option<String> {
    let failing = |from: &str, to: &str| {
        r.matrices
            .iter()
            .filter(|m| m.port == 2380)
            .filter_map(|m| m.cell(from, to))
            .any(|c| !c.state.is_ok() && c.state.is_known())
    };
    let nodes = r
        .etcd_metrics
        .iter()
        .filter(|m| m.both_answered())
        .filter(|m| {
            m.peers.iter().any(|p| {
                p.node.as_deref().is_some_and(|to| failing(&m.node, to))
                    && p.sent_bytes_during_checks.is_some_and(|b| b > 0)
                    && p.received_bytes_during_checks == Some(0)
                    && p.sent_failures_during_checks.unwrap_or(0) == 0
            })
        })
        .count();
    (nodes > 0).then(|| {
        format!(
            "a silent drop, not a refusal: etcd sent to its unreachable peers, got nothing back ({nodes}/{} nodes)",
            r.nodes.len()
        )
    })
}

/// `etcd logs: i/o timeout ×30, peer unhealthy (etcd's prober) ×24 (3/3 nodes)`: the kinds most
/// counted, as their phrases (the kinds' names are the json's).
fn logs_line(r: &DiagnoseReport) -> Option<String> {
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for l in &r.logs {
        for f in &l.summary.findings {
            let e = kinds.entry(f.kind.phrase().to_string()).or_default();
            e.0 += f.count;
            e.1 += 1;
        }
    }
    if kinds.is_empty() || r.verdict.code == VerdictCode::Healthy {
        return None;
    }
    let mut by_count: Vec<(String, (usize, usize))> = kinds.into_iter().collect();
    by_count.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    let nodes = r
        .logs
        .iter()
        .filter(|l| !l.summary.findings.is_empty())
        .count();
    let top: Vec<String> = by_count
        .iter()
        .take(3)
        .map(|(k, (n, _))| format!("{k} ×{n}"))
        .collect();
    Some(format!(
        "etcd logs: {} ({nodes}/{} nodes)",
        top.join(", "),
        r.nodes.len()
    ))
}

/// Lines alike but for a node's name said once: `Machine condition … (3/3 nodes)`.
fn grouped(lines: &[String], r: &DiagnoseReport) -> Vec<String> {
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    // (what follows the name, or the whole line; how many nodes said it; the first line)
    let mut out: Vec<(&str, usize, &str)> = Vec::new();
    for l in lines {
        // The name at the start (`node: …`), the shape of the per-node lines.
        let key = names
            .iter()
            .find_map(|n| l.strip_prefix(n).and_then(|rest| rest.strip_prefix(": ")));
        match key {
            Some(k) => match out.iter_mut().find(|(s, n, _)| *s == k && *n > 0) {
                Some(seen) => seen.1 += 1,
                None => out.push((k, 1, l)),
            },
            None => out.push((l, 0, l)),
        }
    }
    out.into_iter()
        .map(|(s, n, line)| match n {
            0 | 1 => line.to_string(),
            n => format!("{s} ({n}/{} nodes)", names.len()),
        })
        .collect()
}

/// The steps: the guard's pause first when armed, the verdict's, then this run again with
/// `--nsx-manager` (to name the rule), `--watch` (to follow the recovery), `--bundle` (for a
/// case), each unless a step before already says it.
fn steps(r: &DiagnoseReport, kubectl: &Kubectl) -> Vec<String> {
    let mut steps = Vec::new();
    if let Some(g) = &r.remediation_guard {
        if g.state == GuardState::Armed {
            steps.push(format!(
                "Before anything else, stop remediation replacing the control plane: {}",
                g.pause_command
            ));
        }
    }
    steps.extend(r.verdict.next_steps.iter().cloned());
    if r.verdict.code == VerdictCode::Healthy {
        return steps;
    }
    let again = |flag: &str| {
        kubectl.run(&format!(
            "etcdnet diagnose {} -n {} {flag}",
            crate::command::name(&r.header.cluster.name),
            crate::command::namespace(&r.header.namespace)
        ))
    };
    let said = |flag: &str| steps.iter().any(|s: &String| s.contains(flag));
    let network = r.matrices.iter().any(|m| {
        m.cells
            .iter()
            .any(|c| c.from != c.to && c.state.is_known() && !c.state.is_ok())
    });
    let nsx = matches!(
        r.header.apis.network_stack.stack,
        NetworkStack::Nsx | NetworkStack::Vpc
    );
    let mut more = Vec::new();
    if network && nsx && r.nsx_manager.is_none() && !said("--nsx-manager") {
        more.push(format!(
            "Name the NSX rule that drops them (read-only, your NSX account): {}",
            again("--nsx-manager=https://<host>")
        ));
    }
    if !said("--watch") {
        more.push(format!("Follow the recovery: {}", again("--watch")));
    }
    if !said("--bundle") {
        let file = format!("{}.tar.gz", crate::command::name(&r.header.cluster.name));
        more.push(format!(
            "For a support case: {}",
            again(&format!("--bundle={file}"))
        ));
    }
    steps.extend(more);
    steps
}

/// A numbered step within `width`: prose wrapped; the first command (from `kubectl `) on a
/// line of its own, whole, when the step does not fit on one.
fn step_lines(n: usize, step: &str, width: usize) -> Vec<String> {
    let first = format!("  {n}. ");
    let rest = " ".repeat(first.chars().count());
    let line = format!("{first}{step}");
    if chars(&line) <= width {
        return vec![line];
    }
    match step.find("kubectl ") {
        Some(at) if at > 0 => {
            let (prose, command) = step.split_at(at);
            let mut lines = wrap(prose.trim_end(), width, &first, &rest);
            lines.truncate(2);
            lines.push(format!("{rest}{command}"));
            lines
        }
        Some(_) => vec![line],
        None => {
            let mut lines = wrap(step, width, &first, &rest);
            if lines.len() > 2 {
                let second = format!("{} …", lines[1]);
                lines.truncate(1);
                lines.push(fit(&second, width));
            }
            lines
        }
    }
}

/// One line a node: its etcd in a word, its 2379/2380 to each node (the columns, by the part of
/// the name that tells them apart), and the Supervisor's (or this machine's) view of it.
fn node_table(out: &mut Lines, r: &DiagnoseReport, wide: bool) {
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let short = short_names(&names);
    let m2379 = r.matrices.iter().find(|m| m.port == 2379);
    let m2380 = r.matrices.iter().find(|m| m.port == 2380);
    let reach = r.nodes.iter().any(|n| !n.supervisor_reach.is_empty());
    let from_here = r
        .nodes
        .iter()
        .find_map(|n| n.reach_from)
        .is_some_and(|v| v == Vantage::ThisMachine);
    let api = matches!(
        r.verdict.code,
        VerdictCode::ApiServerNotServing | VerdictCode::ApiEndpointUnreachable
    ) && r
        .nodes
        .iter()
        .any(|n| n.probe.as_ref().is_some_and(|p| p.api_server.is_some()));

    let mut header: Vec<String> = vec!["NODE".into()];
    if wide {
        header.push("IP".into());
    }
    header.push("ETCD".into());
    if api {
        header.push("API SERVER".into());
    }
    for (i, s) in short.iter().enumerate() {
        header.push(if i == 0 {
            format!("2379/2380→{s}")
        } else {
            format!("→{s}")
        });
    }
    if reach {
        header.push(
            if from_here {
                "THIS MACHINE"
            } else {
                "SUPERVISOR"
            }
            .into(),
        );
    }
    if wide {
        header.extend(
            ["RESTARTS", "KUBELET", "CERT EXPIRY", "PROBE TIME", "CLOCK"].map(String::from),
        );
    }

    let cell = |m: Option<&crate::report::v1alpha2::Matrix>, from: &str, to: &str| -> String {
        m.and_then(|m| m.cell(from, to))
            .map(|c| match (wide, c.state, c.ms) {
                (true, CellState::Ok, Some(ms)) => format!("ok {ms}ms"),
                (_, s, _) => s.label().to_string(),
            })
            .unwrap_or_else(|| "-".into())
    };
    let rows: Vec<Vec<String>> = r
        .nodes
        .iter()
        .map(|n| {
            let mut row = vec![fit(&n.name, NAME)];
            let details = node_row(r, n, true);
            if wide {
                row.push(details[1].clone());
            }
            row.push(etcd_word(r, n));
            if api {
                row.push(api_server_cell(n));
            }
            for to in &names {
                row.push(format!(
                    "{}/{}",
                    cell(m2379, &n.name, to),
                    cell(m2380, &n.name, to)
                ));
            }
            if reach {
                row.push(reach_cell(n));
            }
            if wide {
                row.extend([3, 4, 7, 8, 9].map(|i| details.get(i).cloned().unwrap_or_default()));
            }
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    out.table(&header, &rows);
    // A node not probed says why, once, here (the verdict lists them when it is about them).
    if r.verdict.code != VerdictCode::NodesUnreachable {
        for n in r.nodes.iter().filter(|n| !n.reached) {
            if let Some(e) = &n.error {
                out.line(format!(
                    "  {}: not probed: {}",
                    fit(&n.name, NAME),
                    e.message
                ));
            }
        }
    }
}

/// etcd in a word or two: `healthy`, `no leader`, `unhealthy`, `not running`, `not probed`.
fn etcd_word(r: &DiagnoseReport, n: &crate::report::DiagnosedNode) -> String {
    let Some(p) = &n.probe else {
        return "not probed".into();
    };
    let leaderless = r
        .logs
        .iter()
        .find(|l| l.node == n.name)
        .and_then(|l| l.summary.leader.as_ref())
        .is_some_and(|v| v.state == LeaderState::NoLeader)
        || r.etcd_metrics
            .iter()
            .any(|m| m.node == n.name && m.has_leader == Some(false));
    let running = p
        .etcd
        .containers
        .iter()
        .any(|c| c.state == "CONTAINER_RUNNING");
    match p.health.outcome {
        HealthOutcome::Healthy => "healthy".into(),
        _ if leaderless => "no leader".into(),
        HealthOutcome::Unhealthy => "unhealthy".into(),
        _ if !running && !p.etcd.containers.is_empty() => "not running".into(),
        HealthOutcome::Error => "health error".into(),
        HealthOutcome::Skipped => "-".into(),
    }
}

/// The Supervisor's view of a node: `open/open` on 2379/2380, and 22 and 6443 only when they
/// are not open.
fn reach_cell(n: &crate::report::DiagnosedNode) -> String {
    if n.supervisor_reach.is_empty() {
        return "-".into();
    }
    let state = |port: u16| {
        n.supervisor_reach
            .iter()
            .find(|x| x.port == port)
            .map(|x| x.state)
    };
    let word = |s: Option<PortState>| match s {
        Some(s) => s.phrase().to_string(),
        None => "-".into(),
    };
    let mut cell = format!("{}/{}", word(state(2379)), word(state(2380)));
    for port in [22, 6443] {
        if let Some(s) = state(port).filter(|s| *s != PortState::Open) {
            cell.push_str(&format!(", {port} {}", word(Some(s))));
        }
    }
    cell
}

/// The part of each name that tells it from the others: what follows the prefix they all share
/// (to its last `-`), shortened; the whole name (shortened) when nothing is shared.
fn short_names(names: &[&str]) -> Vec<String> {
    let shared = match names {
        [] | [_] => 0,
        [first, rest @ ..] => {
            let mut len = first.len();
            for n in rest {
                len = first
                    .char_indices()
                    .zip(n.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map(|((i, c), _)| i + c.len_utf8())
                    .unwrap_or(0)
                    .min(len);
            }
            // Back to the last `-` of the shared part, so `…-4rz8m` not `…rz8m`.
            first[..len].rfind('-').map(|i| i + 1).unwrap_or(0)
        }
    };
    names
        .iter()
        .map(|n| fit(n.get(shared..).filter(|s| !s.is_empty()).unwrap_or(n), 16))
        .collect()
}

/// The last line: what `--details` adds, so nobody wonders where the rest went.
fn more(r: &DiagnoseReport, evidence_shown: usize) -> String {
    let mut what = vec!["path times", "etcd logs"];
    if !r.etcd_metrics.is_empty() {
        what.push("metrics");
    }
    if r.network_policy.is_some() || r.nsx_manager.is_some() {
        what.push("network policy");
    }
    let evidence = r.verdict.evidence.len();
    let all_evidence = format!("all {evidence} evidence lines");
    if evidence > evidence_shown.min(EVIDENCE) {
        what.push(&all_evidence);
    }
    if !r.verdict.notes.is_empty() {
        what.push("notes");
    }
    format!("More with --details: {}", what.join(", "))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `text` made visible and cut to `width` characters, `…` last when cut.
fn fit(text: &str, width: usize) -> String {
    let text = visible(text);
    if chars(&text) <= width {
        return text.into_owned();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// `text` made visible and wrapped at spaces to `width`: `first` before the first line, `rest`
/// before the others; a word longer than a line is cut.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let text = visible(text);
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let room = chars(&line) + usize::from(!empty) + chars(word);
        if !empty && room > width {
            lines.push(line);
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        lines.push(line);
    }
    lines.into_iter().map(|l| fit(&l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article() -> DiagnoseReport {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reports/article-jumpbox.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn view() -> View {
        View {
            details: false,
            width: 100,
            at: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_644_007),
            kubectl: None,
        }
    }

    /// An armed guard: its pause command is the first step, and its section is shown; not
    /// armed, neither.
    #[test]
    fn an_armed_guard_pauses_first() {
        let mut r = article();
        r.remediation_guard = Some(
            serde_json::from_value(serde_json::json!({
                "state": "Armed",
                "clusterPaused": false,
                "healthChecks": [],
                "markedMachines": [],
                "pauseCommand": "kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{\"spec\":{\"paused\":true}}' --context=supervisor",
                "unpauseCommand": "kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{\"spec\":{\"paused\":false}}' --context=supervisor"
            }))
            .unwrap(),
        );
        let out = render(&r, false, Paint { on: false }, &view());
        let first = out
            .lines()
            .skip_while(|l| *l != "NEXT STEPS:")
            .nth(1)
            .unwrap();
        assert!(first.starts_with("  1. Before anything else"), "{out}");
        let pause = out
            .lines()
            .skip_while(|l| *l != "NEXT STEPS:")
            .nth(2)
            .unwrap();
        assert!(
            pause
                .trim_start()
                .starts_with("kubectl patch cluster tkc-prod"),
            "{out}"
        );
        assert!(out.contains("REMEDIATION GUARD: armed"), "{out}");

        r.remediation_guard.as_mut().unwrap().state = GuardState::NotArmed;
        // Not armed: nothing to pause, no section.
        let out = render(&r, false, Paint { on: false }, &view());
        assert!(!out.contains("REMEDIATION GUARD"), "{out}");
        assert!(!out.contains("Before anything else"), "{out}");
    }

    /// Names from outside: made visible (no escape reaches the terminal) and shortened with `…`
    /// on the first screen only; the details keep them whole.
    #[test]
    fn hostile_and_long_names() {
        let mut r = article();
        let long = format!("cp-\u{1b}]0;owned\u{7}-{}", "x".repeat(80));
        let old = r.nodes[0].name.clone();
        r.nodes[0].name = long.clone();
        for m in &mut r.matrices {
            for n in &mut m.nodes {
                if *n == old {
                    n.clone_from(&long);
                }
            }
            for c in &mut m.cells {
                if c.from == old {
                    c.from.clone_from(&long);
                }
                if c.to == old {
                    c.to.clone_from(&long);
                }
            }
        }
        r.header.cluster.name = "tkc-\u{1b}[2Jprod".into();
        let out = render(&r, false, Paint { on: false }, &view());
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
        assert!(out.starts_with("tkc-\\x1b[2Jprod -n ns-prod"), "{out}");
        let row = out
            .lines()
            .find(|l| l.starts_with("cp-\\x1b]0;owned\\x07-"))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(row.contains("…"), "{row}");
        // The cluster's name is not a Kubernetes name: no command carries it.
        assert!(out.contains("'<not a valid name>'"), "{out}");
        let details =
            super::super::output(&r, super::super::Format::Table, Paint { on: false }).unwrap();
        assert!(details.contains(&format!("cp-\\x1b]0;owned\\x07-{}", "x".repeat(80))));
    }

    /// Staggered onsets: the timeline is shown under the table, and `since` says so.
    #[test]
    fn staggered_onsets_show_the_timeline() {
        let mut r = article();
        let t = r.timeline.as_mut().unwrap();
        t.shape = Some(TimelineShape::Staggered);
        t.summary = Some("staggered: a at T1, b at T2".into());
        t.pairs[0].onset = Some("2026-12-07T11:40:00.000000Z".into());
        t.pairs[1].onset = Some("2026-12-07T11:45:00.000000Z".into());
        let out = render(&r, false, Paint { on: false }, &view());
        assert!(
            out.contains("since: 2026-12-07T11:40:00Z, 6m ago, staggered (below)"),
            "{out}"
        );
        assert!(out.contains("SINCE WHEN"), "{out}");
        let plain = render(&article(), false, Paint { on: false }, &view());
        assert!(!plain.contains("SINCE WHEN"), "{plain}");
    }

    /// The header is one line within the width: the route's reason in words, dropped first when
    /// the names are long; `--via` says it was asked for.
    #[test]
    fn the_header_is_one_line() {
        let mut r = article();
        let out = render(&r, false, Paint { on: false }, &view());
        let first = out.lines().next().unwrap();
        assert!(first.ends_with(", jumpbox (workload API down)"), "{first}");
        assert!(out.lines().nth(1).unwrap().is_empty(), "{out}");
        assert!(!out.contains("route:"), "{out}");
        r.route.reason = "--via jumpbox".into();
        let out = render(&r, false, Paint { on: false }, &view());
        assert!(
            out.lines().next().unwrap().ends_with(", jumpbox (--via)"),
            "{out}"
        );
        r.header.namespace = "a-namespace-with-a-long-name".into();
        let out = render(&r, false, Paint { on: false }, &view());
        let first = out.lines().next().unwrap();
        assert!(first.ends_with(", jumpbox"), "{first}");
        assert!(first.chars().count() <= 100, "{first}");
        r.header.cluster.name = "c".repeat(120);
        let out = render(&r, false, Paint { on: false }, &view());
        let first = out.lines().next().unwrap();
        assert_eq!(first.chars().count(), 100, "{first}");
        assert!(first.ends_with('…'), "{first}");
    }

    #[test]
    fn short_names_tell_nodes_apart() {
        assert_eq!(
            short_names(&["tkc-prod-7xk2p-4rz8m", "tkc-prod-7xk2p-9qtvw"]),
            ["4rz8m", "9qtvw"]
        );
        assert_eq!(short_names(&["cp1", "cp2"]), ["cp1", "cp2"]);
        assert_eq!(short_names(&["a-1", "b-2"]), ["a-1", "b-2"]);
        assert_eq!(short_names(&["only"]), ["only"]);
    }
}
