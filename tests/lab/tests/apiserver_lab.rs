//! The kube-apiserver stand-ins and the control-plane VIP (tests/lab/README.md, "The API
//! servers and the VIP"), on one 3-node etcd 3.4 lab: readyz fails its etcd check while the local
//! member is leaderless and passes after the heal, the log and crictl say so, the VIP passes to a
//! ready backend and goes dark with `VipDown`, an expired serving certificate is served, a crash
//! loop restarts with back-off.
//!
//! Lab test: root and the lab's packages; compiled as ignored elsewhere (build.rs).

use std::process::Command;
use std::time::{Duration, Instant};

use etcdnet_lab::{Fault, Lab, LabConfig};

const EXEC: Duration = Duration::from_secs(30);

/// `curl` on `node` (its view and network): (exit code, stdout, stderr).
fn curl(lab: &Lab, node: &str, args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["curl", "-sS", "--max-time", "5"];
    argv.extend_from_slice(args);
    let out = lab.exec(node, &argv, None, EXEC).expect("curl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `curl` on the host, verifying with the cluster CA (as a kubeconfig's client does).
fn curl_host(lab: &Lab, url: &str) -> (i32, String, String) {
    let ca = lab.dir().join("cp1/etc/kubernetes/pki/ca.crt");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "3", "--cacert"])
        .arg(&ca)
        .arg(url)
        .output()
        .expect("curl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn crictl(lab: &Lab, node: &str, args: &[&str]) -> String {
    let mut argv = vec!["crictl"];
    argv.extend_from_slice(args);
    let out = lab.exec(node, &argv, None, EXEC).expect("crictl runs");
    assert!(out.status.success(), "crictl {args:?}: {out:?}");
    // `crictl logs` answers on stderr, as the real one replays the container's stream.
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn apiserver_and_vip() {
    etcdnet_lab::require("apiserver_and_vip");
    let lab = Lab::start(LabConfig {
        apiserver: true,
        start_timeout: Duration::from_secs(60),
        ..LabConfig::default()
    })
    .expect("the lab starts");
    let ca = "/etc/kubernetes/pki/ca.crt";

    // Healthy: the node's own 127.0.0.1 and its IP answer, the certificate verifies against the
    // cluster CA for the node's IP (a SAN kubeadm gives it).
    let (rc, body, err) = curl(
        &lab,
        "cp1",
        &["-k", "https://127.0.0.1:6443/readyz?verbose"],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        body.contains("[+]etcd ok\n") && body.ends_with("readyz check passed\n"),
        "{body}"
    );
    let (rc, body, err) = curl(
        &lab,
        "cp1",
        &["--cacert", ca, "https://198.18.0.11:6443/livez"],
    );
    assert_eq!((rc, body.as_str()), (0, "ok"), "{err}");
    let ps = crictl(&lab, "cp1", &["ps", "--name", "kube-apiserver"]);
    assert!(
        ps.lines()
            .any(|l| l.contains("kube-apiserver") && l.contains("Running")),
        "{ps}"
    );

    // The VIP passes to a ready node; the certificate verifies for 127.0.0.1 (the endpoint).
    let vip = lab.start_vip().expect("the VIP starts");
    let (rc, body, err) = curl_host(&lab, &format!("https://{vip}/readyz"));
    assert_eq!((rc, body.as_str()), (0, "ok"), "{err}");
    assert_eq!(lab.vip_forwarded().iter().sum::<usize>(), 1);

    // Every member leaderless: the etcd check fails, 500, the real body; the log says why.
    // Polled, and the code read from the same answer as the body: the fabric drops packets *to*
    // 2379/2380, so the raft streams' data (sent from 2380: the member a stream dials writes its
    // messages to the dialer on the response, etcd server/etcdserver/api/rafthttp/http.go
    // `streamHandler.ServeHTTP`, `attachOutgoingConn`) keeps flowing for the seconds until
    // TCP stalls on its lost ACKs (seen: a second or two), and readyz can pass again after its
    // first failure.
    lab.inject(Fault::DropAllPeers).unwrap();
    let (body, code) = until(
        "cp1's readyz fails its etcd check",
        Duration::from_secs(30),
        || {
            let (rc, out, _) = curl(
                &lab,
                "cp1",
                &[
                    "-k",
                    "-w",
                    "\n%{http_code}",
                    "https://127.0.0.1:6443/readyz",
                ],
            );
            let (body, code) = out.rsplit_once('\n')?;
            (rc == 0 && body.contains("[-]etcd failed: reason withheld\n"))
                .then(|| (body.to_string(), code.to_string()))
        },
    );
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    assert_eq!(code, "500", "{body}");
    let id = crictl(&lab, "cp1", &["ps", "-q", "--name", "kube-apiserver"]);
    let logs = crictl(&lab, "cp1", &["logs", "--tail", "20", id.trim()]);
    assert!(
        logs.lines()
            .any(|l| l.starts_with('E') && l.contains("etcdserver: request timed out")),
        "{logs}"
    );
    let raw = std::fs::read_to_string(lab.apiserver_log("cp1", 0).unwrap()).unwrap();
    assert!(raw.lines().all(|l| l.contains(" stderr F ")), "{raw}");

    lab.heal().unwrap();
    until(
        "cp1's readyz passes after the heal",
        Duration::from_secs(30),
        || {
            let (rc, body, _) = curl(&lab, "cp1", &["-k", "https://127.0.0.1:6443/readyz"]);
            (rc == 0 && body == "ok").then_some(())
        },
    );

    // The VIP dark: connections taken, never answered.
    lab.inject(Fault::VipDown).unwrap();
    let (rc, _, err) = curl_host(&lab, &format!("https://{vip}/readyz"));
    assert_eq!(rc, 28, "{err}");
    lab.heal().unwrap();
    let (rc, _, err) = curl_host(&lab, &format!("https://{vip}/readyz"));
    assert_eq!(rc, 0, "{err}");

    // An expired serving certificate, served from the next connection on.
    lab.inject(Fault::ExpiredApiserverCert("cp2".into()))
        .unwrap();
    let (rc, _, err) = curl(
        &lab,
        "cp2",
        &["--cacert", ca, "https://198.18.0.12:6443/readyz"],
    );
    assert_eq!(rc, 60, "{err}");
    assert!(err.contains("expired"), "{err}");

    // Not yet valid (a clock set back), then valid again on the heal.
    lab.inject(Fault::FutureApiserverCert("cp1".into()))
        .unwrap();
    let (rc, _, err) = curl(
        &lab,
        "cp1",
        &["--cacert", ca, "https://198.18.0.11:6443/readyz"],
    );
    assert_eq!(rc, 60, "{err}");
    assert!(err.contains("not yet valid"), "{err}");

    // Still starting: the next attempt runs, its port refuses until it serves.
    lab.restart_apiserver("cp1", Duration::from_secs(2))
        .unwrap();
    until("cp1's attempt 1 runs", Duration::from_secs(5), || {
        (lab.apiserver_state("cp1").unwrap() == (Some(1), true, false, 0)).then_some(())
    });
    let (rc, _, _) = curl(&lab, "cp1", &["-k", "https://127.0.0.1:6443/livez"]);
    assert_eq!(rc, 7, "refused while starting");
    let ps = crictl(&lab, "cp1", &["ps", "-a", "--name", "kube-apiserver"]);
    assert!(
        ps.lines()
            .any(|l| l.contains("Running") && l.split_whitespace().rev().nth(2) == Some("1")),
        "attempt 1 runs, attempt 0 exited:\n{ps}"
    );
    until(
        "cp1 serves after its start delay",
        Duration::from_secs(10),
        || {
            let (rc, _, _) = curl(&lab, "cp1", &["-k", "https://127.0.0.1:6443/livez"]);
            (rc == 0).then_some(())
        },
    );

    // A crash loop: each attempt exits 1 with its bind failure, restarted with back-off.
    lab.inject(Fault::ApiserverCrashLoop("cp3".into())).unwrap();
    until(
        "cp3's kube-apiserver restarted by the back-off",
        Duration::from_secs(20),
        || {
            let (attempt, _, _, restarts) = lab.apiserver_state("cp3").unwrap();
            (attempt >= Some(2) && restarts >= 1).then_some(())
        },
    );
    let (rc, _, _) = curl(&lab, "cp3", &["-k", "https://127.0.0.1:6443/readyz"]);
    assert_eq!(rc, 7, "refused while crash-looping");
    let ps = crictl(
        &lab,
        "cp3",
        &["ps", "-a", "--name", "kube-apiserver", "-o", "json"],
    );
    assert!(ps.contains("\"name\": \"kube-apiserver\""), "{ps}");
    let exited = crictl(
        &lab,
        "cp3",
        &[
            "ps",
            "-a",
            "-q",
            "--state",
            "exited",
            "--name",
            "kube-apiserver",
        ],
    );
    let logs = crictl(&lab, "cp3", &["logs", exited.lines().next().unwrap_or("")]);
    assert!(logs.contains("bind: address already in use"), "{logs}");
    lab.heal().unwrap();
    until(
        "cp3 serves again after the heal",
        Duration::from_secs(10),
        || {
            let (rc, _, _) = curl(&lab, "cp3", &["-k", "https://127.0.0.1:6443/livez"]);
            (rc == 0).then_some(())
        },
    );
    let (rc, _, err) = curl(
        &lab,
        "cp2",
        &["--cacert", ca, "https://198.18.0.12:6443/readyz"],
    );
    assert_eq!(rc, 0, "the heal re-issued cp2's certificate valid: {err}");
}

/// With the kubelet stand-in, kubeadm's liveness probe on `/livez` (whose etcd check fails while
/// the local member is leaderless) kills kube-apiserver after 8 failures and restarts it on the
/// back-off: "kube-apiserver is crashing", the support article's symptom.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn leaderless_etcd_gets_the_apiserver_killed_by_its_liveness_probe() {
    etcdnet_lab::require("apiserver_liveness");
    let lab = Lab::start(LabConfig {
        apiserver: true,
        kubelet: Some(etcdnet_lab::KubeletConfig::scaled(20)),
        start_timeout: Duration::from_secs(60),
        ..LabConfig::default()
    })
    .expect("the lab starts");
    // The startup probe passes first (its initial delay is 0.5 s at this scale): a quorum read
    // fails at once under the drop, so a fault injected before would fail the startup probe.
    std::thread::sleep(Duration::from_millis(1500));
    lab.inject(Fault::DropAllPeers).unwrap();
    let events = until(
        "cp1's kube-apiserver killed by its liveness probe",
        Duration::from_secs(40),
        || {
            let e = lab.apiserver_events("cp1").unwrap();
            (!e.is_empty()).then_some(e)
        },
    );
    assert!(
        events[0].starts_with(
            "attempt 0: Liveness probe failed 8 times (HTTP probe failed with statuscode: 500)"
        ),
        "{events:?}"
    );
    until(
        "cp1's kube-apiserver restarted",
        Duration::from_secs(10),
        || {
            let (attempt, _, _, restarts) = lab.apiserver_state("cp1").unwrap();
            (attempt >= Some(1) && restarts >= 1).then_some(())
        },
    );
    let ps = crictl(&lab, "cp1", &["ps", "-a", "--name", "kube-apiserver"]);
    assert!(ps.contains("Exited"), "{ps}");
}
