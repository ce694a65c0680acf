//! The NSX MANAGER section from sections built as a run builds them (the API fixtures in
//! `tests/fixtures/nsx-manager/api/`), hostile ones escaped and bounded, and the `diagnose`
//! table and JSON unchanged without it.

use super::*;
use crate::nsxmanager::model::tests::{traceflow, world};
use crate::nsxmanager::raw::{Gap, TraceflowRead};
use crate::render::{output, Format, Paint};
use crate::report::v1alpha2::nsx_manager::tests::{infra_drop, infra_drop_traced, section_of};
use crate::report::v1alpha2::{DfwAction, DfwBlockingRule, NsxGap, NsxTraceflow};
use crate::report::DiagnoseReport;

const OFF: Paint = Paint { on: false };

fn text(n: &NsxManager, wide: bool) -> String {
    let mut out = Lines::new(OFF);
    section(&mut out, n, wide);
    out.finish()
}

#[test]
fn the_rule_that_drops_is_named_with_its_category_sequence_pairs_and_traceflow() {
    let t = text(&infra_drop(), false);
    assert!(
        t.contains("NSX MANAGER (https://nsx.example, infra/domains/default: the distributed firewall on TCP 2379/2380 between the 3 control-plane VMs):"),
        "{t}"
    );
    assert!(t.contains("  DROPS \"block etcd peer\" (/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer; category Infrastructure, policy \"Infra hardening\" sequence 10, rule sequence 10, rule id 3021) on TCP 2380"), "{t}");
    assert!(
        t.contains("      2380: every path between the 3 VMs (6 of 6)"),
        "{t}"
    );
    assert!(!t.contains("shows no rule"), "{t}");
    // The traceflow's row: dropped at the DFW by the same rule, agreeing, deleted.
    let row = t
        .lines()
        .find(|l| l.starts_with("tkc-cp-1"))
        .unwrap_or_else(|| panic!("{t}"));
    for word in ["2380", "dropped at DFW (FW_RULE)", "block etcd peer", "yes"] {
        assert!(row.contains(word), "{row}");
    }
    assert!(!t.contains("not deleted"), "{t}");
    // -o wide: every path and every VM.
    let w = text(&infra_drop(), true);
    assert!(w.contains("OUTCOME"), "{w}");
    assert!(w.contains("cannot decide") || w.contains("dropped"), "{w}");
    assert!(w.contains("SEGMENT PORT"), "{w}");
    assert!(
        w.lines().filter(|l| l.contains("allowed")).count() >= 6,
        "{w}"
    );
}

#[test]
fn no_visible_drop_says_so_with_what_was_read_and_the_rule_not_blamed() {
    let t = text(
        &section_of(&world("allow-before-drop.json", "vms.json"), None),
        false,
    );
    assert!(
        t.contains("  NSX Manager shows no rule that drops these paths (read: 3 security policies"),
        "{t}"
    );
    assert!(t.contains("  not blamed: "), "{t}");
    assert!(t.contains("but \"allow-etcd\" ("), "{t}");
    assert!(!t.contains("DROPS"), "{t}");
}

#[test]
fn undecided_paths_unread_parts_and_a_traceflow_left_behind_are_said() {
    let mut read = world("members-unread.json", "vms-mismatch.json");
    read.gaps.push(Gap {
        path: "/policy/api/v1/infra/domains/default/groups/unknown-sources/members/ip-addresses"
            .into(),
        status: Some(403),
        why: "NSX Manager refused the account (403)".into(),
        privilege: Some("read access to Security (…): NSX's read-only Auditor role has it".into()),
    });
    read.traceflows.push(TraceflowRead {
        deleted: false,
        ..traceflow("traceflow-delivered.json", "tkc-cp-1", "tkc-cp-2", 2380)
    });
    let t = text(&section_of(&read, None), false);
    assert!(t.contains("  cannot decide 12 path(s) ("), "{t}");
    assert!(t.contains("unknown-sources"), "{t}");
    assert!(
        t.contains(
            "(HTTP 403); needs read access to Security (…): NSX's read-only Auditor role has it"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "not deleted: /infra/traceflows/etcdnet-0123456789abcdef is left on NSX Manager"
        ),
        "{t}"
    );
    assert!(t.contains("tkc-cp-3: not found in NSX Manager: "), "{t}");
    assert!(t.contains("  finding: "), "{t}");
}

