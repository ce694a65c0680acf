//! etcd log classifier: turns the text of an etcd member's log into findings (kind, count, peers,
//! first/last time) that the verdict can reason about.
//!
//! Forms read, mixed freely in one input:
//! - zap JSON: etcd 3.5 and 3.6, and 3.4 with `--logger=zap` (`{"level":"warn","ts":"…","msg":"…",…}`);
//! - zap's console form, etcd 3.6's `--log-format console` (tab-separated time, level, caller,
//!   message, then the fields as JSON): read as the zap line it stands for (`line::parse_console`);
//! - 3.4's default capnslog text: `2026-11-30 09:12:44.123456 W | rafthttp: message`;
//! - Go `log` lines etcd leaves on stderr: grpc-go's (`WARNING: 2026/12/02 08:26:30 [core] …`) and,
//!   in 3.4's capnslog mode, raft's (`raft2026/12/02 14:19:33 INFO: … is starting a new election …`);
//! - any of those behind `crictl logs --timestamps`, `kubectl logs --prefix` or the CRI file format
//!   (`<ts> stderr F <line>`, with `P` records joined to the `F` that ends them).
//!
//! Pure and total: no I/O, no panics on any input, bounded work per line.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longer lines are counted but not parsed: no etcd message is that long, and it caps the work.
const MAX_LINE: usize = 256 * 1024;
/// A finding's example line is cut to about this many bytes (enough for a whole zap line, whose
/// error field comes last and is what evidence quotes).
const EXAMPLE_MAX: usize = 1000;

// The contract's `LogKind` and the other types of a node's log findings (`logs` of a
// `DiagnoseReport`): their doc comments are the schema's descriptions and their serde attributes
// fix the json names (tests/it/schema.rs and the json-contract snapshots hold both).
// Declaration order is the order of [`LogSummary::findings`]; the names, which scripts match on,
// are the JSON's.
/// What an etcd log line says (PascalCase, as written).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum LogKind {
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
    // (3.5.15+ says which endpoint; never counted as a peer's.)
    ClientRejectedConnection,
    CertExpired,
    CertNotYetValid,
    CertNameMismatch,
    CertUnknownAuthority,
    ClusterIdMismatch,
    /// A removed member is still talking: its messages or streams are rejected, or it was told so.
    MemberRemoved,
    /// Informational: "removed member", logged on every member removal (every rolling update).
    // (A membership change every member logs; KCP removes one on every machine replacement.)
    MemberRemovedInfo,
    /// A peer not in this member's member list dialled it, or a peer does not know this member.
    MemberUnknown,
    /// A message meant for another member ID arrived here: an IP address reused by a new member.
    // (Or a stream: a new VM that the others still know as the old member.)
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
    // (Corrupt WAL or database, unreadable certificate or key, data directory permissions, a Go
    // runtime panic.)
    Fatal,
    /// etcd exited because it could not reach its peers: the network's doing, not the member's.
    // (A joining member that found no peer to fetch the cluster from.)
    FatalUnreachable,
    /// etcd was told to stop (SIGTERM): a kubelet killing it after failed probes, or a rollout.
    Terminated,
}

impl LogKind {
    /// What the kind means, for a person (issue 38: no internal names in human text); the
    /// PascalCase name stays the JSON's, for scripts.
    pub fn phrase(self) -> &'static str {
        use LogKind as K;
        match self {
            K::PeerInactive => "peer inactive",
            K::PeerActive => "peer active again",
            K::PeerUnhealthy => "peer unhealthy (etcd's prober)",
            K::LostStream => "stream to a peer lost",
            K::PeerUrlUnreachable => "peer URL unreachable",
            K::IoTimeout => "i/o timeout",
            K::ConnectionRefused => "connection refused",
            K::NoRouteToHost => "no route to host",
            K::ConnectionReset => "connection reset",
            K::TlsHandshakeTimeout => "TLS handshake timeout",
            K::TlsRemoteError => "TLS error from the peer",
            K::RejectedConnection => "peer connection rejected (TLS)",
            K::ClientRejectedConnection => "client connection rejected (TLS)",
            K::CertExpired => "certificate expired",
            K::CertNotYetValid => "certificate not yet valid",
            K::CertNameMismatch => "certificate names another host",
            K::CertUnknownAuthority => "certificate of an unknown authority",
            K::ClusterIdMismatch => "cluster ID mismatch",
            K::MemberRemoved => "removed member still talking",
            K::MemberRemovedInfo => "member removed",
            K::MemberUnknown => "unknown member",
            K::MemberIdMismatch => "message for another member ID",
            K::MemberAlreadyBootstrapped => "member already bootstrapped",
            K::PublishFailed => "could not publish itself (no quorum)",
            K::LeaderLost => "leader lost",
            K::LeaderElected => "leader elected",
            K::LeaderChanged => "leader changed",
            K::NoLeader => "no leader",
            K::ElectionStarted => "election started",
            K::LeaderSteppedDown => "leader stepped down",
            K::HeartbeatLate => "heartbeat late",
            K::ReadIndexTimeout => "read index timeout",
            K::BufferFull => "message buffer full",
            K::SlowFdatasync => "slow fdatasync",
            K::ApplySlow => "slow apply",
            K::NoSpace => "NOSPACE alarm",
            K::ClockDrift => "clock drift",
            K::AlarmDisarmed => "alarm disarmed",
            K::Fatal => "exited (fatal)",
            K::FatalUnreachable => "exited: no peer reachable",
            K::Terminated => "terminated (SIGTERM)",
        }
    }
}

