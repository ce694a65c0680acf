//! How many control-plane Machines a run looks at: at most the KCP's desired replicas plus
//! [`SURPLUS`], never more than [`MAX_TARGETS`]. Anyone who may edit the vSphere Namespace can
//! create Machines carrying `cluster.x-k8s.io/control-plane`; without a bound every one of them
//! would be probed (a pod, an ssh session, a peer in every probe) and every matrix would grow
//! with their square. The Machines beyond the bound are named in the facts
//! ([`super::ClusterFacts::machines_beyond_replicas`]) and shown as a finding; they are never
//! probed, never a peer, and not among the nodes (their VMs go with them).
//!
//! Only Machines controlled by the KCP's uid reach here with a `machine` ([`super::join`] makes
//! any other a row of its own), so ownership cannot order them. Which are kept,
//! deterministically (the same objects always keep the same Machines):
//! 1. the oldest (`metadata.creationTimestamp`, which the API server sets and no client can
//!    choose): the cluster's Machines were there before anything added later;
//! 2. then by name, so that equal times still give one order.
//!
//! Pure and O(M log M) for M Machines: one map from name to object, one sort.

use std::collections::HashMap;

use kube::api::DynamicObject;

use super::facts::ControlPlaneNode;

/// Machines probed beyond the KCP's `spec.replicas`: a rolling update adds one Machine before
/// it removes one (KCP's `rolloutStrategy.rollingUpdate.maxSurge` is 0 or 1), and a scale-down
/// keeps the Machine being deleted until its VM is gone.
pub(crate) const SURPLUS: usize = 1;

/// Machines probed at most, whatever the KCP says (its `spec.replicas` is data too), and when
/// it says no number: etcd advises at most 7 members, a 7-node control plane rolling has 8
/// Machines. Bounds the probe pods and ssh sessions of one cluster, and each matrix to 256 cells.
pub(crate) const MAX_TARGETS: usize = 16;
// A probe's document is read with room for this many addresses' paths, no fewer.
const _: () = assert!(MAX_TARGETS <= crate::probe::parse::bounds::MAX_ADDRESSES);

/// How many Machines are probed for a KCP wanting `desired` (None: no KCP, or no replicas).
pub(crate) fn limit(desired: Option<i64>) -> usize {
    match desired.and_then(|d| usize::try_from(d).ok()) {
        Some(d) => d.saturating_add(SURPLUS).min(MAX_TARGETS),
        None => MAX_TARGETS,
    }
}

