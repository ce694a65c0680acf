//! The evaluation: for TCP 2379 and 2380 and every ordered pair of control-plane VMs, the egress
//! check at FROM and the ingress check at TO, each the first matching rule in NSX's order. The
//! rules it follows are in the module `policy` and docs/nsx-policy.md.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::model::{
    clip, Action, Direction, NsxGroup, Peer, Policy, PolicyObject, PortSpec, Realization,
    RealizedState, Rule, Target, MAX_NAME_CHARS,
};
use super::selector::Selector;

/// The ports evaluated: etcd's client and peer ports, TCP.
pub const ETCD_PORTS: [u16; 2] = [2379, 2380];
/// At most this many policies are read (both groups together); more are counted, not read.
pub const MAX_POLICIES: usize = 128;
/// At most this many VMs are evaluated (a control plane has 1, 3, 5 or 7).
pub const MAX_VMS: usize = 16;

/// A control-plane VM as the evaluation sees it: its name, its labels (nsx-operator copies a
/// VirtualMachine's labels onto its NSX port) and its addresses (for `ipBlocks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVm {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub ips: Vec<IpAddr>,
}

/// Everything the evaluation needs, as values.
#[derive(Debug, Clone)]
pub struct PolicyInput {
    /// The vSphere Namespace the cluster's VMs live in.
    pub namespace: String,
    /// That Namespace's labels (for `namespaceSelector`; Kubernetes adds
    /// `kubernetes.io/metadata.name` itself).
    pub namespace_labels: BTreeMap<String, String>,
    /// The SecurityPolicies read, of either group.
    pub policies: Vec<PolicyObject>,
    /// The cluster's control-plane VMs.
    pub vms: Vec<PolicyVm>,
}

/// Which check of a path: at FROM on the way out, or at TO on the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Side {
    Egress,
    Ingress,
}

/// A rule, named as an admin finds it: the policy, the rule's index in `spec.rules` and its
/// name when it has one, the policy's priority, the action and direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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

/// What one check (egress at FROM, ingress at TO) comes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all_fields = "camelCase")]
pub enum SideOutcome {
    /// The first matching rule in effect.
    Matched { rule: RuleRef },
    /// No visible rule in effect matches: what happens is decided outside the Supervisor's view.
    NoVisibleRule,
    /// A rule that might come first cannot be evaluated.
    CannotDecide { why: String },
}

/// What one path (port, FROM → TO) comes to, both checks together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all_fields = "camelCase")]
pub enum PathOutcome {
    /// A Drop rule is the first match of a check (the egress check's when both block).
    Dropped { rule: RuleRef },
    /// A Reject rule is the first match of a check.
    Rejected { rule: RuleRef },
    /// No check blocks and at least one has an Allow as its first match; a check without a
    /// visible rule falls through to what the Supervisor does not show.
    Allowed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        egress: Option<RuleRef>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ingress: Option<RuleRef>,
    },
    /// No visible rule matches either check.
    NoVisibleRule,
    /// A check cannot be decided and the other does not block.
    CannotDecide { why: String },
}

/// One path's evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathEvaluation {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub outcome: PathOutcome,
    pub egress: SideOutcome,
    pub ingress: SideOutcome,
}

/// Why a Drop/Reject rule that covers a path does not decide it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all_fields = "camelCase")]
pub enum CoverReason {
    /// A rule in effect that comes first allows the path.
    Shadowed { by: RuleRef },
    /// Its policy is not realized (Ready False, or no Ready condition yet). `would_decide`: it
    /// would be the first match of this check once realized (as far as the visible policies
    /// tell: an equal priority counts as yes).
    NotRealized {
        state: RealizedState,
        would_decide: bool,
    },
}

/// A Drop/Reject rule that matches a path's check but is not what decides it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoveringRule {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub side: Side,
    pub rule: RuleRef,
    pub reason: CoverReason,
}

/// One path, for warnings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathRef {
    pub port: u16,
    pub from: String,
    pub to: String,
}

/// A Drop/Reject rule that would block 2379/2380 between the VMs but does not now, with every
/// path it covers: what `status` and `diagnose` warn about on a cluster that is still healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyWarning {
    pub rule: RuleRef,
    pub reason: CoverReason,
    /// The policy's Ready reason and message when it is not realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realization: Option<Realization>,
    pub paths: Vec<PathRef>,
}

