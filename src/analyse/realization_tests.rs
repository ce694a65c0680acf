//! The realization findings: from network objects made here, and from the fixture sets'
//! objects as the supervisor's network tests slice them.

use kube::api::DynamicObject;
use serde_json::json;

use super::*;
use crate::supervisor::network::tests::{
    cluster, condition, fixture_inventory, group, inventory_with, obj, rogue, scope, served,
    vpc_read, vsphere_cluster, VPC,
};
use crate::supervisor::network::MAX_TEXT_CHARS;

#[test]
fn realization_names_each_failure_and_the_vm_whose_port_failed() {
    let (read, vms) = vpc_read();
    let vms: Vec<&DynamicObject> = vms.iter().collect();
    let net = read.of_cluster("ns", &cluster(), &vms);
    let problems = realization(&net);
    let short: Vec<(String, String, String, Option<String>)> = problems
        .iter()
        .map(|p| {
            (
                p.kind.clone(),
                p.name.clone(),
                p.condition.clone(),
                p.vm.clone(),
            )
        })
        .collect();
    assert_eq!(
        short,
        [
            (
                "SubnetPort".into(),
                "cp-2-tkc-vnet-eth0".into(),
                "Ready".into(),
                Some("cp-2".into())
            ),
            (
                "Namespace".into(),
                "ns".into(),
                "NamespaceNetworkReady".into(),
                None
            ),
            (
                "NetworkPolicy".into(),
                "np".into(),
                "nsx-op/error".into(),
                None
            ),
        ]
    );
    assert_eq!(problems[0].reason.as_deref(), Some("SubnetPortNotReady"));
    assert_eq!(problems[0].message.as_deref(), Some("no IP left"));
    assert_eq!(
        problems[2].message.as_deref(),
        Some("NETWORK_POLICY_VALIDATION_FAILED")
    );
    // The annotation is the NetworkPolicy's own claim; the conditions are not.
    assert_eq!(
        problems.iter().map(|p| p.claim).collect::<Vec<_>>(),
        [false, false, true]
    );
}

#[test]
fn realization_of_ncp_and_capv_conditions_and_bounded_text() {
    let long = "x".repeat(MAX_TEXT_CHARS + 10);
    let net = NetworkObjects {
        virtual_networks: vec![obj(
            json!({"metadata": {"name": "tkc-vnet"}, "status": {"conditions": [
            condition("Ready", "False", "", &long)]}}),
        )],
        vsphere_cluster: Some(obj(
            json!({"metadata": {"name": "tkc"}, "status": {"conditions": [
            condition("ClusterNetworkReady", "False", "ClusterNetworkProvisionFailed", "subnetset not ready")]}}),
        )),
        // No condition at all says nothing.
        subnet_sets: vec![obj(json!({"metadata": {"name": "quiet"}}))],
        ..NetworkObjects::default()
    };
    let problems = realization(&net);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0].kind, "VirtualNetwork");
    assert_eq!(
        problems[0].message.as_ref().unwrap().chars().count(),
        MAX_TEXT_CHARS + 1
    );
    assert_eq!(problems[1].kind, "VSphereCluster");
    assert_eq!(
        problems[1].reason.as_deref(),
        Some("ClusterNetworkProvisionFailed")
    );
    assert!(realization(&NetworkObjects::default()).is_empty());
}

/// More claims than the bound: the first by name, and one more that counts the rest.
#[test]
fn claims_are_bounded() {
    let nps: Vec<DynamicObject> = (0..MAX_CLAIMS + 5)
        .map(|i| {
            obj(
                json!({"metadata": {"name": format!("np-{i:02}"), "namespace": "ns",
                "annotations": {NSX_ERROR_ANNOTATION: "e"}}}),
            )
        })
        .collect();
    let net = NetworkObjects {
        network_policies: nps,
        ..NetworkObjects::default()
    };
    let problems = realization(&net);
    assert_eq!(problems.len(), MAX_CLAIMS + 1);
    assert_eq!(problems[0].name, "np-00");
    assert_eq!(
        problems[MAX_CLAIMS].message.as_deref(),
        Some("5 more NetworkPolicies carry the annotation")
    );
}

#[test]
fn nsx_vpc_fixtures_give_the_failed_port() {
    let inv = fixture_inventory("nsx-vpc", &[group(VPC, "v1alpha1")]);
    let problems = realization(&inv.network_of("tkc-prod").unwrap());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].vm.as_deref(), Some("tkc-prod-7xk2p-bx2lk"));
    assert_eq!(problems[0].reason.as_deref(), Some("SubnetPortNotReady"));
}

