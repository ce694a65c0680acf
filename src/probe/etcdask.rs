//! etcd's own answers on the node, judged here: `/health`, the member list, the alarm list and
//! the two metrics reads. probe.sh only asks (`etcd_ask`, `health_check`, `members_check`,
//! `alarms_check`, `metrics_fetch`) and prints each answer as etcd sent it, bounded, in its own
//! section ([`crate::probe::frame`]); one reader per section here turns it into the document's
//! part, as the script's awk programs did before (format 1 documents still carry their result).
//!
//! A section (`health`, `members`, `alarms`, `metrics.before`, `metrics.after`) has the one
//! shape of every section ([`crate::probe::frame::Head`], written by probe.sh's `raw_section`):
//!
//! ```text
//! skipped WHY              not asked, and why (the rest absent)
//! rc RC                    curl's exit code
//! url URL                  the URL asked
//! w CODE TIME_TOTAL        curl's -w (status and seconds), health, members and alarms
//! time AT_MS MS            the metrics reads: when it started (ms since the probe did), how long
//! raw BYTES                the metrics reads: bytes of the body read (at most METRICS_RAW)
//! size BYTES               bytes of the body the section holds (of the metrics: the lines kept)
//! err LINE                 each line of curl's stderr (its last STDERR_BYTES)
//! hdr LINE                 each line of the response's headers (at most ASK_HEADERS bytes)
//! --                       then the body, as etcd sent it (at most the section's cap)
//! ```
//!
//! Each reader gives the document's own type ([`crate::probe::output`]), bounded as the probe
//! bounds it; the member IDs are checked as they are read ([`member_id`]). Total:
//! whatever a section holds gives a value; a section that is not one of these (empty: the job
//! never wrote it) is an `Error` that says so.

use serde_json::Value;

use crate::probe::frame::Head;
use crate::probe::output::{
    Alarm, Alarms, Health, HealthOutcome, Member, MemberId, Members, MetricsRead, QueryOutcome,
};
use crate::probe::{cap, metrics, DETAIL};

/// Members kept of a list (then `truncated`), URLs of a member, bytes of a name or URL (then
/// `...`); alarms kept, bytes of an alarm's name. The document's caps too
/// ([`crate::probe::parse::bounds`] takes them from here).
pub(crate) const MAX_MEMBERS: usize = 64;
pub(crate) const MAX_MEMBER_URLS: usize = 16;
pub(crate) const MAX_MEMBER_TEXT: usize = 256;
pub(crate) const MAX_ALARMS: usize = 64;
pub(crate) const MAX_ALARM_TEXT: usize = 64;

/// Problem lines kept for one document; the rest are counted in a last line.
const MAX_PROBLEM_LINES: usize = 12;

/// What was found wrong with one document, one line each, at most [`MAX_PROBLEM_LINES`] and a
/// count of the rest: the section readers (a member ID that is none) and the caps say them here.
#[derive(Default)]
pub(crate) struct Problems {
    lines: Vec<String>,
    more: usize,
}

impl Problems {
    pub(crate) fn push(&mut self, line: String) {
        if self.lines.len() < MAX_PROBLEM_LINES {
            self.lines.push(line);
        } else {
            self.more += 1;
        }
    }

    pub(crate) fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.lines.push(format!(
                "and {} more problems of the same document",
                self.more
            ));
        }
        self.lines
    }
}

/// A node's text quoted in a problem line: at most 40 characters, escaped (controls and quotes
/// as Rust writes them), so a line stays one short line whatever the node wrote.
pub(crate) fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        short.push_str("...");
    }
    format!("\"{}\"", short.escape_debug())
}

/// A member's ID as the document wrote it (`raw`, with the member's first peer URL): the ID
/// when it is written as etcd writes IDs; else none, said (an entry without an ID is shown,
/// never taken for a member).
pub(crate) fn member_id(raw: &str, peer_url: Option<&str>, p: &mut Problems) -> Option<MemberId> {
    MemberId::parse(raw)
        .map_err(|why| {
            let url = peer_url
                .map(|u| format!(" (peer URL {})", quote(u)))
                .unwrap_or_default();
            let reads = MemberId::as_etcdctl_reads(raw)
                .map(|id| format!("; etcdctl would read it as {id}"))
                .unwrap_or_default();
            p.push(format!(
                "member ID {}{url} is not one as etcd writes it ({why}{reads}): that entry is never taken for a member",
                quote(raw)
            ));
        })
        .ok()
}

