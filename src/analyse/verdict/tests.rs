//! Table-driven tests of the verdict rules: synthetic probe outputs for a 3-node control plane,
//! one fault each, and the real etcd logs from the lab where the rule quotes them.

use super::*;
use crate::analyse::matrix::CellState;
use crate::probe::etcdlog::LogKind;
use crate::probe::output::*;
use crate::probe::{ReachError, ReachErrorKind};
use crate::supervisor::*;

pub(super) const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];
pub(super) const NAMES: [&str; 3] = ["cp1", "cp2", "cp3"];

/// The KCP wants 3; `present` Machines exist (cp1, cp2, ...), none ready, no VMs.
pub(super) fn facts(present: usize) -> ClusterFacts {
    let nodes = (0..present)
        .map(|i| ControlPlaneNode {
            name: NAMES[i].into(),
            machine: Some(crate::testing::machine(NAMES[i], "Running")),
            vm: None,
            join: Default::default(),
        })
        .collect();
    crate::testing::facts(3, 0, nodes)
}

pub(super) fn path(target: &str, port: u16, own: bool) -> PathCheck {
    PathCheck {
        target: target.into(),
        port,
        own,
        tcp: TcpOutcome::Connected,
        tcp_ms: Some(1),
        tcp_detail: None,
        tls: TlsOutcome::Completed,
        tls_ms: Some(3),
        tls_detail: None,
        http_status: Some(200),
    }
}

/// A healthy node `i` of three.
pub(super) fn healthy_probe(i: usize) -> ProbeOutput {
    let mut paths = Vec::new();
    for (j, ip) in IPS.iter().enumerate() {
        for port in [2379, 2380] {
            paths.push(path(ip, port, i == j));
        }
    }
    ProbeOutput {
        schema_version: PROBE_SCHEMA_VERSION,
        node_ip: IPS[i].into(),
        hostname: Some(NAMES[i].into()),
        ips: vec![IPS[i].into()],
        clock_ms: Some(1_764_662_400_000),
        duration_ms: Some(40),
        etcd: EtcdContainer {
            query: RuntimeQuery::Ok,
            error: None,
            containers: vec![Container {
                id: format!("{i}aaaaaaaaaaaaaaaaaaaa"),
                state: "CONTAINER_RUNNING".into(),
                attempt: Some(0),
                created_at: Some("1764000000000000000".into()),
            }],
            logs: None,
            previous_logs: None,
            previous_logs_file: None,
        },
        kubelet: Kubelet {
            active: Some("active".into()),
            since: None,
            error: None,
        },
        paths,
        certs: vec![CertInfo {
            file: "peer.crt".into(),
            not_before: Some("2026-01-01T00:00:00Z".into()),
            not_after: Some("2027-01-01T00:00:00Z".into()),
            expires_in_s: Some(3_000_000),
            not_yet_valid: Some(false),
            sans: vec![NAMES[i].into(), IPS[i].into()],
            has_node_ip: Some(true),
            error: None,
        }],
        manifest: None,
        health: Health {
            outcome: HealthOutcome::Healthy,
            http_status: Some(200),
            body: Some(r#"{"health":"true"}"#.into()),
            ms: Some(2),
            detail: None,
        },
        members: Default::default(),
        alarms: Default::default(),
        firewall: Default::default(),
        metrics: None,
        api_server: None,
        errors: vec![],
        document_problems: vec![],
        raw: Default::default(),
    }
}

pub(super) fn cluster(probes: Vec<ProbeOutput>) -> Vec<NodeReport> {
    probes
        .into_iter()
        .enumerate()
        .map(|(i, p)| NodeReport {
            name: NAMES[i].into(),
            ip: Some(IPS[i].parse().unwrap()),
            outcome: Ok(p),
            reach_from: None,
            reach: vec![],
            host_key: None,
        })
        .collect()
}

pub(super) fn healthy3() -> Vec<ProbeOutput> {
    (0..3).map(healthy_probe).collect()
}

/// Sets the outcome of `from` dialling `to` on `port`.
pub(super) fn set(
    probes: &mut [ProbeOutput],
    from: usize,
    to: usize,
    port: u16,
    tcp: TcpOutcome,
    tls: TlsOutcome,
) {
    let p = probes[from]
        .paths
        .iter_mut()
        .find(|p| p.target == IPS[to] && p.port == port)
        .unwrap();
    p.tcp = tcp;
    p.tls = tls;
    p.tcp_detail = match tcp {
        TcpOutcome::Timeout => Some("Connection timed out after 3001 milliseconds".into()),
        TcpOutcome::Refused => Some("Failed to connect: Connection refused".into()),
        _ => None,
    };
    if tcp != TcpOutcome::Connected {
        p.tls = TlsOutcome::NotTried;
        p.http_status = None;
    }
}

pub(super) fn peers_all(probes: &mut [ProbeOutput], tcp: TcpOutcome) {
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                for port in [2379, 2380] {
                    set(probes, from, to, port, tcp, TlsOutcome::NotTried);
                }
            }
        }
    }
}

pub(super) fn with_log(mut p: ProbeOutput, text: &str) -> ProbeOutput {
    p.etcd.logs = Some(LogSample {
        container_id: "x".into(),
        text: text.into(),
        lines: text.lines().count() as u32,
        truncated: false,
    });
    p
}

pub(super) fn shared_log(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/etcd-logs/{name}.log",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

pub(super) fn run(probes: Vec<ProbeOutput>) -> Diagnosis {
    diagnose(&facts(3), &cluster(probes), DEFAULT_SINCE)
}

#[test]
fn healthy() {
    let d = run(healthy3());
    assert_eq!(d.verdict.code, VerdictCode::Healthy, "{:#?}", d.verdict);
    assert_eq!(d.matrices.len(), 2);
    assert!(d
        .matrices
        .iter()
        .all(|m| m.cells.iter().all(|c| c.state == CellState::Ok)));
    // Everything that was seen, said: nothing is claimed that was not checked.
    assert_eq!(
        d.verdict.evidence,
        [
            "etcd /health is true on all 3 members",
            "all 18 paths on 2379 and 2380 (each node to itself and to every other) connect and complete TLS",
            "no probe step reported an error",
        ]
    );
    assert!(d.verdict.nodes.is_empty());
}

/// One way of falling short of `Healthy`: a change to a healthy three-node control plane that
/// no earlier rule explains, and the `Inconclusive` it must give.
struct ShortOf {
    name: &'static str,
    change: fn(&mut ClusterFacts, &mut Vec<NodeReport>),
    /// The nodes the verdict names.
    nodes: &'static [&'static str],
    /// A part of the summary.
    summary: &'static str,
    /// The whole evidence, in order.
    evidence: &'static [&'static str],
}

fn probe_mut(nodes: &mut [NodeReport], i: usize) -> &mut ProbeOutput {
    nodes[i].outcome.as_mut().expect("a probed node")
}

