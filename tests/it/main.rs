//! The integration tests: one binary, a module per concern (as ripgrep's `tests/tests.rs`), so
//! kube, tokio and rustls are linked once and the tests that mostly wait run side by side.
//! tests/README.md is the index: which module tests what, how to run one, what needs root.
//!
//! Every test that needs the lab (root: network namespaces, nftables, real etcd and sshd) is
//! under [`lab`]; `cargo test --test it -- --skip lab::` runs the rest.

mod common;

mod architecture;
mod cli;
mod completion;
mod docs;
mod krew_manifest;
mod render;
mod schema;
mod test_index;
mod version;

mod etcdlog;
mod probe_script;

mod cleanup;
mod cleanup_running;
mod json_contract;
mod network;
mod network_policy;
mod nsx_manager;
mod rbac;
mod remediation_guard;
mod status;

mod all_clusters;
mod bundle;
mod case_report;
mod diagnose_jumpbox;
mod diagnose_pod;
mod many_clusters;
mod ssh_hardening;
mod watch;

mod bounded_requests;
mod bounded_work;
mod hostile_commands;
mod hostile_identity;
mod hostile_kubeconfig;
mod hostile_members;
mod hostile_render;
mod hostile_targets;
mod images;
mod long_names;
mod signals;
mod slow_pods;

// The namespace editor's and the node's attacks on the NSX reading and the member
// lists (a group of their own: rustfmt orders `mod` lines within a group).
mod hostile_member_bundle;
mod hostile_nsx;

mod lab;
