//! The HTTPS client to NSX Manager (opt-in: `--nsx-manager`): one manager's URL, its CA
//! verified, the admin's own credentials, every request bounded. I/O only: what it reads is
//! handed to `read`/`traceflow` as the API's JSON.
//!
//! - **Where**: only `https://HOST[:PORT]` given on the command line ([`ManagerUrl`]); every
//!   request is that scheme and authority joined to a path this module builds ([`ApiPath`]),
//!   never a URL from an answer. Redirects are never followed (hyper's client does not): a 3xx
//!   is an error, so neither the credentials nor a session cookie go to another host.
//! - **Who**: [`Credentials`] from `--nsx-credentials FILE` (`user:password`) or
//!   `NSXT_USERNAME`/`NSXT_PASSWORD`; never from argv, never printed (`Debug` redacts), never
//!   serialized (no `Serialize`). Authentication by session only (`POST /api/session/create`,
//!   form `j_username`/`j_password`; the answer's `JSESSIONID` cookie and `X-XSRF-TOKEN` header
//!   go back on every request; `POST /api/session/destroy` at the end). The mechanics as the NSX
//!   API reference's `DestroyAuthenticatedSession` says them ("the set-cookie and x-xsrf-token
//!   headers obtained from an earlier call to /api/session/create should be provided"; `POST
//!   /api/session/destroy`) and as scripts use them (`curl -c cookies -D headers -X POST -d
//!   'j_username=…&j_password=…' https://$NSX/api/session/create`, then `-b cookies -H
//!   "X-XSRF-TOKEN: …"`: e.g. tacobayle/nestedVsphere8 `06_nsx_config/logs/edge.sh`; Broadcom
//!   KB 423054 "HTTP authentication using APIs on NSX").
//! - **One login per run** ([`Login`]): NSX locks an account out of the API after
//!   `api_max_auth_failures` (default 5) failed logins within `api_failed_auth_reset_period`
//!   (default 900 s), for `api_failed_auth_lockout_period` (default 900 s) (the API reference's
//!   `AuthenticationPolicyProperties`, `GET /api/v1/node/aaa/auth-policy`; the CLI's `get
//!   auth-policy api max-auth-failures`). So a run logs in to a manager once, whatever `-A` or
//!   `--watch` does, and a refused login (NSX answers a wrong password `403`, `error_code` 403:
//!   Broadcom KB 440528; vmware/vmware-nsxlib `vmware_nsxlib/v3/utils.py`
//!   `http_error_to_exception`, FORBIDDEN `'403': InvalidCredentials`) stops every further
//!   request to it: no second try, no HTTP basic with the same password. An expired session is
//!   `403` with `error_code` 98 (the same table: `'98': BadXSRFToken`, which nsxlib's
//!   `ExceptionConfig.regenerate_triggers` answers with a new session): one re-login, then the
//!   request again, once ([`Client::request`]).
//! - **Trust**: the `--nsx-ca` file's certificates, else this machine's roots; with
//!   `--nsx-insecure-skip-tls-verify` none (said on stderr and in the report by the caller).
//! - **Bounds** ([`Limits`]): each request within `request_timeout` and never past the whole
//!   reading's deadline; each body at most `max_body_bytes`; lists walked cursor by cursor
//!   (`?cursor=…&page_size=…`, the Policy API's `ListResult`) up to `max_pages` pages and
//!   `max_objects` objects ([`Pager`]); 429/503 retried at most `retries` times, waiting the
//!   answer's `Retry-After` (seconds or an HTTP date) but never more than `max_retry_after`
//!   nor past the deadline ([`retry_after`]); a delete's bound (`within`) is its whole bound,
//!   its retries included.
//! - **Refusals**: 401/403 are [`Gap`]s naming the NSX privilege the request needed
//!   ([`Privilege`]), never an error that fails the diagnosis. Every error answer's
//!   `error_code` is read and said with its `error_message` (the `ApiError` shape).

use std::collections::HashSet;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use serde_json::Value;
use tokio::time::Instant;

use super::model::MAX_PATH_CHARS;
use super::raw::{Gap, Listed};

/// The variables terraform-provider-nsxt's users already set.
pub(crate) const USERNAME_ENV: &str = "NSXT_USERNAME";
pub(crate) const PASSWORD_ENV: &str = "NSXT_PASSWORD";
/// The most a credentials file may hold (one line).
pub(crate) const MAX_CREDENTIALS_BYTES: u64 = 4096;
/// The most a `--nsx-ca` file may hold.
pub(crate) const MAX_CA_BYTES: u64 = 1024 * 1024;
/// The most characters of the manager's own words (an API error's `error_message`) kept.
pub(crate) const MAX_MESSAGE_CHARS: usize = 300;
/// The longest cursor the reader sends back.
const MAX_CURSOR: usize = 4096;
/// The longest string kept of an answer (a description, a tag): longer ones are cut (then
/// `…`). Ids, paths and addresses are far shorter; this bounds what a report and a bundle keep.
pub(crate) const MAX_STRING_CHARS: usize = 8192;
/// How long a traceflow's delete may take, whatever is left of the reading's deadline:
/// tidying up is not cut by the deadline it may have hit.
pub(crate) const CLEANUP_BOUND: Duration = Duration::from_secs(10);
/// How long the session's destroy may take: a courtesy (an undestroyed session expires on its
/// own), so it holds the admin's result back for less than a traceflow's delete may. A manager
/// still busy with the requests a cut reading left in flight answers it late.
pub(crate) const SESSION_CLOSE_BOUND: Duration = Duration::from_secs(2);

// ---------------------------------------------------------------------------------------------
// Credentials

/// A password: kept in memory only, never printed (`Debug` says `<redacted>`).
#[derive(Clone, PartialEq, Eq)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The admin's NSX account. Neither part is printed (`Debug` redacts both: a user name is half
/// of what a guesser needs), and the type has no `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    user: Secret,
    password: Secret,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &self.password)
            .finish()
    }
}

