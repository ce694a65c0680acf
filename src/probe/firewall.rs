//! The node's own firewall as the probe read it (`firewall_read` in probe.sh): the text of
//! `nft -a list ruleset` and of the legacy back-end's `iptables-save -c`, read right before and
//! right after the path checks, the lines that may matter sent by the node and those that can
//! drop a packet kept here ([`section`], `firewall/read.rs`). This module
//! holds the document's part and reads the text into rules (table, chain with its hook and
//! policy, handle or position, counter, action, match text) and decides which rules can touch a
//! TCP packet of a path. What a node printed is data: every rule is read in linear time, an
//! expression it does not know makes a rule "could match", never "cannot".

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Both reads; absent from older probes (then empty: not read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Firewall {
    #[serde(default)]
    pub before: Vec<FirewallRead>,
    #[serde(default)]
    pub after: Vec<FirewallRead>,
}

impl Firewall {
    pub fn is_empty(&self) -> bool {
        self.before.is_empty() && self.after.is_empty()
    }
}

/// How one tool's read went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
pub enum ReadOutcome {
    Ok,
    /// The tool is not on the node.
    Missing,
    /// The tool was refused (no CAP_NET_ADMIN, CAP_NET_RAW).
    Denied,
    #[default]
    Error,
}

/// One tool's read: `nft`, `iptables-legacy`, `ip6tables-legacy`, `iptables`, `ip6tables`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirewallRead {
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub outcome: ReadOutcome,
    /// The kept lines (see the module docs), each ending in a newline.
    #[serde(default)]
    pub text: Option<String>,
    /// Lines the tool printed, lines kept, lines cut past the byte cap.
    #[serde(default)]
    pub lines: u64,
    #[serde(default)]
    pub kept: u64,
    #[serde(default)]
    pub cut: u64,
    #[serde(default)]
    pub detail: Option<String>,
}

impl FirewallRead {
    /// iptables-save's format (else nft's): `iptables`, `ip6tables` and their `-legacy` shims.
    pub fn is_iptables(&self) -> bool {
        self.tool.contains("iptables") || self.tool.contains("ip6tables")
    }

    /// The rules of this read; empty unless it is `Ok`.
    pub fn ruleset(&self) -> Ruleset {
        let text = match (&self.outcome, &self.text) {
            (ReadOutcome::Ok, Some(t)) => t.as_str(),
            _ => "",
        };
        if self.is_iptables() {
            Ruleset::parse_iptables(&self.tool, text)
        } else {
            Ruleset::parse_nft(&self.tool, text)
        }
    }
}

/// Where a chain is attached: the packets it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Packets to this node (input, prerouting, ingress).
    In,
    /// Packets from this node (output, postrouting, egress).
    Out,
    /// Packets passing through (forward): never a path's.
    Through,
    /// A chain without a hook (reached by a jump from anywhere).
    Unknown,
}

impl Hook {
    fn of(name: &str) -> Hook {
        match name.to_ascii_lowercase().as_str() {
            "input" | "prerouting" | "ingress" => Hook::In,
            "output" | "postrouting" | "egress" => Hook::Out,
            "forward" => Hook::Through,
            _ => Hook::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum Action {
    Drop,
    Reject,
    Accept,
    Other,
}

/// A rule's place: nft's handle, or the position in its chain (iptables, as `--line-numbers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleId {
    Handle(u64),
    Position(u64),
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleId::Handle(h) => write!(f, "handle {h}"),
            RuleId::Position(p) => write!(f, "rule {p}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// `inet filter`, `ip6 filter` (iptables: `ip`/`ip6` and the table).
    pub table: String,
    pub name: String,
    pub hook: Hook,
    /// The base chain's policy, when it drops.
    pub policy_drop: bool,
    /// iptables' policy counter (packets).
    pub policy_packets: Option<u64>,
    /// The chain's rules, in order.
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub id: Option<RuleId>,
    /// Packets counted, when the rule keeps a counter.
    pub packets: Option<u64>,
    pub action: Action,
    /// The rule as printed, without its counter and handle.
    pub text: String,
    /// The match expressions, read.
    matches: Vec<Cond>,
}

/// The rules of one read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ruleset {
    pub tool: String,
    pub chains: Vec<Chain>,
}

/// One TCP packet of a path, as a node's firewall sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// None: an ephemeral port (32768–60999, Linux's default range).
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    /// The connection's first packet (conntrack `new`), else a reply (`established`).
    pub new: bool,
    /// Entering the node (else leaving it).
    pub incoming: bool,
}

/// Whether a rule can apply to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fit {
    No,
    /// Nothing known rules it out.
    Maybe,
    /// Every expression is known and holds.
    Surely,
}

