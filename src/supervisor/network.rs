//! The cluster's network as the Supervisor shows it: NSX SecurityPolicies, NetworkPolicies,
//! SubnetSets/Subnets/SubnetPorts (VPC) or the VirtualNetwork (NCP), the Namespace's and the
//! VSphereCluster's network conditions; read only when the Supervisor serves an NSX group.
//!
//! Reading (`super::read`) is apart from slicing ([`NetworkRead::of_cluster`], pure) and from the
//! realization findings (`analyse::realization`), as for the rest of the inventory. A request
//! that fails (403, 404, or anything else) is a note in [`NetworkObjects::unread`], never a
//! failure: the network is extra evidence, and a diagnosis goes on without it.
//!
//! Upstream shapes checked: vmware-tanzu/nsx-operator `pkg/apis/vpc/v1alpha1/securitypolicy_types.go`,
//! `subnetport_types.go`, `condition_types.go` (Ready), `pkg/apis/legacy/v1alpha1/securitypolicy_types.go`
//! (nsx.vmware.com, same schema), `pkg/controllers/networkinfo` (`NamespaceNetworkReady` is a
//! condition of the core v1 Namespace's `status.conditions`), `pkg/controllers/common/types.go`
//! (`nsx-op/error`); kubernetes-sigs/cluster-api-provider-vsphere `pkg/services/network/nsxt_provider.go`
//! (VirtualNetwork `<VSphereCluster>-vnet`, vmware.com/v1alpha1), `nsxt_vpc_provider.go` (SubnetSet
//! named as the VSphereCluster, owned by it; `ClusterNetworkReady` on the VSphereCluster);
//! vmware-tanzu/vm-operator `pkg/providers/vsphere/network/network.go` (a VM's SubnetPort
//! `<vm>-<network>-<interface>`, controller-owned by the VirtualMachine).
//!
//! Every object is tied to the cluster by uid, never by a name or label a namespace
//! editor can give ([`NetworkRead::of_cluster`]); which SecurityPolicy group is live follows
//! nsx-operator `pkg/controllers/securitypolicy/securitypolicy_controller.go` and
//! `pkg/config/mixed_mode.go` (`NetworkRead::live_kind`); on NCP/T1 the other namespaces'
//! policies are read too (`appliedTo: [{}]` selects every port), bounded and counted.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::core::ApiResource;
use serde_json::Value;

use super::discovery::SupervisorApis;
use super::kinds::KindId;

pub(crate) use super::kinds::NetKind;
/// nsx-operator's annotation on a NetworkPolicy it failed to realize.
pub(crate) const NSX_ERROR_ANNOTATION: &str = "nsx-op/error";
/// The most objects of one kind kept per read; beyond it a note says how many were left out.
pub(crate) const MAX_OBJECTS_PER_KIND: usize = 500;
/// The most characters kept of a condition's reason or message, or an annotation's text.
pub(crate) const MAX_TEXT_CHARS: usize = 512;
/// The most notes of what could not be read that an evidence bundle's are taken in, and their
/// length (a bundle is anyone's file; ours has one note per resource at most).
pub(crate) const MAX_NOTES: usize = 32;
pub(crate) const MAX_NOTE_CHARS: usize = 300;
/// The most SecurityPolicies of other namespaces kept for one cluster (nsx.vmware.com, T1/NCP
/// mode), the first by priority; the rest are counted in [`NetworkObjects::policies_left_out`].
pub(crate) const MAX_OTHER_POLICIES: usize = 100;
/// The annotation the Supervisor puts on a Namespace on VPC networking: nsx-operator reconciles
/// `crd.nsx.vmware.com` SecurityPolicies as soon as one namespace carries it
/// (vmware-tanzu/nsx-operator `pkg/config/mixed_mode.go`: `VPCNetworkConfigAnnotation`,
/// `HasVPCNamespaces`). A namespace editor cannot write it: the Namespace is cluster-scoped.
pub(crate) const VPC_NETWORK_CONFIG_ANNOTATION: &str = "nsx.vmware.com/vpc_network_config";
/// The note that the SecurityPolicies of other namespaces could not be read starts with this.
pub(crate) const OTHERS_NOTE: &str = "the SecurityPolicies of other namespaces (a policy there with appliedTo [{}] can apply to these VMs)";

