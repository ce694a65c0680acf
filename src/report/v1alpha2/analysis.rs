//! The analysis of a `DiagnoseReport`: the verdict, the node-to-node matrices and each node's
//! etcd log findings.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::all;

use crate::analyse::verdict;
use crate::probe::etcdlog;

/// The etcd log findings of one node whose log could be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeLogs {
    pub node: String,
    pub summary: LogSummary,
}

impl From<verdict::NodeLogs> for NodeLogs {
    fn from(l: verdict::NodeLogs) -> Self {
        NodeLogs {
            node: l.node,
            summary: l.summary.into(),
        }
    }
}

impl NodeLogs {
    /// A member ID as the name of the node whose log says it is that member, else the ID.
    pub fn member_name(logs: &[NodeLogs], id: &str) -> String {
        etcdlog::member_name(
            logs.iter()
                .map(|l| (l.node.as_str(), l.summary.local_member_id.as_deref())),
            id,
        )
    }
}

mirror_enum! {
    /// What an etcd log line says (PascalCase, as written).
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        schemars::JsonSchema, strum::Display, strum::VariantArray,
    )]
    pub enum LogKind from etcdlog::LogKind {
    PeerInactive,
    PeerActive,
    PeerUnhealthy,
    LostStream,
    PeerUrlUnreachable,
    IoTimeout,
    ConnectionRefused,
    NoRouteToHost,
    ConnectionReset,
    TlsHandshakeTimeout,
    TlsRemoteError,
    RejectedConnection,
    /// A TLS handshake on the client port (2379) failed: a client's problem, not a peer's.
    ClientRejectedConnection,
    CertExpired,
    CertNotYetValid,
    CertNameMismatch,
    CertUnknownAuthority,
    ClusterIdMismatch,
    /// A removed member is still talking: its messages or streams are rejected, or it was told so.
    MemberRemoved,
    /// Informational: "removed member", logged on every member removal (every rolling update).
    MemberRemovedInfo,
    /// A peer not in this member's member list dialled it, or a peer does not know this member.
    MemberUnknown,
    /// A message meant for another member ID arrived here: an IP address reused by a new member.
    MemberIdMismatch,
    /// etcd refused to start: its member was already bootstrapped into the cluster.
    MemberAlreadyBootstrapped,
    /// The member could not publish its attributes through raft (no quorum at start-up).
    PublishFailed,
    LeaderLost,
    /// raft "elected leader": this member knows a leader (again).
    LeaderElected,
    /// raft "changed leader from X to Y": leadership moved without a gap (flapping if frequent).
    LeaderChanged,
    /// No leader: /health false, proposals dropped, "etcdserver: no leader".
    NoLeader,
    ElectionStarted,
    LeaderSteppedDown,
    HeartbeatLate,
    /// A linearizable read timed out waiting for the leader's read index.
    ReadIndexTimeout,
    /// rafthttp dropped raft messages: the buffer towards (or from) a peer is full.
    BufferFull,
    SlowFdatasync,
    ApplySlow,
    NoSpace,
    ClockDrift,
    /// An alarm was disarmed (`etcdctl alarm disarm`): a NOSPACE before it is over.
    AlarmDisarmed,
    /// etcd exited for a reason of its own (a fatal or panic line, bad flags).
    Fatal,
    /// etcd exited because it could not reach its peers: the network's doing, not the member's.
    FatalUnreachable,
    /// etcd was told to stop (SIGTERM): a kubelet killing it after failed probes, or a rollout.
    Terminated,
    }
}

impl LogKind {
    /// What the kind means, for a person ([`etcdlog::LogKind::phrase`]); the name stays the
    /// JSON's.
    pub fn phrase(self) -> &'static str {
        etcdlog::LogKind::from(self).phrase()
    }
}

/// All lines of one kind in a node's etcd log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogFinding {
    pub kind: LogKind,
    /// How many lines.
    pub count: usize,
    /// The peer member IDs the lines name.
    pub peer_ids: BTreeSet<String>,
    /// The peer addresses the lines name (`host:port`, or a bare host).
    pub peer_addresses: BTreeSet<String>,
    /// The first line's time (RFC 3339 UTC).
    pub first: Option<String>,
    /// The last line's time (RFC 3339 UTC).
    pub last: Option<String>,
    /// One representative line, cut short.
    pub example: String,
}

impl From<etcdlog::Finding> for LogFinding {
    fn from(f: etcdlog::Finding) -> Self {
        LogFinding {
            kind: f.kind.into(),
            count: f.count,
            peer_ids: f.peer_ids,
            peer_addresses: f.peer_addresses,
            first: f.first,
            last: f.last,
            example: f.example,
        }
    }
}

mirror_enum! {
    /// Which forms the etcd lines were in.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum LogFormat from etcdlog::LogFormat {
        Zap,
        Text,
        Mixed,
        Unknown,
    }
}

