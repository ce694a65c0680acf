//! The comparison as text: the pairs that broke, said once per pair; what is alike on one line;
//! names from a bundle made visible.

use super::*;
use crate::report::compare::Judged;
use crate::report::DiagnoseReport;

const OFF: Paint = Paint { on: false };

use crate::testing::peers_dropped as blocked;

fn healthy() -> DiagnoseReport {
    crate::testing::healed(blocked())
}

fn compare(before: &DiagnoseReport, after: &DiagnoseReport) -> Comparison {
    let judged = |r, bundle: &str, created: &str| Judged {
        bundle: bundle.into(),
        created: created.into(),
        plugin_version: "0.3.0".into(),
        report: r,
    };
    Comparison::of(
        &judged(before, "good.tar.gz", "2026-12-07T03:40:00.123Z"),
        &judged(after, "new.tar.gz", "2026-12-07T03:50:22Z"),
    )
}

#[test]
fn a_cut_reads_as_the_pairs_that_broke_each_once() {
    let new = blocked();
    let out = compare(&healthy(), &new).table(OFF);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "COMPARED  ns-prod/tkc-prod", "{out}");
    assert!(
        lines[1].contains("good.tar.gz (2026-12-07T03:40:00Z"),
        "{out}"
    );
    assert!(lines[2].contains("10m apart"), "{out}");
    assert!(
        lines[3].starts_with(&format!("VERDICT   Healthy → {}", new.verdict.code)),
        "{out}"
    );
    // Every failing pair on its own row, both ways said once: `a ↔ b`.
    let names: Vec<&str> = new.nodes.iter().map(|n| n.name.as_str()).collect();
    let pairs = out.lines().filter(|l| l.contains(" ↔ ")).count();
    let failing_ports = new
        .matrices
        .iter()
        .filter(|m| m.peer_cells().any(|c| !c.state.is_ok()))
        .count();
    assert_eq!(pairs, 3 * failing_ports, "{out}");
    assert!(
        out.contains(&format!("{} ↔ {}", names[0], names[1])),
        "{out}"
    );
    let n = new
        .matrices
        .iter()
        .flat_map(|m| m.peer_cells())
        .filter(|c| !c.state.is_ok())
        .count();
    assert!(
        out.contains(&format!("PATHS THAT BROKE ({n} paths, {pairs} pairs)")),
        "{out}"
    );
    assert!(!out.contains("RECOVERED"), "{out}");
    // What is alike, once.
    assert_eq!(out.matches("Alike:").count(), 1, "{out}");
    assert!(out.contains("etcd members"), "{out}");
    assert!(!out.contains("paths between the nodes"), "{out}");
    // No internal names.
    assert!(!out.contains("Broke"), "{out}");
}

#[test]
fn a_hostile_name_from_a_bundle_is_shown_not_acted_on() {
    let mut good = healthy();
    let mut new = blocked();
    let name = "cp\u{1b}]0;pwned\u{7}";
    for r in [&mut good, &mut new] {
        let old = r.nodes[0].name.clone();
        r.nodes[0].name = name.into();
        for m in &mut r.matrices {
            for n in &mut m.nodes {
                if *n == old {
                    *n = name.into();
                }
            }
            for c in &mut m.cells {
                if c.from == old {
                    c.from = name.into();
                }
                if c.to == old {
                    c.to = name.into();
                }
            }
        }
    }
    let out = compare(&good, &new).table(OFF);
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(out.contains("cp\\x1b]0;pwned\\x07"), "{out}");
}

#[test]
fn the_sections_are_the_hook_for_other_formats() {
    let c = compare(&healthy(), &blocked());
    let s = sections(&c);
    assert!(s[0].title.starts_with("PATHS THAT BROKE"), "{s:?}");
    assert_eq!(s[0].id, "paths-broke");
    assert!(
        matches!(&s[0].blocks[..], [Block::Table { header, .. }] if header == &["PAIR", "PORT", "BEFORE", "AFTER"]),
        "{s:?}"
    );
    // Nothing changed: no section, everything alike.
    let same = compare(&blocked(), &blocked());
    assert!(sections(&same).is_empty());
    let out = same.table(OFF);
    assert!(out.contains("Alike: paths between the nodes"), "{out}");
    // The leader no bundle names is not "alike".
    assert!(!out.contains("leader"), "{out}");
}

#[test]
fn the_leader_is_said_in_words() {
    use crate::report::compare::{ClusterLeader, LeaderChange};
    let mut c = compare(&healthy(), &healthy());
    let leader = |seen, names: &[&str]| ClusterLeader {
        seen,
        names: names.iter().map(|n| n.to_string()).collect(),
    };
    c.leader = LeaderChange {
        before: leader(LeaderSeen::One, &["cp1"]),
        after: leader(LeaderSeen::Split, &["cp1"]),
        change: LeaderMove::Lost,
    };
    let out = c.table(OFF);
    assert!(
        out.contains("LEADER\n  lost: cp1 → cp1 for some nodes, none for the others"),
        "{out}"
    );
    c.leader.after = leader(LeaderSeen::None, &[]);
    assert!(c.table(OFF).contains("lost: cp1 → no leader"));
    c.leader.after = leader(LeaderSeen::Split, &["cp1", "cp2"]);
    c.leader.change = LeaderMove::Changed;
    assert!(c
        .table(OFF)
        .contains("changed: cp1 → split between cp1, cp2"));
}
