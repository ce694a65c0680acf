//! A node's root directory: the kubeadm file layout, the etcd static-pod manifest, the two
//! stand-ins (crictl, systemctl) and the identifiers crictl shows.
//!
//! ```text
//! <root>/etc/kubernetes/manifests/etcd.yaml
//! <root>/etc/kubernetes/pki/etcd/{ca,server,peer,healthcheck-client}.{crt,key}
//! <root>/etc/kubernetes/pki/apiserver-etcd-client.{crt,key}
//! <root>/var/lib/etcd/                 etcd's data dir (0700)
//! <root>/var/log/etcd.log              the current etcd's stderr; etcd.log.<attempt> for older ones
//! <root>/usr/local/bin/{crictl,systemctl}
//! <root>/usr/local/bin/etcd            etcd 3.5 only: a link to its binary (the image's path)
//! <root>/run/crictl/                   node.env, kubelet.env, containers/<attempt>.env (lab -> shims)
//! <root>/.view                         mount point of the per-command scratch tmpfs
//! ```

use std::fs;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::config::{EtcdVersion, Logger, LIVENESS_PROBE_PATH, STARTUP_PROBE_PATH};

const CRICTL_SH: &str = include_str!("sh/crictl.sh");
const SYSTEMCTL_SH: &str = include_str!("sh/systemctl.sh");

/// One control-plane "VM".
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    /// The node name: hostname, etcd member name, certificate CN.
    pub name: String,
    /// 1-based position in the lab.
    pub index: usize,
    /// The node's address on eth0 (inside its namespace).
    pub ip: Ipv4Addr,
    /// The network namespace (`ip netns exec <netns> ...`).
    pub netns: String,
    /// The node's root directory on the host.
    pub root: PathBuf,
    /// The etcd this node runs.
    pub etcd: EtcdVersion,
    /// The format of this node's etcd log.
    pub logger: Logger,
}

impl Node {
    /// `<root>/etc/kubernetes/pki/etcd` (ca.crt, server.crt, peer.crt, healthcheck-client.crt, ...).
    pub fn etcd_pki(&self) -> PathBuf {
        self.root.join("etc/kubernetes/pki/etcd")
    }
    /// `<root>/etc/kubernetes/manifests/etcd.yaml`.
    pub fn manifest(&self) -> PathBuf {
        self.root.join("etc/kubernetes/manifests/etcd.yaml")
    }
    /// `<root>/var/log/etcd.log`: the running (or last) etcd's stderr.
    pub fn log_file(&self) -> PathBuf {
        self.root.join("var/log/etcd.log")
    }
    /// `<root>/var/log/etcd.log.past-<generation>-<attempt>`: the lines a container's log holds
    /// from before the lab started its process (`Lab::age`), printed by `crictl logs` first.
    pub fn past_log(&self, generation: u32, attempt: u32) -> PathBuf {
        self.root
            .join(format!("var/log/etcd.log.past-{generation}-{attempt}"))
    }
    /// `<root>/var/lib/etcd`.
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("var/lib/etcd")
    }
    /// `https://<ip>:2379`.
    pub fn client_url(&self) -> String {
        format!("https://{}:2379", self.ip)
    }
    /// `https://<ip>:2380`.
    pub fn peer_url(&self) -> String {
        format!("https://{}:2380", self.ip)
    }
    /// The directory the lab and the shims share.
    pub(crate) fn state_dir(&self) -> PathBuf {
        self.root.join("run/crictl")
    }
    /// The container ID crictl shows for attempt `attempt` (stable per node and attempt) of the
    /// node's first etcd pod.
    pub fn container_id(&self, attempt: u32) -> String {
        self.container_id_in(0, attempt)
    }
    /// The container ID of attempt `attempt` of the node's etcd pod number `generation` (0 at
    /// start, + 1 with every `Lab::replace_member`: a new pod, a new container from attempt 0).
    pub fn container_id_in(&self, generation: u32, attempt: u32) -> String {
        match generation {
            0 => sha256_hex(&format!("etcdnet-lab/{}/etcd/{attempt}", self.name)),
            g => sha256_hex(&format!("etcdnet-lab/{}/etcd/g{g}/{attempt}", self.name)),
        }
    }
    /// The pod sandbox ID crictl shows (the node's first etcd pod).
    pub fn pod_sandbox_id(&self) -> String {
        self.pod_sandbox_id_in(0)
    }
    /// The pod sandbox ID of the node's etcd pod number `generation`.
    pub fn pod_sandbox_id_in(&self, generation: u32) -> String {
        match generation {
            0 => sha256_hex(&format!("etcdnet-lab/{}/pod", self.name)),
            g => sha256_hex(&format!("etcdnet-lab/{}/pod/g{g}", self.name)),
        }
    }
}

