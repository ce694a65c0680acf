//! The jumpbox route where the lab is not needed: pod failures, logs without frames, one
//! unreachable VM, from the fake Supervisor alone (the lab side is `lab::diagnose_jumpbox`).

use crate::common;
use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::{PortState, ReachErrorKind, VerdictCode};

/// Three VMs, one pod, on a Supervisor whose vSphere Pods are scripted (no lab): the pod's log
/// holds every VM's section and each node is reached from it.
#[test]
fn three_vms_one_jumpbox_pod() {
    let env = Env::new(SET, Workload::black_hole());
    env.script_jumpbox_pods(&CP);
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    let report = run.diagnose_report();
    assert_eq!(report.result.nodes_reached, 3, "{:#?}", report.nodes);
    let created = env.supervisor.created_pods();
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(created[0].1.starts_with("etcdnet-jumpbox-tkc-prod-"));
    // Its spec holds all three VMs, and asks for what the jumpbox's own VM needs (a vSphere
    // Pod's requests are its reservations), whatever the number of VMs.
    let body = env
        .supervisor
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .map(|r| r.body.unwrap())
        .collect::<Vec<_>>();
    assert_eq!(body.len(), 1);
    let pod: serde_json::Value = serde_json::from_str(&body[0]).unwrap();
    let text = pod["spec"]["containers"][0]["command"].to_string();
    for ip in ["198.18.0.11", "198.18.0.12", "198.18.0.13"] {
        assert!(text.contains(ip), "{ip}");
    }
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        serde_json::json!({"cpu": "250m", "memory": "256Mi"})
    );
    assert!(env.supervisor.existing_pods().is_empty());

    // --dry-run shows that one pod, once.
    let run = env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--dry-run",
        "-o",
        "json",
    ]);
    run.expect_code(0);
    let pods: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(pods.len(), 1, "{}", run.stdout);
    assert!(run.stderr.contains("1 pod(s) shown"), "{}", run.stderr);
}

/// One VM of three that nothing reaches from the Supervisor: its own row (the script's section
/// for it), the two others reached by the same pod.
#[test]
fn one_unreachable_vm_of_three_is_its_own_row() {
    let env = Env::new(SET, Workload::black_hole());
    env.script_jumpbox_pods_with(&CP, |i, ip| {
        (i == 1).then(|| unreachable_jumpbox_section(ip))
    });
    let run = env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--api-timeout",
        "1s",
        "-o",
        "json",
    ]);
    run.expect_code(1);
    let report = run.diagnose_report();
    assert_eq!(report.route.name, "jumpbox");
    assert_eq!(report.result.nodes_reached, 2);
    assert_eq!(report.verdict.code, VerdictCode::NodesUnreachable);
    assert_eq!(report.verdict.nodes, [CP[1]]);
    let e = reach_error(&report.nodes[1]);
    assert_eq!(e.kind, ReachErrorKind::Unreachable, "{e:?}");
    assert!(report.nodes[1]
        .supervisor_reach
        .iter()
        .all(|p| p.state == PortState::Timeout));
    assert!(report.nodes[0].reached && report.nodes[2].reached);
    assert_eq!(env.supervisor.created_pods().len(), 1);
}

/// A pod whose log is not framed with this run's nonce (another run's, or text a node made up)
/// gives no node a result: each says why, none is misread.
#[test]
fn a_log_without_this_runs_frames_is_every_vms_bad_output() {
    let env = Env::new(SET, Workload::black_hole());
    env.supervisor.on_pod_created(|pod| {
        let mut other = pod.clone();
        other["spec"]["containers"][0]["command"][etcdnet::route::jumpbox::ARGV_NONCE] =
            "0123456789abcdef0123456789abcdef".into();
        Some(etcdnet_fakeapi::PodScript::succeeds(scripted_jumpbox_log(
            &other, &CP,
        )))
    });
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    let report = run.diagnose_report();
    assert_eq!(report.result.nodes_reached, 0);
    for n in &report.nodes {
        assert_eq!(reach_error(n).kind, ReachErrorKind::BadOutput, "{n:#?}");
    }
}

/// The pod as a whole failing (its image cannot be pulled) is every VM's error, as one pod's.
#[test]
fn a_pod_that_cannot_run_is_every_vms_error() {
    let env = Env::new(SET, Workload::black_hole());
    env.supervisor
        .refuse_image(etcdnet::route::jumpbox::DEFAULT_IMAGE);
    env.script_jumpbox_pods(&CP);
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    let report = run.diagnose_report();
    assert_eq!(env.supervisor.created_pods().len(), 1);
    for n in &report.nodes {
        assert_eq!(reach_error(n).kind, ReachErrorKind::ImagePull, "{n:#?}");
    }
    assert!(env.supervisor.existing_pods().is_empty());
}

