//! Which NSX VM and port each control-plane VM is, on the fixtures in
//! `tests/fixtures/nsx-manager/api/` and on lookups built here.

use serde_json::json;

use super::*;
use crate::nsxmanager::model::tests::{supervisor_vms, world};

#[test]
fn identities_confirmed_both_ways() {
    let read = world("infra-drop-2380.json", "vms.json");
    let input = input(&read, &supervisor_vms(false));
    assert_eq!(input.vms.len(), 3);
    for (n, vm) in input.vms.iter().enumerate() {
        assert_eq!(vm.identity, Identity::Confirmed, "{vm:?}");
        assert_eq!(
            vm.port.as_ref().and_then(|p| p.path.clone()),
            Some(format!("/infra/segments/tkc-seg/ports/port-{}", n + 1))
        );
        assert_eq!(
            vm.nsx_vm.as_ref().and_then(|v| v.external_id.clone()),
            Some(format!("5012-{}", n + 1))
        );
    }
    assert!(input.findings.is_empty(), "{:?}", input.findings);
}

#[test]
fn a_namesake_vm_and_a_foreign_port_are_findings_never_used() {
    let read = world("infra-drop-2380.json", "vms-mismatch.json");
    let input = input(&read, &supervisor_vms(false));
    let third = &input.vms[2];
    assert!(matches!(third.identity, Identity::NotFound(_)), "{third:?}");
    assert_eq!(third.nsx_vm, None);
    assert_eq!(third.port, None);
    assert!(
        input
            .findings
            .iter()
            .any(|f| f.contains("has the name of node tkc-cp-3's VM but not its uuid")),
        "{:?}",
        input.findings
    );
    // The others are untouched.
    assert_eq!(input.vms[0].identity, Identity::Confirmed);
}

#[test]
fn a_port_tied_to_another_vm_is_not_the_machines() {
    let lookup = VmLookup {
        node: "n".into(),
        asked: vec![],
        found: vec![
            json!({"resource_type": "VirtualMachine", "display_name": "vm", "external_id": "e1",
                   "compute_ids": ["biosUuid:b1"]}),
            json!({"resource_type": "VirtualNetworkInterface", "owner_vm_id": "other",
                   "lport_attachment_id": "a1"}),
            json!({"resource_type": "SegmentPort", "path": "/infra/segments/s/ports/p1",
                   "attachment": {"id": "a1"}}),
        ],
        gaps: vec![],
        associations: vec![],
    };
    let sv = SupervisorVm {
        node: "n".into(),
        vm_name: "vm".into(),
        bios_uuid: Some("B1".into()),
        instance_uuid: None,
        ips: vec![],
    };
    let mut findings = Vec::new();
    let (id, vm, port) = identify(&sv, Some(&lookup), &mut findings);
    assert_eq!(id, Identity::Confirmed, "uuids compare case-insensitively");
    assert!(vm.is_some());
    assert_eq!(port, None);
    assert!(
        findings[0].contains("belongs to another VM"),
        "{findings:?}"
    );
}

#[test]
fn a_vm_with_the_uuid_but_another_name_is_kept_and_said() {
    let lookup = VmLookup {
        node: "n".into(),
        asked: vec![],
        found: vec![
            json!({"resource_type": "VirtualMachine", "display_name": "renamed",
                           "external_id": "e1", "compute_ids": ["biosUuid:b1"]}),
        ],
        gaps: vec![],
        associations: vec![],
    };
    let sv = SupervisorVm {
        node: "n".into(),
        vm_name: "vm".into(),
        bios_uuid: Some("b1".into()),
        ..SupervisorVm::default()
    };
    let mut findings = Vec::new();
    let (id, _, _) = identify(&sv, Some(&lookup), &mut findings);
    assert_eq!(id, Identity::Confirmed);
    assert!(findings[0].contains("another name"), "{findings:?}");
    // Without any uuid on either side, two namesakes: none is used.
    let two = VmLookup {
        found: vec![
            json!({"resource_type": "VirtualMachine", "display_name": "vm", "external_id": "e1"}),
            json!({"resource_type": "VirtualMachine", "display_name": "vm", "external_id": "e2"}),
        ],
        ..lookup
    };
    let sv = SupervisorVm {
        node: "n".into(),
        vm_name: "vm".into(),
        ..SupervisorVm::default()
    };
    let (id, vm, _) = identify(&sv, Some(&two), &mut Vec::new());
    assert!(matches!(id, Identity::Ambiguous(_)), "{id:?}");
    assert!(vm.is_none());
}
