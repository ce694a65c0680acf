//! Typed, tolerant reads of the NSX Policy API objects [`raw`](super::raw) keeps as JSON, only
//! the fields the product reads, and the DFW engine's input built from them ([`input`]; which
//! NSX VM and port each control-plane VM is: the `identify` module, above this one). Pure.
//!
//! Nothing here fails: a field that cannot be read keeps a bounded reason (our words, with
//! clipped names and no control characters), and `analyse::dfw` turns it into "cannot decide"
//! where it could change a check, never into a guess. So each field is read on its own, one
//! line each, not by a serde derive: a derive fails the whole object on one bad field, and a
//! rule whose `profiles` alone is unreadable can still be told not to apply.
//!
//! Shapes, as the generated models of the Policy API spec give them (phspies/nsxtsdk
//! `nsxtsdk/Policy/Models/`; vsphere-automation-sdk-go's `services/nsxt/model` is the same
//! spec, too large for the mirror):
//! - [`SecurityPolicy`]: `NSXTPolicyType.cs` (`category`, `sequence_number` 0..=999999, ties
//!   "not deterministic", `scope` "will take precedence over rule level scope"; `is_default`
//!   cited at its field);
//! - [`Rule`]: `NSXTBaseRuleType.cs` (`rule_id` "passed all the way down to the data path",
//!   `sequence_number`, `source_groups` / `destination_groups` "ANY", group paths or IP / CIDR /
//!   range, `sources_excluded` / `destinations_excluded`, `services`, `service_entries`,
//!   `scope`, `profiles`, `ip_protocol` IPV4/IPV6/IPV4_IPV6, `disabled`, `direction` IN/OUT/
//!   IN_OUT, `Enums/NSXTBaseRuleDirectionEnumType.cs`), `NSXTRuleType.cs` (`action`
//!   ALLOW/DROP/REJECT/JUMP_TO_APPLICATION, the jump "only supported for rules created in the
//!   Environment category");
//! - [`ServiceEntry`]: `NSXTL4PortSetServiceEntryType.cs` (`l4_protocol`, `destination_ports`,
//!   `source_ports`) and its siblings by `resource_type`; [`Service`]: `service_entries`;
//! - [`Group`]: `expression[].member_type` / `resource_type`; [`GroupMembers`]:
//!   `NSXTPolicyGroupIPMembersListResultType.cs` (`members/ip-addresses`: strings),
//!   `NSXTRealizedVirtualMachineType.cs` (`members/virtual-machines`: `id`, `compute_ids`),
//!   `NSXTPolicyGroupMemberDetailsType.cs` (`members/segment-ports`: `path`, `id`);

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use serde_json::Value;

use super::raw::{Gap, Layout, Listed, Members, NsxRead};

/// Names and ids are cut to this many characters, whatever their source: the firewall engine's
/// one bound (`analyse::firewall` re-exports it; it lives here, below that layer, as [`clip`]
/// does). It keeps every Kubernetes object name whole (a DNS subdomain is at most 253
/// characters, RFC 1123, `names.rs`) and NSX Manager's display names up to 256.
pub const MAX_NAME_CHARS: usize = 256;
/// A path longer than this is not a path we can match (it is kept as unreadable), and not one
/// the reader asks for (`client::policy_segments`).
pub(crate) const MAX_PATH_CHARS: usize = 1024;
/// A reason is cut to this many characters.
pub(crate) const MAX_WHY_CHARS: usize = 512;
/// At most this many entries of one list in one object (a rule's groups, services, scope,
/// profiles, service entries, ports): more makes the list unreadable.
pub(crate) const MAX_ENTRIES: usize = 256;
/// At most this many members of one kind of one group are read (the reader bounds them too).
pub(crate) const MAX_MEMBERS: usize = 20_000;
/// At most this many findings are kept.
pub(crate) const MAX_FINDINGS: usize = 32;
/// Nested services are followed this deep.
pub(crate) const MAX_NESTING: usize = 4;

/// Cuts `s` to `max` characters and replaces control characters: a name from NSX Manager is
/// someone else's input, and messages we build must not carry raw control characters.
pub fn clip(s: &str, max: usize) -> String {
    clip_replacing(s, max, '\u{FFFD}')
}

/// `s` cut to `max` characters (then `…`), each control character replaced by `with`.
pub(crate) fn clip_replacing(s: &str, max: usize, with: char) -> String {
    let mut out: String = s
        .chars()
        .take(max)
        .map(|c| if c.is_control() { with } else { c })
        .collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// A string field, clipped ([`clip`]); empty or absent: `None`.
pub(crate) fn name(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| clip(s, MAX_NAME_CHARS))
}

/// A path kept whole (it is a key) or nothing: a path over the bound or with control
/// characters cannot be one NSX serves.
pub(crate) fn path_str(s: &str) -> Result<String, String> {
    if s.chars().count() > MAX_PATH_CHARS {
        Err(format!("a path longer than {MAX_PATH_CHARS} characters"))
    } else if s.chars().any(char::is_control) {
        Err(format!("a path with control characters ({})", clip(s, 64)))
    } else {
        Ok(s.to_string())
    }
}

