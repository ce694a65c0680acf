//! Resolve once. A [`DiagnosePlan`] is made from the command's options, the cluster's facts
//! and the workload API check, the way ripgrep turns its flags into settings once: the route
//! chosen (no `auto` left: [`Via::resolve`]) and why, configured with its settings, and one
//! [`Target`] per control-plane node with what its probe is told. Nothing after it sees the
//! command line.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::probe::script::ProbeArgs;
use crate::report::RouteInfo;
use crate::route::jumpbox::JumpboxSettings;
use crate::route::pod::PodSettings;
use crate::route::ssh::{SshRouteSettings, SshSettings};
use crate::route::via::{NoRoute, SshPortCheck};
use crate::route::{Address, PodBasics, Route, RouteArgs, RouteSettings, Target, Via};
use crate::supervisor::{ClusterFacts, ControlPlaneNode};
use crate::workload::WorkloadApi;

/// What `diagnose` was asked to do, as plain values (made from the command line by `cli`), the
/// same for every cluster it diagnoses.
#[derive(Debug, Clone)]
pub(crate) struct DiagnoseConfig {
    /// `--via` and the routes' flags, typed.
    pub reach: RouteArgs,
    pub connect_timeout: Duration,
    /// Bound of the whole run; pods get it as activeDeadlineSeconds.
    pub timeout: Duration,
    pub log_lines: u32,
    /// The log window: lines older than this before each node's probe time are history.
    pub since: Duration,
    pub keep_pods: bool,
    pub dry_run: bool,
    pub api_timeout: Duration,
    /// How the workload API's certificate is checked (`--workload-insecure-skip-tls-verify`).
    pub workload_tls: crate::workload::Tls,
    /// How many nodes are probed at once.
    pub parallel: usize,
    /// `--nsx-manager`: NSX Manager read too (None: never contacted, every output as without).
    pub nsx: Option<crate::nsxmanager::NsxConfig>,
    /// `--watch`: the jumpboxes kept across its rounds (None: one per diagnosis).
    pub jumpbox_keeper: Option<std::sync::Arc<crate::route::jumpbox::JumpboxKeeper>>,
}

/// One diagnosis, resolved.
#[derive(Debug)]
pub(crate) struct DiagnosePlan {
    /// The chosen route, configured for this cluster.
    pub route: RouteSettings,
    /// The route's name and why it was chosen, as the report says it.
    pub route_info: RouteInfo,
    pub targets: Vec<Target>,
    pub timeout: Duration,
    pub parallel: usize,
    pub keep_pods: bool,
    pub dry_run: bool,
}

/// The plan for the cluster of `facts` (its name and vSphere Namespace are theirs), whose
/// workload API is `api`; `run_id` is shared by all of the run's pods.
///
/// `ssh` is the TCP 22 check `--via auto` needs on a VDS Supervisor (made by the caller when
/// [`crate::route::via::needs_ssh_check`] says so; [`ssh_check_addresses`] are the VMs to
/// check). Err ([`Error::NoRoute`]): no route can reach the nodes, or `--via pod` was asked
/// while the workload API does not answer; said before anything is created.
pub(crate) fn plan(
    opts: &DiagnoseConfig,
    facts: &ClusterFacts,
    api: &WorkloadApi,
    ssh: Option<&SshPortCheck>,
    run_id: String,
) -> Result<DiagnosePlan> {
    let stack = &facts.apis.network_stack;
    let no_route = |NoRoute(why)| Error::NoRoute(format!("cluster {}: {why}", facts.cluster.name));
    // `--via pod` with the workload API dark cannot create a pod: one line now, not a report
    // whose every node says so. A dry run still shows the pods (nothing is created, and the
    // preview is what a review before an incident reads).
    if opts.reach.via == Via::Pod && !api.is_reachable() && !opts.dry_run {
        return Err(no_route(crate::route::via::pod_without_api(api, stack)));
    }
    let (route, reason) = opts.reach.via.resolve(api, stack, ssh).map_err(no_route)?;
    let (cluster, namespace) = (&facts.cluster.name, &facts.namespace);
    let reach = &opts.reach;
    let basics = || PodBasics {
        run_id: run_id.clone(),
        deadline: opts.timeout,
        image_pull_secret: reach.pod.image_pull_secret.clone(),
    };
    let ssh = || SshSettings {
        user: reach.ssh_user.clone(),
        connect_timeout: opts.connect_timeout,
        options: Vec::new(),
    };
    let settings = match route {
        Route::Pod => RouteSettings::Pod(PodSettings::new(
            &reach.pod,
            basics(),
            opts.api_timeout,
            opts.timeout,
        )),
        Route::Jumpbox => RouteSettings::Jumpbox(JumpboxSettings {
            namespace: namespace.clone(),
            cluster: cluster.clone(),
            image: reach.jumpbox.jumpbox_image.clone(),
            basics: basics(),
            ssh: ssh(),
            keeper: opts.jumpbox_keeper.clone(),
            shared: None,
            // The connection's, set by the caller that has it.
            kubectl_flags: String::new(),
        }),
        Route::Ssh => {
            RouteSettings::Ssh(SshRouteSettings::new(&reach.ssh, ssh(), cluster, namespace))
        }
    };
    Ok(DiagnosePlan {
        route: settings,
        route_info: RouteInfo {
            name: route.name().into(),
            reason,
        },
        targets: targets(facts, opts),
        timeout: opts.timeout,
        parallel: opts.parallel,
        keep_pods: opts.keep_pods,
        dry_run: opts.dry_run,
    })
}

