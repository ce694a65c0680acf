//! The DFW engine on the fixtures in `tests/fixtures/nsx-manager/api/`.

use serde_json::{json, Value};

use super::*;
use crate::nsxmanager::identify::input;
use crate::nsxmanager::model::tests::{supervisor_vms, world};
use crate::nsxmanager::model::SupervisorVm;
use crate::nsxmanager::raw::{Gap, Listed, NsxRead, PolicyRead};

const CP: [&str; 3] = ["tkc-cp-1", "tkc-cp-2", "tkc-cp-3"];

fn eval_of(read: &NsxRead, v6: bool) -> (DfwInput, DfwEvaluation) {
    let i = input(read, &supervisor_vms(v6));
    let e = evaluate(&i);
    (i, e)
}

fn eval(name: &str) -> (DfwInput, DfwEvaluation) {
    eval_of(&world(name, "vms.json"), false)
}

fn outcomes(e: &DfwEvaluation, port: u16) -> Vec<&DfwPathOutcome> {
    e.paths
        .iter()
        .filter(|p| p.port == port)
        .map(|p| &p.outcome)
        .collect()
}

fn rule_path(o: &DfwPathOutcome) -> Option<&str> {
    o.blocking_rule().map(|r| r.path.as_str())
}

fn allowed_by(o: &DfwPathOutcome) -> Option<&str> {
    match o {
        DfwPathOutcome::Allowed {
            egress: Some(r), ..
        } => Some(r.path.as_str()),
        _ => None,
    }
}

const BLOCK: &str =
    "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer";
const DEFAULT: &str =
    "/infra/domains/default/security-policies/default-layer3-section/rules/default-layer3-rule";

#[test]
fn infrastructure_drop_of_2380_between_the_cp_group_is_named() {
    let (_, e) = eval("infra-drop-2380.json");
    assert_eq!(e.vms, CP);
    assert_eq!(e.paths.len(), 12);
    for o in outcomes(&e, 2380) {
        assert!(matches!(o, DfwPathOutcome::Dropped { .. }), "{o:?}");
        assert_eq!(rule_path(o), Some(BLOCK));
    }
    // 2379: the disabled Emergency DROP does not count, the Environment DROP excludes the CP
    // sources, the default rule allows.
    for o in outcomes(&e, 2379) {
        assert_eq!(allowed_by(o), Some(DEFAULT), "{o:?}");
    }
    assert_eq!(e.blocking.len(), 1);
    // Nothing comes after the default rule; the disabled DROP never matches.
    assert!(e.shadowed.is_empty(), "{:?}", e.shadowed);
    let b = &e.blocking[0];
    assert_eq!(b.paths.len(), 6);
    assert_eq!(b.rule.category, "Infrastructure");
    assert_eq!(b.rule.policy_sequence, Some(10));
    assert_eq!(b.rule.rule_sequence, Some(10));
    assert_eq!(b.rule.rule_id, Some(3021));
    assert_eq!(b.rule.action, RuleAction::Drop);
    let label = b.rule.label();
    assert!(label.contains("\"block etcd peer\""), "{label}");
    assert!(label.contains(BLOCK), "{label}");
    assert!(label.contains("category Infrastructure"), "{label}");
    assert!(e.summary.contains("drops 6 of 12 paths"), "{}", e.summary);
    // Both checks block: the egress check at FROM is the one named.
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert!(matches!(&p.egress, DfwSideOutcome::Matched { rule } if rule.path == BLOCK));
    assert!(matches!(&p.ingress, DfwSideOutcome::Matched { rule } if rule.path == BLOCK));
    let failing = [PathRef {
        port: 2380,
        from: "tkc-cp-1".into(),
        to: "tkc-cp-2".into(),
    }];
    assert_eq!(e.no_drop_line(&failing), None);
    assert_eq!(e.counts.policies, 4);
    assert_eq!(e.counts.rules, 4);
    assert_eq!(e.counts.rules_disabled, 1);
    assert_eq!(e.counts.vms_identified, 3);
    assert_eq!(
        e.counts
            .policies_by_category
            .iter()
            .map(|c| (c.category.as_str(), c.count))
            .collect::<Vec<_>>(),
        vec![
            ("Emergency", 1),
            ("Infrastructure", 1),
            ("Environment", 1),
            ("Application", 1)
        ]
    );
}

