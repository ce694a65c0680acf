//! The typed SecurityPolicy, read tolerantly from a `kube::api::DynamicObject` of either group.
//!
//! Shapes checked against vmware-tanzu/nsx-operator `pkg/apis/vpc/v1alpha1/securitypolicy_types.go`
//! (`crd.nsx.vmware.com/v1alpha1`) and `pkg/apis/legacy/v1alpha1/securitypolicy_types.go`
//! (`nsx.vmware.com/v1alpha1`, `groupversion_info.go`): the same schema. What a field means comes
//! from `pkg/nsx/services/securitypolicy/parse.go` (action and direction are read
//! case-insensitively), `builder.go` and `expand.go` (see the module `policy` for the rules).
//!
//! Nothing here fails: a policy, a rule or a part of a rule that cannot be read keeps the reason
//! (our words, with bounded names) and the evaluation says "cannot decide" where it matters.

use kube::api::DynamicObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Text from the Supervisor is cut, not rewritten: the render layer escapes what it hides.
pub use crate::analyse::firewall::clip;
/// A rule's action is the engine's; an `ipBlocks[].cidr` is the engine's address.
pub use crate::analyse::firewall::Action;
pub(crate) use crate::analyse::firewall::AddrSpec;
use crate::selector::Selector;

/// The engine's bounds: rules read from one policy (more makes the rest one unreadable tail),
/// and names.
pub use crate::analyse::firewall::{MAX_NAME_CHARS, MAX_SECTION_RULES as MAX_RULES};
/// At most this many `appliedTo` entries, peers of a rule, ports of a rule.
pub(crate) const MAX_ENTRIES: usize = 64;
/// At most this many `ipBlocks` in one peer.
pub(crate) const MAX_IP_BLOCKS: usize = 256;
/// A condition's reason is cut to this many characters, its message to [`MAX_MESSAGE_CHARS`].
pub(crate) const MAX_REASON_CHARS: usize = 128;
pub(crate) const MAX_MESSAGE_CHARS: usize = 1024;

// Both groups serve `v1alpha1`, the same schema. In the json, a group is its name.
/// The API group a SecurityPolicy was served from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum NsxGroup {
    /// `crd.nsx.vmware.com`: nsx-operator on VPC networking.
    #[serde(rename = "crd.nsx.vmware.com")]
    Vpc,
    /// `nsx.vmware.com`: the older NCP/T1 networking.
    #[serde(rename = "nsx.vmware.com")]
    Legacy,
}

impl NsxGroup {
    pub fn name(self) -> &'static str {
        match self {
            NsxGroup::Vpc => "crd.nsx.vmware.com",
            NsxGroup::Legacy => "nsx.vmware.com",
        }
    }
}

/// One SecurityPolicy as listed, with the group it was listed from (list items may lack
/// `apiVersion`, so the reader says which list it came from).
#[derive(Debug, Clone)]
pub struct PolicyObject {
    pub group: NsxGroup,
    pub object: DynamicObject,
}

impl PolicyObject {
    pub fn in_group(group: NsxGroup, object: DynamicObject) -> PolicyObject {
        PolicyObject { group, object }
    }
}

// `In`/`Ingress` and `Out`/`Egress` are one each (parse.go's `getRuleDirection`).
/// A rule's direction.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Direction {
    In,
    Out,
}

// Its `status.conditions[type=Ready]`: True is nsx-operator's `SecurityPolicyReady`, False
// its `SecurityPolicyNotReady` (the error in the message); none: not processed yet.
/// Whether NSX realized a policy (its Ready condition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RealizedState {
    /// Ready True.
    Realized,
    /// Ready False.
    NotRealized,
    /// No Ready condition yet, or another status.
    Unknown,
}

