//! Since when, and how: the onset of the current failure episode of every pair of members, from
//! both ends' etcd logs, each node's times corrected by its clock's offset from the others'
//! (the probe clocks' median, [`super::clock`]); "no leader since" per node; and the one-line
//! shape of it: `one change` (every path went within [`ONE_CHANGE_S`] of the first) or
//! `staggered` (pairs or nodes going one after another), the words scripts match on.
//!
//! What a node logs is its own word, and so is its clock: a node with no clock reading, or one
//! far off the others, is named as not to be trusted, and its times are shown as corrected
//! (when it has a reading) or as written.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::matrix::Matrix;
use crate::probe::etcdlog::{self, LeaderState, LogKind, LogSummary, PeerKey};
use crate::probe::output::MemberId;
use crate::probe::NodeReport;
use crate::supervisor::ClusterFacts;

/// Onsets within this many seconds of a group's first are one change.
pub(crate) const ONE_CHANGE_S: i64 = 30;
/// How much earlier than its first line a path may have failed when that line is etcd's
/// prober's: the prober asks every 4 s, but checks a healthy peer's status only every 30 s
/// (rafthttp/probing_status.go `statusMonitoringInterval`, 3.4 to 3.6) and says nothing
/// before. Under a silent drop 3.5 logs nothing else of a pair of followers (its streams outlive
/// the cut), so their first line comes up to this long after the cut: for the shape, such an
/// onset counts as one change with a group it may have been within ONE_CHANGE_S of.
pub const PROBER_LAG_S: i64 = 34;
/// A clock further than this from the median is named as not to be trusted (its offset is
/// still applied: the probe read it, but a clock that far off may also have been stepped
/// between the log's lines and the probe).
pub(crate) const TRUSTED_SKEW_MS: i64 = 60_000;
/// At most this many pairs are kept (n·(n-1) for the nodes probed: 20 for five nodes).
const MAX_PAIRS: usize = 64;

// The contract's `timeline` (`report::DiagnoseReport`): these types are what `-o json|yaml`
// prints and what the schema describes, so their doc comments are the schema's descriptions and
// their serde attributes fix the json names (tests/it/schema.rs and the json-contract snapshots
// hold both).

/// The shape of the onsets: the words of `summary` scripts match on are `one change` and
/// `staggered`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
#[schemars(rename = "TimelineShape")]
pub enum Shape {
    /// Every failing path went within 30 s of the first.
    // ([`ONE_CHANGE_S`].)
    OneChange,
    /// Some paths went later: pairs or nodes one after another.
    Staggered,
}

/// Since when, and how: present when a log gives an onset, a path fails, a node has no leader
/// or KCP's conditions carry a last successful probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// "all paths failed within N s of T (one change)" or "staggered: a↔b at T1, c at T2
    /// (+N s)"; times RFC 3339 UTC to the second. Absent when no log gives an onset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// Per ordered pair of nodes whose current failure episode is open in either end's log or
    /// whose 2380 path fails now.
    #[serde(default)]
    pub pairs: Vec<PairOnset>,
    /// Nodes whose etcd knows no leader at their log's last leader line.
    #[serde(default)]
    pub no_leader: Vec<NoLeaderSince>,
    /// The clock of every node whose times are used, against the median of the nodes' clocks.
    #[serde(default)]
    pub clocks: Vec<NodeClock>,
    /// "Last successful probe at …" from KCP's etcd conditions on the Machines.
    // (The Supervisor's word.)
    #[serde(default)]
    pub last_successful_probes: Vec<LastProbe>,
}

impl Timeline {
    /// Nothing to show: no pair, no leaderless node, no KCP probe time.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.no_leader.is_empty() && self.last_successful_probes.is_empty()
    }

    /// When the current failure began, as the logs tell it (on the median clock): the earliest
    /// pair onset, else the earliest "no leader since"; `None` when no log tells. What the
    /// Supervisor said before it (a condition set earlier) is about an earlier state.
    pub fn onset(&self) -> Option<std::time::SystemTime> {
        let pairs = self.pairs.iter().filter_map(|p| p.onset.as_deref());
        let leaderless = self.no_leader.iter().filter_map(|n| n.since.as_deref());
        let earliest = |ts: &mut dyn Iterator<Item = &str>| ts.filter_map(crate::when::parse).min();
        earliest(&mut { pairs }).or_else(|| earliest(&mut { leaderless }))
    }
}