#[test]
fn a_higher_category_allow_before_an_application_drop_is_not_blamed() {
    let (_, e) = eval("allow-before-drop.json");
    let allow = "/infra/domains/default/security-policies/env-allow-etcd/rules/allow-etcd";
    for port in [2379, 2380] {
        for o in outcomes(&e, port) {
            // The service's range 2379-2380 covers both ports.
            assert_eq!(allowed_by(o), Some(allow), "{port}: {o:?}");
        }
    }
    assert!(e.blocking.is_empty());
    // The Application DROP is shadowed on the 2380 paths, in both checks, by the ALLOW.
    assert_eq!(e.shadowed.len(), 1, "{:?}", e.shadowed);
    let s = &e.shadowed[0];
    assert_eq!(
        s.rule.path,
        "/infra/domains/default/security-policies/app-deny/rules/deny-etcd-peer"
    );
    assert_eq!(s.rule.category, "Application");
    assert_eq!(s.by.path, allow);
    assert_eq!(s.paths.len(), 6);
    assert!(s.paths.iter().all(|p| p.port == 2380));
    assert!(
        e.summary.starts_with(
            "NSX Manager shows no rule that drops these paths (read: 3 security policies"
        ),
        "{}",
        e.summary
    );
    let line = e
        .no_drop_line(&[PathRef {
            port: 2380,
            from: "tkc-cp-2".into(),
            to: "tkc-cp-3".into(),
        }])
        .unwrap();
    assert!(line.contains("3 rules (0 disabled)"), "{line}");
}

#[test]
fn jump_to_application_skips_the_rest_of_environment() {
    let (_, e) = eval("jump-to-application.json");
    let reject = "/infra/domains/default/security-policies/app-reject/rules/reject-etcd-client";
    for o in outcomes(&e, 2379) {
        assert!(matches!(o, DfwPathOutcome::Rejected { .. }), "{o:?}");
        assert_eq!(rule_path(o), Some(reject));
    }
    // 2380: past the jump, the Application default rule (the Environment ALLOW is skipped).
    for o in outcomes(&e, 2380) {
        assert_eq!(allowed_by(o), Some(DEFAULT), "{o:?}");
    }
    assert!(e.summary.contains("rejects 6 of 12"), "{}", e.summary);
}

#[test]
fn a_group_whose_members_could_not_be_read_cannot_decide() {
    let (_, e) = eval("members-unread.json");
    for o in e.paths.iter().map(|p| &p.outcome) {
        let DfwPathOutcome::CannotDecide { why } = o else {
            panic!("{o:?}")
        };
        assert!(why.contains("unknown-sources"), "{why}");
        assert!(why.contains("ip-addresses not read"), "{why}");
    }
    assert!(e.blocking.is_empty());
    assert!(
        e.summary.contains("12 of 12 paths cannot be decided"),
        "{}",
        e.summary
    );
    assert_eq!(
        e.no_drop_line(&[PathRef {
            port: 2380,
            from: "tkc-cp-1".into(),
            to: "tkc-cp-2".into()
        }]),
        None
    );
}

#[test]
fn ipv6_addresses_match_the_groups_realized_cidr_and_ip_protocol() {
    let (i, e) = eval_of(&world("ipv6.json", "vms.json"), true);
    let v6 = "/infra/domains/default/security-policies/infra-v6/rules/drop-v6-client";
    for o in outcomes(&e, 2379) {
        assert_eq!(rule_path(o), Some(v6), "{o:?}");
    }
    // The IPV4 rule does not match IPv6 packets.
    for o in outcomes(&e, 2380) {
        assert_eq!(allowed_by(o), Some(DEFAULT), "{o:?}");
    }
    // NSX's VIFs list IPv4 addresses the Supervisor does not: said.
    assert!(
        i.findings.iter().any(|f| f.contains("fd00:10::11")),
        "{:?}",
        i.findings
    );
}

