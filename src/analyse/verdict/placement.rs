//! Where the VMs run, against which peer paths fail: when the failing paths are exactly those
//! between two ESXi hosts (or two vSphere Zones), and the paths within one host (zone) work,
//! the packets die on their way between the hosts: the host transport (the TEPs and the
//! Geneve overlay between them, an uplink, a VLAN, the routing between the zones), not a
//! firewall rule, which would not care which host a VM runs on.
//!
//! What is read: each VM's ESXi host (vm-operator `status.host`, `status.nodeName` from
//! v1alpha4) and each node's zone (the Machine's `spec.failureDomain`, which CAPI places it by,
//! else the VM's `status.zone`). Only what was seen concludes: every failing path crosses,
//! every crossing path fails by a drop (timeout, no route, a stalled TLS handshake: a reset is
//! a rule's answer), at least one path within a host (zone) works, and every end's place is
//! known.

use std::collections::BTreeSet;

use crate::analyse::matrix::{Cell, CellState};
use crate::supervisor::ClusterFacts;

/// What a node's place is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// The ESXi host.
    Host,
    /// The vSphere Zone.
    Zone,
}

impl Level {
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Level::Host => ("ESXi hosts", "host"),
            Level::Zone => ("vSphere Zones", "zone"),
        }
    }
}

/// A node's place at `level`, from the facts.
fn place(facts: &ClusterFacts, node: &str, level: Level) -> Option<String> {
    let n = facts.nodes.iter().find(|n| n.name == node)?;
    match level {
        Level::Host => n.vm.as_ref()?.host.clone(),
        Level::Zone => n
            .machine
            .as_ref()
            .and_then(|m| m.failure_domain.clone())
            .or_else(|| n.vm.as_ref()?.zone.clone()),
    }
}

/// A drop on the way: what a transport that loses packets shows (a reset is an answer).
fn dropped(state: CellState) -> bool {
    matches!(
        state,
        CellState::Timeout | CellState::NoRoute | CellState::TlsStalled
    )
}

/// The places the failing paths join, when the failing `cells` among the peer `cells` are
/// exactly those that cross `level` (see the module's doc); None otherwise.
pub(super) fn crossing(facts: &ClusterFacts, cells: &[&Cell], level: Level) -> Option<Vec<String>> {
    let mut crossing_seen = false;
    let mut within_ok = false;
    let mut places = BTreeSet::new();
    for c in cells.iter().filter(|c| !c.is_self()) {
        let (from, to) = (place(facts, &c.from, level)?, place(facts, &c.to, level)?);
        if from != to {
            if !dropped(c.state) {
                return None;
            }
            crossing_seen = true;
            places.insert(from);
            places.insert(to);
        } else if c.state.is_ok() {
            within_ok = true;
        } else {
            return None;
        }
    }
    (crossing_seen && within_ok).then(|| places.into_iter().collect())
}

