//! The report of a many-cluster run (`--all`, `-A`): a `List` of the per-cluster reports, in
//! the shape of Kubernetes lists (`apiVersion`, `kind: DiagnoseReportList`, `items`), worst
//! first. A cluster that could not be looked at is an item of kind `ClusterError`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{DiagnoseReport, StatusReport, API_VERSION};
use crate::error::{Error, EXIT_OK};

/// A cluster of a many-cluster run that gave no report: what went wrong, as the single-cluster
/// run would have said it, and the exit code it would have had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailure {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// Always `ClusterError`.
    pub kind: String,
    /// The cluster's vSphere Namespace.
    pub namespace: String,
    /// The cluster's name.
    pub cluster: String,
    /// What went wrong, as the single-cluster run would have said it.
    pub message: String,
    /// The exit code the single-cluster run would have had.
    pub exit_code: i32,
    /// How long the cluster took.
    #[serde(default)]
    pub duration_ms: u64,
}

impl ClusterFailure {
    pub fn new(namespace: &str, cluster: &str, error: &Error) -> ClusterFailure {
        ClusterFailure {
            api_version: API_VERSION.into(),
            kind: "ClusterError".into(),
            namespace: namespace.to_string(),
            cluster: cluster.to_string(),
            message: error.to_string(),
            exit_code: error.exit_code(),
            duration_ms: 0,
        }
    }

    pub fn took(mut self, elapsed: Duration) -> ClusterFailure {
        self.duration_ms = elapsed.as_millis() as u64;
        self
    }
}

/// One cluster's item: its report, or why there is none. Untagged: the item's own `kind` says
/// which (`DiagnoseReport`/`StatusReport` or `ClusterError`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ListItem<T> {
    /// The cluster's report.
    Report(T),
    /// Why the cluster has no report.
    Failed(ClusterFailure),
}

/// The summary table's row of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    pub namespace: String,
    pub cluster: String,
    /// The verdict code (diagnose), `Healthy` or the first finding's code (status), or `Error`.
    pub verdict: String,
    /// One line: the verdict's summary, the finding, the error.
    pub detail: String,
    /// The route (diagnose), empty for status.
    pub route: String,
    /// "2/3" nodes reached (diagnose), machines/VMs (status).
    pub nodes: String,
    pub duration_ms: u64,
    pub exit_code: i32,
}

/// What the summary needs of a per-cluster report.
pub trait Summarized {
    /// The `kind` of a list of these.
    const LIST_KIND: &'static str;
    /// Whether rows have a verdict, route and nodes reached (diagnose), or a status and
    /// machines present of desired (status).
    const DIAGNOSIS: bool;
    fn row(&self) -> SummaryRow;
    fn exit_code(&self) -> i32;
}

impl Summarized for DiagnoseReport {
    const LIST_KIND: &'static str = "DiagnoseReportList";
    const DIAGNOSIS: bool = true;
    fn row(&self) -> SummaryRow {
        SummaryRow {
            namespace: self.header.namespace.clone(),
            cluster: self.header.cluster.name.clone(),
            verdict: self.verdict.code.to_string(),
            detail: self.verdict.summary.clone(),
            route: self.route.name.clone(),
            nodes: format!("{}/{}", self.result.nodes_reached, self.result.nodes_total),
            duration_ms: self.result.duration_ms,
            exit_code: self.result.exit_code,
        }
    }
    fn exit_code(&self) -> i32 {
        self.result.exit_code
    }
}

impl Summarized for StatusReport {
    const LIST_KIND: &'static str = "StatusReportList";
    const DIAGNOSIS: bool = false;
    fn row(&self) -> SummaryRow {
        let first = self.findings.first();
        SummaryRow {
            namespace: self.header.namespace.clone(),
            cluster: self.header.cluster.name.clone(),
            verdict: match first {
                None if self.result.complete => "Healthy".into(),
                None => "Incomplete".into(),
                Some(f) => f.code.to_string(),
            },
            detail: match first {
                None => format!("workload API {}", self.workload_api.state),
                Some(f) if self.findings.len() > 1 => {
                    format!("{} (+{} more)", f.message, self.findings.len() - 1)
                }
                Some(f) => f.message.clone(),
            },
            route: String::new(),
            nodes: format!(
                "{}/{}",
                self.header.control_plane.machines,
                self.header
                    .control_plane
                    .desired
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            duration_ms: self.result.duration_ms,
            exit_code: self.result.exit_code,
        }
    }
    fn exit_code(&self) -> i32 {
        self.result.exit_code
    }
}

impl<T: Summarized> ListItem<T> {
    pub(crate) fn row(&self) -> SummaryRow {
        match self {
            ListItem::Report(r) => r.row(),
            ListItem::Failed(f) => SummaryRow {
                namespace: f.namespace.clone(),
                cluster: f.cluster.clone(),
                verdict: "Error".into(),
                detail: f.message.clone(),
                route: String::new(),
                nodes: String::new(),
                duration_ms: f.duration_ms,
                exit_code: f.exit_code,
            },
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            ListItem::Report(r) => r.exit_code(),
            ListItem::Failed(f) => f.exit_code,
        }
    }
}

/// How a many-cluster run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// The worst of the clusters' exit codes (0 with no cluster at all).
    pub exit_code: i32,
    /// Clusters looked at.
    pub clusters: usize,
    /// Clusters whose own exit code is 0.
    pub healthy: usize,
    /// Clusters that gave no report (`ClusterError` items).
    pub failed: usize,
    /// How long the run took.
    pub duration_ms: u64,
}

/// A many-cluster run's report: the per-cluster reports, worst first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListReport<T> {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// `StatusReportList` or `DiagnoseReportList`.
    pub kind: String,
    /// Worst first: by exit code (3 could not complete, 2 configuration, 1 problem found, 0),
    /// then namespace and cluster.
    pub items: Vec<ListItem<T>>,
    /// How the run ended.
    pub result: ListResult,
}

impl<T: Summarized> ListReport<T> {
    pub fn new(mut items: Vec<ListItem<T>>, duration: Duration) -> ListReport<T> {
        items.sort_by_cached_key(|i| {
            let r = i.row();
            (std::cmp::Reverse(r.exit_code), r.namespace, r.cluster)
        });
        let result = ListResult {
            exit_code: items.iter().map(|i| i.exit_code()).max().unwrap_or(EXIT_OK),
            clusters: items.len(),
            healthy: items.iter().filter(|i| i.exit_code() == EXIT_OK).count(),
            failed: items
                .iter()
                .filter(|i| matches!(i, ListItem::Failed(_)))
                .count(),
            duration_ms: duration.as_millis() as u64,
        };
        ListReport {
            api_version: API_VERSION.into(),
            kind: T::LIST_KIND.into(),
            items,
            result,
        }
    }
}
