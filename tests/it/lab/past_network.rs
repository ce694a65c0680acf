//! A network fault on a control plane with a past, end to end: the real
//! kubectl, the pod and the jumpbox route, real etcd 3.4 and 3.5 in the lab with the kubelet
//! stand-in restarting its static pod (kubelet's back-off, kubeadm's probes, durations / 20).
//! One lab per etcd line; the scenarios run in sequence in it (1, 2, 4, then 3, whose cut and
//! hung VM the teardown ends), healed in between, and each state is diagnosed on both routes
//! (the pod route, then the jumpbox):
//!
//! 1. an aged control plane (old slow fdatasync, NOSPACE raised then disarmed, many elections,
//!    dial timeouts, all hours ago) is `Healthy`, the past in its notes and `logs[].history`;
//! 2. the article's case, members killed and restarted by kubelet during the cut: the network
//!    verdict quoting the restarts; after the fix `Healthy` with a "was restarted" note;
//! 3. one VM hung and the other two cut from each other: the network verdict, the hung VM in it;
//! 4. only 2379 blocked: `EtcdPeerNetworkPartial` "only 2379 is blocked", and a NOSPACE raised
//!    meanwhile is `EtcdNoSpace`, not hidden behind it.
//!
//! Needs root and the lab (etcd 3.5 from `.ci/run`); compiled as ignored elsewhere (build.rs).

use crate::common;
use crate::common::past;

use std::time::{Duration, Instant};

use common::article::CP;
use etcdnet::report::v1alpha2::VerdictCode;
use etcdnet_lab::{EtcdVersion, Fault};
use past::{evidence_has, notes_have, shown, PastWorld, Route, ROUTES};

/// How long a verdict may take to show after a state change: etcd notices a cut within its
/// election timeout, kubelet's scaled probes kill a member within ~5 s (liveness: 8 failures
/// every 0.5 s) and back off up to 15 s; each diagnosis under a cut waits out its 2 s dials.
const SETTLE: Duration = Duration::from_secs(90);

fn scenarios(etcd: EtcdVersion) {
    let test = format!("past_network etcd {etcd}");
    let started = Instant::now();
    let w = PastWorld::start(&test, etcd);
    aged_past_is_history(&w);
    eprintln!("{test}: 1 (aged) done at {:?}", started.elapsed());
    restarted_during_the_cut(&w);
    eprintln!("{test}: 2 (restarts) done at {:?}", started.elapsed());
    // 4 before 3: the hung VM and its drop cut last, ended by the teardown. Healed, its
    // members' stalled streams may need up to the cut's age to carry again
    // (`Lab::stall_after_heal`), and the VM its boot: a wait for no case.
    only_2379_and_nospace(&w);
    eprintln!("{test}: 4 (2379, NOSPACE) done at {:?}", started.elapsed());
    hung_vm_and_the_others_cut(&w);
    eprintln!("{test}: 3 (hung VM) done at {:?}", started.elapsed());
}

/// Scenario 1: every node aged with `Lab::troubled_past`: nothing in the last hour.
///
/// Without the time window, a `slow_disk` counting every line of the log would make the one
/// `slow fdatasync` of 3 h ago `EtcdSlowDisk`, and a `no_space` taking any NOSPACE line would
/// make the disarmed alarm `EtcdNoSpace`: the first `assert_eq!(.., Healthy)` fails; and the
/// `notes` and `history` assertions need the past told apart from the present.
fn aged_past_is_history(w: &PastWorld) {
    for n in CP {
        let past = w.lab.troubled_past(n).unwrap();
        w.lab.age(n, &past).unwrap();
    }
    for route in ROUTES {
        aged_on(w, route);
    }
}

