//! The remediation guard through the real kubectl, on scripted vSphere Pods (no lab): the
//! MachineHealthCheck over the control plane named on a network verdict with the pause and
//! unpause commands (fixture set `remediation-armed`), the reminder to unpause on a Healthy
//! verdict of a paused Cluster (`remediation-paused`), a 403 on MachineHealthChecks as a note,
//! the same guard from a bundle `analyse`d offline, and nothing where the Supervisor says
//! nothing of remediation.

use crate::common;

use common::article::CP;
use common::*;
use etcdnet::report::v1alpha2::{GuardState, VerdictCode};

/// The commands as a run through kubectl prints them: the kubeconfig from KUBECONFIG (no
/// `--kubeconfig` flag), its current context resolved once and carried.
const PAUSE: &str = r#"kubectl patch clusters.cluster.x-k8s.io tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":true}}' --context=supervisor"#;
const UNPAUSE: &str = r#"kubectl patch clusters.cluster.x-k8s.io tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":false}}' --context=supervisor"#;

/// A Supervisor of `set` whose jumpbox pod finds every VM's peers on 2380 timing out.
fn cut(set: &str) -> Env {
    let env = Env::new(set, Workload::black_hole());
    env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
    env
}

fn is_network(code: VerdictCode) -> bool {
    matches!(
        code,
        VerdictCode::EtcdPeerNetworkBlocked
            | VerdictCode::EtcdPeerNetworkPartial
            | VerdictCode::EtcdPeerPortRefused
    )
}

#[test]
fn a_network_verdict_names_the_armed_health_check_and_the_commands() {
    let env = cut("remediation-armed");
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    run.expect_code(1);
    let r = run.diagnose_report();
    assert!(is_network(r.verdict.code), "{:#?}", r.verdict);
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Armed);
    assert!(!g.cluster_paused);
    // The control plane's, never the workers'.
    let names: Vec<&str> = g.health_checks.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["tkc-prod-7xk2p"]);
    assert_eq!(g.health_checks[0].machines, CP);
    assert_eq!(g.pause_command, PAUSE);
    assert_eq!(g.unpause_command, UNPAUSE);
    assert!(
        r.verdict.evidence.iter().any(|e| e.starts_with(
            "remediation is armed: MachineHealthCheck tkc-prod-7xk2p selects the control-plane Machines"
        )),
        "{:#?}",
        r.verdict.evidence
    );
    // Pausing first, before any repair; unpausing last.
    assert!(
        r.verdict.next_steps[0].ends_with(PAUSE),
        "{:#?}",
        r.verdict.next_steps
    );
    assert!(
        r.verdict.next_steps.last().unwrap().ends_with(UNPAUSE),
        "{:#?}",
        r.verdict.next_steps
    );

    let table = env.diagnose_via_jumpbox(&[]);
    table.expect_code(1);
    for want in [
        "REMEDIATION GUARD: armed",
        "MachineHealthCheck tkc-prod-7xk2p: tkc-prod-7xk2p-4rz8m",
        "unhealthy when: Ready=Unknown for 5m0s, Ready=False for 5m0s",
        PAUSE,
        UNPAUSE,
    ] {
        assert!(table.stdout.contains(want), "{want}:\n{}", table.stdout);
    }
    assert!(
        !table.stdout.contains("tkc-prod-node-pool-1-6kq2v"),
        "{}",
        table.stdout
    );
}

#[test]
fn a_paused_cluster_found_healthy_is_reminded_to_unpause() {
    // The workload API answers: `Healthy` needs it (the jumpbox is asked for by --via).
    let env = Env::new("remediation-paused", Workload::ok());
    env.script_jumpbox_pods(&CP);
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    run.expect_code(0);
    let r = run.diagnose_report();
    assert_eq!(r.verdict.code, VerdictCode::Healthy, "{:#?}", r.verdict);
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Paused);
    assert!(g.cluster_paused);
    assert!(
        r.verdict
            .next_steps
            .iter()
            .any(|s| s.contains("unpause") && s.ends_with(UNPAUSE)),
        "{:#?}",
        r.verdict.next_steps
    );
    assert!(!r.verdict.next_steps.iter().any(|s| s.contains(PAUSE)));

    let table = env.diagnose_via_jumpbox(&[]);
    table.expect_code(0);
    assert!(
        table.stdout.contains("REMEDIATION GUARD: paused"),
        "{}",
        table.stdout
    );
}