/// One match expression, read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cond {
    Addr {
        src: bool,
        neg: bool,
        nets: Vec<Net>,
    },
    Port {
        src: bool,
        neg: bool,
        ranges: Vec<(u16, u16)>,
    },
    /// The layer-4 protocol is TCP (or not).
    Tcp(bool),
    /// Conntrack states the expression accepts (lower case), negated or not.
    State { neg: bool, states: Vec<String> },
    /// Interface names compared (in or out).
    Iface {
        incoming: bool,
        neg: bool,
        names: Vec<String>,
    },
    /// IPv4 only or IPv6 only (nft's `ip`/`ip6` selectors, iptables' table).
    Family(bool),
    /// Anything not read: may hold.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    prefix: u8,
    /// An inclusive range's end instead of a prefix.
    to: Option<IpAddr>,
}

const EPHEMERAL: (u16, u16) = (32768, 60999);

/// The most rules read from one read (the probe keeps at most 48 KiB of lines).
pub const MAX_RULES: usize = 4096;
/// A rule's text as kept.
const MAX_RULE_TEXT: usize = 300;

impl Ruleset {
    /// `nft -a list ruleset`, as the probe kept it: `table <family> <name> {`, `chain <name> {`,
    /// `type filter hook <hook> priority ...; policy <policy>;`, one rule a line ending in
    /// `# handle N`, `}` closing each.
    pub fn parse_nft(tool: &str, text: &str) -> Ruleset {
        let mut set = Ruleset {
            tool: tool.to_string(),
            chains: vec![],
        };
        let mut table: Option<(String, Option<bool>)> = None;
        let mut in_chain = false;
        let mut rules = 0usize;
        for line in text.lines() {
            let t = line.trim();
            if !line.starts_with(['\t', ' ']) {
                if let Some(rest) = t.strip_prefix("table ") {
                    let mut w = rest.split_whitespace();
                    let family = w.next().unwrap_or("").to_string();
                    let name = w.next().unwrap_or("").to_string();
                    let v4 = match family.as_str() {
                        "ip" => Some(true),
                        "ip6" => Some(false),
                        _ => None,
                    };
                    table = Some((format!("{family} {name}"), v4));
                } else if t.starts_with('}') {
                    table = None;
                }
                in_chain = false;
                continue;
            }
            let Some((tname, v4)) = &table else { continue };
            if let Some(rest) = t.strip_prefix("chain ") {
                let name = rest.split_whitespace().next().unwrap_or("").to_string();
                set.chains.push(Chain {
                    table: tname.clone(),
                    name,
                    hook: Hook::Unknown,
                    policy_drop: false,
                    policy_packets: None,
                    rules: vec![],
                });
                in_chain = true;
                continue;
            }
            if t.starts_with('}') {
                in_chain = false;
                continue;
            }
            if !in_chain {
                continue;
            }
            let Some(chain) = set.chains.last_mut() else {
                continue;
            };
            if t.starts_with("type ") && t.contains(" hook ") {
                let hook = t
                    .split_whitespace()
                    .skip_while(|w| *w != "hook")
                    .nth(1)
                    .unwrap_or("");
                chain.hook = Hook::of(hook);
                chain.policy_drop = t.contains("policy drop");
                continue;
            }
            if rules >= MAX_RULES {
                continue;
            }
            rules += 1;
            chain.rules.push(nft_rule(t, *v4));
        }
        set
    }

