//! The jumpbox pod's spec: one pod in the vSphere Namespace with the cluster's key mounted
//! read-only, running `jumpbox.sh` for every VM, and the bounds of what it may print.
//!
//! The pod is a vSphere Pod: spherelet on an ESXi host runs it, not a kubelet, so nothing here
//! relies on what only the kubelet is known to do. In particular not on `fsGroup` (the kubelet's
//! `SetVolumeOwnership` gives a volume's files to that group; spherelet's handling of it is not
//! documented): the key is mounted readable by any user of the pod, and the script copies it
//! into its own in-memory directory at 0600 before ssh runs, as VMware's own jumpbox recipe
//! does (`cp` of the mounted key, `chmod 600`; "SSH to TKG Service Cluster Nodes as the System
//! User Using a Private Key").

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod, PodSecurityContext,
    PodSpec, ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi_ext::{ContainerExt, PodSpecExt};

use super::JumpboxSettings;
use crate::probe::script;
use crate::route::lifecycle::MAX_LOG_BYTES;
use crate::route::ssh::{locked_option_words, remote_probe_command, secret_name, KEY_FILE};
use crate::route::Address;

pub(crate) const JUMPBOX_SH: &str = include_str!("jumpbox.sh");
/// An image with an OpenSSH client and a POSIX sh (alpine/git ships both). Pinned by the digest
/// of its multi-arch index: this pod holds the key to every control-plane VM, so what it runs is
/// what was reviewed, whatever the tag is made to point at later (docs/images.md: where the
/// digest comes from, how to move it).
pub const DEFAULT_IMAGE: &str =
    "docker.io/alpine/git:2.47.2@sha256:062a01ad7a0eb17cff382bc5e26086b4d710e56dfdfdf001109a49b6d9bd378c";
pub const KEY_DIR: &str = "/etc/etcdnet/ssh";
/// The user and group the jumpbox runs as (`nobody`, in every image's /etc/passwd: ssh refuses
/// to run as a user it cannot look up).
pub(crate) const NOBODY: i64 = 65534;
/// The mode of the key in the secret volume: readable by every user of the pod, as no runtime
/// is known to give the file to the pod's user without `fsGroup`. The pod has one container,
/// running only our script as one user, and the volume is in no other pod. ssh never reads this
/// file: the script first copies it to a file of its own at 0600 in the pod's memory
/// (OpenSSH `authfile.c` `sshkey_perm_ok` refuses a key owned by the user that others may read,
/// and a runtime may well give the file to the pod's user).
pub(crate) const KEY_MODE: i32 = 0o444;
/// `--dry-run` shows the pod with this in the nonce's place: the real one is drawn when the
/// run starts, and is of no use to anyone after it.
pub(crate) const DRY_RUN_NONCE: &str = "drawn-at-each-run";

/// What the script keeps of a node's output (ssh's stdout and stderr together) in its section:
/// as much as one probe's pod log may hold ([`MAX_LOG_BYTES`], above the probe's largest
/// document), and one byte more, which tells the plugin that it was cut.
pub(crate) const NODE_OUTPUT_CAP: u64 = MAX_LOG_BYTES + 1;
/// The script's own bytes in one VM's framed section besides the node's output: the frame
/// lines (a 32-character nonce), four port lines, the host key (an RSA key of 16384 bits is
/// under 3 KiB of base64) and ssh's exit: a few KiB; 64 KiB leaves room.
const SECTION_OVERHEAD: u64 = 64 * 1024;

/// The most the one pod's log may hold for `vms` VMs, past which it is not read: the limit is
/// scaled with the number of VMs (not cut per section), so that each section can hold as much
/// as one probe's pod log can on the other route. Every section is bounded by the script
/// ([`NODE_OUTPUT_CAP`]), so only a script that misbehaves exceeds this.
pub(crate) fn log_limit(vms: usize) -> u64 {
    (vms.max(1) as u64).saturating_mul(NODE_OUTPUT_CAP + SECTION_OVERHEAD)
}

