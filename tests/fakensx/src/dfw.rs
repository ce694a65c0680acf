//! The fake's own first-match evaluation of the world's DFW: the default Traceflow oracle.
//! Written from the public semantics (Broadcom's NSX docs on the distributed firewall; the
//! fields, categories, directions and actions as terraform-provider-nsxt `nsxt/policy_common.go`
//! lists them: `securityPolicyCategoryValues`, `securityPolicyDirectionValues`,
//! `securityPolicyActionValues` with JUMP_TO_APPLICATION, the rule schema's `source_groups`,
//! `destination_groups`, `sources_excluded`, `destinations_excluded`, `scope`, `services`,
//! `service_entries`, `profiles`, `disabled`, `rule_id`), independent of the plugin's engine on purpose: the
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
                && ports_match(&members::strings(e, "destination_ports"), q.dst_port)
                && ports_match(&members::strings(e, "source_ports"), q.src_port)
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
    let services = members::strings(rule, "services");
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

/// The packet being judged, in its world.
struct Packet<'a> {
    world: &'a World,
    q: &'a TraceflowQuery,
    src: End<'a>,
    dst: End<'a>,
}

/// Rule `r` of policy `p` matches the packet at `at` going `dir` ("IN"/"OUT").
fn rule_matches(pk: &Packet, p: &Value, r: &Value, at: &End, dir: &str) -> bool {
    let (world, q, src, dst) = (pk.world, pk.q, &pk.src, &pk.dst);
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
    let policy_scope = members::strings(p, "scope");
    let scope = if is_any(&policy_scope) {
        members::strings(r, "scope")
    } else {
        policy_scope
    };
    if !scope_covers(world, &scope, at) {
        return false;
    }
    if !is_any(&members::strings(r, "profiles")) {
        return false;
    }
    // `ip_protocol` IPV4 / IPV6 / IPV4_IPV6 (terraform-provider-nsxt `securityPolicyIPProtocolValues`).
    match r.get("ip_protocol").and_then(Value::as_str) {
        Some("IPV4") if !q.dst_ip.is_ipv4() => return false,
        Some("IPV6") if !q.dst_ip.is_ipv6() => return false,
        _ => {}
    }
    let sx = r.get("sources_excluded").and_then(Value::as_bool) == Some(true);
    let dx = r.get("destinations_excluded").and_then(Value::as_bool) == Some(true);
    side_matches(world, &members::strings(r, "source_groups"), sx, src)
        && side_matches(world, &members::strings(r, "destination_groups"), dx, dst)
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

/// Where a policy's tree comes in NSX's order: the provider's (`/infra`, `/global-infra`) first,
/// then the project's (`/orgs/<o>/projects/<p>/infra`), then the VPC's, each whole before the
/// next (NSX 4.1 administration guide, "Distributed Firewall in Projects" GUID-5A04999A, and
/// "Default East-West Firewall Rules in an NSX VPC" GUID-9026BE25; issue 37). A tree's default
/// policy (`is_default`) comes after every other, the VPC's first, then the project's, then
/// `/infra`'s: the VPC's default drops "all incoming traffic to the NSX VPC", which it could
/// not behind `/infra`'s default ALLOW. How a Local Manager orders the Global Manager's
/// `/global-infra` policies against its own inside a category is not documented for the DFW
/// (the gateway firewall's: the Global Manager's "are enforced first", NSX-T 3.1
/// administration GUID-1F7DCDEF); the fake serves no `/global-infra` (a manager outside
/// Federation: 404), so its oracle never has to choose.
fn tree_of(p: &Value) -> u8 {
    let path = p.get("path").and_then(Value::as_str).unwrap_or("");
    let t = if path.starts_with("/orgs/") && path.contains("/vpcs/") {
        2
    } else if path.starts_with("/orgs/") {
        1
    } else {
        0
    };
    if p.get("is_default").and_then(Value::as_bool) == Some(true) {
        5 - t
    } else {
        t
    }
}

/// The decision at one vNIC: `Ok(rule that allowed, if any)` or `Err(rule that dropped)`.
fn judge(pk: &Packet, at: &End, dir: &str) -> Result<Option<RuleRef>, RuleRef> {
    let world = pk.world;
    let ordered_in = |cat: &str, tree: Option<u8>| {
        let mut ps: Vec<&Value> = world
            .policies
            .iter()
            // A policy without a category (a VPC's) is evaluated with the Application ones.
            .filter(|p| {
                p.get("category")
                    .and_then(Value::as_str)
                    .unwrap_or("Application")
                    == cat
            })
            .filter(|p| tree.is_none_or(|t| tree_of(p) == t))
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
    'l2: for p in ordered_in("Ethernet", None) {
        for r in rules_of(p) {
            if rule_matches(pk, p, &r, at, dir) {
                match r.get("action").and_then(Value::as_str) {
                    Some("DROP" | "REJECT") => return Err(rule_ref(&r)),
                    _ => break 'l2,
                }
            }
        }
    }
    for tree in 0..=5u8 {
        if let Some(decided) = judge_l3(pk, at, dir, &|cat| ordered_in(cat, Some(tree)), &rules_of)
        {
            return decided;
        }
    }
    Ok(None)
}

/// One tree's L3 categories: `Some(decision)` at the first rule that decides.
#[allow(clippy::type_complexity)]
fn judge_l3<'a>(
    pk: &Packet,
    at: &End,
    dir: &str,
    ordered: &dyn Fn(&str) -> Vec<&'a Value>,
    rules_of: &dyn Fn(&Value) -> Vec<Value>,
) -> Option<Result<Option<RuleRef>, RuleRef>> {
    let mut skip_to_application = false;
    for cat in L3_CATEGORIES {
        if skip_to_application && cat != "Application" {
            continue;
        }
        for p in ordered(cat) {
            for r in rules_of(p) {
                if !rule_matches(pk, p, &r, at, dir) {
                    continue;
                }
                match r.get("action").and_then(Value::as_str).unwrap_or("ALLOW") {
                    "DROP" | "REJECT" => return Some(Err(rule_ref(&r))),
                    "JUMP_TO_APPLICATION" => {
                        skip_to_application = true;
                    }
                    _ => return Some(Ok(Some(rule_ref(&r)))),
                }
                break;
            }
            if skip_to_application && cat != "Application" {
                break;
            }
        }
    }
    None
}

