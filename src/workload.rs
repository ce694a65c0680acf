//! Is the workload cluster's API server answering? Read from the Supervisor side: the cluster's
//! `<cluster>-kubeconfig` secret (key `value`) holds an admin kubeconfig; we ask its server for
//! `/readyz` (or `/version` when `/readyz` is not served) with a short bound.
//!
//! The kubeconfig holds credentials. It lives only in memory; nothing from it but the server URL
//! is ever printed, logged or written, and parse errors are reported without the parser's text
//! (serde messages can quote the offending value).

use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::bounds;
use crate::error::{Error, KubeErrorExt, Result};
use crate::supervisor::Endpoint;
use serde::{Deserialize, Serialize};
use tracing::debug;

// `ApiState` and `WorkloadApi` are the contract's `workloadApi` (the reports): their doc
// comments are the schema's descriptions, their serde attributes the json's names (and tables
// show the names).
/// What the workload API check found.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum ApiState {
    /// It answered 2xx.
    Reachable,
    /// It answered, with an HTTP error (e.g. 500 from /readyz while etcd has no quorum).
    HttpError,
    /// No answer within the bound.
    // A dropping firewall, a dead VIP, a hung server.
    Timeout,
    /// Connection refused.
    // Nothing listens, or a rejecting firewall.
    Refused,
    /// The TLS handshake failed.
    // Wrong CA, not TLS at all, ...
    TlsError,
    /// Another network failure (no route, DNS, reset).
    Unreachable,
    /// Not checked: the kubeconfig secret is missing, unreadable or unusable.
    Unknown,
    /// Not contacted: the kubeconfig secret asks for what a secret's writer may not.
    // Read a local file, run a program, use a proxy, or a server other than the Cluster's own
    // endpoint.
    Untrusted,
}

impl ApiState {
    /// The state in a word or two, for people (issue 38: no internal names in human text; the
    /// JSON keeps the code, `Timeout`, for scripts).
    pub fn phrase(self) -> &'static str {
        match self {
            ApiState::Reachable => "answers",
            ApiState::HttpError => "HTTP error",
            ApiState::Timeout => "no answer",
            ApiState::Refused => "refused",
            ApiState::TlsError => "TLS error",
            ApiState::Unreachable => "unreachable",
            ApiState::Unknown => "not checked",
            ApiState::Untrusted => "not contacted",
        }
    }
}

/// What the check found as the end of a sentence about the workload API, each thing said once:
/// `does not answer within 2s` (the detail of a timeout is `no answer within 2s`), `answers
/// (/readyz answered 200)`, `refuses the connection (connection refused)`.
pub(crate) fn said(state: ApiState, detail: &str) -> String {
    let with = |verb: &str| {
        if detail.is_empty() {
            verb.to_string()
        } else {
            format!("{verb} ({detail})")
        }
    };
    match state {
        ApiState::Timeout => match detail.strip_prefix("no answer ") {
            Some(within) => format!("does not answer {within}"),
            None => with("does not answer"),
        },
        ApiState::Reachable => with("answers"),
        ApiState::HttpError => with("answers with an HTTP error"),
        ApiState::Refused => with("refuses the connection"),
        ApiState::TlsError => with("fails the TLS handshake"),
        ApiState::Unreachable => with("is unreachable"),
        ApiState::Unknown => with("was not checked"),
        ApiState::Untrusted => with("was not contacted"),
    }
}

/// The workload cluster's API server, as the check found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadApi {
    /// What the check found.
    pub state: ApiState,
    /// The API server URL from the kubeconfig (never its credentials).
    pub server: Option<String>,
    /// The path that answered.
    pub path: Option<String>,
    /// The HTTP status.
    pub http_status: Option<u16>,
    /// How long it took.
    pub elapsed_ms: Option<u64>,
    /// One line: what happened, for humans.
    pub detail: String,
    /// When this check was made (RFC 3339, the plugin's clock). Absent where not recorded.
    // The answer's or the bound's moment; bundles written before the field have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// The check made before the probes, when the API was checked again after them: this
    /// object is then the check after the probes (what the verdict judges), that one the
    /// first (its own `beforeProbes` absent). Absent when the API was checked once (no usable
    /// kubeconfig, `--dry-run`, `status`).
    // ([`WorkloadCheck::recheck`]): the first is kept so the report says when the API changed
    // (etcd healing mid-run). Its schema is the same fields without this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<WorkloadApiCheck>")]
    pub before_probes: Option<Box<WorkloadApi>>,
}

