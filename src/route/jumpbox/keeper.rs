//! `--watch` keeps one jumpbox across its rounds: one per cluster (one cluster watched), or one
//! per vSphere Namespace (`--all`, `-A`: the namespace's jumpbox of [`super::shared`], kept). On
//! a real Supervisor the jumpbox's start (the ESXi host pulls the image, the vSphere Pod's own VM
//! boots: tens of seconds) is the slowest part of a round, so it is paid once, not every round.
//!
//! What a kept pod was made for is its [`Shape`]: its clusters (one key each) and their VMs. A
//! round takes the kept pod as long as every cluster it asks for is in it with the same VMs,
//! each cluster reading its own sections only: a cluster that left (deleted, its workload API
//! back, its planning failed) costs no new start, and is said once. A cluster that joined (its
//! key is not mounted), a cluster whose VMs changed or other probe settings make a new pod, and
//! that is said too ([`JumpboxKeeper::take_notes`]). A kept pod that no round took is deleted
//! when the watch round ends ([`JumpboxKeeper::end_round`]).
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
use super::spec::{log_limit, new_nonce, ARGV_KEYS, ARGV_KEY_OF_VMS, ARGV_NONCE, ARGV_VMS};
use crate::probe::{ReachError, ReachErrorKind};
use crate::route::lifecycle::{
    self, pod_state, unplaced, PodApi, PodFailure, PodState, PodTracker, NO_HOST_AFTER,
};

/// How many rounds one kept pod's lease covers before a new one replaces it.
pub(crate) const LEASE_ROUNDS: u32 = 10;
/// How many rounds at their largest the kept pod's log may hold before a new pod replaces it
/// (each round's sections are bounded as a one-shot pod's: [`log_limit`]).
const LOG_ROUNDS: u64 = 4;
/// How often the kept pod's status and log are read while a round is awaited.
const POLL: Duration = Duration::from_millis(500);
/// What a round needs past its bound before the pod's deadline, or a new pod is made first.
const MARGIN: Duration = Duration::from_secs(15);
/// The env var that makes `jumpbox.sh` run rounds.
const ROUNDS_ENV: &str = "ETCDNET_ROUNDS_EVERY";

/// One VM of a pod: its section number and its part of the command (IP, remote command).
type Vm = (usize, Vec<String>);

/// What a jumpbox pod is for, read from its command: its clusters in key order, each with its
/// VMs (their section numbers and their part of the command: IP and remote command), and the
/// rest of the command (the user, timeouts, options, the probe script) without the nonce and
/// the key numbering. Two pods with equal shapes probe the same VMs the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    clusters: Vec<(String, Vec<Vm>)>,
    rest: Vec<String>,
    sections: usize,
}

