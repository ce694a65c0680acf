//! A traceflow (`--nsx-traceflow`: NSX's own trace of one TCP SYN from FROM's port to TO's
//! address and port) read and held against the DFW evaluation of its path: a second, independent
//! source beside the rules' evaluation ([`super::dfw`]), not part of it. Pure: what the run read
//! ([`TraceflowRead`]) in, a [`TraceflowSummary`] out.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dfw::{rule_ref, DfwEvaluation, DfwPath, DfwPathOutcome, DfwRule};
use super::firewall::clip;
use crate::nsxmanager::model::{name, path_str, DfwInput, MAX_MEMBERS};
use crate::nsxmanager::raw::TraceflowRead;

/// What one traceflow saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "result", rename_all_fields = "camelCase")]
#[schemars(rename = "NsxTraceflowResult")]
pub enum TraceflowResult {
    /// Delivered to the peer's port.
    Delivered {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        component: Option<String>,
    },
    /// Dropped: where (`component`, `transportNode`), why (`reason`, e.g. `FW_RULE`), by which
    /// rule (`aclRuleId` / `aclRulePath` as observed; `rule`: the rule read with that path or
    /// id, absent when none was read).
    Dropped {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        component: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transport_node: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acl_rule_id: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acl_rule_path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<Box<DfwRule>>,
    },
    /// Neither observed (still running, failed, observations not read).
    Undecided { why: String },
}

/// Whether a traceflow agrees with the evaluation of its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "agreement", rename_all_fields = "camelCase")]
#[schemars(rename = "TraceflowAgreement")]
pub enum Agreement {
    /// Delivered where the evaluation blocks nothing, or dropped by the rule it names.
    Agrees,
    Disagrees {
        why: String,
    },
    /// The evaluation or the traceflow did not decide: nothing to compare.
    NotComparable {
        why: String,
    },
}

/// One traceflow: a TCP SYN injected at FROM's port towards TO's address and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "NsxTraceflow")]
pub struct TraceflowSummary {
    pub from: String,
    pub to: String,
    pub port: u16,
    /// Its path on the manager (`/infra/traceflows/etcdnet-…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its `operation_state` as last read (`FINISHED`, `IN_PROGRESS`, `FAILED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// How many observations were read.
    pub observations: usize,
    pub result: TraceflowResult,
    pub agreement: Agreement,
    /// The run saw it deleted (the manager answered the DELETE, or 404). False: it is left on
    /// the manager (NSX removes a transient traceflow after two idle hours).
    pub deleted: bool,
    /// One line: `traceflow a → b:2380: dropped at DFW (FW_RULE) by "name" (…)`.
    pub text: String,
}

impl TraceflowSummary {
    /// Its line ([`TraceflowSummary::text`]).
    fn line(&self) -> String {
        let what = match &self.result {
            TraceflowResult::Delivered { component } => match component {
                Some(c) => format!("delivered (at {c})"),
                None => "delivered".to_string(),
            },
            TraceflowResult::Dropped {
                component,
                reason,
                acl_rule_id,
                rule,
                ..
            } => {
                let mut s = format!(
                    "dropped at {} ({})",
                    component.as_deref().unwrap_or("an unnamed component"),
                    reason.as_deref().unwrap_or("no reason given")
                );
                match (rule, acl_rule_id) {
                    (Some(r), _) => s.push_str(&format!(" by {}", r.label())),
                    (None, Some(id)) => {
                        s.push_str(&format!(" by rule id {id}, not among the rules read"))
                    }
                    (None, None) => {}
                }
                s
            }
            TraceflowResult::Undecided { why } => format!("undecided: {why}"),
        };
        format!(
            "traceflow {} → {}:{}: {what}",
            self.from, self.to, self.port
        )
    }
}

fn resolve(input: &DfwInput, id: Option<u64>, path: Option<&str>) -> Option<DfwRule> {
    let all = || {
        input
            .policies
            .iter()
            .flat_map(|p| p.rules.iter().map(move |r| (p, r)))
    };
    if let Some(path) = path {
        if let Some((p, r)) = all().find(|(_, r)| r.path.as_deref() == Ok(path)) {
            return rule_ref(p, r);
        }
    }
    let id = id?;
    let mut found = all().filter(|(_, r)| r.rule_id == Some(id));
    let (p, r) = found.next()?;
    // Two rules read with one datapath id: not one rule.
    if found.next().is_some() {
        return None;
    }
    rule_ref(p, r)
}

