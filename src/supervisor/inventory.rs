//! What was read from the Supervisor, kept as the objects themselves: the Clusters, their
//! control planes (KCPs), the control-plane Machines and VMs of one vSphere Namespace. Reading
//! ([`Inventory::of_cluster`], [`Inventory::of_namespace`], [`Inventory::of_all_namespaces`])
//! is apart from understanding ([`Inventory::facts`], pure), so that
//! - many clusters share one list of each kind per namespace (or one per Supervisor with `-A`),
//!   instead of four requests per cluster;
//! - the evidence bundle stores the objects a verdict was made from ([`Inventory::objects_of`]),
//!   and `analyse` rebuilds the same facts from them offline ([`Inventory::from_objects`]).

use std::collections::{BTreeMap, BTreeSet};

use futures::future::try_join_all;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, ListParams, ObjectList};
use kube::core::{ApiResource, TypeMeta};
use kube::Client;
use serde::Deserialize;
use serde_json::Value;

use super::discovery::SupervisorApis;
use super::facts::*;
use super::network::{self, NetworkObjects, NetworkRead};
use super::{extract, join, rollout, targets};
use crate::error::{Error, Result};

pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// The VM label schemes, newest first: `capv.vmware.com/*`, and the `capw.vmware.com/*` of older
/// Supervisors (used only for a cluster with no VM under the first).
const VM_LABELS: [(VmLabelScheme, &str); 2] = [
    (VmLabelScheme::Capv, "capv.vmware.com"),
    (VmLabelScheme::Capw, "capw.vmware.com"),
];

/// The objects read in one vSphere Namespace.
#[derive(Debug, Clone)]
pub struct Inventory {
    pub namespace: String,
    pub apis: SupervisorApis,
    pub clusters: Vec<DynamicObject>,
    /// The control-plane objects the Clusters reference (KubeadmControlPlane), each with its
    /// resource (list items may carry no apiVersion/kind of their own).
    pub control_planes: Vec<(ApiResource, DynamicObject)>,
    pub machines: Vec<DynamicObject>,
    /// The control-plane VSphereMachines (by the same labels as the Machines; KCP gives its
    /// infrastructure machines both), when the Supervisor serves them.
    pub vsphere_machines: Vec<DynamicObject>,
    pub vms: Vec<DynamicObject>,
    /// The network objects read ([`super::network`]); None when the Supervisor serves no NSX
    /// group (nothing was asked).
    pub network: Option<NetworkRead>,
}

/// Where we are: the context's name (for messages) and the namespace to look in.
#[derive(Debug, Clone)]
pub struct Scope {
    pub context: String,
    pub namespace: String,
}

fn labels(o: &DynamicObject) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    o.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

fn list_error(what: &str, ns: Option<&str>, e: kube::Error) -> Error {
    match ns {
        Some(ns) => Error::kube(format!("listing {what} in namespace {ns:?}"), e),
        None => Error::kube(format!("listing {what} in all namespaces"), e),
    }
}

async fn list(
    client: &Client,
    ar: &ApiResource,
    ns: Option<&str>,
    selector: Option<&str>,
    what: &str,
) -> Result<Vec<DynamicObject>> {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let mut params = ListParams::default();
    if let Some(s) = selector {
        params = params.labels(s);
    }
    let list: ObjectList<DynamicObject> = api
        .list(&params)
        .await
        .map_err(|e| list_error(what, ns, e))?;
    Ok(list.items)
}

impl Inventory {
    /// One cluster, read as directly as the API allows: the Cluster and its KCP by name, its
    /// Machines, VSphereMachines and VMs by label (the `capw` labels only when `capv` finds
    /// none). 5 requests (6 on an old Supervisor; 4 where VSphereMachines are not served). An
    /// unknown cluster is [`Error::ClusterNotFound`], naming the clusters that do exist.
    pub async fn of_cluster(
        client: &Client,
        apis: &SupervisorApis,
        scope: &Scope,
        cluster_name: &str,
    ) -> Result<Inventory> {
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
        let machines_selector =
            format!("{CLUSTER_NAME_LABEL}={cluster_name},{CONTROL_PLANE_LABEL}");
        let (kcp, machines, vsphere_machines, vms, network) = tokio::try_join!(
            control_plane_of(client, apis, ns, &cluster),
            list(
                client,
                &apis.machine,
                Some(ns),
                Some(&machines_selector),
                "Machines"
            ),
            vsphere_machines(client, apis, Some(ns), &machines_selector),
            cluster_vms(client, apis, ns, cluster_name),
            network_read(client, apis, Some(ns)),
        )?;
        Ok(Inventory {
            namespace: ns.to_string(),
            apis: apis.clone(),
            clusters: vec![cluster],
            control_planes: kcp.into_iter().collect(),
            machines,
            vsphere_machines,
            vms,
            network,
        })
    }

