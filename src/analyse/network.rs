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

use super::matrix::CellState;
use super::policy::{
    evaluate, paths_text, Action, CoverReason, PathOutcome, PathRef, PolicyEvaluation, PolicyInput,
    PolicyObject, PolicyVm, PolicyWarning, Realization, RealizedState, RuleRef,
};
use super::realization::{realization, RealizationProblem};
use super::verdict::Diagnosis;
use crate::command::Kubectl;
use crate::supervisor::network::{NetKind, NetworkObjects, ReadCount};
use crate::supervisor::ClusterFacts;

/// Kubernetes' own label on every Namespace, its name (what `namespaceSelector` often uses).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// At most this many "cannot decide" reasons are spelled out in the evidence.
const REASONS_NAMED: usize = 3;
/// At most this many warning notes of each kind go into a verdict; the rest are counted.
const NOTES_NAMED: usize = 8;

/// Whether the members still know a leader, from their etcd logs' raft lines: more nodes
/// name one than say they have none.
fn has_leader(d: &Diagnosis) -> bool {
    use crate::probe::etcdlog::LeaderState;
    let states: Vec<LeaderState> = d
        .logs
        .iter()
        .filter_map(|l| l.summary.leader.as_ref().map(|v| v.state))
        .collect();
    let known = states.iter().filter(|s| **s == LeaderState::Known).count();
    known > 0 && known > states.len() - known
}

// The contract's type (`networkPolicy`): its `///` comments are the schema's descriptions. The
// evaluation is `E`: the policy engine's own here, its contract form in the reports
// (`report::v1alpha2::PolicyEvaluation`), one type either way for what was read and not realized.
/// What the reports carry of the cluster's network (present only when an NSX group is served).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "NetworkAssessment")]
pub struct NetworkAssessment<E = PolicyEvaluation> {
    /// Each network resource answered, with how many of its objects are this cluster's.
    pub read: Vec<ReadCount>,
    // ("list ... in namespace ...: forbidden")
    /// What could not be read, one note per failed request.
    #[serde(default)]
    pub unread: Vec<String>,
    /// The network objects NSX (or CAPV) says are not realized.
    #[serde(default)]
    pub realization: Vec<RealizationProblem>,
    /// The SecurityPolicies against the control-plane VMs on TCP 2379/2380.
    pub evaluation: E,
}

impl<E> NetworkAssessment<E> {
    /// `securitypolicies.crd.nsx.vmware.com 5, subnetports.crd.nsx.vmware.com 3, ...`.
    pub fn read_text(&self) -> String {
        read_text(&self.read)
    }
}