/// `--keep-pods` keeps the jumpbox pod, and the note says it is in the vSphere Namespace of the
/// Supervisor (not in a workload cluster) with the cleanup that removes it there.
#[test]
fn keep_pods_names_the_jumpbox_pod_in_the_supervisor() {
    let env = Env::new(SET, Workload::black_hole());
    env.script_jumpbox_pods(&CP);
    let run = env.diagnose_via_jumpbox(&["--keep-pods", "-o", "json"]);
    assert_eq!(run.diagnose_report().result.nodes_reached, 3);
    let left = env.supervisor.existing_pods();
    assert_eq!(left.len(), 1, "{left:?}");
    let (ns, pod) = &left[0];
    assert_eq!(ns, NS);
    let note = format!(
        "kept 1 probe pod(s) in vSphere Namespace {NS} of the Supervisor: {pod}; remove them with: kubectl etcdnet cleanup -n {NS} --context="
    );
    assert!(run.stderr.contains(&note), "{}", run.stderr);
    assert!(!run.stderr.contains("workload cluster"), "{}", run.stderr);
}

/// A jumpbox asked for by name on a VDS Supervisor: run as asked, with a warning in the route's
/// reason; the fake leaves the vSphere Pod unschedulable as kube-scheduler marks it, and the run
/// says so with `--via ssh` within seconds, the pod deleted.
#[test]
fn a_jumpbox_that_cannot_be_scheduled_is_known_within_seconds() {
    let env = Env::new("vds", Workload::black_hole());
    let started = std::time::Instant::now();
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    run.expect_code(3);
    let report = run.diagnose_report();
    assert!(
        report.route.reason.starts_with("--via jumpbox (warning:")
            && report.route.reason.contains("VDS"),
        "{}",
        report.route.reason
    );
    assert_eq!(env.supervisor.created_pods().len(), 1);
    for n in &report.nodes {
        let e = reach_error(n);
        assert_eq!(e.kind, ReachErrorKind::Unschedulable, "{e:?}");
        assert!(
            e.message.contains("0/3 nodes are available") && e.message.contains("--via ssh"),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
    }
    assert!(env.supervisor.existing_pods().is_empty());
}

/// A jumpbox that nothing takes: the fake leaves the vSphere Pod exactly as created (Pending, no
/// node, no condition, no event: the least a Supervisor with vSphere Pods off may do; it is not
/// documented), on a Supervisor whose stack (NSX) runs vSphere Pods, so the route is the
/// jumpbox's. Known within seconds, not at `--timeout` (2m by default): one line that says
/// vSphere Pods may be disabled and `--via ssh`, the pod deleted.
#[test]
fn a_jumpbox_no_host_takes_is_known_within_seconds() {
    let env = Env::new(SET, Workload::black_hole());
    env.supervisor.leave_vsphere_pods_pending();
    let started = std::time::Instant::now();
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    run.expect_code(3);
    let report = run.diagnose_report();
    assert_eq!(env.supervisor.created_pods().len(), 1);
    for n in &report.nodes {
        let e = reach_error(n);
        assert_eq!(e.kind, ReachErrorKind::Unschedulable, "{e:?}");
        for needed in [
            "no host took the jumpbox pod within 8s",
            "vSphere Pods may be disabled on this Supervisor",
            "vSphere 9.1",
            "VDS",
            "--via ssh",
        ] {
            assert!(e.message.contains(needed), "{needed}: {}", e.message);
        }
        assert!(!e.message.contains('\n'));
    }
    assert!(env.supervisor.existing_pods().is_empty());
}

/// A jumpbox an admission webhook denies: the create's own answer, one line with the webhook's
/// words and `--via ssh`, nothing left behind.
#[test]
fn a_jumpbox_refused_by_admission_is_one_line_with_its_remedy() {
    let env = Env::new(SET, Workload::black_hole());
    env.supervisor.deny_pods_by_webhook(
        "default.validating.pod.example.com",
        "pods in vSphere Namespaces must use images from harbor.example.com",
    );
    let started = std::time::Instant::now();
    let run = env.diagnose_via_jumpbox(&["-o", "json"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    run.expect_code(3);
    let report = run.diagnose_report();
    for n in &report.nodes {
        let e = reach_error(n);
        assert_eq!(e.kind, ReachErrorKind::Rejected, "{e:?}");
        for needed in [
            "refused by admission",
            "admission webhook \"default.validating.pod.example.com\" denied the request",
            "--via ssh",
        ] {
            assert!(e.message.contains(needed), "{needed}: {}", e.message);
        }
    }
    assert!(env.supervisor.existing_pods().is_empty());
}

/// The workload API is checked again after the probes, and the verdict judges from that later
/// check: etcd healing while the probes run (the fake's kube-apiserver fails `/readyz` with
/// `[-]etcd failed` until the moment the jumpbox pod is created, then passes) is `Healthy`,
/// with both checks in the report (when each was made) and the change in the evidence; the
/// reverse (answering before the probes, failing after) is never `Healthy`.
#[test]
fn the_workload_api_is_checked_again_after_the_probes() {
    use etcdnet::report::v1alpha2::ApiState;
    for healthy_at_start in [false, true] {
        let (workload, etcd) = Workload::etcd_switchable(healthy_at_start);
        let env = Env::new(SET, workload);
        let again = etcd.clone();
        env.supervisor.on_pod_created(move |pod| {
            // The probes run now: etcd changes state while they do.
            etcd.set_healthy(!healthy_at_start);
            Some(etcdnet_fakeapi::PodScript::succeeds(scripted_jumpbox_log(
                pod, &CP,
            )))
        });
        let run = env.diagnose_via_jumpbox(&["-o", "json"]);
        let report = run.diagnose_report();
        let api = &report.workload_api;
        let first = api
            .before_probes
            .as_ref()
            .unwrap_or_else(|| panic!("both checks kept: {api:#?}"));
        assert!(
            api.checked_at.is_some() && first.checked_at.is_some(),
            "{api:#?}"
        );
        let (before, after) = if healthy_at_start {
            (ApiState::Reachable, ApiState::HttpError)
        } else {
            (ApiState::HttpError, ApiState::Reachable)
        };
        assert_eq!((first.state, api.state), (before, after), "{api:#?}");
        let evidence = report.verdict.evidence.join("\n");
        if healthy_at_start {
            run.expect_code(1);
            assert_ne!(
                report.verdict.code,
                VerdictCode::Healthy,
                "{:#?}",
                report.verdict
            );
            assert!(
                evidence.contains("it changed while the probes ran: answering at "),
                "{evidence}"
            );
        } else {
            run.expect_code(0);
            assert_eq!(
                report.verdict.code,
                VerdictCode::Healthy,
                "{:#?}",
                report.verdict
            );
            assert!(
                evidence.contains("it changed while the probes ran: HTTP error at ")
                    && evidence.contains("(before the probes), answering at "),
                "{evidence}"
            );
        }
        // The table says it too (the render of the same evidence), from the same start.
        again.set_healthy(healthy_at_start);
        let text = env.diagnose_via_jumpbox(&["--details"]);
        assert!(
            text.stdout.contains("it changed while the probes ran"),
            "{}",
            text.stdout
        );
    }
}

/// `ApiEndpointUnreachable`'s next steps name the load balancer of the Supervisor's networking
/// stack: on NSX (`nsx-quorum-lost`, NCP's groups) the NSX virtual server or Avi, never HAProxy;
/// with the stack unknown (`quorum-lost` serves no networking group) every stack's.
#[test]
fn the_load_balancer_named_is_the_stacks() {
    for (set, nsx) in [("nsx-quorum-lost", true), (SET, false)] {
        let env = Env::new(set, Workload::black_hole());
        env.script_jumpbox_pods_with(&CP, |_, ip| {
            Some(jumpbox_section(&ready_api_server_doc(ip, &CP)))
        });
        let run = env.diagnose_via_jumpbox(&["-o", "json"]);
        run.expect_code(1);
        let report = run.diagnose_report();
        assert_eq!(
            report.verdict.code,
            VerdictCode::ApiEndpointUnreachable,
            "{set}: {:#?}",
            report.verdict
        );
        let steps = report.verdict.next_steps.join("\n");
        assert!(
            steps.contains("Networking > Load Balancing > Virtual Servers")
                && steps.contains("Avi"),
            "{set}: {steps}"
        );
        assert_eq!(steps.contains("HAProxy"), !nsx, "{set}: {steps}");
        assert_eq!(
            steps.contains("networking stack is unknown"),
            !nsx,
            "{set}: {steps}"
        );
    }
}
