//! Traceflows on the fixtures in `tests/fixtures/nsx-manager/api/`, held against the DFW
//! evaluation of their path.

use serde_json::json;

use super::*;
use crate::analyse::dfw::evaluate;
use crate::nsxmanager::identify::input;
use crate::nsxmanager::model::tests::{supervisor_vms, traceflow, world};

const BLOCK: &str =
    "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer";

fn eval(name: &str) -> (DfwInput, DfwEvaluation) {
    let i = input(&world(name, "vms.json"), &supervisor_vms(false));
    let e = evaluate(&i);
    (i, e)
}

#[test]
fn a_traceflow_drop_names_the_same_rule() {
    let (i, e) = eval("infra-drop-2380.json");
    let t = traceflow("traceflow-dropped.json", "tkc-cp-1", "tkc-cp-2", 2380);
    let s = summarize_traceflow(&t, &i, &e);
    let TraceflowResult::Dropped {
        component,
        reason,
        rule,
        acl_rule_id,
        ..
    } = &s.result
    else {
        panic!("{s:?}")
    };
    assert_eq!(component.as_deref(), Some("DFW"));
    assert_eq!(reason.as_deref(), Some("FW_RULE"));
    assert_eq!(*acl_rule_id, Some(3021));
    assert_eq!(rule.as_ref().map(|r| r.path.as_str()), Some(BLOCK));
    assert_eq!(s.agreement, Agreement::Agrees);
    assert_eq!(s.state.as_deref(), Some("FINISHED"));
    assert_eq!(s.observations, 2);
    assert!(s.deleted);
    assert_eq!(
        s.text,
        format!("traceflow tkc-cp-1 → tkc-cp-2:2380: dropped at DFW (FW_RULE) by \"block etcd peer\" ({BLOCK}; category Infrastructure, policy \"Infra hardening\" sequence 10, rule sequence 10, rule id 3021)")
    );
    // By the datapath id alone.
    let t = traceflow(
        "traceflow-dropped-id-only.json",
        "tkc-cp-1",
        "tkc-cp-2",
        2380,
    );
    let s = summarize_traceflow(&t, &i, &e);
    assert!(matches!(&s.result, TraceflowResult::Dropped { rule: Some(r), .. } if r.path == BLOCK));
    assert_eq!(s.agreement, Agreement::Agrees);
}

#[test]
fn a_traceflow_that_disagrees_says_so() {
    let (i, e) = eval("infra-drop-2380.json");
    // Delivered where the evaluation drops.
    let t = traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2380);
    let s = summarize_traceflow(&t, &i, &e);
    assert!(matches!(s.result, TraceflowResult::Delivered { .. }));
    assert!(
        matches!(&s.agreement, Agreement::Disagrees { why } if why.contains("block etcd peer"))
    );
    // Dropped where the evaluation allows (2379): a rule the evaluation does not find first.
    let t = traceflow("traceflow-dropped.json", "tkc-cp-1", "tkc-cp-2", 2379);
    let s = summarize_traceflow(&t, &i, &e);
    assert!(
        matches!(&s.agreement, Agreement::Disagrees { why } if why.contains("does not find first"))
    );
    // Delivered where it allows.
    let t = traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2379);
    assert_eq!(summarize_traceflow(&t, &i, &e).agreement, Agreement::Agrees);
    // A drop by a rule not read.
    let (i2, e2) = eval("allow-before-drop.json");
    let t = traceflow(
        "traceflow-dropped-id-only.json",
        "tkc-cp-1",
        "tkc-cp-2",
        2380,
    );
    let s = summarize_traceflow(&t, &i2, &e2);
    assert!(matches!(
        &s.result,
        TraceflowResult::Dropped { rule: None, .. }
    ));
    assert!(
        matches!(&s.agreement, Agreement::Disagrees { why } if why.contains("rule id 3021 not among the rules read"))
    );
}

#[test]
fn a_traceflow_without_an_answer_is_undecided() {
    let (i, e) = eval("infra-drop-2380.json");
    let mut t = traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2380);
    t.observations.results.truncate(1);
    t.status = Some(json!({"operation_state": "IN_PROGRESS"}));
    let s = summarize_traceflow(&t, &i, &e);
    assert!(matches!(&s.result, TraceflowResult::Undecided { why } if why.contains("IN_PROGRESS")));
    assert!(matches!(s.agreement, Agreement::NotComparable { .. }));
    // A path not evaluated.
    let t = traceflow("traceflow-delivered.json", "tkc-cp-1", "elsewhere", 2380);
    assert!(matches!(
        summarize_traceflow(&t, &i, &e).agreement,
        Agreement::NotComparable { .. }
    ));
}

#[test]
fn traceflow_observations_read() {
    use crate::nsxmanager::model::tests::fixture;
    let dropped = fixture("traceflow-dropped.json");
    let obs = dropped["results"].as_array().unwrap();
    assert_eq!(observed(&obs[0], true), None);
    assert_eq!(observed(&obs[0], false), None);
    assert_eq!(
        observed(&obs[1], true),
        Some(TraceflowResult::Dropped {
            component: Some("DFW".into()),
            reason: Some("FW_RULE".into()),
            transport_node: Some("esx-02".into()),
            acl_rule_id: Some(3021),
            acl_rule_path: Some(
                "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer"
                    .into()
            ),
            rule: None,
        })
    );
    let delivered = fixture("traceflow-delivered.json");
    let last = delivered["results"].as_array().unwrap().last().unwrap();
    assert!(matches!(
        observed(last, false),
        Some(TraceflowResult::Delivered { component: Some(ref c) }) if c == "tkc-seg"
    ));
    assert_eq!(observed(&json!(3), true), None);
}
