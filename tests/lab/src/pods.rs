//! The nodes' etcd pods as the lab and its kubelet stand-ins (`kubelet.rs`) both see them: which
//! container (pod generation, attempt) each node runs, its pid, and the one way to start, stop
//! or restart it. Shared (`Arc`) between the [`crate::Lab`] and the kubelet threads, so that a
//! test's `restart_etcd` and a kubelet's restart never both start a container: every change
//! happens under one lock, and the kubelet's changes are conditional on the container it saw.

use std::fs;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::member::{self, Record};
use crate::node::{self, Node};
use crate::view::{self, Mode};

#[derive(Default)]
pub(crate) struct Member {
    /// The attempt last started (None before the first start).
    pub attempt: Option<u32>,
    pub pid: u32,
    /// Certificates replaced by an Expired* fault, to restore on heal.
    pub tampered: bool,
    /// The node's etcd pod: 0 at start, + 1 with every `Lab::replace_member`.
    pub generation: u32,
    /// Joined a running cluster (`--initial-cluster-state=existing`): after a replacement.
    pub existing: bool,
    /// While set, the node's kubelet stand-in leaves the pod alone (a replacement in progress:
    /// the old VM's kubelet is gone, the new one not started).
    pub kubelet_paused: bool,
    /// How many times the node's kubelet stand-in restarted this pod's container.
    pub kubelet_restarts: u32,
    /// Nanoseconds since the epoch that `crictl` reports as the current container's creation
    /// (`Lab::age` moves it into the past); None: the real start time.
    pub created_override: Option<u128>,
    /// When the current container's process really started (ns since the epoch).
    pub started_ns: u128,
    /// The container whose past lines `past` holds (`past.rs`).
    pub past_key: Option<ContainerKey>,
    pub past: Vec<crate::past::PastLine>,
    /// What the node's kubelet stand-in did, oldest first.
    pub kubelet_events: Vec<String>,
    /// `Lab::power_off`: nothing of the node runs until `Lab::power_on`.
    pub powered_off: bool,
}

/// A container as seen at one moment: (pod generation, attempt).
pub(crate) type ContainerKey = (u32, u32);

pub(crate) struct Pods {
    lab_id: String,
    nodes: Vec<Node>,
    members: Mutex<Vec<Member>>,
    supervisor: OnceLock<member::Handle>,
}

impl Pods {
    pub(crate) fn new(lab_id: &str, nodes: &[Node]) -> Pods {
        Pods {
            lab_id: lab_id.to_string(),
            nodes: nodes.to_vec(),
            members: Mutex::new(nodes.iter().map(|_| Member::default()).collect()),
            supervisor: OnceLock::new(),
        }
    }

    pub(crate) fn set_supervisor(&self, handle: member::Handle) {
        let _ = self.supervisor.set(handle);
    }

    fn supervisor(&self) -> Result<&member::Handle> {
        self.supervisor.get().context("the lab has no supervisor")
    }

    pub(crate) fn members(&self) -> MutexGuard<'_, Vec<Member>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `ETCDNET_LAB_MEMBER` in a member's environment.
    fn marker(&self, node: &str, generation: u32, attempt: u32) -> String {
        match generation {
            0 => format!("{}/{node}/{attempt}", self.lab_id),
            g => format!("{}/{node}/g{g}/{attempt}", self.lab_id),
        }
    }

    /// Starts node `i`'s next container (attempt + 1, or 0 for a new pod).
    pub(crate) fn start(&self, i: usize) -> Result<()> {
        let mut members = self.members();
        self.start_locked(i, &mut members)
    }

    fn start_locked(&self, i: usize, members: &mut [Member]) -> Result<()> {
        let node = &self.nodes[i];
        let m = &mut members[i];
        let attempt = m.attempt.map_or(0, |a| a + 1);
        let argv = node::etcd_argv(node, &self.nodes, m.existing);
        let mut cmd = view::command(node, Mode::Node, &argv);
        // etcd reads ETCD_* variables: give it a node's environment, not the test's.
        cmd.env_clear().env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        let record = Record {
            id: node.container_id_in(m.generation, attempt),
            attempt,
            pid: 0,
            created: 0,
            finished: 0,
            exit_code: 0,
            log: node.log_file(),
            past: node.past_log(m.generation, attempt),
            marker: self.marker(&node.name, m.generation, attempt),
            start_ticks: String::new(),
            state_dir: node.state_dir(),
        };
        let pid = self.supervisor()?.start(i, cmd, record)?;
        m.attempt = Some(attempt);
        m.pid = pid;
        m.created_override = None;
        m.started_ns = member::now_ns();
        Ok(())
    }