/// Why no credentials: one line, never quoting what was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CredentialsError {
    #[error("--nsx-manager needs credentials: set {USERNAME_ENV} and {PASSWORD_ENV}, or pass --nsx-credentials FILE (one line user:password)")]
    Missing,
    #[error("--nsx-credentials {path}: {why}")]
    File { path: String, why: String },
    #[error("{0}")]
    Env(String),
}

impl Credentials {
    /// `--nsx-credentials FILE` when given, else `NSXT_USERNAME`/`NSXT_PASSWORD`.
    pub(crate) fn load(file: Option<&Path>) -> Result<Credentials, CredentialsError> {
        match file {
            Some(path) => Credentials::from_file(path),
            None => Credentials::from_env_values(
                std::env::var(USERNAME_ENV),
                std::env::var(PASSWORD_ENV),
            ),
        }
    }

    /// Reads a `user:password` file (one line, at most [`MAX_CREDENTIALS_BYTES`]).
    pub(crate) fn from_file(path: &Path) -> Result<Credentials, CredentialsError> {
        let err = |why: String| CredentialsError::File {
            path: clean(&path.display().to_string(), 200),
            why,
        };
        let file =
            std::fs::File::open(path).map_err(|e| err(format!("cannot be read ({})", e.kind())))?;
        let mut bytes = Vec::new();
        file.take(MAX_CREDENTIALS_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| err(format!("cannot be read ({})", e.kind())))?;
        if bytes.len() as u64 > MAX_CREDENTIALS_BYTES {
            return Err(err(format!(
                "is longer than {MAX_CREDENTIALS_BYTES} bytes (one line user:password expected)"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| err("is not UTF-8 text".into()))?;
        Credentials::parse_line(&text).map_err(|why| err(why.into()))
    }

    /// The file's text: one line `user:password` (the password may hold `:`), an optional final
    /// newline. Errors never quote the text.
    pub(crate) fn parse_line(text: &str) -> Result<Credentials, &'static str> {
        let line = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(text);
        if line.contains(['\n', '\r']) {
            return Err("holds more than one line (one line user:password expected)");
        }
        let (user, password) = line
            .split_once(':')
            .ok_or("is not user:password (no ':')")?;
        Credentials::new(user, password)
    }

    /// From the two variables' values (as `std::env::var` answers them).
    pub(crate) fn from_env_values(
        user: Result<String, std::env::VarError>,
        password: Result<String, std::env::VarError>,
    ) -> Result<Credentials, CredentialsError> {
        use std::env::VarError;
        let env = |s: String| CredentialsError::Env(s);
        match (user, password) {
            (Err(VarError::NotPresent), Err(VarError::NotPresent)) => {
                Err(CredentialsError::Missing)
            }
            (Err(VarError::NotUnicode(_)), _) => Err(env(format!("{USERNAME_ENV} is not UTF-8"))),
            (_, Err(VarError::NotUnicode(_))) => Err(env(format!("{PASSWORD_ENV} is not UTF-8"))),
            (Ok(_), Err(VarError::NotPresent)) => Err(env(format!(
                "{USERNAME_ENV} is set but {PASSWORD_ENV} is not (set both, or pass --nsx-credentials FILE)"
            ))),
            (Err(VarError::NotPresent), Ok(_)) => Err(env(format!(
                "{PASSWORD_ENV} is set but {USERNAME_ENV} is not (set both, or pass --nsx-credentials FILE)"
            ))),
            (Ok(u), Ok(p)) => Credentials::new(&u, &p)
                .map_err(|why| env(format!("{USERNAME_ENV}/{PASSWORD_ENV}: {why}"))),
        }
    }

    fn new(user: &str, password: &str) -> Result<Credentials, &'static str> {
        if user.is_empty() || password.is_empty() {
            return Err("has an empty user or password");
        }
        // Both travel in a form body or a basic-auth header: no control characters.
        if user.chars().chain(password.chars()).any(char::is_control) {
            return Err("holds a control character");
        }
        Ok(Credentials {
            user: Secret(user.to_string()),
            password: Secret(password.to_string()),
        })
    }

    /// The session form's body.
    fn form(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("j_username", &self.user.0)
            .append_pair("j_password", &self.password.0)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// The manager's URL

/// `https://HOST[:PORT]`, as `--nsx-manager` gives it: nothing else (no user info, path, query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagerUrl {
    /// `https://host[:port]`, lower-case scheme, as every request's prefix.
    base: String,
}

impl ManagerUrl {
    pub(crate) fn parse(s: &str) -> Result<ManagerUrl, String> {
        let s = s.trim();
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("http://") {
            return Err("must be https:// (NSX Manager's API is TLS; http:// would send the credentials in clear)".into());
        }
        let Some(rest) = lower
            .strip_prefix("https://")
            .map(|_| &s["https://".len()..])
        else {
            return Err("must be https://HOST[:PORT]".into());
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() {
            return Err("has no host (https://HOST[:PORT])".into());
        }
        if authority.contains(['/', '?', '#']) {
            return Err("must be https://HOST[:PORT] alone (no path, query or fragment)".into());
        }
        if authority.contains('@') {
            return Err(
                "must not carry credentials (use --nsx-credentials or NSXT_USERNAME/NSXT_PASSWORD)"
                    .into(),
            );
        }
        let parsed: http::uri::Authority = authority
            .parse()
            .map_err(|_| "has no valid HOST[:PORT]".to_string())?;
        if parsed.host().is_empty() || authority.chars().any(|c| c.is_control() || c == ' ') {
            return Err("has no valid HOST[:PORT]".into());
        }
        if authority.ends_with(':') {
            return Err("has an empty port".into());
        }
        Ok(ManagerUrl {
            base: format!("https://{authority}"),
        })
    }

    /// `https://host[:port]`.
    pub(crate) fn as_str(&self) -> &str {
        &self.base
    }

    /// The URL of `path` (with its query): always this manager's.
    fn url(&self, path: &ApiPath) -> String {
        format!("{}{}", self.base, path.0)
    }
}

impl fmt::Display for ManagerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

impl std::str::FromStr for ManagerUrl {
    type Err = String;
    fn from_str(s: &str) -> Result<ManagerUrl, String> {
        ManagerUrl::parse(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Paths

/// An API path (and query) the client asks for: built here from fixed strings and NSX policy
/// paths that were checked and percent-encoded segment by segment, so that nothing an answer
/// holds can point a request elsewhere (another host, `..`, a query of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiPath(String);

/// Characters left as they are in a path segment: RFC 3986 unreserved. Everything else (`/`,
/// `?`, `#`, `%`, spaces) is encoded, so a segment stays one segment.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl ApiPath {
    /// A fixed path of ours (`/api/v1/fabric/virtual-machines`).
    pub(crate) fn fixed(path: &'static str) -> ApiPath {
        ApiPath(path.to_string())
    }

    /// `/policy/api/v1` + an NSX policy path (`/infra/…`, `/orgs/…`), e.g. a group a rule
    /// names, then `children` segments (`members`, `ip-addresses`).
    pub(crate) fn policy(policy_path: &str, children: &[&str]) -> Result<ApiPath, String> {
        let segments = policy_segments(policy_path)?;
        let mut out = String::from("/policy/api/v1");
        for s in segments.iter().copied().chain(children.iter().copied()) {
            out.push('/');
            out.extend(percent_encoding::utf8_percent_encode(s, SEGMENT));
        }
        Ok(ApiPath(out))
    }

    /// The same path with a query (`key=value` pairs, form-encoded).
    pub(crate) fn with_query(&self, query: &[(&str, &str)]) -> ApiPath {
        if query.is_empty() {
            return self.clone();
        }
        let q = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        let sep = if self.0.contains('?') { '&' } else { '?' };
        ApiPath(format!("{}{sep}{q}", self.0))
    }

    /// The path without its query, for a [`Gap`].
    pub(crate) fn path(&self) -> &str {
        self.0.split('?').next().unwrap_or_default()
    }

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The segments of an NSX policy path the reader may ask for: `/infra/…`, `/orgs/…` or
/// `/global-infra/…`, no empty, `.` or `..` segment, no control character, at most
/// [`MAX_PATH_CHARS`] bytes.
pub(crate) fn policy_segments(path: &str) -> Result<Vec<&str>, String> {
    let bad = |why: &str| {
        format!(
            "{:?} is not an NSX policy path the reader asks for ({why})",
            clean(path, 120)
        )
    };
    if path.len() > MAX_PATH_CHARS {
        return Err(bad("too long"));
    }
    let rest = path.strip_prefix('/').ok_or_else(|| bad("not absolute"))?;
    let segments: Vec<&str> = rest.split('/').collect();
    if !matches!(segments[0], "infra" | "orgs" | "global-infra") {
        return Err(bad("not under /infra, /orgs or /global-infra"));
    }
    if segments
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == ".." || s.chars().any(char::is_control))
    {
        return Err(bad("an empty, dot or control segment"));
    }
    Ok(segments)
}

// ---------------------------------------------------------------------------------------------
// Trust

/// How the manager's certificate is checked.
#[derive(Clone)]
pub(crate) enum Trust {
    /// This machine's roots (no `--nsx-ca`).
    SystemRoots,
    /// The `--nsx-ca` file's certificates, and only those.
    Ca(Vec<CertificateDer<'static>>),
    /// `--nsx-insecure-skip-tls-verify`: not checked (the caller says so, loudly).
    SkipVerify,
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trust::SystemRoots => f.write_str("SystemRoots"),
            Trust::Ca(c) => write!(f, "Ca({} certificates)", c.len()),
            Trust::SkipVerify => f.write_str("SkipVerify"),
        }
    }
}

impl Trust {
    /// `--nsx-ca FILE` read, else the system's roots; `skip` wins (the flags' conflict is clap's).
    pub(crate) fn from_flags(ca: Option<&Path>, skip: bool) -> Result<Trust, String> {
        if skip {
            return Ok(Trust::SkipVerify);
        }
        match ca {
            None => Ok(Trust::SystemRoots),
            Some(path) => {
                let shown = clean(&path.display().to_string(), 200);
                let file = std::fs::File::open(path)
                    .map_err(|e| format!("--nsx-ca {shown}: cannot be read ({})", e.kind()))?;
                let mut bytes = Vec::new();
                file.take(MAX_CA_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| format!("--nsx-ca {shown}: cannot be read ({})", e.kind()))?;
                if bytes.len() as u64 > MAX_CA_BYTES {
                    return Err(format!("--nsx-ca {shown}: larger than 1 MiB"));
                }
                parse_ca_pem(&bytes)
                    .map(Trust::Ca)
                    .map_err(|why| format!("--nsx-ca {shown}: {why}"))
            }
        }
    }
}

/// The certificates of a PEM file (at least one).
pub(crate) fn parse_ca_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|_| "is not a PEM file of certificates".to_string())?;
    if certs.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(certs)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_config(trust: &Trust) -> Result<rustls::ClientConfig, String> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let config = match trust {
        Trust::SkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
            .with_no_client_auth(),
        Trust::Ca(certs) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs {
                roots.add(c.clone()).map_err(|e| {
                    format!("--nsx-ca: a certificate is not usable as a root ({e})")
                })?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::SystemRoots => {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            // A root the store cannot take is skipped, as every client of the system store does.
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err("this machine has no usable root certificates: pass --nsx-ca FILE (the manager's CA, PEM)".into());
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(config)
}

/// `--nsx-insecure-skip-tls-verify`: any certificate is taken, the handshake's signatures are
/// still checked (a TLS session, only not authenticated).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds

/// Every bound of one NSX reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// One request, from sending it to the last byte of its answer.
    pub request_timeout: Duration,
    /// The whole reading (`--nsx-timeout`): no request starts or runs past it.
    pub total: Duration,
    /// One answer's body.
    pub max_body_bytes: usize,
    /// `page_size` asked on a list.
    pub page_size: u32,
    /// Pages read of one list.
    pub max_pages: u32,
    /// Objects kept of one list.
    pub max_objects: usize,
    /// Retries of one request answered 429 or 503.
    pub retries: u32,
    /// The longest wait a `Retry-After` gets.
    pub max_retry_after: Duration,
    /// Requests in flight at once (the reader's fan-out).
    pub max_concurrent: usize,
    /// The bytes of every answer's body together, for one round (every cluster's reading of
    /// `-A`; each `--watch` round anew, [`Client::renew_budget`]: the client, one login, serves
    /// the whole run): past it no request of the reading is sent, and the answer being read is
    /// cut ([`RequestError::Budget`]). Tidying up (a traceflow's delete, the session's destroy)
    /// is not held to it.
    pub max_total_bytes: u64,
}

/// The default [`Limits::max_total_bytes`]: what one round keeps of NSX Manager at most (the
/// round's bundle keeps a quarter of its 512 MiB for every cluster's reading together).
pub(crate) const MAX_TOTAL_BYTES: u64 = 128 * 1024 * 1024;

impl Limits {
    /// The defaults for a reading bounded by `total`.
    pub(crate) fn new(total: Duration) -> Limits {
        Limits {
            request_timeout: total.min(Duration::from_secs(30)),
            total,
            max_body_bytes: 16 * 1024 * 1024,
            page_size: 1000,
            max_pages: 20,
            max_objects: 5000,
            retries: 3,
            max_retry_after: Duration::from_secs(10),
            max_concurrent: 4,
            max_total_bytes: MAX_TOTAL_BYTES,
        }
    }
}

/// How long to wait before retrying, from a `Retry-After` value (delta-seconds or an HTTP
/// date, RFC 9110 §10.2.3), at most `max`; None when absent or unreadable (the caller backs
/// off by itself).
pub(crate) fn retry_after(value: Option<&str>, now: SystemTime, max: Duration) -> Option<Duration> {
    let v = value?.trim();
    let wait = if let Ok(secs) = v.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = httpdate::parse_http_date(v).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(max))
}

/// The wait before retry `attempt` (0-based) without a `Retry-After`: 1 s, 2 s, 4 s…, at most `max`.
pub(crate) fn backoff(attempt: u32, max: Duration) -> Duration {
    Duration::from_secs(1u64 << attempt.min(6)).min(max)
}

/// One list's walk, page by page: what to ask next, within the bounds.
#[derive(Debug)]
pub(crate) struct Pager {
    max_pages: u32,
    max_objects: usize,
    pages: u32,
    cursors: HashSet<String>,
}

/// What a [`Pager`] says after a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Every page read.
    Done,
    /// Ask for this cursor.
    Cursor(String),
    /// Stop: the list is not whole (why, in our words).
    Cut(String),
}

impl Pager {
    pub(crate) fn new(limits: &Limits) -> Pager {
        Pager {
            max_pages: limits.max_pages,
            max_objects: limits.max_objects,
            pages: 0,
            cursors: HashSet::new(),
        }
    }

    /// Takes one page's answer into `listed` and says what comes next.
    pub(crate) fn page(&mut self, listed: &mut Listed, answer: Value) -> Next {
        self.pages += 1;
        let Value::Object(mut page) = answer else {
            return Next::Cut("the answer is not a list result (no object)".into());
        };
        let results = match page.remove("results") {
            Some(Value::Array(r)) => r,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Next::Cut("the answer's results is not a list".into()),
        };
        if self.pages == 1 {
            listed.result_count = page.get("result_count").and_then(Value::as_u64);
        }
        let got = results.len();
        let room = self.max_objects.saturating_sub(listed.results.len());
        listed.results.extend(results.into_iter().take(room));
        if got > room {
            return Next::Cut(format!(
                "more than {} objects (only the first kept)",
                self.max_objects
            ));
        }
        let cursor = page
            .get("cursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let Some(cursor) = cursor else {
            return Next::Done;
        };
        // A cursor on a page that added nothing, or past the count the manager gave, ends the
        // walk: nothing more to read, and no loop on a manager that keeps answering one.
        if got == 0
            || listed
                .result_count
                .is_some_and(|n| listed.results.len() as u64 >= n)
        {
            return Next::Done;
        }
        if cursor.len() > MAX_CURSOR || cursor.chars().any(char::is_control) {
            return Next::Cut("the manager's cursor is not one the reader sends back".into());
        }
        if !self.cursors.insert(cursor.to_string()) {
            return Next::Cut("the manager repeated a cursor".into());
        }
        if self.pages >= self.max_pages {
            return Next::Cut(format!(
                "more than {} pages (only the first kept)",
                self.max_pages
            ));
        }
        Next::Cursor(cursor.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Errors and gaps

/// Which NSX privilege a request needs: what a 401/403's gap names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Privilege {
    /// The DFW reading: security policies, rules, groups and their members, services.
    ReadSecurity,
    /// The inventory: fabric virtual machines, VIFs, segment ports, search.
    ReadInventory,
    /// Creating, reading and deleting traceflows.
    Traceflow,
}

impl Privilege {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Privilege::ReadSecurity => "read access to Security (distributed firewall policies, groups, services): NSX's read-only Auditor role has it",
            Privilege::ReadInventory => "read access to Inventory (virtual machines, segment ports, search): NSX's read-only Auditor role has it",
            Privilege::Traceflow => "a role that may run Traceflow (Plan & Troubleshoot > Traceflow with full access, e.g. Network Operator or Network Admin); Auditor may not",
        }
    }
}

/// A bound as a message says it: whole seconds from a second up, else milliseconds (a bound
/// is often what was left of a deadline: `4s 999ms 991us 117ns` would be noise).
pub(crate) fn shown(d: Duration) -> String {
    let d = if d >= Duration::from_secs(1) {
        Duration::from_secs(((d.as_millis() + 500) / 1000) as u64)
    } else {
        Duration::from_millis(d.as_millis() as u64)
    };
    humantime::format_duration(d).to_string()
}

/// A request that did not give an answer to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RequestError {
    /// The manager answered with this status (its own `error_code` and `error_message`, the
    /// message bounded and cleaned).
    #[error("NSX Manager answered {status}{}{}", code.map(|c| format!(" (error_code {c})")).unwrap_or_default(), message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status {
        status: u16,
        code: Option<u64>,
        message: Option<String>,
    },
    #[error("NSX Manager answered a redirect ({status}), not followed: the reader talks to {manager} only")]
    Redirect { status: u16, manager: String },
    #[error("NSX Manager at {manager} did not finish answering within {}", shown(*.bound))]
    Slow { manager: String, bound: Duration },
    #[error("the NSX reading's deadline ({}) passed before this request", shown(*.total))]
    Deadline { total: Duration },
    #[error("NSX Manager at {manager} sent more than {limit} bytes (refused unread)")]
    Large { manager: String, limit: usize },
    #[error("NSX Manager at {manager}: {why}")]
    Transport { manager: String, why: String },
    #[error("NSX Manager's answer is not JSON")]
    NotJson,
    #[error("{0}")]
    BadPath(String),
    /// The round's byte budget for NSX Manager's answers is spent ([`Limits::max_total_bytes`]).
    #[error("not read: the round's budget of {} MiB for NSX Manager's answers is spent", .limit / (1024 * 1024))]
    Budget { limit: u64 },
    /// The manager refused this run's login: nothing more is sent to it.
    #[error("not asked: NSX Manager refused this run's login, and nothing more is sent to it (NSX locks an account after {LOCKOUT_FAILURES} failed logins within {LOCKOUT_WINDOW_SECS} s by default)")]
    NotSent,
}

