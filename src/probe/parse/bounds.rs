//! The probe's own caps, applied to whatever a node printed as it is read into
//! [`ProbeOutput`](crate::probe::output::ProbeOutput): a compromised node writes its document,
//! and the verdict's work and output grow with its lists (each member an evidence line, each
//! stray a removal step, each path and error a line). A list longer than `probe.sh` ever
//! prints is cut at that length, a text longer than it prints is cut the way it cuts (`cap`:
//! the first N bytes and `...`), and each is said as a problem of that node's document. Member
//! and cluster IDs are kept only in the form etcd writes them ([`MemberId::parse`]).
//!
//! Runs on the typed document, whichever format it came in ([`bound`]). A document of format 1
//! (JSON) has its lists cut and its member IDs checked on the JSON value first ([`format1`]), so
//! that its typed reading and the verdict work on at most the caps whatever it held; the cost
//! before that is one linear JSON parse of at most `MAX_OUTPUT_BYTES`. A framed output's
//! readers bound what they read as they read it (the member IDs too: [`member_id`]).

use std::collections::HashSet;

use serde_json::Value;

use crate::probe::etcdask::{self, alarm_member_id, member_id, quote, Problems};
use crate::probe::firewall::Firewall;
use crate::probe::output::{Alarms, ApiServerRead, MemberId, Members, ProbeOutput};

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

/// What `cap(s, n)` in probe.sh leaves at most: n bytes (under `LC_ALL=C`), each at most one
/// character once escaped, and `...`.
fn longest(n: usize) -> usize {
    n + 3
}

/// A list the probe bounds, and what a problem line calls it.
struct List {
    max: usize,
    what: &'static str,
}

const MEMBER_LIST: List = List {
    max: MAX_MEMBERS,
    what: "its member list",
};
const ALARM_LIST: List = List {
    max: MAX_ALARMS,
    what: "its alarm list",
};
const PATHS: List = List {
    max: MAX_PATHS,
    what: "its path checks",
};
const CERTS: List = List {
    max: MAX_CERTS,
    what: "its certificates",
};
const SANS: List = List {
    max: MAX_SANS,
    what: "a certificate's SANs",
};
const ERRORS: List = List {
    max: MAX_ERRORS,
    what: "its step errors",
};
const FIREWALL_READS: List = List {
    max: MAX_FIREWALL_READS,
    what: "its firewall reads",
};

/// Cuts `list` to its cap; true when it had more.
fn cut<T>(list: &mut Vec<T>, cap: &List, p: &mut Problems) -> bool {
    if list.len() <= cap.max {
        return false;
    }
    p.push(format!(
        "{}: {} entries, more than the probe ever prints ({}): the rest dropped",
        cap.what,
        list.len(),
        cap.max
    ));
    list.truncate(cap.max);
    true
}

/// A document of format 1 (JSON, as probes before the framed output printed it), before it is
/// read into its type: each list cut at the probe's cap, so that what a node wrote past it is
/// never read (nor costs a typed reading: a 16 MiB list is a linear cut here), and the member IDs
/// not written as etcd writes them taken out, each said ([`MemberId`] holds only that form).
/// The rest of the caps are [`bound`]'s, on the typed document, as for format 2.
pub(super) fn format1(doc: &mut Value, p: &mut Problems) {
    for (at, list) in [
        ("/members/members", &MEMBER_LIST),
        ("/alarms/alarms", &ALARM_LIST),
        ("/paths", &PATHS),
        ("/certs", &CERTS),
        ("/errors", &ERRORS),
        ("/firewall/before", &FIREWALL_READS),
        ("/firewall/after", &FIREWALL_READS),
    ] {
        let Some(entries) = doc.pointer_mut(at).and_then(Value::as_array_mut) else {
            continue;
        };
        if cut(entries, list, p) {
            // The member and alarm lists say their cut (`truncated`).
            if let Some((parent, "members" | "alarms")) = at.rsplit_once('/') {
                if let Some(o) = doc.pointer_mut(parent).and_then(Value::as_object_mut) {
                    o.insert("truncated".into(), Value::Bool(true));
                }
            }
        }
    }
    for cert in entries(doc, "/certs") {
        if let Some(sans) = cert.get_mut("sans").and_then(Value::as_array_mut) {
            cut(sans, &SANS, p);
        }
    }
    for e in entries(doc, "/members/members") {
        let url = e
            .get("peerUrls")
            .and_then(|u| u.get(0))
            .and_then(Value::as_str);
        if let Some(Value::String(raw)) = e.get("id") {
            if member_id(raw, url, p).is_none() {
                e.insert("id".into(), Value::Null);
            }
        }
    }
    for e in entries(doc, "/alarms/alarms") {
        if let Some(Value::String(raw)) = e.get("memberId") {
            if alarm_member_id(raw, p).is_none() {
                e.insert("memberId".into(), Value::Null);
            }
        }
    }
}

/// The objects of the list at `at` in `doc`.
fn entries<'a>(doc: &'a mut Value, at: &str) -> Vec<&'a mut serde_json::Map<String, Value>> {
    match doc.pointer_mut(at).and_then(Value::as_array_mut) {
        Some(l) => l.iter_mut().filter_map(Value::as_object_mut).collect(),
        None => Vec::new(),
    }
}

