//! The onset timeline on real etcd logs (tests/fixtures/etcd-logs) and on logs written here
//! in each form, with the nodes' clocks off by known amounts.

use super::*;
use crate::analyse::matrix;
use crate::probe::output::*;

pub(crate) const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];
pub(crate) const NAMES: [&str; 3] = ["cp1", "cp2", "cp3"];
/// The member IDs of the plain-http fixtures (tests/fixtures/etcd-logs/README.md).
pub(crate) const IDS: [&str; 3] = ["9084a16ea99391a6", "568f5d17e59791c3", "ae214cf60ca034ac"];
const CLOCK: i64 = 1_764_662_400_000;

pub(crate) fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/etcd-logs/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// `from` → `to` failing now since `onset` (no log line said more): the timelines the
/// renderers' and the watch's tests start from.
pub(crate) fn failing_pair(from: &str, to: &str, onset: Option<&str>) -> PairOnset {
    PairOnset {
        from: from.into(),
        to: to.into(),
        onset: onset.map(str::to_string),
        seen_by_from: None,
        seen_by_to: None,
        first_sign: None,
        at_or_before: false,
        earliest: None,
        failing_now: Some(true),
    }
}

/// Node `i`, its clock `skew_ms` off, its log `log`, every peer path in `failing` (to-index)
/// timed out on 2380.
pub(crate) fn node(i: usize, skew_ms: Option<i64>, log: &str, failing: &[usize]) -> NodeReport {
    let mut paths = Vec::new();
    for (j, ip) in IPS.iter().enumerate() {
        let down = failing.contains(&j);
        paths.push(PathCheck {
            target: ip.to_string(),
            port: 2380,
            own: i == j,
            tcp: if down {
                TcpOutcome::Timeout
            } else {
                TcpOutcome::Connected
            },
            tcp_ms: Some(1),
            tcp_detail: None,
            tls: if down {
                TlsOutcome::NotTried
            } else {
                TlsOutcome::Completed
            },
            tls_ms: None,
            tls_detail: None,
            http_status: None,
        });
    }
    let p = ProbeOutput {
        schema_version: PROBE_SCHEMA_VERSION,
        node_ip: IPS[i].into(),
        hostname: None,
        ips: vec![IPS[i].into()],
        clock_ms: skew_ms.map(|s| CLOCK + s),
        duration_ms: None,
        etcd: EtcdContainer {
            logs: Some(LogSample {
                container_id: "x".into(),
                text: log.into(),
                lines: log.lines().count() as u32,
                truncated: false,
            }),
            ..Default::default()
        },
        kubelet: Default::default(),
        paths,
        certs: vec![],
        manifest: None,
        health: Default::default(),
        members: Default::default(),
        alarms: Default::default(),
        firewall: Default::default(),
        metrics: None,
        api_server: None,
        errors: vec![],
        document_problems: vec![],
        raw: Default::default(),
    };
    NodeReport {
        name: NAMES[i].into(),
        ip: Some(IPS[i].parse().unwrap()),
        outcome: Ok(p),
        reach_from: None,
        reach: vec![],
        host_key: None,
    }
}

fn timeline_of(nodes: &[NodeReport]) -> Timeline {
    let logs: BTreeMap<String, LogSummary> = nodes
        .iter()
        .filter_map(|n| {
            let text = &n.probe()?.etcd.logs.as_ref()?.text;
            Some((n.name.clone(), etcdlog::classify(text)))
        })
        .collect();
    let matrices = vec![matrix::build(nodes, 2380)];
    build(
        &crate::testing::facts(3, 3, vec![]),
        nodes,
        &logs,
        &matrices,
        &BTreeMap::new(),
    )
}

/// A zap line of member `me` about peer `peer` at `ts`.
fn zap(me: usize, peer: usize, ts: &str, msg: &str) -> String {
    format!(
        r#"{{"level":"warn","ts":"{ts}","caller":"rafthttp/stream.go:436","msg":"{msg}","local-member-id":"{}","remote-peer-id":"{}","error":"read tcp {}:40000->{}:2380: i/o timeout"}}"#,
        IDS[me], IDS[peer], IPS[me], IPS[peer]
    )
}

