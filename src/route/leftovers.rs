//! What `cleanup` deletes: pods this plugin left behind (a run killed with SIGKILL, or
//! `--keep-pods`), found by the managed-by label only.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use kube::Client;

use crate::error::{Error, KubeErrorExt, Result};
use crate::labels::managed_selector;
use crate::report::{CleanupAction, CleanupItem};

/// Where to look and what to do.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// `None` for all namespaces.
    pub namespace: Option<&'a str>,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
}

/// Finds our pods behind `client` and deletes those the scope allows; `cluster` names where
/// they are in the report (`supervisor`, or the workload cluster's name).
pub async fn clean(client: &Client, cluster: &str, scope: &Scope<'_>) -> Result<Vec<CleanupItem>> {
    let api: Api<Pod> = match scope.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let list = api
        .list(&ListParams::default().labels(&managed_selector()))
        .await
        .map_err(|e| Error::kube(format!("listing pods in {cluster}"), e))?;
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
            CleanupAction::Kept
        } else if scope.dry_run {
            CleanupAction::WouldDelete
        } else {
            let ns_api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            match ns_api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => CleanupAction::Deleted,
                Err(e) if e.is_not_found() => CleanupAction::Deleted,
                Err(e) => CleanupAction::Failed(Error::kube("deleting", e).to_string()),
            }
        };
        items.push(CleanupItem {
            cluster: cluster.to_string(),
            namespace,
            name,
            age_seconds: age,
            action,
        });
    }
    Ok(items)
}
