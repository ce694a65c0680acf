//! Every fixture set, through the real kube client: discovery, then the walk the
//! plugin makes (Cluster -> KCP -> control-plane Machines -> VirtualMachines).

use crate::common;

use std::collections::BTreeMap;

use etcdnet_fakeapi::{supervisor_set, FakeApi, FakeConfig};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

/// What each set must show: (namespace, cluster, desired, control-plane Machines, VM apiVersion,
/// control-plane VM IPs in name order, "" for none).
struct Expect {
    ns: &'static str,
    cluster: &'static str,
    desired: i64,
    machines: usize,
    vm_version: &'static str,
    ips: &'static [&'static str],
}

fn expectations() -> BTreeMap<&'static str, Expect> {
    let cp3 = &["198.18.0.11", "198.18.0.12", "198.18.0.13"][..];
    let cp4 = &["198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.14"][..];
    let e = |vm_version, ips: &'static [&'static str], machines| Expect {
        ns: "ns-prod",
        cluster: "tkc-prod",
        desired: 3,
        machines,
        vm_version,
        ips,
    };
    BTreeMap::from([
        ("healthy-v1alpha3", e("v1alpha3", cp3, 3)),
        ("hostile-escapes", e("v1alpha3", cp3, 3)),
        // The VMs named as the Machines' infrastructure: cp2's reports loopback, and the 4th
        // Machine (-x9rog) is an editor's, not the KCP's (the join by uid refuses both).
        (
            "hostile-identity",
            e(
                "v1alpha3",
                &["198.18.0.11", "127.0.0.1", "198.18.0.13", "198.18.0.77"],
                4,
            ),
        ),
        ("forbidden", e("v1alpha3", cp3, 3)),
        // healthy-v1alpha3's objects, plus the network ones (`a_network_set_serves_nsx`).
        ("nsx-t1-other-ns", e("v1alpha3", cp3, 3)),
        ("nsx-vpc", e("v1alpha3", cp3, 3)),
        ("nsx-vpc-forbidden", e("v1alpha3", cp3, 3)),
        ("nsx-vpc-no-drop", e("v1alpha3", cp3, 3)),
        ("nsx-ncp", e("v1alpha3", cp3, 3)),
        ("nsx-ncp-other-namespace", e("v1alpha3", cp3, 3)),
        ("nsx-ncp-other-namespace-forbidden", e("v1alpha3", cp3, 3)),
        ("nsx-vpc-forged-claim", e("v1alpha3", cp3, 3)),
        ("quorum-lost", e("v1alpha3", cp3, 3)),
        // quorum-lost's objects on VDS networking (net-operator, no NSX group).
        ("vds", e("v1alpha3", cp3, 3)),
        // quorum-lost's objects on NSX networking (NCP's groups, its VirtualNetwork): .ci/demo's.
        ("nsx-quorum-lost", e("v1alpha3", cp3, 3)),
        ("nsx-vpc-manager", e("v1alpha3", cp3, 3)),
        ("remediation-armed", e("v1alpha3", cp3, 3)),
        ("remediation-paused", e("v1alpha3", cp3, 3)),
        (
            "long-names",
            Expect {
                cluster: "tkc-payments-eu-central-1-prod-blue-green-v02",
                ..e("v1alpha3", cp3, 3)
            },
        ),
        ("v1alpha1-capw", e("v1alpha1", cp3, 3)),
        ("v1alpha2", e("v1alpha2", cp3, 3)),
        (
            "kcp-v1beta2",
            e(
                "v1alpha5",
                &["198.18.0.11", "198.18.0.12", "2001:db8:0:3::13"],
                3,
            ),
        ),
        ("v1alpha6", e("v1alpha6", cp3, 3)),
        ("three-zones", e("v1alpha6", cp3, 3)),
        // Every VM named by the VSphereMachine's naming template (`<machine>-vm`).
        ("vm-naming-template", e("v1alpha6", cp3, 3)),
        ("vspheremachines-forbidden", e("v1alpha6", cp3, 3)),
        // The third VM's address is only in its status.network.config.
        ("vm-network-config-only", e("v1alpha3", cp3, 3)),
        (
            "missing-machine",
            e("v1alpha3", &["198.18.0.11", "198.18.0.12"], 2),
        ),
        (
            "vm-no-ip",
            e("v1alpha3", &["198.18.0.11", "198.18.0.12", ""], 3),
        ),
        (
            "vm-powered-off",
            e("v1alpha3", &["198.18.0.11", "", "198.18.0.13"], 3),
        ),
        // A KCP rollout: 4 Machines for 3 desired, in name order (-k8d5n is the new one).
        (
            "rollout-scale-up",
            e(
                "v1alpha3",
                &["198.18.0.11", "198.18.0.12", "198.18.0.13", ""],
                4,
            ),
        ),
        ("rollout-scale-up-joining", e("v1alpha3", cp4, 4)),
        ("rollout-scale-down", e("v1alpha3", cp4, 4)),
        (
            // Generated (etcdnet_fakeapi::generate); tests/it/many_clusters.rs checks all three.
            // IPs in Machine name order: -2tfqk .11, -mpljt .13, -w5nfz .12.
            "three-clusters",
            Expect {
                ns: "ns-fleet",
                cluster: "tkc-web",
                desired: 3,
                machines: 3,
                vm_version: "v1alpha3",
                ips: &["198.18.1.11", "198.18.1.13", "198.18.1.12"],
            },
        ),
        (
            // Generated; in Machine name order (-2ggrn is .17, ..., -tr474 .13).
            "seven-nodes",
            Expect {
                ns: "ns-prod",
                cluster: "tkc-big",
                desired: 7,
                machines: 7,
                vm_version: "v1alpha3",
                ips: &[
                    "198.18.7.17",
                    "198.18.7.14",
                    "198.18.7.11",
                    "198.18.7.15",
                    "198.18.7.12",
                    "198.18.7.16",
                    "198.18.7.13",
                ],
            },
        ),
        (
            "two-clusters",
            Expect {
                ns: "ns-shared",
                cluster: "tkc-a",
                desired: 3,
                machines: 3,
                vm_version: "v1alpha3",
                ips: cp3,
            },
        ),
    ])
}

