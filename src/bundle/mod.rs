//! The evidence bundle: `diagnose --bundle FILE.tar.gz` writes what each verdict was made from
//! ([`Evidence`]) as plain files a person can read, and `analyse FILE.tar.gz` reads them back
//! and judges again ([`Evidence::judge`]): the same tool, offline, and a newer plugin re-judges
//! an old bundle with its own parser and rules. Layout (docs/output.md):
//!
//! ```text
//! manifest.json                          format version, plugin version, arguments, time, clusters
//! <namespace>/<cluster>/report.json      the DiagnoseReport as judged when written (for people)
//! <namespace>/<cluster>/discovery.json   what discovery said (SupervisorApis)
//! <namespace>/<cluster>/supervisor/<Kind>-<name>.json   each object read, no managedFields
//! <namespace>/<cluster>/workload-api.json, route.json
//! <namespace>/<cluster>/nodes/<node>/probe.out    the probe's output as the node printed it
//!                                                (framed sections, format 2; `probe.json`, a
//!                                                document of format 1, in older bundles)
//! <namespace>/<cluster>/nodes/<node>/etcd.log     its etcd log tail (also inside probe.out)
//! <namespace>/<cluster>/nodes/<node>/reach.json   IP, why unreached, Supervisor-side ports, host key
//! ```
//!
//! Nothing secret is in an [`Evidence`] (no Secret object, no kubeconfig, no key: see
//! docs/security.md), so nothing secret is written. Names become path components only through
//! [`component`]: whatever a name holds, it cannot make `..`, `/` or an absolute path; the
//! manifest maps each name to its folder, so the names themselves are kept exactly.
//!
//! Writing is atomic (a temporary file beside the target, renamed onto it once complete), so an
//! error or a signal never leaves a partial bundle. Reading is in memory, never extracted, with
//! caps on entry size, total size and entry count; it refuses absolute and `..` paths, links and
//! devices, and says in one line which file is wrong and how. Entries it does not know are
//! ignored: a newer plugin's bundle may hold more.

//!
//! - this file: the layout (the manifest's types, the caps, how a name becomes a path component);
//! - [`write`]: the bundle written atomically from evidence ([`write::write`]);
//! - [`read`]: a bundle read back in memory, within the caps ([`read::read`]).

mod read;
mod write;

pub(crate) use read::read;
pub(crate) use write::{check_target, check_writable, write, write_atomically};

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::probe::{HostKey, PortReach, ReachError, Vantage};
use crate::report::{Evidence, ReadNotes};

/// The layout's version. Files are only added within one; a reader refuses a newer one.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// The manifest's `kind`.
pub(crate) const KIND: &str = "EvidenceBundle";
pub(crate) const MANIFEST: &str = "manifest.json";

/// What reading accepts at most (what writing keeps to: see [`write::write`]).
///
/// Bounds of `analyse` (docs/security.md, "Bundle bounds"), with B the decompressed bytes
/// (≤ `total`), C the clusters (≤ `clusters`), N the nodes of a cluster (≤ `nodes`) and O its
/// objects (≤ `objects`):
/// - memory: the entries as bytes (B, each at most `entry`), and each entry parsed at most
///   once (a manifest naming an entry twice, a node or a cluster twice, is refused before
///   anything is parsed twice), so the parsed documents are a constant times B; the report is
///   made of those;
/// - time: decompressing and parsing are linear in B; per cluster, the facts are
///   O(O log O) (maps by name, one sort), the matrices and the verdict's path steps O(N²)
///   with indexed lookups (`analyse::matrix::Matrix::index`, `Paths`), each node's log
///   classified once, linear in its bytes. Altogether O(B + C·(O log O + N²)).
///
/// Held by `bounds_tests::the_largest_bundle_within_the_caps_is_read_once_in_bounded_time` (the
/// largest bundle these caps allow by count, about 100 MB of JSON: analysed, timed, every
/// entry parsed exactly once) and the property tests of `bounds_tests`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// One entry's bytes. A probe document is at most `parse::MAX_OUTPUT_BYTES` (16 MiB);
    /// nothing else comes near.
    pub entry: u64,
    /// The whole archive's once decompressed (headers included): a gzip bomb stops here.
    pub total: u64,
    /// Entries: a bundle of 50 clusters of 7 nodes has about 2000.
    pub count: usize,
    /// Clusters in the manifest: one `-A` run's worth; a larger Supervisor is written (and
    /// analysed) per namespace.
    pub clusters: usize,
    /// Nodes of one cluster: the most a run probes (`supervisor::targets::MAX_TARGETS`).
    pub nodes: usize,
    /// Supervisor objects of one cluster: its Cluster and KCP, each Machine and VM (a real
    /// cluster has 2 + 2 × its nodes), with room for labelled objects that are not its own, and
    /// the network objects its verdict reads (up to 500 SecurityPolicies of each group and 100
    /// of other namespaces, the NetworkPolicies that claim an `nsx-op/error`, the cluster's
    /// ports and networks): every object the verdict uses fits a bundle unless the namespace
    /// holds thousands, and then each one left out is noted ([`ClusterEntry::left_out`]).
    pub objects: usize,
}

pub(crate) const CAPS: Caps = Caps {
    entry: 32 * 1024 * 1024,
    total: 512 * 1024 * 1024,
    count: 20_000,
    clusters: 100,
    nodes: crate::supervisor::targets::MAX_TARGETS,
    objects: 2048,
};
/// The objects the verdict does not use (NetworkPolicies without an `nsx-op/error`, only
/// counted in the report's `read`) a bundle keeps at most, after every one it does use.
pub(crate) const MAX_EXTRA_OBJECTS: usize = 64;
/// The objects left out a bundle names (each at most [`MAX_LEFT_OUT_CHARS`]); the rest are
/// counted in one more line.
pub(crate) const MAX_LEFT_OUT_NAMED: usize = 32;
pub(crate) const MAX_LEFT_OUT_CHARS: usize = 300;
/// Longest path component written (tar handles longer paths, people's tools less so).
const MAX_COMPONENT_CHARS: usize = 100;

