//! Is the workload cluster's API server answering? Read from the Supervisor side: the cluster's
//! `<cluster>-kubeconfig` secret (key `value`) holds an admin kubeconfig; we ask its server for
//! `/readyz` (or `/version` when `/readyz` is not served) with a short bound.
//!
//! The kubeconfig holds credentials. It lives only in memory; nothing from it but the server URL
//! is ever printed, logged or written, and parse errors are reported without the parser's text
//! (serde messages can quote the offending value).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::{Error, KubeErrorExt, Result};
use serde::{Deserialize, Serialize};
use tracing::debug;

/// What the check found; the JSON contract uses these names (and tables show them).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display, strum::VariantArray,
)]
pub enum ApiState {
    /// It answered 2xx.
    Reachable,
    /// It answered, with an HTTP error (e.g. 500 from /readyz while etcd has no quorum).
    HttpError,
    /// No answer within the bound (a dropping firewall, a dead VIP, a hung server).
    Timeout,
    /// Connection refused (nothing listens, or a rejecting firewall).
    Refused,
    /// The TLS handshake failed (wrong CA, not TLS at all, ...).
    TlsError,
    /// Another network failure (no route, DNS, reset).
    Unreachable,
    /// Not checked: the kubeconfig secret is missing, unreadable or unusable.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadApi {
    pub state: ApiState,
    /// The API server URL from the kubeconfig (never its credentials).
    pub server: Option<String>,
    /// The path that answered.
    pub path: Option<String>,
    pub http_status: Option<u16>,
    pub elapsed_ms: Option<u64>,
    /// One line: what happened, for humans.
    pub detail: String,
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
        }
    }
    pub fn is_reachable(&self) -> bool {
        self.state == ApiState::Reachable
    }
}

pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// The workload API as checked, and the kubeconfig it was checked with (read once; the pod
/// route builds its client from the same one). The kubeconfig holds credentials: it is kept in
/// memory, and this type does not print it.
pub struct WorkloadCheck {
    pub api: WorkloadApi,
    cluster: String,
    kubeconfig: Option<Config>,
}

impl WorkloadCheck {
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

fn bounded_client(mut config: Config, bound: Duration, cluster: &str) -> Result<Client> {
    config.connect_timeout = Some(bound);
    config.read_timeout = Some(bound);
    Client::try_from(config).map_err(|e| Error::kube(format!("workload cluster {cluster:?}"), e))
}

/// Why the `<cluster>-kubeconfig` secret gave no usable kubeconfig.
enum SecretProblem {
    /// The API refused or failed the read (404 included).
    Read(kube::Error),
    NoValue,
    NotText,
    Invalid(String),
}

async fn read_kubeconfig(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
) -> std::result::Result<Config, SecretProblem> {
    let secrets: Api<Secret> = Api::namespaced(supervisor.clone(), namespace);
    let secret = secrets
        .get(&kubeconfig_secret_name(cluster))
        .await
        .map_err(SecretProblem::Read)?;
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get("value"))
        .ok_or(SecretProblem::NoValue)?;
    let text = std::str::from_utf8(&value.0).map_err(|_| SecretProblem::NotText)?;
    config_from(text).await.map_err(SecretProblem::Invalid)
}

/// A client for the workload cluster, from its `<cluster>-kubeconfig` secret in the Supervisor.
pub async fn client(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
    bound: Duration,
) -> Result<Client> {
    let name = kubeconfig_secret_name(cluster);
    let kubeconfig = read_kubeconfig(supervisor, namespace, cluster)
        .await
        .map_err(|p| match p {
            SecretProblem::Read(e) => Error::kube(
                format!("reading secret {name:?} in namespace {namespace:?}"),
                e,
            ),
            SecretProblem::NoValue | SecretProblem::NotText => {
                Error::config(format!("secret {name:?} has no text key \"value\""))
            }
            SecretProblem::Invalid(why) => Error::config(format!("secret {name:?}: {why}")),
        })?;
    bounded_client(kubeconfig, bound, cluster)
}

/// Reads the cluster's kubeconfig secret and checks its API server, within `bound`.
pub async fn check(
    supervisor: &Client,
    namespace: &str,
    cluster: &str,
    bound: Duration,
) -> WorkloadCheck {
    let name = kubeconfig_secret_name(cluster);
    match read_kubeconfig(supervisor, namespace, cluster).await {
        Ok(config) => WorkloadCheck {
            api: probe(config.clone(), bound).await,
            cluster: cluster.to_string(),
            kubeconfig: Some(config),
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
            }),
            kubeconfig: None,
        },
    }
}

/// Builds a client config from the kubeconfig text without ever echoing the text.
pub(crate) async fn config_from(text: &str) -> Result<Config, String> {
    let kubeconfig = Kubeconfig::from_yaml(text)
        .map_err(|_| "key \"value\" is not a valid kubeconfig".to_string())?;
    // An exec or auth-provider entry would run a program named by the secret: not ours to run.
    if kubeconfig.auth_infos.iter().any(|a| {
        a.auth_info
            .as_ref()
            .is_some_and(|i| i.exec.is_some() || i.auth_provider.is_some())
    }) {
        return Err("the kubeconfig authenticates with an exec/auth-provider plugin, which this check does not run".into());
    }
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|_| "the kubeconfig has no usable current context, cluster or user".to_string())
}

/// Asks the server for `/readyz`, then `/version` if `/readyz` is not served, within `bound`.
pub async fn probe(mut config: Config, bound: Duration) -> WorkloadApi {
    let server = config.cluster_url.to_string();
    config.connect_timeout = Some(bound);
    config.read_timeout = Some(bound);
    config.write_timeout = Some(bound);
    let client = match Client::try_from(config) {
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
    })
}

/// Reads the cause out of kube's nested error: the io::Error kind when there is one, else TLS
/// by its message (rustls and hyper do not expose a stable type through kube's boxed errors).
fn classify(err: &kube::Error) -> (ApiState, String) {
    use std::io::ErrorKind;
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
