//! Issue 21 end to end: a SecurityPolicy served by the fake Supervisor and the same rule made real
//! by nftables on the lab's nodes. `diagnose` through the real kubectl, on the pod route and on
//! the jumpbox route, names the policy in the verdict; against a Supervisor that serves the NSX
//! groups but no policy on etcd's ports, the same cut is said to be outside the Supervisor's view.
//!
//! The policy is `drop-etcd-peers` of the set `nsx-vpc` (Drop, In, TCP 2379-2380, applied to the
//! control-plane VMs, sources the control-plane VMs: see its fake.yaml); its equivalent is
//! [`Fault::DropAllPeers`], which drops on the receiving node's input (the ingress check NSX
//! makes at the destination port) what the other members send to 2379/2380. The set without
//! the policy is `nsx-vpc-no-drop` (one Allow on 6443). Both sets are healthy-v1alpha3's cluster,
//! the lab's nodes (names and IPs): one lab serves both fake Supervisors.
//!
//! etcd 3.5 only (TKG/VKS control planes run it): the policy's join reads the probe's matrix,
//! which the `lab::probe` tests show alike on 3.4. Needs root, the lab and etcd 3.5 from
//! `.ci/run`; compiled as ignored elsewhere (build.rs).

use crate::common;
use crate::common::past::{self, evidence_has, shown, Route};

use std::sync::Arc;
use std::time::Duration;

use common::*;
use etcdnet::analyse::verdict::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdVersion, Fault, Lab};

use common::article::{CLUSTER, NS};

/// The set serving the policy that drops etcd's ports between the control-plane VMs.
const WITH_POLICY: &str = "nsx-vpc";
/// The set serving the NSX groups without any rule on 2379/2380.
const NO_POLICY: &str = "nsx-vpc-no-drop";

/// What the verdict's evidence names the policy by (namespace/name).
const POLICY: &str = "SecurityPolicy ns-prod/drop-etcd-peers";
/// How the first next step starts when the policy is the cause.
const FIX: &str = "Fix SecurityPolicy ns-prod/drop-etcd-peers";
/// What the evidence says when no visible rule covers the blocked paths.
const OUTSIDE: &str = "outside the Supervisor's view";

/// One fake Supervisor over the shared lab, reached on `route`.
struct Supervisor {
    env: Env,
    route: Route,
}

/// Starts the lab of the sets' cluster on etcd 3.5 (checked in its members' logs).
fn start_lab(test: &str) -> Arc<Lab> {
    use etcdnet_fakeapi::labplan;
    etcdnet_lab::require(test);
    etcdnet_lab::require_etcd(test, EtcdVersion::V3_5);
    let set = FakeConfig::from_dir(fixture(WITH_POLICY)).unwrap();
    let plan = labplan::plan(&set, Some(CLUSTER)).unwrap();
    let config = etcdnet_lab::LabConfig {
        etcd: EtcdVersion::V3_5,
        ..labplan::lab_config(&plan).unwrap()
    };
    let lab = Arc::new(Lab::start(config).expect("lab starts"));
    past::assert_runs(&lab, EtcdVersion::V3_5);
    lab
}

impl Supervisor {
    /// A fake Supervisor serving `set`, reaching `lab`'s nodes on `route`.
    fn start(set: &str, lab: &Arc<Lab>, route: Route) -> Supervisor {
        let env = route.env(set, lab);
        Supervisor { env, route }
    }

    /// `kubectl etcdnet diagnose` on this Supervisor's route, `extra` added.
    fn diagnose(&self, extra: &[&str]) -> Run {
        let mut args = vec!["diagnose", CLUSTER, "-n", NS, "--connect-timeout", "2s"];
        args.extend_from_slice(self.route.args());
        args.extend_from_slice(extra);
        self.env.kubectl(&args)
    }

    /// `diagnose -o json` until the verdict is `want` (60 s at most): the run, its report, and
    /// the report as JSON (for `networkPolicy`, which the typed report does not carry).
    fn diagnose_until(&self, want: VerdictCode) -> (Run, DiagnoseReport, serde_json::Value) {
        let (run, report) = diagnose_until(want, || self.diagnose(&["-o", "json"]));
        let json = run.json();
        (run, report, json)
    }
}

