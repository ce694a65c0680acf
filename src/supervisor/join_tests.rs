//! The join rules (see the module doc), one test per rule: each fails if the join matches a VM
//! by its owner's *name* or trusts a Machine for its label alone.

use super::*;
use crate::supervisor::facts::PowerState;

const KCP: &str = "kcp-uid";

fn owner(kind: &str, name: &str, uid: &str, controller: bool) -> Owner {
    Owner {
        kind: kind.into(),
        name: name.into(),
        uid: (!uid.is_empty()).then(|| uid.into()),
        controller,
    }
}

/// Machine `name` owned by the KCP, its VSphereMachine `vsm` (reference without uid: v1beta2).
fn machine(name: &str, vsm: Option<&str>) -> MachineObject {
    MachineObject {
        info: crate::testing::machine(name, "Running"),
        owners: vec![owner("KubeadmControlPlane", "kcp", KCP, true)],
        infra: vsm.map(|v| InfraRef {
            kind: "VSphereMachine".into(),
            name: v.into(),
            uid: None,
        }),
    }
    .with_infra_name(vsm)
}

impl MachineObject {
    fn with_infra_name(mut self, vsm: Option<&str>) -> Self {
        self.info.infrastructure_name = vsm.map(Into::into);
        self
    }
}

fn vm(name: &str, owners: Vec<Owner>, ip: &str) -> VmObject {
    VmObject {
        info: VmInfo {
            name: name.into(),
            ip: Some(ip.parse().unwrap()),
            power: PowerState::PoweredOn,
            class: None,
            owner: owners
                .iter()
                .find(|o| o.kind == "VSphereMachine")
                .map(|o| o.name.clone()),
            refused_ip: None,
            ..VmInfo::default()
        },
        owners,
    }
}

/// VM `name` controlled by VSphereMachine `vsm` with uid `uid`.
fn owned_vm(name: &str, vsm: &str, uid: &str, ip: &str) -> VmObject {
    vm(name, vec![owner("VSphereMachine", vsm, uid, true)], ip)
}

/// Anchors with the KCP and these VSphereMachines read (name, uid).
fn read(vsms: &[(&str, &str)]) -> Anchors {
    Anchors {
        kcp_uid: Some(KCP.into()),
        vsphere_machines: Some(
            vsms.iter()
                .map(|(n, u)| (n.to_string(), u.to_string()))
                .collect(),
        ),
    }
}

fn row<'a>(nodes: &'a [ControlPlaneNode], name: &str) -> &'a ControlPlaneNode {
    nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no row {name}: {nodes:#?}"))
}

fn vm_of(n: &ControlPlaneNode) -> Option<&str> {
    n.vm.as_ref().map(|v| v.name.as_str())
}

#[test]
fn the_vm_controlled_by_the_vsphere_machines_uid_is_joined() {
    let nodes = join(
        &read(&[("cp-1", "u1"), ("cp-2", "u2")]),
        vec![machine("cp-1", Some("cp-1")), machine("cp-2", Some("cp-2"))],
        vec![
            owned_vm("cp-2", "cp-2", "u2", "198.18.0.12"),
            // Any name: the uid decides.
            owned_vm("renamed", "cp-1", "u1", "198.18.0.11"),
        ],
    );
    assert_eq!(nodes.len(), 2, "{nodes:#?}");
    assert_eq!(vm_of(row(&nodes, "cp-1")), Some("renamed"));
    assert_eq!(vm_of(row(&nodes, "cp-2")), Some("cp-2"));
    assert!(nodes
        .iter()
        .all(|n| n.join.by == Some(JoinedBy::Uid) && n.is_target()));
}

