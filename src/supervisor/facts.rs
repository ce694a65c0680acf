//! The values the find stage hands on: what the Supervisor knows about one workload cluster.
//! The leaf types are the output contract's own (`report::v1alpha2` re-exports them): their doc
//! comments are the schema's descriptions and their serde attributes fix the json names
//! (tests/it/schema.rs and the json-contract snapshots hold both).

use std::net::IpAddr;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The VirtualMachine's power state.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum PowerState {
    PoweredOn,
    PoweredOff,
    Suspended,
    #[default]
    Unknown,
}

/// Which labels found the control-plane VMs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum VmLabelScheme {
    /// `capv.vmware.com/*`.
    Capv,
    /// `capw.vmware.com/*`, of older Supervisors.
    Capw,
}

/// The API versions discovery chose (the server's preferred ones).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiVersions {
    /// VirtualMachine's group/version.
    pub virtual_machine: String,
    /// Cluster's group/version.
    pub cluster: String,
    /// Machine's group/version.
    pub machine: String,
    /// Absent when the cluster has no control-plane reference or its group is not served.
    pub control_plane: Option<String>,
    /// Absent when no control-plane VM was found under either label scheme.
    pub vm_labels: Option<VmLabelScheme>,
    /// The Supervisor's networking stack, from the groups it serves. Absent from documents
    /// written before it was read: `unknown`.
    // ([`super::stack`].)
    #[serde(default)]
    pub network_stack: StackFact,
}

/// The Supervisor's networking stack: which route can run with the workload API dark, and
/// what can drop packets between the VMs.
// From the groups it serves (`super::stack`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum NetworkStack {
    /// NSX with NCP, a T1 gateway per vSphere Namespace (vSphere 7/8): serves NCP's
    /// `vmware.com` VirtualNetwork or nsx-operator's `nsx.vmware.com`.
    // vSphere Pods can run.
    Nsx,
    /// NSX VPC (vSphere 9): serves nsx-operator's VPC kinds in `crd.nsx.vmware.com`.
    // vSphere Pods can run.
    Vpc,
    /// The vSphere Distributed Switch: serves `netoperator.vmware.com` and no NSX group;
    /// vSphere Pods (the jumpbox) cannot run there.
    // "you cannot deploy vSphere Pods for generic use on a Supervisor configured with VDS",
    // vSphere 8 documentation, Supervisor networking.
    Vds,
    /// None of those groups served.
    // An older Supervisor, or a bundle written before the stack was read.
    #[default]
    Unknown,
}

impl NetworkStack {
    /// Whether vSphere Pods, so the jumpbox, can run on this stack as far as we know: false
    /// only where VMware's documentation says they cannot (VDS).
    pub fn runs_vsphere_pods(self) -> bool {
        self != NetworkStack::Vds
    }

    /// How a line to an admin names it.
    pub fn title(self) -> &'static str {
        match self {
            NetworkStack::Nsx => "NSX (NCP, a T1 per namespace)",
            NetworkStack::Vpc => "NSX VPC",
            NetworkStack::Vds => "VDS (vSphere Distributed Switch, no NSX)",
            NetworkStack::Unknown => "unknown",
        }
    }
}

/// The networking stack and what discovery showed of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "NetworkStackInfo")]
pub struct StackFact {
    /// `nsx`, `vpc`, `vds` or `unknown`.
    #[serde(rename = "name")]
    pub stack: NetworkStack,
    /// The groups that decided, e.g. `serves netoperator.vmware.com and no NSX group`.
    pub evidence: String,
}

/// The Cluster object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// The Cluster's name.
    pub name: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `spec.controlPlaneEndpoint` as `host:port`.
    pub control_plane_endpoint: Option<String>,
}