/// An alarm's member ID as the document wrote it: the ID when etcd writes it so; else none, said.
pub(crate) fn alarm_member_id(raw: &str, p: &mut Problems) -> Option<MemberId> {
    MemberId::parse(raw)
        .map_err(|why| {
            p.push(format!(
                "alarm member ID {} is not one as etcd writes it ({why}): not used",
                quote(raw)
            ))
        })
        .ok()
}

/// Bytes of `/health`'s body the probe sends (etcd's is a few dozen).
pub(crate) const HEALTH_BODY: usize = 4096;
/// Bytes of `/health`'s body kept in the document (`body`).
const HEALTH_KEPT: usize = 1024;
/// Bytes of the member list's body: 64 members of 16 URLs fit many times over.
pub(crate) const MEMBERS_BODY: usize = 65536;
/// Bytes of the alarm list's body.
pub(crate) const ALARMS_BODY: usize = 16384;
/// Bytes of one answer's headers (curl's stderr: the one tail of every section's,
/// [`crate::probe::STDERR_BYTES`]).
pub(crate) const HEADERS: usize = 16384;
/// Bytes of `/metrics` read (etcd's whole text is a few hundred KiB); the families kept of it
/// are at most [`metrics::MAX_TEXT_BYTES`].
pub(crate) const METRICS_RAW: usize = 4194304;
/// Whole seconds of the read before the checks (in the background: the alarm list waits for
/// it) and of the one after them (it ends the probe's wait).
pub(crate) const METRICS_BEFORE_S: u64 = 2;
pub(crate) const METRICS_AFTER_S: u64 = 1;
/// Bytes of curl's words in a detail ([`DETAIL`]), of the body quoted in it.
const WORDS: usize = 300;
const EXCERPT: usize = 200;

/// One answer's section, split.
struct Answer<'a> {
    skipped: Option<&'a str>,
    asked: bool,
    rc: i64,
    url: &'a str,
    code: i64,
    secs: f64,
    at_ms: Option<u64>,
    ms: Option<u64>,
    raw: Option<u64>,
    err: Vec<&'a str>,
    hdr: Vec<&'a str>,
    body: String,
}

fn split(text: &str) -> Answer<'_> {
    let mut h = Head::of(text);
    let mut w = h.get("w").unwrap_or_default().split_whitespace();
    let mut t = h.get("time").unwrap_or_default().split_whitespace();
    let mut t = || t.next().and_then(|v| v.parse::<u64>().ok());
    let mut body = std::mem::take(&mut h.body);
    // The body's lines as the node sent them, without the newline the framing adds to the last.
    if body.ends_with('\n') {
        body.pop();
    }
    Answer {
        skipped: h.get("skipped"),
        asked: h.has("rc"),
        rc: h.num("rc").unwrap_or(-1),
        url: h.get("url").unwrap_or_default(),
        code: w.next().and_then(|c| c.parse().ok()).unwrap_or(0),
        secs: w.next().and_then(|s| s.parse().ok()).unwrap_or(0.0),
        at_ms: t(),
        ms: t(),
        raw: h.get("raw").and_then(|v| v.trim().parse().ok()),
        err: h.all("err").collect(),
        hdr: h.all("hdr").collect(),
        body,
    }
}

