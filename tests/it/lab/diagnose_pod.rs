//! `kubectl etcdnet diagnose` end to end through the pod route, as users run it: the real
//! `kubectl` dispatching to the plugin, a fake Supervisor, and a fake workload API that executes
//! every probe pod inside a lab node (network namespaces running real etcd). Faults are real.
//!
//! Needs root and the lab's packages; skips loudly otherwise.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use etcdnet::report::v1alpha2::{CellState, ReachErrorKind, VerdictCode};
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{Fault, Lab};

use common::article::*;

/// A lab whose nodes are the Supervisor set's control-plane VMs, and a world around it.
struct LabEnv {
    env: Env,
    lab: Arc<Lab>,
    /// When this case began on its (shared) lab.
    began: Instant,
}

fn workload_fixture(name: &str) -> FakeConfig {
    FakeConfig::from_dir(etcdnet_fakeapi::workload_set(name)).unwrap()
}

/// A world of its own (a fake Supervisor and a fake workload API serving `workload_set`) over a
/// lab already running: the cases in turn on one lab each have their own requests and pods.
fn lab_env_on(lab: &Arc<Lab>, workload_set: &str) -> LabEnv {
    let workload = Workload::lab(workload_fixture(workload_set), lab.clone()).unwrap();
    LabEnv {
        env: Env::new(SET, workload),
        lab: lab.clone(),
        began: Instant::now(),
    }
}

impl LabEnv {
    fn workload_api(&self) -> &FakeApi {
        self.env.workload.as_ref().unwrap().api().unwrap()
    }

    /// `diagnose` counting the etcd log lines since this case began (the product's `--since`
    /// window, a second more for the log's and the clocks' grain), as a lab of its own would
    /// have: an earlier case's lines on the shared lab (a loaded host's late heartbeats, a cut)
    /// neither make nor mend this case's verdict.
    fn diagnose(&self, extra: &[&str]) -> Run {
        let since = format!("{}s", self.began.elapsed().as_secs() + 2);
        let mut args = vec![
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--connect-timeout",
            "2s",
            "--since",
            &since,
        ];
        args.extend_from_slice(extra);
        self.env.kubectl(&args)
    }

    fn assert_no_pod_left(&self) {
        assert!(
            self.workload_api().existing_pods().is_empty(),
            "pods left behind: {:?}",
            self.workload_api().existing_pods()
        );
        // A deleted pod's processes are killed as a kubelet would: give it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.workload_api().pod_processes().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            self.workload_api().pod_processes().is_empty(),
            "processes left behind: {:?}",
            self.workload_api().pod_processes()
        );
    }
}

fn cell(report: &DiagnoseReport, port: u16, from: &str, to: &str) -> CellState {
    let m = report.matrices.iter().find(|m| m.port == port).unwrap();
    m.cell(from, to).unwrap().state
}

// Long: the cases that want a healthy cluster in turn on one lab (a lab each was a lab start and
// its members' CPU more, issue 39 item 5), each with a world of its own: Pod Security's
// rejection, `--keep-pods` then `cleanup`, no secret in four formats, the image that cannot be
// pulled; then a healthy run, every peer path dropped (diagnosed, then Ctrl-C under the same
// cut), healed and Healthy again.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_lab_healthy_cases_then_peers_dropped_ctrl_c_and_healed() {
    let lab = start_lab("diagnose_pod healthy cases, dropped, healed");
    pod_security_rejection_is_quoted(&lab);
    keep_pods_keeps_them_and_cleanup_removes_them(&lab);
    no_secret_in_any_output(&lab);
    image_that_cannot_be_pulled(&lab);
    healthy_then_peers_dropped_then_healed(&lab);
}

// Long: one node isolated, diagnosed until etcd has noticed (and again with fewer rights), on a
// lab of its own: after the drop cut etcd's stalled streams may need up to the cut's age to
// carry again (`Lab::stall_after_heal`), more than a fresh lab's start, so the stopped member
// below is a lab of its own, not a heal away (and the two run side by side).
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_node_isolated_on_a_lab_of_its_own() {
    let lab = start_lab("diagnose_pod isolated");
    one_node_isolated(&lab);
}

// Long: etcd stopped on one node, diagnosed until its peers' dials are refused.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_stopped_on_one_node_on_a_lab_of_its_own() {
    let lab = start_lab("diagnose_pod etcd stopped");
    etcd_stopped_on_one_node(&lab);
}

