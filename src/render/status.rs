//! `status` as tables.

use super::{control_plane_cell, count, or_none, Lines, Paint, Tabular, Tone, NONE};
use crate::report::v1alpha2::{
    ApiState, Condition, ControlPlaneNode, IdentityProblem, JoinedBy, RolloutPhase, Severity,
};
use crate::report::StatusReport;
use std::time::SystemTime;

impl Tabular for StatusReport {
    type Document = Self;

    fn document(&self) -> &Self {
        self
    }

    fn table(&self, paint: Paint) -> String {
        status_table(self, false, paint)
    }

    fn wide(&self, paint: Paint) -> String {
        status_table(self, true, paint)
    }
}

fn workload_cell(report: &StatusReport) -> String {
    let w = &report.workload_api;
    let state = super::api_state(w.state);
    let took = crate::when::millis(w.elapsed_ms.unwrap_or(0));
    match w.state {
        ApiState::Reachable | ApiState::HttpError => format!(
            "{state} ({} {}, {took})",
            w.path.as_deref().unwrap_or("?"),
            or_none(w.http_status),
        ),
        ApiState::Unknown => state.to_string(),
        _ => format!("{state} ({took})"),
    }
}

/// A condition as one line's part: `EtcdMemberHealthy False (EtcdMemberUnhealthy: message)`, a
/// multi-line message (CAPI's v1beta2 bullets) on one line.
fn condition_text(c: &Condition) -> String {
    let why = [c.reason.as_deref(), c.message.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(": ");
    let mut text = format!("{} {}", c.kind, c.status);
    if !why.is_empty() {
        text.push_str(&format!(" ({})", why.replace('\n', " ")));
    }
    text
}

/// `-o wide`: one line per Machine with the etcd conditions the KCP wrote on it, when any has.
fn machine_etcd_conditions(out: &mut Lines, r: &StatusReport) {
    let lines: Vec<String> = r
        .nodes
        .iter()
        .filter_map(|n| n.machine.as_ref())
        .filter(|m| !m.etcd_conditions.is_empty())
        .map(|m| {
            let conditions: Vec<String> = m.etcd_conditions.iter().map(condition_text).collect();
            format!("  {}: {}", m.name, conditions.join(", "))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    out.blank();
    out.line("Machine etcd conditions (from the KCP):");
    for l in lines {
        out.line(l);
    }
}

/// `since` with its age at `now`: `2025-06-03T08:20:00Z, 4m ago` ([`crate::when::since`]).
fn since_text(since: &str, now: SystemTime) -> String {
    match crate::when::parse(since) {
        Some(t) => crate::when::since(t, now),
        None => since.to_string(),
    }
}

/// The "rollout in progress" lines, when there is a rollout: the KCP's counts that say so,
/// then each Machine being created or deleted with its phase and since when. These nodes are
/// shown, never judged: the lines say so.
fn rollout_lines(r: &StatusReport, now: SystemTime) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    if let Some(why) = r
        .header
        .control_plane
        .kcp
        .as_ref()
        .and_then(|k| k.rollout())
    {
        lines.push(format!("  {why}"));
    }
    for n in &r.nodes {
        let Some(rollout) = n.rollout() else {
            continue;
        };
        let phase = rollout.machine_phase().unwrap_or("none yet");
        let mut line = match rollout {
            RolloutPhase::Deleting { .. } => {
                format!("  {}: Deleting (Machine phase {phase})", n.name)
            }
            RolloutPhase::Provisioning { waiting_for, .. } => format!(
                "  {}: Provisioning (Machine phase {phase}), waiting for {}",
                n.name,
                waiting_for.describe()
            ),
        };
        if let Some(since) = rollout.since() {
            line.push_str(&format!(", since {}", since_text(since, now)));
        }
        lines.push(line);
    }
    lines
}

/// `-o wide`'s JOIN: how the VM was found for the Machine (`uid`, `owner name`, `VM name`), or
/// the identity problem that makes the node no target.
fn join_cell(n: &ControlPlaneNode) -> String {
    match (&n.join.problem, n.join.by) {
        (Some(IdentityProblem::MachineNotOwned { .. }), _) => "refused: not the KCP's".into(),
        (Some(IdentityProblem::OwnerMismatch { .. }), _) => "refused: owner uid".into(),
        (Some(IdentityProblem::AmbiguousVm { .. }), _) => "refused: ambiguous".into(),
        (None, Some(JoinedBy::Uid)) => "uid".into(),
        (None, Some(JoinedBy::OwnerName)) => "owner name".into(),
        (None, Some(JoinedBy::VmName)) => "VM name".into(),
        (None, None) => NONE.into(),
    }
}

fn status_table(r: &StatusReport, wide: bool, paint: Paint) -> String {
    let cp = &r.header.control_plane;
    let mut out = Lines::new(paint);

    let mut header = vec![
        "CLUSTER",
        "NAMESPACE",
        "PHASE",
        "CONTROL PLANE",
        "WORKLOAD API",
    ];
    let mut row = vec![
        r.header.cluster.name.clone(),
        r.header.namespace.clone(),
        or_none(r.header.cluster.phase.as_deref()),
        control_plane_cell(cp),
        workload_cell(r),
    ];
    if wide {
        header.extend(["ENDPOINT", "CONTEXT", "NETWORK"]);
        row.push(or_none(r.header.cluster.control_plane_endpoint.as_deref()));
        row.push(r.header.context.clone());
        // The Supervisor's networking stack: which route runs with the workload API dark.
        row.push(r.header.apis.network_stack.stack.to_string());
    }
    out.table(&header, &[row]);

    out.blank();
    match &cp.kcp {
        Some(k) => {
            out.line(format!(
                "KubeadmControlPlane {} ({}): desired {}, ready {}, available {}, up-to-date {}",
                k.name,
                k.api_version,
                count(k.desired),
                count(k.ready),
                count(k.available),
                count(k.up_to_date)
            ));
            for c in &k.conditions {
                out.line(format!("  {}", condition_text(c)));
            }
        }
        None => out.line(format!(
            "KubeadmControlPlane: none ({})",
            cp.kcp_missing_reason.as_deref().unwrap_or("unknown")
        )),
    }

    out.blank();
    let mut header = vec!["NODE", "VM", "IP", "POWER", "PHASE", "NODEREF"];
    if wide {
        header.extend([
            "CLASS",
            "VERSION",
            "FAILURE DOMAIN",
            "HOST",
            "ADDRESSES",
            "JOIN",
        ]);
    }
    let rows: Vec<Vec<String>> = r
        .nodes
        .iter()
        .map(|n| {
            let m = n.machine.as_ref();
            let vm = n.vm.as_ref();
            let mut row = vec![
                match (m, &n.join.problem) {
                    (Some(m), _) => m.name.clone(),
                    (None, Some(IdentityProblem::MachineNotOwned { machine, .. })) => {
                        format!("{machine} <not the KCP's>")
                    }
                    (None, _) => "<no machine>".into(),
                },
                vm.map(|v| v.name.clone())
                    .unwrap_or_else(|| "<no vm>".into()),
                match vm {
                    Some(v) => {
                        let ip = match (v.ip, v.refused_ip) {
                            (Some(ip), _) => ip.to_string(),
                            (None, Some(ip)) => format!("{ip} <refused>"),
                            (None, None) => "<pending>".into(),
                        };
                        // Not the guest's word: say whose (docs/output.md).
                        match v.ip_source.short() {
                            Some(from) if v.ip.is_some() || v.refused_ip.is_some() => {
                                format!("{ip} ({from})")
                            }
                            _ => ip,
                        }
                    }
                    None => NONE.into(),
                },
                or_none(vm.map(|v| v.power)),
                or_none(m.and_then(|m| m.phase.clone())),
                or_none(m.and_then(|m| m.node_name.clone())),
            ];
            if wide {
                row.push(or_none(vm.and_then(|v| v.class.clone())));
                row.push(or_none(m.and_then(|m| m.version.clone())));
                row.push(or_none(m.and_then(|m| m.failure_domain.clone())));
                row.push(or_none(vm.and_then(|v| v.host.clone())));
                let addrs = m
                    .map(|m| {
                        m.addresses
                            .iter()
                            .map(|a| format!("{}={}", a.kind, a.address))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .filter(|s| !s.is_empty());
                row.push(or_none(addrs));
                row.push(join_cell(n));
            }
            row
        })
        .collect();
    if rows.is_empty() {
        out.line("No control-plane Machines or VirtualMachines found.");
    } else {
        out.table(&header, &rows);
    }
    let by_name: Vec<String> = r
        .nodes
        .iter()
        .filter_map(|n| {
            Some(format!(
                "{} {}",
                n.name,
                n.join.by.filter(|b| *b != JoinedBy::Uid)?.describe()
            ))
        })
        .collect();
    if !by_name.is_empty() {
        out.blank();
        out.line("Joined without a VSphereMachine uid to check (an older Supervisor, or VSphereMachines not readable):");
        for l in by_name {
            out.line(format!("  {l}"));
        }
    }
    let rollout = rollout_lines(r, SystemTime::now());
    if !rollout.is_empty() {
        out.blank();
        out.line("Rollout in progress (these Machines are shown, not judged):");
        for l in rollout {
            out.line(l);
        }
    }
    if wide {
        machine_etcd_conditions(&mut out, r);
    }

    out.blank();
    let w = &r.workload_api;
    // Each thing once: `Workload API https://…/ does not answer within 2s`, not the state's
    // word and then the detail that says it again.
    out.line(format!(
        "Workload API{} {}",
        w.server
            .as_deref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default(),
        crate::workload::said(w.state, &w.detail)
    ));
    if wide {
        out.line(format!(
            "APIs: {}, {}, {}, control plane {}, VM labels {}",
            r.header.apis.virtual_machine,
            r.header.apis.cluster,
            r.header.apis.machine,
            or_none(r.header.apis.control_plane.as_deref()),
            or_none(r.header.apis.vm_labels)
        ));
    }

    if let Some(a) = &r.network_policy {
        super::network::section(&mut out, a, wide);
    }

    out.blank();
    if r.findings.is_empty() {
        out.marked("", Tone::Good, "No problems found.", "");
    } else {
        out.line("Findings:");
        for f in &r.findings {
            let (tone, mark) = match f.severity {
                Severity::Error => (Tone::Bad, "ERROR"),
                Severity::Warning => (Tone::Warn, "WARN "),
            };
            out.marked("  ", tone, mark, &format!(" {}: {}", f.code, f.message));
        }
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::PowerState;
    use crate::testing::{api, condition, facts, node};

    fn report() -> StatusReport {
        let mut nodes = vec![
            node(1, PowerState::PoweredOn, true, "Running"),
            node(2, PowerState::PoweredOn, true, "Running"),
        ];
        nodes[0].machine.as_mut().unwrap().etcd_conditions = vec![
            condition(
                "EtcdMemberHealthy",
                "False",
                "NotHealthy",
                "* Etcd reports alarms: NOSPACE\n\u{1b}]0;pwned\u{7}",
            ),
            condition("EtcdPodHealthy", "True", "Running", ""),
        ];
        StatusReport::new(
            facts(3, 2, nodes),
            api(crate::workload::ApiState::Reachable),
            vec![],
            0,
        )
    }

    /// A rollout's Machines get their own lines, each with its phase and age; the table says
    /// so under a heading only when there is one.
    #[test]
    fn rollout_lines_give_phase_and_age() {
        use crate::supervisor::{ProvisioningStep, RolloutPhase};
        let mut nodes: Vec<_> = (1..=4)
            .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
            .collect();
        nodes[0].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Deleting {
            since: Some("2025-06-03T09:02:00Z".into()),
            machine_phase: Some("Deleting".into()),
        });
        nodes[3].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Provisioning {
            since: Some("not a time\u{1b}[2J".into()),
            machine_phase: None,
            waiting_for: ProvisioningStep::VirtualMachine,
        });
        let r = StatusReport::new(
            facts(3, 3, nodes),
            api(crate::workload::ApiState::Reachable),
            vec![],
            0,
        );
        let now = humantime::parse_rfc3339("2025-06-03T09:06:10Z").unwrap();
        assert_eq!(
            rollout_lines(&r, now),
            [
                "  KubeadmControlPlane tkc-cp has 4 replicas for 3 desired",
                "  tkc-cp-1: Deleting (Machine phase Deleting), since 2025-06-03T09:02:00Z, 4m ago",
                "  tkc-cp-4: Provisioning (Machine phase none yet), waiting for its VirtualMachine, since not a time\u{1b}[2J",
            ]
        );
        let table = status_table(&r, false, Paint { on: false });
        assert!(
            table.contains("\nRollout in progress (these Machines are shown, not judged):\n  KubeadmControlPlane tkc-cp has 4 replicas for 3 desired\n  tkc-cp-1: Deleting (Machine phase Deleting), since 2025-06-03T09:02:00Z, "),
            "{table}"
        );
        assert!(
            !table.contains('\u{1b}'),
            "hostile text is shown escaped: {table}"
        );
        let quiet = status_table(&report(), false, Paint { on: false });
        assert!(!quiet.contains("Rollout in progress"), "{quiet}");
    }

    /// How each node was joined is in `-o wide`'s JOIN column; a join without a uid (an older
    /// Supervisor) is said under the table too, and a refused address is shown as refused.
    #[test]
    fn the_join_is_shown() {
        use crate::supervisor::JoinedBy;
        let mut nodes: Vec<_> = (1..=3)
            .map(|i| node(i, PowerState::PoweredOn, true, "Running"))
            .collect();
        nodes[0].join.by = Some(JoinedBy::Uid);
        nodes[1].join.by = Some(JoinedBy::OwnerName);
        let vm = nodes[2].vm.as_mut().unwrap();
        vm.refused_ip = Some("127.0.0.1".parse().unwrap());
        vm.ip = None;
        let r = StatusReport::new(
            facts(3, 3, nodes),
            api(crate::workload::ApiState::Reachable),
            vec![],
            0,
        );
        let wide = status_table(&r, true, Paint { on: false });
        let row = |name: &str| {
            wide.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l.trim_end().to_string())
                .unwrap_or_default()
        };
        assert!(row("NODE").ends_with("ADDRESSES   JOIN"), "{wide}");
        assert!(row("tkc-cp-1").ends_with(" uid"), "{wide}");
        assert!(row("tkc-cp-2").ends_with(" owner name"), "{wide}");
        let table = status_table(&r, false, Paint { on: false });
        assert!(
            table.contains("Joined without a VSphereMachine uid to check (an older Supervisor, or VSphereMachines not readable):\n  tkc-cp-2 by owner name (no uid to check)\n"),
            "{table}"
        );
        assert!(table.contains("127.0.0.1 <refused>"), "{table}");
        assert!(!status_table(&report(), false, Paint { on: false }).contains("Joined without"));
    }

    /// `-o wide` has a line per Machine with etcd conditions, visible and on one line; the
    /// default table keeps its layout.
    #[test]
    fn wide_shows_the_machines_etcd_conditions() {
        let wide = status_table(&report(), true, Paint { on: false });
        assert!(
            wide.contains(
                "Machine etcd conditions (from the KCP):\n  tkc-cp-1: EtcdMemberHealthy False (NotHealthy: * Etcd reports alarms: NOSPACE \\x1b]0;pwned\\x07), EtcdPodHealthy True (Running)\n"
            ),
            "{wide}"
        );
        assert!(
            !wide.contains("tkc-cp-2:"),
            "no conditions, no line: {wide}"
        );
        let table = status_table(&report(), false, Paint { on: false });
        assert!(!table.contains("Machine etcd conditions"), "{table}");
        assert!(!table.contains("EtcdMemberHealthy"), "{table}");
    }
}
