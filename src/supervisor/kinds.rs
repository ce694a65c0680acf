//! Every kind the plugin reads from the Supervisor, in one table ([`KINDS`]): its group, its
//! resource, its scope, which objects of it are asked for, which version, and whether the
//! Supervisor may lack it. Pure facts: the reader ([`super::read`]) asks for what a row says, the
//! inventory ([`super::Inventory`]) keeps the objects per kind, the evidence bundle maps them by
//! the row's resource. No request on the Supervisor's objects is made otherwise: the rows read
//! by name for their callers ([`Selector::Named`]: the cluster's secrets, the VPC objects) too
//! (`tests/it/architecture.rs` fails on an `Api` built elsewhere, `tests/it/rbac.rs` on a
//! request for a resource no row names).

use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use serde::{Deserialize, Serialize};

pub(crate) const VMOPERATOR_GROUP: &str = "vmoperator.vmware.com";
pub(crate) const CAPI_GROUP: &str = "cluster.x-k8s.io";
#[cfg(test)]
pub(crate) const CONTROLPLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
/// CAPV's Supervisor-mode group (VSphereMachine v1beta1, and v1beta2 from CAPV 1.14; the join
/// reads only `metadata`, the same in every version).
pub(crate) const INFRA_GROUP: &str = "vmware.infrastructure.cluster.x-k8s.io";
/// nsx-operator's group on VPC networking.
pub(crate) const NSX_VPC_GROUP: &str = "crd.nsx.vmware.com";
/// nsx-operator's group on NCP/T1 networking (the legacy API).
pub(crate) const NSX_T1_GROUP: &str = "nsx.vmware.com";
/// NCP's group (VirtualNetwork).
pub(crate) const NCP_GROUP: &str = "vmware.com";
pub(crate) const NETWORKING_GROUP: &str = "networking.k8s.io";

pub(crate) const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub(crate) const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";

/// Which kind an object is, as the inventory keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KindId {
    Cluster,
    /// Whatever kind a Cluster's `spec.controlPlaneRef` names (KubeadmControlPlane).
    ControlPlane,
    Machine,
    VSphereMachine,
    VirtualMachine,
    /// CAPI's MachineHealthCheck: what may mark the control-plane Machines for remediation
    /// (the remediation guard, [`super::remediation`]).
    MachineHealthCheck,
    /// A network kind: read only when the Supervisor serves an NSX group.
    Net(NetKind),
    /// The core Secret: `<cluster>-kubeconfig` (the workload API check, `crate::workload`) and
    /// `<cluster>-ssh` (the ssh route's key), each read by name ([`Selector::Named`]).
    Secret,
    /// nsx-operator's cluster-scoped VPCNetworkConfiguration the Namespace names, read by name
    /// only for NSX Manager on VPC networking ([`super::read::read_vpc_objects`]).
    VpcNetworkConfiguration,
    /// nsx-operator's NetworkInfo named as the namespace (which VPC it is on), likewise.
    NetworkInfo,
}

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

/// Where a kind's group comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Named(&'static str),
    /// The group a Cluster's `spec.controlPlaneRef` names (any served group).
    Referenced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResourceScope {
    Namespaced,
    /// A cluster-scoped kind: its object for a namespace is the one named as the namespace.
    Cluster,
}

/// Which objects of a kind are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selector {
    /// Every object of the namespace (one cluster's: the Cluster by name).
    All,
    /// The object a Cluster's `spec.controlPlaneRef` names (by name for one cluster; every
    /// object of each kind referenced for many).
    ControlPlaneRef,
    /// CAPI's control-plane label, and for one cluster its cluster-name label.
    ControlPlaneLabel,
    /// vm-operator's control-plane role label under each VM label scheme ([`VM_LABELS`]):
    /// `capw` only for a cluster with no VM under `capv`.
    VmRole,
    /// The vSphere Namespace itself (every Namespace across all namespaces).
    OwnNamespace,
    /// CAPI's cluster-name label: for one cluster its value, for many every object carrying it
    /// (CAPI's MachineHealthCheck webhook sets it from `spec.clusterName`).
    ClusterLabel,
    /// One object by the name its caller gives ([`super::read::named`]), never by the walk:
    /// nothing of it is in the inventory or an evidence bundle (a secret is never kept).
    Named,
}

