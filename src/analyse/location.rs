//! Where the packets of the failing paths die: inside a guest (a node's own firewall rule
//! counted them), maybe inside one (a rule that could match keeps no counter, or a base chain's
//! policy drops and no accept for the port comes before it), outside the guests (both ends'
//! rules were read before and after the checks and none could have dropped them), or
//! undecided (an end's rules were not read).
//!
//! Per failing peer cell (timeout, refused, no route) `from → to:port`, four packets are looked
//! at: the SYN leaving `from` and entering `to`, the reply leaving `to` and entering `from`. Each
//! end's rules come from its probe's reads ([`crate::probe::firewall`]); a rule's counter is the
//! difference between the read after the checks and the read before them. Only what was seen
//! concludes: "outside the guests" needs both ends read, whole, at both moments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analyse::matrix::{CellState, Matrix};
use crate::probe::firewall::{Action, FirewallRead, Fit, Hook, Packet, ReadOutcome, Ruleset};
use crate::probe::NodeReport;
use crate::supervisor::NetworkStack;

/// The contract's words (docs/output.md): scripts match on them.
pub(crate) const INSIDE: &str = "inside the guest";
pub(crate) const MAYBE_INSIDE: &str = "may be inside the guest";
pub(crate) const OUTSIDE: &str = "outside the guests";

/// Rules named in the verdict's evidence; the rest are counted (`-o json` has all).
const RULES_NAMED: usize = 3;
/// Rules kept per path.
const HITS_PER_PATH: usize = 8;

// `Place`, `FirewallReadState`, `NodeFirewall`, `FirewallRule` and `PathPlace` are the contract
// of `packetLocation` (`report::DiagnoseReport`): their doc comments are the schema's
// descriptions, their serde attributes the json's names.

/// Where a failing path's packets die.
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
pub enum Place {
    /// A rule of one of its nodes counted packets during the checks: `inside the guest`.
    InsideGuest,
    /// A rule that could match keeps no counter, or a base chain's policy drops with no
    /// accept for the port before it: `may be inside the guest`.
    MayBeInsideGuest,
    /// Both ends' rules were read before and after the checks and none could have dropped
    /// the packets: `outside the guests`.
    OutsideGuests,
    /// An end's rules were not read (see `nodes`).
    Undecided,
}

/// How a node's own firewall was read.
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
pub enum FirewallReadState {
    /// Every tool's rules, before and after the checks.
    Read,
    /// Read, but the probe cut lines past its cap: a rule may be missing.
    Partial,
    /// A tool was refused or failed, none is on the node, or the node was not probed.
    NotRead,
    /// Its probe does not read the firewall (an older probe).
    Absent,
}

/// How one node's own firewall was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeFirewall {
    pub node: String,
    pub read: FirewallReadState,
    /// Why it is not `Read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A node's rule, or a chain's policy, that can drop a path's packets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirewallRule {
    pub node: String,
    /// The tool that listed it: `nft`, `iptables-legacy`, `ip6tables-legacy`, `iptables`,
    /// `ip6tables`.
    pub tool: String,
    /// Family and table: `inet filter`, `ip filter`.
    pub table: String,
    pub chain: String,
    /// `handle N` (nft), `rule N` (iptables, its position in the chain), or `policy`.
    pub rule: String,
    /// The rule as listed, without its counter and handle (the node's text).
    // For a policy, the policy's words.
    pub text: String,
    /// Packets it counted during the checks; absent when it keeps no counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
}

impl FirewallRule {
    fn counted(&self) -> bool {
        self.packets.is_some_and(|p| p > 0)
    }

    /// `nft inet filter input handle 8`.
    pub fn name(&self) -> String {
        format!("{} {} {} {}", self.tool, self.table, self.chain, self.rule)
    }
}

/// One failing path, placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathPlace {
    pub from: String,
    pub to: String,
    pub port: u16,
    /// Its matrix cell.
    pub state: CellState,
    pub place: Place,
    /// The rules (or chain policies) of its nodes that counted its packets (first) or may drop
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<FirewallRule>,
    /// Why it is undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Where the failing paths' packets die, as the analysis finds it. The contract's
