//! Turning cells and log findings into evidence lines.

use std::collections::BTreeMap;

use super::Ctx;
use crate::analyse::matrix::{Cell, CellState};
use crate::probe::etcdlog::{self, LogKind, LogSummary};
use crate::probe::output::Container;
use crate::probe::NodeReport;

// ---- evidence helpers ------------------------------------------------------------------------

/// crictl's short container ID (13 characters). The ID is the node's word: cut it on a
/// character boundary.
pub(super) fn short_id(id: &str) -> &str {
    crate::probe::head(id, 13)
}

pub(super) fn ip_of(ctx: &Ctx, node: &str) -> String {
    ctx.nodes
        .iter()
        .copied()
        .find(|n| n.name == node)
        .and_then(|n| n.ip)
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "?".into())
}

/// "ok 2 ms", "timeout after 3.0 s (curl: ...)".
pub(super) fn describe(c: &Cell) -> String {
    let ms =
        c.ms.map(|ms| format!(" {}", crate::when::millis(ms)))
            .unwrap_or_default();
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

pub(super) fn path_line(c: &Cell) -> String {
    format!("{} → {}:{}: {}", c.from, c.to, c.port, describe(c))
}

/// Failing cells, grouped by state and port so a full outage is a few lines, not n².
pub(super) fn summarise_cells(failing: &[&Cell]) -> Vec<String> {
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
pub(super) fn ends(cells: &[&Cell]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for c in cells {
        for n in [&c.from, &c.to] {
            if seen.insert(n.as_str()) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// The newest time of a kind in the whole log read, window and history alike (`None` < any).
pub(super) fn last_time(s: &LogSummary, kind: LogKind) -> Option<String> {
    let recent = s.finding(kind).and_then(|f| f.last.clone());
    let old = s.past(kind).and_then(|f| f.last.clone());
    recent.max(old)
}

pub(super) fn nodes_with_logs(ctx: &Ctx, kinds: &[LogKind]) -> Vec<String> {
    ctx.logs
        .iter()
        .filter(|(_, s)| kinds.iter().any(|k| s.finding(*k).is_some()))
        .map(|(n, _)| n.clone())
        .collect()
}

/// How long after a removal the removed member's last dials are still routine: it stops within
/// about a second in the lab (etcd 3.4 and 3.5); anything much later means it is still running.
const REMOVAL_TAIL: std::time::Duration = std::time::Duration::from_secs(30);

/// Does this node's log say a removed member is still part of the story? Its `MemberRemoved`
/// lines are the routine tail of a membership change when they name only members whose removal
/// the same log recorded ("removed member", `MemberRemovedInfo`) and end within
/// [`REMOVAL_TAIL`] of it: the removed member dials for about a second before it stops, on every
/// KCP machine replacement. Lines that name another member, or none (the removed member's own
/// "the member has been permanently removed from the cluster"), or come later, or whose times
/// cannot be read, are the fault: a member that was removed is still running or came back.
pub(super) fn removed_member_fault(ctx: &Ctx, node: &str) -> bool {
    let Some(summary) = ctx.logs.get(node) else {
        return false;
    };
    let Some(rejected) = summary.finding(LogKind::MemberRemoved) else {
        return false;
    };
    // A scale-down: the member removed is a node whose Machine is being deleted; kubelet runs
    // its static pod until CAPI deletes the VM, and its peers reject it all that time.
    if removed_in_rollout(ctx, summary, rejected) {
        return false;
    }
    let time = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
    };
    let routine = summary
        .finding(LogKind::MemberRemovedInfo)
        .is_some_and(|info| {
            let soon_after = match (time(&rejected.last), time(&info.last)) {
                (Some(r), Some(i)) => r.duration_since(i).unsigned_abs() <= REMOVAL_TAIL,
                _ => false,
            };
            !rejected.peer_ids.is_empty()
                && rejected.peer_ids.is_subset(&info.peer_ids)
                && soon_after
        });
    !routine
}

/// Every peer a `MemberRemoved` finding names (by address, or by member ID through any node's
/// member list or log) is a node whose Machine is being deleted.
fn removed_in_rollout(ctx: &Ctx, summary: &LogSummary, f: &etcdlog::Finding) -> bool {
    let deleting: Vec<std::net::IpAddr> = ctx
        .facts
        .rollout_nodes()
        .filter(|(_, r)| r.is_deleting())
        .filter_map(|(n, _)| n.ip())
        .collect();
    if deleting.is_empty() || (f.peer_ids.is_empty() && f.peer_addresses.is_empty()) {
        return false;
    }
    let deleting_addr = |a: &String| log_addr_ip(a).is_some_and(|ip| deleting.contains(&ip));
    let addr_ok = f.peer_addresses.iter().all(deleting_addr);
    // IDs, to the node's address: from the member lists (a removed member's own list still
    // names it), else from this log's own "removed member" lines when every address they name
    // is a deleting node's (membership/cluster.go logs the removed member's ID and peer URLs).
    let lists = ctx.member_lists();
    let by_info = summary
        .finding(LogKind::MemberRemovedInfo)
        .or_else(|| summary.past(LogKind::MemberRemovedInfo))
        .filter(|info| {
            !info.peer_addresses.is_empty() && info.peer_addresses.iter().all(deleting_addr)
        });
    let id_ok = f.peer_ids.iter().all(|id| {
        // The log writes IDs as etcd does (`%x`): one in another form names no member.
        crate::probe::output::MemberId::parse(id)
            .is_ok_and(|id| lists.ips_of(ctx, id).iter().any(|ip| deleting.contains(ip)))
            || by_info.is_some_and(|info| info.peer_ids.contains(id))
    });
    addr_ok && id_ok
}

/// The node's log findings of these kinds, one line each, quoting the log:
/// `cp1 etcd log: 37× i/o timeout (198.18.0.12:2380 = cp2), 2026-12-02T08:25:49Z over 18s: "…"`.
pub(super) fn log_evidence(ctx: &Ctx, node: &str, kinds: &[LogKind]) -> Vec<String> {
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
                (Some(a), Some(b)) => format!(", {}", crate::when::during(a, b)),
                (Some(a), None) => format!(", {}", crate::when::stamp(a)),
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
                "{node} etcd log: {}× {}{}{when}: {example}",
                f.count,
                f.kind.phrase(),
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
pub(super) fn json_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let rest = &line[start..];
    let end = rest.find('"').unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// The IP of an address from a log line: `ip`, `ip:port` or `[ip6]:port`.
pub(super) fn log_addr_ip(addr: &str) -> Option<std::net::IpAddr> {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.parse().or_else(|_| addr.parse()).ok()
}

/// Which node an address from a log line (`ip` or `ip:port`) belongs to.
pub(super) fn node_at(ctx: &Ctx, addr: &str) -> Option<String> {
    let ip = log_addr_ip(addr)?;
    ctx.nodes
        .iter()
        .copied()
        .find(|n| n.ip == Some(ip))
        .map(|n| n.name.clone())
}

/// `cp3 from the Supervisor: 22 timeout, 2379 timeout, ...: nothing reaches this VM`; on the ssh
/// route the same line from this machine (`NodeReport::vantage`).
pub(super) fn supervisor_reach_line(n: &NodeReport) -> Option<String> {
    use crate::probe::{PortState, Vantage};
    if n.reach.is_empty() {
        return None;
    }
    let from = n.vantage();
    let who = from.who();
    let ports: Vec<String> = n
        .reach
        .iter()
        .map(|r| format!("{} {}", r.port, r.state.phrase()))
        .collect();
    let count = |state: PortState| n.reach.iter().filter(|r| r.state == state).count();
    let (open, unknown) = (count(PortState::Open), count(PortState::Unknown));
    // Only what was seen is claimed: an Unknown port is neither reached nor unreached.
    let meaning = if open == n.reach.len() {
        format!("{who} reaches every port")
    } else if unknown > 0 {
        format!(
            "{who} reaches {open} of {} ports; {unknown} could not be told",
            n.reach.len()
        )
    } else if open == 0 {
        match from {
            Vantage::Supervisor => {
                "nothing reaches this VM (powered off, hung, or cut off from the Supervisor too)"
                    .into()
            }
            Vantage::ThisMachine => "nothing of this VM answers from here (powered off, hung, or the path from this machine to it cut)".into(),
        }
    } else {
        format!("{who} reaches some ports")
    };
    Some(format!(
        "{} {}: {}: {meaning}",
        n.name,
        from.from(),
        ports.join(", ")
    ))
}

/// The KCP's etcd conditions (`EtcdMemberHealthy`, `EtcdPodHealthy`) that are not `True` on the
/// Machines of `about` (every node's when empty), one line each:
/// `cp1: Machine condition EtcdMemberHealthy is False (EtcdMemberUnhealthy: Etcd member status
/// reports errors: etcdserver: no leader)`. The Supervisor's view, which may lag what was seen.
///
/// Each carries its age (`lastTransitionTime`, against the time the plugin read the Supervisor
/// (`Ctx::now`): the time of the run, also when a bundle is judged later).
///
/// A condition that changed before `onset` (the failure's first sign in the logs, see
/// [`super::super::timeline::Timeline::onset`]) speaks of an earlier state, not of this failure:
/// it is marked stale and returned apart (the second list), for the notes. Beside a `Healthy`
/// verdict every one is stale (issue 38: the screen reads as the API's state truly is): what
/// was seen now is healthy, and KCP refreshes the condition only once it reaches the workload
/// API again, so it is the Supervisor's last report, a note, never evidence of the verdict.
pub(super) fn machine_condition_evidence(
    ctx: &Ctx,
    about: &[String],
    healthy: bool,
    onset: Option<std::time::SystemTime>,
) -> (Vec<String>, Vec<String>) {
    // The time the plugin read the Supervisor, never a node's clock: one node that lies about
    // its clock would make every condition look new or years old.
    let now = ctx.now;
    let mut out = Vec::new();
    let mut stale_out = Vec::new();
    for n in &ctx.facts.nodes {
        let Some(m) = &n.machine else { continue };
        if !about.is_empty() && !about.contains(&n.name) {
            continue;
        }
        for c in m.etcd_conditions.iter().filter(|c| c.status != "True") {
            let why = [c.reason.as_deref(), c.message.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            // CAPI's v1beta2 messages are bullet lists: one line here.
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.replace('\n', " "))
            };
            let changed = c
                .last_transition_time
                .as_deref()
                .and_then(crate::when::parse);
            // Its time and age, as kubectl's AGE column says the age.
            let age = changed
                .map(|t| format!(" (since {})", crate::when::since(t, now)))
                .unwrap_or_default();
            let line = format!(
                "{}: Machine condition {} is {}{why}{age}",
                n.name, c.kind, c.status
            );
            match (changed, onset) {
                (Some(t), Some(onset)) if !healthy && t < onset => stale_out.push(format!(
                    "{line}: stale, it changed before this failure began ({}): the Supervisor's report of an earlier state",
                    crate::when::instant(onset)
                )),
                _ if healthy => stale_out.push(format!(
                    "{line}: stale, the Supervisor's last report, not what was seen now (KCP updates it once it reaches the workload API again)"
                )),
                _ => out.push(line),
            }
        }
    }
    (out, stale_out)
}

/// The leader view of every node's log, one line (none when no log has a leader line):
/// `etcd logs: no leader since 2025-06-03T08:13:52Z on all nodes`, or who follows whom and who has none.
pub(super) fn leader_evidence(ctx: &Ctx) -> Option<String> {
    use etcdlog::{member_name, LeaderState};
    let views: Vec<(&str, &etcdlog::LeaderView)> = ctx
        .logs
        .iter()
        .filter_map(|(n, s)| Some((n.as_str(), s.leader.as_ref()?)))
        .collect();
    if views.is_empty() {
        return None;
    }
    let members = || {
        ctx.logs
            .iter()
            .map(|(n, s)| (n.as_str(), s.local_member_id.as_deref()))
    };
    let since = |v: &etcdlog::LeaderView| {
        v.since
            .as_deref()
            .map(|t| format!(" since {}", crate::when::stamp(t)))
            .unwrap_or_default()
    };
    let none: Vec<&(&str, &etcdlog::LeaderView)> = views
        .iter()
        .filter(|(_, v)| v.state == LeaderState::NoLeader)
        .collect();
    if none.len() == views.len() && views.len() == ctx.nodes.len() {
        // Every node has been without a leader since the latest of their times.
        let latest = none.iter().filter_map(|(_, v)| v.since.as_deref()).max();
        return Some(format!(
            "etcd logs: no leader{} on all nodes",
            latest
                .map(|t| format!(" since {}", crate::when::stamp(t)))
                .unwrap_or_default()
        ));
    }
    let mut parts = Vec::new();
    if !none.is_empty() {
        parts.push(
            none.iter()
                .map(|(n, v)| format!("no leader on {n}{}", since(v)))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    // Followers grouped by the leader they name, in node order.
    let mut by_leader: Vec<(String, Vec<String>)> = Vec::new();
    for (n, v) in views.iter().filter(|(_, v)| v.state == LeaderState::Known) {
        let leader = v
            .leader_id
            .as_deref()
            .map(|id| member_name(members(), id))
            .unwrap_or_else(|| "?".into());
        let entry = format!("{n}{}", since(v));
        match by_leader.iter_mut().find(|(l, _)| *l == leader) {
            Some((_, ns)) => ns.push(entry),
            None => by_leader.push((leader, vec![entry])),
        }
    }
    for (leader, ns) in by_leader {
        parts.push(format!("leader {leader} known on {}", ns.join(", ")));
    }
    Some(format!("etcd logs: {}", parts.join("; ")))
}

/// The newest etcd container: the highest restart attempt (kubelet counts up), else the first.
pub(super) fn newest(containers: &[Container]) -> Option<&Container> {
    containers.iter().max_by_key(|c| c.attempt.unwrap_or(0))
}

/// Epoch ms from crictl's createdAt: epoch nanoseconds, or RFC 3339.
pub(super) fn created_ms(s: &str) -> Option<i64> {
    if let Ok(ns) = s.trim().parse::<i64>() {
        return Some(ns / 1_000_000);
    }
    s.trim()
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}
