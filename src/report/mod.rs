//! The reports, as printed by `-o json|yaml`. This is a contract with scripts: fields are only
//! added within an `apiVersion`; renaming or removing one means a new `apiVersion`.
//! Documented in docs/output.md.

pub(crate) mod compare;
mod evidence;
mod list;
pub mod schema;
pub mod v1alpha2;
pub(crate) mod watch;

use serde::{Deserialize, Serialize};

pub(crate) use compare::Comparison;
pub(crate) use evidence::{Evidence, ReadNotes};
pub(crate) use list::{ClusterFailure, Summarized};
pub use list::{ListItem, ListReport};

use crate::analyse::verdict::{Diagnosis, VerdictCode};
use crate::analyse::{self, network_findings, NetworkAssessment};
use crate::error::{EXIT_INCOMPLETE, EXIT_OK, EXIT_PROBLEM};
use crate::probe::NodeReport;
use crate::supervisor::{self, ClusterFacts};
use crate::workload;
pub(crate) use v1alpha2::ControlPlaneSummary;
pub(crate) use v1alpha2::DiagnosedNode;
use v1alpha2::{
    ApiState, ApiVersions, ClusterInfo, ControlPlaneNode, Finding, Severity, WorkloadApi,
};

/// v1alpha2 (0.2.0): log findings count the `--since` window only (history apart), and the
/// verdicts read the present; v1alpha1 documents had the whole log counted.
pub(crate) const API_VERSION: &str = "etcdnet.kubectl.io/v1alpha2";

pub(crate) use crate::analyse::is_zero;

/// What every report about one cluster starts with: which schema, and which cluster as the
/// Supervisor sees it. Flattened into the reports, so the JSON has these fields at the top.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportHeader {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// The report's kind: `StatusReport`, `DiagnoseReport`.
    pub kind: String,
    /// The Supervisor's kubeconfig context.
    pub context: String,
    /// The vSphere Namespace of the cluster.
    pub namespace: String,
    /// The Cluster object.
    pub cluster: ClusterInfo,
    /// The API versions discovery chose.
    pub apis: ApiVersions,
    /// The control plane in numbers, and its KCP.
    pub control_plane: ControlPlaneSummary,
}

impl ReportHeader {
    /// The header of a `kind` report on `facts`, and the nodes the facts hold.
    fn of(kind: &str, facts: ClusterFacts) -> (ReportHeader, Vec<supervisor::ControlPlaneNode>) {
        let header = ReportHeader {
            api_version: API_VERSION.into(),
            kind: kind.into(),
            control_plane: ControlPlaneSummary::from(&facts),
            context: facts.context,
            namespace: facts.namespace,
            cluster: facts.cluster,
            apis: facts.apis,
        };
        (header, facts.nodes)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    #[serde(flatten)]
    pub header: ReportHeader,
    pub nodes: Vec<ControlPlaneNode>,
    pub workload_api: WorkloadApi,
    pub findings: Vec<Finding>,
    /// The cluster's network and its SecurityPolicies against the control-plane VMs: only when
    /// the Supervisor serves an NSX group (absent otherwise, so a report is what it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<v1alpha2::NetworkAssessment<v1alpha2::PolicyEvaluation>>,
    pub result: RunResult,
}

/// How the run ended, and the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// No finding at all but an object's own claim ([`crate::analyse::FindingCode::counts`]).
    pub healthy: bool,
    /// Every check could run (false when e.g. the kubeconfig secret could not be read).
    pub complete: bool,
    pub errors: usize,
    pub warnings: usize,
    pub exit_code: i32,
    /// How long the cluster took (the Supervisor walk and the workload API check).
    #[serde(default)]
    pub duration_ms: u64,
}

impl StatusReport {
    pub(crate) fn new(
        facts: ClusterFacts,
        workload_api: workload::WorkloadApi,
        findings: Vec<analyse::Finding>,
        duration_ms: u64,
    ) -> Self {
        let (header, nodes) = ReportHeader::of("StatusReport", facts);
        let result = RunResult::of(&workload_api, &findings, duration_ms);
        StatusReport {
            header,
            nodes,
            workload_api,
            result,
            findings,
            network_policy: None,
        }
    }

    /// The report with the cluster's network: its findings after the others, the result
    /// counted again (their commands start with `kubectl`, the run's). None (no NSX group
    /// served) leaves the report as it is.
    pub(crate) fn with_network(
        mut self,
        network: Option<NetworkAssessment>,
        kubectl: &crate::command::Kubectl,
    ) -> Self {
        if let Some(a) = network {
            self.findings.extend(network_findings(&a, kubectl));
            self.result =
                RunResult::of(&self.workload_api, &self.findings, self.result.duration_ms);
            self.network_policy = Some(a);
        }
        self
    }
}

