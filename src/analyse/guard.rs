//! The remediation guard: what could replace control-plane Machines while the members cannot
//! reach each other, and how to hold it off (pure, from the Supervisor's facts).
//!
//! What CAPI does, as its source says (kubernetes-sigs/cluster-api: the MachineHealthCheck
//! reconciler, `controlplane/kubeadm/internal/controllers/remediation.go`):
//! - a MachineHealthCheck marks a Machine it selects `HealthCheckSucceeded` False when the
//!   Machine's Node has one of its unhealthy conditions for longer than the timeout (or no Node
//!   within `nodeStartupTimeout`), and, while the unhealthy Machines stay within `maxUnhealthy` /
//!   `unhealthyRange`, `OwnerRemediated` False: the owner (KCP) is to remediate it;
//! - KCP remediates one Machine at a time (the oldest marked one) by deleting it, a replacement
//!   following as a scale-up, and only when: its retry limits allow (`maxRetry`, `retryPeriod`,
//!   `minHealthyPeriod`); no other remediation is waiting for its replacement; and, once the
//!   control plane is initialized, more than one replica exists, no other control-plane Machine
//!   is provisioning or being deleted, removing the member keeps etcd quorum counting only the
//!   members whose Machines KCP sees `EtcdMemberHealthy`, and a healthy Machine can take the
//!   etcd leadership;
//! - a controller reconciles nothing of what CAPI's `IsPaused(cluster, o)`
//!   (`util/annotations/helpers.go`) calls paused: the Cluster's `spec.paused`, or the
//!   `cluster.x-k8s.io/paused` annotation on `o` itself, the object that acts (the
//!   MachineHealthCheck, the KCP); the annotation on the Cluster pauses only the Cluster's own
//!   reconciler. The MachineHealthCheck skips a Machine carrying `cluster.x-k8s.io/paused` or
//!   `cluster.x-k8s.io/skip-remediation`.
//!
//! A replacement in the middle of a network cut is the risk: a member removed and a new one
//! joining while the peers cannot reach each other can turn a transient loss of quorum into a
//! stuck rollout. So during a network verdict the guard says what is armed, naming the
//! MachineHealthCheck that acts (every one over the control plane is judged before any is left
//! out of what is shown, and the count left out is said), and gives the commands that pause the
//! Cluster and, once Healthy, unpause exactly what holds it paused (the Cluster's
//! `spec.paused`, or the KCP's annotation), each with the run's `--context` and `--kubeconfig`;
//! it; on a Healthy verdict of a paused Cluster, it reminds to unpause.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::command::{self, Kubectl};
use crate::supervisor::{
    ClusterFacts, Condition, HealthCheck, KcpRemediation, MarkedMachine, RemediationFacts,
};

// `GuardState` and `RemediationGuard` are the contract of `remediationGuard` (`report::DiagnoseReport`):
// their doc comments are the schema's descriptions, their serde attributes the json's names;
// what only the wording needs is `serde(skip)`.

/// What the guard concludes.
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
pub enum GuardState {
    /// A MachineHealthCheck selects control-plane Machines, a Machine is marked for KCP's
    /// remediation, or KCP has one in progress.
    // Something can replace control-plane Machines now.
    Armed,
    /// Paused as CAPI decides it: the Cluster's `spec.paused`, or the KubeadmControlPlane's
    /// own `cluster.x-k8s.io/paused` with no external remediation.
    // With `spec.paused` neither the MachineHealthCheck's controller nor KCP acts; with KCP's
    // annotation a MachineHealthCheck may mark, KCP replaces nothing.
    Paused,
    /// Nothing armed was seen.
    // What was read only tells of the past: a KCP's last remediation, a marked Machine that is
    // skipped.
    NotArmed,
    /// The MachineHealthChecks could not be read.
    // Whether anything is armed is not known.
    Unknown,
}