const SHORT_OF_HEALTHY: &[ShortOf] = &[
    ShortOf {
        name: "a path the probe has no result for (NotProbed cell)",
        change: |_, nodes| {
            probe_mut(nodes, 0)
                .paths
                .retain(|p| !(p.target == IPS[2] && p.port == 2380));
        },
        nodes: &["cp1"],
        summary: "not everything was seen to work: 1 path not checked",
        evidence: &["not checked: cp1 → cp3:2380 (cp1's probe has no result for 198.18.0.13)"],
    },
    ShortOf {
        name: "a node without an IP (NotProbed cells to it)",
        change: |_, nodes| nodes[2].ip = None,
        nodes: &["cp3"],
        summary: "6 paths not checked",
        evidence: &["not checked: cp1 → cp3:2379, cp2 → cp3:2379, cp3 → cp3:2379, cp1 → cp3:2380, cp2 → cp3:2380, cp3 → cp3:2380 (cp3 has no IP)"],
    },
    ShortOf {
        name: "TLS not tried (no readable peer certificate)",
        change: |_, nodes| {
            let p = probe_mut(nodes, 1);
            for path in &mut p.paths {
                path.tls = TlsOutcome::NotTried;
                path.tls_ms = None;
            }
            p.errors.push(StepError {
                step: "paths".into(),
                message: "no readable ca.crt/peer.crt/peer.key in /etc/kubernetes/pki/etcd: TCP checked, TLS not tried".into(),
            });
        },
        nodes: &["cp2"],
        summary: "TLS not tried on 6 paths; probe errors on cp2",
        evidence: &[
            "TCP connected, TLS handshake not tried: cp2 → cp1:2379, cp2 → cp2:2379, cp2 → cp3:2379, cp2 → cp1:2380, cp2 → cp2:2380, cp2 → cp3:2380",
            "cp2: probe step paths failed: no readable ca.crt/peer.crt/peer.key in /etc/kubernetes/pki/etcd: TCP checked, TLS not tried",
        ],
    },
    ShortOf {
        name: "TLS not tried on one peer path only, no error reported",
        change: |_, nodes| {
            let p = probe_mut(nodes, 2);
            let path = p.paths.iter_mut().find(|x| x.target == IPS[0] && x.port == 2380).unwrap();
            path.tls = TlsOutcome::NotTried;
        },
        nodes: &["cp3"],
        summary: "TLS not tried on 1 path",
        evidence: &["TCP connected, TLS handshake not tried: cp3 → cp1:2380"],
    },
    ShortOf {
        name: "/health did not answer",
        change: |_, nodes| {
            probe_mut(nodes, 2).health = Health {
                outcome: HealthOutcome::Error,
                http_status: None,
                body: None,
                ms: Some(3001),
                detail: Some("https://127.0.0.1:2379/health: Operation timed out after 3001 milliseconds with 0 bytes received".into()),
            };
        },
        nodes: &["cp3"],
        summary: "/health not true on cp3",
        evidence: &["cp3: /health is unanswered: https://127.0.0.1:2379/health: Operation timed out after 3001 milliseconds with 0 bytes received"],
    },
    ShortOf {
        name: "/health not asked (skipped)",
        change: |_, nodes| probe_mut(nodes, 0).health = Health::default(),
        nodes: &["cp1"],
        summary: "/health not true on cp1",
        evidence: &["cp1: /health is not asked"],
    },
    ShortOf {
        name: "a probe step reported an error",
        change: |_, nodes| {
            probe_mut(nodes, 1).errors.push(StepError {
                step: "manifest".into(),
                message: "not readable: /etc/kubernetes/manifests/etcd.yaml".into(),
            });
        },
        nodes: &["cp2"],
        summary: "probe errors on cp2",
        evidence: &["cp2: probe step manifest failed: not readable: /etc/kubernetes/manifests/etcd.yaml"],
    },
    ShortOf {
        name: "a control-plane Machine with no result at all (no earlier rule fires)",
        change: |_, nodes| nodes.truncate(2),
        nodes: &["cp3"],
        summary: "cp3 not probed",
        evidence: &["cp3: a control-plane Machine with no probe result"],
    },
    ShortOf {
        name: "a node's own path fails while every peer path works",
        change: |_, nodes| {
            let p = probe_mut(nodes, 0);
            let own = p.paths.iter_mut().find(|x| x.own && x.port == 2379).unwrap();
            own.tls = TlsOutcome::Stalled;
        },
        nodes: &["cp1"],
        summary: "1 path failing",
        evidence: &["cp1 → cp1:2379: tls-stalled after 1 ms"],
    },
];

/// `Healthy` needs everything seen to work; each way of falling short is `Inconclusive`, naming
/// the node, the path and the check that was not seen.
#[test]
fn anything_short_of_seen_working_is_inconclusive() {
    for case in SHORT_OF_HEALTHY {
        let mut facts = facts(3);
        let mut nodes = cluster(healthy3());
        (case.change)(&mut facts, &mut nodes);
        let v = diagnose(&facts, &nodes, DEFAULT_SINCE).verdict;
        assert_eq!(v.code, VerdictCode::Inconclusive, "{}: {v:#?}", case.name);
        assert_eq!(v.nodes, case.nodes, "{}", case.name);
        assert!(
            v.summary.contains(case.summary),
            "{}: {}",
            case.name,
            v.summary
        );
        assert_eq!(v.evidence, case.evidence, "{}", case.name);
        assert!(
            !v.summary.contains("every VM reaches every other"),
            "{}",
            case.name
        );
        assert!(
            v.next_steps
                .last()
                .unwrap()
                .contains("kubectl describe kcp -n ns"),
            "{}: {:?}",
            case.name,
            v.next_steps
        );
    }
}

/// A TLS handshake that stalls on every peer path is a network verdict before it is a gap.
#[test]
fn stalled_tls_is_still_a_network_verdict_not_a_gap() {
    let mut p = healthy3();
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                set(
                    &mut p,
                    from,
                    to,
                    2380,
                    TcpOutcome::Connected,
                    TlsOutcome::Stalled,
                );
            }
        }
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerLargePacketsDropped, "{v:#?}");
}

