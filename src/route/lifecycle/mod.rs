//! The life of one probe pod: create → wait (a bounded watch) → read its log → delete.
//!
//! This module owns the guarantee "never a pod left behind": every pod is recorded in the
//! [`PodTracker`] before its create goes out, and removed from it only once deleted or once the
//! API server definitely refused to create it. Whatever ends the run — success, an error, a
//! timeout, Ctrl-C — the caller deletes what the tracker still holds
//! ([`PodTracker::delete_all`]). A create still in flight when the run ends (Ctrl-C) may be
//! stored after that delete has found nothing: for those, one delete-collection by the run's
//! label follows, and once more after a short wait ([`SWEEP_AGAIN_AFTER`]).
//!
//! Waiting is bounded by the run's `--timeout` only: a watch that breaks or stays quiet past the
//! client's read timeout (a slow image pull, a vSphere Pod that takes 30 s to start) is resumed
//! from the last resourceVersion, never reported as a failure. Each request (create, watch, log,
//! delete) is also bounded by the client (`bounds`): a create, log or delete within the client's
//! bound, headers and body; a watch within its `timeoutSeconds` plus that bound, each event line
//! within `bounds::MAX_LINE_BYTES` (a longer one ends the wait with an error, never resumed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{AsyncReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, WatchEvent, WatchParams};
use serde::{Deserialize, Serialize};
use tracing::{debug, warn};

use crate::error::KubeErrorExt;
use crate::labels::{managed_selector, RUN_ID};
use crate::probe::{ReachError, ReachErrorKind};

/// The most a probe pod's log may hold; more is refused unread (a per-node `BadOutput`). The
/// probe prints one JSON document whose etcd log sample is capped at `--log-bytes` (256 KiB of
/// raw text, whatever `--log-lines` asks), which JSON escaping can grow at most six-fold (a
/// control byte becomes `\u00XX`), plus a few KiB of paths, certificates and errors. 4 MiB is
/// well above that, and bounds what a broken or hostile node makes the plugin hold (times the
/// pods read at once). The tests check it stays above the probe's maximum and within what the
/// parser reads. The jumpbox's one pod prints a section per VM, each holding at most this much
/// of its node's output (its script cuts more): its limit is scaled with the number of VMs
/// (`jumpbox::log_limit`, through [`run_with_log_limit`]).
pub const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// Time the log read gets even when the run's bound is (nearly) used up: the pod has finished,
/// its log is all there is left to fetch.
const LOG_READ_FLOOR: Duration = Duration::from_secs(10);

/// Least time between two watches of one pod, so that a server that ends every watch at once
/// (or a connection that keeps failing) is not hammered.
const REWATCH_PACE: Duration = Duration::from_secs(1);

/// How long after the first delete-collection of a run's unsettled creates the second one goes
/// out: a create the API server was still processing when the run ended is stored within it,
/// unless the server takes longer than this to admit a pod (a slow admission webhook), which is
/// then `kubectl etcdnet cleanup`'s.
pub const SWEEP_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// The pods of one namespace of one cluster, as one route's session creates them: the API, and
/// an identity (an `Api` has none to compare), so that a run's sweep asks each place once.
#[derive(Clone)]
pub struct PodApi {
    api: Api<Pod>,
    place: u64,
}