impl RunResult {
    fn of(workload_api: &WorkloadApi, findings: &[Finding], duration_ms: u64) -> RunResult {
        let complete = workload_api.state != ApiState::Unknown;
        let errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        let warnings = findings.len() - errors;
        // An object's own claim (a NetworkPolicy's `nsx-op/error`) is shown, never a problem
        // found: anyone who may edit the object can write it.
        let problems = findings.iter().filter(|f| f.code.counts()).count();
        // A problem found outranks a check that could not run: the admin learned something.
        let exit_code = if problems > 0 {
            EXIT_PROBLEM
        } else if !complete {
            EXIT_INCOMPLETE
        } else {
            EXIT_OK
        };
        RunResult {
            healthy: problems == 0,
            complete,
            errors,
            warnings,
            exit_code,
            duration_ms,
        }
    }
}

/// `version -o json|yaml`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VersionReport {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// Always `Version`.
    pub kind: String,
    /// The plugin's version.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteInfo {
    /// `pod`, `jumpbox` or `ssh`.
    pub name: String,
    /// Why that route.
    pub reason: String,
}

/// How a diagnosis ended, and the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseResult {
    /// 0 Healthy, 1 any other verdict, 3 when no node at all could be probed.
    pub exit_code: i32,
    /// Nodes probed.
    pub nodes_reached: usize,
    /// Nodes in the control plane.
    pub nodes_total: usize,
    /// How long the run took.
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnoseReport {
    #[serde(flatten)]
    pub header: ReportHeader,
    pub workload_api: WorkloadApi,
    /// What the Supervisor side shows, as `status` lists it: among them the VMs that carry the
    /// control-plane labels but join no Machine, which are never probed.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// As in `StatusReport`: only when the Supervisor serves an NSX group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<v1alpha2::NetworkAssessment<v1alpha2::PolicyEvaluation>>,
    /// NSX Manager's distributed firewall for the control-plane VMs: only with
    /// `--nsx-manager` (absent otherwise, so a report is what it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_manager: Option<v1alpha2::NsxManager>,
    pub route: RouteInfo,
    pub nodes: Vec<DiagnosedNode>,
    /// Port 2379, then 2380.
    pub matrices: Vec<v1alpha2::Matrix>,
    pub logs: Vec<v1alpha2::NodeLogs>,
    pub verdict: v1alpha2::Verdict,
    /// What could replace control-plane Machines during a network cut, and the commands that
    /// pause and unpause the Cluster: only when the Supervisor says anything of remediation (a
    /// MachineHealthCheck over the control plane, a Machine marked, KCP remediating, a paused
    /// Cluster, MachineHealthChecks that could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation_guard: Option<v1alpha2::RemediationGuard>,
    /// Where the failing paths' packets die, from the nodes' own firewalls read around the
    /// checks; absent when no node's probe read its firewall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_location: Option<v1alpha2::PacketLocation>,
    /// etcd's own metrics of each node whose probe read them (probes before them read none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub etcd_metrics: Vec<v1alpha2::EtcdMetrics>,
    /// Since when each pair of members fails, from both ends' etcd logs: absent when no log
    /// gives an onset, no path fails, every node knows a leader and KCP says no last probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<v1alpha2::Timeline>,
    pub result: DiagnoseResult,
}

impl DiagnoseReport {
    /// The report of a diagnosis made by `analyse` from these facts and node reports.
    /// Exit codes: 0 Healthy, 1 any other verdict, 3 when no node at all could be probed (the
    /// diagnosis could not be made).
    pub(crate) fn new(
        facts: ClusterFacts,
        workload_api: workload::WorkloadApi,
        findings: Vec<analyse::Finding>,
        route: RouteInfo,
        reports: Vec<NodeReport>,
        diagnosis: Diagnosis,
        duration_ms: u64,
    ) -> Self {
        let reached = reports.iter().filter(|r| r.outcome.is_ok()).count();
        let exit_code = match diagnosis.verdict.code {
            VerdictCode::Healthy => EXIT_OK,
            _ if reached == 0 && !reports.is_empty() => EXIT_INCOMPLETE,
            _ => EXIT_PROBLEM,
        };
        let (header, known) = ReportHeader::of("DiagnoseReport", facts);
        let nodes = reports
            .into_iter()
            .map(|r| {
                let known = known.iter().find(|n| n.name == r.name);
                let reach_from = r.reach_from.filter(|_| !r.reach.is_empty());
                let supervisor_reach = r.reach;
                let host_key = r.host_key;
                let (probe, error) = match r.outcome {
                    Ok(mut p) => {
                        // The contract says a log's text is empty in reports (the findings
                        // read from it are kept): both the running container's tail and the
                        // attempt before it, which a node writes and `-o json` would repeat.
                        for l in [p.etcd.logs.as_mut(), p.etcd.previous_logs.as_mut()]
                            .into_iter()
                            .flatten()
                        {
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
                    probe: probe.map(Into::into),
                    supervisor_reach,
                    reach_from,
                    host_key,
                }
            })
            .collect::<Vec<_>>();
        DiagnoseReport {
            header,
            workload_api,
            findings,
            network_policy: None,
            nsx_manager: None,
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
            remediation_guard: diagnosis.guard,
            packet_location: diagnosis.location.map(Into::into),
            etcd_metrics: diagnosis.etcd_metrics,
            timeline: (!diagnosis.timeline.is_empty()).then_some(diagnosis.timeline),
        }
    }
}

impl DiagnoseReport {
    /// The report with the cluster's network: its findings after the others (the exit code is
    /// the verdict's; their commands start with `kubectl`, the run's). None leaves the report
    /// as it is.
    pub(crate) fn with_network(
        mut self,
        network: Option<NetworkAssessment>,
        kubectl: &crate::command::Kubectl,
    ) -> Self {
        if let Some(a) = network {
            self.findings.extend(network_findings(&a, kubectl));
            self.network_policy = Some(a);
        }
        self
    }

    /// The report with what NSX Manager showed (`--nsx-manager`); None leaves it as it is.
    pub fn with_nsx_manager(mut self, nsx: Option<v1alpha2::NsxManager>) -> Self {
        if nsx.is_some() {
            self.nsx_manager = nsx;
        }
        self
    }
}

/// One pod `cleanup` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupItem {
    /// `supervisor`, or the workload cluster's name.
    pub cluster: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The pod's age.
    pub age_seconds: Option<u64>,
    /// What `cleanup` did with it.
    pub action: CleanupAction,
}

/// What `cleanup` did with a pod. In JSON a string: `deleted`, `would delete` (dry run), `kept`
/// (younger than --older-than), `kept (running; --all to delete)` (a run may still be using
/// it), or `error: ...`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(into = "String", from = "String")]
#[schemars(with = "String")]
pub enum CleanupAction {
    /// `deleted`.
    Deleted,
    /// `would delete` (dry run).
    WouldDelete,
    /// `kept` (younger than --older-than).
    Kept,
    /// Neither finished nor past its deadline: possibly another admin's run in progress, so
    /// only `--all` deletes it.
    KeptRunning,
    /// The delete failed; the one-line reason.
    Failed(String),
}

impl CleanupAction {
    pub fn is_failure(&self) -> bool {
        matches!(self, CleanupAction::Failed(_))
    }
}

impl std::fmt::Display for CleanupAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CleanupAction::Deleted => f.write_str("deleted"),
            CleanupAction::WouldDelete => f.write_str("would delete"),
            CleanupAction::Kept => f.write_str("kept"),
            CleanupAction::KeptRunning => f.write_str(KEPT_RUNNING),
            CleanupAction::Failed(why) => write!(f, "error: {why}"),
        }
    }
}

