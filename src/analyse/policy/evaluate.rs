//! The evaluation: for TCP 2379 and 2380 and every ordered pair of control-plane VMs, the egress
//! check at FROM and the ingress check at TO, each the first matching rule in NSX's order. The
//! rules it follows are in the module `policy` and docs/nsx-policy.md.
//!
//! Bounded whatever the namespace holds: the policies that can apply are sorted (those that can
//! touch etcd's ports, then those in effect, each by priority) before they are cut to
//! [`MAX_POLICIES`]; the rules that cover a path without deciding it are aggregated per rule
//! ([`CoveringRule`], at most [`MAX_COVERING`]).

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::model::{
    clip, Action, Direction, NsxGroup, Peer, Policy, PolicyObject, PortSpec, Realization,
    RealizedState, Rule, Target, MAX_NAME_CHARS, MAX_RULES,
};
use super::validate::validate;
use crate::analyse::firewall::{self, Hit, Then, TierHit, Verdict};
pub use crate::analyse::firewall::{PathRef, Side, Tri, ETCD_PORTS, MAX_VMS};
use crate::selector::Selector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one check comes to: the first matching rule in effect, no visible rule, or cannot
/// decide (`why` names its policy).
pub type SideOutcome = firewall::SideOutcome<RuleRef>;
/// What one path (port, FROM → TO) comes to, both checks together.
pub type PathOutcome = firewall::PathOutcome<RuleRef>;
/// A Drop/Reject rule that blocks paths now, with those paths.
pub type BlockingRule = firewall::Blocking<RuleRef>;
/// One path's evaluation, with the rule not in effect that would decide a check once realized.
pub type PathEvaluation = firewall::PathEvaluation<RuleRef>;

impl Verdict for RuleRef {
    fn effect(&self) -> Action {
        self.action
    }
}

/// At most this many policies that can apply are evaluated, the first by priority; the others
/// are counted, and a check they could decide is "cannot decide".
pub const MAX_POLICIES: usize = 64;
// The SecurityPolicies stay under the engine's one bound on rules evaluated.
const _: () = assert!(MAX_POLICIES * MAX_RULES <= firewall::MAX_RULES);
/// At most this many covering rules are listed (the rest counted).
pub const MAX_COVERING: usize = 32;
/// At most this many warnings are kept (the rest counted).
pub const MAX_WARNINGS: usize = 8;
/// At most this many policies set aside are listed (the rest counted).
pub const MAX_SET_ASIDE: usize = 16;
/// At most this many things a policy's summary says could not be read (then a count).
pub const MAX_UNREADABLE: usize = 8;
/// Example checks kept per covering rule.
pub const COVERING_EXAMPLES: usize = 3;

/// A control-plane VM as the evaluation sees it: its name, its labels (nsx-operator copies a
/// VirtualMachine's labels onto its NSX port) and its addresses (for `ipBlocks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVm {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub ips: Vec<IpAddr>,
}

/// Everything the evaluation needs, as values.
#[derive(Debug, Clone, Default)]
pub struct PolicyInput {
    /// The vSphere Namespace the cluster's VMs live in.
    pub namespace: String,
    /// That Namespace's labels (for `namespaceSelector`; Kubernetes adds
    /// `kubernetes.io/metadata.name` itself).
    pub namespace_labels: BTreeMap<String, String>,
    /// The SecurityPolicies read, of either group: the namespace's, and those of other
    /// namespaces the read passed on (the evaluation keeps only those that can apply).
    pub policies: Vec<PolicyObject>,
    /// The cluster's control-plane VMs.
    pub vms: Vec<PolicyVm>,
    /// The group nsx-operator reconciles (`crd.nsx.vmware.com` on VPC networking, else
    /// `nsx.vmware.com`); None when it cannot be told: both count.
    pub live_group: Option<NsxGroup>,
    /// What `live_group` was told from, for the output.
    pub networking_basis: Option<String>,
    /// SecurityPolicies the read could not keep (a bound): any might come first.
    pub policies_left_out: usize,
}

/// A rule, named as an admin finds it: policy, index in `spec.rules`, priority, action, direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    pub namespace: String,
    pub policy: String,
    pub group: NsxGroup,
    pub priority: u32,
    pub rule_index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_name: Option<String>,
    pub action: Action,
    pub direction: Direction,
}

impl RuleRef {
    /// `ns/name rules[i] (name)`: for text.
    pub fn label(&self) -> String {
        let name = self.rule_name.as_ref().map(|n| format!(" ({n})"));
        format!(
            "{}/{} rules[{}]{}",
            self.namespace,
            self.policy,
            self.rule_index,
            name.unwrap_or_default()
        )
    }
}

