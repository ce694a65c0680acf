//! Rules about etcd on each node: crash looping, not running, certificates.

use super::evidence::*;
use super::*;

// ---- 2, 3. etcd on the nodes -----------------------------------------------------------------

/// Whether etcd runs on a node: from crictl when it answered, else from whether the node's own
/// 2379 answers. `None` when neither tells.
pub(super) fn etcd_running(ctx: &Ctx, node: &NodeReport) -> Option<bool> {
    let probe = node.probe()?;
    if probe.etcd.query == RuntimeQuery::Ok {
        return Some(probe.etcd.containers.iter().any(Container::is_running));
    }
    match own_cell(ctx, &node.name, 2379).map(|c| c.state) {
        Some(CellState::Refused) => Some(false),
        Some(CellState::Ok | CellState::TlsRejected | CellState::TlsStalled) => Some(true),
        _ => None,
    }
}

pub(super) fn own_cell<'a>(ctx: &'a Ctx, node: &str, port: u16) -> Option<&'a Cell> {
    ctx.matrices
        .iter()
        .find(|m| m.port == port)?
        .cell(node, node)
        .filter(|c| c.state.is_known())
}

/// The member exited for a reason of its own in the window: a fatal or panic line that does not
/// say the peers could not be reached (etcdlog's `Fatal`, not `FatalUnreachable`).
pub(super) fn fatal_reason(ctx: &Ctx, node: &str) -> bool {
    ctx.logs
        .get(node)
        .is_some_and(|s| s.finding(LogKind::Fatal).is_some())
}

/// Whether the node's own paths work: every path it dialled to another member connected, and
/// every path another member dialled to it connected or was refused (refused is what a member
/// whose etcd is down answers). A node that dropped or timed-out paths, in or out, is one the
/// network may have cut off: its restarts are then kubelet's answer to the partition.
pub(super) fn own_paths_work(ctx: &Ctx, node: &str) -> bool {
    ctx.matrices.iter().flat_map(|m| m.peer_cells()).all(|c| {
        if c.from == node {
            c.state.is_ok()
        } else if c.to == node {
            c.state.is_ok() || c.state == CellState::Refused
        } else {
            true
        }
    })
}

/// A stopped or restarting member is its own problem only for a fatal reason of its own, or
/// when the network around it works; else it is evidence for the network verdict.
pub(super) fn own_problem(ctx: &Ctx, node: &str) -> bool {
    fatal_reason(ctx, node) || own_paths_work(ctx, node)
}

/// Restarted at least this often and exited, or restarted within the window: crash looping.
pub(super) const CRASH_ATTEMPTS: u32 = 3;
pub(super) const CRASH_WINDOW_MS: i64 = 15 * 60 * 1000;

