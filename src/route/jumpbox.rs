//! Route 2: from the Supervisor, when the workload cluster's API is down (the support article's
//! case). One short-lived pod per diagnosis (per cluster) in the vSphere Namespace mounts the
//! cluster's `<cluster>-ssh` secret read-only (mode 0400) and SSHes from there to every
//! control-plane VM at once (at most `--parallel`), as the node user, running the probe with
//! sudo (`jumpbox.sh`). One pod, not one per VM: a vSphere Pod is a small VM of its own, seconds
//! to tens of seconds to start and a share of the namespace's quota each. The key never leaves
//! the secret volume: it is in no env var, argument, pod spec field or output.
//!
//! The pod's log holds one section per VM, framed with a nonce this run draws and the nodes
//! never see ([`frame`], [`split_log`]); each section reads as one VM's result ([`read_log`]).
//! The session runs the pod on the first node the driver asks for and hands every node its own
//! section, so the driver ([`super::probe_all`]) stays the one place that fans out.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod, PodSecurityContext,
    PodSpec, SeccompProfile, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi_ext::{ContainerExt, PodSpecExt};
use kube::api::Api;
use tokio::sync::OnceCell;

use super::lifecycle::{self, PodApi, MAX_LOG_BYTES};
use super::ssh::{classify_failure, locked_option_words, remote_probe_command, SshSettings};
use super::{
    Address, Env, PodBasics, Reached, Route, RouteSettings, Run, Session, Target, Unavailable,
};
use crate::error::Result;
use crate::probe::script;
use crate::probe::{HostKey, ProbeOutput, ReachError, ReachErrorKind};
pub use crate::probe::{PortReach, PortState};

pub const JUMPBOX_SH: &str = include_str!("jumpbox.sh");
/// An image with an OpenSSH client and a POSIX sh (alpine/git ships both). Pinned by the digest
/// of its multi-arch index: this pod holds the key to every control-plane VM, so what it runs is
/// what was reviewed, whatever the tag is made to point at later (docs/images.md: where the
/// digest comes from, how to move it).
pub const DEFAULT_IMAGE: &str =
    "docker.io/alpine/git:2.47.2@sha256:062a01ad7a0eb17cff382bc5e26086b4d710e56dfdfdf001109a49b6d9bd378c";
pub const KEY_DIR: &str = "/etc/etcdnet/ssh";
pub const KEY_FILE: &str = "ssh-privatekey";
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

pub fn ssh_secret_name(cluster: &str) -> String {
    format!("{cluster}-ssh")
}

#[derive(Debug, Clone)]
pub struct JumpboxSettings {
    /// The vSphere Namespace (where the secret is).
    pub namespace: String,
    pub cluster: String,
    pub image: String,
    pub basics: PodBasics,
    pub ssh: SshSettings,
}

/// The one jumpbox pod's name: the cluster's, as there is one per diagnosis of a cluster.
pub fn pod_name(cluster: &str, run_id: &str) -> String {
    super::pod_name("etcdnet-jumpbox-", cluster, run_id)
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
            secret_name: Some(ssh_secret_name(&s.cluster)),
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
    // `--parallel` bounds the VMs the script works on at once, as it bounds the nodes the other
    // routes reach at once (every target carries the same value).
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
        // The same options the ssh route locks, before the script's own (see `ssh.rs`).
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
        resources: Some(super::small_resources(&format!("{}Mi", 128 + tmp_mib))),
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

/// The targets the pod reaches, in its sections' order: those with an address.
fn addressed(targets: &[Target]) -> impl Iterator<Item = (&Target, &Address)> {
    targets
        .iter()
        .filter_map(|t| t.address.as_ref().map(|a| (t, a)))
}

/// Route `jumpbox`: one pod in the vSphere Namespace, from the Supervisor, for every VM.
pub struct JumpboxRoute;

impl Route for JumpboxRoute {
    fn name(&self) -> &'static str {
        "jumpbox"
    }

    fn help(&self) -> &'static str {
        "One pod in the vSphere Namespace that SSHes to every VM with the <cluster>-ssh key"
    }

    /// One pod for every VM with an address (none when no VM has one).
    fn would_create(&self, s: &RouteSettings, targets: &[Target]) -> Vec<Pod> {
        let vms: Vec<&Address> = addressed(targets).map(|(_, a)| a).collect();
        if vms.is_empty() {
            return Vec::new();
        }
        vec![jumpbox_pod(&vms, DRY_RUN_NONCE, &s.jumpbox)]
    }

    fn open<'a>(
        &'a self,
        s: &'a RouteSettings,
        env: Env<'a>,
        targets: &'a [Target],
    ) -> BoxFuture<'a, Result<Box<dyn Session + 'a>>> {
        Box::pin(async move {
            let Some(nonce) = new_nonce() else {
                return Ok(Box::new(Unavailable(ReachError {
                    kind: ReachErrorKind::Other,
                    message: "the system gave no random bytes for the jumpbox's log framing, so no jumpbox pod was made; try again, or use --via ssh".into(),
                })) as Box<dyn Session>);
            };
            Ok(Box::new(JumpboxSession {
                api: PodApi::new(Api::namespaced(
                    env.supervisor.clone(),
                    &s.jumpbox.namespace,
                )),
                settings: &s.jumpbox,
                vms: addressed(targets).collect(),
                nonce,
                results: OnceCell::new(),
            }) as Box<dyn Session>)
        })
    }
}

struct JumpboxSession<'a> {
    api: PodApi,
    settings: &'a JumpboxSettings,
    /// The targets the session was opened for that have an address, with it: the pod's VMs,
    /// in the order of its sections.
    vms: Vec<(&'a Target, &'a Address)>,
    /// This run's framing nonce (see `jumpbox.sh`).
    nonce: String,
    /// The one pod's run, made by the first `probe` and shared by every other: each VM's
    /// result, in the order of `vms`, or the pod's failure (every VM's).
    results: OnceCell<std::result::Result<Vec<Reached>, ReachError>>,
}

