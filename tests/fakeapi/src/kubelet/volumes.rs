//! The secret volumes of a vSphere Pod, as the kubelet's secret plugin sets them up: each
//! `secret` volume's data, read from the fake's own Secret in the pod's namespace, written in
//! the kubelet's layout (`etcdnet_lab::write_secret_volume`: `..data` symlinks, `items` key ->
//! path, `mode` / `defaultMode`) into a private host directory that is bind-mounted read-only at
//! the first container's `mountPath` and removed when the pod ends or is deleted.
//!
//! A secret (or a key named in `items`) that does not exist fails MountVolume.SetUp: the pod
//! stays Pending, `ContainerCreating`, with a `FailedMount` Event, and no process, while the
//! kubelet retries; it starts once the secret appears, or fails at `activeDeadlineSeconds`.
//!
//! The pod's security context is applied as a runtime does ([`security`]): the user and groups
//! the command runs as, a read-only root filesystem, `emptyDir` volumes (empty writable tmpfs).
//! `fsGroup` is NOT applied: a vSphere Pod is run by spherelet on an ESXi host, not by a
//! kubelet, and what spherelet does with `fsGroup` is not documented, so this runtime does the
//! least it may: the secret's files stay root's, with the spec's modes, and the pod's user gets
//! no extra group. (A kubelet would give them to the group, `g+r`: `SetVolumeOwnership` in
//! kubernetes `pkg/volume/volume_linux.go`; the lab kubelet's node-pinned pods mount no secret
//! volumes, so nothing here models that.) A pod that reads its key only through `fsGroup` thus
//! fails here as it may on a real Supervisor.
//!
//! Limits: only `secret` and `emptyDir` volumes are mounted (others are ignored), `subPath` is
//! ignored, and item paths must be plain file names (no subdirectories).

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use super::run::{Ctx, Wake};
use super::{Kubelet, SecretVolume};

/// How often a failed mount is retried (the kubelet backs off from 0.5 s; a fixed short period
/// keeps tests fast when a secret is created late).
const RETRY: Duration = Duration::from_millis(500);
/// A secret volume's `defaultMode` when the spec has none (0644).
const DEFAULT_MODE: u32 = 0o644;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The written volumes of one pod; dropping it removes them from the host.
pub(crate) struct Mounted {
    /// (host directory, container path)
    dirs: Vec<(PathBuf, String)>,
}

impl Mounted {
    pub(crate) fn none() -> Mounted {
        Mounted { dirs: Vec::new() }
    }

