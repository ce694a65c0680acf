//! One error type for the whole library. Each variant keeps what caused it (the `kube::Error`,
//! the `io::Error`, ...) as its `source`; its exit code and the one line the user reads are
//! derived from it, so `main` only prints `error: {e}` and exits with [`Error::exit_code`].
//!
//! Exit codes (the contract with shell scripts, documented in the README and `--help`):
//! - 0: everything checked is fine;
//! - 1: the run completed and found a problem (see the report);
//! - 2: usage or configuration error (bad flag, bad name, no kubeconfig, wrong context);
//! - 3: could not complete (API error, permission denied, timeout);
//! - 130, 143, 129: interrupted by SIGINT (Ctrl-C), SIGTERM or SIGHUP (128 + the signal's
//!   number, as shells report a death by it), after deleting what the run created.

use std::fmt;

use kube::config::KubeconfigError;

use crate::signal::Signal;

/// Exit code: the run completed and everything checked is fine.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run completed and found a problem.
pub(crate) const EXIT_PROBLEM: i32 = 1;
/// Exit code: usage or configuration error.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code: the run could not complete (API error, permission, timeout).
pub const EXIT_INCOMPLETE: i32 = 3;
/// Exit code: interrupted by SIGINT (Ctrl-C), after deleting what the run created, as shells
/// report a SIGINT death (128 + 2). SIGTERM ends a run with 143 and SIGHUP with 129
/// ([`Signal::exit_code`]): a script or a service manager tells a stop from a Ctrl-C as it
/// would for any program.
#[cfg(test)]
pub(crate) const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or argument that cannot be used (checked before any request is made).
    #[error("{0}")]
    Usage(String),

    /// The admin's kubeconfig could not be read or does not have what was asked for. `why` is
    /// our own wording: the parser's message can quote values, and a kubeconfig's values include
    /// tokens and keys, so the source is kept for `-vvv` debugging but never printed.
    #[error("kubeconfig {location}: {why}")]
    Kubeconfig {
        location: String,
        why: String,
        #[source]
        source: Option<Box<KubeconfigError>>,
    },

    /// Something the run needs is not usable as it is (a secret without its key, a key file
    /// that cannot be written, a client that cannot be built).
    #[error("{what}{}", source.as_ref().map(|s| format!(": {}", chain(s.as_ref()))).unwrap_or_default())]
    Config {
        what: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The current context does not serve the Supervisor's APIs.
    #[error(
        "context {context:?} does not look like a vSphere Supervisor: it does not serve {missing}; \
         switch to the Supervisor context (kubectl config use-context <supervisor>, or --context)"
    )]
    NotSupervisor { context: String, missing: String },

    /// The named cluster is not in the namespace; `existing` says which ones are.
    #[error(
        "cluster {name:?} not found in namespace {namespace:?} (context {context:?}); {existing}"
    )]
    ClusterNotFound {
        name: String,
        namespace: String,
        context: String,
        existing: String,
    },

    /// A request to an API server failed: refused (403 and others) or never answered. Boxed to
    /// keep `Result<T, Error>` small; `source()` is the `kube::Error` itself.
    #[error(transparent)]
    Kube(Box<KubeFailure>),

    /// A stage did not finish within the run's bound (`diagnose --timeout` plus its grace):
    /// an API server answered each request, but too slowly to finish.
    #[error("{0}")]
    Timeout(String),

    /// `--via auto` found no route that can reach the nodes (the workload API dark on a VDS
    /// Supervisor, and no VM answering on TCP 22 from here), or `--via pod` was asked while the
    /// workload API does not answer: said before anything is created, with what each route
    /// needs.
    #[error("{0}")]
    NoRoute(String),

    /// Ctrl-C, SIGTERM, SIGHUP (the first that came); what the run created was cleaned up.
    #[error("interrupted ({}); every probe pod created was deleted", .0.name())]
    Interrupted(Signal),

    /// The report could not be serialized.
    #[error("cannot write output: {source}")]
    Output {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::Kubeconfig { .. }
            | Error::Config { .. }
            | Error::NotSupervisor { .. }
            | Error::ClusterNotFound { .. } => EXIT_USAGE,
            Error::Kube(_) | Error::Timeout(_) | Error::NoRoute(_) | Error::Output { .. } => {
                EXIT_INCOMPLETE
            }
            Error::Interrupted(signal) => signal.exit_code(),
        }
    }

    /// A request failed while `doing` something; the API server's own message is kept (it names
    /// the resource and, for 403, the user and verb) and what to do about it is added.
    pub fn kube(doing: impl fmt::Display, source: kube::Error) -> Error {
        Error::Kube(Box::new(KubeFailure {
            doing: doing.to_string(),
            hint: None,
            kubectl_flags: String::new(),
            source,
        }))
    }

    /// Gives a refused request's check (`kubectl auth can-i …`) the run's `--context` and
    /// `--kubeconfig` (`flags`, already quoted words: `command::Kubectl::flags`), so that the
    /// pasted command asks the Supervisor the run asked. For requests to the Supervisor only.
    pub fn with_kubectl_flags(self, flags: &str) -> Error {
        match self {
            Error::Kube(mut f) if f.kubectl_flags.is_empty() => {
                f.kubectl_flags = flags.to_string();
                Error::Kube(f)
            }
            other => other,
        }
    }

    /// A configuration problem of ours, without an underlying error.
    pub fn config(what: impl Into<String>) -> Error {
        Error::Config {
            what: what.into(),
            source: None,
        }
    }

    /// A configuration problem caused by `source`.
    pub fn config_from(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Config {
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }

    /// The API server refused the request (403).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Error::Kube(f) if f.source.is_forbidden())
    }

    /// Adds what to check when the server could not be reached; a refusal (403) needs none.
    pub fn with_unreachable_hint(self, hint: impl FnOnce() -> String) -> Error {
        match self {
            Error::Kube(mut f) if f.hint.is_none() && !f.source.is_forbidden() => {
                f.hint = Some(hint());
                Error::Kube(f)
            }
            other => other,
        }
    }
}

