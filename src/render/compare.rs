//! `analyse NEW --against GOOD` as text: the two bundles and the verdict before → after first,
//! then one section per kind of change, each only when something of that kind changed; what is
//! alike is said once, on one line, and what could not be compared on another.
//!
//! [`sections`] is the one list of what the comparison shows, as the case report's
//! [`Section`]s (raw text in titled tables): the table here prints them through
//! [`super::table`] (so through [`super::visible`]); [`page`] gives the same sections, with
//! the header, the verdict and what is alike, to `--report html|md` ([`super::case_page`]),
//! which escape them for their own medium.

use super::sheet::{Block, Section};
use super::{Lines, Paint, Tabular, Tone};
use crate::report::compare::{
    ClusterLeader, Comparison, LeaderMove, LeaderSeen, MetricName, PathMove, Presence, RuleMove,
    RuleSource,
};
use crate::report::v1alpha2::{CellState, Member, PathRef, PortState, VerdictCode};

impl Tabular for Comparison {
    type Document = Self;

    fn document(&self) -> &Self {
        self
    }

    fn table(&self, paint: Paint) -> String {
        let mut out = Lines::new(paint);
        for line in headline(self) {
            out.line(line);
        }
        let tone = if self.after.verdict == VerdictCode::Healthy {
            Tone::Good
        } else {
            Tone::Bad
        };
        out.marked(
            &format!("VERDICT   {} → ", self.before.verdict),
            tone,
            &self.after.verdict.to_string(),
            "",
        );
        out.line(format!("          {}", self.after.summary));
        for s in sections(self) {
            out.blank();
            out.line(&s.title);
            for b in &s.blocks {
                match b {
                    Block::Table { header, rows } => {
                        let header: Vec<&str> = header.iter().map(String::as_str).collect();
                        out.table(&header, rows);
                    }
                    Block::List(lines) => {
                        for line in lines {
                            out.line(format!("  {line}"));
                        }
                    }
                    // The change sections hold tables and lines only.
                    _ => {}
                }
            }
        }
        out.blank();
        let alike = alike(self);
        if !alike.is_empty() {
            out.line(format!("Alike: {}.", alike.join(", ")));
        }
        for n in &self.notes {
            out.line(format!("Not compared: {n}."));
        }
        out.finish()
    }
}

/// The lines above the verdict: which cluster, which two bundles, how far apart.
pub(crate) fn headline(c: &Comparison) -> Vec<String> {
    let apart = apart(c).map(|a| format!(", {a} apart")).unwrap_or_default();
    vec![
        format!("COMPARED  {}/{}", c.namespace, c.cluster),
        format!("BEFORE    {}", run_text(&c.before, "")),
        format!("AFTER     {}", run_text(&c.after, &apart)),
    ]
}

/// How long after the older bundle the newer was written (`10m`), when both times read.
fn apart(c: &Comparison) -> Option<String> {
    let b = crate::when::parse(&c.before.created)?;
    let a = crate::when::parse(&c.after.created)?;
    a.duration_since(b).ok().map(crate::when::span)
}

/// A bundle as the headline says it: its file, when and by which plugin it was written.
fn run_text(r: &crate::report::compare::ComparedRun, more: &str) -> String {
    let when = crate::when::instant_of(&r.created).unwrap_or_else(|| r.created.clone());
    format!(
        "{} ({when}, kubectl-etcdnet {}{more})",
        r.bundle, r.plugin_version
    )
}