/// Which text of a line a pattern reads.
#[derive(Debug, Clone, Copy)]
enum On {
    /// The message: zap's `msg`; for text forms the whole message.
    Msg,
    /// The error: zap's `error` field; text forms carry the error inside the message.
    Error,
    /// The whole line (zap: the raw JSON, so other fields such as `"alarm":"NOSPACE"` count).
    Line,
}

/// One row: `kind` when the chosen text contains any of `any`, all of `all`, and none of `none`.
/// Case-sensitive substrings, exactly as etcd and Go print them.
#[derive(Debug)]
struct Pattern {
    kind: LogKind,
    on: On,
    any: &'static [&'static str],
    all: &'static [&'static str],
    none: &'static [&'static str],
}

const fn row(kind: LogKind, on: On, any: &'static [&'static str]) -> Pattern {
    Pattern {
        kind,
        on,
        any,
        all: &[],
        none: &[],
    }
}

impl Pattern {
    const fn and(mut self, all: &'static [&'static str]) -> Pattern {
        self.all = all;
        self
    }
    const fn not(mut self, none: &'static [&'static str]) -> Pattern {
        self.none = none;
        self
    }
}

use LogKind as K;
use On::{Error, Line, Msg};

/// The pattern table: adding a kind or a wording is adding a row. Sources are etcd v3.4.23 /
/// v3.5.17 (3.5 paths have a `server/` prefix) and Go's standard library for the error texts.
/// Every etcd text below was checked against v3.6.0 and v3.6.14 too: 3.6 writes them the same,
/// except where a row says otherwise (raft's lines come from the go.etcd.io/raft/v3 v3.6.0
/// module there, same texts; the sending-buffer line lost its "(overloaded network)"; the alarm
/// lines are gone). tests/fixtures/etcd-logs/sample-3.6-*.log are written from that source.
/// Event kinds read the message; network and TLS kinds read the error.
#[rustfmt::skip]
const PATTERNS: &[Pattern] = &[
    // rafthttp/peer_status.go deactivate(): zap "peer became inactive (message send to peer
    // failed)"; capnslog "peer %s became inactive (message send to peer failed)".
    row(K::PeerInactive, Msg, &["became inactive (message send to peer failed)"]),
    // rafthttp/peer_status.go activate(): zap "peer became active"; capnslog "peer %s became active".
    row(K::PeerActive, Msg, &[" became active"]).and(&["peer"]),
    // rafthttp/probing_status.go: zap "prober detected unhealthy status"; capnslog "health check
    // for peer %s could not connect: %v".
    row(K::PeerUnhealthy, Msg, &["prober detected unhealthy status", "health check for peer"]),
    // rafthttp/stream.go (reader and writer): zap "lost TCP streaming connection with remote
    // peer"; capnslog "lost the TCP streaming connection with peer %s (%s reader)".
    row(K::LostStream, Msg, &["lost TCP streaming connection", "lost the TCP streaming connection"]),
    // etcdserver/cluster_util.go getVersion(): zap "failed to reach the peer URL"; capnslog
    // "failed to reach the peerURL(%s) of member %s (%v)".
    row(K::PeerUrlUnreachable, Msg, &["failed to reach the peer URL", "failed to reach the peerURL"]),
    // Go net: a dial or read deadline passed (packets dropped on the way).
    row(K::IoTimeout, Error, &["i/o timeout"]),
    // Go syscall ECONNREFUSED: a TCP RST to the SYN (nothing listening, or a reject rule).
    row(K::ConnectionRefused, Error, &["connection refused"]),
    // EHOSTUNREACH / ENETUNREACH: an ICMP unreachable or no route; both mean "not routable".
    row(K::NoRouteToHost, Error, &["no route to host", "network is unreachable"]),
    // ECONNRESET: an established connection was torn down by a RST.
    row(K::ConnectionReset, Error, &["connection reset by peer"]),
    // net/http Transport: "net/http: TLS handshake timeout".
    row(K::TlsHandshakeTimeout, Error, &["TLS handshake timeout"]),
    // crypto/tls alertError: the other side refused our handshake, e.g. "remote error: tls: bad
    // certificate" when it does not trust our client certificate.
    row(K::TlsRemoteError, Error, &["remote error: tls:"]),
    // embed/config_logging.go: zap "rejected connection" (3.4, 3.5 before 3.5.15) / "rejected
    // connection on peer endpoint" (3.5.15+); embed/config.go capnslog "rejected connection from %q".
    row(K::RejectedConnection, Msg, &["rejected connection"]).not(&["on client endpoint"]),
    // server/embed/config_logging.go (3.5.15+): "rejected connection on client endpoint".
    row(K::ClientRejectedConnection, Msg, &["rejected connection on client endpoint"]),
    // crypto/x509 CertificateInvalidError{Expired}: "x509: certificate has expired or is not yet
    // valid: current time X is after Y" (Go >= 1.15 adds the detail; without it, read as expired,
    // by far the common case).
    row(K::CertExpired, Error, &["certificate has expired or is not yet valid"]).not(&["is before"]),
    row(K::CertNotYetValid, Error, &["certificate has expired or is not yet valid"]).and(&["is before"]),
    // crypto/x509 HostnameError.
    row(K::CertNameMismatch, Error, &["x509: certificate is valid for ",
        "x509: certificate is not valid for any names", "because it doesn't contain any IP SANs"]),
    // client/pkg/transport/listener_tls.go checkSAN() (3.5; 3.4 pkg/transport): the server side's
    // check of a peer's client certificate against its remote IP, when the certificate carries DNS
    // names (kubeadm's do): `tls: "198.18.0.12" does not match any of DNSNames ["cp1" …]`.
    row(K::CertNameMismatch, Error, &["does not match any of DNSNames"]),
    // crypto/x509 UnknownAuthorityError.
    row(K::CertUnknownAuthority, Error, &["certificate signed by unknown authority"]),
    // rafthttp/http.go checkClusterCompatibilityFromHeader "request cluster ID mismatch";
    // rafthttp/stream.go and util.go "request sent was ignored … cluster ID mismatch".
    row(K::ClusterIdMismatch, Line, &["cluster ID mismatch"]),
    // Rejections from (or of) a removed member. rafthttp/http.go streamHandler "rejected stream
    // from remote peer because it was removed" / capnslog "rejected the stream from peer %s since it
    // was removed"; etcdserver/server.go Process() "rejected Raft message from removed member" /
    // capnslog "reject message from removed member %s"; rafthttp/util.go errMemberRemoved and
    // etcdserver/server.go applyConfChange "the member has been permanently removed from the
    // cluster" (the removed member's own log).
    row(K::MemberRemoved, Msg, &["because it was removed", "since it was removed",
        "message from removed member"]),
    row(K::MemberRemoved, Error, &["the member has been permanently removed from the cluster"]),
    // membership/cluster.go RemoveMember(): zap "removed member" / capnslog "removed member %s from
    // cluster %s": the conf change itself, routine (every machine replacement), not a fault.
    row(K::MemberRemovedInfo, Msg, &["removed member"])
        .not(&["skipped", "from removed member", "removed members"]),
    // rafthttp/http.go streamHandler: zap "failed to find remote peer in cluster" / capnslog
    // "failed to find member %s in cluster %s" (a dialler not in our member list); rafthttp/stream.go
    // dial(): "peer %s failed to find local node %s" (the peer does not know us; in the error of
    // the stream reader's dial).
    row(K::MemberUnknown, Msg, &["failed to find remote peer in cluster", "failed to find member "])
        .and(&[" in cluster"]),
    row(K::MemberUnknown, Error, &["failed to find local node"]),
    // rafthttp/http.go streamHandler: zap "ignored streaming request; ID mismatch" / capnslog
    // "streaming request ignored (ID mismatch got %s want %s)"; etcdserver/server.go Process():
    // "rejected Raft message to mismatch member".
    row(K::MemberIdMismatch, Msg, &["ignored streaming request; ID mismatch",
        "streaming request ignored (ID mismatch", "rejected Raft message to mismatch member"]),
    // etcdserver/server.go NewServer(): "member %s has already been bootstrapped" (the error of
    // etcdmain's fatal start-up line).
    row(K::MemberAlreadyBootstrapped, Line, &["has already been bootstrapped"]),
    // etcdserver/server.go publish()/publishV3(): "failed to publish local member to cluster
    // through raft".
    row(K::PublishFailed, Msg, &["failed to publish local member to cluster"]),
    // raft/node.go "raft.node: %x lost leader %x at term %d" (same text in both forms; 3.5 writes
    // raft's lines through zap, "logger":"raft").
    row(K::LeaderLost, Msg, &["lost leader"]),
    // raft/node.go "raft.node: %x elected leader %x at term %d".
    row(K::LeaderElected, Msg, &["raft.node: "]).and(&[" elected leader "]),
    // raft/node.go "raft.node: %x changed leader from %x to %x at term %d".
    row(K::LeaderChanged, Msg, &["raft.node: "]).and(&[" changed leader from "]),
    // etcdhttp/metrics.go (3.5.1; health.go later) "serving /health false; no leader" / 3.4
    // capnslog "/health error; no leader (status code %d)"; raft/raft.go "%x no leader at term %d;
    // dropping proposal" (and "… dropping index reading msg"); etcdserver/errors.go ErrNoLeader /
    // rpctypes ErrGRPCNoLeader "etcdserver: no leader".
    row(K::NoLeader, Msg, &["; no leader", " no leader at term "]),
    row(K::NoLeader, Error, &["etcdserver: no leader"]),

    // raft/raft.go hup(): "%x is starting a new election at term %d", logged once per election
    // timeout. Not "became (pre-)candidate": campaign() logs those right after it, which would
    // count each election twice or thrice; and a leadership transfer ("starts an election to get
    // leadership") is an operator's act, not a symptom.
    row(K::ElectionStarted, Msg, &["is starting a new election"]),
    // raft/raft.go "%x stepped down to follower since quorum is not active".
    row(K::LeaderSteppedDown, Msg, &["stepped down to follower"]),
    // etcdserver/raft.go: zap "leader failed to send out heartbeat on time; took too long, …";
    // capnslog "failed to send out heartbeat on time (exceeded the %v timeout for %v, to %x)".
    row(K::HeartbeatLate, Msg, &["failed to send out heartbeat on time"]),
    // etcdserver/v3_server.go requestCurrentIndex() (3.5; linearizableReadLoop 3.4): "timed out
    // waiting for read index response (local node might have slow network)".
    row(K::ReadIndexTimeout, Msg, &["timed out waiting for read index response"]),
    // rafthttp/peer.go send(), remote.go send(): zap "dropped internal Raft message since sending
    // buffer is full (overloaded network)" (3.6: "… sending buffer is full", no parenthesis) and "dropped Raft message since sending buffer is full
    // …"; rafthttp/stream.go "… since receiving buffer is full …"; capnslog "dropped internal raft
    // message to %s since … sending buffer is full (bad/overloaded network)".
    row(K::BufferFull, Msg, &["aft message since sending buffer is full",
        "aft message since receiving buffer is full", "sending buffer is full (bad/overloaded network)"]),
    // wal/wal.go sync(): zap "slow fdatasync"; capnslog "sync duration of %v, expected less than %v".
    row(K::SlowFdatasync, Msg, &["slow fdatasync", "sync duration of"]),
    // etcdserver/util.go warnOfExpensiveGenericRequest(): zap "apply request took too long";
    // capnslog "%srequest %q with result %q took too long (%v) to execute".
    row(K::ApplySlow, Msg, &["apply request took too long"]),
    row(K::ApplySlow, Msg, &["took too long ("]).and(&[") to execute"]),
    // etcdserver/apply.go "alarm raised" with "alarm":"NOSPACE" / capnslog "alarm NOSPACE raised by
    // peer %s"; rpctypes ErrGRPCNoSpace "etcdserver: mvcc: database space exceeded"; etcdserver/
    // errors.go ErrNoSpace "etcdserver: no space" (both exist in 3.4 and 3.5). etcd 3.6 logs no
    // "alarm raised": its NOSPACE shows as etcdhttp/health.go's "serving /health false due to an
    // alarm" with "alarm":"memberID:<decimal> alarm:NOSPACE " (also in 3.5) and in the errors.
    row(K::NoSpace, Line, &["NOSPACE", "database space exceeded", "etcdserver: no space"])
        .not(&["alarm disarmed"]),
    // rafthttp/probing_status.go: zap "prober found high clock drift"; capnslog "the clock
    // difference against peer %s is too high [%v > %v]".
    row(K::ClockDrift, Msg, &["prober found high clock drift", "the clock difference against peer"]),
    // etcdserver/apply.go applierV3backend.Alarm (3.5: server/etcdserver/apply.go) zap "alarm
    // disarmed" with "alarm":"NOSPACE"; 3.4 capnslog "alarm disarmed %+v". etcd's newest apply
    // package (server/etcdserver/apply/backend.go) no longer logs it: there the alarm list and
    // `/health` (both read by the probe) are what tell, which is why they decide.
    row(K::AlarmDisarmed, Msg, &["alarm disarmed"]),
    // etcdmain/etcd.go startEtcdOrProxyV2() (3.5, 3.6 server/etcdmain): zap error "failed to
    // verify flags" then exit 1; 3.4 capnslog "error verifying flags, %v. See 'etcd --help'.";
    // Go's flag package "flag provided but not defined: -x" (see line::parse_go_runtime).
    row(K::Fatal, Msg, &["failed to verify flags", "error verifying flags", "flag provided but not defined"]),
    // etcdmain/etcd.go: a member joining with --initial-cluster-state=existing that reaches no
    // peer fails in GetClusterFromRemotePeers ("cannot fetch cluster info from peer urls: could
    // not retrieve cluster information from the given URLs") and exits with zap fatal
    // "discovery failed". LogLine::kinds() tells it from Fatal.
    row(K::FatalUnreachable, Line, &["cannot fetch cluster info from peer urls",
        "could not retrieve cluster information from the given URLs"]),
    // pkg/osutil/interrupt_unix.go HandleInterrupts(): zap "received signal; shutting down"
    // (3.5, 3.6: client/pkg/v3/... / pkg/osutil); 3.4 capnslog "received %v signal, shutting down...".
    row(K::Terminated, Msg, &["received signal; shutting down"]),
    row(K::Terminated, Msg, &[" signal, shutting down"]).and(&["received "]),
];

