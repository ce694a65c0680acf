//! The probe stage: what runs on each control-plane node and how its output is read.
//! - `probe.sh` (embedded by `script`) gathers the node's facts and prints them as framed raw
//!   sections ([`frame`]: one shape for every section, [`frame::Head`]);
//! - `parse` reads them, one reader a section, into [`output`]'s document (its schema, and a
//!   format-1 JSON document's of older bundles);
//! - [`apiserver`] reads and judges what the probe fetched of the node's kube-apiserver;
//! - [`etcdlog`] classifies etcd's log lines into findings;
//! - [`firewall`] reads the node's own firewall rules the probe printed;
//! - [`metrics`]: etcd's own metrics, read before and after the path checks;
//! - `etcdask`: etcd's own answers (`/health`, the member and alarm lists, the metrics reads)
//!   as the probe sent them, judged;
//! - [`identity`] tells a document from the node it was sent to from one of another machine;
//! - [`hostkey`]: the ssh host key a node presented (ssh routes), as its fingerprint.
//!
//! A route (pod, jumpbox, ssh) runs the probe on every node and hands on one [`NodeReport`] per
//! node: a node that could not be probed is a value, not an early return.

pub mod apiserver;
pub(crate) mod etcdask;
pub mod etcdlog;
pub mod firewall;
pub(crate) mod frame;
pub mod hostkey;
pub mod identity;
pub mod metrics;
pub mod output;
pub mod parse;
pub(crate) mod paths;
pub mod script;

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use hostkey::HostKey;
pub use output::ProbeOutput;

// `ReachErrorKind`, `ReachError`, `Vantage`, `PortState` and `PortReach` are the contract's
// (`nodes[].error`, `nodes[].supervisorReach`, `nodes[].reachFrom`): their doc comments are the
// schema's descriptions, their serde attributes the json's names.
/// Why a node could not be probed.
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
pub enum ReachErrorKind {
    /// The VM has no IP address (yet).
    NoAddress,
    /// The node did not answer (SSH or pod could not get there).
    Unreachable,
    /// SSH authentication failed.
    AuthFailed,
    /// The API server refused the probe pod (Pod Security admission, 403).
    Rejected,
    /// The probe pod's image could not be pulled.
    ImagePull,
    /// The probe pod could not be scheduled or stayed Pending.
    Unschedulable,
    /// The probe did not finish in time.
    Timeout,
    /// The probe ran but its output could not be read.
    BadOutput,
    /// The machine that answered is not the node it was sent to.
    // Its document names other addresses or another host name; its document is not used.
    IdentityMismatch,
    /// Anything else.
    Other,
}

impl ReachErrorKind {
    /// The kind in words, for people (issue 38: no internal names in human text; the JSON
    /// keeps the code, `Rejected`, for scripts).
    pub fn phrase(self) -> &'static str {
        match self {
            ReachErrorKind::NoAddress => "no IP address",
            ReachErrorKind::Unreachable => "unreachable",
            ReachErrorKind::AuthFailed => "ssh login failed",
            ReachErrorKind::Rejected => "refused",
            ReachErrorKind::ImagePull => "image not pulled",
            ReachErrorKind::Unschedulable => "not scheduled",
            ReachErrorKind::Timeout => "timed out",
            ReachErrorKind::BadOutput => "unreadable output",
            ReachErrorKind::IdentityMismatch => "another machine answered",
            ReachErrorKind::Other => "failed",
        }
    }
}

/// Why a node could not be probed, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReachError {
    /// The kind of failure.
    pub kind: ReachErrorKind,
    /// One line: what happened and what to do.
    pub message: String,
}

// ([`NodeReport::reach_from`]): the jumpbox route checks them from the Supervisor (its pod in
// the vSphere Namespace), the ssh route from this machine (the plugin's own process, which is
// what reaches the VMs on that route). One judgement reads both; only the words of the vantage
// differ.
/// Where a VM's ports were checked from.
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
pub enum Vantage {
    /// The jumpbox's pod in the vSphere Namespace.
    Supervisor,
    /// The plugin's own process (the ssh route).
    ThisMachine,
}

impl Vantage {
    /// "the Supervisor" / "this machine".
    pub fn who(self) -> &'static str {
        match self {
            Vantage::Supervisor => "the Supervisor",
            Vantage::ThisMachine => "this machine",
        }
    }

    /// "from the Supervisor" / "from this machine".
    pub fn from(self) -> String {
        format!("from {}", self.who())
    }
}

// Tells "the VMs cannot reach each other" from "nothing reaches the VMs".
/// What the Supervisor side (jumpbox) or this machine (ssh) saw of a VM's port.
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
pub enum PortState {
    /// It connected.
    Open,
    /// No answer in time.
    Timeout,
    /// Refused.
    Refused,
    /// No route to the VM.
    NoRoute,
    /// The check failed in a way it does not recognise.
    // Neither open nor closed is known.
    Unknown,
}

