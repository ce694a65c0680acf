//! NSX SecurityPolicies and NetworkPolicies, the objects of the worlds for
//! `hostile_nsx` and `lab::network_policy`: a fixture set (one of the nsx sets) served with
//! objects added by the test, so a case is a few lines of Rust rather than hundreds of YAML.
//!
//! The shapes are nsx-operator's, checked in vmware-tanzu/nsx-operator:
//! `pkg/apis/vpc/v1alpha1/securitypolicy_types.go` (`crd.nsx.vmware.com/v1alpha1`) and
//! `pkg/apis/legacy/v1alpha1/securitypolicy_types.go` (`nsx.vmware.com/v1alpha1`, the same
//! schema): `spec.priority` 0-1000, `spec.appliedTo[].{vmSelector,podSelector}`,
//! `spec.rules[].{name,action Allow|Drop|Reject,direction In|Out,appliedTo,sources,destinations,
//! ports[].{protocol,port (int or name),endPort}}`; the `Ready` condition as
//! `pkg/controllers/securitypolicy/securitypolicy_controller.go` writes it
//! (`setSecurityPolicyReadyStatusTrue`/`False`: reason `SecurityPolicyReady` with "NSX Security
//! Policy has been successfully created/updated", or `SecurityPolicyNotReady` with "error
//! occurred while processing the SecurityPolicy CR. Error: <err>"). The validation errors quoted
//! are `pkg/nsx/services/securitypolicy/builder.go`'s own texts (`nsxutil.ValidationError`).

use serde_json::{json, Value};

use super::article::{CLUSTER, NS};
use super::Env;
pub use etcdnet_fakeapi::Forbid;

/// The VPC group (nsx-operator on VPC networking).
pub const VPC: &str = "crd.nsx.vmware.com/v1alpha1";

/// What CAPV labels a control-plane VM with (`getVMLabels`, control_plane_endpoint.go): what
/// an admin's policy for "the control plane" selects.
pub fn cp_vms() -> Value {
    json!({"vmSelector": {"matchLabels": {
        "capv.vmware.com/cluster.name": CLUSTER,
        "capv.vmware.com/cluster.role": "controlplane"
    }}})
}

/// A vmSelector that selects no VM of the set.
pub fn no_vms() -> Value {
    json!({"vmSelector": {"matchLabels": {"app.example.com/tier": "nothing-has-this"}}})
}

/// `ports` entries: one TCP port, a TCP range, a named port.
pub fn tcp(port: u16) -> Value {
    json!({"protocol": "TCP", "port": port})
}

pub fn tcp_range(start: u16, end: u16) -> Value {
    json!({"protocol": "TCP", "port": start, "endPort": end})
}

pub fn named_port(name: &str) -> Value {
    json!({"protocol": "TCP", "port": name})
}

/// The `Ready` condition nsx-operator writes.
#[derive(Clone, Copy, Debug)]
pub enum Ready<'a> {
    /// `SecurityPolicyReady`.
    True,
    /// `SecurityPolicyNotReady` with the error nsx-operator got (its text only: the prefix is
    /// added as the controller adds it).
    False(&'a str),
}

impl Ready<'_> {
    fn condition(self) -> Value {
        match self {
            Ready::True => json!({
                "type": "Ready", "status": "True",
                "lastTransitionTime": "2025-06-01T12:00:00Z",
                "reason": "SecurityPolicyReady",
                "message": "NSX Security Policy has been successfully created/updated"
            }),
            Ready::False(err) => json!({
                "type": "Ready", "status": "False",
                "lastTransitionTime": "2025-06-03T08:20:00Z",
                "reason": "SecurityPolicyNotReady",
                "message": format!("error occurred while processing the SecurityPolicy CR. Error: {err}")
            }),
        }
    }
}

/// One rule: `peers` are the rule's `sources` for In and its `destinations` for Out (the
/// fields the nsx sets use; `from`/`to` are their newer names).
pub fn rule(name: &str, direction: &str, action: &str, peers: &[Value], ports: &[Value]) -> Value {
    let mut r = json!({"name": name, "direction": direction, "action": action});
    if !peers.is_empty() {
        let key = if direction == "In" {
            "sources"
        } else {
            "destinations"
        };
        r[key] = json!(peers);
    }
    if !ports.is_empty() {
        r["ports"] = json!(ports);
    }
    r
}

/// A SecurityPolicy of `api_version` ([`VPC`] or [`T1`]) in `ns`; `applied_to` empty leaves
/// `spec.appliedTo` out.
pub fn policy(
    api_version: &str,
    ns: &str,
    name: &str,
    priority: u32,
    applied_to: &[Value],
    rules: &[Value],
    ready: Ready,
) -> Value {
    let mut spec = json!({"priority": priority, "rules": rules});
    if !applied_to.is_empty() {
        spec["appliedTo"] = json!(applied_to);
    }
    json!({
        "apiVersion": api_version,
        "kind": "SecurityPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"conditions": [ready.condition()]}
    })
}

/// The common case: a VPC policy in the cluster's namespace, applied to the control-plane VMs,
/// one rule whose peers are the control-plane VMs, realized.
pub fn cp_policy(
    name: &str,
    priority: u32,
    direction: &str,
    action: &str,
    ports: &[Value],
) -> Value {
    policy(
        VPC,
        NS,
        name,
        priority,
        &[cp_vms()],
        &[rule(
            &format!("{name}-rule"),
            direction,
            action,
            &[cp_vms()],
            ports,
        )],
        Ready::True,
    )
}

/// A Kubernetes NetworkPolicy (networking.k8s.io/v1) in the cluster's namespace.
pub fn network_policy(name: &str, spec: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": spec
    })
}

/// A `list` of `resource` in `group` refused in `namespace` (and so across all namespaces,
/// which would read it too), as RBAC refuses a user without a role there.
pub fn forbid_list(group: &str, resource: &str, namespace: &str) -> Forbid {
    Forbid {
        verb: Some("list".into()),
        group: Some(group.into()),
        resource: Some(resource.into()),
        namespace: Some(namespace.into()),
        ..Forbid::default()
    }
}

/// The VirtualNetwork CAPV makes for the article's cluster on NCP: `GetNSXTVirtualNetworkName`
/// of its VSphereCluster (`<vspherecluster>-vnet`, pkg/services/network/nsxt_provider.go).
pub const NCP_VNET: &str = "tkc-prod-x7p2n-vnet";

/// Rewrites the control-plane VMs' eth0 network to CAPV's NCP shape (`ConfigureVirtualMachine`:
/// kind VirtualNetwork, apiVersion vmware.com/v1alpha1, [`NCP_VNET`]): the nsx sets include
/// healthy-v1alpha3, whose VMs name a VPC SubnetSet.
pub fn ncp_interfaces(env: &Env) {
    for vm in super::article::CP {
        env.supervisor
            .modify(
                "vmoperator.vmware.com/v1alpha3",
                "VirtualMachine",
                NS,
                vm,
                |o| {
                    o["spec"]["network"]["interfaces"][0]["network"] = json!({
                        "apiVersion": "vmware.com/v1alpha1",
                        "kind": "VirtualNetwork",
                        "name": NCP_VNET
                    });
                },
            )
            .expect("the VM is served");
    }
}