#[test]
fn hostile_values_make_cannot_decide_not_a_guess() {
    let (_, e) = eval("hostile.json");
    assert_eq!(e.paths.len(), 12);
    for p in &e.paths {
        assert!(
            matches!(p.outcome, DfwPathOutcome::CannotDecide { .. }),
            "{p:?}"
        );
    }
    assert!(e.blocking.is_empty());
}

#[test]
fn a_policy_list_not_read_whole_cannot_decide() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.policies.incomplete = Some(Gap {
        path: "/policy/api/v1/infra/domains/default/security-policies".into(),
        status: Some(503),
        why: "the second page timed out".into(),
        privilege: None,
    });
    let (_, e) = eval_of(&read, false);
    for p in &e.paths {
        let DfwPathOutcome::CannotDecide { why } = &p.outcome else {
            panic!("{p:?}")
        };
        assert!(why.contains("second page timed out"), "{why}");
    }
}

fn with_rule(read: &mut NsxRead, policy: &str, edit: impl Fn(&mut Value)) {
    let pr = read
        .rules
        .iter_mut()
        .find(|p| p.policy["id"] == policy)
        .unwrap();
    for r in &mut pr.rules.results {
        edit(r);
    }
}

#[test]
fn direction_and_scope_are_per_vnic() {
    // OUT only: the egress check at FROM drops, the ingress check does not match.
    let mut read = world("infra-drop-2380.json", "vms.json");
    with_rule(&mut read, "infra-hardening", |r| {
        r["direction"] = json!("OUT")
    });
    let (_, e) = eval_of(&read, false);
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert!(matches!(&p.egress, DfwSideOutcome::Matched { rule } if rule.path == BLOCK));
    assert!(matches!(&p.ingress, DfwSideOutcome::Matched { rule } if rule.path == DEFAULT));
    assert_eq!(rule_path(&p.outcome), Some(BLOCK));

    // Applied to a group that holds only tkc-cp-2's port: only checks at tkc-cp-2's vNIC.
    let mut read = world("infra-drop-2380.json", "vms.json");
    let g = "/infra/domains/default/groups/cp-2-only";
    with_rule(&mut read, "infra-hardening", |r| r["scope"] = json!([g]));
    let mut m = read.members["/infra/domains/default/groups/tkc-cp"].clone();
    m.ip_addresses = Some(Listed {
        results: vec![json!("10.0.0.12")],
        ..Listed::default()
    });
    m.virtual_machines = Some(Listed::default());
    m.segment_ports = Some(Listed {
        results: vec![json!({"path": "/infra/segments/tkc-seg/ports/port-2"})],
        ..Listed::default()
    });
    read.members.insert(g.into(), m);
    let (_, e) = eval_of(&read, false);
    for p in e.paths.iter().filter(|p| p.port == 2380) {
        let at_cp2 = p.from == "tkc-cp-2" || p.to == "tkc-cp-2";
        assert_eq!(rule_path(&p.outcome).is_some(), at_cp2, "{p:?}");
    }
    // The policy's scope wins over the rule's: ANY at the rule, cp-2-only at the policy.
    let mut read2 = read.clone();
    with_rule(&mut read2, "infra-hardening", |r| {
        r["scope"] = json!(["ANY"])
    });
    let pr = read2
        .rules
        .iter_mut()
        .find(|p| p.policy["id"] == "infra-hardening")
        .unwrap();
    pr.policy["scope"] = json!([g]);
    let (_, e2) = eval_of(&read2, false);
    assert_eq!(e2.paths, e.paths);
}

#[test]
fn a_scope_against_an_unidentified_vm_cannot_decide() {
    let mut read = world("infra-drop-2380.json", "vms-mismatch.json");
    with_rule(&mut read, "infra-hardening", |r| {
        r["scope"] = json!(["/infra/domains/default/groups/tkc-cp"])
    });
    let (_, e) = eval_of(&read, false);
    // Checks at tkc-cp-3's vNIC cannot tell whether the rule is applied there; a drop at the
    // other end still blocks.
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-3").unwrap();
    assert_eq!(rule_path(&p.outcome), Some(BLOCK));
    assert!(
        matches!(&p.ingress, DfwSideOutcome::CannotDecide { why } if why.contains("not identified"))
    );
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert_eq!(rule_path(&p.outcome), Some(BLOCK));
}