/// The comparison as a case report's title and sections (`--against GOOD --report html|md`):
/// which cluster and bundles, the verdict before → after, each change as the table shows it,
/// what is alike, what could not be compared, and who compared them.
pub(crate) fn page(c: &Comparison) -> (String, Vec<Section>) {
    let title = format!("etcd network changes: {}/{}", c.namespace, c.cluster);
    let mut facts = vec![
        ("Cluster".to_string(), c.cluster.clone()),
        ("Namespace".into(), c.namespace.clone()),
        ("Before".into(), run_text(&c.before, "")),
        ("After".into(), run_text(&c.after, "")),
    ];
    if let Some(a) = apart(c) {
        facts.push(("Apart".into(), a));
    }
    facts.push(("Supervisor context".into(), c.after.context.clone()));
    let mut out = vec![
        Section::new("header", "Compared").with(Block::Facts(facts)),
        Section::new("verdict", "Verdict").with(Block::Verdict {
            code: format!("{} → {}", c.before.verdict, c.after.verdict),
            healthy: c.after.verdict == VerdictCode::Healthy,
            summary: c.after.summary.clone(),
        }),
    ];
    out.extend(sections(c));
    let alike = alike(c);
    let mut rest = Section::new("alike", "Alike and not compared");
    if !alike.is_empty() {
        rest = rest.with(Block::Text(format!("Alike: {}.", alike.join(", "))));
    }
    if !c.notes.is_empty() {
        rest = rest
            .with(Block::Text("Not compared:".into()))
            .with(Block::List(c.notes.clone()));
    }
    if !rest.blocks.is_empty() {
        out.push(rest);
    }
    out.push(
        Section::new("provenance", "Provenance").with(Block::Facts(vec![(
            "Compared by".into(),
            format!(
                "kubectl-etcdnet {} (analyse --against, offline)",
                env!("CARGO_PKG_VERSION")
            ),
        )])),
    );
    (title, out)
}

