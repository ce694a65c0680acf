//! Labels on everything this plugin creates, so `cleanup` (and an admin with kubectl) can find it.

pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub(crate) const MANAGED_BY_VALUE: &str = "kubectl-etcdnet";
pub(crate) const NAME: &str = "app.kubernetes.io/name";
pub(crate) const RUN_ID: &str = "etcdnet.kubectl.io/run-id";

/// Selects every object the plugin created.
pub(crate) fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_VALUE}")
}
