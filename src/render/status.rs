//! `status` as tables.

use super::{control_plane_cell, count, or_none, structured, Format, Lines, Paint, Tone, NONE};
use crate::analyse::Severity;
use crate::error::Result;
use crate::report::StatusReport;
use crate::workload::ApiState;

pub fn status(report: &StatusReport, format: Format, paint: Paint) -> Result<String> {
    match format {
        Format::Json | Format::Yaml => structured(report, format),
        Format::Table => Ok(status_table(report, false, paint)),
        Format::Wide => Ok(status_table(report, true, paint)),
    }
}

fn workload_cell(report: &StatusReport) -> String {
    let w = &report.workload_api;
    match w.state {
        ApiState::Reachable | ApiState::HttpError => format!(
            "{} ({} {}, {}ms)",
            w.state,
            w.path.as_deref().unwrap_or("?"),
            or_none(w.http_status),
            w.elapsed_ms.unwrap_or(0)
        ),
        ApiState::Unknown => "Unknown".to_string(),
        _ => format!("{} ({}ms)", w.state, w.elapsed_ms.unwrap_or(0)),
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
        header.extend(["ENDPOINT", "CONTEXT"]);
        row.push(or_none(r.header.cluster.control_plane_endpoint.as_deref()));
        row.push(r.header.context.clone());
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
                let why = [c.reason.as_deref(), c.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                // A multi-line message (CAPI's v1beta2 bullets) reads as one line here.
                let mut line = format!("  {} {}", c.kind, c.status);
                if !why.is_empty() {
                    line.push_str(&format!(" ({})", why.replace('\n', " ")));
                }
                out.line(line);
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
        header.extend(["CLASS", "VERSION", "FAILURE DOMAIN", "ADDRESSES"]);
    }
    let rows: Vec<Vec<String>> = r
        .nodes
        .iter()
        .map(|n| {
            let m = n.machine.as_ref();
            let vm = n.vm.as_ref();
            let mut row = vec![
                m.map(|m| m.name.clone())
                    .unwrap_or_else(|| "<no machine>".into()),
                vm.map(|v| v.name.clone())
                    .unwrap_or_else(|| "<no vm>".into()),
                match vm {
                    Some(v) => {
                        v.ip.map(|ip| ip.to_string())
                            .unwrap_or_else(|| "<pending>".into())
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
            }
            row
        })
        .collect();
    if rows.is_empty() {
        out.line("No control-plane Machines or VirtualMachines found.");
    } else {
        out.table(&header, &rows);
    }

    out.blank();
    let w = &r.workload_api;
    out.line(format!(
        "Workload API: {} {}",
        w.state,
        w.server
            .as_deref()
            .map(|s| format!("at {s}: "))
            .unwrap_or_default()
            + &w.detail
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
