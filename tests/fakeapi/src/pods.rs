//! Pods that "run": nothing executes in the fake, but a test can make a created
//! Pod go Pending -> Running -> Succeeded/Failed with a log, as a kubelet would
//! report it, so pod-based code paths (create, watch, read log, delete) can be
//! exercised end to end.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::server::Shared;
use crate::store::{self, now_rfc3339};

/// What a created Pod does, decided by the test's reactor.
#[derive(Debug, Clone)]
pub struct PodScript {
    /// The log served at pods/{name}/log once the Pod runs.
    pub log: String,
    /// Exit code of the first container: 0 ends Succeeded, anything else Failed.
    pub exit_code: i32,
    /// Time spent Pending before Running.
    pub run_after: Duration,
    /// Time spent Running before terminating; None keeps it Running.
    pub finish_after: Option<Duration>,
    pub pod_ip: String,
}

impl Default for PodScript {
    fn default() -> Self {
        PodScript {
            log: String::new(),
            exit_code: 0,
            run_after: Duration::from_millis(50),
            finish_after: Some(Duration::from_millis(50)),
            pod_ip: "198.18.100.10".into(),
        }
    }
}

impl PodScript {
    /// A Pod that runs briefly, prints `log` and exits 0.
    pub fn succeeds(log: impl Into<String>) -> Self {
        PodScript {
            log: log.into(),
            ..Default::default()
        }
    }

    /// A Pod that runs briefly, prints `log` and exits with `code`.
    pub fn fails(log: impl Into<String>, code: i32) -> Self {
        PodScript {
            log: log.into(),
            exit_code: code,
            ..Default::default()
        }
    }
}

/// Decides, per created Pod, whether and how it runs (None: stays Pending,
/// as a Pod that no node can take).
pub type PodReactor = Arc<dyn Fn(&Value) -> Option<PodScript> + Send + Sync>;

fn container_names(pod: &Value) -> Vec<(String, String)> {
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

fn running_status(pod: &Value, ip: &str, started: &str) -> Value {
    let cs: Vec<Value> = container_names(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({"name": name, "image": image, "imageID": "", "containerID": "containerd://0000000000000000000000000000000000000000000000000000000000000000",
                   "ready": true, "started": true, "restartCount": 0, "state": {"running": {"startedAt": started}}})
        })
        .collect();
    json!({
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "198.18.100.1",
        "startTime": started,
        "qosClass": "BestEffort",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": started},
            {"type": "Ready", "status": "True", "lastTransitionTime": started},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": started},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
        ],
        "containerStatuses": cs,
    })
}

fn terminated_status(pod: &Value, ip: &str, started: &str, code: i32) -> Value {
    let finished = now_rfc3339();
    let reason = if code == 0 { "Completed" } else { "Error" };
    let cs: Vec<Value> = container_names(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({"name": name, "image": image, "imageID": "", "containerID": "containerd://0000000000000000000000000000000000000000000000000000000000000000",
                   "ready": false, "started": false, "restartCount": 0,
                   "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}}})
        })
        .collect();
    json!({
        "phase": if code == 0 { "Succeeded" } else { "Failed" },
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "198.18.100.1",
        "startTime": started,
        "qosClass": "BestEffort",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": finished},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
        ],
        "containerStatuses": cs,
    })
}

/// Sets a Pod's status (if it still exists); returns false once it is gone.
fn set_status(
    shared: &Shared,
    ns: &str,
    name: &str,
    status: impl FnOnce(&Value) -> Value,
    log: Option<&str>,
) -> bool {
    let mut st = shared.store.lock().unwrap();
    let Some(def) = st.registry.lookup("", "v1", "pods") else {
        return false;
    };
    let Some(mut pod) = st.get(&def, ns, name).cloned() else {
        return false;
    };
    pod["status"] = status(&pod);
    if let Some(l) = log {
        st.pod_logs
            .insert((ns.to_string(), name.to_string()), l.to_string());
    }
    st.update(&def, pod).is_ok()
}

/// Called after a Pod is created through the API.
pub fn on_created(shared: &Arc<Shared>, pod: &Value) {
    let reactor = shared.pod_reactor.lock().unwrap().clone();
    let Some(script) = reactor.and_then(|r| r(pod)) else {
        return;
    };
    let (ns, name) = (store::namespace(pod), store::name(pod));
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(script.run_after).await;
        let started = now_rfc3339();
        if !set_status(
            &shared,
            &ns,
            &name,
            |p| running_status(p, &script.pod_ip, &started),
            Some(&script.log),
        ) {
            return;
        }
        if let Some(after) = script.finish_after {
            tokio::time::sleep(after).await;
            set_status(
                &shared,
                &ns,
                &name,
                |p| terminated_status(p, &script.pod_ip, &started, script.exit_code),
                None,
            );
        }
    });
}
