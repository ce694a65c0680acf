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
//! 11. ApiServerNotServing, ApiEndpointUnreachable: etcd is healthy (nothing short of rule 12)
//!     but the workload API does not answer: the API servers on the nodes, or, every one of them
//!     ready, the load balancer in front of them
//! 12. Healthy: only when everything was seen to work: every control-plane node probed, `/health`
//!     true on each, every path on 2379 and 2380 (own and peer) connected with TLS completed, no
//!     probe step failed, and the workload API answering (when the run checked it)
//! 13. Inconclusive: anything less, naming what was not seen (which node, which path, which check)
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
//!
//! Each rule is a file of its own in `verdict/` with its check; `RULES` is their order and
//! what the rest of the analysis reads of each code (whether it yields to the network, whether
//! its evidence names the policies, what its evidence already says). What a new rule or code
//! touches is listed in docs/architecture.md ("Verdict rules").

use std::collections::BTreeMap;

mod api_server;
mod certificate_problem;
mod client_port_blocked;
mod crash_looping;
mod evidence;
mod machines_missing;
mod member_mismatch;
mod members;
mod network;
mod no_space;
mod node;
mod nodes_unreachable;
mod not_running;
mod notes;
mod placement;
mod seen;
mod slow_disk;

use evidence::machine_condition_evidence;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::matrix::{self, Cell, Matrix};
use crate::probe::etcdlog::{self, LogSummary};
use crate::probe::NodeReport;
use crate::supervisor::{ClusterFacts, RolloutPhase};

// `VerdictCode` and `Verdict` are the contract's (`report::DiagnoseReport`'s `verdict`): their
// doc comments are the schema's descriptions, their serde attributes the json's names.

/// The verdict's code: scripts match on it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
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
    ApiServerNotServing,
    ApiEndpointUnreachable,
    Inconclusive,
}

/// One verdict for the whole control plane, with its evidence and next steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub code: VerdictCode,
    /// One sentence.
    pub summary: String,
    /// The nodes the verdict is about (empty when it is about all of them).
    pub nodes: Vec<String>,
    /// The facts that led to it, one line each, most telling first.
    pub evidence: Vec<String>,
    /// What to do, in order.
    pub next_steps: Vec<String>,
    /// What is past or minor, one line each; a line starting "warning:" is one to read even on `Healthy`.
    // Log history outside the window, a single slow fsync, restarts of a member that is healthy
    // now; a "warning:" line is one an admin should still read (many elections in the window).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The etcd log findings of one node whose log could be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeLogs {
    pub node: String,
    pub summary: LogSummary,
}

