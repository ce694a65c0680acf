//! The output contract of `apiVersion` v1alpha2: the types `-o json|yaml` serializes. Most
//! leaves are the domain's own types (deriving Serialize and JsonSchema, re-exported here: one
//! type per fact); a type of its own remains here only where the report's shape differs (the
//! verdict's assembly, the probe's report form), built with `From`. The doc comments are the
//! JSON Schema's descriptions.

mod analysis;
mod cluster;
mod firewall;
mod location;
mod network;
mod node;
pub(crate) mod nsx_manager;
mod timeline;

pub use crate::analyse::guard::GuardState;
pub(crate) use crate::analyse::guard::RemediationGuard;
pub use crate::analyse::location::{FirewallReadState, Place};
#[cfg(test)]
pub(crate) use crate::analyse::location::{FirewallRule, NodeFirewall, PathPlace};
pub use crate::analyse::matrix::CellState;
pub(crate) use crate::analyse::matrix::Matrix;
pub(crate) use crate::analyse::metrics::{EtcdMetrics, Latency};
#[cfg(test)]
pub(crate) use crate::analyse::metrics::{PeerMetrics, ReadResult};
pub use crate::analyse::timeline::Shape as TimelineShape;
pub use crate::analyse::verdict::{Verdict, VerdictCode};
pub use crate::probe::etcdlog::LogKind;
pub(crate) use analysis::{LeaderState, NodeLogs};
#[cfg(test)]
pub(crate) use analysis::{LeaderView, LogFormat, WindowEnd};
pub use cluster::*;
pub(crate) use location::PacketLocation;
#[cfg(test)]
pub(crate) use network::RealizationProblem;
pub(crate) use network::{NetworkAssessment, PathRef, PolicyEvaluation, RealizedState};
pub use node::*;
pub use nsx_manager::NsxKnown;
pub(crate) use nsx_manager::{
    DfwAction, DfwCheck, DfwOutcome, DfwProof, DfwRule, NsxIdentityState, NsxManager,
    NsxTraceflowResult, TraceflowAgreement,
};
#[cfg(test)]
pub(crate) use nsx_manager::{DfwBlockingRule, NsxGap, NsxTraceflow};
pub(crate) use timeline::Timeline;
#[cfg(test)]
pub(crate) use timeline::{NoLeaderSince, NodeClock, PairOnset};

#[cfg(test)]
mod tests;
