//! The verdict with the nodes' own firewalls read: a network verdict carries the place of its
//! failing paths (evidence) and, when a node's rule counted them, fixing that rule first (next
//! step); other verdicts and probes without the reads stay as they were.

use super::tests::*;
use super::*;
use crate::probe::firewall::{Firewall, FirewallRead, ReadOutcome};
use crate::probe::output::{ProbeOutput, TcpOutcome, TlsOutcome};

const EMPTY: &str = "table inet filter { # handle 1\n\tchain input { # handle 1\n\t\ttype filter hook input priority filter; policy accept;\n\t}\n}\n";

/// cp2's input drops cp1 and cp3 on 2379/2380, with a counter that read `before`, then `after`.
fn cp2_rule(packets: u64) -> String {
    format!("table inet filter {{ # handle 1\n\tchain input {{ # handle 1\n\t\ttype filter hook input priority filter; policy accept;\n\t\tip saddr {{ 198.18.0.11, 198.18.0.13 }} tcp dport {{ 2379, 2380 }} counter packets {packets} bytes 0 drop # handle 7\n\t}}\n}}\n")
}

fn read(text: &str) -> FirewallRead {
    FirewallRead {
        tool: "nft".into(),
        outcome: ReadOutcome::Ok,
        text: Some(text.into()),
        ..Default::default()
    }
}

fn fw(before: &str, after: &str) -> Firewall {
    Firewall {
        before: vec![read(before)],
        after: vec![read(after)],
    }
}

/// cp1 and cp3 cannot reach cp2 on either port; each node's firewall as given.
fn blocked_to_cp2(firewalls: [Firewall; 3]) -> Vec<ProbeOutput> {
    let mut probes = healthy3();
    for from in [0, 2] {
        for port in [2379, 2380] {
            set(
                &mut probes,
                from,
                1,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
        }
    }
    for (p, f) in probes.iter_mut().zip(firewalls) {
        p.firewall = f;
    }
    probes
}

#[test]
fn a_rule_inside_node_b_leads_the_network_verdict_and_its_next_steps() {
    let d = run(blocked_to_cp2([
        fw(EMPTY, EMPTY),
        fw(&cp2_rule(10), &cp2_rule(22)),
        fw(EMPTY, EMPTY),
    ]));
    assert!(d.verdict.code.is_network(), "{:#?}", d.verdict);
    let ev = d.verdict.evidence.join("\n");
    assert!(
        ev.contains(
            "node cp2's own firewall drops it, inside the guest: nft inet filter input handle 7"
        ) && ev.contains("+12 packets during the checks; 4 of the 4 failing paths"),
        "{ev}"
    );
    assert!(!ev.contains("outside the guests"), "{ev}");
    assert!(
        d.verdict.next_steps[0].starts_with("Node cp2's own firewall counted the dropped packets"),
        "{:?}",
        d.verdict.next_steps
    );
    let loc = d.location.expect("read");
    assert!(loc
        .paths
        .iter()
        .all(|p| p.place == crate::analyse::location::Place::InsideGuest));
}

#[test]
fn nothing_counted_on_any_node_is_outside_the_guests() {
    let d = run(blocked_to_cp2([
        fw(EMPTY, EMPTY),
        fw(&cp2_rule(10), &cp2_rule(10)),
        fw(EMPTY, EMPTY),
    ]));
    let ev = d.verdict.evidence.join("\n");
    assert!(
        ev.contains("no firewall rule inside any node counted these packets: the drop is outside the guests"),
        "{ev}"
    );
    assert!(!d.verdict.next_steps[0].contains("own firewall"));
}

#[test]
fn without_the_reads_the_verdict_is_as_before() {
    let with = run(blocked_to_cp2([
        fw(EMPTY, EMPTY),
        fw(EMPTY, EMPTY),
        fw(EMPTY, EMPTY),
    ]));
    let without = run(blocked_to_cp2([
        Firewall::default(),
        Firewall::default(),
        Firewall::default(),
    ]));
    assert_eq!(without.location, None);
    assert_eq!(with.verdict.code, without.verdict.code);
    // The reads add their line and nothing else.
    let mut added = with.verdict.evidence.clone();
    added.retain(|l| !without.verdict.evidence.contains(l));
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(with.verdict.next_steps, without.verdict.next_steps);
    // A healthy cluster with the reads: no line, no path.
    let mut healthy = healthy3();
    for p in &mut healthy {
        p.firewall = fw(EMPTY, EMPTY);
    }
    let d = run(healthy);
    assert_eq!(d.verdict.code, VerdictCode::Healthy);
    assert!(d.location.is_some_and(|l| l.paths.is_empty()));
    assert!(!d.verdict.evidence.join("\n").contains("guest"));
}
