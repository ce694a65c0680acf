//! The case report of a diagnosis (`analyse BUNDLE --report html|md`, `diagnose --report`): the
//! same [`DiagnoseReport`] the tables print, made into [`Section`]s for [`super::html`] and
//! [`super::markdown`]. In the order a support engineer reads a case: the header, the verdict
//! and next steps, the matrix, since when, where the packets die, the nodes and etcd, the
//! remediation guard, the evidence in full, the rest, and where the report came from.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::sheet::{Bar, Block, Chart, ChartMark, Grid, GridCell, GridPart, Mark, Section};
use super::{control_plane_cell, or_none, Lines, Paint};
use crate::report::v1alpha2::{CellState, HealthOutcome, LeaderState, Timeline};
use crate::report::{ClusterFailure, DiagnoseReport, DiagnosedNode, ListItem};

/// When the run was (the bundle's time, or now) and the plugin that made it (the bundle's
/// writer, or this one).
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub at: SystemTime,
    pub plugin_version: String,
}

/// Every section of one cluster's report. `run` says when and by which plugin;
/// `provenance` the lines that say where the report came from; `prefix` makes the sections'
/// anchors unique when a page holds several clusters.
pub(crate) fn sections(
    r: &DiagnoseReport,
    run: &Run,
    provenance: &[(String, String)],
    prefix: &str,
) -> Vec<Section> {
    let at = run.at;
    let id = |s: &str| format!("{prefix}{s}");
    let v = &r.verdict;
    let mut out = Vec::new();

    out.push(
        Section::new(&id("header"), "Cluster").with(Block::Facts(vec![
            ("Cluster".into(), r.header.cluster.name.clone()),
            ("Namespace".into(), r.header.namespace.clone()),
            ("Supervisor context".into(), r.header.context.clone()),
            ("Time".into(), crate::when::instant(at)),
            (
                "Control plane".into(),
                control_plane_cell(&r.header.control_plane),
            ),
            (
                "Workload API".into(),
                format!("{}: {}", r.workload_api.state, r.workload_api.detail),
            ),
            (
                "Route".into(),
                format!("{} ({})", r.route.name, r.route.reason),
            ),
            ("Plugin version".into(), run.plugin_version.clone()),
        ])),
    );

    let mut verdict = Section::new(&id("verdict"), "Verdict").with(Block::Verdict {
        code: v.code.to_string(),
        healthy: v.code == crate::report::v1alpha2::VerdictCode::Healthy,
        summary: v.summary.clone(),
    });
    if !v.next_steps.is_empty() {
        verdict = verdict
            .with(Block::Text("Next steps:".into()))
            .with(Block::Steps(v.next_steps.clone()));
    }
    if !v.notes.is_empty() {
        verdict = verdict
            .with(Block::Text(
                "Notes (the past, and what is too minor to decide):".into(),
            ))
            .with(Block::List(v.notes.clone()));
    }
    out.push(verdict);

    if let Some(grid) = grid(r) {
        let mut s = Section::new(&id("matrix"), "Paths between the nodes (2379/2380)")
            .with(Block::Text(
                "Each cell is what the FROM node saw when it dialled the TO node, on 2379 (client) and 2380 (peer); the diagonal is each node's own etcd.".into(),
            ))
            .with(Block::Grid(grid));
        if let Some(t) = supervisor_view(r) {
            s = s.with(t);
        }
        out.push(s);
    }

    if let Some(t) = &r.timeline {
        let mut s = Section::new(&id("timeline"), "Since when");
        if let Some(sum) = &t.summary {
            s = s.with(Block::Text(sum.clone()));
        }
        match chart(t, probe_time(r).unwrap_or(at)) {
            Some(c) => s = s.with(Block::Chart(c)),
            None => {
                s = s.with(Block::Text(
                    "No log read gives a time for the failing paths or the leader's loss.".into(),
                ))
            }
        }
        s = s.with(Block::Pre(text_of(|l| {
            super::timeline::section(l, Some(t), true)
        })));
        out.push(s);
    }

    if let Some(l) = &r.packet_location {
        out.push(
            Section::new(&id("location"), "Where the packets die").with(Block::Pre(text_of(
                |out| super::location::section(out, l, true),
            ))),
        );
    }

    out.push(
        Section::new(&id("nodes"), "Nodes").with(Block::Table {
            header: [
                "NODE",
                "IP",
                "ETCD",
                "RESTARTS",
                "KUBELET",
                "/HEALTH",
                "NOT PROBED",
            ]
            .map(String::from)
            .to_vec(),
            rows: r.nodes.iter().map(node_row).collect(),
        }),
    );

    if !r.logs.is_empty() {
        let rows = r
            .logs
            .iter()
            .map(|l| {
                let s = &l.summary;
                let leader = match &s.leader {
                    None => "-".to_string(),
                    Some(v) => {
                        let since = v
                            .since
                            .as_deref()
                            .and_then(crate::when::instant_of)
                            .map(|t| format!(" since {t}"))
                            .unwrap_or_default();
                        match v.state {
                            LeaderState::NoLeader => format!("none{since}"),
                            LeaderState::Known => format!(
                                "{}{since}",
                                v.leader_id
                                    .as_deref()
                                    .map(|id| crate::report::v1alpha2::NodeLogs::member_name(
                                        &r.logs, id
                                    ))
                                    .unwrap_or_else(|| "?".into())
                            ),
                        }
                    }
                };
                let findings: Vec<String> = s
                    .findings
                    .iter()
                    .map(|f| format!("{} ×{}", f.kind, f.count))
                    .collect();
                vec![
                    l.node.clone(),
                    or_none(s.local_member_id.as_deref()),
                    or_none(s.etcd_version.as_deref()),
                    leader,
                    if findings.is_empty() {
                        "-".into()
                    } else {
                        findings.join(", ")
                    },
                ]
            })
            .collect();
        let mut s = Section::new(&id("etcd"), "etcd").with(Block::Table {
            header: ["NODE", "MEMBER", "VERSION", "LEADER", "LOG FINDINGS"]
                .map(String::from)
                .to_vec(),
            rows,
        });
        let metrics = text_of(|l| super::metrics::section(l, r));
        if !metrics.is_empty() {
            s = s.with(Block::Pre(metrics));
        }
        out.push(s);
    }

    if let Some(g) = &r.remediation_guard {
        out.push(
            Section::new(&id("guard"), "Remediation guard")
                .with(Block::Pre(text_of(|l| super::guard::section(l, g, true)))),
        );
    }

    if !v.evidence.is_empty() {
        out.push(Section::new(&id("evidence"), "Evidence").with(Block::List(v.evidence.clone())));
    }

    if !r.findings.is_empty() {
        out.push(
            Section::new(&id("findings"), "The Supervisor's view").with(Block::List(
                r.findings
                    .iter()
                    .map(|f| format!("{} {}: {}", f.severity, f.code, f.message))
                    .collect(),
            )),
        );
    }
    if let Some(a) = &r.network_policy {
        out.push(
            Section::new(&id("network"), "Network policy")
                .with(Block::Pre(text_of(|l| super::network::section(l, a, true)))),
        );
    }
    if let Some(n) = &r.nsx_manager {
        out.push(
            Section::new(&id("nsx"), "NSX Manager").with(Block::Pre(text_of(|l| {
                super::nsx_manager::section(l, n, true)
            }))),
        );
    }

    let mut facts = provenance.to_vec();
    facts.push(("Route".into(), r.route.name.clone()));
    out.push(Section::new(&id("provenance"), "Provenance").with(Block::Facts(facts)));
    out
}