/// Several gaps at once: one line each, in the order node, health, paths, probe errors.
#[test]
fn every_gap_is_listed_in_order() {
    let mut nodes = cluster(healthy3());
    probe_mut(&mut nodes, 1).errors.push(StepError {
        step: "host".into(),
        message: "neither 'ip' nor 'hostname -I' to list the node's addresses".into(),
    });
    probe_mut(&mut nodes, 0)
        .paths
        .retain(|p| !(p.target == IPS[1] && p.port == 2379));
    probe_mut(&mut nodes, 2).health.outcome = HealthOutcome::Unhealthy;
    probe_mut(&mut nodes, 2).health.body =
        Some(r#"{"health":"false","reason":"RAFT NO LEADER"}"#.into());
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    assert_eq!(
        v.evidence,
        [
            r#"cp3: /health is false: {"health":"false","reason":"RAFT NO LEADER"}"#,
            "not checked: cp1 → cp2:2379 (cp1's probe has no result for 198.18.0.12)",
            "cp2: probe step host failed: neither 'ip' nor 'hostname -I' to list the node's addresses",
        ]
    );
    assert_eq!(v.nodes, ["cp3", "cp1", "cp2"]);
    assert!(
        v.summary
            .ends_with("/health not true on cp3; 1 path not checked; probe errors on cp2"),
        "{}",
        v.summary
    );
}

/// No node at all: nothing was seen, nothing is healthy.
#[test]
fn no_node_is_inconclusive() {
    let v = diagnose(&crate::testing::facts(0, 0, vec![]), &[], DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    assert_eq!(v.evidence, ["no control-plane node to probe"]);
}

/// The KCP's etcd conditions on the Machines: quoted when not True, for the nodes the verdict is
/// about (every node when it names none), after the verdict's own evidence.
#[test]
fn machine_etcd_conditions_are_quoted_for_the_nodes_the_verdict_is_about() {
    use crate::testing::condition;
    let mut facts = facts(3);
    let conditions = [
        vec![
            condition(
                "EtcdMemberHealthy",
                "False",
                "NotHealthy",
                "Etcd reports alarms: NOSPACE",
            ),
            condition("EtcdPodHealthy", "True", "Running", ""),
        ],
        vec![
            condition(
                "EtcdMemberHealthy",
                "False",
                "EtcdMemberUnhealthy",
                "Etcd member status reports errors: etcdserver: no leader",
            ),
            condition(
                "EtcdPodHealthy",
                "Unknown",
                "ConnectionDown",
                "Last successful probe at\n2025-06-03T08:13:52Z",
            ),
        ],
        vec![condition("EtcdMemberHealthy", "True", "Healthy", "")],
    ];
    for (n, c) in facts.nodes.iter_mut().zip(conditions) {
        n.machine.as_mut().unwrap().etcd_conditions = c;
    }
    let cp2_lines = [
        "cp2: Machine condition EtcdMemberHealthy is False (EtcdMemberUnhealthy: Etcd member status reports errors: etcdserver: no leader)",
        "cp2: Machine condition EtcdPodHealthy is Unknown (ConnectionDown: Last successful probe at 2025-06-03T08:13:52Z)",
    ];
    let cp1_line = "cp1: Machine condition EtcdMemberHealthy is False (NotHealthy: Etcd reports alarms: NOSPACE)";

    // A verdict about cp2 quotes cp2's, after its own evidence, and nobody else's.
    let mut p = healthy3();
    p[1].etcd.containers[0].state = "CONTAINER_EXITED".into();
    for from in 0..3 {
        for port in [2379, 2380] {
            set(
                &mut p,
                from,
                1,
                port,
                TcpOutcome::Refused,
                TlsOutcome::NotTried,
            );
        }
    }
    let v = diagnose(&facts, &cluster(p), DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::EtcdNotRunning, "{v:#?}");
    assert!(
        v.evidence[0].contains("CONTAINER_EXITED"),
        "{:?}",
        v.evidence
    );
    assert_eq!(
        v.evidence[v.evidence.len() - 2..],
        cp2_lines,
        "{:#?}",
        v.evidence
    );
    assert!(
        !v.evidence.iter().any(|e| e.contains("cp1: Machine")),
        "{:#?}",
        v.evidence
    );

    // Healthy is about every node: the Supervisor's view is a stale note, never evidence of
    // the verdict (what was seen is healthy). True ones are never quoted.
    let v = diagnose(&facts, &cluster(healthy3()), DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    let stale = |l: &str| {
        format!("{l}: stale, the Supervisor's last report, not what was seen now (KCP updates it once it reaches the workload API again)")
    };
    assert!(
        !v.evidence.iter().any(|e| e.contains("Machine condition")),
        "{:#?}",
        v.evidence
    );
    let notes: Vec<&String> = v
        .notes
        .iter()
        .filter(|n| n.contains("Machine condition"))
        .collect();
    assert_eq!(
        notes,
        [stale(cp1_line), stale(cp2_lines[0]), stale(cp2_lines[1])]
            .iter()
            .collect::<Vec<_>>(),
        "{:#?}",
        v.notes
    );
    assert!(!v.notes.iter().any(|e| e.contains(" is True")));
}

/// The next steps of a blocked peer network name what can drop packets on the Supervisor's
/// own networking stack: the DFW and the antrea NSGroup on NSX, the VPC's policies and default
/// east-west rule on VPC, the physical network on VDS (never NSX there); each, when unknown.
#[test]
fn blocked_next_steps_follow_the_networking_stack() {
    let mut p = healthy3();
    peers_all(&mut p, TcpOutcome::Timeout);
    let nodes = cluster(p);
    let steps = |stack: NetworkStack| {
        let mut f = facts(3);
        f.apis.network_stack = StackFact {
            stack,
            evidence: String::new(),
        };
        let d = diagnose(&f, &nodes, DEFAULT_SINCE);
        assert_eq!(
            d.verdict.code,
            VerdictCode::EtcdPeerNetworkBlocked,
            "{stack}"
        );
        d.verdict.next_steps.join("\n")
    };
    let nsx = steps(NetworkStack::Nsx);
    assert!(
        nsx.contains("distributed firewall") && nsx.contains("antrea NSGroup"),
        "{nsx}"
    );
    assert!(!nsx.contains("VLAN") && !nsx.contains("VPC"), "{nsx}");
    let vpc = steps(NetworkStack::Vpc);
    assert!(
        vpc.contains("VPC's security policies") && vpc.contains("default east-west"),
        "{vpc}"
    );
    assert!(!vpc.contains("antrea"), "{vpc}");
    let vds = steps(NetworkStack::Vds);
    for needed in ["physical firewall", "security settings", "trunk"] {
        assert!(vds.contains(needed), "{needed}: {vds}");
    }
    assert!(
        !vds.contains("distributed firewall") && !vds.contains("antrea"),
        "{vds}"
    );
    let unknown = steps(NetworkStack::Unknown);
    for needed in ["distributed firewall", "VPC", "trunk"] {
        assert!(unknown.contains(needed), "{needed}: {unknown}");
    }
}

#[test]
fn all_peers_dropped_is_blocked_and_quotes_the_log() {
    let mut p = healthy3();
    peers_all(&mut p, TcpOutcome::Timeout);
    let p: Vec<_> = p
        .into_iter()
        .enumerate()
        .map(|(i, p)| with_log(p, &shared_log(&format!("drop-all-peers-cp{}", i + 1))))
        .collect();
    let d = run(p);
    let v = &d.verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(v.evidence[0].starts_with("own etcd"), "{:?}", v.evidence);
    assert!(
        v.evidence
            .iter()
            .any(|e| e.contains("2380: timeout: cp1 → cp2")),
        "{:?}",
        v.evidence
    );
    assert!(
        v.evidence.iter().any(|e| e.contains("cp1 etcd log:")
            && e.contains("i/o timeout (")
            && e.contains("198.18.0.12:2380 = cp2")),
        "{:#?}",
        v.evidence
    );
    assert!(
        v.next_steps.iter().any(|s| s.contains("4.2")),
        "NSX upgrade hint"
    );
    let m = &d.matrices[1];
    assert_eq!(m.cell("cp1", "cp2").unwrap().state, CellState::Timeout);
    assert_eq!(m.cell("cp1", "cp1").unwrap().state, CellState::Ok);
}

#[test]
fn all_peers_refused_with_etcd_running_is_a_rejecting_firewall() {
    let mut p = healthy3();
    peers_all(&mut p, TcpOutcome::Refused);
    let p: Vec<_> = p
        .into_iter()
        .enumerate()
        .map(|(i, p)| with_log(p, &shared_log(&format!("reject-all-peers-cp{}", i + 1))))
        .collect();
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerPortRefused, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.contains("× connection refused")),
        "{:#?}",
        v.evidence
    );
}

#[test]
fn refused_by_a_stopped_member_is_not_running_not_a_firewall() {
    let mut p = healthy3();
    p[1].etcd.containers[0].state = "CONTAINER_EXITED".into();
    for port in [2379, 2380] {
        for from in 0..3 {
            set(
                &mut p,
                from,
                1,
                port,
                TcpOutcome::Refused,
                TlsOutcome::NotTried,
            );
        }
    }
    p[1].health.outcome = HealthOutcome::Error;
    let p: Vec<_> = p
        .into_iter()
        .enumerate()
        .map(|(i, p)| with_log(p, &shared_log(&format!("cp2-etcd-stopped-cp{}", i + 1))))
        .collect();
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdNotRunning, "{v:#?}");
    assert_eq!(v.nodes, ["cp2"]);
    assert!(
        v.evidence.iter().any(|e| e.contains("CONTAINER_EXITED")),
        "{:?}",
        v.evidence
    );
    assert!(
        v.evidence
            .iter()
            .any(|e| e.contains("cp1 etcd log") && e.contains("= cp2")),
        "{:#?}",
        v.evidence
    );
}

#[test]
fn crash_looping_member() {
    let mut p = healthy3();
    p[2].etcd.containers[0].state = "CONTAINER_EXITED".into();
    p[2].etcd.containers[0].attempt = Some(7);
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdCrashLooping, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
}

#[test]
fn an_old_restart_count_on_a_running_member_is_not_crash_looping() {
    let mut p = healthy3();
    p[2].etcd.containers[0].attempt = Some(4); // created long before the probe's clock
    assert_eq!(run(p).verdict.code, VerdictCode::Healthy);
}

#[test]
fn isolated_node_is_partial_and_named() {
    let mut p = healthy3();
    for other in [0, 1] {
        for port in [2379, 2380] {
            set(
                &mut p,
                2,
                other,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
            set(
                &mut p,
                other,
                2,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
        }
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    assert!(v.summary.contains("cp3 cut off"), "{}", v.summary);
}

#[test]
fn single_blocked_port() {
    let mut p = healthy3();
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                set(
                    &mut p,
                    from,
                    to,
                    2380,
                    TcpOutcome::Timeout,
                    TlsOutcome::NotTried,
                );
            }
        }
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "{v:#?}");
    assert!(v.summary.contains("port 2380 is blocked"), "{}", v.summary);
    assert!(!v.summary.contains("cut off"), "{}", v.summary);
}

