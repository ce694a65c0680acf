//! One error type for the whole library. Every variant knows its exit code, so `main` only has to
//! print the message once and exit with `Error::exit_code`.
//!
//! Exit codes (the contract with shell scripts, documented in the README and `--help`):
//! - 0: everything checked is fine;
//! - 1: the run completed and found a problem (see the report);
//! - 2: usage or configuration error (bad flag, bad name, no kubeconfig, wrong context);
//! - 3: could not complete (API error, permission denied, timeout).

use std::fmt;

/// Exit code: the run completed and everything checked is fine.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run completed and found a problem.
pub const EXIT_PROBLEM: i32 = 1;
/// Exit code: usage or configuration error.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: the run could not complete (API error, permission, timeout).
pub const EXIT_INCOMPLETE: i32 = 3;
/// Exit code: interrupted by SIGINT/SIGTERM (after deleting what the run created), as shells
/// report a SIGINT death (128 + 2).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or argument that cannot be used (checked before any request is made).
    #[error("{0}")]
    Usage(String),

    /// The kubeconfig could not be read or does not have what was asked for.
    #[error("{0}")]
    Config(String),

    /// The current context does not serve the Supervisor's APIs.
    #[error(
        "context {context:?} does not look like a vSphere Supervisor: it does not serve {missing}; \
         switch to the Supervisor context (kubectl config use-context <supervisor>, or --context)"
    )]
    NotSupervisor { context: String, missing: String },

    /// The named cluster is not in the namespace.
    #[error("{0}")]
    ClusterNotFound(String),

    /// The API server refused a request (403).
    #[error("{0}")]
    Forbidden(String),

    /// Any other failure talking to the API server.
    #[error("{0}")]
    Api(String),

    /// A bound ran out.
    #[error("{0}")]
    Timeout(String),

    /// Ctrl-C or SIGTERM; what the run created was cleaned up.
    #[error("{0}")]
    Interrupted(String),

    /// Writing the output failed (e.g. a closed pipe).
    #[error("cannot write output: {0}")]
    Output(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::Config(_)
            | Error::NotSupervisor { .. }
            | Error::ClusterNotFound(_) => EXIT_USAGE,
            Error::Forbidden(_) | Error::Api(_) | Error::Timeout(_) | Error::Output(_) => {
                EXIT_INCOMPLETE
            }
            Error::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }

    /// Wraps a kube client error with what we were doing, keeping the API server's own message
    /// (it names the resource and, for 403, the user and verb) and adding what to do about it.
    pub fn from_kube(doing: impl fmt::Display, err: kube::Error) -> Error {
        match err {
            kube::Error::Api(status) if status.code == 403 => Error::Forbidden(format!(
                "{doing}: {} (grant the Role in the README's RBAC section, or use an account that has it)",
                status.message
            )),
            kube::Error::Api(status) => {
                Error::Api(format!("{doing}: {} ({})", status.message, status.code))
            }
            other => Error::Api(format!("{doing}: {}", crate::error::chain(&other))),
        }
    }
}

/// Renders an error and its sources on one line: "outer: inner: root". kube's errors nest the
/// useful part (connection refused, certificate problem) several sources deep.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_by_kind() {
        assert_eq!(Error::Usage("x".into()).exit_code(), EXIT_USAGE);
        assert_eq!(
            Error::NotSupervisor {
                context: "c".into(),
                missing: "m".into()
            }
            .exit_code(),
            EXIT_USAGE
        );
        assert_eq!(Error::Forbidden("x".into()).exit_code(), EXIT_INCOMPLETE);
        assert_eq!(Error::Timeout("x".into()).exit_code(), EXIT_INCOMPLETE);
    }

    #[test]
    fn forbidden_keeps_the_servers_message() {
        let status = kube::core::Status::failure(
            "machines.cluster.x-k8s.io is forbidden: User \"u\" cannot list resource \"machines\"",
            "Forbidden",
        )
        .with_code(403);
        let err = Error::from_kube("listing Machines", kube::Error::Api(Box::new(status)));
        assert_eq!(err.exit_code(), EXIT_INCOMPLETE);
        let msg = err.to_string();
        assert!(msg.starts_with("listing Machines: machines.cluster.x-k8s.io is forbidden"));
        assert!(msg.contains("RBAC"));
    }
}
