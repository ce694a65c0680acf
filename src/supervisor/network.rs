//! The cluster's network as the Supervisor shows it: NSX SecurityPolicies, NetworkPolicies,
//! SubnetSets/Subnets/SubnetPorts (VPC) or the VirtualNetwork (NCP), the Namespace's and the
//! VSphereCluster's network conditions; read only when the Supervisor serves an NSX group.
//!
//! Reading ([`read`]) is apart from slicing ([`NetworkRead::of_cluster`]) and from the realization
//! findings ([`realization`], pure), as for the rest of the inventory. A request that fails (403,
//! 404, or anything else) is a note in [`NetworkObjects::unread`], never a failure: the network is
//! extra evidence, and a diagnosis goes on without it.
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

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::discovery::{SupervisorApis, INFRA_GROUP};

/// nsx-operator's group on VPC networking.
pub const NSX_VPC_GROUP: &str = "crd.nsx.vmware.com";
/// nsx-operator's group on NCP/T1 networking (the legacy API).
pub const NSX_T1_GROUP: &str = "nsx.vmware.com";
/// NCP's group (VirtualNetwork).
pub const NCP_GROUP: &str = "vmware.com";
pub const NETWORKING_GROUP: &str = "networking.k8s.io";
/// nsx-operator's annotation on a NetworkPolicy it failed to realize.
pub const NSX_ERROR_ANNOTATION: &str = "nsx-op/error";
/// CAPI's cluster label on the VSphereCluster (the inventory's `CLUSTER_NAME_LABEL`, which sits
/// above this module).
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// The most objects of one kind kept per read; beyond it a note says how many were left out.
pub const MAX_OBJECTS_PER_KIND: usize = 500;
/// The most characters kept of a condition's reason or message, or an annotation's text.
pub const MAX_TEXT_CHARS: usize = 512;
/// The most notes of what could not be read that an evidence bundle's are taken in, and their
/// length (a bundle is anyone's file; ours has one note per resource at most).
pub const MAX_NOTES: usize = 32;
pub const MAX_NOTE_CHARS: usize = 300;

/// What a network object is, with its group and kind as the Supervisor serves them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, strum::Display,
)]
pub enum NetKind {
    /// `crd.nsx.vmware.com` SecurityPolicy (VPC).
    VpcSecurityPolicy,
    /// `nsx.vmware.com` SecurityPolicy (NCP/T1).
    T1SecurityPolicy,
    NetworkPolicy,
    SubnetSet,
    Subnet,
    SubnetPort,
    VirtualNetwork,
    Namespace,
    VSphereCluster,
}

impl NetKind {
    pub const ALL: [NetKind; 9] = [
        NetKind::VpcSecurityPolicy,
        NetKind::T1SecurityPolicy,
        NetKind::NetworkPolicy,
        NetKind::SubnetSet,
        NetKind::Subnet,
        NetKind::SubnetPort,
        NetKind::VirtualNetwork,
        NetKind::Namespace,
        NetKind::VSphereCluster,
    ];

    pub fn group(self) -> &'static str {
        match self {
            NetKind::VpcSecurityPolicy
            | NetKind::SubnetSet
            | NetKind::Subnet
            | NetKind::SubnetPort => NSX_VPC_GROUP,
            NetKind::T1SecurityPolicy => NSX_T1_GROUP,
            NetKind::NetworkPolicy => NETWORKING_GROUP,
            NetKind::VirtualNetwork => NCP_GROUP,
            NetKind::Namespace => "",
            NetKind::VSphereCluster => INFRA_GROUP,
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            NetKind::VpcSecurityPolicy | NetKind::T1SecurityPolicy => "SecurityPolicy",
            NetKind::NetworkPolicy => "NetworkPolicy",
            NetKind::SubnetSet => "SubnetSet",
            NetKind::Subnet => "Subnet",
            NetKind::SubnetPort => "SubnetPort",
            NetKind::VirtualNetwork => "VirtualNetwork",
            NetKind::Namespace => "Namespace",
            NetKind::VSphereCluster => "VSphereCluster",
        }
    }

    /// Whether the kind alone says the Supervisor runs NSX networking.
    fn is_nsx(self) -> bool {
        matches!(
            self,
            NetKind::VpcSecurityPolicy
                | NetKind::T1SecurityPolicy
                | NetKind::SubnetSet
                | NetKind::Subnet
                | NetKind::SubnetPort
                | NetKind::VirtualNetwork
        )
    }
}