/// The workload API's check before the probes (`workloadApi.beforeProbes`): the same fields as
/// `workloadApi`, without one of its own.
// The schema of `WorkloadApi::before_probes` only, never built: the value is a `WorkloadApi`
// whose own `before_probes` is None (it is skipped), so the json is these fields.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // only its schema is read: its fields are never
pub(crate) struct WorkloadApiCheck {
    /// What the check found.
    pub state: ApiState,
    /// The API server URL from the kubeconfig (never its credentials).
    pub server: Option<String>,
    /// The path that answered.
    pub path: Option<String>,
    /// The HTTP status.
    pub http_status: Option<u16>,
    /// How long it took.
    pub elapsed_ms: Option<u64>,
    /// One line: what happened, for humans.
    pub detail: String,
    /// When this check was made (RFC 3339, the plugin's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
}

impl WorkloadApi {
    fn unknown(detail: String) -> WorkloadApi {
        WorkloadApi {
            state: ApiState::Unknown,
            server: None,
            path: None,
            http_status: None,
            elapsed_ms: None,
            detail,
            checked_at: None,
            before_probes: None,
        }
    }
    pub fn is_reachable(&self) -> bool {
        self.state == ApiState::Reachable
    }

    /// What the check found, in words ([`said`]): `does not answer within 2s`.
    pub fn said(&self) -> String {
        said(self.state, &self.detail)
    }

    /// This observation stamped with the moment it was made.
    fn at(mut self, when: std::time::SystemTime) -> WorkloadApi {
        self.checked_at = Some(humantime::format_rfc3339_seconds(when).to_string());
        self
    }
}

pub(crate) fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// How the secret's credentials may travel to its server. A secret's token crosses the network
/// between the admin and the Cluster's endpoint: only TLS verified against the cluster's CA
/// (`certificate-authority-data`, inline as CAPI writes it) keeps it from whoever sits on that
/// path (see [`trust`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Tls {
    /// The server's certificate must chain to the secret's `certificate-authority-data`; a
    /// secret without one, or with `insecure-skip-tls-verify: true`, is refused.
    #[default]
    Verify,
    /// `--workload-insecure-skip-tls-verify`, as kubectl's: the server's certificate is not checked (the
    /// secret's CA is ignored, its `insecure-skip-tls-verify` accepted), and an `http://` server
    /// is used as it is: the admin's explicit choice, said on stderr and in the report.
    SkipVerify,
}

/// The workload API as checked, and the kubeconfig it was checked with (read once; the pod
/// route builds its client from the same one). The kubeconfig holds credentials: it is kept in
/// memory, and this type does not print it.
pub(crate) struct WorkloadCheck {
    pub api: WorkloadApi,
    cluster: String,
    kubeconfig: Option<Config>,
    tls: Tls,
}

impl WorkloadCheck {
    /// Checks the workload API again, after the probes, with the same kubeconfig and code as
    /// the first check ([`probe`]) within `bound`: etcd may have healed (or broken) while the
    /// probes ran, and `Healthy` needs the API seen answering after etcd was seen healthy. The
    /// new observation becomes [`WorkloadCheck::api`], the first kept as its
    /// [`WorkloadApi::before_probes`]. Without a usable kubeconfig (`Unknown`, `Untrusted`)
    /// there is nothing to ask: the first observation stays, unchanged.
    pub async fn recheck(&mut self, bound: Duration) {
        let Some(config) = self.kubeconfig.clone() else {
            return;
        };
        let again =
            unverified(probe(config, bound).await, self.tls).at(std::time::SystemTime::now());
        let mut first = std::mem::replace(&mut self.api, again);
        // Only one observation back: the first's own history, if any, is dropped.
        first.before_probes = None;
        self.api.before_probes = Some(Box::new(first));
    }

