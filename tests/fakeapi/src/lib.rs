//! A fake Kubernetes API server for kubectl-etcdnet's tests.
//!
//! [`FakeApi`] serves a directory of YAML fixtures (a vSphere Supervisor's
//! CAPI Clusters, KubeadmControlPlanes, Machines, vm-operator VirtualMachines,
//! Secrets, ...) over plain HTTP on 127.0.0.1, answering as kube-apiserver does:
//! legacy discovery, get/list/watch with label and field selectors, create,
//! update, patch, delete, and `Status` errors (404, 403, 409) with the real
//! message forms. Every request is recorded so a test can assert what the
//! plugin did (and did not) ask for.
//!
//! [`Workload`] stands in for a workload cluster's endpoint: healthy, failing,
//! a black hole that never answers, or a refused port. It speaks HTTPS with a certificate of a
//! CA made per run ([`tls`]), which every fixture secret carries as CAPI writes it
//! (`certificate-authority-data: {{WORKLOAD_CA}}`, filled in by the fake). [`Workload::lab`] (or
//! [`FakeApi::execute_pods_in`]) attaches a lab of real control-plane nodes: pods pinned to its
//! nodes then really run there, reported as a kubelet reports them ([`kubelet`]);
//! [`FakeApi::execute_jumpbox_pods_in`] runs a Supervisor fake's node-less pods (the plugin's
//! jumpbox pods) in the lab's switch namespace with their secret volumes. Pod creates go
//! through Pod Security admission (namespace labels, upstream's messages), and images named in
//! `refusedImages` are never pulled.
//!
//! ```no_run
//! use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};
//! # fn main() -> anyhow::Result<()> {
//! let workload = Workload::ok();
//! let api = FakeApi::start_with(
//!     FakeConfig::from_dir("tests/fixtures/supervisor/healthy-v1alpha3")?.var("WORKLOAD_URL", workload.url()),
//! )?;
//! let dir = std::env::temp_dir();
//! api.write_kubeconfig(&dir.join("kubeconfig"), "ns-prod", Some("ns-prod"))?;
//! // ... run the plugin with KUBECONFIG=<that file> ...
//! assert!(api.requests().iter().all(|r| r.method == "GET"));
//! # Ok(()) }
//! ```
//!
//! Limits, on purpose: no conversion between versions (an object is served only
//! at the apiVersion its fixture is written in, so fixtures must be written at
//! the set's preferred version; another version answers 500 like a failing
//! conversion webhook); no admission but Pod Security's (and a webhook's denial a
//! test asks for: `FakeApi::deny_pods_by_webhook`), no defaulting or
//! validation beyond names and a pod's QoS class;
//! deletes are immediate (no finalizers, no garbage collection); no
//! authentication (any token is accepted) and authorization only through
//! `forbidden:` rules; strategic merge patch is treated as JSON merge patch.

mod config;
mod discovery;
pub mod generate;
mod handlers;
pub mod kubelet;
pub mod labplan;
mod logs;
mod patch;
mod pods;
mod podstatus;
mod psa;
mod resources;
mod router;
pub mod selectors;
mod server;
mod stamp;
mod status;
mod store;
mod table;
pub mod tls;
mod watch;
mod workload;

pub use config::{FakeConfig, Forbid, SetConfig, STAMP_LEAD};
pub use kubelet::{PodProcess, SecretVolume};
pub use pods::{PodScript, Rounds};
pub use server::{write_kubeconfig, Access, FakeApi, Request};
pub use workload::{EtcdSwitch, Workload};

/// The fixture root of this repository: `tests/fixtures`.
pub fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
}

/// A Supervisor fixture set by name: `tests/fixtures/supervisor/<set>`.
pub fn supervisor_set(set: &str) -> std::path::PathBuf {
    fixtures_dir().join("supervisor").join(set)
}

/// A workload-cluster fixture set by name: `tests/fixtures/workload/<set>`.
pub fn workload_set(set: &str) -> std::path::PathBuf {
    fixtures_dir().join("workload").join(set)
}

/// The placeholder of a cluster's own workload API URL in sets with one workload API per
/// cluster: `WORKLOAD_URL_<NAME>`, the name upper-cased with `-` and `.` as `_`
/// (`tkc-web` → `WORKLOAD_URL_TKC_WEB`). Its Cluster's controlPlaneEndpoint is
/// `{{WORKLOAD_HOST_<NAME>}}`/`{{WORKLOAD_PORT_<NAME>}}`, derived from it unless set.
pub fn workload_url_var(cluster: &str) -> String {
    let name: String = cluster
        .chars()
        .map(|c| match c {
            '-' | '.' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect();
    format!("WORKLOAD_URL_{name}")
}
