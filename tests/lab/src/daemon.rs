//! The lab's daemons besides etcd: one sshd per node, started and stopped on request.
//!
//! Like etcd (see `member.rs`), every daemon is forked by one thread that lives exactly as long as
//! the lab, with `PR_SET_PDEATHSIG = SIGKILL`: the signal fires when that *thread* ends, so a
//! test process killed without running destructors takes its sshds with it. The daemons carry
//! `ETCDNET_LAB_DAEMON=<lab id>/<node>/<name>` in their environment, so the sweeper can find one
//! even outside its namespace.
//!
//! Stopping kills the daemon's process group (the sshd listener), not the sessions it started:
//! sshd gives each connection its own session, as `systemctl stop ssh` (KillMode=process) leaves
//! open logins alone on a VM. Teardown kills those with the namespace.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::exec::{kill_group, wait_deadline};
use crate::member::log_tail;

/// The environment variable that marks a lab daemon.
pub(crate) const MARKER: &str = "ETCDNET_LAB_DAEMON";

type Job = (Box<Command>, mpsc::Sender<std::io::Result<Child>>);

/// One thread that forks every daemon (and so is the parent whose end kills them).
struct Spawner {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Spawner {
    fn new(name: &str) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-daemons"))
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })?;
        Ok(Spawner {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    fn spawn(&self, mut cmd: Command) -> Result<Child> {
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        crate::exec::as_machine(&mut cmd);
        let (reply, rx) = mpsc::channel();
        self.tx
            .as_ref()
            .context("the lab's daemon thread is gone")?
            .send((Box::new(cmd), reply))
            .map_err(|_| anyhow!("the lab's daemon thread is gone"))?;
        Ok(rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| anyhow!("the daemon thread did not answer"))??)
    }

    fn shutdown(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A daemon to start: the command and the files that tell it is up.
pub(crate) struct Start<'a> {
    pub cmd: Command,
    /// `<lab id>/<node>/<name>`, the value of the marker.
    pub marker: String,
    /// stdout and stderr are appended here (sshd logs there too, with -E).
    pub log: &'a Path,
    /// Written by the daemon once it listens; removed before starting.
    pub pid_file: &'a Path,
}

/// The sshd of every node (slot = node index).
pub(crate) struct Daemons {
    spawner: Mutex<Spawner>,
    children: Mutex<Vec<Option<Child>>>,
}

/// How long a daemon may take to write its pid file.
const READY: Duration = Duration::from_secs(10);

impl Daemons {
    pub(crate) fn new(name: &str, slots: usize) -> Result<Self> {
        Ok(Daemons {
            spawner: Mutex::new(Spawner::new(name)?),
            children: Mutex::new((0..slots).map(|_| None).collect()),
        })
    }

    fn children(&self) -> MutexGuard<'_, Vec<Option<Child>>> {
        self.children.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pid of slot's daemon if it is running.
    pub(crate) fn pid(&self, slot: usize) -> Option<u32> {
        let mut children = self.children();
        let child = children.get_mut(slot)?.as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    /// Starts slot's daemon unless it runs, and waits until it wrote its pid file (sshd does that
    /// once it listens). Returns its pid.
    pub(crate) fn start(&self, slot: usize, s: Start<'_>) -> Result<u32> {
        if let Some(pid) = self.pid(slot) {
            return Ok(pid);
        }
        let _ = fs::remove_file(s.pid_file);
        let log = File::options()
            .create(true)
            .append(true)
            .open(s.log)
            .with_context(|| format!("opening {}", s.log.display()))?;
        let mut cmd = s.cmd;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .env(MARKER, &s.marker);
        let mut child = self
            .spawner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spawn(cmd)
            .with_context(|| format!("starting {}", s.marker))?;
        let pid = child.id();
        let deadline = Instant::now() + READY;
        loop {
            if fs::read_to_string(s.pid_file).is_ok_and(|p| !p.trim().is_empty()) {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!(
                    "{} exited ({status}) before it was ready; {}:\n{}",
                    s.marker,
                    s.log.display(),
                    log_tail(s.log, 10)
                );
            }
            if Instant::now() > deadline {
                kill_group(&mut child);
                bail!(
                    "{} did not write {} within {READY:?}; {}:\n{}",
                    s.marker,
                    s.pid_file.display(),
                    s.log.display(),
                    log_tail(s.log, 10)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut children = self.children();
        let slot_ref = children
            .get_mut(slot)
            .ok_or_else(|| anyhow!("no daemon slot {slot}"))?;
        *slot_ref = Some(child);
        Ok(pid)
    }

    /// Kills slot's daemon (its process group) and reaps it; false if it was not running.
    pub(crate) fn stop(&self, slot: usize) -> bool {
        let child = self.children().get_mut(slot).and_then(Option::take);
        let Some(mut child) = child else {
            return false;
        };
        let running = matches!(child.try_wait(), Ok(None));
        if kill_group(&mut child).is_none() {
            // Not reaped within 5 s: give it a last chance rather than leak a zombie silently.
            let _ = wait_deadline(&mut child, Duration::from_secs(5));
        }
        running
    }

    /// Stops every daemon and ends the spawning thread.
    pub(crate) fn shutdown(&self) {
        let slots = self.children().len();
        for slot in 0..slots {
            self.stop(slot);
        }
        self.spawner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shutdown();
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The marker value of a node's daemon.
pub(crate) fn marker(lab_id: &str, node: &str, name: &str) -> String {
    format!("{lab_id}/{node}/{name}")
}

/// Used by the sweeper: the daemons of lab `id` are those whose marker starts with `id/`.
pub(crate) fn marker_prefix(lab_id: &str) -> String {
    format!("{MARKER}={lab_id}/")
}
