//! etcd's own account, beside the probe's: what each member's metrics say (read before and
//! after the path checks: [`crate::probe::metrics`]), per node. Peer IDs are named by the nodes
//! the member lists put at them. Used as evidence, never alone against the present:
//! - a network verdict lists, per node, the peers etcd failed to send to during the checks
//!   (`etcd_network_peer_sent_failures_total` grew between the reads), matched against the
//!   probe's 2380 path from that node to that peer, and the members without a leader;
//! - `EtcdSlowDisk` also holds for a WAL fsync p99 over etcd's own 1 s warning since it started,
//!   unless the fsyncs during the checks were all fast ([`slow_fsync`]);
//! - `EtcdNoSpace` also holds for a database at or over its quota ([`over_quota`]), where the
//!   alarm list and `/health` do not say otherwise (the rule's own order).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

use super::matrix::Matrix;
use crate::probe::metrics::{Counters, Histogram, PeerCounters};
use crate::probe::output::{MemberId, MetricsRead, QueryOutcome};
use crate::probe::NodeReport;

/// etcd's own warning: a WAL fsync over 1 s (wal/wal.go `warnSyncDuration`, 3.4 to 3.6).
pub(crate) const SLOW_FSYNC_SECONDS: f64 = 1.0;

// The contract of `etcdMetrics` (`report::DiagnoseReport`): these types are what `-o json|yaml`
// prints and what the schema describes, so their doc comments are the schema's descriptions and
// their serde attributes fix the json names (tests/it/schema.rs and the json-contract snapshots
// hold both).

/// How one read of `/metrics` went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MetricsRead")]
pub struct ReadResult {
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
    #[serde(serialize_with = "id_text", deserialize_with = "id_from_text")]
    #[schemars(with = "String")]
    pub id: MemberId,
    /// The node the member lists put at this ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `etcd_network_peer_sent_failures_total`: failed sends since this member started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_failures: Option<u64>,
    /// How many more between the two reads: etcd's own failures during the checks.
    // (None unless both reads answered and the counter did not go down.)
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
    // (A peer without the series yet counts 0.)
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
    // (The smallest bucket bound of at least 1 s.)
    pub over_one_second: u64,
    /// Observations between the two reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during_checks: Option<u64>,
    /// Of them, over 1 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_one_second_during_checks: Option<u64>,
}

/// One node's etcd metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdMetrics {
    /// The node (as in `nodes`).
    pub node: String,
    /// The read right before the path checks.
    pub before: ReadResult,
    /// The read right after the last path check ended.
    pub after: ReadResult,
    /// This member's ID (`etcd_server_id`), as etcdctl prints it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "some_id_text",
        deserialize_with = "some_id_from_text"
    )]
    #[schemars(with = "Option<String>")]
    pub member_id: Option<MemberId>,
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

impl EtcdMetrics {
    /// Both reads answered: what etcd counted between them is a count of the checks' time.
    pub fn both_answered(&self) -> bool {
        self.before.outcome == QueryOutcome::Ok && self.after.outcome == QueryOutcome::Ok
    }
}

// A member ID in the json as etcdctl prints it (`MemberId`'s `Display`); read back only in
// etcd's canonical form ([`MemberId::parse`]).
fn id_text<S: Serializer>(id: &MemberId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

fn id_from_text<'de, D: Deserializer<'de>>(d: D) -> Result<MemberId, D::Error> {
    let text = String::deserialize(d)?;
    MemberId::parse(&text).map_err(|e| D::Error::custom(format!("member ID {text:?}: {e}")))
}

fn some_id_text<S: Serializer>(id: &Option<MemberId>, s: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => id_text(id, s),
        None => s.serialize_none(),
    }
}