#[test]
fn ties_with_different_actions_cannot_decide_and_context_profiles_too() {
    // A second Infrastructure policy with the same sequence number allowing everything.
    let mut read = world("infra-drop-2380.json", "vms.json");
    let mut twin = read
        .rules
        .iter()
        .find(|p| p.policy["id"] == "infra-hardening")
        .unwrap()
        .clone();
    twin.policy["id"] = json!("infra-twin");
    twin.policy["path"] = json!("/infra/domains/default/security-policies/infra-twin");
    for r in &mut twin.rules.results {
        r["action"] = json!("ALLOW");
        r["path"] = json!("/infra/domains/default/security-policies/infra-twin/rules/allow");
    }
    read.rules.push(twin);
    let (_, e) = eval_of(&read, false);
    for o in outcomes(&e, 2380) {
        let DfwPathOutcome::CannotDecide { why } = o else {
            panic!("{o:?}")
        };
        assert!(why.contains("not deterministic"), "{why}");
    }
    // The same action on both: the first listed is named.
    let mut read = world("infra-drop-2380.json", "vms.json");
    let mut twin = read.rules[1].clone();
    twin.policy["path"] = json!("/infra/domains/default/security-policies/infra-twin");
    read.rules.push(twin);
    let (_, e) = eval_of(&read, false);
    assert_eq!(rule_path(outcomes(&e, 2380)[0]), Some(BLOCK));

    let mut read = world("infra-drop-2380.json", "vms.json");
    with_rule(&mut read, "infra-hardening", |r| {
        r["profiles"] = json!(["/infra/context-profiles/ETCD"])
    });
    let (_, e) = eval_of(&read, false);
    for o in outcomes(&e, 2380) {
        assert!(
            matches!(o, DfwPathOutcome::CannotDecide { why } if why.contains("context profiles")),
            "{o:?}"
        );
    }
}

#[test]
fn ethernet_allow_falls_through_and_ethernet_drop_decides() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let mut l2 = read.rules[0].clone();
    l2.policy["id"] = json!("l2");
    l2.policy["path"] = json!("/infra/domains/default/security-policies/l2");
    l2.policy["category"] = json!("Ethernet");
    l2.rules.results = vec![
        json!({"path": "/infra/domains/default/security-policies/l2/rules/a",
        "sequence_number": 1, "action": "ALLOW", "source_groups": ["ANY"],
        "destination_groups": ["ANY"], "services": ["ANY"]}),
    ];
    read.rules.push(l2.clone());
    let (_, e) = eval_of(&read, false);
    assert_eq!(rule_path(outcomes(&e, 2380)[0]), Some(BLOCK));

    let mut read = world("infra-drop-2380.json", "vms.json");
    l2.rules.results[0]["action"] = json!("DROP");
    read.rules.push(l2.clone());
    let (_, e) = eval_of(&read, false);
    for o in outcomes(&e, 2379) {
        assert_eq!(
            rule_path(o),
            Some("/infra/domains/default/security-policies/l2/rules/a")
        );
    }
    // A layer 2 rule naming groups matches MACs: not evaluated.
    let mut read = world("infra-drop-2380.json", "vms.json");
    l2.rules.results[0]["source_groups"] = json!(["/infra/domains/default/groups/tkc-cp"]);
    read.rules.push(l2);
    let (_, e) = eval_of(&read, false);
    assert!(
        matches!(outcomes(&e, 2379)[0], DfwPathOutcome::CannotDecide { why } if why.contains("layer 2"))
    );
}

