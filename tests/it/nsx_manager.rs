//! `diagnose --nsx-manager` end to end, through the real kubectl: the fake Supervisor serves the
//! article's cluster (`quorum-lost`) with every peer path on 2380 timing out (scripted jumpbox
//! pods, as `network_policy` has them), and the fake NSX Manager (`etcdnet_fakensx`) serves a
//! world built from the same VMs over HTTPS, trusted through `--nsx-ca` its CA only. What the
//! verdict says of each world (the Infrastructure rule named first; an ALLOW before an
//! Application DROP not blamed; "shows no rule" with what was read), Traceflow as a user who may
//! run it and as one who may not, every traceflow deleted (Ctrl-C too), the credentials kept
//! out of every output and bundle and sent nowhere without `--nsx-manager`, the output without
//! the flag unchanged by NSX's variables, bounded runs against a slow or huge manager, and the
//! bundle `analyse`d offline saying the same.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::VerdictCode;
use etcdnet::report::DiagnoseReport;
use etcdnet_fakensx::{world_dir, FakeNsx, World};

/// The rule of `infra-drop-2380` that drops TCP 2380 between the control plane's VMs.
const RULE_NAME: &str = "\"drop etcd peer traffic\"";
const RULE_PATH: &str =
    "/infra/domains/default/security-policies/infra-hardening/rules/drop-etcd-peer";
/// The verdict's opening words when NSX Manager's rule leads the evidence.
const RULE_LINE: &str = "NSX Manager's distributed firewall rule ";
const NO_RULE_LINE: &str = "NSX Manager shows no rule that drops these paths (read: ";
/// NSX's variables as terraform-provider-nsxt's users have them set.
const NSX_VARS: [&str; 3] = ["NSXT_USERNAME", "NSXT_PASSWORD", "NSXT_MANAGER_HOST"];

/// The article's Supervisor, its peers timing out on 2380 (6 failing paths), and a fake NSX
/// Manager serving `world`; its CA written for `--nsx-ca`.
struct Case {
    env: Env,
    nsx: FakeNsx,
    ca: PathBuf,
}

impl Case {
    fn new(world: &str) -> Case {
        Case::serving(World::from_dir(world_dir(world)).expect("the world loads"))
    }

    fn serving(world: World) -> Case {
        Case::on(SET, world)
    }

    /// As [`Case::serving`], the Supervisor serving fixture set `set` (the article's cluster).
    fn on(set: &str, world: World) -> Case {
        let env = Env::new(set, Workload::black_hole());
        env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
        let nsx = FakeNsx::start(world).expect("the fake NSX Manager starts");
        let ca = env.dir.path().join("nsx-ca.pem");
        nsx.write_ca(&ca).unwrap();
        Case { env, nsx, ca }
    }

    /// The user's password in the world (test-only values, `article/00-users.yaml`).
    fn password(&self, user: &str) -> String {
        self.nsx.world().user(user).unwrap().password.clone()
    }

    /// `kubectl etcdnet diagnose` of the article's cluster on the jumpbox route, with `vars`
    /// as its only NSX variables, then `extra`; not started.
    fn command(&self, vars: &[(&str, &str)], extra: &[&str]) -> Command {
        let mut cmd = self.env.diagnose_via_jumpbox_command(extra);
        for v in NSX_VARS {
            cmd.env_remove(v);
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// The run with `--nsx-manager` (the fake), `--nsx-ca`, signed in as `user`, then `extra`.
    fn nsx_command(&self, user: &str, extra: &[&str]) -> Command {
        let url = self.nsx.url();
        let ca = self.ca.to_str().unwrap();
        let mut args = vec!["--nsx-manager", url.as_str(), "--nsx-ca", ca];
        args.extend_from_slice(extra);
        let password = self.password(user);
        self.command(
            &[
                ("NSXT_USERNAME", user),
                ("NSXT_PASSWORD", password.as_str()),
            ],
            &args,
        )
    }

    fn run_as(&self, user: &str, extra: &[&str]) -> Run {
        Run::from(
            self.nsx_command(user, extra)
                .output()
                .expect("kubectl runs"),
        )
    }

    /// `-o json` as `user`: the run and its report.
    fn json_as(&self, user: &str, extra: &[&str]) -> (Run, DiagnoseReport) {
        let mut args = vec!["-o", "json"];
        args.extend_from_slice(extra);
        let run = self.run_as(user, &args);
        let report = run.diagnose_report();
        (run, report)
    }

    /// Every password of the world's users, none of which may leave the process but to the
    /// manager's login: not in `texts`, and the fake saw none sent where it should not be.
    fn assert_no_password_in(&self, texts: &[(&str, &[u8])]) {
        for user in ["admin", "auditor", "tracer", "nobody"] {
            let pw = self.password(user);
            for (what, bytes) in texts {
                assert!(
                    !bytes.windows(pw.len()).any(|w| w == pw.as_bytes()),
                    "{user}'s password is in {what}"
                );
            }
        }
        assert!(
            self.nsx.password_leaks().is_empty(),
            "{:?}",
            self.nsx.password_leaks()
        );
    }
}

/// The verdict of every case: the peers time out on 2380 everywhere, 2379 works.
fn assert_2380_verdict(report: &DiagnoseReport) {
    assert_eq!(
        report.verdict.code,
        VerdictCode::EtcdPeerNetworkPartial,
        "{:#?}",
        report.verdict
    );
}

/// The evidence lines NSX Manager gave (its rules, its traceflows, "shows no rule").
fn nsx_lines(report: &DiagnoseReport) -> Vec<String> {
    report
        .verdict
        .evidence
        .iter()
        .filter(|l| l.contains("NSX Manager") || l.starts_with("traceflow "))
        .cloned()
        .collect()
}

/// The verdict's notes about NSX Manager.
fn nsx_notes(report: &DiagnoseReport) -> Vec<String> {
    let notes = report.verdict.notes.iter();
    notes
        .filter(|n| n.contains("NSX Manager"))
        .cloned()
        .collect()
}

/// The Infrastructure rule of infra-drop-2380 leads the evidence: its name, its path, its
/// category, the 6 failing paths it covers; the first next step is to have it changed.
#[test]
fn an_infrastructure_rule_dropping_2380_leads_the_evidence_and_the_steps() {
    let case = Case::new("infra-drop-2380");
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}{RULE_NAME} ({RULE_PATH}; category Infrastructure, policy \"Infrastructure hardening\" sequence 10, rule sequence 20, rule id 3042) drops TCP 2380 on 6 of the 6 failing paths (")),
        "{:#?}",
        report.verdict.evidence
    );
    for node in CP {
        assert!(first.contains(node), "{node} not in: {first}");
    }
    let step = &report.verdict.next_steps[0];
    assert!(
        step.starts_with(&format!(
            "Have NSX Manager's distributed firewall rule {RULE_NAME} ({RULE_PATH};"
        )) && step.contains("category Infrastructure"),
        "{:#?}",
        report.verdict.next_steps
    );
    // Read as an auditor may: every part read, no traceflow asked for.
    assert!(nsx_notes(&report).is_empty(), "{:#?}", report.verdict.notes);
    assert_eq!(case.nsx.traceflows_created(), 0);
    // The table says it too, first in the evidence.
    let table = case.run_as("auditor", &[]);
    table.expect_code(1);
    assert!(
        table.stdout.contains(RULE_PATH),
        "{}\n{}",
        table.stdout,
        table.stderr
    );
}

