//! `--via auto`, resolved per cluster from its workload API check and the Supervisor's
//! networking stack, before anything is created.
//!
//! - The workload API answers: the pod route.
//! - It does not, on NSX or VPC (or a stack discovery does not name): the jumpbox, a vSphere
//!   Pod in the vSphere Namespace.
//! - It does not, on a VDS Supervisor: vSphere Pods cannot run there ("you cannot deploy
//!   vSphere Pods for generic use on a Supervisor configured with VDS", vSphere 8
//!   documentation, vSphere IaaS control plane concepts, Supervisor networking), so a jumpbox
//!   would wait out `--timeout` and end `NodesUnreachable`. Direct ssh instead, when a VM
//!   greets as an SSH server on TCP 22 from here ([`check_ssh_port`], bounded, every VM at once);
//!   else one error naming what each route needs ([`NoRoute`]).

use std::net::IpAddr;
use std::time::Duration;

use super::Route;
use crate::supervisor::{NetworkStack, StackFact};
use crate::workload::WorkloadApi;

/// `--via`'s help line for `auto`.
pub(crate) const AUTO_HELP: &str = "pod when the workload API answers, else jumpbox (NSX, VPC), or ssh on a VDS Supervisor when the VMs answer on TCP 22";

/// The longest `auto` waits for a VM's TCP 22 on a VDS Supervisor (all VMs at once): a VM on a
/// routed network answers a SYN within milliseconds; 2 s covers a slow path without making an
/// admin wait for a route that is not there. The ssh route's port checks wait as long.
pub(crate) const SSH_PORT_CHECK: Duration = super::ssh::ports::PORT_CHECK;

/// Which VMs answered on TCP 22 from this machine, and why the others did not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SshPortCheck {
    pub answered: Vec<IpAddr>,
    /// Each VM that did not, with why (`timed out after 2s`, `connection refused`).
    pub silent: Vec<(IpAddr, String)>,
}

/// Whether `auto` needs [`check_ssh_port`] before it can choose: the workload API dark on a VDS
/// Supervisor.
pub(crate) fn needs_ssh_check(via: super::Via, api: &WorkloadApi, stack: &StackFact) -> bool {
    via == super::Via::Auto && !api.is_reachable() && stack.stack == NetworkStack::Vds
}

/// The most read of a server's greeting before its SSH identification line: RFC 4253 4.2 lets
/// a server send other lines first; the identification itself is at most 255 characters.
const GREETING_LIMIT: usize = 1024;

/// Port 22 of every address at once, each bounded by `timeout` (connect and greeting): a VM
/// answers when an SSH server greets with its identification line (`SSH-2.0-…`, RFC 4253 4.2:
/// the server sends it on connect). A bare accepted connection is not enough: a transparent
/// proxy or a port forwarder accepts every connect and greets with nothing. Nothing is sent;
/// the connection is closed after the greeting.
pub(crate) async fn check_ssh_port(ips: &[IpAddr], timeout: Duration) -> SshPortCheck {
    let tries = ips.iter().map(|&ip| async move {
        let result = match tokio::time::timeout(timeout, greeting(ip)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no SSH greeting within {}s", timeout.as_secs_f32())),
        };
        (ip, result)
    });
    let mut check = SshPortCheck::default();
    for (ip, result) in futures::future::join_all(tries).await {
        match result {
            Ok(()) => check.answered.push(ip),
            Err(why) => check.silent.push((ip, why)),
        }
    }
    check
}

/// Connects to `ip`:22 and reads until a line starts with `SSH-` (bounded by
/// [`GREETING_LIMIT`]).
async fn greeting(ip: IpAddr) -> Result<(), String> {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect((ip, 22))
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while seen.len() < GREETING_LIMIT {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed without an SSH greeting".into());
        }
        seen.extend_from_slice(&buf[..n]);
        if seen.starts_with(b"SSH-") || seen.windows(5).any(|w| w == b"\nSSH-") {
            return Ok(());
        }
    }
    Err("no SSH greeting".into())
}

/// `auto` found no route: the one line that says why and what each route needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoRoute(pub String);