/// The control-plane VM IP as the version's fields give it.
fn vm_ip(vm: &Value) -> String {
    let st = &vm["status"];
    st["vmIp"]
        .as_str()
        .or(st["network"]["primaryIP4"].as_str())
        .or(st["network"]["primaryIP6"].as_str())
        // A running guest reports nothing: the network provider's configured address, with
        // its prefix (vm-operator api/v1alpha3.. `status.network.config`).
        .or(
            st["network"]["config"]["interfaces"][0]["ip"]["addresses"][0]
                .as_str()
                .filter(|_| st["powerState"] == "PoweredOn")
                .map(|a| a.split('/').next().unwrap_or(a)),
        )
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn every_set_serves_the_walk() {
    let root = etcdnet_fakeapi::fixtures_dir().join("supervisor");
    // Every directory is a set (files beside them, such as README.md, are not).
    let mut sets: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    sets.sort();
    let expect = expectations();
    let mut checked = 0;
    for set in &sets {
        let api = FakeApi::start_with(
            FakeConfig::from_dir(supervisor_set(set))
                .unwrap()
                .var("WORKLOAD_URL", "http://127.0.0.1:9"),
        )
        .unwrap_or_else(|e| panic!("{set}: {e:#}"));
        let dir = tempfile::tempdir().unwrap();
        let client = common::client(&api, dir.path()).await;
        let discovery = Discovery::new(client.clone())
            .filter(&[
                "",
                "cluster.x-k8s.io",
                "controlplane.cluster.x-k8s.io",
                "vmoperator.vmware.com",
            ])
            .run()
            .await
            .unwrap_or_else(|e| panic!("{set}: discovery: {e}"));
        if set == "not-supervisor" {
            assert!(
                !discovery.has_group("vmoperator.vmware.com")
                    && !discovery.has_group("cluster.x-k8s.io"),
                "{set}"
            );
            assert!(discovery.has_group(""), "{set}: core");
            checked += 1;
            continue;
        }
        let Some(x) = expect.get(set.as_str()) else {
            panic!("no expectations for new set {set}: add them")
        };
        let find = |group: &str, kind: &str| {
            let g = discovery
                .get(group)
                .unwrap_or_else(|| panic!("{set}: group {group} not discovered"));
            let (ar, caps) = g
                .recommended_kind(kind)
                .unwrap_or_else(|| panic!("{set}: {kind} not in {group}"));
            assert_eq!(caps.scope, Scope::Namespaced);
            ar
        };
        let vm_ar = find("vmoperator.vmware.com", "VirtualMachine");
        assert_eq!(
            vm_ar.version, x.vm_version,
            "{set}: preferred VirtualMachine version"
        );
        assert_eq!(vm_ar.plural, "virtualmachines");

        // Cluster -> KCP through controlPlaneRef (v1beta1 ObjectReference or v1beta2 {apiGroup,kind,name}).
        let clusters: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), x.ns, &find("cluster.x-k8s.io", "Cluster"));
        let cluster = clusters
            .get(x.cluster)
            .await
            .unwrap_or_else(|e| panic!("{set}: {e}"));
        let kcp_name = cluster.data["spec"]["controlPlaneRef"]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let kcps: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            x.ns,
            &find("controlplane.cluster.x-k8s.io", "KubeadmControlPlane"),
        );
        let kcp = kcps.get(&kcp_name).await.unwrap();
        assert_eq!(
            kcp.data["spec"]["replicas"].as_i64(),
            Some(x.desired),
            "{set}: desired"
        );

        let machines: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), x.ns, &find("cluster.x-k8s.io", "Machine"));
        let sel = format!(
            "cluster.x-k8s.io/cluster-name={},cluster.x-k8s.io/control-plane",
            x.cluster
        );
        let cp = match machines.list(&ListParams::default().labels(&sel)).await {
            Ok(l) => l,
            Err(kube::Error::Api(s)) if set == "forbidden" => {
                assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
                checked += 1;
                continue;
            }
            Err(e) => panic!("{set}: {e}"),
        };
        assert_ne!(set, "forbidden", "the forbidden set must refuse the list");
        assert_eq!(cp.items.len(), x.machines, "{set}: control-plane Machines");
        let all = machines
            .list(
                &ListParams::default()
                    .labels(&format!("cluster.x-k8s.io/cluster-name={}", x.cluster)),
            )
            .await
            .unwrap();
        assert!(
            all.items.len() > cp.items.len(),
            "{set}: workers exist, so a broken selector would show"
        );

        let vms: Api<DynamicObject> = Api::namespaced_with(client.clone(), x.ns, &vm_ar);
        let mut ips = Vec::new();
        for m in &cp.items {
            let infra = m.data["spec"]["infrastructureRef"]["name"]
                .as_str()
                .unwrap();
            // The VM named as its VSphereMachine, else (a `spec.naming` template) the one
            // that VSphereMachine controls.
            let vm = match vms.get_opt(infra).await.unwrap() {
                Some(vm) => vm,
                None => vms
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .find(|v| {
                        v.metadata.owner_references.iter().flatten().any(|o| {
                            o.kind == "VSphereMachine"
                                && o.name == infra
                                && o.controller == Some(true)
                        })
                    })
                    .unwrap_or_else(|| panic!("{set}: no VM of {infra}")),
            };
            assert_eq!(
                vm.types.as_ref().unwrap().api_version,
                format!("vmoperator.vmware.com/{}", x.vm_version)
            );
            ips.push(vm_ip(&serde_json::to_value(&vm).unwrap()));
        }
        assert_eq!(ips, x.ips, "{set}: control-plane VM IPs");
        checked += 1;
    }
    assert_eq!(
        checked,
        expect.len() + 1,
        "every expectation was checked: {sets:?}"
    );
}

