//! Request entry point: records every request, then routes it by path the way
//! kube-apiserver lays out its URL space.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::discovery;
use crate::handlers::{self, ResourceRequest};
use crate::server::{Request, Shared};
use crate::status::{json_response, ApiError};

/// Decoded query parameters. A repeated parameter keeps its first value, as
/// Go's `url.Values.Get` does.
pub type Query = BTreeMap<String, String>;

fn parse_query(q: &str) -> Query {
    let mut out = Query::new();
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    out
}

/// The one axum handler: everything goes through here.
pub async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let raw_query = uri.query().unwrap_or("").to_string();
    let request = Request {
        method: method.to_string(),
        path: path.clone(),
        query: raw_query.clone(),
        body: (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned()),
    };
    crate::server::log_request(&shared, &request);
    shared.requests.lock().unwrap().push(request);
    let query = parse_query(&raw_query);
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();

    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let reg = || shared.store.lock().unwrap().registry.clone();
    match segs.as_slice() {
        ["version"] => json_response(StatusCode::OK, &shared.version),
        [check @ ("healthz" | "livez" | "readyz"), ..] => {
            health(check, query.contains_key("verbose"))
        }
        ["api"] if shared.aggregated && discovery::wants_aggregated(&accept) => {
            aggregated(discovery::aggregated(&reg(), true))
        }
        ["api"] => json_response(
            StatusCode::OK,
            &discovery::core_versions(&shared.addr.to_string()),
        ),
        ["apis"] if shared.aggregated && discovery::wants_aggregated(&accept) => {
            aggregated(discovery::aggregated(&reg(), false))
        }
        ["apis"] => json_response(StatusCode::OK, &discovery::group_list(&reg())),
        ["api", v] => discovery::resource_list(&reg(), "", v)
            .map(|d| json_response(StatusCode::OK, &d))
            .unwrap_or_else(|| ApiError::no_route().into_response()),
        ["apis", g] => discovery::group(&reg(), g)
            .map(|d| json_response(StatusCode::OK, &d))
            .unwrap_or_else(|| ApiError::no_route().into_response()),
        ["apis", g, v] => discovery::resource_list(&reg(), g, v)
            .map(|d| json_response(StatusCode::OK, &d))
            .unwrap_or_else(|| ApiError::no_route().into_response()),
        ["api", v, rest @ ..] => {
            resource(
                &shared,
                "",
                v,
                rest,
                method,
                query,
                accept,
                content_type,
                body,
            )
            .await
        }
        ["apis", g, v, rest @ ..] => {
            resource(
                &shared,
                g,
                v,
                rest,
                method,
                query,
                accept,
                content_type,
                body,
            )
            .await
        }
        _ => ApiError::no_route().into_response(),
    }
}

fn aggregated(v: serde_json::Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, discovery::AGGREGATED_CONTENT_TYPE)],
        v.to_string(),
    )
        .into_response()
}