impl JumpboxSession<'_> {
    /// Runs the one pod for every VM and reads each VM's section of its log.
    async fn run_pod(&self, run: &Run<'_>) -> std::result::Result<Vec<Reached>, ReachError> {
        let s = self.settings;
        let addresses: Vec<&Address> = self.vms.iter().map(|(_, at)| *at).collect();
        let pod = jumpbox_pod(&addresses, &self.nonce, s);
        let limit = log_limit(addresses.len());
        match lifecycle::run_with_log_limit(
            &self.api,
            &pod,
            run.tracker,
            run.bound,
            run.keep,
            limit,
        )
        .await
        {
            Ok(done) => {
                let sections = split_log(&done.log, &self.nonce, addresses.len())?;
                Ok(self
                    .vms
                    .iter()
                    .zip(sections)
                    .map(|((t, at), section)| match section {
                        Ok(text) => {
                            let r = read_log(&t.name, &at.ip.to_string(), &s.ssh.user, text);
                            Reached {
                                outcome: r.outcome,
                                reach: r.reach,
                                host_key: r.host_key,
                            }
                        }
                        Err(e) => Err(e).into(),
                    })
                    .collect())
            }
            Err(f) => {
                let mut e = lifecycle::reach_error(f, &s.namespace, "--jumpbox-image");
                // vSphere Pods exist only on Supervisors with NSX networking.
                if matches!(
                    e.kind,
                    ReachErrorKind::Unschedulable | ReachErrorKind::Timeout | ReachErrorKind::Other
                ) {
                    e.message.push_str("; the Supervisor may not run vSphere Pods (they need NSX networking): try --via ssh");
                }
                Err(e)
            }
        }
    }
}

impl Session for JumpboxSession<'_> {
    fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane VMs through one jumpbox pod in the Supervisor")
    }

    fn probe<'a>(
        &'a self,
        t: &'a Target,
        _: &'a Address,
        run: &'a Run<'a>,
    ) -> BoxFuture<'a, Reached> {
        Box::pin(async move {
            let Some(index) = self.vms.iter().position(|(v, _)| *v == t) else {
                return Err(ReachError {
                    kind: ReachErrorKind::Other,
                    message: format!(
                        "{} is not among the VMs the jumpbox pod was made for",
                        t.name
                    ),
                })
                .into();
            };
            // The first node asked for runs the pod; the others wait for it and take their
            // own section.
            match self.results.get_or_init(|| self.run_pod(run)).await {
                Ok(all) => all[index].clone(),
                Err(e) => Err(e.clone()).into(),
            }
        })
    }
}

/// One VM's section as the script prints it: the frame `ETCDNET-NODE <nonce> <index> <bytes>`,
/// exactly `<bytes>` bytes of `section`, and `ETCDNET-NODE-END <nonce> <index>`. (The script
/// writes it; here for the tests and the fakes that stand in for it.)
pub fn frame(nonce: &str, index: usize, section: &str) -> String {
    format!(
        "ETCDNET-NODE {nonce} {index} {}\n{section}ETCDNET-NODE-END {nonce} {index}\n",
        section.len()
    )
}

/// Cuts the pod's log into its `vms` VMs' sections, by index: each VM's section's text, or why
/// that VM has none that can be used (a `BadOutput`). Or, when the script could not work at all
/// (no ssh client, no writable /tmp), why, for every VM.
///
/// A section is read by its length, never by looking for a marker inside it: whatever a node
/// prints stays within its own section, framed lines and all. A frame is taken only with this
/// run's `nonce`, which no node has seen, so none can print one; a section whose length does
/// not lead exactly to its end line (the log was cut, or text in it was altered on the way, as
/// invalid UTF-8 is) is garbled, and the next frame is then looked for by its nonce. A VM with
/// no section, or with two, gets no result; the others keep theirs.
pub fn split_log<'l>(
    log: &'l str,
    nonce: &str,
    vms: usize,
) -> std::result::Result<Vec<std::result::Result<&'l str, ReachError>>, ReachError> {
    let bad = |message: String| ReachError {
        kind: ReachErrorKind::BadOutput,
        message,
    };
    // Printed first, before any node is contacted: nothing of a node's can come before it.
    if let Some(why) = log
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("ETCDNET-JUMPBOX "))
        .and_then(|l| l.strip_prefix(nonce))
        .map(str::trim)
    {
        let message = match why {
            "no-ssh-client" => format!("the jumpbox image has no ssh client; use --jumpbox-image with one (e.g. {DEFAULT_IMAGE})"),
            "no-tmp" => "the jumpbox pod could not write to its /tmp volume".to_string(),
            other => format!("the jumpbox script stopped: {}", crate::probe::head(other, 80)),
        };
        return Err(ReachError {
            kind: ReachErrorKind::Other,
            message,
        });
    }
    let mut found: Vec<Option<std::result::Result<&str, ReachError>>> = vec![None; vms];
    let header = format!("ETCDNET-NODE {nonce} ");
    let mut pos = 0;
    while let Some(at) = find_line_start(log, pos, &header) {
        let fields_at = at + header.len();
        let Some(eol) = log[fields_at..].find('\n').map(|n| fields_at + n) else {
            break;
        };
        let mut fields = log[fields_at..eol].split(' ');
        let (Some(index), Some(bytes), None) = (
            fields.next().and_then(parse_decimal),
            fields.next().and_then(parse_decimal),
            fields.next(),
        ) else {
            // A frame line the script did not write whole: no index to blame; go on after it.
            pos = eol + 1;
            continue;
        };
        let start = eol + 1;
        let end_line = format!("ETCDNET-NODE-END {nonce} {index}\n");
        let whole = start.checked_add(bytes).filter(|end| {
            log.get(*end..)
                .is_some_and(|rest| rest.starts_with(&end_line))
        });
        let section = match whole {
            Some(end) => {
                pos = end + end_line.len();
                Ok(&log[start..end])
            }
            None => {
                pos = start;
                Err(bad(format!(
                    "the jumpbox's section for this VM is not the {bytes} bytes it announced (cut short, or altered on the way): not read"
                )))
            }
        };
        let Some(slot) = found.get_mut(index) else {
            // An index the pod was not given: the script never prints one; nothing to blame.
            continue;
        };
        *slot = match slot.take() {
            None => Some(section),
            Some(_) => Some(Err(bad(
                "the jumpbox's log holds two sections for this VM: neither is used".into(),
            ))),
        };
    }
    Ok(found
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| {
                Err(bad(
                    "the jumpbox's log has no section for this VM (the pod ended before printing it, or its log was cut)".into(),
                ))
            })
        })
        .collect())
}

/// A plain decimal number (what the script prints), nothing else.
fn parse_decimal(s: &str) -> Option<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Where `needle` next starts a line of `log`, at or after `from`.
fn find_line_start(log: &str, from: usize, needle: &str) -> Option<usize> {
    let mut from = from;
    loop {
        let at = from + log.get(from..)?.find(needle)?;
        if at == 0 || log.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + 1;
    }
}

