//! What nsx-operator refuses before it calls NSX: a policy with any of these errors is not
//! realized at all, none of its rules (the error stops `buildSecurityPolicy`), and its status
//! says Ready False; whatever NSX enforced before (the last version that was realized) stays.
//!
//! Each check follows vmware-tanzu/nsx-operator `pkg/nsx/services/securitypolicy/`:
//! - `builder.go` `buildRuleAppliedGroupByPolicy`: a rule without `appliedTo` in a policy
//!   without `spec.appliedTo`: "appliedTo needs to be set in either spec or rules";
//! - `builder.go` `updateTargetExpressions` / `updatePeerExpressions` with
//!   `validateSelectorOpIn`, `validateNsSelectorOpNotIn`, `validateSelectorExpressions` and the
//!   group totals of `buildPolicyGroup`, `buildRuleAppliedGroupByRule`, `buildRulePeerGroup`:
//!   after merging (`mergeSelectorMatchExpression`) at most one `In` expression (one key) with
//!   at most 5 values, no `matchLabels` value repeated in the `In`; `NotIn` never in a
//!   `namespaceSelector`; `In` not in both a VM/Pod selector and its `namespaceSelector`; per
//!   selector, `matchLabels` plus the 2 built-in tags (cluster, namespace; 1 for a
//!   `namespaceSelector` alone) plus the merged expressions at most 5 where the criteria are
//!   of one member type (VPC groups that are not shared), at most 15 where mixed (T1, or a VPC
//!   peer group shared because a peer has a `namespaceSelector`); per group at most 5 criteria
//!   (an `In` of n values makes n) and 35 conditions;
//! - `builder.go` `updateTargetExpressions`, `updatePeerExpressions`: `vmSelector` and
//!   `podSelector` in one `appliedTo` entry or one peer;
//! - `expand.go` `validateNamedPortRule` and `expandRuleByPort`: a named port in an `Out` rule
//!   without destinations or with `ipBlocks` destinations; a named port with `endPort`.
//!
//! The messages are upstream's words (with our numbers), so the admin finds them in the
//! policy's Ready message.

use super::model::{Direction, NsxGroup, Peer, Policy, PortSpec, Rule, Target};
use crate::selector::{Operator, Requirement, Selector};

/// `MaxCriteriaExpressions`, `MaxMixedCriteriaExpressions`, `MaxCriteria`,
/// `MaxTotalCriteriaExpressions`, `MaxMatchExpressionInValues` (builder.go).
const MAX_EXPRESSIONS: usize = 5;
const MAX_MIXED_EXPRESSIONS: usize = 15;
const MAX_CRITERIA: usize = 5;
const MAX_TOTAL_EXPRESSIONS: usize = 35;
const MAX_IN_VALUES: usize = 5;
/// At most this many errors are kept for one policy (upstream stops at the first).
const MAX_ERRORS: usize = 4;

/// One selector's contribution to its group: criteria and conditions (builder.go
/// `validateSelectorExpressions`'s return).
type Count = (usize, usize);

/// `validateSelectorOpIn` on merged expressions: the number of In values.
fn op_in(merged: &[Requirement], labels: &[Requirement]) -> Result<usize, String> {
    let ins: Vec<&Requirement> = merged
        .iter()
        .filter(|r| r.operator == Operator::In)
        .collect();
    let values: usize = ins.iter().map(|r| r.values.len()).sum();
    if ins.len() > 1 {
        return Err(format!(
            "count of operator 'In' expressions {} with the same key exceed maximum limit of 1",
            ins.len()
        ));
    }
    if values > MAX_IN_VALUES {
        return Err(format!(
            "count of values list for operator 'In' expressions {values}  with the same key exceed maximum limit of {MAX_IN_VALUES}"
        ));
    }
    for r in &ins {
        if let Some(l) = labels.iter().find(|l| l.key == r.key) {
            if let Some(v) = l.values.iter().find(|v| r.values.contains(*v)) {
                return Err(format!(
                    "duplicate expression - {}:{v} specified in both matchLabels and matchExpressions operator 'In'",
                    r.key
                ));
            }
        }
    }
    Ok(values)
}

fn not_in_ns(merged: &[Requirement]) -> Result<(), String> {
    if merged.iter().any(|r| r.operator == Operator::NotIn) {
        return Err("operator 'NotIn' for NamespaceSelector is not supported in NSX-T since its member type is Segment".to_string());
    }
    Ok(())
}

/// `validateSelectorExpressions`.
fn expressions(
    labels: usize,
    exprs: usize,
    in_values: usize,
    mixed: bool,
) -> Result<Count, String> {
    let total = labels + exprs;
    if !mixed && total > MAX_EXPRESSIONS {
        return Err(format!("total count of labelSelectors expressions {total} exceed NSX limit of {MAX_EXPRESSIONS} in one criteria based on the same member type"));
    }
    if mixed && total > MAX_MIXED_EXPRESSIONS {
        return Err(format!("total count of labelSelectors expressions {total} exceed NSX limit of {MAX_MIXED_EXPRESSIONS} in one criteria inside a mixed member type"));
    }
    Ok(match (total, in_values) {
        (0, _) => (0, 0),
        (_, 0) => (1, total),
        (_, n) => (n, total * n),
    })
}

/// One VM/Pod selector with its 2 built-in tags.
fn workload(s: &Selector, mixed: bool) -> Result<Count, String> {
    let merged = s.merged_expressions();
    let in_values = op_in(&merged, s.labels())?;
    expressions(s.labels().len() + 2, merged.len(), in_values, mixed)
}

