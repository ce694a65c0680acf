//! `etcdnet-fakeapi --workload lab --cluster all` (tests/bench/many-clusters.sh's labs): one lab
//! per cluster of a fleet. Root, as every test under `lab` (see mod.rs); the binary's other
//! modes are `many_clusters_binary`.

use std::path::Path;
use std::time::{Duration, Instant};

use etcdnet_fakeapi::supervisor_set;

use crate::many_clusters_binary::{kubectl, Fake};

/// `--workload lab --cluster all` on three-clusters: a lab and a workload API per cluster,
/// each cluster's kubeconfig secret at its own, every `<cluster>-ssh` with its own lab's key.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_lab_per_cluster() {
    etcdnet_lab::require("one_lab_per_cluster");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let requests = dir.path().join("requests");
    let set = supervisor_set("three-clusters");
    let workload = etcdnet_fakeapi::workload_set("lab-any");
    let t0 = Instant::now();
    let fake = Fake::start(
        &[
            "--workload",
            "lab",
            "--cluster",
            "all",
            "--namespace",
            "ns-fleet",
        ],
        &[
            Path::new("--fixtures"),
            &set,
            Path::new("--workload-fixtures"),
            &workload,
            Path::new("--kubeconfig-out"),
            &kubeconfig,
            Path::new("--requests-out"),
            &requests,
        ],
    );
    eprintln!("three labs up in {:?}", t0.elapsed());
    let mut ids = Vec::new();
    for spec in etcdnet_fakeapi::generate::three_clusters() {
        let suffix = &spec.url_var["WORKLOAD_URL_".len()..];
        let nodes: Vec<String> = spec
            .nodes()
            .iter()
            .map(|(n, ip)| format!("{n}={ip}"))
            .collect();
        assert_eq!(fake.value(&format!("LAB_NODES_{suffix}")), nodes.join(","));
        ids.push(fake.value(&format!("LAB_ID_{suffix}")).to_string());
        // The workload API of this cluster answers, and its kubeconfig secret names it.
        let url = fake.value(&format!("WORKLOAD_URL_{suffix}")).to_string();
        let secret = kubectl(
            &kubeconfig,
            &[
                "get",
                "secret",
                &format!("{}-kubeconfig", spec.name),
                "-o",
                "jsonpath={.data.value}",
            ],
        );
        use base64::Engine;
        let text = base64::engine::general_purpose::STANDARD
            .decode(secret.trim())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&text).contains(&format!("server: {url}\n")),
            "{}",
            spec.name
        );
        let ssh = kubectl(
            &kubeconfig,
            &[
                "get",
                "secret",
                &format!("{}-ssh", spec.name),
                "-o",
                "jsonpath={.data.ssh-privatekey}",
            ],
        );
        let key = base64::engine::general_purpose::STANDARD
            .decode(ssh.trim())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&key).contains("BEGIN OPENSSH PRIVATE KEY")
                && !String::from_utf8_lossy(&key).contains("FAKEKEYMATERIAL"),
            "{}: the lab's real key",
            spec.name
        );
    }
    assert_eq!(
        fake.value("LAB_ID"),
        ids[1],
        "the first in name order: tkc-api"
    );
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3);
    assert!(fake.stop().success());
    // Every lab is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = || {
        std::fs::read_dir("/run/netns")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| {
                        ids.iter().any(|id| {
                            e.file_name()
                                .to_string_lossy()
                                .starts_with(&format!("{id}-"))
                        })
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    while left() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), 0, "namespaces of the labs left behind");
}