pub(crate) fn path_of(v: &Value) -> Result<String, String> {
    match field(v, "path")? {
        Some(Value::String(s)) if !s.is_empty() => path_str(s),
        None => Err("no path".to_string()),
        Some(_) => Err("path is not a string".to_string()),
    }
}

/// A field (`None`: absent or null), or why not: `v` is not an object, so nothing of it is
/// known (its defaults would make a rule of ANY to ANY).
fn field<'a>(v: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match v {
        Value::Object(o) => Ok(o.get(key).filter(|x| !x.is_null())),
        _ => Err("not an object".to_string()),
    }
}

/// An integer field; absent is `default` (the API's default), unreadable the reason.
fn int(v: &Value, key: &str, default: i64) -> Result<i64, String> {
    match field(v, key)? {
        None => Ok(default),
        Some(x) => x.as_i64().ok_or_else(|| format!("{key} is not an integer")),
    }
}

fn flag(v: &Value, key: &str, default: bool) -> Result<bool, String> {
    match field(v, key)? {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{key} is not true or false")),
    }
}

/// A field holding one of `words` (compared without case), or why not ("direction is not IN,
/// OUT or IN_OUT"); absent or null is `absent` (the API's default), when it has one.
fn one_of<T: Copy>(
    v: &Value,
    key: &str,
    absent: Option<T>,
    words: &[(&str, T)],
) -> Result<T, String> {
    let got = field(v, key)?;
    if let (None, Some(d)) = (got, absent) {
        return Ok(d);
    }
    let word = got.and_then(Value::as_str).map(str::to_ascii_uppercase);
    let found = words.iter().find(|(w, _)| word.as_deref() == Some(*w));
    found.map(|(_, t)| *t).ok_or_else(|| {
        let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
        let (last, rest) = names.split_last().expect("one word at least");
        format!("{key} is not {} or {last}", rest.join(", "))
    })
}

/// A list field of at most [`MAX_ENTRIES`] (absent or null: empty), or why not.
fn list<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], String> {
    match field(v, key)? {
        None => Ok(&[]),
        Some(Value::Array(a)) if a.len() > MAX_ENTRIES => {
            Err(format!("{key} has more than {MAX_ENTRIES} entries"))
        }
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("{key} is not a list")),
    }
}

fn strings<'a>(v: &'a Value, key: &str) -> Result<Vec<&'a str>, String> {
    let each = |(i, e): (usize, &'a Value)| {
        e.as_str()
            .ok_or_else(|| format!("{key}[{i}] is not a string"))
    };
    list(v, key)?.iter().enumerate().map(each).collect()
}

fn is_any(s: &str) -> bool {
    s.trim().eq_ignore_ascii_case("ANY")
}

/// A list of paths where `ANY` (or nothing) means every one: `Ok(None)` is ANY.
fn paths_or_any(v: &Value, key: &str) -> Result<Option<Vec<String>>, String> {
    let items = strings(v, key)?;
    if items.is_empty() || items.iter().any(|s| is_any(s)) {
        return Ok(None);
    }
    items
        .iter()
        .map(|s| path_str(s).map_err(|e| format!("{key}: {e}")))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// An address a rule or a group names: one IP, a CIDR, or a range `a-b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrSpec {
    Cidr { addr: IpAddr, prefix: u8 },
    Range { start: IpAddr, end: IpAddr },
}

impl AddrSpec {
    pub(crate) fn parse(s: &str) -> Option<AddrSpec> {
        let s = s.trim();
        if let Some((a, b)) = s.split_once('-') {
            let start: IpAddr = a.trim().parse().ok()?;
            let end: IpAddr = b.trim().parse().ok()?;
            if start.is_ipv4() != end.is_ipv4() {
                return None;
            }
            return Some(AddrSpec::Range { start, end });
        }
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.trim().parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(AddrSpec::Cidr { addr, prefix })
    }

    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        fn n(ip: IpAddr) -> (bool, u128) {
            match ip {
                IpAddr::V4(a) => (true, u128::from(u32::from(a))),
                IpAddr::V6(a) => (false, u128::from(a)),
            }
        }
        match *self {
            AddrSpec::Cidr { addr, prefix } => {
                let (v4, a) = n(addr);
                let (iv4, i) = n(ip);
                if v4 != iv4 {
                    return false;
                }
                let bits = if v4 { 32 } else { 128 };
                let shift = bits - u32::from(prefix);
                if shift >= 128 {
                    return true;
                }
                (a >> shift) == (i >> shift)
            }
            AddrSpec::Range { start, end } => {
                let (v4, s) = n(start);
                let (_, e) = n(end);
                let (iv4, i) = n(ip);
                v4 == iv4 && s <= i && i <= e
            }
        }
    }
}

/// One entry of a rule's `source_groups` / `destination_groups`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `ANY` (or an empty list).
    Any,
    /// A group's path (`/infra/domains/default/groups/<id>`, a VPC's or a project's).
    Group(String),
    /// An IP, a CIDR or a range written in the rule.
    Addr(AddrSpec),
    /// An entry that is none of these (our words).
    Unreadable(String),
}

