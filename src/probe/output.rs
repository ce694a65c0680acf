//! What the node probe (`probe.sh`) prints: exactly one JSON document, versioned by
//! `schemaVersion`. These types are that contract; the script and the parser change together.
//! The sections' types are also the report's (`report::v1alpha2` re-exports them, issue 39 item
//! 3): their `///` comments are the JSON Schema's descriptions, so the longer notes for
//! maintainers are `//` comments beside them.
//!
//! Every field a node might fail to provide is optional or has a "could not read" form: a
//! missing tool or a failing step is data, never an abort.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The schema version this build reads. The probe prints it first.
pub const PROBE_SCHEMA_VERSION: u32 = 1;

/// What the node probe found on one node.
// One type for the document the probe prints (format 1's JSON; format 2's sections read into
// it; the bundle's `probe.json` of then) and for the report's `probe` (issue 39 item 3: one type
// per fact): `ProbeOutput` is the document, `report::v1alpha2::ProbeResult` the report's, whose
// schema keeps the name `ProbeOutput`. They differ in three parts, the type's parameters:
// - `A`, the kube-apiserver: the raw text the probe fetched ([`ApiServerRead`], read by
//   [`crate::probe::apiserver`]); the report prints it as read and judged (`ApiServerStatus`);
// - `F` and `M`, the raw firewall and metrics reads ([`crate::probe::firewall::Firewall`],
//   `Option<`[`MetricsReads`]`>`); the report leaves them out (`NotKept`): their findings are in
//   the matrices, `packetLocation` and `metrics`.
// The `///` comments are the schema's descriptions; the notes for maintainers are `//` comments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "A: Serialize, F: Serialize + Unsaid, M: Serialize + Unsaid",
        deserialize = "A: Deserialize<'de>, F: Deserialize<'de> + Default, M: Deserialize<'de> + Default"
    )
)]
#[schemars(rename = "ProbeOutput")]
pub struct ProbeOutput<
    A = ApiServerRead,
    F = crate::probe::firewall::Firewall,
    M = Option<MetricsReads>,
> {
    /// The probe document's schema version.
    // The probe prints it first; this build reads [`PROBE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The IP the probe was told is this node's (its etcd address).
    pub node_ip: String,
    /// The node's host name.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The node's own addresses (all interfaces but loopback).
    #[serde(default)]
    pub ips: Vec<String>,
    /// The node's clock when the probe started, epoch milliseconds.
    // For the skew between nodes.
    #[serde(default)]
    pub clock_ms: Option<i64>,
    /// How long the whole probe took on the node.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The etcd containers and their logs.
    #[serde(default)]
    pub etcd: EtcdContainer,
    /// The kubelet's service state.
    #[serde(default)]
    pub kubelet: Kubelet,
    /// Own IP:2379 and :2380, then every peer's 2379 and 2380.
    #[serde(default)]
    pub paths: Vec<PathCheck>,
    /// The etcd certificates under /etc/kubernetes/pki/etcd/.
    #[serde(default)]
    pub certs: Vec<CertInfo>,
    /// What the etcd static-pod manifest says.
    #[serde(default)]
    pub manifest: Option<Manifest>,
    /// etcd's own `/health` on this node.
    #[serde(default)]
    pub health: Health,
    /// The member list as this node's etcd knows it.
    // Its peer listener's `/members`, no quorum needed. Absent from older probes: `Skipped`.
    #[serde(default)]
    pub members: Members,
    /// The alarm list from this node's etcd, where it could answer.
    // NOSPACE, CORRUPT; it needs quorum. Absent from older probes: `Skipped`.
    #[serde(default)]
    pub alarms: Alarms,
    // The node's own firewall rules, read right before and right after the path checks. Absent
    // from older probes: empty (not read). Not in reports.
    #[serde(default, skip_serializing_if = "Unsaid::unsaid")]
    #[schemars(skip)]
    pub firewall: F,
    // etcd's own metrics (`http://127.0.0.1:2381/metrics`), read right before and right after
    // the path checks. Absent from older probes. Not in reports.
    #[serde(default, skip_serializing_if = "Unsaid::unsaid")]
    #[schemars(skip)]
    pub metrics: M,
    /// The node's kube-apiserver, as the plugin read what the probe fetched. Absent from older
    /// probes.
    // In the document, the raw text the probe fetched, bounded there and again by the parser
    // ([`crate::probe::parse::bounds`]); in the report, as read and judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<A>,
    /// Steps that failed, with why.
    // A missing tool, a timeout, ...
    #[serde(default)]
    pub errors: Vec<StepError>,
    /// What the plugin found wrong with the document itself, one line each.
    // A list longer than the probe's own cap (the rest dropped), a member ID not as etcd writes
    // it (that entry never used as a member), a value longer than the probe prints. Set by
    // [`crate::probe::parse::parse`] whatever the document says: the node's output is its own
    // word, and these are findings about that node's document, never about another node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub document_problems: Vec<String>,
    // The document as the node printed it, set by [`crate::probe::parse::parse`]: the evidence
    // bundle stores it verbatim, so a later plugin reads what the node said, not our reading
    // of it. Never in JSON (skipped), and not part of equality ([`RawDocument`]).
    #[serde(skip)]
    pub raw: RawDocument,
}

