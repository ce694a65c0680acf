//! Work is bounded by the cluster, not by what a namespace editor writes, through the real
//! kubectl:
//! - a flood of Machines carrying the control-plane label (each with a VM and an IP, as CAPV
//!   would make one for a Machine and its VSphereMachine): at most the KCP's replicas plus one
//!   are looked at, the rest are a finding (`ControlPlaneMachinesBeyondReplicas`) in `status`
//!   and on `diagnose --dry-run`'s stderr, and never a pod, a probe target or a peer;
//! - `analyse` of a built bundle whose manifest lists a node or an object again and again is
//!   refused at once, in one line naming it, instead of parsing the same document each time.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::article::*;
use common::tarball::edit_manifest as edited;
use common::*;
use etcdnet::report::v1alpha2::FindingCode;
use serde_json::{json, Value};

/// Labelled Machines added to the article's three: 37 + 3 = 40, for a KCP that wants 3.
const FLOOD: usize = 37;
/// Probed at most: the KCP's 3 plus the surplus of one.
const LIMIT: usize = 4;

fn rogue(i: usize) -> String {
    // Sorted before the real Machines' names: a name buys no place.
    format!("tkc-prod-0000-rogue-{i:02}")
}

fn rogue_ip(i: usize) -> String {
    format!("198.18.0.{}", 100 + i)
}

/// A control-plane Machine as CAPI v1beta1 writes one (labels, spec.clusterName,
/// infrastructureRef, status.phase/nodeRef), created by an editor: no KCP owns it.
fn rogue_machine(i: usize) -> Value {
    let name = rogue(i);
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name, "namespace": NS,
            "labels": {
                "cluster.x-k8s.io/cluster-name": CLUSTER,
                "cluster.x-k8s.io/control-plane": "",
                "cluster.x-k8s.io/control-plane-name": "tkc-prod-7xk2p"
            },
            // The KCP's uid is readable by whoever may edit the namespace: an ownerReference
            // naming it is forgeable, so identity by uid alone does not bound the targets.
            "ownerReferences": [{
                "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                "kind": "KubeadmControlPlane", "name": "tkc-prod-7xk2p",
                "uid": KCP_UID, "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "clusterName": CLUSTER,
            "version": "v1.30.1+vmware.1-fips",
            "bootstrap": {"dataSecretName": name},
            "infrastructureRef": {
                "apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "VSphereMachine", "name": name, "namespace": NS,
                "uid": vsm_uid(i)
            }
        },
        "status": {
            "phase": "Running",
            "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": name},
            "addresses": [{"type": "InternalIP", "address": rogue_ip(i)}]
        }
    })
}

/// The cluster's KubeadmControlPlane's uid in the fixture set.
const KCP_UID: &str = "7ab0b595-725e-5d49-8993-89adc70c8e71";

fn vsm_uid(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// The rogue Machine's VSphereMachine, as CAPV would have made it: the rogue VM is controlled by
/// its uid, so each rogue node joins as a real one would.
fn rogue_vsphere_machine(i: usize) -> Value {
    json!({
        "apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "VSphereMachine",
        "metadata": {
            "name": rogue(i), "namespace": NS, "uid": vsm_uid(i),
            "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}
        },
        "spec": {"className": "best-effort-small"}
    })
}

/// The rogue Machine's VirtualMachine, controlled by its VSphereMachine's uid as CAPV's would be.
fn owned_rogue_vm(i: usize) -> Value {
    let name = rogue(i);
    let mut vm = rogue_vm(&name, &rogue_ip(i));
    vm["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "VSphereMachine", "name": name,
        "uid": vsm_uid(i),
        "controller": true, "blockOwnerDeletion": true
    }]);
    vm
}

fn flooded() -> Env {
    let env = Env::new(SET, Workload::refused());
    for i in 0..FLOOD {
        env.supervisor.insert(rogue_machine(i)).unwrap();
        env.supervisor.insert(rogue_vsphere_machine(i)).unwrap();
        env.supervisor.insert(owned_rogue_vm(i)).unwrap();
    }
    env
}

/// How many of the rogue IPs `text` names (as JSON strings or arguments).
fn rogue_ips_in(text: &str) -> usize {
    (0..FLOOD).filter(|i| text.contains(&rogue_ip(*i))).count()
}

/// 40 Machines carry the label for a KCP that wants 3: `status` says so (JSON and table), and
/// shows at most 4 nodes, the KCP's three among them. Without the bound every labelled Machine
/// would be a node: 40 rows, and no finding.
#[test]
fn a_flood_of_labelled_machines_is_a_finding_in_status() {
    let env = flooded();
    let report = env
        .kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"])
        .status_report();
    let f = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::ControlPlaneMachinesBeyondReplicas)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert!(
        f.message.starts_with(&format!(
            "{} Machines carry the control-plane label; KCP \"tkc-prod-7xk2p\" wants 3: {LIMIT} are looked at",
            FLOOD + 3
        )),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains(&format!("{} are never probed", FLOOD + 3 - LIMIT)),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("and 31 more"),
        "a few by name: {}",
        f.message
    );
    let machines: Vec<&str> = report
        .nodes
        .iter()
        .filter(|n| n.machine.is_some())
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(machines.len(), LIMIT, "{machines:?}");
    for cp in CP {
        assert!(
            machines.contains(&cp),
            "the KCP's own come first: {machines:?}"
        );
    }
    assert_eq!(report.header.control_plane.machines, LIMIT);

    let table = env.kubectl(&["status", CLUSTER, "-n", NS]);
    assert!(
        table
            .stdout
            .contains("40 Machines carry the control-plane label"),
        "{}",
        table.stdout
    );
}

