//! The one firewall engine: an ordered, normalized rule set evaluated per path (port, FROM → TO)
//! and per check (the egress check at FROM, the ingress check at TO), each check the first
//! matching rule in the set's order. Pure, no I/O, bounded.
//!
//! Two sources normalize into it (adapters): the SecurityPolicies as nsx-operator realizes them
//! (`analyse::policy`, issue 28) and NSX Manager's distributed firewall (`analyse::dfw`,
//! issues 31 and 37). What they share, and what lives here once:
//! - a rule's predicates (applies to, source, destination, service, direction) answer yes, no
//!   or cannot tell ([`Tri`]); "cannot tell" is never turned into a guess;
//! - the order: tiers of sections (a SecurityPolicy's priority, a DFW policy's place) whose
//!   order among them is not visible, each section's rules in groups whose order among them
//!   is not visible either (a DFW rule's sequence number; a SecurityPolicy's rules are each
//!   alone). The first hit of a section ([`first_hit`]), then of a tier ([`tier_hit`]): a rule
//!   that may match but cannot be told, or two tied hits with different actions, make the
//!   check "cannot decide" ([`SideOutcome::CannotDecide`]);
//! - the path: both checks together ([`PathOutcome::of`]), the blocking rules each with their
//!   paths ([`blocking_of`]), the VMs and the paths bounded ([`MAX_VMS`], [`vm_pairs`]);
//! - the one clip for the text that comes from outside ([`clip`]: cut, left to the render
//!   layer's sanitizer).
//!
//! What differs stays in the adapter: how a source's objects are read, its tiers (priority;
//! tree, category and sequence number), its own continuations (the DFW's layer 2 ALLOW and
//! `JUMP_TO_APPLICATION`, the policies not realized), and the words that name its rules.

use serde::{Deserialize, Serialize};

/// The ports evaluated: etcd's client and peer ports, TCP.
pub const ETCD_PORTS: [u16; 2] = [2379, 2380];
/// At most this many VMs are evaluated (a control plane has 1, 3, 5 or 7), whatever the source.
pub const MAX_VMS: usize = 16;
/// At most this many rules are evaluated in all, whatever the source; past it every check is
/// "cannot decide". A fifth of NSX 4.1's tested maximum of DFW rules on one manager (100,000,
/// configmax.vmware.com), enough for any Supervisor we know, and bounded work. The
/// SecurityPolicies stay under it by construction ([`MAX_SECTION_RULES`] times the policies
/// evaluated, `policy::MAX_POLICIES`).
pub const MAX_RULES: usize = 20_000;
/// At most this many rules of one section are read (a SecurityPolicy's `spec.rules`; nsx-operator
/// sets no maximum on the list, `securitypolicy_types.go`): the rest are one unreadable tail
/// that makes a check they could decide "cannot decide". NSX Manager's policies are bounded
/// by the reader instead (`nsxmanager::bound`) and by [`MAX_RULES`] in all.
pub const MAX_SECTION_RULES: usize = 64;
/// An address a rule names (one IP, a CIDR, a range), whatever the source: NSX Manager's reader
/// parses it below this layer; the SecurityPolicies' `ipBlocks` are its CIDRs.
pub(crate) use crate::nsxmanager::model::AddrSpec;
/// Names (a policy's, a rule's, a namespace's, a VM's, a display name) are cut to this many
/// characters, whatever the source.
pub use crate::nsxmanager::model::MAX_NAME_CHARS;

/// The engine's one clip for text from outside (a name, a path, a reason read from the
/// Supervisor, NSX Manager or a bundle): cut to `max` characters (then `…`), nothing replaced.
/// The render layer's sanitizer (`render::visible`) escapes later, each hidden character shown
/// as what it is; json escapes control characters itself. (NSX Manager's reader replaces them
/// as it reads, `nsxmanager::model::clip`: below this layer, not the engine's.)
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Three-valued: a match, no match, or cannot tell (why). Every predicate of every source
/// answers in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tri {
    Yes,
    No,
    Unknown(String),
}

impl Tri {
    pub fn from_bool(b: bool) -> Tri {
        if b {
            Tri::Yes
        } else {
            Tri::No
        }
    }

