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
//!    EtcdPeerNetworkPartial (not when only 2379 fails: see 10)
//! 7. EtcdMemberMismatch  8. EtcdNoSpace  9. EtcdSlowDisk
//! 10. EtcdPeerNetworkPartial when only 2379 fails between the VMs and 2380 works: the members
//!     do not need it (they talk on 2380), so the rules above decide first; the article asks both
//!     open, so it is never Healthy
//! 11. Healthy: only when everything was seen to work: every control-plane node probed, `/health`
//!     true on each, every path on 2379 and 2380 (own and peer) connected with TLS completed, no
//!     probe step failed
//! 12. Inconclusive: anything less, naming what was not seen (which node, which path, which check)
//!
//! **The present decides.** Log findings are counted in a window that ends at each node's own
//! probe time (`--since`, default 15 minutes); older lines are history, quoted in the notes with
//! their times, never a reason. A member is crash looping or not running only for a fatal reason
//! of its own, or when its own paths work: restarts while its peers time out are kubelet's
//! answer to the partition (kubeadm's startupProbe fails without a leader) and are quoted as
//! evidence for the network verdict.
//!
//! **The network is never hidden.** A missing Machine, an unreachable node or a stopped member
//! (rules 1, 3, 4) does not end the analysis: when the members that were probed and run cannot
//! reach each other either, the network verdict wins (fixing the one node would not restore
//! quorum) and the first verdict's evidence follows in it.
//!
//! Whatever the verdict, the KCP's etcd conditions on the Machines it is about that are not
//! `True` are quoted at the end of its evidence: the Supervisor's view, next to what was seen.
//! Notes carry what is past or minor: history, a single slow fsync, restarts of a member that
//! runs and is healthy now, many elections on a `Healthy` cluster.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod evidence;
mod members;
mod network;
mod node;
mod notes;
mod seen;

use evidence::*;
use network::{client_port_blocked, peer_network};
use node::{certificate_problem, crash_looping, not_running};
use seen::{healthy, inconclusive};

use super::matrix::{self, Cell, CellState, Matrix};
pub use crate::probe::etcdlog::LogWindow;
use crate::probe::etcdlog::{self, LogKind, LogSummary};
use crate::probe::output::{Container, HealthOutcome, RuntimeQuery};
use crate::probe::NodeReport;
use crate::supervisor::{ClusterFacts, RolloutPhase};

/// The verdict codes: a JSON contract, scripts match on them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
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
    /// What is past or minor, one line each: log history outside the window, a single slow
    /// fsync, restarts of a member that is healthy now; a line starting "warning:" is one an
    /// admin should still read on a `Healthy` verdict (many elections in the window).
    #[serde(default)]
    pub notes: Vec<String>,
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

/// Everything the rules look at, built once per verdict for the deciding nodes (those in no
/// rollout); the matrices the report shows cover every node and are built apart.
struct Ctx<'a> {
    facts: &'a ClusterFacts,
    nodes: &'a [NodeReport],
    matrices: Vec<Matrix>,
    /// Each node's log, classified in the window (`since`) that ends at its probe time.
    logs: BTreeMap<String, LogSummary>,
    since: std::time::Duration,
    /// "Now" for the Supervisor's facts (the ages of its conditions): the time the plugin read
    /// the Supervisor ([`diagnose_at`]), never one node's clock.
    now: std::time::SystemTime,
    /// Every node's report, the rollout's included (membership reads all member lists); `nodes`,
    /// `matrices` and `logs` leave out the nodes in a rollout.
    all: &'a [NodeReport],
    /// The member lists of `all`, indexed by ID, read once ([`Ctx::member_lists`]).
    member_lists: std::cell::OnceCell<members::Lists<'a>>,
    /// What they say, judged once per verdict ([`Ctx::membership`]).
    membership: std::cell::OnceCell<members::Membership>,
}

impl<'a> Ctx<'a> {
    /// Every node's member list, indexed by member ID: read on first use, once per verdict
    /// (the rules, the notes and each node's `MemberRemoved` check share it).
    fn member_lists(&self) -> &members::Lists<'a> {
        self.member_lists
            .get_or_init(|| members::Lists::read(self.all))
    }

    /// The member lists judged against each other and the Machines, once per verdict.
    fn membership(&self) -> &members::Membership {
        self.membership.get_or_init(|| members::membership(self))
    }
}