/// `updateTargetExpressions`: `{}` is the cluster tag alone (no count).
fn target(t: &Target, mixed: bool) -> Result<Count, String> {
    match t {
        Target::Vms(s) | Target::Pods(s) => workload(s, mixed),
        Target::Everything => Ok((0, 0)),
        Target::VmsAndPods => {
            Err("PodSelector and VMSelector are not allowed to set in one group".into())
        }
    }
}

/// `updatePeerExpressions`.
fn peer(p: &Peer, mixed: bool) -> Result<Count, String> {
    if p.vms.is_some() && p.pods.is_some() {
        return Err(match p.namespaces {
            None => "PodSelector and VMSelector are not allowed to set in one group",
            Some(_) => {
                "PodSelector, VMSelector and NamespaceSelector are not allowed to set in one group"
            }
        }
        .into());
    }
    let (sel, ns) = (p.vms.as_ref().or(p.pods.as_ref()), p.namespaces.as_ref());
    match (sel, ns) {
        (None, None) => return Ok((0, 0)),
        (None, Some(ns)) if ns.is_empty() => return expressions(2, 0, 0, mixed),
        _ => {}
    }
    let ns_merged = ns.map(Selector::merged_expressions).unwrap_or_default();
    not_in_ns(&ns_merged)?;
    let merged = sel.map(Selector::merged_expressions).unwrap_or_default();
    let a = sel.map_or(Ok(0), |s| op_in(&merged, s.labels()))?;
    let b = ns.map_or(Ok(0), |n| op_in(&ns_merged, n.labels()))?;
    if a > 0 && b > 0 {
        return Err("operator 'In' is set in both Pod/VM selector and NamespaceSelector".into());
    }
    // A VM/Pod selector has 2 built-in tags (cluster, namespace), a namespaceSelector alone 1.
    let labels = sel.map_or(1, |s| s.labels().len() + 2) + ns.map_or(0, |n| n.labels().len());
    expressions(labels, merged.len() + ns_merged.len(), a + b, mixed)
}

/// The totals of one group (`buildPolicyGroup`, `buildRuleAppliedGroupByRule`,
/// `buildRulePeerGroup`).
fn group(
    counts: impl IntoIterator<Item = Result<Count, String>>,
    what: &str,
) -> Result<(), String> {
    let (mut criteria, mut exprs) = (0, 0);
    for c in counts {
        let (c, e) = c?;
        criteria += c;
        exprs += e;
    }
    if criteria > MAX_CRITERIA {
        return Err(format!(
            "total counts of {what} criteria {criteria} exceed NSX limit of {MAX_CRITERIA}"
        ));
    }
    if exprs > MAX_TOTAL_EXPRESSIONS {
        return Err(format!(
            "total expression counts in {what} criteria {exprs} exceed NSX limit of {MAX_TOTAL_EXPRESSIONS}"
        ));
    }
    Ok(())
}

fn rule_errors(p: &Policy, r: &Rule, vpc: bool) -> Vec<String> {
    let mut out = Vec::new();
    let at = |e: String| format!("rules[{}]: {e}", r.index);
    if let Ok(ts) = &r.applied_to {
        // Built whenever the rule has its own appliedTo (buildRuleAppliedToGroup), even
        // beside a policy-level one.
        if let Err(e) = group(ts.iter().map(|t| target(t, !vpc)), "rule applied group") {
            out.push(at(e));
        }
        let policy_has = p.applied_to.as_ref().is_ok_and(|a| !a.is_empty());
        if ts.is_empty() && !policy_has && p.applied_to.is_ok() {
            out.push(at(
                "appliedTo needs to be set in either spec or rules".into()
            ));
        }
    }
    if let Ok(peers) = &r.peers {
        // A VPC peer group with a namespaceSelector is shared at project or infra level, where
        // mixed criteria are allowed (buildRulePeerGroup's groupShared).
        let shared = peers.iter().any(|p| p.namespaces.is_some());
        let mixed = !vpc || shared;
        let what = match r.direction {
            Ok(Direction::Out) => "rule destination group",
            _ => "rule source group",
        };
        if let Err(e) = group(peers.iter().map(|p| peer(p, mixed)), what) {
            out.push(at(e));
        }
    }
    let ports = r.ports.as_deref().unwrap_or(&[]);
    if ports.iter().any(|p| matches!(p, PortSpec::Named { .. })) {
        let egress = match (&r.direction, &r.peers) {
            (Ok(Direction::Out), Ok(peers)) => Some(peers),
            _ => None,
        };
        if egress.is_some_and(|p| p.is_empty()) {
            out.push(at(
                "Allow-all egress rules are not supported with named port".into(),
            ));
        } else if egress.is_some_and(|p| p.iter().any(|p| !p.ip_blocks.is_empty())) {
            let e = "ipBlock selectors in egress rules are not supported with named port";
            out.push(at(e.into()));
        }
        if ports.contains(&PortSpec::Named { end_port: true }) {
            out.push(at(
                "endPort can only be defined if port is also numeric.".into()
            ));
        }
    }
    out
}

/// The errors nsx-operator would stop at for this policy as written (empty: none we can see).
/// At most [`MAX_ERRORS`], in upstream's order (the policy group, then rule by rule).
pub(crate) fn validate(p: &Policy) -> Vec<String> {
    let vpc = p.group == NsxGroup::Vpc;
    let mut out = Vec::new();
    if let Ok(ts) = &p.applied_to {
        if let Err(e) = group(ts.iter().map(|t| target(t, !vpc)), "policy target group") {
            out.push(format!("spec.appliedTo: {e}"));
        }
    }
    for r in &p.rules {
        out.extend(rule_errors(p, r, vpc));
        if out.len() >= MAX_ERRORS {
            break;
        }
    }
    out.truncate(MAX_ERRORS);
    out
}