/// capnslog text lines of 3.4's default logger.
fn text(ts: &str, msg: &str) -> String {
    format!("{ts} W | rafthttp: {msg}")
}

const EST: &str = "established TCP streaming connection with remote peer";
const LOST: &str = "lost TCP streaming connection with remote peer";

/// Every member's log from the lab's drop of all peers (3.4 zap, one fault at one moment):
/// one change, every ordered pair with an onset from both ends.
#[test]
fn drop_all_peers_is_one_change() {
    let nodes: Vec<NodeReport> = (0..3)
        .map(|i| {
            let others: Vec<usize> = (0..3).filter(|j| *j != i).collect();
            node(
                i,
                Some(0),
                &fixture(&format!("drop-all-peers-cp{}.log", i + 1)),
                &others,
            )
        })
        .collect();
    let t = timeline_of(&nodes);
    assert_eq!(t.shape, Some(Shape::OneChange), "{t:#?}");
    let summary = t.summary.clone().unwrap();
    assert!(summary.starts_with("all paths failed within "), "{summary}");
    assert!(summary.ends_with(" (one change)"), "{summary}");
    assert_eq!(t.pairs.len(), 6, "{t:#?}");
    for p in &t.pairs {
        assert!(p.seen_by_from.is_some() && p.seen_by_to.is_some(), "{p:?}");
        assert_eq!(p.failing_now, Some(true));
        let onset = p.onset.as_deref().unwrap();
        assert!(
            onset == p.seen_by_from.as_deref().unwrap()
                || onset == p.seen_by_to.as_deref().unwrap()
        );
        assert!(onset.as_bytes() <= p.seen_by_from.as_deref().unwrap().as_bytes());
        assert!(onset.as_bytes() <= p.seen_by_to.as_deref().unwrap().as_bytes());
    }
    // The earliest onset in any log is the summary's T.
    let first = t
        .pairs
        .iter()
        .filter_map(|p| p.onset.clone())
        .min()
        .unwrap();
    assert!(summary.contains(&first[..19]), "{summary} / {first}");
    // All three lost their leader.
    assert_eq!(t.no_leader.len(), 3, "{:?}", t.no_leader);
    assert!(t.clocks.iter().all(|c| c.trusted && c.offset_ms == Some(0)));
}

/// cp3 isolated (3.4 zap): only cp3's pairs, both directions; cp1↔cp2 never shows.
#[test]
fn cp3_isolated_names_only_its_pairs() {
    let fails = |i: usize| -> Vec<usize> {
        match i {
            2 => vec![0, 1],
            i => vec![2].into_iter().filter(|_| i != 2).collect(),
        }
    };
    let nodes: Vec<NodeReport> = (0..3)
        .map(|i| {
            node(
                i,
                Some(0),
                &fixture(&format!("cp3-isolated-cp{}.log", i + 1)),
                &fails(i),
            )
        })
        .collect();
    let t = timeline_of(&nodes);
    let pairs: Vec<(&str, &str)> = t
        .pairs
        .iter()
        .map(|p| (p.from.as_str(), p.to.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("cp1", "cp3"),
            ("cp2", "cp3"),
            ("cp3", "cp1"),
            ("cp3", "cp2")
        ],
        "{t:#?}"
    );
    assert_eq!(t.shape, Some(Shape::OneChange), "{t:#?}");
}

