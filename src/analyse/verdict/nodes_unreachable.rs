//! Rule 4, NodesUnreachable: control-plane nodes that could not be probed.

use super::evidence::{describe, supervisor_reach_line};
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::probe::NodeReport;

pub(super) fn nodes_unreachable(ctx: &Ctx) -> Option<Verdict> {
    let failed: Vec<&NodeReport> = ctx
        .nodes
        .iter()
        .copied()
        .filter(|n| n.outcome.is_err())
        .collect();
    if failed.is_empty() {
        return None;
    }
    let names: Vec<String> = failed.iter().map(|n| n.name.clone()).collect();
    let mut evidence: Vec<String> = failed
        .iter()
        .map(|n| {
            let e = n.outcome.as_ref().expect_err("filtered on errors");
            format!("{}: {}: {}", n.name, e.kind, e.message)
        })
        .collect();
    // What the Supervisor saw of them tells "nothing reaches the VM" from "the probe failed".
    for n in &failed {
        if let Some(line) = supervisor_reach_line(n) {
            evidence.push(line);
        }
    }
    // What the probed nodes saw of the unprobed ones tells "down" from "cut off".
    for m in &ctx.matrices {
        for c in m.peer_cells().filter(|c| names.contains(&c.to)) {
            evidence.push(format!("{} → {}:{}: {}", c.from, c.to, c.port, describe(c)));
        }
    }
    verdict(
        VerdictCode::NodesUnreachable,
        format!("{} of {} control-plane nodes could not be probed: {}", names.len(), ctx.nodes.len(), names.join(", ")),
        names,
        evidence,
        vec![
            "Check the reason per node above; a node that nothing reaches may be powered off, hung, or cut off entirely".into(),
            "Try another route (--via jumpbox or --via ssh), or the VM's console in vSphere".into(),
        ],
    )
}
