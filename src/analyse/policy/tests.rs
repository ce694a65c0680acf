//! The evaluation on the fixtures of tests/fixtures/nsx (see its README for the VMs).

use std::collections::BTreeMap;
use std::net::IpAddr;

use kube::api::DynamicObject;
use serde::Deserialize;

use super::*;

const A: &str = "tkc-prod-7xk2p-4rz8m";
const B: &str = "tkc-prod-7xk2p-9qtvw";
const C: &str = "tkc-prod-7xk2p-bx2lk";

use crate::testing::labels;

fn vm(name: &str, ip: &str, zone: &str) -> PolicyVm {
    PolicyVm {
        name: name.to_string(),
        labels: labels(&[
            ("capv.vmware.com/cluster.name", "tkc-prod"),
            ("capv.vmware.com/cluster.role", "controlplane"),
            ("capw.vmware.com/cluster.name", "tkc-prod"),
            ("capw.vmware.com/cluster.role", "controlplane"),
            ("topology.kubernetes.io/zone", zone),
        ]),
        ips: vec![ip.parse::<IpAddr>().unwrap()],
    }
}

fn vms() -> Vec<PolicyVm> {
    vec![
        vm(C, "198.18.0.13", "zone-c"),
        vm(A, "198.18.0.11", "zone-a"),
        vm(B, "198.18.0.12", "zone-b"),
    ]
}

fn objects(text: &str) -> Vec<PolicyObject> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| serde_json::Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .map(|v| {
            let o: DynamicObject = serde_json::from_value(v).unwrap();
            let api = &o.types.as_ref().expect("an apiVersion").api_version;
            let group = [NsxGroup::Vpc, NsxGroup::Legacy]
                .into_iter()
                .find(|g| api.split('/').next() == Some(g.name()))
                .expect("an NSX group");
            PolicyObject::in_group(group, o)
        })
        .collect()
}

fn fixture(name: &str) -> Vec<PolicyObject> {
    let path = format!(
        "{}/tests/fixtures/nsx/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    objects(&std::fs::read_to_string(path).unwrap())
}

fn run(policies: Vec<PolicyObject>) -> PolicyEvaluation {
    evaluate(&PolicyInput {
        namespace: "ns-prod".to_string(),
        namespace_labels: labels(&[("kubernetes.io/metadata.name", "ns-prod"), ("env", "prod")]),
        policies,
        vms: vms(),
        ..Default::default()
    })
}

fn eval(name: &str) -> PolicyEvaluation {
    run(fixture(name))
}

fn pairs() -> Vec<(&'static str, &'static str)> {
    let all = [A, B, C];
    let mut out = Vec::new();
    for f in all {
        for t in all {
            if f != t {
                out.push((f, t));
            }
        }
    }
    out
}

fn outcome(e: &PolicyEvaluation, port: u16, from: &str, to: &str) -> PathOutcome {
    e.path(port, from, to).unwrap().outcome.clone()
}

fn rule_of(o: &PathOutcome) -> (&str, usize, Action, Direction) {
    match o {
        PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule } => (
            rule.policy.as_str(),
            rule.rule_index,
            rule.action,
            rule.direction,
        ),
        other => panic!("not blocked: {other:?}"),
    }
}

#[test]
fn a_drop_between_the_control_plane_vms_names_the_rule() {
    let e = eval("drop-between-cp");
    assert_eq!(e.vms, vec![A, B, C], "sorted by name");
    assert_eq!(e.paths.len(), 12, "2 ports x 6 ordered pairs");
    for (f, t) in pairs() {
        // 2379: only the In rule covers it, at TO.
        assert_eq!(
            rule_of(&outcome(&e, 2379, f, t)),
            ("isolate-etcd", 0, Action::Drop, Direction::In)
        );
        // 2380: the Out rule at FROM comes first on the path.
        assert_eq!(
            rule_of(&outcome(&e, 2380, f, t)),
            ("isolate-etcd", 1, Action::Drop, Direction::Out)
        );
        let r = e.blocking_rule(2379, f, t).unwrap();
        assert_eq!(r.rule_name.as_deref(), Some("drop-etcd-in"));
        assert_eq!(r.priority, 10);
        assert_eq!(r.group, NsxGroup::Vpc);
        assert_eq!(r.namespace, "ns-prod");
    }
    let b = e.blocking();
    assert_eq!(b.len(), 2, "two rules, six paths each");
    assert_eq!((b[0].rule.rule_index, b[0].paths.len()), (0, 6));
    assert!(b[0].paths.iter().all(|p| p.port == 2379));
    assert_eq!((b[1].rule.rule_index, b[1].paths.len()), (1, 6));
    let p = &e.policies[0];
    assert!(p.in_effect);
    assert_eq!(p.applies_to, vec![A, B, C]);
    assert_eq!(p.rule_count, 2);
    assert!(e.warnings().is_empty());
    assert!(e.covering.is_empty());
}

#[test]
fn an_allow_allows_and_blocks_nothing() {
    let e = eval("allow");
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            match outcome(&e, port, f, t) {
                PathOutcome::Allowed {
                    egress: None,
                    ingress: Some(r),
                } => {
                    assert_eq!((r.policy.as_str(), r.rule_index), ("allow-etcd", 0));
                }
                o => panic!("{o:?}"),
            }
            assert!(e.blocking_rule(port, f, t).is_none());
        }
    }
    assert!(e.warnings().is_empty(), "the UDP drop does not cover TCP");
}

