//! What could replace control-plane Machines while the network is cut (the remediation guard),
//! read from the Supervisor's objects, pure: the MachineHealthChecks whose selector takes the
//! cluster's control-plane Machines, the Machines already marked for remediation, the KCP's
//! remediation state and whether the Cluster is paused.
//!
//! Read as CAPI writes them (v1beta1 and v1beta2; checked against kubernetes-sigs/cluster-api
//! `api/core/*/machinehealthcheck_types.go`, `api/controlplane/kubeadm/*/kubeadm_control_plane_types.go`,
//! the MachineHealthCheck reconciler and KCP's `remediation.go`):
//! - MachineHealthCheck: `spec.clusterName`, `spec.selector` (matchLabels, matchExpressions);
//!   v1beta1 `spec.unhealthyConditions[]` (`type`, `status`, `timeout`), `spec.nodeStartupTimeout`,
//!   `spec.maxUnhealthy`, `spec.unhealthyRange`, `spec.remediationTemplate`; v1beta2
//!   `spec.checks.unhealthyNodeConditions[]` (`timeoutSeconds`), `spec.checks.nodeStartupTimeoutSeconds`,
//!   `spec.remediation.triggerIf.{unhealthyLessThanOrEqualTo,unhealthyInRange}`,
//!   `spec.remediation.templateRef`; `status.{expectedMachines,currentHealthy,remediationsAllowed}`;
//! - a Machine's `HealthCheckSucceeded` and `OwnerRemediated` conditions (v1beta1
//!   `status.conditions`, CAPI 1.9/1.10 `status.v1beta2.conditions`, v1beta2 `status.conditions`
//!   and `status.deprecated.v1beta1.conditions`), and the annotations
//!   `cluster.x-k8s.io/skip-remediation`, `cluster.x-k8s.io/paused`;
//! - the KCP's annotation `controlplane.cluster.x-k8s.io/remediation-in-progress`, its
//!   `status.lastRemediation` (`machine`, v1beta1 `timestamp` / v1beta2 `time`, `retryCount`) and
//!   its strategy: v1beta1 `spec.remediationStrategy.{maxRetry,retryPeriod,minHealthyPeriod}`,
//!   v1beta2 `spec.remediation.{maxRetry,retryPeriodSeconds,minHealthyPeriodSeconds}`;
//! - the Cluster's `spec.paused` (v1beta1 `bool`, v1beta2 `*bool`: the same field) and the
//!   `cluster.x-k8s.io/paused` annotation of the Cluster, the KCP and each MachineHealthCheck.
//!
//! Paused as CAPI decides it: `util/annotations/helpers.go`'s `IsPaused(cluster, o)` is the
//! Cluster's `spec.paused`, or the annotation on `o`, the object whose controller acts (the
//! MachineHealthCheck's reconciler asks it of the MachineHealthCheck, KCP's of the KCP). The
//! annotation on the Cluster pauses the Cluster's own reconciler only: never the guard's
//! concern, so a Cluster that carries it with `spec.paused: false` is not paused here.
//!
//! A namespace editor can create any number of MachineHealthChecks over the control plane.
//! Every one is judged on its own fields (paused or not) before any is left out, the ones not
//! paused first, so a cap on what is shown never hides the one that acts; the count left out
//! is kept.
//!
//! Every string is the Supervisor's (anyone who may edit the object wrote it): kept bounded
//! here, shown only through the renderers' escaping.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde_json::Value;

use super::facts::{Condition, HealthCheck, KcpRemediation, MarkedMachine, RemediationFacts};

/// CAPI's annotation that pauses one object's reconciliation.
pub(crate) const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// CAPI's annotation that keeps a Machine out of a MachineHealthCheck's remediation.
pub(crate) const SKIP_REMEDIATION_ANNOTATION: &str = "cluster.x-k8s.io/skip-remediation";
/// KCP's annotation while a remediation it started waits for the replacement Machine.
pub(crate) const REMEDIATION_IN_PROGRESS_ANNOTATION: &str =
    "controlplane.cluster.x-k8s.io/remediation-in-progress";