/// The one jumpbox pod's name: the cluster's, as there is one per diagnosis of a cluster.
pub(crate) fn pod_name(cluster: &str, run_id: &str) -> String {
    crate::route::pod_name("etcdnet-jumpbox-", cluster, run_id)
}

/// A new nonce for one run's pod: 128 random bits from the operating system, in hex. None when
/// the system has no randomness to give (then no pod is made: a guessable nonce would let a
/// node forge another's section).
pub(crate) fn new_nonce() -> Option<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where the nonce is in the jumpbox container's command (`sh -c SCRIPT $0 NONCE ...`).
pub const ARGV_NONCE: usize = 4;
/// Where the key files are in it (their paths, blank-separated: one per cluster).
pub(crate) const ARGV_KEYS: usize = 7;
/// Where each VM's key number is in it (blank-separated, one per VM in section order).
pub const ARGV_KEY_OF_VMS: usize = 12;
/// Where the VMs' `IP REMOTE_COMMAND` pairs start in it, one pair per VM in section order.
pub const ARGV_VMS: usize = 13;

/// Where the key of the pod's cluster number `n` (from 0) is mounted: [`KEY_DIR`] for the
/// first (the only one of a cluster's own jumpbox), `KEY_DIR-<n>` for the others of a vSphere
/// Namespace's. Made of a number only: no cluster's name is in a path or the script.
pub(crate) fn key_dir(n: usize) -> String {
    if n == 0 {
        KEY_DIR.to_string()
    } else {
        format!("{KEY_DIR}-{n}")
    }
}

/// The name of `-A`'s one jumpbox for the clusters of vSphere Namespace `namespace`.
pub(crate) fn namespace_pod_name(namespace: &str, run_id: &str) -> String {
    crate::route::pod_name("etcdnet-jumpbox-ns-", namespace, run_id)
}

/// What the jumpbox's VM holds besides its in-memory /tmp: a vSphere Pod is a VM of its own
/// with its own Linux kernel and pod agent, "sized precisely for the workload that it
/// accommodates" from the pod's resources, with "explicit resource reservations" (vSphere 8,
/// "What Is a vSphere Pod?"; vSphere 7, "Set Default Memory and CPU Reservations and Limits for
/// vSphere Pod Containers": container requests become the vSphere Pod's reservations). So the
/// memory is not a share of a big node's but all the VM has: its kernel, sh and up to
/// `--parallel` ssh clients with their key exchanges. 256 MiB holds that with room; the
/// community's jumpbox recipes ask 2 GiB, for a shell with yum in it.
pub(crate) const BASE_MEMORY_MIB: u64 = 256;

/// The jumpbox container's requests and limits for a `/tmp` of `tmp_mib` MiB (charged to the
/// container's memory, and on a vSphere Pod inside its VM's). The requests are reserved on the
/// ESXi host as the VM starts: the base memory whatever the number of VMs (the sections fill
/// /tmp only as they come) and a quarter of a CPU for the key exchanges. The CPU limit is one
/// whole vCPU: a VM has whole vCPUs, and a fraction would only throttle the handshakes.
fn resources(tmp_mib: u64) -> ResourceRequirements {
    let quantities = |cpu: &str, mem: u64| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(format!("{mem}Mi"))),
        ])
    };
    ResourceRequirements {
        requests: Some(quantities("250m", BASE_MEMORY_MIB)),
        limits: Some(quantities("1", BASE_MEMORY_MIB + tmp_mib)),
        ..Default::default()
    }
}

/// The jumpbox pod for the VMs at `vms` (their sections' order): one pod for them all, its log
/// framed with `nonce`.
pub fn jumpbox_pod(vms: &[&Address], nonce: &str, s: &JumpboxSettings) -> Pod {
    let vms: Vec<(usize, &Address)> = vms.iter().map(|a| (0, *a)).collect();
    keyed_pod(
        pod_name(&s.cluster, &s.basics.run_id),
        &[s.cluster.as_str()],
        &vms,
        nonce,
        s,
    )
}

