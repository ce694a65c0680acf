//! Rule 5, EtcdCertificateProblem: a certificate that is expired, not yet valid, or refused.

use super::evidence::{describe, log_addr_ip, log_evidence};
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::analyse::matrix::{Cell, CellState};
use crate::probe::etcdlog::LogKind;

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
    let ip = ctx
        .nodes
        .iter()
        .copied()
        .find(|n| n.name == peer)
        .and_then(|n| n.ip);
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
    for &n in &ctx.nodes {
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
    for &n in &ctx.nodes {
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
    // The run's kubectl and the namespace as the API server takes it; `<name>` the admin's.
    let k = &ctx.facts.kubectl;
    let ns = crate::command::namespace(&ctx.facts.namespace);
    let roll = k.run(&format!("patch kcp <name> -n {ns} --type merge -p '{{\"spec\":{{\"rolloutAfter\":\"<now, RFC 3339>\"}}}}'"));
    let replace = k.run(&format!("delete machine <name> -n {ns}"));
    verdict(
        VerdictCode::EtcdCertificateProblem,
        format!("etcd TLS fails on {}: certificates expired, not yet valid, or not for the node's IP", nodes.join(", ")),
        nodes.clone(),
        evidence,
        vec![
            format!("Expired etcd certificates: roll the control plane so KCP issues new ones ({roll}), or on the node: kubeadm certs renew etcd-peer etcd-server, then restart etcd"),
            format!("A certificate without the node's current IP means the VM's IP changed: replace that Machine ({replace}; KCP creates a new one)"),
            "Not yet valid: check the node's clock (chronyc tracking / timedatectl)".into(),
        ],
    )
}