/// Levels at which etcd exits: zap's fatal, panic and dpanic (etcd's zap loggers exit on
/// dpanic in development only, but a node that logs one is not healthy either), capnslog's C
/// (plog.Fatal / Panic), Go's runtime `panic:` / `fatal error:` (line::parse_go_runtime).
const EXIT_LEVELS: &[&str] = &["fatal", "panic", "dpanic", "critical"];

/// Kinds that say the peers could not be reached: a fatal line that shows one exited for the
/// network, not for a reason of its own.
const UNREACHABLE: &[LogKind] = &[
    K::IoTimeout,
    K::ConnectionRefused,
    K::NoRouteToHost,
    K::TlsHandshakeTimeout,
    K::PeerUrlUnreachable,
    K::FatalUnreachable,
];

impl Pattern {
    fn matches(&self, line: &LogLine) -> bool {
        let text = match self.on {
            Msg => line.msg.as_str(),
            Error => line.error.as_deref().unwrap_or(""),
            Line => line.raw.as_str(),
        };
        self.any.iter().any(|s| text.contains(s))
            && self.all.iter().all(|s| text.contains(s))
            && !self.none.iter().any(|s| text.contains(s))
    }
}

/// Which form a line was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineForm {
    /// zap JSON (3.5; 3.4 with `--logger=zap`).
    Zap,
    /// 3.4's text mode: capnslog lines and raft's Go-log lines.
    Text,
    /// grpc-go's own logger: not etcd's lines, but on the same stderr.
    Grpc,
}

