//! Findings for `status`: what an admin following
//! the support article would flag from the Supervisor side. Each rule adds findings; the order of
//! the list is the order an admin should read them in (missing machines first: the article calls
//! that "a separate issue").

use serde::{Deserialize, Serialize};

use crate::supervisor::{ClusterFacts, PowerState};
use crate::workload::{ApiState, WorkloadApi};

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
    strum::Display,
    strum::VariantArray,
)]
pub enum Severity {
    Error,
    Warning,
}

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: FindingCode,
    pub severity: Severity,
    /// The node (Machine or VM name) it is about, when it is about one.
    pub node: Option<String>,
    pub message: String,
}

fn finding(code: FindingCode, severity: Severity, node: Option<&str>, message: String) -> Finding {
    Finding {
        code,
        severity,
        node: node.map(str::to_string),
        message,
    }
}

/// Finding codes of `status`: a JSON contract, scripts match on them (docs/output.md).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum FindingCode {
    ControlPlaneNotFound,
    ControlPlaneMachinesMissing,
    ControlPlaneNotReady,
    EtcdConditionNotTrue,
    VirtualMachineMissing,
    MachineMissing,
    VirtualMachineNoIP,
    VirtualMachineNotPoweredOn,
    MachineNotRunning,
    WorkloadAPIUnreachable,
    WorkloadAPINotReady,
    /// The `<cluster>-kubeconfig` secret was refused before any request (a local file, a
    /// program, a proxy, or a server other than the Cluster's endpoint).
    WorkloadKubeconfigUntrusted,
}