impl PodApi {
    pub fn new(api: Api<Pod>) -> PodApi {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        PodApi {
            api,
            place: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl std::ops::Deref for PodApi {
    type Target = Api<Pod>;
    fn deref(&self) -> &Api<Pod> {
        &self.api
    }
}

/// A pod we created, or may have: the API it lives behind (its namespace and cluster) and its
/// name, under the id of the create that made it. Two entries may carry the same name; each is
/// removed only by its own create's outcome.
struct Tracked {
    ticket: Ticket,
    api: Api<Pod>,
    name: String,
}

/// A create whose outcome the run has not learnt (in flight, or answered without a definite
/// refusal): where, and the label selector of the run's pods there.
struct Unsettled {
    ticket: Ticket,
    api: PodApi,
    selector: String,
}

/// One create's entry in the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ticket(u64);

#[derive(Default)]
struct Pods {
    next: u64,
    tracked: Vec<Tracked>,
    unsettled: Vec<Unsettled>,
}

/// Every pod this run has created (or may have) and not yet deleted.
#[derive(Clone, Default)]
pub struct PodTracker {
    pods: Arc<Mutex<Pods>>,
}

impl PodTracker {
    /// Records one create of `pod`, before its request goes out: its name, and, until its
    /// answer settles it, the run's label to sweep by (a pod without the run-id label has none).
    fn track(&self, api: &PodApi, pod: &Pod) -> Ticket {
        let mut pods = self.pods.lock().unwrap();
        pods.next += 1;
        let ticket = Ticket(pods.next);
        pods.tracked.push(Tracked {
            ticket,
            api: (**api).clone(),
            name: pod.metadata.name.clone().unwrap_or_default(),
        });
        let run_id = pod.metadata.labels.as_ref().and_then(|l| l.get(RUN_ID));
        if let Some(run_id) = run_id {
            pods.unsettled.push(Unsettled {
                ticket,
                api: api.clone(),
                selector: format!("{},{RUN_ID}={run_id}", managed_selector()),
            });
        }
        ticket
    }

    /// The create answered: it made the pod (tracked by name) or definitely did not.
    fn settle(&self, ticket: Ticket) {
        self.pods
            .lock()
            .unwrap()
            .unsettled
            .retain(|u| u.ticket != ticket);
    }

    /// Forgets exactly the entry of one create (never another create's pod of the same name).
    fn untrack(&self, ticket: Ticket) {
        self.pods
            .lock()
            .unwrap()
            .tracked
            .retain(|t| t.ticket != ticket);
    }

    /// Names of the pods still alive (for "--keep-pods: remove them with ...").
    pub fn names(&self) -> Vec<String> {
        self.pods
            .lock()
            .unwrap()
            .tracked
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// Deletes every tracked pod, all at once, each bounded. Returns what could not be deleted.
    pub async fn delete_all(&self, bound: Duration) -> Vec<String> {
        let pods: Vec<Tracked> = std::mem::take(&mut self.pods.lock().unwrap().tracked);
        let deletions = pods
            .into_iter()
            .map(|Tracked { api, name, .. }| async move {
                // The pod's own grace period (2 s): the probe gets its SIGTERM and tidies up.
                let params = DeleteParams::default();
                match tokio::time::timeout(bound, api.delete(&name, &params)).await {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) if e.is_not_found() => None,
                    Ok(Err(e)) => Some(format!("{name}: {}", crate::error::chain(&e))),
                    Err(_) => Some(format!("{name}: delete did not finish within {bound:?}")),
                }
            });
        let mut failed: Vec<String> = futures::future::join_all(deletions)
            .await
            .into_iter()
            .flatten()
            .collect();
        failed.extend(self.sweep(bound).await);
        failed
    }

    /// For the creates the run never saw answered: one delete-collection by the run's label
    /// in each place they went to, then the same once more after [`SWEEP_AGAIN_AFTER`], for a
    /// pod the API server stores only after the first. Nothing when every create was answered.
    async fn sweep(&self, bound: Duration) -> Vec<String> {
        let unsettled = std::mem::take(&mut self.pods.lock().unwrap().unsettled);
        let mut places: Vec<Unsettled> = Vec::new();
        for u in unsettled {
            if !places
                .iter()
                .any(|p| p.api.place == u.api.place && p.selector == u.selector)
            {
                places.push(u);
            }
        }
        if places.is_empty() {
            return Vec::new();
        }
        let once = || {
            futures::future::join_all(places.iter().map(|p| async move {
                let list = ListParams::default().labels(&p.selector);
                let ns = p.api.namespace().unwrap_or_default();
                let what = format!("the pods labelled {} in namespace {ns}", p.selector);
                match tokio::time::timeout(
                    bound,
                    p.api.delete_collection(&DeleteParams::default(), &list),
                )
                .await
                {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(format!("{what}: {}", crate::error::chain(&e))),
                    Err(_) => Some(format!("{what}: delete did not finish within {bound:?}")),
                }
            }))
        };
        debug!(places = places.len(), "sweeping unanswered creates");
        // The first try's failures are the second's to mend: a place is reported by its last.
        once().await;
        tokio::time::sleep(SWEEP_AGAIN_AFTER).await;
        once().await.into_iter().flatten().collect()
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
    /// The log is larger than its limit ([`MAX_LOG_BYTES`] for one probe): not read.
    LogTooLarge {
        limit_bytes: u64,
    },
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

/// Whether the API server definitely did not create the pod: it answered this very create
/// with a 4xx `Status` (a refusal: RBAC's 403, Pod Security's 403, an invalid spec's 422,
/// 429, or 409 AlreadyExists). Anything else — no answer (a timeout, a broken connection) or a
/// 5xx (a 504 may still be processed) — leaves the pod possibly created, so it stays tracked
/// and the final `delete_all` tries it (a 404 there is fine).
///
/// 409 counts as a refusal on purpose: it says that *this* create made nothing. The pod that
/// holds the name is not this run's: pod names are unique per node within a run (the node
/// name, hashed when it is cut, and the run id) and a create is never retried (kube sends each
/// POST once). So it is someone else's, or an earlier run's with the same 5-character run id;
/// deleting it could kill another admin's run in progress, which is worse than leaving it
/// (`cleanup` removes it once it has finished or passed its deadline).
fn definitely_refused(err: &kube::Error) -> bool {
    matches!(err.status_code(), Some(400..=499))
}

/// Whether a failed watch (or the read that resumes one) is worth trying again until the
/// run's bound: the connection broke or stayed quiet past the client's read timeout (kube
/// reports that as `ReadEvents`), or the server was briefly overloaded (429, 5xx: an API
/// server whose etcd is struggling answers so). Not a refusal (403), not an answer that
/// cannot be read.
///
/// A watch line or a body past its size cap (`bounds`) is not resumed: the same server would
/// send it again. A watch past its deadline (`timeoutSeconds` plus the client's bound) is.
fn resumable(err: &kube::Error) -> bool {
    if let Some(bound) = crate::bounds::exceeded(err) {
        return matches!(bound, crate::bounds::Exceeded::Slow { .. });
    }
    match err {
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => false,
    }
}

/// A pod failure as one line that says what to do (both pod-based routes: `pod`, `jumpbox`).
pub fn reach_error(f: PodFailure, ns: &str, image_flag: &str) -> ReachError {
    let (kind, message) = match f {
        PodFailure::Rejected(m) => (
            ReachErrorKind::Rejected,
            format!("the probe pod was rejected: {m}; use --pod-namespace with a namespace whose Pod Security level is privileged (kube-system usually is)"),
        ),
        PodFailure::Forbidden(m) => (
            ReachErrorKind::Rejected,
            format!("{m}; creating, watching, reading the log of and deleting pods in {ns} is needed (docs/rbac.yaml)"),
        ),
        PodFailure::ImagePull { image, reason, message } => (
            ReachErrorKind::ImagePull,
            format!("cannot pull image {image:?} ({reason}: {message}); use {image_flag} from a registry the nodes reach, and --image-pull-secret if it needs credentials"),
        ),
        PodFailure::Pending(why) => (ReachErrorKind::Unschedulable, format!("the probe pod cannot start: {why}")),
        PodFailure::Timeout(why) => (ReachErrorKind::Timeout, format!("the probe pod did not finish: {why}; raise --timeout")),
        PodFailure::Gone => (ReachErrorKind::Other, "the probe pod was deleted while it ran".into()),
        PodFailure::LogTooLarge { limit_bytes } => (
            ReachErrorKind::BadOutput,
            format!("the probe pod's log is larger than {} MiB, far more than the probe prints: it was not read", limit_bytes / (1024 * 1024)),
        ),
        PodFailure::Api(m) => (ReachErrorKind::Other, m),
    };
    ReachError { kind, message }
}

fn api_failure(doing: &str, err: kube::Error) -> PodFailure {
    match (err.status_code(), err.status_message()) {
        (Some(409), Some(m)) => PodFailure::Api(format!(
            "{doing}: {m} (409); this run did not create it and leaves it alone (if it is a leftover of an earlier run, kubectl etcdnet cleanup removes it once it has finished)"
        )),
        (Some(403), Some(m)) if m.contains("violates PodSecurity") => {
            PodFailure::Rejected(m.to_string())
        }
        (Some(403), Some(m)) => PodFailure::Forbidden(format!("{doing}: {m}")),
        (Some(code), Some(m)) => PodFailure::Api(format!("{doing}: {m} ({code})")),
        _ => PodFailure::Api(format!("{doing}: {}", crate::error::chain(&err))),
    }
}

/// Runs one pod to its end within `bound`, then deletes it unless `keep`; its log is read up
/// to [`MAX_LOG_BYTES`].
pub async fn run(
    api: &PodApi,
    pod: &Pod,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
) -> Result<PodRun, PodFailure> {
    run_with_log_limit(api, pod, tracker, bound, keep, MAX_LOG_BYTES).await
}

/// [`run`] for a pod whose log holds more than one probe's output (the jumpbox's, one section
/// per VM): its log is read up to `log_limit` bytes instead, more refused unread. The caller
/// scales the limit with what the pod prints at most (see `jumpbox::log_limit`).
pub async fn run_with_log_limit(
    api: &PodApi,
    pod: &Pod,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
    log_limit: u64,
) -> Result<PodRun, PodFailure> {
    let started = Instant::now();
    // Tracked before the request goes out: if the run is cancelled while the create is in
    // flight, the API server may have made the pod without us seeing the answer, and the final
    // delete_all must still delete it (a 404 there is fine).
    let name = pod.metadata.name.clone().unwrap_or_default();
    let ticket = tracker.track(api, pod);
    let created = match api.create(&PostParams::default(), pod).await {
        Ok(p) => {
            tracker.settle(ticket);
            p
        }
        Err(e) => {
            if definitely_refused(&e) {
                tracker.untrack(ticket);
                tracker.settle(ticket);
            } else {
                // No answer, or one that does not say "not created": the pod may exist. Left
                // tracked, so the final delete_all deletes it.
                warn!(pod = %name, "create failed, the pod may exist: {}", crate::error::chain(&e));
            }
            return Err(api_failure("creating the probe pod", e));
        }
    };
    debug!(pod = %name, "created");

    let result = wait_and_read(api, &name, created, started, bound, log_limit).await;

    if !keep {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracker.untrack(ticket),
            Err(e) if e.is_not_found() => tracker.untrack(ticket),
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

/// Reads a finished pod's log, at most `limit` bytes ([`MAX_LOG_BYTES`] for one probe's pod):
/// one byte more is asked of the server (`limitBytes`) and read, so that a log of exactly the
/// limit is told from a longer one. The client-side cap holds even if a server ignores
/// `limitBytes`.
async fn read_log(api: &Api<Pod>, name: &str, limit: u64) -> Result<String, PodFailure> {
    let params = LogParams {
        limit_bytes: Some(i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1),
        ..LogParams::default()
    };
    let doing = "reading the probe pod's log";
    let stream = api
        .log_stream(name, &params)
        .await
        .map_err(|e| api_failure(doing, e))?;
    let mut log = Vec::new();
    Box::pin(stream.take(limit.saturating_add(1)))
        .read_to_end(&mut log)
        .await
        // `chain`: a log past its deadline or size (`bounds`) says so in one line.
        .map_err(|e| PodFailure::Api(format!("{doing}: {}", crate::error::chain(&e))))?;
    if log.len() as u64 > limit {
        return Err(PodFailure::LogTooLarge { limit_bytes: limit });
    }
    // Invalid UTF-8 is the parser's to report (it replaces it and names the node).
    Ok(String::from_utf8_lossy(&log).into_owned())
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
    use etcdnet_fakeapi::{FakeApi, FakeConfig, Forbid, PodScript, Workload};
    use serde_json::json;

    const NAME: &str = "etcdnet-probe-cp1-k3x9q";

    /// A client to `url` whose every read gives up after `read_timeout`, as ours do.
    fn client(url: &str, read_timeout: Duration) -> kube::Client {
        let mut config = kube::Config::new(url.parse().unwrap());
        config.read_timeout = Some(read_timeout);
        config.connect_timeout = Some(read_timeout);
        kube::Client::try_from(config).unwrap()
    }

    fn pods_at(url: &str, read_timeout: Duration) -> PodApi {
        PodApi::new(Api::namespaced(client(url, read_timeout), "kube-system"))
    }

    fn probe_pod(name: &str) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 60,
                     "containers": [{"name": "probe", "image": "busybox"}]}
        }))
        .unwrap()
    }

    /// `run` of the probe pod `NAME`, not kept, within `bound`.
    async fn run_probe(
        pods: &PodApi,
        tracker: &PodTracker,
        bound: Duration,
    ) -> Result<PodRun, PodFailure> {
        run(pods, &probe_pod(NAME), tracker, bound, false).await
    }

    fn fake() -> FakeApi {
        FakeApi::start_with(FakeConfig::empty()).unwrap()
    }

    /// The probe pod `name`, labelled as a run's pods are (run id `k3x9q`).
    fn labelled_pod(name: &str) -> Pod {
        let mut pod = probe_pod(name);
        pod.metadata.labels = Some(
            [
                (crate::labels::MANAGED_BY, crate::labels::MANAGED_BY_VALUE),
                (RUN_ID, "k3x9q"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        );
        pod
    }

    /// The delete-collections the fake received, by their label selector.
    fn sweeps(api: &FakeApi) -> Vec<String> {
        api.requests()
            .iter()
            .filter(|r| r.method == "DELETE" && r.path.ends_with("/pods"))
            .map(|r| r.param("labelSelector").unwrap_or_default())
            .collect()
    }

    /// A create the run stopped waiting for (Ctrl-C drops it) is stored after the delete by
    /// name: the sweep by the run's label, retried after a wait, deletes it. Fails on c04990d
    /// (no sweep: the pod stayed).
    #[tokio::test]
    async fn a_create_dropped_in_flight_is_swept_by_the_run_label() {
        let api = fake();
        api.delay_pod_creates(Duration::from_millis(500));
        let pods = pods_at(&api.url(), Duration::from_secs(5));
        let tracker = PodTracker::default();
        let pod = labelled_pod(NAME);
        let cut = tokio::time::timeout(
            Duration::from_millis(100),
            run(&pods, &pod, &tracker, Duration::from_secs(5), false),
        )
        .await;
        assert!(cut.is_err(), "the create was still in flight");
        let failed = tracker.delete_all(Duration::from_secs(2)).await;
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(api.created_pods().len(), 1, "the create landed meanwhile");
        assert!(api.existing_pods().is_empty(), "{:?}", api.existing_pods());
        let selector =
            "app.kubernetes.io/managed-by=kubectl-etcdnet,etcdnet.kubectl.io/run-id=k3x9q";
        assert_eq!(sweeps(&api), [selector, selector]);
    }

    /// Every create answered: no sweep, and no wait for one.
    #[tokio::test]
    async fn answered_creates_need_no_sweep() {
        let api = fake();
        api.on_pod_created(|_| Some(PodScript::succeeds("{}")));
        let pods = pods_at(&api.url(), Duration::from_secs(5));
        let tracker = PodTracker::default();
        let _ = run(
            &pods,
            &labelled_pod(NAME),
            &tracker,
            Duration::from_secs(5),
            true,
        )
        .await;
        let started = Instant::now();
        tracker.delete_all(Duration::from_secs(2)).await;
        assert!(started.elapsed() < SWEEP_AGAIN_AFTER);
        assert!(api.existing_pods().is_empty());
        assert!(sweeps(&api).is_empty(), "{:?}", sweeps(&api));
    }

    #[tokio::test]
    async fn a_409_forgets_only_its_own_create() {
        // Someone else's pod holds the name.
        let api = FakeApi::start_with(
            FakeConfig::empty().object(serde_json::to_value(probe_pod(NAME)).unwrap()),
        )
        .unwrap();
        let pods = pods_at(&api.url(), Duration::from_secs(5));
        let tracker = PodTracker::default();
        // Another create of the same name, still in flight: its entry must survive ours.
        let other = tracker.track(&pods, &probe_pod(NAME));
        let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
            .await
            .unwrap_err();
        match &failure {
            PodFailure::Api(m) => assert!(
                m.contains("already exists")
                    && m.contains("(409)")
                    && m.contains("leaves it alone"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            tracker.names(),
            [NAME],
            "exactly the other create's entry is left"
        );
        tracker.untrack(other);
        assert!(tracker.names().is_empty());
        assert_eq!(
            api.existing_pods(),
            [("kube-system".to_string(), NAME.to_string())],
            "the pod that was there is not ours to delete"
        );
    }

    #[tokio::test]
    async fn a_403_is_a_definite_refusal() {
        let api = FakeApi::start_with(FakeConfig::empty().forbid(Forbid {
            verb: Some("create".into()),
            resource: Some("pods".into()),
            ..Forbid::default()
        }))
        .unwrap();
        let pods = pods_at(&api.url(), Duration::from_secs(5));
        let tracker = PodTracker::default();
        let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(failure, PodFailure::Forbidden(_)), "{failure:?}");
        assert!(tracker.names().is_empty());
    }

    #[tokio::test]
    async fn no_answer_to_a_create_keeps_the_pod_tracked() {
        // A server that takes the request and never answers: the pod may well exist.
        let hole = Workload::black_hole();
        let pods = pods_at(&hole.url(), Duration::from_millis(300));
        let tracker = PodTracker::default();
        let failure = run_probe(&pods, &tracker, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(failure, PodFailure::Api(_)), "{failure:?}");
        assert_eq!(tracker.names(), [NAME], "delete_all must still try it");
        // And it does: the delete is tried (and here cannot be answered either).
        let failed = tracker.delete_all(Duration::from_millis(500)).await;
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].starts_with(NAME), "{failed:?}");

        // Refused at connect: kept as well (nothing tells a transport error from a lost answer).
        let refused = Workload::refused();
        let pods = pods_at(&refused.url(), Duration::from_millis(300));
        let tracker = PodTracker::default();
        run_probe(&pods, &tracker, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(tracker.names(), [NAME]);
    }

    #[tokio::test]
    async fn a_pod_slower_to_start_than_the_read_timeout_is_waited_for() {
        let api = fake();
        // Pending for 1.5 s with no event: longer than the client's 300 ms read timeout.
        api.on_pod_created(|_| {
            Some(PodScript {
                log: "probe output\n".into(),
                run_after: Duration::from_millis(1500),
                finish_after: Some(Duration::from_millis(50)),
                ..PodScript::default()
            })
        });
        let pods = pods_at(&api.url(), Duration::from_millis(300));
        let tracker = PodTracker::default();
        let done = run_probe(&pods, &tracker, Duration::from_secs(20))
            .await
            .unwrap();
        assert!(done.succeeded);
        assert_eq!(done.log, "probe output\n");
        assert!(tracker.names().is_empty());
        assert!(api.existing_pods().is_empty(), "deleted once read");
    }

    #[tokio::test]
    async fn only_the_bound_ends_the_wait() {
        let api = fake();
        // Never scheduled: stays Pending, no event at all.
        let pods = pods_at(&api.url(), Duration::from_millis(200));
        let tracker = PodTracker::default();
        let started = Instant::now();
        let failure = run_probe(&pods, &tracker, Duration::from_secs(2))
            .await
            .unwrap_err();
        match &failure {
            PodFailure::Timeout(m) => assert!(m.starts_with("still Pending after 2s"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_secs(2));
        assert!(tracker.names().is_empty() && api.existing_pods().is_empty());
    }

    #[tokio::test]
    async fn an_oversized_log_is_refused_unread() {
        let api = fake();
        api.on_pod_created(|pod| {
            let big = pod["metadata"]["name"] == "big";
            let size = MAX_LOG_BYTES as usize + usize::from(big);
            Some(PodScript::succeeds("x".repeat(size)))
        });
        let pods = pods_at(&api.url(), Duration::from_secs(5));
        let tracker = PodTracker::default();
        let bound = Duration::from_secs(20);
        let failure = run(&pods, &probe_pod("big"), &tracker, bound, false)
            .await
            .unwrap_err();
        assert_eq!(
            failure,
            PodFailure::LogTooLarge {
                limit_bytes: MAX_LOG_BYTES
            }
        );
        let reach = reach_error(failure, "kube-system", "--image");
        assert_eq!(reach.kind, crate::probe::ReachErrorKind::BadOutput);
        assert!(
            reach.message.contains("larger than 4 MiB"),
            "{}",
            reach.message
        );
        // Exactly the limit is still read, whole.
        let done = run(&pods, &probe_pod("fits"), &tracker, bound, false)
            .await
            .unwrap();
        assert_eq!(done.log.len() as u64, MAX_LOG_BYTES);
        assert!(tracker.names().is_empty() && api.existing_pods().is_empty());
    }

    #[test]
    fn the_log_bound_is_above_what_the_probe_prints() {
        // The etcd log sample, escaped at worst six-fold, plus room for the rest.
        let sample = crate::probe::script::ProbeArgs::default().log_bytes;
        assert!(MAX_LOG_BYTES > 6 * sample + 512 * 1024);
        // ... and within what the parser reads at all.
        assert!(MAX_LOG_BYTES as usize <= crate::probe::parse::MAX_OUTPUT_BYTES);
    }

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
