//! The workload fake with a lab behind it: pods created through the real kube client run on
//! the lab's nodes (real etcd, crictl, the node's network), and the fake reports them as a
//! kubelet does. Also Pod Security admission, refused image pulls and pods pinned to nodes that
//! no kubelet owns.
//!
//! Lab tests need root and the lab's packages (`.ci/lab-packages`); elsewhere they are compiled
//! as ignored (build.rs). They share one lab (built as the
//! `quorum-lost` Supervisor set's control plane), started by the first test that needs it and
//! torn down when the last one holding it ends; no test injects a fault.

use super::helpers;

use std::time::{Duration, Instant};

use etcdnet_fakeapi::{workload_set, FakeConfig, Workload};
use etcdnet_lab::require;
use futures::TryStreamExt;
use helpers::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

/// `readOnly: true` on the `/host` mount is honoured as runc honours it: `/host` itself cannot
/// be written, the mounts under it (the node's /dev/shm, where the probe keeps its temporary
/// folder) still can (Kubernetes' readOnly is not recursive).
#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_read_only_host_mount_is_read_only_as_runc_makes_it() {
    require("a_read_only_host_mount_is_read_only_as_runc_makes_it");
    let e = lab_env("lab-3").await;
    let script =
        "f=/host/etcdnet-ro-check; if touch $f 2>/dev/null; then rm -f $f; echo root-writable; \
                  else echo root-read-only; fi; \
                  d=$(mktemp -d /host/dev/shm/etcdnet-ro.XXXXXX) && rmdir $d && echo shm-writable";
    let mut pod = probe_pod("etcdnet-probe-ro", CP1, &["sh", "-c", script], 60);
    pod.spec.as_mut().unwrap().containers[0]
        .volume_mounts
        .as_mut()
        .unwrap()[0]
        .read_only = Some(true);
    create_and_watch(&e.pods, &pod, Duration::from_secs(30), |_, p| {
        matches!(phase(p), "Succeeded" | "Failed")
    })
    .await;
    let log = e
        .pods
        .logs("etcdnet-probe-ro", &LogParams::default())
        .await
        .unwrap();
    assert_eq!(log, "root-read-only\nshm-writable\n");
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_probe_like_pod_runs_on_its_node_with_the_nodes_view() {
    require("a_probe_like_pod_runs_on_its_node_with_the_nodes_view");
    let e = lab_env("lab-3").await;
    let pod = probe_pod(
        "etcdnet-probe-cp1",
        CP1,
        &[
            "chroot",
            "/host",
            "sh",
            "-c",
            "crictl ps --name etcd; hostname; ip -4 addr show eth0",
        ],
        60,
    );
    let seen = create_and_watch(&e.pods, &pod, Duration::from_secs(30), |_, p| {
        matches!(phase(p), "Succeeded" | "Failed")
    })
    .await;
    // Every kubelet transition is its own MODIFIED event with a newer resourceVersion.
    assert_eq!(
        summary(&seen),
        [
            "ADDED Pending",
            "MODIFIED Pending/waiting:ContainerCreating",
            "MODIFIED Running/running:-",
            "MODIFIED Succeeded/terminated:Completed",
        ],
        "{seen:#?}"
    );
    let rvs: Vec<u64> = seen
        .iter()
        .map(|(_, p)| {
            p["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");
    let running = &seen[2].1;
    assert_eq!(running["status"]["podIP"], "198.18.0.11");
    assert_eq!(running["status"]["hostIP"], "198.18.0.11");
    assert_eq!(running["status"]["qosClass"], "Burstable");
    assert!(running["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["status"] == "True"));
    assert_eq!(running["status"]["containerStatuses"][0]["ready"], true);
    let done = &seen[3].1;
    assert_eq!(state(done)["terminated"]["exitCode"], 0);

    // The log: crictl of the node's own etcd, the node's hostname, its address.
    let log = e
        .pods
        .logs("etcdnet-probe-cp1", &LogParams::default())
        .await
        .unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].starts_with("CONTAINER"), "{log}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("etcd") && l.contains("Running")),
        "{log}"
    );
    assert!(lines.contains(&CP1), "{log}");
    assert!(log.contains("inet 198.18.0.11/24"), "{log}");
    // ?container=, tailLines, and a container the pod does not have.
    let named = LogParams {
        container: Some("probe".into()),
        tail_lines: Some(1),
        ..Default::default()
    };
    let tail = e.pods.logs("etcdnet-probe-cp1", &named).await.unwrap();
    assert_eq!(tail, format!("{}\n", lines.last().unwrap()));
    let wrong = LogParams {
        container: Some("nope".into()),
        ..Default::default()
    };
    let err = api_error(e.pods.logs("etcdnet-probe-cp1", &wrong).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "container nope is not valid for pod etcdnet-probe-cp1")
    );
    // The kubelet's Events, from the node.
    let evs = e
        .events
        .list(&ListParams::default().fields("involvedObject.name=etcdnet-probe-cp1"))
        .await
        .unwrap();
    let reasons: Vec<String> = evs.items.iter().filter_map(|e| e.reason.clone()).collect();
    assert_eq!(reasons, ["Pulled", "Created", "Started"], "{evs:?}");
    assert!(evs
        .items
        .iter()
        .all(|e| e.source.as_ref().and_then(|s| s.host.as_deref()) == Some(CP1)));

    e.pods
        .delete(
            "etcdnet-probe-cp1",
            &DeleteParams::default().grace_period(0),
        )
        .await
        .unwrap();
    let api = e.workload.api().unwrap();
    assert!(api.existing_pods().is_empty());
    assert_eq!(
        api.created_pods(),
        [(NS.to_string(), "etcdnet-probe-cp1".to_string())]
    );
    assert!(api.pod_processes().is_empty(), "{:?}", api.pod_processes());
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_failing_command_fails_with_its_exit_code_and_both_streams_logged() {
    require("a_failing_command_fails_with_its_exit_code_and_both_streams_logged");
    let e = lab_env("lab-3").await;
    let pod = probe_pod(
        "fails",
        CP2,
        &["sh", "-c", "echo out; echo err >&2; echo more; exit 3"],
        60,
    );
    let seen = create_and_watch(&e.pods, &pod, Duration::from_secs(30), |_, p| {
        phase(p) == "Failed"
    })
    .await;
    let last = &seen.last().unwrap().1;
    assert_eq!(phase(last), "Failed", "{}", summary(&seen).join("\n"));
    assert_eq!(state(last)["terminated"]["exitCode"], 3);
    assert_eq!(state(last)["terminated"]["reason"], "Error");
    // One pipe for both streams: the order they were written in.
    assert_eq!(
        e.pods.logs("fails", &LogParams::default()).await.unwrap(),
        "out\nerr\nmore\n"
    );
    // A command that does not exist is the runtime's StartError, exit code 128.
    let missing = probe_pod("missing", CP2, &["no-such-tool", "--version"], 60);
    let seen = create_and_watch(&e.pods, &missing, Duration::from_secs(30), |_, p| {
        phase(p) == "Failed"
    })
    .await;
    let t = &state(&seen.last().unwrap().1)["terminated"];
    assert_eq!(
        (t["exitCode"].as_i64(), t["reason"].as_str()),
        (Some(128), Some("StartError"))
    );
    assert!(
        t["message"]
            .as_str()
            .unwrap()
            .contains("exec: \"no-such-tool\": executable file not found in $PATH"),
        "{t}"
    );
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn active_deadline_seconds_kills_the_process() {
    require("active_deadline_seconds_kills_the_process");
    let e = lab_env("lab-3").await;
    let mut pod = probe_pod("slow", CP1, &["sleep", "60"], 2);
    // The kubelet's default grace period: SIGTERM first, and sleep dies of it.
    pod.spec.as_mut().unwrap().termination_grace_period_seconds = None;
    let start = Instant::now();
    let seen = create_and_watch(&e.pods, &pod, Duration::from_secs(10), |_, p| {
        phase(p) == "Failed"
    })
    .await;
    let took = start.elapsed();
    let last = &seen.last().unwrap().1;
    assert_eq!(phase(last), "Failed", "{}", summary(&seen).join("\n"));
    assert!(took < Duration::from_millis(3500), "took {took:?}");
    assert_eq!(last["status"]["reason"], "DeadlineExceeded");
    assert_eq!(
        last["status"]["message"],
        "Pod was active on the node longer than the specified deadline"
    );
    assert_eq!(state(last)["terminated"]["exitCode"], 143);
    assert!(e.workload.api().unwrap().pod_processes().is_empty());
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn deleting_a_running_pod_kills_its_processes_at_once() {
    require("deleting_a_running_pod_kills_its_processes_at_once");
    let e = lab_env("lab-3").await;
    let pod = probe_pod(
        "runs",
        CP1,
        &["sh", "-c", "echo started; sleep 60; echo never"],
        120,
    );
    e.pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(&e.pods, "runs", Duration::from_secs(10), |p| {
        phase(p) == "Running"
    })
    .await;
    // The log is readable while the pod runs.
    let start = Instant::now();
    while e.pods.logs("runs", &LogParams::default()).await.unwrap() != "started\n" {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no log while running"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let api = e.workload.api().unwrap();
    let pids: Vec<(u32, u32)> = api
        .pod_processes()
        .iter()
        .map(|(g, pid)| (g.pid, *pid))
        .collect();
    assert_eq!(pids.len(), 2, "sh and its sleep: {:?}", api.pod_processes());

    let rv = e
        .pods
        .get("runs")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    e.pods
        .delete("runs", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let killed = Instant::now();
    while !api.pod_processes().is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "{:?}",
            api.pod_processes()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(pids.iter().all(|(g, p)| !alive(*g, *p)), "{pids:?}");
    // Watchers saw the deletion.
    let stream = e
        .pods
        .watch(
            &WatchParams::default()
                .fields("metadata.name=runs")
                .timeout(2),
            &rv,
        )
        .await
        .unwrap();
    futures::pin_mut!(stream);
    let mut deleted = false;
    while let Ok(Some(ev)) = stream.try_next().await {
        deleted |= matches!(ev, WatchEvent::Deleted(_));
    }
    assert!(deleted);
    assert_eq!(api_error(e.pods.get("runs").await.unwrap_err()).code, 404);
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn dropping_the_fake_kills_what_its_pods_run() {
    require("dropping_the_fake_kills_what_its_pods_run");
    let e = lab_env("lab-3").await;
    e.pods
        .create(
            &PostParams::default(),
            &probe_pod("left", CP2, &["sleep", "60"], 120),
        )
        .await
        .unwrap();
    wait_for(&e.pods, "left", Duration::from_secs(10), |p| {
        phase(p) == "Running"
    })
    .await;
    // Running means the command itself runs (the node view is set up): one process, sleep.
    let procs = e.workload.api().unwrap().pod_processes();
    assert_eq!(procs.len(), 1, "{procs:?}");
    let (group, pid) = (procs[0].0.pid, procs[0].1);
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap()
            .trim(),
        "sleep"
    );
    let start = Instant::now();
    drop(e);
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(!alive(group, pid));
}

#[tokio::test]
async fn pod_security_rejects_the_probe_where_a_namespace_enforces_it() {
    // Admission needs no lab.
    let w = Workload::serving(FakeConfig::from_dir(workload_set("lab-3")).unwrap()).unwrap();
    let e = env(w).await;
    let client = e.pods.clone().into_client();
    let pod = probe_pod("etcdnet-probe-cp1", CP1, &["true"], 60);
    let create = |ns: &str| {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let pod = pod.clone();
        async move { api.create(&PostParams::default(), &pod).await }
    };
    let err = api_error(create("restricted-ns").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"etcdnet-probe-cp1\" is forbidden: violates PodSecurity \"baseline:latest\": \
         host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume \"host\"), \
         privileged (container \"probe\" must not set securityContext.privileged=true)"
    );
    let err = api_error(create("strict-ns").await.unwrap_err());
    assert!(
        err.message.starts_with(
            "pods \"etcdnet-probe-cp1\" is forbidden: violates PodSecurity \"restricted:latest\": \
             host namespaces (hostNetwork=true, hostPID=true), privileged (container \"probe\" must not set securityContext.privileged=true), \
             allowPrivilegeEscalation != false"
        ),
        "{}",
        err.message
    );
    // kube-system is privileged, default has no label: both admit.
    create(NS).await.unwrap();
    create("default").await.unwrap();
    let api = e.workload.api().unwrap();
    assert_eq!(
        api.created_pods(),
        [(NS, "etcdnet-probe-cp1"), ("default", "etcdnet-probe-cp1")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_refused_image_is_never_pulled_and_the_pod_never_runs() {
    require("a_refused_image_is_never_pulled_and_the_pod_never_runs");
    let e = lab_env("lab-3-airgapped").await;
    let pod = probe_pod("airgapped", CP1, &["sh", "-c", "echo ran"], 60);
    let seen = create_and_watch(&e.pods, &pod, Duration::from_secs(10), |_, p| {
        state(p)["waiting"]["reason"] == "ImagePullBackOff"
    })
    .await;
    assert_eq!(
        summary(&seen),
        [
            "ADDED Pending",
            "MODIFIED Pending/waiting:ContainerCreating",
            "MODIFIED Pending/waiting:ErrImagePull",
            "MODIFIED Pending/waiting:ImagePullBackOff",
        ]
    );
    let pull = &state(&seen[2].1)["waiting"]["message"];
    assert_eq!(
        pull,
        "rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/library/busybox:1.36\": \
         failed to resolve reference \"docker.io/library/busybox:1.36\": docker.io/library/busybox:1.36: not found"
    );
    assert_eq!(
        state(&seen[3].1)["waiting"]["message"],
        "Back-off pulling image \"docker.io/library/busybox:1.36\""
    );
    let err = api_error(
        e.pods
            .logs("airgapped", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "container \"probe\" in pod \"airgapped\" is waiting to start: trying and failing to pull image")
    );
    let api = e.workload.api().unwrap();
    assert!(api.pod_processes().is_empty());
    // Still Pending a moment later; nothing ran, so there is no log at all.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        phase(&v(&e.pods.get("airgapped").await.unwrap())),
        "Pending"
    );
    // Another image is pulled fine: the refusal is per image.
    let mut other = probe_pod("other-image", CP1, &["sh", "-c", "echo ran"], 60);
    other.spec.as_mut().unwrap().containers[0].image =
        Some("registry.example.com/tools/busybox:1.36".into());
    let seen = create_and_watch(&e.pods, &other, Duration::from_secs(30), |_, p| {
        phase(p) == "Succeeded"
    })
    .await;
    assert_eq!(phase(&seen.last().unwrap().1), "Succeeded");
    assert_eq!(
        e.pods
            .logs("other-image", &LogParams::default())
            .await
            .unwrap(),
        "ran\n"
    );
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn a_pod_pinned_to_a_node_no_kubelet_owns_stays_pending() {
    require("a_pod_pinned_to_a_node_no_kubelet_owns_stays_pending");
    let e = lab_env("lab-3").await;
    let ghost = probe_pod("ghost", "tkc-prod-7xk2p-gone", &["true"], 60);
    let seen = create_and_watch(&e.pods, &ghost, Duration::from_secs(2), |_, _| false).await;
    assert_eq!(summary(&seen), ["ADDED Pending"]);
    let p = v(&e.pods.get("ghost").await.unwrap());
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    let err = api_error(
        e.pods
            .logs("ghost", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "nodes \"tkc-prod-7xk2p-gone\" not found")
    );
    // A worker Node exists, but no lab node (no kubelet) is behind it.
    let worker = probe_pod(
        "on-worker",
        "tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-5dftw",
        &["true"],
        60,
    );
    let seen = create_and_watch(&e.pods, &worker, Duration::from_secs(1), |_, _| false).await;
    assert_eq!(summary(&seen), ["ADDED Pending"]);
    let err = api_error(
        e.pods
            .logs("on-worker", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 500);
    assert!(
        err.message.contains("dial tcp 198.18.0.21:10250"),
        "{}",
        err.message
    );
    assert!(e.workload.api().unwrap().pod_processes().is_empty());
}

#[tokio::test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
async fn following_the_log_streams_until_the_container_ends() {
    require("following_the_log_streams_until_the_container_ends");
    use futures::AsyncBufReadExt;
    let e = lab_env("lab-3").await;
    let pod = probe_pod(
        "talks",
        CP2,
        &["sh", "-c", "echo one; sleep 1; echo two"],
        60,
    );
    e.pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(&e.pods, "talks", Duration::from_secs(10), |p| {
        phase(p) == "Running"
    })
    .await;
    let follow = LogParams {
        follow: true,
        ..Default::default()
    };
    let start = Instant::now();
    let stream = e.pods.log_stream("talks", &follow).await.unwrap();
    let lines: Vec<String> =
        tokio::time::timeout(Duration::from_secs(10), stream.lines().try_collect())
            .await
            .expect("the stream ends with the container")
            .unwrap();
    assert_eq!(lines, ["one", "two"]);
    // "two" came about a second later, on the same open stream.
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(phase(&v(&e.pods.get("talks").await.unwrap())), "Succeeded");
}
