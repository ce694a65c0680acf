//! Commands that run "on a node": in its network namespace, as root, with its hostname and its
//! filesystem view (see `sh/view.sh`).
//!
//! Technique: `ip netns exec <netns> unshare --mount --uts --propagation private -- sh view.sh`.
//! In that private mount namespace the script mounts a tmpfs scratch space, recursively binds
//! the host's / to a new root, lays copy-on-write overlays over /etc and /var (so
//! /etc/kubernetes and /var/lib/etcd can appear without writing to the host's /etc or /var), binds
//! the node's directories onto them, overlays the stand-ins onto /usr/local/bin, and `chroot`s.
//! Everything vanishes with the namespace when the command exits; the host never sees a mount.

use std::ffi::OsStr;
use std::process::Command;

use crate::Node;

const VIEW_SH: &str = include_str!("sh/view.sh");

/// Where the command's `/` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `/` is the node.
    Node,
    /// `/` is the host, `/host` is the node (a privileged pod with hostPath `/` at `/host`).
    Pod,
    /// As [`Mode::Pod`], `/host` mounted read-only as a runtime mounts a `readOnly` volume:
    /// the top mount only, the mounts under it (the node's /etc, /var, /dev/shm) as they were.
    PodHostReadOnly,
}

pub(crate) fn command<S: AsRef<OsStr>>(node: &Node, mode: Mode, argv: &[S]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &node.netns])
        .args([
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "--",
        ])
        .args(["/bin/sh", "-c", VIEW_SH, "etcdnet-view"])
        .arg(&node.root)
        .arg(&node.name)
        .arg(node.ip.to_string())
        .arg(match mode {
            Mode::Node => "node",
            Mode::Pod => "pod",
            Mode::PodHostReadOnly => "pod-ro",
        })
        .args(argv);
    // Its own session and so its own process group (a timeout kills the command and everything
    // it started), at the machines' priority.
    crate::exec::as_machine(&mut c);
    c
}
