//! The evaluation: for TCP 2379 and 2380 and every ordered pair of control-plane VMs, the egress
//! check at FROM and the ingress check at TO, each the first matching rule in NSX's order. The
//! rules it follows are in the module `policy` and docs/nsx-policy.md.
//!
//! Bounded whatever the namespace holds: the policies that can apply are sorted (those that can
//! touch etcd's ports, then those in effect, each by priority) before they are cut to
//! [`MAX_POLICIES`]; the rules that cover a path without deciding it are
//! aggregated per rule ([`CoveringRule`], at most [`MAX_COVERING`]); the warnings and the
//! blocking rules are computed once, here, and kept.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use super::model::{
    clip, Action, Direction, NsxGroup, Peer, Policy, PolicyObject, PortSpec, Realization,
    RealizedState, Rule, Target, MAX_NAME_CHARS,
};
use super::validate::validate;
use crate::analyse::firewall::{self, Effect, Hit, Then, TierHit, Verdict};
pub use crate::analyse::firewall::{PathRef, Side, Tri, ETCD_PORTS, MAX_VMS};
use crate::selector::Selector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one check (egress at FROM, ingress at TO) comes to: the first matching rule in effect;
/// no visible rule in effect matches (what happens is decided outside the Supervisor's view);
/// or a rule that might come first cannot be evaluated (`why` names its policy).
pub type SideOutcome = firewall::SideOutcome<RuleRef>;
/// What one path (port, FROM → TO) comes to, both checks together.
pub type PathOutcome = firewall::PathOutcome<RuleRef>;
/// A Drop/Reject rule that blocks paths now, with those paths.
pub type BlockingRule = firewall::Blocking<RuleRef>;

impl Verdict for RuleRef {
    fn effect(&self) -> Effect {
        match self.action {
            Action::Allow => Effect::Allow,
            Action::Drop => Effect::Drop,
            Action::Reject => Effect::Reject,
        }
    }
}

/// At most this many policies that can apply are evaluated, the first by priority; the others
/// are counted, and a check they could decide is "cannot decide".
pub const MAX_POLICIES: usize = 64;
// The SecurityPolicies stay under the engine's one bound on rules evaluated.
const _: () = assert!(MAX_POLICIES * super::model::MAX_RULES <= firewall::MAX_RULES);
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

// The rule's name when it has one. Also the json contract's (`report::v1alpha2`).
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
        let mut s = format!(
            "{}/{} rules[{}]",
            self.namespace, self.policy, self.rule_index
        );
        if let Some(n) = &self.rule_name {
            s.push_str(&format!(" ({n})"));
        }
        s
    }
}

/// One path's evaluation: the engine's, with the rule not in effect that would decide a check
/// once realized (`not_realized`).
pub type PathEvaluation = firewall::PathEvaluation<RuleRef>;

/// Why a Drop/Reject rule that covers a path does not decide it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum CoverReason {
    /// A rule in effect that comes first allows the path.
    Shadowed { by: RuleRef },
    // Not in effect: not realized (Ready False, or no Ready condition yet), or refused by
    // nsx-operator's validation (the policy's `invalid`). `would_decide`: the first match of
    // this check once realized, as far as the visible policies tell (an equal priority: yes).
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

// At most [`COVERING_EXAMPLES`] examples.
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

// What `status` and `diagnose` warn about on a cluster that is still healthy.
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
    // Valid: see docs/nsx-policy.md.
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

// A leftover of the group nsx-operator does not reconcile.
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

