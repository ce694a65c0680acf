//! Route 1: a debug pod on each control-plane node, through the workload cluster's API.
//! Works while that API answers (a partial partition, one isolated node, a proactive check).
//!
//! The pod shares the node's network namespace, mounts the node's `/` read-only at `/host` and
//! runs the probe with `chroot /host`, so that `crictl`, `curl`, the certificates under
//! `/etc/kubernetes/pki/etcd` and the network are the node's own. It keeps only what that needs
//! (docs/security.md has the list and why): root (the node's etcd keys, containerd's socket and
//! systemd's are root's own files), `CAP_SYS_CHROOT`, `CAP_NET_ADMIN` and `CAP_NET_RAW` (to list
//! the node's firewall rules) and nothing else, the host network, the
//! host's `/`; it is not privileged, shares no PID namespace, cannot gain privileges, runs
//! under the runtime's default seccomp profile and cannot write its own image.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, HostPathVolumeSource, Pod, PodSpec, SeccompProfile, SecurityContext,
    Toleration, Volume, VolumeMount,
};
use k8s_openapi_ext::{ContainerExt, PodSpecExt};
use kube::api::Api;

use super::lifecycle::{self, Host, PodApi};
use super::{Address, Env, PodBasics, Reached, Run, Session, Target};
use crate::error::Result;
use crate::probe::script;
use crate::probe::{ReachError, ReachErrorKind};

/// The image only needs `chroot` and `sh` (everything else comes from the node). Pinned by the
/// digest of its multi-arch index, so that what runs as root on every control-plane node is
/// what was reviewed, whatever the tag is made to point at later; the tag stays for readers
/// (the runtime pulls by the digest). docs/images.md says where the digest comes from and how
/// to move it.
pub const DEFAULT_IMAGE: &str =
    "docker.io/library/busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";
pub(crate) const DEFAULT_NAMESPACE: &str = "kube-system";
pub(crate) const CONTAINER: &str = "probe";
pub(crate) const NODE_CRITICAL: &str = "system-node-critical";

#[derive(Debug, Clone)]
pub(crate) struct PodSettings {
    /// The namespace of the probe pods in the workload cluster.
    pub namespace: String,
    pub image: String,
    pub basics: PodBasics,
    /// Bound of each request to the workload API (create, watch, logs, delete).
    pub workload_timeout: Duration,
}

/// A pod name that says what it is and stays a valid DNS label: `etcdnet-probe-<node>-<run>`.
pub(crate) fn pod_name(node: &str, run_id: &str) -> String {
    super::pod_name("etcdnet-probe-", node, run_id)
}

/// The capabilities the probe pod keeps (every other one dropped): `chroot /host`, and reading
/// the node's firewall rules (`nft list ruleset` asks nf_tables over netlink, which answers
/// only with CAP_NET_ADMIN; legacy `iptables-save` opens a raw socket, CAP_NET_RAW, and asks
/// the tables with getsockopt, CAP_NET_ADMIN). The probe only lists: it changes no rule.
pub(crate) const PROBE_CAPABILITIES: &[&str] = &["SYS_CHROOT", "NET_ADMIN", "NET_RAW"];

/// The probe pod for one node: `name` is the node's name in reports, `node_name` the Node it is
/// pinned to. `command` is the probe's argv as run on the host (it is prefixed with
/// `chroot /host`).
pub(crate) fn debug_pod(
    name: &str,
    node_name: &str,
    settings: &PodSettings,
    command: &[String],
) -> Pod {
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
            privileged: Some(false),
            allow_privilege_escalation: Some(false),
            run_as_user: Some(0),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                // chroot; listing nftables (netlink) needs NET_ADMIN, and legacy
                // iptables-save's raw socket NET_RAW too (docs/security.md).
                add: Some(PROBE_CAPABILITIES.iter().map(|c| c.to_string()).collect()),
            }),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        // Read-only: the probe only reads the node. Its one write, its temporary folder, goes to
        // the node's /dev/shm (or /run), each a mount of its own under `/`: Kubernetes' readOnly
        // is not recursive unless `recursiveReadOnly` asks (KEP-3857; left unset on purpose),
        // so those stay writable while the node's root filesystem (/etc, /usr, /var/lib/etcd on
        // it, the kubelet's files) cannot be written through /host.
        volume_mounts: Some(vec![VolumeMount {
            name: "host".into(),
            mount_path: "/host".into(),
            read_only: Some(true),
            ..Default::default()
        }]),
        ..Container::new(CONTAINER)
            .image(&settings.image)
            .image_pull_policy("IfNotPresent")
            .command(argv)
    };
    let mut spec = PodSpec::container(container)
        .node_name(node_name)
        // The paths are checked from the node's own address, as etcd's peers see it.
        .host_network(true)
        // Control-plane nodes are tainted; a node in trouble may be tainted more.
        .tolerations([Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }])
        .volumes([host]);
    // A node under disk or memory pressure (etcd's NOSPACE case) still admits and keeps a
    // node-critical pod. The API server allows that class only in kube-system; elsewhere the pod
    // goes without it rather than being refused.
    if settings.namespace == "kube-system" {
        spec.priority_class_name = Some(NODE_CRITICAL.into());
    }
    settings.basics.pod(
        pod_name(name, &settings.basics.run_id),
        &settings.namespace,
        "etcdnet-probe",
        spec,
    )
}

