//! The object store: objects by resource, one global resourceVersion counter,
//! and the full change history that watches replay from.
//!
//! Like etcd behind a real server, every write bumps the global
//! resourceVersion; lists return items in key order (namespace, then name).
//! The history is never compacted, so a watch from any resourceVersion the fake
//! handed out can be served (a real server may answer 410 Gone instead).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::resources::{Registry, ResourceDef};
use crate::status::ApiError;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One write, as watches see it.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub kind: ChangeKind,
    pub group: String,
    pub plural: String,
    pub namespace: String,
    /// The object before a modification (to tell a watch whose selector it
    /// stopped or started matching).
    pub old: Option<Value>,
    pub obj: Value,
}

/// Creation timestamp of fixture objects that do not set one: fixed, so that
/// output built from fixtures is the same on every run.
pub const FIXTURE_TIMESTAMP: &str = "2025-06-01T12:00:00Z";

type Bucket = BTreeMap<(String, String), Value>;

pub struct Store {
    pub registry: Registry,
    objects: HashMap<(String, String), Bucket>,
    rv: u64,
    history: Vec<Arc<Change>>,
    tx: broadcast::Sender<Arc<Change>>,
    /// Pod logs served at pods/{name}/log, by (namespace, name).
    pub pod_logs: HashMap<(String, String), String>,
}

impl Store {
    pub fn new(registry: Registry) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Store {
            registry,
            objects: HashMap::new(),
            rv: 1000,
            history: Vec::new(),
            tx,
            pod_logs: HashMap::new(),
        }
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Subscribes to changes after `after_rv`: the history since then plus a
    /// live receiver. Taken under the store lock, so nothing falls in between.
    pub fn subscribe(&self, after_rv: u64) -> (Vec<Arc<Change>>, broadcast::Receiver<Arc<Change>>) {
        let start = self.history.partition_point(|c| c.rv <= after_rv);
        (self.history[start..].to_vec(), self.tx.subscribe())
    }

    fn bucket(&self, def: &ResourceDef) -> Option<&Bucket> {
        self.objects.get(&(def.group.clone(), def.plural.clone()))
    }