#[test]
fn one_way_path() {
    let mut p = healthy3();
    for port in [2379, 2380] {
        set(
            &mut p,
            0,
            1,
            port,
            TcpOutcome::Timeout,
            TlsOutcome::NotTried,
        );
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkPartial, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("one-way: cp1 → cp2:2380 timeout")),
        "{:#?}",
        v.evidence
    );
    assert_eq!(v.nodes, ["cp1", "cp2"]);
}

#[test]
fn tls_stalls_are_large_packets() {
    let mut p = healthy3();
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                for port in [2379, 2380] {
                    set(
                        &mut p,
                        from,
                        to,
                        port,
                        TcpOutcome::Connected,
                        TlsOutcome::Stalled,
                    );
                }
            }
        }
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerLargePacketsDropped, "{v:#?}");
    assert!(v.next_steps.iter().any(|s| s.contains("MTU")));
}

#[test]
fn expired_peer_certificate() {
    let mut p = healthy3();
    p[1].certs[0].expires_in_s = Some(-3600);
    p[1].certs[0].not_after = Some("2026-12-02T12:00:00Z".into());
    for other in [0, 2] {
        set(
            &mut p,
            other,
            1,
            2380,
            TcpOutcome::Connected,
            TlsOutcome::Rejected,
        );
        p[other]
            .paths
            .iter_mut()
            .find(|x| x.target == IPS[1] && x.port == 2380)
            .unwrap()
            .tls_detail = Some("SSL certificate problem: certificate has expired".into());
    }
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdCertificateProblem, "{v:#?}");
    assert_eq!(v.nodes, ["cp2"]);
    assert!(
        v.evidence
            .iter()
            .any(|e| e.contains("peer.crt expired on 2026-12-02T12:00:00Z")),
        "{:?}",
        v.evidence
    );
    assert!(v
        .evidence
        .iter()
        .any(|e| e.contains("certificate has expired")));
}

#[test]
fn san_without_the_node_ip() {
    let mut p = healthy3();
    p[0].certs[0].has_node_ip = Some(false);
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdCertificateProblem);
    assert!(
        v.evidence[0].contains("does not name the node's IP 198.18.0.11"),
        "{:?}",
        v.evidence
    );
}

#[test]
fn missing_machines_come_first() {
    let nodes = cluster(healthy3());
    let v = diagnose(&facts(2), &nodes[..2], DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::ControlPlaneMachinesMissing, "{v:#?}");
}

/// A missing Machine does not hide that the members left cannot reach each other.
#[test]
fn missing_machines_do_not_hide_the_network() {
    let mut p = healthy3();
    peers_all(&mut p, TcpOutcome::Timeout);
    let nodes = cluster(p);
    let v = diagnose(&facts(2), &nodes[..2], DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::EtcdPeerNetworkBlocked, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("also ControlPlaneMachinesMissing: 1 of 3")),
        "{v:#?}"
    );
    assert!(v.next_steps[0].contains("fixing the missing Machines alone does not restore quorum"));
}

#[test]
fn unprobed_node() {
    let mut nodes = cluster(healthy3());
    nodes[2].outcome = Err(ReachError {
        kind: ReachErrorKind::Unreachable,
        message: "ssh: connect to host 198.18.0.13 port 22: Connection timed out".into(),
    });
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::NodesUnreachable, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    assert!(v.evidence[0].contains("port 22"));
}

/// One refusal for every node (Pod Security refused each probe pod alike): said once, with
/// how many nodes it is, and the first next step points at its remedy; two reasons stay two
/// lines, each with its nodes.
#[test]
fn one_refusal_for_every_node_is_said_once() {
    let refused = ReachError {
        kind: ReachErrorKind::Rejected,
        message: "the probe pod was rejected: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true); use --pod-namespace".into(),
    };
    let mut nodes = cluster(healthy3());
    for n in &mut nodes {
        n.outcome = Err(refused.clone());
    }
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::NodesUnreachable, "{v:#?}");
    let said: Vec<&String> = v
        .evidence
        .iter()
        .filter(|e| e.contains("PodSecurity"))
        .collect();
    assert_eq!(
        said,
        [&format!("all 3 nodes: refused: {}", refused.message)],
        "{v:#?}"
    );
    assert!(
        v.next_steps[0].starts_with("All 3 nodes failed for the one reason above"),
        "{v:#?}"
    );

    nodes[2].outcome = Err(ReachError {
        kind: ReachErrorKind::Unreachable,
        message: "no answer".into(),
    });
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("2 nodes (cp1, cp2): refused: ")),
        "{v:#?}"
    );
    assert!(
        v.evidence
            .iter()
            .any(|e| e == "cp3: unreachable: no answer"),
        "{v:#?}"
    );
    assert!(
        v.next_steps[0].starts_with("Check the reason per node"),
        "{v:#?}"
    );
}

/// cp2's address answered with cp1's document (a duplicate IP, an ssh alias to the wrong VM):
/// the driver's identity check makes it an unreached node, and a healthy-looking set of documents
/// is not Healthy.
#[test]
fn a_node_answering_as_another_is_unreached_not_healthy() {
    let mut p = healthy3();
    p[1] = healthy_probe(0);
    let nodes: Vec<NodeReport> = cluster(p)
        .into_iter()
        .map(|n| NodeReport {
            outcome: crate::probe::identity::confirm(
                n.outcome.clone(),
                n.ip.expect("every node has an IP"),
                &[&n.name],
            ),
            ..n
        })
        .collect();
    let e = nodes[1].outcome.as_ref().unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::IdentityMismatch);
    assert!(
        e.message.contains("198.18.0.11") && e.message.contains("198.18.0.12"),
        "{}",
        e.message
    );
    assert!(nodes[0].outcome.is_ok() && nodes[2].outcome.is_ok());
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::NodesUnreachable, "{v:#?}");
    assert_eq!(v.nodes, ["cp2"]);
    assert!(
        v.evidence[0].starts_with("cp2: another machine answered: "),
        "{:?}",
        v.evidence
    );
    // Without the check, the same documents would have read as a healthy control plane.
    let mut unchecked = healthy3();
    unchecked[1] = healthy_probe(0);
    assert_eq!(run(unchecked).verdict.code, VerdictCode::Healthy);
}

/// A port the Supervisor could not tell is never counted as reached.
#[test]
fn unknown_ports_are_not_reached_ports() {
    use crate::probe::{PortReach, PortState};
    let mut nodes = cluster(healthy3());
    nodes[2].outcome = Err(ReachError {
        kind: ReachErrorKind::Unreachable,
        message: "ssh: connect to host 198.18.0.13 port 22: Connection timed out".into(),
    });
    nodes[2].reach = [22, 2379, 2380, 6443]
        .map(|port| PortReach {
            port,
            state: if port == 22 {
                PortState::Open
            } else {
                PortState::Unknown
            },
        })
        .to_vec();
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    let line = v
        .evidence
        .iter()
        .find(|l| l.contains("from the Supervisor"))
        .expect("the Supervisor's view is evidence");
    assert!(!line.contains("every port"), "{line}");
    assert!(!line.contains("nothing reaches"), "{line}");
    assert!(
        line.contains("1 of 4") && line.contains("3 could not be told"),
        "{line}"
    );
    // Every port seen open is still said so.
    for r in &mut nodes[2].reach {
        r.state = PortState::Open;
    }
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert!(
        v.evidence.iter().any(|l| l.contains("reaches every port")),
        "{:?}",
        v.evidence
    );
    // The ssh route's view from this machine, nothing answering: the same judgement in its
    // own words (the path from here, not "cut off from the Supervisor").
    nodes[2].reach_from = Some(crate::probe::Vantage::ThisMachine);
    for r in &mut nodes[2].reach {
        r.state = PortState::Timeout;
    }
    let v = diagnose(&facts(3), &nodes, DEFAULT_SINCE).verdict;
    assert!(
        v.evidence.iter().any(|l| l == "cp3 from this machine: 22 timeout, 2379 timeout, 2380 timeout, 6443 timeout: nothing of this VM answers from here (powered off, hung, or the path from this machine to it cut)"),
        "{:?}",
        v.evidence
    );
    assert!(!v.evidence.iter().any(|l| l.contains("from the Supervisor")));
}