fn aged_on(w: &PastWorld, route: Route) {
    let (r, seen) = w.expect_verdict(route, &[], SETTLE, VerdictCode::Healthy);
    assert!(!seen.contains(&VerdictCode::EtcdNoSpace), "{seen:?}");
    for n in CP {
        assert!(
            notes_have(&r, &[n, "history, outside --since 15m"]),
            "{n}: {}",
            shown(&r)
        );
        let logs = r.logs.iter().find(|l| l.node == n).expect("its log read");
        assert!(!logs.summary.history.is_empty(), "{n}: {:#?}", logs.summary);
        // What was, with its kind: the old slow fsync and NOSPACE are history, not findings.
        let kinds: Vec<String> = (logs.summary.history.iter())
            .map(|f| f.kind.to_string())
            .collect();
        assert!(
            kinds.iter().any(|k| k == "SlowFdatasync") && kinds.iter().any(|k| k == "NoSpace"),
            "{n}: {kinds:?}"
        );
        assert!(
            logs.summary
                .findings
                .iter()
                .all(|f| f.kind.to_string() != "SlowFdatasync"),
            "{n}: {:#?}",
            logs.summary.findings
        );
    }
    // The window works end to end: 5 h reaches back over the past (started 4 h ago). The one
    // slow fsync stays under EtcdSlowDisk's 3 and the alarm list says NOSPACE is off, so the
    // verdict stays Healthy; the 12 elections of 2 h ago are now in the window: a warning.
    // Until Healthy: a 2 s connect on the lab's 2 shared cores can time out once, and a path
    // not seen to work is never Healthy; what the past could make must never be seen.
    let (r, seen) = w.expect_verdict(route, &["--since", "5h"], SETTLE, VerdictCode::Healthy);
    assert!(
        !seen.contains(&VerdictCode::EtcdSlowDisk) && !seen.contains(&VerdictCode::EtcdNoSpace),
        "{seen:?}"
    );
    assert!(
        notes_have(&r, &["warning: unstable:", "elections in 5h"]),
        "{}",
        shown(&r)
    );
    for l in &r.logs {
        let count = |k: &str| {
            (l.summary.findings.iter())
                .find(|f| f.kind.to_string() == k)
                .map_or(0, |f| f.count)
        };
        assert_eq!(count("SlowFdatasync"), 1, "{}: {:#?}", l.node, l.summary);
        assert!(count("LeaderElected") >= 12, "{}: {:#?}", l.node, l.summary);
    }
    assert!(
        notes_have(&r, &["1× slow fdatasync in the last 5h"]),
        "{}",
        shown(&r)
    );
}