fn endpoints(v: &Value, key: &str) -> Result<Vec<Endpoint>, String> {
    let items = strings(v, key)?;
    if items.is_empty() || items.iter().any(|s| is_any(s)) {
        return Ok(vec![Endpoint::Any]);
    }
    Ok(items
        .iter()
        .map(|s| {
            if s.starts_with('/') {
                match path_str(s) {
                    Ok(p) => Endpoint::Group(p),
                    Err(e) => Endpoint::Unreadable(format!("{key}: {e}")),
                }
            } else {
                AddrSpec::parse(s).map(Endpoint::Addr).unwrap_or_else(|| {
                    Endpoint::Unreadable(format!(
                        "{key}: {} is neither ANY, a group path nor an IP, CIDR or range",
                        clip(s, 64)
                    ))
                })
            }
        })
        .collect())
}

/// The DFW categories (`SecurityPolicy.category`), east-west.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Category {
    /// Layer 2 rules, evaluated before every layer 3 category.
    Ethernet,
    Emergency,
    Infrastructure,
    Environment,
    Application,
    /// No category: "the least precedence w.r.t the above four" (NSXTPolicyType.cs).
    Empty,
    /// A VPC's policy (`/orgs/<o>/projects/<p>/vpcs/<v>/security-policies/…`): the API gives
    /// it no category (terraform-provider-nsxt `nsxt/policy_common.go` drops `category` for
    /// VPC policies), and where the DFW places it among the categories is not confirmed
    /// upstream: its place is not known.
    Vpc,
    /// A category the DFW order does not name (kept, clipped): its place is not known.
    Other(String),
}

/// The categories the DFW order names, in that order: a category's rank is its place here.
const CATEGORIES: [(Category, &str); 6] = [
    (Category::Ethernet, "Ethernet"),
    (Category::Emergency, "Emergency"),
    (Category::Infrastructure, "Infrastructure"),
    (Category::Environment, "Environment"),
    (Category::Application, "Application"),
    (Category::Empty, "(none)"),
];

impl Category {
    pub(crate) fn parse(s: Option<&str>) -> Category {
        let c = s.map_or("", str::trim);
        let named = CATEGORIES[..5]
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(c));
        match named {
            _ if c.is_empty() => Category::Empty,
            Some((k, _)) => k.clone(),
            None => Category::Other(clip(c, 64)),
        }
    }

    /// Its place in the DFW's order (lower first); `None`: not known.
    pub(crate) fn rank(&self) -> Option<u8> {
        let place = CATEGORIES.iter().position(|(k, _)| k == self)?;
        u8::try_from(place).ok()
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Category::Vpc => "VPC (no category)",
            Category::Other(s) => s,
            k => CATEGORIES
                .iter()
                .find(|(c, _)| c == k)
                .map_or("", |(_, n)| *n),
        }
    }
}

/// A DFW rule's `action`, as NSX spells it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
#[schemars(rename = "DfwAction")]
pub enum RuleAction {
    Allow,
    Drop,
    Reject,
    /// Environment only: skips the rest of Environment to the Application category.
    JumpToApplication,
}

/// Relative to the vNIC the rule is applied at: IN is traffic into it, OUT out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleDirection {
    In,
    Out,
    InOut,
}

/// `ip_protocol`: which IP family the rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IpFamily {
    V4,
    V6,
    Both,
}

/// A port or a range from `destination_ports` / `source_ports` ("2379", "2379-2380").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortRange {
    pub start: u16,
    pub end: u16,
}

impl PortRange {
    pub(crate) fn parse(v: &Value) -> Option<PortRange> {
        let one = |s: &str| s.trim().parse::<u16>().ok();
        match v {
            Value::Number(n) => {
                let p = u16::try_from(n.as_u64()?).ok()?;
                Some(PortRange { start: p, end: p })
            }
            Value::String(s) => match s.split_once('-') {
                Some((a, b)) => {
                    let (start, end) = (one(a)?, one(b)?);
                    (start <= end).then_some(PortRange { start, end })
                }
                None => one(s).map(|p| PortRange { start: p, end: p }),
            },
            _ => None,
        }
    }

    pub(crate) fn contains(&self, port: u16) -> bool {
        self.start <= port && port <= self.end
    }
}

/// One service entry (a rule's own `service_entries`, or a Service's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServiceEntry {
    /// `L4PortSetServiceEntry`: empty port lists are every port.
    L4PortSet {
        protocol: String,
        destination_ports: Vec<PortRange>,
        source_ports: Vec<PortRange>,
    },
    /// `IPProtocolServiceEntry`: every packet of that IP protocol (6 is TCP).
    IpProtocol {
        number: u64,
    },
    /// `EtherTypeServiceEntry` (layer 2): 0x0800 is IPv4, 0x86DD IPv6.
    EtherType {
        ether_type: u64,
    },
    /// `ICMPTypeServiceEntry`, `IGMPTypeServiceEntry`: never TCP.
    NotTcp {
        kind: String,
    },
    /// `NestedServiceServiceEntry`: another service's entries.
    Nested {
        path: String,
    },
    /// Any other kind (`ALGTypeServiceEntry`, L7…): what it matches is not evaluated.
    Other {
        kind: String,
    },
    Unreadable(String),
}

