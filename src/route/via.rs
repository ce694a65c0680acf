//! `--via auto`, resolved per cluster from its workload API check.

use super::Route;
use crate::workload::WorkloadApi;

/// `--via`'s help line for `auto`.
pub const AUTO_HELP: &str = "pod when the workload API answers, else jumpbox";

/// `auto`: the pod route while the workload API answers, else the jumpbox (through the
/// Supervisor), and why.
pub fn auto(api: &WorkloadApi) -> (Route, String) {
    if api.is_reachable() {
        (Route::Pod, "auto: the workload API answers".into())
    } else {
        (
            Route::Jumpbox,
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
    use crate::route::Via;
    use crate::testing::api;
    use crate::workload::ApiState;
    use clap::ValueEnum;

    #[test]
    fn auto_is_resolved_from_the_workload_api() {
        let up = api(ApiState::Reachable);
        let down = api(ApiState::Timeout);
        let (route, reason) = Via::Auto.resolve(&up);
        assert_eq!(route, Route::Pod);
        assert_eq!(reason, "auto: the workload API answers");
        let (route, reason) = Via::Auto.resolve(&down);
        assert_eq!(route, Route::Jumpbox);
        assert!(reason.contains("(Timeout)"), "{reason}");
        let (route, reason) = Via::Ssh.resolve(&up);
        assert_eq!((route.name(), reason.as_str()), ("ssh", "--via ssh"));
    }

    /// What `--via` takes for a route is the name its reports give it.
    #[test]
    fn every_route_is_named_as_via_takes_it() {
        let up = api(ApiState::Reachable);
        for v in Via::value_variants().iter().filter(|v| **v != Via::Auto) {
            let (route, reason) = v.resolve(&up);
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(route.name(), name);
            assert_eq!(reason, format!("--via {name}"));
        }
    }
}