/// A condition of a Supervisor object, as the object has it.
// The contract's `Condition` (its doc comments are the schema's descriptions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's type (`Ready`, `EtcdClusterHealthy`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The condition's machine-readable reason.
    pub reason: Option<String>,
    /// The condition's message.
    pub message: Option<String>,
    /// v1beta1 conditions only.
    pub severity: Option<String>,
    /// `lastTransitionTime` as the object has it (RFC 3339); absent when the object leaves it out.
    // When the Supervisor last changed its mind, so a report can say how old its word is (e.g.
    // `2025-06-03T08:14:07Z`). Required in both shapes (CAPI's `clusterv1.Condition` and
    // `metav1.Condition`); absent when a served object leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl Condition {
    /// How old the Supervisor's word is at `now`: whole seconds since `lastTransitionTime`
    /// ([`seconds_since`]); None without a readable time.
    pub fn age_seconds(&self, now: SystemTime) -> Option<u64> {
        seconds_since(self.last_transition_time.as_deref()?, now)
    }
}

/// The cluster's KubeadmControlPlane.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KcpInfo {
    /// Its name.
    pub name: String,
    /// Its apiVersion.
    pub api_version: String,
    /// `spec.replicas`: how many control-plane nodes the cluster should have.
    pub desired: Option<i64>,
    /// `status.replicas`.
    pub replicas: Option<i64>,
    /// `status.readyReplicas`.
    pub ready: Option<i64>,
    /// `status.availableReplicas`.
    pub available: Option<i64>,
    /// `status.upToDateReplicas` (v1beta1 `updatedReplicas`).
    pub up_to_date: Option<i64>,
    /// `spec.version`.
    pub version: Option<String>,
    /// Etcd-related conditions, plus Ready/Available.
    pub conditions: Vec<Condition>,
}

impl KcpInfo {
    /// What says a rollout is under way, from the counts alone (CAPI
    /// `KubeadmControlPlaneStatus`: v1beta1 `status.replicas`/`updatedReplicas`, v1beta2
    /// `status.replicas`/`upToDateReplicas`): more Machines than wanted (a rolling update
    /// scales up by one first, then down), or Machines not up to date with the KCP's spec.
    /// None when a count is absent or they say nothing is moving.
    pub fn rollout(&self) -> Option<String> {
        let replicas = self.replicas?;
        match (self.desired, self.up_to_date) {
            (Some(desired), _) if replicas > desired => Some(format!(
                "KubeadmControlPlane {} has {replicas} replicas for {desired} desired",
                self.name
            )),
            (_, Some(up_to_date)) if up_to_date < replicas => Some(format!(
                "KubeadmControlPlane {}: {up_to_date} of {replicas} replicas up to date",
                self.name
            )),
            _ => None,
        }
    }
}

/// Whole seconds from `rfc3339` (a time as a Supervisor object has it: a condition's
/// `lastTransitionTime`, a [`RolloutPhase`]'s `since`) to `now`: 0 for a time ahead of `now`
/// (the Supervisor's clock and ours differ), None when it is no RFC 3339 time.
pub(crate) fn seconds_since(rfc3339: &str, now: SystemTime) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(rfc3339.trim()).ok()?;
    Some(now.duration_since(t).map(|d| d.as_secs()).unwrap_or(0))
}

/// One of a Machine's `status.addresses`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MachineAddress {
    /// `InternalIP`, `ExternalIP`, `Hostname`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The address.
    pub address: String,
}

