//! The faults a lab can inject, and the nftables rules that make the network ones real.
//!
//! Every network fault is an `input` rule in the receiving node's own namespace, matched on
//! `iifname "eth0"` and on the *members'* source addresses, so that:
//! - a node talking to its own IP (over `lo`) is never affected;
//! - the jumpbox (the switch's address, standing for the Supervisor / an admin) is never affected;
//! - no rule sits on an `output` hook: a locally dropped packet would fail `connect()` at once
//!   with EPERM, which no firewall between two VMs does. Dropping on arrival gives the sender the
//!   real experience of a silent network (timeouts) or of a reset (connection refused).
//!
//! What a `curl --connect-timeout 2` from node X to member Y sees (measured, see lab_smoke.rs):
//! - `DropAllPeers`: 2379 and 2380 time out (curl exit 28); X's own IP answers.
//! - `RejectAllPeers`: 2379 and 2380 refused at once (exit 7), like a stopped etcd would be.
//! - `Isolate(Z)`: Z reaches no member and no member reaches Z (timeouts, all ports); the others
//!   talk to each other and keep quorum.
//! - `BlockPort(p)`: port p times out between members, the other port works.
//! - `DropOneWay{from, to}`: connection-level one-way, like a stateful firewall that allows
//!   only one direction. Packets from `from` to `to` are dropped when they belong to a connection
//!   that `from` opened (conntrack direction "original"): `from` -> `to` times out (its SYN never
//!   arrives); `to` -> `from` works (the SYN-ACK and data coming back from `from` are "reply"
//!   packets and pass). A pure packet filter dropping *every* packet from -> to would instead break
//!   both directions (to's SYN arrives, from's SYN-ACK is lost), which is just a worse Isolate.
//! - `DropLargePackets`: an MTU black hole on the peer ports: packets longer than 1000 bytes from
//!   another member's 2379/2380 (or to them) are dropped. TCP connects (SYN/ACK are small),
//!   the TLS handshake stalls when the server's certificate flight (> 1 KB with RSA keys) is
//!   lost: curl prints "Connected to" and then times out (exit 28).
//! - `ExpiredPeerCert(Y)` / `ExpiredServerCert(Y)`: Y's certificate is re-issued with a notAfter
//!   in the past and Y's etcd restarted (attempt + 1): the TLS handshake is refused
//!   (curl exit 60 "certificate has expired" when verifying the CA). With an expired *peer*
//!   certificate Y cannot rejoin its cluster, and a restarted etcd serves clients only once it
//!   has: Y's 2379 accepts TCP but the TLS handshake waits (curl: "Connected to", then exit 28).
//!   The peers log `rejected connection ... x509: certificate has expired`, Y logs
//!   `remote error: tls: bad certificate`.
//! - `StopEtcd(Y)`: Y's etcd is killed (SIGKILL, not restarted: crictl shows it Exited, exit code
//!   137): nothing listens any more, connections are refused (exit 7), also from Y itself.
//! - `BlockSsh(Y)`: Y's input on port 22 dropped from everyone on eth0, the jumpbox included (a VM
//!   that does not answer on 22): `ssh -o ConnectTimeout=3` fails after 3 s, "Connection timed
//!   out", exit 255. The only fault that touches 22 or the jumpbox: the others match the peer
//!   ports or the other members' addresses only.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use crate::Node;