/// What was read, `securitypolicies.crd.nsx.vmware.com 5, ...`, or `nothing`.
pub(crate) fn read_text(read: &[ReadCount]) -> String {
    if read.is_empty() {
        return "nothing".to_string();
    }
    read.iter()
        .map(|r| format!("{} {}", r.resource, r.count))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The evaluation's input from the objects read: the Namespace's labels (its name label
/// always, as the API server sets it), the SecurityPolicies of both groups, the control-plane
/// VMs' names, labels and primary IPs.
pub(crate) fn input(objects: &NetworkObjects) -> PolicyInput {
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
pub(crate) fn assess(objects: &NetworkObjects) -> NetworkAssessment {
    NetworkAssessment {
        read: objects.read.clone(),
        unread: objects.unread.clone(),
        realization: realization(objects),
        evaluation: evaluate(&input(objects)),
    }
}

/// `ns/name (group, priority P, rules[i] "name")`: a rule as the evidence names it.
pub(crate) fn rule_text(r: &RuleRef) -> String {
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
pub(crate) fn action_text(r: &RuleRef) -> String {
    format!("{:?} {:?}", r.action, r.direction)
}

/// The kubectl command that shows the policy: its names as the API server accepts them, else a
/// placeholder (a bundle's policy name is the bundle's); the run's flags last.
pub(crate) fn show_command(kubectl: &Kubectl, r: &RuleRef) -> String {
    kubectl.run(&format!(
        "get securitypolicies.{} {} -n {} -o yaml",
        r.group.name(),
        crate::command::name(&r.policy),
        crate::command::namespace(&r.namespace)
    ))
}

/// The peer paths that time out or are refused, every port: what a policy or a firewall rule
/// can be blamed for (the joins of the Supervisor's policies and of NSX Manager's rules alike).
pub(super) fn failing_paths(matrices: &[super::matrix::Matrix]) -> Vec<PathRef> {
    matrices
        .iter()
        .flat_map(|m| m.peer_cells())
        .filter(|c| matches!(c.state, CellState::Timeout | CellState::Refused))
        .map(|c| PathRef {
            port: c.port,
            from: c.from.clone(),
            to: c.to.clone(),
        })
        .collect()
}

/// `path` added to `key`'s paths in `groups` (a group made for a key not met yet), in the
/// order met.
pub(super) fn group<K: PartialEq>(groups: &mut Vec<(K, Vec<PathRef>)>, key: K, path: PathRef) {
    match groups.iter_mut().find(|(k, _)| *k == key) {
        Some((_, paths)) => paths.push(path),
        None => groups.push((key, vec![path])),
    }
}

/// The ports of `paths`, `TCP 2380` or `TCP 2379, 2380`.
pub(crate) fn ports_text(paths: &[PathRef]) -> String {
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

/// The paths in short, per port: `every path between the 3 VMs on 2380` when they are all
/// the ordered pairs of distinct VMs on that port (the matrix's N×N shape without its
/// diagonal), else the paths named ([`paths_text`]).
pub(crate) fn pairs_text(paths: &[PathRef], vms: usize) -> String {
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

/// A policy's Ready reason and message, `reason: message` (empty when neither).
fn ready_detail(r: Option<&Realization>) -> String {
    r.map(|r| {
        [r.reason.as_deref(), r.message.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ")
            .replace('\n', " ")
    })
    .unwrap_or_default()
}

/// Why a policy is not in effect as written, and what NSX does meanwhile: `not Ready (reason:
/// message)`, or that nsx-operator's validation refuses it (`cannot be realized as written`).
/// Either way nsx-operator stops before any NSX call, so NSX keeps the last version it
/// realized (`Ready` has no observedGeneration: the Supervisor does not show which).
pub(crate) fn not_in_effect_text(
    state: RealizedState,
    realization: Option<&Realization>,
    invalid: &[String],
) -> String {
    let detail = ready_detail(realization);
    let ready = match state {
        RealizedState::Realized => "Ready True, stale".to_string(),
        RealizedState::NotRealized if detail.is_empty() => "not Ready".to_string(),
        RealizedState::NotRealized => format!("not Ready ({detail})"),
        RealizedState::Unknown => "not Ready (no Ready condition yet)".to_string(),
    };
    if let Some(first) = invalid.first() {
        format!(
            "{ready}; it cannot be realized as written (nsx-operator refuses it: {first}), so NSX keeps enforcing its last realized version, if it ever had one, which the Supervisor does not show"
        )
    } else {
        format!(
            "{ready}: as written it blocks them once it is realized; meanwhile NSX keeps enforcing its last realized version, if it ever had one, which the Supervisor does not show"
        )
    }
}

/// One line for a warning: which rule, what it would block (`vms`: how many VMs were
/// evaluated, for [`pairs_text`]), why it does not now.
pub(crate) fn warning_text(w: &PolicyWarning, vms: usize) -> String {
    let why = match &w.reason {
        CoverReason::Shadowed { by } => format!(
            "shadowed by {} ({}), which comes first: it blocks them if that rule changes",
            rule_text(by),
            action_text(by)
        ),
        CoverReason::NotRealized { state, .. } => {
            not_in_effect_text(*state, w.realization.as_ref(), &w.invalid)
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

/// Adds what the assessment says to a diagnosis (pure). On a network verdict, the failing peer
/// cells (timeout, refused) are looked up by their VMs (a probe's node is a Machine: its VM's
/// name comes from `facts`): the rules in effect that block them lead the evidence and the
/// first next steps are to fix them; a Drop/Reject of a policy not in effect as written that
/// covers them is named with its `not Ready` (or `cannot be realized as written`) and the
/// `last realized` version NSX keeps enforcing (nsx-operator stops before any NSX call when it
/// fails, `firewall.go`); the reasons paths cannot be decided each name their policy; the
/// failing paths no visible rule covers are said to be outside the Supervisor's view, naming
/// what can block VM-to-VM traffic of one segment; a rule in effect that blocks 2380 while the
/// members still know a leader is hedged (`established` streams). Whatever the verdict, a rule
/// that would block a path that works (shadowed, not in effect) is a "warning:" note, bounded.
/// The verdict's code is never changed.
pub(crate) fn join(diagnosis: &mut Diagnosis, facts: &ClusterFacts, a: &NetworkAssessment) {
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

    if diagnosis.verdict.code.names_policies() {
        let failing = failing_paths(&diagnosis.matrices);
        let total = failing.len();
        // By rule, in the order met; the failing paths a policy not in effect as written
        // covers; those that cannot be decided; and those no visible rule blocks.
        let mut by_rule: Vec<(RuleRef, Vec<PathRef>)> = Vec::new();
        let mut by_not_realized: Vec<(RuleRef, Vec<PathRef>)> = Vec::new();
        let mut outside: Vec<PathRef> = Vec::new();
        let mut undecided: Vec<(PathRef, String)> = Vec::new();
        for p in failing {
            let (Some(from), Some(to)) = (vm_of(&p.from), vm_of(&p.to)) else {
                undecided.push((p, "no VM is known for its node".to_string()));
                continue;
            };
            let Some(e) = ev.path(p.port, from, to) else {
                undecided.push((p, "its VMs were not evaluated".to_string()));
                continue;
            };
            match &e.outcome {
                PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule } => {
                    group(&mut by_rule, rule.clone(), p)
                }
                PathOutcome::CannotDecide { why } => undecided.push((p, why.clone())),
                _ => match &e.not_realized {
                    Some(rule) => group(&mut by_not_realized, rule.clone(), p),
                    None => outside.push(p),
                },
            }
        }
        let mut lines = Vec::new();
        for (rule, paths) in by_rule.iter().take(NOTES_NAMED) {
            let mut line = format!(
                "{}: {} on {} covers {} of the {total} failing paths ({})",
                rule_text(rule),
                action_text(rule),
                ports_text(paths),
                paths.len(),
                paths_text(paths)
            );
            if rule.group == super::policy::NsxGroup::Legacy {
                // What the ports' tags are on T1 is NCP's (closed source): said, not guessed.
                line.push_str("; on T1/NCP the ports' tags are NCP's, which the Supervisor does not show: NSX Manager confirms the rule applies to these VMs");
            }
            lines.push(line);
        }
        for (rule, paths) in by_not_realized.iter().take(NOTES_NAMED) {
            let policy = ev.policy_of(rule);
            lines.push(format!(
                "{}: {} on {} covers {} of the {total} failing paths ({}) as written; the policy is {}",
                rule_text(rule),
                action_text(rule),
                ports_text(paths),
                paths.len(),
                paths_text(paths),
                not_in_effect_text(
                    policy.map_or(RealizedState::Unknown, |p| p.realization.state),
                    policy.map(|p| &p.realization),
                    policy.map_or(&[][..], |p| &p.invalid[..]),
                )
            ));
        }
        let unnamed = by_rule.len().saturating_sub(NOTES_NAMED)
            + by_not_realized.len().saturating_sub(NOTES_NAMED);
        if unnamed > 0 {
            lines.push(format!(
                "and {unnamed} more SecurityPolicy rules cover failing paths (-o json: networkPolicy.evaluation)"
            ));
        }
        if !undecided.is_empty() {
            // One line per reason (each names the policy it is about), in the order met.
            let mut reasons: Vec<(String, Vec<PathRef>)> = Vec::new();
            for (p, why) in &undecided {
                match reasons.iter_mut().find(|(w, _)| w == why) {
                    Some((_, ps)) => ps.push(p.clone()),
                    None => reasons.push((why.clone(), vec![p.clone()])),
                }
            }
            let more = reasons.len().saturating_sub(REASONS_NAMED);
            for (why, paths) in reasons.iter().take(REASONS_NAMED) {
                lines.push(format!(
                    "{} of the {total} failing paths ({}) cannot be decided from the visible SecurityPolicies: {why}",
                    paths.len(),
                    paths_text(paths),
                ));
            }
            if more > 0 {
                lines.push(format!(
                    "and {more} more reasons the failing paths cannot be decided (-o json: networkPolicy.evaluation.paths)"
                ));
            }
        }
        if !outside.is_empty() {
            let mut line = format!(
                "{} of the {total} failing paths ({}) match no Drop or Reject rule the Supervisor shows: the cause is outside the Supervisor's view. What can block VM-to-VM traffic of one segment: NSX distributed firewall rules in the categories NSX evaluates before nsx-operator's (Ethernet, Emergency, Infrastructure, Environment), made in NSX Manager; the VPC or project default rules; SpoofGuard / IP discovery on the VMs' ports; a firewall inside the guest; read: {}",
                outside.len(),
                paths_text(&outside),
                a.read_text()
            );
            if !a.unread.is_empty() {
                line.push_str(&format!("; could not read: {}", a.unread.join("; ")));
            }
            // A policy applied to these VMs that is not in effect as written may still be
            // enforced in its last realized version, whatever its rules say now (a failed
            // update of a Drop into an Allow keeps the Drop).
            let pending: Vec<String> = ev
                .policies
                .iter()
                .filter(|p| !p.in_effect && !p.applies_to.is_empty())
                .map(|p| format!("SecurityPolicy {}/{}", p.namespace, p.name))
                .collect();
            if !pending.is_empty() {
                let more = pending.len().saturating_sub(3);
                line.push_str(&format!(
                    "; not in effect as written but applied to these VMs: {}{}: NSX keeps enforcing each one's last realized version, which the Supervisor does not show",
                    pending[..pending.len().min(3)].join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ));
            }
            lines.push(line);
        }
        // A Drop published while the members were connected may leave their established peer
        // streams alone (a stateful firewall checks new connections): the members can keep a
        // leader while the probe's new connections to 2380 fail.
        if let Some((rule, _)) = by_rule
            .iter()
            .find(|(_, ps)| ps.iter().any(|p| p.port == 2380))
        {
            if has_leader(diagnosis) {
                lines.push(format!(
                    "the members still have a leader although {} blocks TCP 2380: a newly published Drop may not cut established peer streams; the cut shows at the next reconnect (a member restart, a leader change), so fix it before then",
                    rule_text(rule)
                ));
            }
        }
        let v = &mut diagnosis.verdict;
        for (i, l) in lines.into_iter().enumerate() {
            v.evidence.insert(i, l);
        }
        let mut steps = Vec::new();
        for (rule, paths) in by_rule.iter().take(NOTES_NAMED) {
            steps.push(format!(
                "Fix SecurityPolicy {}/{}: its {} {}s {} between the control-plane VMs ({}, priority {}); change or delete that rule (see it: {}), then run again: {}",
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
                show_command(&facts.kubectl, rule),
                facts.diagnose_again()
            ));
        }
        for (rule, paths) in by_not_realized.iter().take(NOTES_NAMED) {
            steps.push(format!(
                "Fix SecurityPolicy {}/{}: it is not in effect as written (its Ready message says why) while NSX may still enforce its last realized version, whose {} on {} the Supervisor does not show; correct the policy so the version you see is realized, or delete it (see it: {}), then run again: {}",
                rule.namespace,
                rule.policy,
                action_text(rule),
                ports_text(paths),
                show_command(&facts.kubectl, rule),
                facts.diagnose_again()
            ));
        }
        for (i, step) in steps.into_iter().enumerate() {
            v.next_steps.insert(i, step);
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
    let mut notes = Vec::new();
    for b in a.evaluation.blocking() {
        let works = worked(&b.paths);
        if works.is_empty() {
            continue;
        }
        notes.push(format!(
            "warning: {}: {} on {} covers {} path(s) the probe saw work ({}): check how NSX applies it ({})",
            rule_text(&b.rule),
            action_text(&b.rule),
            ports_text(&works),
            works.len(),
            pairs_text(&works, ev.vms.len()),
            show_command(&facts.kubectl, &b.rule)
        ));
    }
    let mut warned = 0;
    for w in ev.warnings() {
        let works = worked(&w.paths);
        if works.is_empty() {
            continue;
        }
        warned += 1;
        let w = PolicyWarning {
            paths: works,
            ..w.clone()
        };
        notes.push(format!("warning: {}", warning_text(&w, ev.vms.len())));
    }
    // Bounded whatever the namespace holds: the first ones, and a count.
    let more = notes.len().saturating_sub(NOTES_NAMED)
        + if warned > 0 {
            ev.warnings_not_listed
        } else {
            0
        };
    notes.truncate(NOTES_NAMED);
    if more > 0 {
        notes.push(format!(
            "warning: and {more} more SecurityPolicy rules that block or would block paths the probe saw work (-o json: networkPolicy.evaluation)"
        ));
    }
    diagnosis.verdict.notes.extend(notes);
}

#[cfg(test)]
#[path = "network_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "network_trust_tests.rs"]
mod trust_tests;
