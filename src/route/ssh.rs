//! SSH to the control-plane VMs, shared by two routes:
//! - `jumpbox`: ssh runs inside a pod in the vSphere Namespace (the documented VMware way in);
//! - `ssh`: ssh runs on the admin's machine (VMs routable from there, or `ProxyJump`).
//!
//! Both use the system's OpenSSH client and let it do only what the probe needs: the options of
//! [`LOCKED_OPTIONS`] come first on its command line, so neither the admin's `~/.ssh/config` nor
//! `--ssh-option` can turn on agent or X11 forwarding, port forwarding, connection sharing, a
//! local command or a prompt ([`user_option`] refuses an option that tries, as a usage error).
//!
//! Host keys: the VMs' keys are known to nobody beforehand (the Supervisor user never saw them),
//! so each is learnt on first contact (`StrictHostKeyChecking=accept-new`) into a known_hosts file
//! of the run alone (the system's and the admin's files are not read or written), checked for the
//! rest of the run, and its fingerprint goes into the report (`hostKey`), where the admin can
//! compare it with the VM's. The probe script goes over stdin to `sudo sh -s` on the node.
//!
//! What ssh prints is read with a cap while it is read (a node printing without end costs at
//! most the caps), as bytes: stderr is decoded lossily for the failure message, the document is
//! parsed from the bytes, so a banner or MOTD in another encoding never fails a node.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::{Arg, ArgAction};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{Address, Configured, Env, Flags, Reached, Route, Run, Session, Shared, Target};
use crate::error::{Error, Result};
use crate::probe::parse::MAX_OUTPUT_BYTES;
use crate::probe::script::{self, ProbeArgs};
use crate::probe::{HostKey, ProbeOutput, ReachError, ReachErrorKind};

mod options;
pub use options::*;

/// Reads what ssh says when it fails (exit 255, message on stderr) as a reach error.
pub fn classify_failure(host: &str, user: &str, exit: Option<i32>, stderr: &str) -> ReachError {
    let text = stderr.trim();
    // The last line is quoted to the user; the node writes stderr too (up to a MiB): cut it.
    let last = crate::probe::head(
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim(),
        300,
    );
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

/// The run's private files on the admin's machine: a 0700 temporary directory with the key (a
/// 0600 file, when it comes from the cluster's secret) and one known_hosts file per node (one
/// file per node, not one shared: what ssh records there is that node's key and nothing else,
/// whatever HostKeyAlias or HashKnownHosts the admin's config sets). Removed when dropped: every
/// exit path of the run, Ctrl-C included, since the session owns it until the run ends. On
/// Windows, where there are no modes, the directory's access list is what keeps it private
/// (see [`RunDir::create`]).
pub struct RunDir {
    dir: tempfile::TempDir,
    key: Option<PathBuf>,
}

impl RunDir {
    pub fn create() -> std::io::Result<RunDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("etcdnet-ssh-");
        // Only we may look inside: the directory is created 0700, not with the umask's 0755.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        // Windows has no mode bits: what protects the directory is its ACL, inherited from the
        // temp directory it is created in. The default one (%TEMP%, GetTempPath2) lies in the
        // user's profile, whose ACL grants only the user, SYSTEM and Administrators, which is
        // also what Windows' OpenSSH demands of a private key before it uses it. A TMP/TEMP
        // pointing at a shared directory would share the key: docs/install.md says so.
        Ok(RunDir {
            dir: builder.tempdir()?,
            key: None,
        })
    }

    /// Writes the private key as `id`, 0600; returns its path.
    pub fn write_key(&mut self, key: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.dir.path().join("id");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        // On Windows the file inherits the private directory's ACL (see `create`). It is opened
        // without FILE_SHARE_READ/WRITE, so no other process can open the key while it is written.
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            options.share_mode(0);
        }
        let mut f = options.open(&path)?;
        f.write_all(key)?;
        // OpenSSH refuses a key whose last line has no newline.
        if !key.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        self.key = Some(path.clone());
        Ok(path)
    }

    /// The key written by [`RunDir::write_key`].
    pub fn key(&self) -> Option<&Path> {
        self.key.as_deref()
    }

    /// The known_hosts file of the node at `ip` (ssh creates it on first contact).
    pub fn known_hosts(&self, ip: IpAddr) -> PathBuf {
        self.dir.path().join(format!("known_hosts-{ip}"))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The host key ssh recorded in `known_hosts` (None before any contact). Read with a cap: the
/// file holds one line.
fn recorded_host_key(known_hosts: &Path) -> Option<HostKey> {
    let mut text = Vec::new();
    std::fs::File::open(known_hosts)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut text)
        .ok()?;
    HostKey::from_known_hosts(&String::from_utf8_lossy(&text))
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

    /// `--ssh-identity`, `--ssh-agent` and `--ssh-option`.
    fn args(&self) -> Vec<Arg> {
        vec![
            Arg::new("ssh_identity")
                .long("ssh-identity")
                .value_name("PATH")
                .action(ArgAction::Set)
                .value_parser(clap::value_parser!(PathBuf))
                .conflicts_with("ssh_agent")
                .help("ssh route: this private key instead of the cluster's <cluster>-ssh secret"),
            Arg::new("ssh_agent")
                .long("ssh-agent")
                .action(ArgAction::SetTrue)
                .help("ssh route: use the running ssh-agent instead of the cluster's <cluster>-ssh secret"),
            Arg::new("ssh_option")
                .long("ssh-option")
                .value_name("KEY=VALUE")
                .action(ArgAction::Append)
                .value_parser(user_option)
                .help("ssh route: an option passed to ssh -o (repeatable), e.g. ProxyJump=admin@bastion"),
        ]
    }

    fn configure(&self, shared: &Shared, flags: &Flags) -> Box<dyn Configured> {
        Box::new(SshRouteSettings::new(shared, flags))
    }
}

