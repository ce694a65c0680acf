//! Membership from every node's own view: the member lists the probes read from each node's
//! peer listener (`/members`: the member's own copy, answered without quorum), compared with
//! each other and with the Machines. What CAPI reports as `EtcdClusterHealthy False` for a
//! member no Machine stands for, said with the member's ID and peer URL.
//!
//! Each list is its node's word, and a compromised node writes its own: no single list may
//! name another node or propose a removal. A claim about a member (a stray to remove, a learner
//! that never caught up, a Machine whose node is no member) is made only from what a majority
//! of the lists read agree on, and never against the own list of the node it is about (when
//! that node answered). A list that departs from the majority is a note about that list. IDs
//! are numbers ([`MemberId`]): `0<id>` is no other member (the parser keeps only etcd's form).
//! The lists are indexed once per verdict ([`Lists`], a map by ID), and their output bounded:
//! at most [`MAX_LINES`] lines of problems and of notes, [`MAX_REMOVALS`] removal steps.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::Ctx;
use crate::probe::output::{Member, MemberId, QueryOutcome};
use crate::probe::NodeReport;
use crate::supervisor::ControlPlaneNode;

/// Problem lines, and note lines, of the member lists at most; the rest are counted.
pub(super) const MAX_LINES: usize = 12;
/// `etcdctl member remove` steps at most; the rest are counted in one more step.
pub(super) const MAX_REMOVALS: usize = 5;

/// One node's member list that answered: its entries by ID (those with an ID as etcd writes it;
/// the parser dropped repeats and left the others without one).
#[derive(Debug)]
pub(super) struct List<'a> {
    pub node: &'a str,
    pub cluster_id: Option<&'a str>,
    pub by_id: BTreeMap<MemberId, &'a Member>,
}

/// Every list that answered, indexed once per verdict.
#[derive(Debug, Default)]
pub(super) struct Lists<'a> {
    pub lists: Vec<List<'a>>,
    /// Every ID any list names, with the lists (indexes into `lists`) that do.
    pub ids: BTreeMap<MemberId, Vec<usize>>,
    /// The cluster IDs, with the nodes that answered with each, first-seen order.
    pub clusters: Vec<(String, Vec<&'a str>)>,
}

impl<'a> Lists<'a> {
    /// Every list that answered (the rollout's nodes' lists too: a removed member's own list is
    /// how its ID is known). O(total entries × log).
    pub fn read(all: &'a [NodeReport]) -> Lists<'a> {
        #[cfg(test)]
        RUNS.with(|r| r.set((r.get().0 + 1, r.get().1)));
        let mut out = Lists::default();
        for n in all {
            let Some(p) = n.probe() else { continue };
            if p.members.outcome != QueryOutcome::Ok {
                continue;
            }
            if let Some(id) = &p.members.cluster_id {
                match out.clusters.iter_mut().find(|(c, _)| c == id) {
                    Some((_, ns)) => ns.push(&n.name),
                    None => out.clusters.push((id.clone(), vec![&n.name])),
                }
            }
            let i = out.lists.len();
            let mut by_id = BTreeMap::new();
            for m in &p.members.members {
                if let Some(id) = m.id {
                    by_id.entry(id).or_insert(m);
                }
            }
            for id in by_id.keys() {
                out.ids.entry(*id).or_default().push(i);
            }
            out.lists.push(List {
                node: &n.name,
                cluster_id: p.members.cluster_id.as_deref(),
                by_id,
            });
        }
        out
    }

    /// The lists that vote on the members: those of the cluster most nodes answer with (or
    /// without a cluster ID); a list of another cluster is about other members (its node is
    /// named for the cluster ID already). All of them when no cluster has the most.
    fn voters(&self) -> Vec<usize> {
        let most = self.clusters.iter().map(|(_, ns)| ns.len()).max();
        let main: Vec<&str> = self
            .clusters
            .iter()
            .filter(|(_, ns)| Some(ns.len()) == most)
            .map(|(c, _)| c.as_str())
            .collect();
        (0..self.lists.len())
            .filter(|i| match (main.as_slice(), self.lists[*i].cluster_id) {
                ([only], Some(c)) => c == *only,
                _ => true,
            })
            .collect()
    }

    /// The entry a node's own list has for `id`.
    fn own(&self, node: &str, id: MemberId) -> Option<Option<&'a Member>> {
        self.lists
            .iter()
            .find(|l| l.node == node)
            .map(|l| l.by_id.get(&id).copied())
    }