/// The most MachineHealthChecks kept (a namespace may hold any number).
pub(crate) const MAX_HEALTH_CHECKS: usize = 8;
/// The most conditions of one MachineHealthCheck kept.
const MAX_CONDITIONS: usize = 8;
/// The longest string kept of any value read here (names are at most 253 in Kubernetes).
const MAX_TEXT: usize = 256;

fn bounded(s: &str) -> String {
    s.chars().take(MAX_TEXT).collect()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn annotations(o: &DynamicObject) -> Option<&BTreeMap<String, String>> {
    o.metadata.annotations.as_ref()
}

fn has_annotation(o: &DynamicObject, key: &str) -> bool {
    annotations(o).is_some_and(|a| a.contains_key(key))
}

/// An intstr or a plain value as text (`100%`, `2`).
fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(bounded(s)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Seconds as a duration in Go's words (`300` → `5m0s`), as v1beta1 writes them.
fn go_duration(secs: i64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

/// A duration at `v1beta1` (a string) or `v1beta2` (whole seconds).
fn duration(data: &Value, v1beta1: &str, v1beta2: &str) -> Option<String> {
    str_at(data, v1beta1).map(bounded).or_else(|| {
        data.pointer(v1beta2)
            .and_then(Value::as_i64)
            .map(go_duration)
    })
}

/// Whether the Cluster pauses every controller of it: `spec.paused` true (CAPI's `IsPaused`
/// reads `cluster.Spec.Paused`; v1beta2 `ptr.Deref(cluster.Spec.Paused, false)`). Its own
/// `cluster.x-k8s.io/paused` annotation is not this ([`cluster_annotated`]).
pub(crate) fn cluster_paused(cluster: &DynamicObject) -> bool {
    cluster
        .data
        .pointer("/spec/paused")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The Cluster carries `cluster.x-k8s.io/paused`: only the Cluster's own reconciler is paused
/// by it (`IsPaused(cluster, cluster)`), never the MachineHealthCheck's nor KCP's.
pub(crate) fn cluster_annotated(cluster: &DynamicObject) -> bool {
    has_annotation(cluster, PAUSED_ANNOTATION)
}

/// The MachineHealthChecks of `cluster` that take at least one of its control-plane Machines,
/// the ones not paused by their own annotation first, each group by name: the order the facts
/// show them in and a bundle keeps them in, so a cap keeps the live ones.
pub(crate) fn over_control_plane<'a>(
    health_checks: &'a [DynamicObject],
    cluster: &str,
    machines: &[&DynamicObject],
) -> Vec<&'a DynamicObject> {
    let mut checks: Vec<&DynamicObject> = health_checks
        .iter()
        .filter(|h| !selected(h, cluster, machines).is_empty())
        .collect();
    checks.sort_by(|a, b| {
        (has_annotation(a, PAUSED_ANNOTATION), &a.metadata.name)
            .cmp(&(has_annotation(b, PAUSED_ANNOTATION), &b.metadata.name))
    });
    checks
}

/// Whether a label selector (`spec.selector`) takes an object with these labels, as
/// apimachinery evaluates it (the MachineHealthCheck controller converts it with
/// `LabelSelectorAsSelector`). An empty selector takes every object; one apimachinery refuses
/// (an unknown operator, `In` without values, beyond the bounds) takes none.
pub(crate) fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    crate::selector::Selector::from_value(selector).is_ok_and(|s| s.matches(labels))
}

/// The cluster a MachineHealthCheck is for: `spec.clusterName`.
pub(crate) fn health_check_cluster(mhc: &DynamicObject) -> Option<&str> {
    str_at(&mhc.data, "/spec/clusterName")
}

/// The control-plane Machines (their names) a MachineHealthCheck of `cluster` takes: none
/// when it is another cluster's.
pub(crate) fn selected<'a>(
    mhc: &DynamicObject,
    cluster: &str,
    machines: &[&'a DynamicObject],
) -> Vec<&'a DynamicObject> {
    if health_check_cluster(mhc) != Some(cluster) {
        return Vec::new();
    }
    let selector = mhc
        .data
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_default();
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    machines
        .iter()
        .filter(|m| selects(&selector, m.metadata.labels.as_ref().unwrap_or(&EMPTY)))
        .copied()
        .collect()
}