// Stable order: policies by priority, namespace, name, group; paths by port, FROM, TO (the VMs
// sorted by name). Also the json contract's (`networkPolicy.evaluation`).
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
    // At most [`MAX_POLICIES`].
    /// The policies that can apply to the VMs, evaluated (bounded).
    pub policies: Vec<PolicySummary>,
    /// The namespace's policies of the group nsx-operator does not reconcile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<SetAside>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub set_aside_not_listed: usize,
    // Another namespace's without a cluster-wide `appliedTo`, another group's, selecting none
    // of the VMs.
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
    // At most [`MAX_WARNINGS`].
    /// Drop/Reject rules that would block paths but do not now (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<PolicyWarning>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub warnings_not_listed: usize,
    // At most [`MAX_COVERING`].
    /// Every Drop/Reject rule that covers checks without deciding them, per rule and reason (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covering: Vec<CoveringRule>,
    #[serde(default, skip_serializing_if = "crate::analyse::is_zero")]
    pub covering_not_listed: usize,
    // Said, never guessed.
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
        match &self.path(port, from, to)?.outcome {
            PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule } => Some(rule),
            _ => None,
        }
    }

    /// Every rule that blocks paths now, each with its paths, in the order the paths come: for
    /// the verdict's evidence and the NETWORK POLICY section. Computed once by [`evaluate`].
    pub fn blocking(&self) -> &[BlockingRule] {
        &self.blocking
    }

    /// Whether any policy was read at all (the NETWORK POLICY section shows when one was).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty() && self.policies_not_read == 0
    }

    /// The policies that select at least one of the VMs (`status -o wide`).
    pub fn selecting_vms(&self) -> impl Iterator<Item = &PolicySummary> {
        self.policies.iter().filter(|p| !p.applies_to.is_empty())
    }

    /// The paths whose outcome cannot be decided.
    pub fn undecided(&self) -> impl Iterator<Item = &PathEvaluation> {
        self.paths
            .iter()
            .filter(|p| matches!(p.outcome, PathOutcome::CannotDecide { .. }))
    }

    /// Drop/Reject rules that would block 2379/2380 between the VMs but do not now: shadowed by
    /// an earlier Allow, or in a policy not in effect that would decide the check once
    /// realized. One warning per rule and reason, with its paths. Computed once by
    /// [`evaluate`]; [`PolicyEvaluation::warnings_not_listed`] more were counted.
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

fn target_selects(t: &Target, policy_ns: &str, vm: &PolicyVm, ctx: &Ctx) -> bool {
    match t {
        // vmSelector selects in the policy's own namespace (the namespace UID tag).
        Target::Vms(s) => policy_ns == ctx.namespace && s.matches_as_nsx(&vm.labels),
        Target::Pods(_) | Target::VmsAndPods => false,
        Target::Everything => true,
    }
}

/// The targets a rule is applied to: policy-level when set (it takes precedence), else the
/// rule's own; neither is refused by nsx-operator ("appliedTo needs to be set in either spec or
/// rules"), so such a rule applies to nothing.
fn applied(policy: &Policy, rule: &Rule, vm: &PolicyVm, ctx: &Ctx) -> Tri {
    let targets = match (&policy.applied_to, &rule.applied_to) {
        (Err(e), _) => return Tri::Unknown(format!("spec.appliedTo: {e}")),
        (Ok(p), _) if !p.is_empty() => p,
        (Ok(_), Err(e)) => return Tri::Unknown(format!("rules[{}]: {e}", rule.index)),
        (Ok(_), Ok(r)) => r,
    };
    Tri::from_bool(
        targets
            .iter()
            .any(|t| target_selects(t, &policy.namespace, vm, ctx)),
    )
}

/// A `namespaceSelector` is realized as tag conditions on the namespace's segment (builder.go
/// `updatePeerExpressions`, member type Segment): NSX's matching.
fn selects_ns(s: &Selector, ctx: &Ctx) -> bool {
    s.matches_as_nsx(ctx.namespace_labels)
}

fn peer_matches(peer: &Peer, policy_ns: &str, vm: &PolicyVm, ctx: &Ctx) -> Tri {
    let by_ip = if peer.ip_blocks.is_empty() {
        Tri::No
    } else if vm.ips.is_empty() {
        Tri::Unknown(format!("no IP is known for VM {} (ipBlocks)", vm.name))
    } else {
        let inside = vm
            .ips
            .iter()
            .filter(|ip| peer.ip_blocks.iter().any(|b| b.contains(**ip)))
            .count();
        if inside == vm.ips.len() {
            Tri::Yes
        } else if inside == 0 {
            Tri::No
        } else {
            Tri::Unknown(format!(
                "VM {} has addresses inside and outside the ipBlocks",
                vm.name
            ))
        }
    };
    let by_selector = match (&peer.vms, &peer.pods, &peer.namespaces) {
        (Some(v), None, None) => policy_ns == ctx.namespace && v.matches_as_nsx(&vm.labels),
        (Some(v), None, Some(n)) => selects_ns(n, ctx) && v.matches_as_nsx(&vm.labels),
        // Pods only, never these VMs.
        (None, Some(_), _) | (Some(_), Some(_), _) => false,
        // Every Pod and VM of the selected namespaces (`{}`: of every namespace).
        (None, None, Some(n)) => selects_ns(n, ctx),
        (None, None, None) => false,
    };
    Tri::any([by_ip, Tri::from_bool(by_selector)])
}