/// One parsed log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub form: LineForm,
    /// RFC 3339 UTC with exactly six fraction digits (so strings sort as times). Text forms carry
    /// no zone: read as UTC, which is what control-plane nodes run.
    pub ts: Option<String>,
    /// zap's words: debug, info, warn, error, dpanic, panic, fatal (capnslog letters and grpc-go
    /// words mapped onto them; capnslog's N is "notice", C "critical", T "trace").
    pub level: Option<String>,
    /// capnslog's package (`rafthttp`; `raft` for raft's Go-log lines), when the form has one.
    pub package: Option<String>,
    pub msg: String,
    /// zap's `error` field; for text forms the whole message, which is where they put the error.
    pub error: Option<String>,
    pub peer_ids: BTreeSet<String>,
    /// `host:port` of a peer the line names (the far side of `read tcp a->b`), or a bare host when
    /// the port is ephemeral (`remote-addr`) or not named (x509's "…, not 198.18.0.12"). Loopback
    /// is never a peer: left out.
    pub peer_addresses: BTreeSet<String>,
    pub local_member_id: Option<String>,
    pub etcd_version: Option<String>,
    /// The line as read, after the CRI/crictl/kubectl prefixes.
    pub raw: String,
}

impl LogLine {
    /// Every kind this line shows, in declaration order, each once.
    pub fn kinds(&self) -> Vec<LogKind> {
        let mut set: BTreeSet<LogKind> = PATTERNS
            .iter()
            .filter(|p| p.matches(self))
            .map(|p| p.kind)
            .collect();
        if self
            .level
            .as_deref()
            .is_some_and(|l| EXIT_LEVELS.contains(&l))
        {
            // An exit: the network's doing when the same line says the peers could not be
            // reached, the member's own otherwise.
            if UNREACHABLE.iter().any(|k| set.contains(k)) {
                set.insert(K::FatalUnreachable);
            } else {
                set.insert(K::Fatal);
            }
        }
        if set.contains(&K::FatalUnreachable) {
            set.remove(&K::Fatal);
        }
        set.into_iter().collect()
    }
}