#[test]
fn a_forbidden_health_check_list_is_a_note_and_changes_no_verdict() {
    let env = cut("remediation-armed");
    let before = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    env.supervisor.forbid(etcdnet_fakeapi::Forbid {
        verb: Some("list".into()),
        group: Some("cluster.x-k8s.io".into()),
        resource: Some("machinehealthchecks".into()),
        ..Default::default()
    });
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    run.expect_code(1);
    let r = run.diagnose_report();
    assert_eq!(r.verdict.code, before.verdict.code);
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Unknown);
    assert!(g.health_checks.is_empty());
    assert_eq!(
        g.unread.as_deref(),
        Some("list machinehealthchecks in namespace ns-prod: forbidden")
    );
    assert!(
        r.verdict
            .notes
            .iter()
            .any(|n| n.starts_with("MachineHealthChecks could not be read")),
        "{:#?}",
        r.verdict.notes
    );
    // Not known: the check to make and the commands in one step, never "armed".
    assert!(
        !r.verdict
            .evidence
            .iter()
            .any(|e| e.contains("remediation is armed")),
        "{:#?}",
        r.verdict.evidence
    );
    assert!(
        r.verdict
            .next_steps
            .iter()
            .any(|s| s.contains("is not known") && s.contains(PAUSE)),
        "{:#?}",
        r.verdict.next_steps
    );
}

#[test]
fn no_word_of_remediation_leaves_the_report_as_it_was() {
    let env = cut(common::article::SET);
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    run.expect_code(1);
    assert!(
        run.json().get("remediationGuard").is_none(),
        "{}",
        run.stdout
    );
    let table = env.diagnose_via_jumpbox(&[]);
    assert!(
        !table.stdout.contains("REMEDIATION GUARD"),
        "{}",
        table.stdout
    );
    assert!(
        !table.stdout.contains("kubectl patch cluster"),
        "{}",
        table.stdout
    );
}

#[test]
fn a_bundle_keeps_the_guard_and_its_note() {
    let env = cut("remediation-armed");
    env.supervisor.forbid(etcdnet_fakeapi::Forbid {
        verb: Some("list".into()),
        group: Some("cluster.x-k8s.io".into()),
        resource: Some("machinehealthchecks".into()),
        ..Default::default()
    });
    let bundle = env.dir.path().join("forbidden.tar.gz");
    let live = crate::bundle::diagnose(&env, &bundle, &["-o", "json"]).diagnose_report();
    let offline = crate::bundle::analyse_offline(&env, &bundle, &["-o", "json"]).diagnose_report();
    assert_eq!(offline.remediation_guard, live.remediation_guard);
    assert_eq!(offline.verdict, live.verdict);
    assert_eq!(
        offline.remediation_guard.unwrap().state,
        GuardState::Unknown
    );

    let env = cut("remediation-armed");
    let bundle = env.dir.path().join("armed.tar.gz");
    let live = crate::bundle::diagnose(&env, &bundle, &["-o", "json"]).diagnose_report();
    let offline = crate::bundle::analyse_offline(&env, &bundle, &["-o", "json"]).diagnose_report();
    assert_eq!(offline.remediation_guard, live.remediation_guard);
    assert_eq!(offline.verdict, live.verdict);
    let g = offline.remediation_guard.unwrap();
    assert_eq!(g.state, GuardState::Armed);
    assert_eq!(g.health_checks[0].name, "tkc-prod-7xk2p");
}

