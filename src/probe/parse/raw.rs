//! The node's own sections of a framed output (format 2), as the tools printed them, read into
//! the document's types: the host's addresses, crictl's container list and the log tails, the
//! kubelet's state, the certificates (openssl's text), the manifest and the kube-apiserver's
//! reads. probe.sh decides nothing about them; it runs the tools on the node, bounds what
//! they print and says how each run ended.
//!
//! Each section has the one shape of [`crate::probe::frame::Head`]: head lines `KEY VALUE` the
//! script writes (`rc N`: the tool's exit code; `size N`: the bytes the tool printed, of which at
//! most the section's cap is sent; `err LINE`: a line of the tool's stderr, its tail), then a
//! line `--` and the tool's output (its first or its last bytes, as the section says). Every
//! reader here is
//! total: a section missing, cut or hostile gives the part's default, never a failure; text
//! is the lossy UTF-8 the framing gives, NUL bytes dropped.

use k8s_openapi::jiff::{civil::DateTime, tz::TimeZone};
use serde_json::Value;

use crate::probe::firewall::FirewallRead;
use crate::probe::frame::{Frames, Head};
use crate::probe::output::{
    ApiServerRead, CertInfo, Container, EtcdContainer, Kubelet, LogSample, Manifest, QueryOutcome,
    RawRead, RuntimeQuery, StepError,
};
use crate::probe::{cap, last_msg, DETAIL, STDERR_BYTES};

/// The caps probe.sh puts on these sections (bytes of the tool's output sent), handed to it
/// by [`crate::probe::script::CAPS`].
pub(crate) const CRICTL_PS_BYTES: usize = 65536;
pub(crate) const MANIFEST_BYTES: usize = 65536;
pub(crate) const CERTS_BYTES: usize = 65536;
pub(crate) const IPS_BYTES: usize = 16384;
/// The kube-apiserver reads: [`super::bounds`]'s caps, the script's too.
use super::bounds::{MAX_APISERVER_CERT, MAX_APISERVER_PS, MAX_APISERVER_READYZ};

/// The most a log tail may keep: `--log-bytes` is at most 9 digits (probe.sh's `set_opt`), the
/// plugin's own bound on the whole output is [`crate::probe::parse::MAX_OUTPUT_BYTES`].
const MAX_LOG_BYTES: i64 = crate::probe::parse::MAX_OUTPUT_BYTES as i64;
/// Head lines read of a section: the script writes a few, and the stderr's tail
/// ([`STDERR_BYTES`]) at most a line per byte.
const MAX_HEAD_LINES: usize = 16 + STDERR_BYTES;
/// Addresses kept from the node's list: a node has a handful; more is not a node's.
pub(crate) const MAX_IPS: usize = 64;

/// A section whose body is the first `max` bytes of a tool's output: a body longer than the
/// script sends is cut there (a node's word, not a reason to read more).
fn section_max<'a>(frames: &'a Frames, name: &str, max: usize) -> Option<Head<'a>> {
    let mut raw = frames.head(name)?;
    let keep = crate::probe::head(&raw.body, max).len();
    raw.body.truncate(keep);
    raw.lines.truncate(MAX_HEAD_LINES);
    Some(raw)
}

/// `ips`: `ip -o addr show` (tool `ip`) or `hostname -I` (tool `hostname`) as printed. The
/// node's addresses: all but loopback and IPv6 link-local, each an address.
pub(super) fn ips(frames: &Frames) -> Vec<String> {
    let Some(raw) = section_max(frames, "ips", IPS_BYTES) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let mut keep = |a: &str| {
        let a = a.split('/').next().unwrap_or_default();
        let Ok(ip) = a.parse::<std::net::IpAddr>() else {
            return;
        };
        let dropped = ip.is_loopback()
            || matches!(ip, std::net::IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
        if !dropped && out.len() < MAX_IPS && !out.iter().any(|o| o == a) {
            out.push(a.to_string());
        }
    };
    if raw.get("tool") == Some("ip") {
        // `2: eth0    inet 10.0.0.5/24 brd ... scope global eth0\ ...`: the interface second.
        for line in raw.body.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.get(1) == Some(&"lo") {
                continue;
            }
            for (i, f) in w.iter().enumerate().skip(2) {
                if matches!(*f, "inet" | "inet6") {
                    if let Some(a) = w.get(i + 1) {
                        keep(a);
                    }
                }
            }
        }
    } else {
        raw.body.split_whitespace().for_each(&mut keep);
    }
    out
}