/// An Environment ALLOW of etcd before an Application DROP of 2380: the ALLOW is the first
/// match, so the DROP is never blamed, and NSX Manager shows no rule that drops the paths.
#[test]
fn an_allow_before_an_application_drop_is_not_blamed() {
    let case = Case::new("allow-before-app-drop");
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let all = report.verdict.evidence.join("\n") + &report.verdict.next_steps.join("\n");
    assert!(!all.contains(RULE_LINE), "{all}");
    assert!(
        !all.contains("drop-etcd-peer-app") && !all.contains("application lockdown"),
        "{all}"
    );
    assert_shows_no_rule(&report, "Environment 1");
}

/// Rules that drop other things (SSH from outside, 8080, an Emergency quarantine of another
/// address): none touches etcd; the default ALLOW decides.
#[test]
fn rules_dropping_other_things_show_no_rule_for_these_paths() {
    let case = Case::new("no-drop");
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    assert!(!report.verdict.evidence.join("\n").contains(RULE_LINE));
    assert_shows_no_rule(&report, "Emergency 1");
}

/// The first evidence line is "NSX Manager shows no rule that drops these paths" with what was
/// read: the policies by category (`category` among them), and all three VMs identified.
fn assert_shows_no_rule(report: &DiagnoseReport, category: &str) {
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(NO_RULE_LINE)
            && first.contains(category)
            && first.contains("3 of 3 VMs identified")
            && !first.contains("not read"),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(nsx_notes(report).is_empty(), "{:#?}", report.verdict.notes);
}

/// `--nsx-traceflow` as `tracer` (network_engineer): one traceflow per failing pair on 2380
/// (3), each dropped by the rule the DFW evaluation names; all deleted once read. As `auditor`
/// (may not run Traceflow): a note naming the privilege, and the same diagnosis.
#[test]
fn traceflows_prove_the_rule_and_are_deleted_and_an_auditor_gets_a_note() {
    let case = Case::new("infra-drop-2380");
    let (run, report) = case.json_as("tracer", &["--nsx-traceflow"]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    assert_eq!(case.nsx.traceflows_created(), 3, "one per failing pair");
    assert!(
        case.nsx.traceflows_live().is_empty(),
        "{:?}",
        case.nsx.traceflows_live()
    );
    assert_eq!(case.nsx.traceflows_deleted().len(), 3);
    assert!(report.verdict.evidence[0].starts_with(&format!("{RULE_LINE}{RULE_NAME}")));
    let traced: Vec<&String> = report
        .verdict
        .evidence
        .iter()
        .filter(|l| l.starts_with("traceflow "))
        .collect();
    assert_eq!(traced.len(), 3, "{:#?}", report.verdict.evidence);
    for line in &traced {
        assert!(
            line.contains(":2380: dropped at ")
                && line.contains("(FW_RULE)")
                && line.contains(&format!("by {RULE_NAME} ({RULE_PATH};"))
                && !line.contains("says otherwise"),
            "{line}"
        );
    }
    assert!(nsx_notes(&report).is_empty(), "{:#?}", report.verdict.notes);
    case.assert_no_password_in(&[
        ("stdout", run.stdout.as_bytes()),
        ("stderr", run.stderr.as_bytes()),
    ]);

    let without = case.run_as("auditor", &["-o", "json"]);
    let (auditor, areport) = case.json_as("auditor", &["--nsx-traceflow"]);
    assert_eq!(auditor.code, without.code);
    assert_eq!(areport.verdict.code, without.diagnose_report().verdict.code);
    assert_eq!(case.nsx.traceflows_created(), 3, "the auditor made none");
    assert!(case.nsx.traceflows_live().is_empty());
    // One note for the three refusals, naming the privilege; no traceflow line.
    assert_eq!(
        nsx_notes(&areport),
        [format!(
            "NSX Manager: traceflows not run: NSX Manager refused the account (403): NSX Manager answered 403 (error_code 401): The user does not have the permission to run Traceflow.; needs {}",
            "a role that may run Traceflow (Plan & Troubleshoot > Traceflow with full access, e.g. Network Operator or Network Admin); Auditor may not"
        )],
        "{:#?}",
        areport.verdict
    );
    assert!(
        !areport
            .verdict
            .evidence
            .iter()
            .any(|l| l.starts_with("traceflow ")),
        "{:#?}",
        areport.verdict.evidence
    );
    // The DFW reading is the auditor's to make: the rule is still named first.
    assert!(areport.verdict.evidence[0].starts_with(&format!("{RULE_LINE}{RULE_NAME}")));
}

/// Ctrl-C while the traceflows are in progress (the fake holds them IN_PROGRESS for a minute):
/// the run exits 130 and NSX Manager keeps none.
#[test]
fn ctrl_c_with_traceflows_alive_deletes_every_one() {
    let case = Case::new("infra-drop-2380");
    case.nsx.set_observation_delay(Duration::from_secs(60));
    let cmd = case.nsx_command("tracer", &["--nsx-traceflow", "--timeout", "60s"]);
    let started = Instant::now();
    let run = interrupt_when(
        cmd,
        || case.nsx.traceflows_live().len() == 3,
        Duration::from_secs(20),
    );
    run.expect_code(130);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
    // Ended by the signal, not by the traceflows (held a minute) nor `--timeout 60s`: well
    // under either, whatever the load (the interrupt itself may come as late as 20 s).
    assert!(started.elapsed() < Duration::from_secs(40));
    assert!(
        case.nsx.traceflows_live().is_empty(),
        "left on NSX Manager: {:?}",
        case.nsx.traceflows_live()
    );
    assert_eq!(case.nsx.traceflows_deleted().len(), 3);
    assert!(case.nsx.password_leaks().is_empty());
}

/// Every DELETE answered 503 (`Retry-After: 4`): after Ctrl-C each traceflow's delete is
/// retried only within its 10 s bound (at 0, 4 and 8 s; a fourth try would start past it), the
/// run ends and says what it left; and a second Ctrl-C ends that wait at once.
#[test]
fn deletes_are_bounded_and_a_second_ctrl_c_ends_their_wait() {
    let case = Case::new("infra-drop-2380");
    case.nsx.set_observation_delay(Duration::from_secs(60));
    case.nsx.inject(
        etcdnet_fakensx::Fault::new("/policy/api/v1/infra/traceflows/", 503)
            .method("DELETE")
            .retry_after(4),
    );
    let deletes = || {
        case.nsx
            .requests()
            .iter()
            .filter(|r| r.method == "DELETE")
            .count()
    };
    let signal = |child: &std::process::Child| {
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    let wait_for = |what: &str, ready: &dyn Fn() -> bool| {
        let until = Instant::now() + Duration::from_secs(30);
        while !ready() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(ready(), "never saw {what}");
    };
    let args = ["--nsx-traceflow", "--timeout", "60s"];

    // One Ctrl-C: the deletes run their bound out, and the run ends, each left one said.
    let child = case.nsx_command("tracer", &args).spawn().unwrap();
    wait_for("3 traceflows", &|| case.nsx.traceflows_live().len() == 3);
    signal(&child);
    let first = Instant::now();
    let run = Run::from(child.wait_with_output().unwrap());
    run.expect_code(130);
    let took = first.elapsed();
    assert!(took < Duration::from_secs(25), "{took:?}");
    assert!(
        (6..=9).contains(&deletes()),
        "3 traceflows, 2 or 3 tries each within 10 s: {:#?}",
        case.nsx.requests()
    );
    let warned = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: could not delete traceflow /infra/traceflows/etcdnet-"))
        .count();
    assert_eq!(warned, 3, "{}", run.stderr);

    // A second Ctrl-C while the deletes wait: the run ends at once, naming what it left.
    let before = deletes();
    let child = case.nsx_command("tracer", &args).spawn().unwrap();
    wait_for("3 more traceflows", &|| {
        case.nsx.traceflows_live().len() == 6
    });
    signal(&child);
    wait_for("a delete", &|| deletes() > before);
    signal(&child);
    let second = Instant::now();
    let run = Run::from(child.wait_with_output().unwrap());
    run.expect_code(130);
    assert!(
        second.elapsed() < Duration::from_secs(4),
        "{:?}",
        second.elapsed()
    );
    let named = run
        .stderr
        .lines()
        .filter(|l| l.contains("was not deleted from NSX Manager (interrupted again)"))
        .count();
    assert_eq!(named, 3, "{}", run.stderr);
    assert!(case.nsx.password_leaks().is_empty());
}

/// A wrong password: one refused login at most (NSX locks an account after 5 in 900 s), one
/// note naming the 403, NSX's error_code and the lockout, the diagnosis still made; and under
/// `--watch`, one failed login for the whole run however many rounds, each round the network
/// verdict.
#[test]
fn a_wrong_password_is_one_failed_login_and_a_note() {
    let case = Case::new("infra-drop-2380");
    let url = case.nsx.url();
    let ca = case.ca.to_str().unwrap();
    let wrong = "Wr0ng!not-the-password";
    let command = |extra: &[&str]| {
        let mut args = vec!["--nsx-manager", &url, "--nsx-ca", ca, "--nsx-traceflow"];
        args.extend_from_slice(extra);
        case.command(
            &[("NSXT_USERNAME", "tracer"), ("NSXT_PASSWORD", wrong)],
            &args,
        )
    };
    let run = Run::from(command(&["-o", "json"]).output().unwrap());
    run.expect_code(1);
    let report = run.diagnose_report();
    assert_2380_verdict(&report);
    let asked: Vec<String> = case.nsx.requests().iter().map(|r| r.line()).collect();
    assert_eq!(asked, ["POST /api/session/create"], "the login alone");
    assert_eq!(case.nsx.failed_logins(), 1);
    assert_eq!(case.nsx.traceflows_created(), 0);
    let notes = nsx_notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("NSX Manager: not read: ")
                && n.contains(
                    "NSX Manager refused the login (NSX Manager answered 403 (error_code 403): "
                )
                && n.contains("after 5 failed logins within 900 s")
                && !n.contains('\n')),
        "{:#?}",
        report.verdict.notes
    );
    assert!(!report.verdict.evidence.join("\n").contains(RULE_LINE));
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains(wrong), "the wrong password was printed");
    }
    case.assert_no_password_in(&[]);

    // --watch: three rounds through the kept jumpbox (the fake's kept pod prints a round every
    // second, as jumpbox.sh does with ETCDNET_ROUNDS_EVERY), each the network verdict and
    // saying the refusal; one more failed login for the whole watch, however many rounds.
    let mut child = command(&["--watch", "--interval=1s", "-o", "json"])
        .spawn()
        .unwrap();
    let stdout = stdout_of(&mut child);
    let lines = || stdout.now().lines().count();
    // (Unwind-safe: the closure only reads the text so far.)
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("three --watch rounds", Duration::from_secs(90), || {
            lines() >= 3
        })
    }));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let code = exit_within(&mut child, Duration::from_secs(30));
    let text = stdout.all();
    assert!(waited.is_ok(), "{text}");
    assert_eq!(code, 130, "{text}");
    assert_eq!(
        case.nsx.failed_logins(),
        2,
        "one more run, one more failed login: {:#?}",
        case.nsx.requests()
    );
    assert_eq!(case.nsx.requests().len(), 2, "{:#?}", case.nsx.requests());
    let rounds: Vec<DiagnoseReport> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a round's report"))
        .collect();
    assert!(rounds.len() >= 3, "{text}");
    for r in &rounds {
        assert_2380_verdict(r);
        assert!(
            nsx_notes(r)
                .iter()
                .any(|n| n.contains("refused the login") && n.contains("nothing more is sent")),
            "{:#?}",
            r.verdict.notes
        );
    }
    assert!(!case.nsx.is_locked_out("tracer"));
}

