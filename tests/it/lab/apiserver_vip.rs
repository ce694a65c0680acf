//! The workload API as a real cluster serves it (tests/lab/README.md, "The API servers and the
//! VIP"): the `<cluster>-kubeconfig` secret's server is the lab's VIP, its CA the lab's cluster
//! CA; the VIP passes to a node's kube-apiserver stand-in, which serves `/readyz` itself and
//! passes API requests to the workload fake only while its etcd check passes. So the pod route
//! works while etcd has a quorum, and nothing (no pod) can be created while every member is
//! leaderless, as on a real cluster. Needs root and the lab's packages.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::{ApiServerState, VerdictCode};
use etcdnet_lab::Fault;

/// `curl` on the host against the endpoint, trusting the secret's CA: (HTTP code, body).
fn curl(ca: &std::path::Path, method: &str, url: &str) -> (String, String) {
    curl_within(ca, method, url, "10")
}

fn curl_within(ca: &std::path::Path, method: &str, url: &str, max: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", max, "-X", method, "--cacert"])
        .arg(ca)
        .args(["-H", "Content-Type: application/json", "-w", "\n%{http_code}"])
        .args(if method == "POST" {
            vec![
                "-d",
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"vip-probe"},"spec":{"nodeName":"nonexistent","containers":[{"name":"c","image":"busybox"}]}}"#,
            ]
        } else {
            vec![]
        })
        .arg(url)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

