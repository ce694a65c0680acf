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
//! The packet, as the API reference's policy traceflow example sets it and its models say
//! (`FieldsPacketData`: `eth_header`, `ip_header`/`ipv6_header`, `transport_header`;
//! `EthernetHeader`: `src_mac`, `dst_mac` of the form `^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$`,
//! `eth_type` "defaults to IPv4" (2048); `Ipv4Header`/`Ipv6Header`: `src_ip`, `dst_ip`;
//! vmware/vsphere-automation-sdk-go `services/nsxt/model/ModelPackage.go`
//! `FieldsPacketData`, `EthernetHeader`, `Ipv6Header`): the source VM's MAC from its own VIF
//! (else its port's `address_bindings`), the peer's likewise, the source's address, and
//! `eth_type` 34525 (0x86DD) for IPv6: the default would put an IPv6 header in an IPv4 frame.
//!
//! Each cluster traces and deletes its own ([`TraceflowTracker::scoped`]): one cluster's
//! cleanup never deletes another's traceflows while they are polled. A PUT runs as a task of
//! its own and its delete waits for its answer (bounded by [`CLEANUP_BOUND`]), so a delete
//! never reaches the manager before the create it undoes, even when a signal drops the run
//! between the two.
//!
//! The ids are ours (`etcdnet-<16 hex>`, [`ID_PREFIX`]): a traceflow a run could not delete (the
//! manager gone at the end, the process killed) is found later by listing
//! `/policy/api/v1/infra/traceflows` (or the project's, [`traceflow_root`]) and keeping the ids
//! with that prefix ([`leftovers`]); and each is `is_transient`, so NSX itself removes it after
//! two idle hours.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use super::client::{ApiPath, Client, Privilege, RequestError, CLEANUP_BOUND};
use super::raw::{Gap, Layout, Listed, TraceflowRead};

/// The most traceflows one run creates (the caller picks the classes; more are refused).
pub(crate) const MAX_TRACEFLOWS: usize = 6;
/// Every id this plugin gives a traceflow starts with this.
pub(crate) const ID_PREFIX: &str = "etcdnet-";
/// Between two reads of the traceflows' states.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(1000);
/// The source port of the injected SYN (an ephemeral one, as a client's connect would use).
pub(crate) const SOURCE_PORT: u16 = 49152;

/// One traceflow to run: from a VM's port (its policy path, as read) to a peer's IP and port,
/// between two nodes (the names its read carries: what the evaluation and the report speak of).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceflowClass {
    /// The source and destination nodes.
    pub from: String,
    pub to: String,
    /// The source VM's segment (or VPC subnet) port, as a policy path.
    pub from_port: String,
    /// The peer's IP (v4 or v6), as the Supervisor shows it.
    pub to_ip: String,
    /// 2380 or 2379.
    pub port: u16,
    /// The source's address of the peer's family (the packet's `src_ip`), when known.
    pub from_ip: Option<String>,
    /// The source's and the peer's MACs (the frame's `src_mac`, `dst_mac`), when known: from
    /// each VM's own VIF, else its port's address bindings ([`mac_of`]).
    pub from_mac: Option<String>,
    pub to_mac: Option<String>,
}

/// The IPv6 `eth_type` (0x86DD): `EthernetHeader.eth_type` defaults to IPv4 (2048).
pub(crate) const ETH_TYPE_IPV6: u16 = 0x86DD;

