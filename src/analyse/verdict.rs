//! One verdict for the whole control plane, from the Supervisor facts and every node's probe.
//!
//! The rules run in a fixed, documented order and the first that holds wins; each is a small
//! function returning `Option<Verdict>` with its evidence and next steps. The order is the order
//! of explanation: a missing machine or a stopped etcd explains refused connections, so those
//! come before any network verdict (a refused connection to a node whose etcd is not running is
//! `EtcdNotRunning`, not a firewall).
//!
//! 1. ControlPlaneMachinesMissing   2. EtcdCrashLooping   3. EtcdNotRunning
//! 4. NodesUnreachable              5. EtcdCertificateProblem
//! 6. network: EtcdPeerPortRefused, EtcdPeerLargePacketsDropped, EtcdPeerNetworkBlocked,
//!    EtcdPeerNetworkPartial
//! 7. EtcdMemberMismatch  8. EtcdNoSpace  9. EtcdSlowDisk  10. Healthy  11. Inconclusive

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::matrix::{self, Cell, CellState, Matrix};
use crate::probe::etcdlog::{self, LogKind, LogSummary};
use crate::probe::output::{Container, HealthOutcome, RuntimeQuery};
use crate::probe::NodeReport;
use crate::supervisor::ClusterFacts;

/// The verdict codes: a JSON contract, scripts match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerdictCode {
    Healthy,
    ControlPlaneMachinesMissing,
    EtcdNotRunning,
    EtcdCrashLooping,
    EtcdPeerNetworkBlocked,
    EtcdPeerNetworkPartial,
    EtcdPeerPortRefused,
    EtcdPeerLargePacketsDropped,
    EtcdCertificateProblem,
    EtcdMemberMismatch,
    EtcdNoSpace,
    EtcdSlowDisk,
    NodesUnreachable,
    Inconclusive,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub code: VerdictCode,
    /// One sentence.
    pub summary: String,
    /// The nodes the verdict is about (empty when it is about all of them).
    pub nodes: Vec<String>,
    /// The facts that led to it, one line each, most telling first.
    pub evidence: Vec<String>,
    pub next_steps: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeLogs {
    pub node: String,
    pub summary: LogSummary,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    pub verdict: Verdict,
    /// Port 2379, then 2380.
    pub matrices: Vec<Matrix>,
    /// The etcd log findings of every node whose log could be read.
    pub logs: Vec<NodeLogs>,
}

/// Everything the rules look at, computed once.
struct Ctx<'a> {
    facts: &'a ClusterFacts,
    nodes: &'a [NodeReport],
    matrices: Vec<Matrix>,
    logs: BTreeMap<String, LogSummary>,
}

type Rule = fn(&Ctx) -> Option<Verdict>;

const RULES: &[Rule] = &[
    machines_missing,
    crash_looping,
    not_running,
    nodes_unreachable,
    certificate_problem,
    peer_network,
    member_mismatch,
    no_space,
    slow_disk,
    healthy,
];

pub fn diagnose(facts: &ClusterFacts, nodes: &[NodeReport]) -> Diagnosis {
    let logs: BTreeMap<String, LogSummary> = nodes
        .iter()
        .filter_map(|n| {
            let text = &n.probe()?.etcd.logs.as_ref()?.text;
            Some((n.name.clone(), etcdlog::classify(text)))
        })
        .collect();
    let ctx = Ctx {
        facts,
        nodes,
        matrices: vec![matrix::build(nodes, 2379), matrix::build(nodes, 2380)],
        logs,
    };
    let verdict = RULES
        .iter()
        .find_map(|rule| rule(&ctx))
        .unwrap_or_else(|| inconclusive(&ctx));
    Diagnosis {
        verdict,
        logs: ctx
            .logs
            .into_iter()
            .map(|(node, summary)| NodeLogs { node, summary })
            .collect(),
        matrices: ctx.matrices,
    }
}

