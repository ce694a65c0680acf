//! The faults a lab can inject, and the nftables rules that make the network ones real.
//!
//! The faults that stand for the network between the VMs (NSX: its distributed firewall, a
//! gateway, an MTU mismatch on a segment) live **in the fabric**, outside every guest: the
//! switch namespace's `table netdev etcdnet`, one `ingress` chain per host-side veth `v<i>`
//! (`in<i>`: what node i sends, before the bridge sees it) and one `egress` chain (`out<i>`:
//! what the bridge delivers to node i). A node's own ruleset stays empty, as a VM whose
//! firewall is not the cause: reading it shows no rule that counted anything. The fabric rules
//! match the *members'* addresses (`@members`), so that:
//! - a node talking to its own IP (over `lo`) never reaches the switch;
//! - the jumpbox (the switch's address, standing for the Supervisor / an admin) is never
//!   affected, but by `BlockSsh`;
//! - no rule runs in the sender's own stack: its `connect()` never fails with EPERM. Packets are
//!   lost (timeouts) or answered with a reset (connection refused), as on a real wire.
//!
//! There is no conntrack in the netdev family: a one-way fault is stateless (the SYN, and the
//! packets towards the peer ports, see `DropOneWay`).
//!
//! What a `curl --connect-timeout 2` from node X to member Y sees (measured, see lab_smoke.rs):
//! - `DropAllPeers`: 2379 and 2380 time out (curl exit 28); X's own IP answers.
//! - `RejectAllPeers`: 2379 and 2380 refused at once (exit 7), like a stopped etcd would be (the
//!   fabric answers the SYN with `reject with tcp reset`).
//! - `Isolate(Z)`: Z reaches no member and no member reaches Z (timeouts, all ports); the others
//!   talk to each other and keep quorum.
//! - `BlockPort(p)`: port p times out between members, the other port works.
//! - `DropOneWay{from, to}`: connection-level one-way, like a firewall that allows only one
//!   direction. Without conntrack it is made of what tells a connection's direction on the
//!   wire: the SYNs `from` sends to `to` (any port) and every packet `from` sends to `to`'s
//!   2379/2380 (the connections `from` opened before the fault too) are dropped. `from` -> `to`
//!   times out; `to` -> `from` works (`from`'s SYN-ACK carries ACK, its answers come from
//!   2379/2380). A filter dropping *every* packet from -> to would instead break both directions
//!   (to's SYN arrives, from's SYN-ACK is lost), which is just a worse Isolate.
//! - `CutPair{a, b}`: everything between a and b on 2379/2380 dropped, both directions (the
//!   established connections too); the other pairs work. [`crate::Lab::inject_at`] applies one
//!   at a chosen moment ("a↔b, then c 90 s later").
//! - `DropLargePackets`: an MTU black hole on the peer ports: packets longer than 1000 bytes from
//!   another member's 2379/2380 (or to them) are dropped. TCP connects (SYN/ACK are small),
//!   the TLS handshake stalls when the server's certificate flight (> 1 KB with RSA keys) is
//!   lost: curl prints "Connected to" and then times out (exit 28).
//! - `GuestFirewall(Y)` / `GuestFirewallUncounted(Y)`: the one fault **inside a guest**: Y's
//!   own nftables, as a hardening script writes it: `table inet filter`, chain `input` (policy
//!   accept), `ip saddr { <the other members> } tcp dport { 2379, 2380 } counter drop` (without
//!   `counter` for the uncounted variant). The other members time out towards Y (28); Y's own
//!   connections out work (their answers come from the peers' 2379/2380, not to them). Nothing
//!   in the fabric.
//! - `ExpiredPeerCert(Y)` / `ExpiredServerCert(Y)`: Y's certificate is re-issued with a notAfter
//!   in the past and Y's etcd restarted (attempt + 1): the TLS handshake is refused
//!   (curl exit 60 "certificate has expired" when verifying the CA). With an expired *peer*
//!   certificate Y cannot rejoin its cluster, and a restarted etcd serves clients only once it
//!   has: Y's 2379 accepts TCP but the TLS handshake waits (curl: "Connected to", then exit 28).
//!   The peers log `rejected connection ... x509: certificate has expired`, Y logs
//!   `remote error: tls: bad certificate`.
//! - `StopEtcd(Y)`: Y's etcd is killed (SIGKILL, not restarted: crictl shows it Exited, exit code
//!   137): nothing listens any more, connections are refused (exit 7), also from Y itself.
//! - `SlowDisk(Y)`: every `fdatasync(2)` of Y's etcd (the WAL's and the backend's) waits 1.2 s
//!   before it runs (`strace -f -e inject=fdatasync:delay_enter=1200000`, attached to the running
//!   process), like a datastore stalled by a snapshot: etcd logs its "slow fdatasync" warning and
//!   its fsync histogram fills over 1 s, once something is written. Heal detaches strace
//!   (SIGTERM; the process runs on untouched); a restarted etcd is not traced.
//! - `BlockSsh(Y)`: Y's port 22 dropped for everyone (the fabric's egress towards Y), the jumpbox
//!   included (a VM that does not answer on 22): `ssh -o ConnectTimeout=3` fails after 3 s,
//!   "Connection timed out", exit 255. The only fault that touches 22 or the jumpbox: the others
//!   match the peer ports or the other members' addresses only.
//! - `ApiserverCrashLoop(Y)`, `ExpiredApiserverCert(Y)`, `FutureApiserverCert(Y)`, `VipDown`:
//!   the API server side (`apiserver.rs`, tests/lab/README.md "The API servers and the VIP"):
//!   Y's kube-apiserver stand-in crash-loops, or serves an expired / not yet valid certificate;
//!   the control-plane endpoint's VIP takes connections and never answers.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use crate::Node;

