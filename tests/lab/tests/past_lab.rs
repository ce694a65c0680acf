//! The lab with a past, on real etcd 3.4 and 3.5: the kubelet stand-in's restarts and probes, a
//! node aged hours back, and membership situations made with the real etcdctl.
//!
//! Lab tests: root and the lab's packages (`.ci/lab-packages`, etcd 3.5 from `.ci/run`);
//! compiled as ignored elsewhere (build.rs). Each case runs once per etcd line
//! (`etcd_3_4::<case>`, `etcd_3_5::<case>`).

use std::time::{Duration, Instant};

use etcdnet_lab::{AgeSpec, EtcdLine, EtcdVersion, Fault, KubeletConfig, Lab, LabConfig, Logger};
use serde_json::Value;

const EXEC: Duration = Duration::from_secs(30);

fn start(test: &str, etcd: EtcdVersion, cfg: LabConfig) -> Lab {
    etcdnet_lab::require(test);
    etcdnet_lab::require_etcd(test, etcd);
    let lab = Lab::start(LabConfig {
        etcd,
        start_timeout: Duration::from_secs(60),
        ..cfg
    })
    .expect("the lab starts");
    eprintln!(
        "{test}: lab {} (etcd {etcd}) started in {:?}",
        lab.id(),
        lab.started_in()
    );
    lab
}

