//! The NSX MANAGER section of the `diagnose` table (`--nsx-manager`): the DFW rules that block
//! the paths between the control-plane VMs, with their category and sequence and the pairs
//! each covers, or "NSX Manager shows no rule that drops these paths" with what was read; the
//! rules not blamed, the paths that cannot be decided, the traceflows, the VMs NSX Manager
//! does not know as the Machines', and what could not be read with the privilege it needs.
//! `-o wide` adds every path and every VM. Nothing when the report has no `nsxManager`.
//!
//! Every name here is someone else's input (the manager's policies, rules, groups): each line
//! and cell goes out through [`Lines`], which makes it visible, and is cut to a bound first
//! ([`cut`]) so a huge name cannot flood the terminal.

use super::{firewall, pairs_lines, Lines, Tone};
use crate::analyse::policy::clip;
use crate::report::v1alpha2::{
    DfwCheck, DfwOutcome, DfwRule, NsxIdentityState, NsxManager, NsxTraceflowResult, PathRef,
    TraceflowAgreement,
};

/// At most this many rules (blocking, not blamed), reasons, gaps and findings each get a line;
/// one more counts the rest.
const SHOWN: usize = 8;
/// A line is cut to this many characters (before it is made visible).
const MAX_LINE_CHARS: usize = 1024;
/// A table cell is cut to this many characters.
const MAX_CELL_CHARS: usize = 160;

fn line(out: &mut Lines, s: impl AsRef<str>) {
    out.line(clip(s.as_ref(), MAX_LINE_CHARS));
}

fn cell(s: impl AsRef<str>) -> String {
    clip(s.as_ref(), MAX_CELL_CHARS)
}

/// A rule in a cell: its name, else its path.
fn rule_cell(r: &DfwRule) -> String {
    cell(r.display_name.as_deref().unwrap_or(&r.path))
}

fn outcome_cells(o: &DfwOutcome) -> (String, String) {
    match o {
        DfwOutcome::Dropped { rule } => ("dropped".into(), rule_cell(rule)),
        DfwOutcome::Rejected { rule } => ("rejected".into(), rule_cell(rule)),
        DfwOutcome::Allowed { egress, ingress } => (
            "allowed".into(),
            egress
                .as_ref()
                .or(ingress.as_ref())
                .map(rule_cell)
                .unwrap_or_else(|| "-".into()),
        ),
        DfwOutcome::NoVisibleRule => ("no visible rule".into(), "-".into()),
        DfwOutcome::CannotDecide { why } => ("cannot decide".into(), cell(why)),
    }
}

fn check_cell(c: &DfwCheck) -> String {
    match c {
        DfwCheck::Matched { rule } => format!("{} {}", rule.action, rule_cell(rule)),
        DfwCheck::NoVisibleRule => "-".into(),
        DfwCheck::CannotDecide { .. } => "cannot decide".into(),
    }
}

