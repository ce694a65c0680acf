//! The objects served, in the API's own shapes: policies of every category, a rule and a
//! service compared whole with fixtures, groups and their effective members, the fabric's VMs
//! and VIFs with their filters, segment ports, search, and the VPC layout's tree.

use etcdnet_fakensx::FakeNsx;
use serde_json::{json, Value};

use crate::common::{expected, Client, AUDITOR, BASE};

fn names(v: &Value, key: &str) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn policies_rules_services_as_the_api_shapes_them() {
    let nsx = FakeNsx::start_world("infra-drop-2380").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    let list = c.get(&format!("{BASE}/security-policies")).json();
    assert_eq!(list["result_count"], 2);
    assert!(list.get("cursor").is_none());
    let cats: Vec<_> = list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["category"].clone())
        .collect();
    assert_eq!(cats, [json!("Application"), json!("Infrastructure")]);
    // Listed without their rules; the rule count only when asked.
    assert!(list["results"][1].get("rules").is_none());
    assert!(list["results"][1].get("rule_count").is_none());
    let counted = c
        .get(&format!("{BASE}/security-policies?include_rule_count=true"))
        .json();
    assert_eq!(counted["results"][1]["rule_count"], 2);
    // One policy: with its rules.
    let p = c
        .get(&format!("{BASE}/security-policies/infra-hardening"))
        .json();
    assert_eq!(
        p["path"],
        "/infra/domains/default/security-policies/infra-hardening"
    );
    assert_eq!(p["rules"].as_array().unwrap().len(), 2);
    let rules = c
        .get(&format!("{BASE}/security-policies/infra-hardening/rules"))
        .json();
    assert_eq!(names(&rules, "id"), ["allow-ssh-admins", "drop-etcd-peer"]);
    let rule = c
        .get(&format!(
            "{BASE}/security-policies/infra-hardening/rules/drop-etcd-peer"
        ))
        .json();
    assert_eq!(rule, expected("rule-drop-etcd-peer.json"));
    let svc = c.get("/policy/api/v1/infra/services/etcd-peer").json();
    assert_eq!(svc, expected("service-etcd-peer.json"));
    let missing = c.get(&format!("{BASE}/security-policies/nope"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["httpStatus"], "NOT_FOUND");
    // The other layout's tree is not there.
    assert_eq!(
        c.get("/policy/api/v1/orgs/default/projects/proj-tkg/vpcs/ns-prod/security-policies")
            .status,
        404
    );
}

#[test]
fn groups_and_their_effective_members() {
    let nsx = FakeNsx::start_world("infra-drop-2380").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    let groups = c.get(&format!("{BASE}/groups")).json();
    assert_eq!(
        names(&groups, "id"),
        ["tkc-prod-control-plane", "admin-workstations"]
    );
    let g = c
        .get(&format!("{BASE}/groups/tkc-prod-control-plane"))
        .json();
    assert_eq!(g["resource_type"], "Group");
    assert_eq!(g["expression"][1]["conjunction_operator"], "AND");
    let m = format!("{BASE}/groups/tkc-prod-control-plane/members");
    let ips = c.get(&format!("{m}/ip-addresses")).json();
    assert_eq!(
        ips["results"],
        json!(["198.18.0.11", "198.18.0.12", "198.18.0.13"])
    );
    assert_eq!(ips["result_count"], 3);
    let vms = c.get(&format!("{m}/virtual-machines")).json();
    assert_eq!(vms["results"][0]["resource_type"], "RealizedVirtualMachine");
    let mut vm_names = names(&vms, "display_name");
    vm_names.sort();
    assert_eq!(
        vm_names,
        [
            "tkc-prod-7xk2p-4rz8m",
            "tkc-prod-7xk2p-9qtvw",
            "tkc-prod-7xk2p-bx2lk"
        ]
    );
    let ports = c.get(&format!("{m}/segment-ports")).json();
    assert_eq!(ports["result_count"], 3);
    assert!(names(&ports, "path")
        .iter()
        .all(|p| p.starts_with("/infra/segments/vnet-ns-prod-tkc-prod-vnet-0/ports/")));
    let lit = c
        .get(&format!(
            "{BASE}/groups/admin-workstations/members/ip-addresses"
        ))
        .json();
    assert_eq!(lit["results"], json!(["192.0.2.0/28"]));
    assert_eq!(
        c.get(&format!("{m}/subnet-ports")).status,
        404,
        "subnet-ports are the VPC's"
    );
    assert_eq!(
        c.get(&format!("{BASE}/groups/nope/members/ip-addresses"))
            .status,
        404
    );
}