    /// AND: any No is No, else any Unknown is Unknown (the first one's why).
    pub fn and(self, other: impl FnOnce() -> Tri) -> Tri {
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
    pub fn any(items: impl IntoIterator<Item = Tri>) -> Tri {
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

/// NOT: an exclusion (the DFW's `sources_excluded`); cannot tell stays cannot tell.
impl std::ops::Not for Tri {
    type Output = Tri;

    fn not(self) -> Tri {
        match self {
            Tri::Yes => Tri::No,
            Tri::No => Tri::Yes,
            u => u,
        }
    }
}

/// Which check of a path: at FROM on the way out, or at TO on the way in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Side {
    Egress,
    Ingress,
}

/// One check's packet: the side, its source and destination VM (FROM and TO of the path), the
/// port. `V` is how an adapter names a VM (an index, a reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At<V> {
    pub side: Side,
    pub src: V,
    pub dst: V,
    pub port: u16,
}

impl<V: Copy> At<V> {
    /// The VM the check runs at: FROM on the way out, TO on the way in.
    pub fn here(&self) -> V {
        match self.side {
            Side::Egress => self.src,
            Side::Ingress => self.dst,
        }
    }
}

/// The engine's normalized rule, whichever adapter fills it (a SecurityPolicy rule with its
/// facts computed once, a DFW rule with its groups and services): its predicates at one check,
/// each yes, no or cannot tell. [`Rule::matches`] is the one match of every source: the
/// predicates in this order, the first "cannot tell" being the why.
pub trait Rule<V: Copy> {
    /// Counts at this side (a DFW rule: and is enabled).
    fn direction(&self, side: Side) -> Tri;
    /// TCP to the port (a DFW rule: and the VMs' IP family).
    fn service(&self, at: At<V>) -> Tri;
    /// Applied to the VM the check runs at.
    fn applies_to(&self, here: V) -> Tri;
    /// Selects the packet's source.
    fn source(&self, src: V) -> Tri;
    /// Selects the packet's destination.
    fn destination(&self, dst: V) -> Tri;
    /// Nothing else restricts it (a DFW rule's context profiles) and its action is read.
    fn rest(&self) -> Tri;

    /// Whether the rule matches this check.
    fn matches(&self, at: At<V>) -> Tri {
        self.direction(at.side)
            .and(|| self.service(at))
            .and(|| self.applies_to(at.here()))
            .and(|| self.source(at.src))
            .and(|| self.destination(at.dst))
            .and(|| self.rest())
    }
}

/// One path: a port, FROM and TO.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct PathRef {
    pub port: u16,
    pub from: String,
    pub to: String,
}

/// Paths named in one line; the rest are counted.
const PATHS_NAMED: usize = 6;

/// `a → b:2380, ...`, at most [`PATHS_NAMED`] and a count of the rest: how every evidence line
/// names paths (the SecurityPolicies', NSX Manager's and the nodes' own firewalls').
pub fn paths_text(paths: &[PathRef]) -> String {
    let mut parts: Vec<String> = paths
        .iter()
        .take(PATHS_NAMED)
        .map(|p| format!("{} → {}:{}", p.from, p.to, p.port))
        .collect();
    if paths.len() > PATHS_NAMED {
        parts.push(format!("{} more", paths.len() - PATHS_NAMED));
    }
    parts.join(", ")
}

/// A rule's action.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Action {
    Allow,
    Drop,
    Reject,
}

/// A source's rule reference (what the output names): what it does when it decides.
pub trait Verdict {
    fn effect(&self) -> Action;
}

/// What one check (egress at FROM, ingress at TO) comes to, `R` naming the rule. Also the json
/// contract's (`report::v1alpha2::firewall` names its schema per source).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all_fields = "camelCase")]
pub enum SideOutcome<R> {
    /// The first matching rule.
    Matched { rule: R },
    /// No visible rule matches: what happens is decided outside what was read.
    NoVisibleRule,
    /// A rule that might come first cannot be evaluated, or the order is not visible.
    CannotDecide { why: String },
}

/// What one path (port, FROM → TO) comes to, both checks together. Also the json contract's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "outcome",
    rename_all_fields = "camelCase",
    bound(deserialize = "R: Deserialize<'de>")
)]
pub enum PathOutcome<R> {
    /// A Drop rule is the first match of a check (the egress check's when both block).
    Dropped { rule: R },
    /// A Reject rule is the first match of a check.
    Rejected { rule: R },
    /// No check blocks and at least one has an Allow as its first match; a check without a
    /// visible rule falls through to what is not visible.
    Allowed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        egress: Option<R>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ingress: Option<R>,
    },
    /// No visible rule matches either check.
    NoVisibleRule,
    /// A check cannot be decided and the other does not block.
    CannotDecide { why: String },
}

