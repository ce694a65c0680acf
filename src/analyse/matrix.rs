//! The node-to-node matrix for one port: for every probed node (FROM) and every control-plane
//! node (TO), what FROM saw when it dialled TO's IP on that port. The diagonal is each node's
//! own path (FROM dialling its own IP): the article's "each node reaches its own etcd".

use serde::{Deserialize, Serialize};

use crate::probe::output::{PathCheck, TcpOutcome, TlsOutcome};
use crate::probe::NodeReport;

/// One cell's state, from worst news to best, as scripts match on it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum CellState {
    /// TCP connected and the TLS handshake completed (or was not tried).
    Ok,
    /// TCP connected, the TLS handshake did not finish: large packets lost (MTU).
    TlsStalled,
    /// TCP connected, the TLS handshake failed (certificate problem).
    TlsRejected,
    /// The connect timed out (dropped).
    Timeout,
    /// Connection refused (RST: nothing listens, or a rejecting firewall).
    Refused,
    /// No route to host.
    NoRoute,
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
            CellState::Timeout => "timeout",
            CellState::Refused => "refused",
            CellState::NoRoute => "no-route",
            CellState::Error => "error",
            CellState::NotProbed => "-",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    pub port: u16,
    /// Node names, in row and column order.
    pub nodes: Vec<String>,
    /// Row-major: `cells[i * nodes.len() + j]` is nodes[i] → nodes[j].
    pub cells: Vec<Cell>,
}

impl Matrix {
    pub fn cell(&self, from: &str, to: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.from == from && c.to == to)
    }
    /// Cells between two different nodes that both have something to say.
    pub fn peer_cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells
            .iter()
            .filter(|c| !c.is_self() && c.state.is_known())
    }
}

/// What one probe path says, as a cell state.
pub fn cell_state(p: &PathCheck) -> CellState {
    match p.tcp {
        TcpOutcome::Connected => match p.tls {
            TlsOutcome::Completed | TlsOutcome::NotTried => CellState::Ok,
            TlsOutcome::Stalled => CellState::TlsStalled,
            TlsOutcome::Rejected => CellState::TlsRejected,
        },
        TcpOutcome::Timeout => CellState::Timeout,
        TcpOutcome::Refused => CellState::Refused,
        TcpOutcome::NoRoute => CellState::NoRoute,
        TcpOutcome::Error => CellState::Error,
    }
}

/// What `from`'s probe saw when it dialled `to`'s IP on `port`: `None` when `from` was not
/// probed, `to` has no IP, or the probe has no result for that address (a `NotProbed` cell).
pub fn path<'a>(from: &'a NodeReport, to: &NodeReport, port: u16) -> Option<&'a PathCheck> {
    let ip = to.ip?;
    from.probe()?
        .paths
        .iter()
        .find(|p| p.port == port && p.target.parse::<std::net::IpAddr>().ok() == Some(ip))
}

pub fn build(nodes: &[NodeReport], port: u16) -> Matrix {
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let mut cells = Vec::with_capacity(nodes.len() * nodes.len());
    for from in nodes {
        for to in nodes {
            let cell = match path(from, to, port) {
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
                        CellState::TlsStalled | CellState::TlsRejected => {
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