fn port_matches(ports: &[PortSpec], port: u16) -> Tri {
    if ports.is_empty() {
        return Tri::Yes;
    }
    Tri::any(ports.iter().map(|p| match p {
        // Resolved to Pods' IPs only (expand.go): never a VM's port, whatever its protocol.
        PortSpec::Named { .. } => Tri::No,
        PortSpec::Numbers { protocol, .. } if protocol != "TCP" => {
            if protocol == "UDP" || protocol == "SCTP" {
                Tri::No
            } else {
                Tri::Unknown("a protocol other than TCP, UDP or SCTP".to_string())
            }
        }
        PortSpec::Numbers {
            start: 0,
            end: None,
            ..
        } => Tri::Yes,
        PortSpec::Numbers {
            start, end: None, ..
        } => Tri::from_bool(*start == port),
        PortSpec::Numbers {
            start,
            end: Some(end),
            ..
        } => {
            if end < start {
                Tri::Unknown(format!("endPort {end} below port {start}"))
            } else {
                Tri::from_bool(*start <= port && port <= *end)
            }
        }
    }))
}

/// What a rule's match depends on, computed once per rule: its ports against each of
/// [`ETCD_PORTS`], its `appliedTo` against each VM, its peers against each VM. A check then only
/// combines them (the bounds make rules times checks large).
struct RuleFacts {
    ports: [Tri; ETCD_PORTS.len()],
    applied: Vec<Tri>,
    peers: Vec<Tri>,
}

fn rule_facts(policy: &Policy, rule: &Rule, vms: &[PolicyVm], ctx: &Ctx) -> RuleFacts {
    let at = |t: Tri| match t {
        Tri::Unknown(w) => Tri::Unknown(format!("rules[{}]: {w}", rule.index)),
        t => t,
    };
    let ports = ETCD_PORTS.map(|port| match &rule.ports {
        Ok(p) => at(port_matches(p, port)),
        Err(e) => at(Tri::Unknown(e.clone())),
    });
    let applied = vms
        .iter()
        .map(|vm| applied(policy, rule, vm, ctx))
        .collect();
    let peers = vms
        .iter()
        .map(|vm| match &rule.peers {
            Ok(peers) if peers.is_empty() => Tri::Yes,
            Ok(peers) => at(Tri::any(
                peers
                    .iter()
                    .map(|p| peer_matches(p, &policy.namespace, vm, ctx)),
            )),
            Err(e) => at(Tri::Unknown(e.clone())),
        })
        .collect();
    RuleFacts {
        ports,
        applied,
        peers,
    }
}

/// One check: the VMs as indexes in the sorted VMs.
type At = firewall::At<usize>;

/// A SecurityPolicy rule as the engine sees it, its facts computed once. An In rule's peers are
/// its source (its destination ANY), an Out rule's its destination (its source ANY); its
/// scope is its `appliedTo` (builder.go, the module `policy`).
struct Normalized<'a> {
    rule: &'a Rule,
    facts: &'a RuleFacts,
}

impl Normalized<'_> {
    fn unknown(&self, e: &str) -> Tri {
        Tri::Unknown(format!("rules[{}]: {e}", self.rule.index))
    }

    fn peers_if(&self, dir: Direction, vm: usize) -> Tri {
        match self.rule.direction {
            Ok(d) if d == dir => self.facts.peers[vm].clone(),
            _ => Tri::Yes,
        }
    }
}

impl firewall::Rule<usize> for Normalized<'_> {
    fn direction(&self, side: Side) -> Tri {
        match &self.rule.direction {
            Ok(d) => Tri::from_bool(*d == Direction::of(side)),
            Err(e) => self.unknown(e),
        }
    }
    fn service(&self, at: At) -> Tri {
        let i = ETCD_PORTS.iter().position(|p| *p == at.port).unwrap_or(0);
        self.facts.ports[i].clone()
    }
    fn applies_to(&self, here: usize) -> Tri {
        self.facts.applied[here].clone()
    }
    fn source(&self, src: usize) -> Tri {
        self.peers_if(Direction::In, src)
    }
    fn destination(&self, dst: usize) -> Tri {
        self.peers_if(Direction::Out, dst)
    }
    fn rest(&self) -> Tri {
        match &self.rule.action {
            Ok(_) => Tri::Yes,
            Err(e) => self.unknown(e),
        }
    }
}

