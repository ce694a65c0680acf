//! The current failure episode towards each peer, from one member's log: when its lines about
//! that peer last said the connection worked ("peer became active", "established TCP streaming
//! connection"), and the first failure after that (a lost stream, the peer inactive, the prober's
//! unhealthy status or failed connect, a dial error naming the peer). The whole log counts, not
//! the `--since` window: an onset is often older than the window.

use std::collections::{BTreeMap, BTreeSet};

use super::time::parse_time;
use super::{each_line, LogKind, LogLine};

/// Which peer a line is about: the member IDs it names (the member's own left out), else the
/// hosts of the peer addresses it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeerKey {
    Id(String),
    Host(String),
}

/// One peer's state in one member's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episode {
    pub peer: PeerKey,
    /// The first failure after the last recovery, in the member's own clock (epoch µs); `None`
    /// when the last line about the peer says it works.
    pub start: Option<i64>,
    /// What that first failure line said.
    pub start_kind: Option<LogKind>,
    /// The newest line about the peer that said it works, in the member's own clock (or, where
    /// the prober fell silent, the last failure line before the silence).
    pub recovered: Option<i64>,
    /// The newest failure line of the episode.
    pub last_failure: Option<i64>,
    /// The newest prober line ("prober detected unhealthy status", "health check for peer …
    /// could not connect") of the episode: while the peer stays unhealthy the prober says so
    /// again every [`PROBER_REPEAT_US`].
    pub last_prober: Option<i64>,
    /// The episode holds only late lines so far: failures within [`LATE_AFTER_RECOVERY_US`]
    /// of the recovery in `recovered` and none since, i.e. dials and reads of the cut before
    /// that ended just after it. Not yet a cut of its own: the timeline takes no onset from it
    /// (the log has not told of a new cut yet).
    pub late: bool,
    /// For a member ID: the hosts of the addresses named by lines that name this peer alone
    /// (how a zap line's `remote-peer-id` and its error's `->198.18.0.12:2380` tie an ID to a
    /// node when no member list was read); at most 4.
    pub hosts: BTreeSet<String>,
}

/// The kinds that say a path to a peer failed.
const FAILURE: &[LogKind] = &[
    LogKind::PeerInactive,
    LogKind::PeerUnhealthy,
    LogKind::LostStream,
    LogKind::IoTimeout,
    LogKind::ConnectionRefused,
    LogKind::NoRouteToHost,
    LogKind::ConnectionReset,
    LogKind::TlsHandshakeTimeout,
    LogKind::PeerUrlUnreachable,
];

/// rafthttp/stream.go: zap "established TCP streaming connection with remote peer"; capnslog
/// "established a TCP streaming connection with peer %s (%s writer)".
const ESTABLISHED: &[&str] = &[
    "established TCP streaming connection",
    "established a TCP streaming connection",
];

/// etcd's prober reports an unhealthy peer again every 5 s for as long as it stays unhealthy
/// (rafthttp/probing_status.go `statusErrorInterval`, 3.4 to 3.6), and checks a healthy one only
/// every 30 s (`statusMonitoringInterval`); it logs nothing when the peer is healthy again. A
/// failure line more than this long after the episode's last prober line, with no prober line
/// between, therefore follows a recovery the log does not name (3.5's streams often outlive a
/// short cut, so no "became active" line comes): it opens a new episode. 5 s and slack for a
/// busy host.
pub const PROBER_REPEAT_US: i64 = 15_000_000;

/// How soon after a recovery line a failure line may be a late one: the outcome of a dial or
/// read begun during the cut, not a new cut. A stream's dial gives up after the peer dial
/// timeout (1 s + the election timeout, 2 s with kubeadm's defaults: server/config/config.go
/// `PeerDialTimeout`, 3.5 and 3.6), its read after 5 s (rafthttp/peer.go
/// `DefaultConnReadTimeout`); the lab saw etcd 3.4 log "peer became inactive … failed to dial …
/// i/o timeout" 0.24 s after the streams' "established" at a heal. 5 s and slack.
pub const LATE_AFTER_RECOVERY_US: i64 = 10_000_000;

