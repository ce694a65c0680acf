//! get, list, create, update, patch, delete and deletecollection on one resource.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::Response;
use base64::Engine;
use serde_json::{json, Value};

use crate::resources::ResourceDef;
use crate::router::Query;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::server::Shared;
use crate::status::{json_response, ApiError};
use crate::store::{self, normalize};

/// One request on a resource, routed and authorized.
pub struct ResourceRequest {
    pub def: ResourceDef,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
    pub query: Query,
    pub accept: String,
    pub content_type: String,
    pub body: Bytes,
}

impl ResourceRequest {
    fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

/// The label and field selectors of a list, watch or deletecollection.
pub struct Filter {
    label: LabelSelector,
    field: FieldSelector,
}

/// Fields a field selector may name, beyond metadata.name / metadata.namespace
/// (the per-type field label conversions of the real server).
fn extra_fields(def: &ResourceDef) -> &'static [&'static str] {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "secrets") => &["type"],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        _ => &[],
    }
}

impl Filter {
    pub fn from_query(def: &ResourceDef, q: &Query) -> Result<Self, ApiError> {
        let label = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::bad_request(e.0))?;
        let field = FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
            .map_err(|e| ApiError::bad_request(e.0))?;
        for f in field.fields() {
            if f != "metadata.name" && f != "metadata.namespace" && !extra_fields(def).contains(&f)
            {
                let msg = if def.builtin {
                    format!("field label not supported: {f}")
                } else {
                    format!("\"{f}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")
                };
                return Err(ApiError::bad_request(msg));
            }
        }
        Ok(Filter { label, field })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.label.matches(&store::labels(obj))
            && self.field.matches(|path| {
                let mut v = obj;
                for part in path.split('.') {
                    v = &v[part];
                }
                match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                }
            })
    }
}

/// The fake stores each object at the version it was written in and does not
/// convert: reading it at another version is an error (see [`ApiError::no_conversion`]).
pub fn check_version(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let (_, stored) = store::split_api_version(&store::api_version(obj));
    if stored != def.version {
        return Err(ApiError::no_conversion(def, &stored));
    }
    Ok(())
}

fn ok(v: &Value) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, v))
}

pub fn get(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    if req.sub.as_deref() == Some("log") {
        return crate::logs::serve(shared, req);
    }
    let store = shared.store.lock().unwrap();
    let obj = store
        .get(&req.def, req.ns(), req.name())
        .cloned()
        .ok_or_else(|| ApiError::not_found(&req.def, req.name()))?;
    if let Some(s) = req.sub.as_deref().filter(|s| *s != "status") {
        return Err(ApiError::method_not_allowed(&format!("GET {s}")));
    }
    check_version(&req.def, &obj)?;
    if crate::table::wants_table(&req.accept) {
        return ok(&crate::table::table(
            &req.def,
            &[obj],
            store.resource_version(),
        ));
    }
    ok(&obj)
}

/// A list continue token: the resourceVersion of the first page and the key to start after.
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    let raw = json!({"rv": rv, "ns": ns, "name": name}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let bad = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    Ok((
        v["rv"].as_u64().ok_or_else(bad)?,
        v["ns"].as_str().unwrap_or("").to_string(),
        v["name"].as_str().unwrap_or("").to_string(),
    ))
}

/// Strips kind/apiVersion from the items of built-in types, as the real
/// server's typed encoding does; CRD items keep them.
pub fn list_item(def: &ResourceDef, mut obj: Value) -> Value {
    if def.builtin {
        if let Value::Object(m) = &mut obj {
            m.remove("kind");
            m.remove("apiVersion");
        }
    }
    obj
}

pub fn list(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    let filter = Filter::from_query(&req.def, &req.query)?;
    let store = shared.store.lock().unwrap();
    let mut items: Vec<Value> = store
        .list(&req.def, req.namespace.as_deref())
        .into_iter()
        .filter(|o| filter.matches(o))
        .collect();
    for o in &items {
        check_version(&req.def, o)?;
    }
    let mut rv = store.resource_version();
    let mut meta = json!({});
    if let Some(token) = req.query.get("continue").filter(|t| !t.is_empty()) {
        let (first_rv, ns, name) = decode_continue(token)?;
        rv = first_rv;
        items.retain(|o| (store::namespace(o), store::name(o)) > (ns.clone(), name.clone()));
    }
    let limit: usize = req
        .query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    if items.len() > limit {
        let remaining = items.len() - limit;
        items.truncate(limit);
        let last = items.last().expect("limit > 0");
        meta["continue"] = json!(encode_continue(
            rv,
            &store::namespace(last),
            &store::name(last)
        ));
        meta["remainingItemCount"] = json!(remaining);
    }
    meta["resourceVersion"] = json!(rv.to_string());
    if crate::table::wants_table(&req.accept) {
        let mut t = crate::table::table(&req.def, &items, rv);
        t["metadata"] = meta;
        return ok(&t);
    }
    let items: Vec<Value> = items.into_iter().map(|o| list_item(&req.def, o)).collect();
    ok(&json!({
        "kind": format!("{}List", req.def.kind),
        "apiVersion": req.def.api_version(),
        "metadata": meta,
        "items": items,
    }))
}