/// `--via pod`'s help line.
pub(crate) const HELP: &str = "A debug pod pinned to each node (host network, the host's / at /host), through the workload cluster's API";

/// The pod route's flags, and `--image-pull-secret`, which every pod of the run gets (the
/// jumpbox's too): one block because `--help` shows it between the two.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PodArgs {
    /// Image of the probe pods (needs only chroot and sh; the probe uses the node's tools)
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE, help_heading = "Route: pod")]
    pub image: String,

    /// Pull secret for --image, in the pods' namespace
    #[arg(long, value_name = "SECRET", help_heading = "Route: pod")]
    pub image_pull_secret: Option<String>,

    /// Namespace of the probe pods in the workload cluster (must allow privileged pods)
    #[arg(long, value_name = "NAMESPACE", default_value = DEFAULT_NAMESPACE,
          value_parser = crate::names::parse_namespace, help_heading = "Route: pod")]
    pub pod_namespace: String,
}

impl PodSettings {
    /// The pod route's settings for one cluster: its flags, what every pod of the run has
    /// (`basics`), and the run's `--api-timeout` and `--timeout`.
    pub fn new(
        args: &PodArgs,
        basics: PodBasics,
        api_timeout: Duration,
        timeout: Duration,
    ) -> PodSettings {
        PodSettings {
            namespace: args.pod_namespace.clone(),
            image: args.image.clone(),
            basics,
            // The requests (create, watch, logs) get more time than the quick check, never
            // more than the run's: each is bounded, headers and body (`bounds`).
            workload_timeout: api_timeout.max(Duration::from_secs(10)).min(timeout),
        }
    }

    /// One pod per node it can reach.
    pub fn would_create(&self, targets: &[Target]) -> Vec<Pod> {
        targets
            .iter()
            .filter_map(|t| {
                let at = t.address.as_ref()?;
                Some(debug_pod(
                    &t.name,
                    &t.node_name,
                    self,
                    &script::argv(&at.probe),
                ))
            })
            .collect()
    }

    /// A session through the workload API, or [`Session::Unavailable`] when that does not answer.
    pub fn open<'a>(&'a self, env: Env<'a>) -> Result<Session<'a>> {
        let api = &env.workload.api;
        if !api.is_reachable() {
            return Ok(Session::Unavailable(ReachError {
                kind: ReachErrorKind::Unreachable,
                message: format!(
                    "the workload API {}, so no pod can run on the nodes; use --via jumpbox (through the Supervisor) or --via ssh",
                    api.said()
                ),
            }));
        }
        let client = env.workload.client(self.workload_timeout)?;
        Ok(Session::Pod(PodSession {
            api: PodApi::new(Api::namespaced(client, &self.namespace), Host::Workload),
            settings: self,
        }))
    }
}

/// The opened pod route: one pod per node through the workload API.
pub(crate) struct PodSession<'a> {
    api: PodApi,
    settings: &'a PodSettings,
}

