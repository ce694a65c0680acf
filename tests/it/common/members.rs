//! A lab built from a Supervisor fixture set (any number of nodes, either etcd line, with or
//! without the kubelet stand-in), and the worlds that diagnose it through the real kubectl on
//! the pod route or the jumpbox route; for `lab::past_members`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdnet::analyse::verdict::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdVersion, KubeletConfig, Lab};

use crate::common::article::{CLUSTER, NS};
use crate::common::*;

/// How the plugin reaches the VMs in a [`World`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The workload API answers and runs the probe pods on the lab's nodes (`auto` picks it).
    Pod,
    /// The workload API is a black hole; `--via jumpbox`: the fake Supervisor runs the jumpbox
    /// pod in the lab's switch namespace, with the lab's key in `tkc-prod-ssh`.
    Jumpbox,
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Pod => "pod",
            Route::Jumpbox => "jumpbox",
        }
    }
}

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
        let env = match route {
            Route::Pod => {
                // lab-3 has the three Nodes of the article's VMs; lab-any registers whatever
                // nodes the lab has (a rollout's fourth).
                let workload = if lab.nodes().len() == 3 {
                    "lab-3"
                } else {
                    "lab-any"
                };
                let w = FakeConfig::from_dir(etcdnet_fakeapi::workload_set(workload)).unwrap();
                Env::new(set, Workload::lab(w, lab.clone()).unwrap())
            }
            Route::Jumpbox => {
                let env = Env::new(set, Workload::black_hole());
                env.supervisor
                    .execute_jumpbox_pods_in(lab.clone())
                    .expect("the Supervisor runs jumpbox pods");
                env.supervisor
                    .set_secret_data(NS, "tkc-prod-ssh", "ssh-privatekey", lab.ssh_private_key())
                    .unwrap();
                env
            }
        };
        World {
            env,
            lab: lab.clone(),
            route,
        }
    }

    /// `kubectl etcdnet diagnose tkc-prod -n ns-prod` on this world's route, plus `extra`.
    pub fn diagnose(&self, extra: &[&str]) -> Run {
        let mut args = vec!["diagnose", CLUSTER, "-n", NS, "--connect-timeout", "2s"];
        if self.route == Route::Jumpbox {
            args.extend(["--via", "jumpbox", "--api-timeout", "1s"]);
        }
        args.extend_from_slice(extra);
        self.env.kubectl(&args)
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
    use etcdnet::probe::output::QueryOutcome;
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