/// How long a cut that goes on stays unlogged at most: etcd's prober checks a healthy peer's
/// status every 30 s (rafthttp/probing_status.go `statusMonitoringInterval`, 3.4 to 3.6) and
/// logs "prober detected unhealthy status" at the first check that finds it down, every 5 s
/// after; a stream's read times out within 5 s. Late lines after a recovery followed by no
/// failure line within this long were the old cut's; a failure after that begins a new
/// episode. 30 s and slack for a busy host, as [`PROBER_REPEAT_US`].
pub const CUT_LOGGED_WITHIN_US: i64 = 40_000_000;

fn recovery(line: &LogLine, kinds: &[LogKind]) -> bool {
    kinds.contains(&LogKind::PeerActive) || ESTABLISHED.iter().any(|s| line.msg.contains(s))
}

/// Per peer the log names, its episode (in [`PeerKey`] order). The member's own ID (the log's
/// `local-member-id`) is never a peer. At most `MAX_PEERS` peers are kept (a log names a handful).
pub fn episodes(log: &str) -> Vec<Episode> {
    const MAX_PEERS: usize = 64;
    let mut lines = Vec::new();
    let mut physical = 0;
    each_line(log, &mut physical, |l| {
        if let Some(l) = l {
            lines.push(l)
        }
    });
    let local: Option<String> = lines.iter().find_map(|l| l.local_member_id.clone());
    let mut out: BTreeMap<PeerKey, Episode> = BTreeMap::new();
    // Per peer whose open episode so far holds only late lines (see LATE_AFTER_RECOVERY_US):
    // the recovery those lines followed.
    let mut late: BTreeMap<PeerKey, i64> = BTreeMap::new();
    // A line without a time takes the time of the line before it (continuation lines).
    let mut prev: Option<i64> = None;
    let mut dated: Vec<(i64, &LogLine)> = Vec::with_capacity(lines.len());
    for line in &lines {
        if let Some(t) = line.ts.as_deref().and_then(parse_time) {
            prev = Some(t);
        }
        if let Some(ts) = prev {
            dated.push((ts, line));
        }
    }
    // In time order, not the file's: a previous container's log, a past written before the live
    // lines, or lines appended later with older times all read as they happened (stable: lines
    // of one time keep their order).
    dated.sort_by_key(|(ts, _)| *ts);
    for (ts, line) in dated {
        let kinds = line.kinds();
        let up = recovery(line, &kinds);
        let down = !up && kinds.iter().any(|k| FAILURE.contains(k));
        if !up && !down {
            continue;
        }
        let ids: BTreeSet<&String> = line
            .peer_ids
            .iter()
            .filter(|id| Some(*id) != local.as_ref())
            .collect();
        let hosts: BTreeSet<String> = line
            .peer_addresses
            .iter()
            .map(|a| super::line::host_of(a).to_string())
            .collect();
        let alone = ids.len() == 1 && hosts.len() == 1;
        let keys: Vec<PeerKey> = if ids.is_empty() {
            hosts.iter().cloned().map(PeerKey::Host).collect()
        } else {
            ids.into_iter().map(|id| PeerKey::Id(id.clone())).collect()
        };
        for key in keys {
            if !out.contains_key(&key) && out.len() >= MAX_PEERS {
                continue;
            }
            let e = out.entry(key.clone()).or_insert_with(|| Episode {
                peer: key,
                start: None,
                start_kind: None,
                recovered: None,
                last_failure: None,
                last_prober: None,
                late: false,
                hosts: BTreeSet::new(),
            });
            if alone && matches!(e.peer, PeerKey::Id(_)) && e.hosts.len() < 4 {
                e.hosts.extend(hosts.iter().cloned());
            }
            // The prober fell silent: the peer was healthy in between (see PROBER_REPEAT_US).
            let silent = down && e.last_prober.is_some_and(|p| ts - p > PROBER_REPEAT_US);
            // The open episode held only late lines of the cut before a recovery, and nothing
            // failed for longer than a cut that goes on stays unlogged: that recovery held, and
            // this line is a new cut's (see CUT_LOGGED_WITHIN_US).
            let stale = down
                && late.contains_key(&e.peer)
                && e.last_failure
                    .is_some_and(|f| ts - f > CUT_LOGGED_WITHIN_US);
            if up || silent || stale {
                let r = if up {
                    Some(ts)
                } else if stale {
                    late.get(&e.peer).copied()
                } else {
                    e.last_failure
                };
                e.start = None;
                e.start_kind = None;
                e.last_failure = None;
                e.last_prober = None;
                e.recovered = e.recovered.max(r);
                late.remove(&e.peer);
            }
            if down {
                if e.start.is_none() {
                    e.start = Some(ts);
                    e.start_kind = kinds.iter().copied().find(|k| FAILURE.contains(k));
                    if let Some(r) = e.recovered.filter(|r| ts - r <= LATE_AFTER_RECOVERY_US) {
                        late.insert(e.peer.clone(), r);
                    }
                } else if late
                    .get(&e.peer)
                    .is_some_and(|r| ts - r > LATE_AFTER_RECOVERY_US)
                {
                    // Failing on past the late lines' time: the cut goes on (or came again
                    // at once); the episode is real, from its first line.
                    late.remove(&e.peer);
                }
                e.last_failure = Some(ts);
                if kinds.contains(&LogKind::PeerUnhealthy) {
                    e.last_prober = Some(ts);
                }
            }
        }
    }
    out.into_values()
        .map(|mut e| {
            e.late = late.contains_key(&e.peer);
            e
        })
        .collect()
}

