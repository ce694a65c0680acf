//! Reading a bundle: in memory, never extracted, within [`Caps`]; every refusal is one line
//! naming the file, the entry and what is wrong.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Read};
use std::net::IpAddr;
use std::path::Path;
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    Bundle, Caps, ClusterEntry, Manifest, NodeReach, CAPS, FORMAT_VERSION, KIND, MANIFEST,
};
use crate::error::{Error, Result};
use crate::probe::{identity, NodeReport, ReachError, ReachErrorKind};
use crate::report::{Evidence, ReadNotes, RouteInfo};
use crate::supervisor::{Inventory, SupervisorApis};
use crate::workload::WorkloadApi;

/// Reads the bundle at `path`: in memory, each node's document parsed again with this plugin's
/// parser and checked to be the node's, as a live run does. Any problem with the file is one
/// configuration error (exit 2) naming the file, the entry and what is wrong.
pub(crate) fn read(path: &Path) -> Result<Bundle> {
    let bad = |why: String| Error::config(format!("bundle {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| {
        bad(format!(
            "cannot open: {} (give the .tar.gz that diagnose --bundle wrote)",
            crate::error::io_words(&e)
        ))
    })?;
    let entries = entries(io::BufReader::new(file), CAPS).map_err(bad)?;
    from_entries(&entries, CAPS).map_err(bad)
}

/// The regular files of a .tar.gz read from `source`, by normalised path. Every refusal is one
/// line naming the entry (tar's and gzip's own words may quote the archive's bytes: control
/// characters among them are escaped).
pub(super) fn entries(
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
pub(super) fn normalise(path: &str) -> std::result::Result<String, &'static str> {
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
pub(super) fn from_entries(
    files: &BTreeMap<String, Vec<u8>>,
    caps: Caps,
) -> std::result::Result<Bundle, String> {
    read_entries(files, caps).map(|(bundle, _)| bundle)
}

/// [`from_entries`], and how many bytes of entries were parsed (each at most once).
pub(super) fn read_entries(
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
        .map(|c| cluster(&mut reader, c, &manifest.created))
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

    /// Whether the bundle holds the file `rel` of the cluster folder `dir`.
    fn has(&self, dir: &str, rel: &str) -> bool {
        normalise(&format!("{dir}/{rel}")).is_ok_and(|name| self.files.contains_key(&name))
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
/// `created`: the manifest's, the time of the run for a bundle from before `readAt`.
fn cluster(
    r: &mut Reader<'_>,
    c: &ClusterEntry,
    created: &str,
) -> std::result::Result<Evidence, String> {
    let dir = c.dir.as_str();
    names(c)?;
    let apis: SupervisorApis = r.json(dir, "discovery.json")?;
    let objects = c
        .objects
        .iter()
        .map(|rel| {
            let o: Value = r.json(dir, rel)?;
            object_names(&o).map_err(|why| format!("{dir}/{rel}: {why}"))?;
            Ok(o)
        })
        .collect::<std::result::Result<Vec<Value>, String>>()?;
    let objects_len = objects.len();
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
                // `probe.out` (framed sections, format 2) since the probe printed them; a bundle
                // written before holds `probe.json` (a document of format 1). The one parser
                // reads both, so an old bundle is judged by this version's rules.
                let out = format!("{}/probe.out", n.dir);
                let rel = if r.has(dir, &out) {
                    out
                } else {
                    format!("{}/probe.json", n.dir)
                };
                let (name, doc) = r.take(dir, &rel)?;
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
            reach_from: reach.reach_from,
            reach: reach.reach,
            host_key: reach.host_key,
        });
    }
    let nsx_manager = match &c.nsx_manager {
        Some(rel) => {
            // Anyone's file: cut to a live reading's caps before it is judged, so that its
            // evaluation is bounded as a live run's is (docs/security.md, "Bundle bounds").
            let mut read: crate::nsxmanager::raw::NsxRead = r.json(dir, rel)?;
            crate::nsxmanager::bound::rebound(
                &mut read,
                &crate::nsxmanager::client::Limits::new(std::time::Duration::from_secs(60)),
            );
            Some(read)
        }
        None => None,
    };
    Ok(Evidence {
        nsx_manager,
        // Anyone's file: bounded as the note the plugin writes.
        nsx_note: c.nsx_note.as_ref().map(|n| n.chars().take(256).collect()),
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
        notes: ReadNotes {
            network_unread: c.notes.network_unread.clone(),
            // Anyone's file: bounded as the reader of the Supervisor bounds it.
            remediation_unread: c
                .notes
                .remediation_unread
                .as_ref()
                .map(|n| n.chars().take(256).collect()),
            // Anyone's file: a few entries, each field bounded; only the kind decides anything
            // (which join a re-judged bundle makes), and only a kind the table names.
            forbidden: c
                .notes
                .forbidden
                .iter()
                .take(crate::supervisor::kinds::KINDS.len())
                .map(|p| {
                    let cut = |s: &str| s.chars().take(253).collect::<String>();
                    crate::supervisor::MissingPermission {
                        kind: cut(&p.kind),
                        verb: cut(&p.verb),
                        group: cut(&p.group),
                        resource: cut(&p.resource),
                        namespace: p.namespace.as_deref().map(cut),
                    }
                })
                .collect(),
            read_at: c
                .notes
                .read_at
                .clone()
                .or_else(|| Some(created.to_string())),
        },
        // Everything a bundle holds is what `analyse` judges from.
        essential_objects: objects_len,
        // The manifest is anyone's file: its notes bounded as the writer bounds them.
        left_out: c
            .left_out
            .iter()
            .take(super::MAX_LEFT_OUT_NAMED + 1)
            .map(|n| n.chars().take(super::MAX_LEFT_OUT_CHARS).collect())
            .collect(),
    })
}

/// The cluster's namespace and name as a live run takes them (`-n`, the cluster argument:
/// `names`), before anything else of it is read: each goes into the commands the report
/// prints, so a name no live run could have (`$(…)`, `;`, `--server=…`) refuses the bundle.
fn names(c: &ClusterEntry) -> std::result::Result<(), String> {
    crate::names::validate_dns1123_label(&c.namespace).map_err(|why| {
        format!(
            "{MANIFEST}: namespace {:?} is not a valid name: {why}",
            c.namespace
        )
    })?;
    crate::names::validate_dns1123_subdomain(&c.cluster).map_err(|why| {
        format!(
            "{MANIFEST}: cluster {:?} is not a valid name: {why}",
            c.cluster
        )
    })?;
    Ok(())
}

/// An object's name and namespace as the API server accepts them (`metadata.name` a DNS-1123
/// subdomain, `metadata.namespace` a label): a live Supervisor never serves another, and the
/// names go into the commands the report prints (a policy's, the KCP's).
fn object_names(o: &Value) -> std::result::Result<(), String> {
    let name = o.pointer("/metadata/name").and_then(Value::as_str);
    match name {
        Some(n) if crate::names::is_object_name(n) => {}
        _ => {
            return Err(format!(
                "metadata.name {:?} is not a name the API server accepts",
                name.unwrap_or_default()
                    .chars()
                    .take(64)
                    .collect::<String>()
            ))
        }
    }
    match o.pointer("/metadata/namespace") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(ns)) if crate::names::validate_dns1123_label(ns).is_ok() => Ok(()),
        Some(ns) => Err(format!(
            "metadata.namespace {} is not a name the API server accepts",
            ns.to_string().chars().take(64).collect::<String>()
        )),
    }
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
