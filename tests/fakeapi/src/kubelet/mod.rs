//! The lab kubelet: a workload fake whose pods really run.
//!
//! [`crate::FakeApi::execute_pods_in`] attaches a lab (`etcdnet_lab::Lab`). From then on, a pod
//! created through the API whose `spec.nodeName` is a lab node's name is run the way a kubelet on
//! that node would: the first container's `command` + `args` as root in the node's network
//! namespace, with the host's `/` and the node's view at `/host` (`Lab::pod_command`: what a
//! privileged hostNetwork pod with a hostPath `/` volume sees; read-only, not recursively, when the
//! container mounts `/host` with `readOnly: true`, as runc does), its stdout and stderr interleaved
//! as the pod's log, its exit status as the pod's phase, every transition a status write (a
//! MODIFIED watch event), plus the kubelet's Events. `activeDeadlineSeconds` and DELETE kill it.
//!
//! A pod pinned to any other node name stays Pending with no status at all: nothing schedules it
//! and no kubelet owns that node. (A real cluster's pod garbage collector would delete it after
//! about 40 s when the Node object does not exist; the fake keeps it, so tests stay deterministic.)
//!
//! [`crate::FakeApi::execute_jumpbox_pods_in`] makes a Supervisor fake run the pods created
//! *without* `spec.nodeName` as vSphere Pods: in the lab's switch namespace (198.18.0.1, the
//! Supervisor side, `Lab::jumpbox_pod_command_named`) with a pod's filesystem and its `secret`
//! volumes written from the fake's own Secrets ([`volumes`]). Same lifecycle, same code.
//!
//! Limits, on purpose: the image is never pulled or used (the command runs with the host's
//! binaries), only the first container runs (the others are reported `NotSupported`), init
//! containers are ignored, `restartPolicy` is treated as Never, `workingDir` is ignored (the
//! command starts in `/`), env values come from `value` and the common `fieldRef`s only, and a
//! non-hostNetwork pod still runs in the node's network namespace (with a made-up pod IP).

mod process;
mod run;
mod volumes;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use etcdnet_lab::Lab;
use serde_json::{json, Value};

use crate::server::Shared;
use crate::store;

pub(crate) use run::pull_refused_detached;
use run::Place;

/// The host a vSphere Pod (a pod without `spec.nodeName` in a Supervisor fake) is reported on:
/// the lab's switch namespace, where it runs.
pub const VSPHERE_POD_HOST: &str = "jumpbox";

/// A kubelet's default `maxPods`: more pods than this on one node are rejected (OutOfpods).
pub const MAX_PODS_PER_NODE: usize = 110;

/// One process group the lab kubelet started for a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodProcess {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    /// The process the pod's command became; it leads its own process group.
    pub pid: u32,
}

/// A secret volume the kubelet wrote for a vSphere Pod: a directory (0755) inside a private one
/// (0700) in the host's temp dir, mounted read-only in the pod, removed when the pod ends or is
/// deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretVolume {
    pub namespace: String,
    pub pod: String,
    /// The volume's name in the pod spec.
    pub volume: String,
    /// Where the pod sees it (the first container's `mountPath`).
    pub mount_path: String,
    /// The host directory (gone once the pod has ended).
    pub dir: PathBuf,
}

/// Why a pod's thread must stop its process now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The pod was deleted: SIGTERM, then SIGKILL after its grace period.
    Deleted,
    /// The fake is shutting down.
    Shutdown,
}

struct Run {
    uid: String,
    node: String,
    tx: mpsc::Sender<Stop>,
}

/// The lab kubelet of one fake API server (see the module docs).
pub struct Kubelet {
    lab: Arc<Lab>,
    /// Runs pods pinned to lab nodes (a workload fake: `execute_pods_in`).
    pinned: AtomicBool,
    /// Runs pods without a node as vSphere Pods (a Supervisor fake: `execute_jumpbox_pods_in`).
    vsphere: AtomicBool,
    /// Every secret volume directory ever written, for [`Kubelet::secret_volumes`].
    volumes: Mutex<Vec<SecretVolume>>,
    /// Pods being run, by (namespace, name).
    runs: Mutex<HashMap<(String, String), Run>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Every process group ever started, for [`Kubelet::processes`].
    groups: Mutex<Vec<PodProcess>>,
    stopping: AtomicBool,
}

impl Kubelet {
    pub(crate) fn new(lab: Arc<Lab>) -> Kubelet {
        Kubelet {
            lab,
            pinned: AtomicBool::new(false),
            vsphere: AtomicBool::new(false),
            volumes: Mutex::new(Vec::new()),
            runs: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            groups: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        }
    }

    pub fn lab(&self) -> &Arc<Lab> {
        &self.lab
    }

    /// Starts running pods pinned to lab nodes; false if it already did.
    pub(crate) fn enable_pinned(&self) -> bool {
        !self.pinned.swap(true, Ordering::SeqCst)
    }

    /// Starts running pods without a node as vSphere Pods; false if it already did.
    pub(crate) fn enable_vsphere(&self) -> bool {
        !self.vsphere.swap(true, Ordering::SeqCst)
    }

    /// True if a lab node of this name exists and this kubelet runs pods pinned to it.
    pub(crate) fn owns(&self, node: &str) -> bool {
        self.pinned.load(Ordering::SeqCst) && self.lab.node(node).is_ok()
    }

