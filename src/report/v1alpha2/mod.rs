//! The output contract of `apiVersion` v1alpha2: the only types `-o json|yaml` serializes, each
//! built from its domain type with `From`. Their doc comments are the JSON Schema's descriptions.

/// A unit enum of the contract and its domain twin, converted both ways variant by variant (the
/// way back lets a contract value reuse the domain's wording).
macro_rules! mirror_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident from $domain:path {
            $( $(#[$vm:meta])* $v:ident ),* $(,)?
        }
    ) => {
        $(#[$m])*
        pub enum $name {
            $( $(#[$vm])* $v ),*
        }

        impl From<$domain> for $name {
            fn from(d: $domain) -> Self {
                type Domain = $domain;
                match d {
                    $( Domain::$v => $name::$v ),*
                }
            }
        }

        impl From<$name> for $domain {
            fn from(c: $name) -> Self {
                type Domain = $domain;
                match c {
                    $( $name::$v => Domain::$v ),*
                }
            }
        }
    };
}

/// Each element of `v` as its contract type.
pub(crate) fn all<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

mod analysis;
mod cluster;
mod firewall;
mod location;
mod network;
mod node;
pub(crate) mod nsx_manager;
mod timeline;

pub use crate::analyse::guard::{GuardState, RemediationGuard};
pub use crate::analyse::location::{
    FirewallReadState, FirewallRule, NodeFirewall, PathPlace, Place,
};
pub use crate::analyse::matrix::{Cell, CellState, Cells, Matrix};
pub use crate::analyse::metrics::{EtcdMetrics, Latency, PeerMetrics, ReadResult};
pub use crate::analyse::verdict::{Verdict, VerdictCode};
pub use analysis::{
    LeaderState, LeaderView, LogFinding, LogFormat, LogKind, LogSummary, LogWindow, NodeLogs,
    WindowEnd,
};
pub use cluster::*;
pub use location::PacketLocation;
pub use network::{
    Action, BlockingRule, CoverReason, CoveredCheck, CoveringRule, Direction, NetworkAssessment,
    NsxGroup, PathEvaluation, PathOutcome, PathRef, PolicyEvaluation, PolicySummary, PolicyWarning,
    ReadCount, Realization, RealizationProblem, RealizedState, RuleRef, SetAside, Side,
    SideOutcome,
};
pub use node::*;
pub use nsx_manager::{
    CategoryCount, DfwAction, DfwBlockingRule, DfwCheck, DfwNotEnforcedRule, DfwOutcome,
    DfwPathEvaluation, DfwProof, DfwRule, DfwRuleHits, DfwShadowedRule, NsxEnforcement, NsxGap,
    NsxIdentityState, NsxKnown, NsxManager, NsxReadCounts, NsxTraceflow, NsxTraceflowResult,
    NsxVmExclusion, NsxVmIdentity, TraceflowAgreement,
};
pub use timeline::{LastProbe, NoLeaderSince, NodeClock, PairOnset, Timeline, TimelineShape};

#[cfg(test)]
mod tests;
