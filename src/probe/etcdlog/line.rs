//! Reading one line: the wrappers around it (CRI, crictl, kubectl), its form (zap JSON, capnslog
//! text, Go's log package), and the peer IDs and addresses it names.

use super::time::{format_time, parse_time};
use super::*;

/// Strip what wraps a container's line: the CRI file prefix `<ts> <stream> <P|F> ` (returns
/// `partial` for `P`), `crictl logs --timestamps`' `<ts> `, `kubectl logs --prefix`'s `[pod/…] `.
pub(super) fn peel(line: &str) -> (&str, bool) {
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
    parse_console(line)
        .or_else(|| parse_text(line))
        .or_else(|| parse_golog(line))
        .or_else(|| parse_go_runtime(line))
}

/// What a Go program prints on stderr as it dies, in no logger's format: the runtime's
/// `panic: …` and `fatal error: …`, and the flag package's `flag provided but not defined: -x`
/// (etcd's flag set exits 2 after it). Undated: the classifier gives them the time of the line
/// before. Level "panic" / "fatal", so they count as exits.
pub(super) fn parse_go_runtime(line: &str) -> Option<LogLine> {
    let level = if line.starts_with("panic: ") {
        "panic"
    } else if line.starts_with("fatal error: ")
        || line.starts_with("flag provided but not defined: ")
    {
        "fatal"
    } else {
        return None;
    };
    Some(text_line(
        LineForm::Text,
        None,
        level,
        None,
        line.to_string(),
        line,
    ))
}

pub(super) fn parse_zap(json: &str) -> Option<LogLine> {
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
                | "removed-member-id"
                | "mismatch-member-id"
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
    // 3.5 writes raft's lines through zap with the IDs in the message ("raft.node: … elected
    // leader … at term 2").
    let m = line.msg.clone();
    scan_text(&mut line, &m);
    Some(line)
}

/// etcd 3.6's `--log-format console` (client/pkg/logutil/log_format.go, new in 3.6; `json`
/// stays the default): zap's console encoder over etcd's encoder config (logutil/zap.go), i.e.
/// tab-separated time, lowercase level, the logger's name when it has one (`raft`), the caller,
/// the message, and the fields as one spaced JSON object (`{"peer-id": "…", "error": "…"}`,
/// zapcore/console_encoder.go `writeContext`). Read as the zap line it stands for; `raw` keeps
/// the line as written.
pub(super) fn parse_console(line: &str) -> Option<LogLine> {
    const LEVELS: &[&str] = &["debug", "info", "warn", "error", "dpanic", "panic", "fatal"];
    let mut parts: Vec<&str> = line.split('\t').take(8).collect();
    if parts.len() < 3 || !parts[0].contains('T') || parse_time(parts[0]).is_none() {
        return None;
    }
    let level = parts[1].to_ascii_lowercase();
    if !LEVELS.contains(&level.as_str()) {
        return None;
    }
    let mut obj = match parts
        .last()
        .filter(|p| p.starts_with('{') && parts.len() > 3)
    {
        Some(ctx) => match serde_json::from_str::<Value>(ctx) {
            Ok(Value::Object(o)) => {
                parts.pop();
                o
            }
            _ => serde_json::Map::new(),
        },
        None => serde_json::Map::new(),
    };
    let msg = parts.pop().filter(|_| parts.len() >= 2)?;
    obj.insert("level".into(), Value::String(level));
    obj.insert("ts".into(), Value::String(parts[0].to_string()));
    obj.insert("msg".into(), Value::String(msg.to_string()));
    let mut out = parse_zap(&Value::Object(obj).to_string())?;
    out.raw = line.to_string();
    Some(out)
}

/// capnslog: `2026-11-30 09:12:44.123456 W | rafthttp: message`.
pub(super) fn parse_text(line: &str) -> Option<LogLine> {
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
pub(super) fn parse_golog(line: &str) -> Option<LogLine> {
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

pub(super) fn text_line(
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
pub(super) fn scan_text(line: &mut LogLine, text: &str) {
    // Phrases that put a member ID next: rafthttp's "peer %s …", "failed to <action> %s on <stream>",
    // cluster_util's "of member %s", raft.go's heartbeat "…, to %x)", membership "removed member %s",
    // raft/node.go's "lost leader %x", "elected leader %x", "changed leader from %x to %x",
    // rafthttp's "failed to find member %s", server.go's "from removed member %s".
    const ID_AFTER: &[&str] = &[
        "leader ",
        "leader from ",
        " to ",
        "failed to find member ",
        "from removed member ",
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
    // listener_tls.go checkSAN(): `tls: "198.18.0.12" does not match any of DNSNames [...]`: the
    // remote IP whose certificate names other hosts.
    if let Some(i) = text.find(" does not match any of DNSNames") {
        if let Some(j) = text[..i].rfind("tls: \"") {
            let ip = text[j + 6..i].trim_end_matches('"');
            if !ip.is_empty() && !ip.contains(['"', ' ']) {
                add_address(&mut line.peer_addresses, ip, true);
            }
        }
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
pub(super) fn after(text: &str, marker: &str) -> Option<String> {
    let i = text.find(marker)? + marker.len();
    let token: String = text[i..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !"\"'(),;{}<>".contains(*c))
        .take(256)
        .collect();
    let token = token.trim_end_matches(['.', ':', ']']).to_string();
    (!token.is_empty()).then_some(token)
}

pub(super) fn is_id(s: &str, min: usize) -> bool {
    (min..=16).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// `http://198.18.0.13:2380/version` → `198.18.0.13:2380`.
pub(super) fn url_authority(s: &str) -> Option<&str> {
    let i = s.find("://")? + 3;
    let rest = &s[i..];
    let end = rest
        .find(|c: char| "/\"' ),\\}?#".contains(c))
        .unwrap_or(rest.len());
    let auth = &rest[..end];
    let auth = auth.rsplit_once('@').map_or(auth, |(_, a)| a);
    (!auth.is_empty()).then_some(auth)
}

pub(super) fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match addr.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    }
}

pub(super) fn add_address(set: &mut BTreeSet<String>, addr: &str, host_only: bool) {
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