impl<R> SideOutcome<R> {
    /// The same outcome, each rule named by `rule` and each reason rewritten by `why` (the
    /// contract's names and clips).
    pub fn map<S>(&self, rule: impl Fn(&R) -> S, why: impl Fn(&str) -> String) -> SideOutcome<S> {
        match self {
            SideOutcome::Matched { rule: r } => SideOutcome::Matched { rule: rule(r) },
            SideOutcome::NoVisibleRule => SideOutcome::NoVisibleRule,
            SideOutcome::CannotDecide { why: w } => SideOutcome::CannotDecide { why: why(w) },
        }
    }
}

impl<R> PathOutcome<R> {
    /// The rule that blocks the path, when a visible one does.
    pub fn blocking_rule(&self) -> Option<&R> {
        match self {
            PathOutcome::Dropped { rule } | PathOutcome::Rejected { rule } => Some(rule),
            _ => None,
        }
    }

    /// The same outcome, each rule named by `rule` and each reason rewritten by `why`.
    pub fn map<S>(&self, rule: impl Fn(&R) -> S, why: impl Fn(&str) -> String) -> PathOutcome<S> {
        match self {
            PathOutcome::Dropped { rule: r } => PathOutcome::Dropped { rule: rule(r) },
            PathOutcome::Rejected { rule: r } => PathOutcome::Rejected { rule: rule(r) },
            PathOutcome::Allowed { egress, ingress } => PathOutcome::Allowed {
                egress: egress.as_ref().map(&rule),
                ingress: ingress.as_ref().map(&rule),
            },
            PathOutcome::NoVisibleRule => PathOutcome::NoVisibleRule,
            PathOutcome::CannotDecide { why: w } => PathOutcome::CannotDecide { why: why(w) },
        }
    }
}

impl<R: Verdict + Clone> PathOutcome<R> {
    /// The egress check at FROM and the ingress check at TO of one path: blocked when either
    /// check's first match blocks (the egress check's first: the packet never leaves FROM),
    /// else cannot decide when a check cannot, else allowed when a check's first match allows
    /// (a check without a visible rule falls through to what is not visible), else no visible
    /// rule.
    pub fn of(egress: &SideOutcome<R>, ingress: &SideOutcome<R>) -> PathOutcome<R> {
        let matched = |s: &SideOutcome<R>| match s {
            SideOutcome::Matched { rule } => Some(rule.clone()),
            _ => None,
        };
        for rule in [egress, ingress].into_iter().filter_map(matched) {
            match rule.effect() {
                Action::Drop => return PathOutcome::Dropped { rule },
                Action::Reject => return PathOutcome::Rejected { rule },
                Action::Allow => {}
            }
        }
        for s in [egress, ingress] {
            if let SideOutcome::CannotDecide { why } = s {
                return PathOutcome::CannotDecide { why: why.clone() };
            }
        }
        match (matched(egress), matched(ingress)) {
            (None, None) => PathOutcome::NoVisibleRule,
            (egress, ingress) => PathOutcome::Allowed { egress, ingress },
        }
    }
}

/// One path's evaluation, whatever the source: the path, what it comes to, and its two checks.
/// Also the json contract's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "R: Deserialize<'de>"))]
pub struct PathEvaluation<R> {
    pub port: u16,
    pub from: String,
    pub to: String,
    pub outcome: PathOutcome<R>,
    pub egress: SideOutcome<R>,
    pub ingress: SideOutcome<R>,
    /// A blocking rule of a section not in effect as written that would be the first match of
    /// a check once realized (the egress check's first): the SecurityPolicies' Ready False or
    /// refused ones, whose last realized version NSX may still enforce. NSX Manager shows what
    /// is realized: always `None` there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_realized: Option<R>,
}

impl<R: Verdict + Clone> PathEvaluation<R> {
    /// The path's two checks together ([`PathOutcome::of`]).
    pub fn new(path: PathRef, egress: SideOutcome<R>, ingress: SideOutcome<R>) -> Self {
        PathEvaluation {
            port: path.port,
            from: path.from,
            to: path.to,
            outcome: PathOutcome::of(&egress, &ingress),
            egress,
            ingress,
            not_realized: None,
        }
    }
}

impl<R> PathEvaluation<R> {
    /// The same evaluation, each rule named by `rule`, each reason rewritten by `why`, each VM
    /// name by `name` (the contract's names and clips).
    pub fn map<S>(
        &self,
        rule: impl Fn(&R) -> S,
        why: impl Fn(&str) -> String,
        name: impl Fn(&str) -> String,
    ) -> PathEvaluation<S> {
        PathEvaluation {
            port: self.port,
            from: name(&self.from),
            to: name(&self.to),
            outcome: self.outcome.map(&rule, &why),
            egress: self.egress.map(&rule, &why),
            ingress: self.ingress.map(&rule, &why),
            not_realized: self.not_realized.as_ref().map(&rule),
        }
    }

