//! The find stage: from a vSphere Namespace (and a cluster name) to each cluster's control
//! plane, as the Supervisor sees it.
//!
//! - [`kinds`]: the table of every kind read (group, resource, scope, selector, version,
//!   whether optional), pure;
//! - [`discovery`]: one request says this is a Supervisor and which versions it prefers
//!   (vm-operator v1alpha1..v1alpha6, CAPI v1beta1/v1beta2); versions are never hard-coded.
//! - [`read`]: every request to the Supervisor, over the table (one cluster's objects, or one
//!   list of each kind per namespace for many clusters); the only I/O here;
//! - [`inventory`]: the objects read, per kind, and the pure step from them to
//!   [`ClusterFacts`]; the evidence bundle's objects to and from them;
//! - [`extract`] (per-version field reading), [`join`] (Machines with VMs), [`targets`] (at
//!   most the KCP's replicas plus a surplus of them) and [`rollout`] (a Machine's rollout
//!   phase), all pure.
//! - [`remediation`]: what could replace the control-plane Machines (MachineHealthChecks,
//!   Machines marked for remediation, the KCP's remediation, a paused Cluster), pure.
//! - [`network`]: the cluster's network objects (the table's NSX rows, read only when the
//!   Supervisor serves an NSX group), sliced per cluster by uid (pure).
//! - [`stack`]: the networking stack (NSX, VPC, VDS) discovery shows, pure.

pub(crate) mod address;
pub(crate) mod discovery;
pub(crate) mod extract;
pub(crate) mod facts;
pub(crate) mod inventory;
pub(crate) mod join;
pub mod kinds;
pub(crate) mod network;
pub(crate) mod read;
#[cfg(test)]
mod read_tests;
pub(crate) mod remediation;
pub(crate) mod rollout;
#[cfg(test)]
mod rollout_tests;
pub(crate) mod stack;
pub(crate) mod targets;

use crate::connect::Connection;
use crate::error::Result;
pub(crate) use discovery::SupervisorApis;
pub use facts::*;
pub(crate) use inventory::{Inventory, Scope};

/// Discovery, with the first request's failure explained: an unreachable Supervisor shows here,
/// so the error says which server it was.
pub(crate) async fn apis(conn: &Connection) -> Result<SupervisorApis> {
    discovery::discover(&conn.client, &conn.context)
        .await
        .map_err(|e| {
            e.with_unreachable_hint(|| {
                format!(
                    "is the Supervisor API at {} reachable, and the login still valid? try: {}",
                    conn.server,
                    conn.kubectl.run("get ns")
                )
            })
        })
}

/// The find stage for one cluster, as the commands use it: discovery, then the cluster's
/// objects in the connection's namespace, then its facts. Also returns the inventory (the
/// objects the facts came from, for the evidence bundle).
pub(crate) async fn walk(conn: &Connection, cluster: &str) -> Result<(ClusterFacts, Inventory)> {
    let apis = apis(conn).await?;
    let scope = Scope {
        context: conn.context.clone(),
        namespace: conn.namespace.clone(),
        kubectl: conn.kubectl.clone(),
    };
    let inventory = Inventory::of_cluster(&conn.client, &apis, &scope, cluster).await?;
    let mut facts = inventory.facts(&conn.context, cluster)?;
    facts.kubectl = conn.kubectl.clone();
    Ok((facts, inventory))
}
