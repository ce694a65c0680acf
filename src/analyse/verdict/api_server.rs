//! Rule 11: etcd is healthy but the workload API does not answer. Every `kubectl` still fails
//! (the support article's visible symptom), so this is never `Healthy`: either the API servers
//! on the nodes are not serving (`ApiServerNotServing`: a crash loop with its log line, an
//! expired serving certificate with its date, a server still starting after etcd got its leader
//! back), or every one of them is ready and what is in front of them, the load balancer's
//! virtual IP, is dark (`ApiEndpointUnreachable`).
//!
//! It decides only when nothing short of the workload API stands between the run and `Healthy`
//! (the etcd gaps of rule 13 all closed), and only on what the probes read of the API servers;
//! a workload API that was not checked, or probes that read no API server, leave it to
//! `Inconclusive`, which names the workload API.

use crate::probe::apiserver::{rfc3339, ApiServer, ApiServerState, Readyz};
use crate::probe::etcdlog::LeaderState;
use crate::probe::{NodeReport, PortState};
use crate::supervisor::NetworkStack;
use crate::workload::ApiState;

use super::seen::{self, Check};
use super::{verdict, Ctx, Verdict, VerdictCode};

pub(super) fn api_server(ctx: &Ctx) -> Option<Verdict> {
    let api = ctx.workload?;
    if api.is_reachable() || matches!(api.state, ApiState::Unknown | ApiState::Untrusted) {
        return None;
    }
    if seen::gaps(ctx)
        .iter()
        .any(|g| g.check != Check::WorkloadApi)
    {
        return None;
    }
    if ctx.api_servers.is_empty() {
        return None;
    }
    let nodes: Vec<(&NodeReport, Option<&ApiServer>)> = ctx
        .nodes
        .iter()
        .map(|n| (*n, ctx.api_servers.get(&n.name)))
        .collect();
    let serving = |a: Option<&ApiServer>| a.is_some_and(ApiServer::serving);
    let dark = seen::workload_line(api);
    if nodes.iter().all(|(_, a)| serving(*a)) {
        // An answer with an HTTP error came through the endpoint: not a dark load balancer.
        if api.state == ApiState::HttpError {
            return None;
        }
        return endpoint_unreachable(ctx, api, &nodes, dark);
    }
    not_serving(ctx, &nodes, dark)
}

/// `warning:` notes for a `Healthy` verdict: each node whose API server does not serve while
/// the workload API answers through the others.
pub(super) fn warnings(ctx: &Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for n in &ctx.nodes {
        let Some(a) = ctx.api_servers.get(&n.name) else {
            continue;
        };
        let why = match a.state {
            ApiServerState::Ready | ApiServerState::Answering | ApiServerState::Unknown => continue,
            ApiServerState::CertificateExpired => match &a.cert {
                Ok(v) => format!(
                    "its serving certificate /etc/kubernetes/pki/apiserver.crt expired at {}",
                    rfc3339(v.not_after)
                ),
                Err(_) => continue,
            },
            ApiServerState::CertificateNotYetValid => match &a.cert {
                Ok(v) => format!(
                    "its serving certificate /etc/kubernetes/pki/apiserver.crt is not valid before {}",
                    rfc3339(v.not_before)
                ),
                Err(_) => continue,
            },
            other => format!(
                "its API server is {other}{}",
                a.telling_line()
                    .map(|f| format!("; its log: {}", f.line))
                    .unwrap_or_default()
            ),
        };
        out.push(format!(
            "warning: {}: {why}; the workload API answers through the other control-plane VMs",
            n.name
        ));
    }
    out
}

/// `host:6443` of a node.
fn backend(n: &NodeReport) -> String {
    match n.ip {
        Some(std::net::IpAddr::V6(ip)) => format!("[{ip}]:6443"),
        Some(ip) => format!("{ip}:6443"),
        None => "<no IP>:6443".into(),
    }
}

/// What the route saw of the node's 6443 from outside it, when it looked: from the Supervisor
/// (jumpbox) or from this machine (ssh), with where from.
fn seen_6443(n: &NodeReport) -> Option<(PortState, crate::probe::Vantage)> {
    n.reach
        .iter()
        .find(|r| r.port == 6443)
        .map(|r| (r.state, n.vantage()))
}

