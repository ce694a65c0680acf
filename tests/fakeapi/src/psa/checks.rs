//! The checks, each as upstream's `check_<id>.go` words it: the reason, and the detail with
//! upstream's pluralization and quoting (Go's `sets.String` lists are sorted, as here).

use std::collections::BTreeSet;

use serde_json::Value;

use super::Violation;

/// Init containers, containers, ephemeral containers: upstream's visitContainers order.
fn all_containers(spec: &Value) -> Vec<&Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .collect()
}

fn cname(c: &Value) -> String {
    c["name"].as_str().unwrap_or("").to_string()
}

/// `"a", "b"`
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(one: &'static str, many: &'static str, n: usize) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn containers_phrase(names: &[String]) -> String {
    format!(
        "{} {}",
        plural("container", "containers", names.len()),
        join_quote(names)
    )
}

pub fn host_namespaces(spec: &Value) -> Option<Violation> {
    let set: Vec<&str> = [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ]
    .iter()
    .filter(|(f, _)| spec[*f].as_bool() == Some(true))
    .map(|(_, s)| *s)
    .collect();
    (!set.is_empty()).then(|| ("host namespaces", set.join(", ")))
}

pub fn host_path_volumes(spec: &Value) -> Option<Violation> {
    let vols: Vec<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null()))
        .map(cname)
        .collect();
    (!vols.is_empty()).then(|| {
        (
            "hostPath volumes",
            format!(
                "{} {}",
                plural("volume", "volumes", vols.len()),
                join_quote(&vols)
            ),
        )
    })
}

pub fn host_ports(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    // A Go sets.String of the ports: sorted as strings.
    let mut ports = BTreeSet::new();
    for c in all_containers(spec) {
        let mut uses = false;
        for p in c["ports"].as_array().into_iter().flatten() {
            if let Some(h) = p["hostPort"].as_i64().filter(|h| *h != 0) {
                uses = true;
                ports.insert(h.to_string());
            }
        }
        if uses {
            bad.push(cname(c));
        }
    }
    (!bad.is_empty()).then(|| {
        let ports: Vec<String> = ports.into_iter().collect();
        (
            "hostPort",
            format!(
                "{} {} {} {}",
                containers_phrase(&bad),
                plural("uses", "use", bad.len()),
                plural("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            ),
        )
    })
}

pub fn privileged(spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = all_containers(spec)
        .into_iter()
        .filter(|c| c["securityContext"]["privileged"].as_bool() == Some(true))
        .map(cname)
        .collect();
    (!bad.is_empty()).then(|| {
        (
            "privileged",
            format!(
                "{} must not set securityContext.privileged=true",
                containers_phrase(&bad)
            ),
        )
    })
}

const BASELINE_CAPS: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_caps(c: &Value) -> Vec<String> {
    c["securityContext"]["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

pub fn capabilities_baseline(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut caps = BTreeSet::new();
    for c in all_containers(spec) {
        let extra: Vec<String> = added_caps(c)
            .into_iter()
            .filter(|a| !BASELINE_CAPS.contains(&a.as_str()))
            .collect();
        if !extra.is_empty() {
            bad.push(cname(c));
            caps.extend(extra);
        }
    }
    (!bad.is_empty()).then(|| {
        let caps: Vec<String> = caps.into_iter().collect();
        (
            "non-default capabilities",
            format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&bad),
                join_quote(&caps)
            ),
        )
    })
}

pub fn allow_privilege_escalation(spec: &Value) -> Option<Violation> {
    let bad: Vec<String> = all_containers(spec)
        .into_iter()
        .filter(|c| c["securityContext"]["allowPrivilegeEscalation"].as_bool() != Some(false))
        .map(cname)
        .collect();
    (!bad.is_empty()).then(|| {
        (
            "allowPrivilegeEscalation != false",
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                containers_phrase(&bad)
            ),
        )
    })
}

pub fn capabilities_restricted(spec: &Value) -> Option<Violation> {
    let (mut no_drop, mut adding) = (Vec::new(), Vec::new());
    let mut caps = BTreeSet::new();
    for c in all_containers(spec) {
        let cap = &c["securityContext"]["capabilities"];
        if cap.is_null() {
            no_drop.push(cname(c));
            continue;
        }
        let drops_all = cap["drop"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d == "ALL");
        if !drops_all {
            no_drop.push(cname(c));
        }
        let extra: Vec<String> = added_caps(c)
            .into_iter()
            .filter(|a| a != "NET_BIND_SERVICE")
            .collect();
        if !extra.is_empty() {
            adding.push(cname(c));
            caps.extend(extra);
        }
    }
    let mut details = Vec::new();
    if !no_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&no_drop)
        ));
    }
    if !adding.is_empty() {
        let caps: Vec<String> = caps.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&caps)
        ));
    }
    (!details.is_empty()).then(|| ("unrestricted capabilities", details.join("; ")))
}