/// Whether any next step holds `words`, for the messages.
fn next_steps_have(r: &DiagnoseReport, words: &str) -> bool {
    r.verdict.next_steps.iter().any(|l| l.contains(words))
}

/// The whole case on one route: the cut with the policy, the same cut without it, then healed.
fn policy_then_no_policy_then_healed(route: Route) {
    let test = format!("network_policy {route:?}");
    let lab = start_lab(&test);
    let with = Supervisor::start(WITH_POLICY, &lab, route);
    let without = Supervisor::start(NO_POLICY, &lab, route);

    // The policy's rule, made real: every member's input on 2379/2380 from the others dropped.
    lab.inject(Fault::DropAllPeers).unwrap();

    // 1. The Supervisor serves the policy: the verdict names it, its fix is the first step.
    let (run, r, json) = with.diagnose_until(VerdictCode::EtcdPeerNetworkBlocked);
    run.expect_code(1);
    assert_eq!(
        r.verdict.code,
        VerdictCode::EtcdPeerNetworkBlocked,
        "{}",
        shown(&r)
    );
    assert_eq!(r.route.name, route.name());
    assert_eq!(r.result.nodes_reached, 3, "{}", shown(&r));
    // Every failing path (2 ports, 6 ordered pairs) is the policy's: the probe's nodes joined
    // to their VMs.
    assert!(
        evidence_has(&r, &[POLICY, "covers 12 of the 12 failing paths"]),
        "{}",
        shown(&r)
    );
    assert!(
        r.verdict
            .next_steps
            .first()
            .is_some_and(|s| s.starts_with(FIX)),
        "{}",
        shown(&r)
    );
    assert!(!evidence_has(&r, &[OUTSIDE]), "{}", shown(&r));
    let assessment = &json["networkPolicy"];
    assert!(assessment.is_object(), "no networkPolicy:\n{}", run.stdout);
    assert!(
        assessment.to_string().contains("drop-etcd-peers"),
        "{assessment:#}"
    );
    // The table says the same, with its NETWORK POLICY section.
    let table = with.diagnose(&[]);
    table.expect_code(1);
    for want in ["VERDICT: EtcdPeerNetworkBlocked", POLICY, "NETWORK POLICY"] {
        assert!(table.stdout.contains(want), "{want}:\n{}", table.stdout);
    }

    // 2. The same cut, no policy on etcd's ports: the cause is outside the Supervisor's view.
    let (run, r, json) = without.diagnose_until(VerdictCode::EtcdPeerNetworkBlocked);
    run.expect_code(1);
    assert_eq!(
        r.verdict.code,
        VerdictCode::EtcdPeerNetworkBlocked,
        "{}",
        shown(&r)
    );
    assert_eq!(r.route.name, route.name());
    assert!(
        evidence_has(&r, &["12 of the 12 failing paths", OUTSIDE]),
        "{}",
        shown(&r)
    );
    assert!(!evidence_has(&r, &["drop-etcd-peers"]), "{}", shown(&r));
    assert!(!next_steps_have(&r, "SecurityPolicy"), "{}", shown(&r));
    assert!(json["networkPolicy"].is_object(), "{}", run.stdout);

    // 3. Healed: Healthy, and nothing is said to be outside the view.
    lab.heal().unwrap();
    lab.wait_healthy(Duration::from_secs(30)).unwrap();
    let (run, r, _) = without.diagnose_until(VerdictCode::Healthy);
    run.expect_code(0);
    assert_eq!(r.verdict.code, VerdictCode::Healthy, "{}", shown(&r));
    assert!(!evidence_has(&r, &[OUTSIDE]), "{}", shown(&r));
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn pod_route_names_the_policy_or_says_outside_the_view() {
    policy_then_no_policy_then_healed(Route::Pod);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn jumpbox_route_names_the_policy_or_says_outside_the_view() {
    policy_then_no_policy_then_healed(Route::Jumpbox);
}