/// One policy as read: who it is, whether NSX realized it, which VMs it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySummary {
    pub namespace: String,
    pub name: String,
    pub group: NsxGroup,
    /// `None`: `spec.priority` could not be read.
    pub priority: Option<u32>,
    pub realization: Realization,
    /// Counted in the evaluation: realized only (see docs/nsx-policy.md).
    pub in_effect: bool,
    /// The VMs its policy-level `appliedTo` (else any rule-level one) selects.
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

/// The whole evaluation: the policies read, every path, the covering rules that do not decide.
/// Stable order: policies by priority, namespace, name, group; paths by port, FROM, TO (the VMs
/// sorted by name); covering rules in path order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    pub namespace: String,
    pub vms: Vec<String>,
    pub policies: Vec<PolicySummary>,
    /// Policies past [`MAX_POLICIES`] (not read; every path they could touch is undecided).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub policies_not_read: usize,
    pub paths: Vec<PathEvaluation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covering: Vec<CoveringRule>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PolicyEvaluation {
    /// The evaluation of one path.
    pub fn path(&self, port: u16, from: &str, to: &str) -> Option<&PathEvaluation> {
        self.paths
            .iter()
            .find(|p| p.port == port && p.from == from && p.to == to)
    }

    /// The Drop/Reject rule that blocks this path, if a visible one does.
    pub fn blocking_rule(&self, port: u16, from: &str, to: &str) -> Option<&RuleRef> {
        match &self.path(port, from, to)?.outcome {
            PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule } => Some(rule),
            _ => None,
        }
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
    /// an earlier Allow, or in a policy not realized that would decide the check once realized.
    /// One warning per rule and reason, with its paths; in the order of `covering`.
    pub fn warnings(&self) -> Vec<PolicyWarning> {
        let mut out: Vec<PolicyWarning> = Vec::new();
        for c in &self.covering {
            if let CoverReason::NotRealized {
                would_decide: false,
                ..
            } = c.reason
            {
                continue;
            }
            let path = PathRef {
                port: c.port,
                from: c.from.clone(),
                to: c.to.clone(),
            };
            if let Some(w) = out
                .iter_mut()
                .find(|w| w.rule == c.rule && w.reason == c.reason)
            {
                if !w.paths.contains(&path) {
                    w.paths.push(path);
                }
                continue;
            }
            let realization = match c.reason {
                CoverReason::NotRealized { .. } => self
                    .policies
                    .iter()
                    .find(|p| {
                        p.namespace == c.rule.namespace
                            && p.name == c.rule.policy
                            && p.group == c.rule.group
                    })
                    .map(|p| p.realization.clone()),
                CoverReason::Shadowed { .. } => None,
            };
            out.push(PolicyWarning {
                rule: c.rule.clone(),
                reason: c.reason.clone(),
                realization,
                paths: vec![path],
            });
        }
        out
    }
}

/// Three-valued: a match, no match, or cannot tell (why).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tri {
    Yes,
    No,
    Unknown(String),
}

impl Tri {
    fn from_bool(b: bool) -> Tri {
        if b {
            Tri::Yes
        } else {
            Tri::No
        }
    }

    /// AND: any No is No, else any Unknown is Unknown.
    fn and(self, other: impl FnOnce() -> Tri) -> Tri {
        match self {
            Tri::No => Tri::No,
            Tri::Yes => other(),
            Tri::Unknown(why) => match other() {
                Tri::No => Tri::No,
                _ => Tri::Unknown(why),
            },
        }
    }

    /// OR over many: any Yes is Yes, else the first Unknown, else No.
    fn any(items: impl IntoIterator<Item = Tri>) -> Tri {
        let mut unknown = None;
        for t in items {
            match t {
                Tri::Yes => return Tri::Yes,
                Tri::Unknown(w) if unknown.is_none() => unknown = Some(w),
                _ => {}
            }
        }
        unknown.map_or(Tri::No, Tri::Unknown)
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
        Target::Vms(s) => policy_ns == ctx.namespace && s.matches(&vm.labels),
        Target::Pods(_) => false,
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

fn selects_ns(s: &Selector, ctx: &Ctx) -> bool {
    s.matches(ctx.namespace_labels)
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
        (Some(v), None, None) => policy_ns == ctx.namespace && v.matches(&vm.labels),
        (Some(v), None, Some(n)) => selects_ns(n, ctx) && v.matches(&vm.labels),
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
        PortSpec::Numbers { protocol, .. } | PortSpec::Named { protocol, .. }
            if protocol != "TCP" =>
        {
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
        PortSpec::Named { name, .. } => Tri::Unknown(format!(
            "named port {name:?}: nsx-operator resolves it from Pods, not visible here"
        )),
    }))
}

