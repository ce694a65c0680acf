//! The node-to-node matrix for one port: for every probed node (FROM) and every control-plane
//! node (TO), what FROM saw when it dialled TO's IP on that port. The diagonal is each node's
//! own path (FROM dialling its own IP): the article's "each node reaches its own etcd".

use std::collections::HashMap;
use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::probe::output::{PathCheck, TcpOutcome, TlsOutcome};
use crate::probe::NodeReport;

// `CellState`, `Cell` and `Matrix` are the contract of `matrices` (`report::DiagnoseReport`):
// their doc comments are the schema's descriptions, their serde attributes the json's names.

/// One matrix cell's state, from worst news to best.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum CellState {
    /// TCP connected and the TLS handshake completed (or was not tried).
    Ok,
    /// TCP connected, the TLS handshake did not finish: large packets lost (MTU).
    TlsStalled,
    /// TCP connected, the TLS handshake failed (certificate problem).
    TlsRejected,
    /// TCP and TLS completed but no HTTP answer came: not a working etcd.
    // Something that is not a working etcd listens there (or one too busy to answer). Never ok.
    NoAnswer,
    /// The connect timed out (dropped).
    Timeout,
    /// Connection refused (nothing listens, or a rejecting firewall).
    Refused,
    /// No route to host.
    NoRoute,
    /// Another failure.
    Error,
    /// FROM could not be probed, or did not dial TO (no IP).
    NotProbed,
}

impl CellState {
    pub fn is_ok(self) -> bool {
        self == CellState::Ok
    }
    /// A cell that says something about the path (not NotProbed).
    pub fn is_known(self) -> bool {
        self != CellState::NotProbed
    }
    /// Short text for tables.
    pub fn label(self) -> &'static str {
        match self {
            CellState::Ok => "ok",
            CellState::TlsStalled => "tls-stalled",
            CellState::TlsRejected => "tls-rejected",
            CellState::NoAnswer => "no-answer",
            CellState::Timeout => "timeout",
            CellState::Refused => "refused",
            CellState::NoRoute => "no-route",
            CellState::Error => "error",
            CellState::NotProbed => "-",
        }
    }
}

/// What FROM saw when it dialled TO's IP on one port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    pub from: String,
    pub to: String,
    pub port: u16,
    pub state: CellState,
    /// Connect time when it connected, else how long it waited.
    pub ms: Option<u64>,
    /// The tool's own words for a failure (curl's message, the TLS error).
    pub detail: Option<String>,
}

impl Cell {
    pub fn is_self(&self) -> bool {
        self.from == self.to
    }
}

/// The node-to-node matrix of one port: every probed node (FROM) to every node (TO).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    pub port: u16,
    /// Node names, in row and column order.
    pub nodes: Vec<String>,
    /// Row-major: `cells[i * nodes.len() + j]` is nodes[i] → nodes[j].
    pub cells: Vec<Cell>,
}

impl Matrix {
    /// The cell `from` → `to`: O(N) (two positions in `nodes`). Loops over cells use
    /// [`Matrix::index`] instead.
    pub fn cell(&self, from: &str, to: &str) -> Option<&Cell> {
        let at = |name: &str| self.nodes.iter().position(|n| n == name);
        self.at(at(from)?, at(to)?)
    }
    /// Each node's row and column, once: O(N) to make, then each cell is O(1).
    pub(crate) fn index(&self) -> Cells<'_> {
        let mut pos = HashMap::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            // The first of two equal names, as a search from the start would find it.
            pos.entry(n.as_str()).or_insert(i);
        }
        Cells { matrix: self, pos }
    }
    /// Row `i`, column `j`; None when the matrix's cells do not say what its nodes say (a
    /// matrix read back from JSON is data).
    fn at(&self, i: usize, j: usize) -> Option<&Cell> {
        let c = self
            .cells
            .get(i.checked_mul(self.nodes.len())?.checked_add(j)?)?;
        (c.from == self.nodes[i] && c.to == self.nodes[j]).then_some(c)
    }
    /// Cells between two different nodes that both have something to say.
    pub fn peer_cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells
            .iter()
            .filter(|c| !c.is_self() && c.state.is_known())
    }
}

