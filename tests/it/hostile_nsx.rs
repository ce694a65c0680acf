//! What a namespace editor (anyone who may create objects in the vSphere Namespace)
//! can do to the NSX reading, through the real kubectl, no lab. Each case is the article's
//! cluster on `nsx-vpc-no-drop` (one Allow on 6443, every port realized) with the editor's
//! objects added by a builder (`common::nsx`), and for each:
//! - `status -o json` under 1 MB and a few seconds, its table under 200 lines;
//! - `diagnose --dry-run` in a few seconds, its warnings under 200 lines;
//! - `diagnose --via jumpbox --bundle -o json` whose VMs' peers time out on 2380 (a scripted
//!   jumpbox pod, as `network_policy` does it) under 1 MB and a few seconds; the plugin's own
//!   bundle `analyse`d to the same verdict, its table under 200 lines.
//!
//! The attacks (what a namespace editor can do to it):
//! - drown: one priority-0 Allow plus 63 policies of 64 shadowed Drop rules (measured before:
//!   52 MB of json, 4,032 findings, an 8,083-line table, a bundle `analyse` refused);
//! - 16 VMs labelled as the cluster's control plane but not in the uid chain: the real VMs are
//!   evaluated and the real blocking policy named;
//! - 64 `aa-*` harmless (shadowed) Drop policies that sort before the deciding Allow: none of
//!   them is blamed ("cannot decide" is acceptable, a named `aa-*` Drop is not);
//! - a NetworkPolicy with a forged `nsx-op/error` annotation: never an Error
//!   `NetworkNotRealized`, `status`'s exit code unchanged, a Warning saying it is the object's
//!   own claim;
//! - 250 NetworkPolicies beside a blocking SecurityPolicy: the bundle keeps what the verdict
//!   used, so `analyse` names the same policy as the live run.
//!
//! Where a Drop of 2380 is named, the scripted members' logs still show a leader (the healthy
//! capture's), so the verdict also carries the hedge that a newly published Drop may not cut
//! established peer streams.

use crate::common;

use std::time::Duration;

use crate::bundle::analyse_offline;
use common::article::{rogue_vm, CLUSTER, CP, NS};
use common::nsx::{self, cp_policy, cp_vms, network_policy, tcp, tcp_range};
use common::*;
use etcdnet::report::v1alpha2::{FindingCode, Severity};
use etcdnet::report::{DiagnoseReport, StatusReport};
use serde_json::{json, Value};

/// The set every case adds to: the article's cluster, nsx-operator on VPC, nothing on etcd's ports.
const BASE: &str = "nsx-vpc-no-drop";
/// The issue's bounds: JSON under 1 MB, tables under 200 lines, each run a few seconds.
const MAX_JSON_BYTES: usize = 1 << 20;
const MAX_TABLE_LINES: usize = 200;
/// "A few seconds" of CPU, the plugin's and kubectl's (tests/it/common/cpu.rs), in a debug build:
/// the attacks measured took minutes. CPU, not wall time: the bound is on the work (bounded, not
/// one piece per rule and path), which a loaded machine does not change, where its wall time
/// grew past 8 s at load 15-78 in CI.
const FEW_SECONDS: Duration = Duration::from_secs(8);
/// A diagnosis over the jumpbox adds its pod's life on the fake (created, running, its log
/// read, deleted: about 2 s of a 3 s run here, unloaded), mostly waiting, to the same work.
const FEW_SECONDS_WITH_A_POD: Duration = Duration::from_secs(15);
/// What the evidence names a policy by, and how the first next step starts for one.
const DROP: &str = "SecurityPolicy ns-prod/drop-etcd-peers";
const FIX_DROP: &str = "Fix SecurityPolicy ns-prod/drop-etcd-peers";

/// A run and the CPU time it took (its child processes': kubectl and the plugin).
struct Timed {
    run: Run,
    took: Duration,
}

fn timed(f: impl FnOnce() -> Run) -> Timed {
    let started = cpu::children_cpu_time();
    let run = f();
    Timed {
        run,
        took: cpu::children_cpu_time() - started,
    }
}

/// What every case's runs gave, each already checked against the bounds.
struct Runs {
    status: StatusReport,
    status_json: Value,
    status_code: i32,
    live: DiagnoseReport,
    offline: DiagnoseReport,
}

fn assert_quick(what: &str, t: &Timed) {
    assert_within(what, t, FEW_SECONDS);
}