fn parse_body(req: &ResourceRequest) -> Result<Value, ApiError> {
    let ct = req.content_type.split(';').next().unwrap_or("").trim();
    let v: Value = if ct.contains("yaml") {
        serde_yaml_ng::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice(&req.body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
        })?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not an object",
        ));
    }
    Ok(v)
}

/// Checks the body's kind/apiVersion/namespace against the request path.
fn check_body(req: &ResourceRequest, obj: &mut Value) -> Result<(), ApiError> {
    let kind = store::kind(obj);
    if !kind.is_empty() && kind != req.def.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            store::api_version(obj),
            req.def.api_version()
        )));
    }
    let av = store::api_version(obj);
    if !av.is_empty() && av != req.def.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            req.def.api_version()
        )));
    }
    if req.def.namespaced {
        let body_ns = store::namespace(obj);
        if !body_ns.is_empty() && body_ns != req.ns() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        obj["metadata"]["namespace"] = json!(req.ns());
    }
    Ok(())
}

fn dry_run(req: &ResourceRequest) -> bool {
    req.query.get("dryRun").is_some_and(|v| v == "All")
}

/// Five characters from the alphabet apimachinery's `rand.String` uses.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    x ^= COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
    (0..5)
        .map(|_| {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            ALPHABET[(x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % ALPHABET.len()]
                as char
        })
        .collect()
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub fn create(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    if req.name.is_some() {
        // Subresource creates: pods/exec and friends need a streaming upgrade.
        if req.sub.as_deref() == Some("exec") {
            return Err(ApiError::bad_request("Upgrade request required"));
        }
        return Err(ApiError::method_not_allowed("POST"));
    }
    let mut obj = parse_body(req)?;
    check_body(req, &mut obj)?;
    if store::name(&obj).is_empty() {
        if let Some(prefix) = obj["metadata"]["generateName"]
            .as_str()
            .filter(|p| !p.is_empty())
        {
            obj["metadata"]["name"] = json!(format!("{prefix}{}", random_suffix()));
        }
    }
    for f in [
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
    ] {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove(f);
        }
    }
    let obj = normalize(&req.def, obj, false)?;
    let is_pod = req.def.group.is_empty() && req.def.plural == "pods";
    // Validating admission comes before dry-run is honoured, as on a real server.
    let warning = if is_pod {
        crate::pods::admit(shared, &obj)?
    } else {
        None
    };
    let mut resp = if dry_run(req) {
        json_response(StatusCode::CREATED, &obj)
    } else {
        let created = shared.store.lock().unwrap().create(&req.def, obj)?;
        if is_pod {
            crate::pods::on_created(shared, &created);
        }
        json_response(StatusCode::CREATED, &created)
    };
    if let Some(w) = warning.and_then(|w| header::HeaderValue::from_str(&w).ok()) {
        resp.headers_mut().insert(header::WARNING, w);
    }
    Ok(resp)
}

