//! The kubelet stand-in: one thread per node that does to the node's etcd static pod what the
//! kubelet does ([`KubeletConfig`] cites the sources), on lab-scaled durations.
//!
//! - **Restart with back-off.** When the container has exited, the next one is started (the
//!   next attempt, a new container id) unless the pod is in its crash-loop back-off: the logic of
//!   `doBackOff` (pkg/kubelet/kuberuntime/kuberuntime_manager.go) on client-go's
//!   `flowcontrol.Backoff`: measured from the exit, the first restart at once, then 10 s,
//!   doubling, capped at 5 min, and a fresh start once a container ran 2 × the cap.
//! - **Probes.** kubeadm's startup probe until it first succeeds, then the liveness probe, each
//!   an HTTP GET on `http://127.0.0.1:2381<path>` from the node's network namespace (etcd's
//!   metrics listener, `--listen-metrics-urls`), success = status 200–399 within the timeout,
//!   after the initial delay from the container's start, every period. `failure_threshold`
//!   failures in a row kill the container (SIGTERM, the grace period, SIGKILL), which the
//!   restart rule then restarts with back-off.
//!
//! Restarts and kills are conditional on the container the thread saw, so a test's own
//! `restart_etcd`, `heal` or `replace_member` never races it into a double start.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::config::{KubeletConfig, ProbeConfig};
use crate::node::Node;
use crate::pods::{ContainerKey, Pods};

/// How often a kubelet thread looks at its pod (the real one relists every second).
const TICK: Duration = Duration::from_millis(50);

/// client-go's `flowcontrol.Backoff` for one key (the pod's etcd container).
#[derive(Debug, Clone)]
pub(crate) struct BackOff {
    initial: Duration,
    max: Duration,
    /// (current back-off, when it was last moved on).
    entry: Option<(Duration, Instant)>,
}

impl BackOff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        BackOff {
            initial,
            max,
            entry: None,
        }
    }

    /// `hasExpired`: "consider stable if it's ok for twice the maxDuration".
    fn expired(&self, event: Instant, last: Instant) -> bool {
        event.saturating_duration_since(last) > self.max * 2
    }

    /// `IsInBackOffSince(key, finishedAt)`: still waiting after an exit at `event`.
    pub(crate) fn in_backoff_since(&self, event: Instant, now: Instant) -> bool {
        match self.entry {
            None => false,
            Some((_, last)) if self.expired(event, last) => false,
            Some((backoff, _)) => now.saturating_duration_since(event) < backoff,
        }
    }

    /// `Next(key, finishedAt)`: the restart happens now; the next wait doubles (or starts over).
    pub(crate) fn next(&mut self, event: Instant, now: Instant) {
        let backoff = match self.entry {
            Some((b, last)) if !self.expired(event, last) => (b * 2).min(self.max),
            _ => self.initial,
        };
        self.entry = Some((backoff, now));
    }
}

/// The probe state of one container.
struct Probed {
    key: ContainerKey,
    started: Instant,
    startup_done: bool,
    failures: u32,
    next_probe: Instant,
    killed: bool,
}

