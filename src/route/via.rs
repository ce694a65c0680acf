//! `--via`: a route of [`ROUTES`](super::ROUTES), or `auto`, resolved per cluster from its
//! workload API check.

use super::jumpbox::JumpboxRoute;
use super::pod::PodRoute;
use super::Route;
use crate::workload::WorkloadApi;

/// `--via`'s help line for `auto`.
pub const AUTO_HELP: &str = "pod when the workload API answers, else jumpbox";

/// `--via`: a route, or `auto` (pod when the workload API answers, else jumpbox).
#[derive(Debug, Clone, Copy)]
pub enum Via {
    Auto,
    Route(&'static dyn Route),
}

impl Via {
    /// The route to take for a cluster whose workload API is `api`, and why, as the report
    /// says it.
    pub fn resolve(self, api: &WorkloadApi) -> (&'static dyn Route, String) {
        match self {
            Via::Auto => auto(api),
            Via::Route(r) => (r, format!("--via {}", r.name())),
        }
    }
}

/// `auto`: the pod route while the workload API answers, else the jumpbox (through the
/// Supervisor), and why.
pub fn auto(api: &WorkloadApi) -> (&'static dyn Route, String) {
    if api.is_reachable() {
        (&PodRoute, "auto: the workload API answers".into())
    } else {
        (
            &JumpboxRoute,
            format!(
                "auto: the workload API does not answer ({}), so through the Supervisor",
                api.state
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::api;
    use crate::workload::ApiState;

    #[test]
    fn auto_is_resolved_from_the_workload_api() {
        let up = api(ApiState::Reachable);
        let down = api(ApiState::Timeout);
        let (route, reason) = Via::Auto.resolve(&up);
        assert_eq!(route.name(), "pod");
        assert_eq!(reason, "auto: the workload API answers");
        let (route, reason) = Via::Auto.resolve(&down);
        assert_eq!(route.name(), "jumpbox");
        assert!(reason.contains("(Timeout)"), "{reason}");
        let ssh = crate::route::by_name("ssh").unwrap();
        let (route, reason) = Via::Route(ssh).resolve(&up);
        assert_eq!((route.name(), reason.as_str()), ("ssh", "--via ssh"));
    }
}