/// The pod named `name` for `clusters` (each one's `<cluster>-ssh` secret mounted at its own
/// [`key_dir`]) and `vms`: each VM with the number of its cluster in `clusters`, whose key
/// alone the script offers it. `s` gives what the clusters share (namespace, image, pod
/// basics, ssh user and timeout); its `cluster` is not used.
pub(crate) fn keyed_pod(
    name: String,
    clusters: &[&str],
    vms: &[(usize, &Address)],
    nonce: &str,
    s: &JumpboxSettings,
) -> Pod {
    let key_volume = |n: usize| -> String {
        if n == 0 {
            "ssh-key".into()
        } else {
            format!("ssh-key-{n}")
        }
    };
    let keys: Vec<Volume> = clusters
        .iter()
        .enumerate()
        .map(|(n, cluster)| Volume {
            name: key_volume(n),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret_name(cluster)),
                default_mode: Some(KEY_MODE),
                items: Some(vec![KeyToPath {
                    key: KEY_FILE.into(),
                    path: KEY_FILE.into(),
                    mode: Some(KEY_MODE),
                }]),
                optional: Some(false),
            }),
            ..Default::default()
        })
        .collect();
    let key_files: Vec<String> = (0..clusters.len())
        .map(|n| format!("{}/{KEY_FILE}", key_dir(n)))
        .collect();
    debug_assert!(vms.iter().all(|(n, _)| *n < clusters.len()));
    // The probes' `parallel` bounds the VMs the script works on at once, as the driver bounds the
    // nodes the other routes reach at once (every target carries the same value).
    let parallel = vms
        .iter()
        .map(|(_, a)| a.probe.parallel)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut argv = vec![
        "sh".to_string(),
        "-c".into(),
        JUMPBOX_SH.into(),
        "etcdnet-jumpbox".into(),
        nonce.to_string(),
        s.ssh.user.clone(),
        s.ssh.connect_timeout.as_secs().max(1).to_string(),
        key_files.join(" "),
        // The same options the ssh route locks, before the script's own (see `ssh/options.rs`).
        locked_option_words(),
        parallel.to_string(),
        NODE_OUTPUT_CAP.to_string(),
        script::PROBE_SH.to_string(),
        vms.iter()
            .map(|(n, _)| n.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    ];
    debug_assert_eq!((argv[ARGV_NONCE].as_str(), argv.len()), (nonce, ARGV_VMS));
    for (_, at) in vms {
        // The nonce is in no remote command: the node never sees it.
        argv.extend([at.ip.to_string(), remote_probe_command(&at.probe)]);
    }
    // Every VM's section (and known_hosts file) is written here before the log is printed: the
    // image is read-only. In memory, so its size is also charged to the container's memory.
    let tmp_bytes = log_limit(vms.len()) + (1 << 20);
    let tmp_mib = tmp_bytes.div_ceil(1 << 20);
    let tmp = Volume {
        name: "tmp".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(Quantity(format!("{tmp_mib}Mi"))),
        }),
        ..Default::default()
    };
    let container = Container {
        resources: Some(resources(tmp_mib)),
        volume_mounts: Some(
            (0..clusters.len())
                .map(|n| VolumeMount {
                    name: key_volume(n),
                    mount_path: key_dir(n),
                    read_only: Some(true),
                    ..Default::default()
                })
                .chain([VolumeMount {
                    name: "tmp".into(),
                    mount_path: "/tmp".into(),
                    ..Default::default()
                }])
                .collect(),
        ),
        // ssh looks for ~/.ssh; the user's home in the image may not exist.
        env: Some(vec![EnvVar {
            name: "HOME".into(),
            value: Some("/tmp".into()),
            ..Default::default()
        }]),
        // The Pod Security `restricted` level, and nothing an ssh client does not need.
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Container::new("jumpbox")
            .image(&s.image)
            .image_pull_policy("IfNotPresent")
            .command(argv)
    };
    let mut spec = PodSpec::container(container).volumes(keys.into_iter().chain([tmp]));
    // Not root: `nobody`, which every image has (the restricted level forbids root). No
    // `fsGroup`: the key is readable without it (KEY_MODE) and ssh reads the script's own copy.
    spec.security_context = Some(PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    s.basics.pod(name, &s.namespace, "etcdnet-jumpbox", spec)
}