/// `packetLocation` (`report::v1alpha2::PacketLocation`) is this with the verdict's wording
/// ([`evidence`]) in place of the stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketPlaces {
    /// Each failing peer path, in the matrices' order (2379 first).
    pub paths: Vec<PathPlace>,
    /// Each node's read.
    pub nodes: Vec<NodeFirewall>,
    /// The Supervisor's networking stack: what "outside the guests" can be ([`outside_on`]).
    pub stack: NetworkStack,
}

/// What can drop packets between the VMs outside their guests, on `stack`: NSX's distributed
/// firewall and segments (NCP), the VPC's security policies and its default east-west rule
/// (VPC), the physical network on VDS (a firewall between the hosts, the distributed port
/// group's security settings, a VLAN missing from a host's trunk); all of them when the stack
/// is unknown.
pub(crate) fn outside_on(stack: NetworkStack) -> &'static str {
    match stack {
        NetworkStack::Nsx => "the NSX distributed firewall, the segment's rules, SpoofGuard, or the fabric between the hosts",
        NetworkStack::Vpc => "the VPC's security policies or its default east-west rule, SpoofGuard, or the fabric between the hosts",
        NetworkStack::Vds => "the physical network between the ESXi hosts (no NSX on this VDS Supervisor): a firewall between the hosts, the distributed port group's security settings, or the VMs' VLAN missing from a host's trunk",
        NetworkStack::Unknown => "NSX distributed firewall, the VPC's or segment's rules, SpoofGuard, or the fabric between the hosts (on a VDS Supervisor: a firewall between the hosts, the port group's security settings, a VLAN missing from a host's trunk)",
    }
}

/// Who can change what drops the packets outside the guests, on `stack`.
pub(crate) fn network_team(stack: NetworkStack) -> &'static str {
    match stack {
        NetworkStack::Nsx | NetworkStack::Vpc => "the NSX team",
        NetworkStack::Vds | NetworkStack::Unknown => "the network team",
    }
}

/// One node's rules at both moments, by tool.
struct NodeRules<'a> {
    read: NodeFirewall,
    sets: Vec<(Ruleset, Ruleset)>,
    ip: Option<std::net::IpAddr>,
    _node: &'a NodeReport,
}

fn node_rules(n: &NodeReport) -> NodeRules<'_> {
    let mut out = NodeRules {
        read: NodeFirewall {
            node: n.name.clone(),
            read: FirewallReadState::Read,
            detail: None,
        },
        sets: vec![],
        ip: n.ip,
        _node: n,
    };
    let Some(p) = n.probe() else {
        out.read.read = FirewallReadState::NotRead;
        out.read.detail = Some("the node was not probed".into());
        return out;
    };
    let fw = &p.firewall;
    if fw.is_empty() {
        out.read.read = FirewallReadState::Absent;
        out.read.detail = Some("its probe did not read the firewall".into());
        return out;
    }
    let mut problems: Vec<String> = Vec::new();
    let mut cut = false;
    let problem = |r: &FirewallRead, moment: &str| -> Option<String> {
        match r.outcome {
            ReadOutcome::Ok | ReadOutcome::Missing => None,
            o => Some(format!(
                "{} {o} {moment} the checks{}",
                r.tool,
                r.detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )),
        }
    };
    for r in &fw.before {
        problems.extend(problem(r, "before"));
    }
    for r in &fw.after {
        problems.extend(problem(r, "after"));
        cut |= r.cut > 0;
        if r.outcome != ReadOutcome::Ok {
            continue;
        }
        match fw.before.iter().find(|b| b.tool == r.tool) {
            Some(b) if b.outcome == ReadOutcome::Ok => {
                cut |= b.cut > 0;
                out.sets.push((b.ruleset(), r.ruleset()));
            }
            _ => problems.push(format!("{} was not read before the checks", r.tool)),
        }
    }
    for b in &fw.before {
        if b.outcome == ReadOutcome::Ok && !fw.after.iter().any(|a| a.tool == b.tool) {
            problems.push(format!("{} was not read after the checks", b.tool));
        }
    }
    if problems.is_empty() && out.sets.is_empty() {
        problems.push("neither nft nor iptables-save is on the node".into());
    }
    if !problems.is_empty() {
        out.read.read = FirewallReadState::NotRead;
        out.read.detail = Some(problems.join("; "));
    } else if cut {
        out.read.read = FirewallReadState::Partial;
        out.read.detail = Some("the probe cut lines past its cap: a rule may be missing".into());
    }
    out
}

