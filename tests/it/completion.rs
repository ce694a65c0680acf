//! Shell completion: the scripts `kubectl etcdnet completion <shell>` prints, the
//! `kubectl_complete-etcdnet` shim kubectl runs for plugin arguments, and the two together
//! through the real kubectl, as users get it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-etcdnet");
const SHIM: &str = env!("CARGO_BIN_EXE_kubectl_complete-etcdnet");
const KUBECTL: &str = "/usr/bin/kubectl";
const SUBCOMMANDS: [&str; 5] = ["status", "diagnose", "cleanup", "version", "completion"];

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn stdout_of(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"))
}

/// Splits Cobra's `__complete` answer into candidate values (descriptions dropped) and the
/// directive on the last line.
fn cobra_answer(what: &str, text: &str) -> (Vec<String>, u32) {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let last = lines
        .pop()
        .unwrap_or_else(|| panic!("{what}: empty answer, expected at least `:<directive>`"));
    let directive = last
        .strip_prefix(':')
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| {
            panic!("{what}: the last line must be `:<directive>`, got {last:?} in:\n{text}")
        });
    let values = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect();
    (values, directive)
}

/// The shim's answer for the words after `kubectl etcdnet` (the last one being completed).
fn shim(words: &[&str]) -> (Vec<String>, u32) {
    let what = format!("kubectl_complete-etcdnet {words:?}");
    let text = stdout_of(&what, &run(SHIM, words));
    cobra_answer(&what, &text)
}

#[test]
fn completion_scripts_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let what = format!("kubectl-etcdnet completion {shell}");
        let script = stdout_of(&what, &run(PLUGIN, &["completion", shell]));
        assert!(
            script.trim().len() > 100,
            "{what} printed almost nothing:\n{script}"
        );
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{what} does not mention {sub:?}");
        }
        assert!(
            script.contains("kubectl-etcdnet"),
            "{what} does not register for kubectl-etcdnet"
        );
    }
}

#[test]
fn shim_completes_subcommands() {
    let (values, directive) = shim(&["st"]);
    assert_eq!(values, ["status"]);
    assert_eq!(directive, 4, "no file names for a subcommand");

    let (values, _) = shim(&["dia"]);
    assert_eq!(values, ["diagnose"]);

    // Global flags before the subcommand are skipped over, values included.
    let (values, _) = shim(&["-n", "ns-prod", "--context", "sv", "cl"]);
    assert_eq!(values, ["cleanup"]);

    // A new word at the top offers every subcommand, and no flags until a '-' is typed.
    let (values, directive) = shim(&[""]);
    for sub in SUBCOMMANDS {
        assert!(
            values.iter().any(|v| v == sub),
            "{sub:?} missing from {values:?}"
        );
    }
    assert!(values.iter().all(|v| !v.starts_with('-')), "{values:?}");
    assert_eq!(directive, 4);

    // kubectl passes the word being completed even when there is none before it.
    let (values, _) = shim(&[]);
    assert!(values.iter().any(|v| v == "status"), "{values:?}");
}

#[test]
fn shim_completes_flags_and_values() {
    let (values, directive) = shim(&["status", "--ou"]);
    assert_eq!(values, ["--output"]);
    assert_eq!(directive, 4);

    let (values, _) = shim(&["diagnose", "--api"]);
    assert_eq!(values, ["--api-timeout"]);

    let (values, _) = shim(&["cleanup", "--"]);
    for flag in [
        "--all-namespaces",
        "--older-than",
        "--dry-run",
        "--include-running",
        "--namespace",
        // Global options are out of each command's help (`kubectl etcdnet options` lists
        // them), not out of completion.
        "--context",
        "--kubeconfig",
        "--workload-insecure-skip-tls-verify",
    ] {
        assert!(
            values.iter().any(|v| v == flag),
            "{flag} missing from {values:?}"
        );
    }
    // The deprecated spellings work but are never offered.
    for old in ["--all", "--insecure-skip-tls-verify"] {
        assert!(!values.iter().any(|v| v == old), "{old} in {values:?}");
    }
    let (values, _) = shim(&["op"]);
    assert_eq!(values, ["options"]);
    let (values, _) = shim(&["diagnose", "--wat"]);
    assert_eq!(values, ["--watch"]);

    let (values, directive) = shim(&["status", "tkc-prod", "-o", ""]);
    assert_eq!(values, ["table", "wide", "json", "yaml"]);
    assert_eq!(directive, 4);

    let (values, _) = shim(&["status", "tkc-prod", "--output", "j"]);
    assert_eq!(values, ["json"]);

    let (values, _) = shim(&["completion", "z"]);
    assert_eq!(values, ["zsh"]);

    // A cluster name or a duration: nothing to offer, and no file names either.
    assert_eq!(shim(&["diagnose", ""]), (vec![], 4));
    assert_eq!(shim(&["status", "--request-timeout", ""]), (vec![], 4));
}

