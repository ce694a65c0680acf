//! What the node rules read of etcd on each node: whether it runs, its own paths, a fatal
//! reason of its own.

use super::Ctx;
use crate::analyse::matrix::{Cell, CellState};
use crate::probe::etcdlog::LogKind;
use crate::probe::output::{Container, RuntimeQuery};
use crate::probe::NodeReport;

/// Whether etcd runs on a node: from crictl when it answered, else from whether the node's own
/// 2379 answers. `None` when neither tells.
pub(super) fn etcd_running(ctx: &Ctx, node: &NodeReport) -> Option<bool> {
    let probe = node.probe()?;
    if probe.etcd.query == RuntimeQuery::Ok {
        return Some(probe.etcd.containers.iter().any(Container::is_running));
    }
    match own_cell(ctx, &node.name, 2379).map(|c| c.state) {
        Some(CellState::Refused) => Some(false),
        Some(CellState::Ok | CellState::TlsRejected | CellState::TlsStalled) => Some(true),
        _ => None,
    }
}

pub(super) fn own_cell<'a>(ctx: &'a Ctx, node: &str, port: u16) -> Option<&'a Cell> {
    ctx.matrices
        .iter()
        .find(|m| m.port == port)?
        .cell(node, node)
        .filter(|c| c.state.is_known())
}

/// The member exited for a reason of its own in the window: a fatal or panic line that does not
/// say the peers could not be reached (etcdlog's `Fatal`, not `FatalUnreachable`).
pub(super) fn fatal_reason(ctx: &Ctx, node: &str) -> bool {
    ctx.logs
        .get(node)
        .is_some_and(|s| s.finding(LogKind::Fatal).is_some())
}

/// Whether the node's own paths work: every path it dialled to another member connected, and
/// every path another member dialled to it connected or was refused (refused is what a member
/// whose etcd is down answers). A node that dropped or timed-out paths, in or out, is one the
/// network may have cut off: its restarts are then kubelet's answer to the partition.
pub(super) fn own_paths_work(ctx: &Ctx, node: &str) -> bool {
    ctx.matrices.iter().flat_map(|m| m.peer_cells()).all(|c| {
        if c.from == node {
            c.state.is_ok()
        } else if c.to == node {
            c.state.is_ok() || c.state == CellState::Refused
        } else {
            true
        }
    })
}

/// A stopped or restarting member is its own problem only for a fatal reason of its own, or
/// when the network around it works; else it is evidence for the network verdict.
pub(super) fn own_problem(ctx: &Ctx, node: &str) -> bool {
    fatal_reason(ctx, node) || own_paths_work(ctx, node)
}