/// Volume types the restricted level allows.
const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

pub fn restricted_volumes(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for v in spec["volumes"].as_array().into_iter().flatten() {
        let Some(obj) = v.as_object() else { continue };
        let ty = obj
            .iter()
            .find(|(k, val)| *k != "name" && !val.is_null())
            .map(|(k, _)| k.as_str());
        if ty.is_some_and(|t| ALLOWED_VOLUMES.contains(&t)) {
            continue;
        }
        bad.push(cname(v));
        types.insert(ty.unwrap_or("unknown").to_string());
    }
    (!bad.is_empty()).then(|| {
        let types: Vec<String> = types.into_iter().collect();
        (
            "restricted volume types",
            format!(
                "{} {} {} {} {}",
                plural("volume", "volumes", bad.len()),
                join_quote(&bad),
                plural("uses", "use", bad.len()),
                plural(
                    "restricted volume type",
                    "restricted volume types",
                    types.len()
                ),
                join_quote(&types)
            ),
        )
    })
}

/// runAsNonRoot and seccompProfile share a shape: the pod level may satisfy every container;
/// explicit bad values are named first ("pod and container \"x\" must not set ...").
fn pod_or_containers(
    spec: &Value,
    get: impl Fn(&Value) -> Option<Result<(), String>>,
) -> (Vec<String>, Vec<String>, BTreeSet<String>) {
    let mut bad_setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    let mut pod_ok = false;
    match get(&spec["securityContext"]) {
        Some(Ok(())) => pod_ok = true,
        Some(Err(v)) => {
            bad_setters.push("pod".to_string());
            bad_values.insert(v);
        }
        None => {}
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in all_containers(spec) {
        match get(&c["securityContext"]) {
            Some(Ok(())) => {}
            Some(Err(v)) => {
                explicit.push(cname(c));
                bad_values.insert(v);
            }
            None if !pod_ok => implicit.push(cname(c)),
            None => {}
        }
    }
    if !explicit.is_empty() {
        bad_setters.push(containers_phrase(&explicit));
    }
    (bad_setters, implicit, bad_values)
}

pub fn run_as_non_root(spec: &Value) -> Option<Violation> {
    let (bad, implicit, _) = pod_or_containers(spec, |sc| {
        sc["runAsNonRoot"]
            .as_bool()
            .map(|b| if b { Ok(()) } else { Err("false".into()) })
    });
    if !bad.is_empty() {
        return Some((
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                bad.join(" and ")
            ),
        ));
    }
    (!implicit.is_empty()).then(|| {
        (
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ),
        )
    })
}

pub fn run_as_user(spec: &Value) -> Option<Violation> {
    let mut bad = Vec::new();
    if spec["securityContext"]["runAsUser"].as_i64() == Some(0) {
        bad.push("pod".to_string());
    }
    let cs: Vec<String> = all_containers(spec)
        .into_iter()
        .filter(|c| c["securityContext"]["runAsUser"].as_i64() == Some(0))
        .map(cname)
        .collect();
    if !cs.is_empty() {
        bad.push(containers_phrase(&cs));
    }
    (!bad.is_empty()).then(|| {
        (
            "runAsUser=0",
            format!("{} must not set runAsUser=0", bad.join(" and ")),
        )
    })
}

pub fn seccomp_restricted(spec: &Value) -> Option<Violation> {
    let (bad, implicit, values) = pod_or_containers(spec, |sc| {
        let t = &sc["seccompProfile"];
        if t.is_null() {
            return None;
        }
        let ty = t["type"].as_str().unwrap_or("");
        if ty == "RuntimeDefault" || ty == "Localhost" {
            Some(Ok(()))
        } else {
            Some(Err(ty.to_string()))
        }
    });
    if !bad.is_empty() {
        let values: Vec<String> = values.into_iter().collect();
        return Some((
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                bad.join(" and "),
                join_quote(&values)
            ),
        ));
    }
    (!implicit.is_empty()).then(|| {
        (
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&implicit)
            ),
        )
    })
}
