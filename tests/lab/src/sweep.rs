//! Lab identity and the sweeper of labs whose owner died without tearing down.
//!
//! A lab's id is `en<pid>-<n>` (owner pid, per-process counter); its namespaces are `<id>-sw`
//! and `<id>-<node>`. Before creating anything, a lab writes a record
//! `/run/etcdnet-lab/<id>.json` with its owner's pid *and start time* (so a later process that
//! got the same pid is not mistaken for the owner) and its directory. The sweeper removes every
//! lab whose owner is gone: the processes inside its namespaces, the namespaces, the directory,
//! the record. Labs of live processes (other test binaries running right now) are left alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::net;

const REGISTRY: &str = "/run/etcdnet-lab";

/// Prefix of every lab id (and so of every namespace a lab creates).
pub const PREFIX: &str = "en";

static COUNTER: AtomicU32 = AtomicU32::new(0);

#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Record {
    pub id: String,
    pub owner_pid: u32,
    pub owner_start: u64,
    pub dir: PathBuf,
}

/// A fresh id for a lab of this process.
pub(crate) fn new_id() -> String {
    format!(
        "{PREFIX}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// The start time (clock ticks since boot) of a live process, from /proc/<pid>/stat field 22.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn record_path(id: &str) -> PathBuf {
    Path::new(REGISTRY).join(format!("{id}.json"))
}

pub(crate) fn register(record: &Record) -> Result<()> {
    fs::create_dir_all(REGISTRY).with_context(|| format!("creating {REGISTRY}"))?;
    let path = record_path(&record.id);
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, serde_json::to_vec_pretty(record)?)?;
    fs::rename(&tmp, &path)?;
    Ok(())
}

pub(crate) fn unregister(id: &str) {
    let _ = fs::remove_file(record_path(id));
}

/// Every recorded lab on this machine.
pub(crate) fn records() -> Vec<Record> {
    let Ok(dir) = fs::read_dir(REGISTRY) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&fs::read(e.path()).ok()?).ok())
        .collect()
}

pub(crate) fn owner_alive(r: &Record) -> bool {
    start_time(r.owner_pid) == Some(r.owner_start)
}

/// The id part of a namespace name `en<pid>-<n>-<suffix>`, with the owner pid.
fn parse_netns(name: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let pid: u32 = parts.next()?.parse().ok()?;
    let n: u32 = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((format!("{PREFIX}{pid}-{n}"), pid))
}

/// Removes what is left of lab `id`: processes in its namespaces, the namespaces, `dir`.
pub(crate) fn destroy(id: &str, dir: Option<&Path>) -> Vec<String> {
    let mut errors = Vec::new();
    let prefix = format!("{id}-");
    for ns in net::list_netns()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
    {
        if let Err(e) = net::destroy_netns(&ns) {
            errors.push(format!("{e:#}"));
        }
    }
    kill_marked(id);
    if let Some(dir) = dir {
        if dir.exists() {
            if let Err(e) = fs::remove_dir_all(dir) {
                errors.push(format!("removing {}: {e}", dir.display()));
            }
        }
    }
    unregister(id);
    errors
}

/// Kills any etcd or sshd of lab `id` still alive outside its namespaces (found by the marker in
/// its environment), e.g. when the namespace was already deleted.
fn kill_marked(id: &str) {
    let needle = format!("ETCDNET_LAB_MEMBER={id}/");
    let daemon = crate::daemon::marker_prefix(id);
    let Ok(procs) = fs::read_dir("/proc") else {
        return;
    };
    for p in procs.filter_map(|e| e.ok()) {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = fs::read(p.path().join("environ")) else {
            continue;
        };
        if env
            .split(|b| *b == 0)
            .any(|v| v.starts_with(needle.as_bytes()) || v.starts_with(daemon.as_bytes()))
        {
            // SAFETY: kill(2) on a process that carries our lab's marker.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Removes every lab whose owning process is gone; returns their ids.
pub fn sweep_stale() -> Result<Vec<String>> {
    let me = std::process::id();
    let mut swept = Vec::new();
    let records = records();
    for r in &records {
        if owner_alive(r) {
            continue;
        }
        for e in destroy(&r.id, Some(&r.dir)) {
            eprintln!("etcdnet-lab sweep: {e}");
        }
        swept.push(r.id.clone());
    }
    // Namespaces without a live record: the record is written before any namespace, so these are
    // left from a teardown that was killed half-way (record already removed).
    for ns in net::list_netns() {
        let Some((id, pid)) = parse_netns(&ns) else {
            continue;
        };
        if swept.contains(&id) || records.iter().any(|r| r.id == id && owner_alive(r)) {
            continue;
        }
        // Without a record, a live owner pid might be a recycled one; only our own labs always
        // have a record, so a record-less namespace of our own pid is stale for sure.
        let owner_gone = pid == me || start_time(pid).is_none();
        if owner_gone {
            let default_dir = std::env::temp_dir().join("etcdnet-lab").join(&id);
            for e in destroy(&id, Some(&default_dir)) {
                eprintln!("etcdnet-lab sweep: {e}");
            }
            swept.push(id);
        }
    }
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netns_names_parse() {
        assert_eq!(parse_netns("en123-4-cp1"), Some(("en123-4".into(), 123)));
        assert_eq!(parse_netns("en123-4-sw"), Some(("en123-4".into(), 123)));
        assert_eq!(parse_netns("en123-cp1"), None);
        assert_eq!(parse_netns("other"), None);
    }

    #[test]
    fn own_start_time_is_known() {
        assert!(start_time(std::process::id()).is_some());
    }
}
