//! A control-plane Machine's rollout phase ([`RolloutPhase`]): pure, over the Machine as CAPI
//! writes it (v1beta1 and v1beta2 keep `status.phase` and `status.nodeRef`) and its VM as read by
//! [`super::extract`].

use kube::api::DynamicObject;
use serde_json::Value;

use super::extract::{phase, str_at};
use super::facts::{ControlPlaneNode, PowerState, ProvisioningStep, RolloutPhase, VmInfo};

/// Sets the rollout phase of each node's Machine from its object among `machines` (the
/// cluster's control-plane Machines, by name).
pub(crate) fn fill(nodes: &mut [ControlPlaneNode], machines: &[&DynamicObject]) {
    for n in nodes {
        let vm = n.vm.as_ref();
        let Some(m) = n.machine.as_mut() else {
            continue;
        };
        let obj = machines
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(m.name.as_str()));
        m.rollout = obj.and_then(|o| {
            let meta = serde_json::to_value(&o.metadata).unwrap_or_default();
            machine_rollout(&meta, &o.data, vm)
        });
    }
}

/// CAPI's Machine phases before the Machine is a Node (`MachinePhasePending`,
/// `MachinePhaseProvisioning`, `MachinePhaseProvisioned` in `machine_phase_types.go`, the same
/// in v1beta1 and v1beta2). `Running` needs a nodeRef; `Failed` and `Unknown` are no rollout.
const PROVISIONING_PHASES: [&str; 3] = ["Pending", "Provisioning", "Provisioned"];

/// A Machine's rollout phase (see [`RolloutPhase`]) from its metadata (`meta`: the object's
/// `metadata`, as JSON), the rest of the object (`data`) and its VM when it has one. Deleting
/// wins over provisioning: a Machine deleted before it joined is on its way out.
pub(crate) fn machine_rollout(
    meta: &Value,
    data: &Value,
    vm: Option<&VmInfo>,
) -> Option<RolloutPhase> {
    let machine_phase = phase(data);
    let deletion = str_at(meta, &["deletionTimestamp"]).map(str::to_string);
    if deletion.is_some() || machine_phase.as_deref() == Some("Deleting") {
        return Some(RolloutPhase::Deleting {
            since: deletion,
            machine_phase,
        });
    }
    let joined = str_at(data, &["status", "nodeRef", "name"]).is_some();
    let provisioning = machine_phase
        .as_deref()
        .is_some_and(|p| PROVISIONING_PHASES.contains(&p));
    if joined || !provisioning {
        return None;
    }
    let waiting_for = match vm {
        None => ProvisioningStep::VirtualMachine,
        Some(vm) if vm.power != PowerState::PoweredOn => ProvisioningStep::PowerOn,
        Some(vm) if vm.ip.is_none() => ProvisioningStep::IpAddress,
        Some(_) => ProvisioningStep::NodeJoin,
    };
    Some(RolloutPhase::Provisioning {
        since: str_at(meta, &["creationTimestamp"]).map(str::to_string),
        machine_phase,
        waiting_for,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vm(power: PowerState, ip: Option<&str>) -> VmInfo {
        VmInfo {
            name: "m".into(),
            ip: ip.map(|s| s.parse().unwrap()),
            power,
            class: None,
            owner: None,
            refused_ip: None,
            ..VmInfo::default()
        }
    }

    /// CAPI sets `Deleting` from the deletionTimestamp; either says the Machine is going, and
    /// going wins over not yet joined.
    #[test]
    fn rollout_deleting() {
        let running = json!({"status": {"phase": "Running", "nodeRef": {"name": "n"}}});
        let meta = json!({"deletionTimestamp": "2025-06-03T09:02:00Z", "finalizers": ["machine.cluster.x-k8s.io"]});
        let on = vm(PowerState::PoweredOn, Some("198.18.0.11"));
        assert_eq!(
            machine_rollout(&meta, &running, Some(&on)),
            Some(RolloutPhase::Deleting {
                since: Some("2025-06-03T09:02:00Z".into()),
                machine_phase: Some("Running".into()),
            }),
            "the timestamp before CAPI's next reconcile"
        );
        let deleting = json!({"status": {"phase": "Deleting"}});
        assert_eq!(
            machine_rollout(&json!({}), &deleting, None),
            Some(RolloutPhase::Deleting {
                since: None,
                machine_phase: Some("Deleting".into()),
            })
        );
        let provisioning = json!({"status": {"phase": "Provisioning"}});
        assert!(machine_rollout(&meta, &provisioning, None)
            .unwrap()
            .is_deleting());
    }

    /// A Machine without a nodeRef in CAPI's provisioning phases waits for the next thing it
    /// lacks, VM first.
    #[test]
    fn rollout_provisioning_steps() {
        let meta = json!({"creationTimestamp": "2025-06-03T08:30:00Z"});
        let step = |phase: &str, vm: Option<&VmInfo>| match machine_rollout(
            &meta,
            &json!({"status": {"phase": phase}}),
            vm,
        ) {
            Some(RolloutPhase::Provisioning {
                since,
                machine_phase,
                waiting_for,
            }) => {
                assert_eq!(since.as_deref(), Some("2025-06-03T08:30:00Z"));
                assert_eq!(machine_phase.as_deref(), Some(phase));
                Some(waiting_for)
            }
            other => {
                assert_eq!(other, None, "{phase}");
                None
            }
        };
        let off = vm(PowerState::PoweredOff, None);
        let no_ip = vm(PowerState::PoweredOn, None);
        let up = vm(PowerState::PoweredOn, Some("198.18.0.14"));
        assert_eq!(
            step("Pending", None),
            Some(ProvisioningStep::VirtualMachine)
        );
        assert_eq!(
            step("Provisioning", Some(&off)),
            Some(ProvisioningStep::PowerOn)
        );
        assert_eq!(
            step("Provisioning", Some(&vm(PowerState::Unknown, None))),
            Some(ProvisioningStep::PowerOn)
        );
        assert_eq!(
            step("Provisioning", Some(&no_ip)),
            Some(ProvisioningStep::IpAddress)
        );
        assert_eq!(
            step("Provisioned", Some(&up)),
            Some(ProvisioningStep::NodeJoin)
        );
    }

    /// Faults are no rollout: a joined Machine whose VM is off, a Failed one, one with no phase
    /// or a phase nobody wrote (a served object may say anything).
    #[test]
    fn rollout_is_not_a_fault() {
        let meta = json!({"creationTimestamp": "2025-06-03T08:30:00Z"});
        let off = vm(PowerState::PoweredOff, None);
        for data in [
            json!({"status": {"phase": "Running", "nodeRef": {"name": "n"}}}),
            json!({"status": {"phase": "Provisioned", "nodeRef": {"name": "n"}}}),
            json!({"status": {"phase": "Failed"}}),
            json!({"status": {"phase": "Unknown"}}),
            json!({"status": {"phase": "provisioning\u{1b}[2J"}}),
            json!({"status": {}}),
            json!({}),
        ] {
            assert_eq!(machine_rollout(&meta, &data, Some(&off)), None, "{data}");
        }
        // An empty deletionTimestamp is no timestamp.
        let running = json!({"status": {"phase": "Running", "nodeRef": {"name": "n"}}});
        assert_eq!(
            machine_rollout(&json!({"deletionTimestamp": ""}), &running, None),
            None
        );
    }
}
