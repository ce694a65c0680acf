//! A node with a past: its container created hours ago and its log holding etcd's own lines
//! from then, before the live ones (`Lab::age`), and lines written at chosen times of the last
//! minutes (`Lab::append_log_lines`).
//!
//! The lines are rendered in the node's own format: etcd 3.5's zap JSON, etcd 3.4's zap JSON
//! (`--logger=zap`) or 3.4's capnslog text, with the message shapes of the real logs (the lab's
//! captures in tests/fixtures/etcd-logs/v3.4, v3.5) and of etcd's source, cited per line below.
//! Caller line numbers follow the captures where they have the line and are otherwise only
//! indicative.
//!
//! Lines older than the running etcd process go to the container's "past" file
//! (`Node::past_log`), which the crictl stand-in prints before the live log, in time order;
//! newer ones are appended to the live log after what etcd wrote so far.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::config::{EtcdVersion, Logger};
use crate::lab::Lab;
use crate::member::now_ns;
use crate::node::Node;

/// One etcd log line, rendered in the node's format when written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdLine {
    /// The WAL's fsync took longer than 1 s (`warnSyncDuration`), e.g. a VM snapshot or a
    /// vMotion stun: 3.5 server/storage/wal/wal.go `"slow fdatasync"` (took,
    /// expected-duration); 3.4 text `wal: sync duration of …, expected less than 1s`.
    SlowFdatasync { took: Duration },
    /// The NOSPACE alarm raised by member `from` (etcdserver/apply.go `Alarm`): zap
    /// `"alarm raised"` (alarm, from); 3.4 text `alarm NOSPACE raised by peer <id>`.
    NoSpaceAlarmRaised { from: u64 },
    /// The NOSPACE alarm disarmed (`etcdctl alarm disarm`): zap `"alarm disarmed"` (alarm,
    /// from); 3.4 text `alarm disarmed action:DEACTIVATE memberID:<decimal id> alarm:NOSPACE `.
    NoSpaceAlarmDisarmed { from: u64 },
    /// raft's node.go, as this member sees an election: `raft.node: <me> elected leader
    /// <leader> at term <term>` (3.5 with `"logger":"raft"`; 3.4 text through Go's log,
    /// `raft2026/12/02 14:21:32 INFO: …`).
    ElectedLeader { leader: u64, term: u64 },
    /// raft's node.go: `raft.node: <me> lost leader <leader> at term <term>`.
    LostLeader { leader: u64, term: u64 },
    /// The peer prober's dial to `peer` at `ip:2380` timed out: rafthttp/probing_status.go
    /// `"prober detected unhealthy status"` (round-tripper-name, remote-peer-id, rtt, error
    /// `dial tcp <ip>:2380: i/o timeout`); 3.4 text `rafthttp: health check for peer <id> could
    /// not connect: dial tcp <ip>:2380: i/o timeout`.
    PeerDialTimeout { peer: u64, ip: Ipv4Addr },
    /// The stream reader towards `peer` lost its connection after `ip:2380` went silent:
    /// rafthttp/stream.go `"lost TCP streaming connection with remote peer"` (stream-reader-type
    /// `stream Message`, local-member-id, remote-peer-id, error `read tcp …: i/o timeout`); 3.4
    /// text `rafthttp: lost the TCP streaming connection with peer <id> (stream Message reader)`.
    LostStream { peer: u64, ip: Ipv4Addr },
    /// rafthttp/peer_status.go: `"peer became inactive (message send to peer failed)"`
    /// (peer-id, error); 3.4 text `rafthttp: peer <id> became inactive (message send to peer
    /// failed)`. A failure episode with `peer` starts here (the timeline's "since when").
    PeerInactive { peer: u64 },
    /// rafthttp/peer_status.go: `"peer became active"` (peer-id); 3.4 text `rafthttp: peer <id>
    /// became active`. An episode ends here.
    PeerActive { peer: u64 },
    /// rafthttp/stream.go, the stream reader towards `peer` connected: zap `"established TCP
    /// streaming connection with remote peer"` (stream-reader-type `stream Message`,
    /// local-member-id, remote-peer-id; info, as the captures show it: 3.5 at line 412, 3.4 at
    /// 425); 3.4 text `rafthttp: established a TCP streaming connection with peer <id> (stream
    /// Message reader)`. A heal: an episode ends here.
    StreamEstablished { peer: u64 },
    /// A late line: a stream dial towards `peer` begun during a cut that timed out just after
    /// the heal (the lab saw 3.4 write it 0.24 s after the streams' "established").
    /// rafthttp/peer_status.go `deactivate()`: zap `"peer became inactive (message send to peer
    /// failed)"` (peer-id, error `failed to dial <id> on stream Message (dial tcp <ip>:2380: i/o
    /// timeout)`, its `failed to %s %s on %s (%s)`); 3.4 text: that error on its own `E |
    /// rafthttp:` line (before the `became inactive` one, which [`EtcdLine::PeerInactive`] gives).
    PeerInactiveDialTimeout { peer: u64, ip: Ipv4Addr },
    /// The routine of a member's hours: kube-apiserver asks etcd to compact its history every
    /// 5 minutes (`--etcd-compaction-interval`: `DefaultCompactInterval` in
    /// staging/src/k8s.io/apiserver/pkg/storage/storagebackend/config.go), and each member
    /// logs the compaction of its index:
    /// mvcc/index.go `"compact tree index"` (revision, a number); 3.4 text `mvcc:
    /// store.index: compact <rev>`. As etcd 3.4.23 (`--logger=zap` and capnslog) and 3.5.1
    /// wrote it after an `etcdctl compact` (captured from the lab's binaries; callers
    /// mvcc/index.go:189 on 3.4.23, :214 on 3.5.1).
    CompactTreeIndex { revision: u64 },
    /// The compaction that follows it: mvcc/kvstore_compaction.go `"finished scheduled
    /// compaction"` (compact-revision, a number; took); 3.4 text `mvcc: finished scheduled
    /// compaction at <rev> (took <d>)` (callers kvstore_compaction.go:56 on 3.4.23, :57 on
    /// 3.5.1, as captured).
    FinishedCompaction { revision: u64, took: Duration },
    /// A line written as given (it should be in the node's format).
    Raw(String),
}

