//! `etcdnet-lab`: bring a lab up by hand, inject faults into it, sweep leftovers.
//!
//! ```text
//! etcdnet-lab up [--nodes N] [--etcd 3.4|3.5] [--logger zap|text|mixed] [--kubelet SCALE] [--apiserver]
//!                 [--dir D] [--fault F]...
//! etcdnet-lab fault <fault>... [--lab ID]     (drop-all-peers, isolate:cp3, block-ssh:cp1, ...)
//! etcdnet-lab heal [--lab ID]
//! etcdnet-lab sweep
//! etcdnet-lab capture-etcd-logs [--etcd 3.4|3.5] [--out D]
//! ```
//!
//! `up` prints the lab as JSON on stdout and keeps it until SIGINT or SIGTERM. It listens on a
//! Unix socket `<dir>/control.sock` where `fault` and `heal` (from another shell) send one line.
//! `capture-etcd-logs` regenerates the log fixtures tests/fixtures/etcd-logs/v3.4 and v3.5.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use etcdnet_lab::{EtcdVersion, Fault, KubeletConfig, Lab, LabConfig, Logger};

const USAGE: &str = "usage:
  etcdnet-lab up [--nodes N] [--etcd 3.4|3.5] [--logger zap|text|mixed] [--kubelet SCALE]
                 [--apiserver] [--dir D] [--fault F]...
      --kubelet SCALE: a kubelet stand-in per node, kubelet's and kubeadm's durations / SCALE
      --apiserver: a kube-apiserver stand-in per node (6443) and the VIP in front of them
                   (`vip` in the JSON: the host's 127.0.0.1:PORT)
  etcdnet-lab fault <fault>... [--lab ID]
  etcdnet-lab heal [--lab ID]
  etcdnet-lab sweep
  etcdnet-lab capture-etcd-logs [--etcd 3.4|3.5] [--out D]
      regenerates tests/fixtures/etcd-logs/v3.4 and v3.5 (their README), or writes D/v3.x;
      --etcd: that line only
faults: drop-all-peers, reject-all-peers, isolate:N, block-port:P, drop-one-way:FROM:TO,
        cut:A:B, drop-large-packets, guest-firewall:N, guest-firewall-uncounted:N,
        expired-peer-cert:N, expired-server-cert:N, stop-etcd:N, slow-disk:N, block-ssh:N,
        apiserver-crash-loop:N, expired-apiserver-cert:N, future-apiserver-cert:N, vip-down";

fn main() {
    if let Err(e) = run(std::env::args().skip(1).collect()) {
        eprintln!("etcdnet-lab: {e:#}");
        std::process::exit(1);
    }
}

fn value(args: &[String], i: &mut usize, flag: &str) -> Result<String> {
    *i += 1;
    args.get(*i)
        .cloned()
        .with_context(|| format!("{flag} needs a value"))
}

fn run(args: Vec<String>) -> Result<()> {
    let Some(cmd) = args.first() else {
        bail!("{USAGE}");
    };
    let mut cfg = LabConfig::default();
    let mut faults = Vec::new();
    let mut lab_id = None;
    let (mut lines, mut out) = (EtcdVersion::ALL.to_vec(), PathBuf::from(CAPTURE_DIR));
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--nodes" => cfg.nodes = value(&args, &mut i, a)?.parse()?,
            "--logger" => cfg.logger = value(&args, &mut i, a)?.parse::<Logger>()?,
            "--etcd" => {
                cfg.etcd = value(&args, &mut i, a)?.parse::<EtcdVersion>()?;
                lines = vec![cfg.etcd];
            }
            "--kubelet" => {
                cfg.kubelet = Some(KubeletConfig::scaled(value(&args, &mut i, a)?.parse()?))
            }
            "--apiserver" => cfg.apiserver = true,
            "--dir" => cfg.dir = Some(PathBuf::from(value(&args, &mut i, a)?)),
            "--fault" => faults.push(value(&args, &mut i, a)?.parse::<Fault>()?),
            "--lab" => lab_id = Some(value(&args, &mut i, a)?),
            "--out" => out = PathBuf::from(value(&args, &mut i, a)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ if cmd == "fault" && !a.starts_with('-') => faults.push(a.parse::<Fault>()?),
            _ => bail!("unexpected argument {a:?}\n{USAGE}"),
        }
        i += 1;
    }
    match cmd.as_str() {
        "up" => up(cfg, faults),
        "fault" if faults.is_empty() => bail!("which fault?\n{USAGE}"),
        "fault" => {
            for f in faults {
                send(lab_id.as_deref(), &format!("fault {f}"))?;
            }
            Ok(())
        }
        "heal" => send(lab_id.as_deref(), "heal"),
        "sweep" => {
            for id in Lab::sweep_stale()? {
                println!("removed {id}");
            }
            Ok(())
        }
        "capture-etcd-logs" => capture_etcd_logs(&lines, &out),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown command {other:?}\n{USAGE}"),
    }
}

