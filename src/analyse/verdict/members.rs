//! Membership from every node's own view: the member lists the probes read from each node's
//! peer listener (`/members`: the member's own copy, answered without quorum), compared with
//! each other and with the Machines. What CAPI reports as `EtcdClusterHealthy False` for a
//! member no Machine stands for, said with the member's ID and peer URL.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::*;
use crate::probe::output::{Member, QueryOutcome};
use crate::supervisor::ControlPlaneNode;

/// One member as the lists name it, with the nodes whose list has it.
#[derive(Debug)]
pub(super) struct Listed<'a> {
    pub member: &'a Member,
    pub listed_by: Vec<&'a str>,
}

impl Listed<'_> {
    fn id(&self) -> &str {
        self.member.id.as_deref().unwrap_or("?")
    }
    fn url(&self) -> String {
        self.member.peer_urls.join(", ")
    }
    fn ips(&self) -> Vec<IpAddr> {
        self.member
            .peer_urls
            .iter()
            .filter_map(|u| url_ip(u))
            .collect()
    }
}

/// The host of `https://198.18.0.11:2380` or `https://[fd00::1]:2380`, when it is an IP.
pub(super) fn url_ip(url: &str) -> Option<IpAddr> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.parse().ok()
}

/// Every member of every list that answered (the rollout's nodes' lists too: a removed member's
/// own list is how its ID is known), by ID, first-seen order; and the cluster IDs with the nodes
/// that answered with each.
pub(super) fn listed<'a>(ctx: &'a Ctx) -> (Vec<Listed<'a>>, Vec<(String, Vec<&'a str>)>) {
    let mut out: Vec<Listed> = Vec::new();
    let mut clusters: Vec<(String, Vec<&str>)> = Vec::new();
    for n in ctx.all {
        let Some(p) = n.probe() else { continue };
        if p.members.outcome != QueryOutcome::Ok {
            continue;
        }
        if let Some(id) = &p.members.cluster_id {
            match clusters.iter_mut().find(|(c, _)| c == id) {
                Some((_, ns)) => ns.push(&n.name),
                None => clusters.push((id.clone(), vec![&n.name])),
            }
        }
        for m in &p.members.members {
            match out
                .iter_mut()
                .find(|l| l.member.id.is_some() && l.member.id == m.id)
            {
                Some(l) => l.listed_by.push(&n.name),
                None => out.push(Listed {
                    member: m,
                    listed_by: vec![&n.name],
                }),
            }
        }
    }
    (out, clusters)
}

/// The control-plane node (any, in a rollout or not) whose VM has one of these IPs.
fn node_with_ip<'a>(ctx: &'a Ctx, ips: &[IpAddr]) -> Option<&'a ControlPlaneNode> {
    ctx.facts
        .nodes
        .iter()
        .find(|n| n.ip().is_some_and(|ip| ips.contains(&ip)))
}

/// What the member lists say is wrong, one evidence line each, with the nodes concerned; and
/// what they say that is only a rollout's doing (notes).
#[derive(Debug, Default)]
pub(super) struct Membership {
    pub problems: Vec<String>,
    pub nodes: Vec<String>,
    /// `etcdctl member remove` candidates: (id, peer URL).
    pub strays: Vec<(String, String)>,
    pub notes: Vec<String>,
}