    /// Every cluster of one namespace, with one list of each kind for all of them: Clusters,
    /// control-plane Machines, control-plane VMs (`capw` too only when a cluster has no `capv`
    /// VM), and the control-plane objects of each kind referenced. 4 requests (plus one per
    /// further control-plane kind, one for old labels), whatever the number of clusters.
    pub async fn of_namespace(
        client: &Client,
        apis: &SupervisorApis,
        ns: &str,
    ) -> Result<Inventory> {
        Inventory::of_namespace_with(client, apis, ns, None).await
    }

    /// [`Inventory::of_namespace`], with the other namespaces' SecurityPolicies already listed
    /// (`-A` per namespace: one request for them all).
    async fn of_namespace_with(
        client: &Client,
        apis: &SupervisorApis,
        ns: &str,
        others: Option<&network::OthersAnswer>,
    ) -> Result<Inventory> {
        let role = role_selector(VM_LABELS[0].1);
        let (clusters, machines, vsphere_machines, vms, network) = tokio::try_join!(
            list(client, &apis.cluster, Some(ns), None, "Clusters"),
            list(
                client,
                &apis.machine,
                Some(ns),
                Some(CONTROL_PLANE_LABEL),
                "Machines"
            ),
            vsphere_machines(client, apis, Some(ns), CONTROL_PLANE_LABEL),
            list(
                client,
                &apis.virtual_machine,
                Some(ns),
                Some(&role),
                "VirtualMachines"
            ),
            async { Ok(network::read_with(client, apis, Some(ns), others).await) },
        )?;
        let mut inv = Inventory {
            namespace: ns.to_string(),
            apis: apis.clone(),
            clusters,
            control_planes: Vec::new(),
            machines,
            vsphere_machines,
            vms,
            network,
        };
        inv.complete(client, Some(ns)).await?;
        Ok(inv)
    }

