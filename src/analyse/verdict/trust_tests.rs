//! What one node's word may not decide about the others: its clock is not "now" for the
//! Supervisor's conditions.

use super::tests::*;
use super::*;

/// 2025-12-02T08:00:00Z, epoch ms: the honest nodes' clocks (`healthy_probe`).
const CLOCK: i64 = 1_764_662_400_000;

/// Facts whose cp1 Machine carries an `EtcdMemberHealthy False` condition from 07:56:00.
fn facts_with_condition() -> ClusterFacts {
    let mut facts = facts(3);
    let mut c = crate::testing::condition(
        "EtcdMemberHealthy",
        "False",
        "EtcdMemberUnhealthy",
        "etcdserver: no leader",
    );
    c.last_transition_time = Some("2025-12-02T07:56:00Z".into());
    facts.nodes[0].machine.as_mut().unwrap().etcd_conditions = vec![c];
    facts
}

/// Beside `Healthy` the condition is a stale note (never evidence of the verdict).
fn condition_line(d: &Diagnosis) -> String {
    d.verdict
        .notes
        .iter()
        .find(|l| l.contains("Machine condition EtcdMemberHealthy"))
        .unwrap_or_else(|| panic!("no condition line: {:#?}", d.verdict))
        .clone()
}

/// One node whose clock reads ten years ahead (or behind, or any i64) does not make the
/// Supervisor's condition ten years old: without the time of the read, "now" is the median of
/// the nodes' clocks, which one node cannot move past the others'.
#[test]
fn one_nodes_clock_is_not_now_for_the_conditions() {
    for lie in [CLOCK + 10 * 365 * 86_400_000, i64::MAX, 0, i64::MIN] {
        let mut probes = healthy3();
        probes[2].clock_ms = Some(lie);
        let d = diagnose(&facts_with_condition(), &cluster(probes), DEFAULT_SINCE);
        let line = condition_line(&d);
        assert!(line.contains(", 4m ago)"), "clock {lie}: {line}");
    }
}

/// With the time the plugin read the Supervisor, the ages are against it, whatever every
/// node's clock says (all three off by a year here).
#[test]
fn conditions_age_against_the_time_of_the_read() {
    let mut probes = healthy3();
    for p in &mut probes {
        p.clock_ms = Some(CLOCK + 365 * 86_400_000);
    }
    let read_at = humantime::parse_rfc3339("2025-12-02T08:00:00Z").unwrap();
    let d = diagnose_at(
        &facts_with_condition(),
        &cluster(probes.clone()),
        DEFAULT_SINCE,
        Some(read_at),
        None,
    );
    assert!(condition_line(&d).contains(", 4m ago)"), "{:#?}", d.verdict);
    // Without it, the nodes' (agreeing, wrong) clocks are all there is.
    let d = diagnose(&facts_with_condition(), &cluster(probes), DEFAULT_SINCE);
    assert!(
        condition_line(&d).contains(", 365d ago)"),
        "{:#?}",
        d.verdict
    );
}

// ---- a certificate verdict only from the end that logged it about that peer ----------------

/// A zap line of etcd 3.5 at 2025-12-02T`hms`Z with the fields after `msg`.
fn zap(hms: &str, rest: &str) -> String {
    format!(
        r#"{{"level":"warn","ts":"2025-12-02T{hms}.000Z","caller":"embed/config_logging.go:169",{rest}}}"#
    )
}

/// etcd's "rejected connection" for a client at `addr` whose certificate has expired (what an
/// honest member logs for whoever dials it with one; embed/config_logging.go).
fn rejected_expired(addr: &str) -> String {
    zap(
        "07:59:56",
        &format!(
            r#""msg":"rejected connection","remote-addr":"{addr}","server-name":"","error":"tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2025-12-02T07:59:56Z is after 2025-12-01T00:00:00Z""#
        ),
    )
}

/// cp1 → cp2:2380 connected and closed after the handshake with no word about a certificate
/// (the probe's own prefix, then curl's bare reset), every other path working.
fn bare_close_cp1_to_cp2() -> Vec<crate::probe::output::ProbeOutput> {
    use crate::probe::output::{TcpOutcome, TlsOutcome};
    let mut p = healthy3();
    set(
        &mut p,
        0,
        1,
        2380,
        TcpOutcome::Connected,
        TlsOutcome::Rejected,
    );
    let path = (p[0].paths.iter_mut())
        .find(|x| x.target == IPS[1] && x.port == 2380)
        .unwrap();
    path.tls_detail = Some(format!(
        "{}curl: (56) Recv failure: Connection reset by peer",
        certificate_problem::CLOSED_AFTER_HANDSHAKE
    ));
    path.http_status = None;
    p
}

fn code(p: Vec<crate::probe::output::ProbeOutput>) -> (VerdictCode, Verdict) {
    let v = run(p).verdict;
    (v.code, v)
}

