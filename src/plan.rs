//! Resolve once. A [`DiagnosePlan`] is made from the command's options, the cluster's facts
//! and the workload API check, the way ripgrep turns its flags into settings once: the route
//! chosen (no `auto` left) and why, one [`Target`] per control-plane node with what its probe
//! is told, and the settings every route reads. Nothing after it sees the command line.

use std::path::PathBuf;
use std::time::Duration;

use crate::probe::script::ProbeArgs;
use crate::report::RouteInfo;
use crate::route::jumpbox::{JumpboxRoute, JumpboxSettings};
use crate::route::pod::{PodRoute, PodSettings};
use crate::route::ssh::{SshKey, SshRouteSettings, SshSettings};
use crate::route::{Address, PodBasics, Route, RouteSettings, Target};
use crate::supervisor::{ClusterFacts, ControlPlaneNode};
use crate::workload::WorkloadApi;

/// `--via`: a route, or `auto` (pod when the workload API answers, else jumpbox).
#[derive(Debug, Clone, Copy)]
pub enum Via {
    Auto,
    Route(&'static dyn Route),
}

/// What `diagnose` was asked to do, as plain values (made from the command line by `cli`).
#[derive(Debug, Clone)]
pub struct DiagnoseOptions {
    pub cluster: String,
    pub via: Via,
    pub ssh_user: String,
    pub ssh_key: SshKey,
    pub ssh_options: Vec<String>,
    pub jumpbox_image: String,
    pub image: String,
    pub image_pull_secret: Option<String>,
    pub pod_namespace: String,
    pub connect_timeout: Duration,
    /// Bound of the whole run; pods get it as activeDeadlineSeconds.
    pub timeout: Duration,
    pub log_lines: u32,
    /// The log window: lines older than this before each node's probe time are history.
    pub since: Duration,
    pub keep_pods: bool,
    pub dry_run: bool,
    pub api_timeout: Duration,
    /// How the workload API's certificate is checked (`--insecure-skip-tls-verify`).
    pub workload_tls: crate::workload::Tls,
    /// How many nodes are probed at once.
    pub parallel: usize,
}

/// One diagnosis, resolved.
#[derive(Debug)]
pub struct DiagnosePlan {
    pub route: &'static dyn Route,
    /// The route's name and why it was chosen, as the report says it.
    pub route_info: RouteInfo,
    pub targets: Vec<Target>,
    pub settings: RouteSettings,
    pub timeout: Duration,
    pub parallel: usize,
    pub keep_pods: bool,
    pub dry_run: bool,
}

/// Where the plan is made: the vSphere Namespace, and the id all of the run's pods share.
pub struct Context<'a> {
    pub namespace: &'a str,
    pub run_id: String,
}

