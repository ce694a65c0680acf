//! Findings for `status`: what an admin following
//! the support article would flag from the Supervisor side. Each rule adds findings; the order of
//! the list is the order an admin should read them in (missing machines first: the article calls
//! that "a separate issue").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::network::{
    action_text, pairs_text, ports_text, rule_text, show_command, warning_text, NetworkAssessment,
};
use crate::command::Kubectl;
use crate::supervisor::{
    ClusterFacts, ControlPlaneNode, IdentityProblem, JoinedBy, MissingPermission, PowerState,
    RolloutPhase, VmInfo,
};
use crate::workload::{ApiState, WorkloadApi};

// `Severity`, `Finding` and `FindingCode` are the contract's (`findings` of the reports): their
// doc comments are the schema's descriptions, their serde attributes the json's names.

/// How bad a finding is.
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
pub enum Severity {
    /// A problem.
    Error,
    /// Worth a look.
    Warning,
}

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What was found.
    pub code: FindingCode,
    /// How bad it is.
    pub severity: Severity,
    /// The node (Machine or VM name) it is about, when it is about one.
    pub node: Option<String>,
    /// One line, for humans.
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

/// A finding's code: scripts match on them (docs/output.md).
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
pub enum FindingCode {
    /// No KubeadmControlPlane found for the cluster.
    ControlPlaneNotFound,
    /// Fewer control-plane Machines than the KCP wants.
    ControlPlaneMachinesMissing,
    /// The KCP is not Ready.
    ControlPlaneNotReady,
    /// An etcd condition of the KCP is not True.
    EtcdConditionNotTrue,
    /// A Machine has no VirtualMachine.
    VirtualMachineMissing,
    /// A control-plane VirtualMachine has no Machine.
    MachineMissing,
    /// A VirtualMachine has no IP address.
    VirtualMachineNoIP,
    /// A VirtualMachine is not powered on.
    VirtualMachineNotPoweredOn,
    /// A Machine is not Running.
    MachineNotRunning,
    /// The workload API could not be reached.
    WorkloadAPIUnreachable,
    /// The workload API answered, not ready.
    WorkloadAPINotReady,
    /// The `<cluster>-kubeconfig` secret was refused before any request.
    // (A local file, a program, a proxy, or a server other than the Cluster's endpoint.)
    WorkloadKubeconfigUntrusted,
    /// A Machine is being deleted or provisioned, or the KCP's counts show it rolling.
    // (More replicas than desired, replicas not up to date): shown, with the phase and since
    // when, in place of the node findings it explains (no IP, not powered on, not Running).
    RolloutInProgress,
    /// A Machine with the control-plane labels is not controller-owned by the cluster's KCP.
    // (By the uid of the cluster's KubeadmControlPlane): no Machine of this control plane,
    // never probed.
    MachineNotOwnedByKCP,
    /// A VirtualMachine names a Machine's VSphereMachine as owner, not by its uid.
    // Never probed, and never taken for the Machine's VM.
    VirtualMachineOwnerMismatch,
    /// Several VirtualMachines claim one Machine's VSphereMachine.
    // None is used or probed.
    VirtualMachineAmbiguous,
    /// The Supervisor refused (403) a kind the run can do without: the permission named,
    /// and what the run did instead.
    // (VSphereMachines; verb, resource.group, namespace.) A Warning that does not count towards
    // the exit code: the user's rights, not the cluster's state.
    PermissionMissing,
    /// The VM reports an address that is no other host's: never probed at it.
    // (Loopback, unspecified, link-local, multicast, broadcast, reserved), nor anyone's peer.
    VirtualMachineAddressRefused,
    /// More Machines carry the control-plane label than the KCP's replicas plus one.
    // The KCP's own and then the oldest are probed, the rest never (named, at most a few).
    ControlPlaneMachinesBeyondReplicas,
    /// A network object of the cluster failed to realize.
    // NSX's (or CAPV's): a SubnetPort, SubnetSet, Subnet or VirtualNetwork not Ready, the
    // Namespace's `NamespaceNetworkReady` or the VSphereCluster's `ClusterNetworkReady` not
    // True, a NetworkPolicy with an `nsx-op/error` annotation (only on a Supervisor that serves
    // an NSX group).
    NetworkNotRealized,
    /// NetworkPolicies carry an `nsx-op/error` annotation: the object's own claim.
    // Not NSX's status (anyone who may edit a NetworkPolicy can write it). Always a Warning,
    // and never what makes `status` exit 1 ([`FindingCode::counts`]).
    NetworkPolicyErrorClaimed,
    /// A realized SecurityPolicy's Drop or Reject rule decides TCP 2379/2380 between the VMs.
    // (docs/nsx-policy.md.)
    SecurityPolicyBlocksEtcd,
    /// A SecurityPolicy's Drop or Reject rule would block TCP 2379/2380 but does not now.
    // Shadowed by an earlier Allow, or not realized yet.
    SecurityPolicyWouldBlockEtcd,
}

