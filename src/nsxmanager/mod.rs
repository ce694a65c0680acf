//! NSX Manager, past the Supervisor's edge (opt-in: `--nsx-manager`): the DFW's policies, rules,
//! groups and their effective members, the control-plane VMs' segment ports, and Traceflow
//! (`--nsx-traceflow`). Read-only but for the traceflows it creates and always deletes. What
//! was read is one value, [`raw::NsxRead`]; `analyse::dfw` judges it.

pub mod client;
pub mod model;
pub mod raw;
pub mod read;
pub mod traceflow;