/// `crictl <args>` on the node: (stdout, stderr). crictl logs answer on stderr.
fn crictl(lab: &Lab, node: &str, args: &[&str]) -> (String, String) {
    let mut argv = vec!["crictl"];
    argv.extend_from_slice(args);
    let out = lab.exec(node, &argv, None, EXEC).expect("crictl runs");
    assert!(
        out.status.success(),
        "crictl {args:?} on {node}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ps_json(lab: &Lab, node: &str) -> Vec<Value> {
    let (out, _) = crictl(lab, node, &["ps", "-a", "-o", "json"]);
    let v: Value = serde_json::from_str(&out).expect("crictl ps -o json is JSON");
    v["containers"].as_array().cloned().unwrap_or_default()
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// What a log must not hold for its exit to count as caused by the network: etcd's own fatal
/// reasons (a panic, zap's fatal/panic levels, capnslog's C/P levels, a corrupt WAL or db,
/// certificate/key or data-dir permission errors, a bad flag).
const FATAL: [&str; 10] = [
    "panic:",
    "\"level\":\"fatal\"",
    "\"level\":\"panic\"",
    " C | ",
    " P | ",
    "wal: crc mismatch",
    "database file (/var/lib/etcd/member/snap/db) of the backend is corrupted",
    "permission denied",
    "certificate has expired",
    "flag provided but not defined",
];

/// Startup probe every 0.5 s, killed after 24 failures (~12.5 s), back-off from 0.5 s:
/// kubelet's and kubeadm's numbers divided by 20, to see several restarts in a test.
fn fast_kubelet() -> KubeletConfig {
    KubeletConfig::scaled(20)
}

// Long: one lab with the kubelet stand-in for both cases (a VM powered off and on, then a member
// restarted during a partition): starting a lab for each was a lab start and its members' CPU
// more per etcd line (issue 39, item 5). The powered-off VM first: it ends whole and healthy
// (`wait_healthy`), its kubelet having restarted nothing, which the partition's case checks anew.
fn powered_off_then_restarted_during_a_partition(etcd: EtcdVersion) {
    let test = "powered_off_then_restarted_during_a_partition";
    let lab = start(
        test,
        etcd,
        LabConfig {
            kubelet: Some(fast_kubelet()),
            ..LabConfig::with_nodes(3)
        },
    );
    a_powered_off_vm_answers_nothing_until_powered_on(&lab);
    restarted_during_a_partition_is_killed_by_its_startup_probe(&lab);
}

// Long: waits for kubelet's startup probe (scaled) to kill a member that cannot reach a quorum,
// ~12.5 s a kill, and for its restarts after back-off, more than once.
fn restarted_during_a_partition_is_killed_by_its_startup_probe(lab: &Lab) {
    // kubeadm's manifest: the probes' port is etcd's metrics listener on loopback.
    let manifest = std::fs::read_to_string(lab.node("cp1").unwrap().manifest()).unwrap();
    assert!(manifest.contains("- --listen-metrics-urls=http://127.0.0.1:2381"));
    assert!(manifest.contains("path: /health?serializable=false"));
    // A healthy cluster: the startup probes passed, nobody was restarted.
    std::thread::sleep(Duration::from_secs(3));
    for n in ["cp1", "cp2", "cp3"] {
        assert_eq!(
            lab.kubelet_restarts(n).unwrap(),
            0,
            "{n}: {:?}",
            lab.kubelet_events(n)
        );
    }
    let first_id = lab.container_id("cp1").unwrap();
    lab.inject(Fault::DropAllPeers).unwrap();
    // The VM restarted during the cut: a new container that never sees a leader.
    lab.restart_etcd("cp1").unwrap();
    assert_eq!(lab.attempt("cp1").unwrap(), 1);
    wait_for(
        "two restarts of cp1 by its kubelet",
        Duration::from_secs(120),
        || lab.kubelet_restarts("cp1").unwrap() >= 2,
    );
    let events = lab.kubelet_events("cp1").unwrap();
    eprintln!("cp1 kubelet: {events:#?}");
    assert!(
        events
            .iter()
            .any(|e| e.contains("Startup probe failed 24 times")),
        "killed by the startup probe: {events:?}"
    );
    let attempt = lab.attempt("cp1").unwrap();
    assert!(attempt >= 3, "attempt {attempt}");
    // crictl: the current container and one dead one, ids of their own, attempts in order.
    let containers = ps_json(lab, "cp1");
    assert_eq!(containers.len(), 2, "{containers:?}");
    let current = &containers[0];
    let previous = &containers[1];
    assert_eq!(current["id"], lab.container_id("cp1").unwrap());
    assert_ne!(current["id"], first_id);
    assert_eq!(current["metadata"]["attempt"], attempt);
    assert_eq!(previous["metadata"]["attempt"], attempt - 1);
    assert_eq!(previous["state"], "CONTAINER_EXITED");
    // The previous one was stopped by the kubelet: SIGTERM to an etcd that never became ready
    // (it installs its own handler only then), which as a container's pid 1 exits 2 (Go's
    // runtime, dieFromSignal), with nothing about a signal in its log.
    let prev_id = previous["id"].as_str().unwrap();
    let (inspect, _) = crictl(lab, "cp1", &["inspect", prev_id]);
    let inspect: Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(inspect["status"]["exitCode"], 2, "{inspect}");
    // Both logs tell of the network (no leader, peers unreachable), neither of a fatal reason.
    let id = current["id"].as_str().unwrap();
    let (_, now_log) = crictl(lab, "cp1", &["logs", "--tail", "500", id]);
    let (_, prev_log) = crictl(lab, "cp1", &["logs", "--tail", "500", "--previous", id]);
    let network = |log: &str| {
        log.contains("i/o timeout") || log.contains("no leader") || log.contains("NO LEADER")
    };
    assert!(network(&prev_log), "previous attempt's log:\n{prev_log}");
    // The current attempt may have only just started (its log: the start-up lines).
    for log in [&now_log, &prev_log] {
        for bad in FATAL {
            assert!(!log.contains(bad), "{bad:?} in:\n{log}");
        }
    }
    assert!(!prev_log.contains("shutting down"), "{prev_log}");
    for n in ["cp2", "cp3"] {
        eprintln!(
            "{n} (running through the cut): attempt {}, kubelet {:?}",
            lab.attempt(n).unwrap(),
            lab.kubelet_events(n).unwrap()
        );
    }
    // The network back: the kubelet's next restart joins, and the cluster is whole again.
    lab.heal().unwrap();
    lab.wait_recovered(Duration::from_secs(90)).unwrap();
}

fn a_removed_member_is_restarted_and_exits_again(etcd: EtcdVersion) {
    let test = "a_removed_member_is_restarted_and_exits_again";
    let lab = start(
        test,
        etcd,
        LabConfig {
            kubelet: Some(fast_kubelet()),
            ..LabConfig::with_nodes(4)
        },
    );
    // KCP's scale-down: cp4's member removed, its Machine not deleted yet.
    lab.remove_member("cp4").unwrap();
    wait_for("two restarts of cp4", Duration::from_secs(90), || {
        lab.kubelet_restarts("cp4").unwrap() >= 2
    });
    assert!(lab.attempt("cp4").unwrap() >= 2);
    let members = lab.members().unwrap();
    assert_eq!(members.len(), 3, "{members:?}");
    // Each attempt ends the same way (wait for the current one to end too).
    wait_for(
        "cp4's current attempt exits",
        Duration::from_secs(60),
        || lab.etcd_pid("cp4").is_none(),
    );
    let containers = ps_json(&lab, "cp4");
    let id = containers[0]["id"].as_str().unwrap().to_string();
    let (_, log) = crictl(&lab, "cp4", &["logs", "--tail", "500", &id]);
    let (_, prev) = crictl(&lab, "cp4", &["logs", "--tail", "500", "--previous", &id]);
    for l in [&log, &prev] {
        assert!(
            l.contains("the member has been permanently removed from the cluster"),
            "{l}"
        );
    }
    // Its lines can still be written: a removed member's id comes from its own log.
    lab.append_log_lines(
        "cp4",
        &[(
            Duration::from_secs(600),
            EtcdLine::SlowFdatasync {
                took: Duration::from_millis(1100),
            },
        )],
    )
    .unwrap();
    // The three members keep their quorum meanwhile.
    lab.etcdctl("cp1", &["put", "scale-down", "ok"]).unwrap();
    for n in ["cp1", "cp2", "cp3"] {
        assert!(lab.health(n).unwrap(), "{n}");
        assert_eq!(lab.kubelet_restarts(n).unwrap(), 0, "{n}");
    }
}

// Long: one lab for both cases (membership made with the real etcdctl: a learner, a member
// without a VM, cp3 rejoined as a learner and promoted; then cp1 aged hours back), as a lab each
// was a lab start more per etcd line (issue 39, item 5). The membership first: etcd refuses a
// member add until its leader has been connected to every voting member for 5 s (etcd
// server/etcdserver/server.go: `mayAddMember` under `--strict-reconfig-check`, the default,
// asks `isConnectedFullySince(..., now - HealthInterval)`, `HealthInterval` 5 s), which a member
// just restarted with a past is not; the learner case ends healthy, cp3 promoted. 3.4's text
// logger needs a lab of its own, started last.
fn members_without_a_vm_and_learners_then_aged(etcd: EtcdVersion) {
    let test = "members_without_a_vm_and_learners_then_aged";
    let lab = start(test, etcd, LabConfig::with_nodes(3));
    a_member_without_a_vm_and_learners(&lab);
    age_gives_the_container_a_past_in_time_order(&lab);
    // The 3.4 text logger gets its own form.
    if etcd == EtcdVersion::V3_4 {
        drop(lab);
        aged_with_the_text_logger(test, etcd);
    }
}

fn age_gives_the_container_a_past_in_time_order(lab: &Lab) {
    let spec = lab.troubled_past("cp1").unwrap();
    lab.age("cp1", &spec).unwrap();
    // Repeated slow fdatasync in the last 5 minutes (before this etcd started: the past part),
    // and one now (after its lines).
    let slow = |ms| EtcdLine::SlowFdatasync {
        took: Duration::from_millis(ms),
    };
    lab.append_log_lines(
        "cp1",
        &[
            (Duration::from_secs(240), slow(1200)),
            (Duration::from_secs(180), slow(1300)),
            (Duration::from_secs(120), slow(1400)),
        ],
    )
    .unwrap();
    lab.append_log_lines("cp1", &[(Duration::ZERO, slow(2100))])
        .unwrap();
    let (table, _) = crictl(lab, "cp1", &["ps"]);
    assert!(table.contains("4 hours ago"), "{table}");
    let c = &ps_json(lab, "cp1")[0];
    let created: u128 = c["createdAt"].as_str().unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let age = Duration::from_nanos((now - created) as u64);
    assert!(
        age > Duration::from_secs(4 * 3600 - 60) && age < Duration::from_secs(4 * 3600 + 60),
        "{age:?}"
    );
    let id = c["id"].as_str().unwrap();
    let (inspect, _) = crictl(lab, "cp1", &["inspect", id]);
    let inspect: Value = serde_json::from_str(&inspect).unwrap();
    let hours_ago = |field: &str| inspect["status"][field].as_str().unwrap().to_string();
    assert_eq!(hours_ago("createdAt"), hours_ago("startedAt"));
    assert_eq!(inspect["status"]["state"], "CONTAINER_RUNNING");
    let (_, log) = crictl(lab, "cp1", &["logs", "--tail", "500", id]);
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() <= 500);
    let ts: Vec<String> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["ts"].as_str().map(str::to_string))
        .collect();
    assert!(ts.len() > 100, "{log}");
    // In time order; etcd's own goroutines may log a few milliseconds out of order.
    let key = |t: &str| -> (String, f64) {
        let secs = |s: &str| s.parse::<f64>().unwrap_or(0.0);
        (
            t[..10].to_string(),
            secs(&t[11..13]) * 3600.0 + secs(&t[14..16]) * 60.0 + secs(&t[17..23]),
        )
    };
    assert!(
        ts.windows(2).all(|w| {
            let (a, b) = (key(&w[0]), key(&w[1]));
            a.0 < b.0 || (a.0 == b.0 && a.1 <= b.1 + 1.0)
        }),
        "times out of order:\n{log}"
    );
    let pos = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{log}"))
    };
    let raised = pos("\"alarm raised\"");
    let disarmed = pos("\"alarm disarmed\"");
    let dial = pos("dial tcp 198.18.0.12:2380: i/o timeout");
    let recent = pos("\"took\":\"1.2s\"");
    let live = pos("\"took\":\"2.1s\"");
    assert!(raised < disarmed && disarmed < dial && dial < recent && recent < live);
    assert!(
        lines[..live]
            .iter()
            .filter(|l| l.contains("elected leader"))
            .count()
            >= 12
    );
    // The live etcd's own lines sit between the recent past and the line written now.
    assert!(lines[recent..live]
        .iter()
        .any(|l| l.contains("serving client")
            || l.contains("published local member")
            || l.contains("ready to serve client requests")));
}

