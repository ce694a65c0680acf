//! The etcd members' lifecycle: a small kubelet. One thread per lab owns every etcd child
//! process, starts and kills them on request, notices when one dies, and keeps the container
//! records the crictl stand-in reads (`run/crictl/containers/<attempt>.env`) true.
//!
//! Each etcd is started with `PR_SET_PDEATHSIG = SIGKILL`, which fires when the *thread* that
//! forked it ends: that is this supervisor thread, which lives exactly as long as the lab. So
//! when a test process is killed (SIGKILL, no destructors) its etcd processes die with it, and
//! only namespaces and directories are left for the sweeper.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context, Result};

use crate::exec::kill_group;
use crate::node::env_file;

pub(crate) fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// One container attempt as crictl reports it.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub id: String,
    pub attempt: u32,
    pub pid: u32,
    pub created: u128,
    pub finished: u128,
    pub exit_code: i32,
    pub log: PathBuf,
    /// Lines from before this container's process started (`Lab::age`, `Lab::append_log_lines`),
    /// which `crictl logs` prints before `log`.
    pub past: PathBuf,
    pub marker: String,
    /// The process's start time (`/proc/<pid>/stat` field 22, clock ticks since boot): with the
    /// pid, what tells this process from a later one that reuses its pid. crictl's stand-in
    /// reads it where the pod runs with the capabilities its spec keeps (no CAP_SYS_PTRACE:
    /// the process's environment is not readable there, its stat is).
    pub start_ticks: String,
    pub state_dir: PathBuf,
}

impl Record {
    fn write(&self) -> Result<()> {
        let dir = self.state_dir.join("containers");
        let text = env_file(&[
            ("ID", self.id.clone()),
            ("ATTEMPT", self.attempt.to_string()),
            ("PID", self.pid.to_string()),
            ("CREATED", self.created.to_string()),
            ("STARTED", self.created.to_string()),
            ("FINISHED", self.finished.to_string()),
            ("EXIT_CODE", self.exit_code.to_string()),
            ("LOG", self.log.to_string_lossy().into_owned()),
            ("PAST", self.past.to_string_lossy().into_owned()),
            ("MARKER", self.marker.clone()),
            ("STARTTIME", self.start_ticks.clone()),
        ]);
        let tmp = dir.join(format!("{}.tmp", self.attempt));
        fs::write(&tmp, text)?;
        fs::rename(&tmp, dir.join(format!("{}.env", self.attempt)))?;
        Ok(())
    }

    fn finish(&mut self, status: Option<ExitStatus>) {
        self.finished = now_ns();
        // Like a container runtime: a signal-killed process exits 128 + signal (SIGKILL: 137).
        // But SIGTERM (the kubelet's stop): in its container etcd is pid 1, which no signal
        // kills by default. Once etcd is ready it handles SIGTERM itself (HandleInterrupts,
        // pkg/osutil/interrupt_unix.go, 3.4 to 3.6, installed after the server is ready):
        // logs "received signal; shutting down" and, being pid 1, calls os.Exit(0). Before
        // that only Go's runtime handles it, and its dieFromSignal (runtime/signal_unix.go)
        // exits 2 when re-raising the signal did not kill the process, as for pid 1. Here etcd
        // is no pid 1 and dies of the signal either way: its log tells which case it was.
        self.exit_code = match status {
            Some(s) if s.signal() == Some(libc::SIGTERM) => {
                let tail = log_tail(&self.log, 20);
                if tail.contains("received signal; shutting down")
                    || tail.contains("signal, shutting down")
                {
                    0
                } else {
                    2
                }
            }
            Some(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
            None => 255,
        };
    }
}

enum Req {
    Start {
        slot: usize,
        cmd: Box<Command>,
        record: Record,
        reply: mpsc::Sender<Result<u32>>,
    },
    Stop {
        slot: usize,
        /// `Some`: SIGTERM first and this long to exit (the kubelet's kill with the pod's grace
        /// period), then SIGKILL. `None`: SIGKILL at once.
        grace: Option<Duration>,
        /// Only if the running container has this id (the kubelet's kill of what it probed).
        only: Option<String>,
        reply: mpsc::Sender<bool>,
    },
    SetCreated {
        slot: usize,
        attempt: u32,
        created: u128,
        reply: mpsc::Sender<Result<()>>,
    },
    Shutdown,
}

/// Handle on the supervisor thread.
pub(crate) struct Supervisor {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

/// What starts and stops members: shared by the lab and its kubelet stand-ins (`kubelet.rs`).
/// Every call fails once the supervisor thread is gone (the lab torn down).
#[derive(Clone)]
pub(crate) struct Handle {
    tx: mpsc::Sender<Req>,
}

const REPLY: Duration = Duration::from_secs(30);

impl Supervisor {
    pub(crate) fn new(name: &str) -> Result<Self> {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-members"))
            .spawn(move || run(rx))?;
        Ok(Supervisor {
            handle: Handle { tx },
            thread: Some(thread),
        })
    }