/// An x509 line about a stranger's address in the log of an end of the failing path is no
/// certificate verdict on that path; the same line naming the path's other end is.
#[test]
fn an_x509_line_about_a_stranger_is_no_certificate_verdict() {
    let (c, v) = code(bare_close_cp1_to_cp2());
    assert_ne!(c, VerdictCode::EtcdCertificateProblem, "{v:#?}");

    // cp2 (the end that refused) logged an expired certificate of 10.20.0.7: not cp1.
    let mut p = bare_close_cp1_to_cp2();
    p[1] = with_log(p[1].clone(), &rejected_expired("10.20.0.7:40118"));
    let (c, v) = code(p);
    assert_ne!(c, VerdictCode::EtcdCertificateProblem, "{v:#?}");

    // The same line about cp1's address: cp2 refused cp1's certificate.
    let mut p = bare_close_cp1_to_cp2();
    p[1] = with_log(p[1].clone(), &rejected_expired("198.18.0.11:40118"));
    let (c, v) = code(p);
    assert_eq!(c, VerdictCode::EtcdCertificateProblem, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| e.starts_with("cp1 → cp2:2380: ")),
        "{v:#?}"
    );
}

/// A certificate line about the path's end in the log of a node that is not an end of it (cp3
/// refused cp1's certificate) says nothing about cp1 → cp2.
#[test]
fn a_third_nodes_line_is_not_about_the_path() {
    let mut p = bare_close_cp1_to_cp2();
    p[2] = with_log(p[2].clone(), &rejected_expired("198.18.0.11:40118"));
    let (c, v) = code(p);
    assert_ne!(c, VerdictCode::EtcdCertificateProblem, "{v:#?}");
}

/// The dialling end's line names the peer by member ID (a stream dial's error carries no
/// address): `remote error: tls: bad certificate` about cp2's ID (the one cp2's own log calls
/// local) is about the path; about another ID it is not.
#[test]
fn the_dialling_ends_line_counts_by_the_peers_member_id() {
    let cp2_id = "8e9e05c52164694d";
    let local = zap(
        "07:50:00",
        &format!(r#""msg":"starting raft instance","local-member-id":"{cp2_id}""#),
    );
    let dial = |id: &str| {
        zap(
            "07:59:57",
            &format!(
                r#""msg":"failed to dial","local-member-id":"aaaabbbbccccdddd","remote-peer-id":"{id}","error":"remote error: tls: bad certificate""#
            ),
        )
    };
    for (id, certificate) in [("fd422379fda50e48", false), (cp2_id, true)] {
        let mut p = bare_close_cp1_to_cp2();
        p[1] = with_log(p[1].clone(), &local);
        p[0] = with_log(p[0].clone(), &dial(id));
        let (c, v) = code(p);
        assert_eq!(
            c == VerdictCode::EtcdCertificateProblem,
            certificate,
            "{id}: {v:#?}"
        );
    }
}

/// A node's own path: its own log's line about its own address counts (the probe dials the
/// node's IP from the node), a stranger's does not.
#[test]
fn a_nodes_own_path_counts_its_own_address_only() {
    use crate::probe::output::{TcpOutcome, TlsOutcome};
    for (addr, certificate) in [("10.20.0.7:40118", false), ("198.18.0.11:40118", true)] {
        let mut p = healthy3();
        set(
            &mut p,
            0,
            0,
            2379,
            TcpOutcome::Connected,
            TlsOutcome::Rejected,
        );
        let path = (p[0].paths.iter_mut())
            .find(|x| x.target == IPS[0] && x.port == 2379)
            .unwrap();
        path.tls_detail = Some(format!(
            "{}curl: (56) Recv failure: Connection reset by peer",
            certificate_problem::CLOSED_AFTER_HANDSHAKE
        ));
        p[0] = with_log(p[0].clone(), &rejected_expired(addr));
        let (c, v) = code(p);
        assert_eq!(
            c == VerdictCode::EtcdCertificateProblem,
            certificate,
            "{addr}: {v:#?}"
        );
    }
}

/// With the lab's own logs (etcd 3.5, cp2's peer certificate expired: cp1 and cp3 log x509
/// lines about 198.18.0.12 only), a bare close between cp1 and cp3 is not a certificate
/// problem; the same close between cp1 and cp2 is (both ends logged it about each other). The
/// nodes' own certificates are left valid so that only the logs can decide.
#[test]
fn the_labs_x509_lines_about_cp2_decide_only_cp2s_paths() {
    use crate::probe::output::{TcpOutcome, TlsOutcome};
    // 2026-12-03T08:43:00Z: the lines of 08:42 are in the window.
    let clock = 1_796_287_380_000;
    for (to, certificate) in [(2usize, false), (1, true)] {
        let mut p = healthy3();
        for (i, probe) in p.iter_mut().enumerate() {
            probe.clock_ms = Some(clock);
            *probe = with_log(
                probe.clone(),
                &shared_log(&format!("v3.5/cp2-peer-cert-expired-cp{}", i + 1)),
            );
        }
        set(
            &mut p,
            0,
            to,
            2380,
            TcpOutcome::Connected,
            TlsOutcome::Rejected,
        );
        let path = (p[0].paths.iter_mut())
            .find(|x| x.target == IPS[to] && x.port == 2380)
            .unwrap();
        path.tls_detail = Some(format!(
            "{}curl: (56) Recv failure: Connection reset by peer",
            certificate_problem::CLOSED_AFTER_HANDSHAKE
        ));
        let (c, v) = code(p);
        assert_eq!(
            c == VerdictCode::EtcdCertificateProblem,
            certificate,
            "cp1 → cp{}: {v:#?}",
            to + 1
        );
    }
}