/// The etcd container: `etcd.ps` (crictl's `ps -a --name etcd -o json`, or `missing`),
/// `etcd.log` and `etcd.prev` (the log tails). Steps that failed are added to `errors`.
pub(super) fn etcd(frames: &Frames, errors: &mut Vec<StepError>) -> Option<EtcdContainer> {
    let ps = section_max(frames, "etcd.ps", CRICTL_PS_BYTES)?;
    if ps.has("missing") {
        return Some(EtcdContainer {
            query: RuntimeQuery::CrictlMissing,
            error: Some("crictl not found in PATH".into()),
            ..EtcdContainer::default()
        });
    }
    let rc = ps.num("rc").unwrap_or(-1);
    if rc != 0 || !ps.body.contains("\"containers\"") {
        let mut msg = last_msg(ps.all("err"));
        if msg.is_empty() {
            let start = crate::probe::head(&ps.body, 200);
            msg = format!("crictl ps exited {rc} with no container list: {start}");
        }
        return Some(EtcdContainer {
            query: RuntimeQuery::RuntimeError,
            error: Some(msg),
            ..EtcdContainer::default()
        });
    }
    let containers = crictl_containers(&ps.body, "etcd");
    let logs = log_tail(frames, "etcd.log", "etcd-logs", errors);
    let prev = frames.head("etcd.prev");
    let previous_logs_file = prev
        .as_ref()
        .and_then(|p| p.get("file"))
        .map(|f| cap(f, 1024));
    let previous_logs = log_tail(frames, "etcd.prev", "etcd-previous-logs", errors);
    Some(EtcdContainer {
        query: RuntimeQuery::Ok,
        error: None,
        containers,
        logs,
        previous_logs,
        previous_logs_file,
    })
}

/// The containers named `name` in crictl's JSON, newest first (by `createdAt`, epoch ns).
/// crictl's `--name` is a regular expression, so the name is matched here exactly.
fn crictl_containers(text: &str, name: &str) -> Vec<Container> {
    let Ok(doc) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(list) = doc.get("containers").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Container)> = list
        .iter()
        .filter(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .filter_map(|c| {
            let id = c.get("id")?.as_str()?;
            if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return None;
            }
            let digits = |v: &Value| {
                match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                }
                .filter(|s| !s.is_empty() && s.len() <= 24 && s.bytes().all(|b| b.is_ascii_digit()))
            };
            let state = c
                .get("state")
                .and_then(Value::as_str)
                .filter(|s| {
                    !s.is_empty()
                        && s.len() <= 64
                        && s.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
                })
                .unwrap_or("UNKNOWN");
            let attempt = c
                .pointer("/metadata/attempt")
                .and_then(digits)
                .and_then(|a| a.parse().ok());
            let created_at = c.get("createdAt").and_then(digits);
            let key = format!("{:0>24}\t{id}", created_at.as_deref().unwrap_or(""));
            Some((
                key,
                Container {
                    id: id.to_string(),
                    state: state.to_string(),
                    attempt,
                    created_at,
                },
            ))
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0));
    out.truncate(crate::probe::apiserver::MAX_CONTAINERS);
    out.into_iter().map(|(_, c)| c).collect()
}

