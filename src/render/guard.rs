//! The REMEDIATION GUARD section of the `diagnose` table, under the verdict: whether anything
//! could replace control-plane Machines (the MachineHealthChecks over them, the Machines
//! marked, KCP's remediation), whether the Cluster is paused, and the commands that pause and
//! unpause it. Shown only when the report has a guard (`remediationGuard`).
//!
//! Every text from the objects goes out through [`Lines`], which makes it visible.

use super::{Lines, Tone};
use crate::report::v1alpha2::{GuardState, RemediationGuard};

/// The section; `wide` adds each MachineHealthCheck's status counts and the KCP's strategy.
pub(crate) fn section(out: &mut Lines, g: &RemediationGuard, wide: bool) {
    out.blank();
    let tone = match g.state {
        GuardState::Armed | GuardState::Unknown => Tone::Bad,
        GuardState::Paused | GuardState::NotArmed => Tone::Good,
    };
    let kcp_said;
    let said = match g.state {
        GuardState::Armed => "remediation can replace control-plane Machines",
        GuardState::Paused if g.cluster_paused => "the Cluster is paused: nothing is remediated",
        GuardState::Paused => {
            kcp_said = format!(
                "KubeadmControlPlane {} is paused: it replaces no Machine",
                g.kcp_paused.as_deref().unwrap_or_default()
            );
            &kcp_said
        }
        GuardState::NotArmed => "nothing armed",
        GuardState::Unknown => "not known: the MachineHealthChecks could not be read",
    };
    out.marked(
        "REMEDIATION GUARD: ",
        tone,
        // In words (issue 38); the JSON keeps the code, `NotArmed`.
        match g.state {
            GuardState::Armed => "armed",
            GuardState::Paused => "paused",
            GuardState::NotArmed => "not armed",
            GuardState::Unknown => "unknown",
        },
        &format!(" ({said})"),
    );
    for h in &g.health_checks {
        let paused = if h.paused { " (paused)" } else { "" };
        out.line(format!(
            "  MachineHealthCheck {}{paused}: {}",
            h.name,
            h.machines.join(", ")
        ));
        if !h.unhealthy_conditions.is_empty() {
            out.line(format!(
                "    unhealthy when: {}",
                h.unhealthy_conditions.join(", ")
            ));
        }
        let mut limits = Vec::new();
        if let Some(t) = &h.node_startup_timeout {
            limits.push(format!("nodeStartupTimeout {t}"));
        }
        if let Some(m) = &h.max_unhealthy {
            limits.push(format!("maxUnhealthy {m}"));
        }
        if let Some(r) = &h.unhealthy_range {
            limits.push(format!("unhealthyRange {r}"));
        }
        if let Some(t) = &h.remediation_template {
            limits.push(format!("remediationTemplate {t}"));
        }
        if !limits.is_empty() {
            out.line(format!("    {}", limits.join(", ")));
        }
        if wide {
            let count = |n: Option<i64>| n.map_or("?".to_string(), |n| n.to_string());
            out.line(format!(
                "    expected {}, healthy {}, remediations allowed {}",
                count(h.expected_machines),
                count(h.current_healthy),
                count(h.remediations_allowed)
            ));
        }
    }
    if g.health_checks_left_out > 0 {
        out.line(format!(
            "  {} more MachineHealthCheck(s) over the control plane not shown",
            g.health_checks_left_out
        ));
    }
    for m in &g.marked_machines {
        let mut conditions = Vec::new();
        for c in [&m.health_check_succeeded, &m.owner_remediated]
            .into_iter()
            .flatten()
        {
            match &c.reason {
                Some(r) => conditions.push(format!("{} {} ({r})", c.kind, c.status)),
                None => conditions.push(format!("{} {}", c.kind, c.status)),
            }
        }
        let skipped = if m.skipped { ", skipped" } else { "" };
        out.line(format!(
            "  Machine {} marked: {}{skipped}",
            m.name,
            conditions.join(", ")
        ));
    }
    if let Some(k) = &g.kcp {
        if let Some(p) = &k.in_progress {
            out.line(format!(
                "  KubeadmControlPlane {}: remediation in progress {p}",
                k.name
            ));
        }
        if let Some(l) = &k.last_remediation {
            out.line(format!(
                "  KubeadmControlPlane {}: last remediation {l}",
                k.name
            ));
        }
        if wide {
            let mut s = Vec::new();
            if let Some(n) = k.max_retry {
                s.push(format!("maxRetry {n}"));
            }
            if let Some(p) = &k.retry_period {
                s.push(format!("retryPeriod {p}"));
            }
            if let Some(p) = &k.min_healthy_period {
                s.push(format!("minHealthyPeriod {p}"));
            }
            if !s.is_empty() {
                out.line(format!("    {}", s.join(", ")));
            }
        }
    }
    if let Some(u) = &g.unread {
        out.line(format!("  not read: {u}"));
    }
    out.line(format!("  pause:   {}", g.pause_command));
    out.line(format!("  unpause: {}", g.unpause_command));
}
