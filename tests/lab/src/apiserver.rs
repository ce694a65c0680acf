//! The kube-apiserver stand-in: one per node when [`crate::LabConfig::apiserver`] asks for it,
//! behaving toward etcd as kubeadm's kube-apiserver static pod does. In-process (threads of the
//! lab, idle but for a blocking `accept` until a client connects), so it costs no CPU between
//! requests; everything it serves or writes is read from the node's own files.
//!
//! - **Listener.** `0.0.0.0:6443` inside the node's network namespace (kubeadm's
//!   `--secure-port=6443` with the default `--bind-address=0.0.0.0`), so the node's IP and its
//!   `127.0.0.1` both answer. TLS with `/etc/kubernetes/pki/apiserver.{crt,key}`, read again for
//!   every connection (kube-apiserver reloads its serving certificate from disk:
//!   k8s.io/apiserver pkg/server/dynamiccertificates/dynamic_serving_content.go), so an expired
//!   one ([`crate::Fault::ExpiredApiserverCert`]) is served as soon as it is written.
//! - **Health.** `/readyz`, `/livez`, `/healthz` (and `?verbose`, `?exclude=`) in the format of
//!   `handleRootHealth` (k8s.io/apiserver pkg/server/healthz/healthz.go): all checks pass →
//!   200 `ok` (verbose: one `[+]<check> ok` line each, then `<name> check passed`); one fails →
//!   HTTP 500 through `http.Error` (text/plain, `X-Content-Type-Options: nosniff`, a trailing
//!   newline) with every line and `[-]etcd failed: reason withheld`, then `<name> check failed`.
//! - **The etcd check.** As the real one (k8s.io/apiserver pkg/storage/storagebackend/factory/
//!   etcd3.go `newETCD3Check`: a read through the etcd client of `--etcd-servers`, which kubeadm
//!   sets to `https://127.0.0.1:2379` only, bounded by `--etcd-healthcheck-timeout`, 2 s): the
//!   local member over its client TLS with `apiserver-etcd-client.{crt,key}` and the etcd CA,
//!   `GET /health` (etcd answers it from a linearizable read: no leader or no quorum → false;
//!   etcd server/etcdserver/api/etcdhttp/metrics.go `checkHealth`), bounded by 2 s in all.
//! - **Other paths.** Passed to the fake workload API ([`Backend`], set by the fake) while the
//!   etcd check passes: that is how a real API server serves a pod create, from etcd. While it
//!   fails, the answer is what kube-apiserver returns when its etcd request fails: HTTP 500, a
//!   `Status` with `etcdserver: request timed out` (the etcd error passed through
//!   k8s.io/apiserver pkg/endpoints/handlers/responsewriters/status.go `ErrorToAPIStatus`),
//!   and that function's log line. `/version` answers without etcd.
//! - **Log.** klog's header (`Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg`, k8s.io/klog/v2
//!   klog.go `formatHeader`; the thread id is the pid, 1 in the container) in the CRI log format
//!   (`<RFC3339Nano> stderr F <line>`: kubelet pkg/kubelet/kuberuntime/logs/logs.go
//!   `parseCRILog`, containerd's cri `NewCRILogger`) at
//!   `/var/log/pods/kube-system_kube-apiserver-<node>_<uid>/kube-apiserver/<attempt>.log`
//!   (kubelet pkg/kubelet/kuberuntime/helpers.go `BuildContainerLogsDirectory`).
//! - **Container.** A state file per attempt beside etcd's, so the lab's `crictl` lists
//!   `kube-apiserver` (ps, logs, inspect) with its state and attempt; a crash loop
//!   ([`crate::Fault::ApiserverCrashLoop`]) exits each attempt with code 1 and restarts it on
//!   the kubelet's back-off (the same `BackOff` as `kubelet.rs`, scaled by 10: 1 s doubling to
//!   30 s); [`crate::Lab::restart_apiserver`] starts the next attempt serving only after a delay
//!   (an API server still starting after the heal).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Context, Result};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, ServerName};

use crate::forward::pipe;
use crate::kubelet::BackOff;
use crate::member::now_ns;
use crate::node::{env_file, sha256_hex, Node};

/// kube-apiserver's port (kubeadm's `--secure-port`).
pub const APISERVER_PORT: u16 = 6443;
/// The image the stand-in's container reports (a TKG 1.30 control plane's).
pub const APISERVER_IMAGE: &str = "localhost:5000/vmware.io/kube-apiserver:v1.30.1_vmware.1";
/// How long one crash-looping attempt runs before it exits (the real one fails within a second
/// of its start when its port is taken).
const CRASH_RUN: Duration = Duration::from_millis(300);
/// `--etcd-healthcheck-timeout` / `--etcd-readycheck-timeout` (both default 2 s).
const ETCD_CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// At most one etcd error line per this long (the real one logs its gRPC reconnects with
/// back-off, not once per request).
const LOG_EVERY: Duration = Duration::from_secs(1);

/// The fake workload API the stand-ins pass API requests to: its address on the host's loopback
/// and the CA of its serving certificate.
#[derive(Clone, Debug)]
pub struct Backend {
    pub addr: SocketAddr,
    pub ca_pem: String,
}

