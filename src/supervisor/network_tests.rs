//! The network read's decisions (which requests for which discovery), the 403 note, the slice
//! of one cluster, and the realization findings.

use kube::api::DynamicObject;
use serde_json::{json, Value};

use super::*;
use crate::supervisor::discovery::from_answer;

fn group(name: &str, version: &str) -> Value {
    json!({"name": name, "preferredVersion": {"version": version}})
}

fn apis(extra: &[Value]) -> SupervisorApis {
    let mut groups = vec![
        group("vmoperator.vmware.com", "v1alpha3"),
        group("cluster.x-k8s.io", "v1beta1"),
        group("vmware.infrastructure.cluster.x-k8s.io", "v1beta1"),
        group("networking.k8s.io", "v1"),
    ];
    groups.extend(extra.iter().cloned());
    from_answer(&json!({"kind": "APIGroupList", "groups": groups}), "sv").unwrap()
}

fn planned(extra: &[Value]) -> Vec<String> {
    plan(&apis(extra))
        .iter()
        .map(|(_, ar)| format!("{} {}", resource_name(ar), ar.api_version))
        .collect()
}

#[test]
fn no_nsx_group_means_no_request() {
    assert!(planned(&[]).is_empty());
    // NetworkPolicies and VSphereClusters alone are every Supervisor's: still nothing.
    assert!(NetworkRead::planned(&apis(&[])).is_none());
}

#[test]
fn vpc_reads_its_kinds_and_the_namespace_conditions() {
    assert_eq!(
        planned(&[group("crd.nsx.vmware.com", "v1alpha1")]),
        [
            "securitypolicies.crd.nsx.vmware.com crd.nsx.vmware.com/v1alpha1",
            "networkpolicies.networking.k8s.io networking.k8s.io/v1",
            "subnetsets.crd.nsx.vmware.com crd.nsx.vmware.com/v1alpha1",
            "subnets.crd.nsx.vmware.com crd.nsx.vmware.com/v1alpha1",
            "subnetports.crd.nsx.vmware.com crd.nsx.vmware.com/v1alpha1",
            "namespaces v1",
            "vsphereclusters.vmware.infrastructure.cluster.x-k8s.io vmware.infrastructure.cluster.x-k8s.io/v1beta1",
        ]
    );
}

#[test]
fn ncp_reads_the_t1_policies_and_the_virtual_network() {
    assert_eq!(
        planned(&[group("nsx.vmware.com", "v1alpha1"), group("vmware.com", "v1alpha1")]),
        [
            "securitypolicies.nsx.vmware.com nsx.vmware.com/v1alpha1",
            "networkpolicies.networking.k8s.io networking.k8s.io/v1",
            "virtualnetworks.vmware.com vmware.com/v1alpha1",
            "namespaces v1",
            "vsphereclusters.vmware.infrastructure.cluster.x-k8s.io vmware.infrastructure.cluster.x-k8s.io/v1beta1",
        ]
    );
}

#[test]
fn an_aggregated_vmware_com_without_virtual_networks_is_not_nsx() {
    let answer = json!({"kind": "APIGroupDiscoveryList", "items": [
        {"metadata": {"name": "vmoperator.vmware.com"}, "versions": [{"version": "v1alpha3", "resources": [
            {"resource": "virtualmachines", "responseKind": {"kind": "VirtualMachine"}}]}]},
        {"metadata": {"name": "cluster.x-k8s.io"}, "versions": [{"version": "v1beta1", "resources": [
            {"resource": "clusters", "responseKind": {"kind": "Cluster"}},
            {"resource": "machines", "responseKind": {"kind": "Machine"}}]}]},
        {"metadata": {"name": "vmware.com"}, "versions": [{"version": "v1alpha1", "resources": [
            {"resource": "somethings", "responseKind": {"kind": "Something"}}]}]}
    ]});
    assert!(plan(&from_answer(&answer, "sv").unwrap()).is_empty());
}

#[test]
fn failures_are_notes_naming_verb_and_resource() {
    let status = |code: u16, reason: &str| {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("\u{1b}]0;evil\u{7} /etc/passwd", reason).with_code(code),
        ))
    };
    assert_eq!(failure(&status(403, "Forbidden")), "forbidden");
    assert_eq!(failure(&status(404, "NotFound")), "not found");
    // The server's message never reaches the note; its reason only as letters and digits.
    assert_eq!(
        failure(&status(500, "Internal\u{1b}[2JError")),
        "failed (HTTP 500 Internal2JError)"
    );
    assert_eq!(failure(&status(503, "")), "failed (HTTP 503)");
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

fn condition(t: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": t, "status": status, "reason": reason, "message": message})
}

