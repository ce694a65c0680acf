//! The fake's own first-match evaluation of the world's DFW: the default Traceflow oracle.
//! Written from the public semantics (Broadcom's NSX docs on the distributed firewall; the
//! fields as terraform-provider-nsxt `nsxt/resource_nsxt_policy_security_policy.go` and
//! `nsxt/policy_common.go` write them), independent of the plugin's engine on purpose: the
//! tests compare the two.
//!
//! - An Ethernet (L2) pass first: a DROP/REJECT there drops, an ALLOW moves on to L3.
//! - Then L3, categories in order Emergency, Infrastructure, Environment, Application; in a
//!   category policies by `sequence_number`, in a policy rules by `sequence_number`; the first
//!   rule that matches decides; `JUMP_TO_APPLICATION` skips to the Application category.
//! - Each vNIC enforces its own rules: the packet is judged at the source VM's vNIC going out
//!   (direction OUT or IN_OUT) and then at the destination's going in (IN or IN_OUT).
//! - A rule is enforced at a vNIC when its policy's `scope` covers it (the policy's scope wins
//!   over the rule's when it is not ANY), else the rule's own `scope`.
//! - `disabled` rules do not count; `sources_excluded`/`destinations_excluded` negate;
//!   `services` (paths, or ANY) and the rule's own `service_entries` must match the packet;
//!   a rule with `profiles` other than ANY is not matched (a SYN carries no L7 context).
//! - Nothing matches: allowed (the world writes NSX's default rule when it wants one).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::members::{self, IpSpec};
use crate::world::World;

/// The L4 protocol of a traced packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
}

/// What a traceflow asks: from a port (of a VM) to an IP and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceflowQuery {
    /// The source port's policy path, as the TraceflowConfig named it.
    pub source_port_path: String,
    /// The source VM's external id, when the port is a known VM's.
    pub source_vm: Option<String>,
    /// The source VM's display name, when known.
    pub source_vm_name: Option<String>,
    pub src_ip: IpAddr,
    pub dst_ip: IpAddr,
    pub protocol: Protocol,
    pub src_port: u16,
    pub dst_port: u16,
    /// The destination VM (found by its IP in the world), when known.
    pub dest_vm: Option<String>,
    pub dest_port_path: Option<String>,
}

/// A rule as Traceflow names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRef {
    /// `rule_id` (Traceflow's `acl_rule_id`).
    pub rule_id: u64,
    /// The rule's policy path (`acl_rule_path`).
    pub path: String,
}

/// Where the packet was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// At the source vNIC, going out.
    Source,
    /// At the destination vNIC, coming in.
    Destination,
}

/// A traceflow's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraceflowOutcome {
    /// Delivered to the destination port; the rules that allowed it on the way (none: no rule
    /// matched), source side first.
    Delivered { allowed_by: Vec<RuleRef> },
    /// Dropped (DROP or REJECT) by a DFW rule.
    Dropped { rule: RuleRef, side: Side },
    /// Forwarded out of NSX's view (no destination port known: no Delivered observation).
    Forwarded { allowed_by: Vec<RuleRef> },
}

const L3_CATEGORIES: [&str; 4] = ["Emergency", "Infrastructure", "Environment", "Application"];

fn strs(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn is_any(list: &[String]) -> bool {
    list.is_empty() || list.iter().any(|s| s == "ANY")
}

/// One end of the packet.
struct End<'a> {
    vm: Option<&'a str>,
    port: Option<&'a str>,
    ip: IpAddr,
}

fn entry_has(world: &World, entry: &str, end: &End) -> bool {
    if entry == "ANY" {
        return true;
    }
    if entry.starts_with('/') {
        return members::of_group(world, entry).has(world, end.vm, end.port, end.ip);
    }
    IpSpec::parse(entry).is_some_and(|s| s.contains(end.ip))
}

