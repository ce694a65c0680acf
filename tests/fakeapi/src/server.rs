//! The [`FakeApi`] handle: loads a fixture set, serves it on 127.0.0.1 from a
//! background thread with its own tokio runtime, and stops on drop.
//!
//! Tests are synchronous and run the plugin as a subprocess, so the server
//! must not need the caller's runtime.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::config::{FakeConfig, Forbid};
use crate::kubelet::{Kubelet, PodProcess, SecretVolume};
use crate::pods::{PodReactor, PodScript};
use crate::resources::{self, Registry, ResourceDef};
use crate::store::{self, normalize, Store};

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// "GET", "POST", ...
    pub method: String,
    /// The path, e.g. `/apis/cluster.x-k8s.io/v1beta1/namespaces/ns-prod/machines`.
    pub path: String,
    /// The raw (still percent-encoded) query string, "" if none.
    pub query: String,
    /// The body, when there was one.
    pub body: Option<String>,
}

impl Request {
    /// A decoded query parameter (first value).
    pub fn param(&self, key: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    /// `GET /path?query` as one string, handy in assertion messages.
    pub fn line(&self) -> String {
        if self.query.is_empty() {
            format!("{} {}", self.method, self.path)
        } else {
            format!("{} {}?{}", self.method, self.path, self.query)
        }
    }
}

/// State shared by the handlers and the handle.
pub struct Shared {
    pub store: Mutex<Store>,
    pub requests: Mutex<Vec<Request>>,
    pub user: String,
    pub forbidden: Mutex<Vec<Forbid>>,
    pub version: Value,
    pub aggregated: bool,
    pub addr: SocketAddr,
    pub pod_reactor: Mutex<Option<PodReactor>>,
    /// The lab kubelet, once [`FakeApi::execute_pods_in`] or
    /// [`FakeApi::execute_jumpbox_pods_in`] attached a lab.
    pub kubelet: Mutex<Option<Arc<Kubelet>>>,
    /// Images no node can pull (FakeConfig::refuse_image, `refusedImages:`).
    pub refused_images: Mutex<Vec<String>>,
    /// kube-scheduler's message for every pod without a node: none is scheduled
    /// (`unschedulablePods:`, [`FakeApi::make_pods_unschedulable`]).
    pub unschedulable: Mutex<Option<String>>,
    /// Pods without a node are left as created ([`FakeApi::leave_vsphere_pods_pending`]).
    pub vsphere_pods_pending: Mutex<bool>,
    /// A validating admission webhook that denies every pod create: (its name, its message)
    /// ([`FakeApi::deny_pods_by_webhook`]).
    pub pod_denial: Mutex<Option<(String, String)>>,
    /// (namespace, name) of every pod ever created through the API, in order.
    pub created_pods: Mutex<Vec<(String, String)>>,
    /// Set when the handle is dropped: background pod threads end.
    pub stopping: AtomicBool,
    /// Where every request is also written as it arrives, one `METHOD path?query` line each
    /// ([`FakeApi::log_requests_to`]).
    pub request_log: Mutex<Option<std::fs::File>>,
    /// Every request on a resource as RBAC sees it, in order ([`FakeApi::accesses`]).
    pub accesses: Mutex<Vec<Access>>,
    /// How long a pod create takes before the pod is stored ([`FakeApi::delay_pod_creates`]).
    pub pod_create_delay: Mutex<Option<Duration>>,
    /// How long a vSphere Pod takes to start ([`FakeApi::delay_vsphere_pod_starts`]).
    pub vsphere_pod_start: Mutex<Option<Duration>>,
}

/// One request on a resource as an authorizer sees it: what RBAC must grant for it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Access {
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// API group; "" is the core group.
    pub group: String,
    /// Plural resource, with "/sub" for a subresource ("pods/log").
    pub resource: String,
    /// None: an all-namespaces request or a cluster-scoped resource (only a ClusterRole
    /// grants it).
    pub namespace: Option<String>,
}

/// Appends `request` to the request log, if there is one (one write per line, so a reader sees
/// whole lines).
pub(crate) fn log_request(shared: &Shared, request: &Request) {
    use std::io::Write;
    if let Some(f) = shared.request_log.lock().unwrap().as_mut() {
        let _ = f.write_all(format!("{}\n", request.line()).as_bytes());
    }
}

