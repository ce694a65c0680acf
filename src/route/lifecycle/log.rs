//! A finished pod's log, read within its cap, and what a pod's run gives.

use std::time::Duration;

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use super::failure::{api_failure, PodFailure};

/// The most a probe pod's log may hold; more is refused unread (a per-node `BadOutput`). The
/// probe prints one JSON document whose etcd log sample is capped at `--log-bytes` (256 KiB of
/// raw text, whatever `--log-lines` asks), which JSON escaping can grow at most six-fold (a
/// control byte becomes `\u00XX`), plus a few KiB of paths, certificates and errors. 4 MiB is
/// well above that, and bounds what a broken or hostile node makes the plugin hold (times the
/// pods read at once). The tests check it stays above the probe's maximum and within what the
/// parser reads. The jumpbox's one pod prints a section per VM, each holding at most this much
/// of its node's output (its script cuts more): its limit is scaled with the number of VMs
/// (`jumpbox::log_limit`, through [`run_with_log_limit`]).
pub(crate) const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// Time the log read gets even when the run's bound is (nearly) used up: the pod has finished,
/// its log is all there is left to fetch.
pub(super) const LOG_READ_FLOOR: Duration = Duration::from_secs(10);

/// A pod that ran to an end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodRun {
    pub succeeded: bool,
    pub exit_code: Option<i32>,
    pub log: String,
}

/// Reads a finished pod's log, at most `limit` bytes ([`MAX_LOG_BYTES`] for one probe's pod):
/// one byte more is asked of the server (`limitBytes`) and read, so that a log of exactly the
/// limit is told from a longer one. The client-side cap holds even if a server ignores
/// `limitBytes`.
pub(crate) async fn read_log(api: &Api<Pod>, name: &str, limit: u64) -> Result<String, PodFailure> {
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