pub(crate) fn sha256_hex(s: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, s.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// etcd's command line, exactly as the manifest lists it: kubeadm's flags (sorted, as kubeadm's
/// ArgumentsToCommand writes them) for etcd 3.4/3.5, with kubeadm's in-node paths. `etcd` is
/// found on the node's PATH: `/usr/local/bin/etcd` (where the etcd image has it) for 3.5, Debian's
/// `/usr/bin/etcd` for 3.4, so `/proc/<pid>/cmdline` is the manifest's command. The members
/// bootstrap together (`--initial-cluster` lists all of them, state "new"), where a real kubeadm
/// cluster grew one join at a time (`--initial-cluster-state=existing` on the joiners). A member
/// that joins a running cluster (`Lab::replace_member`, after `etcdctl member add`) is `existing`:
/// kubeadm's join manifest, `--initial-cluster-state=existing` and the cluster it joins.
pub(crate) fn etcd_argv(node: &Node, nodes: &[Node], existing: bool) -> Vec<String> {
    let ip = node.ip;
    let cluster: Vec<String> = nodes
        .iter()
        .map(|n| format!("{}={}", n.name, n.peer_url()))
        .collect();
    let mut flags = vec![
        format!("--advertise-client-urls=https://{ip}:2379"),
        "--cert-file=/etc/kubernetes/pki/etcd/server.crt".into(),
        "--client-cert-auth=true".into(),
        "--data-dir=/var/lib/etcd".into(),
        "--experimental-initial-corrupt-check=true".into(),
        "--experimental-watch-progress-notify-interval=5s".into(),
        format!("--initial-advertise-peer-urls=https://{ip}:2380"),
        format!("--initial-cluster={}", cluster.join(",")),
        "--initial-cluster-state=existing".into(),
        "--key-file=/etc/kubernetes/pki/etcd/server.key".into(),
        format!("--listen-client-urls=https://127.0.0.1:2379,https://{ip}:2379"),
        "--listen-metrics-urls=http://127.0.0.1:2381".into(),
        format!("--listen-peer-urls=https://{ip}:2380"),
        format!("--name={}", node.name),
        "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt".into(),
        "--peer-client-cert-auth=true".into(),
        "--peer-key-file=/etc/kubernetes/pki/etcd/peer.key".into(),
        "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt".into(),
        "--snapshot-count=10000".into(),
        "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt".into(),
    ];
    if !existing {
        flags.retain(|f| f != "--initial-cluster-state=existing");
    }
    // etcd 3.4 logs capnslog text unless told otherwise. 3.5 logs zap JSON to stderr by default
    // and kubeadm's 3.5 manifest has no --logger flag (3.5 rejects --logger=capnslog).
    if node.etcd == EtcdVersion::V3_4 && node.logger == Logger::Zap {
        flags.push("--logger=zap".into());
        flags.sort();
    }
    let mut argv = vec!["etcd".to_string()];
    argv.extend(flags);
    argv
}

/// The static-pod manifest kubeadm writes for `argv` (its GetEtcdPodSpec, serialized as kubeadm
/// does: fields sorted, `creationTimestamp: null`, `status: {}`).
pub(crate) fn manifest_yaml(node: &Node, argv: &[String], image: &str) -> String {
    let mut y = String::new();
    y.push_str("apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n");
    y.push_str(&format!(
        "    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://{}:2379\n",
        node.ip
    ));
    y.push_str(
        "  creationTimestamp: null\n  labels:\n    component: etcd\n    tier: control-plane\n",
    );
    y.push_str("  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n");
    for a in argv {
        y.push_str(&format!("    - {a}\n"));
    }
    y.push_str(&format!(
        "    image: {image}\n    imagePullPolicy: IfNotPresent\n"
    ));
    let probe = |name: &str, path: &str, failures: u32| {
        format!(
            "    {name}:\n      failureThreshold: {failures}\n      httpGet:\n        host: 127.0.0.1\n        \
             path: {path}\n        port: 2381\n        scheme: HTTP\n      initialDelaySeconds: 10\n      \
             periodSeconds: 10\n      timeoutSeconds: 15\n"
        )
    };
    y.push_str(&probe("livenessProbe", LIVENESS_PROBE_PATH, 8));
    y.push_str("    name: etcd\n    resources:\n      requests:\n        cpu: 100m\n        memory: 100Mi\n");
    y.push_str(&probe("startupProbe", STARTUP_PROBE_PATH, 24));
    y.push_str(
        "    volumeMounts:\n    - mountPath: /var/lib/etcd\n      name: etcd-data\n    \
         - mountPath: /etc/kubernetes/pki/etcd\n      name: etcd-certs\n  hostNetwork: true\n  \
         priority: 2000001000\n  priorityClassName: system-node-critical\n  securityContext:\n    \
         seccompProfile:\n      type: RuntimeDefault\n  volumes:\n  - hostPath:\n      \
         path: /etc/kubernetes/pki/etcd\n      type: DirectoryOrCreate\n    name: etcd-certs\n  \
         - hostPath:\n      path: /var/lib/etcd\n      type: DirectoryOrCreate\n    name: etcd-data\n\
         status: {}\n",
    );
    y
}

fn mkdir(path: &Path, mode: u32) -> Result<()> {
    fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn write(path: &Path, contents: &str, mode: u32) -> Result<()> {
    fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Writes `KEY='value'` lines for the shims to source.
pub(crate) fn env_file(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}='{}'\n", v.replace('\'', "")))
        .collect()
}

/// Creates the node's directories, manifest and shims (the certificates come from [`crate::pki`]).
pub(crate) fn lay_out(node: &Node, nodes: &[Node], image: &str, now_ns: u128) -> Result<()> {
    let r = &node.root;
    for d in [
        "etc/kubernetes/manifests",
        "etc/kubernetes/pki/etcd",
        "var/log",
        "usr/local/bin",
        "run/crictl/containers",
        ".view",
    ] {
        mkdir(&r.join(d), 0o755)?;
    }
    // etcd 3.4 warns about, and 3.5 refuses, a data dir readable by others.
    mkdir(&node.data_dir(), 0o700)?;
    if node.etcd == EtcdVersion::V3_5 {
        // A link, not a copy (23 MB per node): the node view shows the host's / underneath, so
        // the absolute target resolves there too.
        std::os::unix::fs::symlink(node.etcd.binary(), r.join("usr/local/bin/etcd"))
            .context("linking etcd 3.5 into the node's /usr/local/bin")?;
    }
    let state = node.state_dir();
    let state_str = state.to_string_lossy();
    write(
        &r.join("usr/local/bin/crictl"),
        &CRICTL_SH.replace("@STATE@", &state_str),
        0o755,
    )?;
    write(
        &r.join("usr/local/bin/systemctl"),
        &SYSTEMCTL_SH.replace("@STATE@", &state_str),
        0o755,
    )?;
    write_pod(node, nodes, image, 0, false, now_ns)?;
    set_kubelet(node, true, now_ns)
}

/// Writes the manifest of the node's etcd pod number `generation` (`existing`: a member joining
/// a running cluster) and what crictl says about that pod.
pub(crate) fn write_pod(
    node: &Node,
    nodes: &[Node],
    image: &str,
    generation: u32,
    existing: bool,
    now_ns: u128,
) -> Result<()> {
    let argv = etcd_argv(node, nodes, existing);
    let manifest = manifest_yaml(node, &argv, image);
    write(&node.manifest(), &manifest, 0o600)?;
    let hash = sha256_hex(&manifest);
    write(
        &node.state_dir().join("node.env"),
        &env_file(&[
            ("NODE", node.name.clone()),
            ("POD_NAME", format!("etcd-{}", node.name)),
            ("POD_ID", node.pod_sandbox_id_in(generation)),
            // A static pod's UID is the hash of its manifest (32 hex digits).
            ("POD_UID", hash[..32].to_string()),
            ("POD_CREATED", now_ns.to_string()),
            ("IMAGE", image.to_string()),
            ("IMAGE_ID", format!("sha256:{}", sha256_hex(image))),
            ("CONTAINER_HASH", hash[32..40].to_string()),
        ]),
        0o644,
    )
}

/// What the systemctl stand-in answers for `kubelet`.
pub(crate) fn set_kubelet(node: &Node, active: bool, since_ns: u128) -> Result<()> {
    write(
        &node.state_dir().join("kubelet.env"),
        &env_file(&[
            (
                "ACTIVE",
                if active { "active" } else { "inactive" }.to_string(),
            ),
            ("SINCE", (since_ns / 1_000_000_000).to_string()),
        ]),
        0o644,
    )
}
