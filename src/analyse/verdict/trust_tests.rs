//! What one node's word may not decide about the others (issue 28): its clock is not "now" for
//! the Supervisor's conditions.

use super::tests::*;
use super::*;

/// 2025-12-02T08:00:00Z, epoch ms: the honest nodes' clocks (`healthy_probe`).
const CLOCK: i64 = 1_764_662_400_000;

/// Facts whose cp1 Machine carries an `EtcdMemberHealthy False` condition from 07:56:00.
fn facts_with_condition() -> ClusterFacts {
    let mut facts = facts(3);
    let mut c = crate::testing::condition(
        "EtcdMemberHealthy",
        "False",
        "EtcdMemberUnhealthy",
        "etcdserver: no leader",
    );
    c.last_transition_time = Some("2025-12-02T07:56:00Z".into());
    facts.nodes[0].machine.as_mut().unwrap().etcd_conditions = vec![c];
    facts
}

fn condition_line(d: &Diagnosis) -> String {
    d.verdict
        .evidence
        .iter()
        .find(|l| l.contains("Machine condition EtcdMemberHealthy"))
        .unwrap_or_else(|| panic!("no condition line: {:#?}", d.verdict))
        .clone()
}

/// One node whose clock reads ten years ahead (or behind, or any i64) does not make the
/// Supervisor's condition ten years old: without the time of the read, "now" is the median of
/// the nodes' clocks, which one node cannot move past the others'.
#[test]
fn one_nodes_clock_is_not_now_for_the_conditions() {
    for lie in [CLOCK + 10 * 365 * 86_400_000, i64::MAX, 0, i64::MIN] {
        let mut probes = healthy3();
        probes[2].clock_ms = Some(lie);
        let d = diagnose(&facts_with_condition(), &cluster(probes), DEFAULT_SINCE);
        let line = condition_line(&d);
        assert!(line.contains(" (4m ago)"), "clock {lie}: {line}");
    }
}

/// With the time the plugin read the Supervisor, the ages are against it, whatever every
/// node's clock says (all three off by a year here).
#[test]
fn conditions_age_against_the_time_of_the_read() {
    let mut probes = healthy3();
    for p in &mut probes {
        p.clock_ms = Some(CLOCK + 365 * 86_400_000);
    }
    let read_at = humantime::parse_rfc3339("2025-12-02T08:00:00Z").unwrap();
    let d = diagnose_at(
        &facts_with_condition(),
        &cluster(probes.clone()),
        DEFAULT_SINCE,
        Some(read_at),
    );
    assert!(condition_line(&d).contains(" (4m ago)"), "{:#?}", d.verdict);
    // Without it, the nodes' (agreeing, wrong) clocks are all there is.
    let d = diagnose(&facts_with_condition(), &cluster(probes), DEFAULT_SINCE);
    assert!(
        condition_line(&d).contains(" (365d ago)"),
        "{:#?}",
        d.verdict
    );
}