/// Whether `s` is a MAC as `EthernetHeader` takes it (`^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$`).
pub(crate) fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 17
        && b.iter().enumerate().all(|(i, c)| {
            if i % 3 == 2 {
                *c == b':' || *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// The MAC of a VM's port as NSX Manager showed it: among the objects its lookup found, the
/// VIF owned by the VM (`owner_vm_id`, its external id) and attached to the port
/// (`lport_attachment_id` = the port's `attachment.id`: what ties the port to the VM), its
/// `mac_address`; else the port's own `address_bindings[].mac_address` (vsphere-automation-sdk
/// `VirtualNetworkInterface.mac_address`, `PortAddressBindingEntry.mac_address`). Only a
/// well-formed MAC ([`is_mac`]); none when they disagree or none is known.
pub(crate) fn mac_of(
    found: &[Value],
    vm_external_id: Option<&str>,
    port_path: &str,
    attachment_id: Option<&str>,
) -> Option<String> {
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let from_vif = found.iter().find_map(|v| {
        let vif = v.get("resource_type").and_then(Value::as_str) == Some("VirtualNetworkInterface");
        let owned =
            vm_external_id.is_some() && str_of(v, "owner_vm_id").as_deref() == vm_external_id;
        let tied =
            attachment_id.is_some() && str_of(v, "lport_attachment_id").as_deref() == attachment_id;
        (vif && owned && tied)
            .then(|| str_of(v, "mac_address"))
            .flatten()
    });
    let from_port = || {
        let port = found
            .iter()
            .find(|v| v.get("path").and_then(Value::as_str) == Some(port_path))?;
        let macs: Vec<String> = port
            .get("address_bindings")?
            .as_array()?
            .iter()
            .take(16)
            .filter_map(|b| str_of(b, "mac_address"))
            .collect();
        // One MAC, or several that agree: a port bound to two MACs names neither.
        match macs.as_slice() {
            [first, rest @ ..] if rest.iter().all(|m| m.eq_ignore_ascii_case(first)) => {
                Some(first.clone())
            }
            _ => None,
        }
    };
    from_vif
        .or_else(from_port)
        .filter(|m| is_mac(m))
        .map(|m| m.to_ascii_lowercase())
}

/// The state a traceflow's `/status` reports (`operation_state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    InProgress,
    Finished,
    /// `FAILED`, with the manager's reason when it gave one.
    Failed(Option<String>),
    /// Absent or not one of these.
    Unknown,
}

/// `operation_state` of a traceflow's status.
pub(crate) fn state(status: &Value) -> State {
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
pub(crate) fn new_id() -> String {
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
pub(crate) fn traceflow_root(layout: &Layout) -> String {
    match layout {
        Layout::Vpc { org, project, .. } if project != "default" => {
            format!("/orgs/{org}/projects/{project}/infra")
        }
        _ => "/infra".to_string(),
    }
}

/// The traceflow's policy path under `root` ([`traceflow_root`]).
pub(crate) fn policy_path(root: &str, id: &str) -> String {
    format!("{root}/traceflows/{id}")
}

/// The `TraceflowConfig` body: a TCP SYN from the port to `to_ip:port`, transient.
pub(crate) fn config(class: &TraceflowClass, id: &str) -> Value {
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
    let v6 = class.to_ip.contains(':');
    let mut ip = if v6 {
        json!({"dst_ip": class.to_ip, "next_header": 6, "hop_limit": 64})
    } else {
        json!({"dst_ip": class.to_ip, "protocol": 6, "ttl": 64})
    };
    if let Some(src) = &class.from_ip {
        ip["src_ip"] = json!(src);
    }
    packet[if v6 { "ipv6_header" } else { "ip_header" }] = ip;
    let mut eth = serde_json::Map::new();
    if let Some(m) = &class.from_mac {
        eth.insert("src_mac".into(), json!(m));
    }
    if let Some(m) = &class.to_mac {
        eth.insert("dst_mac".into(), json!(m));
    }
    if v6 {
        eth.insert("eth_type".into(), json!(ETH_TYPE_IPV6));
    }
    if !eth.is_empty() {
        packet["eth_header"] = Value::Object(eth);
    }
    json!({
        "display_name": format!("kubectl-etcdnet {id}"),
        "segment_port_path": class.from_port,
        "packet": packet,
        "is_transient": true,
    })
}

/// Every traceflow a run has created (or may have: its PUT went out) and not yet deleted, each
/// with its creator (a cluster's [`TraceflowTracker::scoped`]) and whether its PUT has
/// answered. The run's own tracker (the default) sees and deletes them all; a scoped one only
/// its own.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceflowTracker {
    entries: Arc<Mutex<BTreeMap<String, Entry>>>,
    /// `None`: the run's (every entry); else one cluster's.
    scope: Option<u64>,
    scopes: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Entry {
    scope: Option<u64>,
    /// Turns true when the PUT has answered (or its task ended): a delete waits for it.
    put: Option<watch::Receiver<bool>>,
}

impl TraceflowTracker {
    /// A tracker for one cluster: what it tracks the run's tracker sees too (and deletes on
    /// its way out), but its [`pending`](Self::pending) and
    /// [`delete_all`](Self::delete_all) are its own.
    pub fn scoped(&self) -> TraceflowTracker {
        TraceflowTracker {
            entries: self.entries.clone(),
            scope: Some(self.scopes.fetch_add(1, Ordering::SeqCst) + 1),
            scopes: self.scopes.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mine(&self, e: &Entry) -> bool {
        self.scope.is_none() || e.scope == self.scope
    }

    /// Before the PUT goes out (its policy path): an answer lost on the way may still have
    /// created it. `put` turns true when the PUT has answered.
    pub fn track(&self, id: &str, put: Option<watch::Receiver<bool>>) {
        self.lock().insert(
            id.to_string(),
            Entry {
                scope: self.scope,
                put,
            },
        );
    }

    /// The traceflows (policy paths) not yet deleted.
    pub fn pending(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, e)| self.mine(e))
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn untrack(&self, id: &str) {
        let mut entries = self.lock();
        if entries.get(id).is_some_and(|e| self.mine(e)) {
            entries.remove(id);
        }
    }

    /// Deletes every tracked traceflow (of this scope), all at once, each within
    /// [`CLEANUP_BOUND`] (whatever is left of the reading's deadline): first its PUT's answer
    /// awaited, then the DELETE within what is left (a 503 retried only inside it). A 404 is
    /// deleted (never made, or gone). Returns the ones that could not be deleted, with why;
    /// they stay tracked.
    pub async fn delete_all(&self, client: &Client) -> BTreeMap<String, String> {
        let waiting: Vec<(String, Option<watch::Receiver<bool>>)> = self
            .lock()
            .iter()
            .filter(|(_, e)| self.mine(e))
            .map(|(id, e)| (id.clone(), e.put.clone()))
            .collect();
        let results = futures::future::join_all(waiting.into_iter().map(|(id, put)| async move {
            let started = Instant::now();
            if let Some(mut put) = put {
                // Err: the PUT's task ended without saying (dropped): nothing to wait for.
                let answered = tokio::time::timeout(CLEANUP_BOUND, put.wait_for(|done| *done));
                if answered.await.is_err() {
                    return (
                        id,
                        Err(format!(
                            "its create did not answer within {}",
                            super::client::shown(CLEANUP_BOUND)
                        )),
                    );
                }
            }
            let left = CLEANUP_BOUND.saturating_sub(started.elapsed());
            let r = match ApiPath::policy(&id, &[]) {
                Ok(p) => match client.delete(&p, left).await {
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
pub(crate) async fn run_and_delete(
    client: &Arc<Client>,
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
pub(crate) fn mark_deleted(reads: &mut [TraceflowRead], failed: &BTreeMap<String, String>) {
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
pub(crate) async fn run(
    client: &Arc<Client>,
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

    // 1. Create them all at once, each PUT a task of its own: should a signal drop this
    // run, the PUT still gets its answer, which the delete waits for.
    let created = futures::future::join_all(run_now.iter().map(|(class, tf)| async move {
        let path = ApiPath::policy(tf, &[]).map_err(RequestError::BadPath)?;
        let id = tf.rsplit('/').next().unwrap_or_default();
        let body = config(class, id);
        let (answered, put) = watch::channel(false);
        tracker.track(tf, Some(put));
        let client = client.clone();
        let task = tokio::spawn(async move {
            let r = client.put(&path, &body).await.map(|_| ());
            let _ = answered.send(true);
            r
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Err(RequestError::Transport {
                manager: String::new(),
                why: format!("the create's task ended: {e}"),
            }),
        }
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

#[cfg(test)]
mod tests;