/// Why a Drop/Reject rule that covers a path does not decide it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum CoverReason {
    /// A rule in effect that comes first allows the path.
    Shadowed { by: RuleRef },
    // Not realized (Ready False or none yet) or refused by nsx-operator's validation;
    // `would_decide` as far as the visible policies tell (an equal priority: yes).
    /// Its policy is not in effect as written; `wouldDecide`: it would decide the check once realized.
    NotRealized {
        state: RealizedState,
        would_decide: bool,
    },
}

/// One check a covering rule covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoveredCheck {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub side: Side,
}

/// A Drop/Reject rule that matches checks without deciding them, for one reason, with examples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoveringRule {
    pub rule: RuleRef,
    pub reason: CoverReason,
    /// How many checks it covers.
    pub checks: usize,
    /// How many paths those checks are on.
    pub paths: usize,
    /// A few of the checks.
    pub examples: Vec<CoveredCheck>,
}

/// A Drop/Reject rule that would block 2379/2380 between the VMs but does not now, with its paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyWarning {
    pub rule: RuleRef,
    pub reason: CoverReason,
    /// The policy's Ready reason and message when it is not in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realization: Option<Realization>,
    /// nsx-operator's validation errors: the policy cannot be realized as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    pub paths: Vec<PathRef>,
}

/// One policy as read: who it is, whether NSX realized it, which VMs it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicySummary {
    pub namespace: String,
    pub name: String,
    pub group: NsxGroup,
    /// Absent: `spec.priority` could not be read.
    pub priority: Option<u32>,
    pub realization: Realization,
    /// Counted in the evaluation: realized (Ready True) and valid.
    pub in_effect: bool,
    /// What nsx-operator's validation refuses in it: it cannot be realized as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    // Its policy-level `appliedTo`, else any rule-level one.
    /// The VMs its `appliedTo` selects.
    pub applies_to: Vec<String>,
    /// The VMs for which that cannot be decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applies_to_undecided: Vec<String>,
    pub rule_count: usize,
    /// What could not be read (`rules[2]: ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A policy of the cluster's namespace that is not evaluated, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAside {
    pub namespace: String,
    pub name: String,
    pub group: NsxGroup,
    pub realization: Realization,
    pub why: String,
}

// Stable order: policies by priority, namespace, name, group; paths by port, FROM, TO.
/// The SecurityPolicies evaluated against the control-plane VMs on TCP 2379/2380.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    /// The vSphere Namespace of the cluster's VMs.
    pub namespace: String,
    /// The control-plane VMs evaluated, sorted.
    pub vms: Vec<String>,
    /// The group nsx-operator reconciles (absent: not told, both count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_group: Option<NsxGroup>,
    /// What the live group was told from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking_basis: Option<String>,
    /// The policies that can apply to the VMs, evaluated (bounded).
    pub policies: Vec<PolicySummary>,
    /// The namespace's policies of the group nsx-operator does not reconcile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<SetAside>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub set_aside_not_listed: usize,
    // Another namespace's without a cluster-wide `appliedTo`, another group's, selecting none.
    /// Policies read that cannot apply to these VMs.
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub policies_not_applying: usize,
    // Past [`MAX_POLICIES`] by priority, or left out by the read.
    /// Policies that can apply but were not evaluated (a check they could decide is undecided).
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub policies_not_read: usize,
    /// Every path, by port, FROM, TO.
    pub paths: Vec<PathEvaluation>,
    /// The rules that block paths now, each with its paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocking: Vec<BlockingRule>,
    /// Drop/Reject rules that would block paths but do not now (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PolicyWarning>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub warnings_not_listed: usize,
    /// Every Drop/Reject rule that covers checks without deciding them, per rule and reason (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covering: Vec<CoveringRule>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub covering_not_listed: usize,
    /// What the evaluation assumes where upstream cannot be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Said when an `nsx.vmware.com` (T1/NCP) policy is evaluated: on T1 the VMs' segment ports are
/// created and tagged by NCP, whose source is not public, so what a selector meets there is not
/// in nsx-operator's source.
pub const T1_TAGGING_NOTE: &str = "nsx.vmware.com (T1/NCP): NCP, whose source is not public, creates and tags the VMs' segment ports; the evaluation assumes they carry the VirtualMachines' labels and the namespace's and cluster's tags, as nsx-operator's selectors expect (builder.go): NSX Manager shows the ports' real tags";

impl PolicyEvaluation {
    /// The evaluation of one path.
    pub fn path(&self, port: u16, from: &str, to: &str) -> Option<&PathEvaluation> {
        firewall::find_path(&self.paths, port, from, to)
    }