/// Whether `rule` matches this check: the engine's one match.
fn rule_matches(rule: &Rule, facts: &RuleFacts, at: At) -> Tri {
    firewall::Rule::matches(&Normalized { rule, facts }, at)
}

fn rule_ref(policy: &Policy, priority: u32, rule: &Rule) -> Option<RuleRef> {
    Some(RuleRef {
        namespace: policy.namespace.clone(),
        policy: policy.name.clone(),
        group: policy.group,
        priority,
        rule_index: rule.index,
        rule_name: rule.name.clone(),
        action: *rule.action.as_ref().ok()?,
        direction: *rule.direction.as_ref().ok()?,
    })
}

/// `SecurityPolicy ns/name`: how every line names a policy.
fn who(p: &Policy) -> String {
    format!("SecurityPolicy {}/{}", p.namespace, p.name)
}

/// Said of a policy whose rules past [`super::model::MAX_RULES`] were not read.
fn truncated_text() -> String {
    format!("rules past the {}th were not read", super::model::MAX_RULES)
}

/// One policy's first hit on a check, through the engine: `matches` are its rules that match or
/// cannot be told apart, in order (each rule alone: a SecurityPolicy's rules are in list order).
fn first_hit(matches: &[(usize, Tri)], policy: &Policy) -> Option<Hit<Action>> {
    let tail = truncated_text();
    firewall::first_hit(
        matches.iter().map(|(r, _)| [*r]),
        |r| {
            matches
                .iter()
                .find(|(x, _)| *x == r)
                .map_or(Tri::No, |(_, t)| t.clone())
        },
        |r| policy.rules[r].action.clone().ok(),
        policy
            .rules_truncated
            .then_some((policy.rules.len(), tail.as_str())),
    )
}

/// Why a rule covers a check without deciding it, by index (cheap to aggregate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Cover {
    /// Shadowed by the Allow at (policy, rule).
    Shadowed(usize, usize),
    /// Its policy is not in effect; whether it would decide once realized.
    NotRealized(bool),
}

struct SideResult {
    outcome: SideOutcome,
    /// (policy, rule, why), policy and rule as indexes.
    covering: Vec<(usize, usize, Cover)>,
}

/// Policies that can apply but were not evaluated: any check they could come first in cannot
/// be decided. `priority`: the lowest priority among them (0 when unknown).
struct Unread {
    priority: u32,
    why: String,
}

