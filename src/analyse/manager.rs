//! NSX Manager's view (`--nsx-manager`) joined to a diagnosis: the DFW evaluated for the
//! failing paths ([`super::dfw`]) and the traceflows that prove them. Pure, no I/O: what was
//! read is `nsxmanager::raw::NsxRead` (kept in the evidence, so `analyse` re-judges a bundle
//! the same way), and as `analyse::network::join` does for the Supervisor's SecurityPolicies,
//! this never changes the verdict's code: it names where the packets die and what to fix.
//!
//! On a network verdict the rules that drop the failing paths lead the evidence (NSX Manager
//! comes after the Supervisor in the path of a packet, so its rule is the cause when it
//! drops), each with the paths it covers; then the traceflows; then the paths it cannot decide,
//! each with why; and, when no visible rule blocks them, "NSX Manager shows no rule that drops
//! these paths" with what was read. A traceflow delivered where the probe timed out says the
//! drop is past NSX's reach: inside the guest. What could not be read (a 401/403 naming the
//! privilege it needs) and a VM whose NSX identity is not the Machine's are notes.

use super::dfw::enforce::{self, Enforcement};
use super::dfw::{evaluate, DfwEvaluation, DfwPathOutcome, DfwRule};
use super::network::{failing_paths, group, ports_text};
use super::policy::{paths_text, PathRef};
use super::traceflow::{summarize_traceflow, Agreement, TraceflowResult, TraceflowSummary};
use super::verdict::Diagnosis;
use crate::nsxmanager::model::{self, DfwInput, RuleAction, SupervisorVm};
use crate::nsxmanager::raw::{NsxRead, TraceflowRead};

/// At most this many rules, reasons and notes are spelled out; the rest are counted.
const NAMED: usize = 8;
/// At most this many "cannot decide" reasons are spelled out.
const REASONS_NAMED: usize = 3;

/// What NSX Manager says of one cluster: the evaluation's input, the evaluation, the
/// traceflows summarized.
#[derive(Debug, Clone)]
pub(crate) struct ManagerAssessment {
    pub input: DfwInput,
    pub evaluation: DfwEvaluation,
    pub traceflows: Vec<TraceflowSummary>,
    /// Why traceflows were refused (401/403 on their creation: the account may not run
    /// Traceflow), each reason once, with the privilege needed: notes, not evidence. The
    /// summaries of those traceflows stay in `traceflows` but are not evidence lines.
    pub traceflow_refusals: Vec<String>,
    /// Per entry of `traceflows`: whether the manager refused to create it.
    traceflow_refused: Vec<bool>,
    /// What the manager enforces (the DFW's switch, its exclusion list), already applied to
    /// `evaluation`, and the blocking rules' hit counters.
    pub enforcement: Enforcement,
}

/// Why the manager refused to create traceflow `t` (401/403 before any state was read), with
/// the privilege it needs; None when it ran or failed otherwise.
fn refusal(t: &TraceflowRead) -> Option<String> {
    if t.status.is_some() {
        return None;
    }
    let g = t
        .gaps
        .iter()
        .find(|g| matches!(g.status, Some(401 | 403)))?;
    // A bundle's reading is anyone's file: cut, and no control character (model::clip).
    let mut s = model::clip(&g.why, 256);
    if let Some(p) = &g.privilege {
        s.push_str(&format!("; needs {}", model::clip(p, 256)));
    }
    Some(s)
}

/// The DFW of `read` evaluated for the control-plane VMs `vms` (the Supervisor's view), and
/// every traceflow read summarized against it.
pub(crate) fn assess(read: &NsxRead, vms: &[SupervisorVm]) -> ManagerAssessment {
    let input = crate::nsxmanager::identify::input(read, vms);
    let mut evaluation = evaluate(&input);
    let enforcement = enforce::apply(&mut evaluation, &input, read);
    let traceflows = read
        .traceflows
        .iter()
        .map(|t| summarize_traceflow(t, &input, &evaluation))
        .collect();
    let mut traceflow_refusals: Vec<String> = Vec::new();
    let mut traceflow_refused = Vec::new();
    for t in &read.traceflows {
        let why = refusal(t);
        traceflow_refused.push(why.is_some());
        if let Some(w) = why {
            if !traceflow_refusals.contains(&w) {
                traceflow_refusals.push(w);
            }
        }
    }
    ManagerAssessment {
        input,
        evaluation,
        traceflows,
        traceflow_refusals,
        traceflow_refused,
        enforcement,
    }
}

/// `drops`/`rejects`, as a sentence says what a rule does.
fn verb(r: &DfwRule) -> &'static str {
    match r.action {
        RuleAction::Reject => "rejects",
        _ => "drops",
    }
}

