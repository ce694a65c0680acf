//! The classifier on real etcd logs (tests/fixtures/etcd-logs/, described in its README.md):
//! each fault must come out as the kinds and peers that tell it apart from the others.

use std::collections::BTreeSet;
use std::path::Path;

use etcdnet::probe::etcdlog::{classify, classify_bytes, LogFormat, LogKind, LogSummary};

use LogKind::*;

const CP1: &str = "198.18.0.11:2380";
const CP2: &str = "198.18.0.12:2380";
const CP3: &str = "198.18.0.13:2380";
const ID1: &str = "9084a16ea99391a6";
const ID2: &str = "568f5d17e59791c3";
const ID3: &str = "ae214cf60ca034ac";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/etcd-logs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn summary(name: &str) -> LogSummary {
    classify(&fixture(name))
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The kind is there, with exactly these peer addresses, a count, and a sane time range.
fn has(s: &LogSummary, file: &str, kind: LogKind, addresses: &[&str]) {
    let f = s
        .finding(kind)
        .unwrap_or_else(|| panic!("{file}: no {kind:?}"));
    assert!(f.count > 0, "{file}: {kind:?} count");
    assert_eq!(
        f.peer_addresses,
        set(addresses),
        "{file}: {kind:?} addresses"
    );
    let (first, last) = (f.first.as_deref().unwrap(), f.last.as_deref().unwrap());
    assert!(first <= last, "{file}: {kind:?} {first} > {last}");
    assert!(s.first_ts.as_deref().unwrap() <= first && last <= s.last_ts.as_deref().unwrap());
    assert!(
        !f.example.is_empty() && f.example.len() <= 1010,
        "{file}: {kind:?} example"
    );
}

fn lacks(s: &LogSummary, file: &str, kinds: &[LogKind]) {
    for k in kinds {
        assert!(s.finding(*k).is_none(), "{file}: unexpected {k:?}");
    }
}

fn ids(s: &LogSummary, kind: LogKind) -> BTreeSet<String> {
    s.finding(kind)
        .map(|f| f.peer_ids.clone())
        .unwrap_or_default()
}

/// (file, local member, the two peers' addresses and IDs as this member sees them)
const MEMBERS: [(&str, &str, [&str; 2], [&str; 2]); 3] = [
    ("cp1", ID1, [CP2, CP3], [ID2, ID3]),
    ("cp2", ID2, [CP1, CP3], [ID1, ID3]),
    ("cp3", ID3, [CP1, CP2], [ID1, ID2]),
];

#[test]
fn every_real_log_is_zap_3_4_and_fully_parsed() {
    for fault in [
        "drop-all-peers",
        "reject-all-peers",
        "cp3-isolated",
        "cp2-etcd-stopped",
    ] {
        for (cp, local, _, _) in MEMBERS {
            let file = format!("{fault}-{cp}.log");
            let s = summary(&file);
            assert_eq!(s.format, LogFormat::Zap, "{file}");
            assert_eq!(s.lines, s.parsed_lines, "{file}: every line parsed");
            assert!(s.lines > 50, "{file}");
            assert_eq!(s.local_member_id.as_deref(), Some(local), "{file}");
            assert_eq!(s.etcd_version.as_deref(), Some("3.4.23"), "{file}");
            assert!(s.first_ts < s.last_ts, "{file}");
            assert!(s
                .first_ts
                .as_deref()
                .unwrap()
                .starts_with("2026-12-02T08:2"));
            for f in &s.findings {
                assert!(
                    !f.peer_ids.contains(local),
                    "{file}: {:?} names itself",
                    f.kind
                );
            }
            // Both peers became active at start-up in every scenario.
            assert_eq!(s.finding(PeerActive).map(|f| f.count), Some(2), "{file}");
        }
    }
}

/// nftables drop: silence, so timeouts ("i/o timeout"), never a refusal or a reset.
#[test]
fn drop_all_peers_is_timeouts_to_both_peers() {
    for (cp, _, peers, peer_ids) in MEMBERS {
        let file = format!("drop-all-peers-{cp}.log");
        let s = summary(&file);
        for kind in [IoTimeout, PeerInactive, PeerUnhealthy, LostStream] {
            has(&s, &file, kind, &peers);
            assert_eq!(ids(&s, kind), set(&peer_ids), "{file}: {kind:?} ids");
        }
        has(&s, &file, ElectionStarted, &[]);
        has(&s, &file, LeaderLost, &[]);
        lacks(
            &s,
            &file,
            &[
                ConnectionRefused,
                ConnectionReset,
                NoRouteToHost,
                PeerUrlUnreachable,
            ],
        );
    }
    let s = summary("drop-all-peers-cp1.log");
    assert_eq!(s.finding(IoTimeout).unwrap().count, 18);
    assert_eq!(s.finding(ElectionStarted).unwrap().count, 16);
    // cp2 was the leader when the drop began: it stepped down for lack of quorum.
    has(
        &summary("drop-all-peers-cp2.log"),
        "drop-all-peers-cp2.log",
        LeaderSteppedDown,
        &[],
    );
}

/// `reject with tcp reset`: new dials refused, open streams reset; never a timeout.
#[test]
fn reject_all_peers_is_refusals_and_resets() {
    for (cp, _, peers, peer_ids) in MEMBERS {
        let file = format!("reject-all-peers-{cp}.log");
        let s = summary(&file);
        has(&s, &file, ConnectionRefused, &peers);
        has(&s, &file, ConnectionReset, &peers);
        has(&s, &file, PeerUnhealthy, &peers);
        has(&s, &file, PeerInactive, &peers);
        assert_eq!(ids(&s, ConnectionRefused), set(&peer_ids), "{file}");
        has(&s, &file, ElectionStarted, &[]);
        lacks(&s, &file, &[IoTimeout, NoRouteToHost, PeerUrlUnreachable]);
        // 16 prober lines to peers, plus 4 grpc-go lines of the gateway dialling 127.0.0.1:2379
        // (also rejected), which name no peer.
        assert_eq!(s.finding(ConnectionRefused).unwrap().count, 20, "{file}");
    }
}

/// Only cp3 cut off: cp1 and cp2 name cp3 alone (and keep quorum: no election storm); cp3 names both.
#[test]
fn cp3_isolated_names_only_cp3_from_the_majority() {
    for cp in ["cp1", "cp2"] {
        let file = format!("cp3-isolated-{cp}.log");
        let s = summary(&file);
        for kind in [IoTimeout, PeerInactive, PeerUnhealthy, LostStream] {
            has(&s, &file, kind, &[CP3]);
            assert_eq!(ids(&s, kind), set(&[ID3]), "{file}: {kind:?}");
        }
        lacks(
            &s,
            &file,
            &[
                ConnectionRefused,
                ConnectionReset,
                LeaderLost,
                LeaderSteppedDown,
            ],
        );
    }
    // cp1 (the leader) also asked cp3 for its version over the peer URL.
    has(
        &summary("cp3-isolated-cp1.log"),
        "cp3-isolated-cp1.log",
        PeerUrlUnreachable,
        &[CP3],
    );

    let file = "cp3-isolated-cp3.log";
    let s = summary(file);
    for kind in [IoTimeout, PeerInactive, PeerUnhealthy, LostStream] {
        has(&s, file, kind, &[CP1, CP2]);
    }
    has(&s, file, LeaderLost, &[]);
    assert!(
        s.finding(ElectionStarted).unwrap().count >= 10,
        "cp3 campaigns alone"
    );
    lacks(&s, file, &[ConnectionRefused, ConnectionReset]);
}

/// cp2's etcd killed: refusals to cp2 only, and no timeouts; cp2's own log ends at its shutdown.
#[test]
fn cp2_stopped_is_refusals_to_cp2_only() {
    for cp in ["cp1", "cp3"] {
        let file = format!("cp2-etcd-stopped-{cp}.log");
        let s = summary(&file);
        has(&s, &file, ConnectionRefused, &[CP2]);
        has(&s, &file, PeerUnhealthy, &[CP2]);
        assert_eq!(ids(&s, ConnectionRefused), set(&[ID2]), "{file}");
        assert_eq!(ids(&s, PeerInactive), set(&[ID2]), "{file}");
        // The stream to cp2 ended with EOF (an orderly close), which names no address.
        has(&s, &file, LostStream, &[]);
        lacks(&s, &file, &[IoTimeout, ConnectionReset, NoRouteToHost]);
    }
    has(
        &summary("cp2-etcd-stopped-cp1.log"),
        "cp2-etcd-stopped-cp1.log",
        PeerUrlUnreachable,
        &[CP2],
    );

    let file = "cp2-etcd-stopped-cp2.log";
    let s = summary(file);
    lacks(
        &s,
        file,
        &[ConnectionRefused, IoTimeout, PeerUnhealthy, ConnectionReset],
    );
    assert_eq!(
        ids(&s, PeerInactive),
        set(&[ID1, ID3]),
        "its streams were cancelled on stop"
    );
}

/// Cut logs at every 97th byte (a torn last line, a torn UTF-8 sequence, a torn CRLF or CRI
/// record): no panic, never more parsed lines than lines, and the findings only grow with the
/// prefix. One log per form: re-reading every prefix is quadratic, and debug builds are slow.
#[test]
fn truncations_of_real_logs() {
    for name in [
        "reject-all-peers-cp1.log",
        "lab-text-cp3-isolated-cp3.log",
        "sample-cri.log",
        "sample-crictl-timestamps.log",
    ] {
        let bytes = fixture(name).into_bytes();
        let mut last_count = 0;
        for cut in (0..bytes.len()).step_by(97) {
            let s = classify_bytes(&bytes[..cut]);
            assert!(s.parsed_lines <= s.lines, "{name}: {cut}");
            let count: usize = s.findings.iter().map(|f| f.count).sum();
            assert!(count >= last_count, "{name}: {cut}");
            last_count = count;
        }
        assert!(last_count > 0, "{name}");
    }
}

fn kinds(s: &LogSummary) -> Vec<LogKind> {
    s.findings.iter().map(|f| f.kind).collect()
}

/// 3.4's default text logger, from the lab: the same faults must read the same as in zap.
#[test]
fn lab_text_logs_read_like_their_zap_twins() {
    let file = "lab-text-cp3-isolated-cp1.log";
    let s = summary(file);
    assert_eq!(s.format, LogFormat::Text, "{file}");
    assert_eq!(
        (s.local_member_id.as_deref(), s.etcd_version.as_deref()),
        (Some(ID1), Some("3.4.23"))
    );
    // Only the "[WARNING] Deprecated '--logger=capnslog' flag" banner lines are not log lines.
    assert_eq!(s.lines - s.parsed_lines, 2, "{file}");
    has(&s, file, IoTimeout, &[CP3]);
    has(&s, file, PeerUnhealthy, &[CP3]);
    // The text form puts the error on the line before "became inactive": no address on this one.
    has(&s, file, PeerInactive, &[]);
    assert_eq!(ids(&s, PeerInactive), set(&[ID3]));
    assert_eq!(ids(&s, IoTimeout), set(&[ID3]));
    lacks(&s, file, &[ConnectionRefused, ConnectionReset, LeaderLost]);

    let file = "lab-text-cp3-isolated-cp3.log";
    let s = summary(file);
    has(&s, file, IoTimeout, &[CP1, CP2]);
    has(&s, file, PeerUnhealthy, &[CP1, CP2]);
    has(&s, file, LeaderLost, &[]);
    // raft's own lines (`raft2026/12/02 … INFO: … is starting a new election`) are read too.
    assert!(s.finding(ElectionStarted).unwrap().count >= 10, "{file}");
    lacks(&s, file, &[ConnectionRefused]);

    let file = "lab-text-cp2-stopped-cp1.log";
    let s = summary(file);
    has(&s, file, ConnectionRefused, &[CP2]);
    has(&s, file, PeerUnhealthy, &[CP2]);
    assert_eq!(ids(&s, ConnectionRefused), set(&[ID2]));
    lacks(&s, file, &[IoTimeout, ConnectionReset]);
}

/// https peers in the lab (member IDs differ from the http clusters': the URLs feed the ID).
#[test]
fn lab_tls_certificate_faults() {
    let (tls2, tls3) = ("a0efed2619cd10db", "14569749fa01776e");
    let file = "lab-tls-cp1.log";
    let s = summary(file);
    assert_eq!(s.local_member_id.as_deref(), Some("71ea0ea03f1cc0b1"));
    // cp2's certificate names 198.18.0.21: cp1 says so when dialling cp2 and when cp2 dials in.
    has(&s, file, CertNameMismatch, &["198.18.0.12"]);
    assert_eq!(ids(&s, CertNameMismatch), set(&[tls2]));
    // cp3's certificate expired: its probes (no address in them) and its dials in.
    has(&s, file, CertExpired, &["198.18.0.13"]);
    assert_eq!(ids(&s, CertExpired), set(&[tls3]));
    has(
        &s,
        file,
        RejectedConnection,
        &["198.18.0.12", "198.18.0.13"],
    );
    lacks(
        &s,
        file,
        &[
            IoTimeout,
            ConnectionRefused,
            NoRouteToHost,
            CertNotYetValid,
            CertUnknownAuthority,
        ],
    );

    let file = "lab-tls-cp2.log";
    let s = summary(file);
    // The member with the wrong certificate hears "bad certificate" from both peers.
    has(&s, file, TlsRemoteError, &["198.18.0.11", "198.18.0.13"]);
    has(
        &s,
        file,
        RejectedConnection,
        &["198.18.0.11", "198.18.0.13"],
    );
    lacks(&s, file, &[CertNameMismatch, IoTimeout, ConnectionRefused]);
}

#[test]
fn hand_made_samples() {
    let file = "sample-3.4-text.log";
    let s = summary(file);
    assert_eq!(
        (s.format, s.lines, s.parsed_lines),
        (LogFormat::Text, 29, 29)
    );
    assert_eq!(s.local_member_id.as_deref(), Some(ID1));
    assert_eq!(
        kinds(&s),
        [
            PeerInactive,
            PeerActive,
            PeerUnhealthy,
            LostStream,
            PeerUrlUnreachable,
            IoTimeout,
            NoRouteToHost,
            TlsRemoteError,
            RejectedConnection,
            ClusterIdMismatch,
            MemberRemovedInfo,
            LeaderLost,
            ElectionStarted,
            LeaderSteppedDown,
            HeartbeatLate,
            SlowFdatasync,
            ApplySlow,
            NoSpace,
            ClockDrift,
        ]
    );
    has(&s, file, NoRouteToHost, &[CP3]);
    has(&s, file, IoTimeout, &[CP2]);
    has(&s, file, RejectedConnection, &["198.18.0.12"]);
    assert_eq!(ids(&s, HeartbeatLate), set(&[ID2]));
    // Active again after being inactive: the recovery is visible.
    let (inactive, active) = (
        s.finding(PeerInactive).unwrap(),
        s.finding(PeerActive).unwrap(),
    );
    assert!(active.last > inactive.last);

    let file = "sample-3.5-zap-tls.log";
    let s = summary(file);
    assert_eq!(
        (s.format, s.etcd_version.as_deref()),
        (LogFormat::Zap, Some("3.5.16"))
    );
    has(&s, file, CertNameMismatch, &["198.18.0.13"]);
    has(&s, file, CertExpired, &["198.18.0.11"]);
    has(&s, file, CertNotYetValid, &[]);
    has(&s, file, CertUnknownAuthority, &[CP1]);
    has(&s, file, TlsHandshakeTimeout, &[CP1]);
    has(&s, file, TlsRemoteError, &["198.18.0.13"]);
    // The client-endpoint rejection came from 127.0.0.1: never a peer.
    has(
        &s,
        file,
        RejectedConnection,
        &["198.18.0.11", "198.18.0.13"],
    );
    assert_eq!(s.finding(RejectedConnection).unwrap().count, 2);
    // ... and is a rejection on the client endpoint, a kind of its own (etcd 3.5.15+).
    assert_eq!(s.finding(ClientRejectedConnection).unwrap().count, 1);
    lacks(&s, file, &[IoTimeout, ConnectionRefused]);

    let file = "sample-3.5-zap-disk.log";
    let s = summary(file);
    // +0100 timestamps come out in UTC.
    assert_eq!(s.first_ts.as_deref(), Some("2026-11-30T09:12:30.101224Z"));
    assert_eq!(
        kinds(&s),
        [
            ClusterIdMismatch,
            MemberRemoved,
            MemberRemovedInfo,
            HeartbeatLate,
            SlowFdatasync,
            ApplySlow,
            NoSpace,
            ClockDrift,
            AlarmDisarmed
        ]
    );
    // "alarm raised" NOSPACE and "database space exceeded"; not "alarm disarmed".
    assert_eq!(s.finding(NoSpace).unwrap().count, 2);
    // The rejection names the removed member by id only; the routine "removed member" line has
    // its address.
    has(&s, file, MemberRemoved, &[]);
    assert_eq!(ids(&s, MemberRemoved), set(&[ID3]));
    has(&s, file, MemberRemovedInfo, &[CP3]);
    assert!(
        ids(&s, NoSpace).is_empty(),
        "the alarm's `from` is this member"
    );

    let file = "sample-cri.log";
    let s = summary(file);
    // 9 records: 2 `P` joined to their `F`, one stdout line that is no log line.
    assert_eq!((s.lines, s.parsed_lines, s.format), (9, 6, LogFormat::Zap));
    has(&s, file, PeerUrlUnreachable, &[CP3]);
    has(&s, file, NoRouteToHost, &[CP3]);
    has(&s, file, ConnectionRefused, &[CP2]);

    let file = "sample-crictl-timestamps.log";
    let s = summary(file);
    assert_eq!((s.lines, s.parsed_lines), (35, 35));
    has(&s, file, IoTimeout, &[CP3]);
    has(&s, file, PeerUrlUnreachable, &[CP3]);
    lacks(&s, file, &[ConnectionRefused]);
}

// The lab's captures, `v3.4/` and `v3.5/` (README.md there; regenerated by `etcdnet-lab
// capture-etcd-logs`): the same six faults on each etcd line, https peers with kubeadm's flags,
// every member's log as `crictl logs` gives it. What the lines share must read the same; where
// the lines differ, the tests say how.

/// The lab's member IDs: https peer URLs, so not the http clusters' (same as `lab-tls-*`).
const LAB_ID1: &str = "71ea0ea03f1cc0b1";
const LAB_ID2: &str = "a0efed2619cd10db";
const LAB_ID3: &str = "14569749fa01776e";

/// (member, its ID, the two peers' addresses and IDs as this member sees them)
const LAB_MEMBERS: [(&str, &str, [&str; 2], [&str; 2]); 3] = [
    ("cp1", LAB_ID1, [CP2, CP3], [LAB_ID2, LAB_ID3]),
    ("cp2", LAB_ID2, [CP1, CP3], [LAB_ID1, LAB_ID3]),
    ("cp3", LAB_ID3, [CP1, CP2], [LAB_ID1, LAB_ID2]),
];

/// (folder, the release its etcd reports)
const LAB_LINES: [(&str, &str); 2] = [("v3.4", "3.4.23"), ("v3.5", "3.5.1")];

const LAB_FAULTS: [&str; 6] = [
    "drop-all-peers",
    "reject-all-peers",
    "cp3-isolated",
    "cp2-etcd-stopped",
    "cp2-peer-cert-expired",
    "large-packets-dropped",
];

/// `<line>/<fault>-<member>.log` and its summary.
fn lab_capture(line: &str, fault: &str, member: &str) -> (String, LogSummary) {
    let file = format!("{line}/{fault}-{member}.log");
    let s = summary(&file);
    (file, s)
}

#[test]
fn every_lab_capture_is_zap_of_its_line_and_fully_parsed() {
    for (line, release) in LAB_LINES {
        for fault in LAB_FAULTS {
            for (cp, local, _, _) in LAB_MEMBERS {
                let (file, s) = lab_capture(line, fault, cp);
                assert_eq!(s.format, LogFormat::Zap, "{file}");
                assert_eq!(s.lines, s.parsed_lines, "{file}: every line parsed");
                assert!(s.lines > 50, "{file}");
                assert_eq!(s.local_member_id.as_deref(), Some(local), "{file}");
                assert_eq!(s.etcd_version.as_deref(), Some(release), "{file}");
                assert!(s.first_ts < s.last_ts, "{file}");
                for f in &s.findings {
                    assert!(
                        !f.peer_ids.contains(local),
                        "{file}: {:?} names itself",
                        f.kind
                    );
                }
                // Both peers became active at start-up, but for the member restarted with an
                // expired peer certificate (its new attempt's log): no peer ever accepts it.
                let active = s.finding(PeerActive).map(|f| f.count);
                if file.ends_with("cp2-peer-cert-expired-cp2.log") {
                    assert_eq!(active, None, "{file}");
                } else {
                    assert_eq!(active, Some(2), "{file}");
                }
            }
        }
    }
}

/// nftables drop on both lines: the prober's dials time out to both peers, elections follow.
/// 3.4 also loses its raft streams ("i/o timeout" on the stream read, 5 s) and marks the peers
/// inactive; 3.5 does neither within the 20 s: its stream transport sets `DialContext`, so the
/// read-timeout `Dial` that `NewTimeoutTransport` adds is never used (client/pkg/transport,
/// v3.5.1 to v3.5.17), and a silent peer's stream stays "established" for minutes (425 s in
/// the lab, until the writer's write deadline fails on a full send buffer).
#[test]
fn lab_drop_all_peers_is_timeouts_on_both_lines() {
    for (line, _) in LAB_LINES {
        for (cp, _, peers, peer_ids) in LAB_MEMBERS {
            let (file, s) = lab_capture(line, "drop-all-peers", cp);
            for kind in [IoTimeout, PeerUnhealthy] {
                has(&s, &file, kind, &peers);
                assert_eq!(ids(&s, kind), set(&peer_ids), "{file}: {kind:?} ids");
            }
            has(&s, &file, ElectionStarted, &[]);
            has(&s, &file, LeaderLost, &[]);
            lacks(
                &s,
                &file,
                &[
                    ConnectionRefused,
                    ConnectionReset,
                    NoRouteToHost,
                    TlsHandshakeTimeout,
                ],
            );
            if line == "v3.4" {
                for kind in [PeerInactive, LostStream] {
                    has(&s, &file, kind, &peers);
                    assert_eq!(ids(&s, kind), set(&peer_ids), "{file}: {kind:?} ids");
                }
            } else {
                lacks(&s, &file, &[PeerInactive, LostStream]);
            }
        }
    }
}

/// `reject with tcp reset`: refusals and resets to both peers, the same on both lines.
#[test]
fn lab_reject_all_peers_is_refusals_and_resets_on_both_lines() {
    for (line, _) in LAB_LINES {
        for (cp, _, peers, peer_ids) in LAB_MEMBERS {
            let (file, s) = lab_capture(line, "reject-all-peers", cp);
            for kind in [
                ConnectionRefused,
                ConnectionReset,
                PeerUnhealthy,
                PeerInactive,
                LostStream,
            ] {
                has(&s, &file, kind, &peers);
                assert_eq!(ids(&s, kind), set(&peer_ids), "{file}: {kind:?} ids");
            }
            has(&s, &file, ElectionStarted, &[]);
            has(&s, &file, LeaderLost, &[]);
            lacks(&s, &file, &[IoTimeout, NoRouteToHost, TlsHandshakeTimeout]);
            // No grpc-go lines here (the shared http captures have 4): the lab's reject rules
            // match the members' addresses only, so the gateway's dial to 127.0.0.1 gets through.
            assert!(s.finding(ConnectionRefused).unwrap().count >= 16, "{file}");
        }
    }
}

/// Only cp3 cut off: cp1 and cp2 name cp3 alone and keep quorum; cp3 names both and campaigns.
/// As with drop-all-peers, 3.5 has no PeerInactive / LostStream within the 20 s.
#[test]
fn lab_cp3_isolated_names_only_cp3_from_the_majority_on_both_lines() {
    for (line, _) in LAB_LINES {
        for cp in ["cp1", "cp2"] {
            let (file, s) = lab_capture(line, "cp3-isolated", cp);
            for kind in [IoTimeout, PeerUnhealthy] {
                has(&s, &file, kind, &[CP3]);
                assert_eq!(ids(&s, kind), set(&[LAB_ID3]), "{file}: {kind:?} ids");
            }
            lacks(
                &s,
                &file,
                &[ConnectionRefused, ConnectionReset, LeaderSteppedDown],
            );
            if line == "v3.4" {
                has(&s, &file, PeerInactive, &[CP3]);
                has(&s, &file, LostStream, &[CP3]);
            } else {
                lacks(&s, &file, &[PeerInactive, LostStream]);
            }
        }
        let (file, s) = lab_capture(line, "cp3-isolated", "cp3");
        for kind in [IoTimeout, PeerUnhealthy] {
            has(&s, &file, kind, &[CP1, CP2]);
            assert_eq!(ids(&s, kind), set(&[LAB_ID1, LAB_ID2]), "{file}: {kind:?}");
        }
        has(&s, &file, LeaderLost, &[]);
        assert!(
            s.finding(ElectionStarted).unwrap().count >= 10,
            "{file}: cp3 campaigns alone"
        );
        lacks(&s, &file, &[ConnectionRefused, ConnectionReset]);
        if line == "v3.5" {
            lacks(&s, &file, &[PeerInactive, LostStream]);
        }
    }
}

/// cp2's etcd killed (SIGKILL, as the lab's StopEtcd): refusals to cp2 only on both lines; the
/// stream to cp2 ended with EOF, which names no address. cp2's own log just stops: unlike the
/// shared capture (a clean stop that cancelled its streams) it says nothing of its peers.
#[test]
fn lab_cp2_stopped_is_refusals_to_cp2_only_on_both_lines() {
    for (line, _) in LAB_LINES {
        for cp in ["cp1", "cp3"] {
            let (file, s) = lab_capture(line, "cp2-etcd-stopped", cp);
            has(&s, &file, ConnectionRefused, &[CP2]);
            has(&s, &file, PeerUnhealthy, &[CP2]);
            has(&s, &file, LostStream, &[]);
            for kind in [ConnectionRefused, PeerUnhealthy, PeerInactive, LostStream] {
                assert_eq!(ids(&s, kind), set(&[LAB_ID2]), "{file}: {kind:?} ids");
            }
            lacks(&s, &file, &[IoTimeout, ConnectionReset, NoRouteToHost]);
        }
        let (file, s) = lab_capture(line, "cp2-etcd-stopped", "cp2");
        lacks(
            &s,
            &file,
            &[
                ConnectionRefused,
                IoTimeout,
                PeerUnhealthy,
                PeerInactive,
                LostStream,
            ],
        );
    }
}

/// cp2 restarted with an expired peer certificate: its peers reject its handshakes ("certificate
/// has expired", with the host they saw) and their probes of it fail on the expiry; cp2 hears
/// "bad certificate" from both. The same on both lines (3.5.1 still says "rejected connection",
/// as 3.4 does; 3.5.15 and later say "rejected connection on peer endpoint").
#[test]
fn lab_expired_peer_certificate_on_both_lines() {
    for (line, _) in LAB_LINES {
        for cp in ["cp1", "cp3"] {
            let (file, s) = lab_capture(line, "cp2-peer-cert-expired", cp);
            let expired = s
                .finding(CertExpired)
                .unwrap_or_else(|| panic!("{file}: no CertExpired"));
            assert_eq!(expired.peer_ids, set(&[LAB_ID2]), "{file}");
            assert!(
                expired.peer_addresses.contains("198.18.0.12"),
                "{file}: {:?}",
                expired.peer_addresses
            );
            let rejected = s.finding(RejectedConnection).unwrap();
            assert!(rejected.count > 100, "{file}: every dial of cp2 rejected");
            assert!(rejected.peer_addresses.contains("198.18.0.12"), "{file}");
            assert_eq!(ids(&s, PeerUnhealthy), set(&[LAB_ID2]), "{file}");
            lacks(
                &s,
                &file,
                &[
                    IoTimeout,
                    ConnectionRefused,
                    TlsRemoteError,
                    CertNameMismatch,
                ],
            );
        }
        let (file, s) = lab_capture(line, "cp2-peer-cert-expired", "cp2");
        has(&s, &file, TlsRemoteError, &["198.18.0.11", "198.18.0.13"]);
        assert_eq!(ids(&s, TlsRemoteError), set(&[LAB_ID1, LAB_ID3]), "{file}");
        has(
            &s,
            &file,
            RejectedConnection,
            &["198.18.0.11", "198.18.0.13"],
        );
        assert_eq!(ids(&s, PeerUnhealthy), set(&[LAB_ID1, LAB_ID3]), "{file}");
        // Its own certificate's expiry is in its peers' logs, not in its own.
        lacks(&s, &file, &[CertExpired, IoTimeout, ConnectionRefused]);
    }
}

/// An MTU black hole on the peer ports: TCP connects, TLS handshakes stall. Each member's
/// server side times out reading a peer's handshake ("rejected connection", `read tcp …: i/o
/// timeout`) on both lines. On 3.5 every probe of every peer ends in "net/http: TLS handshake
/// timeout" (the 10 s handshake bound: the 5 s read timeout is not applied, see drop-all-peers),
/// so its IoTimeout lines are the server side's only and name no member ID; on 3.4 probes over
/// connections opened before the fault may go on working (cp3 here saw no unhealthy peer).
#[test]
fn lab_large_packets_dropped_on_both_lines() {
    for (line, _) in LAB_LINES {
        for (cp, _, peers, peer_ids) in LAB_MEMBERS {
            let (file, s) = lab_capture(line, "large-packets-dropped", cp);
            let hosts: BTreeSet<String> = peers
                .iter()
                .map(|p| p.trim_end_matches(":2380").to_string())
                .collect();
            for kind in [IoTimeout, RejectedConnection] {
                let f = s
                    .finding(kind)
                    .unwrap_or_else(|| panic!("{file}: no {kind:?}"));
                // Each peer's host, bare (`remote-addr`) or with a port.
                let names = |h: &String| {
                    f.peer_addresses
                        .iter()
                        .any(|a| a == h || a.starts_with(&format!("{h}:")))
                };
                assert!(
                    hosts.iter().all(names),
                    "{file}: {kind:?} {:?}",
                    f.peer_addresses
                );
            }
            lacks(
                &s,
                &file,
                &[ConnectionRefused, ConnectionReset, PeerInactive, LostStream],
            );
            if line == "v3.5" {
                for kind in [TlsHandshakeTimeout, PeerUnhealthy] {
                    assert_eq!(ids(&s, kind), set(&peer_ids), "{file}: {kind:?} ids");
                }
                assert!(ids(&s, IoTimeout).is_empty(), "{file}");
            }
        }
    }
}
