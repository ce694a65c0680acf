//! The verdict on a control plane with a past: log lines older than the window, kubelet's
//! restarts during a partition, a member that is healthy again, an unreachable node beside a
//! partition, only 2379 blocked. Every node's clock reads 08:00:00 UTC; the window is 15 min.

use super::tests::*;
use super::*;
use crate::probe::output::*;
use crate::probe::{ReachError, ReachErrorKind};

/// 2026-12-04T08:00:00Z, epoch ms: the nodes' clocks at probe time.
const CLOCK: i64 = 1_796_371_200_000;

/// A zap line at `hh:mm:ss` on 2026-12-04 with the fields after `msg`.
fn at(hms: &str, level: &str, rest: &str) -> String {
    format!(r#"{{"level":"{level}","ts":"2026-12-04T{hms}.000Z","caller":"x",{rest}}}"#)
}

fn past3() -> Vec<ProbeOutput> {
    healthy3()
        .into_iter()
        .map(|mut p| {
            p.clock_ms = Some(CLOCK);
            p
        })
        .collect()
}

fn logged(p: ProbeOutput, lines: &[String]) -> ProbeOutput {
    with_log(p, &lines.join("\n"))
}

/// The newest container: `state`, restarted `attempt` times, created at 2026-12-04T`hms`Z.
fn container(p: &mut ProbeOutput, state: &str, attempt: u32, hms: &str) {
    p.etcd.containers = vec![Container {
        id: "c0ffee0000000000000000".into(),
        state: state.into(),
        attempt: Some(attempt),
        created_at: Some(format!("2026-12-04T{hms}Z")),
    }];
}

fn unhealthy(p: &mut ProbeOutput, body: &str) {
    p.health = Health {
        outcome: HealthOutcome::Unhealthy,
        http_status: Some(503),
        body: Some(body.into()),
        ms: Some(2),
        detail: None,
    };
}

fn nospace(hms: &str) -> String {
    at(
        hms,
        "warn",
        r#""msg":"alarm raised","alarm":"NOSPACE","from":"3a57933972cb5131""#,
    )
}

fn disarmed(hms: &str) -> String {
    at(
        hms,
        "warn",
        r#""msg":"alarm disarmed","alarm":"NOSPACE","from":"3a57933972cb5131""#,
    )
}

fn slow_fsync(hms: &str) -> String {
    at(
        hms,
        "warn",
        r#""msg":"slow fdatasync","took":"1.5s","expected-duration":"1s""#,
    )
}

fn no_leader(hms: &str) -> String {
    at(
        hms,
        "warn",
        r#""msg":"peer became inactive (message send to peer failed)","peer-id":"3a57933972cb5131","error":"failed to dial 3a57933972cb5131 on stream Message (dial tcp 198.18.0.12:2380: i/o timeout)""#,
    )
}

fn judge(p: Vec<ProbeOutput>) -> Verdict {
    diagnose(&facts(3), &cluster(p), DEFAULT_SINCE).verdict
}

#[test]
fn old_slow_fsyncs_are_history_not_a_slow_disk() {
    let mut p = past3();
    let old: Vec<String> = ["05:00:00", "05:00:01", "05:00:02", "05:00:03"]
        .iter()
        .map(|t| slow_fsync(t))
        .collect();
    p[0] = logged(p[0].clone(), &old);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "cp1 etcd log before 2026-12-04T07:45:00Z (history, outside --since 15m; not a reason for this verdict): slow fdatasync 4× (2026-12-04T05:00:00Z over 3s)"
        )),
        "{:#?}",
        v.notes
    );
    // The same four inside the window are a slow disk.
    let mut p = past3();
    let recent: Vec<String> = ["07:50:00", "07:51:00", "07:52:00", "07:53:00"]
        .iter()
        .map(|t| slow_fsync(t))
        .collect();
    p[0] = logged(p[0].clone(), &recent);
    assert_eq!(judge(p).code, VerdictCode::EtcdSlowDisk);
    // A longer --since reaches them too.
    let mut p = past3();
    p[0] = logged(p[0].clone(), &old);
    let v = diagnose(
        &facts(3),
        &cluster(p),
        std::time::Duration::from_secs(4 * 3600),
    )
    .verdict;
    assert_eq!(v.code, VerdictCode::EtcdSlowDisk, "{v:#?}");
}