fn service_entry(v: &Value) -> ServiceEntry {
    let kind = v.get("resource_type").and_then(Value::as_str).unwrap_or("");
    let ports = |key: &str| -> Result<Vec<PortRange>, String> {
        let each = |p: &Value| {
            PortRange::parse(p).ok_or_else(|| {
                let p = clip(&p.to_string(), 32);
                format!("{key} holds {p} (not a port or range)")
            })
        };
        list(v, key)?.iter().map(each).collect()
    };
    // Compared without case: the generated C# SDK spells the enum in upper case
    // (phspies/nsxtsdk `Enums/NSXTServiceEntryResourceTypeEnumType.cs`), the API answers
    // `L4PortSetServiceEntry` (terraform-provider-nsxt's service entries).
    match kind.to_ascii_lowercase().as_str() {
        "l4portsetserviceentry" => {
            let protocol = match v.get("l4_protocol").and_then(Value::as_str) {
                Some(p) => clip(p, 16).to_ascii_uppercase(),
                None => {
                    return ServiceEntry::Unreadable(
                        "an L4PortSetServiceEntry without l4_protocol".into(),
                    )
                }
            };
            match (ports("destination_ports"), ports("source_ports")) {
                (Ok(d), Ok(s)) => ServiceEntry::L4PortSet {
                    protocol,
                    destination_ports: d,
                    source_ports: s,
                },
                (Err(e), _) | (_, Err(e)) => ServiceEntry::Unreadable(e),
            }
        }
        "ipprotocolserviceentry" => match v.get("protocol_number").and_then(Value::as_u64) {
            Some(number) => ServiceEntry::IpProtocol { number },
            None => ServiceEntry::Unreadable("protocol_number is not a number".into()),
        },
        "ethertypeserviceentry" => match v.get("ether_type").and_then(Value::as_u64) {
            Some(ether_type) => ServiceEntry::EtherType { ether_type },
            None => ServiceEntry::Unreadable("ether_type is not a number".into()),
        },
        "icmptypeserviceentry" | "igmptypeserviceentry" => ServiceEntry::NotTcp {
            kind: clip(kind, 64),
        },
        "nestedserviceserviceentry" => {
            match v
                .get("nested_service_path")
                .and_then(Value::as_str)
                .map(path_str)
            {
                Some(Ok(path)) => ServiceEntry::Nested { path },
                Some(Err(e)) => ServiceEntry::Unreadable(format!("nested_service_path: {e}")),
                None => ServiceEntry::Unreadable("nested_service_path is missing".into()),
            }
        }
        "" => ServiceEntry::Unreadable("a service entry without resource_type".into()),
        k => ServiceEntry::Other { kind: clip(k, 64) },
    }
}

fn service_entries(v: &Value, key: &str) -> Result<Vec<ServiceEntry>, String> {
    Ok(list(v, key)?.iter().map(service_entry).collect())
}

/// One DFW security policy (`SecurityPolicy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecurityPolicy {
    pub path: Result<String, String>,
    pub id: Option<String>,
    pub display_name: Option<String>,
    pub category: Category,
    /// 0 when absent (the API's default).
    pub sequence_number: Result<i64, String>,
    /// `None`: ANY (no policy-level scope: each rule's own counts).
    pub scope: Result<Option<Vec<String>>, String>,
    /// `is_default`: a tree's default policy (`default-layer3-section`, the project's and the
    /// VPC's default east-west policy), which NSX keeps after every other policy
    /// (terraform-provider-nsxt `nsxt/data_source_nsxt_policy_security_policy.go` `is_default`).
    pub is_default: bool,
    /// Unreadable as a whole (not an object).
    pub unreadable: Option<String>,
}

impl SecurityPolicy {
    pub(crate) fn read(v: &Value) -> SecurityPolicy {
        let path = path_of(v);
        let vpc = path
            .as_deref()
            .is_ok_and(|p| p.starts_with("/orgs/") && p.contains("/vpcs/"));
        SecurityPolicy {
            path,
            id: name(v, "id"),
            display_name: name(v, "display_name"),
            category: match v.get("category") {
                None | Some(Value::Null) if vpc => Category::Vpc,
                None | Some(Value::Null) => Category::Empty,
                Some(Value::String(s)) => Category::parse(Some(s)),
                Some(_) => Category::Other("(not a string)".into()),
            },
            sequence_number: int(v, "sequence_number", 0),
            scope: paths_or_any(v, "scope"),
            is_default: v.get("is_default").and_then(Value::as_bool) == Some(true),
            unreadable: (!v.is_object()).then(|| "the policy is not an object".to_string()),
        }
    }

    /// How a line names it: its display name, else its id, else its path.
    pub(crate) fn label(&self) -> String {
        self.display_name
            .clone()
            .or_else(|| self.id.clone())
            .or_else(|| self.path.clone().ok().map(|p| clip(&p, MAX_NAME_CHARS)))
            .unwrap_or_else(|| "(unnamed policy)".into())
    }
}

