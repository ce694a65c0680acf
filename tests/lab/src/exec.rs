//! Running a command to completion with a deadline: the one way the lab waits for a process.

use std::fmt;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The error [`run`] (and so [`crate::Lab::exec`]) returns when the deadline passed: the whole
/// process group was killed. Downcast an `anyhow::Error` to it to tell a timeout from a failure
/// to start; `partial` holds what the command had printed by then.
#[derive(Debug)]
pub struct ExecTimeout {
    pub program: String,
    pub after: Duration,
    pub partial: Output,
}

impl fmt::Display for ExecTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} did not finish within {:?} and was killed; it had printed: {}{}",
            self.program,
            self.after,
            String::from_utf8_lossy(&self.partial.stdout),
            String::from_utf8_lossy(&self.partial.stderr)
        )
    }
}

impl std::error::Error for ExecTimeout {}

/// The nice value of everything the lab runs as its machines (etcd, the kubelet stand-ins,
/// sshd, the pods and commands on a node or on the jumpbox): ahead of the test processes
/// (nice 0). A control-plane VM has CPUs of its own; here two cores are shared with every other
/// test, and a member they starve misses heartbeats (then judged, rightly, a slow disk), a
/// probe's curl its connect timeout.
pub(crate) const MACHINE_NICE: libc::c_int = -10;

/// Makes `cmd` run at [`MACHINE_NICE`]; best effort: without CAP_SYS_NICE it keeps its nice.
pub(crate) fn as_machine(cmd: &mut Command) {
    // SAFETY: setpriority is async-signal-safe; it only touches the forked child.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, MACHINE_NICE);
            Ok(())
        });
    }
}

/// Puts the calling thread at [`MACHINE_NICE`] (Linux keeps a nice value per thread), as
/// [`as_machine`] does for a process.
pub(crate) fn this_thread_as_machine() {
    // SAFETY: plain syscalls on this thread's own id.
    unsafe {
        libc::setpriority(
            libc::PRIO_PROCESS,
            libc::gettid() as libc::id_t,
            MACHINE_NICE,
        );
    }
}

fn reader<R: Read + Send + 'static>(mut r: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Kills the process group of `child` (the command was made a group leader), then reaps it.
pub(crate) fn kill_group(child: &mut Child) -> Option<ExitStatus> {
    let pid = child.id() as libc::pid_t;
    // SAFETY: plain syscalls on a pid we own; errors (already gone) are harmless.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
    wait_deadline(child, Duration::from_secs(5))
}

/// `try_wait` until `limit`; `None` if the process is still there.
pub(crate) fn wait_deadline(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// Runs `cmd` with `stdin` (or an empty stdin), collecting stdout and stderr, for at most
/// `timeout`. The command becomes a process-group leader so a timeout kills everything it
/// started. A finished command is `Ok` whatever its exit status; a timeout is an [`ExecTimeout`].
pub fn run(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Result<Output> {
    let program = format!("{:?}", cmd.get_program());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let mut child = cmd.spawn().with_context(|| format!("starting {program}"))?;
    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let data = data.to_vec();
        // A writer thread: a command that does not read its stdin must not block us.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    let out_rx = reader(child.stdout.take().context("stdout")?);
    let err_rx = reader(child.stderr.take().context("stderr")?);
    let status = wait_deadline(&mut child, timeout);
    let (status, timed_out) = match status {
        Some(s) => (s, false),
        None => (
            kill_group(&mut child).unwrap_or_else(|| ExitStatus::from_raw_signal(9)),
            true,
        ),
    };
    // A grandchild that left the group could hold the pipes open: bound the wait for them too.
    let grace = Duration::from_secs(if timed_out { 1 } else { 5 });
    let output = Output {
        status,
        stdout: out_rx.recv_timeout(grace).unwrap_or_default(),
        stderr: err_rx.recv_timeout(grace).unwrap_or_default(),
    };
    if timed_out {
        return Err(ExecTimeout {
            program,
            after: timeout,
            partial: output,
        }
        .into());
    }
    Ok(output)
}

trait FromRawSignal {
    fn from_raw_signal(sig: i32) -> Self;
}

impl FromRawSignal for ExitStatus {
    fn from_raw_signal(sig: i32) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw(sig)
    }
}

/// Runs `cmd` and fails unless it exits 0; returns its stdout.
pub(crate) fn checked(cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Result<String> {
    let what = format!("{cmd:?}");
    let out = run(cmd, stdin, timeout)?;
    if !out.status.success() {
        anyhow::bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