fn assert_within(what: &str, t: &Timed, bound: Duration) {
    // For the log: how far under the bound each run is (nextest shows it for a failure).
    eprintln!(
        "{what}: {:?} of CPU, {} bytes out",
        t.took,
        t.run.stdout.len()
    );
    assert!(
        t.took <= bound,
        "{what} took {:?} of CPU (bound {bound:?})\nstderr:\n{}",
        t.took,
        t.run.stderr
    );
    assert!(
        !t.run.stderr.contains("panicked"),
        "{what}:\n{}",
        t.run.stderr
    );
}

fn assert_small_json(what: &str, t: &Timed) {
    assert!(
        t.run.stdout.len() < MAX_JSON_BYTES,
        "{what}: {} bytes of JSON (bound {MAX_JSON_BYTES})",
        t.run.stdout.len()
    );
}

fn assert_short(what: &str, text: &str) {
    let lines = text.lines().count();
    assert!(
        lines < MAX_TABLE_LINES,
        "{what}: {lines} lines (bound {MAX_TABLE_LINES}); the first 40:\n{}",
        text.lines().take(40).collect::<Vec<_>>().join("\n")
    );
}

/// Every run of the issue's bounds against the set plus `objects`: `status` (JSON and table,
/// the workload API answering), `diagnose --dry-run`, and a diagnosis over the jumpbox whose
/// peers time out on 2380 with its bundle, `analyse`d.
fn bounded_runs(what: &str, objects: Vec<Value>) -> Runs {
    bounded_runs_with(what, objects, |_| ())
}

/// [`bounded_runs`], `prepare` changing each world's served objects first.
fn bounded_runs_with(what: &str, objects: Vec<Value>, prepare: impl Fn(&Env)) -> Runs {
    // `status` against a workload API that answers, so its exit code is the network's doing.
    let env = Env::with_objects(BASE, objects.clone(), &[], Workload::ok());
    prepare(&env);
    let status = timed(|| env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]));
    assert_quick(&format!("{what}: status -o json"), &status);
    assert_small_json(&format!("{what}: status -o json"), &status);
    let status_json = status.run.json();
    let status_report = status.run.status_report();
    let table = timed(|| env.kubectl(&["status", CLUSTER, "-n", NS]));
    assert_quick(&format!("{what}: status"), &table);
    assert_short(&format!("{what}: status table"), &table.run.stdout);
    let dry = timed(|| env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]));
    assert_quick(&format!("{what}: diagnose --dry-run"), &dry);
    dry.run.expect_code(0);
    assert_short(
        &format!("{what}: diagnose --dry-run stderr"),
        &dry.run.stderr,
    );

    // The diagnosis: the workload API dark, the jumpbox pod's VMs' peers time out on 2380.
    let dark = Env::with_objects(BASE, objects, &[], Workload::black_hole());
    prepare(&dark);
    dark.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
    let bundle = dark.dir.path().join("tkc-prod.tar.gz");
    let live = timed(|| crate::bundle::diagnose(&dark, &bundle, &["-o", "json"]));
    assert_within(
        &format!("{what}: diagnose --bundle"),
        &live,
        FEW_SECONDS_WITH_A_POD,
    );
    assert_small_json(&format!("{what}: diagnose -o json"), &live);
    live.run.expect_code(1);
    let live_report = live.run.diagnose_report();

    // The plugin's own bundle is read back, and says what the live run said.
    let offline = timed(|| analyse_offline(&dark, &bundle, &["-o", "json"]));
    assert_quick(&format!("{what}: analyse"), &offline);
    assert_small_json(&format!("{what}: analyse -o json"), &offline);
    offline.run.expect_code(1);
    let offline_report = offline.run.diagnose_report();
    let offline_table = analyse_offline(&dark, &bundle, &[]);
    assert_short(&format!("{what}: analyse table"), &offline_table.stdout);

    Runs {
        status: status_report,
        status_json,
        status_code: status.run.code,
        live: live_report,
        offline: offline_report,
    }
}

/// The verdict, for failure messages.
fn shown(r: &DiagnoseReport) -> String {
    format!("{:#?}", r.verdict)
}

