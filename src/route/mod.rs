//! The reach stage: how the probe gets onto each control-plane node.
//! - [`pod`]: a privileged pod pinned to each node, through the workload cluster's API;
//! - [`lifecycle`]: one pod's create → wait → log → delete, and the tracker that guarantees no
//!   pod is left behind.

pub mod jumpbox;
pub mod lifecycle;
pub mod pod;
pub mod ssh;