    /// The Drop/Reject rule that blocks this path, if a visible one does.
    pub fn blocking_rule(&self, port: u16, from: &str, to: &str) -> Option<&RuleRef> {
        self.path(port, from, to)?.outcome.blocking_rule()
    }

    /// Every rule that blocks paths now, each with its paths, in path order.
    pub fn blocking(&self) -> &[BlockingRule] {
        &self.blocking
    }

    /// The policies that select at least one of the VMs (`status -o wide`).
    pub fn selecting_vms(&self) -> impl Iterator<Item = &PolicySummary> {
        self.policies.iter().filter(|p| !p.applies_to.is_empty())
    }

    /// The paths whose outcome cannot be decided.
    pub fn undecided(&self) -> impl Iterator<Item = &PathEvaluation> {
        let undecided = |p: &&PathEvaluation| matches!(p.outcome, PathOutcome::CannotDecide { .. });
        self.paths.iter().filter(undecided)
    }

    /// Drop/Reject rules that would block 2379/2380 between the VMs but do not now (shadowed, or
    /// not in effect and deciding once realized), one per rule and reason.
    pub fn warnings(&self) -> &[PolicyWarning] {
        &self.warnings
    }

    /// The summary of the policy a rule belongs to.
    pub fn policy_of(&self, r: &RuleRef) -> Option<&PolicySummary> {
        self.policies
            .iter()
            .find(|p| p.namespace == r.namespace && p.name == r.policy && p.group == r.group)
    }
}

/// What a check is evaluated in: the namespace of the VMs and its labels.
struct Ctx<'a> {
    namespace: &'a str,
    namespace_labels: &'a BTreeMap<String, String>,
}

impl Ctx<'_> {
    /// Whether `targets` select `vm`: a vmSelector in the policy's own namespace (the namespace
    /// UID tag), `{}` every port; a podSelector never a VM.
    fn targets(&self, ts: &[Target], policy_ns: &str, vm: &PolicyVm) -> Tri {
        Tri::from_bool(ts.iter().any(|t| match t {
            Target::Vms(s) => policy_ns == self.namespace && s.matches_as_nsx(&vm.labels),
            Target::Pods(_) | Target::VmsAndPods => false,
            Target::Everything => true,
        }))
    }

    /// A rule's scope: policy-level `appliedTo` when set, else the rule's own; neither is
    /// refused by nsx-operator ("appliedTo needs to be set in either spec or rules"): nothing.
    fn applied(&self, p: &Policy, rule: &Rule, vm: &PolicyVm) -> Tri {
        match (&p.applied_to, &rule.applied_to) {
            (Err(e), _) => Tri::Unknown(format!("spec.appliedTo: {e}")),
            (Ok(ts), _) if !ts.is_empty() => self.targets(ts, &p.namespace, vm),
            (Ok(_), Err(e)) => Tri::Unknown(format!("rules[{}]: {e}", rule.index)),
            (Ok(_), Ok(ts)) => self.targets(ts, &p.namespace, vm),
        }
    }

    /// Whether the policy may take `vm` for any of its rules.
    fn may_apply(&self, p: &Policy, vm: &PolicyVm) -> Tri {
        match &p.applied_to {
            Ok(ts) if ts.is_empty() => {
                match Tri::any(p.rules.iter().map(|r| self.applied(p, r, vm))) {
                    Tri::No if p.rules_truncated => Tri::Unknown(truncated_text()),
                    t => t,
                }
            }
            Ok(ts) => self.targets(ts, &p.namespace, vm),
            Err(e) => Tri::Unknown(e.clone()),
        }
    }

    /// A `namespaceSelector` is realized as tag conditions on the namespace's segment
    /// (builder.go `updatePeerExpressions`, member type Segment): NSX's matching.
    fn peer(&self, peer: &Peer, policy_ns: &str, vm: &PolicyVm) -> Tri {
        let ns = |n: &Selector| n.matches_as_nsx(self.namespace_labels);
        let by_selector = match (&peer.vms, &peer.pods, &peer.namespaces) {
            (Some(v), None, None) => policy_ns == self.namespace && v.matches_as_nsx(&vm.labels),
            (Some(v), None, Some(n)) => ns(n) && v.matches_as_nsx(&vm.labels),
            // Pods only, never these VMs.
            (_, Some(_), _) => false,
            // Every Pod and VM of the selected namespaces (`{}`: of every namespace).
            (None, None, Some(n)) => ns(n),
            (None, None, None) => false,
        };
        let inside = (vm.ips.iter())
            .filter(|ip| peer.ip_blocks.iter().any(|b| b.contains(**ip)))
            .count();
        let by_ip = match (peer.ip_blocks.is_empty(), vm.ips.len()) {
            (true, _) => Tri::No,
            (false, 0) => Tri::Unknown(format!("no IP is known for VM {} (ipBlocks)", vm.name)),
            (false, n) if inside == n || inside == 0 => Tri::from_bool(inside == n),
            _ => Tri::Unknown(format!(
                "VM {} has addresses inside and outside the ipBlocks",
                vm.name
            )),
        };
        Tri::any([by_ip, Tri::from_bool(by_selector)])
    }
}