impl NodeLogs {
    /// A member ID as the name of the node whose log says it is that member, else the ID.
    pub fn member_name(logs: &[NodeLogs], id: &str) -> String {
        crate::probe::etcdlog::member_name(
            logs.iter()
                .map(|l| (l.node.as_str(), l.summary.local_member_id.as_deref())),
            id,
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub verdict: Verdict,
    /// Port 2379, then 2380.
    pub matrices: Vec<Matrix>,
    /// The etcd log findings of every node whose log could be read.
    pub logs: Vec<NodeLogs>,
    /// Where the failing paths' packets die (the nodes' own firewalls read around the checks);
    /// None when no node's probe read its firewall.
    pub location: Option<super::location::PacketPlaces>,
    /// The remediation guard ([`super::guard`]): None when the Supervisor said nothing of
    /// remediation.
    pub guard: Option<super::guard::RemediationGuard>,
    /// etcd's own metrics of every node whose probe read them.
    pub etcd_metrics: Vec<super::metrics::EtcdMetrics>,
    /// Since when each pair fails, from both ends' logs ([`super::timeline`]).
    pub timeline: super::timeline::Timeline,
}

/// Everything the rules look at, for the deciding nodes (those in no rollout): their paths are
/// a view of the matrices the report shows, which cover every node and are built once.
struct Ctx<'a> {
    facts: &'a ClusterFacts,
    nodes: Vec<&'a NodeReport>,
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
    /// The workload API as the run checked it; `None` when the caller did not check it (the
    /// rules about etcd alone, as their tests judge them).
    workload: Option<&'a crate::workload::WorkloadApi>,
    /// The deciding nodes' API servers, read from their probes (those whose probe read one).
    api_servers: BTreeMap<String, crate::probe::apiserver::ApiServer>,
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
pub(crate) enum Category {
    /// The Supervisor's objects (the Machines KCP wants).
    Supervisor,
    /// One node: it could not be probed, or its etcd does not run or rejects certificates.
    Node,
    /// The paths between the members.
    Network,
    /// The API servers on the nodes and the endpoint in front of them.
    ApiServer,
    /// etcd itself, with a working network: membership, quota, disk.
    Etcd,
    /// What was seen, or not: `Healthy`, `Inconclusive`.
    Seen,
}

/// What a verdict's own evidence already says, so that its notes do not say it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    /// The problems of a node's probe document.
    DocumentProblems,
    /// etcd's clock drift warnings.
    ClockDrift,
    /// Slow fdatasync lines.
    SlowFsync,
}

/// One verdict rule: what it yields and how the rest of the analysis treats that verdict.
pub(crate) struct Rule {
    /// The codes this rule decides (the network rule picks one of four by what failed). A
    /// stopped or crash looping member that was removed is handed to `member_mismatch`: that
    /// verdict is `EtcdMemberMismatch`, read as that rule's.
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
        check: machines_missing::machines_missing,
    },
    Rule {
        codes: &[VerdictCode::EtcdCrashLooping],
        category: Category::Node,
        yields_to_network: Some("the crash looping members"),
        names_policies: &[],
        says: &[],
        check: crash_looping::crash_looping,
    },
    Rule {
        codes: &[VerdictCode::EtcdNotRunning],
        category: Category::Node,
        yields_to_network: Some("the stopped members"),
        names_policies: &[],
        says: &[],
        check: not_running::not_running,
    },
    Rule {
        codes: &[VerdictCode::NodesUnreachable],
        category: Category::Node,
        yields_to_network: Some("the unreachable nodes"),
        names_policies: &[],
        says: &[],
        check: nodes_unreachable::nodes_unreachable,
    },
    Rule {
        codes: &[VerdictCode::EtcdCertificateProblem],
        category: Category::Node,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::ClockDrift],
        check: certificate_problem::certificate_problem,
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
        check: network::peer_network,
    },
    Rule {
        codes: &[VerdictCode::EtcdMemberMismatch],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: member_mismatch::member_mismatch,
    },
    Rule {
        codes: &[VerdictCode::EtcdNoSpace],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: no_space::no_space,
    },
    Rule {
        codes: &[VerdictCode::EtcdSlowDisk],
        category: Category::Etcd,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::SlowFsync],
        check: slow_disk::slow_disk,
    },
    Rule {
        codes: &[VerdictCode::EtcdPeerNetworkPartial],
        category: Category::Network,
        yields_to_network: None,
        names_policies: &[VerdictCode::EtcdPeerNetworkPartial],
        says: &[],
        check: client_port_blocked::client_port_blocked,
    },
    Rule {
        codes: &[
            VerdictCode::ApiServerNotServing,
            VerdictCode::ApiEndpointUnreachable,
        ],
        category: Category::ApiServer,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: api_server::api_server,
    },
    Rule {
        codes: &[VerdictCode::Healthy],
        category: Category::Seen,
        yields_to_network: None,
        names_policies: &[],
        says: &[],
        check: seen::healthy,
    },
    Rule {
        codes: &[VerdictCode::Inconclusive],
        category: Category::Seen,
        yields_to_network: None,
        names_policies: &[],
        says: &[Said::DocumentProblems],
        check: |ctx| Some(seen::inconclusive(ctx)),
    },
];

impl VerdictCode {
    /// The rules that yield this code (two for `EtcdPeerNetworkPartial`: the network rule and
    /// the one for 2379 alone).
    fn rules(self) -> impl Iterator<Item = &'static Rule> {
        RULES.iter().filter(move |r| r.codes.contains(&self))
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

