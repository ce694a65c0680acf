//! The probe's own caps, applied to whatever a node printed before it is read into
//! [`ProbeOutput`](crate::probe::output::ProbeOutput): a compromised node writes its document,
//! and the verdict's work and output grow with its lists (each member an evidence line, each
//! stray a removal step, each path and error a line). A list longer than `probe.sh` ever
//! prints is cut at that length, a text longer than it prints is cut the way it cuts (`cap`:
//! the first N bytes and `...`), and each is said as a problem of that node's document. Member
//! and cluster IDs are kept only in the form etcd writes them ([`MemberId::parse`]).
//!
//! Runs on the parsed JSON value, before any typed reading: the arrays are cut first, so what
//! follows (the typed reading, the verdict) works on at most the caps whatever the document
//! held; the cost before that is one linear JSON parse of at most `MAX_OUTPUT_BYTES`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::probe::etcdask;
use crate::probe::output::MemberId;

/// Members in one list: the member list's reader (`probe::etcdask`) keeps 64, then `truncated`.
pub const MAX_MEMBERS: usize = etcdask::MAX_MEMBERS;
/// Peer and client URLs of one member: 16 each.
pub const MAX_MEMBER_URLS: usize = etcdask::MAX_MEMBER_URLS;
/// A member's name and each of its URLs: 256 bytes and `...`.
pub const MAX_MEMBER_TEXT: usize = etcdask::MAX_MEMBER_TEXT;
/// Alarms in the list: the reader keeps 64; an alarm's name 64 bytes and `...`.
pub const MAX_ALARMS: usize = etcdask::MAX_ALARMS;
pub const MAX_ALARM_TEXT: usize = etcdask::MAX_ALARM_TEXT;
/// Certificates: `probe_certs` reads ca.crt, server.crt, peer.crt, healthcheck-client.crt and
/// apiserver-etcd-client.crt, one entry each.
pub const MAX_CERTS: usize = 5;
/// SANs of one certificate: the probe prints what openssl lists (kubeadm's etcd certificates
/// have a handful: the host name, localhost, the node's IPs); 64 is the plugin's bound.
pub const MAX_SANS: usize = 64;
/// The most addresses the plugin passes a probe (`--self` and the `--peer`s): the targets'
/// bound, `supervisor::targets::MAX_TARGETS`, which sits above this module and checks at
/// compile time that it is no more than this.
pub const MAX_ADDRESSES: usize = 16;
/// Paths: 2379 and 2380 of `--self` and each `--peer`, each address once.
pub const MAX_PATHS: usize = 2 * MAX_ADDRESSES;
/// Errors: one per step that can fail (host, etcd-logs, etcd-previous-logs, paths twice,
/// manifest, probe) and one per argument it could not use (the plugin passes at most 21
/// options); each message `cap($2, 500)`.
pub const MAX_ERRORS: usize = 32;
pub const MAX_ERROR_TEXT: usize = 500;

/// The firewall reads' caps are the firewall section reader's own ([`crate::probe::firewall`]).
pub use crate::probe::firewall::{FIREWALL_READ, MAX_FIREWALL_READS, MAX_FIREWALL_TEXT};
/// The kube-apiserver reads (probe.sh's `APISERVER_*` caps): crictl's container list, the log
/// tail, the `/readyz?verbose` body, the serving certificate's PEM, each read's detail.
pub const MAX_APISERVER_PS: usize = 32768;
pub const MAX_APISERVER_LOG: usize = 16384;
pub const MAX_APISERVER_READYZ: usize = 8192;
pub const MAX_APISERVER_CERT: usize = 16384;
pub const MAX_APISERVER_DETAIL: usize = 500;
/// Lines of the kube-apiserver's log tail the probe asks crictl for.
pub const APISERVER_LOG_LINES: usize = 60;

/// Problem lines kept for one document; the rest are counted in a last line.
const MAX_PROBLEM_LINES: usize = 12;

/// What `cap(s, n)` in probe.sh leaves at most: n bytes (under `LC_ALL=C`), each at most one
/// character once escaped, and `...`.
fn longest(n: usize) -> usize {
    n + 3
}

#[derive(Default)]
struct Problems {
    lines: Vec<String>,
    more: usize,
}

