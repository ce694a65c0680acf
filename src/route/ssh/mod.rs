//! Route `ssh`: the admin's own OpenSSH client to every VM (VMs routable from this machine, or
//! `--ssh-option ProxyJump=...`).
//!
//! The files here also hold what the jumpbox route (which runs the same client in a pod) shares
//! with this one, so that the jumpbox imports from here and never the other way round:
//! `options.rs` (the ssh command line: what ssh is held to, the admin's options checked),
//! `client.rs` (what ssh's failures mean) and `secret.rs` (the cluster's `<cluster>-ssh` key).
//! The route's own: `session.rs` (one ssh per node, its output read with a cap) and `run_dir.rs`
//! (the run's key and known_hosts files).

use std::path::PathBuf;

use clap::{Arg, ArgAction};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;

use super::{Configured, Env, Flags, Route, Session, Shared, Target};
use crate::error::{Error, Result};

mod client;
mod options;
mod run_dir;
mod secret;
mod session;
pub use client::classify_failure;
pub use options::*;
pub use run_dir::RunDir;
pub use secret::{secret_name, KEY_FILE};
use session::SshSession;
pub use session::MAX_STDERR_BYTES;

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
            let identity = match &s.key {
                SshKey::File(path) => Some(path.clone()),
                SshKey::Agent => None,
                SshKey::ClusterSecret => {
                    let key = secret::read_key(env.supervisor, &s.namespace, &s.cluster).await?;
                    Some(
                        files.write_key(&key).map_err(|e| {
                            Error::config_from("cannot write a temporary key file", e)
                        })?,
                    )
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
}