/// What one VM's section of the jumpbox pod's log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpboxResult {
    pub reach: Vec<PortReach>,
    pub outcome: Result<ProbeOutput, ReachError>,
    /// The host key the VM presented, as the pod's ssh recorded it (None: no contact, or no
    /// trailer in the section).
    pub host_key: Option<HostKey>,
}

/// Reads one VM's section of the jumpbox pod's log (see [`split_log`]): the reach lines, the
/// probe document, ssh's exit and errors, the VM's host key.
///
/// The node writes into this section too (the probe's output and its stderr, through ssh), so
/// the script's own lines are taken only where the node cannot write: the `ETCDNET-REACH` block
/// at the start (printed, and ended by `ETCDNET-REACH-END`, before ssh to the node starts: a
/// line of the node's can only come after the end) and the trailer at the end
/// (`ETCDNET-HOSTKEY`, `ETCDNET-SSH-EXIT`, printed after it ended; ssh's stderr goes into the
/// same ordered stream, so nothing of the node's comes after). The same lines anywhere else are
/// the node's, and are read as noise.
pub fn read_log(node: &str, ip: &str, user: &str, log: &str) -> JumpboxResult {
    let lines: Vec<&str> = log.lines().collect();
    let mut reach = Vec::new();
    let mut body = &lines[..];
    while let Some((first, rest)) = body.split_first() {
        let mut words = first.split_whitespace();
        match words.next() {
            Some("ETCDNET-REACH") => {}
            Some("ETCDNET-REACH-END") => {
                body = rest;
                break;
            }
            _ => break,
        }
        if let Some(port) = words.next().and_then(|p| p.parse().ok()) {
            // What the script does not name (a newer script, a garbled line) is not known open.
            let state = match words.next() {
                Some("Open") => PortState::Open,
                Some("Timeout") => PortState::Timeout,
                Some("Refused") => PortState::Refused,
                Some("NoRoute") => PortState::NoRoute,
                _ => PortState::Unknown,
            };
            reach.push(PortReach { port, state });
        }
        body = rest;
    }
    reach.sort_by_key(|r| r.port);

    // The trailer: the last two lines that are not blank.
    let mut ssh_exit = None;
    let mut host_key = None;
    let last = body.iter().rposition(|l| !l.trim().is_empty());
    let before = last.and_then(|i| body[..i].iter().rposition(|l| !l.trim().is_empty()));
    if let (Some(i), Some(j)) = (last, before) {
        let exit = body[i].trim().strip_prefix("ETCDNET-SSH-EXIT ");
        let key = body[j].trim().strip_prefix("ETCDNET-HOSTKEY ");
        if let (Some(exit), Some(key)) = (exit, key) {
            ssh_exit = exit.trim().parse::<i32>().ok();
            let mut fields = key.split_whitespace();
            host_key = match (fields.next(), fields.next()) {
                (Some(type_name), Some(blob)) => HostKey::from_openssh(type_name, blob),
                _ => None,
            };
            body = &body[..j];
        }
    }
    // The script keeps at most NODE_OUTPUT_CAP bytes of the node's output: one more than the
    // most it reads. The body's lines are slices of `log`, so their span is its length.
    let node_bytes = match (body.first(), body.last()) {
        (Some(first), Some(last)) => {
            (last.as_ptr() as usize + last.len()).saturating_sub(first.as_ptr() as usize)
        }
        _ => 0,
    };
    if node_bytes as u64 > MAX_LOG_BYTES {
        return JumpboxResult {
            reach,
            outcome: Err(ReachError {
                kind: ReachErrorKind::BadOutput,
                message: format!(
                    "the node printed more than {} MiB, far more than the probe prints: it was cut and not read",
                    MAX_LOG_BYTES / (1024 * 1024)
                ),
            }),
            host_key,
        };
    }
    let other: String = body
        .iter()
        .filter(|l| !l.starts_with("{\"schemaVersion\""))
        .flat_map(|l| [*l, "\n"])
        .collect();
    let outcome = match crate::probe::parse::parse(node, body.join("\n").as_bytes()) {
        Ok(p) => Ok(p),
        Err(e) => match ssh_exit {
            Some(0) | None if other.trim().is_empty() => Err(ReachError {
                kind: ReachErrorKind::BadOutput,
                message: e.to_string(),
            }),
            code => Err(classify_failure(ip, user, code, &other)),
        },
    };
    JumpboxResult {
        reach,
        outcome,
        host_key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::script::ProbeArgs;
    use std::time::Duration;

    fn settings() -> JumpboxSettings {
        JumpboxSettings {
            namespace: "ns-prod".into(),
            cluster: "tkc-prod".into(),
            image: DEFAULT_IMAGE.into(),
            basics: PodBasics {
                image_pull_secret: None,
                run_id: "k3x9q".into(),
                deadline: Duration::from_secs(60),
            },
            ssh: SshSettings {
                user: "vmware-system-user".into(),
                connect_timeout: Duration::from_secs(3),
                options: vec![],
            },
        }
    }

    const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];

    /// The article's three VMs, each the others' peer.
    fn addresses() -> Vec<Address> {
        addresses_of(&IPS)
    }

    /// VMs at `ips`, each the others' peer.
    fn addresses_of(ips: &[&str]) -> Vec<Address> {
        ips.iter()
            .map(|me| Address {
                ip: me.parse().unwrap(),
                probe: ProbeArgs::new(*me, ips.iter().filter(|p| *p != me).copied()),
            })
            .collect()
    }

    fn targets() -> Vec<Target> {
        addresses()
            .into_iter()
            .enumerate()
            .map(|(i, a)| Target {
                name: format!("cp{}", i + 1),
                node_name: format!("cp{}", i + 1),
                address: Some(a),
            })
            .collect()
    }

    fn pod_for(addresses: &[Address], nonce: &str) -> Pod {
        let vms: Vec<&Address> = addresses.iter().collect();
        jumpbox_pod(&vms, nonce, &settings())
    }

    fn command_of(pod: &Pod) -> Vec<String> {
        pod.spec.as_ref().unwrap().containers[0]
            .command
            .clone()
            .unwrap()
    }

    const NONCE: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

    #[test]
    fn one_pod_reaches_every_vm() {
        let pod = pod_for(&addresses(), NONCE);
        assert_eq!(
            pod.metadata.name.as_deref(),
            Some("etcdnet-jumpbox-tkc-prod-k3x9q"),
            "named after the cluster: one per diagnosis"
        );
        let argv = command_of(&pod);
        assert_eq!(argv[4], NONCE);
        assert_eq!(argv[9], "16", "--parallel bounds the VMs at once");
        assert_eq!(argv[10], NODE_OUTPUT_CAP.to_string());
        assert_eq!(argv[11], script::PROBE_SH);
        let pairs: Vec<(&str, &str)> = argv[12..]
            .chunks(2)
            .map(|p| (p[0].as_str(), p[1].as_str()))
            .collect();
        assert_eq!(pairs.len(), 3);
        for ((ip, remote), want) in pairs.iter().zip(IPS) {
            assert_eq!(*ip, want);
            assert!(
                remote.starts_with(&format!("sudo -n sh -s -- --self {want}")),
                "{remote}"
            );
            assert!(!remote.contains(NONCE), "the node never sees the nonce");
        }
        // --parallel 2 reaches the script.
        let mut two = addresses();
        for a in &mut two {
            a.probe.parallel = 2;
        }
        assert_eq!(command_of(&pod_for(&two, NONCE))[9], "2");

        // --dry-run: one pod for all three, and none when no VM has an address.
        let route = JumpboxRoute;
        let s = RouteSettings {
            pod: crate::route::pod::PodSettings {
                namespace: "kube-system".into(),
                image: "busybox".into(),
                basics: settings().basics,
            },
            jumpbox: settings(),
            ssh: crate::route::ssh::SshRouteSettings {
                ssh: settings().ssh,
                namespace: "ns-prod".into(),
                cluster: "tkc-prod".into(),
                key: crate::route::ssh::SshKey::ClusterSecret,
            },
            workload_timeout: Duration::from_secs(1),
        };
        let pods = route.would_create(&s, &targets());
        assert_eq!(pods.len(), 1);
        assert_eq!(command_of(&pods[0])[4], DRY_RUN_NONCE);
        assert_eq!(command_of(&pods[0]).len(), 12 + 2 * 3);
        let mut none = targets();
        for t in &mut none {
            t.address = None;
        }
        assert!(route.would_create(&s, &none).is_empty());
    }

    #[test]
    fn nonces_are_new_and_long() {
        let a = new_nonce().unwrap();
        let b = new_nonce().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    /// The requests are those of one probe whatever the number of VMs; the in-memory /tmp and
    /// the log limit grow with it, so every VM's section fits.
    #[test]
    fn requests_stay_and_room_grows_with_the_vms() {
        let q = |pod: &Pod| {
            let v = serde_json::to_value(pod).unwrap();
            (
                v["spec"]["containers"][0]["resources"]["requests"].clone(),
                v["spec"]["containers"][0]["resources"]["limits"]["memory"].clone(),
                v["spec"]["volumes"][1]["emptyDir"]["sizeLimit"].clone(),
            )
        };
        let one = q(&pod_for(&addresses()[..1], NONCE));
        let three = q(&pod_for(&addresses(), NONCE));
        let seven: Vec<Address> = (0..7).map(|_| addresses()[0].clone()).collect();
        let seven = q(&pod_for(&seven, NONCE));
        assert_eq!(one.0, three.0);
        assert_eq!(one.0, seven.0);
        assert_eq!(one.0["memory"], "32Mi");
        assert_eq!(three.2, "14Mi", "3 sections of up to 4 MiB and a bit");
        assert_eq!(three.1, "142Mi");
        assert_eq!(seven.2, "30Mi");
        assert!(log_limit(3) >= 3 * NODE_OUTPUT_CAP);
        assert!(log_limit(7) > log_limit(3));
        assert_eq!(log_limit(0), log_limit(1));
        // The /tmp volume holds the whole log before it is printed.
        assert!(14 * 1024 * 1024 >= log_limit(3));
    }

    #[test]
    fn the_key_stays_in_the_secret_volume() {
        let pod = pod_for(&addresses(), NONCE);
        let v = serde_json::to_value(&pod).unwrap();
        let vol = &v["spec"]["volumes"][0]["secret"];
        assert_eq!(vol["secretName"], "tkc-prod-ssh");
        assert_eq!(vol["defaultMode"], 0o400);
        let c = &v["spec"]["containers"][0];
        assert_eq!(c["volumeMounts"][0]["readOnly"], true);
        assert_eq!(
            c["env"],
            serde_json::json!([{"name": "HOME", "value": "/tmp"}]),
            "no env var but HOME: nothing of the key"
        );
        assert_eq!(v["metadata"]["namespace"], "ns-prod");
        assert_eq!(
            v["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "kubectl-etcdnet"
        );
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
        let argv = command_of(&pod);
        assert_eq!(
            argv[7], "/etc/etcdnet/ssh/ssh-privatekey",
            "a path, never the key"
        );
        assert_eq!(
            argv[8],
            locked_option_words(),
            "ssh's options, as the ssh route's"
        );
        assert!(argv[8].contains("-o ForwardAgent=no") && argv[8].contains("-o ControlPath=none"));
    }

    #[test]
    fn the_jumpbox_is_restricted_and_not_root() {
        let pod = pod_for(&addresses(), NONCE);
        let v = serde_json::to_value(&pod).unwrap();
        let psc = &v["spec"]["securityContext"];
        assert_eq!(psc["runAsNonRoot"], true);
        assert_eq!(psc["runAsUser"], 65534);
        assert_eq!(
            psc["fsGroup"], 65534,
            "how a non-root user reads the 0400 key"
        );
        assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault");
        let c = &v["spec"]["containers"][0];
        let sc = &c["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
        assert!(sc["capabilities"]["add"].is_null());
        let tmp = &v["spec"]["volumes"][1];
        assert_eq!(tmp["emptyDir"]["medium"], "Memory");
        assert_eq!(c["volumeMounts"][1]["mountPath"], "/tmp");
        for v in v["spec"]["volumes"].as_array().unwrap() {
            assert!(
                v["secret"].is_object() || v["emptyDir"].is_object(),
                "restricted volume types only: {v}"
            );
        }
    }

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY";
    const KEY_SHA256: &str = "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4";

    fn healthy_document() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/probe-output/healthy-node.json"
        ))
        .unwrap()
        .trim()
        .to_string()
    }

    fn healthy_section() -> String {
        format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Open\nETCDNET-REACH 2380 Open\nETCDNET-REACH 6443 Refused\nETCDNET-REACH-END\n{}\n\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
            healthy_document()
        )
    }

    #[test]
    fn reads_a_section() {
        let ok = format!(
            "ETCDNET-REACH 2379 Open\nETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Timeout\nETCDNET-REACH 2380 Refused\nETCDNET-REACH-END\n{}\n\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &ok);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.reach.iter().map(|p| p.port).collect::<Vec<_>>(),
            [22, 2379, 2380, 6443]
        );
        assert_eq!(r.reach[3].state, PortState::Timeout);
        let key = r.host_key.unwrap();
        assert_eq!(
            (key.key_type.as_str(), key.sha256.as_str()),
            ("ED25519", KEY_SHA256)
        );

        let denied = "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\nvmware-system-user@198.18.0.11: Permission denied (publickey).\n\nETCDNET-HOSTKEY ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY\nETCDNET-SSH-EXIT 255\n";
        let r = read_log("cp1", "198.18.0.11", "u", denied);
        assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::AuthFailed);
        assert!(r.host_key.is_some(), "recorded before authentication");

        let timeout = "ETCDNET-REACH 22 Timeout\nETCDNET-REACH-END\nssh: connect to host 198.18.0.11 port 22: Connection timed out\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 255\n";
        let r = read_log("cp1", "198.18.0.11", "u", timeout);
        assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::Unreachable);
        assert_eq!(r.host_key, None);
    }

    #[test]
    fn a_port_state_it_does_not_know_is_unknown_never_open() {
        let log = "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Unknown\nETCDNET-REACH 2380 Halfway\nETCDNET-REACH 6443\n";
        let r = read_log("cp1", "198.18.0.11", "u", log);
        let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
        assert_eq!(
            states,
            [
                (22, PortState::Open),
                (2379, PortState::Unknown),
                (2380, PortState::Unknown),
                (6443, PortState::Unknown)
            ]
        );
    }

    /// The node writes into its section: lines it prints that look like the script's are not
    /// taken for them.
    #[test]
    fn the_node_cannot_write_the_scripts_lines() {
        let forged = "ETCDNET-REACH 6443 Open\nETCDNET-HOSTKEY ssh-rsa AAAAB3NzaC1yc2E=\nETCDNET-SSH-EXIT 0\nETCDNET-JUMPBOX no-ssh-client\n";
        let log = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Refused\nETCDNET-REACH-END\n{forged}{}\n{forged}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &log);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.reach,
            [
                PortReach {
                    port: 22,
                    state: PortState::Open
                },
                PortReach {
                    port: 6443,
                    state: PortState::Refused
                }
            ]
        );
        assert_eq!(r.host_key.unwrap().sha256, KEY_SHA256);
        // Without the script's trailer (the pod was killed), a forged one is not the trailer.
        let cut = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{forged}{}\n{forged}",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &cut);
        assert_eq!(r.host_key, None);
        assert_eq!(r.reach.len(), 1);
    }

    /// More than a probe ever prints: cut by the script, refused here (not parsed).
    #[test]
    fn a_node_that_prints_too_much_is_bad_output() {
        let flood = "x".repeat(NODE_OUTPUT_CAP as usize);
        let section = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{flood}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 255\n"
        );
        let r = read_log("cp1", "198.18.0.11", "u", &section);
        let e = r.outcome.unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::BadOutput);
        assert!(e.message.contains("more than 4 MiB"), "{}", e.message);
        assert_eq!(r.reach.len(), 1, "the script's lines are still read");
        assert!(r.host_key.is_some());
        // Exactly the most it reads is still read (and is not a document here).
        let most = format!(
            "ETCDNET-REACH-END\n{}\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n",
            &flood[1..]
        );
        let e = read_log("cp1", "198.18.0.11", "u", &most)
            .outcome
            .unwrap_err();
        assert!(!e.message.contains("more than 4 MiB"), "{}", e.message);
    }

    fn sections(log: &str, vms: usize) -> Vec<std::result::Result<String, ReachError>> {
        split_log(log, NONCE, vms)
            .unwrap()
            .into_iter()
            .map(|s| s.map(str::to_string))
            .collect()
    }

    fn bad(s: &std::result::Result<String, ReachError>) -> &str {
        let e = s.as_ref().unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::BadOutput, "{e:?}");
        &e.message
    }

    #[test]
    fn sections_are_read_by_their_length_in_any_order() {
        let a = healthy_section();
        let b = "ETCDNET-REACH 22 Timeout\nETCDNET-REACH-END\nno newline at the end";
        let c = "";
        let log = format!(
            "{}{}{}",
            frame(NONCE, 2, c),
            frame(NONCE, 0, &a),
            frame(NONCE, 1, b)
        );
        let s = sections(&log, 3);
        assert_eq!(s[0].as_deref(), Ok(a.as_str()));
        assert_eq!(s[1].as_deref(), Ok(b));
        assert_eq!(s[2].as_deref(), Ok(c));
        // Text outside any frame (the script's own stderr, say) is not a VM's.
        let noisy = format!("sh: warning\n{}trailing noise\n", frame(NONCE, 0, &a));
        let s = sections(&noisy, 1);
        assert_eq!(s[0].as_deref(), Ok(a.as_str()));
    }

    #[test]
    fn a_missing_short_duplicated_or_garbled_section_is_that_vms_bad_output() {
        let a = healthy_section();
        let ok0 = frame(NONCE, 0, &a);
        let ok2 = frame(NONCE, 2, &a);

        // Missing: VM 1 has no section; the others are read.
        let s = sections(&format!("{ok0}{ok2}"), 3);
        assert!(s[0].is_ok() && s[2].is_ok());
        assert!(bad(&s[1]).contains("no section"), "{}", bad(&s[1]));

        // Short: the log ends inside VM 1's section (the pod was cut off).
        let one = frame(NONCE, 1, &a);
        let s = sections(&format!("{ok0}{}", &one[..one.len() / 2]), 2);
        assert!(s[0].is_ok());
        assert!(bad(&s[1]).contains("not the"), "{}", bad(&s[1]));

        // Announced longer than it is: its end line is not where the length says.
        let lying = format!("ETCDNET-NODE {NONCE} 1 99999\n{a}ETCDNET-NODE-END {NONCE} 1\n");
        let s = sections(&format!("{ok0}{lying}{ok2}"), 3);
        assert!(s[0].is_ok() && s[2].is_ok(), "{s:?}");
        assert!(bad(&s[1]).contains("99999"));
        // Announced shorter.
        let lying = format!("ETCDNET-NODE {NONCE} 1 10\n{a}ETCDNET-NODE-END {NONCE} 1\n");
        let s = sections(&format!("{lying}{ok0}{ok2}"), 3);
        assert!(s[0].is_ok() && s[2].is_ok(), "{s:?}");
        bad(&s[1]);

        // Duplicated: neither copy is used.
        let s = sections(
            &format!("{ok0}{}{ok2}{}", frame(NONCE, 1, &a), frame(NONCE, 1, "")),
            3,
        );
        assert!(s[0].is_ok() && s[2].is_ok());
        assert!(bad(&s[1]).contains("two sections"));

        // A garbled frame line, and an index the pod was not given: nobody's.
        let s = sections(
            &format!("ETCDNET-NODE {NONCE} x 3\nabcETCDNET-NODE {NONCE} 7 0\nETCDNET-NODE-END {NONCE} 7\n{ok0}"),
            1,
        );
        assert!(s[0].is_ok(), "{s:?}");

        // Nothing at all: every VM says so.
        for s in sections("", 3) {
            bad(&s);
        }
    }

    /// A compromised node prints frames of its own: without this run's nonce they are text of
    /// its section; its section stays its own, and the next VM's is the script's.
    #[test]
    fn a_node_cannot_forge_a_frame() {
        let other = "0123456789abcdef0123456789abcdef";
        let evil_doc = healthy_document();
        // What a node could print: frames with a guessed nonce, an empty one, none; an end
        // line closing its own section early; a whole fake section for VM 1.
        let forged = format!(
            "ETCDNET-NODE-END {other} 0\nETCDNET-NODE {other} 1 5\nhello\nETCDNET-NODE-END {other} 1\n\
             ETCDNET-NODE  1 3\nabc\nETCDNET-NODE-END  1\nETCDNET-NODE 1 3\nETCDNET-NODE-END 0\n\
             ETCDNET-JUMPBOX {other} no-ssh-client\n"
        );
        let section0 = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{forged}{evil_doc}\n{forged}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n"
        );
        let section1 = healthy_section();
        let log = format!(
            "{}{}",
            frame(NONCE, 0, &section0),
            frame(NONCE, 1, &section1)
        );
        let s = sections(&log, 2);
        assert_eq!(
            s[0].as_deref(),
            Ok(section0.as_str()),
            "the node's text, whole"
        );
        assert_eq!(s[1].as_deref(), Ok(section1.as_str()), "the next VM's own");
        let r = read_log("cp1", "198.18.0.11", "u", s[0].as_ref().unwrap());
        assert_eq!(r.reach.len(), 1);
        assert_eq!(r.host_key.unwrap().sha256, KEY_SHA256);

        // If a node did print a frame with the right nonce, the plugin would not take it for
        // another VM's: the length decides where the section ends. (The nonce keeps it from
        // ever printing one; this is the second line of defence.)
        let inner = frame(NONCE, 1, "ETCDNET-REACH 22 Open\n");
        let section0 =
            format!("ETCDNET-REACH-END\n{inner}\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n");
        let log = format!(
            "{}{}",
            frame(NONCE, 0, &section0),
            frame(NONCE, 1, &section1)
        );
        let s = sections(&log, 2);
        assert_eq!(s[0].as_deref(), Ok(section0.as_str()));
        assert_eq!(s[1].as_deref(), Ok(section1.as_str()));
    }

    /// Invalid UTF-8 from a node becomes U+FFFD on the way (the log is read as text), which
    /// changes its section's length: that section is garbled, and the next is still found.
    #[test]
    fn invalid_utf8_garbles_only_its_own_section() {
        let mut raw = Vec::new();
        let mut bytes_section = b"ETCDNET-REACH-END\n\xff\xfe{not utf-8}\xc3\n".to_vec();
        bytes_section.extend_from_slice(b"\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n");
        raw.extend_from_slice(
            format!("ETCDNET-NODE {NONCE} 0 {}\n", bytes_section.len()).as_bytes(),
        );
        raw.extend_from_slice(&bytes_section);
        raw.extend_from_slice(format!("ETCDNET-NODE-END {NONCE} 0\n").as_bytes());
        raw.extend_from_slice(frame(NONCE, 1, &healthy_section()).as_bytes());
        let log = String::from_utf8_lossy(&raw).into_owned();
        let s = sections(&log, 2);
        bad(&s[0]);
        assert_eq!(s[1].as_deref(), Ok(healthy_section().as_str()));
    }

    #[test]
    fn a_script_that_cannot_work_fails_every_vm() {
        let log = format!("ETCDNET-JUMPBOX {NONCE} no-ssh-client\n");
        let e = split_log(&log, NONCE, 3).unwrap_err();
        assert!(e.message.contains("no ssh client"), "{}", e.message);
        let e = split_log(&format!("ETCDNET-JUMPBOX {NONCE} no-tmp\n"), NONCE, 3).unwrap_err();
        assert!(e.message.contains("/tmp"), "{}", e.message);
        // Another run's (or a forged) line is not this script's.
        let log = format!(
            "ETCDNET-JUMPBOX 0123 no-ssh-client\n{}",
            frame(NONCE, 0, &healthy_section())
        );
        assert!(split_log(&log, NONCE, 1).unwrap()[0].is_ok());
    }

    /// The probe document the fake ssh prints for a node that ran the probe.
    const HEALTHY_DOC: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/probe-output/healthy-node.json"
    );

    /// Writes `script` (a `#!/bin/sh` one) as an executable `ssh` in `dir` (put first on the
    /// script's PATH). Every fake answers `ssh -G` as OpenSSH 9.2 does (its configuration:
    /// here its key exchanges only), from `dir/ssh-G` when a test wrote one; the script's own
    /// lines see only connections.
    fn install_ssh(dir: &std::path::Path, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let fake = dir.join("ssh");
        let body = script
            .strip_prefix("#!/bin/sh\n")
            .expect("a fake ssh is a #!/bin/sh script");
        let script = format!(
            r#"#!/bin/sh
case " $* " in
    *" -G "*)
        if [ -f {g} ]; then cat {g}; exit 0; fi
        echo "kexalgorithms {KEX_9_2}"
        exit 0 ;;
esac
{body}"#,
            g = dir.join("ssh-G").display(),
        );
        std::fs::write(&fake, script).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// OpenSSH 9.2's default key exchanges (`ssh -G`'s `kexalgorithms`, Debian 12).
    const KEX_9_2: &str = "sntrup761x25519-sha512@openssh.com,curve25519-sha256,\
        curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,\
        diffie-hellman-group-exchange-sha256,diffie-hellman-group16-sha512,\
        diffie-hellman-group18-sha512,diffie-hellman-group14-sha256";

    /// Runs the jumpbox pod's command with the fake ssh in `dir` first on PATH and `dir` as
    /// its TMPDIR.
    fn run_script(argv: &[String], dir: &std::path::Path) -> std::process::Output {
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
            .env("TMPDIR", dir)
            .output()
            .unwrap()
    }

    /// A fake `ssh` that answers as the real one does for each port of 198.18.0.11 (and one
    /// way it never does), runs the probe there (its document: the fixture's) and, at
    /// 198.18.0.12, prints forged frames around the document; 198.18.0.13 does not answer.
    fn fake_ssh(dir: &std::path::Path) -> std::path::PathBuf {
        let calls = dir.join("calls");
        install_ssh(
            dir,
            &format!(
                r#"#!/bin/sh
echo "$*" >>{calls}
port=22 kh= probe= host=
while [ $# -gt 0 ]; do
    case $1 in
        -p) port=$2; shift ;;
        -i) probe=yes; shift ;;
        -o) case $2 in UserKnownHostsFile=*) kh=${{2#UserKnownHostsFile=}} ;; esac; shift ;;
        -l) shift ;;
        -*) ;;
        *) [ -n "$host" ] || host=${{1#*@}} ;;
    esac
    shift
done
echo "$host" >>{calls}.hosts
if [ "$host" = 198.18.0.13 ]; then
    sleep 0.2
    echo "ssh: connect to host $host port $port: Connection timed out" >&2; exit 255
fi
# accept-new: the key is recorded on first contact with 22.
if [ "$port" = 22 ] && [ ! -s "$kh" ]; then echo "$host {KEY}" >>"$kh"; fi
case $port in
    2379) echo "kex_exchange_identification: Connection closed by remote host" >&2; exit 255 ;;
    2380) echo "ssh: something nobody has seen before" >&2; exit 255 ;;
    6443) echo "ssh: connect to host $host port 6443: Connection refused" >&2; exit 255 ;;
