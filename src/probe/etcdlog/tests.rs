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
        // 3.5.1 (v3.5/cp2-peer-cert-expired-cp1.log): one wording for both endpoints.
        (r#"{"level":"warn","ts":"2026-12-03T08:42:03.795Z","caller":"embed/config_logging.go:169","msg":"rejected connection","remote-addr":"198.18.0.11:48008","server-name":"","error":"EOF"}"#.into(), &[RejectedConnection]),
        // 3.5.15+: a client's rejection is not a peer's.
        (zap(r#""msg":"rejected connection on client endpoint","remote-addr":"198.18.0.20:40118","server-name":"","error":"tls: failed to verify certificate: x509: certificate signed by unknown authority""#), &[ClientRejectedConnection, CertUnknownAuthority]),
        // 3.5 listener_tls.go checkSAN(): kubeadm peer certificates carry DNS names.
        (zap(r#""msg":"rejected connection on peer endpoint","remote-addr":"198.18.0.12:52314","server-name":"","ip-addresses":["198.18.0.21"],"dns-names":["cp2"],"error":"tls: \"198.18.0.12\" does not match any of DNSNames [\"cp2\" \"localhost\"]""#), &[RejectedConnection, CertNameMismatch]),
        (r#"2026-11-30 09:12:44.123456 I | embed: rejected connection from "198.18.0.12:52314" (error "remote error: tls: bad certificate", ServerName "")"#.into(), &[TlsRemoteError, RejectedConnection]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is after 2026-11-01T00:00:00Z""#), &[PeerUnhealthy, CertExpired]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid""#), &[PeerUnhealthy, CertExpired]),
        (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is before 2027-01-01T00:00:00Z""#), &[PeerUnhealthy, CertNotYetValid]),
        (zap(r#""msg":"peer became inactive (message send to peer failed)","error":"failed to dial 3a57933972cb5131 on stream Message (x509: certificate is valid for 198.18.0.21, not 198.18.0.12)""#), &[PeerInactive, CertNameMismatch]),
        (zap(r#""msg":"request cluster ID mismatch","remote-peer-cluster-id":"1b3a5b1e0c2f9d11""#), &[ClusterIdMismatch]),
        (format!("{TXT}rafthttp: request sent was ignored (cluster ID mismatch: remote[3a57933972cb5131]=1b3a5b1e0c2f9d11, local=cdf818194e3a8c32)"), &[ClusterIdMismatch]),
        // The conf change every member logs on each machine replacement: routine.
        (zap(r#""msg":"removed member","removed-remote-peer-id":"3a57933972cb5131","removed-remote-peer-urls":["https://198.18.0.12:2380"]"#), &[MemberRemovedInfo]),
        (format!("{TXT}etcdserver/membership: removed member 3a57933972cb5131 from cluster cdf818194e3a8c32"), &[MemberRemovedInfo]),
        (zap(r#""msg":"skipped removing already removed member","removed-remote-peer-id":"3a57933972cb5131""#), &[]),
        (zap(r#""msg":"skipped attributes update of removed member","member-id":"3a57933972cb5131""#), &[]),
        // What a removed member that still talks gets: rejections.
        (zap(r#""msg":"failed to dial","error":"the member has been permanently removed from the cluster""#), &[MemberRemoved]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/http.go:394","msg":"rejected stream from remote peer because it was removed","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-from":"a0efed2619cd10db"}"#.into(), &[MemberRemoved]),
        (format!("{TXT}rafthttp: rejected the stream from peer 3a57933972cb5131 since it was removed"), &[MemberRemoved]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:993","msg":"rejected Raft message from removed member","local-member-id":"71ea0ea03f1cc0b1","removed-member-id":"a0efed2619cd10db"}"#.into(), &[MemberRemoved]),
        (format!("{TXT}etcdserver: reject message from removed member 3a57933972cb5131"), &[MemberRemoved]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:1462","msg":"server error","error":"the member has been permanently removed from the cluster"}"#.into(), &[MemberRemoved]),
        // A peer we do not know dialled us / a peer that does not know us.
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/http.go:413","msg":"failed to find remote peer in cluster","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-from":"a0efed2619cd10db","cluster-id":"9fcc4ae5a1c5c9e4"}"#.into(), &[MemberUnknown]),
        (format!("{TXT}rafthttp: failed to find member 3a57933972cb5131 in cluster cdf818194e3a8c32"), &[MemberUnknown]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/stream.go:682","msg":"failed to dial remote peer","from":"71ea0ea03f1cc0b1","to":"a0efed2619cd10db","address":"https://198.18.0.12:2380","error":"peer a0efed2619cd10db failed to find local node 71ea0ea03f1cc0b1"}"#.into(), &[MemberUnknown]),
        // An IP reused by a new VM: messages for the old member ID reach the new member.
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/http.go:426","msg":"ignored streaming request; ID mismatch","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-header":"3a57933972cb5131","remote-peer-id-from":"a0efed2619cd10db","cluster-id":"9fcc4ae5a1c5c9e4"}"#.into(), &[MemberIdMismatch]),
        (format!("{TXT}rafthttp: streaming request ignored (ID mismatch got 3a57933972cb5131 want 8e9e05c52164694d)"), &[MemberIdMismatch]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:1001","msg":"rejected Raft message to mismatch member","local-member-id":"71ea0ea03f1cc0b1","mismatch-member-id":"3a57933972cb5131"}"#.into(), &[MemberIdMismatch]),
        (r#"{"level":"fatal","ts":"2026-12-03T08:42:13.892Z","caller":"etcdmain/etcd.go:204","msg":"discovery failed","error":"member 71ea0ea03f1cc0b1 has already been bootstrapped","stacktrace":"…"}"#.into(), &[MemberAlreadyBootstrapped, Fatal]),
        // etcdmain/etcd.go: a joining member that reaches no peer exits "discovery failed".
        (r#"{"level":"fatal","ts":"2026-12-03T08:42:13.892Z","caller":"etcdmain/etcd.go:204","msg":"discovery failed","error":"cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs"}"#.into(), &[FatalUnreachable]),
        // The same exit when the error names the dial that failed.
        (r#"{"level":"fatal","ts":"2026-12-03T08:42:13.892Z","caller":"etcdmain/etcd.go:204","msg":"discovery failed","error":"dial tcp 198.18.0.12:2380: i/o timeout"}"#.into(), &[IoTimeout, FatalUnreachable]),
        // A fatal line of the member's own: a corrupt WAL.
        (r#"{"level":"fatal","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/storage.go:95","msg":"failed to read WAL","error":"walpb: crc mismatch"}"#.into(), &[Fatal]),
        ("2026-11-30 09:12:44.123456 C | etcdmain: open /var/lib/etcd/member/snap/db: permission denied".into(), &[Fatal]),
        (zap(r#""msg":"failed to verify flags","error":"invalid value \"x\" for flag -heartbeat-interval""#), &[Fatal]),
        (format!("{TXT}etcdmain: error verifying flags, flag provided but not defined: -foo. See 'etcd --help'."), &[Fatal]),
        ("flag provided but not defined: -foo".into(), &[Fatal]),
        ("panic: runtime error: invalid memory address or nil pointer dereference".into(), &[Fatal]),
        ("fatal error: concurrent map writes".into(), &[Fatal]),
        (zap(r#""msg":"received signal; shutting down","signal":"terminated""#), &[Terminated]),
        (format!("{TXT}osutil: received terminated signal, shutting down..."), &[Terminated]),
        // v3.5/cp2-peer-cert-expired-cp2.log
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:2048","msg":"failed to publish local member to cluster through raft","local-member-id":"a0efed2619cd10db","local-member-attributes":"{Name:cp2 ClientURLs:[https://198.18.0.12:2379]}","request-path":"/0/members/a0efed2619cd10db/attributes","publish-timeout":"7s","error":"etcdserver: request timed out"}"#.into(), &[PublishFailed]),
        (format!("{TXT}raft: raft.node: 8e9e05c52164694d lost leader 3a57933972cb5131 at term 5"), &[LeaderLost]),
        // v3.5/cp2-peer-cert-expired-cp1.log: 3.5's raft lines come through zap.
        (r#"{"level":"info","ts":"2026-12-03T08:42:08.186Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 lost leader a0efed2619cd10db at term 2"}"#.into(), &[LeaderLost]),
        (r#"{"level":"info","ts":"2026-12-03T08:42:03.765Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader a0efed2619cd10db at term 2"}"#.into(), &[LeaderElected]),
        ("raft2026/12/02 14:20:01 INFO: raft.node: 9084a16ea99391a6 elected leader 9084a16ea99391a6 at term 3".into(), &[LeaderElected]),
        // v3.4 capture (raft/node.go through zap); 3.5 says the same through zap_raft.go.
        (r#"{"level":"info","ts":"2026-12-03T08:40:27.171Z","caller":"raft/node.go:329","msg":"raft.node: a0efed2619cd10db changed leader from a0efed2619cd10db to 14569749fa01776e at term 3"}"#.into(), &[LeaderChanged]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdhttp/metrics.go:167","msg":"serving /health false; no leader"}"#.into(), &[NoLeader]),
        (format!("{TXT}etcdhttp: /health error; no leader (status code 503)"), &[NoLeader]),
        (r#"{"level":"info","ts":"2026-12-03T08:42:13.892Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"71ea0ea03f1cc0b1 no leader at term 3; dropping proposal"}"#.into(), &[NoLeader]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/util.go:166","msg":"apply request took too long","took":"7s","expected-duration":"100ms","prefix":"read-only range ","request":"key:\"/registry/health\" ","response":"","error":"etcdserver: no leader"}"#.into(), &[NoLeader, ApplySlow]),
        (format!("{TXT}raft: 8e9e05c52164694d is starting a new election at term 5"), &[ElectionStarted]),
        ("raft2026/12/02 14:20:01 INFO: 9084a16ea99391a6 is starting a new election at term 3".into(), &[ElectionStarted]),
        (format!("{TXT}raft: 8e9e05c52164694d became candidate at term 6"), &[]),
        (zap(r#""msg":"8e9e05c52164694d stepped down to follower since quorum is not active""#), &[LeaderSteppedDown]),
        (zap(r#""msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","to":"3a57933972cb5131""#), &[HeartbeatLate]),
        (format!("{TXT}etcdserver: failed to send out heartbeat on time (exceeded the 100ms timeout for 1.2s, to 3a57933972cb5131)"), &[HeartbeatLate]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/v3_server.go:932","msg":"timed out waiting for read index response (local node might have slow network)","timeout":"7s"}"#.into(), &[ReadIndexTimeout]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/peer.go:267","msg":"dropped internal Raft message since sending buffer is full (overloaded network)","message-type":"MsgHeartbeat","local-member-id":"71ea0ea03f1cc0b1","from":"71ea0ea03f1cc0b1","remote-peer-id":"a0efed2619cd10db","remote-peer-name":"pipeline","remote-peer-active":false}"#.into(), &[BufferFull]),
        (r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/stream.go:530","msg":"dropped internal Raft message since receiving buffer is full (overloaded network)","message-type":"MsgApp","local-member-id":"71ea0ea03f1cc0b1","from":"a0efed2619cd10db","remote-peer-id":"a0efed2619cd10db","remote-peer-active":true}"#.into(), &[BufferFull]),
        (format!("{TXT}rafthttp: dropped internal raft message to 3a57933972cb5131 since pipeline's sending buffer is full (bad/overloaded network)"), &[BufferFull]),
        (zap(r#""msg":"slow fdatasync","took":"1.5s","expected-duration":"1s""#), &[SlowFdatasync]),
        (format!("{TXT}wal: sync duration of 1.5s, expected less than 1s"), &[SlowFdatasync]),
        (zap(r#""msg":"apply request took too long","took":"1.2s","prefix":"read-only range ""#), &[ApplySlow]),
        (format!(r#"{TXT}etcdserver: read-only range request "key:\"/registry/pods\" " with result "range_response_count:0 size:5" took too long (1.2s) to execute"#), &[ApplySlow]),
        (zap(r#""msg":"alarm raised","alarm":"NOSPACE","from":"3a57933972cb5131""#), &[NoSpace]),
        (format!("{TXT}etcdserver: alarm NOSPACE raised by peer 3a57933972cb5131"), &[NoSpace]),
        (zap(r#""msg":"alarm disarmed","alarm":"NOSPACE""#), &[AlarmDisarmed]),
        (zap(r#""msg":"failed to apply request","error":"etcdserver: mvcc: database space exceeded""#), &[NoSpace]),
        (zap(r#""msg":"failed to apply request","error":"etcdserver: no space""#), &[NoSpace]),
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

/// One zap line behind every wrapper (CRI, crictl, kubectl `--prefix`, a `P…F` run), garbage and
/// a cut line.
pub(crate) fn wrapped_log() -> String {
    let inner = r#"{"level":"warn","ts":"2026-11-30T09:12:44.100Z","msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"dial tcp 198.18.0.12:2380: i/o timeout"}"#;
    let (a, b) = inner.split_at(60);
    format!(
        "\u{feff}2026-11-30T09:12:44.1Z stderr F {inner}\r\n\
         2026-11-30T09:12:45.123456789Z {}\n\
         [pod/etcd-cp1/etcd] {}\n\
         2026-11-30T09:12:46.0Z stderr P {a}\n2026-11-30T09:12:46.0Z stderr F {b}\n\
         garbage\n\n{}",
        inner.replace("44.100", "45.100"),
        inner.replace("44.100", "43.100"),
        &inner[..90],
    )
}

#[test]
fn wrappers_and_summary() {
    let inner = r#"{"level":"warn","ts":"2026-11-30T09:12:44.100Z","msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"dial tcp 198.18.0.12:2380: i/o timeout"}"#;
    let s = classify(&wrapped_log());
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

/// The peer named by etcd 3.5's rows, from the fields and from the message text.
#[test]
fn peers_named_in_3_5_rows() {
    let ids = |l: &str| parse_line(l).unwrap().peer_ids;
    let one = |s: &str| BTreeSet::from([s.to_string()]);
    // raft's lines through zap carry the IDs in the message only.
    let l = r#"{"level":"info","ts":"2026-12-03T08:42:03.765Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader a0efed2619cd10db at term 2"}"#;
    assert!(ids(l).contains("a0efed2619cd10db"));
    let l = r#"{"level":"info","ts":"2026-12-03T08:40:27.171Z","caller":"raft/node.go:329","msg":"raft.node: a0efed2619cd10db changed leader from a0efed2619cd10db to 14569749fa01776e at term 3"}"#;
    assert!(ids(l).contains("14569749fa01776e"));
    let l = r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:993","msg":"rejected Raft message from removed member","local-member-id":"71ea0ea03f1cc0b1","removed-member-id":"a0efed2619cd10db"}"#;
    assert_eq!(ids(l), one("a0efed2619cd10db"));
    let l = r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"etcdserver/server.go:1001","msg":"rejected Raft message to mismatch member","local-member-id":"71ea0ea03f1cc0b1","mismatch-member-id":"3a57933972cb5131"}"#;
    assert_eq!(ids(l), one("3a57933972cb5131"));
    let l = format!("{TXT}etcdserver: reject message from removed member 3a57933972cb5131");
    assert_eq!(ids(&l), one("3a57933972cb5131"));
    let l = format!(
        "{TXT}rafthttp: failed to find member 3a57933972cb5131 in cluster cdf818194e3a8c32"
    );
    assert_eq!(ids(&l), one("3a57933972cb5131"));
    let l = r#"{"level":"warn","ts":"2026-12-03T08:42:13.892Z","caller":"rafthttp/stream.go:682","msg":"failed to dial remote peer","address":"https://198.18.0.12:2380","error":"peer a0efed2619cd10db failed to find local node 71ea0ea03f1cc0b1"}"#;
    assert!(ids(l).contains("a0efed2619cd10db"));
    // The SAN check names the peer's IP in its error; the port of remote-addr is ephemeral.
    let l = parse_line(&zap(r#""msg":"rejected connection on peer endpoint","server-name":"","error":"tls: \"198.18.0.12\" does not match any of DNSNames [\"cp2\" \"localhost\"]""#)).unwrap();
    assert_eq!(l.peer_addresses, one("198.18.0.12"));
    // A lost leader that was this member is not a peer.
    let s = classify(
        r#"{"level":"info","ts":"2026-12-03T08:42:00.000Z","caller":"etcdserver/server.go:1","msg":"starting","local-member-id":"71ea0ea03f1cc0b1"}
{"level":"info","ts":"2026-12-03T08:42:08.186Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 lost leader 71ea0ea03f1cc0b1 at term 2"}"#,
    );
    assert!(s.finding(LogKind::LeaderLost).unwrap().peer_ids.is_empty());
}

/// The leader view follows the raft lines by time: known after "elected/changed leader", none
/// after "lost leader", a no-leader line or an election; `since` is the start of the current run.
#[test]
fn leader_view() {
    let raft = |ts: &str, msg: &str| {
        format!(
            r#"{{"level":"info","ts":"2026-12-03T{ts}Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"{msg}"}}"#
        )
    };
    let log = [
        raft("08:41:35.100", "71ea0ea03f1cc0b1 is starting a new election at term 1"),
        raft("08:41:35.111", "raft.node: 71ea0ea03f1cc0b1 elected leader 14569749fa01776e at term 2"),
        raft("08:42:08.186", "raft.node: 71ea0ea03f1cc0b1 lost leader 14569749fa01776e at term 2"),
        raft("08:42:09.000", "71ea0ea03f1cc0b1 is starting a new election at term 2"),
        r#"{"level":"warn","ts":"2026-12-03T08:42:10.000Z","caller":"etcdhttp/metrics.go:167","msg":"serving /health false; no leader"}"#.to_string(),
    ]
    .join("\n");
    let v = classify(&log).leader.unwrap();
    assert_eq!(v.state, LeaderState::NoLeader);
    assert_eq!(v.leader_id, None);
    assert_eq!(v.since.as_deref(), Some("2026-12-03T08:42:08.186000Z"));
    assert_eq!(
        v.last_change.as_deref(),
        Some("2026-12-03T08:42:08.186000Z")
    );
    assert_eq!((v.term, v.changes), (Some(2), 1));
    // Recovery: a new leader, then a change of leader (flapping shows in `changes`).
    let log = format!(
        "{log}\n{}\n{}",
        raft("08:42:12.000", "raft.node: 71ea0ea03f1cc0b1 elected leader 71ea0ea03f1cc0b1 at term 3"),
        raft("08:42:20.000", "raft.node: 71ea0ea03f1cc0b1 changed leader from 71ea0ea03f1cc0b1 to a0efed2619cd10db at term 4"),
    );
    let v = classify(&log).leader.unwrap();
    assert_eq!(v.state, LeaderState::Known);
    assert_eq!(v.leader_id.as_deref(), Some("a0efed2619cd10db"));
    assert_eq!(v.since.as_deref(), Some("2026-12-03T08:42:20.000000Z"));
    assert_eq!((v.term, v.changes), (Some(4), 3));
    // An older line (out of order) is history: it does not change the state.
    let log = format!(
        "{log}\n{}",
        raft(
            "08:41:00.000",
            "raft.node: 71ea0ea03f1cc0b1 lost leader 14569749fa01776e at term 1"
        )
    );
    assert_eq!(classify(&log).leader.unwrap().state, LeaderState::Known);
    // No leader line at all: no view.
    assert_eq!(
        classify(r#"{"level":"info","msg":"peer became active"}"#).leader,
        None
    );
    // 3.4's text form: raft's Go-log lines.
    let v = classify("raft2026/12/02 14:20:01 INFO: raft.node: 9084a16ea99391a6 elected leader 3a57933972cb5131 at term 3").leader.unwrap();
    assert_eq!(v.leader_id.as_deref(), Some("3a57933972cb5131"));
}

/// On the lab's etcd 3.5.1 captures: the isolated member has no leader, the majority keeps one.
#[test]
fn leader_view_on_the_3_5_captures() {
    let read = |f: &str| {
        let path = format!(
            "{}/tests/fixtures/etcd-logs/v3.5/{f}.log",
            env!("CARGO_MANIFEST_DIR")
        );
        classify(&std::fs::read_to_string(path).unwrap())
            .leader
            .unwrap()
    };
    let cp3 = read("cp3-isolated-cp3");
    assert_eq!(cp3.state, LeaderState::NoLeader);
    assert_eq!(cp3.since, cp3.last_change, "no leader since it lost it");
    for cp in ["cp1", "cp2"] {
        let v = read(&format!("cp3-isolated-{cp}"));
        assert_eq!(v.state, LeaderState::Known, "{cp}");
        assert_eq!(v.leader_id.as_deref(), Some("a0efed2619cd10db"), "{cp}");
    }
    for cp in ["cp1", "cp2", "cp3"] {
        assert_eq!(
            read(&format!("drop-all-peers-{cp}")).state,
            LeaderState::NoLeader,
            "{cp}"
        );
    }
    // Restarted with an expired certificate: campaigns, never hears of a leader.
    let v = read("cp2-peer-cert-expired-cp2");
    assert_eq!(
        (v.state, v.changes, v.last_change.as_deref()),
        (LeaderState::NoLeader, 0, None)
    );
}

/// The window: lines older than `since` before the probe's clock are history, the rest count;
/// an undated line takes the time of the line before it; without a clock the newest line ends it.
#[test]
fn window_splits_present_from_history() {
    let at = |ts: &str, msg: &str| {
        format!(r#"{{"level":"warn","ts":"{ts}","caller":"x","msg":"{msg}"}}"#)
    };
    let log = [
        at("2026-12-04T05:00:00.000Z", "slow fdatasync"),
        at(
            "2026-12-04T06:00:00.000Z",
            "alarm raised\",\"alarm\":\"NOSPACE",
        ),
        "panic: old".to_string(),
        at("2026-12-04T07:55:00.000Z", "slow fdatasync"),
        at("2026-12-04T07:58:00.000Z", "slow fdatasync"),
    ]
    .join("\n");
    // 08:00:00 UTC on the node.
    let clock = 1_796_371_200_000;
    assert_eq!(format_time(clock * 1000), "2026-12-04T08:00:00.000000Z");
    let s = classify_window(&log, Some(clock), std::time::Duration::from_secs(15 * 60));
    let w = s.window.as_ref().expect("a window");
    assert_eq!(w.since, "2026-12-04T07:45:00.000000Z");
    assert_eq!(w.until, "2026-12-04T08:00:00.000000Z");
    assert_eq!((w.seconds, w.until_from), (900, WindowEnd::ProbeClock));
    assert_eq!(s.finding(LogKind::SlowFdatasync).map(|f| f.count), Some(2));
    assert!(s.finding(LogKind::NoSpace).is_none());
    // The undated panic follows the 06:00 line into history.
    assert!(s.finding(LogKind::Fatal).is_none());
    let old: Vec<(LogKind, usize)> = s.history.iter().map(|f| (f.kind, f.count)).collect();
    assert_eq!(
        old,
        [
            (LogKind::SlowFdatasync, 1),
            (LogKind::NoSpace, 1),
            (LogKind::Fatal, 1)
        ]
    );
    assert_eq!(s.lines, 5);
    assert_eq!(s.first_ts.as_deref(), Some("2026-12-04T05:00:00.000000Z"));

    // No clock: the newest line ends the window.
    let s = classify_window(&log, None, std::time::Duration::from_secs(3600));
    let w = s.window.as_ref().expect("a window");
    assert_eq!(
        (w.until.as_str(), w.until_from),
        ("2026-12-04T07:58:00.000000Z", WindowEnd::LastLine)
    );
    assert_eq!(s.finding(LogKind::SlowFdatasync).map(|f| f.count), Some(2));

    // A window as long as the log: nothing is history, as classify() says.
    let all = classify_window(&log, Some(clock), std::time::Duration::from_secs(24 * 3600));
    assert!(all.history.is_empty());
    assert_eq!(all.findings, classify(&log).findings);

    // An undated line before any dated one counts as the present (it only adds a finding).
    let s = classify_window(
        "panic: first\n",
        Some(clock),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(s.finding(LogKind::Fatal).map(|f| f.count), Some(1));
    // No line at all and no clock: no window, nothing found.
    let s = classify_window("", None, std::time::Duration::from_secs(60));
    assert!(s.window.is_none() && s.findings.is_empty() && s.history.is_empty());
}

/// etcd 3.6, zap JSON (tests/fixtures/etcd-logs/sample-3.6-zap.log, written line by line from
/// etcd v3.6.0's source, cited in the fixtures' README): each line's kinds, the version, the
/// member's own ID, the peers.
#[test]
fn etcd_3_6_zap() {
    use LogKind::*;
    let log = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/etcd-logs/sample-3.6-zap.log"
    ))
    .unwrap();
    let expect: &[(&str, &[LogKind])] = &[
        ("starting an etcd server", &[]),
        ("restarting local member", &[]),
        ("established TCP streaming connection", &[]),
        ("peer became active", &[PeerActive]),
        ("elected leader", &[LeaderElected]),
        ("lost TCP streaming connection", &[LostStream, IoTimeout]),
        ("peer became inactive", &[PeerInactive, IoTimeout]),
        (
            "prober detected unhealthy status",
            &[PeerUnhealthy, IoTimeout],
        ),
        ("sending buffer is full", &[BufferFull]),
        (
            "failed to reach the peer URL",
            &[PeerUrlUnreachable, IoTimeout],
        ),
        (
            "rejected connection on peer endpoint",
            &[IoTimeout, RejectedConnection],
        ),
        ("lost leader", &[LeaderLost]),
        ("is starting a new election", &[ElectionStarted]),
        ("serving /health false; no leader", &[NoLeader]),
        (
            "timed out waiting for read index response",
            &[ReadIndexTimeout],
        ),
        ("failed to send out heartbeat on time", &[HeartbeatLate]),
        ("slow fdatasync", &[SlowFdatasync]),
        ("apply request took too long", &[ApplySlow]),
        ("serving /health false due to an alarm", &[NoSpace]),
        ("received signal; shutting down", &[Terminated]),
    ];
    let lines: Vec<&str> = log.lines().collect();
    for (needle, want) in expect {
        let matching: Vec<&&str> = lines.iter().filter(|l| l.contains(needle)).collect();
        assert!(!matching.is_empty(), "no line with {needle:?}");
        for l in matching {
            assert_eq!(kinds(l), *want, "{l}");
        }
    }
    let s = classify(&log);
    assert_eq!(
        (
            s.format,
            s.etcd_version.as_deref(),
            s.local_member_id.as_deref()
        ),
        (LogFormat::Zap, Some("3.6.0"), Some("71ea0ea03f1cc0b1"))
    );
    assert_eq!(s.parsed_lines, lines.len());
    let cp3 = s.finding(PeerUnhealthy).unwrap();
    assert_eq!(
        cp3.peer_ids,
        BTreeSet::from(["14569749fa01776e".to_string()])
    );
    assert_eq!(
        cp3.peer_addresses,
        BTreeSet::from(["198.18.0.13:2380".to_string()])
    );
    // The rejection names the peer by its addresses only: remote-addr's host (the port is
    // ephemeral) and the far side of its handshake's read.
    assert_eq!(
        s.finding(RejectedConnection).unwrap().peer_addresses,
        BTreeSet::from(["198.18.0.13".to_string(), "198.18.0.13:51220".to_string()])
    );
    // The leader view: lost at term 8, no leader since.
    let leader = s.leader.as_ref().unwrap();
    assert_eq!(leader.state, LeaderState::NoLeader, "{leader:?}");
}

/// etcd 3.6's `--log-format console` (sample-3.6-console.log: lines of sample-3.6-zap.log as
/// zap's console encoder writes them): the same lines, kinds, peers and version as the JSON.
#[test]
fn etcd_3_6_console() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/etcd-logs/");
    let console = std::fs::read_to_string(format!("{dir}sample-3.6-console.log")).unwrap();
    let zap = std::fs::read_to_string(format!("{dir}sample-3.6-zap.log")).unwrap();
    let mut checked = 0;
    for c in console.lines() {
        let ts = c.split('\t').next().unwrap();
        let j = zap.lines().find(|l| l.contains(ts)).unwrap();
        let (c, j) = (parse_line(c).unwrap(), parse_line(j).unwrap());
        assert_eq!(
            (c.form, &c.ts, &c.level, &c.msg, &c.error),
            (j.form, &j.ts, &j.level, &j.msg, &j.error)
        );
        assert_eq!(
            (
                &c.peer_ids,
                &c.peer_addresses,
                &c.local_member_id,
                &c.etcd_version
            ),
            (
                &j.peer_ids,
                &j.peer_addresses,
                &j.local_member_id,
                &j.etcd_version
            )
        );
        assert_eq!(c.kinds(), j.kinds());
        assert!(c.raw.contains('\t'), "raw keeps the line as written");
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
    let s = classify(&console);
    assert_eq!(s.etcd_version.as_deref(), Some("3.6.0"));
    assert_eq!(s.format, LogFormat::Zap);
    // Behind the CRI file format too.
    let line = console.lines().find(|l| l.contains("prober")).unwrap();
    let cri = format!("2026-12-07T05:40:24.617300000Z stderr F {line}");
    assert_eq!(
        classify(&cri)
            .finding(LogKind::PeerUnhealthy)
            .map(|f| f.count),
        Some(1)
    );
    // Not console lines: a tab-separated line whose second field is no level, or one field.
    assert!(parse_line("2026-12-07T05:40:24.617225Z\tloud\tx.go:1\tmsg").is_none());
    assert!(parse_line("2026-12-07T05:40:24.617225Z\tinfo").is_none());
}
