//! etcd log classifier: turns the text of an etcd member's log into findings (kind, count, peers,
//! first/last time) that the verdict can reason about.
//!
//! Forms read, mixed freely in one input:
//! - zap JSON: etcd 3.5, and 3.4 with `--logger=zap` (`{"level":"warn","ts":"…","msg":"…",…}`);
//! - 3.4's default capnslog text: `2026-11-30 09:12:44.123456 W | rafthttp: message`;
//! - Go `log` lines etcd leaves on stderr: grpc-go's (`WARNING: 2026/12/02 08:26:30 [core] …`) and,
//!   in 3.4's capnslog mode, raft's (`raft2026/12/02 14:19:33 INFO: … is starting a new election …`);
//! - any of those behind `crictl logs --timestamps`, `kubectl logs --prefix` or the CRI file format
//!   (`<ts> stderr F <line>`, with `P` records joined to the `F` that ends them).
//!
//! Pure and total: no I/O, no panics on any input, bounded work per line.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longer lines are counted but not parsed: no etcd message is that long, and it caps the work.
const MAX_LINE: usize = 256 * 1024;
/// A finding's example line is cut to about this many bytes (enough for a whole zap line, whose
/// error field comes last and is what evidence quotes).
const EXAMPLE_MAX: usize = 1000;

/// What a line says. Declaration order is the order of [`LogSummary::findings`]; the names are a
/// JSON contract (serialized as written, PascalCase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    CertExpired,
    CertNotYetValid,
    CertNameMismatch,
    CertUnknownAuthority,
    ClusterIdMismatch,
    MemberRemoved,
    LeaderLost,
    ElectionStarted,
    LeaderSteppedDown,
    HeartbeatLate,
    SlowFdatasync,
    ApplySlow,
    NoSpace,
    ClockDrift,
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
    // embed/config_logging.go: zap "rejected connection" (3.4) / "rejected connection on peer
    // endpoint" / "… on client endpoint" (3.5); embed/config.go capnslog "rejected connection from %q".
    row(K::RejectedConnection, Msg, &["rejected connection"]),
    // crypto/x509 CertificateInvalidError{Expired}: "x509: certificate has expired or is not yet
    // valid: current time X is after Y" (Go >= 1.15 adds the detail; without it, read as expired,
    // by far the common case).
    row(K::CertExpired, Error, &["certificate has expired or is not yet valid"]).not(&["is before"]),
    row(K::CertNotYetValid, Error, &["certificate has expired or is not yet valid"]).and(&["is before"]),
    // crypto/x509 HostnameError.
    row(K::CertNameMismatch, Error, &["x509: certificate is valid for ",
        "x509: certificate is not valid for any names", "because it doesn't contain any IP SANs"]),
    // crypto/x509 UnknownAuthorityError.
    row(K::CertUnknownAuthority, Error, &["certificate signed by unknown authority"]),
    // rafthttp/http.go checkClusterCompatibilityFromHeader "request cluster ID mismatch";
    // rafthttp/stream.go and util.go "request sent was ignored … cluster ID mismatch".
    row(K::ClusterIdMismatch, Line, &["cluster ID mismatch"]),
    // membership/cluster.go "removed member" (zap) / "removed member %s from cluster %s";
    // rafthttp/http.go "rejected stream from remote peer because it was removed" / capnslog
    // "rejected the stream from peer %s since it was removed"; rafthttp/util.go errMemberRemoved.
    row(K::MemberRemoved, Msg, &["removed member", "because it was removed", "since it was removed"])
        .not(&["skipped removing"]),
    row(K::MemberRemoved, Error, &["the member has been permanently removed from the cluster"]),
    // raft/node.go "raft.node: %x lost leader %x at term %d" (same text in both forms).
    row(K::LeaderLost, Msg, &["lost leader"]),
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
    // wal/wal.go sync(): zap "slow fdatasync"; capnslog "sync duration of %v, expected less than %v".
    row(K::SlowFdatasync, Msg, &["slow fdatasync", "sync duration of"]),
    // etcdserver/util.go warnOfExpensiveGenericRequest(): zap "apply request took too long";
    // capnslog "%srequest %q with result %q took too long (%v) to execute".
    row(K::ApplySlow, Msg, &["apply request took too long"]),
    row(K::ApplySlow, Msg, &["took too long ("]).and(&[") to execute"]),
    // etcdserver/apply.go "alarm raised" with "alarm":"NOSPACE" / capnslog "alarm NOSPACE raised by
    // peer %s"; rpctypes ErrGRPCNoSpace "etcdserver: mvcc: database space exceeded".
    row(K::NoSpace, Line, &["NOSPACE", "database space exceeded"]).not(&["alarm disarmed"]),
    // rafthttp/probing_status.go: zap "prober found high clock drift"; capnslog "the clock
    // difference against peer %s is too high [%v > %v]".
    row(K::ClockDrift, Msg, &["prober found high clock drift", "the clock difference against peer"]),
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        let set: BTreeSet<LogKind> = PATTERNS
            .iter()
            .filter(|p| p.matches(self))
            .map(|p| p.kind)
            .collect();
        set.into_iter().collect()
    }
}