impl SshRouteSettings {
    /// The ssh route's settings for one cluster.
    pub fn new(shared: &Shared, flags: &Flags) -> SshRouteSettings {
        // `--ssh-identity` / `--ssh-agent`, else the cluster's secret.
        let key = match (
            flags.one::<PathBuf>("ssh_identity"),
            flags.is_set("ssh_agent"),
        ) {
            (Some(path), _) => SshKey::File(path),
            (None, true) => SshKey::Agent,
            (None, false) => SshKey::ClusterSecret,
        };
        SshRouteSettings {
            ssh: SshSettings {
                options: flags.all("ssh_option"),
                ..shared.ssh()
            },
            key,
            cluster: shared.cluster.clone(),
            namespace: shared.namespace.clone(),
        }
    }
}

impl Configured for SshRouteSettings {
    /// It creates no object: only processes on this machine.
    fn would_create(&self, _: &[Target]) -> Vec<Pod> {
        Vec::new()
    }

    fn open<'a>(
        &'a self,
        env: Env<'a>,
        _: &'a [Target],
    ) -> BoxFuture<'a, Result<Box<dyn Session + 'a>>> {
        Box::pin(async move {
            let s = self;
            let mut files = RunDir::create().map_err(|e| {
                Error::config_from("cannot create a private temporary directory for ssh", e)
            })?;
            if option_path(files.path()).is_none() {
                return Err(Error::config(format!(
                    "the temporary directory {:?} cannot be named in an ssh option (blanks, quotes or %); set TMPDIR to a plain path",
                    files.path().display().to_string()
                )));
            }
            let identity =
                match &s.key {
                    SshKey::File(path) => Some(path.clone()),
                    SshKey::Agent => None,
                    SshKey::ClusterSecret => {
                        let key = read_key(env.supervisor, &s.namespace, &s.cluster).await?;
                        Some(files.write_key(&key).map_err(|e| {
                            Error::config_from("cannot write a temporary key file", e)
                        })?)
                    }
                };
            Ok(Box::new(SshSession {
                settings: &s.ssh,
                identity,
                files,
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

/// An opened ssh route. It owns the run's files (the key, the known_hosts files): they are
/// removed when the session is dropped, which is every way the run ends (Ctrl-C drops the future
/// that owns it).
struct SshSession<'a> {
    settings: &'a SshSettings,
    identity: Option<PathBuf>,
    files: RunDir,
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
            let known_hosts = self.files.known_hosts(at.ip);
            // The directory passed `option_path` at open; an IP adds only plain characters.
            let outcome = match option_path(&known_hosts) {
                Some(kh) => {
                    probe_one(
                        &at.ip.to_string(),
                        &at.probe,
                        self.settings,
                        self.identity.as_deref(),
                        &kh,
                        run.bound,
                    )
                    .await
                }
                None => Err(ReachError {
                    kind: ReachErrorKind::Other,
                    message: format!("{} cannot be named in an ssh option", known_hosts.display()),
                }),
            };
            Reached {
                outcome,
                reach: Vec::new(),
                // Recorded on first contact, before authentication: known for a failed login too.
                host_key: recorded_host_key(&known_hosts),
            }
        })
    }
}

/// The most of ssh's stderr read: its own errors, a banner, sudo's lecture. More is not ssh
/// talking, and is a `BadOutput` as soon as it is seen.
pub const MAX_STDERR_BYTES: usize = 1024 * 1024;

async fn probe_one(
    host: &str,
    probe: &ProbeArgs,
    settings: &SshSettings,
    identity: Option<&Path>,
    known_hosts: &str,
    bound: Duration,
) -> std::result::Result<ProbeOutput, ReachError> {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.args(ssh_args(
        settings,
        identity,
        known_hosts,
        host,
        &remote_probe_command(probe),
    ))
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    // Ctrl-C, the bound or an oversized output drop this future: ssh must not outlive it.
    .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| ReachError {
        kind: ReachErrorKind::Other,
        message: format!("cannot run ssh: {e} (is the OpenSSH client installed?)"),
    })?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ReachError {
            kind: ReachErrorKind::Other,
            message: format!("ssh {host}: no pipes to the ssh process"),
        });
    };
    // The script is written while the output is read: a node that answers before reading all
    // of its stdin never blocks us on a full pipe. One bound for the whole exchange.
    let exchange = async {
        let write = async move {
            // A node that stops reading early (or is gone) says so in its output and exit code.
            let _ = stdin.write_all(script::PROBE_SH.as_bytes()).await;
            // Dropped here: end of file ends `sh -s`.
            Ok(())
        };
        let ((), (out, err)) = tokio::try_join!(
            write,
            read_both(host, stdout, stderr, (MAX_OUTPUT_BYTES, MAX_STDERR_BYTES))
        )?;
        let status = child.wait().await.map_err(|e| ReachError {
            kind: ReachErrorKind::Other,
            message: format!("ssh {host}: {e}"),
        })?;
        Ok((status, out, err))
    };
    match tokio::time::timeout(bound, exchange).await {
        Ok(Ok((status, out, err))) => read_result(
            host,
            &settings.user,
            status.code(),
            status.success(),
            &out,
            &err,
        ),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ReachError {
            kind: ReachErrorKind::Timeout,
            message: format!("ssh {host}: no result within {}s", bound.as_secs()),
        }),
    }
}