impl RequestError {
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            RequestError::Status { status, .. } | RequestError::Redirect { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// This error as a gap of `path`: 401/403 name the privilege needed.
    pub(crate) fn gap(&self, path: &str, privilege: Privilege) -> Gap {
        let status = self.status();
        let (why, privilege) = match status {
            Some(401) => (
                "NSX Manager refused the credentials (401): check the account and its password"
                    .to_string(),
                Some(privilege.words().to_string()),
            ),
            Some(403) => (
                format!("NSX Manager refused the account (403): {self}"),
                Some(privilege.words().to_string()),
            ),
            _ => (self.to_string(), None),
        };
        Gap {
            path: clean(path, MAX_PATH_CHARS),
            status,
            why: clean(&why, 2 * MAX_MESSAGE_CHARS),
            privilege,
        }
    }
}

/// A gap of ours at `path` (no status, no privilege): a path the reader would not ask for, a
/// bound it stopped at.
pub(crate) fn gap(path: &str, why: String) -> Gap {
    Gap {
        path: clean(path, 300),
        status: None,
        why,
        privilege: None,
    }
}

/// `s` without control characters (each one `?`), at most `max` characters (then `…`): for the
/// manager's and the file system's words put into our messages.
pub(crate) fn clean(s: &str, max: usize) -> String {
    super::model::clip_replacing(s, max, '?')
}

/// Cuts every string of `v` (values and keys alike) to `max` characters (then `…`): what the
/// manager answers is kept as JSON, but no string of it is unbounded.
pub(crate) fn bound_strings(v: &mut Value, max: usize) {
    let cut = |s: &str| -> Option<String> {
        s.chars().nth(max).map(|_| {
            let mut t: String = s.chars().take(max).collect();
            t.push('…');
            t
        })
    };
    match v {
        Value::String(s) => {
            if let Some(t) = cut(s) {
                *s = t;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| bound_strings(x, max)),
        Value::Object(o) => {
            if o.keys().any(|k| k.chars().nth(max).is_some()) {
                let taken = std::mem::take(o);
                for (k, mut x) in taken {
                    bound_strings(&mut x, max);
                    o.insert(cut(&k).unwrap_or(k), x);
                }
            } else {
                o.values_mut().for_each(|x| bound_strings(x, max));
            }
        }
        _ => {}
    }
}

/// The NSX API error's own message (`{"error_message": …}`), cleaned and bounded.
fn api_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let m = v.get("error_message")?.as_str()?;
    Some(clean(m, MAX_MESSAGE_CHARS))
}

/// The NSX API error's `error_code` (the `ApiError` shape: an integer; some answers carry it
/// as a string of digits), when the body has one.
pub(crate) fn api_error_code(body: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    match v.get("error_code")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if s.len() <= 20 => s.trim().parse().ok(),
        _ => None,
    }
}