pub fn status_findings(facts: &ClusterFacts, api: &WorkloadApi) -> Vec<Finding> {
    use FindingCode::*;
    use Severity::*;
    let mut out = Vec::new();

    match (&facts.kcp, facts.desired()) {
        (None, _) => out.push(finding(
            ControlPlaneNotFound,
            Warning,
            None,
            format!(
                "no KubeadmControlPlane: {}",
                facts
                    .kcp_missing_reason
                    .as_deref()
                    .unwrap_or("unknown reason")
            ),
        )),
        (Some(kcp), Some(desired)) => {
            let present = facts.machines_present() as i64;
            if present < desired {
                out.push(finding(
                    ControlPlaneMachinesMissing,
                    Error,
                    None,
                    format!(
                        "{} of {desired} control-plane Machines missing (present {present}): a separate issue from etcd networking; check the KCP {:?} and its events",
                        desired - present,
                        kcp.name
                    ),
                ));
            }
            let ready = kcp.ready.unwrap_or(0);
            if ready < desired {
                out.push(finding(
                    ControlPlaneNotReady,
                    Error,
                    None,
                    format!(
                        "KCP {:?}: {ready} of {desired} control-plane nodes ready",
                        kcp.name
                    ),
                ));
            }
        }
        (Some(_), None) => {}
    }
    if let Some(kcp) = &facts.kcp {
        for c in kcp.conditions.iter().filter(|c| c.kind.contains("Etcd")) {
            if c.status != "True" {
                let why = [c.reason.as_deref(), c.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                out.push(finding(
                    EtcdConditionNotTrue,
                    Error,
                    None,
                    format!(
                        "KCP condition {} is {}{}",
                        c.kind,
                        c.status,
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(" ({why})")
                        }
                    ),
                ));
            }
        }
    }

    for n in &facts.nodes {
        let name = Some(n.name.as_str());
        match (&n.machine, &n.vm) {
            (Some(_), None) => out.push(finding(
                VirtualMachineMissing,
                Error,
                name,
                format!("Machine {:?} has no control-plane VirtualMachine", n.name),
            )),
            (None, Some(vm)) => out.push(finding(
                MachineMissing,
                Warning,
                name,
                format!(
                    "VirtualMachine {:?} ({}) carries the control-plane labels but joins no control-plane Machine of this cluster: it is never probed",
                    vm.name,
                    vm.ip.map(|ip| format!("IP {ip}")).unwrap_or_else(|| "no IP".into())
                ),
            )),
            _ => {}
        }
        if let Some(vm) = &n.vm {
            if vm.power != PowerState::PoweredOn {
                out.push(finding(
                    VirtualMachineNotPoweredOn,
                    Error,
                    name,
                    format!("VirtualMachine {:?} is {}", vm.name, vm.power),
                ));
            }
            if vm.ip.is_none() {
                out.push(finding(
                    VirtualMachineNoIP,
                    Warning,
                    name,
                    format!("VirtualMachine {:?} has no IP address yet", vm.name),
                ));
            }
        }
        if let Some(m) = &n.machine {
            let phase = m.phase.as_deref().unwrap_or("Unknown");
            if phase != "Running" {
                out.push(finding(
                    MachineNotRunning,
                    Warning,
                    name,
                    format!("Machine {:?} is {phase}", m.name),
                ));
            }
        }
    }

    match api.state {
        ApiState::Reachable | ApiState::Unknown => {}
        ApiState::Untrusted => out.push(finding(
            WorkloadKubeconfigUntrusted,
            Error,
            None,
            format!("{}; the workload API was not contacted", api.detail),
        )),
        ApiState::HttpError => out.push(finding(
            WorkloadAPINotReady,
            Error,
            None,
            format!("the workload API answers but is not ready: {}", api.detail),
        )),
        _ => out.push(finding(
            WorkloadAPIUnreachable,
            Error,
            None,
            format!(
                "the workload API does not answer ({}): {}; if etcd lost quorum, run: kubectl etcdnet diagnose {} -n {}",
                api.state, api.detail, facts.cluster.name, facts.namespace
            ),
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::*;
    use crate::testing::{api, facts, node};

    fn codes(f: &[Finding]) -> Vec<FindingCode> {
        f.iter().map(|f| f.code).collect()
    }

    #[test]
    fn healthy_has_no_findings() {
        let f = facts(
            3,
            3,
            (1..=3)
                .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
                .collect(),
        );
        assert!(status_findings(&f, &api(ApiState::Reachable)).is_empty());
    }

    #[test]
    fn missing_machine_is_flagged_first() {
        let f = facts(
            3,
            0,
            (1..=2)
                .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
                .collect(),
        );
        let got = status_findings(&f, &api(ApiState::Timeout));
        assert_eq!(
            codes(&got),
            [
                FindingCode::ControlPlaneMachinesMissing,
                FindingCode::ControlPlaneNotReady,
                FindingCode::WorkloadAPIUnreachable
            ]
        );
        assert!(got[0]
            .message
            .starts_with("1 of 3 control-plane Machines missing"));
    }

    #[test]
    fn node_level_flags() {
        let mut nodes = vec![
            node(1, PowerState::PoweredOff, true, "Running"),
            node(2, PowerState::PoweredOn, false, "Provisioning"),
            node(3, PowerState::PoweredOn, true, "Running"),
        ];
        nodes[2].vm = None;
        let got = status_findings(&facts(3, 3, nodes), &api(ApiState::Unknown));
        assert_eq!(
            codes(&got),
            [
                FindingCode::VirtualMachineNotPoweredOn,
                FindingCode::VirtualMachineNoIP,
                FindingCode::MachineNotRunning,
                FindingCode::VirtualMachineMissing
            ]
        );
        assert_eq!(got[1].node.as_deref(), Some("tkc-cp-2"));
    }

    #[test]
    fn etcd_condition_false_is_an_error() {
        let mut f = facts(
            3,
            3,
            (1..=3)
                .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
                .collect(),
        );
        f.kcp.as_mut().unwrap().conditions.push(Condition {
            kind: "EtcdClusterHealthy".into(),
            status: "False".into(),
            reason: Some("EtcdClusterUnhealthy".into()),
            message: None,
            severity: Some("Error".into()),
            last_transition_time: None,
        });
        let got = status_findings(&f, &api(ApiState::HttpError));
        assert_eq!(
            codes(&got),
            [
                FindingCode::EtcdConditionNotTrue,
                FindingCode::WorkloadAPINotReady
            ]
        );
        assert!(got[0].message.contains("EtcdClusterUnhealthy"));
    }
}
