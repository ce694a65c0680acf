//! SSH to the control-plane VMs, shared by two routes:
//! - `jumpbox`: ssh runs inside a pod in the vSphere Namespace (the documented VMware way in);
//! - `ssh`: ssh runs on the admin's machine (VMs routable from there, or `ProxyJump`).
//!
//! Both use the system's OpenSSH client, non-interactively: no password prompt (BatchMode), no
//! host-key prompt (StrictHostKeyChecking=no with a throwaway known-hosts file — the VMs' host
//! keys are not known to the Supervisor user, and this is a read-only diagnosis), bounded connect.
//! The probe script goes over stdin to `sudo sh -s` on the node.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use tokio::io::AsyncWriteExt;

use super::{Address, Env, Reached, Route, RouteSettings, Run, Session, Target};
use crate::error::{Error, Result};
use crate::probe::script::{self, ProbeArgs};
use crate::probe::{ReachError, ReachErrorKind};

pub const DEFAULT_USER: &str = "vmware-system-user";

#[derive(Debug, Clone)]
pub struct SshSettings {
    pub user: String,
    pub connect_timeout: Duration,
    /// `-o` options passed through (`--ssh-option ProxyJump=...`).
    pub options: Vec<String>,
}

/// ssh's arguments (not the program): identity, the non-interactive options, user, host and the
/// remote command. `identity: None` leaves the choice to ssh (an agent, ~/.ssh).
pub fn ssh_args(
    settings: &SshSettings,
    identity: Option<&Path>,
    host: &str,
    remote: &str,
) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(id) = identity {
        args.extend([
            "-i".to_string(),
            id.display().to_string(),
            "-o".into(),
            "IdentitiesOnly=yes".into(),
        ]);
    }
    for opt in [
        "BatchMode=yes".to_string(),
        "StrictHostKeyChecking=no".into(),
        "UserKnownHostsFile=/dev/null".into(),
        "LogLevel=ERROR".into(),
        format!(
            "ConnectTimeout={}",
            settings.connect_timeout.as_secs().max(1)
        ),
        "ServerAliveInterval=5".into(),
        "ServerAliveCountMax=3".into(),
    ] {
        args.push("-o".into());
        args.push(opt);
    }
    for opt in &settings.options {
        args.push("-o".into());
        args.push(opt.clone());
    }
    args.extend([
        "-l".to_string(),
        settings.user.clone(),
        host.to_string(),
        remote.to_string(),
    ]);
    args
}

/// The remote command: the probe under sudo, its script on stdin. `-n` makes sudo fail instead
/// of prompting when it wants a password.
pub fn remote_probe_command(probe: &ProbeArgs) -> String {
    format!("sudo -n {}", script::stdin_command_line(probe))
}

/// Reads what ssh says when it fails (exit 255, message on stderr) as a reach error.
pub fn classify_failure(host: &str, user: &str, exit: Option<i32>, stderr: &str) -> ReachError {
    let text = stderr.trim();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let (kind, message) = if text.contains("Permission denied") {
        (
            ReachErrorKind::AuthFailed,
            format!("ssh {user}@{host}: authentication failed ({last}); check that the key is the cluster's <cluster>-ssh key"),
        )
    } else if text.contains("a password is required") || text.contains("a terminal is required") {
        (
            ReachErrorKind::AuthFailed,
            format!("ssh {user}@{host}: sudo wants a password ({last})"),
        )
    } else if text.contains("Connection timed out") || text.contains("Operation timed out") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: port 22 does not answer (connection timed out)"),
        )
    } else if text.contains("Connection refused") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: port 22 refused the connection"),
        )
    } else if text.contains("No route to host") || text.contains("Network is unreachable") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: no route to host"),
        )
    } else if text.contains("command not found") || exit == Some(127) {
        (ReachErrorKind::Other, format!("ssh {user}@{host}: {last}"))
    } else {
        (
            ReachErrorKind::Other,
            format!(
                "ssh {user}@{host} failed (exit {}){}",
                exit.map(|c| c.to_string()).unwrap_or_else(|| "?".into()),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ),
        )
    };
    ReachError { kind, message }
}

