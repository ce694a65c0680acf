//! The remediation guard of a `DiagnoseReport` (`remediationGuard`): what could replace
//! control-plane Machines during a network cut, and the commands that pause and unpause the
//! Cluster. Absent when the Supervisor said nothing of remediation.

use serde::{Deserialize, Serialize};

use super::all;
use super::node::Condition;
use crate::analyse::guard;
use crate::supervisor as sv;

mirror_enum! {
    /// What the guard concludes.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum GuardState from guard::GuardState {
        /// A MachineHealthCheck selects control-plane Machines, a Machine is marked for KCP's
        /// remediation, or KCP has one in progress.
        Armed,
        /// Paused as CAPI decides it: the Cluster's `spec.paused`, or the KubeadmControlPlane's
        /// own `cluster.x-k8s.io/paused` with no external remediation.
        Paused,
        /// Nothing armed was seen.
        NotArmed,
        /// The MachineHealthChecks could not be read.
        Unknown,
    }
}

/// The remediation guard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemediationGuard {
    pub state: GuardState,
    /// The Cluster's `spec.paused` is true (CAPI's `IsPaused`; the Cluster's own
    /// `cluster.x-k8s.io/paused` annotation pauses neither the MachineHealthChecks nor KCP).
    pub cluster_paused: bool,
    /// The KubeadmControlPlane's name when it carries `cluster.x-k8s.io/paused`: KCP then
    /// replaces no Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcp_paused: Option<String>,
    /// The MachineHealthChecks whose selector takes control-plane Machines of the cluster,
    /// those not paused first, at most 8.
    pub health_checks: Vec<HealthCheck>,
    /// How many more MachineHealthChecks take control-plane Machines than `healthChecks`
    /// shows (the state counts them all).
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub health_checks_left_out: usize,
    /// The control-plane Machines marked for remediation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marked_machines: Vec<MarkedMachine>,
    /// The KubeadmControlPlane's remediation, when it remediates or did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcp: Option<KcpRemediation>,
    /// Why the MachineHealthChecks could not be read (e.g. `list machinehealthchecks in
    /// namespace ns-prod: forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
    /// The command that pauses what holds remediation off (the Cluster's `spec.paused`; the
    /// KubeadmControlPlane's annotation when only that holds it), with the run's `--context`
    /// and `--kubeconfig`.
    pub pause_command: String,
    /// The command that unpauses exactly that.
    pub unpause_command: String,
}

/// One MachineHealthCheck over control-plane Machines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unhealthy: Option<String>,
    /// `unhealthyRange` / `remediation.triggerIf.unhealthyInRange`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_range: Option<String>,
    /// An external remediation template (`Kind/name`).
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KcpRemediation {
    pub name: String,
    /// The `controlplane.cluster.x-k8s.io/remediation-in-progress` annotation's value.
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

impl From<guard::Guard> for RemediationGuard {
    fn from(g: guard::Guard) -> Self {
        RemediationGuard {
            state: g.state.into(),
            cluster_paused: g.cluster_paused,
            kcp_paused: g.kcp_paused,
            health_checks: all(g.health_checks),
            health_checks_left_out: g.health_checks_left_out,
            marked_machines: all(g.marked),
            kcp: g.kcp.map(Into::into),
            unread: g.unread,
            pause_command: g.pause,
            unpause_command: g.unpause,
        }
    }
}

impl From<sv::HealthCheck> for HealthCheck {
    fn from(h: sv::HealthCheck) -> Self {
        HealthCheck {
            name: h.name,
            machines: h.machines,
            unhealthy_conditions: h.unhealthy_conditions,
            node_startup_timeout: h.node_startup_timeout,
            max_unhealthy: h.max_unhealthy,
            unhealthy_range: h.unhealthy_range,
            remediation_template: h.remediation_template,
            paused: h.paused,
            remediations_allowed: h.remediations_allowed,
            expected_machines: h.expected_machines,
            current_healthy: h.current_healthy,
        }
    }
}

impl From<sv::MarkedMachine> for MarkedMachine {
    fn from(m: sv::MarkedMachine) -> Self {
        MarkedMachine {
            name: m.name,
            health_check_succeeded: m.health_check.map(Into::into),
            owner_remediated: m.owner_remediated.map(Into::into),
            skipped: m.skipped,
        }
    }
}

impl From<sv::KcpRemediation> for KcpRemediation {
    fn from(k: sv::KcpRemediation) -> Self {
        KcpRemediation {
            name: k.name,
            in_progress: k.in_progress,
            last_remediation: k.last,
            max_retry: k.max_retry,
            retry_period: k.retry_period,
            min_healthy_period: k.min_healthy_period,
        }
    }
}