#[test]
fn a_drop_shadowed_by_a_higher_priority_allow_is_a_warning() {
    let e = eval("shadowed");
    assert_eq!(e.policies[0].name, "allow-all-in", "priority 1 first");
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            assert!(
                matches!(
                    outcome(&e, port, f, t),
                    PathOutcome::Allowed {
                        ingress: Some(_),
                        ..
                    }
                ),
                "{port} {f} {t}"
            );
        }
    }
    let w = e.warnings();
    // The Reject after the Allow in the same policy (2379 only), and the priority 5 Drop.
    assert_eq!(w.len(), 2, "{w:#?}");
    assert_eq!(w[0].rule.policy, "allow-all-in");
    assert_eq!(w[0].rule.action, Action::Reject);
    assert_eq!(w[0].paths.len(), 6);
    assert_eq!(w[1].rule.policy, "deny-etcd");
    assert_eq!(w[1].paths.len(), 12);
    match &w[1].reason {
        CoverReason::Shadowed { by } => {
            assert_eq!(
                (by.policy.as_str(), by.rule_index, by.priority),
                ("allow-all-in", 0, 1)
            )
        }
        r => panic!("{r:?}"),
    }
    assert!(w.iter().all(|w| w.realization.is_none()));
}

#[test]
fn a_drop_not_realized_is_not_in_effect_but_warned() {
    let e = eval("not-realized");
    let p = &e.policies[0];
    assert!(!p.in_effect);
    assert_eq!(p.realization.state, RealizedState::NotRealized);
    assert_eq!(
        p.realization.reason.as_deref(),
        Some("SecurityPolicyNotReady")
    );
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            assert_eq!(outcome(&e, port, f, t), PathOutcome::NoVisibleRule);
        }
    }
    let w = e.warnings();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].rule.rule_name.as_deref(), Some("drop-peer"));
    assert_eq!(
        w[0].reason,
        CoverReason::NotRealized {
            state: RealizedState::NotRealized,
            would_decide: true
        }
    );
    assert!(w[0]
        .realization
        .as_ref()
        .unwrap()
        .message
        .as_deref()
        .unwrap()
        .contains("exceed NSX limit"));
    assert_eq!(w[0].paths.len(), 6, "2380 only");
    assert!(w[0].paths.iter().all(|p| p.port == 2380));
}

#[test]
fn an_unrealized_drop_behind_a_realized_allow_would_not_decide() {
    let mut policies = fixture("allow");
    policies.extend(fixture("not-realized"));
    let e = run(policies);
    assert!(e.covering.iter().all(|c| c.reason
        == CoverReason::NotRealized {
            state: RealizedState::NotRealized,
            would_decide: false
        }));
    // One rule, aggregated: 6 ingress checks of 6 paths.
    assert_eq!(e.covering.len(), 1);
    assert_eq!((e.covering[0].checks, e.covering[0].paths), (6, 6));
    assert_eq!(e.covering[0].examples.len(), COVERING_EXAMPLES);
    assert!(e.warnings().is_empty());
}

#[test]
fn a_rule_level_applied_to_selects_its_vms_only() {
    let e = eval("rule-applied-to");
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            let o = outcome(&e, port, f, t);
            if t == A {
                assert_eq!(rule_of(&o), ("zone-a-only", 0, Action::Drop, Direction::In));
            } else {
                assert_eq!(o, PathOutcome::NoVisibleRule, "{port} {f} {t}");
            }
        }
    }
    assert_eq!(e.policies[0].applies_to, vec![A]);
}

#[test]
fn a_rule_without_applied_to_in_a_policy_without_one_refuses_the_whole_policy() {
    // builder.go buildRuleAppliedGroupByPolicy: none of the policy's rules is realized, not
    // even the one with its own appliedTo.
    let e = eval("no-applied-to");
    let p = &e.policies[0];
    assert!(!p.in_effect);
    assert_eq!(
        p.invalid,
        ["rules[1]: appliedTo needs to be set in either spec or rules"]
    );
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            assert_eq!(outcome(&e, port, f, t), PathOutcome::NoVisibleRule);
        }
    }
    // Its Drop of 2380 is said, as a policy that cannot be realized as written.
    let w = e.warnings();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].rule.rule_name.as_deref(), Some("drop-into-cp"));
    assert_eq!(w[0].invalid, p.invalid);
    assert_eq!(w[0].paths.len(), 6);
    // The same rules with a policy-level appliedTo are valid and in effect.
    let fixed = run(objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: half-applied, namespace: ns-prod}
spec:
  priority: 10
  appliedTo: [{vmSelector: {}}]
  rules:
  - {direction: In, action: Drop, ports: [{port: 2380}], appliedTo: [{vmSelector: {}}]}
  - {direction: In, action: Drop, ports: [{port: 2379}]}
status:
  conditions: [{type: Ready, status: 'True'}]
",
    ));
    assert!(fixed.policies[0].in_effect);
    assert_eq!(fixed.blocking().len(), 2);
}

#[test]
fn policy_level_applied_to_takes_precedence_over_the_rules() {
    let e = run(objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: p, namespace: ns-prod}
spec:
  appliedTo: [{vmSelector: {}}]
  rules:
  - direction: In
    action: Drop
    appliedTo: [{podSelector: {}}]
status:
  conditions: [{type: Ready, status: 'True'}]
",
    ));
    assert_eq!(rule_of(&outcome(&e, 2379, A, B)).0, "p");
    assert_eq!(e.policies[0].priority, Some(0), "absent priority is 0");
}