fn aged_with_the_text_logger(test: &str, etcd: EtcdVersion) {
    let slow = |ms| EtcdLine::SlowFdatasync {
        took: Duration::from_millis(ms),
    };
    let lab = start(
        test,
        etcd,
        LabConfig {
            logger: Logger::Text,
            ..LabConfig::with_nodes(3)
        },
    );
    let spec = AgeSpec::started(Duration::from_secs(7200))
        .line(Duration::from_secs(5000), slow(1512))
        .line(
            Duration::from_secs(4000),
            EtcdLine::Raw("2026-01-01 00:00:00.000000 I | lab: a raw line".into()),
        );
    lab.age("cp2", &spec).unwrap();
    let id = lab.container_id("cp2").unwrap();
    let (_, log) = crictl(&lab, "cp2", &["logs", "--tail", "500", &id]);
    let first: Vec<&str> = log.lines().take(2).collect();
    assert!(
        first[0].ends_with(" W | wal: sync duration of 1.512s, expected less than 1s"),
        "{log}"
    );
    assert!(first[1].ends_with("I | lab: a raw line"));
    let (table, _) = crictl(&lab, "cp2", &["ps"]);
    assert!(table.contains("2 hours ago"), "{table}");
}

// Membership changes through the real etcdctl, each waited for: a learner rejoined as kubeadm
// joins, caught up with the leader before its promotion, then healthy.
fn a_member_without_a_vm_and_learners(lab: &Lab) {
    // The learner first: while a voting member is down, etcd's strict reconfiguration check
    // refuses every member add ("unhealthy cluster": not connected to all voting members).
    let learner = lab
        .add_learner("cp-learner", "https://198.18.0.21:2380")
        .unwrap();
    let members = lab.members().unwrap();
    assert!(members.iter().any(|m| m.id == learner && m.is_learner));
    let gone = lab
        .add_unstarted_member("cp-gone", "https://198.18.0.20:2380")
        .unwrap();
    let members = lab.members().unwrap();
    assert_eq!(members.len(), 5, "{members:?}");
    let m = members.iter().find(|m| m.id == gone).unwrap();
    assert_eq!(m.name, "", "never started: no name");
    assert!(m.client_urls.is_empty() && !m.is_learner);
    assert_eq!(m.peer_urls, ["https://198.18.0.20:2380"]);
    // Three of four voting members: quorum holds, every running member is healthy.
    lab.etcdctl("cp2", &["put", "with-a-ghost", "1"]).unwrap();
    for n in ["cp1", "cp2", "cp3"] {
        assert!(lab.health(n).unwrap(), "{n}");
    }
    let refused = lab.etcdctl(
        "cp1",
        &[
            "member",
            "add",
            "cp-late",
            "--peer-urls=https://198.18.0.22:2380",
            "--learner",
        ],
    );
    assert!(
        format!("{refused:?}").contains("unhealthy cluster"),
        "{refused:?}"
    );
    assert!(lab.add_learner("x", "https://10.1.2.3:2380").is_err());
    assert!(lab
        .add_unstarted_member("x", "https://198.18.0.11:2380")
        .is_err());
    lab.remove_member_id(gone).unwrap();
    lab.remove_member_id(learner).unwrap();
    assert_eq!(lab.members().unwrap().len(), 3);
    // A learner that runs: cp3 rejoined as kubeadm's join does, never promoted.
    let (_, added) = lab.replace_member_as_learner("cp3").unwrap();
    let learner_running = || {
        lab.members()
            .unwrap()
            .iter()
            .any(|m| m.id == added && m.is_learner && m.name == "cp3")
    };
    wait_for(
        "cp3 runs as a learner",
        Duration::from_secs(30),
        learner_running,
    );
    assert!(lab.etcd_pid("cp3").is_some());
    // It stays a learner until promoted (once it has caught up with the leader).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match lab.promote_member("cp3") {
            Ok(()) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("promote: {e:#}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("promote: {e:#}"),
        }
    }
    assert!(lab.members().unwrap().iter().all(|m| !m.is_learner));
    lab.wait_healthy(Duration::from_secs(30)).unwrap();
}

