//! The node's kube-apiserver as the probe fetched it ([`ApiServerRead`]: raw text, bounded), read
//! and judged here. The probe decides nothing; every reader below is total: whatever a node
//! printed, it returns a value (an unreadable part is said, never a panic or an error that stops
//! the node's report).
//!
//! - the containers: `crictl ps -a --name kube-apiserver -o json` (cri-tools prints the CRI's
//!   `ListContainersResponse` as protojson: `containers[].{id, metadata{name, attempt}, state,
//!   createdAt}`, createdAt in nanoseconds as a string; cmd/crictl/container.go `outputProtobufObjAsJSON`);
//! - the log tail, klog's format (`E1207 03:50:18.123456       1 file.go:123] msg`:
//!   k8s.io/klog/v2 `formatHeader`), classified by [`classify_log`];
//! - `/readyz?verbose`: `[+]name ok` / `[-]name failed: reason withheld` a check, then
//!   `readyz check passed` (200) or `readyz check failed` (500) (`handleRootHealth` in
//!   staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go);
//! - the serving certificate, `/etc/kubernetes/pki/apiserver.crt` as PEM: its validity read from
//!   the DER (RFC 5280 4.1: TBSCertificate's fifth field).

use k8s_openapi::jiff::{civil::DateTime, tz::TimeZone, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::probe::output::{ApiServerRead, QueryOutcome, RawRead};

/// Containers kept from one list: kubelet keeps one dead container per container besides the
/// running one (pkg/kubelet/kuberuntime/kuberuntime_gc.go); more is not what crictl lists.
pub const MAX_CONTAINERS: usize = 16;
/// Characters of a log line quoted in a verdict.
pub const MAX_QUOTE: usize = 300;
/// Checks read from one `/readyz?verbose` body (kube-apiserver 1.3x lists about 50).
pub const MAX_CHECKS: usize = 128;

/// One kube-apiserver container as crictl listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiContainer {
    pub id: String,
    /// As crictl says it (`CONTAINER_RUNNING`, `CONTAINER_EXITED`, ...).
    pub state: String,
    /// kubelet's restart count of the static pod's container.
    pub attempt: Option<u32>,
    /// When the container was created, epoch seconds.
    pub created_s: Option<i64>,
}

impl ApiContainer {
    pub fn is_running(&self) -> bool {
        let s = self.state.to_ascii_lowercase();
        s == "running" || s == "container_running"
    }
}

/// The kube-apiserver containers in crictl's JSON, newest first; `None` when the text is not
/// that JSON (a list cut by the probe's cap included).
pub fn containers(text: &str) -> Option<Vec<ApiContainer>> {
    let doc = serde_json::from_str::<Value>(text).ok()?;
    let list = doc.get("containers")?.as_array()?;
    let mut out: Vec<ApiContainer> = list
        .iter()
        .filter(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some("kube-apiserver"))
        .filter_map(|c| {
            let id = c.get("id")?.as_str()?;
            if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return None;
            }
            let state = c
                .get("state")
                .and_then(Value::as_str)
                .filter(|s| {
                    s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
                })
                .unwrap_or("UNKNOWN");
            let attempt = c
                .pointer("/metadata/attempt")
                .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                .and_then(|v| u32::try_from(v).ok());
            let created_ns = c
                .get("createdAt")
                .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()));
            Some(ApiContainer {
                id: id.to_string(),
                state: state.to_string(),
                attempt,
                created_s: created_ns.filter(|n| *n > 0).map(|n| n / 1_000_000_000),
            })
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.created_s));
    out.truncate(MAX_CONTAINERS);
    Some(out)
}

/// What `/readyz?verbose` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readyz {
    /// Not asked (no curl; an older probe).
    NotAsked,
    /// No HTTP answer: curl's words (refused, timed out, TLS).
    NoAnswer(String),
    /// 200: every check passed.
    Ready,
    /// 500 (or any answer whose body lists a failed check): the failed checks by name.
    NotReady { status: u16, failed: Vec<String> },
    /// Another status (401 or 403 to an anonymous request, 404): it serves HTTP; its readiness
    /// is not told.
    Answered(u16),
}

/// The failed checks a `/readyz?verbose` body names (`[-]etcd failed: reason withheld`), in its
/// order, at most [`MAX_CHECKS`], each name as the server wrote it (printable ASCII, capped).
pub fn failed_checks(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.trim_end().strip_prefix("[-]"))
        .filter_map(|rest| {
            let name = rest.split(" failed").next()?.trim();
            let ok =
                !name.is_empty() && name.len() <= 128 && name.bytes().all(|b| b.is_ascii_graphic());
            ok.then(|| name.to_string())
        })
        .take(MAX_CHECKS)
        .collect()
}