#[test]
fn member_mismatch_with_a_working_network() {
    let line = r#"{"level":"warn","ts":"2026-12-02T08:25:49.000Z","caller":"rafthttp/http.go:500","msg":"request cluster ID mismatch","local-member-id":"aa","local-member-cluster-id":"c1","remote-peer-id":"bb","remote-peer-cluster-id":"c2"}"#;
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), line);
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(v.evidence[0].contains("cluster ID mismatch"), "{v:#?}");
}

#[test]
fn nospace_from_health() {
    let mut p = healthy3();
    p[1].health = Health {
        outcome: HealthOutcome::Unhealthy,
        http_status: Some(503),
        body: Some(r#"{"health":"false","reason":"ALARM NOSPACE"}"#.into()),
        ms: Some(2),
        detail: None,
    };
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdNoSpace, "{v:#?}");
    assert_eq!(v.nodes, ["cp2"]);
}

#[test]
fn slow_disk_from_logs() {
    let line = r#"{"level":"warn","ts":"2026-12-02T08:25:49.000Z","caller":"wal/wal.go:802","msg":"slow fdatasync","took":"1.5s","expected-duration":"1s"}"#;
    let mut p = healthy3();
    p[2] = with_log(p[2].clone(), &[line; 3].join("\n"));
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdSlowDisk, "{v:#?}");
    // One is an event (a snapshot, a vMotion stun): a note on a Healthy verdict.
    let mut p = healthy3();
    p[2] = with_log(p[2].clone(), line);
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes
            .iter()
            .any(|n| n.starts_with("cp3: 1× slow fdatasync in the last 15m")),
        "{v:#?}"
    );
}

#[test]
fn unhealthy_without_explanation_is_inconclusive() {
    let mut p = healthy3();
    p[0].health = Health {
        outcome: HealthOutcome::Unhealthy,
        http_status: Some(503),
        body: Some(r#"{"health":"false"}"#.into()),
        ms: Some(2),
        detail: None,
    };
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    assert!(v.evidence[0].contains("cp1: /health is false"));
}

#[test]
fn late_heartbeats_after_a_network_outage_are_not_a_slow_disk() {
    let late = r#"{"level":"warn","ts":"2026-12-02T08:26:00.000Z","caller":"etcdserver/raft.go:390","msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","to":"aa","heartbeat-interval":"100ms","expected-duration":"200ms","exceeded-duration":"1s"}"#;
    let outage = shared_log("drop-all-peers-cp1");
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), &format!("{outage}\n{late}\n{late}\n{late}\n"));
    assert_eq!(run(p).verdict.code, VerdictCode::Healthy);
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), &format!("{late}\n{late}\n{late}\n"));
    assert_eq!(run(p).verdict.code, VerdictCode::EtcdSlowDisk);
}

/// The leader of a 4-member cluster late once (seen in the lab under CPU load: 5 ms past the
/// 200 ms) writes 3 lines, one per follower: one stall, not a slow disk. Three stalls are.
#[test]
fn a_late_heartbeat_is_counted_once_not_once_per_follower() {
    let late = |t: &str, to: &str| {
        format!(
            r#"{{"level":"warn","ts":"2026-12-02T08:26:0{t}.271Z","caller":"etcdserver/raft.go:369","msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","to":"{to}","heartbeat-interval":"100ms","expected-duration":"200ms","exceeded-duration":"5.662114ms"}}"#
        )
    };
    let stall = |t: &str| {
        ["a0efed2619cd10db", "14569749fa01776e", "3a57933972cb5131"]
            .map(|to| late(t, to))
            .join("\n")
    };
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), &stall("1"));
    let d = run(p);
    assert_eq!(d.verdict.code, VerdictCode::Healthy, "{:#?}", d.verdict);
    let f = d.logs[0].summary.finding(LogKind::HeartbeatLate).unwrap();
    assert_eq!((f.count, f.peer_ids.len()), (3, 3));
    let mut p = healthy3();
    p[0] = with_log(
        p[0].clone(),
        &[stall("1"), stall("3"), stall("5")].join("\n"),
    );
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdSlowDisk, "{v:#?}");
    assert_eq!(v.nodes, ["cp1"]);
}

/// A rolling update (KCP replacing every machine) leaves "removed member" Info lines in every
/// member's log: routine, not a mismatch. Only a removed member that still talks is one.
#[test]
fn a_rolling_update_is_not_a_member_mismatch() {
    // etcd 3.5's membership/cluster.go line, one per replaced machine, on every member.
    let removed = |i: u8, id: &str| {
        format!(
            r#"{{"level":"info","ts":"2026-12-02T08:2{i}:49.000Z","caller":"membership/cluster.go:472","msg":"removed member","cluster-id":"9fcc4ae5a1c5c9e4","local-member-id":"71ea0ea03f1cc0b1","removed-remote-peer-id":"{id}","removed-remote-peer-urls":["https://198.18.0.2{i}:2380"]}}"#
        )
    };
    let log = [
        removed(1, "0a57933972cb5131"),
        removed(2, "1a57933972cb5131"),
        removed(3, "2a57933972cb5131"),
    ]
    .join("\n");
    let mut p = healthy3();
    for probe in p.iter_mut() {
        *probe = with_log(probe.clone(), &log);
    }
    let d = run(p);
    assert_eq!(d.verdict.code, VerdictCode::Healthy, "{:#?}", d.verdict);
    let f = d.logs[0]
        .summary
        .finding(LogKind::MemberRemovedInfo)
        .unwrap();
    assert_eq!(f.count, 3);
    assert!(d.logs[0].summary.finding(LogKind::MemberRemoved).is_none());

    // Its last dials right after its removal (it stops within about a second) are routine.
    let tail = r#"{"level":"warn","ts":"2026-12-02T08:23:50.000Z","caller":"rafthttp/http.go:394","msg":"rejected stream from remote peer because it was removed","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-from":"2a57933972cb5131"}"#;
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), &format!("{log}\n{tail}"));
    let d = run(p);
    assert_eq!(d.verdict.code, VerdictCode::Healthy, "{:#?}", d.verdict);
    assert!(d.logs[0].summary.finding(LogKind::MemberRemoved).is_some());

    // The old member still dialling minutes after its removal is a mismatch.
    let rejected = r#"{"level":"warn","ts":"2026-12-02T08:29:49.000Z","caller":"rafthttp/http.go:394","msg":"rejected stream from remote peer because it was removed","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-from":"2a57933972cb5131"}"#;
    let mut p = healthy3();
    p[0] = with_log(p[0].clone(), &format!("{log}\n{rejected}"));
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(v.nodes, ["cp1"]);
    assert!(
        v.evidence[0].contains("removed member still talking"),
        "{:?}",
        v.evidence
    );
}

/// An IP address reused by a new VM: the others' messages for the old member ID reach the new one.
#[test]
fn a_reused_ip_is_a_member_mismatch() {
    let line = r#"{"level":"warn","ts":"2026-12-02T08:25:49.000Z","caller":"etcdserver/server.go:1001","msg":"rejected Raft message to mismatch member","local-member-id":"71ea0ea03f1cc0b1","mismatch-member-id":"3a57933972cb5131"}"#;
    let mut p = healthy3();
    p[1] = with_log(p[1].clone(), line);
    let v = run(p).verdict;
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.evidence[0].contains("message for another member ID"),
        "{:?}",
        v.evidence
    );
    // A member that only lags behind a membership change is not one by itself.
    let line = r#"{"level":"warn","ts":"2026-12-02T08:25:49.000Z","caller":"rafthttp/http.go:413","msg":"failed to find remote peer in cluster","local-member-id":"71ea0ea03f1cc0b1","remote-peer-id-stream-handler":"71ea0ea03f1cc0b1","remote-peer-id-from":"a0efed2619cd10db","cluster-id":"9fcc4ae5a1c5c9e4"}"#;
    let mut p = healthy3();
    p[1] = with_log(p[1].clone(), line);
    assert_eq!(run(p).verdict.code, VerdictCode::Healthy);
}

