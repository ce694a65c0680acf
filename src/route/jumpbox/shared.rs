//! `-A` and `--all`: one jumpbox per vSphere Namespace, not one per cluster. A jumpbox is a
//! vSphere Pod, a small VM of its own whose start (the image pulled by the ESXi host, the VM
//! booted) is the slowest part of a dark cluster's diagnosis; the clusters of one namespace
//! share it.
//!
//! The many-cluster round plans every cluster first (workload check, route, targets), then
//! gives the clusters of one namespace that take the jumpbox one [`NamespaceJumpbox`]: each
//! cluster's `<cluster>-ssh` secret mounted at its own path, each VM given the number of its own
//! cluster's key (the script offers it that key alone). The first of those clusters to probe
//! runs the pod for all of them; the others take their sections of the same log, so no cluster
//! waits for another to be planned or started (no wait under `--max-concurrent`).

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::spec::{keyed_pod, log_limit, namespace_pod_name, new_nonce, DRY_RUN_NONCE};
use super::{addressed, JumpboxSettings};
use crate::probe::ReachError;
use crate::route::lifecycle::{self, PodApi};
use crate::route::{Address, Run, Target};
use k8s_openapi::api::core::v1::Pod;

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
    /// The pod's log, read once for all of the clusters (or why it could not be).
    log: OnceCell<Result<String, ReachError>>,
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
/// indexes into `namespaces` (the clusters' namespaces); only namespaces with two or more (one
/// cluster keeps its own jumpbox, named after it).
pub fn groups(namespaces: &[&str]) -> Vec<Vec<usize>> {
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        match out.iter_mut().find(|(n, _)| n == ns) {
            Some((_, members)) => members.push(i),
            None => out.push((ns, vec![i])),
        }
    }
    out.into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.len() > 1)
        .collect()
}

impl NamespaceJumpbox {
    /// One jumpbox for `members` (each cluster's settings and targets; all of one namespace),
    /// or None when there is nothing to share (fewer than two with an address) or no nonce
    /// could be drawn (each cluster then runs its own, which says why).
    pub fn new(members: &[(&JumpboxSettings, &[Target])]) -> Option<Arc<NamespaceJumpbox>> {
        let members: Vec<&(&JumpboxSettings, &[Target])> = members
            .iter()
            .filter(|(_, t)| addressed(t).next().is_some())
            .collect();
        let first = members.first()?;
        if members.len() < 2 {
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
            log: OnceCell::new(),
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

    /// The framing nonce of the pod's log.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// How many VMs the pod has sections for.
    pub fn vm_count(&self) -> usize {
        self.vms.len()
    }

    /// Where cluster `n`'s VMs' sections are among the pod's.
    pub fn sections_of(&self, n: usize) -> std::ops::Range<usize> {
        let start = self.vms.iter().take_while(|(c, _)| *c < n).count();
        let len = self.vms.iter().filter(|(c, _)| *c == n).count();
        start..start + len
    }

    /// The pod's log: made, waited for and read by the first cluster that asks (with its
    /// run's tracker, bound and `--keep-pods`), shared by the others.
    pub async fn log(&self, api: &PodApi, run: &Run<'_>) -> Result<&str, ReachError> {
        let log = self
            .log
            .get_or_init(|| async {
                let pod = self.pod(&self.nonce);
                lifecycle::run_with_log_limit(
                    api,
                    &pod,
                    run.tracker,
                    run.bound,
                    run.keep,
                    log_limit(self.vms.len()),
                )
                .await
                .map(|done| done.log)
                .map_err(|f| {
                    lifecycle::reach_error(
                        f,
                        &self.settings.namespace,
                        lifecycle::PodRoute::Jumpbox,
                    )
                })
            })
            .await;
        log.as_ref().map(String::as_str).map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_are_grouped_by_namespace_only_when_they_share_it() {
        assert_eq!(
            groups(&["ns-a", "ns-b", "ns-a", "ns-c", "ns-b", "ns-a"]),
            [vec![0, 2, 5], vec![1, 4]]
        );
        assert!(groups(&["ns-a", "ns-b"]).is_empty());
        assert!(groups(&[]).is_empty());
    }
}
