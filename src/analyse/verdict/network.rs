//! The peer-network rules: which paths between the control-plane VMs fail, and how.

use std::collections::{HashMap, HashSet};

use super::client_port_blocked::client_port_only;
use super::evidence::{
    describe, ends, leader_evidence, log_evidence, newest, path_line, summarise_cells,
};
use super::node::{etcd_running, fatal_reason, own_cell};
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::analyse::matrix::{Cell, CellState};
use crate::probe::etcdlog::LogKind;
use crate::supervisor::NetworkStack;

// ---- 6. the peer network ---------------------------------------------------------------------

pub(super) fn peer_network(ctx: &Ctx) -> Option<Verdict> {
    let cells: Vec<&Cell> = ctx.matrices.iter().flat_map(|m| m.peer_cells()).collect();
    peer_network_over(ctx, &cells)
}

/// The network verdict over these peer cells, `None` when they all work (or only 2379 fails).
fn peer_network_over(ctx: &Ctx, cells: &[&Cell]) -> Option<Verdict> {
    let failing: Vec<&Cell> = cells.iter().copied().filter(|c| !c.state.is_ok()).collect();
    if failing.is_empty() || client_port_only(cells) {
        return None;
    }
    let mut evidence = own_paths_evidence(ctx);
    // The route's view of the peer ports from outside the VMs (the jumpbox's from the
    // Supervisor, the ssh route's from this machine) tells "the VMs cannot reach each other"
    // from "nothing reaches the VMs".
    let reach: Vec<&crate::probe::PortReach> = ctx
        .nodes
        .iter()
        .flat_map(|n| n.reach.iter())
        .filter(|r| r.port == 2379 || r.port == 2380)
        .collect();
    let from = ctx
        .nodes
        .iter()
        .find(|n| !n.reach.is_empty())
        .map(|n| n.vantage())
        .unwrap_or(crate::probe::Vantage::Supervisor);
    let (seen_from, who) = (from.from(), from.who());
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
            format!("{seen_from}, every VM answers on 2379 and 2380: the VMs cannot reach each other, yet {who} reaches them")
        } else if unknown > 0 {
            format!("{seen_from}, {open} of {} VM ports 2379/2380 answer ({unknown} could not be told)", reach.len())
        } else {
            format!("{seen_from}, {open} of {} VM ports 2379/2380 answer", reach.len())
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

    // What can drop or reject packets between the VMs depends on the Supervisor's stack.
    let stack = ctx.facts.apis.network_stack.stack;
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
                format!("A reject rule (TCP reset) on 2379/2380 between the control-plane VMs: check {}, and any host firewall on the nodes (nft list ruleset / iptables -S)", rejects_on(stack, ctx)),
            ],
        )
    } else if failing.iter().all(|c| c.state == CellState::TlsStalled) {
        evidence.extend(failing.iter().map(|c| path_line(c)));
        (
            VerdictCode::EtcdPeerLargePacketsDropped,
            "TCP connects between the control-plane VMs, but TLS handshakes stall: large packets are dropped (MTU)".to_string(),
            ends(&failing),
            vec![
                mtu_on(stack),
                "Check that ICMP 'fragmentation needed' is not blocked between the VMs (path MTU discovery)".to_string(),
                "From a node: ping -M do -s 1472 <peer IP> (ping may be disabled on these VMs; then curl with a large request)".to_string(),
            ],
        )
    } else if all {
        evidence.extend(summarise_cells(&failing));
        let own_ok = ctx
            .nodes
            .iter()
            .filter(|n| n.probe().is_some())
            .all(|n| own_cell(ctx, &n.name, 2379).is_some_and(|c| c.state.is_ok()));
        (
            VerdictCode::EtcdPeerNetworkBlocked,
            if own_ok {
                "every node reaches its own etcd, but no control-plane VM reaches another on 2379/2380".to_string()
            } else {
                "no control-plane VM reaches another on 2379/2380".to_string()
            },
            vec![],
            vec![format!(
                "Open TCP 2379 and 2380 between the control-plane VMs ({ips}) in both directions"
            )]
            .into_iter()
            .chain(drops_on(stack, ctx))
            .collect(),
        )
    } else {
        let (summary, nodes, lines) = partial(ctx, cells, &failing);
        evidence.extend(lines);
        (
            VerdictCode::EtcdPeerNetworkPartial,
            summary,
            nodes,
            vec![format!(
                "Open TCP 2379 and 2380 in both directions on the paths named above ({})",
                partial_on(stack)
            )],
        )
    };
    // Whether the members know a leader, from their raft lines ("no leader since 08:13:52").
    evidence.extend(leader_evidence(ctx));
    // Members that kubelet restarts or keeps stopped while they cannot reach their peers.
    evidence.extend(restarts_evidence(ctx));
    // The two most telling log findings per node, in the order of `kinds`.
    for &n in &ctx.nodes {
        evidence.extend(log_evidence(ctx, &n.name, &kinds).into_iter().take(2));
    }
    next.push(format!(
        "etcd recovers by itself once the VMs reach each other; follow it until Healthy: {}",
        ctx.facts.diagnose_watch()
    ));
    verdict(code, summary, nodes, evidence, next)
}

