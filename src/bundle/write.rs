//! Writing a bundle: every file made in memory from the evidence, then one .tar.gz written
//! beside the target and renamed onto it, so an error or a signal never leaves a partial bundle.

use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use super::{
    component, ClusterEntry, Manifest, Names, NodeEntry, NodeReach, CAPS, FORMAT_VERSION, KIND,
    MANIFEST, MAX_EXTRA_OBJECTS, MAX_LEFT_OUT_CHARS, MAX_LEFT_OUT_NAMED,
};
use crate::error::{Error, Result};
use crate::report::{Evidence, API_VERSION};

/// Checks that a bundle can be written at `path`.
///
/// Checked before a run, so that a bundle that cannot be written is known before minutes of
/// diagnosis (exit 2, nothing contacted): its folder must exist, and the path must not be one.
pub(crate) fn check_target(path: &Path) -> Result<()> {
    check_writable("bundle", path)
}

/// Checks that a file of ours (`what`: bundle, report) can be written at `path`: its folder
/// exists and the path is not a folder. A usage error (exit 2) naming `what` and the path.
pub(crate) fn check_writable(what: &str, path: &Path) -> Result<()> {
    let cannot = |why: &str| Error::Usage(format!("cannot write {what} {}: {why}", path.display()));
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

/// Writes `evidence` (one per cluster) to `path` as a .tar.gz, atomically.
pub(crate) fn write(path: &Path, evidence: &[Evidence]) -> Result<()> {
    // `args_os`: `args` panics on an argument that is not UTF-8 (a path can be anything).
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let files = files(evidence, args)?;
    write_atomically("bundle", "--bundle", path, |file| {
        let why = |e: io::Error| e.to_string();
        let mtime = unix_seconds(SystemTime::now());
        let gz =
            flate2::write::GzEncoder::new(io::BufWriter::new(file), flate2::Compression::default());
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
                .map_err(why)?;
        }
        let gz = tar.into_inner().map_err(why)?;
        let mut buf = gz.finish().map_err(why)?;
        buf.flush().map_err(why)
    })
}

/// Writes a file of ours (`what`: bundle, report; given by `flag`) at `path` whole or not at
/// all: `fill` writes it into a temporary file beside `path` (so the rename is atomic; removed
/// if anything fails), which is synced, then renamed onto `path`. A file already there is
/// replaced; a new one is the owner's alone (0600, tempfile's mode), for the admin to pass on.
/// A configuration error naming `what` and the path.
pub(crate) fn write_atomically(
    what: &str,
    flag: &str,
    path: &Path,
    fill: impl FnOnce(&std::fs::File) -> std::result::Result<(), String>,
) -> Result<()> {
    let cannot =
        |why: String| Error::config(format!("cannot write {what} {}: {why}", path.display()));
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| what.into());
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| {
            cannot(format!(
                "cannot create a file in {}: {} ({flag} needs a folder that exists and can be written)",
                dir.display(),
                crate::error::io_words(&e)
            ))
        })?;
    fill(tmp.as_file()).map_err(cannot)?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| cannot(e.to_string()))?;
    tmp.persist(path).map_err(|e| cannot(e.error.to_string()))?;
    Ok(())
}

/// The most bytes every cluster's `nsx-manager.json` together may take: a quarter of the
/// bundle's total cap.
const MAX_NSX_TOTAL: usize = (CAPS.total / 4) as usize;
/// The room a cluster's `nsx-manager.json` gets however little of [`MAX_NSX_TOTAL`] is left
/// (its gaps, at least): 100 clusters of it are a few MiB.
const MIN_NSX_ENTRY: usize = 64 * 1024;

