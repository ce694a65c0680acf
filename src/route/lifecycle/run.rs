//! One pod's run: create it (tracked first), wait for its end, read its log, delete it.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use tracing::{debug, warn};

use super::failure::{api_failure, definitely_refused, PodFailure};
use super::log::{PodRun, MAX_LOG_BYTES};
use super::tracker::{PodApi, PodTracker, Ticket};
use super::wait::wait_and_read;
use crate::error::KubeErrorExt;

/// Runs one pod to its end within `bound`, then deletes it unless `keep`; its log is read up
/// to [`MAX_LOG_BYTES`].
pub(crate) async fn run(
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
pub(crate) async fn run_with_log_limit(
    api: &PodApi,
    pod: &Pod,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
    log_limit: u64,
) -> Result<PodRun, PodFailure> {
    let started = Instant::now();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let (created, ticket) = create_as(api, pod, tracker, "creating the probe pod").await?;

    let result = wait_and_read(api, &name, created, started, bound, log_limit).await;

    if !keep {
        delete(api, &name, tracker, ticket).await;
    }
    result
}

/// Deletes the pod `ticket` tracks and untracks it (a 404 is fine); one whose delete fails
/// stays tracked, and the caller's final `delete_all` retries it.
pub(crate) async fn delete(api: &PodApi, name: &str, tracker: &PodTracker, ticket: Ticket) {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => tracker.untrack(ticket),
        Err(e) if e.is_not_found() => tracker.untrack(ticket),
        Err(e) => warn!(pod = %name, "delete failed: {}", crate::error::chain(&e)),
    }
}

/// Creates `pod`, tracked before the request goes out (as [`run_with_log_limit`] does), and
/// leaves it running: for a pod that outlives one round, `--watch`'s kept jumpbox. Its owner
/// deletes it ([`delete`], with the ticket returned), and `tracker.delete_all` does whatever
/// way the run ends.
pub(crate) async fn create(
    api: &PodApi,
    pod: &Pod,
    tracker: &PodTracker,
) -> Result<Ticket, PodFailure> {
    create_as(api, pod, tracker, "creating the jumpbox pod")
        .await
        .map(|(_, ticket)| ticket)
}

/// Creates `pod`, tracked before the request goes out: if the run is cancelled while the create
/// is in flight, the API server may have made the pod without us seeing the answer, and the
/// final `delete_all` must still delete it (a 404 there is fine). A create the API server
/// definitely refused is untracked; `doing` names the request in the failure. The ticket is
/// the caller's, to untrack the pod once it is deleted.
async fn create_as(
    api: &PodApi,
    pod: &Pod,
    tracker: &PodTracker,
    doing: &str,
) -> Result<(Pod, Ticket), PodFailure> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let ticket = tracker.track(api, pod);
    match api.create(&PostParams::default(), pod).await {
        Ok(p) => {
            tracker.settle(ticket);
            debug!(pod = %name, "created");
            Ok((p, ticket))
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
            Err(api_failure(doing, e))
        }
    }
}
