//! Rules 10 and 11: `Healthy` only when everything was seen to work, else `Inconclusive` naming
//! what was not. By the time these run no earlier rule explains a failure, so what is left is
//! what was not seen: a node not probed, a `/health` that did not say true, a path without a
//! result, a TLS handshake not tried, a probe step that failed. Each is one [`Gap`].

use super::evidence::path_line;
use super::{verdict, Ctx, Verdict, VerdictCode};
use crate::analyse::matrix::{self, CellState};
use crate::probe::output::{HealthOutcome, TlsOutcome};

/// What kind of check was not seen to work, in the order the evidence lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Check {
    /// No control-plane node at all.
    NoNodes,
    /// A control-plane node whose probe gave no document.
    Unreached,
    /// etcd's own `/health` did not answer true.
    Health,
    /// FROM has no result for TO on a port (TO has no IP, or the probe did not dial it).
    NotChecked,
    /// TCP connected, the TLS handshake was not tried (no readable peer certificate).
    TlsNotTried,
    /// A path that fails and no earlier rule explained (e.g. a node's own address).
    PathFails,
    /// A step of the probe reported an error.
    ProbeError,
    /// The node's document is not what the probe prints: a list over the probe's own caps, a
    /// member ID not as etcd writes it (`ProbeOutput::document_problems`).
    Document,
    /// The workload API did not answer, or was not checked (no usable kubeconfig secret):
    /// `Healthy` needs it answering. When it is the only gap, the API server rule decides.
    WorkloadApi,
}

/// One thing not seen to work.
#[derive(Debug, Clone)]
pub(super) struct Gap {
    pub check: Check,
    /// The nodes it is about.
    pub nodes: Vec<String>,
    /// A path (`cp1 → cp2:2379`), or the whole evidence line for the other checks.
    pub what: String,
    /// Why, for a path: paths with the same check and reason share one evidence line.
    pub why: Option<String>,
}

fn gap(check: Check, nodes: &[&str], what: String, why: Option<String>) -> Gap {
    Gap {
        check,
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        what,
        why,
    }
}

/// Everything that was not seen to work, in [`Check`] order, then node and port order.
pub(super) fn gaps(ctx: &Ctx) -> Vec<Gap> {
    let mut out = Vec::new();
    if ctx.nodes.is_empty() {
        out.push(gap(
            Check::NoNodes,
            &[],
            "no control-plane node to probe".into(),
            None,
        ));
    }
    // Every control-plane Machine is a node to reach: one the run has no result for is unseen.
    for n in &ctx.facts.nodes {
        if n.machine.is_some()
            && n.rollout().is_none()
            && !ctx.nodes.iter().copied().any(|r| r.name == n.name)
        {
            out.push(gap(
                Check::Unreached,
                &[&n.name],
                format!("{}: a control-plane Machine with no probe result", n.name),
                None,
            ));
        }
    }
    for &n in &ctx.nodes {
        match &n.outcome {
            Err(e) => out.push(gap(
                Check::Unreached,
                &[&n.name],
                format!("{}: not probed: {}: {}", n.name, e.kind.phrase(), e.message),
                None,
            )),
            Ok(p) if p.health.outcome != HealthOutcome::Healthy => out.push(gap(
                Check::Health,
                &[&n.name],
                format!(
                    "{}: /health is {}{}",
                    n.name,
                    p.health.outcome.phrase(),
                    p.health
                        .body
                        .as_deref()
                        .or(p.health.detail.as_deref())
                        .map(|b| format!(": {b}"))
                        .unwrap_or_default()
                ),
                None,
            )),
            Ok(_) => {}
        }
    }
    out.extend(path_gaps(ctx));
    for &n in &ctx.nodes {
        for e in n.probe().map(|p| p.errors.as_slice()).unwrap_or_default() {
            out.push(gap(
                Check::ProbeError,
                &[&n.name],
                format!("{}: probe step {} failed: {}", n.name, e.step, e.message),
                None,
            ));
        }
        for d in n
            .probe()
            .map(|p| p.document_problems.as_slice())
            .unwrap_or_default()
        {
            out.push(gap(
                Check::Document,
                &[&n.name],
                format!("{}'s probe document: {d}", n.name),
                None,
            ));
        }
    }
    if let Some(api) = ctx.workload.filter(|a| !a.is_reachable()) {
        out.push(gap(Check::WorkloadApi, &[], workload_line(api), None));
    }
    out.sort_by_key(|g| g.check);
    out
}

/// The workload API's line: what it answered, or why it was not asked; and, when it was
/// checked again after the probes and changed, what it was before ([`workload_change`]).
pub(super) fn workload_line(api: &crate::workload::WorkloadApi) -> String {
    use crate::workload::ApiState;
    let server = api.server.as_deref().unwrap_or("the cluster's endpoint");
    let line = match api.state {
        ApiState::Unknown | ApiState::Untrusted => {
            format!("the workload API was not checked: {}", api.detail)
        }
        // In words, each thing once (the JSON's `workloadApi.state` keeps the code).
        _ => format!("the workload API {server} {}", api.said()),
    };
    match workload_change(api) {
        Some(change) => format!("{line}; {change}"),
        None => line,
    }
}