/// `resource.group` (`securitypolicies.crd.nsx.vmware.com`; `namespaces` for the core group),
/// as RBAC and kubectl name it.
pub fn resource_name(ar: &ApiResource) -> String {
    if ar.group.is_empty() {
        ar.plural.clone()
    } else {
        format!("{}.{}", ar.plural, ar.group)
    }
}

/// What to read, from discovery: nothing unless the Supervisor serves an NSX kind
/// (crd.nsx.vmware.com, nsx.vmware.com, or vmware.com's VirtualNetwork); then every NSX kind
/// served, the NetworkPolicies and VSphereClusters when served, and the Namespace.
pub fn plan(apis: &SupervisorApis) -> Vec<(NetKind, ApiResource)> {
    let served = |k: NetKind| {
        if k == NetKind::Namespace {
            return Some(ApiResource::from_gvk(&GroupVersionKind::gvk(
                "",
                "v1",
                "Namespace",
            )));
        }
        apis.kind_in(k.group(), k.kind())
    };
    let plan: Vec<(NetKind, ApiResource)> = NetKind::ALL
        .into_iter()
        .filter_map(|k| served(k).map(|ar| (k, ar)))
        .collect();
    if !plan.iter().any(|(k, _)| k.is_nsx()) {
        return Vec::new();
    }
    plan
}

/// One resource read, and how many of its objects were kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadCount {
    /// `resource.group`, e.g. `securitypolicies.crd.nsx.vmware.com`.
    pub resource: String,
    pub count: usize,
}

/// What one read of the network gave (one namespace, or every namespace with `-A`), before it
/// is sliced per cluster.
#[derive(Debug, Clone, Default)]
pub struct NetworkRead {
    /// The resources asked for, by kind.
    pub resources: BTreeMap<NetKind, ApiResource>,
    pub objects: BTreeMap<NetKind, Vec<DynamicObject>>,
    /// The resources whose request was answered.
    pub answered: BTreeSet<NetKind>,
    /// One note per request that failed ("list securitypolicies.crd.nsx.vmware.com in
    /// namespace ns-prod: forbidden").
    pub unread: Vec<String>,
}

/// The network objects of one cluster ([`NetworkRead::of_cluster`]), as read.
#[derive(Debug, Clone, Default)]
pub struct NetworkObjects {
    pub namespace: String,
    pub cluster: String,
    /// The namespace's SecurityPolicies, each with the kind it was read as (which group).
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
    /// The cluster's control-plane VMs' names (a SubnetPort they own is theirs).
    pub control_plane_vms: Vec<String>,
    /// The cluster's control-plane VirtualMachines, as read: their labels are what a
    /// `vmSelector` selects (nsx-operator copies them onto the VM's port), their
    /// `status.network` the addresses. The same objects as the inventory's.
    pub vms: Vec<DynamicObject>,
    /// What was read: each resource answered, with the objects kept for this cluster.
    pub read: Vec<ReadCount>,
    /// What could not be read, one note per failed request.
    pub unread: Vec<String>,
    /// Which SecurityPolicy kind nsx-operator reconciles for this namespace (issue 28):
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

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

fn in_ns(o: &DynamicObject, ns: &str) -> bool {
    o.metadata.namespace.as_deref() == Some(ns)
}

/// Why a request failed, in words fit for a note: fixed words for 403/404, the HTTP code and
/// the server's reason word otherwise (never its message: someone else's text).
fn failure(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 403 => "forbidden".to_string(),
        kube::Error::Api(s) if s.code == 404 => "not found".to_string(),
        kube::Error::Api(s) => {
            let reason: String = s
                .reason
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .take(40)
                .collect();
            format!("failed (HTTP {} {reason})", s.code).replace(" )", ")")
        }
        _ => "failed (no answer: the connection failed or the request went past its bounds)"
            .to_string(),
    }
}