fn endpoint_unreachable(
    ctx: &Ctx,
    api: &crate::workload::WorkloadApi,
    nodes: &[(&NodeReport, Option<&ApiServer>)],
    dark: String,
) -> Option<Verdict> {
    let endpoint = api
        .server
        .clone()
        .or_else(|| ctx.facts.cluster.control_plane_endpoint.clone())
        .unwrap_or_else(|| "the cluster's endpoint".into());
    let backends: Vec<String> = nodes
        .iter()
        .map(|(n, a)| {
            let how = match a.map(|a| &a.readyz) {
                Some(Readyz::Ready) => "/readyz passed on the node".to_string(),
                Some(Readyz::Answered(code)) => format!("answers HTTP {code} on the node"),
                _ => "serving".to_string(),
            };
            let seen = match seen_6443(n) {
                Some((s, from)) => format!(", {} {}", s.to_string().to_lowercase(), from.from()),
                None => String::new(),
            };
            format!("{} {} ({how}{seen})", n.name, backend(n))
        })
        .collect();
    let mut evidence = vec![
        dark,
        format!(
            "the API server is ready on every control-plane VM: {}",
            backends.join(", ")
        ),
    ];
    let closed: Vec<(&str, crate::probe::Vantage)> = nodes
        .iter()
        .filter_map(|(n, _)| match seen_6443(n) {
            Some((s, from)) if s != PortState::Open => Some((n.name.as_str(), from)),
            _ => None,
        })
        .collect();
    if let Some((_, from)) = closed.first() {
        let names: Vec<&str> = closed.iter().map(|(n, _)| *n).collect();
        // From this machine, a closed 6443 is this machine's path (on NSX or VPC an admin's
        // machine often cannot route to the VMs at all): never held against the API servers,
        // which the nodes saw ready.
        evidence.push(match from {
            crate::probe::Vantage::Supervisor => format!(
                "from the Supervisor, 6443 does not open on {}: what sits between the Supervisor's network and the VMs drops it too",
                names.join(", ")
            ),
            crate::probe::Vantage::ThisMachine => format!(
                "from this machine, 6443 does not open on {}: the path from here to the VMs drops it (this says nothing against those API servers, ready on their nodes)",
                names.join(", ")
            ),
        });
    }
    if nodes.iter().all(|(n, _)| n.reach.is_empty()) {
        evidence.push("the VMs' 6443 was not checked from outside them on this route (the pod route runs on the nodes; an ssh through a proxy connects from the proxy): what each node's own /readyz said is above".into());
    }
    let show = ctx.facts.kubectl.run(&format!(
        "get virtualmachineservices,services -n {} -o wide",
        crate::command::namespace(&ctx.facts.namespace)
    ));
    let mut next = vec![
        format!("The endpoint {endpoint} is the load balancer's virtual IP in front of the VMs' 6443 (the VirtualMachineService CAPV keeps for the control plane): on the Supervisor, {show}: the one whose external IP is the endpoint's must list the three VMs as its endpoints"),
    ];
    next.extend(load_balancer_on(
        ctx.facts.apis.network_stack.stack,
        &endpoint,
    ));
    next.push(format!("The backends above answer: once the virtual IP forwards to them the workload API answers; then confirm: {}", ctx.facts.diagnose_again()));
    verdict(
        VerdictCode::ApiEndpointUnreachable,
        format!(
            "etcd is healthy and the API server on every control-plane VM is ready, but the workload API endpoint {endpoint} does not answer: the load balancer in front of them"
        ),
        vec![],
        evidence,
        next,
    )
}

