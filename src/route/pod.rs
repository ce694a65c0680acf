//! Route 1: a privileged pod on each control-plane node, through the workload cluster's API.
//! Works while that API answers (a partial partition, one isolated node, a proactive check).
//!
//! The pod shares the node's network and PID namespaces, mounts the node's `/` at `/host` and
//! runs the probe with `chroot /host`, so that `crictl`, `curl`, the certificates under
//! `/etc/kubernetes/pki/etcd` and the network are the node's own.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, HostPathVolumeSource, Pod, PodSpec, SecurityContext, Toleration, Volume, VolumeMount,
};
use k8s_openapi_ext::{ContainerExt, PodExt, PodSpecExt, ResourceBuilder};

use crate::labels;

/// The image only needs `chroot` and `sh` (everything else comes from the node).
pub const DEFAULT_IMAGE: &str = "docker.io/library/busybox:1.36";
pub const DEFAULT_NAMESPACE: &str = "kube-system";
pub const CONTAINER: &str = "probe";

/// What a pod needs to know about its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTarget {
    /// The control-plane node's name in reports (its Machine's).
    pub name: String,
    /// The Kubernetes Node to pin the pod to (the Machine's nodeRef, else its name).
    pub node_name: String,
}

#[derive(Debug, Clone)]
pub struct PodSettings {
    pub namespace: String,
    pub image: String,
    pub image_pull_secret: Option<String>,
    pub run_id: String,
    /// `activeDeadlineSeconds`: the kubelet kills the pod after this, even if we are gone.
    pub deadline: Duration,
}

/// A pod name that says what it is and stays a valid DNS label: `etcdnet-probe-<node>-<run>`.
pub fn pod_name(node: &str, run_id: &str) -> String {
    super::pod_name("etcdnet-probe-", node, run_id)
}

/// The probe pod for one node. `command` is the probe's argv as run on the host (it is
/// prefixed with `chroot /host`).
pub fn debug_pod(target: &PodTarget, settings: &PodSettings, command: &[String]) -> Pod {
    let host = Volume {
        name: "host".into(),
        host_path: Some(HostPathVolumeSource {
            path: "/".into(),
            type_: Some("Directory".into()),
        }),
        ..Default::default()
    };
    let mut argv = vec!["chroot".to_string(), "/host".to_string()];
    argv.extend(command.iter().cloned());
    let container = Container {
        resources: Some(super::small_resources("256Mi")),
        security_context: Some(SecurityContext {
            privileged: Some(true),
            ..Default::default()
        }),
        volume_mounts: Some(vec![VolumeMount {
            name: "host".into(),
            mount_path: "/host".into(),
            ..Default::default()
        }]),
        ..Container::new(CONTAINER)
            .image(&settings.image)
            .image_pull_policy("IfNotPresent")
            .command(argv)
    };
    let mut spec = PodSpec::container(container)
        .node_name(&target.node_name)
        .host_network(true)
        .host_pid(true)
        .restart_policy("Never")
        .active_deadline_seconds(settings.deadline.as_secs().max(1) as i64)
        .termination_grace_period_seconds(0)
        .automount_service_account_token(false)
        .enable_service_links(false)
        // Control-plane nodes are tainted; a node in trouble may be tainted more.
        .tolerations([Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }])
        .volumes([host]);
    if let Some(secret) = &settings.image_pull_secret {
        spec = spec.image_pull_secret(secret);
    }
    Pod::new(pod_name(&target.name, &settings.run_id))
        .namespace(&settings.namespace)
        .labels([
            (labels::MANAGED_BY, labels::MANAGED_BY_VALUE),
            (labels::NAME, "etcdnet-probe"),
            (labels::RUN_ID, settings.run_id.as_str()),
        ])
        .spec(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> PodSettings {
        PodSettings {
            namespace: "kube-system".into(),
            image: DEFAULT_IMAGE.into(),
            image_pull_secret: Some("regcred".into()),
            run_id: "k3x9q".into(),
            deadline: Duration::from_secs(60),
        }
    }

    #[test]
    fn names_are_dns_labels() {
        let n = pod_name("tkc-prod-7xk2p-4rz8m", "k3x9q");
        assert_eq!(n, "etcdnet-probe-tkc-prod-7xk2p-4rz8m-k3x9q");
        let long = pod_name(&"a".repeat(100), "k3x9q");
        assert!(long.len() <= 63, "{long}");
        crate::cli::validate_dns1123_label(&long).unwrap();
        let dash = pod_name(&format!("{}-b", "a".repeat(41)), "k3x9q");
        crate::cli::validate_dns1123_label(&dash).unwrap();
    }

    #[test]
    fn the_pod_is_what_the_node_needs() {
        let target = PodTarget {
            name: "tkc-cp-1".into(),
            node_name: "tkc-cp-1".into(),
        };
        let pod = debug_pod(
            &target,
            &settings(),
            &["sh".into(), "-c".into(), "echo".into()],
        );
        let v = serde_json::to_value(&pod).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["nodeName"], "tkc-cp-1");
        assert_eq!(spec["hostNetwork"], true);
        assert_eq!(spec["hostPID"], true);
        assert_eq!(spec["restartPolicy"], "Never");
        assert_eq!(spec["activeDeadlineSeconds"], 60);
        assert_eq!(spec["tolerations"][0]["operator"], "Exists");
        assert_eq!(spec["imagePullSecrets"][0]["name"], "regcred");
        assert_eq!(spec["volumes"][0]["hostPath"]["path"], "/");
        let c = &spec["containers"][0];
        assert_eq!(c["securityContext"]["privileged"], true);
        assert_eq!(c["command"][0], "chroot");
        assert_eq!(c["command"][1], "/host");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/host");
        assert_eq!(c["resources"]["requests"]["cpu"], "10m");
        let l = &v["metadata"]["labels"];
        assert_eq!(l["app.kubernetes.io/managed-by"], "kubectl-etcdnet");
        assert_eq!(l["app.kubernetes.io/name"], "etcdnet-probe");
        assert_eq!(l["etcdnet.kubectl.io/run-id"], "k3x9q");
        assert_eq!(v["metadata"]["namespace"], "kube-system");
    }
}
