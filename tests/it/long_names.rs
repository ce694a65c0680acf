//! A cluster name long enough (45 characters) that its control-plane node names differ only
//! past the 63-character cut of a pod name (fixture set `long-names`): every node still gets
//! its own probe pod, and the cluster's one jumpbox pod a valid name, in `--dry-run` and for
//! real.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use etcdnet::names::validate_dns1123_label;

const SET: &str = "long-names";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-payments-eu-central-1-prod-blue-green-v02";
const CP: [&str; 3] = [
    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-4rz8m",
    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-9qtvw",
    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-bx2lk",
];

/// The pods of a `--dry-run -o json` (one JSON document per pod).
/// `count` names, all distinct, all valid DNS labels with `prefix`.
fn assert_distinct_labels(names: &[String], prefix: &str, count: usize) {
    assert_eq!(names.len(), count, "{names:?}");
    let distinct: BTreeSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), count, "one pod name per pod: {names:?}");
    for n in names {
        validate_dns1123_label(n).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(n.starts_with(prefix), "{n}");
    }
}

#[test]
fn the_fixture_names_differ_only_past_the_cut() {
    assert_eq!(CLUSTER.len(), 45);
    for n in CP {
        // The 63-character pod name leaves 43 characters of the node's name to the probe pod
        // ("etcdnet-probe-" and "-<run id>"), 41 to the jumpbox's: the same for all three.
        assert_eq!(n[..43], CP[0][..43]);
    }
}

#[test]
fn dry_run_shows_one_pod_name_per_node() {
    let env = Env::new(SET, Workload::ok());
    // The jumpbox's one pod is named after the cluster, cut to fit too.
    for (via, prefix, count) in [
        ("pod", "etcdnet-probe-", 3),
        ("jumpbox", "etcdnet-jumpbox-", 1),
    ] {
        let run = env.plugin(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            via,
            "--dry-run",
            "-o",
            "json",
        ]);
        run.expect_code(0);
        let pods = run.json_documents();
        let names: Vec<String> = pods
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_distinct_labels(&names, prefix, count);
        if via == "pod" {
            // Each pod is still pinned to its own node.
            let nodes: Vec<&str> = pods
                .iter()
                .map(|p| p["spec"]["nodeName"].as_str().unwrap())
                .collect();
            assert_eq!(nodes, CP);
        }
    }
}

#[test]
fn every_node_is_reached_for_real() {
    // The workload API does not answer: auto picks the jumpbox route, whose one pod the
    // Supervisor fake runs as a scripted vSphere Pod.
    let env = Env::new(SET, Workload::black_hole());
    env.script_jumpbox_pods(&CP);
    let run = env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--api-timeout",
        "1s",
        "-o",
        "json",
    ]);
    let report = run.diagnose_report();
    let created: Vec<String> = env
        .supervisor
        .created_pods()
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    assert_distinct_labels(&created, "etcdnet-jumpbox-", 1);
    for node in &report.nodes {
        assert!(node.reached, "{}: {:?}", node.name, node.error);
    }
    assert_eq!(report.result.nodes_reached, 3);
    assert!(
        env.supervisor.existing_pods().is_empty(),
        "pods left behind: {:?}",
        env.supervisor.existing_pods()
    );
}