/// One kind of change: its anchor, its title and its table.
fn change_table(id: &str, title: String, header: &[&str], rows: Vec<Vec<String>>) -> Section {
    Section::new(id, title).with(Block::Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

/// The sections of what changed, in the order a support engineer reads them: the paths, the
/// ports from outside, the nodes, the members, the leader, the rules, the metrics, the
/// conditions. A kind with no change has no section ([`alike`] names it).
pub(crate) fn sections(c: &Comparison) -> Vec<Section> {
    let mut out = Vec::new();
    for (change, id, title) in [
        (PathMove::Broke, "paths-broke", "PATHS THAT BROKE"),
        (
            PathMove::Recovered,
            "paths-recovered",
            "PATHS THAT RECOVERED",
        ),
        (
            PathMove::Changed,
            "paths-changed",
            "PATHS THAT FAIL OTHERWISE",
        ),
    ] {
        let rows = pair_rows(c, change);
        if !rows.is_empty() {
            let n = c.paths.iter().filter(|p| p.change == change).count();
            // A row is a pair both ways when both moved alike: say both counts when they differ.
            let count = if n == rows.len() {
                format!("{n}")
            } else {
                format!("{n} paths, {} pairs", rows.len())
            };
            out.push(change_table(
                id,
                format!("{title} ({count})"),
                &["PAIR", "PORT", "BEFORE", "AFTER"],
                rows,
            ));
        }
    }
    if !c.supervisor_reach.is_empty() {
        out.push(change_table(
            "reach",
            "VM PORTS FROM OUTSIDE THE VMS".into(),
            &["NODE", "PORT", "BEFORE", "AFTER", "CHANGE"],
            c.supervisor_reach
                .iter()
                .map(|r| {
                    vec![
                        r.node.clone(),
                        r.port.to_string(),
                        port_phrase(r.before).into(),
                        port_phrase(r.after).into(),
                        path_move_phrase(r.change).into(),
                    ]
                })
                .collect(),
        ));
    }
    if !c.nodes.is_empty() {
        out.push(change_table(
            "nodes",
            "CONTROL-PLANE NODES".into(),
            &["NODE", "CHANGE"],
            c.nodes
                .iter()
                .map(|n| vec![n.name.clone(), presence_phrase(n.change).into()])
                .collect(),
        ));
    }
    if !c.members.is_empty() {
        out.push(change_table(
            "members",
            "ETCD MEMBERS".into(),
            &["MEMBER", "CHANGE", "BEFORE", "AFTER"],
            c.members
                .iter()
                .map(|m| {
                    let who = m.after.as_ref().or(m.before.as_ref());
                    vec![
                        who.map(member_name).unwrap_or_default(),
                        presence_phrase(m.change).into(),
                        m.before.as_ref().map(member_text).unwrap_or("-".into()),
                        m.after.as_ref().map(member_text).unwrap_or("-".into()),
                    ]
                })
                .collect(),
        ));
    }
    if !matches!(c.leader.change, LeaderMove::Same | LeaderMove::Unknown) {
        out.push(
            Section::new("leader", "LEADER").with(Block::List(vec![format!(
                "{}: {} → {}",
                leader_move_phrase(c.leader.change),
                leader_text(&c.leader.before),
                leader_text(&c.leader.after)
            )])),
        );
    }
    if !c.rules.is_empty() {
        out.push(change_table(
            "rules",
            "RULES THAT BLOCK".into(),
            &["WHERE", "RULE", "CHANGE", "PATHS NOW"],
            c.rules
                .iter()
                .map(|r| {
                    let paths = if r.after.is_empty() {
                        &r.before
                    } else {
                        &r.after
                    };
                    vec![
                        source_phrase(r.source).into(),
                        r.rule.clone(),
                        rule_move_phrase(r.change).into(),
                        if r.after.is_empty() {
                            "none".into()
                        } else {
                            PathRef::paths_text(paths)
                        },
                    ]
                })
                .collect(),
        ));
    }
    if !c.metrics.is_empty() {
        out.push(change_table(
            "metrics",
            "METRICS THAT MOVED".into(),
            &["NODE", "METRIC", "BEFORE", "AFTER"],
            c.metrics
                .iter()
                .map(|m| {
                    vec![
                        m.node.clone(),
                        metric_phrase(m.metric).into(),
                        metric_value(m.metric, m.before),
                        metric_value(m.metric, m.after),
                    ]
                })
                .collect(),
        ));
    }
    if !c.conditions.is_empty() {
        let state = |s: &Option<crate::report::compare::ConditionState>| match s {
            None => "-".to_string(),
            Some(s) => match &s.reason {
                Some(r) => format!("{} ({r})", s.status),
                None => s.status.clone(),
            },
        };
        out.push(change_table(
            "conditions",
            "CONDITIONS".into(),
            &["OBJECT", "TYPE", "BEFORE", "AFTER"],
            c.conditions
                .iter()
                .map(|k| {
                    vec![
                        k.object.clone(),
                        k.kind.clone(),
                        state(&k.before),
                        state(&k.after),
                    ]
                })
                .collect(),
        ));
    }
    out
}

/// What did not change, each kind named once (`paths between the nodes, etcd members, ...`); the verdict is
/// on its own line above.
pub(crate) fn alike(c: &Comparison) -> Vec<&'static str> {
    let mut out = Vec::new();
    if c.paths.is_empty() {
        out.push("paths between the nodes");
    }
    if c.supervisor_reach.is_empty() {
        out.push("VM ports from outside");
    }
    if c.nodes.is_empty() {
        out.push("nodes");
    }
    if c.members.is_empty() {
        out.push("etcd members");
    }
    if c.leader.change == LeaderMove::Same {
        out.push("leader");
    }
    if c.rules.is_empty() {
        out.push("blocking rules");
    }
    if c.metrics.is_empty() {
        out.push("metrics");
    }
    if c.conditions.is_empty() {
        out.push("conditions");
    }
    out
}

/// The paths of one kind of change, a row per pair of nodes and port: `a ↔ b` when both ways
/// went the same way, else `a → b` per way. In port, then pair order.
fn pair_rows(c: &Comparison, change: PathMove) -> Vec<Vec<String>> {
    let of: Vec<_> = c.paths.iter().filter(|p| p.change == change).collect();
    let mut rows = Vec::new();
    let mut done = std::collections::BTreeSet::new();
    for p in &of {
        if done.contains(&(p.port, p.from.as_str(), p.to.as_str())) {
            continue;
        }
        let back = of.iter().find(|q| {
            q.port == p.port
                && q.from == p.to
                && q.to == p.from
                && q.before == p.before
                && q.after == p.after
        });
        let pair = match back {
            Some(q) => {
                done.insert((q.port, q.from.as_str(), q.to.as_str()));
                format!("{} ↔ {}", p.from, p.to)
            }
            None => format!("{} → {}", p.from, p.to),
        };
        done.insert((p.port, p.from.as_str(), p.to.as_str()));
        rows.push(vec![
            pair,
            p.port.to_string(),
            cell_phrase(p.before).into(),
            cell_phrase(p.after).into(),
        ]);
    }
    rows
}

fn cell_phrase(s: CellState) -> &'static str {
    s.label()
}

