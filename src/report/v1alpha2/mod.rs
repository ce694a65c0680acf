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
mod guard;
mod location;
mod metrics;
mod network;
mod node;
pub(crate) mod nsx_manager;
mod timeline;

pub use analysis::{
    Cell, CellState, Cells, LeaderState, LeaderView, LogFinding, LogFormat, LogKind, LogSummary,
    LogWindow, Matrix, NodeLogs, Verdict, VerdictCode, WindowEnd,
};
pub use cluster::*;
pub use guard::{GuardState, RemediationGuard};
pub use location::{
    FirewallReadState, FirewallRule, NodeFirewall, PacketLocation, PathPlace, Place,
};
pub use metrics::{EtcdMetrics, Latency, MetricsRead, PeerMetrics};
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