/// The read's `/readyz` answer.
pub fn readyz(r: &RawRead) -> Readyz {
    match (r.outcome, r.http_status) {
        (QueryOutcome::Skipped, _) => Readyz::NotAsked,
        (_, Some(status)) if status > 0 => {
            let failed = failed_checks(r.text.as_deref().unwrap_or_default());
            match status {
                200 if failed.is_empty() => Readyz::Ready,
                500 | 503 => Readyz::NotReady { status, failed },
                _ if !failed.is_empty() => Readyz::NotReady { status, failed },
                _ => Readyz::Answered(status),
            }
        }
        _ => Readyz::NoAnswer(
            crate::probe::head(r.detail.as_deref().unwrap_or("no answer"), MAX_QUOTE).to_string(),
        ),
    }
}

/// A certificate's validity, epoch seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: i64,
    pub not_after: i64,
}

/// The validity of the first certificate in `pem`, or why it could not be read.
pub fn cert_validity(pem: &str) -> Result<Validity, String> {
    use base64::Engine;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let start = pem.find(BEGIN).ok_or("no PEM certificate in the file")? + BEGIN.len();
    let len = pem[start..]
        .find(END)
        .ok_or("the PEM certificate has no END line (cut short?)")?;
    let b64: String = pem[start..start + len]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64.as_bytes())
        .map_err(|_| "the PEM certificate is not base64".to_string())?;
    der_validity(&der).ok_or_else(|| "the certificate's DER has no readable validity".to_string())
}

/// One DER element of `tag` at the start of `input`: its content and what follows it.
fn tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = input.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | usize::from(b);
        }
        rest = &rest[n..];
        len
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// notBefore and notAfter of a DER certificate (RFC 5280 4.1).
fn der_validity(der: &[u8]) -> Option<Validity> {
    let (cert, _) = tlv(der, 0x30)?;
    let (tbs, _) = tlv(cert, 0x30)?;
    let mut rest = tbs;
    if rest.first() == Some(&0xa0) {
        rest = tlv(rest, 0xa0)?.1; // version
    }
    rest = tlv(rest, 0x02)?.1; // serialNumber
    rest = tlv(rest, 0x30)?.1; // signature
    rest = tlv(rest, 0x30)?.1; // issuer
    let (validity, _) = tlv(rest, 0x30)?;
    let (not_before, rest) = der_time(validity)?;
    let (not_after, _) = der_time(rest)?;
    Some(Validity {
        not_before,
        not_after,
    })
}

/// A UTCTime (`YYMMDDHHMMSSZ`, 1950 to 2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn der_time(input: &[u8]) -> Option<(i64, &[u8])> {
    let (text, rest, year) = if let Some((t, r)) = tlv(input, 0x17) {
        let yy = digits(t.get(..2)?)?;
        (t.get(2..)?, r, if yy < 50 { 2000 + yy } else { 1900 + yy })
    } else {
        let (t, r) = tlv(input, 0x18)?;
        (t.get(4..)?, r, digits(t.get(..4)?)?)
    };
    if text.len() != 11 || text[10] != b'Z' {
        return None;
    }
    let f = |i: usize| digits(&text[i..i + 2]);
    let at = DateTime::new(
        i16::try_from(year).ok()?,
        i8::try_from(f(0)?).ok()?,
        i8::try_from(f(2)?).ok()?,
        i8::try_from(f(4)?).ok()?,
        i8::try_from(f(6)?).ok()?,
        i8::try_from(f(8)?).ok()?,
        0,
    )
    .ok()?;
    let secs = at.to_zoned(TimeZone::UTC).ok()?.timestamp().as_second();
    Some((secs, rest))
}

fn digits(b: &[u8]) -> Option<i32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// RFC 3339 UTC of epoch seconds (as the reports write times).
pub fn rfc3339(secs: i64) -> String {
    Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// What a kube-apiserver log line says.
// In the order a verdict names them. A leaf of the report (`report::v1alpha2`): the `///`
// comments are the JSON Schema's, the sources beside them in `//`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum ApiLogKind {
    /// A fatal line, or `"command failed"`: the process exits.
    // klog's `F`; component-base's `"command failed"`.
    Fatal,
    /// `bind: address already in use` (its port taken).
    // Or its address gone: `listen tcp 0.0.0.0:6443: bind: address already in use` (Go's
    // net.OpError of syscall.EADDRINUSE, wrapped "failed to listen on ..." and "failed to
    // create listener: ..." in staging/src/k8s.io/apiserver/pkg/server/options/serving.go).
    BindFailed,
    /// `x509: certificate has expired or is not yet valid`, `tls: expired certificate`.
    // A certificate out of its dates: Go's crypto/x509 `CertificateInvalidError`, `Expired`, or
    // the TLS alert (crypto/tls alert.go) a peer sent back.
    CertificateInvalid,
    /// etcd not answering: a dial to 2379 refused or timed out, `etcdserver: request timed out`.
    // The dial: grpc-go's `transport: Error while dialing: dial tcp 127.0.0.1:2379: connect:
    // connection refused`, or `context deadline exceeded` toward etcd; etcd's own: `etcdserver:
    // request timed out` / `etcdserver: no leader` / `etcdserver: leader changed`
    // (ErrGRPCTimeout, ErrGRPCNoLeader, ErrGRPCLeaderChanged in etcd's api/v3rpc/rpctypes/
    // error.go).
    EtcdUnreachable,
}