/// A policy's Ready condition: its state, reason and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Realization {
    pub state: RealizedState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One `appliedTo` entry (`SecurityPolicyTarget`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// `vmSelector`: VMs of the policy's namespace.
    Vms(Selector),
    /// `podSelector`: Pods of the policy's namespace, never a VM.
    Pods(Selector),
    /// `{}`: neither selector. nsx-operator's group is then the cluster tag alone
    /// (`updateTargetExpressions`): every port of the NSX cluster.
    Everything,
    /// Both selectors in one entry: nsx-operator refuses the whole policy ("PodSelector and
    /// VMSelector are not allowed to set in one group", `updateTargetExpressions`); see
    /// `validate`. Selects nothing.
    VmsAndPods,
}

/// One peer of `from`/`to` (`SecurityPolicyPeer`). `ipBlocks` and the selectors are ORed
/// (`updatePeerExpressions` joins them with OR).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Peer {
    pub vms: Option<Selector>,
    pub pods: Option<Selector>,
    pub namespaces: Option<Selector>,
    /// `ipBlocks[].cidr` (a bare address is a /32 or /128).
    pub ip_blocks: Vec<AddrSpec>,
}

/// One `ports` entry: the protocol (TCP when absent) and the destination ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PortSpec {
    /// `port` from 0 (absent) to `endPort` (0 or absent: `port` alone); no port and no
    /// endPort is every port of the protocol (`buildRuleServiceEntries`).
    Numbers {
        protocol: String,
        start: u16,
        end: Option<u16>,
    },
    /// A named port (a string `port`, even `"2379"`): nsx-operator resolves it from the
    /// container ports of the Pods the rule's podSelector selects, and makes that entry's
    /// destination those Pods' IPs (`expand.go` `expandRuleByPort`, `getPodSelectors`: "We
    /// only consider named port for PodSelector, not VMSelector"; docs/security-policy.md:
    /// "Support named port for Pod, but not for VM"). It never matches traffic to a VM.
    /// `end_port`: an `endPort` beside it, which nsx-operator refuses.
    Named { end_port: bool },
}

/// A rule read as far as it could be: each part may be unreadable on its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rule {
    pub index: usize,
    pub name: Option<String>,
    pub action: Result<Action, String>,
    pub direction: Result<Direction, String>,
    /// Rule-level `appliedTo` (empty: none).
    pub applied_to: Result<Vec<Target>, String>,
    /// `from` (else `sources`) for In, `to` (else `destinations`) for Out; empty: any.
    pub peers: Result<Vec<Peer>, String>,
    /// Empty: any protocol, any port.
    pub ports: Result<Vec<PortSpec>, String>,
}

/// One SecurityPolicy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Policy {
    pub group: NsxGroup,
    pub namespace: String,
    pub name: String,
    /// 0..=1000, lower first; absent is 0 (`omitempty`).
    pub priority: Result<u32, String>,
    /// Policy-level `appliedTo` (empty: none).
    pub applied_to: Result<Vec<Target>, String>,
    pub rules: Vec<Rule>,
    /// Rules past [`MAX_RULES`] were not read.
    pub rules_truncated: bool,
    pub realization: Realization,
    /// What was read but not used, said once (e.g. an `except` nsx-operator does not have).
    pub notes: Vec<String>,
}

impl Policy {
    /// Reads one policy. Never fails: what cannot be read is kept as the reason.
    pub fn read(obj: &PolicyObject) -> Policy {
        let meta = &obj.object.metadata;
        let data = &obj.object.data;
        let spec = data.get("spec").unwrap_or(&Value::Null);
        let mut notes = Vec::new();
        let priority = match spec.get("priority") {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|p| *p <= 1000)
                .map(|p| p as u32)
                .ok_or_else(|| "spec.priority is not a number from 0 to 1000".to_string()),
        };
        let applied_to = targets(spec.get("appliedTo"), "spec.appliedTo");
        let (rules, rules_truncated) = match spec.get("rules") {
            None | Some(Value::Null) => (Vec::new(), false),
            Some(Value::Array(rs)) => (
                rs.iter()
                    .take(MAX_RULES)
                    .enumerate()
                    .map(|(i, r)| rule(i, r, &mut notes))
                    .collect(),
                rs.len() > MAX_RULES,
            ),
            Some(_) => (vec![Rule::unreadable(0, "spec.rules is not a list")], false),
        };
        Policy {
            group: obj.group,
            namespace: clip(meta.namespace.as_deref().unwrap_or(""), MAX_NAME_CHARS),
            name: clip(meta.name.as_deref().unwrap_or(""), MAX_NAME_CHARS),
            priority,
            applied_to,
            rules,
            rules_truncated,
            realization: realization(data),
            notes,
        }
    }
}

