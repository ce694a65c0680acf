//! NSX Manager's distributed firewall as a `DiagnoseReport` carries it (`nsxManager`): what one
//! run read from the manager (`--nsx-manager`), the DFW evaluated for TCP 2379/2380 between the
//! control-plane VMs, the rules that block paths and those not blamed, the traceflows
//! (`--nsx-traceflow`), and what could not be read with the privilege it needs. Absent without
//! `--nsx-manager`, so every other report is byte for byte what it was.
//!
//! Everything here came from the manager (someone else's input) or was built from it: every
//! string is bounded and cleaned of control characters here ([`clip`]), and every list is
//! capped (the `MAX_*` constants below; the evaluation's own lists are bounded by
//! `analyse::dfw`). Nothing here holds a credential: the reading keeps none.

use serde::{Deserialize, Serialize};

use super::firewall::{Doc, Source, Words};
use super::PathRef;
use crate::analyse::dfw::DfwEvaluation;
use crate::analyse::firewall;
use crate::nsxmanager::model::{clip, DfwInput, DfwVm, Identity};
use crate::nsxmanager::raw::{Gap, Layout, NsxRead};

/// The engine's types are the contract: a rule, what was read, what a traceflow saw.
pub use crate::analyse::dfw::{
    DfwCounts as NsxReadCounts, DfwRule, DfwShadowed as DfwShadowedRule,
};
pub use crate::analyse::traceflow::{
    Agreement as TraceflowAgreement, TraceflowResult as NsxTraceflowResult,
    TraceflowSummary as NsxTraceflow,
};
pub use crate::nsxmanager::model::RuleAction as DfwAction;
/// Names, ids, paths of VMs and ports, and layout parts are cut to the engine's one bound; a
/// path (a rule's, a policy's, a port's) to the reader's.
pub(crate) use crate::nsxmanager::model::{MAX_NAME_CHARS, MAX_PATH_CHARS};
/// A line of ours (a reason, a summary, a finding) is cut to this many characters.
pub(crate) const MAX_TEXT_CHARS: usize = 2048;
/// At most this many paths (every ordered pair of `analyse::dfw::MAX_VMS` VMs on 2 ports).
pub(crate) const MAX_PATHS: usize =
    2 * crate::analyse::dfw::MAX_VMS * (crate::analyse::dfw::MAX_VMS - 1);
/// At most this many VMs are listed.
pub(crate) const MAX_VMS: usize = crate::analyse::dfw::MAX_VMS;
/// At most this many traceflows are listed (a run creates at most
/// `nsxmanager::traceflow::MAX_TRACEFLOWS`).
pub(crate) const MAX_TRACEFLOWS: usize = 16;
/// At most this many gaps are listed; `gapsNotListed` counts the rest.
pub(crate) const MAX_GAPS: usize = 32;
/// At most this many findings and notes each.
pub(crate) const MAX_LINES: usize = 32;

fn name(s: &str) -> String {
    clip(s, MAX_NAME_CHARS)
}

fn text(s: &str) -> String {
    clip(s, MAX_TEXT_CHARS)
}

/// What one run read from NSX Manager and what the DFW evaluation made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NsxManager {
    /// The manager's URL as given to `--nsx-manager` (`https://host[:port]`; never credentials).
    pub manager: String,
    /// The Policy API tree read: `infra/domains/default` (T1/NCP) or
    /// `orgs/<org>/projects/<project>/vpcs/<vpc>` (VPC), from the Supervisor's networking.
    pub layout: String,
    /// How the run authenticated (`session` or `basic`), never with what; absent when no
    /// request was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// `NSX Manager's certificate was not checked (--nsx-insecure-skip-tls-verify)` when it was
    /// not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What was read, in numbers.
    pub read: NsxReadCounts,
    /// The same in words, as the evidence lines say it.
    pub read_text: String,
    /// One line: the first blocking rule and how many paths it blocks, or `NSX Manager shows no
    /// rule that drops these paths` with what was read (and how many paths cannot be decided).
    pub summary: String,
    /// Each control-plane VM as NSX Manager knows it.
    pub vms: Vec<NsxVmIdentity>,
    /// Every path evaluated: port 2379 then 2380, FROM then TO by node name.
    pub paths: Vec<DfwPathEvaluation>,
    /// Each rule that blocks paths (the first match of a check is its DROP/REJECT), with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocking: Vec<DfwBlockingRule>,
    /// DROP/REJECT rules that match allowed paths after the ALLOW that decides them: not
    /// blamed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadowed: Vec<DfwShadowedRule>,
    /// Shadowed rules found past the listed ones.
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub shadowed_not_listed: usize,
    /// The traceflows run (`--nsx-traceflow`), each held against the evaluation of its path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traceflows: Vec<NsxTraceflow>,
    /// What could not be read, with the privilege a 401/403 needs (a refusal first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<NsxGap>,
    /// Gaps past the listed ones.
    #[serde(default, skip_serializing_if = "crate::report::is_zero")]
    pub gaps_not_listed: usize,
    /// What does not fit (a port whose VIF is another VM's, a VM with the Machine's name but
    /// another uuid): said, never used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// What the evaluation assumes where NSX's order is not visible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the manager enforces: the DFW's switch, its exclusion list, the rules that match
    /// but are not enforced, the blocking rules' hit counters. Absent when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<NsxEnforcement>,
}

