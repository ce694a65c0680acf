//! `?watch=true`: a stream of newline-delimited `{"type":..,"object":..}` events.
//!
//! Semantics follow the real server:
//! - resourceVersion unset or "0": the current objects as ADDED, then changes;
//! - resourceVersion N: every change after N (the fake keeps all history);
//! - sendInitialEvents=true: the current objects as ADDED, then a BOOKMARK
//!   annotated `k8s.io/initial-events-end: "true"` (watch-list);
//! - a modification that makes an object start or stop matching the selector
//!   is sent as ADDED or DELETED;
//! - the stream ends after timeoutSeconds (default 1800 s).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::handlers::{check_version, Filter, ResourceRequest};
use crate::resources::ResourceDef;
use crate::server::Shared;
use crate::status::ApiError;
use crate::store::{Change, ChangeKind};

fn line(kind: &str, obj: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": obj}).to_string();
    s.push('\n');
    Bytes::from(s)
}

/// Encodes events; for `kubectl get -w` (Accept as=Table) each object is a
/// one-row Table, with column definitions on the first one only, as upstream does.
struct Encoder {
    def: ResourceDef,
    table: bool,
    columns_sent: bool,
}

impl Encoder {
    fn encode(&mut self, kind: &str, obj: &Value) -> Bytes {
        if !self.table || kind == "BOOKMARK" || kind == "ERROR" {
            return line(kind, obj);
        }
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        let mut t = crate::table::table(&self.def, std::slice::from_ref(obj), rv);
        if self.columns_sent {
            t["columnDefinitions"] = json!([]);
        }
        self.columns_sent = true;
        line(kind, &t)
    }
}

fn bookmark(def: &ResourceDef, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": meta}),
    )
}

/// The event a watcher with this filter sees for a change, if any.
fn event_for(
    def: &ResourceDef,
    ns: Option<&str>,
    filter: &Filter,
    c: &Change,
) -> Option<(&'static str, Value)> {
    if c.group != def.group || c.plural != def.plural || ns.is_some_and(|n| n != c.namespace) {
        return None;
    }
    let now = filter.matches(&c.obj);
    let kind = match c.kind {
        ChangeKind::Added | ChangeKind::Deleted if now => c.kind.as_str(),
        ChangeKind::Modified => match (c.old.as_ref().is_some_and(|o| filter.matches(o)), now) {
            (true, true) => "MODIFIED",
            (false, true) => "ADDED",
            (true, false) => "DELETED",
            (false, false) => return None,
        },
        _ => return None,
    };
    // An object at a version the watch was not opened at cannot be converted.
    if check_version(def, &c.obj).is_err() {
        return Some((
            "ERROR",
            ApiError::no_conversion(def, c.obj["apiVersion"].as_str().unwrap_or("")).to_value(),
        ));
    }
    Some((kind, c.obj.clone()))
}

pub async fn serve(shared: Arc<Shared>, req: ResourceRequest) -> Response {
    match start(shared, req) {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn start(shared: Arc<Shared>, req: ResourceRequest) -> Result<Response, ApiError> {
    let filter = Filter::from_query(&req.def, &req.query)?;
    let q = |k: &str| req.query.get(k).map(String::as_str).unwrap_or("");
    let send_initial = q("sendInitialEvents") == "true";
    if send_initial
        && (q("resourceVersionMatch") != "NotOlderThan" || q("allowWatchBookmarks") != "true")
    {
        return Err(ApiError {
            code: 422,
            reason: "Invalid",
            message: "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled and resourceVersionMatch is NotOlderThan and allowWatchBookmarks is true".into(),
            details: None,
        });
    }
    let rv_param = q("resourceVersion").to_string();
    let timeout = q("timeoutSeconds")
        .parse::<u64>()
        .ok()
        .filter(|t| *t > 0)
        .unwrap_or(1800);

    let (initial, backlog, live, current) = {
        let store = shared.store.lock().unwrap();
        let current = store.resource_version();
        let snapshot = send_initial || rv_param.is_empty() || rv_param == "0";
        let after = if snapshot {
            current
        } else {
            rv_param.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv_param:?}"))
            })?
        };
        let initial: Vec<Value> = if snapshot {
            store
                .list(&req.def, req.namespace.as_deref())
                .into_iter()
                .filter(|o| filter.matches(o))
                .collect()
        } else {
            Vec::new()
        };
        for o in &initial {
            check_version(&req.def, o)?;
        }
        let (backlog, live) = store.subscribe(after);
        (initial, backlog, live, current)
    };

    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let def = req.def.clone();
    let ns = req.namespace.clone();
    tokio::spawn(pump(
        def,
        ns,
        filter,
        initial,
        send_initial,
        backlog,
        live,
        current,
        Duration::from_secs(timeout),
        crate::table::wants_table(&req.accept),
        tx,
    ));
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(ReceiverStream::new(rx)),
    )
        .into_response())
}

#[allow(clippy::too_many_arguments)]
async fn pump(
    def: ResourceDef,
    ns: Option<String>,
    filter: Filter,
    initial: Vec<Value>,
    send_initial: bool,
    backlog: Vec<Arc<Change>>,
    mut live: broadcast::Receiver<Arc<Change>>,
    current: u64,
    timeout: Duration,
    table: bool,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut enc = Encoder {
        def: def.clone(),
        table,
        columns_sent: false,
    };
    let mut out: Vec<Bytes> = initial.iter().map(|o| enc.encode("ADDED", o)).collect();
    if send_initial {
        out.push(bookmark(&def, current, true));
    }
    out.extend(
        backlog
            .iter()
            .filter_map(|c| event_for(&def, ns.as_deref(), &filter, c))
            .map(|(k, o)| enc.encode(k, &o)),
    );
    for b in out {
        if tx.send(Ok(b)).await.is_err() {
            return;
        }
    }
    loop {
        let change = tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return,
            _ = tx.closed() => return,
            r = live.recv() => match r {
                Ok(c) => c,
                // A watcher that fell behind is closed, as the real server
                // closes a slow watcher; the client re-watches from its last RV.
                Err(_) => return,
            },
        };
        if let Some((k, o)) = event_for(&def, ns.as_deref(), &filter, &change) {
            if tx.send(Ok(enc.encode(k, &o))).await.is_err() {
                return;
            }
        }
    }
}