#[test]
fn services_not_read_and_source_ports_cannot_decide() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.services.clear();
    let (_, e) = eval_of(&read, false);
    assert!(
        matches!(outcomes(&e, 2380)[0], DfwPathOutcome::CannotDecide { why } if why.contains("was not read"))
    );

    let mut read = world("infra-drop-2380.json", "vms.json");
    read.services.insert(
        "/infra/services/etcd-peer".into(),
        json!({"path": "/infra/services/etcd-peer", "service_entries": [
            {"resource_type": "L4PortSetServiceEntry", "l4_protocol": "TCP",
             "destination_ports": ["2380"], "source_ports": ["1024-65535"]}]}),
    );
    let (_, e) = eval_of(&read, false);
    assert!(
        matches!(outcomes(&e, 2380)[0], DfwPathOutcome::CannotDecide { why } if why.contains("ephemeral"))
    );
    // …but never for the port the service does not name.
    assert_eq!(allowed_by(outcomes(&e, 2379)[0]), Some(DEFAULT));
}

#[test]
fn the_no_drop_line_says_what_was_read() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    with_rule(&mut read, "infra-hardening", |r| {
        r["disabled"] = json!(true)
    });
    let (_, e) = eval_of(&read, false);
    assert!(e.blocking.is_empty());
    let line = e
        .no_drop_line(&[PathRef {
            port: 2380,
            from: "tkc-cp-3".into(),
            to: "tkc-cp-1".into(),
        }])
        .unwrap();
    assert_eq!(
        line,
        "NSX Manager shows no rule that drops these paths (read: 4 security policies (Emergency 1, Infrastructure 1, Environment 1, Application 1), 4 rules (2 disabled), 1 groups (1 with members read whole), 1 services, 3 of 3 VMs identified)"
    );
    assert_eq!(e.no_drop_line(&[]), None);
}

#[test]
fn at_most_max_vms_and_no_ip_cannot_decide() {
    let read = world("infra-drop-2380.json", "vms.json");
    let mut vms = supervisor_vms(false);
    vms[0].ips.clear();
    for n in 0..MAX_VMS + 4 {
        vms.push(SupervisorVm {
            node: format!("z-extra-{n:02}"),
            vm_name: format!("z-extra-{n:02}"),
            ..SupervisorVm::default()
        });
    }
    let e = evaluate(&input(&read, &vms));
    assert_eq!(e.vms.len(), MAX_VMS);
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    // The source group cannot be matched without tkc-cp-1's address: the ingress side at
    // tkc-cp-2 cannot decide either, so the path cannot.
    assert!(
        matches!(&p.outcome, DfwPathOutcome::CannotDecide { why } if why.contains("no IP is known for tkc-cp-1")),
        "{p:?}"
    );
}

