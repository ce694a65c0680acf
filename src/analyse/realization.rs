//! What a cluster's network objects say NSX (or CAPV) failed to realize (pure): conditions not
//! True on the objects tied to the cluster, and the NetworkPolicies' own `nsx-op/error` claims.

use kube::api::DynamicObject;
use serde_json::Value;

use crate::supervisor::network::{
    bounded, controller_uid, name, uid, NetworkObjects, NSX_ERROR_ANNOTATION,
};

/// The most NetworkPolicies whose `nsx-op/error` annotation is taken as a claim (by name); the
/// rest are counted in one more claim.
pub(crate) const MAX_CLAIMS: usize = 8;

// The contract's type (`networkPolicy.realization`): its `///` comments are the schema's
// descriptions, the `//` ones are not.
/// A network object NSX (or CAPV) says is not realized, or that claims so itself.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct RealizationProblem {
    /// The object's kind (`SubnetPort`, `VirtualNetwork`, `Namespace`, ...).
    pub kind: String,
    pub name: String,
    // The condition's type: `Ready`, `NamespaceNetworkReady`, `ClusterNetworkReady`.
    /// The condition's type (`Ready`, ...), or the annotation's key (`nsx-op/error`).
    pub condition: String,
    /// The condition's status (`False`, `Unknown`); absent for an annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    // At most [`MAX_TEXT_CHARS`](crate::supervisor::network::MAX_TEXT_CHARS) characters,
    // verbatim otherwise: a renderer makes it visible.
    /// The condition's message or the annotation's text, bounded, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    // That VM's network is not realized, a cause of its own.
    /// The control-plane VM whose SubnetPort this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    // A NetworkPolicy's `nsx-op/error`: anyone who may edit the object can write it.
    /// Only the object's own annotation says so: its editor's claim, never NSX's status.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
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
/// `NamespaceNetworkReady` and the VSphereCluster's `ClusterNetworkReady` not True, each tied to
/// the cluster by uid (`supervisor::network::NetworkRead::of_cluster`). A condition that is absent says nothing
/// (not yet reconciled, or an older operator). SecurityPolicies are the evaluation's.
///
/// A NetworkPolicy's `nsx-op/error` annotation is the object's own claim (`claim: true`):
/// nsx-operator writes it (`pkg/controllers/common/types.go`), but so can anyone who may edit
/// the NetworkPolicy, and no NetworkPolicy is tied to a cluster. At most [`MAX_CLAIMS`] of
/// them, by name; more are one claim more that counts them.
pub(crate) fn realization(objects: &NetworkObjects) -> Vec<RealizationProblem> {
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
            // The VM whose uid the port's controller reference carries (none: not a
            // control-plane VM's port, and `of_cluster` keeps no other).
            p.vm = controller_uid(port, "VirtualMachine").and_then(|u| {
                objects
                    .vms
                    .iter()
                    .find(|vm| uid(vm) == Some(u))
                    .map(|vm| name(vm).to_string())
            });
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
    let mut claims: Vec<(&str, &String)> = objects
        .network_policies
        .iter()
        .filter_map(|np| {
            let text = np
                .metadata
                .annotations
                .as_ref()?
                .get(NSX_ERROR_ANNOTATION)?;
            Some((name(np), text))
        })
        .collect();
    claims.sort();
    let more = claims.len().saturating_sub(MAX_CLAIMS);
    let claim = |name: String, message: String| RealizationProblem {
        kind: "NetworkPolicy".to_string(),
        name,
        condition: NSX_ERROR_ANNOTATION.to_string(),
        status: None,
        reason: None,
        message: Some(message),
        vm: None,
        claim: true,
    };
    for (n, text) in claims.into_iter().take(MAX_CLAIMS) {
        out.push(claim(bounded(n), bounded(text)));
    }
    if more > 0 {
        out.push(claim(
            String::new(),
            format!("{more} more NetworkPolicies carry the annotation"),
        ));
    }
    out
}

#[cfg(test)]
#[path = "realization_tests.rs"]
mod tests;
