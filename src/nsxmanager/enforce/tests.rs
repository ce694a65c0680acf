//! The pure parts: the DFW's switch and the exclusion list's members, on answers in the API's
//! shapes and on hostile ones.

use serde_json::json;

use super::*;

#[test]
fn the_switch_is_enable_firewall_and_nothing_else() {
    let with = |v: Value| EnforcementRead {
        settings: Some(v),
        ..EnforcementRead::default()
    };
    assert_eq!(
        dfw_state(&with(json!({"enable_firewall": true}))),
        DfwState::Enabled
    );
    assert_eq!(
        dfw_state(&with(json!({"enable_firewall": false}))),
        DfwState::Disabled
    );
    for v in [json!({}), json!({"enable_firewall": "false"}), json!([])] {
        assert!(matches!(dfw_state(&with(v)), DfwState::Unknown(_)));
    }
    assert!(matches!(
        dfw_state(&EnforcementRead::default()),
        DfwState::Unknown(_)
    ));
}

#[test]
fn members_are_strings_once_and_bounded() {
    let l = json!({"members": ["/a", "/a", 3, null, "/b"], "system_members": ["/c", "/b"]});
    assert_eq!(exclude_members(Some(&l)), vec!["/a", "/b", "/c"]);
    let many: Vec<String> = (0..10_000).map(|i| format!("/g{i}")).collect();
    let l = json!({ "members": many });
    assert_eq!(exclude_members(Some(&l)).len(), 4 * MAX_EXCLUDE_MEMBERS);
    assert!(exclude_members(None).is_empty());
}

fn vm() -> DfwVm {
    use crate::nsxmanager::model::{NsxPort, NsxVm};
    DfwVm {
        node: "cp-1".into(),
        vm_name: "cp-1".into(),
        ips: vec!["10.0.0.11".parse().unwrap()],
        identity: Identity::Confirmed,
        nsx_vm: Some(NsxVm {
            external_id: Some("5012-1".into()),
            display_name: Some("cp-1".into()),
            bios_uuid: None,
            instance_uuid: None,
        }),
        port: Some(NsxPort {
            path: Some("/infra/segments/s/ports/p1".into()),
            id: Some("p1".into()),
            display_name: None,
            attachment_id: None,
            ips: Vec::new(),
        }),
        memberships: Default::default(),
    }
}

fn listing(members: Value) -> EnforcementRead {
    EnforcementRead {
        exclude_list: Some(json!({ "members": members })),
        system_members: true,
        ..EnforcementRead::default()
    }
}

#[test]
fn a_vm_is_excluded_by_its_port_or_a_group_and_else_unknown_never_excluded() {
    let v = vm();
    assert_eq!(excluded(&listing(json!([])), &v, &|_| true), Excluded::No);
    assert!(matches!(
        excluded(&listing(json!(["/infra/segments/s/ports/p1"])), &v, &|_| true),
        Excluded::Yes(w) if w.contains("its port")
    ));
    // A segment (not modeled), a group whose members were not read: unknown.
    for m in ["/infra/segments/s", "/infra/domains/default/groups/g"] {
        assert!(
            matches!(
                excluded(&listing(json!([m])), &v, &|_| true),
                Excluded::Unknown(_)
            ),
            "{m}"
        );
    }
    // A group holding another VM and port, read whole: not excluded.
    let mut r = listing(json!(["/infra/domains/default/groups/g"]));
    r.groups.insert(
        "/infra/domains/default/groups/g".into(),
        Members {
            virtual_machines: Some(super::super::raw::Listed {
                results: vec![json!({"id": "5012-9"})],
                ..Default::default()
            }),
            segment_ports: Some(super::super::raw::Listed {
                results: vec![json!({"path": "/infra/segments/s/ports/p9"})],
                ..Default::default()
            }),
            ..Members::default()
        },
    );
    assert_eq!(excluded(&r, &v, &|_| true), Excluded::No);
    // Its port among the group's ports: excluded, through the group.
    r.groups
        .get_mut("/infra/domains/default/groups/g")
        .unwrap()
        .segment_ports
        .as_mut()
        .unwrap()
        .results
        .push(json!({"path": "/infra/segments/s/ports/p1"}));
    assert!(matches!(excluded(&r, &v, &|_| true), Excluded::Yes(w) if w.contains("through group")));
    // The list not read: unknown.
    assert!(matches!(
        excluded(&EnforcementRead::default(), &v, &|_| true),
        Excluded::Unknown(_)
    ));
}

/// The VPC's project's own list is judged as the provider's is, and named as the project's;
/// T1 and the `default` project have none to read; a project list that could not be read is
/// unknown, never "not excluded".
#[test]
fn the_projects_own_list_is_read_on_vpc_and_judged_as_the_providers() {
    let vpc = |project: &str| Layout::Vpc {
        org: "default".into(),
        project: project.into(),
        vpc: "v".into(),
    };
    assert_eq!(
        project_of(&vpc("proj-tkg")).as_deref(),
        Some("/orgs/default/projects/proj-tkg")
    );
    assert_eq!(project_of(&vpc("default")), None);
    assert_eq!(
        project_of(&Layout::Infra {
            domain: "default".into()
        }),
        None
    );
    let v = vm();
    let mut r = listing(json!([]));
    assert_eq!(excluded_by_project(&r, &v, &|_| true), None);
    r.project = Some(ProjectExcludeList {
        project: "/orgs/default/projects/proj-tkg".into(),
        list: Some(json!({"members": ["/infra/segments/s/ports/p1"]})),
        gap: None,
    });
    assert!(matches!(
        excluded_by_project(&r, &v, &|_| true),
        Some(Excluded::Yes(w)) if w == "cp-1 is in project proj-tkg's DFW exclusion list (its port /infra/segments/s/ports/p1)"
    ));
    // The provider's list does not hold it.
    assert_eq!(excluded(&r, &v, &|_| true), Excluded::No);
    r.project = Some(ProjectExcludeList {
        project: "/orgs/default/projects/proj-tkg".into(),
        list: None,
        gap: Some(Gap {
            path: "/policy/api/v1/orgs/default/projects/proj-tkg/infra/settings/firewall/security/exclude-list".into(),
            status: Some(403),
            why: "forbidden".into(),
            privilege: None,
        }),
    });
    assert!(matches!(
        excluded_by_project(&r, &v, &|_| true),
        Some(Excluded::Unknown(w)) if w.starts_with("project proj-tkg's DFW exclusion list could not be read")
    ));
}
