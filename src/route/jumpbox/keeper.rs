//! `--watch` keeps one jumpbox per cluster across its rounds: on a real Supervisor the jumpbox's
//! start (the ESXi host pulls the image, the vSphere Pod's own VM boots: tens of seconds) is the
//! slowest part of a round, so it is paid once, not every round.
//!
//! No channel into a running pod is used (no exec: a vSphere Pod's runtime is not known to
//! serve it, and it would need one more permission): the kept pod runs `jumpbox.sh` with
//! `ETCDNET_ROUNDS_EVERY`, probing every VM again that long after each round ends, each round
//! framed with the nonce and its number. A watch round takes the first round of the pod that
//! ends after the watch round began, so what it reports was gathered during it, never a round
//! that had ended before.
//!
//! Its deadline: `activeDeadlineSeconds` may only be lowered on a running pod (kubernetes
//! `pkg/apis/core/validation/validation.go`, `ValidatePodUpdate`: "must be less than or equal to
//! previous value"), so it cannot be renewed in place. The pod is made with a lease that covers
//! about [`LEASE_ROUNDS`] rounds beyond the run's bound, and a new pod replaces it before a
//! round could outlive it; also when the VMs or their probe change, or its log has grown to its limit. It
//! is labelled as every pod of ours, tracked in the keeper's own [`PodTracker`], and deleted at
//! the watch's end, whatever ends it ([`JumpboxKeeper::finish`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{EnvVar, Pod};
use tracing::warn;

use super::framing::split_log;
use super::spec::{jumpbox_pod, log_limit, new_nonce, DRY_RUN_NONCE};
use super::JumpboxSettings;
use crate::probe::{ReachError, ReachErrorKind};
use crate::route::lifecycle::{self, pod_state, PodApi, PodFailure, PodState, PodTracker};
use crate::route::Address;

/// How many rounds one kept pod's lease covers before a new one replaces it.
pub const LEASE_ROUNDS: u32 = 10;
/// How many rounds at their largest the kept pod's log may hold before a new pod replaces it
/// (each round's sections are bounded as a one-shot pod's: [`log_limit`]).
const LOG_ROUNDS: u64 = 4;
/// How often the kept pod's status and log are read while a round is awaited.
const POLL: Duration = Duration::from_millis(500);
/// What a round needs past its bound before the pod's deadline, or a new pod is made first.
const MARGIN: Duration = Duration::from_secs(15);
/// The env var that makes `jumpbox.sh` run rounds.
const ROUNDS_ENV: &str = "ETCDNET_ROUNDS_EVERY";

/// The kept pod of one cluster.
struct Live {
    api: PodApi,
    namespace: String,
    name: String,
    nonce: String,
    /// The pod's command with the dry run's nonce: the VMs and everything they are probed with.
    what: Vec<String>,
    expires: Instant,
    limit: u64,
    /// Its log holds half its limit: replaced before the next round.
    full: bool,
    /// Its entry in the keeper's tracker: untracked once it is deleted.
    ticket: lifecycle::Ticket,
}

type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

/// The jumpboxes `--watch` keeps, one per (vSphere Namespace, cluster).
pub struct JumpboxKeeper {
    every: Duration,
    tracker: PodTracker,
    slots: Mutex<HashMap<(String, String), Slot>>,
}