/// Scenario 2: the article's case (every peer path dropped) on a control plane whose kubelet
/// kills and restarts the members that see no leader (real etcd 3.4/3.5 fail even kubeadm's
/// liveness probe without quorum), then the fix.
///
/// Were `crash_looping` to hold for any member restarted 3 times within 15 min, network or
/// not, and `not_running` for a killed one, the verdict under the cut would be
/// `EtcdCrashLooping`/`EtcdNotRunning` ("a separate issue from etcd networking") and, after the
/// fix, still `EtcdCrashLooping` (restarted members, newest container < 15 min old): the `seen`
/// assertions and the one on `EtcdPeerNetworkBlocked` would fail.
fn restarted_during_the_cut(w: &PastWorld) {
    w.lab.inject(Fault::DropAllPeers).unwrap();
    // Until a member was restarted as often as the old rule called crash looping (3), so the
    // case is the one the issue describes, not a first restart: waited for on the lab's own
    // count (the kubelet stand-in's, which its crictl reports), not by re-running the whole
    // plugin under the cut every few seconds (each such diagnosis waits out its 2 s dials on
    // both ports of every path: the suite's CPU, issue 39 item 5). Then each route is
    // diagnosed until the verdict quotes it, which is at once unless a restart is in flight.
    common::members::poll(
        "a member restarted 3 times by its kubelet under the cut",
        SETTLE,
        || {
            (CP.iter().filter_map(|n| w.lab.kubelet_restarts(n).ok()))
                .any(|r| r >= 3)
                .then_some(())
        },
    );
    for route in ROUTES {
        let (r, seen) = w.diagnose_until(route, &[], SETTLE, |r| {
            r.verdict.code == VerdictCode::EtcdPeerNetworkBlocked && most_restarts_quoted(r) >= 3
        });
        assert_eq!(
            r.verdict.code,
            VerdictCode::EtcdPeerNetworkBlocked,
            "{route:?}: {}",
            shown(&r)
        );
        assert!(most_restarts_quoted(&r) >= 3, "{route:?}: {}", shown(&r));
        // Nor a certificate problem: a member killed while a probe's handshake waits resets it
        // (seen on etcd 3.5 here).
        for bad in [
            VerdictCode::EtcdCrashLooping,
            VerdictCode::EtcdNotRunning,
            VerdictCode::EtcdCertificateProblem,
        ] {
            assert!(
                !seen.contains(&bad),
                "{route:?}: {bad} on the way: {seen:?}"
            );
        }
        eprintln!("{route:?} under the cut: verdicts {seen:?}");
    }
    let restarted: Vec<u32> = CP
        .iter()
        .map(|n| w.lab.kubelet_restarts(n).unwrap())
        .collect();
    eprintln!("kubelet restarts under the cut: {restarted:?}");
    assert!(restarted.iter().any(|r| *r > 0), "{restarted:?}");

    w.lab.heal().unwrap();
    w.lab.wait_recovered(SETTLE).unwrap();
    for route in ROUTES {
        let (r, seen) = w.expect_verdict(route, &[], SETTLE, VerdictCode::Healthy);
        assert!(
            !seen.contains(&VerdictCode::EtcdCrashLooping),
            "{route:?} after the fix: {seen:?}"
        );
        assert!(
            notes_have(&r, &["etcd was restarted", "/health is true"]),
            "{route:?}: {}",
            shown(&r)
        );
    }
}