/// All lines of one kind in a node's etcd log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "LogFinding")]
pub struct Finding {
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
    // (The first that names a peer address, else the first.)
    pub example: String,
}

/// Which forms the etcd lines were in.
// (grpc-go's lines do not count: they ride along with both.)
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
pub enum LogFormat {
    Zap,
    Text,
    Mixed,
    Unknown,
}

/// What a node's etcd log says, counted in its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogSummary {
    /// One per kind seen in the window, in `LogKind` order.
    pub findings: Vec<Finding>,
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
    // (From the raft lines: since when, and its last leader change.)
    #[serde(default)]
    pub leader: Option<LeaderView>,
    /// The window the findings were counted in; null when the whole log counted.
    // (`--since`, ending at the node's probe time; no window asked: the whole log.)
    #[serde(default)]
    pub window: Option<LogWindow>,
    /// What older lines said, in `LogKind` order: the past, never a verdict's reason.
    // (The member's past, shown with its times.)
    #[serde(default)]
    pub history: Vec<Finding>,
}

impl LogSummary {
    pub fn finding(&self, kind: LogKind) -> Option<&Finding> {
        self.findings.iter().find(|f| f.kind == kind)
    }
    /// The same kind in the history: lines older than the window.
    pub fn past(&self, kind: LogKind) -> Option<&Finding> {
        self.history.iter().find(|f| f.kind == kind)
    }
}

