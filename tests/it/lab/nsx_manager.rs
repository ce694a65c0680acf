//! NSX Manager past the Supervisor's edge, end to end (issue 31's Done-when): a fake NSX
//! Manager (`tests/fakensx`) serves a distributed firewall, the same drop is made real in the
//! lab's fabric (nftables in the switch namespace, outside every guest, where NSX's DFW sits),
//! and `kubectl etcdnet diagnose --nsx-manager <fake> --nsx-ca <its CA>` through the real
//! kubectl, as the fake's `tracer` (NSXT_USERNAME/NSXT_PASSWORD; a role that may read the DFW
//! and run Traceflow), names what NSX Manager shows. One lab (etcd 3.5, the article's three VMs,
//! names and IPs, as the `article` world has them), reached on both routes (probe pods, and the
//! jumpbox's ssh); the cases in sequence, each polled until etcd and the probes show its fault:
//!
//! a. `infra-drop-2380` (an Infrastructure DROP of TCP 2380 between the control plane's group)
//!    and [`Fault::BlockPort`] 2380 in the fabric: the verdict's first evidence line names that
//!    rule (its path, category Infrastructure) on the 6 failing paths; with `--nsx-traceflow`
//!    the fake's Traceflow is answered by an oracle that reads the lab's **actual** fabric rules
//!    (`etcdnet_lab::fabric`, `nft -j list ruleset` in the switch namespace) and names the
//!    world's rule when the fabric drops: the evidence's traceflow lines name the same rule;
//! b. `allow-before-app-drop` (an Environment ALLOW of 2379-2380 before an Application DROP of
//!    2380) with the fabric still dropping 2380: the Application DROP is not blamed, and NSX
//!    Manager is said to show no rule that drops these paths;
//! c. `no-drop` while the fabric drops every peer path ([`Fault::DropAllPeers`]): "NSX Manager
//!    shows no rule that drops these paths" with what was read.
//!
//! After every run: no credential in its stdout or stderr, no password sent anywhere but the
//! login (`password_leaks`), no traceflow left alive on the fake.
//!
//! Needs root, the lab and etcd 3.5 from `.ci/run`; compiled as ignored elsewhere (build.rs).

use crate::common;
use crate::common::past::{self, evidence_has, shown, Route, ROUTES};

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::article::{CLUSTER, CP, NS, SET};
use common::*;
use etcdnet::report::v1alpha2::{CellState, VerdictCode};
use etcdnet::report::DiagnoseReport;
use etcdnet_fakensx::{FakeNsx, Side, TraceflowOutcome, TraceflowQuery};
use etcdnet_lab::fabric::{Fabric, Verdict};
use etcdnet_lab::{EtcdVersion, Fault, Lab};

/// The fake's user with the network_engineer role: reads the DFW, runs Traceflow.
const USER: &str = "tracer";

/// The rules of the worlds (`tests/fixtures/nsx-manager/worlds`), by id.
const INFRA_DROP: &str = "drop-etcd-peer";
const APP_DROP: &str = "drop-etcd-peer-app";

/// How the evidence names a rule that drops the failing paths, and says there is none.
const NAMED: &str = "NSX Manager's distributed firewall rule";
const NO_RULE: &str = "NSX Manager shows no rule that drops these paths (read: ";

/// How long a case may poll: etcd notices a cut within seconds, a diagnosis under a cut waits
/// out its 2 s connects.
const SETTLE: Duration = Duration::from_secs(60);

/// The lab, one fake Supervisor per route over it, and the fake manager's CA on disk.
struct World {
    lab: Arc<Lab>,
    pod: Env,
    jumpbox: Env,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

/// What one traceflow asked the oracle, and what the fabric said.
type Asked = Arc<Mutex<Vec<(TraceflowQuery, Verdict)>>>;

impl World {
    fn start(test: &str) -> World {
        use etcdnet_fakeapi::labplan;
        etcdnet_lab::require(test);
        etcdnet_lab::require_etcd(test, EtcdVersion::V3_5);
        let set = FakeConfig::from_dir(fixture(SET)).unwrap();
        let plan = labplan::plan(&set, Some(CLUSTER)).unwrap();
        let config = etcdnet_lab::LabConfig {
            etcd: EtcdVersion::V3_5,
            start_timeout: Duration::from_secs(60),
            ..labplan::lab_config(&plan).unwrap()
        };
        let lab = Arc::new(Lab::start(config).expect("lab starts"));
        past::assert_runs(&lab, EtcdVersion::V3_5);
        eprintln!("{test}: lab {} started in {:?}", lab.id(), lab.started_in());
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("nsx-ca.pem");
        World {
            pod: Route::Pod.env(SET, &lab),
            jumpbox: Route::Jumpbox.env(SET, &lab),
            lab,
            ca,
            _dir: dir,
        }
    }