    pub(crate) fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Kills every member and ends the thread (bounded: each kill waits at most 5 s).
    pub(crate) fn shutdown(&mut self) {
        let _ = self.handle.tx.send(Req::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Handle {
    /// Starts `cmd` as member `slot`'s attempt `record.attempt`, its stdout and stderr appended
    /// to `record.log` (the previous attempt's log is moved to `<log>.<attempt>` first).
    pub(crate) fn start(&self, slot: usize, cmd: Command, record: Record) -> Result<u32> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Req::Start {
                slot,
                cmd: Box::new(cmd),
                record,
                reply,
            })
            .map_err(|_| anyhow!("the lab's supervisor thread is gone"))?;
        rx.recv_timeout(REPLY)
            .map_err(|_| anyhow!("the supervisor did not answer"))?
    }

    /// Kills member `slot` (SIGKILL) and records it exited; false if it was not running.
    pub(crate) fn stop(&self, slot: usize) -> Result<bool> {
        self.stop_with(slot, None, None)
    }

    /// Stops member `slot`'s container `id` as the kubelet kills a container: SIGTERM, `grace`
    /// to exit, then SIGKILL; false if that container was not running. The supervisor goes on
    /// serving the other members meanwhile.
    pub(crate) fn terminate(&self, slot: usize, id: &str, grace: Duration) -> Result<bool> {
        self.stop_with(slot, Some(grace), Some(id.to_string()))
    }

    /// Records `created` (ns since the epoch) as the creation and start time of member `slot`'s
    /// attempt `attempt`, what crictl then reports (`Lab::age`).
    pub(crate) fn set_created(&self, slot: usize, attempt: u32, created: u128) -> Result<()> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Req::SetCreated {
                slot,
                attempt,
                created,
                reply,
            })
            .map_err(|_| anyhow!("the lab's supervisor thread is gone"))?;
        rx.recv_timeout(REPLY)
            .map_err(|_| anyhow!("the supervisor did not answer"))?
    }