    /// `iptables-save -c` as the probe kept it: `*table`, `:CHAIN POLICY [p:b]`, each rule
    /// `@N [p:b] -A CHAIN ...` (N its position in the chain, the probe's; without it the
    /// position among the lines read), `COMMIT`.
    pub fn parse_iptables(tool: &str, text: &str) -> Ruleset {
        let v4 = !tool.starts_with("ip6");
        let family = if v4 { "ip" } else { "ip6" };
        let mut set = Ruleset {
            tool: tool.to_string(),
            chains: vec![],
        };
        let mut table = String::new();
        let mut first = 0usize;
        let mut rules = 0usize;
        for line in text.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix('*') {
                table = format!("{family} {}", name.trim());
                first = set.chains.len();
                continue;
            }
            if let Some(rest) = t.strip_prefix(':') {
                let mut w = rest.split_whitespace();
                let name = w.next().unwrap_or("").to_string();
                let policy = w.next().unwrap_or("-");
                let packets = w.next().and_then(|c| counter_pair(c).map(|(p, _)| p));
                set.chains.push(Chain {
                    table: table.clone(),
                    hook: Hook::of(&name),
                    policy_drop: policy == "DROP",
                    policy_packets: (policy != "-").then_some(packets).flatten(),
                    name,
                    rules: vec![],
                });
                continue;
            }
            let (pos, rest) = match t.strip_prefix('@') {
                Some(r) => {
                    let (n, rest) = r.split_once(' ').unwrap_or((r, ""));
                    (n.parse::<u64>().ok(), rest.trim_start())
                }
                None => (None, t),
            };
            let (packets, rest) = match rest.strip_prefix('[') {
                Some(r) => match r.split_once("] ") {
                    Some((c, rest)) => (counter_pair(&format!("[{c}]")).map(|(p, _)| p), rest),
                    None => (None, rest),
                },
                None => (None, rest),
            };
            let Some(rule) = rest.strip_prefix("-A ") else {
                continue;
            };
            let Some((chain_name, args)) = rule.split_once(' ').or(Some((rule, ""))) else {
                continue;
            };
            if rules >= MAX_RULES {
                continue;
            }
            rules += 1;
            let Some(chain) = set.chains[first..]
                .iter_mut()
                .find(|c| c.name == chain_name)
            else {
                continue;
            };
            let id = pos.unwrap_or(chain.rules.len() as u64 + 1);
            let (action, matches) = iptables_rule(args, v4);
            chain.rules.push(Rule {
                id: Some(RuleId::Position(id)),
                packets,
                action,
                text: cap(args),
                matches,
            });
        }
        set
    }
}

/// `[p:b]` as (p, b).
fn counter_pair(s: &str) -> Option<(u64, u64)> {
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    let (p, b) = inner.split_once(':')?;
    Some((p.parse().ok()?, b.parse().ok()?))
}

fn cap(s: &str) -> String {
    crate::probe::cap(s.trim(), MAX_RULE_TEXT)
}