    /// The `(host, container)` pairs for `Lab::jumpbox_pod_command_named`: each volume's
    /// directory inside its private one.
    pub(crate) fn mounts(&self) -> Vec<(PathBuf, String)> {
        self.dirs
            .iter()
            .map(|(dir, at)| (dir.join(VOLUME), at.clone()))
            .collect()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for (dir, _) in &self.dirs {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// The volume's own directory inside its private (0700) host directory: what the pod sees
/// mounted. It is 0755, so that the pod's user, whoever it is, reaches the files, whose modes
/// are the spec's. A kubelet's secret volume is a tmpfs (a memory `emptyDir`, mounted without a
/// mode: tmpfs's 1777) whose timestamped data directory it makes 0755 "to allow 'group' and
/// 'other' to recurse the directory tree" (kubernetes `pkg/volume/util/atomic_writer.go`,
/// `newTimestampDir`); a runtime that let no non-root pod read any secret volume would break
/// every such pod's service-account token, so this much any runtime does. The private parent
/// keeps the host's other users out.
const VOLUME: &str = "volume";

/// One secret volume to write: its name, where it is mounted (None: the first container does
/// not mount it) and the files (relative path, bytes, mode).
struct Plan {
    volume: String,
    mount_path: Option<String>,
    files: Vec<(String, Vec<u8>, u32)>,
}

/// Sets up the pod's secret volumes, retrying a failed mount until it succeeds; None when the
/// pod was deleted, the fake stops, or the deadline passed (then the pod is Failed).
pub(crate) fn mount(k: &Kubelet, ctx: &Ctx, pod: &Value) -> Option<Mounted> {
    let mut reported = String::new();
    loop {
        let failure = match plan(ctx, pod) {
            Ok(plans) => match write(k, ctx, plans) {
                Ok(m) => return Some(m),
                Err(e) => e,
            },
            Err(e) => e,
        };
        // One Event per distinct failure (a kubelet repeats it with a count; one is enough to
        // see why the pod waits).
        if failure != reported {
            ctx.event("Warning", "FailedMount", &failure);
            reported = failure;
        }
        match ctx.sleep(RETRY) {
            Wake::Timeout => {}
            Wake::Stop => return None,
            Wake::Deadline => {
                ctx.deadline_exceeded(None, None);
                return None;
            }
        }
    }
}

fn mode(v: &Value) -> Option<u32> {
    v.as_u64().map(|m| (m & 0o777) as u32)
}

/// Reads every secret volume's data from the store; Err is the kubelet's FailedMount message.
fn plan(ctx: &Ctx, pod: &Value) -> Result<Vec<Plan>, String> {
    let mounts = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let st = ctx.shared.store.lock().unwrap();
    let def = st.registry.lookup("", "v1", "secrets");
    let mut plans = Vec::new();
    for vol in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let src = &vol["secret"];
        if !src.is_object() {
            continue;
        }
        let name = vol["name"].as_str().unwrap_or("").to_string();
        let fail = |why: String| format!("MountVolume.SetUp failed for volume \"{name}\" : {why}");
        let secret_name = src["secretName"].as_str().unwrap_or("");
        let optional = src["optional"].as_bool() == Some(true);
        let default_mode = mode(&src["defaultMode"]).unwrap_or(DEFAULT_MODE);
        let secret = def.as_ref().and_then(|d| st.get(d, &ctx.ns, secret_name));
        let data: Vec<(String, Vec<u8>)> = match secret {
            Some(s) => s["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(v.as_str().unwrap_or(""))
                        .unwrap_or_default();
                    (k.clone(), bytes)
                })
                .collect(),
            None if optional => Vec::new(),
            None => return Err(fail(format!("secret \"{secret_name}\" not found"))),
        };
        let files = match src["items"].as_array() {
            None => data
                .into_iter()
                .map(|(k, b)| (k, b, default_mode))
                .collect(),
            Some(items) => {
                let mut files = Vec::new();
                for item in items {
                    let key = item["key"].as_str().unwrap_or("");
                    let path = item["path"].as_str().unwrap_or(key);
                    match data.iter().find(|(k, _)| k == key) {
                        Some((_, b)) => files.push((
                            path.to_string(),
                            b.clone(),
                            mode(&item["mode"]).unwrap_or(default_mode),
                        )),
                        None if optional => {}
                        None => {
                            return Err(fail(format!("references non-existent secret key: {key}")))
                        }
                    }
                }
                files
            }
        };
        let mount_path = mounts
            .iter()
            .find(|m| m["name"].as_str() == Some(name.as_str()))
            .and_then(|m| m["mountPath"].as_str())
            .map(str::to_string);
        plans.push(Plan {
            volume: name,
            mount_path,
            files,
        });
    }
    Ok(plans)
}

/// A new private (0700) directory in the host's temp dir.
fn private_dir() -> std::io::Result<PathBuf> {
    loop {
        let dir = std::env::temp_dir().join(format!(
            "etcdnet-fakeapi-secret-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            other => return other.map(|()| dir),
        }
    }
}

/// Writes the mounted volumes; Err is a FailedMount message (nothing of the data in it).
fn write(k: &Kubelet, ctx: &Ctx, plans: Vec<Plan>) -> Result<Mounted, String> {
    let mut mounted = Mounted::none();
    for p in plans {
        let Some(mount_path) = p.mount_path else {
            continue;
        };
        let fail = |why: String| {
            format!(
                "MountVolume.SetUp failed for volume \"{}\" : {why}",
                p.volume
            )
        };
        let parent =
            private_dir().map_err(|e| fail(format!("creating a volume directory: {e}")))?;
        // Registered before writing, so the guard removes a half-written directory too.
        mounted.dirs.push((parent.clone(), mount_path.clone()));
        let dir = parent.join(VOLUME);
        fs::create_dir(&dir)
            .and_then(|()| fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)))
            .map_err(|e| fail(format!("creating a volume directory: {e}")))?;
        // write_secret_volume takes one mode; per-item modes are set afterwards (through the
        // key's symlink, onto the file in the timestamped directory).
        let files: Vec<(&str, &[u8])> = p
            .files
            .iter()
            .map(|(path, b, _)| (path.as_str(), b.as_slice()))
            .collect();
        etcdnet_lab::write_secret_volume(&dir, &files, DEFAULT_MODE)
            .map_err(|e| fail(format!("{e:#}")))?;
        for (path, _, m) in &p.files {
            fs::set_permissions(dir.join(path), fs::Permissions::from_mode(*m))
                .map_err(|e| fail(format!("chmod {path}: {e}")))?;
        }
        k.record_volume(SecretVolume {
            namespace: ctx.ns.clone(),
            pod: ctx.name.clone(),
            volume: p.volume.clone(),
            mount_path,
            dir,
        });
    }
    Ok(mounted)
}

/// The container's user, groups, read-only root and emptyDir volumes, as the runtime applies
/// them (container settings over the pod's).
pub(crate) fn security(pod: &Value) -> etcdnet_lab::PodSecurity {
    let spec = &pod["spec"];
    let container = &spec["containers"][0];
    let pick = |key: &str| {
        container["securityContext"][key]
            .as_u64()
            .or_else(|| spec["securityContext"][key].as_u64())
            .and_then(|v| u32::try_from(v).ok())
    };
    // No fsGroup among them (see the module docs).
    let groups: Vec<u32> = spec["securityContext"]["supplementalGroups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_u64().and_then(|g| u32::try_from(g).ok()))
        .collect();
    let empty: Vec<&str> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["emptyDir"].is_object())
        .filter_map(|v| v["name"].as_str())
        .collect();
    let empty_dirs = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["name"].as_str().is_some_and(|n| empty.contains(&n)))
        .filter_map(|m| m["mountPath"].as_str().map(str::to_string))
        .collect();
    etcdnet_lab::PodSecurity {
        uid: pick("runAsUser"),
        gid: pick("runAsGroup"),
        groups,
        read_only_root: container["securityContext"]["readOnlyRootFilesystem"].as_bool()
            == Some(true),
        empty_dirs,
    }
}