/// A session that expires in the middle of the reading (NSX answers 403, error_code 98): one
/// re-login, the reading carries on, and the rule is named as without the expiry.
#[test]
fn an_expiring_session_is_logged_in_again_once_and_the_rule_named() {
    let case = Case::new("infra-drop-2380");
    let (run, _) = case.json_as("auditor", &[]);
    run.expect_code(1);
    // The requests one reading makes in its session (its login and the destroy aside).
    let whole = case
        .nsx
        .requests()
        .iter()
        .filter(|r| matches!(r.auth, etcdnet_fakensx::AuthUsed::Session(_)))
        .count()
        - 1;
    assert!(whole > 8, "{whole} requests");
    assert_eq!(case.nsx.logins(), 1);
    // The session ends past half of them: one re-login carries the rest.
    case.nsx.expire_sessions(Some(whole as u32 / 2 + 2), None);
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    assert_eq!(case.nsx.sessions_expired(), 1);
    assert_eq!(case.nsx.logins(), 1 + 2, "the run's login and one re-login");
    assert_eq!(case.nsx.failed_logins(), 0);
    assert!(
        report.verdict.evidence[0].starts_with(&format!("{RULE_LINE}{RULE_NAME}")),
        "{:#?}",
        report.verdict
    );
    assert!(nsx_notes(&report).is_empty(), "{:#?}", report.verdict.notes);
}

