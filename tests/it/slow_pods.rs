//! Slow is not broken: a probe pod that takes longer to start than the client's read timeout
//! (a slow image pull, a vSphere Pod that takes 30 s) is waited for until `--timeout`, not
//! reported as an API failure. Through the binary and the jumpbox route, whose client is the
//! Supervisor's: `--request-timeout 1s` makes its read timeout short, the pods start after 3 s.

use crate::common;

use std::time::Duration;

use common::article::*;
use common::*;
use etcdnet_fakeapi::PodScript;

#[test]
fn a_pod_slower_than_the_read_timeout_is_waited_for() {
    let env = Env::new(SET, Workload::black_hole());
    // Pending with no event for 3 s: three read timeouts of the watch.
    env.supervisor.on_pod_created(|pod| {
        Some(PodScript {
            log: scripted_jumpbox_log(pod, &CP),
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
        assert_eq!(
            e.kind,
            etcdnet::report::v1alpha2::ReachErrorKind::Timeout,
            "{e:?}"
        );
        assert!(e.message.contains("still Pending"), "{}", e.message);
    }
    assert!(env.supervisor.existing_pods().is_empty());
}
