//! Pure field extraction over the Supervisor's objects, one small function per fact, each aware of
//! the API versions real Supervisors serve:
//! - vm-operator `VirtualMachine` v1alpha1 (`status.vmIp`, `poweredOn`) and v1alpha2..v1alpha5
//!   (`status.network.primaryIP4`/`primaryIP6`, `PoweredOn`);
//! - CAPI `Cluster`/`Machine`/`KubeadmControlPlane` v1beta1 (with or without the `status.v1beta2`
//!   block of CAPI 1.9/1.10) and v1beta2 (CAPI 1.11+).
//!
//! Everything here takes `serde_json::Value` (the object minus metadata, as kube's `DynamicObject`
//! keeps it) so it can be unit-tested on fixtures without a server.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::facts::{Condition, Endpoint, KcpInfo, MachineAddress, MachineInfo, PowerState};

pub(super) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().filter(|s| !s.is_empty())
}

fn int_at(v: &Value, path: &[&str]) -> Option<i64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_i64()
}

/// The VM's primary IP: `status.network.primaryIP4` (v1alpha2+), else `primaryIP6`, else
/// `status.vmIp` (v1alpha1). Values that are not IP addresses are ignored rather than trusted.
pub fn vm_ip(data: &Value) -> Option<IpAddr> {
    [
        &["status", "network", "primaryIP4"][..],
        &["status", "network", "primaryIP6"][..],
        &["status", "vmIp"][..],
    ]
    .iter()
    .filter_map(|path| str_at(data, path))
    .find_map(|s| s.trim().parse::<IpAddr>().ok())
}

/// The VM's primary IP split by the address rule ([`super::address`]): (the address to use,
/// the address refused). At most one is Some; both None when the VM reports none yet.
pub fn vm_address(data: &Value) -> (Option<IpAddr>, Option<IpAddr>) {
    match vm_ip(data) {
        Some(ip) if super::address::refusal(ip).is_some() => (None, Some(ip)),
        ip => (ip, None),
    }
}

/// A Machine's `spec.infrastructureRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraRef {
    pub kind: String,
    pub name: String,
    /// v1beta1 references carry it; v1beta2 ones do not.
    pub uid: Option<String>,
}

/// A Machine's `spec.infrastructureRef` (v1beta1 ObjectReference with `uid`, v1beta2
/// ContractVersionedObjectReference without).
pub fn infrastructure_ref(data: &Value) -> Option<InfraRef> {
    let r = data.get("spec")?.get("infrastructureRef")?;
    Some(InfraRef {
        kind: str_at(r, &["kind"])?.to_string(),
        name: str_at(r, &["name"])?.to_string(),
        uid: str_at(r, &["uid"]).map(str::to_string),
    })
}

/// `status.powerState`, normalised: v1alpha1 says `poweredOn`, later versions `PoweredOn`.
pub fn vm_power(data: &Value) -> PowerState {
    match str_at(data, &["status", "powerState"]) {
        None => PowerState::Unknown,
        Some(s) => match s.to_ascii_lowercase().as_str() {
            "poweredon" => PowerState::PoweredOn,
            "poweredoff" => PowerState::PoweredOff,
            "suspended" => PowerState::Suspended,
            _ => PowerState::Unknown,
        },
    }
}

/// The VM class (`spec.className`), shown in wide output.
pub fn vm_class(data: &Value) -> Option<String> {
    str_at(data, &["spec", "className"]).map(str::to_string)
}

/// The reference a CAPI `Cluster` holds to its control plane. v1beta1 writes an ObjectReference
/// (`apiVersion`, `kind`, `name`); v1beta2 a ContractVersionedObjectReference (`apiGroup`,
/// `kind`, `name`) with no version: the version is then whatever the server prefers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlPlaneRef {
    pub group: String,
    /// Only v1beta1 names a version; a hint, discovery decides.
    pub version: Option<String>,
    pub kind: String,
    pub name: String,
}

pub fn control_plane_ref(cluster_data: &Value) -> Option<ControlPlaneRef> {
    let r = cluster_data.get("spec")?.get("controlPlaneRef")?;
    let kind = str_at(r, &["kind"])?.to_string();
    let name = str_at(r, &["name"])?.to_string();
    let (group, version) = if let Some(g) = str_at(r, &["apiGroup"]) {
        (g.to_string(), None)
    } else {
        let api_version = str_at(r, &["apiVersion"])?;
        match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), Some(v.to_string())),
            None => (String::new(), Some(api_version.to_string())),
        }
    };
    Some(ControlPlaneRef {
        group,
        version,
        kind,
        name,
    })
}

