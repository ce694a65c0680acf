//! The reports, as printed by `-o json|yaml`. This is a contract with scripts: fields are only
//! added within an `apiVersion`; renaming or removing one means a new `apiVersion`.
//! Documented in docs/output.md.

use serde::{Deserialize, Serialize};

use crate::analyse::{Finding, Severity};
use crate::error::{EXIT_INCOMPLETE, EXIT_OK, EXIT_PROBLEM};
use crate::supervisor::{ApiVersions, ClusterFacts, ClusterInfo, ControlPlaneNode, KcpInfo};
use crate::workload::{ApiState, WorkloadApi};

pub const API_VERSION: &str = "etcdnet.kubectl.io/v1alpha1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub api_version: String,
    pub kind: String,
    pub context: String,
    pub namespace: String,
    pub cluster: ClusterInfo,
    pub apis: ApiVersions,
    pub control_plane: ControlPlaneSummary,
    pub nodes: Vec<ControlPlaneNode>,
    pub workload_api: WorkloadApi,
    pub findings: Vec<Finding>,
    pub result: RunResult,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneSummary {
    /// KCP `spec.replicas`; absent without a KCP.
    pub desired: Option<i64>,
    pub machines: usize,
    pub virtual_machines: usize,
    pub kcp: Option<KcpInfo>,
    pub kcp_missing_reason: Option<String>,
}

/// How the run ended, and the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// No finding at all.
    pub healthy: bool,
    /// Every check could run (false when e.g. the kubeconfig secret could not be read).
    pub complete: bool,
    pub errors: usize,
    pub warnings: usize,
    pub exit_code: i32,
}

impl StatusReport {
    pub fn new(facts: ClusterFacts, workload_api: WorkloadApi, findings: Vec<Finding>) -> Self {
        let complete = workload_api.state != ApiState::Unknown;
        let errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        let warnings = findings.len() - errors;
        // A problem found outranks a check that could not run: the admin learned something.
        let exit_code = if !findings.is_empty() {
            EXIT_PROBLEM
        } else if !complete {
            EXIT_INCOMPLETE
        } else {
            EXIT_OK
        };
        StatusReport {
            api_version: API_VERSION.to_string(),
            kind: "StatusReport".to_string(),
            control_plane: ControlPlaneSummary {
                desired: facts.desired(),
                machines: facts.machines_present(),
                virtual_machines: facts.vms_present(),
                kcp: facts.kcp,
                kcp_missing_reason: facts.kcp_missing_reason,
            },
            context: facts.context,
            namespace: facts.namespace,
            cluster: facts.cluster,
            apis: facts.apis,
            nodes: facts.nodes,
            workload_api,
            result: RunResult {
                healthy: findings.is_empty(),
                complete,
                errors,
                warnings,
                exit_code,
            },
            findings,
        }
    }
}

/// `version -o json|yaml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    pub api_version: String,
    pub kind: String,
    pub version: String,
}

impl VersionReport {
    pub fn current() -> Self {
        VersionReport {
            api_version: API_VERSION.into(),
            kind: "Version".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}