/// A control-plane node's CAPI Machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineInfo {
    /// The Machine's name.
    pub name: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.nodeRef.name`.
    pub node_name: Option<String>,
    /// `status.addresses`.
    pub addresses: Vec<MachineAddress>,
    /// `spec.infrastructureRef.name`: the VSphereMachine, whose name the VM shares.
    pub infrastructure_name: Option<String>,
    /// `spec.version`.
    pub version: Option<String>,
    /// `spec.failureDomain`.
    pub failure_domain: Option<String>,
    /// The KCP's `EtcdMemberHealthy` and `EtcdPodHealthy` conditions on this Machine.
    // The newer, metav1 shape where both are written. Reports captured before they were read
    // have none.
    #[serde(default)]
    pub etcd_conditions: Vec<Condition>,
    /// Where the Machine is in a rollout; absent for a Machine that is simply there.
    // When it is being created or deleted (see [`RolloutPhase`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutPhase>,
}

// A control-plane Machine that KCP (or an admin) is adding or removing: it is shown under
// "rollout in progress" and is evidence, never the reason for a verdict.
//
// Read from the Machine as CAPI writes it (v1beta1 and v1beta2 alike: `metadata`,
// `status.phase`, `status.nodeRef`) and from its VirtualMachine (vm-operator v1alpha1..5):
// - `Deleting`: `metadata.deletionTimestamp` is set (the API server keeps the object, and lists
//   it, until CAPI's `machine.cluster.x-k8s.io` finalizer goes: the VM is deleted first, then
//   the Node), or CAPI's `status.phase` says `Deleting` (`MachinePhaseDeleting`, set from the
//   deletionTimestamp);
// - `Provisioning`: no `status.nodeRef` yet and `status.phase` is `Pending`, `Provisioning` or
//   `Provisioned` (CAPI's `MachinePhase*` constants: created, infrastructure being made,
//   infrastructure made but no Node yet). `waitingFor` says what the Machine still lacks.
//
// A Machine with a nodeRef whose VM is off, or one `Failed`, is no rollout: those are faults.
//
// JSON (`nodes[].machine.rollout`): `{"phase": "Deleting", "since": "<deletionTimestamp>",
// "machinePhase": "Deleting"}` or `{"phase": "Provisioning", "since": "<creationTimestamp>",
// "machinePhase": "Provisioning", "waitingFor": "IpAddress"}` (`waitingFor`:
// [`ProvisioningStep`]'s variant names).
/// A control-plane Machine being deleted or provisioned: shown, never the reason for a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "phase")]
pub enum RolloutPhase {
    /// `metadata.deletionTimestamp` is set, or the Machine's phase is `Deleting`.
    Deleting {
        /// `metadata.deletionTimestamp` (RFC 3339); None when only the phase says so.
        since: Option<String>,
        /// The Machine's `status.phase`.
        #[serde(rename = "machinePhase")]
        machine_phase: Option<String>,
    },
    /// No `status.nodeRef` yet, and the Machine is `Pending`, `Provisioning` or `Provisioned`.
    Provisioning {
        /// `metadata.creationTimestamp` (RFC 3339): how long it has been on its way.
        since: Option<String>,
        /// The Machine's `status.phase`.
        #[serde(rename = "machinePhase")]
        machine_phase: Option<String>,
        /// What the Machine still lacks.
        #[serde(rename = "waitingFor")]
        waiting_for: ProvisioningStep,
    },
}

impl RolloutPhase {
    /// When the phase began (RFC 3339, as the object has it).
    pub fn since(&self) -> Option<&str> {
        match self {
            RolloutPhase::Deleting { since, .. } | RolloutPhase::Provisioning { since, .. } => {
                since.as_deref()
            }
        }
    }

    /// The Machine's `status.phase`.
    pub fn machine_phase(&self) -> Option<&str> {
        match self {
            RolloutPhase::Deleting { machine_phase, .. }
            | RolloutPhase::Provisioning { machine_phase, .. } => machine_phase.as_deref(),
        }
    }
    pub fn is_deleting(&self) -> bool {
        matches!(self, RolloutPhase::Deleting { .. })
    }
}

/// What a provisioning Machine still lacks, in the order it gets them.
// Its VirtualMachine (vm-operator creates it for the VSphereMachine), power
// (`status.powerState` PoweredOn), an address (`status.network.primaryIP4`/`primaryIP6`,
// v1alpha1 `status.vmIp`), then kubeadm's join, after which CAPI sets `status.nodeRef`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum ProvisioningStep {
    /// Its VirtualMachine.
    VirtualMachine,
    /// Its VM to power on.
    PowerOn,
    /// An IP address.
    IpAddress,
    /// Its Node to join.
    NodeJoin,
}

impl ProvisioningStep {
    /// What the Machine is waiting for, in words: "waiting for {this}".
    pub fn describe(self) -> &'static str {
        match self {
            ProvisioningStep::VirtualMachine => "its VirtualMachine",
            ProvisioningStep::PowerOn => "its VM to power on",
            ProvisioningStep::IpAddress => "an IP address",
            ProvisioningStep::NodeJoin => "its Node to join",
        }
    }
}

