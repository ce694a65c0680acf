//! Unit tests of the classifier: every pattern row, both timestamp forms, the wrappers, garbage.
use super::time::format_time;
use super::*;

const ZAP: &str = r#"{"level":"warn","ts":"2026-11-30T09:12:44.123456Z","caller":"x","#;
const TXT: &str = "2026-11-30 09:12:44.123456 W | ";

fn zap(rest: &str) -> String {
    format!("{ZAP}{rest}}}")
}
fn kinds(line: &str) -> Vec<LogKind> {
    parse_line(line).map(|l| l.kinds()).unwrap_or_default()
}

/// One line in, the kinds out: at least one case per pattern row, in both forms where etcd
/// has both. Messages as etcd v3.4.23 / v3.5.17 print them (see the table's comments).
#[test]
fn every_row() {
    use LogKind::*;
    let cases: &[(String, &[LogKind])] = &[
        (zap(r#""msg":"peer became inactive (message send to peer failed)","peer-id":"3a57933972cb5131","error":"failed to dial 3a57933972cb5131 on stream Message (dial tcp 198.18.0.12:2380: i/o timeout)""#), &[PeerInactive, IoTimeout]),
        (format!("{TXT}rafthttp: peer 3a57933972cb5131 became inactive (message send to peer failed)"), &[PeerInactive]),
        (format!("{TXT}rafthttp: failed to dial 3a57933972cb5131 on stream Message (dial tcp 198.18.0.12:2380: connect: no route to host)"), &[NoRouteToHost]),
        (zap(r#""msg":"peer became active","peer-id":"3a57933972cb5131""#), &[PeerActive]),
        (format!("{TXT}rafthttp: peer 3a57933972cb5131 became active"), &[PeerActive]),
        (format!("{TXT}raft: 8e9e05c52164694d became leader at term 3"), &[]),
        (format!("{TXT}rafthttp: health check for peer 3a57933972cb5131 could not connect: dial tcp 198.18.0.12:2380: i/o timeout"), &[PeerUnhealthy, IoTimeout]),
        (format!("{TXT}rafthttp: lost the TCP streaming connection with peer 3a57933972cb5131 (stream MsgApp v2 reader)"), &[LostStream]),
        (zap(r#""msg":"lost TCP streaming connection with remote peer","remote-peer-id":"3a57933972cb5131","error":"read tcp 198.18.0.11:41106->198.18.0.12:2380: read: connection reset by peer""#), &[LostStream, ConnectionReset]),
        (format!("{TXT}etcdserver: failed to reach the peerURL(http://198.18.0.12:2380) of member 3a57933972cb5131 (Get http://198.18.0.12:2380/version: dial tcp 198.18.0.12:2380: connect: connection refused)"), &[PeerUrlUnreachable, ConnectionRefused]),
        (zap(r#""msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"Get \"https://198.18.0.12:2380/raft/probing\": net/http: TLS handshake timeout""#), &[PeerUnhealthy, TlsHandshakeTimeout]),
        (zap(r#""msg":"peer became inactive (message send to peer failed)","peer-id":"3a57933972cb5131","error":"failed to dial 3a57933972cb5131 on stream MsgApp v2 (remote error: tls: bad certificate)""#), &[PeerInactive, TlsRemoteError]),
        (zap(r#""msg":"rejected connection on peer endpoint","remote-addr":"198.18.0.12:52314","server-name":"","error":"tls: failed to verify certificate: x509: certificate signed by unknown authority""#), &[RejectedConnection, CertUnknownAuthority]),
        (r#"2026-11-30 09:12:44.123456 I | embed: rejected connection from "198.18.0.12:52314" (error "remote error: tls: bad certificate", ServerName "")"#.into(), &[TlsRemoteError, RejectedConnection]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is after 2026-11-01T00:00:00Z""#), &[PeerUnhealthy, CertExpired]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid""#), &[PeerUnhealthy, CertExpired]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is before 2027-01-01T00:00:00Z""#), &[PeerUnhealthy, CertNotYetValid]),
        (zap(r#""msg":"peer became inactive (message send to peer failed)","error":"failed to dial 3a57933972cb5131 on stream Message (x509: certificate is valid for 198.18.0.21, not 198.18.0.12)""#), &[PeerInactive, CertNameMismatch]),
        (zap(r#""msg":"request cluster ID mismatch","remote-peer-cluster-id":"1b3a5b1e0c2f9d11""#), &[ClusterIdMismatch]),
        (format!("{TXT}rafthttp: request sent was ignored (cluster ID mismatch: remote[3a57933972cb5131]=1b3a5b1e0c2f9d11, local=cdf818194e3a8c32)"), &[ClusterIdMismatch]),
        (zap(r#""msg":"removed member","removed-remote-peer-id":"3a57933972cb5131","removed-remote-peer-urls":["https://198.18.0.12:2380"]"#), &[MemberRemoved]),
        (format!("{TXT}etcdserver/membership: removed member 3a57933972cb5131 from cluster cdf818194e3a8c32"), &[MemberRemoved]),
        (zap(r#""msg":"skipped removing already removed member","removed-remote-peer-id":"3a57933972cb5131""#), &[]),
        (zap(r#""msg":"failed to dial","error":"the member has been permanently removed from the cluster""#), &[MemberRemoved]),
        (format!("{TXT}raft: raft.node: 8e9e05c52164694d lost leader 3a57933972cb5131 at term 5"), &[LeaderLost]),
        (format!("{TXT}raft: 8e9e05c52164694d is starting a new election at term 5"), &[ElectionStarted]),
        ("raft2026/12/02 14:20:01 INFO: 9084a16ea99391a6 is starting a new election at term 3".into(), &[ElectionStarted]),
        (format!("{TXT}raft: 8e9e05c52164694d became candidate at term 6"), &[]),
        (zap(r#""msg":"8e9e05c52164694d stepped down to follower since quorum is not active""#), &[LeaderSteppedDown]),
        (zap(r#""msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","to":"3a57933972cb5131""#), &[HeartbeatLate]),
        (format!("{TXT}etcdserver: failed to send out heartbeat on time (exceeded the 100ms timeout for 1.2s, to 3a57933972cb5131)"), &[HeartbeatLate]),
        (zap(r#""msg":"slow fdatasync","took":"1.5s","expected-duration":"1s""#), &[SlowFdatasync]),
        (format!("{TXT}wal: sync duration of 1.5s, expected less than 1s"), &[SlowFdatasync]),
        (zap(r#""msg":"apply request took too long","took":"1.2s","prefix":"read-only range ""#), &[ApplySlow]),
        (format!(r#"{TXT}etcdserver: read-only range request "key:\"/registry/pods\" " with result "range_response_count:0 size:5" took too long (1.2s) to execute"#), &[ApplySlow]),
        (zap(r#""msg":"alarm raised","alarm":"NOSPACE","from":"3a57933972cb5131""#), &[NoSpace]),
        (format!("{TXT}etcdserver: alarm NOSPACE raised by peer 3a57933972cb5131"), &[NoSpace]),
        (zap(r#""msg":"alarm disarmed","alarm":"NOSPACE""#), &[]),
        (zap(r#""msg":"failed to apply request","error":"etcdserver: mvcc: database space exceeded""#), &[NoSpace]),
        (zap(r#""msg":"prober found high clock drift","remote-peer-id":"3a57933972cb5131","clock-drift":"1.5s""#), &[ClockDrift]),
        (format!("{TXT}rafthttp: the clock difference against peer 3a57933972cb5131 is too high [1.5s > 1s]"), &[ClockDrift]),
    ];
    for (line, want) in cases {
        assert_eq!(kinds(line), *want, "{line}");
    }
    // Every row of the table is reached by some case above.
    for (i, p) in PATTERNS.iter().enumerate() {
        let hit = cases
            .iter()
            .any(|(l, _)| parse_line(l).is_some_and(|l| p.matches(&l)));
        assert!(hit, "no case for row {i} ({:?})", p.kind);
    }
}

#[test]
fn peers_named() {
    let l = parse_line(&zap(r#""msg":"lost TCP streaming connection with remote peer","local-member-id":"9084a16ea99391a6","remote-peer-id":"568f5d17e59791c3","error":"read tcp 198.18.0.11:38242->198.18.0.12:2380: i/o timeout""#)).unwrap();
    assert_eq!(
        l.peer_addresses,
        BTreeSet::from(["198.18.0.12:2380".to_string()])
    );
    assert_eq!(l.peer_ids, BTreeSet::from(["568f5d17e59791c3".to_string()]));
    assert_eq!(l.local_member_id.as_deref(), Some("9084a16ea99391a6"));
    let l = parse_line(&format!("{TXT}rafthttp: failed to dial 3a57933972cb5131 on stream Message (x509: certificate is valid for 198.18.0.21, not 198.18.0.12)")).unwrap();
    assert_eq!(
        l.peer_addresses,
        BTreeSet::from(["198.18.0.12".to_string()])
    );
    assert_eq!(l.peer_ids, BTreeSet::from(["3a57933972cb5131".to_string()]));
    let l = parse_line(
        r#"{"msg":"rejected connection","remote-addr":"[fd00::12]:52314","error":"EOF"}"#,
    )
    .unwrap();
    assert_eq!(l.peer_addresses, BTreeSet::from(["fd00::12".to_string()]));
    let l = parse_line(r#"WARNING: 2026/12/02 08:26:30 [core] grpc: failed to connect to {127.0.0.1:2379}. Err: "dial tcp 127.0.0.1:2379: connect: connection refused""#).unwrap();
    assert!(l.peer_addresses.is_empty(), "loopback is not a peer");
    assert_eq!(l.kinds(), [LogKind::ConnectionRefused]);
    let l = parse_line(r#"{"msg":"failed to reach the peer URL","address":"https://[fd00::12]:2380/version","remote-member-id":"3a57933972cb5131"}"#).unwrap();
    assert_eq!(
        l.peer_addresses,
        BTreeSet::from(["[fd00::12]:2380".to_string()])
    );
}

#[test]
fn timestamps() {
    let ts = |l: &str| parse_line(l).and_then(|l| l.ts);
    let z = |t: &str| ts(&format!(r#"{{"ts":"{t}","msg":"m"}}"#));
    assert_eq!(
        z("2026-12-02T08:27:03.102Z").as_deref(),
        Some("2026-12-02T08:27:03.102000Z")
    );
    assert_eq!(
        z("2026-11-30T10:12:44.123456+0100").as_deref(),
        Some("2026-11-30T09:12:44.123456Z")
    );
    assert_eq!(
        z("2026-01-01T00:30:00.5+01:00").as_deref(),
        Some("2025-12-31T23:30:00.500000Z")
    );
    assert_eq!(
        z("2024-02-28T23:00:00.000-0130").as_deref(),
        Some("2024-02-29T00:30:00.000000Z")
    );
    assert_eq!(
        z("2026-11-30T09:12:44.123456789Z").as_deref(),
        Some("2026-11-30T09:12:44.123456Z")
    );
    assert_eq!(z("2026-13-30T09:12:44Z"), None);
    assert_eq!(z("yesterday"), None);
    let epoch = ts(r#"{"ts":1764493964.5,"msg":"m"}"#);
    assert_eq!(epoch.as_deref(), Some("2025-11-30T09:12:44.500000Z"));
    assert_eq!(
        ts(&format!("{TXT}raft: x")).as_deref(),
        Some("2026-11-30T09:12:44.123456Z")
    );
    assert_eq!(
        ts("WARNING: 2026/12/02 08:26:30 [core] x").as_deref(),
        Some("2026-12-02T08:26:30.000000Z")
    );
    assert_eq!(format_time(0), "1970-01-01T00:00:00.000000Z");
}

#[test]
fn text_form_details() {
    let l = parse_line("2026-11-30 09:12:44.123456 I | etcdmain: etcd Version: 3.4.23").unwrap();
    assert_eq!(
        (l.form, l.level.as_deref(), l.package.as_deref()),
        (LineForm::Text, Some("info"), Some("etcdmain"))
    );
    assert_eq!(l.etcd_version.as_deref(), Some("3.4.23"));
    let l = parse_line("2026-11-30 09:12:44.123456 I | etcdserver: starting member 8e9e05c52164694d in cluster cdf818194e3a8c32").unwrap();
    assert_eq!(l.local_member_id.as_deref(), Some("8e9e05c52164694d"));
    assert!(parse_line("2026-11-30 09:12:44.123456 X | raft: x").is_none());
    let l = parse_line("raft2026/12/02 14:20:00 WARN: 9084a16ea99391a6 stepped down to follower since quorum is not active").unwrap();
    assert_eq!(
        (l.form, l.level.as_deref(), l.package.as_deref()),
        (LineForm::Text, Some("warn"), Some("raft"))
    );
    assert_eq!(l.ts.as_deref(), Some("2026-12-02T14:20:00.000000Z"));
    assert_eq!(l.kinds(), [LogKind::LeaderSteppedDown]);
    assert!(parse_line("just words").is_none());
}

#[test]
fn wrappers_and_summary() {
    let inner = r#"{"level":"warn","ts":"2026-11-30T09:12:44.100Z","msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"dial tcp 198.18.0.12:2380: i/o timeout"}"#;
    let (a, b) = inner.split_at(60);
    let log = format!(
        "\u{feff}2026-11-30T09:12:44.1Z stderr F {inner}\r\n\
         2026-11-30T09:12:45.123456789Z {}\n\
         [pod/etcd-cp1/etcd] {}\n\
         2026-11-30T09:12:46.0Z stderr P {a}\n2026-11-30T09:12:46.0Z stderr F {b}\n\
         garbage\n\n{}",
        inner.replace("44.100", "45.100"),
        inner.replace("44.100", "43.100"),
        &inner[..90],
    );
    let s = classify(&log);
    assert_eq!((s.lines, s.parsed_lines, s.format), (7, 4, LogFormat::Zap));
    let f = s.finding(LogKind::PeerUnhealthy).unwrap();
    assert_eq!(f.count, 4);
    assert_eq!(f.first.as_deref(), Some("2026-11-30T09:12:43.100000Z"));
    assert_eq!(f.last.as_deref(), Some("2026-11-30T09:12:45.100000Z"));
    assert_eq!(
        s.findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
        [LogKind::PeerUnhealthy, LogKind::IoTimeout]
    );
    let mixed =
        format!("{inner}\n{TXT}raft: 8e9e05c52164694d is starting a new election at term 5\n");
    assert_eq!(classify(&mixed).format, LogFormat::Mixed);
    assert_eq!(classify("").format, LogFormat::Unknown);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["findings"][0]["kind"], "PeerUnhealthy");
    assert_eq!(json["findings"][1]["peerAddresses"][0], "198.18.0.12:2380");
    assert_eq!(json["parsedLines"], 4);
}

/// No input panics: random bytes, random splices of real line pieces, hostile shapes.
#[test]
fn total_on_noise() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    let pieces = [
        ZAP,
        TXT,
        "{",
        "}",
        "\"",
        "\\",
        ":",
        " | ",
        "dial tcp ",
        "->",
        "://",
        "[",
        "]",
        "peer ",
        "é",
        "\n",
        "\r",
        "1",
        "x509: certificate is valid for ",
        ", not ",
        "rejected connection from \"",
        "stderr P ",
        "2026-11-30T09:12:44Z ",
        "WARNING: ",
        "+99",
        ".",
        "-",
    ];
    for _ in 0..3000 {
        let mut bytes = Vec::new();
        for _ in 0..next() % 40 {
            if next() % 3 == 0 {
                bytes.push((next() % 256) as u8);
            } else {
                bytes.extend_from_slice(pieces[next() % pieces.len()].as_bytes());
            }
        }
        let s = classify_bytes(&bytes);
        assert!(s.parsed_lines <= s.lines + 1);
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    classify(&deep);
    classify(&format!(
        r#"{{"msg":{}1{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    ));
    // Long but under MAX_LINE, so they are parsed: the per-line work stays bounded.
    classify(&format!("{TXT}{}", "dial tcp 1.2.3.4:5->".repeat(12_000)));
    classify(&format!(
        "{ZAP}\"msg\":\"{}\"}}",
        "peer 3a57933972cb5131 http://".repeat(8_000)
    ));
}