    /// A client for the workload cluster, each request bounded by `bound`.
    pub fn client(&self, bound: Duration) -> Result<Client> {
        let config = self.kubeconfig.clone().ok_or_else(|| {
            Error::config(format!(
                "no usable workload kubeconfig: {}",
                self.api.detail
            ))
        })?;
        bounded_client(config, bound, &self.cluster)
    }
}

/// A workload client whose every request is within `bound`, headers and body, and every body
/// within its cap (`bounds`).
fn bounded_client(config: Config, bound: Duration, cluster: &str) -> Result<Client> {
    bounds::client(config, bounds::Api::Workload, bound)
        .map_err(|e| Error::kube(format!("workload cluster {cluster:?}"), e))
}

/// Why the `<cluster>-kubeconfig` secret gave no usable kubeconfig.
enum SecretProblem {
    /// The API refused or failed the read (404 included).
    Read(kube::Error),
    NoValue,
    NotText,
    Invalid(String),
    /// Refused by [`trust`]: what it asked for, in one line.
    Untrusted(String),
}

async fn read_kubeconfig(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
    endpoint: Option<&Endpoint>,
    tls: Tls,
) -> std::result::Result<Config, SecretProblem> {
    // Through the Secret row of the Supervisor's kinds, as every read of the Supervisor.
    let secret =
        crate::supervisor::read::secret(supervisor, namespace, &kubeconfig_secret_name(cluster))
            .await
            .map_err(SecretProblem::Read)?;
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get("value"))
        .ok_or(SecretProblem::NoValue)?;
    let text = std::str::from_utf8(&value.0).map_err(|_| SecretProblem::NotText)?;
    let kubeconfig = Kubeconfig::from_yaml(text)
        .map_err(|_| SecretProblem::Invalid("key \"value\" is not a valid kubeconfig".into()))?;
    trust(&kubeconfig, endpoint, tls).map_err(SecretProblem::Untrusted)?;
    config_from(kubeconfig, tls)
        .await
        .map_err(SecretProblem::Invalid)
}

/// A client for the workload cluster, from its `<cluster>-kubeconfig` secret in the Supervisor.
pub(crate) async fn client(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
    endpoint: Option<&Endpoint>,
    tls: Tls,
    bound: Duration,
) -> Result<Client> {
    let name = kubeconfig_secret_name(cluster);
    let kubeconfig = read_kubeconfig(supervisor, namespace, cluster, endpoint, tls)
        .await
        .map_err(|p| match p {
            SecretProblem::Read(e) => Error::kube(
                format!("reading secret {name:?} in namespace {namespace:?}"),
                e,
            ),
            SecretProblem::NoValue | SecretProblem::NotText => {
                Error::config(format!("secret {name:?} has no text key \"value\""))
            }
            SecretProblem::Invalid(why) | SecretProblem::Untrusted(why) => {
                Error::config(format!("secret {name:?}: {why}"))
            }
        })?;
    bounded_client(kubeconfig, bound, cluster)
}

/// Reads the cluster's kubeconfig secret and checks its API server, within `bound`. `endpoint`
/// is the Cluster's `spec.controlPlaneEndpoint`: the kubeconfig must point there; `tls` says
/// how its server's certificate is checked.
pub(crate) async fn check(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
    endpoint: Option<&Endpoint>,
    tls: Tls,
    bound: Duration,
) -> WorkloadCheck {
    let name = kubeconfig_secret_name(cluster);
    match read_kubeconfig(supervisor, namespace, cluster, endpoint, tls).await {
        Err(SecretProblem::Untrusted(why)) => WorkloadCheck {
            cluster: cluster.to_string(),
            api: WorkloadApi {
                state: ApiState::Untrusted,
                ..WorkloadApi::unknown(format!("secret {name:?}: {why}"))
            },
            kubeconfig: None,
            tls,
        },
        Ok(config) => WorkloadCheck {
            api: unverified(probe(config.clone(), bound).await, tls)
                .at(std::time::SystemTime::now()),
            cluster: cluster.to_string(),
            kubeconfig: Some(config),
            tls,
        },
        Err(problem) => WorkloadCheck {
            cluster: cluster.to_string(),
            api: WorkloadApi::unknown(match problem {
                SecretProblem::Read(e) if e.is_not_found() => format!(
                    "secret {name:?} not found in namespace {namespace:?}: cannot check the workload API"
                ),
                SecretProblem::Read(e) => match (e.status_code(), e.status_message()) {
                    (Some(code), Some(m)) => format!("cannot read secret {name:?}: {m} ({code})"),
                    _ => format!("cannot read secret {name:?}: {}", crate::error::chain(&e)),
                },
                SecretProblem::NoValue => format!("secret {name:?} has no key \"value\""),
                SecretProblem::NotText => format!("secret {name:?}: key \"value\" is not text"),
                SecretProblem::Invalid(why) => format!("secret {name:?}: {why}"),
                SecretProblem::Untrusted(_) => unreachable!("answered above"),
            }),
            kubeconfig: None,
            tls,
        },
    }
}

