//! Joins control-plane Machines with their VirtualMachines into one row per node, by uid.
//!
//! What CAPI, CAPV and vm-operator write, and what the join follows:
//! - KCP creates each control-plane Machine with a controller ownerReference to itself
//!   (`controller: true`, the KCP's uid). A Machine carrying the control-plane labels without
//!   it is no Machine of this control plane: anyone who can edit the namespace can create one.
//!   It is a row of its own with the problem [`IdentityProblem::MachineNotOwned`], no `machine`
//!   and no VM, and never a target.
//! - The Machine names its VSphereMachine in `spec.infrastructureRef` (CAPI v1beta1 an
//!   ObjectReference with the uid, v1beta2 `apiGroup`/`kind`/`name` only). The VSphereMachine's
//!   uid is read from the object ([`Anchors::vsphere_machines`]), else from the reference.
//! - CAPV creates the VirtualMachine with a controller ownerReference to the VSphereMachine
//!   (`ctrlutil.SetControllerReference`). The Machine's VM is the one VM controlled by that uid
//!   ([`JoinedBy::Uid`]). Names prove nothing: an editor may create a VM naming the
//!   VSphereMachine as its owner with any uid. Such a VM is [`IdentityProblem::OwnerMismatch`];
//!   two VMs controlled by the uid (an editor may copy the uid too) are
//!   [`IdentityProblem::AmbiguousVm`] and neither is used: never a guess.
//! - Only when there is no uid at all to go by (the VSphereMachines were not read: an older
//!   Supervisor that does not serve them, an evidence bundle written before they were read; and
//!   the Machine's reference carries none) is the VM found as before the uid rule: the VM whose
//!   VSphereMachine ownerReference names the Machine's infrastructure ([`JoinedBy::OwnerName`]),
//!   else the VM without one that bears that name or the Machine's ([`JoinedBy::VmName`]); more
//!   than one such VM is [`IdentityProblem::AmbiguousVm`] too. The row says how it was joined.
//!
//! Nothing is dropped: a Machine without a VM and a VM without a Machine each get a row of their
//! own, because either is a finding.

use std::collections::BTreeMap;

use kube::api::DynamicObject;

use super::extract::{self, InfraRef};
use super::facts::{
    AddressSource, ControlPlaneNode, IdentityProblem, Join, JoinedBy, MachineInfo, PowerState,
    VmInfo,
};

/// An ownerReference, as the join reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub kind: String,
    pub name: String,
    /// None when empty (the API server refuses that; a bundle may say anything).
    pub uid: Option<String>,
    pub controller: bool,
}

impl Owner {
    fn describe(&self) -> String {
        format!(
            "{} {} (uid {})",
            self.kind,
            self.name,
            self.uid.as_deref().unwrap_or("none")
        )
    }
}

/// A control-plane Machine with what the join checks.
#[derive(Debug, Clone)]
pub(crate) struct MachineObject {
    pub info: MachineInfo,
    pub owners: Vec<Owner>,
    pub infra: Option<InfraRef>,
}

/// A control-plane VM with its ownerReferences.
#[derive(Debug, Clone)]
pub(crate) struct VmObject {
    pub info: VmInfo,
    pub owners: Vec<Owner>,
}

/// What Machines and VMs are checked against.
#[derive(Debug, Clone, Default)]
pub(crate) struct Anchors {
    /// The uid of the cluster's KubeadmControlPlane; None when it was not read, and then no
    /// Machine is owned by it.
    pub kcp_uid: Option<String>,
    /// The VSphereMachines read (name → uid); None when they were not read (not served, or a
    /// bundle from before they were).
    pub vsphere_machines: Option<BTreeMap<String, String>>,
}

/// What a Machine's VM is looked for by.
enum Key {
    /// The uid of its VSphereMachine (or whatever its infrastructure object is).
    Uid(String),
    /// The VSphereMachines were read and its own is not among them, nor is a uid in its
    /// reference: it has no VM (vm-operator's VM goes with its owner).
    Missing,
    /// No uid to be had: names, as before the uid rule.
    Names,
}