/// Whether something is so, as read: `unknown` when it could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NsxKnown {
    Yes,
    No,
    Unknown,
}

/// What NSX Manager enforces (`/infra/settings/firewall/security`, its `exclude-list`) and the
/// blocking rules' hit counters read before and after the path checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NsxEnforcement {
    /// `enable_firewall`: `yes`, `no` (nothing of the DFW is enforced), `unknown`.
    pub dfw_enabled: NsxKnown,
    /// Why it is `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dfw_why: Option<String>,
    /// Each VM: whether it is in the DFW exclusion list.
    pub vms: Vec<NsxVmExclusion>,
    /// DROP/REJECT rules the evaluation finds first on checks where they are not enforced:
    /// not blamed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_enforced: Vec<DfwNotEnforcedRule>,
    /// Each blocking rule's hit counter around the checks (absent when the statistics were not
    /// read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hits: Vec<DfwRuleHits>,
}

/// Whether one VM is in the DFW exclusion list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NsxVmExclusion {
    pub node: String,
    pub excluded: NsxKnown,
    /// How (directly, through which group), or why it is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A rule that matches paths where it is not enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DfwNotEnforcedRule {
    pub rule: DfwRule,
    /// Why: the DFW disabled, or the VM excluded and how.
    pub why: String,
    pub paths: Vec<PathRef>,
}

/// What a blocking rule's hit counter says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DfwProof {
    /// Its hit count grew during the checks: it dropped them.
    Proven,
    /// Read before and after, the same (NSX refreshes its counters periodically: not a
    /// disproof).
    NotGrown,
    /// The counters could not be compared (why).
    NotRead,
}

/// One blocking rule's hit counter around the checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DfwRuleHits {
    /// The rule's path.
    pub rule: String,
    pub proof: DfwProof,
    /// How many hits it counted during the checks (`proven`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits_during_checks: Option<u64>,
    /// Why it is `notRead`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl From<&crate::analyse::dfw::enforce::Enforcement> for NsxEnforcement {
    fn from(e: &crate::analyse::dfw::enforce::Enforcement) -> Self {
        use crate::nsxmanager::enforce::{DfwState, Excluded, Hits};
        let (dfw_enabled, dfw_why) = match &e.dfw {
            Some(DfwState::Enabled) => (NsxKnown::Yes, None),
            Some(DfwState::Disabled) => (NsxKnown::No, None),
            Some(DfwState::Unknown(w)) => (NsxKnown::Unknown, Some(text(w))),
            None => (NsxKnown::Unknown, Some("not read".to_string())),
        };
        NsxEnforcement {
            dfw_enabled,
            dfw_why,
            vms: e
                .excluded
                .iter()
                .take(MAX_VMS)
                .map(|(node, x)| {
                    // On VPC its project's own list too: in either, excluded (from what that
                    // list reaches); unknown in either, unknown.
                    let project = e.project_excluded.iter().find(|(n, _)| n == node);
                    let x = match (x, project.map(|(_, p)| p)) {
                        (Excluded::Yes(_), _) | (_, None) => x,
                        (_, Some(p @ Excluded::Yes(_))) => p,
                        (Excluded::Unknown(_), _) => x,
                        (_, Some(p)) => p,
                    };
                    let (excluded, why) = match x {
                        Excluded::Yes(w) => (NsxKnown::Yes, Some(text(w))),
                        Excluded::No => (NsxKnown::No, None),
                        Excluded::Unknown(w) => (NsxKnown::Unknown, Some(text(w))),
                    };
                    NsxVmExclusion {
                        node: name(node),
                        excluded,
                        why,
                    }
                })
                .collect(),
            not_enforced: e
                .not_enforced
                .iter()
                .take(MAX_LINES)
                .map(|n| DfwNotEnforcedRule {
                    rule: n.rule.clone(),
                    why: text(&n.why),
                    paths: paths_of(&n.paths),
                })
                .collect(),
            hits: e
                .hits
                .iter()
                .take(MAX_PATHS)
                .map(|(r, h)| {
                    let (proof, n, why) = match h {
                        Hits::Grew(n) => (DfwProof::Proven, Some(*n), None),
                        Hits::Same => (DfwProof::NotGrown, None, None),
                        Hits::NotRead(w) => (DfwProof::NotRead, None, Some(text(w))),
                    };
                    DfwRuleHits {
                        rule: clip(&r.path, MAX_PATH_CHARS),
                        proof,
                        hits_during_checks: n,
                        why,
                    }
                })
                .collect(),
        }
    }
}

