//! A lab built from a Supervisor fixture set (any number of nodes, either etcd line, with or
//! without the kubelet stand-in), and the worlds that diagnose it through the real kubectl on
//! the pod route or the jumpbox route; for `lab::past_members`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdnet::report::v1alpha2::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdVersion, KubeletConfig, Lab};

use crate::common::article::CLUSTER;
use crate::common::*;

pub use super::past::Route;

/// A lab whose nodes are the control-plane VMs of cluster tkc-prod in Supervisor set `set`
/// (names and addresses: `labplan::plan`), running `etcd`, with `kubelet` stand-ins if given.
/// Panics, naming what is missing, when the lab (or that etcd) cannot run here.
pub fn start_lab(
    test: &str,
    set: &str,
    etcd: EtcdVersion,
    kubelet: Option<KubeletConfig>,
) -> Arc<Lab> {
    use etcdnet_fakeapi::labplan;
    etcdnet_lab::require(test);
    etcdnet_lab::require_etcd(test, etcd);
    let cfg = FakeConfig::from_dir(fixture(set)).expect("fixture set loads");
    let plan = labplan::plan(&cfg, Some(CLUSTER)).expect("a lab plan");
    let mut config = labplan::lab_config(&plan).expect("a lab config");
    config.etcd = etcd;
    config.kubelet = kubelet;
    let lab = Lab::start(config).expect("lab starts");
    assert_eq!(lab.etcd(), etcd);
    Arc::new(lab)
}

/// One Supervisor set's view of a lab, diagnosed on one route. Several worlds may share a lab
/// (the same VMs, as another moment of a rollout sees them).
pub struct World {
    pub env: Env,
    /// Keeps the lab up while the world is in use (dropping the last one tears it down).
    #[allow(dead_code)]
    pub lab: Arc<Lab>,
    pub route: Route,
}

impl World {
    pub fn new(lab: &Arc<Lab>, set: &str, route: Route) -> World {
        let env = route.env(set, lab);
        World {
            env,
            lab: lab.clone(),
            route,
        }
    }

    /// `kubectl etcdnet diagnose tkc-prod -n ns-prod` on this world's route, plus `extra`.
    pub fn diagnose(&self, extra: &[&str]) -> Run {
        let mut args = self.route.args().to_vec();
        args.extend_from_slice(extra);
        self.env.diagnose_lab(&args)
    }

    /// `-o json` until the verdict is `want` (60 s at most: etcd and kubelet take seconds), then
    /// checks it is, with its exit code, on this world's route.
    pub fn until(&self, want: VerdictCode) -> DiagnoseReport {
        let (run, report) = diagnose_until(want, || self.diagnose(&["-o", "json"]));
        assert_eq!(
            report.verdict.code, want,
            "{:#?}\nnotes: {:#?}",
            report.verdict, report.verdict.notes
        );
        run.expect_code(if want == VerdictCode::Healthy { 0 } else { 1 });
        assert_eq!(report.route.name, self.route.name());
        report
    }
}

/// One member as compared between the lab's `etcdctl member list` and the plugin's report:
/// (id in hex, name, peer URLs, client URLs, learner).
type MemberRow = (String, Option<String>, Vec<String>, Vec<String>, bool);

/// The members as the lab's etcdctl lists them, in the plugin's shape.
pub fn lab_members(lab: &Lab) -> BTreeSet<MemberRow> {
    lab.members()
        .expect("etcdctl member list")
        .into_iter()
        .map(|m| {
            (
                format!("{:x}", m.id),
                Some(m.name).filter(|n| !n.is_empty()),
                m.peer_urls,
                m.client_urls,
                m.is_learner,
            )
        })
        .collect()
}

/// Every node of `nodes` read its own member list (`probe.members`), and each is what the lab's
/// etcdctl lists: the same IDs (hex), names, URLs and learner flags.
pub fn assert_lists_are_the_labs(report: &DiagnoseReport, lab: &Lab, nodes: &[&str]) {
    use etcdnet::report::v1alpha2::QueryOutcome;
    let want = lab_members(lab);
    for name in nodes {
        let n = report
            .nodes
            .iter()
            .find(|n| n.name == *name)
            .unwrap_or_else(|| panic!("no node {name} in the report"));
        let p = n
            .probe
            .as_ref()
            .unwrap_or_else(|| panic!("{name} not probed: {n:#?}"));
        assert_eq!(
            p.members.outcome,
            QueryOutcome::Ok,
            "{name}: {:#?}",
            p.members
        );
        let got: BTreeSet<MemberRow> = p
            .members
            .members
            .iter()
            .map(|m| {
                (
                    m.id.map(|id| id.to_string()).unwrap_or_default(),
                    m.name.clone(),
                    m.peer_urls.clone(),
                    m.client_urls.clone(),
                    m.is_learner,
                )
            })
            .collect();
        assert_eq!(got, want, "{name}'s own member list vs etcdctl member list");
    }
}

/// Waits (at most `bound`, polling) until `ready()` returns Some, which it returns.
pub fn poll<T>(what: &str, bound: Duration, ready: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(Instant::now() < deadline, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