/// The default oracle: the world's DFW, first match, at the source then the destination.
pub fn evaluate(world: &World, q: &TraceflowQuery) -> TraceflowOutcome {
    let pk = Packet {
        world,
        q,
        src: End {
            vm: q.source_vm.as_deref(),
            port: Some(q.source_port_path.as_str()),
            ip: q.src_ip,
        },
        dst: End {
            vm: q.dest_vm.as_deref(),
            port: q.dest_port_path.as_deref(),
            ip: q.dst_ip,
        },
    };
    let mut allowed_by = Vec::new();
    match judge(&pk, &pk.src, "OUT") {
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
    match judge(&pk, &pk.dst, "IN") {
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

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
virtual_machines:
  - {external_id: a, display_name: vm-a}
  - {external_id: b, display_name: vm-b}
vifs:
  - {external_id: a0, owner_vm_id: a, lport_attachment_id: att-a, ip_address_info: [{ip_addresses: [10.0.0.1]}]}
  - {external_id: b0, owner_vm_id: b, lport_attachment_id: att-b, ip_address_info: [{ip_addresses: [10.0.0.2]}]}
segment_ports:
  - {path: /infra/segments/s/ports/pa, attachment: {id: att-a}}
  - {path: /infra/segments/s/ports/pb, attachment: {id: att-b}}
groups:
  - {id: ga, expression: [{resource_type: ExternalIDExpression, member_type: VirtualMachine, external_ids: [a]}]}
  - {id: gb, expression: [{resource_type: Condition, member_type: VirtualMachine, key: Name, operator: EQUALS, value: vm-b}]}
  - {id: nobody, expression: [{resource_type: IPAddressExpression, ip_addresses: [192.0.2.1]}]}
services:
  - {id: peer, service_entries: [{resource_type: L4PortSetServiceEntry, l4_protocol: TCP, destination_ports: ["2379-2380"]}]}
  - {id: nested, service_entries: [{resource_type: NestedServiceServiceEntry, nested_service_path: /infra/services/peer}]}
  - {id: udp, service_entries: [{resource_type: L4PortSetServiceEntry, l4_protocol: UDP, destination_ports: ["2380"]}]}
"#;

    fn world(policies: &str) -> World {
        World::from_texts([("base", BASE), ("policies", policies)]).unwrap()
    }

    /// A TCP SYN from `from` ("a"/"b") to the other's IP on `port`.
    fn syn(from: &str, port: u16) -> TraceflowQuery {
        let (to, src_ip, dst_ip) = if from == "a" {
            ("b", "10.0.0.1", "10.0.0.2")
        } else {
            ("a", "10.0.0.2", "10.0.0.1")
        };
        TraceflowQuery {
            source_port_path: format!("/infra/segments/s/ports/p{from}"),
            source_vm: Some(from.into()),
            source_vm_name: None,
            src_ip: src_ip.parse().unwrap(),
            dst_ip: dst_ip.parse().unwrap(),
            protocol: Protocol::Tcp,
            src_port: 40000,
            dst_port: port,
            dest_vm: Some(to.into()),
            dest_port_path: Some(format!("/infra/segments/s/ports/p{to}")),
        }
    }

    /// The rule id that dropped, and where; `None`: delivered.
    fn dropped(w: &World, q: &TraceflowQuery) -> Option<(u64, Side)> {
        match evaluate(w, q) {
            TraceflowOutcome::Dropped { rule, side } => Some((rule.rule_id, side)),
            _ => None,
        }
    }

    fn policy(cat: &str, seq: i64, rules: &str) -> String {
        format!("  - {{id: p-{cat}-{seq}, category: {cat}, sequence_number: {seq}, rules: [{rules}]}}\n")
    }

    #[test]
    fn direction_scope_and_the_side_that_drops() {
        let w = world(&format!(
            "security_policies:\n{}",
            policy("Infrastructure", 1, "{id: r, action: DROP, direction: IN, services: [/infra/services/peer], rule_id: 11}")
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), Some((11, Side::Destination)));
        let w = world(&format!(
            "security_policies:\n{}",
            policy("Infrastructure", 1, "{id: r, action: DROP, direction: OUT, scope: [/infra/domains/default/groups/gb], rule_id: 12}")
        ));
        // Applied to b only, going out: a's packet to b passes; b's to a is dropped at b.
        assert_eq!(dropped(&w, &syn("a", 2380)), None);
        assert_eq!(dropped(&w, &syn("b", 2380)), Some((12, Side::Source)));
        let w = world(&format!(
            "security_policies:\n{}",
            policy(
                "Infrastructure",
                1,
                "{id: r, action: DROP, scope: [/infra/domains/default/groups/nobody], rule_id: 13}"
            )
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), None, "applied to no vNIC");
        // The policy's scope wins over the rule's.
        let w = world(
            "security_policies:\n  - {id: p, category: Application, scope: [/infra/domains/default/groups/ga], rules: [{id: r, action: DROP, scope: [/infra/domains/default/groups/gb], rule_id: 14}]}\n",
        );
        assert_eq!(dropped(&w, &syn("a", 2380)), Some((14, Side::Source)));
    }

    #[test]
    fn categories_sequence_numbers_and_first_match() {
        let w = world(&format!(
            "security_policies:\n{}{}{}",
            policy("Application", 1, "{id: d, action: DROP, rule_id: 21}"),
            policy("Emergency", 100, "{id: e, action: ALLOW, services: [/infra/services/peer], rule_id: 22}"),
            policy("Infrastructure", 5, "{id: late, action: DROP, sequence_number: 9, rule_id: 23}, {id: early, action: ALLOW, sequence_number: 1, services: [/infra/services/nested], rule_id: 24}"),
        ));
        match evaluate(&w, &syn("a", 2380)) {
            TraceflowOutcome::Delivered { allowed_by } => {
                assert_eq!(
                    allowed_by.iter().map(|r| r.rule_id).collect::<Vec<_>>(),
                    [22, 22]
                )
            }
            other => panic!("{other:?}"),
        }
        // Not etcd: Emergency and Infrastructure's ALLOWs do not cover it; Infrastructure's
        // DROP (sequence 9) does.
        assert_eq!(dropped(&w, &syn("a", 22)), Some((23, Side::Source)));
    }

    #[test]
    fn disabled_excluded_services_and_jumps() {
        let w = world(&format!(
            "security_policies:\n{}",
            policy("Emergency", 1, "{id: off, action: DROP, disabled: true, rule_id: 31}, {id: notme, action: DROP, source_groups: [/infra/domains/default/groups/ga], sources_excluded: true, rule_id: 32}")
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), None);
        assert_eq!(dropped(&w, &syn("b", 2380)), Some((32, Side::Source)));
        let w = world(&format!(
            "security_policies:\n{}",
            policy("Infrastructure", 1, "{id: u, action: DROP, services: [/infra/services/udp], rule_id: 33}, {id: own, action: REJECT, service_entries: [{resource_type: L4PortSetServiceEntry, l4_protocol: TCP, destination_ports: [\"2380\"]}], rule_id: 34}")
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), Some((34, Side::Source)));
        assert_eq!(dropped(&w, &syn("a", 2379)), None);
        let w = world(&format!(
            "security_policies:\n{}{}{}{}",
            policy(
                "Environment",
                1,
                "{id: jump, action: JUMP_TO_APPLICATION, rule_id: 41}"
            ),
            policy("Environment", 2, "{id: skipped, action: DROP, rule_id: 42}"),
            policy(
                "Infrastructure",
                1,
                "{id: first, action: DROP, destination_groups: [10.0.0.9], rule_id: 43}"
            ),
            policy(
                "Application",
                1,
                "{id: app, action: DROP, destination_groups: [\"10.0.0.0/30\"], rule_id: 44}"
            ),
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), Some((44, Side::Source)));
        // An L2 ALLOW does not end the L3 rules.
        let w = world(&format!(
            "security_policies:\n{}{}",
            policy("Ethernet", 1, "{id: l2, action: ALLOW, rule_id: 51}"),
            policy("Infrastructure", 1, "{id: l3, action: DROP, rule_id: 52}"),
        ));
        assert_eq!(dropped(&w, &syn("a", 2380)), Some((52, Side::Source)));
    }
}