/// Reads all of `r` but at most `cap` bytes: None when there is more. The cap holds while
/// reading (at most `cap + 1` bytes are ever read), not after.
async fn read_capped<R: AsyncRead + Unpin>(r: R, cap: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    r.take(cap as u64 + 1).read_to_end(&mut buf).await?;
    Ok((buf.len() <= cap).then_some(buf))
}

/// ssh's stdout and stderr, read together, each up to its cap (`caps`: stdout, stderr); more on
/// either is a `BadOutput` at once (the caller then drops, and so kills, ssh).
async fn read_both<O, E>(
    host: &str,
    stdout: O,
    stderr: E,
    caps: (usize, usize),
) -> std::result::Result<(Vec<u8>, Vec<u8>), ReachError>
where
    O: AsyncRead + Unpin,
    E: AsyncRead + Unpin,
{
    let too_long = |what: &str, cap: usize| ReachError {
        kind: ReachErrorKind::BadOutput,
        message: format!(
            "ssh {host}: more than {cap} bytes on {what}: not a probe's output, not read further"
        ),
    };
    let failed = |e: std::io::Error| ReachError {
        kind: ReachErrorKind::Other,
        message: format!("ssh {host}: reading its output: {e}"),
    };
    let out = async {
        read_capped(stdout, caps.0)
            .await
            .map_err(failed)?
            .ok_or_else(|| too_long("stdout", caps.0))
    };
    let err = async {
        read_capped(stderr, caps.1)
            .await
            .map_err(failed)?
            .ok_or_else(|| too_long("stderr", caps.1))
    };
    tokio::try_join!(out, err)
}

