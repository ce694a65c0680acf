//! SIGHUP (the SSH session to the admin's bastion drops) ends a run as Ctrl-C and SIGTERM do:
//! every probe pod it created is deleted, and it exits 130 (README, "Exit codes"). The pods are
//! the jumpbox route's, run as scripted vSphere Pods by the Supervisor fake and held Running,
//! so no lab is needed.

mod common;

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

#[test]
fn sighup_deletes_running_pods_and_exits_130() {
    let env = Env::new(SET, Workload::black_hole());
    // Running forever (until deleted): the run waits on them.
    env.supervisor.on_pod_created(|_| {
        Some(PodScript {
            run_after: Duration::from_millis(50),
            finish_after: None,
            ..PodScript::default()
        })
    });
    let cmd = env.plugin_command(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--api-timeout",
        "1s",
        "--timeout",
        "60s",
    ]);
    let run = signal_when(
        cmd,
        "HUP",
        || running(&env.supervisor) == 3,
        Duration::from_secs(20),
    );
    run.expect_code(130);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
    assert_eq!(env.supervisor.created_pods().len(), 3);
    assert!(
        env.supervisor.existing_pods().is_empty(),
        "pods left behind: {:?}",
        env.supervisor.existing_pods()
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
