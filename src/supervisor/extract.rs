//! Pure field extraction over the Supervisor's objects, one small function per fact, each aware of
//! the API versions real Supervisors serve:
//! - vm-operator `VirtualMachine` v1alpha1 (`status.vmIp`, `poweredOn`, `status.host`) and
//!   v1alpha2..v1alpha6 (`status.network.primaryIP4`/`primaryIP6`, `status.network.config`
//!   from v1alpha3, `PoweredOn`, `status.host` until v1alpha3 and `status.nodeName` after);
//! - CAPI `Cluster`/`Machine`/`KubeadmControlPlane` v1beta1 (with or without the `status.v1beta2`
//!   block of CAPI 1.9/1.10) and v1beta2 (CAPI 1.11+).
//!
//! Everything here takes `serde_json::Value` (the object minus metadata, as kube's `DynamicObject`
//! keeps it) so it can be unit-tested on fixtures without a server.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::facts::{
    AddressSource, Condition, Endpoint, KcpInfo, MachineAddress, MachineInfo, PowerState,
};

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
pub(crate) fn vm_ip(data: &Value) -> Option<IpAddr> {
    [
        &["status", "network", "primaryIP4"][..],
        &["status", "network", "primaryIP6"][..],
        &["status", "vmIp"][..],
    ]
    .iter()
    .filter_map(|path| str_at(data, path))
    .find_map(|s| s.trim().parse::<IpAddr>().ok())
}

/// The addresses `status.network.config` holds, in order: each interface's configured
/// addresses (`config.interfaces[].ip.addresses[]`, with the prefix length: `198.18.0.13/24`).
/// vm-operator writes `config` from the network provider's result (IPAM), not from the guest,
/// and keeps it alone when the guest reports nothing (`updateGuestNetworkStatus` in
/// vmware-tanzu/vm-operator pkg/providers/vsphere/vmlifecycle/update_status.go: "Config is the
/// only field we need to preserve"); the shape is `VirtualMachineNetworkConfigStatus` /
/// `VirtualMachineNetworkConfigInterfaceIPStatus` in api/v1alpha3..v1alpha6
/// virtualmachine_network_types.go (v1alpha1 and v1alpha2 have no `config`). Entries that are
/// not an address (with or without a prefix) are skipped, never trusted.
pub(crate) fn vm_config_ips(data: &Value) -> Vec<IpAddr> {
    data.pointer("/status/network/config/interfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.pointer("/ip/addresses").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|s| {
            let s = s.trim();
            let ip = s.split_once('/').map_or(s, |(ip, _)| ip);
            ip.parse::<IpAddr>().ok()
        })
        .collect()
}

/// An address split by the address rule ([`super::address`]): (the address to use, the
/// address refused).
fn split(ip: Option<IpAddr>) -> (Option<IpAddr>, Option<IpAddr>) {
    match ip {
        Some(ip) if super::address::refusal(ip).is_some() => (None, Some(ip)),
        ip => (ip, None),
    }
}

/// The VM's primary IP split by the address rule ([`super::address`]): (the address to use,
/// the address refused). At most one is Some; both None when the VM reports none yet.
pub(crate) fn vm_address(data: &Value) -> (Option<IpAddr>, Option<IpAddr>) {
    let (ip, refused, _) = vm_address_sourced(data);
    (ip, refused)
}

/// [`vm_address`], with where it came from: the guest's fields ([`vm_ip`]), else, only when
/// the guest reports none at all, the first address of `status.network.config`
/// ([`vm_config_ips`]). The same address rule holds for both; a refused guest address is not
/// replaced by another (the guest's report is what is in doubt: docs/security.md).
pub(crate) fn vm_address_sourced(data: &Value) -> (Option<IpAddr>, Option<IpAddr>, AddressSource) {
    if let Some(ip) = vm_ip(data) {
        let (ip, refused) = split(Some(ip));
        return (ip, refused, AddressSource::Guest);
    }
    match vm_config_ips(data).first() {
        Some(ip) => {
            let (ip, refused) = split(Some(*ip));
            (ip, refused, AddressSource::NetworkConfig)
        }
        None => (None, None, AddressSource::Guest),
    }
}

/// A Machine's address for its VM when neither the guest nor `status.network.config` gives
/// one: its first `InternalIP`, else its first `ExternalIP` (CAPI `MachineAddress` types; CAPV
/// copies the VM's address into the VSphereMachine's and CAPI into the Machine's
/// `status.addresses`), under the same address rule: (the address to use, the address refused).
pub(crate) fn machine_address(m: &MachineInfo) -> (Option<IpAddr>, Option<IpAddr>) {
    let first = |kind: &str| {
        m.addresses
            .iter()
            .filter(|a| a.kind == kind)
            .find_map(|a| a.address.trim().parse::<IpAddr>().ok())
    };
    split(first("InternalIP").or_else(|| first("ExternalIP")))
}

