//! One workload cluster as the reports print it: which cluster, its API versions, its control
//! plane (KCP and nodes), its workload API and the findings about it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::all;
use super::node::{Condition, MachineInfo, RolloutPhase, VmInfo};
use crate::analyse as an;
use crate::supervisor as sv;
use crate::workload as wl;

/// The Cluster object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// The Cluster's name.
    pub name: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `spec.controlPlaneEndpoint` as `host:port`.
    pub control_plane_endpoint: Option<String>,
}

impl From<sv::ClusterInfo> for ClusterInfo {
    fn from(c: sv::ClusterInfo) -> ClusterInfo {
        ClusterInfo {
            name: c.name,
            phase: c.phase,
            control_plane_endpoint: c.control_plane_endpoint,
        }
    }
}

mirror_enum! {
    /// Which labels found the control-plane VMs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    #[serde(rename_all = "lowercase")]
    #[strum(serialize_all = "lowercase")]
    pub enum VmLabelScheme from sv::VmLabelScheme {
        /// `capv.vmware.com/*`.
        Capv,
        /// `capw.vmware.com/*`, of older Supervisors.
        Capw,
    }
}

/// The API versions discovery chose (the server's preferred ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    #[serde(default)]
    pub network_stack: NetworkStackInfo,
}

mirror_enum! {
    /// The Supervisor's networking stack: which route can run with the workload API dark, and
    /// what can drop packets between the VMs.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    #[serde(rename_all = "lowercase")]
    #[strum(serialize_all = "lowercase")]
    pub enum NetworkStack from sv::NetworkStack {
        /// NSX with NCP, a T1 gateway per vSphere Namespace (vSphere 7/8): serves NCP's
        /// `vmware.com` VirtualNetwork or nsx-operator's `nsx.vmware.com`.
        Nsx,
        /// NSX VPC (vSphere 9): serves nsx-operator's VPC kinds in `crd.nsx.vmware.com`.
        Vpc,
        /// The vSphere Distributed Switch: serves `netoperator.vmware.com` and no NSX group;
        /// vSphere Pods (the jumpbox) cannot run there.
        Vds,
        /// None of those groups served.
        #[default]
        Unknown,
    }
}

/// The networking stack and what discovery showed of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStackInfo {
    /// `nsx`, `vpc`, `vds` or `unknown`.
    pub name: NetworkStack,
    /// The groups that decided, e.g. `serves netoperator.vmware.com and no NSX group`.
    pub evidence: String,
}

impl From<sv::StackFact> for NetworkStackInfo {
    fn from(f: sv::StackFact) -> NetworkStackInfo {
        NetworkStackInfo {
            name: f.stack.into(),
            evidence: f.evidence,
        }
    }
}

impl From<sv::ApiVersions> for ApiVersions {
    fn from(a: sv::ApiVersions) -> ApiVersions {
        ApiVersions {
            virtual_machine: a.virtual_machine,
            cluster: a.cluster,
            machine: a.machine,
            control_plane: a.control_plane,
            vm_labels: a.vm_labels.map(VmLabelScheme::from),
            network_stack: a.network_stack.into(),
        }
    }
}

/// The cluster's KubeadmControlPlane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

impl From<sv::KcpInfo> for KcpInfo {
    fn from(k: sv::KcpInfo) -> KcpInfo {
        KcpInfo {
            name: k.name,
            api_version: k.api_version,
            desired: k.desired,
            replicas: k.replicas,
            ready: k.ready,
            available: k.available,
            up_to_date: k.up_to_date,
            version: k.version,
            conditions: all(k.conditions),
        }
    }
}

impl KcpInfo {
    /// What says a rollout is under way, from the counts alone (the domain's
    /// [`sv::KcpInfo::rollout`], which reads no conditions).
    pub fn rollout(&self) -> Option<String> {
        sv::KcpInfo {
            name: self.name.clone(),
            api_version: self.api_version.clone(),
            desired: self.desired,
            replicas: self.replicas,
            ready: self.ready,
            available: self.available,
            up_to_date: self.up_to_date,
            version: None,
            conditions: Vec::new(),
        }
        .rollout()
    }
}

/// The control plane in numbers, and its KCP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneSummary {
    /// KCP `spec.replicas`; absent without a KCP.
    pub desired: Option<i64>,
    /// Control-plane Machines present.
    pub machines: usize,
    /// Control-plane VirtualMachines present.
    pub virtual_machines: usize,
    /// The KubeadmControlPlane, when there is one.
    pub kcp: Option<KcpInfo>,
    /// Why there is no KCP, when there is none.
    pub kcp_missing_reason: Option<String>,
}

impl From<&sv::ClusterFacts> for ControlPlaneSummary {
    fn from(facts: &sv::ClusterFacts) -> ControlPlaneSummary {
        ControlPlaneSummary {
            desired: facts.desired(),
            machines: facts.machines_present(),
            virtual_machines: facts.vms_present(),
            kcp: facts.kcp.clone().map(KcpInfo::from),
            kcp_missing_reason: facts.kcp_missing_reason.clone(),
        }
    }
}