/// `auto`: the route for a cluster whose workload API is `api`, on a Supervisor whose stack is
/// `stack`; `ssh` is the TCP 22 check, made when [`needs_ssh_check`] says so. The reason names
/// the stack.
pub(crate) fn auto(
    api: &WorkloadApi,
    stack: &StackFact,
    ssh: Option<&SshPortCheck>,
) -> Result<(Route, String), NoRoute> {
    if api.is_reachable() {
        return Ok((Route::Pod, "auto: the workload API answers".into()));
    }
    // In words, each thing once: `the workload API does not answer within 2s`.
    let dark = format!("the workload API {}", api.said());
    match stack.stack {
        NetworkStack::Nsx | NetworkStack::Vpc => Ok((
            Route::Jumpbox,
            format!(
                "auto: {dark}, so through the Supervisor: a jumpbox vSphere Pod, which the {} networking stack runs",
                stack.stack.title()
            ),
        )),
        NetworkStack::Unknown => Ok((
            Route::Jumpbox,
            format!(
                "auto: {dark}, so through the Supervisor (a jumpbox vSphere Pod; the networking stack is unknown: {})",
                stack.evidence
            ),
        )),
        NetworkStack::Vds => {
            let vds = format!(
                "the networking stack is VDS ({}), where vSphere Pods (the jumpbox) cannot run",
                stack.evidence
            );
            let check = ssh.cloned().unwrap_or_default();
            let all = check.answered.len() + check.silent.len();
            if !check.answered.is_empty() || all == 0 {
                return Ok((
                    Route::Ssh,
                    format!(
                        "auto: {dark} and {vds}, so direct ssh: {} of {all} VMs answer on TCP 22 from here",
                        check.answered.len()
                    ),
                ));
            }
            let silent: Vec<String> = check
                .silent
                .iter()
                .map(|(ip, why)| format!("{ip} {why}"))
                .collect();
            Err(NoRoute(format!(
                "no route reaches the control-plane VMs: {dark}; {vds}; and no VM answers on TCP 22 from here ({}). \
                 The pod route needs the workload API reachable from here (then --via pod); \
                 the ssh route needs TCP 22 to the VMs (run from a host on the VMs' network, then --via ssh)",
                silent.join(", ")
            )))
        }
    }
}

/// An explicit `--via pod` while the workload API does not answer: the probe pods are created
/// through that API, so the route cannot work (`plan` checks). Said as one line before anything
/// is created,
/// with the routes that can (the jumpbox where vSphere Pods run, else direct ssh), instead of
/// a report whose every node repeats the same reason.
pub(crate) fn pod_without_api(api: &WorkloadApi, stack: &StackFact) -> NoRoute {
    let instead = if stack.stack.runs_vsphere_pods() {
        "use --via jumpbox (a vSphere Pod in the Supervisor reaches the VMs), or leave out --via (auto takes the jumpbox)"
    } else {
        "use --via ssh (TCP 22 to the VMs from this machine; VDS networking runs no vSphere Pod, so no jumpbox), or leave out --via (auto checks TCP 22 first)"
    };
    NoRoute(format!(
        "--via pod needs the workload API, and it {}, so no probe pod can be created on the nodes; {instead}",
        api.said()
    ))
}

