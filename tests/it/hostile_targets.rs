//! Only real control-plane nodes are probed. Anyone who can edit the vSphere Namespace can create
//! a VirtualMachine with the control-plane labels and any IP: such a VM, joined to no Machine, is
//! listed as a finding with its name and IP, and no pod, probe argument or ssh session ever
//! targets it, however many there are. Through the real kubectl, with `--dry-run` showing
//! exactly what would be created on every route.

use crate::common;

use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::FindingCode;
use serde_json::Value;

const ROGUE_IP_PREFIX: &str = "198.18.0.";

/// The `i`th VirtualMachine labelled as one of the cluster's control-plane VMs, owned by nothing.
fn rogue(i: usize) -> Value {
    rogue_vm(&format!("tkc-prod-rogue-{i}"), &rogue_ip(i))
}

fn rogue_ip(i: usize) -> String {
    format!("{ROGUE_IP_PREFIX}{}", 100 + i)
}

fn world(rogues: usize) -> Env {
    Env::with_objects(
        SET,
        (0..rogues).map(rogue).collect(),
        &[],
        Workload::refused(),
    )
}

#[test]
fn a_labelled_vm_without_a_machine_is_a_finding_and_never_a_target() {
    let env = world(1);
    let status = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    let report = status.status_report();
    let rogue = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::MachineMissing)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert_eq!(rogue.node.as_deref(), Some("tkc-prod-rogue-0"));
    assert!(rogue.message.contains(&rogue_ip(0)), "{}", rogue.message);
    assert!(rogue.message.contains("never probed"), "{}", rogue.message);

    for (route, count) in [("pod", CP.len()), ("jumpbox", 1)] {
        let (pods, _) = env.dry_run_pods(CLUSTER, NS, route);
        assert_eq!(
            pods.len(),
            count,
            "{route}: one pod per Machine, or one for them all"
        );
        let text = serde_json::to_string(&pods).unwrap();
        assert!(!text.contains(&rogue_ip(0)), "{route}: {text}");
        assert!(!text.contains("rogue"), "{route}: {text}");
        // The real nodes are still each other's peers.
        for ip in ["198.18.0.11", "198.18.0.12", "198.18.0.13"] {
            assert!(text.contains(ip), "{route}: {ip} missing");
        }
    }
}

#[test]
fn a_hundred_rogue_vms_add_no_target() {
    let env = world(100);
    for (route, count) in [("pod", CP.len()), ("jumpbox", 1)] {
        let (pods, _) = env.dry_run_pods(CLUSTER, NS, route);
        assert_eq!(pods.len(), count, "{route}");
        let text = serde_json::to_string(&pods).unwrap();
        for i in 0..100 {
            assert!(
                !text.contains(&format!("\"{}\"", rogue_ip(i))),
                "{route}: {i}"
            );
        }
    }
    let report = env
        .kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"])
        .status_report();
    let rogues = report
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::MachineMissing)
        .count();
    assert_eq!(rogues, 100);
}
