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
    // One line per reason, not per node: a refusal (Pod Security, RBAC, an image pull) is the
    // same for every node of the route, and said once it reads as one cause with one remedy.
    let mut reasons: Vec<(&crate::probe::ReachError, Vec<&str>)> = Vec::new();
    for n in &failed {
        let e = n.outcome.as_ref().expect_err("filtered on errors");
        match reasons
            .iter_mut()
            .find(|(r, _)| r.kind == e.kind && r.message == e.message)
        {
            Some((_, nodes)) => nodes.push(&n.name),
            None => reasons.push((e, vec![&n.name])),
        }
    }
    let mut evidence: Vec<String> = reasons
        .iter()
        .map(|(e, nodes)| match nodes.as_slice() {
            [one] => format!("{one}: {}: {}", e.kind.phrase(), e.message),
            all if all.len() == ctx.nodes.len() => {
                format!(
                    "all {} nodes: {}: {}",
                    all.len(),
                    e.kind.phrase(),
                    e.message
                )
            }
            some => format!(
                "{} nodes ({}): {}: {}",
                some.len(),
                some.join(", "),
                e.kind.phrase(),
                e.message
            ),
        })
        .collect();
    let shared = reasons.len() == 1 && failed.len() > 1;
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
        format!(
            "{} of {} control-plane nodes could not be probed: {}",
            names.len(),
            ctx.nodes.len(),
            names.join(", ")
        ),
        names,
        evidence,
        vec![
            if shared {
                format!(
                    "All {} nodes failed for the one reason above: do what it says after its ';'",
                    failed.len()
                )
            } else {
                "Check the reason per node above; a node that nothing reaches may be powered off, hung, or cut off entirely".into()
            },
            "Try another route (--via jumpbox or --via ssh), or the VM's console in vSphere".into(),
        ],
    )
}
