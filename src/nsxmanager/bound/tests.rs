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
    let input = crate::nsxmanager::model::input(&read, &supervisor_vms(false));
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
    let input = crate::nsxmanager::model::input(&read, &supervisor_vms(false));
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
