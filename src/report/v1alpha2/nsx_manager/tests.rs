//! `nsxManager` built from what a run read (the API fixtures in
//! `tests/fixtures/nsx-manager/api/`, as `analyse::dfw`'s tests build them), and its JSON.

use serde_json::{json, Value};

use super::*;
use crate::analyse::dfw::{evaluate, CategoryCount};
use crate::analyse::traceflow::{summarize_traceflow, TraceflowSummary};
use crate::nsxmanager::identify::input;
use crate::nsxmanager::model::tests::{supervisor_vms, traceflow, world};

const BLOCK: &str =
    "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer";
const NOTE: &str = "NSX Manager's certificate was not checked (--nsx-insecure-skip-tls-verify)";

/// The section of a run that read `read` (its traceflows summarized as the lead's judge does).
pub(crate) fn section_of(read: &NsxRead, note: Option<String>) -> NsxManager {
    let i = input(read, &supervisor_vms(false));
    let e = evaluate(&i);
    let t: Vec<TraceflowSummary> = read
        .traceflows
        .iter()
        .map(|t| summarize_traceflow(t, &i, &e))
        .collect();
    NsxManager::new(read, &i, &e, &t, note)
}

/// The Infrastructure DROP of 2380 with a traceflow that names it.
pub(crate) fn infra_drop() -> NsxManager {
    section_of(&infra_drop_traced("traceflow-dropped.json"), None)
}

/// What a run read of the Infrastructure DROP of 2380, with the traceflow `file` from
/// tkc-cp-1 to tkc-cp-2:2380.
pub(crate) fn infra_drop_traced(file: &str) -> NsxRead {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.traceflows
        .push(traceflow(file, "tkc-cp-1", "tkc-cp-2", 2380));
    read
}

#[test]
fn the_blocking_rule_is_named_with_its_category_sequence_and_pairs() {
    let n = infra_drop();
    assert_eq!(n.manager, "https://nsx.example");
    assert_eq!(n.layout, "infra/domains/default");
    assert_eq!(n.auth.as_deref(), Some("basic"));
    assert_eq!(n.note, None);
    assert_eq!(n.paths.len(), 12);
    assert_eq!(n.blocking.len(), 1);
    let b = &n.blocking[0];
    assert_eq!(b.rule.path, BLOCK);
    assert_eq!(b.rule.category, "Infrastructure");
    assert_eq!(b.rule.policy_sequence, Some(10));
    assert_eq!(b.rule.rule_sequence, Some(10));
    assert_eq!(b.rule.rule_id, Some(3021));
    assert_eq!(b.rule.action, DfwAction::Drop);
    assert_eq!(b.rule.policy_name, "Infra hardening");
    assert_eq!(b.paths.len(), 6);
    assert!(b.paths.iter().all(|p| p.port == 2380));
    // The evaluation's wording, reached back through the contract type.
    assert!(
        b.rule.label().starts_with("\"block etcd peer\" ("),
        "{}",
        b.rule.label()
    );
    assert!(n.summary.contains("drops 6 of 12 paths"), "{}", n.summary);
    assert_eq!(n.read.policies, 4);
    assert_eq!(n.read.rules_disabled, 1);
    assert_eq!(n.read.vms_identified, 3);
    assert_eq!(
        n.read.policies_by_category[1],
        CategoryCount {
            category: "Infrastructure".into(),
            count: 1
        }
    );
    assert!(
        n.read_text.starts_with("4 security policies (Emergency 1"),
        "{}",
        n.read_text
    );
    let p = n
        .paths
        .iter()
        .find(|p| p.port == 2380 && p.from == "tkc-cp-1" && p.to == "tkc-cp-2")
        .unwrap();
    assert_eq!(
        p.outcome.blocking_rule().map(|r| r.path.as_str()),
        Some(BLOCK)
    );
    assert!(matches!(&p.egress, DfwCheck::Matched { rule } if rule.path == BLOCK));
    // 2379 is allowed by the default rule.
    let p = n.paths.iter().find(|p| p.port == 2379).unwrap();
    assert!(
        matches!(
            &p.outcome,
            DfwOutcome::Allowed {
                egress: Some(_),
                ..
            }
        ),
        "{p:?}"
    );
    for v in &n.vms {
        assert_eq!(v.identity, NsxIdentityState::Confirmed, "{v:?}");
        assert!(v.port.is_some(), "{v:?}");
        assert!(v.why.is_none());
    }
}

