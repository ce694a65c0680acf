//! `GET pods/{name}/log`, answered as kube-apiserver and the kubelet behind it answer.
//!
//! The API server checks the container (`container "x" is not valid for pod "p"`, or which one
//! when there are several) and the node (`nodes "n" not found`); the kubelet refuses a container
//! that has not started (`container "probe" in pod "p" is waiting to start: ContainerCreating`,
//! `... image can't be pulled`) with 400, serves `tailLines` then `limitBytes`, and with
//! `follow=true` streams until the container stops. A pod no kubelet has reported on (no
//! `containerStatuses`) gets whatever a test stored with `set_pod_log`, as before, except with a
//! lab attached, where the API server would ask that node's kubelet and cannot reach it.
//! `timestamps`, `sinceSeconds` and `sinceTime` are accepted and ignored.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::handlers::ResourceRequest;
use crate::server::Shared;
use crate::status::ApiError;
use crate::store;

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// The container a log request is for (apiserver's validateContainer).
fn container(pod: &Value, asked: Option<&str>) -> Result<String, ApiError> {
    let name = store::name(pod);
    let spec = &pod["spec"];
    let regular = names(&spec["containers"]);
    match asked.filter(|c| !c.is_empty()) {
        Some(c) => {
            let all: Vec<String> = ["initContainers", "containers", "ephemeralContainers"]
                .iter()
                .flat_map(|k| names(&spec[*k]))
                .collect();
            if all.iter().any(|n| n == c) {
                Ok(c.to_string())
            } else {
                Err(ApiError::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
        }
        None => match regular.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => {
                let all: Vec<String> = ["initContainers", "containers", "ephemeralContainers"]
                    .iter()
                    .flat_map(|k| names(&spec[*k]))
                    .collect();
                Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                )))
            }
        },
    }
}

/// The kubelet's validateContainerLogStatus: Ok(true) if the container is running.
fn kubelet_check(pod: &Value, container: &str, previous: bool) -> Result<bool, ApiError> {
    let pod_name = store::name(pod);
    let statuses = ["containerStatuses", "initContainerStatuses"]
        .iter()
        .flat_map(|k| pod["status"][*k].as_array().into_iter().flatten())
        .collect::<Vec<_>>();
    let Some(cs) = statuses.iter().find(|s| s["name"] == container) else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is not available"
        )));
    };
    let state = &cs["state"];
    if previous {
        return if cs["lastState"]["terminated"]["containerID"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
        {
            Ok(false)
        } else {
            Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
            )))
        };
    }
    if !state["running"].is_null() {
        return Ok(true);
    }
    if !state["terminated"].is_null() {
        if state["terminated"]["containerID"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
        {
            return Ok(false);
        }
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is terminated"
        )));
    }
    let waiting = match state["waiting"]["reason"].as_str() {
        Some("ErrImagePull") => "image can't be pulled".to_string(),
        Some("ImagePullBackOff") => "trying and failing to pull image".to_string(),
        Some(r) => r.to_string(),
        None => {
            return Err(ApiError::bad_request(format!(
                "container \"{container}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
            )))
        }
    };
    Err(ApiError::bad_request(format!(
        "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {waiting}"
    )))
}

/// `tailLines` first, then `limitBytes` (cut on a character boundary), as the kubelet reads.
fn window(text: &str, tail: Option<usize>, limit: Option<usize>) -> String {
    let mut start = 0;
    if let Some(n) = tail {
        let body = text.strip_suffix('\n').unwrap_or(text);
        start = if n == 0 {
            text.len()
        } else {
            body.match_indices('\n')
                .map(|(i, _)| i + 1)
                .rev()
                .nth(n - 1)
                .unwrap_or(0)
        };
    }
    let out = &text[start..];
    match limit {
        Some(l) if l < out.len() => {
            let mut cut = l;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out[..cut].to_string()
        }
        _ => out.to_string(),
    }
}

fn param_usize(req: &ResourceRequest, key: &str) -> Result<Option<usize>, ApiError> {
    match req.query.get(key) {
        None => Ok(None),
        Some(v) => v.parse::<usize>().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "{key}: Invalid value: {v:?}: must be a non-negative integer"
            ))
        }),
    }
}

fn text_response(body: Body) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

