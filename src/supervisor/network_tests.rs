//! The network read's decisions (which requests for which discovery), the 403 note, the slice
//! of one cluster (the realization findings are `analyse::realization`'s).

use kube::api::DynamicObject;
use serde_json::{json, Value};

use super::*;
use crate::supervisor::discovery::from_answer;
use crate::supervisor::kinds::KindId;

pub(crate) fn group(name: &str, version: &str) -> Value {
    json!({"name": name, "preferredVersion": {"version": version}})
}

pub(crate) fn apis(extra: &[Value]) -> SupervisorApis {
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

pub(crate) fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

pub(crate) fn condition(t: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": t, "status": status, "reason": reason, "message": message})
}

/// A VPC namespace: the cluster's VMs on SubnetSet tkc-vnet, one failed port, another
/// cluster's SubnetSet and port, and the conditions.
pub(crate) fn vpc_read() -> (NetworkRead, Vec<DynamicObject>) {
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
pub(crate) fn cluster() -> DynamicObject {
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
fn a_cross_namespace_read_splits_by_namespace() {
    let (read, _) = vpc_read();
    let part = read.in_namespace("elsewhere");
    assert!(part.objects[&NetKind::SubnetPort].is_empty());
    assert_eq!(part.objects[&NetKind::Namespace].len(), 1);
}

/// The objects of healthy-v1alpha3 and `set`'s own files (tests/fixtures/supervisor), as the
/// fake serves them, and the discovery of a Supervisor serving `groups` too.
pub(crate) fn fixture_inventory(set: &str, groups: &[Value]) -> crate::supervisor::Inventory {
    inventory_with(set, groups, Vec::new())
}

/// [`fixture_inventory`] with `extra` objects after the set's.
pub(crate) fn inventory_with(
    set: &str,
    groups: &[Value],
    extra: Vec<Value>,
) -> crate::supervisor::Inventory {
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
    all.extend(extra);
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
}

/// The supervisor fixture `set` served by the fake, and a client to it.
pub(crate) fn served(set: &str) -> (etcdnet_fakeapi::FakeApi, kube::Client) {
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

pub(crate) fn scope() -> crate::supervisor::Scope {
    crate::supervisor::Scope {
        context: "sv".into(),
        namespace: "ns-prod".into(),
        kubectl: Default::default(),
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
    // The facts are the ones healthy-v1alpha3 gives.
    assert_eq!(inv.facts("sv", "tkc-prod").unwrap().nodes.len(), 3);
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

pub(crate) const VPC: &str = "crd.nsx.vmware.com";
pub(crate) const T1: &str = "nsx.vmware.com";
pub(crate) const REAL_VMS: [&str; 3] = [
    "tkc-prod-7xk2p-4rz8m",
    "tkc-prod-7xk2p-9qtvw",
    "tkc-prod-7xk2p-bx2lk",
];

/// A VM with the cluster's control-plane labels that no Machine of the KCP leads to (named to
/// come first in the API's order), on the cluster's SubnetSet, and its failed port.
pub(crate) fn rogue(i: usize) -> [Value; 2] {
    let n = format!("aaa-rogue-{i:02}");
    [
        json!({"apiVersion": "vmoperator.vmware.com/v1alpha3", "kind": "VirtualMachine",
            "metadata": {"name": n, "namespace": "ns-prod", "uid": format!("rogue-uid-{i}"),
                "labels": {"capv.vmware.com/cluster.name": "tkc-prod",
                    "capv.vmware.com/cluster.role": "controlplane",
                    "cluster.x-k8s.io/cluster-name": "tkc-prod"}},
            "spec": {"network": {"interfaces": [{"name": "eth0", "network":
                {"apiVersion": "crd.nsx.vmware.com/v1alpha1", "kind": "SubnetSet", "name": "tkc-prod-vnet"}}]}},
            "status": {"powerState": "PoweredOn", "network": {"primaryIP4": format!("198.18.0.{}", 100 + i)}}}),
        json!({"apiVersion": "crd.nsx.vmware.com/v1alpha1", "kind": "SubnetPort",
            "metadata": {"name": format!("{n}-tkc-prod-vnet-eth0"), "namespace": "ns-prod",
                "ownerReferences": [{"apiVersion": "vmoperator.vmware.com/v1alpha3",
                    "kind": "VirtualMachine", "name": n, "uid": format!("rogue-uid-{i}"), "controller": true}]},
            "spec": {"subnetSet": "tkc-prod-vnet"},
            "status": {"conditions": [condition("Ready", "False", "SubnetPortNotReady", "rogue")]}}),
    ]
}

pub(crate) fn names_of(list: &[DynamicObject]) -> Vec<String> {
    let mut n: Vec<String> = list.iter().map(|o| name(o).to_string()).collect();
    n.sort();
    n
}

/// 16 VMs carrying the cluster's control-plane labels (ahead of the real ones in the
/// API's order) are not the cluster's VMs: the evaluation has the 3 of the uid chain, the
/// blocking policy is still found on them, and the rogue VMs' failed ports are no finding.
#[test]
fn labelled_rogue_vms_never_push_the_real_ones_out() {
    let extra: Vec<Value> = (0..16).flat_map(rogue).collect();
    let inv = inventory_with("nsx-vpc", &[group(VPC, "v1alpha1")], extra);
    assert!(
        inv.of(KindId::VirtualMachine).len() >= 3 + 16,
        "the rogue VMs are read"
    );
    let net = inv.network_of("tkc-prod").unwrap();
    assert_eq!(names_of(&net.vms), REAL_VMS);
    let mut cp = net.control_plane_vms.clone();
    cp.sort();
    assert_eq!(cp, REAL_VMS);
    // Only the real VMs' ports; the one failed port is bx2lk's.
    assert_eq!(net.subnet_ports.len(), 3);
    // The evaluation of these (analyse::network's trust tests) finds the Drop between them.
    // The bundle keeps the real VMs among the objects the verdict uses.
    let (objects, essential) = inv.objects_ranked("tkc-prod");
    let kept: Vec<&str> = objects[..essential]
        .iter()
        .filter(|o| o["kind"] == "VirtualMachine")
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    for vm in REAL_VMS {
        assert!(kept.contains(&vm), "{kept:?}");
    }
}

/// A SubnetPort is a VM's by its controller's uid: one naming a real VM with another uid is
/// not the cluster's, and its failure is no finding.
#[test]
fn a_port_naming_a_real_vm_with_another_uid_is_not_its_port() {
    let forged = json!({"apiVersion": "crd.nsx.vmware.com/v1alpha1", "kind": "SubnetPort",
        "metadata": {"name": "forged-port", "namespace": "ns-prod",
            "ownerReferences": [{"apiVersion": "vmoperator.vmware.com/v1alpha3",
                "kind": "VirtualMachine", "name": "tkc-prod-7xk2p-4rz8m", "uid": "not-its-uid", "controller": true}]},
        "spec": {"subnetSet": "tkc-prod-vnet"},
        "status": {"conditions": [condition("Ready", "False", "SubnetPortNotReady", "forged")]}});
    let inv = inventory_with("nsx-vpc", &[group(VPC, "v1alpha1")], vec![forged]);
    let net = inv.network_of("tkc-prod").unwrap();
    assert!(!names_of(&net.subnet_ports).contains(&"forged-port".to_string()));
}

pub(crate) fn vsphere_cluster(
    name: &str,
    labels: Value,
    owner_uid: Option<&str>,
    ready: &str,
) -> Value {
    let mut o = json!({"apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "VSphereCluster",
        "metadata": {"name": name, "namespace": "ns-prod", "uid": format!("uid-{name}"), "labels": labels},
        "status": {"conditions": [condition("ClusterNetworkReady", ready, "ClusterNetworkProvisionFailed", name)]}});
    if let Some(u) = owner_uid {
        o["metadata"]["ownerReferences"] = json!([{"apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Cluster", "name": "tkc-prod", "uid": u, "controller": true}]);
    }
    o
}

/// The VSphereCluster is the one the Cluster's infrastructureRef names, owned by the Cluster's
/// uid: never one that only carries the cluster's label (ahead in the API's order), nor one of
/// the right name owned by another uid.
#[test]
fn the_vsphere_cluster_is_the_infrastructure_refs_by_uid() {
    let infra = [group("vmware.infrastructure.cluster.x-k8s.io", "v1beta1")];
    let groups = [group(VPC, "v1alpha1"), infra[0].clone()];
    let labelled = vsphere_cluster(
        "a-labelled",
        json!({"cluster.x-k8s.io/cluster-name": "tkc-prod"}),
        None,
        "False",
    );
    let inv = inventory_with("nsx-vpc", &groups, vec![labelled]);
    let net = inv.network_of("tkc-prod").unwrap();
    // healthy-v1alpha3's own, owned by the Cluster's uid, and Ready: no finding.
    assert_eq!(
        net.vsphere_cluster.as_ref().map(name),
        Some("tkc-prod-x7p2n")
    );

    // The real one replaced by one of its name owned by another Cluster uid: none.
    let mut all = crate::testing::fixture_objects("healthy-v1alpha3");
    all.retain(|o| o["kind"] != "VSphereCluster");
    all.push(vsphere_cluster(
        "tkc-prod-x7p2n",
        json!({}),
        Some("another-uid"),
        "False",
    ));
    let apis = from_answer(
        &json!({"kind": "APIGroupList", "groups": [
            group("vmoperator.vmware.com", "v1alpha3"), group("cluster.x-k8s.io", "v1beta1"),
            group("controlplane.cluster.x-k8s.io", "v1beta1"), groups[0].clone(), groups[1].clone()]}),
        "sv",
    )
    .unwrap();
    let inv = crate::supervisor::Inventory::from_objects("ns-prod", apis, &all);
    let net = inv.network_of("tkc-prod").unwrap();
    assert!(net.vsphere_cluster.is_none());
}

fn both_groups() -> NetworkRead {
    NetworkRead::planned(&apis(&[group(VPC, "v1alpha1"), group(T1, "v1alpha1")])).unwrap()
}

fn vm_on(kind: &str) -> DynamicObject {
    obj(
        json!({"apiVersion": "vmoperator.vmware.com/v1alpha3", "kind": "VirtualMachine",
        "metadata": {"name": "cp-1", "namespace": "ns", "uid": "uid-cp-1"},
        "spec": {"network": {"interfaces": [{"name": "eth0", "network": {"kind": kind, "name": "tkc-vnet"}}]}}}),
    )
}

fn namespace_object(annotations: Value) -> DynamicObject {
    obj(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "ns", "annotations": annotations}}))
}

/// Which group nsx-operator reconciles, as nsx-operator decides it (one controller for the
/// Supervisor: crd.nsx.vmware.com while any namespace is on VPC), told from discovery, the
/// Namespace's annotation, then the uid chain's VMs' interfaces; never nsx.vmware.com from one
/// namespace on NCP (another may be on VPC).
#[test]
fn the_live_policy_group_is_told_from_what_the_supervisor_shows() {
    let live = |read: &NetworkRead, vms: &[&DynamicObject]| {
        let net = read.of_cluster("ns", &cluster(), vms);
        (
            net.live_policy_kind,
            net.networking_basis.unwrap_or_default(),
        )
    };
    // Discovery: one group served.
    let only_vpc = NetworkRead::planned(&apis(&[group(VPC, "v1alpha1")])).unwrap();
    let (k, why) = live(&only_vpc, &[]);
    assert_eq!(k, Some(NetKind::VpcSecurityPolicy));
    assert!(why.contains("securitypolicies.crd.nsx.vmware.com"), "{why}");
    let only_t1 = NetworkRead::planned(&apis(&[group(T1, "v1alpha1")])).unwrap();
    let (k, why) = live(&only_t1, &[]);
    assert_eq!(k, Some(NetKind::T1SecurityPolicy));
    assert!(why.contains("securitypolicies.nsx.vmware.com"), "{why}");

    // Both served: nothing to tell from.
    let both = both_groups();
    assert_eq!(live(&both, &[]), (None, String::new()));
    // The Namespace's annotation (the Supervisor's, cluster-scoped).
    let mut annotated = both_groups();
    annotated.objects.insert(
        NetKind::Namespace,
        vec![namespace_object(
            json!({VPC_NETWORK_CONFIG_ANNOTATION: "default"}),
        )],
    );
    let (k, why) = live(&annotated, &[]);
    assert_eq!(k, Some(NetKind::VpcSecurityPolicy));
    assert!(why.contains(VPC_NETWORK_CONFIG_ANNOTATION), "{why}");
    // A T1 annotation says nothing of the other namespaces.
    let mut t1_annotated = both_groups();
    t1_annotated.objects.insert(
        NetKind::Namespace,
        vec![namespace_object(
            json!({"nsx.vmware.com/t1_default_config": "true"}),
        )],
    );
    assert_eq!(live(&t1_annotated, &[]).0, None);
    // The uid chain's VMs: on a SubnetSet or Subnet, VPC; on a VirtualNetwork, not told.
    for kind in ["SubnetSet", "Subnet"] {
        let vm = vm_on(kind);
        let (k, why) = live(&both, &[&vm]);
        assert_eq!(k, Some(NetKind::VpcSecurityPolicy), "{kind}");
        assert!(why.contains(&format!("{kind} tkc-vnet")), "{why}");
    }
    let vm = vm_on("VirtualNetwork");
    assert_eq!(live(&both, &[&vm]).0, None);
    // v1alpha1's networkInterfaces, as vm-operator converts them.
    let old = |t: &str| {
        obj(
            json!({"apiVersion": "vmoperator.vmware.com/v1alpha1", "kind": "VirtualMachine",
            "metadata": {"name": "cp-1", "namespace": "ns", "uid": "uid-cp-1"},
            "spec": {"networkInterfaces": [{"networkType": t, "networkName": "tkc-vnet"}]}}),
        )
    };
    let vm = old("nsx-t-subnetset");
    let (k, why) = live(&both, &[&vm]);
    assert_eq!(k, Some(NetKind::VpcSecurityPolicy));
    assert!(
        why.contains("interface eth0 is on SubnetSet tkc-vnet"),
        "{why}"
    );
    let vm = old("nsx-t");
    assert_eq!(live(&both, &[&vm]).0, None);
}

fn t1_policy(ns: &str, name: &str, priority: i64) -> DynamicObject {
    obj(
        json!({"apiVersion": "nsx.vmware.com/v1alpha1", "kind": "SecurityPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"priority": priority, "appliedTo": [{}],
            "rules": [{"direction": "In", "action": "Drop", "ports": [{"protocol": "TCP", "port": 2380}]}]}}),
    )
}

/// T1/NCP: the other namespaces' policies are kept, the first 100 by priority, the rest
/// counted; the namespace's own are all kept whatever the others hold; on VPC none of them.
#[test]
fn other_namespaces_policies_are_bounded_by_priority_and_counted() {
    let mut read = NetworkRead::planned(&apis(&[group(T1, "v1alpha1")])).unwrap();
    read.objects.insert(
        NetKind::T1SecurityPolicy,
        (0..3)
            .map(|i| t1_policy("ns", &format!("own-{i}"), 50))
            .collect(),
    );
    // 150 in other namespaces, named against their priority: the cut is by priority.
    let others: Vec<DynamicObject> = (0..150)
        .map(|i| t1_policy(&format!("team-{}", i % 7), &format!("p-{:03}", 149 - i), i))
        .chain([t1_policy("ns", "own-0", 50)])
        .collect();
    read.other_policies = Some(Arc::new(others));
    let net = read.of_cluster("ns", &cluster(), &[]);
    assert_eq!(net.live_policy_kind, Some(NetKind::T1SecurityPolicy));
    let own: Vec<&str> = net
        .security_policies
        .iter()
        .filter(|(_, o)| in_ns(o, "ns"))
        .map(|(_, o)| name(o))
        .collect();
    assert_eq!(own, ["own-0", "own-1", "own-2"]);
    let kept: Vec<i64> = net
        .security_policies
        .iter()
        .filter(|(_, o)| !in_ns(o, "ns"))
        .map(|(_, o)| priority(o))
        .collect();
    assert_eq!(kept, (0..100).collect::<Vec<i64>>());
    assert_eq!(net.policies_left_out, 50);
    assert!(
        net.unread
            .iter()
            .any(|n| n.starts_with(OTHERS_NOTE) && n.contains("50 left out")),
        "{:?}",
        net.unread
    );
    // The note goes through a bundle: the count comes back.
    let back = NetworkRead::planned(&apis(&[group(T1, "v1alpha1")]))
        .unwrap()
        .with_notes(&net.unread);
    assert_eq!(back.others_left_out, Some(50));
    assert!(back.unread.is_empty(), "said again where it applies");

    // On VPC (both served, the Namespace annotated) the others cannot apply: none kept.
    let mut vpc = both_groups();
    vpc.objects.insert(
        NetKind::Namespace,
        vec![namespace_object(
            json!({VPC_NETWORK_CONFIG_ANNOTATION: "x"}),
        )],
    );
    vpc.other_policies = read.other_policies.clone();
    vpc.others_unread = Some(format!("{OTHERS_NOTE}: forbidden"));
    let net = vpc.of_cluster("ns", &cluster(), &[]);
    assert!(net.security_policies.is_empty());
    assert_eq!(net.policies_left_out, 0);
    assert!(net.unread.is_empty(), "{:?}", net.unread);
}

/// A 403 on the other namespaces' policies is a note that says what could not be seen, where
/// they could apply; through a bundle the note comes back the same.
#[test]
fn unread_other_namespaces_are_said_where_they_could_apply() {
    let note =
        format!("{OTHERS_NOTE}: list securitypolicies.nsx.vmware.com in all namespaces: forbidden");
    let mut read = both_groups();
    read.others_unread = Some(note.clone());
    let net = read.of_cluster("ns", &cluster(), &[]);
    assert_eq!(net.live_policy_kind, None);
    assert_eq!(net.unread, std::slice::from_ref(&note));
    assert!(net.unread[0].contains("appliedTo [{}] can apply to these VMs): "));
    let back = both_groups().with_notes(&net.unread);
    assert!(back.other_policies.is_none());
    assert_eq!(back.others_unread.as_deref(), Some(note.as_str()));
    assert!(
        back.answered.contains(&NetKind::T1SecurityPolicy),
        "the own list was read"
    );
    assert_eq!(back.of_cluster("ns", &cluster(), &[]).unread, [note]);
}

/// A list cut at its bound: the note names the namespace, and an evidence bundle's note gives
/// the count back; the own namespace's policies past the bound count as left out.
#[test]
fn a_cut_list_is_counted_and_read_back_from_its_note() {
    let items: Vec<DynamicObject> = (0..MAX_OBJECTS_PER_KIND + 12)
        .map(|i| t1_policy("ns", &format!("p-{i:04}"), 1))
        .chain((0..3).map(|i| t1_policy("other", &format!("o-{i}"), 1)))
        .collect();
    let (kept, left) = per_namespace(items);
    assert_eq!(kept.len(), MAX_OBJECTS_PER_KIND + 3);
    assert_eq!(left, BTreeMap::from([("ns".to_string(), 12)]));
    let note = cut_note("securitypolicies.nsx.vmware.com", "ns", 12);
    assert_eq!(
        note,
        "securitypolicies.nsx.vmware.com in namespace ns: only the first 500 of 512 objects kept"
    );
    let back = both_groups().with_notes(std::slice::from_ref(&note));
    assert_eq!(
        back.left_out
            .get(&(NetKind::T1SecurityPolicy, "ns".to_string())),
        Some(&12)
    );
    assert!(back.answered.contains(&NetKind::T1SecurityPolicy));
    let net = back.of_cluster("ns", &cluster(), &[]);
    assert_eq!(net.policies_left_out, 12);
    assert_eq!(net.unread, [note]);
}

/// Across all namespaces the one list is shared by every namespace's part.
#[test]
fn a_cross_namespace_read_shares_the_other_policies() {
    let mut read = both_groups();
    let all = Arc::new(vec![t1_policy("a", "x", 1), t1_policy("b", "y", 2)]);
    read.other_policies = Some(all.clone());
    let part = read.in_namespace("a");
    assert!(Arc::ptr_eq(part.other_policies.as_ref().unwrap(), &all));
    let net = part.of_cluster("a", &cluster(), &[]);
    let names: Vec<&str> = net.security_policies.iter().map(|(_, o)| name(o)).collect();
    assert_eq!(names, ["y"], "the other namespace's, not its own twice");
}

/// The other namespaces' policies go through an evidence bundle: kept among the objects the
/// verdict uses, and handed to the evaluation again by `analyse`.
#[test]
fn other_namespaces_policies_go_through_a_bundle() {
    let groups = [group(T1, "v1alpha1"), group("vmware.com", "v1alpha1")];
    let other = json!({"apiVersion": "nsx.vmware.com/v1alpha1", "kind": "SecurityPolicy",
        "metadata": {"name": "drop-all-peers", "namespace": "ns-platform"},
        "spec": {"priority": 1, "appliedTo": [{}], "rules": [{"direction": "In", "action": "Drop",
            "ports": [{"protocol": "TCP", "port": 2380}]}]}});
    let inv = inventory_with("nsx-ncp", &groups, vec![other]);
    let net = inv.network_of("tkc-prod").unwrap();
    assert_eq!(net.live_policy_kind, Some(NetKind::T1SecurityPolicy));
    let places = |net: &NetworkObjects| {
        net.security_policies
            .iter()
            .map(|(_, o)| format!("{}/{}", o.metadata.namespace.as_deref().unwrap(), name(o)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        places(&net),
        ["ns-prod/drop-etcd-peer", "ns-platform/drop-all-peers"]
    );
    let (objects, essential) = inv.objects_ranked("tkc-prod");
    assert!(objects[..essential]
        .iter()
        .any(|o| o["metadata"]["name"] == "drop-all-peers"));
    let back = crate::supervisor::Inventory::from_objects("ns-prod", inv.apis.clone(), &objects)
        .with_network_notes(&net.unread);
    let again = back.network_of("tkc-prod").unwrap();
    assert_eq!(places(&again), places(&net));
    assert_eq!(again.live_policy_kind, net.live_policy_kind);
    assert_eq!(again.networking_basis, net.networking_basis);
}