/// Whether the VM NSX Manager answered is the Machine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum NsxIdentityState {
    /// One fabric VM whose uuids (or, with none on either side, its name) are the Machine's.
    Confirmed,
    /// No VM in NSX is the Machine's.
    NotFound,
    /// Several candidates: none is used.
    Ambiguous,
}

/// A control-plane VM in NSX Manager.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NsxVmIdentity {
    /// The Kubernetes node name.
    pub node: String,
    /// The VirtualMachine's name (its vSphere display name).
    pub vm_name: String,
    /// The addresses matched against the groups.
    pub ips: Vec<String>,
    pub identity: NsxIdentityState,
    /// Why it is not `Confirmed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The confirmed fabric VM's `external_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The confirmed fabric VM's `display_name` in NSX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_name: Option<String>,
    /// Its segment (or VPC subnet) port's policy path, kept only when one of the VM's own VIFs
    /// ties the port to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// The findings about this node (a port or a VM that is not the Machine's: never used).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// NSX Manager's outcome of one check (egress at FROM's vNIC, ingress at TO's).
pub(crate) type DfwCheck = firewall::SideOutcome<DfwRule>;
/// NSX Manager's outcome of one path.
pub(crate) type DfwOutcome = firewall::PathOutcome<DfwRule>;
/// One path through the DFW.
pub(crate) type DfwPathEvaluation = firewall::PathEvaluation<DfwRule>;
/// A DFW rule that blocks paths, with them.
pub(crate) type DfwBlockingRule = firewall::Blocking<DfwRule>;

impl Source for DfwRule {
    const WORDS: Words = Words {
        check: Doc {
            name: "DfwCheck",
            about: "What one check (egress at FROM's vNIC, ingress at TO's) comes to.",
            parts: &[
                Some("The first matching enabled rule (layer 3, or a layer 2 DROP/REJECT)."),
                Some("No rule read matches."),
                Some("A rule that might come first cannot be evaluated, or the order is not visible."),
            ],
        },
        outcome: Doc {
            name: "DfwOutcome",
            about: "What one path comes to, both checks together.",
            parts: &[
                Some("A DROP is the first match of a check (the egress check's first)."),
                Some("A REJECT is."),
                Some("No check blocks and at least one has an ALLOW as its first match."),
                Some("No rule read matches either check."),
                Some("A check cannot be decided and the other does not block."),
            ],
        },
        path: Doc {
            name: "DfwPathEvaluation",
            about: "One path (port, FROM → TO; VMs named by their node) through the DFW.",
            parts: &[
                Some("The check at FROM's vNIC (rules applied there, direction OUT or IN_OUT)."),
                Some("The check at TO's vNIC (direction IN or IN_OUT)."),
            ],
        },
        blocking: Doc {
            name: "DfwBlockingRule",
            about: "A rule that blocks paths, with them.",
            parts: &[Some("The paths it blocks, in path order.")],
        },
    };
}

fn paths_of(paths: &[PathRef]) -> Vec<PathRef> {
    paths
        .iter()
        .take(MAX_PATHS)
        .map(|p| PathRef {
            port: p.port,
            from: name(&p.from),
            to: name(&p.to),
        })
        .collect()
}

/// Something not read from NSX Manager.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NsxGap {
    /// The API path asked.
    pub path: String,
    /// The HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub why: String,
    /// The NSX privilege a 401/403 needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privilege: Option<String>,
}

impl From<&Gap> for NsxGap {
    fn from(g: &Gap) -> Self {
        NsxGap {
            path: clip(&g.path, MAX_PATH_CHARS),
            status: g.status,
            why: text(&g.why),
            privilege: g.privilege.as_deref().map(text),
        }
    }
}

/// `infra/domains/default` or `orgs/<org>/projects/<project>/vpcs/<vpc>`.
fn layout_text(l: &Layout) -> String {
    match l {
        Layout::Infra { domain } => format!("infra/domains/{}", name(domain)),
        Layout::Vpc { org, project, vpc } => format!(
            "orgs/{}/projects/{}/vpcs/{}",
            name(org),
            name(project),
            name(vpc)
        ),
    }
}