pub(crate) fn join(
    anchors: &Anchors,
    machines: Vec<MachineObject>,
    vms: Vec<VmObject>,
) -> Vec<ControlPlaneNode> {
    let mut problems: Vec<Option<IdentityProblem>> = vec![None; vms.len()];
    let mut taken = vec![false; vms.len()];
    let mut nodes = Vec::new();
    for m in machines {
        if !owned_by_kcp(&m, anchors) {
            let controller = m.owners.iter().find(|o| o.controller).map(Owner::describe);
            nodes.push(ControlPlaneNode {
                name: m.info.name.clone(),
                machine: None,
                vm: None,
                join: Join {
                    by: None,
                    problem: Some(IdentityProblem::MachineNotOwned {
                        machine: m.info.name,
                        controller,
                    }),
                },
            });
            continue;
        }
        let infra_kind = m
            .infra
            .as_ref()
            .map_or("VSphereMachine", |r| r.kind.as_str());
        let infra_name = m
            .info
            .infrastructure_name
            .clone()
            .unwrap_or_else(|| m.info.name.clone());
        let names_infra = |v: &VmObject| {
            v.owners
                .iter()
                .any(|o| o.kind == infra_kind && o.name == infra_name)
        };
        let (candidates, by): (Vec<usize>, JoinedBy) = match key(&m, anchors) {
            Key::Uid(uid) => {
                let controls = |v: &VmObject| {
                    v.owners
                        .iter()
                        .any(|o| o.controller && o.uid.as_deref() == Some(uid.as_str()))
                };
                for (i, v) in vms.iter().enumerate() {
                    if names_infra(v) && !controls(v) {
                        problems[i] = Some(IdentityProblem::OwnerMismatch {
                            machine: m.info.name.clone(),
                            vsphere_machine: infra_name.clone(),
                        });
                    }
                }
                let found = (0..vms.len()).filter(|&i| controls(&vms[i])).collect();
                (found, JoinedBy::Uid)
            }
            Key::Missing => {
                for (i, v) in vms.iter().enumerate() {
                    if names_infra(v) {
                        problems[i] = Some(IdentityProblem::OwnerMismatch {
                            machine: m.info.name.clone(),
                            vsphere_machine: infra_name.clone(),
                        });
                    }
                }
                (Vec::new(), JoinedBy::Uid)
            }
            Key::Names => {
                let by_owner: Vec<usize> = (0..vms.len())
                    .filter(|&i| !taken[i] && names_infra(&vms[i]))
                    .collect();
                if by_owner.is_empty() {
                    let by_name = (0..vms.len())
                        .filter(|&i| {
                            let v = &vms[i];
                            !taken[i]
                                && !v.owners.iter().any(|o| o.kind == infra_kind)
                                && (v.info.name == infra_name || v.info.name == m.info.name)
                        })
                        .collect();
                    (by_name, JoinedBy::VmName)
                } else {
                    (by_owner, JoinedBy::OwnerName)
                }
            }
        };
        let mut join = Join::default();
        let vm = match candidates.as_slice() {
            [] => None,
            [i] if !taken[*i] => {
                taken[*i] = true;
                join.by = Some(by);
                Some(with_machine_address(vms[*i].info.clone(), &m.info))
            }
            // Its one VM is another Machine's already (two Machines naming one VSphereMachine).
            [_] => None,
            several => {
                let problem = IdentityProblem::AmbiguousVm {
                    machine: m.info.name.clone(),
                    candidates: several.iter().map(|&i| vms[i].info.name.clone()).collect(),
                };
                for &i in several {
                    problems[i] = Some(problem.clone());
                }
                join.problem = Some(problem);
                None
            }
        };
        nodes.push(ControlPlaneNode {
            name: m.info.name.clone(),
            machine: Some(m.info),
            vm,
            join,
        });
    }
    for ((v, taken), problem) in vms.into_iter().zip(taken).zip(problems) {
        if !taken {
            nodes.push(ControlPlaneNode {
                name: v.info.name.clone(),
                machine: None,
                vm: Some(v.info),
                join: Join { by: None, problem },
            });
        }
    }
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    nodes
}

