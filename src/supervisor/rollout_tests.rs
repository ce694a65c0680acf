//! The rollout phases and counts of [`ClusterFacts`], from the fixture sets as the Supervisor
//! serves them (the objects read as the evidence bundle stores them: `Inventory::from_objects`,
//! then the same pure `Inventory::facts` a live run uses).

use std::time::{Duration, SystemTime};

use super::*;

/// Cluster tkc-prod of `set` (a v1beta1/v1alpha3 set), as the plugin reads it.
fn facts(set: &str) -> ClusterFacts {
    let all = crate::testing::fixture_objects(set);
    Inventory::from_objects("ns-prod", crate::testing::supervisor_apis(), &all)
        .facts("sv", "tkc-prod")
        .unwrap()
}

fn phases(f: &ClusterFacts) -> Vec<(&str, &RolloutPhase)> {
    f.rollout_nodes()
        .map(|(n, r)| (n.name.as_str(), r))
        .collect()
}

#[test]
fn a_cluster_at_rest_has_no_rollout() {
    for set in [
        "healthy-v1alpha3",
        "quorum-lost",
        "vm-powered-off",
        "missing-machine",
    ] {
        let f = facts(set);
        assert!(phases(&f).is_empty(), "{set}");
        assert_eq!(f.kcp_rollout(), None, "{set}");
        assert!(!f.rollout_in_progress(), "{set}");
        assert_eq!(f.machines_staying(), f.machines_present(), "{set}");
        assert_eq!(f.machines_in_service(), f.machines_present(), "{set}");
    }
}

/// The 4th Machine is provisioning, its VM created and off; KCP has 4 for 3.
#[test]
fn scale_up() {
    let f = facts("rollout-scale-up");
    assert_eq!(
        phases(&f),
        [(
            "tkc-prod-7xk2p-k8d5n",
            &RolloutPhase::Provisioning {
                since: Some("2025-06-03T08:30:00Z".into()),
                machine_phase: Some("Provisioning".into()),
                waiting_for: ProvisioningStep::PowerOn,
            }
        )]
    );
    assert_eq!(
        (
            f.machines_present(),
            f.machines_provisioning(),
            f.machines_deleting(),
            f.machines_staying(),
            f.machines_in_service()
        ),
        (4, 1, 0, 4, 3)
    );
    assert_eq!(
        f.kcp_rollout().as_deref(),
        Some("KubeadmControlPlane tkc-prod-7xk2p has 4 replicas for 3 desired")
    );
    assert!(f.rollout_in_progress());
    let joining = facts("rollout-scale-up-joining");
    let (name, r) = phases(&joining)[0];
    assert_eq!(name, "tkc-prod-7xk2p-k8d5n");
    assert!(matches!(
        r,
        RolloutPhase::Provisioning {
            waiting_for: ProvisioningStep::NodeJoin,
            ..
        }
    ));
    assert_eq!(r.machine_phase(), Some("Provisioned"));
}

/// The oldest Machine is being deleted (still listed, finalizer held); it no longer counts
/// against the KCP's 3.
#[test]
fn scale_down() {
    let f = facts("rollout-scale-down");
    assert_eq!(
        phases(&f),
        [(
            "tkc-prod-7xk2p-4rz8m",
            &RolloutPhase::Deleting {
                since: Some("2025-06-03T09:02:00Z".into()),
                machine_phase: Some("Deleting".into()),
            }
        )]
    );
    assert_eq!(
        (
            f.machines_present(),
            f.machines_deleting(),
            f.machines_staying(),
            f.machines_in_service()
        ),
        (4, 1, 3, 3)
    );
    assert!(f.rollout_in_progress());
    assert!(f
        .rollout_of("tkc-prod-7xk2p-4rz8m")
        .is_some_and(RolloutPhase::is_deleting));
    assert_eq!(f.rollout_of("tkc-prod-7xk2p-k8d5n"), None);
    assert_eq!(f.rollout_of("no-such-node"), None);
}

/// vm-no-ip's third Machine (Provisioning, no nodeRef, VM on without an address) reads as a
/// Machine on its way, waiting for its address: its age tells a stuck one.
#[test]
fn a_provisioning_machine_without_an_address() {
    let f = facts("vm-no-ip");
    let (name, r) = phases(&f)[0];
    assert_eq!(name, "tkc-prod-7xk2p-bx2lk");
    assert!(matches!(
        r,
        RolloutPhase::Provisioning {
            waiting_for: ProvisioningStep::IpAddress,
            ..
        }
    ));
    assert_eq!(f.kcp_rollout(), None, "3 replicas for 3, all up to date");
}

#[test]
fn ages() {
    let t = humantime::parse_rfc3339("2025-06-03T09:02:00Z").unwrap();
    let later = t + Duration::from_secs(240);
    assert_eq!(seconds_since("2025-06-03T09:02:00Z", later), Some(240));
    assert_eq!(
        seconds_since("2025-06-03T09:02:00.5Z", later),
        Some(239),
        "fractions are allowed"
    );
    assert_eq!(
        seconds_since("2025-06-03T09:06:00Z", t),
        Some(0),
        "ahead of our clock"
    );
    let f = facts("quorum-lost");
    let member = &f.nodes[0].machine.as_ref().unwrap().etcd_conditions[0];
    assert_eq!(member.kind, "EtcdMemberHealthy");
    let at = humantime::parse_rfc3339(member.last_transition_time.as_deref().unwrap()).unwrap();
    assert_eq!(member.age_seconds(at + Duration::from_secs(240)), Some(240));
    assert_eq!(seconds_since("yesterday", SystemTime::now()), None);
    assert_eq!(seconds_since("", SystemTime::now()), None);
}
