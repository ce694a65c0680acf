//! `Fault::SlowDisk`: a node's etcd whose every `fdatasync(2)` waits before it runs.
//!
//! strace's syscall tampering (`-e inject=fdatasync:delay_enter=<µs>`, strace ≥ 4.22) attached to
//! the running etcd and all its threads (`-f -p`): the WAL's and bbolt's syncs each take
//! [`crate::fault::SLOW_FDATASYNC`] longer, nothing else changes. strace stops the tracee at every
//! system call (`--seccomp-bpf` would stop it at the traced ones only, but its filter stays in
//! the process after strace detaches and turns every later fdatasync into ENOSYS: the host would
//! not be left as found). On heal strace gets SIGTERM, detaches and exits: the process runs on,
//! untraced, as before. A lab dropped with the fault in force kills strace the same way.

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::fault::SLOW_FDATASYNC;

/// A running strace holding one etcd's fdatasyncs.
pub(crate) struct Tracer {
    pub(crate) node: String,
    child: Child,
}

/// The `TracerPid:` of a `/proc/<pid>/status` (0 when untraced, `None` when absent).
pub(crate) fn tracer_pid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The threads of `pid` whose tracer is not `tracer` (none once strace holds them all).
fn untraced_threads(pid: u32, tracer: u32) -> Result<Vec<u32>> {
    let mut left = Vec::new();
    let tasks = fs::read_dir(format!("/proc/{pid}/task"))
        .with_context(|| format!("etcd (pid {pid}) is gone"))?;
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let status = fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if tracer_pid(&status) != Some(tracer) && !status.is_empty() {
            left.push(tid);
        }
    }
    Ok(left)
}

impl Tracer {
    /// Attaches strace to `pid` (every thread) and returns once every thread is held.
    pub(crate) fn attach(node: &str, pid: u32) -> Result<Tracer> {
        let mut c = Command::new("strace");
        c.args([
            "-qq",
            "-f",
            "-e",
            "trace=fdatasync",
            "-e",
            &format!(
                "inject=fdatasync:delay_enter={}",
                SLOW_FDATASYNC.as_micros()
            ),
            "-o",
            "/dev/null",
            "-p",
            &pid.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // A caller that blocks SIGTERM (`etcdnet-lab up` waits for it with sigwait) would pass
        // its mask on: strace could then never be asked to detach.
        // SAFETY: sigemptyset and sigprocmask are async-signal-safe; only the child is touched.
        unsafe {
            c.pre_exec(|| {
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c
            .spawn()
            .context("starting strace (apt-get install strace)")?;
        let mut tracer = Tracer {
            node: node.to_string(),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = tracer.child.try_wait()? {
                bail!("{node}: strace -p {pid} exited ({status}) before holding etcd");
            }
            if untraced_threads(pid, tracer.child.id())?.is_empty() {
                return Ok(tracer);
            }
            if Instant::now() >= deadline {
                bail!("{node}: strace did not hold every thread of etcd (pid {pid}) within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM: strace detaches from every thread and exits (SIGKILL after 5 s).
    pub(crate) fn detach(mut self) -> Result<()> {
        if self.stop() {
            Ok(())
        } else {
            bail!("{}: strace did not detach within 5 s (killed)", self.node)
        }
    }

    /// Whether strace exited by itself after SIGTERM (else it was killed).
    fn stop(&mut self) -> bool {
        if let Ok(Some(_)) = self.child.try_wait() {
            return true;
        }
        // SAFETY: kill(2) on our own child, not yet waited for.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill().ok();
        self.child.wait().ok();
        false
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::tracer_pid;

    #[test]
    fn tracer_pid_is_read_from_status() {
        let status = "Name:\tetcd\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\nTracerPid:\t77\nUid:\t0\t0\t0\t0\n";
        assert_eq!(tracer_pid(status), Some(77));
        assert_eq!(tracer_pid("Name:\tetcd\nTracerPid:\t0\n"), Some(0));
        assert_eq!(tracer_pid("Name:\tetcd\n"), None);
    }
}
