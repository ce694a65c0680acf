//! Pod Security admission, as the built-in PodSecurity plugin answers a pod create
//! (kubernetes/kubernetes staging/src/k8s.io/pod-security-admission).
//!
//! A namespace labelled `pod-security.kubernetes.io/enforce: baseline|restricted` rejects a pod
//! that breaks the level with 403 Forbidden and the plugin's message, e.g.
//!
//! ```text
//! pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true,
//! hostPID=true), hostPath volumes (volume "host"), privileged (container "probe" must not set
//! securityContext.privileged=true)
//! ```
//!
//! `privileged`, or no label, admits (the cluster default is privileged). A `warn` label admits
//! and answers a `Warning: 299 - "would violate PodSecurity ..."` header, as the real one does.
//!
//! The checks the fake evaluates, with upstream's IDs and exact wording: capabilities_baseline,
//! hostNamespaces, hostPathVolumes, hostPorts, privileged; and for restricted
//! allowPrivilegeEscalation, capabilities_restricted (replaces capabilities_baseline),
//! restrictedVolumes (replaces hostPathVolumes), runAsNonRoot, runAsUser, seccompProfile. As
//! upstream, baseline checks come first, then restricted ones, each group sorted by check ID.
//! Not evaluated: AppArmor, SELinux, procMount, sysctls, seccomp at baseline, Windows host
//! process, probes' host fields, and the differences between policy versions (`enforce-version`
//! only shows in the message). Only creates are checked, not updates.

mod checks;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::status::ApiError;
use checks::*;

const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
const WARN: &str = "pod-security.kubernetes.io/warn";

/// One failed check: the reason, and its detail (shown in parentheses when not empty).
pub(crate) type Violation = (&'static str, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Privileged,
    Baseline,
    Restricted,
}

/// `level:version` from a mode's labels; None when the mode is not set. An invalid level counts
/// as restricted (upstream's ParseLevel), an invalid version as latest.
fn policy(labels: &BTreeMap<String, String>, mode: &str) -> Option<(Level, String)> {
    let level = match labels.get(mode)?.as_str() {
        "privileged" => Level::Privileged,
        "baseline" => Level::Baseline,
        _ => Level::Restricted,
    };
    let version = labels
        .get(&format!("{mode}-version"))
        .filter(|v| {
            v.strip_prefix("v1.")
                .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        })
        .cloned()
        .unwrap_or_else(|| "latest".to_string());
    Some((level, version))
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Privileged => "privileged",
        Level::Baseline => "baseline",
        Level::Restricted => "restricted",
    }
}

/// Admits or rejects a pod about to be created in a namespace with `labels`. Ok carries the
/// `Warning` header value when a `warn` level is broken.
pub fn admit(labels: &BTreeMap<String, String>, pod: &Value) -> Result<Option<String>, ApiError> {
    let name = crate::store::name(pod);
    if let Some((level, version)) = policy(labels, ENFORCE) {
        let found = evaluate(level, &pod["spec"]);
        if !found.is_empty() {
            return Err(ApiError {
                code: 403,
                reason: "Forbidden",
                message: format!(
                    "pods \"{name}\" is forbidden: violates PodSecurity \"{}:{version}\": {}",
                    level_name(level),
                    detail(&found)
                ),
                details: Some(json!({"name": name, "kind": "pods"})),
            });
        }
    }
    Ok(policy(labels, WARN).and_then(|(level, version)| {
        let found = evaluate(level, &pod["spec"]);
        (!found.is_empty()).then(|| {
            let text = format!(
                "would violate PodSecurity \"{}:{version}\": {}",
                level_name(level),
                detail(&found)
            );
            format!(
                "299 - \"{}\"",
                text.replace('\\', "\\\\").replace('"', "\\\"")
            )
        })
    }))
}

