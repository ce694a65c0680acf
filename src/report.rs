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

impl ControlPlaneSummary {
    pub fn of(facts: &ClusterFacts) -> Self {
        ControlPlaneSummary {
            desired: facts.desired(),
            machines: facts.machines_present(),
            virtual_machines: facts.vms_present(),
            kcp: facts.kcp.clone(),
            kcp_missing_reason: facts.kcp_missing_reason.clone(),
        }
    }
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
            control_plane: ControlPlaneSummary::of(&facts),
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

/// How the nodes were reached, and why that route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteInfo {
    /// `pod`, `jumpbox` or `ssh`.
    pub name: String,
    pub reason: String,
}

/// One control-plane node in a diagnosis: what the Supervisor knows and what its probe said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosedNode {
    pub name: String,
    pub ip: Option<std::net::IpAddr>,
    pub machine: Option<crate::supervisor::MachineInfo>,
    pub vm: Option<crate::supervisor::VmInfo>,
    pub reached: bool,
    /// Why the node could not be probed.
    pub error: Option<crate::probe::ReachError>,
    /// The probe's output, without the raw etcd log text (its findings are in `logs`).
    pub probe: Option<crate::probe::ProbeOutput>,
    /// The VM's 22, 2379, 2380 and 6443 as the Supervisor saw them (jumpbox route; else empty).
    pub supervisor_reach: Vec<crate::probe::PortReach>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseResult {
    pub exit_code: i32,
    /// Nodes probed / nodes in the control plane.
    pub nodes_reached: usize,
    pub nodes_total: usize,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseReport {
    pub api_version: String,
    pub kind: String,
    pub context: String,
    pub namespace: String,
    pub cluster: ClusterInfo,
    pub apis: ApiVersions,
    pub control_plane: ControlPlaneSummary,
    pub workload_api: WorkloadApi,
    pub route: RouteInfo,
    pub nodes: Vec<DiagnosedNode>,
    /// Port 2379, then 2380.
    pub matrices: Vec<crate::analyse::matrix::Matrix>,
    pub logs: Vec<crate::analyse::verdict::NodeLogs>,
    pub verdict: crate::analyse::verdict::Verdict,
    pub result: DiagnoseResult,
}

impl DiagnoseReport {
    /// Exit codes: 0 Healthy, 1 any other verdict, 3 when no node at all could be probed
    /// (the diagnosis could not be made).
    pub fn new(
        facts: ClusterFacts,
        workload_api: WorkloadApi,
        route: RouteInfo,
        reports: Vec<crate::probe::NodeReport>,
        duration_ms: u64,
    ) -> Self {
        use crate::analyse::verdict::{diagnose, VerdictCode};
        let diagnosis = diagnose(&facts, &reports);
        let reached = reports.iter().filter(|r| r.outcome.is_ok()).count();
        let exit_code = match diagnosis.verdict.code {
            VerdictCode::Healthy => EXIT_OK,
            _ if reached == 0 && !reports.is_empty() => EXIT_INCOMPLETE,
            _ => EXIT_PROBLEM,
        };
        let nodes = reports
            .into_iter()
            .map(|r| {
                let known = facts.nodes.iter().find(|n| n.name == r.name);
                let supervisor_reach = r.reach;
                let (probe, error) = match r.outcome {
                    Ok(mut p) => {
                        if let Some(l) = p.etcd.logs.as_mut() {
                            l.text.clear();
                        }
                        (Some(p), None)
                    }
                    Err(e) => (None, Some(e)),
                };
                DiagnosedNode {
                    name: r.name,
                    ip: r.ip,
                    machine: known.and_then(|n| n.machine.clone()),
                    vm: known.and_then(|n| n.vm.clone()),
                    reached: probe.is_some(),
                    error,
                    probe,
                    supervisor_reach,
                }
            })
            .collect::<Vec<_>>();
        DiagnoseReport {
            api_version: API_VERSION.into(),
            kind: "DiagnoseReport".into(),
            control_plane: ControlPlaneSummary::of(&facts),
            context: facts.context,
            namespace: facts.namespace,
            cluster: facts.cluster,
            apis: facts.apis,
            workload_api,
            route,
            result: DiagnoseResult {
                exit_code,
                nodes_reached: reached,
                nodes_total: nodes.len(),
                duration_ms,
            },
            nodes,
            matrices: diagnosis.matrices,
            logs: diagnosis.logs,
            verdict: diagnosis.verdict,
        }
    }
}
