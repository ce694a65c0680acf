//! What the node probe (`probe.sh`) prints: exactly one JSON document, versioned by
//! `schemaVersion`. These types are that contract; the script and the parser change together.
//!
//! Every field a node might fail to provide is optional or has a "could not read" form: a
//! missing tool or a failing step is data, never an abort.

use serde::{Deserialize, Serialize};

/// The schema version this build reads. The probe prints it first.
pub const PROBE_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeOutput {
    pub schema_version: u32,
    /// The IP the probe was told is this node's (its etcd address).
    pub node_ip: String,
    #[serde(default)]
    pub hostname: Option<String>,
    /// The node's own addresses (all interfaces but loopback).
    #[serde(default)]
    pub ips: Vec<String>,
    /// The node's clock when the probe started, epoch milliseconds (for skew between nodes).
    #[serde(default)]
    pub clock_ms: Option<i64>,
    /// How long the whole probe took on the node.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub etcd: EtcdContainer,
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
    /// Steps that failed, with why (a missing tool, a timeout, ...).
    #[serde(default)]
    pub errors: Vec<StepError>,
    /// The document as the node printed it, set by [`crate::probe::parse::parse`]: the evidence
    /// bundle stores it verbatim, so a later plugin reads what the node said, not our reading
    /// of it. Never in a report's JSON (skipped), and not part of equality ([`RawDocument`]).
    #[serde(skip)]
    pub raw: RawDocument,
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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtcdContainer {
    /// Whether the container runtime could be asked at all.
    #[serde(default)]
    pub query: RuntimeQuery,
    #[serde(default)]
    pub error: Option<String>,
    /// Every etcd container `crictl ps -a --name etcd` lists, newest first.
    #[serde(default)]
    pub containers: Vec<Container>,
    /// The tail of the newest container's log.
    #[serde(default)]
    pub logs: Option<LogSample>,
}

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
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
    #[default]
    NotRun,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogSample {
    pub container_id: String,
    /// The log text (stdout and stderr of the container), at most `--log-lines` lines and a
    /// byte cap, the newest kept.
    pub text: String,
    pub lines: u32,
    /// True when the byte cap cut it.
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kubelet {
    /// `systemctl is-active kubelet`: active, inactive, failed, activating, ...; absent when
    /// it could not be asked.
    #[serde(default)]
    pub active: Option<String>,
    /// `ActiveEnterTimestamp`, as systemd prints it.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum TcpOutcome {
    Connected,
    /// No answer within the connect timeout (a dropping firewall).
    Timeout,
    /// RST: nothing listens, or a rejecting firewall.
    Refused,
    /// ICMP unreachable / no route.
    NoRoute,
    Error,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum TlsOutcome {
    /// The handshake finished (with the node's peer certificate).
    Completed,
    /// TCP connected but the handshake did not finish in time: large packets lost (MTU).
    Stalled,
    /// The handshake failed with an error (bad certificate, expired, unknown CA, ...).
    Rejected,
    /// Not attempted (TCP did not connect, or no certificate to try with).
    NotTried,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathCheck {
    /// The address dialled.
    pub target: String,
    pub port: u16,
    /// True for this node's own IP.
    #[serde(default)]
    pub own: bool,
    pub tcp: TcpOutcome,
    #[serde(default)]
    pub tcp_ms: Option<u64>,
    #[serde(default)]
    pub tcp_detail: Option<String>,
    pub tls: TlsOutcome,
    #[serde(default)]
    pub tls_ms: Option<u64>,
    /// The TLS or x509 error, when rejected.
    #[serde(default)]
    pub tls_detail: Option<String>,
    /// The HTTP status, when the request after the handshake got one.
    #[serde(default)]
    pub http_status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertInfo {
    /// The file name under /etc/kubernetes/pki/etcd/ (e.g. `peer.crt`).
    pub file: String,
    #[serde(default)]
    pub not_before: Option<String>,
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
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub advertise_client_urls: Vec<String>,
    #[serde(default)]
    pub initial_advertise_peer_urls: Vec<String>,
    #[serde(default)]
    pub listen_peer_urls: Vec<String>,
    #[serde(default)]
    pub listen_client_urls: Vec<String>,
    #[serde(default)]
    pub initial_cluster: Option<String>,
}

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    #[serde(default)]
    pub outcome: HealthOutcome,
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The body, capped (e.g. `{"health":"false","reason":"RAFT NO LEADER"}`).
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub ms: Option<u64>,
    #[serde(default)]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepError {
    pub step: String,
    pub message: String,
}