/// Core v1 resources served on every set, objects or not.
const CORE_KINDS: &[&str] = &["Namespace", "Pod", "Secret", "ConfigMap", "Node", "Event"];

/// `/version` of a vSphere 8 Supervisor (fields overridable in fake.yaml).
fn version_info(overrides: &BTreeMap<String, String>) -> Value {
    let mut v = json!({
        "major": "1",
        "minor": "30",
        "gitVersion": "v1.30.5+vmware.wcp.1",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-03-01T00:00:00Z",
        "goVersion": "go1.22.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    });
    for (k, val) in overrides {
        v[k] = json!(val);
    }
    v
}

fn def_for(reg: &Registry, group: &str, version: &str, kind: &str) -> ResourceDef {
    if let Some(d) = reg.by_kind(group, kind) {
        let mut d = d.clone();
        d.version = version.to_string();
        return d;
    }
    resources::known(group, version, kind)
        .unwrap_or_else(|| resources::guessed(group, version, kind))
}

fn build_registry(cfg: &FakeConfig, objects: &[Value]) -> Result<Registry> {
    let mut reg = Registry::default();
    for k in CORE_KINDS {
        reg.add(resources::known("", "v1", k).expect("core kinds are in the table"));
    }
    for o in objects {
        let (g, v) = store::split_api_version(&store::api_version(o));
        let kind = store::kind(o);
        if v.is_empty() || kind.is_empty() {
            bail!("object without apiVersion/kind: {o}");
        }
        reg.add(def_for(&reg, &g, &v, &kind));
    }
    for r in &cfg.set.resources {
        let (g, v) = store::split_api_version(&r.api_version);
        let mut d = def_for(&reg, &g, &v, &r.kind);
        if let Some(p) = &r.plural {
            d.plural = p.clone();
        }
        if let Some(n) = r.namespaced {
            d.namespaced = n;
        }
        reg.add(d);
    }
    let mut preferred = BTreeMap::new();
    for (g, gc) in &cfg.set.groups {
        for v in &gc.versions {
            reg.add_version(g, v);
        }
        if let Some(p) = &gc.preferred_version {
            if !gc.versions.contains(p) && !reg.serves_version(g, p) {
                bail!("fake.yaml: preferredVersion {p} of group {g} is not among its versions");
            }
            preferred.insert(g.clone(), p.clone());
        }
    }
    reg.finish(&preferred);
    Ok(reg)
}

/// Creates the fixture objects: namespaces first, then the rest in file order.
fn populate(store: &mut Store, cfg: &FakeConfig, objects: Vec<Value>) -> Result<()> {
    let (mut nss, rest): (Vec<Value>, Vec<Value>) = objects
        .into_iter()
        .partition(|o| store::kind(o) == "Namespace" && store::api_version(o) == "v1");
    if cfg.set.auto_namespaces.unwrap_or(true) {
        let mut names: Vec<String> = ["default", "kube-system", "kube-public", "kube-node-lease"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        names.extend(rest.iter().map(store::namespace).filter(|n| !n.is_empty()));
        for n in names {
            if !nss.iter().any(|o| store::name(o) == n) {
                nss.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}}));
            }
        }
    }
    for o in nss.into_iter().chain(rest) {
        let (g, v) = store::split_api_version(&store::api_version(&o));
        let def = store
            .registry
            .lookup(
                &g,
                &v,
                &def_for(&store.registry, &g, &v, &store::kind(&o)).plural,
            )
            .expect("registered above");
        let id = format!(
            "{} {}/{}",
            def.qualified(),
            store::namespace(&o),
            store::name(&o)
        );
        let obj = normalize(&def, o, true).map_err(|e| anyhow!("fixture {id}: {}", e.message))?;
        store
            .create(&def, obj)
            .map_err(|e| anyhow!("fixture {id}: {}", e.message))?;
    }
    Ok(())
}

/// A running fake Kubernetes API server. Dropping it stops the server.
pub struct FakeApi {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls: bool,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Serves the fixture set in `dir` (its `*.yaml` files and `fake.yaml`).
    pub fn start(dir: impl AsRef<Path>) -> Result<FakeApi> {
        Self::start_with(FakeConfig::from_dir(dir)?)
    }

