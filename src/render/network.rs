//! The NETWORK POLICY section of the `status` and `diagnose` tables: the rules that block or
//! would block TCP 2379/2380 between the control-plane VMs, with their VM pairs, the network
//! objects NSX did not realize, what could not be read; with `-o wide`, the policies that select
//! the VMs. Shown only when the Supervisor serves an NSX group and something applies.
//!
//! Every text from the objects (names, condition messages) goes out through [`Lines`], which
//! makes it visible (no control or invisible character reaches the terminal).

use super::{firewall, pairs_lines, Lines, Tone};
use crate::report::v1alpha2::{NetworkAssessment, PathRef, PolicyEvaluation, RealizedState};

/// At most this many rules (or reasons) of each kind get a line; one more counts the rest.
const RULES_SHOWN: usize = 8;

/// The section, when anything applies; `wide` adds the table of the policies that select the
/// cluster's VMs.
pub(crate) fn section(out: &mut Lines, a: &NetworkAssessment<PolicyEvaluation>, wide: bool) {
    if !a.applies() {
        return;
    }
    let ev = &a.evaluation;
    let vms = ev.vms.len();
    out.blank();
    out.line(format!(
        "NETWORK POLICY (NSX, namespace {}: TCP 2379/2380 between the {vms} control-plane VMs):",
        ev.namespace
    ));
    let blocking = &ev.blocking;
    for b in blocking.iter().take(RULES_SHOWN) {
        out.marked(
            "  ",
            Tone::Bad,
            "BLOCKS",
            &format!(
                " {}: {} on {}",
                b.rule.text(),
                b.rule.action_text(),
                PathRef::ports_text(&b.paths)
            ),
        );
        for l in pairs_lines(&b.paths, vms) {
            out.line(l);
        }
    }
    if blocking.len() > RULES_SHOWN {
        out.marked(
            "  ",
            Tone::Bad,
            "BLOCKS",
            &format!(
                " and {} more rules (-o json: networkPolicy.evaluation.blocking)",
                blocking.len() - RULES_SHOWN
            ),
        );
    }
    let warnings = &ev.warnings;
    for w in warnings.iter().take(RULES_SHOWN) {
        out.marked(
            "  ",
            Tone::Warn,
            "WOULD BLOCK",
            &format!(" {}", w.text(vms)),
        );
    }
    let more = warnings.len().saturating_sub(RULES_SHOWN) + ev.warnings_not_listed;
    if more > 0 {
        out.marked(
            "  ",
            Tone::Warn,
            "WOULD BLOCK",
            &format!(" and {more} more rules (-o json: networkPolicy.evaluation.covering)"),
        );
    }
    // One line per reason a path cannot be decided (each names its policy), the first few.
    for l in firewall::undecided_lines(&ev.paths, RULES_SHOWN, "") {
        out.line(l);
    }
    for s in &ev.set_aside {
        out.line(format!(
            "  not in effect: SecurityPolicy {}/{} ({}): {}",
            s.namespace,
            s.name,
            s.group.name(),
            s.why
        ));
    }
    for n in &ev.notes {
        out.line(format!("  note: {n}"));
    }
    if ev.set_aside_not_listed > 0 {
        out.line(format!(
            "  and {} more SecurityPolicies of the group nsx-operator does not reconcile",
            ev.set_aside_not_listed
        ));
    }
    for p in &a.realization {
        let why = [p.reason.as_deref(), p.message.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
        // A NetworkPolicy's `nsx-op/error` is the object's own claim (its editor writes it),
        // never NSX's word: said as such, in the warning tone. The last claim may only count
        // the rest (no name).
        if p.claim {
            let text = match p.name.is_empty() {
                true => format!(" {}", why.replace('\n', " ")),
                // Quoted with its own quotes and backslashes escaped, so the claim cannot
                // close the quote and speak past it; the line is then made `visible` as all
                // outside text is (never Rust's Debug format, a second escaping with other rules).
                false => format!(
                    " NetworkPolicy {}: {} \"{}\" (the object's own claim, not NSX's status)",
                    p.name,
                    p.condition,
                    why.replace('\n', " ")
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                ),
            };
            out.marked("  ", Tone::Warn, "CLAIMED", &text);
            continue;
        }
        out.marked(
            "  ",
            Tone::Bad,
            "NOT REALIZED",
            &format!(
                " {} {}{}: {} {}{}",
                p.kind,
                p.name,
                p.vm.as_ref()
                    .map(|v| format!(" (VM {v})"))
                    .unwrap_or_default(),
                p.condition,
                p.status.as_deref().unwrap_or(""),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.replace('\n', " "))
                }
            ),
        );
    }
    let selecting: Vec<_> = ev.selecting_vms().collect();
    if wide && !selecting.is_empty() {
        let rows: Vec<Vec<String>> = selecting
            .iter()
            .map(|p| {
                vec![
                    format!("{}/{}", p.namespace, p.name),
                    p.group.name().to_string(),
                    p.priority
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| "?".into()),
                    match p.realization.state {
                        _ if !p.invalid.is_empty() => "no (invalid)",
                        RealizedState::Realized => "yes",
                        RealizedState::NotRealized => "no",
                        RealizedState::Unknown => "unknown",
                    }
                    .to_string(),
                    if p.applies_to.len() == vms {
                        format!("all {vms}")
                    } else {
                        p.applies_to.join(",")
                    },
                ]
            })
            .collect();
        out.line("  Policies that select the control-plane VMs:");
        out.table(
            &["  POLICY", "GROUP", "PRIORITY", "REALIZED", "VMS"],
            &rows
                .into_iter()
                .map(|mut r| {
                    r[0] = format!("  {}", r[0]);
                    r
                })
                .collect::<Vec<_>>(),
        );
    } else if !selecting.is_empty() {
        out.line(format!(
            "  {} of {} SecurityPolicies select the control-plane VMs (-o wide lists them)",
            selecting.len(),
            ev.policies.len()
        ));
    }
    if ev.policies_not_read > 0 {
        out.line(format!(
            "  {} more SecurityPolicies that can apply were not evaluated (bounded; those that can touch etcd's ports and are in effect come first, by priority): checks they could come first in cannot be decided",
            ev.policies_not_read
        ));
    }
    out.line(format!("  read: {}", a.read_text()));
    for n in &a.unread {
        out.line(format!("  could not read: {n}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::policy::{evaluate, PolicyInput};
    use crate::render::Paint;
    use crate::report::v1alpha2::RealizationProblem;

    /// A condition's message from the Supervisor cannot reach the terminal as a sequence.
    #[test]
    fn text_from_the_objects_is_made_visible() {
        let a = NetworkAssessment {
            read: vec![],
            unread: vec!["list x: forbidden\u{1b}]0;title\u{7}".into()],
            realization: vec![RealizationProblem {
                kind: "SubnetPort".into(),
                name: "p".into(),
                condition: "Ready".into(),
                status: Some("False".into()),
                reason: Some("R\u{1b}[2J".into()),
                message: Some("line\nbreak\u{9b}31m".into()),
                vm: None,
                claim: false,
            }],
            evaluation: evaluate(&PolicyInput {
                namespace: "ns".into(),
                namespace_labels: Default::default(),
                policies: vec![],
                vms: vec![],
                ..Default::default()
            }),
        };
        let mut out = Lines::new(Paint { on: false });
        section(&mut out, &a, true);
        let text = out.finish();
        assert!(text.contains("NOT REALIZED SubnetPort p"), "{text}");
        assert!(
            !text
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{9b}' || c == '\u{7}'),
            "{text:?}"
        );
        assert!(text.lines().all(|l| !l.starts_with("break")), "{text}");
    }

    /// A NetworkPolicy's `nsx-op/error` is its editor's claim: the table says so in the warning
    /// tone, never NOT REALIZED.
    #[test]
    fn a_claim_is_said_as_the_objects_own() {
        let claim = |name: &str, message: &str| RealizationProblem {
            kind: "NetworkPolicy".into(),
            name: name.into(),
            condition: "nsx-op/error".into(),
            status: None,
            reason: None,
            message: Some(message.into()),
            vm: None,
            claim: true,
        };
        let a = NetworkAssessment {
            read: vec![],
            unread: vec![],
            realization: vec![
                claim("forged", "NSX: etcd blocked"),
                claim("", "3 more NetworkPolicies carry the annotation"),
            ],
            evaluation: evaluate(&PolicyInput::default()),
        };
        let mut out = Lines::new(Paint { on: false });
        section(&mut out, &a, false);
        let text = out.finish();
        assert!(!text.contains("NOT REALIZED"), "{text}");
        assert!(
            text.contains("CLAIMED NetworkPolicy forged: nsx-op/error \"NSX: etcd blocked\" (the object's own claim, not NSX's status)"),
            "{text}"
        );
        assert!(
            text.contains("CLAIMED 3 more NetworkPolicies carry the annotation"),
            "{text}"
        );
    }

    /// A drowned namespace (one priority-0 Allow, 63 policies of 64 shadowed Drops): a
    /// section of a few lines, not thousands.
    #[test]
    fn a_drowned_namespace_gives_a_short_section() {
        let a: NetworkAssessment<PolicyEvaluation> =
            crate::analyse::assess(&crate::analyse::network::tests::drowned());
        for wide in [false, true] {
            let mut out = Lines::new(Paint { on: false });
            section(&mut out, &a, wide);
            let text = out.finish();
            let lines = text.lines().count();
            assert!(lines < 100, "{lines} lines:\n{text}");
            assert!(text.contains("and 4024 more rules"), "{text}");
        }
    }
}
