//! What NSX Manager enforces, applied to the evaluation of `infra-drop-2380.json` (an
//! Infrastructure DROP of TCP 2380 between the three VMs `tkc-cp-1..3`).

use serde_json::json;

use super::*;
use crate::analyse::dfw::evaluate;
use crate::nsxmanager::identify::input;
use crate::nsxmanager::model::tests::{supervisor_vms, world};
use crate::nsxmanager::raw::{
    EnforcementRead, Gap, Listed, Members, PolicyStatistics, StatisticsRead,
};

const RULE: &str = "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer";
const POLICY: &str = "/infra/domains/default/security-policies/infra-hardening";

fn judged(read: &NsxRead) -> (DfwEvaluation, Enforcement) {
    let i = input(read, &supervisor_vms(false));
    let mut e = evaluate(&i);
    let x = apply(&mut e, &i, read);
    (e, x)
}

fn enabled(members: Vec<&str>) -> EnforcementRead {
    EnforcementRead {
        settings: Some(
            json!({"resource_type": "DfwFirewallConfiguration", "enable_firewall": true}),
        ),
        exclude_list: Some(json!({"resource_type": "PolicyExcludeList", "members": members})),
        system_members: true,
        ..EnforcementRead::default()
    }
}

fn group_of(vms: &[&str]) -> Members {
    Members {
        virtual_machines: Some(Listed {
            results: vms.iter().map(|id| json!({"id": id})).collect(),
            result_count: Some(vms.len() as u64),
            incomplete: None,
        }),
        segment_ports: Some(Listed::default()),
        ..Members::default()
    }
}

fn forbidden(path: &str) -> Gap {
    Gap {
        path: path.into(),
        status: Some(403),
        why: "NSX Manager refused the account (403)".into(),
        privilege: Some("read access to Security".into()),
    }
}

#[test]
fn without_the_reading_nothing_changes() {
    let read = world("infra-drop-2380.json", "vms.json");
    let (e, x) = judged(&read);
    assert!(!x.read);
    assert_eq!(e.blocking.len(), 1);
    assert!(x.hits.is_empty() && x.not_enforced.is_empty());
    assert_eq!(x.hits_text(&e.blocking[0].rule), "");
}

#[test]
fn an_excluded_vm_enforces_nothing_at_its_vnic() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let mut en = enabled(vec!["/infra/domains/default/groups/excluded"]);
    en.groups.insert(
        "/infra/domains/default/groups/excluded".into(),
        group_of(&["5012-1"]),
    );
    read.enforcement = Some(en.clone());
    let (e, x) = judged(&read);
    // tkc-cp-1's own checks meet no rule, but every path has another end whose check still
    // drops it: the rule is blamed for all six, nothing is "not enforced".
    assert_eq!(e.blocking.len(), 1);
    assert_eq!(e.blocking[0].paths.len(), 6);
    assert!(x.not_enforced.is_empty(), "{:?}", x.not_enforced);
    for p in e.paths.iter().filter(|p| p.from == "tkc-cp-1") {
        assert_eq!(p.egress, DfwSideOutcome::NoVisibleRule);
    }
    // Both ends of a path excluded: the path is not blocked, the rule not enforced there.
    en.groups.insert(
        "/infra/domains/default/groups/excluded".into(),
        group_of(&["5012-1", "5012-2"]),
    );
    read.enforcement = Some(en);
    let (e, x) = judged(&read);
    for p in e.paths.iter().filter(|p| p.port == 2380) {
        let both = [&p.from, &p.to]
            .iter()
            .all(|n| *n == "tkc-cp-1" || *n == "tkc-cp-2");
        assert_eq!(p.outcome.blocking_rule().is_none(), both, "{p:?}");
    }
    assert_eq!(e.blocking[0].paths.len(), 4);
    assert_eq!(x.not_enforced.len(), 1);
    let why = &x.not_enforced[0].why;
    assert!(
        why.contains("tkc-cp-1 is in the DFW exclusion list (through group /infra/domains/default/groups/excluded)")
            && why.contains("tkc-cp-2 is in the DFW exclusion list"),
        "{why}"
    );
    assert_eq!(x.not_enforced[0].paths.len(), 2);
    assert!(
        e.summary.contains("not enforced elsewhere"),
        "{}",
        e.summary
    );
}

#[test]
fn a_disabled_dfw_blames_nothing() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let mut en = enabled(vec![]);
    en.settings = Some(json!({"enable_firewall": false}));
    read.enforcement = Some(en);
    let (e, x) = judged(&read);
    assert!(e.blocking.is_empty());
    assert!(e.paths.iter().all(|p| p.outcome.blocking_rule().is_none()));
    assert_eq!(x.not_enforced.len(), 1);
    assert_eq!(x.not_enforced[0].paths.len(), 6);
    assert!(e.summary.contains("the DFW is disabled"), "{}", e.summary);
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("none of its rules is enforced")));
}