/// Whether the verdict blames `policy` (`ns/name`, or a prefix of one): an evidence line that
/// starts with it (a rule in effect covering failing paths) or a next step to fix it.
fn blames(r: &DiagnoseReport, policy: &str) -> bool {
    let named = format!("SecurityPolicy {policy}");
    r.verdict.evidence.iter().any(|l| l.starts_with(&named))
        || r.verdict
            .next_steps
            .iter()
            .any(|s| s.starts_with(&format!("Fix {named}")))
}

/// The drop every blocking case adds: Drop In TCP 2379-2380 between the control-plane VMs.
fn drop_etcd_peers() -> Value {
    cp_policy(
        "drop-etcd-peers",
        10,
        "In",
        "Drop",
        &[tcp_range(2379, 2380)],
    )
}

/// The live verdict names drop-etcd-peers for the 6 failing paths, first, and so does the
/// bundle's.
fn assert_names_the_drop(r: &DiagnoseReport) {
    assert!(
        r.verdict
            .evidence
            .first()
            .is_some_and(|l| l.starts_with(DROP) && l.contains("covers 6 of the 6 failing paths")),
        "{}",
        shown(r)
    );
    assert!(
        r.verdict
            .next_steps
            .first()
            .is_some_and(|s| s.starts_with(FIX_DROP)),
        "{}",
        shown(r)
    );
    // The scripted members' logs still show a leader (the healthy capture's): a Drop published
    // while they were connected may not cut their established streams, and the verdict says so.
    assert!(
        r.verdict
            .evidence
            .iter()
            .any(|l| l.contains("established") && l.contains(DROP)),
        "no hedge for the leader still known:\n{}",
        shown(r)
    );
}

/// Drowning: one priority-0 Allow of etcd's ports, then 63 policies of 64 Drop rules each
/// that it shadows (4,032 rules that would block every path if the Allow went). Everything
/// stays bounded; nothing is blamed (the Allow decides every path: the 2380 timeouts come from
/// outside the Supervisor's view).
// Long: 4,033 rules served by the fake Supervisor, read through the real kubectl and evaluated
// for every path in five runs (status twice, a dry run, a diagnosis into a bundle, its analyse).
#[test]
fn drowning_in_shadowed_rules_stays_bounded() {
    let mut objects = vec![cp_policy(
        "allow-etcd-peers",
        0,
        "In",
        "Allow",
        &[tcp_range(2379, 2380)],
    )];
    for p in 0..63u32 {
        let rules: Vec<Value> = (0..64)
            .map(|r| {
                nsx::rule(
                    &format!("drop-{p:02}-{r:02}"),
                    "In",
                    "Drop",
                    &[cp_vms()],
                    &[tcp_range(2379, 2380)],
                )
            })
            .collect();
        objects.push(nsx::policy(
            nsx::VPC,
            NS,
            &format!("shadowed-{p:02}"),
            p + 1,
            &[cp_vms()],
            &rules,
            nsx::Ready::True,
        ));
    }
    let runs = bounded_runs("drown", objects);
    // Findings bounded ("and N more"), not one per rule and path (4,032 measured).
    assert!(
        runs.status.findings.len() < 50,
        "{} findings",
        runs.status.findings.len()
    );
    assert!(
        !runs
            .status
            .findings
            .iter()
            .any(|f| f.code == FindingCode::SecurityPolicyBlocksEtcd),
        "{:#?}",
        runs.status.findings
    );
    assert!(
        !blames(&runs.live, "ns-prod/shadowed-"),
        "{}",
        shown(&runs.live)
    );
    assert_eq!(
        runs.offline.verdict, runs.live.verdict,
        "the bundle's verdict"
    );
}

/// 16 VirtualMachines an editor made, labelled as the cluster's control plane (capv labels,
/// the cluster-name label), named to sort before the real ones, each with an address, but in
/// no uid chain (no VSphereMachine of the KCP's Machines owns them): the evaluation takes the
/// three real VMs, and the real blocking policy is named.
#[test]
fn rogue_labelled_vms_do_not_replace_the_real_ones() {
    let mut objects = vec![drop_etcd_peers()];
    objects.extend((0..16).map(|i| {
        rogue_vm(
            &format!("tkc-prod-0000-rogue-{i:02}"),
            &format!("198.18.0.{}", 100 + i),
        )
    }));
    let runs = bounded_runs("rogue VMs", objects);
    let mut vms: Vec<String> = runs.status_json["networkPolicy"]["evaluation"]["vms"]
        .as_array()
        .unwrap_or_else(|| panic!("no evaluation.vms: {:#}", runs.status_json["networkPolicy"]))
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    vms.sort();
    assert_eq!(vms, CP, "the evaluated VMs are the uid chain's");
    let blocks = runs
        .status
        .findings
        .iter()
        .find(|f| f.code == FindingCode::SecurityPolicyBlocksEtcd)
        .unwrap_or_else(|| panic!("no SecurityPolicyBlocksEtcd: {:#?}", runs.status.findings));
    assert!(
        blocks.message.contains("ns-prod/drop-etcd-peers"),
        "{}",
        blocks.message
    );
    assert!(!blocks.message.contains("rogue"), "{}", blocks.message);
    assert_names_the_drop(&runs.live);
    assert_names_the_drop(&runs.offline);
}