/// `resource.group` (`securitypolicies.crd.nsx.vmware.com`; `namespaces` for the core group),
/// as RBAC and kubectl name it.
pub(crate) fn resource_name(ar: &ApiResource) -> String {
    if ar.group.is_empty() {
        ar.plural.clone()
    } else {
        format!("{}.{}", ar.plural, ar.group)
    }
}

/// What to read, from discovery: nothing unless the Supervisor serves an NSX kind
/// (crd.nsx.vmware.com, nsx.vmware.com, or vmware.com's VirtualNetwork); then every NSX kind
/// served, the NetworkPolicies and VSphereClusters when served, and the Namespace.
pub(crate) fn plan(apis: &SupervisorApis) -> Vec<(NetKind, ApiResource)> {
    let plan: Vec<(NetKind, ApiResource)> = NetKind::all()
        .filter_map(|k| apis.resource(KindId::Net(k)).map(|ar| (k, ar)))
        .collect();
    if !plan.iter().any(|(k, _)| k.is_nsx()) {
        return Vec::new();
    }
    plan
}

// The contract's type (`networkPolicy.read`): its doc comments are the schema's descriptions.
/// One network resource read, and how many of its objects are the cluster's.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ReadCount {
    /// `resource.group`, e.g. `securitypolicies.crd.nsx.vmware.com`.
    pub resource: String,
    pub count: usize,
}

/// What one read of the network gave (one namespace, or every namespace with `-A`), before it
/// is sliced per cluster.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetworkRead {
    /// The resources asked for, by kind.
    pub resources: BTreeMap<NetKind, ApiResource>,
    pub objects: BTreeMap<NetKind, Vec<DynamicObject>>,
    /// The resources whose request was answered.
    pub answered: BTreeSet<NetKind>,
    /// One note per request that failed ("list securitypolicies.crd.nsx.vmware.com in
    /// namespace ns-prod: forbidden"), and per list cut at [`MAX_OBJECTS_PER_KIND`].
    pub unread: Vec<String>,
    /// The nsx.vmware.com SecurityPolicies of every namespace, shared by the namespaces' parts:
    /// in T1/NCP mode a policy's `appliedTo: [{}]` selects every port of the Supervisor, so a
    /// policy of another namespace can apply to the cluster's VMs. None when not read (the group
    /// is not served, or the request failed: [`NetworkRead::others_unread`] says so).
    pub other_policies: Option<Arc<Vec<DynamicObject>>>,
    /// Why the other namespaces' SecurityPolicies could not be read (a note starting with
    /// [`OTHERS_NOTE`]); said only for a cluster whose live group can be nsx.vmware.com.
    pub others_unread: Option<String>,
    /// How many of them an evidence bundle's notes say were left out (None: count them).
    pub others_left_out: Option<usize>,
    /// Objects past [`MAX_OBJECTS_PER_KIND`], per kind and namespace (`""` for Namespaces).
    pub left_out: BTreeMap<(NetKind, String), usize>,
}

