//! NSX Manager's view joined to a diagnosis, on the API answers of
//! `tests/fixtures/nsx-manager/api/` against the three VMs `tkc-cp-1..3` (the nodes' names).

use super::*;
use crate::analyse::matrix::CellState;
use crate::analyse::network::tests::diagnosis_of;
use crate::analyse::verdict::VerdictCode;
use crate::nsxmanager::model::tests::{supervisor_vms, traceflow, world};
use crate::nsxmanager::raw::{Listed, TraceflowRead};

const CP: [&str; 3] = ["tkc-cp-1", "tkc-cp-2", "tkc-cp-3"];

fn joined(read: &NsxRead, code: VerdictCode) -> Diagnosis {
    let mut d = diagnosis_of(&CP, code, Some((2380, CellState::Timeout)));
    join(&mut d, &assess(read, &supervisor_vms(false)));
    d
}

/// The Infrastructure DROP of TCP 2380 between the control plane's group: the first evidence
/// names it (path, category) over all six failing paths, fixing it is the first step, the
/// verdict's code and its own lines stay.
#[test]
fn the_rule_that_drops_the_failing_paths_leads_the_evidence() {
    let d = joined(
        &world("infra-drop-2380.json", "vms.json"),
        VerdictCode::EtcdPeerNetworkBlocked,
    );
    let v = &d.verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked);
    let first = &v.evidence[0];
    assert!(
        first.starts_with("NSX Manager's distributed firewall rule \"block etcd peer\"")
            && first.contains(
                "/infra/domains/default/security-policies/infra-hardening/rules/block-etcd-peer"
            )
            && first.contains("category Infrastructure")
            && first.contains("drops TCP 2380 on 6 of the 6 failing paths"),
        "{:#?}",
        v.evidence
    );
    assert_eq!(v.evidence.last().unwrap(), "first");
    assert!(
        v.next_steps[0]
            .starts_with("Have NSX Manager's distributed firewall rule \"block etcd peer\""),
        "{:#?}",
        v.next_steps
    );
    assert_eq!(v.next_steps.last().unwrap(), "open the ports");
    assert!(!v.evidence.iter().any(|l| l.contains("shows no rule")));
}

/// An Environment ALLOW before an Application DROP: the DROP is not blamed, and the evidence
/// says NSX Manager shows no rule that drops the paths, with what was read.
#[test]
fn an_allow_that_comes_first_is_not_blamed() {
    let d = joined(
        &world("allow-before-drop.json", "vms.json"),
        VerdictCode::EtcdPeerNetworkBlocked,
    );
    let v = &d.verdict;
    assert!(
        !v.evidence
            .iter()
            .any(|l| l.starts_with("NSX Manager's distributed firewall rule")),
        "{:#?}",
        v.evidence
    );
    assert!(
        v.evidence[0].starts_with("NSX Manager shows no rule that drops these paths (read: "),
        "{:#?}",
        v.evidence
    );
    assert_eq!(v.next_steps, ["open the ports"]);
}

/// Members that could not be read: the paths cannot be decided, said with why; never a rule
/// named, never "no rule".
#[test]
fn members_not_read_leave_the_paths_undecided() {
    let d = joined(
        &world("members-unread.json", "vms.json"),
        VerdictCode::EtcdPeerNetworkBlocked,
    );
    let v = &d.verdict;
    assert!(
        v.evidence
            .iter()
            .any(|l| l.contains("cannot be decided from NSX Manager's distributed firewall")),
        "{:#?}",
        v.evidence
    );
    assert!(!v.evidence.iter().any(|l| l.contains("shows no rule")));
    assert!(!v
        .evidence
        .iter()
        .any(|l| l.starts_with("NSX Manager's distributed firewall rule")));
}

/// A traceflow delivered on a path the probe saw time out: the drop is inside the guest; one
/// dropped by the rule: named.
#[test]
fn traceflows_are_evidence_and_a_delivered_one_points_inside_the_guest() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    read.traceflows = vec![
        traceflow("traceflow-delivered.json", CP[0], CP[1], 2380),
        traceflow("traceflow-dropped.json", CP[1], CP[2], 2380),
    ];
    let d = joined(&read, VerdictCode::EtcdPeerNetworkBlocked);
    let v = &d.verdict;
    assert!(
        v.evidence
            .iter()
            .any(|l| l.contains("delivered") && l.contains("inside the guest")),
        "{:#?}",
        v.evidence
    );
    assert!(
        v.evidence
            .iter()
            .any(|l| l.contains("dropped at") && l.contains("FW_RULE")),
        "{:#?}",
        v.evidence
    );
}

/// Traceflows the manager refused to create (403: an Auditor may not run Traceflow): one note
/// naming the privilege, no undecided traceflow line a pair; the DFW's rule still leads.
#[test]
fn refused_traceflows_are_one_note_naming_the_privilege() {
    let mut read = world("infra-drop-2380.json", "vms.json");
    let refused = |from: &str, to: &str| TraceflowRead {
        status: None,
        observations: Listed::default(),
        deleted: false,
        gaps: vec![crate::nsxmanager::raw::Gap {
            path: "/infra/traceflows/etcdnet-1".into(),
            status: Some(403),
            why: "NSX Manager refused the account (403): no permission".into(),
            privilege: Some("a role that may run Traceflow".into()),
        }],
        ..traceflow("traceflow-dropped.json", from, to, 2380)
    };
    read.traceflows = vec![refused(CP[0], CP[1]), refused(CP[1], CP[2])];
    let d = joined(&read, VerdictCode::EtcdPeerNetworkBlocked);
    let v = &d.verdict;
    assert!(
        v.evidence[0].starts_with("NSX Manager's distributed firewall rule"),
        "{:#?}",
        v.evidence
    );
    assert!(
        !v.evidence.iter().any(|l| l.starts_with("traceflow ")),
        "{:#?}",
        v.evidence
    );
    assert_eq!(
        v.notes,
        ["NSX Manager: traceflows not run: NSX Manager refused the account (403): no permission; needs a role that may run Traceflow"]
    );
}

/// A Healthy verdict: nothing is added to the evidence or the steps.
#[test]
fn a_healthy_verdict_is_left_alone() {
    let mut d = diagnosis_of(&CP, VerdictCode::Healthy, None);
    join(
        &mut d,
        &assess(
            &world("infra-drop-2380.json", "vms.json"),
            &supervisor_vms(false),
        ),
    );
    assert_eq!(d.verdict.evidence, ["first"]);
    assert_eq!(d.verdict.next_steps, ["open the ports"]);
}
