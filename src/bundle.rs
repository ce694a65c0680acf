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
//! <namespace>/<cluster>/nodes/<node>/probe.json   the probe's document as the node printed it
//! <namespace>/<cluster>/nodes/<node>/etcd.log     its etcd log tail (also inside probe.json)
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

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::probe::{identity, HostKey, NodeReport, PortReach, ReachError, ReachErrorKind};
use crate::report::{Evidence, RouteInfo, API_VERSION};
use crate::supervisor::{Inventory, SupervisorApis};
use crate::workload::WorkloadApi;

/// The layout's version. Files are only added within one; a reader refuses a newer one.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's `kind`.
pub const KIND: &str = "EvidenceBundle";
pub const MANIFEST: &str = "manifest.json";

/// What reading accepts at most (what writing keeps to: see [`files`]).
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
pub struct Caps {
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
    /// cluster has 2 + 2 × its nodes), with room for labelled objects that are not its own.
    pub objects: usize,
}

pub const CAPS: Caps = Caps {
    entry: 32 * 1024 * 1024,
    total: 512 * 1024 * 1024,
    count: 20_000,
    clusters: 100,
    nodes: crate::supervisor::targets::MAX_TARGETS,
    objects: 256,
};
/// Longest path component written (tar handles longer paths, people's tools less so).
const MAX_COMPONENT_CHARS: usize = 100;

/// `manifest.json`: what the bundle is and where each cluster's files are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
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
pub struct ClusterEntry {
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
    /// Its Supervisor objects, paths under `dir`, in the order they were read.
    pub objects: Vec<String>,
    /// Its control-plane nodes, in the report's order.
    pub nodes: Vec<NodeEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeEntry {
    /// The node's name, exactly.
    pub name: String,
    /// Its folder under the cluster's `dir` (`nodes/<name made safe>`).
    pub dir: String,
}

/// `nodes/<node>/reach.json`: how the route got (or did not get) to the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReach {
    pub name: String,
    pub ip: Option<IpAddr>,
    /// Why the node could not be probed; null when `probe.json` holds its document.
    pub error: Option<ReachError>,
    /// The VM's 22, 2379, 2380 and 6443 from the Supervisor (jumpbox route).
    #[serde(default)]
    pub reach: Vec<PortReach>,
    #[serde(default)]
    pub host_key: Option<HostKey>,
}

/// A bundle as read: its manifest and each cluster's evidence.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub manifest: Manifest,
    pub evidence: Vec<Evidence>,
}

/// Writes `evidence` (one per cluster) to `path` as a .tar.gz, atomically.
/// Checked before a run, so that a bundle that cannot be written is known before minutes of
/// diagnosis (exit 2, nothing contacted): its folder must exist, and the path must not be one.
pub fn check_target(path: &Path) -> Result<()> {
    let cannot = |why: &str| Error::Usage(format!("cannot write bundle {}: {why}", path.display()));
    if path.is_dir() {
        return Err(cannot("it is a folder"));
    }
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => {
            Err(cannot(&format!("no folder {}", d.display())))
        }
        _ => Ok(()),
    }
}

pub fn write(path: &Path, evidence: &[Evidence]) -> Result<()> {
    let cannot =
        |why: String| Error::config(format!("cannot write bundle {}: {why}", path.display()));
    // `args_os`: `args` panics on an argument that is not UTF-8 (a path can be anything).
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let files = files(evidence, args)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    // Beside the target, so the rename is atomic; removed on drop if anything below fails.
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| cannot(e.to_string()))?;
    let mtime = unix_seconds(SystemTime::now());
    let gz = flate2::write::GzEncoder::new(
        io::BufWriter::new(tmp.as_file()),
        flate2::Compression::default(),
    );
    let mut tar = tar::Builder::new(gz);
    for (entry, bytes) in &files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_uid(0);
        header.set_gid(0);
        tar.append_data(&mut header, entry, bytes.as_slice())
            .map_err(|e| cannot(e.to_string()))?;
    }
    let gz = tar.into_inner().map_err(|e| cannot(e.to_string()))?;
    let mut buf = gz.finish().map_err(|e| cannot(e.to_string()))?;
    buf.flush().map_err(|e| cannot(e.to_string()))?;
    drop(buf);
    tmp.as_file()
        .sync_all()
        .map_err(|e| cannot(e.to_string()))?;
    tmp.persist(path).map_err(|e| cannot(e.error.to_string()))?;
    Ok(())
}