/// A private key on the admin's machine for the time of a run: a 0600 file in a 0700 temporary
/// directory, removed when this is dropped (every exit path of the run, Ctrl-C included, since
/// the run owns it until it ends).
pub struct KeyFile {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl KeyFile {
    pub fn write(key: &[u8]) -> std::io::Result<KeyFile> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("etcdnet-ssh-");
        // Only we may look inside: the directory is created 0700, not with the umask's 0755.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder.tempdir()?;
        let path = dir.path().join("id");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut f = options.open(&path)?;
        f.write_all(key)?;
        // OpenSSH refuses a key whose last line has no newline.
        if !key.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        Ok(KeyFile { dir, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Where the ssh route's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshKey {
    /// The cluster's `<cluster>-ssh` secret, written to a private temporary file for the run.
    ClusterSecret,
    /// `--ssh-identity PATH`.
    File(PathBuf),
    /// `--ssh-agent`: ssh asks the running agent.
    Agent,
}

#[derive(Debug, Clone)]
pub struct SshRouteSettings {
    pub ssh: SshSettings,
    pub key: SshKey,
    pub cluster: String,
    /// The vSphere Namespace (where `<cluster>-ssh` is).
    pub namespace: String,
}

/// Route `ssh`: the admin's own `ssh` to every VM.
pub struct SshRoute;

impl Route for SshRoute {
    fn name(&self) -> &'static str {
        "ssh"
    }

    fn help(&self) -> &'static str {
        "ssh from this machine to each VM (VMs routable from here, or --ssh-option ProxyJump=...)"
    }

    /// It creates no object: only processes on this machine.
    fn would_create(&self, _: &RouteSettings, _: &Target, _: &Address) -> Option<Pod> {
        None
    }

    fn open<'a>(
        &'a self,
        s: &'a RouteSettings,
        env: Env<'a>,
    ) -> BoxFuture<'a, Result<Box<dyn Session + 'a>>> {
        Box::pin(async move {
            let s = &s.ssh;
            let (identity, key_file) = match &s.key {
                SshKey::File(path) => (Some(path.clone()), None),
                SshKey::Agent => (None, None),
                SshKey::ClusterSecret => {
                    let key = read_key(env.supervisor, &s.namespace, &s.cluster).await?;
                    let file = KeyFile::write(&key)
                        .map_err(|e| Error::config_from("cannot write a temporary key file", e))?;
                    (Some(file.path().to_path_buf()), Some(file))
                }
            };
            Ok(Box::new(SshSession {
                settings: &s.ssh,
                identity,
                _key_file: key_file,
            }) as Box<dyn Session>)
        })
    }
}

/// The private key from `<cluster>-ssh` (key `ssh-privatekey`), kept in memory only.
async fn read_key(client: &kube::Client, namespace: &str, cluster: &str) -> Result<Vec<u8>> {
    use k8s_openapi::api::core::v1::Secret;
    let name = super::jumpbox::ssh_secret_name(cluster);
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    let secret = secrets.get(&name).await.map_err(|e| {
        Error::kube(
            format!(
                "reading secret {name:?} in namespace {namespace:?} (or use --ssh-identity / --ssh-agent)"
            ),
            e,
        )
    })?;
    secret
        .data
        .and_then(|mut d| d.remove(super::jumpbox::KEY_FILE))
        .map(|b| b.0)
        .ok_or_else(|| {
            Error::config(format!(
                "secret {name:?} has no key {:?}",
                super::jumpbox::KEY_FILE
            ))
        })
}

/// An opened ssh route. It owns the temporary key file, if any: the file is removed when the
/// session is dropped, which is every way the run ends (Ctrl-C drops the future that owns it).
struct SshSession<'a> {
    settings: &'a SshSettings,
    identity: Option<PathBuf>,
    _key_file: Option<KeyFile>,
}