/// A cluster of a many-cluster run that has no report: its one section.
pub(crate) fn failure(f: &ClusterFailure, prefix: &str) -> Vec<Section> {
    vec![Section::new(&format!("{prefix}error"), "Not diagnosed")
        .with(Block::Facts(vec![
            ("Cluster".into(), f.cluster.clone()),
            ("Namespace".into(), f.namespace.clone()),
            ("Exit code".into(), f.exit_code.to_string()),
        ]))
        .with(Block::Text(f.message.clone()))]
}

/// The page's title and sections for the clusters of one run or bundle.
pub(crate) fn page(
    items: &[ListItem<DiagnoseReport>],
    run: &Run,
    provenance: &[(String, String)],
) -> (String, Vec<Section>) {
    let name = |i: &ListItem<DiagnoseReport>| match i {
        ListItem::Report(r) => format!("{}/{}", r.header.namespace, r.header.cluster.name),
        ListItem::Failed(f) => format!("{}/{}", f.namespace, f.cluster),
    };
    match items {
        [one] => {
            let title = format!("etcd network report: {}", name(one));
            let sections = match one {
                ListItem::Report(r) => sections(r, run, provenance, ""),
                ListItem::Failed(f) => {
                    let mut s = failure(f, "");
                    s.push(
                        Section::new("provenance", "Provenance")
                            .with(Block::Facts(provenance.to_vec())),
                    );
                    s
                }
            };
            (title, sections)
        }
        many => {
            let title = format!("etcd network report: {} clusters", many.len());
            let rows = many
                .iter()
                .map(|i| match i {
                    ListItem::Report(r) => vec![
                        r.header.namespace.clone(),
                        r.header.cluster.name.clone(),
                        r.verdict.code.to_string(),
                    ],
                    ListItem::Failed(f) => {
                        vec![f.namespace.clone(), f.cluster.clone(), "Error".into()]
                    }
                })
                .collect();
            let mut out = vec![Section::new("summary", "Clusters").with(Block::Table {
                header: ["NAMESPACE", "CLUSTER", "VERDICT"]
                    .map(String::from)
                    .to_vec(),
                rows,
            })];
            for (n, item) in many.iter().enumerate() {
                let prefix = format!("c{n}-");
                let mut part = match item {
                    ListItem::Report(r) => sections(r, run, &[], &prefix),
                    ListItem::Failed(f) => failure(f, &prefix),
                };
                // Each cluster's first section says whose the sections below are.
                if let Some(first) = part.first_mut() {
                    first.title = format!("{}: {}", name(item), first.title);
                }
                // One provenance for the page, at its end.
                part.retain(|s| s.id != format!("{prefix}provenance"));
                out.extend(part);
            }
            out.push(
                Section::new("provenance", "Provenance").with(Block::Facts(provenance.to_vec())),
            );
            (title, out)
        }
    }
}

