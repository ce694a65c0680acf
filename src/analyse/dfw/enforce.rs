//! What NSX Manager enforces, applied to the DFW evaluation (issue 37): a rule the evaluation
//! finds first is not enforced on a VM's vNIC when the DFW is disabled (`enable_firewall`
//! false) or the VM is in the DFW exclusion list (its port listed, or a listed group holding
//! it: by NSX's group associations of the VM and its port, else by member lists where the
//! group's type makes them tell): the check at that vNIC then meets no rule (in its VPC's
//! project's own list: the project's and VPCs' rules are not enforced there, the least that
//! list may do), and the rule is never blamed for it; it is
//! listed in [`Enforcement::not_enforced`] with why. What could not be read (a 403, a 404, a
//! group's members not read whole) is unknown and said so, never "not enforced": the rules are
//! then named as matched. And the blocking rules' hit counters, read before and after the path
//! checks: a rule whose `hit_count` grew then is proven ([`Hits::Grew`]), else matched.
//! Pure, no I/O: what was read is [`NsxRead::enforcement`] and [`NsxRead::statistics`]
//! (`nsxmanager::enforce` reads and parses them).

use crate::analyse::firewall::PathRef;
use crate::nsxmanager::enforce::{
    dfw_state, excluded, excluded_by_project, rule_hits, DfwState, Excluded, Hits,
};
use crate::nsxmanager::model::DfwInput;
use crate::nsxmanager::raw::NsxRead;

use super::{DfwEvaluation, DfwPathOutcome, DfwRule, DfwSideOutcome};

/// At most this many not-enforced rules (and notes) are kept.
const MAX_LISTED: usize = 32;

/// Why the DFW is disabled, in the evidence's words.
pub const DFW_DISABLED: &str =
    "the DFW is disabled on this NSX Manager (enable_firewall is false in /infra/settings/firewall/security)";

/// A DROP/REJECT that blocked paths in the evaluation and does not once the checks where it is
/// not enforced are taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEnforced {
    pub rule: DfwRule,
    /// Why (the DFW disabled, or which VMs are excluded and how), each reason once, `; `
    /// between them.
    pub why: String,
    pub paths: Vec<PathRef>,
}

/// What NSX Manager enforces, as read, and what it changed in the evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enforcement {
    /// Whether the switch and exclusion list were read at all (an older bundle's reading did
    /// not): without, nothing here is said.
    pub read: bool,
    /// `None` when not read.
    pub dfw: Option<DfwState>,
    /// Each VM (by node) and whether it is excluded.
    pub excluded: Vec<(String, Excluded)>,
    /// On VPC: each VM (by node) and whether its project's own exclusion list holds it (empty
    /// when that list was not read: T1, the `default` project, an older bundle). Which rules
    /// that list takes off a vNIC is not documented: the least, the project's and its VPCs'
    /// own ([`Enforcement::side_off`]).
    pub project_excluded: Vec<(String, Excluded)>,
    pub not_enforced: Vec<NotEnforced>,
    /// Each blocking rule's hit counter around the checks, when the statistics were read.
    pub hits: Vec<(DfwRule, Hits)>,
}

impl Enforcement {
    /// Why the check at `node`'s vNIC enforces nothing, when it does not.
    fn off(&self, node: &str) -> Option<String> {
        if self.dfw == Some(DfwState::Disabled) {
            return Some(DFW_DISABLED.to_string());
        }
        self.excluded.iter().find_map(|(n, e)| match e {
            Excluded::Yes(why) if n == node => Some(why.clone()),
            _ => None,
        })
    }

    /// What the check at `node`'s vNIC comes to when `side` (its outcome in the evaluation)
    /// is not enforced there, and why; `None` when it is (or cannot be told).
    ///
    /// The DFW disabled or `node` in the provider's exclusion list: nothing of the DFW acts
    /// there, the check meets no rule. `node` in its project's own list: that list's reach is
    /// not documented, so the least is taken: the project's and its VPCs' rules (trees 1 and 2
    /// of [`super::tree_rank`]) are not enforced there; a first match among them is then
    /// unknown ("cannot decide": what the provider's default policy after them decides at that
    /// vNIC is not evaluated), a first match among the provider's rules stays (a note says its
    /// enforcement is not confirmed).
    fn side_off(&self, node: &str, side: &DfwSideOutcome) -> Option<(String, DfwSideOutcome)> {
        if let Some(why) = self.off(node) {
            return Some((why, DfwSideOutcome::NoVisibleRule));
        }
        let why = self.project_excluded.iter().find_map(|(n, e)| match e {
            Excluded::Yes(why) if n == node => Some(why.clone()),
            _ => None,
        })?;
        let DfwSideOutcome::Matched { rule } = side else {
            return None;
        };
        let tenant = super::tree_rank(&rule.policy_path).is_some_and(|t| t >= 1);
        tenant.then(|| {
            let undecided = format!(
                "{why}: the project's and its VPCs' rules are not enforced at its vNIC, and what the provider's rules after them decide there is not evaluated"
            );
            (why, DfwSideOutcome::CannotDecide { why: undecided })
        })
    }

    /// The blocking rule's counter, when the statistics were read.
    pub fn hits_of(&self, rule: &DfwRule) -> Option<&Hits> {
        self.hits.iter().find(|(r, _)| r == rule).map(|(_, h)| h)
    }

    /// What follows a blocking rule's evidence line: proven with the count, or matched and
    /// why not proven. Empty when the statistics were not read (an older bundle).
    pub fn hits_text(&self, rule: &DfwRule) -> String {
        match self.hits_of(rule) {
            None => String::new(),
            Some(Hits::Grew(n)) => format!(
                "; proven: +{n} hits during the checks (its rule statistics, read before and after)"
            ),
            Some(Hits::Same) => "; matched, not proven: its hit count did not grow during the checks (NSX Manager aggregates the hosts' counters periodically, so it may not show yet)".to_string(),
            Some(Hits::NotRead(why)) => {
                format!("; matched, not proven: its hit counters could not be read ({why})")
            }
        }
    }

