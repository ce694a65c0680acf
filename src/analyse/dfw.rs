//! NSX Manager's distributed firewall evaluated against the control-plane VMs: for TCP 2379 and
//! 2380 and every ordered pair (FROM, TO), the egress check at FROM's vNIC and the ingress check
//! at TO's, each the first matching enabled rule in NSX's order (the engine's walk,
//! [`firewall::check`]). Pure: the input is
//! [`DfwInput`](crate::nsxmanager::model::DfwInput).
//!
//! NSX's order, as the Policy API reference says it (phspies/nsxtsdk
//! `nsxtsdk/Policy/Models/NSXTPolicyType.cs`, `NSXTBaseRuleType.cs`, `NSXTRuleType.cs`):
//! - trees first ([`tree_rank`]), then categories: Ethernet, Emergency, Infrastructure,
//!   Environment, Application, none ("the least precedence"); a category or tree we do not
//!   know has no place, so a rule of it that could decide makes the check "cannot decide"
//!   ("Categories are evaluated from left to right", NSX-T 3.2 administration GUID-6AB240DB;
//!   "Layer 2 firewall rules are processed before Layer 3 rules and if allowed [...] will then
//!   be processed by the Layer 3 rules", NSX 4.1 GUID-22DF2616);
//! - then policies, then rules, by `sequence_number`: ties are "not deterministic", so tied
//!   matches with different actions cannot decide;
//! - `JUMP_TO_APPLICATION` (Environment only) skips to Application; a layer 2 ALLOW ends the
//!   layer 2 rules; layer 2 rules match MACs, not IPs: one not of ANY cannot decide;
//! - `direction` is relative to the vNIC; the policy's `scope` "will take precedence over rule
//!   level scope"; groups are matched through what NSX realized (its group associations first,
//!   then member lists, which answer only for groups of their own member type); a list not
//!   read whole cannot decide, never a guess; services and context profiles the same.
//!
//! Not modeled: the policies' time windows (`scheduler_path`); the VPC's security profile is
//! not read, its templates' rules are evaluated where NSX instantiates them ("these rule
//! templates are instantiated into concrete firewall rules", `RuleTemplate`), as the VPC's
//! default policy (NSX 4.1 administration GUID-9026BE25).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::analyse::firewall::{
    self, clip, Action, Hit, PathRef, Side, Then, TierHit, Tri, Verdict,
};
pub use crate::analyse::firewall::{MAX_RULES, MAX_VMS};
use crate::nsxmanager::model::{
    Category, DfwInput, DfwVm, Endpoint, GroupMembers, Identity, IpFamily, MemberList, PolicyRules,
    Rule, RuleAction, RuleDirection, SecurityPolicy, ServiceEntry, MAX_NESTING,
};

/// A DFW rule, named as an admin finds it in NSX Manager.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct DfwRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The rule's policy path (`/infra/domains/default/security-policies/<p>/rules/<r>`), or
    /// `(no path)`.
    pub path: String,
    /// The number the datapath and a traceflow's `acl_rule_id` use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<u64>,
    /// Its policy's category (as `policiesByCategory` names them).
    pub category: String,
    pub policy_path: String,
    pub policy_name: String,
    /// The policy's `sequence_number` (absent: unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_sequence: Option<i64>,
    /// The rule's `sequence_number` inside its policy (absent: unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_sequence: Option<i64>,
    pub action: RuleAction,
}

impl DfwRule {
    /// `"name" (path; category Infrastructure, policy "p" sequence 10, rule sequence 20)`.
    pub fn label(&self) -> String {
        let seq = |s: Option<i64>| s.map_or_else(|| "unknown".to_string(), |n| n.to_string());
        format!(
            "{} ({}; category {}, policy \"{}\" sequence {}, rule sequence {}{})",
            self.display_name
                .as_deref()
                .map(|n| format!("\"{n}\""))
                .unwrap_or_else(|| "a rule without a name".into()),
            self.path,
            self.category,
            self.policy_name,
            seq(self.policy_sequence),
            seq(self.rule_sequence),
            self.rule_id
                .map(|id| format!(", rule id {id}"))
                .unwrap_or_default()
        )
    }
}

impl Verdict for DfwRule {
    fn effect(&self) -> Action {
        match self.action {
            RuleAction::Drop => Action::Drop,
            RuleAction::Reject => Action::Reject,
            // An ALLOW, or a jump that reached the end: the check does not block.
            RuleAction::Allow | RuleAction::JumpToApplication => Action::Allow,
        }
    }
}

/// What one check (egress at FROM's vNIC, ingress at TO's) comes to: the first matching
/// enabled layer 3 rule (or a layer 2 DROP/REJECT), no rule read matches, or a rule that might
/// come first cannot be evaluated, or the order is not visible.
pub type DfwSideOutcome = firewall::SideOutcome<DfwRule>;
/// What one path comes to, both checks together.
pub type DfwPathOutcome = firewall::PathOutcome<DfwRule>;
/// A rule that blocks paths, with those paths (in path order).
pub type DfwBlocking = firewall::Blocking<DfwRule>;

/// One path (port, FROM → TO; VMs named by their node): the engine's (`not_realized` is always
/// `None`: NSX Manager shows what is realized).
pub type DfwPath = firewall::PathEvaluation<DfwRule>;

/// A DROP/REJECT rule that matches allowed paths after the ALLOW that decides them: not blamed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DfwShadowedRule")]
pub struct DfwShadowed {
    pub rule: DfwRule,
    /// The ALLOW that comes first.
    pub by: DfwRule,
    pub paths: Vec<PathRef>,
}

/// At most this many shadowed rules are listed (the rest counted).
pub const MAX_SHADOWED: usize = 32;