    pub fn path_ref(&self) -> PathRef {
        PathRef {
            port: self.port,
            from: self.from.clone(),
            to: self.to.clone(),
        }
    }
}

/// The evaluation of one path among `paths`.
pub fn find_path<'a, R>(
    paths: &'a [PathEvaluation<R>],
    port: u16,
    from: &str,
    to: &str,
) -> Option<&'a PathEvaluation<R>> {
    paths
        .iter()
        .find(|p| p.port == port && p.from == from && p.to == to)
}

/// The paths that cannot be decided, grouped by reason (each once, in path order): for the
/// lines that say why (both renderers).
pub fn undecided<R>(paths: &[PathEvaluation<R>]) -> Vec<(&str, Vec<PathRef>)> {
    let mut out: Vec<(&str, Vec<PathRef>)> = Vec::new();
    for p in paths {
        let PathOutcome::CannotDecide { why } = &p.outcome else {
            continue;
        };
        match out.iter_mut().find(|(w, _)| *w == why.as_str()) {
            Some((_, ps)) => ps.push(p.path_ref()),
            None => out.push((why, vec![p.path_ref()])),
        }
    }
    out
}

/// The blocking rules of evaluated paths, each once with the paths it blocks, in path order.
pub fn blocking_of_paths<R: PartialEq + Clone>(paths: &[PathEvaluation<R>]) -> Vec<Blocking<R>> {
    blocking_of(paths.iter().map(|p| (p.path_ref(), &p.outcome)))
}

/// A rule that blocks paths now, with those paths (in path order). Also the json contract's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blocking<R> {
    pub rule: R,
    pub paths: Vec<PathRef>,
}

impl<R> Blocking<R> {
    /// The same rule named by `rule`, with its paths rewritten by `paths` (the contract's
    /// bound and clips).
    pub fn map<S>(
        &self,
        rule: impl Fn(&R) -> S,
        paths: impl Fn(&[PathRef]) -> Vec<PathRef>,
    ) -> Blocking<S> {
        Blocking {
            rule: rule(&self.rule),
            paths: paths(&self.paths),
        }
    }
}

/// The blocking rules of the paths given (in path order), each once with the paths it blocks.
pub fn blocking_of<'a, R: PartialEq + Clone + 'a>(
    paths: impl IntoIterator<Item = (PathRef, &'a PathOutcome<R>)>,
) -> Vec<Blocking<R>> {
    let mut blocking: Vec<Blocking<R>> = Vec::new();
    for (path, outcome) in paths {
        let Some(rule) = outcome.blocking_rule() else {
            continue;
        };
        match blocking.iter_mut().find(|b| &b.rule == rule) {
            Some(b) => b.paths.push(path),
            None => blocking.push(Blocking {
                rule: rule.clone(),
                paths: vec![path],
            }),
        }
    }
    blocking
}

/// The VMs evaluated: the first [`MAX_VMS`] given, sorted by name, each name once.
pub fn bounded_vms<V: Clone>(vms: &[V], name: impl Fn(&V) -> &str) -> Vec<V> {
    let mut out: Vec<V> = vms.iter().take(MAX_VMS).cloned().collect();
    out.sort_by(|a, b| name(a).cmp(name(b)));
    out.dedup_by(|a, b| name(a) == name(b));
    out
}

/// Every path of `n` VMs in the engine's order: per port of [`ETCD_PORTS`], per FROM, per TO
/// (indexes into the VMs), FROM ≠ TO.
pub fn vm_pairs(n: usize) -> impl Iterator<Item = (u16, usize, usize)> {
    ETCD_PORTS.into_iter().flat_map(move |port| {
        (0..n).flat_map(move |f| (0..n).filter(move |t| *t != f).map(move |t| (port, f, t)))
    })
}

/// A section's (a policy's) first hit on one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit<A> {
    /// Rule `.0` matches and does `.1`.
    Rule(usize, A),
    /// Rule `.0` may match but cannot be told (`.1` why); `.0` is the section's rule count for
    /// its unread tail.
    Unknown(usize, String),
    /// Rules `.0` and `.1`, whose order is not visible, both match with different actions.
    Split(usize, usize),
}

impl<A> Hit<A> {
    /// The rule the hit is at (the first of a split).
    pub fn rule(&self) -> usize {
        match self {
            Hit::Rule(r, _) | Hit::Unknown(r, _) | Hit::Split(r, _) => *r,
        }
    }
}

