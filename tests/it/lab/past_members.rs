//! Membership and rollouts on real etcd, end to end through the real kubectl: a member with no
//! Machine, a learner that never caught up, a KCP rollout's scale-up and
//! scale-down). Each family runs on both etcd lines (3.4, 3.5): one lab per test, its scenarios in
//! sequence, each state diagnosed on both routes (pod; jumpbox with `--via jumpbox`), each
//! diagnosis polled with a bound (`World::until`), never slept for. One lab serves both routes:
//! the scenarios' waits (elections, the kubelet's restarts with back-off, a learner catching up)
//! are made once, not once per route.
//!
//! The lab's nodes are the fixture sets' VMs (tkc-prod-7xk2p-4rz8m/-9qtvw/-bx2lk at
//! 198.18.0.11-13, the rollout's tkc-prod-7xk2p-k8d5n at .14). Each scenario says which of its
//! assertions would fail without the rule it exercises, and why.
//!
//! Needs root and the lab's packages (and etcd 3.5 for the 3.5 tests); fails naming what is
//! missing otherwise.

use crate::common;
use crate::common::members;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::article::{CP, NS};
use etcdnet::report::v1alpha2::{
    HealthOutcome, LogKind, ProvisioningStep, RolloutPhase, VerdictCode,
};
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdVersion, KubeletConfig, Lab};
use members::*;

/// The rollout's new Machine (and its node, once joined): 198.18.0.14 when it has an address.
const K8D5N: &str = "tkc-prod-7xk2p-k8d5n";

/// The peer URL of the member "added by hand" (scenario 1): the address the rollout's 4th VM
/// would have, where nothing answers in the healthy set's lab.
const STRAY_URL: &str = "https://198.18.0.14:2380";

/// The verdict's note on the rollout; panics, showing the verdict, when it has none.
fn rollout_note(r: &DiagnoseReport) -> &str {
    r.verdict
        .notes
        .iter()
        .find(|n| n.starts_with("rollout in progress"))
        .unwrap_or_else(|| panic!("no rollout note: {:#?}", r.verdict))
}

/// What the node's provisioning Machine waits for, as `-o json` has it
/// (`nodes[].machine.rollout.waitingFor`).
fn waiting_for(r: &DiagnoseReport, node: &str) -> ProvisioningStep {
    let n = r.nodes.iter().find(|n| n.name == node).expect("shown");
    match n.machine.as_ref().and_then(|m| m.rollout.as_ref()) {
        Some(RolloutPhase::Provisioning { waiting_for, .. }) => *waiting_for,
        other => panic!("{node}: not provisioning: {other:?}"),
    }
}

fn assert_all_health_true(r: &DiagnoseReport) {
    for n in &r.nodes {
        let p = n.probe.as_ref().expect("probed");
        assert_eq!(
            p.health.outcome,
            HealthOutcome::Healthy,
            "{}: {:?}",
            n.name,
            p.health
        );
    }
}

fn evidence_with(r: &DiagnoseReport, parts: &[&str]) -> bool {
    r.verdict
        .evidence
        .iter()
        .any(|e| parts.iter().all(|p| e.contains(p)))
}

/// Fixture set `set`'s view of `lab` on each route: the pod route's world, then the jumpbox's.
fn on_both_routes(lab: &Arc<Lab>, set: &str) -> [World; 2] {
    [Route::Pod, Route::Jumpbox].map(|route| World::new(lab, set, route))
}

