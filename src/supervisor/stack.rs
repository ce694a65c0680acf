//! The Supervisor's networking stack, from discovery alone: NSX (NCP, a T1 per namespace), NSX
//! VPC, or the vSphere Distributed Switch (VDS). It decides which route can run with the
//! workload API dark (vSphere Pods, so the jumpbox, run only on NSX and VPC) and what the next
//! steps name as what may drop packets between the VMs.
//!
//! What each stack serves, upstream:
//! - vm-operator gives a VM's default interface the network kind of its provider
//!   (vmware-tanzu/vm-operator `webhooks/virtualmachine/v1alpha3/mutation/virtualmachine_mutator.go`,
//!   `AddDefaultNetworkInterface`; `pkg/config` `NetworkProviderType`): `NSXT` → `VirtualNetwork`
//!   of NCP's `vmware.com/v1alpha1` (`external/ncp/api/v1alpha1`), `VSPHERE_NETWORK` (VDS) →
//!   `Network` of net-operator's `netoperator.vmware.com/v1alpha1`
//!   (`external/net-operator/api/v1alpha1`), `NSXT_VPC` → `SubnetSet` of nsx-operator's
//!   `crd.nsx.vmware.com/v1alpha1`.
//! - nsx-operator ships its VPC kinds in `crd.nsx.vmware.com` (`build/yaml/crd/vpc/`:
//!   VPCNetworkConfiguration, NetworkInfo, SubnetSet, Subnet, SubnetPort, SecurityPolicy, …) and
//!   the T1 mode's in `nsx.vmware.com` (`build/yaml/crd/legacy/`: SecurityPolicy,
//!   NSXServiceAccount).
//! - One Supervisor may hold T1 and VPC namespaces at once (nsx-operator `pkg/config/mixed_mode.go`,
//!   per-namespace network providers): NCP's VirtualNetwork and the VPC kinds both served. That
//!   is NSX: its advice names the segment and the VPC rules alike.
//! - A VDS Supervisor serves net-operator and none of the NSX groups. net-operator is not VDS's
//!   alone: its `Network.spec.type` may be `nsx-t` or `nsx-t_vpc` too
//!   (`external/net-operator/api/v1alpha1/network_types.go`), so the NSX groups decide and
//!   net-operator's group says VDS only without them.
//!
//! Nothing here is a namespace editor's: discovery lists what the API server serves.

use super::discovery::SupervisorApis;
use super::facts::{NetworkStack, StackFact};
use super::kinds::{NCP_GROUP, NSX_T1_GROUP, NSX_VPC_GROUP};

/// net-operator's group: the networks of a VDS Supervisor.
pub(crate) const NETOPERATOR_GROUP: &str = "netoperator.vmware.com";

/// nsx-operator's kinds that exist only on VPC networking (`build/yaml/crd/vpc/`).
const VPC_KINDS: &[&str] = &[
    "VPCNetworkConfiguration",
    "NetworkInfo",
    "SubnetSet",
    "Subnet",
    "SubnetPort",
];