/// Reads what [`plan`] says, in `ns` (None: across all namespaces, and every Namespace). The
/// requests run together; each failure is a note. Returns None when nothing is to be read.
pub async fn read(client: &Client, apis: &SupervisorApis, ns: Option<&str>) -> Option<NetworkRead> {
    let plan = plan(apis);
    if plan.is_empty() {
        return None;
    }
    let answers = join_all(plan.iter().map(|(kind, ar)| async move {
        let resource = resource_name(ar);
        let (verb, result) = match (kind, ns) {
            (NetKind::Namespace, Some(ns)) => {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
                ("get", api.get(ns).await.map(|o| vec![o]))
            }
            (NetKind::Namespace, None) => {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
                (
                    "list",
                    api.list(&ListParams::default()).await.map(|l| l.items),
                )
            }
            (_, Some(ns)) => {
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, ar);
                (
                    "list",
                    api.list(&ListParams::default()).await.map(|l| l.items),
                )
            }
            (_, None) => {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
                (
                    "list",
                    api.list(&ListParams::default()).await.map(|l| l.items),
                )
            }
        };
        let place = match (kind, ns) {
            (NetKind::Namespace, Some(ns)) => format!("{resource} {ns}"),
            (_, Some(ns)) => format!("{resource} in namespace {ns}"),
            (_, None) => format!("{resource} in all namespaces"),
        };
        (
            *kind,
            result.map_err(|e| format!("{verb} {place}: {}", failure(&e))),
        )
    }))
    .await;
    let mut out = NetworkRead {
        resources: plan.into_iter().collect(),
        ..NetworkRead::default()
    };
    for (kind, answer) in answers {
        match answer {
            Ok(mut items) => {
                if items.len() > MAX_OBJECTS_PER_KIND {
                    out.unread.push(format!(
                        "{}: only the first {MAX_OBJECTS_PER_KIND} of {} objects kept",
                        resource_name(&out.resources[&kind]),
                        items.len()
                    ));
                    items.truncate(MAX_OBJECTS_PER_KIND);
                }
                out.answered.insert(kind);
                out.objects.insert(kind, items);
            }
            Err(note) => out.unread.push(note),
        }
    }
    Some(out)
}

