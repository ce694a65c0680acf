//! The real kubectl against the fake, through a kubeconfig the fake writes.

use std::process::Command;

use etcdnet_fakeapi::{supervisor_set, FakeApi};

const KUBECTL: &str = "/usr/bin/kubectl";

fn kubectl(
    kubeconfig: &std::path::Path,
    home: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    let out = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_gets_vms_and_machines() {
    if !std::path::Path::new(KUBECTL).exists() {
        eprintln!("skipped: {KUBECTL} is not installed");
        return;
    }
    let api = FakeApi::start(supervisor_set("healthy-v1alpha3")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    api.write_kubeconfig(&kc, "ns-prod", Some("ns-prod"))
        .unwrap();

    let (ok, out, err) = kubectl(
        &kc,
        dir.path(),
        &["get", "virtualmachines", "-n", "ns-prod", "-o", "wide"],
    );
    assert!(ok, "{err}");
    assert!(out.starts_with("NAME"), "{out}");
    for ip in ["198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.21"] {
        assert!(out.contains(ip), "{ip}: {out}");
    }
    assert!(out.contains("PoweredOn"), "{out}");

    let (ok, out, err) = kubectl(
        &kc,
        dir.path(),
        &["get", "machines", "-l", "cluster.x-k8s.io/control-plane"],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out.lines().count(),
        4,
        "header + 3 control-plane Machines:\n{out}"
    );
    assert!(out.contains("Running"), "{out}");

    let (ok, out, err) = kubectl(
        &kc,
        dir.path(),
        &[
            "get",
            "kcp",
            "-o",
            "jsonpath={.items[0].status.readyReplicas}",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "3");

    let (ok, _, err) = kubectl(&kc, dir.path(), &["get", "vm", "nope"]);
    assert!(!ok);
    assert!(
        err.contains("virtualmachines.vmoperator.vmware.com \"nope\" not found"),
        "{err}"
    );

    assert!(api.requests().iter().any(
        |r| r.path == "/apis/vmoperator.vmware.com/v1alpha3/namespaces/ns-prod/virtualmachines"
    ));
}

#[test]
fn kubectl_sees_the_forbidden_rule() {
    if !std::path::Path::new(KUBECTL).exists() {
        return;
    }
    let api = FakeApi::start(supervisor_set("forbidden")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    api.write_kubeconfig(&kc, "ns-prod", Some("ns-prod"))
        .unwrap();
    let (ok, _, err) = kubectl(&kc, dir.path(), &["get", "machines"]);
    assert!(!ok);
    assert!(err.contains("cannot list resource \"machines\" in API group \"cluster.x-k8s.io\" in the namespace \"ns-prod\""), "{err}");
}