/// `/readyz` and friends answer plain text, as the real server does.
fn health(check: &str, verbose: bool) -> Response {
    let body = if verbose {
        format!("[+]ping ok\n[+]log ok\n[+]etcd ok\n{check} check passed\n")
    } else {
        "ok".to_string()
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// (namespace, plural, name, subresource) of a resource path.
type ResourcePath = (Option<String>, String, Option<String>, Option<String>);

/// Splits the part of a path after `/api/v1` or `/apis/g/v` into
/// (namespace, plural, name, subresource).
fn split_resource_path(group: &str, rest: &[&str]) -> Option<ResourcePath> {
    let s = |x: &&str| x.to_string();
    match rest {
        // The namespace object's own subresources: /api/v1/namespaces/{name}/status
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            Some((None, "namespaces".into(), Some(s(name)), Some(s(sub))))
        }
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => Some((
            Some(s(ns)),
            s(plural),
            tail.first().map(s),
            tail.get(1).map(s),
        )),
        [plural, tail @ ..] if tail.len() <= 2 => {
            Some((None, s(plural), tail.first().map(s), tail.get(1).map(s)))
        }
        _ => None,
    }
}

/// The RBAC verb of a request.
fn verb_of(method: &Method, name: Option<&str>, query: &Query) -> &'static str {
    let watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    match (method.as_str(), name) {
        ("GET", _) if watch => "watch",
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", Some(_)) => "delete",
        ("DELETE", None) => "deletecollection",
        _ => "unknown",
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    shared: &Arc<Shared>,
    group: &str,
    version: &str,
    rest: &[&str],
    method: Method,
    query: Query,
    accept: String,
    content_type: String,
    body: Bytes,
) -> Response {
    let Some((namespace, plural, name, sub)) = split_resource_path(group, rest) else {
        return ApiError::no_route().into_response();
    };
    let verb = verb_of(&method, name.as_deref(), &query);
    let rbac_resource = match &sub {
        Some(s) => format!("{plural}/{s}"),
        None => plural.clone(),
    };
    // The namespace the authorizer sees: a Namespace by name (and its status/finalize) is in
    // itself, as a real API server's RequestInfo has it (k8s.io/apiserver
    // pkg/endpoints/request/requestinfo.go), so a Role there grants `get` on its own Namespace.
    let rbac_namespace = match (&namespace, &name) {
        (None, Some(n)) if group.is_empty() && plural == "namespaces" => Some(n.clone()),
        _ => namespace.clone(),
    };
    shared.accesses.lock().unwrap().push(crate::server::Access {
        verb: verb.to_string(),
        group: group.to_string(),
        resource: rbac_resource.clone(),
        namespace: rbac_namespace.clone(),
    });
    // Authorization comes before routing on a real server: a denied user gets
    // 403 even for a resource that does not exist.
    let denied = shared.forbidden.lock().unwrap().iter().any(|r| {
        r.matches(
            verb,
            group,
            &rbac_resource,
            rbac_namespace.as_deref(),
            name.as_deref(),
        )
    });
    if denied {
        return ApiError::forbidden(
            &shared.user,
            verb,
            group,
            &plural,
            sub.as_deref(),
            rbac_namespace.as_deref(),
            name.as_deref(),
        )
        .into_response();
    }
    let def = shared
        .store
        .lock()
        .unwrap()
        .registry
        .lookup(group, version, &plural);
    let Some(def) = def else {
        return ApiError::no_route().into_response();
    };
    // A namespaced resource has no per-name route outside a namespace, and a
    // cluster-scoped one has no route inside one.
    if (def.namespaced && namespace.is_none() && name.is_some())
        || (!def.namespaced && namespace.is_some())
    {
        return ApiError::no_route().into_response();
    }
    if let Some(s) = &sub {
        if !def.subresources.contains(s) {
            return ApiError::no_route().into_response();
        }
    }
    let req = ResourceRequest {
        def,
        namespace,
        name,
        sub,
        query,
        accept,
        content_type,
        body,
    };
    let result = match (method.as_str(), verb) {
        (_, "watch") => return crate::watch::serve(shared.clone(), req).await,
        ("GET", "get") => handlers::get(shared, &req),
        ("GET", "list") => handlers::list(shared, &req),
        ("POST", _) if req.def.group.is_empty() && req.def.plural == "pods" => {
            let delay = *shared.pod_create_delay.lock().unwrap();
            match delay {
                // On a task of its own, so that a client hanging up (which drops this
                // handler) does not stop the write.
                Some(d) => {
                    let shared = shared.clone();
                    let done = tokio::spawn(async move {
                        tokio::time::sleep(d).await;
                        handlers::create(&shared, &req).map_err(IntoResponse::into_response)
                    });
                    return match done.await {
                        Ok(Ok(r)) | Ok(Err(r)) => r,
                        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    };
                }
                None => handlers::create(shared, &req),
            }
        }
        ("POST", _) => handlers::create(shared, &req),
        ("PUT", _) => handlers::update(shared, &req),
        ("PATCH", _) => handlers::patch(shared, &req),
        ("DELETE", "delete") => handlers::delete(shared, &req),
        ("DELETE", "deletecollection") => handlers::delete_collection(shared, &req),
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_paths() {
        assert_eq!(
            split_resource_path("", &["namespaces", "ns1", "pods", "p", "log"]),
            Some((
                Some("ns1".into()),
                "pods".into(),
                Some("p".into()),
                Some("log".into())
            ))
        );
        assert_eq!(
            split_resource_path("", &["namespaces", "ns1"]),
            Some((None, "namespaces".into(), Some("ns1".into()), None))
        );
        assert_eq!(
            split_resource_path("", &["namespaces", "ns1", "status"]),
            Some((
                None,
                "namespaces".into(),
                Some("ns1".into()),
                Some("status".into())
            ))
        );
        assert_eq!(
            split_resource_path("x", &["namespaces", "ns1", "machines"]),
            Some((Some("ns1".into()), "machines".into(), None, None))
        );
        assert_eq!(
            split_resource_path("x", &["machines"]),
            Some((None, "machines".into(), None, None))
        );
        assert_eq!(split_resource_path("x", &["a", "b", "c", "d"]), None);
    }

    #[test]
    fn first_query_value_wins() {
        let q = parse_query("labelSelector=a%3Db%2Cc&watch=1&watch=0");
        assert_eq!(q["labelSelector"], "a=b,c");
        assert_eq!(q["watch"], "1");
    }
}