/// Explains partial failure: isolated nodes, a single blocked port, one-way paths.
pub(super) fn partial(
    ctx: &Ctx,
    cells: &[&Cell],
    failing: &[&Cell],
) -> (String, Vec<String>, Vec<String>) {
    let names: Vec<&str> = ctx.nodes.iter().copied().map(|n| n.name.as_str()).collect();
    let mut parts = Vec::new();
    let mut nodes = Vec::new();
    let mut lines = Vec::new();

    // A node whose every path, in and out, fails while others work is cut off. One pass over
    // the cells counts each node's paths (touching, ok): O(cells), not O(nodes × cells).
    let mut touching: HashMap<&str, (usize, usize)> = HashMap::new();
    for c in cells {
        let ends: &[&str] = if c.from == c.to {
            &[&c.from]
        } else {
            &[&c.from, &c.to]
        };
        for end in ends {
            let t = touching.entry(end).or_default();
            t.0 += 1;
            t.1 += usize::from(c.state.is_ok());
        }
    }
    for n in &names {
        if touching.get(n).is_some_and(|&(all, ok)| all > 0 && ok == 0) {
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

    // One-way: A→B fails while B→A works on the same port (the first such cell, by key).
    let mut by_path: HashMap<(&str, &str, u16), &Cell> = HashMap::with_capacity(cells.len());
    for c in cells {
        by_path.entry((&c.from, &c.to, c.port)).or_insert(c);
    }
    let mut named: HashSet<String> = nodes.iter().cloned().collect();
    for c in failing {
        let back = by_path.get(&(c.to.as_str(), c.from.as_str(), c.port));
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
                if named.insert(n.clone()) {
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

/// kubelet restarting a member that cannot reach a quorum, one line per node: a member whose
/// newest container was restarted (attempt > 0) or is not running, with no fatal reason in its
/// log. kubeadm's etcd static pod (cmd/kubeadm/app/phases/etcd/local.go, probes from
/// cmd/kubeadm/app/util/staticpod/utils.go) has a startupProbe on `/health?serializable=false`,
/// which fails without a leader, and a livenessProbe on `/health?exclude=NOSPACE&serializable=true`
/// that etcd 3.4 and early 3.5 also fail without one (the lab's kubelet stand-in shows both): a
/// member restarted during a partition is killed again and backed off, and so, in time, are the
/// others, until the network is back.
pub(super) fn restarts_evidence(ctx: &Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for &n in &ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let Some(c) = newest(&p.etcd.containers) else {
            continue;
        };
        let attempt = c.attempt.unwrap_or(0);
        let running = etcd_running(ctx, n) != Some(false);
        if (attempt == 0 && running) || fatal_reason(ctx, &n.name) {
            continue;
        }
        let signs: Vec<&str> = [
            (LogKind::NoLeader, "no leader"),
            (LogKind::LeaderLost, "lost leader"),
            (LogKind::IoTimeout, "i/o timeouts"),
            (LogKind::PeerUrlUnreachable, "peers unreachable"),
            (LogKind::PeerInactive, "peers inactive"),
            (LogKind::FatalUnreachable, "exited reaching no peer"),
            (LogKind::Terminated, "told to stop (SIGTERM)"),
        ]
        .iter()
        .filter(|(k, _)| {
            ctx.logs
                .get(&n.name)
                .is_some_and(|s| s.finding(*k).is_some())
        })
        .map(|(_, w)| *w)
        .collect();
        let state = if running {
            "running".to_string()
        } else {
            format!("not running ({})", c.state)
        };
        out.push(format!(
            "{}: etcd restarted {attempt} time{} (newest container {state}); {}no fatal reason: kubelet restarts a member that cannot reach a quorum (kubeadm's probes on etcd's /health fail without a leader)",
            n.name,
            if attempt == 1 { "" } else { "s" },
            if signs.is_empty() {
                String::new()
            } else {
                format!("its log shows {}, ", signs.join(", "))
            }
        ));
    }
    out
}

// ---- after the rules: the network is never hidden --------------------------------------------

/// A verdict about some nodes (a missing Machine, an unreachable node, a stopped or crash
/// looping member) gives way to the network verdict when the members that were probed and run
/// cannot reach each other either: fixing the one node would not restore quorum. The first verdict's summary and evidence
/// follow in the network verdict's evidence, its nodes among its nodes.
pub(super) fn unless_network(ctx: &Ctx, first: Verdict) -> Verdict {
    let Some(what) = first.code.yields_to_network() else {
        return first;
    };
    let live: Vec<&str> = ctx
        .nodes
        .iter()
        .filter(|n| n.probe().is_some() && etcd_running(ctx, n) != Some(false))
        .map(|n| n.name.as_str())
        .collect();
    let cells: Vec<&Cell> = ctx
        .matrices
        .iter()
        .flat_map(|m| m.peer_cells())
        .filter(|c| live.contains(&c.from.as_str()) && live.contains(&c.to.as_str()))
        .collect();
    let Some(mut net) = peer_network_over(ctx, &cells) else {
        return first;
    };
    net.summary = format!("{}; besides, {}", net.summary, first.summary);
    net.evidence
        .push(format!("also {}: {}", first.code, first.summary));
    net.evidence.extend(first.evidence);
    for n in first.nodes {
        if !net.nodes.is_empty() && !net.nodes.contains(&n) {
            net.nodes.push(n);
        }
    }
    net.next_steps.insert(
        0,
        format!(
            "The members that run ({}) cannot reach each other: fixing {} alone does not restore quorum; open the network first",
            live.join(", "),
            what
        ),
    );
    net.next_steps.extend(first.next_steps);
    net
}

/// The pasted command that lists the vSphere Namespace's VPC security policies: complete (its
/// namespace, the run's `--context` and `--kubeconfig`) and safe to paste.
fn vpc_policies(ctx: &Ctx) -> String {
    ctx.facts.kubectl.run(&format!(
        "get securitypolicies.crd.nsx.vmware.com -n {}",
        crate::command::namespace(&ctx.facts.namespace)
    ))
}

/// Where a reject (TCP reset) between the VMs comes from on `stack`.
fn rejects_on(stack: NetworkStack, ctx: &Ctx) -> String {
    match stack {
        NetworkStack::Nsx => "the NSX distributed firewall rules with action Reject applied to these VMs".into(),
        NetworkStack::Vpc => format!("the VPC's security policies with action Reject applied to these VMs ({}, and the VPC's rules in NSX Manager)", vpc_policies(ctx)),
        NetworkStack::Vds => "a firewall between the ESXi hosts that rejects TCP 2379/2380 (no NSX on this VDS Supervisor)".into(),
        NetworkStack::Unknown => "the NSX distributed firewall or VPC rules with action Reject applied to these VMs (on a VDS Supervisor: a firewall between the hosts)".into(),
    }
}

/// The MTU to compare the VMs' with on `stack`: the overlay's TEP MTU on NSX and VPC (Geneve's
/// headers), the distributed switch's and the physical network's on VDS (no overlay).
fn mtu_on(stack: NetworkStack) -> String {
    match stack {
        NetworkStack::Vds => "Compare the VMs' interface MTU with the distributed switch's and the physical switches' between the hosts (no overlay on VDS: a lower MTU anywhere on the VLAN drops large packets)".to_string(),
        _ => "Compare the VMs' interface MTU with the overlay's: NSX Geneve needs a TEP/uplink MTU of at least 1600 (1700 recommended) for a 1500-byte VM MTU".to_string(),
    }
}

/// What can drop every packet between the VMs on `stack`, as next steps: NSX's distributed
/// firewall and segment, and the antrea NSGroup an NSX 4.1 → 4.2 upgrade can empty (VMware KB:
/// IP address subnets missing from an antrea NSGroup after an upgrade from 4.1.x to 4.2.x); the
/// VPC's security policies and its default east-west rule (the VPC connectivity profile's
/// default rule decides what two VMs of one VPC may send each other without a policy); on VDS,
/// no NSX: the physical firewall between the hosts, the distributed port group's security
/// settings, a VLAN missing from a host's trunk. Unknown: each, named by stack.
fn drops_on(stack: NetworkStack, ctx: &Ctx) -> Vec<String> {
    const NSX: &str = "NSX: check the distributed firewall rules applied to these VMs and their segment (dropped packets show as i/o timeout in etcd's log)";
    const ANTREA: &str = "After an NSX upgrade from 4.1.x to 4.2.x: check that the antrea NSGroup still contains the cluster's IP subnets (VMware KB: IP address subnets missing from an antrea NSGroup after an upgrade from 4.1.x to 4.2.x)";
    let vpc = format!("NSX VPC: check the VPC's security policies applied to these VMs ({}, and the VPC's rules in NSX Manager) and the VPC's default east-west rule (its connectivity profile: whether traffic within the VPC is allowed without a policy)", vpc_policies(ctx));
    const VDS: &[&str] = &[
        "VDS (no NSX on this Supervisor): check the physical firewall between the ESXi hosts for TCP 2379/2380 between the VMs' addresses",
        "Check the distributed port group of the Workload Network: its security settings (MAC address changes, forged transmits) and any traffic filtering rule on it",
        "Check that the Workload Network's VLAN is on every ESXi host's uplink trunk: a VM on a host whose trunk lacks it reaches no peer",
    ];
    match stack {
        NetworkStack::Nsx => vec![NSX.into(), ANTREA.into()],
        NetworkStack::Vpc => vec![vpc],
        NetworkStack::Vds => VDS.iter().map(|l| l.to_string()).collect(),
        NetworkStack::Unknown => vec![
            NSX.into(),
            ANTREA.into(),
            vpc,
            "VDS: the physical firewall between the ESXi hosts, the port group's security settings, the VLAN on each host's trunk".into(),
        ],
    }
}

/// What sits on a failing path between two VMs on `stack`, in a few words.
fn partial_on(stack: NetworkStack) -> &'static str {
    match stack {
        NetworkStack::Nsx => "NSX distributed firewall, security groups of the VMs named",
        NetworkStack::Vpc => "the VPC's security policies applied to the VMs named",
        NetworkStack::Vds => "the physical firewall between their hosts, the VLAN on their hosts' trunks",
        NetworkStack::Unknown => "NSX distributed firewall or VPC security policies; on VDS the physical firewall between the hosts",
    }
}