/// `-A --nsx-traceflow` over two clusters failing alike (the `two-clusters` set's two control
/// planes in one vSphere Namespace, one jumpbox pod for both, every peer path on 2380 timing
/// out; `two-clusters-drop-2380` drops it): each cluster traces its own paths and deletes its
/// own traceflows, none left on NSX Manager, no DELETE before its PUT, none of another's.
#[test]
fn all_clusters_with_traceflows_delete_their_own_and_leave_none() {
    const TKC_A: [&str; 3] = [
        "tkc-a-m2c8r-4rz8m",
        "tkc-a-m2c8r-9qtvw",
        "tkc-a-m2c8r-bx2lk",
    ];
    const TKC_B: [&str; 3] = [
        "tkc-b-j5t9w-4rz8m",
        "tkc-b-j5t9w-9qtvw",
        "tkc-b-j5t9w-bx2lk",
    ];
    let env = Env::new("two-clusters", Workload::black_hole());
    // Each VM's section: the article's 2380-dropped one, made its own cluster's (its names,
    // and for tkc-b its addresses).
    env.script_jumpbox_pods_with(&TKC_A, |_, ip| {
        let (own, names) = match ip.strip_prefix("198.18.1.") {
            Some(last) => (format!("198.18.0.{last}"), TKC_B),
            None => (ip.to_string(), TKC_A),
        };
        let mut text = section_2380_dropped(&own);
        for (article, name) in CP.iter().zip(names) {
            text = text.replace(article, name);
        }
        if ip.starts_with("198.18.1.") {
            text = text.replace("198.18.0.", "198.18.1.");
        }
        Some(text)
    });
    let nsx = FakeNsx::start(World::from_dir(world_dir("two-clusters-drop-2380")).unwrap())
        .expect("the fake NSX Manager starts");
    let ca = env.dir.path().join("nsx-ca.pem");
    nsx.write_ca(&ca).unwrap();
    let password = nsx.world().user("tracer").unwrap().password.clone();
    let url = nsx.url();
    let mut cmd = env.kubectl_command(&[
        "diagnose",
        "-A",
        "--via",
        "jumpbox",
        "--api-timeout",
        "1s",
        "--nsx-manager",
        &url,
        "--nsx-ca",
        ca.to_str().unwrap(),
        "--nsx-traceflow",
        "-o",
        "json",
    ]);
    for v in NSX_VARS {
        cmd.env_remove(v);
    }
    cmd.env("NSXT_USERNAME", "tracer")
        .env("NSXT_PASSWORD", &password);
    let run = Run::from(cmd.output().unwrap());
    let list: etcdnet::report::ListReport<DiagnoseReport> = run.report();
    assert_eq!(list.result.clusters, 2, "{}\n{}", run.stdout, run.stderr);
    for item in &list.items {
        let etcdnet::report::ListItem::Report(r) = item else {
            panic!("{item:?}")
        };
        assert_2380_verdict(r);
        let traced = r
            .verdict
            .evidence
            .iter()
            .filter(|l| l.starts_with("traceflow ") && l.contains(":2380: dropped at "))
            .count();
        assert_eq!(
            traced, 3,
            "{}: {:#?}",
            r.header.cluster.name, r.verdict.evidence
        );
    }
    assert_eq!(nsx.logins(), 1, "one login for both clusters");
    assert_eq!(nsx.traceflows_created(), 6, "three a cluster");
    assert!(
        nsx.traceflows_live().is_empty(),
        "{:?}",
        nsx.traceflows_live()
    );
    let ops = nsx.traceflow_ops();
    let deletes: Vec<_> = ops.iter().filter(|o| o.method == "DELETE").collect();
    assert_eq!(
        deletes.len(),
        6,
        "each deleted once, by its own cluster: {ops:#?}"
    );
    for d in &deletes {
        assert!(
            d.existed,
            "a DELETE of no traceflow (before its PUT, or twice): {ops:#?}"
        );
        let put = ops
            .iter()
            .position(|o| o.method == "PUT" && o.path == d.path);
        let delete = ops.iter().position(|o| std::ptr::eq(o, *d));
        assert!(put.is_some() && put < delete, "{ops:#?}");
    }
    // Every traceflow's packet as documented: both MACs (the VIFs'), the source address, each
    // the world's own for the VMs the traceflow goes between.
    let world = nsx.world();
    for t in nsx.traceflows_deleted() {
        let q = t.query.as_ref().expect("a port the world knows");
        let packet = &t.config["packet"];
        let mac_of = |ip: std::net::IpAddr| {
            world
                .vifs
                .iter()
                .find(|v| World::vif_ips(v).contains(&ip))
                .and_then(|v| v["mac_address"].as_str())
                .unwrap()
                .to_string()
        };
        assert_eq!(
            packet["ip_header"]["src_ip"],
            q.src_ip.to_string(),
            "{packet}"
        );
        assert_eq!(
            packet["eth_header"]["src_mac"],
            mac_of(q.src_ip),
            "{packet}"
        );
        assert_eq!(
            packet["eth_header"]["dst_mac"],
            mac_of(q.dst_ip),
            "{packet}"
        );
        let (src, dst) = (q.src_ip.to_string(), q.dst_ip.to_string());
        assert_eq!(src[..9], dst[..9], "within one cluster: {src} → {dst}");
    }
    assert!(nsx.password_leaks().is_empty());
}

/// The password in no output of any format nor in a bundle (every byte of the archive
/// decompressed), and sent nowhere but the login.
#[test]
fn the_password_is_in_no_output_and_no_bundle() {
    let case = Case::new("infra-drop-2380");
    // Traceflows that finish at once: their waiting is tested above, their words here.
    case.nsx.set_observation_delay(Duration::ZERO);
    let bundle = case.env.dir.path().join("nsx.tar.gz");
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for format in ["json", "yaml", "table", "wide"] {
        let mut args = vec!["--nsx-traceflow"];
        if format != "table" {
            args.extend(["-o", format]);
        }
        if format == "json" {
            args.extend(["--bundle", bundle.to_str().unwrap()]);
        }
        let run = case.run_as("tracer", &args);
        run.expect_code(1);
        assert!(
            run.stdout.contains(RULE_PATH),
            "-o {format}: {}",
            run.stdout
        );
        outputs.push((format!("-o {format} stdout"), run.stdout.into_bytes()));
        outputs.push((format!("-o {format} stderr"), run.stderr.into_bytes()));
    }
    let mut archive = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&bundle).unwrap())
        .read_to_end(&mut archive)
        .unwrap();
    let names: Vec<String> = common::tarball::entries(&bundle)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(
        names.contains(&format!("{NS}/{CLUSTER}/nsx-manager.json")),
        "{names:#?}"
    );
    outputs.push(("the bundle".into(), archive));
    let texts: Vec<(&str, &[u8])> = outputs
        .iter()
        .map(|(w, b)| (w.as_str(), b.as_slice()))
        .collect();
    case.assert_no_password_in(&texts);
    // Nor the Supervisor's planted secrets (the bundle's own scan).
    crate::bundle::assert_no_secret(&bundle, &[case.password("tracer").into_bytes()]);
    assert!(case.nsx.traceflows_live().is_empty());
}

/// `NSXT_MANAGER_HOST` (terraform's) set, credentials too, no `--nsx-manager`: NSX Manager is
/// never contacted.
#[test]
fn nsx_variables_without_the_flag_contact_nothing() {
    let case = Case::new("infra-drop-2380");
    let url = case.nsx.url();
    let host = url.trim_start_matches("https://").to_string();
    let password = case.password("admin");
    for manager in [url.as_str(), host.as_str()] {
        let run = Run::from(
            case.command(
                &[
                    ("NSXT_MANAGER_HOST", manager),
                    ("NSXT_USERNAME", "admin"),
                    ("NSXT_PASSWORD", &password),
                ],
                &["-o", "json"],
            )
            .output()
            .unwrap(),
        );
        run.expect_code(1);
        assert_2380_verdict(&run.diagnose_report());
        assert!(
            !run.stdout.contains(RULE_LINE) && !run.stdout.contains(NO_RULE_LINE),
            "{}",
            run.stdout
        );
    }
    assert!(
        case.nsx.requests().is_empty(),
        "{:?}",
        case.nsx
            .requests()
            .iter()
            .map(|r| r.line())
            .collect::<Vec<_>>()
    );
}