fn verdict(
    code: VerdictCode,
    summary: String,
    nodes: Vec<String>,
    evidence: Vec<String>,
    next_steps: Vec<String>,
) -> Option<Verdict> {
    Some(Verdict {
        code,
        summary,
        nodes,
        evidence,
        next_steps,
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- 1. the Supervisor side ------------------------------------------------------------------

fn machines_missing(ctx: &Ctx) -> Option<Verdict> {
    let desired = ctx.facts.desired()?;
    let present = ctx.facts.machines_present() as i64;
    if present >= desired {
        return None;
    }
    let kcp = ctx
        .facts
        .kcp
        .as_ref()
        .map(|k| k.name.as_str())
        .unwrap_or("?");
    let ns = &ctx.facts.namespace;
    verdict(
        VerdictCode::ControlPlaneMachinesMissing,
        format!("{} of {desired} control-plane Machines are missing: a separate issue from etcd networking", desired - present),
        vec![],
        vec![format!("KubeadmControlPlane {kcp} wants {desired} replicas; {present} control-plane Machines exist")],
        vec![
            format!("kubectl get kcp,machines -n {ns}; kubectl describe kcp {kcp} -n {ns} (why it cannot create the missing Machines)"),
            format!("kubectl get events -n {ns} --sort-by=.lastTimestamp | grep -i -e {kcp} -e virtualmachine"),
        ],
    )
}

// ---- 2, 3. etcd on the nodes -----------------------------------------------------------------

/// The newest etcd container: the highest restart attempt (kubelet counts up), else the first.
fn newest(containers: &[Container]) -> Option<&Container> {
    containers.iter().max_by_key(|c| c.attempt.unwrap_or(0))
}

/// Whether etcd runs on a node: from crictl when it answered, else from whether the node's own
/// 2379 answers. `None` when neither tells.
fn etcd_running(ctx: &Ctx, node: &NodeReport) -> Option<bool> {
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

fn own_cell<'a>(ctx: &'a Ctx, node: &str, port: u16) -> Option<&'a Cell> {
    ctx.matrices
        .iter()
        .find(|m| m.port == port)?
        .cell(node, node)
        .filter(|c| c.state.is_known())
}

/// Epoch ms from crictl's createdAt: epoch nanoseconds, or RFC 3339.
fn created_ms(s: &str) -> Option<i64> {
    if let Ok(ns) = s.trim().parse::<i64>() {
        return Some(ns / 1_000_000);
    }
    s.trim()
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// Restarted at least this often and exited, or restarted within the window: crash looping.
const CRASH_ATTEMPTS: u32 = 3;
const CRASH_WINDOW_MS: i64 = 15 * 60 * 1000;

fn crash_looping(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let Some(c) = newest(&p.etcd.containers) else {
            continue;
        };
        let attempt = c.attempt.unwrap_or(0);
        let recent = match (c.created_at.as_deref().and_then(created_ms), p.clock_ms) {
            (Some(created), Some(now)) => now - created < CRASH_WINDOW_MS,
            _ => false,
        };
        if attempt >= CRASH_ATTEMPTS && (!c.is_running() || recent) {
            nodes.push(n.name.clone());
            evidence.push(format!(
                "{}: etcd container {} is {} after {attempt} restarts{}",
                n.name,
                short_id(&c.id),
                c.state,
                if recent {
                    " (last one within 15 minutes)"
                } else {
                    ""
                }
            ));
            evidence.extend(log_evidence(
                ctx,
                &n.name,
                &[
                    LogKind::NoSpace,
                    LogKind::ClusterIdMismatch,
                    LogKind::MemberRemoved,
                    LogKind::CertExpired,
                ],
            ));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    verdict(
        VerdictCode::EtcdCrashLooping,
        format!("etcd keeps restarting on {}: a separate issue from etcd networking", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs --tail 100 <container id> (the last lines before each exit)", nodes.join(", ")),
            "Check /etc/kubernetes/manifests/etcd.yaml, the data directory /var/lib/etcd and free disk space on the node".into(),
        ],
    )
}

fn not_running(ctx: &Ctx) -> Option<Verdict> {
    let stopped: Vec<&NodeReport> = ctx
        .nodes
        .iter()
        .filter(|n| etcd_running(ctx, n) == Some(false))
        .collect();
    if stopped.is_empty() {
        return None;
    }
    let names: Vec<String> = stopped.iter().map(|n| n.name.clone()).collect();
    let mut evidence = Vec::new();
    for n in &stopped {
        let p = n.probe().expect("etcd_running needs a probe");
        match newest(&p.etcd.containers) {
            Some(c) => evidence.push(format!(
                "{}: crictl ps -a --name etcd: newest container {} is {} (attempt {})",
                n.name,
                short_id(&c.id),
                c.state,
                c.attempt.unwrap_or(0)
            )),
            None if p.etcd.query == RuntimeQuery::Ok => {
                evidence.push(format!("{}: crictl ps -a --name etcd lists no etcd container", n.name))
            }
            None => evidence.push(format!(
                "{}: the container runtime could not be asked ({:?}), and its own etcd port refuses",
                n.name, p.etcd.query
            )),
        }
        if let Some(c) = own_cell(ctx, &n.name, 2379) {
            evidence.push(format!(
                "{}: its own {}:2379 is {}",
                n.name,
                ip_of(ctx, &n.name),
                describe(c)
            ));
        }
    }
    // The other members' logs tell the same story: refused dials to the stopped members.
    for n in ctx.nodes.iter().filter(|n| !names.contains(&n.name)) {
        evidence.extend(log_evidence(ctx, &n.name, &[LogKind::ConnectionRefused]));
    }
    verdict(
        VerdictCode::EtcdNotRunning,
        format!("etcd is not running on {}: a separate issue from etcd networking", names.join(", ")),
        names.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs <container id>; journalctl -u kubelet --since -1h | grep -i etcd", names.join(", ")),
            "Check the static-pod manifest /etc/kubernetes/manifests/etcd.yaml and that kubelet is running".into(),
        ],
    )
}

// ---- 4. nodes that could not be probed -------------------------------------------------------

fn nodes_unreachable(ctx: &Ctx) -> Option<Verdict> {
    let failed: Vec<&NodeReport> = ctx.nodes.iter().filter(|n| n.outcome.is_err()).collect();
    if failed.is_empty() {
        return None;
    }
    let names: Vec<String> = failed.iter().map(|n| n.name.clone()).collect();
    let mut evidence: Vec<String> = failed
        .iter()
        .map(|n| {
            let e = n.outcome.as_ref().expect_err("filtered on errors");
            format!("{}: {:?}: {}", n.name, e.kind, e.message)
        })
        .collect();
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

// ---- 5. certificates -------------------------------------------------------------------------

fn certificate_problem(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let mut bad = false;
        for c in &p.certs {
            let file = format!("/etc/kubernetes/pki/etcd/{}", c.file);
            if c.expires_in_s.is_some_and(|s| s < 0) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} expired on {}",
                    n.name,
                    c.not_after.as_deref().unwrap_or("?")
                ));
            }
            if c.not_yet_valid == Some(true) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} is not valid before {}",
                    n.name,
                    c.not_before.as_deref().unwrap_or("?")
                ));
            }
            if c.has_node_ip == Some(false) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} does not name the node's IP {} (SANs: {})",
                    n.name,
                    p.node_ip,
                    c.sans.join(", ")
                ));
            }
        }
        if bad {
            nodes.push(n.name.clone());
        }
    }
    let rejected: Vec<&Cell> = ctx
        .matrices
        .iter()
        .flat_map(|m| m.cells.iter())
        .filter(|c| c.state == CellState::TlsRejected)
        .collect();
    for c in &rejected {
        evidence.push(format!("{} → {}:{}: {}", c.from, c.to, c.port, describe(c)));
    }
    if nodes.is_empty() && rejected.is_empty() {
        return None;
    }
    for n in ctx.nodes {
        evidence.extend(log_evidence(
            ctx,
            &n.name,
            &[
                LogKind::CertExpired,
                LogKind::CertNotYetValid,
                LogKind::CertNameMismatch,
                LogKind::CertUnknownAuthority,
                LogKind::TlsRemoteError,
            ],
        ));
    }
    if nodes.is_empty() {
        // No certificate of ours is wrong, yet handshakes fail: name the ends of those paths.
        for c in &rejected {
            for n in [&c.from, &c.to] {
                if !nodes.contains(n) {
                    nodes.push(n.clone());
                }
            }
        }
    }
    verdict(
        VerdictCode::EtcdCertificateProblem,
        format!("etcd TLS fails on {}: certificates expired, not yet valid, or not for the node's IP", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            "Expired etcd certificates: roll the control plane so KCP issues new ones (kubectl patch kcp <name> -n <ns> --type merge -p '{\"spec\":{\"rolloutAfter\":\"<now, RFC 3339>\"}}'), or on the node: kubeadm certs renew etcd-peer etcd-server, then restart etcd".into(),
            "A certificate without the node's current IP means the VM's IP changed: replace that Machine (kubectl delete machine <name> -n <ns>; KCP creates a new one)".into(),
            "Not yet valid: check the node's clock (chronyc tracking / timedatectl)".into(),
        ],
    )
}

