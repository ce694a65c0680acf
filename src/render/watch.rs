//! `diagnose --watch` as printed, round after round, for one cluster or with `--all`/`-A`.
//!
//! Tables: the first round is printed whole; after it, one line per cluster whose verdict
//! changed, with the time and why (`08:31:02 EtcdPeerNetworkBlocked → EtcdPeerNetworkPartial
//! (tkc-prod-7xk2p-9qtvw reaches its peers again)`), and a last line when the watch ends.
//! `-o json`: one compact JSON document per round, one per line (JSON lines); `-o yaml`: one
//! YAML document per round (`---`).

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::{switch, Format, Layout, Lines, Listed, Paint};
use crate::error::Result;
use crate::report::{watch::why_changed, DiagnoseReport, ListItem, ListReport};

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
pub struct Watch {
    format: Format,
    paint: Paint,
    /// Each unhealthy cluster's tables under a list's summary (no `--summary`).
    detail: bool,
    /// The clusters at the last round; `None` before the first.
    last: Option<BTreeMap<Key, Seen>>,
}

impl Watch {
    pub fn new(format: Format, paint: Paint, detail: bool) -> Watch {
        Watch {
            format,
            paint,
            detail,
            last: None,
        }
    }

    /// One cluster's round, diagnosed at `at`; `ends` when the watch stops after it (Healthy).
    pub fn one(
        &mut self,
        report: Box<DiagnoseReport>,
        ends: bool,
        at: SystemTime,
    ) -> Result<String> {
        let text = self.whole(&*report)?;
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
        let text = self.whole(&Listed {
            list: &list,
            detail: self.detail,
        })?;
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
    fn whole<R: super::Tabular>(&self, report: &R) -> Result<String> {
        if self.tables() && self.last.is_some() {
            return Ok(String::new());
        }
        switch(report, self.format, self.paint, Layout::Stream)
    }

    fn tables(&self) -> bool {
        matches!(self.format, Format::Table | Format::Wide)
    }

    /// The change lines of a round (tables only): a cluster new since the first round, or whose
    /// verdict moved; then `Healthy: the watch ends` when it does. Remembers `now` for the next.
    fn changes(&mut self, now: Vec<(Key, Seen)>, ends: bool, at: SystemTime) -> String {
        let first = self.last.is_none();
        let mut out = Lines::new(self.paint);
        if self.tables() {
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
            }
            if ends && !first {
                out.line(format!("{clock} Healthy: the watch ends"));
            }
        }
        self.last = Some(now.into_iter().collect());
        out.finish()
    }
}

/// The time of day a watch line starts with (`08:31:02`), in UTC: the plugin carries no
/// time-zone database, and UTC is what etcd's logs and the API server's timestamps use.
fn clock(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let day = secs % 86_400;
    format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60)
}