fn port_matches(ports: &[PortSpec], port: u16) -> Tri {
    if ports.is_empty() {
        return Tri::Yes;
    }
    Tri::any(ports.iter().map(|p| match *p {
        // Resolved to Pods' IPs only (expand.go): never a VM's port, whatever its protocol.
        PortSpec::Named { .. } => Tri::No,
        PortSpec::Numbers { ref protocol, .. } if protocol != "TCP" => match protocol.as_str() {
            "UDP" | "SCTP" => Tri::No,
            _ => Tri::Unknown("a protocol other than TCP, UDP or SCTP".to_string()),
        },
        PortSpec::Numbers { start, end, .. } => match end {
            None => Tri::from_bool(start == 0 || start == port),
            Some(end) if end < start => Tri::Unknown(format!("endPort {end} below port {start}")),
            Some(end) => Tri::from_bool(start <= port && port <= end),
        },
    }))
}

/// A SecurityPolicy rule as the engine sees it, what its match depends on computed once: its
/// ports against each of [`ETCD_PORTS`], its scope and its peers against each VM (the bounds
/// make rules times checks large). An In rule's peers are its source (its destination ANY), an
/// Out rule's its destination (its source ANY): builder.go, the module `policy`.
struct Facts {
    index: usize,
    direction: Result<Direction, String>,
    action: Result<Action, String>,
    ports: [Tri; ETCD_PORTS.len()],
    applied: Vec<Tri>,
    peers: Vec<Tri>,
}

impl Facts {
    fn new(p: &Policy, rule: &Rule, vms: &[PolicyVm], ctx: &Ctx) -> Facts {
        let at = |t: Tri| match t {
            Tri::Unknown(w) => Tri::Unknown(format!("rules[{}]: {w}", rule.index)),
            t => t,
        };
        let err = |e: &String| at(Tri::Unknown(e.clone()));
        let peers = |vm| match &rule.peers {
            Ok(peers) if peers.is_empty() => Tri::Yes,
            Ok(peers) => at(Tri::any(
                peers.iter().map(|x| ctx.peer(x, &p.namespace, vm)),
            )),
            Err(e) => err(e),
        };
        Facts {
            index: rule.index,
            direction: rule.direction.clone(),
            action: rule.action.clone(),
            ports: ETCD_PORTS.map(|port| {
                rule.ports
                    .as_ref()
                    .map_or_else(err, |ps| at(port_matches(ps, port)))
            }),
            applied: vms.iter().map(|vm| ctx.applied(p, rule, vm)).collect(),
            peers: vms.iter().map(peers).collect(),
        }
    }

    fn unknown(&self, e: &str) -> Tri {
        Tri::Unknown(format!("rules[{}]: {e}", self.index))
    }

    fn peers_if(&self, dir: Direction, vm: usize) -> Tri {
        match self.direction {
            Ok(d) if d == dir => self.peers[vm].clone(),
            _ => Tri::Yes,
        }
    }

    /// Drop or Reject, read.
    fn blocks(&self) -> bool {
        self.action.as_ref().is_ok_and(|a| *a != Action::Allow)
    }
}

impl firewall::Rule<usize> for Facts {
    fn direction(&self, side: Side) -> Tri {
        let want = match side {
            Side::Egress => Direction::Out,
            Side::Ingress => Direction::In,
        };
        match &self.direction {
            Ok(d) => Tri::from_bool(*d == want),
            Err(e) => self.unknown(e),
        }
    }
    fn service(&self, at: At) -> Tri {
        self.ports[ETCD_PORTS.iter().position(|p| *p == at.port).unwrap_or(0)].clone()
    }
    fn applies_to(&self, here: usize) -> Tri {
        self.applied[here].clone()
    }
    fn source(&self, src: usize) -> Tri {
        self.peers_if(Direction::In, src)
    }
    fn destination(&self, dst: usize) -> Tri {
        self.peers_if(Direction::Out, dst)
    }
    fn rest(&self) -> Tri {
        self.action
            .as_ref()
            .map_or_else(|e| self.unknown(e), |_| Tri::Yes)
    }
}

/// One check: the VMs as indexes in the sorted VMs.
type At = firewall::At<usize>;

