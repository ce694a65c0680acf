//! The signals that end a run early. A run selects on [`shutdown`] next to its work, so that
//! the work is dropped (and its pods deleted by the caller) when one arrives.
//!
//! One listener counts every signal from the run's start ([`listen`]), whether or not anything
//! waits at that moment: a signal that lands between two waits (a `--watch` round ending, its
//! output printed, the next sleep not yet begun) is never lost, as it would be with a listener
//! made anew at each wait (tokio's signal streams see only what arrives after they are made).

use std::sync::OnceLock;

use tokio::sync::watch;

/// How many signals the run has received, kept by the one listener.
static RECEIVED: OnceLock<watch::Receiver<u64>> = OnceLock::new();

/// Installs the run's one listener (the first call; later calls only read it). Called at the
/// run's start, so a signal at any moment after it is counted.
pub fn listen() -> watch::Receiver<u64> {
    RECEIVED
        .get_or_init(|| {
            let (tx, rx) = watch::channel(0u64);
            tokio::spawn(async move {
                let mut signals = Signals::new();
                loop {
                    signals.next().await;
                    tx.send_modify(|n| *n += 1);
                }
            });
            rx
        })
        .clone()
}

/// How many signals the run has received so far.
pub fn count() -> u64 {
    *listen().borrow()
}

/// Resolves once more than `seen` signals have been received: at once when they already were.
/// A listener that is gone (its runtime ended) never resolves.
pub async fn after(seen: u64) {
    let mut rx = listen();
    if rx.wait_for(|n| *n > seen).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once the run has received a signal (SIGINT (Ctrl-C), SIGTERM or SIGHUP; on
/// Windows, Ctrl-C or Ctrl-Break): at once if one already came. SIGHUP is what a run gets when
/// the terminal goes away (the SSH session to the admin's bastion drops): it ends the run like
/// the others, so that its pods are deleted instead of the process dying with them running.
/// All of them end with the same exit code (130, [`crate::error::EXIT_INTERRUPTED`]). A wait
/// for a second signal (after the first ended the work) is [`after`]`(`[`count`]`())`.
pub async fn shutdown() {
    after(0).await
}

/// The signal streams, made once so that none is missed between two of them.
struct Signals {
    #[cfg(unix)]
    streams: [Option<tokio::signal::unix::Signal>; 3],
    #[cfg(windows)]
    brk: Option<tokio::signal::windows::CtrlBreak>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            // A handler that cannot be installed never fires; the others still end the run.
            Signals {
                streams: [
                    signal(SignalKind::interrupt()).ok(),
                    signal(SignalKind::terminate()).ok(),
                    signal(SignalKind::hangup()).ok(),
                ],
            }
        }
        #[cfg(windows)]
        {
            // Windows has no SIGTERM or SIGHUP. Its consoles deliver Ctrl-C and Ctrl-Break, the
            // latter also what GenerateConsoleCtrlEvent sends to stop a child process group (how
            // scripts and CI runners interrupt a console program). Closing the console window
            // (CTRL_CLOSE_EVENT) is not handled: Windows ends the process as soon as the
            // handler returns, too soon to delete pods, so `cleanup` is the remedy there
            // (docs/install.md).
            Signals {
                brk: tokio::signal::windows::ctrl_break().ok(),
            }
        }
        #[cfg(not(any(unix, windows)))]
        {
            Signals {}
        }
    }

    /// The next signal of any kind.
    async fn next(&mut self) {
        async fn received<S: Recv>(s: &mut Option<S>) {
            match s {
                Some(s) => s.recv_one().await,
                None => std::future::pending().await,
            }
        }
        #[cfg(unix)]
        {
            let [int, term, hup] = &mut self.streams;
            tokio::select! {
                _ = received(int) => {}
                _ = received(term) => {}
                _ = received(hup) => {}
            }
        }
        #[cfg(windows)]
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = received(&mut self.brk) => {}
            }
        }
        #[cfg(not(any(unix, windows)))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// One signal stream's next signal (a stream that ended never fires again).
trait Recv {
    async fn recv_one(&mut self);
}

#[cfg(unix)]
impl Recv for tokio::signal::unix::Signal {
    async fn recv_one(&mut self) {
        if self.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(windows)]
impl Recv for tokio::signal::windows::CtrlBreak {
    async fn recv_one(&mut self) {
        if self.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}
