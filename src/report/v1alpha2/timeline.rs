//! The onset timeline of a diagnosis: since when each pair of members fails, from both ends'
//! etcd logs on the nodes' clocks corrected to their median, and its one-line shape. The types
//! are the analysis's own (`analyse::timeline`), which derive the contract's serde names and
//! schema.

pub(crate) use crate::analyse::timeline::Timeline;
#[cfg(test)]
pub(crate) use crate::analyse::timeline::{NoLeaderSince, NodeClock, PairOnset};
