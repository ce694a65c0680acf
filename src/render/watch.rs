//! `diagnose --watch` as printed, round after round, for one cluster or with `--all`/`-A`.
//!
//! Tables: the first round is printed whole; after it, one line per cluster whose verdict
//! changed, with the time and why (`2026-12-07T08:31:02Z EtcdPeerNetworkBlocked → EtcdPeerNetworkPartial
//! (tkc-prod-7xk2p-9qtvw reaches its peers again)`), and a last line when the watch ends.
//! `-o json`: one compact JSON document per round, one per line (JSON lines); `-o yaml`: one
//! YAML document per round (`---`).

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::{switch, Format, Layout, Lines, Listed, Paint, Tabular, View};
use crate::error::Result;
use crate::report::watch::{recovered_pairs, why_changed};
use crate::report::{DiagnoseReport, ListItem, ListReport};

/// A cluster, by namespace and name.
type Key = (String, String);

/// What a cluster was at a round: its report, or the line of its failure.
enum Seen {
    Report(Box<DiagnoseReport>),
    Failed(String),
}

impl Seen {
    /// The verdict code a change line names: the report's, or `Error`.
    fn verdict(&self) -> String {
        match self {
            Seen::Report(r) => r.verdict.code.to_string(),
            Seen::Failed(_) => "Error".into(),
        }
    }
}

/// The watch's printer: it keeps each cluster's last round to say what changed.
pub(crate) struct Watch {
    format: Format,
    paint: Paint,
    /// Each unhealthy cluster's tables under a list's summary (no `--summary`).
    detail: bool,
    /// The clusters at the last round; `None` before the first.
    last: Option<BTreeMap<Key, Seen>>,
    /// How the first round's tables are shown (every section unless [`Watch::view`]).
    view: View,
}

impl Watch {
    pub fn new(format: Format, paint: Paint, detail: bool) -> Watch {
        Watch {
            format,
            paint,
            detail,
            last: None,
            view: View::default(),
        }
    }

    /// The first round's tables as `view` shows them (its time each round's own).
    pub fn view(self, view: View) -> Watch {
        Watch { view, ..self }
    }

    /// One cluster's round, diagnosed at `at`; `ends` when the watch stops after it (Healthy).
    pub fn one(
        &mut self,
        report: Box<DiagnoseReport>,
        ends: bool,
        at: SystemTime,
    ) -> Result<String> {
        let text = self.whole(&*report, at)?;
        let key = (
            report.header.namespace.clone(),
            report.header.cluster.name.clone(),
        );
        Ok(text + &self.changes(vec![(key, Seen::Report(report))], ends, at))
    }

    /// A many-cluster round, as [`Watch::one`].
    pub fn many(
        &mut self,
        list: ListReport<DiagnoseReport>,
        ends: bool,
        at: SystemTime,
    ) -> Result<String> {
        let text = self.whole(
            &Listed {
                list: &list,
                detail: self.detail,
            },
            at,
        )?;
        let now = list
            .items
            .into_iter()
            .map(|i| match i {
                ListItem::Report(r) => (
                    (r.header.namespace.clone(), r.header.cluster.name.clone()),
                    Seen::Report(Box::new(r)),
                ),
                ListItem::Failed(f) => ((f.namespace, f.cluster), Seen::Failed(f.message)),
            })
            .collect();
        Ok(text + &self.changes(now, ends, at))
    }

    /// The round's report as a document of the stream; tables only at the first round.
    fn whole<R: Tabular>(&self, report: &R, at: SystemTime) -> Result<String> {
        if self.format.is_tables() && self.last.is_some() {
            return Ok(String::new());
        }
        let view = View {
            at,
            ..self.view.clone()
        };
        switch(report, self.format, self.paint, Layout::Stream, &view)
    }

