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
    /// TCP connected and the TLS handshake completed, but no HTTP answer came: something that is
    /// not a working etcd listens there (or one too busy to answer). Never ok.
    NoAnswer,
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
            CellState::NoAnswer => "no-answer",
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
            TlsOutcome::NoHttpAnswer => CellState::NoAnswer,
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
            reach: vec![],
            host_key: None,
        }
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