#[test]
fn a_traceflow_drop_names_the_same_rule_and_its_path_on_the_manager() {
    let n = infra_drop();
    assert_eq!(n.traceflows.len(), 1);
    let t = &n.traceflows[0];
    assert_eq!(
        (t.from.as_str(), t.to.as_str(), t.port),
        ("tkc-cp-1", "tkc-cp-2", 2380)
    );
    assert_eq!(
        t.path.as_deref(),
        Some("/infra/traceflows/etcdnet-0123456789abcdef")
    );
    assert_eq!(t.state.as_deref(), Some("FINISHED"));
    assert!(t.deleted);
    assert_eq!(t.agreement, TraceflowAgreement::Agrees);
    let NsxTraceflowResult::Dropped {
        reason,
        acl_rule_id,
        rule,
        ..
    } = &t.result
    else {
        panic!("{:?}", t.result)
    };
    assert_eq!(reason.as_deref(), Some("FW_RULE"));
    assert_eq!(*acl_rule_id, Some(3021));
    assert_eq!(rule.as_ref().map(|r| r.path.as_str()), Some(BLOCK));
    assert!(
        t.text
            .contains("dropped at DFW (FW_RULE) by \"block etcd peer\""),
        "{}",
        t.text
    );
}

#[test]
fn a_higher_category_allow_is_not_blamed_and_the_no_drop_line_says_what_was_read() {
    let n = section_of(&world("allow-before-drop.json", "vms.json"), None);
    assert!(n.blocking.is_empty());
    assert_eq!(n.shadowed.len(), 1);
    let s = &n.shadowed[0];
    assert_eq!(s.rule.category, "Application");
    assert_eq!(
        s.by.path,
        "/infra/domains/default/security-policies/env-allow-etcd/rules/allow-etcd"
    );
    assert_eq!(s.paths.len(), 6);
    assert!(
        n.summary.starts_with(
            "NSX Manager shows no rule that drops these paths (read: 3 security policies"
        ),
        "{}",
        n.summary
    );
}

#[test]
fn unread_members_make_paths_undecided_grouped_by_why() {
    let n = section_of(&world("members-unread.json", "vms.json"), None);
    let u = n.undecided();
    assert_eq!(u.iter().map(|(_, p)| p.len()).sum::<usize>(), 12);
    assert!(u[0].0.contains("unknown-sources"), "{}", u[0].0);
    assert!(
        n.summary.contains("12 of 12 paths cannot be decided"),
        "{}",
        n.summary
    );
}

#[test]
fn a_vm_that_is_not_the_machines_is_said_on_its_own_node() {
    let n = section_of(&world("infra-drop-2380.json", "vms-mismatch.json"), None);
    let cp3 = n.vms.iter().find(|v| v.node == "tkc-cp-3").unwrap();
    assert_ne!(cp3.identity, NsxIdentityState::Confirmed, "{cp3:?}");
    assert!(cp3.why.is_some());
    assert!(cp3.port.is_none(), "{cp3:?}");
    assert!(!cp3.findings.is_empty(), "{cp3:?}");
    assert!(!n.findings.is_empty());
    let cp1 = n.vms.iter().find(|v| v.node == "tkc-cp-1").unwrap();
    assert_eq!(cp1.identity, NsxIdentityState::Confirmed);
    assert!(cp1.findings.is_empty(), "{cp1:?}");
}

#[test]
fn a_node_is_mentioned_as_a_word() {
    assert!(mentions("found for cp1 is tied", "cp1"));
    assert!(mentions("node cp1's VM", "cp1"));
    assert!(mentions("NSX Manager knows no VM for cp1.", "cp1"));
    assert!(!mentions("found for cp10 is tied", "cp1"));
    assert!(!mentions("found for xcp1", "cp1"));
    assert!(!mentions("cp1.example.com", "cp1"));
    assert!(!mentions("anything", ""));
}

