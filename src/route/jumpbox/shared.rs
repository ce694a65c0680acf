//! `-A` and `--all`: one jumpbox per vSphere Namespace, not one per cluster. A jumpbox is a
//! vSphere Pod, a small VM of its own whose start (the image pulled by the ESXi host, the VM
//! booted) is the slowest part of a dark cluster's diagnosis; the clusters of one namespace
//! share it.
//!
//! The many-cluster round plans every cluster first (workload check, route, targets), then
//! gives the clusters of one namespace that take the jumpbox one [`NamespaceJumpbox`]: each
//! cluster's `<cluster>-ssh` secret mounted at its own path, each VM given the number of its own
//! cluster's key (the script offers it that key alone). The first of those clusters to probe
//! starts the pod's run for all of them; the others take their sections of the same log, so no
//! cluster waits for another to be planned or started (no wait under `--max-concurrent`).
//!
//! The pod's run belongs to the namespace, not to the cluster that started it: it is one shared
//! future that every cluster waiting for it drives, so a cluster cut at its own `--timeout` (or
//! its diagnosis' bound) stops waiting without stopping the run for the others. Were the run
//! that cluster's, the next cluster would start it again under the same pod name, while the
//! first pod still stood: a 409 AlreadyExists. The run is bounded by the longest of the
//! clusters' times; each cluster waits for it within its own.
//!
//! Under `--watch` the namespace's jumpbox is kept across the rounds ([`super::keeper`]):
//! one per namespace, even for one cluster, so that a cluster joining or leaving between rounds
//! changes the pod only when its keys must.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};

use super::keeper::{JumpboxKeeper, PodLog, Shape};
use super::spec::{keyed_pod, log_limit, namespace_pod_name, new_nonce, DRY_RUN_NONCE};
use super::{addressed, JumpboxSettings};
use crate::probe::{ReachError, ReachErrorKind};
use crate::route::lifecycle::{self, PodApi};
use crate::route::{Address, Run, Target};
use k8s_openapi::api::core::v1::Pod;

/// What each cluster may wait past its own bound for the pod's run: the run reads a finished
/// pod's log after its bound (at least 10 s, `lifecycle`'s floor) before it answers.
const LOG_READ_GRACE: Duration = Duration::from_secs(12);

/// The run of the namespace's pod, shared by every cluster that waits for it.
type PodRun = Shared<BoxFuture<'static, Result<Arc<PodLog>, ReachError>>>;

/// The one jumpbox of a vSphere Namespace's clusters.
pub struct NamespaceJumpbox {
    /// What the clusters share (namespace, image, basics, ssh settings): the first one's, its
    /// deadline the longest of theirs.
    settings: JumpboxSettings,
    /// The clusters, in key order: cluster `n`'s key is the pod's key `n`.
    clusters: Vec<String>,
    /// Every VM with its cluster's number, cluster by cluster, each cluster's in its targets'
    /// order: the pod's sections.
    vms: Vec<(usize, Address)>,
    nonce: String,
    /// The longest of the clusters' bounds: the pod's run's.
    bound: Duration,
    /// `--watch`: the keeper whose kept pod this round takes.
    keeper: Option<Arc<JumpboxKeeper>>,
    /// The pod's run, started by the first cluster that asks, awaited by each.
    run: OnceLock<PodRun>,
}

impl std::fmt::Debug for NamespaceJumpbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceJumpbox")
            .field("namespace", &self.settings.namespace)
            .field("clusters", &self.clusters)
            .finish_non_exhaustive()
    }
}

/// Which clusters share a jumpbox: those of one vSphere Namespace, in the order given, as
/// indexes into `namespaces` (the clusters' namespaces); only namespaces with `least` or more
/// (2 for one round: one cluster keeps its own jumpbox, named after it; 1 under `--watch`, whose
/// kept jumpbox is the namespace's whatever joins it later).
pub(crate) fn groups(namespaces: &[&str], least: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        match out.iter_mut().find(|(n, _)| n == ns) {
            Some((_, members)) => members.push(i),
            None => out.push((ns, vec![i])),
        }
    }
    out.into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.len() >= least.max(1))
        .collect()
}

