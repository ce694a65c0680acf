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

/// [`MACHINE_NICE`] as `/proc/<pid>/autogroup` takes it.
const MACHINE_NICE_TEXT: &[u8] = b"-10";

/// Makes `cmd` run as a machine: in a session of its own (so a process group of its own, which
/// a timeout kills) and at [`MACHINE_NICE`], both as a process and as a session. Best effort:
/// without CAP_SYS_NICE it keeps its nice.
///
/// Why the session: with autogroups (`CONFIG_SCHED_AUTOGROUP`, on by default where the kernel
/// has it, `kernel.sched_autogroup_enabled`), the scheduler first shares the CPUs between
/// sessions, each as one entity of the weight of its autogroup's nice, and a process's own nice
/// only ranks it within its session (sched(7), "The autogroup feature"; kernel/sched/autogroup.c).
/// A member at nice -10 in the test's session then waits behind every other session's work,
/// however many processes that is (measured on the shared 2-core machine, a builder in each of
/// ten sessions: an idle 3-member lab's leader late with its heartbeats 15 times in 35 s, by up to
/// 300 ms). Its own session at autogroup nice -10 puts it ahead of them all, as a process's nice
/// puts it ahead of its own session's. Where tasks are in a cgroup (systemd services) autogroups
/// do not apply and the process's nice is what counts.
pub fn as_machine(cmd: &mut Command) {
    // SAFETY: setsid, setpgid, open, write, close and setpriority are async-signal-safe; they
    // only touch the forked child.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() >= 0 {
                // The new session's autogroup (sched(7): setsid creates one). No such file
                // without CONFIG_SCHED_AUTOGROUP: nothing to rank.
                let fd = libc::open(
                    c"/proc/self/autogroup".as_ptr(),
                    libc::O_WRONLY | libc::O_CLOEXEC,
                );
                if fd >= 0 {
                    libc::write(
                        fd,
                        MACHINE_NICE_TEXT.as_ptr().cast(),
                        MACHINE_NICE_TEXT.len(),
                    );
                    libc::close(fd);
                }
            } else if libc::getpgrp() != libc::getpid() {
                // A command made a group leader before this hook cannot start a session
                // (setsid(2), EPERM); one that is neither gets its group all the same.
                libc::setpgid(0, 0);
            }
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
    .stderr(Stdio::piped());
    // A process-group leader (a machine's command already is one, of its own session: see
    // `as_machine`, whose hook runs before this one).
    // SAFETY: getpgrp, getpid and setpgid are async-signal-safe; only the child is touched.
    unsafe {
        cmd.pre_exec(|| {
            if libc::getpgrp() != libc::getpid() && libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nice_text_is_the_nice() {
        assert_eq!(
            MACHINE_NICE_TEXT,
            MACHINE_NICE.to_string().as_bytes(),
            "what /proc/<pid>/autogroup is given"
        );
    }

    /// A machine's command leads a session of its own (so its own group, which `run` kills on a
    /// timeout), at the machines' nice, and as root its autogroup too; a plain command run by
    /// `run` leads a group in the caller's session.
    #[test]
    fn a_machine_has_a_session_of_its_own_at_the_machines_nice() {
        let probe = "read -r _ _ _ _ pgrp sid _ </proc/$$/stat; \
                     echo $$ $pgrp $sid $(cut -d' ' -f19 /proc/$$/stat); \
                     cat /proc/$$/autogroup 2>/dev/null || echo none";
        let mut machine = Command::new("sh");
        machine.args(["-c", probe]);
        as_machine(&mut machine);
        let out = run(machine, None, Duration::from_secs(10)).unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        let ids: Vec<i64> = (lines.next().unwrap().split(' '))
            .map(|f| f.parse().unwrap())
            .collect();
        let (pid, pgrp, sid, nice) = (ids[0], ids[1], ids[2], ids[3]);
        assert_eq!((pgrp, sid), (pid, pid), "{text}");
        // SAFETY: a plain syscall without arguments.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            assert_eq!(nice, i64::from(MACHINE_NICE), "{text}");
            let autogroup = lines.next().unwrap();
            assert!(
                autogroup == "none" || autogroup.ends_with(" nice -10"),
                "{text}"
            );
        }

        let mut plain = Command::new("sh");
        plain.args(["-c", probe]);
        let out = run(plain, None, Duration::from_secs(10)).unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ids: Vec<i64> = (text.lines().next().unwrap().split(' '))
            .map(|f| f.parse().unwrap())
            .collect();
        assert_eq!(ids[1], ids[0], "its own group: {text}");
        assert_ne!(ids[2], ids[0], "the caller's session: {text}");
    }
}
