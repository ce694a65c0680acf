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

const PAUSE: &str =
    r#"kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":true}}'"#;
const UNPAUSE: &str =
    r#"kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":false}}'"#;

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
    assert_eq!(g.pause, PAUSE);
    assert_eq!(g.unpause, UNPAUSE);
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
            health_check: Some(cond("HealthCheckSucceeded", "UnhealthyNode")),
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
        a.next_steps[0].contains("kubectl get machinehealthchecks -n ns-prod"),
        "{a:#?}"
    );
    assert!(a.next_steps[0].contains(PAUSE) && a.next_steps[0].ends_with(UNPAUSE));
    // Off a network verdict, only the note.
    let other = g.advice(false, false);
    assert!(other.next_steps.is_empty() && other.notes.len() == 1);
}

#[test]
fn odd_names_are_quoted_for_the_shell() {
    assert_eq!(
        patch_command("a'b", "ns x", true),
        r#"kubectl patch cluster 'a'\''b' -n 'ns x' --type merge -p '{"spec":{"paused":true}}'"#
    );
}
