//! Traceflow (`--nsx-traceflow`): for a few (source VM's port, peer IP, port) classes, a TCP SYN
//! injected at the port, its state polled, its observations read, and every traceflow deleted
//! on every exit path — success, error, the deadline ([`run_and_delete`]), and Ctrl-C: the
//! caller's [`TraceflowTracker`] outlives the work a signal drops and deletes what it still
//! holds, as the probe pods' tracker does (`route::lifecycle::tracker`).
//!
//! Paths and shapes checked: vmware/vsphere-automation-sdk-go
//! `services/nsxt/infra/TraceflowsTypes.go` (`PUT`/`PATCH`/`GET`/`DELETE
//! /policy/api/v1/infra/traceflows/{traceflowId}`, body `TraceflowConfig`),
//! `services/nsxt/infra/traceflows/StatusTypes.go` (`GET …/{traceflowId}/status`, a `Traceflow`
//! with `operation_state`), `…/ObservationsTypes.go` (`GET …/{traceflowId}/observations`, a
//! `TraceflowObservationListResult`), and the same three under
//! `services/nsxt/orgs/projects/infra/` (`/orgs/{org}/projects/{project}/infra/traceflows/…`, a
//! project's); the NSX API reference's `UpdateTraceflowConfig` (`PUT`, its example body:
//! `segment_port_path`, `packet` a `FieldsPacketData` with `ip_header {dst_ip, protocol, ttl}`,
//! `transport_header`, `transport_type: UNICAST`), `ReadTraceflowStatus` (its example answer:
//! `operation_state: FINISHED`, `request_status: SUCCESS`, `counters`) and `TraceflowConfig`
//! (`is_transient`: "cleaned
//! up by the system after two hours of inactivity if is_transient is true"); `TcpHeader`
//! (`src_port`, `dst_port`, `tcp_flags`).
//!
//! The ids are ours (`etcdnet-<16 hex>`, [`ID_PREFIX`]): a traceflow a run could not delete (the
//! manager gone at the end, the process killed) is found later by listing
//! `/policy/api/v1/infra/traceflows` (or the project's, [`traceflow_root`]) and keeping the ids
//! with that prefix ([`leftovers`]); and each is `is_transient`, so NSX itself removes it after
//! two idle hours.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::client::{ApiPath, Client, Privilege, RequestError, CLEANUP_BOUND};
use super::raw::{Gap, Layout, Listed, TraceflowRead};

/// The most traceflows one run creates (the caller picks the classes; more are refused).
pub const MAX_TRACEFLOWS: usize = 6;
/// Every id this plugin gives a traceflow starts with this.
pub const ID_PREFIX: &str = "etcdnet-";
/// Between two reads of the traceflows' states.
pub const POLL_INTERVAL: Duration = Duration::from_millis(1000);
/// The source port of the injected SYN (an ephemeral one, as a client's connect would use).
pub const SOURCE_PORT: u16 = 49152;

/// One traceflow to run: from a VM's port (its policy path, as read) to a peer's IP and port,
/// between two nodes (the names its read carries: what the evaluation and the report speak of).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceflowClass {
    /// The source and destination nodes.
    pub from: String,
    pub to: String,
    /// The source VM's segment (or VPC subnet) port, as a policy path.
    pub from_port: String,
    /// The peer's IP (v4 or v6), as the Supervisor shows it.
    pub to_ip: String,
    /// 2380 or 2379.
    pub port: u16,
}

/// The state a traceflow's `/status` reports (`operation_state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    InProgress,
    Finished,
    /// `FAILED`, with the manager's reason when it gave one.
    Failed(Option<String>),
    /// Absent or not one of these.
    Unknown,
}

/// `operation_state` of a traceflow's status.
pub fn state(status: &Value) -> State {
    match status.get("operation_state").and_then(Value::as_str) {
        Some("IN_PROGRESS") => State::InProgress,
        Some("FINISHED") => State::Finished,
        // The reason as the status says it: `request_status` (e.g. `TIMEOUT`), else a
        // `failure_reason` some versions give.
        Some("FAILED") => State::Failed(
            ["request_status", "failure_reason"]
                .iter()
                .filter_map(|k| status.get(*k).and_then(Value::as_str))
                .find(|r| *r != "SUCCESS")
                .map(|r| super::client::clean(r, super::client::MAX_MESSAGE_CHARS)),
        ),
        _ => State::Unknown,
    }
}

/// A new id of ours: [`ID_PREFIX`] and 64 random bits.
pub fn new_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    // The system's randomness failing is no reason to skip the traceflow: the time's nanos
    // still keep two runs apart.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        bytes = nanos.to_be_bytes();
    }
    format!("{ID_PREFIX}{:016x}", u64::from_be_bytes(bytes))
}

