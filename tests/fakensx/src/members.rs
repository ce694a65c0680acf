//! Effective group members as the fake computes them from a group's expression (the simple
//! constructs), or as the world gives them (`members:`). The expression kinds and their fields
//! were checked in terraform-provider-nsxt `nsxt/resource_nsxt_policy_group.go` (`Condition`:
//! member_type, key, operator, value with tags as `scope|tag`; `IPAddressExpression`:
//! ip_addresses; `PathExpression`: paths; `ExternalIDExpression`: member_type, external_ids;
//! `ConjunctionOperator`: conjunction_operator AND/OR; `NestedExpression`: expressions).
//!
//! Simplifications, on purpose: AND intersects the members found so far (VMs with VMs, ports
//! with ports, literal addresses with literal addresses); conditions on members other than
//! VirtualMachine and SegmentPort match nothing; MAC expressions match nothing (no L2 here).

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::Value;

use crate::world::World;

/// How deep groups may nest (a PathExpression naming a group): a cycle ends here.
const MAX_DEPTH: usize = 8;

/// One address entry: a single IP, a CIDR or a range `a-b`, as NSX writes them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum IpSpec {
    One(IpAddr),
    Cidr(IpAddr, u8),
    Range(IpAddr, IpAddr),
}

fn to_u128(ip: IpAddr) -> (bool, u128) {
    match ip {
        IpAddr::V4(a) => (false, u32::from(a) as u128),
        IpAddr::V6(a) => (true, u128::from(a)),
    }
}

impl IpSpec {
    /// Parses `10.0.0.1`, `10.0.0.0/24`, `10.0.0.1-10.0.0.9`; `None` for anything else.
    pub fn parse(s: &str) -> Option<IpSpec> {
        let s = s.trim();
        if let Some((a, b)) = s.split_once('-') {
            return Some(IpSpec::Range(
                a.trim().parse().ok()?,
                b.trim().parse().ok()?,
            ));
        }
        if let Some((a, len)) = s.split_once('/') {
            let ip: IpAddr = a.parse().ok()?;
            let len: u8 = len.parse().ok()?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            return (len <= max).then_some(IpSpec::Cidr(ip, len));
        }
        s.parse().ok().map(IpSpec::One)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let (v6, x) = to_u128(ip);
        match *self {
            IpSpec::One(a) => a == ip,
            IpSpec::Cidr(net, len) => {
                let (nv6, n) = to_u128(net);
                if nv6 != v6 {
                    return false;
                }
                let bits = if v6 { 128 } else { 32 };
                let shift = bits - len as u32;
                if shift >= 128 {
                    return true;
                }
                (n >> shift) == (x >> shift)
            }
            IpSpec::Range(a, b) => {
                let ((av6, a), (bv6, b)) = (to_u128(a), to_u128(b));
                av6 == v6 && bv6 == v6 && a <= x && x <= b
            }
        }
    }
}

/// A group's effective members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    /// Fabric VM external ids.
    pub vms: BTreeSet<String>,
    /// Segment / subnet port paths.
    pub ports: BTreeSet<String>,
    /// Literal address entries (IPAddressExpression), as written.
    pub literal_ips: BTreeSet<String>,
}

impl Members {
    fn union(&mut self, o: Members) {
        self.vms.extend(o.vms);
        self.ports.extend(o.ports);
        self.literal_ips.extend(o.literal_ips);
    }

    fn intersect(&mut self, o: Members) {
        self.vms = self.vms.intersection(&o.vms).cloned().collect();
        self.ports = self.ports.intersection(&o.ports).cloned().collect();
        self.literal_ips = self
            .literal_ips
            .intersection(&o.literal_ips)
            .cloned()
            .collect();
    }