/// Which version is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versions {
    /// The group's preferred version, as discovery says (never hard-coded).
    Preferred,
    /// This version only (the core group's `v1`).
    Only(&'static str),
}

/// Whether the Supervisor may lack the kind, and what a failed request means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Not served: not a Supervisor; a failed request fails the read.
    Required,
    /// Read when served; a failed request fails the read.
    WhenServed,
    /// Read when served; not found (404) is not served, any other failed request (403, …)
    /// is a note, never a failure: what the kind tells is advice beside the verdict (the
    /// remediation guard).
    Advice,
    /// Read when served; the walk can do without it: a 403 is the finding
    /// `PermissionMissing` naming the permission ([`super::facts::MissingPermission`]) and the
    /// run goes on without the kind (VSphereMachines: the join goes by the Machines'
    /// references and names, [`super::join`]); any other failed request fails the read.
    Degrade,
    /// Network evidence: read when served and the Supervisor serves an NSX group; a failed
    /// request is a note, a list is cut per namespace ([`super::network`]).
    Evidence,
    /// Read by its caller ([`Selector::Named`]), which says what a failed request means (the
    /// workload API `Unknown`, the ssh route's error, NSX Manager's gap).
    Caller,
}

/// One kind the plugin reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub id: KindId,
    /// The kind's name (`Cluster`); None for the referenced control plane.
    pub name: Option<&'static str>,
    pub group: Group,
    /// The plural (`clusters`), where discovery lists no resources; None: derived from the kind.
    pub resource: Option<&'static str>,
    pub(crate) scope: ResourceScope,
    pub(crate) selector: Selector,
    pub(crate) versions: Versions,
    pub(crate) optional: Need,
}

const fn kind(
    id: KindId,
    name: &'static str,
    group: &'static str,
    resource: &'static str,
    selector: Selector,
    optional: Need,
) -> Kind {
    Kind {
        id,
        name: Some(name),
        group: Group::Named(group),
        resource: Some(resource),
        scope: ResourceScope::Namespaced,
        selector,
        versions: Versions::Preferred,
        optional,
    }
}

const fn net(id: NetKind, name: &'static str, group: &'static str, resource: &'static str) -> Kind {
    kind(
        KindId::Net(id),
        name,
        group,
        resource,
        Selector::All,
        Need::Evidence,
    )
}