/// One fault. Several can be active at once; [`crate::Lab::heal`] removes them all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Fault {
    /// Every member's packets to the other members' 2379/2380 dropped in the fabric.
    DropAllPeers,
    /// The same, answered by the fabric with `reject with tcp reset`.
    RejectAllPeers,
    /// Everything between this node and the other members dropped, both ways.
    Isolate(String),
    /// Only this port (2379 or 2380) dropped between members.
    BlockPort(u16),
    /// Connections opened by `from` towards `to` dropped; `to` -> `from` works.
    DropOneWay { from: String, to: String },
    /// Everything on 2379/2380 between `a` and `b` dropped, both directions.
    CutPair { a: String, b: String },
    /// Packets over 1000 bytes on the peer ports dropped between members.
    DropLargePackets,
    /// A counted drop of the other members' 2379/2380 in this node's own nftables.
    GuestFirewall(String),
    /// The same rule without `counter`.
    GuestFirewallUncounted(String),
    /// This node's peer certificate re-issued expired, its etcd restarted.
    ExpiredPeerCert(String),
    /// This node's server (client-facing) certificate re-issued expired, its etcd restarted.
    ExpiredServerCert(String),
    /// This node's etcd killed and left down.
    StopEtcd(String),
    /// Every fdatasync of this node's etcd delayed by [`SLOW_FDATASYNC`].
    SlowDisk(String),
    /// This node's port 22 dropped for everyone (the jumpbox and the admin included).
    BlockSsh(String),
    /// This node's kube-apiserver stand-in crash-loops (each attempt exits 1 with a bind
    /// failure, restarted on the kubelet's back-off). Needs [`crate::LabConfig::apiserver`].
    ApiserverCrashLoop(String),
    /// This node's `apiserver.crt` re-issued expired (a day ago), served from the next
    /// connection on.
    ExpiredApiserverCert(String),
    /// This node's `apiserver.crt` re-issued not valid before tomorrow (a clock set back).
    FutureApiserverCert(String),
    /// The control-plane endpoint's VIP ([`crate::Lab::start_vip`]) dark: connections are
    /// taken and never answered (an NSX/Avi virtual server or HAProxy frontend that is down,
    /// or a route to it lost), while every API server behind it may be fine.
    VipDown,
}