/// One DFW rule (`Rule`), each part readable or not on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub path: Result<String, String>,
    pub id: Option<String>,
    /// The number the datapath and traceflow's `acl_rule_id` use.
    pub rule_id: Option<u64>,
    pub display_name: Option<String>,
    pub sequence_number: Result<i64, String>,
    pub action: Result<RuleAction, String>,
    /// IN_OUT when absent (the API's default).
    pub direction: Result<RuleDirection, String>,
    pub disabled: Result<bool, String>,
    pub sources: Result<Vec<Endpoint>, String>,
    pub destinations: Result<Vec<Endpoint>, String>,
    pub sources_excluded: Result<bool, String>,
    pub destinations_excluded: Result<bool, String>,
    /// `None`: ANY.
    pub services: Result<Option<Vec<String>>, String>,
    pub service_entries: Result<Vec<ServiceEntry>, String>,
    /// `None`: ANY.
    pub scope: Result<Option<Vec<String>>, String>,
    /// Context profiles (`None`: ANY, none).
    pub profiles: Result<Option<Vec<String>>, String>,
    /// IPV4_IPV6 when absent (the API's default for layer 3).
    pub ip_protocol: Result<IpFamily, String>,
}

impl Rule {
    pub(crate) fn read(v: &Value) -> Rule {
        // Not an object: every part says so ([`field`]).
        use RuleAction::*;
        Rule {
            path: path_of(v),
            id: name(v, "id"),
            rule_id: v.get("rule_id").and_then(Value::as_u64),
            display_name: name(v, "display_name"),
            sequence_number: int(v, "sequence_number", 0),
            action: one_of(
                v,
                "action",
                None,
                &[
                    ("ALLOW", Allow),
                    ("DROP", Drop),
                    ("REJECT", Reject),
                    ("JUMP_TO_APPLICATION", JumpToApplication),
                ],
            ),
            direction: one_of(
                v,
                "direction",
                Some(RuleDirection::InOut),
                &[
                    ("IN", RuleDirection::In),
                    ("OUT", RuleDirection::Out),
                    ("IN_OUT", RuleDirection::InOut),
                ],
            ),
            disabled: flag(v, "disabled", false),
            sources: endpoints(v, "source_groups"),
            destinations: endpoints(v, "destination_groups"),
            sources_excluded: flag(v, "sources_excluded", false),
            destinations_excluded: flag(v, "destinations_excluded", false),
            services: paths_or_any(v, "services"),
            service_entries: service_entries(v, "service_entries"),
            scope: paths_or_any(v, "scope"),
            profiles: paths_or_any(v, "profiles"),
            ip_protocol: one_of(
                v,
                "ip_protocol",
                Some(IpFamily::Both),
                &[
                    ("IPV4", IpFamily::V4),
                    ("IPV6", IpFamily::V6),
                    ("IPV4_IPV6", IpFamily::Both),
                ],
            ),
        }
    }

    /// Every reason a part of the rule could not be read, once each.
    pub(crate) fn unreadable(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let errs = [
            self.sequence_number.as_ref().err(),
            self.action.as_ref().err(),
            self.direction.as_ref().err(),
            self.disabled.as_ref().err(),
            self.sources.as_ref().err(),
            self.destinations.as_ref().err(),
            self.sources_excluded.as_ref().err(),
            self.destinations_excluded.as_ref().err(),
            self.services.as_ref().err(),
            self.service_entries.as_ref().err(),
            self.scope.as_ref().err(),
            self.profiles.as_ref().err(),
            self.ip_protocol.as_ref().err(),
        ];
        for e in errs.into_iter().flatten() {
            if !out.contains(e) {
                out.push(e.clone());
            }
        }
        out
    }
}

/// A Service: its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Service {
    pub path: Result<String, String>,
    pub display_name: Option<String>,
    pub entries: Result<Vec<ServiceEntry>, String>,
}

impl Service {
    pub(crate) fn read(v: &Value) -> Service {
        Service {
            path: path_of(v),
            display_name: name(v, "display_name"),
            entries: service_entries(v, "service_entries"),
        }
    }
}

/// A Group's definition: who it is (its members are read apart, as NSX realized them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub path: Result<String, String>,
    pub display_name: Option<String>,
    /// Per expression, what it selects: a `Condition`'s or `ExternalIDExpression`'s
    /// `member_type` (`VirtualMachine`, `SegmentPort`, `VpcSubnetPort`…), else its
    /// `resource_type` (terraform-provider-nsxt `nsxt/resource_nsxt_policy_group.go`).
    pub member_types: Vec<String>,
}

impl Group {
    pub(crate) fn read(v: &Value) -> Group {
        let member_types = v
            .get("expression")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .take(MAX_ENTRIES)
                    .map(|e| {
                        name(e, "member_type")
                            .or_else(|| name(e, "resource_type"))
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        Group {
            path: path_of(v),
            display_name: name(v, "display_name"),
            member_types,
        }
    }
}

/// One member list of a group: read whole, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberList<T> {
    Whole(Vec<T>),
    /// Not read, or not whole (a page or an entry missing): nothing can be told from absence.
    NotWhole {
        read: Vec<T>,
        why: String,
    },
}

impl<T> MemberList<T> {
    pub(crate) fn read(&self) -> &[T] {
        match self {
            MemberList::Whole(v) | MemberList::NotWhole { read: v, .. } => v,
        }
    }

    pub(crate) fn why_not_whole(&self) -> Option<&str> {
        match self {
            MemberList::Whole(_) => None,
            MemberList::NotWhole { why, .. } => Some(why),
        }
    }
}

/// A realized VM member (`members/virtual-machines`, `RealizedVirtualMachine`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmMember {
    /// `id`: the VM's external id.
    pub id: Option<String>,
    pub bios_uuid: Option<String>,
    pub instance_uuid: Option<String>,
}