impl ApiLogKind {
    /// The kind in words, for people (issue 38; the JSON keeps the code).
    pub fn phrase(self) -> &'static str {
        match self {
            ApiLogKind::Fatal => "fatal",
            ApiLogKind::BindFailed => "port in use",
            ApiLogKind::CertificateInvalid => "certificate invalid",
            ApiLogKind::EtcdUnreachable => "etcd unreachable",
        }
    }
}

/// One kind of line in the API server's log tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiLogFinding {
    pub kind: ApiLogKind,
    /// How many lines of the tail.
    pub count: usize,
    /// The newest such line (at most 300 characters).
    // Capped at [`MAX_QUOTE`] characters.
    pub line: String,
    /// Its klog time (`MMDD hh:mm:ss.uuuuuu`).
    // When it has one.
    #[serde(default)]
    pub at: Option<String>,
}

/// The klog header of a line: severity, and `MMDD hh:mm:ss.uuuuuu`.
fn klog_header(line: &str) -> Option<(char, &str)> {
    let b = line.as_bytes();
    let sev = *b.first()?;
    if !matches!(sev, b'I' | b'W' | b'E' | b'F') || b.len() < 21 {
        return None;
    }
    let stamp = line.get(1..21)?;
    let s = stamp.as_bytes();
    let shape = s[..4].iter().all(u8::is_ascii_digit)
        && s[4] == b' '
        && s[7] == b':'
        && s[10] == b':'
        && s[13] == b'.';
    shape.then_some((char::from(sev), stamp))
}

/// The kinds one line is (at most one: the first of [`ApiLogKind`]'s order that matches).
pub fn line_kind(line: &str) -> Option<ApiLogKind> {
    let l = line.to_ascii_lowercase();
    let severity = klog_header(line).map(|h| h.0);
    if l.contains("bind: address already in use")
        || l.contains("bind: cannot assign requested address")
    {
        return Some(ApiLogKind::BindFailed);
    }
    if l.contains("x509: certificate has expired or is not yet valid")
        || l.contains("tls: expired certificate")
    {
        return Some(ApiLogKind::CertificateInvalid);
    }
    let toward_etcd = l.contains(":2379") || l.contains("etcd");
    let dial_failed = l.contains("connection refused")
        || l.contains("context deadline exceeded")
        || l.contains("i/o timeout");
    if l.contains("etcdserver: request timed out")
        || l.contains("etcdserver: no leader")
        || l.contains("etcdserver: leader changed")
        || (toward_etcd && dial_failed)
    {
        return Some(ApiLogKind::EtcdUnreachable);
    }
    if severity == Some('F') || l.contains("\"command failed\"") {
        return Some(ApiLogKind::Fatal);
    }
    None
}

/// The log tail's findings, in [`ApiLogKind`] order.
pub fn classify_log(text: &str) -> Vec<ApiLogFinding> {
    let mut out: Vec<ApiLogFinding> = Vec::new();
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        let Some(kind) = line_kind(line) else {
            continue;
        };
        let quoted = quote(line);
        let at = klog_header(line).map(|h| h.1.to_string());
        match out.iter_mut().find(|f| f.kind == kind) {
            Some(f) => {
                f.count += 1;
                f.line = quoted;
                f.at = at;
            }
            None => out.push(ApiLogFinding {
                kind,
                count: 1,
                line: quoted,
                at,
            }),
        }
    }
    out.sort_by_key(|f| f.kind);
    out
}

fn quote(line: &str) -> String {
    let mut q: String = line.chars().take(MAX_QUOTE).collect();
    if line.chars().nth(MAX_QUOTE).is_some() {
        q.push_str("...");
    }
    q
}

