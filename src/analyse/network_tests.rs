//! The join of the network assessment with a diagnosis and the findings, on the policies of
//! tests/fixtures/nsx against three VMs whose Machines have other names (the probe names a node
//! by its Machine; the evaluation by its VM).

use kube::api::DynamicObject;
use serde::Deserialize;

use super::*;
use crate::analyse::matrix::{Cell, Matrix};
use crate::analyse::verdict::{Verdict, VerdictCode};
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

pub(crate) fn objects(file: &str) -> NetworkObjects {
    let security_policies = policies(file);
    NetworkObjects {
        namespace: "ns-prod".into(),
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

/// The assessment joined to a diagnosis of every peer path timing out on 2380
/// (`EtcdPeerNetworkBlocked`), the case most join tests start from.
fn blocked_2380_joined(a: &NetworkAssessment) -> Diagnosis {
    let mut d = diagnosis(
        VerdictCode::EtcdPeerNetworkBlocked,
        Some((2380, CellState::Timeout)),
    );
    join(&mut d, &facts(), a);
    d
}

/// A diagnosis whose verdict is `code`, with every path on `port` in `state` (the other port
/// ok), by Machine name.
fn diagnosis(code: VerdictCode, failing: Option<(u16, CellState)>) -> Diagnosis {
    diagnosis_of(&MACHINES, code, failing)
}

/// A diagnosis of `nodes` whose verdict is `code`, with every peer path on `port` in `state`
/// (the other port ok).
pub(crate) fn diagnosis_of(
    nodes: &[&str],
    code: VerdictCode,
    failing: Option<(u16, CellState)>,
) -> Diagnosis {
    let matrix = |port: u16| {
        let mut cells = Vec::new();
        for &from in nodes {
            for &to in nodes {
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
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
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
        location: None,
        guard: None,
        etcd_metrics: vec![],
        timeline: Default::default(),
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
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.starts_with("6 of the 6 failing paths (machine-a → machine-b:2380")
            && line.contains("the cause is outside the Supervisor's view")
            && line.contains("Ethernet, Emergency, Infrastructure, Environment")
            && line.contains("the VPC or project default rules")
            && line.contains("SpoofGuard / IP discovery")
            && line.contains("a firewall inside the guest")
            && !line.contains("gateway")
            && !line.contains("NetworkPolic")
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
            && n.contains("not Ready")
            && n.contains("last realized")),
        "{:#?}",
        d.verdict.notes
    );
    let findings = crate::analyse::network_findings(&a, &Default::default());
    assert!(findings
        .iter()
        .any(|f| f.code == FindingCode::SecurityPolicyWouldBlockEtcd
            && f.severity == crate::analyse::Severity::Warning));
}

#[test]
fn another_verdict_gets_no_policy_evidence() {
    let a = assess(&objects("drop-between-cp"));
    let mut d = diagnosis(VerdictCode::NodesUnreachable, None);
    join(&mut d, &facts(), &a);
    assert_eq!(d.verdict.evidence, ["first"]);
    assert_eq!(d.verdict.next_steps, ["open the ports"]);
    let codes: Vec<FindingCode> = crate::analyse::network_findings(&a, &Default::default())
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

/// Probe cells with `state` on the given paths of `port` (by Machine index), every other cell
/// ok.
fn diagnosis_with(
    code: VerdictCode,
    port: u16,
    failing: &[(usize, usize)],
    state: CellState,
) -> Diagnosis {
    let mut d = diagnosis(code, None);
    for m in &mut d.matrices {
        for c in &mut m.cells {
            let i = MACHINES.iter().position(|n| *n == c.from).unwrap();
            let j = MACHINES.iter().position(|n| *n == c.to).unwrap();
            if c.port == port && failing.contains(&(i, j)) {
                c.state = state;
            }
        }
    }
    d
}

fn policy_objects(yaml: &str) -> NetworkObjects {
    let mut o = objects("allow");
    o.security_policies = serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde_json::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .map(|v| {
            (
                NetKind::VpcSecurityPolicy,
                serde_json::from_value(v).unwrap(),
            )
        })
        .collect();
    o
}

#[test]
fn a_failing_path_under_a_not_ready_drop_names_it_and_its_last_realized_version() {
    let a = assess(&objects("not-realized"));
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.starts_with("SecurityPolicy ns-prod/pending-drop (crd.nsx.vmware.com, priority 20, rules[0] \"drop-peer\")")
            && line.contains("covers 6 of the 6 failing paths")
            && line.contains("not Ready (SecurityPolicyNotReady: error occurred")
            && line.contains("last realized"),
        "{line}"
    );
    assert!(
        !d.verdict
            .evidence
            .iter()
            .any(|l| l.contains("outside the Supervisor's view")),
        "{:#?}",
        d.verdict.evidence
    );
    assert!(
        d.verdict.next_steps[0].starts_with("Fix SecurityPolicy ns-prod/pending-drop: "),
        "{:#?}",
        d.verdict.next_steps
    );
}

#[test]
fn a_policy_nsx_operator_refuses_cannot_be_realized_as_written() {
    let a = assess(&objects("no-applied-to"));
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.starts_with("SecurityPolicy ns-prod/half-applied")
            && line.contains("not Ready")
            && line.contains("cannot be realized as written")
            && line.contains("appliedTo needs to be set in either spec or rules")
            && line.contains("last realized")
            && !line.contains("once it is realized"),
        "{line}"
    );
}

#[test]
fn a_cannot_decide_line_names_the_policy() {
    // An unreadable action in a realized policy that selects the VMs, at priority 1.
    let o = policy_objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: odd-action, namespace: ns-prod}
spec:
  priority: 1
  appliedTo: [{vmSelector: {}}]
  rules:
  - {direction: In, action: Deny, ports: [{port: 2380}]}
status:
  conditions: [{type: Ready, status: 'True'}]
",
    );
    let a = assess(&o);
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.contains("cannot be decided from the visible SecurityPolicies: SecurityPolicy ns-prod/odd-action: rules[0]"),
        "{line}"
    );
}