/// What was read, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "NsxReadCounts")]
pub struct DfwCounts {
    pub policies: usize,
    /// Policies per category, in NSX's order.
    pub policies_by_category: Vec<CategoryCount>,
    pub rules: usize,
    pub rules_disabled: usize,
    /// Rules with a part that could not be read.
    pub rules_unreadable: usize,
    /// Policies whose rules were not all read.
    pub policies_rules_incomplete: usize,
    /// Groups the rules name.
    pub groups: usize,
    /// Of those, groups with every member kind read whole.
    pub groups_members_whole: usize,
    pub services: usize,
    pub vms: usize,
    /// VMs whose NSX identity was confirmed both ways.
    pub vms_identified: usize,
    /// Parts not read.
    pub gaps: usize,
}

/// How many policies one category holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CategoryCount {
    /// `Ethernet`, `Emergency`, `Infrastructure`, `Environment`, `Application`, `(none)`,
    /// `VPC (no category)`, or the category as NSX wrote it.
    pub category: String,
    pub count: usize,
}

/// The whole evaluation. Stable order: paths by port, FROM, TO (the VMs sorted by node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfwEvaluation {
    /// The VMs' node names, sorted.
    pub vms: Vec<String>,
    pub paths: Vec<DfwPath>,
    pub blocking: Vec<DfwBlocking>,
    /// DROP/REJECT rules matching allowed paths after the deciding ALLOW (at most
    /// [`MAX_SHADOWED`], and at most that many per check; `shadowed_not_listed` more were
    /// found).
    pub shadowed: Vec<DfwShadowed>,
    pub shadowed_not_listed: usize,
    pub counts: DfwCounts,
    /// From the input: identities that do not fit (never used).
    pub findings: Vec<String>,
    pub gaps: Vec<String>,
    pub notes: Vec<String>,
    /// One line: what blocks, or "NSX Manager shows no rule that drops these paths" with what
    /// was read.
    pub summary: String,
}

impl DfwEvaluation {
    pub fn path(&self, port: u16, from: &str, to: &str) -> Option<&DfwPath> {
        firewall::find_path(&self.paths, port, from, to)
    }

    /// The evidence line "NSX Manager shows no rule that drops these paths" (with what was
    /// read) when no given path is blocked by a visible rule or undecided; `None` otherwise
    /// (and for no paths, or paths not evaluated).
    pub fn no_drop_line(&self, paths: &[PathRef]) -> Option<String> {
        if paths.is_empty() {
            return None;
        }
        for p in paths {
            match &self.path(p.port, &p.from, &p.to)?.outcome {
                DfwPathOutcome::Allowed { .. } | DfwPathOutcome::NoVisibleRule => {}
                _ => return None,
            }
        }
        Some(format!(
            "NSX Manager shows no rule that drops these paths (read: {})",
            self.read_text()
        ))
    }

    /// What was read, in words: for every evidence line.
    pub fn read_text(&self) -> String {
        let c = &self.counts;
        let cats: Vec<String> = c
            .policies_by_category
            .iter()
            .map(|c| format!("{} {}", c.category, c.count))
            .collect();
        let cats = match cats.is_empty() {
            true => String::new(),
            false => format!(" ({})", cats.join(", ")),
        };
        let gaps = match c.gaps {
            0 => String::new(),
            n => format!("; {n} parts not read"),
        };
        format!(
            "{} security policies{cats}, {} rules ({} disabled), {} groups ({} with members read whole), {} services, {} of {} VMs identified{gaps}",
            c.policies, c.rules, c.rules_disabled, c.groups, c.groups_members_whole, c.services,
            c.vms_identified, c.vms
        )
    }
}

// ---- matching ----

/// The packet of one check (the check runs at FROM's vNIC for egress, TO's for ingress).
type At<'a> = firewall::At<&'a DfwVm>;

/// All the VM's addresses inside: yes; none: no; some: cannot tell.
fn all_or_none(vm: &DfwVm, inside: impl Fn(IpAddr) -> bool, what: &str) -> Tri {
    let ips = &vm.ips;
    if ips.is_empty() {
        return Tri::Unknown(format!("no IP is known for {}", vm.node));
    }
    let n = ips.iter().filter(|ip| inside(**ip)).count();
    if n == ips.len() {
        Tri::Yes
    } else if n == 0 {
        Tri::No
    } else {
        Tri::Unknown(format!(
            "{} has addresses inside and outside {what}",
            vm.node
        ))
    }
}

fn group_name(input: &DfwInput, path: &str) -> String {
    input
        .groups
        .get(path)
        .and_then(|g| g.display_name.clone())
        .unwrap_or_else(|| clip(path, 256))
}

fn members<'a>(input: &'a DfwInput, path: &str, memo: &'a Memo) -> &'a GroupMembers {
    input.members.get(path).unwrap_or(&memo.none)
}

/// Group memberships, computed once per (kind, group, VM): a manager's rules name the same
/// groups many times, and a group's realized list may be long.
struct Memo {
    /// The members of a group the reader did not read: nothing.
    none: GroupMembers,
    cache: RefCell<HashMap<(bool, String, String), Tri>>,
}

impl Memo {
    fn new() -> Memo {
        Memo {
            none: GroupMembers::not_read(),
            cache: RefCell::new(HashMap::new()),
        }
    }

    fn get(&self, scope: bool, path: &str, vm: &DfwVm, f: impl FnOnce() -> Tri) -> Tri {
        let key = (scope, path.to_string(), vm.node.clone());
        if let Some(t) = self.cache.borrow().get(&key) {
            return t.clone();
        }
        let t = f();
        self.cache.borrow_mut().insert(key, t.clone());
        t
    }
}