/// What [`Lab::age`] gives a node.
#[derive(Clone, Debug, Default)]
pub struct AgeSpec {
    /// How long ago the current container was created and started (`crictl ps`' CREATED,
    /// `inspect`'s createdAt/startedAt).
    pub started_ago: Duration,
    /// Lines from before the live ones: (how long ago, line), in any order.
    pub lines: Vec<(Duration, EtcdLine)>,
}

impl AgeSpec {
    /// A container started `ago`, no lines yet.
    pub fn started(ago: Duration) -> Self {
        AgeSpec {
            started_ago: ago,
            lines: Vec::new(),
        }
    }

    /// Adds a line from `ago`.
    pub fn line(mut self, ago: Duration, line: EtcdLine) -> Self {
        self.lines.push((ago, line));
        self
    }
}

const H: u64 = 3600;

/// `(ts_ns, line)` kept for one container's past file.
pub(crate) type PastLine = (u128, String);

/// UTC parts of a time: (year, month, day, hour, minute, second, nanosecond).
fn parts(ns: u128) -> (i32, u8, u8, u8, u8, u8, u32) {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns as i128)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    (
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.nanosecond(),
    )
}

/// zap's ISO8601 time with milliseconds, as etcd's zap config writes it (`2026-12-03T08:40:22.394Z`).
fn zap_ts(ns: u128) -> String {
    let (y, mo, d, h, mi, s, n) = parts(ns);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        n / 1_000_000
    )
}

/// capnslog's time (`2026-11-30 09:12:44.123456`, the node's local time: UTC on the lab).
fn capnslog_ts(ns: u128) -> String {
    let (y, mo, d, h, mi, s, n) = parts(ns);
    format!(
        "{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{:06}",
        n / 1000
    )
}

