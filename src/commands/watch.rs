//! `diagnose --watch[=INTERVAL]`: diagnose again every INTERVAL until every cluster is Healthy
//! (exit 0) or a signal comes (exit 130), for one cluster or with `--all`/`-A`.
//!
//! Tables: the first round is printed whole; after it, one line per cluster whose verdict
//! changed, with the time and why (`08:31:02 EtcdPeerNetworkBlocked → EtcdPeerNetworkPartial
//! (tkc-prod-7xk2p-9qtvw reaches its peers again)`). `-o json`: one compact JSON document per
//! round, one per line (JSON lines); `-o yaml`: one YAML document per round (`---`). Every
//! round's pods are deleted before the next round starts.

use std::collections::BTreeMap;
use std::time::Duration;

use super::many::Selection;
use super::round::{round_with_cleanup, Diagnosed, Round};
use super::{Emit, Outcome};
use crate::error::{Error, Result, EXIT_OK};
use crate::plan::DiagnoseOptions;
use crate::render::{self, Format, Paint};
use crate::report::{watch::why_changed, DiagnoseReport, ListItem};
use crate::{connect::Connection, signal};

/// What a cluster was at the last round: its report, or the line of its failure.
enum Seen {
    Report(Box<DiagnoseReport>),
    Failed(String),
}

impl Seen {
    fn verdict(&self) -> String {
        match self {
            Seen::Report(r) => r.verdict.code.to_string(),
            Seen::Failed(_) => "Error".into(),
        }
    }
}

pub async fn run(
    conn: &Connection,
    selection: &Selection,
    opts: &DiagnoseOptions,
    format: Format,
    every: Duration,
    emit: Emit<'_>,
) -> Result<Outcome> {
    let paint = Paint::detect();
    let mut last: BTreeMap<(String, String), Seen> = BTreeMap::new();
    let mut first = true;
    loop {
        let (result, notes) = round_with_cleanup(conn, selection, opts).await;
        for note in notes {
            // Pod notes go to stderr as they come, like the rest of the progress.
            eprintln_visible(&note);
        }
        let round = result?;
        let (now, text, healthy) = match round {
            Round::One(Diagnosed::Report(report, _)) => {
                let healthy = report.result.exit_code == EXIT_OK;
                let text = match format {
                    Format::Json => render::json_line(&*report)?,
                    Format::Yaml => yaml_doc(&*report)?,
                    _ if first => render::diagnose(&report, format, paint)?,
                    _ => String::new(),
                };
                let key = (
                    report.header.namespace.clone(),
                    report.header.cluster.name.clone(),
                );
                (vec![(key, Seen::Report(report))], text, healthy)
            }
            Round::Many(list, _, _) => {
                let healthy = list.result.exit_code == EXIT_OK;
                let text = match format {
                    Format::Json => render::json_line(&list)?,
                    Format::Yaml => yaml_doc(&list)?,
                    _ if first => render::diagnose_list(&list, format, paint, !selection.summary)?,
                    _ => String::new(),
                };
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
                (now, text, healthy)
            }
            // --watch conflicts with --dry-run (clap).
            Round::One(Diagnosed::DryRun(_)) => {
                return Err(Error::Usage("--watch cannot be used with --dry-run".into()))
            }
        };
        emit(&text);
        if matches!(format, Format::Table | Format::Wide) {
            let clock = clock();
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
                    emit(&format!("{}\n", render::visible(&line)));
                }
            }
            if healthy && !first {
                emit(&format!("{clock} Healthy: the watch ends\n"));
            }
        }
        last = now.into_iter().collect();
        first = false;
        if healthy {
            return Ok(Outcome {
                stdout: String::new(),
                notes: Vec::new(),
                exit_code: EXIT_OK,
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = signal::shutdown() => return Err(Error::Interrupted),
        }
    }
}

fn eprintln_visible(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", render::visible(line));
}

/// The time of day a watch line starts with (`08:31:02`), in UTC: the plugin carries no
/// time-zone database, and UTC is what etcd's logs and the API server's timestamps use.
fn clock() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let day = secs % 86_400;
    format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60)
}

/// One YAML document, started with `---` so a stream of them reads as documents.
fn yaml_doc<T: serde::Serialize>(value: &T) -> Result<String> {
    Ok(format!("---\n{}", render::structured(value, Format::Yaml)?))
}