/// The remediation guard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemediationGuard {
    pub state: GuardState,
    /// The Cluster's `spec.paused` is true (CAPI's `IsPaused`; the Cluster's own
    /// `cluster.x-k8s.io/paused` annotation pauses neither the MachineHealthChecks nor KCP).
    pub cluster_paused: bool,
    // The Cluster carries `cluster.x-k8s.io/paused` (its own reconciler's pause only).
    #[serde(skip)]
    pub cluster_annotated: bool,
    /// The KubeadmControlPlane's name when it carries `cluster.x-k8s.io/paused`: KCP then
    /// replaces no Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcp_paused: Option<String>,
    /// The MachineHealthChecks whose selector takes control-plane Machines of the cluster,
    /// those not paused first, at most 8.
    pub health_checks: Vec<HealthCheck>,
    /// How many more MachineHealthChecks take control-plane Machines than `healthChecks`
    /// shows (the state counts them all).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub health_checks_left_out: usize,
    // Of those left out, how many are not paused.
    #[serde(skip)]
    pub live_left_out: usize,
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
    // The command that removes the KCP's annotation, when it carries one.
    #[serde(skip)]
    pub kcp_unpause: Option<String>,
    // The command that lists the namespace's MachineHealthChecks.
    #[serde(skip)]
    pub list_checks: String,
}

/// What a MachineHealthCheck's mark leads to, as KCP's `remediation.go` does it.
const KCP_WILL: &str = "what follows: a MachineHealthCheck marks a Machine whose Node stays unhealthy past the timeout HealthCheckSucceeded False and OwnerRemediated False; KCP then deletes a marked Machine and creates a replacement, one at a time, only while more than one replica exists, no other control-plane Machine is provisioning or being deleted, removing its etcd member keeps quorum among the members KCP sees healthy, and its retry limits allow: replacing members during a network cut can turn a transient loss of quorum into a stuck rollout";

/// The guard's lines for the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Advice {
    pub evidence: Vec<String>,
    /// Steps that go before the verdict's own (pausing comes before any repair).
    pub first_steps: Vec<String>,
    pub next_steps: Vec<String>,
    pub notes: Vec<String>,
}

/// `kubectl patch cluster <c> -n <ns> --type merge -p '{"spec":{"paused":<paused>}}'`, with
/// the run's flags: `spec.paused`, which CAPI's `IsPaused` reads for every controller of the
/// cluster. The names as the API server accepts them, else a placeholder
/// ([`command::name`]): never a word a shell or kubectl reads as more than a name.
pub(crate) fn patch_command(
    kubectl: &Kubectl,
    cluster: &str,
    namespace: &str,
    paused: bool,
) -> String {
    kubectl.run(&format!(
        "patch clusters.cluster.x-k8s.io {} -n {} --type merge -p '{{\"spec\":{{\"paused\":{paused}}}}}'",
        command::name(cluster),
        command::namespace(namespace)
    ))
}

/// `kubectl annotate kubeadmcontrolplanes… <kcp> -n <ns> cluster.x-k8s.io/paused=true` (or
/// `…/paused-` to remove it): the KCP's own pause, which `IsPaused(cluster, kcp)` reads.
pub(crate) fn kcp_annotate_command(
    kubectl: &Kubectl,
    kcp: &str,
    namespace: &str,
    paused: bool,
) -> String {
    let how = if paused { "=true" } else { "-" };
    kubectl.run(&format!(
        "annotate kubeadmcontrolplanes.controlplane.cluster.x-k8s.io {} -n {} {}{how}",
        command::name(kcp),
        command::namespace(namespace),
        crate::supervisor::remediation::PAUSED_ANNOTATION
    ))
}

