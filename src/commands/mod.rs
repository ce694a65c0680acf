//! One module per command. Each wires the stages for its command and returns an [`Outcome`]:
//! what to print and how to exit. They take plain options (made from the command line by
//! `cli`) and a [`Connection`](crate::connect::Connection); none of them writes to stdout.

pub mod analyse;
pub mod cleanup;
pub mod diagnose;
pub mod many;
pub mod nsx;
pub mod round;
pub mod status;
pub mod watch;

use crate::error::EXIT_OK;

/// Where a command that prints as it goes (`--watch`) writes each piece of stdout, at once.
pub type Emit<'a> = &'a (dyn Fn(&str) + Sync);

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
