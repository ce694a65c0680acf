//! The join of the network assessment with a diagnosis and the findings, on the policies of
//! tests/fixtures/nsx against three VMs whose Machines have other names (the probe names a node
//! by its Machine; the evaluation by its VM).

use kube::api::DynamicObject;
use serde::Deserialize;

use super::*;
use crate::analyse::matrix::{Cell, Matrix};
use crate::analyse::verdict::Verdict;
use crate::analyse::FindingCode;
use crate::supervisor::network::{NetKind, NetworkObjects, ReadCount};
use crate::supervisor::PowerState;

const VMS: [&str; 3] = [
    "tkc-prod-7xk2p-4rz8m",
    "tkc-prod-7xk2p-9qtvw",
    "tkc-prod-7xk2p-bx2lk",
];
const MACHINES: [&str; 3] = ["machine-a", "machine-b", "machine-c"];
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

fn vm(i: usize) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "vmoperator.vmware.com/v1alpha3",
        "kind": "VirtualMachine",
        "metadata": {"name": VMS[i], "namespace": "ns-prod", "labels": {
            "capv.vmware.com/cluster.name": "tkc-prod",
            "capv.vmware.com/cluster.role": "controlplane",
            "topology.kubernetes.io/zone": ZONES[i],
        }},
        "status": {"network": {"primaryIP4": format!("198.18.0.1{}", i + 1)}},
    }))
    .unwrap()
}

fn policies(file: &str) -> Vec<(NetKind, DynamicObject)> {
    let path = format!(
        "{}/tests/fixtures/nsx/{file}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde_json::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .map(|v| {
            (
                NetKind::VpcSecurityPolicy,
                serde_json::from_value(v).unwrap(),
            )
        })
        .collect()
}

fn objects(file: &str) -> NetworkObjects {
    let security_policies = policies(file);
    NetworkObjects {
        namespace: "ns-prod".into(),
        cluster: "tkc-prod".into(),
        read: vec![ReadCount {
            resource: "securitypolicies.crd.nsx.vmware.com".into(),
            count: security_policies.len(),
        }],
        security_policies,
        control_plane_vms: VMS.iter().map(|s| s.to_string()).collect(),
        vms: (0..3).map(vm).collect(),
        ..NetworkObjects::default()
    }
}

/// Machines named apart from their VMs.
fn facts() -> ClusterFacts {
    let nodes = (0..3)
        .map(|i| {
            let mut n = crate::testing::node(i as u8 + 1, PowerState::PoweredOn, true, "Running");
            n.name = MACHINES[i].into();
            n.machine.as_mut().unwrap().name = MACHINES[i].into();
            n.vm.as_mut().unwrap().name = VMS[i].into();
            n
        })
        .collect();
    crate::testing::facts(3, 3, nodes)
}

/// A diagnosis whose verdict is `code`, with every path on `port` in `state` (the other port
/// ok), by Machine name.
fn diagnosis(code: VerdictCode, failing: Option<(u16, CellState)>) -> Diagnosis {
    let matrix = |port: u16| {
        let mut cells = Vec::new();
        for from in MACHINES {
            for to in MACHINES {
                let state = match failing {
                    Some((p, s)) if p == port && from != to => s,
                    _ => CellState::Ok,
                };
                cells.push(Cell {
                    from: from.into(),
                    to: to.into(),
                    port,
                    state,
                    ms: Some(1),
                    detail: None,
                });
            }
        }
        Matrix {
            port,
            nodes: MACHINES.iter().map(|s| s.to_string()).collect(),
            cells,
        }
    };
    Diagnosis {
        verdict: Verdict {
            code,
            summary: "s".into(),
            nodes: vec![],
            evidence: vec!["first".into()],
            next_steps: vec!["open the ports".into()],
            notes: vec![],
        },
        matrices: vec![matrix(2379), matrix(2380)],
        logs: vec![],
    }
}