/// One direction of a pair: `from`'s etcd sending to `to`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairOnset {
    pub from: String,
    pub to: String,
    /// The start of the current failure episode: the earlier of `seenByFrom` and `seenByTo`
    /// (RFC 3339 UTC, six fraction digits, on the nodes' median clock); absent when neither
    /// log tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onset: Option<String>,
    /// `from`'s log about `to`: its first failure line (a lost stream, the peer inactive, the
    /// prober's unhealthy status, a dial error) after the last line saying the peer worked.
    // (Corrected to the median clock.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by_from: Option<String>,
    /// `to`'s log about `from`, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by_to: Option<String>,
    /// What the line of the onset said.
    // (The first failure line's kind, of the end whose onset is the pair's.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sign: Option<LogKind>,
    /// True when the log of the onset's end shows no line of the path working before it: the
    /// log read begins inside the episode, which began at or before `onset`.
    #[serde(default)]
    pub at_or_before: bool,
    /// When `firstSign` is `PeerUnhealthy` (etcd's prober, which checks a healthy peer's status
    /// only every 30 s): the earliest the path may have failed, 34 s before `onset`. The cut
    /// lies between the two; no line of etcd's says closer.
    // ([`PROBER_LAG_S`]; None for every other first sign, which etcd writes within seconds of
    // the cut.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest: Option<String>,
    /// Whether this run's check of `from` → `to`:2380 failed; absent when not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_now: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoLeaderSince {
    pub node: String,
    /// The first no-leader line after the last known leader, corrected (RFC 3339 UTC).
    // (None when the log's no-leader line has no time.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClock {
    pub node: String,
    /// The node's clock at probe start minus the median of the nodes' clocks; absent when the
    /// node's clock was not read. Its log's times are corrected by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<i64>,
    /// False when the clock was not read or is more than 60 s off the others'.
    pub trusted: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastProbe {
    pub node: String,
    /// The Machine condition whose message says it (e.g. `EtcdMemberHealthy`).
    pub condition: String,
    /// The time as the condition writes it (the Supervisor's clock).
    pub at: String,
}

/// One end's onset of a pair, on the median clock.
#[derive(Debug, Clone, Copy)]
struct Seen {
    at: i64,
    kind: Option<LogKind>,
    /// Its log shows the path working before (a recovery line older than the onset).
    working_before: bool,
}

/// Which node a member ID or peer host stands for: the nodes' IPs, the member IDs as the
/// majority of the member lists place them (`members`, the verdict's one view: no single
/// node's list may rename a peer), else each log's own `local-member-id`.
fn peer_names(
    nodes: &[NodeReport],
    logs: &BTreeMap<String, LogSummary>,
    members: &BTreeMap<MemberId, String>,
) -> BTreeMap<PeerKey, String> {
    let mut out = BTreeMap::new();
    for n in nodes {
        if let Some(ip) = n.ip {
            out.entry(PeerKey::Host(ip.to_string()))
                .or_insert_with(|| n.name.clone());
        }
    }
    for (id, node) in members {
        out.insert(PeerKey::Id(id.to_string()), node.clone());
    }
    for (node, s) in logs {
        if let Some(id) = &s.local_member_id {
            out.entry(PeerKey::Id(id.clone()))
                .or_insert_with(|| node.clone());
        }
    }
    out
}

/// Every node's clock against the median of them all.
fn clocks(nodes: &[NodeReport]) -> BTreeMap<String, NodeClock> {
    let median = super::clock::median(nodes.iter().filter_map(|n| n.probe()?.clock_ms));
    nodes
        .iter()
        .filter(|n| n.probe().is_some())
        .map(|n| {
            let offset = n
                .probe()
                .and_then(|p| p.clock_ms)
                .zip(median)
                .map(|(c, m)| c.saturating_sub(m));
            let (trusted, note) = match offset {
                None => (
                    false,
                    Some("no clock reading: its times are as its log writes them".to_string()),
                ),
                Some(o) if o.saturating_abs() > TRUSTED_SKEW_MS => (
                    false,
                    Some(format!(
                        "its clock is {} off the others': its times are corrected by that, which holds only if it was not stepped since",
                        super::clock::offset_text(o, 0)
                    )),
                ),
                Some(_) => (true, None),
            };
            (
                n.name.clone(),
                NodeClock {
                    node: n.name.clone(),
                    offset_ms: offset,
                    trusted,
                    note,
                },
            )
        })
        .collect()
}

/// A node's log time (epoch µs) on the others' clock.
fn corrected(micros: i64, clock: Option<&NodeClock>) -> i64 {
    let offset = clock.and_then(|c| c.offset_ms).unwrap_or(0);
    micros.saturating_sub(offset.saturating_mul(1000))
}