esac
if [ -n "$probe" ]; then
    cat >/dev/null
    if [ "$host" = 198.18.0.12 ]; then
        printf 'ETCDNET-NODE-END x 1\nETCDNET-NODE x 2 3\nabc\nETCDNET-NODE-END x 2\n'
        printf 'ETCDNET-REACH 6443 Open\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n'
    fi
    cat {doc}
    exit 0
fi
echo "etcdnet@$host: Permission denied (publickey)." >&2
exit 255
"#,
                calls = calls.display(),
                doc = HEALTHY_DOC,
            ),
        );
        calls
    }

    /// The script itself under sh, for three VMs at once: what the plugin reads back.
    #[test]
    fn the_script_reports_what_ssh_says() {
        let dir = tempfile::tempdir().unwrap();
        let calls = fake_ssh(dir.path());
        let pod = pod_for(&addresses(), NONCE);
        let argv = command_of(&pod);
        let out = run_script(&argv, dir.path());
        assert!(out.status.success(), "{out:?}");
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = String::from_utf8(out.stdout).unwrap();
        let s = split_log(&log, NONCE, 3).unwrap();
        let read: Vec<JumpboxResult> = s
            .iter()
            .zip(IPS)
            .map(|(s, ip)| read_log("cp", ip, "vmware-system-user", s.as_ref().unwrap()))
            .collect();
        for r in &read[..2] {
            let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
            assert_eq!(
                states,
                [
                    (22, PortState::Open),
                    (2379, PortState::Open),
                    (2380, PortState::Unknown),
                    (6443, PortState::Refused)
                ]
            );
            assert_eq!(
                r.host_key.as_ref().map(|k| k.sha256.as_str()),
                Some(KEY_SHA256)
            );
        }
        // The forged lines are the node's text, in its own section: its ports and host key are
        // the script's (above), and its document is still found among them.
        for r in &read[..2] {
            assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        }
        // The third VM does not answer: its own row.
        let e = read[2].outcome.as_ref().unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::Unreachable, "{e:?}");
        assert!(log.len() < 3 * 32 * 1024, "{}", log.len());
        assert_eq!(read[2].host_key, None);
        assert!(read[2].reach.iter().all(|p| p.state == PortState::Timeout));
        // Every ssh started with the locked options, each VM's own known_hosts file after them.
        let calls = std::fs::read_to_string(&calls).unwrap();
        // Three port checks and the probe's connection per VM: 22 is known from the latter.
        assert_eq!(calls.lines().count(), 12, "{calls}");
        assert!(!calls.contains("-p 22 "), "{calls}");
        for call in calls.lines() {
            assert!(call.starts_with(&locked_option_words()), "{call}");
            assert!(call.contains("-o UserKnownHostsFile=/"), "{call}");
            // ssh's own list, curve25519 moved ahead of sntrup761 (see the test below).
            assert!(
                call.contains(" -o KexAlgorithms=curve25519-sha256,curve25519-sha256@libssh.org,sntrup761x25519-sha512@openssh.com,ecdh-sha2-nistp256,"),
                "{call}"
            );
        }
        // The pod's files are removed with the run.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Port 22 is read from the probe's own connection: a node that ran the command (any exit
    /// code but ssh's 255) is open on 22, a failed TCP connect names its state on ssh's first
    /// line; only what neither tells (an authentication failure here) gets a connection of its
    /// own, so a VM's sshd sees one session per diagnosis, not a second one as `etcdnet`.
    #[test]
    fn port_22_comes_from_the_probes_own_connection() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        install_ssh(
            dir.path(),
            &format!(
                r#"#!/bin/sh
port=22 probe= host=
while [ $# -gt 0 ]; do
    case $1 in
        -p) port=$2; shift ;;
        -i) probe=yes; shift ;;
        -o | -l) shift ;;
        -*) ;;
        *) [ -n "$host" ] || host=${{1#*@}} ;;
    esac
    shift
done
echo "$host $port ${{probe:-reach}}" >>{calls}
echo "${{probe:-reach}} $(awk '{{print $19}}' /proc/$$/stat)" >>{calls}.nice
[ -n "$probe" ] && cat >/dev/null
case $host:$port:$probe in
    *:2379:|*:2380:) echo "kex_exchange_identification: Connection closed by remote host" >&2; exit 255 ;;
    *:6443:) echo "ssh: connect to host $host port 6443: Connection refused" >&2; exit 255 ;;
    198.18.0.11:22:yes) cat {doc}; exit 0 ;;
    198.18.0.12:22:yes) echo "vmware-system-user@$host: Permission denied (publickey)." >&2; exit 255 ;;
    198.18.0.12:22:) echo "etcdnet@$host: Permission denied (publickey)." >&2; exit 255 ;;
    198.18.0.13:22:yes) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255 ;;
    198.18.0.14:22:yes) echo "sudo: a password is required" >&2; exit 1 ;;
