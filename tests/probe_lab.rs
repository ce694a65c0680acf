//! The real probe on real etcd under real faults: a lab of control-plane "VMs" (network
//! namespaces running etcd with kubeadm's layout), one fault each, the embedded probe script run
//! inside every node's view, its JSON parsed, and the analysis asked for a verdict.
//! Each test asserts the verdict code, the matrix cells, and evidence quoting etcd's own log.
//!
//! Needs root and the lab's packages (`.ci/lab-packages`); skips loudly otherwise.

use std::time::{Duration, Instant};

use etcdnet::analyse::matrix::CellState;
use etcdnet::analyse::verdict::{diagnose, Diagnosis, VerdictCode};
use etcdnet::probe::script::{self, ProbeArgs};
use etcdnet::probe::{parse::parse, NodeReport};
use etcdnet::supervisor::*;
use etcdnet_lab::{require, Fault, Lab, LabConfig};

/// What the Supervisor would say about the lab: one Machine and VM per node.
fn facts(lab: &Lab) -> ClusterFacts {
    let n = lab.nodes().len();
    ClusterFacts {
        context: "lab".into(),
        namespace: "ns-lab".into(),
        cluster: ClusterInfo {
            name: "tkc-lab".into(),
            phase: Some("Provisioned".into()),
            control_plane_endpoint: None,
        },
        apis: ApiVersions {
            virtual_machine: "vmoperator.vmware.com/v1alpha3".into(),
            cluster: "cluster.x-k8s.io/v1beta1".into(),
            machine: "cluster.x-k8s.io/v1beta1".into(),
            control_plane: Some("controlplane.cluster.x-k8s.io/v1beta1".into()),
            vm_labels: Some(VmLabelScheme::Capv),
        },
        kcp: Some(KcpInfo {
            name: "tkc-lab-cp".into(),
            api_version: "controlplane.cluster.x-k8s.io/v1beta1".into(),
            desired: Some(n as i64),
            replicas: Some(n as i64),
            ready: None,
            available: None,
            up_to_date: None,
            version: None,
            conditions: vec![],
        }),
        kcp_missing_reason: None,
        endpoint: None,
        nodes: lab
            .nodes()
            .iter()
            .map(|node| ControlPlaneNode {
                name: node.name.clone(),
                machine: Some(MachineInfo {
                    name: node.name.clone(),
                    phase: Some("Running".into()),
                    node_name: Some(node.name.clone()),
                    addresses: vec![],
                    infrastructure_name: None,
                    version: None,
                    failure_domain: None,
                    etcd_conditions: vec![],
                }),
                vm: Some(VmInfo {
                    name: node.name.clone(),
                    ip: Some(node.ip.into()),
                    power: PowerState::PoweredOn,
                    class: None,
                    owner: None,
                }),
            })
            .collect(),
    }
}

const CONNECT_TIMEOUT_S: u32 = 2;