mirror_enum! {
    /// How a node's VirtualMachine was found for its Machine.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum JoinedBy from sv::JoinedBy {
        /// The VM is controller-owned by the uid of the Machine's VSphereMachine.
        Uid,
        /// No uid to go by: the VM's VSphereMachine ownerReference names the Machine's infrastructure.
        OwnerName,
        /// No uid, and no owner named: the VM's name is the Machine's infrastructure's.
        VmName,
    }
}

impl JoinedBy {
    /// In words, for the tables.
    pub fn describe(self) -> &'static str {
        sv::JoinedBy::from(self).describe()
    }
}

/// Why a node is never probed: who it is could not be established.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum IdentityProblem {
    /// A Machine with the control-plane labels not controller-owned by the cluster's KCP's uid.
    MachineNotOwned {
        /// The Machine.
        machine: String,
        /// Its controller ownerReference (`Kind name (uid)`), when it has one.
        controller: Option<String>,
    },
    /// Several VMs claim the Machine's VSphereMachine: none is used.
    AmbiguousVm {
        /// The Machine.
        machine: String,
        /// The VMs that claim it.
        candidates: Vec<String>,
    },
    /// The VM names the Machine's VSphereMachine as its owner, but not as its controller by uid.
    OwnerMismatch {
        /// The Machine.
        machine: String,
        /// Its VSphereMachine.
        vsphere_machine: String,
    },
}

impl From<sv::IdentityProblem> for IdentityProblem {
    fn from(p: sv::IdentityProblem) -> IdentityProblem {
        match p {
            sv::IdentityProblem::MachineNotOwned {
                machine,
                controller,
            } => IdentityProblem::MachineNotOwned {
                machine,
                controller,
            },
            sv::IdentityProblem::AmbiguousVm {
                machine,
                candidates,
            } => IdentityProblem::AmbiguousVm {
                machine,
                candidates,
            },
            sv::IdentityProblem::OwnerMismatch {
                machine,
                vsphere_machine,
            } => IdentityProblem::OwnerMismatch {
                machine,
                vsphere_machine,
            },
        }
    }
}

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

impl From<sv::Join> for Join {
    fn from(j: sv::Join) -> Join {
        Join {
            by: j.by.map(JoinedBy::from),
            problem: j.problem.map(IdentityProblem::from),
        }
    }
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
    #[serde(default)]
    pub join: Join,
}

impl From<sv::ControlPlaneNode> for ControlPlaneNode {
    fn from(n: sv::ControlPlaneNode) -> ControlPlaneNode {
        ControlPlaneNode {
            name: n.name,
            machine: n.machine.map(MachineInfo::from),
            vm: n.vm.map(VmInfo::from),
            join: n.join.into(),
        }
    }
}

impl ControlPlaneNode {
    /// The VM's address, when it is one the plugin may use.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        self.vm.as_ref().and_then(|v| v.ip)
    }

    /// A node the probes may go to: a Machine of this control plane whose VM, if any, was
    /// found without doubt (as the domain's [`sv::ControlPlaneNode::is_target`]).
    pub fn is_target(&self) -> bool {
        self.machine.is_some() && self.join.problem.is_none()
    }

    /// The node's rollout phase (its Machine's), when it is being created or deleted.
    pub fn rollout(&self) -> Option<&RolloutPhase> {
        self.machine.as_ref().and_then(|m| m.rollout.as_ref())
    }
}

mirror_enum! {
    /// What the workload API check found.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum ApiState from wl::ApiState {
        /// It answered 2xx.
        Reachable,
        /// It answered, with an HTTP error (e.g. 500 from /readyz while etcd has no quorum).
        HttpError,
        /// No answer within the bound.
        Timeout,
        /// Connection refused.
        Refused,
        /// The TLS handshake failed.
        TlsError,
        /// Another network failure (no route, DNS, reset).
        Unreachable,
        /// Not checked: the kubeconfig secret is missing, unreadable or unusable.
        Unknown,
        /// Not contacted: the kubeconfig secret asks for what a secret's writer may not.
        Untrusted,
    }
}

/// The workload cluster's API server, as the check found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadApi {
    /// What the check found.
    pub state: ApiState,
    /// The API server URL from the kubeconfig (never its credentials).
    pub server: Option<String>,
    /// The path that answered.
    pub path: Option<String>,
    /// The HTTP status.
    pub http_status: Option<u16>,
    /// How long it took.
    pub elapsed_ms: Option<u64>,
    /// One line: what happened, for humans.
    pub detail: String,
    /// When this check was made (RFC 3339, the plugin's clock). Absent where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// The check made before the probes, when the API was checked again after them: this
    /// object is then the check after the probes (what the verdict judges), that one the
    /// first (its own `beforeProbes` absent). Absent when the API was checked once (no usable
    /// kubeconfig, `--dry-run`, `status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_probes: Option<WorkloadApiCheck>,
}