// ---- 6. the peer network ---------------------------------------------------------------------

fn peer_network(ctx: &Ctx) -> Option<Verdict> {
    let cells: Vec<&Cell> = ctx.matrices.iter().flat_map(|m| m.peer_cells()).collect();
    let failing: Vec<&Cell> = cells.iter().copied().filter(|c| !c.state.is_ok()).collect();
    if failing.is_empty() {
        return None;
    }
    let mut evidence = own_paths_evidence(ctx);
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
    // The two most telling log findings per node, in the order of `kinds`.
    for n in ctx.nodes {
        evidence.extend(log_evidence(ctx, &n.name, &kinds).into_iter().take(2));
    }
    next.push("etcd recovers by itself once the VMs reach each other; then re-run kubectl etcdnet diagnose to confirm".into());
    verdict(code, summary, nodes, evidence, next)
}

/// Explains partial failure: isolated nodes, a single blocked port, one-way paths.
fn partial(ctx: &Ctx, cells: &[&Cell], failing: &[&Cell]) -> (String, Vec<String>, Vec<String>) {
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

fn own_paths_evidence(ctx: &Ctx) -> Vec<String> {
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

// ---- 7-9. etcd itself, with a working network ------------------------------------------------

fn member_mismatch(ctx: &Ctx) -> Option<Verdict> {
    let kinds = [LogKind::ClusterIdMismatch, LogKind::MemberRemoved];
    let nodes = nodes_with_logs(ctx, &kinds);
    if nodes.is_empty() {
        return None;
    }
    let evidence = nodes
        .iter()
        .flat_map(|n| log_evidence(ctx, n, &kinds))
        .collect();
    verdict(
        VerdictCode::EtcdMemberMismatch,
        format!("the network is fine, but etcd members reject each other ({}): cluster ID mismatch or removed member", nodes.join(", ")),
        nodes,
        evidence,
        strings(&[
            "On a node with a healthy member: etcdctl member list (with the certs under /etc/kubernetes/pki/etcd/) and compare with the control-plane Machines",
            "A member from another cluster or one that was removed cannot rejoin: replace its Machine (kubectl delete machine <name> -n <ns>) so KCP creates a fresh member",
        ]),
    )
}

fn no_space(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = nodes_with_logs(ctx, &[LogKind::NoSpace]);
    let mut evidence: Vec<String> = nodes
        .iter()
        .flat_map(|n| log_evidence(ctx, n, &[LogKind::NoSpace]))
        .collect();
    for n in ctx.nodes {
        let Some(body) = n.probe().and_then(|p| p.health.body.as_deref()) else {
            continue;
        };
        if body.contains("NOSPACE") {
            evidence.push(format!("{}: /health says {body}", n.name));
            if !nodes.contains(&n.name) {
                nodes.push(n.name.clone());
            }
        }
    }
    if nodes.is_empty() {
        return None;
    }
    verdict(
        VerdictCode::EtcdNoSpace,
        "the network is fine, but etcd's database is over its quota (NOSPACE alarm): etcd accepts no writes".into(),
        nodes,
        evidence,
        strings(&[
            "etcdctl endpoint status -w table (DB size vs quota); etcdctl alarm list",
            "Compact and defragment (etcdctl compact <rev>; etcdctl defrag, one member at a time), then etcdctl alarm disarm",
        ]),
    )
}

/// Warnings a slow disk leaves; counts below these are ordinary noise on a busy member.
const SLOW_FSYNC_MIN: usize = 1;
const LATE_HEARTBEAT_MIN: usize = 3;

fn slow_disk(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for (node, s) in &ctx.logs {
        let fsync = s.finding(LogKind::SlowFdatasync).map_or(0, |f| f.count);
        let late = s.finding(LogKind::HeartbeatLate).map_or(0, |f| f.count);
        if fsync >= SLOW_FSYNC_MIN || late >= LATE_HEARTBEAT_MIN {
            nodes.push(node.clone());
            evidence.extend(log_evidence(
                ctx,
                node,
                &[
                    LogKind::SlowFdatasync,
                    LogKind::HeartbeatLate,
                    LogKind::ApplySlow,
                ],
            ));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    verdict(
        VerdictCode::EtcdSlowDisk,
        format!("the network is fine, but the disk under etcd is too slow for its heartbeats on {}", nodes.join(", ")),
        nodes,
        evidence,
        strings(&[
            "etcd needs fdatasync well under 10 ms: check the latency of the datastore behind these VMs (vSphere performance charts, storage contention)",
            "Avoid snapshots and storage vMotion of control-plane VMs while they run",
        ]),
    )
}

// ---- 10, 11. ---------------------------------------------------------------------------------

fn healthy(ctx: &Ctx) -> Option<Verdict> {
    let probed: Vec<_> = ctx
        .nodes
        .iter()
        .filter_map(|n| n.probe().map(|p| (n, p)))
        .collect();
    if probed.is_empty() || probed.len() < ctx.nodes.len() {
        return None;
    }
    if !probed
        .iter()
        .all(|(_, p)| p.health.outcome == HealthOutcome::Healthy)
    {
        return None;
    }
    let peers: usize = ctx.matrices.iter().map(|m| m.peer_cells().count()).sum();
    let mut evidence = vec![format!(
        "etcd /health is true on all {} members",
        probed.len()
    )];
    if peers > 0 {
        evidence.push(format!(
            "all {peers} peer paths on 2379 and 2380 connect and complete TLS"
        ));
    }
    verdict(
        VerdictCode::Healthy,
        "etcd is healthy and every control-plane VM reaches every other on 2379 and 2380".into(),
        vec![],
        evidence,
        vec![],
    )
}

fn inconclusive(ctx: &Ctx) -> Verdict {
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        match n.probe() {
            None => {}
            Some(p) if p.health.outcome != HealthOutcome::Healthy => evidence.push(format!(
                "{}: /health {:?}{}",
                n.name,
                p.health.outcome,
                p.health
                    .body
                    .as_deref()
                    .or(p.health.detail.as_deref())
                    .map(|b| format!(": {b}"))
                    .unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
    if ctx.nodes.is_empty() {
        evidence.push("no control-plane node to probe".into());
    }
    Verdict {
        code: VerdictCode::Inconclusive,
        summary: "the checks found no network, certificate or etcd-process problem that explains the state".into(),
        nodes: vec![],
        evidence,
        next_steps: strings(&["Read the etcd logs on the nodes (crictl logs <etcd container>) and the KCP conditions (kubectl describe kcp -n <ns>)"]),
    }
}

// ---- evidence helpers ------------------------------------------------------------------------

fn short_id(id: &str) -> &str {
    &id[..id.len().min(13)]
}

fn ip_of(ctx: &Ctx, node: &str) -> String {
    ctx.nodes
        .iter()
        .find(|n| n.name == node)
        .and_then(|n| n.ip)
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "?".into())
}

/// "ok 2ms", "timeout after 3001ms (curl: ...)".
fn describe(c: &Cell) -> String {
    let ms = c.ms.map(|ms| format!(" {ms}ms")).unwrap_or_default();
    match (c.state, &c.detail) {
        (CellState::Ok, _) => format!("ok{ms}"),
        (s, Some(d)) => format!(
            "{}{} ({})",
            s.label(),
            if ms.is_empty() {
                String::new()
            } else {
                format!(" after{ms}")
            },
            d
        ),
        (s, None) => format!(
            "{}{}",
            s.label(),
            if ms.is_empty() {
                String::new()
            } else {
                format!(" after{ms}")
            }
        ),
    }
}

fn path_line(c: &Cell) -> String {
    format!("{} → {}:{}: {}", c.from, c.to, c.port, describe(c))
}

/// Failing cells, grouped by state and port so a full outage is a few lines, not n².
fn summarise_cells(failing: &[&Cell]) -> Vec<String> {
    let mut groups: BTreeMap<(u16, &'static str), Vec<String>> = BTreeMap::new();
    for c in failing {
        groups
            .entry((c.port, c.state.label()))
            .or_default()
            .push(format!("{} → {}", c.from, c.to));
    }
    groups
        .into_iter()
        .map(|((port, state), paths)| format!("{port}: {state}: {}", paths.join(", ")))
        .collect()
}

/// The nodes at either end of some cells, in order of appearance.
fn ends(cells: &[&Cell]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cells {
        for n in [&c.from, &c.to] {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

fn nodes_with_logs(ctx: &Ctx, kinds: &[LogKind]) -> Vec<String> {
    ctx.logs
        .iter()
        .filter(|(_, s)| kinds.iter().any(|k| s.finding(*k).is_some()))
        .map(|(n, _)| n.clone())
        .collect()
}

/// The node's log findings of these kinds, one line each, quoting the log:
/// `cp1 etcd log: 37× IoTimeout (198.18.0.12:2380 = cp2), 08:25:49..08:26:07: "…"`.
fn log_evidence(ctx: &Ctx, node: &str, kinds: &[LogKind]) -> Vec<String> {
    let Some(summary) = ctx.logs.get(node) else {
        return vec![];
    };
    kinds
        .iter()
        .filter_map(|k| summary.finding(*k))
        .map(|f| {
            let addrs: Vec<String> = f
                .peer_addresses
                .iter()
                .map(|a| match node_at(ctx, a) {
                    Some(name) => format!("{a} = {name}"),
                    None => a.clone(),
                })
                .collect();
            let when = match (&f.first, &f.last) {
                (Some(a), Some(b)) if a != b => format!(", {a} .. {b}"),
                (Some(a), _) => format!(", {a}"),
                _ => String::new(),
            };
            // Quote the line's own words (message and error), not its JSON wrapping.
            let quote = match etcdlog::parse_line(&f.example) {
                Some(l) => match l.error {
                    Some(e) => format!("\"{}\" ({e})", l.msg),
                    None => format!("\"{}\"", l.msg),
                },
                // Examples are cut short, which can leave zap JSON unparsable: take its fields.
                None => match (
                    json_field(&f.example, "msg"),
                    json_field(&f.example, "error"),
                ) {
                    (Some(m), Some(e)) => format!("\"{m}\" ({e})"),
                    (Some(m), None) => format!("\"{m}\""),
                    _ => f.example.clone(),
                },
            };
            let example: String = quote.chars().take(200).collect();
            format!(
                "{node} etcd log: {}× {:?}{}{when}: {example}",
                f.count,
                f.kind,
                if addrs.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", addrs.join(", "))
                },
            )
        })
        .collect()
}

/// A string field of a (possibly truncated) zap JSON line, up to its closing quote.
fn json_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let rest = &line[start..];
    let end = rest.find('"').unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Which node an address from a log line (`ip` or `ip:port`) belongs to.
fn node_at(ctx: &Ctx, addr: &str) -> Option<String> {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().or_else(|_| addr.parse()).ok()?;
    ctx.nodes
        .iter()
        .find(|n| n.ip == Some(ip))
        .map(|n| n.name.clone())
}

#[cfg(test)]
mod tests;