/// Scenarios 3, 1 and 2 on a lab of the healthy set's three VMs (rollout-scale-up is that set
/// plus a 4th Machine that has no VM address yet, so the same lab is its world).
// Long: three scenarios on one lab in sequence (a rollout's 4th Machine, a member added by hand
// then removed, a learner that must catch up before its promotion), the membership made with the
// real etcdctl, each state diagnosed on both routes through the real kubectl until the verdict
// shows it.
fn three_vms(test: &str, etcd: EtcdVersion) {
    let started = Instant::now();
    let lab = start_lab(test, "healthy-v1alpha3", etcd, None);

    // 3. A KCP rollout's scale-up: the 4th Machine provisioning, its VM off, no IP. The rollout
    // is a note; the three VMs in service decide, and they are healthy.
    // Were the 4th Machine a node like the others, it would be unprobed (NoAddress) and
    // nodes_unreachable (any node with an error) would say NodesUnreachable: the Healthy
    // assertion would fail (and there would be no note).
    for up in &on_both_routes(&lab, "rollout-scale-up") {
        let r = up.until(VerdictCode::Healthy);
        let note = rollout_note(&r);
        assert!(
            note.contains(&format!("{K8D5N} Provisioning (waiting for ")) && stamped_since(note),
            "{note}"
        );
        assert_eq!(waiting_for(&r, K8D5N), ProvisioningStep::PowerOn);
        let fourth = r.nodes.iter().find(|n| n.name == K8D5N).expect("shown");
        assert!(!fourth.reached && fourth.ip.is_none(), "{fourth:#?}");
        assert_lists_are_the_labs(&r, &lab, &CP);
    }

    // 1. A member no Machine stands for (a VM added by hand, then deleted): quorum holds with 3
    // of 4, every path works, /health is true on each.
    // Were member_mismatch to read the logs only (cluster ID / member ID mismatch, already
    // bootstrapped, a removed member talking), without the member list, the peers' dial
    // timeouts to 198.18.0.14 would be no path of the matrix: Healthy, and the
    // EtcdMemberMismatch assertion would fail.
    let worlds = on_both_routes(&lab, "healthy-v1alpha3");
    let stray = lab.add_unstarted_member("cp4", STRAY_URL).unwrap();
    let hex = format!("{stray:x}");
    let listed = lab.members().unwrap();
    let m = listed.iter().find(|m| m.id == stray).expect("listed");
    assert_eq!(
        (m.name.as_str(), &m.peer_urls[..]),
        ("", &[STRAY_URL.into()][..])
    );
    for w in &worlds {
        let r = w.until(VerdictCode::EtcdMemberMismatch);
        assert!(
            evidence_with(
                &r,
                &[
                    &format!("member {hex} (never started, peer URL {STRAY_URL};"),
                    "no control-plane Machine's VM has its address",
                ]
            ),
            "{:#?}",
            r.verdict
        );
        assert!(
            r.verdict
                .next_steps
                .iter()
                .any(|s| s.contains(&format!("etcdctl member remove {hex}"))
                    && s.contains(STRAY_URL)),
            "{:#?}",
            r.verdict.next_steps
        );
        assert_all_health_true(&r);
        assert_lists_are_the_labs(&r, &lab, &CP);
    }
    // -o wide: every node's own list, the stray in each.
    let wide = worlds[0].diagnose(&["-o", "wide", "--details"]);
    wide.expect_code(1);
    assert!(
        wide.stdout.contains("MEMBERS (each node's own list):"),
        "{}",
        wide.stdout
    );
    let rows: Vec<&str> = wide
        .stdout
        .lines()
        .filter(|l| l.contains(&hex) && l.contains("<never started>") && l.contains(STRAY_URL))
        .collect();
    assert_eq!(rows.len(), CP.len(), "{}", wide.stdout);
    // The safe next step, done: Healthy again.
    lab.remove_member_id(stray).unwrap();
    for w in &worlds {
        let r = w.until(VerdictCode::Healthy);
        assert_lists_are_the_labs(&r, &lab, &CP);
    }

    // 2. A learner that never caught up... or caught up and was never promoted: a join stopped
    // between kubeadm's `member add --learner` and its promotion, with no rollout in progress.
    // Without the member list's learner flag, the learner runs, its paths work and its
    // /health answers: Healthy, and the EtcdMemberMismatch assertion would fail.
    let (_, learner) = lab.replace_member_as_learner(CP[2]).unwrap();
    for w in &worlds {
        let r = w.until(VerdictCode::EtcdMemberMismatch);
        assert!(
            evidence_with(
                &r,
                &[
                    &format!("member {learner:x} ("),
                    &format!("still a learner on {}, with no rollout in progress", CP[2]),
                ]
            ),
            "{:#?}",
            r.verdict
        );
        assert_eq!(r.verdict.nodes, [CP[2]]);
        assert_lists_are_the_labs(&r, &lab, &CP);
        // The learner answers /health true like the others: nothing but its flag tells.
        assert_all_health_true(&r);
    }
    // etcd refuses the promotion until the learner has the leader's log: retried, bounded.
    poll("the learner promoted", Duration::from_secs(30), || {
        lab.promote_member(CP[2]).ok()
    });
    for w in &worlds {
        let r = w.until(VerdictCode::Healthy);
        assert_lists_are_the_labs(&r, &lab, &CP);
    }
    assert!(lab.members().unwrap().iter().all(|m| !m.is_learner));
    eprintln!("{test}: {:?}", started.elapsed());
}