/// Whether `rule` matches this check: traffic in `dir` at `this` (the VM the rule must be
/// applied to) with `other` as the peer, on TCP `port`.
fn rule_matches(
    policy: &Policy,
    rule: &Rule,
    dir: Direction,
    this: &PolicyVm,
    other: &PolicyVm,
    port: u16,
    ctx: &Ctx,
) -> Tri {
    let at = |e: &str| Tri::Unknown(format!("rules[{}]: {e}", rule.index));
    let direction = match &rule.direction {
        Ok(d) => Tri::from_bool(*d == dir),
        Err(e) => at(e),
    };
    direction
        .and(|| match &rule.ports {
            Ok(p) => match port_matches(p, port) {
                Tri::Unknown(w) => at(&w),
                t => t,
            },
            Err(e) => at(e),
        })
        .and(|| applied(policy, rule, this, ctx))
        .and(|| match &rule.peers {
            Ok(peers) if peers.is_empty() => Tri::Yes,
            Ok(peers) => match Tri::any(
                peers
                    .iter()
                    .map(|p| peer_matches(p, &policy.namespace, other, ctx)),
            ) {
                Tri::Unknown(w) => at(&w),
                t => t,
            },
            Err(e) => at(e),
        })
        .and(|| match &rule.action {
            Ok(_) => Tri::Yes,
            Err(e) => at(e),
        })
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

fn who(p: &Policy) -> String {
    format!("{}/{}", p.namespace, p.name)
}

/// One policy's first hit on a check: the first rule that matches or cannot be told apart.
fn first_hit(matches: &[Tri], policy: &Policy) -> Option<(usize, Tri)> {
    let hit = matches
        .iter()
        .enumerate()
        .find(|(_, t)| **t != Tri::No)
        .map(|(i, t)| (i, t.clone()));
    match hit {
        None if policy.rules_truncated => Some((
            matches.len(),
            Tri::Unknown(format!(
                "policy {} has more rules than are read",
                who(policy)
            )),
        )),
        h => h,
    }
}

struct SideResult {
    outcome: SideOutcome,
    covering: Vec<(RuleRef, CoverReason)>,
}

/// One check. `order` is the policies sorted by priority, namespace, name, group.
#[allow(clippy::too_many_arguments)]
fn check(
    policies: &[Policy],
    order: &[usize],
    dir: Direction,
    this: &PolicyVm,
    other: &PolicyVm,
    port: u16,
    ctx: &Ctx,
) -> SideResult {
    // Every rule's match, once.
    let matches: Vec<Vec<Tri>> = policies
        .iter()
        .map(|p| {
            p.rules
                .iter()
                .map(|r| rule_matches(p, r, dir, this, other, port, ctx))
                .collect()
        })
        .collect();
    let realized = |i: usize| policies[i].realization.state == RealizedState::Realized;

    // A policy in effect whose priority cannot be read may come anywhere.
    let unordered = order.iter().copied().find(|&i| {
        realized(i)
            && policies[i].priority.is_err()
            && first_hit(&matches[i], &policies[i]).is_some()
    });

    // Walk the priorities in effect, lowest first.
    let mut outcome = SideOutcome::NoVisibleRule;
    let mut decided: Option<(u32, usize, usize)> = None; // (priority, policy, rule)
    let in_effect: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| realized(i) && policies[i].priority.is_ok())
        .collect();
    let mut k = 0;
    while k < in_effect.len() && decided.is_none() {
        let prio = *policies[in_effect[k]].priority.as_ref().unwrap_or(&0);
        let group: Vec<usize> = in_effect[k..]
            .iter()
            .copied()
            .take_while(|&i| policies[i].priority.as_ref().ok() == Some(&prio))
            .collect();
        k += group.len();
        let hits: Vec<(usize, usize, Tri)> = group
            .iter()
            .filter_map(|&i| first_hit(&matches[i], &policies[i]).map(|(r, t)| (i, r, t)))
            .collect();
        let Some((pi, ri, first)) = hits.first().cloned() else {
            continue;
        };
        if let Some((_, _, Tri::Unknown(why))) =
            hits.iter().find(|h| matches!(h.2, Tri::Unknown(_)))
        {
            outcome = SideOutcome::CannotDecide {
                why: format!("{why} (priority {prio})"),
            };
            decided = Some((prio, pi, ri));
            break;
        }
        debug_assert_eq!(first, Tri::Yes);
        let action = |&(p, r, _): &(usize, usize, Tri)| policies[p].rules[r].action.clone().ok();
        if let Some(other_hit) = hits.iter().find(|h| action(h) != action(&hits[0])) {
            outcome = SideOutcome::CannotDecide {
                why: format!(
                    "policies {} and {} share priority {prio} and both match with different actions: NSX's order between them is not visible",
                    who(&policies[pi]),
                    who(&policies[other_hit.0])
                ),
            };
            decided = Some((prio, pi, ri));
            break;
        }
        if let Some(rule) = rule_ref(&policies[pi], prio, &policies[pi].rules[ri]) {
            outcome = SideOutcome::Matched { rule };
        }
        decided = Some((prio, pi, ri));
    }
    if let Some(i) = unordered {
        outcome = SideOutcome::CannotDecide {
            why: format!(
                "policy {}: {}",
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

    let mut covering = Vec::new();
    // Shadowed: blocking rules in effect that match after the deciding Allow.
    if let SideOutcome::Matched { rule: by } = &outcome {
        if by.action == Action::Allow {
            let (dprio, dp, dr) = decided.unwrap_or((0, 0, 0));
            for &i in &in_effect {
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
                        first_hit(&matches[i], p).map_or(usize::MAX, |(r, _)| r + 1)
                    }
                } else {
                    0
                };
                for (r, t) in matches[i].iter().enumerate().skip(from) {
                    let rule = &p.rules[r];
                    if *t == Tri::Yes && rule.action.as_ref().is_ok_and(|a| a.blocks()) {
                        if let Some(rr) = rule_ref(p, prio, rule) {
                            covering.push((rr, CoverReason::Shadowed { by: by.clone() }));
                        }
                    }
                }
            }
        }
    }
    // Not realized: their blocking rules that match, and whether each would decide once realized.
    for &i in order {
        let p = &policies[i];
        if realized(i) {
            continue;
        }
        let Ok(prio) = p.priority else { continue };
        let own_first = first_hit(&matches[i], p).map(|(r, _)| r);
        for (r, t) in matches[i].iter().enumerate() {
            let rule = &p.rules[r];
            if *t != Tri::Yes || !rule.action.as_ref().is_ok_and(|a| a.blocks()) {
                continue;
            }
            let before_decision = match decided {
                None => true,
                Some((dprio, _, _)) => prio <= dprio,
            };
            let would_decide = own_first == Some(r) && before_decision && unordered.is_none();
            if let Some(rr) = rule_ref(p, prio, rule) {
                covering.push((
                    rr,
                    CoverReason::NotRealized {
                        state: p.realization.state,
                        would_decide,
                    },
                ));
            }
        }
    }
    SideResult { outcome, covering }
}

fn combine(egress: &SideOutcome, ingress: &SideOutcome) -> PathOutcome {
    let blocking = |s: &SideOutcome| match s {
        SideOutcome::Matched { rule } if rule.action == Action::Drop => {
            Some(PathOutcome::Dropped { rule: rule.clone() })
        }
        SideOutcome::Matched { rule } if rule.action == Action::Reject => {
            Some(PathOutcome::Rejected { rule: rule.clone() })
        }
        _ => None,
    };
    if let Some(b) = blocking(egress).or_else(|| blocking(ingress)) {
        return b;
    }
    for s in [egress, ingress] {
        if let SideOutcome::CannotDecide { why } = s {
            return PathOutcome::CannotDecide { why: why.clone() };
        }
    }
    let allow = |s: &SideOutcome| match s {
        SideOutcome::Matched { rule } => Some(rule.clone()),
        _ => None,
    };
    match (allow(egress), allow(ingress)) {
        (None, None) => PathOutcome::NoVisibleRule,
        (e, i) => PathOutcome::Allowed {
            egress: e,
            ingress: i,
        },
    }
}

fn summary(p: &Policy, vms: &[PolicyVm], ctx: &Ctx) -> PolicySummary {
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
        unreadable.push(format!(
            "rules past the {}th were not read",
            super::model::MAX_RULES
        ));
    }
    let mut applies_to = Vec::new();
    let mut undecided = Vec::new();
    for vm in vms {
        let t = match &p.applied_to {
            Err(e) => Tri::Unknown(e.clone()),
            Ok(ts) if !ts.is_empty() => {
                Tri::from_bool(ts.iter().any(|t| target_selects(t, &p.namespace, vm, ctx)))
            }
            Ok(_) => Tri::any(p.rules.iter().map(|r| match &r.applied_to {
                Err(e) => Tri::Unknown(e.clone()),
                Ok(ts) => {
                    Tri::from_bool(ts.iter().any(|t| target_selects(t, &p.namespace, vm, ctx)))
                }
            })),
        };
        match t {
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
        in_effect: p.realization.state == RealizedState::Realized,
        applies_to,
        applies_to_undecided: undecided,
        rule_count: p.rules.len(),
        unreadable,
        notes: p.notes.clone(),
    }
}

/// Evaluates the SecurityPolicies against the control-plane VMs. Pure; never fails.
pub fn evaluate(input: &PolicyInput) -> PolicyEvaluation {
    let ctx = Ctx {
        namespace: &input.namespace,
        namespace_labels: &input.namespace_labels,
    };
    let mut vms: Vec<PolicyVm> = input.vms.iter().take(MAX_VMS).cloned().collect();
    vms.sort_by(|a, b| a.name.cmp(&b.name));
    vms.dedup_by(|a, b| a.name == b.name);

    let policies: Vec<Policy> = input
        .policies
        .iter()
        .take(MAX_POLICIES)
        .map(Policy::read)
        .collect();
    let policies_not_read = input.policies.len().saturating_sub(MAX_POLICIES);
    let mut order: Vec<usize> = (0..policies.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&policies[a], &policies[b]);
        (
            pa.priority.as_ref().ok().is_none(),
            pa.priority.as_ref().ok(),
            &pa.namespace,
            &pa.name,
            pa.group,
        )
            .cmp(&(
                pb.priority.as_ref().ok().is_none(),
                pb.priority.as_ref().ok(),
                &pb.namespace,
                &pb.name,
                pb.group,
            ))
    });

    let mut paths = Vec::new();
    let mut covering = Vec::new();
    for port in ETCD_PORTS {
        for from in &vms {
            for to in &vms {
                if from.name == to.name {
                    continue;
                }
                let e = check(&policies, &order, Direction::Out, from, to, port, &ctx);
                let i = check(&policies, &order, Direction::In, to, from, port, &ctx);
                let mut outcome = combine(&e.outcome, &i.outcome);
                if policies_not_read > 0
                    && !matches!(
                        outcome,
                        PathOutcome::Dropped { .. } | PathOutcome::Rejected { .. }
                    )
                {
                    outcome = PathOutcome::CannotDecide {
                        why: format!("{policies_not_read} policies past the first {MAX_POLICIES} were not read"),
                    };
                }
                for (side, r) in [(Side::Egress, e.covering), (Side::Ingress, i.covering)] {
                    for (rule, reason) in r {
                        covering.push(CoveringRule {
                            port,
                            from: from.name.clone(),
                            to: to.name.clone(),
                            side,
                            rule,
                            reason,
                        });
                    }
                }
                paths.push(PathEvaluation {
                    port,
                    from: from.name.clone(),
                    to: to.name.clone(),
                    outcome,
                    egress: e.outcome,
                    ingress: i.outcome,
                });
            }
        }
    }
    PolicyEvaluation {
        namespace: clip(&input.namespace, MAX_NAME_CHARS),
        vms: vms.iter().map(|v| v.name.clone()).collect(),
        policies: order
            .iter()
            .map(|&i| summary(&policies[i], &vms, &ctx))
            .collect(),
        policies_not_read,
        paths,
        covering,
    }
}
