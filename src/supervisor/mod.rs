//! The find stage: from a vSphere Namespace and a cluster name to the cluster's control plane,
//! as the Supervisor sees it. One entry point, [`find`], takes the `kube::Client` and returns
//! [`ClusterFacts`]; the per-version field reading is in [`extract`], the Machine/VM join in
//! [`join`], both pure.
//!
//! Versions are never hard-coded: discovery says which version of each group the server prefers
//! (vm-operator v1alpha1..v1alpha5, CAPI v1beta1/v1beta2), and we read that one.

pub mod extract;
pub mod facts;
pub mod join;

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{ApiGroup, ApiResource, Discovery};
use kube::Client;
use tracing::debug;

use crate::connect::Connection;
use crate::error::{Error, Result};
pub use facts::*;

pub const VMOPERATOR_GROUP: &str = "vmoperator.vmware.com";
pub const CAPI_GROUP: &str = "cluster.x-k8s.io";
pub const CONTROLPLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";

/// The resources we read, at the versions the server prefers.
pub struct SupervisorApis {
    pub virtual_machine: ApiResource,
    pub cluster: ApiResource,
    pub machine: ApiResource,
    discovery: Discovery,
}

/// Where we are: the context's name (for messages) and the namespace to look in.
#[derive(Debug, Clone)]
pub struct Scope {
    pub context: String,
    pub namespace: String,
}

/// Confirms the context is a Supervisor (serves vm-operator and CAPI) and picks the versions.
pub async fn discover(client: &Client, context: &str) -> Result<SupervisorApis> {
    let discovery = Discovery::new(client.clone())
        .filter(&[VMOPERATOR_GROUP, CAPI_GROUP, CONTROLPLANE_GROUP])
        .run()
        .await
        .map_err(|e| Error::kube(format!("API discovery in context {context:?}"), e))?;

    let vm = discovery
        .get(VMOPERATOR_GROUP)
        .and_then(|g| g.recommended_kind("VirtualMachine"));
    let cluster = discovery
        .get(CAPI_GROUP)
        .and_then(|g| g.recommended_kind("Cluster"));
    let machine = discovery
        .get(CAPI_GROUP)
        .and_then(|g| g.recommended_kind("Machine"));
    let mut missing = Vec::new();
    if vm.is_none() {
        missing.push("virtualmachines.vmoperator.vmware.com");
    }
    if cluster.is_none() || machine.is_none() {
        missing.push("clusters/machines.cluster.x-k8s.io");
    }
    match (vm, cluster, machine) {
        (Some((vm, _)), Some((cluster, _)), Some((machine, _))) => Ok(SupervisorApis {
            virtual_machine: vm,
            cluster,
            machine,
            discovery,
        }),
        _ => Err(Error::NotSupervisor {
            context: context.to_string(),
            missing: missing.join(" or "),
        }),
    }
}

impl SupervisorApis {
    /// The resource for a kind in a group, at the server's preferred version of that group.
    fn kind_in(&self, group: &str, kind: &str) -> Option<ApiResource> {
        self.discovery
            .get(group)
            .and_then(|g: &ApiGroup| g.recommended_kind(kind))
            .map(|(ar, _)| ar)
    }
}

/// The find stage as the commands use it: discovery (is this a Supervisor, which versions),
/// then the walk to `cluster`'s control plane in the connection's namespace.
pub async fn walk(conn: &Connection, cluster: &str) -> Result<ClusterFacts> {
    // The first request is where an unreachable Supervisor shows: say which server it was.
    let apis = discover(&conn.client, &conn.context).await.map_err(|e| {
        e.with_unreachable_hint(|| {
            format!(
                "is the Supervisor API at {} reachable, and the login still valid? try: kubectl --context {} get ns",
                conn.server, conn.context
            )
        })
    })?;
    let scope = Scope {
        context: conn.context.clone(),
        namespace: conn.namespace.clone(),
    };
    find(&conn.client, &apis, &scope, cluster).await
}