impl std::fmt::Debug for JumpboxKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JumpboxKeeper")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl JumpboxKeeper {
    /// A keeper for a watch that starts a round `every` after the last one ended.
    pub fn new(every: Duration) -> JumpboxKeeper {
        JumpboxKeeper {
            every,
            tracker: PodTracker::default(),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Deletes every kept pod (within `bound`); the names of those that could not be.
    pub async fn finish(&self, bound: Duration) -> Vec<String> {
        self.tracker.delete_all(bound).await
    }

    fn slot(&self, namespace: &str, cluster: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry((namespace.to_string(), cluster.to_string()))
            .or_default()
            .clone()
    }

    /// One round of `vms` through the cluster's kept pod (made first if there is none, or it
    /// will not do), within `bound`: the pod's log and the nonce of the round's frames.
    pub async fn round(
        &self,
        api: &PodApi,
        s: &JumpboxSettings,
        vms: &[&Address],
        bound: Duration,
    ) -> Result<(String, String), ReachError> {
        let began = Instant::now();
        let slot = self.slot(&s.namespace, &s.cluster);
        let mut live = slot.lock().await;
        // Built with the dry run's fixed nonce: two differ only where the VMs or what they are
        // probed with do.
        let what = command_of(&jumpbox_pod(vms, DRY_RUN_NONCE, s));
        let stale = live.as_ref().is_some_and(|l| {
            l.full
                || l.what != what
                || l.expires.saturating_duration_since(Instant::now()) < bound + MARGIN
        });
        if stale {
            drop_pod(&self.tracker, &mut live).await;
        }
        // The last round of the pod that had ended when this round began (None: none had);
        // this round takes a later one. A kept pod's is learnt from its first log read, and
        // only a round that ends after that read is taken: never one that may be older than
        // this round.
        let mut before: Option<Option<u64>> = None;
        if live.is_none() {
            *live = Some(self.make(api, s, vms, bound, what).await?);
            before = Some(None);
        }
        loop {
            let Some(l) = live.as_mut() else {
                unreachable!("made above")
            };
            match self.poll(l, vms.len()).await {
                Poll::Log(log, last) => match before {
                    None => before = Some(last),
                    Some(b) => {
                        if let Some(n) = last.filter(|n| b.is_none_or(|b| *n > b)) {
                            // Half its limit: the next round starts a new pod, so that no
                            // round's sections are ever cut off.
                            if log.len() as u64 > l.limit / 2 {
                                l.full = true;
                            }
                            let nonce = format!("{}r{n}", l.nonce);
                            return Ok((log, nonce));
                        }
                    }
                },
                // A pod not running yet has ended no round.
                Poll::NotRunning if before.is_none() => before = Some(None),
                Poll::NotRunning | Poll::NotYet => {}
                Poll::Failed(e) => {
                    drop_pod(&self.tracker, &mut live).await;
                    return Err(e);
                }
            }
            if began.elapsed() >= bound {
                let e = ReachError {
                    kind: ReachErrorKind::Timeout,
                    message: format!(
                        "the kept jumpbox pod {} gave no round within {}s",
                        l.name,
                        bound.as_secs()
                    ),
                };
                drop_pod(&self.tracker, &mut live).await;
                return Err(e);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Makes the cluster's kept pod: the one-shot pod's spec, running rounds, its deadline the
    /// lease.
    async fn make(
        &self,
        api: &PodApi,
        s: &JumpboxSettings,
        vms: &[&Address],
        bound: Duration,
        what: Vec<String>,
    ) -> Result<Live, ReachError> {
        let Some(nonce) = new_nonce() else {
            return Err(ReachError {
                kind: ReachErrorKind::Other,
                message: "the system gave no random bytes for the jumpbox's log framing, so no jumpbox pod was made; try again, or use --via ssh".into(),
            });
        };
        // A round is taken from it while a whole round's bound and the margin are left, so
        // the lease holds twice that and LEASE_ROUNDS pauses between rounds: about that many
        // rounds of a few seconds each before a new pod replaces it. A safety net only: the
        // watch deletes it when it ends.
        let lease = (bound.max(Duration::from_secs(60)) + MARGIN) * 2 + self.every * LEASE_ROUNDS;
        let pod = kept_pod(jumpbox_pod(vms, &nonce, s), self.every, lease);
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api = api.clone();
        let ticket = lifecycle::create(&api, &pod, &self.tracker)
            .await
            .map_err(|f| lifecycle::reach_error(f, &s.namespace, lifecycle::PodRoute::Jumpbox))?;
        Ok(Live {
            api,
            namespace: s.namespace.clone(),
            name,
            nonce,
            what,
            expires: Instant::now() + lease,
            limit: log_limit(vms.len()).saturating_mul(LOG_ROUNDS),
            full: false,
            ticket,
        })
    }

    /// The kept pod now: its log and the last round it ended, not running yet, or a failure
    /// that ends it.
    async fn poll(&self, l: &Live, vms: usize) -> Poll {
        let failed = |f: PodFailure| {
            Poll::Failed(lifecycle::reach_error(
                f,
                &l.namespace,
                lifecycle::PodRoute::Jumpbox,
            ))
        };
        let pod = match l.api.get_opt(&l.name).await {
            Ok(Some(p)) => p,
            Ok(None) => return failed(PodFailure::Gone),
            Err(e) => {
                warn!(pod = %l.name, "reading the kept jumpbox: {}", crate::error::chain(&e));
                return Poll::NotYet;
            }
        };
        let running = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.running.is_some());
        let state = pod_state(&pod);
        let finished = matches!(state, PodState::Finished { .. });
        match state {
            PodState::ImagePull { reason, message } => {
                return failed(PodFailure::ImagePull {
                    image: lifecycle::first_image(&pod),
                    reason,
                    message,
                });
            }
            PodState::Stuck(why) => return failed(PodFailure::Pending(why)),
            PodState::Waiting if !running => return Poll::NotRunning,
            _ => {}
        }
        let log = match lifecycle::read_log(&l.api, &l.name, l.limit).await {
            Ok(log) => log,
            Err(f @ PodFailure::LogTooLarge { .. }) => return failed(f),
            Err(_) if !finished => return Poll::NotYet,
            Err(f) => return failed(f),
        };
        // The script's own failure (no ssh client, no key), said before any round.
        if let Err(e) = split_log(&log, &l.nonce, vms) {
            return Poll::Failed(e);
        }
        if finished {
            // It runs rounds until it is deleted: ended, it gives no round after this one.
            return Poll::Failed(ReachError {
                kind: ReachErrorKind::Other,
                message: format!("the kept jumpbox pod {} ended", l.name),
            });
        }
        let last = last_round(&log, &l.nonce);
        Poll::Log(log, last)
    }
}

enum Poll {
    /// The log, and the last round it says was ended.
    Log(String, Option<u64>),
    /// Its container has not started.
    NotRunning,
    /// Nothing new could be read.
    NotYet,
    Failed(ReachError),
}

/// Deletes the kept pod and untracks it (a 404 is fine; one that fails stays tracked for
/// `finish`).
async fn drop_pod(tracker: &PodTracker, live: &mut Option<Live>) {
    if let Some(l) = live.take() {
        lifecycle::delete(&l.api, &l.name, tracker, l.ticket).await;
    }
}

/// The one-shot pod's spec made to run rounds `every` apart until `lease` has passed.
fn kept_pod(mut pod: Pod, every: Duration, lease: Duration) -> Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.active_deadline_seconds = Some(lease.as_secs().max(1) as i64);
        if let Some(c) = spec.containers.first_mut() {
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: ROUNDS_ENV.into(),
                value: Some(every.as_secs().max(1).to_string()),
                ..Default::default()
            });
        }
    }
    pod
}