#[test]
fn a_huge_manager_is_evaluated_in_bounded_time() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let g = "/infra/domains/default/groups/huge";
    let mut m = read.members["/infra/domains/default/groups/tkc-cp"].clone();
    m.ip_addresses = Some(Listed {
        results: (0..20_000u32)
            .map(|n| json!(format!("172.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255)))
            .collect(),
        ..Listed::default()
    });
    m.virtual_machines = Some(Listed::default());
    m.segment_ports = Some(Listed::default());
    read.members.insert(g.into(), m);
    let template = read.rules[3].clone();
    for n in 0..2_000 {
        let mut p = template.clone();
        p.policy["path"] = json!(format!("/infra/domains/default/security-policies/bulk-{n}"));
        p.policy["category"] = json!("Environment");
        p.policy["sequence_number"] = json!(n);
        p.rules.results = (0..5)
            .map(|r| {
                json!({"path": format!("/infra/domains/default/security-policies/bulk-{n}/rules/{r}"),
                       "sequence_number": r, "action": "DROP", "source_groups": [g],
                       "destination_groups": [g], "services": ["ANY"]})
            })
            .collect();
        read.rules.push(p);
    }
    // Bounded work: this thread's CPU time, not wall time, which a loaded machine stretches.
    let started = crate::testing::cpu_time();
    let (_, e) = eval_of(&read, false);
    let took = crate::testing::cpu_time() - started;
    assert!(took < std::time::Duration::from_secs(20), "{took:?} of CPU");
    // None of the bulk rules matches the VMs; the Infrastructure DROP still decides 2380.
    assert_eq!(e.counts.rules, 4 + 10_000);
    assert_eq!(rule_path(outcomes(&e, 2380)[0]), Some(BLOCK));
    assert_eq!(allowed_by(outcomes(&e, 2379)[0]), Some(DEFAULT));
}

#[test]
fn a_member_vm_whose_address_is_not_realized_cannot_decide() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let m = read
        .members
        .get_mut("/infra/domains/default/groups/tkc-cp")
        .unwrap();
    m.ip_addresses = Some(Listed {
        results: vec![json!("10.0.0.11"), json!("10.0.0.12")],
        ..Listed::default()
    });
    let (_, e) = eval_of(&read, false);
    // tkc-cp-3 is a member VM (by its uuid and port) whose IP NSX has not realized.
    let p = e.path(2380, "tkc-cp-3", "tkc-cp-1").unwrap();
    assert!(
        matches!(&p.outcome, DfwPathOutcome::CannotDecide { why } if why.contains("not in the group's realized IPs")),
        "{p:?}"
    );
    assert_eq!(
        rule_path(&e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap().outcome),
        Some(BLOCK)
    );
}

/// A policy of another tree, one ALLOW of every TCP port, at `path`.
fn allow_policy(read: &NsxRead, path: &str, category: Option<&str>, seq: i64) -> PolicyRead {
    let mut p = read.rules[3].clone();
    p.policy = json!({"id": "allow", "display_name": "allow", "path": path,
        "sequence_number": seq});
    if let Some(c) = category {
        p.policy["category"] = json!(c);
    }
    p.rules.results = vec![
        json!({"path": format!("{path}/rules/a"), "sequence_number": 1,
        "action": "ALLOW"}),
    ];
    p
}

/// NSX's order across trees: `/infra` first, then the project's, then the VPC's, each by
/// category and sequence number; a tree's default policy after every other (the most
/// specific tree's first). A VPC's policies, which carry no category, are placed (their
/// sequence numbers order them), no longer "cannot decide".
#[test]
fn infra_first_then_project_then_vpc_and_the_defaults_last() {
    let vpc = "/orgs/default/projects/p/vpcs/v/security-policies/vpc-allow";
    let project = "/orgs/default/projects/p/infra/domains/default/security-policies/proj-allow";
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.rules.push(allow_policy(&read, vpc, None, 1));
    // A project ALLOW in the DROP's own category with a lower sequence number (10 is the
    // DROP's policy's): interleaved by category and sequence number it would come first.
    read.rules
        .push(allow_policy(&read, project, Some("Infrastructure"), 1));
    let (i, e) = eval_of(&read, false);
    assert_eq!(i.policies[4].policy.category, Category::Vpc);
    for from in CP {
        for to in CP.iter().filter(|t| **t != from) {
            let p = e.path(2380, from, to).unwrap();
            assert_eq!(rule_path(&p.outcome), Some(BLOCK), "{p:?}");
            // 2379: /infra's default-layer3-section, not flagged default here, is an
            // ordinary Application policy of /infra: before the project's and the VPC's.
            let p = e.path(2379, from, to).unwrap();
            assert_eq!(allowed_by(&p.outcome), Some(DEFAULT), "{p:?}");
        }
    }
    assert!(e.notes[0].contains("several trees"), "{:?}", e.notes);

    // Flagged `is_default` (as NSX flags it), /infra's default comes after the project's
    // ALLOW; the project's before the VPC's.
    read.rules[3].policy["is_default"] = json!(true);
    let (_, e) = eval_of(&read, false);
    let p = e.path(2379, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert_eq!(
        allowed_by(&p.outcome),
        Some(format!("{project}/rules/a").as_str()),
        "{p:?}"
    );
    // Without the project's, the VPC's ALLOW.
    read.rules.pop();
    let (_, e) = eval_of(&read, false);
    let p = e.path(2379, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert_eq!(
        allowed_by(&p.outcome),
        Some(format!("{vpc}/rules/a").as_str()),
        "{p:?}"
    );
}

/// Federation: how NSX orders the Global Manager's policies (`/global-infra`) against the
/// Local Manager's (`/infra`) inside one category is not documented for the DFW, so a global
/// ALLOW after the local DROP by sequence number, in the DROP's category, makes the check
/// "cannot decide" (interleaved by sequence number, the DROP would be named); in a later
/// category it is no rival, and the DROP is named.
#[test]
fn federations_global_and_local_policies_that_disagree_in_a_category_cannot_decide() {
    let global = "/global-infra/domains/default/security-policies/gm-allow";
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.rules
        .push(allow_policy(&read, global, Some("Infrastructure"), 20));
    let (_, e) = eval_of(&read, false);
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert!(
        matches!(&p.outcome, DfwPathOutcome::CannotDecide { why }
            if why.contains("the Global Manager's (/global-infra)") && why.contains("not documented")),
        "{p:?}"
    );
    assert!(e.blocking.is_empty(), "{:?}", e.blocking);
    if let Some(p) = read.rules.last_mut() {
        p.policy["category"] = json!("Application");
    }
    let (_, e) = eval_of(&read, false);
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert_eq!(rule_path(&p.outcome), Some(BLOCK), "{p:?}");
}

#[test]
fn a_policy_of_no_known_tree_has_no_known_place() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.rules.push(allow_policy(
        &read,
        "/elsewhere/security-policies/x",
        None,
        1,
    ));
    let (_, e) = eval_of(&read, false);
    for p in &e.paths {
        assert!(
            matches!(&p.outcome, DfwPathOutcome::CannotDecide { why } if why.contains("no tree")),
            "{p:?}"
        );
    }
}

#[test]
fn nested_services_ip_protocol_and_icmp() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.services.insert(
        "/infra/services/etcd-peer".into(),
        json!({"path": "/infra/services/etcd-peer", "service_entries": [
            {"resource_type": "ICMPTypeServiceEntry", "protocol": "ICMPv4"},
            {"resource_type": "NestedServiceServiceEntry",
             "nested_service_path": "/infra/services/all-tcp"}]}),
    );
    read.services.insert(
        "/infra/services/all-tcp".into(),
        json!({"path": "/infra/services/all-tcp", "service_entries": [
            {"resource_type": "IPProtocolServiceEntry", "protocol_number": 6}]}),
    );
    let (_, e) = eval_of(&read, false);
    // Every TCP port now: both ports dropped by the Infrastructure rule.
    for o in e.paths.iter().map(|p| &p.outcome) {
        assert_eq!(rule_path(o), Some(BLOCK), "{o:?}");
    }
    // A service nesting itself is bounded.
    read.services.insert(
        "/infra/services/all-tcp".into(),
        json!({"path": "/infra/services/all-tcp", "service_entries": [
            {"resource_type": "NestedServiceServiceEntry",
             "nested_service_path": "/infra/services/all-tcp"}]}),
    );
    let (_, e) = eval_of(&read, false);
    assert!(
        matches!(outcomes(&e, 2380)[0], DfwPathOutcome::CannotDecide { why } if why.contains("nested deeper"))
    );
}

#[test]
fn excluded_sources_match_everyone_else() {
    let read = world("infra-drop-2380.json", "vms.json");
    let mut vms = supervisor_vms(false);
    vms.push(SupervisorVm {
        node: "outsider".into(),
        vm_name: "outsider".into(),
        ips: vec!["10.0.0.99".parse().unwrap()],
        ..SupervisorVm::default()
    });
    let i = input(&read, &vms);
    assert!(
        i.findings.iter().any(|f| f.contains("outsider")),
        "{:?}",
        i.findings
    );
    let e = evaluate(&i);
    let env = "/infra/domains/default/security-policies/env-isolation/rules/only-cp-may-talk";
    // From outside the group to a member: the Environment DROP with sources_excluded.
    let p = e.path(2379, "outsider", "tkc-cp-1").unwrap();
    assert_eq!(rule_path(&p.outcome), Some(env), "{p:?}");
    // Between members it does not match.
    let p = e.path(2379, "tkc-cp-2", "tkc-cp-1").unwrap();
    assert_eq!(allowed_by(&p.outcome), Some(DEFAULT), "{p:?}");
    // To the outsider: its destination is not the group.
    let p = e.path(2379, "tkc-cp-1", "outsider").unwrap();
    assert_eq!(allowed_by(&p.outcome), Some(DEFAULT), "{p:?}");
}

/// Membership from NSX's group associations: a scope group defined on ports (nsx-operator's:
/// NSX lists no VM member for it) whose port list was not read applies where NSX says it holds
/// the VM's port, and nowhere else when the tree's answers were read whole; without them, or
/// with one answer not whole, the checks it could decide cannot be decided.
#[test]
fn group_associations_decide_a_scope_that_member_lists_cannot() {
    use crate::nsxmanager::raw::{Association, Members};
    let g = "/infra/domains/domain-c8/groups/ports-of-cp-2";
    let mut read = world("infra-drop-2380.json", "vms.json");
    with_rule(&mut read, "infra-hardening", |r| r["scope"] = json!([g]));
    read.groups.insert(
        g.into(),
        json!({"path": g, "expression": [{"resource_type": "Condition",
            "member_type": "SegmentPort", "key": "Tag", "operator": "EQUALS",
            "value": "capv/role|control-plane"}]}),
    );
    read.members.insert(
        g.into(),
        Members {
            ip_addresses: Some(Listed::default()),
            virtual_machines: Some(Listed::default()),
            segment_ports: None,
            gaps: Vec::new(),
        },
    );
    let blocked_at_cp2 = |e: &DfwEvaluation| {
        for p in e.paths.iter().filter(|p| p.port == 2380) {
            let at_cp2 = p.to == "tkc-cp-2" || p.from == "tkc-cp-2";
            assert_eq!(rule_path(&p.outcome).is_some(), at_cp2, "{p:?}");
            if !at_cp2 {
                assert_eq!(allowed_by(&p.outcome), Some(DEFAULT), "{p:?}");
            }
        }
    };
    // No association read: nowhere can the scope be told.
    let (_, e) = eval_of(&read, false);
    assert!(
        e.paths
            .iter()
            .filter(|p| p.port == 2380)
            .all(|p| matches!(&p.outcome, DfwPathOutcome::CannotDecide { why } if why.contains("segment-ports not read"))),
        "{:#?}",
        e.paths
    );
    // Every VM's and port's groups in /infra, whole: only tkc-cp-2's port is in it.
    for l in &mut read.vms {
        let field = |kind: &str, key: &str| {
            l.found
                .iter()
                .find(|v| v["resource_type"] == kind)
                .and_then(|v| v[key].as_str())
                .unwrap()
                .to_string()
        };
        let (ext, port) = (
            field("VirtualMachine", "external_id"),
            field("SegmentPort", "path"),
        );
        let groups = if l.node == "tkc-cp-2" {
            vec![json!({"target_id": g, "target_type": "Group", "is_valid": true})]
        } else {
            vec![]
        };
        l.associations = vec![
            Association {
                root: "/infra".into(),
                by: "vm_external_id".into(),
                key: ext,
                listed: Listed {
                    result_count: Some(0),
                    ..Listed::default()
                },
            },
            Association {
                root: "/infra".into(),
                by: "intent_path".into(),
                key: port,
                listed: Listed {
                    result_count: Some(groups.len() as u64),
                    results: groups,
                    incomplete: None,
                },
            },
        ];
    }
    let (i, e) = eval_of(&read, false);
    assert_eq!(
        i.vms[1].memberships.holds(g),
        Some(true),
        "{:?}",
        i.vms[1].memberships
    );
    blocked_at_cp2(&e);
    // tkc-cp-1's port's answer not whole (a 403): the checks at its vNIC cannot be decided.
    read.vms[0].associations[1].listed.incomplete = Some(Gap {
        path: "/policy/api/v1/infra/group-associations".into(),
        status: Some(403),
        why: "refused".into(),
        privilege: None,
    });
    let (_, e) = eval_of(&read, false);
    let p = e.path(2380, "tkc-cp-3", "tkc-cp-1").unwrap();
    assert!(
        matches!(&p.outcome, DfwPathOutcome::CannotDecide { .. }),
        "{p:?}"
    );
    let p = e.path(2380, "tkc-cp-1", "tkc-cp-2").unwrap();
    assert_eq!(rule_path(&p.outcome), Some(BLOCK), "{p:?}");
}