/// The VM's addresses in a group's realized IP list.
fn peer_in_group(input: &DfwInput, path: &str, vm: &DfwVm, none: &Memo) -> Tri {
    let m = members(input, path, none);
    let ips = m.ips.read();
    let t = all_or_none(vm, |ip| ips.iter().any(|a| a.contains(ip)), "the group");
    match (t, &m.ips) {
        (Tri::Yes, _) => Tri::Yes,
        // NSX says the VM (or its port) is a member: its addresses are the group's, whatever
        // part of the realized IP list was read.
        (_, MemberList::NotWhole { .. }) if is_member(m, path, vm) => Tri::Yes,
        // The VM is a member, but its address is not in the realized list: NSX has not
        // learned it (yet), and what the datapath holds cannot be told from here.
        (Tri::No, MemberList::Whole(_)) if is_member(m, path, vm) => Tri::Unknown(format!(
            "{} is a member of group {} but its address is not in the group's realized IPs",
            vm.node,
            group_name(input, path)
        )),
        (Tri::No, MemberList::Whole(_)) => Tri::No,
        (Tri::Unknown(w), MemberList::Whole(_)) => Tri::Unknown(w),
        (_, MemberList::NotWhole { why, .. }) => {
            Tri::Unknown(format!("group {}: {why}", group_name(input, path)))
        }
    }
}

fn endpoint_matches(input: &DfwInput, e: &Endpoint, vm: &DfwVm, none: &Memo) -> Tri {
    match e {
        Endpoint::Any => Tri::Yes,
        Endpoint::Addr(a) => all_or_none(vm, |ip| a.contains(ip), "the rule's addresses"),
        Endpoint::Group(p) => none.get(false, p, vm, || peer_in_group(input, p, vm, none)),
        Endpoint::Unreadable(w) => Tri::Unknown(w.clone()),
    }
}

fn side_matches(
    input: &DfwInput,
    list: &Result<Vec<Endpoint>, String>,
    excluded: &Result<bool, String>,
    vm: &DfwVm,
    layer2: bool,
    none: &Memo,
) -> Tri {
    let list = match list {
        Ok(l) => l,
        Err(e) => return Tri::Unknown(e.clone()),
    };
    let any = list.iter().all(|e| *e == Endpoint::Any);
    let t = if layer2 && !any {
        Tri::Unknown("a layer 2 (Ethernet) rule matches MAC addresses, not evaluated".into())
    } else {
        Tri::any(list.iter().map(|e| endpoint_matches(input, e, vm, none)))
    };
    match excluded {
        Ok(false) => t,
        Ok(true) => !t,
        Err(e) => Tri::Unknown(e.clone()),
    }
}

/// Whether the confirmed VM, or its port, is among the group's members read, or NSX's
/// group associations name the group for it.
fn is_member(m: &GroupMembers, path: &str, vm: &DfwVm) -> bool {
    (vm.identity == Identity::Confirmed && vm.memberships.holds(path) == Some(true))
        || is_member_vm(m, vm)
}

/// Whether the confirmed VM, or its port, is among the group's members read.
fn is_member_vm(m: &GroupMembers, vm: &DfwVm) -> bool {
    let by_vm = vm.nsx_vm.as_ref().is_some_and(|nv| {
        m.vms.read().iter().any(|mv| {
            (mv.id.is_some() && mv.id == nv.external_id)
                || (mv.bios_uuid.is_some() && mv.bios_uuid == nv.bios_uuid)
                || (mv.instance_uuid.is_some() && mv.instance_uuid == nv.instance_uuid)
        })
    });
    let by_port = vm.port.as_ref().is_some_and(|p| {
        m.ports.read().iter().any(|mp| {
            (mp.path.is_some() && mp.path == p.path)
                || (mp.path.is_none() && mp.id.is_some() && mp.id == p.id)
        })
    });
    by_vm || by_port
}

/// Whether the group takes this VM's vNIC (scope): by the confirmed VM or its port.
fn scope_member(input: &DfwInput, path: &str, vm: &DfwVm, none: &Memo) -> Tri {
    if !path.contains("/groups/") {
        return Tri::Unknown(format!("scope {} is not a group path", clip(path, 256)));
    }
    // NSX's own answer for any group type first (the association endpoints).
    if vm.identity == Identity::Confirmed {
        if let Some(held) = vm.memberships.holds(path) {
            return Tri::from_bool(held);
        }
    }
    let m = members(input, path, none);
    if is_member_vm(m, vm) {
        return Tri::Yes;
    }
    if vm.identity != Identity::Confirmed {
        return Tri::Unknown(format!(
            "{}'s VM is not identified in NSX Manager (scope {})",
            vm.node,
            group_name(input, path)
        ));
    }
    // Absent from the member lists proves nothing for a group of other member types (the
    // API answers them empty): only a group defined on VMs and ports alone is told by them.
    if !lists_tell(input, path) {
        return Tri::Unknown(format!(
            "group {}: NSX's group associations of {} were not read whole ({}), and its member lists cannot tell a group of its kind",
            group_name(input, path),
            vm.node,
            vm.memberships.why_not.first().map(String::as_str).unwrap_or("not asked")
        ));
    }
    match (m.vms.why_not_whole(), m.ports.why_not_whole()) {
        (None, None) => Tri::No,
        (Some(w), _) | (_, Some(w)) => {
            Tri::Unknown(format!("group {}: {w}", group_name(input, path)))
        }
    }
}

/// Whether a group's member lists (`virtual-machines`, `segment-ports` / `subnet-ports`) can
/// show a VM's absence: its definition was read and every expression is a condition or an
/// external-id list on `VirtualMachine`, `SegmentPort` or `VpcSubnetPort` (or a conjunction).
fn lists_tell(input: &DfwInput, path: &str) -> bool {
    input.groups.get(path).is_some_and(|g| {
        !g.member_types.is_empty()
            && g.member_types.iter().all(|t| {
                matches!(
                    t.as_str(),
                    "VirtualMachine" | "SegmentPort" | "VpcSubnetPort" | "ConjunctionOperator"
                )
            })
    })
}