/// Splits the joined `nodes` into the ones kept (in their order) and the names of the Machines
/// beyond [`limit`] (in the order they ranked). A VM without a Machine is kept: it is never
/// probed anyway, and is its own finding. `machines` are the cluster's Machine objects.
pub(crate) fn select(
    nodes: Vec<ControlPlaneNode>,
    machines: &[&DynamicObject],
    desired: Option<i64>,
) -> (Vec<ControlPlaneNode>, Vec<String>) {
    let limit = limit(desired);
    let with_machine = nodes.iter().filter(|n| n.machine.is_some()).count();
    if with_machine <= limit {
        return (nodes, Vec::new());
    }
    let by_name: HashMap<&str, &DynamicObject> = machines
        .iter()
        .filter_map(|m| Some((m.metadata.name.as_deref()?, *m)))
        .collect();
    // (creation time or "after every time", name): smaller ranks first.
    let rank = |n: &ControlPlaneNode| {
        let obj = by_name.get(n.name.as_str());
        let created = obj.and_then(|o| o.metadata.creation_timestamp.as_ref().map(|t| t.0));
        (created.is_none(), created, n.name.clone())
    };
    let mut ranked: Vec<(_, usize)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.machine.is_some())
        .map(|(i, n)| (rank(n), i))
        .collect();
    ranked.sort();
    let mut keep = vec![true; nodes.len()];
    let mut beyond = Vec::new();
    for (_, i) in ranked.into_iter().skip(limit) {
        keep[i] = false;
        beyond.push(nodes[i].name.clone());
    }
    let kept = nodes
        .into_iter()
        .zip(keep)
        .filter_map(|(n, k)| k.then_some(n))
        .collect();
    (kept, beyond)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::PowerState;
    use serde_json::json;

    /// A Machine as KCP makes it (controlled by the KCP's uid): the only kind `join` gives a
    /// `machine`.
    fn machine(name: &str, created: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {
                "name": name, "creationTimestamp": created,
                "ownerReferences": [{
                    "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                    "kind": "KubeadmControlPlane", "name": "tkc-cp", "uid": "kcp-uid",
                    "controller": true, "blockOwnerDeletion": true
                }]
            }
        }))
        .unwrap()
    }

    fn node(name: &str) -> ControlPlaneNode {
        let mut n = crate::testing::node(1, PowerState::PoweredOn, true, "Running");
        n.name = name.into();
        n.machine.as_mut().unwrap().name = name.into();
        n
    }

    #[test]
    fn the_limit_is_the_replicas_plus_the_surplus_never_more_than_the_ceiling() {
        assert_eq!(limit(Some(3)), 3 + SURPLUS);
        assert_eq!(limit(Some(1)), 1 + SURPLUS);
        assert_eq!(limit(Some(1_000_000)), MAX_TARGETS);
        assert_eq!(limit(Some(i64::MAX)), MAX_TARGETS);
        assert_eq!(limit(Some(-1)), MAX_TARGETS);
        assert_eq!(limit(None), MAX_TARGETS);
    }

    /// The oldest first, then by name; the VM-only node stays; the nodes keep their order.
    #[test]
    fn the_oldest_first_then_by_name() {
        let objs = [
            machine("a-new", "2030-01-01T00:00:00Z"),
            machine("b-old", "2020-01-01T00:00:00Z"),
            machine("cp-2", "2025-01-01T00:00:00Z"),
            machine("cp-1", "2025-01-01T00:00:00Z"),
            machine("cp-3", "2026-01-01T00:00:00Z"),
        ];
        let refs: Vec<&DynamicObject> = objs.iter().collect();
        let mut nodes: Vec<ControlPlaneNode> = objs
            .iter()
            .map(|o| node(o.metadata.name.as_deref().unwrap()))
            .collect();
        let mut vm_only = node("vm-only");
        vm_only.machine = None;
        nodes.insert(0, vm_only);

        let (kept, beyond) = select(nodes.clone(), &refs, Some(2));
        let names: Vec<&str> = kept.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["vm-only", "b-old", "cp-2", "cp-1"]);
        assert_eq!(beyond, ["cp-3", "a-new"]);

        // The same set in another order keeps the same Machines.
        nodes.reverse();
        let (kept2, beyond2) = select(nodes, &refs, Some(2));
        let mut a: Vec<&str> = kept2.iter().map(|n| n.name.as_str()).collect();
        a.sort();
        let mut b = names.clone();
        b.sort();
        assert_eq!((a, beyond2), (b, beyond));
    }

    #[test]
    fn within_the_limit_nothing_moves() {
        let objs = [machine("cp-1", "2025-01-01T00:00:00Z")];
        let refs: Vec<&DynamicObject> = objs.iter().collect();
        let nodes = vec![node("cp-1"), node("cp-2")];
        let (kept, beyond) = select(nodes.clone(), &refs, Some(1));
        assert_eq!((kept, beyond.len()), (nodes, 0));
    }

    /// A flood under a KCP that gives no replicas is cut at the ceiling; a Machine without a
    /// time ranks last.
    #[test]
    fn without_replicas_the_ceiling_holds() {
        let objs: Vec<DynamicObject> = (0..40)
            .map(|i| machine(&format!("m-{i:02}"), "2025-01-01T00:00:00Z"))
            .collect();
        let mut refs: Vec<&DynamicObject> = objs.iter().collect();
        let untimed: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "a-untimed"}
        }))
        .unwrap();
        refs.push(&untimed);
        let mut nodes: Vec<ControlPlaneNode> =
            (0..40).map(|i| node(&format!("m-{i:02}"))).collect();
        nodes.push(node("a-untimed"));
        let (kept, beyond) = select(nodes, &refs, None);
        assert_eq!(kept.len(), MAX_TARGETS);
        assert_eq!(beyond.len(), 41 - MAX_TARGETS);
        assert_eq!(beyond.last().map(String::as_str), Some("a-untimed"));
    }
}