/// What a text section prints, without colour and without its blank lines around.
fn text_of(f: impl FnOnce(&mut Lines)) -> String {
    let mut l = Lines::new(Paint { on: false });
    f(&mut l);
    l.finish().trim_matches('\n').to_string()
}

fn mark(state: CellState) -> Mark {
    match state {
        CellState::Ok => Mark::Open,
        CellState::NotProbed => Mark::Unknown,
        _ => Mark::Failing,
    }
}

/// The 2379 and 2380 matrices as one grid; None without any.
fn grid(r: &DiagnoseReport) -> Option<Grid> {
    let first = r.matrices.first()?;
    let nodes = first.nodes.clone();
    let ports: Vec<u16> = r.matrices.iter().map(|m| m.port).collect();
    let indexes: Vec<_> = r.matrices.iter().map(|m| m.index()).collect();
    let mut cells = Vec::with_capacity(nodes.len() * nodes.len());
    for from in &nodes {
        for to in &nodes {
            let parts = r
                .matrices
                .iter()
                .zip(&indexes)
                .map(|(m, ix)| match ix.cell(from, to) {
                    Some(c) => GridPart {
                        port: m.port,
                        state: c.state.to_string(),
                        text: match (c.state, c.ms) {
                            (CellState::Ok, Some(ms)) => format!("ok {ms}ms"),
                            (s, _) => s.label().to_string(),
                        },
                        mark: mark(c.state),
                    },
                    None => GridPart {
                        port: m.port,
                        state: CellState::NotProbed.to_string(),
                        text: "-".into(),
                        mark: Mark::Unknown,
                    },
                })
                .collect();
            cells.push(GridCell {
                from: from.clone(),
                to: to.clone(),
                parts,
            });
        }
    }
    Some(Grid {
        nodes,
        ports,
        cells,
    })
}

/// The ports as seen from outside the VMs (the jumpbox, or this machine over ssh), when seen.
fn supervisor_view(r: &DiagnoseReport) -> Option<Block> {
    if r.nodes.iter().all(|n| n.supervisor_reach.is_empty()) {
        return None;
    }
    let ports = super::REACH_PORTS;
    let from = match r.nodes.iter().find_map(|n| n.reach_from) {
        Some(crate::report::v1alpha2::Vantage::ThisMachine) => "FROM THIS MACHINE (ssh)",
        _ => "FROM THE SUPERVISOR (jumpbox)",
    };
    let mut header = vec![from.to_string()];
    header.extend(ports.iter().map(u16::to_string));
    let rows = super::supervisor_reach_rows(r);
    Some(Block::Table { header, rows })
}