/// The network objects of one cluster ([`NetworkRead::of_cluster`]), as read.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetworkObjects {
    pub namespace: String,
    /// The namespace's SecurityPolicies, each with the kind it was read as (which group), and
    /// (unless the live group is crd.nsx.vmware.com) the other namespaces' nsx.vmware.com ones,
    /// at most [`MAX_OTHER_POLICIES`] by priority (each object carries its namespace).
    pub security_policies: Vec<(NetKind, DynamicObject)>,
    /// The namespace's Kubernetes NetworkPolicies.
    pub network_policies: Vec<DynamicObject>,
    /// The cluster's SubnetSets, Subnets and SubnetPorts (VPC).
    pub subnet_sets: Vec<DynamicObject>,
    pub subnets: Vec<DynamicObject>,
    pub subnet_ports: Vec<DynamicObject>,
    /// The cluster's VirtualNetwork (NCP).
    pub virtual_networks: Vec<DynamicObject>,
    /// The vSphere Namespace itself (its `NamespaceNetworkReady` condition).
    pub namespace_object: Option<DynamicObject>,
    /// The cluster's VSphereCluster (its `ClusterNetworkReady` condition).
    pub vsphere_cluster: Option<DynamicObject>,
    // Read by the tests only (the VMs the objects were sliced for).
    #[cfg_attr(not(test), allow(dead_code))]
    /// The names of `vms` (the uid chain's control-plane VMs).
    pub control_plane_vms: Vec<String>,
    /// The cluster's control-plane VirtualMachines, as read: their labels are what a
    /// `vmSelector` selects (nsx-operator copies them onto the VM's port), their
    /// `status.network` the addresses. The same objects as the inventory's.
    pub vms: Vec<DynamicObject>,
    /// What was read: each resource answered, with the objects kept for this cluster.
    pub read: Vec<ReadCount>,
    /// What could not be read, one note per failed request.
    pub unread: Vec<String>,
    /// Which SecurityPolicy kind nsx-operator reconciles for this namespace:
    /// `VpcSecurityPolicy` where the namespace is on VPC networking, `T1SecurityPolicy`
    /// otherwise; None when the Supervisor's objects cannot tell. A policy of the other group is
    /// a leftover, not in effect, whatever its `Ready` says.
    pub live_policy_kind: Option<NetKind>,
    /// What `live_policy_kind` was told from, in words for the evidence (None with it).
    pub networking_basis: Option<String>,
    /// SecurityPolicies the read could not keep (past a bound): any of them might come first,
    /// so the evaluation cannot rule them out.
    pub policies_left_out: usize,
}

pub(crate) fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

fn in_ns(o: &DynamicObject, ns: &str) -> bool {
    o.metadata.namespace.as_deref() == Some(ns)
}

/// A list cut at [`MAX_OBJECTS_PER_KIND`] objects *per namespace* (in the API's order), so that
/// with `-A` a namespace holding many objects of a kind never pushes another's out; how many
/// were left out, by namespace (`""` for cluster-scoped objects).
pub(crate) fn per_namespace(
    items: Vec<DynamicObject>,
) -> (Vec<DynamicObject>, BTreeMap<String, usize>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut left: BTreeMap<String, usize> = BTreeMap::new();
    let kept = items
        .into_iter()
        .filter(|o| {
            let ns = o.metadata.namespace.clone().unwrap_or_default();
            let n = seen.entry(ns.clone()).or_insert(0);
            *n += 1;
            if *n > MAX_OBJECTS_PER_KIND {
                *left.entry(ns).or_insert(0) += 1;
                false
            } else {
                true
            }
        })
        .collect();
    (kept, left)
}

/// The note of a list cut at [`MAX_OBJECTS_PER_KIND`] (read back by [`NetworkRead::with_notes`]).
pub(crate) fn cut_note(resource: &str, ns: &str, left: usize) -> String {
    let total = MAX_OBJECTS_PER_KIND + left;
    if ns.is_empty() {
        format!("{resource}: only the first {MAX_OBJECTS_PER_KIND} of {total} objects kept")
    } else {
        format!(
            "{resource} in namespace {ns}: only the first {MAX_OBJECTS_PER_KIND} of {total} objects kept"
        )
    }
}

impl NetworkRead {
    /// What [`plan`] would read, with no answer yet, for an evidence bundle's objects; every
    /// planned resource counts as answered (a bundle keeps the objects, not the notes).
    pub fn planned(apis: &SupervisorApis) -> Option<NetworkRead> {
        let plan = plan(apis);
        if plan.is_empty() {
            return None;
        }
        Some(NetworkRead {
            answered: plan.iter().map(|(k, _)| *k).collect(),
            resources: plan.into_iter().collect(),
            ..NetworkRead::default()
        })
    }