/// How long `SlowDisk` holds each fdatasync: over etcd's 1 s warning (`warnSyncDuration`).
pub const SLOW_FDATASYNC: std::time::Duration = std::time::Duration::from_millis(1200);

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::DropAllPeers => f.write_str("drop-all-peers"),
            Fault::RejectAllPeers => f.write_str("reject-all-peers"),
            Fault::Isolate(n) => write!(f, "isolate:{n}"),
            Fault::BlockPort(p) => write!(f, "block-port:{p}"),
            Fault::DropOneWay { from, to } => write!(f, "drop-one-way:{from}:{to}"),
            Fault::CutPair { a, b } => write!(f, "cut:{a}:{b}"),
            Fault::DropLargePackets => f.write_str("drop-large-packets"),
            Fault::GuestFirewall(n) => write!(f, "guest-firewall:{n}"),
            Fault::GuestFirewallUncounted(n) => write!(f, "guest-firewall-uncounted:{n}"),
            Fault::ExpiredPeerCert(n) => write!(f, "expired-peer-cert:{n}"),
            Fault::ExpiredServerCert(n) => write!(f, "expired-server-cert:{n}"),
            Fault::StopEtcd(n) => write!(f, "stop-etcd:{n}"),
            Fault::SlowDisk(n) => write!(f, "slow-disk:{n}"),
            Fault::BlockSsh(n) => write!(f, "block-ssh:{n}"),
            Fault::ApiserverCrashLoop(n) => write!(f, "apiserver-crash-loop:{n}"),
            Fault::ExpiredApiserverCert(n) => write!(f, "expired-apiserver-cert:{n}"),
            Fault::FutureApiserverCert(n) => write!(f, "future-apiserver-cert:{n}"),
            Fault::VipDown => f.write_str("vip-down"),
        }
    }
}

/// The faults' names, for errors and usage texts.
pub const FAULT_NAMES: &str = "drop-all-peers, reject-all-peers, isolate:N, block-port:P, \
    drop-one-way:FROM:TO, cut:A:B, drop-large-packets, guest-firewall:N, \
    guest-firewall-uncounted:N, expired-peer-cert:N, expired-server-cert:N, stop-etcd:N, \
    slow-disk:N, block-ssh:N, apiserver-crash-loop:N, expired-apiserver-cert:N, \
    future-apiserver-cert:N, vip-down";

impl FromStr for Fault {
    type Err = anyhow::Error;

    /// The [`fmt::Display`] form: `drop-all-peers`, `isolate:cp3`, `block-port:2380`,
    /// `drop-one-way:cp1:cp2`, `cut:cp1:cp2`, `guest-firewall:cp2`, `slow-disk:cp2`, ...
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
        let two = || -> Result<(String, String)> {
            match args.as_slice() {
                [a, b] if !a.is_empty() && !b.is_empty() => Ok((a.clone(), b.clone())),
                _ => Err(anyhow!("{kind} needs two nodes: {kind}:<node>:<node>")),
            }
        };
        let fault = match kind {
            "drop-all-peers" => Fault::DropAllPeers,
            "reject-all-peers" => Fault::RejectAllPeers,
            "drop-large-packets" => Fault::DropLargePackets,
            "isolate" => Fault::Isolate(one("node")?),
            "guest-firewall" => Fault::GuestFirewall(one("node")?),
            "guest-firewall-uncounted" => Fault::GuestFirewallUncounted(one("node")?),
            "expired-peer-cert" => Fault::ExpiredPeerCert(one("node")?),
            "expired-server-cert" => Fault::ExpiredServerCert(one("node")?),
            "stop-etcd" => Fault::StopEtcd(one("node")?),
            "slow-disk" => Fault::SlowDisk(one("node")?),
            "block-ssh" => Fault::BlockSsh(one("node")?),
            "apiserver-crash-loop" => Fault::ApiserverCrashLoop(one("node")?),
            "expired-apiserver-cert" => Fault::ExpiredApiserverCert(one("node")?),
            "future-apiserver-cert" => Fault::FutureApiserverCert(one("node")?),
            "vip-down" => Fault::VipDown,
            "block-port" => Fault::BlockPort(one("port")?.parse()?),
            "drop-one-way" => {
                let (from, to) = two()?;
                Fault::DropOneWay { from, to }
            }
            "cut" => {
                let (a, b) = two()?;
                Fault::CutPair { a, b }
            }
            other => bail!("unknown fault {other:?}: {FAULT_NAMES}"),
        };
        if !args.is_empty()
            && matches!(
                fault,
                Fault::DropAllPeers
                    | Fault::RejectAllPeers
                    | Fault::DropLargePackets
                    | Fault::VipDown
            )
        {
            bail!("{kind} takes no argument");
        }
        Ok(fault)
    }
}