/// Adds what NSX Manager says to a diagnosis (pure; see the module). Its lines go first: the
/// Supervisor's own (SecurityPolicies, "outside the Supervisor's view") follow them.
pub(crate) fn join(diagnosis: &mut Diagnosis, a: &ManagerAssessment) {
    let ev = &a.evaluation;
    let mut notes: Vec<String> = Vec::new();
    for g in ev.gaps.iter().take(NAMED) {
        notes.push(format!("NSX Manager: not read: {g}"));
    }
    for f in ev.findings.iter().take(NAMED) {
        notes.push(format!("warning: NSX Manager: {f}"));
    }
    notes.extend(
        ev.notes
            .iter()
            .take(NAMED)
            .map(|n| format!("NSX Manager: {n}")),
    );
    notes.extend(
        a.traceflow_refusals
            .iter()
            .take(NAMED)
            .map(|w| format!("NSX Manager: traceflows not run: {w}")),
    );

    if diagnosis.verdict.code.names_policies() {
        let failing = failing_paths(&diagnosis.matrices);
        let total = failing.len();
        let mut by_rule: Vec<(DfwRule, Vec<PathRef>)> = Vec::new();
        let mut undecided: Vec<(String, Vec<PathRef>)> = Vec::new();
        let mut open: Vec<PathRef> = Vec::new();
        // Rules that match but are not enforced there (the DFW disabled, a VM excluded).
        let mut unenforced: Vec<((DfwRule, String), Vec<PathRef>)> = Vec::new();
        for p in &failing {
            if let Some(n) = a.enforcement.not_enforced_on(p) {
                group(&mut unenforced, (n.rule.clone(), n.why.clone()), p.clone());
                continue;
            }
            match ev.path(p.port, &p.from, &p.to).map(|e| &e.outcome) {
                Some(DfwPathOutcome::Dropped { rule } | DfwPathOutcome::Rejected { rule }) => {
                    group(&mut by_rule, rule.clone(), p.clone())
                }
                Some(DfwPathOutcome::CannotDecide { why }) => {
                    group(&mut undecided, why.clone(), p.clone())
                }
                Some(_) => open.push(p.clone()),
                None => group(
                    &mut undecided,
                    "its VMs were not evaluated (not found in NSX Manager, or not read)"
                        .to_string(),
                    p.clone(),
                ),
            }
        }
        let mut lines = Vec::new();
        for (rule, paths) in by_rule.iter().take(NAMED) {
            lines.push(format!(
                "NSX Manager's distributed firewall rule {} {} {} on {} of the {total} failing paths ({}){}",
                rule.label(),
                verb(rule),
                ports_text(paths),
                paths.len(),
                paths_text(paths),
                a.enforcement.hits_text(rule)
            ));
        }
        for ((rule, why), paths) in unenforced.iter().take(NAMED) {
            lines.push(format!(
                "NSX Manager's distributed firewall rule {} matches {} on {} of the {total} failing paths ({}) but is not enforced there, so it is not blamed: {why}",
                rule.label(),
                ports_text(paths),
                paths.len(),
                paths_text(paths),
            ));
        }
        if by_rule.len() > NAMED {
            lines.push(format!(
                "and {} more NSX Manager rules drop failing paths (-o json: nsxManager)",
                by_rule.len() - NAMED
            ));
        }
        let run = a
            .traceflows
            .iter()
            .enumerate()
            .filter(|(i, _)| !a.traceflow_refused.get(*i).copied().unwrap_or(false))
            .map(|(_, t)| t);
        for t in run.take(NAMED) {
            let failing_path = failing
                .iter()
                .any(|p| p.port == t.port && p.from == t.from && p.to == t.to);
            let mut line = t.text.clone();
            if let (TraceflowResult::Delivered { .. }, true) = (&t.result, failing_path) {
                line.push_str(": NSX delivered the SYN where the probe's connect failed, so the drop is past NSX's reach, inside the guest (the node's own firewall, or nothing listening)");
            }
            if let Agreement::Disagrees { why } = &t.agreement {
                line.push_str(&format!(" (the DFW as read says otherwise: {why})"));
            }
            lines.push(line);
        }
        for (why, paths) in undecided.iter().take(REASONS_NAMED) {
            lines.push(format!(
                "{} of the {total} failing paths ({}) cannot be decided from NSX Manager's distributed firewall: {why}",
                paths.len(),
                paths_text(paths)
            ));
        }
        if undecided.len() > REASONS_NAMED {
            lines.push(format!(
                "and {} more reasons failing paths cannot be decided from NSX Manager (-o json: nsxManager)",
                undecided.len() - REASONS_NAMED
            ));
        }
        if let Some(line) = ev.no_drop_line(&open) {
            if open.len() == total {
                lines.push(line);
            } else {
                lines.push(format!(
                    "for {} of the {total} failing paths ({}): {line}",
                    open.len(),
                    paths_text(&open)
                ));
            }
        }
        let v = &mut diagnosis.verdict;
        for (i, l) in lines.into_iter().enumerate() {
            v.evidence.insert(i, l);
        }
        let steps: Vec<String> = by_rule
            .iter()
            .take(NAMED)
            .map(|(rule, paths)| {
                format!(
                    "Have NSX Manager's distributed firewall rule {} changed or disabled (it {} {} between the control-plane VMs; Security > Distributed Firewall, category {}), then re-run kubectl etcdnet diagnose",
                    rule.label(),
                    verb(rule),
                    ports_text(paths),
                    rule.category
                )
            })
            .collect();
        for (i, s) in steps.into_iter().enumerate() {
            v.next_steps.insert(i, s);
        }
    }
    diagnosis.verdict.notes.extend(notes);
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
