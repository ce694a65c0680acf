//! The signals that end a run early. A run selects on [`shutdown`] next to its work, so that
//! the work is dropped (and its pods deleted by the caller) when one arrives.
//!
//! One listener counts every signal from the run's start ([`listen`]), whether or not anything
//! waits at that moment: a signal that lands between two waits (a `--watch` round ending, its
//! output printed, the next sleep not yet begun) is never lost, as it would be with a listener
//! made anew at each wait (tokio's signal streams see only what arrives after they are made).
//!
//! The first signal is remembered: it is what ended the run, and its exit code is the shell's
//! for a death by it (128 + its number: 130 SIGINT, 143 SIGTERM, 129 SIGHUP), so that a
//! script or a service manager reads the run's end as it would read any program's.

use std::sync::OnceLock;

use tokio::sync::watch;

/// A signal that ends a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C (on Windows, Ctrl-C and Ctrl-Break).
    Interrupt,
    /// SIGTERM: `kill`, a service manager's or CI runner's stop, `timeout(1)`.
    Terminate,
    /// SIGHUP: the terminal or the SSH session went away.
    Hangup,
}

impl Signal {
    /// Its name as `kill -l` and the shells print it.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The exit code of a run it ended: 128 + the signal's number, what POSIX shells report
    /// (`$?`) for a process killed by it (POSIX.1-2017 Shell Command Language, 2.8.2 "Exit
    /// Status for Commands": "greater than 128"; bash, dash and zsh use 128 + n). The numbers
    /// are the same on every Unix (SIGHUP 1, SIGINT 2, SIGTERM 15: POSIX's XSI table of
    /// `kill -s` numbers).
    pub fn exit_code(self) -> i32 {
        128 + match self {
            Signal::Hangup => 1,
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
        }
    }
}

/// What the one listener has seen: how many signals, and the first.
#[derive(Debug, Clone, Copy, Default)]
struct Received {
    count: u64,
    first: Option<Signal>,
}

/// The run's signals, kept by the one listener.
static RECEIVED: OnceLock<watch::Receiver<Received>> = OnceLock::new();

/// Installs the run's one listener (the first call; later calls only read it). Called at the
/// run's start, so a signal at any moment after it is counted.
pub(crate) fn listen() {
    receiver();
}

fn receiver() -> watch::Receiver<Received> {
    RECEIVED
        .get_or_init(|| {
            let (tx, rx) = watch::channel(Received::default());
            tokio::spawn(async move {
                let mut signals = Signals::new();
                loop {
                    let signal = signals.next().await;
                    tx.send_modify(|r| {
                        r.count += 1;
                        r.first.get_or_insert(signal);
                    });
                }
            });
            rx
        })
        .clone()
}

/// How many signals the run has received so far.
pub(crate) fn count() -> u64 {
    receiver().borrow().count
}

/// Resolves once more than `seen` signals have been received: at once when they already were.
/// A listener that is gone (its runtime ended) never resolves.
pub(crate) async fn after(seen: u64) {
    let mut rx = receiver();
    if rx.wait_for(|r| r.count > seen).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once the run has received a signal (SIGINT (Ctrl-C), SIGTERM or SIGHUP; on
/// Windows, Ctrl-C or Ctrl-Break), with the first one: at once if one already came. SIGHUP is
/// what a run gets when the terminal goes away (the SSH session to the admin's bastion drops):
/// it ends the run like the others, so that its pods are deleted instead of the process dying
/// with them running. Each ends with its own exit code ([`Signal::exit_code`]). A wait for a
/// second signal (after the first ended the work) is [`after`]`(`[`count`]`())`.
pub(crate) async fn shutdown() -> Signal {
    after(0).await;
    receiver()
        .borrow()
        .first
        .expect("a signal was counted, so the first is kept")
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
    async fn next(&mut self) -> Signal {
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
                _ = received(int) => Signal::Interrupt,
                _ = received(term) => Signal::Terminate,
                _ = received(hup) => Signal::Hangup,
            }
        }
        #[cfg(windows)]
        {
            // Windows has no signal numbers: both end as Ctrl-C does (130).
            tokio::select! {
                _ = tokio::signal::ctrl_c() => Signal::Interrupt,
                _ = received(&mut self.brk) => Signal::Interrupt,
            }
        }
        #[cfg(not(any(unix, windows)))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Interrupt
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