/// What the etcd check saw.
#[derive(Clone, Debug, PartialEq, Eq)]
enum EtcdCheck {
    Ok,
    Refused,
    /// No TCP, TLS or answer within the bound.
    Timeout,
    /// Answered, not healthy (no leader, no quorum): the body.
    Unhealthy(String),
}

#[derive(Default)]
struct NodeState {
    attempt: Option<u32>,
    running: bool,
    listener: Option<Arc<TcpListener>>,
    /// Crash loop in force.
    crash: bool,
    /// The current attempt exits at this moment (crash loop).
    exit_at: Option<Instant>,
    /// The current attempt starts serving at this moment.
    serve_at: Option<Instant>,
    /// The last attempt exited at this moment (for the back-off).
    exited_at: Option<Instant>,
    /// A restart asked for now (not after back-off).
    restart_now: bool,
    /// `Some(delay)`: the next attempt serves only after it.
    next_delay: Option<Duration>,
    backoff: Option<BackOff>,
    last_log: Option<Instant>,
    restarts: u32,
    /// The current attempt's probes (with a kubelet config): (startup passed, failures in a
    /// row, next probe).
    probe: Option<(bool, u32, Instant)>,
    /// What the node's kubelet did to this pod, oldest first.
    events: Vec<String>,
}

/// kubeadm's probes of the kube-apiserver static pod, on the lab's kubelet scale.
#[derive(Clone, Debug)]
pub(crate) struct Probes {
    initial_delay: Duration,
    period: Duration,
    startup_failures: u32,
    liveness_failures: u32,
}

struct Shared {
    nodes: Vec<Node>,
    /// (back-off initial, max); the probes, when the lab has a kubelet stand-in.
    backoff: (Duration, Duration),
    probes: Option<Probes>,
    state: Mutex<Vec<NodeState>>,
    cv: Condvar,
    stop: AtomicBool,
    backend: Mutex<Option<Backend>>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, Vec<NodeState>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The lab's kube-apiserver stand-ins.
pub(crate) struct ApiServers {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The node's pod UID (stable per node): kubelet names a static pod's log directory with it.
pub(crate) fn pod_uid(node: &Node) -> String {
    sha256_hex(&format!("etcdnet-lab/{}/kube-apiserver/pod", node.name))[..32].to_string()
}

/// `/var/log/pods/kube-system_kube-apiserver-<node>_<uid>/kube-apiserver` under the node's root.
pub(crate) fn log_dir(node: &Node) -> PathBuf {
    node.root.join(format!(
        "var/log/pods/kube-system_kube-apiserver-{}_{}/kube-apiserver",
        node.name,
        pod_uid(node)
    ))
}

fn state_dir(node: &Node) -> PathBuf {
    node.root.join("run/crictl/apiserver")
}

fn container_id(node: &Node, attempt: u32) -> String {
    sha256_hex(&format!(
        "etcdnet-lab/{}/kube-apiserver/{attempt}",
        node.name
    ))
}

/// klog's header for severity `sev` at `t`: `E1207 03:50:18.123456       1 file.go:123] `
/// (UTC: a VM's clock, as kubeadm's images log).
fn klog(sev: char, t: SystemTime, file_line: &str, msg: &str) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{sev}{:02}{:02} {:02}:{:02}:{:02}.{:06} {:>7} {file_line}] {msg}",
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond(),
        1
    )
}

/// RFC 3339 with nanoseconds as Go's `time.RFC3339Nano` prints it (UTC; trailing zeros of the
/// fraction dropped, none at all for a whole second).
fn rfc3339_nano(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    let frac = format!("{:09}", t.nanosecond());
    let frac = frac.trim_end_matches('0');
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{frac}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        if frac.is_empty() { "" } else { "." },
    )
}

/// Appends klog lines to the node's current attempt's CRI log (`<time> stderr F <line>`).
fn log_lines(node: &Node, attempt: u32, lines: &[(char, &str, String)]) {
    let dir = log_dir(node);
    let _ = fs::create_dir_all(&dir);
    let mut text = String::new();
    for (sev, at, msg) in lines {
        let t = SystemTime::now();
        text.push_str(&format!(
            "{} stderr F {}\n",
            rfc3339_nano(t),
            klog(*sev, t, at, msg)
        ));
    }
    if let Ok(mut f) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{attempt}.log")))
    {
        let _ = f.write_all(text.as_bytes());
    }
}

