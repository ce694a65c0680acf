//! A fixture set: its `fake.yaml` settings and its object files.
//!
//! A set is a directory. Every `*.yaml`/`*.yml` file in it except `fake.yaml`
//! holds objects (multi-document; `kind: List` is flattened). Before parsing,
//! `{{NAME}}` placeholders are replaced with the test's variables, falling back
//! to `vars:` defaults in `fake.yaml`; a placeholder with no value is an error
//! (a silently empty server URL would make a test pass for the wrong reason).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

/// A rule that makes matching requests fail with 403 Forbidden, as RBAC would.
/// Every field is optional; an absent field matches anything.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Forbid {
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: Option<String>,
    /// API group; "" is the core group.
    pub group: Option<String>,
    /// Plural resource, with "/sub" for a subresource ("pods/exec").
    pub resource: Option<String>,
    /// The namespace the rule denies. It also denies all-namespaces requests,
    /// which would read that namespace too.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// true: match only requests without a namespace (all-namespaces lists and
    /// cluster-scoped resources), like a user who has only namespace Roles.
    #[serde(default)]
    pub cluster_scope: bool,
}

impl Forbid {
    pub fn matches(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        let opt =
            |rule: &Option<String>, v: &str| rule.as_deref().is_none_or(|r| r == "*" || r == v);
        if self.cluster_scope && namespace.is_some() {
            return false;
        }
        let ns_ok = match (&self.namespace, namespace) {
            (None, _) => true,
            (Some(r), Some(ns)) => r == ns,
            // An all-namespaces request would read the denied namespace as well.
            (Some(_), None) => true,
        };
        let name_ok = match (&self.name, name) {
            (None, _) => true,
            (Some(r), Some(n)) => r == n,
            (Some(_), None) => false,
        };
        opt(&self.verb, verb)
            && opt(&self.group, group)
            && opt(&self.resource, resource)
            && ns_ok
            && name_ok
    }
}

/// Versions a group serves, when they are not just those the fixtures use.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupConfig {
    #[serde(default)]
    pub versions: Vec<String>,
    pub preferred_version: Option<String>,
}

/// A resource served with no objects (e.g. apps/v1 deployments on a plain cluster).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtraResource {
    pub api_version: String,
    pub kind: String,
    pub plural: Option<String>,
    pub namespaced: Option<bool>,
}

/// The settings of `fake.yaml`. Unknown keys are an error, to catch typos.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetConfig {
    /// The user named in 403 messages.
    pub user: Option<String>,
    /// Default values of `{{NAME}}` placeholders.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// group name -> served versions and preferred version.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupConfig>,
    #[serde(default)]
    pub resources: Vec<ExtraResource>,
    #[serde(default)]
    pub forbidden: Vec<Forbid>,
    /// Fields of the `/version` answer to override (gitVersion, major, minor, ...).
    #[serde(default)]
    pub version: BTreeMap<String, String>,
    /// Answer aggregated discovery (apidiscovery.k8s.io/v2) when asked. Off by
    /// default: many Supervisors predate it (or serve only v2beta1), so the
    /// legacy answer is the one a client must handle.
    #[serde(default)]
    pub aggregated_discovery: bool,
    /// Create Namespace objects for every namespace the fixtures use, plus
    /// default/kube-system/kube-public (default true).
    pub auto_namespaces: Option<bool>,
    /// Other set directories (relative to this one) whose object files are
    /// loaded first, e.g. `include: [../healthy-v1alpha3]` for a set that only
    /// changes settings. Their fake.yaml is not read.
    #[serde(default)]
    pub include: Vec<String>,
    /// Images no node can pull (`refusedImages: [docker.io/library/busybox:1.36]`): a pod that
    /// uses one stays Pending with ErrImagePull / ImagePullBackOff and never runs. References
    /// are compared normalized (`busybox:1.36` is `docker.io/library/busybox:1.36`).
    #[serde(default)]
    pub refused_images: Vec<String>,
    /// No node can take a pod without `spec.nodeName` (`unschedulablePods: "<kube-scheduler's
    /// message>"`): each such pod is left Pending with `PodScheduled` False, reason
    /// `Unschedulable`, and a `FailedScheduling` event, as kube-scheduler writes them
    /// ([`crate::pods::unschedulable`]). A VDS Supervisor's vSphere Pods, for one.
    pub unschedulable_pods: Option<String>,
}