    /// The peer URLs' IPs of member `id` as the lists vouch for it: the majority's entry, and
    /// each node's own entry for itself (its list has `id` at one of its own addresses: the
    /// removed member's own list still names it).
    pub fn ips_of(&self, ctx: &Ctx, id: MemberId) -> Vec<IpAddr> {
        let voters = self.voters();
        let mut out: Vec<IpAddr> = match self.majority(&voters, id) {
            Vote::Entry(m, _) => ips(m),
            _ => vec![],
        };
        for l in &self.lists {
            let Some(m) = l.by_id.get(&id) else { continue };
            let own_ip = ctx.all.iter().find(|n| n.name == l.node).and_then(|n| n.ip);
            if own_ip.is_some_and(|ip| ips(m).contains(&ip)) {
                out.extend(ips(m));
            }
        }
        out
    }

    /// The node member `id` stands for, as the majority judges it: the probed node at the
    /// majority's entry's peer address; without a majority entry (a removed member only its own
    /// list still names), the one node whose own list puts `id` at that node's own address.
    /// Never one list's word about another node: a forged entry on one node cannot move an
    /// honest member onto it. `None` when neither tells one node.
    pub fn node_of(&self, all: &'a [NodeReport], id: MemberId) -> Option<&'a str> {
        let at = |ips: &[IpAddr]| {
            let mut hits = all
                .iter()
                .filter(|n| n.ip.is_some_and(|ip| ips.contains(&ip)));
            let first = hits.next()?;
            hits.next().is_none().then_some(first.name.as_str())
        };
        match self.majority(&self.voters(), id) {
            Vote::Entry(m, _) => at(&ips(m)),
            Vote::Absent | Vote::Split => {
                let mut own = self.lists.iter().filter_map(|l| {
                    let m = l.by_id.get(&id)?;
                    let n = all.iter().find(|n| n.name == l.node)?;
                    n.ip.filter(|ip| ips(m).contains(ip))?;
                    Some(n.name.as_str())
                });
                let first = own.next()?;
                own.all(|o| o == first).then_some(first)
            }
        }
    }

    /// What more than half of the voting lists say of member `id`.
    fn majority(&self, voters: &[usize], id: MemberId) -> Vote<'a> {
        let holders: Vec<usize> = self
            .ids
            .get(&id)
            .map(|hs| hs.iter().copied().filter(|i| voters.contains(i)).collect())
            .unwrap_or_default();
        let n = voters.len();
        if (n - holders.len()) * 2 > n {
            return Vote::Absent;
        }
        for &h in &holders {
            let m = self.lists[h].by_id[&id];
            let agree: Vec<&'a str> = holders
                .iter()
                .filter(|&&o| same(self.lists[o].by_id[&id], m))
                .map(|&o| self.lists[o].node)
                .collect();
            if agree.len() * 2 > n {
                return Vote::Entry(m, agree);
            }
        }
        Vote::Split
    }
}

/// The majority's word on one member.
enum Vote<'a> {
    /// More than half list it the same way (this entry), by these nodes.
    Entry(&'a Member, Vec<&'a str>),
    /// More than half do not list it.
    Absent,
    /// No majority either way.
    Split,
}

/// Two lists say the same of a member: the same peer URLs, learner or not (a name differs only
/// while a member starts: not what a claim rests on).
fn same(a: &Member, b: &Member) -> bool {
    fn urls(m: &Member) -> BTreeSet<&str> {
        m.peer_urls.iter().map(String::as_str).collect()
    }
    a.is_learner == b.is_learner && urls(a) == urls(b)
}

fn ips(m: &Member) -> Vec<IpAddr> {
    m.peer_urls.iter().filter_map(|u| url_ip(u)).collect()
}

/// "member a0ef… (cp2, peer URL https://…)".
fn describe(id: MemberId, m: &Member) -> String {
    format!(
        "member {id} ({}, peer URL {}{})",
        m.name.as_deref().unwrap_or("never started"),
        shown_urls(m),
        if m.is_learner { ", learner" } else { "" }
    )
}

/// A member's peer URLs as a line shows them: the first two, and how many more (a list may
/// give 16 of 256 bytes each).
fn shown_urls(m: &Member) -> String {
    let mut s = m
        .peer_urls
        .iter()
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if m.peer_urls.len() > 2 {
        s.push_str(&format!(" (+{} more)", m.peer_urls.len() - 2));
    }
    s
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

/// The control-plane node (any, in a rollout or not) whose VM has one of these IPs.
fn node_with_ip<'a>(ctx: &'a Ctx, ips: &[IpAddr]) -> Option<&'a ControlPlaneNode> {
    ctx.facts
        .nodes
        .iter()
        .find(|n| n.ip().is_some_and(|ip| ips.contains(&ip)))
}