/// A VM named to sort first, naming the real VSphereMachine as controller with a forged uid:
/// a first-owner-name match would join it and leave the real VM a "no machine" row.
#[test]
fn a_forged_owner_uid_is_a_finding_and_the_real_vm_stays() {
    let nodes = join(
        &read(&[("cp-1", "u1")]),
        vec![machine("cp-1", Some("cp-1"))],
        vec![
            owned_vm("a-forged", "cp-1", "forged-uid", "198.18.0.66"),
            owned_vm("cp-1", "cp-1", "u1", "198.18.0.11"),
            // Right uid, but not as controller: only names its owner.
            vm(
                "b-forged",
                vec![owner("VSphereMachine", "cp-1", "u1", false)],
                "198.18.0.67",
            ),
            // No uid at all.
            vm(
                "c-forged",
                vec![owner("VSphereMachine", "cp-1", "", true)],
                "198.18.0.68",
            ),
        ],
    );
    let cp1 = row(&nodes, "cp-1");
    assert_eq!(vm_of(cp1), Some("cp-1"));
    assert!(cp1.is_target());
    for forged in ["a-forged", "b-forged", "c-forged"] {
        let r = nodes.iter().find(|n| vm_of(n) == Some(forged)).unwrap();
        assert!(r.machine.is_none() && !r.is_target(), "{forged}");
        assert_eq!(
            r.join.problem,
            Some(IdentityProblem::OwnerMismatch {
                machine: "cp-1".into(),
                vsphere_machine: "cp-1".into()
            }),
            "{forged}"
        );
    }
}

/// A copied uid makes two controlled VMs: neither is used, the Machine and both say so.
#[test]
fn two_vms_controlled_by_one_uid_are_never_a_guess() {
    let nodes = join(
        &read(&[("cp-1", "u1")]),
        vec![machine("cp-1", Some("cp-1"))],
        vec![
            owned_vm("cp-1", "cp-1", "u1", "198.18.0.11"),
            owned_vm("cp-1-copy", "cp-1", "u1", "198.18.0.66"),
        ],
    );
    let want = IdentityProblem::AmbiguousVm {
        machine: "cp-1".into(),
        candidates: vec!["cp-1".into(), "cp-1-copy".into()],
    };
    assert_eq!(nodes.len(), 3, "{nodes:#?}");
    let m = nodes.iter().find(|n| n.machine.is_some()).unwrap();
    assert_eq!(m.vm, None);
    assert_eq!(m.join.problem.as_ref(), Some(&want));
    assert!(!m.is_target());
    for n in nodes.iter().filter(|n| n.machine.is_none()) {
        assert_eq!(n.join.problem.as_ref(), Some(&want), "{}", n.name);
    }
}

/// Machines are trusted by their controller ownerReference's uid, not by labels: another
/// controller, a KCP's name with another uid, an owner that is no controller, or no KCP read
/// at all make a row with no Machine and no VM (its VM stays a VM row).
#[test]
fn a_machine_not_controlled_by_the_kcp_uid_is_never_a_target() {
    let cases = [
        vec![owner("KubeadmControlPlane", "kcp", "other-uid", true)],
        vec![owner("KubeadmControlPlane", "kcp", KCP, false)],
        vec![owner("MachineSet", "ms", "ms-uid", true)],
        vec![],
    ];
    for owners in cases {
        let mut m = machine("cp-9", Some("cp-9"));
        m.owners = owners.clone();
        let nodes = join(
            &read(&[("cp-9", "u9")]),
            vec![m],
            vec![owned_vm("cp-9", "cp-9", "u9", "198.18.0.19")],
        );
        let machine_row = nodes.iter().find(|n| n.vm.is_none()).unwrap();
        assert!(machine_row.machine.is_none() && !machine_row.is_target());
        assert!(
            matches!(&machine_row.join.problem, Some(IdentityProblem::MachineNotOwned { machine, .. }) if machine == "cp-9"),
            "{owners:?}: {nodes:#?}"
        );
        assert!(nodes.iter().all(|n| !n.is_target()));
    }
    let mut anchors = read(&[("cp-1", "u1")]);
    anchors.kcp_uid = None;
    let nodes = join(&anchors, vec![machine("cp-1", Some("cp-1"))], vec![]);
    assert!(!nodes[0].is_target(), "no KCP read, no Machine owned");
}

/// VSphereMachines read and the Machine's is not among them, nor a uid in its reference: its
/// VM cannot be named into place.
#[test]
fn a_missing_vsphere_machine_leaves_the_machine_without_a_vm() {
    let nodes = join(
        &read(&[]),
        vec![machine("cp-1", Some("cp-1"))],
        vec![
            owned_vm("cp-1", "cp-1", "whatever", "198.18.0.11"),
            vm("cp-1-noowner", vec![], "198.18.0.12"),
        ],
    );
    let m = nodes.iter().find(|n| n.machine.is_some()).unwrap();
    assert_eq!(m.vm, None);
    assert!(
        m.is_target(),
        "a Machine without VM is a target without address"
    );
    let named = nodes.iter().find(|n| vm_of(n) == Some("cp-1")).unwrap();
    assert!(matches!(
        named.join.problem,
        Some(IdentityProblem::OwnerMismatch { .. })
    ));
}