/// All lines of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub kind: LogKind,
    pub count: usize,
    pub peer_ids: BTreeSet<String>,
    pub peer_addresses: BTreeSet<String>,
    pub first: Option<String>,
    pub last: Option<String>,
    /// One representative line (the first that names a peer address, else the first), cut short.
    pub example: String,
}

/// Which forms the etcd lines were in (grpc-go's lines do not count: they ride along with both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogFormat {
    Zap,
    Text,
    Mixed,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogSummary {
    /// One per kind seen, in [`LogKind`] declaration order.
    pub findings: Vec<Finding>,
    /// Non-blank physical lines.
    pub lines: usize,
    /// Log lines recognised (a CRI `P…F` run counts once).
    pub parsed_lines: usize,
    pub format: LogFormat,
    pub first_ts: Option<String>,
    pub last_ts: Option<String>,
    pub local_member_id: Option<String>,
    pub etcd_version: Option<String>,
}

impl LogSummary {
    pub fn finding(&self, kind: LogKind) -> Option<&Finding> {
        self.findings.iter().find(|f| f.kind == kind)
    }
}

/// [`classify`] over bytes that may not be UTF-8.
pub fn classify_bytes(log: &[u8]) -> LogSummary {
    classify(&String::from_utf8_lossy(log))
}

/// Classify a whole log.
pub fn classify(log: &str) -> LogSummary {
    let mut acc = Acc::default();
    // CRI `P` records: the pieces of one long line, joined when its `F` record comes.
    let mut pending = String::new();
    for physical in log.split('\n') {
        let physical = physical.trim_end_matches('\r');
        if physical.trim().is_empty() {
            continue;
        }
        acc.lines += 1;
        if physical.len() > MAX_LINE {
            pending.clear();
            continue;
        }
        let (content, partial) = peel(physical);
        if partial {
            if pending.len() + content.len() <= MAX_LINE {
                pending.push_str(content);
            }
            continue;
        }
        if pending.is_empty() {
            acc.add(parse_line(content));
        } else {
            pending.push_str(content);
            acc.add(parse_line(&pending));
            pending.clear();
        }
    }
    if !pending.is_empty() {
        acc.add(parse_line(&pending));
    }
    acc.finish()
}

#[derive(Default)]
struct Acc {
    lines: usize,
    parsed: usize,
    zap: usize,
    text: usize,
    first: Option<String>,
    last: Option<String>,
    local: Option<String>,
    version: Option<String>,
    found: BTreeMap<LogKind, Finding>,
}