/// Builds a client config from a kubeconfig that [`trust`] accepted: the server's certificate
/// checked against the secret's CA only (`root_cert`: never this machine's roots), or not at
/// all with [`Tls::SkipVerify`].
pub(crate) async fn config_from(mut kubeconfig: Kubeconfig, tls: Tls) -> Result<Config, String> {
    use kube::config::KubeconfigError;
    if tls == Tls::SkipVerify {
        // As kubectl's flag: the CA is cleared, not parsed (it is not used).
        for c in kubeconfig
            .clusters
            .iter_mut()
            .filter_map(|c| c.cluster.as_mut())
        {
            c.certificate_authority_data = None;
        }
    }
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| match e {
            KubeconfigError::LoadCertificateAuthority(_)
            | KubeconfigError::ParseCertificates(_) => {
                "its certificate-authority-data is not a base64-encoded PEM certificate".to_string()
            }
            _ => "the kubeconfig has no usable current context, cluster or user".to_string(),
        })?;
    match tls {
        Tls::Verify => {
            config.accept_invalid_certs = false;
            if config.root_cert.as_ref().is_none_or(|c| c.is_empty()) {
                // Never fall back to this machine's roots (trust() refused a missing one).
                return Err("its certificate-authority-data holds no certificate".into());
            }
        }
        Tls::SkipVerify => {
            config.accept_invalid_certs = true;
            // No root store is consulted; an empty one spares loading this machine's roots.
            config.root_cert.get_or_insert_with(Vec::new);
        }
    }
    Ok(config)
}

/// Adds to the report's detail that the answer came from an unverified server, or over plain
/// http, when `tls` is [`Tls::SkipVerify`].
fn unverified(mut api: WorkloadApi, tls: Tls) -> WorkloadApi {
    let Some(server) = api.server.as_deref().filter(|_| tls == Tls::SkipVerify) else {
        return api;
    };
    let how = if server.to_ascii_lowercase().starts_with("https:") {
        "certificate not verified"
    } else {
        "plain http, credentials sent unencrypted"
    };
    api.detail
        .push_str(&format!(" ({how}: --workload-insecure-skip-tls-verify)"));
    api
}

