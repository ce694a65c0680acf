//! NSX SecurityPolicies evaluated against the cluster's control-plane VMs: for TCP 2379 and 2380
//! and every ordered pair (FROM, TO) of distinct VMs, which visible rule decides the path. Pure,
//! no I/O: the Supervisor side reads the objects, the verdict and the renderers use the result.
//!
//! Upstream, checked in vmware-tanzu/nsx-operator (docs/nsx-policy.md names the file of each
//! rule):
//! - `pkg/apis/vpc/v1alpha1/securitypolicy_types.go` (`crd.nsx.vmware.com/v1alpha1`) and
//!   `pkg/apis/legacy/v1alpha1/securitypolicy_types.go` (`nsx.vmware.com/v1alpha1`): one schema;
//! - `pkg/nsx/services/securitypolicy/builder.go`: the NSX policy's sequence number is
//!   `spec.priority`, each rule's is its index in `spec.rules`; an In rule's source group is
//!   its `from` (else `sources`; none: ANY) and its destination ANY, an Out rule's source ANY and
//!   destination its `to` (else `destinations`); a rule's scope is the policy's `appliedTo`
//!   group, else its own `appliedTo` (neither: the whole policy is refused); `{}` is the cluster
//!   tag alone; selectors become tag conditions (`{k: ""}` is `k|`, as `Exists`), with the
//!   validation limits of `validate`;
//! - `parse.go`: action and direction compared in upper case (`In` = `Ingress`, `Out` = `Egress`);
//! - `expand.go`: a named port is resolved from Pods' container ports only: never a VM's;
//! - `firewall.go`: a VPC policy is built in its namespace's VPC, and validation runs before
//!   any NSX call;
//! - `pkg/controllers/securitypolicy/securitypolicy_controller.go`: `Ready` True
//!   (`SecurityPolicyReady`) or False (`SecurityPolicyNotReady`, the error in the message), no
//!   observedGeneration; one group reconciled (`IsVPCEnabled`);
//! - `docs/security-policy.md`: lower priority first, rules in list order, policy-level
//!   `appliedTo` over rule-level, `from`/`to` over `sources`/`destinations`.
//!
//! The evaluation:
//! 0. Only the policies that can apply: the live group's, the namespace's and (T1) other
//!    namespaces' with a cluster-wide `appliedTo`, selecting at least one VM; sorted by
//!    priority, then cut to [`MAX_POLICIES`]; a check the policies not evaluated could come
//!    first in is [`SideOutcome::CannotDecide`], never a named Drop.
//! 1. Per check (egress at FROM: Out rules applied to FROM whose peers select TO; ingress at
//!    TO: In rules applied to TO whose peers select FROM), only policies in effect (Ready True,
//!    valid) count. The others are evaluated apart: their matching Drop/Reject rules are
//!    [`CoverReason::NotRealized`], with whether each would decide the check once realized.
//! 2. Policies in priority order, lowest first; inside one, rules in order. The first rule that
//!    matches decides. A rule that may match but cannot be evaluated (a selector apimachinery
//!    refuses, an unparseable CIDR, a VM without a known IP against `ipBlocks`) makes the check
//!    [`SideOutcome::CannotDecide`] when reached before any match.
//! 3. Two policies of the same priority that both match with different actions: NSX's order
//!    between them is not visible, so cannot decide.
//! 4. Drop/Reject rules in effect that match after a deciding Allow are
//!    [`CoverReason::Shadowed`].
//!
//! A path is Dropped/Rejected when either check's first match is a Drop/Reject (the egress
//! check's first), else cannot decide when a check cannot, else Allowed when a check's first
//! match is an Allow, else NoVisibleRule: the answer lies outside the Supervisor's view.

mod evaluate;
mod model;
mod validate;

pub use crate::analyse::firewall::paths_text;
pub use crate::selector::{Operator, Requirement, Selector};
pub use evaluate::{
    evaluate, BlockingRule, CoverReason, CoveredCheck, CoveringRule, PathEvaluation, PathOutcome,
    PathRef, PolicyEvaluation, PolicyInput, PolicySummary, PolicyVm, PolicyWarning, RuleRef,
    SetAside, Side, SideOutcome, Tri, COVERING_EXAMPLES, ETCD_PORTS, MAX_COVERING, MAX_POLICIES,
    MAX_VMS, MAX_WARNINGS, T1_TAGGING_NOTE,
};
pub use model::{clip, Action, Direction, NsxGroup, PolicyObject, Realization, RealizedState};
pub use validate::validate;

#[cfg(test)]
pub(crate) mod tests;