impl FindingCode {
    /// Whether a finding of this code is a problem found (the exit code, `healthy`): every code
    /// but an object's own claim, which anyone who may edit the object can write, and a
    /// permission the user lacks (the run went on without it).
    pub fn counts(self) -> bool {
        !matches!(
            self,
            FindingCode::NetworkPolicyErrorClaimed | FindingCode::PermissionMissing
        )
    }
}

/// Characters of a NetworkPolicy's `nsx-op/error` text a finding shows.
const CLAIM_CHARS: usize = 120;

/// Names of the Machines beyond the replicas a finding spells out; the rest are counted.
const BEYOND_NAMED: usize = 5;

pub(crate) fn status_findings(facts: &ClusterFacts, api: &WorkloadApi) -> Vec<Finding> {
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
            // A Machine being deleted no longer stands for a wanted node.
            let present = facts.machines_staying() as i64;
            if present < desired {
                let deleting = match facts.machines_deleting() {
                    0 => String::new(),
                    n => format!(", {n} more being deleted"),
                };
                out.push(finding(
                    ControlPlaneMachinesMissing,
                    Error,
                    None,
                    format!(
                        "{} of {desired} control-plane Machines missing (present {present}{deleting}): a separate issue from etcd networking; check the KCP {:?} and its events",
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
    if let Some(f) = beyond_replicas(facts) {
        out.push(f);
    }
    for p in &facts.missing_permissions {
        out.push(permission_finding(facts, p));
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

    if let Some(why) = facts.kcp_rollout() {
        out.push(finding(
            RolloutInProgress,
            Warning,
            None,
            format!("rollout in progress: {why}"),
        ));
    }
    for n in &facts.nodes {
        let name = Some(n.name.as_str());
        if let Some(p) = &n.join.problem {
            out.push(identity_finding(facts, n, p));
            if n.machine.is_none() {
                // No Machine of this cluster's: its VM's state is nothing to report on.
                continue;
            }
        }
        if let Some(r) = n.rollout() {
            // The rollout explains the VM's state and the Machine's phase: one finding.
            out.push(finding(
                RolloutInProgress,
                Warning,
                name,
                rollout_text(n, r),
            ));
            continue;
        }
        match (&n.machine, &n.vm) {
            (Some(_), None) if n.join.problem.is_none() => out.push(finding(
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
                    ip_text(vm)
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
            if let Some((ip, why)) = vm.refusal() {
                out.push(finding(
                    VirtualMachineAddressRefused,
                    Error,
                    name,
                    format!(
                        "VirtualMachine {:?} reports {ip} ({why}), no address of another host: the node is never probed at it, nor anyone's peer",
                        vm.name
                    ),
                ));
            } else if vm.ip.is_none() {
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
                "the workload API {}; if etcd lost quorum, run: {}",
                api.said(),
                facts.kubectl.run(&format!(
                    "etcdnet diagnose {} -n {}",
                    crate::command::name(&facts.cluster.name),
                    crate::command::namespace(&facts.namespace)
                ))
            ),
        )),
    }
    out
}

/// A VM's address for a message: `IP 198.18.0.11`, `IP 127.0.0.1 (loopback, refused)`, `no IP`.
fn ip_text(vm: &VmInfo) -> String {
    match (vm.ip, vm.refusal()) {
        (Some(ip), _) => format!("IP {ip}"),
        (None, Some((ip, why))) => format!("IP {ip} ({why}, refused)"),
        (None, None) => "no IP".into(),
    }
}

/// The finding for a kind the Supervisor refused (403): the permission, and what the run did
/// without it.
fn permission_finding(facts: &ClusterFacts, p: &MissingPermission) -> Finding {
    let instead = match p.kind.as_str() {
        "VSphereMachine" => {
            let count = |by: JoinedBy| facts.nodes.iter().filter(|n| n.join.by == Some(by)).count();
            let joins: Vec<String> = [
                (
                    JoinedBy::Uid,
                    "by the uid in the Machine's infrastructureRef",
                ),
                (
                    JoinedBy::OwnerName,
                    "by the VSphereMachine's name in the VM's owner",
                ),
                (JoinedBy::VmName, "by the VM's name"),
            ]
            .into_iter()
            .filter_map(|(by, how)| match count(by) {
                0 => None,
                n => Some(format!("{n} {how}")),
            })
            .collect();
            let joins = if joins.is_empty() {
                "none could be joined".to_string()
            } else {
                joins.join(", ")
            };
            format!(
                "the VMs were joined to the Machines without the VSphereMachines' uids ({joins})"
            )
        }
        _ => format!("the run went on without {}s", p.kind),
    };
    finding(
        FindingCode::PermissionMissing,
        Severity::Warning,
        None,
        format!(
            "forbidden: {} (403); {instead}; grant it for the full check (docs/rbac.yaml)",
            p.describe()
        ),
    )
}

/// The finding for a node whose identity does not hold (see `supervisor::join`).
fn identity_finding(facts: &ClusterFacts, n: &ControlPlaneNode, p: &IdentityProblem) -> Finding {
    let name = Some(n.name.as_str());
    match p {
        IdentityProblem::MachineNotOwned {
            machine,
            controller,
        } => {
            let kcp = match &facts.kcp {
                Some(k) => format!("KubeadmControlPlane {:?}", k.name),
                None => "KubeadmControlPlane (none was read)".into(),
            };
            finding(
                FindingCode::MachineNotOwnedByKCP,
                Severity::Error,
                name,
                format!(
                    "Machine {machine:?} carries the control-plane labels but is not controlled by the cluster's {kcp} ({}): it is never probed",
                    match controller {
                        Some(c) => format!("its controller is {c}"),
                        None => "it has no controller ownerReference".into(),
                    }
                ),
            )
        }
        IdentityProblem::OwnerMismatch {
            machine,
            vsphere_machine,
        } => {
            let vm = n.vm.as_ref().map_or(n.name.as_str(), |v| v.name.as_str());
            let ip = n.vm.as_ref().map(ip_text).unwrap_or_else(|| "no IP".into());
            finding(
                FindingCode::VirtualMachineOwnerMismatch,
                Severity::Error,
                name,
                format!(
                    "VirtualMachine {vm:?} ({ip}) names VSphereMachine {vsphere_machine:?} of Machine {machine:?} as its owner, but is not controlled by that VSphereMachine's uid: it is never probed"
                ),
            )
        }
        IdentityProblem::AmbiguousVm {
            machine,
            candidates,
        } => finding(
            FindingCode::VirtualMachineAmbiguous,
            Severity::Error,
            name,
            format!(
                "{} VirtualMachines claim Machine {machine:?}'s VSphereMachine ({}): none is taken for its VM, none is probed",
                candidates.len(),
                candidates
                    .iter()
                    .map(|c| format!("{c:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// The labelled Machines that are never probed, when there are any: how many carry the label,
/// how many the KCP wants, which are left out (a few by name).
fn beyond_replicas(facts: &ClusterFacts) -> Option<Finding> {
    let beyond = &facts.machines_beyond_replicas;
    if beyond.is_empty() {
        return None;
    }
    let probed = facts.machines_present();
    let total = probed + beyond.len();
    let wants = match (&facts.kcp, facts.desired()) {
        (Some(kcp), Some(d)) => format!("KCP {:?} wants {d}", kcp.name),
        _ => "there is no KCP replica count to go by".to_string(),
    };
    let mut names = beyond
        .iter()
        .take(BEYOND_NAMED)
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if beyond.len() > BEYOND_NAMED {
        names.push_str(&format!(" and {} more", beyond.len() - BEYOND_NAMED));
    }
    Some(finding(
        FindingCode::ControlPlaneMachinesBeyondReplicas,
        Severity::Warning,
        None,
        format!(
            "{total} Machines carry the control-plane label; {wants}: {probed} are looked at (the KCP's own first, then the oldest), {} are never probed: {names}",
            beyond.len()
        ),
    ))
}

/// One rollout node in words, its times as the objects have them (RFC 3339: the same on
/// every run, so a bundle analysed later says the same; the table adds the ages).
pub(crate) fn rollout_text(n: &ControlPlaneNode, r: &RolloutPhase) -> String {
    let phase = r.machine_phase().unwrap_or("no phase yet");
    match r {
        RolloutPhase::Deleting { since, .. } => format!(
            "rollout in progress: Machine {:?} is being deleted (phase {phase}{}); KCP removes its etcd member before the VM goes",
            n.name,
            since
                .as_deref()
                .map(|t| format!(", deletionTimestamp {t}"))
                .unwrap_or_default()
        ),
        RolloutPhase::Provisioning {
            since, waiting_for, ..
        } => format!(
            "rollout in progress: Machine {:?} is provisioning (phase {phase}, waiting for {}{})",
            n.name,
            waiting_for.describe(),
            since
                .as_deref()
                .map(|t| format!(", created {t}"))
                .unwrap_or_default()
        ),
    }
}

/// The findings of the cluster's network, when the Supervisor serves an NSX group: each
/// realization problem, each rule in effect that blocks 2379/2380 between the control-plane
/// VMs, each one that would (shadowed, not in effect as written). Paths are named by VM; the
/// SecurityPolicy findings are bounded (the first by priority, then a count).
pub(crate) fn network_findings(a: &NetworkAssessment, kubectl: &Kubectl) -> Vec<Finding> {
    use FindingCode::*;
    use Severity::*;
    let mut out = Vec::new();
    // NSX's (or CAPV's) own status, of objects tied to the cluster by uid: Errors.
    for p in a.realization.iter().filter(|p| !p.claim) {
        let mut text = format!("{} {}: {}", p.kind, p.name, p.condition);
        if let Some(s) = &p.status {
            text.push_str(&format!(" {s}"));
        }
        let why = [p.reason.as_deref(), p.message.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        if !why.is_empty() {
            text.push_str(&format!(" ({})", why.replace('\n', " ")));
        }
        text.push_str(match p.vm {
            Some(_) => ": NSX did not realize this VM's network port, a cause of its own",
            None => ": NSX did not realize the cluster's network",
        });
        out.push(finding(NetworkNotRealized, Error, p.vm.as_deref(), text));
    }
    // A NetworkPolicy's annotation: the object's claim, one Warning for them all, each text
    // bounded (it is the editor's text, not NSX's); the renderers make it visible, as every
    // finding's message (analyse sits below render).
    let claims: Vec<String> = a
        .realization
        .iter()
        .filter(|p| p.claim)
        .map(|p| {
            let text = p.message.as_deref().unwrap_or_default();
            let short: String = text.chars().take(CLAIM_CHARS).collect();
            let cut = if short.len() < text.len() { "…" } else { "" };
            let shown = short.replace('"', "\\\"");
            if p.name.is_empty() {
                text.to_string()
            } else {
                format!("NetworkPolicy {}: {} \"{shown}{cut}\"", p.name, p.condition)
            }
        })
        .collect();
    if !claims.is_empty() {
        out.push(finding(
            NetworkPolicyErrorClaimed,
            Warning,
            None,
            format!(
                "{}: the object's own claim, not NSX's status (anyone who may edit a NetworkPolicy can write this annotation; NetworkPolicies are realized for pods, not between the control-plane VMs); check it: {}",
                claims.join("; "),
                kubectl.run(&format!(
                    "get networkpolicies -n {} -o yaml",
                    crate::command::namespace(&a.evaluation.namespace)
                ))
            ),
        ));
    }
    for b in a.evaluation.blocking() {
        out.push(finding(
            SecurityPolicyBlocksEtcd,
            Error,
            None,
            format!(
                "{}: {} on {} blocks {} path(s) between the control-plane VMs ({}); check it: {}",
                rule_text(&b.rule),
                action_text(&b.rule),
                ports_text(&b.paths),
                b.paths.len(),
                pairs_text(&b.paths, a.evaluation.vms.len()),
                show_command(kubectl, &b.rule)
            ),
        ));
    }
    for w in a.evaluation.warnings() {
        out.push(finding(
            SecurityPolicyWouldBlockEtcd,
            Warning,
            None,
            warning_text(w, a.evaluation.vms.len()),
        ));
    }
    // Bounded whatever the namespace holds: the first rules of each kind (by priority, the
    // evaluation's order), then one finding with the count of the rest.
    const SHOWN: usize = 8;
    for (code, what, more_kept) in [
        (
            SecurityPolicyBlocksEtcd,
            "block paths between the control-plane VMs (-o json: networkPolicy.evaluation.blocking)",
            0,
        ),
        (
            SecurityPolicyWouldBlockEtcd,
            "would block paths between the control-plane VMs (shadowed, or not in effect; -o json: networkPolicy.evaluation.covering)",
            a.evaluation.warnings_not_listed,
        ),
    ] {
        let mut seen = 0;
        out.retain(|f| {
            if f.code != code {
                return true;
            }
            seen += 1;
            seen <= SHOWN
        });
        let dropped = seen.saturating_sub(SHOWN) + more_kept;
        if dropped > 0 {
            let severity = if code == SecurityPolicyBlocksEtcd { Error } else { Warning };
            out.push(finding(
                code,
                severity,
                None,
                format!("and {dropped} more SecurityPolicy rules {what}"),
            ));
        }
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

    fn provisioning(i: u8, waiting_for: ProvisioningStep) -> ControlPlaneNode {
        let mut n = node(i, PowerState::PoweredOff, false, "Provisioning");
        n.machine.as_mut().unwrap().rollout = Some(RolloutPhase::Provisioning {
            since: Some("2025-06-03T08:30:00Z".into()),
            machine_phase: Some("Provisioning".into()),
            waiting_for,
        });
        n
    }

    fn deleting(i: u8) -> ControlPlaneNode {
        let mut n = node(i, PowerState::PoweredOn, true, "Deleting");
        n.machine.as_mut().unwrap().rollout = Some(RolloutPhase::Deleting {
            since: Some("2025-06-03T09:02:00Z".into()),
            machine_phase: Some("Deleting".into()),
        });
        n
    }

    /// Scale-up: the KCP's 4 for 3 is said once, the new Machine once, in place of its VM's
    /// power and address and its phase; the three running nodes say nothing.
    #[test]
    fn a_provisioning_machine_is_a_rollout_not_a_fault() {
        let mut nodes: Vec<ControlPlaneNode> = (1..=3)
            .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
            .collect();
        nodes.push(provisioning(4, ProvisioningStep::PowerOn));
        let got = status_findings(&facts(3, 3, nodes), &api(ApiState::Reachable));
        assert_eq!(
            codes(&got),
            [
                FindingCode::RolloutInProgress,
                FindingCode::RolloutInProgress
            ]
        );
        assert_eq!(
            got[0].message,
            "rollout in progress: KubeadmControlPlane tkc-cp has 4 replicas for 3 desired"
        );
        assert_eq!(got[0].node, None);
        assert_eq!(got[1].node.as_deref(), Some("tkc-cp-4"));
        assert_eq!(
            got[1].message,
            "rollout in progress: Machine \"tkc-cp-4\" is provisioning (phase Provisioning, waiting for its VM to power on, created 2025-06-03T08:30:00Z)"
        );
        assert!(got.iter().all(|f| f.severity == Severity::Warning));
    }

    /// Scale-down: the Machine being deleted is a rollout, and is not counted against the KCP's
    /// replicas; without its replacement the missing one is named as such.
    #[test]
    fn a_deleting_machine_is_a_rollout_and_no_longer_counted() {
        let mut nodes: Vec<ControlPlaneNode> = (2..=4)
            .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
            .collect();
        nodes.insert(0, deleting(1));
        let got = status_findings(&facts(3, 3, nodes.clone()), &api(ApiState::Reachable));
        assert_eq!(
            codes(&got),
            [
                FindingCode::RolloutInProgress,
                FindingCode::RolloutInProgress
            ]
        );
        assert_eq!(got[1].node.as_deref(), Some("tkc-cp-1"));
        assert!(
            got[1].message.contains(
                "is being deleted (phase Deleting, deletionTimestamp 2025-06-03T09:02:00Z)"
            ),
            "{}",
            got[1].message
        );

        nodes.pop();
        let got = status_findings(&facts(3, 3, nodes), &api(ApiState::Reachable));
        assert_eq!(
            codes(&got),
            [
                FindingCode::ControlPlaneMachinesMissing,
                FindingCode::RolloutInProgress
            ]
        );
        assert!(
            got[0].message.starts_with(
                "1 of 3 control-plane Machines missing (present 2, 1 more being deleted)"
            ),
            "{}",
            got[0].message
        );
    }

    /// A joined Machine whose VM is off is no rollout: still an error.
    #[test]
    fn a_powered_off_running_node_stays_an_error() {
        let nodes = vec![
            node(1, PowerState::PoweredOff, false, "Running"),
            node(2, PowerState::PoweredOn, true, "Running"),
            node(3, PowerState::PoweredOn, true, "Running"),
        ];
        let got = status_findings(&facts(3, 3, nodes), &api(ApiState::Reachable));
        assert!(!codes(&got).contains(&FindingCode::RolloutInProgress));
        assert!(codes(&got).contains(&FindingCode::VirtualMachineNotPoweredOn));
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
