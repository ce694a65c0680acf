//! Route `jumpbox`: from the Supervisor, when the workload cluster's API is down (the support
//! article's case). One short-lived pod per diagnosis (per cluster) in the vSphere Namespace
//! mounts the cluster's `<cluster>-ssh` secret read-only (mode 0444: no `fsGroup` is relied on,
//! see `spec.rs`) and SSHes from there to every control-plane VM at once (at most
//! `route::DEFAULT_PARALLEL`), as the node user, running the probe with sudo (`jumpbox.sh`). One
//! pod, not one per VM: a vSphere Pod is a small VM of its own, seconds to tens of seconds to
//! start and a share of the namespace's quota each. The key never leaves the pod's memory: the
//! script copies it from the secret volume into its in-memory /tmp at 0600 for ssh, and it is
//! in no env var, argument, pod spec field or output.
//!
//! The files: `spec.rs` (the pod), `session.rs` (its run, shared by every VM), `keeper.rs`
//! (`--watch`'s pod kept across rounds, the cluster's or the namespace's, running the script's
//! rounds itself), `shared.rs` (`-A`'s and `--all`'s one pod for the clusters of a vSphere
//! Namespace, each VM offered only its own cluster's key, its run shared by the clusters that
//! wait for it), `framing.rs`
//! (the pod's log, one section per VM framed with a nonce of the run that the nodes never see:
//! [`frame`], [`split_log`]; each section read as one VM's [`Reached`](super::Reached):
//! [`read_log`]). The session runs the pod on the first node the driver asks for and hands every
//! node its own section, so the driver ([`super::probe_all`]) stays the one place that fans out.
//! What this route shares with the ssh route (the ssh command line, ssh's failures, the key's
//! secret) it takes from [`super::ssh`], which imports nothing from here.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use super::lifecycle::{Host, PodApi};
use super::ssh::SshSettings;
use super::{Address, Env, PodBasics, Session, Target};
use crate::probe::{ReachError, ReachErrorKind};

mod framing;
mod keeper;
mod session;
mod shared;
mod spec;
#[cfg(test)]
pub(crate) use crate::probe::{PortReach, PortState};
pub use framing::frame;
pub use framing::{read_log, split_log};
pub(crate) use keeper::JumpboxKeeper;
pub(crate) use session::JumpboxSession;
pub(crate) use shared::{groups, NamespaceJumpbox};
pub use spec::{jumpbox_pod, KEY_DIR};
#[cfg(test)]
pub(crate) use spec::{
    keyed_pod, log_limit, namespace_pod_name, ARGV_KEYS, KEY_MODE, NODE_OUTPUT_CAP,
};
pub(crate) use spec::{new_nonce, DRY_RUN_NONCE};
pub use spec::{ARGV_KEY_OF_VMS, ARGV_NONCE, ARGV_VMS, DEFAULT_IMAGE};

#[derive(Debug, Clone)]
pub struct JumpboxSettings {
    /// The vSphere Namespace (where the secret is).
    pub namespace: String,
    pub cluster: String,
    pub image: String,
    pub basics: PodBasics,
    pub ssh: SshSettings,
    /// `--watch`: the jumpbox kept across rounds ([`JumpboxKeeper`]; with `shared`, the
    /// namespace's); None: one pod per diagnosis, deleted at its end.
    pub keeper: Option<std::sync::Arc<JumpboxKeeper>>,
    /// `-A`, `--all`: the vSphere Namespace's one jumpbox and this cluster's number in it
    /// (its key's); None: the cluster's own pod.
    pub shared: Option<(std::sync::Arc<NamespaceJumpbox>, usize)>,
    /// The run's ` --context=… --kubeconfig=…` (`command::Kubectl::flags`): a refused pod's
    /// `kubectl auth can-i` asks the Supervisor the run asked (empty: none).
    pub kubectl_flags: String,
}

/// The targets the pod reaches, in its sections' order: those with an address.
fn addressed(targets: &[Target]) -> impl Iterator<Item = (&Target, &Address)> {
    targets
        .iter()
        .filter_map(|t| t.address.as_ref().map(|a| (t, a)))
}

/// `--via jumpbox`'s help line.
pub(crate) const HELP: &str =
    "One pod in the vSphere Namespace that SSHes to every VM with the <cluster>-ssh key";

/// The jumpbox route's flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct JumpboxArgs {
    /// Image of the jumpbox pods (needs an ssh client and sh)
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE, help_heading = "Route: jumpbox")]
    pub jumpbox_image: String,
}

impl JumpboxSettings {
    /// One pod for every VM with an address (none when no VM has one).
    pub(crate) fn would_create(&self, targets: &[Target]) -> Vec<Pod> {
        let vms: Vec<&Address> = addressed(targets).map(|(_, a)| a).collect();
        if vms.is_empty() {
            return Vec::new();
        }
        if let Some((shared, n)) = &self.shared {
            // The namespace's one pod, shown once: with its first cluster.
            return if *n == 0 {
                vec![shared.would_create()]
            } else {
                Vec::new()
            };
        }
        vec![jumpbox_pod(&vms, DRY_RUN_NONCE, self)]
    }

    /// The session of the one pod for `targets`' VMs; it needs no I/O before the first node.
    pub(crate) fn open<'a>(&'a self, env: Env<'a>, targets: &'a [Target]) -> Session<'a> {
        let Some(nonce) = new_nonce() else {
            return Session::Unavailable(ReachError {
                kind: ReachErrorKind::Other,
                message: "the system gave no random bytes for the jumpbox's log framing, so no jumpbox pod was made; try again, or use --via ssh".into(),
            });
        };
        Session::Jumpbox(JumpboxSession::new(
            PodApi::new(
                Api::namespaced(env.supervisor.clone(), &self.namespace),
                Host::Supervisor,
            ),
            self,
            addressed(targets).collect(),
            nonce,
        ))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod script_tests;

#[cfg(test)]
mod shared_tests;