fn leader_logs() -> Vec<crate::analyse::verdict::NodeLogs> {
    let line = r#"{"level":"info","ts":"2026-12-02T14:46:13.937Z","caller":"raft/node.go:327","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader 14569749fa01776e at term 45"}"#;
    MACHINES
        .iter()
        .map(|m| crate::analyse::verdict::NodeLogs {
            node: m.to_string(),
            summary: crate::probe::etcdlog::classify(line),
        })
        .collect()
}

#[test]
fn a_published_drop_of_2380_with_a_leader_still_known_is_hedged() {
    let a = assess(&objects("drop-between-cp"));
    let mut d = diagnosis(
        VerdictCode::EtcdPeerNetworkPartial,
        Some((2380, CellState::Timeout)),
    );
    d.logs = leader_logs();
    assert!(
        d.logs[0].summary.leader.is_some(),
        "the fixture line is a leader line"
    );
    join(&mut d, &facts(), &a);
    assert!(
        d.verdict
            .evidence
            .iter()
            .any(|l| l.contains("still have a leader")
                && l.contains("established")
                && l.contains("SecurityPolicy ns-prod/isolate-etcd")),
        "{:#?}",
        d.verdict.evidence
    );
    // Without a leader line: no hedge.
    let mut d = diagnosis(
        VerdictCode::EtcdPeerNetworkPartial,
        Some((2380, CellState::Timeout)),
    );
    join(&mut d, &facts(), &a);
    assert!(!d.verdict.evidence.iter().any(|l| l.contains("established")));
}

#[test]
fn an_egress_drop_beats_an_ingress_allow_of_higher_priority() {
    // Each check is its own: the egress check at FROM meets the Drop (priority 9) whatever
    // the ingress check at TO allows first (priority 1).
    let o = policy_objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: allow-in, namespace: ns-prod}
spec:
  priority: 1
  appliedTo: [{vmSelector: {}}]
  rules:
  - {direction: In, action: Allow, ports: [{port: 2379, endPort: 2380}]}