/// Without `--nsx-manager` every output is what it was: the same bytes with and without NSX's
/// variables (timings and the fakes' ports masked as the contract's snapshots mask them).
#[test]
fn without_the_flag_the_output_is_the_same_with_or_without_nsx_variables() {
    let case = Case::new("infra-drop-2380");
    let url = case.nsx.url();
    let password = case.password("admin");
    let vars = [
        ("NSXT_MANAGER_HOST", url.as_str()),
        ("NSXT_USERNAME", "admin"),
        ("NSXT_PASSWORD", password.as_str()),
    ];
    for format in [&["-o", "json"][..], &["-o", "yaml"], &["--details"]] {
        let plain = Run::from(case.command(&[], format).output().unwrap());
        let with = Run::from(case.command(&vars, format).output().unwrap());
        assert_eq!(plain.code, 1, "{}", plain.stderr);
        assert_eq!(with.code, plain.code, "{format:?}");
        assert_eq!(
            crate::json_contract::mask(&with.stdout),
            crate::json_contract::mask(&plain.stdout),
            "{format:?}: stdout"
        );
        assert_eq!(
            crate::json_contract::mask(&with.stderr),
            crate::json_contract::mask(&plain.stderr),
            "{format:?}: stderr"
        );
    }
    assert!(case.nsx.requests().is_empty());
}

/// The run as `auditor` with `--nsx-timeout 5s` ends within that bound plus a margin of 10 s
/// over the same run without NSX Manager (which never contacts the fake), the diagnosis made;
/// its report.
fn within_the_bound(case: &Case) -> DiagnoseReport {
    let started = Instant::now();
    let plain = Run::from(case.command(&[], &["-o", "json"]).output().unwrap());
    let baseline = started.elapsed();
    plain.expect_code(1);

    let started = Instant::now();
    let (run, report) = case.json_as("auditor", &["--nsx-timeout", "5s"]);
    let took = started.elapsed();
    run.expect_code(1);
    assert_2380_verdict(&report);
    let bound = baseline + Duration::from_secs(5) + Duration::from_secs(10);
    assert!(took < bound, "took {took:?}, bound {bound:?}");
    report
}

/// A manager slower than `--nsx-timeout 5s` (each answer 30 s late): the run ends within the
/// bound (5 s) plus a margin of 10 s over the run without NSX Manager, and says what was not
/// read; the diagnosis is still made.
#[test]
fn a_slow_manager_ends_within_the_bound_and_the_gap_is_said() {
    let case = Case::new("infra-drop-2380");
    case.nsx.set_delay(Duration::from_secs(30));
    let report = within_the_bound(&case);
    // The login was the request cut: said with the bound, and the paths left undecided.
    let notes = nsx_notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("NSX Manager: not read: ")
                && n.contains("did not finish answering within 5s")),
        "{:#?}",
        report.verdict.notes
    );
    assert!(
        report.verdict.evidence[0].starts_with("6 of the 6 failing paths (")
            && report.verdict.evidence[0]
                .contains("cannot be decided from NSX Manager's distributed firewall"),
        "{:#?}",
        report.verdict.evidence
    );
}

/// A huge manager (2,500 filler Application policies of 4 rules each, whose sources and
/// destinations are addresses, and 1,200 groups, besides the world's own) across a WAN (each
/// answer 50 ms late, so reading it whole takes ~30 s at the reader's four requests in flight):
/// the run ends within `--nsx-timeout 5s` plus a margin of 10 s over the run without NSX
/// Manager, the diagnosis made, and the cut said, never a guess.
///
/// The latency makes the cut certain: without it an idle machine reads the whole manager within
/// the bound, and on CI's two loaded cores the same debug-build reading was CPU-bound (17.2 s
/// against a 16.7 s bound with five labs beside it), which timed the machine, not the bound.
#[test]
fn a_huge_manager_is_read_within_the_bound() {
    let world = World::from_dir(world_dir("infra-drop-2380"))
        .unwrap()
        .with_filler(2500, 4, 1200);
    let case = Case::serving(world);
    case.nsx.set_delay(Duration::from_millis(50));
    let report = within_the_bound(&case);
    // Cut by the bound: what was read still counts (the VMs are read first, a policy whose
    // rules were cut is that policy's gap), the paths are undecided with the cut said, and no
    // rule is named from a partial reading.
    let notes = nsx_notes(&report);
    let first = &report.verdict.evidence[0];
    let cut_said = notes.iter().any(|n| {
        n.starts_with("NSX Manager: not read: ")
            && (n.contains("within 5s") || n.contains("deadline (5s)"))
    });
    let undecided = first.contains("cannot be decided from NSX Manager's distributed firewall");
    assert!(undecided && cut_said, "{:#?}", report.verdict);
    let evidence = report.verdict.evidence.join("\n");
    assert!(!evidence.contains(RULE_LINE), "{evidence}");
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("VM of ") || n.contains("not looked up")),
        "{notes:#?}"
    );
    // The filler's rules name addresses, not groups: none asked as a group, none a gap; each
    // policy's rules asked once, no group of the 1,200 read.
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("is not an NSX policy path")),
        "{notes:#?}"
    );
    let requests = case.nsx.requests();
    assert!(requests.len() < 2_600, "{} requests", requests.len());
    assert!(
        !requests
            .iter()
            .any(|r| r.path.contains("/groups/filler-group-")),
        "a filler group was read"
    );
}

/// A hostile manager listing 20,000 security policies without a path (live; the bundle case
/// is `bundle::bounds_tests`): the reader keeps the first 5,000 (its object cap) and says the
/// cut, the policies are told apart by a set (pairwise they took 15-18 s), and the run ends well
/// within its bound (generous: CI's two loaded cores), the diagnosis made and no rule named
/// from a list that is not whole.
#[test]
fn twenty_thousand_pathless_policies_live_are_bounded_and_the_cut_said() {
    let world = World::from_dir(world_dir("infra-drop-2380"))
        .unwrap()
        .with_pathless(20_000);
    let case = Case::serving(world);
    let started = Instant::now();
    let (run, report) = case.json_as("auditor", &["--nsx-timeout", "60s"]);
    let took = started.elapsed();
    run.expect_code(1);
    assert_2380_verdict(&report);
    assert!(took < Duration::from_secs(45), "took {took:?}");
    let notes = nsx_notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("NSX Manager: not read: ")
                && n.contains("security-policies")
                && n.contains("more than 5000 objects")),
        "{notes:#?}"
    );
    let evidence = report.verdict.evidence.join("\n");
    assert!(!evidence.contains(RULE_LINE), "{evidence}");
    assert!(
        report.verdict.evidence[0]
            .contains("cannot be decided from NSX Manager's distributed firewall"),
        "{evidence}"
    );
}