impl Rule {
    fn unreadable(index: usize, why: &str) -> Rule {
        Rule {
            index,
            name: None,
            action: Err(why.to_string()),
            direction: Err(why.to_string()),
            applied_to: Err(why.to_string()),
            peers: Err(why.to_string()),
            ports: Err(why.to_string()),
        }
    }
}

fn realization(data: &Value) -> Realization {
    let conditions = data.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions.and_then(|cs| {
        cs.iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    });
    let text = |k: &str, max: usize| {
        let s = ready?.get(k)?.as_str().filter(|s| !s.is_empty());
        s.map(|s| clip(s, max))
    };
    Realization {
        state: match ready.and_then(|c| c.get("status")?.as_str()) {
            Some("True") => RealizedState::Realized,
            Some("False") => RealizedState::NotRealized,
            _ => RealizedState::Unknown,
        },
        reason: text("reason", MAX_REASON_CHARS),
        message: text("message", MAX_MESSAGE_CHARS),
    }
}

fn bounded<'a>(v: Option<&'a Value>, what: &str, max: usize) -> Result<&'a [Value], String> {
    match v {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) if a.len() <= max => Ok(a),
        Some(Value::Array(_)) => Err(format!("{what} has more than {max} entries")),
        Some(_) => Err(format!("{what} is not a list")),
    }
}

/// The selector at `key` of the object at `at`.
fn selector(o: &Value, at: &str, key: &str) -> Result<Option<Selector>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => Selector::from_value(v)
            .map(Some)
            .map_err(|e| format!("{at}.{key}: {e}")),
    }
}

/// A list of objects (`appliedTo`, peers), each read by `f` with its place (`what[i]`).
fn objects<T>(
    v: Option<&Value>,
    what: &str,
    mut f: impl FnMut(&Value, &str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    bounded(v, what, MAX_ENTRIES)?
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let at = format!("{what}[{i}]");
            match o.is_object() {
                true => f(o, &at),
                false => Err(format!("{at} is not an object")),
            }
        })
        .collect()
}

fn targets(v: Option<&Value>, what: &str) -> Result<Vec<Target>, String> {
    objects(v, what, |t, at| {
        Ok(
            match (
                selector(t, at, "vmSelector")?,
                selector(t, at, "podSelector")?,
            ) {
                // nsx-operator refuses the whole policy for it (validate.rs says so).
                (Some(_), Some(_)) => Target::VmsAndPods,
                (Some(s), None) => Target::Vms(s),
                (None, Some(s)) => Target::Pods(s),
                (None, None) => Target::Everything,
            },
        )
    })
}

fn peers(v: Option<&Value>, what: &str, notes: &mut Vec<String>) -> Result<Vec<Peer>, String> {
    // Both vmSelector and podSelector: nsx-operator refuses the whole policy (validate.rs); such
    // a peer selects nothing.
    objects(v, what, |p, at| {
        Ok(Peer {
            vms: selector(p, at, "vmSelector")?,
            pods: selector(p, at, "podSelector")?,
            namespaces: selector(p, at, "namespaceSelector")?,
            ip_blocks: ip_blocks(p.get("ipBlocks"), &format!("{at}.ipBlocks"), notes)?,
        })
    })
}

