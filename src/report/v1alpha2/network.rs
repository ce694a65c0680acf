//! The cluster's network as the reports carry it (`networkPolicy`): what was read, what NSX did
//! not realize, and the SecurityPolicies evaluated against the control-plane VMs.
//!
//! The texts a renderer reads off these types (`RuleRef::text`, `PolicyWarning::text`, ...) are
//! `analyse::network`'s, which the verdict's evidence uses: one wording, reached by converting back.

use serde::{Deserialize, Serialize};

use super::all;
use crate::report::is_zero;

pub(crate) use super::firewall::PathRef;
use super::firewall::{Doc, Source, Words};
use crate::analyse::firewall;
pub(crate) use crate::analyse::network::NetworkAssessment;
#[cfg(test)]
pub(crate) use crate::analyse::realization::RealizationProblem;
use crate::analyse::{network, policy};

/// The assessment as the reports carry it: its evaluation in the contract's form.
impl From<network::NetworkAssessment> for NetworkAssessment<PolicyEvaluation> {
    fn from(a: network::NetworkAssessment) -> Self {
        a.map()
    }
}

impl NetworkAssessment<PolicyEvaluation> {
    /// Whether the NETWORK POLICY section has anything to show: a policy applying to a VM, a
    /// blocking rule, a warning, a realization problem, an unread note.
    pub fn applies(&self) -> bool {
        let ev = &self.evaluation;
        ev.selecting_vms().next().is_some()
            || !ev.blocking.is_empty()
            || !ev.warnings.is_empty()
            || !self.realization.is_empty()
            || !self.unread.is_empty()
            || ev.policies_not_read > 0
            || !ev.set_aside.is_empty()
    }
}

mirror_enum! {
    /// The API group a SecurityPolicy was served from.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        schemars::JsonSchema,
    )]
    pub enum NsxGroup from policy::NsxGroup {
        /// `crd.nsx.vmware.com`: nsx-operator on VPC networking.
        #[serde(rename = "crd.nsx.vmware.com")]
        Vpc,
        /// `nsx.vmware.com`: the older NCP/T1 networking.
        #[serde(rename = "nsx.vmware.com")]
        Legacy,
    }
}

impl NsxGroup {
    /// The group's name, as in `crd.nsx.vmware.com`.
    pub fn name(self) -> &'static str {
        policy::NsxGroup::from(self).name()
    }
}

mirror_enum! {
    /// A rule's action.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize,
        schemars::JsonSchema,
    )]
    pub enum Action from policy::Action {
        Allow,
        Drop,
        Reject,
    }
}

mirror_enum! {
    /// A rule's direction.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize,
        schemars::JsonSchema,
    )]
    pub enum Direction from policy::Direction {
        In,
        Out,
    }
}

mirror_enum! {
    /// Whether NSX realized a policy (its Ready condition).
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
    )]
    pub enum RealizedState from policy::RealizedState {
        /// Ready True.
        Realized,
        /// Ready False.
        NotRealized,
        /// No Ready condition yet, or another status.
        Unknown,
    }
}

/// A policy's Ready condition: its state, reason and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Realization {
    pub state: RealizedState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<policy::Realization> for Realization {
    fn from(r: policy::Realization) -> Self {
        Realization {
            state: r.state.into(),
            reason: r.reason,
            message: r.message,
        }
    }
}

impl From<Realization> for policy::Realization {
    fn from(r: Realization) -> Self {
        policy::Realization {
            state: r.state.into(),
            reason: r.reason,
            message: r.message,
        }
    }
}

mirror_enum! {
    /// Which check of a path: at FROM on the way out, or at TO on the way in.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize,
        schemars::JsonSchema,
    )]
    pub enum Side from policy::Side {
        Egress,
        Ingress,
    }
}

/// A rule, named as an admin finds it: policy, index in `spec.rules`, priority, action, direction.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    pub namespace: String,
    pub policy: String,
    pub group: NsxGroup,
    pub priority: u32,
    pub rule_index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_name: Option<String>,
    pub action: Action,
    pub direction: Direction,
}