/// The node a member is: by address (kubeadm advertises the node's IP), else by name (the
/// node's name).
fn node_of<'a>(ctx: &'a Ctx, m: &Member) -> Option<&'a ControlPlaneNode> {
    node_with_ip(ctx, &ips(m)).or_else(|| {
        let name = m.name.as_deref()?;
        ctx.facts.nodes.iter().find(|n| {
            n.name == name
                || n.machine
                    .as_ref()
                    .is_some_and(|mi| mi.node_name.as_deref() == Some(name))
        })
    })
}

/// What the member lists say is wrong, one evidence line each, with the nodes concerned; and
/// what they say that is only a rollout's doing, or one list's word (notes). Bounded.
#[derive(Debug, Default, Clone)]
pub(super) struct Membership {
    pub problems: Vec<String>,
    pub nodes: Vec<String>,
    /// `etcdctl member remove` candidates: (id, peer URL), each agreed by a majority of lists,
    /// two at least.
    pub strays: Vec<(MemberId, String)>,
    pub notes: Vec<String>,
}

/// At most [`MAX_LINES`] of `lines`, and one saying how many more there were.
fn bounded(mut lines: Vec<String>, what: &str) -> Vec<String> {
    if lines.len() > MAX_LINES {
        let more = lines.len() - (MAX_LINES - 1);
        lines.truncate(MAX_LINES - 1);
        lines.push(format!("and {more} more {what}"));
    }
    lines
}

fn add_node(out: &mut Membership, n: &str) {
    if !out.nodes.iter().any(|x| x == n) {
        out.nodes.push(n.to_string());
    }
}

/// "cp1's member list disagrees" / "the member lists of cp1, cp2 disagree".
fn disagree(nodes: &[&str]) -> String {
    match nodes {
        [one] => format!("{one}'s member list disagrees"),
        _ => format!("the member lists of {} disagree", nodes.join(", ")),
    }
}

