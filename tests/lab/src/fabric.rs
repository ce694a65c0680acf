//! What the lab's fabric does to one packet, computed from the rules **actually loaded** in the
//! switch namespace (`nft -j list ruleset` there), never from the lab's record of the faults it
//! injected: a test that compares another view of the network (a fake NSX Manager's Traceflow,
//! say) with the lab then compares it with the kernel's rules, whoever wrote them.
//!
//! The packet is a TCP SYN from a node's link to an IP and port, as Traceflow injects one. On
//! its way through the switch it meets (in this order) every `netdev` base chain hooked at
//! `ingress` on the sender's host-side veth (what the node sends, before the bridge), then every
//! `netdev` base chain hooked at `egress` on the veth of the node that owns the destination
//! address (what the bridge delivers to it); chains of one hook by priority. The first `drop`
//! or `reject` decides; `accept` ends that chain; a chain's `drop` policy drops. `ip`/`inet`
//! tables do not see bridged frames (the switch namespace loads no `br_netfilter` hooks), so
//! they are left out; `bridge` tables would see them and are not modelled: a base chain there
//! makes every answer [`Verdict::Unknown`].
//!
//! Only what the lab's faults write (and near it) is understood: matches on `ip saddr/daddr/
//! length/protocol`, `tcp sport/dport/flags` (with a mask), `meta l4proto/protocol`, against
//! values, anonymous sets, named sets (`@members`), ranges and prefixes, with `==`, `!=`, `<`,
//! `>`, `<=`, `>=`, `in`; statements `counter`, `log`, `drop`, `reject`, `accept`, `jump`,
//! `goto`, `return`. Anything else in a rule the packet reaches is [`Verdict::Unknown`] with
//! what was not understood: never a guess.
//!
//! nft 1.0.6 (Debian 12, the lab's) leaves a netdev chain's device out of its JSON; there the
//! devices are read from the text listing (`device "v1"` on the chain's `type … hook` line).
//! Newer nft writes `"dev"` (a string, or a list) in the chain object, which is used first.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! # let lab = etcdnet_lab::Lab::start(Default::default())?;
//! let fabric = etcdnet_lab::fabric::Fabric::read(&lab)?;
//! let v = fabric.syn("cp1", "198.18.0.12".parse()?, 2380);
//! assert!(!v.delivered());
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::exec::checked;
use crate::net::in_netns;
use crate::Lab;

/// The source port the SYN is given: an ephemeral one (Linux's default range starts at 32768),
/// never a peer port, as a client's connect has.
pub const SYN_SOURCE_PORT: u16 = 40000;
/// An IPv4 TCP SYN's `ip length`: 20 bytes of IP, 40 of TCP with Linux's options.
const SYN_IP_LENGTH: u64 = 60;
/// How deep `jump`/`goto` may go (nft itself refuses loops; this bounds a hostile ruleset).
const MAX_DEPTH: usize = 16;
const NFT: Duration = Duration::from_secs(20);

/// One node's link to the switch: its name, its address, its host-side veth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub node: String,
    pub ip: Ipv4Addr,
    pub device: String,
}

/// Where a rule is: its table, chain, handle and comment (the lab's say which fault wrote them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleId {
    pub family: String,
    pub table: String,
    pub chain: String,
    /// None for a chain's policy.
    pub handle: Option<u64>,
    pub comment: Option<String>,
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.family, self.table, self.chain)?;
        match self.handle {
            Some(h) => write!(f, " handle {h}")?,
            None => write!(f, " policy")?,
        }
        if let Some(c) = &self.comment {
            write!(f, " ({c})")?;
        }
        Ok(())
    }
}

/// What the fabric does to the SYN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No rule stops it: the bridge delivers it.
    Delivered,
    /// Dropped silently (the sender times out).
    Dropped(RuleId),
    /// Answered by the fabric (`reject`: a reset, the sender is refused).
    Rejected(RuleId),
    /// A rule on its way is not understood (what, and where).
    Unknown(String),
}

impl Verdict {
    pub fn delivered(&self) -> bool {
        matches!(self, Verdict::Delivered)
    }

    /// Dropped or rejected: it never reaches the destination.
    pub fn stopped(&self) -> bool {
        matches!(self, Verdict::Dropped(_) | Verdict::Rejected(_))
    }