/// a↔b cut, then c 90 s later, each node's clock off by a different amount: the summary is
/// staggered, in order, each onset on the median's clock, c named as the node cut.
#[test]
fn staggered_with_skewed_clocks() {
    // Real times: cp1↔cp2 at 10:00:00, cp3 at 10:01:30. cp1's clock is 4 s ahead, cp2's 2 s
    // behind, cp3's exact (the median: 0).
    let logs = [
        // cp1 (+4 s): cp2 lost at 10:00:04 on its clock, cp3 at 10:01:34.
        [
            zap(0, 1, "2026-12-01T09:59:00Z", EST),
            zap(0, 2, "2026-12-01T09:59:00Z", EST),
            zap(0, 1, "2026-12-01T10:00:04Z", LOST),
            zap(0, 1, "2026-12-01T10:00:10Z", LOST),
            zap(0, 2, "2026-12-01T10:01:34Z", LOST),
        ]
        .join("\n"),
        // cp2 (-2 s): cp1 lost at 09:59:58 + 1 s of detection, cp3 at 10:01:28.
        [
            zap(1, 0, "2026-12-01T09:59:00Z", EST),
            zap(1, 2, "2026-12-01T09:59:00Z", EST),
            zap(1, 0, "2026-12-01T09:59:59Z", LOST),
            zap(1, 2, "2026-12-01T10:01:28Z", LOST),
        ]
        .join("\n"),
        // cp3 (exact), 3.4 text: both peers lost at 10:01:31.
        [
            text(
                "2026-12-01 09:59:00.000000",
                &format!(
                    "established a TCP streaming connection with peer {} (stream Message writer)",
                    IDS[0]
                ),
            ),
            text(
                "2026-12-01 09:59:00.000000",
                &format!(
                    "established a TCP streaming connection with peer {} (stream Message writer)",
                    IDS[1]
                ),
            ),
            text(
                "2026-12-01 10:01:31.000000",
                &format!(
                    "lost the TCP streaming connection with peer {} (stream Message reader)",
                    IDS[0]
                ),
            ),
            text(
                "2026-12-01 10:01:31.500000",
                &format!(
                    "peer {} became inactive (message send to peer failed)",
                    IDS[1]
                ),
            ),
        ]
        .join("\n"),
    ];
    let nodes = vec![
        node(0, Some(4_000), &logs[0], &[1, 2]),
        node(1, Some(-2_000), &logs[1], &[0, 2]),
        node(2, Some(0), &logs[2], &[0, 1]),
    ];
    let t = timeline_of(&nodes);
    assert_eq!(t.shape, Some(Shape::Staggered), "{t:#?}");
    assert_eq!(
        t.summary.as_deref(),
        Some("staggered: cp1↔cp2 at 2026-12-01T10:00:00Z, cp3 at 2026-12-01T10:01:30Z (+90 s)"),
        "{t:#?}"
    );
    let pair = |a: &str, b: &str| t.pairs.iter().find(|p| p.from == a && p.to == b).unwrap();
    // cp1 saw cp2 go at 10:00:04 on its clock, 10:00:00 on the median's; cp2 saw it at 10:00:01.
    assert_eq!(
        pair("cp1", "cp2").seen_by_from.as_deref(),
        Some("2026-12-01T10:00:00.000000Z")
    );
    assert_eq!(
        pair("cp1", "cp2").seen_by_to.as_deref(),
        Some("2026-12-01T10:00:01.000000Z")
    );
    assert_eq!(
        pair("cp1", "cp2").onset.as_deref(),
        Some("2026-12-01T10:00:00.000000Z")
    );
    assert_eq!(pair("cp1", "cp2").first_sign, Some(LogKind::LostStream));
    assert!(t.pairs.iter().all(|p| !p.at_or_before), "{t:#?}");
    assert_eq!(
        pair("cp3", "cp2").seen_by_from.as_deref(),
        Some("2026-12-01T10:01:31.500000Z")
    );
    // The pair's first sign is that of its earlier end: cp2's lost stream, not cp3's "inactive".
    assert_eq!(pair("cp3", "cp2").first_sign, Some(LogKind::LostStream));
    assert_eq!(
        pair("cp2", "cp3").onset.as_deref(),
        Some("2026-12-01T10:01:30.000000Z")
    );
    let offsets: Vec<Option<i64>> = t.clocks.iter().map(|c| c.offset_ms).collect();
    assert_eq!(offsets, [Some(4_000), Some(-2_000), Some(0)]);
}

