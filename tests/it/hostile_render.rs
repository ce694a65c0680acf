//! Nothing a namespace editor writes into the objects the plugin reads reaches the
//! terminal raw. The fixture set `hostile-escapes` carries OSC (window title, clipboard,
//! hyperlink), CSI (clear screen, colours), C1 controls, a newline and a carriage return in the
//! free-text fields `status` and `diagnose` show; every command runs through the real kubectl,
//! as a user runs it.

use crate::common;

use common::*;
use etcdnet::report::StatusReport;
use serde_json::Value;

const SET: &str = "hostile-escapes";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";

/// The strings as the fixture set writes them (YAML's `\e`, `\a`, `\x9b` ... decoded).
const PHASE: &str = "Provisioned\u{1b}]0;pwned-title\u{7}\u{1b}[2J\u{1b}[H";
const REASON: &str = "EtcdClusterUnhealthy\u{9b}1;31m";
const MESSAGE: &str = "Etcd member \u{1b}[1;32mhealthy\u{1b}[0m\nsecond line\rover \u{1b}]8;;http://evil.example/\u{1b}\\click\u{1b}]8;;\u{1b}\\";
const MACHINE_PHASE: &str = "Running\u{1b}[5m\u{9b}7m";
const NODE_REF: &str = "tkc-prod-7xk2p-4rz8m\u{1b}[2J";
const FAILURE_DOMAIN: &str = "zone-a\u{9d}0;zone-title\u{9c}";
const VM_CLASS: &str = "best-effort-medium\u{1b}]52;c;ZXZpbA==\u{7}";

/// Every character a terminal acts on: C0 but the newline, DEL, C1; and U+FFFD, which is what
/// a raw byte that is not UTF-8 (a lone 0x9b) became when the output was read.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| (c != '\n' && c.is_control()) || c == '\u{fffd}')
        .collect()
}

fn assert_no_raw_controls(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        let raw = raw_controls(text);
        assert!(
            raw.is_empty(),
            "{what}: {stream} carries {raw:?}:\n{}",
            text.escape_debug()
        );
    }
}

fn env() -> Env {
    Env::new(SET, Workload::ok())
}

#[test]
fn status_tables_show_escapes_as_text() {
    let env = env();
    for format in ["table", "wide"] {
        let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", format]);
        // The etcd condition and the Machine's phase are findings.
        run.expect_code(1);
        assert_no_raw_controls(&format!("status -o {format}"), &run);
        let out = &run.stdout;
        for shown in [
            // The Cluster's PHASE cell.
            "Provisioned\\x1b]0;pwned-title\\x07\\x1b[2J\\x1b[H",
            // The KCP condition line (its newline read as a space, as for CAPI's bullets).
            "EtcdClusterHealthy False (EtcdClusterUnhealthy\\u{9b}1;31m: Etcd member \\x1b[1;32mhealthy\\x1b[0m second line\\rover \\x1b]8;;http://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\)",
            // The finding quotes the message with its newline, shown as `\n`.
            "healthy\\x1b[0m\\nsecond line",
            // The node table's PHASE and NODEREF cells.
            "Running\\x1b[5m\\u{9b}7m",
            "tkc-prod-7xk2p-4rz8m\\x1b[2J",
        ] {
            assert!(out.contains(shown), "-o {format}: {shown} missing:\n{out}");
        }
        if format == "wide" {
            for shown in [
                "best-effort-medium\\x1b]52;c;ZXZpbA==\\x07",
                "zone-a\\u{9d}0;zone-title\\u{9c}",
            ] {
                assert!(out.contains(shown), "-o wide: {shown} missing:\n{out}");
            }
        }
        // The layout holds: one line per control-plane node in the node table.
        let rows = out
            .lines()
            .filter(|l| l.starts_with("tkc-prod-7xk2p-"))
            .count();
        assert_eq!(rows, 3, "-o {format}:\n{out}");
    }
}