/// Accepts the secret's kubeconfig only as credentials and an address for the Cluster's own
/// endpoint, else says which field is refused.
///
/// The secret is written by whoever can edit Secrets in the vSphere Namespace, so it is data:
/// credentials and an address, never instructions. Refused, before any
/// request, with one line naming the field: a local file (`tokenFile`, `client-certificate`,
/// `client-key`, `certificate-authority`: kube would read the admin's file and send it on), a
/// `proxy-url` (the admin's requests would go through it), an `exec` or `auth-provider` (a
/// program to run), and a server that is not the Cluster's `spec.controlPlaneEndpoint` (the
/// credentials and our requests would go elsewhere). Then the transport ([`transport`]): only
/// `https://`, verified against the secret's `certificate-authority-data` unless `tls` says
/// otherwise. Only the entries the current context uses are read, as kube reads only those.
pub(crate) fn trust(
    kubeconfig: &Kubeconfig,
    endpoint: Option<&Endpoint>,
    tls: Tls,
) -> Result<(), String> {
    let inline = "the secret's kubeconfig must carry its credentials inline (token, \
                  client-certificate-data, client-key-data, certificate-authority-data)";
    let context_name = kubeconfig
        .current_context
        .as_deref()
        .ok_or("the kubeconfig has no current-context")?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| format!("the kubeconfig has no context {context_name:?}"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| format!("the kubeconfig has no cluster {:?}", context.cluster))?;
    let refused = |entry: &str, name: &str, field: &str, what: &str| {
        format!("{entry} {name:?} in the kubeconfig sets {field} ({what}): refused; {inline}")
    };
    if cluster.certificate_authority.is_some() {
        return Err(refused(
            "cluster",
            &context.cluster,
            "certificate-authority",
            "a file on this machine",
        ));
    }
    if cluster.proxy_url.is_some() {
        return Err(refused(
            "cluster",
            &context.cluster,
            "proxy-url",
            "a proxy for our requests",
        ));
    }
    if let Some(user) = &context.user {
        let auth = kubeconfig
            .auth_infos
            .iter()
            .find(|a| &a.name == user)
            .and_then(|a| a.auth_info.as_ref())
            .ok_or_else(|| format!("the kubeconfig has no user {user:?}"))?;
        let file = "a file on this machine";
        let checks = [
            (auth.token_file.is_some(), "tokenFile", file),
            (
                auth.client_certificate.is_some(),
                "client-certificate",
                file,
            ),
            (auth.client_key.is_some(), "client-key", file),
            (auth.exec.is_some(), "exec", "a program to run"),
            (
                auth.auth_provider.is_some(),
                "auth-provider",
                "a program to run",
            ),
        ];
        if let Some((_, field, what)) = checks.iter().find(|(set, _, _)| *set) {
            return Err(refused("user", user, field, what));
        }
    }
    let server = cluster.server.as_deref().unwrap_or_default();
    same_server(server, endpoint)?;
    transport(&context.cluster, cluster, tls)
}

/// Accepts only `https://` verified against the secret's CA, unless `tls` is
/// [`Tls::SkipVerify`].
///
/// The secret's token goes to its server in every request. Over `http://` anyone on the path
/// reads it; over TLS without a check of the server's certificate (`insecure-skip-tls-verify:
/// true`, or no `certificate-authority-data`, which CAPI always writes) anyone who can answer for
/// the endpoint's address does. Each is refused unless the admin passes
/// `--workload-insecure-skip-tls-verify` for this run. kubectl sends a kubeconfig's credentials to an
/// `http://` server without a word; here it takes that explicit flag too (kube-apiserver has
/// served no plain HTTP since 1.20: such a server is a proxy, a test rig or an edit of the secret).
fn transport(name: &str, cluster: &kube::config::Cluster, tls: Tls) -> Result<(), String> {
    if tls == Tls::SkipVerify {
        return Ok(());
    }
    let server = cluster.server.as_deref().unwrap_or_default();
    let scheme = server
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.scheme_str().map(str::to_ascii_lowercase));
    let skip = "pass --workload-insecure-skip-tls-verify to send the credentials anyway";
    if scheme.as_deref() != Some("https") {
        return Err(format!(
            "cluster {name:?} in the kubeconfig sets server {server:?} (not https: the token would cross the network readable): refused; {skip}, in clear"
        ));
    }
    if cluster.insecure_skip_tls_verify == Some(true) {
        return Err(format!(
            "cluster {name:?} in the kubeconfig sets insecure-skip-tls-verify (the server's certificate would not be checked): refused; {skip}"
        ));
    }
    if cluster
        .certificate_authority_data
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        return Err(format!(
            "cluster {name:?} in the kubeconfig has no certificate-authority-data (the server's certificate could not be checked against the cluster's CA): refused; {skip}"
        ));
    }
    Ok(())
}

