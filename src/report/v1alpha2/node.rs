//! One control-plane node as the reports print it: its Machine and VM as the Supervisor has
//! them, and in a diagnosis what its probe said or why it could not be probed.

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::probe::apiserver::{self, Readyz};
use crate::probe::output::ProbeOutput;

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
    pub probe: Option<ProbeResult>,
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

// The probe document's sections are the contract's own types (issue 39 item 3: one type per
// fact): their doc comments are the schema's descriptions.
pub use crate::probe::output::{
    Alarm, Alarms, CertInfo, Container, EtcdContainer, Health, HealthOutcome, Kubelet, LogSample,
    Manifest, Member, Members, PathCheck, QueryOutcome, RuntimeQuery, StepError, TcpOutcome,
    TlsOutcome,
};

// And the kube-apiserver's judged parts.
pub use crate::probe::apiserver::{ApiLogFinding, ApiLogKind, ApiServerState};

/// What the node probe found on one node: the probe's document as reports print it (schema
/// name `ProbeOutput`), one type with it ([`ProbeOutput`]'s parameters): the kube-apiserver as
/// read and judged, the raw firewall and metrics reads left out (their findings are in the
/// matrices, `packetLocation` and `metrics`).
pub type ProbeResult = ProbeOutput<ApiServerStatus, NotKept, NotKept>;

impl From<ProbeOutput> for ProbeResult {
    fn from(p: ProbeOutput) -> ProbeResult {
        p.with_reads(|p| {
            (p.api_server.as_ref()).map(|r| ApiServerStatus::from(apiserver::read(r, p.clock_ms)))
        })
    }
}

/// A part of the probe's document a report does not print: never written, and whatever a
/// report read back holds there is ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NotKept;

impl<'de> Deserialize<'de> for NotKept {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NotKept, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(NotKept)
    }
}

impl crate::probe::output::Unsaid for NotKept {
    fn unsaid(&self) -> bool {
        true
    }
}

/// The node's kube-apiserver: its container, its own `/readyz`, its serving certificate and
/// what its log's tail says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ApiServer")]
// Not `probe::apiserver::ApiServer`, the reading the verdict's rules judge: its containers,
// `/readyz` answer and certificate are printed flat, the newest container's only.
pub struct ApiServerStatus {
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

impl From<apiserver::ApiServer> for ApiServerStatus {
    fn from(a: apiserver::ApiServer) -> ApiServerStatus {
        use apiserver::rfc3339;
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
        ApiServerStatus {
            state: a.state,
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
            log: a.log,
        }
    }
}