// Long: a healthy diagnosis through the VIP, then polled until every member is leaderless, then
// until the quorum is back.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn the_workload_api_answers_through_the_vip_only_while_etcd_has_a_quorum() {
    let lab = start_lab_with("apiserver_vip", true);
    let fixture = FakeConfig::from_dir(etcdnet_fakeapi::workload_set("lab-3")).unwrap();
    let workload = Workload::lab(fixture, lab.clone()).unwrap();
    let url = workload.url();
    assert_ne!(
        url,
        workload.api().unwrap().url(),
        "the endpoint is the VIP, not the fake itself"
    );
    let env = Env::new(SET, workload);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, lab.cluster_ca_pem().unwrap()).unwrap();
    let pods = format!("{url}/api/v1/namespaces/default/pods");

    // Healthy: the pod route works end to end through the VIP and the API servers (pods
    // created, watched, their logs read, deleted: every call passed on to the fake).
    let (run, report) = diagnose_until(VerdictCode::Healthy, || env.diagnose_lab(&["-o", "json"]));
    run.expect_code(0);
    assert_eq!(report.route.name, "pod");
    let api = env.workload.as_ref().unwrap().api().unwrap();
    assert!(!api.created_pods().is_empty());
    assert!(
        api.existing_pods().is_empty(),
        "the probe pods were deleted"
    );
    assert!(lab.vip_forwarded().iter().sum::<usize>() > 0);

    // Every member leaderless: the endpoint still answers (each API server is up), but from
    // its own readyz as a failure and with 500 to every API call; no pod can be created.
    // The members lose their leader at different moments (the leader itself only when its
    // check-quorum fires, an election timeout after the cut): waited for until three answers
    // in a row (the VIP's round robin over the three) are etcd's timeout.
    lab.inject(Fault::DropAllPeers).unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut in_a_row = 0;
    while in_a_row < 3 {
        let (code, body) = curl(&ca, "GET", &pods);
        if code == "500" && body.contains("etcdserver: request timed out") {
            in_a_row += 1;
            continue;
        }
        in_a_row = 0;
        assert!(Instant::now() < deadline, "still answering: {code} {body}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // Each of the three API servers refuses now (the VIP goes round robin over them).
    let created = api.created_pods().len();
    for _ in 0..3 {
        let (code, body) = curl(&ca, "POST", &pods);
        assert_eq!(code, "500", "{body}");
    }
    assert_eq!(api.created_pods().len(), created, "no pod without etcd");
    let (code, body) = curl(&ca, "GET", &format!("{url}/readyz?verbose"));
    assert_eq!(code, "500", "{body}");
    assert!(body.contains("[-]etcd failed: reason withheld"), "{body}");

    lab.heal().unwrap();
    // The usual bound, plus what TCP's backoff on the streams the cut stalled may add.
    let deadline = Instant::now() + Duration::from_secs(40) + lab.stall_after_heal();
    loop {
        let (code, body) = curl(&ca, "GET", &pods);
        if code == "200" {
            break;
        }
        assert!(Instant::now() < deadline, "not back: {code} {body}");
        std::thread::sleep(Duration::from_millis(500));
    }

    // The VIP itself dark, every API server ready behind it.
    lab.inject(Fault::VipDown).unwrap();
    let (code, _) = curl_within(&ca, "GET", &format!("{url}/readyz"), "3");
    assert_eq!(code, "000", "no answer through a dark VIP");

    // The plugin on the same worlds (issue 36): `Healthy` only with the workload API answering.
    // With the endpoint dark, `--via auto` reaches the VMs from the Supervisor: a jumpbox that
    // SSHes in with the cluster's key.
    env.supervisor
        .execute_jumpbox_pods_in(lab.clone())
        .expect("the Supervisor runs jumpbox pods");
    env.supervisor
        .set_secret_data(NS, "tkc-prod-ssh", "ssh-privatekey", lab.ssh_private_key())
        .unwrap();
    let diagnose = |extra: &[&str]| {
        let mut args = vec!["-o", "json", "--api-timeout", "2s"];
        args.extend_from_slice(extra);
        env.diagnose_lab(&args)
    };
    let shown = crate::common::past::shown;

    // Every API server ready, the VIP dark: the load balancer, with the endpoint and the three
    // healthy backends.
    let (run, r) = diagnose_until(VerdictCode::ApiEndpointUnreachable, || diagnose(&[]));
    assert_eq!(
        r.verdict.code,
        VerdictCode::ApiEndpointUnreachable,
        "{}",
        shown(&r)
    );
    run.expect_code(1);
    assert_eq!(r.route.name, "jumpbox");
    assert!(r.verdict.summary.contains(&url), "{}", shown(&r));
    let evidence = r.verdict.evidence.join("\n");
    for n in &r.nodes {
        let backend = format!(
            "{} {}:6443 (/readyz passed on the node",
            n.name,
            n.ip.unwrap()
        );
        assert!(evidence.contains(&backend), "{backend}: {evidence}");
    }
    let steps = r.verdict.next_steps.join("\n");
    assert!(
        // quorum-lost serves no networking group: every stack's load balancer is named.
        steps.contains("Networking > Load Balancing > Virtual Servers")
            && steps.contains("HAProxy"),
        "{steps}"
    );

    // etcd healthy, every API server refusing (crash looping on its port): not Healthy, the API
    // servers named, with the bind failure their log says.
    lab.heal().unwrap();
    for n in CP {
        lab.inject(Fault::ApiserverCrashLoop(n.to_string()))
            .unwrap();
    }
    let (run, r) = diagnose_until(VerdictCode::ApiServerNotServing, || diagnose(&[]));
    assert_eq!(
        r.verdict.code,
        VerdictCode::ApiServerNotServing,
        "{}",
        shown(&r)
    );
    run.expect_code(1);
    assert_eq!(r.verdict.nodes.len(), CP.len(), "{}", shown(&r));
    assert!(
        r.verdict
            .evidence
            .iter()
            .any(|e| e.contains("its log: ") && e.contains("bind: address already in use")),
        "{}",
        shown(&r)
    );
    let table = env.diagnose_lab(&["-o", "wide", "--details", "--api-timeout", "2s"]);
    assert!(
        table.stdout.contains("API SERVERS (") && table.stdout.contains("API SERVER "),
        "{}{}",
        table.stdout,
        table.stderr
    );

    // Both healthy: Healthy, and the route the pod again (the workload API answers).
    lab.heal().unwrap();
    let (run, r) = diagnose_until(VerdictCode::Healthy, || diagnose(&[]));
    assert_eq!(r.verdict.code, VerdictCode::Healthy, "{}", shown(&r));
    run.expect_code(0);
    assert!(
        r.verdict
            .evidence
            .iter()
            .any(|e| e.starts_with("the workload API ") && e.contains(" answers: ")),
        "{}",
        shown(&r)
    );

    // One node's apiserver.crt expired: named with its date, whether the endpoint answered
    // through the others (a warning of Healthy) or not (ApiServerNotServing).
    lab.inject(Fault::ExpiredApiserverCert(CP[0].to_string()))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = diagnose(&["--via", "jumpbox"]);
        let r = run.diagnose_report();
        let node = r.nodes.iter().find(|n| n.name == CP[0]).unwrap();
        let not_after = node
            .probe
            .as_ref()
            .and_then(|p| p.api_server.as_ref())
            .filter(|a| a.state == ApiServerState::CertificateExpired)
            .and_then(|a| a.cert_not_after.clone());
        if let Some(date) = not_after {
            let said = format!("apiserver.crt expired at {date}");
            let lines = r.verdict.evidence.iter().chain(&r.verdict.notes);
            assert!(
                lines
                    .filter(|l| l.contains(CP[0]))
                    .any(|l| l.contains(&said)),
                "{said}: {}",
                shown(&r)
            );
            break;
        }
        assert!(Instant::now() < deadline, "{}", shown(&r));
        std::thread::sleep(Duration::from_secs(2));
    }
    lab.heal().unwrap();
}
