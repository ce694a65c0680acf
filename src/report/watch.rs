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
pub fn why_changed(before: &DiagnoseReport, after: &DiagnoseReport) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::v1alpha2::{CellState, VerdictCode};

    fn blocked() -> DiagnoseReport {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reports/peers-dropped.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

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