/// What load balancer holds the endpoint's virtual IP on `stack`, as next steps. From VMware's
/// documentation: a Supervisor on NSX gives its TKG clusters "an NSX Edge load balancer or the
/// NSX Advanced Load Balancer" (vSphere 8, vSphere IaaS control plane installation and
/// configuration, "Supervisor Networking"), and a VDS Supervisor "requires a load balancer on the
/// vCenter Server management network" (same page): HAProxy or NSX Advanced Load Balancer (Avi),
/// and from vSphere 9 the vSphere Foundation Load Balancer or Avi (vSphere Automation API,
/// `NamespaceManagement.Supervisors.Networks.Edges.EdgeProvider`: `NSX_LB` on `NSXT` and
/// `NSX_VPC` networks, `AVI` and `HAPROXY` (deprecated in 9.0 for `VSPHERE_FOUNDATION`) on
/// `VSPHERE` networks). In Avi the endpoint is a virtual service with a pool of the VMs (vSphere 8,
/// "NSX Advanced Load Balancer components"). A stack discovery could not name gets each.
fn load_balancer_on(stack: NetworkStack, endpoint: &str) -> Vec<String> {
    let nsx = format!("NSX: in NSX Manager, Networking > Load Balancing > Virtual Servers: the virtual server whose IP is {endpoint}'s must be up, and its server pool's members (the VMs' 6443) up; where the Supervisor uses NSX Advanced Load Balancer (Avi) instead, in the Avi Controller, Applications > Virtual Services: the one for {endpoint} and its pool's servers");
    let vpc = format!("NSX VPC: the VPC's load balancer holds {endpoint}: in NSX Manager, the VPC's load balancer virtual server for it and its pool members' health (the VMs' 6443); where the Supervisor uses NSX Advanced Load Balancer (Avi), in the Avi Controller, Applications > Virtual Services: the one for {endpoint} and its pool's servers");
    let vds = format!("VDS: the load balancer on the management network holds {endpoint}: with NSX Advanced Load Balancer (Avi), in the Avi Controller, Applications > Virtual Services: the one for {endpoint} and its pool's servers; with the HAProxy appliance, its frontend for {endpoint} and its backends' health checks; on vSphere 9, the vSphere Foundation Load Balancer's virtual service for it");
    match stack {
        NetworkStack::Nsx => vec![nsx],
        NetworkStack::Vpc => vec![vpc],
        NetworkStack::Vds => vec![vds],
        NetworkStack::Unknown => vec![
            format!("The networking stack is unknown: whichever load balancer this Supervisor uses holds {endpoint}"),
            nsx,
            vpc,
            vds,
        ],
    }
}

/// Seconds from `since` (a time as the log classifier writes it) to the node's clock at its
/// probe.
fn seconds_since(since: &str, clock_ms: Option<i64>) -> Option<i64> {
    let us = crate::probe::etcdlog::parse_micros(since)?;
    Some((clock_ms? - us / 1000) / 1000)
}