pub(super) fn membership(ctx: &Ctx) -> Membership {
    let mut out = Membership::default();
    let (members, clusters) = listed(ctx);
    if members.is_empty() && clusters.is_empty() {
        return out;
    }
    let add_node = |out: &mut Membership, n: &str| {
        if !out.nodes.iter().any(|x| x == n) {
            out.nodes.push(n.to_string());
        }
    };
    // Two cluster IDs: some members belong to another cluster (a VM restored from another
    // cluster's snapshot, a member bootstrapped anew).
    if clusters.len() > 1 {
        let parts: Vec<String> = clusters
            .iter()
            .map(|(id, ns)| format!("{} answer with cluster ID {id}", ns.join(", ")))
            .collect();
        out.problems.push(format!(
            "the members do not agree on the cluster: {}",
            parts.join("; ")
        ));
        let biggest = clusters.iter().map(|(_, ns)| ns.len()).max().unwrap_or(0);
        for (_, ns) in clusters.iter().filter(|(_, ns)| ns.len() < biggest) {
            for n in ns {
                add_node(&mut out, n);
            }
        }
    }
    let provisioning_without_ip = ctx
        .facts
        .rollout_nodes()
        .any(|(n, r)| !r.is_deleting() && n.ip().is_none());
    let rollout = ctx.facts.rollout_in_progress();
    for m in &members {
        // By address (kubeadm advertises the node's IP), else by name (the node's name).
        let node = node_with_ip(ctx, &m.ips()).or_else(|| {
            let name = m.member.name.as_deref()?;
            ctx.facts.nodes.iter().find(|n| {
                n.name == name
                    || n.machine
                        .as_ref()
                        .is_some_and(|mi| mi.node_name.as_deref() == Some(name))
            })
        });
        let what = format!(
            "member {} ({}, peer URL {}; listed by {})",
            m.id(),
            m.member.name.as_deref().unwrap_or("never started"),
            m.url(),
            m.listed_by.join(", ")
        );
        match node {
            Some(n) if n.rollout().is_some() => out.notes.push(format!(
                "{what}: {}'s Machine is in a rollout",
                n.name
            )),
            Some(n) if n.machine.is_none() => {
                out.problems.push(format!(
                    "{what}: its VM {} has no Machine behind it",
                    n.name
                ));
                out.strays.push((m.id().to_string(), m.url()));
            }
            Some(n) if m.member.is_learner && !rollout => {
                out.problems.push(format!(
                    "{what}: still a learner on {}, with no rollout in progress: it never caught up (kubeadm promotes a learner once it has the leader's log)",
                    n.name
                ));
                add_node(&mut out, &n.name);
            }
            Some(_) => {}
            None if provisioning_without_ip => out.notes.push(format!(
                "{what}: no VM has its address yet; a Machine still provisioning may be it"
            )),
            // A peer URL by host name that names no node: cannot tell which VM it is.
            None if m.ips().is_empty() => out.notes.push(format!(
                "{what}: its peer URL is no IP address and its name no node's: cannot tell which VM it is"
            )),
            None => {
                out.problems.push(format!(
                    "{what}: no control-plane Machine's VM has its address (a VM deleted by hand, a member added by hand)"
                ));
                out.strays.push((m.id().to_string(), m.url()));
            }
        }
    }
    // Machines in service whose node is no member of any list.
    let ips: BTreeSet<IpAddr> = members.iter().flat_map(|m| m.ips()).collect();
    for n in &ctx.facts.nodes {
        if n.machine.is_none() || n.rollout().is_some() {
            continue;
        }
        let Some(ip) = n.ip() else { continue };
        if !ips.contains(&ip) {
            out.problems.push(format!(
                "{}: its Machine's VM ({ip}) is no etcd member in any node's member list",
                n.name
            ));
            add_node(&mut out, &n.name);
        }
    }
    // Lists that differ (one that lags a membership change, or a member's own stale list): said,
    // not judged; the lines above and the logs decide.
    let answered: Vec<&str> = ctx
        .nodes
        .iter()
        .filter(|n| {
            n.probe()
                .is_some_and(|p| p.members.outcome == QueryOutcome::Ok)
        })
        .map(|n| n.name.as_str())
        .collect();
    for m in &members {
        let missing: Vec<&str> = answered
            .iter()
            .copied()
            .filter(|n| !m.listed_by.contains(n))
            .collect();
        if !missing.is_empty() && missing.len() < answered.len() {
            out.notes.push(format!(
                "member {} is in the member list of {} but not of {}",
                m.id(),
                m.listed_by.join(", "),
                missing.join(", ")
            ));
        }
    }
    out
}
