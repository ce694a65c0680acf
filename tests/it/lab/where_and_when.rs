//! Where the packet dies and since when, end to end (issue 30's Done-when): the real kubectl, the
//! pod and the jumpbox route, real etcd 3.4 and 3.5. One lab per etcd line (the article's three
//! VMs, names and IPs), reached by two fake Supervisors over it, one per route, each serving
//! the article's cluster plus a MachineHealthCheck over its control-plane Machines
//! ([`mhc`]); the cases run in sequence in the lab, healed in between:
//!
//! 1. paused and Healthy: the Cluster paused (`kubectl patch … {"spec":{"paused":true}}`
//!    against the fake Supervisor), the verdict `Healthy` carries the reminder to unpause;
//! 2. a slowed disk on a follower (`Fault::SlowDisk`: its fdatasyncs held 1.2 s, a few writes
//!    made): `EtcdSlowDisk`, the evidence with etcd's own fsync p99;
//! 3. (3.4) staggered, from the lab's past: node A's and B's logs say they lost each other
//!    `X` s ago, then every peer path is dropped for real: the timeline says `staggered`, A↔B
//!    first, C at the cut, each onset within [`ONSET_SLACK`] of the truth;
//! 4. the same drop as a rule inside node B's own nftables (`Fault::GuestFirewall`): the
//!    verdict names B's rule (`inside the guest`) and its counter (`+N packets`), never
//!    `outside the guests`; without `counter`: `may be inside the guest`;
//! 5. every peer path dropped in the fabric at once (`Fault::DropAllPeers`): the drop is
//!    `outside the guests`; the timeline says `one change` at the cut; etcd's per-peer send
//!    failures (`etcdMetrics`) are shown for every failing path of the matrix; the
//!    MachineHealthCheck is armed and named, with the pause and unpause commands; the table
//!    shows the `outside the guests` line;
//! 6. (3.5) staggered for real: A↔B cut, C cut from both 90 s later (`Lab::inject_at`): the
//!    timeline says `staggered`, in that order, onsets within [`ONSET_SLACK`] of the cuts;
//!    meanwhile (only A↔B cut) the per-peer failures follow the partial matrix.
//!
//! The real 90 s wait is made once (etcd 3.5); 3.4's stagger comes from the past.
//!
//! The new report fields (`packetLocation`, `etcdMetrics`, `timeline`, `remediationGuard`) are
//! read from the JSON, their words (`inside the guest`, `may be inside the guest`, `outside the
//! guests`, `one change`, `staggered`) from the verdict's lines and those fields' strings;
//! [`pair_onsets`] and [`peer_failures`] find the per-pair onsets and per-peer failure counters
//! wherever the contract puts them (an object naming the nodes, with a time or a count).
//!
//! Needs root and the lab (etcd 3.5 from `.ci/run`); compiled as ignored elsewhere (build.rs).

use crate::common;
use crate::common::past::{self, evidence_has, shown, Route};

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use common::article::{CLUSTER, CP, NS, SET};
use common::*;
use etcdnet::report::v1alpha2::{CellState, VerdictCode};
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{EtcdLine, EtcdVersion, Fault, Lab};
use serde_json::Value;

/// How far an onset the timeline gives may be from the moment the cut was made (or the lines
/// written): the first line etcd logs about a silent peer is its prober's, which asks every
/// 5 s and waits out its dial (2 to 5 s after the cut in the captures, tests/fixtures/etcd-logs),
/// and the timeline reads what etcd logged.
const ONSET_SLACK: Duration = Duration::from_secs(10);

/// How long a verdict may take to show after a change: etcd notices a cut within seconds; each
/// diagnosis under a cut waits out its 2 s dials.
const SETTLE: Duration = Duration::from_secs(60);

/// The MachineHealthCheck the fake Supervisors serve over the control plane.
const MHC: &str = "tkc-prod-control-plane-unhealthy-5m";

/// The commands the guard gives: pause, and later unpause.
const PAUSE: &str =
    r#"kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":true}}'"#;
const UNPAUSE: &str =
    r#"kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":false}}'"#;

/// The contract's words.
const INSIDE: &str = "inside the guest";
const MAY_BE_INSIDE: &str = "may be inside the guest";
const OUTSIDE: &str = "outside the guests";
const ONE_CHANGE: &str = "one change";
const STAGGERED: &str = "staggered";

const NETWORK: [VerdictCode; 2] = [
    VerdictCode::EtcdPeerNetworkBlocked,
    VerdictCode::EtcdPeerNetworkPartial,
];

