//! The pod route where the lab is not needed: a pod stuck pending, a forbidden create, the
//! workload API down, `--dry-run` (the lab side is `lab::diagnose_pod`).

use crate::common;
use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::ReachErrorKind;
use serde_json::Value;

#[test]
fn pod_stuck_pending_times_out_and_is_deleted() {
    // A workload API whose pods never run (no kubelet behind it): they stay Pending.
    let env = Env::new(SET, Workload::ok());
    let api = env.workload.as_ref().unwrap().api().unwrap();
    let run = env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "-o",
        "json",
        "--timeout",
        "3s",
    ]);
    run.expect_code(3);
    let report = run.diagnose_report();
    for n in &report.nodes {
        assert_eq!(reach_error(n).kind, ReachErrorKind::Timeout, "{n:#?}");
        assert!(reach_error(n).message.contains("Pending"));
    }
    assert_eq!(api.created_pods().len(), 3);
    assert!(api.existing_pods().is_empty(), "deleted after the timeout");
}

#[test]
fn forbidden_pod_create_names_verb_and_resource() {
    let workload = Workload::serving(FakeConfig::empty().forbid(etcdnet_fakeapi::Forbid {
        verb: Some("create".into()),
        resource: Some("pods".into()),
        ..Default::default()
    }))
    .unwrap();
    let env = Env::new(SET, workload);
    let run = env.plugin(&["diagnose", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(3);
    let report = run.diagnose_report();
    let m = &reach_error(&report.nodes[0]).message;
    assert!(m.contains("cannot create resource \"pods\""), "{m}");
    assert!(m.contains("docs/rbac.yaml"), "{m}");
}

#[test]
fn workload_api_down_with_via_pod() {
    let env = Env::new(SET, Workload::black_hole());
    let run = env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "pod",
        "--api-timeout",
        "1s",
        "-o",
        "json",
    ]);
    // One line, not a report whose every node says the same: the route cannot work, so
    // nothing is created and the line says which route can.
    run.expect_code(3);
    assert_eq!(run.stdout, "", "no report");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!(
            "error: cluster {CLUSTER}: --via pod needs the workload API, and it does not answer within "
        )),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("use --via jumpbox") && lines[0].contains("leave out --via"),
        "{}",
        lines[0]
    );
    assert!(env.supervisor.created_pods().is_empty());
}

#[test]
fn dry_run_creates_nothing() {
    let env = Env::new(SET, Workload::ok());
    let api = env.workload.as_ref().unwrap().api().unwrap();
    let run = env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    run.expect_code(0);
    let pods: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&run.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect();
    assert_eq!(pods.len(), 3);
    assert!(pods
        .iter()
        .all(|p| p["kind"] == "Pod" && p["spec"]["hostNetwork"] == true));
    assert!(api.created_pods().is_empty());
    assert!(run.stderr.contains("nothing created"));
}