/// A matrix's cells by node name ([`Matrix::index`]).
pub(crate) struct Cells<'a> {
    matrix: &'a Matrix,
    pos: HashMap<&'a str, usize>,
}

impl<'a> Cells<'a> {
    pub fn cell(&self, from: &str, to: &str) -> Option<&'a Cell> {
        self.matrix.at(*self.pos.get(from)?, *self.pos.get(to)?)
    }
}

/// One node's probe results by (port, address), so that each cell of its row is one lookup: the
/// first result for an address wins, as a search from the start would find it.
pub(crate) struct Paths<'a>(HashMap<(u16, IpAddr), &'a PathCheck>);

impl<'a> Paths<'a> {
    /// Empty when the node was not probed.
    pub fn of(node: &'a NodeReport) -> Paths<'a> {
        let mut by = HashMap::new();
        for p in node.probe().map(|o| o.paths.as_slice()).unwrap_or_default() {
            if let Ok(ip) = p.target.parse::<IpAddr>() {
                by.entry((p.port, ip)).or_insert(p);
            }
        }
        Paths(by)
    }
    /// What this node saw when it dialled `to`'s IP on `port` (see [`path`]).
    pub fn to(&self, to: &NodeReport, port: u16) -> Option<&'a PathCheck> {
        self.0.get(&(port, to.ip?)).copied()
    }
}

/// What one probe path says, as a cell state.
pub(crate) fn cell_state(p: &PathCheck) -> CellState {
    match p.tcp {
        TcpOutcome::Connected => match p.tls {
            TlsOutcome::Completed | TlsOutcome::NotTried => CellState::Ok,
            TlsOutcome::Stalled => CellState::TlsStalled,
            TlsOutcome::Rejected => CellState::TlsRejected,
            TlsOutcome::NoHttpAnswer => CellState::NoAnswer,
        },
        TcpOutcome::Timeout => CellState::Timeout,
        TcpOutcome::Refused => CellState::Refused,
        TcpOutcome::NoRoute => CellState::NoRoute,
        TcpOutcome::Error => CellState::Error,
    }
}

