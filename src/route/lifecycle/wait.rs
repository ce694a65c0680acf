//! Waiting for a created pod to end: what its status says, and kube-runtime's watcher of that
//! one pod (a list, then watches resumed from the last resourceVersion, a relist after 410
//! Gone), within the run's bound.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher::{self, watcher, Event, ListSemantic};
use tracing::debug;

use super::failure::{api_failure, resumable, PodFailure};
use super::log::{read_log, PodRun, LOG_READ_FLOOR};
use crate::error::KubeErrorExt;

/// Least time between a failed watch (or list) of one pod and the next, so that a connection
/// that keeps failing, or a server that keeps answering 410, is not hammered.
const REWATCH_PACE: Duration = Duration::from_secs(1);

/// What a pod's status says about waiting any longer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodState {
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
pub(crate) fn pod_state(pod: &Pod) -> PodState {
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
    // kube-scheduler marks a pod no node can take at its first attempt, seconds after the
    // create: `PodScheduled` False, reason `Unschedulable`, with the same message as its
    // `FailedScheduling` event (kubernetes pkg/scheduler/schedule_one.go,
    // `handleSchedulingFailure`). The condition is read, not the event: it is on the pod we
    // watch already, and events would need another permission (`list events`).
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

/// How long a pod may stay unplaced ([`unplaced`]) after its create before the wait gives up on
/// it. A scheduler binds a pod it can place within its first attempts, well under a second on an
/// idle control plane, and one it cannot place is marked at once ([`pod_state`]'s
/// `Unschedulable`); a pod that none of them has touched after this long is one no scheduler
/// takes. 8 s leaves a busy scheduler's queue room and says it well within the 10 s an admin
/// is promised for a jumpbox that cannot start.
pub(crate) const NO_HOST_AFTER: Duration = Duration::from_secs(8);

/// Whether no scheduler has taken the pod at all: Pending (or no phase yet), no node, and no
/// `PodScheduled` condition, neither the True that binding writes with the node (kubernetes
/// `pkg/registry/core/pod/storage/storage.go`, `setPodHostAndAnnotations`) nor the False of a
/// failed attempt. What a Supervisor does with a vSphere Pod when vSphere Pods are off (vSphere
/// 9.1's per-Supervisor setting, or a VDS Supervisor) is not documented: this is the least it
/// may do, the pod left as created. A pod made with its node named (the pod route's) is never
/// unplaced.
pub(crate) fn unplaced(pod: &Pod) -> bool {
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let status = pod.status.as_ref();
    let pending = status
        .and_then(|s| s.phase.as_deref())
        .is_none_or(|p| p == "Pending");
    let scheduled = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "PodScheduled"));
    node.is_none_or(str::is_empty) && pending && !scheduled
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
    let image = first_image(&pod);
    // The watcher of this one pod; it sends nothing until first polled (a pod that has ended
    // by its create's answer is never watched).
    let open = || Box::pin(watcher(api.clone(), watch_config(name, bound, started)));
    let mut changes = open();
    // Whether the watcher's latest (re)list held the pod: one without it means it was deleted.
    let mut listed = false;
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
        // The next event that says something about the pod, or the end of the bound; a pod no
        // scheduler has taken is given up on NO_HOST_AFTER its create, not at the bound.
        loop {
            let mut left = bound.saturating_sub(started.elapsed());
            if unplaced(&pod) {
                let due = NO_HOST_AFTER.saturating_sub(started.elapsed());
                if due.is_zero() && !left.is_zero() {
                    return Err(PodFailure::NoHost(NO_HOST_AFTER));
                }
                left = left.min(due);
            }
            if bound.saturating_sub(started.elapsed()).is_zero() {
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
            let event = match tokio::time::timeout(left, changes.next()).await {
                // The bound ran out while the watch was quiet; the loop says so.
                Err(_) => {
                    interrupted = None;
                    continue;
                }
                // The watcher never ends; kept total all the same.
                Ok(None) => {
                    return Err(PodFailure::Api(
                        "watching the probe pod: the watch ended".into(),
                    ))
                }
                Ok(Some(event)) => event,
            };
            match event {
                Ok(Event::Init) => listed = false,
                Ok(Event::InitApply(p) | Event::Apply(p)) => {
                    listed = true;
                    pod = p;
                    interrupted = None;
                    break;
                }
                Ok(Event::InitDone) if !listed => return Err(PodFailure::Gone),
                Ok(Event::InitDone) => {}
                Ok(Event::Delete(_)) => return Err(PodFailure::Gone),
                Err(e) => {
                    match broke_off(e)? {
                        BrokeOff::Resume(why) => {
                            debug!(pod = %name, "watch broke off, resuming: {why}");
                            interrupted = Some(why);
                        }
                        BrokeOff::Relist => {
                            debug!(pod = %name, "watch refused our resourceVersion (410), listing afresh");
                            changes = open();
                        }
                    }
                    // The watcher goes on at its next poll: at most once a REWATCH_PACE.
                    let pause = REWATCH_PACE
                        .saturating_sub(attempt.elapsed())
                        .min(bound.saturating_sub(started.elapsed()));
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

/// The watcher of the pod `name`: the pod alone (by name), each list a consistent read (a
/// cached one may not hold the pod just created yet, which would read as deleted), and each
/// list and watch bounded by what is left of `bound` (the API server closes a watch after
/// its `timeoutSeconds`, at least 1, at most 290).
fn watch_config(name: &str, bound: Duration, started: Instant) -> watcher::Config {
    let left = bound.saturating_sub(started.elapsed());
    watcher::Config::default()
        .fields(&format!("metadata.name={name}"))
        .list_semantic(ListSemantic::MostRecent)
        .timeout(left.as_secs().clamp(1, 290) as u32)
}

/// What to do after the watcher reported an error; the failure, when it ends the wait.
enum BrokeOff {
    /// Go on: the watcher resumes from the last resourceVersion it saw (or lists afresh).
    /// Holds why the watch broke off (the client's read timeout on a quiet watch, a dropped
    /// connection, an overloaded server).
    Resume(String),
    /// Start a new watcher, which lists the pod afresh: the server answered 410 Gone (our
    /// resourceVersion is too old). Done here for every form: a watch event (which the watcher
    /// would also mend), and the answer to the watch request itself (some servers; kube reads
    /// it as the stream's error), which the watcher would ask again with the same version.
    Relist,
}

/// Reads a watcher error as the resumption it allows, or the failure that ends the wait.
fn broke_off(err: watcher::Error) -> Result<BrokeOff, PodFailure> {
    let doing = "watching the probe pod";
    match err {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => {
            if e.status_code() == Some(410) {
                Ok(BrokeOff::Relist)
            } else if resumable(&e) {
                Ok(BrokeOff::Resume(crate::error::chain(&e)))
            } else {
                Err(api_failure(doing, e))
            }
        }
        watcher::Error::WatchError(s) if s.code == 410 => Ok(BrokeOff::Relist),
        watcher::Error::WatchError(s) if s.code == 429 || s.code >= 500 => Ok(BrokeOff::Resume(
            format!("watch: {} ({})", s.message, s.code),
        )),
        watcher::Error::WatchError(s) => Err(PodFailure::Api(format!("watch: {}", s.message))),
        e @ watcher::Error::NoResourceVersion => Err(PodFailure::Api(format!("{doing}: {e}"))),
    }
}

/// The image of a pod's (first and only) container: what an image-pull failure names.
pub(crate) fn first_image(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
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

    /// Unplaced: as created, no node and no scheduling condition; not once bound (PodScheduled
    /// True), refused by the scheduler (False), made with its node, or running.
    #[test]
    fn unplaced_is_a_pod_no_scheduler_touched() {
        let with = |v: serde_json::Value| -> Pod { serde_json::from_value(v).unwrap() };
        let created = json!({"metadata": {"name": "p"}, "spec": {"containers": []},
                             "status": {"phase": "Pending", "qosClass": "Burstable"}});
        assert!(unplaced(&with(created.clone())));
        assert!(unplaced(&with(json!({"metadata": {"name": "p"}}))));
        let mut bound = created.clone();
        bound["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "True"}]);
        assert!(!unplaced(&with(bound)));
        let mut refused = created.clone();
        refused["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False"}]);
        assert!(!unplaced(&with(refused)));
        let mut pinned = created.clone();
        pinned["spec"]["nodeName"] = json!("cp1");
        assert!(!unplaced(&with(pinned)));
        let mut running = created;
        running["status"]["phase"] = json!("Running");
        assert!(!unplaced(&with(running)));
    }
}