/// Where a layout's traceflows live: `/infra` (T1/NCP, and a VPC of the default project), a
/// project's own `infra` otherwise (a port of a project is traced from there).
pub fn traceflow_root(layout: &Layout) -> String {
    match layout {
        Layout::Vpc { org, project, .. } if project != "default" => {
            format!("/orgs/{org}/projects/{project}/infra")
        }
        _ => "/infra".to_string(),
    }
}

/// The traceflow's policy path under `root` ([`traceflow_root`]).
pub fn policy_path(root: &str, id: &str) -> String {
    format!("{root}/traceflows/{id}")
}

/// The `TraceflowConfig` body: a TCP SYN from the port to `to_ip:port`, transient.
pub fn config(class: &TraceflowClass, id: &str) -> Value {
    let tcp = json!({"tcp_header": {
        "src_port": SOURCE_PORT,
        "dst_port": class.port,
        // SYN alone: what a connect sends first, what a DFW rule matches.
        "tcp_flags": 2,
    }});
    let mut packet = json!({
        "resource_type": "FieldsPacketData",
        "transport_type": "UNICAST",
        "transport_header": tcp,
    });
    if class.to_ip.contains(':') {
        packet["ipv6_header"] = json!({"dst_ip": class.to_ip, "next_header": 6, "hop_limit": 64});
    } else {
        packet["ip_header"] = json!({"dst_ip": class.to_ip, "protocol": 6, "ttl": 64});
    }
    json!({
        "display_name": format!("kubectl-etcdnet {id}"),
        "segment_port_path": class.from_port,
        "packet": packet,
        "is_transient": true,
    })
}

/// Every traceflow a run has created (or may have: its PUT went out) and not yet deleted.
#[derive(Debug, Clone, Default)]
pub struct TraceflowTracker {
    ids: Arc<Mutex<BTreeSet<String>>>,
}

impl TraceflowTracker {
    /// Before the PUT goes out (its policy path): an answer lost on the way may still have
    /// created it.
    pub fn track(&self, id: &str) {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
    }