/// A log tail's section: `id ID`, `rc N` (crictl's, whose stdout and stderr are the body), `max
/// N` (the bytes it could keep), `size N`, `file PATH` (the kubelet's CRI-format file read instead
/// of crictl), `lines N` (the most lines kept); the body the last `max` bytes. As crictl logs
/// prints them: crictl's own logrus lines (`WARN[0000] ...`) dropped, the newest whole lines that
/// fit (the newest alone cut to its tail if it is longer).
fn log_tail(
    frames: &Frames,
    name: &str,
    step: &str,
    errors: &mut Vec<StepError>,
) -> Option<LogSample> {
    let mut raw = frames.head(name)?;
    raw.lines.truncate(MAX_HEAD_LINES);
    let id = raw.get("id").unwrap_or_default();
    let id = if id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        crate::probe::head(id, 128)
    } else {
        ""
    };
    if let Some(why) = raw.get("error") {
        errors.push(StepError {
            step: step.into(),
            message: cap(why, super::bounds::MAX_ERROR_TEXT),
        });
        return None;
    }
    let rc = raw.num("rc").unwrap_or(0);
    if rc != 0 {
        let why = last_msg(raw.body.lines());
        let mut message = format!("crictl logs {id} exited {rc}: {why}");
        // The kubelet's own file of that attempt was looked for too (`nofile ATTEMPT DIR`).
        if let Some((attempt, dir)) = raw.get("nofile").and_then(|v| v.split_once(' ')) {
            message.push_str(&format!(
                "; no kubelet log file of attempt {attempt} under {dir}"
            ));
        }
        errors.push(StepError {
            step: step.into(),
            message: cap(&message, super::bounds::MAX_ERROR_TEXT),
        });
        return None;
    }
    let max = raw.num("max").unwrap_or(0).clamp(0, MAX_LOG_BYTES) as usize;
    let mut cut = raw.cut(max);
    // A body longer than the script sends: its last `max` bytes, as the script would.
    if raw.body.len() > max {
        let mut at = raw.body.len() - max;
        while !raw.body.is_char_boundary(at) {
            at += 1;
        }
        raw.body.drain(..at);
        cut = true;
    }
    let mut lines: Vec<&str> = raw.body.lines().collect();
    let mut truncated = false;
    // The first line cut by the byte cap is no whole line, unless it is the only one.
    if cut && lines.len() > 1 {
        lines.remove(0);
        truncated = true;
    } else if cut {
        truncated = true;
    }
    let joined;
    if raw.has("file") {
        joined = cri_text(&lines);
        lines = joined.iter().map(String::as_str).collect();
    }
    lines.retain(|l| !is_logrus(l));
    if let Some(n) = raw.num("lines").filter(|n| *n >= 0) {
        let n = n as usize;
        if lines.len() > n {
            lines.drain(..lines.len() - n);
            truncated = true;
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Some(LogSample {
        container_id: id.to_string(),
        text,
        lines: u32::try_from(lines.len()).unwrap_or(u32::MAX),
        truncated,
    })
}

/// crictl's own lines on its stderr (logrus' `WARN[0000] ...`), not the container's.
fn is_logrus(line: &str) -> bool {
    let Some((level, rest)) = line.split_once('[') else {
        return false;
    };
    matches!(level, "DEBU" | "INFO" | "WARN" | "ERRO" | "FATA")
        && rest
            .split_once("] ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A kubelet container log file's lines (CRI format `<time> <stdout|stderr> <P|F> <text>`,
/// kubelet's pkg/kubelet/kuberuntime/logs/logs.go) as `crictl logs` prints them: the text, the
/// partial (`P`) pieces of a line joined. A line in another format is kept as it is.
fn cri_text(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut part = String::new();
    for line in lines {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut w = line.splitn(4, ' ');
        let (_, stream, tag) = (w.next(), w.next(), w.next());
        if matches!(stream, Some("stdout" | "stderr")) && matches!(tag, Some("P" | "F")) {
            part.push_str(w.next().unwrap_or_default());
            if tag == Some("F") {
                out.push(std::mem::take(&mut part));
            }
            continue;
        }
        if !part.is_empty() {
            out.push(std::mem::take(&mut part));
        }
        out.push(line.to_string());
    }
    if !part.is_empty() {
        out.push(part);
    }
    out
}

/// `kubelet`: `missing` (no systemctl), or `active STATE` (`systemctl is-active kubelet`),
/// `show ActiveEnterTimestamp=...` and its stderr.
pub(super) fn kubelet(frames: &Frames) -> Option<Kubelet> {
    let raw = section_max(frames, "kubelet", 0)?;
    if raw.has("missing") {
        return Some(Kubelet {
            error: Some("systemctl not found".into()),
            ..Kubelet::default()
        });
    }
    let some = |s: &str| (!s.trim().is_empty()).then(|| cap(s.trim(), 256));
    let active = raw.get("active").and_then(some);
    let since = raw
        .get("show")
        .and_then(|s| s.strip_prefix("ActiveEnterTimestamp="))
        .and_then(some);
    let error = match active {
        Some(_) => None,
        None => Some(match last_msg(raw.all("err")) {
            e if e.is_empty() => "systemctl is-active kubelet printed nothing".to_string(),
            e => e,
        }),
    };
    Some(Kubelet {
        active,
        since,
        error,
    })
}

/// `manifest`: the static pod's file (its first bytes). kubeadm writes one `- --flag=value`
/// line per flag (quoted or not); the last one of a flag counts, as for etcd's flag parser.
pub(super) fn manifest(frames: &Frames) -> Option<Manifest> {
    let raw = section_max(frames, "manifest", MANIFEST_BYTES)?;
    let mut flags: Vec<(&str, &str)> = Vec::new();
    for line in raw.body.lines() {
        let l = line.strip_suffix('\r').unwrap_or(line);
        let Some(l) = l.trim_start_matches([' ', '\t']).strip_prefix('-') else {
            continue;
        };
        let l = l.trim_start_matches([' ', '\t']);
        let l = l.strip_prefix(['"', '\'']).unwrap_or(l);
        let Some(l) = l.strip_prefix("--") else {
            continue;
        };
        let l = l.trim_end_matches([' ', '\t']);
        let l = l.strip_suffix(['"', '\'']).unwrap_or(l);
        if let Some((k, v)) = l.split_once('=') {
            flags.retain(|(f, _)| *f != k);
            flags.push((k, v));
        }
    }
    let get = |k: &str| flags.iter().find(|(f, _)| *f == k).map(|(_, v)| *v);
    let text = |k: &str| get(k).filter(|v| !v.is_empty()).map(|v| cap(v, 4096));
    let list = |k: &str| -> Vec<String> {
        get(k)
            .unwrap_or_default()
            .split(',')
            .filter(|v| !v.is_empty())
            .take(64)
            .map(|v| cap(v, 512))
            .collect()
    };
    Some(Manifest {
        name: text("name"),
        advertise_client_urls: list("advertise-client-urls"),
        initial_advertise_peer_urls: list("initial-advertise-peer-urls"),
        listen_peer_urls: list("listen-peer-urls"),
        listen_client_urls: list("listen-client-urls"),
        initial_cluster: text("initial-cluster"),
    })
}

/// `certs`: per certificate file one head line, in the probe's order: `file NAME K PATH` (its
/// certificate is the K-th of the body), `error NAME MESSAGE`, or `failed NAME PATH` and
/// openssl's stderr; the body `openssl ... -text -noout` of them all (each starting
/// `Certificate:`). `self_ip` is the node's etcd address, `now_s` its clock.
pub(super) fn certs(frames: &Frames, self_ip: &str, now_s: Option<i64>) -> Option<Vec<CertInfo>> {
    let raw = section_max(frames, "certs", CERTS_BYTES)?;
    let blocks = cert_blocks(&raw.body);
    let mut out = Vec::new();
    let error = |file: &str, message: String| CertInfo {
        file: cap(file, 256),
        not_before: None,
        not_after: None,
        expires_in_s: None,
        not_yet_valid: None,
        sans: Vec::new(),
        has_node_ip: None,
        error: Some(cap(&message, 500)),
    };
    let mut i = 0;
    while i < raw.lines.len() {
        let line = raw.lines[i];
        i += 1;
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (file, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "file" => {
                let (k, path) = rest.split_once(' ').unwrap_or((rest, ""));
                match k
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| blocks.get(k.wrapping_sub(1)))
                {
                    Some(block) => out.push(cert(file, block, self_ip, now_s)),
                    None => out.push(error(
                        file,
                        format!("openssl x509 printed no certificate for {path}"),
                    )),
                }
            }
            "error" => out.push(error(file, rest.to_string())),
            "failed" => {
                let mut stderr = Vec::new();
                while let Some(e) = raw.lines.get(i).and_then(|l| l.strip_prefix("err ")) {
                    stderr.push(e);
                    i += 1;
                }
                let why = last_msg(stderr.into_iter());
                out.push(error(file, format!("openssl x509 failed on {rest}: {why}")));
            }
            _ => {}
        }
    }
    Some(out)
}

/// The certificates of openssl's text output, each from its `Certificate:` line on.
fn cert_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("Certificate:") {
            blocks.push(Vec::new());
        } else if let Some(b) = blocks.last_mut() {
            b.push(line);
        }
    }
    blocks
}