/// When the workload API's check after the probes differs from the one before them (etcd
/// healed or broke while they ran): what each saw and when, e.g. "it changed while the probes
/// ran: no answer at 2025-12-02T08:00:01Z (before the probes), answering at
/// 2025-12-02T08:00:31Z (after them)". The verdict is judged from the later one.
pub(super) fn workload_change(api: &crate::workload::WorkloadApi) -> Option<String> {
    use crate::workload::ApiState;
    let before = api.before_probes.as_deref()?;
    if before.state == api.state {
        return None;
    }
    let seen = |a: &crate::workload::WorkloadApi| match a.state {
        ApiState::Reachable => "answering".to_string(),
        state => state.phrase().to_string(),
    };
    let at = |a: &crate::workload::WorkloadApi| {
        a.checked_at
            .as_deref()
            .map(|t| format!(" at {t}"))
            .unwrap_or_default()
    };
    Some(format!(
        "it changed while the probes ran: {}{} (before the probes), {}{} (after them)",
        seen(before),
        at(before),
        seen(api),
        at(api)
    ))
}

/// Every path on 2379 and 2380, each node's own included, that was not seen to connect and
/// complete TLS. A node that was not probed has no paths of its own: it is an `Unreached` gap.
fn path_gaps(ctx: &Ctx) -> Vec<Gap> {
    let mut out = Vec::new();
    for m in &ctx.matrices {
        let port = m.port;
        let cells = m.index();
        for from in ctx.nodes.iter().copied().filter(|n| n.probe().is_some()) {
            let paths = matrix::Paths::of(from);
            for &to in &ctx.nodes {
                let what = format!("{} → {}:{port}", from.name, to.name);
                let Some(p) = paths.to(to, port) else {
                    out.push(match to.ip {
                        None => gap(
                            Check::NotChecked,
                            &[&to.name],
                            what,
                            Some(format!("{} has no IP", to.name)),
                        ),
                        Some(ip) => gap(
                            Check::NotChecked,
                            &[&from.name],
                            what,
                            Some(format!("{}'s probe has no result for {ip}", from.name)),
                        ),
                    });
                    continue;
                };
                match matrix::cell_state(p) {
                    CellState::Ok if p.tls == TlsOutcome::Completed => {}
                    CellState::Ok => out.push(gap(
                        Check::TlsNotTried,
                        &[&from.name],
                        what,
                        p.tls_detail.clone(),
                    )),
                    _ => {
                        let line = cells
                            .cell(&from.name, &to.name)
                            .map(path_line)
                            .unwrap_or(what);
                        out.push(gap(Check::PathFails, &[&from.name], line, None));
                    }
                }
            }
        }
    }
    out
}

/// The evidence lines: one per gap, paths with the same check and reason on one line (where the
/// first of them came).
fn lines(gaps: &[Gap]) -> Vec<String> {
    enum Entry<'a> {
        Line(&'a str),
        Paths {
            check: Check,
            why: Option<&'a str>,
            paths: Vec<&'a str>,
        },
    }
    let mut entries: Vec<Entry> = Vec::new();
    for g in gaps {
        if !matches!(g.check, Check::NotChecked | Check::TlsNotTried) {
            entries.push(Entry::Line(&g.what));
            continue;
        }
        let why = g.why.as_deref();
        let group = entries.iter_mut().find_map(|e| match e {
            Entry::Paths {
                check,
                why: w,
                paths,
            } if *check == g.check && *w == why => Some(paths),
            _ => None,
        });
        match group {
            Some(paths) => paths.push(&g.what),
            None => entries.push(Entry::Paths {
                check: g.check,
                why,
                paths: vec![&g.what],
            }),
        }
    }
    entries
        .into_iter()
        .map(|e| match e {
            Entry::Line(l) => l.to_string(),
            Entry::Paths { check, why, paths } => format!(
                "{}: {}{}",
                if check == Check::NotChecked {
                    "not checked"
                } else {
                    "TCP connected, TLS handshake not tried"
                },
                paths.join(", "),
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ),
        })
        .collect()
}