pub fn serve(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let tail = param_usize(req, "tailLines")?;
    let limit = param_usize(req, "limitBytes")?;
    let follow = req
        .query
        .get("follow")
        .is_some_and(|v| v == "true" || v == "1");
    let previous = req
        .query
        .get("previous")
        .is_some_and(|v| v == "true" || v == "1");
    let kubelet = shared.kubelet.lock().unwrap().clone();
    let (pod, text, node_obj) = {
        let st = shared.store.lock().unwrap();
        let pod = st
            .get(&req.def, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&req.def, &name))?;
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        let node_obj = st
            .registry
            .lookup("", "v1", "nodes")
            .and_then(|d| st.get(&d, "", &node).cloned());
        let text = st.pod_logs.get(&(ns.clone(), name.clone())).cloned();
        (pod, text, node_obj)
    };
    let c = container(&pod, req.query.get("container").map(String::as_str))?;
    let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
    let reported = !pod["status"]["containerStatuses"].is_null();
    // With a lab attached the fake stands for a whole cluster: the API server looks the node
    // up, then asks that node's kubelet. (A pod without a node gets an empty stream from a real
    // server; here it gets what a test stored, which is empty unless the test said otherwise.)
    if let Some(k) = kubelet.as_ref().filter(|_| !node.is_empty()) {
        let Some(n) = node_obj else {
            let nodes = crate::resources::known("", "v1", "Node").expect("core kind");
            return Err(ApiError::not_found(&nodes, &node));
        };
        if !k.owns(&node) && !reported {
            let ip = n["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str())
                .unwrap_or(&node)
                .to_string();
            return Err(ApiError {
                code: 500,
                reason: "InternalError",
                message: format!(
                    "Get \"https://{ip}:10250/containerLogs/{ns}/{name}/{c}\": dial tcp {ip}:10250: connect: no route to host"
                ),
                details: None,
            });
        }
    }
    let running = if reported {
        kubelet_check(&pod, &c, previous)?
    } else {
        false
    };
    // Only the first container runs, so only it has output.
    let first = crate::podstatus::containers(&pod)
        .first()
        .map(|(n, _)| n.clone());
    let text = if first.as_deref() == Some(c.as_str()) {
        text.unwrap_or_default()
    } else {
        String::new()
    };
    let initial = window(&text, tail, limit);
    if !(follow && running) || limit.is_some() {
        return Ok(text_response(Body::from(initial)));
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    let (shared, uid) = (shared.clone(), store::meta_str(&pod, "uid"));
    tokio::spawn(async move {
        if tx.send(Ok(Bytes::from(initial))).await.is_err() {
            return;
        }
        let mut sent = text.len();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (more, still_running) = {
                let st = shared.store.lock().unwrap();
                let pod = st
                    .registry
                    .lookup("", "v1", "pods")
                    .and_then(|d| st.get(&d, &ns, &name).cloned())
                    .filter(|p| store::meta_str(p, "uid") == uid);
                let log = st.pod_logs.get(&(ns.clone(), name.clone()));
                let more = log
                    .map(|l| l[sent.min(l.len())..].to_string())
                    .unwrap_or_default();
                let running = pod.is_some_and(|p| {
                    p["status"]["containerStatuses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|s| s["name"] == c && !s["state"]["running"].is_null())
                });
                (more, running)
            };
            if !more.is_empty() {
                sent += more.len();
                if tx.send(Ok(Bytes::from(more))).await.is_err() {
                    return;
                }
            }
            // The final status is written after the log is drained: nothing comes later.
            if !still_running {
                return;
            }
        }
    });
    Ok(text_response(Body::from_stream(ReceiverStream::new(rx))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tail_then_limit() {
        let t = "a\nb\nc\n";
        assert_eq!(window(t, None, None), t);
        assert_eq!(window(t, Some(2), None), "b\nc\n");
        assert_eq!(window(t, Some(5), None), t);
        assert_eq!(window(t, Some(0), None), "");
        assert_eq!(window("a\nb", Some(1), None), "b");
        assert_eq!(window(t, Some(2), Some(3)), "b\nc");
        assert_eq!(window("é", None, Some(1)), "");
    }

    #[test]
    fn containers_are_checked_like_the_api_server() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            container(&pod, None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [a b]"
        );
        assert_eq!(
            container(&pod, Some("x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
        assert_eq!(container(&pod, Some("b")).unwrap(), "b");
    }

    #[test]
    fn waiting_containers_have_no_log_yet() {
        let pod = |w: Value| {
            json!({"metadata": {"name": "p"}, "status": {"containerStatuses": [
                {"name": "probe", "state": {"waiting": w}}]}})
        };
        let msg = |w| kubelet_check(&pod(w), "probe", false).unwrap_err().message;
        assert_eq!(
            msg(json!({"reason": "ContainerCreating"})),
            "container \"probe\" in pod \"p\" is waiting to start: ContainerCreating"
        );
        assert_eq!(
            msg(json!({"reason": "ErrImagePull"})),
            "container \"probe\" in pod \"p\" is waiting to start: image can't be pulled"
        );
        assert_eq!(
            msg(json!({"reason": "ImagePullBackOff"})),
            "container \"probe\" in pod \"p\" is waiting to start: trying and failing to pull image"
        );
    }
}
