//! Reaching the nodes from outside, as the plugin's SSH route does: each node's sshd and its
//! `vmware-system-user`, the lab's key pairs, the jumpbox pod on the Supervisor side, the admin's
//! machine, and host loopback ports relayed to it.
//!
//! Who is where:
//! - the nodes: sshd on `<node ip>:22`, in the node's view (see `sh/sshd.sh`);
//! - the jumpbox (a pod in the vSphere Namespace) and the admin's machine: the switch namespace,
//!   `198.18.0.1`. Peer faults never touch it; `Isolate(n)` cuts n off from the other members
//!   only, so the jumpbox still reaches n on 22, as the Supervisor usually still does. Only
//!   [`crate::Fault::BlockSsh`] and [`Lab::stop_sshd`] take 22 away.

use std::ffi::OsStr;
use std::fs;
use std::net::SocketAddr;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::daemon::{self, Start};
use crate::forward::Forward;
use crate::ssh::{self, SSH_USER};
use crate::view::{self, Mode};
use crate::Lab;

const POD_SH: &str = include_str!("sh/pod.sh");

/// No volumes, for [`Lab::jumpbox_pod_command`]: `lab.jumpbox_pod_command(&argv, NO_MOUNTS)`.
pub const NO_MOUNTS: &[(&str, &str)] = &[];

