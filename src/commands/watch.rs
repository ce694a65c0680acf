//! `diagnose --watch[=INTERVAL]`: diagnose again every INTERVAL until every cluster is Healthy
//! (exit 0) or a signal comes (exit 130), for one cluster or with `--all`/`-A`.
//!
//! Each round is [`super::round`]'s, printed as it ends by [`render::Watch`] (the first round
//! whole, then the change lines; JSON lines or YAML documents). Every round's pods are deleted
//! before the next round starts, but for the jumpbox: one per cluster (one cluster watched) or
//! per vSphere Namespace (`--all`, `-A`) is kept across the rounds
//! (`route::jumpbox::JumpboxKeeper`: a vSphere Pod's start is the slowest part of a round),
//! replaced only when a cluster joins it or its VMs change, deleted once no cluster takes it,
//! and when the watch ends, whatever ends it (Healthy, an error, a signal).

use std::time::{Duration, SystemTime};

use super::many::Selection;
use super::round::{round_with_cleanup, Diagnosed, Round};
use super::{Emit, Outcome};
use crate::error::{Error, Result, EXIT_OK};
use crate::plan::DiagnoseConfig;
use crate::render::{self, Format, Paint, View};
use crate::route::jumpbox::JumpboxKeeper;
use crate::{connect::Connection, signal};

/// Diagnoses the selection every `every`, printing each round through `emit` as it ends, until
/// every cluster is Healthy (exit 0), a round fails, or a signal comes.
pub(crate) async fn run(
    conn: &Connection,
    selection: &Selection,
    opts: &DiagnoseConfig,
    format: Format,
    every: Duration,
    view: View,
    emit: Emit<'_>,
) -> Result<Outcome> {
    let keeper = std::sync::Arc::new(JumpboxKeeper::new(every));
    let opts = DiagnoseConfig {
        jumpbox_keeper: Some(keeper.clone()),
        ..opts.clone()
    };
    let result = rounds(conn, selection, &opts, format, every, view, emit).await;
    // One NSX Manager session for the whole watch (one login a run): ended once, here.
    if let Some(nsx) = &opts.nsx {
        super::nsx::end(nsx).await;
    }
    for failed in keeper.finish(Duration::from_secs(15)).await {
        eprintln_visible(&format!(
            "warning: could not delete jumpbox pod {failed}; run: {}",
            conn.kubectl.run(&format!(
                "etcdnet cleanup -n {}",
                crate::command::namespace(&conn.namespace)
            ))
        ));
    }
    result
}

/// The rounds of [`run`], until one ends the watch.
async fn rounds(
    conn: &Connection,
    selection: &Selection,
    opts: &DiagnoseConfig,
    format: Format,
    every: Duration,
    view: View,
    emit: Emit<'_>,
) -> Result<Outcome> {
    let mut printed = render::Watch::new(format, Paint::detect(), !selection.summary).view(view);
    loop {
        let (result, mut notes) = round_with_cleanup(conn, selection, opts).await;
        // The kept jumpboxes: those no cluster took this round are deleted; what changed in
        // them is said.
        if let Some(keeper) = &opts.jumpbox_keeper {
            keeper.end_round().await;
            notes.extend(keeper.take_notes());
        }
        for note in notes {
            // Pod notes go to stderr as they come, like the rest of the progress.
            eprintln_visible(&note);
        }
        let (text, healthy) = match result? {
            Round::One(Diagnosed::Report(report, _)) => {
                let healthy = report.result.exit_code == EXIT_OK;
                (printed.one(report, healthy, SystemTime::now())?, healthy)
            }
            Round::Many(list, _, _) => {
                let healthy = list.result.exit_code == EXIT_OK;
                (printed.many(list, healthy, SystemTime::now())?, healthy)
            }
            // --watch conflicts with --dry-run (clap).
            Round::One(Diagnosed::DryRun(_)) => {
                return Err(Error::Usage("--watch cannot be used with --dry-run".into()))
            }
        };
        emit(&text);
        if healthy {
            return Ok(Outcome {
                stdout: String::new(),
                notes: Vec::new(),
                exit_code: EXIT_OK,
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            s = signal::shutdown() => return Err(Error::Interrupted(s)),
        }
    }
}

/// One line to stderr, made visible; a failed write is dropped.
fn eprintln_visible(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", render::visible(line));
}