/// The lab's kubelet threads.
pub(crate) struct Kubelets {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Kubelets {
    pub(crate) fn start(
        lab_id: &str,
        nodes: &[Node],
        pods: &Arc<Pods>,
        cfg: &KubeletConfig,
    ) -> Result<Kubelets> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut k = Kubelets {
            stop: stop.clone(),
            threads: Vec::new(),
        };
        for (i, node) in nodes.iter().enumerate() {
            let netns = File::open(format!("/run/netns/{}", node.netns))
                .with_context(|| format!("opening {}'s netns", node.name))?;
            let (pods, cfg, stop) = (pods.clone(), cfg.clone(), stop.clone());
            let name = node.name.clone();
            let t = std::thread::Builder::new()
                .name(format!("{lab_id}-kubelet-{}", node.name))
                .spawn(move || {
                    // SAFETY: setns on a namespace fd we hold; affects this thread only, which
                    // exists for this node alone, so its probes connect from the node's network.
                    if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                        let e = std::io::Error::last_os_error();
                        pods.note(i, format!("kubelet stand-in did not start: setns: {e}"));
                        return;
                    }
                    drop(netns);
                    // A VM's kubelet has CPUs of its own: its probes must not time out because
                    // other tests compute.
                    crate::exec::this_thread_as_machine();
                    run(i, &name, &pods, &cfg, &stop);
                })?;
            k.threads.push(t);
        }
        Ok(k)
    }

    /// Tells every kubelet thread to stop at its next look (they start nothing after it).
    pub(crate) fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops every kubelet thread and waits for them: each within a probe's timeout, or, when
    /// it is stopping a container, until the supervisor has (stop the supervisor first to cut
    /// a long grace period short).
    pub(crate) fn shutdown(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Kubelets {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn run(i: usize, node: &str, pods: &Pods, cfg: &KubeletConfig, stop: &AtomicBool) {
    let mut backoff = BackOff::new(cfg.backoff_initial, cfg.backoff_max);
    let mut generation = None;
    let mut probed: Option<Probed> = None;
    // The container seen exited, and when that was first seen (its FinishedAt, to within a tick).
    let mut exited: Option<(ContainerKey, Instant)> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(TICK);
        let (key, running, paused) = pods.current(i);
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Some(key) = key else { continue };
        if paused {
            probed = None;
            continue;
        }
        // A new pod (a replaced member) has a back-off of its own: the key is the pod's UID.
        if generation != Some(key.0) {
            generation = Some(key.0);
            backoff = BackOff::new(cfg.backoff_initial, cfg.backoff_max);
        }
        let now = Instant::now();
        if running {
            let p = match &mut probed {
                Some(p) if p.key == key => p,
                _ => probed.insert(Probed {
                    key,
                    started: now,
                    startup_done: false,
                    failures: 0,
                    next_probe: now + cfg.startup.initial_delay,
                    killed: false,
                }),
            };
            if p.killed || now < p.next_probe {
                continue;
            }
            let (spec, which) = if p.startup_done {
                (&cfg.liveness, "Liveness")
            } else {
                (&cfg.startup, "Startup")
            };
            // The prober worker ticks every period, whatever a probe took.
            p.next_probe += spec.period;
            if p.next_probe < now {
                p.next_probe = now + spec.period;
            }
            match http_probe(spec) {
                Ok(()) => {
                    p.failures = 0;
                    if !p.startup_done {
                        p.startup_done = true;
                        // The liveness worker waits its own initial delay from the start.
                        p.next_probe = (p.started + cfg.liveness.initial_delay).max(p.next_probe);
                    }
                }
                Err(why) => {
                    p.failures += 1;
                    if p.failures >= spec.failure_threshold {
                        pods.note(
                            i,
                            format!(
                                "{node}: attempt {}: {which} probe failed {} times ({why}): \
                                 Container etcd failed {} probe, will be restarted",
                                key.1,
                                p.failures,
                                which.to_lowercase()
                            ),
                        );
                        p.killed = true;
                        if let Err(e) = pods.kill_if(i, key, cfg.termination_grace) {
                            pods.note(i, format!("{node}: kill failed: {e:#}"));
                        }
                    }
                }
            }
        } else {
            let finished = match exited {
                Some((k, t)) if k == key => t,
                _ => {
                    exited = Some((key, now));
                    now
                }
            };
            if backoff.in_backoff_since(finished, now) {
                continue;
            }
            backoff.next(finished, now);
            match pods.restart_exited(i, key) {
                Ok(true) => pods.note(
                    i,
                    format!("{node}: restarted etcd after attempt {} exited", key.1),
                ),
                Ok(false) => {}
                Err(e) => pods.note(i, format!("{node}: restart failed: {e:#}")),
            }
        }
    }
}

/// kubelet's httpGet probe (pkg/probe/http): a GET with `User-Agent: kube-probe/<version>`,
/// success for a status from 200 to 399, everything within the timeout.
fn http_probe(spec: &ProbeConfig) -> std::result::Result<(), String> {
    let deadline = Instant::now() + spec.timeout;
    let addr = SocketAddr::from(([127, 0, 0, 1], 2381));
    let mut s = TcpStream::connect_timeout(&addr, spec.timeout).map_err(|e| e.to_string())?;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| "timeout".to_string())
    };
    s.set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: 127.0.0.1:2381\r\nUser-Agent: kube-probe/1.30\r\nAccept: */*\r\n\
         Connection: close\r\n\r\n",
        spec.path
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        s.set_read_timeout(Some(left()?))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(e.to_string()),
        }
        if buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() > 4096 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {:?}", text.lines().next()))?;
    if (200..400).contains(&status) {
        Ok(())
    } else {
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        Err(format!(
            "HTTP probe failed with statuscode: {status} {body}"
        ))
    }
}

impl Pods {
    /// Appends a kubelet event to the node's list ([`crate::Lab::kubelet_events`]).
    pub(crate) fn note(&self, i: usize, event: String) {
        self.members()[i].kubelet_events.push(event);
    }
}

/// For error messages about a node without a kubelet.
pub(crate) fn no_kubelet(node: &str) -> anyhow::Error {
    anyhow!("{node}: the lab has no kubelet stand-in (LabConfig::kubelet)")
}

#[cfg(test)]
mod tests {
    use super::BackOff;
    use std::time::{Duration, Instant};

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// A container that exits at once each time: restarts at 0, 10, 20, 40, 80, 160, 300, 300 s
    /// after each exit, as kubelet's CrashLoopBackOff does.
    #[test]
    fn back_off_doubles_from_10s_to_the_5min_cap() {
        let t0 = Instant::now();
        let mut b = BackOff::new(s(10), s(300));
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..8 {
            let exited = now;
            let mut waited = 0;
            while b.in_backoff_since(exited, now) {
                now += s(1);
                waited += 1;
            }
            b.next(exited, now);
            waits.push(waited);
        }
        assert_eq!(waits, [0, 10, 20, 40, 80, 160, 300, 300]);
    }

    /// A container that ran longer than twice the cap starts over: restarted at once, then 10 s.
    #[test]
    fn back_off_starts_over_after_a_run_of_twice_the_cap() {
        let t0 = Instant::now();
        let mut b = BackOff::new(s(10), s(300));
        b.next(t0, t0);
        b.next(t0 + s(1), t0 + s(11));
        b.next(t0 + s(12), t0 + s(32)); // back-off now 40 s
        let exit = t0 + s(32) + s(601);
        assert!(!b.in_backoff_since(exit, exit), "a 10 min run resets");
        b.next(exit, exit);
        assert!(b.in_backoff_since(exit + s(1), exit + s(10)));
        assert!(!b.in_backoff_since(exit + s(1), exit + s(11)));
        // Whereas a short run keeps doubling.
        let mut c = BackOff::new(s(10), s(300));
        c.next(t0, t0);
        c.next(t0 + s(5), t0 + s(15));
        assert!(c.in_backoff_since(t0 + s(20), t0 + s(39)));
        assert!(!c.in_backoff_since(t0 + s(20), t0 + s(40)));
    }
}