const PEER_PORTS: &str = "{ 2379, 2380 }";

/// Where a rule goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// The fabric's ingress chain of node i's veth (`in<index>`): what node i sends.
    From(usize),
    /// The fabric's egress chain of node i's veth (`out<index>`): what node i receives.
    To(usize),
    /// Node i's own `table inet filter`, chain `input`.
    Guest(usize),
}

impl Fault {
    /// The nodes this fault names (checked against the lab before anything is done).
    pub(crate) fn named_nodes(&self) -> Vec<&str> {
        match self {
            Fault::Isolate(n)
            | Fault::GuestFirewall(n)
            | Fault::GuestFirewallUncounted(n)
            | Fault::ExpiredPeerCert(n)
            | Fault::ExpiredServerCert(n)
            | Fault::StopEtcd(n)
            | Fault::SlowDisk(n)
            | Fault::BlockSsh(n)
            | Fault::ApiserverCrashLoop(n)
            | Fault::ExpiredApiserverCert(n)
            | Fault::FutureApiserverCert(n) => {
                vec![n.as_str()]
            }
            Fault::DropOneWay { from, to } => vec![from.as_str(), to.as_str()],
            Fault::CutPair { a, b } => vec![a.as_str(), b.as_str()],
            _ => Vec::new(),
        }
    }