/// `diagnose --dry-run`: on the pod route at most 4 pods, on the jumpbox route one pod whose
/// targets are at most 4; at most one rogue IP anywhere (the surplus slot, taken by the oldest
/// Machine the KCP does not own), and the finding on stderr. Without the bound the pod route
/// would make 40 pods, and every rogue IP would be a target and every probe's peer.
#[test]
fn a_flood_of_labelled_machines_probes_at_most_the_replicas_plus_one() {
    let env = flooded();
    for (route, most) in [("pod", LIMIT), ("jumpbox", 1)] {
        let (pods, run) = env.dry_run_pods(CLUSTER, NS, route);
        assert!(
            !pods.is_empty() && pods.len() <= most,
            "{route}: {} pods",
            pods.len()
        );
        let text = serde_json::to_string(&pods).unwrap();
        assert!(rogue_ips_in(&text) <= LIMIT - 3, "{route}: {text}");
        for ip in ["198.18.0.11", "198.18.0.12", "198.18.0.13"] {
            assert!(text.contains(ip), "{route}: {ip} missing");
        }
        assert!(
            run.stderr.contains(
                "40 Machines carry the control-plane label; KCP \"tkc-prod-7xk2p\" wants 3"
            ),
            "{route}: {}",
            run.stderr
        );
    }
}

/// A bundle as `diagnose --bundle` writes it: the article's cluster on scripted vSphere Pods
/// (the jumpbox route, every node answering).
fn built_bundle(env: &Env, path: &Path) {
    env.script_jumpbox_pods(&CP);
    let run = crate::bundle::diagnose(env, path, &["-o", "json"]);
    assert!(run.stderr.contains("written to"), "{}", run.stderr);
}

/// A change to a manifest.
type Edit = Box<dyn Fn(&mut Value)>;

/// A built bundle whose manifest lists one node 10 000 times, or one node twice, or one object
/// 10 000 times: `analyse` refuses it at once (exit 2, one line naming the node or the entry).
/// Without the check each listing would be read and parsed again (10 000 copies of the node's
/// document and log in memory, a 10 000-node report), and the repeated object 10 000 times over.
#[test]
fn analyse_refuses_a_bundle_with_repeated_entries_at_once() {
    let env = Env::new(SET, Workload::black_hole());
    let good = env.dir.path().join("good.tar.gz");
    built_bundle(&env, &good);
    let ok = env.kubectl(&["analyse", good.to_str().unwrap(), "-o", "json"]);
    assert_eq!(ok.diagnose_report().nodes.len(), 3, "{}", ok.stderr);

    let cases: [(&str, Edit, String); 3] = [
        (
            "node-flood",
            Box::new(|m: &mut Value| {
                let node = m["clusters"][0]["nodes"][0].clone();
                m["clusters"][0]["nodes"] = Value::Array(vec![node; 10_000]);
            }),
            "lists 10000 nodes for cluster \"ns-prod/tkc-prod\", more than the 16".to_string(),
        ),
        (
            "node-twice",
            Box::new(|m: &mut Value| {
                let node = m["clusters"][0]["nodes"][0].clone();
                m["clusters"][0]["nodes"].as_array_mut().unwrap().push(node);
            }),
            format!(
                "lists node \"{}\" of cluster \"ns-prod/tkc-prod\" twice",
                CP[0]
            ),
        ),
        (
            "object-flood",
            Box::new(|m: &mut Value| {
                let o = m["clusters"][0]["objects"][0].clone();
                m["clusters"][0]["objects"] = Value::Array(vec![o; 10_000]);
            }),
            "lists 10000 objects for cluster \"ns-prod/tkc-prod\", more than the 2048".to_string(),
        ),
    ];
    for (name, edit, want) in cases {
        let path = env.dir.path().join(format!("{name}.tar.gz"));
        edited(&good, &path, edit);
        // The refusal is cheap: the CPU of kubectl and the plugin, not wall time, which a
        // loaded machine stretches (tests/it/common/cpu.rs).
        let started = cpu::children_cpu_time();
        let run = env.kubectl(&["analyse", path.to_str().unwrap()]);
        let took = cpu::children_cpu_time() - started;
        run.expect_code(2);
        let line = run.one_line_error();
        assert!(line.contains(&want), "{name}: {line}");
        assert!(
            took < Duration::from_secs(10),
            "{name}: took {took:?} of CPU"
        );
    }

    // Within the caps, the same object named twice: the entry is named.
    let path = env.dir.path().join("object-twice.tar.gz");
    edited(&good, &path, |m| {
        let o = m["clusters"][0]["objects"][0].clone();
        m["clusters"][0]["objects"].as_array_mut().unwrap().push(o);
    });
    let run = env.kubectl(&["analyse", path.to_str().unwrap()]);
    run.expect_code(2);
    let line = run.one_line_error();
    assert!(
        line.contains("names entry \"ns-prod/tkc-prod/supervisor/Cluster-tkc-prod.json\" twice"),
        "{line}"
    );
}
