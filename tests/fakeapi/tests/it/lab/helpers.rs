//! Helpers of the lab tests (`lab::pods`, `lab::jumpbox`): the shared lab, a workload fake and
//! kube client per test, the plugin-shaped pod, and watching a pod through its transitions.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use etcdnet_fakeapi::{labplan, supervisor_set, workload_set, FakeConfig, Workload};
use etcdnet_lab::Lab;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{json, Value};

use crate::common;

pub const CP1: &str = "tkc-prod-7xk2p-4rz8m";
pub const CP2: &str = "tkc-prod-7xk2p-9qtvw";
pub const NS: &str = "kube-system";
pub const BUSYBOX: &str = "docker.io/library/busybox:1.36";

static LAB: Mutex<Weak<Lab>> = Mutex::new(Weak::new());

/// The shared lab: the control plane of the Supervisor set `quorum-lost`.
pub fn lab() -> Arc<Lab> {
    let mut slot = LAB.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = slot.upgrade() {
        return l;
    }
    let set = FakeConfig::from_dir(supervisor_set("quorum-lost")).unwrap();
    let mut cfg = labplan::lab_config(&labplan::plan(&set, None).unwrap()).unwrap();
    cfg.start_timeout = Duration::from_secs(60);
    let lab = Arc::new(Lab::start(cfg).expect("the lab starts"));
    eprintln!("lab {} started in {:?}", lab.id(), lab.started_in());
    *slot = Arc::downgrade(&lab);
    lab
}

pub struct Env {
    pub workload: Workload,
    pub pods: Api<Pod>,
    pub events: Api<Event>,
    _dir: tempfile::TempDir,
}

pub async fn env(workload: Workload) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let client = common::client(workload.api().unwrap(), dir.path()).await;
    Env {
        pods: Api::namespaced(client.clone(), NS),
        events: Api::namespaced(client, NS),
        workload,
        _dir: dir,
    }
}

pub async fn lab_env(set: &str) -> Env {
    env(Workload::lab(FakeConfig::from_dir(workload_set(set)).unwrap(), lab()).unwrap()).await
}

/// A pod shaped like the plugin's probe pod (src/route/pod.rs): pinned, host network and PID,
/// privileged, the host's / at /host, never restarted, bounded.
pub fn probe_pod(name: &str, node: &str, command: &[&str], deadline: i64) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "kubectl-etcdnet"}},
        "spec": {
            "nodeName": node, "hostNetwork": true, "hostPID": true, "restartPolicy": "Never",
            "activeDeadlineSeconds": deadline, "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": false, "enableServiceLinks": false,
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}],
            "containers": [{
                "name": "probe", "image": BUSYBOX, "imagePullPolicy": "IfNotPresent",
                "command": command,
                "securityContext": {"privileged": true},
                "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}}}]}
    }))
    .unwrap()
}

pub fn v(pod: &Pod) -> Value {
    serde_json::to_value(pod).unwrap()
}

pub fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("")
}

pub fn state(p: &Value) -> &Value {
    &p["status"]["containerStatuses"][0]["state"]
}

/// True while `pid` is a live (not zombie) member of process group `pgid`. A pid alone is not
/// enough: once reaped it may belong to anything else on the machine.
pub fn alive(pgid: u32, pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let f: Vec<String> = s
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .map(String::from)
                .collect();
            Some(f.first()? != "Z" && f.get(2)?.parse::<u32>().ok()? == pgid)
        })
        .unwrap_or(false)
}

pub fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Creates `pod` and collects its watch events (from just before the create) until `done` says
/// so or `limit` passes: (event type, pod as JSON).
pub async fn create_and_watch(
    pods: &Api<Pod>,
    pod: &Pod,
    limit: Duration,
    done: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, Value)> {
    let rv = pods
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    pods.create(&PostParams::default(), pod).await.unwrap();
    let name = pod.metadata.name.clone().unwrap();
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(limit.as_secs().max(1) as u32);
    let stream = pods.watch(&params, &rv).await.unwrap();
    futures::pin_mut!(stream);
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    while let Ok(Ok(Some(ev))) = tokio::time::timeout_at(deadline, stream.try_next()).await {
        let (kind, p) = match ev {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            _ => continue,
        };
        let p = v(&p);
        let stop = done(kind, &p);
        seen.push((kind.to_string(), p));
        if stop {
            break;
        }
    }
    seen
}

pub fn summary(seen: &[(String, Value)]) -> Vec<String> {
    seen.iter()
        .map(|(k, p)| {
            let s = state(p);
            let c = ["waiting", "running", "terminated"]
                .iter()
                .find(|k| !s[**k].is_null())
                .map(|k| {
                    format!(
                        "/{k}:{}",
                        s[*k]["reason"]
                            .as_str()
                            .unwrap_or(if *k == "running" { "-" } else { "" })
                    )
                })
                .unwrap_or_default();
            format!("{k} {}{c}", phase(p))
        })
        .collect()
}

pub async fn wait_for(
    pods: &Api<Pod>,
    name: &str,
    limit: Duration,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let p = v(&pods.get(name).await.unwrap());
        if ok(&p) {
            return p;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {p:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
