//! Where the failing paths' packets die (`packetLocation` of a `DiagnoseReport`): each failing
//! peer path placed inside a guest, maybe inside one, outside the guests or undecided, from
//! both ends' own firewall rules read before and after the checks.

use serde::{Deserialize, Serialize};

use crate::analyse::location::{self, NodeFirewall, PathPlace};

// The one contract type of this part (its parts are `analyse::location`'s own): its summary is
// the verdict's wording, built here.
/// Where the failing paths' packets die, from the nodes' own firewalls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PacketLocation {
    /// The lines the verdict's evidence carries on a network verdict, with the contract's
    /// words `inside the guest`, `may be inside the guest`, `outside the guests`.
    pub summary: Vec<String>,
    /// Each failing peer path (timeout, refused, no route), 2379 first.
    pub paths: Vec<PathPlace>,
    /// How each node's firewall was read.
    pub nodes: Vec<NodeFirewall>,
}

impl From<location::PacketPlaces> for PacketLocation {
    fn from(l: location::PacketPlaces) -> Self {
        PacketLocation {
            summary: location::evidence(&l),
            paths: l.paths,
            nodes: l.nodes,
        }
    }
}