/// An answer's status as a [`RequestError::Status`], its `error_code` and message read.
fn status_error(status: StatusCode, body: &[u8]) -> RequestError {
    RequestError::Status {
        status: status.as_u16(),
        code: api_error_code(body),
        message: api_message(body),
    }
}

/// NSX's defaults for locking an account out of the API (`AuthenticationPolicyProperties`:
/// `api_max_auth_failures` 5, `api_failed_auth_reset_period` 900 s): what the refusal says.
pub(crate) const LOCKOUT_FAILURES: u32 = 5;
pub(crate) const LOCKOUT_WINDOW_SECS: u64 = 900;

/// `error_code` of a 403 for a session NSX no longer knows (expired, destroyed): vmware-nsxlib
/// `http_error_to_exception`, FORBIDDEN `'98': BadXSRFToken`, a trigger to log in again.
pub(crate) const SESSION_EXPIRED_CODE: u64 = 98;

/// The most times a run logs in again after [`SESSION_EXPIRED_CODE`]: each is a successful
/// login's session ending (never a failed login: a refused one ends the run's requests), but a
/// manager that expires every session at once must not be logged in to without end.
pub(crate) const MAX_RELOGINS: u32 = 8;

// ---------------------------------------------------------------------------------------------
// Sessions

/// A session's cookie and XSRF token, as the session create answered them (both marked
/// sensitive: hyper never logs them), and which login made it.
#[derive(Clone)]
struct Session {
    cookie: HeaderValue,
    xsrf: Option<HeaderValue>,
    /// 1 for the run's login, one more for each re-login.
    generation: u64,
}

