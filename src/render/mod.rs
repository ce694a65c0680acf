//! The render stage: reports in, strings out. Nothing here writes to a terminal; `main`
//! prints what these return. Tables follow kubectl's look: upper-case headers, no borders,
//! columns three spaces apart, `<none>` for an empty cell.

use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::{Padding, Style};

use crate::error::{Error, Result};

mod cleanup;
mod diagnose;
mod status;

pub use cleanup::cleanup;
pub use diagnose::{diagnose, dry_run};
pub use status::status;

/// How a report is printed (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable tables.
    Table,
    /// Tables with more columns.
    Wide,
    /// The full report as JSON (versioned schema).
    Json,
    /// The full report as YAML (versioned schema).
    Yaml,
}

pub(crate) const NONE: &str = "<none>";

/// Colour for the few lines that carry a judgement (verdict, ERROR/WARN). Tables stay plain so
/// their columns line up. Off unless stdout is a terminal, and always off with `NO_COLOR`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paint {
    pub on: bool,
}

impl Paint {
    /// <https://no-color.org>: a non-empty `NO_COLOR` turns colour off; so does a dumb terminal.
    pub fn detect() -> Paint {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Paint {
            on: std::io::stdout().is_terminal() && !no_color && !dumb,
        }
    }

    fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    pub fn bad(self, text: &str) -> String {
        self.paint(anstyle::AnsiColor::Red.on_default().bold(), text)
    }

    pub fn warn(self, text: &str) -> String {
        self.paint(anstyle::AnsiColor::Yellow.on_default().bold(), text)
    }

    pub fn good(self, text: &str) -> String {
        self.paint(anstyle::AnsiColor::Green.on_default().bold(), text)
    }
}

/// A kubectl-style table. Rows shorter than the header are padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut b = Builder::default();
    b.push_record(header.iter().map(|h| h.to_string()));
    for r in rows {
        let mut r = r.clone();
        r.resize(header.len(), String::new());
        b.push_record(r);
    }
    let mut t = b.build();
    t.with(Style::empty()).with(Padding::new(0, 3, 0, 0));
    let mut out = String::new();
    for line in t.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// JSON (pretty, newline-terminated) or YAML of any report.
pub fn structured<T: Serialize>(value: &T, format: Format) -> Result<String> {
    match format {
        Format::Yaml => serde_yaml_ng::to_string(value).map_err(|e| Error::Output {
            source: Box::new(e),
        }),
        _ => serde_json::to_string_pretty(value)
            .map(|s| s + "\n")
            .map_err(|e| Error::Output {
                source: Box::new(e),
            }),
    }
}

/// `3/3 machines, 3 VMs`: present Machines of desired, and VMs.
pub(crate) fn control_plane_cell(cp: &crate::report::ControlPlaneSummary) -> String {
    format!(
        "{}/{} machines, {} VMs",
        cp.machines,
        count(cp.desired),
        cp.virtual_machines
    )
}

pub(crate) fn or_none(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| NONE.to_string())
}

pub(crate) fn count(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_looks_like_kubectl() {
        let t = table(
            &["NAME", "IP"],
            &[
                vec!["a".into(), "198.18.0.11".into()],
                vec!["longer-name".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME          IP\na             198.18.0.11\nlonger-name\n"
        );
    }
}