/// Blocks SIGINT and SIGTERM in every thread (call before spawning any), then waits for one.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local set; pthread_sigmask on the calling thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn up(cfg: LabConfig, faults: Vec<Fault>) -> Result<()> {
    let set = block_signals();
    let apiserver = cfg.apiserver;
    let lab = Arc::new(Lab::start(cfg)?);
    if apiserver {
        lab.start_vip()?;
    }
    for f in faults {
        lab.inject(f)?;
    }
    let sock = lab.dir().join("control.sock");
    let listener =
        UnixListener::bind(&sock).with_context(|| format!("binding {}", sock.display()))?;
    let mut out = lab.describe();
    out["control"] = serde_json::json!(sock);
    out["started_in_ms"] = serde_json::json!(lab.started_in().as_millis());
    println!("{}", serde_json::to_string_pretty(&out)?);
    std::io::stdout().flush()?;
    // A weak handle: the lab must be dropped (torn down) by main, not kept alive by this thread.
    let server = Arc::downgrade(&lab);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let Some(lab) = server.upgrade() else { break };
            let _ = serve(&lab, conn);
        }
    });
    let mut sig: libc::c_int = 0;
    // SAFETY: waits on the set blocked above.
    unsafe {
        libc::sigwait(&set, &mut sig);
    }
    eprintln!("etcdnet-lab: signal {sig}, tearing down {}", lab.id());
    drop(lab);
    Ok(())
}

fn serve(lab: &Lab, conn: UnixStream) -> Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line)?;
    let line = line.trim();
    let result = if let Some(f) = line.strip_prefix("fault ") {
        f.parse::<Fault>().and_then(|f| lab.inject(f))
    } else if line == "heal" {
        lab.heal()
    } else {
        Err(anyhow::anyhow!("unknown request {line:?}"))
    };
    let mut w = &conn;
    match result {
        Ok(()) => writeln!(w, "ok"),
        Err(e) => writeln!(w, "error: {e:#}"),
    }?;
    Ok(())
}

/// Sends one request to a running `up`: the one with id `lab`, or the only one running.
fn send(lab: Option<&str>, request: &str) -> Result<()> {
    let socks: Vec<PathBuf> = Lab::running()
        .into_iter()
        .filter(|(id, _)| lab.is_none_or(|want| want == id))
        .map(|(_, dir)| dir.join("control.sock"))
        .filter(|p| p.exists())
        .collect();
    let sock = match socks.as_slice() {
        [one] => one,
        [] => bail!("no running `etcdnet-lab up` found"),
        _ => bail!("several labs are up: pick one with --lab ID"),
    };
    let mut conn =
        UnixStream::connect(sock).with_context(|| format!("connecting {}", sock.display()))?;
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    writeln!(conn, "{request}")?;
    let mut reply = String::new();
    BufReader::new(&conn).read_line(&mut reply)?;
    match reply.trim() {
        "ok" => Ok(()),
        other => bail!("{}", other.trim_start_matches("error: ")),
    }
}

/// Where `capture-etcd-logs` writes unless told: the repository's log fixtures.
const CAPTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/etcd-logs");

/// The faults whose logs `capture-etcd-logs` keeps: (file name prefix, fault, seconds from the
/// fault to the copy). The first four are the shared 3.4 captures' scenarios, 20 s as theirs;
/// the TLS ones log every rejected dial (~70 lines a second), so 10 s keeps them small.
const CAPTURES: [(&str, &str, u64); 6] = [
    ("drop-all-peers", "drop-all-peers", 20),
    ("reject-all-peers", "reject-all-peers", 20),
    ("cp3-isolated", "isolate:cp3", 20),
    ("cp2-etcd-stopped", "stop-etcd:cp2", 20),
    ("cp2-peer-cert-expired", "expired-peer-cert:cp2", 10),
    ("large-packets-dropped", "drop-large-packets", 20),
];

/// Regenerates the lab captures (tests/fixtures/etcd-logs/README.md): per fault, a fresh
/// 3-member lab of each etcd line (the lines at once), left 3 s after every member is healthy so
/// start-up has settled, the fault injected, and after the table's seconds every member's log as
/// `crictl logs` gives it (the current container's: a restarted member's new attempt), written
/// to `<out>/v<line>/<fault>-<member>.log`.
fn capture_etcd_logs(lines: &[EtcdVersion], out: &std::path::Path) -> Result<()> {
    for &etcd in lines {
        if let Some(why) = Lab::skip_reason_for(etcd) {
            bail!("the lab cannot run etcd {etcd} here: {why}");
        }
    }
    for (name, fault, wait_s) in CAPTURES {
        let fault: Fault = fault.parse()?;
        std::thread::scope(|s| {
            let runs: Vec<_> = (lines.iter())
                .map(|&etcd| {
                    let fault = fault.clone();
                    s.spawn(move || capture(etcd, fault, name, wait_s, out))
                })
                .collect();
            runs.into_iter()
                .try_for_each(|run| run.join().unwrap_or_else(|_| bail!("a capture panicked")))
        })?;
    }
    Ok(())
}

fn capture(
    etcd: EtcdVersion,
    fault: Fault,
    name: &str,
    wait_s: u64,
    out: &std::path::Path,
) -> Result<()> {
    let lab = Lab::start(LabConfig::with_etcd(etcd, 3))?;
    let release = etcd.release().map_err(anyhow::Error::msg)?;
    std::thread::sleep(Duration::from_secs(3));
    lab.inject(fault)?;
    std::thread::sleep(Duration::from_secs(wait_s));
    let dir = out.join(format!("v{etcd}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for node in lab.nodes() {
        // The log must be this line's: the file is named after it.
        let log = std::fs::read_to_string(node.log_file())?;
        if !log.contains(&format!("\"etcd-version\":\"{release}\"")) {
            bail!("{}: its log is not etcd {release}'s", node.name);
        }
        let file = dir.join(format!("{name}-{}.log", node.name));
        std::fs::write(&file, log).with_context(|| format!("writing {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}