#[test]
fn unreadable_is_unknown_never_not_enforced() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.enforcement = Some(EnforcementRead {
        settings_gap: Some(forbidden("/policy/api/v1/infra/settings/firewall/security")),
        exclude_list_gap: Some(forbidden(
            "/policy/api/v1/infra/settings/firewall/security/exclude-list",
        )),
        ..EnforcementRead::default()
    });
    let (e, x) = judged(&read);
    assert_eq!(e.blocking.len(), 1);
    assert_eq!(e.blocking[0].paths.len(), 6);
    assert!(x.not_enforced.is_empty());
    assert!(e
        .notes
        .iter()
        .any(|n| n.starts_with("whether the DFW is enabled is unknown")));
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("the DFW exclusion list could not be read")));
    // A group whose members were not read whole: unknown too.
    let mut en = enabled(vec!["/infra/domains/default/groups/g"]);
    let mut g = group_of(&[]);
    g.gaps.push(forbidden(
        "/policy/api/v1/infra/domains/default/groups/g/members/virtual-machines",
    ));
    en.groups
        .insert("/infra/domains/default/groups/g".into(), g);
    read.enforcement = Some(en);
    let (e, x) = judged(&read);
    assert_eq!(e.blocking[0].paths.len(), 6);
    assert!(
        x.excluded
            .iter()
            .all(|(_, s)| matches!(s, Excluded::Unknown(_))),
        "{:?}",
        x.excluded
    );
}

fn stats(hits: u64) -> serde_json::Value {
    json!({"results": [{"enforcement_point": "/infra/sites/default/enforcement-points/default",
        "statistics": {"results": [{"rule": RULE, "hit_count": hits, "packet_count": hits}]}}],
        "result_count": 1})
}

#[test]
fn a_hit_count_that_grew_proves_the_drop() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.statistics = Some(StatisticsRead {
        policies: vec![PolicyStatistics {
            path: POLICY.into(),
            before: Some(stats(40)),
            after: Some(stats(46)),
            ..PolicyStatistics::default()
        }],
        gaps: Vec::new(),
    });
    let (e, x) = judged(&read);
    assert_eq!(x.hits_of(&e.blocking[0].rule), Some(&Hits::Grew(6)));
    assert!(x
        .hits_text(&e.blocking[0].rule)
        .starts_with("; proven: +6 hits"));
    read.statistics.as_mut().unwrap().policies[0].after = Some(stats(40));
    let (e, x) = judged(&read);
    assert_eq!(x.hits_of(&e.blocking[0].rule), Some(&Hits::Same));
    assert!(x
        .hits_text(&e.blocking[0].rule)
        .starts_with("; matched, not proven: its hit count did not grow"));
    let p = &mut read.statistics.as_mut().unwrap().policies[0];
    p.after = None;
    p.after_gap = Some(forbidden(&format!("/policy/api/v1{POLICY}/statistics")));
    let (e, x) = judged(&read);
    let t = x.hits_text(&e.blocking[0].rule);
    assert!(
        t.starts_with("; matched, not proven: its hit counters could not be read (")
            && t.contains("403"),
        "{t}"
    );
    // A counter that went down (reset): not comparable.
    let p = &mut read.statistics.as_mut().unwrap().policies[0];
    p.after = Some(stats(1));
    p.after_gap = None;
    let (e, x) = judged(&read);
    assert!(matches!(
        x.hits_of(&e.blocking[0].rule),
        Some(Hits::NotRead(_))
    ));
}

/// NSX's group associations for `node`'s VM and port, answered whole under `/infra`: the
/// VM's in `vm_groups`, its port's in `port_groups`.
fn associate(read: &mut NsxRead, node: &str, vm_groups: &[&str], port_groups: &[&str]) {
    use crate::nsxmanager::raw::Association;
    let i = input(read, &supervisor_vms(false));
    let vm = i.vms.iter().find(|v| v.node == node).unwrap();
    let ext = vm.nsx_vm.as_ref().unwrap().external_id.clone().unwrap();
    let port = vm.port.as_ref().unwrap().path.clone().unwrap();
    let answer = |groups: &[&str]| Listed {
        results: groups.iter().map(|g| json!({"target_id": g})).collect(),
        result_count: Some(groups.len() as u64),
        incomplete: None,
    };
    let lookup = read.vms.iter_mut().find(|l| l.node == node).unwrap();
    lookup.associations = vec![
        Association {
            root: "/infra".into(),
            by: "vm_external_id".into(),
            key: ext,
            listed: answer(vm_groups),
        },
        Association {
            root: "/infra".into(),
            by: "intent_path".into(),
            key: port,
            listed: answer(port_groups),
        },
    ];
}