impl NetworkRead {
    /// What [`plan`] would read, with no answer yet: an evidence bundle's objects are put in
    /// with [`NetworkRead::take`]; every planned resource counts as answered (a bundle keeps
    /// the objects, not the notes).
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
    pub fn with_notes(mut self, notes: &[String]) -> NetworkRead {
        self.unread = notes
            .iter()
            .take(MAX_NOTES)
            .map(|n| match n.char_indices().nth(MAX_NOTE_CHARS) {
                Some((cut, _)) => format!("{}…", &n[..cut]),
                None => n.clone(),
            })
            .collect();
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

    /// Keeps `o` when its apiVersion and kind are one of the planned resources'; gives it back
    /// otherwise.
    pub fn take(
        &mut self,
        api_version: &str,
        kind: &str,
        o: DynamicObject,
    ) -> Option<DynamicObject> {
        let found = self
            .resources
            .iter()
            .find(|(_, ar)| ar.api_version == api_version && ar.kind == kind)
            .map(|(k, _)| *k);
        match found {
            Some(k) => {
                self.objects.entry(k).or_default().push(o);
                None
            }
            None => Some(o),
        }
    }

    /// The part of a cross-namespace read that is in `ns` (the notes go with every part).
    pub fn in_namespace(&self, ns: &str) -> NetworkRead {
        NetworkRead {
            resources: self.resources.clone(),
            objects: self
                .objects
                .iter()
                .map(|(k, list)| {
                    let keep: Vec<DynamicObject> = list
                        .iter()
                        .filter(|o| {
                            if *k == NetKind::Namespace {
                                name(o) == ns
                            } else {
                                in_ns(o, ns)
                            }
                        })
                        .cloned()
                        .collect();
                    (*k, keep)
                })
                .collect(),
            answered: self.answered.clone(),
            unread: self.unread.clone(),
        }
    }

    fn all(&self, k: NetKind) -> &[DynamicObject] {
        self.objects.get(&k).map(Vec::as_slice).unwrap_or_default()
    }

    /// One cluster's network objects (pure): the namespace's SecurityPolicies and
    /// NetworkPolicies; the SubnetSets, Subnets and VirtualNetworks the control-plane VMs'
    /// interfaces name or CAPV made for the cluster (named as its VSphereCluster, `-vnet` for
    /// NCP, or owned by it); the SubnetPorts of those or controller-owned by a control-plane VM;
    /// the Namespace and the VSphereCluster. `vms` are the cluster's control-plane VMs and
    /// `infra` the name in the Cluster's `spec.infrastructureRef`.
    pub fn of_cluster(
        &self,
        ns: &str,
        cluster: &str,
        infra: Option<&str>,
        vms: &[&DynamicObject],
    ) -> NetworkObjects {
        let here = |k: NetKind| self.all(k).iter().filter(|o| in_ns(o, ns));
        let vsphere_cluster = here(NetKind::VSphereCluster)
            .find(|o| {
                Some(name(o)) == infra
                    || o.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(CLUSTER_NAME_LABEL))
                        .map(String::as_str)
                        == Some(cluster)
            })
            .cloned();
        let vsc_name = vsphere_cluster
            .as_ref()
            .map(|o| name(o).to_string())
            .or(infra.map(str::to_string));
        // The networks the VMs' interfaces name: (kind, name).
        let named: BTreeSet<(String, String)> = vms
            .iter()
            .flat_map(|vm| {
                vm.data
                    .pointer("/spec/network/interfaces")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| {
                        Some((
                            i.pointer("/network/kind")?.as_str()?.to_string(),
                            i.pointer("/network/name")?.as_str()?.to_string(),
                        ))
                    })
            })
            .collect();
        let vm_names: Vec<String> = vms.iter().map(|v| name(v).to_string()).collect();
        let owned_by = |o: &DynamicObject, kind: &str, who: &str| {
            o.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.kind == kind && r.name == who)
        };
        let ours = |o: &DynamicObject, kind: &str| {
            let n = name(o);
            named.contains(&(kind.to_string(), n.to_string()))
                || vsc_name.as_deref().is_some_and(|v| {
                    n == v || owned_by(o, "VSphereCluster", v) || n == format!("{v}-vnet")
                })
                || n == format!("{cluster}-vnet")
        };
        let subnet_sets: Vec<DynamicObject> = here(NetKind::SubnetSet)
            .filter(|o| ours(o, "SubnetSet"))
            .cloned()
            .collect();
        let subnets: Vec<DynamicObject> = here(NetKind::Subnet)
            .filter(|o| ours(o, "Subnet"))
            .cloned()
            .collect();
        let parent = |o: &DynamicObject, field: &str, list: &[DynamicObject]| {
            o.data
                .pointer(&format!("/spec/{field}"))
                .and_then(Value::as_str)
                .is_some_and(|p| list.iter().any(|s| name(s) == p))
        };
        let subnet_ports: Vec<DynamicObject> = here(NetKind::SubnetPort)
            .filter(|o| {
                vm_names.iter().any(|v| owned_by(o, "VirtualMachine", v))
                    || parent(o, "subnetSet", &subnet_sets)
                    || parent(o, "subnet", &subnets)
            })
            .cloned()
            .collect();
        let virtual_networks: Vec<DynamicObject> = here(NetKind::VirtualNetwork)
            .filter(|o| ours(o, "VirtualNetwork"))
            .cloned()
            .collect();
        let security_policies: Vec<(NetKind, DynamicObject)> =
            [NetKind::VpcSecurityPolicy, NetKind::T1SecurityPolicy]
                .into_iter()
                .flat_map(|k| here(k).map(move |o| (k, o.clone())))
                .collect();
        let network_policies: Vec<DynamicObject> = here(NetKind::NetworkPolicy).cloned().collect();
        let namespace_object = self
            .all(NetKind::Namespace)
            .iter()
            .find(|o| name(o) == ns)
            .cloned();
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
        NetworkObjects {
            namespace: ns.to_string(),
            cluster: cluster.to_string(),
            security_policies,
            network_policies,
            subnet_sets,
            subnets,
            subnet_ports,
            virtual_networks,
            namespace_object,
            vsphere_cluster,
            control_plane_vms: vm_names,
            vms: vms.iter().map(|v| (*v).clone()).collect(),
            read,
            unread: self.unread.clone(),
            live_policy_kind: None,
            networking_basis: None,
            policies_left_out: 0,
        }
    }
}