    /// The notes of what could not be read, as an evidence bundle keeps them (bounded: the
    /// bundle is anyone's file); a resource a note names (`<verb> <resource> ...`) was not read.
    /// A list's cut (`<resource> in namespace <ns>: only the first K of N objects kept`) gives
    /// back how many were left out; an [`OTHERS_NOTE`] that the other namespaces' policies were
    /// not read, or how many of them were left out.
    pub fn with_notes(mut self, notes: &[String]) -> NetworkRead {
        let notes: Vec<String> = notes
            .iter()
            .take(MAX_NOTES)
            .map(|n| match n.char_indices().nth(MAX_NOTE_CHARS) {
                Some((cut, _)) => format!("{}…", &n[..cut]),
                None => n.clone(),
            })
            .collect();
        self.unread.clear();
        for n in notes {
            if let Some(rest) = n.strip_prefix(OTHERS_NOTE) {
                match left_out_of(rest) {
                    Some(count) => self.others_left_out = Some(count),
                    None => {
                        self.other_policies = None;
                        self.others_unread = Some(n);
                    }
                }
                // Said again by `of_cluster` where it applies.
                continue;
            }
            if let Some((kind, ns, count)) = self.cut_of(&n) {
                self.left_out.insert((kind, ns), count);
            }
            self.unread.push(n);
        }
        let failed: BTreeSet<&str> = self
            .unread
            .iter()
            .filter_map(|n| n.split(' ').nth(1))
            .collect();
        let resources = &self.resources;
        self.answered
            .retain(|k| !failed.contains(resource_name(&resources[k]).as_str()));
        self
    }

    /// A [`cut_note`] read back: the kind, the namespace and how many were left out.
    fn cut_of(&self, note: &str) -> Option<(NetKind, String, usize)> {
        let (head, tail) = note.split_once(": only the first ")?;
        let (resource, ns) = match head.split_once(" in namespace ") {
            Some((r, ns)) => (r, ns.to_string()),
            None => (head, String::new()),
        };
        let kind = self
            .resources
            .iter()
            .find(|(_, ar)| resource_name(ar) == resource)
            .map(|(k, _)| *k)?;
        let mut words = tail.split(' ');
        let kept: usize = words.next()?.parse().ok()?;
        let total: usize = words.nth(1)?.parse().ok()?;
        Some((kind, ns, total.saturating_sub(kept)))
    }

    /// The part of a cross-namespace read that is in `ns` (the notes go with every part; the
    /// other namespaces' SecurityPolicies are shared, not copied).
    pub fn in_namespace(&self, ns: &str) -> NetworkRead {
        NetworkRead {
            resources: self.resources.clone(),
            objects: self
                .objects
                .iter()
                .map(|(k, list)| {
                    let row = KindId::Net(*k).row();
                    let keep: Vec<DynamicObject> =
                        list.iter().filter(|o| row.holds(o, ns)).cloned().collect();
                    (*k, keep)
                })
                .collect(),
            answered: self.answered.clone(),
            unread: self.unread.clone(),
            other_policies: self.other_policies.clone(),
            others_unread: self.others_unread.clone(),
            others_left_out: self.others_left_out,
            left_out: self.left_out.clone(),
        }
    }

    fn all(&self, k: NetKind) -> &[DynamicObject] {
        self.objects.get(&k).map(Vec::as_slice).unwrap_or_default()
    }

