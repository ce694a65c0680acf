//! What was read from the Supervisor, kept as the objects themselves, per kind of the table
//! ([`super::kinds::KINDS`]): the Clusters, their control planes (KCPs), the control-plane
//! Machines, VSphereMachines and VMs of one vSphere Namespace, and its network objects. Reading
//! is [`super::read`]'s; here is only what they say, pure ([`Inventory::facts`]), so that
//! - many clusters share one list of each kind per namespace (or one per Supervisor with `-A`),
//!   instead of four requests per cluster ([`Inventory::split`] parts it by namespace);
//! - the evidence bundle stores the objects a verdict was made from ([`Inventory::objects_of`]),
//!   and `analyse` rebuilds the same facts from them offline ([`Inventory::from_objects`]).

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use kube::core::{ApiResource, TypeMeta};
use serde::Deserialize;
use serde_json::Value;

use super::discovery::SupervisorApis;
use super::facts::*;
use super::kinds::{KindId, KINDS, VM_LABELS};
pub(crate) use super::kinds::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL};
use super::network::{self, NetKind, NetworkObjects, NetworkRead};
use super::{extract, join, remediation, rollout, targets};
use crate::error::{Error, Result};

/// The objects read, per kind.
pub(crate) type Objects = BTreeMap<KindId, Vec<DynamicObject>>;

/// Why a kind whose failed request is a note ([`super::kinds::Need::Advice`]) could not be
/// read, per kind.
pub(crate) type Unread = BTreeMap<KindId, String>;

/// The objects read in one vSphere Namespace.
#[derive(Debug, Clone)]
pub(crate) struct Inventory {
    pub namespace: String,
    pub apis: SupervisorApis,
    /// The objects of each kind read, as listed (the control planes each with its type: the
    /// Cluster names their kind). The network kinds' are in `network`.
    pub objects: Objects,
    /// The advice kinds that could not be read, each with its note (a 403 on
    /// MachineHealthChecks): empty when all were.
    pub unread: Unread,
    /// The kinds the walk can do without that the Supervisor refused to list (403), each the
    /// permission missing ([`super::kinds::Need::Degrade`]): empty when all were read.
    pub forbidden: Vec<MissingPermission>,
    /// The network objects read ([`super::network`]); None when the Supervisor serves no NSX
    /// group (nothing was asked).
    pub network: Option<NetworkRead>,
}

/// Where we are: the context's name (for messages) and the namespace to look in.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub context: String,
    pub namespace: String,
    /// `kubectl` as the run reached the Supervisor: the commands an error pastes carry it.
    pub kubectl: crate::command::Kubectl,
}

fn labels(o: &DynamicObject) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    o.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

impl Inventory {
    /// The objects of one kind read.
    pub fn of(&self, id: KindId) -> &[DynamicObject] {
        self.objects.get(&id).map(Vec::as_slice).unwrap_or_default()
    }

    /// Whether a Cluster has no VM under the newest label scheme (its VMs may carry the old).
    pub fn clusters_without_vms(&self) -> bool {
        self.of(KindId::Cluster).iter().any(|c| {
            let (cns, cname) = (c.metadata.namespace.as_deref(), name(c));
            !self.of(KindId::VirtualMachine).iter().any(|vm| {
                vm.metadata.namespace.as_deref() == cns
                    && labels(vm).get(&format!("{}/cluster.name", VM_LABELS[0].1))
                        == Some(&cname.to_string())
            })
        })
    }

    /// The control-plane kinds the Clusters reference and the Supervisor serves, each once.
    pub fn referenced_control_planes(&self) -> Vec<ApiResource> {
        let mut kinds: Vec<ApiResource> = Vec::new();
        for ar in self
            .of(KindId::Cluster)
            .iter()
            .filter_map(|c| extract::control_plane_ref(&c.data))
            .filter_map(|r| self.apis.kind_in(&r.group, &r.kind))
        {
            if !kinds.contains(&ar) {
                kinds.push(ar);
            }
        }
        kinds
    }

