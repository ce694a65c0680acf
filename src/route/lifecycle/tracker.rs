//! The tracker: every pod a run has created (or may have), until it is deleted, so that no pod
//! is left behind whatever ends the run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use tracing::debug;

use crate::error::KubeErrorExt;
use crate::labels::{managed_selector, RUN_ID};

/// How long after the first delete-collection of a run's unsettled creates the second one goes
/// out: a create the API server was still processing when the run ended is stored within it,
/// unless the server takes longer than this to admit a pod (a slow admission webhook), which is
/// then `kubectl etcdnet cleanup`'s.
pub(crate) const SWEEP_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// Which API server a route's pods are created behind: what a kept pod's note must name, since
/// each is removed in its own place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// The Supervisor, in the cluster's vSphere Namespace (the jumpbox).
    Supervisor,
    /// The workload cluster itself (the pod route's probes).
    Workload,
}

/// The pods of one namespace of one cluster, as one route's session creates them: the API, the
/// server it is on, and an identity (an `Api` has none to compare), so that a run's sweep asks
/// each place once.
#[derive(Clone)]
pub(crate) struct PodApi {
    api: Api<Pod>,
    host: Host,
    place: u64,
}

impl PodApi {
    pub fn new(api: Api<Pod>, host: Host) -> PodApi {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        PodApi {
            api,
            host,
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

/// A pod we created, or may have: the API it lives behind (its namespace and cluster), its
/// name, the server it is on and the cluster whose diagnosis made it, under the id of the create
/// that made it. Two entries may carry the same name; each is removed only by its own create's
/// outcome.
struct Tracked {
    ticket: Ticket,
    api: Api<Pod>,
    name: String,
    host: Host,
    cluster: Option<Arc<Cluster>>,
}

/// The cluster whose diagnosis created a pod: its vSphere Namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cluster {
    pub namespace: String,
    pub name: String,
}

/// A pod still alive when the run ends (`--keep-pods`): enough to say where to remove it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    pub name: String,
    /// The pod's namespace, on its [`Host`].
    pub namespace: String,
    pub host: Host,
    /// The cluster whose diagnosis created it; None when the tracker was not told
    /// ([`PodTracker::for_cluster`]).
    pub cluster: Option<Cluster>,
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
pub(crate) struct Ticket(u64);

#[derive(Default)]
struct Pods {
    next: u64,
    tracked: Vec<Tracked>,
    unsettled: Vec<Unsettled>,
}

/// Every pod this run has created (or may have) and not yet deleted.
#[derive(Clone, Default)]
pub(crate) struct PodTracker {
    pods: Arc<Mutex<Pods>>,
    /// The cluster this handle tracks for (one run may diagnose many, into one tracker).
    cluster: Option<Arc<Cluster>>,
}

impl PodTracker {
    /// The same tracker, its pods from now on marked as created for `name` in vSphere Namespace
    /// `namespace`.
    pub fn for_cluster(&self, namespace: &str, name: &str) -> PodTracker {
        PodTracker {
            pods: Arc::clone(&self.pods),
            cluster: Some(Arc::new(Cluster {
                namespace: namespace.to_string(),
                name: name.to_string(),
            })),
        }
    }

    /// Records one create of `pod`, before its request goes out: its name, and, until its
    /// answer settles it, the run's label to sweep by (a pod without the run-id label has none).
    pub(super) fn track(&self, api: &PodApi, pod: &Pod) -> Ticket {
        let mut pods = self.pods.lock().unwrap();
        pods.next += 1;
        let ticket = Ticket(pods.next);
        pods.tracked.push(Tracked {
            ticket,
            api: (**api).clone(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            host: api.host,
            cluster: self.cluster.clone(),
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
    pub(super) fn settle(&self, ticket: Ticket) {
        self.pods
            .lock()
            .unwrap()
            .unsettled
            .retain(|u| u.ticket != ticket);
    }

    /// Forgets exactly the entry of one create (never another create's pod of the same name).
    pub(super) fn untrack(&self, ticket: Ticket) {
        self.pods
            .lock()
            .unwrap()
            .tracked
            .retain(|t| t.ticket != ticket);
    }

    /// Names of the pods still alive.
    #[cfg(test)]
    pub fn names(&self) -> Vec<String> {
        self.pods
            .lock()
            .unwrap()
            .tracked
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The pods still alive, each with its namespace, host and cluster, in the order created
    /// (for "--keep-pods: remove them with ...").
    pub fn kept(&self) -> Vec<Kept> {
        self.pods
            .lock()
            .unwrap()
            .tracked
            .iter()
            .map(|t| Kept {
                name: t.name.clone(),
                namespace: t.api.namespace().unwrap_or_default().to_string(),
                host: t.host,
                cluster: t.cluster.as_deref().cloned(),
            })
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