fn applied(
    input: &DfwInput,
    policy: &SecurityPolicy,
    rule: &Rule,
    here: &DfwVm,
    none: &Memo,
) -> Tri {
    let scope = match (&policy.scope, &rule.scope) {
        (Err(e), _) => return Tri::Unknown(format!("policy scope: {e}")),
        (Ok(Some(p)), _) => p,
        (Ok(None), Err(e)) => return Tri::Unknown(format!("scope: {e}")),
        (Ok(None), Ok(None)) => return Tri::Yes,
        (Ok(None), Ok(Some(r))) => r,
    };
    Tri::any(
        scope
            .iter()
            .map(|g| none.get(true, g, here, || scope_member(input, g, here, none))),
    )
}

fn family(vm: &DfwVm) -> Option<IpFamily> {
    let v4 = vm.ips.iter().all(IpAddr::is_ipv4);
    let v6 = vm.ips.iter().all(IpAddr::is_ipv6);
    match (vm.ips.is_empty(), v4, v6) {
        (true, ..) => None,
        (false, true, _) => Some(IpFamily::V4),
        (false, _, true) => Some(IpFamily::V6),
        _ => Some(IpFamily::Both),
    }
}

fn entry_matches(input: &DfwInput, e: &ServiceEntry, at: At, depth: usize) -> Tri {
    match e {
        ServiceEntry::L4PortSet {
            protocol,
            destination_ports,
            source_ports,
        } => {
            if protocol != "TCP" {
                return if protocol == "UDP" {
                    Tri::No
                } else {
                    Tri::Unknown(format!("l4_protocol {protocol}"))
                };
            }
            let dst = destination_ports.is_empty()
                || destination_ports.iter().any(|r| r.contains(at.port));
            if !dst {
                Tri::No
            } else if source_ports.is_empty() {
                Tri::Yes
            } else {
                Tri::Unknown(
                    "a service with source_ports: the connection's ephemeral source port is not known"
                        .into(),
                )
            }
        }
        ServiceEntry::IpProtocol { number } => Tri::from_bool(*number == 6),
        ServiceEntry::EtherType { ether_type } => match family(at.src) {
            Some(IpFamily::V4) => Tri::from_bool(*ether_type == 0x0800),
            Some(IpFamily::V6) => Tri::from_bool(*ether_type == 0x86DD),
            _ => Tri::Unknown("an ether type against a VM of both or no IP families".into()),
        },
        ServiceEntry::NotTcp { .. } => Tri::No,
        ServiceEntry::Nested { path } => service_matches(input, path, at, depth + 1),
        ServiceEntry::Other { kind } => {
            Tri::Unknown(format!("a {kind} service entry is not evaluated"))
        }
        ServiceEntry::Unreadable(w) => Tri::Unknown(w.clone()),
    }
}

fn service_matches(input: &DfwInput, path: &str, at: At, depth: usize) -> Tri {
    if depth > MAX_NESTING {
        return Tri::Unknown(format!("services nested deeper than {MAX_NESTING}"));
    }
    let Some(s) = input.services.get(path) else {
        return Tri::Unknown(format!("service {} was not read", clip(path, 256)));
    };
    match &s.entries {
        Err(e) => Tri::Unknown(format!(
            "service {}: {e}",
            s.display_name.as_deref().unwrap_or(path)
        )),
        Ok(es) => Tri::any(es.iter().map(|e| entry_matches(input, e, at, depth))),
    }
}

fn services_match(input: &DfwInput, rule: &Rule, at: At) -> Tri {
    let entries = match &rule.service_entries {
        Ok(e) => e,
        Err(e) => return Tri::Unknown(e.clone()),
    };
    match &rule.services {
        Err(e) => Tri::Unknown(e.clone()),
        // ANY (or no services) without entries of its own: every service.
        Ok(None) if entries.is_empty() => Tri::Yes,
        Ok(paths) => Tri::any(
            paths
                .iter()
                .flatten()
                .map(|p| service_matches(input, p, at, 0))
                .chain(entries.iter().map(|e| entry_matches(input, e, at, 0))),
        ),
    }
}

/// A DFW rule as the engine sees it: direction (and enabled), service (the rule's services
/// and entries, and its `ip_protocol`), scope, sources, destinations (each with its
/// exclusion), then its context profiles and action.
struct Normalized<'a> {
    input: &'a DfwInput,
    p: &'a PolicyRules,
    rule: &'a Rule,
    none: &'a Memo,
}

impl Normalized<'_> {
    fn layer2(&self) -> bool {
        self.p.policy.category == Category::Ethernet
    }
}

impl<'v> firewall::Rule<&'v DfwVm> for Normalized<'_> {
    fn direction(&self, side: Side) -> Tri {
        let direction = match self.rule.direction {
            Ok(RuleDirection::InOut) => Tri::Yes,
            Ok(RuleDirection::Out) => Tri::from_bool(side == Side::Egress),
            Ok(RuleDirection::In) => Tri::from_bool(side == Side::Ingress),
            Err(ref e) => Tri::Unknown(e.clone()),
        };
        // A disabled rule never matches.
        direction.and(|| match self.rule.disabled {
            Ok(d) => Tri::from_bool(!d),
            Err(ref e) => Tri::Unknown(e.clone()),
        })
    }
    fn service(&self, at: At<'v>) -> Tri {
        let family = match (&self.rule.ip_protocol, self.layer2()) {
            (_, true) => Tri::Yes,
            (Ok(IpFamily::Both), _) => Tri::Yes,
            (Ok(f), _) => match (family(at.src), family(at.dst)) {
                (Some(a), Some(b)) if a == *f && b == *f => Tri::Yes,
                (Some(a), _) if a != IpFamily::Both && a != *f => Tri::No,
                _ => Tri::Unknown("ip_protocol against VMs of both or no IP families".into()),
            },
            (Err(e), _) => Tri::Unknown(e.clone()),
        };
        family.and(|| services_match(self.input, self.rule, at))
    }
    fn applies_to(&self, here: &'v DfwVm) -> Tri {
        applied(self.input, &self.p.policy, self.rule, here, self.none)
    }
    fn source(&self, src: &'v DfwVm) -> Tri {
        let r = self.rule;
        side_matches(
            self.input,
            &r.sources,
            &r.sources_excluded,
            src,
            self.layer2(),
            self.none,
        )
    }
    fn destination(&self, dst: &'v DfwVm) -> Tri {
        let r = self.rule;
        let (list, excluded) = (&r.destinations, &r.destinations_excluded);
        side_matches(self.input, list, excluded, dst, self.layer2(), self.none)
    }
    fn rest(&self) -> Tri {
        let profiles = match &self.rule.profiles {
            Ok(None) => Tri::Yes,
            Ok(Some(_)) => Tri::Unknown("context profiles could restrict it further".into()),
            Err(e) => Tri::Unknown(e.clone()),
        };
        profiles.and(|| match &self.rule.action {
            Ok(_) => Tri::Yes,
            Err(e) => Tri::Unknown(e.clone()),
        })
    }
}