/// Is `server` (a URL) the Cluster's endpoint? Hosts compare as IP addresses when both are, else
/// case-insensitively; the port is the URL's (or its scheme's default).
fn same_server(server: &str, endpoint: Option<&Endpoint>) -> Result<(), String> {
    let Some(endpoint) = endpoint else {
        return Err(format!(
            "the Cluster has no spec.controlPlaneEndpoint to check the kubeconfig's server {server:?} against: refused"
        ));
    };
    let want = match endpoint.port {
        Some(port) => format!("{}:{port}", endpoint.host),
        None => endpoint.host.clone(),
    };
    let differ = || {
        format!(
            "the kubeconfig's server {server:?} is not the Cluster's spec.controlPlaneEndpoint {want:?}: refused (the secret may have been edited)"
        )
    };
    let uri: http::Uri = server.parse().map_err(|_| differ())?;
    let host = uri.host().ok_or_else(differ)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    let same_host = match (
        host.parse::<std::net::IpAddr>(),
        endpoint.host.parse::<std::net::IpAddr>(),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => host.eq_ignore_ascii_case(&endpoint.host),
    };
    if same_host && endpoint.port.is_none_or(|p| p == port) {
        Ok(())
    } else {
        Err(differ())
    }
}

/// Asks the server for `/readyz`, then `/version` if `/readyz` is not served, within `bound`.
///
/// Only the status is used; the body is not read (a server that trickles it holds nothing). The
/// client's own deadline is `bound` too, and the two paths share it.
pub(crate) async fn probe(config: Config, bound: Duration) -> WorkloadApi {
    let server = config.cluster_url.to_string();
    let client = match bounds::client(config, bounds::Api::Workload, bound) {
        Ok(c) => c,
        Err(e) => {
            let mut w = WorkloadApi::unknown(format!(
                "cannot build a client for {server}: {}",
                crate::error::chain(&e)
            ));
            w.server = Some(server);
            return w;
        }
    };
    let started = Instant::now();
    let mut result = None;
    for path in ["/readyz", "/version"] {
        let req = http::Request::get(path)
            .body(Vec::new())
            .expect("static request");
        let left = bound.saturating_sub(started.elapsed());
        let outcome = tokio::time::timeout(left, client.send(req.map(Into::into))).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let (state, status, detail) = match outcome {
            Err(_) => (
                ApiState::Timeout,
                None,
                format!("no answer within {}", humantime::format_duration(bound)),
            ),
            Ok(Err(e)) => match classify(&e) {
                // kube's own connect/read timeouts carry the same bound as ours.
                (ApiState::Timeout, _) => (
                    ApiState::Timeout,
                    None,
                    format!("no answer within {}", humantime::format_duration(bound)),
                ),
                (state, why) => (state, None, why),
            },
            Ok(Ok(resp)) => {
                let code = resp.status().as_u16();
                // Some servers do not serve /readyz to everyone; /version says it is up too.
                if code == 404 && path == "/readyz" {
                    debug!("/readyz not served, trying /version");
                    continue;
                }
                if resp.status().is_success() {
                    (
                        ApiState::Reachable,
                        Some(code),
                        format!("{path} answered {code}"),
                    )
                } else {
                    (
                        ApiState::HttpError,
                        Some(code),
                        format!("{path} answered {code}"),
                    )
                }
            }
        };
        result = Some(WorkloadApi {
            state,
            server: Some(server.clone()),
            path: Some(path.to_string()),
            http_status: status,
            elapsed_ms: Some(elapsed_ms),
            detail,
            checked_at: None,
            before_probes: None,
        });
        break;
    }
    result.unwrap_or_else(|| WorkloadApi {
        state: ApiState::HttpError,
        server: Some(server.clone()),
        path: Some("/version".into()),
        http_status: Some(404),
        elapsed_ms: Some(started.elapsed().as_millis() as u64),
        detail: "neither /readyz nor /version is served".into(),
        checked_at: None,
        before_probes: None,
    })
}

/// Reads the cause out of kube's nested error: the io::Error kind when there is one, else TLS
/// by its message (rustls and hyper do not expose a stable type through kube's boxed errors).
fn classify(err: &kube::Error) -> (ApiState, String) {
    use std::io::ErrorKind;
    match bounds::exceeded(err) {
        Some(slow @ bounds::Exceeded::Slow { .. }) => return (ApiState::Timeout, slow.to_string()),
        Some(other) => return (ApiState::HttpError, other.to_string()),
        None => {}
    }
    let text = crate::error::chain(err);
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionRefused => {
                    return (ApiState::Refused, "connection refused".into())
                }
                ErrorKind::TimedOut => return (ApiState::Timeout, "connection timed out".into()),
                ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
                    return (ApiState::Unreachable, "no route to host".into())
                }
                _ => {}
            }
        }
        source = e.source();
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("connection refused") {
        (ApiState::Refused, "connection refused".into())
    } else if lower.contains("timed out") || lower.contains("elapsed") {
        (ApiState::Timeout, "connection timed out".into())
    } else if [
        "tls",
        "certificate",
        "handshake",
        "corrupt message",
        "invalidcontenttype",
    ]
    .iter()
    .any(|k| lower.contains(k))
    {
        (ApiState::TlsError, format!("TLS handshake failed: {text}"))
    } else {
        (ApiState::Unreachable, text)
    }
}