/// `manifest.json`: what the bundle is and where each cluster's files are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub api_version: String,
    /// Always [`KIND`].
    pub kind: String,
    pub format_version: u32,
    /// The plugin that wrote it.
    pub plugin_version: String,
    /// The command line after the program's name (`diagnose tkc-prod -n ns-prod --bundle ...`).
    pub args: Vec<String>,
    /// When it was written, RFC 3339 (UTC).
    pub created: String,
    pub clusters: Vec<ClusterEntry>,
}

/// One cluster's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClusterEntry {
    pub context: String,
    pub namespace: String,
    pub cluster: String,
    /// The folder of its files, `<namespace>/<cluster>` made safe.
    pub dir: String,
    /// How long its diagnosis took.
    pub duration_ms: u64,
    /// The log window of the diagnosis (`--since`), seconds; `analyse` judges with it again.
    #[serde(default = "default_since_s")]
    pub since_s: u64,
    /// The verdict when written (for a reader's glance; `analyse` judges again).
    #[serde(default)]
    pub verdict: Option<String>,
    /// The evidence's notes of what the run could not read, and when it read
    /// (`networkUnread`, `remediationUnread`, `forbidden`, `readAt`: [`ReadNotes`]), as they are.
    #[serde(flatten)]
    pub notes: ReadNotes,
    /// Its Supervisor objects, paths under `dir`: the ones the verdict uses first.
    pub objects: Vec<String>,
    /// The Supervisor objects the run read that the bundle had to leave out (its caps), each
    /// `Kind namespace/name` and whether the verdict used it, at most [`MAX_LEFT_OUT_NAMED`]
    /// and a line counting the rest: `analyse` says its verdict may differ. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Its control-plane nodes, in the report's order.
    pub nodes: Vec<NodeEntry>,
    /// What NSX Manager answered (`--nsx-manager`), a path under `dir` (`nsx-manager.json`:
    /// `nsxmanager::raw::NsxRead`, never a credential). Absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_manager: Option<String>,
    /// The report's note about that reading (`Evidence::nsx_note`). Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeEntry {
    /// The node's name, exactly.
    pub name: String,
    /// Its folder under the cluster's `dir` (`nodes/<name made safe>`).
    pub dir: String,
}

/// `nodes/<node>/reach.json`: how the route got (or did not get) to the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeReach {
    pub name: String,
    pub ip: Option<IpAddr>,
    /// Why the node could not be probed; null when `probe.out` holds its output.
    pub error: Option<ReachError>,
    /// The VM's 22, 2379, 2380 and 6443 from `reachFrom` (the jumpbox route: the Supervisor;
    /// the ssh route: this machine).
    #[serde(default)]
    pub reach: Vec<PortReach>,
    /// Where `reach` was seen from; absent when empty and in older bundles (the Supervisor's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_from: Option<Vantage>,
    #[serde(default)]
    pub host_key: Option<HostKey>,
}

/// A bundle as read: its manifest and each cluster's evidence.
#[derive(Debug, Clone)]
pub(crate) struct Bundle {
    pub manifest: Manifest,
    pub evidence: Vec<Evidence>,
}

impl Bundle {
    /// One warning per cluster whose bundle had to leave objects out (its caps): its verdict
    /// may differ from the live one, never silently. (`analyse` prints notes made visible: the
    /// names are the bundle's.)
    pub fn left_out_notes(&self) -> Vec<String> {
        self.evidence
            .iter()
            .filter(|e| !e.left_out.is_empty())
            .map(|e| {
                format!(
                    "warning: cluster {}/{}: the bundle left out Supervisor objects the run read ({}): this verdict may differ from the live one",
                    e.namespace,
                    e.cluster,
                    e.left_out.join(", ")
                )
            })
            .collect()
    }
}

/// A name as one path component: ASCII letters, digits, `.`, `-` and `_` kept, anything else
/// `_`; never empty, never starting with a dot (so never `.` or `..`, nor hidden), at most
/// [`MAX_COMPONENT_CHARS`]. Kubernetes names pass unchanged; the rest is data, not a path.
pub(crate) fn component(name: &str) -> String {
    let mut safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_COMPONENT_CHARS)
        .collect();
    if safe.is_empty() || safe.starts_with('.') {
        safe.insert(0, '_');
        safe.truncate(MAX_COMPONENT_CHARS);
    }
    safe
}

/// Components already used per folder: two names that became the same component (or differ
/// past the cut) get `-2`, `-3`, ...
#[derive(Default)]
struct Names(BTreeMap<String, BTreeSet<String>>);

impl Names {
    fn unique(&mut self, folder: &str, wanted: &str) -> String {
        let used = self.0.entry(folder.to_string()).or_default();
        let mut name = wanted.to_string();
        let mut n = 2;
        while used.contains(&name) {
            name = format!("{wanted}-{n}");
            n += 1;
        }
        used.insert(name.clone());
        name
    }
}

/// The log window of a bundle written before `sinceS` existed: the default `--since`.
fn default_since_s() -> u64 {
    crate::analyse::verdict::DEFAULT_SINCE.as_secs()
}

#[cfg(test)]
mod bounds_tests;

#[cfg(test)]
mod tests;