    /// Kills node `i`'s etcd (SIGKILL); false if it was not running.
    pub(crate) fn stop(&self, i: usize) -> Result<bool> {
        let _members = self.members();
        self.supervisor()?.stop(i)
    }

    /// Stop and start in one step (nothing else starts node `i` in between).
    pub(crate) fn restart(&self, i: usize) -> Result<()> {
        let mut members = self.members();
        self.supervisor()?.stop(i)?;
        self.start_locked(i, &mut members)
    }

    /// Starts node `i` unless its etcd runs; whether it started one.
    pub(crate) fn start_if_stopped(&self, i: usize) -> Result<bool> {
        let mut members = self.members();
        if self.pid_locked(i, &members).is_some() {
            return Ok(false);
        }
        self.start_locked(i, &mut members)?;
        Ok(true)
    }

    /// The kubelet's restart: starts the next container only if `seen` is still the current one
    /// and has exited (a test may have restarted it meanwhile) and the kubelet is not paused.
    pub(crate) fn restart_exited(&self, i: usize, seen: ContainerKey) -> Result<bool> {
        let mut members = self.members();
        let m = &members[i];
        if m.kubelet_paused
            || (m.generation, m.attempt.unwrap_or(0)) != seen
            || self.pid_locked(i, &members).is_some()
        {
            return Ok(false);
        }
        self.start_locked(i, &mut members)?;
        members[i].kubelet_restarts += 1;
        Ok(true)
    }

    /// The kubelet's kill after a failed probe: SIGTERM and `grace`, only if `seen` is still the
    /// current container.
    /// The supervisor stops that container only (by its id), so the lock is not held for the
    /// grace period.
    pub(crate) fn kill_if(&self, i: usize, seen: ContainerKey, grace: Duration) -> Result<bool> {
        {
            let members = self.members();
            let m = &members[i];
            if m.kubelet_paused || (m.generation, m.attempt.unwrap_or(0)) != seen {
                return Ok(false);
            }
        }
        let id = self.nodes[i].container_id_in(seen.0, seen.1);
        self.supervisor()?.terminate(i, &id, grace)
    }

    /// The current container of node `i` (None before its first start), whether it runs, and
    /// whether its kubelet is paused.
    pub(crate) fn current(&self, i: usize) -> (Option<ContainerKey>, bool, bool) {
        let members = self.members();
        let m = &members[i];
        let key = m.attempt.map(|a| (m.generation, a));
        (
            key,
            self.pid_locked(i, &members).is_some(),
            m.kubelet_paused,
        )
    }

    /// The pid of node `i`'s etcd if it is running (the process itself, in the node's netns).
    pub(crate) fn pid(&self, i: usize) -> Option<u32> {
        let members = self.members();
        self.pid_locked(i, &members)
    }

    fn pid_locked(&self, i: usize, members: &[Member]) -> Option<u32> {
        let m = &members[i];
        let marker = format!(
            "ETCDNET_LAB_MEMBER={}",
            self.marker(&self.nodes[i].name, m.generation, m.attempt?)
        );
        let env = fs::read(format!("/proc/{}/environ", m.pid)).ok()?;
        env.split(|b| *b == 0)
            .any(|v| v == marker.as_bytes())
            .then_some(m.pid)
    }

    /// Moves the current container's creation (and start) time, as `crictl` reports it, to
    /// `created_ns` (nanoseconds since the epoch).
    pub(crate) fn set_created(&self, i: usize, created_ns: u128) -> Result<()> {
        let mut members = self.members();
        let m = &mut members[i];
        let Some(attempt) = m.attempt else {
            bail!("{}: no container yet", self.nodes[i].name);
        };
        self.supervisor()?.set_created(i, attempt, created_ns)?;
        m.created_override = Some(created_ns);
        Ok(())
    }
}