status:
  conditions: [{type: Ready, status: 'True'}]
---
apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: drop-out, namespace: ns-prod}
spec:
  priority: 9
  appliedTo: [{vmSelector: {matchLabels: {topology.kubernetes.io/zone: zone-a}}}]
  rules:
  - {direction: Out, action: Drop, ports: [{port: 2380}]}
status:
  conditions: [{type: Ready, status: 'True'}]
",
    );
    let a = assess(&o);
    let r = a.evaluation.blocking_rule(2380, VMS[0], VMS[1]).unwrap();
    assert_eq!(
        (r.policy.as_str(), r.direction),
        ("drop-out", crate::analyse::policy::Direction::Out)
    );
    assert!(a.evaluation.blocking_rule(2380, VMS[1], VMS[0]).is_none());
    let mut d = diagnosis_with(
        VerdictCode::EtcdPeerNetworkPartial,
        2380,
        &[(0, 1), (0, 2)],
        CellState::Timeout,
    );
    join(&mut d, &facts(), &a);
    assert!(
        d.verdict.evidence[0].starts_with(
            "SecurityPolicy ns-prod/drop-out (crd.nsx.vmware.com, priority 9, rules[0])"
        ) && d.verdict.evidence[0].contains("covers 2 of the 2 failing paths"),
        "{:#?}",
        d.verdict.evidence
    );
    assert!(d.verdict.next_steps[0].starts_with("Fix SecurityPolicy ns-prod/drop-out"));
}

#[test]
fn a_policy_level_applied_to_wins_over_the_rule_level_one_with_a_reject() {
    // The rule's own appliedTo names zone-c only; the policy's selects every control-plane VM
    // and takes precedence (docs/security-policy.md): the Reject applies at every VM.
    let o = policy_objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: reject-peer, namespace: ns-prod}
spec:
  priority: 3
  appliedTo: [{vmSelector: {matchLabels: {capv.vmware.com/cluster.role: controlplane}}}]
  rules:
  - direction: Ingress
    action: Reject
    appliedTo: [{vmSelector: {matchLabels: {topology.kubernetes.io/zone: zone-c}}}]
    ports: [{port: 2380}]
status:
  conditions: [{type: Ready, status: 'True'}]
",
    );
    let a = assess(&o);
    assert!(a.evaluation.policies[0].invalid.is_empty());
    for f in VMS {
        for t in VMS {
            if f != t {
                let r = a.evaluation.blocking_rule(2380, f, t).unwrap();
                assert_eq!(r.action, Action::Reject, "{f} {t}");
            }
        }
    }
    let mut d = diagnosis(
        VerdictCode::EtcdPeerPortRefused,
        Some((2380, CellState::Refused)),
    );
    join(&mut d, &facts(), &a);
    assert!(
        d.verdict.evidence[0].starts_with("SecurityPolicy ns-prod/reject-peer")
            && d.verdict.evidence[0].contains("Reject In on TCP 2380 covers 6 of the 6"),
        "{:#?}",
        d.verdict.evidence
    );
    assert!(d.verdict.next_steps[0].contains("rejects TCP 2380"));
}