/// [`classify`] over bytes that may not be UTF-8.
pub fn classify_bytes(log: &[u8]) -> LogSummary {
    classify(&String::from_utf8_lossy(log))
}

/// Classify a whole log: every line counts as the present.
pub fn classify(log: &str) -> LogSummary {
    let mut acc = Acc::default();
    let mut physical = 0;
    each_line(log, &mut physical, |line| acc.add(line, true));
    acc.lines = physical;
    acc.finish(None)
}

/// Every log line of `log` (CRI `P` records joined), `None` for one that is not etcd's;
/// `physical` counts the non-blank physical lines.
pub(super) fn each_line(log: &str, physical: &mut usize, mut f: impl FnMut(Option<LogLine>)) {
    // CRI `P` records: the pieces of one long line, joined when its `F` record comes.
    let mut pending = String::new();
    for raw in log.split('\n') {
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() {
            continue;
        }
        *physical += 1;
        if raw.len() > MAX_LINE {
            pending.clear();
            continue;
        }
        let (content, partial) = peel(raw);
        if partial {
            if pending.len() + content.len() <= MAX_LINE {
                pending.push_str(content);
            }
            continue;
        }
        if pending.is_empty() {
            f(parse_line(content));
        } else {
            pending.push_str(content);
            f(parse_line(&pending));
            pending.clear();
        }
    }
    if !pending.is_empty() {
        f(parse_line(&pending));
    }
}

