//! One control-plane node as the reports print it: its Machine and VM as the Supervisor has
//! them, and in a diagnosis what its probe said or why it could not be probed.

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::all;
use crate::probe::output as po;

/// One control-plane node in a diagnosis: what the Supervisor knows and what its probe said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosedNode {
    /// The node's name (its Machine's, else its VM's).
    pub name: String,
    /// The address the node was probed at.
    pub ip: Option<IpAddr>,
    /// The node's Machine, when it has one.
    pub machine: Option<MachineInfo>,
    /// The node's VirtualMachine, when it has one.
    pub vm: Option<VmInfo>,
    /// Whether the probe ran and its document was read.
    pub reached: bool,
    /// Why the node could not be probed.
    pub error: Option<ReachError>,
    /// The probe's output, without the raw etcd log text (its findings are in `logs`).
    pub probe: Option<ProbeOutput>,
    /// The VM's 22, 2379, 2380 and 6443 from outside it, as `reachFrom` saw them: the
    /// Supervisor (jumpbox route) or this machine (ssh route, unless ssh goes through a proxy);
    /// empty on the pod route, which does not check them.
    pub supervisor_reach: Vec<PortReach>,
    /// Where `supervisorReach` was seen from. Absent when it is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_from: Option<Vantage>,
    /// The ssh host key the node presented (jumpbox and ssh routes, once ssh got that far).
    /// Absent, not null, otherwise: a pod-route report is what it was before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_key: Option<HostKey>,
}

pub use crate::supervisor::{
    AddressSource, Condition, MachineAddress, MachineInfo, PowerState, ProvisioningStep,
    RolloutPhase, VmInfo,
};

pub use crate::probe::{HostKey, PortReach, PortState, ReachError, ReachErrorKind, Vantage};

/// What the node probe found on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeOutput {
    /// The probe document's schema version.
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
    #[serde(default)]
    pub members: Members,
    /// The alarm list from this node's etcd, where it could answer.
    #[serde(default)]
    pub alarms: Alarms,
    /// The node's kube-apiserver, as the plugin read what the probe fetched. Absent from older
    /// probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<ApiServer>,
    /// Steps that failed, with why.
    #[serde(default)]
    pub errors: Vec<StepError>,
    /// What the plugin found wrong with the document itself, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub document_problems: Vec<String>,
}

