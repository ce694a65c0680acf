//! NSX SecurityPolicies evaluated against the cluster's control-plane VMs: for TCP 2379 and 2380
//! and every ordered pair (FROM, TO) of distinct VMs, which visible rule decides the path. Pure,
//! no I/O: the Supervisor side reads the objects, the verdict and the renderers use the result.
//!
//! Upstream, checked in vmware-tanzu/nsx-operator:
//! - `pkg/apis/vpc/v1alpha1/securitypolicy_types.go` (`crd.nsx.vmware.com/v1alpha1`) and
//!   `pkg/apis/legacy/v1alpha1/securitypolicy_types.go` (`nsx.vmware.com/v1alpha1`): one schema;
//! - `pkg/nsx/services/securitypolicy/builder.go`: the NSX policy's sequence number is
//!   `spec.priority`, each rule's is its index in `spec.rules`; an In rule's source group is
//!   its `from` (else `sources`; none: ANY) and its destination ANY, an Out rule's source ANY and
//!   destination its `to` (else `destinations`); a rule's scope is the policy's `appliedTo`
//!   group, else its own `appliedTo` (neither: refused); a peer's `ipBlocks` and its selectors
//!   are ORed, `vmSelector`/`podSelector` without `namespaceSelector` select in the policy's
//!   namespace, with it in the namespaces it selects;
//! - `parse.go`: action and direction compared in upper case (`In` = `Ingress`, `Out` = `Egress`);
//! - `expand.go`: a named port is resolved from Pods' container ports;
//! - `pkg/controllers/securitypolicy/securitypolicy_controller.go`: `Ready` True
//!   (`SecurityPolicyReady`) or False (`SecurityPolicyNotReady`, the error in the message);
//! - `docs/security-policy.md`: lower priority first, rules in list order, policy-level
//!   `appliedTo` over rule-level, `from`/`to` over `sources`/`destinations`.
//!
//! The evaluation, per check (egress at FROM: Out rules applied to FROM whose peers select TO;
//! ingress at TO: In rules applied to TO whose peers select FROM):
//! 1. Only realized policies (Ready True) are in effect. A policy Ready False or without a
//!    Ready condition is evaluated apart: its matching Drop/Reject rules are reported as
//!    [`CoverReason::NotRealized`], with whether each would decide the check once realized.
//! 2. Policies in priority order, lowest first; inside one, rules in order. The first rule that
//!    matches decides. A rule that may match but cannot be evaluated (a named port, a selector
//!    apimachinery refuses, an unparseable CIDR, a VM without a known IP against `ipBlocks`)
//!    makes the check [`SideOutcome::CannotDecide`] when reached before any match.
//! 3. Two policies of the same priority that both match with different actions: NSX's order
//!    between them is not visible, so cannot decide.
//! 4. Drop/Reject rules in effect that match after a deciding Allow are
//!    [`CoverReason::Shadowed`].
//!
//! A path is Dropped/Rejected when either check's first match is a Drop/Reject (the egress
//! check's first), else cannot decide when a check cannot, else Allowed when a check's first
//! match is an Allow, else NoVisibleRule: the answer lies outside the Supervisor's view.
//! docs/nsx-policy.md explains each rule and what is not visible.

mod evaluate;
mod model;
mod selector;
mod validate;

pub use evaluate::{
    evaluate, BlockingRule, CoverReason, CoveredCheck, CoveringRule, PathEvaluation, PathOutcome,
    PathRef, PolicyEvaluation, PolicyInput, PolicySummary, PolicyVm, PolicyWarning, RuleRef,
    SetAside, Side, SideOutcome, COVERING_EXAMPLES, ETCD_PORTS, MAX_COVERING, MAX_POLICIES,
    MAX_VMS, MAX_WARNINGS,
};
pub use model::{Action, Direction, NsxGroup, PolicyObject, Realization, RealizedState};
pub use selector::{Operator, Requirement, Selector};
pub use validate::validate;

#[cfg(test)]
mod tests;