    /// Starts the fake manager serving `world` (its CA, one per process, written for
    /// `--nsx-ca`).
    fn manager(&self, world: &str) -> FakeNsx {
        let nsx = FakeNsx::start_world(world).expect("the fake NSX Manager starts");
        nsx.write_ca(&self.ca).unwrap();
        nsx
    }

    /// `kubectl etcdnet diagnose … -o json --nsx-manager <nsx> --nsx-ca <ca>` on `route`,
    /// `extra` added, as `tracer`; every run checked for credentials and left traceflows.
    fn diagnose(&self, route: Route, nsx: &FakeNsx, extra: &[&str]) -> Run {
        let url = nsx.url();
        let ca = self.ca.display().to_string();
        let mut args = vec![
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--connect-timeout",
            "2s",
            "-o",
            "json",
        ];
        args.extend_from_slice(route.args());
        args.extend_from_slice(&["--nsx-manager", &url, "--nsx-ca", &ca]);
        args.extend_from_slice(extra);
        let env = match route {
            Route::Pod => &self.pod,
            Route::Jumpbox => &self.jumpbox,
        };
        let password = password(nsx);
        let mut cmd = env.kubectl_command(&args);
        cmd.env("NSXT_USERNAME", USER)
            .env("NSXT_PASSWORD", &password);
        let run = Run::from(cmd.output().expect("kubectl runs"));
        no_credentials(&run, &password);
        assert_eq!(nsx.password_leaks(), Vec::<String>::new(), "{route:?}");
        assert_eq!(
            nsx.traceflows_live(),
            Vec::new(),
            "{route:?}: traceflows left alive on the manager"
        );
        run
    }

