//! The values the find stage hands on: what the Supervisor knows about one workload cluster.
//! They are part of the JSON/YAML report, hence serde with camelCase names.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum PowerState {
    PoweredOn,
    PoweredOff,
    Suspended,
    Unknown,
}

/// Which labels found the control-plane VMs: `capv.vmware.com/*`, or the `capw.vmware.com/*` of
/// older Supervisors.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum VmLabelScheme {
    Capv,
    Capw,
}

/// The API versions discovery chose (the server's preferred ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiVersions {
    pub virtual_machine: String,
    pub cluster: String,
    pub machine: String,
    /// Absent when the cluster has no control-plane reference or its group is not served.
    pub control_plane: Option<String>,
    /// Absent when no control-plane VM was found under either label scheme.
    pub vm_labels: Option<VmLabelScheme>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    pub name: String,
    pub phase: Option<String>,
    pub control_plane_endpoint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// v1beta1 conditions only.
    pub severity: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KcpInfo {
    pub name: String,
    pub api_version: String,
    /// `spec.replicas`: how many control-plane nodes the cluster should have.
    pub desired: Option<i64>,
    pub replicas: Option<i64>,
    pub ready: Option<i64>,
    pub available: Option<i64>,
    pub up_to_date: Option<i64>,
    pub version: Option<String>,
    /// Etcd-related conditions, plus Ready/Available.
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineAddress {
    #[serde(rename = "type")]
    pub kind: String,
    pub address: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineInfo {
    pub name: String,
    pub phase: Option<String>,
    pub node_name: Option<String>,
    pub addresses: Vec<MachineAddress>,
    /// `spec.infrastructureRef.name`: the VSphereMachine, whose name the VM shares.
    pub infrastructure_name: Option<String>,
    pub version: Option<String>,
    pub failure_domain: Option<String>,
    /// The KCP's `EtcdMemberHealthy` and `EtcdPodHealthy` conditions on this Machine (the
    /// newer, metav1 shape where both are written). Reports captured before they were read
    /// have none.
    #[serde(default)]
    pub etcd_conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VmInfo {
    pub name: String,
    pub ip: Option<IpAddr>,
    pub power: PowerState,
    pub class: Option<String>,
    /// The VSphereMachine that owns the VM (ownerReferences), used to join with Machines.
    pub owner: Option<String>,
}

/// One control-plane node: a Machine and its VM, either of which may be missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneNode {
    /// The Machine's name, or the VM's when there is no Machine.
    pub name: String,
    pub machine: Option<MachineInfo>,
    pub vm: Option<VmInfo>,
}

impl ControlPlaneNode {
    pub fn ip(&self) -> Option<IpAddr> {
        self.vm.as_ref().and_then(|v| v.ip)
    }
}

/// Everything the Supervisor says about one workload cluster's control plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFacts {
    pub context: String,
    pub namespace: String,
    pub cluster: ClusterInfo,
    pub apis: ApiVersions,
    pub kcp: Option<KcpInfo>,
    /// Why there is no KCP, when there is none.
    pub kcp_missing_reason: Option<String>,
    pub nodes: Vec<ControlPlaneNode>,
    /// The Cluster's `spec.controlPlaneEndpoint`, parsed: the only server a kubeconfig from the
    /// cluster's secret may point at (reports show it as `cluster.controlPlaneEndpoint`).
    #[serde(skip)]
    pub endpoint: Option<Endpoint>,
}

/// Where a cluster's API server is: CAPI writes the cluster's kubeconfig for this address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// A DNS name or an IP address (IPv6 without brackets).
    pub host: String,
    /// None when the Cluster does not say (CAPI always does once the endpoint is known).
    pub port: Option<u16>,
}

impl ClusterFacts {
    pub fn desired(&self) -> Option<i64> {
        self.kcp.as_ref().and_then(|k| k.desired)
    }
    pub fn machines_present(&self) -> usize {
        self.nodes.iter().filter(|n| n.machine.is_some()).count()
    }
    pub fn vms_present(&self) -> usize {
        self.nodes.iter().filter(|n| n.vm.is_some()).count()
    }
}