fn some_id_from_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<MemberId>, D::Error> {
    #[derive(Deserialize)]
    struct Id(#[serde(deserialize_with = "id_from_text")] MemberId);
    Ok(Option::<Id>::deserialize(d)?.map(|Id(id)| id))
}

fn result(r: &MetricsRead) -> ReadResult {
    ReadResult {
        outcome: r.outcome,
        detail: r.detail.clone(),
    }
}

fn whole(v: f64) -> u64 {
    // Saturating: a value past u64 is a hostile one, and stays a number.
    v.round() as u64
}

fn grew(after: Option<f64>, before: Option<f64>) -> Option<u64> {
    let (a, b) = (after?, before?);
    (a >= b).then(|| whole(a - b))
}

fn latency(after: Option<&Histogram>, before: Option<&Histogram>) -> Option<Latency> {
    let h = after.or(before)?;
    let during = after.zip(before).and_then(|(a, b)| a.since(b));
    Some(Latency {
        p99_ms: h.quantile(0.99).map(|s| whole(s * 1000.0)),
        count: whole(h.count()),
        over_one_second: whole(h.above(SLOW_FSYNC_SECONDS)),
        during_checks: during.as_ref().map(|d| whole(d.count())),
        over_one_second_during_checks: during.map(|d| whole(d.above(SLOW_FSYNC_SECONDS))),
    })
}

/// How much a peer's counter grew between the reads. A series etcd has not made yet counts 0
/// (it adds one on the first count), so a peer the before-read lacked, while that read was
/// answered, counts from 0; `None` when either read is missing.
fn between(
    after: Option<&PeerCounters>,
    before: Option<&PeerCounters>,
    before_read: bool,
    f: fn(&PeerCounters) -> Option<f64>,
) -> Option<u64> {
    match (after, before) {
        (Some(a), Some(b)) => grew(Some(f(a).unwrap_or(0.0)), Some(f(b).unwrap_or(0.0))),
        (Some(a), None) if before_read => grew(f(a), Some(0.0)),
        _ => None,
    }
}

/// Both reads' counters of a node whose probe has the metrics field.
fn counters(
    n: &NodeReport,
) -> Option<(
    &MetricsRead,
    &MetricsRead,
    Option<Counters>,
    Option<Counters>,
)> {
    let m = n.probe()?.metrics.as_ref()?;
    Some((&m.before, &m.after, m.before.counters(), m.after.counters()))
}

/// One node's metrics; `None` for a node not probed or whose probe is older than the reads.
/// `names`: the node at each member ID, from the member lists.
pub(crate) fn node_metrics(
    n: &NodeReport,
    names: &BTreeMap<MemberId, String>,
) -> Option<EtcdMetrics> {
    let (before_read, after_read, before, after) = counters(n)?;
    let newest = after.as_ref().or(before.as_ref());
    let mut ids: Vec<MemberId> = newest
        .map(|c| c.peers.keys().copied().collect())
        .unwrap_or_default();
    ids.sort();
    let peers = ids
        .into_iter()
        .map(|id| {
            let a = after.as_ref().and_then(|c| c.peers.get(&id));
            let b = before.as_ref().and_then(|c| c.peers.get(&id));
            let p = a.or(b);
            PeerMetrics {
                id,
                node: names.get(&id).cloned(),
                sent_failures: p.and_then(|p| p.sent_failures).map(whole),
                sent_failures_during_checks: between(a, b, before.is_some(), |c| c.sent_failures),
                round_trip_p99_ms: p
                    .and_then(|p| p.round_trip.as_ref()?.quantile(0.99))
                    .map(|s| whole(s * 1000.0)),
                disconnects: p.and_then(|p| p.disconnected).map(whole),
                sent_bytes_during_checks: between(a, b, before.is_some(), |c| c.sent_bytes),
                received_bytes_during_checks: between(a, b, before.is_some(), |c| c.received_bytes),
            }
        })
        .collect();
    let pick = |f: fn(&Counters) -> Option<f64>| {
        after
            .as_ref()
            .and_then(f)
            .or_else(|| before.as_ref().and_then(f))
    };
    let between_reads_ms = match (before_read.at_ms, after_read.at_ms) {
        (Some(b), Some(a)) if a >= b && before.is_some() && after.is_some() => Some(a - b),
        _ => None,
    };
    Some(EtcdMetrics {
        node: n.name.clone(),
        before: result(before_read),
        after: result(after_read),
        member_id: newest.and_then(|c| c.server_id),
        has_leader: after
            .as_ref()
            .and_then(|c| c.has_leader)
            .or_else(|| before.as_ref().and_then(|c| c.has_leader)),
        leader_changes: pick(|c| c.leader_changes).map(whole),
        between_reads_ms,
        peers,
        wal_fsync: latency(
            after.as_ref().and_then(|c| c.wal_fsync.as_ref()),
            before.as_ref().and_then(|c| c.wal_fsync.as_ref()),
        ),
        backend_commit: latency(
            after.as_ref().and_then(|c| c.backend_commit.as_ref()),
            before.as_ref().and_then(|c| c.backend_commit.as_ref()),
        ),
        db_size_bytes: pick(|c| c.db_size).map(whole),
        quota_bytes: pick(|c| c.quota).map(whole),
    })
}

/// Every node's metrics, in the nodes' order; the nodes without them left out.
pub(crate) fn read(nodes: &[NodeReport], names: &BTreeMap<MemberId, String>) -> Vec<EtcdMetrics> {
    nodes
        .iter()
        .filter_map(|n| node_metrics(n, names))
        .collect()
}

/// Each node's own member ID as its metrics say (`etcd_server_id`): the node at that ID.
pub(crate) fn own_ids(nodes: &[NodeReport]) -> BTreeMap<MemberId, String> {
    nodes
        .iter()
        .filter_map(|n| {
            let (_, _, before, after) = counters(n)?;
            let id = after
                .and_then(|c| c.server_id)
                .or_else(|| before?.server_id)?;
            Some((id, n.name.clone()))
        })
        .collect()
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// Evidence for `EtcdSlowDisk` from etcd's WAL fsync histogram: a p99 since start over etcd's
/// own 1 s warning, with the count over 1 s; never when the fsyncs during the checks (some
/// were observed) were all under it: the present contradicts the history.
pub(crate) fn slow_fsync(n: &NodeReport) -> Option<String> {
    let m = node_metrics(n, &BTreeMap::new())?;
    let f = m.wal_fsync?;
    let p99 = f.p99_ms?;
    if (p99 as f64) <= SLOW_FSYNC_SECONDS * 1000.0 || f.over_one_second == 0 {
        return None;
    }
    if f.during_checks.is_some_and(|d| d > 0) && f.over_one_second_during_checks == Some(0) {
        return None;
    }
    let during = match (f.during_checks, f.over_one_second_during_checks) {
        (Some(d), Some(o)) if d > 0 => format!("; {o} of {d} during the checks"),
        _ => String::new(),
    };
    Some(format!(
        "{}: etcd's WAL fsync p99 is {} since it started (etcd warns over 1 s): {} of {} fsyncs over 1 s{during} (etcd_disk_wal_fsync_duration_seconds)",
        n.name,
        seconds(p99),
        f.over_one_second,
        f.count
    ))
}

fn bytes(b: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    format!("{:.1} MiB", b as f64 / MIB)
}

/// Evidence for `EtcdNoSpace` from etcd's metrics: the database at or over its quota.
pub(crate) fn over_quota(n: &NodeReport) -> Option<String> {
    let m = node_metrics(n, &BTreeMap::new())?;
    let (size, quota) = (m.db_size_bytes?, m.quota_bytes?);
    (quota > 0 && size >= quota).then(|| {
        format!(
            "{}: etcd's database is {}, at or over its quota of {} (etcd_mvcc_db_total_size_in_bytes, etcd_server_quota_backend_bytes)",
            n.name,
            bytes(size),
            bytes(quota)
        )
    })
}

/// At most this many peers named in one node's line; the rest are counted.
const PEERS_SHOWN: usize = 8;

/// Evidence lines for a network verdict: per node, the peers etcd failed to send to during the
/// checks, each set against the probe's 2380 path from that node to it; the members that have
/// no leader. Nothing for nodes without metrics.
pub(crate) fn network_evidence(metrics: &[EtcdMetrics], matrices: &[Matrix]) -> Vec<String> {
    let peer_matrix = matrices.iter().find(|m| m.port == 2380);
    let mut out = Vec::new();
    for m in metrics {
        out.extend(silent_drop(m, peer_matrix));
        let failing: Vec<&PeerMetrics> = m
            .peers
            .iter()
            .filter(|p| p.sent_failures_during_checks.is_some_and(|d| d > 0))
            .collect();
        if failing.is_empty() {
            continue;
        }
        let (mut agree, mut disagree) = (Vec::new(), Vec::new());
        let named: Vec<String> = failing
            .iter()
            .take(PEERS_SHOWN)
            .map(|p| {
                let who = p.node.clone().unwrap_or_else(|| format!("member {}", p.id));
                let cell = p
                    .node
                    .as_ref()
                    .and_then(|to| peer_matrix?.cell(&m.node, to));
                match cell.map(|c| c.state) {
                    Some(s) if s.is_ok() => disagree.push(who.clone()),
                    Some(s) if s.is_known() => agree.push(who.clone()),
                    _ => {}
                }
                format!("{who} +{}", p.sent_failures_during_checks.unwrap_or(0))
            })
            .collect();
        let more = failing.len().saturating_sub(PEERS_SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let mut line = format!(
            "{}: etcd itself failed to send to its peers during the checks: {}{more} (etcd_network_peer_sent_failures_total)",
            m.node,
            named.join(", ")
        );
        if !agree.is_empty() {
            line.push_str(&format!(
                "; the probe's 2380 to {} failed too",
                agree.join(", ")
            ));
        }
        if !disagree.is_empty() {
            line.push_str(&format!(
                "; the probe's 2380 to {} connected (etcd's sends failed beyond the connect)",
                disagree.join(", ")
            ));
        }
        out.push(line);
    }
    let leaderless: Vec<&str> = metrics
        .iter()
        .filter(|m| m.has_leader == Some(false))
        .map(|m| m.node.as_str())
        .collect();
    if !leaderless.is_empty() {
        out.push(format!(
            "etcd has no leader on {} (etcd_server_has_leader 0)",
            leaderless.join(", ")
        ));
    }
    out
}

/// The line for the peers whose 2380 path from this node timed out while etcd counted no failed
/// send to them yet wrote to them: what a drop without a reset looks like from etcd's side. Its
/// stream to the peer was connected before the cut, and writes into a connection whose packets
/// vanish succeed into the socket's buffer, so `etcd_network_peer_sent_failures_total` stays
/// where it was (seen in the lab on 3.4 and 3.5: no failure counted over 30 s of a fabric drop,
/// while the bytes sent grew and none came back). Without this line, "no failed sends" next to a
/// matrix of timeouts would read as a contradiction.
fn silent_drop(m: &EtcdMetrics, peer_matrix: Option<&Matrix>) -> Option<String> {
    let quiet: Vec<(&str, &PeerMetrics)> = m
        .peers
        .iter()
        .filter(|p| p.sent_failures_during_checks == Some(0))
        .filter(|p| p.sent_bytes_during_checks.is_some_and(|b| b > 0))
        .filter_map(|p| {
            let to = p.node.as_deref()?;
            let cell = peer_matrix?.cell(&m.node, to)?;
            (cell.state == super::matrix::CellState::Timeout).then_some((to, p))
        })
        .collect();
    if quiet.is_empty() {
        return None;
    }
    let shown: Vec<String> = quiet
        .iter()
        .take(PEERS_SHOWN)
        .map(|(to, p)| {
            let received = p
                .received_bytes_during_checks
                .map_or_else(|| "?".to_string(), |b| format!("+{b} B"));
            format!(
                "{to} (sent +{} B, received {received})",
                p.sent_bytes_during_checks.unwrap_or(0)
            )
        })
        .collect();
    let more = quiet.len().saturating_sub(PEERS_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{}: etcd counted no failed send during the checks to {}{more}, whose 2380 timed out: it kept writing to them \
         (etcd_network_peer_sent_bytes_total, etcd_network_peer_received_bytes_total), as etcd does when packets are \
         dropped without a reset: a silent drop, not a refusal",
        m.node,
        shown.join(", ")
    ))
}
