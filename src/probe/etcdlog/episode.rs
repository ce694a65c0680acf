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
                hosts: BTreeSet::new(),
            });
            if alone && matches!(e.peer, PeerKey::Id(_)) && e.hosts.len() < 4 {
                e.hosts.extend(hosts.iter().cloned());
            }
            // The prober fell silent: the peer was healthy in between (see PROBER_REPEAT_US).
            let silent = down && e.last_prober.is_some_and(|p| ts - p > PROBER_REPEAT_US);
            if up || silent {
                let r = if up { Some(ts) } else { e.last_failure };
                e.start = None;
                e.start_kind = None;
                e.last_failure = None;
                e.last_prober = None;
                e.recovered = e.recovered.max(r);
            }
            if down {
                if e.start.is_none() {
                    e.start = Some(ts);
                    e.start_kind = kinds.iter().copied().find(|k| FAILURE.contains(k));
                }
                e.last_failure = Some(ts);
                if kinds.contains(&LogKind::PeerUnhealthy) {
                    e.last_prober = Some(ts);
                }
            }
        }
    }
    out.into_values().collect()
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
}