/// A control-plane VM as a `vmSelector` and a peer see it: its name, its labels and its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmEndpoint {
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

/// A network object NSX (or CAPV) says is not realized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RealizationProblem {
    /// The object's kind (`SubnetPort`, `VirtualNetwork`, `Namespace`, ...).
    pub kind: String,
    pub name: String,
    /// The condition's type (`Ready`, `NamespaceNetworkReady`, `ClusterNetworkReady`), or the
    /// annotation's key (`nsx-op/error`).
    pub condition: String,
    /// The condition's status (`False`, `Unknown`); None for an annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The condition's message or the annotation's text, at most [`MAX_TEXT_CHARS`] characters
    /// (verbatim otherwise: a renderer makes it visible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The control-plane VM whose SubnetPort this is: that VM's network is not realized, a
    /// cause of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    /// Only the object's own annotation says so (a NetworkPolicy's `nsx-op/error`): anyone who
    /// may edit the object can write it, so it is the object's claim, never NSX's status.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
}

fn bounded(s: &str) -> String {
    match s.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// The first condition of `kind` in `status.conditions` that is not True, as a problem.
fn not_true(o: &DynamicObject, object_kind: &str, condition: &str) -> Option<RealizationProblem> {
    let c = o
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(condition))?;
    let status = c.get("status").and_then(Value::as_str).unwrap_or("Unknown");
    if status == "True" {
        return None;
    }
    let text = |k: &str| c.get(k).and_then(Value::as_str).map(bounded);
    Some(RealizationProblem {
        kind: object_kind.to_string(),
        name: bounded(name(o)),
        condition: condition.to_string(),
        status: Some(bounded(status)),
        reason: text("reason"),
        message: text("message"),
        vm: None,
        claim: false,
    })
}

/// What the cluster's network objects say NSX failed to realize (pure): a SubnetSet, Subnet,
/// SubnetPort or VirtualNetwork whose `Ready` is not True, the Namespace's
/// `NamespaceNetworkReady` and the VSphereCluster's `ClusterNetworkReady` not True, a
/// NetworkPolicy with an `nsx-op/error` annotation. A condition that is absent says nothing
/// (not yet reconciled, or an older operator). SecurityPolicies are the evaluation's.
pub fn realization(objects: &NetworkObjects) -> Vec<RealizationProblem> {
    let mut out = Vec::new();
    for (list, kind) in [
        (&objects.subnet_sets, "SubnetSet"),
        (&objects.subnets, "Subnet"),
        (&objects.virtual_networks, "VirtualNetwork"),
    ] {
        out.extend(list.iter().filter_map(|o| not_true(o, kind, "Ready")));
    }
    for port in &objects.subnet_ports {
        if let Some(mut p) = not_true(port, "SubnetPort", "Ready") {
            p.vm = port
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.kind == "VirtualMachine" && objects.control_plane_vms.contains(&r.name))
                .map(|r| r.name.clone());
            out.push(p);
        }
    }
    out.extend(
        objects
            .namespace_object
            .iter()
            .filter_map(|o| not_true(o, "Namespace", "NamespaceNetworkReady")),
    );
    out.extend(
        objects
            .vsphere_cluster
            .iter()
            .filter_map(|o| not_true(o, "VSphereCluster", "ClusterNetworkReady")),
    );
    for np in &objects.network_policies {
        if let Some(text) = np
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(NSX_ERROR_ANNOTATION))
        {
            out.push(RealizationProblem {
                kind: "NetworkPolicy".to_string(),
                name: bounded(name(np)),
                condition: NSX_ERROR_ANNOTATION.to_string(),
                status: None,
                reason: None,
                message: Some(bounded(text)),
                vm: None,
                claim: false,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