impl Answer<'_> {
    /// curl's last word on stderr (its last line that says something), capped.
    fn words(&self) -> String {
        let last = self.err.iter().rev().find(|l| !l.trim().is_empty());
        cap(last.map_or("", |l| l.trim_end_matches('\r')), WORDS)
    }

    /// Why the request failed, in curl's words or its exit code.
    fn failed(&self) -> String {
        match self.words() {
            w if w.is_empty() => format!("{}: curl exited {}", self.url, self.rc),
            w => format!("{}: {w}", self.url),
        }
    }

    /// The HTTP status, when curl got one (a node's `w` past a status's range is none).
    fn status(&self) -> Option<u16> {
        u16::try_from(self.code).ok().filter(|c| *c > 0)
    }

    fn ms(&self) -> u64 {
        (self.secs * 1000.0 + 0.5).max(0.0) as u64
    }

    /// The body's start for a detail: one line (tabs and newlines as spaces), capped.
    fn excerpt(&self) -> String {
        cap(&self.body.replace(['\n', '\t', '\r'], " "), EXCERPT)
    }
}

/// How a section that holds no answer reads: not asked, and why (`Skipped`); not written by
/// the probe's own job, or not as it writes it (`Error`). None when it holds an answer.
fn unanswered(name: &str, a: &Answer) -> Option<(QueryOutcome, String)> {
    match a.skipped {
        _ if a.asked => None,
        Some(why) => Some((QueryOutcome::Skipped, cap(why, DETAIL))),
        None => Some((QueryOutcome::Error, format!("{name} job gave no result"))),
    }
}

/// `/health`: `Healthy` only for a 200 whose body says `"health": "true"`.
pub(crate) fn health(text: &str) -> Health {
    let a = split(text);
    if let Some((outcome, detail)) = unanswered("health", &a) {
        return Health {
            outcome: match outcome {
                QueryOutcome::Skipped => HealthOutcome::Skipped,
                _ => HealthOutcome::Error,
            },
            detail: Some(detail),
            ..Health::default()
        };
    }
    let body = crate::probe::head(&a.body, HEALTH_BODY);
    let (outcome, detail, status) = if a.rc != 0 {
        (HealthOutcome::Error, a.failed(), None)
    } else if a.code == 200 && says_healthy(body) {
        (HealthOutcome::Healthy, a.url.to_string(), a.status())
    } else {
        (HealthOutcome::Unhealthy, a.url.to_string(), a.status())
    };
    let body = cap(body, HEALTH_KEPT);
    Health {
        outcome,
        http_status: status,
        body: (!body.is_empty()).then_some(body),
        ms: Some(a.ms()),
        detail: Some(detail),
    }
}

/// `"health"`, spaces, `:`, spaces, `"true"` somewhere in the body (etcd writes
/// `{"health":"true","reason":""}`).
fn says_healthy(body: &str) -> bool {
    body.match_indices("\"health\"").any(|(i, m)| {
        let rest = body[i + m.len()..].trim_start_matches(' ');
        rest.strip_prefix(':')
            .is_some_and(|r| r.trim_start_matches(' ').starts_with("\"true\""))
    })
}

/// The answer as a JSON document of the wanted kind (`[` or `{`), or the failure's detail.
fn document(a: &Answer, what: &str, max: usize, array: bool) -> Result<Value, String> {
    if a.rc != 0 {
        return Err(a.failed());
    }
    if a.code != 200 {
        return Err(format!(
            "{}: HTTP {}: {}",
            a.url,
            a.code.max(-1),
            a.excerpt()
        ));
    }
    // More than the probe sends is not etcd's answer: cut there, it reads as no document.
    let body = crate::probe::head(&a.body, max);
    match serde_json::from_str::<Value>(body) {
        // A list is of objects only (etcd's members are): `[[...]]` is no member list.
        Ok(Value::Array(l)) if array && l.iter().all(Value::is_object) => Ok(Value::Array(l)),
        Ok(v) if !array && v.is_object() => Ok(v),
        _ => Err(format!("{}: not {what}: {}", a.url, a.excerpt())),
    }
}

/// A uint64 in decimal (a JSON number or a string of digits, as etcd's JSON and grpc-gateway
/// print member IDs) as etcd writes IDs: lowercase hex without leading zeros; None when it is not
/// one. `0` stays `0`: the ID check ([`member_id`]) then says it is no member ID.
fn id_hex(v: &Value) -> Option<String> {
    let n = match v {
        Value::Number(n) => n.as_u64()?,
        Value::String(s)
            if !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.parse().ok()?
        }
        _ => return None,
    };
    Some(format!("{n:x}"))
}