    pub fn get(&self, def: &ResourceDef, namespace: &str, name: &str) -> Option<&Value> {
        self.bucket(def)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Objects of a resource, in one namespace or all (None).
    pub fn list(&self, def: &ResourceDef, namespace: Option<&str>) -> Vec<Value> {
        self.bucket(def)
            .map(|b| {
                b.iter()
                    .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object of every resource, for the handle's `objects()`.
    pub fn all(&self) -> Vec<Value> {
        let mut v: Vec<Value> = self
            .objects
            .values()
            .flat_map(|b| b.values().cloned())
            .collect();
        v.sort_by_key(|o| (api_version(o), kind(o), namespace(o), name(o)));
        v
    }

    fn record(&mut self, kind: ChangeKind, def: &ResourceDef, old: Option<Value>, obj: Value) {
        let change = Arc::new(Change {
            rv: self.rv,
            kind,
            group: def.group.clone(),
            plural: def.plural.clone(),
            namespace: namespace(&obj),
            old,
            obj,
        });
        self.history.push(change.clone());
        // No receivers is fine: nobody watches.
        let _ = self.tx.send(change);
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.objects
            .get(&(String::new(), "namespaces".to_string()))
            .is_some_and(|b| b.contains_key(&(String::new(), ns.to_string())))
    }

    /// Creates an object (already normalized by [`normalize`]); AlreadyExists on a duplicate.
    pub fn create(&mut self, def: &ResourceDef, mut obj: Value) -> Result<Value, ApiError> {
        let ns = namespace(&obj);
        let name = name(&obj);
        if def.namespaced && !self.namespace_exists(&ns) {
            let ns_def = self
                .registry
                .lookup("", "v1", "namespaces")
                .expect("core v1 namespaces is always served");
            return Err(ApiError::not_found(&ns_def, &ns));
        }
        let key = (ns.clone(), name.clone());
        if self.bucket(def).is_some_and(|b| b.contains_key(&key)) {
            return Err(ApiError::already_exists(def, &name));
        }
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.objects
            .entry((def.group.clone(), def.plural.clone()))
            .or_default()
            .insert(key, obj.clone());
        self.record(ChangeKind::Added, def, None, obj.clone());
        Ok(obj)
    }

    /// Replaces an existing object. A non-empty resourceVersion in `obj` must
    /// match the stored one (optimistic concurrency), as on a real server.
    pub fn update(&mut self, def: &ResourceDef, mut obj: Value) -> Result<Value, ApiError> {
        let key = (namespace(&obj), name(&obj));
        let Some(old) = self.bucket(def).and_then(|b| b.get(&key)).cloned() else {
            return Err(ApiError::not_found(def, &key.1));
        };
        let sent_rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if !sent_rv.is_empty()
            && sent_rv != old["metadata"]["resourceVersion"].as_str().unwrap_or("")
        {
            return Err(ApiError::conflict(def, &key.1));
        }
        // Fields the server owns survive an update.
        for f in ["uid", "creationTimestamp"] {
            obj["metadata"][f] = old["metadata"][f].clone();
        }
        if obj.get("spec") != old.get("spec") {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(1);
            obj["metadata"]["generation"] = json!(g + 1);
        } else if !old["metadata"]["generation"].is_null() {
            obj["metadata"]["generation"] = old["metadata"]["generation"].clone();
        }
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.objects
            .entry((def.group.clone(), def.plural.clone()))
            .or_default()
            .insert(key, obj.clone());
        self.record(ChangeKind::Modified, def, Some(old), obj.clone());
        Ok(obj)
    }

    /// Deletes at once (no finalizers, no graceful termination, no garbage
    /// collection of dependents) and returns the object as deleted.
    pub fn delete(
        &mut self,
        def: &ResourceDef,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let Some(mut obj) = self
            .objects
            .get_mut(&(def.group.clone(), def.plural.clone()))
            .and_then(|b| b.remove(&key))
        else {
            return Err(ApiError::not_found(def, name));
        };
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        if def.group.is_empty() && def.plural == "pods" {
            self.pod_logs.remove(&key);
        }
        self.record(ChangeKind::Deleted, def, None, obj.clone());
        Ok(obj)
    }
}

pub fn meta_str(obj: &Value, field: &str) -> String {
    obj["metadata"][field].as_str().unwrap_or("").to_string()
}

pub fn name(obj: &Value) -> String {
    meta_str(obj, "name")
}

pub fn namespace(obj: &Value) -> String {
    meta_str(obj, "namespace")
}

pub fn api_version(obj: &Value) -> String {
    obj["apiVersion"].as_str().unwrap_or("").to_string()
}

pub fn kind(obj: &Value) -> String {
    obj["kind"].as_str().unwrap_or("").to_string()
}

/// (group, version) of an apiVersion string.
pub fn split_api_version(av: &str) -> (String, String) {
    match av.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), av.to_string()),
    }
}

/// Labels as a map (absent or malformed labels: empty).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Fills in what a real server sets on create: uid, creationTimestamp,
/// generation, Secret `data` from `stringData` (never kept), Namespace and Pod
/// status. `fixture` objects get a deterministic uid and timestamp.
pub fn normalize(def: &ResourceDef, mut obj: Value, fixture: bool) -> Result<Value, ApiError> {
    let Value::Object(ref mut top) = obj else {
        return Err(ApiError::bad_request("the object is not a JSON object"));
    };
    top.insert("apiVersion".into(), json!(def.api_version()));
    top.insert("kind".into(), json!(def.kind));
    let meta = top
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(ApiError::bad_request("metadata is not an object"));
    };
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        return Err(ApiError {
            code: 422,
            reason: "Invalid",
            message: format!("{} \"\" is invalid: metadata.name: Required value: name or generateName is required", def.kind),
            details: Some(json!({"kind": def.kind, "group": def.group})),
        });
    }
    if !def.namespaced {
        meta.remove("namespace");
    }
    let ns = meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if meta
        .get("uid")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let seed = format!("{}/{}/{}/{}", def.group, def.plural, ns, name);
        let salt = if fixture {
            0
        } else {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        };
        meta.insert("uid".into(), json!(uuid_from(&seed, salt)));
    }
    if meta.get("creationTimestamp").is_none_or(Value::is_null) {
        let ts = if fixture {
            FIXTURE_TIMESTAMP.to_string()
        } else {
            now_rfc3339()
        };
        meta.insert("creationTimestamp".into(), json!(ts));
    }
    let has_generation = !def.builtin
        || [
            "deployments",
            "daemonsets",
            "replicasets",
            "statefulsets",
            "jobs",
        ]
        .contains(&def.plural.as_str());
    if has_generation && meta.get("generation").is_none() {
        meta.insert("generation".into(), json!(1));
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "secrets") => {
            let string_data = top.remove("stringData");
            let data = top
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Some(Value::Object(sd)), Value::Object(data)) = (string_data, data) {
                for (k, v) in sd {
                    let s = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
            }
            top.entry("type").or_insert_with(|| json!("Opaque"));
        }
        ("", "namespaces") => {
            top.entry("spec")
                .or_insert_with(|| json!({"finalizers": ["kubernetes"]}));
            top.entry("status")
                .or_insert_with(|| json!({"phase": "Active"}));
        }
        ("", "pods") => {
            // The API server sets the QoS class at create; nothing else until a kubelet reports.
            let qos = crate::podstatus::qos_class(&obj);
            if let Value::Object(top) = &mut obj {
                top.entry("status")
                    .or_insert_with(|| json!({"phase": "Pending", "qosClass": qos}));
            }
        }
        _ => {}
    }
    Ok(obj)
}

/// A UUID-shaped id, deterministic in its inputs.
fn uuid_from(seed: &str, salt: u128) -> String {
    let h = |k: u64| {
        let mut s = std::collections::hash_map::DefaultHasher::new();
        (k, seed, salt).hash(&mut s);
        s.finish()
    };
    let (a, b) = (h(1), h(2));
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        ((b >> 48) & 0x3fff) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (Howard Hinnant's civil_from_days).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        (sod % 3600) / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::known;

    #[test]
    fn formats_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_748_779_200), "2025-06-01T12:00:00Z");
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let def = known("", "v1", "Secret").unwrap();
        let s = normalize(
            &def,
            json!({"metadata": {"name": "s", "namespace": "n"}, "stringData": {"value": "hi"}}),
            true,
        )
        .unwrap();
        assert_eq!(s["data"]["value"], "aGk=");
        assert!(s.get("stringData").is_none());
        assert_eq!(s["type"], "Opaque");
        assert_eq!(s["metadata"]["creationTimestamp"], FIXTURE_TIMESTAMP);
        let again = normalize(
            &def,
            json!({"metadata": {"name": "s", "namespace": "n"}}),
            true,
        )
        .unwrap();
        assert_eq!(
            s["metadata"]["uid"], again["metadata"]["uid"],
            "fixture uids are deterministic"
        );
    }
}