/// A segment-port member (`members/segment-ports`, `PolicyGroupMemberDetails`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortMember {
    pub path: Option<String>,
    pub id: Option<String>,
}

/// A group's effective members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupMembers {
    pub ips: MemberList<AddrSpec>,
    pub vms: MemberList<VmMember>,
    pub ports: MemberList<PortMember>,
}

pub(crate) fn compute_id(v: &Value, prefix: &str) -> Option<String> {
    v.get("compute_ids")
        .and_then(Value::as_array)?
        .iter()
        .take(MAX_ENTRIES)
        .filter_map(Value::as_str)
        .find_map(|s| s.strip_prefix(prefix))
        .filter(|s| !s.is_empty())
        .map(|s| clip(s, MAX_NAME_CHARS))
}

fn member_list<T>(
    listed: Option<&Listed>,
    kind: &str,
    gaps: &[Gap],
    one: impl Fn(&Value) -> Option<T>,
) -> MemberList<T> {
    let Some(l) = listed else {
        let why = gaps
            .iter()
            .find(|g| g.path.ends_with(kind))
            .map(|g| format!("{kind} not read: {}", clip(&g.why, MAX_WHY_CHARS)))
            .unwrap_or_else(|| format!("{kind} not read"));
        return MemberList::NotWhole {
            read: Vec::new(),
            why,
        };
    };
    let mut read = Vec::new();
    let mut bad = 0usize;
    for v in l.results.iter().take(MAX_MEMBERS) {
        match one(v) {
            Some(t) => read.push(t),
            None => bad += 1,
        }
    }
    let why = if let Some(g) = &l.incomplete {
        Some(format!(
            "{kind} not read whole: {}",
            clip(&g.why, MAX_WHY_CHARS)
        ))
    } else if l.results.len() > MAX_MEMBERS {
        Some(format!("{kind}: more than {MAX_MEMBERS} members"))
    } else if bad > 0 {
        Some(format!("{kind}: {bad} members could not be read"))
    } else {
        None
    };
    match why {
        None => MemberList::Whole(read),
        Some(why) => MemberList::NotWhole { read, why },
    }
}

impl GroupMembers {
    pub(crate) fn read(m: &Members) -> GroupMembers {
        GroupMembers {
            ips: member_list(m.ip_addresses.as_ref(), "ip-addresses", &m.gaps, |v| {
                v.as_str().and_then(AddrSpec::parse)
            }),
            vms: member_list(
                m.virtual_machines.as_ref(),
                "virtual-machines",
                &m.gaps,
                |v| {
                    v.is_object().then(|| VmMember {
                        id: name(v, "id"),
                        // A member is a `RealizedVirtualMachine`, whose `compute_ids` are
                        // "in the format 'id-type-key:value'", e.g. "['uuid:xxxx-xxxx-xxxx-xxxx',
                        // 'moIdOnHost:moref-11', 'instanceUuid:xxxx-xxxx-xxxx-xxxx']"
                        // (phspies/nsxtsdk `nsxtsdk/Policy/Models/NSXTRealizedVirtualMachineType.cs`,
                        // generated from the API spec): `uuid:` is vSphere's `config.uuid`, the
                        // BIOS uuid. The fabric `VirtualMachine` says it `biosUuid:`
                        // (terraform-provider-nsxt `nsxt/resource_nsxt_policy_vm_tags.go`,
                        // `nsxtPolicyBiosUUIDKey`), which a member is read with too.
                        bios_uuid: compute_id(v, "uuid:").or_else(|| compute_id(v, "biosUuid:")),
                        instance_uuid: compute_id(v, "instanceUuid:"),
                    })
                },
            ),
            ports: member_list(m.segment_ports.as_ref(), "segment-ports", &m.gaps, |v| {
                v.is_object().then(|| PortMember {
                    path: path_of(v).ok(),
                    id: name(v, "id"),
                })
            }),
        }
    }

    /// No member kind was read at all.
    pub(crate) fn not_read() -> GroupMembers {
        fn no<T>(k: &str) -> MemberList<T> {
            MemberList::NotWhole {
                read: Vec::new(),
                why: format!("{k} not read"),
            }
        }
        GroupMembers {
            ips: no("ip-addresses"),
            vms: no("virtual-machines"),
            ports: no("segment-ports"),
        }
    }
}

// ---- the engine's input ----

/// One policy and its rules, in the order listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyRules {
    pub policy: SecurityPolicy,
    pub rules: Vec<Rule>,
    /// Why its rules are not all read (`None`: every page).
    pub rules_incomplete: Option<String>,
}

/// Everything the DFW engine reads, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfwInput {
    pub(crate) layout: Layout,
    pub(crate) policies: Vec<PolicyRules>,
    /// Why the policy list is not whole (`None`: every page): any policy not read might come
    /// first.
    pub(crate) policies_incomplete: Option<String>,
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) members: BTreeMap<String, GroupMembers>,
    pub(crate) services: BTreeMap<String, Service>,
    pub(crate) vms: Vec<DfwVm>,
    /// What does not fit (a port whose VIF is another VM's, a VM name with another uuid…):
    /// said, never used. At most [`MAX_FINDINGS`].
    pub(crate) findings: Vec<String>,
    /// Everything that could not be read, anywhere, in our words (bounded).
    pub(crate) gaps: Vec<String>,
    /// What the evaluation's notes carry of the reading itself (the VPC's security profile).
    pub(crate) notes: Vec<String>,
}

