//! Waiting for a created pod to end: what its status says, and the bounded watch that waits
//! for the next one.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};
use tracing::debug;

use super::failure::{api_failure, resumable, PodFailure};
use super::run::{read_log, PodRun, LOG_READ_FLOOR};
use crate::error::KubeErrorExt;

/// Least time between two watches of one pod, so that a server that ends every watch at once
/// (or a connection that keeps failing) is not hammered.
const REWATCH_PACE: Duration = Duration::from_secs(1);

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

/// Waits for the pod to end within `bound` (from `started`), then reads its log.
pub(super) async fn wait_and_read(
    api: &Api<Pod>,
    name: &str,
    mut pod: Pod,
    started: Instant,
    bound: Duration,
    log_limit: u64,
) -> Result<PodRun, PodFailure> {
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    // Why the latest watch ended, when it broke off: said if the bound runs out right after.
    let mut interrupted: Option<String> = None;
    loop {
        match pod_state(&pod) {
            PodState::Finished {
                succeeded,
                exit_code,
            } => {
                let left = bound.saturating_sub(started.elapsed()).max(LOG_READ_FLOOR);
                let log = match tokio::time::timeout(left, read_log(api, name, log_limit)).await {
                    Ok(log) => log?,
                    Err(_) => {
                        return Err(PodFailure::Timeout(format!(
                            "the pod finished, but its log did not arrive within {}s",
                            left.as_secs()
                        )))
                    }
                };
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
            let why = interrupted
                .map(|e| format!(" (the last watch broke off: {e})"))
                .unwrap_or_default();
            return Err(PodFailure::Timeout(format!(
                "still {phase} after {}s{why}",
                bound.as_secs()
            )));
        }
        let attempt = Instant::now();
        match next_change(api, name, &pod, left).await? {
            Next::Changed(p) => {
                pod = *p;
                interrupted = None;
                continue;
            }
            Next::Quiet => interrupted = None,
            Next::Interrupted(e) => {
                debug!(pod = %name, "watch broke off, resuming: {e}");
                interrupted = Some(e);
            }
        }
        // No news: watch again from the last version seen (the loop re-checks the bound), at
        // most once a REWATCH_PACE.
        let pause = REWATCH_PACE
            .saturating_sub(attempt.elapsed())
            .min(bound.saturating_sub(started.elapsed()));
        tokio::time::sleep(pause).await;
    }
}

/// What one watch of the pod gave.
enum Next {
    /// A new version of the pod (boxed: a Pod is large, the other variants small).
    Changed(Box<Pod>),
    /// The watch ended without news (the server's timeoutSeconds, a bookmark, our bound).
    Quiet,
    /// The watch broke off (the client's read timeout on a quiet watch, a dropped connection,
    /// an overloaded server): resumed from the same resourceVersion.
    Interrupted(String),
}

/// Waits for the next version of the pod with a watch bounded by `left`.
async fn next_change(
    api: &Api<Pod>,
    name: &str,
    pod: &Pod,
    left: Duration,
) -> Result<Next, PodFailure> {
    let doing = "watching the probe pod";
    let broke = |e: kube::Error| {
        if resumable(&e) {
            Ok(Next::Interrupted(crate::error::chain(&e)))
        } else {
            Err(api_failure(doing, e))
        }
    };
    let rv = pod.metadata.resource_version.clone().unwrap_or_default();
    // The API server closes the watch after timeoutSeconds (at least 1).
    let secs = left.as_secs().clamp(1, 290) as u32;
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(secs);
    let opened = tokio::time::timeout(left, api.watch(&params, &rv)).await;
    let stream = match opened {
        Err(_) => return Ok(Next::Quiet),
        Ok(Ok(stream)) => stream,
        // 410 Gone as the answer itself (some servers): our resourceVersion is too old.
        Ok(Err(e)) if e.status_code() == Some(410) => return reread(api, name).await,
        Ok(Err(e)) => return broke(e),
    };
    futures::pin_mut!(stream);
    let next = tokio::time::timeout(left, stream.try_next()).await;
    match next {
        Err(_) | Ok(Ok(None)) => Ok(Next::Quiet),
        Ok(Err(e)) => broke(e),
        Ok(Ok(Some(event))) => match event {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => Ok(Next::Changed(Box::new(p))),
            WatchEvent::Deleted(_) => Err(PodFailure::Gone),
            WatchEvent::Bookmark(_) => Ok(Next::Quiet),
            // 410 Gone: our resourceVersion is too old; read the pod afresh.
            WatchEvent::Error(e) if e.code == 410 => reread(api, name).await,
            WatchEvent::Error(e) if e.code == 429 || e.code >= 500 => Ok(Next::Interrupted(
                format!("watch: {} ({})", e.message, e.code),
            )),
            WatchEvent::Error(e) => Err(PodFailure::Api(format!("watch: {}", e.message))),
        },
    }
}

/// The pod afresh, when the watch cannot go on from the version we hold.
async fn reread(api: &Api<Pod>, name: &str) -> Result<Next, PodFailure> {
    match api.get(name).await {
        Ok(p) => Ok(Next::Changed(Box::new(p))),
        Err(e) if e.is_not_found() => Err(PodFailure::Gone),
        Err(e) if resumable(&e) => Ok(Next::Interrupted(crate::error::chain(&e))),
        Err(e) => Err(api_failure("reading the probe pod", e)),
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
}