/// Every kind read, in the order the evidence bundle ranks them and a network read names them.
pub const KINDS: &[Kind] = &[
    kind(
        KindId::Cluster,
        "Cluster",
        CAPI_GROUP,
        "clusters",
        Selector::All,
        Need::Required,
    ),
    Kind {
        id: KindId::ControlPlane,
        name: None,
        group: Group::Referenced,
        resource: None,
        scope: ResourceScope::Namespaced,
        selector: Selector::ControlPlaneRef,
        versions: Versions::Preferred,
        optional: Need::WhenServed,
    },
    kind(
        KindId::Machine,
        "Machine",
        CAPI_GROUP,
        "machines",
        Selector::ControlPlaneLabel,
        Need::Required,
    ),
    // KCP gives its infrastructure machines the Machines' labels. Not documented among what a
    // vSphere Namespace's "Can edit" grants: without it the VMs are joined to the Machines by
    // the Machines' references (v1beta1's uid) and names.
    kind(
        KindId::VSphereMachine,
        "VSphereMachine",
        INFRA_GROUP,
        "vspheremachines",
        Selector::ControlPlaneLabel,
        Need::Degrade,
    ),
    kind(
        KindId::VirtualMachine,
        "VirtualMachine",
        VMOPERATOR_GROUP,
        "virtualmachines",
        Selector::VmRole,
        Need::Required,
    ),
    kind(
        KindId::MachineHealthCheck,
        "MachineHealthCheck",
        CAPI_GROUP,
        "machinehealthchecks",
        Selector::ClusterLabel,
        Need::Advice,
    ),
    net(
        NetKind::VpcSecurityPolicy,
        "SecurityPolicy",
        NSX_VPC_GROUP,
        "securitypolicies",
    ),
    net(
        NetKind::T1SecurityPolicy,
        "SecurityPolicy",
        NSX_T1_GROUP,
        "securitypolicies",
    ),
    net(
        NetKind::NetworkPolicy,
        "NetworkPolicy",
        NETWORKING_GROUP,
        "networkpolicies",
    ),
    net(NetKind::SubnetSet, "SubnetSet", NSX_VPC_GROUP, "subnetsets"),
    net(NetKind::Subnet, "Subnet", NSX_VPC_GROUP, "subnets"),
    net(
        NetKind::SubnetPort,
        "SubnetPort",
        NSX_VPC_GROUP,
        "subnetports",
    ),
    net(
        NetKind::VirtualNetwork,
        "VirtualNetwork",
        NCP_GROUP,
        "virtualnetworks",
    ),
    Kind {
        id: KindId::Net(NetKind::Namespace),
        name: Some("Namespace"),
        group: Group::Named(""),
        resource: Some("namespaces"),
        scope: ResourceScope::Cluster,
        selector: Selector::OwnNamespace,
        versions: Versions::Only("v1"),
        optional: Need::Evidence,
    },
    net(
        NetKind::VSphereCluster,
        "VSphereCluster",
        INFRA_GROUP,
        "vsphereclusters",
    ),
    Kind {
        id: KindId::Secret,
        name: Some("Secret"),
        group: Group::Named(""),
        resource: Some("secrets"),
        scope: ResourceScope::Namespaced,
        selector: Selector::Named,
        versions: Versions::Only("v1"),
        optional: Need::Caller,
    },
    // Cluster-scoped (nsx-operator's
    // pkg/apis/vpc/v1alpha1/vpcnetworkconfiguration_types.go, `+kubebuilder:resource:scope=Cluster`).
    Kind {
        id: KindId::VpcNetworkConfiguration,
        name: Some("VPCNetworkConfiguration"),
        group: Group::Named(NSX_VPC_GROUP),
        resource: Some("vpcnetworkconfigurations"),
        scope: ResourceScope::Cluster,
        selector: Selector::Named,
        versions: Versions::Preferred,
        optional: Need::Caller,
    },
    kind(
        KindId::NetworkInfo,
        "NetworkInfo",
        NSX_VPC_GROUP,
        "networkinfos",
        Selector::Named,
        Need::Caller,
    ),
];

/// The VM label schemes, newest first: `capv.vmware.com/*`, and the `capw.vmware.com/*` of older
/// Supervisors (used only for a cluster with no VM under the first).
pub(crate) const VM_LABELS: [(super::facts::VmLabelScheme, &str); 2] = [
    (super::facts::VmLabelScheme::Capv, "capv.vmware.com"),
    (super::facts::VmLabelScheme::Capw, "capw.vmware.com"),
];

impl KindId {
    /// The kind's row in [`KINDS`].
    pub(crate) fn row(self) -> &'static Kind {
        KINDS
            .iter()
            .find(|k| k.id == self)
            .expect("every kind has its row")
    }
}

impl Kind {
    /// Whether the walk reads the kind (the inventory, an evidence bundle): every row but those
    /// read by name for a caller ([`Selector::Named`]).
    pub fn walked(&self) -> bool {
        self.selector != Selector::Named
    }

    /// The resource of a row whose version is fixed ([`Versions::Only`]): no discovery needed.
    pub fn fixed(&self) -> Option<ApiResource> {
        let (Group::Named(group), Some(name), Versions::Only(v)) =
            (self.group, self.name, self.versions)
        else {
            return None;
        };
        let gvk = GroupVersionKind::gvk(group, v, name);
        Some(match self.resource {
            Some(plural) => ApiResource::from_gvk_with_plural(&gvk, plural),
            None => ApiResource::from_gvk(&gvk),
        })
    }

