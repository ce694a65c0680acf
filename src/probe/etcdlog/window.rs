//! The window of a log: its findings count the lines of the last `--since` before the node's
//! probe time; older lines are history. The node's clock, never the admin's: a node whose clock
//! is off is judged against its own lines.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{each_line, time, Acc, LogSummary};

/// The present of a log: lines at or after `since` count, older ones are history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogWindow {
    /// The oldest time that counts (RFC 3339 UTC).
    // (Six fraction digits.)
    pub since: String,
    /// The window's end: the node's clock at probe time, or the log's newest line.
    // (The log's newest line when the node's clock was not read.)
    pub until: String,
    /// `--since`, in seconds.
    pub seconds: u64,
    pub until_from: WindowEnd,
}

/// Where a log window's end comes from: the node's own clock, or its newest line.
// The node's own clock, so a node whose clock is off is judged against its own lines, never
// against the admin's clock.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum WindowEnd {
    ProbeClock,
    LastLine,
}

/// Classify a log as of `until_ms` (the node's clock at probe time, epoch ms; `None`: the log's
/// newest line): findings count lines of the last `since`, older lines are [`LogSummary::history`].
/// A line without a time takes the time of the line before it (the text forms' continuation
/// lines, grpc-go's); one before any dated line counts as the present, which only ever makes a
/// finding count, never hides one.
pub fn classify_window(log: &str, until_ms: Option<i64>, since: std::time::Duration) -> LogSummary {
    let mut lines = Vec::new();
    let mut physical = 0;
    each_line(log, &mut physical, |line| {
        if let Some(l) = line {
            lines.push(l)
        }
    });
    let (until, until_from) = match until_ms {
        Some(ms) => (Some(ms.saturating_mul(1000)), WindowEnd::ProbeClock),
        None => (
            lines
                .iter()
                .filter_map(|l| l.ts.as_deref().and_then(time::parse_time))
                .max(),
            WindowEnd::LastLine,
        ),
    };
    let seconds = since.as_secs();
    let window = until.map(|until| {
        let start = until.saturating_sub(
            i64::try_from(seconds)
                .unwrap_or(i64::MAX)
                .saturating_mul(1_000_000),
        );
        LogWindow {
            since: time::format_time(start),
            until: time::format_time(until),
            seconds,
            until_from,
        }
    });
    let mut acc = Acc::default();
    let mut prev: Option<String> = None;
    for line in lines {
        if line.ts.is_some() {
            prev.clone_from(&line.ts);
        }
        // Normalised times sort as strings (see `time`): no parsing per line.
        let recent = match (&window, &prev) {
            (Some(w), Some(ts)) => ts.as_str() >= w.since.as_str(),
            _ => true,
        };
        acc.add(Some(line), recent);
    }
    acc.lines = physical;
    acc.finish(window)
}