    /// Takes a just-created pod if it is pinned to a lab node (workload side) or, as a vSphere
    /// Pod, has no node at all (Supervisor side); false if it is not ours.
    pub(crate) fn admit(self: &Arc<Self>, shared: &Arc<Shared>, pod: &Value) -> bool {
        let node_name = pod["spec"]["nodeName"].as_str().unwrap_or("");
        let place = if node_name.is_empty() {
            if !self.vsphere.load(Ordering::SeqCst) {
                return false;
            }
            Place::Vsphere
        } else {
            match self.lab.node(node_name) {
                Ok(n) if self.pinned.load(Ordering::SeqCst) => Place::Node(n.clone()),
                _ => return false,
            }
        };
        let node_name = place.host().to_string();
        if self.stopping.load(Ordering::SeqCst) {
            return true;
        }
        let key = (store::namespace(pod), store::name(pod));
        let uid = store::meta_str(pod, "uid");
        let (tx, rx) = mpsc::channel();
        {
            let mut runs = self.runs.lock().unwrap();
            let used = runs.values().filter(|r| r.node == node_name).count();
            // The Supervisor schedules vSphere Pods over its ESXi hosts: no per-node cap here.
            if matches!(place, Place::Node(_)) && used >= MAX_PODS_PER_NODE {
                drop(runs);
                run::reject_out_of_pods(shared, pod, used);
                return true;
            }
            runs.insert(
                key.clone(),
                Run {
                    uid: uid.clone(),
                    node: node_name.clone(),
                    tx,
                },
            );
        }
        let key_for_err = key.clone();
        let (me, shared, pod) = (self.clone(), shared.clone(), pod.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("kubelet-{node_name}"))
            .spawn(move || {
                run::run_pod(&me, &shared, &pod, &place, rx);
                let mut runs = me.runs.lock().unwrap();
                if runs.get(&key).is_some_and(|r| r.uid == uid) {
                    runs.remove(&key);
                }
            });
        match spawned {
            Ok(h) => {
                let mut threads = self.threads.lock().unwrap();
                threads.retain(|t| !t.is_finished());
                threads.push(h);
            }
            Err(e) => {
                // The pod stays Pending, as on a node whose kubelet is wedged.
                eprintln!("etcdnet-fakeapi: cannot start a kubelet thread: {e}");
                self.runs.lock().unwrap().remove(&key_for_err);
            }
        }
        true
    }

    /// A pod was deleted through the API: its process is killed at once.
    pub(crate) fn deleted(&self, ns: &str, name: &str, uid: &str) {
        let runs = self.runs.lock().unwrap();
        if let Some(r) = runs.get(&(ns.to_string(), name.to_string())) {
            if r.uid == uid {
                let _ = r.tx.send(Stop::Deleted);
            }
        }
    }

    pub(crate) fn record(&self, p: PodProcess) {
        self.groups.lock().unwrap().push(p);
    }

    pub(crate) fn record_volume(&self, v: SecretVolume) {
        self.volumes.lock().unwrap().push(v);
    }

    /// Every secret volume directory written so far, in order (see [`SecretVolume`]).
    pub fn secret_volumes(&self) -> Vec<SecretVolume> {
        self.volumes.lock().unwrap().clone()
    }

    /// Every process still alive in any pod's process group (a pod's command and whatever it
    /// started), as (pod process, live pid).
    pub fn processes(&self) -> Vec<(PodProcess, u32)> {
        let groups = self.groups.lock().unwrap().clone();
        let pgids: Vec<u32> = groups.iter().map(|g| g.pid).collect();
        process::alive_in_groups(&pgids)
            .into_iter()
            .filter_map(|(pgrp, pid)| {
                groups
                    .iter()
                    .rev()
                    .find(|g| g.pid == pgrp)
                    .map(|g| (g.clone(), pid))
            })
            .collect()
    }

    /// Kills every pod process and waits for the pods' threads (each ends within a few
    /// seconds: kill, reap, drain the log). Statuses are left as they were.
    pub(crate) fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for r in self.runs.lock().unwrap().values() {
            let _ = r.tx.send(Stop::Shutdown);
        }
        let threads = std::mem::take(&mut *self.threads.lock().unwrap());
        for t in threads {
            let _ = t.join();
        }
    }
}

/// The Node object a lab node's kubelet registers (when the fixtures do not already have it):
/// a kubeadm control-plane node, Ready, tainted, at the node's address.
pub(crate) fn node_object(n: &etcdnet_lab::Node) -> Value {
    let now = store::now_rfc3339();
    let cond = |t: &str, s: &str, r: &str, m: &str| {
        json!({"type": t, "status": s, "reason": r, "message": m,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": n.name, "labels": {
            "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64", "node-role.kubernetes.io/control-plane": ""},
            "annotations": {"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock"}},
        "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        "status": {
            "addresses": [{"type": "InternalIP", "address": n.ip.to_string()},
                          {"type": "Hostname", "address": n.name}],
            "capacity": {"cpu": "2", "memory": "4015856Ki", "pods": MAX_PODS_PER_NODE.to_string()},
            "allocatable": {"cpu": "2", "memory": "3913456Ki", "pods": MAX_PODS_PER_NODE.to_string()},
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                         "kubeletVersion": "v1.30.1+vmware.1-fips", "kubeProxyVersion": "v1.30.1+vmware.1-fips",
                         "containerRuntimeVersion": "containerd://1.6.31+vmware.1-fips",
                         "osImage": "VMware Photon OS/Linux", "kernelVersion": "6.1.83-1.ph5",
                         "machineID": "", "systemUUID": "", "bootID": ""},
        },
    })
}