impl Acc {
    fn add(&mut self, line: Option<LogLine>) {
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
        for kind in line.kinds() {
            let f = self.found.entry(kind).or_insert_with(|| Finding {
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

    fn finish(self) -> LogSummary {
        let local = self.local;
        let findings = self
            .found
            .into_values()
            .map(|mut f| {
                // A member is not its own peer (e.g. an alarm's `from`, or a lost leader that was us).
                if let Some(id) = &local {
                    f.peer_ids.remove(id);
                }
                f
            })
            .collect();
        LogSummary {
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
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Strip what wraps a container's line: the CRI file prefix `<ts> <stream> <P|F> ` (returns
/// `partial` for `P`), `crictl logs --timestamps`' `<ts> `, `kubectl logs --prefix`'s `[pod/…] `.
fn peel(line: &str) -> (&str, bool) {
    let mut s = line.trim_start_matches('\u{feff}');
    for _ in 0..3 {
        if let Some(rest) = s
            .strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .map(|(_, r)| r)
        {
            if !s.starts_with("[{") {
                s = rest;
                continue;
            }
        }
        let mut parts = s.splitn(4, ' ');
        let (Some(first), second) = (parts.next(), parts.next()) else {
            break;
        };
        if !first.contains('T') || parse_time(first).is_none() {
            break;
        }
        if let (Some("stdout" | "stderr"), Some(tag), Some(rest)) =
            (second, parts.next(), parts.next())
        {
            return (rest, tag.split(':').next() == Some("P"));
        }
        s = s[first.len()..].strip_prefix(' ').unwrap_or("");
    }
    (s, false)
}

/// Parse one log line (already free of CRI/crictl prefixes) in any of the forms; `None` when it is
/// none of them.
pub fn parse_line(line: &str) -> Option<LogLine> {
    let line = line.trim();
    if line.len() > MAX_LINE {
        return None;
    }
    if let Some(i) = line.find('{') {
        if i == 0 || line[i..].starts_with("{\"level\"") {
            if let Some(l) = parse_zap(&line[i..]) {
                return Some(l);
            }
        }
    }
    parse_text(line).or_else(|| parse_golog(line))
}

fn parse_zap(json: &str) -> Option<LogLine> {
    // serde_json stops at 128 levels of nesting, so hostile input cannot exhaust the stack.
    let Value::Object(obj) = serde_json::from_str::<Value>(json).ok()? else {
        return None;
    };
    let text = |k: &str| match obj.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(v) => Some(v.to_string()),
    };
    let msg = text("msg").or_else(|| text("message"))?;
    let ts = match obj.get("ts").or_else(|| obj.get("time")) {
        Some(Value::String(s)) => parse_time(s),
        // zap's epoch encoder writes seconds as a float.
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|f| (0.0..253_402_300_800.0).contains(f))
            .map(|f| (f * 1e6) as i64),
        _ => None,
    };
    let error = text("error");
    let mut line = LogLine {
        form: LineForm::Zap,
        ts: ts.map(format_time),
        level: text("level").map(|l| l.to_ascii_lowercase()),
        package: None,
        msg,
        error,
        peer_ids: BTreeSet::new(),
        peer_addresses: BTreeSet::new(),
        local_member_id: text("local-member-id").filter(|s| is_id(s, 1)),
        etcd_version: text("etcd-version"),
        raw: json.to_string(),
    };
    for (key, value) in &obj {
        let strings: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        for s in strings {
            match key.as_str() {
                "peer-id"
                | "remote-peer-id"
                | "remote-member-id"
                | "removed-remote-peer-id"
                | "remote-peer-id-from"
                | "to"
                | "from"
                    if is_id(s, 1) =>
                {
                    line.peer_ids.insert(s.to_string());
                }
                "remote-addr" => add_address(&mut line.peer_addresses, s, true),
                k if k == "address" || k.ends_with("peer-urls") || k.ends_with("peer-url") => {
                    add_address(
                        &mut line.peer_addresses,
                        url_authority(s).unwrap_or(s),
                        false,
                    )
                }
                _ => {}
            }
        }
    }
    if let Some(e) = line.error.clone() {
        scan_text(&mut line, &e);
    }
    Some(line)
}

/// capnslog: `2026-11-30 09:12:44.123456 W | rafthttp: message`.
fn parse_text(line: &str) -> Option<LogLine> {
    let (head, rest) = line.split_once(" | ")?;
    let (when, letter) = head.rsplit_once(' ')?;
    let level = match letter {
        "C" => "critical",
        "E" => "error",
        "W" => "warn",
        "N" => "notice",
        "I" => "info",
        "D" => "debug",
        "T" => "trace",
        _ => return None,
    };
    let ts = parse_time(when)?;
    let (package, msg) = match rest.split_once(": ") {
        Some((p, m))
            if !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/_-.".contains(&b)) =>
        {
            (Some(p.to_string()), m.to_string())
        }
        _ => (None, rest.to_string()),
    };
    let mut out = text_line(LineForm::Text, Some(ts), level, package, msg, line);
    let m = out.msg.clone();
    out.local_member_id = after(&m, "starting member ")
        .or_else(|| after(&m, "restarting member "))
        .filter(|id| m.contains(" in cluster ") && is_id(id, 1));
    out.etcd_version = after(&m, "etcd Version: ");
    Some(out)
}

/// Go's `log` package, as two loggers that etcd leaves on stderr use it:
/// - grpc-go's default logger, level first: `WARNING: 2026/12/02 08:26:30 [core] grpc: …`;
/// - raft's DefaultLogger in 3.4's capnslog mode (raft/logger.go, `log.New(os.Stderr, "raft",
///   log.LstdFlags)` + `header(lvl, msg)`): `raft2026/12/02 14:19:33 INFO: … is starting a new
///   election at term 2`. These are etcd's own raft lines, so they count as the text form.
fn parse_golog(line: &str) -> Option<LogLine> {
    let word = |w: &str| match w {
        "DEBUG" => Some("debug"),
        "INFO" => Some("info"),
        "WARN" | "WARNING" => Some("warn"),
        "ERROR" => Some("error"),
        "FATAL" => Some("fatal"),
        "PANIC" => Some("panic"),
        _ => None,
    };
    if let Some(rest) = line.strip_prefix("raft") {
        let ts = parse_time(rest.get(..19)?)?;
        let rest = rest[19..].trim_start();
        let (level, msg) = match rest.split_once(": ").and_then(|(w, m)| Some((word(w)?, m))) {
            Some((level, msg)) => (level, msg),
            None => ("info", rest),
        };
        let package = Some("raft".to_string());
        return Some(text_line(
            LineForm::Text,
            Some(ts),
            level,
            package,
            msg.to_string(),
            line,
        ));
    }
    let (w, rest) = line.split_once(": ")?;
    let level = word(w)?;
    let ts = parse_time(rest.get(..19)?)?;
    let msg = rest[19..].trim_start().to_string();
    Some(text_line(LineForm::Grpc, Some(ts), level, None, msg, line))
}

fn text_line(
    form: LineForm,
    ts: Option<i64>,
    level: &str,
    package: Option<String>,
    msg: String,
    raw: &str,
) -> LogLine {
    let mut line = LogLine {
        form,
        ts: ts.map(format_time),
        level: Some(level.to_string()),
        package,
        error: Some(msg.clone()),
        msg,
        peer_ids: BTreeSet::new(),
        peer_addresses: BTreeSet::new(),
        local_member_id: None,
        etcd_version: None,
        raw: raw.to_string(),
    };
    let m = line.msg.clone();
    scan_text(&mut line, &m);
    line
}

/// Peer IDs and addresses named in free text (text-form messages, zap error strings).
fn scan_text(line: &mut LogLine, text: &str) {
    // Phrases that put a member ID next: rafthttp's "peer %s …", "failed to <action> %s on <stream>",
    // cluster_util's "of member %s", raft.go's heartbeat "…, to %x)", membership "removed member %s".
    const ID_AFTER: &[&str] = &[
        "peer ",
        "of member ",
        "failed to dial ",
        "failed to read ",
        "failed to write ",
        "failed to heartbeat ",
        ", to ",
        "removed member ",
    ];
    for marker in ID_AFTER {
        for (i, _) in text.match_indices(marker).take(8) {
            if let Some(id) = after(&text[i..], marker) {
                // 8+ hex digits: an etcd member ID is random 64-bit, and this keeps words like "add" out.
                if is_id(&id, 8) {
                    line.peer_ids.insert(id);
                }
            }
        }
    }
    // Go net errors: "dial tcp 198.18.0.12:2380: …", "read tcp 198.18.0.11:38242->198.18.0.12:2380: …".
    for (i, _) in text.match_indices("tcp").take(16) {
        let rest = &text[i + 3..];
        let rest = rest.strip_prefix(['4', '6']).unwrap_or(rest);
        let Some(rest) = rest.strip_prefix(' ') else {
            continue;
        };
        let token: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || ".:[]%-_>".contains(*c))
            .collect();
        let far = token
            .rsplit("->")
            .next()
            .unwrap_or("")
            .trim_end_matches(':');
        if far
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            add_address(&mut line.peer_addresses, far, false);
        }
    }
    for scheme in ["http://", "https://"] {
        for (i, _) in text.match_indices(scheme).take(16) {
            if let Some(a) = url_authority(&text[i..]) {
                add_address(&mut line.peer_addresses, a, false);
            }
        }
    }
    // capnslog's "rejected connection from \"198.18.0.12:41234\"": the port is ephemeral.
    if let Some(addr) = after(text, "rejected connection from \"") {
        add_address(&mut line.peer_addresses, &addr, true);
    }
    // x509 "certificate is valid for A, B, not C": C is the name we dialled, i.e. the peer, when
    // the line names the peer nowhere else (a stream dial's error carries no URL).
    if let Some(i) = text.find("certificate is valid for ") {
        if let Some(wanted) = after(&text[i..], ", not ") {
            let known = line.peer_addresses.iter().any(|a| host_of(a) == wanted);
            if !known {
                add_address(&mut line.peer_addresses, &wanted, false);
            }
        }
    }
}

/// The token right after `marker`: up to whitespace, quote, bracket or comma.
fn after(text: &str, marker: &str) -> Option<String> {
    let i = text.find(marker)? + marker.len();
    let token: String = text[i..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !"\"'(),;{}<>".contains(*c))
        .take(256)
        .collect();
    let token = token.trim_end_matches(['.', ':', ']']).to_string();
    (!token.is_empty()).then_some(token)
}

fn is_id(s: &str, min: usize) -> bool {
    (min..=16).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// `http://198.18.0.13:2380/version` → `198.18.0.13:2380`.
fn url_authority(s: &str) -> Option<&str> {
    let i = s.find("://")? + 3;
    let rest = &s[i..];
    let end = rest
        .find(|c: char| "/\"' ),\\}?#".contains(c))
        .unwrap_or(rest.len());
    let auth = &rest[..end];
    let auth = auth.rsplit_once('@').map_or(auth, |(_, a)| a);
    (!auth.is_empty()).then_some(auth)
}

fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match addr.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    }
}

fn add_address(set: &mut BTreeSet<String>, addr: &str, host_only: bool) {
    let addr = addr.trim().trim_end_matches(['.', ':']);
    let host = host_of(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty()
        || addr.len() > 255
        || host.starts_with("127.")
        || matches!(host, "::1" | "localhost" | "0.0.0.0" | "::")
    {
        return;
    }
    set.insert(if host_only {
        host.to_string()
    } else {
        addr.to_string()
    });
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±hh[:]mm]` or grpc-go's `YYYY/MM/DD HH:MM:SS` → µs since the
/// epoch. A missing zone is UTC.
fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let d = b.get(from..from + len)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0')))
    };
    let sep_ok = |i: usize, set: &[u8]| b.get(i).is_some_and(|c| set.contains(c));
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let date_sep = *b.get(4)?;
    if !matches!(date_sep, b'-' | b'/') || b.get(7) != Some(&date_sep) || !sep_ok(10, b"T ") {
        return None;
    }
    let (hour, min, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !sep_ok(13, b":") || !sep_ok(16, b":") {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        for k in 0..6 {
            micros = micros * 10
                + b.get(i + k)
                    .filter(|_| k < digits)
                    .map_or(0, |c| i64::from(c - b'0'));
        }
        i += digits;
    }
    let offset = match b.get(i) {
        None | Some(b'Z') => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let h = num(i + 1, 2)?;
            let m =
                num(i + 3, 2).or_else(|| num(i + 4, 2).filter(|_| b.get(i + 3) == Some(&b':')))?;
            let o = (h * 60 + m) * 60;
            if sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec.min(59) - offset;
    Some(secs * 1_000_000 + micros)
}

/// RFC 3339 UTC, six fraction digits.
fn format_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZAP: &str = r#"{"level":"warn","ts":"2026-11-30T09:12:44.123456Z","caller":"x","#;
    const TXT: &str = "2026-11-30 09:12:44.123456 W | ";

    fn zap(rest: &str) -> String {
        format!("{ZAP}{rest}}}")
    }
    fn kinds(line: &str) -> Vec<LogKind> {
        parse_line(line).map(|l| l.kinds()).unwrap_or_default()
    }

    /// One line in, the kinds out: at least one case per pattern row, in both forms where etcd
    /// has both. Messages as etcd v3.4.23 / v3.5.17 print them (see the table's comments).
    #[test]
    fn every_row() {
        use LogKind::*;
        let cases: &[(String, &[LogKind])] = &[
            (zap(r#""msg":"peer became inactive (message send to peer failed)","peer-id":"3a57933972cb5131","error":"failed to dial 3a57933972cb5131 on stream Message (dial tcp 198.18.0.12:2380: i/o timeout)""#), &[PeerInactive, IoTimeout]),
            (format!("{TXT}rafthttp: peer 3a57933972cb5131 became inactive (message send to peer failed)"), &[PeerInactive]),
            (format!("{TXT}rafthttp: failed to dial 3a57933972cb5131 on stream Message (dial tcp 198.18.0.12:2380: connect: no route to host)"), &[NoRouteToHost]),
            (zap(r#""msg":"peer became active","peer-id":"3a57933972cb5131""#), &[PeerActive]),
            (format!("{TXT}rafthttp: peer 3a57933972cb5131 became active"), &[PeerActive]),
            (format!("{TXT}raft: 8e9e05c52164694d became leader at term 3"), &[]),
            (format!("{TXT}rafthttp: health check for peer 3a57933972cb5131 could not connect: dial tcp 198.18.0.12:2380: i/o timeout"), &[PeerUnhealthy, IoTimeout]),
            (format!("{TXT}rafthttp: lost the TCP streaming connection with peer 3a57933972cb5131 (stream MsgApp v2 reader)"), &[LostStream]),
            (zap(r#""msg":"lost TCP streaming connection with remote peer","remote-peer-id":"3a57933972cb5131","error":"read tcp 198.18.0.11:41106->198.18.0.12:2380: read: connection reset by peer""#), &[LostStream, ConnectionReset]),
            (format!("{TXT}etcdserver: failed to reach the peerURL(http://198.18.0.12:2380) of member 3a57933972cb5131 (Get http://198.18.0.12:2380/version: dial tcp 198.18.0.12:2380: connect: connection refused)"), &[PeerUrlUnreachable, ConnectionRefused]),
            (zap(r#""msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"Get \"https://198.18.0.12:2380/raft/probing\": net/http: TLS handshake timeout""#), &[PeerUnhealthy, TlsHandshakeTimeout]),
            (zap(r#""msg":"peer became inactive (message send to peer failed)","peer-id":"3a57933972cb5131","error":"failed to dial 3a57933972cb5131 on stream MsgApp v2 (remote error: tls: bad certificate)""#), &[PeerInactive, TlsRemoteError]),
            (zap(r#""msg":"rejected connection on peer endpoint","remote-addr":"198.18.0.12:52314","server-name":"","error":"tls: failed to verify certificate: x509: certificate signed by unknown authority""#), &[RejectedConnection, CertUnknownAuthority]),
            (r#"2026-11-30 09:12:44.123456 I | embed: rejected connection from "198.18.0.12:52314" (error "remote error: tls: bad certificate", ServerName "")"#.into(), &[TlsRemoteError, RejectedConnection]),
            (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is after 2026-11-01T00:00:00Z""#), &[PeerUnhealthy, CertExpired]),
            (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid""#), &[PeerUnhealthy, CertExpired]),
            (zap(r#""msg":"prober detected unhealthy status","error":"x509: certificate has expired or is not yet valid: current time 2026-11-30T09:12:44Z is before 2027-01-01T00:00:00Z""#), &[PeerUnhealthy, CertNotYetValid]),
            (zap(r#""msg":"peer became inactive (message send to peer failed)","error":"failed to dial 3a57933972cb5131 on stream Message (x509: certificate is valid for 198.18.0.21, not 198.18.0.12)""#), &[PeerInactive, CertNameMismatch]),
            (zap(r#""msg":"request cluster ID mismatch","remote-peer-cluster-id":"1b3a5b1e0c2f9d11""#), &[ClusterIdMismatch]),
            (format!("{TXT}rafthttp: request sent was ignored (cluster ID mismatch: remote[3a57933972cb5131]=1b3a5b1e0c2f9d11, local=cdf818194e3a8c32)"), &[ClusterIdMismatch]),
            (zap(r#""msg":"removed member","removed-remote-peer-id":"3a57933972cb5131","removed-remote-peer-urls":["https://198.18.0.12:2380"]"#), &[MemberRemoved]),
            (format!("{TXT}etcdserver/membership: removed member 3a57933972cb5131 from cluster cdf818194e3a8c32"), &[MemberRemoved]),
            (zap(r#""msg":"skipped removing already removed member","removed-remote-peer-id":"3a57933972cb5131""#), &[]),
            (zap(r#""msg":"failed to dial","error":"the member has been permanently removed from the cluster""#), &[MemberRemoved]),
            (format!("{TXT}raft: raft.node: 8e9e05c52164694d lost leader 3a57933972cb5131 at term 5"), &[LeaderLost]),
            (format!("{TXT}raft: 8e9e05c52164694d is starting a new election at term 5"), &[ElectionStarted]),
            ("raft2026/12/02 14:20:01 INFO: 9084a16ea99391a6 is starting a new election at term 3".into(), &[ElectionStarted]),
            (format!("{TXT}raft: 8e9e05c52164694d became candidate at term 6"), &[]),
            (zap(r#""msg":"8e9e05c52164694d stepped down to follower since quorum is not active""#), &[LeaderSteppedDown]),
            (zap(r#""msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","to":"3a57933972cb5131""#), &[HeartbeatLate]),
            (format!("{TXT}etcdserver: failed to send out heartbeat on time (exceeded the 100ms timeout for 1.2s, to 3a57933972cb5131)"), &[HeartbeatLate]),
            (zap(r#""msg":"slow fdatasync","took":"1.5s","expected-duration":"1s""#), &[SlowFdatasync]),
            (format!("{TXT}wal: sync duration of 1.5s, expected less than 1s"), &[SlowFdatasync]),
            (zap(r#""msg":"apply request took too long","took":"1.2s","prefix":"read-only range ""#), &[ApplySlow]),
            (format!(r#"{TXT}etcdserver: read-only range request "key:\"/registry/pods\" " with result "range_response_count:0 size:5" took too long (1.2s) to execute"#), &[ApplySlow]),
            (zap(r#""msg":"alarm raised","alarm":"NOSPACE","from":"3a57933972cb5131""#), &[NoSpace]),
            (format!("{TXT}etcdserver: alarm NOSPACE raised by peer 3a57933972cb5131"), &[NoSpace]),
            (zap(r#""msg":"alarm disarmed","alarm":"NOSPACE""#), &[]),
            (zap(r#""msg":"failed to apply request","error":"etcdserver: mvcc: database space exceeded""#), &[NoSpace]),
            (zap(r#""msg":"prober found high clock drift","remote-peer-id":"3a57933972cb5131","clock-drift":"1.5s""#), &[ClockDrift]),
            (format!("{TXT}rafthttp: the clock difference against peer 3a57933972cb5131 is too high [1.5s > 1s]"), &[ClockDrift]),
        ];
        for (line, want) in cases {
            assert_eq!(kinds(line), *want, "{line}");
        }
        // Every row of the table is reached by some case above.
        for (i, p) in PATTERNS.iter().enumerate() {
            let hit = cases
                .iter()
                .any(|(l, _)| parse_line(l).is_some_and(|l| p.matches(&l)));
            assert!(hit, "no case for row {i} ({:?})", p.kind);
        }
    }

    #[test]
    fn peers_named() {
        let l = parse_line(&zap(r#""msg":"lost TCP streaming connection with remote peer","local-member-id":"9084a16ea99391a6","remote-peer-id":"568f5d17e59791c3","error":"read tcp 198.18.0.11:38242->198.18.0.12:2380: i/o timeout""#)).unwrap();
        assert_eq!(
            l.peer_addresses,
            BTreeSet::from(["198.18.0.12:2380".to_string()])
        );
        assert_eq!(l.peer_ids, BTreeSet::from(["568f5d17e59791c3".to_string()]));
        assert_eq!(l.local_member_id.as_deref(), Some("9084a16ea99391a6"));
        let l = parse_line(&format!("{TXT}rafthttp: failed to dial 3a57933972cb5131 on stream Message (x509: certificate is valid for 198.18.0.21, not 198.18.0.12)")).unwrap();
        assert_eq!(
            l.peer_addresses,
            BTreeSet::from(["198.18.0.12".to_string()])
        );
        assert_eq!(l.peer_ids, BTreeSet::from(["3a57933972cb5131".to_string()]));
        let l = parse_line(
            r#"{"msg":"rejected connection","remote-addr":"[fd00::12]:52314","error":"EOF"}"#,
        )
        .unwrap();
        assert_eq!(l.peer_addresses, BTreeSet::from(["fd00::12".to_string()]));
        let l = parse_line(r#"WARNING: 2026/12/02 08:26:30 [core] grpc: failed to connect to {127.0.0.1:2379}. Err: "dial tcp 127.0.0.1:2379: connect: connection refused""#).unwrap();
        assert!(l.peer_addresses.is_empty(), "loopback is not a peer");
        assert_eq!(l.kinds(), [LogKind::ConnectionRefused]);
        let l = parse_line(r#"{"msg":"failed to reach the peer URL","address":"https://[fd00::12]:2380/version","remote-member-id":"3a57933972cb5131"}"#).unwrap();
        assert_eq!(
            l.peer_addresses,
            BTreeSet::from(["[fd00::12]:2380".to_string()])
        );
    }

    #[test]
    fn timestamps() {
        let ts = |l: &str| parse_line(l).and_then(|l| l.ts);
        let z = |t: &str| ts(&format!(r#"{{"ts":"{t}","msg":"m"}}"#));
        assert_eq!(
            z("2026-12-02T08:27:03.102Z").as_deref(),
            Some("2026-12-02T08:27:03.102000Z")
        );
        assert_eq!(
            z("2026-11-30T10:12:44.123456+0100").as_deref(),
            Some("2026-11-30T09:12:44.123456Z")
        );
        assert_eq!(
            z("2026-01-01T00:30:00.5+01:00").as_deref(),
            Some("2025-12-31T23:30:00.500000Z")
        );
        assert_eq!(
            z("2024-02-28T23:00:00.000-0130").as_deref(),
            Some("2024-02-29T00:30:00.000000Z")
        );
        assert_eq!(
            z("2026-11-30T09:12:44.123456789Z").as_deref(),
            Some("2026-11-30T09:12:44.123456Z")
        );
        assert_eq!(z("2026-13-30T09:12:44Z"), None);
        assert_eq!(z("yesterday"), None);
        let epoch = ts(r#"{"ts":1764493964.5,"msg":"m"}"#);
        assert_eq!(epoch.as_deref(), Some("2025-11-30T09:12:44.500000Z"));
        assert_eq!(
            ts(&format!("{TXT}raft: x")).as_deref(),
            Some("2026-11-30T09:12:44.123456Z")
        );
        assert_eq!(
            ts("WARNING: 2026/12/02 08:26:30 [core] x").as_deref(),
            Some("2026-12-02T08:26:30.000000Z")
        );
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn text_form_details() {
        let l =
            parse_line("2026-11-30 09:12:44.123456 I | etcdmain: etcd Version: 3.4.23").unwrap();
        assert_eq!(
            (l.form, l.level.as_deref(), l.package.as_deref()),
            (LineForm::Text, Some("info"), Some("etcdmain"))
        );
        assert_eq!(l.etcd_version.as_deref(), Some("3.4.23"));
        let l = parse_line("2026-11-30 09:12:44.123456 I | etcdserver: starting member 8e9e05c52164694d in cluster cdf818194e3a8c32").unwrap();
        assert_eq!(l.local_member_id.as_deref(), Some("8e9e05c52164694d"));
        assert!(parse_line("2026-11-30 09:12:44.123456 X | raft: x").is_none());
        let l = parse_line("raft2026/12/02 14:20:00 WARN: 9084a16ea99391a6 stepped down to follower since quorum is not active").unwrap();
        assert_eq!(
            (l.form, l.level.as_deref(), l.package.as_deref()),
            (LineForm::Text, Some("warn"), Some("raft"))
        );
        assert_eq!(l.ts.as_deref(), Some("2026-12-02T14:20:00.000000Z"));
        assert_eq!(l.kinds(), [LogKind::LeaderSteppedDown]);
        assert!(parse_line("just words").is_none());
    }

    #[test]
    fn wrappers_and_summary() {
        let inner = r#"{"level":"warn","ts":"2026-11-30T09:12:44.100Z","msg":"prober detected unhealthy status","remote-peer-id":"3a57933972cb5131","error":"dial tcp 198.18.0.12:2380: i/o timeout"}"#;
        let (a, b) = inner.split_at(60);
        let log = format!(
            "\u{feff}2026-11-30T09:12:44.1Z stderr F {inner}\r\n\
             2026-11-30T09:12:45.123456789Z {}\n\
             [pod/etcd-cp1/etcd] {}\n\
             2026-11-30T09:12:46.0Z stderr P {a}\n2026-11-30T09:12:46.0Z stderr F {b}\n\
             garbage\n\n{}",
            inner.replace("44.100", "45.100"),
            inner.replace("44.100", "43.100"),
            &inner[..90],
        );
        let s = classify(&log);
        assert_eq!((s.lines, s.parsed_lines, s.format), (7, 4, LogFormat::Zap));
        let f = s.finding(LogKind::PeerUnhealthy).unwrap();
        assert_eq!(f.count, 4);
        assert_eq!(f.first.as_deref(), Some("2026-11-30T09:12:43.100000Z"));
        assert_eq!(f.last.as_deref(), Some("2026-11-30T09:12:45.100000Z"));
        assert_eq!(
            s.findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
            [LogKind::PeerUnhealthy, LogKind::IoTimeout]
        );
        let mixed =
            format!("{inner}\n{TXT}raft: 8e9e05c52164694d is starting a new election at term 5\n");
        assert_eq!(classify(&mixed).format, LogFormat::Mixed);
        assert_eq!(classify("").format, LogFormat::Unknown);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["findings"][0]["kind"], "PeerUnhealthy");
        assert_eq!(json["findings"][1]["peerAddresses"][0], "198.18.0.12:2380");
        assert_eq!(json["parsedLines"], 4);
    }

    /// No input panics: random bytes, random splices of real line pieces, hostile shapes.
    #[test]
    fn total_on_noise() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        let pieces = [
            ZAP,
            TXT,
            "{",
            "}",
            "\"",
            "\\",
            ":",
            " | ",
            "dial tcp ",
            "->",
            "://",
            "[",
            "]",
            "peer ",
            "é",
            "\n",
            "\r",
            "1",
            "x509: certificate is valid for ",
            ", not ",
            "rejected connection from \"",
            "stderr P ",
            "2026-11-30T09:12:44Z ",
            "WARNING: ",
            "+99",
            ".",
            "-",
        ];
        for _ in 0..3000 {
            let mut bytes = Vec::new();
            for _ in 0..next() % 40 {
                if next() % 3 == 0 {
                    bytes.push((next() % 256) as u8);
                } else {
                    bytes.extend_from_slice(pieces[next() % pieces.len()].as_bytes());
                }
            }
            let s = classify_bytes(&bytes);
            assert!(s.parsed_lines <= s.lines + 1);
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        classify(&deep);
        classify(&format!(
            r#"{{"msg":{}1{}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        ));
        // Long but under MAX_LINE, so they are parsed: the per-line work stays bounded.
        classify(&format!("{TXT}{}", "dial tcp 1.2.3.4:5->".repeat(12_000)));
        classify(&format!(
            "{ZAP}\"msg\":\"{}\"}}",
            "peer 3a57933972cb5131 http://".repeat(8_000)
        ));
    }
}