impl From<policy::RuleRef> for RuleRef {
    fn from(r: policy::RuleRef) -> Self {
        RuleRef {
            namespace: r.namespace,
            policy: r.policy,
            group: r.group.into(),
            priority: r.priority,
            rule_index: r.rule_index,
            rule_name: r.rule_name,
            action: r.action.into(),
            direction: r.direction.into(),
        }
    }
}

impl From<RuleRef> for policy::RuleRef {
    fn from(r: RuleRef) -> Self {
        policy::RuleRef {
            namespace: r.namespace,
            policy: r.policy,
            group: r.group.into(),
            priority: r.priority,
            rule_index: r.rule_index,
            rule_name: r.rule_name,
            action: r.action.into(),
            direction: r.direction.into(),
        }
    }
}

impl RuleRef {
    /// `SecurityPolicy ns/name (group, priority P, rules[i] "name")`, as the evidence says it.
    pub fn text(&self) -> String {
        network::rule_text(&self.clone().into())
    }
    /// `Drop In`: the rule's action and direction.
    pub fn action_text(&self) -> String {
        network::action_text(&self.clone().into())
    }
}

/// The SecurityPolicies' outcome of one path.
pub(crate) type PathOutcome = firewall::PathOutcome<RuleRef>;
/// One path through the SecurityPolicies.
pub(crate) type PathEvaluation = firewall::PathEvaluation<RuleRef>;
/// A SecurityPolicy rule that blocks paths now, with them.
pub(crate) type BlockingRule = firewall::Blocking<RuleRef>;

impl Source for RuleRef {
    const WORDS: Words = Words {
        check: Doc {
            name: "SideOutcome",
            about: "What one check (egress at FROM, ingress at TO) comes to.",
            parts: &[
                Some("The first matching rule in effect."),
                Some("No visible rule in effect matches: decided outside the Supervisor's view."),
                Some("A rule that might come first cannot be evaluated (`why` names its policy)."),
            ],
        },
        outcome: Doc {
            name: "PathOutcome",
            about: "What one path (port, FROM → TO) comes to, both checks together.",
            parts: &[
                Some("A Drop rule is the first match of a check."),
                Some("A Reject rule is the first match of a check."),
                Some("No check blocks and at least one has an Allow as its first match."),
                Some("No visible rule matches either check."),
                Some("A check cannot be decided and the other does not block."),
            ],
        },
        path: Doc {
            name: "PathEvaluation",
            about: "One path's evaluation.",
            parts: &[
                None,
                None,
                Some("A Drop/Reject of a policy not in effect as written that would decide a check once realized."),
            ],
        },
        blocking: Doc {
            name: "BlockingRule",
            about: "A Drop/Reject rule that blocks paths now, with those paths.",
            parts: &[None],
        },
    };
}

/// Why a Drop/Reject rule that covers a path does not decide it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum CoverReason {
    /// A rule in effect that comes first allows the path.
    Shadowed { by: RuleRef },
    /// Its policy is not in effect as written; `wouldDecide`: it would decide the check once realized.
    NotRealized {
        state: RealizedState,
        would_decide: bool,
    },
}

impl From<policy::CoverReason> for CoverReason {
    fn from(r: policy::CoverReason) -> Self {
        match r {
            policy::CoverReason::Shadowed { by } => CoverReason::Shadowed { by: by.into() },
            policy::CoverReason::NotRealized {
                state,
                would_decide,
            } => CoverReason::NotRealized {
                state: state.into(),
                would_decide,
            },
        }
    }
}

impl From<CoverReason> for policy::CoverReason {
    fn from(r: CoverReason) -> Self {
        match r {
            CoverReason::Shadowed { by } => policy::CoverReason::Shadowed { by: by.into() },
            CoverReason::NotRealized {
                state,
                would_decide,
            } => policy::CoverReason::NotRealized {
                state: state.into(),
                would_decide,
            },
        }
    }
}