/// What a lab test does with the same fake Supervisor: a MachineHealthCheck created and the
/// Cluster paused while it runs (`FakeApi::insert`, `FakeApi::modify`), each seen by the next
/// diagnosis.
#[test]
fn a_health_check_and_a_pause_made_at_run_time_are_seen() {
    use common::article::{CLUSTER, NS, SET};
    let env = cut(SET);
    env.supervisor
        .insert(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
            "metadata": {"name": "tkc-prod-cp-unhealthy-5m", "namespace": NS,
                "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
            "spec": {"clusterName": CLUSTER, "maxUnhealthy": "100%",
                "selector": {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}},
                "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "300s"}]}
        }))
        .unwrap();
    let armed = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    let g = armed.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Armed);
    assert_eq!(g.health_checks[0].name, "tkc-prod-cp-unhealthy-5m");
    assert_eq!(
        g.health_checks[0].unhealthy_conditions,
        ["Ready=Unknown for 300s"]
    );

    env.supervisor
        .modify("cluster.x-k8s.io/v1beta1", "Cluster", NS, CLUSTER, |c| {
            c["spec"]["paused"] = serde_json::json!(true)
        })
        .unwrap();
    let paused = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    assert_eq!(paused.verdict.code, armed.verdict.code);
    let g = paused.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Paused);
    assert!(
        paused
            .verdict
            .evidence
            .iter()
            .any(|e| e.starts_with("the Cluster is paused")),
        "{:#?}",
        paused.verdict.evidence
    );
    assert!(
        paused
            .verdict
            .next_steps
            .iter()
            .any(|s| s.ends_with(UNPAUSE)),
        "{:#?}",
        paused.verdict.next_steps
    );
    assert!(!paused.verdict.next_steps.iter().any(|s| s.ends_with(PAUSE)));
}

/// Escapes a namespace editor writes into a MachineHealthCheck (its conditions' types, its
/// template's kind) reach the table only as visible escapes, the evidence and the section alike;
/// the JSON keeps the exact strings.
#[test]
fn escapes_in_a_health_check_are_shown_escaped() {
    use common::article::{CLUSTER, NS, SET};
    let env = cut(SET);
    env.supervisor
        .insert(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
            "metadata": {"name": "cp-check", "namespace": NS,
                "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
            "spec": {"clusterName": CLUSTER,
                "selector": {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}},
                "unhealthyConditions": [{"type": "Ready\u{1b}[2J\u{1b}]0;pwned\u{7}", "status": "Unknown", "timeout": "300s"}],
                "remediationTemplate": {"kind": "Evil\u{9b}7m", "name": "t\nfake line", "apiVersion": "x/v1"}}
        }))
        .unwrap();
    let table = env.diagnose_via_jumpbox(&[]);
    table.expect_code(1);
    assert!(!table.stdout.contains('\u{1b}'), "{}", table.stdout);
    assert!(!table.stdout.contains('\u{9b}'), "{}", table.stdout);
    assert!(
        table
            .stdout
            .contains("Ready\\x1b[2J\\x1b]0;pwned\\x07=Unknown for 300s"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("Evil\\u{9b}7m/t\\nfake line"),
        "{}",
        table.stdout
    );
    let json = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    let g = json.remediation_guard.unwrap();
    assert_eq!(
        g.health_checks[0].unhealthy_conditions,
        ["Ready\u{1b}[2J\u{1b}]0;pwned\u{7}=Unknown for 300s"]
    );
}