/// Whether one rule matches one check: the engine's one match.
fn rule_matches(input: &DfwInput, p: &PolicyRules, rule: &Rule, at: At, none: &Memo) -> Tri {
    firewall::Rule::matches(
        &Normalized {
            input,
            p,
            rule,
            none,
        },
        at,
    )
}

/// How the output names a rule read (`None`: its action cannot be read).
pub(crate) fn rule_ref(p: &PolicyRules, r: &Rule) -> Option<DfwRule> {
    Some(DfwRule {
        display_name: r.display_name.clone(),
        path: r
            .path
            .clone()
            .map(|p| clip(&p, 1024))
            .unwrap_or_else(|_| "(no path)".into()),
        rule_id: r.rule_id,
        category: p.policy.category.name().to_string(),
        policy_path: p
            .policy
            .path
            .clone()
            .map(|p| clip(&p, 1024))
            .unwrap_or_else(|_| "(no path)".into()),
        policy_name: p.policy.label(),
        policy_sequence: p.policy.sequence_number.as_ref().ok().copied(),
        rule_sequence: r.sequence_number.as_ref().ok().copied(),
        action: *r.action.as_ref().ok()?,
    })
}

/// How a line names a rule that cannot be evaluated.
fn who(p: &PolicyRules, r: &Rule) -> String {
    format!(
        "rule {} of policy \"{}\" ({})",
        r.display_name
            .as_deref()
            .map(|n| format!("\"{n}\""))
            .or_else(|| r.path.as_ref().ok().map(|p| clip(p, 256)))
            .unwrap_or_else(|| "(unnamed)".into()),
        p.policy.label(),
        p.policy.category.name()
    )
}

/// One policy's first hit on a check, through the engine: first the rules whose sequence
/// number cannot be read (they have no place in the order: one that may match makes the check
/// "cannot decide"), then the rules by sequence number, tied ones together; the rules not all
/// read are its tail.
fn policy_hit(
    input: &DfwInput,
    p: &PolicyRules,
    order: &[usize],
    at: At,
    none: &Memo,
) -> Option<Hit<RuleAction>> {
    let seq = |i: usize| p.rules[i].sequence_number.as_ref().ok().copied();
    let unplaced: Vec<usize> = (0..p.rules.len()).filter(|&i| seq(i).is_none()).collect();
    let groups = std::iter::once(unplaced).chain(
        order
            .chunk_by(|&a, &b| seq(a) == seq(b))
            .map(<[usize]>::to_vec),
    );
    let tail = p.rules_incomplete.as_ref().map(|w| {
        format!(
            "policy \"{}\" ({}): rules not all read: {w}",
            p.policy.label(),
            p.policy.category.name()
        )
    });
    firewall::first_hit(
        groups,
        |i| {
            let r = &p.rules[i];
            match (&r.sequence_number, rule_matches(input, p, r, at, none)) {
                (_, Tri::No) => Tri::No,
                (Err(e), _) => Tri::Unknown(format!("{}: {e}", who(p, r))),
                (Ok(_), Tri::Unknown(w)) => Tri::Unknown(format!("{}: {w}", who(p, r))),
                (Ok(_), t) => t,
            }
        },
        |i| p.rules[i].action.as_ref().ok().copied(),
        tail.as_deref().map(|t| (p.rules.len(), t)),
    )
}

/// Why a policy's hit cannot decide a check, in the DFW's words.
fn hit_why(p: &PolicyRules, hit: &Hit<RuleAction>) -> String {
    match hit {
        Hit::Split(i, j) => format!(
            "{} and {} share rule sequence number {} and both match with different actions: NSX's order between them is not deterministic",
            who(p, &p.rules[*i]),
            who(p, &p.rules[*j]),
            p.rules[*i].sequence_number.clone().unwrap_or(0)
        ),
        Hit::Unknown(_, why) => why.clone(),
        Hit::Rule(..) => String::new(),
    }
}

/// The policies in NSX's order, grouped in tiers of equal (category, sequence number); the
/// policies whose place is not known apart.
struct Order {
    tiers: Vec<Vec<usize>>,
    unplaced: Vec<(usize, String)>,
    /// Per policy, its rules' indexes by sequence number (stable: listing order on ties).
    rules: Vec<Vec<usize>>,
}