/// Writes the crictl record of one attempt (the same variables as etcd's, `NAME` and `CRI`
/// added; `RUNNING=1` stands for a live process: this container has none of its own).
fn write_record(node: &Node, attempt: u32, running: bool, finished: u128, exit_code: i32) {
    let dir = state_dir(node);
    let _ = fs::create_dir_all(&dir);
    let path = dir.join(format!("{attempt}.env"));
    let created = fs::read_to_string(&path)
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("CREATED='")
                    .map(|v| v.trim_end_matches('\'').to_string())
            })
        })
        .unwrap_or_else(|| now_ns().to_string());
    let uid = pod_uid(node);
    let text = env_file(&[
        ("NAME", "kube-apiserver".into()),
        ("ID", container_id(node, attempt)),
        ("ATTEMPT", attempt.to_string()),
        ("PID", "0".into()),
        ("RUNNING", if running { "1" } else { "" }.into()),
        ("CREATED", created.clone()),
        ("STARTED", created),
        ("FINISHED", finished.to_string()),
        ("EXIT_CODE", exit_code.to_string()),
        // The host's path, as etcd's record has (crictl also runs where only the host's files
        // are); LOG_PATH is the node's, what `crictl inspect` shows.
        (
            "LOG",
            log_dir(node)
                .join(format!("{attempt}.log"))
                .to_string_lossy()
                .into_owned(),
        ),
        (
            "LOG_PATH",
            format!(
                "/var/log/pods/kube-system_kube-apiserver-{}_{uid}/kube-apiserver/{attempt}.log",
                node.name
            ),
        ),
        ("CRI", "1".into()),
        ("PAST", String::new()),
        ("POD_NAME", format!("kube-apiserver-{}", node.name)),
        ("POD_UID", uid.clone()),
        (
            "POD_ID",
            sha256_hex(&format!("etcdnet-lab/{}/kube-apiserver/sandbox", node.name)),
        ),
        ("IMAGE", APISERVER_IMAGE.into()),
        (
            "IMAGE_ID",
            format!("sha256:{}", sha256_hex(APISERVER_IMAGE)),
        ),
    ]);
    let tmp = dir.join(format!("{attempt}.env.tmp"));
    if fs::write(&tmp, text).is_ok() {
        let _ = fs::rename(&tmp, &path);
    }
}

/// Connects to `addr` from inside network namespace `netns` (a socket keeps the namespace it
/// was made in; setns affects the calling thread only, so a short thread of its own does it).
pub(crate) fn connect_in_netns(
    netns: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<TcpStream> {
    let ns = File::open(format!("/run/netns/{netns}"))?;
    std::thread::spawn(move || {
        // SAFETY: setns on a namespace fd we hold open; affects this thread only.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        TcpStream::connect_timeout(&addr, timeout)
    })
    .join()
    .map_err(|_| io::Error::other("the connect thread panicked"))?
}

fn pem_certs(pem_text: &str) -> Result<Vec<CertificateDer<'static>>> {
    Ok(pem::parse_many(pem_text)?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(|p| CertificateDer::from(p.into_contents()))
        .collect())
}

fn pem_key(pem_text: &str) -> Result<PrivateKeyDer<'static>> {
    let p = pem::parse(pem_text)?;
    Ok(match p.tag() {
        "RSA PRIVATE KEY" => PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(p.into_contents())),
        _ => PrivateKeyDer::Pkcs8(p.into_contents().into()),
    })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config(node: &Node) -> Result<Arc<rustls::ServerConfig>> {
    let pki = node.root.join("etc/kubernetes/pki");
    let certs = pem_certs(&fs::read_to_string(pki.join("apiserver.crt"))?)?;
    let key = pem_key(&fs::read_to_string(pki.join("apiserver.key"))?)?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

fn client_config(
    ca_pem: &str,
    client: Option<(&Path, &Path)>,
) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for c in pem_certs(ca_pem)? {
        roots.add(c)?;
    }
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    Ok(Arc::new(match client {
        Some((crt, key)) => b.with_client_auth_cert(
            pem_certs(&fs::read_to_string(crt)?)?,
            pem_key(&fs::read_to_string(key)?)?,
        )?,
        None => b.with_no_client_auth(),
    }))
}

/// The etcd check of node `node`: `GET https://127.0.0.1:2379/health` from its network
/// namespace with the API server's etcd client certificate, bounded by [`ETCD_CHECK_TIMEOUT`].
fn check_etcd(node: &Node) -> EtcdCheck {
    let deadline = Instant::now() + ETCD_CHECK_TIMEOUT;
    let addr = SocketAddr::from(([127, 0, 0, 1], 2379));
    let tcp = match connect_in_netns(&node.netns, addr, ETCD_CHECK_TIMEOUT) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return EtcdCheck::Refused,
        Err(_) => return EtcdCheck::Timeout,
    };
    let pki = node.root.join("etc/kubernetes/pki");
    let Ok(cfg) = fs::read_to_string(pki.join("etcd/ca.crt"))
        .map_err(anyhow::Error::from)
        .and_then(|ca| {
            client_config(
                &ca,
                Some((
                    &pki.join("apiserver-etcd-client.crt"),
                    &pki.join("apiserver-etcd-client.key"),
                )),
            )
        })
    else {
        return EtcdCheck::Timeout;
    };
    let Ok(conn) = rustls::ClientConnection::new(
        cfg,
        ServerName::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST).into()),
    ) else {
        return EtcdCheck::Timeout;
    };
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10));
    let _ = tls.sock.set_read_timeout(Some(left));
    let _ = tls.sock.set_write_timeout(Some(left));
    if tls
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:2379\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return EtcdCheck::Timeout;
    }
    let mut body = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if Instant::now() >= deadline {
            return EtcdCheck::Timeout;
        }
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                body.extend_from_slice(&buf[..n]);
                if body.len() > 65_536 {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(_) if !body.is_empty() => break,
            Err(_) => return EtcdCheck::Timeout,
        }
    }
    let text = String::from_utf8_lossy(&body);
    let payload = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or("")
        .trim()
        .to_string();
    if text.starts_with("HTTP/1.1 200") && payload.contains("\"health\":\"true\"") {
        EtcdCheck::Ok
    } else if payload.is_empty() {
        EtcdCheck::Timeout
    } else {
        EtcdCheck::Unhealthy(payload)
    }
}