/// `--bundle` with the traceflows, then `analyse` with no Supervisor to reach: the same NSX
/// Manager lines (the rule, its traceflows) and the same report.
#[test]
fn a_bundle_analysed_offline_says_the_same_nsx_lines() {
    let case = Case::new("infra-drop-2380");
    let bundle = case.env.dir.path().join("tkc-prod.tar.gz");
    let (live, report) = case.json_as(
        "tracer",
        &["--nsx-traceflow", "--bundle", bundle.to_str().unwrap()],
    );
    live.expect_code(1);
    let lines = nsx_lines(&report);
    assert_eq!(lines.len(), 4, "the rule and three traceflows: {lines:#?}");
    let created = case.nsx.requests().len();

    let offline = crate::bundle::analyse_offline(&case.env, &bundle, &["-o", "json"]);
    offline.expect_code(1);
    let again = offline.diagnose_report();
    assert_eq!(nsx_lines(&again), lines);
    assert_eq!(again.verdict.next_steps, report.verdict.next_steps);
    assert_eq!(offline.json(), live.json(), "the same report");
    assert_eq!(
        case.nsx.requests().len(),
        created,
        "analyse asks NSX nothing"
    );

    let table = crate::bundle::analyse_offline(&case.env, &bundle, &[]);
    table.expect_code(1);
    assert!(table.stdout.contains(RULE_PATH), "{}", table.stdout);
}

/// `--nsx-timeout` bounds the reading, not the run: probes slower than it (the jumpbox pod
/// pending 6 s, `--nsx-timeout 5s`) leave the reading its whole bound, and the rule is named.
#[test]
fn slow_probes_do_not_eat_the_readings_bound() {
    let case = Case::new("infra-drop-2380");
    fn dropped(_: usize, ip: &str) -> Option<String> {
        Some(section_2380_dropped(ip))
    }
    case.env.supervisor.on_pod_created(|pod| {
        let log = scripted_jumpbox_log_with(pod, &CP, dropped);
        Some(etcdnet_fakeapi::PodScript {
            run_after: Duration::from_secs(6),
            ..etcdnet_fakeapi::PodScript::succeeds(log)
        })
    });
    let (run, report) = case.json_as("auditor", &["--nsx-timeout", "5s", "--timeout", "60s"]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    assert!(
        report.verdict.evidence[0].starts_with(&format!("{RULE_LINE}{RULE_NAME}")),
        "{:#?}",
        report.verdict
    );
    assert!(nsx_notes(&report).is_empty(), "{:#?}", report.verdict.notes);
}

/// VPC networking (the Namespace's VPCNetworkConfiguration names a VPC of the NSX project
/// proj-tkg, its NetworkInfo that VPC): NSX Manager is read in that VPC's tree, the VPC's
/// DROP of TCP 2380 (a VPC policy: no category; NSX evaluates it after every `/infra` and
/// project policy, by its sequence number) is named, and, as a user who may run Traceflow,
/// the traceflows start at the VMs' `VpcSubnetPort`s (the ports found by `attachment.id`, the
/// VMs' membership of the VPC's group of ports asked by each port's path), are created under
/// the project's infra, agree with the rule, and are all deleted.
#[test]
fn on_vpc_networking_the_vpcs_drop_is_named_and_traced_from_its_subnet_ports() {
    const VPC: &str = "/orgs/default/projects/proj-tkg/vpcs/ns-prod";
    let vpc_rule = format!("{VPC}/security-policies/vpc-etcd-lockdown/rules/drop-etcd-peer");
    let case = Case::on(
        "nsx-vpc-manager",
        World::from_dir(world_dir("vpc-drop-2380")).expect("the world loads"),
    );
    let (run, report) = case.json_as("tracer", &["--nsx-traceflow"]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    // The VPC objects (VPCNetworkConfiguration, NetworkInfo) read through their rows of KINDS.
    crate::rbac::assert_through_kinds("diagnose --nsx-manager (VPC)", &case.env.supervisor);
    let asked = case.nsx.requests();
    let paths: Vec<&str> = asked.iter().map(|r| r.path.as_str()).collect();
    let policies = format!("/policy/api/v1{VPC}/security-policies");
    assert!(paths.contains(&policies.as_str()), "{paths:#?}");
    // The ports' groups asked by their paths in the VPC's tree, and answered.
    let by_port = asked
        .iter()
        .filter(|r| r.path == format!("/policy/api/v1{VPC}/group-associations"))
        .filter(|r| {
            r.param("intent_path")
                .is_some_and(|p| p.starts_with(&format!("{VPC}/subnets/tkc-prod-vnet/ports/")))
        })
        .count();
    assert_eq!(by_port, 3, "{paths:#?}");
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}\"drop-etcd-peer\" ({vpc_rule}; category VPC (no category), policy \"vpc-etcd-lockdown\" sequence 10, rule sequence 1, rule id 6001) drops TCP 2380 on 6 of the 6 failing paths")),
        "{:#?}",
        report.verdict.evidence
    );
    // The VPC's security profile (NSX 9) read and said, for the evidence.
    assert!(
        paths.contains(
            &"/policy/api/v1/orgs/default/projects/proj-tkg/vpc-security-profiles/default"
        ),
        "{paths:#?}"
    );
    // One traceflow per failing pair, from the source VM's VpcSubnetPort, under the
    // project's infra; every one deleted.
    assert_eq!(case.nsx.traceflows_created(), 3);
    assert!(
        case.nsx.traceflows_live().is_empty(),
        "{:?}",
        case.nsx.traceflows_live()
    );
    let deleted = case.nsx.traceflows_deleted();
    assert_eq!(deleted.len(), 3);
    for t in &deleted {
        assert!(
            t.path
                .starts_with("/orgs/default/projects/proj-tkg/infra/traceflows/"),
            "{t:?}"
        );
        let q = t
            .query
            .as_ref()
            .expect("the fake read the traceflow's config");
        assert!(
            q.source_port_path
                .starts_with(&format!("{VPC}/subnets/tkc-prod-vnet/ports/")),
            "{q:?}"
        );
    }
    let traced: Vec<&String> = report
        .verdict
        .evidence
        .iter()
        .filter(|l| l.starts_with("traceflow "))
        .collect();
    assert_eq!(traced.len(), 3, "{:#?}", report.verdict.evidence);
    for line in traced {
        assert!(
            line.contains(":2380: dropped at ")
                && line.contains(&format!("({vpc_rule};"))
                && !line.contains("says otherwise"),
            "{line}"
        );
    }
}