/// Go's log.LstdFlags time after raft's `raft` prefix (`raft2026/12/02 14:21:32`).
fn golog_ts(ns: u128) -> String {
    let (y, mo, d, h, mi, s, _) = parts(ns);
    format!("raft{y:04}/{mo:02}/{d:02} {h:02}:{mi:02}:{s:02}")
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Go's time.Duration String for the durations these lines carry (`1.512437s`, `850ms`,
/// `198.074µs`).
fn go_duration(d: Duration) -> String {
    let trim = |s: String| s.trim_end_matches('0').trim_end_matches('.').to_string();
    if d >= Duration::from_secs(1) {
        format!("{}s", trim(format!("{:.9}", d.as_secs_f64())))
    } else if d >= Duration::from_millis(1) {
        format!("{}ms", trim(format!("{:.6}", d.as_secs_f64() * 1000.0)))
    } else {
        format!("{}µs", trim(format!("{:.3}", d.as_nanos() as f64 / 1000.0)))
    }
}

/// Renders `line` as node `node` (member id `me`) would have written it at `ns`.
pub(crate) fn render(node: &Node, me: u64, ns: u128, line: &EtcdLine) -> String {
    let zap = node.logger == Logger::Zap || node.etcd == EtcdVersion::V3_5;
    let v35 = node.etcd == EtcdVersion::V3_5;
    let raft_zap = |msg: String| {
        // 3.5 logs raft through its own zap logger ("logger":"raft", zap_raft.go); 3.4 through
        // raft's node.go (the captures show caller raft/node.go:327 and :333).
        if v35 {
            format!(
                "{{\"level\":\"info\",\"ts\":\"{}\",\"logger\":\"raft\",\"caller\":\"etcdserver/zap_raft.go:77\",\"msg\":{}}}",
                zap_ts(ns),
                q(&msg)
            )
        } else {
            let caller = if msg.contains("lost leader") {
                333
            } else {
                327
            };
            format!(
                "{{\"level\":\"info\",\"ts\":\"{}\",\"caller\":\"raft/node.go:{caller}\",\"msg\":{}}}",
                zap_ts(ns),
                q(&msg)
            )
        }
    };
    let zap_line = |level: &str, caller: &str, msg: &str, fields: &[(&str, String)]| {
        let mut s = format!(
            "{{\"level\":\"{level}\",\"ts\":\"{}\",\"caller\":\"{caller}\",\"msg\":{}",
            zap_ts(ns),
            q(msg)
        );
        for (k, v) in fields {
            s.push_str(&format!(",\"{k}\":{}", q(v)));
        }
        s.push('}');
        s
    };
    let text =
        |level: char, pkg: &str, msg: String| format!("{} {level} | {pkg}: {msg}", capnslog_ts(ns));
    match line {
        EtcdLine::SlowFdatasync { took } => {
            if zap {
                let caller = if v35 {
                    "wal/wal.go:802"
                } else {
                    "wal/wal.go:783"
                };
                zap_line(
                    "warn",
                    caller,
                    "slow fdatasync",
                    &[
                        ("took", go_duration(*took)),
                        ("expected-duration", "1s".into()),
                    ],
                )
            } else {
                text(
                    'W',
                    "wal",
                    format!(
                        "sync duration of {}, expected less than 1s",
                        go_duration(*took)
                    ),
                )
            }
        }
        EtcdLine::NoSpaceAlarmRaised { from } => {
            if zap {
                zap_line(
                    "warn",
                    "etcdserver/apply.go:794",
                    "alarm raised",
                    &[("alarm", "NOSPACE".into()), ("from", format!("{from:x}"))],
                )
            } else {
                text(
                    'W',
                    "etcdserver",
                    format!("alarm NOSPACE raised by peer {from:x}"),
                )
            }
        }
        EtcdLine::NoSpaceAlarmDisarmed { from } => {
            if zap {
                zap_line(
                    "warn",
                    "etcdserver/apply.go:822",
                    "alarm disarmed",
                    &[("alarm", "NOSPACE".into()), ("from", format!("{from:x}"))],
                )
            } else {
                text(
                    'I',
                    "etcdserver",
                    format!("alarm disarmed action:DEACTIVATE memberID:{from} alarm:NOSPACE "),
                )
            }
        }
        EtcdLine::ElectedLeader { leader, term } => {
            let msg = format!("raft.node: {me:x} elected leader {leader:x} at term {term}");
            if zap {
                raft_zap(msg)
            } else {
                format!("{} INFO: {msg}", golog_ts(ns))
            }
        }
        EtcdLine::LostLeader { leader, term } => {
            let msg = format!("raft.node: {me:x} lost leader {leader:x} at term {term}");
            if zap {
                raft_zap(msg)
            } else {
                format!("{} INFO: {msg}", golog_ts(ns))
            }
        }
        EtcdLine::PeerDialTimeout { peer, ip } => {
            let err = format!("dial tcp {ip}:2380: i/o timeout");
            if zap {
                let caller = if v35 {
                    "rafthttp/probing_status.go:68"
                } else {
                    "rafthttp/probing_status.go:70"
                };
                zap_line(
                    "warn",
                    caller,
                    "prober detected unhealthy status",
                    &[
                        ("round-tripper-name", "ROUND_TRIPPER_RAFT_MESSAGE".into()),
                        ("remote-peer-id", format!("{peer:x}")),
                        ("rtt", "0s".into()),
                        ("error", err),
                    ],
                )
            } else {
                text(
                    'W',
                    "rafthttp",
                    format!("health check for peer {peer:x} could not connect: {err}"),
                )
            }
        }
        EtcdLine::LostStream { peer, ip } => {
            if zap {
                zap_line(
                    "warn",
                    "rafthttp/stream.go:436",
                    "lost TCP streaming connection with remote peer",
                    &[
                        ("stream-reader-type", "stream Message".into()),
                        ("local-member-id", format!("{me:x}")),
                        ("remote-peer-id", format!("{peer:x}")),
                        ("error", format!("read tcp {ip}:2380: i/o timeout")),
                    ],
                )
            } else {
                text(
                    'W',
                    "rafthttp",
                    format!(
                        "lost the TCP streaming connection with peer {peer:x} (stream Message reader)"
                    ),
                )
            }
        }
        EtcdLine::PeerInactive { peer } => {
            let why = "message send to peer failed";
            if zap {
                zap_line(
                    "warn",
                    "rafthttp/peer_status.go:68",
                    &format!("peer became inactive ({why})"),
                    &[
                        ("peer-id", format!("{peer:x}")),
                        (
                            "error",
                            format!("failed to read {peer:x} on stream Message (i/o timeout)"),
                        ),
                    ],
                )
            } else {
                text(
                    'I',
                    "rafthttp",
                    format!("peer {peer:x} became inactive ({why})"),
                )
            }
        }
        EtcdLine::PeerActive { peer } => {
            if zap {
                // The captures: 3.5 at line 53, 3.4 at 51.
                let caller = if v35 {
                    "rafthttp/peer_status.go:53"
                } else {
                    "rafthttp/peer_status.go:51"
                };
                zap_line(
                    "info",
                    caller,
                    "peer became active",
                    &[("peer-id", format!("{peer:x}"))],
                )
            } else {
                text('I', "rafthttp", format!("peer {peer:x} became active"))
            }
        }
        EtcdLine::StreamEstablished { peer } => {
            if zap {
                let caller = if v35 {
                    "rafthttp/stream.go:412"
                } else {
                    "rafthttp/stream.go:425"
                };
                zap_line(
                    "info",
                    caller,
                    "established TCP streaming connection with remote peer",
                    &[
                        ("stream-reader-type", "stream Message".into()),
                        ("local-member-id", format!("{me:x}")),
                        ("remote-peer-id", format!("{peer:x}")),
                    ],
                )
            } else {
                text(
                    'I',
                    "rafthttp",
                    format!(
                        "established a TCP streaming connection with peer {peer:x} (stream Message reader)"
                    ),
                )
            }
        }
        EtcdLine::PeerInactiveDialTimeout { peer, ip } => {
            let err = format!(
                "failed to dial {peer:x} on stream Message (dial tcp {ip}:2380: i/o timeout)"
            );
            if zap {
                let caller = if v35 {
                    "rafthttp/peer_status.go:66"
                } else {
                    "rafthttp/peer_status.go:68"
                };
                zap_line(
                    "warn",
                    caller,
                    "peer became inactive (message send to peer failed)",
                    &[("peer-id", format!("{peer:x}")), ("error", err)],
                )
            } else {
                text('E', "rafthttp", err)
            }
        }
        EtcdLine::CompactTreeIndex { revision } => {
            if zap {
                let caller = if v35 {
                    "mvcc/index.go:214"
                } else {
                    "mvcc/index.go:189"
                };
                // A number, not a string: zap.Int64.
                format!(
                    "{{\"level\":\"info\",\"ts\":\"{}\",\"caller\":\"{caller}\",\"msg\":\"compact tree index\",\"revision\":{revision}}}",
                    zap_ts(ns)
                )
            } else {
                text('I', "mvcc", format!("store.index: compact {revision}"))
            }
        }
        EtcdLine::FinishedCompaction { revision, took } => {
            if zap {
                let caller = if v35 {
                    "mvcc/kvstore_compaction.go:57"
                } else {
                    "mvcc/kvstore_compaction.go:56"
                };
                format!(
                    "{{\"level\":\"info\",\"ts\":\"{}\",\"caller\":\"{caller}\",\"msg\":\"finished scheduled compaction\",\"compact-revision\":{revision},\"took\":{}}}",
                    zap_ts(ns),
                    q(&go_duration(*took))
                )
            } else {
                text(
                    'I',
                    "mvcc",
                    format!(
                        "finished scheduled compaction at {revision} (took {})",
                        go_duration(*took)
                    ),
                )
            }
        }
        EtcdLine::Raw(s) => s.clone(),
    }
}

/// The member id the node's etcd logged for itself: zap's `"local-member-id":"<hex>"`, capnslog's
/// `etcdserver: starting member <hex> in cluster` / `restarting member <hex> in cluster`. Read
/// from the current attempt's log, then the earlier attempts' (`etcd.log.<attempt>`, moved
/// aside at each restart): an attempt that kubelet just started has not logged it yet.
fn own_member_id(n: &Node) -> Option<u64> {
    let current = n.log_file();
    let mut earlier: Vec<(u32, std::path::PathBuf)> = fs::read_dir(current.parent()?)
        .ok()?
        .filter_map(|e| {
            let path = e.ok()?.path();
            let attempt = path.file_name()?.to_str()?.strip_prefix("etcd.log.")?;
            Some((attempt.parse().ok()?, path))
        })
        .collect();
    earlier.sort_by_key(|e| std::cmp::Reverse(e.0));
    std::iter::once(current)
        .chain(earlier.into_iter().map(|(_, p)| p))
        .find_map(|f| logged_member_id(&fs::read_to_string(f).ok()?))
}

fn logged_member_id(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let hex = if let Some(rest) = l.split("\"local-member-id\":\"").nth(1) {
            rest.split('"').next()?
        } else {
            let rest = l
                .split("etcdserver: starting member ")
                .nth(1)
                .or_else(|| l.split("etcdserver: restarting member ").nth(1))?;
            rest.split(' ').next()?
        };
        u64::from_str_radix(hex, 16).ok()
    })
}