    /// One cluster's network objects (pure), each tied to the cluster by uid, never by a name
    /// or a label anyone who may edit the namespace can give:
    /// - `vms` are the cluster's control-plane VirtualMachines from the verified uid chain (KCP →
    ///   Machine → VSphereMachine → VM, as the targets: [`super::Inventory::network_of`]);
    /// - the VSphereCluster is the one the Cluster's `spec.infrastructureRef` names (kind and
    ///   name) and, when it has owner references, owned by the Cluster's uid (CAPI sets that
    ///   owner: kubernetes-sigs/cluster-api `core/reconcilers/cluster/cluster_controller_phases.go`
    ///   `ensureOwnerRefAndLabel`);
    /// - a SubnetSet, Subnet or VirtualNetwork is the cluster's when a control-plane VM's
    ///   interface names it (immutable once created: vmware-tanzu/vm-operator
    ///   `webhooks/virtualmachine/validation/virtualmachine_validator.go`) or it is owned by the
    ///   VSphereCluster's uid (CAPV's `SetOwnerReference`:
    ///   kubernetes-sigs/cluster-api-provider-vsphere `pkg/services/network/nsxt_vpc_provider.go`,
    ///   `nsxt_provider.go`);
    /// - a SubnetPort is a control-plane VM's when its controller owner reference carries that
    ///   VM's uid (vm-operator `pkg/providers/vsphere/network/network.go`,
    ///   `SetNetworkInterfaceOwnerRef`);
    /// - the SecurityPolicies are the namespace's, of both groups, and (unless the live group is
    ///   known to be crd.nsx.vmware.com) the other namespaces' nsx.vmware.com ones, the first
    ///   [`MAX_OTHER_POLICIES`] by priority; the NetworkPolicies are the namespace's.
    pub fn of_cluster(
        &self,
        ns: &str,
        cluster: &DynamicObject,
        vms: &[&DynamicObject],
    ) -> NetworkObjects {
        let here = |k: NetKind| self.all(k).iter().filter(|o| in_ns(o, ns));
        let cluster_uid = uid(cluster);
        let infra_kind = cluster
            .data
            .pointer("/spec/infrastructureRef/kind")
            .and_then(Value::as_str);
        let infra_name = cluster
            .data
            .pointer("/spec/infrastructureRef/name")
            .and_then(Value::as_str);
        let vsphere_cluster = match (infra_kind, infra_name) {
            (None | Some("VSphereCluster"), Some(infra)) => {
                let found: Vec<&DynamicObject> = here(NetKind::VSphereCluster)
                    .filter(|o| name(o) == infra && owned_by_cluster(o, cluster_uid))
                    .collect();
                // Two of one name cannot come from the API; from a bundle, neither is taken.
                match found.as_slice() {
                    [one] => Some((*one).clone()),
                    _ => None,
                }
            }
            _ => None,
        };
        let vsc_uid = vsphere_cluster.as_ref().and_then(uid);
        // The networks the VMs' interfaces name: (kind, name).
        let named: BTreeSet<(String, String)> = vms
            .iter()
            .flat_map(|vm| interfaces(vm))
            .map(|(kind, n, _)| (kind.to_string(), n.to_string()))
            .collect();
        let vm_uids: BTreeSet<&str> = vms.iter().filter_map(|v| uid(v)).collect();
        let ours = |o: &DynamicObject, kind: &str| {
            named.contains(&(kind.to_string(), name(o).to_string()))
                || vsc_uid.is_some_and(|u| owner_uid(o, "VSphereCluster", u))
        };
        let subnet_sets: Vec<DynamicObject> = here(NetKind::SubnetSet)
            .filter(|o| ours(o, "SubnetSet"))
            .cloned()
            .collect();
        let subnets: Vec<DynamicObject> = here(NetKind::Subnet)
            .filter(|o| ours(o, "Subnet"))
            .cloned()
            .collect();
        let subnet_ports: Vec<DynamicObject> = here(NetKind::SubnetPort)
            .filter(|o| controller_uid(o, "VirtualMachine").is_some_and(|u| vm_uids.contains(u)))
            .cloned()
            .collect();
        let virtual_networks: Vec<DynamicObject> = here(NetKind::VirtualNetwork)
            .filter(|o| ours(o, "VirtualNetwork"))
            .cloned()
            .collect();
        let namespace_object = self
            .all(NetKind::Namespace)
            .iter()
            .find(|o| name(o) == ns)
            .cloned();
        let live = self.live_kind(namespace_object.as_ref(), vms);
        let live_kind = live.as_ref().map(|(k, _)| *k);
        let mut unread = self.unread.clone();
        let mut security_policies: Vec<(NetKind, DynamicObject)> =
            [NetKind::VpcSecurityPolicy, NetKind::T1SecurityPolicy]
                .into_iter()
                .flat_map(|k| here(k).map(move |o| (k, o.clone())))
                .collect();
        // The namespace's own lists cut at their bound: only the live group's count (a leftover
        // group is not in effect), both when the live one is not known.
        let mut policies_left_out: usize = [NetKind::VpcSecurityPolicy, NetKind::T1SecurityPolicy]
            .into_iter()
            .filter(|k| live_kind.is_none_or(|l| l == *k))
            // `""`: a bundle of an older plugin, whose cut notes named no namespace.
            .flat_map(|k| [(k, ns.to_string()), (k, String::new())])
            .filter_map(|key| self.left_out.get(&key))
            .sum();
        let others_apply = live_kind != Some(NetKind::VpcSecurityPolicy)
            && self.resources.contains_key(&NetKind::T1SecurityPolicy);
        if others_apply {
            match &self.other_policies {
                Some(all) => {
                    let mut others: Vec<&DynamicObject> =
                        all.iter().filter(|o| !in_ns(o, ns)).collect();
                    // The first by priority (NSX applies the lower first), then by place, so the
                    // same objects always keep the same policies.
                    others.sort_by_cached_key(|o| {
                        (
                            priority(o),
                            o.metadata.namespace.clone().unwrap_or_default(),
                            name(o).to_string(),
                        )
                    });
                    let cut = others.len().saturating_sub(MAX_OTHER_POLICIES);
                    let listed_cut: usize = self
                        .left_out
                        .iter()
                        .filter(|((k, lns), _)| *k == NetKind::T1SecurityPolicy && lns != ns)
                        .map(|(_, n)| n)
                        .sum();
                    let left = self.others_left_out.unwrap_or(cut + listed_cut);
                    if left > 0 {
                        unread.push(format!(
                            "{OTHERS_NOTE}: {left} left out (only the first {MAX_OTHER_POLICIES} by priority kept)"
                        ));
                    }
                    policies_left_out += left;
                    security_policies.extend(
                        others
                            .into_iter()
                            .take(MAX_OTHER_POLICIES)
                            .map(|o| (NetKind::T1SecurityPolicy, o.clone())),
                    );
                }
                None => unread.extend(self.others_unread.iter().cloned()),
            }
        }
        let network_policies: Vec<DynamicObject> = here(NetKind::NetworkPolicy).cloned().collect();
        let count = |k: NetKind| match k {
            NetKind::VpcSecurityPolicy | NetKind::T1SecurityPolicy => {
                security_policies.iter().filter(|(sk, _)| *sk == k).count()
            }
            NetKind::NetworkPolicy => network_policies.len(),
            NetKind::SubnetSet => subnet_sets.len(),
            NetKind::Subnet => subnets.len(),
            NetKind::SubnetPort => subnet_ports.len(),
            NetKind::VirtualNetwork => virtual_networks.len(),
            NetKind::Namespace => usize::from(namespace_object.is_some()),
            NetKind::VSphereCluster => usize::from(vsphere_cluster.is_some()),
        };
        let read = self
            .resources
            .iter()
            .filter(|(k, _)| self.answered.contains(k))
            .map(|(k, ar)| ReadCount {
                resource: resource_name(ar),
                count: count(*k),
            })
            .collect();
        let (live_policy_kind, networking_basis) = live.unzip();
        NetworkObjects {
            namespace: ns.to_string(),
            security_policies,
            network_policies,
            subnet_sets,
            subnets,
            subnet_ports,
            virtual_networks,
            namespace_object,
            vsphere_cluster,
            control_plane_vms: vms.iter().map(|v| name(v).to_string()).collect(),
            vms: vms.iter().map(|v| (*v).clone()).collect(),
            read,
            unread,
            live_policy_kind,
            networking_basis,
            policies_left_out,
        }
    }