/// The bundle's files, in order (the manifest first), from `evidence` and the command line.
/// Nothing is written that [`read`] would refuse: more clusters or nodes than [`CAPS`] allow is
/// an error, and a cluster's objects beyond the cap are left out (the Supervisor's list order,
/// with the Machines beyond the KCP's replicas last, so those go first; `analyse` then counts
/// fewer of them).
fn files(evidence: &[Evidence], args: Vec<String>) -> Result<Vec<(String, Vec<u8>)>> {
    let too_many = |what: String| {
        Error::config(format!(
            "{what}: an evidence bundle holds at most {} clusters of {} nodes; write one per namespace (-n)",
            CAPS.clusters, CAPS.nodes
        ))
    };
    if evidence.len() > CAPS.clusters {
        return Err(too_many(format!("{} clusters", evidence.len())));
    }
    if let Some(e) = evidence.iter().find(|e| e.nodes.len() > CAPS.nodes) {
        return Err(too_many(format!(
            "cluster {}/{} has {} nodes",
            e.namespace,
            e.cluster,
            e.nodes.len()
        )));
    }
    let mut out = Vec::new();
    let mut clusters = Vec::new();
    let mut dirs = Names::default();
    for e in evidence {
        let report = e.judge()?;
        let ns = component(&e.namespace);
        let dir = format!("{ns}/{}", dirs.unique(&ns, &component(&e.cluster)));
        let mut put = |rel: &str, bytes: Vec<u8>| out.push((format!("{dir}/{rel}"), bytes));
        put("report.json", pretty(&report)?);
        put("discovery.json", pretty(&e.apis)?);
        put("workload-api.json", pretty(&e.workload_api)?);
        put("route.json", pretty(&e.route)?);
        let mut taken = Names::default();
        let mut objects = Vec::new();
        for o in e.objects.iter().take(CAPS.objects) {
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or("Object");
            let name = o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("unnamed");
            let file = taken.unique("supervisor", &component(&format!("{kind}-{name}")));
            let rel = format!("supervisor/{file}.json");
            put(&rel, pretty(o)?);
            objects.push(rel);
        }
        let mut nodes = Vec::new();
        for n in &e.nodes {
            let rel = format!("nodes/{}", taken.unique("nodes", &component(&n.name)));
            if let Ok(probe) = &n.outcome {
                // As the node printed it; a document made in code (tests) in the same schema.
                let doc = match probe.raw.as_str() {
                    Some(raw) => raw.as_bytes().to_vec(),
                    None => pretty(probe)?,
                };
                put(&format!("{rel}/probe.json"), doc);
                if let Some(logs) = &probe.etcd.logs {
                    put(&format!("{rel}/etcd.log"), logs.text.clone().into_bytes());
                }
            }
            let reach = NodeReach {
                name: n.name.clone(),
                ip: n.ip,
                error: n.outcome.as_ref().err().cloned(),
                reach: n.reach.clone(),
                host_key: n.host_key.clone(),
            };
            put(&format!("{rel}/reach.json"), pretty(&reach)?);
            nodes.push(NodeEntry {
                name: n.name.clone(),
                dir: rel,
            });
        }
        clusters.push(ClusterEntry {
            context: e.context.clone(),
            namespace: e.namespace.clone(),
            cluster: e.cluster.clone(),
            dir,
            duration_ms: e.duration_ms,
            since_s: e.since_s,
            verdict: Some(report.verdict.code.to_string()),
            objects,
            nodes,
        });
    }
    let manifest = Manifest {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        format_version: FORMAT_VERSION,
        plugin_version: env!("CARGO_PKG_VERSION").into(),
        args,
        created: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        clusters,
    };
    out.insert(0, (MANIFEST.to_string(), pretty(&manifest)?));
    Ok(out)
}