/// The network verdicts say whether the members know a leader, from their raft lines.
#[test]
fn network_verdicts_quote_the_leader_view() {
    // etcd 3.5.1, every peer path dropped: every member lost its leader.
    let mut p = healthy3();
    peers_all(&mut p, TcpOutcome::Timeout);
    let p: Vec<_> = p
        .into_iter()
        .enumerate()
        .map(|(i, p)| with_log(p, &shared_log(&format!("v3.5/drop-all-peers-cp{}", i + 1))))
        .collect();
    let d = run(p);
    assert_eq!(d.verdict.code, VerdictCode::EtcdPeerNetworkBlocked);
    assert!(
        d.verdict
            .evidence
            .contains(&"etcd logs: no leader since 2026-12-03T08:40:25Z on all nodes".to_string()),
        "{:#?}",
        d.verdict.evidence
    );
    // etcd 3.5.1, cp3 cut off: cp1 and cp2 keep cp2 as leader, cp3 has none.
    let mut p = healthy3();
    for other in [0, 1] {
        for port in [2379, 2380] {
            set(
                &mut p,
                2,
                other,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
            set(
                &mut p,
                other,
                2,
                port,
                TcpOutcome::Timeout,
                TlsOutcome::NotTried,
            );
        }
    }
    let p: Vec<_> = p
        .into_iter()
        .enumerate()
        .map(|(i, p)| with_log(p, &shared_log(&format!("v3.5/cp3-isolated-cp{}", i + 1))))
        .collect();
    let d = run(p);
    assert_eq!(d.verdict.code, VerdictCode::EtcdPeerNetworkPartial);
    assert!(
        d.verdict.evidence.contains(&"etcd logs: no leader on cp3 since 2026-12-03T08:41:15Z; leader cp2 known on cp1 since 2026-12-03T08:41:11Z, cp2 since 2026-12-03T08:41:11Z".to_string()),
        "{:#?}",
        d.verdict.evidence
    );
}

/// Every code has a rule, and the rules that share a code agree on what it means: the table is
/// the one place a code's metadata is read from.
#[test]
fn every_code_has_one_meaning_in_the_table() {
    use strum::VariantArray;
    for code in VerdictCode::VARIANTS {
        let rules: Vec<&Rule> = code.rules().collect();
        assert!(!rules.is_empty(), "{code} has no rule");
        for r in &rules[1..] {
            assert_eq!(r.category, rules[0].category, "{code}");
            assert_eq!(r.yields_to_network, rules[0].yields_to_network, "{code}");
            assert_eq!(
                r.names_policies.contains(code),
                rules[0].names_policies.contains(code),
                "{code}"
            );
            assert_eq!(r.says, rules[0].says, "{code}");
        }
    }
    for r in RULES {
        for c in r.names_policies {
            assert!(
                r.codes.contains(c),
                "{c} names policies but is not the rule's"
            );
        }
    }
    // Healthy is the last rule that can decide, Inconclusive the fallback after it.
    let last: Vec<&[VerdictCode]> = RULES.iter().rev().take(2).map(|r| r.codes).collect();
    assert_eq!(
        last,
        [
            &[VerdictCode::Inconclusive][..],
            &[VerdictCode::Healthy][..]
        ]
    );
}

/// The deciding nodes' paths, read off the matrix of every node, are the matrix built over
/// those nodes alone (the rules' view must not depend on who else was probed).
#[test]
fn the_deciding_view_is_the_matrix_of_the_deciding_nodes() {
    let mut probes = healthy3();
    set(
        &mut probes,
        0,
        2,
        2380,
        TcpOutcome::Timeout,
        TlsOutcome::NotTried,
    );
    set(
        &mut probes,
        2,
        1,
        2379,
        TcpOutcome::Refused,
        TlsOutcome::NotTried,
    );
    set(
        &mut probes,
        1,
        0,
        2380,
        TcpOutcome::Timeout,
        TlsOutcome::NotTried,
    );
    let all = cluster(probes);
    let keep = ["cp1", "cp3"];
    let some: Vec<NodeReport> = all
        .iter()
        .filter(|n| keep.contains(&n.name.as_str()))
        .cloned()
        .collect();
    for port in [2379, 2380] {
        let view = deciding_view(&matrix::build(&all, port), |n| keep.contains(&n));
        assert_eq!(view, matrix::build(&some, port), "port {port}");
        assert_eq!(view.nodes, keep);
    }
}

// ---- 11. the API servers and the endpoint in front of them ------------------------------------

mod api_server_tests {
    use super::*;
    use crate::workload::{ApiState, WorkloadApi};

    /// The probes' clock: 2025-12-02T08:00:00Z.
    const NOW_S: i64 = 1_764_662_400;

    fn pem(not_before: i64, not_after: i64) -> String {
        let mut params = rcgen::CertificateParams::new(vec!["kubernetes".into()]).unwrap();
        params.not_before = time::OffsetDateTime::from_unix_timestamp(not_before).unwrap();
        params.not_after = time::OffsetDateTime::from_unix_timestamp(not_after).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn raw(status: Option<u16>, text: &str) -> RawRead {
        RawRead {
            outcome: if status.is_some() || !text.is_empty() {
                QueryOutcome::Ok
            } else {
                QueryOutcome::Error
            },
            http_status: status,
            ms: Some(3),
            text: (!text.is_empty()).then(|| text.to_string()),
            truncated: false,
            detail: Some(match status {
                Some(_) => "https://127.0.0.1:6443/readyz?verbose".into(),
                None => "https://127.0.0.1:6443/readyz?verbose: curl: (7) Failed to connect to 127.0.0.1 port 6443 after 0 ms: Couldn't connect to server".into(),
            }),
        }
    }

    const RUNNING: &str = r#"{"containers":[{"id":"abc1","metadata":{"name":"kube-apiserver","attempt":0},"state":"CONTAINER_RUNNING","createdAt":"1764662300000000000"}]}"#;
    const CRASHLOOP: &str = r#"{"containers":[{"id":"abc2","metadata":{"name":"kube-apiserver","attempt":5},"state":"CONTAINER_EXITED","createdAt":"1764662300000000000"}]}"#;
    const READY: &str = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n";
    const ETCD_FAILED: &str =
        "[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n";
    const BIND: &str = "E1202 07:59:50.000000       1 run.go:72] \"command failed\" err=\"failed to create listener: failed to listen on 0.0.0.0:6443: listen tcp 0.0.0.0:6443: bind: address already in use\"\n";

    fn server(ps: &str, readyz: RawRead, cert: String, log: &str) -> ApiServerRead {
        ApiServerRead {
            containers: raw(None, ps),
            logs: Some(LogSample {
                container_id: "abc".into(),
                text: log.into(),
                lines: 1,
                truncated: false,
            }),
            readyz,
            cert: raw(None, &cert),
        }
    }

    fn ready() -> ApiServerRead {
        server(
            RUNNING,
            raw(Some(200), READY),
            pem(NOW_S - 86_400, NOW_S + 86_400 * 300),
            "",
        )
    }

    fn workload(state: ApiState) -> WorkloadApi {
        WorkloadApi {
            state,
            server: Some("https://198.18.0.10:6443".into()),
            path: Some("/readyz".into()),
            http_status: (state == ApiState::Reachable).then_some(200),
            elapsed_ms: Some(5000),
            detail: match state {
                ApiState::Reachable => "/readyz answered 200".into(),
                ApiState::Unknown => "secret \"tkc-kubeconfig\" not found in namespace \"ns\": cannot check the workload API".into(),
                _ => "no answer within 5s".into(),
            },
            checked_at: None,
            before_probes: None,
        }
    }

    fn judge(servers: Vec<Option<ApiServerRead>>, api: ApiState) -> Verdict {
        let probes = healthy3()
            .into_iter()
            .zip(servers)
            .map(|(mut p, s)| {
                p.api_server = s;
                p
            })
            .collect();
        let api = workload(api);
        diagnose_at(
            &facts_all_running(),
            &cluster(probes),
            DEFAULT_SINCE,
            None,
            Some(&api),
        )
        .verdict
    }

    fn facts_all_running() -> ClusterFacts {
        facts(3)
    }

    #[test]
    fn healthy_only_with_the_workload_api_answering() {
        let v = judge(
            vec![Some(ready()), Some(ready()), Some(ready())],
            ApiState::Reachable,
        );
        assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
        assert!(v.summary.contains("the workload API answers"), "{v:#?}");
        assert!(v.evidence.iter().any(
            |e| e == "the workload API https://198.18.0.10:6443 answers: /readyz answered 200"
        ));
        // Older probes read no API server: Healthy still needs the workload API, not them.
        let v = judge(vec![None, None, None], ApiState::Reachable);
        assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    }

    #[test]
    fn a_dark_endpoint_in_front_of_ready_api_servers_names_the_load_balancer() {
        let v = judge(
            vec![Some(ready()), Some(ready()), Some(ready())],
            ApiState::Timeout,
        );
        assert_eq!(v.code, VerdictCode::ApiEndpointUnreachable, "{v:#?}");
        assert!(v.summary.contains("https://198.18.0.10:6443"), "{v:#?}");
        assert_eq!(
            v.evidence[0],
            "the workload API https://198.18.0.10:6443 does not answer within 5s"
        );
        assert!(
            v.evidence[1].contains("cp1 198.18.0.11:6443 (/readyz passed on the node)")
                && v.evidence[1].contains("cp3 198.18.0.13:6443"),
            "{v:#?}"
        );
        let steps = v.next_steps.join("\n");
        for lb in ["NSX Manager", "Avi", "HAProxy", "virtualmachineservices"] {
            assert!(steps.contains(lb), "{lb}: {steps}");
        }
    }

    /// The ssh route's view of 6443 from this machine reads as the Supervisor's does, with its
    /// own words; a 6443 that does not open from here is never held against an API server the
    /// node saw ready (the verdict stays the load balancer's). No view at all (the pod route) is
    /// said too.
    #[test]
    fn this_machines_view_of_6443_never_counts_against_an_api_server() {
        use crate::probe::{PortReach, PortState, Vantage};
        let probes: Vec<_> = healthy3()
            .into_iter()
            .map(|mut p| {
                p.api_server = Some(ready());
                p
            })
            .collect();
        let mut nodes = cluster(probes);
        for (i, n) in nodes.iter_mut().enumerate() {
            n.reach_from = Some(Vantage::ThisMachine);
            n.reach = vec![PortReach {
                port: 6443,
                state: if i == 2 {
                    PortState::Timeout
                } else {
                    PortState::Open
                },
            }];
        }
        let api = workload(ApiState::Timeout);
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&api)).verdict;
        assert_eq!(v.code, VerdictCode::ApiEndpointUnreachable, "{v:#?}");
        assert!(
            v.evidence[1].contains(
                "cp2 198.18.0.12:6443 (/readyz passed on the node, open from this machine)"
            ) && v.evidence[1].contains(
                "cp3 198.18.0.13:6443 (/readyz passed on the node, timeout from this machine)"
            ),
            "{v:#?}"
        );
        assert!(
            v.evidence.iter().any(|e| e == "from this machine, 6443 does not open on cp3: the path from here to the VMs drops it (this says nothing against those API servers, ready on their nodes)"),
            "{v:#?}"
        );
        assert!(
            !v.evidence.join("\n").contains("from the Supervisor"),
            "{v:#?}"
        );
        // No view from outside the VMs: said, not left out.
        for n in &mut nodes {
            n.reach.clear();
            n.reach_from = None;
        }
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&api)).verdict;
        assert!(
            v.evidence
                .iter()
                .any(|e| e
                    .starts_with("the VMs' 6443 was not checked from outside them on this route")),
            "{v:#?}"
        );
    }

    /// The load balancer named is the one the Supervisor's networking stack uses: NSX's
    /// virtual server (or Avi), the VPC's load balancer (or Avi), HAProxy or Avi on VDS; each
    /// when the stack is unknown. Never HAProxy on NSX, never the NSX load balancer on VDS.
    #[test]
    fn the_load_balancer_named_follows_the_networking_stack() {
        let probes: Vec<_> = healthy3()
            .into_iter()
            .map(|mut p| {
                p.api_server = Some(ready());
                p
            })
            .collect();
        let nodes = cluster(probes);
        let api = workload(ApiState::Timeout);
        let steps = |stack: NetworkStack| {
            let mut f = facts(3);
            f.apis.network_stack = StackFact {
                stack,
                evidence: String::new(),
            };
            let v = diagnose_at(&f, &nodes, DEFAULT_SINCE, None, Some(&api)).verdict;
            assert_eq!(v.code, VerdictCode::ApiEndpointUnreachable, "{stack}");
            v.next_steps.join("\n")
        };
        let nsx = steps(NetworkStack::Nsx);
        assert!(
            nsx.contains("NSX Manager, Networking > Load Balancing > Virtual Servers: the virtual server whose IP is https://198.18.0.10:6443's")
                && nsx.contains("Avi"),
            "{nsx}"
        );
        assert!(!nsx.contains("HAProxy") && !nsx.contains("VPC"), "{nsx}");
        let vpc = steps(NetworkStack::Vpc);
        assert!(vpc.contains("the VPC's load balancer"), "{vpc}");
        assert!(!vpc.contains("HAProxy"), "{vpc}");
        let vds = steps(NetworkStack::Vds);
        assert!(
            vds.contains("HAProxy appliance") && vds.contains("Avi Controller"),
            "{vds}"
        );
        assert!(!vds.contains("NSX Manager"), "{vds}");
        let unknown = steps(NetworkStack::Unknown);
        for lb in ["NSX Manager", "the VPC's load balancer", "HAProxy", "Avi"] {
            assert!(unknown.contains(lb), "{lb}: {unknown}");
        }
        assert!(
            unknown.contains("The networking stack is unknown"),
            "{unknown}"
        );
        // Every stack still names the VirtualMachineService to look at first.
        for s in [nsx, vpc, vds] {
            assert!(
                s.contains("kubectl get virtualmachineservices,services -n"),
                "{s}"
            );
        }
    }

    #[test]
    fn the_supervisors_view_of_6443_is_in_the_evidence() {
        let probes = healthy3()
            .into_iter()
            .map(|mut p| {
                p.api_server = Some(ready());
                p
            })
            .collect();
        let mut nodes = cluster(probes);
        for n in &mut nodes {
            n.reach = vec![crate::probe::PortReach {
                port: 6443,
                state: crate::probe::PortState::Open,
            }];
        }
        let api = workload(ApiState::Refused);
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&api)).verdict;
        assert_eq!(v.code, VerdictCode::ApiEndpointUnreachable, "{v:#?}");
        assert!(
            v.evidence[1].contains(
                "cp2 198.18.0.12:6443 (/readyz passed on the node, open from the Supervisor)"
            ),
            "{v:#?}"
        );
    }

    /// The workload API checked again after the probes: the verdict judges from the later
    /// check, and the evidence says when it changed (etcd healed while the probes ran).
    #[test]
    fn the_later_workload_check_decides_and_the_change_is_said() {
        let probes: Vec<_> = healthy3()
            .into_iter()
            .map(|mut p| {
                p.api_server = Some(ready());
                p
            })
            .collect();
        let nodes = cluster(probes);
        let stamped = |state: ApiState, at: &str| WorkloadApi {
            checked_at: Some(at.into()),
            ..workload(state)
        };
        // Dark at the start, answering at the end: Healthy, and said so.
        let healed = WorkloadApi {
            before_probes: Some(Box::new(stamped(ApiState::Timeout, "2025-12-02T08:00:01Z"))),
            ..stamped(ApiState::Reachable, "2025-12-02T08:00:31Z")
        };
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&healed)).verdict;
        assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
        assert!(
            v.evidence.iter().any(|e| e.ends_with("; it changed while the probes ran: no answer at 2025-12-02T08:00:01Z (before the probes), answering at 2025-12-02T08:00:31Z (after them)")),
            "{v:#?}"
        );
        // Answering at the start, dark at the end: never Healthy; the endpoint named.
        let broke = WorkloadApi {
            before_probes: Some(Box::new(stamped(
                ApiState::Reachable,
                "2025-12-02T08:00:01Z",
            ))),
            ..stamped(ApiState::Timeout, "2025-12-02T08:00:31Z")
        };
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&broke)).verdict;
        assert_eq!(v.code, VerdictCode::ApiEndpointUnreachable, "{v:#?}");
        assert_eq!(
            v.evidence[0],
            "the workload API https://198.18.0.10:6443 does not answer within 5s; it changed while the probes ran: answering at 2025-12-02T08:00:01Z (before the probes), no answer at 2025-12-02T08:00:31Z (after them)"
        );
        // The same state twice: no change to tell.
        let same = WorkloadApi {
            before_probes: Some(Box::new(stamped(
                ApiState::Reachable,
                "2025-12-02T08:00:01Z",
            ))),
            ..stamped(ApiState::Reachable, "2025-12-02T08:00:31Z")
        };
        let v = diagnose_at(&facts(3), &nodes, DEFAULT_SINCE, None, Some(&same)).verdict;
        assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
        assert!(!v.evidence.iter().any(|e| e.contains("changed")), "{v:#?}");
    }

    #[test]
    fn api_servers_not_serving_each_with_why() {
        let leader = r#"{"level":"info","ts":"2025-12-02T07:58:20.000Z","logger":"raft","caller":"etcdserver/zap_raft.go:77","msg":"raft.node: 71ea0ea03f1cc0b1 elected leader 71ea0ea03f1cc0b1 at term 5"}"#;
        let mut probes = healthy3();
        probes[0].api_server = Some(server(
            CRASHLOOP,
            raw(None, ""),
            pem(NOW_S - 86_400, NOW_S + 86_400),
            BIND,
        ));
        probes[1].api_server = Some(server(
            RUNNING,
            raw(Some(200), READY),
            pem(NOW_S - 86_400 * 365, 1_764_547_200),
            "",
        ));
        probes[2].api_server = Some(server(
            RUNNING,
            raw(Some(500), ETCD_FAILED),
            pem(NOW_S - 86_400, NOW_S + 86_400),
            "",
        ));
        probes[2].etcd.logs = Some(LogSample {
            container_id: "e".into(),
            text: format!("{leader}\n"),
            lines: 1,
            truncated: false,
        });
        let api = workload(ApiState::Timeout);
        let v = diagnose_at(&facts(3), &cluster(probes), DEFAULT_SINCE, None, Some(&api)).verdict;
        assert_eq!(v.code, VerdictCode::ApiServerNotServing, "{v:#?}");
        assert_eq!(v.nodes, vec!["cp1", "cp2", "cp3"]);
        assert_eq!(
            v.summary,
            "etcd is healthy, but the workload API does not answer: the API servers are not serving (cp1 crash looping; cp2 certificate expired 2025-12-01T00:00:00Z; cp3 not ready)"
        );
        let ev = v.evidence.join("\n");
        assert!(
            ev.contains("cp1: kube-apiserver is crash looping: its newest container CONTAINER_EXITED after 5 restarts; its log: E1202 07:59:50.000000       1 run.go:72] \"command failed\" err=\"failed to create listener: failed to listen on 0.0.0.0:6443: listen tcp 0.0.0.0:6443: bind: address already in use\""),
            "{ev}"
        );
        assert!(
            ev.contains("cp2: its serving certificate /etc/kubernetes/pki/apiserver.crt expired at 2025-12-01T00:00:00Z (the node's clock: 2025-12-02T08:00:00Z)"),
            "{ev}"
        );
        assert!(
            ev.contains("cp3: the API server answers but is not ready: /readyz 500, failing: etcd; etcd has had its leader back since 2025-12-02T07:58:20.000000Z (100s before the probe)"),
            "{ev}"
        );
        let steps = v.next_steps.join("\n");
        assert!(steps.contains("kubeadm certs renew apiserver"), "{steps}");
        assert!(steps.contains("--watch"), "{steps}");
    }

    #[test]
    fn a_workload_api_not_checked_or_not_read_api_servers_are_inconclusive() {
        let v = judge(
            vec![Some(ready()), Some(ready()), Some(ready())],
            ApiState::Unknown,
        );
        assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
        assert!(v
            .evidence
            .iter()
            .any(|e| e.starts_with("the workload API was not checked: secret")));
        // The endpoint dark, the probes older than the API server's read: never Healthy.
        let v = judge(vec![None, None, None], ApiState::Timeout);
        assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
        assert!(
            v.summary.contains("the workload API not seen to answer"),
            "{v:#?}"
        );
        // An HTTP error came through the endpoint: not a dark load balancer.
        let v = judge(
            vec![Some(ready()), Some(ready()), Some(ready())],
            ApiState::HttpError,
        );
        assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    }

    #[test]
    fn etcd_rules_come_first() {
        // cp1's peers refuse it on 2380 and the workload API is dark: the network, not the API.
        let mut probes = healthy3();
        for p in &mut probes {
            p.api_server = Some(ready());
        }
        for (i, p) in probes.iter_mut().enumerate() {
            for c in &mut p.paths {
                if c.port == 2380 && (i == 0) != (c.target == IPS[0]) {
                    c.tcp = TcpOutcome::Timeout;
                    c.tls = TlsOutcome::NotTried;
                }
            }
        }
        let api = workload(ApiState::Timeout);
        let v = diagnose_at(&facts(3), &cluster(probes), DEFAULT_SINCE, None, Some(&api)).verdict;
        assert!(v.code.is_network(), "{v:#?}");
    }
}