/// One MachineHealthCheck as [`HealthCheck`], with the Machines it takes.
pub(crate) fn health_check(mhc: &DynamicObject, machines: &[&DynamicObject]) -> HealthCheck {
    let d = &mhc.data;
    let v1beta1 = d
        .pointer("/spec/unhealthyConditions")
        .and_then(Value::as_array);
    let v1beta2 = d
        .pointer("/spec/checks/unhealthyNodeConditions")
        .and_then(Value::as_array);
    let unhealthy_conditions = v1beta1
        .or(v1beta2)
        .into_iter()
        .flatten()
        .take(MAX_CONDITIONS)
        .filter_map(|c| {
            let kind = str_at(c, "/type")?;
            let status = str_at(c, "/status").unwrap_or("?");
            let timeout = str_at(c, "/timeout")
                .map(bounded)
                .or_else(|| c.get("timeoutSeconds")?.as_i64().map(go_duration))
                .unwrap_or_else(|| "0s".to_string());
            Some(bounded(&format!("{kind}={status} for {timeout}")))
        })
        .collect();
    let template = d
        .pointer("/spec/remediationTemplate")
        .or_else(|| d.pointer("/spec/remediation/templateRef"))
        .and_then(|t| Some(format!("{}/{}", str_at(t, "/kind")?, str_at(t, "/name")?)));
    let int = |p: &str| d.pointer(p).and_then(Value::as_i64);
    HealthCheck {
        name: bounded(mhc.metadata.name.as_deref().unwrap_or_default()),
        machines: machines
            .iter()
            .map(|m| bounded(m.metadata.name.as_deref().unwrap_or_default()))
            .collect(),
        unhealthy_conditions,
        node_startup_timeout: duration(
            d,
            "/spec/nodeStartupTimeout",
            "/spec/checks/nodeStartupTimeoutSeconds",
        ),
        max_unhealthy: d
            .pointer("/spec/maxUnhealthy")
            .or_else(|| d.pointer("/spec/remediation/triggerIf/unhealthyLessThanOrEqualTo"))
            .and_then(int_or_string),
        unhealthy_range: str_at(d, "/spec/unhealthyRange")
            .or_else(|| str_at(d, "/spec/remediation/triggerIf/unhealthyInRange"))
            .map(bounded),
        remediation_template: template.map(|t| bounded(&t)),
        paused: has_annotation(mhc, PAUSED_ANNOTATION),
        remediations_allowed: int("/status/remediationsAllowed"),
        expected_machines: int("/status/expectedMachines"),
        current_healthy: int("/status/currentHealthy"),
    }
}

/// One condition of a Machine by type, wherever its version keeps it (metav1 first).
fn condition(data: &Value, kind: &str) -> Option<Condition> {
    [
        "/status/v1beta2/conditions",
        "/status/conditions",
        "/status/deprecated/v1beta1/conditions",
    ]
    .iter()
    .filter_map(|p| data.pointer(p).and_then(Value::as_array))
    .flatten()
    .find(|c| str_at(c, "/type") == Some(kind))
    .map(|c| Condition {
        kind: kind.to_string(),
        status: str_at(c, "/status").unwrap_or("Unknown").to_string(),
        reason: str_at(c, "/reason").map(bounded),
        message: str_at(c, "/message").map(bounded),
        severity: str_at(c, "/severity").map(bounded),
        last_transition_time: str_at(c, "/lastTransitionTime").map(bounded),
    })
}