impl<A, F, M> ProbeOutput<A, F, M> {
    /// The same findings with the kube-apiserver's part made by `api` (from the whole output)
    /// and the raw firewall and metrics reads as `G` and `N` have them by default (the report's
    /// form: left out), without the document's text.
    pub fn with_reads<B, G: Default, N: Default>(
        self,
        api: impl FnOnce(&Self) -> Option<B>,
    ) -> ProbeOutput<B, G, N> {
        let api_server = api(&self);
        ProbeOutput {
            schema_version: self.schema_version,
            node_ip: self.node_ip,
            hostname: self.hostname,
            ips: self.ips,
            clock_ms: self.clock_ms,
            duration_ms: self.duration_ms,
            etcd: self.etcd,
            kubelet: self.kubelet,
            paths: self.paths,
            certs: self.certs,
            manifest: self.manifest,
            health: self.health,
            members: self.members,
            alarms: self.alarms,
            firewall: G::default(),
            metrics: N::default(),
            api_server,
            errors: self.errors,
            document_problems: self.document_problems,
            raw: RawDocument::default(),
        }
    }
}

/// A part of the probe's output with nothing to print (then left out of the JSON): the
/// document's firewall reads when none were read, its metrics when absent.
pub trait Unsaid {
    fn unsaid(&self) -> bool;
}

impl Unsaid for crate::probe::firewall::Firewall {
    fn unsaid(&self) -> bool {
        self.is_empty()
    }
}

impl<T> Unsaid for Option<T> {
    fn unsaid(&self) -> bool {
        self.is_none()
    }
}

/// A probe document's text as printed. Equal to any other: two documents that read the same
/// are the same probe (whitespace or key order must not make reports differ), and a value made
/// in code has none. Its `Debug` shows the length only, so a failing test's dump of a report
/// does not print every node's log tail twice.
#[derive(Clone, Default)]
pub struct RawDocument(pub Option<std::sync::Arc<str>>);

impl RawDocument {
    pub fn new(text: &str) -> RawDocument {
        RawDocument(Some(text.into()))
    }

    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl PartialEq for RawDocument {
    fn eq(&self, _: &RawDocument) -> bool {
        true
    }
}

impl Eq for RawDocument {}

impl std::fmt::Debug for RawDocument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(text) => write!(f, "RawDocument({} bytes)", text.len()),
            None => f.write_str("RawDocument(none)"),
        }
    }
}

/// The node's etcd containers as the container runtime lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdContainer {
    /// Whether the container runtime could be asked at all.
    #[serde(default)]
    pub query: RuntimeQuery,
    /// Why the runtime could not be asked.
    #[serde(default)]
    pub error: Option<String>,
    /// Every etcd container `crictl ps -a --name etcd` lists, newest first.
    #[serde(default)]
    pub containers: Vec<Container>,
    /// The tail of the newest container's log (its text is left out of reports).
    #[serde(default)]
    pub logs: Option<LogSample>,
    /// The tail of the previous container's log.
    // Read when the newest is not running or its log has fewer lines than `--log-lines` (a
    // restarted member starts a new log). From `crictl logs` of the second newest container,
    // else from the kubelet's log file of the attempt before (then `previous_logs_file`). Its
    // bytes and the newest's share `--log-bytes`.
    #[serde(default)]
    pub previous_logs: Option<LogSample>,
    /// The kubelet log file `previous_logs` was read from; absent when crictl gave it.
    // The file is `/var/log/pods/kube-system_etcd-<node>_<uid>/etcd/<attempt>.log`; its
    // `container_id` is then the crictl ID when the container was still listed, else empty.
    #[serde(default)]
    pub previous_logs_file: Option<String>,
}