/// One certificate's facts from its `-text` block: validity (`Not Before: Dec  2 14:20:53 2026
/// GMT`) and the SAN extension's line (`DNS:cp1, IP Address:10.0.0.5`).
fn cert(file: &str, block: &[&str], self_ip: &str, now_s: Option<i64>) -> CertInfo {
    let date = |key: &str| {
        block.iter().find_map(|l| {
            let rest = l.trim_start().strip_prefix(key)?;
            let rest = rest.trim_start().strip_prefix(':')?;
            Some(openssl_time(rest.trim()))
        })
    };
    let nb = date("Not Before").flatten();
    let na = date("Not After").flatten();
    let san_line = block
        .iter()
        .position(|l| l.contains("X509v3 Subject Alternative Name:"))
        .and_then(|i| block.get(i + 1));
    let mut sans = Vec::new();
    for v in san_line.map_or("", |l| l).split(',') {
        let v = v.trim();
        let v = ["DNS:", "IP Address:", "IP:"]
            .iter()
            .find_map(|p| v.strip_prefix(p))
            .unwrap_or(v);
        if !v.is_empty() {
            sans.push(cap(v, 256));
        }
    }
    let want = file == "server.crt" || file == "peer.crt";
    let has_node_ip = (want && !self_ip.is_empty()).then(|| sans.iter().any(|s| s == self_ip));
    let rfc = crate::probe::apiserver::rfc3339;
    CertInfo {
        file: cap(file, 256),
        not_before: nb.map(rfc),
        not_after: na.map(rfc),
        expires_in_s: na.zip(now_s).map(|(a, now)| a - now),
        not_yet_valid: nb.zip(now_s).map(|(b, now)| b > now),
        sans,
        has_node_ip,
        error: (nb.is_none() || na.is_none())
            .then(|| "no validity dates in openssl output".to_string()),
    }
}