/// The VM, when powered on, with its Machine's `status.addresses` as its address when neither
/// its guest nor its `status.network.config` gives one ([`extract::machine_address`]): the VM is the Machine's
/// (joined), so the Machine's last known address is this VM's. A refused address is never
/// replaced (the guest's report is what is in doubt), and the Machine's is refused by the same
/// rule.
fn with_machine_address(mut vm: VmInfo, m: &MachineInfo) -> VmInfo {
    // Only for a VM that is on (see [`vm_object`]).
    if vm.ip.is_none() && vm.refused_ip.is_none() && vm.power == PowerState::PoweredOn {
        let (ip, refused) = extract::machine_address(m);
        if ip.is_some() || refused.is_some() {
            vm.ip = ip;
            vm.refused_ip = refused;
            vm.ip_source = AddressSource::MachineAddress;
        }
    }
    vm
}

/// An object's ownerReferences.
fn owners(o: &DynamicObject) -> Vec<Owner> {
    o.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| Owner {
            kind: r.kind.clone(),
            name: r.name.clone(),
            uid: Some(r.uid.clone()).filter(|u| !u.is_empty()),
            controller: r.controller == Some(true),
        })
        .collect()
}

/// A Machine object as the join reads it.
pub(crate) fn machine_object(o: &DynamicObject) -> MachineObject {
    MachineObject {
        info: extract::machine(o.metadata.name.as_deref().unwrap_or_default(), &o.data),
        owners: owners(o),
        infra: extract::infrastructure_ref(&o.data),
    }
}

/// A VirtualMachine object as the join reads it; its address split by the address rule
/// ([`extract::vm_address`]), so no later stage sees a refused one.
pub(crate) fn vm_object(o: &DynamicObject) -> VmObject {
    let owners = owners(o);
    let power = extract::vm_power(&o.data);
    let (mut ip, mut refused_ip, mut ip_source) = extract::vm_address_sourced(&o.data);
    // A VM that is not on has no address to reach: vm-operator keeps `config` for it too, but
    // only a running guest that stopped reporting (hung, VMware Tools down) is reached at it.
    if ip_source != AddressSource::Guest && power != PowerState::PoweredOn {
        (ip, refused_ip, ip_source) = (None, None, AddressSource::Guest);
    }
    VmObject {
        info: VmInfo {
            name: o.metadata.name.clone().unwrap_or_default(),
            ip,
            power,
            class: extract::vm_class(&o.data),
            owner: owners
                .iter()
                .find(|o| o.kind == "VSphereMachine")
                .map(|o| o.name.clone()),
            refused_ip,
            ip_source,
            host: extract::vm_host(&o.data),
            zone: extract::vm_zone(&o.data),
        },
        owners,
    }
}

/// KCP made it: a controller ownerReference with the KCP's uid.
fn owned_by_kcp(m: &MachineObject, anchors: &Anchors) -> bool {
    anchors.kcp_uid.as_deref().is_some_and(|kcp| {
        m.owners
            .iter()
            .any(|o| o.controller && o.uid.as_deref() == Some(kcp))
    })
}

fn key(m: &MachineObject, anchors: &Anchors) -> Key {
    let Some(r) = &m.infra else {
        return Key::Names;
    };
    let read = match &anchors.vsphere_machines {
        Some(read) if r.kind == "VSphereMachine" => Some(read.get(&r.name)),
        _ => None,
    };
    match (read, &r.uid) {
        (Some(Some(uid)), _) | (None | Some(None), Some(uid)) => Key::Uid(uid.clone()),
        (Some(None), None) => Key::Missing,
        (None, None) => Key::Names,
    }
}

#[cfg(test)]
#[path = "join_tests.rs"]
mod tests;
