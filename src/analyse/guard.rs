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
//! - both controllers reconcile nothing of a paused Cluster (`spec.paused`, or the
//!   `cluster.x-k8s.io/paused` annotation), and the MachineHealthCheck skips a Machine carrying
//!   `cluster.x-k8s.io/paused` or `cluster.x-k8s.io/skip-remediation`.
//!
//! A replacement in the middle of a network cut is the risk: a member removed and a new one
//! joining while the peers cannot reach each other can turn a transient loss of quorum into a
//! stuck rollout. So during a network verdict the guard says what is armed, naming the
//! MachineHealthCheck, and gives the commands that pause the Cluster and, once Healthy, unpause
//! it; on a Healthy verdict of a paused Cluster, it reminds to unpause.

use crate::supervisor::{
    ClusterFacts, Condition, HealthCheck, KcpRemediation, MarkedMachine, RemediationFacts,
};

/// What the guard concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::VariantArray)]
pub enum GuardState {
    /// Something can replace control-plane Machines now: a MachineHealthCheck selects them, a
    /// Machine is marked for KCP's remediation, or KCP has one in progress.
    Armed,
    /// The Cluster is paused: neither the MachineHealthCheck's controller nor KCP acts on it.
    Paused,
    /// Nothing armed was seen (what was read only tells of the past: a KCP's last remediation,
    /// a marked Machine that is skipped).
    NotArmed,
    /// The MachineHealthChecks could not be read: whether anything is armed is not known.
    Unknown,
}

/// The remediation guard of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub state: GuardState,
    pub cluster_paused: bool,
    /// The MachineHealthChecks over the control-plane Machines.
    pub health_checks: Vec<HealthCheck>,
    /// The control-plane Machines marked for remediation.
    pub marked: Vec<MarkedMachine>,
    /// The KCP's remediation, when it remediates or did.
    pub kcp: Option<KcpRemediation>,
    /// Why the MachineHealthChecks could not be read.
    pub unread: Option<String>,
    /// The command that pauses the Cluster.
    pub pause: String,
    /// The command that unpauses it.
    pub unpause: String,
    /// The namespace as a shell word, for the commands the advice names.
    pub namespace_word: String,
}

/// What a MachineHealthCheck's mark leads to, as KCP's `remediation.go` does it.
const KCP_WILL: &str = "what follows: a MachineHealthCheck marks a Machine whose Node stays unhealthy past the timeout HealthCheckSucceeded False and OwnerRemediated False; KCP then deletes a marked Machine and creates a replacement, one at a time, only while more than one replica exists, no other control-plane Machine is provisioning or being deleted, removing its etcd member keeps quorum among the members KCP sees healthy, and its retry limits allow: replacing members during a network cut can turn a transient loss of quorum into a stuck rollout";

/// The guard's lines for the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Advice {
    pub evidence: Vec<String>,
    /// Steps that go before the verdict's own (pausing comes before any repair).
    pub first_steps: Vec<String>,
    pub next_steps: Vec<String>,
    pub notes: Vec<String>,
}

/// A word as a shell reads it: itself when plain (every Kubernetes name is), else quoted.
fn word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `kubectl patch cluster <c> -n <ns> --type merge -p '{"spec":{"paused":<paused>}}'`.
pub fn patch_command(cluster: &str, namespace: &str, paused: bool) -> String {
    format!(
        "kubectl patch cluster {} -n {} --type merge -p '{{\"spec\":{{\"paused\":{paused}}}}}'",
        word(cluster),
        word(namespace)
    )
}

/// The guard of a cluster; None when the Supervisor said nothing of remediation (no
/// MachineHealthCheck over the control plane, nothing marked, no KCP remediation, not paused,
/// and the MachineHealthChecks read or not served): then the report is what it was.
pub fn assess(facts: &ClusterFacts) -> Option<Guard> {
    let r: &RemediationFacts = &facts.remediation;
    if r.is_empty() {
        return None;
    }
    let live_check = r.health_checks.iter().any(|h| !h.paused);
    let owner_marked = r
        .marked
        .iter()
        .any(|m| m.owner_remediated.is_some() && !m.skipped);
    let in_progress = r.kcp.as_ref().is_some_and(|k| k.in_progress.is_some());
    let state = if r.cluster_paused {
        GuardState::Paused
    } else if live_check || owner_marked || in_progress {
        GuardState::Armed
    } else if r.unread.is_some() {
        GuardState::Unknown
    } else {
        GuardState::NotArmed
    };
    Some(Guard {
        state,
        cluster_paused: r.cluster_paused,
        health_checks: r.health_checks.clone(),
        marked: r.marked.clone(),
        kcp: r.kcp.clone(),
        unread: r.unread.clone(),
        pause: patch_command(&facts.cluster.name, &facts.namespace, true),
        unpause: patch_command(&facts.cluster.name, &facts.namespace, false),
        namespace_word: word(&facts.namespace),
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

impl Guard {
    /// The guard's lines for a verdict: `network` when the verdict is about the paths between
    /// the members, `healthy` when it is Healthy.
    pub fn advice(&self, network: bool, healthy: bool) -> Advice {
        let mut a = Advice::default();
        if let Some(why) = &self.unread {
            a.notes.push(format!(
                "MachineHealthChecks could not be read ({why}): whether a MachineHealthCheck would replace control-plane Machines is not known"
            ));
        }
        if healthy {
            if self.cluster_paused {
                a.next_steps.push(format!(
                    "the Cluster is paused (spec.paused) and the control plane is Healthy: unpause it, or CAPI reconciles nothing of it (no remediation, no rollout): {}",
                    self.unpause
                ));
            }
            return a;
        }
        for m in &self.marked {
            let mut conditions: Vec<String> = Vec::new();
            conditions.extend(m.health_check.iter().map(said));
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
            GuardState::Paused => {
                a.evidence.push(
                    "the Cluster is paused (spec.paused): no MachineHealthCheck marks and KCP replaces no control-plane Machine while it is".to_string(),
                );
                a.next_steps.push(format!(
                    "keep the Cluster paused until the verdict is Healthy, then unpause it: {}",
                    self.unpause
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
                if live.iter().any(|h| h.remediation_template.is_none())
                    || self.marked.iter().any(|m| m.owner_remediated.is_some())
                {
                    a.evidence.push(KCP_WILL.to_string());
                }
                a.first_steps.push(format!(
                    "pause the Cluster while the network is cut, so no Machine is replaced (it also holds every other CAPI change to the cluster): {}",
                    self.pause
                ));
                a.next_steps.push(format!(
                    "once the paths are back and the verdict is Healthy, unpause it: {}",
                    self.unpause
                ));
            }
            GuardState::Unknown => {
                a.next_steps.push(format!(
                    "whether a MachineHealthCheck would replace control-plane Machines during the cut is not known (they could not be read): if one selects them (kubectl get machinehealthchecks -n {}), pause the Cluster until the verdict is Healthy: {}, and unpause it then: {}",
                    self.namespace_word, self.pause, self.unpause
                ));
            }
            GuardState::NotArmed => {}
        }
        a
    }
}

#[cfg(test)]
mod tests;
