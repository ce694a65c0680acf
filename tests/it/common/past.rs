//! A world for the "control plane with a past" lab tests: the article's cluster as a
//! lab running a chosen etcd line with the kubelet stand-in on every node (its restarts and
//! kubeadm's probes, durations / 20), reached by the real kubectl on the pod and the jumpbox
//! route; for `lab::past_network`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdnet::report::v1alpha2::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdVersion, KubeletConfig, Lab};

use crate::common::article::{CLUSTER, SET};
use crate::common::{fixture, Env, FakeConfig, Run, Workload};

/// How the plugin reaches the VMs (`lab::past_members`'s worlds too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Probe pods through the workload API (a fake executing them in the lab's nodes).
    Pod,
    /// The workload API is a black hole; `--via jumpbox`: one vSphere Pod that SSHes to every VM.
    Jumpbox,
}

impl Route {
    /// A fake Supervisor serving fixture set `set` whose plugin reaches `lab`'s nodes on this
    /// route: probe pods run in the nodes by a workload fake, or the jumpbox pod run in the lab
    /// with the lab's key as the cluster's `<cluster>-ssh` secret.
    pub fn env(self, set: &str, lab: &Arc<Lab>) -> Env {
        match self {
            Route::Pod => {
                // lab-3 has the three Nodes of the article's VMs; lab-any registers whatever
                // nodes the lab has (a rollout's fourth).
                let workload = if lab.nodes().len() == 3 {
                    "lab-3"
                } else {
                    "lab-any"
                };
                let w = FakeConfig::from_dir(etcdnet_fakeapi::workload_set(workload)).unwrap();
                Env::stamped(set, Workload::lab(w, lab.clone()).unwrap())
            }
            // The workload API answers (`Healthy` needs it); the jumpbox is asked for by
            // `--via jumpbox` (`args`).
            Route::Jumpbox => {
                Env::jumpbox_in_lab_with(set, lab, lab.ssh_private_key(), Workload::ok())
            }
        }
    }

    /// `diagnose`'s flags for this route, after the common ones.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Route::Pod => &[],
            Route::Jumpbox => &["--via", "jumpbox", "--api-timeout", "1s"],
        }
    }

    /// The route's name, as a report gives it.
    pub fn name(self) -> &'static str {
        match self {
            Route::Pod => "pod",
            Route::Jumpbox => "jumpbox",
        }
    }
}

/// Both routes, in the order the tests diagnose them.
pub const ROUTES: [Route; 2] = [Route::Pod, Route::Jumpbox];

/// One lab reached on both routes: each scenario's state is made once and diagnosed on each.
pub struct PastWorld {
    pub lab: Arc<Lab>,
    pod: Env,
    jumpbox: Env,
}

/// kubelet's and kubeadm's durations divided by 20: startup/liveness probes every 0.5 s,
/// back-off 0.5 s doubling to 15 s, so a partition's restarts show within a test's seconds.
pub fn lab_kubelet() -> KubeletConfig {
    KubeletConfig::scaled(20)
}

/// Every member of a lab just started logged `etcd`'s release: a 3.5 case that ran 3.4 would
/// prove nothing (the first lines of a member's log say what ran). Call after
/// `etcdnet_lab::require_etcd`.
pub fn assert_runs(lab: &Lab, etcd: EtcdVersion) {
    let release = etcd.release().expect("require_etcd checked the binary");
    for node in lab.nodes() {
        let log = std::fs::read_to_string(node.log_file()).unwrap();
        assert!(
            log.contains(&format!("\"etcd-version\":\"{release}\"")),
            "{}: not etcd {release}:\n{}",
            node.name,
            log.lines().take(5).collect::<Vec<_>>().join("\n")
        );
    }
}

impl PastWorld {
    /// The article's nodes (names and IPs of the `quorum-lost` set) running `etcd`, with the
    /// kubelet stand-in, reached on both routes; panics, naming what is missing, when the lab
    /// cannot run here.
    pub fn start(test: &str, etcd: EtcdVersion) -> PastWorld {
        use etcdnet_fakeapi::labplan;
        etcdnet_lab::require(test);
        etcdnet_lab::require_etcd(test, etcd);
        let set = FakeConfig::from_dir(fixture(SET)).unwrap();
        let plan = labplan::plan(&set, Some(CLUSTER)).unwrap();
        let config = etcdnet_lab::LabConfig {
            etcd,
            kubelet: Some(lab_kubelet()),
            start_timeout: Duration::from_secs(60),
            ..labplan::lab_config(&plan).unwrap()
        };
        let lab = Arc::new(Lab::start(config).expect("lab starts"));
        assert_runs(&lab, etcd);
        eprintln!(
            "{test}: lab {} (etcd {etcd}) started in {:?}",
            lab.id(),
            lab.started_in()
        );
        PastWorld {
            pod: Route::Pod.env(SET, &lab),
            jumpbox: Route::Jumpbox.env(SET, &lab),
            lab,
        }
    }