/// Scenario 4 (and the scale-up a step later) on a lab of rollout-scale-down's four VMs, with
/// kubelet stand-ins restarting etcd as kubelet restarts kubeadm's static pod.
// Long: four members to start, then a removed member that the kubelet stand-in restarts three
// times (with back-off) before the scale-down is diagnosed, each step on both routes until the
// verdict shows.
fn four_vms(test: &str, etcd: EtcdVersion) {
    let started = Instant::now();
    let lab = start_lab(
        test,
        "rollout-scale-down",
        etcd,
        Some(KubeletConfig::scaled(20)),
    );
    let in_service = [CP[1], CP[2], K8D5N];

    // 3 (a step later). The 4th VM at .14 is a member (kubeadm join ran `member add` and started
    // it), its Machine has no nodeRef yet: a note, not a fourth node to judge.
    // Without the rollout note the note assertion fails.
    for joining in &on_both_routes(&lab, "rollout-scale-up-joining") {
        let r = joining.until(VerdictCode::Healthy);
        let note = rollout_note(&r);
        assert!(
            note.contains(&format!("{K8D5N} Provisioning (waiting for ")),
            "{note}"
        );
        assert_eq!(waiting_for(&r, K8D5N), ProvisioningStep::NodeJoin);
        assert_lists_are_the_labs(&r, &lab, &CP);
    }

    // 4. The scale-down: KCP removed 4rz8m's member (its Machine is deleting, the VM still
    // there); the kubelet keeps restarting its static pod, its peers reject it as removed.
    // Were 4rz8m judged like any node (no rollout), restarted 3+ times within 15 minutes (the
    // test waits for that) it would be EtcdCrashLooping whatever its state (no "own problem"
    // test, no removed-member turn); exited after fewer, EtcdNotRunning turned
    // EtcdMemberMismatch by its "permanently removed" line. Either way the Healthy assertion
    // would fail.
    let worlds = on_both_routes(&lab, "rollout-scale-down");
    let removed = lab.remove_member(CP[0]).unwrap();
    poll(
        "the kubelet restarting the removed member 3 times",
        Duration::from_secs(60),
        || (lab.kubelet_restarts(CP[0]).ok()? >= 3).then_some(()),
    );
    for down in &worlds {
        let r = down.until(VerdictCode::Healthy);
        let note = rollout_note(&r);
        assert!(
            note.contains(&format!("{} Deleting since ", CP[0])) && stamped_since(note),
            "{note}"
        );
        // The rejection is there in -o json (a log's MemberRemoved finding), and did not
        // decide.
        assert!(
            r.logs.iter().any(|l| l
                .summary
                .findings
                .iter()
                .any(|f| f.kind == LogKind::MemberRemoved)),
            "no MemberRemoved finding in any log: {:#?}",
            r.logs
        );
        assert!(lab.members().unwrap().iter().all(|m| m.id != removed));
        assert_lists_are_the_labs(&r, &lab, &in_service);
    }

    // The same lab state where no Machine is deleting (4rz8m's Machine as a running one: no
    // deletionTimestamp, phase Running): a removed member still restarted is a membership
    // problem. Were crash_looping to come first knowing nothing of removed members, it would
    // be EtcdCrashLooping, and the EtcdMemberMismatch assertion would fail.
    for down in &worlds {
        down.env
            .supervisor
            .modify("cluster.x-k8s.io/v1beta1", "Machine", NS, CP[0], |m| {
                if let Some(meta) = m["metadata"].as_object_mut() {
                    meta.remove("deletionTimestamp");
                    meta.remove("deletionGracePeriodSeconds");
                }
                m["status"]["phase"] = "Running".into();
            })
            .unwrap();
        let r = down.until(VerdictCode::EtcdMemberMismatch);
        assert!(
            r.verdict.nodes.iter().any(|n| n == CP[0]),
            "{:#?}",
            r.verdict
        );
        assert!(
            evidence_with(&r, &["etcd log:", "removed member still talking"]),
            "{:#?}",
            r.verdict
        );
    }
    eprintln!("{test}: {:?}", started.elapsed());
}

/// One `#[test]` per etcd line of a family: `<family>::etcd_3_4`, `<family>::etcd_3_5`.
macro_rules! on_both_lines {
    ($($family:ident),* $(,)?) => {$(
        mod $family {
            use super::*;
            on_both_lines!(@test $family, etcd_3_4, V3_4);
            on_both_lines!(@test $family, etcd_3_5, V3_5);
        }
    )*};
    (@test $family:ident, $name:ident, $etcd:ident) => {
        #[test]
        #[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
        fn $name() {
            super::$family(
                concat!(stringify!($family), "::", stringify!($name)),
                EtcdVersion::$etcd,
            );
        }
    };
}

on_both_lines!(three_vms, four_vms);

/// Whether the note's "since" is the fixture's time as the lab stamps it (the fake Supervisor
/// moves its fixtures' times to lab start: the newest a few minutes before it), so within the
/// hour, not the fixture's 2025 date.
fn stamped_since(note: &str) -> bool {
    let Some(at) = note.split("since ").nth(1).and_then(|t| t.get(..20)) else {
        return false;
    };
    humantime::parse_rfc3339(at)
        .ok()
        .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < Duration::from_secs(3600))
}
