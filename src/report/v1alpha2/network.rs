//! The cluster's network as the reports carry it (`networkPolicy`): what was read, what NSX did
//! not realize, and the SecurityPolicies evaluated against the control-plane VMs.
//!
//! The SecurityPolicies' evaluation is `analyse::policy`'s own types, re-exported. The texts a
//! renderer reads off them (`RuleRef::text`, `PolicyWarning::text`, ...) are `analyse::network`'s,
//! which the verdict's evidence uses: one wording.

pub(crate) use super::firewall::PathRef;
use super::firewall::{Doc, Source, Words};
pub(crate) use crate::analyse::network::NetworkAssessment;
#[cfg(test)]
pub(crate) use crate::analyse::realization::RealizationProblem;
use crate::analyse::{network, policy};

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

// The SecurityPolicies' evaluation is the contract as the engine writes it: its types derive
// Serialize and JsonSchema with the serde attributes that fix their json names (`analyse::policy`).
#[cfg(test)]
pub(crate) use policy::{Action, Direction, Side};
pub(crate) use policy::{PolicyEvaluation, PolicyWarning, RealizedState, RuleRef};

impl RuleRef {
    /// `SecurityPolicy ns/name (group, priority P, rules[i] "name")`, as the evidence says it.
    pub fn text(&self) -> String {
        network::rule_text(self)
    }
    /// `Drop In`: the rule's action and direction.
    pub fn action_text(&self) -> String {
        network::action_text(self)
    }
}

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

impl PolicyWarning {
    /// One line: which rule, what it would block (`vms` VMs evaluated), why it does not now.
    pub fn text(&self, vms: usize) -> String {
        network::warning_text(self, vms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assessment_is_camel_case_and_round_trips() {
        let a: NetworkAssessment<PolicyEvaluation> =
            network::assess(&network::tests::objects("drop-between-cp"));
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
        let e = policy::tests::shadowed_and_not_realized();
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
        let a: NetworkAssessment<PolicyEvaluation> = network::assess(&network::tests::drowned());
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.len() < 200_000, "{} bytes", json.len());
    }

    /// The evaluation's bound on pathological work and on its JSON, against the most VMs.
    #[test]
    fn a_drowned_namespace_against_the_most_vms_is_quick_and_its_json_bounded() {
        let (e, took) = policy::tests::drowned_against_the_most_vms();
        eprintln!("drowned, 16 VMs: {took:?} of CPU");
        // A bound on pathological work, not a benchmark: ~5 s in a debug build on an idle core
        // (of this thread's CPU: a loaded machine stretches wall time, 11 s beside a full
        // suite, not it); a cost per path and covering check (the 48,384 entries at 3
        // VMs, 26 times the paths here) would take many minutes.
        assert!(took < std::time::Duration::from_secs(60), "{took:?} of CPU");
        assert_eq!(e.paths.len(), 480);
        assert_eq!(e.covering.len(), policy::MAX_COVERING);
        assert_eq!(e.warnings()[0].paths.len(), 480);
        let json = serde_json::to_string(&e).unwrap();
        eprintln!("{} bytes", json.len());
        assert!(json.len() < 1_000_000, "{} bytes", json.len());
    }

    /// The evaluation's unit enums: `NsxGroup` is its group's name, the others as written.
    #[test]
    fn the_enums_are_their_names() {
        for g in [policy::NsxGroup::Vpc, policy::NsxGroup::Legacy] {
            assert_eq!(
                serde_json::to_value(g).unwrap(),
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
        let c = w.clone();
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