impl Session for SshSession<'_> {
    fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane VMs over ssh")
    }

    fn probe<'a>(
        &'a self,
        _: &'a Target,
        at: &'a Address,
        run: &'a Run<'a>,
    ) -> BoxFuture<'a, Reached> {
        Box::pin(async move {
            probe_one(
                &at.ip.to_string(),
                &at.probe,
                self.settings,
                self.identity.as_deref(),
                run.bound,
            )
            .await
            .into()
        })
    }
}

async fn probe_one(
    host: &str,
    probe: &ProbeArgs,
    settings: &SshSettings,
    identity: Option<&Path>,
    bound: Duration,
) -> std::result::Result<crate::probe::ProbeOutput, ReachError> {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.args(ssh_args(
        settings,
        identity,
        host,
        &remote_probe_command(probe),
    ))
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    // Ctrl-C drops this future: the ssh process must not outlive it.
    .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| ReachError {
        kind: ReachErrorKind::Other,
        message: format!("cannot run ssh: {e} (is the OpenSSH client installed?)"),
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A node that never reads its stdin must not block us: the whole exchange is bounded below.
        let _ = tokio::time::timeout(bound, stdin.write_all(script::PROBE_SH.as_bytes())).await;
    }
    let out = match tokio::time::timeout(bound, child.wait_with_output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            return Err(ReachError {
                kind: ReachErrorKind::Other,
                message: format!("ssh {host}: {e}"),
            })
        }
        Err(_) => {
            return Err(ReachError {
                kind: ReachErrorKind::Timeout,
                message: format!("ssh {host}: no result within {}s", bound.as_secs()),
            })
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    match crate::probe::parse::parse(host, &out.stdout) {
        Ok(p) => Ok(p),
        Err(_) if !out.status.success() => Err(classify_failure(
            host,
            &settings.user,
            out.status.code(),
            &stderr,
        )),
        Err(e) => Err(ReachError {
            kind: ReachErrorKind::BadOutput,
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> SshSettings {
        SshSettings {
            user: DEFAULT_USER.into(),
            connect_timeout: Duration::from_secs(3),
            options: vec!["ProxyJump=admin@bastion".into()],
        }
    }

    #[test]
    fn args_are_non_interactive_and_bounded() {
        let a = ssh_args(
            &settings(),
            Some(Path::new("/tmp/k/id")),
            "198.18.0.11",
            "true",
        );
        let joined = a.join(" ");
        for want in [
            "-i /tmp/k/id",
            "BatchMode=yes",
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "ConnectTimeout=3",
            "ProxyJump=admin@bastion",
            "-l vmware-system-user 198.18.0.11 true",
        ] {
            assert!(joined.contains(want), "{want} in {joined}");
        }
        let remote = remote_probe_command(&ProbeArgs::new("198.18.0.11", ["198.18.0.12"]));
        assert!(
            remote.starts_with("sudo -n sh -s -- --self 198.18.0.11 --peer 198.18.0.12"),
            "{remote}"
        );
    }

    #[test]
    fn failures_are_named() {
        let c =
            |stderr: &str| classify_failure("198.18.0.11", DEFAULT_USER, Some(255), stderr).kind;
        assert_eq!(
            c("vmware-system-user@198.18.0.11: Permission denied (publickey)."),
            ReachErrorKind::AuthFailed
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: Connection timed out"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: Connection refused"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: No route to host"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("sudo: a password is required"),
            ReachErrorKind::AuthFailed
        );
        assert_eq!(c("weird"), ReachErrorKind::Other);
    }

    #[test]
    fn key_file_is_private_and_removed() {
        let dir;
        {
            let k = KeyFile::write(
                b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
            )
            .unwrap();
            dir = k.dir().to_path_buf();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(
                    std::fs::metadata(k.path()).unwrap().permissions().mode() & 0o777,
                    0o600
                );
                assert_eq!(
                    std::fs::metadata(k.dir()).unwrap().permissions().mode() & 0o777,
                    0o700
                );
            }
            assert!(std::fs::read(k.path()).unwrap().ends_with(b"-----\n"));
        }
        assert!(!dir.exists(), "removed on drop");
    }
}