    /// A cross-namespace inventory, one per namespace that has clusters: each kind's objects
    /// of the namespace (a cluster-scoped kind's: the one named as the namespace).
    pub fn split(self) -> Vec<Inventory> {
        let namespaces: BTreeSet<String> = self
            .of(KindId::Cluster)
            .iter()
            .filter_map(|c| c.metadata.namespace.clone())
            .collect();
        namespaces
            .into_iter()
            .map(|ns| Inventory {
                objects: self
                    .objects
                    .iter()
                    .map(|(id, list)| {
                        let row = id.row();
                        let part = list.iter().filter(|o| row.holds(o, &ns)).cloned();
                        (*id, part.collect())
                    })
                    .collect(),
                network: self.network.as_ref().map(|n| n.in_namespace(&ns)),
                unread: self.unread.clone(),
                forbidden: self.forbidden.clone(),
                apis: self.apis.clone(),
                namespace: ns,
            })
            .collect()
    }

    /// The clusters' names, sorted.
    pub fn cluster_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .of(KindId::Cluster)
            .iter()
            .map(|c| name(c).to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// What the Supervisor says about `cluster_name`'s control plane (pure).
    pub fn facts(&self, context: &str, cluster_name: &str) -> Result<ClusterFacts> {
        let ns = self.namespace.as_str();
        let Some(cluster) = self
            .of(KindId::Cluster)
            .iter()
            .find(|c| name(c) == cluster_name)
        else {
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
        // VSphereMachines refused (403): not read, so no uid from them; the join goes by the
        // Machines' references and names, as where they are not served.
        let vsphere_machines_read =
            self.apis.vsphere_machine.is_some() && !self.refused(KindId::VSphereMachine);
        let anchors = join::Anchors {
            kcp_uid,
            vsphere_machines: vsphere_machines_read.then(|| {
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
        let remediation = remediation::facts(
            cluster,
            control_plane.as_ref().ok().and_then(|(_, _, o)| *o),
            &machine_objects,
            self.of(KindId::MachineHealthCheck),
            self.unread
                .get(&KindId::MachineHealthCheck)
                .map(String::as_str),
        );
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
                network_stack: super::stack::of(&self.apis),
            },
            kcp,
            kcp_missing_reason,
            nodes,
            machines_beyond_replicas,
            endpoint: extract::endpoint(&cluster.data),
            remediation,
            missing_permissions: self.forbidden.clone(),
            // The run's, set by whoever makes the facts for it (`walk`, `Evidence::judge`).
            kubectl: Default::default(),
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
        let obj = self.of(KindId::ControlPlane).iter().find(|o| {
            o.types.as_ref().is_some_and(|t| {
                let group = t.api_version.split_once('/').map_or("", |(g, _)| g);
                t.kind == ar.kind && group == ar.group
            }) && name(o) == r.name
        });
        Ok((ar, r.name, obj))
    }

    /// The cluster's control-plane Machines (by CAPI's cluster-name and control-plane labels).
    fn machines_of<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a DynamicObject> {
        self.of(KindId::Machine).iter().filter(move |m| {
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
        self.of(KindId::VSphereMachine)
            .iter()
            .filter(move |m| labels(m).get(CLUSTER_NAME_LABEL).map(String::as_str) == Some(cluster))
    }

    /// The cluster's control-plane VMs under the first label scheme that finds any, and which.
    fn vms_of(&self, cluster: &str) -> (Vec<&DynamicObject>, Option<VmLabelScheme>) {
        VM_LABELS
            .iter()
            .map(|(scheme, prefix)| {
                let vms: Vec<&DynamicObject> = self
                    .of(KindId::VirtualMachine)
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
    #[cfg(test)]
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
        let Some(cluster) = self
            .of(KindId::Cluster)
            .iter()
            .find(|c| name(c) == cluster_name)
        else {
            return (Vec::new(), 0);
        };
        let network = self.network_of(cluster_name);
        let mut ranked: Vec<(Rank, Value)> = KINDS
            .iter()
            .filter(|k| k.walked())
            .flat_map(|k| self.ranked_of(k.id, cluster, network.as_ref()))
            .collect();
        // Stable: within a rank, the table's order, and each kind's own.
        ranked.sort_by_key(|(rank, _)| *rank);
        let essential = ranked.iter().filter(|(r, _)| *r != Rank::Counted).count();
        (ranked.into_iter().map(|(_, v)| v).collect(), essential)
    }

    /// One kind's objects of `cluster`, as [`Inventory::objects_ranked`] gives them.
    fn ranked_of(
        &self,
        id: KindId,
        cluster: &DynamicObject,
        network: Option<&NetworkObjects>,
    ) -> Vec<(Rank, Value)> {
        let cluster_name = name(cluster);
        let own = |o: &DynamicObject, ar: &ApiResource| (Rank::Own, plain(o, ar));
        match id {
            KindId::Cluster => vec![own(cluster, &self.apis.cluster)],
            KindId::ControlPlane => match self.control_plane_of(cluster) {
                Ok((ar, _, Some(obj))) => vec![own(obj, &ar)],
                _ => Vec::new(),
            },
            KindId::Machine => {
                let beyond: BTreeSet<String> = self
                    .facts("", cluster_name)
                    .map(|f| f.machines_beyond_replicas.into_iter().collect())
                    .unwrap_or_default();
                self.machines_of(cluster_name)
                    .map(|m| {
                        let rank = if beyond.contains(name(m)) {
                            Rank::Beyond
                        } else {
                            Rank::Own
                        };
                        (rank, plain(m, &self.apis.machine))
                    })
                    .collect()
            }
            KindId::VSphereMachine => match &self.apis.vsphere_machine {
                Some(ar) => self
                    .vsphere_machines_of(cluster_name)
                    .map(|m| own(m, ar))
                    .collect(),
                None => Vec::new(),
            },
            KindId::VirtualMachine => {
                // The uid chain's VMs first, then the VMs that only carry the labels (the facts
                // show them as rows of their own).
                let verified = self.verified_vms(cluster_name);
                let is_verified = |v: &DynamicObject| verified.iter().any(|w| std::ptr::eq(*w, v));
                let (chain, labelled): (Vec<&DynamicObject>, Vec<&DynamicObject>) = self
                    .vms_of(cluster_name)
                    .0
                    .into_iter()
                    .partition(|v| is_verified(v));
                chain
                    .into_iter()
                    .chain(labelled)
                    .map(|v| own(v, &self.apis.virtual_machine))
                    .collect()
            }
            // The MachineHealthChecks that take the cluster's control-plane Machines: the only
            // ones the remediation guard reads.
            KindId::MachineHealthCheck => {
                let Some(ar) = self.apis.resource(KindId::MachineHealthCheck) else {
                    return Vec::new();
                };
                let machines: Vec<&DynamicObject> = self.machines_of(cluster_name).collect();
                // The live ones first, as the facts show them: paused decoys never push the
                // one that acts out of a bundle; those past the facts' cap are only counted.
                remediation::over_control_plane(
                    self.of(KindId::MachineHealthCheck),
                    cluster_name,
                    &machines,
                )
                .into_iter()
                .enumerate()
                .map(|(i, h)| match i < remediation::MAX_HEALTH_CHECKS {
                    true => own(h, &ar),
                    false => (Rank::Counted, plain(h, &ar)),
                })
                .collect()
            }
            // Read by name for a caller, never kept ([`super::kinds::Selector::Named`]).
            KindId::Secret | KindId::VpcNetworkConfiguration | KindId::NetworkInfo => Vec::new(),
            KindId::Net(kind) => {
                let (Some(read), Some(objects)) = (&self.network, network) else {
                    return Vec::new();
                };
                let Some(ar) = read.resources.get(&kind) else {
                    return Vec::new();
                };
                objects
                    .objects()
                    .into_iter()
                    .filter(|(k, _)| *k == kind)
                    .map(|(_, o)| {
                        let claims = o
                            .metadata
                            .annotations
                            .as_ref()
                            .is_some_and(|a| a.contains_key(network::NSX_ERROR_ANNOTATION));
                        // Only counted: a NetworkPolicy that claims nothing.
                        let rank = if kind == NetKind::NetworkPolicy && !claims {
                            Rank::Counted
                        } else {
                            Rank::Network
                        };
                        (rank, plain(o, ar))
                    })
                    .collect()
            }
        }
    }

    /// Whether the Supervisor refused to list `id` (403 on a kind the walk can do without).
    pub fn refused(&self, id: KindId) -> bool {
        let name = id.row().name.unwrap_or_default();
        self.forbidden.iter().any(|p| p.kind == name)
    }

    /// The permissions missing, as an evidence bundle kept them (the kinds refused).
    pub fn with_forbidden(mut self, forbidden: &[MissingPermission]) -> Inventory {
        self.forbidden = forbidden.to_vec();
        self
    }

    /// The note of why the MachineHealthChecks could not be read, as an evidence bundle kept
    /// it (None: they were read).
    pub fn with_remediation_note(mut self, note: Option<&str>) -> Inventory {
        if let Some(n) = note {
            self.unread
                .insert(KindId::MachineHealthCheck, n.to_string());
        }
        self
    }

    /// The note of why the MachineHealthChecks could not be read (None: they were).
    pub fn remediation_note(&self) -> Option<String> {
        self.unread.get(&KindId::MachineHealthCheck).cloned()
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
        let cluster = self
            .of(KindId::Cluster)
            .iter()
            .find(|c| name(c) == cluster_name)?;
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
                let mut found = self
                    .of(KindId::VirtualMachine)
                    .iter()
                    .filter(|v| name(v) == vm.name);
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
        let mut network = NetworkRead::planned(&apis);
        // Each row's resource: the network kinds' only when planned.
        let resources: Vec<(KindId, ApiResource)> = KINDS
            .iter()
            .filter(|k| k.walked())
            .filter_map(|k| {
                let ar = match k.id {
                    KindId::Net(n) => network.as_ref()?.resources.get(&n).cloned(),
                    id => apis.resource(id),
                };
                Some((k.id, ar?))
            })
            .collect();
        let mut inv = Inventory {
            namespace: namespace.to_string(),
            apis,
            objects: Objects::new(),
            unread: Unread::new(),
            forbidden: Vec::new(),
            network: None,
        };
        for v in objects {
            // Read from the value in place: no second copy of each object.
            let Ok(o) = DynamicObject::deserialize(v) else {
                continue;
            };
            let Some(types) = o.types.clone() else {
                continue;
            };
            let row = resources
                .iter()
                .find(|(_, ar)| ar.api_version == types.api_version && ar.kind == types.kind)
                .map(|(id, _)| *id);
            match (row, network.as_mut()) {
                (Some(KindId::Net(k)), Some(read)) => read.objects.entry(k).or_default().push(o),
                (Some(id), _) => inv.objects.entry(id).or_default().push(o),
                // Any other kind of a served group: a control plane a Cluster may name.
                (None, _) => {
                    if let Some((group, _)) = types.api_version.split_once('/') {
                        if inv.apis.kind_in(group, &types.kind).is_some() {
                            inv.objects.entry(KindId::ControlPlane).or_default().push(o);
                        }
                    }
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

/// Where an object goes in an evidence bundle's order: the cluster's own objects, the Machines
/// beyond the KCP's replicas, the network objects the verdict reads, then those only counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Own,
    Beyond,
    Network,
    Counted,
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

/// The clusters that do exist, for the error naming an unknown one.
pub(super) fn existing(ns: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("there are no clusters in namespace {ns:?}")
    } else {
        format!("clusters in namespace {ns:?}: {}", names.join(", "))
    }
}