/// A Machine being deleted is listed and read as a real API server serves it until its
/// finalizer goes: with its deletionTimestamp, finalizers and KCP's pre-terminate hook.
#[tokio::test]
async fn a_deleting_machine_is_still_served() {
    let api = FakeApi::start_with(
        FakeConfig::from_dir(supervisor_set("rollout-scale-down"))
            .unwrap()
            .var("WORKLOAD_URL", "http://127.0.0.1:9"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let ar = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "cluster.x-k8s.io",
        "v1beta1",
        "Machine",
    ));
    let machines: Api<DynamicObject> = Api::namespaced_with(client, "ns-prod", &ar);
    let list = machines
        .list(&ListParams::default().labels("cluster.x-k8s.io/control-plane"))
        .await
        .unwrap();
    let going: Vec<&DynamicObject> = list
        .items
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_some())
        .collect();
    assert_eq!(going.len(), 1, "{:?}", list.items);
    let m = going[0];
    assert_eq!(m.metadata.name.as_deref(), Some("tkc-prod-7xk2p-4rz8m"));
    assert_eq!(
        m.metadata.finalizers.as_deref(),
        Some(&["machine.cluster.x-k8s.io".to_string()][..])
    );
    assert!(m
        .metadata
        .annotations
        .as_ref()
        .unwrap()
        .contains_key("pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup"));
    assert_eq!(m.data["status"]["phase"], "Deleting");
    let got = machines.get("tkc-prod-7xk2p-4rz8m").await.unwrap();
    assert_eq!(
        serde_json::to_value(&got.metadata.deletion_timestamp).unwrap(),
        "2025-06-03T09:02:00Z"
    );
}

