//! The jumpbox pod's spec: one pod in the vSphere Namespace with the cluster's key mounted
//! read-only, running `jumpbox.sh` for every VM, and the bounds of what it may print.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod, PodSecurityContext,
    PodSpec, SeccompProfile, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi_ext::{ContainerExt, PodSpecExt};

use super::JumpboxSettings;
use crate::probe::script;
use crate::route::lifecycle::MAX_LOG_BYTES;
use crate::route::ssh::{locked_option_words, remote_probe_command, secret_name, KEY_FILE};
use crate::route::Address;

pub const JUMPBOX_SH: &str = include_str!("jumpbox.sh");
/// An image with an OpenSSH client and a POSIX sh (alpine/git ships both). Pinned by the digest
/// of its multi-arch index: this pod holds the key to every control-plane VM, so what it runs is
/// what was reviewed, whatever the tag is made to point at later (docs/images.md: where the
/// digest comes from, how to move it).
pub const DEFAULT_IMAGE: &str =
    "docker.io/alpine/git:2.47.2@sha256:062a01ad7a0eb17cff382bc5e26086b4d710e56dfdfdf001109a49b6d9bd378c";
pub const KEY_DIR: &str = "/etc/etcdnet/ssh";
/// The user and group the jumpbox runs as (`nobody`, in every image's /etc/passwd: ssh refuses
/// to run as a user it cannot look up).
pub const NOBODY: i64 = 65534;
/// `--dry-run` shows the pod with this in the nonce's place: the real one is drawn when the
/// run starts, and is of no use to anyone after it.
pub const DRY_RUN_NONCE: &str = "drawn-at-each-run";

/// What the script keeps of a node's output (ssh's stdout and stderr together) in its section:
/// as much as one probe's pod log may hold ([`MAX_LOG_BYTES`], above the probe's largest
/// document), and one byte more, which tells the plugin that it was cut.
pub const NODE_OUTPUT_CAP: u64 = MAX_LOG_BYTES + 1;
/// The script's own bytes in one VM's framed section besides the node's output: the frame
/// lines (a 32-character nonce), four port lines, the host key (an RSA key of 16384 bits is
/// under 3 KiB of base64) and ssh's exit: a few KiB; 64 KiB leaves room.
const SECTION_OVERHEAD: u64 = 64 * 1024;

/// The most the one pod's log may hold for `vms` VMs, past which it is not read: the limit is
/// scaled with the number of VMs (not cut per section), so that each section can hold as much
/// as one probe's pod log can on the other route. Every section is bounded by the script
/// ([`NODE_OUTPUT_CAP`]), so only a script that misbehaves exceeds this.
pub fn log_limit(vms: usize) -> u64 {
    (vms.max(1) as u64).saturating_mul(NODE_OUTPUT_CAP + SECTION_OVERHEAD)
}

/// The one jumpbox pod's name: the cluster's, as there is one per diagnosis of a cluster.
pub fn pod_name(cluster: &str, run_id: &str) -> String {
    crate::route::pod_name("etcdnet-jumpbox-", cluster, run_id)
}

/// A new nonce for one run's pod: 128 random bits from the operating system, in hex. None when
/// the system has no randomness to give (then no pod is made: a guessable nonce would let a
/// node forge another's section).
pub fn new_nonce() -> Option<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where the nonce is in the jumpbox container's command (`sh -c SCRIPT $0 NONCE ...`).
pub const ARGV_NONCE: usize = 4;
/// Where the VMs' `IP REMOTE_COMMAND` pairs start in it, one pair per VM in section order.
pub const ARGV_VMS: usize = 12;

/// The jumpbox pod for the VMs at `vms` (their sections' order): one pod for them all, its log
/// framed with `nonce`.
pub fn jumpbox_pod(vms: &[&Address], nonce: &str, s: &JumpboxSettings) -> Pod {
    let key = Volume {
        name: "ssh-key".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret_name(&s.cluster)),
            default_mode: Some(0o400),
            items: Some(vec![KeyToPath {
                key: KEY_FILE.into(),
                path: KEY_FILE.into(),
                mode: Some(0o400),
            }]),
            optional: Some(false),
        }),
        ..Default::default()
    };
    // The probes' `parallel` bounds the VMs the script works on at once, as the driver bounds the
    // nodes the other routes reach at once (every target carries the same value).
    let parallel = vms
        .iter()
        .map(|a| a.probe.parallel)
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
        format!("{KEY_DIR}/{KEY_FILE}"),
        // The same options the ssh route locks, before the script's own (see `ssh/options.rs`).
        locked_option_words(),
        parallel.to_string(),
        NODE_OUTPUT_CAP.to_string(),
        script::PROBE_SH.into(),
    ];
    debug_assert_eq!((argv[ARGV_NONCE].as_str(), argv.len()), (nonce, ARGV_VMS));
    for at in vms {
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
        // The requests stay those of one probe whatever the number of VMs (the pod mostly
        // waits on the network); the limit makes room for the in-memory sections.
        resources: Some(crate::route::small_resources(&format!(
            "{}Mi",
            128 + tmp_mib
        ))),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "ssh-key".into(),
                mount_path: KEY_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "tmp".into(),
                mount_path: "/tmp".into(),
                ..Default::default()
            },
        ]),
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
    let mut spec = PodSpec::container(container).volumes([key, tmp]);
    // Not root: `nobody`, which every image has. The key stays 0400 and owned by root; the
    // kubelet gives a read-only volume's files to the fsGroup with g+r, so ssh (which only
    // refuses a key that is its own user's and readable by others) reads it.
    spec.security_context = Some(PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        fs_group: Some(NOBODY),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    s.basics.pod(
        pod_name(&s.cluster, &s.basics.run_id),
        &s.namespace,
        "etcdnet-jumpbox",
        spec,
    )
}
