//! The life of one probe pod: create → wait (a bounded watch) → read its log → delete.
//!
//! This module owns the guarantee "never a pod left behind": every pod is recorded in the
//! [`PodTracker`] the moment the API server accepts it, and removed from it only once deleted.
//! Whatever ends the run — success, an error, a timeout, Ctrl-C — the caller deletes what the
//! tracker still holds ([`PodTracker::delete_all`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams, PostParams, WatchEvent, WatchParams};
use serde::{Deserialize, Serialize};
use tracing::{debug, warn};

use crate::error::KubeErrorExt;

/// A pod we created: the API it lives behind (its namespace and cluster) and its name.
type Tracked = (Api<Pod>, String);

/// Every pod this run has created and not yet deleted.
#[derive(Clone, Default)]
pub struct PodTracker {
    pods: Arc<Mutex<Vec<Tracked>>>,
}

impl PodTracker {
    fn track(&self, api: &Api<Pod>, name: &str) {
        self.pods
            .lock()
            .unwrap()
            .push((api.clone(), name.to_string()));
    }

    fn untrack(&self, name: &str) {
        self.pods.lock().unwrap().retain(|(_, n)| n != name);
    }

    /// Names of the pods still alive (for "--keep-pods: remove them with ...").
    pub fn names(&self) -> Vec<String> {
        self.pods
            .lock()
            .unwrap()
            .iter()
            .map(|(_, n)| n.clone())
            .collect()
    }

    /// Deletes every tracked pod, all at once, each bounded. Returns what could not be deleted.
    pub async fn delete_all(&self, bound: Duration) -> Vec<String> {
        let pods: Vec<Tracked> = std::mem::take(&mut *self.pods.lock().unwrap());
        let deletions = pods.into_iter().map(|(api, name)| async move {
            let params = DeleteParams::default().grace_period(0);
            match tokio::time::timeout(bound, api.delete(&name, &params)).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) if e.is_not_found() => None,
                Ok(Err(e)) => Some(format!("{name}: {}", crate::error::chain(&e))),
                Err(_) => Some(format!("{name}: delete did not finish within {bound:?}")),
            }
        });
        futures::future::join_all(deletions)
            .await
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Why a probe pod gave no usable log. The messages are one line and say what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PodFailure {
    /// Pod Security admission (or another admission webhook) refused the pod.
    Rejected(String),
    /// RBAC: 403 on create, watch or log.
    Forbidden(String),
    ImagePull {
        image: String,
        reason: String,
        message: String,
    },
    /// Pending with a scheduling or kubelet reason.
    Pending(String),
    /// Did not finish within the bound.
    Timeout(String),
    /// Deleted by someone else while we waited.
    Gone,
    Api(String),
}

/// A pod that ran to an end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRun {
    pub succeeded: bool,
    pub exit_code: Option<i32>,
    pub log: String,
}

/// What a pod's status says about waiting any longer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    Finished {
        succeeded: bool,
        exit_code: Option<i32>,
    },
    ImagePull {
        reason: String,
        message: String,
    },
    /// The scheduler or kubelet says it cannot run here.
    Stuck(String),
    Waiting,
}

const IMAGE_PULL_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// Reads a pod's status. Pure, so every branch is unit-tested.
pub fn pod_state(pod: &Pod) -> PodState {
    let Some(status) = &pod.status else {
        return PodState::Waiting;
    };
    let exit_code = status
        .container_statuses
        .iter()
        .flatten()
        .find_map(|c| c.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code));
    match status.phase.as_deref() {
        Some("Succeeded") => {
            return PodState::Finished {
                succeeded: true,
                exit_code,
            }
        }
        Some("Failed") => {
            return PodState::Finished {
                succeeded: false,
                exit_code,
            }
        }
        _ => {}
    }
    for c in status.container_statuses.iter().flatten() {
        if let Some(w) = c.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_default();
            if IMAGE_PULL_REASONS.contains(&reason.as_str()) {
                return PodState::ImagePull {
                    reason,
                    message: w.message.clone().unwrap_or_default(),
                };
            }
        }
    }
    for cond in status.conditions.iter().flatten() {
        if cond.type_ == "PodScheduled" && cond.status == "False" {
            return PodState::Stuck(format!(
                "{}: {}",
                cond.reason.as_deref().unwrap_or("Unschedulable"),
                cond.message.as_deref().unwrap_or("")
            ));
        }
    }
    PodState::Waiting
}

fn api_failure(doing: &str, err: kube::Error) -> PodFailure {
    match (err.status_code(), err.status_message()) {
        (Some(403), Some(m)) if m.contains("violates PodSecurity") => {
            PodFailure::Rejected(m.to_string())
        }
        (Some(403), Some(m)) => PodFailure::Forbidden(format!("{doing}: {m}")),
        (Some(code), Some(m)) => PodFailure::Api(format!("{doing}: {m} ({code})")),
        _ => PodFailure::Api(format!("{doing}: {}", crate::error::chain(&err))),
    }
}