fn node_row(n: &DiagnosedNode) -> Vec<String> {
    let ip =
        n.ip.map(|ip| ip.to_string())
            .unwrap_or_else(|| "<pending>".into());
    let Some(p) = &n.probe else {
        let why = n
            .error
            .as_ref()
            .map(|e| format!("{}: {}", e.kind.phrase(), e.message))
            .unwrap_or_else(|| "-".into());
        return vec![
            n.name.clone(),
            ip,
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            why,
        ];
    };
    let newest = p
        .etcd
        .containers
        .iter()
        .max_by_key(|c| c.attempt.unwrap_or(0));
    let etcd = match newest {
        Some(c) => c.state.trim_start_matches("CONTAINER_").to_string(),
        None => p.etcd.query.to_string(),
    };
    let health = match p.health.outcome {
        HealthOutcome::Healthy => "true",
        HealthOutcome::Unhealthy => "false",
        HealthOutcome::Error => "error",
        HealthOutcome::Skipped => "-",
    };
    vec![
        n.name.clone(),
        ip,
        etcd,
        or_none(newest.and_then(|c| c.attempt)),
        or_none(p.kubelet.active.clone()),
        health.into(),
        "-".into(),
    ]
}

/// The probes' time: the median of the nodes' clocks when they probed (the timeline's clock).
fn probe_time(r: &DiagnoseReport) -> Option<SystemTime> {
    let ms =
        crate::analyse::clock::median(r.nodes.iter().filter_map(|n| n.probe.as_ref()?.clock_ms))?;
    Some(UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).ok()?))
}

