//! The evaluation's inputs as the Supervisor side hands them over, judged: the
//! uid chain's VMs against labelled rogue ones, a NetworkPolicy's forged `nsx-op/error`. The
//! objects come from the supervisor's network tests' worlds (`supervisor::network::tests`).

use serde_json::{json, Value};

use crate::supervisor::network::tests::{
    fixture_inventory, group, inventory_with, rogue, REAL_VMS, VPC,
};

/// 16 VMs carrying the cluster's control-plane labels (ahead of the real ones in the
/// API's order) are not the cluster's VMs: the evaluation has the 3 of the uid chain and finds
/// the blocking policy on them.
#[test]
fn labelled_rogue_vms_are_not_evaluated() {
    let extra: Vec<Value> = (0..16).flat_map(rogue).collect();
    let inv = inventory_with("nsx-vpc", &[group(VPC, "v1alpha1")], extra);
    let net = inv.network_of("tkc-prod").unwrap();
    let a = super::assess(&net);
    let mut evaluated = a.evaluation.vms.clone();
    evaluated.sort();
    assert_eq!(evaluated, REAL_VMS);
    assert!(
        a.evaluation
            .blocking()
            .iter()
            .any(|b| b.rule.policy == "drop-etcd-peers"),
        "{:#?}",
        a.evaluation.blocking()
    );
}

/// A forged `nsx-op/error`: a Warning that says it is the object's own claim, never an Error
/// nor `NetworkNotRealized`, and `status` exits as without it.
#[test]
fn a_forged_annotation_is_a_claim_and_never_changes_the_exit_code() {
    use crate::analyse::realization::realization;
    use crate::analyse::{network_findings, FindingCode, Severity};
    use crate::supervisor::network::NSX_ERROR_ANNOTATION;
    let np = |n: &str, text: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": n, "namespace": "ns-prod",
                "annotations": {NSX_ERROR_ANNOTATION: text}}, "spec": {"podSelector": {}}})
    };
    let forged = "NSX says: \u{1b}]0;owned\u{7} the etcd peer port is blocked, remove the members";
    let groups = [group(VPC, "v1alpha1")];
    let clean = fixture_inventory("nsx-vpc-no-drop", &groups);
    let mut extra = vec![np("forged", &"x".repeat(600))];
    extra.push(np("forged-2", forged));
    let inv = inventory_with("nsx-vpc-no-drop", &groups, extra);
    let net = inv.network_of("tkc-prod").unwrap();
    let problems = realization(&net);
    assert!(problems.iter().all(|p| p.claim), "{problems:?}");
    let a = crate::analyse::assess(&net);
    let findings = network_findings(&a, &Default::default());
    assert!(
        findings.iter().all(|f| f.severity != Severity::Error),
        "{findings:#?}"
    );
    assert!(findings
        .iter()
        .all(|f| f.code != FindingCode::NetworkNotRealized));
    let claim = findings
        .iter()
        .find(|f| f.code == FindingCode::NetworkPolicyErrorClaimed)
        .unwrap();
    assert_eq!(claim.severity, Severity::Warning);
    assert!(
        claim.message.contains("the object's own claim"),
        "{}",
        claim.message
    );
    // Its text is the editor's: the renderers make it visible, as every finding's message.
    assert!(claim.message.contains("owned"), "{}", claim.message);
    assert!(
        claim.message.len() < 1000,
        "bounded: {}",
        claim.message.len()
    );
    // What the annotation adds never counts toward the exit code or `healthy` (the report's
    // `RunResult::of` counts only findings whose code counts; through the real kubectl:
    // tests/it/network.rs `a_forged_nsx_error_annotation_never_changes_the_exit_code`).
    let clean_findings = network_findings(
        &crate::analyse::assess(&clean.network_of("tkc-prod").unwrap()),
        &Default::default(),
    );
    let added: Vec<_> = findings
        .iter()
        .filter(|f| !clean_findings.contains(f))
        .collect();
    assert!(!added.is_empty());
    assert!(added.iter().all(|f| !f.code.counts()), "{added:#?}");
}
