//! `analyse NEW --against GOOD`: what changed between two bundles of one cluster, as a support
//! engineer asks first ("what changed since it last worked?"). Both bundles are judged by this
//! plugin's rules first ([`super::Evidence::judge`], as `analyse` judges one), and the
//! comparison is made from the two [`DiagnoseReport`]s, the contract's values: nothing here
//! reads a bundle's stored `report.json` nor judges anything of its own, it only sets the two
//! judgements side by side.
//!
//! What is compared, each only where both bundles saw it (what one bundle did not see is a
//! note, never a change):
//! - the paths between the control-plane nodes, per pair and port (the 2379/2380 matrices), and
//!   the VMs' ports as the Supervisor (or this machine) saw them;
//! - the nodes, the etcd members, the leader;
//! - the rules that block paths: SecurityPolicies, NSX Manager's DFW, the guests' own firewalls;
//! - etcd's metrics, only where they moved enough to matter ([`moved`]);
//! - the KCP's conditions and the Machines' etcd conditions;
//! - the verdict, before → after.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::v1alpha2::{
    CellState, Condition, LeaderState, Member, NodeLogs, PathRef, PortState, QueryOutcome,
    VerdictCode,
};
use super::{DiagnoseReport, API_VERSION};

/// The comparison's `kind`.
pub(crate) const KIND: &str = "DiagnoseComparison";

/// `analyse NEW --against GOOD -o json|yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Comparison {
    /// `etcdnet.kubectl.io/v1alpha2`.
    pub api_version: String,
    /// Always `DiagnoseComparison`.
    pub kind: String,
    /// The vSphere Namespace of the cluster (the same in both bundles).
    pub namespace: String,
    /// The cluster (the same in both bundles).
    pub cluster: String,
    /// The older bundle (`--against GOOD`).
    pub before: ComparedRun,
    /// The newer bundle (`NEW`).
    pub after: ComparedRun,
    /// Paths between two nodes (matrix cells, ports 2379 and 2380) whose state changed, in
    /// port, FROM, TO order.
    pub paths: Vec<PathChange>,
    /// The VMs' ports as seen from outside them (`nodes[].supervisorReach`) whose state changed.
    pub supervisor_reach: Vec<ReachChange>,
    /// Control-plane nodes in only one of the bundles.
    pub nodes: Vec<NodeChange>,
    /// etcd members added, removed or changed (the union of the member lists the nodes gave).
    pub members: Vec<MemberChange>,
    /// The leader as the nodes' logs and metrics named it, before and after.
    pub leader: LeaderChange,
    /// Rules that block paths now and did not, that no longer do, or that block other paths.
    pub rules: Vec<RuleChange>,
    /// etcd metrics that moved enough to matter, per node seen in both.
    pub metrics: Vec<MetricChange>,
    /// KCP conditions and the Machines' etcd conditions whose status or reason changed.
    pub conditions: Vec<ConditionChange>,
    /// What could not be compared, and why (seen in only one bundle, another vantage).
    pub notes: Vec<String>,
    /// The exit code: the newer bundle's, as `analyse NEW` gives it.
    pub exit_code: i32,
}

/// One of the two bundles, as judged now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ComparedRun {
    /// The bundle's file, as given on the command line.
    pub bundle: String,
    /// When the bundle was written (its manifest's `created`).
    pub created: String,
    /// The plugin that wrote it.
    pub plugin_version: String,
    /// The Supervisor context its run used.
    pub context: String,
    /// The verdict this plugin gives it.
    pub verdict: VerdictCode,
    /// The verdict's one-line summary.
    pub summary: String,
}

/// How a path's or a port's state moved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum PathMove {
    /// It worked and no longer does.
    Broke,
    /// It failed and works again.
    Recovered,
    /// It failed both times, in another way (timeout → refused).
    Changed,
}

impl PathMove {
    fn of(was_ok: bool, is_ok: bool) -> Option<PathMove> {
        match (was_ok, is_ok) {
            (true, false) => Some(PathMove::Broke),
            (false, true) => Some(PathMove::Recovered),
            (false, false) => Some(PathMove::Changed),
            (true, true) => None,
        }
    }
}

/// One path between two nodes whose matrix cell changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathChange {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub before: CellState,
    pub after: CellState,
    pub change: PathMove,
}