/// The guard of a cluster; None when the Supervisor said nothing of remediation (no
/// MachineHealthCheck over the control plane, nothing marked, no KCP remediation, nothing
/// paused, and the MachineHealthChecks read or not served): then the report is what it was.
pub(crate) fn assess(facts: &ClusterFacts) -> Option<RemediationGuard> {
    let r: &RemediationFacts = &facts.remediation;
    if r.is_empty() {
        return None;
    }
    let kubectl = &facts.kubectl;
    let (cluster, ns) = (&facts.cluster.name, &facts.namespace);
    // Judged over every MachineHealthCheck, those past the cap too: a live one left out of
    // what is shown still arms (and may hand its Machines to an external controller).
    let live_check = r.health_checks.iter().any(|h| !h.paused) || r.live_left_out > 0;
    let external = r
        .health_checks
        .iter()
        .any(|h| !h.paused && h.remediation_template.is_some())
        || r.live_left_out > 0;
    let owner_marked = r
        .marked
        .iter()
        .any(|m| m.owner_remediated.is_some() && !m.skipped);
    let in_progress = r.kcp.as_ref().is_some_and(|k| k.in_progress.is_some());
    // KCP acts on a mark, and on its own remediation in progress, unless its own annotation
    // pauses it; an external remediation controller acts whatever KCP does.
    let kcp_would = live_check || owner_marked || in_progress;
    let armed = external || (r.kcp_paused.is_none() && kcp_would);
    let state = if r.cluster_paused {
        GuardState::Paused
    } else if armed {
        GuardState::Armed
    } else if r.unread.is_some() {
        GuardState::Unknown
    } else if r.kcp_paused.is_some() && kcp_would {
        GuardState::Paused
    } else {
        GuardState::NotArmed
    };
    let kcp_command = |paused| {
        r.kcp_paused
            .as_deref()
            .map(|k| kcp_annotate_command(kubectl, k, ns, paused))
    };
    // Exactly what holds it paused: the KCP's annotation when it alone does.
    let (pause, unpause) = match (state, kcp_command(true), kcp_command(false)) {
        (GuardState::Paused, Some(p), Some(u)) if !r.cluster_paused => (p, u),
        _ => (
            patch_command(kubectl, cluster, ns, true),
            patch_command(kubectl, cluster, ns, false),
        ),
    };
    Some(RemediationGuard {
        state,
        cluster_paused: r.cluster_paused,
        cluster_annotated: r.cluster_annotated,
        kcp_paused: r.kcp_paused.clone(),
        health_checks: r.health_checks.clone(),
        health_checks_left_out: r.health_checks_left_out,
        live_left_out: r.live_left_out,
        marked_machines: r.marked.clone(),
        kcp: r.kcp.clone(),
        unread: r.unread.clone(),
        pause_command: pause,
        unpause_command: unpause,
        kcp_unpause: kcp_command(false),
        list_checks: kubectl.run(&format!(
            "get machinehealthchecks.cluster.x-k8s.io -n {}",
            command::namespace(ns)
        )),
    })
}

/// `Type False (Reason)`.
fn said(c: &Condition) -> String {
    match &c.reason {
        Some(r) => format!("{} {} ({r})", c.kind, c.status),
        None => format!("{} {}", c.kind, c.status),
    }
}

/// What a MachineHealthCheck watches, in brief.
fn watches(h: &HealthCheck) -> String {
    let mut parts = Vec::new();
    if !h.unhealthy_conditions.is_empty() {
        parts.push(format!(
            "unhealthy when {}",
            h.unhealthy_conditions.join(", ")
        ));
    }
    if let Some(t) = &h.node_startup_timeout {
        parts.push(format!("no Node after {t}"));
    }
    if let Some(m) = &h.max_unhealthy {
        parts.push(format!("maxUnhealthy {m}"));
    }
    if let Some(r) = &h.unhealthy_range {
        parts.push(format!("unhealthyRange {r}"));
    }
    if let Some(t) = &h.remediation_template {
        parts.push(format!("remediation by {t}"));
    }
    parts.join("; ")
}

