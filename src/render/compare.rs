//! `analyse NEW --against GOOD` as text: the two bundles and the verdict before → after first,
//! then one section per kind of change, each only when something of that kind changed; what is
//! alike is said once, on one line, and what could not be compared on another.
//!
//! [`sections`] is the one list of what the comparison shows, as raw text in titled tables: the
//! table here prints it through [`super::table`] (so through [`super::visible`]); a report
//! format (html, md) takes the same sections and escapes them for its own medium.

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
            if s.header.is_empty() {
                for row in &s.rows {
                    out.line(format!("  {}", row.join(" ")));
                }
            } else {
                out.table(&s.header, &s.rows);
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
pub fn headline(c: &Comparison) -> Vec<String> {
    let when =
        |created: &str| crate::when::instant_of(created).unwrap_or_else(|| created.to_string());
    let apart = match (
        crate::when::parse(&c.before.created),
        crate::when::parse(&c.after.created),
    ) {
        (Some(b), Some(a)) => a
            .duration_since(b)
            .map(|d| format!(", {} apart", crate::when::span(d)))
            .unwrap_or_default(),
        _ => String::new(),
    };
    vec![
        format!("COMPARED  {}/{}", c.namespace, c.cluster),
        format!(
            "BEFORE    {} ({}, kubectl-etcdnet {})",
            c.before.bundle,
            when(&c.before.created),
            c.before.plugin_version
        ),
        format!(
            "AFTER     {} ({}, kubectl-etcdnet {}{apart})",
            c.after.bundle,
            when(&c.after.created),
            c.after.plugin_version
        ),
    ]
}

/// One kind of change: a title and a table (a header and rows), or lines (no header, each row
/// one line of its cells). Raw text, as the bundles hold it: each renderer escapes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub title: String,
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl Section {
    fn table(title: String, header: &[&'static str], rows: Vec<Vec<String>>) -> Section {
        Section {
            title,
            header: header.to_vec(),
            rows,
        }
    }
}

/// The sections of what changed, in the order a support engineer reads them: the paths, the
/// ports from outside, the nodes, the members, the leader, the rules, the metrics, the
/// conditions. A kind with no change has no section ([`alike`] names it).
pub fn sections(c: &Comparison) -> Vec<Section> {
    let mut out = Vec::new();
    for (change, title) in [
        (PathMove::Broke, "PATHS THAT BROKE"),
        (PathMove::Recovered, "PATHS THAT RECOVERED"),
        (PathMove::Changed, "PATHS THAT FAIL OTHERWISE"),
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
            out.push(Section::table(
                format!("{title} ({count})"),
                &["PAIR", "PORT", "BEFORE", "AFTER"],
                rows,
            ));
        }
    }
    if !c.supervisor_reach.is_empty() {
        out.push(Section::table(
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
        out.push(Section::table(
            "CONTROL-PLANE NODES".into(),
            &["NODE", "CHANGE"],
            c.nodes
                .iter()
                .map(|n| vec![n.name.clone(), presence_phrase(n.change).into()])
                .collect(),
        ));
    }
    if !c.members.is_empty() {
        out.push(Section::table(
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
        out.push(Section {
            title: "LEADER".into(),
            header: Vec::new(),
            rows: vec![vec![format!(
                "{}: {} → {}",
                leader_move_phrase(c.leader.change),
                leader_text(&c.leader.before),
                leader_text(&c.leader.after)
            )]],
        });
    }
    if !c.rules.is_empty() {
        out.push(Section::table(
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
        out.push(Section::table(
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
        out.push(Section::table(
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
pub fn alike(c: &Comparison) -> Vec<&'static str> {
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