/// A control-plane Machine's remediation mark, when it has one: `HealthCheckSucceeded` or
/// `OwnerRemediated` False.
pub(crate) fn marked(machine: &DynamicObject) -> Option<MarkedMachine> {
    let is_false = |c: Option<Condition>| c.filter(|c| c.status == "False");
    let health_check = is_false(condition(&machine.data, "HealthCheckSucceeded"));
    let owner_remediated = is_false(condition(&machine.data, "OwnerRemediated"));
    if health_check.is_none() && owner_remediated.is_none() {
        return None;
    }
    Some(MarkedMachine {
        name: bounded(machine.metadata.name.as_deref().unwrap_or_default()),
        health_check_succeeded: health_check,
        owner_remediated,
        skipped: has_annotation(machine, SKIP_REMEDIATION_ANNOTATION)
            || has_annotation(machine, PAUSED_ANNOTATION),
    })
}

/// The KCP's remediation state (v1beta1 or v1beta2).
pub(crate) fn kcp(kcp: &DynamicObject) -> KcpRemediation {
    let d = &kcp.data;
    let last = d.pointer("/status/lastRemediation").and_then(|l| {
        let machine = str_at(l, "/machine")?;
        let at = str_at(l, "/timestamp").or_else(|| str_at(l, "/time"));
        let retry = l.get("retryCount").and_then(Value::as_i64);
        let mut s = bounded(machine);
        if let Some(at) = at {
            s.push_str(&format!(" at {}", bounded(at)));
        }
        if let Some(n) = retry {
            s.push_str(&format!(" (retry {n})"));
        }
        Some(s)
    });
    let strategy = d
        .pointer("/spec/remediationStrategy")
        .or_else(|| d.pointer("/spec/remediation"));
    let s = strategy.cloned().unwrap_or_default();
    KcpRemediation {
        name: bounded(kcp.metadata.name.as_deref().unwrap_or_default()),
        in_progress: annotations(kcp)
            .and_then(|a| a.get(REMEDIATION_IN_PROGRESS_ANNOTATION))
            .map(|v| bounded(v)),
        last_remediation: last,
        max_retry: s.get("maxRetry").and_then(Value::as_i64),
        retry_period: duration(&s, "/retryPeriod", "/retryPeriodSeconds"),
        min_healthy_period: duration(&s, "/minHealthyPeriod", "/minHealthyPeriodSeconds"),
    }
}

/// The cluster's remediation facts from its Cluster, its KCP, its control-plane Machines and
/// every MachineHealthCheck read in its namespace (`unread`: why they could not be).
pub(crate) fn facts(
    cluster: &DynamicObject,
    kcp_object: Option<&DynamicObject>,
    machines: &[&DynamicObject],
    health_checks: &[DynamicObject],
    unread: Option<&str>,
) -> RemediationFacts {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    // Every one judged (paused or not) before the cap: the live ones come first.
    let checks = over_control_plane(health_checks, name, machines);
    let live = checks
        .iter()
        .filter(|h| !has_annotation(h, PAUSED_ANNOTATION))
        .count();
    let remediation = kcp_object.map(kcp);
    RemediationFacts {
        cluster_paused: cluster_paused(cluster),
        cluster_annotated: cluster_annotated(cluster),
        kcp_paused: kcp_object
            .filter(|k| has_annotation(k, PAUSED_ANNOTATION))
            .map(|k| bounded(k.metadata.name.as_deref().unwrap_or_default())),
        unread: unread.map(bounded),
        health_checks_left_out: checks.len().saturating_sub(MAX_HEALTH_CHECKS),
        live_left_out: live.saturating_sub(MAX_HEALTH_CHECKS),
        health_checks: checks
            .into_iter()
            .take(MAX_HEALTH_CHECKS)
            .map(|h| health_check(h, &selected(h, name, machines)))
            .collect(),
        marked: machines.iter().filter_map(|m| marked(m)).collect(),
        // Only a KCP with something to say: a KCP that never remediated says nothing.
        kcp: remediation.filter(|k| k.in_progress.is_some() || k.last_remediation.is_some()),
    }
}

#[cfg(test)]
mod tests;
