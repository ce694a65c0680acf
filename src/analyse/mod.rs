//! The analyse stage: pure rules over collected facts, no I/O.
//! - [`clock`]: whose clock is "now" (the Supervisor read's, each node's own, the median);
//! - [`status`]: what the Supervisor side shows (`kubectl etcdnet status`);
//! - [`matrix`]: the node-to-node 2379/2380 matrices from every node's probe;
//! - [`metrics`]: etcd's own metrics per node, as evidence beside the probe's;
//! - [`verdict`]: one verdict for the whole control plane, with evidence and next steps;
//! - [`policy`]: NSX SecurityPolicies evaluated against the control-plane VMs on 2379/2380;
//! - [`dfw`]: NSX Manager's distributed firewall (every category) evaluated the same way;
//! - [`traceflow`]: a traceflow's observations held against that evaluation of its path;
//! - [`network`]: the cluster's network as the reports carry it (`networkPolicy`), joined to
//!   the findings and the verdict;
//! - [`realization`]: what the network objects say NSX failed to realize;
//! - [`location`]: where the failing paths' packets die, from the nodes' own firewalls;
//! - [`manager`]: NSX Manager's view (`--nsx-manager`) joined to a diagnosis;
//! - [`guard`]: the remediation guard: what could replace control-plane Machines during a
//!   network cut, and the commands that pause and unpause the Cluster.

pub(crate) mod clock;
pub(crate) mod dfw;
pub(crate) mod firewall;
pub(crate) mod guard;
pub mod location;
pub(crate) mod manager;
pub mod matrix;
pub(crate) mod metrics;
pub(crate) mod network;
pub mod policy;
pub(crate) mod realization;
pub(crate) mod status;
pub mod timeline;
pub(crate) mod traceflow;
pub mod verdict;

pub(crate) use network::{assess, NetworkAssessment};
pub(crate) use status::FindingCode;
#[cfg(test)]
pub(crate) use status::Severity;
pub(crate) use status::{network_findings, status_findings, Finding};

/// `skip_serializing_if` for a count the json leaves out when zero: the one such predicate of the
/// contract (analyse's types and report's both use it; analyse is below report).
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}