/// The most restarts an evidence line quotes as the partition's ("<node>: etcd restarted N
/// time(s) ...; ... no fatal reason: kubelet restarts a member that cannot reach a quorum").
fn most_restarts_quoted(r: &etcdnet::report::DiagnoseReport) -> u32 {
    (r.verdict.evidence.iter())
        .filter(|l| l.contains("no fatal reason"))
        .filter_map(|l| {
            l.split("etcd restarted ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// Scenario 3: one VM hung (powered off: nothing answers at its address) and the two others cut
/// from each other (each one's connections to the other dropped): fixing the hung VM alone would
/// not restore quorum, so the verdict is the network's, with the hung VM in its evidence.
///
/// Were `NodesUnreachable` (jumpbox: cp3 not reached) or `EtcdNotRunning` (pod route: cp3's
/// etcd is down) to end the analysis before the network is judged, the verdict would be about
/// cp3 alone and the `code` assertion would fail.
fn hung_vm_and_the_others_cut(w: &PastWorld) {
    let (a, b, hung) = (CP[0], CP[1], CP[2]);
    w.lab.power_off(hung).unwrap();
    for (from, to) in [(a, b), (b, a)] {
        w.lab
            .inject(Fault::DropOneWay {
                from: from.into(),
                to: to.into(),
            })
            .unwrap();
    }
    let network = [
        VerdictCode::EtcdPeerNetworkBlocked,
        VerdictCode::EtcdPeerNetworkPartial,
    ];
    let names_hung =
        |r: &etcdnet::report::DiagnoseReport| r.verdict.evidence.iter().any(|l| l.contains(hung));
    for route in ROUTES {
        let (r, seen) = w.diagnose_until(route, &[], SETTLE, |r| {
            network.contains(&r.verdict.code) && names_hung(r) && {
                // Both live members see the other time out, in their own matrix rows.
                let m = r.matrices.iter().find(|m| m.port == 2380).unwrap();
                [(a, b), (b, a)].iter().all(|(f, t)| {
                    m.cell(f, t)
                        .is_some_and(|c| c.state == etcdnet::report::v1alpha2::CellState::Timeout)
                })
            }
        });
        eprintln!("hung VM, {route:?}: verdicts {seen:?}");
        assert!(
            network.contains(&r.verdict.code),
            "{route:?}: {}",
            shown(&r)
        );
        assert!(names_hung(&r), "{route:?}: {}", shown(&r));
        match route {
            // The jumpbox's ssh to the hung VM times out: the first verdict follows in the
            // network's.
            Route::Jumpbox => assert!(
                evidence_has(&r, &["also NodesUnreachable"]),
                "{route:?}: {}",
                shown(&r)
            ),
            // The fake workload API still runs a pod there (its network is down): cp3 is probed
            // and reaches nothing; what the others saw of it is in the evidence.
            Route::Pod => assert!(
                (r.verdict.evidence.iter())
                    .any(|l| l.contains(&format!("→ {hung}")) || l.contains(&format!("{hung}:"))),
                "{route:?}: {}",
                shown(&r)
            ),
        }
        assert!(
            (r.verdict.next_steps.iter()).any(|s| s.contains("2379 and 2380")),
            "{route:?}: {}",
            shown(&r)
        );
    }
    // The last scenario of its lab: the teardown ends the cut and the powered-off VM.
}

/// Scenario 4: only 2379 dropped between the VMs (2380 works: quorum holds), then NOSPACE
/// raised for one member through etcd's Alarm API while 2379 stays blocked, then disarmed.
///
/// Were the network rule to take any failing peer cell, 2379 alone would give
/// `EtcdPeerNetworkPartial` "port 2379 is blocked between all control-plane VMs, 2380 works"
/// before `no_space` could run: the summary's "only 2379 is blocked" and the `EtcdNoSpace`
/// assertions would fail.
fn only_2379_and_nospace(w: &PastWorld) {
    // From a healthy cluster: scenario 2 ended on `Healthy` on both routes after its heal (a
    // diagnosis here only to see it again was two per etcd line of the suite's CPU).
    w.lab.inject(Fault::BlockPort(2379)).unwrap();
    for route in ROUTES {
        only_2379_on(w, route);
    }
    w.nospace(CP[1], true);
    for route in ROUTES {
        nospace_on(w, route);
    }
    w.nospace(CP[1], false);
    // Disarmed: the 2379 block alone again.
    for route in ROUTES {
        w.expect_verdict(route, &[], SETTLE, VerdictCode::EtcdPeerNetworkPartial);
    }
    w.lab.heal().unwrap();
}

fn only_2379_on(w: &PastWorld, route: Route) {
    let (r, _) = w.expect_verdict(route, &[], SETTLE, VerdictCode::EtcdPeerNetworkPartial);
    assert!(
        r.verdict.summary.starts_with("only 2379 is blocked"),
        "{route:?}: {}",
        shown(&r)
    );
    assert!(
        evidence_has(&r, &["every 2380 path", "works"]),
        "{route:?}: {}",
        shown(&r)
    );
}

fn nospace_on(w: &PastWorld, route: Route) {
    let (r, _) = w.expect_verdict(route, &[], SETTLE, VerdictCode::EtcdNoSpace);
    // Said from the present: etcd's alarm list (3.4, 3.5) or /health's "ALARM NOSPACE" (3.5).
    assert!(
        evidence_has(&r, &["alarm list has NOSPACE raised"])
            || evidence_has(&r, &["/health says", "NOSPACE"]),
        "{route:?}: {}",
        shown(&r)
    );
}

// Long, the suite's longest: per etcd line one lab with the kubelet stand-in and four scenarios
// in sequence, each polled with real diagnoses on both routes while etcd notices a cut, kubelet
// kills and restarts members (three times, with back-off) and etcd elects again after the heal.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_3_4() {
    scenarios(EtcdVersion::V3_4);
}

// Long: as `etcd_3_4`.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_3_5() {
    scenarios(EtcdVersion::V3_5);
}
