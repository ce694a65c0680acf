//! A framed output's sections (format 2, [`crate::probe::frame`]) read into the document's
//! value, which the caps ([`super::bounds`]) and the typed reading then take as they take a
//! document of format 1. Each section's reader is total: a section missing or not as the probe
//! prints it leaves its part at its default (what an older probe without it gives) and says so
//! in the document's problems.

use serde_json::{json, Map, Value};

use super::{bounds, raw};
use crate::probe::frame::Frames;
use crate::probe::output::PROBE_SCHEMA_VERSION;

/// The document's value from the sections, and what was wrong with them.
pub(super) fn document(frames: &Frames) -> (Value, Vec<String>) {
    let problems = frames.problems.clone();
    let mut doc = Map::new();
    doc.insert("schemaVersion".into(), json!(PROBE_SCHEMA_VERSION));
    node(frames, &mut doc);
    let ips = raw::ips(frames);
    doc.insert("ips".into(), json!(ips));
    // The node's own sections, read from the tools' raw output (src/probe/parse/raw.rs); the
    // steps that failed there join the script's errors.
    let mut steps = Vec::new();
    let self_ip = doc
        .get("nodeIp")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let now_s = doc
        .get("clockMs")
        .and_then(Value::as_i64)
        .map(|ms| ms / 1000);
    if let Some(v) = raw::etcd(frames, &mut steps) {
        doc.insert("etcd".into(), json!(v));
    }
    if let Some(v) = raw::kubelet(frames) {
        doc.insert("kubelet".into(), json!(v));
    }
    if let Some(v) = raw::manifest(frames) {
        doc.insert("manifest".into(), json!(v));
    }
    if let Some(v) = raw::certs(frames, &self_ip, now_s) {
        doc.insert("certs".into(), json!(v));
    }
    if let Some(v) = raw::api_server(frames, &mut steps) {
        doc.insert("apiServer".into(), json!(v));
    }
    let mut errors = errors(frames.get("errors").unwrap_or_default());
    errors.extend(steps.iter().map(|e| json!(e)));
    doc.insert("errors".into(), Value::Array(errors));
    // etcd's own answers, as it sent them, judged here (src/probe/etcdask.rs).
    for (section, key) in [
        ("health", "health"),
        ("members", "members"),
        ("alarms", "alarms"),
    ] {
        if let Some(v) = etcd_answer(frames, section) {
            doc.insert(key.into(), v);
        }
    }
    // The path checks: each one's raw transcript judged here (src/probe/paths.rs).
    let paths = crate::probe::paths::read(frames);
    doc.insert(
        "paths".into(),
        serde_json::to_value(paths).unwrap_or(Value::Array(Vec::new())),
    );
    let mut fw = Map::new();
    for (section, key) in [("firewall.before", "before"), ("firewall.after", "after")] {
        if let Some(v) = raw::firewall(frames, section) {
            fw.insert(key.into(), json!(v));
        }
    }
    doc.insert("firewall".into(), Value::Object(fw));
    let mut metrics = Map::new();
    for (section, key) in [("metrics.before", "before"), ("metrics.after", "after")] {
        if let Some(v) = etcd_answer(frames, section) {
            metrics.insert(key.into(), v);
        }
    }
    if !metrics.is_empty() {
        doc.insert("metrics".into(), Value::Object(metrics));
    }
    (Value::Object(doc), problems)
}

/// `node`: `self IP` (this node's address as the probe was told it), `host NAME`, `clock MS`
/// (its clock, epoch ms) and `ms MS` (how long the probe took).
fn node(frames: &Frames, doc: &mut Map<String, Value>) {
    let h = frames.head("node").unwrap_or_default();
    doc.insert(
        "nodeIp".into(),
        json!(h.get("self").unwrap_or_default().trim()),
    );
    doc.insert(
        "hostname".into(),
        match h.get("host").unwrap_or_default().trim() {
            "" => Value::Null,
            host => json!(host),
        },
    );
    if let Some(ms) = h.num("clock") {
        doc.insert("clockMs".into(), json!(ms));
    }
    if let Some(ms) = h.num("ms").and_then(|ms| u64::try_from(ms).ok()) {
        doc.insert("durationMs".into(), json!(ms));
    }
}

/// `errors`: one failed step a line, `step<TAB>message`.
fn errors(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (step, message) = l.split_once('\t').unwrap_or((l, ""));
            // The script's `cap(message, 500)` of format 1, made here.
            let message = match crate::probe::head(message, bounds::MAX_ERROR_TEXT) {
                m if m.len() < message.len() => format!("{m}..."),
                m => m.to_string(),
            };
            json!({"step": crate::probe::head(step, 64), "message": message})
        })
        .collect()
}

/// One of etcd's answers ([`crate::probe::etcdask`]); None (unsaid) when the section is absent.
fn etcd_answer(frames: &Frames, section: &str) -> Option<Value> {
    crate::probe::etcdask::read(section, frames.get(section)?)
}