fn ip_blocks(
    v: Option<&Value>,
    what: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<AddrSpec>, String> {
    bounded(v, what, MAX_IP_BLOCKS)?
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if b.get("except").is_some() {
                // The SecurityPolicy IPBlock has `cidr` only: nsx-operator never sees an except.
                let note = "ipBlocks[].except is not part of the SecurityPolicy schema: ignored, as nsx-operator does".to_string();
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            // A CIDR or one address; a range `a-b` is NSX Manager's, not an IPBlock's.
            b.get("cidr")
                .and_then(Value::as_str)
                .filter(|s| !s.contains('-'))
                .and_then(AddrSpec::parse)
                .ok_or_else(|| format!("{what}[{i}].cidr is not an IP CIDR"))
        })
        .collect()
}

fn ports(v: Option<&Value>) -> Result<Vec<PortSpec>, String> {
    bounded(v, "ports", MAX_ENTRIES)?
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let protocol = match p.get("protocol") {
                None | Some(Value::Null) => "TCP".to_string(),
                Some(Value::String(s)) if !s.is_empty() => clip(s, 16).to_ascii_uppercase(),
                Some(_) => return Err(format!("ports[{i}].protocol is not a string")),
            };
            let end = match p.get("endPort") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_u64().filter(|n| *n <= 65535) {
                    Some(0) => None,
                    Some(n) => Some(n as u16),
                    None => return Err(format!("ports[{i}].endPort is not a port number")),
                },
            };
            match p.get("port") {
                // A JSON string is an IntOrString of type String: a named port to nsx-operator,
                // even "2379".
                Some(Value::String(_)) => Ok(PortSpec::Named {
                    end_port: end.is_some(),
                }),
                None | Some(Value::Null) => Ok(PortSpec::Numbers {
                    protocol,
                    start: 0,
                    end,
                }),
                Some(v) => match v.as_u64().filter(|n| *n <= 65535) {
                    Some(n) => Ok(PortSpec::Numbers {
                        protocol,
                        start: n as u16,
                        end,
                    }),
                    None => Err(format!("ports[{i}].port is not a port number")),
                },
            }
        })
        .collect()
}

fn rule(index: usize, r: &Value, notes: &mut Vec<String>) -> Rule {
    if !r.is_object() {
        return Rule::unreadable(index, "the rule is not an object");
    }
    let word = |k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .map(str::to_ascii_uppercase)
    };
    let action = match word("action").as_deref() {
        Some("ALLOW") => Ok(Action::Allow),
        Some("DROP") => Ok(Action::Drop),
        Some("REJECT") => Ok(Action::Reject),
        _ => Err("action is not Allow, Drop or Reject".to_string()),
    };
    let direction = match word("direction").as_deref() {
        Some("IN" | "INGRESS") => Ok(Direction::In),
        Some("OUT" | "EGRESS") => Ok(Direction::Out),
        _ => Err("direction is not In, Ingress, Out or Egress".to_string()),
    };
    // `from`/`to` win over the deprecated `sources`/`destinations` (docs/security-policy.md;
    // builder.go getRuleSourcePeers/getRuleDestinationPeers take the new one when non-empty).
    let pick = |new: &str, old: &str| match r.get(new) {
        Some(Value::Array(a)) if !a.is_empty() => (r.get(new), new.to_string()),
        _ => (r.get(old), old.to_string()),
    };
    let peers = match direction {
        Ok(Direction::In) => {
            let (v, what) = pick("from", "sources");
            peers(v, &what, notes)
        }
        Ok(Direction::Out) => {
            let (v, what) = pick("to", "destinations");
            peers(v, &what, notes)
        }
        Err(ref e) => Err(e.clone()),
    };
    Rule {
        index,
        name: r
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| clip(s, MAX_NAME_CHARS)),
        action,
        direction,
        applied_to: targets(r.get("appliedTo"), "appliedTo"),
        peers,
        ports: ports(r.get("ports")),
    }
}