impl EtcdContainer {
    /// The member's log as one text: a restarted member starts a new log, so the previous
    /// container's comes first and the restarts' reasons are read with the rest (one log, in
    /// time order). `None` when neither was read. The verdict's log findings and the timeline's
    /// episodes both read this.
    pub fn log_text(&self) -> Option<String> {
        let current = self.logs.as_ref().map(|l| l.text.as_str());
        let previous = self.previous_logs.as_ref().map(|l| l.text.as_str());
        match (previous, current) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (Some(a), None) => Some(a.to_string()),
            (None, Some(b)) => Some(b.to_string()),
        }
    }
}

/// Whether the container runtime could be asked.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum RuntimeQuery {
    /// crictl answered.
    Ok,
    /// No crictl on the node.
    CrictlMissing,
    /// crictl is there but failed (runtime down, socket missing).
    RuntimeError,
    /// Not asked.
    #[default]
    NotRun,
}

/// One etcd container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// The container ID.
    pub id: String,
    /// As crictl says it: `CONTAINER_RUNNING`, `CONTAINER_EXITED`, `Running`, `Exited`, ...
    pub state: String,
    /// The restart attempt (kubelet's restart count for the static pod).
    #[serde(default)]
    pub attempt: Option<u32>,
    /// When it was created, as crictl reports it (RFC 3339 or epoch ns).
    #[serde(default)]
    pub created_at: Option<String>,
}

impl Container {
    pub fn is_running(&self) -> bool {
        let s = self.state.to_ascii_lowercase();
        s == "running" || s == "container_running"
    }
}

/// A container's log tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogSample {
    /// The container the log is of.
    pub container_id: String,
    /// The log text; empty in reports (the findings read from it are in `logs`).
    // The container's stdout and stderr, at most `--log-lines` lines and a byte cap, the newest
    // kept.
    pub text: String,
    /// How many lines were read.
    pub lines: u32,
    /// True when the byte cap cut it.
    #[serde(default)]
    pub truncated: bool,
}

/// The kubelet's systemd service.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Kubelet {
    /// `systemctl is-active kubelet`; absent when it could not be asked.
    // active, inactive, failed, activating, ...
    #[serde(default)]
    pub active: Option<String>,
    /// `ActiveEnterTimestamp`, as systemd prints it.
    #[serde(default)]
    pub since: Option<String>,
    /// Why it could not be asked.
    #[serde(default)]
    pub error: Option<String>,
}

/// How a TCP dial went.
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
pub enum TcpOutcome {
    /// It connected.
    Connected,
    /// No answer within the connect timeout (a dropping firewall).
    Timeout,
    /// RST: nothing listens, or a rejecting firewall.
    Refused,
    /// ICMP unreachable / no route.
    NoRoute,
    /// Another error.
    Error,
}

/// How the TLS handshake after a TCP connect went.
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
pub enum TlsOutcome {
    /// The handshake finished (with the node's peer certificate).
    Completed,
    /// TCP connected but the handshake did not finish in time: large packets lost (MTU).
    Stalled,
    /// The handshake failed with an error (bad certificate, expired, unknown CA, ...).
    Rejected,
    /// The handshake completed but the request after it got no HTTP answer in time.
    // Not etcd answering there (or one too busy to), never a working path.
    NoHttpAnswer,
    /// Not attempted (TCP did not connect, or no certificate to try with).
    NotTried,
}

/// One dial from the node to an etcd port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathCheck {
    /// The address dialled.
    pub target: String,
    /// The port dialled.
    pub port: u16,
    /// True for this node's own IP.
    #[serde(default)]
    pub own: bool,
    /// How the TCP connect went.
    pub tcp: TcpOutcome,
    /// How long the TCP connect took.
    #[serde(default)]
    pub tcp_ms: Option<u64>,
    /// The TCP error, when there is one.
    #[serde(default)]
    pub tcp_detail: Option<String>,
    /// How the TLS handshake went.
    pub tls: TlsOutcome,
    /// How long the TLS handshake took.
    #[serde(default)]
    pub tls_ms: Option<u64>,
    /// The TLS or x509 error, when rejected.
    #[serde(default)]
    pub tls_detail: Option<String>,
    /// The HTTP status, when the request after the handshake got one.
    #[serde(default)]
    pub http_status: Option<u16>,
}