    /// Serves a configured set: `FakeConfig::from_dir(p)?.var("WORKLOAD_URL", url)`, over plain
    /// HTTP (a Supervisor: the plugin reaches it with the admin's own kubeconfig).
    pub fn start_with(cfg: FakeConfig) -> Result<FakeApi> {
        Self::start_serving(cfg, false)
    }

    /// [`FakeApi::start_with`] over HTTPS, with the per-run serving certificate for loopback
    /// ([`crate::tls`]): a workload cluster's API, as its `<cluster>-kubeconfig` reaches it.
    pub fn start_tls(cfg: FakeConfig) -> Result<FakeApi> {
        Self::start_serving(cfg, true)
    }

    fn start_serving(cfg: FakeConfig, tls: bool) -> Result<FakeApi> {
        let listen = cfg
            .listen
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        if !listen.ip().is_loopback() {
            bail!("the fake API server listens on loopback only, not {listen}");
        }
        let listener = TcpListener::bind(listen).with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr()?;
        let scheme = if tls { "https" } else { "http" };
        let builtin: BTreeMap<String, String> =
            [("FAKEAPI_URL".to_string(), format!("{scheme}://{addr}"))].into();
        let objects = cfg.load_objects(&builtin)?;
        let registry = build_registry(&cfg, &objects)?;
        let mut store = Store::new(registry);
        populate(&mut store, &cfg, objects)?;
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            requests: Mutex::new(Vec::new()),
            user: cfg.effective_user(),
            forbidden: Mutex::new(cfg.set.forbidden.clone()),
            version: version_info(&cfg.set.version),
            aggregated: cfg.set.aggregated_discovery,
            addr,
            pod_reactor: Mutex::new(None),
            kubelet: Mutex::new(None),
            refused_images: Mutex::new(cfg.set.refused_images.clone()),
            unschedulable: Mutex::new(cfg.set.unschedulable_pods.clone()),
            vsphere_pods_pending: Mutex::new(false),
            pod_denial: Mutex::new(None),
            created_pods: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            request_log: Mutex::new(None),
            accesses: Mutex::new(Vec::new()),
            pod_create_delay: Mutex::new(None),
            vsphere_pod_start: Mutex::new(None),
        });
        let (shutdown, thread) = spawn_server(
            listener,
            axum::Router::new()
                .fallback(crate::router::handle)
                .with_state(shared.clone()),
            tls,
        )?;
        Ok(FakeApi {
            shared,
            addr,
            tls,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT` (`https://` when started with [`FakeApi::start_tls`])
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes a kubeconfig whose only context points at this server with a
    /// dummy bearer token, optionally with a default namespace.
    pub fn write_kubeconfig(
        &self,
        path: &Path,
        context: &str,
        namespace: Option<&str>,
    ) -> Result<()> {
        write_kubeconfig(path, &self.url(), context, namespace, &self.shared.user)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// From now on also writes every request to `path` as it arrives (created or truncated),
    /// one `METHOD path?query` line each ([`Request::line`]), so a script can count what one
    /// run asked for: `wc -l` before and after it.
    pub fn log_requests_to(&self, path: &Path) -> Result<()> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        *self.shared.request_log.lock().unwrap() = Some(f);
        Ok(())
    }

    /// Forgets the requests so far (e.g. after a setup step).
    pub fn clear_requests(&self) {
        self.shared.requests.lock().unwrap().clear();
    }

    /// Every stored object of a resource, all namespaces, in key order
    /// (e.g. `objects("cluster.x-k8s.io", "clusters")`; "" is the core group).
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Value> {
        let st = self.shared.store.lock().unwrap();
        let def = st
            .registry
            .groups
            .get(group)
            .and_then(|g| g.resources.get(plural))
            .cloned();
        def.map(|d| st.list(&d, None)).unwrap_or_default()
    }

    /// Every stored object, sorted by apiVersion, kind, namespace, name.
    pub fn all_objects(&self) -> Vec<Value> {
        self.shared.store.lock().unwrap().all()
    }

    /// One stored object ("" namespace for cluster-scoped kinds).
    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let st = self.shared.store.lock().unwrap();
        let (g, _) = store::split_api_version(api_version);
        let def = st.registry.by_kind(&g, kind)?.clone();
        st.get(&def, namespace, name).cloned()
    }

    fn resolve(&self, st: &mut Store, api_version: &str, kind: &str) -> ResourceDef {
        let (g, v) = store::split_api_version(api_version);
        if st
            .registry
            .lookup(&g, &v, &def_for(&st.registry, &g, &v, kind).plural)
            .is_none()
        {
            // Like installing a CRD (or a version of it) at run time.
            let d = def_for(&st.registry, &g, &v, kind);
            st.registry.add(d);
            st.registry.finish(&BTreeMap::new());
        }
        def_for(&st.registry, &g, &v, kind)
    }

    /// Creates an object as the API would (watchers see ADDED).
    pub fn insert(&self, obj: Value) -> Result<Value> {
        let mut st = self.shared.store.lock().unwrap();
        let def = self.resolve(&mut st, &store::api_version(&obj), &store::kind(&obj));
        let obj = normalize(&def, obj, false).map_err(|e| anyhow!(e.message))?;
        st.create(&def, obj).map_err(|e| anyhow!(e.message))
    }

    /// Changes a stored object in place (watchers see MODIFIED).
    pub fn modify(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Result<Value> {
        let mut st = self.shared.store.lock().unwrap();
        let def = self.resolve(&mut st, api_version, kind);
        let mut obj = st
            .get(&def, namespace, name)
            .cloned()
            .ok_or_else(|| anyhow!("{} {namespace}/{name} not found", def.qualified()))?;
        f(&mut obj);
        obj["metadata"]["resourceVersion"] = json!("");
        st.update(&def, obj).map_err(|e| anyhow!(e.message))
    }

    /// Deletes an object (watchers see DELETED; a pod's process, if one runs, is killed).
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Value> {
        let deleted = {
            let mut st = self.shared.store.lock().unwrap();
            let def = self.resolve(&mut st, api_version, kind);
            st.delete(&def, namespace, name)
                .map_err(|e| anyhow!(e.message))?
        };
        crate::pods::on_deleted(&self.shared, &deleted);
        Ok(deleted)
    }

    /// Sets the text served at `pods/{name}/log`.
    pub fn set_pod_log(&self, namespace: &str, name: &str, log: impl Into<String>) {
        self.shared
            .store
            .lock()
            .unwrap()
            .pod_logs
            .insert((namespace.to_string(), name.to_string()), log.into());
    }

    /// Makes Pods created through the API run as the reactor says (see [`PodScript`]).
    pub fn on_pod_created(
        &self,
        reactor: impl Fn(&Value) -> Option<PodScript> + Send + Sync + 'static,
    ) {
        *self.shared.pod_reactor.lock().unwrap() = Some(Arc::new(reactor));
    }

    /// Runs the pods created from now on whose `spec.nodeName` is a node of `lab`, for real
    /// (see [`crate::kubelet`]): the lab's node names are the Kubernetes node names. Nodes the
    /// fixtures do not have are registered as their kubelet would (Ready, control-plane taint,
    /// the node's address). Pods pinned to other names stay Pending.
    pub fn execute_pods_in(&self, lab: Arc<etcdnet_lab::Lab>) -> Result<()> {
        let k = self.attach(&lab)?;
        if !k.enable_pinned() {
            bail!("this fake already runs pods in lab {}", k.lab().id());
        }
        for n in lab.nodes() {
            if self.object("v1", "Node", "", &n.name).is_none() {
                self.insert(crate::kubelet::node_object(n))?;
            }
        }
        Ok(())
    }

    /// Makes this fake a Supervisor whose pods created from now on *without* `spec.nodeName`
    /// run as vSphere Pods in `lab`'s switch namespace (198.18.0.1, the Supervisor side, which
    /// reaches every node's 22), with the same lifecycle as [`FakeApi::execute_pods_in`]'s:
    /// the plugin's jumpbox pods. Their `secret` volumes hold this fake's own Secrets (see
    /// [`FakeApi::set_secret_data`] to put the lab's key in `<cluster>-ssh`); a missing secret
    /// keeps the pod Pending (`ContainerCreating`, a `FailedMount` Event), with no process.
    /// No Node objects are registered: a Supervisor's nodes are its ESXi hosts.
    pub fn execute_jumpbox_pods_in(&self, lab: Arc<etcdnet_lab::Lab>) -> Result<()> {
        let k = self.attach(&lab)?;
        if !k.enable_vsphere() {
            bail!(
                "this fake already runs jumpbox pods in lab {}",
                k.lab().id()
            );
        }
        Ok(())
    }

    /// The kubelet of `lab`, made on first use; one fake runs pods in one lab only.
    fn attach(&self, lab: &Arc<etcdnet_lab::Lab>) -> Result<Arc<Kubelet>> {
        let mut slot = self.shared.kubelet.lock().unwrap();
        match slot.as_ref() {
            Some(k) if Arc::ptr_eq(k.lab(), lab) => Ok(k.clone()),
            Some(k) => bail!("this fake already runs pods in lab {}", k.lab().id()),
            None => {
                let k = Arc::new(Kubelet::new(lab.clone()));
                *slot = Some(k.clone());
                Ok(k)
            }
        }
    }

    /// Sets one key of a stored Secret's `data` to `value` (base64-encoded as the API stores
    /// it; watchers see MODIFIED), e.g. the lab's real key as `ssh-privatekey` of
    /// `<cluster>-ssh`, whose fixture holds a fake one. The value is never logged.
    pub fn set_secret_data(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<Value> {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_ref());
        self.modify("v1", "Secret", namespace, name, |s| {
            if !s["data"].is_object() {
                s["data"] = json!({});
            }
            s["data"][key] = json!(encoded);
        })
    }

    /// The secret volumes written for vSphere Pods so far (see [`SecretVolume`]): where each
    /// was on the host, so a test can check it is gone once its pod ended.
    pub fn secret_volumes(&self) -> Vec<SecretVolume> {
        let k = self.shared.kubelet.lock().unwrap().clone();
        k.map(|k| k.secret_volumes()).unwrap_or_default()
    }

    /// The lab whose nodes run this fake's pods, if any.
    pub fn lab(&self) -> Option<Arc<etcdnet_lab::Lab>> {
        self.shared
            .kubelet
            .lock()
            .unwrap()
            .as_ref()
            .map(|k| k.lab().clone())
    }

    /// (namespace, name) of every pod created through the API so far, in order, including
    /// those deleted since (a rejected create is not there).
    pub fn created_pods(&self) -> Vec<(String, String)> {
        self.shared.created_pods.lock().unwrap().clone()
    }

    /// The pods that exist now, as (namespace, name).
    pub fn existing_pods(&self) -> Vec<(String, String)> {
        self.objects("", "pods")
            .iter()
            .map(|p| (store::namespace(p), store::name(p)))
            .collect()
    }

    /// Processes of lab-run pods that are still alive (a pod's command and anything it
    /// started in its process group), as (the pod's process, a live pid). Empty when every
    /// pod has ended, been deleted, or the fake never ran one.
    pub fn pod_processes(&self) -> Vec<(PodProcess, u32)> {
        let k = self.shared.kubelet.lock().unwrap().clone();
        k.map(|k| k.processes()).unwrap_or_default()
    }

    /// From now on no node takes a pod without `spec.nodeName`: kube-scheduler's `message`
    /// (see [`crate::SetConfig::unschedulable_pods`]).
    pub fn make_pods_unschedulable(&self, message: impl Into<String>) {
        *self.shared.unschedulable.lock().unwrap() = Some(message.into());
    }

    /// From now on a pod without `spec.nodeName` (a vSphere Pod on a Supervisor) is left exactly
    /// as created: Pending, no node, no condition, no event, no container status, forever (no
    /// kubelet, lab or reactor takes it). What a Supervisor does with a pod when vSphere Pods
    /// are off (vSphere 9.1's per-Supervisor setting, `VspherePodSettings.vsphere_pods_enabled`
    /// of the vCenter API, which the Kubernetes API does not show) is not documented: this is
    /// the least it may do, less than kube-scheduler's `Unschedulable` condition and
    /// `FailedScheduling` event ([`FakeApi::make_pods_unschedulable`]).
    pub fn leave_vsphere_pods_pending(&self) {
        *self.shared.vsphere_pods_pending.lock().unwrap() = true;
    }

    /// From now on every pod create is denied by the validating admission webhook `webhook`
    /// with `message`, as the API server answers it ([`crate::pods::admit`]).
    pub fn deny_pods_by_webhook(&self, webhook: impl Into<String>, message: impl Into<String>) {
        *self.shared.pod_denial.lock().unwrap() = Some((webhook.into(), message.into()));
    }

    /// Makes `image` impossible to pull from now on (see [`FakeConfig::refuse_image`]).
    pub fn refuse_image(&self, image: impl Into<String>) {
        self.shared
            .refused_images
            .lock()
            .unwrap()
            .push(image.into());
    }

    /// Every request on a resource so far, as RBAC sees it (verb, group, resource with its
    /// subresource, namespace), in order, refused ones included. Discovery and `/version` are
    /// not resources (every authenticated user may read them) and are not listed.
    pub fn accesses(&self) -> Vec<Access> {
        self.shared.accesses.lock().unwrap().clone()
    }

    /// From now on a pod create takes `delay` before the pod is stored, and the pod is stored
    /// even if the client has gone by then: an API server whose write is under way finishes it
    /// whether or not anyone waits for the answer.
    pub fn delay_pod_creates(&self, delay: Duration) {
        *self.shared.pod_create_delay.lock().unwrap() = Some(delay);
    }

    /// From now on a vSphere Pod (a pod without a node, run by
    /// [`FakeApi::execute_jumpbox_pods_in`]) takes `delay` between its volumes being mounted
    /// and its process starting, in `ContainerCreating`: what a real one spends while the ESXi
    /// host pulls its image and the pod's own small VM boots ("A vSphere Pod is a VM with a
    /// small footprint", vSphere 8 "What Is a vSphere Pod?"). VMware documents no figure; tens
    /// of seconds is what admins see, and 20 s is what the tests and docs/benchmarks.md use.
    /// An image that cannot be pulled still fails at once: the pull comes first.
    pub fn delay_vsphere_pod_starts(&self, delay: Duration) {
        *self.shared.vsphere_pod_start.lock().unwrap() = Some(delay);
    }

    /// Adds a 403 rule while running.
    pub fn forbid(&self, rule: Forbid) {
        self.shared.forbidden.lock().unwrap().push(rule);
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().unwrap().resource_version()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // No request can create a pod any more: kill what runs. Taking the kubelet out also
        // breaks the Shared -> Kubelet -> thread -> Shared cycle.
        self.shared.stopping.store(true, Ordering::SeqCst);
        let kubelet = self.shared.kubelet.lock().unwrap().take();
        if let Some(k) = kubelet {
            k.shutdown();
        }
    }
}

/// Runs `app` on `listener` in a new thread with its own runtime until the
/// returned sender fires (or is dropped).
/// `tls`: HTTPS with the per-run serving certificate ([`crate::tls`]), as a workload API.
pub(crate) fn spawn_server(
    listener: TcpListener,
    app: axum::Router,
    tls: bool,
) -> Result<(oneshot::Sender<()>, JoinHandle<()>)> {
    listener.set_nonblocking(true)?;
    let (tx, rx) = oneshot::channel::<()>();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fakeapi")
        .enable_all()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("fakeapi-server".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                if tls {
                    let Ok(listener) =
                        crate::tls::TlsListener::new(listener, crate::tls::acceptor())
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = rx => {}
                    }
                } else {
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = rx => {}
                    }
                }
            });
            // Open watches would keep a graceful shutdown waiting: cut them off.
            rt.shutdown_timeout(Duration::from_millis(200));
        })?;
    Ok((tx, thread))
}

/// A kubeconfig for `server` with a dummy token (and, for an `https://` one, the workload
/// fakes' CA).
pub fn write_kubeconfig(
    path: &Path,
    server: &str,
    context: &str,
    namespace: Option<&str>,
    user: &str,
) -> Result<()> {
    let host = server
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    let cluster = host.to_string();
    let user_entry = format!("wcp:{host}:{user}");
    let mut ctx = json!({"cluster": cluster, "user": user_entry});
    let mut cluster_entry = json!({"server": server});
    if server.starts_with("https://") {
        // A workload fake's: its CA inline, as CAPI writes a cluster's kubeconfig.
        cluster_entry["certificate-authority-data"] = json!(crate::tls::ca_data());
    }
    if let Some(ns) = namespace {
        ctx["namespace"] = json!(ns);
    }
    let kc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": user_entry, "user": {"token": "FAKE-SUPERVISOR-TOKEN-DO-NOT-PRINT"}}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
    });
    std::fs::write(path, serde_yaml_ng::to_string(&kc)?)
        .with_context(|| format!("writing {}", path.display()))
}
