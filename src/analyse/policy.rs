//! NSX SecurityPolicies evaluated against the cluster's control-plane VMs: the firewall engine's
//! adapter for them (`analyse::firewall`), for TCP 2379 and 2380 and every ordered pair (FROM,
//! TO) of distinct VMs. Pure, no I/O: the Supervisor side reads the objects.
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
//! 0. Only the policies that can apply (the live group's, the namespace's and, on T1, other
//!    namespaces' with a cluster-wide `appliedTo`, selecting a VM), by priority, cut to
//!    [`MAX_POLICIES`]: a check those cut could come first in cannot be decided.
//! 1. Only policies in effect (Ready True, valid) decide; the others' matching Drop/Reject
//!    rules are [`CoverReason::NotRealized`], with whether each would decide once realized.
//! 2. One engine tier per priority, lowest first, each policy's rules in order: the first match
//!    decides; a rule that may match but cannot be evaluated (a selector apimachinery refuses,
//!    an unparseable CIDR, a VM without a known IP against `ipBlocks`) first, or two policies
//!    of one priority matching with different actions (NSX's order between them is not
//!    visible), make the check [`SideOutcome::CannotDecide`].
//! 3. Drop/Reject rules in effect that match after a deciding Allow are
//!    [`CoverReason::Shadowed`].

mod evaluate;
mod model;
mod validate;

pub use crate::analyse::firewall::paths_text;
pub use evaluate::{
    evaluate, BlockingRule, CoverReason, CoveredCheck, CoveringRule, PathEvaluation, PathOutcome,
    PathRef, PolicyEvaluation, PolicyInput, PolicySummary, PolicyVm, PolicyWarning, RuleRef,
    SetAside, Side, SideOutcome, Tri, COVERING_EXAMPLES, ETCD_PORTS, MAX_COVERING, MAX_POLICIES,
    MAX_VMS, MAX_WARNINGS, T1_TAGGING_NOTE,
};
pub use model::{clip, Action, Direction, NsxGroup, PolicyObject, Realization, RealizedState};

#[cfg(test)]
pub(crate) mod tests;