    /// The change lines of a round (tables only): a cluster new since the first round, or whose
    /// verdict moved; then `Healthy: the watch ends` when it does. Remembers `now` for the next.
    fn changes(&mut self, now: Vec<(Key, Seen)>, ends: bool, at: SystemTime) -> String {
        let first = self.last.is_none();
        let mut out = Lines::new(self.paint);
        if self.format.is_tables() {
            let clock = clock(at);
            let last = self.last.take().unwrap_or_default();
            for (key, seen) in &now {
                let line = match last.get(key) {
                    None if first => None,
                    None => Some(format!(
                        "{clock} {}/{}: new, {}",
                        key.0,
                        key.1,
                        seen.verdict()
                    )),
                    Some(before) if before.verdict() != seen.verdict() => {
                        let why = match (before, seen) {
                            (Seen::Report(b), Seen::Report(a)) => why_changed(b, a),
                            (_, Seen::Failed(message)) => message.clone(),
                            (_, Seen::Report(a)) => a.verdict.summary.clone(),
                        };
                        let who = if now.len() > 1 {
                            format!("{}/{}: ", key.0, key.1)
                        } else {
                            String::new()
                        };
                        Some(format!(
                            "{clock} {who}{} → {} ({why})",
                            before.verdict(),
                            seen.verdict()
                        ))
                    }
                    Some(_) => None,
                };
                if let Some(line) = line {
                    out.line(line);
                }
                // A pair that works again, whether or not the verdict moved.
                if let (Some(Seen::Report(b)), Seen::Report(a)) = (last.get(key), seen) {
                    let who = if now.len() > 1 {
                        format!("{}/{}: ", key.0, key.1)
                    } else {
                        String::new()
                    };
                    for p in recovered_pairs(b, a) {
                        out.line(format!("{clock} {who}{p}"));
                    }
                }
            }
            if ends && !first {
                out.line(format!("{clock} Healthy: the watch ends"));
            }
        }
        self.last = Some(now.into_iter().collect());
        out.finish()
    }
}

