//! `kubectl etcdnet status`: the support article's Supervisor-side checks.
//!
//! find (the Supervisor walk) → workload (the API check) → analyse (findings) → report → render.

use std::time::Duration;

use super::Outcome;
use crate::connect::Connection;
use crate::error::Result;
use crate::render::{self, Format, Paint};
use crate::report::StatusReport;
use crate::{analyse, supervisor, workload};

#[derive(Debug, Clone)]
pub struct StatusOptions {
    pub cluster: String,
    /// Bound of the workload API check.
    pub api_timeout: Duration,
}

pub async fn run(conn: &Connection, opts: &StatusOptions, format: Format) -> Result<Outcome> {
    let report = report(conn, opts).await?;
    Ok(Outcome {
        stdout: render::status(&report, format, Paint::detect())?,
        notes: Vec::new(),
        exit_code: report.result.exit_code,
    })
}

/// The Supervisor walk plus the workload API check, analysed.
pub async fn report(conn: &Connection, opts: &StatusOptions) -> Result<StatusReport> {
    let (facts, _inventory) = supervisor::walk(conn, &opts.cluster).await?;
    let api = workload::check(
        &conn.client,
        &conn.namespace,
        &opts.cluster,
        facts.endpoint.as_ref(),
        opts.api_timeout,
    )
    .await
    .api;
    let findings = analyse::status_findings(&facts, &api);
    Ok(StatusReport::new(facts, api, findings))
}