/// A MachineHealthCheck over the cluster's control-plane Machines, as CAPI's docs write one
/// (cluster.x-k8s.io/v1beta1: Ready Unknown or False for 5 min; maxUnhealthy 100%).
fn mhc() -> Value {
    serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineHealthCheck",
        "metadata": {
            "name": MHC,
            "namespace": NS,
            "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}
        },
        "spec": {
            "clusterName": CLUSTER,
            "maxUnhealthy": "100%",
            "nodeStartupTimeout": "20m",
            "selector": {"matchLabels": {
                "cluster.x-k8s.io/cluster-name": CLUSTER,
                "cluster.x-k8s.io/control-plane": ""
            }},
            "unhealthyConditions": [
                {"type": "Ready", "status": "Unknown", "timeout": "300s"},
                {"type": "Ready", "status": "False", "timeout": "300s"}
            ]
        },
        "status": {"expectedMachines": 3, "currentHealthy": 3, "remediationsAllowed": 3,
                   "targets": CP}
    })
}

/// One lab, one fake Supervisor per route over it.
struct World {
    lab: Arc<Lab>,
    pod: Env,
    jumpbox: Env,
    /// When the lab's members first saw each other (`Lab::start` returned).
    started: Instant,
}

const ROUTES: [Route; 2] = [Route::Pod, Route::Jumpbox];

impl World {
    fn start(test: &str, etcd: EtcdVersion) -> World {
        use etcdnet_fakeapi::labplan;
        etcdnet_lab::require(test);
        etcdnet_lab::require_etcd(test, etcd);
        let set = FakeConfig::from_dir(fixture(SET)).unwrap();
        let plan = labplan::plan(&set, Some(CLUSTER)).unwrap();
        let config = etcdnet_lab::LabConfig {
            etcd,
            start_timeout: Duration::from_secs(60),
            ..labplan::lab_config(&plan).unwrap()
        };
        let lab = Arc::new(Lab::start(config).expect("lab starts"));
        let started = Instant::now();
        past::assert_runs(&lab, etcd);
        eprintln!(
            "{test}: lab {} (etcd {etcd}) started in {:?}",
            lab.id(),
            lab.started_in()
        );
        let w = FakeConfig::from_dir(etcdnet_fakeapi::workload_set("lab-3")).unwrap();
        let pod = Env::with_objects(
            SET,
            vec![mhc()],
            &[],
            Workload::lab(w, lab.clone()).unwrap(),
        );
        let jumpbox = Env::with_objects(SET, vec![mhc()], &[], Workload::black_hole());
        jumpbox
            .supervisor
            .execute_jumpbox_pods_in(lab.clone())
            .expect("the Supervisor runs jumpbox pods");
        jumpbox
            .supervisor
            .set_secret_data(NS, "tkc-prod-ssh", "ssh-privatekey", lab.ssh_private_key())
            .unwrap();
        World {
            lab,
            pod,
            jumpbox,
            started,
        }
    }

    fn env(&self, route: Route) -> &Env {
        match route {
            Route::Pod => &self.pod,
            Route::Jumpbox => &self.jumpbox,
        }
    }

    /// `kubectl etcdnet diagnose … -o json` on `route`, `extra` added.
    fn diagnose(&self, route: Route, extra: &[&str]) -> Run {
        let mut args = vec!["-o", "json"];
        args.extend_from_slice(route.args());
        args.extend_from_slice(extra);
        self.env(route).diagnose_lab(&args)
    }