pub fn plan(
    opts: &DiagnoseOptions,
    facts: &ClusterFacts,
    api: &WorkloadApi,
    ctx: Context<'_>,
) -> DiagnosePlan {
    let (route, reason): (&'static dyn Route, String) = match opts.via {
        Via::Auto if api.is_reachable() => (&PodRoute, "auto: the workload API answers".into()),
        Via::Auto => (
            &JumpboxRoute,
            format!(
                "auto: the workload API does not answer ({}), so through the Supervisor",
                api.state
            ),
        ),
        Via::Route(r) => (r, format!("--via {}", r.name())),
    };
    let basics = PodBasics {
        run_id: ctx.run_id,
        deadline: opts.timeout,
        image_pull_secret: opts.image_pull_secret.clone(),
    };
    let ssh = SshSettings {
        user: opts.ssh_user.clone(),
        connect_timeout: opts.connect_timeout,
        options: opts.ssh_options.clone(),
    };
    let settings = RouteSettings {
        pod: PodSettings {
            namespace: opts.pod_namespace.clone(),
            image: opts.image.clone(),
            basics: basics.clone(),
        },
        jumpbox: JumpboxSettings {
            namespace: ctx.namespace.to_string(),
            cluster: opts.cluster.clone(),
            image: opts.jumpbox_image.clone(),
            basics,
            ssh: ssh.clone(),
        },
        ssh: SshRouteSettings {
            ssh,
            key: opts.ssh_key.clone(),
            cluster: opts.cluster.clone(),
            namespace: ctx.namespace.to_string(),
        },
        // The pod route's requests (create, watch, logs) get more time than the quick check,
        // never more than the run's: each is bounded, headers and body (`bounds`).
        workload_timeout: opts
            .api_timeout
            .max(Duration::from_secs(10))
            .min(opts.timeout),
    };
    DiagnosePlan {
        route,
        route_info: RouteInfo {
            name: route.name().into(),
            reason,
        },
        targets: targets(facts, opts),
        settings,
        timeout: opts.timeout,
        parallel: opts.parallel,
        keep_pods: opts.keep_pods,
        dry_run: opts.dry_run,
    }
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
/// and the driver probes at most `--parallel` of them at once.
fn targets(facts: &ClusterFacts, opts: &DiagnoseOptions) -> Vec<Target> {
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

/// `--ssh-identity` / `--ssh-agent`, else the cluster's secret.
pub fn ssh_key(identity: Option<PathBuf>, agent: bool) -> SshKey {
    match (identity, agent) {
        (Some(path), _) => SshKey::File(path),
        (None, true) => SshKey::Agent,
        (None, false) => SshKey::ClusterSecret,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::PowerState;
    use crate::testing::{api, facts};
    use crate::workload::ApiState;

    fn node(i: u8, ip: bool) -> crate::supervisor::ControlPlaneNode {
        crate::testing::node(i, PowerState::PoweredOn, ip, "Running")
    }

    fn options(via: Via) -> DiagnoseOptions {
        DiagnoseOptions {
            cluster: "tkc".into(),
            via,
            ssh_user: "vmware-system-user".into(),
            ssh_key: SshKey::ClusterSecret,
            ssh_options: vec![],
            jumpbox_image: "jb".into(),
            image: "busybox".into(),
            image_pull_secret: None,
            pod_namespace: "kube-system".into(),
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(120),
            log_lines: 500,
            since: crate::analyse::verdict::DEFAULT_SINCE,
            keep_pods: false,
            dry_run: false,
            api_timeout: Duration::from_secs(5),
            workload_tls: crate::workload::Tls::Verify,
            parallel: 16,
        }
    }

    fn ctx() -> Context<'static> {
        Context {
            namespace: "ns",
            run_id: "bcdfg".into(),
        }
    }

    #[test]
    fn auto_is_resolved_from_the_workload_api() {
        let f = facts(3, 3, (1..=3).map(|i| node(i, true)).collect());
        let up = api(ApiState::Reachable);
        let down = api(ApiState::Timeout);
        let p = plan(&options(Via::Auto), &f, &up, ctx());
        assert_eq!(p.route.name(), "pod");
        assert_eq!(p.route_info.reason, "auto: the workload API answers");
        let p = plan(&options(Via::Auto), &f, &down, ctx());
        assert_eq!(p.route.name(), "jumpbox");
        assert!(
            p.route_info.reason.contains("(Timeout)"),
            "{}",
            p.route_info.reason
        );
        let ssh = crate::route::by_name("ssh").unwrap();
        let p = plan(&options(Via::Route(ssh)), &f, &up, ctx());
        assert_eq!(
            (p.route.name(), p.route_info.reason.as_str()),
            ("ssh", "--via ssh")
        );
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
        let p = plan(&options(Via::Auto), &f, &api(ApiState::Reachable), ctx());
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
    /// was refused leaves its node a target without address. c04990d targeted every node with a
    /// Machine and had no `join`.
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
        let p = plan(&options(Via::Auto), &f, &api(ApiState::Reachable), ctx());
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
        let p = plan(&options(Via::Auto), &f, &api(ApiState::Reachable), ctx());
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
        assert_eq!(p.settings.pod.basics.run_id, "bcdfg");
        assert_eq!(p.settings.jumpbox.namespace, "ns");
        assert_eq!(p.settings.workload_timeout, Duration::from_secs(10));
    }
}
