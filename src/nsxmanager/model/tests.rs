//! The typed reads on the fixtures in `tests/fixtures/nsx-manager/api/` (API answers keyed by
//! the path asked) and on hostile values; the world builder here is shared with
//! `analyse::dfw`'s tests.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{json, Value};

use super::*;
use crate::nsxmanager::raw::{
    Gap, Layout, Listed, Members, NsxRead, PolicyRead, TraceflowRead, VmLookup,
};

const API: &str = "/policy/api/v1";
const BASE: &str = "/policy/api/v1/infra/domains/default";

pub(crate) fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/nsx-manager/api/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn gap(path: &str, v: &Value) -> Option<Gap> {
    let code = v.get("error_code")?.as_u64()?;
    Some(Gap {
        path: path.to_string(),
        status: u16::try_from(code).ok(),
        why: v
            .get("error_message")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_string(),
        privilege: None,
    })
}

fn listed(path: &str, v: Option<&Value>) -> Listed {
    match v {
        None => Listed {
            incomplete: Some(Gap {
                path: path.into(),
                status: Some(404),
                why: "not served".into(),
                privilege: None,
            }),
            ..Listed::default()
        },
        Some(v) => match gap(path, v) {
            Some(g) => Listed {
                incomplete: Some(g),
                ..Listed::default()
            },
            None => Listed {
                results: v
                    .get("results")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                result_count: v.get("result_count").and_then(Value::as_u64),
                incomplete: None,
            },
        },
    }
}

/// What a reader would have read from a world fixture (API answers keyed by path) and a VM
/// lookup fixture (a search answer per node).
pub(crate) fn world(name: &str, vms: &str) -> NsxRead {
    let w = fixture(name);
    let get = |p: &str| w.get(p);
    let policies = listed(
        &format!("{BASE}/security-policies"),
        get(&format!("{BASE}/security-policies")),
    );
    let rules = policies
        .results
        .iter()
        .filter_map(|p| {
            let id = p.get("id")?.as_str()?;
            let path = format!("{BASE}/security-policies/{id}/rules");
            Some(PolicyRead {
                policy: p.clone(),
                rules: listed(&path, get(&path)),
            })
        })
        .collect();
    let mut groups = BTreeMap::new();
    let mut members: BTreeMap<String, Members> = BTreeMap::new();
    let mut services = BTreeMap::new();
    for (k, v) in w.as_object().into_iter().flatten() {
        let Some(policy_path) = k.strip_prefix(API) else {
            continue;
        };
        if let Some((group, kind)) = policy_path.split_once("/members/") {
            let m = members.entry(group.to_string()).or_default();
            let l = listed(k, Some(v));
            if let Some(g) = l.incomplete.clone().filter(|_| l.results.is_empty()) {
                m.gaps.push(g);
                continue;
            }
            match kind {
                "ip-addresses" => m.ip_addresses = Some(l),
                "virtual-machines" => m.virtual_machines = Some(l),
                "segment-ports" => m.segment_ports = Some(l),
                _ => {}
            }
        } else if policy_path.contains("/groups/") {
            groups.insert(policy_path.to_string(), v.clone());
        } else if policy_path.starts_with("/infra/services/") {
            services.insert(policy_path.to_string(), v.clone());
        }
    }
    let lookups = fixture(vms);
    let vms = lookups
        .as_object()
        .into_iter()
        .flatten()
        .map(|(node, answer)| VmLookup {
            node: node.clone(),
            asked: vec![format!("display_name:{node}")],
            found: answer
                .get("results")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            gaps: Vec::new(),
            associations: Vec::new(),
        })
        .collect();
    NsxRead {
        manager: "https://nsx.example".into(),
        layout: Layout::Infra {
            domain: "default".into(),
        },
        auth: Some("basic".into()),
        policies,
        rules,
        groups,
        members,
        services,
        vms,
        traceflows: Vec::new(),
        vpc_security: None,
        gaps: Vec::new(),
        enforcement: None,
        statistics: None,
    }
}

/// A finished traceflow from `from` to `to` on TCP `port` whose observations are the API
/// fixture `obs`, deleted after it was read (as a run leaves it).
pub(crate) fn traceflow(obs: &str, from: &str, to: &str, port: u16) -> TraceflowRead {
    let v = fixture(obs);
    TraceflowRead {
        from: from.into(),
        to: to.into(),
        port,
        path: "/infra/traceflows/etcdnet-0123456789abcdef".into(),
        status: Some(json!({"operation_state": "FINISHED"})),
        observations: Listed {
            results: v["results"].as_array().cloned().unwrap_or_default(),
            result_count: v["result_count"].as_u64(),
            incomplete: None,
        },
        deleted: true,
        gaps: vec![],
    }
}