/// 64 harmless policies `aa-harmless-NN` (priority 100, a Drop of 2380 each, shadowed by the
/// priority-0 Allow `zz-allow-etcd-peers` that decides every path) sort before the Allow by
/// name: a cut by name would drop the Allow and blame an `aa-*` Drop. None is blamed: a
/// "cannot decide" is acceptable, a named `aa-*` Drop is not.
#[test]
fn harmless_policies_ahead_by_name_are_never_blamed() {
    let mut objects = vec![cp_policy(
        "zz-allow-etcd-peers",
        0,
        "In",
        "Allow",
        &[tcp_range(2379, 2380)],
    )];
    objects.extend((0..64).map(|i| {
        cp_policy(
            &format!("aa-harmless-{i:02}"),
            100,
            "In",
            "Drop",
            &[tcp(2380)],
        )
    }));
    let runs = bounded_runs("aa-* policies", objects);
    // The deciding Allow is evaluated: the policies are ordered by priority before the bound.
    let evaluated: Vec<&str> = runs.status_json["networkPolicy"]["evaluation"]["policies"]
        .as_array()
        .unwrap_or_else(|| {
            panic!(
                "no evaluation.policies: {:#}",
                runs.status_json["networkPolicy"]
            )
        })
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        evaluated.contains(&"zz-allow-etcd-peers"),
        "the deciding Allow was cut: {evaluated:?}"
    );
    let blamed: Vec<&str> = runs
        .status
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::SecurityPolicyBlocksEtcd)
        .map(|f| f.message.as_str())
        .collect();
    assert!(
        !blamed.iter().any(|m| m.contains("ns-prod/aa-harmless")),
        "{blamed:#?}"
    );
    for r in [&runs.live, &runs.offline] {
        assert!(!blames(r, "ns-prod/aa-harmless"), "{}", shown(r));
    }
    assert_eq!(
        runs.offline.verdict, runs.live.verdict,
        "the bundle's verdict"
    );
}

/// What an editor writes on a NetworkPolicy of the namespace to speak as nsx-operator does
/// (pkg/controllers/networkpolicy/networkpolicy_controller.go sets `nsx-op/error` to words such
/// as `NETWORK_POLICY_UPDATE_FAILED`): the editor's text, meant to be read as NSX's.
const FORGED: &str = "NETWORK_POLICY_UPDATE_FAILED: NSX lost the control plane's segment; delete the cluster's Machines to recover";

/// A NetworkPolicy with a forged `nsx-op/error`: never an Error `NetworkNotRealized`, `status`
/// exits as it does without it, and a Warning says it is the object's own claim.
#[test]
fn a_forged_nsx_error_annotation_is_the_objects_claim_not_nsx() {
    // `status` on the same Supervisor without the NetworkPolicy: the exit code to keep.
    let clean = Env::with_objects(BASE, vec![], &[], Workload::ok());
    let baseline = clean.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    baseline.status_report();
    let forged = network_policy(
        "allow-from-monitoring",
        json!({
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}]
        }),
        json!({"nsx-op/error": FORGED}),
    );
    let runs = bounded_runs("forged nsx-op/error", vec![forged]);
    assert_eq!(
        runs.status_code, baseline.code,
        "status exits as without the annotation: {:#?}",
        runs.status.findings
    );
    assert!(
        !runs
            .status
            .findings
            .iter()
            .any(|f| f.code == FindingCode::NetworkNotRealized && f.severity == Severity::Error),
        "{:#?}",
        runs.status.findings
    );
    let claim = runs
        .status
        .findings
        .iter()
        .find(|f| f.message.contains("the object's own claim"))
        .unwrap_or_else(|| panic!("no finding says it: {:#?}", runs.status.findings));
    assert_eq!(claim.severity, Severity::Warning, "{claim:#?}");
    assert!(
        claim.message.contains("allow-from-monitoring"),
        "{}",
        claim.message
    );
    // The verdict is the network's (2380 timing out between the VMs), and the editor's text is
    // nowhere in it: never NSX's voice.
    assert_eq!(
        runs.live.verdict.code,
        etcdnet::report::v1alpha2::VerdictCode::EtcdPeerNetworkPartial,
        "{}",
        shown(&runs.live)
    );
    let said = [&runs.live.verdict.evidence, &runs.live.verdict.next_steps];
    assert!(
        !said.iter().any(|lines| lines
            .iter()
            .any(|l| l.contains("NSX lost") && !l.contains("the object's own claim"))),
        "{}",
        shown(&runs.live)
    );
}