/// One fault. Several can be active at once; [`crate::Lab::heal`] removes them all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Fault {
    /// Every member's input on 2379/2380 from the other members dropped.
    DropAllPeers,
    /// The same, answered with `reject with tcp reset`.
    RejectAllPeers,
    /// Everything between this node and the other members dropped, both ways.
    Isolate(String),
    /// Only this port (2379 or 2380) dropped between members.
    BlockPort(u16),
    /// Connections opened by `from` towards `to` dropped; `to` -> `from` works.
    DropOneWay { from: String, to: String },
    /// Packets over 1000 bytes on the peer ports dropped between members.
    DropLargePackets,
    /// This node's peer certificate re-issued expired, its etcd restarted.
    ExpiredPeerCert(String),
    /// This node's server (client-facing) certificate re-issued expired, its etcd restarted.
    ExpiredServerCert(String),
    /// This node's etcd killed and left down.
    StopEtcd(String),
    /// This node's port 22 dropped for everyone (the jumpbox and the admin included).
    BlockSsh(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::DropAllPeers => f.write_str("drop-all-peers"),
            Fault::RejectAllPeers => f.write_str("reject-all-peers"),
            Fault::Isolate(n) => write!(f, "isolate:{n}"),
            Fault::BlockPort(p) => write!(f, "block-port:{p}"),
            Fault::DropOneWay { from, to } => write!(f, "drop-one-way:{from}:{to}"),
            Fault::DropLargePackets => f.write_str("drop-large-packets"),
            Fault::ExpiredPeerCert(n) => write!(f, "expired-peer-cert:{n}"),
            Fault::ExpiredServerCert(n) => write!(f, "expired-server-cert:{n}"),
            Fault::StopEtcd(n) => write!(f, "stop-etcd:{n}"),
            Fault::BlockSsh(n) => write!(f, "block-ssh:{n}"),
        }
    }
}

impl FromStr for Fault {
    type Err = anyhow::Error;

    /// The [`fmt::Display`] form: `drop-all-peers`, `isolate:cp3`, `block-port:2380`,
    /// `drop-one-way:cp1:cp2`, `expired-peer-cert:cp2`, `stop-etcd:cp2`, ...
    fn from_str(s: &str) -> Result<Self> {
        let mut parts = s.split(':');
        let kind = parts.next().unwrap_or_default();
        let args: Vec<String> = parts.map(str::to_string).collect();
        let one = |what: &str| -> Result<String> {
            match args.as_slice() {
                [a] if !a.is_empty() => Ok(a.clone()),
                _ => Err(anyhow!("{kind} needs one {what}: {kind}:<{what}>")),
            }
        };
        let fault = match kind {
            "drop-all-peers" => Fault::DropAllPeers,
            "reject-all-peers" => Fault::RejectAllPeers,
            "drop-large-packets" => Fault::DropLargePackets,
            "isolate" => Fault::Isolate(one("node")?),
            "expired-peer-cert" => Fault::ExpiredPeerCert(one("node")?),
            "expired-server-cert" => Fault::ExpiredServerCert(one("node")?),
            "stop-etcd" => Fault::StopEtcd(one("node")?),
            "block-ssh" => Fault::BlockSsh(one("node")?),
            "block-port" => Fault::BlockPort(one("port")?.parse()?),
            "drop-one-way" => match args.as_slice() {
                [from, to] => Fault::DropOneWay {
                    from: from.clone(),
                    to: to.clone(),
                },
                _ => bail!("drop-one-way needs two nodes: drop-one-way:<from>:<to>"),
            },
            other => bail!(
                "unknown fault {other:?}: drop-all-peers, reject-all-peers, isolate:N, block-port:P, \
                 drop-one-way:FROM:TO, drop-large-packets, expired-peer-cert:N, expired-server-cert:N, stop-etcd:N, \
                 block-ssh:N"
            ),
        };
        if !args.is_empty()
            && matches!(
                fault,
                Fault::DropAllPeers | Fault::RejectAllPeers | Fault::DropLargePackets
            )
        {
            bail!("{kind} takes no argument");
        }
        Ok(fault)
    }
}

const PEER_PORTS: &str = "{ 2379, 2380 }";