/// An epoch-µs time as the classifier writes times (RFC 3339 UTC, six fraction digits).
pub fn format_micros(micros: i64) -> String {
    super::time::format_time(micros)
}

/// A time as the classifier writes it, back to epoch µs.
pub fn parse_micros(ts: &str) -> Option<i64> {
    parse_time(ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/etcd-logs/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).unwrap()
    }

    fn at(ts: &str) -> Option<i64> {
        parse_time(ts)
    }

    /// 3.4 zap, every peer dropped: the episode towards each starts at its first failure after
    /// the streams were established, and the member's own ID is never a peer.
    #[test]
    fn zap_drop_all_peers() {
        let e = episodes(&fixture("drop-all-peers-cp1.log"));
        let ids: Vec<&PeerKey> = e.iter().map(|e| &e.peer).collect();
        assert_eq!(
            ids,
            [
                &PeerKey::Id("568f5d17e59791c3".into()),
                &PeerKey::Id("ae214cf60ca034ac".into())
            ]
        );
        for ep in &e {
            assert!(ep.recovered.is_some(), "{ep:?}");
            let start = ep.start.expect("an open episode");
            assert!(start > ep.recovered.unwrap(), "{ep:?}");
            assert_eq!(ep.start_kind, Some(LogKind::PeerUnhealthy), "{ep:?}");
        }
        assert_eq!(e[0].start, at("2026-12-02T08:25:54.445Z"));
        assert_eq!(e[1].start, at("2026-12-02T08:25:54.447Z"));
        // The errors' addresses tie each ID to its node.
        assert_eq!(e[0].hosts, BTreeSet::from(["198.18.0.12".to_string()]));
        assert_eq!(e[1].hosts, BTreeSet::from(["198.18.0.13".to_string()]));
    }

    /// 3.4 capnslog text: cp3 isolated, seen from cp1: cp2 stays up (its episode closed), cp3's
    /// opens after the streams were established.
    #[test]
    fn text_cp3_isolated() {
        let log = fixture("lab-text-cp3-isolated-cp1.log");
        let e = episodes(&log);
        let cp2 = e
            .iter()
            .find(|e| e.peer == PeerKey::Id("568f5d17e59791c3".into()))
            .unwrap();
        assert_eq!(cp2.start, None, "{cp2:?}");
        assert!(cp2.recovered.is_some());
        let cp3 = e
            .iter()
            .find(|e| e.peer == PeerKey::Id("ae214cf60ca034ac".into()))
            .unwrap();
        let start = cp3.start.expect("cp3's episode is open");
        assert!(start > cp3.recovered.unwrap());
        // The first failure line about cp3 after its last "established" line is the onset.
        let first = log
            .lines()
            .skip_while(|l| !(l.contains("established a TCP") && l.contains("ae214cf60ca034ac")))
            .filter(|l| l.contains("ae214cf60ca034ac"))
            .find(|l| !l.contains("established") && !l.contains("became active"))
            .unwrap();
        let ts = super::super::parse_line(first).unwrap().ts.unwrap();
        // Found after the *last* established line, so it can only be later than the first one.
        assert!(start >= at(&ts).unwrap(), "{first}");
    }

    /// A recovery closes the episode; a new failure opens a new one at its own time.
    #[test]
    fn recovery_closes_and_a_new_failure_reopens() {
        let line = |ts: &str, msg: &str, err: &str| {
            format!(
                r#"{{"level":"warn","ts":"{ts}","msg":"{msg}","local-member-id":"aaaaaaaaaaaaaaa1","remote-peer-id":"bbbbbbbbbbbbbbb2","error":"{err}"}}"#
            )
        };
        let lost = "lost TCP streaming connection with remote peer";
        let est = "established TCP streaming connection with remote peer";
        let err = "read tcp 10.0.0.1:1->10.0.0.2:2380: i/o timeout";
        let log = [
            line("2026-12-01T10:00:00Z", lost, err),
            line("2026-12-01T10:00:05Z", lost, err),
            line("2026-12-01T10:01:00Z", est, ""),
            line("2026-12-01T10:02:00Z", lost, err),
            line("2026-12-01T10:02:09Z", lost, err),
        ]
        .join("\n");
        let e = episodes(&log);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].peer, PeerKey::Id("bbbbbbbbbbbbbbb2".into()));
        assert_eq!(e[0].start, at("2026-12-01T10:02:00Z"));
        assert_eq!(e[0].last_failure, at("2026-12-01T10:02:09Z"));
        assert_eq!(e[0].recovered, at("2026-12-01T10:01:00Z"));
        assert_eq!(e[0].start_kind, Some(LogKind::LostStream));
        // Ending on the recovery: no episode.
        let healed = [log.clone(), line("2026-12-01T10:03:00Z", est, "")].join("\n");
        assert_eq!(episodes(&healed)[0].start, None);
        // Lines out of order in the file are read in time order: an older failure appended
        // after the newer ones is the onset.
        let appended = [
            line("2026-12-01T10:00:00Z", est, ""),
            line("2026-12-01T10:02:00Z", lost, err),
            line("2026-12-01T10:01:30Z", lost, err),
        ]
        .join("\n");
        assert_eq!(episodes(&appended)[0].start, at("2026-12-01T10:01:30Z"));
        // A dial error that names only an address is keyed by its host.
        let dial = r#"{"level":"warn","ts":"2026-12-01T10:00:00Z","msg":"x","error":"dial tcp 10.0.0.3:2380: connect: connection refused"}"#;
        assert_eq!(episodes(dial)[0].peer, PeerKey::Host("10.0.0.3".into()));
        assert!(episodes("garbage\n{}\n").is_empty());
    }

    /// 3.5 logs no recovery when its streams outlived a cut: the prober, which repeats its
    /// "unhealthy" line every 5 s while the peer stays so, falling silent is the recovery; a
    /// failure after the silence opens a new episode. Lines that are not the prober's say
    /// nothing of the time between them.
    #[test]
    fn a_silent_prober_is_a_recovery() {
        let line = |ts: &str, msg: &str| {
            format!(
                r#"{{"level":"warn","ts":"{ts}","msg":"{msg}","round-tripper-name":"ROUND_TRIPPER_RAFT_MESSAGE","local-member-id":"aaaaaaaaaaaaaaa1","remote-peer-id":"bbbbbbbbbbbbbbb2","error":"dial tcp 10.0.0.2:2380: i/o timeout"}}"#
            )
        };
        let prober = "prober detected unhealthy status";
        let lost = "lost TCP streaming connection with remote peer";
        let mut log = vec![
            line("2026-12-01T10:00:00Z", prober),
            line("2026-12-01T10:00:05Z", prober),
            line("2026-12-01T10:00:10Z", prober),
            // Healed; cut again a minute later.
            line("2026-12-01T10:01:10Z", prober),
            line("2026-12-01T10:01:15Z", prober),
        ];
        let e = episodes(&log.join("\n"));
        assert_eq!(e[0].start, at("2026-12-01T10:01:10Z"), "{e:?}");
        assert_eq!(e[0].recovered, at("2026-12-01T10:00:10Z"));
        // Every 5 s without a gap: one episode from the first line.
        log.truncate(3);
        let e = episodes(&log.join("\n"));
        assert_eq!(e[0].start, at("2026-12-01T10:00:00Z"));
        assert_eq!(e[0].recovered, None);
        // Lines other than the prober's, far apart: still one episode.
        let e = episodes(
            &[
                line("2026-12-01T10:00:00Z", lost),
                line("2026-12-01T10:01:30Z", lost),
            ]
            .join("\n"),
        );
        assert_eq!(e[0].start, at("2026-12-01T10:00:00Z"));
    }

    /// The late line of a heal, then a cut hours later (tests/fixtures/etcd-logs/composed: the
    /// lab's real 3.4 and 3.5 captures, a heal of their own start lines, the late "failed to
    /// dial … i/o timeout" 0.24 s after it, the same cut 3 h later): the onset is the second
    /// cut's. The late line alone is not a cut; failures going on after it are one.
    #[test]
    fn a_late_line_after_a_heal_is_not_the_next_cuts_onset() {
        const LATE_PEER: &str = "14569749fa01776e";
        for v in ["3.4", "3.5"] {
            let log = fixture(&format!("composed/heal-late-line-then-cut-v{v}-cp1.log"));
            let lines: Vec<&str> = log.lines().collect();
            let ts = |l: &str| at(&super::super::parse_line(l).unwrap().ts.unwrap()).unwrap();
            let late_at = lines
                .iter()
                .position(|l| l.contains("failed to dial"))
                .unwrap();
            let late = ts(lines[late_at]);
            let healed = ts(lines[late_at - 1]);
            let second_cut = ts(lines[late_at + 1]);
            assert!(second_cut - late > 3 * 3600 * 1_000_000 - 60_000_000, "{v}");
            let e = episodes(&log);
            assert_eq!(e.len(), 2, "{v}: {e:?}");
            for ep in &e {
                let start = ep.start.unwrap_or_else(|| panic!("{v}: {ep:?}"));
                assert!(start >= second_cut, "{v}: the late line's onset: {ep:?}");
                assert!(!ep.late, "{v}: {ep:?}");
                // The first failure about the peer in the second cut.
                let PeerKey::Id(id) = &ep.peer else { panic!() };
                let first = lines[late_at + 1..]
                    .iter()
                    .find(|l| l.contains(id.as_str()) && !l.contains("established"))
                    .unwrap();
                assert_eq!(ep.start, Some(ts(first)), "{v}: {ep:?}");
            }
            let cp3 = e
                .iter()
                .find(|e| e.peer == PeerKey::Id(LATE_PEER.into()))
                .unwrap();
            assert!(
                cp3.recovered
                    .is_some_and(|r| r <= healed && healed - r < 1_000_000),
                "{v}: {cp3:?}"
            );

            // The log read right after the late line: an episode of late lines only, which the
            // timeline takes no onset from.
            let upto = lines[..=late_at].join("\n");
            let e = episodes(&upto);
            let cp3 = e
                .iter()
                .find(|e| e.peer == PeerKey::Id(LATE_PEER.into()))
                .unwrap();
            assert_eq!(cp3.start, Some(late), "{v}: {cp3:?}");
            assert!(cp3.late, "{v}: {cp3:?}");

            // A cut that goes on after the heal (a flap: the prober's line 20 s after the late
            // one, within its 30 s interval): one real episode, from the late line.
            let prober = lines[late_at + 1..]
                .iter()
                .find(|l| l.contains("prober detected unhealthy") && l.contains(LATE_PEER))
                .unwrap();
            let when = super::super::parse_line(prober).unwrap().ts.unwrap();
            let shifted = prober.replace(&when[..19], &format_micros(late + 20_000_000)[..19]);
            let flap = format!("{upto}\n{shifted}");
            let e = episodes(&flap);
            let cp3 = e
                .iter()
                .find(|e| e.peer == PeerKey::Id(LATE_PEER.into()))
                .unwrap();
            assert_eq!(cp3.start, Some(late), "{v}: {cp3:?}");
            assert!(!cp3.late, "{v}: {cp3:?}");
            assert_eq!(
                cp3.last_failure.map(|f| f / 1_000_000),
                Some((late + 20_000_000) / 1_000_000)
            );
        }
    }

    /// Several late lines (the stream's dial and the other stream's read, each ending just
    /// after the heal), then silence, then a cut: the cut's own onset; a failure more than the
    /// late window after the recovery but within the prober's interval of them is a cut that
    /// went on.
    #[test]
    fn late_lines_then_silence_then_a_cut() {
        let line = |ts: &str, msg: &str, err: &str| {
            format!(
                r#"{{"level":"warn","ts":"{ts}","caller":"rafthttp/peer_status.go:66","msg":"{msg}","local-member-id":"aaaaaaaaaaaaaaa1","peer-id":"bbbbbbbbbbbbbbb2","error":"{err}"}}"#
            )
        };
        let inactive = "peer became inactive (message send to peer failed)";
        let lost = "lost TCP streaming connection with remote peer";
        let est = "established TCP streaming connection with remote peer";
        let dial = "failed to dial bbbbbbbbbbbbbbb2 on stream Message (dial tcp 10.0.0.2:2380: i/o timeout)";
        let read = "failed to read bbbbbbbbbbbbbbb2 on stream MsgApp v2 (read tcp 10.0.0.1:1->10.0.0.2:2380: i/o timeout)";
        let story = |tail: &[String]| {
            let mut v = vec![
                line("2026-12-01T10:00:00Z", lost, read),
                line("2026-12-01T10:01:00Z", est, ""),
                line("2026-12-01T10:01:00.240Z", inactive, dial),
                line("2026-12-01T10:01:04Z", lost, read),
            ];
            v.extend_from_slice(tail);
            episodes(&v.join("\n"))
        };
        let e = story(&[
            line("2026-12-03T09:00:00Z", lost, read),
            line("2026-12-03T09:00:05Z", lost, read),
        ]);
        assert_eq!(e[0].start, at("2026-12-03T09:00:00Z"), "{e:?}");
        assert_eq!(e[0].recovered, at("2026-12-01T10:01:00Z"), "{e:?}");
        assert!(!e[0].late);
        // 30 s after the last late line, 34 s after the heal: the cut went on.
        let e = story(&[line("2026-12-01T10:01:34Z", lost, read)]);
        assert_eq!(e[0].start, at("2026-12-01T10:01:00.240Z"), "{e:?}");
        assert!(!e[0].late);
        // Nothing after them: late lines only.
        let e = story(&[]);
        assert_eq!(e[0].start, at("2026-12-01T10:01:00.240Z"), "{e:?}");
        assert!(e[0].late);
        // A failure 11 s after the heal is no late line: its episode is real at once.
        let e = episodes(
            &[
                line("2026-12-01T10:01:00Z", est, ""),
                line("2026-12-01T10:01:11Z", lost, read),
            ]
            .join("\n"),
        );
        assert!(!e[0].late, "{e:?}");
    }
}