#[test]
fn gaps_are_listed_once_with_their_privilege_and_capped() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let refused = Gap {
        path: "/policy/api/v1/infra/domains/default/groups/cp".into(),
        status: Some(403),
        why: "NSX Manager refused the account (403)".into(),
        privilege: Some("read access to Security".into()),
    };
    read.gaps = vec![refused.clone(), refused.clone()];
    let mut t = traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2379);
    t.gaps.push(Gap {
        path: "/policy/api/v1/infra/traceflows/etcdnet-1".into(),
        status: Some(403),
        why: "refused".into(),
        privilege: Some("a role that may run Traceflow".into()),
    });
    read.traceflows.push(t);
    let n = section_of(&read, Some(NOTE.into()));
    assert_eq!(n.note.as_deref(), Some(NOTE));
    assert_eq!(n.gaps.len(), 2, "{:?}", n.gaps);
    assert_eq!(
        n.gaps[0].privilege.as_deref(),
        Some("read access to Security")
    );
    assert_eq!(
        n.gaps[1].privilege.as_deref(),
        Some("a role that may run Traceflow")
    );
    assert_eq!(n.gaps_not_listed, 0);

    read.gaps = (0..MAX_GAPS + 9)
        .map(|i| Gap {
            path: format!("/policy/api/v1/infra/services/s{i}"),
            status: Some(503),
            why: "busy".into(),
            privilege: None,
        })
        .collect();
    let n = section_of(&read, None);
    assert_eq!(n.gaps.len(), MAX_GAPS);
    assert_eq!(n.gaps_not_listed, 10);
}

#[test]
fn hostile_values_are_bounded_and_clean() {
    let mut read = world("hostile.json", "vms.json");
    read.manager = format!("https://nsx\u{1b}]0;owned\u{7}{}", "x".repeat(100_000));
    read.layout = Layout::Vpc {
        org: "default".into(),
        project: "p\nq".into(),
        vpc: "v".repeat(10_000),
    };
    read.auth = Some("session\r".into());
    read.gaps = vec![Gap {
        path: format!("/policy/\u{1b}[2J{}", "p".repeat(50_000)),
        status: None,
        why: format!("why\u{9b}31m{}", "w".repeat(50_000)),
        privilege: Some("\u{7}".repeat(10_000)),
    }];
    let mut t = traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2380);
    t.status = Some(json!({"operation_state": format!("DONE\u{1b}{}", "s".repeat(20_000))}));
    read.traceflows.push(t);
    let n = section_of(&read, None);
    let v = serde_json::to_value(&n).unwrap();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut strings = Vec::new();
    walk(&v, &mut strings);
    for s in &strings {
        assert!(!s.chars().any(char::is_control), "{s:?}");
        assert!(s.chars().count() <= MAX_TEXT_CHARS + 1, "{}", s.len());
    }
    assert!(n.manager.chars().count() <= MAX_NAME_CHARS + 1);
    assert!(n.layout.chars().count() <= 3 * (MAX_NAME_CHARS + 1) + 32);
    assert!(serde_json::to_string(&n).unwrap().len() < 200_000);
}

/// camelCase keys, NSX's own action words, tagged outcomes; a document reads back.
#[test]
fn json_shape_and_read_back() {
    let n = infra_drop();
    let v = serde_json::to_value(&n).unwrap();
    assert_eq!(v["layout"], "infra/domains/default");
    assert_eq!(v["blocking"][0]["rule"]["action"], "DROP");
    assert_eq!(v["blocking"][0]["rule"]["ruleId"], 3021);
    assert_eq!(v["blocking"][0]["rule"]["policySequence"], 10);
    assert_eq!(v["read"]["policiesByCategory"][0]["category"], "Emergency");
    assert!(v["readText"].is_string());
    let p = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == 2380)
        .unwrap();
    assert_eq!(p["outcome"]["outcome"], "Dropped");
    assert_eq!(p["egress"]["result"], "Matched");
    assert_eq!(v["traceflows"][0]["result"]["result"], "Dropped");
    assert_eq!(v["traceflows"][0]["result"]["aclRuleId"], 3021);
    assert_eq!(v["traceflows"][0]["agreement"]["agreement"], "Agrees");
    assert_eq!(v["vms"][0]["identity"], "Confirmed");
    // Absent, not null, when empty.
    assert!(v.get("note").is_none(), "{v:#}");
    assert!(v.get("gaps").is_none(), "{v:#}");
    assert!(v.get("shadowedNotListed").is_none(), "{v:#}");
    let back: NsxManager = serde_json::from_value(v).unwrap();
    assert_eq!(back, n);
    assert_eq!(
        DfwAction::JumpToApplication.to_string(),
        "JUMP_TO_APPLICATION"
    );
}

#[test]
fn the_layout_is_the_tree_read() {
    assert_eq!(
        layout_text(&Layout::Infra {
            domain: "default".into()
        }),
        "infra/domains/default"
    );
    assert_eq!(
        layout_text(&Layout::Vpc {
            org: "default".into(),
            project: "proj-1".into(),
            vpc: "ns-prod-vpc".into()
        }),
        "orgs/default/projects/proj-1/vpcs/ns-prod-vpc"
    );
}