#[test]
fn an_allow_only_policy_and_a_network_policy_default_deny_name_neither() {
    // NetworkPolicies are realized for Pods only; the Allow blocks nothing.
    let mut o = objects("allow");
    o.network_policies = vec![serde_json::from_value(serde_json::json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": "ns-prod"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }))
    .unwrap()];
    let a = assess(&o);
    assert!(a.evaluation.blocking().is_empty());
    let d = blocked_2380_joined(&a);
    let ev = d.verdict.evidence.join("\n");
    assert!(ev.contains("outside the Supervisor's view"), "{ev}");
    assert!(
        !ev.contains("allow-etcd") && !ev.contains("default-deny"),
        "{ev}"
    );
    assert!(!d.verdict.next_steps.iter().any(|s| s.starts_with("Fix ")));
    assert!(crate::analyse::network_findings(&a, &Default::default())
        .iter()
        .all(|f| f.code != FindingCode::SecurityPolicyBlocksEtcd));
}

/// A namespace drowned in shadowed rules: one priority-0 Allow and 63 policies of 64 shadowed
/// Drops.
pub(crate) fn drowned() -> NetworkObjects {
    let rules: String = (0..64)
        .map(|_| "  - {direction: In, action: Drop, ports: [{port: 2379, endPort: 2380}]}\n")
        .collect();
    let policy = |name: String, priority: u32, rules: &str| {
        format!(
            "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {{name: {name}, namespace: ns-prod}}
spec:
  priority: {priority}
  appliedTo: [{{vmSelector: {{matchLabels: {{capv.vmware.com/cluster.role: controlplane}}}}}}]
  rules:
{rules}status:
  conditions: [{{type: Ready, status: 'True'}}]
---
"
        )
    };
    let mut text = policy(
        "allow-all".into(),
        0,
        "  - {direction: In, action: Allow}\n",
    );
    for i in 0..63 {
        text += &policy(format!("deny-{i:02}"), 5, &rules);
    }
    policy_objects(&text)
}

#[test]
fn a_drowned_namespace_gives_bounded_findings_notes_and_json() {
    // The work is bounded (clipped findings and notes, not one per rule and path): this
    // thread's CPU time, not wall time, which a loaded machine stretches (CI failed this at
    // load 15-78).
    let start = crate::testing::cpu_time();
    let a = assess(&drowned());
    let findings = crate::analyse::network_findings(&a, &Default::default());
    let mut d = diagnosis(VerdictCode::Healthy, None);
    join(&mut d, &facts(), &a);
    let took = crate::testing::cpu_time() - start;
    assert!(took < std::time::Duration::from_secs(5), "{took:?} of CPU");
    // 8 warnings and one that counts the rest.
    assert_eq!(findings.len(), 9, "{findings:#?}");
    assert!(findings[8].message.starts_with(&format!(
        "and {} more SecurityPolicy rules would block",
        63 * 64 - 8
    )));
    assert_eq!(d.verdict.notes.len(), 9, "{:#?}", d.verdict.notes);
    assert!(d.verdict.notes[8].contains(&format!("and {} more", 63 * 64 - 8)));
}

#[test]
fn a_not_ready_policy_whose_rules_now_allow_is_still_named_for_its_last_realized_version() {
    // A failed update turned a Drop into an Allow: as written nothing blocks, but NSX keeps
    // the Drop it realized last.
    let o = policy_objects(
        "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: was-a-drop, namespace: ns-prod}
spec:
  priority: 1
  appliedTo: [{vmSelector: {matchLabels: {capv.vmware.com/cluster.name: tkc-prod, capv.vmware.com/cluster.role: controlplane}, matchExpressions: [{key: topology.kubernetes.io/zone, operator: Exists}, {key: topology.kubernetes.io/zone, operator: NotIn, values: [zone-x]}]}}]
  rules:
  - {direction: In, action: Allow, ports: [{port: 2380}]}
status:
  conditions:
  - {type: Ready, status: 'False', reason: SecurityPolicyNotReady, message: 'error occurred while processing the SecurityPolicy CR. Error: total count of labelSelectors expressions 6 exceed NSX limit of 5 in one criteria based on the same member type'}
",
    );
    let a = assess(&o);
    assert!(!a.evaluation.policies[0].invalid.is_empty());
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.contains("outside the Supervisor's view")
            && line.contains("SecurityPolicy ns-prod/was-a-drop")
            && line.contains("last realized"),
        "{line}"
    );
}