    /// Which SecurityPolicy group nsx-operator reconciles, and what says so; None when what the
    /// Supervisor shows cannot tell.
    ///
    /// nsx-operator runs one SecurityPolicy controller for the whole Supervisor: it watches
    /// `crd.nsx.vmware.com` when `IsVPCEnabled` (`config.HasVPCNamespaces()`: the operator's
    /// `enable_vpc_network`, or, with per-namespace network providers, any Namespace carrying
    /// [`VPC_NETWORK_CONFIG_ANNOTATION`]), else `nsx.vmware.com` (vmware-tanzu/nsx-operator
    /// `pkg/controllers/securitypolicy/securitypolicy_controller.go` `setupWithManager` and
    /// `Reconcile`, `pkg/nsx/services/securitypolicy/parse.go` `IsVPCEnabled`,
    /// `pkg/config/mixed_mode.go`). Told from, most trustworthy first:
    /// 1. discovery: a Supervisor serving only one of the two groups has only that one to
    ///    reconcile (the API server's word);
    /// 2. the cluster's Namespace carrying [`VPC_NETWORK_CONFIG_ANNOTATION`]: the namespace is on
    ///    VPC, so the Supervisor has a VPC namespace, so crd.nsx.vmware.com is live (the
    ///    Namespace is cluster-scoped: a namespace editor cannot write it);
    /// 3. a control-plane VM of the uid chain with an interface on a SubnetSet or Subnet
    ///    (vm-operator's VPC provider, `pkg/providers/vsphere/network/network.go`
    ///    `createVPCNetworkInterface`; the interface's network is immutable once created):
    ///    the namespace is on VPC, as in 2.
    ///
    /// nsx.vmware.com is said only from 1: a namespace on NCP (VirtualNetwork, a T1 annotation)
    /// does not make it live, since one VPC namespace elsewhere on the Supervisor (mixed mode)
    /// makes crd.nsx.vmware.com the group reconciled for every namespace, and the operator's
    /// own `enable_vpc_network` is not shown. Then both groups count, as before.
    fn live_kind(
        &self,
        namespace: Option<&DynamicObject>,
        vms: &[&DynamicObject],
    ) -> Option<(NetKind, String)> {
        let vpc = self.resources.get(&NetKind::VpcSecurityPolicy);
        let t1 = self.resources.get(&NetKind::T1SecurityPolicy);
        match (vpc, t1) {
            (Some(ar), None) => {
                return Some((
                    NetKind::VpcSecurityPolicy,
                    format!(
                        "the Supervisor serves {} and not the nsx.vmware.com group",
                        resource_name(ar)
                    ),
                ))
            }
            (None, Some(ar)) => {
                return Some((
                    NetKind::T1SecurityPolicy,
                    format!(
                        "the Supervisor serves {} and not the crd.nsx.vmware.com group",
                        resource_name(ar)
                    ),
                ))
            }
            (None, None) => return None,
            (Some(_), Some(_)) => {}
        }
        if let Some(ns) = namespace.filter(|n| {
            n.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(VPC_NETWORK_CONFIG_ANNOTATION))
        }) {
            return Some((
                NetKind::VpcSecurityPolicy,
                format!(
                    "the Namespace {} carries {VPC_NETWORK_CONFIG_ANNOTATION} (on VPC networking: nsx-operator reconciles crd.nsx.vmware.com)",
                    bounded(name(ns))
                ),
            ));
        }
        for vm in vms {
            if let Some((kind, network, interface)) = interfaces(vm)
                .into_iter()
                .find(|(kind, _, _)| matches!(*kind, "SubnetSet" | "Subnet"))
            {
                return Some((
                    NetKind::VpcSecurityPolicy,
                    format!(
                        "the control-plane VM {}'s interface {} is on {kind} {} (VPC networking: nsx-operator reconciles crd.nsx.vmware.com)",
                        bounded(name(vm)),
                        bounded(&interface),
                        bounded(network)
                    ),
                ));
            }
        }
        None
    }
}