/// The Supervisor's three control-plane VMs (their IPv4 or IPv6 addresses).
pub(crate) fn supervisor_vms(v6: bool) -> Vec<SupervisorVm> {
    (1..=3)
        .map(|n| SupervisorVm {
            node: format!("tkc-cp-{n}"),
            vm_name: format!("tkc-cp-{n}"),
            bios_uuid: Some(format!("4212-{n}")),
            instance_uuid: None,
            ips: vec![if v6 {
                format!("fd00:10::1{n}").parse::<IpAddr>().unwrap()
            } else {
                format!("10.0.0.1{n}").parse::<IpAddr>().unwrap()
            }],
        })
        .collect()
}

#[test]
fn rules_read_with_every_field() {
    let read = world("infra-drop-2380.json", "vms.json");
    let input = input_of(&read);
    let infra = input
        .policies
        .iter()
        .find(|p| p.policy.id.as_deref() == Some("infra-hardening"))
        .unwrap();
    assert_eq!(infra.policy.category, Category::Infrastructure);
    assert_eq!(infra.policy.sequence_number, Ok(10));
    assert_eq!(infra.policy.scope, Ok(None));
    assert_eq!(
        infra.policy.display_name.as_deref(),
        Some("Infra hardening")
    );
    let r = &infra.rules[0];
    assert_eq!(r.rule_id, Some(3021));
    assert_eq!(r.action, Ok(RuleAction::Drop));
    assert_eq!(r.direction, Ok(RuleDirection::InOut));
    assert_eq!(r.disabled, Ok(false));
    assert_eq!(
        r.sources,
        Ok(vec![Endpoint::Group(
            "/infra/domains/default/groups/tkc-cp".into()
        )])
    );
    assert_eq!(
        r.services,
        Ok(Some(vec!["/infra/services/etcd-peer".into()]))
    );
    assert_eq!(r.profiles, Ok(None));
    assert_eq!(r.ip_protocol, Ok(IpFamily::Both));
    assert!(r.unreadable().is_empty());
    let emergency = input
        .policies
        .iter()
        .find(|p| p.policy.category == Category::Emergency)
        .unwrap();
    assert_eq!(emergency.rules[0].disabled, Ok(true));
    let svc = &input.services["/infra/services/etcd-peer"];
    assert_eq!(
        svc.entries,
        Ok(vec![ServiceEntry::L4PortSet {
            protocol: "TCP".into(),
            destination_ports: vec![PortRange {
                start: 2380,
                end: 2380
            }],
            source_ports: vec![],
        }])
    );
    let m = &input.members["/infra/domains/default/groups/tkc-cp"];
    assert_eq!(m.ips.why_not_whole(), None);
    assert_eq!(m.ips.read().len(), 3);
    assert_eq!(m.vms.read()[0].bios_uuid.as_deref(), Some("4212-1"));
    assert_eq!(
        m.ports.read()[1].path.as_deref(),
        Some("/infra/segments/tkc-seg/ports/port-2")
    );
    assert!(input.policies_incomplete.is_none());
    assert!(input.gaps.is_empty());
}

#[test]
fn members_not_read_keep_the_reason() {
    let read = world("members-unread.json", "vms.json");
    let input = input_of(&read);
    let m = &input.members["/infra/domains/default/groups/unknown-sources"];
    let why = m.ips.why_not_whole().unwrap();
    assert!(why.contains("ip-addresses not read"), "{why}");
    assert!(why.contains("permission"), "{why}");
    assert!(m.vms.why_not_whole().is_some());
}

#[test]
fn hostile_values_are_bounded_reasons() {
    let read = world("hostile.json", "vms.json");
    let input = input_of(&read);
    // A policy whose category is not a string has no place; one without a path is kept
    // without its rules; a string is no policy.
    let hostile = &input.policies[0];
    assert!(matches!(hostile.policy.category, Category::Other(_)));
    assert!(hostile.policy.sequence_number.is_err());
    assert_eq!(hostile.policy.scope, Ok(None));
    assert_eq!(input.policies.len(), 3);
    assert!(input.policies[1].rules_incomplete.is_some());
    assert!(input.policies[2].policy.unreadable.is_some());
    let r1 = &hostile.rules[0];
    assert!(r1.sequence_number.is_err());
    assert!(r1.sources.is_err());
    assert!(matches!(
        r1.destinations.as_deref(),
        Err(e) if e.contains("destination_groups[0] is not a string")
    ));
    assert!(r1.services.is_err());
    assert!(r1.disabled.is_err());
    assert!(r1.direction.is_err());
    assert!(r1.ip_protocol.is_err());
    assert_eq!(r1.rule_id, None, "a negative rule_id is no rule id");
    assert!(r1.unreadable().len() >= 6);
    assert!(hostile.rules[1].action.is_err(), "a string is no rule");
    assert!(hostile.rules[3].path.is_err(), "null is no rule");
    let r3 = &hostile.rules[2];
    assert!(matches!(&r3.sources, Ok(v) if matches!(v[0], Endpoint::Unreadable(_))));
    assert!(
        matches!(&r3.service_entries, Ok(v) if matches!(v[0], ServiceEntry::Unreadable(_)) && matches!(v[1], ServiceEntry::Unreadable(_)))
    );
    let m = &input.members["/infra/domains/default/groups/tkc-cp"];
    assert_eq!(m.ips.read().len(), 1);
    assert!(m
        .ips
        .why_not_whole()
        .unwrap()
        .contains("3 members could not be read"));
}

