//! One pod's run: create it (tracked first), wait for its end, read its log, delete it.

use std::time::{Duration, Instant};

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use tracing::{debug, warn};

use super::failure::{api_failure, definitely_refused, PodFailure};
use super::tracker::{PodApi, PodTracker};
use super::wait::wait_and_read;
use crate::error::KubeErrorExt;

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
pub(super) const LOG_READ_FLOOR: Duration = Duration::from_secs(10);

/// A pod that ran to an end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRun {
    pub succeeded: bool,
    pub exit_code: Option<i32>,
    pub log: String,
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

/// Reads a finished pod's log, at most `limit` bytes ([`MAX_LOG_BYTES`] for one probe's pod):
/// one byte more is asked of the server (`limitBytes`) and read, so that a log of exactly the
/// limit is told from a longer one. The client-side cap holds even if a server ignores
/// `limitBytes`.
pub(super) async fn read_log(api: &Api<Pod>, name: &str, limit: u64) -> Result<String, PodFailure> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_bound_is_above_what_the_probe_prints() {
        // The etcd log sample, escaped at worst six-fold, plus room for the rest.
        let sample = crate::probe::script::ProbeArgs::default().log_bytes;
        assert!(MAX_LOG_BYTES > 6 * sample + 512 * 1024);
        // ... and within what the parser reads at all.
        assert!(MAX_LOG_BYTES as usize <= crate::probe::parse::MAX_OUTPUT_BYTES);
    }
}