/// The timeline of one diagnosis: `logs` are the nodes' classified logs (for their leader view
/// and own member ID), `matrices` this run's checks, `members` the node at each member ID as
/// the verdict judges the member lists (by majority).
pub(crate) fn build(
    facts: &ClusterFacts,
    nodes: &[NodeReport],
    logs: &BTreeMap<String, LogSummary>,
    matrices: &[Matrix],
    members: &BTreeMap<MemberId, String>,
) -> Timeline {
    let names = peer_names(nodes, logs, members);
    let clocks = clocks(nodes);
    // (node, peer node) → the episode's start and first sign, corrected.
    let mut seen: BTreeMap<(String, String), Seen> = BTreeMap::new();
    // The nodes whose log was read: a failing path is listed without an onset only when one of
    // its ends' logs could have told (else the matrix says all there is).
    let mut read: BTreeSet<&str> = BTreeSet::new();
    for n in nodes {
        let Some(text) = n.probe().and_then(|p| p.etcd.log_text()) else {
            continue;
        };
        read.insert(n.name.as_str());
        for e in etcdlog::episodes(&text) {
            // An ID no member list or log names: the node at the address its lines name.
            let peer = names.get(&e.peer).or_else(|| {
                let mut hosts = e
                    .hosts
                    .iter()
                    .filter_map(|h| names.get(&PeerKey::Host(h.clone())));
                let first = hosts.next()?;
                hosts.all(|h| h == first).then_some(first)
            });
            // Only late lines of a cut that ended (`Episode::late`): no onset of a new one.
            let (Some(start), Some(peer), false) = (e.start, peer, e.late) else {
                continue;
            };
            if *peer == n.name {
                continue;
            }
            let this = Seen {
                at: corrected(start, clocks.get(&n.name)),
                kind: e.start_kind,
                working_before: e.recovered.is_some(),
            };
            let slot = seen.entry((n.name.clone(), peer.clone())).or_insert(this);
            if this.at < slot.at {
                *slot = this;
            }
        }
    }
    let m2380 = matrices.iter().find(|m| m.port == 2380);
    let state = |from: &str, to: &str| {
        m2380
            .and_then(|m| m.cell(from, to))
            .filter(|c| c.state.is_known())
            .map(|c| !c.state.is_ok())
    };
    let mut ordered: BTreeSet<(String, String)> = BTreeSet::new();
    for (a, b) in seen.keys() {
        ordered.insert((a.clone(), b.clone()));
        ordered.insert((b.clone(), a.clone()));
    }
    if let Some(m) = m2380 {
        for c in m.peer_cells().filter(|c| {
            c.state.is_known()
                && !c.state.is_ok()
                && (read.contains(c.from.as_str()) || read.contains(c.to.as_str()))
        }) {
            ordered.insert((c.from.clone(), c.to.clone()));
        }
    }
    let mut pairs = Vec::new();
    for (from, to) in ordered {
        let by_from = seen.get(&(from.clone(), to.clone())).copied();
        let by_to = seen.get(&(to.clone(), from.clone())).copied();
        let failing_now = state(&from, &to);
        // The present decides: an episode the logs have not closed yet, on a path seen working
        // both ways now, is over.
        if failing_now == Some(false) && state(&to, &from) == Some(false) {
            continue;
        }
        if by_from.is_none() && by_to.is_none() && failing_now != Some(true) {
            continue;
        }
        // At the same time, the end whose log saw the path work first: its onset is a real one.
        let first = [by_from, by_to]
            .into_iter()
            .flatten()
            .min_by_key(|s| (s.at, !s.working_before));
        pairs.push(PairOnset {
            onset: first.map(|s| etcdlog::format_micros(s.at)),
            at_or_before: first.is_some_and(|s| !s.working_before),
            earliest: first
                .filter(|s| s.kind == Some(LogKind::PeerUnhealthy))
                .map(|s| etcdlog::format_micros(s.at.saturating_sub(PROBER_LAG_S * 1_000_000))),
            first_sign: first.and_then(|s| s.kind),
            seen_by_from: by_from.map(|s| etcdlog::format_micros(s.at)),
            seen_by_to: by_to.map(|s| etcdlog::format_micros(s.at)),
            failing_now,
            from,
            to,
        });
        if pairs.len() >= MAX_PAIRS {
            break;
        }
    }
    let no_leader: Vec<NoLeaderSince> = logs
        .iter()
        .filter_map(|(node, s)| {
            let v = s.leader.as_ref()?;
            (v.state == LeaderState::NoLeader).then(|| NoLeaderSince {
                node: node.clone(),
                since: v
                    .since
                    .as_deref()
                    .and_then(etcdlog::parse_micros)
                    .map(|t| etcdlog::format_micros(corrected(t, clocks.get(node)))),
            })
        })
        .collect();
    let used: BTreeSet<&str> = pairs
        .iter()
        .filter(|p| p.onset.is_some())
        .flat_map(|p| [p.from.as_str(), p.to.as_str()])
        .chain(no_leader.iter().map(|n| n.node.as_str()))
        .collect();
    let clocks: Vec<NodeClock> = clocks
        .into_values()
        .filter(|c| used.contains(c.node.as_str()))
        .collect();
    let (shape, summary) = match summarise(&pairs) {
        Some((shape, summary)) => (Some(shape), Some(summary)),
        None => (None, None),
    };
    Timeline {
        summary,
        shape,
        pairs,
        no_leader,
        clocks,
        last_successful_probes: last_probes(facts),
    }
}