impl From<po::ProbeOutput> for ProbeOutput {
    fn from(p: po::ProbeOutput) -> ProbeOutput {
        ProbeOutput {
            schema_version: p.schema_version,
            node_ip: p.node_ip,
            hostname: p.hostname,
            ips: p.ips,
            clock_ms: p.clock_ms,
            duration_ms: p.duration_ms,
            etcd: p.etcd.into(),
            kubelet: p.kubelet.into(),
            paths: all(p.paths),
            certs: all(p.certs),
            manifest: p.manifest.map(Manifest::from),
            health: p.health.into(),
            members: p.members.into(),
            alarms: p.alarms.into(),
            api_server: p
                .api_server
                .as_ref()
                .map(|r| ApiServer::from(crate::probe::apiserver::read(r, p.clock_ms))),
            errors: all(p.errors),
            document_problems: p.document_problems,
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
    #[serde(default)]
    pub previous_logs: Option<LogSample>,
    /// The kubelet log file `previous_logs` was read from; absent when crictl gave it.
    #[serde(default)]
    pub previous_logs_file: Option<String>,
}

impl From<po::EtcdContainer> for EtcdContainer {
    fn from(e: po::EtcdContainer) -> EtcdContainer {
        EtcdContainer {
            query: e.query.into(),
            error: e.error,
            containers: all(e.containers),
            logs: e.logs.map(LogSample::from),
            previous_logs: e.previous_logs.map(LogSample::from),
            previous_logs_file: e.previous_logs_file,
        }
    }
}

mirror_enum! {
    /// Whether the container runtime could be asked.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum RuntimeQuery from po::RuntimeQuery {
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

impl From<po::Container> for Container {
    fn from(c: po::Container) -> Container {
        Container {
            id: c.id,
            state: c.state,
            attempt: c.attempt,
            created_at: c.created_at,
        }
    }
}

/// A container's log tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogSample {
    /// The container the log is of.
    pub container_id: String,
    /// The log text; empty in reports (the findings read from it are in `logs`).
    pub text: String,
    /// How many lines were read.
    pub lines: u32,
    /// True when the byte cap cut it.
    #[serde(default)]
    pub truncated: bool,
}

impl From<po::LogSample> for LogSample {
    fn from(l: po::LogSample) -> LogSample {
        LogSample {
            container_id: l.container_id,
            text: l.text,
            lines: l.lines,
            truncated: l.truncated,
        }
    }
}

/// The kubelet's systemd service.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Kubelet {
    /// `systemctl is-active kubelet`; absent when it could not be asked.
    #[serde(default)]
    pub active: Option<String>,
    /// `ActiveEnterTimestamp`, as systemd prints it.
    #[serde(default)]
    pub since: Option<String>,
    /// Why it could not be asked.
    #[serde(default)]
    pub error: Option<String>,
}

impl From<po::Kubelet> for Kubelet {
    fn from(k: po::Kubelet) -> Kubelet {
        Kubelet {
            active: k.active,
            since: k.since,
            error: k.error,
        }
    }
}

mirror_enum! {
    /// How a TCP dial went.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum TcpOutcome from po::TcpOutcome {
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
}

mirror_enum! {
    /// How the TLS handshake after a TCP connect went.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum TlsOutcome from po::TlsOutcome {
        /// The handshake finished (with the node's peer certificate).
        Completed,
        /// TCP connected but the handshake did not finish in time: large packets lost (MTU).
        Stalled,
        /// The handshake failed with an error (bad certificate, expired, unknown CA, ...).
        Rejected,
        /// The handshake completed but the request after it got no HTTP answer in time.
        NoHttpAnswer,
        /// Not attempted (TCP did not connect, or no certificate to try with).
        NotTried,
    }
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

impl From<po::PathCheck> for PathCheck {
    fn from(p: po::PathCheck) -> PathCheck {
        PathCheck {
            target: p.target,
            port: p.port,
            own: p.own,
            tcp: p.tcp.into(),
            tcp_ms: p.tcp_ms,
            tcp_detail: p.tcp_detail,
            tls: p.tls.into(),
            tls_ms: p.tls_ms,
            tls_detail: p.tls_detail,
            http_status: p.http_status,
        }
    }
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

impl From<po::CertInfo> for CertInfo {
    fn from(c: po::CertInfo) -> CertInfo {
        CertInfo {
            file: c.file,
            not_before: c.not_before,
            not_after: c.not_after,
            expires_in_s: c.expires_in_s,
            not_yet_valid: c.not_yet_valid,
            sans: c.sans,
            has_node_ip: c.has_node_ip,
            error: c.error,
        }
    }
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

impl From<po::Manifest> for Manifest {
    fn from(m: po::Manifest) -> Manifest {
        Manifest {
            name: m.name,
            advertise_client_urls: m.advertise_client_urls,
            initial_advertise_peer_urls: m.initial_advertise_peer_urls,
            listen_peer_urls: m.listen_peer_urls,
            listen_client_urls: m.listen_client_urls,
            initial_cluster: m.initial_cluster,
        }
    }
}

mirror_enum! {
    /// What etcd's `/health` said.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum HealthOutcome from po::HealthOutcome {
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

impl From<po::Health> for Health {
    fn from(h: po::Health) -> Health {
        Health {
            outcome: h.outcome.into(),
            http_status: h.http_status,
            body: h.body,
            ms: h.ms,
            detail: h.detail,
        }
    }
}

pub use crate::probe::output::QueryOutcome;

/// The member list from the node's etcd peer listener (its own copy, answered without quorum).
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
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// At most 64 (then `truncated`), in etcd's order (by ID).
    #[serde(default)]
    pub members: Vec<Member>,
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

impl From<po::Members> for Members {
    fn from(m: po::Members) -> Members {
        Members {
            outcome: m.outcome,
            http_status: m.http_status,
            cluster_id: m.cluster_id,
            members: all(m.members),
            truncated: m.truncated,
            ms: m.ms,
            detail: m.detail,
        }
    }
}

/// One etcd member of a node's member list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The member ID as `etcdctl member list` prints it (lowercase hex, no leading zeros).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[1-9a-f][0-9a-f]{0,15}$"))]
    pub id: Option<String>,
    /// Absent for a member added but never started.
    #[serde(default)]
    pub name: Option<String>,
    /// At most 16.
    #[serde(default)]
    pub peer_urls: Vec<String>,
    /// At most 16; empty for a member that never started.
    #[serde(default)]
    pub client_urls: Vec<String>,
    /// A learner.
    #[serde(default)]
    pub is_learner: bool,
}

impl From<po::Member> for Member {
    fn from(m: po::Member) -> Member {
        Member {
            id: m.id.map(|id| id.to_string()),
            name: m.name,
            peer_urls: m.peer_urls,
            client_urls: m.client_urls,
            is_learner: m.is_learner,
        }
    }
}

/// The alarm list of the node's etcd (it needs quorum: without it, an `Error`).
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

impl From<po::Alarms> for Alarms {
    fn from(a: po::Alarms) -> Alarms {
        Alarms {
            outcome: a.outcome,
            http_status: a.http_status,
            alarms: all(a.alarms),
            truncated: a.truncated,
            ms: a.ms,
            detail: a.detail,
        }
    }
}

/// One active etcd alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alarm {
    /// The member the alarm is raised for, as a member's `id`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[1-9a-f][0-9a-f]{0,15}$"))]
    pub member_id: Option<String>,
    /// etcd's AlarmType name: `NOSPACE`, `CORRUPT` (`NONE` for an entry without one).
    pub alarm: String,
}

impl From<po::Alarm> for Alarm {
    fn from(a: po::Alarm) -> Alarm {
        Alarm {
            member_id: a.member_id.map(|id| id.to_string()),
            alarm: a.alarm,
        }
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

impl From<po::StepError> for StepError {
    fn from(e: po::StepError) -> StepError {
        StepError {
            step: e.step,
            message: e.message,
        }
    }
}

mirror_enum! {
    /// What the node's API server is doing, most telling first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum ApiServerState from crate::probe::apiserver::ApiServerState {
        /// `/readyz` passed and the serving certificate is within its dates.
        Ready,
        /// Its serving certificate's notAfter is past (by the node's clock).
        CertificateExpired,
        /// Its serving certificate's notBefore is ahead (by the node's clock).
        CertificateNotYetValid,
        /// It answers, `/readyz` names failed checks.
        NotReady,
        /// It answers HTTP (401/403 to an anonymous request): its readiness not told.
        Answering,
        /// Its newest container exited after restarts.
        CrashLooping,
        /// No container running, none restarting.
        NotRunning,
        /// Its container runs, 6443 gives no HTTP answer.
        NoAnswer,
        /// Not read.
        Unknown,
    }
}

mirror_enum! {
    /// What a kube-apiserver log line says.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::Display, strum::VariantArray)]
    pub enum ApiLogKind from crate::probe::apiserver::ApiLogKind {
        /// A fatal line, or `"command failed"`: the process exits.
        Fatal,
        /// `bind: address already in use` (its port taken).
        BindFailed,
        /// `x509: certificate has expired or is not yet valid`, `tls: expired certificate`.
        CertificateInvalid,
        /// etcd not answering: a dial to 2379 refused or timed out, `etcdserver: request timed out`.
        EtcdUnreachable,
    }
}

/// The node's kube-apiserver: its container, its own `/readyz`, its serving certificate and
/// what its log's tail says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServer {
    /// What it is doing, from the parts below.
    pub state: ApiServerState,
    /// The newest container's state, as crictl says it.
    #[serde(default)]
    pub container_state: Option<String>,
    /// The newest container's restart attempt (kubelet's count).
    #[serde(default)]
    pub restarts: Option<u32>,
    /// When the newest container was created, RFC 3339 UTC.
    #[serde(default)]
    pub started_at: Option<String>,
    /// Why the container list could not be read.
    #[serde(default)]
    pub containers_error: Option<String>,
    /// `/readyz?verbose`'s HTTP status, when it answered.
    #[serde(default)]
    pub readyz_status: Option<u16>,
    /// The checks `/readyz?verbose` says failed (`etcd`, ...).
    #[serde(default)]
    pub failed_checks: Vec<String>,
    /// Why `/readyz` gave no answer (curl's words).
    #[serde(default)]
    pub readyz_error: Option<String>,
    /// The serving certificate's notBefore, RFC 3339 UTC.
    #[serde(default)]
    pub cert_not_before: Option<String>,
    /// The serving certificate's notAfter, RFC 3339 UTC.
    #[serde(default)]
    pub cert_not_after: Option<String>,
    /// Why the serving certificate's dates could not be read.
    #[serde(default)]
    pub cert_error: Option<String>,
    /// The log tail's findings.
    #[serde(default)]
    pub log: Vec<ApiLogFinding>,
}

/// One kind of line in the API server's log tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiLogFinding {
    pub kind: ApiLogKind,
    /// How many lines of the tail.
    pub count: usize,
    /// The newest such line (at most 300 characters).
    pub line: String,
    /// Its klog time (`MMDD hh:mm:ss.uuuuuu`).
    #[serde(default)]
    pub at: Option<String>,
}

impl From<crate::probe::apiserver::ApiServer> for ApiServer {
    fn from(a: crate::probe::apiserver::ApiServer) -> ApiServer {
        use crate::probe::apiserver::{rfc3339, Readyz};
        let newest = a.newest().cloned();
        let (readyz_status, failed_checks, readyz_error) = match a.readyz {
            Readyz::Ready => (Some(200), vec![], None),
            Readyz::NotReady { status, failed } => (Some(status), failed, None),
            Readyz::Answered(status) => (Some(status), vec![], None),
            Readyz::NoAnswer(why) => (None, vec![], Some(why)),
            Readyz::NotAsked => (None, vec![], None),
        };
        let (cert_not_before, cert_not_after, cert_error) = match a.cert {
            Ok(v) => (
                Some(rfc3339(v.not_before)),
                Some(rfc3339(v.not_after)),
                None,
            ),
            Err(e) => (None, None, Some(e)),
        };
        ApiServer {
            state: a.state.into(),
            container_state: newest.as_ref().map(|c| c.state.clone()),
            restarts: newest.as_ref().and_then(|c| c.attempt),
            started_at: newest.as_ref().and_then(|c| c.created_s).map(rfc3339),
            containers_error: a.containers_error,
            readyz_status,
            failed_checks,
            readyz_error,
            cert_not_before,
            cert_not_after,
            cert_error,
            log: a
                .log
                .into_iter()
                .map(|f| ApiLogFinding {
                    kind: f.kind.into(),
                    count: f.count,
                    line: f.line,
                    at: f.at,
                })
                .collect(),
        }
    }
}