/// One etcd certificate of the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertInfo {
    /// The file name under /etc/kubernetes/pki/etcd/ (e.g. `peer.crt`).
    pub file: String,
    /// Its notBefore.
    #[serde(default)]
    pub not_before: Option<String>,
    /// Its notAfter.
    #[serde(default)]
    pub not_after: Option<String>,
    /// Seconds until expiry at probe time (negative: expired).
    #[serde(default)]
    pub expires_in_s: Option<i64>,
    /// True when notBefore is in the future at probe time.
    #[serde(default)]
    pub not_yet_valid: Option<bool>,
    /// Subject alternative names: IPs and DNS names.
    #[serde(default)]
    pub sans: Vec<String>,
    /// Whether the SANs contain `nodeIp` (only for server.crt and peer.crt).
    #[serde(default)]
    pub has_node_ip: Option<bool>,
    /// Why it could not be read.
    #[serde(default)]
    pub error: Option<String>,
}

/// What the etcd static-pod manifest says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// `--name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `--advertise-client-urls`.
    #[serde(default)]
    pub advertise_client_urls: Vec<String>,
    /// `--initial-advertise-peer-urls`.
    #[serde(default)]
    pub initial_advertise_peer_urls: Vec<String>,
    /// `--listen-peer-urls`.
    #[serde(default)]
    pub listen_peer_urls: Vec<String>,
    /// `--listen-client-urls`.
    #[serde(default)]
    pub listen_client_urls: Vec<String>,
    /// `--initial-cluster`.
    #[serde(default)]
    pub initial_cluster: Option<String>,
}

/// What etcd's `/health` said.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum HealthOutcome {
    /// `{"health":"true"}`.
    Healthy,
    /// It answered, not healthy (e.g. no leader, NOSPACE alarm).
    Unhealthy,
    /// No answer / TLS / HTTP error.
    Error,
    /// Not attempted (no healthcheck certificate, no curl).
    #[default]
    Skipped,
}

impl HealthOutcome {
    /// What `/health` said, for people (issue 38; the JSON keeps the code, `Unhealthy`):
    /// `/health is false`.
    pub fn phrase(self) -> &'static str {
        match self {
            HealthOutcome::Healthy => "true",
            HealthOutcome::Unhealthy => "false",
            HealthOutcome::Error => "unanswered",
            HealthOutcome::Skipped => "not asked",
        }
    }
}

/// etcd's own `/health` on the node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// What it said.
    #[serde(default)]
    pub outcome: HealthOutcome,
    /// The HTTP status.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The body, capped (e.g. `{"health":"false","reason":"RAFT NO LEADER"}`).
    #[serde(default)]
    pub body: Option<String>,
    /// How long it took.
    #[serde(default)]
    pub ms: Option<u64>,
    /// The error, when there is one.
    #[serde(default)]
    pub detail: Option<String>,
}

/// How one of the probe's questions to its own etcd went (member list, alarm list).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum QueryOutcome {
    /// etcd answered 200 with a document of the expected shape.
    Ok,
    /// No answer, a TLS or HTTP error, or not the expected document (`detail` says which).
    Error,
    /// Not asked (no certificate, no curl; or a probe older than the field).
    // Nor without `--self`.
    #[default]
    Skipped,
}

/// The member list from the node's etcd peer listener (its own copy, answered without quorum).
// `GET https://<self>:2380/members` with the node's peer certificate; etcd's
// `peerMembersHandler`, server/etcdserver/api/etcdhttp/peer.go, 3.4 to 3.6.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Members {
    /// How the question went.
    #[serde(default)]
    pub outcome: QueryOutcome,
    /// The HTTP status.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The `X-Etcd-Cluster-ID` the node answered with (lowercase hex, no leading zeros).
    // As etcd and etcdctl print cluster IDs. Also given with an error answer when etcd sent it.
    // The parser keeps only that form (anything else is a document problem, and `None`).
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// At most 64 (then `truncated`), in etcd's order (by ID).
    // The probe's cap, and the parser's too (`crate::probe::parse`): a longer list is cut there
    // and marked.
    #[serde(default)]
    pub members: Vec<Member>,
    /// True when the list was cut at 64.
    #[serde(default)]
    pub truncated: bool,
    /// How long it took.
    #[serde(default)]
    pub ms: Option<u64>,
    /// The URL asked; with the error when there is one.
    // The error: curl's words, the HTTP status and the start of the body.
    #[serde(default)]
    pub detail: Option<String>,
}