impl RemediationGuard {
    /// The guard's lines for a verdict: `network` when the verdict is about the paths between
    /// the members, `healthy` when it is Healthy.
    pub(crate) fn advice(&self, network: bool, healthy: bool) -> Advice {
        let mut a = Advice::default();
        if let Some(why) = &self.unread {
            a.notes.push(format!(
                "MachineHealthChecks could not be read ({why}): whether a MachineHealthCheck would replace control-plane Machines is not known"
            ));
        }
        if self.cluster_annotated && !self.cluster_paused {
            a.notes.push(
                "the Cluster carries cluster.x-k8s.io/paused but spec.paused is not true: that annotation pauses only the Cluster's own reconciler (CAPI's IsPaused reads the Cluster's spec.paused and the acting object's own annotation), so the MachineHealthChecks and KCP still act".to_string(),
            );
        }
        if healthy {
            if self.cluster_paused {
                a.next_steps.push(format!(
                    "the Cluster is paused (spec.paused) and the control plane is Healthy: unpause it, or CAPI reconciles nothing of it (no remediation, no rollout): {}",
                    self.unpause_command
                ));
            }
            if let (Some(k), Some(u)) = (&self.kcp_paused, &self.kcp_unpause) {
                a.next_steps.push(format!(
                    "KubeadmControlPlane {k} carries cluster.x-k8s.io/paused and the control plane is Healthy: remove it, or KCP remediates and rolls out nothing: {u}"
                ));
            }
            return a;
        }
        for m in &self.marked_machines {
            let mut conditions: Vec<String> = Vec::new();
            conditions.extend(m.health_check_succeeded.iter().map(said));
            conditions.extend(m.owner_remediated.iter().map(said));
            let skipped = if m.skipped {
                " (it carries cluster.x-k8s.io/skip-remediation or cluster.x-k8s.io/paused: the MachineHealthCheck leaves it)"
            } else {
                ""
            };
            a.evidence.push(format!(
                "Machine {} is marked for remediation: {}{skipped}",
                m.name,
                conditions.join(", ")
            ));
        }
        if let Some(k) = &self.kcp {
            if let Some(p) = &k.in_progress {
                a.evidence.push(format!(
                    "KubeadmControlPlane {} has a remediation in progress (controlplane.cluster.x-k8s.io/remediation-in-progress: {p}): it deleted a Machine and waits for the replacement",
                    k.name
                ));
            }
        }
        if !network {
            return a;
        }
        match self.state {
            GuardState::Paused if self.cluster_paused => {
                a.evidence.push(
                    "the Cluster is paused (spec.paused): no MachineHealthCheck marks and KCP replaces no control-plane Machine while it is".to_string(),
                );
                a.next_steps.push(format!(
                    "keep the Cluster paused until the verdict is Healthy, then unpause it: {}",
                    self.unpause_command
                ));
            }
            GuardState::Paused => {
                a.evidence.push(format!(
                    "KubeadmControlPlane {} carries cluster.x-k8s.io/paused: KCP replaces no control-plane Machine while it does (a MachineHealthCheck may still mark one, and no external remediation is set on any)",
                    self.kcp_paused.as_deref().unwrap_or_default()
                ));
                a.next_steps.push(format!(
                    "keep the KubeadmControlPlane paused until the verdict is Healthy, then remove its annotation: {}",
                    self.unpause_command
                ));
            }
            GuardState::Armed => {
                let live: Vec<&HealthCheck> =
                    self.health_checks.iter().filter(|h| !h.paused).collect();
                for h in &live {
                    a.evidence.push(format!(
                        "remediation is armed: MachineHealthCheck {} selects the control-plane Machines {} ({})",
                        h.name,
                        h.machines.join(", "),
                        watches(h)
                    ));
                }
                for h in live.iter().filter(|h| h.remediation_template.is_some()) {
                    a.evidence.push(format!(
                        "MachineHealthCheck {} hands a Machine it judges unhealthy to its remediation template {} (an external remediation controller acts on it, not KCP)",
                        h.name,
                        h.remediation_template.as_deref().unwrap_or_default()
                    ));
                }
                if self.health_checks_left_out > 0 {
                    a.evidence.push(format!(
                        "{} more MachineHealthCheck(s) over the control plane not shown ({} of them not paused)",
                        self.health_checks_left_out, self.live_left_out
                    ));
                }
                if self.kcp_paused.is_none()
                    && (live.iter().any(|h| h.remediation_template.is_none())
                        || self
                            .marked_machines
                            .iter()
                            .any(|m| m.owner_remediated.is_some()))
                {
                    a.evidence.push(KCP_WILL.to_string());
                }
                a.first_steps.push(format!(
                    "pause the Cluster while the network is cut, so no Machine is replaced (it also holds every other CAPI change to the cluster): {}",
                    self.pause_command
                ));
                a.next_steps.push(format!(
                    "once the paths are back and the verdict is Healthy, unpause it: {}",
                    self.unpause_command
                ));
            }
            GuardState::Unknown => {
                a.next_steps.push(format!(
                    "whether a MachineHealthCheck would replace control-plane Machines during the cut is not known (they could not be read): if one selects them ({}), pause the Cluster until the verdict is Healthy: {}, and unpause it then: {}",
                    self.list_checks, self.pause_command, self.unpause_command
                ));
            }
            GuardState::NotArmed => {}
        }
        a
    }
}

#[cfg(test)]
mod tests;
