//! NSX Manager, past the Supervisor's edge (opt-in: `--nsx-manager`): the DFW's policies, rules,
//! groups and their effective members, the control-plane VMs' segment ports, and Traceflow
//! (`--nsx-traceflow`). Read-only but for the traceflows it creates and always deletes. What
//! was read is one value, [`raw::NsxRead`]; `analyse::dfw` judges it.

pub(crate) mod bound;
pub(crate) mod client;
pub(crate) mod enforce;
pub(crate) mod identify;
pub(crate) mod model;
pub(crate) mod raw;
pub(crate) mod read;
pub(crate) mod traceflow;

/// `--nsx-manager` and its flags, resolved once before any cluster is contacted (the
/// credentials and the CA read then).
#[derive(Debug, Clone)]
pub(crate) struct NsxConfig {
    pub options: client::Options,
    /// `--nsx-traceflow`.
    pub traceflow: bool,
    /// The report's note when the manager's certificate is not checked.
    pub note: Option<String>,
    /// The run's one login to the manager, shared by every cluster and `--watch` round (a
    /// clone of the config shares it).
    pub login: std::sync::Arc<client::Login>,
}