/// One check a covering rule covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoveredCheck {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub side: Side,
}

impl From<policy::CoveredCheck> for CoveredCheck {
    fn from(c: policy::CoveredCheck) -> Self {
        CoveredCheck {
            port: c.port,
            from: c.from,
            to: c.to,
            side: c.side.into(),
        }
    }
}

/// A Drop/Reject rule that matches checks without deciding them, for one reason, with examples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoveringRule {
    pub rule: RuleRef,
    pub reason: CoverReason,
    /// How many checks it covers.
    pub checks: usize,
    /// How many paths those checks are on.
    pub paths: usize,
    /// A few of the checks.
    pub examples: Vec<CoveredCheck>,
}

impl From<policy::CoveringRule> for CoveringRule {
    fn from(c: policy::CoveringRule) -> Self {
        CoveringRule {
            rule: c.rule.into(),
            reason: c.reason.into(),
            checks: c.checks,
            paths: c.paths,
            examples: all(c.examples),
        }
    }
}

impl PathRef {
    /// The ports of `paths`, `TCP 2380` or `TCP 2379, 2380`.
    pub fn ports_text(paths: &[PathRef]) -> String {
        network::ports_text(paths)
    }
    /// `a → b:2380, ...`: the first few and a count of the rest.
    pub fn paths_text(paths: &[PathRef]) -> String {
        policy::paths_text(paths)
    }
}

/// A Drop/Reject rule that would block 2379/2380 between the VMs but does not now, with its paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyWarning {
    pub rule: RuleRef,
    pub reason: CoverReason,
    /// The policy's Ready reason and message when it is not in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realization: Option<Realization>,
    /// nsx-operator's validation errors: the policy cannot be realized as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    pub paths: Vec<PathRef>,
}

impl From<policy::PolicyWarning> for PolicyWarning {
    fn from(w: policy::PolicyWarning) -> Self {
        PolicyWarning {
            rule: w.rule.into(),
            reason: w.reason.into(),
            realization: w.realization.map(Into::into),
            invalid: w.invalid,
            paths: all(w.paths),
        }
    }
}

impl From<PolicyWarning> for policy::PolicyWarning {
    fn from(w: PolicyWarning) -> Self {
        policy::PolicyWarning {
            rule: w.rule.into(),
            reason: w.reason.into(),
            realization: w.realization.map(Into::into),
            invalid: w.invalid,
            paths: w.paths,
        }
    }
}

impl PolicyWarning {
    /// One line: which rule, what it would block (`vms` VMs evaluated), why it does not now.
    pub fn text(&self, vms: usize) -> String {
        network::warning_text(&self.clone().into(), vms)
    }
}

/// One policy as read: who it is, whether NSX realized it, which VMs it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicySummary {
    pub namespace: String,
    pub name: String,
    pub group: NsxGroup,
    /// Absent: `spec.priority` could not be read.
    pub priority: Option<u32>,
    pub realization: Realization,
    /// Counted in the evaluation: realized (Ready True) and valid.
    pub in_effect: bool,
    /// What nsx-operator's validation refuses in it: it cannot be realized as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    /// The VMs its `appliedTo` selects.
    pub applies_to: Vec<String>,
    /// The VMs for which that cannot be decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applies_to_undecided: Vec<String>,
    pub rule_count: usize,
    /// What could not be read (`rules[2]: ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl From<policy::PolicySummary> for PolicySummary {
    fn from(p: policy::PolicySummary) -> Self {
        PolicySummary {
            namespace: p.namespace,
            name: p.name,
            group: p.group.into(),
            priority: p.priority,
            realization: p.realization.into(),
            in_effect: p.in_effect,
            invalid: p.invalid,
            applies_to: p.applies_to,
            applies_to_undecided: p.applies_to_undecided,
            rule_count: p.rule_count,
            unreadable: p.unreadable,
            notes: p.notes,
        }
    }
}

/// A policy of the cluster's namespace that is not evaluated, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAside {
    pub namespace: String,
    pub name: String,
    pub group: NsxGroup,
    pub realization: Realization,
    pub why: String,
}