/// A section's first hit: `groups` are its rules in order, each group's rules in an order that
/// is not visible; `matches` answers a rule's predicates at this check (a rule whose action
/// cannot be read answers cannot tell); `action` is a matching rule's action; `tail`: rules
/// past a bound were not read (why), and any of them could be the first hit. `None`: no rule
/// matches.
pub fn first_hit<A: Copy + PartialEq, G: IntoIterator<Item = usize>>(
    groups: impl IntoIterator<Item = G>,
    mut matches: impl FnMut(usize) -> Tri,
    action: impl Fn(usize) -> Option<A>,
    tail: Option<(usize, &str)>,
) -> Option<Hit<A>> {
    for group in groups {
        let mut yes: Vec<(usize, A)> = Vec::new();
        for r in group {
            match matches(r) {
                Tri::No => {}
                Tri::Unknown(why) => return Some(Hit::Unknown(r, why)),
                Tri::Yes => yes.extend(action(r).map(|a| (r, a))),
            }
        }
        if let Some(&(r, a)) = yes.first() {
            return Some(match yes.iter().find(|(_, b)| *b != a) {
                Some(&(other, _)) => Hit::Split(r, other),
                None => Hit::Rule(r, a),
            });
        }
    }
    tail.map(|(n, why)| Hit::Unknown(n, why.to_string()))
}

/// A tier's first hit on one check: the tier's sections (whose order among them is not
/// visible), each with its own first hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierHit<A> {
    /// The first section's hit decides: section, rule, action.
    Rule(usize, usize, A),
    /// A section's hit cannot be told or is split: the check cannot be decided. `first`: the
    /// first section hit (section, rule), `at`: the section whose hit cannot be told, and it.
    Cannot {
        first: (usize, usize),
        at: usize,
        hit: Hit<A>,
    },
    /// Two sections both hit with different actions: NSX's order between them is not
    /// visible. `first` (section, rule) and the other section.
    Split { first: (usize, usize), other: usize },
}

impl<A> TierHit<A> {
    /// The section and rule of the tier's first hit.
    pub fn first(&self) -> (usize, usize) {
        match self {
            TierHit::Rule(s, r, _) => (*s, *r),
            TierHit::Cannot { first, .. } | TierHit::Split { first, .. } => *first,
        }
    }
}

/// A tier's first hit from its sections' hits, in the tier's listed order; `None`: none hits.
pub fn tier_hit<A: Copy + PartialEq>(
    hits: impl IntoIterator<Item = (usize, Option<Hit<A>>)>,
) -> Option<TierHit<A>> {
    let hits: Vec<(usize, Hit<A>)> = hits
        .into_iter()
        .filter_map(|(s, h)| h.map(|h| (s, h)))
        .collect();
    let (s0, h0) = hits.first()?;
    let first = (*s0, h0.rule());
    if let Some((at, hit)) = hits.iter().find(|(_, h)| !matches!(h, Hit::Rule(..))) {
        return Some(TierHit::Cannot {
            first,
            at: *at,
            hit: hit.clone(),
        });
    }
    let action = |h: &Hit<A>| match h {
        Hit::Rule(_, a) => Some(*a),
        _ => None,
    };
    if let Some((other, _)) = hits.iter().find(|(_, h)| action(h) != action(h0)) {
        return Some(TierHit::Split {
            first,
            other: *other,
        });
    }
    let a = action(h0)?;
    Some(TierHit::Rule(first.0, first.1, a))
}

/// What an adapter makes of a tier's first hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then<R> {
    /// The check comes to this.
    Decide(SideOutcome<R>),
    /// The walk goes on to the next tier (the DFW's layer 2 ALLOW, `JUMP_TO_APPLICATION`).
    GoOn,
}

/// One check, the engine's one walk for every source: `tiers` in order, each its sections'
/// first hits (computed only when the tier is reached: an adapter may leave tiers out after a
/// continuation); the first tier that hits is handed to `then`, which decides the check in its
/// source's words or lets the walk go on. No tier decides: no visible rule.
pub fn check<A, R, T, S>(tiers: T, mut then: impl FnMut(TierHit<A>) -> Then<R>) -> SideOutcome<R>
where
    A: Copy + PartialEq,
    T: IntoIterator<Item = S>,
    S: IntoIterator<Item = (usize, Option<Hit<A>>)>,
{
    for tier in tiers {
        if let Some(hit) = tier_hit(tier) {
            if let Then::Decide(outcome) = then(hit) {
                return outcome;
            }
        }
    }
    SideOutcome::NoVisibleRule
}

#[cfg(test)]
mod tests;
