//! `--all` and `-A`: the same command on many clusters.
//!
//! The Supervisor is read once per namespace (or once for all of them, [`Inventory`]), not once
//! per cluster; the clusters are then worked on concurrently, at most `--max-concurrent` at
//! once, and each cluster's failure (403, a missing secret, an API down, no route) is that
//! cluster's row, never the end of the run.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;

use crate::connect::Connection;
use crate::error::{Error, Result};
use crate::report::{ClusterFailure, ListItem};
use crate::supervisor::{self, ClusterFacts, Inventory};

/// Which clusters a command works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Which {
    /// One, by name, in the connection's namespace.
    One(String),
    /// `--all`: every cluster of the connection's namespace.
    Namespace,
    /// `-A`: every cluster of every namespace the user can see.
    AllNamespaces,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    pub which: Which,
    /// Clusters worked on at once.
    pub max_concurrent: usize,
    /// Only the summary table.
    pub summary: bool,
}

/// One cluster to work on: its facts and the objects they came from, or why they could not be
/// had.
pub(crate) struct Found {
    pub namespace: String,
    pub cluster: String,
    pub facts: std::result::Result<(ClusterFacts, Arc<Inventory>), ClusterFailure>,
}

/// The clusters of a many-cluster selection, read with one list of each kind per namespace (or
/// per Supervisor). An error that leaves no cluster to show (not a Supervisor, the cluster list
/// refused) ends the run; after that, every failure is a cluster's.
pub(crate) async fn find(conn: &Connection, which: &Which) -> Result<Vec<Found>> {
    let inventories = match which {
        // One cluster is read by name (its own walk does discovery).
        Which::One(cluster) => {
            let (facts, inventory) = supervisor::walk(conn, cluster).await?;
            return Ok(vec![Found {
                namespace: facts.namespace.clone(),
                cluster: cluster.clone(),
                facts: Ok((facts, Arc::new(inventory))),
            }]);
        }
        Which::Namespace => {
            let apis = supervisor::apis(conn).await?;
            vec![Inventory::of_namespace(&conn.client, &apis, &conn.namespace).await?]
        }
        Which::AllNamespaces => {
            let apis = supervisor::apis(conn).await?;
            Inventory::of_all_namespaces(&conn.client, &apis).await?
        }
    };
    let mut found = Vec::new();
    for inventory in inventories.into_iter().map(Arc::new) {
        for cluster in inventory.cluster_names() {
            let facts = inventory
                .facts(&conn.context, &cluster)
                .map(|f| {
                    let f = ClusterFacts {
                        kubectl: conn.kubectl.clone(),
                        ..f
                    };
                    (f, inventory.clone())
                })
                .map_err(|e| {
                    let e = e.with_kubectl_flags(conn.kubectl.flags());
                    ClusterFailure::new(&inventory.namespace, &cluster, &e)
                });
            found.push(Found {
                namespace: inventory.namespace.clone(),
                cluster,
                facts,
            });
        }
    }
    Ok(found)
}

/// Runs `work` on every found cluster, at most `max_concurrent` at once; each cluster's error is
/// its [`ListItem::Failed`] row. An interruption is not a cluster's failure: it ends the run.
pub(crate) async fn each<T, F, Fut>(
    found: Vec<Found>,
    max_concurrent: usize,
    work: F,
) -> Result<Vec<ListItem<T>>>
where
    F: Fn(ClusterFacts, Arc<Inventory>) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let work = &work;
    let items: Vec<Result<ListItem<T>>> = futures::stream::iter(found)
        .map(|f| async move {
            let started = Instant::now();
            match f.facts {
                Err(failure) => Ok(ListItem::Failed(failure)),
                Ok((facts, inventory)) => match work(facts, inventory).await {
                    Ok(report) => Ok(ListItem::Report(report)),
                    Err(e @ Error::Interrupted(_)) => Err(e),
                    Err(e) => Ok(ListItem::Failed(
                        ClusterFailure::new(&f.namespace, &f.cluster, &e).took(started.elapsed()),
                    )),
                },
            }
        })
        .buffer_unordered(max_concurrent.max(1))
        .collect()
        .await;
    items.into_iter().collect()
}