    /// Diagnoses on `route` until `done` (or [`SETTLE`]); the last report, typed and as JSON.
    fn until(
        &self,
        route: Route,
        done: impl Fn(&DiagnoseReport, &Value) -> bool,
    ) -> (DiagnoseReport, Value) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let run = self.diagnose(route, &[]);
            let report = run.diagnose_report();
            let json = run.json();
            if done(&report, &json) || Instant::now() > deadline {
                return (report, json);
            }
            eprintln!(
                "  ({route:?}, not yet) {}: {}\n    {}",
                report.verdict.code,
                report.verdict.summary,
                report.verdict.evidence.join("\n    ")
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Pauses (or unpauses) the Cluster on both fake Supervisors with the real kubectl, as the
    /// guard tells an admin to.
    fn pause(&self, paused: bool) {
        let patch = format!(r#"{{"spec":{{"paused":{paused}}}}}"#);
        for env in [&self.pod, &self.jumpbox] {
            let out = std::process::Command::new(KUBECTL)
                .args(["--kubeconfig"])
                .arg(&env.kubeconfig)
                .args([
                    "patch", "cluster", CLUSTER, "-n", NS, "--type", "merge", "-p", &patch,
                ])
                .output()
                .expect("kubectl runs");
            assert!(out.status.success(), "kubectl patch: {out:?}");
        }
    }

    fn heal(&self) {
        self.lab.heal().unwrap();
        self.lab.wait_healthy(Duration::from_secs(30)).unwrap();
    }

    /// A member that is not the leader (a slow disk there leaves the elections alone).
    fn follower(&self) -> &'static str {
        let status = self
            .lab
            .etcdctl(CP[0], &["endpoint", "status", "--cluster", "-w", "json"])
            .unwrap();
        let status: Value = serde_json::from_str(&status).unwrap();
        let leader = status[0]["Status"]["leader"].as_u64().expect("a leader");
        CP.into_iter()
            .find(|n| self.lab.member_id(n).unwrap() != Some(leader))
            .unwrap()
    }
}

/// Every string of a JSON document (the verdict's lines, the new fields' texts).
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// Whether a string of `v` holds every one of `words`.
fn says(v: &Value, words: &[&str]) -> bool {
    strings(v)
        .iter()
        .any(|s| words.iter().all(|w| s.contains(w)))
}

/// The objects of `v`, at any depth.
fn objects(v: &Value) -> Vec<&serde_json::Map<String, Value>> {
    let mut out = Vec::new();
    match v {
        Value::Array(a) => a.iter().for_each(|x| out.extend(objects(x))),
        Value::Object(o) => {
            out.push(o);
            o.values().for_each(|x| out.extend(objects(x)));
        }
        _ => {}
    }
    out
}

/// The nodes (of [`CP`]) an object names in its own string fields.
fn named(o: &serde_json::Map<String, Value>) -> Vec<&'static str> {
    CP.into_iter()
        .filter(|n| o.values().any(|v| v.as_str() == Some(*n)))
        .collect()
}

/// Per pair of nodes, the onsets `timeline` gives: each object naming two nodes and holding an
/// RFC 3339 time (the pair's episode start, clock offsets applied).
fn pair_onsets(json: &Value) -> Vec<([&'static str; 2], SystemTime)> {
    let mut out = Vec::new();
    for o in objects(&json["timeline"]) {
        let nodes = named(o);
        if nodes.len() != 2 {
            continue;
        }
        let times: Vec<SystemTime> = (o.values())
            .filter_map(|v| humantime::parse_rfc3339_weak(v.as_str()?).ok())
            .collect();
        if let Some(t) = times.into_iter().min() {
            out.push(([nodes[0], nodes[1]], t));
        }
    }
    out
}

/// The earliest onset given for the pair `a`, `b` (either way).
fn onset(json: &Value, a: &str, b: &str) -> Option<SystemTime> {
    pair_onsets(json)
        .into_iter()
        .filter(|(p, _)| p.contains(&a) && p.contains(&b))
        .map(|(_, t)| t)
        .min()
}

fn within(t: SystemTime, truth: SystemTime, slack: Duration) -> bool {
    let d = t.duration_since(truth).unwrap_or_else(|e| e.duration());
    d <= slack
}

/// The send failures node `from`'s etcd counts towards `to` in `etcdMetrics`: the objects
/// under `from`'s entry that name `to`, their numeric fields whose name says failures.
fn peer_failures(json: &Value, from: &str, to: &str) -> Option<f64> {
    let metrics = &json["etcdMetrics"];
    let entries: Vec<&Value> = match metrics {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) => o.values().collect(),
        _ => Vec::new(),
    };
    let mine = entries.into_iter().find(|e| {
        e.as_object()
            .is_some_and(|o| o.values().any(|v| v.as_str() == Some(from)))
    })?;
    objects(mine)
        .into_iter()
        .filter(|o| o.values().any(|v| v.as_str() == Some(to)))
        .flat_map(|o| {
            o.iter()
                .filter(|(k, _)| k.to_ascii_lowercase().contains("fail"))
                .filter_map(|(_, v)| v.as_f64())
                .collect::<Vec<_>>()
        })
        .reduce(f64::max)
}

/// The 2380 paths that failed, as (from, to).
fn failing_2380(r: &DiagnoseReport) -> Vec<(String, String)> {
    (r.matrices.iter())
        .filter(|m| m.port == 2380)
        .flat_map(|m| &m.cells)
        .filter(|c| c.from != c.to && c.state != CellState::Ok)
        .map(|c| (c.from.clone(), c.to.clone()))
        .collect()
}