/// Whether a line of ours names `node` as a word: node names are DNS labels, so a name
/// followed by another label character (`cp1` in `cp10`) is not it.
fn mentions(line: &str, node: &str) -> bool {
    if node.is_empty() {
        return false;
    }
    let label = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    line.match_indices(node).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + node.len()..].chars().next();
        // A trailing `.` ends a sentence, not a name.
        let after_ok = match after {
            None => true,
            Some('.') => line[i + node.len() + 1..]
                .chars()
                .next()
                .is_none_or(|c| !label(c)),
            Some(c) => !label(c),
        };
        before.is_none_or(|c| !label(c)) && after_ok
    })
}

fn vm_identity(v: &DfwVm, findings: &[String]) -> NsxVmIdentity {
    let (identity, why) = match &v.identity {
        Identity::Confirmed => (NsxIdentityState::Confirmed, None),
        Identity::NotFound(w) => (NsxIdentityState::NotFound, Some(text(w))),
        Identity::Ambiguous(w) => (NsxIdentityState::Ambiguous, Some(text(w))),
    };
    let nsx = v.nsx_vm.as_ref();
    NsxVmIdentity {
        node: name(&v.node),
        vm_name: name(&v.vm_name),
        ips: v.ips.iter().map(ToString::to_string).collect(),
        identity,
        why,
        external_id: nsx.and_then(|n| n.external_id.as_deref()).map(name),
        nsx_name: nsx.and_then(|n| n.display_name.as_deref()).map(name),
        port: v
            .port
            .as_ref()
            .and_then(|p| p.path.as_deref().or(p.id.as_deref()))
            .map(|p| clip(p, MAX_PATH_CHARS)),
        findings: findings
            .iter()
            .filter(|f| mentions(f, &v.node))
            .take(MAX_LINES)
            .cloned()
            .collect(),
    }
}

impl NsxManager {
    /// The section of a diagnosis that read NSX Manager: `read` as the run read it, `input` the
    /// engine's input built from it, `eval` its evaluation, `traceflows` each traceflow of
    /// `read` summarized against `eval`, `note` the run's note on the manager's certificate
    /// (`NsxArgs::report_note`). Pure; bounded whatever the manager answered.
    pub fn new(
        read: &NsxRead,
        input: &DfwInput,
        eval: &DfwEvaluation,
        traceflows: &[NsxTraceflow],
        note: Option<String>,
    ) -> NsxManager {
        let findings: Vec<String> = eval
            .findings
            .iter()
            .take(MAX_LINES)
            .map(|f| text(f))
            .collect();
        let vms = input
            .vms
            .iter()
            .take(MAX_VMS)
            .map(|v| vm_identity(v, &findings))
            .collect();
        let traceflows = traceflows.iter().take(MAX_TRACEFLOWS).cloned().collect();
        // Every gap, once: the reading's (its lists' and lookups' are among them), then each
        // traceflow's (run after the reading).
        let mut gaps: Vec<NsxGap> = Vec::new();
        let mut gaps_not_listed = 0;
        let traceflow_gaps = read
            .traceflows
            .iter()
            .flat_map(|t| t.observations.incomplete.iter().chain(t.gaps.iter()));
        for g in read.gaps.iter().chain(traceflow_gaps) {
            let g = NsxGap::from(g);
            if gaps.contains(&g) {
                continue;
            }
            if gaps.len() < MAX_GAPS {
                gaps.push(g);
            } else {
                gaps_not_listed += 1;
            }
        }
        NsxManager {
            manager: clip(&read.manager, MAX_NAME_CHARS),
            layout: layout_text(&read.layout),
            auth: read.auth.as_deref().map(name),
            note: note.as_deref().map(text),
            read: eval.counts.clone(),
            read_text: text(&eval.read_text()),
            summary: text(&eval.summary),
            vms,
            paths: eval
                .paths
                .iter()
                .take(MAX_PATHS)
                .map(|p| p.map(DfwRule::clone, text, name))
                .collect(),
            blocking: eval
                .blocking
                .iter()
                .take(MAX_PATHS)
                .map(|b| b.map(DfwRule::clone, paths_of))
                .collect(),
            shadowed: eval.shadowed.clone(),
            shadowed_not_listed: eval.shadowed_not_listed,
            traceflows,
            gaps,
            gaps_not_listed,
            findings,
            notes: eval.notes.iter().take(MAX_LINES).map(|n| text(n)).collect(),
            enforcement: None,
        }
    }

    /// With what the manager enforces (`analyse::manager::ManagerAssessment::enforcement`),
    /// when the reading read it.
    pub fn with_enforcement(mut self, e: &crate::analyse::dfw::enforce::Enforcement) -> Self {
        self.enforcement = e.read.then(|| e.into());
        self
    }

    /// The paths that cannot be decided, grouped by why (in path order).
    pub fn undecided(&self) -> Vec<(&str, Vec<PathRef>)> {
        firewall::undecided(&self.paths)
    }
}

#[cfg(test)]
pub(crate) mod tests;