fn pretty<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| Error::Output {
        source: Box::new(e),
    })?;
    text.push(b'\n');
    Ok(text)
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A name as one path component: ASCII letters, digits, `.`, `-` and `_` kept, anything else
/// `_`; never empty, never starting with a dot (so never `.` or `..`, nor hidden), at most
/// [`MAX_COMPONENT_CHARS`]. Kubernetes names pass unchanged; the rest is data, not a path.
pub fn component(name: &str) -> String {
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

/// Reads the bundle at `path`: in memory, each node's document parsed again with this plugin's
/// parser and checked to be the node's, as a live run does. Any problem with the file is one
/// configuration error (exit 2) naming the file, the entry and what is wrong.
pub fn read(path: &Path) -> Result<Bundle> {
    let bad = |why: String| Error::config(format!("bundle {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
    let entries = entries(io::BufReader::new(file), CAPS).map_err(bad)?;
    from_entries(&entries, CAPS).map_err(bad)
}

/// The regular files of a .tar.gz read from `source`, by normalised path. Every refusal is one
/// line naming the entry (tar's and gzip's own words may quote the archive's bytes: control
/// characters among them are escaped).
fn entries(
    source: impl Read,
    caps: Caps,
) -> std::result::Result<BTreeMap<String, Vec<u8>>, String> {
    read_archive(source, caps).map_err(|e| {
        e.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    })
}

fn read_archive(
    source: impl Read,
    caps: Caps,
) -> std::result::Result<BTreeMap<String, Vec<u8>>, String> {
    // gzip's magic first: a text file or a bare tar says so, rather than "truncated".
    let mut source = source;
    let mut magic = Vec::with_capacity(2);
    (&mut source)
        .take(2)
        .read_to_end(&mut magic)
        .map_err(|e| format!("cannot read: {e}"))?;
    match magic.as_slice() {
        [] => return Err("empty file, not a .tar.gz".into()),
        [0x1f, 0x8b] => {}
        _ => return Err("not a .tar.gz (it does not start with gzip's header)".into()),
    }
    let failure = Rc::new(RefCell::new(None));
    let counted = Capped {
        inner: flate2::read::GzDecoder::new(magic.as_slice().chain(source)),
        read: 0,
        cap: caps.total,
        failure: failure.clone(),
    };
    let mut archive = tar::Archive::new(counted);
    // What the decompression said, if it failed, says more than tar's wrapping of it.
    let why = |e: io::Error| -> String {
        failure
            .borrow()
            .clone()
            .unwrap_or_else(|| format!("not a tar archive ({e})"))
    };
    let mut files = BTreeMap::new();
    let mut count = 0usize;
    for entry in archive.entries().map_err(why)? {
        let mut entry = entry.map_err(why)?;
        count += 1;
        if count > caps.count {
            return Err(format!("more than {} entries", caps.count));
        }
        let raw_path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let shown = format!("{raw_path:?}");
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() {
            continue;
        }
        if !(kind.is_file() || kind.is_contiguous()) {
            return Err(format!(
                "entry {shown} is a {}, not a regular file",
                entry_kind(kind)
            ));
        }
        let path = normalise(&raw_path).map_err(|why| format!("entry {shown}: {why}"))?;
        let size = entry.size();
        if size > caps.entry {
            return Err(format!(
                "entry {shown} is {size} bytes, more than the {} an entry may be",
                caps.entry
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(caps.entry)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("entry {shown}: {}", why(e)))?;
        if files.insert(path, bytes).is_some() {
            return Err(format!("entry {shown} appears twice"));
        }
    }
    // The rest of the stream (tar's end blocks, the gzip trailer): a cut or a corrupt checksum
    // past the last entry is still a damaged file.
    io::copy(&mut archive.into_inner(), &mut io::sink()).map_err(|e| {
        failure
            .borrow()
            .clone()
            .unwrap_or_else(|| format!("unreadable after the last entry ({e})"))
    })?;
    Ok(files)
}

fn entry_kind(kind: tar::EntryType) -> &'static str {
    if kind.is_symlink() {
        "symbolic link"
    } else if kind.is_hard_link() {
        "hard link"
    } else if kind.is_character_special() || kind.is_block_special() {
        "device"
    } else if kind.is_fifo() {
        "FIFO"
    } else {
        "special entry"
    }
}

/// A relative path of plain components joined by `/`; `.` components dropped. Absolute paths,
/// `..`, empty names and NUL are refused.
fn normalise(path: &str) -> std::result::Result<String, &'static str> {
    if path.starts_with('/') || path.starts_with('\\') {
        return Err("absolute path refused");
    }
    if path.contains('\0') {
        return Err("NUL in path refused");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("`..` in path refused"),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("empty path");
    }
    Ok(parts.join("/"))
}

/// The decompressed stream, counted against `cap`; the first failure (the cap, a cut or
/// corrupt gzip) is kept in `failure` in its own words.
struct Capped<R> {
    inner: R,
    read: u64,
    cap: u64,
    failure: Rc<RefCell<Option<String>>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).map_err(|e| {
            let why = match e.kind() {
                io::ErrorKind::UnexpectedEof => "cut short: the file is truncated".to_string(),
                _ => format!("not a .tar.gz, or damaged ({e})"),
            };
            self.failure.borrow_mut().get_or_insert(why.clone());
            io::Error::new(e.kind(), why)
        })?;
        self.read += n as u64;
        if self.read > self.cap {
            let why = format!("more than {} bytes once decompressed", self.cap);
            self.failure.borrow_mut().get_or_insert(why.clone());
            return Err(io::Error::other(why));
        }
        Ok(n)
    }
}

/// The evidence the files hold, per the manifest.
fn from_entries(
    files: &BTreeMap<String, Vec<u8>>,
    caps: Caps,
) -> std::result::Result<Bundle, String> {
    read_entries(files, caps).map(|(bundle, _)| bundle)
}

/// [`from_entries`], and how many bytes of entries were parsed (each at most once).
fn read_entries(
    files: &BTreeMap<String, Vec<u8>>,
    caps: Caps,
) -> std::result::Result<(Bundle, u64), String> {
    let manifest: Manifest = match files.get(MANIFEST) {
        None => return Err(format!("not an etcdnet evidence bundle (no {MANIFEST})")),
        Some(bytes) => {
            let v: Value = json(MANIFEST, bytes)?;
            if v.get("kind").and_then(Value::as_str) != Some(KIND) {
                return Err(format!(
                    "not an etcdnet evidence bundle ({MANIFEST} is not of kind {KIND})"
                ));
            }
            match v.get("formatVersion").and_then(Value::as_u64) {
                Some(n) if n <= u64::from(FORMAT_VERSION) => {}
                found => {
                    return Err(format!(
                        "format version {} is newer than this plugin reads ({FORMAT_VERSION}): upgrade kubectl-etcdnet",
                        found.map_or_else(|| "(none)".to_string(), |n| n.to_string())
                    ))
                }
            }
            serde_json::from_value(v).map_err(|e| format!("{MANIFEST}: {e}"))?
        }
    };
    if manifest.clusters.is_empty() {
        return Err(format!("{MANIFEST} lists no cluster"));
    }
    bounded(&manifest, caps)?;
    let mut reader = Reader {
        files,
        taken: HashSet::from([MANIFEST.to_string()]),
        parsed: files.get(MANIFEST).map_or(0, |b| b.len() as u64),
    };
    let evidence = manifest
        .clusters
        .iter()
        .map(|c| cluster(&mut reader, c))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((Bundle { manifest, evidence }, reader.parsed))
}

/// The manifest within the caps, and naming nothing twice: before any entry is parsed, so
/// that the work is bounded by the caps whatever the manifest says (each duplicate would be
/// parsed again, with its own copy of the document).
fn bounded(m: &Manifest, caps: Caps) -> std::result::Result<(), String> {
    let over = |what: String, cap: usize| {
        format!("{MANIFEST} lists {what}, more than the {cap} a bundle may hold")
    };
    if m.clusters.len() > caps.clusters {
        return Err(over(
            format!("{} clusters", m.clusters.len()),
            caps.clusters,
        ));
    }
    let mut clusters = HashSet::new();
    for c in &m.clusters {
        let which = format!("{}/{}", c.namespace, c.cluster);
        if !clusters.insert((c.namespace.as_str(), c.cluster.as_str())) {
            return Err(format!("{MANIFEST} lists cluster {which:?} twice"));
        }
        if c.nodes.len() > caps.nodes {
            return Err(over(
                format!("{} nodes for cluster {which:?}", c.nodes.len()),
                caps.nodes,
            ));
        }
        if c.objects.len() > caps.objects {
            return Err(over(
                format!("{} objects for cluster {which:?}", c.objects.len()),
                caps.objects,
            ));
        }
        let mut nodes = HashSet::new();
        for n in &c.nodes {
            if !nodes.insert(n.name.as_str()) {
                return Err(format!(
                    "{MANIFEST} lists node {:?} of cluster {which:?} twice",
                    n.name
                ));
            }
        }
    }
    Ok(())
}

/// Reads the entries the manifest names, each at most once: a second read of the same entry
/// (two clusters, nodes or objects naming one file) is refused, naming it.
struct Reader<'a> {
    files: &'a BTreeMap<String, Vec<u8>>,
    taken: HashSet<String>,
    /// Bytes handed to a parser so far.
    parsed: u64,
}