// Where a node's address came from (`nodes[].vm.ipSource`), in the order they are tried.
/// Where a VM's address came from, when not from its guest.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum AddressSource {
    /// `status.network.primaryIP4`/`primaryIP6`/`vmIp`: the guest's report.
    // Through VMware Tools.
    #[default]
    Guest,
    /// `status.network.config`: the network provider's configured address (the guest
    /// reports none).
    // A hung guest, VMware Tools not running.
    NetworkConfig,
    /// The Machine's `status.addresses` (`InternalIP`, else `ExternalIP`): neither the
    /// guest nor the network provider gives one.
    // As CAPI copied them from the VSphereMachine while the guest still reported one.
    MachineAddress,
}

impl AddressSource {
    /// The guest's own report: absent from the json.
    fn is_guest(&self) -> bool {
        *self == AddressSource::Guest
    }

    /// Beside the address in the tables: nothing for the guest's own word.
    pub fn short(self) -> Option<&'static str> {
        match self {
            AddressSource::Guest => None,
            AddressSource::NetworkConfig => Some("config"),
            AddressSource::MachineAddress => Some("machine"),
        }
    }
}

/// A control-plane node's VirtualMachine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VmInfo {
    /// The VirtualMachine's name.
    pub name: String,
    /// Its address, when it is one the plugin may use.
    pub ip: Option<IpAddr>,
    /// Its power state.
    pub power: PowerState,
    /// Its VirtualMachineClass.
    pub class: Option<String>,
    /// The name of the VSphereMachine the VM's ownerReferences name.
    // Shown; the join goes by uid, see [`super::join`].
    pub owner: Option<String>,
    /// The address the VM reports when it is none the plugin may send anything to.
    // Loopback, link-local, multicast...: [`super::address::refusal`]; `ip` is then None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_ip: Option<IpAddr>,
    /// Where `ip` (or `refusedIp`) came from; absent for the guest's own report (and in
    /// reports from before the field).
    #[serde(
        default,
        skip_serializing_if = "AddressSource::is_guest",
        deserialize_with = "guest_when_absent"
    )]
    #[schemars(with = "Option<AddressSource>")]
    pub ip_source: AddressSource,
    /// The ESXi host the VM runs on (vm-operator `status.host`, `status.nodeName` from
    /// v1alpha4); absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The vSphere Zone the VM was placed in (`status.zone`); absent without zones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// `ipSource` as written: absent or null is the guest's own report.
fn guest_when_absent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AddressSource, D::Error> {
    Ok(Option::<AddressSource>::deserialize(d)?.unwrap_or_default())
}

impl VmInfo {
    /// Why the VM's reported address is refused ("loopback", ...), when it is.
    pub fn refusal(&self) -> Option<(IpAddr, &'static str)> {
        let ip = self.refused_ip?;
        Some((ip, super::address::refusal(ip).unwrap_or("not unicast")))
    }
}

// `nodes[].join.by`.
/// How a node's VirtualMachine was found for its Machine.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum JoinedBy {
    /// The VM is controller-owned by the uid of the Machine's VSphereMachine.
    // (`controller: true`): read from the VSphereMachine, else from the Machine's
    // `spec.infrastructureRef.uid` (CAPI v1beta1 writes it).
    Uid,
    /// No uid to go by: the VM's VSphereMachine ownerReference names the Machine's infrastructure.
    // An older Supervisor, a bundle without them.
    OwnerName,
    /// No uid, and no owner named: the VM's name is the Machine's infrastructure's.
    // (Or the Machine's.)
    VmName,
}

impl JoinedBy {
    /// In words, for the tables.
    pub fn describe(self) -> &'static str {
        match self {
            JoinedBy::Uid => "by uid",
            JoinedBy::OwnerName => "by owner name (no uid to check)",
            JoinedBy::VmName => "by VM name (no uid to check)",
        }
    }
}

// `nodes[].join.problem`, tagged by `kind`. Each is a finding.
/// Why a node is never probed: who it is could not be established.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum IdentityProblem {
    /// A Machine with the control-plane labels not controller-owned by the cluster's KCP's uid.
    // Such a row has no `machine` (it is no Machine of this cluster's control plane) and joins
    // no VM.
    MachineNotOwned {
        /// The Machine.
        machine: String,
        /// Its controller ownerReference (`Kind name (uid)`), when it has one.
        controller: Option<String>,
    },
    /// Several VMs claim the Machine's VSphereMachine: none is used.
    // By uid, or by name without one. On the Machine's row and on each candidate's.
    AmbiguousVm {
        /// The Machine.
        machine: String,
        /// The VMs that claim it.
        candidates: Vec<String>,
    },
    /// The VM names the Machine's VSphereMachine as its owner, but not as its controller by uid.
    // A wrong or absent uid, or `controller` not true.
    OwnerMismatch {
        /// The Machine.
        machine: String,
        /// Its VSphereMachine.
        vsphere_machine: String,
    },
}