    /// The rule that stopped it.
    pub fn rule(&self) -> Option<&RuleId> {
        match self {
            Verdict::Dropped(r) | Verdict::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Chain {
    family: String,
    table: String,
    name: String,
    /// Base chains: hook, devices, priority, policy.
    hook: Option<String>,
    devices: Vec<String>,
    prio: i64,
    policy_drop: bool,
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    handle: Option<u64>,
    comment: Option<String>,
    expr: Vec<Value>,
}

/// The switch namespace's ruleset, parsed; see the module.
#[derive(Debug, Clone)]
pub struct Fabric {
    chains: Vec<Chain>,
    /// Named sets by (family, table, name).
    sets: BTreeMap<(String, String, String), Vec<Value>>,
    links: Vec<Link>,
}

/// The packet being judged.
struct Syn {
    saddr: Ipv4Addr,
    daddr: Ipv4Addr,
    sport: u16,
    dport: u16,
}

enum Step {
    /// No terminal statement: on to the next rule.
    Next,
    Accept,
    Return,
    /// This rule's own `drop` / `reject` (its chain names it).
    Drop,
    Reject,
    /// Decided further down (a jumped-to chain's rule, or not understood).
    Stop(Verdict),
}

impl Fabric {
    /// Reads the lab's switch namespace: `nft -j list ruleset`, and the text listing when the
    /// JSON leaves a netdev chain's device out. The links are the lab's nodes, each on `v<i>`.
    pub fn read(lab: &Lab) -> Result<Fabric> {
        let links = lab
            .nodes()
            .iter()
            .map(|n| Link {
                node: n.name.clone(),
                ip: n.ip,
                device: format!("v{}", n.index),
            })
            .collect();
        read_netns(lab.switch_netns(), links)
    }

    /// Parses `nft -j list ruleset` (`json`); `text` (`nft list ruleset`) is needed only when
    /// the JSON names no device for a netdev base chain (nft 1.0.6).
    pub fn parse(json: &str, text: Option<&str>, links: Vec<Link>) -> Result<Fabric> {
        let doc: Value = serde_json::from_str(json).context("nft's JSON")?;
        let items = doc["nftables"]
            .as_array()
            .ok_or_else(|| anyhow!("no `nftables` array in nft's JSON"))?;
        let text_devices = text.map(devices_from_text).unwrap_or_default();
        let mut chains: Vec<Chain> = Vec::new();
        let mut sets = BTreeMap::new();
        let key = |o: &Value, table_key: &str| -> (String, String, String) {
            (
                o["family"].as_str().unwrap_or_default().to_string(),
                o[table_key].as_str().unwrap_or_default().to_string(),
                o["name"].as_str().unwrap_or_default().to_string(),
            )
        };
        for item in items {
            if let Some(c) = item.get("chain") {
                let (family, table, name) = key(c, "table");
                let mut devices: Vec<String> = match &c["dev"] {
                    Value::String(d) => vec![d.clone()],
                    Value::Array(ds) => ds
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    _ => Vec::new(),
                };
                let hook = c["hook"].as_str().map(str::to_string);
                if devices.is_empty() && family == "netdev" && hook.is_some() {
                    devices = text_devices
                        .get(&(table.clone(), name.clone()))
                        .cloned()
                        .ok_or_else(|| {
                            anyhow!(
                                "netdev chain {table} {name} has no device in nft's JSON and no \
                                 text listing names one"
                            )
                        })?;
                }
                chains.push(Chain {
                    family,
                    table,
                    name,
                    hook,
                    devices,
                    prio: c["prio"].as_i64().unwrap_or(0),
                    policy_drop: c["policy"].as_str() == Some("drop"),
                    rules: Vec::new(),
                });
            } else if let Some(s) = item.get("set") {
                let elems = s["elem"].as_array().cloned().unwrap_or_default();
                sets.insert(key(s, "table"), elems);
            } else if let Some(r) = item.get("rule") {
                let family = r["family"].as_str().unwrap_or_default();
                let table = r["table"].as_str().unwrap_or_default();
                let chain = r["chain"].as_str().unwrap_or_default();
                let c = chains
                    .iter_mut()
                    .find(|c| c.family == family && c.table == table && c.name == chain)
                    .ok_or_else(|| anyhow!("rule of unknown chain {family} {table} {chain}"))?;
                c.rules.push(Rule {
                    handle: r["handle"].as_u64(),
                    comment: r["comment"].as_str().map(str::to_string),
                    expr: r["expr"].as_array().cloned().unwrap_or_default(),
                });
            }
        }
        Ok(Fabric {
            chains,
            sets,
            links,
        })
    }

    /// What the fabric does to a TCP SYN from node `from`'s link (its address, source port
    /// [`SYN_SOURCE_PORT`]) to `to`:`port`.
    pub fn syn(&self, from: &str, to: Ipv4Addr, port: u16) -> Verdict {
        let Some(src) = self.links.iter().find(|l| l.node == from) else {
            return Verdict::Unknown(format!("no link of a node {from:?}"));
        };
        if to == src.ip {
            // A node's own address: over `lo`, never on the link.
            return Verdict::Delivered;
        }
        if let Some(c) = self
            .chains
            .iter()
            .find(|c| c.family == "bridge" && c.hook.is_some())
        {
            return Verdict::Unknown(format!(
                "bridge table {} chain {} is not modelled",
                c.table, c.name
            ));
        }
        let syn = Syn {
            saddr: src.ip,
            daddr: to,
            sport: SYN_SOURCE_PORT,
            dport: port,
        };
        // Ingress at the sender's veth, then egress at the owner of the address's veth (the
        // bridge delivers a frame for another address, or the jumpbox's, to no node).
        let mut hooks = vec![("ingress", src.device.as_str())];
        if let Some(dst) = self.links.iter().find(|l| l.ip == to && l.node != from) {
            hooks.push(("egress", dst.device.as_str()));
        }
        for (hook, device) in hooks {
            let mut base: Vec<&Chain> = self
                .chains
                .iter()
                .filter(|c| {
                    c.family == "netdev"
                        && c.hook.as_deref() == Some(hook)
                        && c.devices.iter().any(|d| d == device)
                })
                .collect();
            base.sort_by_key(|c| c.prio);
            for chain in base {
                match self.run_chain(chain, &syn, 0) {
                    Step::Stop(v) => return v,
                    Step::Accept => {}
                    // Off the end of a base chain (or `return` in it): its policy.
                    Step::Next | Step::Return | Step::Drop | Step::Reject if chain.policy_drop => {
                        return Verdict::Dropped(RuleId {
                            family: chain.family.clone(),
                            table: chain.table.clone(),
                            chain: chain.name.clone(),
                            handle: None,
                            comment: None,
                        });
                    }
                    Step::Next | Step::Return | Step::Drop | Step::Reject => {}
                }
            }
        }
        Verdict::Delivered
    }

    fn chain(&self, family: &str, table: &str, name: &str) -> Option<&Chain> {
        self.chains
            .iter()
            .find(|c| c.family == family && c.table == table && c.name == name)
    }

    fn run_chain(&self, chain: &Chain, syn: &Syn, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return Step::Stop(Verdict::Unknown(format!(
                "jumps deeper than {MAX_DEPTH} at chain {}",
                chain.name
            )));
        }
        for rule in &chain.rules {
            let id = || RuleId {
                family: chain.family.clone(),
                table: chain.table.clone(),
                chain: chain.name.clone(),
                handle: rule.handle,
                comment: rule.comment.clone(),
            };
            match self.run_rule(chain, rule, syn, depth) {
                Ok(Step::Next) => {}
                Ok(Step::Drop) => return Step::Stop(Verdict::Dropped(id())),
                Ok(Step::Reject) => return Step::Stop(Verdict::Rejected(id())),
                Ok(step) => return step,
                Err(why) => return Step::Stop(Verdict::Unknown(format!("{}: {why}", id()))),
            }
        }
        Step::Next
    }

    /// One rule: its matches in order (the first that fails: next rule), then its statements.
    fn run_rule(
        &self,
        chain: &Chain,
        rule: &Rule,
        syn: &Syn,
        depth: usize,
    ) -> std::result::Result<Step, String> {
        for e in &rule.expr {
            let Some((stmt, body)) = e.as_object().and_then(|o| o.iter().next()) else {
                return Err(format!("an expression that is not an object: {e}"));
            };
            match stmt.as_str() {
                "match" => {
                    if !self.matches(chain, body, syn)? {
                        return Ok(Step::Next);
                    }
                }
                "counter" | "log" | "limit" | "notrack" => {}
                "drop" => return Ok(Step::Drop),
                "reject" => return Ok(Step::Reject),
                "accept" => return Ok(Step::Accept),
                "return" => return Ok(Step::Return),
                "jump" | "goto" => {
                    let target = body["target"]
                        .as_str()
                        .ok_or_else(|| format!("{stmt} without a target: {body}"))?;
                    let next = self
                        .chain(&chain.family, &chain.table, target)
                        .ok_or_else(|| format!("{stmt} to a chain not listed: {target}"))?;
                    match self.run_chain(next, syn, depth + 1) {
                        Step::Next | Step::Return if stmt == "jump" => {}
                        // goto: falling off the target ends the calling chain too.
                        Step::Next | Step::Return => return Ok(Step::Return),
                        other => return Ok(other),
                    }
                }
                other => return Err(format!("statement `{other}` is not modelled: {body}")),
            }
        }
        Ok(Step::Next)
    }

    fn matches(&self, chain: &Chain, m: &Value, syn: &Syn) -> std::result::Result<bool, String> {
        let op = m["op"].as_str().unwrap_or("==");
        let (left, mask) = match m["left"].get("&").and_then(Value::as_array) {
            Some(parts) if parts.len() == 2 => (&parts[0], Some(&parts[1])),
            _ => (&m["left"], None),
        };
        let field = field_of(left)?;
        let mut value = syn_value(&field, syn)?;
        if let Some(mask) = mask {
            value = Scalar::Num(value.num()? & flags_value(mask)?);
        }
        let right = &m["right"];
        let hit = match op {
            "==" | "in" | "!=" => {
                let member = self.contains(chain, right, &field, &value)?;
                if op == "!=" {
                    !member
                } else {
                    member
                }
            }
            "<" | ">" | "<=" | ">=" => {
                let (a, b) = (value.num()?, scalar(&field, right)?.num()?);
                match op {
                    "<" => a < b,
                    ">" => a > b,
                    "<=" => a <= b,
                    _ => a >= b,
                }
            }
            other => return Err(format!("operator `{other}` is not modelled")),
        };
        Ok(hit)
    }

    /// Whether `value` is `right`: one value, an anonymous set, a named set, a range, a prefix.
    fn contains(
        &self,
        chain: &Chain,
        right: &Value,
        field: &str,
        value: &Scalar,
    ) -> std::result::Result<bool, String> {
        if let Some(name) = right.as_str().and_then(|s| s.strip_prefix('@')) {
            let elems = self
                .sets
                .get(&(chain.family.clone(), chain.table.clone(), name.to_string()))
                .ok_or_else(|| format!("set @{name} is not listed"))?;
            return any_elem(elems, field, value);
        }
        if let Some(elems) = right.get("set").and_then(Value::as_array) {
            return any_elem(elems, field, value);
        }
        elem_has(right, field, value)
    }
}

fn any_elem(elems: &[Value], field: &str, value: &Scalar) -> std::result::Result<bool, String> {
    for e in elems {
        // An element with a timeout or comment: `{"elem": {"val": …}}`.
        let e = e.get("elem").map_or(e, |inner| &inner["val"]);
        if elem_has(e, field, value)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn elem_has(e: &Value, field: &str, value: &Scalar) -> std::result::Result<bool, String> {
    if let Some(r) = e.get("range").and_then(Value::as_array) {
        if r.len() != 2 {
            return Err(format!("a range of {} ends: {e}", r.len()));
        }
        let (lo, hi) = (scalar(field, &r[0])?, scalar(field, &r[1])?);
        let v = value.num()?;
        return Ok(lo.num()? <= v && v <= hi.num()?);
    }
    if let Some(p) = e.get("prefix") {
        let addr = scalar(field, &p["addr"])?.num()?;
        let len = p["len"]
            .as_u64()
            .filter(|l| *l <= 32)
            .ok_or_else(|| format!("a prefix length that is not 0-32: {e}"))?;
        let mask = if len == 0 {
            0
        } else {
            u64::from(u32::MAX << (32 - len))
        };
        return Ok(value.num()? & mask == addr & mask);
    }
    Ok(scalar(field, e)? == *value)
}

/// A field's value: numbers (ports, lengths, flags, addresses as u32) or a word.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scalar {
    Num(u64),
    Word(String),
}

impl Scalar {
    fn num(&self) -> std::result::Result<u64, String> {
        match self {
            Scalar::Num(n) => Ok(*n),
            Scalar::Word(w) => Err(format!("`{w}` is not a number")),
        }
    }
}

/// `ip daddr`, `tcp dport`, `meta l4proto`, … from a match's left side.
fn field_of(left: &Value) -> std::result::Result<String, String> {
    if let Some(p) = left.get("payload") {
        let proto = p["protocol"].as_str().unwrap_or_default();
        let field = p["field"].as_str().unwrap_or_default();
        if proto.is_empty() || field.is_empty() {
            return Err(format!("a raw payload match is not modelled: {left}"));
        }
        return Ok(format!("{proto} {field}"));
    }
    if let Some(key) = left.get("meta").and_then(|m| m["key"].as_str()) {
        return Ok(format!("meta {key}"));
    }
    Err(format!("a match on {left} is not modelled"))
}

/// The SYN's value of `field`.
fn syn_value(field: &str, syn: &Syn) -> std::result::Result<Scalar, String> {
    Ok(match field {
        "ip saddr" => Scalar::Num(u32::from(syn.saddr).into()),
        "ip daddr" => Scalar::Num(u32::from(syn.daddr).into()),
        "ip length" => Scalar::Num(SYN_IP_LENGTH),
        "ip protocol" | "meta l4proto" => Scalar::Word("tcp".into()),
        "meta protocol" => Scalar::Word("ip".into()),
        "tcp sport" => Scalar::Num(syn.sport.into()),
        "tcp dport" => Scalar::Num(syn.dport.into()),
        "tcp flags" => Scalar::Num(TCP_SYN),
        other => return Err(format!("field `{other}` is not modelled")),
    })
}

const TCP_FLAGS: [(&str, u64); 8] = [
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
    ("ecn", 0x40),
    ("cwr", 0x80),
];
const TCP_SYN: u64 = 0x02;

/// TCP flags as nft writes them: a name, a list of names (or'ed), a number.
fn flags_value(v: &Value) -> std::result::Result<u64, String> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| format!("flags {v}")),
        Value::String(s) => TCP_FLAGS
            .iter()
            .find(|(n, _)| n == s)
            .map(|(_, b)| *b)
            .ok_or_else(|| format!("tcp flag `{s}` is not known")),
        Value::Array(a) => a.iter().try_fold(0, |acc, f| Ok(acc | flags_value(f)?)),
        _ => Err(format!("flags {v} are not modelled")),
    }
}

