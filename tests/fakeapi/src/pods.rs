//! Pods through the API: admission, and what happens once one is created or deleted.
//!
//! A pod pinned to a node of an attached lab is run for real by the lab kubelet
//! ([`crate::kubelet`]). Otherwise nothing executes, but a test can make a created pod go
//! Pending -> Running -> Succeeded/Failed with a log, as a kubelet would report it (a
//! [`PodScript`] from the reactor of [`crate::FakeApi::on_pod_created`]), so pod-based code
//! paths (create, watch, read log, delete) can be exercised end to end.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::podstatus::{self, Ending, RunInfo};
use crate::server::Shared;
use crate::status::ApiError;
use crate::store::{self, now_rfc3339};

/// The node address scripted pods report (they run on no real node).
const HOST_IP: &str = "198.18.100.1";

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
    /// A pod that prints round after round while it runs (`--watch`'s kept jumpbox: the
    /// plugin's `src/route/jumpbox/jumpbox.sh` with `ETCDNET_ROUNDS_EVERY`); None: `log` alone.
    pub rounds: Option<Rounds>,
}

/// What a pod that runs rounds prints: `round(n)` appended to its log once it runs and then
/// every `every`, until it is deleted (its `finish_after` is not used). `jumpbox.sh`'s loop:
/// one round's sections and `ETCDNET-ROUND-END <nonce> <n>`, then `sleep EVERY`, again.
#[derive(Clone)]
pub struct Rounds {
    pub every: Duration,
    pub round: Arc<dyn Fn(u64) -> String + Send + Sync>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("every", &self.every)
            .finish()
    }
}