/// The stack `apis` shows (pure).
pub(crate) fn of(apis: &SupervisorApis) -> StackFact {
    let served = |group: &str| apis.groups.contains_key(group);
    // A kind is there when its group is served and the answer listed it, or listed no kinds
    // at all (a plain answer: the group alone then says it): `kind_in`.
    let has = |group: &str, kind: &str| apis.kind_in(group, kind).is_some();
    let ncp = has(NCP_GROUP, "VirtualNetwork");
    // Early nsx-operator builds served the VPC kinds in nsx.vmware.com (its CRDs
    // `nsx.vmware.com_vpcnetworkconfigurations.yaml`, `_subnetsets.yaml`): VPC only when listed
    // there, since that group alone is NCP's T1 networking.
    let listed_in_t1 = |kind: &str| {
        apis.groups
            .get(NSX_T1_GROUP)
            .and_then(|g| g.kinds.as_ref())
            .is_some_and(|k| k.contains_key(kind))
    };
    let vpc = VPC_KINDS
        .iter()
        .any(|k| has(NSX_VPC_GROUP, k) || listed_in_t1(k));
    let t1 = served(NSX_T1_GROUP) && !vpc;
    let fact = |stack, evidence: String| StackFact { stack, evidence };
    match (ncp || t1, vpc) {
        (true, true) => fact(
            NetworkStack::Nsx,
            format!(
                "serves NCP's virtualnetworks.{NCP_GROUP} and the VPC kinds of {NSX_VPC_GROUP}: NSX with T1 and VPC namespaces"
            ),
        ),
        (true, false) if ncp => fact(
            NetworkStack::Nsx,
            format!("serves NCP's virtualnetworks.{NCP_GROUP}"),
        ),
        (true, false) => fact(
            NetworkStack::Nsx,
            format!("serves nsx-operator's T1 group {NSX_T1_GROUP}"),
        ),
        (false, true) => fact(
            NetworkStack::Vpc,
            format!("serves nsx-operator's VPC kinds ({NSX_VPC_GROUP})"),
        ),
        (false, false) if served(NETOPERATOR_GROUP) => fact(
            NetworkStack::Vds,
            format!("serves {NETOPERATOR_GROUP} and no NSX group"),
        ),
        (false, false) => fact(
            NetworkStack::Unknown,
            format!(
                "serves none of {NCP_GROUP}, {NSX_T1_GROUP}, {NSX_VPC_GROUP}, {NETOPERATOR_GROUP}"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::discovery::from_answer;
    use serde_json::{json, Value};

    /// A plain `/apis` answer serving vm-operator, CAPI and `extra` groups.
    fn plain(extra: &[&str]) -> Value {
        let mut groups = vec![
            json!({"name": "vmoperator.vmware.com", "preferredVersion": {"version": "v1alpha3"}}),
            json!({"name": "cluster.x-k8s.io", "preferredVersion": {"version": "v1beta1"}}),
        ];
        groups.extend(
            extra
                .iter()
                .map(|g| json!({"name": g, "preferredVersion": {"version": "v1alpha1"}})),
        );
        json!({"kind": "APIGroupList", "groups": groups})
    }

    fn stack(answer: Value) -> StackFact {
        of(&from_answer(&answer, "sv").unwrap())
    }

    #[test]
    fn each_stack_from_its_groups() {
        let s = stack(plain(&["netoperator.vmware.com"]));
        assert_eq!(s.stack, NetworkStack::Vds, "{s:?}");
        assert!(s.evidence.contains("netoperator.vmware.com"), "{s:?}");
        assert_eq!(
            stack(plain(&["vmware.com", "nsx.vmware.com"])).stack,
            NetworkStack::Nsx
        );
        assert_eq!(stack(plain(&["nsx.vmware.com"])).stack, NetworkStack::Nsx);
        assert_eq!(
            stack(plain(&["crd.nsx.vmware.com"])).stack,
            NetworkStack::Vpc
        );
        // NSX groups decide over net-operator's.
        assert_eq!(
            stack(plain(&["crd.nsx.vmware.com", "netoperator.vmware.com"])).stack,
            NetworkStack::Vpc
        );
        // Mixed T1 and VPC namespaces: NSX, named as both.
        let s = stack(plain(&["vmware.com", "crd.nsx.vmware.com"]));
        assert_eq!(s.stack, NetworkStack::Nsx);
        assert!(s.evidence.contains("T1 and VPC"), "{s:?}");
        let s = stack(plain(&[]));
        assert_eq!(s.stack, NetworkStack::Unknown);
        assert!(!NetworkStack::Vds.runs_vsphere_pods());
        assert!(NetworkStack::Unknown.runs_vsphere_pods());
    }

    /// An aggregated answer lists kinds: a vmware.com group without VirtualNetwork is not NCP,
    /// and nsx.vmware.com listing SubnetSets is an early VPC build.
    #[test]
    fn listed_kinds_decide_in_an_aggregated_answer() {
        let group = |name: &str, kinds: &[&str]| {
            json!({"metadata": {"name": name}, "versions": [{"version": "v1alpha1", "resources":
                kinds.iter().map(|k| json!({"resource": format!("{}s", k.to_lowercase()), "responseKind": {"kind": k}})).collect::<Vec<_>>()}]})
        };
        let answer = |extra: Vec<Value>| {
            let mut items = vec![
                group("vmoperator.vmware.com", &["VirtualMachine"]),
                group("cluster.x-k8s.io", &["Cluster", "Machine"]),
            ];
            items.extend(extra);
            json!({"kind": "APIGroupDiscoveryList", "items": items})
        };
        assert_eq!(
            stack(answer(vec![
                group("vmware.com", &["Other"]),
                group("netoperator.vmware.com", &["Network"])
            ]))
            .stack,
            NetworkStack::Vds
        );
        assert_eq!(
            stack(answer(vec![group("nsx.vmware.com", &["SubnetSet"])])).stack,
            NetworkStack::Vpc
        );
        assert_eq!(
            stack(answer(vec![group("vmware.com", &["VirtualNetwork"])])).stack,
            NetworkStack::Nsx
        );
        assert_eq!(
            stack(answer(vec![group("crd.nsx.vmware.com", &["IPPool"])])).stack,
            NetworkStack::Unknown
        );
    }
}