/// The `JSESSIONID=…` pair of a `Set-Cookie` header (the attributes dropped), if any.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .map(str::trim)
        .find(|pair| {
            pair.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("JSESSIONID") && !v.is_empty() && v.len() <= 4096
            })
        })
        .map(str::to_string)
}

/// The session's XSRF token header name, as NSX answers and expects it.
pub(crate) const XSRF_HEADER: &str = "x-xsrf-token";

// ---------------------------------------------------------------------------------------------
// The client

/// What one request answered: status, headers, body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// Everything [`Client::connect`] needs.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub manager: ManagerUrl,
    pub credentials: Credentials,
    pub trust: Trust,
    pub limits: Limits,
}

/// The run's one login to its manager ([`Options`]), shared by every cluster and every
/// `--watch` round: the first asks, the others take its outcome, a session or the refusal.
/// The refusal is kept for the run: NSX counts failed logins toward locking the account.
#[derive(Default)]
pub(crate) struct Login {
    outcome: tokio::sync::OnceCell<Result<Arc<Client>, Gap>>,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.outcome.get() {
            None => "not yet",
            Some(Ok(_)) => "session",
            Some(Err(_)) => "refused",
        };
        f.debug_struct("Login").field("state", &state).finish()
    }
}

impl Login {
    /// The run's client: logs in on the first call, then answers every call with that outcome.
    pub(crate) async fn client(&self, options: &Options) -> Result<Arc<Client>, Gap> {
        self.outcome
            .get_or_init(|| async { Client::connect(options).await.map(Arc::new) })
            .await
            .clone()
    }