impl Fault {
    /// The nodes this fault names (checked against the lab before anything is done).
    pub(crate) fn named_nodes(&self) -> Vec<&str> {
        match self {
            Fault::Isolate(n)
            | Fault::ExpiredPeerCert(n)
            | Fault::ExpiredServerCert(n)
            | Fault::StopEtcd(n)
            | Fault::BlockSsh(n) => {
                vec![n.as_str()]
            }
            Fault::DropOneWay { from, to } => vec![from.as_str(), to.as_str()],
            _ => Vec::new(),
        }
    }

    /// The `nft` rules (for the `input` chain of table `inet etcdnet`) per node index, for the
    /// network faults; empty for the others. `@peers` is the set of the other members' addresses.
    pub(crate) fn nft_rules(&self, nodes: &[Node]) -> Result<Vec<(usize, String)>> {
        let ip_of = |name: &str| -> Result<String> {
            nodes
                .iter()
                .find(|n| n.name == name)
                .map(|n| n.ip.to_string())
                .ok_or_else(|| anyhow!("no node {name:?} in this lab"))
        };
        let comment = format!("comment \"etcdnet-lab {self}\"");
        let every = |rule: String| -> Vec<(usize, String)> {
            (0..nodes.len())
                .map(|i| (i, format!("{rule} {comment}")))
                .collect()
        };
        let on_eth0 = "iifname \"eth0\" ip saddr";
        Ok(match self {
            Fault::DropAllPeers => every(format!("{on_eth0} @peers tcp dport {PEER_PORTS} drop")),
            Fault::RejectAllPeers => every(format!(
                "{on_eth0} @peers tcp dport {PEER_PORTS} reject with tcp reset"
            )),
            Fault::BlockPort(port) => every(format!("{on_eth0} @peers tcp dport {port} drop")),
            Fault::DropLargePackets => {
                let mut rules = every(format!(
                    "{on_eth0} @peers tcp sport {PEER_PORTS} ip length > 1000 drop"
                ));
                rules.extend(every(format!(
                    "{on_eth0} @peers tcp dport {PEER_PORTS} ip length > 1000 drop"
                )));
                rules
            }
            Fault::Isolate(name) => {
                let ip = ip_of(name)?;
                nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let rule = if n.name == *name {
                            format!("{on_eth0} @peers drop {comment}")
                        } else {
                            format!("{on_eth0} {ip} drop {comment}")
                        };
                        (i, rule)
                    })
                    .collect()
            }
            Fault::DropOneWay { from, to } => {
                let from_ip = ip_of(from)?;
                ip_of(to)?;
                if from == to {
                    bail!("drop-one-way needs two different nodes");
                }
                let i = nodes.iter().position(|n| n.name == *to).unwrap_or_default();
                vec![(
                    i,
                    format!("{on_eth0} {from_ip} ct direction original drop {comment}"),
                )]
            }
            Fault::BlockSsh(name) => {
                let i = nodes
                    .iter()
                    .position(|n| n.name == *name)
                    .ok_or_else(|| anyhow!("no node {name:?} in this lab"))?;
                vec![(i, format!("iifname \"eth0\" tcp dport 22 drop {comment}"))]
            }
            Fault::ExpiredPeerCert(_) | Fault::ExpiredServerCert(_) | Fault::StopEtcd(_) => {
                Vec::new()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in [
            Fault::DropAllPeers,
            Fault::RejectAllPeers,
            Fault::Isolate("cp3".into()),
            Fault::BlockPort(2380),
            Fault::DropOneWay {
                from: "cp1".into(),
                to: "cp2".into(),
            },
            Fault::DropLargePackets,
            Fault::ExpiredPeerCert("cp2".into()),
            Fault::ExpiredServerCert("cp2".into()),
            Fault::StopEtcd("cp2".into()),
            Fault::BlockSsh("cp1".into()),
        ] {
            assert_eq!(f.to_string().parse::<Fault>().unwrap(), f);
        }
        assert!("isolate".parse::<Fault>().is_err());
        assert!("drop-all-peers:cp1".parse::<Fault>().is_err());
        assert!("block-port:x".parse::<Fault>().is_err());
    }
}