const KEPT_RUNNING: &str = "kept (running; --all to delete)";

impl From<CleanupAction> for String {
    fn from(a: CleanupAction) -> String {
        a.to_string()
    }
}

impl From<String> for CleanupAction {
    fn from(s: String) -> CleanupAction {
        match s.as_str() {
            "deleted" => CleanupAction::Deleted,
            "would delete" => CleanupAction::WouldDelete,
            "kept" => CleanupAction::Kept,
            KEPT_RUNNING => CleanupAction::KeptRunning,
            _ => CleanupAction::Failed(s.strip_prefix("error: ").unwrap_or(&s).to_string()),
        }
    }
}

/// `cleanup -o json|yaml`: the pods found and what was done with them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupReport {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// Always `CleanupReport`.
    pub kind: String,
    /// The pods found.
    pub items: Vec<CleanupItem>,
    /// Where we could not look (e.g. the workload API is down), one line each.
    pub skipped: Vec<String>,
}

impl CleanupReport {
    pub(crate) fn new(items: Vec<CleanupItem>, skipped: Vec<String>) -> Self {
        CleanupReport {
            api_version: API_VERSION.into(),
            kind: "CleanupReport".into(),
            items,
            skipped,
        }
    }

    /// Exit code: 3 when a delete failed or a cluster could not be looked at, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.items.iter().any(|i| i.action.is_failure()) || !self.skipped.is_empty() {
            EXIT_INCOMPLETE
        } else {
            EXIT_OK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without an NSX group (`None`) a report is what it was: the same value, no
    /// `networkPolicy` key in its JSON.
    #[test]
    fn without_a_network_nothing_changes() {
        use crate::supervisor::PowerState;
        use crate::testing::{api, facts, node};
        let nodes = vec![node(1, PowerState::PoweredOn, true, "Running")];
        let plain = StatusReport::new(
            facts(1, 1, nodes.clone()),
            api(crate::workload::ApiState::Reachable),
            vec![],
            7,
        );
        let joined = plain.clone().with_network(None, &Default::default());
        assert_eq!(joined, plain);
        let json = serde_json::to_string(&joined).unwrap();
        assert!(!json.contains("networkPolicy"), "{json}");
        let back: StatusReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plain);
    }

    #[test]
    fn cleanup_actions_are_the_strings_scripts_match() {
        for (action, text) in [
            (CleanupAction::Deleted, "deleted"),
            (CleanupAction::WouldDelete, "would delete"),
            (CleanupAction::Kept, "kept"),
            (
                CleanupAction::KeptRunning,
                "kept (running; --all to delete)",
            ),
            (
                CleanupAction::Failed("deleting: boom (500)".into()),
                "error: deleting: boom (500)",
            ),
        ] {
            assert_eq!(serde_json::to_value(&action).unwrap(), text);
            assert_eq!(
                serde_json::from_value::<CleanupAction>(text.into()).unwrap(),
                action
            );
        }
    }
}