impl Problems {
    fn push(&mut self, line: String) {
        if self.lines.len() < MAX_PROBLEM_LINES {
            self.lines.push(line);
        } else {
            self.more += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
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
fn quote(text: &str) -> String {
    let mut short: String = text.chars().take(40).collect();
    if text.chars().nth(40).is_some() {
        short.push_str("...");
    }
    format!("\"{}\"", short.escape_debug())
}

/// Bounds `doc` to the probe's caps in place; what it had to change, one line each.
pub(super) fn bound(doc: &mut Value) -> Vec<String> {
    let mut p = Problems::default();
    let Some(obj) = doc.as_object_mut() else {
        return vec![];
    };
    if let Some(m) = obj.get_mut("members").and_then(Value::as_object_mut) {
        members(m, &mut p);
    }
    if let Some(a) = obj.get_mut("alarms").and_then(Value::as_object_mut) {
        alarms(a, &mut p);
    }
    if let Some(list) = array(obj, "paths") {
        cut(list, MAX_PATHS, "its path checks", &mut p);
        let mut long = 0;
        for e in list.iter_mut().filter_map(Value::as_object_mut) {
            for key in ["tcpDetail", "tlsDetail"] {
                long += usize::from(text(e, key, 300));
            }
        }
        said_long(long, "path details", 300, &mut p);
    }
    if let Some(list) = array(obj, "certs") {
        cut(list, MAX_CERTS, "its certificates", &mut p);
        for e in list.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(sans) = array(e, "sans") {
                cut(sans, MAX_SANS, "a certificate's SANs", &mut p);
            }
        }
    }
    if let Some(list) = array(obj, "errors") {
        cut(list, MAX_ERRORS, "its step errors", &mut p);
        let mut long = 0;
        for e in list.iter_mut().filter_map(Value::as_object_mut) {
            long += usize::from(text(e, "message", MAX_ERROR_TEXT));
            long += usize::from(text(e, "step", 64));
        }
        said_long(long, "step errors", MAX_ERROR_TEXT, &mut p);
    }
    if let Some(f) = obj.get_mut("firewall").and_then(Value::as_object_mut) {
        firewall(f, &mut p);
    }
    if let Some(a) = obj.get_mut("apiServer").and_then(Value::as_object_mut) {
        api_server(a, &mut p);
    }
    if let Some(h) = obj.get_mut("health").and_then(Value::as_object_mut) {
        let long = usize::from(text(h, "body", 1024)) + usize::from(text(h, "detail", 1024));
        said_long(long, "/health answers", 1024, &mut p);
    }
    p.finish()
}

/// The kube-apiserver reads: each text and detail cut at the probe's own cap.
fn api_server(a: &mut Map<String, Value>, p: &mut Problems) {
    let mut long = 0;
    for (key, max) in [
        ("containers", MAX_APISERVER_PS),
        ("readyz", MAX_APISERVER_READYZ),
        ("cert", MAX_APISERVER_CERT),
        ("logs", MAX_APISERVER_LOG),
    ] {
        if let Some(r) = a.get_mut(key).and_then(Value::as_object_mut) {
            long += usize::from(text(r, "text", max));
            long += usize::from(text(r, "detail", MAX_APISERVER_DETAIL));
            long += usize::from(text(r, "containerId", 128));
        }
    }
    said_long(long, "kube-apiserver reads", MAX_APISERVER_PS, p);
}

fn array<'a>(obj: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    obj.get_mut(key).and_then(Value::as_array_mut)
}

/// Cuts `list` to `max` entries; true when it had more.
fn cut(list: &mut Vec<Value>, max: usize, what: &str, p: &mut Problems) -> bool {
    if list.len() <= max {
        return false;
    }
    p.push(format!(
        "{what}: {} entries, more than the probe ever prints ({max}): the rest dropped",
        list.len()
    ));
    list.truncate(max);
    true
}

/// Cuts the string at `key` the way probe.sh's `cap(s, max)` does; true when it was longer.
fn text(obj: &mut Map<String, Value>, key: &str, max: usize) -> bool {
    match obj.get_mut(key) {
        Some(v) => cap_value(v, max),
        None => false,
    }
}

fn cap_value(v: &mut Value, max: usize) -> bool {
    let Value::String(s) = v else { return false };
    if s.chars().nth(longest(max)).is_none() {
        return false;
    }
    let end = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    s.truncate(end);
    s.push_str("...");
    true
}

fn said_long(count: usize, what: &str, max: usize, p: &mut Problems) {
    if count > 0 {
        p.push(format!(
            "{count} {what} longer than the probe prints ({max} bytes): cut there"
        ));
    }
}

/// The member list: at most [`MAX_MEMBERS`], IDs only as etcd writes them (an entry whose ID is
/// not is kept with no ID: shown, never taken for a member), each ID once, URLs and name capped.
fn members(m: &mut Map<String, Value>, p: &mut Problems) {
    said_long(
        usize::from(text(m, "detail", 500)),
        "member list details",
        500,
        p,
    );
    if let Some(v) = m.get_mut("clusterId") {
        if let Value::String(s) = v {
            if let Err(why) = MemberId::parse(s) {
                p.push(format!(
                    "its cluster ID {} is not one as etcd writes it ({why}): not used",
                    quote(s)
                ));
                *v = Value::Null;
            }
        }
    }
    let Some(list) = array(m, "members") else {
        return;
    };
    let cut_here = cut(list, MAX_MEMBERS, "its member list", p);
    let mut seen = HashSet::new();
    let mut long = 0;
    let mut duplicates = 0;
    list.retain_mut(|e| {
        let Some(e) = e.as_object_mut() else {
            return true;
        };
        for key in ["peerUrls", "clientUrls"] {
            if let Some(urls) = array(e, key) {
                if urls.len() > MAX_MEMBER_URLS {
                    urls.truncate(MAX_MEMBER_URLS);
                    long += 1;
                }
                for u in urls.iter_mut() {
                    long += usize::from(cap_value(u, MAX_MEMBER_TEXT));
                }
            }
        }
        long += usize::from(text(e, "name", MAX_MEMBER_TEXT));
        let Some(Value::String(raw)) = e.get("id") else {
            return true;
        };
        match MemberId::parse(raw) {
            Ok(id) if seen.insert(id) => true,
            Ok(_) => {
                duplicates += 1;
                false
            }
            Err(why) => {
                let url = e
                    .get("peerUrls")
                    .and_then(|u| u.get(0))
                    .and_then(Value::as_str)
                    .map(|u| format!(" (peer URL {})", quote(u)))
                    .unwrap_or_default();
                let reads = MemberId::as_etcdctl_reads(raw)
                    .map(|id| format!("; etcdctl would read it as {id}"))
                    .unwrap_or_default();
                p.push(format!(
                    "member ID {}{url} is not one as etcd writes it ({why}{reads}): that entry is never taken for a member",
                    quote(raw)
                ));
                e.insert("id".into(), Value::Null);
                true
            }
        }
    });
    if duplicates > 0 {
        p.push(format!(
            "its member list names {duplicates} member IDs more than once (etcd lists each member once): the repeats dropped"
        ));
    }
    if long > 0 {
        p.push(format!(
            "{long} member names, URLs or URL lists longer than the probe prints ({MAX_MEMBER_TEXT} bytes, {MAX_MEMBER_URLS} URLs): cut there"
        ));
    }
    if cut_here {
        m.insert("truncated".into(), Value::Bool(true));
    }
}

/// The alarm list: at most [`MAX_ALARMS`], member IDs only as etcd writes them.
fn alarms(a: &mut Map<String, Value>, p: &mut Problems) {
    said_long(
        usize::from(text(a, "detail", 500)),
        "alarm list details",
        500,
        p,
    );
    let Some(list) = array(a, "alarms") else {
        return;
    };
    let cut_here = cut(list, MAX_ALARMS, "its alarm list", p);
    let mut long = 0;
    for e in list.iter_mut().filter_map(Value::as_object_mut) {
        long += usize::from(text(e, "alarm", MAX_ALARM_TEXT));
        if let Some(Value::String(raw)) = e.get("memberId") {
            if let Err(why) = MemberId::parse(raw) {
                p.push(format!(
                    "alarm member ID {} is not one as etcd writes it ({why}): not used",
                    quote(raw)
                ));
                e.insert("memberId".into(), Value::Null);
            }
        }
    }
    said_long(long, "alarm names", MAX_ALARM_TEXT, p);
    if cut_here {
        a.insert("truncated".into(), Value::Bool(true));
    }
}

/// The firewall reads: at most [`MAX_FIREWALL_READS`] a moment, each text and detail capped.
fn firewall(f: &mut Map<String, Value>, p: &mut Problems) {
    let mut long = 0;
    for moment in ["before", "after"] {
        let Some(list) = array(f, moment) else {
            continue;
        };
        cut(list, MAX_FIREWALL_READS, "its firewall reads", p);
        for e in list.iter_mut().filter_map(Value::as_object_mut) {
            long += usize::from(text(e, "text", MAX_FIREWALL_TEXT));
            long += usize::from(text(e, "detail", 300));
            long += usize::from(text(e, "tool", 64));
        }
    }
    said_long(long, "firewall reads", MAX_FIREWALL_TEXT, p);
}