/// How to start a [`crate::FakeApi`]: a fixture set plus test-supplied overrides.
#[derive(Debug, Clone, Default)]
pub struct FakeConfig {
    pub(crate) dir: Option<PathBuf>,
    pub(crate) set: SetConfig,
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) user: Option<String>,
    pub(crate) listen: Option<SocketAddr>,
    pub(crate) objects: Vec<Value>,
    /// Where the newest fixture timestamp is moved to ([`FakeConfig::stamped_at_start`]).
    pub(crate) stamp_at: Option<std::time::SystemTime>,
}

/// How long before the start the newest fixture timestamp lands with
/// [`FakeConfig::stamped_at_start`]: the Supervisor's conditions read "3m ago", older than
/// anything the lab does after it starts.
pub const STAMP_LEAD: std::time::Duration = std::time::Duration::from_secs(180);

pub(crate) const DEFAULT_USER: &str = "sso:alice@vsphere.local";

impl FakeConfig {
    /// A set with no fixtures: only core v1 and the default namespaces.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Reads `dir/fake.yaml` (optional). Object files are read when the server starts.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            bail!("fixture set {} is not a directory", dir.display());
        }
        let cfg_path = dir.join("fake.yaml");
        let set = if cfg_path.exists() {
            let text = std::fs::read_to_string(&cfg_path)
                .with_context(|| format!("reading {}", cfg_path.display()))?;
            if text
                .trim()
                .lines()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
            {
                SetConfig::default()
            } else {
                serde_yaml_ng::from_str(&text)
                    .with_context(|| format!("parsing {}", cfg_path.display()))?
            }
        } else {
            SetConfig::default()
        };
        Ok(FakeConfig {
            dir: Some(dir.to_path_buf()),
            set,
            ..Default::default()
        })
    }

    /// Stamps the set at start: every timestamp of its objects moves by one offset so that the
    /// newest is [`STAMP_LEAD`] before now (see `src/stamp.rs`). For the demo and the lab, whose
    /// runs happen now; a test that pins a clock leaves its fixtures as written.
    pub fn stamped_at_start(self) -> Self {
        self.stamped_at(std::time::SystemTime::now() - STAMP_LEAD)
    }

    /// [`FakeConfig::stamped_at_start`] with the newest timestamp at `at`.
    pub fn stamped_at(mut self, at: std::time::SystemTime) -> Self {
        self.stamp_at = Some(at);
        self
    }

    /// Sets a `{{name}}` placeholder's value (overrides `vars:` in fake.yaml).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The user named in 403 messages (default `sso:alice@vsphere.local`).
    pub fn user(mut self, name: impl Into<String>) -> Self {
        self.user = Some(name.into());
        self
    }

    /// Listen address (default 127.0.0.1:0). Must be a loopback address.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// Adds a 403 rule to those of fake.yaml.
    pub fn forbid(mut self, rule: Forbid) -> Self {
        self.set.forbidden.push(rule);
        self
    }

    /// Adds an object (JSON form of a manifest) to those of the set.
    pub fn object(mut self, obj: Value) -> Self {
        self.objects.push(obj);
        self
    }

    /// Leaves every pod without a node unschedulable with kube-scheduler's `message` (see
    /// [`SetConfig::unschedulable_pods`]).
    pub fn unschedulable_pods(mut self, message: impl Into<String>) -> Self {
        self.set.unschedulable_pods = Some(message.into());
        self
    }

    /// Makes an image impossible to pull (see [`SetConfig::refused_images`]).
    pub fn refuse_image(mut self, image: impl Into<String>) -> Self {
        self.set.refused_images.push(image.into());
        self
    }

    /// Answer aggregated discovery when asked (see [`SetConfig::aggregated_discovery`]).
    pub fn aggregated_discovery(mut self, on: bool) -> Self {
        self.set.aggregated_discovery = on;
        self
    }

    pub(crate) fn effective_user(&self) -> String {
        self.user
            .clone()
            .or_else(|| self.set.user.clone())
            .unwrap_or_else(|| DEFAULT_USER.to_string())
    }

    /// Reads, templates and parses every object file of the set, in file-name order.
    pub(crate) fn load_objects(
        &self,
        builtin_vars: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>> {
        let mut vars = self.set.vars.clone();
        vars.extend(builtin_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars.extend(self.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        derive_workload_endpoint(&mut vars);
        // What every fixture secret's certificate-authority-data is, as CAPI writes it: the CA
        // of the workload fakes' serving certificates (made once per run), unless a test says.
        vars.entry("WORKLOAD_CA".to_string())
            .or_insert_with(crate::tls::ca_data);
        let mut out = Vec::new();
        if let Some(dir) = &self.dir {
            for inc in &self.set.include {
                load_dir(&dir.join(inc), &vars, &mut out)?;
            }
            load_dir(dir, &vars, &mut out)?;
        }
        out.extend(self.objects.iter().cloned());
        if let Some(at) = self.stamp_at {
            crate::stamp::restamp(&mut out, at);
        }
        Ok(out)
    }
}

/// `{{WORKLOAD_HOST}}` and `{{WORKLOAD_PORT}}` from `{{WORKLOAD_URL}}` (unless set): a Cluster's
/// `spec.controlPlaneEndpoint` is where CAPI points the cluster's kubeconfig, and the plugin refuses
/// a kubeconfig whose server is anywhere else, so the fixtures' Clusters name the fake's address.
/// The same for every `{{WORKLOAD_URL_<SUFFIX>}}` (one workload API per cluster, see
/// [`crate::workload_url_var`]): `{{WORKLOAD_HOST_<SUFFIX>}}`, `{{WORKLOAD_PORT_<SUFFIX>}}`.
fn derive_workload_endpoint(vars: &mut BTreeMap<String, String>) {
    let urls: Vec<(String, String)> = vars
        .iter()
        .filter_map(|(k, v)| {
            let suffix = k.strip_prefix("WORKLOAD_URL")?;
            (suffix.is_empty() || suffix.starts_with('_')).then(|| (suffix.to_string(), v.clone()))
        })
        .collect();
    for (suffix, url) in urls {
        let Ok(uri) = url.parse::<axum::http::Uri>() else {
            continue;
        };
        let Some(host) = uri.host() else {
            continue;
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("http") {
                80
            } else {
                443
            });
        vars.entry(format!("WORKLOAD_HOST{suffix}")).or_insert(host);
        vars.entry(format!("WORKLOAD_PORT{suffix}"))
            .or_insert(port.to_string());
    }
}

/// Loads every object file of one directory (not fake.yaml), in file-name order.
fn load_dir(dir: &Path, vars: &BTreeMap<String, String>, out: &mut Vec<Value>) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
                && p.file_name().and_then(|n| n.to_str()) != Some("fake.yaml")
        })
        .collect();
    files.sort();
    for file in files {
        let raw = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let text =
            substitute(&raw, vars).with_context(|| format!("templating {}", file.display()))?;
        parse_documents(&text, out).with_context(|| format!("parsing {}", file.display()))?;
    }
    Ok(())
}