/// VPC networking, the VPC's DROP of TCP 2380 (`vpc-drop-2380`), and the control plane's
/// VMs in their project's own DFW exclusion list through a group of the project (its members
/// the three subnet ports, which NSX's group associations of each port confirm): the VPC's
/// rule is not enforced at their vNICs, so it is never blamed and the evidence says why,
/// naming the project's list and the group. The list is read where the SDK reads it, with
/// `system_owned=true`.
#[test]
fn a_vm_in_its_projects_exclusion_list_blames_no_vpc_rule() {
    const PROJECT: &str = "/orgs/default/projects/proj-tkg";
    const VPC: &str = "/orgs/default/projects/proj-tkg/vpcs/ns-prod";
    let group = format!("{PROJECT}/infra/domains/default/groups/etcd-excluded");
    let mut world = World::from_dir(world_dir("vpc-drop-2380")).expect("the world loads");
    world.groups.push(serde_json::json!({
        "resource_type": "Group", "id": "etcd-excluded", "display_name": "etcd-excluded",
        "path": group, "parent_path": format!("{PROJECT}/infra/domains/default"),
        "expression": [], "marked_for_delete": false, "_revision": 0,
    }));
    let ports: Vec<String> = ["4rz8m", "9qtvw", "bx2lk"]
        .iter()
        .map(|m| format!("{VPC}/subnets/tkc-prod-vnet/ports/tkc-prod-7xk2p-{m}-tkc-prod-vnet-eth0"))
        .collect();
    world.members.insert(
        group.clone(),
        etcdnet_fakensx::world::ExplicitMembers {
            segment_ports: ports,
            ..Default::default()
        },
    );
    world.enforcement.project_exclude_list = vec![group.clone()];
    let case = Case::on("nsx-vpc-manager", world);
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}\"drop-etcd-peer\" ({VPC}/security-policies/vpc-etcd-lockdown/rules/drop-etcd-peer;"))
            && first.contains("is not enforced there, so it is not blamed")
            && first.contains(&format!(
                "is in project proj-tkg's DFW exclusion list (through group {group})"
            )),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        !report
            .verdict
            .next_steps
            .join("\n")
            .contains("drop-etcd-peer"),
        "{:#?}",
        report.verdict.next_steps
    );
    let nsx = report.nsx_manager.as_ref().expect("nsxManager");
    assert!(nsx.blocking.is_empty(), "{:#?}", nsx.blocking);
    let e = nsx.enforcement.as_ref().expect("nsxManager.enforcement");
    assert!(
        e.vms
            .iter()
            .all(|v| v.excluded == etcdnet::report::v1alpha2::NsxKnown::Yes),
        "{:#?}",
        e.vms
    );
    assert!(
        case.nsx.requests().iter().any(|r| r.path
            == format!("/policy/api/v1{PROJECT}/infra/settings/firewall/security/exclude-list")
            && r.query.contains("system_owned=true")),
        "the project's list asked as the SDK asks it"
    );
}

/// VPC networking with a provider (`/infra`) DROP of TCP 2380 at sequence 10 and the VPC's
/// project's ALLOW of etcd's ports at sequence 1, both Application: NSX evaluates the
/// provider's policies before the project's, so the `/infra` DROP is named and the project's
/// ALLOW does not hide it (interleaved by category and sequence number it would). The
/// project's own tree (its domains) is read.
#[test]
fn a_projects_allow_earlier_in_sequence_does_not_hide_an_infra_drop() {
    let case = Case::on(
        "nsx-vpc-manager",
        World::from_dir(world_dir("vpc-project-allow-infra-drop")).expect("the world loads"),
    );
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let paths: Vec<String> = case.nsx.requests().iter().map(|r| r.path.clone()).collect();
    for p in [
        "/policy/api/v1/orgs/default/projects/proj-tkg/infra/domains",
        "/policy/api/v1/orgs/default/projects/proj-tkg/infra/domains/default/security-policies",
        "/policy/api/v1/infra/domains/default/security-policies",
    ] {
        assert!(paths.iter().any(|a| a == p), "{p} not asked: {paths:#?}");
    }
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}\"drop etcd peer traffic (provider)\" (/infra/domains/default/security-policies/provider-etcd-lockdown/rules/drop-etcd-peer-provider; category Application, policy \"provider etcd lockdown\" sequence 10")),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        !report
            .verdict
            .evidence
            .join("\n")
            .contains("project allows etcd"),
        "{:#?}",
        report.verdict.evidence
    );
}

/// An nsx-operator SecurityPolicy realized on T1: its policy and groups under the domain
/// nsx-operator names after its cluster (`/infra/domains/domain-c8`, not `default`), its
/// applied-to group defined on SegmentPort tags, for which NSX lists no VM member. Every
/// domain is read, the VMs' ports' groups are asked by the ports' paths, and its DROP is named.
#[test]
fn an_nsx_operator_rule_scoped_by_a_segment_port_group_is_named() {
    let case = Case::new("nsx-operator-port-group-drop");
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let asked = case.nsx.requests();
    assert!(
        asked
            .iter()
            .any(|r| r.path == "/policy/api/v1/infra/domains/domain-c8/security-policies"),
        "{asked:#?}"
    );
    assert!(
        asked
            .iter()
            .any(|r| r.path == "/policy/api/v1/infra/group-associations"
                && r.param("intent_path")
                    .is_some_and(|p| p.ends_with("/ports/tkc-prod-7xk2p-4rz8m-eth0"))),
        "{asked:#?}"
    );
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}\"ns-prod-etcd-lockdown-0-0\" (/infra/domains/domain-c8/security-policies/sp_ns-prod_etcd-lockdown/rules/sp_ns-prod_etcd-lockdown_0_0; category Application")),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(first.contains("6 of the 6 failing paths"), "{first}");
}

/// The path of infra-drop-2380's group of the control plane's VMs.
const CP_GROUP: &str = "/infra/domains/default/groups/tkc-prod-control-plane";
/// The policy of [`RULE_PATH`].
const RULE_POLICY: &str = "/infra/domains/default/security-policies/infra-hardening";

/// infra-drop-2380 with the DFW's `enforcement:` changed by `f`.
fn enforcing(f: impl FnOnce(&mut etcdnet_fakensx::enforce::Enforcement)) -> Case {
    let mut world = World::from_dir(world_dir("infra-drop-2380")).expect("the world loads");
    f(&mut world.enforcement);
    Case::serving(world)
}

/// A rule that is not enforced is never blamed, and the evidence says why: the control plane's
/// VMs in the DFW exclusion list through their group (the first evidence line names the rule
/// as matching but not enforced, and the group), or the DFW disabled on the manager (the same,
/// with "the DFW is disabled"). Either way no next step asks to change the rule, and the JSON
/// says which VMs are excluded and which rule is not enforced.
#[test]
fn vms_excluded_or_the_dfw_disabled_blame_no_rule_and_say_why() {
    let case = enforcing(|e| e.exclude_list = vec![CP_GROUP.to_string()]);
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    assert_2380_verdict(&report);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}{RULE_NAME} ({RULE_PATH};"))
            && first.contains("matches TCP 2380 on 6 of the 6 failing paths")
            && first.contains("is not enforced there, so it is not blamed")
            && CP.iter().all(|vm| first.contains(&format!(
                "{vm} is in the DFW exclusion list (through group {CP_GROUP})"
            ))),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        !report.verdict.next_steps.join("\n").contains(RULE_PATH),
        "{:#?}",
        report.verdict.next_steps
    );
    let nsx = report.nsx_manager.as_ref().expect("nsxManager");
    assert!(nsx.blocking.is_empty(), "{:#?}", nsx.blocking);
    let e = nsx.enforcement.as_ref().expect("nsxManager.enforcement");
    assert_eq!(e.dfw_enabled, etcdnet::report::v1alpha2::NsxKnown::Yes);
    assert_eq!(e.vms.len(), 3);
    assert!(
        e.vms
            .iter()
            .all(|v| v.excluded == etcdnet::report::v1alpha2::NsxKnown::Yes),
        "{:#?}",
        e.vms
    );
    assert_eq!(e.not_enforced.len(), 1, "{:#?}", e.not_enforced);
    assert!(
        case.nsx.requests().iter().any(|r| r.path
            == "/policy/api/v1/infra/settings/firewall/security/exclude-list"
            && r.query.contains("system_owned=true")),
        "the list with its system members asked"
    );

    let case = enforcing(|e| e.enable_firewall = false);
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}{RULE_NAME} ({RULE_PATH};"))
            && first.contains("is not enforced there, so it is not blamed")
            && first.contains("the DFW is disabled on this NSX Manager"),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(!report.verdict.next_steps.join("\n").contains(RULE_PATH));
    let e = report
        .nsx_manager
        .as_ref()
        .unwrap()
        .enforcement
        .as_ref()
        .unwrap();
    assert_eq!(e.dfw_enabled, etcdnet::report::v1alpha2::NsxKnown::No);
    // The table's NSX MANAGER section says it too, and names no rule as DROPS.
    let table = case.run_as("auditor", &["--details"]);
    table.expect_code(1);
    assert!(
        table.stdout.contains("  not blamed: ")
            && table
                .stdout
                .contains("but is not enforced there: the DFW is disabled")
            && !table.stdout.contains("DROPS"),
        "{}",
        table.stdout
    );
}