/// A right-hand value for `field`: an address, a number, flags, a word.
fn scalar(field: &str, v: &Value) -> std::result::Result<Scalar, String> {
    match field {
        "ip saddr" | "ip daddr" => {
            let s = v.as_str().ok_or_else(|| format!("an address {v}"))?;
            let ip: Ipv4Addr = s.parse().map_err(|_| format!("`{s}` is not an address"))?;
            Ok(Scalar::Num(u32::from(ip).into()))
        }
        "tcp flags" => Ok(Scalar::Num(flags_value(v)?)),
        _ => match v {
            Value::Number(n) => n
                .as_u64()
                .map(Scalar::Num)
                .ok_or_else(|| format!("a number {v}")),
            Value::String(s) => Ok(Scalar::Word(s.clone())),
            _ => Err(format!("a value {v} is not modelled for `{field}`")),
        },
    }
}

/// (table, chain) → devices, from `nft list ruleset`'s text: a `table netdev T {` line, then
/// `chain C {`, then `type filter hook H device "D" …` (or `devices = { a, b }`).
fn devices_from_text(text: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut out = BTreeMap::new();
    let (mut table, mut chain) = (None::<String>, None::<String>);
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["table", "netdev", t, "{"] => {
                table = Some(t.to_string());
                chain = None;
            }
            ["table", ..] => {
                table = None;
                chain = None;
            }
            ["chain", c, "{"] => chain = Some(c.to_string()),
            _ if line.starts_with("type ") => {
                let (Some(t), Some(c)) = (&table, &chain) else {
                    continue;
                };
                let devs = if let Some(rest) = line.split(" device ").nth(1) {
                    rest.split_whitespace()
                        .next()
                        .map(|d| vec![d.trim_matches('"').to_string()])
                        .unwrap_or_default()
                } else if let Some(rest) = line.split("devices = {").nth(1) {
                    rest.split('}')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|d| d.trim().trim_matches('"').to_string())
                        .filter(|d| !d.is_empty())
                        .collect()
                } else {
                    Vec::new()
                };
                if !devs.is_empty() {
                    out.insert((t.clone(), c.clone()), devs);
                }
            }
            _ => {}
        }
    }
    out
}

/// Reads `netns`'s ruleset (JSON, and the text listing when the JSON lacks a device).
fn read_netns(netns: &str, links: Vec<Link>) -> Result<Fabric> {
    let json = checked(
        in_netns(netns, &["nft", "-j", "list", "ruleset"]),
        None,
        NFT,
    )
    .with_context(|| format!("nft -j list ruleset in {netns}"))?;
    match Fabric::parse(&json, None, links.clone()) {
        Ok(f) => Ok(f),
        Err(_) => {
            let text = checked(in_netns(netns, &["nft", "list", "ruleset"]), None, NFT)
                .with_context(|| format!("nft list ruleset in {netns}"))?;
            Fabric::parse(&json, Some(&text), links)
        }
    }
}

/// Fails unless `v` is decided (a test wants the fabric understood, not a guess).
pub fn decided(v: Verdict) -> Result<Verdict> {
    if let Verdict::Unknown(why) = &v {
        bail!("the fabric's rules are not understood: {why}");
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
