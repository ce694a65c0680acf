//! The cluster's network as the reports carry it: what was read, what NSX failed to realize, and
//! the SecurityPolicy evaluation; and its join with a diagnosis (evidence, next steps, warnings).
//!
//! Pure, no I/O: [`assess`] turns the network objects read from the Supervisor
//! ([`crate::supervisor::network`]) into a [`NetworkAssessment`] (the JSON field
//! `networkPolicy`, present only when the Supervisor serves an NSX group); [`join`] adds what it
//! says to a [`Diagnosis`] without ever changing the verdict's code: the same rules decide, the
//! policies only name the cause and the next step. The evaluation itself is [`super::policy`]
//! (docs/nsx-policy.md).
//!
//! A VM's address for `ipBlocks` is its primary IP as the inventory reads it
//! (`status.network.primaryIP4`/`primaryIP6`, v1alpha1 `status.vmIp`; vmware-tanzu/vm-operator
//! `api/v1alpha3/virtualmachine_types.go`); its labels are the VirtualMachine's (nsx-operator
//! copies them onto its port, `pkg/nsx/services/securitypolicy/builder.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::matrix::CellState;
use super::policy::{
    evaluate, Action, CoverReason, PathOutcome, PathRef, PolicyEvaluation, PolicyInput,
    PolicyObject, PolicyVm, PolicyWarning, RuleRef,
};
use super::verdict::{Diagnosis, VerdictCode};
use crate::supervisor::network::{
    realization, NetKind, NetworkObjects, ReadCount, RealizationProblem,
};
use crate::supervisor::ClusterFacts;

/// Kubernetes' own label on every Namespace, its name (what `namespaceSelector` often uses).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// At most this many paths are spelled out in one line; the rest are counted.
const PATHS_NAMED: usize = 6;

/// What the reports carry of the cluster's network: the JSON field `networkPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkAssessment {
    /// Each network resource answered, with how many of its objects are this cluster's.
    pub read: Vec<ReadCount>,
    /// What could not be read, one note per failed request ("list ... in namespace ...:
    /// forbidden").
    #[serde(default)]
    pub unread: Vec<String>,
    /// The network objects NSX (or CAPV) says are not realized.
    #[serde(default)]
    pub realization: Vec<RealizationProblem>,
    /// The SecurityPolicies against the control-plane VMs on TCP 2379/2380.
    pub evaluation: PolicyEvaluation,
}

impl NetworkAssessment {
    /// Whether there is anything to show in the NETWORK POLICY section: a policy applying to a
    /// VM, a blocking rule, a warning, a realization problem, an unread note.
    pub fn applies(&self) -> bool {
        self.evaluation.selecting_vms().next().is_some()
            || !self.evaluation.blocking().is_empty()
            || !self.evaluation.warnings().is_empty()
            || !self.realization.is_empty()
            || !self.unread.is_empty()
            || self.evaluation.policies_not_read > 0
    }

