//! `diagnose --watch` end to end in the lab, through the real kubectl: a fault healed while the
//! watch runs shows as a transition line and ends the watch with exit 0; `-o json` is one
//! document per round (JSON lines). Needs root and the lab's packages.

use crate::common;

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_fakeapi::FakeConfig;
use etcdnet_lab::{Fault, Lab};

fn lab_env(test: &str) -> (Env, Arc<Lab>) {
    let lab = start_lab(test);
    let fixture = FakeConfig::from_dir(etcdnet_fakeapi::workload_set("lab-3")).unwrap();
    let workload = Workload::lab(fixture, lab.clone()).unwrap();
    (Env::new(SET, workload), lab)
}

// Long: polled until etcd notices the isolation, then --watch rounds until, after the heal,
// cp3 is back in the cluster and the watch ends.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_fault_healed_mid_watch_shows_the_transition_and_ends_the_watch() {
    let (env, lab) = lab_env("watch heal");
    lab.inject(Fault::Isolate(CP[2].into())).unwrap();
    // Let etcd notice, so the first round already sees the partition.
    super::wait_no_leader(&lab, &[CP[2]]);

    let mut child = env
        .kubectl_command(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--connect-timeout",
            "2s",
            "--watch",
            "--interval=1s",
        ])
        .spawn()
        .unwrap();
    let out = stdout_of(&mut child);
    wait_for("the first round's report", Duration::from_secs(60), || {
        out.now().contains("VERDICT: ")
    });
    let first = out.now();
    assert!(
        first.contains("VERDICT: EtcdPeerNetworkPartial"),
        "the first round is printed whole:\n{first}"
    );

    lab.heal().unwrap();
    // The usual bound, plus what TCP's backoff on the streams the cut stalled may add.
    let code = exit_within(
        &mut child,
        Duration::from_secs(120) + lab.stall_after_heal(),
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let text = out.all();
    assert_eq!(code, 0, "exit 0 once Healthy\n{text}\n{stderr}");

    // After the first report, only transition lines: `2026-12-07T08:31:02Z OLD → NEW (why)`.
    let after: Vec<&str> = text[first.len()..].lines().collect();
    let transitions: Vec<&&str> = after.iter().filter(|l| l.contains(" → ")).collect();
    assert!(!transitions.is_empty(), "{text}");
    for line in &transitions {
        let clock = line.split(' ').next().unwrap_or("");
        assert!(
            clock.len() == 20 && humantime::parse_rfc3339(clock).is_ok(),
            "starts with the time: {line}"
        );
    }
    let first_change = transitions[0];
    assert!(
        first_change.contains("EtcdPeerNetworkPartial → "),
        "{first_change}"
    );
    // etcd may pass through another verdict (Inconclusive while it elects) before Healthy.
    assert!(
        transitions
            .iter()
            .any(|l| l.contains(&format!("{} reaches its peers again", CP[2]))),
        "a change names the isolated node reaching its peers again:\n{text}"
    );
    assert!(transitions.last().unwrap().contains("→ Healthy"), "{text}");
    assert!(
        after.last().unwrap().contains("Healthy"),
        "ends on Healthy:\n{text}"
    );
    // Each round's pods were deleted before the next: none is left.
    let workload = env.workload.as_ref().unwrap().api().unwrap();
    assert!(
        workload.existing_pods().is_empty(),
        "{:?}",
        workload.existing_pods()
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

// Long: polled until etcd notices the cut, then --watch rounds under it and after the heal,
// each round waiting out the cut paths' connect timeouts.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn watch_json_is_one_document_per_round() {
    let (env, lab) = lab_env("watch json");
    lab.inject(Fault::DropAllPeers).unwrap();
    super::wait_no_leader(&lab, &[]);
    let mut child = env
        .kubectl_command(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--connect-timeout",
            "2s",
            "--watch",
            "--interval=1s",
            "-o",
            "json",
        ])
        .spawn()
        .unwrap();
    let out = stdout_of(&mut child);
    wait_for("two rounds", Duration::from_secs(60), || {
        out.now().lines().count() >= 2
    });
    lab.heal().unwrap();
    // The usual bound, plus what TCP's backoff on the streams the cut stalled may add.
    let code = exit_within(
        &mut child,
        Duration::from_secs(120) + lab.stall_after_heal(),
    );
    assert_eq!(code, 0);
    let text = out.all();
    let rounds: Vec<DiagnoseReport> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(rounds.len() >= 3, "{text}");
    assert_eq!(rounds[0].verdict.code, VerdictCode::EtcdPeerNetworkBlocked);
    assert_eq!(rounds.last().unwrap().verdict.code, VerdictCode::Healthy);
    assert!(rounds[..rounds.len() - 1]
        .iter()
        .all(|r| r.verdict.code != VerdictCode::Healthy));
}