/// The workload API answers through the others: a node's expired apiserver.crt is a warning
/// note of the Healthy verdict, with its date.
#[test]
fn healthy_warns_of_a_node_whose_api_server_does_not_serve() {
    use crate::workload::{ApiState, WorkloadApi};
    let now = 1_764_662_400;
    let pem = |nb: i64, na: i64| {
        let mut params = rcgen::CertificateParams::new(vec!["kubernetes".into()]).unwrap();
        params.not_before = time::OffsetDateTime::from_unix_timestamp(nb).unwrap();
        params.not_after = time::OffsetDateTime::from_unix_timestamp(na).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    };
    let ok = |text: String| RawRead {
        outcome: QueryOutcome::Ok,
        http_status: None,
        ms: None,
        text: Some(text),
        truncated: false,
        detail: None,
    };
    let running = r#"{"containers":[{"id":"a1","metadata":{"name":"kube-apiserver","attempt":0},"state":"CONTAINER_RUNNING","createdAt":"1"}]}"#;
    let mut probes = healthy3();
    for (i, p) in probes.iter_mut().enumerate() {
        let na = if i == 0 { 1_764_547_200 } else { now + 86_400 };
        p.api_server = Some(ApiServerRead {
            containers: ok(running.into()),
            logs: None,
            readyz: RawRead {
                http_status: Some(200),
                ..ok("readyz check passed\n".into())
            },
            cert: ok(pem(now - 86_400 * 365, na)),
        });
    }
    let api = WorkloadApi {
        state: ApiState::Reachable,
        server: Some("https://198.18.0.10:6443".into()),
        path: Some("/readyz".into()),
        http_status: Some(200),
        elapsed_ms: Some(3),
        detail: "/readyz answered 200".into(),
        checked_at: None,
        before_probes: None,
    };
    let v = diagnose_at(&facts(3), &cluster(probes), DEFAULT_SINCE, None, Some(&api)).verdict;
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        v.notes.contains(&"warning: cp1: its serving certificate /etc/kubernetes/pki/apiserver.crt expired at 2025-12-01T00:00:00Z; the workload API answers through the other control-plane VMs".to_string()),
        "{:#?}",
        v.notes
    );
}
