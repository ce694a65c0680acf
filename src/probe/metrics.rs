//! etcd's own metrics, as the probe reads them: `http://127.0.0.1:2381/metrics` (kubeadm's
//! `--listen-metrics-urls`; `[::1]` on IPv6 nodes), no certificate, no quorum needed. Read twice,
//! right before the path checks start and right after the last one ends (probe.sh's `main`
//! and `reads_after`), so a counter read by both counts what happened during the checks.
//!
//! The probe only fetches: it keeps the lines of the families below (and their `# TYPE` lines),
//! at most 64 KiB. The text is the node's word: it is parsed here with the `prometheus-parse`
//! crate, bounded ([`MAX_TEXT_BYTES`], [`MAX_PEERS`], [`MAX_BUCKETS`]), and only numbers are
//! taken from it; a peer ID not written as etcd writes it is dropped.
//!
//! The families (their names, labels and buckets are the same in etcd 3.4, 3.5 and 3.6, checked
//! against the lab's 3.4.23 and 3.5.1 and against v3.6.0's source: server/etcdserver/metrics.go,
//! server/etcdserver/api/rafthttp/metrics.go, server/storage/{wal,backend,mvcc}/metrics.go,
//! server/storage/metrics.go; 3.4 also prints the database size as
//! `etcd_debugging_mvcc_db_total_size_in_bytes`, deprecated and gone from 3.5.0 on, CHANGELOG-3.5):
//! - `etcd_server_id{server_id}`: this member's ID;
//! - `etcd_server_has_leader`, `etcd_server_leader_changes_seen_total`;
//! - `etcd_network_peer_sent_failures_total{To}`, `etcd_network_peer_round_trip_time_seconds{To}`
//!   (histogram), `etcd_network_disconnected_peers_total{Local,Remote}`;
//! - `etcd_disk_wal_fsync_duration_seconds`, `etcd_disk_backend_commit_duration_seconds`
//!   (histograms, buckets 1 ms to 8.192 s);
//! - `etcd_mvcc_db_total_size_in_bytes`, `etcd_server_quota_backend_bytes`.

use std::collections::BTreeMap;

use crate::probe::output::{MemberId, MetricsRead, QueryOutcome};
use prometheus_parse::{Scrape, Value};

/// The families the probe keeps of a read (and their `# TYPE` lines): handed to the script
/// ([`crate::probe::script::CAPS`]), so it keeps exactly what [`Counters::parse`] reads.
pub(crate) const FAMILIES: &[&str] = &[
    "etcd_server_id",
    "etcd_server_has_leader",
    "etcd_server_leader_changes_seen_total",
    "etcd_network_peer_sent_failures_total",
    "etcd_network_peer_round_trip_time_seconds",
    "etcd_network_disconnected_peers_total",
    "etcd_network_peer_sent_bytes_total",
    "etcd_network_peer_received_bytes_total",
    "etcd_disk_wal_fsync_duration_seconds",
    "etcd_disk_backend_commit_duration_seconds",
    "etcd_mvcc_db_total_size_in_bytes",
    "etcd_debugging_mvcc_db_total_size_in_bytes",
    "etcd_server_quota_backend_bytes",
];

/// The most of a read's text the plugin reads: the probe keeps 64 KiB (`METRICS_KEEP`), each
/// byte at most 6 once escaped in JSON, and what it reads back is the unescaped text.
pub const MAX_TEXT_BYTES: usize = 65536;
/// Peers read from one member's metrics: as many as a member list holds
/// ([`crate::probe::parse::bounds::MAX_MEMBERS`]).
pub const MAX_PEERS: usize = 64;
/// Buckets of one histogram: etcd's have 15 to 17.
pub const MAX_BUCKETS: usize = 64;

/// A cumulative histogram: `(upper bound, count of observations at most that)`, by bound,
/// `+Inf` last.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(f64, f64)>,
}