/// openssl's `ASN1_TIME_print` form, `Dec  2 14:20:53 2026 GMT`, as epoch seconds.
fn openssl_time(v: &str) -> Option<i64> {
    let w: Vec<&str> = v.split_whitespace().collect();
    let [mon, day, hms, year, ..] = w.as_slice() else {
        return None;
    };
    let m = "JanFebMarAprMayJunJulAugSepOctNovDec"
        .find(mon)
        .filter(|i| i % 3 == 0 && mon.len() == 3)?
        / 3
        + 1;
    let t: Vec<&str> = hms.split(':').collect();
    let [h, mi, s] = t.as_slice() else {
        return None;
    };
    let s = s.split('.').next()?;
    let dt = DateTime::new(
        year.parse().ok()?,
        i8::try_from(m).ok()?,
        day.parse().ok()?,
        h.parse().ok()?,
        mi.parse().ok()?,
        s.parse().ok()?,
        0,
    )
    .ok()?;
    Some(dt.to_zoned(TimeZone::UTC).ok()?.timestamp().as_second())
}

/// The kube-apiserver's reads: `apiserver.ps`, `apiserver.log`, `apiserver.readyz`,
/// `apiserver.cert`. `None` when the probe printed none of them (an older probe).
pub(super) fn api_server(frames: &Frames, errors: &mut Vec<StepError>) -> Option<ApiServerRead> {
    let ps = section_max(frames, "apiserver.ps", MAX_APISERVER_PS);
    let rz = section_max(frames, "apiserver.readyz", MAX_APISERVER_READYZ);
    let crt = section_max(frames, "apiserver.cert", MAX_APISERVER_CERT);
    if ps.is_none() && rz.is_none() && crt.is_none() {
        return None;
    }
    let containers = match ps {
        None => RawRead::default(),
        Some(r) if r.has("missing") => skipped("crictl not found in PATH"),
        Some(r) if r.num("rc") == Some(0) => read(
            &r,
            MAX_APISERVER_PS,
            Some(QueryOutcome::Ok),
            "crictl ps -a --name kube-apiserver -o json".into(),
        ),
        Some(r) => failed(format!(
            "crictl ps -a --name kube-apiserver: {}",
            last_msg(r.all("err"))
        )),
    };
    let readyz = match rz {
        None => failed("apiserver job gave no result".into()),
        Some(r) if r.has("nojob") => failed("apiserver job gave no result".into()),
        Some(r) if r.has("missing") => skipped("curl not found"),
        Some(r) => {
            let url = r.get("url").unwrap_or_default();
            let rc = r.num("rc").unwrap_or(-1);
            let why = match (rc, last_msg(r.all("err"))) {
                (0, _) => url.to_string(),
                (_, m) if m.is_empty() => format!("{url}: curl exited {rc}"),
                (_, m) => format!("{url}: {m}"),
            };
            read(&r, MAX_APISERVER_READYZ, None, why)
        }
    };
    let cert = match crt {
        None => RawRead::default(),
        Some(r) => match r.get("unreadable") {
            Some(path) => failed(format!("not readable: {path}")),
            None => {
                let path = r.get("path").unwrap_or_default().to_string();
                read(&r, MAX_APISERVER_CERT, Some(QueryOutcome::Ok), path)
            }
        },
    };
    let logs = log_tail(frames, "apiserver.log", "apiserver-logs", errors);
    Some(ApiServerRead {
        containers,
        logs,
        readyz,
        cert,
    })
}