#[derive(Default)]
pub(super) struct Acc {
    pub(super) lines: usize,
    parsed: usize,
    zap: usize,
    text: usize,
    first: Option<String>,
    last: Option<String>,
    local: Option<String>,
    version: Option<String>,
    found: BTreeMap<LogKind, Finding>,
    /// Findings of lines older than the window.
    old: BTreeMap<LogKind, Finding>,
    leader: leader::LeaderAcc,
}

impl Acc {
    /// One line; `recent`: inside the window (its findings count), else history. The leader
    /// view reads every line: it is the state at the newest.
    pub(super) fn add(&mut self, line: Option<LogLine>, recent: bool) {
        let Some(line) = line else { return };
        self.parsed += 1;
        match line.form {
            LineForm::Zap => self.zap += 1,
            LineForm::Text => self.text += 1,
            LineForm::Grpc => {}
        }
        widen(&mut self.first, &mut self.last, line.ts.as_deref());
        if self.local.is_none() {
            self.local.clone_from(&line.local_member_id);
        }
        if self.version.is_none() {
            self.version.clone_from(&line.etcd_version);
        }
        let kinds = line.kinds();
        self.leader.add(&line, &kinds);
        let found = if recent {
            &mut self.found
        } else {
            &mut self.old
        };
        for kind in kinds {
            let f = found.entry(kind).or_insert_with(|| Finding {
                kind,
                count: 0,
                peer_ids: BTreeSet::new(),
                peer_addresses: BTreeSet::new(),
                first: None,
                last: None,
                example: String::new(),
            });
            if f.count == 0 || (f.peer_addresses.is_empty() && !line.peer_addresses.is_empty()) {
                f.example = shorten(&line.raw, EXAMPLE_MAX);
            }
            f.count += 1;
            f.peer_ids.extend(line.peer_ids.iter().cloned());
            f.peer_addresses.extend(line.peer_addresses.iter().cloned());
            widen(&mut f.first, &mut f.last, line.ts.as_deref());
        }
    }

    pub(super) fn finish(self, window: Option<LogWindow>) -> LogSummary {
        let local = self.local;
        let own = |found: BTreeMap<LogKind, Finding>| -> Vec<Finding> {
            found
                .into_values()
                .map(|mut f| {
                    // A member is not its own peer (e.g. an alarm's `from`, or a lost leader that was us).
                    if let Some(id) = &local {
                        f.peer_ids.remove(id);
                    }
                    f
                })
                .collect()
        };
        let findings = own(self.found);
        let history = own(self.old);
        LogSummary {
            window,
            history,
            findings,
            lines: self.lines,
            parsed_lines: self.parsed,
            format: match (self.zap > 0, self.text > 0) {
                (true, false) => LogFormat::Zap,
                (false, true) => LogFormat::Text,
                (true, true) => LogFormat::Mixed,
                (false, false) => LogFormat::Unknown,
            },
            first_ts: self.first,
            last_ts: self.last,
            local_member_id: local,
            etcd_version: self.version,
            leader: self.leader.finish(),
        }
    }
}

/// Normalised timestamps compare as strings, so min/max needs no parsing.
fn widen(first: &mut Option<String>, last: &mut Option<String>, ts: Option<&str>) {
    let Some(ts) = ts else { return };
    if first.as_deref().is_none_or(|f| ts < f) {
        *first = Some(ts.to_string());
    }
    if last.as_deref().is_none_or(|l| ts > l) {
        *last = Some(ts.to_string());
    }
}

fn shorten(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.len() <= max {
        return s.to_string();
    }
    format!("{}…", super::head(s, max))
}

mod episode;
mod leader;
mod line;
mod time;
mod window;

pub use episode::{episodes, format_micros, parse_micros, Episode, PeerKey};
pub use leader::{member_name, LeaderState, LeaderView};

pub use line::parse_line;
use line::peel;
pub use window::{classify_window, LogWindow, WindowEnd};

#[cfg(test)]
pub(crate) mod tests;