/// The etcd client's log line for a failed check (what kube-apiserver logs when its etcd is
/// refused, silent, or leaderless), with klog's caller.
fn etcd_log_line(check: &EtcdCheck) -> Option<(char, &'static str, String)> {
    // grpc-go's addrConn.createTransport warning as kube-apiserver's klog bridge prints it
    // (google.golang.org/grpc clientconn.go; k8s.io/component-base logs via grpclog).
    let dial = |err: &str| {
        format!(
            "[core] [Channel #5 SubChannel #6] grpc: addrConn.createTransport failed to connect to {{Addr: \"127.0.0.1:2379\", ServerName: \"127.0.0.1:2379\", }}. Err: connection error: desc = \"{err}\""
        )
    };
    match check {
        EtcdCheck::Ok => None,
        EtcdCheck::Refused => Some((
            'W',
            "logging.go:59",
            dial("transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused"),
        )),
        EtcdCheck::Timeout => Some((
            'W',
            "logging.go:59",
            dial("transport: authentication handshake failed: context deadline exceeded"),
        )),
        // responsewriters/status.go ErrorToAPIStatus on an etcd error that is no Status
        // (utilruntime.HandleError); rpctypes.ErrTimeout's text (etcd api/v3rpc/rpctypes).
        EtcdCheck::Unhealthy(_) => Some((
            'E',
            "status.go:71",
            "apiserver received an error that is not an metav1.Status: rpctypes.EtcdError{code:0xe, desc:\"etcdserver: request timed out\"}: etcdserver: request timed out".to_string(),
        )),
    }
}

/// The checks of `/readyz` (`/livez` and `/healthz` have the same minus the readiness ones), as
/// a 1.30 kube-apiserver lists them; only `etcd` (and `etcd-readiness`) can fail here.
fn checks(name: &str) -> Vec<&'static str> {
    let mut v = vec!["ping", "log", "etcd"];
    if name == "readyz" {
        v.push("etcd-readiness");
        v.push("informer-sync");
    }
    v.extend([
        "poststarthook/start-apiserver-admission-initializer",
        "poststarthook/generic-apiserver-start-informers",
        "poststarthook/start-apiextensions-controllers",
        "poststarthook/crd-informer-synced",
        "poststarthook/bootstrap-controller",
        "poststarthook/rbac/bootstrap-roles",
        "poststarthook/scheduling/bootstrap-system-priority-classes",
        "poststarthook/apiservice-registration-controller",
    ]);
    if name == "readyz" {
        v.push("shutdown");
    }
    v
}

/// `handleRootHealth`: (status, body) of `/<name>` with `query`.
fn health(name: &str, query: &str, etcd_ok: bool) -> (u16, String) {
    let excluded: Vec<String> = form_pairs(query)
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v)
        .collect();
    let verbose = form_pairs(query).any(|(k, _)| k == "verbose");
    let mut out = String::new();
    let mut failed = false;
    for c in checks(name) {
        if excluded.iter().any(|e| e == c) {
            out.push_str(&format!("[+]{c} excluded: ok\n"));
        } else if c.starts_with("etcd") && !etcd_ok {
            out.push_str(&format!("[-]{c} failed: reason withheld\n"));
            failed = true;
        } else {
            out.push_str(&format!("[+]{c} ok\n"));
        }
    }
    if failed {
        // http.Error adds the newline.
        (500, format!("{out}{name} check failed\n"))
    } else if verbose {
        (200, format!("{out}{name} check passed\n"))
    } else {
        (200, "ok".to_string())
    }
}

fn form_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter(|s| !s.is_empty()).map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k.to_string(), v.to_string())
    })
}

fn respond(w: &mut impl Write, code: u16, ctype: &str, body: &str) -> io::Result<()> {
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Error",
    };
    write!(
        w,
        "HTTP/1.1 {code} {reason}\r\nAudit-Id: {}\r\nCache-Control: no-cache, private\r\nContent-Type: {ctype}\r\nX-Content-Type-Options: nosniff\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        &sha256_hex(&now_ns().to_string())[..32],
        body.len()
    )?;
    w.flush()
}

/// A parsed request head: method, path, query, headers, and any body bytes read with it.
struct Head {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    rest: Vec<u8>,
}

fn read_head(r: &mut impl Read) -> Option<Head> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 65_536 {
            return None;
        }
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Head {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers,
        rest: buf[end + 4..].to_vec(),
    })
}