/// Without VSphereMachines (older Supervisors, old bundles) the uid in a v1beta1 reference is
/// used; without that either, names as before, and the row says so.
#[test]
fn without_vsphere_machines_the_reference_uid_then_names() {
    let unread = Anchors {
        kcp_uid: Some(KCP.into()),
        vsphere_machines: None,
    };
    let mut with_uid = machine("cp-1", Some("cp-1"));
    with_uid.infra.as_mut().unwrap().uid = Some("u1".into());
    let nodes = join(
        &unread,
        vec![
            with_uid,
            machine("cp-2", Some("vsm-2")),
            machine("cp-3", None),
        ],
        vec![
            owned_vm("a-forged", "cp-1", "bad", "198.18.0.66"),
            owned_vm("cp-1", "cp-1", "u1", "198.18.0.11"),
            owned_vm("some-vm", "vsm-2", "u2", "198.18.0.12"),
            vm("cp-3", vec![], "198.18.0.13"),
        ],
    );
    let by = |n: &str| (vm_of(row(&nodes, n)), row(&nodes, n).join.by);
    assert_eq!(by("cp-1"), (Some("cp-1"), Some(JoinedBy::Uid)));
    assert_eq!(by("cp-2"), (Some("some-vm"), Some(JoinedBy::OwnerName)));
    assert_eq!(by("cp-3"), (Some("cp-3"), Some(JoinedBy::VmName)));
    assert!(row(&nodes, "a-forged").join.problem.is_some());

    // Two by name: a finding, not the first one.
    let nodes = join(
        &unread,
        vec![machine("cp-2", Some("vsm-2"))],
        vec![
            owned_vm("one", "vsm-2", "x", "198.18.0.12"),
            owned_vm("two", "vsm-2", "y", "198.18.0.66"),
        ],
    );
    assert!(matches!(
        row(&nodes, "cp-2").join.problem,
        Some(IdentityProblem::AmbiguousVm { .. })
    ));
    assert!(!row(&nodes, "cp-2").is_target());
}

#[test]
fn keeps_the_unmatched_on_both_sides() {
    let nodes = join(
        &read(&[("cp-1", "u1"), ("cp-2", "u2")]),
        vec![machine("cp-1", Some("cp-1")), machine("cp-2", Some("cp-2"))],
        vec![
            owned_vm("cp-1", "cp-1", "u1", "198.18.0.11"),
            vm("orphan", vec![], "198.18.0.19"),
        ],
    );
    assert_eq!(nodes.len(), 3);
    assert!(row(&nodes, "cp-2").vm.is_none());
    let orphan = row(&nodes, "orphan");
    assert!(orphan.machine.is_none() && orphan.join == Join::default());
}

/// A Machine with `status.addresses` (CAPI's `MachineAddress` list).
fn with_addresses(mut m: MachineObject, addrs: &[(&str, &str)]) -> MachineObject {
    m.info.addresses = addrs
        .iter()
        .map(|(kind, address)| crate::supervisor::facts::MachineAddress {
            kind: kind.to_string(),
            address: address.to_string(),
        })
        .collect();
    m
}

