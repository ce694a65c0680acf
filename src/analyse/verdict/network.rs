//! The peer-network rules: which paths between the control-plane VMs fail, and how.

use super::evidence::*;
use super::node::own_cell;
use super::*;

// ---- 6. the peer network ---------------------------------------------------------------------

pub(super) fn peer_network(ctx: &Ctx) -> Option<Verdict> {
    let cells: Vec<&Cell> = ctx.matrices.iter().flat_map(|m| m.peer_cells()).collect();
    let failing: Vec<&Cell> = cells.iter().copied().filter(|c| !c.state.is_ok()).collect();
    if failing.is_empty() {
        return None;
    }
    let mut evidence = own_paths_evidence(ctx);
    // Jumpbox route: the Supervisor's view of the peer ports tells "the VMs cannot reach each
    // other" from "nothing reaches the VMs".
    let reach: Vec<&crate::probe::PortReach> = ctx
        .nodes
        .iter()
        .flat_map(|n| n.reach.iter())
        .filter(|r| r.port == 2379 || r.port == 2380)
        .collect();
    if !reach.is_empty() {
        let open = reach
            .iter()
            .filter(|r| r.state == crate::probe::PortState::Open)
            .count();
        let unknown = reach
            .iter()
            .filter(|r| r.state == crate::probe::PortState::Unknown)
            .count();
        // "Every VM answers" only when every port was seen open; Unknown is not open.
        evidence.push(if open == reach.len() {
            "from the Supervisor, every VM answers on 2379 and 2380: the VMs cannot reach each other, yet the Supervisor reaches them".to_string()
        } else if unknown > 0 {
            format!("from the Supervisor, {open} of {} VM ports 2379/2380 answer ({unknown} could not be told)", reach.len())
        } else {
            format!("from the Supervisor, {open} of {} VM ports 2379/2380 answer", reach.len())
        });
    }
    let all = failing.len() == cells.len();
    let kinds = [
        LogKind::IoTimeout,
        LogKind::ConnectionRefused,
        LogKind::PeerInactive,
        LogKind::PeerUnhealthy,
        LogKind::PeerUrlUnreachable,
        LogKind::NoRouteToHost,
        LogKind::TlsHandshakeTimeout,
        LogKind::LostStream,
    ];
    let ips = ctx
        .nodes
        .iter()
        .filter_map(|n| n.ip)
        .map(|ip| ip.to_string())
        .collect::<Vec<_>>()
        .join(", ");

    let (code, summary, nodes, mut next) = if failing.iter().all(|c| c.state == CellState::Refused)
    {
        evidence.extend(failing.iter().map(|c| path_line(c)));
        (
            VerdictCode::EtcdPeerPortRefused,
            format!(
                "etcd runs and answers on every node, yet {} peer connections are refused: a firewall rejects them",
                if all { "all" } else { "some" }
            ),
            ends(&failing),
            vec![
                "A reject rule (TCP reset) on 2379/2380 between the control-plane VMs: check the NSX distributed firewall rules with action Reject applied to these VMs, and any host firewall on the nodes (nft list ruleset / iptables -S)".to_string(),
            ],
        )
    } else if failing.iter().all(|c| c.state == CellState::TlsStalled) {
        evidence.extend(failing.iter().map(|c| path_line(c)));
        (
            VerdictCode::EtcdPeerLargePacketsDropped,
            "TCP connects between the control-plane VMs, but TLS handshakes stall: large packets are dropped (MTU)".to_string(),
            ends(&failing),
            vec![
                "Compare the VMs' interface MTU with the overlay's: NSX Geneve needs a TEP/uplink MTU of at least 1600 (1700 recommended) for a 1500-byte VM MTU".to_string(),
                "Check that ICMP 'fragmentation needed' is not blocked between the VMs (path MTU discovery)".to_string(),
                "From a node: ping -M do -s 1472 <peer IP> (ping may be disabled on these VMs; then curl with a large request)".to_string(),
            ],
        )
    } else if all {
        evidence.extend(summarise_cells(&failing));
        (
            VerdictCode::EtcdPeerNetworkBlocked,
            "every node reaches its own etcd, but no control-plane VM reaches another on 2379/2380".to_string(),
            vec![],
            vec![
                format!("Open TCP 2379 and 2380 between the control-plane VMs ({ips}) in both directions"),
                "NSX: check the distributed firewall rules applied to these VMs and their segment (dropped packets show as i/o timeout in etcd's log)".to_string(),
                "After an NSX upgrade from 4.1.x to 4.2.x: check that the antrea NSGroup still contains the cluster's IP subnets (VMware KB: IP address subnets missing from an antrea NSGroup after an upgrade from 4.1.x to 4.2.x)".to_string(),
            ],
        )
    } else {
        let (summary, nodes, lines) = partial(ctx, &cells, &failing);
        evidence.extend(lines);
        (
            VerdictCode::EtcdPeerNetworkPartial,
            summary,
            nodes,
            vec![
                "Open TCP 2379 and 2380 in both directions on the paths named above (NSX distributed firewall, security groups of the VMs named)".to_string(),
            ],
        )
    };
    // Whether the members know a leader, from their raft lines ("no leader since 08:13:52").
    evidence.extend(leader_evidence(ctx));
    // The two most telling log findings per node, in the order of `kinds`.
    for n in ctx.nodes {
        evidence.extend(log_evidence(ctx, &n.name, &kinds).into_iter().take(2));
    }
    next.push("etcd recovers by itself once the VMs reach each other; then re-run kubectl etcdnet diagnose to confirm".into());
    verdict(code, summary, nodes, evidence, next)
}

