//! The Supervisor fake running the plugin's jumpbox pods in a lab: a pod created in the vSphere
//! Namespace without a node runs on the Supervisor side of the lab (198.18.0.1), mounts the
//! cluster's `<cluster>-ssh` secret from the fake's own store, and SSHes to a node as
//! `vmware-system-user` with sudo, as `src/route/jumpbox/` expects.
//!
//! Needs root and the lab's packages; elsewhere the tests are compiled as ignored (build.rs). The tests share one lab (the `quorum-lost` set's control plane);
//! each has its own Supervisor fake, so each can change its secrets freely. No fault is injected.

use super::helpers;
use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdnet_fakeapi::{supervisor_set, FakeApi, FakeConfig};
use etcdnet_lab::{require, Lab};
use helpers::*;
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use serde_json::{json, Value};

const VNS: &str = "ns-prod";
const SECRET: &str = "tkc-prod-ssh";
const KEY_DIR: &str = "/etc/etcdnet/ssh";
/// The plugin's jumpbox script, run as the plugin runs it (the fakeapi crate cannot depend on
/// the root crate, which dev-depends on it; the script is plain text).
const JUMPBOX_SH: &str = include_str!("../../../../../src/route/jumpbox/jumpbox.sh");

struct Sup {
    api: FakeApi,
    lab: Arc<Lab>,
    pods: Api<Pod>,
    events: Api<Event>,
    secrets: Api<Secret>,
    _dir: tempfile::TempDir,
}

/// A Supervisor fake (quorum-lost) running jumpbox pods in the shared lab, with `key` as the
/// `ssh-privatekey` of `tkc-prod-ssh` (None: the fixture's fake key stays).
async fn supervisor(key: Option<Vec<u8>>) -> Sup {
    let lab = lab();
    let api =
        FakeApi::start_with(FakeConfig::from_dir(supervisor_set("quorum-lost")).unwrap()).unwrap();
    api.execute_jumpbox_pods_in(lab.clone()).unwrap();
    if let Some(k) = key {
        api.set_secret_data(VNS, SECRET, "ssh-privatekey", k)
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(&api, dir.path()).await;
    Sup {
        pods: Api::namespaced(client.clone(), VNS),
        events: Api::namespaced(client.clone(), VNS),
        secrets: Api::namespaced(client, VNS),
        api,
        lab,
        _dir: dir,
    }
}

/// A pod shaped like `jumpbox_pod` (src/route/jumpbox/spec.rs): no nodeName, the `<cluster>-ssh`
/// secret's `ssh-privatekey` mounted read-only at /etc/etcdnet/ssh with mode 0400, bounded,
/// never restarted.
fn jumpbox_pod(name: &str, command: &[&str]) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": VNS,
                     "labels": {"app.kubernetes.io/managed-by": "kubectl-etcdnet",
                                "app.kubernetes.io/name": "etcdnet-jumpbox"}},
        "spec": {
            "restartPolicy": "Never", "activeDeadlineSeconds": 60,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": false, "enableServiceLinks": false,
            "volumes": [{"name": "ssh-key", "secret": {
                "secretName": SECRET, "defaultMode": 0o400, "optional": false,
                "items": [{"key": "ssh-privatekey", "path": "ssh-privatekey", "mode": 0o400}]}}],
            "containers": [{
                "name": "jumpbox", "image": "docker.io/alpine/git:2.47.2",
                "imagePullPolicy": "IfNotPresent", "command": command,
                "volumeMounts": [{"name": "ssh-key", "mountPath": KEY_DIR, "readOnly": true}],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                              "limits": {"cpu": "500m", "memory": "128Mi"}}}]}
    }))
    .unwrap()
}

fn ssh_cmd(remote: &str) -> String {
    format!(
        "ssh -i {KEY_DIR}/ssh-privatekey -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes vmware-system-user@198.18.0.11 {remote}"
    )
}

fn done(p: &Value) -> bool {
    matches!(phase(p), "Succeeded" | "Failed")
}

async fn log(pods: &Api<Pod>, name: &str) -> String {
    pods.logs(name, &LogParams::default()).await.unwrap()
}