#[test]
fn fabric_vms_vifs_ports_and_search() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    let all = c.get("/api/v1/fabric/virtual-machines").json();
    assert_eq!(all["result_count"], 3);
    let one = c
        .get("/api/v1/fabric/virtual-machines?display_name=tkc-prod-7xk2p-9qtvw")
        .json();
    assert_eq!(one["result_count"], 1);
    let ext = one["results"][0]["external_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ext, "696c4c6c-880b-5b90-bc2e-3c079b501a7b");
    assert_eq!(
        c.get(&format!(
            "/api/v1/fabric/virtual-machines?external_id={ext}"
        ))
        .json()["results"][0]["display_name"],
        "tkc-prod-7xk2p-9qtvw"
    );
    let vifs = c
        .get(&format!("/api/v1/fabric/vifs?owner_vm_id={ext}"))
        .json();
    assert_eq!(vifs["result_count"], 1);
    assert_eq!(
        vifs["results"][0]["ip_address_info"][0]["ip_addresses"],
        json!(["198.18.0.12"])
    );
    let att = vifs["results"][0]["lport_attachment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ports = c
        .get("/policy/api/v1/infra/segments/vnet-ns-prod-tkc-prod-vnet-0/ports")
        .json();
    assert_eq!(ports["result_count"], 3);
    let found = c
        .get(&format!(
            "/policy/api/v1/search/query?query={}",
            form_urlencoded::byte_serialize(
                format!("resource_type:SegmentPort AND attachment.id:{att}").as_bytes()
            )
            .collect::<String>()
        ))
        .json();
    assert_eq!(found["result_count"], 1);
    assert_eq!(
        found["results"][0]["display_name"],
        "tkc-prod-7xk2p-9qtvw-eth0"
    );
    let by_name = c
        .get("/policy/api/v1/search/query?query=resource_type%3AVirtualMachine%20AND%20display_name%3Atkc-prod-7xk2p-*")
        .json();
    assert_eq!(by_name["result_count"], 3);
    let unsupported = c.get("/policy/api/v1/search/query?query=a%20OR%20b");
    assert_eq!(unsupported.status, 400);
    assert_eq!(unsupported.json()["httpStatus"], "BAD_REQUEST");
}

#[test]
fn the_vpc_layout() {
    let nsx = FakeNsx::start_world("vpc-drop-2380").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    let vpc = "/policy/api/v1/orgs/default/projects/proj-tkg/vpcs/ns-prod";
    let list = c.get(&format!("{vpc}/security-policies")).json();
    assert_eq!(
        names(&list, "id"),
        ["default-layer3-section", "vpc-etcd-lockdown"]
    );
    // VPC policies have no category; NSX's default policy is flagged.
    assert!(list["results"][1].get("category").is_none(), "{list}");
    assert_eq!(list["results"][0]["is_default"], true);
    assert_eq!(list["results"][1]["is_default"], false);
    let rules = c
        .get(&format!("{vpc}/security-policies/vpc-etcd-lockdown/rules"))
        .json();
    assert_eq!(rules["results"][0]["path"], "/orgs/default/projects/proj-tkg/vpcs/ns-prod/security-policies/vpc-etcd-lockdown/rules/drop-etcd-peer");
    let m = format!("{vpc}/groups/tkc-prod-control-plane/members");
    assert_eq!(
        c.get(&format!("{m}/ip-addresses")).json()["result_count"],
        3
    );
    let ports = c.get(&format!("{m}/subnet-ports")).json();
    assert_eq!(ports["result_count"], 3);
    assert_eq!(c.get(&format!("{m}/segment-ports")).status, 404);
    assert_eq!(c.get(&format!("{m}/vifs")).json()["result_count"], 3);
    let svc = c
        .get("/policy/api/v1/orgs/default/projects/proj-tkg/infra/services/etcd-peer")
        .json();
    assert_eq!(
        svc["service_entries"][0]["destination_ports"],
        json!(["2380"])
    );
    // `/infra`'s default domain is there, empty; Federation's tree is not (no Global Manager).
    let infra = c.get(&format!(
        "{BASE}/security-policies",
        BASE = crate::common::BASE
    ));
    assert_eq!(infra.status, 200);
    assert_eq!(infra.json()["result_count"], 0);
    let domains = c.get("/policy/api/v1/infra/domains").json();
    assert_eq!(names(&domains, "id"), ["default"]);
    assert_eq!(c.get("/policy/api/v1/global-infra/domains").status, 404);
    // Group associations: a subnet port's group is asked by the port's path in the VPC's
    // tree; the VM itself is no member of a group of ports; /infra holds none of them.
    let port = "/orgs/default/projects/proj-tkg/vpcs/ns-prod/subnets/tkc-prod-vnet/ports/tkc-prod-7xk2p-4rz8m-tkc-prod-vnet-eth0";
    let by_port = c
        .get(&format!(
            "{vpc}/group-associations?intent_path={}",
            port.replace('/', "%2F")
        ))
        .json();
    assert_eq!(
        by_port["results"][0]["target_id"],
        "/orgs/default/projects/proj-tkg/vpcs/ns-prod/groups/tkc-prod-control-plane"
    );
    let by_vm = c
        .get(&format!(
            "{vpc}/virtual-machine-group-associations?vm_external_id=037585ea-8336-58d0-abc6-6c95e184b57f"
        ))
        .json();
    assert_eq!(by_vm["result_count"], 0, "{by_vm}");
    let infra_port = c
        .get(&format!(
            "/policy/api/v1/infra/group-associations?intent_path={}",
            port.replace('/', "%2F")
        ))
        .json();
    assert_eq!(infra_port["result_count"], 0);
    assert_eq!(
        c.get(&format!("{vpc}/group-associations")).status,
        400,
        "intent_path is required"
    );
    // Members of a group of ports: no VM (the API answers an empty list for such groups).
    assert_eq!(
        c.get(&format!("{m}/virtual-machines")).json()["result_count"],
        0
    );
}