/// One VM port, seen from outside the VM, whose state changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReachChange {
    pub node: String,
    pub port: u16,
    pub before: PortState,
    pub after: PortState,
    pub change: PathMove,
}

/// In only one of the bundles.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum Presence {
    /// Only in the newer bundle.
    Added,
    /// Only in the older bundle.
    Removed,
    /// In both, different.
    Changed,
}

/// A control-plane node in only one bundle (a Machine replaced, a node added).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeChange {
    pub name: String,
    /// `Added` or `Removed`.
    pub change: Presence,
}

/// An etcd member added, removed, or changed (name, peer URLs, learner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberChange {
    pub change: Presence,
    /// As the older bundle listed it; absent when added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Member>,
    /// As the newer bundle lists it; absent when removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Member>,
}

/// Which leader the nodes named.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum LeaderSeen {
    /// Every node that says names the same leader.
    One,
    /// Nodes name different leaders, or some name one and some none.
    Split,
    /// Every node that says has no leader.
    None,
    /// No log nor metric says.
    Unknown,
}

/// The leader in one bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClusterLeader {
    pub seen: LeaderSeen,
    /// The leaders named (by node name where a log says which member it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

/// How the leader moved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum LeaderMove {
    /// The same leader (or the same lack of one).
    Same,
    /// Another leader.
    Changed,
    /// There was one; now none (or the nodes disagree).
    Lost,
    /// There was none (or the nodes disagreed); now one.
    Regained,
    /// One of the bundles does not say.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeaderChange {
    pub before: ClusterLeader,
    pub after: ClusterLeader,
    pub change: LeaderMove,
}

/// Where a blocking rule lives.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum RuleSource {
    /// A SecurityPolicy's rule (`networkPolicy.evaluation.blocking`).
    SecurityPolicy,
    /// An NSX Manager DFW rule (`nsxManager.blocking`).
    NsxManager,
    /// A rule of a guest's own firewall (`packetLocation.paths[].rules`).
    GuestFirewall,
}

/// How a rule's matches moved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum RuleMove {
    /// It blocks paths now and blocked none before.
    NowMatches,
    /// It blocked paths before and blocks none now.
    NoLongerMatches,
    /// It blocks other paths than before.
    OtherPaths,
}

/// A rule whose blocking changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuleChange {
    pub source: RuleSource,
    /// The rule as the report names it (a SecurityPolicy's rule, a DFW rule's label, a guest's
    /// `node: tool table chain: rule`).
    pub rule: String,
    pub change: RuleMove,
    /// The paths it blocked before.
    pub before: Vec<PathRef>,
    /// The paths it blocks now.
    pub after: Vec<PathRef>,
}

/// Which metric moved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub(crate) enum MetricName {
    /// `etcd_server_leader_changes_seen_total`.
    LeaderChanges,
    /// `etcd_network_peer_sent_failures_total`, summed over the node's peers.
    FailedSends,
    /// `etcd_disk_wal_fsync_duration_seconds` p99, ms.
    WalFsyncP99Ms,
    /// `etcd_disk_backend_commit_duration_seconds` p99, ms.
    BackendCommitP99Ms,
    /// `etcd_mvcc_db_total_size_in_bytes`.
    DbSizeBytes,
}

/// One node's metric that moved enough to matter ([`moved`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetricChange {
    pub node: String,
    pub metric: MetricName,
    pub before: u64,
    pub after: u64,
}

/// A condition's word in one bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConditionState {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A KCP or Machine condition whose status or reason changed (or that one bundle lacks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConditionChange {
    /// `KubeadmControlPlane <name>` or `Machine <name>`.
    pub object: String,
    /// The condition's type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Absent when the older bundle lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ConditionState>,
    /// Absent when the newer bundle lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ConditionState>,
}

/// What `--against` needs of a bundle besides its report: the file and its manifest's words.
#[derive(Debug, Clone)]
pub(crate) struct Judged<'a> {
    pub bundle: String,
    pub created: String,
    pub plugin_version: String,
    pub report: &'a DiagnoseReport,
}

impl Judged<'_> {
    fn run(&self) -> ComparedRun {
        ComparedRun {
            bundle: self.bundle.clone(),
            created: self.created.clone(),
            plugin_version: self.plugin_version.clone(),
            context: self.report.header.context.clone(),
            verdict: self.report.verdict.code,
            summary: self.report.verdict.summary.clone(),
        }
    }
}