impl Histogram {
    /// How many observations in all (the `+Inf` bucket).
    pub fn count(&self) -> f64 {
        self.buckets.last().map_or(0.0, |b| b.1)
    }

    /// The observations certainly above `bound`: those over the smallest bucket bound at least
    /// `bound` (with etcd's buckets, `above(1.0)` counts those over 1.024 s).
    pub fn above(&self, bound: f64) -> f64 {
        let at_most = self
            .buckets
            .iter()
            .find(|(le, _)| *le >= bound)
            .map_or(0.0, |b| b.1);
        (self.count() - at_most).max(0.0)
    }

    /// The `q` quantile as Prometheus's `histogram_quantile` estimates it: linear within the
    /// bucket that holds it, the largest finite bound when it falls in `+Inf`. `None` without
    /// observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total <= 0.0 || self.buckets.len() < 2 {
            return None;
        }
        let rank = q * total;
        let mut lower = (0.0, 0.0);
        for &(le, count) in &self.buckets {
            if count >= rank {
                if le.is_infinite() {
                    return Some(lower.0);
                }
                let width = count - lower.1;
                if width <= 0.0 {
                    return Some(le);
                }
                return Some(lower.0 + (le - lower.0) * (rank - lower.1) / width);
            }
            lower = (le, count);
        }
        Some(lower.0)
    }

    /// What was observed between `before` and this read (the same buckets); `None` when the
    /// buckets differ or a count went down (etcd restarted between the reads).
    pub fn since(&self, before: &Histogram) -> Option<Histogram> {
        if self.buckets.len() != before.buckets.len() {
            return None;
        }
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for (a, b) in self.buckets.iter().zip(&before.buckets) {
            if a.0 != b.0 || a.1 < b.1 {
                return None;
            }
            buckets.push((a.0, a.1 - b.1));
        }
        Some(Histogram { buckets })
    }
}

/// What etcd counts about one peer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerCounters {
    pub sent_failures: Option<f64>,
    pub round_trip: Option<Histogram>,
    pub disconnected: Option<f64>,
    /// Bytes etcd wrote to the peer (`etcd_network_peer_sent_bytes_total{To}`): they grow on a
    /// stream whose packets a silent drop eats, where no send fails.
    pub sent_bytes: Option<f64>,
    /// Bytes etcd read from the peer (`etcd_network_peer_received_bytes_total{From}`).
    pub received_bytes: Option<f64>,
}

/// The families this build reads, from one read's text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub server_id: Option<MemberId>,
    pub has_leader: Option<bool>,
    pub leader_changes: Option<f64>,
    pub peers: BTreeMap<MemberId, PeerCounters>,
    pub wal_fsync: Option<Histogram>,
    pub backend_commit: Option<Histogram>,
    pub db_size: Option<f64>,
    pub quota: Option<f64>,
}

impl MetricsRead {
    /// The counters of a read that answered; `None` otherwise.
    pub fn counters(&self) -> Option<Counters> {
        if self.outcome != QueryOutcome::Ok {
            return None;
        }
        self.text.as_deref().map(Counters::parse)
    }
}

/// A value a counter or a gauge may hold: finite and not negative.
fn number(v: f64) -> Option<f64> {
    (v.is_finite() && v >= 0.0).then_some(v)
}

fn scalar(v: &Value) -> Option<f64> {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => number(*x),
        _ => None,
    }
}

fn histogram(v: &Value) -> Option<Histogram> {
    let Value::Histogram(hs) = v else { return None };
    let mut buckets: Vec<(f64, f64)> = hs
        .iter()
        .take(MAX_BUCKETS)
        .filter(|h| !h.less_than.is_nan() && h.count.is_finite() && h.count >= 0.0)
        .map(|h| (h.less_than, h.count))
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    buckets.dedup_by(|a, b| a.0 == b.0);
    // Cumulative, ending in +Inf, or not a histogram etcd wrote.
    let cumulative = buckets.windows(2).all(|w| w[0].1 <= w[1].1);
    let ends = buckets.last().is_some_and(|b| b.0 == f64::INFINITY);
    (cumulative && ends).then_some(Histogram { buckets })
}

