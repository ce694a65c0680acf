//! What `cleanup` deletes: pods this plugin left behind (a run killed with SIGKILL, or
//! `--keep-pods`), found by the managed-by label only.
//!
//! By default only pods no run can still be using: finished ones (phase `Succeeded` or
//! `Failed`) and those past their deadline. Every pod we create carries
//! `activeDeadlineSeconds` = the run's `--timeout`, and the run that created it ends by then,
//! so a pod older than that is a leftover; a younger one that has not finished may be another
//! admin's run in progress (the label does not say whose run it is), and deleting it would
//! turn that run's nodes into "pod deleted" failures. `--all` deletes those too.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, ListParams};
use kube::Client;

use crate::error::{Error, KubeErrorExt, Result};
use crate::labels::managed_selector;
use crate::report::{CleanupAction, CleanupItem};

/// Where to look and what to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// `None` for all namespaces.
    pub namespace: Option<&'a str>,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
    /// `--all`: also pods that a run may still be using.
    pub all: bool,
}

/// How long past its deadline a pod is still taken as in use. The run that created a pod ends
/// within the deadline plus its final deletes (15 s); the rest covers a clock difference
/// between this machine and the API server (the timestamps are the server's, `now` is ours).
pub(crate) const DEADLINE_GRACE: Duration = Duration::from_secs(60);

/// Whether a run may still be using `pod` at `now`: it has not finished and is not past its
/// deadline (counted from `startTime`, when the kubelet starts its clock, else from its
/// creation) plus [`DEADLINE_GRACE`]. A pod without a deadline or a time to count it from is
/// not one we made as we make them: taken as in use, so only `--all` deletes it.
pub(crate) fn in_use(pod: &Pod, now: Timestamp) -> bool {
    let status = pod.status.as_ref();
    if matches!(
        status.and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deadline = pod
        .spec
        .as_ref()
        .and_then(|s| s.active_deadline_seconds)
        .filter(|d| *d >= 0);
    let since = status
        .and_then(|s| s.start_time.as_ref())
        .or(pod.metadata.creation_timestamp.as_ref());
    match (deadline, since) {
        (Some(deadline), Some(since)) => {
            let limit = SignedDuration::from_secs(deadline)
                .saturating_add(SignedDuration::from_secs(DEADLINE_GRACE.as_secs() as i64));
            now.duration_since(since.0) <= limit
        }
        _ => true,
    }
}

/// Finds our pods behind `client` and deletes those the scope allows; `cluster` names where
/// they are in the report (`supervisor`, or the workload cluster's name).
pub(crate) async fn clean(
    client: &Client,
    cluster: &str,
    scope: &Scope<'_>,
) -> Result<Vec<CleanupItem>> {
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
        } else if !scope.all && in_use(&pod, now) {
            CleanupAction::KeptRunning
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, deadline: Option<i64>, created: &str, started: Option<&str>) -> Pod {
        let mut v = json!({
            "metadata": {"name": "p", "creationTimestamp": created},
            "spec": {"containers": [{"name": "probe"}]},
            "status": {"phase": phase},
        });
        if let Some(d) = deadline {
            v["spec"]["activeDeadlineSeconds"] = json!(d);
        }
        if let Some(s) = started {
            v["status"]["startTime"] = json!(s);
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn finished_or_past_the_deadline_is_not_in_use() {
        let now: Timestamp = "2026-01-01T12:00:00Z".parse().unwrap();
        let young = "2026-01-01T11:59:00Z";
        let old = "2026-01-01T11:00:00Z";
        // Finished: whatever the time.
        assert!(!in_use(&pod("Succeeded", Some(120), young, None), now));
        assert!(!in_use(&pod("Failed", Some(120), young, None), now));
        // Running within its deadline: another run's, perhaps.
        assert!(in_use(&pod("Running", Some(120), young, Some(young)), now));
        assert!(in_use(&pod("Pending", Some(120), young, None), now));
        // Past its deadline plus the grace.
        assert!(!in_use(&pod("Running", Some(120), old, Some(old)), now));
        assert!(!in_use(&pod("Pending", Some(120), old, None), now));
        // The grace: 120 s deadline + 60 s, counted from the start.
        let at = |secs: i64| now - SignedDuration::from_secs(secs);
        let started = |secs| pod("Running", Some(120), old, Some(&at(secs).to_string()));
        assert!(in_use(&started(170), now));
        assert!(!in_use(&started(190), now));
        // No deadline: not a pod we made as we make them; only --all deletes it.
        assert!(in_use(&pod("Running", None, old, Some(old)), now));
    }
}