/// Explains partial failure: isolated nodes, a single blocked port, one-way paths.
pub(super) fn partial(
    ctx: &Ctx,
    cells: &[&Cell],
    failing: &[&Cell],
) -> (String, Vec<String>, Vec<String>) {
    let names: Vec<&str> = ctx.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut parts = Vec::new();
    let mut nodes = Vec::new();
    let mut lines = Vec::new();

    // A node whose every path, in and out, fails while others work is cut off.
    for n in &names {
        let touching: Vec<&&Cell> = cells
            .iter()
            .filter(|c| c.from == *n || c.to == *n)
            .collect();
        if !touching.is_empty() && touching.iter().all(|c| !c.state.is_ok()) {
            nodes.push(n.to_string());
        }
    }
    if !nodes.is_empty() {
        parts.push(format!(
            "{} cut off from the other control-plane VMs",
            nodes.join(", ")
        ));
        lines.push(format!(
            "every path to and from {} fails; the others reach each other",
            nodes.join(", ")
        ));
    }

    // One port blocked everywhere, the other fine.
    for (port, other) in [(2379u16, 2380u16), (2380, 2379)] {
        let on = |p: u16| cells.iter().filter(move |c| c.port == p);
        if on(port).count() > 0
            && on(port).all(|c| !c.state.is_ok())
            && on(other).all(|c| c.state.is_ok())
        {
            parts.push(format!(
                "port {port} is blocked between all control-plane VMs, {other} works"
            ));
        }
    }

    // One-way: A→B fails while B→A works on the same port.
    for c in failing {
        let back = cells
            .iter()
            .find(|b| b.from == c.to && b.to == c.from && b.port == c.port);
        if back.is_some_and(|b| b.state.is_ok()) {
            lines.push(format!(
                "one-way: {} → {}:{} {}, while {} → {}:{} works",
                c.from,
                c.to,
                c.port,
                describe(c),
                c.to,
                c.from,
                c.port
            ));
            for n in [&c.from, &c.to] {
                if !nodes.contains(n) {
                    nodes.push(n.clone());
                }
            }
            let part = "some paths fail in one direction only".to_string();
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
    }
    lines.extend(summarise_cells(failing));
    if parts.is_empty() {
        parts.push(format!(
            "{} of {} peer paths fail",
            failing.len(),
            cells.len()
        ));
        for n in ends(failing) {
            if !nodes.contains(&n) {
                nodes.push(n);
            }
        }
    }
    (parts.join("; "), nodes, lines)
}

pub(super) fn own_paths_evidence(ctx: &Ctx) -> Vec<String> {
    let own: Vec<String> = ctx
        .nodes
        .iter()
        .filter_map(|n| own_cell(ctx, &n.name, 2379).map(|c| format!("{} {}", n.name, describe(c))))
        .collect();
    if own.is_empty() {
        return vec![];
    }
    vec![format!(
        "own etcd (node → its own IP:2379): {}",
        own.join(", ")
    )]
}