    /// Ends the run's session, if it has one ([`Client::close`]).
    pub(crate) async fn close(&self) {
        if let Some(Ok(client)) = self.outcome.get() {
            client.close().await;
        }
    }
}

/// A connection to one NSX Manager, authenticated, bounded. Cheap to share by reference; the
/// reader's concurrent requests use one pool.
pub(crate) struct Client {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    manager: ManagerUrl,
    /// Kept for a re-login after the session expired (never sent anywhere else).
    credentials: Credentials,
    /// The current session; replaced by a re-login.
    session: std::sync::Mutex<Option<Session>>,
    /// One login at a time: requests that meet the same expired session wait for one re-login.
    login_gate: tokio::sync::Mutex<()>,
    /// Logins sent (the run's and the re-logins), for the bound [`MAX_RELOGINS`].
    logins: AtomicU32,
    /// The generation of the newest session.
    generation: AtomicU64,
    limits: Limits,
    /// No request starts or runs past it: `--nsx-timeout` from the login, renewed by each
    /// cluster's reading ([`Client::renew_deadline`]), which the probes before it must not eat.
    deadline: std::sync::Mutex<Instant>,
    /// Why nothing more is sent: a re-login the manager refused (said with the reading's gaps).
    refused: std::sync::OnceLock<Gap>,
    /// The bytes of answers' bodies read so far this round ([`Limits::max_total_bytes`],
    /// [`Client::renew_budget`]).
    bytes_read: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("manager", &self.manager.as_str())
            .field("auth", &self.auth_kind())
            .finish()
    }
}

/// The one line a refused login is: its status, NSX's own `error_code` and words, that nothing
/// more is sent, and why (the lockout).
fn login_refused(status: u16, body: &[u8]) -> String {
    let answered = RequestError::Status {
        status,
        code: api_error_code(body),
        message: api_message(body),
    };
    let lockout = format!(
        "NSX locks an account out of its API after {LOCKOUT_FAILURES} failed logins within {LOCKOUT_WINDOW_SECS} s by default"
    );
    match status {
        401 | 403 => format!(
            "NSX Manager refused the login ({answered}): nothing more is sent to it this run ({lockout}); check the account and its password"
        ),
        _ => format!(
            "NSX Manager did not grant a session ({answered}): nothing more is sent to it this run (a login is tried once a run: {lockout})"
        ),
    }
}