/// A VM with no address from its guest nor its network config: its joined Machine's
/// InternalIP (else ExternalIP) is its address, said so; a VM joined to nothing gets none, and
/// a refused guest address is never replaced.
#[test]
fn without_a_vm_address_the_machines_is_used_and_said() {
    let mut silent = owned_vm("cp-1", "cp-1", "u1", "198.18.0.11");
    silent.info.ip = None;
    let mut external = owned_vm("cp-2", "cp-2", "u2", "198.18.0.12");
    external.info.ip = None;
    let mut refused = owned_vm("cp-3", "cp-3", "u3", "198.18.0.13");
    refused.info.ip = None;
    refused.info.refused_ip = Some("127.0.0.1".parse().unwrap());
    let nodes = join(
        &read(&[("cp-1", "u1"), ("cp-2", "u2"), ("cp-3", "u3")]),
        vec![
            with_addresses(
                machine("cp-1", Some("cp-1")),
                &[
                    ("Hostname", "cp-1"),
                    ("InternalIP", "198.18.0.11"),
                    ("ExternalIP", "198.18.0.99"),
                ],
            ),
            with_addresses(
                machine("cp-2", Some("cp-2")),
                &[("InternalIP", "not-an-ip"), ("ExternalIP", "198.18.0.12")],
            ),
            with_addresses(
                machine("cp-3", Some("cp-3")),
                &[("InternalIP", "198.18.0.13")],
            ),
        ],
        vec![silent, external, refused],
    );
    let vm = |n: &str| row(&nodes, n).vm.clone().unwrap();
    assert_eq!(vm("cp-1").ip, Some("198.18.0.11".parse().unwrap()));
    assert_eq!(vm("cp-1").ip_source, AddressSource::MachineAddress);
    assert_eq!(vm("cp-2").ip, Some("198.18.0.12".parse().unwrap()));
    assert_eq!(vm("cp-2").ip_source, AddressSource::MachineAddress);
    // The guest's word is what is in doubt: the Machine's does not cover it.
    assert_eq!(vm("cp-3").ip, None);
    assert_eq!(vm("cp-3").ip_source, AddressSource::Guest);
}

/// The address rule holds for the Machine's addresses too.
#[test]
fn a_machine_address_is_refused_by_the_same_rule() {
    let mut silent = owned_vm("cp-1", "cp-1", "u1", "198.18.0.11");
    silent.info.ip = None;
    let nodes = join(
        &read(&[("cp-1", "u1")]),
        vec![with_addresses(
            machine("cp-1", Some("cp-1")),
            &[("InternalIP", "169.254.169.254")],
        )],
        vec![silent],
    );
    let vm = row(&nodes, "cp-1").vm.clone().unwrap();
    assert_eq!(vm.ip, None);
    assert_eq!(vm.refused_ip, Some("169.254.169.254".parse().unwrap()));
    assert_eq!(vm.ip_source, AddressSource::MachineAddress);
}

/// VSphereMachines refused (403) on CAPI v1beta2 (no uid in the references): the VMs are
/// joined by their owner's name, and a forged VM naming a real node's VSphereMachine still
/// makes that node ambiguous, never a guess.
#[test]
fn without_vsphere_machines_a_forged_owner_name_is_still_no_guess() {
    let unread = Anchors {
        kcp_uid: Some(KCP.into()),
        vsphere_machines: None,
    };
    let nodes = join(
        &unread,
        vec![machine("cp-1", Some("cp-1")), machine("cp-2", Some("cp-2"))],
        vec![
            owned_vm("cp-1-vm", "cp-1", "u1", "198.18.0.11"),
            owned_vm("cp-2-vm", "cp-2", "u2", "198.18.0.12"),
            owned_vm("forged", "cp-2", "forged-uid", "198.18.0.66"),
        ],
    );
    let cp1 = row(&nodes, "cp-1");
    assert_eq!(vm_of(cp1), Some("cp-1-vm"));
    assert_eq!(cp1.join.by, Some(JoinedBy::OwnerName));
    assert!(cp1.is_target());
    let cp2 = row(&nodes, "cp-2");
    assert!(cp2.vm.is_none() && !cp2.is_target(), "{cp2:#?}");
    assert!(matches!(
        cp2.join.problem,
        Some(IdentityProblem::AmbiguousVm { .. })
    ));
}

/// A VM that is not on has no address to reach: the Machine's is not taken for it.
#[test]
fn a_vm_not_on_gets_no_machine_address() {
    let mut off = owned_vm("cp-1", "cp-1", "u1", "198.18.0.11");
    off.info.ip = None;
    off.info.power = PowerState::PoweredOff;
    let nodes = join(
        &read(&[("cp-1", "u1")]),
        vec![with_addresses(
            machine("cp-1", Some("cp-1")),
            &[("InternalIP", "198.18.0.11")],
        )],
        vec![off],
    );
    let vm = row(&nodes, "cp-1").vm.clone().unwrap();
    assert_eq!((vm.ip, vm.ip_source), (None, AddressSource::Guest));
}
