//! The edge where the Supervisor client is made, from kubectl's flags: `--kubeconfig` (else
//! `$KUBECONFIG`, merged as kubectl merges it, else `~/.kube/config`), `--context`, and
//! `-n` (else the context's namespace). Everything deeper takes the `Client` this returns.

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use std::path::PathBuf;
use std::time::Duration;

use crate::bounds;
use crate::command::Kubectl;
use crate::error::{Error, Result};
use crate::names::validate_dns1123_label;

/// kubectl's connection flags, resolved.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectOptions {
    /// `--kubeconfig`; else `$KUBECONFIG`, else `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `-n`; else the context's namespace.
    pub namespace: Option<String>,
    /// Bound of each request to the Supervisor API, from sending it to the last byte of its
    /// answer (`bounds`).
    pub request_timeout: Duration,
}

pub(crate) struct Connection {
    pub client: Client,
    /// The context's name, for messages ("context X is not a Supervisor").
    pub context: String,
    /// `-n`, else the context's namespace, else `default` (as kubectl).
    pub namespace: String,
    /// The API server URL, for messages.
    pub server: String,
    /// `kubectl` as this run reached the Supervisor (its context, its `--kubeconfig`): every
    /// command printed for the admin to paste carries them (resolved here, once).
    pub kubectl: Kubectl,
}

/// A kubeconfig error in our own words, never the parser's.
///
/// The YAML parser's messages can quote values, and a kubeconfig's values include tokens and keys.
fn config_error(where_: &str, e: KubeconfigError) -> Error {
    Error::Kubeconfig {
        location: where_.to_string(),
        why: reword(&e),
        source: Some(Box::new(e)),
    }
}

fn reword(e: &KubeconfigError) -> String {
    match e {
        KubeconfigError::ReadConfig(io, path) => format!(
            "cannot read {}: {} (check --kubeconfig or KUBECONFIG)",
            path.display(),
            crate::error::io_words(io)
        ),
        KubeconfigError::Parse(_) | KubeconfigError::InvalidStructure(_) => {
            "it is not a valid kubeconfig (YAML)".to_string()
        }
        KubeconfigError::FindPath => "no kubeconfig found (set --kubeconfig or KUBECONFIG)".into(),
        KubeconfigError::CurrentContextNotSet => {
            "no current context (use --context or kubectl config use-context)".into()
        }
        KubeconfigError::LoadContext(c) => format!("context {c:?} not found"),
        KubeconfigError::LoadClusterOfContext(c) => {
            format!("cluster {c:?} of the context not found")
        }
        other => other.to_string(),
    }
}

pub(crate) async fn connect(g: &ConnectOptions) -> Result<Connection> {
    let (kubeconfig, where_) = match &g.kubeconfig {
        Some(path) => (Kubeconfig::read_from(path), format!("{}", path.display())),
        None => (
            Kubeconfig::read(),
            "(KUBECONFIG or ~/.kube/config)".to_string(),
        ),
    };
    let kubeconfig = kubeconfig.map_err(|e| config_error(&where_, e))?;
    let context = match g
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
    {
        Some(c) => c,
        None => {
            return Err(Error::Kubeconfig {
                why: reword(&KubeconfigError::CurrentContextNotSet),
                location: where_,
                source: None,
            })
        }
    };
    if !kubeconfig.contexts.iter().any(|c| c.name == context) {
        let mut known: Vec<&str> = kubeconfig
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        known.sort();
        return Err(Error::config(format!(
            "context {context:?} not found in kubeconfig {where_} (contexts: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| config_error(&where_, e))?;

    let namespace = match &g.namespace {
        Some(ns) => ns.clone(),
        None => {
            let ns = config.default_namespace.clone();
            validate_dns1123_label(&ns).map_err(|why| {
                Error::Usage(format!(
                    "context {context:?} sets namespace {ns:?}, which is not a valid name: {why}; pass -n"
                ))
            })?;
            ns
        }
    };
    let server = config.cluster_url.to_string();
    // Each request, headers and body, within --request-timeout; each body within its cap.
    let client =
        bounds::client(config, bounds::Api::Supervisor, g.request_timeout).map_err(|e| {
            Error::config_from(format!("cannot build a client for context {context:?}"), e)
        })?;
    // The context resolved above (the flag, else the current context, which may change before
    // a command is pasted) and the kubeconfig flag as given (else KUBECONFIG or the default,
    // which a pasted command reads as this run did).
    let kubectl = Kubectl::new(Some(&context), g.kubeconfig.as_deref());
    Ok(Connection {
        client,
        context,
        namespace,
        server,
        kubectl,
    })
}
