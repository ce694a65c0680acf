//! What a lab is made of: the knobs of [`LabConfig`] and the etcd log format.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Serialize;

/// The format of etcd's log, chosen per lab (and per node with [`Logger::Mixed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Logger {
    /// `--logger=zap`: one JSON object per line, the form etcd 3.5 (kubeadm's default) writes.
    Zap,
    /// etcd 3.4's default capnslog text: `2026-11-30 09:12:44.123456 W | rafthttp: ...`.
    Text,
    /// Odd-numbered nodes (cp1, cp3, ...) zap, even-numbered ones text.
    Mixed,
}

impl Logger {
    /// The format of node number `index` (1-based).
    pub fn for_node(self, index: usize) -> Logger {
        match self {
            Logger::Mixed if index % 2 == 1 => Logger::Zap,
            Logger::Mixed => Logger::Text,
            other => other,
        }
    }
}

impl fmt::Display for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Logger::Zap => "zap",
            Logger::Text => "text",
            Logger::Mixed => "mixed",
        })
    }
}

impl FromStr for Logger {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "zap" | "json" => Logger::Zap,
            "text" | "capnslog" => Logger::Text,
            "mixed" => Logger::Mixed,
            other => bail!("unknown logger {other:?} (zap, text or mixed)"),
        })
    }
}

/// How to build a lab. `LabConfig::default()` is three nodes cp1..cp3 at 198.18.0.11-13, zap logs.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Number of control-plane nodes (1..=9).
    pub nodes: usize,
    /// etcd's log format.
    pub logger: Logger,
    /// Node names; empty means cp1..cpN. Also the etcd member names and certificate CNs.
    pub node_names: Vec<String>,
    /// The lab directory (must not exist yet, or be empty). Default: `$TMPDIR/etcdnet-lab/<id>`.
    /// Removed on teardown either way.
    pub dir: Option<PathBuf>,
    /// First three octets of the /24 the nodes live in; must be inside 198.18.0.0/15.
    /// Node i gets `.10+i`, the jumpbox (the switch's own address) `.1`.
    pub subnet: [u8; 3],
    /// The image name the manifest and crictl show (nothing is pulled: etcd is /usr/bin/etcd).
    pub image: String,
    /// How long [`crate::Lab::start`] waits for every member's /health.
    pub start_timeout: Duration,
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            nodes: 3,
            logger: Logger::Zap,
            node_names: Vec::new(),
            dir: None,
            subnet: [198, 18, 0],
            image: "registry.k8s.io/etcd:3.4.23-0".to_string(),
            start_timeout: Duration::from_secs(30),
        }
    }
}

impl LabConfig {
    /// `nodes` nodes, everything else default.
    pub fn with_nodes(nodes: usize) -> Self {
        LabConfig {
            nodes,
            ..LabConfig::default()
        }
    }

    /// The names of the nodes, validated.
    pub(crate) fn names(&self) -> Result<Vec<String>> {
        if !(1..=9).contains(&self.nodes) {
            bail!("a lab has 1 to 9 nodes, not {}", self.nodes);
        }
        let names: Vec<String> = if self.node_names.is_empty() {
            (1..=self.nodes).map(|i| format!("cp{i}")).collect()
        } else if self.node_names.len() == self.nodes {
            self.node_names.clone()
        } else {
            bail!(
                "{} node names given for {} nodes",
                self.node_names.len(),
                self.nodes
            );
        };
        for name in &names {
            // A DNS-1123 label keeps it usable as a netns suffix, a path, a CN and a hostname.
            let ok = !name.is_empty()
                && name.len() <= 40
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.starts_with('-')
                && !name.ends_with('-');
            if !ok || name == "sw" {
                bail!("invalid node name {name:?} (lowercase DNS label, not \"sw\")");
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != names.len() {
            bail!("node names must be unique: {names:?}");
        }
        Ok(names)
    }

    /// The address of node number `index` (1-based).
    pub(crate) fn ip(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 10 + index as u8)
    }

    /// The switch's own address, from which the jumpbox reaches every node.
    pub(crate) fn jumpbox_ip(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 1)
    }

    pub(crate) fn check_subnet(&self) -> Result<()> {
        let [a, b, _] = self.subnet;
        // 198.18.0.0/15 (RFC 2544 benchmarking): never routed, never a real network here.
        if a != 198 || !(18..=19).contains(&b) {
            bail!("the lab's subnet must lie inside 198.18.0.0/15, not {a}.{b}.x.0");
        }
        Ok(())
    }
}