    /// Every cluster the user can see: one list of each kind across the Supervisor when the
    /// user may list cluster-wide, else per namespace, over the namespaces the user can list (a
    /// namespace whose Clusters the user may not list is left out: the user cannot see it).
    /// Returns one inventory per namespace that has clusters, by namespace name.
    pub async fn of_all_namespaces(
        client: &Client,
        apis: &SupervisorApis,
    ) -> Result<Vec<Inventory>> {
        match list(client, &apis.cluster, None, None, "Clusters").await {
            Ok(clusters) => {
                let role = role_selector(VM_LABELS[0].1);
                let (machines, vsphere_machines, vms, network) = tokio::try_join!(
                    list(
                        client,
                        &apis.machine,
                        None,
                        Some(CONTROL_PLANE_LABEL),
                        "Machines"
                    ),
                    vsphere_machines(client, apis, None, CONTROL_PLANE_LABEL),
                    list(
                        client,
                        &apis.virtual_machine,
                        None,
                        Some(&role),
                        "VirtualMachines"
                    ),
                    network_read(client, apis, None),
                )?;
                let mut all = Inventory {
                    namespace: String::new(),
                    apis: apis.clone(),
                    clusters,
                    control_planes: Vec::new(),
                    machines,
                    vsphere_machines,
                    vms,
                    network,
                };
                all.complete(client, None).await?;
                Ok(all.split_by_namespace())
            }
            Err(e) if e.is_forbidden() => {
                let namespaces: Api<Namespace> = Api::all(client.clone());
                let list = namespaces
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| list_error("Namespaces", None, e))?;
                let mut names: Vec<String> = list
                    .items
                    .into_iter()
                    .filter_map(|n| n.metadata.name)
                    .collect();
                names.sort();
                // The other namespaces' SecurityPolicies once for every namespace (NCP/T1).
                let others = network::read_others(client, apis).await;
                let others = &others;
                let found = try_join_all(names.iter().map(|ns| async move {
                    match Inventory::of_namespace_with(client, apis, ns, Some(others)).await {
                        Ok(inv) => Ok(Some(inv)),
                        Err(e) if e.is_forbidden() => Ok(None),
                        Err(e) => Err(e),
                    }
                }))
                .await?;
                Ok(found
                    .into_iter()
                    .flatten()
                    .filter(|inv| !inv.clusters.is_empty())
                    .collect())
            }
            Err(e) => Err(e),
        }
    }

    /// The lists that depend on the Clusters: old-label VMs for clusters without new-label
    /// ones, and each referenced control-plane kind.
    async fn complete(&mut self, client: &Client, ns: Option<&str>) -> Result<()> {
        let without_vms = self.clusters.iter().any(|c| {
            let (cns, cname) = (c.metadata.namespace.as_deref(), name(c));
            !self.vms.iter().any(|vm| {
                vm.metadata.namespace.as_deref() == cns
                    && labels(vm).get(&format!("{}/cluster.name", VM_LABELS[0].1))
                        == Some(&cname.to_string())
            })
        });
        let mut kinds: Vec<ApiResource> = Vec::new();
        for ar in self
            .clusters
            .iter()
            .filter_map(|c| extract::control_plane_ref(&c.data))
            .filter_map(|r| self.apis.kind_in(&r.group, &r.kind))
        {
            if !kinds.contains(&ar) {
                kinds.push(ar);
            }
        }
        let apis = self.apis.clone();
        let old_vms = async {
            if without_vms {
                let selector = role_selector(VM_LABELS[1].1);
                list(
                    client,
                    &apis.virtual_machine,
                    ns,
                    Some(&selector),
                    "VirtualMachines",
                )
                .await
            } else {
                Ok(Vec::new())
            }
        };
        let control_planes = try_join_all(kinds.iter().map(|ar| async move {
            let what = format!("{}s", ar.kind);
            list(client, ar, ns, None, &what).await.map(|items| {
                items
                    .into_iter()
                    .map(|o| (ar.clone(), o))
                    .collect::<Vec<_>>()
            })
        }));
        let (old_vms, control_planes) = tokio::try_join!(old_vms, control_planes)?;
        self.vms.extend(old_vms);
        self.control_planes = control_planes.into_iter().flatten().collect();
        Ok(())
    }

    /// A cross-namespace inventory, one per namespace that has clusters.
    fn split_by_namespace(self) -> Vec<Inventory> {
        let namespaces: BTreeSet<String> = self
            .clusters
            .iter()
            .filter_map(|c| c.metadata.namespace.clone())
            .collect();
        let in_ns = |o: &DynamicObject, ns: &str| o.metadata.namespace.as_deref() == Some(ns);
        namespaces
            .into_iter()
            .map(|ns| Inventory {
                clusters: self
                    .clusters
                    .iter()
                    .filter(|o| in_ns(o, &ns))
                    .cloned()
                    .collect(),
                control_planes: self
                    .control_planes
                    .iter()
                    .filter(|(_, o)| in_ns(o, &ns))
                    .cloned()
                    .collect(),
                machines: self
                    .machines
                    .iter()
                    .filter(|o| in_ns(o, &ns))
                    .cloned()
                    .collect(),
                vsphere_machines: self
                    .vsphere_machines
                    .iter()
                    .filter(|o| in_ns(o, &ns))
                    .cloned()
                    .collect(),
                vms: self.vms.iter().filter(|o| in_ns(o, &ns)).cloned().collect(),
                network: self.network.as_ref().map(|n| n.in_namespace(&ns)),
                apis: self.apis.clone(),
                namespace: ns,
            })
            .collect()
    }

    /// The clusters' names, sorted.
    pub fn cluster_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.clusters.iter().map(|c| name(c).to_string()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// What the Supervisor says about `cluster_name`'s control plane (pure).
    pub fn facts(&self, context: &str, cluster_name: &str) -> Result<ClusterFacts> {
        let ns = self.namespace.as_str();
        let Some(cluster) = self.clusters.iter().find(|c| name(c) == cluster_name) else {
            let names = self.cluster_names();
            return Err(Error::ClusterNotFound {
                name: cluster_name.to_string(),
                namespace: ns.to_string(),
                context: context.to_string(),
                existing: existing(ns, &names),
            });
        };
        let control_plane = self.control_plane_of(cluster);
        let kcp_uid = match &control_plane {
            Ok((_, _, obj)) => obj
                .and_then(|o| o.metadata.uid.clone())
                .filter(|u| !u.is_empty()),
            Err(_) => None,
        };
        let machine_objects: Vec<&DynamicObject> = self.machines_of(cluster_name).collect();
        let (kcp, kcp_missing_reason, control_plane_version) = match control_plane.clone() {
            Err(why) => (None, Some(why), None),
            Ok((ar, kcp_name, Some(obj))) => (
                Some(extract::kcp(&kcp_name, &ar.api_version, &obj.data)),
                None,
                Some(ar.api_version),
            ),
            Ok((ar, kcp_name, None)) => (
                None,
                Some(format!("{} {kcp_name:?} not found", ar.kind)),
                Some(ar.api_version),
            ),
        };
        let machines = machine_objects
            .iter()
            .map(|m| join::machine_object(m))
            .collect();
        let (vms, vm_labels) = self.vms_of(cluster_name);
        let vms = vms.into_iter().map(join::vm_object).collect();
        let anchors = join::Anchors {
            kcp_uid,
            vsphere_machines: self.apis.vsphere_machine.as_ref().map(|_| {
                self.vsphere_machines_of(cluster_name)
                    .filter_map(|o| Some((name(o).to_string(), o.metadata.uid.clone()?)))
                    .collect()
            }),
        };
        // At most the KCP's replicas plus a surplus go on; the rest are named, never probed.
        let (mut nodes, machines_beyond_replicas) = targets::select(
            join::join(&anchors, machines, vms),
            &machine_objects,
            kcp.as_ref().and_then(|k| k.desired),
        );
        // A rollout phase needs the Machine's metadata and its VM: known once joined.
        rollout::fill(&mut nodes, &machine_objects);
        Ok(ClusterFacts {
            context: context.to_string(),
            namespace: ns.to_string(),
            cluster: ClusterInfo {
                name: cluster_name.to_string(),
                phase: extract::phase(&cluster.data),
                control_plane_endpoint: extract::cluster_endpoint(&cluster.data),
            },
            apis: ApiVersions {
                virtual_machine: self.apis.virtual_machine.api_version.clone(),
                cluster: self.apis.cluster.api_version.clone(),
                machine: self.apis.machine.api_version.clone(),
                control_plane: control_plane_version,
                vm_labels,
            },
            kcp,
            kcp_missing_reason,
            nodes,
            machines_beyond_replicas,
            endpoint: extract::endpoint(&cluster.data),
        })
    }

    /// The control-plane object `cluster` references: its resource, its name, and the object when
    /// it was read; or why there is none to look for (no reference, a kind not served).
    fn control_plane_of(
        &self,
        cluster: &DynamicObject,
    ) -> std::result::Result<(ApiResource, String, Option<&DynamicObject>), String> {
        let r = extract::control_plane_ref(&cluster.data)
            .ok_or("the Cluster has no spec.controlPlaneRef")?;
        let ar = self
            .apis
            .kind_in(&r.group, &r.kind)
            .ok_or_else(|| format!("the server does not serve {} in group {}", r.kind, r.group))?;
        let obj = self
            .control_planes
            .iter()
            .find(|(a, o)| a.kind == ar.kind && a.group == ar.group && name(o) == r.name)
            .map(|(_, o)| o);
        Ok((ar, r.name, obj))
    }

    /// The cluster's control-plane Machines (by CAPI's cluster-name and control-plane labels).
    fn machines_of<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a DynamicObject> {
        self.machines.iter().filter(move |m| {
            let l = labels(m);
            l.get(CLUSTER_NAME_LABEL).map(String::as_str) == Some(cluster)
                && l.contains_key(CONTROL_PLANE_LABEL)
        })
    }

    /// The cluster's control-plane VSphereMachines (by the Machines' labels).
    fn vsphere_machines_of<'a>(
        &'a self,
        cluster: &'a str,
    ) -> impl Iterator<Item = &'a DynamicObject> {
        self.vsphere_machines
            .iter()
            .filter(move |m| labels(m).get(CLUSTER_NAME_LABEL).map(String::as_str) == Some(cluster))
    }

    /// The cluster's control-plane VMs under the first label scheme that finds any, and which.
    fn vms_of(&self, cluster: &str) -> (Vec<&DynamicObject>, Option<VmLabelScheme>) {
        VM_LABELS
            .iter()
            .map(|(scheme, prefix)| {
                let vms: Vec<&DynamicObject> = self
                    .vms
                    .iter()
                    .filter(|vm| {
                        let l = labels(vm);
                        l.get(&format!("{prefix}/cluster.name")).map(String::as_str)
                            == Some(cluster)
                            && l.get(&format!("{prefix}/cluster.role")).map(String::as_str)
                                == Some("controlplane")
                    })
                    .collect();
                (vms, Some(*scheme))
            })
            .find(|(vms, _)| !vms.is_empty())
            .unwrap_or((Vec::new(), None))
    }

    /// The objects `cluster_name`'s facts are made from ([`Inventory::facts`] reads the same
    /// ones), as the API served them, each with its apiVersion and kind and without
    /// `metadata.managedFields` (bulky, and nothing of ours). Secrets are never among them: they
    /// are not part of an inventory. See [`Inventory::objects_ranked`] for their order.
    pub fn objects_of(&self, cluster_name: &str) -> Vec<Value> {
        self.objects_ranked(cluster_name).0
    }

    /// [`Inventory::objects_of`], and how many of them, first, the verdict uses: the Cluster,
    /// its KCP, the Machines and VSphereMachines, the VMs (the uid chain's first), the Machines
    /// beyond the KCP's replicas (named by the facts), then every network object the
    /// evaluation and the realization findings read (the SecurityPolicies kept, other
    /// namespaces' too, the Namespace, the VSphereCluster, the SubnetSets, Subnets, SubnetPorts,
    /// VirtualNetworks, the NetworkPolicies carrying `nsx-op/error`). After them the objects
    /// nothing decides from (the other NetworkPolicies: only counted in `read`), which an
    /// evidence bundle keeps within a bound of its own.
    pub fn objects_ranked(&self, cluster_name: &str) -> (Vec<Value>, usize) {
        let Some(cluster) = self.clusters.iter().find(|c| name(c) == cluster_name) else {
            return (Vec::new(), 0);
        };
        let mut out = vec![plain(cluster, &self.apis.cluster)];
        if let Ok((ar, _, Some(obj))) = self.control_plane_of(cluster) {
            out.push(plain(obj, &ar));
        }
        // The Machines beyond the KCP's replicas after the cluster's own.
        let beyond: BTreeSet<String> = self
            .facts("", cluster_name)
            .map(|f| f.machines_beyond_replicas.into_iter().collect())
            .unwrap_or_default();
        let (later, first): (Vec<&DynamicObject>, Vec<&DynamicObject>) = self
            .machines_of(cluster_name)
            .partition(|m| beyond.contains(name(m)));
        out.extend(first.into_iter().map(|m| plain(m, &self.apis.machine)));
        if let Some(ar) = &self.apis.vsphere_machine {
            out.extend(self.vsphere_machines_of(cluster_name).map(|m| plain(m, ar)));
        }
        // The uid chain's VMs first, then the VMs that only carry the labels (the facts show
        // them as rows of their own).
        let verified = self.verified_vms(cluster_name);
        let is_verified = |v: &DynamicObject| verified.iter().any(|w| std::ptr::eq(*w, v));
        let (chain, labelled): (Vec<&DynamicObject>, Vec<&DynamicObject>) = self
            .vms_of(cluster_name)
            .0
            .into_iter()
            .partition(|v| is_verified(v));
        out.extend(
            chain
                .into_iter()
                .chain(labelled)
                .map(|v| plain(v, &self.apis.virtual_machine)),
        );
        out.extend(later.into_iter().map(|m| plain(m, &self.apis.machine)));
        let mut rest = Vec::new();
        if let (Some(read), Some(objects)) = (&self.network, self.network_of(cluster_name)) {
            for (k, o) in objects.objects() {
                let Some(ar) = read.resources.get(&k) else {
                    continue;
                };
                let claims = o
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(network::NSX_ERROR_ANNOTATION));
                if k == network::NetKind::NetworkPolicy && !claims {
                    rest.push(plain(o, ar));
                } else {
                    out.push(plain(o, ar));
                }
            }
        }
        let essential = out.len();
        out.extend(rest);
        (out, essential)
    }

    /// The notes of what could not be read of the network, as an evidence bundle kept them
    /// ([`NetworkRead::with_notes`]); nothing when no network was read.
    pub fn with_network_notes(mut self, notes: &[String]) -> Inventory {
        self.network = self.network.map(|n| n.with_notes(notes));
        self
    }

    /// `cluster_name`'s network objects (pure); None when the Supervisor serves no NSX group,
    /// or there is no such cluster. The control-plane VMs are the uid chain's
    /// ([`Inventory::verified_vms`]), never every VM carrying the labels.
    pub fn network_of(&self, cluster_name: &str) -> Option<NetworkObjects> {
        let read = self.network.as_ref()?;
        let cluster = self.clusters.iter().find(|c| name(c) == cluster_name)?;
        let vms = self.verified_vms(cluster_name);
        Some(read.of_cluster(&self.namespace, cluster, &vms))
    }

    /// The control-plane VMs the cluster's facts use: the VM of each node that has a Machine
    /// controlled by the KCP's uid and a VM joined to it (by the VSphereMachine's uid, or by
    /// names only where no uid exists: [`join`]), within the targets' bound ([`targets`]).
    /// A VM that only carries the labels is a row of its own in the facts, never here: 16
    /// labelled VMs cannot push the real ones out. A name two objects share (only a bundle can
    /// hold that) gives neither.
    pub fn verified_vms(&self, cluster_name: &str) -> Vec<&DynamicObject> {
        let Ok(facts) = self.facts("", cluster_name) else {
            return Vec::new();
        };
        facts
            .nodes
            .iter()
            .filter(|n| n.machine.is_some() && n.join.by.is_some() && n.join.problem.is_none())
            .filter_map(|n| n.vm.as_ref())
            .filter_map(|vm| {
                let mut found = self.vms.iter().filter(|v| name(v) == vm.name);
                let first = found.next()?;
                // The same object listed twice (both label schemes) is still one.
                found
                    .all(|v| v.metadata.uid == first.metadata.uid)
                    .then_some(first)
            })
            .collect()
    }

    /// An inventory of the objects [`Inventory::objects_of`] gave (an evidence bundle's), sorted
    /// back by apiVersion and kind. Objects of other kinds are ignored.
    pub fn from_objects(namespace: &str, apis: SupervisorApis, objects: &[Value]) -> Inventory {
        let mut inv = Inventory {
            namespace: namespace.to_string(),
            apis,
            clusters: Vec::new(),
            control_planes: Vec::new(),
            machines: Vec::new(),
            vsphere_machines: Vec::new(),
            vms: Vec::new(),
            network: None,
        };
        let mut network = NetworkRead::planned(&inv.apis);
        for v in objects {
            // Read from the value in place: no second copy of each object.
            let Ok(o) = DynamicObject::deserialize(v) else {
                continue;
            };
            let Some(types) = o.types.clone() else {
                continue;
            };
            let is =
                |ar: &ApiResource| ar.api_version == types.api_version && ar.kind == types.kind;
            // Network objects first: their groups are served too, and are no control plane.
            let o = match network.as_mut() {
                Some(read) => match read.take(&types.api_version, &types.kind, o) {
                    Some(o) => o,
                    None => continue,
                },
                None => o,
            };
            if is(&inv.apis.cluster) {
                inv.clusters.push(o);
            } else if is(&inv.apis.machine) {
                inv.machines.push(o);
            } else if is(&inv.apis.virtual_machine) {
                inv.vms.push(o);
            } else if inv.apis.vsphere_machine.as_ref().is_some_and(is) {
                inv.vsphere_machines.push(o);
            } else if let Some((group, version)) = types.api_version.split_once('/') {
                let ar = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                    group,
                    version,
                    &types.kind,
                ));
                if inv.apis.kind_in(group, &types.kind).is_some() {
                    inv.control_planes.push((ar, o));
                }
            }
        }
        // The other namespaces' nsx.vmware.com policies the bundle kept (the notes, taken in
        // after, say when they could not be read).
        if let Some(read) = network.as_mut() {
            if read
                .resources
                .contains_key(&network::NetKind::T1SecurityPolicy)
            {
                let others: Vec<DynamicObject> = read
                    .objects
                    .get(&network::NetKind::T1SecurityPolicy)
                    .into_iter()
                    .flatten()
                    .filter(|o| o.metadata.namespace.as_deref() != Some(namespace))
                    .cloned()
                    .collect();
                read.other_policies = Some(std::sync::Arc::new(others));
            }
        }
        inv.network = network;
        inv
    }
}

