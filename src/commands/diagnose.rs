//! `kubectl etcdnet diagnose`: one round ([`super::round`]) for one cluster or many, its report
//! rendered, its evidence written to a bundle when asked; `--watch` goes to [`super::watch`].

use std::path::PathBuf;
use std::time::Duration;

use super::many::Selection;
use super::round::{round_with_cleanup, Diagnosed, DryRun, Round};
use super::{Emit, Outcome};
use crate::connect::Connection;
use crate::error::{Result, EXIT_OK};
use crate::plan::DiagnoseConfig;
use crate::render::{self, Format, Listed, Paint, View};
use crate::report::ListItem;

/// What the command does besides diagnosing: which clusters, watch, bundle.
#[derive(Debug, Clone)]
pub(crate) struct DiagnoseRun {
    pub selection: Selection,
    /// `--watch`: the interval between rounds.
    pub watch: Option<Duration>,
    /// `--bundle`: where to write the evidence.
    pub bundle: Option<PathBuf>,
    /// `--report`: the case report, printed or written at the end of the run.
    pub report: Option<super::CaseReport>,
    /// `--details`: every section of the tables, not the first screen.
    pub details: bool,
}

/// Runs the diagnosis until it ends or a signal comes, then deletes what is left (unless
/// `--keep-pods`) and renders the result.
pub(crate) async fn run(
    conn: &Connection,
    how: &DiagnoseRun,
    opts: &DiagnoseConfig,
    format: Format,
    emit: Emit<'_>,
) -> Result<Outcome> {
    if let Some(every) = how.watch {
        let view = View::new(how.details, Some(conn.kubectl.clone()));
        return super::watch::run(conn, &how.selection, opts, format, every, view, emit).await;
    }
    if let Some(path) = &how.bundle {
        crate::bundle::check_target(path)?;
    }
    if let Some(c) = &how.report {
        c.check_target()?;
    }
    let started = std::time::SystemTime::now();
    let (result, mut notes) = round_with_cleanup(conn, &how.selection, opts).await;
    if let Some(nsx) = &opts.nsx {
        super::nsx::end(nsx).await;
    }
    // An interrupted round still owes the admin its warnings (what it could not delete).
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            use std::io::Write;
            for note in &notes {
                let _ = writeln!(std::io::stderr(), "{}", render::visible(note));
            }
            return Err(e);
        }
    };
    // Made now, at the round's end: the header's time is when the report was made.
    let view = View::new(how.details, Some(conn.kubectl.clone()));
    let (stdout, mut exit_code, evidence, items) = match result {
        Round::One(Diagnosed::DryRun(d)) => return dry_run(d, format, notes),
        Round::Many(_, _, d) if opts.dry_run => return dry_run(d, format, notes),
        Round::One(Diagnosed::Report(report, evidence)) => (
            render::output_as(&*report, format, Paint::detect(), &view)?,
            report.result.exit_code,
            vec![*evidence],
            vec![ListItem::Report(*report)],
        ),
        Round::Many(list, evidence, _) => (
            render::output_as(
                &Listed {
                    list: &list,
                    detail: !how.selection.summary,
                },
                format,
                Paint::detect(),
                &view,
            )?,
            list.result.exit_code,
            evidence,
            list.items,
        ),
    };
    if let Some(path) = &how.bundle {
        match crate::bundle::write(path, &evidence) {
            Ok(()) => notes.push(format!(
                "evidence of {} cluster(s) written to {}",
                evidence.len(),
                path.display()
            )),
            // The diagnosis is not thrown away for it: the report is printed, the bundle's
            // failure said, and the run did not complete what was asked (exit 3).
            Err(e) => {
                notes.push(format!("error: {e}"));
                exit_code = exit_code.max(crate::error::EXIT_INCOMPLETE);
            }
        }
    }
    // At the end of the run, whatever the verdict: a failing one is what a case is about.
    let stdout = match &how.report {
        None => stdout,
        Some(c) => {
            let mut contexts: Vec<&str> = evidence.iter().map(|e| e.context.as_str()).collect();
            contexts.dedup();
            let provenance = vec![
                ("Source".to_string(), "a live run".to_string()),
                ("Time".into(), crate::when::instant(started)),
                (
                    "Plugin".into(),
                    format!("kubectl-etcdnet {}", env!("CARGO_PKG_VERSION")),
                ),
                ("Supervisor context".into(), contexts.join(", ")),
                ("Command".into(), super::command_line()),
            ];
            let run = render::Run {
                at: started,
                plugin_version: env!("CARGO_PKG_VERSION").into(),
            };
            let page = render::case_report(c.format, &items, &run, &provenance);
            super::put_report(c, page, stdout, &mut notes, &mut exit_code)
        }
    };
    Ok(Outcome {
        stdout,
        notes,
        exit_code,
    })
}

/// `--dry-run`: the pods, nothing created.
fn dry_run(d: DryRun, format: Format, mut notes: Vec<String>) -> Result<Outcome> {
    let pods = d.pods;
    notes.extend(d.notes);
    notes.push(format!(
        "dry run: {} pod(s) shown, nothing created",
        pods.len()
    ));
    Ok(Outcome {
        stdout: render::dry_run(&pods, format)?,
        notes,
        exit_code: EXIT_OK,
    })
}