impl Lab {
    /// Gives `node` a past: its current container created and started `spec.started_ago` ago
    /// (what the crictl stand-in reports from then on: `ps` CREATED, `ps -o json` createdAt,
    /// `inspect` createdAt/startedAt), and `spec.lines` in the node's log format at their
    /// times, printed by `crictl logs` in time order before the lines the running etcd wrote.
    /// Lines newer than the running etcd are appended after its lines (see
    /// [`Lab::append_log_lines`]). Applies to the current container only: after a restart the
    /// new container starts from now with an empty log, and `crictl logs --previous` shows the
    /// aged one.
    pub fn age(&self, node: &str, spec: &AgeSpec) -> Result<()> {
        let i = self.index(node)?;
        let created = now_ns().saturating_sub(spec.started_ago.as_nanos());
        self.pods.set_created(i, created)?;
        self.append_log_lines(node, &spec.lines)
    }

    /// Writes `lines` ((how long ago, line)) into the node's current container log at those
    /// times, in the node's format: those older than the running etcd process into the part
    /// `crictl logs` prints first (kept in time order), the others appended after etcd's own
    /// lines so far (in time order among themselves). For "recent" cases, e.g. repeated slow
    /// fdatasync in the last 5 minutes. The lines name the node's member id: from the member
    /// list, or (a removed member) from what its etcd logged.
    pub fn append_log_lines(&self, node: &str, lines: &[(Duration, EtcdLine)]) -> Result<()> {
        let i = self.index(node)?;
        let n = &self.nodes[i];
        // A removed member has no id in the member list any more; its own log still names it.
        let me = match self.member_id(node) {
            Ok(Some(id)) => id,
            _ => own_member_id(n)
                .ok_or_else(|| anyhow!("{node}: no member id to write its lines with"))?,
        };
        let now = now_ns();
        let mut rendered: Vec<(u128, String)> = lines
            .iter()
            .map(|(ago, l)| {
                let ns = now.saturating_sub(ago.as_nanos());
                (ns, render(n, me, ns, l))
            })
            .collect();
        rendered.sort_by_key(|(ns, _)| *ns);
        if rendered.iter().any(|(_, l)| l.contains('\n')) {
            bail!("{node}: a log line must not contain a newline");
        }
        let mut members = self.pods.members();
        let m = &mut members[i];
        let attempt = m
            .attempt
            .ok_or_else(|| anyhow!("{node}: no container yet"))?;
        let key = (m.generation, attempt);
        if m.past_key != Some(key) {
            m.past_key = Some(key);
            m.past.clear();
        }
        let (old, live): (Vec<_>, Vec<_>) =
            rendered.into_iter().partition(|(ns, _)| *ns < m.started_ns);
        if !old.is_empty() {
            m.past.extend(old);
            m.past.sort_by_key(|(ns, _)| *ns);
            let path = n.past_log(m.generation, attempt);
            let text: String = m.past.iter().map(|(_, l)| format!("{l}\n")).collect();
            let tmp = path.with_extension("tmp");
            fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
            fs::rename(&tmp, &path)?;
        }
        if !live.is_empty() {
            let text: String = live.iter().map(|(_, l)| format!("{l}\n")).collect();
            // O_APPEND and one write: etcd appends to the same file, line by line.
            let mut f = OpenOptions::new()
                .append(true)
                .open(n.log_file())
                .with_context(|| format!("opening {}", n.log_file().display()))?;
            f.write_all(text.as_bytes())?;
        }
        Ok(())
    }