/// The rules of `n` that can drop `p`, with what they counted between the reads.
fn hits(n: &NodeRules, p: &Packet, out: &mut Vec<FirewallRule>) {
    for (before, after) in &n.sets {
        for chain in &after.chains {
            let sees = match chain.hook {
                Hook::In => p.incoming,
                Hook::Out => !p.incoming,
                Hook::Unknown => true,
                Hook::Through => false,
            };
            if !sees {
                continue;
            }
            let base = chain.hook != Hook::Unknown;
            let old = before
                .chains
                .iter()
                .find(|c| c.table == chain.table && c.name == chain.name);
            // A rule (or the chain's policy) that may drop the path's packets, with what it counted
            // between the reads (`None`: it keeps no counter); one that surely counted nothing is
            // left out.
            let counted = |out: &mut Vec<FirewallRule>,
                           rule: String,
                           text: String,
                           now: Option<u64>,
                           was: Option<u64>| {
                let packets = now.map(|now| now.saturating_sub(was.unwrap_or(0)));
                if packets != Some(0) {
                    push(
                        out,
                        FirewallRule {
                            node: n.read.node.clone(),
                            tool: after.tool.clone(),
                            table: chain.table.clone(),
                            chain: chain.name.clone(),
                            rule,
                            text,
                            packets,
                        },
                    );
                }
            };
            let mut ended = false;
            for rule in &chain.rules {
                let fit = rule.fit(p);
                if fit == Fit::No {
                    continue;
                }
                match rule.action {
                    Action::Accept if fit == Fit::Surely && base => {
                        ended = true;
                        break;
                    }
                    Action::Drop | Action::Reject => {
                        let was = old
                            .and_then(|c| c.rules.iter().find(|r| r.id == rule.id))
                            .and_then(|r| r.packets);
                        let id = rule
                            .id
                            .map_or_else(|| "rule".to_string(), |i| i.to_string());
                        counted(out, id, rule.text.clone(), rule.packets, was);
                        if fit == Fit::Surely && base {
                            ended = true;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if !ended && base && chain.policy_drop {
                counted(
                    out,
                    "policy".into(),
                    "policy drop, no accept for the port before it".into(),
                    chain.policy_packets,
                    old.and_then(|c| c.policy_packets),
                );
            }
        }
    }
}

fn push(out: &mut Vec<FirewallRule>, hit: FirewallRule) {
    if out.len() < HITS_PER_PATH * 4 && !out.contains(&hit) {
        out.push(hit);
    }
}

/// Where the failing peer paths of the matrices die, on a Supervisor of networking `stack`
/// (what "outside the guests" can be); None when no node's probe read its firewall (older
/// probes: the output stays as it was).
pub fn locate(
    nodes: &[NodeReport],
    matrices: &[Matrix],
    stack: NetworkStack,
) -> Option<PacketPlaces> {
    if !nodes
        .iter()
        .any(|n| n.probe().is_some_and(|p| !p.firewall.is_empty()))
    {
        return None;
    }
    let rules: Vec<NodeRules> = nodes.iter().map(node_rules).collect();
    let by_name = |name: &str| rules.iter().find(|r| r.read.node == name);
    let mut paths = Vec::new();
    for m in matrices {
        for c in m.peer_cells() {
            if !matches!(
                c.state,
                CellState::Timeout | CellState::Refused | CellState::NoRoute
            ) {
                continue;
            }
            let (Some(f), Some(t)) = (by_name(&c.from), by_name(&c.to)) else {
                continue;
            };
            let mut found = Vec::new();
            if let (Some(fip), Some(tip)) = (f.ip, t.ip) {
                let syn = Packet {
                    src: fip,
                    dst: tip,
                    sport: None,
                    dport: Some(c.port),
                    new: true,
                    incoming: false,
                };
                let reply = Packet {
                    src: tip,
                    dst: fip,
                    sport: Some(c.port),
                    dport: None,
                    new: false,
                    incoming: false,
                };
                hits(f, &syn, &mut found);
                hits(
                    t,
                    &Packet {
                        incoming: true,
                        ..syn
                    },
                    &mut found,
                );
                hits(t, &reply, &mut found);
                hits(
                    f,
                    &Packet {
                        incoming: true,
                        ..reply
                    },
                    &mut found,
                );
            }
            // Counted first.
            found.sort_by_key(|h| !h.counted());
            found.truncate(HITS_PER_PATH);
            let unread: Vec<&NodeFirewall> = [&f.read, &t.read]
                .into_iter()
                .filter(|r| r.read != FirewallReadState::Read)
                .collect();
            let (place, why) = if found.iter().any(FirewallRule::counted) {
                (Place::InsideGuest, None)
            } else if !found.is_empty() {
                (Place::MayBeInsideGuest, None)
            } else if unread.is_empty() {
                (Place::OutsideGuests, None)
            } else {
                let why = unread
                    .iter()
                    .map(|r| {
                        format!(
                            "node {}'s firewall: {}",
                            r.node,
                            r.detail.as_deref().unwrap_or("not read")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                (Place::Undecided, Some(why))
            };
            paths.push(PathPlace {
                from: c.from.clone(),
                to: c.to.clone(),
                port: c.port,
                state: c.state,
                place,
                rules: found,
                why,
            });
        }
    }
    Some(PacketPlaces {
        paths,
        nodes: rules.into_iter().map(|r| r.read).collect(),
        stack,
    })
}

/// `a → b:2380, ...`, as the SecurityPolicy lines name paths (at most six, a count of the rest).
fn paths_text(paths: &[&PathPlace]) -> String {
    let refs: Vec<super::policy::PathRef> = paths
        .iter()
        .map(|p| super::policy::PathRef {
            port: p.port,
            from: p.from.clone(),
            to: p.to.clone(),
        })
        .collect();
    super::policy::paths_text(&refs)
}

/// The evidence lines of a network verdict: per rule that counted (`inside the guest`), per
/// rule that may drop without counting (`may be inside the guest`), the paths no rule could
/// have dropped (`outside the guests`), the paths left undecided. Empty without failing paths.
pub fn evidence(loc: &PacketPlaces) -> Vec<String> {
    let total = loc.paths.len();
    let mut lines = Vec::new();
    if total == 0 {
        return lines;
    }
    // Rules by name, with the paths they touch and the most they counted, in the order met.
    let mut rules: Vec<(FirewallRule, Vec<&PathPlace>, u64)> = Vec::new();
    for p in &loc.paths {
        if !matches!(p.place, Place::InsideGuest | Place::MayBeInsideGuest) {
            continue;
        }
        let counted = p.place == Place::InsideGuest;
        for h in p.rules.iter().filter(|h| h.counted() == counted) {
            match rules
                .iter_mut()
                .find(|(r, _, _)| r.node == h.node && r.name() == h.name())
            {
                Some((_, ps, n)) => {
                    ps.push(p);
                    *n = (*n).max(h.packets.unwrap_or(0));
                }
                None => rules.push((h.clone(), vec![p], h.packets.unwrap_or(0))),
            }
        }
    }
    rules.sort_by_key(|(h, _, _)| !h.counted());
    for (h, ps, n) in rules.iter().take(RULES_NAMED) {
        let what = if h.rule == "policy" {
            format!(
                "{} (chain {}'s policy drop, no accept for the port before it)",
                h.name(),
                h.chain
            )
        } else {
            format!("{} ({})", h.name(), h.text)
        };
        lines.push(if h.counted() {
            format!(
                "node {}'s own firewall drops it, {INSIDE}: {what}, +{n} packets during the checks; {} of the {total} failing paths ({})",
                h.node,
                ps.len(),
                paths_text(ps)
            )
        } else {
            format!(
                "node {}'s own firewall may drop it, {MAYBE_INSIDE}: {what} matches and keeps no counter; {} of the {total} failing paths ({})",
                h.node,
                ps.len(),
                paths_text(ps)
            )
        });
    }
    if rules.len() > RULES_NAMED {
        lines.push(format!(
            "and {} more node firewall rules touch failing paths (-o json: packetLocation)",
            rules.len() - RULES_NAMED
        ));
    }
    let outside: Vec<&PathPlace> = loc
        .paths
        .iter()
        .filter(|p| p.place == Place::OutsideGuests)
        .collect();
    if outside.len() == total {
        lines.push(format!(
            "no firewall rule inside any node counted these packets: the drop is {OUTSIDE} — {} (both ends of all {total} failing paths read before and after the checks)",
            outside_on(loc.stack)
        ));
    } else if !outside.is_empty() {
        lines.push(format!(
            "{} of the {total} failing paths ({}): no firewall rule inside their nodes counted these packets: the drop is {OUTSIDE} — {}",
            outside.len(),
            paths_text(&outside),
            outside_on(loc.stack)
        ));
    }
    let undecided: Vec<&PathPlace> = loc
        .paths
        .iter()
        .filter(|p| p.place == Place::Undecided)
        .collect();
    if !undecided.is_empty() {
        // The unread nodes, each once.
        let mut why: Vec<String> = Vec::new();
        for n in loc
            .nodes
            .iter()
            .filter(|n| n.read != FirewallReadState::Read)
            .filter(|n| undecided.iter().any(|p| p.from == n.node || p.to == n.node))
        {
            why.push(format!(
                "node {}: {}",
                n.node,
                n.detail.as_deref().unwrap_or("not read")
            ));
        }
        lines.push(format!(
            "{} of the {total} failing paths ({}) undecided, a node's own firewall was not read ({})",
            undecided.len(),
            paths_text(&undecided),
            why.join("; ")
        ));
    }
    lines
}

/// A table or chain name a node printed, safe to put in a command an admin may paste: letters,
/// digits and `_-.` only, as nft and iptables name them, and not starting with `-` (which the
/// tool would read as an option: `-F` flushes); anything else is left out.
fn safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The program a pasted command runs, from a closed set: the node only says which of these
/// read its rules (probe.sh reads with exactly these, `-legacy` being the same program's
/// other backend), never names a program of its own.
fn program(tool: &str) -> Option<&'static str> {
    match tool {
        "nft" => Some("nft"),
        "iptables" | "iptables-legacy" => Some("iptables"),
        "ip6tables" | "ip6tables-legacy" => Some("ip6tables"),
        _ => None,
    }
}

/// The command that lists a rule's chain on its node, when its tool is one of [`program`]'s and
/// every name in it is safe; else why there is none.
fn list_command(h: &FirewallRule) -> Result<String, String> {
    let Some(tool) = program(&h.tool) else {
        return Err(format!(
            "no command: the node named its firewall tool {:?}, not one of nft, iptables, ip6tables",
            h.tool
        ));
    };
    let names = h
        .table
        .split_once(' ')
        .filter(|(family, table)| safe(family) && safe(table) && safe(&h.chain));
    let Some((family, table)) = names else {
        return Err(
            "no command: the node's table or chain name is not one a command may hold".into(),
        );
    };
    if tool == "nft" {
        Ok(format!("nft -a list chain {family} {table} {}", h.chain))
    } else {
        Ok(format!(
            "{tool} -t {table} -L {} -v -n --line-numbers",
            h.chain
        ))
    }
}

/// The first next step when a node's own rule counted the failing packets: that rule is the
/// node's, not the fabric's; what to look at on which node. Empty otherwise.
pub(crate) fn next_steps(loc: &PacketPlaces) -> Vec<String> {
    let mut named: Vec<&FirewallRule> = Vec::new();
    for h in loc
        .paths
        .iter()
        .filter(|p| p.place == Place::InsideGuest)
        .flat_map(|p| p.rules.iter().filter(|h| h.counted()))
    {
        if !named
            .iter()
            .any(|n| n.node == h.node && n.name() == h.name())
        {
            named.push(h);
        }
    }
    named
        .iter()
        .take(RULES_NAMED)
        .map(|h| {
            let look = match list_command(h) {
                Ok(c) => format!(" (on the node: `{c}`)"),
                Err(why) => format!(" ({why})"),
            };
            format!(
                "Node {}'s own firewall counted the dropped packets, {INSIDE}: correct or remove {}{look} first; {} cannot change it",
                h.node,
                h.name(),
                network_team(loc.stack)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