impl From<policy::SetAside> for SetAside {
    fn from(s: policy::SetAside) -> Self {
        SetAside {
            namespace: s.namespace,
            name: s.name,
            group: s.group.into(),
            realization: s.realization.into(),
            why: s.why,
        }
    }
}

/// The SecurityPolicies evaluated against the control-plane VMs on TCP 2379/2380.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    /// The vSphere Namespace of the cluster's VMs.
    pub namespace: String,
    /// The control-plane VMs evaluated, sorted.
    pub vms: Vec<String>,
    /// The group nsx-operator reconciles (absent: not told, both count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_group: Option<NsxGroup>,
    /// What the live group was told from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking_basis: Option<String>,
    /// The policies that can apply to the VMs, evaluated (bounded).
    pub policies: Vec<PolicySummary>,
    /// The namespace's policies of the group nsx-operator does not reconcile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<SetAside>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub set_aside_not_listed: usize,
    /// Policies read that cannot apply to these VMs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub policies_not_applying: usize,
    /// Policies that can apply but were not evaluated (a check they could decide is undecided).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub policies_not_read: usize,
    /// Every path, by port, FROM, TO.
    pub paths: Vec<PathEvaluation>,
    /// The rules that block paths now, each with its paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocking: Vec<BlockingRule>,
    /// Drop/Reject rules that would block paths but do not now (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PolicyWarning>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warnings_not_listed: usize,
    /// Every Drop/Reject rule that covers checks without deciding them, per rule and reason (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covering: Vec<CoveringRule>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub covering_not_listed: usize,
    /// What the evaluation assumes where upstream cannot be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl From<policy::PolicyEvaluation> for PolicyEvaluation {
    fn from(e: policy::PolicyEvaluation) -> Self {
        PolicyEvaluation {
            namespace: e.namespace,
            vms: e.vms,
            live_group: e.live_group.map(Into::into),
            networking_basis: e.networking_basis,
            policies: all(e.policies),
            set_aside: all(e.set_aside),
            set_aside_not_listed: e.set_aside_not_listed,
            policies_not_applying: e.policies_not_applying,
            policies_not_read: e.policies_not_read,
            paths: e
                .paths
                .iter()
                .map(|p| p.map(|r| r.clone().into(), str::to_string, str::to_string))
                .collect(),
            blocking: e
                .blocking
                .iter()
                .map(|b| b.map(|r| r.clone().into(), <[PathRef]>::to_vec))
                .collect(),
            warnings: all(e.warnings),
            warnings_not_listed: e.warnings_not_listed,
            covering: all(e.covering),
            covering_not_listed: e.covering_not_listed,
            notes: e.notes,
        }
    }
}

impl PolicyEvaluation {
    /// The policies that select at least one of the VMs.
    pub fn selecting_vms(&self) -> impl Iterator<Item = &PolicySummary> {
        self.policies.iter().filter(|p| !p.applies_to.is_empty())
    }

