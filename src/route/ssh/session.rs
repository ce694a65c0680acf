//! The ssh route's session: one `ssh` from the admin's machine per node, its output read with a
//! cap.
//!
//! What ssh prints is read with a cap while it is read (a node printing without end costs at
//! most the caps), as bytes: stderr is decoded lossily for the failure message, the document is
//! parsed from the bytes, so a banner or MOTD in another encoding never fails a node.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::client::classify_failure;
use super::options::{option_path, remote_probe_command, ssh_args, SshSettings};
use super::ports;
use super::run_dir::{recorded_host_key, RunDir};
use crate::probe::parse::MAX_OUTPUT_BYTES;
use crate::probe::script;
use crate::probe::{PortState, ProbeOutput, ReachError, ReachErrorKind};
use crate::route::{Address, Reached, Run, Target};

/// An opened ssh route. It owns the run's files (the key, the known_hosts files): they are
/// removed when the session is dropped, which is every way the run ends (Ctrl-C drops the future
/// that owns it).
pub(crate) struct SshSession<'a> {
    pub(super) settings: &'a SshSettings,
    pub(super) identity: Option<PathBuf>,
    pub(super) files: RunDir,
}

impl SshSession<'_> {
    /// The progress line while it runs.
    pub fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane VMs over ssh")
    }

    /// Reaches the target at `at` and runs the probe there; beside it, when ssh connects from
    /// this machine, the VM's ports as this machine sees them ([`ports`]).
    pub async fn probe(&self, _: &Target, at: &Address, run: &Run<'_>) -> Reached {
        let known_hosts = self.files.known_hosts(at.ip);
        // The directory passed `option_path` at open; an IP adds only plain characters.
        let Some(kh) = option_path(&known_hosts) else {
            return Reached {
                outcome: Err(ReachError {
                    kind: ReachErrorKind::Other,
                    message: format!("{} cannot be named in an ssh option", known_hosts.display()),
                }),
                reach: Vec::new(),
                host_key: recorded_host_key(&known_hosts),
            };
        };
        let host = at.ip.to_string();
        let args = ssh_args(
            self.settings,
            self.identity.as_deref(),
            &kh,
            &host,
            &remote_probe_command(&at.probe),
        );
        // Through a proxy the proxy connects, not this machine: no view from here then.
        let direct = ports::effective(&args, ssh_env(std::env::vars_os()))
            .await
            .filter(|c| !c.proxied);
        let bound = ports::PORT_CHECK.min(self.settings.connect_timeout);
        let tcp = async {
            match direct {
                Some(_) => ports::tcp_ports(at.ip, bound).await,
                None => Vec::new(),
            }
        };
        let probe = probe_one(&host, &self.settings.user, args, run.bound);
        let ((outcome, port_22), mut reach) = tokio::join!(probe, tcp);
        // 22 from the probe's own connection, when that is where ssh connects.
        if direct.is_some_and(|c| c.port == 22) {
            reach.insert(
                0,
                crate::probe::PortReach {
                    port: 22,
                    state: port_22,
                },
            );
        }
        Reached {
            outcome,
            reach,
            // Recorded on first contact, before authentication: known for a failed login too.
            host_key: recorded_host_key(&known_hosts),
        }
    }
}

/// The most of ssh's stderr read: its own errors, a banner, sudo's lecture. More is not ssh
/// talking, and is a `BadOutput` as soon as it is seen.
pub(crate) const MAX_STDERR_BYTES: usize = 1024 * 1024;