    /// The `nft` rules per place (node index into `nodes`), for the network faults; empty for
    /// the others. In the fabric `@members` is the set of every member's address (a packet a
    /// node sends to one of them is for another member: its own address never leaves it).
    pub(crate) fn nft_rules(&self, nodes: &[Node]) -> Result<Vec<(Place, String)>> {
        let index_of = |name: &str| -> Result<usize> {
            nodes
                .iter()
                .position(|n| n.name == name)
                .ok_or_else(|| anyhow!("no node {name:?} in this lab"))
        };
        let two_different = |a: &str, b: &str| -> Result<(usize, usize)> {
            let (i, j) = (index_of(a)?, index_of(b)?);
            if i == j {
                bail!("{self} needs two different nodes");
            }
            Ok((i, j))
        };
        let comment = format!("comment \"etcdnet-lab {self}\"");
        let every = |rule: String| -> Vec<(Place, String)> {
            (0..nodes.len())
                .map(|i| (Place::From(i), format!("{rule} {comment}")))
                .collect()
        };
        let to_members = "ip daddr @members";
        Ok(match self {
            Fault::DropAllPeers => every(format!("{to_members} tcp dport {PEER_PORTS} drop")),
            Fault::RejectAllPeers => every(format!(
                "{to_members} tcp dport {PEER_PORTS} reject with tcp reset"
            )),
            Fault::BlockPort(port) => every(format!("{to_members} tcp dport {port} drop")),
            Fault::DropLargePackets => {
                let mut rules = every(format!(
                    "{to_members} tcp sport {PEER_PORTS} ip length > 1000 drop"
                ));
                rules.extend(every(format!(
                    "{to_members} tcp dport {PEER_PORTS} ip length > 1000 drop"
                )));
                rules
            }
            Fault::Isolate(name) => {
                let z = index_of(name)?;
                let ip = nodes[z].ip;
                nodes
                    .iter()
                    .enumerate()
                    .map(|(i, _)| {
                        let rule = if i == z {
                            format!("{to_members} drop {comment}")
                        } else {
                            format!("ip daddr {ip} drop {comment}")
                        };
                        (Place::From(i), rule)
                    })
                    .collect()
            }
            Fault::DropOneWay { from, to } => {
                let (f, t) = two_different(from, to)?;
                let to_ip = nodes[t].ip;
                vec![
                    (
                        Place::From(f),
                        format!("ip daddr {to_ip} tcp flags & (syn | ack) == syn drop {comment}"),
                    ),
                    (
                        Place::From(f),
                        format!("ip daddr {to_ip} tcp dport {PEER_PORTS} drop {comment}"),
                    ),
                ]
            }
            Fault::CutPair { a, b } => {
                let (i, j) = two_different(a, b)?;
                let mut rules = Vec::new();
                for (from, to) in [(i, j), (j, i)] {
                    let ip = nodes[to].ip;
                    for dir in ["dport", "sport"] {
                        rules.push((
                            Place::From(from),
                            format!("ip daddr {ip} tcp {dir} {PEER_PORTS} drop {comment}"),
                        ));
                    }
                }
                rules
            }
            Fault::GuestFirewall(name) | Fault::GuestFirewallUncounted(name) => {
                let g = index_of(name)?;
                let peers: Vec<String> = (nodes.iter())
                    .filter(|n| n.name != *name)
                    .map(|n| n.ip.to_string())
                    .collect();
                if peers.is_empty() {
                    bail!("{self} needs a lab of two nodes or more");
                }
                let counter = if matches!(self, Fault::GuestFirewall(_)) {
                    "counter "
                } else {
                    ""
                };
                vec![(
                    Place::Guest(g),
                    format!(
                        "ip saddr {{ {} }} tcp dport {PEER_PORTS} {counter}drop",
                        peers.join(", ")
                    ),
                )]
            }
            Fault::BlockSsh(name) => {
                vec![(
                    Place::To(index_of(name)?),
                    format!("tcp dport 22 drop {comment}"),
                )]
            }
            Fault::ExpiredPeerCert(_)
            | Fault::ExpiredServerCert(_)
            | Fault::StopEtcd(_)
            | Fault::SlowDisk(_)
            | Fault::ApiserverCrashLoop(_)
            | Fault::ExpiredApiserverCert(_)
            | Fault::FutureApiserverCert(_)
            | Fault::VipDown => Vec::new(),
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
            Fault::CutPair {
                a: "cp1".into(),
                b: "cp3".into(),
            },
            Fault::DropLargePackets,
            Fault::GuestFirewall("cp2".into()),
            Fault::GuestFirewallUncounted("cp2".into()),
            Fault::ApiserverCrashLoop("cp1".into()),
            Fault::ExpiredApiserverCert("cp2".into()),
            Fault::FutureApiserverCert("cp2".into()),
            Fault::VipDown,
            Fault::SlowDisk("cp2".into()),
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
        assert!("cut:cp1".parse::<Fault>().is_err());
        assert!("cut:cp1:".parse::<Fault>().is_err());
    }

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("cp{i}"),
                index: i,
                ip: std::net::Ipv4Addr::new(198, 18, 0, 10 + i as u8),
                netns: format!("t-cp{i}"),
                root: std::path::PathBuf::from(format!("/t/cp{i}")),
                etcd: Default::default(),
                logger: crate::Logger::Zap,
            })
            .collect()
    }

    fn rules(f: Fault) -> Vec<(Place, String)> {
        f.nft_rules(&nodes()).unwrap()
    }

    #[test]
    fn the_network_faults_live_in_the_fabric() {
        for f in [
            Fault::DropAllPeers,
            Fault::RejectAllPeers,
            Fault::BlockPort(2380),
            Fault::DropLargePackets,
            Fault::Isolate("cp3".into()),
            Fault::DropOneWay {
                from: "cp1".into(),
                to: "cp2".into(),
            },
            Fault::CutPair {
                a: "cp1".into(),
                b: "cp2".into(),
            },
            Fault::BlockSsh("cp2".into()),
        ] {
            let r = rules(f.clone());
            assert!(!r.is_empty(), "{f}");
            for (place, rule) in &r {
                assert!(!matches!(place, Place::Guest(_)), "{f}: {rule}");
                // What the jumpbox sends is never in a node's ingress chain; only BlockSsh
                // touches port 22 (in the egress towards the node).
                assert_eq!(
                    matches!(place, Place::To(_)),
                    matches!(f, Fault::BlockSsh(_)),
                    "{f}: {rule}"
                );
                assert!(
                    rule.ends_with(&format!("comment \"etcdnet-lab {f}\"")),
                    "{rule}"
                );
            }
        }
        // Every member sends nothing to the others' peer ports.
        let all = rules(Fault::DropAllPeers);
        assert_eq!(
            all.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            [Place::From(0), Place::From(1), Place::From(2)]
        );
        assert!(all[0]
            .1
            .starts_with("ip daddr @members tcp dport { 2379, 2380 } drop"));
        // Isolate: cp3 sends to no member, the others send nothing to cp3.
        let iso = rules(Fault::Isolate("cp3".into()));
        assert!(iso[2].1.starts_with("ip daddr @members drop"), "{iso:?}");
        assert!(iso[0].1.starts_with("ip daddr 198.18.0.13 drop"), "{iso:?}");
    }

    #[test]
    fn one_way_and_pair_cuts_are_stateless() {
        // One way: cp1's SYNs to cp2 and what cp1 sends to cp2's peer ports; nothing on cp2.
        let one = rules(Fault::DropOneWay {
            from: "cp1".into(),
            to: "cp2".into(),
        });
        assert!(one.iter().all(|(p, _)| *p == Place::From(0)), "{one:?}");
        assert!(one[0]
            .1
            .starts_with("ip daddr 198.18.0.12 tcp flags & (syn | ack) == syn drop"));
        assert!(one[1]
            .1
            .starts_with("ip daddr 198.18.0.12 tcp dport { 2379, 2380 } drop"));
        // A pair: both ways, both ports, to and from them; cp3 untouched.
        let cut = rules(Fault::CutPair {
            a: "cp1".into(),
            b: "cp2".into(),
        });
        assert_eq!(cut.len(), 4, "{cut:?}");
        assert!(cut.iter().all(|(p, r)| {
            (*p == Place::From(0) && r.contains("198.18.0.12"))
                || (*p == Place::From(1) && r.contains("198.18.0.11"))
        }));
        assert!(!cut.iter().any(|(_, r)| r.contains("198.18.0.13")));
        assert!(Fault::CutPair {
            a: "cp1".into(),
            b: "cp1".into()
        }
        .nft_rules(&nodes())
        .is_err());
        assert!(Fault::CutPair {
            a: "cp1".into(),
            b: "cp9".into()
        }
        .nft_rules(&nodes())
        .is_err());
    }

    #[test]
    fn the_guest_firewall_is_one_rule_in_the_node() {
        let counted = rules(Fault::GuestFirewall("cp2".into()));
        assert_eq!(
            counted,
            [(
                Place::Guest(1),
                "ip saddr { 198.18.0.11, 198.18.0.13 } tcp dport { 2379, 2380 } counter drop"
                    .to_string()
            )]
        );
        let uncounted = rules(Fault::GuestFirewallUncounted("cp2".into()));
        assert_eq!(
            uncounted[0].1,
            "ip saddr { 198.18.0.11, 198.18.0.13 } tcp dport { 2379, 2380 } drop"
        );
        // Not a network rule: the disk and the processes.
        assert!(rules(Fault::SlowDisk("cp2".into())).is_empty());
        assert!(rules(Fault::StopEtcd("cp2".into())).is_empty());
    }
}
