//! The network read joined to the output, through the real kubectl on the nsx
//! sets: `status` shows the SecurityPolicy evaluation and the realization problems (JSON field
//! `networkPolicy`, the finding codes, the NETWORK POLICY section); `diagnose --dry-run` says
//! them as warnings; a diagnosis whose peers time out on 2380 names the policy that drops them,
//! and its bundle, `analyse`d, keeps `networkPolicy`.

use crate::common;

use std::path::Path;

use common::*;
use etcdnet::report::v1alpha2::{FindingCode, VerdictCode};
use etcdnet::report::StatusReport;

// The nsx sets hold the article's cluster (the objects of healthy-v1alpha3).
use common::article::{CLUSTER, CP, NS};

fn codes(r: &StatusReport) -> Vec<FindingCode> {
    r.findings.iter().map(|f| f.code).collect()
}

/// nsx-vpc: drop-etcd-peers blocks every path, drop-etcd-egress is shadowed and
/// drop-etcd-pending not realized (warnings), bx2lk's SubnetPort failed.
#[test]
fn status_on_nsx_vpc_shows_the_evaluation() {
    let env = Env::new("nsx-vpc", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    let r = run.status_report();
    let a = r.network_policy.as_ref().expect("networkPolicy");
    assert_eq!(a.evaluation.policies.len(), 5);
    assert!(a.unread.is_empty(), "{:?}", a.unread);
    let codes = codes(&r);
    assert!(
        codes.contains(&FindingCode::SecurityPolicyBlocksEtcd),
        "{codes:?}"
    );
    assert!(
        codes.contains(&FindingCode::SecurityPolicyWouldBlockEtcd),
        "{codes:?}"
    );
    let port = r
        .findings
        .iter()
        .find(|f| f.code == FindingCode::NetworkNotRealized)
        .expect("the failed SubnetPort");
    assert_eq!(port.node.as_deref(), Some(CP[2]));
    let blocks = r
        .findings
        .iter()
        .find(|f| f.code == FindingCode::SecurityPolicyBlocksEtcd)
        .unwrap();
    assert!(
        blocks.message.contains("ns-prod/drop-etcd-peers")
            && blocks.message.contains("priority 10"),
        "{}",
        blocks.message
    );
    assert_eq!(run.json()["networkPolicy"]["evaluation"]["namespace"], NS);

    let table = env.kubectl(&["status", CLUSTER, "-n", NS]);
    table.expect_code(1);
    for want in [
        "NETWORK POLICY",
        "BLOCKS SecurityPolicy ns-prod/drop-etcd-peers",
        "WOULD BLOCK",
        "NOT REALIZED SubnetPort",
        "read: ",
    ] {
        assert!(table.stdout.contains(want), "{want}:\n{}", table.stdout);
    }
    let wide = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "wide"]);
    assert!(
        wide.stdout
            .contains("Policies that select the control-plane VMs")
            && wide.stdout.contains("ns-prod/allow-apiserver"),
        "{}",
        wide.stdout
    );

    let dry = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    dry.expect_code(0);
    assert!(
        dry.stderr
            .contains("warning: cluster tkc-prod: SecurityPolicyBlocksEtcd: SecurityPolicy ns-prod/drop-etcd-peers"),
        "{}",
        dry.stderr
    );
}