/// A Machine a MachineHealthCheck has marked and KCP's remediation in progress (as CAPI writes
/// them, v1beta1 conditions and the KCP's annotation) arm the guard on their own, each an
/// evidence line; a KCP's last remediation is shown, and arms nothing.
#[test]
fn a_marked_machine_and_kcp_remediating_are_evidence() {
    use common::article::{NS, SET};
    let env = cut(SET);
    env.supervisor
        .modify("cluster.x-k8s.io/v1beta1", "Machine", NS, CP[1], |m| {
            let conditions = m["status"]["conditions"].as_array_mut().unwrap();
            conditions.push(serde_json::json!({"type": "HealthCheckSucceeded", "status": "False",
                "reason": "UnhealthyNode", "severity": "Warning",
                "message": "Condition Ready on node tkc-prod-7xk2p-9qtvw was Unknown for more than 5m0s",
                "lastTransitionTime": "2025-06-03T08:19:10Z"}));
            conditions.push(serde_json::json!({"type": "OwnerRemediated", "status": "False",
                "reason": "WaitingForRemediation", "severity": "Warning",
                "lastTransitionTime": "2025-06-03T08:19:10Z"}));
        })
        .unwrap();
    env.supervisor
        .modify(
            "controlplane.cluster.x-k8s.io/v1beta1",
            "KubeadmControlPlane",
            NS,
            "tkc-prod-7xk2p",
            |k| {
                k["metadata"]["annotations"]["controlplane.cluster.x-k8s.io/remediation-in-progress"] =
                    serde_json::json!(r#"{"machine":"tkc-prod-7xk2p-4rz8m","timestamp":"2025-06-03T08:20:00Z","retryCount":0}"#);
                k["status"]["lastRemediation"] = serde_json::json!(
                    {"machine": "tkc-prod-7xk2p-4rz8m", "timestamp": "2025-06-03T08:20:00Z", "retryCount": 0});
            },
        )
        .unwrap();
    let r = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Armed);
    assert!(g.health_checks.is_empty());
    assert_eq!(g.marked_machines.len(), 1);
    assert_eq!(g.marked_machines[0].name, CP[1]);
    let k = g.kcp.expect("the KCP's remediation");
    assert!(k.in_progress.unwrap().contains("tkc-prod-7xk2p-4rz8m"));
    assert_eq!(
        k.last_remediation.as_deref(),
        Some("tkc-prod-7xk2p-4rz8m at 2025-06-03T08:20:00Z (retry 0)")
    );
    assert!(
        r.verdict.evidence.iter().any(|e| e
            == "Machine tkc-prod-7xk2p-9qtvw is marked for remediation: HealthCheckSucceeded False (UnhealthyNode), OwnerRemediated False (WaitingForRemediation)"),
        "{:#?}",
        r.verdict.evidence
    );
    assert!(
        r.verdict
            .evidence
            .iter()
            .any(|e| e
                .starts_with("KubeadmControlPlane tkc-prod-7xk2p has a remediation in progress")),
        "{:#?}",
        r.verdict.evidence
    );
    assert!(r.verdict.next_steps.iter().any(|s| s.ends_with(PAUSE)));
}

/// A MachineHealthCheck over the control plane, as CAPI's example writes it, named `name`,
/// paused by its own annotation when `paused`.
fn control_plane_check(name: &str, paused: bool) -> serde_json::Value {
    use common::article::{CLUSTER, NS};
    let mut mhc = serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": NS,
            "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "spec": {"clusterName": CLUSTER, "maxUnhealthy": "100%",
            "selector": {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}},
            "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "300s"}]}
    });
    if paused {
        mhc["metadata"]["annotations"] = serde_json::json!({"cluster.x-k8s.io/paused": ""});
    }
    mhc
}

