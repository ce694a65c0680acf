//! `kubectl etcdnet cleanup` against the fake Supervisor and a fake workload API: it finds pods
//! by the managed-by label only, honours --dry-run and --older-than, and deletes for real.

use crate::common;

use common::*;
use etcdnet::report::CleanupAction;
use etcdnet_fakeapi::FakeConfig;
use serde_json::{json, Value};

fn pod(ns: &str, name: &str, managed: bool, created: &str) -> Value {
    let mut labels = json!({"app.kubernetes.io/name": "etcdnet-probe"});
    if managed {
        labels["app.kubernetes.io/managed-by"] = json!("kubectl-etcdnet");
    }
    // Finished: what these tests select on is the label, the namespace and the age; pods a
    // run may still be using are tests/it/cleanup_running.rs's.
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": labels, "creationTimestamp": created},
        "spec": {"containers": [{"name": "probe", "image": "busybox"}]},
        "status": {"phase": "Succeeded"}
    })
}

fn pod_names(api: &FakeApi) -> Vec<String> {
    let mut names: Vec<String> = api
        .objects("", "pods")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

const OLD: &str = "2026-01-01T00:00:00Z";

#[test]
fn dry_run_lists_and_keeps() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    env.supervisor
        .insert(pod("ns-prod", "etcdnet-jumpbox-a", true, OLD))
        .unwrap();
    env.supervisor
        .insert(pod("ns-prod", "someone-elses", false, OLD))
        .unwrap();
    let run = env.plugin(&["cleanup", "-n", "ns-prod", "--dry-run"]);
    run.expect_code(0);
    assert!(run.stdout.contains("etcdnet-jumpbox-a"), "{}", run.stdout);
    assert!(run.stdout.contains("would delete"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("someone-elses"),
        "unlabelled pods are not ours"
    );
    assert_eq!(
        pod_names(&env.supervisor),
        ["etcdnet-jumpbox-a", "someone-elses"]
    );
}

#[test]
fn deletes_only_labelled_pods_in_the_namespace() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    env.supervisor
        .insert(pod("ns-prod", "etcdnet-jumpbox-a", true, OLD))
        .unwrap();
    env.supervisor
        .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-other"}}))
        .unwrap();
    env.supervisor
        .insert(pod("ns-other", "etcdnet-jumpbox-b", true, OLD))
        .unwrap();
    env.supervisor
        .insert(pod("ns-prod", "someone-elses", false, OLD))
        .unwrap();
    let run = env.plugin(&["cleanup", "-n", "ns-prod", "-o", "json"]);
    run.expect_code(0);
    // The kind as scripts match it: checked on the wire, not through the type.
    assert_eq!(run.json()["kind"], "CleanupReport");
    let report = run.cleanup_report();
    assert_eq!(report.items.len(), 1);
    assert_eq!(report.items[0].action, CleanupAction::Deleted);
    assert_eq!(
        pod_names(&env.supervisor),
        ["etcdnet-jumpbox-b", "someone-elses"]
    );

    let all = env.plugin(&["cleanup", "-A"]);
    all.expect_code(0);
    assert_eq!(pod_names(&env.supervisor), ["someone-elses"]);
}

#[test]
fn older_than_keeps_young_pods() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    // Without a creationTimestamp the fake stamps "now", as a real server does on create.
    let mut young = pod("ns-prod", "etcdnet-young", true, OLD);
    young["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("creationTimestamp");
    env.supervisor.insert(young).unwrap();
    env.supervisor
        .insert(pod("ns-prod", "etcdnet-old", true, OLD))
        .unwrap();
    let run = env.plugin(&[
        "cleanup",
        "-n",
        "ns-prod",
        "--older-than",
        "1h",
        "-o",
        "json",
    ]);
    run.expect_code(0);
    let report = run.cleanup_report();
    let action = |name: &str| {
        report
            .items
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.action.clone())
    };
    assert_eq!(action("etcdnet-young"), Some(CleanupAction::Kept));
    assert_eq!(action("etcdnet-old"), Some(CleanupAction::Deleted));
    assert_eq!(pod_names(&env.supervisor), ["etcdnet-young"]);
}

#[test]
fn also_inside_the_workload_cluster() {
    let workload = Workload::serving(
        FakeConfig::empty()
            .object(pod("kube-system", "etcdnet-probe-cp1", true, OLD))
            .object(pod("kube-system", "kube-proxy-x", false, OLD)),
    )
    .unwrap();
    let env = Env::new("healthy-v1alpha3", workload);
    let run = env.plugin(&["cleanup", "tkc-prod", "-n", "ns-prod"]);
    run.expect_code(0);
    assert!(run.stdout.contains("etcdnet-probe-cp1"), "{}", run.stdout);
    let api = env.workload.as_ref().unwrap().api().unwrap();
    assert_eq!(pod_names(api), ["kube-proxy-x"]);
}

#[test]
fn unreachable_workload_cluster_is_reported_and_exit_3() {
    let env = Env::new("healthy-v1alpha3", Workload::refused());
    env.supervisor
        .insert(pod("ns-prod", "etcdnet-jumpbox-a", true, OLD))
        .unwrap();
    let run = env.plugin(&["cleanup", "tkc-prod", "-n", "ns-prod"]);
    run.expect_code(3);
    assert!(
        run.stdout
            .contains("skipped: workload cluster \"tkc-prod\""),
        "{}",
        run.stdout
    );
    assert!(
        pod_names(&env.supervisor).is_empty(),
        "the Supervisor side was still cleaned"
    );
}