/// nsx-ncp: the legacy group's policy blocks 2380, the VirtualNetwork is fine.
#[test]
fn status_on_nsx_ncp_names_the_legacy_policy() {
    let env = Env::new("nsx-ncp", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    let r = run.status_report();
    assert_eq!(codes(&r), [FindingCode::SecurityPolicyBlocksEtcd]);
    assert!(
        r.findings[0]
            .message
            .contains("(nsx.vmware.com, priority 10")
            && r.findings[0].message.contains("TCP 2380"),
        "{}",
        r.findings[0].message
    );
    let dry = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    dry.expect_code(0);
    assert!(dry.stderr.contains("drop-etcd-peer"), "{}", dry.stderr);
}

/// nsx-vpc-forbidden: no policy read, the note says which request was refused; the SubnetPort
/// is still a finding.
#[test]
fn status_on_nsx_vpc_forbidden_says_what_was_not_read() {
    let env = Env::new("nsx-vpc-forbidden", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    let r = run.status_report();
    let a = r.network_policy.as_ref().unwrap();
    assert!(a.evaluation.policies.is_empty());
    assert_eq!(
        a.unread,
        ["list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden"]
    );
    assert_eq!(codes(&r), [FindingCode::NetworkNotRealized]);
    let table = env.kubectl(&["status", CLUSTER, "-n", NS]);
    assert!(
        table.stdout.contains(
            "could not read: list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden"
        ),
        "{}",
        table.stdout
    );
    let dry = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    dry.expect_code(0);
    assert!(
        dry.stderr
            .contains("warning: cluster tkc-prod: network not read: list securitypolicies"),
        "{}",
        dry.stderr
    );
}

/// `diagnose --via jumpbox --bundle` on `set` with every VM's peers timing out on 2380: the
/// env, the run (`-o json`) and the bundle's path.
fn diagnose_2380_dropped(set: &str) -> (Env, Run, std::path::PathBuf) {
    let env = Env::new(set, Workload::black_hole());
    env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
    let bundle = env.dir.path().join("tkc-prod.tar.gz");
    let live = crate::bundle::diagnose(&env, &bundle, &["-o", "json"]);
    (env, live, bundle)
}

fn analyse_json(env: &Env, bundle: &Path) -> Run {
    crate::bundle::analyse_offline(env, bundle, &["-o", "json"])
}

/// The peers time out on 2380 on nsx-vpc: the verdict's evidence names drop-etcd-peers, its
/// first next step is to fix it; the bundle, analysed, keeps `networkPolicy` and says the same.
#[test]
fn a_diagnosis_names_the_dropping_policy_and_its_bundle_keeps_it() {
    let (env, live, bundle) = diagnose_2380_dropped("nsx-vpc");
    live.expect_code(1);
    let report = live.diagnose_report();
    assert!(
        matches!(
            report.verdict.code,
            VerdictCode::EtcdPeerNetworkPartial | VerdictCode::EtcdPeerNetworkBlocked
        ),
        "{:#?}",
        report.verdict
    );
    assert!(
        report.verdict.evidence[0].starts_with(
            "SecurityPolicy ns-prod/drop-etcd-peers (crd.nsx.vmware.com, priority 10, rules[0] \"drop-etcd-peers-rule\"): Drop In on TCP 2380 covers 6 of the 6 failing paths"
        ),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        report.verdict.next_steps[0].starts_with("Fix SecurityPolicy ns-prod/drop-etcd-peers:"),
        "{:#?}",
        report.verdict.next_steps
    );
    assert!(report.network_policy.is_some());

    let offline = analyse_json(&env, &bundle);
    offline.expect_code(1);
    assert!(offline.json().get("networkPolicy").is_some());
    assert_eq!(offline.json(), live.json(), "the same report");

    let table = env.kubectl(&["analyse", bundle.to_str().unwrap(), "--details"]);
    assert!(
        table.stdout.contains("NETWORK POLICY")
            && table
                .stdout
                .contains("1. Fix SecurityPolicy ns-prod/drop-etcd-peers"),
        "{}",
        table.stdout
    );
}

/// nsx-vpc-forbidden, the same cut: no policy was read, so the failing paths are outside the
/// Supervisor's view, and the evidence says what was read and what was refused; the bundle keeps
/// the refusal (its manifest's `networkUnread`) and `analyse` says the same.
#[test]
fn failing_paths_no_policy_covers_are_outside_the_view_and_the_bundle_keeps_why() {
    let (env, live, bundle) = diagnose_2380_dropped("nsx-vpc-forbidden");
    live.expect_code(1);
    let report = live.diagnose_report();
    let line = &report.verdict.evidence[0];
    assert!(
        line.starts_with("6 of the 6 failing paths (")
            && line.contains("the cause is outside the Supervisor's view")
            && line.contains("read: ")
            && line.contains(
                "could not read: list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden"
            ),
        "{line}"
    );
    assert!(
        !line.contains("securitypolicies.crd.nsx.vmware.com 0"),
        "{line}"
    );
    let offline = analyse_json(&env, &bundle);
    offline.expect_code(1);
    assert_eq!(offline.json(), live.json(), "the same report");
}