// `nodes[].join`.
/// How a node's Machine and VM were put together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Join {
    /// Absent when the row lacks a Machine or a VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<JoinedBy>,
    /// What makes the node no target, when something does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<IdentityProblem>,
}

/// One control-plane node: a Machine and its VM, either of which may be missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneNode {
    /// The Machine's name, or the VM's when there is no Machine.
    pub name: String,
    /// The Machine, when there is one.
    pub machine: Option<MachineInfo>,
    /// The VirtualMachine, when there is one.
    pub vm: Option<VmInfo>,
    /// How Machine and VM were joined, and what makes the node no target.
    // Reports from before it have none.
    #[serde(default)]
    pub join: Join,
}

impl ControlPlaneNode {
    /// The VM's address, when it is one the plugin may use (see [`VmInfo::refused_ip`]).
    pub fn ip(&self) -> Option<IpAddr> {
        self.vm.as_ref().and_then(|v| v.ip)
    }
    /// A node the probes may go to: a control-plane Machine of this cluster (owned by its
    /// KCP) whose VM, when it has one, was found without doubt. Its VM's address may still be
    /// missing or refused: then nothing is sent to it (the route reports it without address).
    pub fn is_target(&self) -> bool {
        self.machine.is_some() && self.join.problem.is_none()
    }
    /// The node's rollout phase (its Machine's), when it is being created or deleted: such a
    /// node is shown, never the reason for a verdict.
    pub fn rollout(&self) -> Option<&RolloutPhase> {
        self.machine.as_ref().and_then(|m| m.rollout.as_ref())
    }
}

/// What could replace control-plane Machines while the network is cut, as the Supervisor
/// shows it (read by [`super::remediation`]; the remediation guard).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemediationFacts {
    /// The Cluster's `spec.paused` is true: CAPI's controllers (the MachineHealthCheck's and
    /// KCP's among them) reconcile nothing of it (`IsPaused`).
    pub cluster_paused: bool,
    /// The Cluster carries `cluster.x-k8s.io/paused`, which pauses the Cluster's own
    /// reconciler only: the MachineHealthCheck's and KCP's still act.
    pub cluster_annotated: bool,
    /// The KCP's name when it carries `cluster.x-k8s.io/paused`: KCP then remediates nothing
    /// (nor rolls out), though a MachineHealthCheck still marks Machines.
    pub kcp_paused: Option<String>,
    /// How many MachineHealthChecks over the control plane are not in `health_checks` (past
    /// its cap), and how many of those are not paused: the cap keeps the live ones first.
    pub health_checks_left_out: usize,
    pub live_left_out: usize,
    /// Why the MachineHealthChecks could not be read (a note: 403, …); None when they were
    /// read, or the Supervisor does not serve the kind.
    pub unread: Option<String>,
    /// The MachineHealthChecks of the cluster whose selector takes at least one of its
    /// control-plane Machines, those not paused first, each by name (at most
    /// [`super::remediation::MAX_HEALTH_CHECKS`]).
    pub health_checks: Vec<HealthCheck>,
    /// The control-plane Machines with a remediation mark, by name.
    pub marked: Vec<MarkedMachine>,
    /// The KCP's remediation state, when it remediates or did (its annotation, its
    /// `status.lastRemediation`); None otherwise.
    pub kcp: Option<KcpRemediation>,
}

impl RemediationFacts {
    /// Whether anything here is worth a word: an empty value says nothing.
    pub fn is_empty(&self) -> bool {
        *self == RemediationFacts::default()
    }
}

// `HealthCheck`, `MarkedMachine` and `KcpRemediation` are the contract of
// `remediationGuard.healthChecks`, `.markedMachines` and `.kcp` (`report::DiagnoseReport`):
// their doc comments are the schema's descriptions, their serde attributes the json's names.

