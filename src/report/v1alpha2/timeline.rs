//! The onset timeline of a diagnosis: since when each pair of members fails, from both ends'
//! etcd logs on the nodes' clocks corrected to their median, and its one-line shape.

use serde::{Deserialize, Serialize};

use super::LogKind;
use crate::analyse::timeline;

mirror_enum! {
    /// The shape of the onsets: the words of `summary` scripts match on are `one change` and
    /// `staggered`.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum TimelineShape from timeline::Shape {
        /// Every failing path went within 30 s of the first.
        OneChange,
        /// Some paths went later: pairs or nodes one after another.
        Staggered,
    }
}

/// Since when, and how: present when a log gives an onset, a path fails, a node has no leader
/// or KCP's conditions carry a last successful probe.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// "all paths failed within N s of T (one change)" or "staggered: a↔b at T1, c at T2
    /// (+N s)"; times RFC 3339 UTC to the second. Absent when no log gives an onset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<TimelineShape>,
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
    #[serde(default)]
    pub last_successful_probes: Vec<LastProbe>,
}

impl From<timeline::Timeline> for Timeline {
    fn from(t: timeline::Timeline) -> Self {
        Timeline {
            summary: t.summary,
            shape: t.shape.map(Into::into),
            pairs: super::all(t.pairs),
            no_leader: super::all(t.no_leader),
            clocks: super::all(t.clocks),
            last_successful_probes: super::all(t.last_successful_probes),
        }
    }
}

/// One direction of a pair: `from`'s etcd sending to `to`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by_from: Option<String>,
    /// `to`'s log about `from`, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by_to: Option<String>,
    /// What the line of the onset said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sign: Option<LogKind>,
    /// True when the log of the onset's end shows no line of the path working before it: the
    /// log read begins inside the episode, which began at or before `onset`.
    #[serde(default)]
    pub at_or_before: bool,
    /// When `firstSign` is `PeerUnhealthy` (etcd's prober, which checks a healthy peer's status
    /// only every 30 s): the earliest the path may have failed, 34 s before `onset`. The cut
    /// lies between the two; no line of etcd's says closer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earliest: Option<String>,
    /// Whether this run's check of `from` → `to`:2380 failed; absent when not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_now: Option<bool>,
}

impl From<timeline::PairOnset> for PairOnset {
    fn from(p: timeline::PairOnset) -> Self {
        PairOnset {
            from: p.from,
            to: p.to,
            onset: p.onset,
            seen_by_from: p.seen_by_from,
            seen_by_to: p.seen_by_to,
            first_sign: p.first_sign.map(Into::into),
            at_or_before: p.at_or_before,
            earliest: p.earliest,
            failing_now: p.failing_now,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoLeaderSince {
    pub node: String,
    /// The first no-leader line after the last known leader, corrected (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

impl From<timeline::NoLeaderSince> for NoLeaderSince {
    fn from(n: timeline::NoLeaderSince) -> Self {
        NoLeaderSince {
            node: n.node,
            since: n.since,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

impl From<timeline::NodeClock> for NodeClock {
    fn from(c: timeline::NodeClock) -> Self {
        NodeClock {
            node: c.node,
            offset_ms: c.offset_ms,
            trusted: c.trusted,
            note: c.note,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastProbe {
    pub node: String,
    /// The Machine condition whose message says it (e.g. `EtcdMemberHealthy`).
    pub condition: String,
    /// The time as the condition writes it (the Supervisor's clock).
    pub at: String,
}

impl From<timeline::LastProbe> for LastProbe {
    fn from(p: timeline::LastProbe) -> Self {
        LastProbe {
            node: p.node,
            condition: p.condition,
            at: p.at,
        }
    }
}