// How many times this thread read the lists and judged them: (reads, judgements).
#[cfg(test)]
thread_local! {
    pub(super) static RUNS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

pub(super) fn membership(ctx: &Ctx) -> Membership {
    #[cfg(test)]
    RUNS.with(|r| r.set((r.get().0, r.get().1 + 1)));
    let mut out = Membership::default();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let lists = ctx.member_lists();
    if lists.ids.is_empty() && lists.clusters.is_empty() {
        return out;
    }
    // Two cluster IDs: some members belong to another cluster (a VM restored from another
    // cluster's snapshot, a member bootstrapped anew). Each node says its own cluster ID only.
    if lists.clusters.len() > 1 {
        let parts: Vec<String> = lists
            .clusters
            .iter()
            .take(MAX_TARGETS_SHOWN)
            .map(|(id, ns)| format!("{} answer with cluster ID {id}", ns.join(", ")))
            .collect();
        problems.push(format!(
            "the members do not agree on the cluster: {}",
            parts.join("; ")
        ));
        let biggest = lists.clusters.iter().map(|(_, ns)| ns.len()).max();
        for (_, ns) in lists
            .clusters
            .iter()
            .filter(|(_, ns)| Some(ns.len()) < biggest)
        {
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
    let in_rollout = |node: &str| ctx.facts.rollout_nodes().any(|(n, _)| n.name == node);
    let voters = lists.voters();
    let n = voters.len();
    // Each node's own member ID, as its etcd log says it (local-member-id).
    let own_ids: BTreeMap<MemberId, &str> = ctx
        .logs
        .iter()
        .filter_map(|(node, s)| {
            let id = MemberId::parse(s.local_member_id.as_deref()?).ok()?;
            Some((id, node.as_str()))
        })
        .collect();
    // Members only a minority of the lists have, by the lists that have them.
    let mut minority: BTreeMap<Vec<&str>, Vec<(MemberId, &Member)>> = BTreeMap::new();
    for (&id, holders) in &lists.ids {
        let vote = lists.majority(&voters, id);
        // The lists that depart from the majority: a note about each such list, never a claim.
        let dissent: Vec<(&str, Option<&Member>)> = voters
            .iter()
            .map(|&i| (lists.lists[i].node, lists.lists[i].by_id.get(&id).copied()))
            .filter(|(_, m)| match (&vote, m) {
                (Vote::Entry(e, _), Some(m)) => !same(e, m),
                (Vote::Entry(..), None) => true,
                (Vote::Absent, m) => m.is_some(),
                (Vote::Split, _) => false,
            })
            .collect();
        let any = lists.lists[holders[0]].by_id[&id];
        // A member at a node in a rollout (where the majority has it, else where any list
        // does): the rollout explains the lists' views of it.
        let seen_at = match &vote {
            Vote::Entry(m, _) => *m,
            _ => any,
        };
        if let Some(node) = node_of(ctx, seen_at).filter(|x| in_rollout(&x.name)) {
            let by: Vec<&str> = holders.iter().map(|i| lists.lists[*i].node).collect();
            notes.push(format!(
                "{} (listed by {}): {}'s Machine is in a rollout",
                describe(id, seen_at),
                by.join(", "),
                node.name
            ));
            continue;
        }
        let (m, agree) = match vote {
            Vote::Entry(m, agree) => (m, agree),
            Vote::Absent => {
                // Listed by a minority only: a list that lags a membership change, a member's
                // own stale list, or a node's word alone. Said (one note per set of lists),
                // not judged.
                let by: Vec<&str> = dissent.iter().map(|(n, _)| *n).collect();
                if !by.is_empty() && !by.iter().all(|b| in_rollout(b)) {
                    minority.entry(by).or_default().push((id, any));
                }
                continue;
            }
            Vote::Split => {
                let views: Vec<String> = voters
                    .iter()
                    .map(|&i| {
                        let l = &lists.lists[i];
                        match l.by_id.get(&id) {
                            Some(m) => format!(
                                "{} lists it at {}{}",
                                l.node,
                                shown_urls(m),
                                if m.is_learner { " as a learner" } else { "" }
                            ),
                            None => format!("{} does not list it", l.node),
                        }
                    })
                    .collect();
                notes.push(format!(
                    "the member lists disagree about member {id} with no majority ({}): not judged",
                    views.join("; ")
                ));
                continue;
            }
        };
        // One note per way of departing (lists that say the same thing together).
        let mut ways: Vec<(Option<&Member>, Vec<&str>)> = Vec::new();
        for (node, e) in &dissent {
            let same_way = |w: &Option<&Member>| match (w, e) {
                (Some(a), Some(b)) => same(a, b),
                (None, None) => true,
                _ => false,
            };
            match ways.iter_mut().find(|(w, _)| same_way(w)) {
                Some((_, by)) => by.push(node),
                None => ways.push((*e, vec![node])),
            }
        }
        for (way, by) in ways {
            notes.push(format!(
                "{} with the majority ({} of {n} lists) about {}: {} {}; not judged on {} word",
                disagree(&by),
                agree.len(),
                describe(id, m),
                if by.len() == 1 { "it" } else { "they" },
                match way {
                    Some(w) => format!(
                        "{} it at {}{}",
                        if by.len() == 1 { "lists" } else { "list" },
                        shown_urls(w),
                        if w.is_learner {
                            " as a learner"
                        } else {
                            " as a voting member"
                        }
                    ),
                    None => format!("{} not list it", if by.len() == 1 { "does" } else { "do" }),
                },
                if by.len() == 1 { "its" } else { "their" }
            ));
        }
        let node = node_of(ctx, m);
        // The node this member is has the last word on itself: its own list, when it answered,
        // must say the same, or nothing is claimed about it.
        if let Some(x) = node {
            if let Some(own) = lists.own(x.name.as_str(), id) {
                if !own.is_some_and(|o| same(o, m)) {
                    notes.push(format!(
                        "{} (as {} of {n} lists have it) is at {}, whose own list {}: not judged",
                        describe(id, m),
                        agree.len(),
                        x.name,
                        if own.is_some() {
                            "lists it otherwise"
                        } else {
                            "does not list it"
                        }
                    ));
                    continue;
                }
            }
        }
        // A node whose own etcd log says it is this member, while the lists have it elsewhere:
        // the lists are not taken against the member's own word (etcd logs its own ID as
        // `local-member-id`, types.ID.String()).
        if let Some(y) = own_ids
            .get(&id)
            .filter(|y| node.is_none_or(|x| x.name != **y))
        {
            notes.push(format!(
                "{} (as {} of {n} lists have it) is {y}'s own member ID by its etcd log: not judged",
                describe(id, m),
                agree.len()
            ));
            continue;
        }
        let what = format!(
            "member {id} ({}, peer URL {}; listed by {})",
            m.name.as_deref().unwrap_or("never started"),
            shown_urls(m),
            agree.join(", ")
        );
        // One list alone (the only one read) never names another node nor proposes a removal:
        // its claim is a warning note that asks for a second list.
        let alone = agree.len() < 2;
        let one_list = |why: String| {
            format!(
                "warning: {what}: {why}, by the only member list read: not judged on one list's word; compare etcdctl member list -w table on another node"
            )
        };
        match node {
            Some(x) if x.machine.is_none() && alone => {
                notes.push(one_list(format!("its VM {} has no Machine behind it", x.name)));
            }
            Some(x) if x.machine.is_none() => {
                problems.push(format!("{what}: its VM {} has no Machine behind it", x.name));
                out.strays.push((id, shown_urls(m)));
            }
            Some(x) if m.is_learner && !rollout && alone && agree[0] != x.name => {
                notes.push(format!(
                    "{what}: a learner on {} by this one list alone: not judged on one list's word",
                    x.name
                ));
            }
            Some(x) if m.is_learner && !rollout => {
                problems.push(format!(
                    "{what}: still a learner on {}, with no rollout in progress: it never caught up (kubeadm promotes a learner once it has the leader's log)",
                    x.name
                ));
                add_node(&mut out, &x.name);
            }
            Some(_) => {}
            None if provisioning_without_ip => notes.push(format!(
                "{what}: no VM has its address yet; a Machine still provisioning may be it"
            )),
            // A peer URL by host name that names no node: cannot tell which VM it is.
            None if ips(m).is_empty() => notes.push(format!(
                "{what}: its peer URL is no IP address and its name no node's: cannot tell which VM it is"
            )),
            None if alone => {
                notes.push(one_list("no control-plane Machine's VM has its address".into()));
            }
            None => {
                problems.push(format!(
                    "{what}: no control-plane Machine's VM has its address (a VM deleted by hand, a member added by hand)"
                ));
                out.strays.push((id, shown_urls(m)));
            }
        }
    }
    for (by, members) in minority {
        let shown: Vec<String> = members
            .iter()
            .take(MINORITY_SHOWN)
            .map(|(id, m)| describe(*id, m))
            .collect();
        let more = members.len().saturating_sub(MINORITY_SHOWN);
        notes.push(format!(
            "{} with the majority ({} of {n} lists read do not list {}) about {}{}: not judged on {} word",
            disagree(&by),
            n - by.len(),
            if members.len() == 1 { "it" } else { "them" },
            shown.join(", "),
            if more > 0 { format!(" and {more} more members") } else { String::new() },
            if by.len() == 1 { "its" } else { "their" }
        ));
    }
    // Machines in service whose node is no member: a majority of the lists and the node's own
    // list (when it answered) have no member at its address.
    if n > 0 {
        for x in &ctx.facts.nodes {
            if x.machine.is_none() || x.rollout().is_some() {
                continue;
            }
            let Some(ip) = x.ip() else { continue };
            let has = |i: usize| lists.lists[i].by_id.values().any(|m| ips(m).contains(&ip));
            let having: Vec<&str> = voters
                .iter()
                .filter(|&&i| has(i))
                .map(|&i| lists.lists[i].node)
                .collect();
            let own_has = (0..lists.lists.len())
                .find(|&i| lists.lists[i].node == x.name)
                .map(has);
            let lacking = n - having.len();
            if lacking * 2 > n && own_has.is_none() && lacking < 2 {
                // The only list read says so, and it is another node's: not on one list's word.
                notes.push(format!(
                    "{}: its Machine's VM ({ip}) is no etcd member by the only member list read, another node's: not judged on one list's word",
                    x.name
                ));
            } else if lacking * 2 > n && own_has != Some(true) {
                problems.push(format!(
                    "{}: its Machine's VM ({ip}) is no etcd member in {} of the {n} member lists read{}",
                    x.name,
                    n - having.len(),
                    if own_has == Some(false) { ", its own included" } else { "" }
                ));
                add_node(&mut out, &x.name);
            }
        }
    }
    out.problems = bounded(
        problems,
        "membership problems (etcdctl member list -w table shows them all)",
    );
    out.notes = bounded(notes, "notes on the member lists");
    out
}

/// Members named in one note about the members only some lists have, at most.
const MINORITY_SHOWN: usize = 5;

/// Cluster IDs shown in the one line about them at most (each node answers with one, and the
/// nodes are at most `MAX_TARGETS`).
const MAX_TARGETS_SHOWN: usize = crate::supervisor::targets::MAX_TARGETS;
