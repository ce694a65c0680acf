//! A reading cut to the live caps ([`rebound`]) and to the bundle's per-entry cap ([`fit`]):
//! 20,000 pathless policies, as a doctored bundle has them, are judged in bounded time with the
//! cut said; a reading larger than an entry may be is written within it, the cut said.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::nsxmanager::model::tests::{supervisor_vms, world};
use crate::nsxmanager::raw::PolicyRead;
use crate::testing::cpu_time;

/// Pathless policy `n`: no `path`, so the reader cannot ask for its rules, and the model can
/// only tell it from another by the whole object.
fn pathless(n: usize) -> Value {
    json!({"display_name": format!("pathless-{n}"), "category": "Application", "sequence_number": 100 + n})
}

/// The world of `infra-drop-2380` with `n` pathless policies listed and as many read with a
/// rule each (a bundle's `nsx-manager.json` may hold anything).
pub(crate) fn flooded(n: usize) -> NsxRead {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.policies.results.extend((0..n).map(pathless));
    read.rules.extend((0..n).map(|i| PolicyRead {
        policy: pathless(i),
        rules: Listed {
            results: vec![json!({"action": "DROP", "sequence_number": 1, "source_groups": ["ANY"], "destination_groups": ["ANY"], "services": ["ANY"]})],
            result_count: Some(1),
            incomplete: None,
        },
    }));
    read
}

fn limits() -> Limits {
    Limits::new(Duration::from_secs(60))
}

#[test]
fn twenty_thousand_pathless_policies_are_bounded_and_the_cut_said() {
    let mut read = flooded(20_000);
    let own = world("infra-drop-2380.json", "vms.json")
        .policies
        .results
        .len();
    rebound(&mut read, &limits());
    // T1: one root, so one list of at most the object cap; one rules list per policy.
    assert_eq!(read.policies.results.len(), limits().max_objects);
    assert!(read.rules.len() <= limits().max_objects);
    assert!(
        read.policies.results.len() > own,
        "the world's own kept first"
    );
    let cut = read
        .policies
        .incomplete
        .as_ref()
        .expect("the cut is the list's gap");
    assert!(cut.why.contains("more than 5000"), "{cut:?}");
    assert!(read
        .gaps
        .iter()
        .any(|g| g.path == "nsx-manager.json: security-policies"));

    // Put together for the evaluation in bounded time (CPU time: what else runs on the cores
    // does not count). Pairwise, 5,000 pathless listed against 5,000 read took ~15 s in a
    // debug build; by a set, well under one. (The evaluation itself, through a whole bundle:
    // `bundle::bounds_tests`.)
    let started = cpu_time();
    let input = crate::nsxmanager::identify::input(&read, &supervisor_vms(false));
    let took = cpu_time() - started;
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The cut is said with the reading's gaps, and the list is not whole.
    assert!(
        input
            .gaps
            .iter()
            .any(|g| g.contains("nsx-manager.json: security-policies")
                && g.contains("more than 5000")),
        "{:#?}",
        input.gaps
    );
    assert!(input.policies_incomplete.is_some());
}

/// Each pathless policy listed and read is one policy, told by the whole object in a set,
/// however many there are: 20,000 unbounded (what the model does with what it is given) stays
/// linear.
#[test]
fn pathless_policies_are_matched_by_a_set() {
    let read = flooded(20_000);
    let started = cpu_time();
    let input = crate::nsxmanager::identify::input(&read, &supervisor_vms(false));
    let took = cpu_time() - started;
    let pathless: Vec<_> = input
        .policies
        .iter()
        .filter(|p| p.policy.path.is_err())
        .collect();
    // Each read one once (with its rule), none again as "listed, rules not read".
    assert_eq!(pathless.len(), 20_000);
    assert!(pathless.iter().all(|p| p.rules.len() == 1));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_reading_within_the_caps_is_left_as_it_is() {
    let read = world("infra-drop-2380.json", "vms.json");
    let mut again = read.clone();
    rebound(&mut again, &limits());
    assert_eq!(again, read);
    let bytes = fit(&read, 32 * 1024 * 1024).unwrap();
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back, read);
}

