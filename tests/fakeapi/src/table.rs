//! Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`),
//! which `kubectl get` asks for. Columns are the upstream printcolumns of the
//! kinds the fixtures use (vm-operator, cluster-api, CAPV kubebuilder markers),
//! so `kubectl get vm -o wide` against the fake looks like the support article.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::resources::ResourceDef;

pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .any(|p| p.split(';').any(|x| x.trim() == "as=Table"))
}

/// (name, type, priority, JSONPath subset)
type Col = (&'static str, &'static str, u8, &'static str);

const AGE: Col = ("Age", "date", 0, ".metadata.creationTimestamp");

fn columns(def: &ResourceDef) -> Vec<Col> {
    let v = def.version.as_str();
    match (def.group.as_str(), def.kind.as_str()) {
        ("vmoperator.vmware.com", "VirtualMachine") => {
            let (image, ip) = match v {
                "v1alpha1" => (".spec.imageName", ("Primary-IP", ".status.vmIp")),
                "v1alpha2" => (
                    ".spec.imageName",
                    ("Primary-IP4", ".status.network.primaryIP4"),
                ),
                _ => (
                    ".spec.image.name",
                    ("Primary-IP4", ".status.network.primaryIP4"),
                ),
            };
            vec![
                ("Power-State", "string", 0, ".status.powerState"),
                ("Class", "string", 1, ".spec.className"),
                ("Image", "string", 1, image),
                (ip.0, "string", 1, ip.1),
                AGE,
            ]
        }
        ("cluster.x-k8s.io", "Machine") => vec![
            ("Cluster", "string", 0, ".spec.clusterName"),
            ("NodeName", "string", 0, ".status.nodeRef.name"),
            ("ProviderID", "string", 0, ".spec.providerID"),
            ("Phase", "string", 0, ".status.phase"),
            AGE,
            ("Version", "string", 0, ".spec.version"),
        ],
        ("cluster.x-k8s.io", "Cluster") => vec![
            ("ClusterClass", "string", 0, ".spec.topology.class"),
            ("Phase", "string", 0, ".status.phase"),
            AGE,
            ("Version", "string", 0, ".spec.topology.version"),
        ],
        ("controlplane.cluster.x-k8s.io", "KubeadmControlPlane") if v == "v1beta1" => vec![
            (
                "Cluster",
                "string",
                0,
                ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
            ),
            ("Initialized", "boolean", 0, ".status.initialized"),
            ("API Server Available", "boolean", 0, ".status.ready"),
            ("Desired", "integer", 10, ".spec.replicas"),
            ("Replicas", "integer", 0, ".status.replicas"),
            ("Ready", "integer", 0, ".status.readyReplicas"),
            ("Updated", "integer", 0, ".status.updatedReplicas"),
            ("Unavailable", "integer", 0, ".status.unavailableReplicas"),
            AGE,
            ("Version", "string", 0, ".spec.version"),
        ],
        ("controlplane.cluster.x-k8s.io", "KubeadmControlPlane") => vec![
            (
                "Cluster",
                "string",
                0,
                ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
            ),
            (
                "Available",
                "string",
                0,
                ".status.conditions[?(@.type==\"Available\")].status",
            ),
            ("Desired", "integer", 0, ".spec.replicas"),
            ("Current", "integer", 0, ".status.replicas"),
            ("Ready", "integer", 0, ".status.readyReplicas"),
            ("Available", "integer", 0, ".status.availableReplicas"),
            ("Up-to-date", "integer", 0, ".status.upToDateReplicas"),
            (
                "Initialized",
                "boolean",
                0,
                ".status.initialization.controlPlaneInitialized",
            ),
            AGE,
            ("Version", "string", 0, ".spec.version"),
        ],
        ("vmware.infrastructure.cluster.x-k8s.io", "VSphereMachine") => vec![
            ("Zone", "string", 0, ".spec.failureDomain"),
            ("ProviderID", "string", 0, ".spec.providerID"),
            ("IPAddr", "string", 0, ".status.vmIp"),
            AGE,
        ],
        ("", "Pod") => vec![
            ("Status", "string", 0, ".status.phase"),
            AGE,
            ("IP", "string", 1, ".status.podIP"),
            ("Node", "string", 1, ".spec.nodeName"),
        ],
        ("", "Secret") => vec![("Type", "string", 0, ".type"), AGE],
        ("", "Namespace") => vec![("Status", "string", 0, ".status.phase"), AGE],
        _ => vec![AGE],
    }
}

/// Evaluates the JSONPath subset the columns use: `.a.b`, `\.` escapes in a
/// key, and `[?(@.k=="v")]` filters on lists (first match).
pub fn eval(obj: &Value, path: &str) -> Value {
    let mut cur = obj.clone();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[?(@.") {
            let Some((cond, after)) = r.split_once(")]") else {
                return Value::Null;
            };
            let Some((k, v)) = cond.split_once("==") else {
                return Value::Null;
            };
            let want = v.trim_matches('"');
            cur = cur
                .as_array()
                .and_then(|a| a.iter().find(|e| e[k].as_str() == Some(want)).cloned())
                .unwrap_or(Value::Null);
            rest = after;
        } else if let Some(r) = rest.strip_prefix('.') {
            let mut key = String::new();
            let mut chars = r.char_indices().peekable();
            let mut end = r.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            key.push(n);
                        }
                    }
                    '.' | '[' => {
                        end = i;
                        break;
                    }
                    _ => key.push(c),
                }
            }
            cur = cur.get(&key).cloned().unwrap_or(Value::Null);
            rest = &r[end..];
        } else {
            return Value::Null;
        }
    }
    cur
}

/// apimachinery's `duration.HumanDuration`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        let y = d / 365;
        if d % 365 == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{}y", d / 365)
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SSZ` (fractional seconds and offsets other than Z are not needed here).
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        n(0..4)?,
        n(5..7)?,
        n(8..10)?,
        n(11..13)?,
        n(14..16)?,
        n(17..19)?,
    );
    // days_from_civil
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + mi * 60 + se)
}

fn cell(col: &Col, obj: &Value, now: i64) -> Value {
    let v = eval(obj, col.3);
    match (col.1, &v) {
        ("date", Value::String(ts)) => parse_rfc3339(ts)
            .map(|t| json!(human_duration(now - t)))
            .unwrap_or(json!("<unknown>")),
        _ => v,
    }
}

/// A meta.k8s.io/v1 Table of `items`, each row carrying PartialObjectMetadata.
pub fn table(def: &ResourceDef, items: &[Value], rv: u64) -> Value {
    let cols = columns(def);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    defs.extend(cols.iter().map(
        |c| json!({"name": c.0, "type": c.1, "format": "", "description": "", "priority": c.2}),
    ));
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(cols.iter().map(|c| cell(c, o, now)));
            json!({
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": defs,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_subset() {
        let o = json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "tkc"}}, "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Available", "status": "True"}]}});
        assert_eq!(
            eval(&o, ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name"),
            json!("tkc")
        );
        assert_eq!(
            eval(&o, ".status.conditions[?(@.type==\"Available\")].status"),
            json!("True")
        );
        assert_eq!(eval(&o, ".status.nope"), Value::Null);
    }

    #[test]
    fn durations_and_dates() {
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3 * 86_400 + 3600), "3d1h");
        assert_eq!(human_duration(400 * 86_400), "400d");
        assert_eq!(parse_rfc3339("2025-06-01T12:00:00Z"), Some(1_748_779_200));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
    }
}