/// Which tree a policy path is in, in NSX's order: `/infra` (and Federation's `/global-infra`,
/// whose policies a Local Manager enforces in its own categories) 0, a project's
/// (`/orgs/<o>/projects/<p>/infra/…`) 1, a VPC's (`/orgs/<o>/projects/<p>/vpcs/<v>/…`) 2;
/// `None`: no tree we know.
///
/// NSX evaluates the provider's (default space) policies first, then the project's, then the
/// VPC's: "the rules created in the default space take precedence over the rules in projects",
/// and a VPC's east-west policies are the project's last before its default (NSX 4.1
/// administration guide, "Distributed Firewall in Projects" GUID-5A04999A: the project's default
/// policy "appears at the bottom of the policy list in the Application firewall category";
/// "Default East-West Firewall Rules in an NSX VPC" GUID-9026BE25; issue 37). Inside each tree,
/// category then sequence number.
pub fn tree_rank(path: &str) -> Option<u8> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["infra" | "global-infra", ..] => Some(0),
        ["orgs", _, "projects", _, "infra", ..] => Some(1),
        ["orgs", _, "projects", _, "vpcs", _, ..] => Some(2),
        _ => None,
    }
}

/// A policy's place in NSX's order: (tree, category, sequence number); the reason when it has
/// none. A VPC's policies carry no category (terraform-provider-nsxt `nsxt/policy_common.go`
/// deletes `category` from the VPC policy schema): inside the VPC's tree they are ordered by
/// sequence number alone, after every `/infra` and project policy (above).
fn place(p: &SecurityPolicy) -> Result<(u8, u8, i64), String> {
    if let Some(w) = &p.unreadable {
        return Err(w.clone());
    }
    let path = p
        .path
        .as_ref()
        .map_err(|e| format!("policy \"{}\": {e}", p.label()))?;
    let tree = tree_rank(path).ok_or_else(|| {
        format!(
            "policy \"{}\" is in no tree whose place in the DFW order is known",
            p.label()
        )
    })?;
    let rank = match (&p.category, tree) {
        // Every policy of a VPC's tree has none: one rank for all of them.
        (Category::Vpc, 2) => Category::Application.rank().unwrap_or(4),
        (c, _) => c.rank().ok_or_else(|| {
            format!(
                "policy \"{}\" is in category {}, whose place in the DFW order is not known",
                p.label(),
                c.name()
            )
        })?,
    };
    let seq = p
        .sequence_number
        .clone()
        .map_err(|e| format!("policy \"{}\": {e}", p.label()))?;
    // The default policies after every other, the most specific tree's first: a VPC's default
    // east-west rules drop "all incoming traffic to the NSX VPC" (GUID-9026BE25) and a
    // project's default policy keeps its VMs from VMs outside it (GUID-5A04999A), which they
    // could not were `/infra`'s default ALLOW (its `default-layer3-section`) reached first.
    let tree = if p.is_default && p.category != Category::Ethernet {
        5 - tree
    } else {
        tree
    };
    Ok((tree, rank, seq))
}

fn order(input: &DfwInput) -> Order {
    let mut placed: Vec<((u8, u8, i64), usize)> = Vec::new();
    let mut unplaced = Vec::new();
    for (i, p) in input.policies.iter().enumerate() {
        match place(&p.policy) {
            Ok(key) => placed.push((key, i)),
            Err(w) => unplaced.push((i, w)),
        }
    }
    placed.sort();
    let tiers = placed
        .chunk_by(|a, b| a.0 == b.0)
        .map(|tier| tier.iter().map(|&(_, i)| i).collect())
        .collect();
    let rules = input
        .policies
        .iter()
        .map(|p| {
            let mut idx: Vec<usize> = (0..p.rules.len())
                .filter(|&i| p.rules[i].sequence_number.is_ok())
                .collect();
            idx.sort_by_key(|&i| p.rules[i].sequence_number.clone().unwrap_or(0));
            idx
        })
        .collect();
    Order {
        tiers,
        unplaced,
        rules,
    }
}

fn check(input: &DfwInput, ord: &Order, at: At, none: &Memo) -> DfwSideOutcome {
    if let Some(w) = &input.policies_incomplete {
        return DfwSideOutcome::CannotDecide {
            why: format!(
                "the security policies were not all read ({w}): any of them might come first"
            ),
        };
    }
    for (i, why) in &ord.unplaced {
        if policy_hit(input, &input.policies[*i], &ord.rules[*i], at, none).is_some() {
            return DfwSideOutcome::CannotDecide { why: why.clone() };
        }
    }
    let app = Category::Application.rank().unwrap_or(4);
    // The continuations: a layer 2 ALLOW ends the layer 2 tiers; a jump to Application skips
    // the rest of its own tree's Environment only.
    let (layer2_done, jumped, tree) = (Cell::new(false), Cell::new(false), Cell::new(None));
    let tiers = ord.tiers.iter().filter_map(|tier| {
        let cat = &input.policies[tier[0]].policy.category;
        let (this_tree, rank, _) = place(&input.policies[tier[0]].policy).unwrap_or((0, 0, 0));
        if tree.get() != Some(this_tree) {
            tree.set(Some(this_tree));
            jumped.set(false);
        }
        let layer2 = *cat == Category::Ethernet;
        if (layer2 && layer2_done.get()) || (jumped.get() && rank < app) {
            return None;
        }
        Some(tier.iter().map(move |&pi| {
            let p = &input.policies[pi];
            (pi, policy_hit(input, p, &ord.rules[pi], at, none))
        }))
    });
    firewall::check(tiers, |hit| {
        let (pi, ri) = hit.first();
        let p = &input.policies[pi];
        let cat = &p.policy.category;
        let (this_tree, rank, _) = place(&p.policy).unwrap_or((0, 0, 0));
        let action = match hit {
            TierHit::Rule(_, _, action) => action,
            TierHit::Cannot { at: pj, hit, .. } => {
                return Then::Decide(DfwSideOutcome::CannotDecide {
                    why: hit_why(&input.policies[pj], &hit),
                })
            }
            TierHit::Split { other: pj, .. } => {
                return Then::Decide(DfwSideOutcome::CannotDecide {
                    why: format!(
                        "policies \"{}\" and \"{}\" share category {} and sequence number {} and both match with different actions: NSX's order between them is not deterministic",
                        p.policy.label(),
                        input.policies[pj].policy.label(),
                        cat.name(),
                        p.policy.sequence_number.clone().unwrap_or(0)
                    ),
                })
            }
        };
        // Federation: the Global Manager's policies (`/global-infra`) and the Local Manager's
        // own (`/infra`) share the provider's tree, and how NSX orders one against the other
        // inside a category is not documented for the DFW (for the gateway firewall, "Any rules
        // you create from the Global Manager [...] are enforced first", NSX-T 3.1
        // administration GUID-1F7DCDEF): the least is taken, either may come first. A first
        // match of the other side in this category with another action: "cannot decide".
        if this_tree == 0 {
            if let Some(why) = federation_rival(input, ord, at, none, pi, rank, action) {
                return Then::Decide(DfwSideOutcome::CannotDecide { why });
            }
        }
        let r = &p.rules[ri];
        match (action, *cat == Category::Ethernet) {
            (RuleAction::Allow, true) => {
                layer2_done.set(true);
                Then::GoOn
            }
            (RuleAction::JumpToApplication, false) if *cat == Category::Environment => {
                jumped.set(true);
                Then::GoOn
            }
            (RuleAction::JumpToApplication, _) => Then::Decide(DfwSideOutcome::CannotDecide {
                why: format!(
                    "{}: JUMP_TO_APPLICATION outside the Environment category",
                    who(p, r)
                ),
            }),
            _ => Then::Decide(match rule_ref(p, r) {
                Some(rule) => DfwSideOutcome::Matched { rule },
                None => DfwSideOutcome::CannotDecide {
                    why: format!("{}: its action cannot be read", who(p, r)),
                },
            }),
        }
    })
}