/// Onsets that went together: the first's time, the last's, whether the first is only "at or
/// before" (its log begins inside the episode), and their pairs.
type Group<'a> = (i64, i64, bool, Vec<(&'a str, &'a str)>);

/// The pairs' onsets as one line, per unordered pair (its earlier direction).
fn summarise(pairs: &[PairOnset]) -> Option<(Shape, String)> {
    // Per unordered pair: its onset, whether only "at or before", and how much earlier the
    // path may have failed than its first line says (PROBER_LAG_S for a prober's line).
    let mut unordered: BTreeMap<(&str, &str), (i64, bool, i64)> = BTreeMap::new();
    for p in pairs {
        let Some(at) = p.onset.as_deref().and_then(etcdlog::parse_micros) else {
            continue;
        };
        let key = if p.from <= p.to {
            (p.from.as_str(), p.to.as_str())
        } else {
            (p.to.as_str(), p.from.as_str())
        };
        let lag = if p.first_sign == Some(LogKind::PeerUnhealthy) {
            PROBER_LAG_S * 1_000_000
        } else {
            0
        };
        let slot = unordered.entry(key).or_insert((at, p.at_or_before, lag));
        if at < slot.0 {
            *slot = (at, p.at_or_before, lag);
        }
    }
    let mut onsets: Vec<_> = unordered.into_iter().collect();
    onsets.sort_by_key(|(k, (at, _, _))| (*at, *k));
    let (_, (first, _, _)) = *onsets.first()?;
    // Groups: each starts at the first onset that cannot have come within ONE_CHANGE_S of the
    // last group's start.
    let mut groups: Vec<Group> = Vec::new();
    for (pair, (at, open, lag)) in onsets {
        match groups.last_mut() {
            Some((start, end, _, members))
                if at.saturating_sub(lag).saturating_sub(*start) <= ONE_CHANGE_S * 1_000_000 =>
            {
                *end = at;
                members.push(pair);
            }
            _ => groups.push((at, at, open, vec![pair])),
        }
    }
    if let [(start, end, open, _)] = groups.as_slice() {
        // Saturating: the times are the nodes' word, corrected by offsets that are too.
        let within = end.saturating_sub(*start).saturating_add(999_999) / 1_000_000;
        return Some((
            Shape::OneChange,
            format!(
                "all paths failed within {within} s of {} (one change){}",
                second(*start),
                if *open {
                    "; the logs read begin inside it: it may have begun earlier"
                } else {
                    ""
                }
            ),
        ));
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(start, _, open, members)| {
            let after = if *start > first {
                format!(" (+{} s)", start.saturating_sub(first) / 1_000_000)
            } else {
                String::new()
            };
            let at = if *open { "at or before" } else { "at" };
            format!("{} {at} {}{after}", describe(members), second(*start))
        })
        .collect();
    Some((Shape::Staggered, format!("staggered: {}", parts.join(", "))))
}

/// A group of pairs: the one node all of them share when there are several ("c": it was cut
/// from the rest), else the pairs ("a↔b", "a↔b and c↔d").
fn describe(members: &[(&str, &str)]) -> String {
    if members.len() >= 2 {
        let (a, b) = members[0];
        for node in [a, b] {
            if members.iter().all(|(x, y)| *x == node || *y == node) {
                return node.to_string();
            }
        }
    }
    members
        .iter()
        .map(|(a, b)| format!("{a}↔{b}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// RFC 3339 to the second: `2026-12-02T08:25:54Z`.
fn second(micros: i64) -> String {
    let s = etcdlog::format_micros(micros.div_euclid(1_000_000).saturating_mul(1_000_000));
    match s.split_once('.') {
        Some((head, _)) => format!("{head}Z"),
        None => s,
    }
}

/// KCP's etcd conditions on the Machines carry "Last successful probe at <time>" when it lost
/// the member: the Supervisor's own onset.
fn last_probes(facts: &ClusterFacts) -> Vec<LastProbe> {
    const MARK: &str = "Last successful probe at ";
    let mut out = Vec::new();
    for n in &facts.nodes {
        let Some(m) = &n.machine else { continue };
        for c in &m.etcd_conditions {
            let Some(msg) = c.message.as_deref() else {
                continue;
            };
            let Some(i) = msg.find(MARK) else { continue };
            let at: String = msg[i + MARK.len()..]
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')')
                .next()
                .unwrap_or("")
                .chars()
                .take(40)
                .collect();
            if at.is_empty() {
                continue;
            }
            out.push(LastProbe {
                node: n.name.clone(),
                condition: c.kind.clone(),
                at,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
pub(crate) mod tests;