/// The ESXi host the VM runs on: `status.host` (vm-operator v1alpha1..v1alpha3), renamed
/// `status.nodeName` from v1alpha4 (api/v1alpha4..v1alpha6 virtualmachine_types.go, written
/// by `reconcileStatusNodeName` from the VM's `summary.runtime.host`).
pub(crate) fn vm_host(data: &Value) -> Option<String> {
    str_at(data, &["status", "nodeName"])
        .or_else(|| str_at(data, &["status", "host"]))
        .map(str::to_string)
}

/// The vSphere Zone the VM was placed in: `status.zone` (v1alpha1..v1alpha6; empty when the
/// Supervisor is not zone-aware).
pub(crate) fn vm_zone(data: &Value) -> Option<String> {
    str_at(data, &["status", "zone"]).map(str::to_string)
}

/// A Machine's `spec.infrastructureRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InfraRef {
    pub kind: String,
    pub name: String,
    /// v1beta1 references carry it; v1beta2 ones do not.
    pub uid: Option<String>,
}

/// A Machine's `spec.infrastructureRef` (v1beta1 ObjectReference with `uid`, v1beta2
/// ContractVersionedObjectReference without).
pub(crate) fn infrastructure_ref(data: &Value) -> Option<InfraRef> {
    let r = data.get("spec")?.get("infrastructureRef")?;
    Some(InfraRef {
        kind: str_at(r, &["kind"])?.to_string(),
        name: str_at(r, &["name"])?.to_string(),
        uid: str_at(r, &["uid"]).map(str::to_string),
    })
}

/// `status.powerState`, normalised: v1alpha1 says `poweredOn`, later versions `PoweredOn`.
pub(crate) fn vm_power(data: &Value) -> PowerState {
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
pub(crate) fn vm_class(data: &Value) -> Option<String> {
    str_at(data, &["spec", "className"]).map(str::to_string)
}

/// The reference a CAPI `Cluster` holds to its control plane. v1beta1 writes an ObjectReference
/// (`apiVersion`, `kind`, `name`); v1beta2 a ContractVersionedObjectReference (`apiGroup`,
/// `kind`, `name`) with no version: the version is then whatever the server prefers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ControlPlaneRef {
    pub group: String,
    /// Only v1beta1 names a version; a hint, discovery decides.
    pub version: Option<String>,
    pub kind: String,
    pub name: String,
}

pub(crate) fn control_plane_ref(cluster_data: &Value) -> Option<ControlPlaneRef> {
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
pub(crate) fn cluster_endpoint(cluster_data: &Value) -> Option<String> {
    let host = str_at(cluster_data, &["spec", "controlPlaneEndpoint", "host"])?;
    match int_at(cluster_data, &["spec", "controlPlaneEndpoint", "port"]) {
        Some(port) => Some(format!("{host}:{port}")),
        None => Some(host.to_string()),
    }
}

/// `spec.controlPlaneEndpoint` as host and port (a port outside 0..=65535 is no port).
pub(crate) fn endpoint(cluster_data: &Value) -> Option<Endpoint> {
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

pub(crate) fn phase(data: &Value) -> Option<String> {
    str_at(data, &["status", "phase"]).map(str::to_string)
}

/// Reads a Machine (v1beta1 or v1beta2: the fields we use kept their names).
pub(crate) fn machine(name: &str, data: &Value) -> MachineInfo {
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
pub(crate) const MACHINE_ETCD_CONDITIONS: [&str; 2] = ["EtcdMemberHealthy", "EtcdPodHealthy"];

/// A Machine's etcd conditions, wherever its version keeps them:
/// - v1beta1: `status.conditions[]` (CAPI's own type: `type`, `status`, `severity`, `reason`,
///   `message`), and on CAPI 1.9/1.10 also `status.v1beta2.conditions[]` (metav1: no severity);
/// - v1beta2 (CAPI 1.11+): `status.conditions[]` (metav1), the old ones under
///   `status.deprecated.v1beta1.conditions[]`.
///
/// As for the KCP, the metav1 shape wins where both carry a type; the other only adds types not
/// seen yet. The order is [`MACHINE_ETCD_CONDITIONS`]'s.
pub(crate) fn machine_etcd_conditions(data: &Value) -> Vec<Condition> {
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
pub(crate) fn kcp(name: &str, api_version: &str, data: &Value) -> KcpInfo {
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
mod tests;
