//! The worlds of many clusters, checked before anything runs on them: the fixture sets
//! `three-clusters` and `seven-nodes` and the generated 20-cluster Supervisor are whole and
//! consistent (every cluster has its Cluster, KCP, Machines, VMs and Secrets, its kubeconfig at
//! its own workload API), the labs of `three-clusters` start side by side with the clusters'
//! names and addresses, and today's one-cluster commands, through the real kubectl, see each
//! cluster through its own workload API and diagnose it from its own lab: a fault in one lab shows
//! in that cluster's verdict only. `--all` / `-A` themselves are tested in tests/it/all_clusters.rs.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use etcdnet_fakeapi::{generate, workload_url_var};
use serde_json::Value;

/// What a set must hold for one cluster, checked against a running fake.
fn check_cluster(
    api: &FakeApi,
    ns: &str,
    cluster: &str,
    nodes: &[(String, std::net::Ipv4Addr)],
    url: &str,
) {
    let get = |api_version: &str, kind: &str, name: &str| {
        api.object(api_version, kind, ns, name)
            .unwrap_or_else(|| panic!("{ns}/{cluster}: no {kind} {name}"))
    };
    let c = get("cluster.x-k8s.io/v1beta1", "Cluster", cluster);
    let kcp_name = c["spec"]["controlPlaneRef"]["name"].as_str().unwrap();
    let kcp = get(
        "controlplane.cluster.x-k8s.io/v1beta1",
        "KubeadmControlPlane",
        kcp_name,
    );
    assert_eq!(kcp["spec"]["replicas"], nodes.len() as i64, "{cluster}");
    assert_eq!(
        kcp["status"]["readyReplicas"],
        nodes.len() as i64,
        "{cluster}"
    );
    // The endpoint the plugin compares the kubeconfig's server with.
    let endpoint = &c["spec"]["controlPlaneEndpoint"];
    let want = url.trim_start_matches("https://");
    assert_eq!(
        format!(
            "{}:{}",
            endpoint["host"].as_str().unwrap(),
            endpoint["port"]
        ),
        want,
        "{cluster}: controlPlaneEndpoint"
    );

    let machines: Vec<Value> = api
        .objects("cluster.x-k8s.io", "machines")
        .into_iter()
        .filter(|m| m["metadata"]["namespace"] == ns && m["spec"]["clusterName"] == cluster)
        .filter(|m| m["metadata"]["labels"]["cluster.x-k8s.io/control-plane"].is_string())
        .collect();
    let mut got: Vec<(String, String)> = machines
        .iter()
        .map(|m| {
            let name = m["metadata"]["name"].as_str().unwrap().to_string();
            assert_eq!(
                m["metadata"]["ownerReferences"][0]["uid"],
                kcp["metadata"]["uid"]
            );
            assert_eq!(m["status"]["nodeRef"]["name"], name.as_str());
            let vm = get("vmoperator.vmware.com/v1alpha3", "VirtualMachine", &name);
            assert_eq!(
                vm["metadata"]["labels"]["capv.vmware.com/cluster.name"],
                cluster
            );
            let vsm = get(
                "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
                "VSphereMachine",
                &name,
            );
            assert_eq!(
                vm["metadata"]["ownerReferences"][0]["uid"],
                vsm["metadata"]["uid"]
            );
            (
                name,
                vm["status"]["network"]["primaryIP4"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    got.sort_by(|a, b| a.1.cmp(&b.1));
    let want: Vec<(String, String)> = nodes
        .iter()
        .map(|(n, ip)| (n.clone(), ip.to_string()))
        .collect();
    assert_eq!(
        got, want,
        "{ns}/{cluster}: control-plane Machines and VM addresses"
    );

    for s in ["kubeconfig", "ssh", "ssh-password", "ca", "etcd"] {
        get("v1", "Secret", &format!("{cluster}-{s}"));
    }
    use base64::Engine;
    let kubeconfig = get("v1", "Secret", &format!("{cluster}-kubeconfig"));
    let text = base64::engine::general_purpose::STANDARD
        .decode(kubeconfig["data"]["value"].as_str().unwrap())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!("server: {url}\n")),
        "{cluster}: {text}"
    );
}

fn three_workloads() -> BTreeMap<&'static str, Workload> {
    fleet::CLUSTERS
        .iter()
        .map(|c| (*c, Workload::ok()))
        .collect()
}

fn three_clusters_env(
    workloads: BTreeMap<&'static str, Workload>,
) -> (Env, BTreeMap<&'static str, Workload>) {
    let mut cfg = FakeConfig::from_dir(fixture(fleet::SET)).unwrap();
    for (c, w) in &workloads {
        cfg = cfg.var(workload_url_var(c), w.url());
    }
    (Env::with_config(cfg, None), workloads)
}

#[test]
fn three_clusters_each_cluster_is_whole_and_points_at_its_own_workload_api() {
    let (env, workloads) = three_clusters_env(three_workloads());
    for c in fleet::CLUSTERS {
        check_cluster(
            &env.supervisor,
            fleet::NS,
            c,
            &fleet::nodes(c),
            &workloads[c].url(),
        );
    }
    let clusters = env.supervisor.objects("cluster.x-k8s.io", "clusters");
    assert_eq!(clusters.len(), 3);
    // Distinct subnets, one per lab.
    let subnets: Vec<String> = fleet::CLUSTERS
        .iter()
        .map(|c| {
            let ip = fleet::nodes(c)[0].1.octets();
            format!("{}.{}.{}", ip[0], ip[1], ip[2])
        })
        .collect();
    assert_eq!(subnets, ["198.18.1", "198.18.2", "198.18.3"]);
}

#[test]
fn seven_nodes_is_one_cluster_of_seven() {
    let env = Env::new(seven::SET, Workload::ok());
    let spec = &generate::seven_nodes()[0];
    check_cluster(
        &env.supervisor,
        seven::NS,
        seven::CLUSTER,
        &spec.nodes(),
        &env.workload.as_ref().unwrap().url(),
    );
}

#[test]
fn the_generated_supervisor_has_twenty_clusters_in_four_namespaces() {
    let env = many_clusters_env(4, 5, Workload::ok());
    let url = env.workload.as_ref().unwrap().url();
    let specs = generate::many_clusters(4, 5);
    assert_eq!(specs.len(), 20);
    for spec in &specs {
        check_cluster(
            &env.supervisor,
            &spec.namespace,
            &spec.name,
            &spec.nodes(),
            &url,
        );
    }
    let mut namespaces: Vec<String> = many_clusters(4, 5).into_iter().map(|(ns, _)| ns).collect();
    namespaces.dedup();
    assert_eq!(
        namespaces,
        ["ns-team-1", "ns-team-2", "ns-team-3", "ns-team-4"]
    );
    assert_eq!(
        env.supervisor.objects("cluster.x-k8s.io", "machines").len(),
        20 * 5
    );
    assert_eq!(
        env.supervisor
            .objects("vmoperator.vmware.com", "virtualmachines")
            .len(),
        20 * 5
    );

    // Today's `status <cluster>` reads any of them.
    for (ns, c) in [("ns-team-1", "tkc-1-1"), ("ns-team-4", "tkc-4-5")] {
        let run = env.kubectl(&["status", c, "-n", ns, "-o", "json"]);
        run.expect_code(0);
        let report = run.status_report();
        assert_eq!(report.nodes.len(), 3, "{c}");
        assert_eq!(
            report
                .workload_api
                .server
                .as_deref()
                .map(|u| u.trim_end_matches('/')),
            Some(url.as_str())
        );
    }
}

/// Through the real kubectl, `status <cluster>` asks each cluster's own workload API, and one
/// cluster's dark API is that cluster's finding only.
#[test]
fn status_of_each_cluster_asks_its_own_workload_api() {
    let mut workloads = three_workloads();
    workloads.insert("tkc-api", Workload::black_hole());
    let (env, workloads) = three_clusters_env(workloads);
    for c in fleet::CLUSTERS {
        let run = env.kubectl(&[
            "status",
            c,
            "-n",
            fleet::NS,
            "--api-timeout",
            "1s",
            "-o",
            "json",
        ]);
        let report = run.status_report();
        let codes: Vec<String> = run.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            report
                .workload_api
                .server
                .as_deref()
                .map(|u| u.trim_end_matches('/')),
            Some(workloads[c].url().as_str()),
            "{c}"
        );
        let names: Vec<&str> = report.nodes.iter().map(|n| n.name.as_str()).collect();
        let want = fleet::nodes(c);
        let mut want: Vec<&str> = want.iter().map(|(n, _)| n.as_str()).collect();
        let mut got = names.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{c}");
        let unreachable = codes.iter().any(|code| code == "WorkloadAPIUnreachable");
        assert_eq!(unreachable, c == "tkc-api", "{c}: {codes:?}");
        if c == "tkc-api" {
            assert_eq!(
                workloads[c].connections(),
                1,
                "the black hole was asked once"
            );
        } else {
            assert!(!workloads[c].requests().is_empty(), "{c} asked its own API");
        }
    }
}