pub(crate) fn gap_text(g: &Gap) -> String {
    let mut s = format!("{}: {}", clip(&g.path, 256), clip(&g.why, MAX_WHY_CHARS));
    if let Some(st) = g.status {
        s.push_str(&format!(" (HTTP {st})"));
    }
    if let Some(p) = &g.privilege {
        s.push_str(&format!("; needs {}", clip(p, 128)));
    }
    s
}

/// Builds the DFW engine's input from what one run read and the Supervisor's VMs as
/// identified in it (by `identify::input`, above), with what did not add up (`findings`).
pub(crate) fn input(read: &NsxRead, vms: Vec<DfwVm>, findings: Vec<String>) -> DfwInput {
    let mut gaps: Vec<String> = read.gaps.iter().take(MAX_FINDINGS).map(gap_text).collect();
    let mut policies: Vec<PolicyRules> = Vec::new();
    for pr in &read.rules {
        let policy = SecurityPolicy::read(&pr.policy);
        let rules = pr.rules.results.iter().map(Rule::read).collect();
        let rules_incomplete = pr.rules.incomplete.as_ref().map(gap_text);
        if let Some(g) = &rules_incomplete {
            gaps.push(format!("rules of {}: {g}", policy.label()));
        }
        policies.push(PolicyRules {
            policy,
            rules,
            rules_incomplete,
        });
    }
    // Policies listed without their rules read: their rules are not known.
    // A policy that cannot be read at all is kept too: it could come anywhere.
    // Looked up by path in a set: a huge manager lists thousands of policies, and a scan of
    // the read ones for each listed one took 1.6 s (debug build) at 2,500 cut policies.
    let mut read_paths: HashSet<String> = policies
        .iter()
        .filter_map(|q| q.policy.path.clone().ok())
        .collect();
    // The policies read with their rules that have no path, by their JSON text (keys sorted:
    // equal texts are equal objects): looked up in a set, never compared pairwise (20,000
    // pathless policies against as many read ones were 4·10⁸ comparisons of whole objects).
    let read_pathless: HashSet<String> = read
        .rules
        .iter()
        .filter(|pr| path_of(&pr.policy).is_err())
        .map(|pr| pr.policy.to_string())
        .collect();
    for v in &read.policies.results {
        let mut p = SecurityPolicy::read(v);
        match &p.path {
            Ok(path) if !read_paths.insert(path.clone()) => continue,
            Ok(_) => {}
            // No path to look up by: the very object read with its rules is that policy.
            Err(_) if read_pathless.contains(&v.to_string()) => continue,
            Err(_) => {}
        }
        if let Err(e) = &p.path {
            p.unreadable
                .get_or_insert_with(|| format!("a listed policy: {e}"));
        }
        policies.push(PolicyRules {
            rules_incomplete: Some("its rules were not read".into()),
            policy: p,
            rules: Vec::new(),
        });
    }
    // The list's own gap; else a gap the reader kept apart that names the policies; else, with
    // no policy at all (NSX always has its default Layer 3 policy) and something not read, that.
    let policies_incomplete = read
        .policies
        .incomplete
        .as_ref()
        .or_else(|| {
            // The list's (`…/security-policies`), never one policy's rules (`…/<id>/rules`:
            // that policy's `rules_incomplete`).
            read.gaps
                .iter()
                .find(|g| g.path.trim_end_matches('/').ends_with("/security-policies"))
        })
        .or_else(|| {
            read.gaps
                .first()
                .filter(|_| read.policies.results.is_empty() && read.rules.is_empty())
        })
        .map(gap_text);
    if let Some(g) = &policies_incomplete {
        gaps.push(format!("security policies: {g}"));
    }
    let groups = read
        .groups
        .iter()
        .map(|(k, v)| (k.clone(), Group::read(v)))
        .collect();
    let members = read
        .members
        .iter()
        .map(|(k, m)| (k.clone(), GroupMembers::read(m)))
        .collect();
    let services = read
        .services
        .iter()
        .map(|(k, v)| (k.clone(), Service::read(v)))
        .collect();
    gaps.truncate(MAX_FINDINGS);
    DfwInput {
        notes: read
            .vpc_security
            .as_ref()
            .and_then(vpc_security_note)
            .into_iter()
            .collect(),
        layout: read.layout.clone(),
        policies,
        policies_incomplete,
        groups,
        members,
        services,
        vms,
        findings,
        gaps,
    }
}