    /// `securitypolicies.crd.nsx.vmware.com 5, subnetports.crd.nsx.vmware.com 3, ...`.
    pub fn read_text(&self) -> String {
        if self.read.is_empty() {
            return "nothing".to_string();
        }
        self.read
            .iter()
            .map(|r| format!("{} {}", r.resource, r.count))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The evaluation's input from the objects read: the Namespace's labels (its name label
/// always, as the API server sets it), the SecurityPolicies of both groups, the control-plane
/// VMs' names, labels and primary IPs.
pub fn input(objects: &NetworkObjects) -> PolicyInput {
    let mut namespace_labels: BTreeMap<String, String> = objects
        .namespace_object
        .as_ref()
        .and_then(|o| o.metadata.labels.clone())
        .unwrap_or_default()
        .into_iter()
        .collect();
    namespace_labels
        .entry(NAMESPACE_NAME_LABEL.to_string())
        .or_insert_with(|| objects.namespace.clone());
    let policies = objects
        .security_policies
        .iter()
        .map(|(k, o)| {
            let group = match k {
                NetKind::T1SecurityPolicy => super::policy::NsxGroup::Legacy,
                _ => super::policy::NsxGroup::Vpc,
            };
            PolicyObject::in_group(group, o.clone())
        })
        .collect();
    let vms = objects
        .vm_endpoints()
        .into_iter()
        .map(|v| PolicyVm {
            name: v.name,
            labels: v.labels,
            ips: v.ip.into_iter().collect(),
        })
        .collect();
    PolicyInput {
        namespace: objects.namespace.clone(),
        namespace_labels,
        policies,
        vms,
        live_group: objects.live_policy_kind.and_then(|k| match k {
            NetKind::VpcSecurityPolicy => Some(super::policy::NsxGroup::Vpc),
            NetKind::T1SecurityPolicy => Some(super::policy::NsxGroup::Legacy),
            _ => None,
        }),
        networking_basis: objects.networking_basis.clone(),
        policies_left_out: objects.policies_left_out,
    }
}

/// The assessment of one cluster's network objects (pure).
pub fn assess(objects: &NetworkObjects) -> NetworkAssessment {
    NetworkAssessment {
        read: objects.read.clone(),
        unread: objects.unread.clone(),
        realization: realization(objects),
        evaluation: evaluate(&input(objects)),
    }
}

/// `ns/name (group, priority P, rules[i] "name")`: a rule as the evidence names it.
pub fn rule_text(r: &RuleRef) -> String {
    let name = r
        .rule_name
        .as_ref()
        .map(|n| format!(" {n:?}"))
        .unwrap_or_default();
    format!(
        "SecurityPolicy {}/{} ({}, priority {}, rules[{}]{name})",
        r.namespace,
        r.policy,
        r.group.name(),
        r.priority,
        r.rule_index
    )
}

/// `Drop In`: the rule's action and direction.
pub fn action_text(r: &RuleRef) -> String {
    format!("{:?} {:?}", r.action, r.direction)
}

/// The kubectl command that shows the policy.
pub fn show_command(r: &RuleRef) -> String {
    format!(
        "kubectl get securitypolicies.{} {} -n {} -o yaml",
        r.group.name(),
        r.policy,
        r.namespace
    )
}

/// The ports of `paths`, `TCP 2380` or `TCP 2379, 2380`.
pub fn ports_text(paths: &[PathRef]) -> String {
    let mut ports: Vec<u16> = paths.iter().map(|p| p.port).collect();
    ports.sort_unstable();
    ports.dedup();
    format!(
        "TCP {}",
        ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `a → b:2380, ...`, at most [`PATHS_NAMED`] and a count of the rest.
pub fn paths_text(paths: &[PathRef]) -> String {
    let mut parts: Vec<String> = paths
        .iter()
        .take(PATHS_NAMED)
        .map(|p| format!("{} → {}:{}", p.from, p.to, p.port))
        .collect();
    if paths.len() > PATHS_NAMED {
        parts.push(format!("{} more", paths.len() - PATHS_NAMED));
    }
    parts.join(", ")
}

/// The paths in short, per port: `every path between the 3 VMs on 2380` when they are all
/// the ordered pairs of distinct VMs on that port (the matrix's N×N shape without its
/// diagonal), else the paths named ([`paths_text`]).
pub fn pairs_text(paths: &[PathRef], vms: usize) -> String {
    let all = vms * vms.saturating_sub(1);
    let mut ports: Vec<u16> = paths.iter().map(|p| p.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let full: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|port| all > 0 && paths.iter().filter(|p| p.port == *port).count() == all)
        .collect();
    let mut parts = Vec::new();
    if !full.is_empty() {
        parts.push(format!(
            "every path between the {vms} VMs on {}",
            full.iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    }
    let rest: Vec<PathRef> = paths
        .iter()
        .filter(|p| !full.contains(&p.port))
        .cloned()
        .collect();
    if !rest.is_empty() {
        parts.push(paths_text(&rest));
    }
    parts.join("; ")
}

/// One line for a warning: which rule, what it would block (`vms`: how many VMs were
/// evaluated, for [`pairs_text`]), why it does not now.
pub fn warning_text(w: &PolicyWarning, vms: usize) -> String {
    let why = match &w.reason {
        CoverReason::Shadowed { by } => format!(
            "shadowed by {} ({}), which comes first: it blocks them if that rule changes",
            rule_text(by),
            action_text(by)
        ),
        CoverReason::NotRealized { state, .. } => {
            let detail = w
                .realization
                .as_ref()
                .map(|r| {
                    [r.reason.as_deref(), r.message.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": ")
                })
                .filter(|s| !s.is_empty())
                .map(|s| format!(", {s}"))
                .unwrap_or_default();
            format!("not realized by NSX ({state:?}{detail}): it blocks them once it is")
        }
    };
    format!(
        "{}: {} on {} would block {} path(s) between the control-plane VMs ({}); {why}",
        rule_text(&w.rule),
        action_text(&w.rule),
        ports_text(&w.paths),
        w.paths.len(),
        pairs_text(&w.paths, vms)
    )
}

/// The network verdicts whose evidence names the policies.
fn is_network(code: VerdictCode) -> bool {
    matches!(
        code,
        VerdictCode::EtcdPeerNetworkBlocked
            | VerdictCode::EtcdPeerNetworkPartial
            | VerdictCode::EtcdPeerPortRefused
    )
}

/// Adds what the assessment says to a diagnosis (pure). On a network verdict, the failing peer
/// cells (timeout, refused) are looked up by their VMs (a probe's node is a Machine: its VM's
/// name comes from `facts`): the rules in effect that block them lead the evidence and the
/// first next step is to fix them; the failing paths no visible rule blocks are said to be
/// outside the Supervisor's view, with what was read and what was not. Whatever the verdict,
/// a rule that would block a path that works (shadowed, not realized) is a "warning:" note.
/// The verdict's code is never changed.
pub fn join(diagnosis: &mut Diagnosis, facts: &ClusterFacts, a: &NetworkAssessment) {
    let vm_of = |node: &str| -> Option<&str> {
        facts
            .nodes
            .iter()
            .find(|n| n.name == node)
            .and_then(|n| n.vm.as_ref())
            .map(|v| v.name.as_str())
    };
    let node_of = |vm: &str| -> String {
        facts
            .nodes
            .iter()
            .find(|n| n.vm.as_ref().is_some_and(|v| v.name == vm))
            .map(|n| n.name.clone())
            .unwrap_or_else(|| vm.to_string())
    };
    let ev = &a.evaluation;
    let cells: Vec<&super::matrix::Cell> = diagnosis
        .matrices
        .iter()
        .flat_map(|m| m.peer_cells())
        .collect();

    if is_network(diagnosis.verdict.code) {
        let failing: Vec<PathRef> = cells
            .iter()
            .filter(|c| matches!(c.state, CellState::Timeout | CellState::Refused))
            .map(|c| PathRef {
                port: c.port,
                from: c.from.clone(),
                to: c.to.clone(),
            })
            .collect();
        let total = failing.len();
        // By rule, in the order met; and the failing paths no visible rule blocks.
        let mut by_rule: Vec<(RuleRef, Vec<PathRef>)> = Vec::new();
        let mut outside: Vec<PathRef> = Vec::new();
        let mut undecided: Vec<(PathRef, String)> = Vec::new();
        for p in failing {
            let (Some(from), Some(to)) = (vm_of(&p.from), vm_of(&p.to)) else {
                undecided.push((p, "no VM is known for its node".to_string()));
                continue;
            };
            match ev.path(p.port, from, to).map(|e| &e.outcome) {
                Some(PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule }) => {
                    match by_rule.iter_mut().find(|(r, _)| r == rule) {
                        Some((_, list)) => list.push(p),
                        None => by_rule.push((rule.clone(), vec![p])),
                    }
                }
                Some(PathOutcome::CannotDecide { why }) => undecided.push((p, why.clone())),
                Some(_) => outside.push(p),
                None => undecided.push((p, "its VMs were not evaluated".to_string())),
            }
        }
        let mut lines = Vec::new();
        for (rule, paths) in &by_rule {
            lines.push(format!(
                "{}: {} on {} covers {} of the {total} failing paths ({})",
                rule_text(rule),
                action_text(rule),
                ports_text(paths),
                paths.len(),
                paths_text(paths)
            ));
        }
        if !undecided.is_empty() {
            let paths: Vec<PathRef> = undecided.iter().map(|(p, _)| p.clone()).collect();
            lines.push(format!(
                "{} of the {total} failing paths ({}) cannot be decided from the visible SecurityPolicies: {}",
                paths.len(),
                paths_text(&paths),
                undecided[0].1
            ));
        }
        if !outside.is_empty() {
            let mut line = format!(
                "{} of the {total} failing paths ({}) match no Drop or Reject rule the Supervisor shows: the cause is outside the Supervisor's view (NSX distributed firewall or gateway rules made in NSX Manager, the NSGroups of an NSX 4.1 to 4.2 upgrade); read: {}",
                outside.len(),
                paths_text(&outside),
                a.read_text()
            );
            if !a.unread.is_empty() {
                line.push_str(&format!("; could not read: {}", a.unread.join("; ")));
            }
            lines.push(line);
        }
        let v = &mut diagnosis.verdict;
        for (i, l) in lines.into_iter().enumerate() {
            v.evidence.insert(i, l);
        }
        for (i, (rule, paths)) in by_rule.iter().enumerate() {
            v.next_steps.insert(
                i,
                format!(
                    "Fix SecurityPolicy {}/{}: its {} {}s {} between the control-plane VMs ({}, priority {}); change or delete that rule, then re-run kubectl etcdnet diagnose (see it: {})",
                    rule.namespace,
                    rule.policy,
                    match &rule.rule_name {
                        Some(n) => format!("rules[{}] {n:?}", rule.rule_index),
                        None => format!("rules[{}]", rule.rule_index),
                    },
                    match rule.action {
                        Action::Reject => "reject",
                        _ => "drop",
                    },
                    ports_text(paths),
                    rule.group.name(),
                    rule.priority,
                    show_command(rule)
                ),
            );
        }
    }

    // Warnings: a rule that would block a path that works now.
    let working: Vec<(u16, String, String)> = cells
        .iter()
        .filter(|c| c.state.is_ok())
        .filter_map(|c| {
            Some((
                c.port,
                vm_of(&c.from)?.to_string(),
                vm_of(&c.to)?.to_string(),
            ))
        })
        .collect();
    let seen_working = |p: &PathRef| {
        working
            .iter()
            .any(|(port, f, t)| *port == p.port && *f == p.from && *t == p.to)
    };
    // A rule in effect that blocks paths the probe saw work: said, never judged.
    // The paths of `paths` the probe saw work, named by their nodes.
    let worked = |paths: &[PathRef]| -> Vec<PathRef> {
        paths
            .iter()
            .filter(|p| seen_working(p))
            .map(|p| PathRef {
                port: p.port,
                from: node_of(&p.from),
                to: node_of(&p.to),
            })
            .collect()
    };
    for b in a.evaluation.blocking() {
        let works = worked(&b.paths);
        if works.is_empty() {
            continue;
        }
        diagnosis.verdict.notes.push(format!(
            "warning: {}: {} on {} covers {} path(s) the probe saw work ({}): check how NSX applies it (kubectl get securitypolicies.{} {} -n {} -o yaml)",
            rule_text(&b.rule),
            action_text(&b.rule),
            ports_text(&works),
            works.len(),
            pairs_text(&works, ev.vms.len()),
            b.rule.group.name(),
            b.rule.policy,
            b.rule.namespace
        ));
    }
    for w in ev.warnings() {
        let works = worked(&w.paths);
        if works.is_empty() {
            continue;
        }
        let w = PolicyWarning {
            paths: works,
            ..w.clone()
        };
        diagnosis
            .verdict
            .notes
            .push(format!("warning: {}", warning_text(&w, ev.vms.len())));
    }
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