#[test]
fn a_disarmed_nospace_is_history() {
    // Raised hours ago and disarmed: /health is true, the verdict Healthy.
    let mut p = past3();
    p[1] = logged(p[1].clone(), &[nospace("05:00:00"), disarmed("06:00:00")]);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes.iter().any(|n| n.contains("NOSPACE alarm 1×")),
        "{v:#?}"
    );

    // Disarmed inside the window, after a raise inside it: still over.
    let mut p = past3();
    p[1] = logged(p[1].clone(), &[nospace("07:50:00"), disarmed("07:55:00")]);
    assert_eq!(judge(p).code, VerdictCode::Healthy);
}

#[test]
fn nospace_is_the_present_alarm() {
    // etcd 3.5+ names the alarm in /health.
    let mut p = past3();
    unhealthy(&mut p[2], r#"{"health":"false","reason":"ALARM NOSPACE"}"#);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdNoSpace, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);

    // 3.4 does not: /health false and a raise hours ago with no disarm after it. The alarm is
    // kept in etcd's database across restarts, so it is still on.
    let mut p = past3();
    unhealthy(&mut p[2], r#"{"health":"false"}"#);
    p[2] = logged(p[2].clone(), &[nospace("03:00:00")]);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdNoSpace, "{v:#?}");
    assert!(
        v.evidence[0].contains(
            "the newest NOSPACE line (2026-12-04T03:00:00Z) has no \"alarm disarmed\" after it"
        ),
        "{v:#?}"
    );

    // A raise in the log but /health true: the alarm is not on.
    let mut p = past3();
    p[2] = logged(p[2].clone(), &[nospace("07:59:00")]);
    assert_eq!(judge(p).code, VerdictCode::Healthy);
}

/// The article's case with one VM restarted during the cut: its etcd is in kubelet's back-off
/// (exited, attempt 4), its log shows lost peers and no fatal reason, and every path between
/// the VMs times out. The network verdict, with the restarts as its evidence.
#[test]
fn restarted_during_the_cut_is_the_network() {
    let mut p = past3();
    peers_all(&mut p, TcpOutcome::Timeout);
    container(&mut p[1], "CONTAINER_EXITED", 4, "07:58:30");
    // Its own 2379 refuses: nothing listens while kubelet backs off.
    set(
        &mut p,
        1,
        1,
        2379,
        TcpOutcome::Refused,
        TlsOutcome::NotTried,
    );
    set(
        &mut p,
        1,
        1,
        2380,
        TcpOutcome::Refused,
        TlsOutcome::NotTried,
    );
    p[1] = logged(
        p[1].clone(),
        &[
            no_leader("07:58:31"),
            at(
                "07:58:40",
                "info",
                r#""msg":"received signal; shutting down","signal":"terminated""#,
            ),
        ],
    );
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| e.starts_with(
            "cp2: etcd restarted 4 times (newest container not running (CONTAINER_EXITED)); its log shows i/o timeouts, peers inactive, told to stop (SIGTERM), no fatal reason"
        )),
        "{v:#?}"
    );
    assert!(
        !v.summary.contains("every node reaches its own etcd"),
        "{v:#?}"
    );

    // The same member with a fatal reason of its own (a corrupt WAL) crash loops for it, but
    // the network among the others is still what keeps quorum away: network first.
    let fatal = at(
        "07:58:35",
        "fatal",
        r#""msg":"failed to read WAL","error":"walpb: crc mismatch""#,
    );
    let mut q = p.clone();
    q[1] = logged(q[1].clone(), std::slice::from_ref(&fatal));
    let v = judge(q);
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("also EtcdCrashLooping")),
        "{v:#?}"
    );

    // With the others reaching each other, the fatal reason decides: EtcdNotRunning (exited
    // once; more often it is EtcdCrashLooping).
    let mut q = past3();
    container(&mut q[1], "CONTAINER_EXITED", 1, "07:58:30");
    for to in [0, 2] {
        for port in [2379, 2380] {
            set(
                &mut q,
                1,
                to,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
            set(
                &mut q,
                to,
                1,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
        }
    }
    set(
        &mut q,
        1,
        1,
        2379,
        TcpOutcome::Refused,
        TlsOutcome::NotTried,
    );
    q[1] = logged(q[1].clone(), &[fatal]);
    let v = judge(q.clone());
    assert_eq!(v.code, VerdictCode::EtcdNotRunning, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| e.contains("failed to read WAL")),
        "{v:#?}"
    );
    // Without it, cp2 cut off is the network's doing.
    q[1] = logged(q[1].clone(), &[no_leader("07:58:31")]);
    let v = judge(q);
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "{v:#?}");
    assert!(v.summary.contains("cp2 cut off"), "{v:#?}");
}