/// The PATH of a pod and of a node's daemons (not cargo's).
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Lab {
    /// `vmware-system-user`: the account every node's sshd accepts the lab's key for.
    pub fn ssh_user(&self) -> &'static str {
        SSH_USER
    }

    /// The private half of the lab's key pair (OpenSSH ed25519), accepted by every node: what a
    /// test puts into the fake Supervisor's `<cluster>-ssh` secret under `ssh-privatekey`.
    pub fn ssh_private_key(&self) -> Vec<u8> {
        self.ssh.private.clone()
    }

    /// The same key as a file (mode 0600, owned by root), for `ssh -i` / `--ssh-identity`.
    pub fn ssh_private_key_path(&self) -> &Path {
        &self.ssh.key
    }

    /// The public half, as it stands in every node's authorized_keys.
    pub fn ssh_public_key(&self) -> &str {
        &self.ssh.public
    }

    /// A private key no node accepts (for "wrong key: Permission denied (publickey)").
    pub fn wrong_ssh_private_key(&self) -> Vec<u8> {
        self.ssh.wrong_private.clone()
    }

    /// The wrong key as a file (mode 0600).
    pub fn wrong_ssh_private_key_path(&self) -> &Path {
        &self.ssh.wrong_key
    }

    /// A known_hosts file with every node's host key by IP, for `StrictHostKeyChecking=yes`.
    pub fn ssh_known_hosts_path(&self) -> &Path {
        &self.ssh.known_hosts
    }

    /// `ssh` options and destination for `node` with `identity`, checking host keys against
    /// [`Lab::ssh_known_hosts_path`], never prompting, connect bounded to 3 s; `remote` is the
    /// remote command line. Run it with [`Lab::jumpbox_command`] or [`Lab::admin_command`].
    pub fn ssh_argv(&self, node: &str, identity: &Path, remote: &str) -> Result<Vec<String>> {
        let ip = self.node(node)?.ip;
        let mut argv: Vec<String> = vec!["ssh".into(), "-i".into()];
        argv.push(identity.to_string_lossy().into_owned());
        for o in [
            "IdentitiesOnly=yes".to_string(),
            "StrictHostKeyChecking=yes".to_string(),
            format!("UserKnownHostsFile={}", self.ssh.known_hosts.display()),
            "BatchMode=yes".to_string(),
            "ConnectTimeout=3".to_string(),
            "LogLevel=ERROR".to_string(),
        ] {
            argv.push("-o".into());
            argv.push(o);
        }
        argv.push(format!("{SSH_USER}@{ip}"));
        argv.push(remote.into());
        Ok(argv)
    }

    fn daemons(&self) -> Result<&daemon::Daemons> {
        self.daemons.as_ref().context("the lab is torn down")
    }

    /// Starts the node's sshd (if it is not running) and returns once it listens on
    /// `<node ip>:22`.
    pub fn start_sshd(&self, node: &str) -> Result<()> {
        let n = self.node(node)?;
        let i = self
            .nodes()
            .iter()
            .position(|x| x.name == n.name)
            .unwrap_or(0);
        let mut cmd = view::command(n, Mode::Node, &ssh::sshd_argv(n, self.ssh.uid));
        // A node daemon's environment, not the test's.
        cmd.env_clear().env("PATH", PATH);
        self.daemons()?.start(
            i,
            Start {
                cmd,
                marker: daemon::marker(self.id(), &n.name, "sshd"),
                log: &n.sshd_log(),
                pid_file: &n.sshd_pid_file(),
            },
        )?;
        Ok(())
    }

    /// Kills the node's sshd listener (SIGKILL): new connections are refused at once
    /// ("Connection refused", ssh exit 255). Sessions already open go on, as on a VM whose
    /// `ssh` service is stopped. [`Lab::start_sshd`] or [`Lab::heal`] start it again.
    pub fn stop_sshd(&self, node: &str) -> Result<()> {
        let i = self
            .nodes()
            .iter()
            .position(|x| x.name == node)
            .with_context(|| format!("no node {node:?} in lab {}", self.id()))?;
        self.daemons()?.stop(i);
        Ok(())
    }

    /// The pid of the node's sshd listener, if it runs.
    pub fn sshd_pid(&self, node: &str) -> Option<u32> {
        let i = self.nodes().iter().position(|x| x.name == node)?;
        self.daemons.as_ref()?.pid(i)
    }

    /// `argv` on the admin's machine for `--via ssh`: the switch namespace (source address
    /// [`Lab::jumpbox_ip`], so every node's 22 is reachable), the host's filesystem and the
    /// caller's environment (KUBECONFIG, HOME...). The host's loopback is not there: relay the
    /// fake API's port with [`Lab::forward_host_port`] first, then `https://127.0.0.1:PORT` works.
    pub fn admin_command<S: AsRef<OsStr>>(&self, argv: &[S]) -> Command {
        self.jumpbox_command(argv)
    }

    /// Makes the host's `127.0.0.1:port` reachable as `127.0.0.1:port` inside the switch
    /// namespace (for [`Lab::admin_command`] and the jumpbox), until the lab is torn down.
    /// Returns the address to use there. Forwarding a port twice is harmless. See `forward.rs`:
    /// a forwarded port with no host listener accepts and closes; leave a "refused" port alone.
    pub fn forward_host_port(&self, port: u16) -> Result<SocketAddr> {
        let mut forwards = self.forwards.lock().unwrap_or_else(|e| e.into_inner());
        if !forwards.iter().any(|f| f.port == port) {
            forwards.push(Forward::start(self.switch_netns(), port)?);
        }
        Ok(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// `argv` as a jumpbox pod in the vSphere Namespace runs it: the switch namespace's network
    /// (never faulted, reaches every node's 22), hostname `jumpbox`, a pod's filesystem (the
    /// host's programs; empty /tmp, /root, /home, /run; copy-on-write /etc and /var) and each
    /// `(host_path, container_path)` volume mounted read-only, e.g. a directory made with
    /// [`write_secret_volume`] at `/etc/ssh-key`. Environment: PATH, HOME=/root, HOSTNAME only;
    /// add a pod's `env` with `.env()`. A process-group leader; nothing outlives it on the host.
    pub fn jumpbox_pod_command<S, H, C>(&self, argv: &[S], mounts: &[(H, C)]) -> Result<Command>
    where
        S: AsRef<OsStr>,
        H: AsRef<Path>,
        C: AsRef<Path>,
    {
        self.jumpbox_pod_command_named("jumpbox", argv, mounts)
    }

    /// [`Lab::jumpbox_pod_command`] with the pod's name as hostname (a DNS label).
    pub fn jumpbox_pod_command_named<S, H, C>(
        &self,
        name: &str,
        argv: &[S],
        mounts: &[(H, C)],
    ) -> Result<Command>
    where
        S: AsRef<OsStr>,
        H: AsRef<Path>,
        C: AsRef<Path>,
    {
        self.jumpbox_pod_command_as(name, argv, mounts, &PodSecurity::default())
    }

    /// [`Lab::jumpbox_pod_command_named`] with what a pod's security context asks of the
    /// runtime: the user, group and supplementary groups the command runs as, a read-only root
    /// filesystem, and `emptyDir` volumes (writable, empty, at these container paths).
    pub fn jumpbox_pod_command_as<S, H, C>(
        &self,
        name: &str,
        argv: &[S],
        mounts: &[(H, C)],
        security: &PodSecurity,
    ) -> Result<Command>
    where
        S: AsRef<OsStr>,
        H: AsRef<Path>,
        C: AsRef<Path>,
    {
        if name.is_empty()
            || name.len() > 63
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            bail!("pod name {name:?} is not a DNS label");
        }
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.switch_netns()])
            .args([
                "unshare",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "--",
            ])
            .args(["/bin/sh", "-c", POD_SH, "etcdnet-pod"])
            .arg(self.jumpbox_scratch())
            .arg(name)
            .arg(security.spec()?)
            .arg(mounts.len().to_string());
        for (host, container) in mounts {
            let (host, container) = (host.as_ref(), container.as_ref());
            check_volume(host, container)?;
            c.arg(host).arg(container);
        }
        c.args(argv);
        c.env_clear()
            .env("PATH", PATH)
            .env("HOME", "/root")
            .env("HOSTNAME", name);
        // A pod on the jumpbox is a machine as a node's commands are (README, "CPU"): its own
        // session at the machines' nice, which also makes it the leader of the process group a
        // timeout kills.
        crate::exec::as_machine(&mut c);
        Ok(c)
    }

    /// The empty directory jumpbox pods mount their private scratch tmpfs on.
    pub(crate) fn jumpbox_scratch(&self) -> PathBuf {
        self.dir().join("jumpbox").join(".pod")
    }
}