/// Issue 37 (8): eight paused decoys named `aaa-*`, before the live one by name, once pushed it
/// past the cap of 8 and the guard said "not armed". Every one is judged first: armed, the live
/// one named and shown first, the one left out counted; a bundle keeps the live one.
#[test]
fn eight_paused_decoys_never_silence_the_guard() {
    let env = cut(common::article::SET);
    for i in 0..8 {
        env.supervisor
            .insert(control_plane_check(&format!("aaa-{i}"), true))
            .unwrap();
    }
    env.supervisor
        .insert(control_plane_check("tkc-prod-cp-unhealthy-5m", false))
        .unwrap();
    let bundle = env.dir.path().join("decoys.tar.gz");
    let run = crate::bundle::diagnose(&env, &bundle, &["-o", "json"]);
    run.expect_code(1);
    let r = run.diagnose_report();
    let g = r.remediation_guard.clone().expect("a guard");
    assert_eq!(g.state, GuardState::Armed);
    assert_eq!(g.health_checks.len(), 8);
    assert_eq!(g.health_checks[0].name, "tkc-prod-cp-unhealthy-5m");
    assert!(!g.health_checks[0].paused);
    assert!(g.health_checks[1..].iter().all(|h| h.paused));
    assert_eq!(g.health_checks_left_out, 1);
    assert!(
        r.verdict.evidence.iter().any(|e| e.starts_with(
            "remediation is armed: MachineHealthCheck tkc-prod-cp-unhealthy-5m selects"
        )),
        "{:#?}",
        r.verdict.evidence
    );
    assert!(
        r.verdict.next_steps[0].ends_with(PAUSE),
        "{:#?}",
        r.verdict.next_steps
    );
    let json = run.json();
    assert_eq!(json["remediationGuard"]["healthChecksLeftOut"], 1);

    let offline = crate::bundle::analyse_offline(&env, &bundle, &["-o", "json"]).diagnose_report();
    assert_eq!(offline.remediation_guard, r.remediation_guard);

    let table = env.diagnose_via_jumpbox(&[]);
    for want in [
        "REMEDIATION GUARD: armed",
        "MachineHealthCheck tkc-prod-cp-unhealthy-5m: ",
        "1 more MachineHealthCheck(s) over the control plane not shown",
    ] {
        assert!(table.stdout.contains(want), "{want}:\n{}", table.stdout);
    }
}

/// Issue 37 (9): the Cluster's own `cluster.x-k8s.io/paused` annotation with `spec.paused:
/// false` pauses neither the MachineHealthCheck nor KCP (CAPI's `IsPaused(cluster, obj)`):
/// armed, with the pause step, and a note that says why the annotation is not a pause.
#[test]
fn an_annotated_cluster_not_paused_by_spec_is_armed() {
    use common::article::{CLUSTER, NS};
    let env = cut("remediation-armed");
    env.supervisor
        .modify("cluster.x-k8s.io/v1beta1", "Cluster", NS, CLUSTER, |c| {
            c["metadata"]["annotations"]["cluster.x-k8s.io/paused"] = serde_json::json!("");
            c["spec"]["paused"] = serde_json::json!(false);
        })
        .unwrap();
    let r = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    assert!(is_network(r.verdict.code), "{:#?}", r.verdict);
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Armed);
    assert!(!g.cluster_paused);
    assert_eq!(g.pause_command, PAUSE);
    assert!(
        r.verdict.next_steps[0].ends_with(PAUSE),
        "{:#?}",
        r.verdict.next_steps
    );
    assert!(
        r.verdict
            .notes
            .iter()
            .any(|n| n.contains("pauses only the Cluster's own reconciler")),
        "{:#?}",
        r.verdict.notes
    );
}

/// The KCP's own annotation holds KCP's remediation: paused, and the unpause command removes
/// exactly that annotation (not the Cluster's `spec.paused`).
#[test]
fn a_paused_kcp_is_unpaused_by_its_own_annotation() {
    use common::article::NS;
    let env = cut("remediation-armed");
    env.supervisor
        .modify(
            "controlplane.cluster.x-k8s.io/v1beta1",
            "KubeadmControlPlane",
            NS,
            "tkc-prod-7xk2p",
            |k| k["metadata"]["annotations"]["cluster.x-k8s.io/paused"] = serde_json::json!(""),
        )
        .unwrap();
    let r = env.diagnose_via_jumpbox(&["-o", "json"]).diagnose_report();
    let g = r.remediation_guard.expect("a guard");
    assert_eq!(g.state, GuardState::Paused);
    assert_eq!(g.kcp_paused.as_deref(), Some("tkc-prod-7xk2p"));
    assert_eq!(
        g.unpause_command,
        "kubectl annotate kubeadmcontrolplanes.controlplane.cluster.x-k8s.io tkc-prod-7xk2p -n ns-prod cluster.x-k8s.io/paused- --context=supervisor"
    );
}
