//! `kubectl etcdnet status`: the support article's Supervisor-side checks.
//!
//! find (the Supervisor walk) → workload (the API check) → analyse (findings) → report → render;
//! for one cluster, or for each of many (`--all`, `-A`: [`super::many`]).

use std::time::{Duration, Instant};

use super::many::{self, Selection, Which};
use super::Outcome;
use crate::connect::Connection;
use crate::error::Result;
use crate::render::{self, Format, Listed, Paint};
use crate::report::{ListReport, StatusReport};
use crate::supervisor::{ClusterFacts, Inventory};
use crate::{analyse, supervisor, workload};

#[derive(Debug, Clone)]
pub(crate) struct StatusOptions {
    pub selection: Selection,
    /// Bound of the workload API check.
    pub api_timeout: Duration,
    /// How the workload API's certificate is checked (`--workload-insecure-skip-tls-verify`).
    pub workload_tls: workload::Tls,
}

pub(crate) async fn run(
    conn: &Connection,
    opts: &StatusOptions,
    format: Format,
) -> Result<Outcome> {
    let started = Instant::now();
    if let Which::One(cluster) = &opts.selection.which {
        let (facts, inventory) = supervisor::walk(conn, cluster).await?;
        let report = report(conn, facts, &inventory, opts, started).await?;
        return Ok(Outcome {
            stdout: render::output(&report, format, Paint::detect())?,
            notes: Vec::new(),
            exit_code: report.result.exit_code,
        });
    }
    let found = many::find(conn, &opts.selection.which).await?;
    let items = many::each(
        found,
        opts.selection.max_concurrent,
        |facts, inventory| async move {
            report(conn, facts, &inventory, opts, Instant::now())
                .await
                .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()))
        },
    )
    .await?;
    let list = ListReport::new(items, started.elapsed());
    Ok(Outcome {
        stdout: render::output(
            &Listed {
                list: &list,
                detail: !opts.selection.summary,
            },
            format,
            Paint::detect(),
        )?,
        notes: Vec::new(),
        exit_code: list.result.exit_code,
    })
}

/// The workload API check on top of the Supervisor's facts, analysed; with the cluster's
/// network when the Supervisor serves an NSX group.
pub(crate) async fn report(
    conn: &Connection,
    facts: ClusterFacts,
    inventory: &Inventory,
    opts: &StatusOptions,
    started: Instant,
) -> Result<StatusReport> {
    let api = workload::check(
        &conn.client,
        &facts.namespace,
        &facts.cluster.name,
        facts.endpoint.as_ref(),
        opts.workload_tls,
        opts.api_timeout,
    )
    .await
    .api;
    let findings = analyse::status_findings(&facts, &api);
    let kubectl = facts.kubectl.clone();
    let network = inventory
        .network_of(&facts.cluster.name)
        .map(|o| analyse::assess(&o));
    Ok(
        StatusReport::new(facts, api, findings, started.elapsed().as_millis() as u64)
            .with_network(network, &kubectl),
    )
}