#[test]
fn huge_strings_and_control_characters_are_clipped() {
    let huge = "x".repeat(100_000);
    let v = json!({"path": format!("/infra/{huge}"), "display_name": format!("a\u{1b}[31m{huge}"),
                   "id": huge, "sequence_number": 1, "action": "ALLOW",
                   "source_groups": [format!("/infra/domains/default/groups/{huge}")],
                   "services": vec![huge.clone(); MAX_ENTRIES + 1]});
    let r = Rule::read(&v);
    assert!(r.path.is_err());
    let name = r.display_name.unwrap();
    assert!(name.chars().count() <= MAX_NAME_CHARS + 1);
    assert!(!name.chars().any(char::is_control));
    assert!(
        matches!(&r.sources, Ok(v) if matches!(&v[0], Endpoint::Unreadable(w) if w.len() < 200))
    );
    assert!(matches!(&r.services, Err(e) if e.contains("more than")));
    let p = SecurityPolicy::read(
        &json!({"path": "/infra/domains/default/security-policies/p",
                                          "category": huge, "sequence_number": 1.5}),
    );
    assert!(matches!(&p.category, Category::Other(c) if c.chars().count() <= 65));
    assert!(p.sequence_number.is_err());
}

#[test]
fn addresses_ranges_and_ports() {
    let a = AddrSpec::parse("10.0.0.10-10.0.0.12").unwrap();
    assert!(a.contains("10.0.0.11".parse().unwrap()));
    assert!(!a.contains("10.0.0.13".parse().unwrap()));
    assert!(AddrSpec::parse("10.0.0.1-fd00::1").is_none());
    let c = AddrSpec::parse("fd00:10::/64").unwrap();
    assert!(c.contains("fd00:10::11".parse().unwrap()));
    assert!(!c.contains("fd00:11::11".parse().unwrap()));
    assert!(!c.contains("10.0.0.1".parse().unwrap()));
    assert!(AddrSpec::parse("0.0.0.0/0")
        .unwrap()
        .contains("192.0.2.1".parse().unwrap()));
    assert!(AddrSpec::parse("::/0")
        .unwrap()
        .contains("2001:db8::1".parse().unwrap()));
    assert!(AddrSpec::parse("10.0.0.0/33").is_none());
    let r = PortRange::parse(&json!("2379-2380")).unwrap();
    assert!(r.contains(2379) && r.contains(2380) && !r.contains(2381));
    assert_eq!(PortRange::parse(&json!("2380-2379")), None);
    assert_eq!(PortRange::parse(&json!("70000")), None);
    assert_eq!(PortRange::parse(&json!(2379)).unwrap().start, 2379);
}

#[test]
fn service_entries_of_every_kind() {
    let e = |v: Value| service_entry(&v);
    assert!(matches!(
        e(json!({"resource_type": "L4PORTSETSERVICEENTRY", "l4_protocol": "tcp", "destination_ports": ["2379"]})),
        ServiceEntry::L4PortSet { ref protocol, .. } if protocol == "TCP"
    ));
    assert_eq!(
        e(json!({"resource_type": "IPProtocolServiceEntry", "protocol_number": 6})),
        ServiceEntry::IpProtocol { number: 6 }
    );
    assert_eq!(
        e(json!({"resource_type": "EtherTypeServiceEntry", "ether_type": 2048})),
        ServiceEntry::EtherType { ether_type: 2048 }
    );
    assert!(matches!(
        e(json!({"resource_type": "ICMPTypeServiceEntry", "protocol": "ICMPv4"})),
        ServiceEntry::NotTcp { .. }
    ));
    assert_eq!(
        e(
            json!({"resource_type": "NestedServiceServiceEntry", "nested_service_path": "/infra/services/x"})
        ),
        ServiceEntry::Nested {
            path: "/infra/services/x".into()
        }
    );
    assert!(matches!(
        e(
            json!({"resource_type": "ALGTypeServiceEntry", "alg": "FTP", "destination_ports": ["21"]})
        ),
        ServiceEntry::Other { .. }
    ));
    assert!(matches!(
        e(
            json!({"resource_type": "L4PortSetServiceEntry", "l4_protocol": "TCP", "destination_ports": "2379"})
        ),
        ServiceEntry::Unreadable(_)
    ));
}

