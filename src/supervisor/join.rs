//! Joins control-plane Machines with their VirtualMachines into one row per node.
//!
//! In Supervisor mode CAPV creates one VSphereMachine per Machine (the Machine points at it through
//! `spec.infrastructureRef.name`), and the VirtualMachine takes the VSphereMachine's name and an
//! ownerReference to it. So a Machine and a VM belong together when the VM's
//! owner (or, failing that, its name) equals the Machine's infrastructure name (or, failing that,
//! the Machine's name). Nothing is dropped: a Machine without a VM and a VM without a Machine each
//! get a row of their own, because either is a finding.

use super::facts::{ControlPlaneNode, MachineInfo, VmInfo};

pub fn join(machines: Vec<MachineInfo>, vms: Vec<VmInfo>) -> Vec<ControlPlaneNode> {
    let mut vms: Vec<Option<VmInfo>> = vms.into_iter().map(Some).collect();
    let mut nodes = Vec::new();
    for m in machines {
        let key = m
            .infrastructure_name
            .clone()
            .unwrap_or_else(|| m.name.clone());
        let matches = |vm: &VmInfo| {
            vm.owner.as_deref() == Some(key.as_str()) || vm.name == key || vm.name == m.name
        };
        // Prefer the owner reference, the strongest link, before falling back to names.
        let pos = vms
            .iter()
            .position(|v| {
                v.as_ref()
                    .is_some_and(|v| v.owner.as_deref() == Some(key.as_str()))
            })
            .or_else(|| vms.iter().position(|v| v.as_ref().is_some_and(matches)));
        let vm = pos.and_then(|i| vms[i].take());
        nodes.push(ControlPlaneNode {
            name: m.name.clone(),
            machine: Some(m),
            vm,
        });
    }
    nodes.extend(vms.into_iter().flatten().map(|vm| ControlPlaneNode {
        name: vm.name.clone(),
        machine: None,
        vm: Some(vm),
    }));
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::facts::PowerState;

    fn machine(name: &str, infra: Option<&str>) -> MachineInfo {
        MachineInfo {
            name: name.into(),
            phase: Some("Running".into()),
            node_name: Some(name.into()),
            addresses: vec![],
            infrastructure_name: infra.map(Into::into),
            version: None,
            failure_domain: None,
            etcd_conditions: vec![],
            rollout: None,
        }
    }

    fn vm(name: &str, owner: Option<&str>, ip: Option<&str>) -> VmInfo {
        VmInfo {
            name: name.into(),
            ip: ip.map(|s| s.parse().unwrap()),
            power: PowerState::PoweredOn,
            class: None,
            owner: owner.map(Into::into),
        }
    }

    #[test]
    fn joins_by_owner_then_name() {
        let nodes = join(
            vec![
                machine("tkc-cp-1", Some("tkc-vsm-1")),
                machine("tkc-cp-2", None),
                machine("tkc-cp-3", Some("tkc-cp-3")),
            ],
            vec![
                vm("tkc-cp-3", None, Some("198.18.0.13")),
                vm("some-vm", Some("tkc-vsm-1"), Some("198.18.0.11")),
                vm("tkc-cp-2", Some("tkc-cp-2"), Some("198.18.0.12")),
            ],
        );
        let pairs: Vec<_> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.vm.as_ref().map(|v| v.name.as_str())))
            .collect();
        assert_eq!(
            pairs,
            [
                ("tkc-cp-1", Some("some-vm")),
                ("tkc-cp-2", Some("tkc-cp-2")),
                ("tkc-cp-3", Some("tkc-cp-3"))
            ]
        );
    }

    #[test]
    fn keeps_the_unmatched_on_both_sides() {
        let nodes = join(
            vec![machine("tkc-cp-1", None), machine("tkc-cp-2", None)],
            vec![
                vm("tkc-cp-1", None, None),
                vm("orphan", None, Some("198.18.0.19")),
            ],
        );
        assert_eq!(nodes.len(), 3);
        let cp1 = nodes.iter().find(|n| n.name == "tkc-cp-1").unwrap();
        assert!(
            cp1.vm.is_some() && cp1.ip().is_none(),
            "a VM without an IP stays"
        );
        let cp2 = nodes.iter().find(|n| n.name == "tkc-cp-2").unwrap();
        assert!(cp2.vm.is_none());
        let orphan = nodes.iter().find(|n| n.name == "orphan").unwrap();
        assert!(orphan.machine.is_none());
    }

    #[test]
    fn a_vm_is_used_once() {
        let nodes = join(
            vec![machine("a", Some("x")), machine("b", Some("x"))],
            vec![vm("x", None, None)],
        );
        assert_eq!(nodes.iter().filter(|n| n.vm.is_some()).count(), 1);
    }
}