fn ok_2380(r: &DiagnoseReport, from: &str, to: &str) -> bool {
    (r.matrices.iter())
        .filter(|m| m.port == 2380)
        .flat_map(|m| &m.cells)
        .any(|c| c.from == from && c.to == to && c.state == CellState::Ok)
}

/// Case 1: paused and Healthy: the reminder to unpause.
fn paused_and_healthy(w: &World) {
    w.pause(true);
    for route in ROUTES {
        let (r, json) = w.until(route, |r, _| r.verdict.code == VerdictCode::Healthy);
        assert_eq!(r.verdict.code, VerdictCode::Healthy, "{}", shown(&r));
        assert!(
            says(&json, &[UNPAUSE]),
            "{route:?}: no reminder to unpause: {}\n{:#}",
            shown(&r),
            json["remediationGuard"]
        );
        // Nothing to pause: no verdict line asks for it (the guard's own field keeps both
        // commands).
        let v = &r.verdict;
        assert!(
            !(v.evidence.iter().chain(&v.next_steps).chain(&v.notes)).any(|l| l.contains(PAUSE)),
            "{route:?}: {}",
            shown(&r)
        );
    }
    w.pause(false);
}

/// Case 2: a follower's fdatasyncs held 1.2 s and a few writes: `EtcdSlowDisk` with etcd's
/// own fsync p99.
fn slow_disk(w: &World) {
    let slow = w.follower();
    w.lab.inject(Fault::SlowDisk(slow.into())).unwrap();
    let writer = CP.into_iter().find(|n| *n != slow).unwrap();
    for i in 0..6 {
        w.lab
            .etcdctl(writer, &["put", &format!("where-and-when-{i}"), "x"])
            .unwrap();
    }
    for route in ROUTES {
        let (r, json) = w.until(route, |r, _| r.verdict.code == VerdictCode::EtcdSlowDisk);
        assert_eq!(r.verdict.code, VerdictCode::EtcdSlowDisk, "{}", shown(&r));
        assert!(
            evidence_has(&r, &[slow, "p99"]),
            "{route:?}: no fsync p99 for {slow}: {}\n{:#}",
            shown(&r),
            json["etcdMetrics"]
        );
    }
    w.heal();
}

/// Case 3 (3.4): the stagger from the past. A and B logged losing each other `X` s ago (45 to
/// 90 s, never before the lab's members first met), then every path is dropped now.
fn staggered_from_the_past(w: &World) {
    let [a, b, c] = CP;
    // Paths going within 30 s of the first are one change: the past lies further back.
    let min = Duration::from_secs(45);
    // Nothing between A and B may have come back since the lines' time: the lab's start.
    let since_start = w.started.elapsed().saturating_sub(Duration::from_secs(10));
    if since_start < min {
        std::thread::sleep(min - since_start);
    }
    let ago = w
        .started
        .elapsed()
        .saturating_sub(Duration::from_secs(10))
        .min(Duration::from_secs(90));
    let id = |n: &str| w.lab.member_id(n).unwrap().unwrap();
    let ip = |n: &str| w.lab.node(n).unwrap().ip;
    for (me, peer) in [(a, b), (b, a)] {
        let lines = [
            (ago, EtcdLine::PeerInactive { peer: id(peer) }),
            (
                ago,
                EtcdLine::LostStream {
                    peer: id(peer),
                    ip: ip(peer),
                },
            ),
            (
                ago.saturating_sub(Duration::from_secs(2)),
                EtcdLine::PeerDialTimeout {
                    peer: id(peer),
                    ip: ip(peer),
                },
            ),
        ];
        w.lab.append_log_lines(me, &lines).unwrap();
    }
    let t1 = SystemTime::now() - ago;
    w.lab.inject(Fault::DropAllPeers).unwrap();
    let t2 = w.lab.injected_at(&Fault::DropAllPeers).unwrap();
    for route in ROUTES {
        assert_staggered(w, route, (a, b, c), t1, t2);
    }
    w.heal();
}