#[test]
fn a_forbidden_policy_list_is_not_an_empty_one() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.policies = Listed::default();
    read.rules.clear();
    read.gaps.push(Gap {
        path: "/policy/api/v1/infra/domains/default/security-policies".into(),
        status: Some(403),
        why: "forbidden".into(),
        privilege: Some("read on Security > Distributed Firewall".into()),
    });
    let input = input_of(&read);
    let why = input.policies_incomplete.unwrap();
    assert!(why.contains("HTTP 403"), "{why}");
    assert!(why.contains("Distributed Firewall"), "{why}");
    // A gap elsewhere with policies read is not about them.
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.gaps.push(Gap {
        path: "/policy/api/v1/search/query".into(),
        status: Some(503),
        why: "busy".into(),
        privilege: None,
    });
    assert_eq!(input_of(&read).policies_incomplete, None);
    // Nor is one policy's rules not read (a huge manager's, cut by the deadline): that policy
    // is not whole, the list is.
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.gaps.push(Gap {
        path: "/policy/api/v1/infra/domains/default/security-policies/filler-9/rules".into(),
        status: None,
        why: "the NSX reading's deadline (5s) passed before this request".into(),
        privilege: None,
    });
    assert_eq!(input_of(&read).policies_incomplete, None);
}

/// The model's input without the VMs (`identify`'s tests identify them).
fn input_of(read: &NsxRead) -> DfwInput {
    input(read, Vec::new(), Vec::new())
}

/// A huge manager's listing, its rules mostly cut by the deadline: each listed policy is kept
/// once (a repeat in the list, or one whose rules were read, is not a second policy), with
/// "its rules were not read" when they were not; a listed policy without a readable path is
/// still kept (it could come anywhere).
#[test]
fn a_huge_listing_keeps_each_policy_once() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let base = "/infra/domains/default/security-policies";
    let listed_read: Vec<Value> = read.rules.iter().map(|pr| pr.policy.clone()).collect();
    let filler = |n: usize| json!({"path": format!("{base}/filler-{n}"), "category": "Application", "sequence_number": 100 + n});
    let mut results = listed_read.clone();
    results.extend((0..20_000).map(filler));
    results.extend((0..10).map(filler)); // listed twice (a cursor that came round)
    results.push(json!({"category": "Application", "sequence_number": 7}));
    read.policies.results = results;
    let input = input_of(&read);
    assert_eq!(input.policies.len(), listed_read.len() + 20_000 + 1);
    let not_read =
        |p: &&PolicyRules| p.rules_incomplete.as_deref() == Some("its rules were not read");
    assert_eq!(input.policies.iter().filter(not_read).count(), 20_001);
    let pathless: Vec<_> = input
        .policies
        .iter()
        .filter(|p| p.policy.path.is_err())
        .collect();
    assert_eq!(pathless.len(), 1);
    assert!(pathless[0]
        .policy
        .unreadable
        .as_deref()
        .is_some_and(|u| u.starts_with("a listed policy: ")));
    // The policies whose rules were read keep them.
    for pr in &read.rules {
        let path = pr.policy["path"].as_str().unwrap();
        let kept: Vec<_> = input
            .policies
            .iter()
            .filter(|p| p.policy.path.as_deref() == Ok(path))
            .collect();
        assert_eq!(kept.len(), 1, "{path}");
        assert_eq!(kept[0].rules.len(), pr.rules.results.len(), "{path}");
    }
}

#[test]
fn the_vpcs_security_profile_is_one_note() {
    use crate::nsxmanager::raw::VpcSecurity;
    let p = "/orgs/default/projects/p/vpc-security-profiles/default";
    let st = "/orgs/default/projects/default/security-strategies/vpc-isolation";
    let mut v = VpcSecurity {
        profile: Some(
            json!({"id": "default", "display_name": "System\u{1b}[31m default",
            "path": p, "east_west_firewall": {"security_strategies": [st]}}),
        ),
        strategy: Some(json!({"id": "vpc-isolation", "path": st,
            "description": "Deny any communication between VPCs within the project"})),
        gaps: vec![],
    };
    let n = vpc_security_note(&v).unwrap();
    assert!(n.starts_with(&format!("the VPC's security profile is \"System\u{FFFD}[31m default\" ({p}), its east-west security strategy \"vpc-isolation\" ({st}): Deny any communication")), "{n}");
    v.strategy = None;
    v.gaps.push(Gap {
        path: st.into(),
        status: Some(403),
        why: "refused".into(),
        privilege: None,
    });
    assert!(vpc_security_note(&v)
        .unwrap()
        .contains("strategy was not read: "));
    // An NSX without profiles (404 on the profile): nothing to say.
    assert_eq!(vpc_security_note(&VpcSecurity::default()), None);
}