    /// Diagnoses on `route` until `done` (or [`SETTLE`]); the last report.
    fn until(
        &self,
        route: Route,
        nsx: &FakeNsx,
        extra: &[&str],
        done: impl Fn(&DiagnoseReport) -> bool,
    ) -> DiagnoseReport {
        let deadline = Instant::now() + SETTLE;
        loop {
            let report = self.diagnose(route, nsx, extra).diagnose_report();
            if done(&report) || Instant::now() > deadline {
                // What the case saw of NSX Manager, for a log read after the fact.
                let nsx_lines: Vec<&str> = (report.verdict.evidence.iter())
                    .filter(|l| l.starts_with("NSX Manager") || l.starts_with("traceflow "))
                    .map(String::as_str)
                    .collect();
                eprintln!(
                    "  ({route:?}) {}: {}\n    {}",
                    report.verdict.code,
                    report.verdict.summary,
                    nsx_lines.join("\n    ")
                );
                return report;
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

    /// The lab's node of address `ip`.
    fn node_of(lab: &Lab, ip: IpAddr) -> Option<String> {
        (lab.nodes().iter())
            .find(|n| IpAddr::V4(n.ip) == ip)
            .map(|n| n.name.clone())
    }

    /// Reads the fabric's actual rules and checks that a SYN between any two nodes to each
    /// port of `dropped` is stopped and to each port of `open` is delivered.
    fn fabric_is(&self, dropped: &[u16], open: &[u16]) {
        let fabric = Fabric::read(&self.lab).expect("the switch's ruleset reads");
        for a in CP {
            for b in CP.iter().filter(|b| **b != a) {
                let to = self.lab.node(b).unwrap().ip;
                for port in dropped {
                    let v = fabric.syn(a, to, *port);
                    assert!(v.stopped(), "{a} → {b}:{port} not dropped: {v:?}");
                }
                for port in open {
                    let v = fabric.syn(a, to, *port);
                    assert!(v.delivered(), "{a} → {b}:{port} not delivered: {v:?}");
                }
            }
        }
    }
}

/// The fake `tracer`'s password (test-only, from the `article` world).
fn password(nsx: &FakeNsx) -> String {
    nsx.world()
        .user(USER)
        .expect("the world has tracer")
        .password
        .clone()
}

/// Neither the password nor the basic-auth header's value is in what the run printed.
fn no_credentials(run: &Run, password: &str) {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}"));
    for (what, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for secret in [password, basic.as_str()] {
            assert!(!text.contains(secret), "a credential in {what}:\n{text}");
        }
    }
}

/// The world's rule `id`: its policy path.
fn rule_path(nsx: &FakeNsx, id: &str) -> String {
    (nsx.world().rules())
        .find(|(_, r)| r["id"] == id)
        .and_then(|(_, r)| r["path"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no rule {id} in the world"))
}

/// The failing (timed out) paths of `port`, as `from → to:port`.
fn failing(r: &DiagnoseReport, port: u16) -> Vec<String> {
    (r.matrices.iter().flat_map(|m| &m.cells))
        .filter(|c| c.port == port && c.state == CellState::Timeout)
        .map(|c| format!("{} → {}:{port}", c.from, c.to))
        .collect()
}

/// Lines of the evidence that hold `words`.
fn lines_with<'a>(r: &'a DiagnoseReport, words: &[&str]) -> Vec<&'a String> {
    (r.verdict.evidence.iter())
        .filter(|l| words.iter().all(|w| l.contains(w)))
        .collect()
}

/// Traceflow answers computed from the lab's actual fabric: the fabric's verdict for a SYN from
/// the source VM's node to the destination IP:port; when it drops, the world's rule `rule`
/// named (where the fabric's chain is: the sender's link is the source side). Every question
/// and the fabric's answer kept in `asked`.
fn fabric_oracle(nsx: &FakeNsx, lab: &Arc<Lab>, rule: &str) -> Asked {
    let asked: Asked = Arc::default();
    let rule = nsx.world().rule_ref(rule).expect("the world's rule");
    let (lab, record) = (lab.clone(), asked.clone());
    nsx.set_oracle(move |q| {
        let verdict = match (World::node_of(&lab, q.src_ip), q.dst_ip) {
            (Some(from), IpAddr::V4(to)) => match Fabric::read(&lab) {
                Ok(f) => f.syn(&from, to, q.dst_port),
                Err(e) => Verdict::Unknown(format!("{e:#}")),
            },
            _ => Verdict::Unknown(format!("{} is no node of the lab", q.src_ip)),
        };
        record.lock().unwrap().push((q.clone(), verdict.clone()));
        match verdict.rule() {
            Some(r) => TraceflowOutcome::Dropped {
                rule: rule.clone(),
                side: if r.chain.starts_with("out") {
                    Side::Destination
                } else {
                    Side::Source
                },
            },
            None => TraceflowOutcome::Delivered { allowed_by: vec![] },
        }
    });
    asked
}

/// Case a, on `route`: the Infrastructure DROP named first, its traceflows naming it too.
fn infra_drop_named(w: &World, route: Route, nsx: &FakeNsx, asked: &Asked) {
    let path = rule_path(nsx, INFRA_DROP);
    let created = nsx.traceflows_created();
    asked.lock().unwrap().clear();
    let r = w.until(route, nsx, &["--nsx-traceflow"], |r| {
        r.verdict.code == VerdictCode::EtcdPeerNetworkPartial
            && failing(r, 2380).len() == 6
            && r.verdict
                .evidence
                .first()
                .is_some_and(|l| l.starts_with(NAMED))
    });
    assert_eq!(
        r.verdict.code,
        VerdictCode::EtcdPeerNetworkPartial,
        "{route:?}: {}",
        shown(&r)
    );
    assert_eq!(r.route.name, route.name());
    // The first evidence line: the rule, its path and category, on every failing path.
    let first = r.verdict.evidence.first().map_or("", String::as_str);
    for want in [
        NAMED,
        "\"drop etcd peer traffic\"",
        &path,
        "category Infrastructure",
        "drops TCP 2380 on 6 of the 6 failing paths",
    ] {
        assert!(first.contains(want), "{route:?}: {want:?} not in {first}");
    }
    let failing = failing(&r, 2380);
    assert_eq!(failing.len(), 6, "{route:?}: {}", shown(&r));
    for p in &failing {
        assert!(first.contains(p.as_str()), "{route:?}: {p} not in {first}");
    }
    assert!(
        r.verdict
            .next_steps
            .first()
            .is_some_and(|s| s.contains(&path) && s.contains("category Infrastructure")),
        "{route:?}: {}",
        shown(&r)
    );
    // The traceflows: each a failing path, dropped by the same rule, as the fabric said.
    let traced = lines_with(&r, &["traceflow "]);
    assert!(
        !traced.is_empty(),
        "{route:?}: no traceflow line: {}",
        shown(&r)
    );
    for l in &traced {
        assert!(
            l.contains("dropped") && l.contains(&path) && l.contains(":2380"),
            "{route:?}: {l}"
        );
        assert!(
            failing.iter().any(|p| l.contains(p.as_str())),
            "{route:?}: not a failing path: {l}"
        );
    }
    let asked = asked.lock().unwrap().clone();
    assert!(
        nsx.traceflows_created() > created && asked.len() >= traced.len(),
        "{route:?}: the oracle was asked {} times for {} traceflow lines",
        asked.len(),
        traced.len()
    );
    for (q, v) in &asked {
        // The fabric is understood, drops every traced (failing) path, and agrees with the
        // world's own DFW evaluation: the same drop in both.
        assert!(v.stopped(), "{route:?}: the fabric passes {q:?}: {v:?}");
        assert!(
            matches!(nsx.evaluate(q), TraceflowOutcome::Dropped { ref rule, .. } if rule.path == path),
            "{route:?}: the world's DFW does not drop {q:?}"
        );
    }
}

/// Case b, on `route`: an ALLOW of a higher category before the Application DROP: the DROP is
/// not blamed, no rule is.
fn allow_before_app_drop_not_blamed(w: &World, route: Route, nsx: &FakeNsx) {
    let app = rule_path(nsx, APP_DROP);
    let r = w.until(route, nsx, &[], |r| {
        r.verdict.code == VerdictCode::EtcdPeerNetworkPartial && evidence_has(r, &[NO_RULE])
    });
    assert_eq!(
        r.verdict.code,
        VerdictCode::EtcdPeerNetworkPartial,
        "{route:?}: {}",
        shown(&r)
    );
    for blamed in [app.as_str(), APP_DROP, NAMED] {
        assert!(
            !evidence_has(&r, &[blamed]),
            "{route:?}: {blamed} in the evidence: {}",
            shown(&r)
        );
        assert!(
            !r.verdict.next_steps.iter().any(|s| s.contains(blamed)),
            "{route:?}: {blamed} in the next steps: {}",
            shown(&r)
        );
    }
    assert!(evidence_has(&r, &[NO_RULE]), "{route:?}: {}", shown(&r));
}

/// Case c, on `route`: nothing in NSX Manager drops etcd, the fabric drops every peer path.
fn no_visible_rule_said(w: &World, route: Route, nsx: &FakeNsx) {
    let r = w.until(route, nsx, &[], |r| {
        r.verdict.code == VerdictCode::EtcdPeerNetworkBlocked && evidence_has(r, &[NO_RULE])
    });
    assert_eq!(
        r.verdict.code,
        VerdictCode::EtcdPeerNetworkBlocked,
        "{route:?}: {}",
        shown(&r)
    );
    let line = lines_with(&r, &[NO_RULE]);
    assert_eq!(line.len(), 1, "{route:?}: {}", shown(&r));
    // What was read: the policies, the rules (the disabled DROP of 2380 among them), the VMs.
    for want in [
        "security policies",
        "rules (1 disabled)",
        "3 of 3 VMs identified",
    ] {
        assert!(
            line[0].contains(want),
            "{route:?}: {want:?} not in {}",
            line[0]
        );
    }
    assert!(!evidence_has(&r, &[NAMED]), "{route:?}: {}", shown(&r));
    assert_eq!(failing(&r, 2379).len() + failing(&r, 2380).len(), 12);
}

// Long: one lab (etcd 3.5) through three NSX Manager worlds on two routes, each diagnosis
// polled until etcd and the probes show the fabric's drop (2380, then every peer path), each
// run reading the fake manager's DFW (and in the first case running its traceflows).
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn names_the_rule_or_says_none_on_both_routes() {
    let test = "nsx_manager::names_the_rule_or_says_none_on_both_routes";
    let started = Instant::now();
    let w = World::start(test);

    // a. The Infrastructure DROP, served and made real.
    let infra = w.manager("infra-drop-2380");
    w.lab.inject(Fault::BlockPort(2380)).unwrap();
    w.fabric_is(&[2380], &[2379]);
    let asked = fabric_oracle(&infra, &w.lab, &rule_path(&infra, INFRA_DROP));
    for route in ROUTES {
        infra_drop_named(&w, route, &infra, &asked);
        eprintln!("{test}: a ({route:?}) done at {:?}", started.elapsed());
    }

    // b. An ALLOW before the Application DROP, the fabric still dropping 2380.
    let allow = w.manager("allow-before-app-drop");
    w.fabric_is(&[2380], &[2379]);
    for route in ROUTES {
        allow_before_app_drop_not_blamed(&w, route, &allow);
        eprintln!("{test}: b ({route:?}) done at {:?}", started.elapsed());
    }

    // c. No rule in NSX Manager, every peer path dropped in the fabric.
    let none = w.manager("no-drop");
    w.lab.inject(Fault::DropAllPeers).unwrap();
    w.fabric_is(&[2379, 2380], &[]);
    for route in ROUTES {
        no_visible_rule_said(&w, route, &none);
        eprintln!("{test}: c ({route:?}) done at {:?}", started.elapsed());
    }
}