fn side_matches(world: &World, list: &[String], excluded: bool, end: &End) -> bool {
    let hit = is_any(list) || list.iter().any(|e| entry_has(world, e, end));
    // "ANY" excluded would match nothing; NSX refuses it, the fake answers no match.
    hit != excluded
}

fn scope_covers(world: &World, scope: &[String], end: &End) -> bool {
    if is_any(scope) {
        return true;
    }
    scope.iter().any(|s| {
        members::of_group(world, s).applies_at(world, end.vm, end.port)
            || end.port.is_some_and(|p| {
                world
                    .port(p)
                    .and_then(|p| p.get("parent_path").and_then(Value::as_str))
                    == Some(s.as_str())
            })
    })
}

fn ports_match(list: &[String], port: u16) -> bool {
    list.is_empty()
        || list.iter().any(|p| match p.split_once('-') {
            Some((a, b)) => {
                matches!((a.trim().parse::<u16>(), b.trim().parse::<u16>()), (Ok(a), Ok(b)) if a <= port && port <= b)
            }
            None => p.trim().parse::<u16>() == Ok(port),
        })
}

fn entry_matches(world: &World, e: &Value, q: &TraceflowQuery, depth: usize) -> bool {
    let proto = match q.protocol {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
        Protocol::Icmp => "ICMP",
    };
    match e.get("resource_type").and_then(Value::as_str).unwrap_or("") {
        "L4PortSetServiceEntry" | "ALGTypeServiceEntry" => {
            let l4 = e
                .get("l4_protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP");
            l4 == proto
                && ports_match(&strs(e, "destination_ports"), q.dst_port)
                && ports_match(&strs(e, "source_ports"), q.src_port)
        }
        "IPProtocolServiceEntry" => {
            let n = e.get("protocol_number").and_then(Value::as_u64);
            n == Some(match q.protocol {
                Protocol::Tcp => 6,
                Protocol::Udp => 17,
                Protocol::Icmp => 1,
            })
        }
        "ICMPTypeServiceEntry" => q.protocol == Protocol::Icmp,
        "NestedServiceServiceEntry" => {
            let p = e
                .get("nested_service_path")
                .and_then(Value::as_str)
                .unwrap_or("");
            depth < 8 && service_matches(world, p, q, depth + 1)
        }
        _ => false,
    }
}

fn service_matches(world: &World, path: &str, q: &TraceflowQuery, depth: usize) -> bool {
    world
        .services
        .iter()
        .find(|s| s.get("path").and_then(Value::as_str) == Some(path))
        .and_then(|s| s.get("service_entries").and_then(Value::as_array))
        .is_some_and(|es| es.iter().any(|e| entry_matches(world, e, q, depth)))
}

fn services_match(world: &World, rule: &Value, q: &TraceflowQuery) -> bool {
    let services = strs(rule, "services");
    let own: Vec<Value> = rule
        .get("service_entries")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if is_any(&services) && own.is_empty() {
        return true;
    }
    let by_path = !is_any(&services) && services.iter().any(|p| service_matches(world, p, q, 0));
    by_path || own.iter().any(|e| entry_matches(world, e, q, 0))
}

/// Rule `r` of policy `p` matches the packet at `at` going `dir` ("IN"/"OUT").
fn rule_matches(
    world: &World,
    p: &Value,
    r: &Value,
    q: &TraceflowQuery,
    src: &End,
    dst: &End,
    at: &End,
    dir: &str,
) -> bool {
    if r.get("disabled").and_then(Value::as_bool) == Some(true) {
        return false;
    }
    let d = r
        .get("direction")
        .and_then(Value::as_str)
        .unwrap_or("IN_OUT");
    if d != "IN_OUT" && d != dir {
        return false;
    }
    let policy_scope = strs(p, "scope");
    let scope = if is_any(&policy_scope) {
        strs(r, "scope")
    } else {
        policy_scope
    };
    if !scope_covers(world, &scope, at) {
        return false;
    }
    if !is_any(&strs(r, "profiles")) {
        return false;
    }
    let sx = r.get("sources_excluded").and_then(Value::as_bool) == Some(true);
    let dx = r.get("destinations_excluded").and_then(Value::as_bool) == Some(true);
    side_matches(world, &strs(r, "source_groups"), sx, src)
        && side_matches(world, &strs(r, "destination_groups"), dx, dst)
        && services_match(world, r, q)
}