#[test]
fn ip_blocks_match_the_vm_ips_and_except_is_not_in_the_schema() {
    let e = eval("ip-blocks");
    for (f, t) in pairs() {
        // 198.18.0.0/24 covers every VM, the .13 except included: nsx-operator has no except.
        assert_eq!(
            rule_of(&outcome(&e, 2379, f, t)),
            ("reject-to-block", 0, Action::Reject, Direction::Out)
        );
        let o = outcome(&e, 2380, f, t);
        if t == B {
            assert!(matches!(o, PathOutcome::Rejected { .. }), "{f} {t}");
        } else {
            assert_eq!(o, PathOutcome::NoVisibleRule, "{f} {t}");
        }
    }
    assert_eq!(e.policies[0].notes.len(), 1);
    assert!(e.policies[0].notes[0].contains("except"));
}

#[test]
fn a_vm_without_a_known_ip_against_ip_blocks_cannot_be_decided() {
    let mut input = PolicyInput {
        namespace: "ns-prod".to_string(),
        namespace_labels: BTreeMap::new(),
        policies: fixture("ip-blocks"),
        vms: vms(),
        ..Default::default()
    };
    input.vms[0].ips.clear(); // C
    let e = evaluate(&input);
    assert!(matches!(
        outcome(&e, 2379, A, C),
        PathOutcome::CannotDecide { .. }
    ));
    assert!(matches!(
        outcome(&e, 2379, C, A),
        PathOutcome::Rejected { .. }
    ));
}

#[test]
fn a_named_port_never_matches_a_vm_and_the_numeric_drop_decides() {
    // The priority 1 Allow's ports are the named port `etcd-peer` and the string "2379": both
    // resolved from Pods only (expand.go), so neither matches; the priority 5 Drop of 2380
    // decides, and is named.
    let e = eval("named-port");
    for (f, t) in pairs() {
        assert_eq!(
            rule_of(&outcome(&e, 2380, f, t)),
            ("drop-peer", 0, Action::Drop, Direction::In),
            "{f} {t}"
        );
        assert_eq!(outcome(&e, 2379, f, t), PathOutcome::NoVisibleRule);
    }
    assert_eq!(e.undecided().count(), 0);
    assert!(e
        .policies
        .iter()
        .all(|p| p.invalid.is_empty() && p.in_effect));
}

#[test]
fn a_named_port_nsx_operator_refuses_makes_the_policy_unrealizable() {
    // expand.go validateNamedPortRule: an Out rule with a named port and no destinations.
    let e = run(objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: p, namespace: ns-prod}
spec:
  appliedTo: [{vmSelector: {}}]
  rules:
  - {direction: In, action: Drop, ports: [{port: 2380}]}
  - {direction: Out, action: Allow, ports: [{port: etcd-client}]}
status:
  conditions: [{type: Ready, status: 'True'}]
",
    ));
    assert_eq!(
        e.policies[0].invalid,
        ["rules[1]: Allow-all egress rules are not supported with named port"]
    );
    assert!(
        !e.policies[0].in_effect,
        "a stale Ready True does not make it realized"
    );
    assert_eq!(outcome(&e, 2380, A, B), PathOutcome::NoVisibleRule);
    assert_eq!(e.warnings().len(), 1);
    assert_eq!(e.warnings()[0].invalid.len(), 1);
}

#[test]
fn an_out_rule_blocks_one_way_only() {
    let e = eval("one-way");
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            let o = outcome(&e, port, f, t);
            if f == A {
                assert_eq!(
                    rule_of(&o),
                    ("zone-a-egress", 0, Action::Drop, Direction::Out)
                );
            } else {
                assert_eq!(o, PathOutcome::NoVisibleRule);
            }
        }
    }
    assert_eq!(e.policies[0].applies_to, vec![A]);
}

#[test]
fn the_legacy_group_with_the_deprecated_peer_names() {
    let e = eval("legacy");
    assert_eq!(e.policies[0].group, NsxGroup::Legacy);
    // NCP tags T1 ports (closed source): the assumption is said.
    assert_eq!(e.notes, [T1_TAGGING_NOTE]);
    assert!(eval("drop-between-cp").notes.is_empty());
    for (f, t) in pairs() {
        match outcome(&e, 2379, f, t) {
            PathOutcome::Allowed {
                egress: Some(r),
                ingress: None,
            } => assert_eq!((r.rule_index, r.direction), (1, Direction::Out)),
            o => panic!("{o:?}"),
        }
        let r = e.blocking_rule(2380, f, t).unwrap();
        assert_eq!(
            (r.group, r.rule_index, r.action),
            (NsxGroup::Legacy, 0, Action::Drop)
        );
    }
}

#[test]
fn from_wins_over_sources() {
    let e = run(objects(
        "apiVersion: nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: p, namespace: ns-prod}
spec:
  appliedTo: [{vmSelector: {}}]
  rules:
  - direction: Ingress
    action: Reject
    from: [{podSelector: {}}]
    sources: [{vmSelector: {}}]
status:
  conditions: [{type: Ready, status: 'True'}]
",
    ));
    assert_eq!(outcome(&e, 2379, A, B), PathOutcome::NoVisibleRule);
}