/// nft's words, with `{ a, b }` as one word.
fn nft_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            c if quoted => cur.push(c),
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A set `{ a, b }` or one value, as its items.
fn items(w: &str) -> Vec<String> {
    let inner = w
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(w);
    inner
        .split([',', ' '])
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The `n` words from `from` (fewer at the end of the rule): a match's words as the rule wrote them.
fn span(words: &[String], from: usize, n: usize) -> impl Iterator<Item = &str> {
    words[from..(from + n).min(words.len())]
        .iter()
        .map(String::as_str)
}

fn nft_rule(line: &str, v4: Option<bool>) -> Rule {
    // The handle and comment off the end.
    let (body, handle) = match line.rsplit_once("# handle ") {
        Some((b, h)) => (b.trim_end(), h.trim().parse::<u64>().ok()),
        None => (line, None),
    };
    let words = nft_words(body);
    let mut matches = Vec::new();
    let mut packets = None;
    let mut action = Action::Other;
    let mut text: Vec<&str> = Vec::new();
    if let Some(v4) = v4 {
        matches.push(Cond::Family(v4));
    }
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let next = |k: usize| words.get(i + k).map(String::as_str).unwrap_or("");
        // An operator after the selector: `!=` negates, `==` is the default.
        let op = |k: usize| -> (bool, usize) {
            match next(k) {
                "!=" => (true, 1),
                "==" | "eq" => (false, 1),
                _ => (false, 0),
            }
        };
        match w {
            "counter" => {
                // counter packets N bytes M
                if next(1) == "packets" {
                    packets = next(2).parse::<u64>().ok();
                    i += 5;
                } else {
                    packets = Some(0);
                    i += 1;
                }
                continue;
            }
            "drop" => action = Action::Drop,
            "reject" => action = Action::Reject,
            "accept" => action = Action::Accept,
            "jump" | "goto" | "return" | "continue" | "queue" => action = Action::Other,
            "ip" | "ip6" if matches!(next(1), "saddr" | "daddr") => {
                let src = next(1) == "saddr";
                let (neg, skip) = op(2);
                let v = next(2 + skip);
                matches.push(Cond::Family(w == "ip"));
                matches.push(addr_cond(src, neg, v));
                text.extend(span(&words, i, 3 + skip));
                i += 3 + skip;
                continue;
            }
            "ip" if next(1) == "protocol" => {
                let (neg, skip) = op(2);
                matches.push(proto_cond(neg, next(2 + skip)));
                text.extend(span(&words, i, 3 + skip));
                i += 3 + skip;
                continue;
            }
            "meta" if matches!(next(1), "l4proto" | "nfproto") => {
                let (neg, skip) = op(2);
                let v = next(2 + skip);
                if next(1) == "l4proto" {
                    matches.push(proto_cond(neg, v));
                } else {
                    let it = items(v);
                    let fam = |f: &str| it.iter().any(|x| x == f);
                    match (fam("ipv4"), fam("ipv6"), neg) {
                        (true, false, false) | (false, true, true) => {
                            matches.push(Cond::Family(true))
                        }
                        (false, true, false) | (true, false, true) => {
                            matches.push(Cond::Family(false))
                        }
                        _ => matches.push(Cond::Unknown),
                    }
                }
                text.extend(span(&words, i, 3 + skip));
                i += 3 + skip;
                continue;
            }
            "tcp" | "udp" | "sctp" | "th" | "udplite" | "dccp"
                if matches!(next(1), "dport" | "sport") =>
            {
                let src = next(1) == "sport";
                let (neg, skip) = op(2);
                let v = next(2 + skip);
                if w != "th" {
                    matches.push(Cond::Tcp(w == "tcp"));
                }
                matches.push(match port_ranges(v, '-') {
                    Some(ranges) => Cond::Port { src, neg, ranges },
                    None => Cond::Unknown,
                });
                text.extend(span(&words, i, 3 + skip));
                i += 3 + skip;
                continue;
            }
            "tcp" | "udp" | "icmp" | "icmpv6" | "sctp" | "udplite" | "dccp" | "igmp" => {
                // Any other field of the protocol: the packet is of that protocol.
                matches.push(Cond::Tcp(w == "tcp"));
                if w == "tcp" {
                    matches.push(Cond::Unknown);
                }
            }
            "ct" if next(1) == "state" => {
                let (neg, skip) = op(2);
                matches.push(Cond::State {
                    neg,
                    states: items(next(2 + skip))
                        .into_iter()
                        .map(|s| s.to_ascii_lowercase())
                        .collect(),
                });
                text.extend(span(&words, i, 3 + skip));
                i += 3 + skip;
                continue;
            }
            "iifname" | "oifname" | "iif" | "oif" => {
                let (neg, skip) = op(1);
                matches.push(Cond::Iface {
                    incoming: w.starts_with('i'),
                    neg,
                    names: items(next(1 + skip)),
                });
                text.extend(span(&words, i, 2 + skip));
                i += 2 + skip;
                continue;
            }
            "with" => {
                // reject with tcp reset / icmp ...: the rest is the reject's.
                text.extend(words[i..].iter().map(String::as_str));
                break;
            }
            // Statements that do not decide whether the rule applies.
            "log" | "comment" | "nftrace" => {}
            // Anything else before the verdict is a match not read: it may hold.
            _ if action == Action::Other && !w.starts_with('"') => matches.push(Cond::Unknown),
            _ => {}
        }
        text.push(w);
        i += 1;
    }
    Rule {
        id: handle.map(RuleId::Handle),
        packets,
        action,
        text: cap(&text.join(" ")),
        matches,
    }
}

fn proto_cond(neg: bool, v: &str) -> Cond {
    let it = items(v);
    if it.iter().any(|p| p.starts_with('@') || p.starts_with('$')) {
        return Cond::Unknown;
    }
    let tcp = it.iter().any(|p| p == "tcp" || p == "6");
    Cond::Tcp(tcp != neg)
}