/// PUT: replace the object, or with `/status` only its status.
pub fn update(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    let mut obj = parse_body(req)?;
    check_body(req, &mut obj)?;
    if store::name(&obj) != req.name() {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    replace(shared, req, obj)
}

fn replace(
    shared: &Arc<Shared>,
    req: &ResourceRequest,
    mut obj: Value,
) -> Result<Response, ApiError> {
    let mut store = shared.store.lock().unwrap();
    let old = store
        .get(&req.def, req.ns(), req.name())
        .cloned()
        .ok_or_else(|| ApiError::not_found(&req.def, req.name()))?;
    check_version(&req.def, &old)?;
    match req.sub.as_deref() {
        // The status subresource changes status only; the main resource keeps status.
        Some("status") => {
            let status = obj.get("status").cloned().unwrap_or(Value::Null);
            let rv = obj["metadata"]["resourceVersion"].clone();
            obj = old.clone();
            obj["status"] = status;
            obj["metadata"]["resourceVersion"] = rv;
        }
        None if req.def.subresources.iter().any(|s| s == "status") => {
            obj["status"] = old.get("status").cloned().unwrap_or(Value::Null);
        }
        None => {}
        Some(s) => return Err(ApiError::method_not_allowed(&format!("PUT {s}"))),
    }
    if obj.get("status") == Some(&Value::Null) {
        obj.as_object_mut()
            .expect("checked object")
            .remove("status");
    }
    let obj = normalize(&req.def, obj, false)?;
    if dry_run(req) {
        return ok(&obj);
    }
    ok(&store.update(&req.def, obj)?)
}

/// PATCH with merge, strategic-merge (treated as merge: lists are replaced
/// whole, which is what strategic merge does for lists without a merge key)
/// or JSON patch.
pub fn patch(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    let ct = req
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::bad_request(format!("invalid patch: {e}")))?;
    let mut obj = {
        let store = shared.store.lock().unwrap();
        store
            .get(&req.def, req.ns(), req.name())
            .cloned()
            .ok_or_else(|| ApiError::not_found(&req.def, req.name()))?
    };
    match ct.as_str() {
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            crate::patch::merge_patch(&mut obj, &body)
        }
        "application/json-patch+json" => crate::patch::json_patch(&mut obj, &body)?,
        other => return Err(ApiError::unsupported_media(other)),
    }
    // A resourceVersion in the patch is a precondition; without one the patch
    // applies to whatever is stored.
    if body.pointer("/metadata/resourceVersion").is_none() {
        obj["metadata"]["resourceVersion"] = json!("");
    }
    match req.sub.as_deref() {
        None | Some("status") => replace(shared, req, obj),
        Some(_) => Err(ApiError::method_not_allowed("PATCH")),
    }
}

pub fn delete(shared: &Arc<Shared>, req: &ResourceRequest) -> Result<Response, ApiError> {
    if req.sub.is_some() {
        return Err(ApiError::method_not_allowed("DELETE"));
    }
    // DeleteOptions (body or query) are accepted and, apart from dryRun,
    // ignored: the fake deletes at once and has no garbage collector.
    let mut store = shared.store.lock().unwrap();
    let obj = store
        .get(&req.def, req.ns(), req.name())
        .cloned()
        .ok_or_else(|| ApiError::not_found(&req.def, req.name()))?;
    if dry_run(req) || body_dry_run(&req.body) {
        return ok(&obj);
    }
    let deleted = store.delete(&req.def, req.ns(), req.name())?;
    drop(store);
    crate::pods::on_deleted(shared, &deleted);
    ok(&deleted)
}

fn body_dry_run(body: &Bytes) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["dryRun"].as_array().map(|a| a.iter().any(|x| x == "All")))
        .unwrap_or(false)
}

pub fn delete_collection(
    shared: &Arc<Shared>,
    req: &ResourceRequest,
) -> Result<Response, ApiError> {
    let filter = Filter::from_query(&req.def, &req.query)?;
    let mut store = shared.store.lock().unwrap();
    let victims: Vec<Value> = store
        .list(&req.def, req.namespace.as_deref())
        .into_iter()
        .filter(|o| filter.matches(o))
        .collect();
    let mut deleted = Vec::new();
    for v in victims {
        if dry_run(req) || body_dry_run(&req.body) {
            deleted.push(v);
        } else {
            deleted.push(store.delete(&req.def, &store::namespace(&v), &store::name(&v))?);
        }
    }
    let rv = store.resource_version();
    drop(store);
    if !(dry_run(req) || body_dry_run(&req.body)) {
        for d in &deleted {
            crate::pods::on_deleted(shared, d);
        }
    }
    let items: Vec<Value> = deleted
        .into_iter()
        .map(|o| list_item(&req.def, o))
        .collect();
    ok(&json!({
        "kind": format!("{}List", req.def.kind),
        "apiVersion": req.def.api_version(),
        "metadata": {"resourceVersion": rv.to_string()},
        "items": items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = encode_continue(1042, "ns-prod", "tkc-prod-abc");
        assert_eq!(
            decode_continue(&t).unwrap(),
            (1042, "ns-prod".to_string(), "tkc-prod-abc".to_string())
        );
        assert!(decode_continue("garbage!").is_err());
    }

    #[test]
    fn suffixes_look_like_apimachinery_ones() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