/// A healthy run, then polled until etcd notices every peer path dropped (and Ctrl-C in the
/// middle of a probe under that cut), then until it has a quorum again after the heal.
fn healthy_then_peers_dropped_then_healed(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");

    let table = e.diagnose(&["--details"]);
    table.expect_code(0);
    assert!(
        table.stdout.contains("VERDICT: Healthy"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("2380 FROM → TO"), "{}", table.stdout);
    assert!(
        table
            .stdout
            .contains("pod (auto: the workload API answers)"),
        "{}",
        table.stdout
    );
    e.assert_no_pod_left();

    e.lab.inject(Fault::DropAllPeers).unwrap();
    let started = Instant::now();
    let (run, report) = diagnose_until(VerdictCode::EtcdPeerNetworkBlocked, || {
        e.diagnose(&["-o", "json"])
    });
    run.expect_code(1);
    assert_eq!(
        report.verdict.code,
        VerdictCode::EtcdPeerNetworkBlocked,
        "{:#?}",
        report.verdict
    );
    assert_eq!(report.route.name, "pod");
    assert_eq!(cell(&report, 2380, CP[0], CP[1]), CellState::Timeout);
    assert_eq!(cell(&report, 2379, CP[2], CP[0]), CellState::Timeout);
    assert_eq!(cell(&report, 2379, CP[1], CP[1]), CellState::Ok);
    assert_eq!(report.result.nodes_reached, 3);
    // The pod keeps NET_ADMIN and NET_RAW (the lab runs it with exactly the capabilities its
    // spec keeps): every node's own firewall was read, so no failing path is left undecided.
    let loc = report
        .packet_location
        .as_ref()
        .expect("the firewalls were read");
    assert!(
        loc.nodes
            .iter()
            .all(|n| n.read == etcdnet::report::v1alpha2::FirewallReadState::Read),
        "{loc:#?}"
    );
    assert!(
        !loc.paths.is_empty()
            && loc
                .paths
                .iter()
                .all(|p| p.place != etcdnet::report::v1alpha2::Place::Undecided),
        "{loc:#?}"
    );
    eprintln!(
        "time to verdict with peers dropped: {:?}",
        started.elapsed()
    );
    e.assert_no_pod_left();
    sigint_mid_probe_leaves_no_pod(lab);

    e.lab.heal().unwrap();
    e.lab.wait_recovered(Duration::from_secs(30)).unwrap();
    let (run, report) = diagnose_until(VerdictCode::Healthy, || e.diagnose(&["-o", "json"]));
    run.expect_code(0);
    assert_eq!(report.verdict.code, VerdictCode::Healthy);
    e.assert_no_pod_left();
}

fn one_node_isolated(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    e.lab.inject(Fault::Isolate(CP[2].into())).unwrap();
    let (run, report) = diagnose_until(VerdictCode::EtcdPeerNetworkPartial, || {
        e.diagnose(&["-o", "json"])
    });
    run.expect_code(1);
    assert_eq!(
        report.verdict.code,
        VerdictCode::EtcdPeerNetworkPartial,
        "{:#?}",
        report.verdict
    );
    assert_eq!(report.verdict.nodes, [CP[2]]);
    assert_eq!(cell(&report, 2380, CP[0], CP[2]), CellState::Timeout);
    assert_eq!(cell(&report, 2380, CP[0], CP[1]), CellState::Ok);
    // The set puts cp1 and cp2 on esx-02 and cp3 on esx-01 (vm-operator `status.host`), and the
    // lab cuts cp3 in its fabric: the failing paths are exactly those between the hosts.
    let transport = "the failing paths are exactly those between ESXi hosts (esx-01.vsphere.local, esx-02.vsphere.local); the paths within one host work";
    assert!(
        report
            .verdict
            .evidence
            .iter()
            .any(|l| l.starts_with(transport)),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        report.verdict.next_steps[0].starts_with("Check the transport between ESXi hosts"),
        "{:#?}",
        report.verdict.next_steps
    );
    e.assert_no_pod_left();

    // The same cut, as a less privileged user on a guest that stopped reporting: VSphereMachines
    // refused (403), and cp3's VM keeps only status.network.config (vm-operator's
    // updateGuestNetworkStatus when VMware Tools is down). The diagnosis still runs, names the
    // permission, and probes cp3 at its configured address, shown as such.
    e.env.supervisor.forbid(etcdnet_fakeapi::Forbid {
        verb: Some("list".into()),
        group: Some("vmware.infrastructure.cluster.x-k8s.io".into()),
        resource: Some("vspheremachines".into()),
        namespace: Some(NS.into()),
        ..Default::default()
    });
    e.env
        .supervisor
        .modify(
            "vmoperator.vmware.com/v1alpha3",
            "VirtualMachine",
            NS,
            CP[2],
            |vm| {
                vm["status"]["network"] = serde_json::json!({"config": {"interfaces": [
                {"name": "eth0", "ip": {"addresses": ["198.18.0.13/24"]}}]}});
            },
        )
        .unwrap();
    let run = e.diagnose(&["-o", "json"]);
    run.expect_code(1);
    let report = run.diagnose_report();
    assert_eq!(
        report.verdict.code,
        VerdictCode::EtcdPeerNetworkPartial,
        "{:#?}",
        report.verdict
    );
    assert_eq!(report.verdict.nodes, [CP[2]]);
    let permission = report
        .findings
        .iter()
        .find(|f| f.code == etcdnet::report::v1alpha2::FindingCode::PermissionMissing)
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert!(
        permission.message.starts_with("forbidden: list vspheremachines.vmware.infrastructure.cluster.x-k8s.io in namespace ns-prod (403); the VMs were joined to the Machines without the VSphereMachines' uids (3 by the uid in the Machine's infrastructureRef)"),
        "{}",
        permission.message
    );
    let cp3 = report.nodes.iter().find(|n| n.name == CP[2]).unwrap();
    assert!(cp3.reached, "cp3 is probed at its config address: {cp3:#?}");
    assert_eq!(cp3.ip, Some("198.18.0.13".parse().unwrap()));
    assert_eq!(
        cp3.vm.as_ref().map(|v| v.ip_source),
        Some(etcdnet::report::v1alpha2::AddressSource::NetworkConfig)
    );
    // Everyone's peer: cp1 dialled it (and timed out in the cut).
    assert_eq!(cell(&report, 2380, CP[0], CP[2]), CellState::Timeout);
    let table = e.diagnose(&["--details"]);
    assert!(
        table.stdout.contains("198.18.0.13 (config)"),
        "{}",
        table.stdout
    );
    e.assert_no_pod_left();
}

fn etcd_stopped_on_one_node(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    e.lab.inject(Fault::StopEtcd(CP[1].into())).unwrap();
    let (run, report) = diagnose_until(VerdictCode::EtcdNotRunning, || e.diagnose(&["-o", "json"]));
    run.expect_code(1);
    assert_eq!(
        report.verdict.code,
        VerdictCode::EtcdNotRunning,
        "{:#?}",
        report.verdict
    );
    assert_eq!(report.verdict.nodes, [CP[1]]);
    assert_eq!(cell(&report, 2380, CP[0], CP[1]), CellState::Refused);
    e.assert_no_pod_left();
}

/// Ctrl-C once the pods exist, under the caller's cut (every peer path dropped: every probe waits
/// on its connect timeouts, a window to interrupt in), with a world of its own.
fn sigint_mid_probe_leaves_no_pod(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    // Interrupt once the pods exist.
    let cmd = e
        .env
        .plugin_command(&["diagnose", CLUSTER, "-n", NS, "--connect-timeout", "5s"]);
    let run = interrupt_when(
        cmd,
        || e.workload_api().existing_pods().len() == 3,
        Duration::from_secs(20),
    );
    run.expect_code(130);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
    e.assert_no_pod_left();
    assert_eq!(e.workload_api().created_pods().len(), 3);
}

fn pod_security_rejection_is_quoted(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    let run = e.diagnose(&["--pod-namespace", "restricted-ns", "-o", "json"]);
    run.expect_code(3);
    let report = run.diagnose_report();
    assert_eq!(report.verdict.code, VerdictCode::NodesUnreachable);
    for n in &report.nodes {
        assert_eq!(reach_error(n).kind, ReachErrorKind::Rejected);
        let m = &reach_error(n).message;
        assert!(
            m.contains("violates PodSecurity \"baseline:latest\""),
            "{m}"
        );
        assert!(m.contains("--pod-namespace"), "suggests a namespace: {m}");
    }
    assert!(e.workload_api().created_pods().is_empty());
}

fn image_that_cannot_be_pulled(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3-airgapped");
    let run = e.diagnose(&["-o", "json", "--timeout", "30s"]);
    run.expect_code(3);
    let report = run.diagnose_report();
    for n in &report.nodes {
        assert_eq!(reach_error(n).kind, ReachErrorKind::ImagePull, "{n:#?}");
        let m = &reach_error(n).message;
        assert!(
            m.contains("docker.io/library/busybox:1.36"),
            "names the image: {m}"
        );
        assert!(
            m.contains("--image") && m.contains("--image-pull-secret"),
            "{m}"
        );
    }
    e.assert_no_pod_left();
    // From a registry the nodes reach, the same run works.
    let run = e.diagnose(&["-o", "json", "--image", "registry.local/busybox:1.36"]);
    run.expect_code(0);
}

fn keep_pods_keeps_them_and_cleanup_removes_them(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    let run = e.diagnose(&["--keep-pods"]);
    run.expect_code(0);
    assert_eq!(e.workload_api().existing_pods().len(), 3);
    assert!(
        run.stderr.contains(
            "probe pod(s) in namespace kube-system of workload cluster tkc-prod: etcdnet-probe-"
        ) && run
            .stderr
            .contains("remove them with: kubectl etcdnet cleanup tkc-prod -n ns-prod --context="),
        "{}",
        run.stderr
    );
    let clean = e.env.kubectl(&["cleanup", CLUSTER, "-n", NS]);
    clean.expect_code(0);
    e.assert_no_pod_left();
}

/// Four full diagnoses of the lab in sequence, one per format.
fn no_secret_in_any_output(lab: &Arc<Lab>) {
    let e = lab_env_on(lab, "lab-3");
    for fmt in ["table", "wide", "json", "yaml"] {
        let run = e.diagnose(&["-o", fmt, "-vv"]);
        for m in SECRET_MARKERS {
            assert!(
                !run.stdout.contains(m) && !run.stderr.contains(m),
                "{m} in -o {fmt}"
            );
        }
    }
}