/// One policy that can apply: read, validated, and (once kept under the bound) its rules' facts.
struct Kept {
    p: Policy,
    invalid: Vec<String>,
    /// Realized (Ready True) and valid: only these decide a check.
    in_effect: bool,
    /// Whether any rule could match TCP 2379 or 2380 at one of the VMs: one that cannot must not
    /// take a place under the bound.
    touches: bool,
    facts: Vec<Facts>,
}

impl Kept {
    fn priority(&self) -> u32 {
        *self.p.priority.as_ref().unwrap_or(&0)
    }

    fn rule_ref(&self, r: usize) -> Option<RuleRef> {
        let (p, rule) = (&self.p, &self.p.rules[r]);
        Some(RuleRef {
            namespace: p.namespace.clone(),
            policy: p.name.clone(),
            group: p.group,
            priority: self.priority(),
            rule_index: rule.index,
            rule_name: rule.name.clone(),
            action: *rule.action.as_ref().ok()?,
            direction: *rule.direction.as_ref().ok()?,
        })
    }

    /// The order policies are evaluated in: by priority (unreadable last), namespace, name, group.
    fn key(&self) -> (bool, Option<u32>, String, String, NsxGroup) {
        let p = &self.p;
        let prio = p.priority.as_ref().ok().copied();
        (
            prio.is_none(),
            prio,
            p.namespace.clone(),
            p.name.clone(),
            p.group,
        )
    }
}

/// `SecurityPolicy ns/name`: how every line names a policy.
fn who(p: &Policy) -> String {
    format!("SecurityPolicy {}/{}", p.namespace, p.name)
}

/// Said of a policy whose rules past [`MAX_RULES`] were not read.
fn truncated_text() -> String {
    format!("rules past the {MAX_RULES}th were not read")
}

/// Why a rule covers a check without deciding it, by index (cheap to aggregate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cover {
    /// Shadowed by the Allow at (policy, rule).
    Shadowed(usize, usize),
    /// Its policy is not in effect; whether it would decide once realized.
    NotRealized(bool),
}

/// What one covering rule covers for one reason: the checks, the paths (indexes, in order),
/// a few examples.
type Covered = (usize, Vec<usize>, Vec<CoveredCheck>);

/// Policies that can apply but were not evaluated: any check they could come first in cannot
/// be decided unless decided at a lower priority.
struct Unread {
    priority: u32,
    why: String,
}