/// Walks the namespace: Cluster, its control plane (KCP), control-plane Machines and VMs.
pub async fn find(
    client: &Client,
    apis: &SupervisorApis,
    scope: &Scope,
    cluster_name: &str,
) -> Result<ClusterFacts> {
    let ns = scope.namespace.as_str();
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &apis.cluster);
    let cluster = match clusters.get_opt(cluster_name).await {
        Ok(Some(c)) => c,
        Ok(None) => return Err(cluster_not_found(&clusters, scope, cluster_name).await),
        Err(e) => {
            return Err(Error::kube(
                format!("reading Cluster {cluster_name:?} in namespace {ns:?}"),
                e,
            ))
        }
    };
    let cluster_info = ClusterInfo {
        name: cluster_name.to_string(),
        phase: extract::phase(&cluster.data),
        control_plane_endpoint: extract::cluster_endpoint(&cluster.data),
    };

    let (kcp, kcp_missing_reason, control_plane_version) =
        match extract::control_plane_ref(&cluster.data) {
            None => (
                None,
                Some("the Cluster has no spec.controlPlaneRef".to_string()),
                None,
            ),
            Some(r) => match apis.kind_in(&r.group, &r.kind) {
                None => (
                    None,
                    Some(format!(
                        "the server does not serve {} in group {}",
                        r.kind, r.group
                    )),
                    None,
                ),
                Some(ar) => {
                    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
                    match api.get_opt(&r.name).await {
                        Ok(Some(obj)) => (
                            Some(extract::kcp(&r.name, &ar.api_version, &obj.data)),
                            None,
                            Some(ar.api_version.clone()),
                        ),
                        Ok(None) => (
                            None,
                            Some(format!("{} {:?} not found", r.kind, r.name)),
                            Some(ar.api_version.clone()),
                        ),
                        Err(e) => {
                            return Err(Error::kube(
                                format!("reading {} {:?} in namespace {ns:?}", r.kind, r.name),
                                e,
                            ))
                        }
                    }
                }
            },
        };

    let machines = list_machines(client, apis, ns, cluster_name).await?;
    let (vms, vm_labels) = list_vms(client, apis, ns, cluster_name).await?;
    debug!(
        machines = machines.len(),
        vms = vms.len(),
        "control-plane objects found"
    );

    Ok(ClusterFacts {
        context: scope.context.clone(),
        namespace: ns.to_string(),
        cluster: cluster_info,
        apis: ApiVersions {
            virtual_machine: apis.virtual_machine.api_version.clone(),
            cluster: apis.cluster.api_version.clone(),
            machine: apis.machine.api_version.clone(),
            control_plane: control_plane_version,
            vm_labels,
        },
        kcp,
        kcp_missing_reason,
        nodes: join::join(machines, vms),
        endpoint: extract::endpoint(&cluster.data),
    })
}

/// The error for an unknown cluster names the clusters that do exist, so a typo is one glance.
async fn cluster_not_found(clusters: &Api<DynamicObject>, scope: &Scope, name: &str) -> Error {
    let ns = &scope.namespace;
    let existing = match clusters.list(&ListParams::default()).await {
        Ok(list) => {
            let mut names: Vec<String> = list
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .collect();
            names.sort();
            if names.is_empty() {
                format!("there are no clusters in namespace {ns:?}")
            } else {
                format!("clusters in namespace {ns:?}: {}", names.join(", "))
            }
        }
        Err(_) => format!("check the name with: kubectl get clusters -n {ns}"),
    };
    Error::ClusterNotFound {
        name: name.to_string(),
        namespace: ns.to_string(),
        context: scope.context.clone(),
        existing,
    }
}

async fn list_machines(
    client: &Client,
    apis: &SupervisorApis,
    ns: &str,
    cluster: &str,
) -> Result<Vec<MachineInfo>> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &apis.machine);
    // The control-plane label's value may be empty: select on its existence.
    let selector =
        format!("cluster.x-k8s.io/cluster-name={cluster},cluster.x-k8s.io/control-plane");
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| Error::kube(format!("listing Machines in namespace {ns:?}"), e))?;
    Ok(list
        .items
        .iter()
        .map(|m| extract::machine(m.metadata.name.as_deref().unwrap_or_default(), &m.data))
        .collect())
}

/// Control-plane VMs by the `capv.vmware.com/*` labels, falling back to the `capw.vmware.com/*`
/// ones of older Supervisors when the first finds nothing.
async fn list_vms(
    client: &Client,
    apis: &SupervisorApis,
    ns: &str,
    cluster: &str,
) -> Result<(Vec<VmInfo>, Option<VmLabelScheme>)> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &apis.virtual_machine);
    for (scheme, prefix) in [
        (VmLabelScheme::Capv, "capv.vmware.com"),
        (VmLabelScheme::Capw, "capw.vmware.com"),
    ] {
        let selector =
            format!("{prefix}/cluster.name={cluster},{prefix}/cluster.role=controlplane");
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| Error::kube(format!("listing VirtualMachines in namespace {ns:?}"), e))?;
        if !list.items.is_empty() {
            let vms = list.items.iter().map(vm_info).collect();
            return Ok((vms, Some(scheme)));
        }
    }
    Ok((Vec::new(), None))
}

fn vm_info(vm: &DynamicObject) -> VmInfo {
    let owner = vm
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "VSphereMachine")
        .map(|o| o.name.clone());
    VmInfo {
        name: vm.metadata.name.clone().unwrap_or_default(),
        ip: extract::vm_ip(&vm.data),
        power: extract::vm_power(&vm.data),
        class: extract::vm_class(&vm.data),
        owner,
    }
}