/// What a rule is about: which stage of the control plane its verdict points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// The Supervisor's objects (the Machines KCP wants).
    Supervisor,
    /// One node: it could not be probed, or its etcd does not run or rejects certificates.
    Node,
    /// The paths between the members.
    Network,
    /// etcd itself, with a working network: membership, quota, disk.
    Etcd,
    /// What was seen, or not: `Healthy`, `Inconclusive`.
    Seen,
}

/// What a verdict's own evidence already says, so that its notes do not say it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// The problems of a node's probe document.
    DocumentProblems,
    /// etcd's clock drift warnings.
    ClockDrift,
    /// Slow fdatasync lines.
    SlowFsync,
}

/// One verdict rule: what it yields and how the rest of the analysis treats that verdict.
pub struct Rule {
    /// The codes its check yields (the network rule picks one of four by what failed).
    pub codes: &'static [VerdictCode],
    pub category: Category,
    /// Gives way to a network verdict when the members that run cannot reach each other
    /// either; names what fixing it alone would repair ("fixing … alone does not restore
    /// quorum").
    pub yields_to_network: Option<&'static str>,
    /// The codes among `codes` whose evidence names the network policies that block the paths
    /// (a dropped large packet is the MTU, never a policy).
    pub names_policies: &'static [VerdictCode],
    /// What its evidence already says.
    pub says: &'static [Said],
    check: fn(&Ctx) -> Option<Verdict>,
}

/// The rules in the order they decide (the module's list): the first that holds wins.
const RULES: &[Rule] = &[
    Rule {
        codes: &[VerdictCode::ControlPlaneMachinesMissing],
        category: Category::Supervisor,
        yields_to_network: Some("the missing Machines"),
        names_policies: &[],
        says: &[],
        check: machines_missing,
    },
    Rule {
        codes: &[VerdictCode::EtcdCrashLooping],
        category: Category::Node,
        yields_to_network: Some("the crash looping members"),
        names_policies: &[],
        says: &[],
        check: crash_looping,
    },
    Rule {
        codes: &[VerdictCode::EtcdNotRunning],
        category: Category::Node,
        yields_to_network: Some("the stopped members"),
        names_policies: &[],
        says: &[],
        check: not_running,
    },
    Rule {
        codes: &[VerdictCode::NodesUnreachable],
        category: Category::Node,
        yields_to_network: Some("the unreachable nodes"),
        names_policies: &[],
        says: &[],
        check: nodes_unreachable,
    },
    Rule {
        codes: &[VerdictCode::EtcdCertificateProblem],
        category: Category::Node,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::ClockDrift],
        check: certificate_problem,
    },
    Rule {
        codes: &[
            VerdictCode::EtcdPeerPortRefused,
            VerdictCode::EtcdPeerLargePacketsDropped,
            VerdictCode::EtcdPeerNetworkBlocked,
            VerdictCode::EtcdPeerNetworkPartial,
        ],
        category: Category::Network,
        yields_to_network: None,
        names_policies: &[
            VerdictCode::EtcdPeerPortRefused,
            VerdictCode::EtcdPeerNetworkBlocked,
            VerdictCode::EtcdPeerNetworkPartial,
        ],
        says: &[],
        check: peer_network,
    },
    Rule {
        codes: &[VerdictCode::EtcdMemberMismatch],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: member_mismatch,
    },
    Rule {
        codes: &[VerdictCode::EtcdNoSpace],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: no_space,
    },
    Rule {
        codes: &[VerdictCode::EtcdSlowDisk],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::SlowFsync],
        check: slow_disk,
    },
    Rule {
        codes: &[VerdictCode::EtcdPeerNetworkPartial],
        category: Category::Network,
        yields_to_network: None,
        names_policies: &[VerdictCode::EtcdPeerNetworkPartial],
        says: &[],
        check: client_port_blocked,
    },
    Rule {
        codes: &[VerdictCode::Healthy],
        category: Category::Seen,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: healthy,
    },
    Rule {
        codes: &[VerdictCode::Inconclusive],
        category: Category::Seen,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::DocumentProblems],
        check: |ctx| Some(inconclusive(ctx)),
    },
];

