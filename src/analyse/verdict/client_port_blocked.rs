//! Rule 10, EtcdPeerNetworkPartial when only 2379 fails between the VMs and 2380 works.

use super::evidence::{ends, summarise_cells};
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::analyse::matrix::Cell;

/// Only 2379 fails between the VMs while every 2380 path works: members talk to each other on
/// 2380 alone (rafthttp), so quorum does not depend on 2379 between VMs (each apiserver talks to
/// its own member, kubeadm's `--etcd-servers=https://127.0.0.1:2379`).
pub(super) fn client_port_only(cells: &[&Cell]) -> bool {
    let failing = cells.iter().filter(|c| !c.state.is_ok());
    let mut any = false;
    for c in failing {
        if c.port != 2379 {
            return false;
        }
        any = true;
    }
    any && cells.iter().any(|c| c.port == 2380)
}

pub(super) fn client_port_blocked(ctx: &Ctx) -> Option<Verdict> {
    let cells: Vec<&Cell> = ctx.matrices.iter().flat_map(|m| m.peer_cells()).collect();
    if !client_port_only(&cells) {
        return None;
    }
    let failing: Vec<&Cell> = cells.iter().copied().filter(|c| !c.state.is_ok()).collect();
    let mut evidence = vec![
        "every 2380 path between the control-plane VMs works: the members reach each other, quorum does not depend on 2379 between VMs".to_string(),
    ];
    evidence.extend(summarise_cells(&failing));
    verdict(
        VerdictCode::EtcdPeerNetworkPartial,
        "only 2379 is blocked between the control-plane VMs; 2380 (what the members use between themselves) works, so quorum holds, but etcd's client port should be open between them too".into(),
        ends(&failing),
        evidence,
        vec![
            "Open TCP 2379 between the control-plane VMs in both directions (the support article asks 2379 and 2380 open; etcdctl against a peer and some backup tools use it)".into(),
        ],
    )
}