    /// Whether `o` of this kind is namespace `ns`'s: in it, or for a cluster-scoped kind the
    /// object named as it.
    pub fn holds(&self, o: &DynamicObject, ns: &str) -> bool {
        match self.scope {
            ResourceScope::Namespaced => o.metadata.namespace.as_deref() == Some(ns),
            ResourceScope::Cluster => o.metadata.name.as_deref() == Some(ns),
        }
    }
}

impl NetKind {
    /// Every network kind, in the table's order.
    pub fn all() -> impl Iterator<Item = NetKind> {
        KINDS.iter().filter_map(|k| match k.id {
            KindId::Net(n) => Some(n),
            _ => None,
        })
    }

    pub fn group(self) -> &'static str {
        match KindId::Net(self).row().group {
            Group::Named(g) => g,
            Group::Referenced => "",
        }
    }

    /// Whether the kind alone says the Supervisor runs NSX networking.
    pub fn is_nsx(self) -> bool {
        matches!(self.group(), NSX_VPC_GROUP | NSX_T1_GROUP | NCP_GROUP)
    }
}

/// The vm-operator role selector of a label scheme (`capv.vmware.com/cluster.role=controlplane`).
pub(crate) fn role_selector(prefix: &str) -> String {
    format!("{prefix}/cluster.role=controlplane")
}

impl Selector {
    /// The label selector asked with (pure): `cluster` narrows it to one cluster, `prefix` is
    /// the VM label scheme's ([`VM_LABELS`]).
    pub fn labels(self, cluster: Option<&str>, prefix: &str) -> Option<String> {
        match (self, cluster) {
            (Selector::ControlPlaneLabel, None) => Some(CONTROL_PLANE_LABEL.to_string()),
            (Selector::ControlPlaneLabel, Some(c)) => {
                Some(format!("{CLUSTER_NAME_LABEL}={c},{CONTROL_PLANE_LABEL}"))
            }
            (Selector::ClusterLabel, None) => Some(CLUSTER_NAME_LABEL.to_string()),
            (Selector::ClusterLabel, Some(c)) => Some(format!("{CLUSTER_NAME_LABEL}={c}")),
            (Selector::VmRole, None) => Some(role_selector(prefix)),
            (Selector::VmRole, Some(c)) => Some(format!(
                "{prefix}/cluster.name={c},{}",
                role_selector(prefix)
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_row() {
        for k in KINDS {
            assert_eq!(KINDS.iter().filter(|o| o.id == k.id).count(), 1, "{k:?}");
            assert_eq!(k.id.row(), k);
        }
        // The network kinds in the order a read names them (`read` in the JSON).
        assert_eq!(
            NetKind::all().map(|k| k.to_string()).collect::<Vec<_>>(),
            [
                "VpcSecurityPolicy",
                "T1SecurityPolicy",
                "NetworkPolicy",
                "SubnetSet",
                "Subnet",
                "SubnetPort",
                "VirtualNetwork",
                "Namespace",
                "VSphereCluster",
            ]
        );
    }

    #[test]
    fn selectors_for_one_cluster_and_for_many() {
        let cp = Selector::ControlPlaneLabel;
        assert_eq!(cp.labels(None, "").as_deref(), Some(CONTROL_PLANE_LABEL));
        assert_eq!(
            cp.labels(Some("tkc"), "").as_deref(),
            Some("cluster.x-k8s.io/cluster-name=tkc,cluster.x-k8s.io/control-plane")
        );
        let vm = Selector::VmRole;
        assert_eq!(
            vm.labels(None, "capw.vmware.com").as_deref(),
            Some("capw.vmware.com/cluster.role=controlplane")
        );
        assert_eq!(
            vm.labels(Some("tkc"), "capv.vmware.com").as_deref(),
            Some("capv.vmware.com/cluster.name=tkc,capv.vmware.com/cluster.role=controlplane")
        );
        assert_eq!(Selector::All.labels(Some("tkc"), ""), None);
        let cl = Selector::ClusterLabel;
        assert_eq!(cl.labels(None, "").as_deref(), Some(CLUSTER_NAME_LABEL));
        assert_eq!(
            cl.labels(Some("tkc"), "").as_deref(),
            Some("cluster.x-k8s.io/cluster-name=tkc")
        );
    }
}