/// A node whose clock was not read, or is far off, is named; a pair that works again in this
/// run's checks is over, whatever its log has not said yet.
#[test]
fn untrusted_clocks_and_the_present() {
    let log0 = [
        zap(0, 1, "2026-12-01T09:59:00Z", EST),
        zap(0, 1, "2026-12-01T10:00:00Z", LOST),
    ]
    .join("\n");
    let log1 = [
        zap(1, 0, "2026-12-01T09:59:00Z", EST),
        zap(1, 0, "2026-12-01T12:00:00Z", LOST),
    ]
    .join("\n");
    let nodes = vec![
        node(0, Some(0), &log0, &[1]),
        node(1, Some(7_200_000), &log1, &[0]),
        node(2, Some(0), "", &[]),
    ];
    let t = timeline_of(&nodes);
    let c1 = t.clocks.iter().find(|c| c.node == "cp2").unwrap();
    assert!(!c1.trusted, "{c1:?}");
    assert!(
        c1.note
            .as_deref()
            .unwrap()
            .contains("+7200000ms off the others'"),
        "{c1:?}"
    );
    assert!(t.clocks.iter().find(|c| c.node == "cp1").unwrap().trusted);
    // Corrected by its offset: cp2's 12:00 is the others' 10:00, the same change as cp1's.
    let p = t
        .pairs
        .iter()
        .find(|p| p.from == "cp2" && p.to == "cp1")
        .unwrap();
    assert_eq!(
        p.seen_by_from.as_deref(),
        Some("2026-12-01T10:00:00.000000Z")
    );
    assert_eq!(t.shape, Some(Shape::OneChange), "{t:#?}");
    // The same logs with the paths seen working now: nothing is failing.
    let healed = vec![node(0, Some(0), &log0, &[]), node(1, None, &log1, &[])];
    let t = timeline_of(&healed);
    assert!(t.pairs.is_empty(), "{t:#?}");
    assert_eq!(t.summary, None);
    // Logs that say nothing of a failing path: the pair is listed without an onset, no summary.
    let silent = vec![node(0, Some(0), "", &[1]), node(1, Some(0), "", &[0])];
    let t = timeline_of(&silent);
    assert_eq!(t.pairs.len(), 2, "{t:#?}");
    assert!(t.pairs.iter().all(|p| p.onset.is_none()));
    assert_eq!(t.summary, None);
    assert!(t.clocks.is_empty());
    // No log read at either end: the matrix says all there is, no timeline.
    let mut unread = silent.clone();
    for n in &mut unread {
        if let Ok(p) = n.outcome.as_mut() {
            p.etcd.logs = None;
        }
    }
    assert!(
        timeline_of(&unread).is_empty(),
        "{:#?}",
        timeline_of(&unread)
    );
    // A clock never read.
    let nodes = vec![node(0, None, &log0, &[1]), node(1, Some(0), &log1, &[0])];
    let t = timeline_of(&nodes);
    let c0 = t.clocks.iter().find(|c| c.node == "cp1").unwrap();
    assert_eq!((c0.trusted, c0.offset_ms), (false, None));
    assert!(c0.note.as_deref().unwrap().starts_with("no clock reading"));
}

/// KCP's "Last successful probe at" is read from the Machines' etcd conditions.
#[test]
fn last_successful_probe_from_the_machines() {
    let mut facts = crate::testing::facts(3, 3, vec![]);
    let mut n = crate::testing::node(1, crate::supervisor::PowerState::PoweredOn, true, "Running");
    if let Some(m) = n.machine.as_mut() {
        m.etcd_conditions = vec![crate::testing::condition(
            "EtcdMemberHealthy",
            "False",
            "EtcdMemberUnhealthy",
            "Etcd member cp1 is unhealthy: Last successful probe at 2025-06-03T08:13:52Z",
        )];
    }
    facts.nodes.push(n);
    let probes = last_probes(&facts);
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert_eq!(probes[0].at, "2025-06-03T08:13:52Z");
    assert_eq!(probes[0].condition, "EtcdMemberHealthy");
    assert!(last_probes(&crate::testing::facts(3, 3, vec![])).is_empty());
}