impl Client {
    /// Builds the client and logs in (a session). A manager that cannot be reached (TLS,
    /// connection, the deadline) or refuses the login is one [`Gap`] at
    /// `/api/session/create`, and then nothing more is sent to it.
    pub(crate) async fn connect(options: &Options) -> Result<Client, Gap> {
        let session_path = ApiPath::fixed("/api/session/create");
        let config = tls_config(&options.trust).map_err(|why| Gap {
            path: session_path.path().into(),
            status: None,
            why: clean(&why, 2 * MAX_MESSAGE_CHARS),
            privilege: None,
        })?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(
            options.limits.request_timeout.min(Duration::from_secs(10)),
        ));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let http = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        let client = Client {
            http,
            manager: options.manager.clone(),
            credentials: options.credentials.clone(),
            session: std::sync::Mutex::new(None),
            login_gate: tokio::sync::Mutex::new(()),
            logins: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            limits: options.limits,
            deadline: std::sync::Mutex::new(Instant::now() + options.limits.total),
            refused: std::sync::OnceLock::new(),
            bytes_read: std::sync::atomic::AtomicU64::new(0),
        };
        client.login().await?;
        tracing::debug!(manager = %client.manager, "NSX Manager session");
        Ok(client)
    }

    /// One `POST /api/session/create`: the session on success, else the one-line gap.
    async fn login(&self) -> Result<(), Gap> {
        let session_path = ApiPath::fixed("/api/session/create");
        let gap = |status: Option<u16>, why: String| Gap {
            path: session_path.path().into(),
            status,
            why: clean(&why, 2 * MAX_MESSAGE_CHARS),
            privilege: None,
        };
        self.logins.fetch_add(1, Ordering::SeqCst);
        let form = Bytes::from(self.credentials.form());
        let answer = self
            .exchange(
                Method::POST,
                &session_path,
                Some(("application/x-www-form-urlencoded", form)),
                None,
                None,
            )
            .await;
        let a = match answer {
            Ok(a) => a,
            Err(e) => return Err(e.gap(session_path.path(), Privilege::ReadSecurity)),
        };
        if !a.status.is_success() {
            tracing::debug!(status = a.status.as_u16(), "NSX login refused");
            return Err(gap(
                Some(a.status.as_u16()),
                login_refused(a.status.as_u16(), &a.body),
            ));
        }
        // A session needs its cookie: without one there is none to use, and the password is
        // not sent again in another form (no HTTP basic: one login a run).
        let Some(mut cookie) =
            session_cookie(&a.headers).and_then(|c| HeaderValue::try_from(c).ok())
        else {
            return Err(gap(
                Some(a.status.as_u16()),
                "NSX Manager granted no session (no JSESSIONID cookie): nothing more is sent to it this run".into(),
            ));
        };
        cookie.set_sensitive(true);
        let xsrf = a.headers.get(XSRF_HEADER).cloned().map(|mut x| {
            x.set_sensitive(true);
            x
        });
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(Session {
            cookie,
            xsrf,
            generation,
        });
        Ok(())
    }

    /// After `generation`'s session was answered [`SESSION_EXPIRED_CODE`]: logs in again, once
    /// for every request that met that session (the others wait and take the new one). False
    /// when no newer session can be had (the re-login refused, or [`MAX_RELOGINS`] spent).
    async fn relogin(&self, generation: u64) -> bool {
        let _one = self.login_gate.lock().await;
        if self.refused.get().is_some() {
            return false;
        }
        if self.generation.load(Ordering::SeqCst) != generation {
            return true;
        }
        if self.logins.load(Ordering::SeqCst) > MAX_RELOGINS {
            return false;
        }
        tracing::debug!("NSX session expired: logging in again");
        match self.login().await {
            Ok(()) => true,
            Err(gap) => {
                let _ = self.refused.set(gap);
                false
            }
        }
    }

    /// Why nothing more is sent, when a re-login was refused (a [`Gap`] the reading reports).
    pub(crate) fn session_refused(&self) -> Option<&Gap> {
        self.refused.get()
    }

    /// How many logins the client sent (the run's, then each re-login).
    #[cfg(test)]
    pub(crate) fn logins(&self) -> u32 {
        self.logins.load(Ordering::SeqCst)
    }

    fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives a cluster's reading `bound` from now (its `--nsx-timeout`, or less when the
    /// cluster's `--timeout` leaves less): one login serves the round, and its probes (or
    /// another cluster's reading) came before. Never shortens it, so readings at once only
    /// lengthen each other's: each is bounded by its caller too (`commands::nsx`).
    pub(crate) fn renew_deadline(&self, bound: Duration) {
        let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        *d = (*d).max(Instant::now() + bound.min(self.limits.total));
    }

    /// A new round's byte budget ([`Limits::max_total_bytes`]): the run's one client serves
    /// every `--watch` round, and each round's readings (every cluster's of `-A`, together) are
    /// held to the budget, not the run's all rounds together (a long `--watch` would otherwise
    /// stop reading NSX Manager for good after some rounds). Called where a round starts
    /// ([`crate::commands::nsx::NsxRun::start`]); rounds never overlap.
    pub(crate) fn renew_budget(&self) {
        self.bytes_read.store(0, Ordering::SeqCst);
    }

    /// Whether the manager refused a login (nothing more is sent).
    pub(crate) fn credentials_refused(&self) -> bool {
        self.refused.get().is_some()
    }

    /// How requests authenticate: always `session` (never with what).
    pub(crate) fn auth_kind(&self) -> &'static str {
        "session"
    }

    /// The current session (a clone of its two header values).
    fn session(&self) -> Option<Session> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn manager(&self) -> &ManagerUrl {
        &self.manager
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Ends the session (`POST /api/session/destroy`), bounded by [`SESSION_CLOSE_BOUND`]
    /// whatever the deadline. A failure is only logged: the session expires.
    pub(crate) async fn close(&self) {
        let Some(session) = self.session() else {
            return;
        };
        let path = ApiPath::fixed("/api/session/destroy");
        let r = self
            .exchange(
                Method::POST,
                &path,
                None,
                Some(SESSION_CLOSE_BOUND),
                Some(&session),
            )
            .await;
        if let Err(e) = r {
            tracing::debug!(error = %e, "NSX session destroy");
        }
    }

    /// GET one object (its strings bounded: [`bound_strings`]).
    pub(crate) async fn get(&self, path: &ApiPath) -> Result<Value, RequestError> {
        let a = self.request(Method::GET, path, None, None).await?;
        let mut v = serde_json::from_slice(&a.body).map_err(|_| RequestError::NotJson)?;
        bound_strings(&mut v, MAX_STRING_CHARS);
        Ok(v)
    }

    /// PUT one object (a traceflow's config).
    pub(crate) async fn put(&self, path: &ApiPath, body: &Value) -> Result<Value, RequestError> {
        let bytes = Bytes::from(serde_json::to_vec(body).map_err(|_| RequestError::NotJson)?);
        let a = self
            .request(Method::PUT, path, Some(("application/json", bytes)), None)
            .await?;
        if a.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&a.body).map_err(|_| RequestError::NotJson)
    }

    /// DELETE, bounded by `within` (whatever is left of the deadline: tidying up).
    pub(crate) async fn delete(
        &self,
        path: &ApiPath,
        within: Duration,
    ) -> Result<(), RequestError> {
        self.request(Method::DELETE, path, None, Some(within))
            .await
            .map(|_| ())
    }

    /// Every page of a list (`results`, `cursor`), within the bounds. Never fails: a page that
    /// cannot be read, or a bound, is the list's `incomplete` gap.
    pub(crate) async fn list(
        &self,
        path: &ApiPath,
        query: &[(&str, &str)],
        privilege: Privilege,
    ) -> Listed {
        let mut listed = Listed::default();
        let mut pager = Pager::new(&self.limits);
        let page_size = self.limits.page_size.to_string();
        let mut cursor: Option<String> = None;
        loop {
            let mut q: Vec<(&str, &str)> = query.to_vec();
            q.push(("page_size", &page_size));
            if let Some(c) = cursor.as_deref() {
                q.push(("cursor", c));
            }
            let answer = match self.get(&path.with_query(&q)).await {
                Ok(a) => a,
                Err(e) => {
                    listed.incomplete = Some(e.gap(path.path(), privilege));
                    return listed;
                }
            };
            match pager.page(&mut listed, answer) {
                Next::Done => return listed,
                Next::Cursor(c) => cursor = Some(c),
                Next::Cut(why) => {
                    listed.incomplete = Some(Gap {
                        path: clean(path.path(), MAX_PATH_CHARS),
                        status: None,
                        why,
                        privilege: None,
                    });
                    return listed;
                }
            }
        }
    }

    /// One request with its retries (429/503, bounded), in the session; 2xx or an error. An
    /// expired session ([`SESSION_EXPIRED_CODE`]) is logged in again once ([`Client::relogin`])
    /// and the request sent again in the new one. `within`: the whole bound of a tidying-up
    /// request, its retries included (whatever is left of the deadline); else each exchange
    /// is bounded by the request timeout and the deadline, and no retry waits past the latter.
    async fn request(
        &self,
        method: Method,
        path: &ApiPath,
        body: Option<(&'static str, Bytes)>,
        within: Option<Duration>,
    ) -> Result<Answer, RequestError> {
        let until = within.map(|w| Instant::now() + w);
        let mut attempt = 0;
        let mut relogged = false;
        loop {
            if self.refused.get().is_some() {
                return Err(RequestError::NotSent);
            }
            let Some(session) = self.session() else {
                return Err(RequestError::NotSent);
            };
            let left = match until {
                Some(u) => {
                    let left = u.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(RequestError::Slow {
                            manager: self.manager.to_string(),
                            bound: within.unwrap_or_default(),
                        });
                    }
                    Some(left)
                }
                None => None,
            };
            let a = self
                .exchange(method.clone(), path, body.clone(), left, Some(&session))
                .await?;
            let status = a.status;
            if status.is_success() {
                return Ok(a);
            }
            if status.is_redirection() {
                return Err(RequestError::Redirect {
                    status: status.as_u16(),
                    manager: self.manager.to_string(),
                });
            }
            let error = status_error(status, &a.body);
            if status == StatusCode::FORBIDDEN
                && api_error_code(&a.body) == Some(SESSION_EXPIRED_CODE)
                && !relogged
            {
                relogged = true;
                if self.relogin(session.generation).await {
                    continue;
                }
                return Err(error);
            }
            let retryable = matches!(status.as_u16(), 429 | 503);
            if !retryable || attempt >= self.limits.retries {
                return Err(error);
            }
            let header = a
                .headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok());
            let wait = retry_after(header, SystemTime::now(), self.limits.max_retry_after)
                .unwrap_or_else(|| backoff(attempt, self.limits.max_retry_after));
            // A wait past the bound is no wait worth making: the manager's answer stands. A
            // delete's bound is its own (tidying up outlives the reading's deadline), never
            // renewed by its retries.
            if Instant::now() + wait >= until.unwrap_or_else(|| self.deadline()) {
                return Err(error);
            }
            tracing::debug!(status = status.as_u16(), wait = ?wait, "NSX Manager asked to retry");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// One exchange: the request sent to this manager (never elsewhere), in `session` when
    /// given, the answer's body read within the bound and the size cap. `within`: the bound
    /// when tidying up; else the request timeout, cut at the deadline.
    async fn exchange(
        &self,
        method: Method,
        path: &ApiPath,
        body: Option<(&'static str, Bytes)>,
        within: Option<Duration>,
        session: Option<&Session>,
    ) -> Result<Answer, RequestError> {
        // The round's byte budget holds the reading, never the tidying up (`within`).
        let budgeted = within.is_none();
        let budget = self.limits.max_total_bytes;
        if budgeted && self.bytes_read.load(Ordering::SeqCst) >= budget {
            return Err(RequestError::Budget { limit: budget });
        }
        let bound = match within {
            Some(b) => b,
            None => {
                let left = self.deadline().saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(RequestError::Deadline {
                        total: self.limits.total,
                    });
                }
                self.limits.request_timeout.min(left)
            }
        };
        let url = self.manager.url(path);
        let mut builder = Request::builder()
            .method(method)
            .uri(&url)
            .header(header::ACCEPT, "application/json");
        if let Some(s) = session {
            builder = builder.header(header::COOKIE, s.cookie.clone());
            if let Some(x) = &s.xsrf {
                builder = builder.header(XSRF_HEADER, x.clone());
            }
        }
        let payload = match body {
            Some((content_type, bytes)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                bytes
            }
            None => Bytes::new(),
        };
        let request = builder.body(Full::new(payload)).map_err(|_| {
            RequestError::BadPath(format!("not a request URL: {}", clean(&url, 200)))
        })?;
        let max = self.limits.max_body_bytes;
        let manager = self.manager.to_string();
        let exchange = async {
            let response =
                self.http
                    .request(request)
                    .await
                    .map_err(|e| RequestError::Transport {
                        manager: manager.clone(),
                        why: clean(&crate::error::chain(&e), 2 * MAX_MESSAGE_CHARS),
                    })?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, max);
            let body = if budgeted {
                read_budgeted(body, &self.bytes_read, budget).await?
            } else {
                body.collect().await.map(|c| c.to_bytes())
            };
            let body = body.map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    RequestError::Large {
                        manager: manager.clone(),
                        limit: max,
                    }
                } else {
                    RequestError::Transport {
                        manager: manager.clone(),
                        why: clean(&e.to_string(), 2 * MAX_MESSAGE_CHARS),
                    }
                }
            })?;
            Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(bound, exchange).await {
            Ok(r) => r,
            Err(_) => Err(RequestError::Slow {
                manager: self.manager.to_string(),
                bound,
            }),
        }
    }
}

/// A body read frame by frame, each frame counted into the run's `spent` bytes: past
/// `budget` the read stops at once ([`RequestError::Budget`]), so the run holds at most the
/// budget and the frames in flight when it was reached. The inner error (the size cap, the
/// transport) is the caller's to tell.
async fn read_budgeted<B>(
    mut body: B,
    spent: &std::sync::atomic::AtomicU64,
    budget: u64,
) -> Result<Result<Bytes, B::Error>, RequestError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let mut out = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        if let Ok(data) = frame.into_data() {
            let now = spent.fetch_add(data.len() as u64, Ordering::SeqCst) + data.len() as u64;
            if now > budget {
                return Err(RequestError::Budget { limit: budget });
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Ok(out.freeze()))
}

#[cfg(test)]
pub(crate) mod tests;
