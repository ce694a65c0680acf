//! Progress on stderr while a run waits on the network: a spinner with the current stage.
//! Only on a terminal; in a pipe, a script or CI it draws nothing (stdout stays clean too).

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// Draws only when stderr is a terminal.
    pub fn for_stderr() -> Progress {
        Progress::new(std::io::stderr().is_terminal())
    }

    pub fn new(enabled: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(
            None,
            if enabled {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>3} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    pub fn hidden() -> Progress {
        Progress::new(false)
    }

    /// The stage's line. It is drawn on the terminal: a caller that quotes names (the
    /// cluster's, the namespace's, the context's) passes them made visible (`render::visible`,
    /// which sits above this module).
    pub fn stage(&self, msg: impl Into<Cow<'static, str>>) {
        self.bar.set_message(msg);
    }

    /// Clears the line before the report is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A stage made of `total` steps that finish in any order: "WHAT (n/total done)".
pub(crate) struct Steps<'a> {
    progress: &'a Progress,
    what: String,
    total: usize,
    done: AtomicUsize,
}

impl Progress {
    pub fn steps(&self, what: impl Into<String>, total: usize) -> Steps<'_> {
        let steps = Steps {
            progress: self,
            what: what.into(),
            total,
            done: AtomicUsize::new(0),
        };
        steps.show(0);
        steps
    }
}

impl Steps<'_> {
    pub fn one_done(&self) {
        self.show(self.done.fetch_add(1, Ordering::Relaxed) + 1);
    }

    fn show(&self, n: usize) {
        self.progress
            .stage(format!("{} ({n}/{} done)", self.what, self.total));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