impl PodSession<'_> {
    /// The progress line while it runs.
    pub fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane nodes with pods")
    }

    /// Reaches the target at `at` and runs the probe there.
    pub async fn probe(&self, t: &Target, at: &Address, run: &Run<'_>) -> Reached {
        let pod = debug_pod(
            &t.name,
            &t.node_name,
            self.settings,
            &script::argv(&at.probe),
        );
        match lifecycle::run(&self.api, &pod, run.tracker, run.bound, run.keep).await {
            Ok(done) => crate::probe::parse::parse(&t.name, done.log.as_bytes())
                .map_err(|e| ReachError {
                    kind: ReachErrorKind::BadOutput,
                    message: format!(
                        "{e} (pod exit code {})",
                        done.exit_code
                            .map(|c| c.to_string())
                            .unwrap_or_else(|| "?".into())
                    ),
                })
                .into(),
            Err(f) => Err(lifecycle::reach_error(
                f,
                &self.settings.namespace,
                lifecycle::PodRoute::Pod,
            ))
            .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> PodSettings {
        PodSettings {
            namespace: "kube-system".into(),
            image: DEFAULT_IMAGE.into(),
            basics: PodBasics {
                image_pull_secret: Some("regcred".into()),
                run_id: "k3x9q".into(),
                deadline: Duration::from_secs(60),
            },
            workload_timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn settings_come_from_the_routes_flags_and_the_runs_bounds() {
        let basics = settings().basics;
        let args = crate::route::RouteArgs::parse(&[]).pod;
        let secs = Duration::from_secs;
        let s = PodSettings::new(&args, basics.clone(), secs(5), secs(120));
        assert_eq!(
            (s.namespace.as_str(), s.image.as_str()),
            ("kube-system", DEFAULT_IMAGE)
        );
        assert_eq!(s.basics.run_id, "k3x9q");
        assert_eq!(s.workload_timeout, secs(10), "at least 10s");
        let args = crate::route::RouteArgs::parse(&[
            "--pod-namespace",
            "etcdnet",
            "--image",
            "busybox",
            "--image-pull-secret",
            "regcred",
        ])
        .pod;
        assert_eq!(args.image_pull_secret.as_deref(), Some("regcred"));
        let s = PodSettings::new(&args, basics, secs(300), secs(120));
        assert_eq!(
            (s.namespace.as_str(), s.image.as_str()),
            ("etcdnet", "busybox")
        );
        assert_eq!(s.workload_timeout, secs(120), "at most --timeout");
    }

    #[test]
    fn names_are_dns_labels() {
        let n = pod_name("tkc-prod-7xk2p-4rz8m", "k3x9q");
        assert_eq!(n, "etcdnet-probe-tkc-prod-7xk2p-4rz8m-k3x9q");
        let long = pod_name(&"a".repeat(100), "k3x9q");
        assert!(long.len() <= 63, "{long}");
        crate::names::validate_dns1123_label(&long).unwrap();
        let dash = pod_name(&format!("{}-b", "a".repeat(41)), "k3x9q");
        crate::names::validate_dns1123_label(&dash).unwrap();
    }

    /// Both defaults are `name:tag@sha256:<64 lowercase hex>` (docs/images.md): the tag for the
    /// reader, the index digest for the runtime: a tag alone may be moved to another image.
    #[test]
    fn default_images_are_pinned_by_digest() {
        for image in [DEFAULT_IMAGE, crate::route::jumpbox::DEFAULT_IMAGE] {
            let (name, digest) = image.split_once('@').expect(image);
            let hex = digest.strip_prefix("sha256:").expect(image);
            assert_eq!(hex.len(), 64, "{image}");
            assert!(
                hex.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{image}"
            );
            let last = name.rsplit('/').next().unwrap();
            assert!(last.contains(':'), "the tag stays, for the reader: {image}");
        }
    }

    #[test]
    fn node_critical_only_where_the_api_server_allows_it() {
        let elsewhere = PodSettings {
            namespace: "etcdnet".into(),
            ..settings()
        };
        let pod = debug_pod("cp", "cp", &elsewhere, &["true".into()]);
        assert_eq!(pod.spec.unwrap().priority_class_name, None);
    }

    #[test]
    fn the_pod_is_what_the_node_needs() {
        let pod = debug_pod(
            "tkc-cp-1",
            "tkc-cp-1",
            &settings(),
            &["sh".into(), "-c".into(), "echo".into()],
        );
        let v = serde_json::to_value(&pod).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["nodeName"], "tkc-cp-1");
        assert_eq!(spec["hostNetwork"], true);
        assert_eq!(
            spec["hostPID"],
            serde_json::Value::Null,
            "no PID namespace shared"
        );
        assert_eq!(spec["priorityClassName"], "system-node-critical");
        assert_eq!(spec["restartPolicy"], "Never");
        assert_eq!(spec["activeDeadlineSeconds"], 60);
        assert_eq!(spec["tolerations"][0]["operator"], "Exists");
        assert_eq!(spec["imagePullSecrets"][0]["name"], "regcred");
        assert_eq!(spec["volumes"][0]["hostPath"]["path"], "/");
        let c = &spec["containers"][0];
        let sc = &c["securityContext"];
        assert_eq!(sc["privileged"], false);
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(
            sc["runAsUser"], 0,
            "the node's etcd keys are root's own files"
        );
        assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
        assert_eq!(
            sc["capabilities"]["add"],
            serde_json::json!(["SYS_CHROOT", "NET_ADMIN", "NET_RAW"])
        );
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
        assert_eq!(c["command"][0], "chroot");
        assert_eq!(c["command"][1], "/host");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/host");
        assert_eq!(
            c["volumeMounts"][0]["readOnly"], true,
            "the probe only reads"
        );
        assert_eq!(
            c["volumeMounts"][0]["recursiveReadOnly"],
            serde_json::Value::Null,
            "the node's /dev/shm stays writable for the probe's temporary folder"
        );
        assert_eq!(c["resources"]["requests"]["cpu"], "10m");
        let l = &v["metadata"]["labels"];
        assert_eq!(l["app.kubernetes.io/managed-by"], "kubectl-etcdnet");
        assert_eq!(l["app.kubernetes.io/name"], "etcdnet-probe");
        assert_eq!(l["etcdnet.kubectl.io/run-id"], "k3x9q");
        assert_eq!(v["metadata"]["namespace"], "kube-system");
    }
}