#[test]
fn status_json_and_yaml_keep_the_exact_strings() {
    let env = env();
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    // JSON escapes every control character (C1 and DEL too), so none is raw on a terminal.
    assert_no_raw_controls("status -o json", &run);
    assert!(run.stdout.contains("\\u001b]0;pwned-title\\u0007"));
    assert!(run.stdout.contains("\\u009b1;31m"), "{}", run.stdout);
    let report: StatusReport = run.status_report();
    assert_eq!(report.header.cluster.phase.as_deref(), Some(PHASE));
    let kcp = report.header.control_plane.kcp.as_ref().expect("a KCP");
    let etcd = kcp
        .conditions
        .iter()
        .find(|c| c.kind == "EtcdClusterHealthy")
        .expect("the etcd condition");
    assert_eq!(etcd.reason.as_deref(), Some(REASON));
    assert_eq!(etcd.message.as_deref(), Some(MESSAGE));
    let node = report
        .nodes
        .iter()
        .find(|n| n.name == "tkc-prod-7xk2p-4rz8m")
        .expect("the node");
    let machine = node.machine.as_ref().expect("its Machine");
    assert_eq!(machine.phase.as_deref(), Some(MACHINE_PHASE));
    assert_eq!(machine.node_name.as_deref(), Some(NODE_REF));
    assert_eq!(machine.failure_domain.as_deref(), Some(FAILURE_DOMAIN));
    let vm = node.vm.as_ref().expect("its VM");
    assert_eq!(vm.class.as_deref(), Some(VM_CLASS));

    let yaml = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "yaml"]);
    yaml.expect_code(1);
    assert_no_raw_controls("status -o yaml", &yaml);
    let mut from_yaml: Value = serde_yaml_ng::from_str(&yaml.stdout).unwrap();
    let mut json = run.json();
    from_yaml["workloadApi"]["elapsedMs"] = Value::Null;
    json["workloadApi"]["elapsedMs"] = Value::Null;
    // Two runs: their timings and the times of their checks differ.
    from_yaml["result"]["durationMs"] = Value::Null;
    json["result"]["durationMs"] = Value::Null;
    from_yaml["workloadApi"]["checkedAt"] = Value::Null;
    json["workloadApi"]["checkedAt"] = Value::Null;
    assert_eq!(from_yaml, json, "yaml and json carry the same strings");
}

#[test]
fn diagnose_dry_run_keeps_the_node_name_escaped() {
    let env = env();
    let run = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    run.expect_code(0);
    assert_no_raw_controls("diagnose --dry-run", &run);
    // YAML writes the control characters of the pod's nodeName as its escapes.
    assert!(
        run.stdout
            .contains("nodeName: \"tkc-prod-7xk2p-4rz8m\\e[2J\""),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("dry run: 3 pod(s) shown"),
        "{}",
        run.stderr
    );

    let run = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run", "-o", "json"]);
    run.expect_code(0);
    assert_no_raw_controls("diagnose --dry-run -o json", &run);
    let pods: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("JSON documents");
    assert!(
        pods.iter().any(|p| p["spec"]["nodeName"] == NODE_REF),
        "{}",
        run.stdout
    );
}

