//! The signals that end a run early. A run selects on [`shutdown`] next to its work, so that
//! the work is dropped (and its pods deleted by the caller) when one arrives.

/// Resolves on SIGINT (Ctrl-C), SIGTERM or SIGHUP; on Windows, on Ctrl-C or Ctrl-Break.
/// SIGHUP is what a run gets when the terminal goes away (the SSH session to the admin's
/// bastion drops): it ends the run like the others, so that its pods are deleted instead of
/// the process dying with them running. All of them end with the same exit code (130, [`crate::error::EXIT_INTERRUPTED`]).
pub async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        // A handler that cannot be installed never fires; the others still end the run.
        async fn received(s: Option<Signal>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let term = signal(SignalKind::terminate()).ok();
        let hup = signal(SignalKind::hangup()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = received(term) => {}
            _ = received(hup) => {}
        }
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows::{ctrl_break, CtrlBreak};
        // Windows has no SIGTERM or SIGHUP. Its consoles deliver Ctrl-C and Ctrl-Break, the
        // latter also what GenerateConsoleCtrlEvent sends to stop a child process group (how
        // scripts and CI runners interrupt a console program). Closing the console window
        // (CTRL_CLOSE_EVENT) is not handled: Windows ends the process as soon as the handler
        // returns, too soon to delete pods, so `cleanup` is the remedy there (docs/install.md).
        async fn received(s: Option<CtrlBreak>) {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let brk = ctrl_break().ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = received(brk) => {}
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