/// Runs `work` on every item that is not yet a failure, at most `max_concurrent` at once, as
/// [`each`] does: each error is its cluster's row (`names` gives its namespace, name and the
/// time its earlier work took), an interruption ends the run.
pub(crate) async fn each_planned<P, T, N, F, Fut>(
    items: Vec<ListItem<P>>,
    max_concurrent: usize,
    names: N,
    work: F,
) -> Result<Vec<ListItem<T>>>
where
    N: Fn(&P) -> (String, String, std::time::Duration),
    F: Fn(P) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let (work, names) = (&work, &names);
    let items: Vec<Result<ListItem<T>>> = futures::stream::iter(items)
        .map(|item| async move {
            match item {
                ListItem::Failed(f) => Ok(ListItem::Failed(f)),
                ListItem::Report(p) => {
                    let (namespace, cluster, before) = names(&p);
                    let started = Instant::now();
                    match work(p).await {
                        Ok(t) => Ok(ListItem::Report(t)),
                        Err(e @ Error::Interrupted(_)) => Err(e),
                        Err(e) => Ok(ListItem::Failed(
                            ClusterFailure::new(&namespace, &cluster, &e)
                                .took(before + started.elapsed()),
                        )),
                    }
                }
            }
        })
        .buffer_unordered(max_concurrent.max(1))
        .collect()
        .await;
    items.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::supervisor::discovery;

    fn inventory() -> Arc<Inventory> {
        let answer = serde_json::json!({"kind": "APIGroupList", "groups": [
            {"name": "vmoperator.vmware.com", "preferredVersion": {"version": "v1alpha3"}},
            {"name": "cluster.x-k8s.io", "preferredVersion": {"version": "v1beta1"}}]});
        Arc::new(Inventory {
            namespace: "ns".into(),
            apis: discovery::from_answer(&answer, "sv").unwrap(),
            objects: Default::default(),
            unread: Default::default(),
            forbidden: Default::default(),
            network: None,
        })
    }

    fn found(name: &str) -> Found {
        let mut facts = crate::testing::facts(3, 3, Vec::new());
        facts.cluster.name = name.into();
        Found {
            namespace: "ns".into(),
            cluster: name.into(),
            facts: Ok((facts, inventory())),
        }
    }

    #[tokio::test]
    async fn at_most_max_concurrent_and_each_failure_is_a_row() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let mut all: Vec<Found> = (0..9).map(|i| found(&format!("c{i}"))).collect();
        all.push(Found {
            namespace: "ns".into(),
            cluster: "gone".into(),
            facts: Err(ClusterFailure::new(
                "ns",
                "gone",
                &Error::config("no such thing"),
            )),
        });
        let items = each(all, 3, |facts, _| {
            let (running, most) = (&running, &most);
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                if facts.cluster.name == "c4" {
                    return Err(Error::config("secret \"c4-ssh\" not found"));
                }
                Ok(facts.cluster.name)
            }
        })
        .await
        .unwrap();
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(items.len(), 10);
        let failed: Vec<&ClusterFailure> = items
            .iter()
            .filter_map(|i| match i {
                ListItem::Failed(f) => Some(f),
                ListItem::Report(_) => None,
            })
            .collect();
        let mut names: Vec<&str> = failed.iter().map(|f| f.cluster.as_str()).collect();
        names.sort();
        assert_eq!(names, ["c4", "gone"]);
        assert!(failed
            .iter()
            .all(|f| f.exit_code == 2 && f.kind == "ClusterError"));
    }

    #[tokio::test]
    async fn an_interruption_ends_the_run_not_a_row() {
        let r = each(vec![found("a"), found("b")], 4, |_, _| async {
            Err::<(), _>(Error::Interrupted(crate::signal::Signal::Terminate))
        })
        .await;
        assert!(matches!(r, Err(Error::Interrupted(_))));
    }
}