    fn stop_with(
        &self,
        slot: usize,
        grace: Option<Duration>,
        only: Option<String>,
    ) -> Result<bool> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Req::Stop {
                slot,
                grace,
                only,
                reply,
            })
            .map_err(|_| anyhow!("the lab's supervisor thread is gone"))?;
        rx.recv_timeout(REPLY + grace.unwrap_or_default())
            .map_err(|_| anyhow!("the supervisor did not answer"))
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Running {
    child: Child,
    record: Record,
    /// A graceful stop under way: SIGKILL at this deadline unless it exited; then the replies.
    terminating: Option<(Instant, Vec<mpsc::Sender<bool>>)>,
}

fn spawn(mut cmd: Command, record: &mut Record, previous: Option<&mut Record>) -> Result<Child> {
    if let Some(prev) = previous {
        if prev.log == record.log && record.log.exists() {
            let moved = record.log.with_extension(format!("log.{}", prev.attempt));
            fs::rename(&record.log, &moved)?;
            prev.log = moved;
            prev.write()?;
        }
    }
    let log = File::options()
        .create(true)
        .append(true)
        .open(&record.log)
        .with_context(|| format!("opening {}", record.log.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .env("ETCDNET_LAB_MEMBER", &record.marker);
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
    record.created = now_ns();
    let child = cmd.spawn().context("starting etcd")?;
    record.pid = child.id();
    record.start_ticks = start_ticks(record.pid).unwrap_or_default();
    record.write()?;
    Ok(child)
}

/// Field 22 of `/proc/<pid>/stat` (after the command name, which may hold blanks).
fn start_ticks(pid: u32) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// Kills slot's member now (SIGKILL to its group) and records it exited; false if none ran.
fn stop(
    running: &mut HashMap<usize, Running>,
    last: &mut HashMap<usize, Record>,
    slot: usize,
) -> bool {
    let Some(mut r) = running.remove(&slot) else {
        return false;
    };
    let status = kill_group(&mut r.child);
    r.record.finish(status);
    let _ = r.record.write();
    last.insert(slot, r.record);
    for reply in r.terminating.map(|t| t.1).unwrap_or_default() {
        let _ = reply.send(true);
    }
    true
}

fn run(rx: mpsc::Receiver<Req>) {
    let mut running: HashMap<usize, Running> = HashMap::new();
    // The last record of every slot, for log rotation and for a clean exit record.
    let mut last: HashMap<usize, Record> = HashMap::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Req::Start {
                slot,
                cmd,
                mut record,
                reply,
            }) => {
                // An exited member not reaped yet (a zombie: its /proc environ reads empty, so
                // the pods side already counts it stopped, e.g. `heal` right after a kubelet's
                // SIGTERM) is recorded exited first, as the loop below would 100 ms later.
                reap_dead(&mut running, &mut last);
                let result = match running.entry(slot) {
                    Entry::Occupied(_) => Err(anyhow!("member {slot} is already running")),
                    Entry::Vacant(free) => {
                        spawn(*cmd, &mut record, last.get_mut(&slot)).map(|child| {
                            let pid = child.id();
                            last.insert(slot, record.clone());
                            free.insert(Running {
                                child,
                                record,
                                terminating: None,
                            });
                            pid
                        })
                    }
                };
                let _ = reply.send(result);
            }
            Ok(Req::Stop {
                slot,
                grace,
                only,
                reply,
            }) => match (running.get_mut(&slot), grace) {
                (Some(r), _) if only.as_ref().is_some_and(|id| *id != r.record.id) => {
                    let _ = reply.send(false);
                }
                (Some(r), Some(grace)) => {
                    // SIGTERM now; the loop below reaps it or SIGKILLs it at the deadline.
                    match &mut r.terminating {
                        Some((_, replies)) => replies.push(reply),
                        None => {
                            // SAFETY: kill(2) on the child we own and have not reaped.
                            unsafe { libc::kill(r.child.id() as libc::pid_t, libc::SIGTERM) };
                            r.terminating = Some((Instant::now() + grace, vec![reply]));
                        }
                    }
                }
                _ => {
                    let _ = reply.send(stop(&mut running, &mut last, slot));
                }
            },
            Ok(Req::SetCreated {
                slot,
                attempt,
                created,
                reply,
            }) => {
                let result = match running.get_mut(&slot) {
                    Some(r) if r.record.attempt == attempt => {
                        r.record.created = created;
                        last.insert(slot, r.record.clone());
                        r.record.write()
                    }
                    _ => match last.get_mut(&slot) {
                        Some(rec) if rec.attempt == attempt => {
                            rec.created = created;
                            rec.write()
                        }
                        _ => Err(anyhow!("member {slot} has no attempt {attempt}")),
                    },
                };
                let _ = reply.send(result);
            }
            Ok(Req::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                let slots: Vec<usize> = running.keys().copied().collect();
                for slot in slots {
                    stop(&mut running, &mut last, slot);
                }
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        reap_dead(&mut running, &mut last);
        // A graceful stop past its grace period: SIGKILL, as the runtime does.
        let overdue: Vec<usize> = running
            .iter()
            .filter(|(_, r)| {
                r.terminating
                    .as_ref()
                    .is_some_and(|t| Instant::now() >= t.0)
            })
            .map(|(slot, _)| *slot)
            .collect();
        for slot in overdue {
            stop(&mut running, &mut last, slot);
        }
    }
}

/// Members that died on their own (or after a graceful stop's SIGTERM): recorded exited, as
/// the runtime would, and their stop requests answered.
fn reap_dead(running: &mut HashMap<usize, Running>, last: &mut HashMap<usize, Record>) {
    let dead: Vec<(usize, ExitStatus)> = running
        .iter_mut()
        .filter_map(|(slot, r)| r.child.try_wait().ok().flatten().map(|s| (*slot, s)))
        .collect();
    for (slot, status) in dead {
        if let Some(mut r) = running.remove(&slot) {
            r.record.finish(Some(status));
            let _ = r.record.write();
            last.insert(slot, r.record);
            for reply in r.terminating.map(|t| t.1).unwrap_or_default() {
                let _ = reply.send(true);
            }
        }
    }
}

/// The last `lines` lines of a member's log, for error messages.
pub(crate) fn log_tail(path: &std::path::Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl std::ops::Deref for Supervisor {
    type Target = Handle;
    fn deref(&self) -> &Handle {
        &self.handle
    }
}