/// One check over the kept policies (sorted by [`Kept::key`]): its outcome, and the blocking
/// rules that match it without deciding it as (policy, rule, why).
fn check(
    kept: &[Kept],
    unread: Option<&Unread>,
    at: At,
) -> (SideOutcome, Vec<(usize, usize, Cover)>) {
    use firewall::Rule as _;
    let matches: Vec<Vec<Tri>> = (kept.iter())
        .map(|k| k.facts.iter().map(|f| f.matches(at)).collect())
        .collect();
    let tail = truncated_text();
    // Each policy's first hit (its rules each alone, in list order).
    let hits: Vec<Option<Hit<Action>>> = (kept.iter().zip(&matches))
        .map(|(k, m)| {
            firewall::first_hit(
                (0..m.len()).map(|r| [r]),
                |r| m[r].clone(),
                |r| k.facts[r].action.clone().ok(),
                k.p.rules_truncated.then_some((m.len(), tail.as_str())),
            )
        })
        .collect();
    // A policy in effect whose priority cannot be read may come anywhere.
    let unordered = (0..kept.len())
        .find(|&i| kept[i].in_effect && kept[i].p.priority.is_err() && hits[i].is_some());
    // The priorities in effect, lowest first: one tier per priority; the first hit decides.
    let order: Vec<usize> = (0..kept.len())
        .filter(|&i| kept[i].in_effect && kept[i].p.priority.is_ok())
        .collect();
    let tiers = (order.chunk_by(|&a, &b| kept[a].priority() == kept[b].priority()))
        .map(|tier| tier.iter().map(|&i| (i, hits[i].clone())));
    let mut decided: Option<(u32, usize, usize)> = None; // (priority, policy, rule)
    let mut outcome = firewall::check(tiers, |hit| {
        let (pi, ri) = hit.first();
        let prio = kept[pi].priority();
        decided = Some((prio, pi, ri));
        Then::Decide(match hit {
            TierHit::Cannot { at, hit, .. } => {
                // A SecurityPolicy's rules are each alone: never split.
                let why = if let Hit::Unknown(_, why) = hit { why } else { String::new() };
                let why = format!("{}: {why} (priority {prio})", who(&kept[at].p));
                SideOutcome::CannotDecide { why }
            }
            TierHit::Split { other, .. } => SideOutcome::CannotDecide {
                why: format!(
                    "{} and {} share priority {prio} and both match with different actions: NSX's order between them is not visible",
                    who(&kept[pi].p),
                    who(&kept[other].p)
                ),
            },
            TierHit::Rule(..) => kept[pi]
                .rule_ref(ri)
                .map_or(SideOutcome::NoVisibleRule, |rule| SideOutcome::Matched { rule }),
        })
    });
    if let Some(p) = unordered.map(|i| &kept[i].p) {
        let e = p.priority.as_ref().err().map_or("", String::as_str);
        let why = format!("{}: {e}", who(p));
        outcome = SideOutcome::CannotDecide { why };
    }
    // Policies not evaluated could come first unless the check was decided at a lower
    // priority than any of them (an equal one is NSX's choice: cannot decide either).
    if let Some(u) = unread {
        if !matches!(decided, Some((p, _, _)) if p < u.priority) && unordered.is_none() {
            outcome = SideOutcome::CannotDecide { why: u.why.clone() };
        }
    }

    let mut covering = Vec::new();
    let blocking_yes = |i: usize, r: usize| matches[i][r] == Tri::Yes && kept[i].facts[r].blocks();
    // Shadowed: blocking rules in effect that match after the deciding Allow.
    if let (SideOutcome::Matched { rule }, Some((dprio, dp, dr))) = (&outcome, decided) {
        if rule.action == Action::Allow {
            for &i in order.iter().filter(|&&i| kept[i].priority() >= dprio) {
                // In the deciding priority, only rules after each policy's own first hit.
                let from = match (kept[i].priority() == dprio, &hits[i]) {
                    (false, _) => 0,
                    (true, _) if i == dp => dr + 1,
                    (true, h) => h.as_ref().map_or(usize::MAX, |h| h.rule() + 1),
                };
                for r in (from..matches[i].len()).filter(|&r| blocking_yes(i, r)) {
                    covering.push((i, r, Cover::Shadowed(dp, dr)));
                }
            }
        }
    }
    // Not in effect: their blocking rules that match, and whether each would decide once
    // realized (its policy's first hit, at or before the deciding priority).
    for (i, k) in kept.iter().enumerate() {
        let Ok(prio) = k.p.priority else { continue };
        if k.in_effect {
            continue;
        }
        let before = decided.is_none_or(|(dprio, _, _)| prio <= dprio) && unordered.is_none();
        let own_first = hits[i].as_ref().map(Hit::rule);
        for r in (0..matches[i].len()).filter(|&r| blocking_yes(i, r)) {
            covering.push((i, r, Cover::NotRealized(before && own_first == Some(r))));
        }
    }
    (outcome, covering)
}

fn summary(k: &Kept, vms: &[PolicyVm], ctx: &Ctx) -> PolicySummary {
    let p = &k.p;
    let policy_errors = [p.priority.as_ref().err(), p.applied_to.as_ref().err()];
    let mut unreadable: Vec<String> = policy_errors.into_iter().flatten().cloned().collect();
    for r in &p.rules {
        let mut seen: Vec<&String> = Vec::new();
        let errs = [
            r.action.as_ref().err(),
            r.direction.as_ref().err(),
            r.applied_to.as_ref().err(),
            r.peers.as_ref().err(),
            r.ports.as_ref().err(),
        ];
        for e in errs.into_iter().flatten() {
            if !seen.contains(&e) {
                seen.push(e);
                unreadable.push(format!("rules[{}]: {e}", r.index));
            }
        }
    }
    if p.rules_truncated {
        unreadable.push(truncated_text());
    }
    // Bounded: a policy of 64 rules each unreadable in 5 ways would say 320 things.
    if unreadable.len() > MAX_UNREADABLE {
        let more = unreadable.len() - MAX_UNREADABLE;
        unreadable.truncate(MAX_UNREADABLE);
        unreadable.push(format!("and {more} more"));
    }
    let (mut applies_to, mut undecided) = (Vec::new(), Vec::new());
    for vm in vms {
        match ctx.may_apply(p, vm) {
            Tri::Yes => applies_to.push(vm.name.clone()),
            Tri::Unknown(_) => undecided.push(vm.name.clone()),
            Tri::No => {}
        }
    }
    PolicySummary {
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        group: p.group,
        priority: p.priority.as_ref().ok().copied(),
        realization: p.realization.clone(),
        in_effect: k.in_effect,
        invalid: k.invalid.clone(),
        applies_to,
        applies_to_undecided: undecided,
        rule_count: p.rules.len(),
        unreadable,
        notes: p.notes.clone(),
    }
}