impl<'a> Reader<'a> {
    /// The file `rel` of the cluster folder `dir`, and its full name.
    fn take(&mut self, dir: &str, rel: &str) -> std::result::Result<(String, &'a [u8]), String> {
        let name = normalise(&format!("{dir}/{rel}"))
            .map_err(|why| format!("{MANIFEST}: {dir:?}/{rel:?}: {why}"))?;
        let Some(bytes) = self.files.get(&name) else {
            return Err(format!("{name} is missing ({MANIFEST} lists it)"));
        };
        if !self.taken.insert(name.clone()) {
            return Err(format!(
                "{MANIFEST} names entry {name:?} twice: each entry is read once"
            ));
        }
        self.parsed += bytes.len() as u64;
        Ok((name, bytes.as_slice()))
    }

    /// The file `rel` of the cluster folder `dir`, as JSON of a `T`.
    fn json<T: DeserializeOwned>(
        &mut self,
        dir: &str,
        rel: &str,
    ) -> std::result::Result<T, String> {
        self.take(dir, rel)
            .and_then(|(name, bytes)| json(&name, bytes))
    }
}

/// One cluster's evidence from its files.
fn cluster(r: &mut Reader<'_>, c: &ClusterEntry) -> std::result::Result<Evidence, String> {
    let dir = c.dir.as_str();
    let apis: SupervisorApis = r.json(dir, "discovery.json")?;
    let objects = c
        .objects
        .iter()
        .map(|rel| r.json(dir, rel))
        .collect::<std::result::Result<Vec<Value>, _>>()?;
    let workload_api: WorkloadApi = r.json(dir, "workload-api.json")?;
    let route: RouteInfo = r.json(dir, "route.json")?;
    // The names each node answers to, as the live run checked them (Machine's nodeRef, name).
    let facts = Inventory::from_objects(&c.namespace, apis.clone(), &objects)
        .facts(&c.context, &c.cluster)
        .ok();
    // By name, the first node of a name as a search would find it: O(1) per node.
    let mut node_names: HashMap<&str, Option<&str>> = HashMap::new();
    for x in facts.iter().flat_map(|f| &f.nodes) {
        let node_name = x.machine.as_ref().and_then(|m| m.node_name.as_deref());
        node_names.entry(x.name.as_str()).or_insert(node_name);
    }
    let mut nodes = Vec::new();
    for n in &c.nodes {
        let reach: NodeReach = r.json(dir, &format!("{}/reach.json", n.dir))?;
        let outcome = match reach.error {
            Some(e) => Err(e),
            None => {
                let (name, doc) = r.take(dir, &format!("{}/probe.json", n.dir))?;
                let node_name = node_names
                    .get(n.name.as_str())
                    .copied()
                    .flatten()
                    .unwrap_or(&n.name);
                reread(&n.name, node_name, reach.ip, doc).map_err(|e| format!("{name}: {e}"))?
            }
        };
        nodes.push(NodeReport {
            name: n.name.clone(),
            ip: reach.ip,
            outcome,
            reach: reach.reach,
            host_key: reach.host_key,
        });
    }
    Ok(Evidence {
        context: c.context.clone(),
        namespace: c.namespace.clone(),
        cluster: c.cluster.clone(),
        apis,
        objects,
        workload_api,
        route,
        nodes,
        duration_ms: c.duration_ms,
        since_s: c.since_s,
    })
}

fn default_since_s() -> u64 {
    crate::analyse::verdict::DEFAULT_SINCE.as_secs()
}

/// A node's stored document read as a live run reads one: this plugin's parser (a document it
/// cannot read is the node's `BadOutput`, as it would be live), then the identity check.
type Outcome = std::result::Result<crate::probe::ProbeOutput, ReachError>;

fn reread(
    name: &str,
    node_name: &str,
    ip: Option<IpAddr>,
    doc: &[u8],
) -> std::result::Result<Outcome, &'static str> {
    let ip = ip.ok_or("a probe document for a node without an IP")?;
    let parsed = crate::probe::parse::parse(name, doc).map_err(|e| ReachError {
        kind: ReachErrorKind::BadOutput,
        message: format!("{e} (read again from the bundle)"),
    });
    Ok(identity::confirm(parsed, ip, &[node_name, name]))
}

fn json<T: DeserializeOwned>(name: &str, bytes: &[u8]) -> std::result::Result<T, String> {
    serde_json::from_slice(bytes)
        .map_err(|e| format!("{name}: not what this file should hold: {e}"))
}

#[cfg(test)]
mod bounds_tests;

#[cfg(test)]
mod tests;