impl Default for PodScript {
    fn default() -> Self {
        PodScript {
            log: String::new(),
            exit_code: 0,
            run_after: Duration::from_millis(50),
            finish_after: Some(Duration::from_millis(50)),
            pod_ip: "198.18.100.10".into(),
            rounds: None,
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

/// Pod Security admission for a pod about to be created (see [`crate::psa`]): Err is the 403,
/// Ok may carry a `Warning` header value.
pub fn admit(shared: &Arc<Shared>, pod: &Value) -> Result<Option<String>, ApiError> {
    let labels = {
        let st = shared.store.lock().unwrap();
        st.registry
            .lookup("", "v1", "namespaces")
            .and_then(|d| st.get(&d, "", &store::namespace(pod)).map(store::labels))
            .unwrap_or_default()
    };
    let warning = crate::psa::admit(&labels, pod)?;
    // A validating admission webhook runs after the built-in plugins (Pod Security is one) and
    // its denial is the API server's answer: kubernetes staging/src/k8s.io/apiserver/pkg/admission/
    // plugin/webhook/errors/statuserror.go (`ToStatusErr`: "admission webhook %q denied the
    // request: <its message>", the webhook's own code, at least 400); a controller-runtime
    // webhook's `admission.Denied` answers 403 Forbidden (sigs.k8s.io/controller-runtime
    // pkg/webhook/admission/response.go).
    if let Some((webhook, message)) = shared.pod_denial.lock().unwrap().clone() {
        return Err(ApiError {
            code: 403,
            reason: "Forbidden",
            message: format!("admission webhook \"{webhook}\" denied the request: {message}"),
            details: None,
        });
    }
    Ok(warning)
}

/// kube-scheduler's answer to a pod no node can take, within its first scheduling attempt:
/// kubernetes pkg/scheduler/schedule_one.go (`handleSchedulingFailure`: the pod's condition
/// `PodScheduled` False with reason `Unschedulable` (`v1.PodReasonUnschedulable`) and the
/// FitError's message, and a Warning event `FailedScheduling` from `default-scheduler` with the
/// same message); the pod stays Pending, no node, no container status.
pub fn unschedulable(shared: &Arc<Shared>, pod: &Value, message: &str) {
    let (ns, name, uid) = (
        store::namespace(pod),
        store::name(pod),
        store::meta_str(pod, "uid"),
    );
    let (shared, pod, message) = (shared.clone(), pod.clone(), message.to_string());
    tokio::spawn(async move {
        // The scheduler's first attempt follows the pod's creation closely.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = now_rfc3339();
        let status = serde_json::json!({
            "phase": "Pending",
            "conditions": [podstatus::cond("PodScheduled", false, &now, Some("Unschedulable"),
                                           Some(&message))],
            "qosClass": podstatus::qos_class(&pod),
        });
        if podstatus::update(&shared, &ns, &name, &uid, status) {
            podstatus::event_from(
                &shared,
                &pod,
                "Warning",
                "FailedScheduling",
                &message,
                "default-scheduler",
            );
        }
    });
}

/// Called after a Pod is created through the API: the lab kubelet takes it if it is pinned to
/// one of its nodes, else the test's reactor decides.
pub fn on_created(shared: &Arc<Shared>, pod: &Value) {
    shared
        .created_pods
        .lock()
        .unwrap()
        .push((store::namespace(pod), store::name(pod)));
    // A pod no node can take never reaches a kubelet (a vSphere Pod on a VDS Supervisor).
    let no_node = shared.unschedulable.lock().unwrap().clone();
    if let Some(message) = no_node.filter(|_| pod["spec"]["nodeName"].as_str().is_none()) {
        unschedulable(shared, pod, &message);
        return;
    }
    // Nothing takes a pod without a node (FakeApi::leave_vsphere_pods_pending): it stays as
    // created, the least a Supervisor with vSphere Pods off may do.
    if *shared.vsphere_pods_pending.lock().unwrap() && pod["spec"]["nodeName"].as_str().is_none() {
        return;
    }
    let kubelet = shared.kubelet.lock().unwrap().clone();
    if kubelet.is_some_and(|k| k.admit(shared, pod)) {
        return;
    }
    let reactor = shared.pod_reactor.lock().unwrap().clone();
    let Some(script) = reactor.and_then(|r| r(pod)) else {
        return;
    };
    // A scripted pod "runs on a node" too: an image that node cannot pull never runs.
    if crate::kubelet::pull_refused_detached(shared, pod, HOST_IP, &script.pod_ip) {
        return;
    }
    let (ns, name, uid) = (
        store::namespace(pod),
        store::name(pod),
        store::meta_str(pod, "uid"),
    );
    let (shared, pod) = (shared.clone(), pod.clone());
    tokio::spawn(async move {
        let run = RunInfo {
            host_ip: HOST_IP.into(),
            pod_ip: script.pod_ip.clone(),
            start_time: now_rfc3339(),
        };
        // Bound at once, as a scheduler binds a pod it can place: the binding writes
        // `PodScheduled` True (kubernetes pkg/registry/core/pod/storage/storage.go,
        // `setPodHostAndAnnotations`); the pod then waits Pending for `run_after`.
        let bound = serde_json::json!({
            "phase": "Pending",
            "conditions": [podstatus::cond("PodScheduled", true, &run.start_time, None, None)],
            "qosClass": podstatus::qos_class(&pod),
        });
        if !podstatus::update(&shared, &ns, &name, &uid, bound) {
            return;
        }
        tokio::time::sleep(script.run_after).await;
        let started = now_rfc3339();
        shared
            .store
            .lock()
            .unwrap()
            .pod_logs
            .insert((ns.clone(), name.clone()), script.log.clone());
        if !podstatus::update(
            &shared,
            &ns,
            &name,
            &uid,
            podstatus::running(&pod, &run, &started),
        ) {
            return;
        }
        if let Some(r) = &script.rounds {
            // Round after round while the pod exists (deleting it drops its log).
            for n in 0.. {
                {
                    let mut st = shared.store.lock().unwrap();
                    let Some(log) = st.pod_logs.get_mut(&(ns.clone(), name.clone())) else {
                        return;
                    };
                    log.push_str(&(r.round)(n));
                }
                tokio::time::sleep(r.every).await;
            }
            return;
        }
        if let Some(after) = script.finish_after {
            tokio::time::sleep(after).await;
            let end = Ending {
                exit_code: script.exit_code,
                reason: if script.exit_code == 0 {
                    "Completed"
                } else {
                    "Error"
                }
                .into(),
                message: None,
                started_at: Some(started),
                finished_at: now_rfc3339(),
                pod_reason: None,
            };
            podstatus::update(
                &shared,
                &ns,
                &name,
                &uid,
                podstatus::terminated(&pod, &run, &end),
            );
        }
    });
}

/// Called after a Pod is deleted through the API: its process (if the lab kubelet runs it) is
/// killed at once.
pub fn on_deleted(shared: &Arc<Shared>, obj: &Value) {
    if store::kind(obj) != "Pod" || store::api_version(obj) != "v1" {
        return;
    }
    if let Some(k) = shared.kubelet.lock().unwrap().clone() {
        k.deleted(
            &store::namespace(obj),
            &store::name(obj),
            &store::meta_str(obj, "uid"),
        );
    }
}