/// Replaces `{{NAME}}` (optionally `{{ NAME }}`) with its value; unknown names are an error.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut missing = Vec::new();
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let name = after[..end].trim();
        let is_name =
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            // Not a placeholder of ours (e.g. a Go template in a fixture): keep it.
            out.push_str("{{");
            rest = after;
            continue;
        }
        match vars.get(name) {
            Some(v) => out.push_str(v),
            None => missing.push(name.to_string()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        bail!(
            "no value for placeholder(s) {}: pass them with FakeConfig::var or set vars: in fake.yaml",
            missing.join(", ")
        );
    }
    Ok(out)
}

fn parse_documents(text: &str, out: &mut Vec<Value>) -> Result<()> {
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = Value::deserialize(doc)?;
        match v {
            Value::Null => {}
            Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(items) = m.get("items").and_then(Value::as_array) {
                    out.extend(items.iter().cloned());
                }
            }
            Value::Object(_) => out.push(v),
            other => bail!("a document is not an object: {other}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_and_reports_missing() {
        let vars: BTreeMap<String, String> =
            [("WORKLOAD_URL".to_string(), "http://127.0.0.1:1".to_string())].into();
        assert_eq!(
            substitute("server: {{WORKLOAD_URL}}", &vars).unwrap(),
            "server: http://127.0.0.1:1"
        );
        assert_eq!(
            substitute("server: {{ WORKLOAD_URL }}", &vars).unwrap(),
            "server: http://127.0.0.1:1"
        );
        assert_eq!(
            substitute("keep {{ .machine.name }}", &vars).unwrap(),
            "keep {{ .machine.name }}"
        );
        let err = substitute("a: {{NOPE}} {{NOPE}}", &vars)
            .unwrap_err()
            .to_string();
        assert!(err.contains("NOPE"), "{err}");
    }

    #[test]
    fn every_workload_url_gives_its_host_and_port() {
        let mut vars: BTreeMap<String, String> = [
            ("WORKLOAD_URL", "http://127.0.0.1:1"),
            ("WORKLOAD_URL_TKC_A", "http://127.0.0.1:2"),
            ("WORKLOAD_URL_TKC_B", "https://[::1]"),
            ("WORKLOAD_URLX", "http://127.0.0.1:4"),
            ("WORKLOAD_PORT_TKC_A", "9"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        derive_workload_endpoint(&mut vars);
        let get = |k: &str| vars.get(k).map(String::as_str);
        assert_eq!(get("WORKLOAD_HOST"), Some("127.0.0.1"));
        assert_eq!(get("WORKLOAD_PORT"), Some("1"));
        assert_eq!(get("WORKLOAD_HOST_TKC_A"), Some("127.0.0.1"));
        assert_eq!(get("WORKLOAD_PORT_TKC_A"), Some("9"), "a set value wins");
        assert_eq!(get("WORKLOAD_HOST_TKC_B"), Some("::1"));
        assert_eq!(get("WORKLOAD_PORT_TKC_B"), Some("443"));
        assert_eq!(
            get("WORKLOAD_HOSTX"),
            None,
            "only WORKLOAD_URL and WORKLOAD_URL_*"
        );
    }

    #[test]
    fn multi_doc_and_lists() {
        let mut out = Vec::new();
        parse_documents(
            "---\n# c\n---\nkind: A\n---\nkind: List\nitems: [{kind: B}, {kind: C}]\n",
            &mut out,
        )
        .unwrap();
        let kinds: Vec<_> = out.iter().map(|v| v["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["A", "B", "C"]);
    }

    #[test]
    fn forbid_rule_matching() {
        let r = Forbid {
            verb: Some("list".into()),
            group: Some("cluster.x-k8s.io".into()),
            resource: Some("machines".into()),
            namespace: Some("ns1".into()),
            ..Default::default()
        };
        assert!(r.matches("list", "cluster.x-k8s.io", "machines", Some("ns1"), None));
        assert!(r.matches("list", "cluster.x-k8s.io", "machines", None, None));
        assert!(!r.matches("list", "cluster.x-k8s.io", "machines", Some("ns2"), None));
        assert!(!r.matches(
            "get",
            "cluster.x-k8s.io",
            "machines",
            Some("ns1"),
            Some("m")
        ));
        assert!(!r.matches(
            "list",
            "cluster.x-k8s.io",
            "machines/status",
            Some("ns1"),
            None
        ));
        let cs = Forbid {
            cluster_scope: true,
            ..Default::default()
        };
        assert!(cs.matches("list", "", "pods", None, None));
        assert!(!cs.matches("list", "", "pods", Some("ns1"), None));
    }
}