/// The evidence line and the next step, when the failing paths are exactly those across hosts
/// (else across zones): the host first, the narrower place.
pub(super) fn transport(facts: &ClusterFacts, cells: &[&Cell]) -> Option<(String, String)> {
    [Level::Host, Level::Zone].into_iter().find_map(|level| {
        let places = crossing(facts, cells, level)?;
        let (plural, one) = level.words();
        let list = places.join(", ");
        Some((
            format!(
                "the failing paths are exactly those between {plural} ({list}); the paths within one {one} work: the packets are lost between the {plural} (the host transport: TEPs and overlay, uplinks, VLANs, routing between zones), not at a firewall rule"
            ),
            format!(
                "Check the transport between {plural} {list}: the host TEPs reach each other (on ESXi: vmkping ++netstack=vxlan -d -s 1572 <remote TEP>), the uplinks carry the overlay VLAN at an MTU of at least 1600, and for zones the routing between them"
            ),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::PowerState;

    fn cell(from: &str, to: &str, state: CellState) -> Cell {
        Cell {
            from: from.into(),
            to: to.into(),
            port: 2380,
            state,
            ms: None,
            detail: None,
        }
    }

    /// tkc-cp-1 and tkc-cp-2 on esx-01 in zone-a, tkc-cp-3 on esx-02 in zone-b.
    fn facts(hosts: [Option<&str>; 3], zones: [Option<&str>; 3]) -> ClusterFacts {
        let nodes = (0..3)
            .map(|i| {
                let mut n =
                    crate::testing::node(i as u8 + 1, PowerState::PoweredOn, true, "Running");
                n.vm.as_mut().unwrap().host = hosts[i].map(str::to_string);
                n.machine.as_mut().unwrap().failure_domain = zones[i].map(str::to_string);
                n
            })
            .collect();
        crate::testing::facts(3, 3, nodes)
    }

    /// Every path of the node alone on its host fails by a drop; the two on one host reach
    /// each other.
    fn cut_cp3(state: CellState) -> Vec<Cell> {
        let mut cells = Vec::new();
        for a in 1..=3 {
            for b in 1..=3 {
                let s = if a == b || (a != 3 && b != 3) {
                    CellState::Ok
                } else {
                    state
                };
                cells.push(cell(&format!("tkc-cp-{a}"), &format!("tkc-cp-{b}"), s));
            }
        }
        cells
    }

    #[test]
    fn exactly_the_paths_across_hosts_fail() {
        let f = facts(
            [Some("esx-01"), Some("esx-01"), Some("esx-02")],
            [Some("zone-a"), Some("zone-a"), Some("zone-b")],
        );
        let cells = cut_cp3(CellState::Timeout);
        let refs = refs(&cells);
        assert_eq!(
            crossing(&f, &refs, Level::Host),
            Some(vec!["esx-01".to_string(), "esx-02".to_string()])
        );
        let (line, next) = transport(&f, &refs).unwrap();
        assert!(
            line.contains("exactly those between ESXi hosts (esx-01, esx-02)"),
            "{line}"
        );
        assert!(line.contains("host transport"), "{line}");
        assert!(next.contains("vmkping"), "{next}");
        // Zones alone say the same when the hosts are not known.
        let f = facts(
            [None, None, None],
            [Some("zone-a"), Some("zone-a"), Some("zone-b")],
        );
        let (line, _) = transport(&f, &refs).unwrap();
        assert!(
            line.contains("between vSphere Zones (zone-a, zone-b)"),
            "{line}"
        );
    }

    /// Nothing is concluded from what was not seen, nor when the failures do not follow the
    /// hosts.
    fn refs(cells: &[Cell]) -> Vec<&Cell> {
        cells.iter().collect()
    }

    #[test]
    fn anything_else_says_nothing() {
        let f = facts(
            [Some("esx-01"), Some("esx-01"), Some("esx-02")],
            [None, None, None],
        );
        // A reset is a rule's answer, not a lost packet.
        let refused = cut_cp3(CellState::Refused);
        assert_eq!(transport(&f, &refs(&refused)), None);
        // A path within esx-01 fails too.
        let mut more = cut_cp3(CellState::Timeout);
        more[1].state = CellState::Timeout;
        assert_eq!(transport(&f, &refs(&more)), None);
        // One VM's host unknown.
        let unknown = facts([Some("esx-01"), None, Some("esx-02")], [None, None, None]);
        assert_eq!(
            transport(&unknown, &refs(&cut_cp3(CellState::Timeout))),
            None
        );
        // Every VM on its own host: no path within one host to compare with.
        let apart = facts(
            [Some("esx-01"), Some("esx-02"), Some("esx-03")],
            [None, None, None],
        );
        assert_eq!(transport(&apart, &refs(&cut_cp3(CellState::Timeout))), None);
        // Every VM on one host: nothing crosses.
        let one = facts([Some("esx-01"); 3], [None, None, None]);
        assert_eq!(transport(&one, &refs(&cut_cp3(CellState::Timeout))), None);
    }
}