#[test]
fn a_bundle_gives_the_same_findings() {
    let inv = fixture_inventory("nsx-vpc", &[group(VPC, "v1alpha1")]);
    let before = inv.network_of("tkc-prod").unwrap();
    let objects = inv.objects_of("tkc-prod");
    let back = crate::supervisor::Inventory::from_objects("ns-prod", inv.apis.clone(), &objects);
    let after = back.network_of("tkc-prod").unwrap();
    assert_eq!(realization(&after), realization(&before));
}

#[test]
fn nsx_ncp_fixtures_give_none() {
    let inv = fixture_inventory(
        "nsx-ncp",
        &[
            group("nsx.vmware.com", "v1alpha1"),
            group("vmware.com", "v1alpha1"),
            group("vmware.infrastructure.cluster.x-k8s.io", "v1beta1"),
        ],
    );
    assert!(realization(&inv.network_of("tkc-prod").unwrap()).is_empty());
}

#[tokio::test]
async fn a_forbidden_list_leaves_the_ports_findings() {
    let (_api, client) = served("nsx-vpc-forbidden");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    let inv = crate::supervisor::Inventory::of_cluster(&client, &apis, &scope(), "tkc-prod")
        .await
        .unwrap();
    assert_eq!(realization(&inv.network_of("tkc-prod").unwrap()).len(), 1);
}

/// The rogue VMs' failed ports are no finding: only the uid chain's VMs' ports count.
#[test]
fn labelled_rogue_vms_failed_ports_are_no_finding() {
    let extra: Vec<serde_json::Value> = (0..16).flat_map(rogue).collect();
    let inv = inventory_with("nsx-vpc", &[group(VPC, "v1alpha1")], extra);
    let problems = realization(&inv.network_of("tkc-prod").unwrap());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].vm.as_deref(), Some("tkc-prod-7xk2p-bx2lk"));
}

#[test]
fn a_port_naming_a_real_vm_with_another_uid_is_no_finding() {
    let forged = json!({"apiVersion": "crd.nsx.vmware.com/v1alpha1", "kind": "SubnetPort",
        "metadata": {"name": "forged-port", "namespace": "ns-prod",
            "ownerReferences": [{"apiVersion": "vmoperator.vmware.com/v1alpha3",
                "kind": "VirtualMachine", "name": "tkc-prod-7xk2p-4rz8m", "uid": "not-its-uid", "controller": true}]},
        "spec": {"subnetSet": "tkc-prod-vnet"},
        "status": {"conditions": [condition("Ready", "False", "SubnetPortNotReady", "forged")]}});
    let inv = inventory_with("nsx-vpc", &[group(VPC, "v1alpha1")], vec![forged]);
    let problems = realization(&inv.network_of("tkc-prod").unwrap());
    assert!(problems.iter().all(|p| p.name != "forged-port"));
}

/// Only the infrastructureRef's VSphereCluster, owned by the Cluster's uid, has findings.
#[test]
fn only_the_clusters_vsphere_cluster_has_findings() {
    let groups = [
        group(VPC, "v1alpha1"),
        group("vmware.infrastructure.cluster.x-k8s.io", "v1beta1"),
    ];
    let labelled = vsphere_cluster(
        "a-labelled",
        json!({"cluster.x-k8s.io/cluster-name": "tkc-prod"}),
        None,
        "False",
    );
    let inv = inventory_with("nsx-vpc", &groups, vec![labelled]);
    let problems = realization(&inv.network_of("tkc-prod").unwrap());
    assert!(problems.iter().all(|p| p.kind != "VSphereCluster"));

    let mut all = crate::testing::fixture_objects("healthy-v1alpha3");
    all.retain(|o| o["kind"] != "VSphereCluster");
    all.push(vsphere_cluster(
        "tkc-prod-x7p2n",
        json!({}),
        Some("another-uid"),
        "False",
    ));
    let apis = crate::supervisor::discovery::from_answer(
        &json!({"kind": "APIGroupList", "groups": [
            group("vmoperator.vmware.com", "v1alpha3"), group("cluster.x-k8s.io", "v1beta1"),
            group("controlplane.cluster.x-k8s.io", "v1beta1"), groups[0].clone(), groups[1].clone()]}),
        "sv",
    )
    .unwrap();
    let inv = crate::supervisor::Inventory::from_objects("ns-prod", apis, &all);
    assert!(realization(&inv.network_of("tkc-prod").unwrap()).is_empty());
}