/// A traceflow delivered where the evaluation names a DROP disagrees, and says why.
#[test]
fn a_traceflow_that_disagrees_is_said() {
    let read = infra_drop_traced("traceflow-delivered.json");
    let t = text(&section_of(&read, None), false);
    let row = t
        .lines()
        .find(|l| l.starts_with("tkc-cp-1"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(row.contains("delivered") && row.contains("NO"), "{row}");
    assert!(
        t.contains("  tkc-cp-1 → tkc-cp-2:2380: disagrees: delivered, but the evaluation names \"block etcd peer\""),
        "{t}"
    );
}

/// A manager's names are someone else's input: escapes and huge strings are neither acted on
/// nor allowed to flood the table.
#[test]
fn hostile_names_are_escaped_and_bounded() {
    let mut n = infra_drop();
    let evil = format!(
        "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}{}",
        "x".repeat(100_000)
    );
    n.manager = evil.clone();
    n.layout = evil.clone();
    n.note = Some(evil.clone());
    n.summary = evil.clone();
    n.notes = vec![evil.clone()];
    n.findings = (0..40).map(|_| evil.clone()).collect();
    let mut b: DfwBlockingRule = n.blocking[0].clone();
    b.rule.display_name = Some(evil.clone());
    b.rule.path = evil.clone();
    b.rule.policy_name = evil.clone();
    b.rule.action = DfwAction::Reject;
    for p in &mut b.paths {
        p.from = evil.clone();
    }
    n.blocking = vec![b; 20];
    n.gaps = (0..20)
        .map(|_| NsxGap {
            path: evil.clone(),
            status: Some(403),
            why: evil.clone(),
            privilege: Some(evil.clone()),
        })
        .collect();
    let t0: NsxTraceflow = n.traceflows[0].clone();
    n.traceflows = vec![
        NsxTraceflow {
            from: evil.clone(),
            to: evil.clone(),
            deleted: false,
            path: Some(evil.clone()),
            ..t0
        };
        3
    ];
    for v in &mut n.vms {
        v.node = evil.clone();
        v.why = Some(evil.clone());
        v.identity = NsxIdentityState::Ambiguous;
        v.port = Some(evil.clone());
    }
    for wide in [false, true] {
        let t = text(&n, wide);
        assert!(
            !t.chars()
                .any(|c| c != '\n' && (c.is_control() || c == '\u{202e}')),
            "a control or bidi character reached the table"
        );
        assert!(t.contains("\\x1b]0;owned\\x07"), "not shown escaped");
        assert!(t.contains("\\u{202e}"), "not shown escaped");
        // Every line bounded: a cut of 1024 characters (a cell of 160), each at most a few
        // characters once escaped, and a table row of seven cells.
        for l in t.lines() {
            assert!(l.chars().count() <= 4 * 1024 + 64, "{}", l.chars().count());
        }
        assert!(t.contains("REJECTS"));
        assert!(t.contains("and 12 more rules (-o json: nsxManager.blocking)"));
        assert!(t.contains("and 12 more parts not read"));
        assert!(t.contains("and 32 more findings"));
        assert!(t.len() < 400_000, "{}", t.len());
    }
}

use crate::testing::peers_dropped;

/// Without `--nsx-manager` every output is what it was; with it, the table has the section
/// and the JSON the field, which reads back.
#[test]
fn diagnose_without_nsx_manager_is_unchanged_and_with_it_shows_the_section() {
    let plain = peers_dropped();
    let same = plain.clone().with_nsx_manager(None);
    assert_eq!(same, plain);
    for format in [Format::Json, Format::Yaml, Format::Table, Format::Wide] {
        let a = output(&plain, format, OFF).unwrap();
        let b = output(&same, format, OFF).unwrap();
        assert_eq!(a, b);
        assert!(
            !a.contains("nsxManager") && !a.contains("NSX MANAGER"),
            "{a}"
        );
    }
    let with = plain.with_nsx_manager(Some(infra_drop()));
    let table = output(&with, Format::Table, OFF).unwrap();
    let at = table
        .find("NSX MANAGER (")
        .unwrap_or_else(|| panic!("{table}"));
    assert!(at < table.find("VERDICT: ").unwrap(), "{table}");
    let json = output(&with, Format::Json, OFF).unwrap();
    assert!(json.contains("\"nsxManager\": {"), "{json}");
    let back: DiagnoseReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, with);
}