impl Comparison {
    /// The changes from `before` (GOOD) to `after` (NEW). The two are of one cluster (the
    /// caller checked); nothing is judged here.
    pub fn of(before: &Judged, after: &Judged) -> Comparison {
        let (b, a) = (before.report, after.report);
        let mut notes = Vec::new();
        if b.header.context != a.header.context {
            notes.push(format!(
                "the runs used different Supervisor contexts ({} then {})",
                b.header.context, a.header.context
            ));
        }
        let paths = paths(b, a, &mut notes);
        let supervisor_reach = reach(b, a, &mut notes);
        let members = members(b, a, &mut notes);
        let rules = rules(b, a, &mut notes);
        Comparison {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            namespace: a.header.namespace.clone(),
            cluster: a.header.cluster.name.clone(),
            before: before.run(),
            after: after.run(),
            paths,
            supervisor_reach,
            nodes: nodes(b, a),
            members,
            leader: leader_change(leader(b), leader(a)),
            rules,
            metrics: metrics(b, a),
            conditions: conditions(b, a),
            notes,
            exit_code: a.result.exit_code,
        }
    }

    /// Nothing changed but (perhaps) the time: every section empty, the verdict and the leader
    /// the same.
    #[cfg(test)]
    pub fn is_unchanged(&self) -> bool {
        self.paths.is_empty()
            && self.supervisor_reach.is_empty()
            && self.nodes.is_empty()
            && self.members.is_empty()
            && matches!(self.leader.change, LeaderMove::Same | LeaderMove::Unknown)
            && self.rules.is_empty()
            && self.metrics.is_empty()
            && self.conditions.is_empty()
            && self.before.verdict == self.after.verdict
    }
}

/// Every peer cell (FROM ≠ TO) known in both bundles whose state changed; cells known in only
/// one are counted in a note.
fn paths(b: &DiagnoseReport, a: &DiagnoseReport, notes: &mut Vec<String>) -> Vec<PathChange> {
    let mut out = Vec::new();
    let mut one_sided = 0usize;
    for m in &a.matrices {
        let Some(old) = b.matrices.iter().find(|o| o.port == m.port) else {
            continue;
        };
        let old = old.index();
        for c in m.cells.iter().filter(|c| c.from != c.to) {
            let was = old
                .cell(&c.from, &c.to)
                .map(|o| o.state)
                .filter(|s| s.is_known());
            match (was, c.state.is_known()) {
                (Some(was), true) if was != c.state => {
                    if let Some(change) = PathMove::of(was.is_ok(), c.state.is_ok()) {
                        out.push(PathChange {
                            port: m.port,
                            from: c.from.clone(),
                            to: c.to.clone(),
                            before: was,
                            after: c.state,
                            change,
                        });
                    }
                }
                (Some(_), false) | (None, true) => one_sided += 1,
                _ => {}
            }
        }
    }
    if one_sided > 0 {
        notes.push(format!(
            "{one_sided} path(s) were probed in only one of the bundles: not compared"
        ));
    }
    out.sort_by(|x, y| (x.port, &x.from, &x.to).cmp(&(y.port, &y.from, &y.to)));
    out
}

/// The VMs' ports from outside, per node in both and seen from the same place.
fn reach(b: &DiagnoseReport, a: &DiagnoseReport, notes: &mut Vec<String>) -> Vec<ReachChange> {
    let mut out = Vec::new();
    let mut other_vantage = Vec::new();
    for n in &a.nodes {
        let Some(o) = b.nodes.iter().find(|o| o.name == n.name) else {
            continue;
        };
        if n.supervisor_reach.is_empty() || o.supervisor_reach.is_empty() {
            continue;
        }
        // The jumpbox sees the VMs from the Supervisor, ssh from this machine: a port that
        // opens from one and not the other is a difference of place, not a change.
        if n.reach_from != o.reach_from {
            other_vantage.push(n.name.clone());
            continue;
        }
        for p in &n.supervisor_reach {
            let Some(was) = o.supervisor_reach.iter().find(|q| q.port == p.port) else {
                continue;
            };
            if was.state == p.state {
                continue;
            }
            let open = |s: PortState| s == PortState::Open;
            if let Some(change) = PathMove::of(open(was.state), open(p.state)) {
                out.push(ReachChange {
                    node: n.name.clone(),
                    port: p.port,
                    before: was.state,
                    after: p.state,
                    change,
                });
            }
        }
    }
    if !other_vantage.is_empty() {
        notes.push(format!(
            "the ports of {} were seen from another place in each bundle: not compared",
            other_vantage.join(", ")
        ));
    }
    out
}