#[test]
fn two_policies_of_one_priority_that_disagree_cannot_be_decided() {
    let e = eval("same-priority");
    match outcome(&e, 2379, A, B) {
        PathOutcome::CannotDecide { why } => {
            assert!(
                why.contains("ns-prod/a-allow") && why.contains("ns-prod/b-drop"),
                "{why}"
            )
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(outcome(&e, 2380, A, B), PathOutcome::NoVisibleRule);
}

#[test]
fn what_cannot_be_read_is_said_never_a_panic() {
    let e = eval("unreadable");
    assert_eq!(e.policies.len(), 3);
    // Ingress: bad-operator (priority 2) comes first and its appliedTo cannot be evaluated;
    // egress: its In rule does not count, bad-rules' unreadable direction does.
    let path = e.path(2379, A, B).unwrap();
    assert!(matches!(&path.outcome, PathOutcome::CannotDecide { why } if why.contains("rules[1]")));
    match &path.ingress {
        SideOutcome::CannotDecide { why } => assert!(why.contains("appliedTo"), "{why}"),
        o => panic!("{o:?}"),
    }
    let bad_rules = e.policies.iter().find(|p| p.name == "bad-rules").unwrap();
    assert_eq!(bad_rules.rule_count, 4);
    assert!(
        bad_rules.unreadable.len() >= 4,
        "{:?}",
        bad_rules.unreadable
    );
    let not_list = e
        .policies
        .iter()
        .find(|p| p.name == "rules-not-a-list")
        .unwrap();
    assert_eq!(not_list.priority, None);
    assert_eq!(not_list.realization.state, RealizedState::Unknown);
    assert!(!not_list.in_effect);
    // Alone, bad-rules' ingress check cannot be decided at its first rule (the action).
    let only = run(fixture("unreadable")
        .into_iter()
        .filter(|p| p.object.metadata.name.as_deref() == Some("bad-rules"))
        .collect());
    match &only.path(2379, A, B).unwrap().ingress {
        SideOutcome::CannotDecide { why } => assert!(why.contains("rules[0]"), "{why}"),
        o => panic!("{o:?}"),
    }
}

#[test]
fn other_namespaces_and_pods_do_not_select_these_vms() {
    let e = eval("elsewhere");
    for (f, t) in pairs() {
        for port in ETCD_PORTS {
            assert_eq!(outcome(&e, port, f, t), PathOutcome::NoVisibleRule);
        }
    }
    // A VPC policy of another namespace is built in that namespace's VPC: it cannot apply.
    assert!(e.policies.iter().all(|p| p.name != "other-namespace"));
    assert_eq!(e.policies_not_applying, 1);
    assert_eq!(e.selecting_vms().count(), 1);
}

#[test]
fn hostile_input_is_bounded() {
    let long = "x".repeat(5000);
    let text = format!(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {{name: {long}, namespace: ns-prod}}
spec:
  appliedTo: [{{vmSelector: {{}}}}]
  rules:
  - {{direction: In, action: Drop, name: {long}}}
status:
  conditions: [{{type: Ready, status: 'False', message: {long}}}]
"
    );
    let mut many = objects(&text);
    let one = many[0].clone();
    many.extend(std::iter::repeat_n(one, MAX_POLICIES + 3));
    let e = run(many.clone());
    assert_eq!(e.policies.len(), MAX_POLICIES);
    assert_eq!(e.policies_not_read, 4);
    // Not Ready: the 4 not evaluated could not decide a check either.
    assert_eq!(e.undecided().count(), 0);
    // The engine's one bound on names, then `…`.
    assert!(e.policies[0].name.chars().count() <= crate::analyse::firewall::MAX_NAME_CHARS + 1);
    assert!(
        e.policies[0]
            .realization
            .message
            .as_ref()
            .unwrap()
            .chars()
            .count()
            <= 1025
    );
    // Ready True: the 4 not evaluated share priority 0 with the deciding Drop, so no Drop is
    // named: every path cannot be decided.
    for p in &mut many {
        p.object.data["status"]["conditions"][0]["status"] = serde_json::json!("True");
    }
    let e = run(many);
    assert_eq!(e.undecided().count(), 12);
    assert!(e.blocking().is_empty());
    // Garbage spec: still read, never a panic.
    for text in [
        "apiVersion: crd.nsx.vmware.com/v1alpha1\nkind: SecurityPolicy\nmetadata: {name: g}\nspec: 7\n",
        "apiVersion: crd.nsx.vmware.com/v1alpha1\nkind: SecurityPolicy\nmetadata: {name: g}\nspec: {rules: [null, 1, {ports: 3}], appliedTo: 5}\nstatus: {conditions: 3}\n",
    ] {
        let e = run(objects(text));
        assert_eq!(e.policies.len() + e.policies_not_applying, 1);
        let e = run(objects(&text.replace("{name: g}", "{name: g, namespace: ns-prod}")));
        assert_eq!(e.policies.len() + e.policies_not_applying, 1);
    }
}

/// The evaluation the JSON contract's tests read: a shadowed Drop and a policy not realized.
pub(crate) fn shadowed_and_not_realized() -> PolicyEvaluation {
    let mut policies = fixture("shadowed");
    policies.extend(fixture("not-realized"));
    run(policies)
}

#[test]
fn the_worst_case_is_quick() {
    // Every bound at once: MAX_POLICIES policies of MAX_RULES rules, MAX_VMS VMs.
    let rule = "  - {direction: In, action: Drop, from: [{vmSelector: {matchLabels: {k: v}}}], ports: [{port: 1}]}\n";
    let text = format!(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {{name: p, namespace: ns-prod}}
spec:
  appliedTo: [{{vmSelector: {{}}}}]
  rules:
{}status:
  conditions: [{{type: Ready, status: 'True'}}]
",
        rule.repeat(super::model::MAX_RULES)
    );
    let one = objects(&text).remove(0);
    let vms: Vec<PolicyVm> = (0..MAX_VMS)
        .map(|i| {
            vm(
                &format!("vm-{i:02}"),
                &format!("198.18.0.{}", i + 1),
                "zone-a",
            )
        })
        .collect();
    // Bounded work: this thread's CPU time, not wall time, which a loaded machine stretches.
    let start = crate::testing::cpu_time();
    let e = evaluate(&PolicyInput {
        namespace: "ns-prod".to_string(),
        namespace_labels: BTreeMap::new(),
        policies: vec![one; MAX_POLICIES],
        vms,
        ..Default::default()
    });
    let took = crate::testing::cpu_time() - start;
    assert_eq!(e.paths.len(), 2 * MAX_VMS * (MAX_VMS - 1));
    assert!(took < std::time::Duration::from_secs(10), "{took:?} of CPU");
    eprintln!("worst case: {took:?} of CPU");
}

/// One realized policy, in the upstream shape, as YAML text.
fn policy_yaml(group: &str, ns: &str, name: &str, priority: u32, spec_rest: &str) -> String {
    format!(
        "apiVersion: {group}/v1alpha1
kind: SecurityPolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  priority: {priority}
{spec_rest}status:
  conditions: [{{type: Ready, status: 'True', reason: SecurityPolicyReady}}]
---
"
    )
}

const CP: &str =
    "  appliedTo: [{vmSelector: {matchLabels: {capv.vmware.com/cluster.role: controlplane}}}]\n";
const DROP_2380_IN: &str = "  rules:\n  - {direction: In, action: Drop, ports: [{port: 2380}]}\n";

fn run_with(policies: Vec<PolicyObject>, f: impl FnOnce(&mut PolicyInput)) -> PolicyEvaluation {
    let mut input = PolicyInput {
        namespace: "ns-prod".to_string(),
        namespace_labels: labels(&[("kubernetes.io/metadata.name", "ns-prod"), ("env", "prod")]),
        policies,
        vms: vms(),
        ..Default::default()
    };
    f(&mut input);
    evaluate(&input)
}

#[test]
fn a_leftover_of_the_group_nsx_operator_does_not_reconcile_is_not_in_effect() {
    // A stale Ready True on an nsx.vmware.com object in a namespace on VPC networking.
    let text = policy_yaml(
        "nsx.vmware.com",
        "ns-prod",
        "old-t1-drop",
        1,
        &format!("{CP}{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |i| {
        i.live_group = Some(NsxGroup::Vpc);
        i.networking_basis = Some("the Namespace's NetworkInfo names a VPC".into());
    });
    assert!(e.policies.is_empty());
    assert!(e.blocking().is_empty());
    assert_eq!(e.set_aside.len(), 1);
    let why = &e.set_aside[0].why;
    assert!(
        why.contains("leftover of nsx.vmware.com")
            && why.contains("reconciles crd.nsx.vmware.com")
            && why.contains("the Namespace's NetworkInfo names a VPC"),
        "{why}"
    );
    assert_eq!(e.live_group, Some(NsxGroup::Vpc));
    // Not told which group is live: both count, as before.
    let e = run_with(objects(&text), |_| {});
    assert_eq!(e.blocking().len(), 1);
    assert!(e.set_aside.is_empty());
    // The live group's own policy is evaluated.
    let e = run_with(objects(&text), |i| i.live_group = Some(NsxGroup::Legacy));
    assert_eq!(e.blocking().len(), 1);
}

#[test]
fn another_namespaces_t1_policy_applies_only_through_an_applied_to_without_selectors() {
    let mut text = policy_yaml(
        "nsx.vmware.com",
        "ns-shared",
        "cluster-wide-drop",
        2,
        &format!("  appliedTo: [{{}}]\n{DROP_2380_IN}"),
    );
    text += &policy_yaml(
        "nsx.vmware.com",
        "ns-shared",
        "own-vms-drop",
        1,
        &format!("  appliedTo: [{{vmSelector: {{}}}}]\n{DROP_2380_IN}"),
    );
    // A rule-level `{}` is cluster-wide as well.
    text += &policy_yaml(
        "nsx.vmware.com",
        "ns-other",
        "rule-wide-allow",
        0,
        "  rules:\n  - {direction: In, action: Allow, appliedTo: [{}], ports: [{port: 2379}]}\n",
    );
    // VPC: built in ns-vpc's own VPC, not these VMs'.
    text += &policy_yaml(
        "crd.nsx.vmware.com",
        "ns-vpc",
        "vpc-wide-drop",
        0,
        &format!("  appliedTo: [{{}}]\n{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |_| {});
    let names: Vec<&str> = e.policies.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["rule-wide-allow", "cluster-wide-drop"]);
    assert_eq!(e.policies_not_applying, 2);
    for (f, t) in pairs() {
        let r = e.blocking_rule(2380, f, t).unwrap();
        assert_eq!(
            (r.namespace.as_str(), r.policy.as_str()),
            ("ns-shared", "cluster-wide-drop")
        );
        assert!(matches!(
            outcome(&e, 2379, f, t),
            PathOutcome::Allowed { .. }
        ));
    }
}

#[test]
fn an_empty_match_labels_value_selects_every_value_as_nsx_does() {
    // builder.go: matchLabels {k: ""} is the tag condition `k|`, which Exists builds too.
    let text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "any-zone",
        1,
        &format!("  appliedTo: [{{vmSelector: {{matchLabels: {{topology.kubernetes.io/zone: ''}}}}}}]\n{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |_| {});
    assert_eq!(e.policies[0].applies_to, vec![A, B, C]);
    assert_eq!(e.blocking()[0].paths.len(), 6);
    // The same in a namespaceSelector: realized on the namespace's segment's tags.
    let text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "from-any-env",
        1,
        &format!("{CP}  rules:\n  - {{direction: In, action: Drop, ports: [{{port: 2380}}], from: [{{namespaceSelector: {{matchLabels: {{env: ''}}}}}}]}}\n"),
    );
    let e = run_with(objects(&text), |_| {});
    assert_eq!(e.blocking().len(), 1);
}

#[test]
fn selectors_nsx_operator_refuses_make_the_policy_unrealizable() {
    let cases = [
        // 4 matchLabels + the 2 built-in tags: 6 > 5 in a VPC target group.
        (
            "crd.nsx.vmware.com",
            "  appliedTo: [{vmSelector: {matchLabels: {capv.vmware.com/cluster.name: tkc-prod, capw.vmware.com/cluster.name: tkc-prod, capw.vmware.com/cluster.role: controlplane, capv.vmware.com/cluster.role: controlplane}}}]\n",
            Some("total count of labelSelectors expressions 6 exceed NSX limit of 5"),
        ),
        // The same in T1: mixed criteria, at most 15.
        (
            "nsx.vmware.com",
            "  appliedTo: [{vmSelector: {matchExpressions: [{key: a, operator: DoesNotExist}, {key: b, operator: DoesNotExist}, {key: c, operator: DoesNotExist}, {key: capv.vmware.com/cluster.role, operator: Exists}]}}]\n",
            None,
        ),
        // In on two keys.
        (
            "crd.nsx.vmware.com",
            "  appliedTo: [{vmSelector: {matchExpressions: [{key: capv.vmware.com/cluster.role, operator: In, values: [controlplane]}, {key: capw.vmware.com/cluster.role, operator: In, values: [controlplane]}]}}]\n",
            Some("count of operator 'In' expressions 2"),
        ),
        // vmSelector and podSelector in one peer (builder.go updatePeerExpressions).
        (
            "crd.nsx.vmware.com",
            "  appliedTo: [{vmSelector: {}}]\n  rules:\n  - {direction: In, action: Drop, ports: [{port: 2380}]}\n  - {direction: In, action: Allow, from: [{vmSelector: {}, podSelector: {}}], ports: [{port: 9100}]}\n",
            Some("PodSelector and VMSelector are not allowed to set in one group"),
        ),
        // And in one appliedTo entry (updateTargetExpressions).
        (
            "crd.nsx.vmware.com",
            "  appliedTo: [{vmSelector: {}}, {vmSelector: {}, podSelector: {}}]\n",
            Some("PodSelector and VMSelector are not allowed to set in one group"),
        ),
        // NotIn in a namespaceSelector.
        (
            "crd.nsx.vmware.com",
            "  appliedTo: [{vmSelector: {}}]\n  rules:\n  - {direction: In, action: Allow, from: [{namespaceSelector: {matchExpressions: [{key: env, operator: NotIn, values: [dev]}]}}]}\n",
            Some("operator 'NotIn' for NamespaceSelector is not supported"),
        ),
    ];
    for (group, spec, err) in cases {
        let rules = if spec.contains("rules:") {
            String::new()
        } else {
            DROP_2380_IN.to_string()
        };
        let text = policy_yaml(group, "ns-prod", "p", 1, &format!("{spec}{rules}"));
        let e = run_with(objects(&text), |_| {});
        let p = &e.policies[0];
        match err {
            Some(err) => {
                assert!(!p.in_effect, "{spec}");
                assert!(p.invalid.iter().any(|i| i.contains(err)), "{:?}", p.invalid);
            }
            None => assert!(p.invalid.is_empty() && p.in_effect, "{:?}", p.invalid),
        }
    }
    // In twice on one key is merged (intersection), not refused.
    let text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        &format!("  appliedTo: [{{vmSelector: {{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [zone-a, zone-b]}}, {{key: topology.kubernetes.io/zone, operator: In, values: [zone-b, zone-c]}}]}}}}]\n{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |_| {});
    assert!(e.policies[0].invalid.is_empty());
    assert_eq!(e.policies[0].applies_to, vec![B]);
}

#[test]
fn policies_are_ordered_by_priority_before_the_bound() {
    // 64 `aa-*` policies at priority 10, each a Drop the priority 0 Allow shadows; the
    // deciding Allow is named last in list order. None of the harmless Drops is blamed.
    let mut text = String::new();
    for i in 0..64 {
        text += &policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            &format!("aa-{i:02}"),
            10,
            &format!("{CP}{DROP_2380_IN}"),
        );
    }
    text += &policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "zz-allow-etcd",
        0,
        &format!("{CP}  rules:\n  - {{direction: In, action: Allow, ports: [{{port: 2379, endPort: 2380}}]}}\n"),
    );
    let e = run_with(objects(&text), |_| {});
    assert_eq!(e.policies[0].name, "zz-allow-etcd");
    assert_eq!(e.policies.len(), MAX_POLICIES);
    assert_eq!(e.policies_not_read, 1);
    assert!(e.blocking().is_empty());
    for (f, t) in pairs() {
        match outcome(&e, 2380, f, t) {
            PathOutcome::Allowed {
                ingress: Some(r), ..
            } => assert_eq!(r.policy, "zz-allow-etcd"),
            o => panic!("{o:?}"),
        }
    }
    // Without the Allow, the cut's boundary is priority 10, where the Drops are: no Drop is
    // named, and the line names the first policy not evaluated.
    let without: Vec<PolicyObject> = objects(&text)
        .into_iter()
        .filter(|p| p.object.metadata.name.as_deref() != Some("zz-allow-etcd"))
        .chain(objects(&policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            "ab-late",
            10,
            &format!("{CP}{DROP_2380_IN}"),
        )))
        .collect();
    let e = run_with(without, |_| {});
    assert!(e.blocking().is_empty());
    match outcome(&e, 2380, A, B) {
        PathOutcome::CannotDecide { why } => {
            assert!(
                why.contains("SecurityPolicy ns-prod/") && why.contains("priority 10"),
                "{why}"
            )
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn policies_the_read_left_out_make_every_check_undecided() {
    let text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "drop-peer",
        0,
        &format!("{CP}{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |i| i.policies_left_out = 3);
    assert!(e.blocking().is_empty(), "never a named Drop");
    assert_eq!(e.undecided().count(), 12);
    assert_eq!(e.policies_not_read, 3);
    match outcome(&e, 2380, A, B) {
        PathOutcome::CannotDecide { why } => {
            assert!(why.contains("3 SecurityPolicies were left out"), "{why}")
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn a_namespace_of_shadowed_drops_gives_a_bounded_evaluation() {
    // A namespace drowned in shadowed rules: one priority-0 Allow and 63 policies of 64 shadowed
    // Drops.
    let rules: String = (0..64)
        .map(|_| "  - {direction: In, action: Drop, ports: [{port: 2379, endPort: 2380}]}\n")
        .collect();
    let mut text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "allow-all",
        0,
        &format!("{CP}  rules:\n  - {{direction: In, action: Allow}}\n"),
    );
    for i in 0..63 {
        text += &policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            &format!("deny-{i:02}"),
            5,
            &format!("{CP}  rules:\n{rules}"),
        );
    }
    // The evaluation is bounded (clipped lists, not a cost per rule and path): this thread's
    // CPU time, not wall time, which a loaded machine stretches (CI failed this at load 15-78).
    let start = crate::testing::cpu_time();
    let e = run_with(objects(&text), |_| {});
    let took = crate::testing::cpu_time() - start;
    assert!(took < std::time::Duration::from_secs(5), "{took:?} of CPU");
    assert!(e.blocking().is_empty());
    assert_eq!(e.covering.len(), MAX_COVERING);
    assert_eq!(e.covering_not_listed, 63 * 64 - MAX_COVERING);
    assert_eq!((e.covering[0].checks, e.covering[0].paths), (12, 12));
    assert_eq!(e.warnings().len(), MAX_WARNINGS);
    assert_eq!(e.warnings_not_listed, 63 * 64 - MAX_WARNINGS);
}

/// 63 × 64 shadowed Drops covering every check of 16 VMs: 4,032 rules × 480 checks, and the
/// CPU time their evaluation took (this thread's: a loaded machine stretches wall time, not it).
pub(crate) fn drowned_against_the_most_vms() -> (PolicyEvaluation, std::time::Duration) {
    let rules: String = (0..64)
        .map(|_| "  - {direction: In, action: Drop, ports: [{port: 2379, endPort: 2380}]}\n")
        .collect();
    let mut text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "allow-all",
        0,
        "  appliedTo: [{vmSelector: {}}]\n  rules:\n  - {direction: In, action: Allow}\n",
    );
    for i in 0..63 {
        text += &policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            &format!("deny-{i:02}"),
            5,
            &format!("  appliedTo: [{{vmSelector: {{}}}}]\n  rules:\n{rules}"),
        );
    }
    let many: Vec<PolicyVm> = (0..MAX_VMS)
        .map(|i| {
            vm(
                &format!("vm-{i:02}"),
                &format!("198.18.0.{}", i + 1),
                "zone-a",
            )
        })
        .collect();
    let start = crate::testing::cpu_time();
    let e = run_with(objects(&text), |i| i.vms = many);
    (e, crate::testing::cpu_time() - start)
}

#[test]
fn what_cannot_be_read_is_bounded_per_policy() {
    let rules: String = (0..64)
        .map(|_| "  - {direction: Sideways, action: Deny, ports: 3, from: 4, appliedTo: 5}\n")
        .collect();
    let text = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "garbage",
        1,
        &format!("  appliedTo: [{{vmSelector: {{}}}}]\n  rules:\n{rules}"),
    );
    let e = run_with(objects(&text), |_| {});
    let p = &e.policies[0];
    assert_eq!(p.unreadable.len(), super::evaluate::MAX_UNREADABLE + 1);
    assert!(
        p.unreadable.last().unwrap().starts_with("and "),
        "{:?}",
        p.unreadable
    );
    match outcome(&e, 2380, A, B) {
        PathOutcome::CannotDecide { why } => {
            assert!(
                why.starts_with("SecurityPolicy ns-prod/garbage: rules[0]"),
                "{why}"
            )
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn policies_that_cannot_touch_etcd_take_no_place_under_the_bound() {
    // 64 `aa-*` Allows of 443 at priority 0 (irrelevant to etcd) and a Drop of 2380 named last.
    let mut text = String::new();
    for i in 0..64 {
        text += &policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            &format!("aa-{i:02}"),
            0,
            &format!(
                "{CP}  rules:\n  - {{direction: In, action: Allow, ports: [{{port: 443}}]}}\n"
            ),
        );
    }
    text += &policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "zz-drop",
        5,
        &format!("{CP}{DROP_2380_IN}"),
    );
    let e = run_with(objects(&text), |_| {});
    // The Drop is kept, one Allow of 443 is cut: it could not decide a check.
    assert!(e.policies.iter().any(|p| p.name == "zz-drop"));
    assert_eq!(e.policies_not_read, 1);
    assert_eq!(rule_of(&outcome(&e, 2380, A, B)).0, "zz-drop");
    assert_eq!(e.undecided().count(), 0);
}

#[test]
fn a_flood_of_policies_not_ready_does_not_push_the_ones_in_effect_out() {
    // 64 `aa-*` Drops of 2380 at priority 0, Ready False; the Allow in effect at priority 1.
    let mut text = String::new();
    for i in 0..64 {
        text += &policy_yaml(
            "crd.nsx.vmware.com",
            "ns-prod",
            &format!("aa-{i:02}"),
            0,
            &format!("{CP}{DROP_2380_IN}"),
        )
        .replace(
            "status: 'True', reason: SecurityPolicyReady",
            "status: 'False', reason: SecurityPolicyNotReady",
        );
    }
    text += &policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "zz-allow",
        1,
        &format!("{CP}  rules:\n  - {{direction: In, action: Allow, ports: [{{port: 2380}}]}}\n"),
    );
    let e = run_with(objects(&text), |_| {});
    assert_eq!(e.policies.len(), MAX_POLICIES);
    assert_eq!(e.policies_not_read, 1);
    assert!(e
        .policies
        .iter()
        .any(|p| p.name == "zz-allow" && p.in_effect));
    // Sorted by priority for the output.
    assert_eq!(e.policies[0].priority, Some(0));
    assert!(matches!(
        outcome(&e, 2380, A, B),
        PathOutcome::Allowed { .. }
    ));
    assert!(e.blocking().is_empty());
}

#[test]
fn another_namespaces_peers_select_our_vms_only_through_a_namespace_selector() {
    // T1, ns-shared, applied to every port: its `vmSelector` peer selects ns-shared's VMs
    // (builder.go: the policy's namespace UID tag), its `namespaceSelector` peer ours.
    let text = policy_yaml(
        "nsx.vmware.com",
        "ns-shared",
        "wide",
        1,
        "  appliedTo: [{}]\n  rules:\n  - {direction: In, action: Drop, ports: [{port: 2379}], from: [{vmSelector: {}}]}\n  - {direction: In, action: Reject, ports: [{port: 2380}], from: [{namespaceSelector: {matchLabels: {env: prod}}}]}\n",
    );
    let e = run_with(objects(&text), |_| {});
    for (f, t) in pairs() {
        assert_eq!(outcome(&e, 2379, f, t), PathOutcome::NoVisibleRule);
        assert_eq!(
            rule_of(&outcome(&e, 2380, f, t)),
            ("wide", 1, Action::Reject, Direction::In)
        );
    }
}

fn invalid_of(text: &str) -> Vec<String> {
    super::validate::validate(&super::model::Policy::read(&objects(text).remove(0)))
}

#[test]
fn nsx_operators_group_limits_as_builder_go_counts_them() {
    let six_labels = "{matchLabels: {a: '1', b: '1', c: '1', d: '1'}}";
    // VPC peer group: 4 labels + 2 built-in = 6 > 5 when not shared...
    let unshared = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        &format!("{CP}  rules:\n  - {{direction: In, action: Drop, from: [{{vmSelector: {six_labels}}}]}}\n"),
    );
    assert!(
        invalid_of(&unshared)[0].contains("exceed NSX limit of 5"),
        "{:?}",
        invalid_of(&unshared)
    );
    // ...but a peer with a namespaceSelector shares the group (project level): mixed, 15.
    let shared = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        &format!("{CP}  rules:\n  - {{direction: In, action: Drop, from: [{{vmSelector: {six_labels}}}, {{namespaceSelector: {{}}}}]}}\n"),
    );
    assert!(invalid_of(&shared).is_empty(), "{:?}", invalid_of(&shared));
    // An In of 3 values is 3 criteria: with 3 more entries the group has 6 > 5.
    let criteria = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        "  appliedTo:\n  - {vmSelector: {matchExpressions: [{key: z, operator: In, values: [a, b, c]}]}}\n  - {vmSelector: {matchLabels: {x: '1'}}}\n  - {vmSelector: {matchLabels: {x: '2'}}}\n  - {vmSelector: {matchLabels: {x: '3'}}}\n  rules:\n  - {direction: In, action: Drop}\n",
    );
    assert!(
        invalid_of(&criteria)[0]
            .contains("total counts of policy target group criteria 6 exceed NSX limit of 5"),
        "{:?}",
        invalid_of(&criteria)
    );
    // More than 5 In values, and a matchLabels value repeated in the In.
    let values = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        "  appliedTo: [{vmSelector: {matchExpressions: [{key: z, operator: In, values: [a, b, c, d, e, f]}]}}]\n  rules:\n  - {direction: In, action: Drop}\n",
    );
    assert!(invalid_of(&values)[0].contains("count of values list for operator 'In' expressions 6"));
    let dup = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        "  appliedTo: [{vmSelector: {matchLabels: {z: a}, matchExpressions: [{key: z, operator: In, values: [a, b]}]}}]\n  rules:\n  - {direction: In, action: Drop}\n",
    );
    assert!(invalid_of(&dup)[0].contains("duplicate expression - z:a"));
    // A named port with endPort (expand.go expandRuleByPort).
    let end = policy_yaml(
        "crd.nsx.vmware.com",
        "ns-prod",
        "p",
        1,
        &format!("{CP}  rules:\n  - {{direction: In, action: Allow, ports: [{{port: etcd, endPort: 2380}}]}}\n"),
    );
    assert!(invalid_of(&end)[0].contains("endPort can only be defined if port is also numeric"));
    // What nsx-operator accepts is not refused: the fixtures of the other tests.
    for f in [
        "drop-between-cp",
        "allow",
        "shadowed",
        "ip-blocks",
        "one-way",
        "legacy",
        "same-priority",
        "rule-applied-to",
        "named-port",
    ] {
        for p in fixture(f) {
            assert!(
                super::validate::validate(&super::model::Policy::read(&p)).is_empty(),
                "{f}"
            );
        }
    }
}
