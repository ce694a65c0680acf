//! Labels on everything this plugin creates, so `cleanup` (and an admin with kubectl) can find it.

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "kubectl-etcdnet";
pub const NAME: &str = "app.kubernetes.io/name";
pub const RUN_ID: &str = "etcdnet.kubectl.io/run-id";

/// Selects every object the plugin created.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_VALUE}")
}