/// Sets curl's words for node `i`'s path to its own IP on `port`.
fn own_detail(p: &mut [ProbeOutput], i: usize, port: u16, text: &str) {
    let own = (p[i].paths.iter_mut())
        .find(|x| x.target == IPS[i] && x.port == port)
        .unwrap();
    own.tls_detail = Some(text.into());
}

/// After the NSX fix: the member kubelet restarted runs again and /health is true. Not crash
/// looping, however recent its restarts: Healthy, with the restarts as a note.
/// The lab's etcd 3.5 under a full partition with kubelet on: every member killed at about the
/// same time, its own 2379 reset during the handshake (TCP accepted while it waited for a
/// leader, then the process went). The network verdict, not a certificate one.
#[test]
fn a_reset_while_kubelet_kills_the_member_is_no_certificate_problem() {
    let mut p = past3();
    peers_all(&mut p, TcpOutcome::Timeout);
    for i in 0..3 {
        container(&mut p[i], "CONTAINER_RUNNING", 3, "07:59:50");
        set(
            &mut p,
            i,
            i,
            2379,
            TcpOutcome::Connected,
            TlsOutcome::Rejected,
        );
        own_detail(
            &mut p,
            i,
            2379,
            "curl: (35) Recv failure: Connection reset by peer",
        );
        p[i] = logged(p[i].clone(), &[no_leader("07:59:55")]);
    }
    // OpenSSL's words for the same close on the peer port (etcd 3.5 in the lab).
    set(
        &mut p,
        2,
        2,
        2380,
        TcpOutcome::Connected,
        TlsOutcome::Rejected,
    );
    own_detail(
        &mut p,
        2,
        2380,
        "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 198.18.0.13:2380 ",
    );
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    // OpenSSL 3's words for a close without a reset, during the handshake.
    own_detail(
        &mut p,
        1,
        2379,
        "curl: (35) OpenSSL/3.0.19: error:0A000126:SSL routines::unexpected eof while reading",
    );
    // And a close after the handshake (the probe's words name a refused client certificate
    // under TLS 1.3 as one cause; the member going away is the other): nothing names a
    // certificate, so not a certificate verdict.
    own_detail(&mut p, 0, 2379, "closed after the handshake, no HTTP answer (a refused client certificate under TLS 1.3): curl: (56) Recv failure: Connection reset by peer");
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    // The same close is a refused certificate when the member's log says which (etcd logs
    // "rejected connection" with the x509 error when it refuses one).
    let mut q = p.clone();
    q[0] = logged(
        q[0].clone(),
        &[
            no_leader("07:59:55"),
            at(
                "07:59:56",
                "warn",
                r#""msg":"rejected connection on client endpoint","remote-addr":"198.18.0.11:40118","server-name":"","error":"tls: failed to verify certificate: x509: certificate signed by unknown authority""#,
            ),
        ],
    );
    let v = judge(q);
    assert_eq!(v.code, VerdictCode::EtcdCertificateProblem, "{v:#?}");
    // Or when curl names the alert the member sent (Go's crypto/tls refuses with one).
    own_detail(&mut p, 0, 2379, "curl: (56) OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000412:SSL routines::sslv3 alert bad certificate, errno 0");
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdCertificateProblem, "{v:#?}");
    // But a reset that curl met asking the socket for its peer, after the handshake and before
    // the request (the lab's etcd 3.4, killed by kubelet during the cut), is the listener gone.
    own_detail(&mut p, 0, 2379, "closed after the handshake, no HTTP answer (a refused client certificate under TLS 1.3): curl: (55) getpeername() failed with errno 107: Transport endpoint is not connected");
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
}

#[test]
fn healthy_again_after_restarts_is_healthy() {
    let mut p = past3();
    container(&mut p[1], "CONTAINER_RUNNING", 6, "07:57:00");
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes.iter().any(|n| n
            == "cp2: etcd was restarted 6 times before; the newest container runs since 2026-12-04T07:57:00Z and /health is true"),
        "{v:#?}"
    );
}