fn port_phrase(s: PortState) -> &'static str {
    match s {
        PortState::Open => "open",
        PortState::Timeout => "timeout",
        PortState::Refused => "refused",
        PortState::NoRoute => "no route",
        PortState::Unknown => "unknown failure",
    }
}

fn path_move_phrase(m: PathMove) -> &'static str {
    match m {
        PathMove::Broke => "broke",
        PathMove::Recovered => "recovered",
        PathMove::Changed => "fails otherwise",
    }
}

fn presence_phrase(p: Presence) -> &'static str {
    match p {
        Presence::Added => "added",
        Presence::Removed => "removed",
        Presence::Changed => "changed",
    }
}

fn member_name(m: &Member) -> String {
    match (&m.name, &m.id) {
        (Some(n), Some(id)) => format!("{n} ({id})"),
        (Some(n), None) => n.clone(),
        (None, Some(id)) => format!("{id} (never started)"),
        (None, None) => "?".into(),
    }
}

fn member_text(m: &Member) -> String {
    let urls = if m.peer_urls.is_empty() {
        "no peer URL".to_string()
    } else {
        m.peer_urls.join(",")
    };
    if m.is_learner {
        format!("{urls}, learner")
    } else {
        urls
    }
}

fn leader_move_phrase(m: LeaderMove) -> &'static str {
    match m {
        LeaderMove::Same => "the same",
        LeaderMove::Changed => "changed",
        LeaderMove::Lost => "lost",
        LeaderMove::Regained => "regained",
        LeaderMove::Unknown => "not known in both",
    }
}

fn leader_text(l: &ClusterLeader) -> String {
    match l.seen {
        LeaderSeen::One => l.names.join(""),
        LeaderSeen::None => "no leader".into(),
        // One name in a split: some nodes name it, the others none.
        LeaderSeen::Split if l.names.len() == 1 => {
            format!("{} for some nodes, none for the others", l.names[0])
        }
        LeaderSeen::Split => format!("split between {}", l.names.join(", ")),
        LeaderSeen::Unknown => "unknown".into(),
    }
}

fn source_phrase(s: RuleSource) -> &'static str {
    match s {
        RuleSource::SecurityPolicy => "SecurityPolicy",
        RuleSource::NsxManager => "NSX Manager DFW",
        RuleSource::GuestFirewall => "guest firewall",
    }
}

fn rule_move_phrase(m: RuleMove) -> &'static str {
    match m {
        RuleMove::NowMatches => "blocks now",
        RuleMove::NoLongerMatches => "no longer blocks",
        RuleMove::OtherPaths => "blocks other paths",
    }
}

fn metric_phrase(m: MetricName) -> &'static str {
    match m {
        MetricName::LeaderChanges => "leader changes seen",
        MetricName::FailedSends => "failed sends to peers",
        MetricName::WalFsyncP99Ms => "WAL fsync p99",
        MetricName::BackendCommitP99Ms => "backend commit p99",
        MetricName::DbSizeBytes => "database size",
    }
}

fn metric_value(m: MetricName, v: u64) -> String {
    match m {
        MetricName::WalFsyncP99Ms | MetricName::BackendCommitP99Ms => format!("{v} ms"),
        MetricName::DbSizeBytes => format!("{:.1} MiB", v as f64 / (1024.0 * 1024.0)),
        MetricName::LeaderChanges | MetricName::FailedSends => v.to_string(),
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