fn ms_of(t: SystemTime) -> Option<i64> {
    i64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

fn parse_ms(text: Option<&str>) -> Option<i64> {
    ms_of(crate::when::parse(text?)?)
}

/// The chart: a bar a failing pair from its onset to the probes' time, the leader losses
/// marked. None when no time at all is known (no onset, no leader loss).
fn chart(t: &Timeline, now: SystemTime) -> Option<Chart> {
    let end = ms_of(now)?;
    let bars: Vec<Bar> = t
        .pairs
        .iter()
        .map(|p| {
            let onset_ms = parse_ms(p.onset.as_deref());
            let at = |s: Option<&str>| s.and_then(crate::when::instant_of);
            let detail = match (
                at(p.onset.as_deref()),
                p.at_or_before,
                at(p.earliest.as_deref()),
            ) {
                (Some(o), true, _) => format!("failing since {o} or before"),
                (Some(o), false, Some(e)) => format!("failing since between {e} and {o}"),
                (Some(o), false, None) => format!("failing since {o}"),
                (None, _, _) => "failing since before the logs read".into(),
            };
            let sign = p
                .first_sign
                .map(|k| format!(" (first sign: {k})"))
                .unwrap_or_default();
            let now = match p.failing_now {
                Some(true) => "; failing at the probes' time",
                Some(false) => "; working again at the probes' time",
                None => "",
            };
            Bar {
                from: p.from.clone(),
                to: p.to.clone(),
                onset_ms,
                earliest_ms: parse_ms(p.earliest.as_deref()).filter(|_| !p.at_or_before),
                detail: format!("{detail}{sign}{now}"),
                failing_now: p.failing_now != Some(false),
            }
        })
        .collect();
    let mut losses: Vec<(i64, &str)> = t
        .no_leader
        .iter()
        .filter_map(|n| Some((parse_ms(n.since.as_deref())?, n.node.as_str())))
        .collect();
    losses.sort();
    let known = bars
        .iter()
        .filter_map(|b| b.earliest_ms.or(b.onset_ms))
        .chain(losses.iter().map(|(at, _)| *at))
        .min()?;
    let start = known.min(end);
    // A margin before the first time known: a bar whose onset is unknown starts there.
    let margin = ((end - start) / 10).max(5_000);
    let (start, end) = (start - margin, end.max(start + 1_000));
    // Losses closer than a twentieth of the chart are one mark (their labels would overlap),
    // at the first of them; its tooltip names every node.
    let mut marks: Vec<ChartMark> = Vec::new();
    for (at, node) in losses {
        match marks.last_mut() {
            Some(m) if at - m.at_ms < (end - start) / 20 => m.nodes.push(node.to_string()),
            _ => marks.push(ChartMark {
                at_ms: at,
                label: String::new(),
                nodes: vec![node.to_string()],
            }),
        }
    }
    for m in &mut marks {
        m.label = match m.nodes.as_slice() {
            [one] => format!("{one}: no leader"),
            all => format!("no leader on {} nodes", all.len()),
        };
    }
    Some(Chart {
        start_ms: start,
        end_ms: end,
        bars,
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{case_report, CaseFormat};
    use crate::report::ClusterFailure;

    use crate::testing::peers_dropped as fixture;

    fn run() -> Run {
        Run {
            at: UNIX_EPOCH + Duration::from_secs(1_796_199_975),
            plugin_version: "0.1.0".into(),
        }
    }

    /// A node that was not reached says why in words, as the screen does (issue 38: no
    /// internal names in human text); the json keeps the code `Rejected`.
    #[test]
    fn an_unreached_nodes_row_says_why_in_words() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reports/psa-rejected.json"
        );
        let report: crate::report::DiagnoseReport =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let row = node_row(&report.nodes[0]);
        let why = row.last().unwrap();
        assert!(
            why.starts_with("refused: the probe pod was rejected"),
            "{why}"
        );
        assert!(!why.contains("Rejected"), "{why}");
    }

    /// Several clusters: a summary first, each cluster's sections under its name with anchors
    /// of its own, a cluster without a report as its error, one provenance at the end.
    #[test]
    fn many_clusters_one_page() {
        let mut other = fixture();
        other.header.cluster.name = "tkc-other".into();
        let failed = ClusterFailure {
            api_version: "etcdnet.kubectl.io/v1alpha2".into(),
            kind: "ClusterError".into(),
            namespace: "ns-prod".into(),
            cluster: "tkc-gone".into(),
            message: "no such cluster <b>".into(),
            exit_code: 2,
            duration_ms: 0,
        };
        let items = vec![
            ListItem::Report(fixture()),
            ListItem::Report(other),
            ListItem::Failed(failed),
        ];
        let provenance = vec![("Source".to_string(), "a live run".to_string())];
        let (title, sections) = page(&items, &run(), &provenance);
        assert_eq!(title, "etcd network report: 3 clusters");
        let ids: Vec<&str> = sections.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids.first(), Some(&"summary"));
        assert_eq!(ids.last(), Some(&"provenance"));
        assert_eq!(ids.iter().filter(|i| **i == "provenance").count(), 1);
        for id in ["c0-verdict", "c1-verdict", "c2-error"] {
            assert!(ids.contains(&id), "{id}: {ids:?}");
        }
        let unique: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "anchors are unique: {ids:?}");
        assert!(sections
            .iter()
            .any(|s| s.title == "ns-prod/tkc-other: Cluster"));

        let html = case_report(CaseFormat::Html, &items, &run(), &provenance);
        assert!(html.contains("no such cluster &lt;b&gt;"), "{html}");
        let md = case_report(CaseFormat::Md, &items, &run(), &provenance);
        assert!(md.contains("| ns-prod | tkc-gone | Error |"), "{md}");
    }

    /// The chart: a bar a failing pair from its onset to the probes' time, the leader's losses
    /// within a twentieth of the chart one mark, nothing when no time at all is known.
    #[test]
    fn the_chart_of_a_timeline() {
        use crate::report::v1alpha2::NoLeaderSince;
        let pair =
            |from: &str, onset| crate::analyse::timeline::tests::failing_pair(from, "cp3", onset);
        let t = Timeline {
            pairs: vec![pair("cp1", Some("2026-12-02T08:20:00Z")), pair("cp2", None)],
            no_leader: vec![
                NoLeaderSince {
                    node: "cp1".into(),
                    since: Some("2026-12-02T08:21:00Z".into()),
                },
                NoLeaderSince {
                    node: "cp2".into(),
                    since: Some("2026-12-02T08:21:01Z".into()),
                },
            ],
            ..Timeline::default()
        };
        let now = crate::when::parse("2026-12-02T08:30:00Z").unwrap();
        let c = chart(&t, now).unwrap();
        assert_eq!(c.end_ms, ms_of(now).unwrap());
        assert!(c.start_ms < c.bars[0].onset_ms.unwrap());
        assert_eq!(c.bars[1].onset_ms, None);
        assert!(c.bars[1].detail.contains("before the logs read"), "{c:?}");
        assert_eq!(c.marks.len(), 1, "{c:?}");
        assert_eq!(c.marks[0].nodes, ["cp1", "cp2"]);
        assert_eq!(c.marks[0].label, "no leader on 2 nodes");

        let unknown = Timeline {
            pairs: vec![pair("cp1", None)],
            ..Timeline::default()
        };
        assert_eq!(chart(&unknown, now), None);
    }
}