#[test]
fn the_supervisors_live_group_and_left_out_count_reach_the_evaluation() {
    // nsx-operator reconciles nsx.vmware.com here: the crd.nsx.vmware.com Drop is a leftover.
    let mut o = objects("drop-between-cp");
    o.live_policy_kind = Some(NetKind::T1SecurityPolicy);
    o.networking_basis = Some("the Namespace has no VPC NetworkInfo".into());
    let a = assess(&o);
    assert!(a.evaluation.blocking().is_empty());
    assert_eq!(a.evaluation.set_aside.len(), 1);
    assert!(a.evaluation.set_aside[0]
        .why
        .contains("the Namespace has no VPC NetworkInfo"));
    assert_eq!(
        a.evaluation.networking_basis.as_deref(),
        Some("the Namespace has no VPC NetworkInfo")
    );
    // Policies the read left out: never a named Drop.
    let mut o = objects("drop-between-cp");
    o.policies_left_out = 2;
    let a = assess(&o);
    assert!(a.evaluation.blocking().is_empty());
    assert_eq!(a.evaluation.policies_not_read, 2);
    let d = blocked_2380_joined(&a);
    assert!(
        d.verdict.evidence[0].contains("cannot be decided")
            && d.verdict.evidence[0].contains("2 SecurityPolicies were left out of the read"),
        "{:#?}",
        d.verdict.evidence
    );
    assert!(!d.verdict.next_steps[0].starts_with("Fix "));
}

#[test]
fn a_t1_rule_says_its_port_tags_are_ncps() {
    let mut o = policy_objects(
        "apiVersion: nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {name: t1-drop, namespace: ns-prod}
spec:
  priority: 4
  appliedTo: [{vmSelector: {matchLabels: {capv.vmware.com/cluster.role: controlplane}}}]
  rules:
  - {direction: in, action: drop, ports: [{port: 2380}]}
status:
  conditions: [{type: Ready, status: 'True'}]
",
    );
    for (k, _) in &mut o.security_policies {
        *k = NetKind::T1SecurityPolicy;
    }
    let a = assess(&o);
    assert!(!a.evaluation.blocking().is_empty());
    let d = blocked_2380_joined(&a);
    let line = &d.verdict.evidence[0];
    assert!(
        line.starts_with("SecurityPolicy ns-prod/") && line.contains("the ports' tags are NCP's"),
        "{line}"
    );
}

#[test]
fn many_rules_on_the_failing_paths_are_bounded_in_the_evidence() {
    // One Drop per path: 12 rules, each applied to TO's zone, from FROM's address, one port.
    let mut text = String::new();
    let mut n = 0;
    for port in [2379, 2380] {
        for (f, _) in VMS.iter().enumerate() {
            for (t, _) in VMS.iter().enumerate() {
                if f == t {
                    continue;
                }
                n += 1;
                text += &format!(
                    "apiVersion: crd.nsx.vmware.com/v1alpha1
kind: SecurityPolicy
metadata: {{name: p{n:02}, namespace: ns-prod}}
spec:
  priority: {n}
  appliedTo: [{{vmSelector: {{matchLabels: {{topology.kubernetes.io/zone: {}}}}}}}]
  rules:
  - {{direction: In, action: Drop, ports: [{{port: {port}}}], from: [{{ipBlocks: [{{cidr: 198.18.0.1{}/32}}]}}]}}
status:
  conditions: [{{type: Ready, status: 'True'}}]
---
",
                    ZONES[t],
                    f + 1
                );
            }
        }
    }
    let a = assess(&policy_objects(&text));
    assert_eq!(a.evaluation.blocking().len(), 12);
    let mut d = diagnosis(VerdictCode::EtcdPeerNetworkBlocked, None);
    for m in &mut d.matrices {
        for c in &mut m.cells {
            if c.from != c.to {
                c.state = CellState::Timeout;
            }
        }
    }
    join(&mut d, &facts(), &a);
    let named = d
        .verdict
        .evidence
        .iter()
        .filter(|l| l.starts_with("SecurityPolicy ns-prod/p"))
        .count();
    assert_eq!(named, 8, "{:#?}", d.verdict.evidence);
    assert!(d
        .verdict
        .evidence
        .iter()
        .any(|l| l.starts_with("and 4 more SecurityPolicy rules cover failing paths")));
    let steps = d
        .verdict
        .next_steps
        .iter()
        .filter(|s| s.starts_with("Fix SecurityPolicy"))
        .count();
    assert_eq!(steps, 8);
}