pub(super) fn crash_looping(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let Some(c) = newest(&p.etcd.containers) else {
            continue;
        };
        let attempt = c.attempt.unwrap_or(0);
        let recent = match (c.created_at.as_deref().and_then(created_ms), p.clock_ms) {
            // Both times are the node's word (any i64): saturate rather than overflow.
            (Some(created), Some(now)) => now.saturating_sub(created) < CRASH_WINDOW_MS,
            _ => false,
        };
        // A member that runs and whose /health is true is not crash looping, however often it
        // was restarted: the restarts are a note (kubelet restarted it during a past outage).
        let healthy_now = c.is_running() && p.health.outcome == HealthOutcome::Healthy;
        if attempt >= CRASH_ATTEMPTS
            && (!c.is_running() || recent)
            && !healthy_now
            && own_problem(ctx, &n.name)
        {
            nodes.push(n.name.clone());
            evidence.push(format!(
                "{}: etcd container {} is {} after {attempt} restarts{}",
                n.name,
                short_id(&c.id),
                c.state,
                if recent {
                    " (last one within 15 minutes)"
                } else {
                    ""
                }
            ));
            evidence.extend(log_evidence(
                ctx,
                &n.name,
                &[
                    LogKind::Fatal,
                    LogKind::NoSpace,
                    LogKind::ClusterIdMismatch,
                    LogKind::MemberRemoved,
                    LogKind::MemberAlreadyBootstrapped,
                    LogKind::CertExpired,
                ],
            ));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    // Restarted because its peers reject it as removed (and no Machine of it is being deleted:
    // that would be a rollout, left out before the rules): a membership problem, as for a
    // stopped member below.
    if nodes.iter().all(|n| removed_member_fault(ctx, n)) {
        return super::member_mismatch(ctx);
    }
    verdict(
        VerdictCode::EtcdCrashLooping,
        format!("etcd keeps restarting on {}: a separate issue from etcd networking", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs --tail 100 <container id> (the last lines before each exit)", nodes.join(", ")),
            "Check /etc/kubernetes/manifests/etcd.yaml, the data directory /var/lib/etcd and free disk space on the node".into(),
        ],
    )
}

pub(super) fn not_running(ctx: &Ctx) -> Option<Verdict> {
    let stopped: Vec<&NodeReport> = ctx
        .nodes
        .iter()
        .filter(|n| {
            etcd_running(ctx, n) == Some(false)
                && (removed_member_fault(ctx, &n.name) || own_problem(ctx, &n.name))
        })
        .collect();
    if stopped.is_empty() {
        return None;
    }
    // A member that stopped because its own log says it was removed from the cluster (a VM
    // restored from an old snapshot restarts on a removed member's data) is a membership
    // problem, not a process one: say that, with the line that says so.
    if stopped.iter().all(|n| removed_member_fault(ctx, &n.name)) {
        return super::member_mismatch(ctx);
    }
    let names: Vec<String> = stopped.iter().map(|n| n.name.clone()).collect();
    let mut evidence = Vec::new();
    for n in &stopped {
        let p = n.probe().expect("etcd_running needs a probe");
        match newest(&p.etcd.containers) {
            Some(c) => evidence.push(format!(
                "{}: crictl ps -a --name etcd: newest container {} is {} (attempt {})",
                n.name,
                short_id(&c.id),
                c.state,
                c.attempt.unwrap_or(0)
            )),
            None if p.etcd.query == RuntimeQuery::Ok => evidence.push(format!(
                "{}: crictl ps -a --name etcd lists no etcd container",
                n.name
            )),
            None => evidence.push(format!(
                "{}: the container runtime could not be asked ({}), and its own etcd port refuses",
                n.name, p.etcd.query
            )),
        }
        if let Some(c) = own_cell(ctx, &n.name, 2379) {
            evidence.push(format!(
                "{}: its own {}:2379 is {}",
                n.name,
                ip_of(ctx, &n.name),
                describe(c)
            ));
        }
        evidence.extend(log_evidence(ctx, &n.name, &[LogKind::Fatal]));
    }
    // The other members' logs tell the same story: refused dials to the stopped members.
    for n in ctx.nodes.iter().filter(|n| !names.contains(&n.name)) {
        evidence.extend(log_evidence(ctx, &n.name, &[LogKind::ConnectionRefused]));
    }
    verdict(
        VerdictCode::EtcdNotRunning,
        format!("etcd is not running on {}: a separate issue from etcd networking", names.join(", ")),
        names.clone(),
        evidence,
        vec![
            format!("On {}: crictl ps -a --name etcd; crictl logs <container id>; journalctl -u kubelet --since -1h | grep -i etcd", names.join(", ")),
            "Check the static-pod manifest /etc/kubernetes/manifests/etcd.yaml and that kubelet is running".into(),
        ],
    )
}

// ---- 5. certificates -------------------------------------------------------------------------

/// The kinds of etcd log line that name a certificate: a member that refuses a certificate
/// logs which and why ("rejected connection ... x509: ..." or "remote error: tls: bad
/// certificate" on the side whose certificate was refused).
const CERT_LOG_KINDS: &[LogKind] = &[
    LogKind::CertExpired,
    LogKind::CertNotYetValid,
    LogKind::CertNameMismatch,
    LogKind::CertUnknownAuthority,
    LogKind::TlsRemoteError,
];

/// Whether a refused handshake (`tls-rejected`) is a certificate's doing: curl names a TLS alert
/// or a certificate, or an end's etcd log in the window has a certificate line about the other
/// end ([`logged_about`]).
///
/// A bare end of the connection (curl's `(35) Recv failure: Connection reset by peer`,
/// `SSL_ERROR_SYSCALL`, OpenSSL 3's `unexpected eof while reading`, `(52) Empty reply from
/// server` after the handshake, `getpeername() failed with errno 107`) says only that the
/// listener went away. A member that refuses a certificate says so: Go's crypto/tls, which etcd
/// serves with, answers a bad certificate with an alert (`sendAlert(alertBadCertificate)` in
/// handshake_server.go `processCertsFromClient`), and etcd's own check of a peer certificate's
/// SANs after the handshake closes without one but logs "rejected connection" with the x509
/// error. Seen in the lab: members that kubelet kills during a partition (they accept TCP
/// before they serve, and the kill ends what waits) give every one of those bare ends, at
/// random, on etcd 3.4 and 3.5. Not a certificate verdict then; the path still is not working
/// (the other rules and `Inconclusive` see it).
pub(super) fn refused_for_a_certificate(ctx: &Ctx, c: &Cell) -> bool {
    // Our own prefix names "a refused client certificate" as the likely cause: only curl's
    // words after it count.
    let detail = c.detail.as_deref().unwrap_or("");
    let curl = detail
        .strip_prefix(CLOSED_AFTER_HANDSHAKE)
        .unwrap_or(detail)
        .to_ascii_lowercase();
    let named = ["alert", "certificate", "verify"]
        .iter()
        .any(|w| curl.contains(w));
    named || logged_about(ctx, &c.from, &c.to) || logged_about(ctx, &c.to, &c.from)
}

/// Whether `node`'s etcd log has, in the window, a certificate line ([`CERT_LOG_KINDS`]) about
/// `peer`: one that names the peer's address (its VM's IP, as the Supervisor gives it; for a
/// node's own path, its own) or its member ID (the one the peer's own log calls local).
///
/// Never any certificate line in any log: an honest member logs "rejected
/// connection" with the x509 error for whoever dials it with a bad certificate (any client
/// with an expired one, `remote-addr` its own address), and such a line says nothing about a
/// path between two other ends. A line's addresses and IDs are what the classifier read from
/// it (`remote-addr`, the dialled URL, `remote-peer-id`, …: `etcdlog::LogLine`).
fn logged_about(ctx: &Ctx, node: &str, peer: &str) -> bool {
    let Some(summary) = ctx.logs.get(node) else {
        return false;
    };
    let ip = ctx.nodes.iter().find(|n| n.name == peer).and_then(|n| n.ip);
    // The peer's log drops its own ID from its findings; another node's log keeps it.
    let id = ctx
        .logs
        .get(peer)
        .and_then(|s| s.local_member_id.as_deref());
    CERT_LOG_KINDS
        .iter()
        .filter_map(|k| summary.finding(*k))
        .any(|f| {
            ip.is_some_and(|ip| f.peer_addresses.iter().any(|a| log_addr_ip(a) == Some(ip)))
                || id.is_some_and(|id| f.peer_ids.contains(id))
        })
}

/// How the probe starts its detail of a connection closed after the handshake, before curl's
/// own words (probe.sh, the `Rejected` outcome).
pub(super) const CLOSED_AFTER_HANDSHAKE: &str =
    "closed after the handshake, no HTTP answer (a refused client certificate under TLS 1.3): ";

pub(super) fn certificate_problem(ctx: &Ctx) -> Option<Verdict> {
    let mut nodes = Vec::new();
    let mut evidence = Vec::new();
    for n in ctx.nodes {
        let Some(p) = n.probe() else { continue };
        let mut bad = false;
        for c in &p.certs {
            let file = format!("/etc/kubernetes/pki/etcd/{}", c.file);
            if c.expires_in_s.is_some_and(|s| s < 0) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} expired on {}",
                    n.name,
                    c.not_after.as_deref().unwrap_or("?")
                ));
            }
            if c.not_yet_valid == Some(true) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} is not valid before {}",
                    n.name,
                    c.not_before.as_deref().unwrap_or("?")
                ));
            }
            if c.has_node_ip == Some(false) {
                bad = true;
                evidence.push(format!(
                    "{}: {file} does not name the node's IP {} (SANs: {})",
                    n.name,
                    p.node_ip,
                    c.sans.join(", ")
                ));
            }
        }
        if bad {
            nodes.push(n.name.clone());
        }
    }
    let rejected: Vec<&Cell> = ctx
        .matrices
        .iter()
        .flat_map(|m| m.cells.iter())
        .filter(|c| c.state == CellState::TlsRejected && refused_for_a_certificate(ctx, c))
        .collect();
    for c in &rejected {
        evidence.push(format!("{} → {}:{}: {}", c.from, c.to, c.port, describe(c)));
    }
    if nodes.is_empty() && rejected.is_empty() {
        return None;
    }
    for n in ctx.nodes {
        evidence.extend(log_evidence(ctx, &n.name, CERT_LOG_KINDS));
    }
    // A node whose clock is off judges certificates by it.
    evidence.extend(super::notes::clock_drift(ctx));
    if nodes.is_empty() {
        // No certificate of ours is wrong, yet handshakes fail: name the ends of those paths.
        for c in &rejected {
            for n in [&c.from, &c.to] {
                if !nodes.contains(n) {
                    nodes.push(n.clone());
                }
            }
        }
    }
    verdict(
        VerdictCode::EtcdCertificateProblem,
        format!("etcd TLS fails on {}: certificates expired, not yet valid, or not for the node's IP", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            "Expired etcd certificates: roll the control plane so KCP issues new ones (kubectl patch kcp <name> -n <ns> --type merge -p '{\"spec\":{\"rolloutAfter\":\"<now, RFC 3339>\"}}'), or on the node: kubeadm certs renew etcd-peer etcd-server, then restart etcd".into(),
            "A certificate without the node's current IP means the VM's IP changed: replace that Machine (kubectl delete machine <name> -n <ns>; KCP creates a new one)".into(),
            "Not yet valid: check the node's clock (chronyc tracking / timedatectl)".into(),
        ],
    )
}
