//! `etcdnet-fakeapi` for scripts of many clusters (tests/bench/many-clusters.sh): a generated
//! Supervisor (`--many-clusters NxM`), every request written to a file as it arrives
//! (`--requests-out`); one lab per cluster (`--workload lab --cluster all`) is
//! `lab::many_clusters_binary`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use etcdnet_fakeapi::supervisor_set;

const KUBECTL: &str = "/usr/bin/kubectl";

/// The binary, stopped with SIGTERM (its teardown) however the test ends.
pub(crate) struct Fake {
    child: Child,
    lines: Vec<String>,
}

impl Fake {
    /// Starts it and reads stdout up to the `REQUESTS_OUT=` line, printed last.
    pub(crate) fn start(args: &[&str], extra: &[&Path]) -> Fake {
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

    pub(crate) fn value(&self, key: &str) -> &str {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= in {:?}", self.lines))
    }

    /// SIGTERM, then its exit status.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
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

pub(crate) fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
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
