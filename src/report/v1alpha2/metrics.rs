//! `etcdMetrics`: etcd's own metrics of each diagnosed node, read by its probe right before and
//! right after the path checks (`http://127.0.0.1:2381/metrics`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{all, QueryOutcome};
use crate::analyse::metrics as m;

/// One node's etcd metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdMetrics {
    /// The node (as in `nodes`).
    pub node: String,
    /// The read right before the path checks.
    pub before: MetricsRead,
    /// The read right after the last path check ended.
    pub after: MetricsRead,
    /// This member's ID (`etcd_server_id`), as etcdctl prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_id: Option<String>,
    /// `etcd_server_has_leader`, after the checks (before them when only that read answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_leader: Option<bool>,
    /// `etcd_server_leader_changes_seen_total`: leader changes since this member started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_changes: Option<u64>,
    /// Milliseconds between the starts of the two reads, when both answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_reads_ms: Option<u64>,
    /// What etcd counts about each peer, by member ID.
    #[serde(default)]
    pub peers: Vec<PeerMetrics>,
    /// `etcd_disk_wal_fsync_duration_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_fsync: Option<Latency>,
    /// `etcd_disk_backend_commit_duration_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_commit: Option<Latency>,
    /// `etcd_mvcc_db_total_size_in_bytes` (3.4 also names it
    /// `etcd_debugging_mvcc_db_total_size_in_bytes`; 3.5 and 3.6 do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_size_bytes: Option<u64>,
    /// `etcd_server_quota_backend_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<u64>,
}

/// How one read of `/metrics` went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsRead {
    pub outcome: QueryOutcome,
    /// The URL asked; with why it failed when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What etcd counts about one peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeerMetrics {
    /// The peer's member ID, as etcdctl prints it.
    pub id: String,
    /// The node the member lists put at this ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `etcd_network_peer_sent_failures_total`: failed sends since this member started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_failures: Option<u64>,
    /// How many more between the two reads: etcd's own failures during the checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_failures_during_checks: Option<u64>,
    /// `etcd_network_peer_round_trip_time_seconds`: p99 since start, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_p99_ms: Option<u64>,
    /// `etcd_network_disconnected_peers_total`: streams to the peer lost since start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disconnects: Option<u64>,
    /// `etcd_network_peer_sent_bytes_total`: bytes written to the peer between the two reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes_during_checks: Option<u64>,
    /// `etcd_network_peer_received_bytes_total`: bytes read from the peer between the two reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bytes_during_checks: Option<u64>,
}

/// A disk latency histogram, summed up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// The 99th percentile since start, in milliseconds (as `histogram_quantile` estimates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<u64>,
    /// Observations since start.
    pub count: u64,
    /// Of them, over 1 s (above the bucket bound 1.024 s).
    pub over_one_second: u64,
    /// Observations between the two reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during_checks: Option<u64>,
    /// Of them, over 1 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_one_second_during_checks: Option<u64>,
}

impl From<m::ReadResult> for MetricsRead {
    fn from(r: m::ReadResult) -> Self {
        MetricsRead {
            outcome: r.outcome.into(),
            detail: r.detail,
        }
    }
}

impl From<m::PeerMetrics> for PeerMetrics {
    fn from(p: m::PeerMetrics) -> Self {
        PeerMetrics {
            id: p.id.to_string(),
            node: p.node,
            sent_failures: p.sent_failures,
            sent_failures_during_checks: p.sent_failures_during_checks,
            round_trip_p99_ms: p.round_trip_p99_ms,
            disconnects: p.disconnects,
            sent_bytes_during_checks: p.sent_bytes_during_checks,
            received_bytes_during_checks: p.received_bytes_during_checks,
        }
    }
}

impl From<m::Latency> for Latency {
    fn from(l: m::Latency) -> Self {
        Latency {
            p99_ms: l.p99_ms,
            count: l.count,
            over_one_second: l.over_one_second,
            during_checks: l.during_checks,
            over_one_second_during_checks: l.over_one_second_during_checks,
        }
    }
}

impl From<m::NodeMetrics> for EtcdMetrics {
    fn from(n: m::NodeMetrics) -> Self {
        EtcdMetrics {
            node: n.node,
            before: n.before.into(),
            after: n.after.into(),
            member_id: n.member_id.map(|id| id.to_string()),
            has_leader: n.has_leader,
            leader_changes: n.leader_changes,
            between_reads_ms: n.between_reads_ms,
            peers: all(n.peers),
            wal_fsync: n.wal_fsync.map(Into::into),
            backend_commit: n.backend_commit.map(Into::into),
            db_size_bytes: n.db_size_bytes,
            quota_bytes: n.quota_bytes,
        }
    }
}