/// One etcd member of a node's member list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The member ID as `etcdctl member list` prints it (lowercase hex, no leading zeros).
    // E.g. `b71f75320dc06a6c`. etcd 3.4 and 3.5 send it as a decimal uint64 (checked in the
    // lab); the probe converts it exactly. `None` when what was sent is no uint64, or when the
    // document wrote it in another form (a document problem: such an entry is never taken for
    // a member).
    #[serde(default)]
    #[schemars(with = "Option<String>", regex(pattern = r"^[1-9a-f][0-9a-f]{0,15}$"))]
    pub id: Option<MemberId>,
    /// Absent for a member added but never started.
    // etcd leaves its name out until it publishes.
    #[serde(default)]
    pub name: Option<String>,
    /// At most 16.
    #[serde(default)]
    pub peer_urls: Vec<String>,
    /// At most 16; empty for a member that never started.
    #[serde(default)]
    pub client_urls: Vec<String>,
    /// A learner.
    // etcd leaves the field out when false.
    #[serde(default)]
    pub is_learner: bool,
}

/// The alarm list of the node's etcd (it needs quorum: without it, an `Error`).
// `POST https://127.0.0.1:2379/v3/maintenance/alarm`, `{"action":"GET"}`, through etcd's
// grpc-gateway with the healthcheck-client certificate; `[::1]` on IPv6 nodes. It goes through
// raft: without quorum it is an `Error` (a timeout), which is data, not a probe failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alarms {
    /// How the question went.
    #[serde(default)]
    pub outcome: QueryOutcome,
    /// The HTTP status.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The active alarms (empty when `Ok` and none), at most 64 (then `truncated`).
    #[serde(default)]
    pub alarms: Vec<Alarm>,
    /// True when the list was cut at 64.
    #[serde(default)]
    pub truncated: bool,
    /// How long it took.
    #[serde(default)]
    pub ms: Option<u64>,
    /// The URL asked; with the error when there is one.
    #[serde(default)]
    pub detail: Option<String>,
}

/// etcd's own metrics (`http://127.0.0.1:2381/metrics`, no certificate, no quorum), read by
/// probe.sh right before and right after the path checks; the kept lines are parsed by
/// [`crate::probe::metrics`]. Absent from older probes (`None` in [`ProbeOutput`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsReads {
    /// Read right before the path checks started.
    #[serde(default)]
    pub before: MetricsRead,
    /// Read right after the last path check ended.
    #[serde(default)]
    pub after: MetricsRead,
}

/// One read of `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsRead {
    #[serde(default)]
    pub outcome: QueryOutcome,
    #[serde(default)]
    pub http_status: Option<u16>,
    /// When the read started, in ms since the probe started (its monotonic clock).
    #[serde(default)]
    pub at_ms: Option<u64>,
    /// How long it took.
    #[serde(default)]
    pub ms: Option<u64>,
    /// The kept lines (when `Ok`).
    #[serde(default)]
    pub text: Option<String>,
    /// The probe's byte cap cut the body or the kept lines.
    #[serde(default)]
    pub truncated: bool,
    /// The URL asked; with curl's words or the HTTP status when it failed.
    #[serde(default)]
    pub detail: Option<String>,
}

/// What the probe fetched of the node's kube-apiserver (`api_server` in probe.sh), each part the
/// node's own text, bounded there and again by the parser ([`crate::probe::parse::bounds`]);
/// [`crate::probe::apiserver`] reads and judges it. The probe decides nothing about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerRead {
    /// `crictl ps -a --name kube-apiserver -o json`, as printed.
    #[serde(default)]
    pub containers: RawRead,
    /// The tail of the newest kube-apiserver container's log (`crictl logs --tail`).
    #[serde(default)]
    pub logs: Option<LogSample>,
    /// `GET https://127.0.0.1:6443/readyz?verbose` (`[::1]` on IPv6 nodes), without
    /// credentials and without checking the serving certificate (its dates are read from the
    /// file): the status and the body.
    #[serde(default)]
    pub readyz: RawRead,
    /// `/etc/kubernetes/pki/apiserver.crt` as PEM text.
    #[serde(default)]
    pub cert: RawRead,
}

