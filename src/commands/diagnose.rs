//! `kubectl etcdnet diagnose`: the whole pipeline for one cluster.
//!
//! find (Supervisor walk) → workload (API check) → plan (route, targets, bounds) → reach (the
//! route's session on every node, bounded fan-out) → analyse (matrices, verdict) → report →
//! render. Nothing here knows a particular route: they all come through [`crate::route`].
//!
//! Every pod created on the way is tracked by a [`PodTracker`]; the run may be cancelled at any
//! await (Ctrl-C, SIGTERM, SIGHUP) and [`run`] still deletes every pod before it returns.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::Outcome;
use crate::analyse;
use crate::connect::Connection;
use crate::error::{Error, Result, EXIT_OK};
use crate::plan::{self, DiagnoseOptions, DiagnosePlan};
use crate::progress::Progress;
use crate::render::{self, Format, Paint};
use crate::report::DiagnoseReport;
use crate::route::{self, Env, PodTracker};
use crate::{signal, supervisor, workload};

/// What one diagnosis produced.
pub enum Diagnosed {
    Report(Box<DiagnoseReport>),
    /// `--dry-run`: the pods it would have created.
    DryRun(Vec<Pod>),
}

/// Runs the diagnosis until it ends or a signal comes, then deletes what is left (unless
/// `--keep-pods`) and renders the result.
pub async fn run(conn: &Connection, opts: &DiagnoseOptions, format: Format) -> Result<Outcome> {
    let tracker = PodTracker::default();
    let progress = Progress::for_stderr();
    let result = tokio::select! {
        r = diagnose(conn, opts, &tracker, &progress) => r,
        _ = signal::shutdown() => Err(Error::Interrupted),
    };
    progress.finish();
    // Every way out passes here: delete what is left, unless asked to keep it.
    let mut notes = Vec::new();
    if opts.keep_pods {
        let kept = tracker.names();
        if !kept.is_empty() {
            notes.push(format!(
                "kept {} probe pod(s) in namespace {} of the workload cluster: {}; remove them with: kubectl etcdnet cleanup {} -n {}",
                kept.len(), opts.pod_namespace, kept.join(", "), opts.cluster, conn.namespace
            ));
        }
    } else {
        for failed in tracker.delete_all(Duration::from_secs(15)).await {
            notes.push(format!(
                "warning: could not delete probe pod {failed}; run: kubectl etcdnet cleanup {} -n {}",
                opts.cluster, conn.namespace
            ));
        }
    }
    match result? {
        Diagnosed::DryRun(pods) => {
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
        Diagnosed::Report(report) => Ok(Outcome {
            stdout: render::diagnose(&report, format, Paint::detect())?,
            notes,
            exit_code: report.result.exit_code,
        }),
    }
}

/// One diagnosis; every pod it creates goes into `tracker`.
pub async fn diagnose(
    conn: &Connection,
    opts: &DiagnoseOptions,
    tracker: &PodTracker,
    progress: &Progress,
) -> Result<Diagnosed> {
    let started = Instant::now();
    progress.stage(format!(
        "reading cluster {} in namespace {} (context {})",
        opts.cluster, conn.namespace, conn.context
    ));
    let (facts, _inventory) = supervisor::walk(conn, &opts.cluster).await?;

    // The workload API decides `auto`, and is part of every report.
    progress.stage("checking the workload cluster's API");
    let workload = workload::check(
        &conn.client,
        &conn.namespace,
        &opts.cluster,
        facts.endpoint.as_ref(),
        opts.api_timeout,
    )
    .await;
    let plan = plan::plan(
        opts,
        &facts,
        &workload.api,
        plan::Context {
            namespace: &conn.namespace,
            run_id: route::run_id(),
        },
    );
    if plan.dry_run {
        return Ok(Diagnosed::DryRun(would_create(&plan)));
    }

    let env = Env {
        supervisor: &conn.client,
        workload: &workload,
    };
    let session = plan.route.open(&plan.settings, env, &plan.targets).await?;
    let run = route::Run {
        tracker,
        bound: plan.timeout.saturating_sub(started.elapsed()),
        keep: plan.keep_pods,
    };
    let reports = route::probe_all(
        session.as_ref(),
        &plan.targets,
        &run,
        plan.parallel,
        progress,
    )
    .await;
    // The session (and any key file it holds) ends here, before the analysis.
    drop(session);

    let diagnosis = analyse::verdict::diagnose(&facts, &reports);
    let findings = analyse::status_findings(&facts, &workload.api);
    let report = DiagnoseReport::new(
        facts,
        workload.api,
        findings,
        plan.route_info,
        reports,
        diagnosis,
        started.elapsed().as_millis() as u64,
    );
    Ok(Diagnosed::Report(Box::new(report)))
}

/// `--dry-run`: what the chosen route would create to reach the nodes it could reach.
fn would_create(plan: &DiagnosePlan) -> Vec<Pod> {
    plan.route.would_create(&plan.settings, &plan.targets)
}