fn nodes(b: &DiagnoseReport, a: &DiagnoseReport) -> Vec<NodeChange> {
    let names = |r: &DiagnoseReport| -> BTreeSet<String> {
        r.nodes.iter().map(|n| n.name.clone()).collect()
    };
    let (was, is) = (names(b), names(a));
    let removed = was.difference(&is).map(|n| NodeChange {
        name: n.clone(),
        change: Presence::Removed,
    });
    let added = is.difference(&was).map(|n| NodeChange {
        name: n.clone(),
        change: Presence::Added,
    });
    removed.chain(added).collect()
}

/// The union of the member lists the nodes gave, by ID (a member never started has no name
/// yet, but has its ID); None when no node gave one.
fn member_list(r: &DiagnoseReport) -> Option<BTreeMap<String, Member>> {
    let mut lists = r
        .nodes
        .iter()
        .filter_map(|n| n.probe.as_ref())
        .filter(|p| p.members.outcome == QueryOutcome::Ok)
        .peekable();
    lists.peek()?;
    let mut all = BTreeMap::new();
    for p in lists {
        for m in &p.members.members {
            let key =
                m.id.map(|id| id.to_string())
                    .or_else(|| m.name.clone())
                    .unwrap_or_default();
            all.entry(key).or_insert_with(|| m.clone());
        }
    }
    Some(all)
}

fn members(b: &DiagnoseReport, a: &DiagnoseReport, notes: &mut Vec<String>) -> Vec<MemberChange> {
    let (Some(was), Some(is)) = (member_list(b), member_list(a)) else {
        if member_list(b).is_some() || member_list(a).is_some() {
            notes.push(
                "the etcd member list was read in only one of the bundles: members not compared"
                    .into(),
            );
        }
        return Vec::new();
    };
    let mut out: Vec<MemberChange> = diff(&was, &is)
        .map(|(_, before, after)| MemberChange {
            change: match (before, after) {
                (Some(_), Some(_)) => Presence::Changed,
                (Some(_), None) => Presence::Removed,
                _ => Presence::Added,
            },
            before: before.cloned(),
            after: after.cloned(),
        })
        .collect();
    // The members gone or changed first, then the new ones (a stable sort: by ID within).
    out.sort_by_key(|m| m.change == Presence::Added);
    out
}

/// What differs between two maps of one kind of fact, in key order: each key whose value is
/// not the same in both (or that only one has), with its value on each side.
fn diff<'a, K: Ord, V: PartialEq>(
    was: &'a BTreeMap<K, V>,
    is: &'a BTreeMap<K, V>,
) -> impl Iterator<Item = (&'a K, Option<&'a V>, Option<&'a V>)> {
    let keys: BTreeSet<&K> = was.keys().chain(is.keys()).collect();
    keys.into_iter()
        .map(|k| (k, was.get(k), is.get(k)))
        .filter(|(_, b, a)| b != a)
}

/// The leader as the nodes' logs name it (the leader each log last named, by node name where a
/// log says which member it is), and no leader where a node's metrics say `has_leader 0`.
pub(crate) fn leader(r: &DiagnoseReport) -> ClusterLeader {
    let mut names = BTreeSet::new();
    let mut none = false;
    for l in &r.logs {
        match l.summary.leader.as_ref() {
            Some(v) if v.state == LeaderState::NoLeader => none = true,
            Some(v) => {
                if let Some(id) = v.leader_id.as_deref() {
                    names.insert(NodeLogs::member_name(&r.logs, id));
                }
            }
            None => {}
        }
    }
    none |= r.etcd_metrics.iter().any(|m| m.has_leader == Some(false));
    let seen = match (names.len(), none) {
        (0, false) => LeaderSeen::Unknown,
        (0, true) => LeaderSeen::None,
        (1, false) => LeaderSeen::One,
        _ => LeaderSeen::Split,
    };
    ClusterLeader {
        seen,
        names: names.into_iter().collect(),
    }
}