/// A failed request: what we were doing, what to check, and the client's own error.
#[derive(Debug, thiserror::Error)]
#[error("{}", kube_line(doing, source, hint.as_deref(), kubectl_flags))]
pub struct KubeFailure {
    /// What we were doing ("listing Machines in namespace \"ns\"").
    pub doing: String,
    /// What to check when the server could not be reached at all.
    pub hint: Option<String>,
    /// The run's ` --context=… --kubeconfig=…` for a 403's `kubectl auth can-i` (empty: none
    /// given, or not known where the error was made).
    pub kubectl_flags: String,
    #[source]
    pub source: kube::Error,
}

/// Where the permissions the plugin needs are written down (the Role and ClusterRole, each rule
/// with the command that makes the request): docs/rbac.yaml in the repository.
pub(crate) const RBAC_DOC: &str =
    concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rbac.yaml");

/// What an RBAC refusal says was refused, read from the API server's own words. The authorizer's
/// 403 is written by one function (kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/
/// handlers/responsewriters/errors.go `forbiddenMessage`): `User %q cannot %s resource %q in API
/// group %q in the namespace %q`, or `… at the cluster scope`, the resource `resource/subresource`
/// for a subresource; the authorizer's reason may follow after `: `.
///
/// The words are an API server's, so each is checked to be what Kubernetes allows there
/// (lower-case names, dots, dashes) before it goes into a command: anything else, and there is
/// no command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub verb: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub group: String,
    /// None: at the cluster scope.
    pub namespace: Option<String>,
}

impl Refusal {
    /// The refusal in a 403's message; None when the message is not the authorizer's.
    pub fn parse(message: &str) -> Option<Refusal> {
        // The user's name is quoted with Go's %q and may hold anything: skip it as a quoted
        // string, then read the rest in order.
        let rest = &message[message.find("User \"")? + "User ".len()..];
        let (_, rest) = go_quoted(rest)?;
        let rest = rest.strip_prefix(" cannot ")?;
        let (verb, rest) = rest.split_once(' ')?;
        let rest = rest.strip_prefix("resource ")?;
        let (resource, rest) = go_quoted(rest)?;
        let rest = rest.strip_prefix(" in API group ")?;
        let (group, rest) = go_quoted(rest)?;
        let namespace = if let Some(rest) = rest.strip_prefix(" in the namespace ") {
            Some(go_quoted(rest)?.0)
        } else if rest.starts_with(" at the cluster scope") {
            None
        } else {
            return None;
        };
        let (resource, subresource) = match resource.split_once('/') {
            Some((r, sub)) => (r.to_string(), Some(sub.to_string())),
            None => (resource, None),
        };
        let word = |s: &str| {
            !s.is_empty()
                && s.len() <= 253
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
                && s.as_bytes()[0].is_ascii_alphanumeric()
        };
        let ok = verb.bytes().all(|b| b.is_ascii_lowercase())
            && !verb.is_empty()
            && word(&resource)
            && subresource.as_deref().is_none_or(word)
            && (group.is_empty() || word(&group))
            && namespace.as_deref().is_none_or(word);
        ok.then(|| Refusal {
            verb: verb.to_string(),
            resource,
            subresource,
            group,
            namespace,
        })
    }