/// A string value, capped; None for another kind or an empty one.
fn text(v: Option<&Value>, max: usize) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Some(cap(s, max)),
        _ => None,
    }
}

/// The member list (peerMembersHandler's JSON array of {id, name, peerURLs, clientURLs,
/// isLearner}); the cluster ID from its `X-Etcd-Cluster-ID` header, also with an error answer.
/// An ID that is no member's (0) is said in `p`; the caps' checks of the whole list (a repeated
/// ID, the cluster ID's form) are the caps' (`probe::parse::bounds`).
pub(crate) fn members(text: &str, p: &mut Problems) -> Members {
    let a = split(text);
    if let Some((outcome, detail)) = unanswered("members", &a) {
        return Members {
            outcome,
            detail: Some(detail),
            ..Members::default()
        };
    }
    let cluster = a.hdr.iter().find_map(|h| {
        let (k, v) = h.split_once(':')?;
        k.eq_ignore_ascii_case("x-etcd-cluster-id")
            .then(|| v.trim_start_matches(' ').trim_end_matches('\r'))
    });
    // As etcd writes it (types.ID.String(): hex); anything else is no cluster ID. Lower case and
    // no leading zeros, as the script did; the caps then check the form.
    let cluster = cluster
        .filter(|c| !c.is_empty() && c.len() <= 16 && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|c| match c.to_ascii_lowercase().trim_start_matches('0') {
            "" => "0".to_string(),
            c => c.to_string(),
        });
    let (outcome, list, truncated, detail) = match document(&a, "a member list", MEMBERS_BODY, true)
    {
        Ok(doc) => {
            let entries: Vec<&serde_json::Map<String, Value>> = doc
                .as_array()
                .map(|l| l.iter().filter_map(Value::as_object).collect())
                .unwrap_or_default();
            // The members as etcd sent them: a name's escapes decoded (`\u001b` is the one
            // character; the render layer shows it safely), unlike the script's awk did.
            let list: Vec<Member> = entries
                .iter()
                .take(MAX_MEMBERS)
                .map(|m| member(m, p))
                .collect();
            (
                QueryOutcome::Ok,
                list,
                entries.len() > MAX_MEMBERS,
                a.url.to_string(),
            )
        }
        Err(why) => (QueryOutcome::Error, Vec::new(), false, why),
    };
    Members {
        outcome,
        http_status: a.status(),
        cluster_id: cluster,
        members: list,
        truncated,
        ms: Some(a.ms()),
        detail: Some(cap(&detail, DETAIL)),
    }
}

fn member(m: &serde_json::Map<String, Value>, p: &mut Problems) -> Member {
    let urls = |key: &str| -> Vec<String> {
        m.get(key)
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .take(MAX_MEMBER_URLS)
                    .map(|u| cap(u, MAX_MEMBER_TEXT))
                    .collect()
            })
            .unwrap_or_default()
    };
    let peer_urls = urls("peerURLs");
    let id = m.get("id").and_then(id_hex);
    Member {
        id: id.and_then(|id| member_id(&id, peer_urls.first().map(String::as_str), p)),
        name: text(m.get("name"), MAX_MEMBER_TEXT),
        peer_urls,
        client_urls: urls("clientURLs"),
        is_learner: m.get("isLearner") == Some(&Value::Bool(true)),
    }
}

/// The alarm list (grpc-gateway's AlarmResponse: {"header":..., "alarms":[{"memberID","alarm"}]}),
/// the alarm by its name or its number (AlarmType: NONE 0, NOSPACE 1, CORRUPT 2). A member ID
/// that is no member's (0) is said in `p`.
pub(crate) fn alarms(text: &str, p: &mut Problems) -> Alarms {
    let a = split(text);
    if let Some((outcome, detail)) = unanswered("alarms", &a) {
        return Alarms {
            outcome,
            detail: Some(detail),
            ..Alarms::default()
        };
    }
    let (outcome, list, truncated, detail) = match document(&a, "an alarm list", ALARMS_BODY, false)
    {
        Ok(doc) => {
            let entries: Vec<&serde_json::Map<String, Value>> = doc
                .get("alarms")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_object).collect())
                .unwrap_or_default();
            let list: Vec<Alarm> = entries
                .iter()
                .take(MAX_ALARMS)
                .map(|e| alarm(e, p))
                .collect();
            (
                QueryOutcome::Ok,
                list,
                entries.len() > MAX_ALARMS,
                a.url.to_string(),
            )
        }
        Err(why) => (QueryOutcome::Error, Vec::new(), false, why),
    };
    Alarms {
        outcome,
        http_status: a.status(),
        alarms: list,
        truncated,
        ms: Some(a.ms()),
        detail: Some(cap(&detail, DETAIL)),
    }
}