fn leader_change(before: ClusterLeader, after: ClusterLeader) -> LeaderChange {
    use LeaderSeen as S;
    let change = match (before.seen, after.seen) {
        // Nothing said either time is not "the same leader".
        (S::Unknown, _) | (_, S::Unknown) => LeaderMove::Unknown,
        _ if before == after => LeaderMove::Same,
        (S::One, S::One) => LeaderMove::Changed,
        (S::One, _) => LeaderMove::Lost,
        (_, S::One) => LeaderMove::Regained,
        // Split to none, none to split, split to another split.
        _ => LeaderMove::Changed,
    };
    LeaderChange {
        before,
        after,
        change,
    }
}

/// The blocking rules of one source in one bundle: each rule's words and the paths it blocks.
type PathsByRule = BTreeMap<String, BTreeSet<PathRef>>;

/// SecurityPolicies' and NSX Manager's blocking rules (each compared only when both bundles
/// evaluated that source), and the guests' own firewall rules on failing paths.
fn rules(b: &DiagnoseReport, a: &DiagnoseReport, notes: &mut Vec<String>) -> Vec<RuleChange> {
    let security = |r: &DiagnoseReport| -> Option<PathsByRule> {
        r.network_policy.as_ref().map(|n| {
            n.evaluation
                .blocking
                .iter()
                .map(|x| (x.rule.text(), x.paths.iter().cloned().collect()))
                .collect()
        })
    };
    let dfw = |r: &DiagnoseReport| -> Option<PathsByRule> {
        r.nsx_manager.as_ref().map(|n| {
            n.blocking
                .iter()
                .map(|x| (x.rule.label(), x.paths.iter().cloned().collect()))
                .collect()
        })
    };
    // A guest's rules are read on every node whose probe read its firewall; a rule is named
    // on the paths whose packets it can drop.
    let guest = |r: &DiagnoseReport| -> Option<PathsByRule> {
        r.packet_location.as_ref().map(|l| {
            let mut out = PathsByRule::new();
            for p in &l.paths {
                for rule in &p.rules {
                    let words = format!(
                        "{}: {} {} {}: {}",
                        rule.node, rule.tool, rule.table, rule.chain, rule.text
                    );
                    out.entry(words).or_default().insert(PathRef {
                        port: p.port,
                        from: p.from.clone(),
                        to: p.to.clone(),
                    });
                }
            }
            out
        })
    };
    let mut out = Vec::new();
    for (source, of, what) in [
        (
            RuleSource::SecurityPolicy,
            &security as &dyn Fn(&DiagnoseReport) -> Option<PathsByRule>,
            "SecurityPolicies were evaluated",
        ),
        (
            RuleSource::NsxManager,
            &dfw,
            "NSX Manager was read (--nsx-manager)",
        ),
        (
            RuleSource::GuestFirewall,
            &guest,
            "the guests' firewalls were read",
        ),
    ] {
        match (of(b), of(a)) {
            (Some(was), Some(is)) => out.extend(rule_changes(source, &was, &is)),
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => {
                // Empty on the side that has it: nothing blocked, nothing to miss.
                let side = if of(b).is_some() { "older" } else { "newer" };
                let had = of(b).or(of(a)).unwrap_or_default();
                if !had.is_empty() {
                    notes.push(format!(
                        "{what} in only the {side} bundle: those rules not compared"
                    ));
                }
            }
        }
    }
    out
}

fn rule_changes(source: RuleSource, was: &PathsByRule, is: &PathsByRule) -> Vec<RuleChange> {
    let empty = BTreeSet::new();
    diff(was, is)
        .filter_map(|(w, before, after)| {
            let (before, after) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
            let change = match (before.is_empty(), after.is_empty()) {
                (true, false) => RuleMove::NowMatches,
                (false, true) => RuleMove::NoLongerMatches,
                (false, false) if before != after => RuleMove::OtherPaths,
                _ => return None,
            };
            Some(RuleChange {
                source,
                rule: w.clone(),
                change,
                before: before.iter().cloned().collect(),
                after: after.iter().cloned().collect(),
            })
        })
        .collect()
}

/// A p99 latency moved when it changed by at least this much: etcd's own guidance reads a WAL
/// fsync p99 under 10 ms as healthy (etcd docs, "Hardware recommendations" / the
/// `wal_fsync_duration_seconds` FAQ), so a move smaller than that is no news.
const LATENCY_MS: u64 = 10;
/// The database size moved when it changed by at least a tenth and at least this much:
/// compaction and defragmentation move it by less all day.
const DB_BYTES: u64 = 8 * 1024 * 1024;

