//! Pod status in the shapes a kubelet (1.30) writes, and the helpers every "kubelet" of the fake
//! shares: the lab kubelet that runs real processes and the scripted reactor pods.
//!
//! The shapes matter because clients read them: the plugin decides from `phase`,
//! `containerStatuses[].state` (waiting reason, terminated exit code) and `PodScheduled`, and
//! `kubectl get`/`describe` print the rest.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::server::Shared;
use crate::store;

/// The addresses and times every status of one pod run shares.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The node's address (status.hostIP).
    pub host_ip: String,
    /// status.podIP: the node's address for a hostNetwork pod.
    pub pod_ip: String,
    /// When the kubelet first saw the pod (status.startTime; activeDeadlineSeconds counts from it).
    pub start_time: String,
}

/// How the first container ended, for [`terminated`].
#[derive(Debug, Clone)]
pub struct Ending {
    pub exit_code: i32,
    /// Completed, Error, StartError, ...
    pub reason: String,
    pub message: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: String,
    /// The pod-level reason and message (DeadlineExceeded), if any.
    pub pod_reason: Option<(String, String)>,
}

/// (name, image) of every regular container, in spec order.
pub fn containers(pod: &Value) -> Vec<(String, String)> {
    pod["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_string(),
                        c["image"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn hex64(seed: impl Hash) -> String {
    (0..4u64)
        .map(|i| {
            let mut h = DefaultHasher::new();
            (i, &seed).hash(&mut h);
            format!("{:016x}", h.finish())
        })
        .collect()
}

/// `containerd://<64 hex>`, stable for one pod (uid) and container.
pub fn container_id(pod: &Value, container: &str) -> String {
    format!(
        "containerd://{}",
        hex64((store::meta_str(pod, "uid"), container))
    )
}

/// A reference as containerd normalizes it: `busybox` is `docker.io/library/busybox:latest`,
/// and a reference with both a tag and a digest is its digest alone
/// (`busybox:1.36@sha256:...` is `docker.io/library/busybox@sha256:...`, as containerd's
/// `reference/docker.ParseDockerRef` drops the tag).
pub fn normalize_image(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let first = name.split('/').next().unwrap_or("");
    let has_domain =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = if has_domain {
        name.to_string()
    } else if name.contains('/') {
        format!("docker.io/{name}")
    } else {
        format!("docker.io/library/{name}")
    };
    // Where the tag starts, if there is one: a ':' in the last path segment (a port is not).
    let last = full.rsplit('/').next().unwrap_or("");
    let tag_at = last.find(':').map(|i| full.len() - last.len() + i);
    match (digest, tag_at) {
        (Some(d), Some(at)) => format!("{}@{d}", &full[..at]),
        (Some(d), None) => format!("{full}@{d}"),
        (None, Some(_)) => full,
        (None, None) => {
            full.push_str(":latest");
            full
        }
    }
}

/// `docker.io/library/busybox@sha256:...`: what the runtime reports once an image is present.
pub fn image_id(image: &str) -> String {
    let full = normalize_image(image);
    // Pulled by digest: that digest is the one the runtime reports.
    if full.contains('@') {
        return full;
    }
    let repo = full
        .split('@')
        .next()
        .map(|n| match n.rsplit_once(':') {
            Some((r, tag)) if !tag.contains('/') => r.to_string(),
            _ => n.to_string(),
        })
        .unwrap_or_default();
    format!("{repo}@sha256:{}", hex64(&full))
}

/// QoS class as the API server computes it at create (pkg/apis/core/helper/qos): BestEffort
/// without any cpu/memory request or limit, Guaranteed when every container limits both and
/// requests (defaulted to the limits) equal them, Burstable otherwise. Quantities are compared
/// as written ("500m" and "0.5" count as different: good enough for fixtures and the plugin).
pub fn qos_class(pod: &Value) -> &'static str {
    let all: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|k| pod["spec"][*k].as_array().into_iter().flatten())
        .collect();
    let res = |c: &Value, kind: &str, r: &str| {
        c["resources"][kind][r]
            .as_str()
            .map(str::to_string)
            .or_else(|| c["resources"][kind][r].as_f64().map(|n| n.to_string()))
    };
    let any = all.iter().any(|c| {
        ["requests", "limits"]
            .iter()
            .any(|k| ["cpu", "memory"].iter().any(|r| res(c, k, r).is_some()))
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = all.iter().all(|c| {
        ["cpu", "memory"].iter().all(|r| match res(c, "limits", r) {
            Some(l) => res(c, "requests", r).is_none_or(|q| q == l),
            None => false,
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn base(pod: &Value, run: &RunInfo, phase: &str) -> Value {
    let mut s = json!({
        "phase": phase,
        "hostIP": run.host_ip,
        "hostIPs": [{"ip": run.host_ip}],
        "podIP": run.pod_ip,
        "podIPs": [{"ip": run.pod_ip}],
        "startTime": run.start_time,
    });
    s["qosClass"] = pod["status"]["qosClass"].clone();
    if s["qosClass"].is_null() {
        s["qosClass"] = json!(qos_class(pod));
    }
    s
}

pub(crate) fn cond(
    kind: &str,
    status: bool,
    at: &str,
    reason: Option<&str>,
    message: Option<&str>,
) -> Value {
    let mut c = json!({"type": kind, "status": if status { "True" } else { "False" },
                       "lastProbeTime": null, "lastTransitionTime": at});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

/// The five conditions of a kubelet: sandbox, init, readiness, containers, scheduled.
fn conditions(pod: &Value, run: &RunInfo, ready: bool, sandbox: bool, done: bool) -> Value {
    let now = store::now_rfc3339();
    let names: Vec<String> = containers(pod).into_iter().map(|(n, _)| n).collect();
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    let (reason, message) = match (ready, done) {
        (true, _) => (None, None),
        (false, true) => (Some("PodCompleted"), None),
        (false, false) => (Some("ContainersNotReady"), Some(unready.as_str())),
    };
    json!([
        cond("PodReadyToStartContainers", sandbox, &now, None, None),
        cond(
            "Initialized",
            true,
            &run.start_time,
            done.then_some("PodCompleted"),
            None
        ),
        cond("Ready", ready, &now, reason, message),
        cond("ContainersReady", ready, &now, reason, message),
        cond("PodScheduled", true, &run.start_time, None, None),
    ])
}

/// The status of every container but the first, which the fake never runs (said plainly rather
/// than pretending they ran).
fn not_run(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image, "imageID": "", "ready": false, "started": false,
           "restartCount": 0, "lastState": {},
           "state": {"waiting": {"reason": "NotSupported",
                                 "message": "etcdnet-fakeapi runs only a pod's first container"}}})
}

fn with_first(pod: &Value, first: impl Fn(&str, &str) -> Value) -> Value {
    let cs: Vec<Value> = containers(pod)
        .iter()
        .enumerate()
        .map(|(i, (n, img))| {
            if i == 0 {
                first(n, img)
            } else {
                not_run(n, img)
            }
        })
        .collect();
    json!(cs)
}

/// Pending, the sandbox up, the first container waiting with `reason` (ContainerCreating,
/// ErrImagePull, ImagePullBackOff) and an optional message.
pub fn waiting(pod: &Value, run: &RunInfo, reason: &str, message: Option<&str>) -> Value {
    let mut s = base(pod, run, "Pending");
    s["conditions"] = conditions(pod, run, false, true, false);
    s["containerStatuses"] = with_first(pod, |n, img| {
        let mut w = json!({"reason": reason});
        if let Some(m) = message {
            w["message"] = json!(m);
        }
        json!({"name": n, "image": img, "imageID": "", "ready": false, "started": false,
               "restartCount": 0, "lastState": {}, "state": {"waiting": w}})
    });
    s
}

/// Running and Ready: the first container started at `started_at`.
pub fn running(pod: &Value, run: &RunInfo, started_at: &str) -> Value {
    let mut s = base(pod, run, "Running");
    s["conditions"] = conditions(pod, run, true, true, false);
    s["containerStatuses"] = with_first(pod, |n, img| {
        json!({"name": n, "image": img, "imageID": image_id(img), "containerID": container_id(pod, n),
               "ready": true, "started": true, "restartCount": 0, "lastState": {},
               "state": {"running": {"startedAt": started_at}}})
    });
    s
}

/// Succeeded (exit 0, no pod reason) or Failed, the first container terminated.
pub fn terminated(pod: &Value, run: &RunInfo, end: &Ending) -> Value {
    let ok = end.exit_code == 0 && end.pod_reason.is_none();
    let mut s = base(pod, run, if ok { "Succeeded" } else { "Failed" });
    s["conditions"] = conditions(pod, run, false, false, true);
    if let Some((reason, message)) = &end.pod_reason {
        s["reason"] = json!(reason);
        s["message"] = json!(message);
    }
    s["containerStatuses"] = with_first(pod, |n, img| {
        let mut t = json!({"exitCode": end.exit_code, "reason": end.reason,
                           "finishedAt": end.finished_at, "containerID": container_id(pod, n)});
        t["startedAt"] = end.started_at.as_ref().map_or(Value::Null, |s| json!(s));
        if let Some(m) = &end.message {
            t["message"] = json!(m);
        }
        // ContainerStatusUnknown: the container never existed, so neither did its image.
        let image_id = if end.reason == "ContainerStatusUnknown" {
            String::new()
        } else {
            image_id(img)
        };
        json!({"name": n, "image": img, "imageID": image_id,
               "containerID": container_id(pod, n), "ready": false, "started": false,
               "restartCount": 0, "lastState": {}, "state": {"terminated": t}})
    });
    s
}

/// Writes a pod's status if the pod with this uid still exists (a pod deleted and created again
/// under the same name is another pod); false once it is gone. Watchers see MODIFIED.
pub fn update(shared: &Arc<Shared>, ns: &str, name: &str, uid: &str, status: Value) -> bool {
    let mut st = shared.store.lock().unwrap();
    let Some(def) = st.registry.lookup("", "v1", "pods") else {
        return false;
    };
    let Some(mut pod) = st.get(&def, ns, name).cloned() else {
        return false;
    };
    if store::meta_str(&pod, "uid") != uid {
        return false;
    }
    pod["status"] = status;
    pod["metadata"]["resourceVersion"] = json!("");
    st.update(&def, pod).is_ok()
}

/// The stored pod with this uid, if it still exists.
pub fn current(shared: &Arc<Shared>, ns: &str, name: &str, uid: &str) -> Option<Value> {
    let st = shared.store.lock().unwrap();
    let def = st.registry.lookup("", "v1", "pods")?;
    st.get(&def, ns, name)
        .filter(|p| store::meta_str(p, "uid") == uid)
        .cloned()
}

/// Records a core/v1 Event about the pod as a kubelet on `host` does (`kubectl describe` shows it).
pub fn event(
    shared: &Arc<Shared>,
    pod: &Value,
    kind: &str,
    reason: &str,
    message: &str,
    host: &str,
) {
    record(shared, pod, kind, reason, message, "kubelet", Some(host))
}

/// Records a core/v1 Event about the pod from a control-plane `component` (`default-scheduler`:
/// no host, no container).
pub fn event_from(
    shared: &Arc<Shared>,
    pod: &Value,
    kind: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    record(shared, pod, kind, reason, message, component, None)
}

fn record(
    shared: &Arc<Shared>,
    pod: &Value,
    kind: &str,
    reason: &str,
    message: &str,
    component: &str,
    host: Option<&str>,
) {
    let now = store::now_rfc3339();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let (ns, name) = (store::namespace(pod), store::name(pod));
    let first = containers(pod).into_iter().next().map(|(n, _)| n);
    let mut involved = json!({"kind": "Pod", "namespace": ns, "name": name, "apiVersion": "v1",
                              "uid": store::meta_str(pod, "uid"),
                              "resourceVersion": store::meta_str(pod, "resourceVersion")});
    if let Some(c) = first.filter(|_| reason != "DeadlineExceeded" && host.is_some()) {
        involved["fieldPath"] = json!(format!("spec.containers{{{c}}}"));
    }
    let ev = json!({
        "apiVersion": "v1", "kind": "Event",
        // client-go's recorder names events <object>.<hex nanoseconds>.
        "metadata": {"name": format!("{name}.{nanos:x}"), "namespace": ns},
        "involvedObject": involved,
        "reason": reason, "message": message, "type": kind,
        "source": {"component": component, "host": host},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "eventTime": null, "reportingComponent": component,
        "reportingInstance": host.unwrap_or(component),
    });
    let mut st = shared.store.lock().unwrap();
    if let Some(def) = st.registry.lookup("", "v1", "events") {
        if let Ok(ev) = store::normalize(&def, ev, false) {
            // A duplicate name (two events in the same nanosecond) is dropped, as a recorder
            // would merge it.
            let _ = st.create(&def, ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_normalize_like_containerd() {
        assert_eq!(
            normalize_image("busybox"),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            normalize_image("busybox:1.36"),
            "docker.io/library/busybox:1.36"
        );
        assert_eq!(
            normalize_image("docker.io/library/busybox:1.36"),
            "docker.io/library/busybox:1.36"
        );
        assert_eq!(
            normalize_image("vmware/etcd"),
            "docker.io/vmware/etcd:latest"
        );
        assert_eq!(
            normalize_image("localhost:5000/probe"),
            "localhost:5000/probe:latest"
        );
        assert_eq!(
            normalize_image("a@sha256:00"),
            "docker.io/library/a@sha256:00"
        );
        assert_eq!(
            normalize_image("busybox:1.36@sha256:00"),
            "docker.io/library/busybox@sha256:00"
        );
        assert_eq!(
            normalize_image("localhost:5000/probe:1@sha256:00"),
            "localhost:5000/probe@sha256:00"
        );
        assert!(image_id("busybox:1.36").starts_with("docker.io/library/busybox@sha256:"));
    }

    #[test]
    fn qos_classes() {
        let pod = |res: Value| json!({"spec": {"containers": [{"name": "c", "resources": res}]}});
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "10m", "memory": "32Mi"},
                                  "limits": {"cpu": "500m", "memory": "256Mi"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
    }
}