/// The section; `wide` adds every path (both checks) and every VM.
pub(crate) fn section(out: &mut Lines, n: &NsxManager, wide: bool) {
    let vms = n.vms.len();
    out.blank();
    line(
        out,
        format!(
            "NSX MANAGER ({}, {}: the distributed firewall on TCP 2379/2380 between the {vms} control-plane VMs):",
            n.manager, n.layout
        ),
    );
    if let Some(note) = &n.note {
        out.marked(
            "  ",
            Tone::Warn,
            "warning:",
            &format!(" {}", clip(note, MAX_LINE_CHARS)),
        );
    }
    for b in n.blocking.iter().take(SHOWN) {
        let word = match b.rule.action {
            crate::report::v1alpha2::DfwAction::Reject => "REJECTS",
            _ => "DROPS",
        };
        // Its hit counter around the checks (issue 37), when read.
        let proof = n
            .enforcement
            .as_ref()
            .and_then(|e| e.hits.iter().find(|h| h.rule == b.rule.path))
            .map(|h| match (h.proof, h.hits_during_checks) {
                (crate::report::v1alpha2::DfwProof::Proven, Some(k)) => {
                    format!(" (proven: +{k} hits during the checks)")
                }
                _ => " (matched, not proven by its hit counters)".to_string(),
            })
            .unwrap_or_default();
        out.marked(
            "  ",
            Tone::Bad,
            word,
            &format!(
                " {} on {}{proof}",
                clip(&b.rule.label(), MAX_LINE_CHARS),
                PathRef::ports_text(&b.paths)
            ),
        );
        for l in pairs_lines(&b.paths, vms) {
            line(out, l);
        }
    }
    if n.blocking.len() > SHOWN {
        out.marked(
            "  ",
            Tone::Bad,
            "DROPS",
            &format!(
                " and {} more rules (-o json: nsxManager.blocking)",
                n.blocking.len() - SHOWN
            ),
        );
    }
    if n.blocking.is_empty() {
        // The evaluation's own line: no rule drops, with what was read (and what is undecided).
        line(out, format!("  {}", n.summary));
    }
    for s in n.shadowed.iter().take(SHOWN) {
        line(
            out,
            format!(
                "  not blamed: {} would {} {} path(s) ({}), but {} comes first and allows them",
                clip(&s.rule.label(), MAX_LINE_CHARS / 2),
                s.rule.action.to_string().to_lowercase(),
                s.paths.len(),
                PathRef::paths_text(&s.paths),
                clip(&s.by.label(), MAX_LINE_CHARS / 2),
            ),
        );
    }
    // Rules that match but are not enforced there (the DFW disabled, a VM excluded).
    let not_enforced = n.enforcement.iter().flat_map(|e| e.not_enforced.iter());
    for r in not_enforced.take(SHOWN) {
        line(
            out,
            format!(
                "  not blamed: {} matches {} path(s) ({}) but is not enforced there: {}",
                clip(&r.rule.label(), MAX_LINE_CHARS / 2),
                r.paths.len(),
                PathRef::paths_text(&r.paths),
                clip(&r.why, MAX_LINE_CHARS / 2),
            ),
        );
    }
    let more = n.shadowed.len().saturating_sub(SHOWN) + n.shadowed_not_listed;
    if more > 0 {
        line(
            out,
            format!("  not blamed: and {more} more rules (-o json: nsxManager.shadowed)"),
        );
    }
    for l in firewall::undecided_lines(&n.paths, SHOWN, " (-o json: nsxManager.paths)") {
        line(out, l);
    }
    if !n.traceflows.is_empty() {
        let rows: Vec<Vec<String>> = n
            .traceflows
            .iter()
            .map(|t| {
                let (result, rule) = match &t.result {
                    NsxTraceflowResult::Delivered { .. } => ("delivered".to_string(), "-".into()),
                    NsxTraceflowResult::Dropped {
                        component,
                        reason,
                        acl_rule_id,
                        rule,
                        ..
                    } => (
                        format!(
                            "dropped at {} ({})",
                            component.as_deref().unwrap_or("?"),
                            reason.as_deref().unwrap_or("no reason")
                        ),
                        match (rule, acl_rule_id) {
                            (Some(r), _) => rule_cell(r),
                            (None, Some(id)) => format!("rule id {id} (not read)"),
                            (None, None) => "-".into(),
                        },
                    ),
                    NsxTraceflowResult::Undecided { .. } => ("undecided".to_string(), "-".into()),
                };
                vec![
                    cell(&t.from),
                    cell(&t.to),
                    t.port.to_string(),
                    cell(result),
                    rule,
                    match &t.agreement {
                        TraceflowAgreement::Agrees => "yes".into(),
                        TraceflowAgreement::Disagrees { .. } => "NO".into(),
                        TraceflowAgreement::NotComparable { .. } => "-".into(),
                    },
                    if t.deleted { "yes" } else { "NO" }.into(),
                ]
            })
            .collect();
        out.blank();
        out.line("  Traceflow (a TCP SYN injected at FROM's port):");
        out.table(
            &["FROM", "TO", "PORT", "RESULT", "RULE", "AGREES", "DELETED"],
            &rows,
        );
        for t in &n.traceflows {
            match (&t.result, &t.agreement) {
                (_, TraceflowAgreement::Disagrees { why }) => line(
                    out,
                    format!("  {} → {}:{}: disagrees: {why}", t.from, t.to, t.port),
                ),
                (NsxTraceflowResult::Undecided { why }, _) => line(
                    out,
                    format!("  {} → {}:{}: undecided: {why}", t.from, t.to, t.port),
                ),
                _ => {}
            }
            if !t.deleted {
                line(
                    out,
                    format!(
                        "  {} → {}:{}: not deleted: {} is left on NSX Manager (transient: NSX removes it after two idle hours)",
                        t.from,
                        t.to,
                        t.port,
                        t.path.as_deref().unwrap_or("its traceflow")
                    ),
                );
            }
        }
    }
    if wide && !n.paths.is_empty() {
        let rows: Vec<Vec<String>> = n
            .paths
            .iter()
            .map(|p| {
                let (outcome, rule) = outcome_cells(&p.outcome);
                vec![
                    cell(&p.from),
                    cell(&p.to),
                    p.port.to_string(),
                    outcome,
                    rule,
                    check_cell(&p.egress),
                    check_cell(&p.ingress),
                ]
            })
            .collect();
        out.blank();
        out.table(
            &["FROM", "TO", "PORT", "OUTCOME", "RULE", "EGRESS", "INGRESS"],
            &rows,
        );
    }
    if wide && !n.vms.is_empty() {
        let rows: Vec<Vec<String>> = n
            .vms
            .iter()
            .map(|v| {
                vec![
                    cell(&v.node),
                    match v.identity {
                        NsxIdentityState::Confirmed => "confirmed".into(),
                        NsxIdentityState::NotFound => "not found".into(),
                        NsxIdentityState::Ambiguous => "ambiguous".into(),
                    },
                    cell(v.external_id.as_deref().unwrap_or("-")),
                    cell(v.port.as_deref().unwrap_or("-")),
                ]
            })
            .collect();
        out.blank();
        out.table(
            &["NODE", "NSX IDENTITY", "EXTERNAL ID", "SEGMENT PORT"],
            &rows,
        );
    }
    for v in n
        .vms
        .iter()
        .filter(|v| v.identity != NsxIdentityState::Confirmed)
    {
        line(
            out,
            format!(
                "  {}: {} in NSX Manager: {}",
                v.node,
                if v.identity == NsxIdentityState::Ambiguous {
                    "ambiguous"
                } else {
                    "not found"
                },
                v.why.as_deref().unwrap_or("-")
            ),
        );
    }
    for f in n.findings.iter().take(SHOWN) {
        line(out, format!("  finding: {f}"));
    }
    if n.findings.len() > SHOWN {
        line(
            out,
            format!(
                "  and {} more findings (-o json: nsxManager.findings)",
                n.findings.len() - SHOWN
            ),
        );
    }
    for g in n.gaps.iter().take(SHOWN) {
        let mut s = format!("  not read: {}: {}", g.path, g.why);
        if let Some(st) = g.status {
            s.push_str(&format!(" (HTTP {st})"));
        }
        if let Some(p) = &g.privilege {
            s.push_str(&format!("; needs {p}"));
        }
        line(out, s);
    }
    let more = n.gaps.len().saturating_sub(SHOWN) + n.gaps_not_listed;
    if more > 0 {
        line(
            out,
            format!("  and {more} more parts not read (-o json: nsxManager.gaps)"),
        );
    }
    for note in &n.notes {
        line(out, format!("  note: {note}"));
    }
}

#[cfg(test)]
mod tests;