/// The nodes of these gaps, in order of appearance.
fn gap_nodes(gaps: &[Gap], check: Option<Check>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in gaps.iter().filter(|g| check.is_none_or(|c| g.check == c)) {
        for n in &g.nodes {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// "1 path", "6 paths".
fn paths(n: usize) -> String {
    if n == 1 {
        "1 path".into()
    } else {
        format!("{n} paths")
    }
}

// ---- 10. Healthy -----------------------------------------------------------------------------

pub(super) fn healthy(ctx: &Ctx) -> Option<Verdict> {
    if !gaps(ctx).is_empty() {
        return None;
    }
    let paths: usize = ctx.matrices.iter().map(|m| m.cells.len()).sum();
    let mut evidence = vec![
        format!("etcd /health is true on all {} members", ctx.nodes.len()),
        format!("all {paths} paths on 2379 and 2380 (each node to itself and to every other) connect and complete TLS"),
        "no probe step reported an error".into(),
    ];
    let summary = match ctx.workload {
        Some(api) => {
            evidence.push(format!(
                "the workload API {} answers: {}{}",
                api.server.as_deref().unwrap_or("?"),
                api.detail,
                workload_change(api)
                    .map(|c| format!("; {c}"))
                    .unwrap_or_default()
            ));
            "etcd is healthy, every control-plane VM reaches every other on 2379 and 2380, and the workload API answers"
        }
        None => "etcd is healthy and every control-plane VM reaches every other on 2379 and 2380",
    };
    verdict(
        VerdictCode::Healthy,
        summary.into(),
        vec![],
        evidence,
        vec![],
    )
}

// ---- 11. Inconclusive ------------------------------------------------------------------------

pub(super) fn inconclusive(ctx: &Ctx) -> Verdict {
    let gaps = gaps(ctx);
    let count = |c: Check| gaps.iter().filter(|g| g.check == c).count();
    let names = |c: Check| gap_nodes(&gaps, Some(c)).join(", ");
    let mut parts = Vec::new();
    let mut next = Vec::new();
    let mut checks: Vec<Check> = gaps.iter().map(|g| g.check).collect();
    checks.dedup();
    for c in checks {
        match c {
            Check::NoNodes => parts.push("there is no control-plane node to probe".to_string()),
            Check::Unreached => {
                parts.push(format!("{} not probed", names(c)));
                next.push(format!("Find out why each node above was not probed (no IP yet, the route failed), then run again: {}", ctx.facts.diagnose_again()));
            }
            Check::Health => {
                parts.push(format!("/health not true on {}", names(c)));
                next.push(format!("On {}: etcdctl endpoint health and endpoint status -w table (certs under /etc/kubernetes/pki/etcd/): no leader, an alarm, a member still starting; /health Skipped means the node has no healthcheck-client certificate or no curl", names(c)));
            }
            Check::NotChecked => {
                parts.push(format!("{} not checked", paths(count(c))));
                next.push("A path without a result was not checked: every node needs an IP, and its probe a result for every other node's; re-run once the Supervisor shows an IP for every VM".to_string());
            }
            Check::TlsNotTried => {
                parts.push(format!("TLS not tried on {}", paths(count(c))));
                next.push(format!("On {}: /etc/kubernetes/pki/etcd/ca.crt, peer.crt and peer.key must exist and be readable: without them the probe connects but cannot try etcd's TLS handshake", names(c)));
            }
            Check::PathFails => {
                parts.push(format!("{} failing", paths(count(c))));
                next.push("A node's own address not answering on its etcd ports: check the listen URLs in /etc/kubernetes/manifests/etcd.yaml against the node's IP".to_string());
            }
            Check::ProbeError => {
                parts.push(format!("probe errors on {}", names(c)));
                next.push(format!("The probe errors above say which check could not run on which node (a missing tool, an unreadable file): fix that and run again: {}", ctx.facts.diagnose_again()));
            }
            Check::WorkloadApi => {
                parts.push("the workload API not seen to answer".to_string());
                next.push(format!("The workload API must answer for the cluster to be healthy: {} re-checks it each round", ctx.facts.kubectl.run(&format!("etcdnet diagnose {} -n {} --watch", crate::command::name(&ctx.facts.cluster.name), crate::command::namespace(&ctx.facts.namespace)))));
            }
            Check::Document => {
                parts.push(format!(
                    "the probe document of {} is not what the probe prints",
                    names(c)
                ));
                next.push(format!("On {}: the node printed what the probe never does (above; read within the probe's own caps, the rest dropped): a modified probe, or a modified or compromised node: check it before trusting what it says of itself or its peers", names(c)));
            }
        }
    }
    let mut evidence = lines(&gaps);
    if evidence.is_empty() {
        // Healthy holds when nothing is missing, so this is never reached; say so if it is.
        evidence.push("every check was seen to work, yet no rule concluded".into());
    }
    next.push(format!("Read the etcd logs on the nodes (crictl logs <etcd container>) and the KCP conditions ({})", ctx.facts.kubectl.run(&format!("describe kcp -n {}", crate::command::namespace(&ctx.facts.namespace)))));
    Verdict {
        code: VerdictCode::Inconclusive,
        summary: format!(
            "no network, certificate or etcd-process problem was found, but not everything was seen to work: {}",
            if parts.is_empty() { "?".to_string() } else { parts.join("; ") }
        ),
        nodes: gap_nodes(&gaps, None),
        evidence,
        next_steps: next,
        notes: vec![],
    }
}
