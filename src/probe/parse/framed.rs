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
    let mut problems = frames.problems.clone();
    let mut doc = Map::new();
    doc.insert("schemaVersion".into(), json!(PROBE_SCHEMA_VERSION));
    node(frames.get("node").unwrap_or_default(), &mut doc);
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
    // An output of the first format-2 probes, whose sections for these still held JSON (a
    // bundle stored then): read as it was.
    for (section, key) in [
        ("etcd", "etcd"),
        ("kubelet", "kubelet"),
        ("manifest", "manifest"),
        ("apiserver", "apiServer"),
    ] {
        if let Some(v) = frames
            .get(section)
            .and_then(|t| serde_json::from_str(t).ok())
        {
            doc.insert(key.into(), v);
        }
    }
    if let Some(text) = frames.get("certs").filter(|t| t.starts_with('{')) {
        let certs: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        doc.insert("certs".into(), Value::Array(certs));
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
        if let Some(v) = etcd_answer(frames, section, &mut problems) {
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
        let text = frames.get(section).unwrap_or_default();
        if text.starts_with('{') {
            // The first format-2 probes' JSON entries, comma-separated.
            if let Ok(v) = serde_json::from_str::<Value>(&format!("[{text}]")) {
                fw.insert(key.into(), v);
            }
        } else if let Some(v) = raw::firewall(frames, section) {
            fw.insert(key.into(), json!(v));
        }
    }
    doc.insert("firewall".into(), Value::Object(fw));
    let mut metrics = Map::new();
    for (section, key) in [("metrics.before", "before"), ("metrics.after", "after")] {
        if let Some(v) = etcd_answer(frames, section, &mut problems) {
            metrics.insert(key.into(), v);
        }
    }
    if !metrics.is_empty() {
        doc.insert("metrics".into(), Value::Object(metrics));
    }
    (Value::Object(doc), problems)
}

/// `node`: this node's address as the probe was told it, its host name, its clock (epoch ms)
/// and how long the probe took (ms), one a line.
fn node(text: &str, doc: &mut Map<String, Value>) {
    let mut lines = text.lines().map(str::trim);
    let self_ip = lines.next().unwrap_or_default();
    doc.insert("nodeIp".into(), json!(self_ip));
    let host = lines.next().unwrap_or_default();
    doc.insert(
        "hostname".into(),
        if host.is_empty() {
            Value::Null
        } else {
            json!(host)
        },
    );
    if let Some(ms) = lines.next().and_then(|l| l.parse::<i64>().ok()) {
        doc.insert("clockMs".into(), json!(ms));
    }
    if let Some(ms) = lines.next().and_then(|l| l.parse::<u64>().ok()) {
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

fn unreadable(section: &str) -> String {
    format!("its section {section} is not what the probe prints (not read)")
}

/// One of etcd's answers ([`crate::probe::etcdask`]); None (unsaid) when the section is absent.
fn etcd_answer(frames: &Frames, section: &str, problems: &mut Vec<String>) -> Option<Value> {
    let text = frames.get(section)?;
    match crate::probe::etcdask::read(section, text)? {
        Ok(v) => Some(v),
        Err(()) => {
            problems.push(unreadable(section));
            None
        }
    }
}