#[test]
fn crash_looping_needs_a_reason_of_its_own_or_a_working_network() {
    // Restarting, not healthy, the network fine: crash looping.
    let mut p = past3();
    container(&mut p[2], "CONTAINER_RUNNING", 5, "07:59:00");
    unhealthy(&mut p[2], r#"{"health":"false"}"#);
    assert_eq!(judge(p).code, VerdictCode::EtcdCrashLooping);

    // The same while every path times out, no fatal line: the network.
    let mut p = past3();
    peers_all(&mut p, TcpOutcome::Timeout);
    container(&mut p[2], "CONTAINER_RUNNING", 5, "07:59:00");
    unhealthy(&mut p[2], r#"{"health":"false"}"#);
    p[2] = logged(p[2].clone(), &[no_leader("07:59:10")]);
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");

    // A fatal line of its own in the window: crash looping for it, said after the network
    // that keeps cp1 and cp2 apart.
    p[2] = logged(
        p[2].clone(),
        &[at(
            "07:59:20",
            "panic",
            r#""msg":"failed to recover v3 backend from snapshot","error":"failed to find database snapshot file (snap: snapshot file doesn't exist)""#,
        )],
    );
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("also EtcdCrashLooping")),
        "{v:#?}"
    );
    // The same line hours ago is history: the network alone.
    p[2] = logged(
        p[2].clone(),
        &[at(
            "03:59:20",
            "panic",
            r#""msg":"failed to recover v3 backend from snapshot","error":"x""#,
        )],
    );
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(!v.evidence.iter().any(|e| e.starts_with("also ")), "{v:#?}");
}

/// One VM hung, the other two cut from each other: the network, with the hung VM in its
/// evidence; fixing the VM alone would not restore quorum.
#[test]
fn an_unreachable_node_does_not_hide_the_network() {
    let mut p = past3();
    peers_all(&mut p, TcpOutcome::Timeout);
    let mut nodes = cluster(p);
    nodes[2].outcome = Err(ReachError {
        kind: ReachErrorKind::Unreachable,
        message: "ssh: connect to host 198.18.0.13 port 22: Connection timed out".into(),
    });
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(v
        .summary
        .contains("besides, 1 of 3 control-plane nodes could not be probed: cp3"));
    assert!(
        v.evidence.iter().any(|e| e.contains("cp3: unreachable")),
        "{v:#?}"
    );
    assert!(
        v.next_steps[0].starts_with("The members that run (cp1, cp2) cannot reach each other"),
        "{v:#?}"
    );
}

/// Only 2379 blocked between the VMs, 2380 fine: said as such, and a NOSPACE is not hidden.
#[test]
fn only_2379_blocked_lets_the_later_rules_decide() {
    let mut p = past3();
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                set(
                    &mut p,
                    from,
                    to,
                    2379,
                    TcpOutcome::Timeout,
                    TlsOutcome::NotTried,
                );
            }
        }
    }
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "{v:#?}");
    assert!(v.summary.starts_with("only 2379 is blocked"), "{v:#?}");
    unhealthy(&mut p[0], r#"{"health":"false","reason":"ALARM NOSPACE"}"#);
    assert_eq!(judge(p).code, VerdictCode::EtcdNoSpace);
}

#[test]
fn many_elections_are_a_warning_on_healthy() {
    let mut p = past3();
    let changes: Vec<String> = (0..6)
        .map(|i| {
            at(
                &format!("07:5{i}:00"),
                "info",
                r#""logger":"raft","msg":"raft.node: 8e9e05c52164694d changed leader from 8e9e05c52164694d to 3a57933972cb5131 at term 5""#,
            )
        })
        .collect();
    p[0] = logged(p[0].clone(), &changes);
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("warning: unstable: 6 elections in 15m (cp1's etcd log)")),
        "{v:#?}"
    );
    // Two are a rollout's, not instability.
    p[0] = logged(p[0].clone(), &changes[..2]);
    assert!(judge(p).notes.iter().all(|n| !n.starts_with("warning:")));
}