impl Counters {
    /// The families above from a read's text (at most [`MAX_TEXT_BYTES`] of it); anything else,
    /// or any line the crate does not read, is left out.
    pub fn parse(text: &str) -> Counters {
        let text = crate::probe::head(text, MAX_TEXT_BYTES);
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let Ok(scrape) = Scrape::parse(lines) else {
            return Counters::default();
        };
        let mut out = Counters::default();
        // 3.4's second name only where the name of 3.4 to 3.6 is missing.
        let mut debugging_db_size = None;
        // One fixed order, so that the same text gives the same numbers every run: the crate
        // puts histograms in a HashMap (`Scrape::parse_at`'s `buckets`) and returns them in its
        // random order, so a family written twice (two series of one name, their labels
        // differing) would give either one. By name, then labels (sorted, as the crate prints
        // them), then line order (a stable sort): where a family is written more than once the
        // series last in that order is the one taken (the loop below keeps the last), every run.
        let mut samples: Vec<&prometheus_parse::Sample> = scrape.samples.iter().collect();
        samples.sort_by_cached_key(|s| (s.metric.clone(), s.labels.to_string()));
        for s in samples {
            let peer = |label: &str| s.labels.get(label).and_then(|id| MemberId::parse(id).ok());
            match s.metric.as_str() {
                "etcd_server_id" if scalar(&s.value) == Some(1.0) => {
                    out.server_id = s
                        .labels
                        .get("server_id")
                        .and_then(|id| MemberId::parse(id).ok());
                }
                "etcd_server_has_leader" => {
                    out.has_leader = scalar(&s.value).map(|v| v >= 1.0);
                }
                "etcd_server_leader_changes_seen_total" => out.leader_changes = scalar(&s.value),
                "etcd_disk_wal_fsync_duration_seconds" => out.wal_fsync = histogram(&s.value),
                "etcd_disk_backend_commit_duration_seconds" => {
                    out.backend_commit = histogram(&s.value)
                }
                "etcd_mvcc_db_total_size_in_bytes" => out.db_size = scalar(&s.value),
                "etcd_debugging_mvcc_db_total_size_in_bytes" => {
                    debugging_db_size = scalar(&s.value)
                }
                "etcd_server_quota_backend_bytes" => out.quota = scalar(&s.value),
                "etcd_network_peer_sent_failures_total" => {
                    if let Some(p) = peer("To").and_then(|id| out.peer(id)) {
                        p.sent_failures = scalar(&s.value);
                    }
                }
                "etcd_network_peer_round_trip_time_seconds" => {
                    if let Some(p) = peer("To").and_then(|id| out.peer(id)) {
                        p.round_trip = histogram(&s.value);
                    }
                }
                "etcd_network_peer_sent_bytes_total" => {
                    if let Some(p) = peer("To").and_then(|id| out.peer(id)) {
                        p.sent_bytes = scalar(&s.value);
                    }
                }
                "etcd_network_peer_received_bytes_total" => {
                    if let Some(p) = peer("From").and_then(|id| out.peer(id)) {
                        p.received_bytes = scalar(&s.value);
                    }
                }
                "etcd_network_disconnected_peers_total" => {
                    if let Some(p) = peer("Remote").and_then(|id| out.peer(id)) {
                        p.disconnected = scalar(&s.value);
                    }
                }
                _ => {}
            }
        }
        out.db_size = out.db_size.or(debugging_db_size);
        out
    }

    /// The entry of peer `id`, made on first use while there are fewer than [`MAX_PEERS`].
    fn peer(&mut self, id: MemberId) -> Option<&mut PeerCounters> {
        if !self.peers.contains_key(&id) && self.peers.len() >= MAX_PEERS {
            return None;
        }
        Some(self.peers.entry(id).or_default())
    }
}

#[cfg(test)]
mod tests;