fn alarm(e: &serde_json::Map<String, Value>, p: &mut Problems) -> Alarm {
    let name = match e.get("alarm") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    };
    let name = match name.as_str() {
        "" | "0" => "NONE".to_string(),
        "1" => "NOSPACE".to_string(),
        "2" => "CORRUPT".to_string(),
        other => cap(other, MAX_ALARM_TEXT),
    };
    let id = e.get("memberID").and_then(id_hex);
    Alarm {
        member_id: id.and_then(|id| alarm_member_id(&id, p)),
        alarm: name,
    }
}

/// Is `line` one of the lines the metrics reader reads: a family's `# TYPE` line or one of its
/// samples (a histogram's `_bucket`, `_sum`, `_count` too)?
fn wanted(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix("# TYPE ") {
        let name = rest.split_whitespace().next().unwrap_or_default();
        return metrics::FAMILIES.contains(&name);
    }
    if line.starts_with('#') || line.trim().is_empty() {
        return false;
    }
    let name = line.split(['{', ' ', '\t']).next().unwrap_or_default();
    let base = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    metrics::FAMILIES.contains(&name) || metrics::FAMILIES.contains(&base)
}

/// One `/metrics` read (section `name`): the wanted lines the probe sent (at most
/// [`metrics::MAX_TEXT_BYTES`] of them, whole lines), the status from the last status line of
/// its headers.
pub(crate) fn metrics_read(name: &str, text: &str) -> MetricsRead {
    let a = split(text);
    if let Some((outcome, detail)) = unanswered(name, &a) {
        return MetricsRead {
            outcome,
            detail: Some(detail),
            ..MetricsRead::default()
        };
    }
    let code = a
        .hdr
        .iter()
        .rev()
        .find_map(|h| {
            let mut w = h.split_whitespace();
            let proto = w.next()?;
            let code = w.next()?;
            (proto.starts_with("HTTP/") && code.len() == 3)
                .then(|| code.parse::<u16>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let raw = a.raw.unwrap_or(0);
    let full = raw >= METRICS_RAW as u64;
    // The probe sends one byte past the cap when there was more: the cut is seen here.
    let mut cut = a.body.len() > metrics::MAX_TEXT_BYTES;
    let mut used = 0;
    let mut text = String::new();
    for line in a.body.lines() {
        if used + line.len() + 1 > metrics::MAX_TEXT_BYTES {
            cut = true;
            break;
        }
        used += line.len() + 1;
        if wanted(line) {
            text.push_str(line);
            text.push('\n');
        }
    }
    // A body over the raw cap ends curl (its pipe closed): kept as cut, not as a failure.
    let (outcome, detail) = if a.rc != 0 && !cut && !full {
        (QueryOutcome::Error, a.failed())
    } else if code != 200 {
        let why = if code > 0 {
            code.to_string()
        } else {
            "status unknown".into()
        };
        (QueryOutcome::Error, format!("{}: HTTP {why}", a.url))
    } else {
        (QueryOutcome::Ok, a.url.to_string())
    };
    let ok = outcome == QueryOutcome::Ok;
    MetricsRead {
        outcome,
        http_status: (code > 0).then_some(code),
        at_ms: a.at_ms,
        ms: a.ms,
        text: (ok && !text.is_empty()).then_some(text),
        truncated: ok && (cut || full),
        detail: Some(cap(&detail, DETAIL)),
    }
}

#[cfg(test)]
pub(crate) mod tests;
