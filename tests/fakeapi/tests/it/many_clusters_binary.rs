//! `etcdnet-fakeapi` for scripts of many clusters (tests/bench/many-clusters.sh): a generated
//! Supervisor (`--many-clusters NxM`), every request written to a file as it arrives
//! (`--requests-out`), and one lab per cluster (`--workload lab --cluster all`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdnet_fakeapi::supervisor_set;

const KUBECTL: &str = "/usr/bin/kubectl";

/// The binary, stopped with SIGTERM (its teardown) however the test ends.
struct Fake {
    child: Child,
    lines: Vec<String>,
}

impl Fake {
    /// Starts it and reads stdout up to the `REQUESTS_OUT=` line, printed last.
    fn start(args: &[&str], extra: &[&Path]) -> Fake {
        let mut child = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakeapi"))
            .args(args)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = Vec::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let last = line.starts_with("REQUESTS_OUT=");
            lines.push(line);
            if last {
                break;
            }
        }
        assert!(
            lines.last().is_some_and(|l| l.starts_with("REQUESTS_OUT=")),
            "{lines:?}"
        );
        Fake { child, lines }
    }

    fn value(&self, key: &str) -> &str {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= in {:?}", self.lines))
    }

    /// SIGTERM, then its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        // SAFETY: as above; harmless once reaped (ESRCH or a zombie's pid we still own).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new(KUBECTL)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        // No discovery cache shared with anything else.
        .env("HOME", kubeconfig.parent().unwrap())
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_generated_supervisor_whose_requests_a_script_can_count() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let requests = dir.path().join("requests");
    let fake = Fake::start(
        &["--many-clusters", "2x3", "--workload", "ok"],
        &[
            Path::new("--kubeconfig-out"),
            &kubeconfig,
            Path::new("--requests-out"),
            &requests,
        ],
    );
    assert_eq!(fake.value("REQUESTS_OUT"), requests.to_str().unwrap());
    let names = kubectl(
        &kubeconfig,
        &[
            "get",
            "clusters.cluster.x-k8s.io",
            "-A",
            "-o",
            "custom-columns=NS:.metadata.namespace,NAME:.metadata.name",
            "--no-headers",
        ],
    );
    let got: Vec<String> = names
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join("/"))
        .collect();
    assert_eq!(
        got,
        [
            "ns-team-1/tkc-1-1",
            "ns-team-1/tkc-1-2",
            "ns-team-1/tkc-1-3",
            "ns-team-2/tkc-2-1",
            "ns-team-2/tkc-2-2",
            "ns-team-2/tkc-2-3"
        ]
    );
    // Written as they arrive: the list is there before the fake stops.
    let before = lines(&requests);
    assert!(
        before
            .iter()
            .any(|l| l.starts_with("GET /apis/cluster.x-k8s.io/v1beta1/clusters")),
        "{before:#?}"
    );
    kubectl(
        &kubeconfig,
        &["get", "secret", "-n", "ns-team-2", "tkc-2-3-ssh"],
    );
    let after = lines(&requests);
    assert!(after.len() > before.len());
    assert_eq!(after[..before.len()], before[..]);
    assert!(after
        .iter()
        .any(|l| l == "GET /api/v1/namespaces/ns-team-2/secrets/tkc-2-3-ssh"));

    let generated: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("etcdnet-fakeapi-{}-many", fake.child.id()))
        })
        .collect();
    assert_eq!(generated.len(), 1, "the generated set is in the temp dir");
    let path = generated[0].path();
    assert!(fake.stop().success());
    assert!(!path.exists(), "removed on exit");
}

#[test]
fn usage_errors_of_the_new_flags() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakeapi"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["--many-clusters", "0x3"]).contains("NxM"));
    assert!(run(&["--many-clusters", "3"]).contains("NxM"));
    let set = supervisor_set("two-clusters");
    assert!(run(&[
        "--many-clusters",
        "1x1",
        "--fixtures",
        set.to_str().unwrap()
    ])
    .contains("do not mix"));
}

/// `--workload lab --cluster all` on three-clusters: a lab and a workload API per cluster,
/// each cluster's kubeconfig secret at its own, every `<cluster>-ssh` with its own lab's key.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_lab_per_cluster() {
    etcdnet_lab::require("one_lab_per_cluster");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let requests = dir.path().join("requests");
    let set = supervisor_set("three-clusters");
    let workload = etcdnet_fakeapi::workload_set("lab-any");
    let t0 = Instant::now();
    let fake = Fake::start(
        &[
            "--workload",
            "lab",
            "--cluster",
            "all",
            "--namespace",
            "ns-fleet",
        ],
        &[
            Path::new("--fixtures"),
            &set,
            Path::new("--workload-fixtures"),
            &workload,
            Path::new("--kubeconfig-out"),
            &kubeconfig,
            Path::new("--requests-out"),
            &requests,
        ],
    );
    eprintln!("three labs up in {:?}", t0.elapsed());
    let mut ids = Vec::new();
    for spec in etcdnet_fakeapi::generate::three_clusters() {
        let suffix = &spec.url_var["WORKLOAD_URL_".len()..];
        let nodes: Vec<String> = spec
            .nodes()
            .iter()
            .map(|(n, ip)| format!("{n}={ip}"))
            .collect();
        assert_eq!(fake.value(&format!("LAB_NODES_{suffix}")), nodes.join(","));
        ids.push(fake.value(&format!("LAB_ID_{suffix}")).to_string());
        // The workload API of this cluster answers, and its kubeconfig secret names it.
        let url = fake.value(&format!("WORKLOAD_URL_{suffix}")).to_string();
        let secret = kubectl(
            &kubeconfig,
            &[
                "get",
                "secret",
                &format!("{}-kubeconfig", spec.name),
                "-o",
                "jsonpath={.data.value}",
            ],
        );
        use base64::Engine;
        let text = base64::engine::general_purpose::STANDARD
            .decode(secret.trim())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&text).contains(&format!("server: {url}\n")),
            "{}",
            spec.name
        );
        let ssh = kubectl(
            &kubeconfig,
            &[
                "get",
                "secret",
                &format!("{}-ssh", spec.name),
                "-o",
                "jsonpath={.data.ssh-privatekey}",
            ],
        );
        let key = base64::engine::general_purpose::STANDARD
            .decode(ssh.trim())
            .unwrap();
        assert!(
            String::from_utf8_lossy(&key).contains("BEGIN OPENSSH PRIVATE KEY")
                && !String::from_utf8_lossy(&key).contains("FAKEKEYMATERIAL"),
            "{}: the lab's real key",
            spec.name
        );
    }
    assert_eq!(
        fake.value("LAB_ID"),
        ids[1],
        "the first in name order: tkc-api"
    );
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3);
    assert!(fake.stop().success());
    // Every lab is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = || {
        std::fs::read_dir("/run/netns")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| {
                        ids.iter().any(|id| {
                            e.file_name()
                                .to_string_lossy()
                                .starts_with(&format!("{id}-"))
                        })
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    while left() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), 0, "namespaces of the labs left behind");
}
