//! One module per command. Each wires the stages for its command and returns an [`Outcome`]:
//! what to print and how to exit. They take plain options (made from the command line by
//! `cli`) and a [`Connection`](crate::connect::Connection); none of them writes to stdout.

pub(crate) mod analyse;
pub(crate) mod cleanup;
pub(crate) mod diagnose;
pub(crate) mod many;
pub(crate) mod nsx;
pub(crate) mod round;
pub(crate) mod status;
pub(crate) mod watch;

use crate::error::EXIT_OK;

/// Where a command that prints as it goes (`--watch`) writes each piece of stdout, at once.
pub(crate) type Emit<'a> = &'a (dyn Fn(&str) + Sync);

/// What a run prints and how it exits. Notes go to stderr after the output.
#[derive(Debug)]
pub struct Outcome {
    pub stdout: String,
    pub notes: Vec<String>,
    pub exit_code: i32,
}

impl Outcome {
    pub fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            notes: Vec::new(),
            exit_code: EXIT_OK,
        }
    }
}

/// `--report FORMAT [FILE]`: a case report of the run or the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaseReport {
    pub format: crate::render::CaseFormat,
    /// Where to write it; None: it is what the command prints, instead of the tables.
    pub file: Option<std::path::PathBuf>,
}

impl CaseReport {
    /// Checks, before the run, that the report can be written (as `--bundle`'s file is: its
    /// folder exists, the path is not a folder), so minutes of diagnosis do not end in a report
    /// that cannot be written (exit 2, nothing contacted).
    pub fn check_target(&self) -> crate::error::Result<()> {
        match &self.file {
            Some(path) => crate::bundle::check_writable("report", path),
            None => Ok(()),
        }
    }

    /// Writes `text` to the file whole or not at all, as `--bundle` writes its file
    /// ([`crate::bundle::write_atomically`]).
    pub fn write(&self, path: &std::path::Path, text: &str) -> crate::error::Result<()> {
        crate::bundle::write_atomically("report", "--report", path, |mut file| {
            std::io::Write::write_all(&mut file, text.as_bytes()).map_err(|e| e.to_string())
        })
    }
}

/// The command line as one line of shell words (for a report's provenance): what ran, each
/// argument one word, so a pasted line runs what ran and nothing more.
pub(crate) fn command_line() -> String {
    // `args_os`: `args` panics on an argument that is not UTF-8 (a path can be anything).
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| crate::command::quote(&a.to_string_lossy()))
        .collect();
    format!("kubectl etcdnet {}", words.join(" "))
}

/// Where a case report goes: printed instead of the tables (`stdout`), or written to its file,
/// the tables printed and a note saying where. A file that cannot be written is said once and
/// the run did not complete what was asked (exit 3), as with `--bundle`; the tables are still
/// printed.
pub(crate) fn put_report(
    c: &CaseReport,
    page: String,
    stdout: String,
    notes: &mut Vec<String>,
    exit_code: &mut i32,
) -> String {
    let Some(path) = &c.file else {
        return page;
    };
    match c.write(path, &page) {
        Ok(()) => notes.push(format!(
            "{} report written to {}",
            c.format.extension(),
            path.display()
        )),
        Err(e) => {
            notes.push(format!("error: {e}"));
            *exit_code = (*exit_code).max(crate::error::EXIT_INCOMPLETE);
        }
    }
    stdout
}
