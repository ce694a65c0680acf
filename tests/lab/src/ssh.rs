//! The SSH route's node side: key pairs, each node's sshd files and the `vmware-system-user`
//! account, as a TKG control-plane VM has them.
//!
//! ```text
//! <lab>/ssh/                              0700
//!   id_ed25519, id_ed25519.pub            the cluster's key (what `<cluster>-ssh` holds), 0600
//!   wrong_ed25519, wrong_ed25519.pub      a key no node accepts
//!   known_hosts                           every node's host key, by IP
//! <root>/sshd/                            0700
//!   sshd_config, ssh_host_ed25519_key(.pub), sshd.pid, sshd.log
//! <root>/home/vmware-system-user/.ssh/authorized_keys   owned by the account, 0600
//! ```
//!
//! sshd runs inside the node's view (`sh/sshd.sh`), where the view's copy-on-write /etc gets the
//! account and its sudoers rule: the host's /etc/passwd, /etc/sudoers and /etc/ssh are never
//! read for it (sshd gets its own config, host key and authorized keys) nor written.

use std::fs;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::exec::checked;
use crate::Node;

/// The account the lab's nodes accept SSH logins for, as TKG's VMs do.
pub const SSH_USER: &str = "vmware-system-user";

const SSHD_SH: &str = include_str!("sh/sshd.sh");

/// The lab's SSH key material (paths under `<lab>/ssh`).
#[derive(Debug, Default)]
pub(crate) struct SshKeys {
    pub key: PathBuf,
    pub wrong_key: PathBuf,
    pub known_hosts: PathBuf,
    /// The private key's bytes (OpenSSH format), kept for the secret a test builds.
    pub private: Vec<u8>,
    pub wrong_private: Vec<u8>,
    /// The public key line put into every node's authorized_keys.
    pub public: String,
    /// The account's uid (and gid) inside the nodes: one the host does not use, so that files
    /// the host sees under the lab directory never seem to belong to a real host user.
    pub uid: u32,
}

impl Node {
    /// `<root>/sshd`: the node's sshd_config, host key, pid file and log.
    pub fn sshd_dir(&self) -> PathBuf {
        self.root.join("sshd")
    }
    /// `<root>/sshd/sshd.log`: what the node's sshd logged (LogLevel VERBOSE: every accepted or
    /// refused key).
    pub fn sshd_log(&self) -> PathBuf {
        self.sshd_dir().join("sshd.log")
    }
    pub(crate) fn sshd_pid_file(&self) -> PathBuf {
        self.sshd_dir().join("sshd.pid")
    }
}

fn keygen(path: &Path, comment: &str) -> Result<()> {
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path);
    checked(c, None, Duration::from_secs(20))
        .with_context(|| format!("ssh-keygen {}", path.display()))?;
    Ok(())
}

fn mkdir(path: &Path, mode: u32) -> Result<()> {
    fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// The smallest id from 1000 up that neither /etc/passwd nor /etc/group of the host uses (a
/// shared uid would make sshd and sudo see the host's user instead of ours).
fn free_uid() -> Result<u32> {
    let mut used = Vec::new();
    for file in ["/etc/passwd", "/etc/group"] {
        let text = fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
        used.extend(
            text.lines()
                .filter_map(|l| l.split(':').nth(2)?.parse::<u32>().ok()),
        );
    }
    (1000..60000)
        .find(|id| !used.contains(id))
        .context("no free uid between 1000 and 60000")
}

/// Makes `<lab>/ssh` with the cluster's key pair and a wrong one.
pub(crate) fn make_keys(lab_dir: &Path, lab_id: &str) -> Result<SshKeys> {
    let dir = lab_dir.join("ssh");
    mkdir(&dir, 0o700)?;
    let key = dir.join("id_ed25519");
    let wrong_key = dir.join("wrong_ed25519");
    keygen(&key, &format!("{lab_id}-ssh"))?;
    keygen(&wrong_key, &format!("{lab_id}-wrong"))?;
    Ok(SshKeys {
        private: fs::read(&key)?,
        wrong_private: fs::read(&wrong_key)?,
        public: fs::read_to_string(key.with_extension("pub"))?
            .trim()
            .to_string(),
        known_hosts: dir.join("known_hosts"),
        uid: free_uid()?,
        key,
        wrong_key,
    })
}

/// sshd's configuration for one node: nothing comes from the host's /etc/ssh.
fn sshd_config(node: &Node) -> String {
    let d = node.sshd_dir();
    let d = d.display();
    format!(
        "# etcdnet-lab: sshd of control-plane node {name} (a TKG VM's, minus what a lab cannot have).\n\
         ListenAddress {ip}:22\n\
         HostKey {d}/ssh_host_ed25519_key\n\
         PidFile {d}/sshd.pid\n\
         # Relative to the home directory, which the node directory provides (sshd.sh binds it).\n\
         AuthorizedKeysFile .ssh/authorized_keys\n\
         StrictModes yes\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PermitRootLogin no\n\
         AllowUsers {user}\n\
         # No PAM: sshd checks the account itself from the view's /etc/passwd and /etc/shadow.\n\
         UsePAM no\n\
         # Every accepted and refused key is logged, for tests that read sshd.log.\n\
         LogLevel VERBOSE\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         X11Forwarding no\n\
         Subsystem sftp internal-sftp\n",
        name = node.name,
        ip = node.ip,
        user = SSH_USER,
    )
}

/// Lays out a node's sshd files and the account's home; returns the node's known_hosts line.
pub(crate) fn lay_out(node: &Node, keys: &SshKeys) -> Result<String> {
    let sshd = node.sshd_dir();
    mkdir(&sshd, 0o700)?;
    let host_key = sshd.join("ssh_host_ed25519_key");
    keygen(&host_key, &format!("root@{}", node.name))?;
    fs::write(sshd.join("sshd_config"), sshd_config(node))?;

    // StrictModes: home, ~/.ssh and authorized_keys owned by the user (or root), not writable by
    // group or others. /home itself is the node's `home` directory, bound by sshd.sh.
    mkdir(&node.root.join("home"), 0o755)?;
    let home = node.root.join("home").join(SSH_USER);
    let dot_ssh = home.join(".ssh");
    mkdir(&dot_ssh, 0o700)?;
    fs::set_permissions(&home, fs::Permissions::from_mode(0o750))?;
    let authorized = dot_ssh.join("authorized_keys");
    fs::write(&authorized, format!("{}\n", keys.public))?;
    fs::set_permissions(&authorized, fs::Permissions::from_mode(0o600))?;
    for p in [&home, &dot_ssh, &authorized] {
        chown(p, Some(keys.uid), Some(keys.uid))
            .with_context(|| format!("chown {}", p.display()))?;
    }

    let public = fs::read_to_string(host_key.with_extension("pub"))?;
    let mut fields = public.split_whitespace();
    let (Some(kind), Some(blob)) = (fields.next(), fields.next()) else {
        bail!("unexpected host key {public:?}");
    };
    Ok(format!("{} {kind} {blob}", node.ip))
}

/// The command line run inside the node view: prepare the account, then exec sshd.
pub(crate) fn sshd_argv(node: &Node, uid: u32) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        SSHD_SH.into(),
        "etcdnet-sshd".into(),
        node.root.to_string_lossy().into_owned(),
        uid.to_string(),
    ]
}