/// One MachineHealthCheck over control-plane Machines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    pub name: String,
    /// The control-plane Machines its selector takes.
    pub machines: Vec<String>,
    /// The Node conditions it judges unhealthy, each `Type=Status for <timeout>`.
    pub unhealthy_conditions: Vec<String>,
    /// How long a Machine may stay without a Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_startup_timeout: Option<String>,
    /// `maxUnhealthy` (v1beta1) / `remediation.triggerIf.unhealthyLessThanOrEqualTo` (v1beta2).
    // Remediation only while no more are unhealthy than this (CAPI's default: 100%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unhealthy: Option<String>,
    /// `unhealthyRange` / `remediation.triggerIf.unhealthyInRange`.
    // Remediation only within this range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_range: Option<String>,
    /// An external remediation template (`Kind/name`).
    // Remediation is then that controller's, not KCP's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation_template: Option<String>,
    /// It carries `cluster.x-k8s.io/paused`.
    pub paused: bool,
    /// `status.remediationsAllowed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediations_allowed: Option<i64>,
    /// `status.expectedMachines`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_machines: Option<i64>,
    /// `status.currentHealthy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_healthy: Option<i64>,
}

/// A control-plane Machine marked for remediation.
// A MachineHealthCheck has judged it (HealthCheckSucceeded False) or handed it to its owner
// (OwnerRemediated False).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarkedMachine {
    pub name: String,
    /// `HealthCheckSucceeded`, when False.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_succeeded: Option<Condition>,
    /// `OwnerRemediated`, when False: KCP is to remediate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_remediated: Option<Condition>,
    /// It carries `cluster.x-k8s.io/skip-remediation` or `cluster.x-k8s.io/paused`.
    pub skipped: bool,
}

/// The KubeadmControlPlane's remediation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KcpRemediation {
    pub name: String,
    /// The `controlplane.cluster.x-k8s.io/remediation-in-progress` annotation's value.
    // Its JSON (machine, timestamp, retryCount), bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
    /// `status.lastRemediation`: `machine at time (retry N)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_remediation: Option<String>,
    /// The remediation strategy's `maxRetry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<i64>,
    /// Its retry period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_period: Option<String>,
    /// Its minimum healthy period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_healthy_period: Option<String>,
}

/// A request the Supervisor refused (403) for a kind the walk can do without
/// ([`super::kinds::Need::Degrade`]): the permission the user lacks, which the finding names,
/// and the run goes on without the kind (docs/rbac.yaml says which kinds those are).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingPermission {
    /// The kind not read (`VSphereMachine`).
    pub kind: String,
    /// The verb refused (`list`).
    pub verb: String,
    pub group: String,
    /// The resource (`vspheremachines`).
    pub resource: String,
    /// The namespace asked in; None when the request was across all namespaces.
    pub namespace: Option<String>,
}

impl MissingPermission {
    /// `list vspheremachines.vmware.infrastructure.cluster.x-k8s.io in namespace ns-prod`.
    pub fn describe(&self) -> String {
        let place = match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "in all namespaces".to_string(),
        };
        let resource = if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        format!("{} {resource} {place}", self.verb)
    }
}