impl Shape {
    /// The shape of `pod` (made by `spec::keyed_pod`), whose keys are `clusters`' in order.
    pub fn of(clusters: &[&str], pod: &Pod) -> Shape {
        let argv = command_of(pod);
        let keys: Vec<usize> = argv
            .get(ARGV_KEY_OF_VMS)
            .map(|k| {
                k.split_whitespace()
                    .filter_map(|n| n.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let pairs: Vec<&[String]> = argv.get(ARGV_VMS..).unwrap_or_default().chunks(2).collect();
        let mut of: Vec<(String, Vec<Vm>)> = clusters
            .iter()
            .map(|c| (c.to_string(), Vec::new()))
            .collect();
        for (i, (pair, key)) in pairs.iter().zip(&keys).enumerate() {
            if let Some((_, vms)) = of.get_mut(*key) {
                vms.push((i, pair.to_vec()));
            }
        }
        let mut rest = argv.get(..ARGV_VMS).unwrap_or_default().to_vec();
        for i in [ARGV_NONCE, ARGV_KEYS, ARGV_KEY_OF_VMS] {
            if let Some(w) = rest.get_mut(i) {
                w.clear();
            }
        }
        Shape {
            clusters: of,
            rest,
            sections: pairs.len(),
        }
    }

    /// How many sections the pod prints per round (one per VM).
    pub fn sections(&self) -> usize {
        self.sections
    }

    /// Cluster `cluster`'s section numbers in the pod's log, if it is one of the pod's.
    pub fn sections_of(&self, cluster: &str) -> Option<Vec<usize>> {
        self.clusters
            .iter()
            .find(|(c, _)| c == cluster)
            .map(|(_, vms)| vms.iter().map(|(i, _)| *i).collect())
    }

    fn clusters(&self) -> impl Iterator<Item = &str> {
        self.clusters.iter().map(|(c, _)| c.as_str())
    }

    /// Why a pod of this shape cannot serve a round that wants `want` (None: it can): a
    /// cluster of `want` it has no key for, or probes other VMs of, or other settings.
    fn unfit_for(&self, want: &Shape) -> Option<String> {
        if self.rest != want.rest {
            return Some("what the VMs are probed with changed".into());
        }
        let vms = |vms: &[Vm]| -> Vec<Vec<String>> { vms.iter().map(|(_, v)| v.clone()).collect() };
        for (cluster, wanted) in &want.clusters {
            match self.clusters.iter().find(|(c, _)| c == cluster) {
                None => {
                    return Some(format!(
                        "cluster {cluster} joined (its key must be mounted)"
                    ))
                }
                Some((_, have)) if vms(have) != vms(wanted) => {
                    return Some(format!("the VMs of cluster {cluster} changed"))
                }
                Some(_) => {}
            }
        }
        None
    }
}

/// One round's log of a jumpbox pod, the nonce of its frames, and the pod's shape (where each
/// cluster's sections are).
#[derive(Debug, Clone)]
pub(crate) struct PodLog {
    pub log: String,
    pub nonce: String,
    pub shape: Shape,
}

/// The kept pod of one cluster, or of one vSphere Namespace's clusters.
struct Live {
    api: PodApi,
    namespace: String,
    name: String,
    nonce: String,
    /// What it probes, and how.
    shape: Shape,
    /// The clusters it holds a key for that a round no longer asked for, already said.
    left: Vec<String>,
    /// When its create went out: a pod no scheduler took is given up on after NO_HOST_AFTER.
    made: Instant,
    /// Taken by a round since the last [`JumpboxKeeper::end_round`].
    used: bool,
    expires: Instant,
    limit: u64,
    /// Its log holds half its limit: replaced before the next round.
    full: bool,
    /// Its entry in the keeper's tracker: untracked once it is deleted.
    ticket: lifecycle::Ticket,
}

type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

/// The jumpboxes `--watch` keeps, one per (vSphere Namespace, cluster), or per vSphere
/// Namespace (the slot's cluster empty: no cluster is named so).
pub struct JumpboxKeeper {
    every: Duration,
    tracker: PodTracker,
    slots: Mutex<HashMap<(String, String), Slot>>,
    /// What the watch tells the admin about its kept pods (replaced, a cluster left, deleted).
    notes: Mutex<Vec<String>>,
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
            notes: Mutex::new(Vec::new()),
        }
    }

    /// The notes gathered since the last call, for the watch to print.
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn note(&self, line: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    /// The end of a watch round: every kept pod that no cluster took in it is deleted (its
    /// clusters left, or now go another route), and said.
    pub async fn end_round(&self) {
        let slots: Vec<Slot> = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for slot in slots {
            let mut live = slot.lock().await;
            match live.as_mut() {
                Some(l) if l.used => l.used = false,
                Some(l) => {
                    self.note(format!(
                        "the kept jumpbox pod {} in vSphere Namespace {} is deleted: no cluster took the jumpbox route in the last round",
                        l.name, l.namespace
                    ));
                    drop_pod(&self.tracker, &mut live).await;
                }
                None => {}
            }
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

    /// One round through the kept pod of `slot` ((vSphere Namespace, cluster), or (namespace,
    /// "") for the namespace's), within `bound`: its log, the nonce of the round's frames and
    /// its shape. The pod is made first if there is none, or it does not fit `want` (the shape
    /// of `build`'s pod), or will not do; `build` makes the pod for a nonce.
    pub(crate) async fn round(
        &self,
        api: &PodApi,
        slot: (&str, &str),
        want: Shape,
        build: impl Fn(&str) -> Pod,
        bound: Duration,
    ) -> Result<PodLog, ReachError> {
        let began = Instant::now();
        let (namespace, _) = slot;
        let slot = self.slot(slot.0, slot.1);
        let mut live = slot.lock().await;
        if let Some(l) = live.as_ref() {
            let unfit = l.shape.unfit_for(&want);
            let stale =
                l.full || l.expires.saturating_duration_since(Instant::now()) < bound + MARGIN;
            if let Some(why) = &unfit {
                self.note(format!(
                    "the kept jumpbox pod {} in vSphere Namespace {} is replaced by a new one (another vSphere Pod start): {why}",
                    l.name, l.namespace
                ));
            }
            if unfit.is_some() || stale {
                drop_pod(&self.tracker, &mut live).await;
            }
        }
        if let Some(l) = live.as_mut() {
            // Clusters it still holds a key for and probes, that this round does not ask for:
            // said once; their sections are not read.
            l.left.retain(|c| want.sections_of(c).is_none());
            let gone: Vec<String> = l
                .shape
                .clusters()
                .filter(|c| want.sections_of(c).is_none() && !l.left.iter().any(|g| g == c))
                .map(str::to_string)
                .collect();
            for c in gone {
                self.note(format!(
                    "cluster {c} no longer takes the kept jumpbox pod {} in vSphere Namespace {}: the pod is kept (a new one would cost another start), its sections for {c} are no longer read, and its key goes with the pod",
                    l.name, l.namespace
                ));
                l.left.push(c);
            }
        }
        let mut before: Option<Option<u64>> = None;
        if live.is_none() {
            *live = Some(self.make(api, namespace, &build, want, bound).await?);
            before = Some(None);
        }
        loop {
            let Some(l) = live.as_mut() else {
                unreachable!("made above")
            };
            l.used = true;
            match self.poll(l).await {
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
                            return Ok(PodLog {
                                log,
                                nonce,
                                shape: l.shape.clone(),
                            });
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

    /// Makes a kept pod: `build`'s pod for a new nonce, running rounds, its deadline the
    /// lease.
    async fn make(
        &self,
        api: &PodApi,
        namespace: &str,
        build: &impl Fn(&str) -> Pod,
        shape: Shape,
        bound: Duration,
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
        let pod = kept_pod(build(&nonce), self.every, lease);
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api = api.clone();
        let made = Instant::now();
        let ticket = lifecycle::create(&api, &pod, &self.tracker)
            .await
            .map_err(|f| lifecycle::reach_error(f, namespace, lifecycle::PodRoute::Jumpbox))?;
        Ok(Live {
            api,
            namespace: namespace.to_string(),
            name,
            nonce,
            limit: log_limit(shape.sections()).saturating_mul(LOG_ROUNDS),
            shape,
            left: Vec::new(),
            made,
            used: true,
            expires: made + lease,
            full: false,
            ticket,
        })
    }

    /// The kept pod now: its log and the last round it ended, not running yet, or a failure
    /// that ends it.
    async fn poll(&self, l: &Live) -> Poll {
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
            // Taken by no scheduler: known within seconds, as the one-shot pod's wait knows it.
            PodState::Waiting if unplaced(&pod) && l.made.elapsed() >= NO_HOST_AFTER => {
                return failed(PodFailure::NoHost(NO_HOST_AFTER));
            }
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
        if let Err(e) = split_log(&log, &l.nonce, l.shape.sections()) {
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
