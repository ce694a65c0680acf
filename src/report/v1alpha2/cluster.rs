//! One workload cluster as the reports print it: which cluster, its API versions, its control
//! plane (KCP and nodes), its workload API and the findings about it. The facts are the
//! Supervisor's and the workload check's own types, which derive the contract's serde names and
//! schema; only the control plane's summary, counted here, is the report's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::supervisor as sv;

pub use crate::analyse::status::{FindingCode, Severity};
pub(crate) use crate::analyse::Finding;
pub(crate) use crate::supervisor::{ApiVersions, ClusterInfo, KcpInfo};
pub use crate::supervisor::{
    ControlPlaneNode, IdentityProblem, JoinedBy, NetworkStack, VmLabelScheme,
};
pub use crate::workload::ApiState;
pub(crate) use crate::workload::WorkloadApi;

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
            kcp: facts.kcp.clone(),
            kcp_missing_reason: facts.kcp_missing_reason.clone(),
        }
    }
}
