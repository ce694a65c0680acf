//! SIGHUP (the SSH session to the admin's bastion drops) ends a run as Ctrl-C and SIGTERM do:
//! every probe pod it created is deleted, and it exits 128 + the signal's number, as a shell
//! reports a death by it: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP (src/error.rs,
//! docs/output.md "Exit codes"). The pod is
//! the jumpbox route's (one for the cluster's three VMs), run as a scripted vSphere Pod by the
//! Supervisor fake and held Running, so no lab is needed.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::article::*;
use common::*;
use etcdnet_fakeapi::PodScript;

/// Pods of the namespace whose status says Running.
fn running(api: &FakeApi) -> usize {
    api.objects("", "pods")
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .count()
}

/// Starts `cmd`, waits (at most `bound`) until `ready()` holds, sends it `signal` and returns
/// how it ended. Panics if it never got ready: the test would prove nothing.
fn signal_when(mut cmd: Command, signal: &str, ready: impl Fn() -> bool, bound: Duration) -> Run {
    let child = cmd.spawn().expect("starts");
    let deadline = Instant::now() + bound;
    while !ready() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ready(), "never got to the point of signalling it");
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    Run::from(child.wait_with_output().expect("it ends"))
}

/// `diagnose` on fixture set `set`, its jumpbox pod held Running (until deleted), `signal`
/// once it runs: the pod is deleted and the run exits with `code`, naming the signal.
fn signal_mid_run_leaves_no_pod(set: &str, ns: &str, cluster: &str, signal: &str, code: i32) {
    let env = Env::new(set, Workload::black_hole());
    env.supervisor.on_pod_created(|_| {
        Some(PodScript {
            run_after: Duration::from_millis(50),
            finish_after: None,
            ..PodScript::default()
        })
    });
    let cmd = env.plugin_command(&[
        "diagnose",
        cluster,
        "-n",
        ns,
        "--via",
        "jumpbox",
        "--api-timeout",
        "1s",
        "--timeout",
        "60s",
    ]);
    let run = signal_when(
        cmd,
        signal,
        || running(&env.supervisor) == 1,
        Duration::from_secs(20),
    );
    run.expect_code(code);
    assert!(
        run.stderr.contains(&format!(
            "interrupted (SIG{signal}); every probe pod created was deleted"
        )),
        "{}",
        run.stderr
    );
    let created = env.supervisor.created_pods();
    assert_eq!(
        created.len(),
        1,
        "one jumpbox pod for the three VMs: {created:?}"
    );
    assert!(
        env.supervisor.existing_pods().is_empty(),
        "pods left behind: {:?}",
        env.supervisor.existing_pods()
    );
}

#[test]
fn sighup_deletes_running_pods_and_exits_129() {
    signal_mid_run_leaves_no_pod(SET, NS, CLUSTER, "HUP", 129);
}

/// SIGTERM (`kill`, a CI runner's or a service manager's stop, `timeout 5m kubectl etcdnet …`):
/// the pods go as for Ctrl-C, and the code is 143, what `timeout(1)`'s callers and systemd
/// read as "stopped by SIGTERM".
#[test]
fn sigterm_deletes_running_pods_and_exits_143() {
    signal_mid_run_leaves_no_pod(SET, NS, CLUSTER, "TERM", 143);
}

/// A 45-character cluster name (fixture set `long-names`): the jumpbox pod's name is cut to fit
/// (see `route::pod_name`), still tracked, and Ctrl-C leaves none.
#[test]
fn ctrl_c_with_long_node_names_leaves_no_pod() {
    signal_mid_run_leaves_no_pod(
        "long-names",
        "ns-prod",
        "tkc-payments-eu-central-1-prod-blue-green-v02",
        "INT",
        130,
    );
}

/// After a SIGHUP the admin's terminal may be gone, and writing to stderr fails (EIO on a hung-up
/// terminal, EPIPE on a closed pipe): the error line is lost, but the run must still exit with
/// its documented code (2 for a missing kubeconfig), not with a panic's 101.
#[test]
fn a_dead_stderr_does_not_change_the_exit_code() {
    // stderr is a pipe whose reader has already gone; the exit code goes out on fd 4.
    let script = format!(
        "exec 4>&1; {{ sleep 0.3; \"{PLUGIN}\" status {CLUSTER} -n {NS} --kubeconfig /nonexistent/kubeconfig; echo \"exit $?\" >&4; }} 2>&1 >/dev/null | true"
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "exit 2", "{stdout}");
}

/// Ctrl-C while a pod create is in flight. The API server stores the pod only
/// after the run has deleted its pods by name (a 404 then), so only the delete-collection by the
/// run's label that follows, and its retry after a short wait, can find it. Through kubectl, on
/// both routes: the jumpbox pod in the Supervisor, the probe pods in the workload cluster.
/// Without the sweep by label the run would exit after the 404s and the pod created a second
/// later would stay.
#[test]
fn ctrl_c_during_an_in_flight_create_leaves_no_pod() {
    for via in ["jumpbox", "pod"] {
        let workload = if via == "pod" {
            Workload::ok()
        } else {
            Workload::black_hole()
        };
        let env = Env::new(SET, workload);
        let api = match via {
            "pod" => env.workload.as_ref().unwrap().api().unwrap(),
            _ => &env.supervisor,
        };
        api.delay_pod_creates(Duration::from_millis(800));
        let posted = || {
            api.requests()
                .iter()
                .any(|r| r.method == "POST" && r.path.ends_with("/pods"))
        };
        let cmd = env.kubectl_command(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            via,
            "--api-timeout",
            "1s",
            "--timeout",
            "60s",
        ]);
        let started = Instant::now();
        let run = signal_when(cmd, "INT", posted, Duration::from_secs(20));
        run.expect_code(130);
        // The create lands whatever the client did; only then is "no pod left" worth checking.
        while api.created_pods().is_empty() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !api.created_pods().is_empty(),
            "--via {via}: no create landed"
        );
        assert!(
            api.existing_pods().is_empty(),
            "--via {via}: pods left behind: {:?}",
            api.existing_pods()
        );
        let swept = api
            .requests()
            .iter()
            .filter(|r| r.method == "DELETE" && r.path.ends_with("/pods"))
            .map(|r| r.param("labelSelector").unwrap_or_default())
            .collect::<Vec<_>>();
        assert_eq!(
            swept.len(),
            2,
            "--via {via}: one sweep, retried once: {swept:?}"
        );
        assert!(
            swept
                .iter()
                .all(|s| s.contains("etcdnet.kubectl.io/run-id=")),
            "{swept:?}"
        );
    }
}