/// A pod's security context as the lab's runtime applies it (see `sh/pod.sh`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSecurity {
    /// `runAsUser`; None: root.
    pub uid: Option<u32>,
    /// `runAsGroup`; None: group 0, as a runtime does for a numeric user without one.
    pub gid: Option<u32>,
    /// `fsGroup` and `supplementalGroups`.
    pub groups: Vec<u32>,
    /// `readOnlyRootFilesystem`: only volumes are writable.
    pub read_only_root: bool,
    /// The container paths of `emptyDir` volumes.
    pub empty_dirs: Vec<String>,
}

impl PodSecurity {
    /// One word per setting, for `pod.sh` (`uid=1 gid=2 groups=3,4 ro=1 empty=/tmp`).
    fn spec(&self) -> Result<String> {
        let mut words = vec![
            format!("uid={}", self.uid.unwrap_or(0)),
            format!("gid={}", self.gid.unwrap_or(0)),
            format!("ro={}", u8::from(self.read_only_root)),
        ];
        if !self.groups.is_empty() {
            let g: Vec<String> = self.groups.iter().map(u32::to_string).collect();
            words.push(format!("groups={}", g.join(",")));
        }
        for dir in &self.empty_dirs {
            if !dir.starts_with('/') || dir.contains(|c: char| c.is_whitespace() || c == '\'') {
                bail!("emptyDir path {dir:?} is not a plain absolute path");
            }
            words.push(format!("empty={dir}"));
        }
        Ok(words.join(" "))
    }
}

fn printable(p: &Path) -> bool {
    p.to_str().is_some_and(|s| !s.contains('\n'))
}

fn check_volume(host: &Path, container: &Path) -> Result<()> {
    if !printable(host) || !host.exists() {
        bail!("volume source {} does not exist", host.display());
    }
    let ok = printable(container)
        && container.is_absolute()
        && container
            .components()
            .skip(1)
            .all(|c| matches!(c, Component::Normal(_)));
    let top = container.components().nth(1);
    let special = top.is_some_and(|t| {
        ["proc", "sys", "dev"]
            .map(OsStr::new)
            .contains(&t.as_os_str())
    });
    if !ok || top.is_none() || special {
        bail!(
            "volume target {} must be an absolute path without `..`, not / and not under /proc, /sys or /dev",
            container.display()
        );
    }
    Ok(())
}

/// Writes a secret volume as the kubelet does: each key a file of `mode` (e.g. 0o400, a secret
/// volume's `defaultMode`) in a timestamped directory, `..data` a symlink to it, and each key a
/// symlink `key -> ..data/key`. `dir` must exist and be empty; mount it with
/// [`Lab::jumpbox_pod_command`].
pub fn write_secret_volume(dir: &Path, files: &[(&str, &[u8])], mode: u32) -> Result<()> {
    if fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .next()
        .is_some()
    {
        bail!("{} is not empty", dir.display());
    }
    let stamp = "..2025_01_01_00_00_00.000000001";
    let data = dir.join(stamp);
    fs::create_dir(&data)?;
    fs::set_permissions(&data, fs::Permissions::from_mode(0o755))?;
    for (key, bytes) in files {
        if key.is_empty() || key.contains('/') || key.starts_with("..") {
            bail!("invalid secret key {key:?}");
        }
        let f = data.join(key);
        fs::write(&f, bytes)?;
        fs::set_permissions(&f, fs::Permissions::from_mode(mode))?;
        symlink(format!("..data/{key}"), dir.join(key))?;
    }
    symlink(stamp, dir.join("..data"))?;
    Ok(())
}