impl ApiServers {
    /// Starts the stand-in of every node (attempt 0, serving at once).
    ///
    /// With `kubelet` (the lab's kubelet stand-in config), the node's kubelet also probes it as
    /// kubeadm's manifest asks (`GetStaticPodSpecs` in cmd/kubeadm/app/phases/controlplane/
    /// manifests.go: startup and liveness probes on `https://<advertise address>:6443/livez`,
    /// `staticpodutil.LivenessProbe`/`StartupProbe`: the same delays, periods and thresholds as
    /// etcd's, 24 and 8 failures) and uses its back-off; without it, no probe and a back-off of
    /// 1 s doubling to 30 s (`KubeletConfig::scaled(10)`'s).
    pub(crate) fn start(
        lab_id: &str,
        nodes: &[Node],
        kubelet: Option<&crate::config::KubeletConfig>,
    ) -> Result<ApiServers> {
        let scaled = crate::config::KubeletConfig::scaled(10);
        let k = kubelet.unwrap_or(&scaled);
        let shared = Arc::new(Shared {
            backoff: (k.backoff_initial, k.backoff_max),
            probes: kubelet.map(|k| Probes {
                initial_delay: k.liveness.initial_delay,
                period: k.liveness.period,
                startup_failures: k.startup.failure_threshold,
                liveness_failures: k.liveness.failure_threshold,
            }),
            nodes: nodes.to_vec(),
            state: Mutex::new(nodes.iter().map(|_| NodeState::default()).collect()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            backend: Mutex::new(None),
        });
        let mut threads = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            fs::create_dir_all(state_dir(n))?;
            let sh = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{lab_id}-apiserver-{}", n.name))
                    .spawn(move || static_pod(&sh, i))?,
            );
        }
        let servers = ApiServers {
            shared,
            threads: Mutex::new(threads),
        };
        // "Serving at once" is a promise to the caller: a lab handed back while a thread has not
        // yet bound 6443 made a test's first curl race the bind (refused) on a loaded CI host.
        servers.wait_serving(Duration::from_secs(20))?;
        Ok(servers)
    }

    /// Waits until every node's first attempt listens on 6443, or fails naming the node.
    fn wait_serving(&self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            let st = self.shared.state();
            let Some(i) = st.iter().position(|s| s.listener.is_none()) else {
                return Ok(());
            };
            if Instant::now() >= deadline || (st[i].attempt.is_some() && !st[i].running) {
                anyhow::bail!(
                    "{}'s kube-apiserver stand-in is not serving on 6443 after {limit:?}",
                    self.shared.nodes[i].name
                );
            }
            drop(st);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn set_backend(&self, backend: Option<Backend>) {
        *self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = backend;
    }

    /// Crash loop on (every attempt exits with code 1; the current one at once) or off (the
    /// next attempt starts now and serves).
    pub(crate) fn set_crash_loop(&self, i: usize, on: bool) {
        let mut st = self.shared.state();
        let s = &mut st[i];
        if s.crash == on {
            return;
        }
        s.crash = on;
        if on {
            s.exit_at = Some(Instant::now());
        } else {
            s.restart_now = true;
            s.backoff = None;
        }
        self.shared.cv.notify_all();
    }

    /// Stops the current attempt (exit 0) and starts the next one, serving after `delay`.
    pub(crate) fn restart(&self, i: usize, delay: Duration) {
        let mut st = self.shared.state();
        let s = &mut st[i];
        s.next_delay = Some(delay);
        s.restart_now = true;
        self.shared.cv.notify_all();
    }

    /// What node i's kubelet did to its kube-apiserver, oldest first.
    pub(crate) fn events(&self, i: usize) -> Vec<String> {
        self.shared.state()[i].events.clone()
    }

    /// (attempt, running, serving, kubelet restarts) of node i's stand-in.
    pub(crate) fn status(&self, i: usize) -> (Option<u32>, bool, bool, u32) {
        let st = self.shared.state();
        let s = &st[i];
        (s.attempt, s.running, s.listener.is_some(), s.restarts)
    }

    pub(crate) fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
        for t in std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner())) {
            let _ = t.join();
        }
    }
}