/// etcd's own clock check in the window: a warning on any verdict, and evidence beside an
/// expired certificate (the node that judged it may be the one whose clock is off).
#[test]
fn clock_drift_is_a_warning_and_explains_certificates() {
    let drift = at(
        "07:59:00",
        "warn",
        r#""msg":"prober found high clock drift","remote-peer-id":"3a57933972cb5131","clock-drift":"3.2s","rtt":"1ms""#,
    );
    let mut p = past3();
    p[0] = logged(p[0].clone(), std::slice::from_ref(&drift));
    let v = judge(p.clone());
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "warning: clocks disagree: cp1's etcd found its clock over 1 s off 3a57933972cb5131's"
        )),
        "{v:#?}"
    );
    p[0].certs[0].expires_in_s = Some(-5);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdCertificateProblem, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("warning: clocks disagree")),
        "{v:#?}"
    );
}

/// etcd's alarm list, where the node could ask it, says what is on now.
#[test]
fn the_alarm_list_is_the_present() {
    let list = |alarms: Vec<Alarm>| Alarms {
        outcome: QueryOutcome::Ok,
        http_status: Some(200),
        alarms,
        truncated: false,
        ms: Some(3),
        detail: None,
    };
    let mut p = past3();
    unhealthy(&mut p[0], r#"{"health":"false"}"#);
    p[0].alarms = list(vec![Alarm {
        member_id: "8e9e05c52164694d".parse().ok(),
        alarm: "NOSPACE".into(),
    }]);
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdNoSpace, "{v:#?}");
    assert!(v.evidence[0].contains("alarm list has NOSPACE raised (member 8e9e05c52164694d)"));

    // The list answered without NOSPACE: an undisarmed raise in the log is not the present.
    let mut p = past3();
    unhealthy(&mut p[0], r#"{"health":"false"}"#);
    p[0].alarms = list(vec![]);
    p[0] = logged(p[0].clone(), &[nospace("07:00:00")]);
    assert_ne!(judge(p).code, VerdictCode::EtcdNoSpace);
}

/// A restarted member's reason is in the previous container's log: read with the current one.
#[test]
fn the_previous_containers_log_is_read() {
    let mut p = past3();
    container(&mut p[2], "CONTAINER_RUNNING", 5, "07:59:50");
    unhealthy(&mut p[2], r#"{"health":"false"}"#);
    p[2] = logged(
        p[2].clone(),
        &[at("07:59:51", "info", r#""msg":"starting etcd""#)],
    );
    p[2].etcd.previous_logs = Some(LogSample {
        container_id: "prev".into(),
        text: at(
            "07:59:40",
            "fatal",
            r#""msg":"failed to open database","error":"open /var/lib/etcd/member/snap/db: permission denied""#,
        ),
        lines: 1,
        truncated: false,
    });
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdCrashLooping, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| e.contains("permission denied")),
        "{v:#?}"
    );
}

/// Beside `Healthy`, a condition that is not `True` is the Supervisor's last report, with its age
/// against the probes' clock (08:00:00): a stale note, not evidence of the verdict.
#[test]
fn conditions_beside_healthy_carry_their_age() {
    let mut facts = facts(3);
    let mut c = crate::testing::condition(
        "EtcdMemberHealthy",
        "False",
        "EtcdMemberUnhealthy",
        "etcdserver: no leader",
    );
    c.last_transition_time = Some("2026-12-04T07:56:00Z".into());
    facts.nodes[0].machine.as_mut().unwrap().etcd_conditions = vec![c];
    let v = diagnose(&facts, &cluster(past3()), DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        !v.evidence.iter().any(|e| e.contains("Machine condition")),
        "{:#?}",
        v.evidence
    );
    assert_eq!(
        v.notes.last().unwrap(),
        "cp1: Machine condition EtcdMemberHealthy is False (EtcdMemberUnhealthy: etcdserver: no leader) (since 2026-12-04T07:56:00Z, 4m ago): stale, the Supervisor's last report, not what was seen now (KCP updates it once it reaches the workload API again)"
    );
}

/// The certificate rule reads curl's words after the probe's own prefix for a close after the
/// handshake (which names a refused certificate as one cause): probe.sh must write that prefix
/// word for word, or every such close would read as a certificate problem again.
#[test]
fn the_probes_prefix_for_a_close_after_the_handshake_is_the_one_the_rule_strips() {
    let prefix = super::certificate_problem::CLOSED_AFTER_HANDSHAKE;
    // The plugin judges the path checks (src/probe/paths.rs) and writes the prefix there.
    assert!(
        include_str!("../../probe/paths.rs").contains(&format!("\"{prefix}{{fin}}\"")),
        "probe/paths.rs no longer writes {prefix:?}"
    );
}