/// The only variables an `ssh` child inherits: where programs and the admin's `~/.ssh` are
/// (`PATH`, `HOME`; a `ProxyCommand`/`ProxyJump` runs programs), who they are (`USER`,
/// `LOGNAME`), the admin's agent for their keys (`SSH_AUTH_SOCK`; `ForwardAgent=no` keeps it
/// on this machine), Kerberos for GSSAPI (`KRB5CCNAME`, `KRB5_CONFIG`), a security key's
/// provider (`SSH_SK_PROVIDER`), the temporary directory, the time zone and the locale its
/// messages (and the usual `SendEnv LANG LC_*`) use. Nothing else of the plugin's environment:
/// never `NSXT_PASSWORD` or any other secret the admin exported for another tool (ssh would
/// hand it to a `ProxyCommand`, a `LocalCommand` or a `SendEnv` pattern of the admin's config).
pub(crate) const SSH_ENV_ALLOWED: [&str; 16] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SSH_AUTH_SOCK",
    "KRB5CCNAME",
    "KRB5_CONFIG",
    "SSH_SK_PROVIDER",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
];

/// The environment an `ssh` child gets, from the plugin's own: the [`SSH_ENV_ALLOWED`] names
/// only, and of them never one that starts `NSXT_` (terraform-provider-nsxt's variables, which
/// the plugin reads too: none is allowed; kept as the rule's statement).
pub(crate) fn ssh_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vars.filter(|(k, _)| {
        k.to_str()
            .is_some_and(|k| SSH_ENV_ALLOWED.contains(&k) && !k.starts_with("NSXT_"))
    })
    .collect()
}

/// One ssh run of the probe with `args` (`ssh_args`'): its outcome, and port 22 as that
/// connection saw it ([`ports::port_22`]).
async fn probe_one(
    host: &str,
    user: &str,
    args: Vec<String>,
    bound: Duration,
) -> (std::result::Result<ProbeOutput, ReachError>, PortState) {
    let mut cmd = tokio::process::Command::new("ssh");
    // A clean environment: only what ssh needs (never the NSX credentials).
    cmd.env_clear().envs(ssh_env(std::env::vars_os()));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Ctrl-C, the bound or an oversized output drop this future: ssh must not outlive it.
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let e = ReachError {
                kind: ReachErrorKind::Other,
                message: format!("cannot run ssh: {e} (is the OpenSSH client installed?)"),
            };
            return (Err(e), PortState::Unknown);
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let e = ReachError {
            kind: ReachErrorKind::Other,
            message: format!("ssh {host}: no pipes to the ssh process"),
        };
        return (Err(e), PortState::Unknown);
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
        Ok(Ok((status, out, err))) => {
            let result = read_result(host, user, status.code(), status.success(), &out, &err);
            let port_22 = ports::port_22(
                status.code(),
                result.is_ok(),
                &String::from_utf8_lossy(&err),
            );
            (result, port_22)
        }
        Ok(Err(e)) => (Err(e), PortState::Unknown),
        Err(_) => (
            Err(ReachError {
                kind: ReachErrorKind::Timeout,
                message: format!("ssh {host}: no result within {}s", bound.as_secs()),
            }),
            PortState::Unknown,
        ),
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
    use crate::route::ssh::options::DEFAULT_USER;

    /// A probe document as the healthy fixture has it.
    fn document() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/probe-output/healthy-node.json"
        ))
        .unwrap()
    }

    /// The ssh child's environment: the allowed names only; `NSXT_*` and anything else of the
    /// plugin's environment never.
    #[test]
    fn ssh_gets_only_the_allowed_environment() {
        let os = |k: &str, v: &str| (std::ffi::OsString::from(k), std::ffi::OsString::from(v));
        let given = vec![
            os("PATH", "/usr/bin"),
            os("HOME", "/home/admin"),
            os("SSH_AUTH_SOCK", "/run/agent"),
            os("NSXT_PASSWORD", "planted-secret"),
            os("NSXT_USERNAME", "admin"),
            os("NSXT_MANAGER_HOST", "nsx"),
            os("AWS_SECRET_ACCESS_KEY", "planted-too"),
            os("LD_PRELOAD", "/tmp/evil.so"),
            os("LC_ALL", "C.UTF-8"),
        ];
        let got: Vec<String> = ssh_env(given.into_iter())
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect();
        assert_eq!(got, ["PATH", "HOME", "SSH_AUTH_SOCK", "LC_ALL"]);
        assert!(SSH_ENV_ALLOWED.iter().all(|k| !k.starts_with("NSXT_")));
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