/// What a node's etcd log says, counted in its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogSummary {
    /// One per kind seen in the window, in `LogKind` order.
    pub findings: Vec<LogFinding>,
    /// Non-blank physical lines.
    pub lines: usize,
    /// Log lines recognised (a CRI `P…F` run counts once).
    pub parsed_lines: usize,
    pub format: LogFormat,
    /// The oldest line's time.
    pub first_ts: Option<String>,
    /// The newest line's time.
    pub last_ts: Option<String>,
    /// The member's own ID, as its log names it.
    pub local_member_id: Option<String>,
    pub etcd_version: Option<String>,
    /// Whether the member knows a leader at its last leader line; null when no such line.
    #[serde(default)]
    pub leader: Option<LeaderView>,
    /// The window the findings were counted in; null when the whole log counted.
    #[serde(default)]
    pub window: Option<LogWindow>,
    /// What older lines said, in `LogKind` order: the past, never a verdict's reason.
    #[serde(default)]
    pub history: Vec<LogFinding>,
}

impl From<etcdlog::LogSummary> for LogSummary {
    fn from(s: etcdlog::LogSummary) -> Self {
        LogSummary {
            findings: all(s.findings),
            lines: s.lines,
            parsed_lines: s.parsed_lines,
            format: s.format.into(),
            first_ts: s.first_ts,
            last_ts: s.last_ts,
            local_member_id: s.local_member_id,
            etcd_version: s.etcd_version,
            leader: s.leader.map(Into::into),
            window: s.window.map(Into::into),
            history: all(s.history),
        }
    }
}

mirror_enum! {
    /// What the member's last leader line says.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum LeaderState from etcdlog::LeaderState {
        /// The member follows (or is) a leader.
        Known,
        /// The member has no leader.
        NoLeader,
    }
}

/// The leader as a member's raft lines tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderView {
    pub state: LeaderState,
    /// The leader's member ID when `Known` (it may be the member itself).
    pub leader_id: Option<String>,
    /// When the state began.
    pub since: Option<String>,
    /// The raft term of the last leader line that names one.
    pub term: Option<u64>,
    /// The time of the last "elected leader", "changed leader" or "lost leader" line.
    pub last_change: Option<String>,
    /// How often leadership moved ("elected leader" and "changed leader" lines).
    pub changes: usize,
}

impl From<etcdlog::LeaderView> for LeaderView {
    fn from(v: etcdlog::LeaderView) -> Self {
        LeaderView {
            state: v.state.into(),
            leader_id: v.leader_id,
            since: v.since,
            term: v.term,
            last_change: v.last_change,
            changes: v.changes,
        }
    }
}

/// The present of a log: lines at or after `since` count, older ones are history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogWindow {
    /// The oldest time that counts (RFC 3339 UTC).
    pub since: String,
    /// The window's end: the node's clock at probe time, or the log's newest line.
    pub until: String,
    /// `--since`, in seconds.
    pub seconds: u64,
    pub until_from: WindowEnd,
}

impl From<etcdlog::LogWindow> for LogWindow {
    fn from(w: etcdlog::LogWindow) -> Self {
        LogWindow {
            since: w.since,
            until: w.until,
            seconds: w.seconds,
            until_from: w.until_from.into(),
        }
    }
}

mirror_enum! {
    /// Where a log window's end comes from: the node's own clock, or its newest line.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum WindowEnd from etcdlog::WindowEnd {
        ProbeClock,
        LastLine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    /// A contract enum reads as its domain twin: evidence written with the domain's words
    /// names the codes the JSON carries.
    fn display_is_the_domains<D, C>()
    where
        D: VariantArray + Copy + std::fmt::Display,
        C: From<D> + Serialize + std::fmt::Display,
    {
        for d in D::VARIANTS {
            let c = C::from(*d);
            assert_eq!(
                c.to_string(),
                d.to_string(),
                "{}",
                std::any::type_name::<C>()
            );
            assert_eq!(
                serde_json::to_value(&c).unwrap(),
                serde_json::Value::String(d.to_string())
            );
        }
    }

    #[test]
    fn the_enums_read_as_their_domain_twins() {
        display_is_the_domains::<etcdlog::LogKind, LogKind>();
        display_is_the_domains::<etcdlog::LogFormat, LogFormat>();
        display_is_the_domains::<etcdlog::LeaderState, LeaderState>();
        display_is_the_domains::<etcdlog::WindowEnd, WindowEnd>();
    }

    #[test]
    fn a_log_summary_is_camel_case_and_round_trips() {
        let s = LogSummary::from(etcdlog::classify(&etcdlog::tests::wrapped_log()));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["findings"][0]["kind"], "PeerUnhealthy");
        assert_eq!(json["findings"][1]["peerAddresses"][0], "198.18.0.12:2380");
        assert_eq!(json["parsedLines"], 4);
        assert_eq!(serde_json::from_value::<LogSummary>(json).unwrap(), s);
    }

    #[test]
    fn the_schema_follows_the_serde_attributes() {
        let schema = serde_json::to_string(&schemars::schema_for!(NodeLogs)).unwrap();
        for said in [
            "\"parsedLines\"",
            "\"untilFrom\"",
            "\"PeerUnhealthy\"",
            "\"NoLeader\"",
        ] {
            assert!(schema.contains(said), "{said} not in {schema}");
        }
        let schema =
            serde_json::to_string(&schemars::schema_for!(crate::analyse::matrix::Matrix)).unwrap();
        assert!(schema.contains("\"TlsStalled\""), "{schema}");
        let schema = serde_json::to_string(&schemars::schema_for!(verdict::Verdict)).unwrap();
        assert!(schema.contains("\"nextSteps\""), "{schema}");
    }
}