/// The pod's command: what it probes, and how.
fn command_of(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.command.clone())
        .unwrap_or_default()
}

/// The last round the script says it ended (`ETCDNET-ROUND-END <nonce> <n>` at a line's start;
/// the nonce is never sent to a node, so no node prints one).
fn last_round(log: &str, nonce: &str) -> Option<u64> {
    let head = format!("ETCDNET-ROUND-END {nonce} ");
    log.lines()
        .filter_map(|l| l.strip_prefix(&head))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_read_by_the_nonce_only() {
        let log = "ETCDNET-ROUND-END abc 0\nnode text ETCDNET-ROUND-END abc 9\nETCDNET-ROUND-END xyz 7\nETCDNET-ROUND-END abc 1\n";
        assert_eq!(last_round(log, "abc"), Some(1));
        assert_eq!(last_round(log, "abd"), None);
    }

    #[test]
    fn the_kept_pod_runs_rounds_under_its_lease() {
        let pod = Pod::default();
        let mut pod = pod;
        pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![Default::default()],
            ..Default::default()
        });
        let pod = kept_pod(pod, Duration::from_secs(30), Duration::from_secs(455));
        let spec = pod.spec.unwrap();
        assert_eq!(spec.active_deadline_seconds, Some(455));
        let env = spec.containers[0].env.clone().unwrap();
        assert_eq!(env[0].name, ROUNDS_ENV);
        assert_eq!(env[0].value.as_deref(), Some("30"));
    }
}