    /// The paths whose outcome cannot be decided.
    pub fn undecided(&self) -> impl Iterator<Item = &PathEvaluation> {
        self.paths
            .iter()
            .filter(|p| matches!(p.outcome, PathOutcome::CannotDecide { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assessment_is_camel_case_and_round_trips() {
        let a: NetworkAssessment<PolicyEvaluation> =
            network::assess(&network::tests::objects("drop-between-cp")).into();
        let v = serde_json::to_value(&a).unwrap();
        for k in ["read", "unread", "realization", "evaluation"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(
            serde_json::from_value::<NetworkAssessment<PolicyEvaluation>>(v).unwrap(),
            a
        );
    }

    #[test]
    fn an_evaluation_is_camel_case_and_round_trips() {
        let e = PolicyEvaluation::from(policy::tests::shadowed_and_not_realized());
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["paths"][0]["outcome"]["outcome"], "Allowed");
        assert_eq!(json["paths"][0]["ingress"]["result"], "Matched");
        assert_eq!(json["paths"][0]["ingress"]["rule"]["ruleIndex"], 0);
        assert_eq!(json["policies"][0]["group"], "crd.nsx.vmware.com");
        assert_eq!(json["policies"][0]["inEffect"], true);
        assert!(json["covering"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["reason"]["kind"] == "NotRealized" && c["reason"]["wouldDecide"] == false));
        assert_eq!(serde_json::from_value::<PolicyEvaluation>(json).unwrap(), e);
    }

    #[test]
    fn a_drowned_namespace_gives_bounded_json() {
        let a: NetworkAssessment<PolicyEvaluation> =
            network::assess(&network::tests::drowned()).into();
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.len() < 200_000, "{} bytes", json.len());
    }

    /// The evaluation's bound on pathological work and on its JSON, against the most VMs.
    #[test]
    fn a_drowned_namespace_against_the_most_vms_is_quick_and_its_json_bounded() {
        let (e, took) = policy::tests::drowned_against_the_most_vms();
        eprintln!("drowned, 16 VMs: {took:?}");
        // A bound on pathological work, not a benchmark: ~5 s in a debug build on an idle core,
        // 11 s beside a full suite; a cost per path and covering check (the 48,384
        // entries at 3 VMs, 26 times the paths here) would take many minutes.
        assert!(took < std::time::Duration::from_secs(60));
        assert_eq!(e.paths.len(), 480);
        assert_eq!(e.covering.len(), policy::MAX_COVERING);
        assert_eq!(e.warnings()[0].paths.len(), 480);
        let json = serde_json::to_string(&PolicyEvaluation::from(e)).unwrap();
        eprintln!("{} bytes", json.len());
        assert!(json.len() < 1_000_000, "{} bytes", json.len());
    }

    /// The evaluation's unit enums: `NsxGroup` is its group's name, the others as written.
    #[test]
    fn the_enums_are_their_names() {
        for g in [policy::NsxGroup::Vpc, policy::NsxGroup::Legacy] {
            assert_eq!(
                serde_json::to_value(NsxGroup::from(g)).unwrap(),
                serde_json::Value::String(g.name().into())
            );
        }
        assert_eq!(serde_json::to_value(Action::Drop).unwrap(), "Drop");
        assert_eq!(serde_json::to_value(Direction::In).unwrap(), "In");
        assert_eq!(
            serde_json::to_value(RealizedState::NotRealized).unwrap(),
            "NotRealized"
        );
        assert_eq!(serde_json::to_value(Side::Egress).unwrap(), "Egress");
    }

    /// The text a renderer reads off the contract is the evidence's own.
    #[test]
    fn the_texts_are_the_evidences() {
        let d = policy::tests::shadowed_and_not_realized();
        let w = d.warnings()[0].clone();
        let c = PolicyWarning::from(w.clone());
        assert_eq!(c.text(3), network::warning_text(&w, 3));
        assert_eq!(c.rule.text(), network::rule_text(&w.rule));
        assert_eq!(c.rule.action_text(), network::action_text(&w.rule));
        assert_eq!(PathRef::paths_text(&c.paths), policy::paths_text(&w.paths));
        assert_eq!(PathRef::ports_text(&c.paths), network::ports_text(&w.paths));
    }

    /// The schema says what the serde attributes write: groups by name, tagged outcomes,
    /// camelCase fields.
    #[test]
    fn the_schema_follows_the_serde_attributes() {
        let schema =
            serde_json::to_string(&schemars::schema_for!(NetworkAssessment<PolicyEvaluation>))
                .unwrap();
        for said in [
            "\"crd.nsx.vmware.com\"",
            "\"nsx.vmware.com\"",
            "\"outcome\"",
            "\"result\"",
            "\"wouldDecide\"",
            "\"appliesToUndecided\"",
            "\"notRealized\"",
        ] {
            assert!(schema.contains(said), "{said} not in {schema}");
        }
        assert!(!schema.contains("would_decide"), "{schema}");
    }
}
