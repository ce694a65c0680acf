//! Where the failing paths' packets die (`packetLocation` of a `DiagnoseReport`): each failing
//! peer path placed inside a guest, maybe inside one, outside the guests or undecided, from
//! both ends' own firewall rules read before and after the checks.

use serde::{Deserialize, Serialize};

use super::{all, CellState};

use crate::analyse::location;

mirror_enum! {
    /// Where a failing path's packets die.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum Place from location::Place {
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
}

mirror_enum! {
    /// How a node's own firewall was read.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
        strum::Display, strum::VariantArray,
    )]
    pub enum FirewallReadState from location::ReadState {
        /// Every tool's rules, before and after the checks.
        Read,
        /// Read, but the probe cut lines past its cap: a rule may be missing.
        Partial,
        /// A tool was refused or failed, none is on the node, or the node was not probed.
        NotRead,
        /// Its probe does not read the firewall (an older probe).
        Absent,
    }
}

/// Where the failing paths' packets die, from the nodes' own firewalls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PacketLocation {
    /// The lines the verdict's evidence carries on a network verdict, with the contract's
    /// words `inside the guest`, `may be inside the guest`, `outside the guests`.
    pub summary: Vec<String>,
    /// Each failing peer path (timeout, refused, no route), 2379 first.
    pub paths: Vec<PathPlace>,
    /// How each node's firewall was read.
    pub nodes: Vec<NodeFirewall>,
}

impl From<location::PacketLocation> for PacketLocation {
    fn from(l: location::PacketLocation) -> Self {
        PacketLocation {
            summary: location::evidence(&l),
            paths: all(l.paths),
            nodes: all(l.nodes),
        }
    }
}

/// One failing path, placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

impl From<location::PathPlace> for PathPlace {
    fn from(p: location::PathPlace) -> Self {
        PathPlace {
            from: p.from,
            to: p.to,
            port: p.port,
            state: p.state.into(),
            place: p.place.into(),
            rules: all(p.rules),
            why: p.why,
        }
    }
}

/// A node's rule, or a chain's policy, that can drop a path's packets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub text: String,
    /// Packets it counted during the checks; absent when it keeps no counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
}

impl From<location::RuleHit> for FirewallRule {
    fn from(h: location::RuleHit) -> Self {
        FirewallRule {
            node: h.node,
            tool: h.tool,
            table: h.table,
            chain: h.chain,
            rule: h.rule,
            text: h.text,
            packets: h.packets,
        }
    }
}

/// How one node's own firewall was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeFirewall {
    pub node: String,
    pub read: FirewallReadState,
    /// Why it is not `Read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl From<location::NodeRead> for NodeFirewall {
    fn from(n: location::NodeRead) -> Self {
        NodeFirewall {
            node: n.node,
            read: n.read.into(),
            detail: n.detail,
        }
    }
}