/// A forged `nsx-op/error` that carries a terminal sequence, a bidi override, a newline, its
/// own quotes and a backslash: the `status` table's CLAIMED line shows the claim quoted with its
/// quotes escaped and every hidden character as `render::visible` writes it (`\x1b`, `\u{202e}`),
/// the one choke point for outside text, not as Rust's Debug format would (`\u{1b}`).
#[test]
fn a_hostile_nsx_error_claim_is_shown_through_the_one_sanitizer() {
    const CLAIM: &str = "ok\" (NSX's status) \\ \u{1b}[2J\u{202e}txet\nNSX: fine";
    let forged = network_policy(
        "allow-from-monitoring",
        json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
        json!({"nsx-op/error": CLAIM}),
    );
    let env = Env::with_objects(BASE, vec![forged], &[], Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS]);
    let text = &run.stdout;
    assert!(
        !text.chars().any(|c| c == '\u{1b}' || c == '\u{202e}'),
        "{}",
        text.escape_debug()
    );
    let line = text
        .lines()
        .find(|l| l.contains("CLAIMED NetworkPolicy allow-from-monitoring"))
        .unwrap_or_else(|| panic!("no CLAIMED line:\n{text}"));
    assert!(
        line.ends_with(
            r#": nsx-op/error "ok\" (NSX's status) \\ \x1b[2J\u{202e}txet NSX: fine" (the object's own claim, not NSX's status)"#
        ),
        "{line}"
    );
}

/// 250 NetworkPolicies beside the blocking SecurityPolicy, whose Drop takes its sources by the
/// Namespace's own label (`namespaceSelector` `environment: production` with the control-plane
/// `vmSelector`): a bundle that kept its first 256 objects, the network's last, kept the policy
/// but lost the Namespace after the NetworkPolicies, and `analyse` said otherwise than the live
/// run, silently. The bundle keeps what the verdict used: `analyse` names the same policy.
#[test]
fn a_bundle_full_of_network_policies_keeps_the_deciding_policy() {
    let from_production = json!({
        "namespaceSelector": {"matchLabels": {"environment": "production"}},
        "vmSelector": cp_vms()["vmSelector"].clone()
    });
    let mut objects = vec![nsx::policy(
        nsx::VPC,
        NS,
        "drop-etcd-peers",
        10,
        &[cp_vms()],
        &[nsx::rule(
            "drop-etcd-peers-rule",
            "In",
            "Drop",
            &[from_production],
            &[tcp_range(2379, 2380)],
        )],
        nsx::Ready::True,
    )];
    objects.extend((0..250).map(|i| {
        network_policy(
            &format!("np-{i:03}"),
            json!({
                "podSelector": {"matchLabels": {"app": format!("app-{i:03}")}},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"protocol": "TCP", "port": 8080}]}]
            }),
            json!({}),
        )
    }));
    // The vSphere Namespace labelled as its admin labels it (the set's has the name label only).
    let label = |env: &Env| {
        env.supervisor
            .modify("v1", "Namespace", "", NS, |ns| {
                ns["metadata"]["labels"]["environment"] = json!("production");
            })
            .unwrap();
    };
    let runs = bounded_runs_with("250 NetworkPolicies", objects, label);
    assert_names_the_drop(&runs.live);
    assert_names_the_drop(&runs.offline);
    assert_eq!(
        runs.offline.verdict, runs.live.verdict,
        "the bundle's verdict"
    );
}
