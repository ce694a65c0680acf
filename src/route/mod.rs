//! The reach stage: how the probe gets onto each control-plane node.
//! - [`pod`]: a privileged pod pinned to each node, through the workload cluster's API;
//! - [`lifecycle`]: one pod's create → wait → log → delete, and the tracker that guarantees no
//!   pod is left behind.

pub mod jumpbox;
pub mod lifecycle;
pub mod pod;
pub mod ssh;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// `<prefix><node>-<run>`, cut to stay a valid DNS label (63 characters).
pub fn pod_name(prefix: &str, node: &str, run_id: &str) -> String {
    let room = 63 - prefix.len() - 1 - run_id.len();
    let node: String = node.chars().take(room).collect();
    format!("{prefix}{}-{run_id}", node.trim_end_matches('-'))
}

/// Small requests (the probe waits on the network, not the CPU) and a modest limit.
pub fn small_resources(memory_limit: &str) -> ResourceRequirements {
    let quantities = |cpu: &str, mem: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(mem.into())),
        ])
    };
    ResourceRequirements {
        requests: Some(quantities("10m", "32Mi")),
        limits: Some(quantities("500m", memory_limit)),
        ..Default::default()
    }
}