impl VerdictCode {
    /// The rules that yield this code (two for `EtcdPeerNetworkPartial`: the network rule and
    /// the one for 2379 alone).
    fn rules(self) -> impl Iterator<Item = &'static Rule> {
        RULES.iter().filter(move |r| r.codes.contains(&self))
    }

    /// The rule of this code, the first in the order when two yield it.
    pub fn rule(self) -> Option<&'static Rule> {
        self.rules().next()
    }

    /// Whether a verdict of this code names the network policies that block its paths.
    pub fn names_policies(self) -> bool {
        self.rules().any(|r| r.names_policies.contains(&self))
    }

    /// What fixing the nodes of this verdict alone would repair, when it gives way to a
    /// network verdict; `None` when it never does.
    pub(crate) fn yields_to_network(self) -> Option<&'static str> {
        self.rules().find_map(|r| r.yields_to_network)
    }

    /// Whether this verdict's own evidence already says `what`.
    pub(crate) fn says(self, what: Said) -> bool {
        self.rules().any(|r| r.says.contains(&what))
    }
}

/// The window of log lines that count as the present, unless `--since` says otherwise.
pub const DEFAULT_SINCE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The verdict on the nodes' probes, log lines counted within `since` of each node's probe,
/// with no time of the Supervisor read at hand: [`diagnose_at`] with the median of the nodes'
/// clocks as "now" (which one node that lies about its clock cannot move past the others').
pub fn diagnose(
    facts: &ClusterFacts,
    nodes: &[NodeReport],
    since: std::time::Duration,
) -> Diagnosis {
    diagnose_at(facts, nodes, since, None)
}

