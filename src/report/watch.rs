//! `--watch`: what changed between two diagnoses of one cluster, in one line.

use super::v1alpha2::Matrix;
use super::DiagnoseReport;

/// Whether `node` reaches every other node on every port it was seen dialling (None: it was
/// not probed, so nothing is known).
fn reaches_peers(report: &DiagnoseReport, node: &str) -> Option<bool> {
    let probed = report.nodes.iter().any(|n| n.name == node && n.reached);
    if !probed {
        return None;
    }
    let row_ok = |m: &Matrix| {
        let cells = m.index();
        m.nodes
            .iter()
            .filter(|to| to.as_str() != node)
            .filter_map(|to| cells.cell(node, to))
            .filter(|c| c.state.is_known())
            .all(|c| c.state.is_ok())
    };
    Some(report.matrices.iter().all(row_ok))
}

/// Why the verdict moved from `before` to `after`, from the nodes' point of view: "X reaches its
/// peers again", "X no longer reaches its peers", "X could not be probed"; else the new
/// verdict's own summary.
pub(crate) fn why_changed(before: &DiagnoseReport, after: &DiagnoseReport) -> String {
    let mut said = Vec::new();
    for n in &after.nodes {
        let then = reaches_peers(before, &n.name);
        let now = reaches_peers(after, &n.name);
        match (then, now) {
            (Some(false), Some(true)) => said.push(format!("{} reaches its peers again", n.name)),
            (Some(true), Some(false)) => {
                said.push(format!("{} no longer reaches its peers", n.name))
            }
            (Some(_), None) => said.push(format!("{} could not be probed", n.name)),
            (None, Some(_)) => said.push(format!("{} is probed again", n.name)),
            _ => {}
        }
    }
    if said.is_empty() {
        after.verdict.summary.clone()
    } else {
        said.join("; ")
    }
}

/// The pairs of nodes that failed at `before` (some path between them, either way, any port)
/// and were seen working both ways on every port at `after`: "cp1↔cp2 recovered (failing since
/// 2026-12-01T10:00:00Z)", the onset from `before`'s timeline when it has one.
pub(crate) fn recovered_pairs(before: &DiagnoseReport, after: &DiagnoseReport) -> Vec<String> {
    use std::collections::BTreeSet;
    let pair = |a: &str, b: &str| {
        if a <= b {
            (a.to_string(), b.to_string())
        } else {
            (b.to_string(), a.to_string())
        }
    };
    let failed: BTreeSet<(String, String)> = before
        .matrices
        .iter()
        .flat_map(|m| m.cells.iter())
        .filter(|c| c.from != c.to && c.state.is_known() && !c.state.is_ok())
        .map(|c| pair(&c.from, &c.to))
        .collect();
    let mut out = Vec::new();
    for (a, b) in failed {
        let cells: Vec<_> = after
            .matrices
            .iter()
            .flat_map(|m| m.cells.iter())
            .filter(|c| pair(&c.from, &c.to) == (a.clone(), b.clone()) && c.from != c.to)
            .collect();
        let works = !cells.is_empty()
            && cells.iter().all(|c| c.state.is_known() && c.state.is_ok())
            && cells.iter().any(|c| c.from == a)
            && cells.iter().any(|c| c.from == b);
        if !works {
            continue;
        }
        let since = before
            .timeline
            .iter()
            .flat_map(|t| t.pairs.iter())
            .filter(|p| pair(&p.from, &p.to) == (a.clone(), b.clone()))
            .filter_map(|p| p.onset.as_deref())
            .min()
            .map(|t| match t.split_once('.') {
                Some((head, _)) => format!(" (failing since {head}Z)"),
                None => format!(" (failing since {t})"),
            })
            .unwrap_or_default();
        out.push(format!("{a}↔{b} recovered{since}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::v1alpha2::{CellState, VerdictCode};

    use crate::testing::peers_dropped as blocked;

    /// `node`'s paths to its peers (both ports) opened.
    fn heal(r: &mut DiagnoseReport, node: &str) {
        for m in &mut r.matrices {
            for c in m.cells.iter_mut().filter(|c| c.from == node) {
                c.state = CellState::Ok;
            }
        }
    }

    #[test]
    fn names_the_node_that_reaches_its_peers_again() {
        let before = blocked();
        let node = before.nodes[1].name.clone();
        let mut after = before.clone();
        heal(&mut after, &node);
        after.verdict.code = VerdictCode::EtcdPeerNetworkPartial;
        assert_eq!(
            why_changed(&before, &after),
            format!("{node} reaches its peers again")
        );
        // And the way back.
        assert_eq!(
            why_changed(&after, &before),
            format!("{node} no longer reaches its peers")
        );
    }

    #[test]
    fn a_node_lost_or_nothing_telling_falls_back_to_the_summary() {
        let before = blocked();
        let mut after = before.clone();
        after.nodes[0].reached = false;
        assert_eq!(
            why_changed(&before, &after),
            format!("{} could not be probed", before.nodes[0].name)
        );
        let mut same = before.clone();
        same.verdict.summary = "something else".into();
        assert_eq!(why_changed(&before, &same), "something else");
    }
}

#[cfg(test)]
mod recovered_tests {
    use super::*;
    use crate::analyse::timeline::tests::failing_pair;
    use crate::report::v1alpha2::{CellState, Timeline};

    use crate::testing::peers_dropped as blocked;

    /// Every path between `a` and `b`, both ways, both ports, opened.
    fn open(r: &mut DiagnoseReport, a: &str, b: &str) {
        for m in &mut r.matrices {
            for c in m.cells.iter_mut() {
                if (c.from == a && c.to == b) || (c.from == b && c.to == a) {
                    c.state = CellState::Ok;
                }
            }
        }
    }

    #[test]
    fn a_pair_recovers_only_when_both_ways_work_on_every_port() {
        let mut before = blocked();
        let names: Vec<String> = before.nodes.iter().map(|n| n.name.clone()).collect();
        let (a, b) = (names[0].as_str(), names[1].as_str());
        before.timeline = Some(Timeline {
            pairs: vec![failing_pair(b, a, Some("2026-12-01T10:00:00.250000Z"))],
            ..Default::default()
        });
        assert!(recovered_pairs(&before, &before).is_empty());
        // One way only: not yet.
        let mut after = before.clone();
        for m in &mut after.matrices {
            for c in m.cells.iter_mut().filter(|c| c.from == a && c.to == b) {
                c.state = CellState::Ok;
            }
        }
        assert!(recovered_pairs(&before, &after).is_empty());
        let mut after = before.clone();
        open(&mut after, a, b);
        let (x, y) = if a <= b { (a, b) } else { (b, a) };
        assert_eq!(
            recovered_pairs(&before, &after),
            [format!(
                "{x}↔{y} recovered (failing since 2026-12-01T10:00:00Z)"
            )]
        );
        // Without a timeline, no onset to quote.
        before.timeline = None;
        assert_eq!(
            recovered_pairs(&before, &after),
            [format!("{x}↔{y} recovered")]
        );
        // A path not checked at the second round is not a recovery.
        for m in &mut after.matrices {
            for c in m.cells.iter_mut().filter(|c| c.from == b && c.to == a) {
                c.state = CellState::NotProbed;
            }
        }
        assert!(recovered_pairs(&before, &after).is_empty());
    }
}