/// `reason (detail), reason, ...` as AggregateCheckResult.ForbiddenDetail joins them.
fn detail(found: &[Violation]) -> String {
    found
        .iter()
        .map(|(r, d)| {
            if d.is_empty() {
                r.to_string()
            } else {
                format!("{r} ({d})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every failed check at `level`, in upstream's order.
fn evaluate(level: Level, spec: &Value) -> Vec<Violation> {
    type Check = fn(&Value) -> Option<Violation>;
    let checks: &[Check] = match level {
        Level::Privileged => &[],
        Level::Baseline => &[
            capabilities_baseline,
            host_namespaces,
            host_path_volumes,
            host_ports,
            privileged,
        ],
        Level::Restricted => &[
            host_namespaces,
            host_ports,
            privileged,
            allow_privilege_escalation,
            capabilities_restricted,
            restricted_volumes,
            run_as_non_root,
            run_as_user,
            seccomp_restricted,
        ],
    };
    checks.iter().filter_map(|c| c(spec)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The plugin's probe pod, as far as Pod Security looks at it.
    fn probe() -> Value {
        json!({"metadata": {"name": "etcdnet-probe-cp1-k3x9q"}, "spec": {
            "hostNetwork": true, "hostPID": true,
            "containers": [{"name": "probe", "image": "busybox",
                            "securityContext": {"privileged": true},
                            "volumeMounts": [{"name": "host", "mountPath": "/host"}]}],
            "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]}})
    }

    #[test]
    fn baseline_rejects_the_probe_with_upstreams_words() {
        let e = admit(&labels(&[(ENFORCE, "baseline")]), &probe()).unwrap_err();
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "pods \"etcdnet-probe-cp1-k3x9q\" is forbidden: violates PodSecurity \"baseline:latest\": \
             host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume \"host\"), \
             privileged (container \"probe\" must not set securityContext.privileged=true)"
        );
    }

    #[test]
    fn restricted_lists_baseline_then_restricted_checks() {
        let e = admit(
            &labels(&[
                (ENFORCE, "restricted"),
                ("pod-security.kubernetes.io/enforce-version", "v1.30"),
            ]),
            &probe(),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"etcdnet-probe-cp1-k3x9q\" is forbidden: violates PodSecurity \"restricted:v1.30\": \
             host namespaces (hostNetwork=true, hostPID=true), \
             privileged (container \"probe\" must not set securityContext.privileged=true), \
             allowPrivilegeEscalation != false (container \"probe\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"probe\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             restricted volume types (volume \"host\" uses restricted volume type \"hostPath\"), \
             runAsNonRoot != true (pod or container \"probe\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"probe\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn privileged_or_no_label_admits_and_warn_warns() {
        assert_eq!(admit(&labels(&[]), &probe()).unwrap(), None);
        assert_eq!(
            admit(&labels(&[(ENFORCE, "privileged")]), &probe()).unwrap(),
            None
        );
        let w = admit(&labels(&[(WARN, "baseline")]), &probe())
            .unwrap()
            .unwrap();
        assert!(
            w.starts_with(
                "299 - \"would violate PodSecurity \\\"baseline:latest\\\": host namespaces"
            ),
            "{w}"
        );
        // An invalid level is enforced as restricted.
        let e = admit(&labels(&[(ENFORCE, "strict")]), &probe()).unwrap_err();
        assert!(e.message.contains("\"restricted:latest\""), "{}", e.message);
    }

    #[test]
    fn other_baseline_checks() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9, "hostPort": 443}],
             "securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN", "SYS_ADMIN"]}}},
            {"name": "b", "ports": [{"containerPort": 80}]}]}});
        let e = admit(&labels(&[(ENFORCE, "baseline")]), &pod).unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": \
             non-default capabilities (container \"a\" must not include \"NET_ADMIN\", \"SYS_ADMIN\" in securityContext.capabilities.add), \
             hostPort (container \"a\" uses hostPorts 443, 8080)"
        );
    }

    #[test]
    fn restricted_explicit_values() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {
            "securityContext": {"runAsNonRoot": false, "runAsUser": 0, "seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a", "securityContext": {
                "allowPrivilegeEscalation": false, "runAsUser": 0,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
            "volumes": [{"name": "s", "secret": {"secretName": "x"}}, {"name": "n", "nfs": {"server": "x"}}]}});
        let e = admit(&labels(&[(ENFORCE, "restricted")]), &pod).unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": \
             restricted volume types (volume \"n\" uses restricted volume type \"nfs\"), \
             runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false), \
             runAsUser=0 (pod and container \"a\" must not set runAsUser=0), \
             seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        let good = json!({"metadata": {"name": "p"}, "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "e", "emptyDir": {}}]}});
        assert_eq!(
            admit(&labels(&[(ENFORCE, "restricted")]), &good).unwrap(),
            None
        );
    }
}
