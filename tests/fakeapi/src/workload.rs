//! Stand-ins for a workload cluster's API endpoint, in the states the plugin
//! must tell apart: answering, answering with an error (etcd without quorum
//! makes kube-apiserver fail /readyz), never answering (a firewall dropping
//! packets), and refusing connections (nothing listening, or a firewall
//! rejecting).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::oneshot;

use crate::config::FakeConfig;
use crate::server::{spawn_server, FakeApi, Request};
use crate::status::ApiError;

/// A fake workload-cluster API endpoint; stops on drop.
pub struct Workload {
    url: String,
    /// The CA a client must trust for `url` when it is not [`crate::tls::ca_pem`]: the lab's
    /// cluster CA when the endpoint is the lab's VIP in front of its API servers.
    ca_pem: Option<String>,
    inner: Inner,
}

enum Inner {
    Api(Box<FakeApi>),
    Failing {
        requests: Arc<Mutex<Vec<Request>>>,
        shutdown: Option<oneshot::Sender<()>>,
        thread: Option<JoinHandle<()>>,
    },
    BlackHole {
        stop: Arc<AtomicBool>,
        accepted: Arc<AtomicUsize>,
        thread: Option<JoinHandle<()>>,
    },
    /// Bound but never listening: the kernel answers a SYN with RST, and the
    /// port stays reserved so no other process can take it meanwhile.
    Refused(#[allow(dead_code)] socket2::Socket),
}

/// `/version` of a TKG workload cluster.
fn workload_version() -> std::collections::BTreeMap<String, String> {
    [
        ("gitVersion", "v1.30.1+vmware.1-fips"),
        ("minor", "30"),
        ("goVersion", "go1.22.2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[derive(Clone)]
struct FailState {
    code: u16,
    etcd: bool,
    requests: Arc<Mutex<Vec<Request>>>,
    /// [`Workload::etcd_switchable`]: while set, etcd has its quorum back and the server
    /// answers as a healthy one.
    healed: Option<EtcdSwitch>,
}

/// Whether the etcd behind a [`Workload::etcd_switchable`] has its quorum: a test flips it at
/// the moment it chooses (e.g. when the jumpbox pod is created, so the plugin's check before
/// the probes and its check after them see different states).
#[derive(Clone, Debug)]
pub struct EtcdSwitch(Arc<AtomicBool>);

impl EtcdSwitch {
    /// etcd has (true) or lacks (false) its quorum from now on.
    pub fn set_healthy(&self, healthy: bool) {
        self.0.store(healthy, Ordering::SeqCst);
    }

    fn healthy(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A healthy kube-apiserver's answer to `path` once etcd is back: its health endpoints pass
/// with the plain `ok` (k8s.io/apiserver pkg/server/healthz/healthz.go `handleRootHealth`:
/// every check passed and no `?verbose`, so the body is "ok"), `/version` as before. Only
/// those are modelled: anything else is a 404 Status, which no check of the plugin asks.
fn healed_answer(path: &str) -> Response {
    match path {
        "/readyz" | "/livez" | "/healthz" => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "ok",
        )
            .into_response(),
        _ => ApiError {
            code: 404,
            reason: "NotFound",
            message: "the page could not be found".into(),
            details: None,
        }
        .into_response(),
    }
}

async fn failing(
    State(st): State<FailState>,
    method: axum::http::Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    st.requests.lock().unwrap().push(Request {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or("").to_string(),
        body: (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned()),
    });
    let code = StatusCode::from_u16(st.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let path = uri.path().trim_end_matches('/');
    if st.healed.as_ref().is_some_and(EtcdSwitch::healthy) && path != "/version" {
        return healed_answer(path);
    }
    let text = |body: String| {
        (
            code,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    };
    match path {
        // /version does not touch etcd: it answers even without quorum.
        "/version" if st.etcd => {
            let mut v = json!({"major": "1", "compiler": "gc", "platform": "linux/amd64", "gitTreeState": "clean"});
            for (k, val) in workload_version() {
                v[k] = json!(val);
            }
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                v.to_string(),
            )
                .into_response()
        }
        "/readyz" | "/livez" | "/healthz" if st.etcd => {
            let check = &path[1..];
            text(format!(
                "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]poststarthook/start-apiserver-admission-initializer ok\n{check} check failed\n"
            ))
        }
        "/readyz" | "/livez" | "/healthz" => text(format!(
            "{} {}\n",
            st.code,
            code.canonical_reason().unwrap_or("")
        )),
        _ if st.etcd => ApiError {
            code: st.code,
            reason: "InternalError",
            message: "etcdserver: request timed out".into(),
            details: None,
        }
        .into_response(),
        _ => ApiError {
            code: st.code,
            reason: if st.code == 503 {
                "ServiceUnavailable"
            } else {
                "InternalError"
            },
            message: code.canonical_reason().unwrap_or("error").to_string(),
            details: None,
        }
        .into_response(),
    }
}

fn loopback_listener() -> TcpListener {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("binding 127.0.0.1:0")
}

impl Workload {
    /// A healthy API: /readyz, /livez, /healthz answer "ok", /version and
    /// discovery answer like a real server (core v1, no objects).
    pub fn ok() -> Workload {
        Self::serving(FakeConfig::empty()).expect("starting the workload fake")
    }

    /// A healthy API serving a fixture set (e.g. tests/fixtures/workload/...).
    pub fn serving(mut cfg: FakeConfig) -> anyhow::Result<Workload> {
        for (k, v) in workload_version() {
            cfg.set.version.entry(k).or_insert(v);
        }
        if cfg.user.is_none() && cfg.set.user.is_none() {
            cfg.user = Some("kubernetes-admin".into());
        }
        let api = FakeApi::start_tls(cfg)?;
        Ok(Workload {
            url: api.url(),
            ca_pem: None,
            inner: Inner::Api(Box::new(api)),
        })
    }

    /// A healthy API serving `cfg` whose pods pinned to a node of `lab` really run there (see
    /// [`FakeApi::execute_pods_in`]): the fake workload cluster of a lab, e.g.
    /// `Workload::lab(FakeConfig::from_dir(workload_set("lab-3"))?, lab)`.
    ///
    /// A lab that runs API servers (`LabConfig::apiserver`) puts them in front, as in a real
    /// cluster: the endpoint ([`Workload::url`]) is the lab's VIP (`Lab::start_vip`: TCP to a node
    /// whose 6443 accepts), its certificate is the node's `apiserver.crt` signed by the lab's
    /// cluster CA ([`Workload::ca_data`], what the `<cluster>-kubeconfig` secret must carry: set
    /// `WORKLOAD_CA` to it), `/readyz` is the node's own (its etcd check), and every other request
    /// reaches this fake only through a node whose etcd check passes (otherwise HTTP 500,
    /// `etcdserver: request timed out`): the workload API answers only while etcd has a quorum.
    /// `Fault::VipDown` makes the endpoint dark.
    pub fn lab(cfg: FakeConfig, lab: Arc<etcdnet_lab::Lab>) -> anyhow::Result<Workload> {
        let mut w = Self::serving(cfg)?;
        let api = w.api().expect("serving() is an API server");
        api.execute_pods_in(lab.clone())?;
        if let Some(ca) = lab.cluster_ca_pem() {
            let addr: SocketAddr = api
                .url()
                .trim_start_matches("https://")
                .parse()
                .map_err(|e| anyhow::anyhow!("the workload fake's address: {e}"))?;
            lab.set_apiserver_backend(addr, crate::tls::ca_pem())?;
            let vip = lab.start_vip()?;
            w.url = format!("https://{vip}");
            w.ca_pem = Some(ca);
        }
        Ok(w)
    }

    /// The `certificate-authority-data` a kubeconfig for [`Workload::url`] carries (base64 of the
    /// PEM, as CAPI writes it): the lab's cluster CA behind a VIP, else the fakes' own CA
    /// ([`crate::tls::ca_data`], what `{{WORKLOAD_CA}}` is by default).
    pub fn ca_data(&self) -> String {
        use base64::Engine;
        match &self.ca_pem {
            Some(pem) => base64::engine::general_purpose::STANDARD.encode(pem),
            None => crate::tls::ca_data(),
        }
    }

    /// Every request answered with `code` (health endpoints in plain text,
    /// the rest as a Status).
    pub fn status(code: u16) -> Workload {
        Self::failing(code, false)
    }

    /// kube-apiserver whose etcd has no quorum: /readyz, /livez and /healthz
    /// fail with 500 and `[-]etcd failed: reason withheld`, /version still
    /// answers, API calls fail with `etcdserver: request timed out`.
    pub fn etcd_unhealthy() -> Workload {
        Self::failing(500, true)
    }

    /// [`Workload::etcd_unhealthy`] until the returned switch says etcd is back, then a healthy
    /// server's health endpoints (`healthy`: the state it starts in). Models what a real
    /// kube-apiserver does as its etcd loses or regains quorum: its `/readyz` etcd check fails
    /// while etcd does not answer and passes once it does, without a restart
    /// (k8s.io/apiserver pkg/server/options/etcd.go: the `etcd` readyz check asks etcd on each
    /// request).
    pub fn etcd_switchable(healthy: bool) -> (Workload, EtcdSwitch) {
        let switch = EtcdSwitch(Arc::new(AtomicBool::new(healthy)));
        (Self::failing_with(500, true, Some(switch.clone())), switch)
    }

    fn failing(code: u16, etcd: bool) -> Workload {
        Self::failing_with(code, etcd, None)
    }

    fn failing_with(code: u16, etcd: bool, healed: Option<EtcdSwitch>) -> Workload {
        let listener = loopback_listener();
        let url = format!("https://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let st = FailState {
            code,
            etcd,
            requests: requests.clone(),
            healed,
        };
        let app = axum::Router::new().fallback(failing).with_state(st);
        let (tx, thread) = spawn_server(listener, app, true).expect("starting the workload fake");
        Workload {
            url,
            ca_pem: None,
            inner: Inner::Failing {
                requests,
                shutdown: Some(tx),
                thread: Some(thread),
            },
        }
    }

    /// A port that accepts TCP connections and never sends a byte: clients
    /// hang until their own timeout, as behind a firewall that drops replies.
    pub fn black_hole() -> Workload {
        let listener = loopback_listener();
        let url = format!("https://{}", listener.local_addr().expect("local addr"));
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (s, a) = (stop.clone(), accepted.clone());
        let thread = std::thread::Builder::new()
            .name("fakeapi-black-hole".into())
            .spawn(move || {
                // Held open, never read or written, closed on drop.
                let mut held: Vec<TcpStream> = Vec::new();
                while !s.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            a.fetch_add(1, Ordering::Relaxed);
                            held.push(stream);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
            .expect("spawning the black hole");
        Workload {
            url,
            ca_pem: None,
            inner: Inner::BlackHole {
                stop,
                accepted,
                thread: Some(thread),
            },
        }
    }

    /// An address on 127.0.0.1 where nothing listens: connecting is refused at once.
    pub fn refused() -> Workload {
        use socket2::{Domain, Socket, Type};
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
        sock.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .expect("bind 127.0.0.1:0");
        let addr = sock
            .local_addr()
            .expect("local addr")
            .as_socket()
            .expect("inet address");
        Workload {
            url: format!("https://{addr}"),
            ca_pem: None,
            inner: Inner::Refused(sock),
        }
    }

    /// `https://127.0.0.1:PORT`: every stand-in is an HTTPS endpoint (those that answer, with a
    /// certificate of [`crate::tls::ca_pem`]), as a workload cluster's API is.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Requests received (none for black-hole and refused endpoints).
    pub fn requests(&self) -> Vec<Request> {
        match &self.inner {
            Inner::Api(api) => api.requests(),
            Inner::Failing { requests, .. } => requests.lock().unwrap().clone(),
            _ => Vec::new(),
        }
    }

    /// TCP connections accepted so far (black hole only; 0 otherwise).
    pub fn connections(&self) -> usize {
        match &self.inner {
            Inner::BlackHole { accepted, .. } => accepted.load(Ordering::Relaxed),
            _ => 0,
        }
    }

    /// The underlying API server of [`Workload::ok`]/[`Workload::serving`].
    pub fn api(&self) -> Option<&FakeApi> {
        match &self.inner {
            Inner::Api(api) => Some(api),
            _ => None,
        }
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        match &mut self.inner {
            Inner::Failing {
                shutdown, thread, ..
            } => {
                if let Some(tx) = shutdown.take() {
                    let _ = tx.send(());
                }
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
            Inner::BlackHole { stop, thread, .. } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
            Inner::Api(_) | Inner::Refused(_) => {}
        }
    }
}