    /// The not-enforced rule covering the path, when there is one.
    pub fn not_enforced_on(&self, p: &PathRef) -> Option<&NotEnforced> {
        self.not_enforced.iter().find(|n| n.paths.contains(p))
    }
}

/// Applies what NSX Manager enforces to `eval` (built from `input`, read as `read`): each
/// check at a vNIC the DFW does not reach meets no rule, the paths are combined again, the
/// blocking rules rebuilt; notes say what is unknown. Then the blocking rules' hit counters.
pub fn apply(eval: &mut DfwEvaluation, input: &DfwInput, read: &NsxRead) -> Enforcement {
    let mut out = Enforcement::default();
    if let Some(e) = &read.enforcement {
        out.read = true;
        let dfw = dfw_state(e);
        match &dfw {
            DfwState::Disabled => eval
                .notes
                .push(format!("{DFW_DISABLED}: none of its rules is enforced, none is blamed")),
            DfwState::Unknown(why) => eval.notes.push(format!(
                "whether the DFW is enabled is unknown ({why}): rules are named as matched, their enforcement not confirmed"
            )),
            DfwState::Enabled => {}
        }
        out.dfw = Some(dfw);
        if e.exclude_list.is_some() && !e.system_members {
            eval.notes.push("the DFW exclusion list was read without its system members (the manager refused system_owned=true)".into());
        }
        for vm in &input.vms {
            // NSX's group associations first; member lists only where the group's type
            // makes them answer (`lists_tell`), else unknown.
            let x = excluded(e, vm, &|g| super::lists_tell(input, g));
            match &x {
                Excluded::Yes(why) => eval
                    .notes
                    .push(format!("{why}: no DFW rule is enforced on its vNIC")),
                Excluded::Unknown(why) => eval.notes.push(format!(
                    "{why}: its rules are named as matched, their enforcement not confirmed"
                )),
                Excluded::No => {}
            }
            out.excluded.push((vm.node.clone(), x));
            let Some(x) = excluded_by_project(e, vm, &|g| super::lists_tell(input, g)) else {
                continue;
            };
            match &x {
                Excluded::Yes(why) => eval.notes.push(format!(
                    "{why}: the project's and its VPCs' rules are not enforced on its vNIC; whether the provider's (/infra) rules are is not documented, so those are named as matched, their enforcement not confirmed"
                )),
                Excluded::Unknown(why) => eval.notes.push(format!(
                    "{why}: its project's and VPC's rules are named as matched, their enforcement not confirmed"
                )),
                Excluded::No => {}
            }
            out.project_excluded.push((vm.node.clone(), x));
        }
        eval.notes.dedup();
        eval.notes.truncate(MAX_LISTED);
        let mut changed = false;
        for p in &mut eval.paths {
            let e_off = out.side_off(&p.from, &p.egress);
            let i_off = out.side_off(&p.to, &p.ingress);
            if e_off.is_none() && i_off.is_none() {
                continue;
            }
            let path = PathRef {
                port: p.port,
                from: p.from.clone(),
                to: p.to.clone(),
            };
            let was = p.outcome.blocking_rule().cloned();
            let mut whys: Vec<String> = Vec::new();
            for (side, off) in [(&mut p.egress, e_off), (&mut p.ingress, i_off)] {
                let Some((why, now)) = off else { continue };
                if !whys.contains(&why) {
                    whys.push(why);
                }
                // Nothing of the DFW acts at this vNIC (or not the rules that matched).
                *side = now;
            }
            p.outcome = DfwPathOutcome::of(&p.egress, &p.ingress);
            // The rule that blocked the path before, and no longer does: not enforced there
            // (one that still blocks it at the other end's vNIC is still blamed).
            if let Some(rule) = was.filter(|r| p.outcome.blocking_rule() != Some(r)) {
                let room = out.not_enforced.len() < MAX_LISTED;
                // One entry a rule, every reason it is not enforced said once.
                match out.not_enforced.iter_mut().find(|n| n.rule == rule) {
                    Some(n) => {
                        if !n.paths.contains(&path) {
                            n.paths.push(path.clone());
                        }
                        for why in whys {
                            if !n.why.split("; ").any(|w| w == why) {
                                n.why.push_str("; ");
                                n.why.push_str(&why);
                            }
                        }
                    }
                    None if room => out.not_enforced.push(NotEnforced {
                        rule,
                        why: whys.join("; "),
                        paths: vec![path.clone()],
                    }),
                    None => {}
                }
            }
            changed = true;
        }
        if changed {
            rebuild(eval, &out);
        }
    }
    if read.statistics.is_some() {
        for b in &eval.blocking {
            let h = rule_hits(read.statistics.as_ref(), &b.rule.policy_path, &b.rule.path);
            out.hits.push((b.rule.clone(), h));
        }
    }
    out
}

/// The blocking rules and the summary again, after checks were turned off.
fn rebuild(eval: &mut DfwEvaluation, e: &Enforcement) {
    eval.blocking = crate::analyse::firewall::blocking_of_paths(&eval.paths);
    let why = if e.dfw == Some(DfwState::Disabled) {
        DFW_DISABLED.to_string()
    } else {
        let names: Vec<&str> = e
            .excluded
            .iter()
            .chain(&e.project_excluded)
            .filter_map(|(_, x)| match x {
                Excluded::Yes(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        names.join("; ")
    };
    eval.summary = super::summary(eval, Some(&why));
}

#[cfg(test)]
mod tests;