/// One line for the VPC's security profile and east-west strategy, as read (`None`: an NSX
/// without them). Its fields: the API reference's `VpcSecurityProfile` (`display_name`, `path`,
/// `east_west_firewall.security_strategies`) and `SecurityStrategy` (`display_name`,
/// `description`, `rule_templates`), NSX 9.1.
pub(crate) fn vpc_security_note(v: &super::raw::VpcSecurity) -> Option<String> {
    let label = |o: &Value| {
        let n = name(o, "display_name").or_else(|| name(o, "id"));
        let p = path_of(o).ok().map(|p| clip(&p, 256));
        match (n, p) {
            (Some(n), Some(p)) => format!("\"{n}\" ({p})"),
            (Some(n), None) => format!("\"{n}\""),
            (None, Some(p)) => p,
            (None, None) => "(unnamed)".into(),
        }
    };
    let Some(profile) = &v.profile else {
        return v
            .gaps
            .first()
            .map(|g| format!("the VPC's security profile was not read: {}", gap_text(g)));
    };
    let mut s = format!("the VPC's security profile is {}", label(profile));
    match &v.strategy {
        Some(st) => {
            s.push_str(&format!(", its east-west security strategy {}", label(st)));
            if let Some(d) = name(st, "description") {
                s.push_str(&format!(": {d}"));
            }
            s.push_str(
                " (its rules are evaluated as NSX instantiates them among the VPC's policies)",
            );
        }
        None => match v.gaps.first() {
            Some(g) => s.push_str(&format!(
                "; its east-west security strategy was not read: {}",
                gap_text(g)
            )),
            None => s.push_str(", with no east-west security strategy"),
        },
    }
    Some(clip(&s, 2 * MAX_WHY_CHARS))
}

// ---- the control-plane VMs, as the engine sees them (the `identify` module finds them) ----

/// A fabric VirtualMachine as NSX Manager knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NsxVm {
    pub external_id: Option<String>,
    pub display_name: Option<String>,
    pub bios_uuid: Option<String>,
    pub instance_uuid: Option<String>,
}

/// A SegmentPort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NsxPort {
    pub path: Option<String>,
    pub id: Option<String>,
    pub display_name: Option<String>,
    /// `attachment.id`: what a VIF's `lport_attachment_id` names.
    pub attachment_id: Option<String>,
    pub ips: Vec<IpAddr>,
}

/// A control-plane VM as the Supervisor says it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SupervisorVm {
    /// The Kubernetes node name (the key of `raw::VmLookup::node`).
    pub(crate) node: String,
    /// The VirtualMachine's name (its vSphere display name).
    pub(crate) vm_name: String,
    pub(crate) bios_uuid: Option<String>,
    pub(crate) instance_uuid: Option<String>,
    /// The addresses etcd's packets carry (its peer and client URLs' host on that node).
    /// Every address given is matched: a VM with addresses inside and outside a group makes
    /// the check "cannot decide", so give the etcd address alone when it is known (a
    /// dual-stack node's other family would only blur the answer).
    pub(crate) ips: Vec<IpAddr>,
}

/// Whether the VM found in NSX is this Machine's VM, checked both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    /// One fabric VM whose uuids (or, with no uuid on either side, its name) are the
    /// Machine's. Its segment port ([`DfwVm::port`]) is kept only when one of its own VIFs
    /// ties the port to it.
    Confirmed,
    /// No VM in NSX is this Machine's (why).
    NotFound(String),
    /// Several candidates: none is used.
    Ambiguous(String),
}

/// A control-plane VM as the DFW engine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DfwVm {
    pub node: String,
    pub vm_name: String,
    pub ips: Vec<IpAddr>,
    pub identity: Identity,
    /// The confirmed fabric VM (never an unconfirmed one).
    pub nsx_vm: Option<NsxVm>,
    /// Its segment port, tied to it by a VIF (never a port by address alone).
    pub port: Option<NsxPort>,
    /// The groups NSX says the confirmed VM or its port is a member of ([`Memberships`]).
    pub memberships: Memberships,
}

/// Group membership as NSX computes it for a VM and its port, from the association endpoints
/// (`…/virtual-machine-group-associations?vm_external_id=`, `…/group-associations?intent_path=`),
/// for any group type: member lists answer only for groups of their own member type (the API
/// reference of `members/virtual-machines`: "for Groups containing other member types, an
/// empty list is returned").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Memberships {
    /// Group paths (`target_id`) the VM or its port is a member of, as read.
    pub groups: std::collections::BTreeSet<String>,
    /// The trees (`/infra`, a project's infra, a VPC) whose answers were read whole for the
    /// VM and for its port: a group of such a tree that is not in `groups` holds neither.
    pub whole: Vec<String>,
    /// Why a tree's answers are not whole (our words), or were not asked.
    pub why_not: Vec<String>,
}

impl Memberships {
    /// Whether the group at `path` holds the VM (or its port): `Some(true)`, `Some(false)`, or
    /// `None` when its tree's answers were not read whole (why in [`Memberships::why_not`]).
    pub(crate) fn holds(&self, path: &str) -> Option<bool> {
        if self.groups.contains(path) {
            return Some(true);
        }
        let root = association_root_of(path)?;
        self.whole.contains(&root).then_some(false)
    }
}

/// The tree of an association root a group path is in (`read::association_roots`' form; here,
/// below the reading, since the model judges by it), if any.
fn association_root_of(group_path: &str) -> Option<String> {
    let parts: Vec<&str> = group_path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["infra", ..] => Some("/infra".into()),
        ["orgs", o, "projects", p, "infra", ..] => Some(format!("/orgs/{o}/projects/{p}/infra")),
        ["orgs", o, "projects", p, "vpcs", v, ..] => {
            Some(format!("/orgs/{o}/projects/{p}/vpcs/{v}"))
        }
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests;