/// One fetch of raw text: how it went, and what came back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawRead {
    #[serde(default)]
    pub outcome: QueryOutcome,
    /// The HTTP status, for a request.
    #[serde(default)]
    pub http_status: Option<u16>,
    #[serde(default)]
    pub ms: Option<u64>,
    /// What came back (`Ok`; a request's body also with an HTTP error), at most the probe's cap.
    #[serde(default)]
    pub text: Option<String>,
    /// The probe's cap cut it.
    #[serde(default)]
    pub truncated: bool,
    /// What was asked; with why it failed (curl's or crictl's last words).
    #[serde(default)]
    pub detail: Option<String>,
}

/// One active etcd alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alarm {
    /// The member the alarm is raised for, as a member's `id`.
    #[serde(default)]
    #[schemars(with = "Option<String>", regex(pattern = r"^[1-9a-f][0-9a-f]{0,15}$"))]
    pub member_id: Option<MemberId>,
    /// etcd's AlarmType name: `NOSPACE`, `CORRUPT` (`NONE` for an entry without one).
    // Another name as etcd sent it (capped).
    pub alarm: String,
}

/// An etcd member ID: a uint64, never 0 (raft's `None`: "cannot use none as id", raft.go of
/// etcd-io/raft). Written as etcd writes it, `types.ID.String()` = `strconv.FormatUint(id, 16)`
/// (client/pkg/types/id.go): lowercase hex without leading zeros. etcdctl reads an ID argument
/// with `strconv.ParseUint(arg, 16, 64)` (etcdctl/ctlv3/command/member_command.go), which takes
/// upper case and leading zeros too: `0<id>` is the same member as `<id>` to it. So IDs are
/// compared as numbers, never as strings, and only the canonical form is read from a document
/// ([`MemberId::parse`]); JSON and YAML carry the canonical string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberId(u64);

/// Why a string is not a member ID as etcd writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdProblem {
    #[error("empty")]
    Empty,
    #[error("not hexadecimal")]
    NotHex,
    #[error("upper-case hex, where etcd writes lower case")]
    UpperCase,
    #[error("a leading zero, which etcd never writes")]
    LeadingZero,
    #[error("longer than 16 hex digits, more than a uint64")]
    TooLong,
    #[error("0, raft's none, never a member")]
    Zero,
}

impl MemberId {
    /// The ID `text` is when it is written as etcd writes IDs (`%x` of a non-zero uint64).
    pub fn parse(text: &str) -> Result<MemberId, IdProblem> {
        if text.is_empty() {
            return Err(IdProblem::Empty);
        }
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(IdProblem::NotHex);
        }
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(IdProblem::UpperCase);
        }
        if text == "0" {
            return Err(IdProblem::Zero);
        }
        if text.starts_with('0') {
            return Err(IdProblem::LeadingZero);
        }
        if text.len() > 16 {
            return Err(IdProblem::TooLong);
        }
        u64::from_str_radix(text, 16)
            .map(MemberId)
            .map_err(|_| IdProblem::TooLong)
    }

    /// What etcdctl would take `text` for (`strconv.ParseUint(text, 16, 64)`: hex digits of
    /// either case, leading zeros allowed, no sign, at most a uint64): the member a removal step
    /// with this text would remove. For saying which member a non-canonical ID stands for.
    pub fn as_etcdctl_reads(text: &str) -> Option<MemberId> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(text, 16)
            .ok()
            .filter(|v| *v != 0)
            .map(MemberId)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<std::num::NonZeroU64> for MemberId {
    fn from(v: std::num::NonZeroU64) -> MemberId {
        MemberId(v.get())
    }
}

impl std::fmt::Display for MemberId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

impl std::fmt::Debug for MemberId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemberId({:x})", self.0)
    }
}

impl std::str::FromStr for MemberId {
    type Err = IdProblem;
    fn from_str(s: &str) -> Result<MemberId, IdProblem> {
        MemberId::parse(s)
    }
}

impl Serialize for MemberId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemberId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MemberId, D::Error> {
        let text = String::deserialize(d)?;
        MemberId::parse(&text)
            .map_err(|e| serde::de::Error::custom(format_args!("member ID {text:?}: {e}")))
    }
}

/// A probe step that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepError {
    /// The step.
    pub step: String,
    /// Why it failed.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    /// Display is what the JSON says: scripts and tables agree (as `enums_shown_to_users_read_
    /// as_their_json` in lib.rs checks for the older enums).
    #[test]
    fn query_outcome_displays_as_its_json() {
        for v in QueryOutcome::VARIANTS {
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{v}\""));
        }
        for v in TlsOutcome::VARIANTS {
            assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{v}\""));
        }
    }
}
