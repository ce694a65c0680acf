//! Findings for `status`: what an admin following
//! the support article would flag from the Supervisor side. Each rule adds findings; the order of
//! the list is the order an admin should read them in (missing machines first: the article calls
//! that "a separate issue").

use serde::{Deserialize, Serialize};

use crate::supervisor::{ClusterFacts, PowerState};
use crate::workload::{ApiState, WorkloadApi};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Severity {
    Error,
    Warning,
}

/// One thing found wrong. `code` is part of the JSON contract: scripts match on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    /// The node (Machine or VM name) it is about, when it is about one.
    pub node: Option<String>,
    pub message: String,
}

fn finding(code: &str, severity: Severity, node: Option<&str>, message: String) -> Finding {
    Finding {
        code: code.to_string(),
        severity,
        node: node.map(str::to_string),
        message,
    }
}

/// Finding codes of `status` (documented in docs/output.md).
pub mod codes {
    pub const KCP_NOT_FOUND: &str = "ControlPlaneNotFound";
    pub const MACHINES_MISSING: &str = "ControlPlaneMachinesMissing";
    pub const CONTROL_PLANE_NOT_READY: &str = "ControlPlaneNotReady";
    pub const ETCD_CONDITION: &str = "EtcdConditionNotTrue";
    pub const VM_MISSING: &str = "VirtualMachineMissing";
    pub const MACHINE_MISSING: &str = "MachineMissing";
    pub const VM_NO_IP: &str = "VirtualMachineNoIP";
    pub const VM_NOT_POWERED_ON: &str = "VirtualMachineNotPoweredOn";
    pub const MACHINE_NOT_RUNNING: &str = "MachineNotRunning";
    pub const WORKLOAD_API_DOWN: &str = "WorkloadAPIUnreachable";
    pub const WORKLOAD_API_NOT_READY: &str = "WorkloadAPINotReady";
}

pub fn status_findings(facts: &ClusterFacts, api: &WorkloadApi) -> Vec<Finding> {
    use codes::*;
    use Severity::*;
    let mut out = Vec::new();

    match (&facts.kcp, facts.desired()) {
        (None, _) => out.push(finding(
            KCP_NOT_FOUND,
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
                    MACHINES_MISSING,
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
                    CONTROL_PLANE_NOT_READY,
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
                    ETCD_CONDITION,
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
                VM_MISSING,
                Error,
                name,
                format!("Machine {:?} has no control-plane VirtualMachine", n.name),
            )),
            (None, Some(vm)) => out.push(finding(
                MACHINE_MISSING,
                Warning,
                name,
                format!("VirtualMachine {:?} has no control-plane Machine", vm.name),
            )),
            _ => {}
        }
        if let Some(vm) = &n.vm {
            if vm.power != PowerState::PoweredOn {
                out.push(finding(
                    VM_NOT_POWERED_ON,
                    Error,
                    name,
                    format!("VirtualMachine {:?} is {}", vm.name, vm.power),
                ));
            }
            if vm.ip.is_none() {
                out.push(finding(
                    VM_NO_IP,
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
                    MACHINE_NOT_RUNNING,
                    Warning,
                    name,
                    format!("Machine {:?} is {phase}", m.name),
                ));
            }
        }
    }

    match api.state {
        ApiState::Reachable | ApiState::Unknown => {}
        ApiState::HttpError => out.push(finding(
            WORKLOAD_API_NOT_READY,
            Error,
            None,
            format!("the workload API answers but is not ready: {}", api.detail),
        )),
        _ => out.push(finding(
            WORKLOAD_API_DOWN,
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

    fn facts(desired: i64, ready: i64, nodes: Vec<ControlPlaneNode>) -> ClusterFacts {
        ClusterFacts {
            context: "sv".into(),
            namespace: "ns".into(),
            cluster: ClusterInfo {
                name: "tkc".into(),
                phase: None,
                control_plane_endpoint: None,
            },
            apis: ApiVersions {
                virtual_machine: "vmoperator.vmware.com/v1alpha3".into(),
                cluster: "cluster.x-k8s.io/v1beta1".into(),
                machine: "cluster.x-k8s.io/v1beta1".into(),
                control_plane: None,
                vm_labels: Some(VmLabelScheme::Capv),
            },
            kcp: Some(KcpInfo {
                name: "tkc-cp".into(),
                api_version: "controlplane.cluster.x-k8s.io/v1beta1".into(),
                desired: Some(desired),
                replicas: Some(nodes.len() as i64),
                ready: Some(ready),
                available: Some(ready),
                up_to_date: Some(ready),
                version: None,
                conditions: vec![],
            }),
            kcp_missing_reason: None,
            nodes,
        }
    }

    fn node(i: u8, power: PowerState, ip: bool, phase: &str) -> ControlPlaneNode {
        let name = format!("tkc-cp-{i}");
        ControlPlaneNode {
            name: name.clone(),
            machine: Some(MachineInfo {
                name: name.clone(),
                phase: Some(phase.into()),
                node_name: None,
                addresses: vec![],
                infrastructure_name: None,
                version: None,
                failure_domain: None,
            }),
            vm: Some(VmInfo {
                name,
                ip: ip.then(|| format!("198.18.0.1{i}").parse().unwrap()),
                power,
                class: None,
                owner: None,
            }),
        }
    }

    fn api(state: ApiState) -> WorkloadApi {
        WorkloadApi {
            state,
            server: None,
            path: None,
            http_status: None,
            elapsed_ms: None,
            detail: "d".into(),
        }
    }

    fn codes(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.code.as_str()).collect()
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
                codes::MACHINES_MISSING,
                codes::CONTROL_PLANE_NOT_READY,
                codes::WORKLOAD_API_DOWN
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
                codes::VM_NOT_POWERED_ON,
                codes::VM_NO_IP,
                codes::MACHINE_NOT_RUNNING,
                codes::VM_MISSING
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
        });
        let got = status_findings(&f, &api(ApiState::HttpError));
        assert_eq!(
            codes(&got),
            [codes::ETCD_CONDITION, codes::WORKLOAD_API_NOT_READY]
        );
        assert!(got[0].message.contains("EtcdClusterUnhealthy"));
    }
}