/// The rule's hit counters are read before and after the checks: hits the manager publishes
/// in between (the test says 6 were counted; the fake publishes them at its next refresh,
/// after the first read) prove the DROP, with the count. Statistics forbidden (403): the DROP
/// stays named as matched, and the evidence says its counters could not be read. An
/// exclusion list the account may not read (403) is unknown, never "not enforced": the rule
/// is still named, and a note says its enforcement is not confirmed.
#[test]
fn a_drop_whose_hits_grew_is_proven_and_forbidden_counters_leave_it_matched() {
    let case = Case::new("infra-drop-2380");
    case.nsx.publish_hits_later(RULE_PATH, 6);
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}{RULE_NAME} ({RULE_PATH};"))
            && first.ends_with(
                "; proven: +6 hits during the checks (its rule statistics, read before and after)"
            ),
        "{:#?}",
        report.verdict.evidence
    );
    let stats = format!("/policy/api/v1{RULE_POLICY}/statistics");
    let reads = case
        .nsx
        .requests()
        .iter()
        .filter(|r| r.path == stats)
        .count();
    assert_eq!(reads, 2, "read before and after the checks");
    let hits = &report
        .nsx_manager
        .as_ref()
        .unwrap()
        .enforcement
        .as_ref()
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].hits_during_checks, Some(6));

    let case = Case::new("infra-drop-2380");
    case.nsx.inject(etcdnet_fakensx::Fault::new(&stats, 403));
    case.nsx.inject(etcdnet_fakensx::Fault::new(
        "/policy/api/v1/infra/settings/firewall/security/exclude-list",
        403,
    ));
    let (run, report) = case.json_as("auditor", &[]);
    run.expect_code(1);
    let first = &report.verdict.evidence[0];
    assert!(
        first.starts_with(&format!("{RULE_LINE}{RULE_NAME} ({RULE_PATH};"))
            && first.contains("drops TCP 2380 on 6 of the 6 failing paths")
            && first.contains("; matched, not proven: its hit counters could not be read (")
            && first.contains("403"),
        "{:#?}",
        report.verdict.evidence
    );
    assert!(
        report.verdict.next_steps[0].contains(RULE_PATH),
        "still the step: {:#?}",
        report.verdict.next_steps
    );
    let notes = nsx_notes(&report);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the DFW exclusion list could not be read")
                && n.contains("their enforcement not confirmed")),
        "{notes:#?}"
    );
    assert!(
        !report
            .verdict
            .evidence
            .join("\n")
            .contains("not enforced there"),
        "{:#?}",
        report.verdict.evidence
    );
}

/// A slow manager beside a slow probe: the probes take most of `--timeout 10s` (the jumpbox pod
/// runs 8 s), and the manager, quick to log in, is then slow (each answer 60 s late) with the
/// whole `--nsx-timeout` (1m) still to go. The reading ends inside the cluster's outer bound
/// (`--timeout` plus 30 s), with room for the verdict: the report, the bundle and the exit code
/// are as without NSX Manager, the cut is said as the reading's, and the Supervisor is not
/// blamed.
#[test]
fn a_slow_manager_beside_a_slow_probe_keeps_the_diagnosis() {
    let case = Case::new("infra-drop-2380");
    fn dropped(_: usize, ip: &str) -> Option<String> {
        Some(section_2380_dropped(ip))
    }
    case.env.supervisor.on_pod_created(|pod| {
        let log = scripted_jumpbox_log_with(pod, &CP, dropped);
        Some(etcdnet_fakeapi::PodScript {
            run_after: Duration::from_secs(8),
            ..etcdnet_fakeapi::PodScript::succeeds(log)
        })
    });
    let bundle = case.env.dir.path().join("slow.tar.gz");
    let mut cmd = case.nsx_command(
        "auditor",
        &[
            "-o",
            "json",
            "--timeout",
            "10s",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = Instant::now();
    let child = cmd.spawn().expect("kubectl runs");
    // Slow from the first request after the login on.
    while case.nsx.requests().is_empty() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !case.nsx.requests().is_empty(),
        "the plugin never logged in"
    );
    case.nsx.set_delay(Duration::from_secs(60));
    let run = Run::from(child.wait_with_output().unwrap());
    let took = started.elapsed();
    run.expect_code(1);
    assert!(
        !run.stderr.contains("did not finish within --timeout")
            && !run.stderr.contains("answers too slowly"),
        "{}",
        run.stderr
    );
    let report = run.diagnose_report();
    assert_2380_verdict(&report);
    let notes = nsx_notes(&report);
    assert!(
        notes.iter().any(|n| n.contains(
            "what the cluster's --timeout plus its grace left after the probes), not --nsx-timeout's 1m"
        )),
        "{notes:#?}"
    );
    assert!(took < Duration::from_secs(10 + 30 + 10), "took {took:?}");
    // The bundle was written, and is read again.
    assert!(bundle.exists(), "no bundle");
    let offline = crate::bundle::analyse_offline(&case.env, &bundle, &["-o", "json"]);
    offline.expect_code(1);
}

/// A `--nsx-manager` value with userinfo (a password pasted by mistake) is refused with exit 2
/// and one line naming the flag and what is wrong, never the value, through the real kubectl.
#[test]
fn a_url_with_userinfo_is_refused_without_echo() {
    let env = Env::new(SET, Workload::black_hole());
    for value in [
        "https://admin:planted-pass@nsx.example",
        "http://admin:planted-pass@nsx.example",
    ] {
        let run = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--nsx-manager", value]);
        run.expect_code(2);
        assert!(!run.stderr.contains("planted-pass"), "{}", run.stderr);
        assert!(!run.stdout.contains("planted-pass"), "{}", run.stdout);
        assert!(run.stderr.contains("--nsx-manager"), "{}", run.stderr);
    }
}
