//! `kubectl etcdnet cleanup`: deletes the pods this plugin left behind, in the Supervisor and,
//! when a cluster is named, inside that workload cluster (through its kubeconfig secret).

use std::time::Duration;

use super::Outcome;
use crate::connect::Connection;
use crate::error::Result;
use crate::render::{self, Format, Paint};
use crate::report::CleanupReport;
use crate::route::leftovers::{self, Scope};
use crate::{supervisor, workload};

#[derive(Debug, Clone)]
pub(crate) struct CleanupOptions {
    /// Also clean up inside this workload cluster.
    pub cluster: Option<String>,
    pub all_namespaces: bool,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
    /// `--include-running`: also pods that may belong to a run in progress (see `leftovers`).
    pub all: bool,
    /// Bound of each request to the workload cluster.
    pub request_timeout: Duration,
    /// How the workload API's certificate is checked (`--workload-insecure-skip-tls-verify`).
    pub workload_tls: workload::Tls,
}

pub(crate) async fn run(
    conn: &Connection,
    opts: &CleanupOptions,
    format: Format,
) -> Result<Outcome> {
    let scope = Scope {
        namespace: (!opts.all_namespaces).then_some(conn.namespace.as_str()),
        older_than: opts.older_than,
        dry_run: opts.dry_run,
        all: opts.all,
    };
    let mut items = leftovers::clean(&conn.client, "supervisor", &scope).await?;
    let mut skipped = Vec::new();
    if let Some(cluster) = &opts.cluster {
        // Inside the workload cluster our pods may be in any namespace.
        let workload_scope = Scope {
            namespace: None,
            ..scope
        };
        let found = async {
            // The kubeconfig secret is trusted only for the Cluster's own endpoint.
            let (facts, _) = supervisor::walk(conn, cluster).await?;
            let client = workload::client(
                &conn.client,
                &conn.namespace,
                cluster,
                facts.endpoint.as_ref(),
                opts.workload_tls,
                opts.request_timeout,
            )
            .await?;
            leftovers::clean(&client, cluster, &workload_scope).await
        };
        match found.await {
            Ok(more) => items.extend(more),
            Err(e) => skipped.push(format!("workload cluster {cluster:?}: {e}")),
        }
    }
    let report = CleanupReport::new(items, skipped);
    Ok(Outcome {
        stdout: render::output(&report, format, Paint::detect())?,
        notes: Vec::new(),
        exit_code: report.exit_code(),
    })
}
