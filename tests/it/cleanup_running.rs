//! `cleanup` keeps what a run may still be using: by default it deletes only pods that have
//! finished or are past their deadline (another admin's diagnosis in progress is left alone),
//! and `--include-running` deletes the rest too.

use crate::common;

use common::*;
use etcdnet_fakeapi::FakeConfig;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{json, Value};

/// A pod of ours (label, `activeDeadlineSeconds` 120) created and started `age_secs` ago, in
/// `phase`.
fn pod(ns: &str, name: &str, phase: &str, age_secs: i64) -> Value {
    let at = (Timestamp::now() - SignedDuration::from_secs(age_secs)).to_string();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "creationTimestamp": at,
                     "labels": {"app.kubernetes.io/managed-by": "kubectl-etcdnet"}},
        "spec": {"activeDeadlineSeconds": 120, "restartPolicy": "Never",
                 "containers": [{"name": "probe", "image": "busybox"}]},
        "status": {"phase": phase, "startTime": at}
    })
}

fn names(api: &FakeApi) -> Vec<String> {
    let mut n: Vec<String> = api
        .objects("", "pods")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn actions(run: &Run) -> Vec<(String, String)> {
    let mut a: Vec<(String, String)> = run.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_string(),
                i["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    a.sort();
    a
}

const KEPT: &str = "kept (running; --all to delete)";

/// A finished pod, one running within its deadline (a run in progress) and one running past
/// it (its run is long gone), in the Supervisor and inside the workload cluster.
fn world() -> Env {
    let workload = Workload::serving(
        FakeConfig::empty()
            .object(pod("kube-system", "probe-finished", "Succeeded", 30))
            .object(pod("kube-system", "probe-in-progress", "Running", 30))
            .object(pod("kube-system", "probe-past-deadline", "Running", 3600)),
    )
    .unwrap();
    let pods = vec![
        pod("ns-prod", "jumpbox-failed", "Failed", 30),
        pod("ns-prod", "jumpbox-in-progress", "Pending", 30),
        pod("ns-prod", "jumpbox-past-deadline", "Pending", 3600),
    ];
    Env::with_objects("healthy-v1alpha3", pods, &[], workload)
}

#[test]
fn by_default_a_run_in_progress_is_left_alone() {
    let env = world();
    let workload = env.workload.as_ref().unwrap().api().unwrap();

    let dry = env.plugin(&[
        "cleanup",
        "tkc-prod",
        "-n",
        "ns-prod",
        "--dry-run",
        "-o",
        "json",
    ]);
    dry.expect_code(0);
    assert_eq!(
        actions(&dry),
        [
            ("jumpbox-failed".into(), "would delete".into()),
            ("jumpbox-in-progress".into(), KEPT.into()),
            ("jumpbox-past-deadline".into(), "would delete".into()),
            ("probe-finished".into(), "would delete".into()),
            ("probe-in-progress".into(), KEPT.into()),
            ("probe-past-deadline".into(), "would delete".into()),
        ]
    );
    assert_eq!(names(&env.supervisor).len(), 3, "a dry run deletes nothing");

    let run = env.plugin(&["cleanup", "tkc-prod", "-n", "ns-prod"]);
    run.expect_code(0);
    assert!(run.stdout.contains(KEPT), "{}", run.stdout);
    assert!(
        run.stdout.contains("2 pod(s) kept: ")
            && run.stdout.contains("--include-running deletes them"),
        "{}",
        run.stdout
    );
    assert_eq!(names(&env.supervisor), ["jumpbox-in-progress"]);
    assert_eq!(names(workload), ["probe-in-progress"]);
}

/// `--include-running`, and `--all`, its old spelling (elsewhere `--all` means every cluster
/// of the namespace), which still works this release and says so on stderr.
#[test]
fn include_running_deletes_the_rest_too() {
    for (flag, deprecation) in [
        ("--include-running", None),
        (
            "--all",
            Some("Flag --all has been deprecated, use --include-running instead"),
        ),
    ] {
        let env = world();
        let workload = env.workload.as_ref().unwrap().api().unwrap();
        let run = env.plugin(&["cleanup", "tkc-prod", "-n", "ns-prod", flag, "-o", "json"]);
        run.expect_code(0);
        assert!(
            actions(&run).iter().all(|(_, a)| a == "deleted"),
            "{flag}: {:?}",
            actions(&run)
        );
        assert!(names(&env.supervisor).is_empty(), "{flag}");
        assert!(names(workload).is_empty(), "{flag}");
        assert_eq!(
            run.stderr.lines().next(),
            deprecation,
            "{flag}: {}",
            run.stderr
        );
    }
}