/// The verdict on the nodes' probes, log lines counted within `since` of each node's probe.
/// `read_at` is when the plugin read the Supervisor (its own clock): the ages of the
/// Supervisor's conditions are measured against it. Without it, the median of the nodes'
/// clocks, else this machine's clock.
///
/// Nodes in a rollout (their Machine is being deleted or is still provisioning) are shown in the
/// matrices and logs but do not decide: the rules see the others only, and a note lists them.
pub fn diagnose_at(
    facts: &ClusterFacts,
    nodes: &[NodeReport],
    since: std::time::Duration,
    read_at: Option<std::time::SystemTime>,
) -> Diagnosis {
    let now = read_at
        .or_else(|| {
            super::clock::median(nodes.iter().filter_map(|n| n.probe()?.clock_ms))
                .and_then(super::clock::system_time)
        })
        .unwrap_or_else(std::time::SystemTime::now);
    let logs: BTreeMap<String, LogSummary> = nodes
        .iter()
        .filter_map(|n| {
            let p = n.probe()?;
            let current = p.etcd.logs.as_ref().map(|l| l.text.as_str());
            // A restarted member starts a new log: the previous container's comes first, so
            // the restarts' reasons are read with the rest (one log, in time order).
            let previous = p.etcd.previous_logs.as_ref().map(|l| l.text.as_str());
            let text = match (previous, current) {
                (None, None) => return None,
                (Some(a), Some(b)) => format!("{a}\n{b}"),
                (Some(a), None) => a.to_string(),
                (None, Some(b)) => b.to_string(),
            };
            Some((
                n.name.clone(),
                etcdlog::classify_window(&text, p.clock_ms, since),
            ))
        })
        .collect();
    let rollout: BTreeMap<String, RolloutPhase> = facts
        .rollout_nodes()
        .map(|(n, r)| (n.name.clone(), r.clone()))
        .collect();
    let deciding: Vec<NodeReport> = nodes
        .iter()
        .filter(|n| !rollout.contains_key(&n.name))
        .cloned()
        .collect();
    let ctx = Ctx {
        facts,
        nodes: &deciding,
        matrices: vec![
            matrix::build(&deciding, 2379),
            matrix::build(&deciding, 2380),
        ],
        logs: logs
            .iter()
            .filter(|(n, _)| !rollout.contains_key(*n))
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect(),
        since,
        now,
        all: nodes,
        member_lists: Default::default(),
        membership: Default::default(),
    };
    let mut verdict = RULES
        .iter()
        .find_map(|rule| (rule.check)(&ctx))
        .unwrap_or_else(|| inconclusive(&ctx));
    verdict = network::unless_network(&ctx, verdict);
    let healthy = verdict.code == VerdictCode::Healthy;
    verdict
        .evidence
        .extend(machine_condition_evidence(&ctx, &verdict.nodes, healthy));
    verdict.notes.extend(notes::notes(&ctx, &verdict));
    Diagnosis {
        verdict,
        logs: logs
            .into_iter()
            .map(|(node, summary)| NodeLogs { node, summary })
            .collect(),
        // Every node's paths, the rollout's too: shown, whatever decided.
        matrices: vec![matrix::build(nodes, 2379), matrix::build(nodes, 2380)],
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
        notes: vec![],
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- 1. the Supervisor side ------------------------------------------------------------------

fn machines_missing(ctx: &Ctx) -> Option<Verdict> {
    let desired = ctx.facts.desired()?;
    // A Machine being deleted is on its way out (a scale-down, a remediation): it does not count
    // towards the replicas; a provisioning one does (KCP is making it).
    let present = ctx.facts.machines_staying() as i64;
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

// ---- 7-9. etcd itself, with a working network ------------------------------------------------

fn member_mismatch(ctx: &Ctx) -> Option<Verdict> {
    // What makes members reject each other. Not `MemberRemovedInfo`: every member logs "removed
    // member" on each machine replacement (every rolling update); only a removed member that
    // still talks is a fault. Not `MemberUnknown` alone either: a member that lags behind a
    // membership change logs it until it catches up; it is quoted when the rule holds.
    let kinds = [
        LogKind::ClusterIdMismatch,
        LogKind::MemberIdMismatch,
        LogKind::MemberAlreadyBootstrapped,
    ];
    let mut nodes = nodes_with_logs(ctx, &kinds);
    for n in ctx.logs.keys() {
        if !nodes.contains(n) && removed_member_fault(ctx, n) {
            nodes.push(n.clone());
        }
    }
    // Every node's own member list, against the others' and the Machines'.
    let lists = ctx.membership();
    for n in &lists.nodes {
        if !nodes.contains(n) {
            nodes.push(n.clone());
        }
    }
    nodes.sort();
    if nodes.is_empty() && lists.problems.is_empty() {
        return None;
    }
    let quoted = [
        LogKind::ClusterIdMismatch,
        LogKind::MemberRemoved,
        LogKind::MemberIdMismatch,
        LogKind::MemberAlreadyBootstrapped,
        LogKind::MemberUnknown,
    ];
    let mut evidence = lists.problems.clone();
    evidence.extend(nodes.iter().flat_map(|n| log_evidence(ctx, n, &quoted)));
    let mut next = Vec::new();
    // Only members a majority of the lists agree on (members.rs), and a few of them: each step
    // removes a member, and a list is a node's word.
    for (id, url) in lists.strays.iter().take(members::MAX_REMOVALS) {
        next.push(format!(
            "Member {id} ({url}) has no Machine: KCP will not remove it. On a node with a healthy member: etcdctl member remove {id} (with --endpoints https://127.0.0.1:2379 and the certs under /etc/kubernetes/pki/etcd/), after checking with etcdctl member list -w table that it is the one named here"
        ));
    }
    if lists.strays.len() > members::MAX_REMOVALS {
        next.push(format!(
            "and {} more members without a Machine named in the evidence: compare etcdctl member list -w table with the control-plane Machines before removing any",
            lists.strays.len() - members::MAX_REMOVALS
        ));
    }
    next.extend(strings(&[
        "On a node with a healthy member: etcdctl member list -w table (with the certs under /etc/kubernetes/pki/etcd/) and compare with the control-plane Machines",
        "A member from another cluster, one that was removed, or a Machine whose node is no member cannot heal by itself: let KCP remediate it (its MachineHealthCheck), or replace its Machine (kubectl delete machine <name> -n <ns>) so KCP creates a fresh member",
    ]));
    let summary = if lists.problems.is_empty() {
        format!("the network is fine, but etcd members reject each other ({}): cluster ID mismatch, removed member or member ID mismatch", nodes.join(", "))
    } else {
        format!(
            "the network is fine, but etcd's membership does not match the control plane: {}",
            lists.problems[0]
        )
    };
    verdict(
        VerdictCode::EtcdMemberMismatch,
        summary,
        nodes,
        evidence,
        next,
    )
}

/// Whether a NOSPACE alarm is raised now on this node, and what says so: etcd's `/health` body
/// (3.5+ names the alarm: `{"health":"false","reason":"ALARM NOSPACE"}`, etcdhttp/health.go),
/// else etcd's alarm list where it answered (an answer without NOSPACE says it is off), else a
/// `/health` that is not true while the log's newest NOSPACE line is newer than its newest
/// "alarm disarmed" (3.4's body does not say why; the alarm survives restarts, so the log's
/// history counts here). An old `alarm raised` that was disarmed since is history.
fn nospace_now(ctx: &Ctx, n: &NodeReport) -> Option<String> {
    let p = n.probe()?;
    if let Some(body) = p.health.body.as_deref().filter(|b| b.contains("NOSPACE")) {
        return Some(format!("{}: /health says {body}", n.name));
    }
    // etcd's own alarm list (it needs quorum to answer): NOSPACE raised for any member.
    if p.alarms.outcome == crate::probe::output::QueryOutcome::Ok {
        let nospace: Vec<String> = p
            .alarms
            .alarms
            .iter()
            .filter(|a| a.alarm == "NOSPACE")
            .map(|a| {
                a.member_id
                    .map_or_else(|| "?".to_string(), |id| id.to_string())
            })
            .collect();
        if !nospace.is_empty() {
            return Some(format!(
                "{}: etcd's alarm list has NOSPACE raised (member {})",
                n.name,
                nospace.join(", ")
            ));
        }
        // The list answered without NOSPACE: the alarm is not on, whatever the log says.
        if p.health.outcome != HealthOutcome::Healthy {
            return None;
        }
    }
    if p.health.outcome == HealthOutcome::Healthy {
        return None;
    }
    let s = ctx.logs.get(&n.name)?;
    let raised = last_time(s, LogKind::NoSpace)?;
    match last_time(s, LogKind::AlarmDisarmed) {
        Some(disarmed) if disarmed >= raised => None,
        _ => Some(format!(
            "{}: /health is {} and the newest NOSPACE line ({} UTC) has no \"alarm disarmed\" after it",
            n.name,
            p.health.outcome,
            etcdlog::clock(&raised)
        )),
    }
}

fn no_space(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        if let Some(line) = nospace_now(ctx, n) {
            evidence.push(line);
            evidence.extend(log_evidence(ctx, &n.name, &[LogKind::NoSpace]));
            nodes.push(n.name.clone());
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

/// How many warnings in the window make a slow disk, and not an event. Each "slow fdatasync" is
/// one WAL fsync over 1 s (wal/wal.go `warnSyncDuration = time.Second`, 3.4 to 3.6), as long as
/// etcd's default election timeout (1000 ms): one such stall is a VM snapshot or a vMotion stun,
/// three within `--since` are the datastore. A late heartbeat is one sent more than twice the
/// heartbeat interval late (etcdserver/raft.go `NewTimeoutDetector(2 * heartbeat)`); the same
/// three, and only without any sign of peer trouble in the window (the leader could not send
/// them during an outage either). Fewer, or older, are notes. A late heartbeat is counted once,
/// not once per line: the leader writes one line per follower it was late to (`processMessages`
/// in etcdserver/raft.go, 3.4 to 3.6: one warning per `MsgHeartbeat` whose `to` the per-peer
/// detector flags), so one stall of a 4-member cluster's leader is 3 lines.
pub(super) const SLOW_FSYNC_MIN: usize = 3;
pub(super) const LATE_HEARTBEAT_MIN: usize = 3;

/// How many times the leader was late with its heartbeats: its lines over the followers they
/// name (rounded up; lines that name none count one each).
pub(super) fn late_heartbeats(s: &LogSummary) -> usize {
    s.finding(LogKind::HeartbeatLate)
        .map_or(0, |f| f.count.div_ceil(f.peer_ids.len().max(1)))
}

/// Kinds that say a member had trouble with its peers.
const PEER_TROUBLE: &[LogKind] = &[
    LogKind::PeerInactive,
    LogKind::IoTimeout,
    LogKind::LostStream,
    LogKind::ConnectionRefused,
    LogKind::PeerUnhealthy,
    LogKind::BufferFull,
];

fn slow_disk(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for (node, s) in &ctx.logs {
        let fsync = s.finding(LogKind::SlowFdatasync).map_or(0, |f| f.count);
        let late = late_heartbeats(s);
        let network_trouble = PEER_TROUBLE.iter().any(|k| s.finding(*k).is_some());
        if fsync >= SLOW_FSYNC_MIN || (late >= LATE_HEARTBEAT_MIN && !network_trouble) {
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod past_tests;

#[cfg(test)]
mod rollout_tests;

#[cfg(test)]
mod members_tests;
#[cfg(test)]
mod trust_tests;