/// Whether a policy is the Global Manager's (Federation: `/global-infra/…`).
fn is_global(p: &SecurityPolicy) -> bool {
    p.path
        .as_deref()
        .is_ok_and(|path| path.starts_with("/global-infra/"))
}

/// The first match at this check among the policies of category `rank` of the provider's tree
/// on the other side of Federation from policy `pi` (`/global-infra` for an `/infra` policy,
/// and back), when it cannot be evaluated or its action is not `action`: why the check cannot
/// be decided (their order is not documented: [`check`]). `None` outside Federation.
fn federation_rival(
    input: &DfwInput,
    ord: &Order,
    at: At,
    none: &Memo,
    pi: usize,
    rank: u8,
    action: RuleAction,
) -> Option<String> {
    let global = is_global(&input.policies[pi].policy);
    for tier in &ord.tiers {
        for &pj in tier {
            let q = &input.policies[pj].policy;
            if is_global(q) == global || !matches!(place(q), Ok((0, r, _)) if r == rank) {
                continue;
            }
            match policy_hit(input, &input.policies[pj], &ord.rules[pj], at, none) {
                None => continue,
                Some(Hit::Rule(_, a)) if a == action => return None,
                Some(h @ (Hit::Unknown(..) | Hit::Split(..))) => {
                    return Some(hit_why(&input.policies[pj], &h))
                }
                Some(Hit::Rule(..)) => {
                    return Some(format!(
                        "policies \"{}\" and \"{}\" both match in category {} with different actions, one the Global Manager's (/global-infra) and one the Local Manager's (/infra): how NSX orders them inside a category is not documented",
                        input.policies[pi].policy.label(),
                        q.label(),
                        q.category.name()
                    ))
                }
            }
        }
    }
    None
}

/// The DROP/REJECT rules that match this check after the ALLOW `by` decided it: later rules
/// of its policy, and the rules of policies after its own in NSX's order (a policy tied with
/// it is not "after": their order is not known). Layer 3 only; disabled rules never match.
fn shadowed(input: &DfwInput, ord: &Order, at: At, none: &Memo, by: &DfwRule) -> Vec<DfwRule> {
    let Some(dp) = input
        .policies
        .iter()
        .position(|p| p.policy.path.as_deref().ok() == Some(by.policy_path.as_str()))
    else {
        return Vec::new();
    };
    let key = |i: usize| place(&input.policies[i].policy).ok();
    let Some(dkey) = key(dp) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for tier in &ord.tiers {
        for &pi in tier {
            let p = &input.policies[pi];
            let Some(k) = key(pi) else {
                continue;
            };
            let later_policy = k > dkey;
            if p.policy.category == Category::Ethernet || !(later_policy || pi == dp) {
                continue;
            }
            for &ri in &ord.rules[pi] {
                let r = &p.rules[ri];
                if pi == dp && r.sequence_number.clone().ok() <= by.rule_sequence {
                    continue;
                }
                let blocks = matches!(r.action, Ok(RuleAction::Drop | RuleAction::Reject));
                if blocks && rule_matches(input, p, r, at, none) == Tri::Yes {
                    out.extend(rule_ref(p, r));
                    // Bounded: the aggregation is per rule and path.
                    if out.len() >= MAX_SHADOWED {
                        return out;
                    }
                }
            }
        }
    }
    out
}

/// The evaluation's one line: "NSX Manager: <rule> drops N of M paths (K more blocking
/// rules)" from the first blocking rule, else that no (enforced) rule drops them, with what
/// was read. `off`: why some checks enforce nothing (after [`enforce::apply`]).
fn summary(e: &DfwEvaluation, off: Option<&str>) -> String {
    let (read, total) = (e.read_text(), e.paths.len());
    let undecided = firewall::undecided(&e.paths)
        .iter()
        .map(|(_, p)| p.len())
        .sum::<usize>();
    let no = match off {
        None => "NSX Manager shows no rule that drops these paths",
        Some(_) => "NSX Manager shows no enforced rule that drops these paths",
    };
    let Some(b) = e.blocking.first() else {
        return match off {
            _ if undecided > 0 => format!(
                "{no}{}, but {undecided} of {total} paths cannot be decided (read: {read})",
                off.map(|w| format!(" ({w})")).unwrap_or_default()
            ),
            Some(why) => format!("{no}: {why} (read: {read})"),
            None => format!("{no} (read: {read})"),
        };
    };
    let more = match e.blocking.len() {
        1 => String::new(),
        n => format!(" ({} more blocking rules)", n - 1),
    };
    let verb = match b.rule.action {
        RuleAction::Reject => "rejects",
        _ => "drops",
    };
    let first = format!(
        "NSX Manager: {} {verb} {} of {total} paths{more}",
        b.rule.label(),
        b.paths.len(),
    );
    match off {
        Some(why) => format!("{first} (not enforced elsewhere: {why})"),
        None => first,
    }
}