esac
echo "ssh: unexpected $host $port" >&2
exit 255
"#,
                calls = calls.display(),
                doc = HEALTHY_DOC,
            ),
        );
        let ips = ["198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.14"];
        let argv = command_of(&pod_for(&addresses_of(&ips), NONCE));
        let out = run_script(&argv, dir.path());
        assert!(out.status.success(), "{out:?}");
        let log = String::from_utf8(out.stdout).unwrap();
        let sections = split_log(&log, NONCE, 4).unwrap();
        let state_of_22: Vec<PortState> = sections
            .iter()
            .zip(ips)
            .map(|(s, ip)| {
                let r = read_log("cp", ip, "vmware-system-user", s.as_ref().unwrap());
                assert_eq!(r.reach.len(), 4, "{ip}: {:?}", r.reach);
                r.reach.iter().find(|p| p.port == 22).unwrap().state
            })
            .collect();
        assert_eq!(
            state_of_22,
            [
                PortState::Open,
                PortState::Open,
                PortState::Refused,
                PortState::Open
            ]
        );
        let nice = std::fs::read_to_string(calls.with_extension("nice")).unwrap();
        let calls = std::fs::read_to_string(&calls).unwrap();
        let own_22: Vec<&str> = calls.lines().filter(|l| l.ends_with(" 22 reach")).collect();
        assert_eq!(own_22, ["198.18.0.12 22 reach"], "{calls}");
        // The port checks yield the CPU to the probes' connections.
        let of = |kind: &str| -> Vec<i32> {
            let mut v: Vec<i32> = (nice.lines())
                .filter_map(|l| l.strip_prefix(kind))
                .map(|n| n.trim().parse().unwrap())
                .collect();
            v.dedup();
            v
        };
        let probes = of("yes ");
        assert_eq!(probes.len(), 1, "{nice}");
        assert_eq!(of("reach "), [(probes[0] + 10).min(19)], "{nice}");
    }

    /// `--parallel 1`: one VM after another, in the same sections.
    #[test]
    fn the_script_works_on_at_most_parallel_vms() {
        let dir = tempfile::tempdir().unwrap();
        let calls = fake_ssh(dir.path());
        let mut vms = addresses();
        for a in &mut vms {
            a.probe.parallel = 1;
        }
        let argv = command_of(&pod_for(&vms, NONCE));
        let out = run_script(&argv, dir.path());
        let log = String::from_utf8(out.stdout).unwrap();
        let s = split_log(&log, NONCE, 3).unwrap();
        assert!(s.iter().all(|s| s.is_ok()), "{s:?}");
        // One lane: every call to .11 comes before any to .12, and those before .13's.
        let hosts = std::fs::read_to_string(calls.with_extension("hosts")).unwrap();
        let hosts: Vec<&str> = hosts.lines().collect();
        assert_eq!(hosts.len(), 12);
        let mut sorted = hosts.clone();
        sorted.sort();
        assert_eq!(hosts, sorted, "one VM at a time");
    }

    /// The key exchanges: ssh's own list (`ssh -G`), the fast ones first — mlkem768x25519
    /// (post-quantum) where the client has it, then curve25519 — and nothing added: a list
    /// without them, a garbled list or no answer leaves ssh's defaults alone (no option).
    #[test]
    fn the_fast_key_exchanges_go_first_and_nothing_is_added() {
        let cases: [(Option<&str>, Option<&str>); 6] = [
            (
                Some(KEX_9_2),
                Some(
                    "curve25519-sha256,curve25519-sha256@libssh.org,\
                     sntrup761x25519-sha512@openssh.com,ecdh-sha2-nistp256,ecdh-sha2-nistp384,\
                     ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,\
                     diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,\
                     diffie-hellman-group14-sha256",
                ),
            ),
            // OpenSSH 10: mlkem768x25519 already leads; sntrup761 stays behind curve25519.
            (
                Some("mlkem768x25519-sha256,sntrup761x25519-sha512,curve25519-sha256,ecdh-sha2-nistp256"),
                Some("mlkem768x25519-sha256,curve25519-sha256,sntrup761x25519-sha512,ecdh-sha2-nistp256"),
            ),
            // A FIPS-like configuration: nothing fast to move, nothing added.
            (Some("ecdh-sha2-nistp256,diffie-hellman-group14-sha256"), None),
            // Not a plain list (a space, a shell character): ssh's defaults.
            (Some("curve25519-sha256 ecdh-sha2-nistp256"), None),
            (Some("curve25519-sha256;reboot"), None),
            // ssh -G printed no key exchanges.
            (None, None),
        ];
        for (list, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            let calls = dir.path().join("calls");
            let answer = match list {
                Some(l) => format!("user nobody\nkexalgorithms {l}\nport 22\n"),
                None => "user nobody\n".into(),
            };
            std::fs::write(dir.path().join("ssh-G"), answer).unwrap();
            install_ssh(
                dir.path(),
                &format!(
                    r#"#!/bin/sh
kex=none probe=
for a in "$@"; do
    case $a in KexAlgorithms=*) kex=${{a#KexAlgorithms=}} ;; -i) probe=yes ;; esac
done
echo "$kex" >>{calls}
[ -n "$probe" ] || {{ echo "etcdnet@x: Permission denied (publickey)." >&2; exit 255; }}
cat >/dev/null
cat {doc}
"#,
                    calls = calls.display(),
                    doc = HEALTHY_DOC,
                ),
            );
            let argv = command_of(&pod_for(&addresses_of(&["198.18.0.11"]), NONCE));
            let out = run_script(&argv, dir.path());
            assert!(out.status.success(), "{out:?}");
            let seen = std::fs::read_to_string(&calls).unwrap();
            // The probe's connection and the three port checks, all with the same exchanges.
            assert_eq!(seen.lines().count(), 4, "{seen}");
            for line in seen.lines() {
                assert_eq!(line, want.unwrap_or("none"), "{list:?}");
            }
        }
    }
}