fn seq(v: &Value) -> i64 {
    v.get("sequence_number")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn rule_ref(r: &Value) -> RuleRef {
    RuleRef {
        rule_id: r.get("rule_id").and_then(Value::as_u64).unwrap_or(0),
        path: r
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    }
}

/// The decision at one vNIC: `Ok(rule that allowed, if any)` or `Err(rule that dropped)`.
fn judge(
    world: &World,
    q: &TraceflowQuery,
    src: &End,
    dst: &End,
    at: &End,
    dir: &str,
) -> Result<Option<RuleRef>, RuleRef> {
    let ordered = |cat: &str| {
        let mut ps: Vec<&Value> = world
            .policies
            .iter()
            .filter(|p| p.get("category").and_then(Value::as_str) == Some(cat))
            .collect();
        ps.sort_by_key(|p| seq(p));
        ps
    };
    let rules_of = |p: &Value| {
        let mut rs: Vec<Value> = p
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        rs.sort_by_key(seq);
        rs
    };
    // L2 first: only a drop decides; an ALLOW ends the L2 pass.
    'l2: for p in ordered("Ethernet") {
        for r in rules_of(p) {
            if rule_matches(world, p, &r, q, src, dst, at, dir) {
                match r.get("action").and_then(Value::as_str) {
                    Some("DROP" | "REJECT") => return Err(rule_ref(&r)),
                    _ => break 'l2,
                }
            }
        }
    }
    let mut skip_to_application = false;
    for cat in L3_CATEGORIES {
        if skip_to_application && cat != "Application" {
            continue;
        }
        for p in ordered(cat) {
            for r in rules_of(p) {
                if !rule_matches(world, p, &r, q, src, dst, at, dir) {
                    continue;
                }
                match r.get("action").and_then(Value::as_str).unwrap_or("ALLOW") {
                    "DROP" | "REJECT" => return Err(rule_ref(&r)),
                    "JUMP_TO_APPLICATION" => {
                        skip_to_application = true;
                    }
                    _ => return Ok(Some(rule_ref(&r))),
                }
                break;
            }
            if skip_to_application && cat != "Application" {
                break;
            }
        }
    }
    Ok(None)
}

/// The default oracle: the world's DFW, first match, at the source then the destination.
pub fn evaluate(world: &World, q: &TraceflowQuery) -> TraceflowOutcome {
    let src = End {
        vm: q.source_vm.as_deref(),
        port: Some(q.source_port_path.as_str()),
        ip: q.src_ip,
    };
    let dst = End {
        vm: q.dest_vm.as_deref(),
        port: q.dest_port_path.as_deref(),
        ip: q.dst_ip,
    };
    let mut allowed_by = Vec::new();
    match judge(world, q, &src, &dst, &src, "OUT") {
        Err(rule) => {
            return TraceflowOutcome::Dropped {
                rule,
                side: Side::Source,
            }
        }
        Ok(r) => allowed_by.extend(r),
    }
    if q.dest_vm.is_none() && q.dest_port_path.is_none() {
        return TraceflowOutcome::Forwarded { allowed_by };
    }
    match judge(world, q, &src, &dst, &dst, "IN") {
        Err(rule) => TraceflowOutcome::Dropped {
            rule,
            side: Side::Destination,
        },
        Ok(r) => {
            allowed_by.extend(r);
            TraceflowOutcome::Delivered { allowed_by }
        }
    }
}