/// A VM's interfaces as (network kind, network name, interface name): v1alpha2 and later
/// `spec.network.interfaces[].network` (kind, name), v1alpha1 `spec.networkInterfaces[]`
/// (`networkType` as vm-operator converts it, `api/v1alpha1/virtualmachine_conversion.go`:
/// `nsx-t` VirtualNetwork, `nsx-t-subnet` Subnet, `nsx-t-subnetset` SubnetSet,
/// `vsphere-distributed` Network; the interfaces named `eth<i>`). A kind left out is
/// vm-operator's default for the Supervisor's networking, which says nothing here.
fn interfaces(vm: &DynamicObject) -> Vec<(&str, &str, String)> {
    let current = vm
        .data
        .pointer("/spec/network/interfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| {
            Some((
                i.pointer("/network/kind")?.as_str()?,
                i.pointer("/network/name")?.as_str()?,
                i.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ))
        });
    let v1alpha1 = vm
        .data
        .pointer("/spec/networkInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, n)| {
            let kind = match n.get("networkType")?.as_str()? {
                "nsx-t" => "VirtualNetwork",
                "nsx-t-subnet" => "Subnet",
                "nsx-t-subnetset" => "SubnetSet",
                "vsphere-distributed" => "Network",
                _ => return None,
            };
            Some((kind, n.get("networkName")?.as_str()?, format!("eth{i}")))
        });
    current.chain(v1alpha1).collect()
}