/// Everything the Supervisor says about one workload cluster's control plane.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    pub context: String,
    pub namespace: String,
    pub cluster: ClusterInfo,
    pub apis: ApiVersions,
    pub kcp: Option<KcpInfo>,
    /// Why there is no KCP, when there is none.
    pub kcp_missing_reason: Option<String>,
    pub nodes: Vec<ControlPlaneNode>,
    /// Machines carrying the control-plane label beyond what is probed (the KCP's replicas plus
    /// a surplus, [`super::targets`]), by name, in the order they ranked: never probed, not among
    /// `nodes`. Empty when every labelled Machine is there.
    pub machines_beyond_replicas: Vec<String>,
    /// The Cluster's `spec.controlPlaneEndpoint`, parsed: the only server a kubeconfig from the
    /// cluster's secret may point at (reports show it as `cluster.controlPlaneEndpoint`).
    pub endpoint: Option<Endpoint>,
    /// What could replace the control-plane Machines (the remediation guard): empty when
    /// nothing was read of it.
    pub remediation: RemediationFacts,
    /// The optional kinds the Supervisor refused to show (403), each a finding
    /// (`PermissionMissing`); the run went on without them.
    pub missing_permissions: Vec<MissingPermission>,
    /// `kubectl` as the run reached the Supervisor (its `--context`, its `--kubeconfig`): what
    /// every command the analysis prints for the admin starts with. Not the Supervisor's: the
    /// run's, set where the facts are made for it (`supervisor::walk`, `Evidence::judge`).
    pub kubectl: crate::command::Kubectl,
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
    /// `kubectl etcdnet diagnose <cluster> -n <ns> --context=… --kubeconfig=…`: this diagnosis
    /// again, to paste as it is (a step that said "re-run kubectl etcdnet diagnose" named no
    /// cluster and no namespace, so pasted it diagnosed nothing).
    pub fn diagnose_again(&self) -> String {
        self.kubectl.run(&format!(
            "etcdnet diagnose {} -n {}",
            crate::command::name(&self.cluster.name),
            crate::command::namespace(&self.namespace)
        ))
    }

    /// [`ClusterFacts::diagnose_again`] with `--watch`: a round each interval until Healthy,
    /// for a step whose fix takes effect by itself (etcd reconnecting once the path is open).
    pub fn diagnose_watch(&self) -> String {
        self.kubectl.run(&format!(
            "etcdnet diagnose {} -n {} --watch",
            crate::command::name(&self.cluster.name),
            crate::command::namespace(&self.namespace)
        ))
    }

    pub fn desired(&self) -> Option<i64> {
        self.kcp.as_ref().and_then(|k| k.desired)
    }
    pub fn machines_present(&self) -> usize {
        self.nodes.iter().filter(|n| n.machine.is_some()).count()
    }
    pub fn vms_present(&self) -> usize {
        self.nodes.iter().filter(|n| n.vm.is_some()).count()
    }
    /// Machines being deleted (scale-down, remediation, a `kubectl delete`).
    pub fn machines_deleting(&self) -> usize {
        self.count_rollout(RolloutPhase::is_deleting)
    }
    /// Machines on their way to becoming nodes (see [`RolloutPhase::Provisioning`]).
    pub fn machines_provisioning(&self) -> usize {
        self.count_rollout(|r| !r.is_deleting())
    }
    /// Machines that are staying: every one but those being deleted. What KCP's `spec.replicas`
    /// is to be compared with: a provisioning one is KCP doing its job, a deleting one is
    /// already on its way out.
    pub fn machines_staying(&self) -> usize {
        self.machines_present() - self.machines_deleting()
    }
    /// Machines neither provisioning nor deleting: the ones whose nodes may decide a verdict.
    pub fn machines_in_service(&self) -> usize {
        self.machines_present() - self.machines_deleting() - self.machines_provisioning()
    }
    /// The rollout phase of the node named `name` (a probe report's node name: its Machine's,
    /// else its VM's), when it has one.
    pub fn rollout_of(&self, name: &str) -> Option<&RolloutPhase> {
        self.nodes.iter().find(|n| n.name == name)?.rollout()
    }
    /// The nodes in a rollout phase, in the nodes' order.
    pub fn rollout_nodes(&self) -> impl Iterator<Item = (&ControlPlaneNode, &RolloutPhase)> {
        self.nodes.iter().filter_map(|n| Some((n, n.rollout()?)))
    }
    /// What says a KCP rollout is under way, from its counts ([`KcpInfo::rollout`]).
    pub fn kcp_rollout(&self) -> Option<String> {
        self.kcp.as_ref()?.rollout()
    }
    /// A rollout is in progress: a Machine is provisioning or deleting, or the KCP's counts
    /// say it is rolling ([`ClusterFacts::kcp_rollout`]).
    pub fn rollout_in_progress(&self) -> bool {
        self.rollout_nodes().next().is_some() || self.kcp_rollout().is_some()
    }
    fn count_rollout(&self, keep: impl Fn(&RolloutPhase) -> bool) -> usize {
        self.rollout_nodes().filter(|(_, r)| keep(r)).count()
    }
}