/// Clocks and times at the ends of what a node may write: no overflow, no panic.
#[test]
fn extreme_clocks_do_not_overflow() {
    let log = |me: usize, peer: usize| {
        [
            zap(me, peer, "0001-01-01T00:00:00Z", EST),
            zap(me, peer, "9999-12-31T23:59:59Z", LOST),
            zap(me, (peer + 1) % 3, "0001-01-01T00:00:01Z", LOST),
        ]
        .join("\n")
    };
    for (a, b) in [(i64::MAX, i64::MIN), (i64::MIN, 0), (0, i64::MAX)] {
        let mut nodes = vec![
            node(0, Some(0), &log(0, 1), &[1, 2]),
            node(1, Some(0), &log(1, 2), &[0, 2]),
            node(2, Some(0), &log(2, 0), &[0, 1]),
        ];
        for (n, c) in nodes.iter_mut().zip([a, b, a]) {
            n.outcome.as_mut().unwrap().clock_ms = Some(c);
        }
        let t = timeline_of(&nodes);
        assert!(!t.pairs.is_empty());
        assert!(t.clocks.iter().any(|c| !c.trusted), "{t:#?}");
    }
}

/// The lab's captures of both etcd lines (https peers, their own member IDs, no member list
/// here: the IDs are tied to nodes by the addresses their lines name): every peer dropped at
/// once is one change, every ordered pair with an onset.
#[test]
fn lab_captures_of_both_lines_are_one_change() {
    for line in ["v3.4", "v3.5"] {
        let nodes: Vec<NodeReport> = (0..3)
            .map(|i| {
                let others: Vec<usize> = (0..3).filter(|j| *j != i).collect();
                node(
                    i,
                    Some(0),
                    &fixture(&format!("{line}/drop-all-peers-cp{}.log", i + 1)),
                    &others,
                )
            })
            .collect();
        let t = timeline_of(&nodes);
        assert_eq!(t.shape, Some(Shape::OneChange), "{line}: {t:#?}");
        assert_eq!(t.pairs.len(), 6, "{line}: {t:#?}");
        assert!(t.pairs.iter().all(|p| p.onset.is_some()), "{line}: {t:#?}");
    }
}

/// A log that begins inside the episode (no line of the path working before its first failure,
/// as a 500-line tail of a long partition does) gives an onset only "at or before".
#[test]
fn a_log_that_begins_inside_the_episode_says_at_or_before() {
    let log = |me: usize, peer: usize, est: bool| {
        let mut lines = vec![];
        if est {
            lines.push(zap(me, peer, "2026-12-01T09:59:00Z", EST));
        }
        lines.push(zap(me, peer, "2026-12-01T10:00:00Z", LOST));
        lines.join("\n")
    };
    let nodes = vec![
        node(0, Some(0), &log(0, 1, false), &[1]),
        node(1, Some(0), &log(1, 0, false), &[0]),
    ];
    let t = timeline_of(&nodes);
    assert!(t.pairs.iter().all(|p| p.at_or_before), "{t:#?}");
    assert_eq!(
        t.summary.as_deref(),
        Some("all paths failed within 0 s of 2026-12-01T10:00:00Z (one change); the logs read begin inside it: it may have begun earlier")
    );
    // One end saw the path work first: its onset is the pair's, and a real one.
    let nodes = vec![
        node(0, Some(0), &log(0, 1, true), &[1]),
        node(1, Some(0), &log(1, 0, false), &[0]),
    ];
    let t = timeline_of(&nodes);
    assert!(t.pairs.iter().all(|p| !p.at_or_before), "{t:#?}");
    assert!(t.summary.unwrap().ends_with("(one change)"));
    // Staggered: the group whose first onset is open says so.
    let mut nodes = vec![
        node(0, Some(0), &log(0, 1, false), &[1, 2]),
        node(1, Some(0), &log(1, 0, false), &[0, 2]),
        node(2, Some(0), "", &[0, 1]),
    ];
    let late = [
        zap(2, 0, "2026-12-01T09:00:00Z", EST),
        zap(2, 1, "2026-12-01T09:00:00Z", EST),
        zap(2, 0, "2026-12-01T10:05:00Z", LOST),
        zap(2, 1, "2026-12-01T10:05:01Z", LOST),
    ]
    .join("\n");
    nodes[2] = node(2, Some(0), &late, &[0, 1]);
    let t = timeline_of(&nodes);
    assert_eq!(
        t.summary.as_deref(),
        Some("staggered: cp1↔cp2 at or before 2026-12-01T10:00:00Z, cp3 at 2026-12-01T10:05:00Z (+300 s)"),
        "{t:#?}"
    );
}