/// The time a watch line starts with (`2026-12-07T08:31:02Z`), as every time for people is
/// written ([`crate::when::instant`]): UTC, which etcd's logs and the API server's timestamps
/// use, and a date, so that a watch left running overnight still says which day.
fn clock(at: SystemTime) -> String {
    crate::when::instant(at)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::error::Error;
    use crate::render::output;
    use crate::report::v1alpha2::{CellState, VerdictCode};
    use crate::report::ClusterFailure;

    const OFF: Paint = Paint { on: false };

    /// 08:31:02 UTC on the first day of 1970.
    fn at() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(8 * 3600 + 31 * 60 + 2)
    }

    use crate::testing::peers_dropped as blocked;

    /// `node`'s paths to its peers (both ports) opened, and the verdict `code`.
    fn healed(before: &DiagnoseReport, node: &str, code: VerdictCode) -> DiagnoseReport {
        let mut r = before.clone();
        for m in &mut r.matrices {
            for c in m.cells.iter_mut().filter(|c| c.from == node) {
                c.state = CellState::Ok;
            }
        }
        r.verdict.code = code;
        r
    }

    fn named(mut r: DiagnoseReport, namespace: &str, cluster: &str) -> DiagnoseReport {
        r.header.namespace = namespace.into();
        r.header.cluster.name = cluster.into();
        r
    }

    #[test]
    fn tables_print_the_first_round_whole_then_only_the_verdicts_that_moved() {
        let mut w = Watch::new(Format::Table, OFF, true);
        let first = blocked();
        assert_eq!(
            w.one(Box::new(first.clone()), false, at()).unwrap(),
            output(&first, Format::Table, OFF).unwrap()
        );
        assert_eq!(w.one(Box::new(first.clone()), false, at()).unwrap(), "");
        let node = first.nodes[1].name.clone();
        let partial = healed(&first, &node, VerdictCode::EtcdPeerNetworkPartial);
        assert_eq!(
            w.one(Box::new(partial.clone()), false, at()).unwrap(),
            format!(
                "1970-01-01T08:31:02Z EtcdPeerNetworkBlocked → EtcdPeerNetworkPartial ({node} reaches its peers again)\n"
            )
        );
        let mut healthy = partial.clone();
        for n in &first.nodes {
            healthy = healed(&healthy, &n.name, VerdictCode::Healthy);
        }
        let why = why_changed(&partial, &healthy);
        // Then each pair that works again both ways (every pair had a way still failing).
        let mut names: Vec<&str> = first.nodes.iter().map(|n| n.name.as_str()).collect();
        names.sort();
        let recovered: String = [(0, 1), (0, 2), (1, 2)]
            .iter()
            .map(|(a, b)| {
                format!(
                    "1970-01-01T08:31:02Z {}↔{} recovered\n",
                    names[*a], names[*b]
                )
            })
            .collect();
        assert_eq!(
            w.one(Box::new(healthy), true, at()).unwrap(),
            format!(
                "1970-01-01T08:31:02Z EtcdPeerNetworkPartial → Healthy ({why})\n{recovered}1970-01-01T08:31:02Z Healthy: the watch ends\n"
            )
        );
    }

    #[test]
    fn a_first_round_that_ends_the_watch_is_only_its_report() {
        let mut w = Watch::new(Format::Wide, OFF, true);
        let r = healed(&blocked(), "none", VerdictCode::Healthy);
        assert_eq!(
            w.one(Box::new(r.clone()), true, at()).unwrap(),
            output(&r, Format::Wide, OFF).unwrap()
        );
    }

    #[test]
    fn json_is_one_line_per_round_and_yaml_one_document_per_round() {
        let r = blocked();
        let mut json = Watch::new(Format::Json, OFF, true);
        for _ in 0..2 {
            let line = json.one(Box::new(r.clone()), false, at()).unwrap();
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert!(line.ends_with('\n'));
            let back: DiagnoseReport = serde_json::from_str(&line).unwrap();
            assert_eq!(back, r);
        }
        let mut yaml = Watch::new(Format::Yaml, OFF, true);
        for _ in 0..2 {
            let doc = yaml.one(Box::new(r.clone()), true, at()).unwrap();
            let body = doc.strip_prefix("---\n").expect("a document of a stream");
            let back: DiagnoseReport = serde_yaml_ng::from_str(body).unwrap();
            assert_eq!(back, r);
        }
    }

    /// With many clusters a change line names its cluster; a cluster that was not there at the
    /// first round is new; a failure's line is its message.
    #[test]
    fn many_clusters_name_each_change() {
        let a = named(blocked(), "ns-a", "tkc-a");
        let failed = |ns, c| {
            ListItem::Failed(ClusterFailure::new(
                ns,
                c,
                &Error::Usage("the secret is gone".into()),
            ))
        };
        let list = |items| ListReport::new(items, Duration::from_secs(1));
        let mut w = Watch::new(Format::Table, OFF, false);
        let first = list(vec![ListItem::Report(a.clone()), failed("ns-b", "tkc-b")]);
        assert_eq!(
            w.many(first.clone(), false, at()).unwrap(),
            output(
                &Listed {
                    list: &first,
                    detail: false
                },
                Format::Table,
                OFF
            )
            .unwrap()
        );
        let b = named(blocked(), "ns-b", "tkc-b");
        let c = named(blocked(), "ns-c", "tkc-c");
        let summary = b.verdict.summary.clone();
        let second = list(vec![
            failed("ns-a", "tkc-a"),
            ListItem::Report(b),
            ListItem::Report(c),
        ]);
        let message = Error::Usage("the secret is gone".into()).to_string();
        assert_eq!(
            w.many(second, false, at()).unwrap(),
            format!(
                "1970-01-01T08:31:02Z ns-a/tkc-a: EtcdPeerNetworkBlocked → Error ({message})\n\
                 1970-01-01T08:31:02Z ns-b/tkc-b: Error → EtcdPeerNetworkBlocked ({summary})\n\
                 1970-01-01T08:31:02Z ns-c/tkc-c: new, EtcdPeerNetworkBlocked\n"
            )
        );
    }
}