/// One check. `policies` are sorted by priority, namespace, name, group; `facts` each policy's
/// rules' [`RuleFacts`]; `in_effect` whether each counts now.
fn check(
    policies: &[Policy],
    in_effect: &[bool],
    facts: &[Vec<RuleFacts>],
    unread: Option<&Unread>,
    at: At,
) -> SideResult {
    // Each policy's rules that match or may match, in order (a No is not kept: most are).
    let matches: Vec<Vec<(usize, Tri)>> = policies
        .iter()
        .zip(facts)
        .map(|(p, f)| {
            p.rules
                .iter()
                .zip(f)
                .enumerate()
                .filter_map(|(i, (r, f))| match rule_matches(r, f, at) {
                    Tri::No => None,
                    t => Some((i, t)),
                })
                .collect()
        })
        .collect();
    let realized = |i: usize| in_effect[i];

    let hits: Vec<Option<Hit<Action>>> = policies
        .iter()
        .zip(&matches)
        .map(|(p, m)| first_hit(m, p))
        .collect();
    // A policy in effect whose priority cannot be read may come anywhere.
    let unordered = (0..policies.len())
        .find(|&i| realized(i) && policies[i].priority.is_err() && hits[i].is_some());

    // The priorities in effect, lowest first: one tier per priority; the first hit decides.
    let mut decided: Option<(u32, usize, usize)> = None; // (priority, policy, rule)
    let in_effect_order: Vec<usize> = (0..policies.len())
        .filter(|&i| realized(i) && policies[i].priority.is_ok())
        .collect();
    let tiers = in_effect_order
        .chunk_by(|&a, &b| policies[a].priority == policies[b].priority)
        .map(|tier| tier.iter().map(|&i| (i, hits[i].clone())));
    let mut outcome = firewall::check(tiers, |hit| {
        let (pi, ri) = hit.first();
        let prio = *policies[pi].priority.as_ref().unwrap_or(&0);
        decided = Some((prio, pi, ri));
        Then::Decide(match hit {
            TierHit::Cannot { at, hit, .. } => {
                let why = match hit {
                    Hit::Unknown(_, why) => why,
                    // A SecurityPolicy's rules are each alone: never split.
                    Hit::Split(..) | Hit::Rule(..) => String::new(),
                };
                SideOutcome::CannotDecide {
                    why: format!("{}: {why} (priority {prio})", who(&policies[at])),
                }
            }
            TierHit::Split { other, .. } => SideOutcome::CannotDecide {
                why: format!(
                    "{} and {} share priority {prio} and both match with different actions: NSX's order between them is not visible",
                    who(&policies[pi]),
                    who(&policies[other])
                ),
            },
            TierHit::Rule(..) => match rule_ref(&policies[pi], prio, &policies[pi].rules[ri]) {
                Some(rule) => SideOutcome::Matched { rule },
                None => SideOutcome::NoVisibleRule,
            },
        })
    });
    if let Some(i) = unordered {
        outcome = SideOutcome::CannotDecide {
            why: format!(
                "{}: {}",
                who(&policies[i]),
                policies[i]
                    .priority
                    .as_ref()
                    .err()
                    .cloned()
                    .unwrap_or_default()
            ),
        };
    }
    // Policies not evaluated could come first unless the check was decided at a lower
    // priority than any of them (an equal one is NSX's choice: cannot decide either).
    if let Some(u) = unread {
        let before = matches!(decided, Some((p, _, _)) if p < u.priority);
        if !before && unordered.is_none() {
            outcome = SideOutcome::CannotDecide { why: u.why.clone() };
        }
    }

    let mut covering = Vec::new();
    // Shadowed: blocking rules in effect that match after the deciding Allow.
    if let SideOutcome::Matched { rule: by } = &outcome {
        if by.action == Action::Allow {
            let (dprio, dp, dr) = decided.unwrap_or((0, 0, 0));
            for &i in &in_effect_order {
                let p = &policies[i];
                let prio = *p.priority.as_ref().unwrap_or(&0);
                if prio < dprio {
                    continue;
                }
                // In the deciding priority, only rules after each policy's own first hit.
                let from = if prio == dprio {
                    if i == dp {
                        dr + 1
                    } else {
                        hits[i].as_ref().map_or(usize::MAX, |h| h.rule() + 1)
                    }
                } else {
                    0
                };
                for (r, t) in matches[i].iter().filter(|(r, _)| *r >= from) {
                    if *t == Tri::Yes && p.rules[*r].action.as_ref().is_ok_and(|a| a.blocks()) {
                        covering.push((i, *r, Cover::Shadowed(dp, dr)));
                    }
                }
            }
        }
    }
    // Not in effect: their blocking rules that match, and whether each would decide once
    // realized.
    for (i, p) in policies.iter().enumerate() {
        if realized(i) {
            continue;
        }
        let Ok(prio) = p.priority else { continue };
        let own_first = hits[i].as_ref().map(Hit::rule);
        for (r, t) in &matches[i] {
            if *t != Tri::Yes || !p.rules[*r].action.as_ref().is_ok_and(|a| a.blocks()) {
                continue;
            }
            let before_decision = match decided {
                None => true,
                Some((dprio, _, _)) => prio <= dprio,
            };
            let would_decide = own_first == Some(*r) && before_decision && unordered.is_none();
            covering.push((i, *r, Cover::NotRealized(would_decide)));
        }
    }
    SideResult { outcome, covering }
}

/// Whether the policy's effective `appliedTo` may take `vm` for any of its rules (a policy
/// that takes none of the VMs cannot touch a check).
fn may_apply(p: &Policy, vm: &PolicyVm, ctx: &Ctx) -> Tri {
    match &p.applied_to {
        Err(e) => Tri::Unknown(e.clone()),
        Ok(ts) if !ts.is_empty() => {
            Tri::from_bool(ts.iter().any(|t| target_selects(t, &p.namespace, vm, ctx)))
        }
        Ok(_) => {
            let rules = Tri::any(p.rules.iter().map(|r| match &r.applied_to {
                Err(e) => Tri::Unknown(e.clone()),
                Ok(ts) => {
                    Tri::from_bool(ts.iter().any(|t| target_selects(t, &p.namespace, vm, ctx)))
                }
            }));
            match rules {
                Tri::No if p.rules_truncated => {
                    Tri::Unknown("rules past the bound were not read".to_string())
                }
                t => t,
            }
        }
    }
}

