//! The signals that end a run early. A run selects on [`shutdown`] next to its work, so that
//! the work is dropped (and its pods deleted by the caller) when one arrives.

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