/// 3.5 under a silent drop of every peer path: the leader's pairs show within seconds, the two
/// followers' pair only at their probers' next 30 s status check: one change as long as it may
/// have gone within 30 s of the first; a pair whose prober line is too late for that still
/// makes the shape staggered.
#[test]
fn a_prober_line_may_lag_the_cut() {
    let prober = |me: usize, peer: usize, ts: &str| {
        format!(
            r#"{{"level":"warn","ts":"{ts}","caller":"rafthttp/probing_status.go:68","msg":"prober detected unhealthy status","round-tripper-name":"ROUND_TRIPPER_RAFT_MESSAGE","local-member-id":"{}","remote-peer-id":"{}","error":"dial tcp {}:2380: i/o timeout"}}"#,
            IDS[me], IDS[peer], IPS[peer]
        )
    };
    let shape = |late: &str| {
        let logs = [
            [
                zap(0, 1, "2026-12-01T09:59:00Z", EST),
                zap(0, 2, "2026-12-01T09:59:00Z", EST),
                zap(0, 1, "2026-12-01T10:00:02Z", LOST),
                zap(0, 2, "2026-12-01T10:00:03Z", LOST),
            ]
            .join("\n"),
            [
                zap(1, 0, "2026-12-01T09:59:00Z", EST),
                zap(1, 2, "2026-12-01T09:59:00Z", EST),
                prober(1, 2, late),
            ]
            .join("\n"),
            [
                zap(2, 0, "2026-12-01T09:59:00Z", EST),
                zap(2, 1, "2026-12-01T09:59:00Z", EST),
                prober(2, 1, late),
            ]
            .join("\n"),
        ];
        let nodes: Vec<NodeReport> = (0..3)
            .map(|i| {
                let others: Vec<usize> = (0..3).filter(|j| *j != i).collect();
                node(i, Some(0), &logs[i], &others)
            })
            .collect();
        let t = timeline_of(&nodes);
        let p = (t.pairs.iter())
            .find(|p| p.from == "cp2" && p.to == "cp3")
            .unwrap();
        assert_eq!(p.first_sign, Some(LogKind::PeerUnhealthy), "{p:?}");
        // The prober says it up to 34 s late: the window the cut lies in, not a time.
        let onset = etcdlog::parse_micros(p.onset.as_deref().unwrap()).unwrap();
        let earliest = etcdlog::parse_micros(p.earliest.as_deref().unwrap()).unwrap();
        assert_eq!(onset - earliest, PROBER_LAG_S * 1_000_000, "{p:?}");
        // A stream's line is within seconds of the cut: no window.
        let q = (t.pairs.iter())
            .find(|p| p.from == "cp1" && p.to == "cp2")
            .unwrap();
        assert_eq!(
            (q.first_sign, q.earliest.as_deref()),
            (Some(LogKind::LostStream), None),
            "{q:?}"
        );
        (t.shape, t.summary)
    };
    // 31 s after the first: within 30 s once the prober's lag is allowed for.
    let (s, summary) = shape("2026-12-01T10:00:33Z");
    assert_eq!(s, Some(Shape::OneChange), "{summary:?}");
    // 90 s after: later than any lag.
    let (s, summary) = shape("2026-12-01T10:01:32Z");
    assert_eq!(s, Some(Shape::Staggered), "{summary:?}");
    assert!(summary.unwrap().contains("cp2↔cp3 at 2026-12-01T10:01:32Z"));
}