/// N² cells for N nodes, each an O(1) lookup in its row's [`Paths`] (made once per row, linear
/// in that node's paths).
pub fn build(nodes: &[NodeReport], port: u16) -> Matrix {
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let mut cells = Vec::with_capacity(nodes.len() * nodes.len());
    for from in nodes {
        let paths = Paths::of(from);
        for to in nodes {
            let cell = match paths.to(to, port) {
                None => Cell {
                    from: from.name.clone(),
                    to: to.name.clone(),
                    port,
                    state: CellState::NotProbed,
                    ms: None,
                    detail: None,
                },
                Some(p) => {
                    let state = cell_state(p);
                    let detail = match state {
                        CellState::Ok => None,
                        CellState::TlsStalled | CellState::TlsRejected | CellState::NoAnswer => {
                            p.tls_detail.clone().or_else(|| p.tcp_detail.clone())
                        }
                        _ => p.tcp_detail.clone(),
                    };
                    Cell {
                        from: from.name.clone(),
                        to: to.name.clone(),
                        port,
                        state,
                        ms: p.tcp_ms,
                        detail,
                    }
                }
            };
            cells.push(cell);
        }
    }
    Matrix {
        port,
        nodes: names,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::output::ProbeOutput;

    fn check(target: &str, port: u16, tcp: TcpOutcome, tls: TlsOutcome) -> PathCheck {
        PathCheck {
            target: target.into(),
            port,
            own: false,
            tcp,
            tcp_ms: Some(1),
            tcp_detail: None,
            tls,
            tls_ms: Some(1),
            tls_detail: Some(format!("{tls} detail")),
            http_status: None,
        }
    }

    fn node(name: &str, ip: &str, paths: Vec<PathCheck>) -> NodeReport {
        let doc = format!(r#"{{"schemaVersion":1,"nodeIp":"{ip}"}}"#);
        let mut out: ProbeOutput = serde_json::from_str(&doc).unwrap();
        out.paths = paths;
        NodeReport {
            name: name.into(),
            ip: Some(ip.parse().unwrap()),
            outcome: Ok(out),
            reach_from: None,
            reach: vec![],
            host_key: None,
        }
    }

    /// The indexed lookups say what a search from the start says, equal names included; a
    /// matrix whose cells do not match its nodes has no cell there rather than another's.
    #[test]
    fn indexed_lookups_agree_with_a_search() {
        let ok = |t: &str| check(t, 2380, TcpOutcome::Connected, TlsOutcome::Completed);
        let bad = |t: &str| check(t, 2380, TcpOutcome::Timeout, TlsOutcome::NotTried);
        let a = node(
            "cp1",
            "198.18.0.11",
            vec![ok("198.18.0.11"), bad("198.18.0.12"), ok("198.18.0.12")],
        );
        let b = node("cp2", "198.18.0.12", vec![ok("198.18.0.11")]);
        let twin = node("cp2", "198.18.0.13", vec![bad("198.18.0.11")]);
        let m = build(&[a, b, twin], 2380);
        let index = m.index();
        for from in ["cp1", "cp2", "cp9"] {
            for to in ["cp1", "cp2", "cp9"] {
                let linear = m.cells.iter().find(|c| c.from == from && c.to == to);
                assert_eq!(m.cell(from, to), linear, "{from} {to}");
                assert_eq!(index.cell(from, to), linear, "{from} {to}");
            }
        }
        // The first result for an address wins.
        assert_eq!(m.cell("cp1", "cp2").unwrap().state, CellState::Timeout);
        let mut broken = m.clone();
        broken.cells.swap(0, 1);
        assert_eq!(broken.index().cell("cp1", "cp1"), None);
        broken.cells.truncate(2);
        assert_eq!(broken.cell("cp2", "cp2"), None);
    }

    #[test]
    fn a_handshake_without_an_http_answer_is_its_own_state_never_ok() {
        let p = check(
            "198.18.0.12",
            2380,
            TcpOutcome::Connected,
            TlsOutcome::NoHttpAnswer,
        );
        assert_eq!(cell_state(&p), CellState::NoAnswer);
        assert!(!CellState::NoAnswer.is_ok() && CellState::NoAnswer.is_known());
        assert_eq!(CellState::NoAnswer.label(), "no-answer");
        let ok = check(
            "198.18.0.12",
            2380,
            TcpOutcome::Connected,
            TlsOutcome::Completed,
        );
        assert_eq!(cell_state(&ok), CellState::Ok);
    }

    /// The probe prints IPv6 targets without brackets, in whatever spelling it was given; the
    /// matrix matches them to the nodes' addresses as addresses, not as text.
    #[test]
    fn ipv6_targets_fill_the_matrix() {
        let a = node(
            "cp1",
            "fd00:db8::11",
            vec![
                check(
                    "fd00:db8::11",
                    2380,
                    TcpOutcome::Connected,
                    TlsOutcome::Completed,
                ),
                check(
                    "FD00:DB8:0::12",
                    2380,
                    TcpOutcome::Timeout,
                    TlsOutcome::NotTried,
                ),
            ],
        );
        let b = node(
            "cp2",
            "fd00:db8::12",
            vec![check(
                "fd00:db8::11",
                2380,
                TcpOutcome::Connected,
                TlsOutcome::NoHttpAnswer,
            )],
        );
        let m = build(&[a, b], 2380);
        let state = |from: &str, to: &str| m.cell(from, to).unwrap().state;
        assert_eq!(state("cp1", "cp1"), CellState::Ok);
        assert_eq!(state("cp1", "cp2"), CellState::Timeout);
        assert_eq!(state("cp2", "cp1"), CellState::NoAnswer);
        assert_eq!(
            m.cell("cp2", "cp1").unwrap().detail.as_deref(),
            Some("NoHttpAnswer detail")
        );
        assert_eq!(state("cp2", "cp2"), CellState::NotProbed);
        // A bracketed target is not an address: that path is not matched (the probe never
        // prints one).
        let c = node(
            "cp3",
            "fd00:db8::13",
            vec![check(
                "[fd00:db8::11]",
                2380,
                TcpOutcome::Connected,
                TlsOutcome::Completed,
            )],
        );
        let m = build(&[c.clone(), node("cp1", "fd00:db8::11", vec![])], 2380);
        assert_eq!(m.cell("cp3", "cp1").unwrap().state, CellState::NotProbed);
    }
}