fn addr_cond(src: bool, neg: bool, v: &str) -> Cond {
    let mut nets = Vec::new();
    for item in items(v) {
        match parse_net(&item) {
            Some(n) => nets.push(n),
            None => return Cond::Unknown,
        }
    }
    if nets.is_empty() {
        return Cond::Unknown;
    }
    Cond::Addr { src, neg, nets }
}

/// `10.0.0.1`, `10.0.0.0/24`, `10.0.0.1-10.0.0.9`, `fd00::/64`; iptables' `10.0.0.0/255.255.255.0`.
fn parse_net(s: &str) -> Option<Net> {
    if let Some((a, b)) = s.split_once('/') {
        let addr: IpAddr = a.parse().ok()?;
        let prefix = match b.parse::<u8>() {
            Ok(p) => p,
            Err(_) => {
                let mask: IpAddr = b.parse().ok()?;
                let bits = bits(mask);
                bits.count_ones() as u8 - if mask.is_ipv4() { 96 } else { 0 }
            }
        };
        return Some(Net {
            addr,
            prefix,
            to: None,
        });
    }
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (IpAddr, IpAddr) = (a.parse().ok()?, b.parse().ok()?);
        return Some(Net {
            addr: a,
            prefix: 0,
            to: Some(b),
        });
    }
    let addr: IpAddr = s.parse().ok()?;
    Some(Net {
        addr,
        prefix: if addr.is_ipv4() { 32 } else { 128 },
        to: None,
    })
}

/// An address as 128 bits (IPv4 in the low 32, upper bits set for a v4 mask's count).
fn bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => (u128::MAX << 32) | u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

impl Net {
    fn contains(&self, ip: IpAddr) -> bool {
        if self.addr.is_ipv4() != ip.is_ipv4() {
            return false;
        }
        let value = |a: IpAddr| match a {
            IpAddr::V4(v) => u128::from(u32::from(v)),
            IpAddr::V6(v) => u128::from(v),
        };
        if let Some(to) = self.to {
            return value(self.addr) <= value(ip) && value(ip) <= value(to);
        }
        let width: u32 = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = u32::from(self.prefix).min(width);
        if prefix == 0 {
            return true;
        }
        let shift = width - prefix;
        value(self.addr) >> shift == value(ip) >> shift
    }
}

/// `2379`, `2379-2380`, `{ 2379, 2380 }` (nft) or `2379,2380`, `2000:3000` (iptables);
/// None for a named set, a service name or anything else not read.
fn port_ranges(v: &str, range: char) -> Option<Vec<(u16, u16)>> {
    let mut out = Vec::new();
    for item in items(v) {
        let item = item.as_str();
        let r = match item.split_once(range) {
            Some((a, b)) => {
                let a = if a.is_empty() {
                    Some(0)
                } else {
                    a.parse().ok()
                };
                let b = if b.is_empty() {
                    Some(65535)
                } else {
                    b.parse().ok()
                };
                (a?, b?)
            }
            None => {
                let p = item.parse().ok()?;
                (p, p)
            }
        };
        out.push(r);
    }
    (!out.is_empty()).then_some(out)
}