/// `spec.controlPlaneEndpoint` as `host:port`.
pub fn cluster_endpoint(cluster_data: &Value) -> Option<String> {
    let host = str_at(cluster_data, &["spec", "controlPlaneEndpoint", "host"])?;
    match int_at(cluster_data, &["spec", "controlPlaneEndpoint", "port"]) {
        Some(port) => Some(format!("{host}:{port}")),
        None => Some(host.to_string()),
    }
}

/// `spec.controlPlaneEndpoint` as host and port (a port outside 0..=65535 is no port).
pub fn endpoint(cluster_data: &Value) -> Option<Endpoint> {
    let host = str_at(cluster_data, &["spec", "controlPlaneEndpoint", "host"])?;
    if host.is_empty() {
        return None;
    }
    let port = int_at(cluster_data, &["spec", "controlPlaneEndpoint", "port"])
        .and_then(|p| u16::try_from(p).ok());
    Some(Endpoint {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    })
}

pub fn phase(data: &Value) -> Option<String> {
    str_at(data, &["status", "phase"]).map(str::to_string)
}

/// Reads a Machine (v1beta1 or v1beta2: the fields we use kept their names).
pub fn machine(name: &str, data: &Value) -> MachineInfo {
    let addresses = data
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    Some(MachineAddress {
                        kind: str_at(a, &["type"])?.to_string(),
                        address: str_at(a, &["address"])?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    MachineInfo {
        name: name.to_string(),
        phase: phase(data),
        node_name: str_at(data, &["status", "nodeRef", "name"]).map(str::to_string),
        addresses,
        infrastructure_name: str_at(data, &["spec", "infrastructureRef", "name"])
            .map(str::to_string),
        version: str_at(data, &["spec", "version"]).map(str::to_string),
        failure_domain: str_at(data, &["spec", "failureDomain"]).map(str::to_string),
        etcd_conditions: machine_etcd_conditions(data),
        // Needs the Machine's metadata and its VM: [`super::rollout::machine_rollout`].
        rollout: None,
    }
}

/// The conditions the KCP writes on each control-plane Machine about its etcd, member first.
/// The names are the same in every shape (CAPI's controlplane/kubeadm API types:
/// `MachineEtcdMemberHealthyCondition` / `MachineEtcdPodHealthyCondition` in v1beta1,
/// `KubeadmControlPlaneMachineEtcd{Member,Pod}HealthyCondition` in v1beta2).
pub const MACHINE_ETCD_CONDITIONS: [&str; 2] = ["EtcdMemberHealthy", "EtcdPodHealthy"];

/// A Machine's etcd conditions, wherever its version keeps them:
/// - v1beta1: `status.conditions[]` (CAPI's own type: `type`, `status`, `severity`, `reason`,
///   `message`), and on CAPI 1.9/1.10 also `status.v1beta2.conditions[]` (metav1: no severity);
/// - v1beta2 (CAPI 1.11+): `status.conditions[]` (metav1), the old ones under
///   `status.deprecated.v1beta1.conditions[]`.
///
/// As for the KCP, the metav1 shape wins where both carry a type; the other only adds types not
/// seen yet. The order is [`MACHINE_ETCD_CONDITIONS`]'s.
pub fn machine_etcd_conditions(data: &Value) -> Vec<Condition> {
    let etcd = |kind: &str| MACHINE_ETCD_CONDITIONS.contains(&kind);
    let mut found: Vec<Condition> = Vec::new();
    // A v1beta1 object has no `deprecated` block and a v1beta2 object no `v1beta2` block, so one
    // order serves both: metav1 first, then CAPI's own.
    for pointer in [
        "/status/v1beta2/conditions",
        "/status/conditions",
        "/status/deprecated/v1beta1/conditions",
    ] {
        for c in conditions_at(data, pointer, etcd) {
            if !found.iter().any(|seen| seen.kind == c.kind) {
                found.push(c);
            }
        }
    }
    found.sort_by_key(|c| MACHINE_ETCD_CONDITIONS.iter().position(|k| *k == c.kind));
    found
}

/// Condition types worth showing for an etcd diagnosis: the etcd ones, and the overall ones.
fn relevant_condition(kind: &str) -> bool {
    kind.contains("Etcd") || kind == "Available" || kind == "Ready"
}

fn conditions_at(data: &Value, pointer: &str, keep: impl Fn(&str) -> bool) -> Vec<Condition> {
    data.pointer(pointer)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|c| {
                    Some(Condition {
                        kind: str_at(c, &["type"])?.to_string(),
                        status: str_at(c, &["status"]).unwrap_or("Unknown").to_string(),
                        reason: str_at(c, &["reason"]).map(str::to_string),
                        message: str_at(c, &["message"]).map(str::to_string),
                        severity: str_at(c, &["severity"]).map(str::to_string),
                        last_transition_time: str_at(c, &["lastTransitionTime"])
                            .map(str::to_string),
                    })
                })
                .filter(|c| keep(&c.kind))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a KubeadmControlPlane. Where the counts live depends on the version:
/// - v1beta2: `status.{replicas,readyReplicas,availableReplicas,upToDateReplicas}`;
/// - v1beta1 on CAPI 1.9/1.10: the same names under `status.v1beta2`, next to the old ones;
/// - v1beta1: `status.{replicas,readyReplicas,updatedReplicas,unavailableReplicas}`, so
///   available = replicas - unavailable.
pub fn kcp(name: &str, api_version: &str, data: &Value) -> KcpInfo {
    let replicas = int_at(data, &["status", "replicas"]);
    let ready = int_at(data, &["status", "readyReplicas"])
        .or_else(|| int_at(data, &["status", "v1beta2", "readyReplicas"]));
    let available = int_at(data, &["status", "availableReplicas"])
        .or_else(|| int_at(data, &["status", "v1beta2", "availableReplicas"]))
        .or_else(|| {
            let unavailable = int_at(data, &["status", "unavailableReplicas"])?;
            // Counts from the API are int32 by schema, but a served object may say anything.
            Some(replicas?.saturating_sub(unavailable).max(0))
        });
    let up_to_date = int_at(data, &["status", "upToDateReplicas"])
        .or_else(|| int_at(data, &["status", "v1beta2", "upToDateReplicas"]))
        .or_else(|| int_at(data, &["status", "updatedReplicas"]));
    // Newer (metav1) conditions first; v1beta1's own list only adds types not seen yet.
    let mut conditions = conditions_at(data, "/status/v1beta2/conditions", relevant_condition);
    for c in conditions_at(data, "/status/conditions", relevant_condition) {
        if !conditions.iter().any(|seen| seen.kind == c.kind) {
            conditions.push(c);
        }
    }
    KcpInfo {
        name: name.to_string(),
        api_version: api_version.to_string(),
        desired: int_at(data, &["spec", "replicas"]),
        replicas,
        ready,
        available,
        up_to_date,
        version: str_at(data, &["spec", "version"]).map(str::to_string),
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ip_per_version() {
        let v1a1 = json!({"status": {"vmIp": "198.18.0.11", "powerState": "poweredOn"}});
        let v1a3 = json!({"status": {"network": {"primaryIP4": "198.18.0.12"}, "powerState": "PoweredOn"}});
        let v6 = json!({"status": {"network": {"primaryIP4": "", "primaryIP6": "2001:db8::13"}}});
        let none = json!({"status": {"network": {}}});
        let garbage =
            json!({"status": {"network": {"primaryIP4": "not-an-ip"}, "vmIp": "198.18.0.14"}});
        assert_eq!(vm_ip(&v1a1), Some("198.18.0.11".parse().unwrap()));
        assert_eq!(vm_ip(&v1a3), Some("198.18.0.12".parse().unwrap()));
        assert_eq!(vm_ip(&v6), Some("2001:db8::13".parse().unwrap()));
        assert_eq!(vm_ip(&none), None);
        assert_eq!(vm_ip(&json!({})), None);
        assert_eq!(vm_ip(&garbage), Some("198.18.0.14".parse().unwrap()));
    }

    #[test]
    fn ip4_wins_over_ip6() {
        let both = json!({"status": {"network": {"primaryIP4": "198.18.0.12", "primaryIP6": "2001:db8::12"}}});
        assert_eq!(vm_ip(&both), Some("198.18.0.12".parse().unwrap()));
    }

    #[test]
    fn power_is_normalised() {
        for (raw, want) in [
            ("poweredOn", PowerState::PoweredOn),
            ("PoweredOn", PowerState::PoweredOn),
            ("poweredOff", PowerState::PoweredOff),
            ("PoweredOff", PowerState::PoweredOff),
            ("suspended", PowerState::Suspended),
            ("Suspended", PowerState::Suspended),
            ("weird", PowerState::Unknown),
        ] {
            assert_eq!(
                vm_power(&json!({"status": {"powerState": raw}})),
                want,
                "{raw}"
            );
        }
        assert_eq!(vm_power(&json!({})), PowerState::Unknown);
    }

    #[test]
    fn control_plane_ref_both_forms() {
        let b1 = json!({"spec": {"controlPlaneRef": {
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
            "name": "tkc-prod-cp", "namespace": "ns"}}});
        let b2 = json!({"spec": {"controlPlaneRef": {
            "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "tkc-prod-cp"}}});
        let r1 = control_plane_ref(&b1).unwrap();
        assert_eq!(r1.group, "controlplane.cluster.x-k8s.io");
        assert_eq!(r1.version.as_deref(), Some("v1beta1"));
        let r2 = control_plane_ref(&b2).unwrap();
        assert_eq!(r2.group, "controlplane.cluster.x-k8s.io");
        assert_eq!(r2.version, None);
        assert_eq!(r2.name, "tkc-prod-cp");
        assert_eq!(control_plane_ref(&json!({"spec": {}})), None);
    }

    #[test]
    fn kcp_v1beta1_plain() {
        let d = json!({"spec": {"replicas": 3, "version": "v1.30.1"},
            "status": {"replicas": 3, "readyReplicas": 0, "updatedReplicas": 3, "unavailableReplicas": 3,
              "conditions": [
                {"type": "Ready", "status": "False", "severity": "Error", "reason": "x"},
                {"type": "EtcdClusterHealthy", "status": "False", "severity": "Error", "reason": "EtcdClusterUnhealthy", "message": "etcd members unhealthy"},
                {"type": "MachinesReady", "status": "False"}]}});
        let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta1", &d);
        assert_eq!(
            (k.desired, k.replicas, k.ready, k.available, k.up_to_date),
            (Some(3), Some(3), Some(0), Some(0), Some(3))
        );
        let kinds: Vec<_> = k.conditions.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["Ready", "EtcdClusterHealthy"]);
        assert_eq!(k.conditions[1].severity.as_deref(), Some("Error"));
    }

    #[test]
    fn kcp_v1beta1_with_v1beta2_block() {
        let d = json!({"spec": {"replicas": 3},
            "status": {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "unavailableReplicas": 0,
              "v1beta2": {"readyReplicas": 3, "availableReplicas": 2, "upToDateReplicas": 3,
                "conditions": [{"type": "EtcdClusterHealthy", "status": "True", "reason": "Healthy"}]},
              "conditions": [{"type": "EtcdClusterHealthy", "status": "True"}, {"type": "Ready", "status": "True"}]}});
        let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta1", &d);
        assert_eq!(
            (k.ready, k.available, k.up_to_date),
            (Some(3), Some(2), Some(3))
        );
        assert_eq!(k.conditions.len(), 2);
        assert_eq!(k.conditions[0].reason.as_deref(), Some("Healthy"));
    }

    #[test]
    fn kcp_v1beta2() {
        let d = json!({"spec": {"replicas": 3},
            "status": {"replicas": 3, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 3,
              "conditions": [{"type": "EtcdClusterHealthy", "status": "False", "reason": "NotHealthy", "message": "* Machine m1: etcd member is not healthy"}],
              "deprecated": {"v1beta1": {"readyReplicas": 1, "updatedReplicas": 3, "unavailableReplicas": 2}}}});
        let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta2", &d);
        assert_eq!(
            (k.desired, k.ready, k.available, k.up_to_date),
            (Some(3), Some(1), Some(1), Some(3))
        );
        assert_eq!(k.conditions[0].status, "False");
    }

    #[test]
    fn machine_fields() {
        let d = json!({"spec": {"infrastructureRef": {"name": "tkc-prod-abc-1"}, "version": "v1.30.1"},
            "status": {"phase": "Running", "nodeRef": {"name": "tkc-prod-abc-1"},
              "addresses": [{"type": "InternalIP", "address": "198.18.0.11"}, {"type": "Hostname"}]}});
        let m = machine("tkc-prod-abc-1", &d);
        assert_eq!(m.phase.as_deref(), Some("Running"));
        assert_eq!(m.node_name.as_deref(), Some("tkc-prod-abc-1"));
        assert_eq!(m.addresses.len(), 1);
        let empty = machine("m", &json!({}));
        assert_eq!(empty.phase, None);
        assert!(empty.addresses.is_empty());
        assert!(empty.etcd_conditions.is_empty());
    }

    fn kinds_and_status(c: &[Condition]) -> Vec<(&str, &str)> {
        c.iter()
            .map(|c| (c.kind.as_str(), c.status.as_str()))
            .collect()
    }

    /// CAPI v1beta1 (before 1.9): only `status.conditions[]`, CAPI's own type with a severity.
    #[test]
    fn machine_etcd_conditions_v1beta1() {
        let d = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "severity": "Error", "reason": "EtcdMemberUnhealthy"},
            {"type": "EtcdPodHealthy", "status": "True", "lastTransitionTime": "2025-06-01T12:00:00Z"},
            {"type": "APIServerPodHealthy", "status": "True"},
            {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
             "reason": "EtcdMemberUnhealthy",
             "message": "Etcd member status reports errors: etcdserver: no leader"}]}});
        let m = machine("m1", &d);
        assert_eq!(
            kinds_and_status(&m.etcd_conditions),
            [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")],
            "etcd ones only, member first"
        );
        let member = &m.etcd_conditions[0];
        assert_eq!(member.severity.as_deref(), Some("Error"));
        assert_eq!(member.reason.as_deref(), Some("EtcdMemberUnhealthy"));
        assert_eq!(
            member.message.as_deref(),
            Some("Etcd member status reports errors: etcdserver: no leader")
        );
        assert_eq!(m.etcd_conditions[1].reason, None);
    }

    /// CAPI 1.9/1.10 serving v1beta1: the metav1 conditions under `status.v1beta2` win over the
    /// v1beta1 ones of the same type; a type only in the old list is still read.
    #[test]
    fn machine_etcd_conditions_v1beta1_with_v1beta2_block() {
        let d = json!({"status": {
            "conditions": [
                {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
                 "reason": "EtcdMemberUnhealthy", "message": "Etcd member reports alarms: NOSPACE"},
                {"type": "EtcdPodHealthy", "status": "True"}],
            "v1beta2": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "NotReady"},
                {"type": "EtcdMemberHealthy", "status": "False", "reason": "NotHealthy",
                 "message": "Etcd reports alarms: NOSPACE", "observedGeneration": 2}]}}});
        let c = machine("m1", &d).etcd_conditions;
        assert_eq!(
            kinds_and_status(&c),
            [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")]
        );
        assert_eq!(c[0].reason.as_deref(), Some("NotHealthy"));
        assert_eq!(
            c[0].message.as_deref(),
            Some("Etcd reports alarms: NOSPACE")
        );
        assert_eq!(c[0].severity, None, "metav1 conditions have no severity");
    }

    /// CAPI 1.11+ serving v1beta2: metav1 `status.conditions[]`, the old ones under
    /// `status.deprecated.v1beta1.conditions[]`.
    #[test]
    fn machine_etcd_conditions_v1beta2() {
        let d = json!({"status": {
            "conditions": [
                {"type": "EtcdPodHealthy", "status": "Unknown", "reason": "ConnectionDown",
                 "message": "Last successful probe at 2025-06-03T08:13:52Z"},
                {"type": "Available", "status": "True", "reason": "Available"}],
            "deprecated": {"v1beta1": {"conditions": [
                {"type": "EtcdPodHealthy", "status": "True"},
                {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
                 "reason": "EtcdMemberUnhealthy", "message": "Failed to get etcd members"}]}}}});
        let c = machine("m1", &d).etcd_conditions;
        assert_eq!(
            kinds_and_status(&c),
            [
                ("EtcdMemberHealthy", "False"),
                ("EtcdPodHealthy", "Unknown")
            ]
        );
        assert_eq!(c[0].severity.as_deref(), Some("Error"), "from the old list");
        assert_eq!(c[1].reason.as_deref(), Some("ConnectionDown"));
    }

    /// A served object may say anything: no list, a list of junk, a condition without a type or
    /// status, the same type twice (the first is kept).
    #[test]
    fn machine_etcd_conditions_odd_shapes() {
        for d in [
            json!({}),
            json!({"status": {"conditions": "EtcdMemberHealthy"}}),
            json!({"status": {"conditions": [1, null, {"status": "False"}]}}),
        ] {
            assert!(machine_etcd_conditions(&d).is_empty(), "{d}");
        }
        let d = json!({"status": {"conditions": [
            {"type": "EtcdMemberHealthy"},
            {"type": "EtcdMemberHealthy", "status": "True"}]}});
        assert_eq!(
            kinds_and_status(&machine_etcd_conditions(&d)),
            [("EtcdMemberHealthy", "Unknown")]
        );
    }

    /// `lastTransitionTime` is kept as written, in both shapes; absent, it is None.
    #[test]
    fn conditions_keep_their_transition_time() {
        let d = json!({"status": {
            "conditions": [
                {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
                 "lastTransitionTime": "2025-06-03T08:14:07Z"},
                {"type": "EtcdPodHealthy", "status": "True"}],
            "v1beta2": {"conditions": [
                {"type": "EtcdMemberHealthy", "status": "False", "reason": "NotHealthy",
                 "lastTransitionTime": "2025-06-03T08:14:09Z"}]}}});
        let c = machine_etcd_conditions(&d);
        assert_eq!(
            c[0].last_transition_time.as_deref(),
            Some("2025-06-03T08:14:09Z"),
            "the metav1 one wins, with its own time"
        );
        assert_eq!(c[1].last_transition_time, None);
        let k = kcp(
            "cp",
            "controlplane.cluster.x-k8s.io/v1beta1",
            &json!({"status": {"conditions": [{"type": "EtcdClusterHealthy", "status": "False",
                "lastTransitionTime": "2025-06-03T08:14:07Z"}]}}),
        );
        assert_eq!(
            k.conditions[0].last_transition_time.as_deref(),
            Some("2025-06-03T08:14:07Z")
        );
    }

    /// The fixture sets' Machines, as the fake API serves them: quorum-lost (v1beta1) says every
    /// member is unhealthy, kcp-v1beta2 (v1beta2) that every member is healthy.
    #[test]
    fn machine_etcd_conditions_of_the_fixture_sets() {
        let machines = |set: &str| -> Vec<(String, Vec<Condition>)> {
            let path = format!(
                "{}/tests/fixtures/supervisor/{set}/30-machines.yaml",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(path).unwrap();
            serde_yaml_ng::Deserializer::from_str(&text)
                .map(|doc| Value::deserialize(doc).unwrap())
                .filter(|o| {
                    o["kind"] == "Machine"
                        && o.pointer("/metadata/labels/cluster.x-k8s.io~1control-plane")
                            .is_some()
                })
                .map(|o| {
                    let name = o["metadata"]["name"].as_str().unwrap().to_string();
                    (name, machine_etcd_conditions(&o))
                })
                .collect()
        };
        let lost = machines("quorum-lost");
        assert_eq!(lost.len(), 3);
        for (name, c) in &lost {
            assert_eq!(
                kinds_and_status(c),
                [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")],
                "{name}"
            );
            assert_eq!(c[0].severity.as_deref(), Some("Error"), "{name}");
            assert!(
                c[0].message
                    .as_deref()
                    .is_some_and(|m| m.contains("etcdserver: no leader")),
                "{name}: {c:?}"
            );
        }
        let v1beta2 = machines("kcp-v1beta2");
        assert_eq!(v1beta2.len(), 3);
        for (name, c) in &v1beta2 {
            assert_eq!(
                kinds_and_status(c),
                [("EtcdMemberHealthy", "True"), ("EtcdPodHealthy", "True")],
                "{name}"
            );
            assert!(
                c.iter().all(|c| c.severity.is_none()),
                "{name}: metav1 shape"
            );
            assert_eq!(c[0].reason.as_deref(), Some("Healthy"), "{name}");
        }
    }
}