/// The node's API server, read: the parts and what they add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiServer {
    /// Newest first.
    pub containers: Vec<ApiContainer>,
    /// Why the container list could not be read, when it could not.
    pub containers_error: Option<String>,
    pub readyz: Readyz,
    /// The serving certificate's dates, or why they could not be read.
    pub cert: Result<Validity, String>,
    pub log: Vec<ApiLogFinding>,
    /// The node's clock at the probe, epoch seconds (the certificate's dates are against it).
    pub now_s: Option<i64>,
    pub state: ApiServerState,
}

/// What the node's API server is doing, most telling first.
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
pub enum ApiServerState {
    /// `/readyz` passed and the serving certificate is within its dates.
    Ready,
    /// Its serving certificate's notAfter is past (by the node's clock).
    CertificateExpired,
    /// Its serving certificate's notBefore is ahead (by the node's clock).
    CertificateNotYetValid,
    /// It answers, `/readyz` names failed checks.
    // E.g. `etcd`: starting, or cut from etcd.
    NotReady,
    /// It answers HTTP (401/403 to an anonymous request): its readiness not told.
    Answering,
    /// Its newest container exited after restarts.
    // kubelet restarts it, it dies again.
    CrashLooping,
    /// No container running, none restarting.
    // Or none at all.
    NotRunning,
    /// Its container runs, 6443 gives no HTTP answer.
    NoAnswer,
    /// Not read.
    // An older probe, or neither crictl nor curl on the node.
    Unknown,
}

impl ApiServer {
    /// The newest container.
    pub fn newest(&self) -> Option<&ApiContainer> {
        self.containers.first()
    }

    /// The line that says most about why it is not serving: a fatal line, a bind failure, a
    /// certificate, etcd, in that order.
    pub fn telling_line(&self) -> Option<&ApiLogFinding> {
        self.log.first()
    }

    /// Whether it serves: `/readyz` passed, or it answers HTTP with its readiness not told (what
    /// the rules count as serving).
    pub fn serving(&self) -> bool {
        matches!(
            self.state,
            ApiServerState::Ready | ApiServerState::Answering
        )
    }
}

/// The node's API server from what the probe fetched; `clock_ms` is the node's clock at the
/// probe (the certificate's dates are judged against it, as the node's TLS stack would).
pub fn read(r: &ApiServerRead, clock_ms: Option<i64>) -> ApiServer {
    let (containers, containers_error) = match r.containers.outcome {
        QueryOutcome::Ok => match containers(r.containers.text.as_deref().unwrap_or_default()) {
            Some(list) => (list, None),
            None => (
                Vec::new(),
                Some("crictl's container list is not its JSON (cut short?)".to_string()),
            ),
        },
        _ => (
            Vec::new(),
            Some(
                r.containers
                    .detail
                    .clone()
                    .unwrap_or_else(|| "not read".into()),
            ),
        ),
    };
    let readyz = readyz(&r.readyz);
    let cert = match (r.cert.outcome, r.cert.text.as_deref()) {
        (QueryOutcome::Ok, Some(pem)) => cert_validity(pem),
        _ => Err(r.cert.detail.clone().unwrap_or_else(|| "not read".into())),
    };
    let log = r
        .logs
        .as_ref()
        .map(|l| classify_log(&l.text))
        .unwrap_or_default();
    let now_s = clock_ms.map(|ms| ms.div_euclid(1000));
    let mut out = ApiServer {
        containers,
        containers_error,
        readyz,
        cert,
        log,
        now_s,
        state: ApiServerState::Unknown,
    };
    out.state = judge(&out);
    out
}

fn judge(a: &ApiServer) -> ApiServerState {
    if let (Ok(v), Some(now)) = (&a.cert, a.now_s) {
        if v.not_after < now {
            return ApiServerState::CertificateExpired;
        }
        if v.not_before > now {
            return ApiServerState::CertificateNotYetValid;
        }
    }
    let newest = a.newest();
    let restarted = newest.and_then(|c| c.attempt).is_some_and(|n| n > 0);
    match &a.readyz {
        Readyz::Ready => return ApiServerState::Ready,
        Readyz::NotReady { .. } => return ApiServerState::NotReady,
        Readyz::Answered(_) => return ApiServerState::Answering,
        Readyz::NoAnswer(_) | Readyz::NotAsked => {}
    }
    match newest {
        Some(c) if !c.is_running() && restarted => ApiServerState::CrashLooping,
        Some(c) if !c.is_running() => ApiServerState::NotRunning,
        None if a.containers_error.is_none() => ApiServerState::NotRunning,
        Some(_) if matches!(a.readyz, Readyz::NoAnswer(_)) => ApiServerState::NoAnswer,
        _ if matches!(a.readyz, Readyz::NoAnswer(_)) && a.containers_error.is_some() => {
            ApiServerState::NoAnswer
        }
        _ => ApiServerState::Unknown,
    }
}

#[cfg(test)]
mod tests;