/// The timeline says `staggered`, A↔B first, then C; the onsets near `t1` and `t2`.
fn assert_staggered(
    w: &World,
    route: Route,
    (a, b, c): (&str, &str, &str),
    t1: SystemTime,
    t2: SystemTime,
) {
    let (r, json) = w.until(route, |r, json| {
        NETWORK.contains(&r.verdict.code)
            && says(&json["timeline"], &[STAGGERED])
            && onset(json, a, c).is_some()
            && onset(json, b, c).is_some()
    });
    let summary = strings(&json["timeline"])
        .into_iter()
        .find(|s| s.contains(STAGGERED))
        .unwrap_or_else(|| {
            panic!(
                "{route:?}: not staggered: {}\n{:#}",
                shown(&r),
                json["timeline"]
            )
        });
    let at = |n: &str| summary.find(n).unwrap_or(usize::MAX);
    assert!(
        at(a) < at(c) && at(b) < at(c),
        "{route:?}: A↔B first, then C: {summary}"
    );
    let ab = onset(&json, a, b).unwrap_or_else(|| panic!("{:#}", json["timeline"]));
    assert!(
        within(ab, t1, ONSET_SLACK),
        "{route:?}: A↔B onset {} vs {}: {:#}",
        humantime::format_rfc3339_millis(ab),
        humantime::format_rfc3339_millis(t1),
        json["timeline"]
    );
    for x in [a, b] {
        let t = onset(&json, x, c).unwrap();
        assert!(
            within(t, t2, ONSET_SLACK),
            "{route:?}: {x}↔C onset {} vs {}: {:#}",
            humantime::format_rfc3339_millis(t),
            humantime::format_rfc3339_millis(t2),
            json["timeline"]
        );
    }
}

/// Case 4: the drop as a rule inside node B's own nftables, counted, then uncounted.
fn inside_node_b(w: &World) {
    let b = CP[1];
    w.lab.inject(Fault::GuestFirewall(b.into())).unwrap();
    for route in ROUTES {
        let (r, json) = w.until(route, |r, _| {
            NETWORK.contains(&r.verdict.code) && evidence_has(r, &[INSIDE, b])
        });
        let line = (r.verdict.evidence.iter())
            .find(|l| l.contains(INSIDE) && l.contains(b) && !l.contains(MAY_BE_INSIDE))
            .unwrap_or_else(|| panic!("{route:?}: B's rule not named: {}", shown(&r)));
        // The rule (table inet filter, chain input) and how many packets it counted.
        assert!(line.contains("filter") && line.contains("input"), "{line}");
        let counted = line
            .split('+')
            .skip(1)
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .any(|n| n > 0);
        assert!(counted, "{route:?}: no +N packets: {line}");
        assert!(!evidence_has(&r, &[OUTSIDE]), "{route:?}: {}", shown(&r));
        assert!(
            json["packetLocation"].is_object() || json["packetLocation"].is_array(),
            "{route:?}: no packetLocation"
        );
    }
    w.lab.heal().unwrap();
    w.lab
        .inject(Fault::GuestFirewallUncounted(b.into()))
        .unwrap();
    let (r, _) = w.until(Route::Pod, |r, _| {
        NETWORK.contains(&r.verdict.code) && evidence_has(r, &[MAY_BE_INSIDE, b])
    });
    assert!(evidence_has(&r, &[MAY_BE_INSIDE, b]), "{}", shown(&r));
    assert!(!evidence_has(&r, &[OUTSIDE]), "{}", shown(&r));
    w.heal();
}