/// An observation that delivers (`TraceflowObservationDelivered`) or, with `dropped`, drops
/// (`TraceflowObservationDropped`, `…DroppedLogical`); any other kind (forwarded, received,
/// relayed…) is `None`. Fields: phspies/nsxtsdk `NSXTTraceflowObservationType.cs`
/// (`component_type`, `component_name`, `transport_node_name`),
/// `NSXTTraceflowObservationDroppedType.cs` (`reason`, `acl_rule_id`),
/// `NSXTPolicyTraceflowObservationDroppedType.cs` and `…DroppedLogicalType.cs`
/// (`acl_rule_path`); the rule is resolved by the caller.
pub(crate) fn observed(v: &Value, dropped: bool) -> Option<TraceflowResult> {
    let component = name(v, "component_name").or_else(|| name(v, "component_type"));
    match (v.get("resource_type")?.as_str()?, dropped) {
        ("TraceflowObservationDelivered", false) => Some(TraceflowResult::Delivered { component }),
        ("TraceflowObservationDropped" | "TraceflowObservationDroppedLogical", true) => {
            Some(TraceflowResult::Dropped {
                component,
                reason: name(v, "reason"),
                transport_node: name(v, "transport_node_name"),
                acl_rule_id: v.get("acl_rule_id").and_then(Value::as_u64),
                acl_rule_path: v
                    .get("acl_rule_path")
                    .and_then(Value::as_str)
                    .and_then(|s| path_str(s).ok()),
                rule: None,
            })
        }
        _ => None,
    }
}

/// One traceflow's observations summarized, and compared with the evaluation of its path
/// (`from`/`to` are node names, as the evaluation's).
pub fn summarize_traceflow(
    t: &TraceflowRead,
    input: &DfwInput,
    eval: &DfwEvaluation,
) -> TraceflowSummary {
    let obs = &t.observations.results[..t.observations.results.len().min(MAX_MEMBERS)];
    let state = t.status.as_ref().and_then(|s| name(s, "operation_state"));
    let seen = |dropped| obs.iter().find_map(|o| observed(o, dropped));
    let mut result = seen(true).or_else(|| seen(false));
    if let Some(TraceflowResult::Dropped {
        acl_rule_id,
        acl_rule_path,
        rule,
        ..
    }) = &mut result
    {
        *rule = resolve(input, *acl_rule_id, acl_rule_path.as_deref()).map(Box::new);
    }
    let result = result.unwrap_or_else(|| {
        let mut why = format!(
            "no delivered or dropped observation ({} observations",
            obs.len()
        );
        if let Some(s) = &state {
            why.push_str(&format!(", state {s}"));
        }
        why.push(')');
        if let Some(g) = &t.observations.incomplete {
            why.push_str(&format!(
                "; observations not all read: {}",
                clip(&g.why, 256)
            ));
        }
        if let Some(g) = t.gaps.first() {
            why.push_str(&format!("; {}", clip(&g.why, 256)));
        }
        TraceflowResult::Undecided { why }
    });
    let agreement = agreement(&result, eval.path(t.port, &t.from, &t.to));
    let nsx_clip = crate::nsxmanager::model::clip;
    let mut s = TraceflowSummary {
        from: nsx_clip(&t.from, 256),
        to: nsx_clip(&t.to, 256),
        port: t.port,
        path: Some(nsx_clip(&t.path, 1024)),
        state,
        observations: obs.len(),
        result,
        agreement,
        deleted: t.deleted,
        text: String::new(),
    };
    s.text = nsx_clip(&s.line(), 2048);
    s
}

fn agreement(result: &TraceflowResult, path: Option<&DfwPath>) -> Agreement {
    // Its reasons name two rules at most: cut to the contract's bound for a line.
    let cut = |why: String| crate::nsxmanager::model::clip(&why, 2048);
    let not = |why: String| Agreement::NotComparable { why: cut(why) };
    let Some(path) = path else {
        return not("the path was not evaluated".into());
    };
    let why = match (result, &path.outcome) {
        (TraceflowResult::Undecided { why }, _) => return not(why.clone()),
        (_, DfwPathOutcome::CannotDecide { why }) => {
            return not(format!("the evaluation cannot decide: {why}"))
        }
        (TraceflowResult::Delivered { .. }, o) => match o.blocking_rule() {
            None => return Agreement::Agrees,
            Some(r) => format!("delivered, but the evaluation names {}", r.label()),
        },
        (
            TraceflowResult::Dropped {
                rule,
                acl_rule_id,
                reason,
                component,
                ..
            },
            o,
        ) => match (o.blocking_rule(), rule) {
            (Some(e), Some(t)) if e.path == t.path => return Agreement::Agrees,
            (Some(e), None) if acl_rule_id.is_some() && *acl_rule_id == e.rule_id => {
                return Agreement::Agrees
            }
            (Some(e), Some(t)) => {
                format!(
                    "the traceflow names {}, the evaluation {}",
                    t.label(),
                    e.label()
                )
            }
            (Some(e), None) => format!(
                "dropped ({}) by no rule read, the evaluation names {}",
                reason.as_deref().unwrap_or("no reason"),
                e.label()
            ),
            (None, Some(t)) => format!(
                "dropped by {}, which the evaluation does not find first",
                t.label()
            ),
            (None, None) => format!(
                "dropped at {} ({}{}), and the evaluation finds no visible rule that drops it",
                component.as_deref().unwrap_or("an unnamed component"),
                reason.as_deref().unwrap_or("no reason"),
                acl_rule_id
                    .map(|id| format!(", rule id {id} not among the rules read"))
                    .unwrap_or_default()
            ),
        },
    };
    Agreement::Disagrees { why: cut(why) }
}

#[cfg(test)]
mod tests;