/// Whether `before` → `after` of `metric` is a move worth a line. Counters (leader changes,
/// failed sends) since the older bundle: any increase is news, and a decrease is a restart of
/// etcd (its counters start again at 0). Latencies: [`LATENCY_MS`] and at least half again
/// (p99 comes from histogram buckets, which double: one bucket up is twice). The database:
/// [`DB_BYTES`] and a tenth.
pub(crate) fn moved(metric: MetricName, before: u64, after: u64) -> bool {
    let (lo, hi) = (before.min(after), before.max(after));
    match metric {
        MetricName::LeaderChanges | MetricName::FailedSends => before != after,
        MetricName::WalFsyncP99Ms | MetricName::BackendCommitP99Ms => {
            hi - lo >= LATENCY_MS && hi * 2 >= lo * 3
        }
        MetricName::DbSizeBytes => hi - lo >= DB_BYTES && (hi - lo) * 10 >= lo,
    }
}

fn metrics(b: &DiagnoseReport, a: &DiagnoseReport) -> Vec<MetricChange> {
    let mut out = Vec::new();
    for m in &a.etcd_metrics {
        let Some(o) = b.etcd_metrics.iter().find(|o| o.node == m.node) else {
            continue;
        };
        let failed = |x: &super::v1alpha2::EtcdMetrics| -> Option<u64> {
            let known: Vec<u64> = x.peers.iter().filter_map(|p| p.sent_failures).collect();
            (!known.is_empty()).then(|| known.iter().sum())
        };
        let p99 = |l: &Option<super::v1alpha2::Latency>| l.as_ref().and_then(|l| l.p99_ms);
        for (metric, before, after) in [
            (
                MetricName::LeaderChanges,
                o.leader_changes,
                m.leader_changes,
            ),
            (MetricName::FailedSends, failed(o), failed(m)),
            (
                MetricName::WalFsyncP99Ms,
                p99(&o.wal_fsync),
                p99(&m.wal_fsync),
            ),
            (
                MetricName::BackendCommitP99Ms,
                p99(&o.backend_commit),
                p99(&m.backend_commit),
            ),
            (MetricName::DbSizeBytes, o.db_size_bytes, m.db_size_bytes),
        ] {
            if let (Some(before), Some(after)) = (before, after) {
                if moved(metric, before, after) {
                    out.push(MetricChange {
                        node: m.node.clone(),
                        metric,
                        before,
                        after,
                    });
                }
            }
        }
    }
    out
}

/// Each object's conditions by (object, type): the KCP's and each Machine's etcd conditions.
fn condition_map(r: &DiagnoseReport) -> BTreeMap<(String, String), ConditionState> {
    let mut out = BTreeMap::new();
    let mut put = |object: String, cs: &[Condition]| {
        for c in cs {
            out.insert(
                (object.clone(), c.kind.clone()),
                ConditionState {
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                },
            );
        }
    };
    if let Some(kcp) = r.header.control_plane.kcp.as_ref() {
        put(format!("KubeadmControlPlane {}", kcp.name), &kcp.conditions);
    }
    for n in &r.nodes {
        if let Some(m) = n.machine.as_ref() {
            put(format!("Machine {}", m.name), &m.etcd_conditions);
        }
    }
    out
}

/// The conditions of the objects in both bundles: a Machine replaced is a node added and one
/// removed ([`nodes`]), not a condition change per condition of each.
fn conditions(b: &DiagnoseReport, a: &DiagnoseReport) -> Vec<ConditionChange> {
    let (was, is) = (condition_map(b), condition_map(a));
    let objects = |m: &BTreeMap<(String, String), ConditionState>| -> BTreeSet<String> {
        m.keys().map(|(o, _)| o.clone()).collect()
    };
    let (was_objects, is_objects) = (objects(&was), objects(&is));
    diff(&was, &is)
        .filter(|(k, _, _)| was_objects.contains(&k.0) && is_objects.contains(&k.0))
        .map(|(k, before, after)| ConditionChange {
            object: k.0.clone(),
            kind: k.1.clone(),
            before: before.cloned(),
            after: after.cloned(),
        })
        .collect()
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