/// An object as JSON with its type and without managedFields.
fn plain(o: &DynamicObject, ar: &ApiResource) -> Value {
    let mut o = o.clone();
    o.types = Some(TypeMeta {
        api_version: ar.api_version.clone(),
        kind: ar.kind.clone(),
    });
    o.metadata.managed_fields = None;
    serde_json::to_value(&o).unwrap_or(Value::Null)
}

fn role_selector(prefix: &str) -> String {
    format!("{prefix}/cluster.role=controlplane")
}

/// The control plane a Cluster references, read by name (None when it has no reference, its
/// kind is not served or the object does not exist: [`Inventory::facts`] says which).
async fn control_plane_of(
    client: &Client,
    apis: &SupervisorApis,
    ns: &str,
    cluster: &DynamicObject,
) -> Result<Option<(ApiResource, DynamicObject)>> {
    let Some(r) = extract::control_plane_ref(&cluster.data) else {
        return Ok(None);
    };
    let Some(ar) = apis.kind_in(&r.group, &r.kind) else {
        return Ok(None);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    match api.get_opt(&r.name).await {
        Ok(found) => Ok(found.map(|o| (ar, o))),
        Err(e) => Err(Error::kube(
            format!("reading {} {:?} in namespace {ns:?}", r.kind, r.name),
            e,
        )),
    }
}

/// The network objects, when the Supervisor serves an NSX group (never an error: a failed
/// request is a note in the read).
async fn network_read(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
) -> Result<Option<NetworkRead>> {
    Ok(network::read(client, apis, ns).await)
}

/// The control-plane VSphereMachines by `selector`, when the Supervisor serves them (none else).
async fn vsphere_machines(
    client: &Client,
    apis: &SupervisorApis,
    ns: Option<&str>,
    selector: &str,
) -> Result<Vec<DynamicObject>> {
    match &apis.vsphere_machine {
        Some(ar) => list(client, ar, ns, Some(selector), "VSphereMachines").await,
        None => Ok(Vec::new()),
    }
}

/// One cluster's control-plane VMs by label: `capv`, else `capw`.
async fn cluster_vms(
    client: &Client,
    apis: &SupervisorApis,
    ns: &str,
    cluster: &str,
) -> Result<Vec<DynamicObject>> {
    for (_, prefix) in VM_LABELS {
        let selector = format!("{prefix}/cluster.name={cluster},{}", role_selector(prefix));
        let vms = list(
            client,
            &apis.virtual_machine,
            Some(ns),
            Some(&selector),
            "VirtualMachines",
        )
        .await?;
        if !vms.is_empty() {
            return Ok(vms);
        }
    }
    Ok(Vec::new())
}

fn existing(ns: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("there are no clusters in namespace {ns:?}")
    } else {
        format!("clusters in namespace {ns:?}: {}", names.join(", "))
    }
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
            existing(ns, &names)
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