    /// Whether a rule about the paths between the members decides this code.
    pub fn is_network(self) -> bool {
        self.rules().any(|r| r.category == Category::Network)
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
    diagnose_at(facts, nodes, since, None, None)
}

/// The verdict on the nodes' probes, log lines counted within `since` of each node's probe.
/// `read_at` is when the plugin read the Supervisor (its own clock): the ages of the
/// Supervisor's conditions are measured against it. Without it, the median of the nodes'
/// clocks, else this machine's clock.
///
/// Nodes in a rollout (their Machine is being deleted or is still provisioning) are shown in the
/// matrices and logs but do not decide: the rules see the others only, and a note lists them.
///
/// `workload` is the workload API as the run checked it: `Healthy` needs it answering. `None`
/// leaves it out of the verdict (a caller that did not check it).
pub(crate) fn diagnose_at(
    facts: &ClusterFacts,
    nodes: &[NodeReport],
    since: std::time::Duration,
    read_at: Option<std::time::SystemTime>,
    workload: Option<&crate::workload::WorkloadApi>,
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
            let text = p.etcd.log_text()?;
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
    let deciding: Vec<&NodeReport> = nodes
        .iter()
        .filter(|n| !rollout.contains_key(&n.name))
        .collect();
    // Every node's paths, the rollout's too, for the report; the rules see the deciding nodes'.
    let matrices = vec![matrix::build(nodes, 2379), matrix::build(nodes, 2380)];
    let api_servers = deciding
        .iter()
        .filter_map(|n| {
            let p = n.probe()?;
            let read = crate::probe::apiserver::read(p.api_server.as_ref()?, p.clock_ms);
            Some((n.name.clone(), read))
        })
        .collect();
    let ctx = Ctx {
        facts,
        nodes: deciding,
        matrices: matrices
            .iter()
            .map(|m| deciding_view(m, |n| !rollout.contains_key(n)))
            .collect(),
        logs: logs
            .iter()
            .filter(|(n, _)| !rollout.contains_key(*n))
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect(),
        since,
        now,
        all: nodes,
        workload,
        api_servers,
        member_lists: Default::default(),
        membership: Default::default(),
    };
    let mut verdict = RULES
        .iter()
        .find_map(|rule| (rule.check)(&ctx))
        .unwrap_or_else(|| seen::inconclusive(&ctx));
    verdict = network::unless_network(&ctx, verdict);
    if verdict.code == VerdictCode::Healthy {
        // The endpoint answers through the others: a node's API server that does not serve is
        // still said (an expired certificate fails every client the load balancer sends there).
        verdict.notes.extend(api_server::warnings(&ctx));
    }
    // What can drop packets outside the guests depends on the Supervisor's networking stack.
    let location = super::location::locate(nodes, &ctx.matrices, facts.apis.network_stack.stack);
    if let Some(loc) = location.as_ref().filter(|_| verdict.code.is_network()) {
        verdict.evidence.extend(super::location::evidence(loc));
        let first = super::location::next_steps(loc);
        verdict.next_steps.splice(0..0, first);
    }
    // The failing paths exactly those between ESXi hosts (zones): the host transport, unless a
    // guest's own firewall may be what drops them (the location above says so first).
    let in_a_guest = location.as_ref().is_some_and(|l| {
        l.paths.iter().any(|p| {
            matches!(
                p.place,
                super::location::Place::InsideGuest | super::location::Place::MayBeInsideGuest
            )
        })
    });
    if verdict.code.is_network() && !in_a_guest {
        let cells: Vec<&Cell> = ctx.matrices.iter().flat_map(|m| m.peer_cells()).collect();
        if let Some((line, step)) = placement::transport(facts, &cells) {
            // Right after the line that names the failing paths.
            let at = verdict.evidence.len().min(1);
            verdict.evidence.insert(at, line);
            verdict.next_steps.insert(0, step);
        }
    }
    let member_nodes = member_nodes(&ctx);
    let etcd_metrics = super::metrics::read(nodes, &member_nodes);
    if verdict.code.is_network() {
        (verdict.evidence).extend(super::metrics::network_evidence(&etcd_metrics, &matrices));
    }
    let guard = guard_advice(facts, &mut verdict);
    let healthy = verdict.code == VerdictCode::Healthy;
    let timeline = super::timeline::build(facts, nodes, &logs, &matrices, &member_nodes);
    let (conditions, stale) =
        machine_condition_evidence(&ctx, &verdict.nodes, healthy, timeline.onset());
    verdict.evidence.extend(conditions);
    verdict.notes.extend(notes::notes(&ctx, &verdict));
    verdict.notes.extend(stale);
    Diagnosis {
        timeline,
        verdict,
        logs: logs
            .into_iter()
            .map(|(node, summary)| NodeLogs { node, summary })
            .collect(),
        matrices,
        location,
        guard,
        etcd_metrics,
    }
}

/// The node at each member ID: where the majority of the member lists put it
/// ([`members::Lists::node_of`]), else the node whose own metrics say it is that member. The
/// one view of membership the verdict, the metrics and the timeline share (no single list's
/// word, first come).
fn member_nodes(ctx: &Ctx) -> BTreeMap<crate::probe::output::MemberId, String> {
    let lists = ctx.member_lists();
    let mut out = BTreeMap::new();
    for id in lists.ids.keys() {
        if let Some(n) = lists.node_of(ctx.all, *id) {
            out.insert(*id, n.to_string());
        }
    }
    for (id, node) in super::metrics::own_ids(ctx.all) {
        out.entry(id).or_insert(node);
    }
    out
}

/// The remediation guard's lines, in the verdict ([`super::guard`]): what is armed and the
/// pause commands on a network verdict, the reminder to unpause on a Healthy one.
fn guard_advice(
    facts: &ClusterFacts,
    verdict: &mut Verdict,
) -> Option<super::guard::RemediationGuard> {
    let guard = super::guard::assess(facts)?;
    let advice = guard.advice(
        verdict.code.is_network(),
        verdict.code == VerdictCode::Healthy,
    );
    verdict.evidence.extend(advice.evidence);
    verdict.next_steps.splice(0..0, advice.first_steps);
    verdict.next_steps.extend(advice.next_steps);
    verdict.notes.extend(advice.notes);
    Some(guard)
}

/// The matrix of the nodes `keep` names, from the matrix of all of them: a cell depends only on
/// its two ends, so this is the matrix built over those nodes alone.
fn deciding_view(m: &Matrix, keep: impl Fn(&str) -> bool) -> Matrix {
    Matrix {
        port: m.port,
        nodes: m.nodes.iter().filter(|n| keep(n)).cloned().collect(),
        cells: m
            .cells
            .iter()
            .filter(|c| keep(&c.from) && keep(&c.to))
            .cloned()
            .collect(),
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod past_tests;

#[cfg(test)]
mod rollout_tests;

#[cfg(test)]
mod members_tests;

#[cfg(test)]
mod metrics_tests;

#[cfg(test)]
mod trust_tests;

#[cfg(test)]
mod location_tests;