/// The addresses `--via auto`'s TCP 22 check goes to: every target's (the nodes the route
/// would reach; a VM that is not a target is never contacted).
pub(crate) fn ssh_check_addresses(facts: &ClusterFacts) -> Vec<std::net::IpAddr> {
    facts
        .nodes
        .iter()
        .filter(|n| n.is_target())
        .filter_map(|n| n.ip())
        .collect()
}

/// One target per control-plane node; its peers are every other node with an IP.
///
/// A node is a control-plane Machine of this cluster, owned by its KCP (by uid), with the VM
/// joined to it by uid when it has one ([`ControlPlaneNode::is_target`]; the rules are in
/// `supervisor::join`). Anyone who can edit the vSphere Namespace can create a VirtualMachine
/// carrying the control-plane labels, or naming a real VSphereMachine as its owner, or a Machine
/// with the control-plane labels: each is a finding and never a target nor a peer: no pod, no
/// ssh session and no probe's curl goes to it. An address the VM reports that is no other host's
/// (loopback, link-local, ...: `supervisor::address`) was dropped where it was read, so such a
/// node is a target without address: nothing is sent to it, and it is nobody's peer. The Machines
/// are already at most the KCP's desired replicas plus a surplus of one (`supervisor::targets`:
/// labelled Machines beyond that are a finding and not among the nodes), so the targets are too,
/// and the driver probes at most `parallel` of them at once.
fn targets(facts: &ClusterFacts, opts: &DiagnoseConfig) -> Vec<Target> {
    let members: Vec<&ControlPlaneNode> = facts.nodes.iter().filter(|n| n.is_target()).collect();
    let ips: Vec<String> = members
        .iter()
        .filter_map(|n| n.ip())
        .map(|ip| ip.to_string())
        .collect();
    members
        .into_iter()
        .map(|n| Target {
            name: n.name.clone(),
            node_name: n
                .machine
                .as_ref()
                .and_then(|m| m.node_name.clone())
                .unwrap_or_else(|| n.name.clone()),
            address: n.ip().map(|ip| {
                let me = ip.to_string();
                Address {
                    ip,
                    probe: ProbeArgs {
                        connect_timeout_s: opts.connect_timeout.as_secs().max(1) as u32,
                        log_lines: opts.log_lines,
                        parallel: u32::try_from(opts.parallel).unwrap_or(u32::MAX).max(1),
                        ..ProbeArgs::new(me.clone(), ips.iter().filter(|p| **p != me).cloned())
                    },
                }
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Via;
    use crate::supervisor::PowerState;
    use crate::testing::{api, facts};
    use crate::workload::ApiState;

    fn node(i: u8, ip: bool) -> crate::supervisor::ControlPlaneNode {
        crate::testing::node(i, PowerState::PoweredOn, ip, "Running")
    }

    fn options(via: Via) -> DiagnoseConfig {
        DiagnoseConfig {
            reach: RouteArgs {
                via,
                ..RouteArgs::parse(&[])
            },
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(120),
            log_lines: 500,
            since: crate::analyse::verdict::DEFAULT_SINCE,
            keep_pods: false,
            dry_run: false,
            api_timeout: Duration::from_secs(5),
            workload_tls: crate::workload::Tls::Verify,
            parallel: 16,
            nsx: None,
            jumpbox_keeper: None,
        }
    }

    const RUN: &str = "bcdfg";

    #[test]
    fn the_route_is_resolved_and_configured_for_the_cluster() {
        let f = facts(3, 3, (1..=3).map(|i| node(i, true)).collect());
        let up = api(ApiState::Reachable);
        let down = api(ApiState::Timeout);
        let p = plan(&options(Via::Auto), &f, &up, None, RUN.into()).unwrap();
        assert_eq!(p.route_info.name, "pod");
        assert_eq!(p.route_info.reason, "auto: the workload API answers");
        // The cluster's own values reach the route: its run id, its namespace, its name.
        let pods = p.route.would_create(&p.targets);
        assert_eq!(pods.len(), 3);
        assert!(pods.iter().all(|pod| {
            pod.metadata.namespace.as_deref() == Some("kube-system")
                && pod.metadata.name.as_ref().unwrap().ends_with("-bcdfg")
        }));
        let p = plan(&options(Via::Auto), &f, &down, None, RUN.into()).unwrap();
        assert_eq!(p.route_info.name, "jumpbox");
        assert!(
            p.route_info.reason.contains("does not answer (d)"),
            "{}",
            p.route_info.reason
        );
        let pods = p.route.would_create(&p.targets);
        assert_eq!(pods.len(), 1);
        assert_eq!(pods[0].metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            pods[0].metadata.name.as_deref(),
            Some("etcdnet-jumpbox-tkc-bcdfg")
        );
        let p = plan(&options(Via::Ssh), &f, &up, None, RUN.into()).unwrap();
        assert_eq!(
            (p.route_info.name.as_str(), p.route_info.reason.as_str()),
            ("ssh", "--via ssh")
        );
        assert!(p.route.would_create(&p.targets).is_empty());
    }

    /// On a VDS Supervisor with the workload API dark, `auto` plans ssh (no pod) when a VM
    /// answered on 22, and no plan at all when none did: the error names the cluster.
    #[test]
    fn on_vds_auto_plans_ssh_or_says_no_route() {
        use crate::route::via::SshPortCheck;
        use crate::supervisor::{NetworkStack, StackFact};
        let mut f = facts(3, 3, (1..=3).map(|i| node(i, true)).collect());
        f.apis.network_stack = StackFact {
            stack: NetworkStack::Vds,
            evidence: "serves netoperator.vmware.com and no NSX group".into(),
        };
        let down = api(ApiState::Timeout);
        let ips = ssh_check_addresses(&f);
        assert_eq!(ips.len(), 3);
        let answered = SshPortCheck {
            answered: ips.clone(),
            silent: vec![],
        };
        let p = plan(&options(Via::Auto), &f, &down, Some(&answered), RUN.into()).unwrap();
        assert_eq!(p.route_info.name, "ssh");
        assert!(
            p.route_info.reason.contains("VDS"),
            "{}",
            p.route_info.reason
        );
        assert!(p.route.would_create(&p.targets).is_empty());
        let silent = SshPortCheck {
            answered: vec![],
            silent: ips
                .iter()
                .map(|ip| (*ip, "timed out after 2s".into()))
                .collect(),
        };
        let e = plan(&options(Via::Auto), &f, &down, Some(&silent), RUN.into()).unwrap_err();
        assert!(matches!(e, Error::NoRoute(_)), "{e}");
        assert_eq!(e.exit_code(), crate::error::EXIT_INCOMPLETE);
        assert!(e.to_string().starts_with("cluster tkc: no route"), "{e}");
    }

    /// `--via pod` with the workload API dark: no plan, one line naming the cluster and the
    /// route that can work (exit 3), not a report of every node failing alike; a dry run still
    /// shows the pods it would create.
    #[test]
    fn a_named_pod_route_without_the_api_is_no_plan_but_a_dry_run_shows_its_pods() {
        let f = facts(3, 3, (1..=3).map(|i| node(i, true)).collect());
        let down = api(ApiState::Refused);
        let e = plan(&options(Via::Pod), &f, &down, None, RUN.into()).unwrap_err();
        assert!(matches!(e, Error::NoRoute(_)), "{e}");
        assert_eq!(e.exit_code(), crate::error::EXIT_INCOMPLETE);
        let line = e.to_string();
        assert!(
            line.starts_with(
                "cluster tkc: --via pod needs the workload API, and it refuses the connection (d)"
            ),
            "{line}"
        );
        assert!(line.contains("--via jumpbox"), "{line}");
        let dry = DiagnoseConfig {
            dry_run: true,
            ..options(Via::Pod)
        };
        let p = plan(&dry, &f, &down, None, RUN.into()).unwrap();
        assert_eq!(p.route.would_create(&p.targets).len(), 3);
    }

    #[test]
    fn a_vm_without_a_machine_is_neither_a_target_nor_a_peer() {
        let mut nodes: Vec<_> = (1..=3).map(|i| node(i, true)).collect();
        for i in 4..=9 {
            let mut rogue = node(i, true);
            rogue.machine = None;
            nodes.push(rogue);
        }
        let f = facts(3, 3, nodes);
        let p = plan(
            &options(Via::Auto),
            &f,
            &api(ApiState::Reachable),
            None,
            RUN.into(),
        )
        .unwrap();
        let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["tkc-cp-1", "tkc-cp-2", "tkc-cp-3"]);
        let bound = f.desired().unwrap() as usize + f.machines_present();
        assert!(p.targets.len() <= bound);
        for t in &p.targets {
            let peers = &t.address.as_ref().unwrap().probe.peers;
            assert_eq!(peers.len(), 2, "{peers:?}");
            assert!(peers
                .iter()
                .all(|ip| ["198.18.0.11", "198.18.0.12", "198.18.0.13"].contains(&ip.as_str())));
        }
    }

    /// A node whose identity does not hold (a Machine not the KCP's has no `machine`; a Machine
    /// whose VM is ambiguous has a problem) is neither a target nor a peer; a VM whose address
    /// was refused leaves its node a target without address.
    #[test]
    fn a_node_whose_identity_does_not_hold_is_neither_a_target_nor_a_peer() {
        use crate::supervisor::IdentityProblem;
        let mut nodes: Vec<_> = (1..=4).map(|i| node(i, true)).collect();
        nodes[2].join.problem = Some(IdentityProblem::AmbiguousVm {
            machine: "tkc-cp-3".into(),
            candidates: vec!["a".into(), "b".into()],
        });
        nodes[3].machine = None;
        nodes[3].join.problem = Some(IdentityProblem::MachineNotOwned {
            machine: "tkc-cp-4".into(),
            controller: None,
        });
        let vm = nodes[1].vm.as_mut().unwrap();
        vm.refused_ip = vm.ip.take();
        let f = facts(3, 3, nodes);
        let p = plan(
            &options(Via::Auto),
            &f,
            &api(ApiState::Reachable),
            None,
            RUN.into(),
        )
        .unwrap();
        let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["tkc-cp-1", "tkc-cp-2"]);
        assert!(p.targets[1].address.is_none(), "refused: no address");
        assert_eq!(
            p.targets[0].address.as_ref().unwrap().probe.peers,
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_node_is_a_target_and_peers_are_the_others() {
        let mut nodes: Vec<_> = (1..=3).map(|i| node(i, true)).collect();
        nodes[2] = node(3, false);
        let f = facts(3, 3, nodes);
        let p = plan(
            &options(Via::Auto),
            &f,
            &api(ApiState::Reachable),
            None,
            RUN.into(),
        )
        .unwrap();
        assert_eq!(p.targets.len(), 3);
        let a = p.targets[0].address.as_ref().unwrap();
        assert_eq!(a.probe.self_ip, "198.18.0.11");
        assert_eq!(
            a.probe.peers,
            ["198.18.0.12"],
            "the node without an IP is nobody's peer"
        );
        assert_eq!(a.probe.connect_timeout_s, 3);
        assert!(p.targets[2].address.is_none());
    }
}