fn a_powered_off_vm_answers_nothing_until_powered_on(lab: &Lab) {
    lab.power_off("cp3").unwrap();
    assert!(lab.powered_off("cp3").unwrap());
    assert!(lab.etcd_pid("cp3").is_none() && lab.sshd_pid("cp3").is_none());
    let ip = lab.node("cp3").unwrap().ip;
    let c = lab
        .curl(
            "cp1",
            &format!("https://{ip}:2379/health"),
            Duration::from_secs(3),
        )
        .unwrap();
    assert!(c.code == 28 || c.code == 7, "{c:?}");
    // Quorum holds with two; the stand-in does not restart a VM that is off, nor does heal.
    lab.etcdctl("cp1", &["put", "two-of-three", "ok"]).unwrap();
    lab.heal().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(lab.etcd_pid("cp3").is_none());
    assert_eq!(lab.kubelet_restarts("cp3").unwrap(), 0);
    lab.power_on("cp3").unwrap();
    lab.wait_healthy(Duration::from_secs(60)).unwrap();
    assert_eq!(lab.attempt("cp3").unwrap(), 1);
    assert!(lab.sshd_pid("cp3").is_some());
}

macro_rules! per_etcd {
    ($($case:ident),* $(,)?) => {
        mod etcd_3_4 {
            $(
                #[test]
                #[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
                fn $case() {
                    super::$case(etcdnet_lab::EtcdVersion::V3_4);
                }
            )*
        }
        mod etcd_3_5 {
            $(
                #[test]
                #[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
                fn $case() {
                    super::$case(etcdnet_lab::EtcdVersion::V3_5);
                }
            )*
        }
    };
}

per_etcd!(
    powered_off_then_restarted_during_a_partition,
    a_removed_member_is_restarted_and_exits_again,
    members_without_a_vm_and_learners_then_aged,
);