fn iptables_rule(args: &str, v4: bool) -> (Action, Vec<Cond>) {
    let words = shell_words(args);
    let mut matches = vec![Cond::Family(v4)];
    let mut action = Action::Other;
    let mut neg = false;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let next = words.get(i + 1).map(String::as_str).unwrap_or("");
        let mut take = 2;
        match w {
            "!" => {
                neg = true;
                i += 1;
                continue;
            }
            "-s" | "--source" | "-d" | "--destination" => {
                let mut nets = Vec::new();
                let mut ok = true;
                for item in next.split(',') {
                    match parse_net(item) {
                        Some(n) => nets.push(n),
                        None => ok = false,
                    }
                }
                matches.push(if ok && !nets.is_empty() {
                    Cond::Addr {
                        src: w.starts_with("-s") || w == "--source",
                        neg,
                        nets,
                    }
                } else {
                    Cond::Unknown
                });
            }
            "-p" | "--protocol" => matches.push(proto_cond(neg, next)),
            "--dport"
            | "--destination-port"
            | "--sport"
            | "--source-port"
            | "--dports"
            | "--sports"
            | "--destination-ports"
            | "--source-ports"
            | "--ports" => {
                let src = w.contains('s') && (w.starts_with("--sport") || w.contains("source"));
                let cond = match port_ranges(next, ':') {
                    Some(ranges) if w == "--ports" => Cond::Port {
                        src: false,
                        neg,
                        ranges,
                    },
                    Some(ranges) => Cond::Port { src, neg, ranges },
                    None => Cond::Unknown,
                };
                matches.push(cond);
            }
            "--ctstate" | "--state" => matches.push(Cond::State {
                neg,
                states: next.split(',').map(|s| s.to_ascii_lowercase()).collect(),
            }),
            "-i" | "--in-interface" | "-o" | "--out-interface" => matches.push(Cond::Iface {
                incoming: w == "-i" || w == "--in-interface",
                neg,
                names: vec![next.to_string()],
            }),
            "-m" | "--match" => {
                // The match module's options follow; the module alone says nothing.
            }
            "--comment" => {}
            "--syn" => take = 1,
            "-j" | "--jump" | "-g" | "--goto" => {
                action = match next {
                    "DROP" => Action::Drop,
                    "REJECT" => Action::Reject,
                    "ACCEPT" => Action::Accept,
                    _ => Action::Other,
                };
                // The target's own options end the rule.
                break;
            }
            _ => {
                if w.starts_with('-') {
                    matches.push(Cond::Unknown);
                }
                take = 1;
            }
        }
        neg = false;
        i += take;
    }
    (action, matches)
}

/// Words as iptables-save quotes them ("a b" one word).
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Rule {
    /// Whether this rule can apply to `p`.
    pub fn fit(&self, p: &Packet) -> Fit {
        let mut fit = Fit::Surely;
        for c in &self.matches {
            let f = c.fit(p);
            fit = fit.min(f);
            if fit == Fit::No {
                break;
            }
        }
        fit
    }
}

impl Cond {
    fn fit(&self, p: &Packet) -> Fit {
        let yes = |b: bool| if b { Fit::Surely } else { Fit::No };
        match self {
            Cond::Unknown => Fit::Maybe,
            Cond::Family(v4) => yes(p.src.is_ipv4() == *v4),
            Cond::Tcp(tcp) => yes(*tcp),
            Cond::Addr { src, neg, nets } => {
                let a = if *src { p.src } else { p.dst };
                yes(nets.iter().any(|n| n.contains(a)) != *neg)
            }
            Cond::Port { src, neg, ranges } => match if *src { p.sport } else { p.dport } {
                Some(port) => yes(ranges.iter().any(|(a, b)| *a <= port && port <= *b) != *neg),
                None => {
                    // An ephemeral port: the ranges meet the range, cover it, or miss it.
                    let (lo, hi) = EPHEMERAL;
                    let meets = ranges.iter().any(|(a, b)| *a <= hi && lo <= *b);
                    let covers = ranges.iter().any(|(a, b)| *a <= lo && hi <= *b);
                    match (meets, covers, neg) {
                        (false, _, false) | (_, true, true) => Fit::No,
                        (_, true, false) | (false, _, true) => Fit::Surely,
                        _ => Fit::Maybe,
                    }
                }
            },
            Cond::State { neg, states } => {
                let want = if p.new { "new" } else { "established" };
                let has = states.iter().any(|s| s == want);
                if states
                    .iter()
                    .any(|s| s.starts_with('@') || s.starts_with('$'))
                {
                    Fit::Maybe
                } else {
                    yes(has != *neg)
                }
            }
            Cond::Iface {
                incoming,
                neg,
                names,
            } => {
                if *incoming != p.incoming {
                    // iifname on an outgoing packet (or oifname on one coming in) is never set.
                    return yes(*neg);
                }
                // Paths between two nodes never cross loopback; any other name may be theirs.
                if names.iter().all(|n| n == "lo") {
                    yes(*neg)
                } else {
                    Fit::Maybe
                }
            }
        }
    }
}

mod read;
pub(crate) use read::{section, ACCEPT_PATTERN, KEEP_PATTERN};
pub use read::{FIREWALL_READ, MAX_FIREWALL_READS, MAX_FIREWALL_TEXT};

#[cfg(test)]
mod tests;