/// The workload API's check before the probes (`workloadApi.beforeProbes`): the same fields as
/// `workloadApi`, without one of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadApiCheck {
    /// What the check found.
    pub state: ApiState,
    /// The API server URL from the kubeconfig (never its credentials).
    pub server: Option<String>,
    /// The path that answered.
    pub path: Option<String>,
    /// The HTTP status.
    pub http_status: Option<u16>,
    /// How long it took.
    pub elapsed_ms: Option<u64>,
    /// One line: what happened, for humans.
    pub detail: String,
    /// When this check was made (RFC 3339, the plugin's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
}

impl From<wl::WorkloadApi> for WorkloadApi {
    fn from(w: wl::WorkloadApi) -> WorkloadApi {
        WorkloadApi {
            state: w.state.into(),
            server: w.server,
            path: w.path,
            http_status: w.http_status,
            elapsed_ms: w.elapsed_ms,
            detail: w.detail,
            checked_at: w.checked_at,
            before_probes: w.before_probes.map(|b| WorkloadApiCheck {
                state: b.state.into(),
                server: b.server,
                path: b.path,
                http_status: b.http_status,
                elapsed_ms: b.elapsed_ms,
                detail: b.detail,
                checked_at: b.checked_at,
            }),
        }
    }
}

mirror_enum! {
    /// How bad a finding is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum Severity from an::Severity {
        /// A problem.
        Error,
        /// Worth a look.
        Warning,
    }
}

mirror_enum! {
    /// A finding's code: scripts match on them (docs/output.md).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum FindingCode from an::FindingCode {
        /// No KubeadmControlPlane found for the cluster.
        ControlPlaneNotFound,
        /// Fewer control-plane Machines than the KCP wants.
        ControlPlaneMachinesMissing,
        /// The KCP is not Ready.
        ControlPlaneNotReady,
        /// An etcd condition of the KCP is not True.
        EtcdConditionNotTrue,
        /// A Machine has no VirtualMachine.
        VirtualMachineMissing,
        /// A control-plane VirtualMachine has no Machine.
        MachineMissing,
        /// A VirtualMachine has no IP address.
        VirtualMachineNoIP,
        /// A VirtualMachine is not powered on.
        VirtualMachineNotPoweredOn,
        /// A Machine is not Running.
        MachineNotRunning,
        /// The workload API could not be reached.
        WorkloadAPIUnreachable,
        /// The workload API answered, not ready.
        WorkloadAPINotReady,
        /// The `<cluster>-kubeconfig` secret was refused before any request.
        WorkloadKubeconfigUntrusted,
        /// A Machine is being deleted or provisioned, or the KCP's counts show it rolling.
        RolloutInProgress,
        /// A Machine with the control-plane labels is not controller-owned by the cluster's KCP.
        MachineNotOwnedByKCP,
        /// A VirtualMachine names a Machine's VSphereMachine as owner, not by its uid.
        VirtualMachineOwnerMismatch,
        /// Several VirtualMachines claim one Machine's VSphereMachine.
        VirtualMachineAmbiguous,
        /// The Supervisor refused (403) a kind the run can do without: the permission named,
        /// and what the run did instead.
        PermissionMissing,
        /// The VM reports an address that is no other host's: never probed at it.
        VirtualMachineAddressRefused,
        /// More Machines carry the control-plane label than the KCP's replicas plus one.
        ControlPlaneMachinesBeyondReplicas,
        /// A network object of the cluster failed to realize.
        NetworkNotRealized,
        /// NetworkPolicies carry an `nsx-op/error` annotation: the object's own claim.
        NetworkPolicyErrorClaimed,
        /// A realized SecurityPolicy's Drop or Reject rule decides TCP 2379/2380 between the VMs.
        SecurityPolicyBlocksEtcd,
        /// A SecurityPolicy's Drop or Reject rule would block TCP 2379/2380 but does not now.
        SecurityPolicyWouldBlockEtcd,
    }
}

impl FindingCode {
    /// Whether a finding of this code is a problem found (the exit code, `healthy`).
    pub fn counts(self) -> bool {
        an::FindingCode::from(self).counts()
    }
}

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What was found.
    pub code: FindingCode,
    /// How bad it is.
    pub severity: Severity,
    /// The node (Machine or VM name) it is about, when it is about one.
    pub node: Option<String>,
    /// One line, for humans.
    pub message: String,
}

impl From<an::Finding> for Finding {
    fn from(f: an::Finding) -> Finding {
        Finding {
            code: f.code.into(),
            severity: f.severity.into(),
            node: f.node,
            message: f.message,
        }
    }
}