/// Runs the embedded probe on every node at once and reads the results back.
fn probe_all(lab: &Lab) -> Vec<NodeReport> {
    let ips: Vec<String> = lab.nodes().iter().map(|n| n.ip.to_string()).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = lab
            .nodes()
            .iter()
            .map(|node| {
                let me = node.ip.to_string();
                let args = ProbeArgs {
                    connect_timeout_s: CONNECT_TIMEOUT_S,
                    ..ProbeArgs::new(me.clone(), ips.iter().filter(|ip| **ip != me).cloned())
                };
                s.spawn(move || {
                    let started = Instant::now();
                    let out = lab
                        .exec(
                            &node.name,
                            &script::argv(&args),
                            None,
                            Duration::from_secs(30),
                        )
                        .expect("the probe runs on the node");
                    let took = started.elapsed();
                    // The probe's own bound, whatever the number of peers: connect + TLS + ~1 s,
                    // plus the lab's ~40 ms to enter the node's view.
                    assert!(
                        took <= args.expected_duration() + Duration::from_secs(2),
                        "{}: the probe took {took:?}",
                        node.name
                    );
                    assert!(
                        out.stderr.is_empty(),
                        "{}: stderr: {}",
                        node.name,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    NodeReport {
                        name: node.name.clone(),
                        ip: Some(node.ip.into()),
                        outcome: Ok(
                            parse(&node.name, &out.stdout).unwrap_or_else(|e| panic!("{e}"))
                        ),
                        reach: vec![],
                        host_key: None,
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Probes until the verdict is `want` and some evidence line quotes etcd's log (etcd needs a
/// few seconds to notice a fault and say so), bounded; returns the last diagnosis either way.
fn diagnose_until(lab: &Lab, want: VerdictCode, log_words: &[&str]) -> Diagnosis {
    let facts = facts(lab);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let d = diagnose(&facts, &probe_all(lab));
        let quoted = log_words.is_empty()
            || d.verdict
                .evidence
                .iter()
                .any(|e| e.contains("etcd log:") && log_words.iter().any(|w| e.contains(w)));
        if (d.verdict.code == want && quoted) || Instant::now() > deadline {
            return d;
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}

fn cell(d: &Diagnosis, port: u16, from: &str, to: &str) -> CellState {
    d.matrices
        .iter()
        .find(|m| m.port == port)
        .unwrap()
        .cell(from, to)
        .unwrap()
        .state
}

fn start(nodes: usize) -> Lab {
    require("probe_lab");
    Lab::start(LabConfig::with_nodes(nodes)).expect("the lab starts")
}

fn assert_verdict(d: &Diagnosis, want: VerdictCode) {
    assert_eq!(d.verdict.code, want, "{:#?}", d.verdict);
}

fn assert_quotes_log(d: &Diagnosis, words: &[&str]) {
    assert!(
        d.verdict
            .evidence
            .iter()
            .any(|e| e.contains("etcd log:") && words.iter().any(|w| e.contains(w))),
        "evidence should quote etcd's log ({words:?}): {:#?}",
        d.verdict.evidence
    );
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn healthy_lab() {
    let lab = start(3);
    let d = diagnose_until(&lab, VerdictCode::Healthy, &[]);
    assert_verdict(&d, VerdictCode::Healthy);
    for m in &d.matrices {
        assert!(m.cells.iter().all(|c| c.state == CellState::Ok), "{m:#?}");
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn all_peers_dropped() {
    let lab = start(3);
    lab.inject(Fault::DropAllPeers).unwrap();
    let d = diagnose_until(
        &lab,
        VerdictCode::EtcdPeerNetworkBlocked,
        &["IoTimeout", "PeerUnhealthy", "PeerInactive"],
    );
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkBlocked);
    assert_quotes_log(&d, &["IoTimeout", "PeerUnhealthy", "PeerInactive"]);
    for port in [2379, 2380] {
        assert_eq!(cell(&d, port, "cp1", "cp2"), CellState::Timeout);
        assert_eq!(cell(&d, port, "cp3", "cp1"), CellState::Timeout);
        assert_eq!(cell(&d, port, "cp2", "cp2"), CellState::Ok, "own path");
    }
    // Healed, the same lab is healthy again.
    lab.heal().unwrap();
    lab.wait_healthy(Duration::from_secs(30)).unwrap();
    assert_verdict(
        &diagnose_until(&lab, VerdictCode::Healthy, &[]),
        VerdictCode::Healthy,
    );
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn all_peers_rejected() {
    let lab = start(3);
    lab.inject(Fault::RejectAllPeers).unwrap();
    let d = diagnose_until(
        &lab,
        VerdictCode::EtcdPeerPortRefused,
        &["ConnectionRefused"],
    );
    assert_verdict(&d, VerdictCode::EtcdPeerPortRefused);
    assert_quotes_log(&d, &["ConnectionRefused"]);
    assert_eq!(cell(&d, 2380, "cp1", "cp3"), CellState::Refused);
    assert_eq!(cell(&d, 2379, "cp1", "cp1"), CellState::Ok);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_node_isolated() {
    let lab = start(3);
    lab.inject(Fault::Isolate("cp3".into())).unwrap();
    let d = diagnose_until(&lab, VerdictCode::EtcdPeerNetworkPartial, &["cp3"]);
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkPartial);
    assert_eq!(d.verdict.nodes, ["cp3"], "{:#?}", d.verdict);
    assert_quotes_log(&d, &["= cp3"]);
    assert_eq!(cell(&d, 2380, "cp1", "cp3"), CellState::Timeout);
    assert_eq!(cell(&d, 2380, "cp3", "cp2"), CellState::Timeout);
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::Ok);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn only_2380_blocked() {
    let lab = start(3);
    lab.inject(Fault::BlockPort(2380)).unwrap();
    let d = diagnose_until(
        &lab,
        VerdictCode::EtcdPeerNetworkPartial,
        &["IoTimeout", "PeerUnhealthy", "PeerInactive"],
    );
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkPartial);
    assert!(
        d.verdict.summary.contains("port 2380 is blocked"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::Timeout);
    assert_eq!(cell(&d, 2379, "cp1", "cp2"), CellState::Ok);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn only_2379_blocked() {
    let lab = start(3);
    lab.inject(Fault::BlockPort(2379)).unwrap();
    // etcd's peers talk on 2380 only, so etcd itself stays healthy and logs nothing.
    let d = diagnose_until(&lab, VerdictCode::EtcdPeerNetworkPartial, &[]);
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkPartial);
    assert!(
        d.verdict.summary.contains("port 2379 is blocked"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(cell(&d, 2379, "cp2", "cp3"), CellState::Timeout);
    assert_eq!(cell(&d, 2380, "cp2", "cp3"), CellState::Ok);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_way_drop() {
    let lab = start(3);
    lab.inject(Fault::DropOneWay {
        from: "cp1".into(),
        to: "cp2".into(),
    })
    .unwrap();
    let d = diagnose_until(&lab, VerdictCode::EtcdPeerNetworkPartial, &["= cp2"]);
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkPartial);
    assert_quotes_log(&d, &["= cp2"]);
    assert!(
        d.verdict
            .evidence
            .iter()
            .any(|e| e.starts_with("one-way: cp1 → cp2:")),
        "{:#?}",
        d.verdict.evidence
    );
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::Timeout);
    assert_eq!(cell(&d, 2380, "cp2", "cp1"), CellState::Ok);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn large_packets_dropped() {
    let lab = start(3);
    lab.inject(Fault::DropLargePackets).unwrap();
    let words = [
        "IoTimeout",
        "TlsHandshakeTimeout",
        "PeerUnhealthy",
        "LostStream",
    ];
    let d = diagnose_until(&lab, VerdictCode::EtcdPeerLargePacketsDropped, &words);
    assert_verdict(&d, VerdictCode::EtcdPeerLargePacketsDropped);
    assert_quotes_log(&d, &words);
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::TlsStalled);
    assert_eq!(
        cell(&d, 2380, "cp1", "cp1"),
        CellState::Ok,
        "own path: no large-packet loss on lo"
    );
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn expired_peer_certificate() {
    let lab = start(3);
    lab.inject(Fault::ExpiredPeerCert("cp2".into())).unwrap();
    let d = diagnose_until(
        &lab,
        VerdictCode::EtcdCertificateProblem,
        &["CertExpired", "TlsRemoteError", "RejectedConnection"],
    );
    assert_verdict(&d, VerdictCode::EtcdCertificateProblem);
    assert_eq!(d.verdict.nodes, ["cp2"], "{:#?}", d.verdict);
    assert!(
        d.verdict
            .evidence
            .iter()
            .any(|e| e.contains("cp2: /etc/kubernetes/pki/etcd/peer.crt expired")),
        "{:#?}",
        d.verdict.evidence
    );
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::TlsRejected);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn etcd_stopped_on_one_node() {
    let lab = start(3);
    lab.inject(Fault::StopEtcd("cp2".into())).unwrap();
    let d = diagnose_until(&lab, VerdictCode::EtcdNotRunning, &["ConnectionRefused"]);
    assert_verdict(&d, VerdictCode::EtcdNotRunning);
    assert_eq!(d.verdict.nodes, ["cp2"]);
    assert_quotes_log(&d, &["ConnectionRefused"]);
    assert_eq!(cell(&d, 2380, "cp1", "cp2"), CellState::Refused);
    assert_eq!(cell(&d, 2379, "cp2", "cp2"), CellState::Refused);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn five_nodes_one_isolated() {
    let lab = start(5);
    lab.inject(Fault::Isolate("cp5".into())).unwrap();
    let d = diagnose_until(&lab, VerdictCode::EtcdPeerNetworkPartial, &["= cp5"]);
    assert_verdict(&d, VerdictCode::EtcdPeerNetworkPartial);
    assert_eq!(d.verdict.nodes, ["cp5"]);
    assert_eq!(d.matrices[0].nodes.len(), 5);
    assert_eq!(cell(&d, 2380, "cp1", "cp5"), CellState::Timeout);
    assert_eq!(cell(&d, 2380, "cp1", "cp4"), CellState::Ok);
}
