//! Host loopback ports made reachable from the switch namespace (the admin machine's network).
//!
//! The plugin run with `--via ssh` must reach the nodes' port 22 (only the switch namespace
//! does) and the fake Supervisor API, which listens on the *host's* 127.0.0.1. Rather than a link
//! between the host and the switch (host addresses and routes, and a server that would have to
//! listen beyond loopback), the lab listens on 127.0.0.1:PORT *inside* the switch namespace and
//! relays each connection to 127.0.0.1:PORT on the host. The kubeconfig a fake API writes
//! (`https://127.0.0.1:PORT`) therefore works unchanged from the host and from
//! [`crate::Lab::admin_command`], and nothing of the host's network changes.
//!
//! The listening socket is made by a short-lived thread that enters the switch namespace with
//! setns(2) (a socket keeps the namespace it was created in); the relaying threads stay in the
//! host's. A relayed port behaves like the server for everything above TCP (answers, silence,
//! slowness). One difference: when nothing listens on the host port, the switch side still
//! accepts and then closes at once (the client sees an empty reply or a reset, not "connection
//! refused"); to test a refused API, do not forward that port.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

type Conns = Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>;

/// One relayed port.
pub(crate) struct Forward {
    pub port: u16,
    listener: Arc<TcpListener>,
    stop: Arc<AtomicBool>,
    conns: Conns,
    thread: Option<JoinHandle<()>>,
}

/// Binds `addr` inside network namespace `netns` (a name under /run/netns).
fn bind_in_netns(netns: &str, addr: SocketAddr) -> Result<TcpListener> {
    let path = format!("/run/netns/{netns}");
    let ns = File::open(&path).with_context(|| format!("opening {path}"))?;
    let netns = netns.to_string();
    // A thread of its own: setns changes the calling thread only, and this one ends right after.
    std::thread::spawn(move || -> Result<TcpListener> {
        // SAFETY: setns on a namespace fd we hold open; affects this thread only.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error()).context("setns into the switch namespace");
        }
        TcpListener::bind(addr).with_context(|| format!("binding {addr} in {netns}"))
    })
    .join()
    .map_err(|_| anyhow!("the bind thread panicked"))?
}

pub(crate) fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    // Pass the end of one direction on (HTTP clients half-close), then let the other finish.
    let _ = to.shutdown(Shutdown::Write);
}

fn relay(accepted: TcpStream, port: u16, conns: &Conns, id: u64) {
    let upstream = match TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(5),
    ) {
        Ok(s) => s,
        // Nothing listens on the host: close, as documented above.
        Err(_) => return,
    };
    let _ = accepted.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (Ok(a2), Ok(u2), Ok(a3), Ok(u3)) = (
        accepted.try_clone(),
        upstream.try_clone(),
        accepted.try_clone(),
        upstream.try_clone(),
    ) else {
        return;
    };
    conns
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, (a3, u3));
    let back = std::thread::spawn(move || pipe(u2, a2));
    pipe(accepted, upstream);
    let _ = back.join();
    conns.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}

impl Forward {
    /// Listens on 127.0.0.1:`port` in `netns` and relays to the host's 127.0.0.1:`port`.
    pub(crate) fn start(netns: &str, port: u16) -> Result<Forward> {
        let listener = Arc::new(bind_in_netns(
            netns,
            SocketAddr::from(([127, 0, 0, 1], port)),
        )?);
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Conns = Arc::default();
        let (l, s, c) = (listener.clone(), stop.clone(), conns.clone());
        let thread = std::thread::Builder::new()
            .name(format!("{netns}-fwd-{port}"))
            .spawn(move || {
                let next = AtomicU64::new(0);
                for conn in l.incoming() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else {
                        // E.g. out of file descriptors: do not spin.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    };
                    let id = next.fetch_add(1, Ordering::SeqCst);
                    let c = c.clone();
                    std::thread::spawn(move || relay(conn, port, &c, id));
                }
            })?;
        Ok(Forward {
            port,
            listener,
            stop,
            conns,
            thread: Some(thread),
        })
    }

    /// Stops listening and cuts every relayed connection (the listening socket holds the switch
    /// namespace alive: it must be closed before the lab is gone).
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // SAFETY: shutdown(2) on a socket we own; it wakes the blocked accept(2).
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for (_, (a, u)) in self.conns.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = u.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop();
    }
}