/// A reading larger than the entry cap is written within it, largest parts cut first, the cut
/// said first among the gaps; what is kept reads back.
#[test]
fn a_reading_over_the_entry_cap_is_cut_to_fit_and_said() {
    let read = flooded(4_000);
    let whole = serde_json::to_vec_pretty(&read).unwrap().len();
    let max = whole / 5;
    let bytes = fit(&read, max).unwrap();
    assert!(bytes.len() <= max, "{} > {max}", bytes.len());
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    assert!(
        back.gaps[0].why.starts_with("cut to fit the bundle's"),
        "{:?}",
        back.gaps[0]
    );
    assert!(back.policies.results.len() < read.policies.results.len());
    assert!(back.policies.incomplete.is_some());
    // The VMs (small) are kept whole.
    assert_eq!(back.vms, read.vms);
    // Even a tiny cap gives a reading that says it was cut.
    let bytes = fit(&read, 2048).unwrap();
    assert!(bytes.len() <= 2048);
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    assert!(back.gaps[0].why.starts_with("cut to fit the bundle's"));
}

/// The run's byte budget for NSX Manager's answers: counted while each body is read, for every
/// request of the client (every cluster's reading); past it the answer being read is cut and no
/// further request of the reading is sent. A traceflow's delete (tidying up) still is.
#[tokio::test]
async fn the_runs_byte_budget_holds_every_reading() {
    use crate::nsxmanager::client::tests::{options, serve, session_granted, Canned};
    use crate::nsxmanager::client::{ApiPath, Client, RequestError};
    let (url, seen) = serve(|method, path| match (method, path) {
        (_, "/api/session/create") => session_granted(),
        ("DELETE", _) => Canned::json(200, ""),
        _ => Canned::json(200, &format!(r#"{{"x":"{}"}}"#, "y".repeat(4000))),
    });
    let mut o = options(url);
    o.limits.max_total_bytes = 10_000;
    let client = Client::connect(&o).await.unwrap();
    let path = ApiPath::policy("/infra/services/etcd", &[]).unwrap();
    assert!(client.get(&path).await.is_ok());
    assert!(client.get(&path).await.is_ok());
    // The third answer takes the run past 10,000 bytes: cut while read.
    let e = client.get(&path).await.unwrap_err();
    assert!(matches!(e, RequestError::Budget { limit: 10_000 }), "{e:?}");
    assert!(e.to_string().contains("budget"), "{e}");
    let asked = seen.try_iter().count();
    // Spent: not even sent.
    let e = client.get(&path).await.unwrap_err();
    assert!(matches!(e, RequestError::Budget { .. }), "{e:?}");
    assert_eq!(
        seen.try_iter().count(),
        0,
        "a request past the budget was sent"
    );
    assert_eq!(asked, 4, "the session and three reads");
    // Tidying up is not held to it.
    let tf = ApiPath::policy("/infra/traceflows/t1", &[]).unwrap();
    client.delete(&tf, Duration::from_secs(5)).await.unwrap();
}

/// The world of `infra-drop-2380` with what the merged readers added, each past its live cap (a
/// doctored bundle): an exclusion list of 10,000 group members, twice the groups kept followed
/// with 6,000 VMs each, 1,000 policies' statistics, and 32 associations (more than the most roots
/// keep) of 6,000 groups per VM. Past each cap but not far past it: what is kept, and so every
/// assertion, is the same, in ~1 GB (500 groups and 200 associations took 4.7 GB and 10 to 13
/// CPU-s a test in a debug build).
fn flooded_enforcement() -> NsxRead {
    use crate::nsxmanager::raw::{Association, PolicyStatistics};
    let mut read = world("infra-drop-2380.json", "vms.json");
    let groups: Vec<String> = (0..10_000)
        .map(|i| format!("/infra/domains/default/groups/x{i}"))
        .collect();
    let many = |n: usize, field: &str| Listed {
        results: (0..n).map(|i| json!({ field: format!("o-{i}") })).collect(),
        result_count: Some(n as u64),
        incomplete: None,
    };
    read.enforcement = Some(EnforcementRead {
        settings: Some(json!({"enable_firewall": true, "x": "y".repeat(20_000)})),
        exclude_list: Some(json!({ "members": groups })),
        system_members: true,
        groups: groups
            .iter()
            .take(2 * MAX_EXCLUDE_MEMBERS)
            .map(|g| {
                let m = Members {
                    virtual_machines: Some(many(6_000, "id")),
                    ..Members::default()
                };
                (g.clone(), m)
            })
            .collect(),
        ..EnforcementRead::default()
    });
    read.statistics = Some(StatisticsRead {
        policies: (0..1_000)
            .map(|i| PolicyStatistics {
                path: format!("/infra/domains/default/security-policies/p{i}"),
                before: Some(json!({"results": []})),
                after: Some(json!({"results": []})),
                ..PolicyStatistics::default()
            })
            .collect(),
        gaps: Vec::new(),
    });
    for v in &mut read.vms {
        v.associations = (0..4 * (MAX_VMS_PER_HINT + MAX_PORTS_PER_VM))
            .map(|i| Association {
                root: "/infra".into(),
                by: "intent_path".into(),
                key: format!("/infra/segments/s/ports/p{i}"),
                listed: many(6_000, "target_id"),
            })
            .collect();
    }
    read.vpc_security = Some(VpcSecurity {
        profile: Some(json!({"display_name": "z".repeat(20_000)})),
        strategy: None,
        gaps: Vec::new(),
    });
    read
}

/// A doctored bundle's enforcement, statistics and associations are cut to the live reader's
/// own caps, each cut said, and what was cut reads as "cannot be told", never as "no".
#[test]
fn a_bundles_enforcement_statistics_and_associations_are_bounded_and_said() {
    use crate::nsxmanager::enforce::{excluded, Excluded};
    let mut read = flooded_enforcement();
    rebound(&mut read, &limits());
    let e = read.enforcement.as_ref().unwrap();
    let listed = e.exclude_list.as_ref().unwrap()["members"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(listed, 4 * MAX_EXCLUDE_MEMBERS);
    assert_eq!(e.groups.len(), MAX_EXCLUDE_MEMBERS);
    for m in e.groups.values() {
        let vms = m.virtual_machines.as_ref().unwrap();
        assert_eq!(vms.results.len(), limits().max_objects);
        assert!(vms.incomplete.is_some());
        assert!(m.gaps[0].why.contains("more than 5000"), "{:?}", m.gaps);
    }
    assert!(
        e.settings.as_ref().unwrap()["x"]
            .as_str()
            .unwrap()
            .chars()
            .count()
            <= MAX_STRING_CHARS + 1
    );
    let s = read.statistics.as_ref().unwrap();
    assert_eq!(s.policies.len(), MAX_STATISTICS_POLICIES);
    assert!(s.gaps[0].why.contains("more than 200"), "{:?}", s.gaps);
    let roots = association_roots(&read.layout).len();
    for v in &read.vms {
        assert_eq!(
            v.associations.len(),
            roots * (MAX_VMS_PER_HINT + MAX_PORTS_PER_VM)
        );
        assert!(v.associations.iter().all(
            |a| a.listed.results.len() == limits().max_objects && a.listed.incomplete.is_some()
        ));
    }
    let said = |what: &str| {
        read.gaps
            .iter()
            .any(|g| g.path == format!("nsx-manager.json: {what}"))
    };
    for what in [
        "exclude-list",
        "exclude-list groups",
        "members of an excluded group",
        "statistics",
        "group associations",
        "group associations of a VM",
    ] {
        assert!(said(what), "{what} not said: {:#?}", read.gaps);
    }
    // A VM in none of the groups kept is not "not excluded": the list goes on past them.
    let input = crate::nsxmanager::identify::input(&read, &supervisor_vms(false));
    for vm in &input.vms {
        assert!(
            matches!(excluded(e, vm, &|_| true), Excluded::Unknown(_)),
            "{:?}",
            excluded(e, vm, &|_| true)
        );
    }
    // Within the caps now: a second pass changes nothing.
    let again = read.clone();
    rebound(&mut read, &limits());
    assert_eq!(read.enforcement, again.enforcement);
    assert_eq!(read.statistics, again.statistics);
    assert_eq!(read.vms, again.vms);
}

/// The plugin's own reading with huge enforcement, statistics and associations is written
/// within the entry cap; what was cut is said and reads back as unknown, never as "no".
#[test]
fn the_plugins_own_huge_enforcement_reading_fits_and_says_the_cut() {
    use crate::nsxmanager::enforce::{dfw_state, excluded, DfwState, Excluded};
    let mut read = flooded_enforcement();
    // What a live run may hold (its caps), still far over a small entry cap.
    rebound(&mut read, &limits());
    let whole = serde_json::to_vec_pretty(&read).unwrap().len();
    let max = 4 * 1024 * 1024;
    assert!(whole > 4 * max, "{whole}");
    let bytes = fit(&read, max).unwrap();
    assert!(bytes.len() <= max, "{} > {max}", bytes.len());
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    assert!(back.gaps[0].why.starts_with("cut to fit the bundle's"));
    let back_e = back.enforcement.as_ref().unwrap();
    assert!(
        back_e.groups.len() < MAX_EXCLUDE_MEMBERS || back_e.exclude_list_gap.is_some(),
        "{back_e:?}"
    );
    // Unknown, never a guess, for what was cut.
    let input = crate::nsxmanager::identify::input(&back, &supervisor_vms(false));
    for vm in &input.vms {
        assert!(matches!(
            excluded(back_e, vm, &|_| true),
            Excluded::Unknown(_)
        ));
    }
    assert!(matches!(
        dfw_state(back_e),
        DfwState::Enabled | DfwState::Unknown(_)
    ));
    // A tiny cap: what is kept of the enforcement still tells no VM "not excluded".
    let bytes = fit(&read, 64 * 1024).unwrap();
    assert!(bytes.len() <= 64 * 1024);
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    assert!(back.gaps[0].why.starts_with("cut to fit the bundle's"));
    if let Some(e) = &back.enforcement {
        assert!(matches!(
            excluded(e, &input.vms[0], &|_| true),
            Excluded::Unknown(_)
        ));
    }
    if let Some(s) = &back.statistics {
        assert!(s.policies.len() < MAX_STATISTICS_POLICIES);
        assert!(s.gaps[0].why.contains("kept as"), "{:?}", s.gaps);
    }

    // An exclusion list that is the largest part is cut whole: its gap, so unknown.
    let mut read = world("infra-drop-2380.json", "vms.json");
    let long: Vec<String> = (0..256)
        .map(|i| format!("/infra/domains/default/groups/{i}-{}", "g".repeat(1000)))
        .collect();
    read.enforcement = Some(EnforcementRead {
        settings: Some(json!({"enable_firewall": true})),
        exclude_list: Some(json!({ "members": long })),
        system_members: true,
        ..EnforcementRead::default()
    });
    let whole = serde_json::to_vec_pretty(&read).unwrap().len();
    let bytes = fit(&read, whole / 2).unwrap();
    let back: NsxRead = serde_json::from_slice(&bytes).unwrap();
    let e = back.enforcement.as_ref().unwrap();
    assert!(e.exclude_list.is_none(), "{e:?}");
    let g = e.exclude_list_gap.as_ref().unwrap();
    assert!(g.why.contains("kept as 0"), "{g:?}");
    assert!(e.settings_gap.is_some() && e.settings.is_none());
    assert!(matches!(dfw_state(e), DfwState::Unknown(_)));
    let input = crate::nsxmanager::identify::input(&back, &supervisor_vms(false));
    for vm in &input.vms {
        assert!(
            matches!(excluded(e, vm, &|_| true), Excluded::Unknown(w) if w.contains("could not be read"))
        );
    }
    // The policies (small) kept whole.
    assert_eq!(back.policies, read.policies);
}
