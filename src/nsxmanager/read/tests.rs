use super::*;

use crate::nsxmanager::client::tests::{options, serve, session_granted, Canned};
use serde_json::json;

fn vpc(org: &str, project: &str, vpc: &str) -> Layout {
    Layout::Vpc {
        org: org.into(),
        project: project.into(),
        vpc: vpc.into(),
    }
}

#[test]
fn a_vpc_path_is_exactly_orgs_projects_vpcs() {
    assert_eq!(
        parse_vpc_path("/orgs/default/projects/proj-1/vpcs/ns-a-1b2c3").unwrap(),
        vpc("default", "proj-1", "ns-a-1b2c3")
    );
    for bad in [
        "",
        "orgs/default/projects/p/vpcs/v",
        "/orgs/default/projects/p/vpcs",
        "/orgs/default/projects/p/vpcs/v/subnets/s",
        "/orgs//projects/p/vpcs/v",
        "/orgs/default/projects/../vpcs/v",
        "/infra/domains/default",
    ] {
        assert!(parse_vpc_path(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_layout_comes_from_the_namespaces_vpc_network_configuration() {
    let nc = json!({
        "metadata": {"name": "ns-a", "annotations": {}},
        "status": {"vpcs": [{"name": "ns-a-vpc", "vpcPath": "/orgs/default/projects/p1/vpcs/ns-a-vpc"}]}
    });
    let networkinfo = json!({"metadata": {"name": "ns-a", "namespace": "ns-a"},
                             "vpcs": [{"name": "ns-a-vpc", "networkStack": "FullStackVPC"}]});
    assert_eq!(networkinfo_vpc(&networkinfo), Some("ns-a-vpc"));
    assert_eq!(networkinfo_vpc(&json!({"vpcs": []})), None);
    let want = vpc("default", "p1", "ns-a-vpc");
    assert_eq!(vpc_layout(&nc, Some("ns-a-vpc")).unwrap(), want);
    assert_eq!(
        vpc_layout(&nc, None).unwrap(),
        want,
        "one entry, not shared"
    );
    assert!(
        vpc_layout(&nc, Some("ns-b-vpc")).is_err(),
        "never another VPC"
    );

    // The shared default configuration: its one entry is the last namespace's.
    let shared = json!({
        "metadata": {"name": "default", "annotations": {"nsx.vmware.com/default": "true"}},
        "status": {"vpcs": [{"name": "ns-b-vpc", "vpcPath": "/orgs/default/projects/p1/vpcs/ns-b-vpc"}]}
    });
    let e = vpc_layout(&shared, None).unwrap_err();
    assert!(e.to_string().contains("NetworkInfo"), "{e}");
    assert!(vpc_layout(&shared, Some("ns-a-vpc")).is_err());

    // A pre-created VPC: spec.vpc.
    let pre = json!({"spec": {"vpc": "/orgs/o2/projects/p2/vpcs/v2"}, "status": {}});
    assert_eq!(vpc_layout(&pre, None).unwrap(), vpc("o2", "p2", "v2"));
    let none = json!({"status": {"vpcs": [{"name": "v"}]}});
    assert!(matches!(
        vpc_layout(&none, Some("v")),
        Err(LayoutError::NoVpcPath(_))
    ));
}

#[test]
fn the_policies_are_read_where_each_layout_keeps_them() {
    let urls = |l: &Layout| -> Vec<String> {
        policy_roots(l)
            .iter()
            .map(|r| {
                ApiPath::policy(r, &["security-policies"])
                    .unwrap()
                    .as_str()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(
        urls(&infra_layout()),
        ["/policy/api/v1/infra/domains/default/security-policies"]
    );
    assert_eq!(
        urls(&vpc("default", "p1", "v1")),
        [
            "/policy/api/v1/infra/domains/default/security-policies",
            "/policy/api/v1/orgs/default/projects/p1/infra/domains/default/security-policies",
            "/policy/api/v1/orgs/default/projects/p1/vpcs/v1/security-policies",
        ]
    );
    // The default project's infra is /infra itself.
    assert_eq!(
        urls(&vpc("default", "default", "ns-prod")),
        [
            "/policy/api/v1/infra/domains/default/security-policies",
            "/policy/api/v1/orgs/default/projects/default/vpcs/ns-prod/security-policies",
        ]
    );
    // A policy's rules, by the policy's own path.
    let rules = ApiPath::policy(
        "/orgs/default/projects/p1/vpcs/v1/security-policies/sp-1",
        &["rules"],
    )
    .unwrap();
    assert_eq!(
        rules.as_str(),
        "/policy/api/v1/orgs/default/projects/p1/vpcs/v1/security-policies/sp-1/rules"
    );
}

#[test]
fn a_groups_members_are_read_by_its_layouts_kinds() {
    let g = "/infra/domains/default/groups/cp";
    assert_eq!(
        member_kinds(g),
        ["ip-addresses", "virtual-machines", "segment-ports"]
    );
    let v = "/orgs/default/projects/p1/vpcs/v1/groups/cp";
    assert_eq!(
        member_kinds(v),
        ["ip-addresses", "virtual-machines", "subnet-ports"]
    );
    let p = "/orgs/default/projects/p1/infra/domains/default/groups/cp";
    assert_eq!(member_kinds(p)[2], "segment-ports");
    assert_eq!(
        ApiPath::policy(v, &["members", member_kinds(v)[2]])
            .unwrap()
            .as_str(),
        "/policy/api/v1/orgs/default/projects/p1/vpcs/v1/groups/cp/members/subnet-ports"
    );
}

fn policy(path: &str, scope: &[&str], rules: Vec<Value>) -> PolicyRead {
    PolicyRead {
        policy: json!({"path": path, "scope": scope}),
        rules: Listed {
            results: rules,
            ..Listed::default()
        },
    }
}

#[test]
fn every_group_and_service_a_rule_names_is_collected_once() {
    let p = vec![
        policy(
            "/infra/domains/default/security-policies/a",
            &["/infra/domains/default/groups/scope"],
            vec![
                json!({"source_groups": ["ANY"], "destination_groups": ["/infra/domains/default/groups/cp"],
                       "scope": ["ANY"], "services": ["/infra/services/etcd", "ANY"]}),
                json!({"source_groups": ["/infra/domains/default/groups/cp"], "destination_groups": ["any"],
                       "services": ["/infra/services/etcd"]}),
                // Addresses in place of groups: the model's to read, never asked as groups.
                json!({"source_groups": ["203.0.113.7", "198.18.0.0/24", "10.0.0.1-10.0.0.9"],
                       "destination_groups": ["2001:db8::1"], "services": ["ANY"]}),
            ],
        ),
        policy(
            "/infra/domains/default/security-policies/b",
            &["ANY"],
            vec![json!({})],
        ),
    ];
    assert_eq!(
        group_refs(&p).into_iter().collect::<Vec<_>>(),
        [
            "/infra/domains/default/groups/cp",
            "/infra/domains/default/groups/scope"
        ]
    );
    assert_eq!(
        service_refs(&p).into_iter().collect::<Vec<_>>(),
        ["/infra/services/etcd"]
    );
}

#[test]
fn lists_of_several_roots_merge_into_one_with_every_gap_kept() {
    let gap = |p: &str| Gap {
        path: p.into(),
        status: Some(403),
        why: "x".into(),
        privilege: None,
    };
    let mut more = Vec::new();
    let merged = merge(
        vec![
            Listed {
                results: vec![json!(1), json!(2)],
                result_count: Some(2),
                incomplete: None,
            },
            Listed {
                results: vec![],
                result_count: None,
                incomplete: Some(gap("/a")),
            },
            Listed {
                results: vec![json!(3)],
                result_count: Some(1),
                incomplete: Some(gap("/b")),
            },
        ],
        &mut more,
    );
    assert_eq!(merged.results.len(), 3);
    assert_eq!(merged.result_count, None, "one root said no count");
    assert_eq!(merged.incomplete.unwrap().path, "/a");
    assert_eq!(more.len(), 1);
    assert_eq!(more[0].path, "/b");
}

#[test]
fn only_plain_ids_go_into_a_search_query() {
    assert_eq!(
        port_query(
            port_type(&infra_layout()),
            "5f2a9c1e-0b3d-4e7f-9a8b-112233445566"
        )
        .unwrap(),
        r"resource_type:SegmentPort AND attachment.id:5f2a9c1e\-0b3d\-4e7f\-9a8b\-112233445566 AND marked_for_delete:false"
    );
    assert_eq!(
        port_query(port_type(&vpc("default", "p", "v")), "att-1").unwrap(),
        r"resource_type:VpcSubnetPort AND attachment.id:att\-1 AND marked_for_delete:false"
    );
    // terraform-provider-nsxt's own cases (`policy_search_unit_test.go`).
    assert_eq!(escape_query_value("plain"), "plain");
    assert_eq!(escape_query_value("foo(bar)"), r"foo\(bar\)");
    assert_eq!(escape_query_value("a+b"), r"a\+b");
    assert_eq!(escape_query_value("a:b/c"), r"a\:b\/c");
    for bad in ["", "a OR b", "x)", "a*", "\"q\"", &"a".repeat(200)] {
        assert_eq!(port_query("SegmentPort", bad), None, "{bad}");
    }
}

#[test]
fn a_reading_that_could_not_start_is_one_gap() {
    let gap = Gap {
        path: "/api/session/create".into(),
        status: None,
        why: "unreachable".into(),
        privilege: None,
    };
    let r = unread("https://nsx.example", &infra_layout(), gap.clone());
    assert_eq!(r.gaps, std::slice::from_ref(&gap));
    assert_eq!(r.policies.incomplete, Some(gap));
    assert_eq!(r.auth, None);
    assert!(r.rules.is_empty() && r.vms.is_empty());
}

/// The mechanics only (the NSX Manager fake is tests/fakensx): a manager that refuses the
/// account everywhere gives a reading of gaps naming the privileges, never an error.
#[tokio::test]
async fn a_manager_that_refuses_everything_is_a_reading_of_gaps() {
    let (url, _seen) = serve(|_, path| match path {
        "/api/session/create" => session_granted(),
        _ => Canned::json(403, r#"{"error_message":"permission denied"}"#),
    });
    let client = Client::connect(&options(url)).await.unwrap();
    let hint = VmHint {
        node: "cp-1".into(),
        vm_name: "tkc-cp-1".into(),
        instance_uuid: Some("5012-ab".into()),
        attachment_ids: vec!["att-1".into(), "bad id".into()],
        ..VmHint::default()
    };
    let r = read(&client, &vpc("default", "p1", "v1"), &[hint]).await;
    assert_eq!(r.auth.as_deref(), Some("session"));
    // Three trees' domain lists (`/infra`, `/global-infra`, the project's), the policies of
    // the two `default` domains still asked and the VPC's, and the VM's three lookups, all in
    // the one list too.
    assert_eq!(r.gaps.len(), 9, "{:?}", r.gaps);
    assert!(r.gaps.iter().all(|g| g.status == Some(403)));
    assert!(r.policies.incomplete.as_ref().unwrap().privilege.is_some());
    assert_eq!(r.vms.len(), 1);
    let vm = &r.vms[0];
    assert_eq!(
        vm.asked,
        [
            "display_name=tkc-cp-1",
            "external_id=5012-ab",
            "attachment.id=att-1"
        ]
    );
    assert!(vm.found.is_empty());
    assert!(vm.gaps[0]
        .privilege
        .as_deref()
        .unwrap()
        .contains("Inventory"));
}

/// A policy tree that does not exist (404) holds no policy: the list is whole, no gap.
#[tokio::test]
async fn a_tree_that_does_not_exist_holds_no_policy() {
    let (url, _seen) = serve(|_, path| match path {
        "/api/session/create" => session_granted(),
        p if p.starts_with("/policy/api/v1/infra/") => {
            Canned::json(404, r#"{"error_message":"no such path"}"#)
        }
        p if p.ends_with("/security-policies?page_size=1000") => Canned::json(
            200,
            r#"{"results":[{"id":"sp","path":"/orgs/default/projects/default/vpcs/ns-prod/security-policies/sp"}],"result_count":1}"#,
        ),
        _ => Canned::json(200, r#"{"results":[],"result_count":0}"#),
    });
    let client = Client::connect(&options(url)).await.unwrap();
    let r = read(&client, &vpc("default", "default", "ns-prod"), &[]).await;
    assert_eq!(r.policies.results.len(), 1);
    assert_eq!(r.policies.incomplete, None);
    assert_eq!(r.policies.result_count, Some(1));
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
    assert_eq!(r.rules.len(), 1);
}
