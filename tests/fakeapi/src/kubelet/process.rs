//! The process side of a lab pod: spawn with stdout and stderr on one pipe (so the log keeps
//! their interleaving, as a container runtime's log does), wait without reaping, signal the whole
//! process group, reap, and find what is left alive.
//!
//! Only the pod's own thread signals and reaps its process: a pid is never reused before its
//! owner reaps it, so signalling the group before reaping can never hit a stranger.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The PATH of a node (and of a container without its own): what `view.sh` sets too.
pub const NODE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Starts `cmd` with stdin closed and stdout + stderr on one pipe fed to `sink`, chunk by chunk,
/// from a reader thread. Returns the child and a receiver that fires once the pipe is at EOF.
pub fn spawn(
    mut cmd: Command,
    mut sink: impl FnMut(&[u8]) + Send + 'static,
) -> Result<(Child, mpsc::Receiver<()>)> {
    let (mut reader, writer) = std::io::pipe().context("creating the log pipe")?;
    cmd.stdin(Stdio::null())
        .stdout(writer.try_clone().context("duplicating the log pipe")?)
        .stderr(writer);
    // SAFETY: prctl is async-signal-safe; it only marks the child. If this process dies, so does
    // the pod (as a node's containers die with the node), instead of running on unowned.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    let child = cmd.spawn().context("starting the pod's command")?;
    // The Command holds our copies of the pipe's write end: without closing them the reader
    // would never see EOF.
    drop(cmd);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("kubelet-log".into())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink(&buf[..n]),
                }
            }
            let _ = done_tx.send(());
        })
        .context("starting the log reader")?;
    Ok((child, done_rx))
}

/// True once the process has exited (it stays a zombie: `WNOWAIT` does not reap it).
pub fn exited(child: &Child) -> bool {
    // SAFETY: waitid on our own child with a zeroed siginfo; WNOHANG never blocks.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r != 0 || info.si_pid() != 0
    }
}

/// Waits (bounded) until the pod's command itself runs: the lab's view script has set up the
/// node's mounts and `chroot`ed, so the process's root is no longer the host's `/`. Only then
/// is the container "started", as a runtime reports it after its own setup.
pub fn wait_started(child: &Child, limit: Duration) {
    let root = format!("/proc/{}/root", child.id());
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !exited(child) {
        match std::fs::read_link(&root) {
            Ok(p) if p != Path::new("/") => return,
            Err(_) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Sends `sig` to the pod's process group (the command is a group leader). Call only before
/// reaping, so the group id cannot belong to anyone else.
pub fn signal_group(child: &Child, sig: libc::c_int) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: plain kill(2) on a group we lead and have not reaped; ESRCH is harmless.
    unsafe {
        libc::kill(-pid, sig);
    }
}

/// Kills what is left of the group, then reaps the leader (bounded: a process stuck in the
/// kernel is left to its parent-death signal rather than hanging the kubelet).
pub fn finish(child: &mut Child) -> Option<ExitStatus> {
    signal_group(child, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !exited(child) {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().ok()
}

/// The exit code a container runtime reports: the code, or 128 + the signal that killed it.
pub fn exit_code(status: Option<ExitStatus>) -> i32 {
    match status {
        Some(s) => s
            .code()
            .or_else(|| s.signal().map(|sig| 128 + sig))
            .unwrap_or(137),
        None => 137,
    }
}

/// Where `argv[0]` is, as the runtime's exec would find it; Err is runc's message.
pub fn check_executable(argv0: &str) -> Result<(), String> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let prefix = "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec:";
    if argv0.contains('/') {
        if is_exec(Path::new(argv0)) {
            return Ok(());
        }
        return Err(format!(
            "{prefix} \"{argv0}\": stat {argv0}: no such file or directory: unknown"
        ));
    }
    if !argv0.is_empty()
        && NODE_PATH
            .split(':')
            .any(|d| is_exec(&Path::new(d).join(argv0)))
    {
        return Ok(());
    }
    Err(format!(
        "{prefix} \"{argv0}\": executable file not found in $PATH: unknown"
    ))
}

/// Pids of live (not zombie) processes in any of `groups`, read from /proc.
pub fn alive_in_groups(groups: &[u32]) -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(pgrp)) = (
            fields.first(),
            fields.get(2).and_then(|p| p.parse::<u32>().ok()),
        ) else {
            continue;
        };
        if *state != "Z" && groups.contains(&pgrp) {
            out.push((pgrp, pid));
        }
    }
    out
}

/// Splits off the longest valid UTF-8 prefix of `pending` as text; an incomplete character at
/// the end waits for the next chunk, invalid bytes become U+FFFD.
pub fn take_text(pending: &mut Vec<u8>, at_eof: bool) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(pending) {
            Ok(s) => {
                out.push_str(s);
                pending.clear();
                return out;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.push_str(std::str::from_utf8(&pending[..good]).expect("checked"));
                match e.error_len() {
                    Some(bad) => {
                        out.push('\u{fffd}');
                        pending.drain(..good + bad);
                    }
                    None if at_eof => {
                        out.push('\u{fffd}');
                        pending.clear();
                        return out;
                    }
                    None => {
                        pending.drain(..good);
                        return out;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_chunks() {
        let mut p = "é".as_bytes()[..1].to_vec();
        assert_eq!(take_text(&mut p, false), "");
        p.extend_from_slice(&"é".as_bytes()[1..]);
        p.extend_from_slice(b"a\xffb");
        assert_eq!(take_text(&mut p, false), "éa\u{fffd}b");
        let mut q = vec![0xe2, 0x82];
        assert_eq!(take_text(&mut q, true), "\u{fffd}");
    }

    #[test]
    fn executables_are_found_like_runc_does() {
        assert!(check_executable("sh").is_ok());
        assert!(check_executable("/bin/sh").is_ok());
        let e = check_executable("no-such-tool").unwrap_err();
        assert!(
            e.ends_with("exec: \"no-such-tool\": executable file not found in $PATH: unknown"),
            "{e}"
        );
        assert!(check_executable("/nope")
            .unwrap_err()
            .contains("stat /nope"));
    }
}