    /// The traceflows (policy paths) not yet deleted.
    pub fn pending(&self) -> Vec<String> {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    fn untrack(&self, id: &str) {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Deletes every tracked traceflow, all at once, each within [`CLEANUP_BOUND`] (whatever
    /// is left of the reading's deadline). A 404 is deleted (never made, or gone). Returns the
    /// ones that could not be deleted, with why; they stay tracked.
    pub async fn delete_all(&self, client: &Client) -> BTreeMap<String, String> {
        let ids = self.pending();
        let results = futures::future::join_all(ids.into_iter().map(|id| async move {
            let r = match ApiPath::policy(&id, &[]) {
                Ok(p) => match client.delete(&p, CLEANUP_BOUND).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.status() == Some(404) => Ok(()),
                    Err(e) => Err(e.to_string()),
                },
                Err(why) => Err(why),
            };
            (id, r)
        }))
        .await;
        let mut failed = BTreeMap::new();
        for (id, r) in results {
            match r {
                Ok(()) => self.untrack(&id),
                Err(why) => {
                    failed.insert(id, why);
                }
            }
        }
        failed
    }
}

/// Runs the traceflows of `classes` (at most [`MAX_TRACEFLOWS`]) within `within`, each tracked
/// in `tracker` from before its creation, then deletes every one and says in each read whether
/// it was deleted. Should the caller drop this (a signal), `tracker` still holds what was
/// created: the caller deletes it ([`TraceflowTracker::delete_all`]).
pub async fn run_and_delete(
    client: &Client,
    layout: &Layout,
    classes: &[TraceflowClass],
    tracker: &TraceflowTracker,
    within: Duration,
) -> Vec<TraceflowRead> {
    let root = traceflow_root(layout);
    let planned: Vec<(TraceflowClass, String)> = classes
        .iter()
        .map(|c| (c.clone(), policy_path(&root, &new_id())))
        .collect();
    let mut reads = run(client, &planned, tracker, within).await;
    let failed = tracker.delete_all(client).await;
    mark_deleted(&mut reads, &failed);
    reads
}

/// Sets each read's `deleted` from the deletion's outcome (and a gap when it failed).
pub fn mark_deleted(reads: &mut [TraceflowRead], failed: &BTreeMap<String, String>) {
    for r in reads.iter_mut() {
        if r.path.is_empty() {
            continue;
        }
        match failed.get(&r.path) {
            None => r.deleted = true,
            Some(why) => {
                r.deleted = false;
                r.gaps.push(Gap {
                    path: r.path.clone(),
                    status: None,
                    why: format!(
                        "could not be deleted ({why}); `is_transient`: NSX removes it after two idle hours"
                    ),
                    privilege: None,
                });
            }
        }
    }
}

fn read_of(class: &TraceflowClass, path: &str) -> TraceflowRead {
    TraceflowRead {
        from: class.from.clone(),
        to: class.to.clone(),
        port: class.port,
        path: path.to_string(),
        status: None,
        observations: Listed::default(),
        deleted: false,
        gaps: Vec::new(),
    }
}

/// Creates the traceflows (each a class and its policy path, [`policy_path`]) at once, polls
/// their states until each is done or `within` passes, reads their observations. Deletes
/// nothing: the caller's tracker does ([`run_and_delete`]).
pub async fn run(
    client: &Client,
    planned: &[(TraceflowClass, String)],
    tracker: &TraceflowTracker,
    within: Duration,
) -> Vec<TraceflowRead> {
    let deadline = Instant::now() + within;
    let mut reads: Vec<TraceflowRead> = planned.iter().map(|(c, id)| read_of(c, id)).collect();
    let run_now = &planned[..planned.len().min(MAX_TRACEFLOWS)];
    for r in reads.iter_mut().skip(run_now.len()) {
        r.path = String::new();
        r.gaps.push(Gap {
            path: String::new(),
            status: None,
            why: format!("not run: at most {MAX_TRACEFLOWS} traceflows a run"),
            privilege: None,
        });
    }

    // 1. Create them all at once.
    let created = futures::future::join_all(run_now.iter().map(|(class, tf)| async move {
        let path = ApiPath::policy(tf, &[]).map_err(RequestError::BadPath)?;
        let id = tf.rsplit('/').next().unwrap_or_default();
        tracker.track(tf);
        client.put(&path, &config(class, id)).await.map(|_| ())
    }))
    .await;
    let mut live: Vec<usize> = Vec::new();
    for (i, r) in created.into_iter().enumerate() {
        match r {
            Ok(()) => live.push(i),
            Err(e) => {
                let path = reads[i].path.clone();
                // A 4xx is a definite refusal, and a request never sent (the deadline, refused
                // credentials) made nothing: nothing to delete. Anything else (5xx, a timeout, a
                // lost answer) may have made it: it stays tracked.
                let refused = e
                    .status()
                    .is_some_and(|s| (400..500).contains(&s) && s != 408 && s != 429);
                let unsent = matches!(
                    e,
                    RequestError::Deadline { .. }
                        | RequestError::NotSent
                        | RequestError::BadPath(_)
                );
                if refused || unsent {
                    tracker.untrack(&path);
                }
                reads[i].gaps.push(e.gap(&path, Privilege::Traceflow));
            }
        }
    }

    // 2. Poll their states until done or the deadline.
    let mut waiting = live.clone();
    loop {
        let states = futures::future::join_all(waiting.iter().map(|&i| {
            let tf = planned[i].1.clone();
            async move {
                let r = match ApiPath::policy(&tf, &["status"]) {
                    Ok(p) => client.get(&p).await,
                    Err(why) => Err(RequestError::BadPath(why)),
                };
                (i, r)
            }
        }))
        .await;
        let mut still = Vec::new();
        for (i, r) in states {
            match r {
                Ok(status) => {
                    let s = state(&status);
                    reads[i].status = Some(status);
                    if s == State::InProgress || s == State::Unknown {
                        still.push(i);
                    }
                }
                Err(e) => {
                    let path = format!("{}/status", reads[i].path);
                    reads[i].gaps.push(e.gap(&path, Privilege::Traceflow));
                }
            }
        }
        waiting = still;
        if waiting.is_empty() || Instant::now() + POLL_INTERVAL >= deadline {
            break;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    for &i in &waiting {
        let path = format!("{}/status", reads[i].path);
        reads[i].gaps.push(Gap {
            path,
            status: None,
            why: format!(
                "not finished within {} (its observations so far are kept)",
                humantime::format_duration(within)
            ),
            privilege: None,
        });
    }

    // 3. Their observations (an unfinished one's too: what it saw so far).
    let observed = futures::future::join_all(live.iter().map(|&i| {
        let tf = planned[i].1.clone();
        async move {
            let l = match ApiPath::policy(&tf, &["observations"]) {
                Ok(p) => client.list(&p, &[], Privilege::Traceflow).await,
                Err(why) => Listed {
                    incomplete: Some(Gap {
                        path: tf.clone(),
                        status: None,
                        why,
                        privilege: None,
                    }),
                    ..Listed::default()
                },
            };
            (i, l)
        }
    }))
    .await;
    for (i, l) in observed {
        reads[i].observations = l;
    }
    reads
}

/// The ids of ours in a listing of a root's traceflows (`/policy/api/v1/infra/traceflows`, or a
/// project's): what `cleanup` would delete after a run that could not.
pub fn leftovers(listed: &Listed) -> Vec<String> {
    listed
        .results
        .iter()
        .filter_map(|t| t.get("id").and_then(Value::as_str))
        .filter(|id| {
            id.strip_prefix(ID_PREFIX)
                .is_some_and(|h| h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests;