#[tokio::test]
async fn vm_labels_per_generation() {
    // capw-only on the oldest set, capv-only on v1alpha2, both elsewhere.
    for (set, sel, n) in [
        (
            "v1alpha1-capw",
            "capw.vmware.com/cluster.name=tkc-prod,capw.vmware.com/cluster.role=controlplane",
            3,
        ),
        ("v1alpha1-capw", "capv.vmware.com/cluster.name", 0),
        (
            "v1alpha2",
            "capv.vmware.com/cluster.name=tkc-prod,capv.vmware.com/cluster.role=controlplane",
            3,
        ),
        ("v1alpha2", "capw.vmware.com/cluster.name", 0),
        (
            "healthy-v1alpha3",
            "capv.vmware.com/cluster.role in (controlplane),capw.vmware.com/cluster.name=tkc-prod",
            3,
        ),
        (
            "two-clusters",
            "capv.vmware.com/cluster.name=tkc-a,capv.vmware.com/cluster.role=controlplane",
            3,
        ),
        ("two-clusters", "!capv.vmware.com/cluster.name", 2),
    ] {
        let api = FakeApi::start(supervisor_set(set)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let client = common::client(&api, dir.path()).await;
        let d = Discovery::new(client.clone())
            .filter(&["vmoperator.vmware.com"])
            .run()
            .await
            .unwrap();
        let (ar, _) = d
            .get("vmoperator.vmware.com")
            .unwrap()
            .recommended_kind("VirtualMachine")
            .unwrap();
        let ns = if set == "two-clusters" {
            "ns-shared"
        } else {
            "ns-prod"
        };
        let vms: Api<DynamicObject> = Api::namespaced_with(client, ns, &ar);
        let got = vms
            .list(&ListParams::default().labels(sel))
            .await
            .unwrap()
            .items
            .len();
        assert_eq!(got, n, "{set}: {sel}");
    }
}

#[tokio::test]
async fn secrets_are_served_as_a_real_server_stores_them() {
    let api = FakeApi::start_with(
        FakeConfig::from_dir(supervisor_set("healthy-v1alpha3"))
            .unwrap()
            .var("WORKLOAD_URL", "https://127.0.0.1:4242"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "ns-prod");
    let kc = secrets.get("tkc-prod-kubeconfig").await.unwrap();
    assert_eq!(kc.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    assert!(kc.string_data.is_none(), "stringData is never served");
    let value = String::from_utf8(kc.data.unwrap()["value"].0.clone()).unwrap();
    assert!(value.contains("server: https://127.0.0.1:4242"), "{value}");
    // As CAPI writes it: the cluster's CA inline, the one the workload fakes serve with.
    assert!(
        value.contains(&format!(
            "certificate-authority-data: {}",
            etcdnet_fakeapi::tls::ca_data()
        )),
        "{value}"
    );
    assert!(value.contains("FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT"));
    let ssh = secrets.get("tkc-prod-ssh").await.unwrap();
    assert_eq!(ssh.type_.as_deref(), Some("kubernetes.io/ssh-auth"));
    let key = String::from_utf8(ssh.data.unwrap()["ssh-privatekey"].0.clone()).unwrap();
    assert!(
        key.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\nFAKEKEYMATERIAL"),
        "{key}"
    );
    let pw = secrets.get("tkc-prod-ssh-password").await.unwrap();
    assert!(pw.data.unwrap().contains_key("ssh-passwordkey"));
}

#[test]
fn a_placeholder_without_value_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\ndata: {u: '{{NOPE}}'}\n").unwrap();
    let err = FakeApi::start(dir.path())
        .err()
        .expect("missing placeholder fails the start");
    assert!(format!("{err:#}").contains("NOPE"), "{err:#}");
}

/// The network sets serve the NSX groups in discovery, as a VPC or NCP Supervisor does, with
/// their objects; `nsx-vpc-forbidden` refuses the list of SecurityPolicies only; `nsx-vpc-no-drop`
/// has one Allow on 6443 and every port realized.
#[tokio::test]
async fn a_network_set_serves_nsx() {
    for (set, served, absent) in [
        ("nsx-vpc", "crd.nsx.vmware.com", "nsx.vmware.com"),
        ("nsx-vpc-forbidden", "crd.nsx.vmware.com", "vmware.com"),
        ("nsx-vpc-no-drop", "crd.nsx.vmware.com", "nsx.vmware.com"),
        ("nsx-ncp", "nsx.vmware.com", "crd.nsx.vmware.com"),
    ] {
        let api = FakeApi::start_with(
            FakeConfig::from_dir(supervisor_set(set))
                .unwrap()
                .var("WORKLOAD_URL", "http://127.0.0.1:9"),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let client = common::client(&api, dir.path()).await;
        let discovery = Discovery::new(client.clone()).run().await.unwrap();
        assert!(discovery.has_group(served), "{set}: {served}");
        assert!(!discovery.has_group(absent), "{set}: {absent}");
        assert!(discovery.has_group("networking.k8s.io"), "{set}");
        let list = |group: &str, kind: &str| {
            let (ar, _) = discovery
                .get(group)
                .and_then(|g| g.recommended_kind(kind))
                .unwrap_or_else(|| panic!("{set}: {kind}.{group} not served"));
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "ns-prod", &ar);
            async move { api.list(&ListParams::default()).await }
        };
        let names = |l: kube::core::ObjectList<DynamicObject>| {
            l.items
                .into_iter()
                .map(|o| o.metadata.name.unwrap())
                .collect::<Vec<_>>()
        };
        match set {
            "nsx-vpc" => {
                let policies = names(list(served, "SecurityPolicy").await.unwrap());
                assert_eq!(policies.len(), 5, "{policies:?}");
                let ports = list(served, "SubnetPort").await.unwrap();
                let failed: Vec<&DynamicObject> = ports
                    .items
                    .iter()
                    .filter(|p| p.data["status"]["conditions"][0]["status"] == "False")
                    .collect();
                assert_eq!(ports.items.len(), 3);
                assert_eq!(
                    failed[0].metadata.name.as_deref(),
                    Some("tkc-prod-7xk2p-bx2lk-tkc-prod-vnet-eth0")
                );
                assert_eq!(
                    names(list(served, "SubnetSet").await.unwrap()),
                    ["tkc-prod-vnet"]
                );
                assert!(list(served, "Subnet").await.unwrap().items.is_empty());
                let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
                let ns = ns.get("ns-prod").await.unwrap();
                let c = &ns.status.unwrap().conditions.unwrap()[0];
                assert_eq!(
                    (c.type_.as_str(), c.status.as_str()),
                    ("NamespaceNetworkReady", "True")
                );
            }
            "nsx-vpc-no-drop" => {
                assert_eq!(
                    names(list(served, "SecurityPolicy").await.unwrap()),
                    ["allow-apiserver"]
                );
                let ports = list(served, "SubnetPort").await.unwrap();
                assert_eq!(ports.items.len(), 3);
                for p in &ports.items {
                    assert_eq!(
                        p.data["status"]["conditions"][0]["status"], "True",
                        "{:?}",
                        p.metadata.name
                    );
                }
                assert_eq!(
                    names(list(served, "SubnetSet").await.unwrap()),
                    ["tkc-prod-vnet"]
                );
            }
            "nsx-vpc-forbidden" => {
                match list(served, "SecurityPolicy").await {
                    Err(kube::Error::Api(s)) => assert_eq!(s.code, 403),
                    other => panic!("{set}: {other:?}"),
                }
                assert_eq!(list(served, "SubnetPort").await.unwrap().items.len(), 3);
            }
            _ => {
                assert_eq!(
                    names(list(served, "SecurityPolicy").await.unwrap()),
                    ["drop-etcd-peer"]
                );
                assert_eq!(
                    names(list("vmware.com", "VirtualNetwork").await.unwrap()),
                    ["tkc-prod-vnet"]
                );
            }
        }
    }
}

/// The VDS set serves net-operator and no NSX group, and schedules no vSphere Pod: a pod
/// without a node is left Pending with `PodScheduled` False/Unschedulable and a
/// `FailedScheduling` event from default-scheduler, as kube-scheduler writes them; a webhook
/// denial answers the create itself with 403 and the API server's wording.
#[tokio::test]
async fn a_vds_set_serves_netoperator_and_schedules_no_vsphere_pod() {
    use k8s_openapi::api::core::v1::{Event, Pod};
    use kube::api::PostParams;
    let api = FakeApi::start_with(
        FakeConfig::from_dir(supervisor_set("vds"))
            .unwrap()
            .var("WORKLOAD_URL", "http://127.0.0.1:9"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    assert!(discovery.has_group("netoperator.vmware.com"));
    for nsx in ["crd.nsx.vmware.com", "nsx.vmware.com", "vmware.com"] {
        assert!(!discovery.has_group(nsx), "{nsx}");
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ns-prod");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "jumpbox"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let condition = loop {
        let p = pods.get("jumpbox").await.unwrap();
        let c = p
            .status
            .and_then(|s| s.conditions)
            .and_then(|c| c.into_iter().find(|c| c.type_ == "PodScheduled"));
        if let Some(c) = c {
            break c;
        }
        assert!(std::time::Instant::now() < deadline, "never marked");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_deref()),
        ("False", Some("Unschedulable"))
    );
    assert!(condition
        .message
        .unwrap()
        .starts_with("0/3 nodes are available: 3 node(s) had untolerated taint"));
    let events: Api<Event> = Api::namespaced(client.clone(), "ns-prod");
    let events = events.list(&ListParams::default()).await.unwrap();
    let e = events
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .expect("a FailedScheduling event");
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(
        e.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("default-scheduler")
    );

    api.deny_pods_by_webhook(
        "default.validating.pod.example.com",
        "pods are not allowed here",
    );
    let mut other = pod.clone();
    other.metadata.name = Some("refused".into());
    let err = pods
        .create(&PostParams::default(), &other)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(
                s.message,
                "admission webhook \"default.validating.pod.example.com\" denied the request: pods are not allowed here"
            );
        }
        e => panic!("{e}"),
    }
    assert!(pods.get_opt("refused").await.unwrap().is_none());
}