/// Bounds the document to the probe's caps in place, whichever format it came in; what it had
/// to change is said in `p`, one line each.
pub(super) fn bound(out: &mut ProbeOutput, p: &mut Problems) {
    members(&mut out.members, p);
    alarms(&mut out.alarms, p);
    cut(&mut out.paths, &PATHS, p);
    let long = (out.paths.iter_mut())
        .map(|e| text(&mut e.tcp_detail, 300) + text(&mut e.tls_detail, 300))
        .sum();
    said_long(long, "path details", 300, p);
    cut(&mut out.certs, &CERTS, p);
    for c in &mut out.certs {
        cut(&mut c.sans, &SANS, p);
    }
    cut(&mut out.errors, &ERRORS, p);
    let long = (out.errors.iter_mut())
        .map(|e| cap_text(&mut e.message, MAX_ERROR_TEXT) + cap_text(&mut e.step, 64))
        .sum();
    said_long(long, "step errors", MAX_ERROR_TEXT, p);
    firewall(&mut out.firewall, p);
    if let Some(a) = &mut out.api_server {
        api_server(a, p);
    }
    let h = &mut out.health;
    let long = text(&mut h.body, 1024) + text(&mut h.detail, 1024);
    said_long(long, "/health answers", 1024, p);
}

/// The kube-apiserver reads: each text and detail cut at the probe's own cap.
fn api_server(a: &mut ApiServerRead, p: &mut Problems) {
    let mut long = 0;
    for (r, max) in [
        (&mut a.containers, MAX_APISERVER_PS),
        (&mut a.readyz, MAX_APISERVER_READYZ),
        (&mut a.cert, MAX_APISERVER_CERT),
    ] {
        long += text(&mut r.text, max) + text(&mut r.detail, MAX_APISERVER_DETAIL);
    }
    if let Some(l) = &mut a.logs {
        long += cap_text(&mut l.text, MAX_APISERVER_LOG) + cap_text(&mut l.container_id, 128);
    }
    said_long(long, "kube-apiserver reads", MAX_APISERVER_PS, p);
}

/// Cuts `s` the way probe.sh's `cap(s, max)` does; 1 when it was longer (a count of cuts).
fn cap_text(s: &mut String, max: usize) -> usize {
    if s.chars().nth(longest(max)).is_none() {
        return 0;
    }
    let end = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    s.truncate(end);
    s.push_str("...");
    1
}

fn text(s: &mut Option<String>, max: usize) -> usize {
    s.as_mut().map_or(0, |s| cap_text(s, max))
}

fn said_long(count: usize, what: &str, max: usize, p: &mut Problems) {
    if count > 0 {
        p.push(format!(
            "{count} {what} longer than the probe prints ({max} bytes): cut there"
        ));
    }
}

/// The member list: at most [`MAX_MEMBERS`], each ID once, URLs and name capped, the cluster ID
/// only as etcd writes it (the IDs' form is checked where they are read: [`member_id`]).
fn members(m: &mut Members, p: &mut Problems) {
    said_long(text(&mut m.detail, 500), "member list details", 500, p);
    if let Some(s) = &m.cluster_id {
        if let Err(why) = MemberId::parse(s) {
            p.push(format!(
                "its cluster ID {} is not one as etcd writes it ({why}): not used",
                quote(s)
            ));
            m.cluster_id = None;
        }
    }
    if cut(&mut m.members, &MEMBER_LIST, p) {
        m.truncated = true;
    }
    let mut seen = HashSet::new();
    let mut long = 0;
    let mut duplicates = 0;
    m.members.retain_mut(|e| {
        for urls in [&mut e.peer_urls, &mut e.client_urls] {
            if urls.len() > MAX_MEMBER_URLS {
                urls.truncate(MAX_MEMBER_URLS);
                long += 1;
            }
            long += urls
                .iter_mut()
                .map(|u| cap_text(u, MAX_MEMBER_TEXT))
                .sum::<usize>();
        }
        long += text(&mut e.name, MAX_MEMBER_TEXT);
        match e.id {
            Some(id) if !seen.insert(id) => {
                duplicates += 1;
                false
            }
            _ => true,
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
}

/// The alarm list: at most [`MAX_ALARMS`], each name capped.
fn alarms(a: &mut Alarms, p: &mut Problems) {
    said_long(text(&mut a.detail, 500), "alarm list details", 500, p);
    if cut(&mut a.alarms, &ALARM_LIST, p) {
        a.truncated = true;
    }
    let long = (a.alarms.iter_mut())
        .map(|e| cap_text(&mut e.alarm, MAX_ALARM_TEXT))
        .sum();
    said_long(long, "alarm names", MAX_ALARM_TEXT, p);
}

/// The firewall reads: at most [`MAX_FIREWALL_READS`] a moment, each text and detail capped.
fn firewall(f: &mut Firewall, p: &mut Problems) {
    let mut long = 0;
    for reads in [&mut f.before, &mut f.after] {
        cut(reads, &FIREWALL_READS, p);
        for e in reads.iter_mut() {
            long += text(&mut e.text, MAX_FIREWALL_TEXT)
                + text(&mut e.detail, 300)
                + cap_text(&mut e.tool, 64);
        }
    }
    said_long(long, "firewall reads", MAX_FIREWALL_TEXT, p);
}
