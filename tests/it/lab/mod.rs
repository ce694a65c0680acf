//! The tests that need the lab (tests/lab: network namespaces running real etcd and sshd,
//! nftables faults), and only as root. Each test carries the gate
//! `#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]` and starts
//! with `etcdnet_lab::require` (or a helper that calls it): built as anyone but root they are
//! counted as ignored, never as passed; as root they run, and fail naming what is missing.
//!
//! Every lab names its namespaces, addresses and files after its own id (`en<pid>-<n>`), so the
//! lab tests run side by side like the others.
//!
//! Run them alone with `cargo test --test it lab::`; skip them with `-- --skip lab::`.

mod all_clusters;
mod apiserver_vip;
mod bundle;
mod diagnose_jumpbox;
mod diagnose_pod;
mod jumpbox_script;
mod many_clusters;
mod network_policy;
mod nsx_manager;
mod past_members;
mod past_network;
mod probe;
mod probe_netns;
mod smoke;
mod ssh;
mod ssh_hardening;
mod watch;
mod where_and_when;

/// The address of lab node `node` (the lab names its own addresses after its id).
fn ip(lab: &etcdnet_lab::Lab, node: &str) -> String {
    lab.node(node).unwrap().ip.to_string()
}

/// Waits (at most 60 s) until etcd on each of `nodes` has noticed a cut: its own `/health`
/// says false, as etcd 3.4 and 3.5 answer without a leader (etcdhttp's `checkHealth`: "RAFT NO
/// LEADER"). One curl a node every 100 ms, where a test used to run whole diagnoses every 2 s
/// until the verdict showed, only to start its own run (a `--watch`, an `--all`) once etcd had
/// noticed: the lab's own cheap sign instead (issue 39, item 5). The fault's every node when
/// `nodes` is empty.
fn wait_no_leader(lab: &etcdnet_lab::Lab, nodes: &[&str]) {
    let all: Vec<&str> = lab.nodes().iter().map(|n| n.name.as_str()).collect();
    let nodes = if nodes.is_empty() { &all[..] } else { nodes };
    crate::common::wait_for(
        &format!("etcd without a leader on {nodes:?}"),
        std::time::Duration::from_secs(60),
        || nodes.iter().all(|n| lab.health(n).is_ok_and(|h| !h)),
    );
}