/// What one ssh run gave: the probe's document, parsed from stdout's bytes (banners, noise and
/// invalid UTF-8 around it are the parser's to skip), else why not, from the exit code and
/// stderr decoded lossily (a MOTD in another encoding must not fail the node).
fn read_result(
    host: &str,
    user: &str,
    exit: Option<i32>,
    success: bool,
    stdout: &[u8],
    stderr: &[u8],
) -> std::result::Result<ProbeOutput, ReachError> {
    match crate::probe::parse::parse(host, stdout) {
        Ok(p) => Ok(p),
        Err(_) if !success => Err(classify_failure(
            host,
            user,
            exit,
            &String::from_utf8_lossy(stderr),
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

    #[test]
    fn the_key_and_options_come_from_the_routes_flags() {
        let shared = Shared::example();
        let of = |argv: &[&str]| SshRouteSettings::new(&shared, &Flags::parse(argv));
        let s = of(&[]);
        assert_eq!(s.key, SshKey::ClusterSecret);
        assert_eq!((s.cluster.as_str(), s.namespace.as_str()), ("tkc", "ns"));
        assert_eq!(s.ssh.user, DEFAULT_USER);
        assert_eq!(s.ssh.connect_timeout, Duration::from_secs(3));
        assert!(s.ssh.options.is_empty());
        assert_eq!(of(&["--ssh-agent"]).key, SshKey::Agent);
        assert_eq!(
            of(&["--ssh-identity", "/k"]).key,
            SshKey::File(PathBuf::from("/k"))
        );
        let s = of(&["--ssh-option", "ProxyJump=a@b", "--ssh-option", "Port=2222"]);
        assert_eq!(s.ssh.options, ["ProxyJump=a@b", "Port=2222"]);
    }

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
            "/tmp/k/known_hosts-198.18.0.11",
            "198.18.0.11",
            "true",
        );
        let joined = a.join(" ");
        for want in [
            "-i /tmp/k/id",
            "BatchMode=yes",
            "StrictHostKeyChecking=accept-new",
            "UserKnownHostsFile=/tmp/k/known_hosts-198.18.0.11",
            "GlobalKnownHostsFile=/dev/null",
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

    /// ssh keeps an option's first value: every one of ours must come before the admin's.
    #[test]
    fn our_options_come_before_the_admins() {
        let s = SshSettings {
            options: vec![
                "ProxyJump=admin@bastion".into(),
                "Port=2222".into(),
                // Not through the command line (refused there): left out here too.
                "ForwardAgent=yes".into(),
                "controlpath /tmp/cm-%C".into(),
            ],
            ..settings()
        };
        let a = ssh_args(&s, None, "/tmp/k/kh", "198.18.0.11", "true");
        let at = |opt: &str| {
            a.windows(2)
                .position(|w| w[0] == "-o" && w[1] == opt)
                .unwrap_or_else(|| panic!("{opt} not in {a:?}"))
        };
        let first_users = at("ProxyJump=admin@bastion");
        assert!(first_users < at("Port=2222"));
        for (k, v) in LOCKED_OPTIONS {
            assert!(at(&format!("{k}={v}")) < first_users, "{k}");
        }
        for ours in [
            "UserKnownHostsFile=/tmp/k/kh",
            "LogLevel=ERROR",
            "ConnectTimeout=3",
        ] {
            assert!(at(ours) < first_users, "{ours}");
        }
        assert!(!a.iter().any(|x| x == "ForwardAgent=yes"), "{a:?}");
        assert!(!a.iter().any(|x| x.starts_with("controlpath")), "{a:?}");
        // The seven of the brief, at least.
        for k in [
            "BatchMode",
            "ForwardAgent",
            "ForwardX11",
            "ClearAllForwardings",
            "ControlMaster",
            "ControlPath",
            "PermitLocalCommand",
        ] {
            assert!(LOCKED_OPTIONS.iter().any(|(l, _)| *l == k), "{k}");
        }
        assert!(locked_option_words().starts_with("-o BatchMode=yes -o ForwardAgent=no"));
    }

    #[test]
    fn the_admin_cannot_change_what_is_locked() {
        for refused in [
            "ForwardAgent=yes",
            "forwardagent yes",
            "  ForwardAgent = yes",
            "ForwardAgent\tyes",
            "ControlMaster=auto",
            "ControlPath=/tmp/cm-%C",
            "ClearAllForwardings=no",
            "PermitLocalCommand=yes",
            "ForwardX11=yes",
            "BatchMode=no",
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/tmp/x",
            "GlobalKnownHostsFile=/etc/ssh/ssh_known_hosts",
            "LocalCommand=touch /tmp/x",
            "RemoteForward=8080 localhost:80",
            "User=root",
            "ConnectTimeout=60",
        ] {
            let e = user_option(refused).unwrap_err();
            let keyword = refused.trim_start().split([' ', '=', '\t']).next().unwrap();
            assert!(
                e.to_lowercase().contains(&keyword.to_lowercase()),
                "{refused}: {e}"
            );
            assert!(!e.contains('\n'), "one line: {e}");
        }
        // Not a plain keyword: ssh might read another one than the one checked.
        for malformed in [
            "",
            "=yes",
            "\"ForwardAgent\" yes",
            "ProxyJump=a\nForwardAgent yes",
            "Forward-Agent=yes",
        ] {
            assert!(user_option(malformed).is_err(), "{malformed:?}");
        }
        for allowed in [
            "ProxyJump=admin@bastion",
            "ProxyJump admin@bastion:2222",
            "Port=2222",
            "IdentityFile=~/.ssh/tkc",
            "HostKeyAlgorithms=+ssh-rsa",
        ] {
            assert_eq!(user_option(allowed).unwrap(), allowed);
        }
    }

    #[test]
    fn only_plain_paths_go_into_an_option() {
        assert_eq!(
            option_path(Path::new("/tmp/etcdnet-ssh-Ab1/known_hosts-fd00::12")).as_deref(),
            Some("/tmp/etcdnet-ssh-Ab1/known_hosts-fd00::12")
        );
        for bad in [
            "/tmp/with space/kh",
            "/tmp/%h/kh",
            "/tmp/\"q/kh",
            "~/kh",
            "relative/kh",
        ] {
            assert_eq!(option_path(Path::new(bad)), None, "{bad}");
        }
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
        // What is quoted of a flood on stderr stays one short line.
        let flood = format!("{}\n", "\u{e9}".repeat(100_000));
        let e = classify_failure("198.18.0.11", DEFAULT_USER, Some(1), &flood);
        assert!(e.message.len() < 400, "{}", e.message.len());
    }

    #[test]
    fn run_files_are_private_and_removed() {
        let dir;
        {
            let mut files = RunDir::create().unwrap();
            let key = files
                .write_key(
                    b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
                )
                .unwrap();
            assert_eq!(files.key(), Some(key.as_path()));
            dir = files.path().to_path_buf();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(
                    std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                    0o600
                );
                assert_eq!(
                    std::fs::metadata(files.path())
                        .unwrap()
                        .permissions()
                        .mode()
                        & 0o777,
                    0o700
                );
            }
            assert!(std::fs::read(&key).unwrap().ends_with(b"-----\n"));
            // One known_hosts file per node, next to the key.
            let kh = files.known_hosts("198.18.0.11".parse().unwrap());
            assert_eq!(kh.parent(), Some(files.path()));
            assert_ne!(kh, files.known_hosts("198.18.0.12".parse().unwrap()));
            assert_eq!(recorded_host_key(&kh), None, "no contact yet");
            std::fs::write(
                &kh,
                "198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY\n",
            )
            .unwrap();
            assert_eq!(
                recorded_host_key(&kh).unwrap().sha256,
                "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4"
            );
        }
        assert!(!dir.exists(), "removed on drop");
    }

    /// A probe document as the healthy fixture has it.
    fn document() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/probe-output/healthy-node.json"
        ))
        .unwrap()
    }

    #[tokio::test]
    async fn output_is_capped_while_it_is_read() {
        let cap = 1000;
        let exactly = vec![b'x'; cap];
        let over = vec![b'x'; cap + 1];
        let (out, err) = read_both("198.18.0.11", &exactly[..], &exactly[..], (cap, cap))
            .await
            .unwrap();
        assert_eq!(
            (out.len(), err.len()),
            (cap, cap),
            "exactly the cap is fine"
        );
        for (stdout, stderr, what) in [
            (&over[..], &b""[..], "stdout"),
            (&b""[..], &over[..], "stderr"),
        ] {
            let e = read_both("198.18.0.11", stdout, stderr, (cap, cap))
                .await
                .unwrap_err();
            assert_eq!(e.kind, ReachErrorKind::BadOutput, "{what}");
            assert!(e.message.contains(what), "{}", e.message);
        }
        // A stream without end: refused once past the cap, not read to its (absent) end.
        let e = read_both("198.18.0.11", tokio::io::repeat(b'y'), &b""[..], (cap, cap))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::BadOutput);
        // The real caps hold the largest document the parser reads.
        assert_eq!(
            read_capped(&document()[..], MAX_OUTPUT_BYTES)
                .await
                .unwrap(),
            Some(document())
        );
    }

    #[tokio::test]
    async fn a_process_printing_without_end_is_cut_off() {
        // `yes` never stops: what is held stays at the cap, and the answer comes at once.
        let mut child = tokio::process::Command::new("yes")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let started = std::time::Instant::now();
        let e = read_both("198.18.0.11", out, err, (1024 * 1024, 1024))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::BadOutput);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn invalid_utf8_from_ssh_or_sudo_never_fails_a_node() {
        // A banner and a MOTD in Latin-1 on stderr, noise with broken UTF-8 around the document.
        let mut stdout = b"\xe9t\xe9 \xff\xfe banner\n".to_vec();
        stdout.extend(document());
        stdout.extend(b"\n\xc3\x28 logout \x80\n");
        let stderr = b"Bienvenue \xe0 bord\n\xff\xfe\x80\n";
        let p = read_result("198.18.0.11", DEFAULT_USER, Some(0), true, &stdout, stderr).unwrap();
        assert_eq!(p.node_ip, "198.18.0.11");
        // ssh's own failure after a broken banner still reads as what it is.
        let stderr =
            b"\xff\xfe\x80 MOTD\nvmware-system-user@198.18.0.11: Permission denied (publickey).\n";
        let e = read_result(
            "198.18.0.11",
            DEFAULT_USER,
            Some(255),
            false,
            b"\xff",
            stderr,
        )
        .unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::AuthFailed, "{e:?}");
        // A run that succeeded but printed no document.
        let e =
            read_result("198.18.0.11", DEFAULT_USER, Some(0), true, b"\xff\xfe", b"").unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::BadOutput);
    }
}