    /// `auth can-i <verb> <resource>[.<group>] [--subresource=…] -n <ns>`, or
    /// `--all-namespaces` at the cluster scope (a list across namespaces; kubectl then asks
    /// with no namespace, as the refused request did), for `kubectl` and the run's flags. A
    /// subresource is a flag: `pods/log` in the resource's place would read as the pod named
    /// `log`. Every word was checked by [`Refusal::parse`]: none needs quoting.
    pub fn can_i(&self) -> String {
        let mut args = format!("auth can-i {} {}", self.verb, self.resource);
        if !self.group.is_empty() {
            args.push('.');
            args.push_str(&self.group);
        }
        if let Some(sub) = &self.subresource {
            args.push_str(&format!(" --subresource={sub}"));
        }
        match &self.namespace {
            Some(ns) => args.push_str(&format!(" -n {ns}")),
            None => args.push_str(" --all-namespaces"),
        }
        args
    }
}

/// A Go `%q` string at the start of `s` (`"…"`, `\"` and `\\` escaped): its text and the rest.
fn go_quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

/// What to do about a 403: where the permissions are written down, then the
/// `kubectl auth can-i` that shows the refusal (with `flags`, the run's
/// ` --context=… --kubeconfig=…`) when the message is the authorizer's. The command ends the
/// line, so that it pastes whole.
pub(crate) fn forbidden_remedy(message: &str, flags: &str) -> String {
    match Refusal::parse(message) {
        Some(r) => format!(
            "the permissions the plugin needs: {RBAC_DOC}; check with: kubectl {}{flags}",
            r.can_i()
        ),
        None => format!("the permissions the plugin needs: {RBAC_DOC}"),
    }
}

/// A line made where the run's flags were not known (a pod's 403, `forbidden_remedy(m, "")`)
/// with `flags` (the run's ` --context=… --kubeconfig=…`) given to the `kubectl auth can-i` that
/// ends it, so that it pastes whole and asks the cluster the run asked. Any other line is kept.
pub(crate) fn with_can_i_flags(line: String, flags: &str) -> String {
    const CHECK: &str = "; check with: kubectl auth can-i ";
    match line.rfind(CHECK) {
        // The command ends the line (forbidden_remedy): nothing after it but its own words.
        Some(at) if !flags.is_empty() && !line[at + CHECK.len()..].contains(';') => {
            format!("{line}{flags}")
        }
        _ => line,
    }
}

/// The user's line for a failed request.
fn kube_line(doing: &str, err: &kube::Error, hint: Option<&str>, flags: &str) -> String {
    let line = match err {
        kube::Error::Api(status) if status.code == 403 => format!(
            "{doing}: {}; {}",
            status.message,
            forbidden_remedy(&status.message, flags)
        ),
        kube::Error::Api(status) => format!("{doing}: {} ({})", status.message, status.code),
        other => format!("{doing}: {}", chain(other)),
    };
    match hint {
        Some(h) => format!("{line} ({h})"),
        None => line,
    }
}

/// What an API server's answer was, without matching on `kube::Error` by hand everywhere.
pub(crate) trait KubeErrorExt {
    /// The HTTP status of an API server's `Status` answer; `None` when it never answered.
    fn status_code(&self) -> Option<u16>;
    /// The `Status` message the server gave, if it answered.
    fn status_message(&self) -> Option<&str>;

    fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }
    fn is_forbidden(&self) -> bool {
        self.status_code() == Some(403)
    }
}

impl KubeErrorExt for kube::Error {
    fn status_code(&self) -> Option<u16> {
        match self {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        }
    }
    fn status_message(&self) -> Option<&str> {
        match self {
            kube::Error::Api(s) => Some(s.message.as_str()),
            _ => None,
        }
    }
}