impl Drop for ApiServers {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn close_listener(s: &mut NodeState) {
    if let Some(l) = s.listener.take() {
        // Wakes the blocked accept (EINVAL) and closes the port at once.
        // SAFETY: shutdown(2) on a socket fd the Arc keeps open.
        unsafe {
            libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

/// The node's kubelet for its kube-apiserver static pod: starts attempts, ends crash-looping
/// ones, restarts with back-off, opens and closes the listener.
fn static_pod(sh: &Arc<Shared>, i: usize) {
    let node = sh.nodes[i].clone();
    let mut st = sh.state();
    loop {
        if sh.stop.load(Ordering::SeqCst) {
            close_listener(&mut st[i]);
            return;
        }
        let now = Instant::now();
        let s = &mut st[i];
        let mut wait: Option<Duration> = None;
        if s.running {
            let attempt = s.attempt.unwrap_or(0);
            if s.restart_now {
                // Stopped by the kubelet (a new manifest, a test's restart): SIGTERM, exit 0.
                s.restart_now = false;
                close_listener(s);
                s.running = false;
                s.exit_at = None;
                s.serve_at = None;
                s.exited_at = None;
                write_record(&node, attempt, false, now_ns(), 0);
                continue;
            }
            if let (Some(p), Some((_, _, next))) = (&sh.probes, s.probe) {
                if now >= next {
                    // Probed without the lock (the etcd check takes up to 2 s).
                    let serving = s.listener.is_some();
                    drop(st);
                    let check = if serving {
                        check_etcd(&node)
                    } else {
                        EtcdCheck::Refused
                    };
                    if serving {
                        note_etcd(sh, i, &check);
                    }
                    st = sh.state();
                    let s = &mut st[i];
                    if !s.running || s.attempt != Some(attempt) {
                        continue;
                    }
                    let Some((done, failures, _)) = s.probe else {
                        continue;
                    };
                    if check == EtcdCheck::Ok {
                        s.probe = Some((true, 0, Instant::now() + p.period));
                        continue;
                    }
                    let failures = failures + 1;
                    let (kind, limit) = if done {
                        ("Liveness", p.liveness_failures)
                    } else {
                        ("Startup", p.startup_failures)
                    };
                    if failures < limit {
                        s.probe = Some((done, failures, Instant::now() + p.period));
                        continue;
                    }
                    // The kubelet kills it (SIGTERM): kube-apiserver shuts down and exits 0; the
                    // restart waits out the back-off (pkg/kubelet/prober, kuberuntime).
                    let why = if serving {
                        "HTTP probe failed with statuscode: 500"
                    } else {
                        "Get \"https://127.0.0.1:6443/livez\": dial tcp 127.0.0.1:6443: connect: connection refused"
                    };
                    s.events.push(format!(
                        "attempt {attempt}: {kind} probe failed {failures} times ({why}): Container kube-apiserver failed {} probe, will be restarted",
                        kind.to_lowercase()
                    ));
                    close_listener(s);
                    s.running = false;
                    s.exit_at = None;
                    s.serve_at = None;
                    s.probe = None;
                    s.exited_at = Some(Instant::now());
                    write_record(&node, attempt, false, now_ns(), 0);
                    continue;
                }
                wait = Some(next - now);
            }
            if let Some(at) = s.exit_at {
                if now >= at {
                    close_listener(s);
                    log_lines(
                        &node,
                        attempt,
                        &[(
                            'E',
                            "run.go:74",
                            // component-base/cli/run.go: klog.ErrorS(err, "command failed"); the
                            // error of k8s.io/apiserver pkg/server/options/serving.go when the
                            // port is taken (another process holds 6443).
                            "\"command failed\" err=\"failed to create listener: failed to listen on 0.0.0.0:6443: listen tcp 0.0.0.0:6443: bind: address already in use\"".into(),
                        )],
                    );
                    s.running = false;
                    s.exit_at = None;
                    s.exited_at = Some(now);
                    write_record(&node, attempt, false, now_ns(), 1);
                    continue;
                }
                wait = Some(wait.map_or(at - now, |w| w.min(at - now)));
            } else if let Some(at) = s.serve_at {
                if now >= at {
                    s.serve_at = None;
                    match listen(sh, i) {
                        Ok(l) => {
                            s.listener = Some(l);
                            // k8s.io/apiserver pkg/server/secure_serving.go.
                            log_lines(
                                &node,
                                attempt,
                                &[(
                                    'I',
                                    "secure_serving.go:213",
                                    "Serving securely on [::]:6443".into(),
                                )],
                            );
                        }
                        Err(e) => {
                            log_lines(
                                &node,
                                attempt,
                                &[('E', "run.go:74", format!("\"command failed\" err=\"{e}\""))],
                            );
                            s.running = false;
                            s.exited_at = Some(now);
                            write_record(&node, attempt, false, now_ns(), 1);
                            continue;
                        }
                    }
                    continue;
                }
                wait = Some(wait.map_or(at - now, |w| w.min(at - now)));
            }
        } else {
            // Not running: start the next attempt unless in back-off.
            let backoff = s
                .backoff
                .get_or_insert_with(|| BackOff::new(sh.backoff.0, sh.backoff.1));
            let due = match s.exited_at {
                Some(ex) if !s.restart_now && backoff.in_backoff_since(ex, now) => {
                    // Wake when the back-off is over (polled: BackOff keeps its own clock).
                    wait = Some(Duration::from_millis(100));
                    false
                }
                _ => true,
            };
            if due {
                if let Some(ex) = s.exited_at {
                    if !s.restart_now {
                        backoff.next(ex, now);
                        s.restarts += 1;
                    }
                }
                s.restart_now = false;
                let attempt = s.attempt.map_or(0, |a| a + 1);
                s.attempt = Some(attempt);
                s.running = true;
                s.exited_at = None;
                s.probe = sh
                    .probes
                    .as_ref()
                    .map(|p| (false, 0, now + p.initial_delay));
                let _ = fs::remove_file(log_dir(&node).join(format!("{attempt}.log")));
                write_record(&node, attempt, true, 0, 0);
                // cmd/kube-apiserver/app/server.go, pkg/controlplane/apiserver/options.
                log_lines(
                    &node,
                    attempt,
                    &[
                        (
                            'I',
                            "options.go:221",
                            format!("external host was not specified, using {}", node.ip),
                        ),
                        ('I', "server.go:148", "Version: v1.30.1+vmware.1".into()),
                    ],
                );
                if s.crash {
                    s.exit_at = Some(now + CRASH_RUN);
                } else {
                    s.serve_at = Some(now + s.next_delay.take().unwrap_or_default());
                }
                continue;
            }
        }
        st = match wait {
            Some(w) => sh
                .cv
                .wait_timeout(st, w)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0),
            None => sh.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// Binds 0.0.0.0:6443 in node i's namespace and starts its accept loop.
fn listen(sh: &Arc<Shared>, i: usize) -> Result<Arc<TcpListener>> {
    let node = &sh.nodes[i];
    let ns = File::open(format!("/run/netns/{}", node.netns))?;
    let listener = std::thread::spawn(move || -> io::Result<TcpListener> {
        // SAFETY: setns on a namespace fd we hold open; affects this short thread only.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], APISERVER_PORT)))
    })
    .join()
    .map_err(|_| anyhow!("the bind thread panicked"))?
    .map_err(|e| anyhow!("failed to create listener: failed to listen on 0.0.0.0:6443: {e}"))?;
    let listener = Arc::new(listener);
    let (l, sh2) = (listener.clone(), sh.clone());
    std::thread::Builder::new()
        .name(format!("apiserver-accept-{}", node.name))
        .spawn(move || {
            while let Ok((conn, _)) = l.accept() {
                if sh2.stop.load(Ordering::SeqCst) {
                    break;
                }
                let sh3 = sh2.clone();
                let _ = std::thread::Builder::new()
                    .name("apiserver-conn".into())
                    .spawn(move || {
                        // A VM's API server has CPUs of its own (see exec::MACHINE_NICE).
                        crate::exec::this_thread_as_machine();
                        let _ = serve(&sh3, i, conn);
                    });
            }
        })
        .context("spawning the accept loop")?;
    Ok(listener)
}

/// One connection: TLS, one request, `Connection: close`.
fn serve(sh: &Arc<Shared>, i: usize, tcp: TcpStream) -> Result<()> {
    let node = &sh.nodes[i];
    tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
    let conn = rustls::ServerConnection::new(server_config(node)?)?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let Some(head) = read_head(&mut tls) else {
        return Ok(());
    };
    let name = head.path.trim_start_matches('/').trim_end_matches('/');
    if head.method == "GET" && matches!(name, "readyz" | "livez" | "healthz") {
        let check = check_etcd(node);
        note_etcd(sh, i, &check);
        let (code, body) = health(name, &head.query, check == EtcdCheck::Ok);
        respond(&mut tls, code, "text/plain; charset=utf-8", &body)?;
    } else if head.path == "/version" {
        // Served from memory (k8s.io/apiserver pkg/endpoints/discovery/version.go): no etcd.
        respond(
            &mut tls,
            200,
            "application/json",
            r#"{"major":"1","minor":"30","gitVersion":"v1.30.1+vmware.1-fips","gitTreeState":"clean","goVersion":"go1.22.2","compiler":"gc","platform":"linux/amd64"}"#,
        )?;
    } else {
        let check = check_etcd(node);
        note_etcd(sh, i, &check);
        let backend = sh.backend.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match (check, backend) {
            (EtcdCheck::Ok, Some(b)) => proxy(&mut tls, &head, &b)?,
            (EtcdCheck::Ok, None) => respond(
                &mut tls,
                404,
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#,
            )?,
            (_, _) => respond(
                &mut tls,
                500,
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcdserver: request timed out","code":500}"#,
            )?,
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
    let _ = tls.sock.shutdown(Shutdown::Write);
    Ok(())
}

/// Logs a failed etcd check (at most once per [`LOG_EVERY`]).
fn note_etcd(sh: &Shared, i: usize, check: &EtcdCheck) {
    let Some(line) = etcd_log_line(check) else {
        return;
    };
    let attempt = {
        let mut st = sh.state();
        let s = &mut st[i];
        let now = Instant::now();
        if s.last_log
            .is_some_and(|t| now.duration_since(t) < LOG_EVERY)
        {
            return;
        }
        s.last_log = Some(now);
        s.attempt.unwrap_or(0)
    };
    log_lines(&sh.nodes[i], attempt, &[line]);
}

/// Passes one request to the fake workload API (TLS to its loopback address) and its answer
/// back, until it closes (so `follow=true` log streams flow).
fn proxy(
    client: &mut rustls::StreamOwned<rustls::ServerConnection, TcpStream>,
    head: &Head,
    b: &Backend,
) -> Result<()> {
    let tcp = TcpStream::connect_timeout(&b.addr, Duration::from_secs(5))?;
    let cfg = client_config(&b.ca_pem, None)?;
    let conn = rustls::ClientConnection::new(cfg, ServerName::IpAddress(b.addr.ip().into()))?;
    let mut up = rustls::StreamOwned::new(conn, tcp);
    let target = if head.query.is_empty() {
        head.path.clone()
    } else {
        format!("{}?{}", head.path, head.query)
    };
    let mut req = format!("{} {target} HTTP/1.1\r\n", head.method);
    let mut length = 0usize;
    for (k, v) in &head.headers {
        if k == "connection" || k == "keep-alive" {
            continue;
        }
        if k == "content-length" {
            length = v.parse().unwrap_or(0);
        }
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("connection: close\r\n\r\n");
    let mut body = head.rest.clone();
    let mut chunk = [0u8; 16_384];
    while body.len() < length {
        let n = client.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    up.write_all(req.as_bytes())?;
    up.write_all(&body)?;
    up.flush()?;
    loop {
        match up.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                client.write_all(&chunk[..n])?;
                client.flush()?;
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The control-plane endpoint's load balancer (see tests/lab/README.md, "The API servers and
/// the VIP"): TCP pass-through from the host's `127.0.0.1:<port>` to a node's 6443 whose TCP
/// monitor passes (a connect from the switch namespace, at the moment a client connects), round
/// robin; no healthy backend → the client's connection is reset; `down` → a black hole.
pub(crate) struct Vip {
    pub(crate) addr: SocketAddr,
    down: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    listener: Arc<TcpListener>,
    thread: Option<JoinHandle<()>>,
    /// Connections passed to a backend, per node index.
    pub(crate) forwarded: Arc<Vec<AtomicUsize>>,
}

impl Vip {
    pub(crate) fn start(switch_netns: &str, nodes: &[Node]) -> Result<Vip> {
        let listener = Arc::new(
            TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                .context("binding the VIP on 127.0.0.1")?,
        );
        let addr = listener.local_addr()?;
        let down = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded: Arc<Vec<AtomicUsize>> =
            Arc::new(nodes.iter().map(|_| AtomicUsize::new(0)).collect());
        let backends: Vec<SocketAddr> = nodes
            .iter()
            .map(|n| SocketAddr::from((n.ip, APISERVER_PORT)))
            .collect();
        let (l, d, s, f, ns) = (
            listener.clone(),
            down.clone(),
            stop.clone(),
            forwarded.clone(),
            switch_netns.to_string(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("{switch_netns}-vip"))
            .spawn(move || {
                let next = Arc::new(AtomicUsize::new(0));
                let held: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
                while let Ok((conn, _)) = l.accept() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    if d.load(Ordering::SeqCst) {
                        // A VIP that is down: the connection is taken and never answered.
                        held.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
                        continue;
                    }
                    let (backends, next, f, ns) =
                        (backends.clone(), next.clone(), f.clone(), ns.clone());
                    let _ = std::thread::Builder::new()
                        .name("vip-conn".into())
                        .spawn(move || forward(conn, &ns, &backends, &next, &f));
                }
            })?;
        Ok(Vip {
            addr,
            down,
            stop,
            listener,
            thread: Some(thread),
            forwarded,
        })
    }

    pub(crate) fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

impl Drop for Vip {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // SAFETY: shutdown(2) on the listener we own: wakes the accept loop.
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn forward(
    conn: TcpStream,
    netns: &str,
    backends: &[SocketAddr],
    next: &AtomicUsize,
    forwarded: &[AtomicUsize],
) {
    let start = next.fetch_add(1, Ordering::SeqCst);
    for k in 0..backends.len() {
        let i = (start + k) % backends.len();
        let Ok(up) = connect_in_netns(netns, backends[i], Duration::from_secs(1)) else {
            continue;
        };
        forwarded[i].fetch_add(1, Ordering::SeqCst);
        let _ = conn.set_nodelay(true);
        let _ = up.set_nodelay(true);
        let (Ok(c2), Ok(u2)) = (conn.try_clone(), up.try_clone()) else {
            return;
        };
        let back = std::thread::spawn(move || pipe(u2, c2));
        pipe(conn, up);
        let _ = back.join();
        return;
    }
    // No backend passes its monitor: reset the client (SO_LINGER 0, then close).
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on the fd `conn` owns, with a properly sized linger struct.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn klog_and_cri_formats() {
        // 2026-12-07T03:50:18.123456Z
        let t = UNIX_EPOCH + Duration::from_nanos(1_796_615_418_123_456_000);
        assert_eq!(
            klog('E', t, "status.go:71", "x"),
            "E1207 03:50:18.123456       1 status.go:71] x"
        );
        assert_eq!(rfc3339_nano(t), "2026-12-07T03:50:18.123456Z");
        assert_eq!(rfc3339_nano(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn health_bodies_follow_handle_root_health() {
        assert_eq!(health("readyz", "", true), (200, "ok".to_string()));
        let (code, body) = health("readyz", "verbose", true);
        assert_eq!(code, 200);
        assert!(
            body.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n"),
            "{body}"
        );
        assert!(body.ends_with("readyz check passed\n"), "{body}");
        let (code, body) = health("readyz", "", false);
        assert_eq!(code, 500);
        assert!(body.contains("[-]etcd failed: reason withheld\n"), "{body}");
        assert!(body.ends_with("readyz check failed\n"), "{body}");
        let (code, body) = health("livez", "exclude=etcd", false);
        assert_eq!(code, 200, "{body}");
        assert_eq!(
            health("livez", "exclude=etcd&verbose", false)
                .1
                .lines()
                .nth(2),
            Some("[+]etcd excluded: ok")
        );
    }
}
