//! The find stage: from a vSphere Namespace (and a cluster name) to each cluster's control
//! plane, as the Supervisor sees it.
//!
//! - [`discovery`]: one request says this is a Supervisor and which versions it prefers
//!   (vm-operator v1alpha1..v1alpha5, CAPI v1beta1/v1beta2); versions are never hard-coded.
//! - [`inventory`]: the objects read (one cluster's, or one list of each kind per namespace for
//!   many clusters), and the pure step from them to [`ClusterFacts`];
//! - [`extract`] (per-version field reading), [`join`] (Machines with VMs), [`targets`] (at
//!   most the KCP's replicas plus a surplus of them) and [`rollout`] (a Machine's rollout
//!   phase), all pure.
//! - [`network`]: the cluster's NSX/network objects, read only when the Supervisor serves an
//!   NSX group, and what they say NSX failed to realize (pure).

pub mod address;
pub mod discovery;
pub mod extract;
pub mod facts;
pub mod inventory;
pub mod join;
pub mod network;
pub mod rollout;
#[cfg(test)]
mod rollout_tests;
pub mod targets;

use crate::connect::Connection;
use crate::error::Result;
pub use discovery::{SupervisorApis, CAPI_GROUP, CONTROLPLANE_GROUP, VMOPERATOR_GROUP};
pub use facts::*;
pub use inventory::{Inventory, Scope};

/// Discovery, with the first request's failure explained: an unreachable Supervisor shows here,
/// so the error says which server it was.
pub async fn apis(conn: &Connection) -> Result<SupervisorApis> {
    discovery::discover(&conn.client, &conn.context)
        .await
        .map_err(|e| {
            e.with_unreachable_hint(|| {
                format!(
                    "is the Supervisor API at {} reachable, and the login still valid? try: kubectl --context {} get ns",
                    conn.server, conn.context
                )
            })
        })
}

/// The find stage for one cluster, as the commands use it: discovery, then the cluster's
/// objects in the connection's namespace, then its facts. Also returns the inventory (the
/// objects the facts came from, for the evidence bundle).
pub async fn walk(conn: &Connection, cluster: &str) -> Result<(ClusterFacts, Inventory)> {
    let apis = apis(conn).await?;
    let scope = Scope {
        context: conn.context.clone(),
        namespace: conn.namespace.clone(),
    };
    let inventory = Inventory::of_cluster(&conn.client, &apis, &scope, cluster).await?;
    let facts = inventory.facts(&conn.context, cluster)?;
    Ok((facts, inventory))
}