/// Whether a policy of another namespace can apply to the VMs. In T1/NCP mode only through an
/// `appliedTo` entry with neither selector: nsx-operator's group is then the cluster tag
/// alone, every port on the Supervisor (builder.go `updateTargetExpressions`); a `vmSelector`
/// adds the policy's own namespace UID tag. In VPC mode a policy is built in its namespace's
/// VPC (firewall.go `createOrUpdateVPCSecurityPolicy`, `getVPCInfo(obj.Namespace)`): its
/// groups hold that VPC's ports only, not these VMs' (docs/nsx-policy.md says where namespaces
/// sharing one VPC are not considered).
fn applies_across_namespaces(p: &Policy) -> bool {
    // Cannot be read: it may be `{}`.
    let everything = |ts: &Result<Vec<Target>, String>| {
        ts.as_ref()
            .map_or(true, |ts| ts.contains(&Target::Everything))
    };
    p.group != NsxGroup::Vpc
        && match &p.applied_to {
            Ok(ts) if ts.is_empty() => {
                p.rules.iter().any(|r| everything(&r.applied_to)) || p.rules_truncated
            }
            ts => everything(ts),
        }
}

/// Evaluates the SecurityPolicies against the control-plane VMs. Pure; never fails; bounded.
pub fn evaluate(input: &PolicyInput) -> PolicyEvaluation {
    let ctx = Ctx {
        namespace: &input.namespace,
        namespace_labels: &input.namespace_labels,
    };
    let vms = firewall::bounded_vms(&input.vms, |v| &v.name);
    let basis = input.networking_basis.as_deref().map(|b| clip(b, 256));

    // Which policies can apply, before any bound.
    let mut candidates: Vec<Kept> = Vec::new();
    let (mut set_aside, mut set_aside_total, mut not_applying) = (Vec::new(), 0usize, 0);
    for o in &input.policies {
        let p = Policy::read(o);
        let own = p.namespace == input.namespace;
        match input.live_group {
            Some(live) if p.group != live && own => {
                set_aside_total += 1;
                if set_aside.len() < MAX_SET_ASIDE {
                    set_aside.push(SetAside {
                        why: format!(
                            "a leftover of {}: nsx-operator reconciles {} SecurityPolicies here ({}), so NSX does not enforce this one whatever its Ready says",
                            p.group.name(),
                            live.name(),
                            basis.as_deref().unwrap_or("as the Supervisor's networking says")
                        ),
                        namespace: p.namespace,
                        name: p.name,
                        group: p.group,
                        realization: p.realization,
                    });
                }
            }
            Some(live) if p.group != live => not_applying += 1,
            _ if !own && !applies_across_namespaces(&p) => not_applying += 1,
            _ if vms.iter().all(|vm| ctx.may_apply(&p, vm) == Tri::No) => not_applying += 1,
            _ => {
                let invalid = validate(&p);
                let touches = p.rules_truncated
                    || p.rules.iter().any(|r| {
                        let ports = (r.ports.as_ref()).map_or(true, |ps| {
                            ETCD_PORTS.iter().any(|&n| port_matches(ps, n) != Tri::No)
                        });
                        ports && vms.iter().any(|vm| ctx.applied(&p, r, vm) != Tri::No)
                    });
                candidates.push(Kept {
                    in_effect: p.realization.state == RealizedState::Realized && invalid.is_empty(),
                    p,
                    invalid,
                    touches,
                    facts: Vec::new(),
                });
            }
        }
    }
    // The cut keeps first the policies that can touch etcd's ports, then those in effect (only
    // they decide a check: a namespace editor's flood of policies about other ports, or not
    // Ready, must not push them out), each kind by priority.
    candidates.sort_by_cached_key(|k| (!k.touches, !k.in_effect, k.key()));
    let cut = candidates.split_off(candidates.len().min(MAX_POLICIES));
    candidates.sort_by_cached_key(Kept::key);
    // The first cut policy in effect that touches etcd says from which priority on a check
    // cannot be decided; per direction: it can only come first in a check its rules' direction
    // (or an unreadable one) can match.
    let unread_for = |dir: Direction| -> Option<Unread> {
        if input.policies_left_out > 0 {
            return Some(Unread {
                priority: 0,
                why: format!(
                    "{} SecurityPolicies were left out of the read (bounded): any of them might come first",
                    input.policies_left_out
                ),
            });
        }
        let reaches = |k: &&Kept| {
            k.p.rules_truncated
                || k.p
                    .rules
                    .iter()
                    .any(|r| r.direction.as_ref().map_or(true, |d| *d == dir))
        };
        let first = (cut.iter())
            .filter(|k| k.in_effect && k.touches)
            .filter(reaches)
            .min_by_key(|k| k.priority())?;
        let more = match cut.len() - 1 {
            0 => " was".to_string(),
            n => format!(" and {n} more SecurityPolicies were"),
        };
        let prio = (first.p.priority.as_ref()).map_or_else(|_| "unknown".into(), u32::to_string);
        Some(Unread {
            priority: first.priority(),
            why: format!(
                "{} (priority {prio}){more} not evaluated (at most {MAX_POLICIES} are): any of them might come first",
                who(&first.p),
            ),
        })
    };
    let (unread_out, unread_in) = (unread_for(Direction::Out), unread_for(Direction::In));
    let mut kept = candidates;
    for k in &mut kept {
        k.facts =
            k.p.rules
                .iter()
                .map(|r| Facts::new(&k.p, r, &vms, &ctx))
                .collect();
    }

    let mut paths = Vec::new();
    // Per (policy, rule, why): the checks, the paths (indexes, in order), examples.
    let mut aggs: BTreeMap<(usize, usize, Cover), Covered> = BTreeMap::new();
    for (port, fi, ti) in firewall::vm_pairs(vms.len()) {
        let (from, to) = (&vms[fi].name, &vms[ti].name);
        let at = |side| At {
            side,
            src: fi,
            dst: ti,
            port,
        };
        let (e, e_covering) = check(&kept, unread_out.as_ref(), at(Side::Egress));
        let (i, i_covering) = check(&kept, unread_in.as_ref(), at(Side::Ingress));
        let mut not_realized = None;
        let covering = [(Side::Egress, e_covering), (Side::Ingress, i_covering)];
        for (side, (p, r, why)) in covering
            .into_iter()
            .flat_map(|(s, c)| c.into_iter().map(move |c| (s, c)))
        {
            if not_realized.is_none() && why == Cover::NotRealized(true) {
                not_realized = kept[p].rule_ref(r);
            }
            let (checks, on, examples) = aggs.entry((p, r, why)).or_default();
            *checks += 1;
            if on.last() != Some(&paths.len()) {
                on.push(paths.len());
            }
            if examples.len() < COVERING_EXAMPLES {
                let (port, from, to) = (port, from.clone(), to.clone());
                examples.push(CoveredCheck {
                    port,
                    from,
                    to,
                    side,
                });
            }
        }
        let path = PathRef {
            port,
            from: from.clone(),
            to: to.clone(),
        };
        paths.push(PathEvaluation {
            not_realized,
            ..PathEvaluation::new(path, e, i)
        });
    }

    // Covering rules and warnings, aggregated, in policy then rule order.
    let (mut covering, mut covering_not_listed) = (Vec::new(), 0);
    let (mut warnings, mut warnings_not_listed) = (Vec::new(), 0);
    for ((p, r, why), (checks, on, examples)) in aggs {
        let reason = match why {
            Cover::Shadowed(bp, br) => kept[bp].rule_ref(br).map(|by| CoverReason::Shadowed { by }),
            Cover::NotRealized(would_decide) => Some(CoverReason::NotRealized {
                state: kept[p].p.realization.state,
                would_decide,
            }),
        };
        let (Some(rule), Some(reason)) = (kept[p].rule_ref(r), reason) else {
            continue;
        };
        if why != Cover::NotRealized(false) && warnings.len() >= MAX_WARNINGS {
            warnings_not_listed += 1;
        } else if why != Cover::NotRealized(false) {
            warnings.push(PolicyWarning {
                rule: rule.clone(),
                reason: reason.clone(),
                realization: matches!(why, Cover::NotRealized(_))
                    .then(|| kept[p].p.realization.clone()),
                invalid: kept[p].invalid.clone(),
                paths: on.iter().map(|&i| paths[i].path_ref()).collect(),
            });
        }
        if covering.len() < MAX_COVERING {
            let paths = on.len();
            covering.push(CoveringRule {
                rule,
                reason,
                checks,
                paths,
                examples,
            });
        } else {
            covering_not_listed += 1;
        }
    }

    let legacy = kept.iter().any(|k| k.p.group == NsxGroup::Legacy);
    PolicyEvaluation {
        namespace: clip(&input.namespace, MAX_NAME_CHARS),
        vms: vms.iter().map(|v| v.name.clone()).collect(),
        live_group: input.live_group,
        networking_basis: basis,
        policies: kept.iter().map(|k| summary(k, &vms, &ctx)).collect(),
        set_aside,
        set_aside_not_listed: set_aside_total.saturating_sub(MAX_SET_ASIDE),
        policies_not_applying: not_applying,
        policies_not_read: cut.len() + input.policies_left_out,
        blocking: firewall::blocking_of_paths(&paths),
        paths,
        warnings,
        warnings_not_listed,
        covering,
        covering_not_listed,
        notes: legacy
            .then(|| T1_TAGGING_NOTE.to_string())
            .into_iter()
            .collect(),
    }
}