/// The exclusion by NSX's group associations first (any group type: one defined on ports, as
/// nsx-operator's are, whose VM member list answers empty), member lists only where the
/// group's type makes them tell, else unknown, never "not excluded".
#[test]
fn exclusion_by_the_associations_first_then_lists_that_tell_else_unknown() {
    const G: &str = "/infra/domains/default/groups/excluded";
    let mut read = world("infra-drop-2380.json", "vms.json");
    // The group's VM list answers empty (a group of ports), its port list is not read.
    let mut en = enabled(vec![G]);
    en.groups.insert(G.into(), group_of(&[]));
    read.enforcement = Some(en);

    // No association read, the group's type unknown (no rule names it): member lists that do
    // not hold the VM prove nothing: unknown for every VM.
    let (e, x) = judged(&read);
    assert_eq!(e.blocking[0].paths.len(), 6);
    assert!(
        x.excluded.iter().all(
            |(_, s)| matches!(s, Excluded::Unknown(w) if w.contains("member lists do not tell"))
        ),
        "{:?}",
        x.excluded
    );

    // NSX's associations say the ports of tkc-cp-1 and tkc-cp-2 are in it (the lists do not):
    // both excluded, the paths between them not blocked, the rule not enforced there.
    associate(&mut read, "tkc-cp-1", &[], &[G]);
    associate(
        &mut read,
        "tkc-cp-2",
        &[],
        &["/infra/domains/default/groups/other", G],
    );
    // tkc-cp-3's answers read whole and not holding it: not excluded (the lists alone could
    // not have said so).
    associate(
        &mut read,
        "tkc-cp-3",
        &["/infra/domains/default/groups/other"],
        &[],
    );
    let (e, x) = judged(&read);
    let state = |n: &str| x.excluded.iter().find(|(m, _)| m == n).unwrap().1.clone();
    for n in ["tkc-cp-1", "tkc-cp-2"] {
        assert!(
            matches!(state(n), Excluded::Yes(w) if w.contains("(through group /infra/domains/default/groups/excluded), as NSX's group associations say")),
            "{n}: {:?}",
            state(n)
        );
    }
    assert_eq!(state("tkc-cp-3"), Excluded::No);
    assert_eq!(e.blocking[0].paths.len(), 4);
    assert_eq!(x.not_enforced.len(), 1);
    assert_eq!(x.not_enforced[0].paths.len(), 2);

    // Associations whole and not holding the VM outweigh a member list: not excluded.
    let mut en = enabled(vec![G]);
    en.groups.insert(G.into(), group_of(&["5012-9"]));
    read.enforcement = Some(en);
    associate(&mut read, "tkc-cp-1", &[], &[]);
    let (_, x) = judged(&read);
    assert_eq!(
        x.excluded.iter().find(|(m, _)| m == "tkc-cp-1").unwrap().1,
        Excluded::No
    );

    // The associations not read whole (a page refused): what they hold still holds
    // (tkc-cp-2); else back to the lists, which do not tell for a group of unknown type:
    // unknown, never "not excluded".
    for l in &mut read.vms {
        for a in &mut l.associations {
            a.listed.incomplete = Some(forbidden("/policy/api/v1/infra/group-associations"));
        }
    }
    let (_, x) = judged(&read);
    for (n, s) in &x.excluded {
        match n.as_str() {
            "tkc-cp-2" => assert!(matches!(s, Excluded::Yes(_)), "{s:?}"),
            _ => assert!(
                matches!(s, Excluded::Unknown(w) if w.contains("not read whole")),
                "{n}: {s:?}"
            ),
        }
    }

    // A group of VMs (its definition read: a rule names it) whose lists are read whole and do
    // not hold the VM: the lists tell, not excluded; one whose VM list holds it: excluded.
    const VMS: &str = "/infra/domains/default/groups/tkc-cp";
    for l in &mut read.vms {
        l.associations.clear();
    }
    let mut en = enabled(vec![VMS]);
    en.groups.insert(VMS.into(), group_of(&["5012-1"]));
    read.enforcement = Some(en);
    let (_, x) = judged(&read);
    for (n, s) in &x.excluded {
        match n.as_str() {
            "tkc-cp-1" => assert!(
                matches!(s, Excluded::Yes(w) if w.contains("through group")),
                "{s:?}"
            ),
            _ => assert_eq!(s, &Excluded::No, "{n}"),
        }
    }
}

/// The VPC's project's own exclusion list holding every VM: its reach over the provider's
/// rules is not documented, so the provider's (`/infra`) DROP stays blamed, and a note says
/// its enforcement is not confirmed; in the JSON the VMs are excluded.
#[test]
fn a_projects_list_leaves_the_providers_rules_named_and_says_so() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let group = "/orgs/default/projects/p/infra/domains/default/groups/excluded";
    let mut en = enabled(vec![]);
    en.project = Some(crate::nsxmanager::raw::ProjectExcludeList {
        project: "/orgs/default/projects/p".into(),
        list: Some(json!({"resource_type": "PolicyExcludeList", "members": [group]})),
        gap: None,
    });
    en.groups
        .insert(group.into(), group_of(&["5012-1", "5012-2", "5012-3"]));
    read.enforcement = Some(en);
    let (e, x) = judged(&read);
    assert_eq!(e.blocking.len(), 1);
    assert_eq!(e.blocking[0].rule.path, RULE);
    assert_eq!(e.blocking[0].paths.len(), 6);
    assert!(x.not_enforced.is_empty(), "{:?}", x.not_enforced);
    assert_eq!(x.project_excluded.len(), 3);
    assert!(
        e.notes.iter().any(
            |n| n.contains("is in project p's DFW exclusion list (through group")
                && n.contains("whether the provider's (/infra) rules are is not documented")
        ),
        "{:?}",
        e.notes
    );
}