#[test]
fn shim_leaves_paths_to_the_shell() {
    // The kubeconfig is a file: no candidates, and the default directive so the shell completes
    // file names itself.
    assert_eq!(shim(&["--kubeconfig", ""]), (vec![], 0));
    assert_eq!(
        shim(&["status", "tkc-prod", "--kubeconfig", "/tm"]),
        (vec![], 0)
    );
    assert_eq!(shim(&["status", "--kubeconfig=~/.ku"]), (vec![], 0));
    // The word after the path is back to normal.
    let (values, directive) = shim(&["--kubeconfig", "/tmp/kc", "sta"]);
    assert_eq!((values, directive), (vec!["status".to_string()], 4));
}

/// A directory holding only our two executables, under their installed names.
fn plugin_path_dir(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for exe in [PLUGIN, SHIM] {
        let exe = Path::new(exe);
        let link = bin.join(exe.file_name().unwrap());
        #[cfg(unix)]
        std::os::unix::fs::symlink(exe, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(exe, &link).unwrap();
    }
    bin
}

/// `kubectl __complete ...` with our binaries first on PATH, a fresh HOME and an empty
/// kubeconfig, and nothing else from the environment.
fn kubectl_complete(dir: &Path, args: &[&str]) -> (Vec<String>, u32) {
    let bin = plugin_path_dir(dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, "").unwrap();
    let path =
        std::env::join_paths([bin, PathBuf::from("/usr/bin"), PathBuf::from("/bin")]).unwrap();
    let out = Command::new(KUBECTL)
        .arg("__complete")
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &home)
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {KUBECTL}: {e}"));
    let what = format!("kubectl __complete {args:?}");
    let text = stdout_of(&what, &out);
    cobra_answer(&what, &text)
}

/// The real kubectl is a test dependency (`.ci/run` installs it): without it these tests fail,
/// naming what is missing, rather than pass untested.
fn require_kubectl() {
    assert!(
        Path::new(KUBECTL).exists(),
        "{KUBECTL} is not installed: plugin completion through kubectl cannot be tested (apt-get install kubectl, as .ci/run does)"
    );
}

#[test]
fn kubectl_completes_the_plugin_through_the_shim() {
    require_kubectl();
    let dir = tempfile::tempdir().unwrap();

    // kubectl finds the plugin itself...
    let (values, _) = kubectl_complete(dir.path().join("a").as_path(), &["etcd"]);
    assert!(
        values.iter().any(|v| v == "etcdnet"),
        "kubectl does not offer the etcdnet plugin: {values:?}"
    );
    // ...and hands its arguments to kubectl_complete-etcdnet.
    let (values, directive) = kubectl_complete(dir.path().join("b").as_path(), &["etcdnet", "dia"]);
    assert!(
        values.iter().any(|v| v == "diagnose"),
        "kubectl __complete etcdnet dia did not offer diagnose: {values:?}"
    );
    assert_eq!(directive, 4, "kubectl did not pass on the shim's directive");

    let (values, _) = kubectl_complete(
        dir.path().join("c").as_path(),
        &["etcdnet", "status", "tkc-prod", "--ou"],
    );
    assert_eq!(values, ["--output"]);

    let (values, directive) = kubectl_complete(
        dir.path().join("d").as_path(),
        &["etcdnet", "status", "--kubeconfig", ""],
    );
    assert_eq!((values, directive), (vec![], 0));
}