impl NamespaceJumpbox {
    /// One jumpbox for `members` (each cluster's settings and targets; all of one namespace),
    /// its run bounded by `bound` (the longest of theirs), or None when there is nothing to
    /// share (fewer than two with an address; one, under `--watch`) or no nonce could be drawn
    /// (each cluster then runs its own, which says why).
    pub(crate) fn new(
        members: &[(&JumpboxSettings, &[Target])],
        bound: Duration,
    ) -> Option<Arc<NamespaceJumpbox>> {
        let members: Vec<&(&JumpboxSettings, &[Target])> = members
            .iter()
            .filter(|(_, t)| addressed(t).next().is_some())
            .collect();
        let first = members.first()?;
        let keeper = first.0.keeper.clone();
        if members.len() < if keeper.is_some() { 1 } else { 2 } {
            return None;
        }
        let mut settings = first.0.clone();
        settings.keeper = None;
        settings.shared = None;
        settings.basics.deadline = members
            .iter()
            .map(|(s, _)| s.basics.deadline)
            .max()
            .unwrap_or(settings.basics.deadline);
        let clusters = members.iter().map(|(s, _)| s.cluster.clone()).collect();
        let vms = members
            .iter()
            .enumerate()
            .flat_map(|(n, (_, t))| addressed(t).map(move |(_, a)| (n, a.clone())))
            .collect();
        Some(Arc::new(NamespaceJumpbox {
            settings,
            clusters,
            vms,
            nonce: new_nonce()?,
            bound,
            keeper,
            run: OnceLock::new(),
        }))
    }

    /// The cluster's number in this jumpbox (its key's), if it is one of its clusters.
    pub fn member(&self, cluster: &str) -> Option<usize> {
        self.clusters.iter().position(|c| c == cluster)
    }

    fn pod(&self, nonce: &str) -> Pod {
        let clusters: Vec<&str> = self.clusters.iter().map(String::as_str).collect();
        let vms: Vec<(usize, &Address)> = self.vms.iter().map(|(n, a)| (*n, a)).collect();
        keyed_pod(
            namespace_pod_name(&self.settings.namespace, &self.settings.basics.run_id),
            &clusters,
            &vms,
            nonce,
            &self.settings,
        )
    }

    /// `--dry-run`: the one pod (shown once, for the namespace's first cluster).
    pub fn would_create(&self) -> Pod {
        self.pod(DRY_RUN_NONCE)
    }

    /// How many VMs the pod has sections for.
    #[cfg(test)]
    pub fn vm_count(&self) -> usize {
        self.vms.len()
    }

    /// The pod's shape: where each cluster's sections are.
    pub(crate) fn shape(&self) -> Shape {
        let clusters: Vec<&str> = self.clusters.iter().map(String::as_str).collect();
        Shape::of(&clusters, &self.pod(DRY_RUN_NONCE))
    }

    /// The pod's log: its run started by the first cluster that asks (with its run's tracker
    /// and `--keep-pods`; under `--watch`, a round of the kept pod), awaited by each within its
    /// own bound. A cluster that stops waiting (its bound, its diagnosis cut) leaves the run
    /// to the others.
    pub(crate) async fn log(
        self: &Arc<Self>,
        api: &PodApi,
        run: &Run<'_>,
    ) -> Result<Arc<PodLog>, ReachError> {
        let shared = self.run.get_or_init(|| self.start(api, run)).clone();
        let wait = run.bound + LOG_READ_GRACE;
        match tokio::time::timeout(wait, shared).await {
            Ok(result) => result,
            Err(_) => Err(ReachError {
                kind: ReachErrorKind::Timeout,
                message: format!(
                    "the jumpbox of vSphere Namespace {} gave this cluster no log within its {}s (it goes on for the namespace's other clusters); raise --timeout",
                    self.settings.namespace,
                    wait.as_secs()
                ),
            }),
        }
    }

    /// The pod's run, owning all it needs: no cluster's diagnosis holds it.
    fn start(self: &Arc<Self>, api: &PodApi, run: &Run<'_>) -> PodRun {
        let (me, api, tracker, keep) = (self.clone(), api.clone(), run.tracker.clone(), run.keep);
        async move {
            let shape = me.shape();
            if let Some(keeper) = &me.keeper {
                let slot = (me.settings.namespace.as_str(), "");
                return keeper
                    .round(&api, slot, shape, |nonce| me.pod(nonce), me.bound)
                    .await
                    .map(Arc::new);
            }
            let pod = me.pod(&me.nonce);
            lifecycle::run_with_log_limit(
                &api,
                &pod,
                &tracker,
                me.bound,
                keep,
                log_limit(me.vms.len()),
            )
            .await
            .map(|done| {
                Arc::new(PodLog {
                    log: done.log,
                    nonce: me.nonce.clone(),
                    shape,
                })
            })
            .map_err(|f| {
                lifecycle::reach_error(f, &me.settings.namespace, lifecycle::PodRoute::Jumpbox)
            })
        }
        .boxed()
        .shared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_are_grouped_by_namespace_only_when_they_share_it() {
        assert_eq!(
            groups(&["ns-a", "ns-b", "ns-a", "ns-c", "ns-b", "ns-a"], 2),
            [vec![0, 2, 5], vec![1, 4]]
        );
        assert!(groups(&["ns-a", "ns-b"], 2).is_empty());
        assert!(groups(&[], 2).is_empty());
        // --watch: every namespace's clusters, one or more.
        assert_eq!(groups(&["ns-a", "ns-b", "ns-a"], 1), [vec![0, 2], vec![1]]);
    }
}