/// Runs one pod to its end within `bound`, then deletes it unless `keep`.
pub async fn run(
    api: &Api<Pod>,
    pod: &Pod,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
) -> Result<PodRun, PodFailure> {
    let started = Instant::now();
    // Tracked before the request goes out: if the run is cancelled while the create is in
    // flight, the API server may have made the pod without us seeing the answer, and the final
    // delete_all must still delete it (a 404 there is fine).
    let name = pod.metadata.name.clone().unwrap_or_default();
    tracker.track(api, &name);
    let created = match api.create(&PostParams::default(), pod).await {
        Ok(p) => p,
        Err(e) => {
            tracker.untrack(&name);
            return Err(api_failure("creating the probe pod", e));
        }
    };
    debug!(pod = %name, "created");

    let result = wait_and_read(api, &name, created, started, bound).await;

    if !keep {
        match api
            .delete(&name, &DeleteParams::default().grace_period(0))
            .await
        {
            Ok(_) => tracker.untrack(&name),
            Err(e) if e.is_not_found() => tracker.untrack(&name),
            // Left tracked: the caller's final delete_all retries it.
            Err(e) => warn!(pod = %name, "delete failed: {}", crate::error::chain(&e)),
        }
    }
    result
}

async fn wait_and_read(
    api: &Api<Pod>,
    name: &str,
    mut pod: Pod,
    started: Instant,
    bound: Duration,
) -> Result<PodRun, PodFailure> {
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    loop {
        match pod_state(&pod) {
            PodState::Finished {
                succeeded,
                exit_code,
            } => {
                let log = api
                    .logs(name, &LogParams::default())
                    .await
                    .map_err(|e| api_failure("reading the probe pod's log", e))?;
                return Ok(PodRun {
                    succeeded,
                    exit_code,
                    log,
                });
            }
            PodState::ImagePull { reason, message } => {
                return Err(PodFailure::ImagePull {
                    image,
                    reason,
                    message,
                })
            }
            PodState::Stuck(why) => return Err(PodFailure::Pending(why)),
            PodState::Waiting => {}
        }
        let left = bound.saturating_sub(started.elapsed());
        if left.is_zero() {
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".into());
            return Err(PodFailure::Timeout(format!(
                "still {phase} after {}s",
                bound.as_secs()
            )));
        }
        pod = match next_change(api, name, &pod, left).await? {
            Some(p) => p,
            None => continue, // the watch ended (timeout or closed): the loop re-checks the bound
        };
    }
}

/// Waits for the next version of the pod with a watch bounded by `left`; `Ok(None)` when the
/// watch ended without news (the caller loops and re-checks its own bound).
async fn next_change(
    api: &Api<Pod>,
    name: &str,
    pod: &Pod,
    left: Duration,
) -> Result<Option<Pod>, PodFailure> {
    let rv = pod.metadata.resource_version.clone().unwrap_or_default();
    // The API server closes the watch after timeoutSeconds (at least 1).
    let secs = left.as_secs().clamp(1, 290) as u32;
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(secs);
    let stream = api
        .watch(&params, &rv)
        .await
        .map_err(|e| api_failure("watching the probe pod", e))?;
    futures::pin_mut!(stream);
    let next = tokio::time::timeout(left, stream.try_next()).await;
    match next {
        Err(_) => Ok(None),
        Ok(Err(e)) => Err(api_failure("watching the probe pod", e)),
        Ok(Ok(None)) => Ok(None),
        Ok(Ok(Some(event))) => match event {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => Ok(Some(p)),
            WatchEvent::Deleted(_) => Err(PodFailure::Gone),
            WatchEvent::Bookmark(_) => Ok(None),
            // 410 Gone: our resourceVersion is too old; read the pod afresh.
            WatchEvent::Error(e) if e.code == 410 => api
                .get(name)
                .await
                .map(Some)
                .map_err(|e| api_failure("reading the probe pod", e)),
            WatchEvent::Error(e) => Err(PodFailure::Api(format!("watch: {}", e.message))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status})).unwrap()
    }

    #[test]
    fn states() {
        assert_eq!(
            pod_state(&pod(json!({"phase": "Pending"}))),
            PodState::Waiting
        );
        assert_eq!(
            pod_state(&pod(json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "probe", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0}}}]}))),
            PodState::Finished {
                succeeded: true,
                exit_code: Some(0)
            }
        );
        assert_eq!(
            pod_state(&pod(json!({"phase": "Failed"}))),
            PodState::Finished {
                succeeded: false,
                exit_code: None
            }
        );
        match pod_state(&pod(json!({"phase": "Pending", "containerStatuses": [
            {"name": "probe", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"x\""}}}]})))
        {
            PodState::ImagePull { reason, .. } => assert_eq!(reason, "ImagePullBackOff"),
            other => panic!("{other:?}"),
        }
        match pod_state(&pod(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 node(s) had untolerated taint"}]})))
        {
            PodState::Stuck(why) => assert!(why.starts_with("Unschedulable: 0/3 nodes")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn psa_rejection_is_told_apart_from_rbac() {
        let psa = kube::core::Status::failure(
            "pods \"x\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)",
            "Forbidden",
        )
        .with_code(403);
        assert!(matches!(
            api_failure("creating", kube::Error::Api(Box::new(psa))),
            PodFailure::Rejected(_)
        ));
        let rbac = kube::core::Status::failure(
            "pods is forbidden: User \"u\" cannot create resource \"pods\"",
            "Forbidden",
        )
        .with_code(403);
        assert!(matches!(
            api_failure("creating", kube::Error::Api(Box::new(rbac))),
            PodFailure::Forbidden(_)
        ));
    }
}