#[test]
fn the_error_line_is_one_visible_line() {
    // An API server's refusal is quoted in the error line; here the user it names carries an
    // OSC and a CSI (a proxy or a server in front of the Supervisor can say anything).
    let user = "sso:alice\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake: line";
    let api = FakeApi::start_with(
        FakeConfig::from_dir(fixture("forbidden"))
            .expect("fixture set loads")
            .user(user),
    )
    .expect("fake supervisor starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, CONTEXT, None).unwrap();
    let run = kubectl_with(&kubeconfig, dir.path(), &["status", CLUSTER, "-n", NS]);
    run.expect_code(3);
    assert_no_raw_controls("error line", &run);
    let line = run.one_line_error();
    assert!(
        line.contains("sso:alice\\x1b]0;pwned\\x07\\x1b[2J\\nfake: line"),
        "{line}"
    );
}

/// `kubectl etcdnet ARGS` with the plugin on PATH, this kubeconfig and a private HOME (as
/// `Env::kubectl`, for a fake started with a configuration of its own).
fn kubectl_with(kubeconfig: &std::path::Path, home: &std::path::Path, args: &[&str]) -> Run {
    let bin_dir = std::path::Path::new(PLUGIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(KUBECTL)
        .arg("etcdnet")
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .output()
        .expect("kubectl runs");
    Run::from(out)
}

/// The KCP's Available message in the set: characters that hide or reorder text without being
/// controls (zero-width, BOM, soft hyphen, bidi marks, tags, other Cf).
const INVISIBLE: &str = "3\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{ad} of 3 \u{200e}\u{200f}\u{61c}ready\u{e0001}\u{e0041}\u{e007f}\u{e0000}\u{2062}\u{180e}\u{fff9}\u{1d173}";

/// What a terminal shows of nothing, or shows elsewhere: every non-ASCII character of
/// [`INVISIBLE`].
fn raw_invisible(text: &str) -> Vec<char> {
    let hidden: Vec<char> = INVISIBLE.chars().filter(|c| !c.is_ascii()).collect();
    text.chars().filter(|c| hidden.contains(c)).collect()
}

fn assert_no_raw_invisible(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        let raw = raw_invisible(text);
        assert!(raw.is_empty(), "{what}: {stream} carries {raw:?}:\n{text}");
    }
}

/// Tables and stderr show invisible and format characters as escapes, JSON keeps them. Were
/// only the bidi overrides and isolates escaped, the KCP line would carry the zero-width
/// characters, the marks and the tags raw (and the error line the user name's).
#[test]
fn invisible_characters_are_shown_as_escapes() {
    let env = env();
    for format in ["table", "wide"] {
        let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", format]);
        run.expect_code(1);
        assert_no_raw_invisible(&format!("status -o {format}"), &run);
        let shown = "Available True (Available: 3\\u{200b}\\u{200c}\\u{200d}\\u{2060}\\u{feff}\\u{ad} of 3 \\u{200e}\\u{200f}\\u{61c}ready\\u{e0001}\\u{e0041}\\u{e007f}\\u{e0000}\\u{2062}\\u{180e}\\u{fff9}\\u{1d173})";
        assert!(
            run.stdout.contains(shown),
            "-o {format}: {shown} missing:\n{}",
            run.stdout
        );
    }

    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    let report: StatusReport = run.status_report();
    let kcp = report.header.control_plane.kcp.as_ref().expect("a KCP");
    let available = kcp
        .conditions
        .iter()
        .find(|c| c.kind == "Available")
        .expect("the Available condition");
    assert_eq!(
        available.message.as_deref(),
        Some(INVISIBLE),
        "JSON keeps them"
    );

    // stderr: the error line quoting a user name that carries them.
    let user = format!("sso:al\u{200b}ice\u{202e}\u{200f}{INVISIBLE}");
    let api = FakeApi::start_with(
        FakeConfig::from_dir(fixture("forbidden"))
            .expect("fixture set loads")
            .user(user),
    )
    .expect("fake supervisor starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, CONTEXT, None).unwrap();
    let run = kubectl_with(&kubeconfig, dir.path(), &["status", CLUSTER, "-n", NS]);
    run.expect_code(3);
    assert_no_raw_invisible("error line", &run);
    let line = run.one_line_error();
    assert!(
        line.contains("sso:al\\u{200b}ice\\u{202e}\\u{200f}3\\u{200b}"),
        "{line}"
    );
}

/// A warning (`tracing`'s `warn!`, printed at the default verbosity) quotes an API
/// server's error text, which `kube::Error` displays with the server's message: the event is
/// one visible line, its escape sequences, bidi controls, other format characters and newline
/// shown as escapes. Here the Supervisor refuses the jumpbox pod's delete, naming a user that
/// carries them (a server, or a proxy in front of it, can write anything there). Fails before
/// the log writer made events visible: tracing-subscriber escapes ESC and BEL only, so the
/// bidi override, the isolate, the zero-width space and the newline (a forged second
/// line) reached the terminal raw.
#[test]
fn a_warning_quoting_an_api_error_is_one_visible_line() {
    use common::article;
    use etcdnet_fakeapi::Forbid;
    let user = "sso:alice\u{1b}]0;pwned\u{7}\u{202e}\u{2066}evil\u{200b}\nWARN forged line";
    let workload = Workload::ok();
    let cfg = FakeConfig::from_dir(fixture(article::SET))
        .expect("fixture set loads")
        .var("WORKLOAD_URL", workload.url())
        .user(user)
        .forbid(Forbid {
            verb: Some("delete".into()),
            resource: Some("pods".into()),
            ..Default::default()
        });
    let env = Env::with_config(cfg, Some(workload));
    env.script_jumpbox_pods(&article::CP);
    let run = env.kubectl(&[
        "diagnose",
        article::CLUSTER,
        "-n",
        article::NS,
        "--via",
        "jumpbox",
    ]);
    assert_no_raw_controls("diagnose with a refused delete", &run);
    for hidden in ['\u{202e}', '\u{2066}', '\u{200b}'] {
        assert!(
            !run.stderr.contains(hidden),
            "stderr carries {hidden:?} raw:\n{}",
            run.stderr.escape_debug()
        );
    }
    let warning: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("delete failed"))
        .collect();
    assert_eq!(warning.len(), 1, "one warning line:\n{}", run.stderr);
    assert!(
        warning[0].contains(
            "sso:alice\\x1b]0;pwned\\x07\\u{202e}\\u{2066}evil\\u{200b}\\nWARN forged line"
        ),
        "{}",
        warning[0]
    );
    assert!(
        !run.stderr.lines().any(|l| l.starts_with("WARN forged")),
        "a forged line:\n{}",
        run.stderr
    );

    // With every log on (-vvv: kube's own lines too), nothing raw either.
    let run = env.kubectl(&[
        "diagnose",
        article::CLUSTER,
        "-n",
        article::NS,
        "--via",
        "jumpbox",
        "-vvv",
    ]);
    assert!(run.stderr.contains("delete failed"), "{}", run.stderr);
    assert_no_raw_controls("diagnose -vvv with a refused delete", &run);
    for hidden in ['\u{202e}', '\u{2066}', '\u{200b}'] {
        assert!(!run.stderr.contains(hidden), "-vvv: {hidden:?} raw");
    }
}

/// `-o json` and `-o yaml` carry no format character raw (a bidi override in a
/// condition's message would reorder what a terminal or a reviewer's pager shows of the
/// document): each is an escape (JSON `\u200b`, YAML `\u200B` in a double-quoted string), and
/// the document reads back to the exact string. Without the escaping both would carry them
/// raw.
#[test]
fn json_and_yaml_escape_format_characters() {
    let env = env();
    for format in ["json", "yaml"] {
        let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", format]);
        run.expect_code(1);
        assert_no_raw_invisible(&format!("status -o {format}"), &run);
        assert_no_raw_controls(&format!("status -o {format}"), &run);
        let report: StatusReport = if format == "json" {
            run.status_report()
        } else {
            serde_yaml_ng::from_str(&run.stdout).expect("YAML report")
        };
        let kcp = report.header.control_plane.kcp.as_ref().expect("a KCP");
        let available = kcp
            .conditions
            .iter()
            .find(|c| c.kind == "Available")
            .expect("the Available condition");
        assert_eq!(available.message.as_deref(), Some(INVISIBLE), "-o {format}");
        let escape = if format == "json" {
            "3\\u200b\\u200c"
        } else {
            "3\\u200B\\u200C"
        };
        assert!(run.stdout.contains(escape), "-o {format}:\n{}", run.stdout);
    }
}