#[cfg(test)]
mod tests {

    /// The state in words, each thing once (issue 38: "no answer … no answer within" said
    /// one thing twice), never the JSON's code.
    #[test]
    fn said_once_in_words() {
        use strum::VariantArray;
        assert_eq!(
            said(ApiState::Timeout, "no answer within 2s"),
            "does not answer within 2s"
        );
        assert_eq!(
            said(ApiState::Reachable, "/readyz answered 200"),
            "answers (/readyz answered 200)"
        );
        for s in ApiState::VARIANTS {
            let words = said(*s, "d");
            assert!(!words.contains(&s.to_string()), "{s}: {words}");
            assert!(!s.phrase().contains(&s.to_string()), "{s}");
        }
    }
    use super::*;

    fn endpoint(host: &str, port: Option<u16>) -> Endpoint {
        Endpoint {
            host: host.into(),
            port,
        }
    }

    /// A kubeconfig as CAPI writes it, with `cluster_extra`/`user_extra` lines added.
    fn kubeconfig(server: &str, cluster_extra: &str, user_extra: &str) -> Kubeconfig {
        let text = format!(
            "apiVersion: v1
kind: Config
current-context: tkc-admin@tkc
contexts:
- name: tkc-admin@tkc
  context: {{cluster: tkc, user: tkc-admin}}
- name: other
  context: {{cluster: other, user: other}}
clusters:
- name: tkc
  cluster:
    server: {server}
    certificate-authority-data: Y2E=
{cluster_extra}
- name: other
  cluster: {{server: 'https://203.0.113.9:6443', certificate-authority: /etc/passwd}}
users:
- name: tkc-admin
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
{user_extra}
- name: other
  user: {{tokenFile: /etc/shadow}}
"
        );
        Kubeconfig::from_yaml(&text).unwrap()
    }

    #[test]
    fn inline_credentials_for_the_clusters_own_endpoint_are_accepted() {
        let ep = endpoint("198.18.0.10", Some(6443));
        let k = kubeconfig("https://198.18.0.10:6443", "", "");
        assert_eq!(
            trust(&k, Some(&ep), Tls::Verify),
            Ok(()),
            "unused entries are not read"
        );
        let k = kubeconfig("https://TKC.example.com:6443", "", "");
        assert_eq!(
            trust(
                &k,
                Some(&endpoint("tkc.example.com", Some(6443))),
                Tls::Verify
            ),
            Ok(())
        );
        let k = kubeconfig("https://[fd00::10]:6443", "", "");
        assert_eq!(
            trust(&k, Some(&endpoint("fd00:0::10", Some(6443))), Tls::Verify),
            Ok(())
        );
        let k = kubeconfig("https://198.18.0.10", "", "");
        assert_eq!(
            trust(&k, Some(&endpoint("198.18.0.10", Some(443))), Tls::Verify),
            Ok(())
        );
        assert_eq!(
            trust(&k, Some(&endpoint("198.18.0.10", None)), Tls::Verify),
            Ok(())
        );
    }