/// The bundle's files, in order (the manifest first), from `evidence` and the command line.
/// Nothing is written that [`read`] would refuse: more clusters or nodes than [`CAPS`] allow is
/// an error, and a cluster's objects past its caps are left out, the ones the verdict does not
/// use first, each one noted in the manifest ([`keep`]).
pub(super) fn files(evidence: &[Evidence], args: Vec<String>) -> Result<Vec<(String, Vec<u8>)>> {
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
    // NSX Manager's readings: each within the per-entry cap, all of them within a quarter of
    // the bundle's total (the nodes' documents and logs keep the rest), so that `analyse`
    // accepts the plugin's own bundle however much each cluster read.
    let mut nsx_left = MAX_NSX_TOTAL;
    let mut dirs = Names::default();
    for e in evidence {
        // For people who open the bundle: its commands carry the context the run used, as an
        // `analyse` of it without `--context` prints them.
        let report = e.judge(&crate::command::Kubectl::new(Some(&e.context), None))?;
        let ns = component(&e.namespace);
        let dir = format!("{ns}/{}", dirs.unique(&ns, &component(&e.cluster)));
        let mut put = |rel: &str, bytes: Vec<u8>| out.push((format!("{dir}/{rel}"), bytes));
        put("report.json", pretty(&report)?);
        put("discovery.json", pretty(&e.apis)?);
        put("workload-api.json", pretty(&e.workload_api)?);
        put("route.json", pretty(&e.route)?);
        let mut taken = Names::default();
        let mut objects = Vec::new();
        let (kept, left_out) = keep(e);
        for o in kept {
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
                // As the node printed it (framed sections; a document of format 1 from an older
                // probe); a document made in code (tests) as format 1's JSON.
                let doc = match probe.raw.as_str() {
                    Some(raw) => raw.as_bytes().to_vec(),
                    None => pretty(probe)?,
                };
                put(&format!("{rel}/probe.out"), doc);
                if let Some(logs) = &probe.etcd.logs {
                    put(&format!("{rel}/etcd.log"), logs.text.clone().into_bytes());
                }
            }
            let reach = NodeReach {
                name: n.name.clone(),
                ip: n.ip,
                error: n.outcome.as_ref().err().cloned(),
                reach: n.reach.clone(),
                reach_from: n.reach_from,
                host_key: n.host_key.clone(),
            };
            put(&format!("{rel}/reach.json"), pretty(&reach)?);
            nodes.push(NodeEntry {
                name: n.name.clone(),
                dir: rel,
            });
        }
        let nsx_manager = match &e.nsx_manager {
            Some(read) => {
                let max = (CAPS.entry as usize).min(nsx_left).max(MIN_NSX_ENTRY);
                let bytes = crate::nsxmanager::bound::fit(read, max).ok_or_else(|| {
                    Error::config(
                        "NSX Manager's reading cannot be written within the bundle's caps",
                    )
                })?;
                nsx_left = nsx_left.saturating_sub(bytes.len());
                put("nsx-manager.json", bytes);
                Some("nsx-manager.json".to_string())
            }
            None => None,
        };
        clusters.push(ClusterEntry {
            context: e.context.clone(),
            namespace: e.namespace.clone(),
            cluster: e.cluster.clone(),
            dir,
            duration_ms: e.duration_ms,
            since_s: e.since_s,
            verdict: Some(report.verdict.code.to_string()),
            objects,
            left_out,
            nodes,
            notes: e.notes.clone(),
            nsx_manager,
            nsx_note: e.nsx_note.clone(),
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

/// The objects a cluster's bundle keeps, and a note of those it leaves out: every object the
/// verdict uses first ([`Evidence::essential_objects`], all of them unless past
/// [`CAPS`]`.objects`), then at most [`MAX_EXTRA_OBJECTS`] of the others. Each one left out is
/// named (at most [`MAX_LEFT_OUT_NAMED`], then a count), so that `analyse` can say its verdict
/// may differ instead of differing silently.
pub(super) fn keep(e: &Evidence) -> (Vec<&Value>, Vec<String>) {
    let essential = e.essential_objects.min(e.objects.len());
    let (used, extra) = e.objects.split_at(essential);
    let used_kept = used.len().min(CAPS.objects);
    let extra_kept = extra
        .len()
        .min(MAX_EXTRA_OBJECTS)
        .min(CAPS.objects - used_kept);
    let kept = used[..used_kept]
        .iter()
        .chain(&extra[..extra_kept])
        .collect();
    let left: Vec<(bool, &Value)> = used[used_kept..]
        .iter()
        .map(|o| (true, o))
        .chain(extra[extra_kept..].iter().map(|o| (false, o)))
        .collect();
    let mut notes: Vec<String> = left
        .iter()
        .take(MAX_LEFT_OUT_NAMED)
        .map(|(used, o)| {
            let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("?");
            let line = format!(
                "{} {}/{} ({})",
                text("/kind"),
                text("/metadata/namespace"),
                text("/metadata/name"),
                if *used {
                    "the verdict used it"
                } else {
                    "only counted"
                }
            );
            line.chars().take(MAX_LEFT_OUT_CHARS).collect()
        })
        .collect();
    if left.len() > MAX_LEFT_OUT_NAMED {
        notes.push(format!("and {} more", left.len() - MAX_LEFT_OUT_NAMED));
    }
    (kept, notes)
}

pub(super) fn pretty<T: Serialize>(value: &T) -> Result<Vec<u8>> {
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
