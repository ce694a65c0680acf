//! `kubectl etcdnet cleanup`: deletes pods this plugin left behind (a run killed with SIGKILL, or
//! `--keep-pods`), found by the managed-by label, in the Supervisor and, when a cluster is named,
//! inside that workload cluster (through its kubeconfig secret).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use kube::Client;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::labels::managed_selector;
use crate::report::API_VERSION;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CleanupItem {
    /// `supervisor`, or the workload cluster's name.
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub age_seconds: Option<u64>,
    /// `deleted`, `would delete` (dry run), `kept` (younger than --older-than), or the error.
    pub action: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CleanupReport {
    pub api_version: String,
    pub kind: String,
    pub items: Vec<CleanupItem>,
    /// Where we could not look (e.g. the workload API is down), one line each.
    pub skipped: Vec<String>,
}

pub struct CleanupScope<'a> {
    /// `None` for all namespaces.
    pub namespace: Option<&'a str>,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
}

/// Cleans one cluster's pods; `label` names the cluster in the report.
pub async fn clean(
    client: &Client,
    label: &str,
    scope: &CleanupScope<'_>,
) -> Result<Vec<CleanupItem>> {
    let api: Api<Pod> = match scope.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let list = api
        .list(&ListParams::default().labels(&managed_selector()))
        .await
        .map_err(|e| Error::from_kube(format!("listing pods in {label}"), e))?;
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut items = Vec::new();
    for pod in list.items {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let age = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| now.duration_since(t.0).as_secs().max(0) as u64);
        let old_enough = match (scope.older_than, age) {
            (Some(min), Some(age)) => age >= min.as_secs(),
            _ => true,
        };
        let action = if !old_enough {
            "kept".to_string()
        } else if scope.dry_run {
            "would delete".to_string()
        } else {
            let ns_api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            match ns_api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => "deleted".to_string(),
                Err(kube::Error::Api(s)) if s.code == 404 => "deleted".to_string(),
                Err(e) => format!("error: {}", Error::from_kube("deleting", e)),
            }
        };
        items.push(CleanupItem {
            cluster: label.to_string(),
            namespace,
            name,
            age_seconds: age,
            action,
        });
    }
    Ok(items)
}

impl CleanupReport {
    pub fn new(items: Vec<CleanupItem>, skipped: Vec<String>) -> Self {
        CleanupReport {
            api_version: API_VERSION.into(),
            kind: "CleanupReport".into(),
            items,
            skipped,
        }
    }
}

/// kubectl's compact age: 45s, 12m, 5h, 3d.
pub fn human_age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

pub fn render_table(report: &CleanupReport) -> String {
    let mut out = String::new();
    if report.items.is_empty() {
        out.push_str("No kubectl-etcdnet pods found.\n");
    } else {
        let rows: Vec<Vec<String>> = report
            .items
            .iter()
            .map(|i| {
                vec![
                    i.cluster.clone(),
                    i.namespace.clone(),
                    i.name.clone(),
                    i.age_seconds
                        .map(human_age)
                        .unwrap_or_else(|| "<unknown>".into()),
                    i.action.clone(),
                ]
            })
            .collect();
        out.push_str(&crate::render::table(
            &["CLUSTER", "NAMESPACE", "POD", "AGE", "ACTION"],
            &rows,
        ));
    }
    for s in &report.skipped {
        out.push_str(&format!("skipped: {s}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_like_kubectl() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(119), "119s");
        assert_eq!(human_age(600), "10m");
        assert_eq!(human_age(3 * 3600), "3h");
        assert_eq!(human_age(5 * 86400), "5d");
    }
}