    /// A past seen on many control planes the day after trouble, for `node`: container started
    /// 4 h ago; a `slow fdatasync` 3 h ago (a VM snapshot's stun); NOSPACE raised 2 h 10 min
    /// ago and disarmed 2 h ago; 12 leader elections (lost, then elected) between 2 h 5 min and
    /// 1 h 55 min ago; dial timeouts to every peer 1 h ago, for 2 minutes. Nothing in the last
    /// hour: a probe with a 15 min window must find none of it recent.
    pub fn troubled_past(&self, node: &str) -> Result<AgeSpec> {
        let me = self
            .member_id(node)?
            .ok_or_else(|| anyhow!("{node} is no member"))?;
        let peers: Vec<(u64, Ipv4Addr)> = self
            .nodes
            .iter()
            .filter(|n| n.name != node)
            .filter_map(|n| Some((self.member_id(&n.name).ok()??, n.ip)))
            .collect();
        let leader = peers.first().map_or(me, |p| p.0);
        let mut spec = AgeSpec::started(Duration::from_secs(4 * H))
            .line(
                Duration::from_secs(3 * H),
                EtcdLine::SlowFdatasync {
                    took: Duration::from_millis(1512),
                },
            )
            .line(
                Duration::from_secs(2 * H + 600),
                EtcdLine::NoSpaceAlarmRaised { from: me },
            )
            .line(
                Duration::from_secs(2 * H),
                EtcdLine::NoSpaceAlarmDisarmed { from: me },
            );
        for k in 0..12u64 {
            let at = Duration::from_secs(2 * H + 300 - k * 50);
            let term = 10 + k;
            spec = spec.line(at, EtcdLine::LostLeader { leader, term }).line(
                at - Duration::from_secs(2),
                EtcdLine::ElectedLeader {
                    leader,
                    term: term + 1,
                },
            );
        }
        for k in 0..24u64 {
            for (peer, ip) in &peers {
                spec = spec.line(
                    Duration::from_secs(H + 120 - k * 5),
                    EtcdLine::PeerDialTimeout {
                        peer: *peer,
                        ip: *ip,
                    },
                );
            }
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn node(etcd: EtcdVersion, logger: Logger) -> Node {
        Node {
            name: "cp1".into(),
            index: 1,
            ip: Ipv4Addr::new(198, 18, 0, 11),
            netns: "x".into(),
            root: PathBuf::from("/nonexistent"),
            etcd,
            logger,
        }
    }

    // 2026-12-02T14:21:32.123456789Z
    const T: u128 = 1_796_221_292_123_456_789;

    #[test]
    fn lines_take_each_format_of_the_real_logs() {
        let me = 0x71ea0ea03f1cc0b1;
        let peer = 0xa0efed2619cd10db;
        let z35 = node(EtcdVersion::V3_5, Logger::Zap);
        let z34 = node(EtcdVersion::V3_4, Logger::Zap);
        let t34 = node(EtcdVersion::V3_4, Logger::Text);
        let elected = EtcdLine::ElectedLeader {
            leader: peer,
            term: 2,
        };
        assert_eq!(
            render(&z35, me, T, &elected),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader a0efed2619cd10db at term 2"}"#
        );
        assert_eq!(
            render(&z34, me, T, &elected),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"raft/node.go:327","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader a0efed2619cd10db at term 2"}"#
        );
        assert_eq!(
            render(&t34, me, T, &elected),
            "raft2026/12/02 14:21:32 INFO: raft.node: 71ea0ea03f1cc0b1 elected leader a0efed2619cd10db at term 2"
        );
        let slow = EtcdLine::SlowFdatasync {
            took: Duration::from_nanos(1_512_437_000),
        };
        let z: serde_json::Value = serde_json::from_str(&render(&z35, me, T, &slow)).unwrap();
        assert_eq!(z["msg"], "slow fdatasync");
        assert_eq!(z["took"], "1.512437s");
        assert_eq!(z["expected-duration"], "1s");
        assert_eq!(
            render(&t34, me, T, &slow),
            "2026-12-02 14:21:32.123456 W | wal: sync duration of 1.512437s, expected less than 1s"
        );
        let dial = EtcdLine::PeerDialTimeout {
            peer,
            ip: Ipv4Addr::new(198, 18, 0, 12),
        };
        let z: serde_json::Value = serde_json::from_str(&render(&z34, me, T, &dial)).unwrap();
        assert_eq!(z["msg"], "prober detected unhealthy status");
        assert_eq!(z["remote-peer-id"], "a0efed2619cd10db");
        assert_eq!(z["error"], "dial tcp 198.18.0.12:2380: i/o timeout");
        assert_eq!(
            render(&t34, me, T, &dial),
            "2026-12-02 14:21:32.123456 W | rafthttp: health check for peer a0efed2619cd10db could not connect: dial tcp 198.18.0.12:2380: i/o timeout"
        );
        let lost = EtcdLine::LostStream {
            peer,
            ip: Ipv4Addr::new(198, 18, 0, 12),
        };
        let z: serde_json::Value = serde_json::from_str(&render(&z35, me, T, &lost)).unwrap();
        assert_eq!(z["msg"], "lost TCP streaming connection with remote peer");
        assert_eq!(z["local-member-id"], "71ea0ea03f1cc0b1");
        assert_eq!(z["remote-peer-id"], "a0efed2619cd10db");
        assert_eq!(
            render(&t34, me, T, &lost),
            "2026-12-02 14:21:32.123456 W | rafthttp: lost the TCP streaming connection with peer a0efed2619cd10db (stream Message reader)"
        );
        let inactive = EtcdLine::PeerInactive { peer };
        let z: serde_json::Value = serde_json::from_str(&render(&z34, me, T, &inactive)).unwrap();
        assert_eq!(
            (&z["msg"], &z["peer-id"]),
            (
                &"peer became inactive (message send to peer failed)".into(),
                &"a0efed2619cd10db".into()
            )
        );
        assert_eq!(
            render(&t34, me, T, &inactive),
            "2026-12-02 14:21:32.123456 I | rafthttp: peer a0efed2619cd10db became inactive (message send to peer failed)"
        );
        assert_eq!(
            render(&t34, me, T, &EtcdLine::PeerActive { peer }),
            "2026-12-02 14:21:32.123456 I | rafthttp: peer a0efed2619cd10db became active"
        );
        // The heal and the late line: the established line as the captures have it (v3.5 and
        // v3.4 drop-all-peers-cp1.log, only the time differs).
        let est = EtcdLine::StreamEstablished { peer };
        for (n, line) in [(&z35, 412), (&z34, 425)] {
            assert_eq!(
                render(n, me, T, &est),
                format!(
                    r#"{{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"rafthttp/stream.go:{line}","msg":"established TCP streaming connection with remote peer","stream-reader-type":"stream Message","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id":"a0efed2619cd10db"}}"#
                )
            );
        }
        assert_eq!(
            render(&t34, me, T, &est),
            "2026-12-02 14:21:32.123456 I | rafthttp: established a TCP streaming connection with peer a0efed2619cd10db (stream Message reader)"
        );
        let late = EtcdLine::PeerInactiveDialTimeout {
            peer,
            ip: Ipv4Addr::new(198, 18, 0, 12),
        };
        let z: serde_json::Value = serde_json::from_str(&render(&z35, me, T, &late)).unwrap();
        assert_eq!(
            z["msg"],
            "peer became inactive (message send to peer failed)"
        );
        assert_eq!(z["caller"], "rafthttp/peer_status.go:66");
        assert_eq!(
            z["error"],
            "failed to dial a0efed2619cd10db on stream Message (dial tcp 198.18.0.12:2380: i/o timeout)"
        );
        assert_eq!(
            render(&t34, me, T, &late),
            "2026-12-02 14:21:32.123456 E | rafthttp: failed to dial a0efed2619cd10db on stream Message (dial tcp 198.18.0.12:2380: i/o timeout)"
        );
        let raised: serde_json::Value = serde_json::from_str(&render(
            &z35,
            me,
            T,
            &EtcdLine::NoSpaceAlarmRaised { from: me },
        ))
        .unwrap();
        assert_eq!(
            (&raised["msg"], &raised["alarm"], &raised["from"]),
            (
                &"alarm raised".into(),
                &"NOSPACE".into(),
                &"71ea0ea03f1cc0b1".into()
            )
        );
        assert!(render(&t34, me, T, &EtcdLine::NoSpaceAlarmDisarmed { from: me })
            .ends_with("I | etcdserver: alarm disarmed action:DEACTIVATE memberID:8208389352252555441 alarm:NOSPACE "));
    }

    #[test]
    fn go_durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_millis(1512)), "1.512s");
        assert_eq!(go_duration(Duration::from_secs(2)), "2s");
        assert_eq!(go_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(go_duration(Duration::from_nanos(198_074)), "198.074µs");
        assert_eq!(go_duration(Duration::from_nanos(12_990)), "12.99µs");
    }

    /// The compaction lines as etcd 3.4.23 (zap and capnslog) and 3.5.1 wrote them after
    /// `etcdctl compact 3` (captured from the lab's binaries; only the time differs).
    #[test]
    fn compaction_lines_are_the_captured_ones() {
        let me = 0x71ea0ea03f1cc0b1;
        let index = EtcdLine::CompactTreeIndex { revision: 3 };
        let done = EtcdLine::FinishedCompaction {
            revision: 3,
            took: Duration::from_nanos(198_074),
        };
        let z34 = node(EtcdVersion::V3_4, Logger::Zap);
        assert_eq!(
            render(&z34, me, T, &index),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"mvcc/index.go:189","msg":"compact tree index","revision":3}"#
        );
        assert_eq!(
            render(&z34, me, T, &done),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"mvcc/kvstore_compaction.go:56","msg":"finished scheduled compaction","compact-revision":3,"took":"198.074µs"}"#
        );
        let z35 = node(EtcdVersion::V3_5, Logger::Zap);
        assert_eq!(
            render(&z35, me, T, &index),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"mvcc/index.go:214","msg":"compact tree index","revision":3}"#
        );
        assert_eq!(
            render(&z35, me, T, &done),
            r#"{"level":"info","ts":"2026-12-02T14:21:32.123Z","caller":"mvcc/kvstore_compaction.go:57","msg":"finished scheduled compaction","compact-revision":3,"took":"198.074µs"}"#
        );
        let t34 = node(EtcdVersion::V3_4, Logger::Text);
        assert_eq!(
            render(&t34, me, T, &index),
            "2026-12-02 14:21:32.123456 I | mvcc: store.index: compact 3"
        );
        let done = EtcdLine::FinishedCompaction {
            revision: 3,
            took: Duration::from_nanos(12_990),
        };
        assert_eq!(
            render(&t34, me, T, &done),
            "2026-12-02 14:21:32.123456 I | mvcc: finished scheduled compaction at 3 (took 12.99µs)"
        );
    }
}