/// An explicit `--via jumpbox` on a VDS Supervisor is done as asked (an admin who names the
/// route may know better, e.g. a Supervisor that gained vSphere Pods), with this warning in the
/// route's reason; the pod's refusal or `FailedScheduling` then ends the run within seconds
/// with its remedy.
pub(crate) fn named_reason(route: Route, stack: &StackFact) -> String {
    let named = format!("--via {}", route.name());
    if route == Route::Jumpbox && !stack.stack.runs_vsphere_pods() {
        format!(
            "{named} (warning: the networking stack is VDS ({}), where vSphere Pods cannot run: the jumpbox is not expected to start; --via ssh reaches the VMs from this machine)",
            stack.evidence
        )
    } else {
        named
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Via;
    use crate::testing::api;
    use crate::workload::ApiState;
    use clap::ValueEnum;

    fn stack(stack: NetworkStack) -> StackFact {
        StackFact {
            stack,
            evidence: format!("serves {stack}'s groups"),
        }
    }

    #[test]
    fn auto_is_resolved_from_the_workload_api() {
        let up = api(ApiState::Reachable);
        let down = api(ApiState::Timeout);
        let unknown = StackFact::default();
        let (route, reason) = Via::Auto.resolve(&up, &unknown, None).unwrap();
        assert_eq!(route, Route::Pod);
        assert_eq!(reason, "auto: the workload API answers");
        let (route, reason) = Via::Auto.resolve(&down, &unknown, None).unwrap();
        assert_eq!(route, Route::Jumpbox);
        // In words, not the JSON's code.
        assert!(reason.contains("does not answer (d)"), "{reason}");
        assert!(!reason.contains("Timeout"), "{reason}");
        assert!(reason.contains("networking stack is unknown"), "{reason}");
        let (route, reason) = Via::Ssh.resolve(&up, &unknown, None).unwrap();
        assert_eq!((route.name(), reason.as_str()), ("ssh", "--via ssh"));
    }

    /// The workload API dark: NSX and VPC take the jumpbox; VDS takes ssh when a VM answers on
    /// 22, else fails in one line naming what the pod and ssh routes need.
    #[test]
    fn with_the_api_dark_the_stack_decides() {
        let down = api(ApiState::Refused);
        for s in [NetworkStack::Nsx, NetworkStack::Vpc] {
            let (route, reason) = auto(&down, &stack(s), None).unwrap();
            assert_eq!(route, Route::Jumpbox);
            assert!(reason.contains(s.title()), "{reason}");
        }
        let vds = stack(NetworkStack::Vds);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(needs_ssh_check(Via::Auto, &down, &vds));
        assert!(!needs_ssh_check(Via::Jumpbox, &down, &vds));
        assert!(!needs_ssh_check(
            Via::Auto,
            &down,
            &stack(NetworkStack::Nsx)
        ));
        assert!(!needs_ssh_check(Via::Auto, &api(ApiState::Reachable), &vds));
        let some = SshPortCheck {
            answered: vec![ip("198.18.0.11"), ip("198.18.0.12")],
            silent: vec![(ip("198.18.0.13"), "timed out after 2s".into())],
        };
        let (route, reason) = auto(&down, &vds, Some(&some)).unwrap();
        assert_eq!(route, Route::Ssh);
        assert!(
            reason.contains("VDS") && reason.contains("2 of 3 VMs answer on TCP 22"),
            "{reason}"
        );
        let none = SshPortCheck {
            answered: vec![],
            silent: vec![
                (ip("198.18.0.11"), "timed out after 2s".into()),
                (
                    ip("198.18.0.12"),
                    "Connection refused (os error 111)".into(),
                ),
            ],
        };
        let NoRoute(line) = auto(&down, &vds, Some(&none)).unwrap_err();
        assert!(!line.contains('\n'), "{line}");
        for needed in [
            "--via pod",
            "--via ssh",
            "TCP 22",
            "workload API",
            "VDS",
            "198.18.0.12 Connection refused",
        ] {
            assert!(line.contains(needed), "{needed}: {line}");
        }
        // The workload API answering: the pod route on every stack, no check needed.
        let (route, _) = auto(&api(ApiState::Reachable), &vds, None).unwrap();
        assert_eq!(route, Route::Pod);
    }

    #[test]
    fn a_named_jumpbox_on_vds_is_run_with_a_warning() {
        let r = named_reason(Route::Jumpbox, &stack(NetworkStack::Vds));
        assert!(
            r.starts_with("--via jumpbox (warning:") && r.contains("--via ssh"),
            "{r}"
        );
        assert_eq!(
            named_reason(Route::Jumpbox, &stack(NetworkStack::Nsx)),
            "--via jumpbox"
        );
        assert_eq!(
            named_reason(Route::Ssh, &stack(NetworkStack::Vds)),
            "--via ssh"
        );
    }

    /// `--via pod` with the workload API dark: one line naming the route that can work on
    /// this stack (the jumpbox where vSphere Pods run, else ssh).
    #[test]
    fn a_named_pod_route_without_the_api_is_one_error_line() {
        for (s, instead, not) in [
            (NetworkStack::Nsx, "--via jumpbox", "--via ssh"),
            (NetworkStack::Unknown, "--via jumpbox", "--via ssh"),
            (NetworkStack::Vds, "--via ssh", "--via jumpbox"),
        ] {
            let NoRoute(line) = pod_without_api(&api(ApiState::Timeout), &stack(s));
            assert!(!line.contains('\n'), "{line}");
            assert!(
                line.starts_with(
                    "--via pod needs the workload API, and it does not answer (d), so"
                ),
                "{line}"
            );
            assert!(line.contains(instead) && !line.contains(not), "{s}: {line}");
            assert!(line.contains("leave out --via"), "{line}");
        }
    }

    /// Port 22 on loopback, whatever this host runs there: counted once, within the bound. The
    /// greeting itself is checked where a server can be placed on port 22 (the lab:
    /// `lab::diagnose_jumpbox`); an accepted connection that greets with nothing is silent.
    #[tokio::test]
    async fn the_port_check_is_bounded_and_counts_each_address_once() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let started = std::time::Instant::now();
        let check = check_ssh_port(&[lo, lo], Duration::from_secs(1)).await;
        // Within the bound, not an unbounded wait on a silent listener: wide slack over the
        // 1 s, as a loaded machine stretches wall time (CI, load 15-78).
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(check.answered.len() + check.silent.len(), 2, "{check:?}");
    }

    /// What `--via` takes for a route is the name its reports give it.
    #[test]
    fn every_route_is_named_as_via_takes_it() {
        let up = api(ApiState::Reachable);
        for v in Via::value_variants().iter().filter(|v| **v != Via::Auto) {
            let (route, reason) = v.resolve(&up, &StackFact::default(), None).unwrap();
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(route.name(), name);
            assert_eq!(reason, format!("--via {name}"));
        }
    }
}