fn skipped(detail: &str) -> RawRead {
    RawRead {
        outcome: QueryOutcome::Skipped,
        detail: Some(detail.into()),
        ..RawRead::default()
    }
}

fn failed(detail: String) -> RawRead {
    RawRead {
        outcome: QueryOutcome::Error,
        detail: Some(cap(&detail, DETAIL)),
        ..RawRead::default()
    }
}

/// One fetch of raw text: the whole lines of the body within `max` bytes; for a request (head
/// `w HTTP_CODE TIME_TOTAL`) its status and time, `Ok` when it got a status.
fn read(r: &Head, max: usize, outcome: Option<QueryOutcome>, detail: String) -> RawRead {
    let mut w = r.get("w").unwrap_or_default().split_whitespace();
    let code = w
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| *c > 0);
    let ms = w
        .next()
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(|t| (t * 1000.0).round() as u64);
    let outcome = outcome.unwrap_or(if code.is_some() {
        QueryOutcome::Ok
    } else {
        QueryOutcome::Error
    });
    let mut text = String::new();
    let mut cut = r.cut(max);
    for line in r.body.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if text.len() + line.len() + 1 > max {
            cut = true;
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    if outcome != QueryOutcome::Ok && code.is_none() {
        text.clear();
    }
    RawRead {
        outcome,
        http_status: code,
        ms,
        text: (!text.is_empty()).then_some(text),
        truncated: cut,
        detail: Some(cap(&detail, DETAIL)).filter(|d| !d.is_empty()),
    }
}

/// `firewall.before` / `firewall.after`: each tool's read in turn, judged by
/// [`crate::probe::firewall::section`]; none when the section is absent or empty.
pub(super) fn firewall(frames: &Frames, name: &str) -> Vec<FirewallRead> {
    (frames.head(name))
        .map(|h| crate::probe::firewall::section(&h))
        .unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests;