/// A VPC namespace: the cluster's VMs on SubnetSet tkc-vnet, one failed port, another
/// cluster's SubnetSet and port, and the conditions.
fn vpc_read() -> (NetworkRead, Vec<DynamicObject>) {
    let mut read = NetworkRead::planned(&apis(&[group("crd.nsx.vmware.com", "v1alpha1")])).unwrap();
    let vms: Vec<DynamicObject> = ["cp-1", "cp-2"]
        .iter()
        .map(|n| {
            obj(json!({"apiVersion": "vmoperator.vmware.com/v1alpha3", "kind": "VirtualMachine",
                "metadata": {"name": n, "namespace": "ns", "uid": format!("uid-{n}")},
                "spec": {"network": {"interfaces": [{"name": "eth0", "network":
                    {"apiVersion": "crd.nsx.vmware.com/v1alpha1", "kind": "SubnetSet", "name": "tkc-vnet"}}]}}}))
        })
        .collect();
    let port = |n: &str, vm: &str, set: &str, ready: &str| {
        obj(
            json!({"metadata": {"name": n, "namespace": "ns", "ownerReferences": [
            {"apiVersion": "vmoperator.vmware.com/v1alpha3", "kind": "VirtualMachine", "name": vm, "uid": format!("uid-{vm}"), "controller": true}]},
            "spec": {"subnetSet": set},
            "status": {"conditions": [condition("Ready", ready, "SubnetPortNotReady", "no IP left")]}}),
        )
    };
    let objects = [
        (
            NetKind::SubnetSet,
            obj(json!({"metadata": {"name": "tkc-vnet", "namespace": "ns"},
            "status": {"conditions": [condition("Ready", "True", "", "")]}})),
        ),
        (
            NetKind::SubnetSet,
            obj(
                json!({"metadata": {"name": "other-vnet", "namespace": "ns"},
            "status": {"conditions": [condition("Ready", "False", "SubnetSetNotReady", "x")]}}),
            ),
        ),
        (
            NetKind::SubnetPort,
            port("cp-1-tkc-vnet-eth0", "cp-1", "tkc-vnet", "True"),
        ),
        (
            NetKind::SubnetPort,
            port("cp-2-tkc-vnet-eth0", "cp-2", "tkc-vnet", "False"),
        ),
        (
            NetKind::SubnetPort,
            port("db-other-vnet-eth0", "db", "other-vnet", "False"),
        ),
        (
            NetKind::VpcSecurityPolicy,
            obj(json!({"metadata": {"name": "drop-etcd", "namespace": "ns"}})),
        ),
        (
            NetKind::NetworkPolicy,
            obj(json!({"metadata": {"name": "np", "namespace": "ns",
            "annotations": {"nsx-op/error": "NETWORK_POLICY_VALIDATION_FAILED"}}})),
        ),
        (
            NetKind::Namespace,
            obj(
                json!({"metadata": {"name": "ns"}, "status": {"conditions": [
            condition("NamespaceNetworkReady", "False", "VPCNotReady", "Error happened to create or update VPC")]}}),
            ),
        ),
        (
            NetKind::Namespace,
            obj(json!({"metadata": {"name": "elsewhere"}})),
        ),
        (
            NetKind::VSphereCluster,
            obj(json!({"metadata": {"name": "tkc-abcde", "namespace": "ns"},
            "status": {"conditions": [condition("ClusterNetworkReady", "True", "", "")]}})),
        ),
    ];
    for (k, o) in objects {
        read.objects.entry(k).or_default().push(o);
    }
    (read, vms)
}