#[test]
fn the_verdict_names_the_policy_by_vm_and_fixing_it_is_the_first_step() {
    let a = assess(&objects("drop-between-cp"));
    let mut d = diagnosis(
        VerdictCode::EtcdPeerNetworkPartial,
        Some((2380, CellState::Timeout)),
    );
    join(&mut d, &facts(), &a);
    let v = &d.verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "never changed");
    assert!(
        v.evidence[0].starts_with("SecurityPolicy ns-prod/isolate-etcd (crd.nsx.vmware.com, priority 10, rules[1] \"drop-peer-out\"): Drop Out on TCP 2380")
            && v.evidence[0].contains("covers 6 of the 6 failing paths (machine-a → machine-b:2380"),
        "{:#?}",
        v.evidence
    );
    assert_eq!(v.evidence.last().unwrap(), "first");
    assert!(
        v.next_steps[0].starts_with("Fix SecurityPolicy ns-prod/isolate-etcd: ")
            && v.next_steps[0].contains(
                "kubectl get securitypolicies.crd.nsx.vmware.com isolate-etcd -n ns-prod -o yaml"
            ),
        "{:#?}",
        v.next_steps
    );
    assert_eq!(v.next_steps.last().unwrap(), "open the ports");
    // The same rule on 2379, whose paths work: a warning note, never a reason.
    assert!(
        v.notes.iter().any(
            |n| n.starts_with("warning: SecurityPolicy ns-prod/isolate-etcd")
                && n.contains("the probe saw work")
        ),
        "{:#?}",
        v.notes
    );
}

#[test]
fn failing_paths_no_visible_rule_blocks_are_outside_the_supervisors_view() {
    let mut o = objects("allow");
    o.unread = vec!["list subnetports.crd.nsx.vmware.com in namespace ns-prod: forbidden".into()];
    let a = assess(&o);
    let mut d = diagnosis(
        VerdictCode::EtcdPeerNetworkBlocked,
        Some((2380, CellState::Timeout)),
    );
    join(&mut d, &facts(), &a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.starts_with("6 of the 6 failing paths (machine-a → machine-b:2380")
            && line.contains("the cause is outside its view (NSX distributed firewall or gateway rules made in NSX Manager, the NSGroups of an NSX 4.1 to 4.2 upgrade)")
            && line.contains("read: securitypolicies.crd.nsx.vmware.com 1")
            && line.contains("could not read: list subnetports.crd.nsx.vmware.com in namespace ns-prod: forbidden"),
        "{line}"
    );
    assert_eq!(
        d.verdict.next_steps[0], "open the ports",
        "no policy to fix"
    );
}

#[test]
fn a_rule_not_realized_on_a_healthy_cluster_is_a_warning() {
    let a = assess(&objects("not-realized"));
    let mut d = diagnosis(VerdictCode::Healthy, None);
    join(&mut d, &facts(), &a);
    assert_eq!(
        d.verdict.evidence,
        ["first"],
        "no evidence on a healthy verdict"
    );
    assert!(
        d.verdict.notes.iter().any(|n| n
            .starts_with("warning: SecurityPolicy ns-prod/pending-drop")
            && n.contains("not realized by NSX")),
        "{:#?}",
        d.verdict.notes
    );
    let findings = crate::analyse::network_findings(&a);
    assert!(findings
        .iter()
        .any(|f| f.code == FindingCode::SecurityPolicyWouldBlockEtcd
            && f.severity == crate::analyse::Severity::Warning));
    assert!(a.applies());
}

#[test]
fn another_verdict_gets_no_policy_evidence() {
    let a = assess(&objects("drop-between-cp"));
    let mut d = diagnosis(VerdictCode::NodesUnreachable, None);
    join(&mut d, &facts(), &a);
    assert_eq!(d.verdict.evidence, ["first"]);
    assert_eq!(d.verdict.next_steps, ["open the ports"]);
    let codes: Vec<FindingCode> = crate::analyse::network_findings(&a)
        .iter()
        .map(|f| f.code)
        .collect();
    assert!(
        codes.contains(&FindingCode::SecurityPolicyBlocksEtcd),
        "{codes:?}"
    );
}

#[test]
fn pairs_are_short_when_every_path_of_a_port_is_covered() {
    let all: Vec<PathRef> = VMS
        .iter()
        .flat_map(|f| VMS.iter().map(move |t| (f, t)))
        .filter(|(f, t)| f != t)
        .map(|(f, t)| PathRef {
            port: 2380,
            from: f.to_string(),
            to: t.to_string(),
        })
        .collect();
    assert_eq!(pairs_text(&all, 3), "every path between the 3 VMs on 2380");
    assert_eq!(
        pairs_text(&all[..1], 3),
        "tkc-prod-7xk2p-4rz8m → tkc-prod-7xk2p-9qtvw:2380"
    );
}

#[test]
fn the_assessment_is_camel_case_and_round_trips() {
    let a = assess(&objects("drop-between-cp"));
    let v = serde_json::to_value(&a).unwrap();
    for k in ["read", "unread", "realization", "evaluation"] {
        assert!(v.get(k).is_some(), "{k}");
    }
    let back: NetworkAssessment = serde_json::from_value(v).unwrap();
    assert_eq!(back, a);
}