/// Case 5: every peer path dropped in the fabric at once.
fn outside_at_once(w: &World) {
    w.lab.inject(Fault::DropAllPeers).unwrap();
    let t = w.lab.injected_at(&Fault::DropAllPeers).unwrap();
    for route in ROUTES {
        let (r, json) = w.until(route, |r, json| {
            r.verdict.code == VerdictCode::EtcdPeerNetworkBlocked
                && evidence_has(r, &[OUTSIDE])
                && says(&json["timeline"], &[ONE_CHANGE])
        });
        assert_eq!(
            r.verdict.code,
            VerdictCode::EtcdPeerNetworkBlocked,
            "{}",
            shown(&r)
        );
        assert!(evidence_has(&r, &[OUTSIDE]), "{route:?}: {}", shown(&r));
        assert!(!evidence_has(&r, &[INSIDE]), "{route:?}: {}", shown(&r));
        // One change, at the cut.
        assert!(
            says(&json["timeline"], &[ONE_CHANGE]),
            "{route:?}: {:#}",
            json["timeline"]
        );
        for (x, y) in [(CP[0], CP[1]), (CP[0], CP[2]), (CP[1], CP[2])] {
            let o = onset(&json, x, y)
                .unwrap_or_else(|| panic!("{route:?}: no onset {x}↔{y}: {:#}", json["timeline"]));
            assert!(
                within(o, t, ONSET_SLACK),
                "{route:?}: {x}↔{y} onset {} vs the cut {}",
                humantime::format_rfc3339_millis(o),
                humantime::format_rfc3339_millis(t)
            );
        }
        // etcd's own count of the same paths.
        let failing = failing_2380(&r);
        assert_eq!(failing.len(), 6, "{}", shown(&r));
        for (from, to) in &failing {
            let n = peer_failures(&json, from, to).unwrap_or_else(|| {
                panic!(
                    "{route:?}: no send failures {from} → {to}: {:#}",
                    json["etcdMetrics"]
                )
            });
            assert!(n > 0.0, "{route:?}: {from} → {to}: {n}");
        }
        // The guard: the MHC armed, named, and the commands.
        assert!(
            says(&json, &[MHC]),
            "{route:?}: MHC not named: {:#}",
            json["remediationGuard"]
        );
        assert!(says(&json, &[PAUSE]), "{route:?}: no pause command");
        assert!(says(&json, &[UNPAUSE]), "{route:?}: no unpause command");
    }
    // The table says it too (what the demo shows).
    let table = w.pod.diagnose_lab(&[]);
    assert!(
        table.stdout.contains(OUTSIDE),
        "{}\n{}",
        table.stdout,
        table.stderr
    );
    w.heal();
}

/// Case 6 (3.5): A↔B cut, C cut from both 90 s later, for real.
fn staggered_for_real(w: &World) {
    let [a, b, c] = CP;
    let cut = |x: &str, y: &str| Fault::CutPair {
        a: x.into(),
        b: y.into(),
    };
    let t1 = w.lab.inject_at(cut(a, b), Instant::now()).unwrap();
    let later = Instant::now() + Duration::from_secs(90);
    // Meanwhile only A↔B fails: etcd's per-peer failures follow the matrix.
    let (r, json) = w.until(Route::Pod, |r, json| {
        !failing_2380(r).is_empty() && peer_failures(json, a, b).is_some_and(|n| n > 0.0)
    });
    assert!(ok_2380(&r, a, c) && ok_2380(&r, c, b), "{}", shown(&r));
    for (from, to) in failing_2380(&r) {
        assert!(
            [a, b].contains(&from.as_str()) && [a, b].contains(&to.as_str()),
            "only A↔B fails: {}",
            shown(&r)
        );
        assert!(
            peer_failures(&json, &from, &to).is_some_and(|n| n > 0.0),
            "{from} → {to}: {:#}",
            json["etcdMetrics"]
        );
    }
    let t2 = w.lab.inject_at(cut(a, c), later).unwrap();
    w.lab.inject(cut(b, c)).unwrap();
    for route in ROUTES {
        assert_staggered(w, route, (a, b, c), t1, t2);
    }
    w.heal();
}

// Long: one lab (etcd 3.4) through five cases on two routes, each waiting for etcd to notice
// its fault and for the 2 s dials of the cut paths; the stagger comes from the lab's past.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_3_4() {
    let test = "where_and_when::etcd_3_4";
    let started = Instant::now();
    let w = World::start(test, EtcdVersion::V3_4);
    paused_and_healthy(&w);
    eprintln!("{test}: paused done at {:?}", started.elapsed());
    slow_disk(&w);
    eprintln!("{test}: slow disk done at {:?}", started.elapsed());
    staggered_from_the_past(&w);
    eprintln!("{test}: staggered done at {:?}", started.elapsed());
    inside_node_b(&w);
    eprintln!("{test}: inside done at {:?}", started.elapsed());
    outside_at_once(&w);
    eprintln!("{test}: outside done at {:?}", started.elapsed());
}

// Long: one lab (etcd 3.5) through five cases on two routes, one of them the real 90 s between
// two cuts.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_3_5() {
    let test = "where_and_when::etcd_3_5";
    let started = Instant::now();
    let w = World::start(test, EtcdVersion::V3_5);
    paused_and_healthy(&w);
    eprintln!("{test}: paused done at {:?}", started.elapsed());
    slow_disk(&w);
    eprintln!("{test}: slow disk done at {:?}", started.elapsed());
    inside_node_b(&w);
    eprintln!("{test}: inside done at {:?}", started.elapsed());
    outside_at_once(&w);
    eprintln!("{test}: outside done at {:?}", started.elapsed());
    staggered_for_real(&w);
    eprintln!("{test}: staggered done at {:?}", started.elapsed());
}