/// The Cluster `tkc` of namespace `ns`, its infrastructure the VSphereCluster `tkc-abcde`.
fn cluster() -> DynamicObject {
    obj(
        json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "tkc", "namespace": "ns", "uid": "cluster-uid"},
        "spec": {"infrastructureRef": {"apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "VSphereCluster", "name": "tkc-abcde"}}}),
    )
}

#[test]
fn a_cluster_gets_its_own_network_objects_and_the_namespace_policies() {
    let (read, vms) = vpc_read();
    let vms: Vec<&DynamicObject> = vms.iter().collect();
    let net = read.of_cluster("ns", &cluster(), &vms);
    let names = |l: &[DynamicObject]| l.iter().map(|o| name(o).to_string()).collect::<Vec<_>>();
    assert_eq!(names(&net.subnet_sets), ["tkc-vnet"]);
    assert_eq!(
        names(&net.subnet_ports),
        ["cp-1-tkc-vnet-eth0", "cp-2-tkc-vnet-eth0"]
    );
    assert_eq!(net.security_policies.len(), 1);
    assert_eq!(net.security_policies[0].0, NetKind::VpcSecurityPolicy);
    assert_eq!(net.namespace_object.as_ref().map(name), Some("ns"));
    assert_eq!(net.vsphere_cluster.as_ref().map(name), Some("tkc-abcde"));
    assert_eq!(net.control_plane_vms, ["cp-1", "cp-2"]);
    let read: Vec<(String, usize)> = net
        .read
        .iter()
        .map(|r| (r.resource.clone(), r.count))
        .collect();
    assert!(
        read.contains(&("subnetports.crd.nsx.vmware.com".into(), 2)),
        "{read:?}"
    );
    assert!(read.contains(&("namespaces".into(), 1)), "{read:?}");
    assert!(net.unread.is_empty());
}

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

#[test]
fn a_cross_namespace_read_splits_by_namespace() {
    let (read, _) = vpc_read();
    let part = read.in_namespace("elsewhere");
    assert!(part.objects[&NetKind::SubnetPort].is_empty());
    assert_eq!(part.objects[&NetKind::Namespace].len(), 1);
}

/// The objects of healthy-v1alpha3 and `set`'s own files (tests/fixtures/supervisor), as the
/// fake serves them, and the discovery of a Supervisor serving `groups` too.
fn fixture_inventory(set: &str, groups: &[Value]) -> crate::supervisor::Inventory {
    use serde::Deserialize;
    let mut all = crate::testing::fixture_objects("healthy-v1alpha3");
    let dir = format!(
        "{}/tests/fixtures/supervisor/{set}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "fake.yaml")
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).unwrap();
            if !v.is_null() {
                all.push(v);
            }
        }
    }
    let mut answer = json!({"kind": "APIGroupList", "groups": [
        group("vmoperator.vmware.com", "v1alpha3"),
        group("cluster.x-k8s.io", "v1beta1"),
        group("controlplane.cluster.x-k8s.io", "v1beta1"),
        group("networking.k8s.io", "v1"),
    ]});
    answer["groups"]
        .as_array_mut()
        .unwrap()
        .extend(groups.iter().cloned());
    crate::supervisor::Inventory::from_objects("ns-prod", from_answer(&answer, "sv").unwrap(), &all)
}

fn summary(net: &NetworkObjects) -> Vec<String> {
    net.objects()
        .iter()
        .map(|(k, o)| format!("{k} {}", name(o)))
        .collect()
}

#[test]
fn nsx_vpc_fixtures_give_the_cluster_its_objects_and_the_failed_port() {
    let inv = fixture_inventory("nsx-vpc", &[group("crd.nsx.vmware.com", "v1alpha1")]);
    let net = inv.network_of("tkc-prod").unwrap();
    assert_eq!(net.security_policies.len(), 5);
    assert_eq!(net.subnet_sets.len(), 1);
    assert_eq!(net.subnet_ports.len(), 3);
    assert_eq!(net.vms.len(), 3);
    let endpoints = net.vm_endpoints();
    assert_eq!(endpoints[0].name, "tkc-prod-7xk2p-4rz8m");
    assert_eq!(endpoints[0].ip, Some("198.18.0.11".parse().unwrap()));
    assert_eq!(
        endpoints[0]
            .labels
            .get("capv.vmware.com/cluster.role")
            .map(String::as_str),
        Some("controlplane")
    );
    assert!(net.namespace_object.is_some());
    let problems = realization(&net);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].vm.as_deref(), Some("tkc-prod-7xk2p-bx2lk"));
    assert_eq!(problems[0].reason.as_deref(), Some("SubnetPortNotReady"));
    // No NSX group, no network (and the same objects for the facts as before).
    let plain = fixture_inventory("nsx-vpc", &[]);
    assert!(plain.network_of("tkc-prod").is_none());
    assert!(plain.network.is_none());
}

#[test]
fn the_bundle_keeps_the_network_objects() {
    let groups = [group("crd.nsx.vmware.com", "v1alpha1")];
    let inv = fixture_inventory("nsx-vpc", &groups);
    let before = inv.network_of("tkc-prod").unwrap();
    let objects = inv.objects_of("tkc-prod");
    // Every network object is in the bundle once, with its type, and never a Secret.
    assert!(objects.iter().all(|o| o["kind"] != "Secret"));
    let policies = objects
        .iter()
        .filter(|o| {
            o["apiVersion"] == "crd.nsx.vmware.com/v1alpha1" && o["kind"] == "SecurityPolicy"
        })
        .count();
    assert_eq!(policies, 5);
    let back = crate::supervisor::Inventory::from_objects("ns-prod", inv.apis.clone(), &objects);
    let after = back.network_of("tkc-prod").unwrap();
    assert_eq!(summary(&after), summary(&before));
    assert_eq!(realization(&after), realization(&before));
    // The facts are made from the same objects as before.
    assert_eq!(
        back.facts("sv", "tkc-prod").unwrap(),
        inv.facts("sv", "tkc-prod").unwrap()
    );
    // Without the NSX groups, a bundle's objects are those of before the network was read.
    let plain = fixture_inventory("nsx-vpc", &[]);
    assert!(plain
        .objects_of("tkc-prod")
        .iter()
        .all(|o| o["kind"] != "SecurityPolicy"));
}