fn not_serving(
    ctx: &Ctx,
    nodes: &[(&NodeReport, Option<&ApiServer>)],
    dark: String,
) -> Option<Verdict> {
    // Names as the API server accepts them, else a placeholder; the run's flags last.
    let k = &ctx.facts.kubectl;
    let cluster = crate::command::name(&ctx.facts.cluster.name);
    let ns = crate::command::namespace(&ctx.facts.namespace);
    let mut evidence = vec![dark];
    let mut reasons = Vec::new();
    let mut next = Vec::new();
    let mut starting = false;
    let mut bad = Vec::new();
    for (n, a) in nodes {
        let name = &n.name;
        let Some(a) = a else {
            evidence.push(format!("{name}: its probe read nothing of the API server"));
            bad.push(name.clone());
            continue;
        };
        let clock = n.probe().and_then(|p| p.clock_ms);
        let newest = a.newest();
        let restarts = newest.and_then(|c| c.attempt).unwrap_or(0);
        let line = a
            .telling_line()
            .map(|f| format!("; its log: {}", f.line))
            .unwrap_or_default();
        let leader_back = ctx
            .logs
            .get(name.as_str())
            .and_then(|l| l.leader.as_ref())
            .filter(|l| l.state == LeaderState::Known)
            .and_then(|l| l.since.as_deref())
            .and_then(|since| Some((since, seconds_since(since, clock)?)));
        let leader_text = || match leader_back {
            Some((since, s)) => format!(
                "; etcd has had its leader back since {since} ({}s before the probe)",
                s.max(0)
            ),
            None => String::new(),
        };
        match a.state {
            ApiServerState::Ready | ApiServerState::Answering => {
                evidence.push(format!("{name}: the API server is ready ({})", backend(n)));
                continue;
            }
            ApiServerState::CertificateExpired => {
                let v = a.cert.as_ref().ok()?;
                evidence.push(format!(
                    "{name}: its serving certificate /etc/kubernetes/pki/apiserver.crt expired at {} (the node's clock: {}): every client refuses it",
                    rfc3339(v.not_after),
                    a.now_s.map(rfc3339).unwrap_or_else(|| "?".into())
                ));
                reasons.push(format!(
                    "{name} certificate expired {}",
                    rfc3339(v.not_after)
                ));
                next.push(format!("On {name}: kubeadm certs renew apiserver, then restart the kube-apiserver static pod (move /etc/kubernetes/manifests/kube-apiserver.yaml out and back); or let KCP replace the machine: {}", k.run(&format!("patch kcp -n {ns} <kcp> --type merge -p '{{\"spec\":{{\"rolloutAfter\":\"<now, RFC 3339>\"}}}}'"))));
            }
            ApiServerState::CertificateNotYetValid => {
                let v = a.cert.as_ref().ok()?;
                evidence.push(format!(
                    "{name}: its serving certificate /etc/kubernetes/pki/apiserver.crt is not valid before {} (the node's clock: {})",
                    rfc3339(v.not_before),
                    a.now_s.map(rfc3339).unwrap_or_else(|| "?".into())
                ));
                reasons.push(format!("{name} certificate not yet valid"));
                next.push(format!("On {name}: the node's clock is behind its certificate: check its time source (chronyc tracking / timedatectl)"));
            }
            ApiServerState::CrashLooping => {
                let state = newest.map(|c| c.state.as_str()).unwrap_or("?");
                evidence.push(format!(
                    "{name}: kube-apiserver is crash looping: its newest container {state} after {restarts} restarts{line}"
                ));
                reasons.push(format!("{name} crash looping"));
                next.push(format!("On {name}: crictl ps -a --name kube-apiserver, then crictl logs <the newest container>: the line above is the last that says why it exits"));
            }
            ApiServerState::NotRunning => {
                let what = match newest {
                    Some(c) => format!("its only container is {}", c.state),
                    None => "no kube-apiserver container is listed".to_string(),
                };
                evidence.push(format!("{name}: the API server does not run: {what}{line}"));
                reasons.push(format!("{name} not running"));
                next.push(format!("On {name}: /etc/kubernetes/manifests/kube-apiserver.yaml must be there and valid; journalctl -u kubelet says why kubelet does not start it"));
            }
            ApiServerState::NotReady => {
                let failed = match &a.readyz {
                    Readyz::NotReady { failed, status } if !failed.is_empty() => {
                        format!("{status}, failing: {}", failed.join(", "))
                    }
                    Readyz::NotReady { status, .. } => status.to_string(),
                    _ => "?".into(),
                };
                starting = true;
                evidence.push(format!(
                    "{name}: the API server answers but is not ready: /readyz {failed}{}{line}",
                    leader_text()
                ));
                reasons.push(format!("{name} not ready"));
            }
            ApiServerState::NoAnswer => {
                let why = match &a.readyz {
                    Readyz::NoAnswer(d) => d.clone(),
                    _ => "?".into(),
                };
                let started = newest
                    .and_then(|c| c.created_s)
                    .map(|s| format!(", started {}", rfc3339(s)))
                    .unwrap_or_default();
                starting = true;
                evidence.push(format!(
                    "{name}: the API server runs (restart {restarts}{started}) but gives no answer on 6443: {why}{}{line}",
                    leader_text()
                ));
                reasons.push(format!("{name} not answering"));
            }
            ApiServerState::Unknown => {
                evidence.push(format!(
                    "{name}: the API server could not be read ({})",
                    a.containers_error
                        .as_deref()
                        .unwrap_or("no crictl, no curl")
                ));
                reasons.push(format!("{name} not read"));
            }
        }
        bad.push(name.clone());
    }
    if starting {
        next.push(format!("An API server that answers but is not ready, or runs without answering, is still starting or reconnecting to etcd after the heal: {} re-checks each round until the workload API answers", k.run(&format!("etcdnet diagnose {cluster} -n {ns} --watch"))));
    }
    next.dedup();
    verdict(
        VerdictCode::ApiServerNotServing,
        format!(
            "etcd is healthy, but the workload API does not answer: the API servers are not serving ({})",
            reasons.join("; ")
        ),
        bad,
        evidence,
        next,
    )
}