fn counts(input: &DfwInput) -> DfwCounts {
    let mut by_cat: BTreeMap<(u8, String), usize> = BTreeMap::new();
    for p in &input.policies {
        *by_cat
            .entry((
                p.policy.category.rank().unwrap_or(u8::MAX),
                p.policy.category.name().to_string(),
            ))
            .or_default() += 1;
    }
    let rules = input.policies.iter().flat_map(|p| &p.rules);
    let groups: std::collections::BTreeSet<&String> =
        input.groups.keys().chain(input.members.keys()).collect();
    let whole = input.members.values().filter(|m| {
        let lists = [
            m.ips.why_not_whole(),
            m.vms.why_not_whole(),
            m.ports.why_not_whole(),
        ];
        lists.iter().all(Option::is_none)
    });
    DfwCounts {
        policies: input.policies.len(),
        policies_by_category: by_cat
            .into_iter()
            .map(|((_, category), count)| CategoryCount { category, count })
            .collect(),
        rules: rules.clone().count(),
        rules_disabled: rules.clone().filter(|r| r.disabled == Ok(true)).count(),
        rules_unreadable: rules.filter(|r| !r.unreadable().is_empty()).count(),
        policies_rules_incomplete: input
            .policies
            .iter()
            .filter(|p| p.rules_incomplete.is_some())
            .count(),
        groups: groups.len(),
        groups_members_whole: whole.count(),
        services: input.services.len(),
        vms: input.vms.len(),
        vms_identified: input
            .vms
            .iter()
            .filter(|v| v.identity == Identity::Confirmed)
            .count(),
        gaps: input.gaps.len(),
    }
}

/// Evaluates the DFW for TCP 2379 and 2380 between every ordered pair of the VMs. Pure; never
/// fails; bounded.
pub fn evaluate(input: &DfwInput) -> DfwEvaluation {
    let all: Vec<&DfwVm> = input.vms.iter().collect();
    let vms = firewall::bounded_vms(&all, |v| &v.node);
    let (ord, none) = (order(input), Memo::new());
    let too_many = input.policies.iter().map(|p| p.rules.len()).sum::<usize>() > MAX_RULES;
    let mut paths = Vec::new();
    // (rule, the ALLOW before it, path index) for every shadowed match.
    let mut shadow_hits: Vec<(DfwRule, DfwRule, usize)> = Vec::new();
    for (port, fi, ti) in firewall::vm_pairs(vms.len()) {
        let (src, dst) = (vms[fi], vms[ti]);
        let [egress, ingress] = [Side::Egress, Side::Ingress].map(|side| {
            if too_many {
                let why = format!("more than {MAX_RULES} rules were read: not evaluated");
                return DfwSideOutcome::CannotDecide { why };
            }
            let at = At {
                side,
                src,
                dst,
                port,
            };
            let outcome = check(input, &ord, at, &none);
            if let DfwSideOutcome::Matched { rule: by } = &outcome {
                if by.action == RuleAction::Allow {
                    for rule in shadowed(input, &ord, at, &none, by) {
                        shadow_hits.push((rule, by.clone(), paths.len()));
                    }
                }
            }
            outcome
        });
        let path = PathRef {
            port,
            from: src.node.clone(),
            to: dst.node.clone(),
        };
        paths.push(DfwPath::new(path, egress, ingress));
    }
    // Shadowed rules, per (rule, by), on the paths that are allowed.
    let mut shadowed_all: Vec<DfwShadowed> = Vec::new();
    for (rule, by, i) in shadow_hits {
        if !matches!(paths[i].outcome, DfwPathOutcome::Allowed { .. }) {
            continue;
        }
        let path = paths[i].path_ref();
        match shadowed_all
            .iter_mut()
            .find(|s| s.rule == rule && s.by == by)
        {
            Some(s) if s.paths.contains(&path) => {}
            Some(s) => s.paths.push(path),
            None => shadowed_all.push(DfwShadowed {
                rule,
                by,
                paths: vec![path],
            }),
        }
    }
    let shadowed_not_listed = shadowed_all.len().saturating_sub(MAX_SHADOWED);
    shadowed_all.truncate(MAX_SHADOWED);
    let mut notes = Vec::new();
    let trees: std::collections::BTreeSet<Option<u8>> = input
        .policies
        .iter()
        .filter_map(|p| p.policy.path.as_deref().ok().map(tree_rank))
        .collect();
    if trees.len() > 1 {
        notes.push("policies of several trees were read: ordered /infra first, then the project's, then the VPC's, each by category and sequence number".to_string());
    }
    notes.extend(input.notes.iter().cloned());
    let mut e = DfwEvaluation {
        vms: vms.iter().map(|v| v.node.clone()).collect(),
        blocking: firewall::blocking_of_paths(&paths),
        paths,
        shadowed: shadowed_all,
        shadowed_not_listed,
        counts: counts(input),
        findings: input.findings.clone(),
        gaps: input.gaps.clone(),
        notes,
        summary: String::new(),
    };
    e.summary = summary(&e, None);
    e
}

pub mod enforce;

#[cfg(test)]
mod tests;