/// Waits (10 s at most) until the fake kubelet tore a pod down: no process of it left and its
/// secret volume `dir` gone. As a kubelet does, it tears down after it set the pod's final
/// status, so a watch may see Succeeded (or the delete return) a moment before.
async fn torn_down(api: &FakeApi, dir: &std::path::Path) {
    let start = Instant::now();
    while !api.pod_processes().is_empty() || dir.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left: {:?}, dir {dir:?}",
            api.pod_processes()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_jumpbox_pod_sshes_to_the_node_with_the_secret_volume() {
    require("a_jumpbox_pod_sshes_to_the_node_with_the_secret_volume");
    let s = supervisor(Some(lab().ssh_private_key())).await;
    let script = format!(
        "ls -l {KEY_DIR}; stat -L -c 'mode %a' {KEY_DIR}/ssh-privatekey; hostname; {}",
        ssh_cmd("sudo crictl ps --name etcd")
    );
    let pod = jumpbox_pod("etcdnet-jumpbox-cp1", &["sh", "-c", &script]);
    let seen = create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| done(p)).await;
    let text = log(&s.pods, "etcdnet-jumpbox-cp1").await;
    assert_eq!(
        summary(&seen),
        [
            "ADDED Pending",
            "MODIFIED Pending/waiting:ContainerCreating",
            "MODIFIED Running/running:-",
            "MODIFIED Succeeded/terminated:Completed",
        ],
        "{text}"
    );
    // The kubelet's layout: the key a symlink into ..data, the file itself 0400.
    assert!(
        text.contains("ssh-privatekey -> ..data/ssh-privatekey"),
        "{text}"
    );
    assert!(text.contains("mode 400"), "{text}");
    // The pod's hostname is its name; it ran on the Supervisor side of the lab.
    assert!(text.lines().any(|l| l == "etcdnet-jumpbox-cp1"), "{text}");
    let last = &seen.last().unwrap().1;
    assert_eq!(last["status"]["podIP"], s.lab.jumpbox_ip().to_string());
    assert!(last["spec"]["nodeName"].is_null());
    // What the admin sees in the support article: the node's own etcd, Running.
    assert!(
        text.lines()
            .any(|l| l.contains("etcd") && l.contains("Running")),
        "{text}"
    );
    assert!(!text.contains("BEGIN OPENSSH"), "the key is not in the log");

    // The secret was written for this pod only, and is gone now that it ended.
    let vols = s.api.secret_volumes();
    assert_eq!(vols.len(), 1, "{vols:?}");
    assert_eq!(
        (
            vols[0].pod.as_str(),
            vols[0].volume.as_str(),
            vols[0].mount_path.as_str()
        ),
        ("etcdnet-jumpbox-cp1", "ssh-key", KEY_DIR)
    );
    torn_down(&s.api, &vols[0].dir).await;
    assert!(!vols[0].dir.exists(), "{:?} still exists", vols[0].dir);
    assert!(s.api.pod_processes().is_empty());
    assert_eq!(
        s.api.created_pods(),
        [(VNS.to_string(), "etcdnet-jumpbox-cp1".to_string())]
    );
    let evs = s
        .events
        .list(&ListParams::default().fields("involvedObject.name=etcdnet-jumpbox-cp1"))
        .await
        .unwrap();
    let reasons: Vec<String> = evs.items.iter().filter_map(|e| e.reason.clone()).collect();
    assert_eq!(reasons, ["Pulled", "Created", "Started"], "{evs:?}");
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn the_plugins_jumpbox_script_reaches_the_node_and_runs_sudo() {
    require("the_plugins_jumpbox_script_reaches_the_node_and_runs_sudo");
    let s = supervisor(Some(lab().ssh_private_key())).await;
    // jumpbox.sh NONCE USER CONNECT_TIMEOUT KEY_FILES SSH_OPTIONS PARALLEL OUTPUT_CAP
    // PROBE_SCRIPT KEY_OF_VMS, then IP REMOTE_CMD per VM (one VM here, offered key 0, the only
    // one); the "probe" is a one-liner read
    // from stdin by `sudo -n sh -s`, as the real probe is. The options are the plugin's locked
    // ones (src/route/ssh/options.rs; this crate cannot depend on it).
    let key = format!("{KEY_DIR}/ssh-privatekey");
    let argv = [
        "sh",
        "-c",
        JUMPBOX_SH,
        "etcdnet-jumpbox",
        "a-test-nonce",
        "vmware-system-user",
        "3",
        &key,
        "-o BatchMode=yes -o ForwardAgent=no -o ForwardX11=no -o ClearAllForwardings=yes \
         -o ControlMaster=no -o ControlPath=none -o PermitLocalCommand=no \
         -o StrictHostKeyChecking=accept-new -o GlobalKnownHostsFile=/dev/null",
        "4",
        "4194305",
        "id -un; hostname; crictl ps --name etcd -q | wc -l",
        "0",
        "198.18.0.12",
        "sudo -n sh -s",
    ];
    let pod = jumpbox_pod("etcdnet-jumpbox-cp2", &argv);
    let seen = create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| done(p)).await;
    let text = log(&s.pods, "etcdnet-jumpbox-cp2").await;
    assert_eq!(phase(&seen.last().unwrap().1), "Succeeded", "{text}");
    for port in [22, 2379, 2380] {
        assert!(
            text.contains(&format!("ETCDNET-REACH {port} Open")),
            "{port}: {text}"
        );
    }
    assert!(text.contains("ETCDNET-SSH-EXIT 0"), "{text}");
    // The VM's section, framed with the nonce (read by the plugin's `split_log`).
    assert!(text.starts_with("ETCDNET-NODE a-test-nonce 0 "), "{text}");
    assert!(
        text.ends_with("ETCDNET-NODE-END a-test-nonce 0\n"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.contains(&"root"), "sudo: {text}");
    assert!(lines.contains(&CP2), "the node's hostname: {text}");
    assert!(lines.contains(&"1"), "one etcd container: {text}");
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_missing_secret_keeps_the_pod_in_container_creating_without_a_process() {
    require("a_missing_secret_keeps_the_pod_in_container_creating_without_a_process");
    let s = supervisor(None).await;
    s.secrets
        .delete(SECRET, &DeleteParams::default())
        .await
        .unwrap();
    let pod = jumpbox_pod("etcdnet-jumpbox-nokey", &["sh", "-c", &ssh_cmd("hostname")]);
    s.pods.create(&PostParams::default(), &pod).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let p = v(&s.pods.get("etcdnet-jumpbox-nokey").await.unwrap());
    assert_eq!(phase(&p), "Pending", "{p:#}");
    assert_eq!(state(&p)["waiting"]["reason"], "ContainerCreating", "{p:#}");
    assert!(s.api.pod_processes().is_empty());
    assert!(s.api.secret_volumes().is_empty());
    let evs = s
        .events
        .list(&ListParams::default().fields("involvedObject.name=etcdnet-jumpbox-nokey"))
        .await
        .unwrap();
    let failed: Vec<(String, String)> = evs
        .items
        .iter()
        .map(|e| {
            (
                e.reason.clone().unwrap_or_default(),
                e.message.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [(
            "FailedMount".to_string(),
            format!(
                "MountVolume.SetUp failed for volume \"ssh-key\" : secret \"{SECRET}\" not found"
            )
        )]
    );

    // The kubelet keeps retrying: once the secret exists (with the lab's key), the pod runs.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": SECRET, "namespace": VNS}, "type": "kubernetes.io/ssh-auth",
        "stringData": {"ssh-privatekey": String::from_utf8(s.lab.ssh_private_key()).unwrap()}
    }))
    .unwrap();
    s.secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let p = wait_for(
        &s.pods,
        "etcdnet-jumpbox-nokey",
        Duration::from_secs(20),
        done,
    )
    .await;
    let text = log(&s.pods, "etcdnet-jumpbox-nokey").await;
    assert_eq!(phase(&p), "Succeeded", "{text}");
    assert!(text.lines().any(|l| l == CP1), "{text}");
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn the_wrong_key_is_refused_by_the_node() {
    require("the_wrong_key_is_refused_by_the_node");
    let s = supervisor(Some(lab().wrong_ssh_private_key())).await;
    let pod = jumpbox_pod("etcdnet-jumpbox-wrong", &["sh", "-c", &ssh_cmd("hostname")]);
    let seen = create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| done(p)).await;
    let last = &seen.last().unwrap().1;
    let text = log(&s.pods, "etcdnet-jumpbox-wrong").await;
    assert_eq!(phase(last), "Failed", "{text}");
    assert_eq!(state(last)["terminated"]["exitCode"], 255);
    assert!(text.contains("Permission denied (publickey)"), "{text}");
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn deleting_a_running_jumpbox_pod_kills_it_and_removes_its_secret() {
    require("deleting_a_running_jumpbox_pod_kills_it_and_removes_its_secret");
    let s = supervisor(Some(lab().ssh_private_key())).await;
    // An ssh session that stays open: the kill must reach ssh too (same process group).
    let pod = jumpbox_pod(
        "etcdnet-jumpbox-slow",
        &[
            "sh",
            "-c",
            &format!("echo started; {}", ssh_cmd("sleep 300")),
        ],
    );
    s.pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(
        &s.pods,
        "etcdnet-jumpbox-slow",
        Duration::from_secs(20),
        |p| phase(p) == "Running",
    )
    .await;
    // Wait until ssh itself runs in the pod's group (the session is open).
    let start = Instant::now();
    while s.api.pod_processes().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            s.api.pod_processes()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let procs = s.api.pod_processes();
    assert!(procs.iter().all(|(p, _)| p.pod == "etcdnet-jumpbox-slow"
        && p.node == etcdnet_fakeapi::kubelet::VSPHERE_POD_HOST));
    let vols = s.api.secret_volumes();
    assert_eq!(vols.len(), 1);
    assert!(vols[0].dir.exists(), "mounted while the pod runs");

    s.pods
        .delete(
            "etcdnet-jumpbox-slow",
            &DeleteParams::default().grace_period(0),
        )
        .await
        .unwrap();
    torn_down(&s.api, &vols[0].dir).await;
    for (p, pid) in procs {
        assert!(!alive(p.pid, pid), "{pid} of {p:?} survived");
    }
    assert!(s.api.existing_pods().is_empty());
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_pod_with_a_node_is_not_a_jumpbox_pod() {
    require("a_pod_with_a_node_is_not_a_jumpbox_pod");
    // A Supervisor fake runs only node-less pods: one pinned to a lab node's name stays
    // Pending with no status (nothing there owns that node), and runs nothing.
    let s = supervisor(Some(lab().ssh_private_key())).await;
    let mut pod = v(&jumpbox_pod("pinned", &["sh", "-c", "true"]));
    pod["spec"]["nodeName"] = json!(CP1);
    let pod: Pod = serde_json::from_value(pod).unwrap();
    s.pods.create(&PostParams::default(), &pod).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let p = v(&s.pods.get("pinned").await.unwrap());
    assert_eq!(phase(&p), "Pending");
    assert!(p["status"]["containerStatuses"].is_null(), "{p:#}");
    assert!(s.api.pod_processes().is_empty());
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn the_binary_with_workload_down_runs_jumpbox_pods_with_the_labs_key() {
    require("the_binary_with_workload_down_runs_jumpbox_pods_with_the_labs_key");
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakeapi"))
        .arg("--fixtures")
        .arg(supervisor_set("quorum-lost"))
        .arg("--workload-down")
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .args(["--namespace", VNS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ends the binary however the test ends (SIGTERM: it tears its lab down).
    struct Term(u32);
    impl Drop for Term {
        fn drop(&mut self) {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(self.0 as libc::pid_t, libc::SIGTERM) };
        }
    }
    let term = Term(child.id());
    let mut out = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let last = line.starts_with("LAB_NODES=");
        out.push(line);
        if last {
            break;
        }
    }
    assert!(
        out.contains(&format!("JUMPBOX_SECRET={VNS}/{SECRET}")),
        "{out:?}"
    );

    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(cfg).unwrap(), VNS);
    let pod = jumpbox_pod(
        "etcdnet-jumpbox-demo",
        &["sh", "-c", &ssh_cmd("sudo crictl ps --name etcd")],
    );
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let p = wait_for(&pods, "etcdnet-jumpbox-demo", Duration::from_secs(30), done).await;
    let text = log(&pods, "etcdnet-jumpbox-demo").await;
    assert_eq!(phase(&p), "Succeeded", "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("etcd") && l.contains("Running")),
        "{text}"
    );

    drop(term);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    let all = format!("{}\n{err}", out.join("\n"));
    assert!(all.contains("holds the lab's SSH key"), "{all}");
    assert!(!all.contains("PRIVATE KEY"), "no key printed: {all}");
}

/// A restricted pod's security context, applied as a runtime does: the command runs as the
/// non-root user and groups asked for, the image is read-only, an emptyDir is writable. Its
/// `fsGroup` is NOT applied (spherelet is no kubelet; the fake does the least it may): the
/// user gets no such group and the 0400 key stays root's, unreadable; the same secret mounted
/// 0444 is readable, and its copy at 0600 in the emptyDir is what ssh logs in with, as the
/// plugin's jumpbox does.
#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_vsphere_pod_gets_no_fs_group_and_reads_a_key_mounted_readable() {
    require("a_vsphere_pod_gets_no_fs_group_and_reads_a_key_mounted_readable");
    let s = supervisor(Some(lab().ssh_private_key())).await;
    let readable = "/etc/etcdnet/readable";
    let script = format!(
        "id -u; id -g; id -G; stat -L -c 'key %a %u %g' {KEY_DIR}/ssh-privatekey; \
         cat {KEY_DIR}/ssh-privatekey >/dev/null 2>&1 && echo key-readable || echo key-unreadable; \
         stat -L -c 'readable %a %u %g' {readable}/ssh-privatekey; \
         touch /etc/x 2>/dev/null && echo etc-writable || echo etc-read-only; \
         touch /tmp/x && echo tmp-writable; \
         (umask 077 && cat {readable}/ssh-privatekey >/tmp/key) && stat -c 'copy %a' /tmp/key; \
         {}",
        ssh_cmd("id -un").replace(&format!("{KEY_DIR}/ssh-privatekey"), "/tmp/key")
    );
    let mut pod = serde_json::to_value(jumpbox_pod(
        "etcdnet-jumpbox-nonroot",
        &["sh", "-c", &script],
    ))
    .unwrap();
    pod["spec"]["securityContext"] = json!({
        "runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534, "fsGroup": 65534,
        "seccompProfile": {"type": "RuntimeDefault"}
    });
    let volumes = pod["spec"]["volumes"].as_array_mut().unwrap();
    volumes.push(json!({"name": "tmp", "emptyDir": {"medium": "Memory"}}));
    volumes.push(json!({"name": "readable", "secret": {
        "secretName": SECRET, "defaultMode": 0o444,
        "items": [{"key": "ssh-privatekey", "path": "ssh-privatekey"}]}}));
    let c = &mut pod["spec"]["containers"][0];
    c["securityContext"] = json!({
        "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"]}
    });
    let mounts = c["volumeMounts"].as_array_mut().unwrap();
    mounts.push(json!({"name": "tmp", "mountPath": "/tmp"}));
    mounts.push(json!({"name": "readable", "mountPath": readable, "readOnly": true}));
    let pod: Pod = serde_json::from_value(pod).unwrap();
    create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| done(p)).await;
    let text = log(&s.pods, "etcdnet-jumpbox-nonroot").await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..3],
        ["65534", "65534", "65534"],
        "no fsGroup among the groups: {text}"
    );
    assert!(text.contains("key 400 0 0"), "fsGroup not applied: {text}");
    assert!(text.contains("key-unreadable"), "{text}");
    assert!(text.contains("readable 444 0 0"), "{text}");
    assert!(text.contains("etc-read-only"), "{text}");
    assert!(text.contains("tmp-writable"), "{text}");
    assert!(text.contains("copy 600"), "{text}");
    assert!(
        lines.contains(&"vmware-system-user"),
        "ssh read the copy and logged in: {text}"
    );
}

/// `delay_vsphere_pod_starts`: a vSphere Pod waits in ContainerCreating that long before its
/// process starts (its image pulled by the host, its VM booting), and a refused image still
/// fails at once.
#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_vsphere_pod_start_can_take_its_time() {
    require("a_vsphere_pod_start_can_take_its_time");
    let s = supervisor(None).await;
    s.api.delay_vsphere_pod_starts(Duration::from_secs(2));
    let pod = jumpbox_pod("etcdnet-jumpbox-slow", &["sh", "-c", "echo started"]);
    let start = Instant::now();
    create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| done(p)).await;
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(log(&s.pods, "etcdnet-jumpbox-slow").await, "started\n");
    s.api.refuse_image("docker.io/alpine/git:2.47.2");
    let pod = jumpbox_pod("etcdnet-jumpbox-refused", &["sh", "-c", "echo started"]);
    let start = Instant::now();
    create_and_watch(&s.pods, &pod, Duration::from_secs(30), |_, p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"
    })
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}