#[test]
fn nsx_ncp_fixtures_give_the_virtual_network_and_the_t1_policy() {
    let inv = fixture_inventory(
        "nsx-ncp",
        &[
            group("nsx.vmware.com", "v1alpha1"),
            group("vmware.com", "v1alpha1"),
            // The VSphereCluster: the VirtualNetwork is the cluster's by its owner's uid.
            group("vmware.infrastructure.cluster.x-k8s.io", "v1beta1"),
        ],
    );
    let net = inv.network_of("tkc-prod").unwrap();
    assert_eq!(net.security_policies.len(), 1);
    assert_eq!(net.security_policies[0].0, NetKind::T1SecurityPolicy);
    assert_eq!(summary(&net)[1], "VirtualNetwork tkc-prod-vnet");
    assert!(realization(&net).is_empty());
}

/// The supervisor fixture `set` served by the fake, and a client to it.
fn served(set: &str) -> (etcdnet_fakeapi::FakeApi, kube::Client) {
    let api = etcdnet_fakeapi::FakeApi::start_with(
        etcdnet_fakeapi::FakeConfig::from_dir(etcdnet_fakeapi::supervisor_set(set))
            .unwrap()
            .var("WORKLOAD_URL", "https://127.0.0.1:1"),
    )
    .unwrap();
    let config = kube::Config::new(api.url().parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    (api, client)
}

fn scope() -> crate::supervisor::Scope {
    crate::supervisor::Scope {
        context: "sv".into(),
        namespace: "ns-prod".into(),
    }
}

#[tokio::test]
async fn a_forbidden_list_is_a_note_and_the_rest_is_read() {
    let (_api, client) = served("nsx-vpc-forbidden");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    let inv = crate::supervisor::Inventory::of_cluster(&client, &apis, &scope(), "tkc-prod")
        .await
        .unwrap();
    let net = inv.network_of("tkc-prod").unwrap();
    assert_eq!(
        net.unread,
        ["list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden"]
    );
    assert!(net.security_policies.is_empty());
    assert!(!net
        .read
        .iter()
        .any(|r| r.resource == "securitypolicies.crd.nsx.vmware.com"));
    assert_eq!(net.subnet_ports.len(), 3);
    assert_eq!(realization(&net).len(), 1);
    // The facts are the ones healthy-v1alpha3 gives.
    assert_eq!(inv.facts("sv", "tkc-prod").unwrap().nodes.len(), 3);
}

#[tokio::test]
async fn a_supervisor_without_nsx_is_asked_nothing_more() {
    let (api, client) = served("healthy-v1alpha3");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    api.clear_requests();
    assert!(read(&client, &apis, Some("ns-prod")).await.is_none());
    assert!(read(&client, &apis, None).await.is_none());
    assert!(api.requests().is_empty());

    let (api, client) = served("nsx-vpc");
    let apis = crate::supervisor::discovery::discover(&client, "sv")
        .await
        .unwrap();
    api.clear_requests();
    let net = read(&client, &apis, Some("ns-prod")).await.unwrap();
    // One request per planned resource, each answered.
    assert_eq!(api.requests().len(), plan(&apis).len());
    assert_eq!(net.answered.len(), plan(&apis).len());
    assert!(net.unread.is_empty(), "{:?}", net.unread);
}

#[test]
fn a_bundles_notes_are_bounded_and_unmark_what_they_name() {
    let apis = apis(&[group("crd.nsx.vmware.com", "v1alpha1")]);
    let mut notes =
        vec!["list securitypolicies.crd.nsx.vmware.com in namespace ns: forbidden".to_string()];
    notes.extend((0..100).map(|_| "x".repeat(1000)));
    let read = NetworkRead::planned(&apis).unwrap().with_notes(&notes);
    assert_eq!(read.unread.len(), MAX_NOTES);
    assert_eq!(read.unread[1].chars().count(), MAX_NOTE_CHARS + 1);
    assert!(!read.answered.contains(&NetKind::VpcSecurityPolicy));
    assert!(read.answered.contains(&NetKind::SubnetPort));
}