/// Renders an error and its sources on one line: "outer: inner: root". kube's errors nest the
/// useful part (connection refused, certificate problem) several sources deep.
///
/// A request cut by its bounds ([`crate::bounds::Exceeded`]) is that line alone: it names the
/// API, its URL and the bound, and what kube wraps it in adds only noise ("ServiceError").
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    if let Some(bound) = crate::bounds::exceeded(err) {
        return bound.to_string();
    }
    // The OS's `(os error N)` tail says nothing to an admin; the words before it do.
    let words = |text: String| {
        let mut text = text;
        while let Some(i) = text.find(" (os error ") {
            match text[i..].find(')') {
                Some(end) => text.replace_range(i..i + end + 1, ""),
                None => break,
            }
        }
        text
    };
    let mut out = words(err.to_string());
    let mut source = err.source();
    while let Some(s) = source {
        let text = words(s.to_string());
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// What an I/O error means, in words for the line that names the file: the operating system's
/// own text without its `(os error N)` tail, which says nothing to an admin, and the common
/// cases in plain words. The caller says which file and what to do.
pub(crate) fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => "no such file or folder".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "it is a folder, not a file".into(),
        _ => {
            let text = e.to_string();
            match text.rfind(" (os error ") {
                Some(i) if text.ends_with(')') => text[..i].to_string(),
                _ => text,
            }
        }
    }
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, message: &str) -> kube::Error {
        let status = kube::core::Status::failure(message, "Reason").with_code(code);
        kube::Error::Api(Box::new(status))
    }

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
        assert_eq!(
            Error::kube("x", api_error(403, "no")).exit_code(),
            EXIT_INCOMPLETE
        );
        assert_eq!(
            Error::Interrupted(Signal::Interrupt).exit_code(),
            EXIT_INTERRUPTED
        );
        assert_eq!(Error::Interrupted(Signal::Terminate).exit_code(), 143);
        assert_eq!(Error::Interrupted(Signal::Hangup).exit_code(), 129);
    }

    /// The authorizer's words, as kubernetes' `forbiddenMessage` writes them, become the
    /// `kubectl auth can-i` that shows the refusal; anything else gives no command.
    #[test]
    fn a_refusal_is_read_into_the_can_i_command() {
        let ns = "machines.cluster.x-k8s.io is forbidden: User \"sso:admin@vsphere.local\" cannot list resource \"machines\" in API group \"cluster.x-k8s.io\" in the namespace \"ns-prod\"";
        assert_eq!(
            Refusal::parse(ns).unwrap().can_i(),
            "auth can-i list machines.cluster.x-k8s.io -n ns-prod"
        );
        let log = "pods \"p\" is forbidden: User \"u\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"kube-system\": RBAC: role \"x\" not found";
        assert_eq!(
            Refusal::parse(log).unwrap().can_i(),
            "auth can-i get pods --subresource=log -n kube-system"
        );
        let all = "clusters.cluster.x-k8s.io is forbidden: User \"u\" cannot list resource \"clusters\" in API group \"cluster.x-k8s.io\" at the cluster scope";
        assert_eq!(
            Refusal::parse(all).unwrap().can_i(),
            "auth can-i list clusters.cluster.x-k8s.io --all-namespaces"
        );
        // A user name holding the words that follow it is skipped as the quoted string it is.
        let tricky = r#"pods is forbidden: User "a\" cannot delete resource \"x\" in API group \"\" in the namespace \"y" cannot create resource "pods" in API group "" in the namespace "ns""#;
        assert_eq!(
            Refusal::parse(tricky).unwrap().can_i(),
            "auth can-i create pods -n ns"
        );
        // Not the authorizer's words, or a word no Kubernetes name can be: no command.
        for no in [
            "violates PodSecurity \"baseline:latest\": host namespaces",
            "User \"u\" cannot list resource \"$(reboot)\" in API group \"\" in the namespace \"ns\"",
            "User \"u\" cannot list resource \"pods\" in API group \"\" in the namespace \"--server=x\"",
            "User \"u\" cannot LIST resource \"pods\" in API group \"\" in the namespace \"ns\"",
        ] {
            assert_eq!(Refusal::parse(no), None, "{no}");
        }
    }

    #[test]
    fn forbidden_keeps_the_servers_message_and_its_source() {
        let err = Error::kube(
            "listing Machines",
            api_error(
                403,
                "machines.cluster.x-k8s.io is forbidden: User \"u\" cannot list resource \"machines\" in API group \"cluster.x-k8s.io\" in the namespace \"ns-prod\"",
            ),
        );
        assert_eq!(err.exit_code(), EXIT_INCOMPLETE);
        let msg = err.to_string();
        assert!(msg.starts_with("listing Machines: machines.cluster.x-k8s.io is forbidden"));
        assert!(
            msg.ends_with("; the permissions the plugin needs: https://github.com/etcdnet/kubectl-etcdnet/blob/main/docs/rbac.yaml; check with: kubectl auth can-i list machines.cluster.x-k8s.io -n ns-prod"),
            "{msg}"
        );
        // The run's context and kubeconfig go into the command, once.
        let with = err
            .with_kubectl_flags(" --context=sv --kubeconfig=/k")
            .with_kubectl_flags(" --context=other");
        assert!(
            with.to_string()
                .ends_with("kubectl auth can-i list machines.cluster.x-k8s.io -n ns-prod --context=sv --kubeconfig=/k"),
            "{with}"
        );
        let err = with;
        let msg = err.to_string();
        let source = std::error::Error::source(&err).expect("the kube error is kept");
        assert!(source.downcast_ref::<kube::Error>().is_some());
        // A refusal is not a reachability problem: no hint is added.
        let same = err.with_unreachable_hint(|| "is it up?".into()).to_string();
        assert_eq!(same, msg);
    }

    #[test]
    fn other_answers_keep_their_code_and_take_a_hint() {
        let err = Error::kube("discovery", api_error(500, "boom"))
            .with_unreachable_hint(|| "is it up?".into());
        assert_eq!(err.to_string(), "discovery: boom (500) (is it up?)");
    }

    /// No `(os error N)` reaches a line: the common kinds in words, the rest without the tail.
    #[test]
    fn io_errors_in_words() {
        use std::io::{Error as Io, ErrorKind};
        assert_eq!(
            io_words(&Io::from_raw_os_error(2)),
            "no such file or folder"
        );
        assert_eq!(
            io_words(&Io::from(ErrorKind::PermissionDenied)),
            "permission denied"
        );
        let other = io_words(&Io::from_raw_os_error(28));
        assert!(!other.contains("os error") && !other.is_empty(), "{other}");
        assert_eq!(io_words(&Io::other("short read")), "short read");
        let refused = Io::from_raw_os_error(111);
        let line = chain(&refused);
        assert!(!line.contains("os error") && !line.is_empty(), "{line}");
    }

    #[test]
    fn status_codes_without_matching_by_hand() {
        assert!(api_error(404, "gone").is_not_found());
        assert!(api_error(403, "no").is_forbidden());
        assert_eq!(api_error(409, "exists").status_message(), Some("exists"));
    }

    /// A pod's 403 line, made where the run's flags were not known, gets them on its
    /// `kubectl auth can-i`; a line that does not end with one is kept as it is.
    #[test]
    fn a_refused_pods_check_gets_the_runs_flags() {
        let line = format!(
            "creating pod p: pods is forbidden: User \"u\" cannot create resource \"pods\" in API group \"\" in the namespace \"ns-prod\"; {}",
            forbidden_remedy(
                "pods is forbidden: User \"u\" cannot create resource \"pods\" in API group \"\" in the namespace \"ns-prod\"",
                ""
            )
        );
        // As `command::Kubectl::flags` writes them (error sits below command: no import).
        let flags = " --context='sv admin' --kubeconfig=/k";
        let with = with_can_i_flags(line.clone(), flags);
        assert!(
            with.ends_with("; check with: kubectl auth can-i create pods -n ns-prod --context='sv admin' --kubeconfig=/k"),
            "{with}"
        );
        assert_eq!(with_can_i_flags(line.clone(), ""), line);
        let other = "the probe pod did not finish: x; raise --timeout".to_string();
        assert_eq!(with_can_i_flags(other.clone(), flags), other);
        // A line where the command does not end the line is left alone.
        let mid = format!("{line}; then more");
        assert_eq!(with_can_i_flags(mid.clone(), flags), mid);
    }
}
