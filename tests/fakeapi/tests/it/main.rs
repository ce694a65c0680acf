//! The fake API server's own tests: one binary, a module per concern (as the plugin's
//! tests/it), so kube and tokio are linked once. The tests that need the lab (root) are under
//! [`lab`].

mod common;

mod api;
mod kubectl;
mod many_clusters_binary;
mod sets;
mod workload;

mod lab;