    /// The effective IP addresses, as `…/members/ip-addresses` lists them: the literal entries,
    /// then the IPs of the member VMs and of the member ports' VIFs.
    pub fn ip_addresses(&self, world: &World) -> Vec<String> {
        let mut out: Vec<String> = self.literal_ips.iter().cloned().collect();
        let mut ips = BTreeSet::new();
        for vm in &self.vms {
            ips.extend(world.vm_ips(vm));
        }
        for p in &self.ports {
            if let Some(vif) = world.port(p).and_then(|p| world.vif_of_port(p)) {
                ips.extend(World::vif_ips(vif));
            }
        }
        for ip in ips {
            let s = ip.to_string();
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The effective segment ports: the port members and the member VMs' ports.
    pub fn segment_ports(&self, world: &World) -> BTreeSet<String> {
        let mut out = self.ports.clone();
        for vm in &self.vms {
            out.extend(
                world
                    .ports_of(vm)
                    .into_iter()
                    .filter_map(|p| p.get("path").and_then(Value::as_str).map(str::to_string)),
            );
        }
        out
    }

    /// Whether an endpoint (its VM, its port, its IP) is a member.
    pub fn has(&self, world: &World, vm: Option<&str>, port: Option<&str>, ip: IpAddr) -> bool {
        vm.is_some_and(|v| self.vms.contains(v))
            || port.is_some_and(|p| self.ports.contains(p))
            || self
                .literal_ips
                .iter()
                .filter_map(|s| IpSpec::parse(s))
                .any(|s| s.contains(ip))
            || self
                .ports
                .iter()
                .filter_map(|p| world.port(p).and_then(|p| world.vif_of_port(p)))
                .any(|vif| World::vif_ips(vif).contains(&ip))
            || self.vms.iter().any(|v| world.vm_ips(v).contains(&ip))
    }

    /// Whether a rule applied to this group is enforced at this vNIC (a VM or port member;
    /// addresses are not places a rule is applied at).
    pub fn applies_at(&self, world: &World, vm: Option<&str>, port: Option<&str>) -> bool {
        vm.is_some_and(|v| self.vms.contains(v))
            || port.is_some_and(|p| self.segment_ports(world).contains(p))
    }
}

/// The effective members of the group at `path`.
pub fn of_group(world: &World, path: &str) -> Members {
    of_group_at(world, path, 0)
}

fn of_group_at(world: &World, path: &str, depth: usize) -> Members {
    if let Some(m) = world.members.get(path) {
        return Members {
            vms: m.virtual_machines.iter().cloned().collect(),
            ports: m.segment_ports.iter().cloned().collect(),
            literal_ips: m.ip_addresses.iter().cloned().collect(),
        };
    }
    if depth > MAX_DEPTH {
        return Members::default();
    }
    let Some(g) = world
        .groups
        .iter()
        .find(|g| g.get("path").and_then(Value::as_str) == Some(path))
    else {
        return Members::default();
    };
    let exprs = g
        .get("expression")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    expressions(world, &exprs, depth)
}

fn expressions(world: &World, exprs: &[Value], depth: usize) -> Members {
    let mut acc: Option<Members> = None;
    let mut op = "OR".to_string();
    for e in exprs {
        let kind = e.get("resource_type").and_then(Value::as_str).unwrap_or("");
        if kind == "ConjunctionOperator" {
            op = e
                .get("conjunction_operator")
                .and_then(Value::as_str)
                .unwrap_or("OR")
                .to_string();
            continue;
        }
        let m = expression(world, e, depth);
        match acc.as_mut() {
            None => acc = Some(m),
            Some(a) if op == "AND" => a.intersect(m),
            Some(a) => a.union(m),
        }
    }
    acc.unwrap_or_default()
}

/// The strings of array `key` of `v` (none when it is absent or not an array).
pub(crate) fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn compare(op: &str, have: &str, want: &str) -> bool {
    let (h, w) = (have.to_lowercase(), want.to_lowercase());
    match op {
        "EQUALS" | "" => h == w,
        "NOTEQUALS" => h != w,
        "CONTAINS" => h.contains(&w),
        "STARTSWITH" => h.starts_with(&w),
        "ENDSWITH" => h.ends_with(&w),
        _ => false,
    }
}

/// A tag condition's value `scope|tag` (or `tag`) against an object's `tags`.
fn tag_matches(obj: &Value, op: &str, value: &str) -> bool {
    let (scope, tag) = match value.split_once('|') {
        Some((s, t)) => (Some(s), t),
        None => (None, value),
    };
    obj.get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| {
            let ts = t.get("scope").and_then(Value::as_str).unwrap_or("");
            let tt = t.get("tag").and_then(Value::as_str).unwrap_or("");
            scope.is_none_or(|s| s.is_empty() || s == ts) && compare(op, tt, tag)
        })
}

fn expression(world: &World, e: &Value, depth: usize) -> Members {
    let mut m = Members::default();
    match e.get("resource_type").and_then(Value::as_str).unwrap_or("") {
        "Condition" => {
            let member = e.get("member_type").and_then(Value::as_str).unwrap_or("");
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let value = e.get("value").and_then(Value::as_str).unwrap_or("");
            let matches = |o: &Value| match key {
                "Tag" => tag_matches(o, op, value),
                "Name" => compare(
                    op,
                    o.get("display_name").and_then(Value::as_str).unwrap_or(""),
                    value,
                ),
                "OSName" => compare(
                    op,
                    o.pointer("/guest_info/os_name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    value,
                ),
                "ComputerName" => compare(
                    op,
                    o.pointer("/guest_info/computer_name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    value,
                ),
                _ => false,
            };
            match member {
                "VirtualMachine" => {
                    m.vms = world
                        .vms
                        .iter()
                        .filter(|v| matches(v))
                        .filter_map(|v| v.get("external_id").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect();
                }
                "SegmentPort" | "VpcSubnetPort" => {
                    m.ports = world
                        .ports
                        .iter()
                        .filter(|p| matches(p))
                        .filter_map(|p| p.get("path").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect();
                }
                _ => {}
            }
        }
        "IPAddressExpression" => m.literal_ips = strings(e, "ip_addresses").into_iter().collect(),
        "ExternalIDExpression"
            if e.get("member_type").and_then(Value::as_str) == Some("VirtualMachine") =>
        {
            m.vms = strings(e, "external_ids")
                .into_iter()
                .filter(|id| world.vm(id).is_some())
                .collect();
        }
        "PathExpression" => {
            for p in strings(e, "paths") {
                if world
                    .groups
                    .iter()
                    .any(|g| g.get("path").and_then(Value::as_str) == Some(p.as_str()))
                    || world.members.contains_key(&p)
                {
                    m.union(of_group_at(world, &p, depth + 1));
                } else if world.port(&p).is_some() {
                    m.ports.insert(p);
                } else {
                    // A segment (or subnet): its ports.
                    m.ports.extend(
                        world
                            .ports
                            .iter()
                            .filter(|port| {
                                port.get("parent_path").and_then(Value::as_str) == Some(p.as_str())
                            })
                            .filter_map(|port| port.get("path").and_then(Value::as_str))
                            .map(str::to_string),
                    );
                }
            }
        }
        "NestedExpression" => {
            let inner = e
                .get("expressions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if depth <= MAX_DEPTH {
                m = expressions(world, &inner, depth + 1);
            }
        }
        _ => {}
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_specs() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(IpSpec::parse("10.0.0.0/24")
            .unwrap()
            .contains(ip("10.0.0.7")));
        assert!(!IpSpec::parse("10.0.0.0/24")
            .unwrap()
            .contains(ip("10.0.1.7")));
        assert!(IpSpec::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(!IpSpec::parse("0.0.0.0/0").unwrap().contains(ip("::1")));
        assert!(IpSpec::parse("10.0.0.1-10.0.0.9")
            .unwrap()
            .contains(ip("10.0.0.9")));
        assert!(!IpSpec::parse("10.0.0.1-10.0.0.9")
            .unwrap()
            .contains(ip("10.0.0.10")));
        assert!(IpSpec::parse("10.0.0.1/33").is_none());
        assert!(IpSpec::parse("ANY").is_none());
    }

    fn world() -> World {
        World::from_texts([(
            "w",
            r#"
virtual_machines:
  - {external_id: a, display_name: cp-a, tags: [{scope: role, tag: cp}]}
  - {external_id: b, display_name: cp-b, tags: [{scope: role, tag: cp}]}
  - {external_id: c, display_name: worker-c}
vifs:
  - {external_id: a-0, owner_vm_id: a, lport_attachment_id: att-a, ip_address_info: [{source: VM_TOOLS, ip_addresses: [10.0.0.1]}]}
  - {external_id: b-0, owner_vm_id: b, lport_attachment_id: att-b, ip_address_info: [{source: VM_TOOLS, ip_addresses: [10.0.0.2]}]}
  - {external_id: c-0, owner_vm_id: c, lport_attachment_id: att-c, ip_address_info: [{source: VM_TOOLS, ip_addresses: [10.0.0.3]}]}
segment_ports:
  - {path: /infra/segments/s/ports/pa, attachment: {id: att-a}}
  - {path: /infra/segments/s/ports/pc, attachment: {id: att-c}}
groups:
  - id: cp
    expression:
      - {resource_type: Condition, member_type: VirtualMachine, key: Tag, operator: EQUALS, value: "role|cp"}
  - id: cp-named-a
    expression:
      - {resource_type: Condition, member_type: VirtualMachine, key: Tag, operator: EQUALS, value: "role|cp"}
      - {resource_type: ConjunctionOperator, conjunction_operator: AND}
      - {resource_type: Condition, member_type: VirtualMachine, key: Name, operator: ENDSWITH, value: "-a"}
  - id: nested
    expression:
      - {resource_type: PathExpression, paths: [/infra/domains/default/groups/cp, /infra/segments/s/ports/pc]}
      - {resource_type: ConjunctionOperator, conjunction_operator: OR}
      - {resource_type: IPAddressExpression, ip_addresses: [192.0.2.0/24]}
  - id: loop
    expression:
      - {resource_type: PathExpression, paths: [/infra/domains/default/groups/loop]}
"#,
        )])
        .unwrap()
    }

    #[test]
    fn tags_names_conjunctions_paths() {
        let w = world();
        let cp = of_group(&w, "/infra/domains/default/groups/cp");
        assert_eq!(cp.vms, ["a", "b"].map(String::from).into());
        assert_eq!(cp.ip_addresses(&w), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(
            cp.segment_ports(&w),
            ["/infra/segments/s/ports/pa".to_string()].into()
        );
        let a = of_group(&w, "/infra/domains/default/groups/cp-named-a");
        assert_eq!(a.vms, ["a".to_string()].into());
        let n = of_group(&w, "/infra/domains/default/groups/nested");
        assert_eq!(
            n.ip_addresses(&w),
            ["192.0.2.0/24", "10.0.0.1", "10.0.0.2", "10.0.0.3"]
        );
        assert!(n.has(&w, None, None, "192.0.2.9".parse().unwrap()));
        assert!(!n.has(&w, None, None, "198.51.100.1".parse().unwrap()));
        // A group naming itself ends at the depth bound, empty.
        assert_eq!(
            of_group(&w, "/infra/domains/default/groups/loop"),
            Members::default()
        );
    }
}
