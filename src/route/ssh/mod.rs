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

use super::{Env, Session};
use crate::error::{Error, Result};

mod client;
mod options;
pub(crate) mod ports;
mod run_dir;
mod secret;
mod session;
pub(crate) use client::classify_failure;
pub use options::*;
pub(crate) use run_dir::RunDir;
pub(crate) use secret::secret_name;
pub use secret::KEY_FILE;
pub(crate) use session::SshSession;

/// Where the ssh route's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SshKey {
    /// The cluster's `<cluster>-ssh` secret, written to a private temporary file for the run.
    ClusterSecret,
    /// `--ssh-identity PATH`.
    File(PathBuf),
    /// `--ssh-agent`: ssh asks the running agent.
    Agent,
}

#[derive(Debug, Clone)]
pub(crate) struct SshRouteSettings {
    pub ssh: SshSettings,
    pub key: SshKey,
    pub cluster: String,
    /// The vSphere Namespace (where `<cluster>-ssh` is).
    pub namespace: String,
}

/// `--via ssh`'s help line.
pub(crate) const HELP: &str =
    "ssh from this machine to each VM (VMs routable from here, or --ssh-option ProxyJump=...)";

/// The ssh route's flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SshArgs {
    /// ssh route: this private key instead of the cluster's <cluster>-ssh secret
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "ssh_agent",
        help_heading = "Route: ssh"
    )]
    pub ssh_identity: Option<PathBuf>,

    /// ssh route: use the running ssh-agent instead of the cluster's <cluster>-ssh secret
    #[arg(long, help_heading = "Route: ssh")]
    pub ssh_agent: bool,

    /// ssh route: an option passed to ssh -o (repeatable), e.g. ProxyJump=admin@bastion
    #[arg(long, value_name = "KEY=VALUE", value_parser = user_option, help_heading = "Route: ssh")]
    pub ssh_option: Vec<String>,
}

impl SshRouteSettings {
    /// The ssh route's settings for `cluster` in `namespace`: its flags added to the `ssh`
    /// basics it shares with the jumpbox.
    pub fn new(
        args: &SshArgs,
        ssh: SshSettings,
        cluster: &str,
        namespace: &str,
    ) -> SshRouteSettings {
        // `--ssh-identity` / `--ssh-agent`, else the cluster's secret.
        let key = match (&args.ssh_identity, args.ssh_agent) {
            (Some(path), _) => SshKey::File(path.clone()),
            (None, true) => SshKey::Agent,
            (None, false) => SshKey::ClusterSecret,
        };
        SshRouteSettings {
            ssh: SshSettings {
                options: args.ssh_option.clone(),
                ..ssh
            },
            key,
            cluster: cluster.into(),
            namespace: namespace.into(),
        }
    }

    /// Writes the run's files (the cluster's key, unless another is given) and makes the
    /// session; it creates no object, only processes on this machine.
    pub async fn open<'a>(&'a self, env: Env<'a>) -> Result<Session<'a>> {
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
                    files
                        .write_key(&key)
                        .map_err(|e| Error::config_from("cannot write a temporary key file", e))?,
                )
            }
        };
        Ok(Session::Ssh(SshSession {
            settings: &s.ssh,
            identity,
            files,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_key_and_options_come_from_the_routes_flags() {
        let basics = SshSettings {
            user: DEFAULT_USER.into(),
            connect_timeout: Duration::from_secs(3),
            options: Vec::new(),
        };
        let of = |argv: &[&str]| {
            let args = crate::route::RouteArgs::parse(argv).ssh;
            SshRouteSettings::new(&args, basics.clone(), "tkc", "ns")
        };
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