pub(crate) fn uid(o: &DynamicObject) -> Option<&str> {
    o.metadata.uid.as_deref().filter(|u| !u.is_empty())
}

/// An owner reference of `kind` with `uid` (any, controller or not).
fn owner_uid(o: &DynamicObject, kind: &str, uid: &str) -> bool {
    o.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == kind && r.uid == uid)
}

/// The uid of `o`'s controller owner reference, when it is of `kind`.
pub(crate) fn controller_uid<'a>(o: &'a DynamicObject, kind: &str) -> Option<&'a str> {
    o.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .filter(|r| r.kind == kind && !r.uid.is_empty())
        .map(|r| r.uid.as_str())
}

/// Without owner references (CAPI has not reconciled it yet) the reference's name decides; with
/// any, one must be a Cluster with the Cluster's uid.
fn owned_by_cluster(o: &DynamicObject, cluster_uid: Option<&str>) -> bool {
    match o.metadata.owner_references.as_deref() {
        None | Some([]) => true,
        Some(_) => cluster_uid.is_some_and(|u| owner_uid(o, "Cluster", u)),
    }
}

/// A SecurityPolicy's `spec.priority` (nsx-operator's default 0 when absent; anything that is
/// not a whole number ranks last).
fn priority(o: &DynamicObject) -> i64 {
    match o.data.pointer("/spec/priority") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().unwrap_or(i64::MAX),
    }
}

/// The count in an [`OTHERS_NOTE`]'s rest (`: N left out ...`); None for a failure.
fn left_out_of(rest: &str) -> Option<usize> {
    let rest = rest.strip_prefix(": ")?;
    let mut words = rest.split(' ');
    let n = words.next()?.parse().ok()?;
    (words.next()? == "left").then_some(n)
}

/// A control-plane VM as a `vmSelector` and a peer see it: its name, its labels and its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmEndpoint {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The address the VM reports (None: none, or one the plugin refuses, see
    /// [`super::address`]).
    pub ip: Option<std::net::IpAddr>,
}

impl NetworkObjects {
    /// The control-plane VMs' names, labels and addresses, read as the facts read them.
    pub fn vm_endpoints(&self) -> Vec<VmEndpoint> {
        self.vms
            .iter()
            .map(|vm| VmEndpoint {
                name: name(vm).to_string(),
                labels: vm.metadata.labels.clone().unwrap_or_default(),
                ip: super::extract::vm_address(&vm.data).0,
            })
            .collect()
    }

    /// Every object with the kind it was read as, in a fixed order (the evidence bundle's).
    pub fn objects(&self) -> Vec<(NetKind, &DynamicObject)> {
        let mut out: Vec<(NetKind, &DynamicObject)> = self
            .security_policies
            .iter()
            .map(|(k, o)| (*k, o))
            .collect();
        out.extend(
            self.network_policies
                .iter()
                .map(|o| (NetKind::NetworkPolicy, o)),
        );
        out.extend(self.subnet_sets.iter().map(|o| (NetKind::SubnetSet, o)));
        out.extend(self.subnets.iter().map(|o| (NetKind::Subnet, o)));
        out.extend(self.subnet_ports.iter().map(|o| (NetKind::SubnetPort, o)));
        out.extend(
            self.virtual_networks
                .iter()
                .map(|o| (NetKind::VirtualNetwork, o)),
        );
        out.extend(
            self.namespace_object
                .iter()
                .map(|o| (NetKind::Namespace, o)),
        );
        out.extend(
            self.vsphere_cluster
                .iter()
                .map(|o| (NetKind::VSphereCluster, o)),
        );
        out
    }
}

/// `s` cut at [`MAX_TEXT_CHARS`] characters.
pub(crate) fn bounded(s: &str) -> String {
    match s.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[path = "network_tests.rs"]
pub(crate) mod tests;