    #[test]
    fn every_reference_to_a_file_a_program_or_a_proxy_is_refused_by_name() {
        let ep = endpoint("198.18.0.10", Some(6443));
        let server = "https://198.18.0.10:6443";
        let exec = "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}";
        let provider = "    auth-provider: {name: oidc}";
        for (cluster_extra, user_extra, field) in [
            (
                "    certificate-authority: /root/ca.crt",
                "",
                "certificate-authority",
            ),
            ("    proxy-url: http://198.51.100.1:3128", "", "proxy-url"),
            ("", "    tokenFile: /home/admin/.token", "tokenFile"),
            (
                "",
                "    client-certificate: /home/admin/c.crt",
                "client-certificate",
            ),
            ("", "    client-key: /home/admin/c.key", "client-key"),
            ("", exec, "exec"),
            ("", provider, "auth-provider"),
        ] {
            let k = kubeconfig(server, cluster_extra, user_extra);
            let err = trust(&k, Some(&ep), Tls::Verify).unwrap_err();
            assert!(err.contains(&format!(" sets {field} (")), "{field}: {err}");
            assert!(err.contains("inline"), "{err}");
            assert!(
                !err.contains("/home/admin") && !err.contains("/root"),
                "{err}"
            );
        }
    }

    /// Without a transport check in `trust`, kube sends the token in clear over `http://`, and
    /// to any certificate with `insecure-skip-tls-verify` or no CA (this machine's roots).
    #[test]
    fn cleartext_and_unverified_transport_are_refused_by_field() {
        let ep = endpoint("198.18.0.10", Some(6443));
        let k = kubeconfig("http://198.18.0.10:6443", "", "");
        let err = trust(&k, Some(&ep), Tls::Verify).unwrap_err();
        assert!(
            err.contains("sets server \"http://198.18.0.10:6443\" (not https"),
            "{err}"
        );
        assert!(
            err.ends_with(
                "pass --workload-insecure-skip-tls-verify to send the credentials anyway, in clear"
            ),
            "{err}"
        );
        assert_eq!(trust(&k, Some(&ep), Tls::SkipVerify), Ok(()));
        let k = kubeconfig(
            "https://198.18.0.10:6443",
            "    insecure-skip-tls-verify: true",
            "",
        );
        let err = trust(&k, Some(&ep), Tls::Verify).unwrap_err();
        assert!(
            err.starts_with("cluster \"tkc\" in the kubeconfig sets insecure-skip-tls-verify ("),
            "{err}"
        );
        assert!(err
            .ends_with("pass --workload-insecure-skip-tls-verify to send the credentials anyway"));
        assert_eq!(trust(&k, Some(&ep), Tls::SkipVerify), Ok(()));
        let mut k = kubeconfig("https://198.18.0.10:6443", "", "");
        for empty in [None, Some(String::new())] {
            k.clusters[0]
                .cluster
                .as_mut()
                .unwrap()
                .certificate_authority_data = empty;
            let err = trust(&k, Some(&ep), Tls::Verify).unwrap_err();
            assert!(err.contains("has no certificate-authority-data ("), "{err}");
            assert_eq!(trust(&k, Some(&ep), Tls::SkipVerify), Ok(()));
        }
    }

    #[tokio::test]
    async fn the_client_trusts_the_secrets_ca_alone_or_nothing_with_the_flag() {
        let k = kubeconfig("https://198.18.0.10:6443", "", "");
        let err = config_from(k.clone(), Tls::Verify).await.unwrap_err();
        assert!(err.contains("certificate-authority-data"), "{err}");
        let config = config_from(k, Tls::SkipVerify).await.unwrap();
        assert!(config.accept_invalid_certs);
        assert_eq!(
            config.root_cert,
            Some(Vec::new()),
            "never this machine's roots"
        );
    }

    #[test]
    fn a_server_that_is_not_the_clusters_endpoint_is_refused_naming_both() {
        let ep = endpoint("198.18.0.10", Some(6443));
        for server in [
            "https://203.0.113.7:6443",
            "https://198.18.0.10:7443",
            "https://198.18.0.10",
            "https://198.18.0.10.attacker.example:6443",
            "not a url",
        ] {
            let err = trust(&kubeconfig(server, "", ""), Some(&ep), Tls::Verify).unwrap_err();
            assert!(err.contains(&format!("{server:?}")), "{err}");
            assert!(err.contains("\"198.18.0.10:6443\""), "{err}");
        }
        let err = trust(
            &kubeconfig("https://198.18.0.10:6443", "", ""),
            None,
            Tls::Verify,
        )
        .unwrap_err();
        assert!(err.contains("no spec.controlPlaneEndpoint"), "{err}");
    }
}
