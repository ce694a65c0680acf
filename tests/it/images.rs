//! The pods run images pinned by digest, and the probe pod mounts the node's `/`
//! read-only. Through the real kubectl, as an admin would check it before a run:
//! `kubectl etcdnet diagnose --dry-run -o json` shows the pods exactly as they would be created.

use crate::common;

use common::article::*;
use common::*;
use serde_json::Value;

const BUSYBOX: &str = "docker.io/library/busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";
const ALPINE_GIT: &str = "docker.io/alpine/git:2.47.2@sha256:062a01ad7a0eb17cff382bc5e26086b4d710e56dfdfdf001109a49b6d9bd378c";

/// The pods of a `--dry-run -o json` (one JSON document per pod).
fn dry_run_pods(run: &Run) -> Vec<Value> {
    run.expect_code(0);
    let pods = run.json_documents();
    assert!(!pods.is_empty(), "no pod shown: {}", run.stderr);
    for p in &pods {
        assert_eq!(p["kind"], "Pod", "{p}");
    }
    pods
}

fn container(pod: &Value) -> &Value {
    &pod["spec"]["containers"][0]
}

/// The default images are pinned by digest and `/host` is mounted read-only: a tag alone
/// (`busybox:1.36`, `alpine/git:2.47.2`) can be moved by anyone who may push it, and a
/// read-write `/host` would let the probe change the node.
#[test]
fn dry_run_shows_pinned_images_and_a_read_only_host() {
    let env = Env::new(SET, Workload::ok());
    let pods = dry_run_pods(&env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "pod",
        "--dry-run",
        "-o",
        "json",
    ]));
    assert_eq!(pods.len(), CP.len(), "one probe pod per node");
    for pod in &pods {
        let c = container(pod);
        assert_eq!(c["image"], BUSYBOX, "{}", pod["metadata"]["name"]);
        let host: Vec<&Value> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["mountPath"] == "/host")
            .collect();
        assert_eq!(host.len(), 1, "{c}");
        assert_eq!(
            host[0]["readOnly"], true,
            "the probe only reads the node: {c}"
        );
        // The volume behind it is the node's `/`, nothing narrower the probe would miss.
        let volume = pod["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == host[0]["name"])
            .expect("the mount's volume");
        assert_eq!(volume["hostPath"]["path"], "/");
    }

    let env = Env::new(SET, Workload::black_hole());
    let pods = dry_run_pods(&env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--dry-run",
        "-o",
        "json",
    ]));
    assert_eq!(pods.len(), 1, "one jumpbox pod for the cluster");
    assert_eq!(container(&pods[0])["image"], ALPINE_GIT);
}

/// `--image` and `--jumpbox-image` still replace the defaults, in every form Kubernetes takes
/// (`name:tag@digest` included), verbatim.
#[test]
fn image_flags_still_override_the_pinned_defaults() {
    let mirror = "harbor.sv.example.com/ns-prod/busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";
    let env = Env::new(SET, Workload::ok());
    for image in [mirror, "registry.local/busybox:1.36", "busybox"] {
        let pods = dry_run_pods(&env.kubectl(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "pod",
            "--image",
            image,
            "--dry-run",
            "-o",
            "json",
        ]));
        for pod in &pods {
            assert_eq!(container(pod)["image"], image);
        }
    }
    let env = Env::new(SET, Workload::black_hole());
    let jumpbox = "harbor.sv.example.com/ns-prod/alpine-git:2.47.2@sha256:062a01ad7a0eb17cff382bc5e26086b4d710e56dfdfdf001109a49b6d9bd378c";
    let pods = dry_run_pods(&env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--jumpbox-image",
        jumpbox,
        "--dry-run",
        "-o",
        "json",
    ]));
    assert_eq!(container(&pods[0])["image"], jumpbox);
}

/// The release notes list what `scripts/release.sh images` reads from the source: both pinned
/// references, whole (rustfmt puts a long constant's string on the next line).
#[test]
fn release_script_reads_the_pinned_defaults() {
    let out = std::process::Command::new("bash")
        .args(["scripts/release.sh", "images"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{BUSYBOX}\n{ALPINE_GIT}\n")
    );
    assert_eq!(etcdnet::route::pod::DEFAULT_IMAGE, BUSYBOX);
    assert_eq!(etcdnet::route::jumpbox::DEFAULT_IMAGE, ALPINE_GIT);
}