impl PortState {
    /// The state in words, for people (issue 38; the JSON keeps the code, `NoRoute`).
    pub fn phrase(self) -> &'static str {
        match self {
            PortState::Open => "open",
            PortState::Timeout => "timeout",
            PortState::Refused => "refused",
            PortState::NoRoute => "no route",
            PortState::Unknown => "unknown",
        }
    }
}

/// One port of a VM as the Supervisor saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortReach {
    /// The TCP port.
    pub port: u16,
    /// What the dial found.
    pub state: PortState,
}

impl ReachError {
    /// A VM without an IP cannot be reached by any route.
    pub fn no_address() -> ReachError {
        ReachError {
            kind: ReachErrorKind::NoAddress,
            message: "the VirtualMachine has no IP address yet".into(),
        }
    }
}

/// One control-plane node's probe result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// The control-plane node's name (its Machine's).
    pub name: String,
    pub ip: Option<IpAddr>,
    pub outcome: Result<ProbeOutput, ReachError>,
    /// The VM's 22, 2379, 2380 and 6443 as seen from [`NodeReport::reach_from`]: the
    /// Supervisor (jumpbox route) or this machine (ssh route, not through a proxy); empty on the
    /// pod route, which does not check them.
    #[serde(default)]
    pub reach: Vec<PortReach>,
    /// Where `reach` was seen from; None when empty, and in bundles written before the field
    /// (then only the jumpbox recorded ports: [`NodeReport::vantage`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_from: Option<Vantage>,
    /// The ssh host key the node presented (ssh routes; None for pods or before any contact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_key: Option<HostKey>,
}

impl NodeReport {
    pub fn probe(&self) -> Option<&ProbeOutput> {
        self.outcome.as_ref().ok()
    }

    /// Where `reach` was seen from: a report before `reach_from` existed had ports only from
    /// the jumpbox, so from the Supervisor.
    pub fn vantage(&self) -> Vantage {
        self.reach_from.unwrap_or(Vantage::Supervisor)
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary. What a
/// node prints may hold multi-byte characters anywhere (a container ID, a log line), and slicing
/// it at a byte count (`&s[..n]`) panics inside one: every cut of outside text goes through here.
pub fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Bytes of a detail quoting outside text (curl's words, a tool's stderr, a path), before
/// [`cap`]'s `...`: the one bound of every section reader's detail (probe.sh's `cap(s, 500)` of
/// format 1, whose documents the caps in `parse::bounds` hold to it).
pub(crate) const DETAIL: usize = 500;

/// `text` cut at `max` bytes (on a character boundary) with `...` when it was longer: the one
/// way a detail quoting outside text is bounded (probe.sh's `cap(s, max)` did the same).
pub(crate) fn cap(text: &str, max: usize) -> String {
    match head(text, max) {
        h if h.len() < text.len() => format!("{h}..."),
        h => h.to_string(),
    }
}

/// Bytes of a tool's last words kept (probe.sh's `last_msg` cut at 300).
const LAST_MSG: usize = 300;
/// A section's `err` lines: the last bytes of a tool's stderr the script sends (`STDERR_BYTES`,
/// handed to it by [`script::CAPS`]).
pub(crate) const STDERR_BYTES: usize = 2048;
/// The last line of a tool's stderr that says something, capped; crictl's `msg="..."`
/// unwrapped (logrus' text format, `level=fatal msg="..."`).
pub(crate) fn last_msg<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let Some(l) = lines.filter(|l| !l.trim().is_empty()).last() else {
        return String::new();
    };
    let l = l.strip_suffix('\r').unwrap_or(l);
    let msg = match l.rfind("msg=\"") {
        Some(at) => {
            let m = &l[at + 5..];
            let m = m.rfind('"').map_or(m, |end| &m[..end]);
            m.replace("\\\"", "\"")
        }
        None => l.to_string(),
    };
    cap(&msg, LAST_MSG)
}

#[cfg(test)]
mod tests {
    use super::head;

    #[test]
    fn head_cuts_on_character_boundaries() {
        assert_eq!(head("0123456789abcdef", 13), "0123456789abc");
        assert_eq!(head("short", 13), "short");
        assert_eq!(head("", 3), "");
        // 'é' is two bytes, '日' three, '🎉' four: never cut inside one.
        assert_eq!(head("ééé", 3), "é");
        assert_eq!(head("日本語", 4), "日");
        assert_eq!(head("🎉🎉", 5), "🎉");
        assert_eq!(head("🎉", 3), "");
        assert_eq!(head("abc", 0), "");
    }
}
