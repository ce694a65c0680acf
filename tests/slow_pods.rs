//! Slow is not broken: a probe pod that takes longer to start than the client's read timeout
//! (a slow image pull, a vSphere Pod that takes 30 s) is waited for until `--timeout`, not
//! reported as an API failure. Through the binary and the jumpbox route, whose client is the
//! Supervisor's: `--request-timeout 1s` makes its read timeout short, the pods start after 3 s.

mod common;

use std::time::Duration;

use common::article::*;
use common::*;
use etcdnet_fakeapi::PodScript;
use serde_json::Value;

/// The control-plane node whose VM has `ip` (the fixture's .11, .12, .13).
fn node_at(ip: &str) -> &'static str {
    ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
        .iter()
        .position(|i| *i == ip)
        .map_or("unknown", |i| CP[i])
}

/// The captured healthy probe document as a jumpbox pod prints it, with this VM's IP.
fn jumpbox_log(pod: &Value) -> String {
    let ip = pod["spec"]["containers"][0]["command"][4]
        .as_str()
        .unwrap_or("198.18.0.11");
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/probe-output/healthy-node.json"),
    )
    .unwrap()
    .trim()
    .replace(
        "\"nodeIp\":\"198.18.0.11\"",
        &format!("\"nodeIp\":\"{ip}\""),
    )
    // The document must be this VM's own (the plugin checks its host name and addresses).
    .replace("\"ips\":[\"198.18.0.11\"]", &format!("\"ips\":[\"{ip}\"]"))
    .replace(
        "\"hostname\":\"tkc-1-control-plane-node1\"",
        &format!("\"hostname\":\"{}\"", node_at(ip)),
    );
    format!("ETCDNET-REACH 22 Open\n{doc}\n\nETCDNET-SSH-EXIT 0\n")
}

#[test]
fn a_pod_slower_than_the_read_timeout_is_waited_for() {
    let env = Env::new(SET, Workload::black_hole());
    // Pending with no event for 3 s: three read timeouts of the watch.
    env.supervisor.on_pod_created(|pod| {
        Some(PodScript {
            log: jumpbox_log(pod),
            run_after: Duration::from_secs(3),
            finish_after: Some(Duration::from_millis(100)),
            ..PodScript::default()
        })
    });
    let run = env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--request-timeout",
        "1s",
        "--api-timeout",
        "1s",
        "--timeout",
        "60s",
        "-o",
        "json",
    ]);
    let report = run.diagnose_report();
    for node in &report.nodes {
        assert!(node.reached, "{}: {:?}", node.name, node.error);
    }
    assert_eq!(report.result.nodes_reached, 3);
    assert!(
        env.supervisor.existing_pods().is_empty(),
        "pods left behind: {:?}",
        env.supervisor.existing_pods()
    );
}

#[test]
fn only_the_timeout_ends_the_wait() {
    let env = Env::new(SET, Workload::black_hole());
    // Never started: no event at all, ever.
    env.supervisor.on_pod_created(|_| None);
    let started = std::time::Instant::now();
    let run = env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--request-timeout",
        "1s",
        "--api-timeout",
        "1s",
        "--timeout",
        "4s",
        "-o",
        "json",
    ]);
    let report = run.diagnose_report();
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "waited for the bound"
    );
    for node in &report.nodes {
        let e = node.error.as_ref().expect("not reached");
        assert_eq!(e.kind, etcdnet::probe::ReachErrorKind::Timeout, "{e:?}");
        assert!(e.message.contains("still Pending"), "{}", e.message);
    }
    assert!(env.supervisor.existing_pods().is_empty());
}
