//! Identity by uid, and only unicast addresses, through the real
//! kubectl on the fixture set `hostile-identity`: healthy-v1alpha3 plus what a namespace editor
//! can write (see its fake.yaml):
//!
//! - VM `tkc-prod-7xk2p-0forged` (198.18.0.66) names cp1's VSphereMachine as its controller with
//!   a forged uid, and lists before the real VM;
//! - cp2's real VM reports `127.0.0.1` as its primary IP;
//! - Machine `tkc-prod-7xk2p-x9rog` carries the control-plane labels and a controller
//!   ownerReference to the KCP's *name* with another uid; its own VSphereMachine and VM are at
//!   198.18.0.77.
//!
//! What `diagnose --dry-run` would create (the pod route's pods, the jumpbox's ssh commands) is
//! read for every address a probe would go to: only cp1 (.11) and cp3 (.13) may be there.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use etcdnet::report::v1alpha2::FindingCode;
use etcdnet::report::v1alpha2::{IdentityProblem, JoinedBy};
use etcdnet::report::StatusReport;
use serde_json::Value;

const SET: &str = "hostile-identity";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";
const CP1: &str = "tkc-prod-7xk2p-4rz8m";
const CP2: &str = "tkc-prod-7xk2p-9qtvw";
const FORGED_VM: &str = "tkc-prod-7xk2p-0forged";
const ROGUE_MACHINE: &str = "tkc-prod-7xk2p-x9rog";
/// The only addresses anything may be sent to: cp1's and cp3's.
const GOOD: [&str; 2] = ["198.18.0.11", "198.18.0.13"];

fn status(env: &Env) -> StatusReport {
    env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"])
        .status_report()
}

/// Every address `diagnose --dry-run` on `route` would send a probe, an ssh session or a peer
/// check to: the array elements that are addresses (ssh destinations) and the values after
/// `--self`/`--peer`, whether as elements (pod route) or inside a command line (jumpbox).
fn dry_run_targets(env: &Env, route: &str) -> (usize, BTreeSet<String>, String) {
    let (pods, run) = env.dry_run_pods(CLUSTER, NS, route);
    let mut strings = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    pods.iter().for_each(|p| walk(p, &mut strings));
    let mut found = BTreeSet::new();
    let mut next_is_target = false;
    for s in &strings {
        if next_is_target || s.parse::<std::net::IpAddr>().is_ok() {
            found.insert(s.clone());
        }
        next_is_target = s == "--self" || s == "--peer";
        let words: Vec<&str> = s.split_whitespace().collect();
        for w in words.windows(2) {
            // The probe script's own text says "--self IP" too: only addresses count.
            if (w[0] == "--self" || w[0] == "--peer") && w[1].parse::<std::net::IpAddr>().is_ok() {
                found.insert(w[1].to_string());
            }
        }
    }
    (pods.len(), found, run.stdout)
}

fn assert_only_good_targets(env: &Env) {
    for (route, pods) in [("pod", 2), ("jumpbox", 1)] {
        let (count, targets, text) = dry_run_targets(env, route);
        assert_eq!(
            targets,
            GOOD.iter().map(|s| s.to_string()).collect(),
            "{route}: the addresses probed"
        );
        assert_eq!(
            count, pods,
            "{route}: one pod per addressed node, or one for all"
        );
        for name in [FORGED_VM, ROGUE_MACHINE] {
            assert!(!text.contains(name), "{route}: {name} in {text}");
        }
    }
}

/// A VM whose owner reference names cp1's VSphereMachine with a forged uid. Without the join
/// by uid, the first VM whose owner *name* matched would be taken, the forged one (it lists
/// first): 198.18.0.66 would be cp1's `--self`, every peer's `--peer` and the jumpbox's ssh
/// destination, the real VM a "no machine" row, and no finding would name the forgery.
#[test]
fn a_vm_with_a_forged_owner_uid_is_a_finding_and_the_real_vm_stays() {
    let env = Env::new(SET, Workload::refused());
    let report = status(&env);
    let cp1 = report.nodes.iter().find(|n| n.name == CP1).unwrap();
    assert_eq!(cp1.vm.as_ref().map(|v| v.name.as_str()), Some(CP1));
    assert_eq!(cp1.ip().map(|ip| ip.to_string()).as_deref(), Some(GOOD[0]));
    assert_eq!(cp1.join.by, Some(JoinedBy::Uid));
    let forged = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::VirtualMachineOwnerMismatch)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert_eq!(forged.node.as_deref(), Some(FORGED_VM));
    assert!(forged.message.contains("198.18.0.66"), "{}", forged.message);
    assert!(
        forged.message.contains("never probed"),
        "{}",
        forged.message
    );
    let row = report.nodes.iter().find(|n| n.name == FORGED_VM).unwrap();
    assert!(row.machine.is_none());
    assert!(matches!(
        row.join.problem,
        Some(IdentityProblem::OwnerMismatch { .. })
    ));
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.node.as_deref() == Some(CP1)),
        "cp1 is whole: {:#?}",
        report.findings
    );
    assert_only_good_targets(&env);
}

/// A VM reporting 127.0.0.1. Were any address the guest reports taken, 127.0.0.1 would be
/// cp2's `--self` (its pod checking itself as "cp2") and cp1's and cp3's `--peer` (their probes
/// curling their own etcd with their peer certificates as "cp2's"), and the jumpbox would ssh
/// to itself with the cluster's key; no finding would say so.
#[test]
fn a_vm_reporting_loopback_is_a_finding_and_never_a_target() {
    let env = Env::new(SET, Workload::refused());
    let report = status(&env);
    let f = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::VirtualMachineAddressRefused)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert_eq!(f.node.as_deref(), Some(CP2));
    assert!(
        f.message.contains("reports 127.0.0.1 (loopback)"),
        "{}",
        f.message
    );
    let cp2 = report.nodes.iter().find(|n| n.name == CP2).unwrap();
    assert_eq!(cp2.ip(), None);
    assert_eq!(
        cp2.vm
            .as_ref()
            .and_then(|v| v.refused_ip)
            .map(|ip| ip.to_string())
            .as_deref(),
        Some("127.0.0.1")
    );
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.code == FindingCode::VirtualMachineNoIP),
        "the refused address is said as such: {:#?}",
        report.findings
    );
    assert_only_good_targets(&env);
}

/// A labelled Machine the KCP does not own. Were Machines trusted by their labels, x9rog would
/// be a control-plane node, joined to its VM by name and probed at 198.18.0.77 (a pod pinned to
/// its Node name, a peer of every real node), and counted among the Machines present.
#[test]
fn a_machine_not_owned_by_the_kcp_is_a_finding_and_never_a_target() {
    let env = Env::new(SET, Workload::refused());
    let report = status(&env);
    let f = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::MachineNotOwnedByKCP)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert_eq!(f.node.as_deref(), Some(ROGUE_MACHINE));
    assert!(f.message.contains("never probed"), "{}", f.message);
    assert!(
        f.message.contains("00000000-0000-4000-8000-000000000077"),
        "names the uid it has: {}",
        f.message
    );
    assert_eq!(report.header.control_plane.machines, 3, "the KCP's three");
    let rows: Vec<_> = report
        .nodes
        .iter()
        .filter(|n| n.name == ROGUE_MACHINE)
        .collect();
    assert!(rows.iter().all(|n| n.machine.is_none() && !n.is_target()));
    assert_only_good_targets(&env);
}
