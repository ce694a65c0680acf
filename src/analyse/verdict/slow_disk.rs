//! Rule 9, EtcdSlowDisk: slow fsyncs, or late heartbeats without peer trouble, in the window;
//! or etcd's own WAL fsync p99 over 1 s ([`crate::analyse::metrics::slow_fsync`]).

use super::evidence::log_evidence;
use super::{strings, verdict, Ctx, Verdict, VerdictCode};
use crate::probe::etcdlog::{LogKind, LogSummary};

/// How many warnings in the window make a slow disk, and not an event. Each "slow fdatasync" is
/// one WAL fsync over 1 s (wal/wal.go `warnSyncDuration = time.Second`, 3.4 to 3.6), as long as
/// etcd's default election timeout (1000 ms): one such stall is a VM snapshot or a vMotion stun,
/// three within `--since` are the datastore. A late heartbeat is one sent more than twice the
/// heartbeat interval late (etcdserver/raft.go `NewTimeoutDetector(2 * heartbeat)`); the same
/// three, and only without any sign of peer trouble in the window (the leader could not send
/// them during an outage either). Fewer, or older, are notes. A late heartbeat is counted once,
/// not once per line: the leader writes one line per follower it was late to (`processMessages`
/// in etcdserver/raft.go, 3.4 to 3.6: one warning per `MsgHeartbeat` whose `to` the per-peer
/// detector flags), so one stall of a 4-member cluster's leader is 3 lines.
pub(super) const SLOW_FSYNC_MIN: usize = 3;
pub(super) const LATE_HEARTBEAT_MIN: usize = 3;

/// How many times the leader was late with its heartbeats: its lines over the followers they
/// name (rounded up; lines that name none count one each).
pub(super) fn late_heartbeats(s: &LogSummary) -> usize {
    s.finding(LogKind::HeartbeatLate)
        .map_or(0, |f| f.count.div_ceil(f.peer_ids.len().max(1)))
}

/// Kinds that say a member had trouble with its peers.
const PEER_TROUBLE: &[LogKind] = &[
    LogKind::PeerInactive,
    LogKind::IoTimeout,
    LogKind::LostStream,
    LogKind::ConnectionRefused,
    LogKind::PeerUnhealthy,
    LogKind::BufferFull,
];

pub(super) fn slow_disk(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for (node, s) in &ctx.logs {
        let fsync = s.finding(LogKind::SlowFdatasync).map_or(0, |f| f.count);
        let late = late_heartbeats(s);
        let network_trouble = PEER_TROUBLE.iter().any(|k| s.finding(*k).is_some());
        if fsync >= SLOW_FSYNC_MIN || (late >= LATE_HEARTBEAT_MIN && !network_trouble) {
            nodes.push(node.clone());
            evidence.extend(log_evidence(
                ctx,
                node,
                &[
                    LogKind::SlowFdatasync,
                    LogKind::HeartbeatLate,
                    LogKind::ApplySlow,
                ],
            ));
        }
    }
    // etcd's own WAL fsync histogram: a p99 over 1 s since start that the checks' own fsyncs
    // do not contradict.
    for n in &ctx.nodes {
        if let Some(line) = crate::analyse::metrics::slow_fsync(n) {
            if !nodes.contains(&n.name) {
                nodes.push(n.name.clone());
            }
            evidence.push(line);
        }
    }
    if nodes.is_empty() {
        return None;
    }
    verdict(
        VerdictCode::EtcdSlowDisk,
        format!("the network is fine, but the disk under etcd is too slow for its heartbeats on {}", nodes.join(", ")),
        nodes,
        evidence,
        strings(&[
            "etcd needs fdatasync well under 10 ms: check the latency of the datastore behind these VMs (vSphere performance charts, storage contention)",
            "Avoid snapshots and storage vMotion of control-plane VMs while they run",
        ]),
    )
}
