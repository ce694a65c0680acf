use super::*;
use crate::supervisor::{ClusterFacts, ClusterInfo};

fn facts(r: RemediationFacts) -> ClusterFacts {
    ClusterFacts {
        namespace: "ns-prod".into(),
        cluster: ClusterInfo {
            name: "tkc-prod".into(),
            ..Default::default()
        },
        remediation: r,
        ..Default::default()
    }
}

fn control_plane_check() -> HealthCheck {
    HealthCheck {
        name: "tkc-prod-control-plane".into(),
        machines: vec!["cp-1".into(), "cp-2".into(), "cp-3".into()],
        unhealthy_conditions: vec!["Ready=Unknown for 5m0s".into()],
        node_startup_timeout: Some("20m".into()),
        max_unhealthy: Some("100%".into()),
        ..Default::default()
    }
}

const PAUSE: &str = r#"kubectl patch clusters.cluster.x-k8s.io tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":true}}'"#;
const UNPAUSE: &str = r#"kubectl patch clusters.cluster.x-k8s.io tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":false}}'"#;

#[test]
fn nothing_said_is_no_guard() {
    assert_eq!(assess(&facts(RemediationFacts::default())), None);
}

#[test]
fn an_armed_check_on_a_network_verdict_names_it_and_gives_both_commands() {
    let g = assess(&facts(RemediationFacts {
        health_checks: vec![control_plane_check()],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
    assert_eq!(g.pause_command, PAUSE);
    assert_eq!(g.unpause_command, UNPAUSE);
    let a = g.advice(true, false);
    assert!(
        a.evidence[0].starts_with(
            "remediation is armed: MachineHealthCheck tkc-prod-control-plane selects the control-plane Machines cp-1, cp-2, cp-3 (unhealthy when Ready=Unknown for 5m0s; no Node after 20m; maxUnhealthy 100%)"
        ),
        "{a:#?}"
    );
    assert!(
        a.evidence[1].contains("KCP then deletes a marked Machine"),
        "{a:#?}"
    );
    assert_eq!(a.first_steps.len(), 1, "{a:#?}");
    assert!(a.first_steps[0].ends_with(PAUSE), "{a:#?}");
    assert!(a.next_steps[0].ends_with(UNPAUSE), "{a:#?}");
    // Not a network verdict: the check is no reason to pause.
    assert_eq!(g.advice(false, false), Advice::default());
    // Healthy and not paused: nothing to remind.
    assert_eq!(g.advice(false, true), Advice::default());
}

#[test]
fn an_external_remediation_is_named_and_not_said_to_be_kcps() {
    let g = assess(&facts(RemediationFacts {
        health_checks: vec![HealthCheck {
            remediation_template: Some("Metal3RemediationTemplate/cp".into()),
            ..control_plane_check()
        }],
        ..Default::default()
    }))
    .unwrap();
    let a = g.advice(true, false);
    assert!(
        a.evidence
            .iter()
            .any(|e| e.contains("remediation template Metal3RemediationTemplate/cp")),
        "{a:#?}"
    );
    assert!(
        !a.evidence.iter().any(|e| e.contains("KCP then deletes")),
        "{a:#?}"
    );
    assert!(a.first_steps[0].ends_with(PAUSE));
}

#[test]
fn a_paused_check_alone_arms_nothing() {
    let g = assess(&facts(RemediationFacts {
        health_checks: vec![HealthCheck {
            paused: true,
            ..control_plane_check()
        }],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::NotArmed);
    assert_eq!(g.advice(true, false), Advice::default());
}

#[test]
fn paused_and_healthy_reminds_to_unpause() {
    let g = assess(&facts(RemediationFacts {
        cluster_paused: true,
        health_checks: vec![control_plane_check()],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Paused);
    let healthy = g.advice(false, true);
    assert_eq!(healthy.next_steps.len(), 1, "{healthy:#?}");
    assert!(healthy.next_steps[0].contains("unpause"));
    assert!(healthy.next_steps[0].ends_with(UNPAUSE));
    assert!(healthy.evidence.is_empty());
    let network = g.advice(true, false);
    assert!(
        network.evidence[0].starts_with("the Cluster is paused"),
        "{network:#?}"
    );
    assert!(network.next_steps[0].ends_with(UNPAUSE));
    assert!(!network.next_steps.iter().any(|s| s.contains(PAUSE)));
}

#[test]
fn marked_machines_and_kcp_in_progress_on_any_problem_verdict() {
    let cond = |kind: &str, reason: &str| Condition {
        kind: kind.into(),
        status: "False".into(),
        reason: Some(reason.into()),
        message: None,
        severity: None,
        last_transition_time: None,
    };
    let g = assess(&facts(RemediationFacts {
        marked: vec![MarkedMachine {
            name: "cp-2".into(),
            health_check_succeeded: Some(cond("HealthCheckSucceeded", "UnhealthyNode")),
            owner_remediated: Some(cond("OwnerRemediated", "WaitingForRemediation")),
            skipped: false,
        }],
        kcp: Some(KcpRemediation {
            name: "tkc-prod-cp".into(),
            in_progress: Some("{\"machine\":\"cp-1\"}".into()),
            ..Default::default()
        }),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
    let a = g.advice(false, false);
    assert_eq!(
        a.evidence[0],
        "Machine cp-2 is marked for remediation: HealthCheckSucceeded False (UnhealthyNode), OwnerRemediated False (WaitingForRemediation)"
    );
    assert!(
        a.evidence[1].starts_with("KubeadmControlPlane tkc-prod-cp has a remediation in progress")
    );
    assert!(a.next_steps.is_empty());
    // On a network verdict the commands follow.
    assert!(g.advice(true, false).first_steps[0].ends_with(PAUSE));
}

#[test]
fn unread_checks_are_a_note_and_unknown() {
    let g = assess(&facts(RemediationFacts {
        unread: Some("list machinehealthchecks in namespace ns-prod: forbidden".into()),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Unknown);
    let a = g.advice(true, false);
    assert!(a.evidence.is_empty());
    assert_eq!(a.notes.len(), 1);
    assert!(a.notes[0].contains("forbidden"), "{a:#?}");
    // Not known is no reason to say armed: the check to make, then the commands.
    assert_eq!(a.next_steps.len(), 1, "{a:#?}");
    assert!(
        a.next_steps[0].contains("kubectl get machinehealthchecks.cluster.x-k8s.io -n ns-prod"),
        "{a:#?}"
    );
    assert!(a.next_steps[0].contains(PAUSE) && a.next_steps[0].ends_with(UNPAUSE));
    // Off a network verdict, only the note.
    let other = g.advice(false, false);
    assert!(other.next_steps.is_empty() && other.notes.len() == 1);
}

#[test]
fn names_that_are_no_kubernetes_names_never_reach_the_command() {
    let k = Kubectl::default();
    for hostile in ["a'b", "--server=https://evil", "$(reboot)", "x;y"] {
        let c = patch_command(&k, hostile, "ns-prod", true);
        assert_eq!(
            c,
            r#"kubectl patch clusters.cluster.x-k8s.io '<not a valid name>' -n ns-prod --type merge -p '{"spec":{"paused":true}}'"#
        );
        let c = patch_command(&k, "tkc-prod", hostile, true);
        assert!(c.contains("-n '<not a valid name>' "), "{c}");
    }
}

#[test]
fn every_command_carries_the_run_flags() {
    let mut f = facts(RemediationFacts {
        health_checks: vec![control_plane_check()],
        unread: None,
        ..Default::default()
    });
    f.kubectl = Kubectl::new(Some("sv admin"), Some(std::path::Path::new("/k/c")));
    let g = assess(&f).unwrap();
    for c in [&g.pause_command, &g.unpause_command, &g.list_checks] {
        assert!(
            c.ends_with(" --context='sv admin' --kubeconfig=/k/c"),
            "{c}"
        );
    }
}

/// Eight paused decoys named before the live one push it past the cap of what is shown: it is
/// still judged, shown first, and named; the rest are counted.
#[test]
fn paused_decoys_never_hide_the_live_check() {
    // What remediation::facts gives for 8 paused `aaa-*` and one live: the live one first.
    let mut checks = vec![control_plane_check()];
    checks.extend((0..7).map(|i| HealthCheck {
        name: format!("aaa-{i}"),
        paused: true,
        ..control_plane_check()
    }));
    let g = assess(&facts(RemediationFacts {
        health_checks: checks,
        health_checks_left_out: 1,
        live_left_out: 0,
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
    let a = g.advice(true, false);
    assert!(
        a.evidence[0]
            .starts_with("remediation is armed: MachineHealthCheck tkc-prod-control-plane"),
        "{a:#?}"
    );
    assert!(
        a.evidence.iter().any(|e| e.starts_with(
            "1 more MachineHealthCheck(s) over the control plane not shown (0 of them not paused)"
        )),
        "{a:#?}"
    );
    // Live ones past the cap arm on their own, shown or not.
    let g = assess(&facts(RemediationFacts {
        health_checks: vec![],
        health_checks_left_out: 3,
        live_left_out: 1,
        kcp_paused: Some("tkc-prod-cp".into()),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
}

#[test]
fn an_annotated_cluster_is_not_paused_and_says_why() {
    let g = assess(&facts(RemediationFacts {
        cluster_annotated: true,
        health_checks: vec![control_plane_check()],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
    assert!(!g.cluster_paused);
    let a = g.advice(true, false);
    assert!(a.first_steps[0].ends_with(PAUSE), "{a:#?}");
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("pauses only the Cluster's own reconciler")),
        "{a:#?}"
    );
}

#[test]
fn a_paused_kcp_holds_kcp_remediation_and_its_annotation_is_what_is_removed() {
    const KCP_UNPAUSE: &str = "kubectl annotate kubeadmcontrolplanes.controlplane.cluster.x-k8s.io tkc-prod-cp -n ns-prod cluster.x-k8s.io/paused-";
    let g = assess(&facts(RemediationFacts {
        kcp_paused: Some("tkc-prod-cp".into()),
        health_checks: vec![control_plane_check()],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Paused);
    assert_eq!(g.unpause_command, KCP_UNPAUSE);
    assert!(
        g.pause_command.ends_with("cluster.x-k8s.io/paused=true"),
        "{}",
        g.pause_command
    );
    let a = g.advice(true, false);
    assert!(
        a.evidence[0].starts_with("KubeadmControlPlane tkc-prod-cp carries"),
        "{a:#?}"
    );
    assert!(a.next_steps[0].ends_with(KCP_UNPAUSE), "{a:#?}");
    let healthy = g.advice(false, true);
    assert!(healthy.next_steps[0].ends_with(KCP_UNPAUSE), "{healthy:#?}");
    // An external remediation acts whatever KCP does.
    let g = assess(&facts(RemediationFacts {
        kcp_paused: Some("tkc-prod-cp".into()),
        health_checks: vec![HealthCheck {
            remediation_template: Some("Metal3RemediationTemplate/cp".into()),
            ..control_plane_check()
        }],
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(g.state, GuardState::Armed);
    assert!(
        g.unpause_command.ends_with(r#"{"spec":{"paused":false}}'"#),
        "{}",
        g.unpause_command
    );
}