fn summary(
    p: &Policy,
    in_effect: bool,
    invalid: &[String],
    vms: &[PolicyVm],
    ctx: &Ctx,
) -> PolicySummary {
    let mut unreadable = Vec::new();
    if let Err(e) = &p.priority {
        unreadable.push(e.clone());
    }
    if let Err(e) = &p.applied_to {
        unreadable.push(e.clone());
    }
    for r in &p.rules {
        let mut seen: Vec<&String> = Vec::new();
        for e in r
            .action
            .as_ref()
            .err()
            .into_iter()
            .chain(r.direction.as_ref().err())
            .chain(r.applied_to.as_ref().err())
            .chain(r.peers.as_ref().err())
            .chain(r.ports.as_ref().err())
        {
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
    let mut applies_to = Vec::new();
    let mut undecided = Vec::new();
    for vm in vms {
        match may_apply(p, vm, ctx) {
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
        in_effect,
        invalid: invalid.to_vec(),
        applies_to,
        applies_to_undecided: undecided,
        rule_count: p.rules.len(),
        unreadable,
        notes: p.notes.clone(),
    }
}

/// Whether any of the policy's rules could match TCP 2379 or 2380 at one of the VMs (its ports,
/// its effective `appliedTo`): a policy whose rules are all about other ports or other
/// workloads cannot touch a check, and must not take a place under the bound.
fn touches_etcd(p: &Policy, vms: &[PolicyVm], ctx: &Ctx) -> bool {
    p.rules_truncated
        || p.rules.iter().any(|r| {
            let ports = match &r.ports {
                Ok(ps) => ETCD_PORTS
                    .iter()
                    .any(|&port| port_matches(ps, port) != Tri::No),
                Err(_) => true,
            };
            ports && vms.iter().any(|vm| applied(p, r, vm, ctx) != Tri::No)
        })
}

/// Whether a policy of another namespace can apply to the VMs. In T1/NCP mode only through an
/// `appliedTo` entry with neither selector: nsx-operator's group is then the cluster tag
/// alone, every port on the Supervisor (builder.go `updateTargetExpressions`); a `vmSelector`
/// adds the policy's own namespace UID tag. In VPC mode a policy is built in its namespace's
/// VPC (firewall.go `createOrUpdateVPCSecurityPolicy`, `getVPCInfo(obj.Namespace)`): its
/// groups hold that VPC's ports only, not these VMs' (docs/nsx-policy.md says where namespaces
/// sharing one VPC are not considered).
fn applies_across_namespaces(p: &Policy) -> bool {
    if p.group == NsxGroup::Vpc {
        return false;
    }
    let everything = |ts: &Result<Vec<Target>, String>| match ts {
        Ok(ts) => ts.contains(&Target::Everything),
        // Cannot be read: it may be `{}`.
        Err(_) => true,
    };
    match &p.applied_to {
        Ok(ts) if !ts.is_empty() => everything(&p.applied_to),
        Err(_) => true,
        Ok(_) => p.rules.iter().any(|r| everything(&r.applied_to)) || p.rules_truncated,
    }
}

/// Evaluates the SecurityPolicies against the control-plane VMs. Pure; never fails; bounded.
pub fn evaluate(input: &PolicyInput) -> PolicyEvaluation {
    let ctx = Ctx {
        namespace: &input.namespace,
        namespace_labels: &input.namespace_labels,
    };
    let vms = firewall::bounded_vms(&input.vms, |v| &v.name);

    // Which policies can apply, before any bound.
    let mut candidates: Vec<Policy> = Vec::new();
    let mut set_aside: Vec<SetAside> = Vec::new();
    let mut set_aside_total: usize = 0;
    let mut not_applying = 0;
    for o in &input.policies {
        let p = Policy::read(o);
        let own = p.namespace == input.namespace;
        if let Some(live) = input.live_group {
            if p.group != live {
                if own {
                    set_aside_total += 1;
                    if set_aside.len() < MAX_SET_ASIDE {
                        set_aside.push(SetAside {
                            why: format!(
                                "a leftover of {}: nsx-operator reconciles {} SecurityPolicies here ({}), so NSX does not enforce this one whatever its Ready says",
                                p.group.name(),
                                live.name(),
                                input
                                    .networking_basis
                                    .as_deref()
                                    .map(|b| clip(b, 256))
                                    .unwrap_or_else(|| "as the Supervisor's networking says".into())
                            ),
                            namespace: p.namespace,
                            name: p.name,
                            group: p.group,
                            realization: p.realization,
                        });
                    }
                } else {
                    not_applying += 1;
                }
                continue;
            }
        }
        if !own && !applies_across_namespaces(&p) {
            not_applying += 1;
            continue;
        }
        if vms.iter().all(|vm| may_apply(&p, vm, &ctx) == Tri::No) {
            not_applying += 1;
            continue;
        }
        candidates.push(p);
    }
    let key = |p: &Policy| {
        (
            p.priority.is_err(),
            p.priority.as_ref().ok().copied(),
            p.namespace.clone(),
            p.name.clone(),
            p.group,
        )
    };
    let invalid_of = |p: &Policy| validate(p);
    let effect = |p: &Policy, invalid: &[String]| {
        p.realization.state == RealizedState::Realized && invalid.is_empty()
    };
    // The cut keeps first the policies that can touch etcd's ports, then those in effect (only
    // they decide a check: a namespace editor's flood of policies about other ports, or not
    // Ready, must not push them out), each kind by priority; the first cut policy in effect
    // that touches etcd says from which priority on a check cannot be decided.
    candidates.sort_by_cached_key(|p| {
        (
            !touches_etcd(p, &vms, &ctx),
            !effect(p, &invalid_of(p)),
            key(p),
        )
    });
    let cut: Vec<Policy> = if candidates.len() > MAX_POLICIES {
        candidates.split_off(MAX_POLICIES)
    } else {
        Vec::new()
    };
    candidates.sort_by_cached_key(key);
    // Per direction: a cut policy can only come first in a check its rules' direction (or an
    // unreadable one) can match.
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
        let reaches = |p: &Policy| {
            p.rules_truncated
                || p.rules
                    .iter()
                    .any(|r| r.direction.as_ref().map_or(true, |d| *d == dir))
        };
        let first = cut
            .iter()
            .filter(|p| reaches(p) && effect(p, &invalid_of(p)) && touches_etcd(p, &vms, &ctx))
            .min_by_key(|p| p.priority.as_ref().ok().copied().unwrap_or(0))?;
        Some(Unread {
            priority: first.priority.as_ref().ok().copied().unwrap_or(0),
            why: format!(
                "{} (priority {}){} not evaluated (at most {MAX_POLICIES} are): any of them might come first",
                who(first),
                first
                    .priority
                    .as_ref()
                    .map(u32::to_string)
                    .unwrap_or_else(|_| "unknown".into()),
                match cut.len() - 1 {
                    0 => " was".to_string(),
                    n => format!(" and {n} more SecurityPolicies were"),
                }
            ),
        })
    };
    let unread_out = unread_for(Direction::Out);
    let unread_in = unread_for(Direction::In);
    let policies = candidates;
    let invalid: Vec<Vec<String>> = policies.iter().map(invalid_of).collect();
    let in_effect: Vec<bool> = policies
        .iter()
        .zip(&invalid)
        .map(|(p, inv)| effect(p, inv))
        .collect();

    let facts: Vec<Vec<RuleFacts>> = policies
        .iter()
        .map(|p| {
            p.rules
                .iter()
                .map(|r| rule_facts(p, r, &vms, &ctx))
                .collect()
        })
        .collect();

    let mut paths = Vec::new();
    // Per (policy, rule, why): the checks, the paths (bits over path indexes), examples.
    struct Agg {
        checks: usize,
        paths: Vec<u64>,
        examples: Vec<CoveredCheck>,
    }
    let npaths = ETCD_PORTS.len() * vms.len() * vms.len().saturating_sub(1);
    let mut aggs: HashMap<(usize, usize, Cover), Agg> = HashMap::new();
    for (port, fi, ti) in firewall::vm_pairs(vms.len()) {
        let (from, to) = (&vms[fi], &vms[ti]);
        let path_index = paths.len();
        let at = |side| At {
            side,
            src: fi,
            dst: ti,
            port,
        };
        let (egress, ingress) = (at(Side::Egress), at(Side::Ingress));
        let e = check(&policies, &in_effect, &facts, unread_out.as_ref(), egress);
        let i = check(&policies, &in_effect, &facts, unread_in.as_ref(), ingress);
        let mut not_realized = None;
        for (side, r) in [(Side::Egress, e.covering), (Side::Ingress, i.covering)] {
            for (p, ri, why) in r {
                if not_realized.is_none() && why == Cover::NotRealized(true) {
                    not_realized = rule_ref(
                        &policies[p],
                        policies[p].priority.clone().unwrap_or(0),
                        &policies[p].rules[ri],
                    );
                }
                let a = aggs.entry((p, ri, why)).or_insert_with(|| Agg {
                    checks: 0,
                    paths: vec![0; npaths.div_ceil(64)],
                    examples: Vec::new(),
                });
                a.checks += 1;
                a.paths[path_index / 64] |= 1 << (path_index % 64);
                if a.examples.len() < COVERING_EXAMPLES {
                    a.examples.push(CoveredCheck {
                        port,
                        from: from.name.clone(),
                        to: to.name.clone(),
                        side,
                    });
                }
            }
        }
        let path = PathRef {
            port,
            from: from.name.clone(),
            to: to.name.clone(),
        };
        paths.push(PathEvaluation {
            not_realized,
            ..PathEvaluation::new(path, e.outcome, i.outcome)
        });
    }

    // Blocking rules, once, in path order.
    let blocking = firewall::blocking_of_paths(&paths);

    // Covering rules and warnings, aggregated, in policy then rule order.
    let mut keys: Vec<(usize, usize, Cover)> = aggs.keys().copied().collect();
    keys.sort();
    let rref = |p: usize, r: usize| {
        rule_ref(
            &policies[p],
            policies[p].priority.clone().unwrap_or(0),
            &policies[p].rules[r],
        )
    };
    let reason = |p: usize, why: Cover| -> Option<CoverReason> {
        Some(match why {
            Cover::Shadowed(bp, br) => CoverReason::Shadowed { by: rref(bp, br)? },
            Cover::NotRealized(would_decide) => CoverReason::NotRealized {
                state: policies[p].realization.state,
                would_decide,
            },
        })
    };
    let mut covering = Vec::new();
    let mut covering_not_listed = 0;
    let mut warnings = Vec::new();
    let mut warnings_not_listed = 0;
    for k in &keys {
        let (p, r, why) = *k;
        let a = &aggs[k];
        let (Some(rule), Some(reason)) = (rref(p, r), reason(p, why)) else {
            continue;
        };
        let path_count: usize = a.paths.iter().map(|w| w.count_ones() as usize).sum();
        if why != Cover::NotRealized(false) {
            if warnings.len() < MAX_WARNINGS {
                let wpaths = paths
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| a.paths[i / 64] & (1 << (i % 64)) != 0)
                    .map(|(_, e)| e.path_ref())
                    .collect();
                warnings.push(PolicyWarning {
                    rule: rule.clone(),
                    reason: reason.clone(),
                    realization: match why {
                        Cover::NotRealized(_) => Some(policies[p].realization.clone()),
                        Cover::Shadowed(..) => None,
                    },
                    invalid: invalid[p].clone(),
                    paths: wpaths,
                });
            } else {
                warnings_not_listed += 1;
            }
        }
        if covering.len() < MAX_COVERING {
            covering.push(CoveringRule {
                rule,
                reason,
                checks: a.checks,
                paths: path_count,
                examples: a.examples.clone(),
            });
        } else {
            covering_not_listed += 1;
        }
    }

    let mut notes = Vec::new();
    if policies.iter().any(|p| p.group == NsxGroup::Legacy) {
        notes.push(T1_TAGGING_NOTE.to_string());
    }
    PolicyEvaluation {
        namespace: clip(&input.namespace, MAX_NAME_CHARS),
        vms: vms.iter().map(|v| v.name.clone()).collect(),
        live_group: input.live_group,
        networking_basis: input.networking_basis.as_deref().map(|b| clip(b, 256)),
        policies: policies
            .iter()
            .zip(&invalid)
            .zip(&in_effect)
            .map(|((p, inv), e)| summary(p, *e, inv, &vms, &ctx))
            .collect(),
        set_aside,
        set_aside_not_listed: set_aside_total.saturating_sub(MAX_SET_ASIDE),
        policies_not_applying: not_applying,
        policies_not_read: cut.len() + input.policies_left_out,
        paths,
        blocking,
        warnings,
        warnings_not_listed,
        covering,
        covering_not_listed,
        notes,
    }
}