    /// `kubectl etcdnet diagnose ... -o json` on `route`.
    pub fn diagnose(&self, route: Route, extra: &[&str]) -> Run {
        let mut args = vec!["-o", "json"];
        args.extend_from_slice(route.args());
        args.extend_from_slice(extra);
        let env = match route {
            Route::Pod => &self.pod,
            Route::Jumpbox => &self.jumpbox,
        };
        env.diagnose_lab(&args)
    }

    /// Diagnoses on `route` until `done(report)` or `bound` has passed; returns the last report
    /// and every verdict code seen on the way (in order), so a test can say which it must never
    /// see.
    pub fn diagnose_until(
        &self,
        route: Route,
        extra: &[&str],
        bound: Duration,
        done: impl Fn(&DiagnoseReport) -> bool,
    ) -> (DiagnoseReport, Vec<VerdictCode>) {
        let deadline = Instant::now() + bound;
        let mut seen = Vec::new();
        loop {
            let run = self.diagnose(route, extra);
            let report = run.diagnose_report();
            seen.push(report.verdict.code);
            if done(&report) || Instant::now() > deadline {
                // How many whole diagnoses the state took: each one is the suite's CPU.
                eprintln!(
                    "  ({route:?}) {} after {} round(s)",
                    report.verdict.code,
                    seen.len()
                );
                return (report, seen);
            }
            // What a run on the way said, for the failure that names a code seen on the way.
            eprintln!(
                "  (not yet, {route:?}) {}: {}\n    {}",
                report.verdict.code,
                report.verdict.summary,
                report.verdict.evidence.join("\n    ")
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// [`PastWorld::diagnose_until`] the verdict is `code`, and that it is (the report shown
    /// when not): the report and every code seen on the way.
    pub fn expect_verdict(
        &self,
        route: Route,
        extra: &[&str],
        bound: Duration,
        code: VerdictCode,
    ) -> (DiagnoseReport, Vec<VerdictCode>) {
        let (r, seen) = self.diagnose_until(route, extra, bound, |r| r.verdict.code == code);
        assert_eq!(r.verdict.code, code, "{route:?}: {}", shown(&r));
        (r, seen)
    }

    /// Raises (`on`) or disarms etcd's NOSPACE alarm for `node`'s member through etcd's own
    /// Alarm API (etcdserverpb Maintenance.Alarm, `POST /v3/maintenance/alarm` on the gRPC
    /// gateway; action ACTIVATE / DEACTIVATE), asked on `node`'s own 2379 with the
    /// healthcheck-client certificate. etcdctl can only disarm; etcd raises NOSPACE itself only
    /// over a full quota, which a test cannot wait for.
    pub fn nospace(&self, node: &str, on: bool) {
        let id = self.lab.member_id(node).unwrap().expect("a member");
        let action = if on { "ACTIVATE" } else { "DEACTIVATE" };
        let body = format!(r#"{{"action":"{action}","memberID":"{id}","alarm":"NOSPACE"}}"#);
        let pki = "/etc/kubernetes/pki/etcd";
        let argv = [
            "curl".to_string(),
            "-sS".into(),
            "--fail".into(),
            "--max-time".into(),
            "10".into(),
            "--cacert".into(),
            format!("{pki}/ca.crt"),
            "--cert".into(),
            format!("{pki}/healthcheck-client.crt"),
            "--key".into(),
            format!("{pki}/healthcheck-client.key"),
            "--data".into(),
            body,
            "https://127.0.0.1:2379/v3/maintenance/alarm".into(),
        ];
        let out = self
            .lab
            .exec(node, &argv, None, Duration::from_secs(20))
            .unwrap();
        assert!(out.status.success(), "{node}: alarm {action}: {out:?}");
    }
}

/// The report's verdict, for assertion messages.
pub fn shown(r: &DiagnoseReport) -> String {
    use etcdnet::report::v1alpha2::CellState;
    // The paths that did not work, with the tool's own words: what a failure on CI needs.
    let cells: Vec<String> = (r.matrices.iter().flat_map(|m| &m.cells))
        .filter(|c| c.state != CellState::Ok)
        .map(|c| {
            let detail = c.detail.as_deref().unwrap_or("");
            format!("{} {} → {}: {:?} {detail}", c.port, c.from, c.to, c.state)
        })
        .collect();
    format!("{:#?}\npaths not ok: {cells:#?}", r.verdict)
}

/// Whether any evidence line holds every one of `words`.
pub fn evidence_has(r: &DiagnoseReport, words: &[&str]) -> bool {
    r.verdict
        .evidence
        .iter()
        .any(|l| words.iter().all(|w| l.contains(w)))
}

/// Whether any note holds every one of `words`.
pub fn notes_have(r: &DiagnoseReport, words: &[&str]) -> bool {
    r.verdict
        .notes
        .iter()
        .any(|l| words.iter().all(|w| l.contains(w)))
}
