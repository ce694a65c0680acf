//! One pod's life on a lab node, on its own thread:
//!
//! ```text
//! ADDED Pending (no status yet)
//!  -> MODIFIED Pending, PodScheduled True, container waiting ContainerCreating, startTime
//!  -> MODIFIED Running, Ready, container running            (the process was started)
//!  -> MODIFIED Succeeded | Failed, container terminated      (exit code; DeadlineExceeded)
//! ```
//!
//! or, for an image the fake refuses to pull, Pending with `ErrImagePull` and
//! `ImagePullBackOff` alternating on the kubelet's back-off (10 s doubling to 5 min), forever
//! or until `activeDeadlineSeconds`.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::process::{self, NODE_PATH};
use super::volumes;
use super::{Kubelet, PodProcess, Stop, VSPHERE_POD_HOST};
use crate::podstatus::{self as ps, Ending, RunInfo};
use crate::server::Shared;
use crate::store::{self, now_rfc3339};

/// How often a pod's thread looks at its process, its stop channel and its pod.
const TICK: Duration = Duration::from_millis(20);
/// A pod's log is capped here (a kubelet rotates at 10 MiB); later output is dropped.
const LOG_CAP: usize = 8 << 20;
/// The kubelet's minimum and (for the fake) maximum grace when activeDeadlineSeconds kills.
const MIN_GRACE: u64 = 2;
const MAX_GRACE: u64 = 30;
const DEADLINE_MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// Where a pod runs.
pub(crate) enum Place {
    /// On a lab node, as its kubelet runs a pod pinned there (`Lab::pod_command`).
    Node(etcdnet_lab::Node),
    /// As a vSphere Pod in the Supervisor: the lab's switch namespace, a pod's filesystem and
    /// its secret volumes (`Lab::jumpbox_pod_command_named`).
    Vsphere,
}

impl Place {
    /// The node name the pod is reported on (Events, [`PodProcess::node`]).
    pub(crate) fn host(&self) -> &str {
        match self {
            Place::Node(n) => &n.name,
            Place::Vsphere => VSPHERE_POD_HOST,
        }
    }
}

/// What woke a waiting pod thread.
pub(super) enum Wake {
    Timeout,
    /// Deleted, or the fake stops: either way the process dies now.
    Stop,
    Deadline,
}

/// One pod being run.
pub(super) struct Ctx<'a> {
    pub(super) shared: &'a Arc<Shared>,
    pod: &'a Value,
    pub(super) ns: String,
    pub(super) name: String,
    uid: String,
    host: String,
    run: RunInfo,
    deadline: Option<Instant>,
    rx: Option<mpsc::Receiver<Stop>>,
}

impl Ctx<'_> {
    fn new<'a>(
        shared: &'a Arc<Shared>,
        pod: &'a Value,
        host: &str,
        host_ip: String,
        pod_ip: String,
        rx: Option<mpsc::Receiver<Stop>>,
    ) -> Ctx<'a> {
        let deadline = pod["spec"]["activeDeadlineSeconds"]
            .as_u64()
            .map(|s| Instant::now() + Duration::from_secs(s));
        Ctx {
            shared,
            pod,
            ns: store::namespace(pod),
            name: store::name(pod),
            uid: store::meta_str(pod, "uid"),
            host: host.to_string(),
            run: RunInfo {
                host_ip,
                pod_ip,
                start_time: now_rfc3339(),
            },
            deadline,
            rx,
        }
    }

    /// Waits up to `d`, waking early for a stop request, a deleted pod, a stopping fake, or
    /// the pod's deadline.
    pub(super) fn sleep(&self, d: Duration) -> Wake {
        self.wait(d, true)
    }

    /// Like [`Ctx::sleep`] but blind to the deadline (for the grace period after it).
    fn pause(&self, d: Duration) -> Wake {
        self.wait(d, false)
    }

    fn wait(&self, d: Duration, deadline: bool) -> Wake {
        let until = Instant::now() + d;
        loop {
            if self.shared.stopping.load(Ordering::SeqCst) {
                return Wake::Stop;
            }
            let now = Instant::now();
            if deadline && self.deadline.is_some_and(|dl| now >= dl) {
                return Wake::Deadline;
            }
            if now >= until {
                return Wake::Timeout;
            }
            let step = (until - now).min(TICK);
            match &self.rx {
                Some(rx) => match rx.recv_timeout(step) {
                    Ok(_) => return Wake::Stop,
                    // Replaced by a new pod of the same name: this one was deleted.
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Wake::Stop,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                },
                None => std::thread::sleep(step),
            }
            // Deleted some other way (FakeApi::delete, a namespace's collection delete).
            if ps::current(self.shared, &self.ns, &self.name, &self.uid).is_none() {
                return Wake::Stop;
            }
        }
    }

    fn set(&self, status: Value) -> bool {
        ps::update(self.shared, &self.ns, &self.name, &self.uid, status)
    }

    pub(super) fn event(&self, kind: &str, reason: &str, message: &str) {
        // The pod as stored now, so the event carries its current resourceVersion.
        let pod = ps::current(self.shared, &self.ns, &self.name, &self.uid);
        ps::event(
            self.shared,
            pod.as_ref().unwrap_or(self.pod),
            kind,
            reason,
            message,
            &self.host,
        );
    }

    fn end(&self, ending: Ending) {
        self.set(ps::terminated(self.pod, &self.run, &ending));
    }

    /// Failed with DeadlineExceeded; the container ended with `exit_code` (or never existed).
    pub(super) fn deadline_exceeded(&self, started_at: Option<String>, exit_code: Option<i32>) {
        self.event("Normal", "DeadlineExceeded", DEADLINE_MESSAGE);
        let (reason, message) = match exit_code {
            Some(_) => ("Error", None),
            None => (
                "ContainerStatusUnknown",
                Some("The container could not be located when the pod was terminated".into()),
            ),
        };
        self.end(Ending {
            exit_code: exit_code.unwrap_or(137),
            reason: reason.into(),
            message,
            started_at,
            finished_at: now_rfc3339(),
            pod_reason: Some(("DeadlineExceeded".into(), DEADLINE_MESSAGE.into())),
        });
    }

    /// Appends process output to the pod's log, unless the pod is gone or the log is full.
    fn append_log(shared: &Arc<Shared>, key: &(String, String), uid: &str, text: &str) {
        let mut st = shared.store.lock().unwrap();
        let alive = st
            .registry
            .lookup("", "v1", "pods")
            .and_then(|d| {
                st.get(&d, &key.0, &key.1)
                    .map(|p| store::meta_str(p, "uid"))
            })
            .is_some_and(|u| u == uid);
        if !alive {
            return;
        }
        let log = st.pod_logs.entry(key.clone()).or_default();
        let mut room = LOG_CAP.saturating_sub(log.len()).min(text.len());
        while !text.is_char_boundary(room) {
            room -= 1;
        }
        log.push_str(&text[..room]);
    }
}

/// The pod is refused at admission by the node (too many pods), as a kubelet does.
pub(super) fn reject_out_of_pods(shared: &Arc<Shared>, pod: &Value, used: usize) {
    let status = json!({"phase": "Failed", "reason": "OutOfpods",
        "message": format!("Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: {used}, capacity: {}", super::MAX_PODS_PER_NODE),
        "startTime": now_rfc3339(), "qosClass": pod["status"]["qosClass"]});
    ps::update(
        shared,
        &store::namespace(pod),
        &store::name(pod),
        &store::meta_str(pod, "uid"),
        status,
    );
}

/// Whether the first container mounts `/host` read-only (the lab's `/host` is the node's `/`,
/// whatever volume the pod names: the lab runs node pods only as the probe's).
fn host_read_only(pod: &Value) -> bool {
    pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["mountPath"] == "/host" && m["readOnly"] == true)
}

fn is_refused(shared: &Arc<Shared>, image: &str) -> bool {
    let want = ps::normalize_image(image);
    shared
        .refused_images
        .lock()
        .unwrap()
        .iter()
        .any(|r| ps::normalize_image(r) == want)
}

/// The pull-refusal loop for a pod that no lab kubelet runs (a scripted reactor pod), on a
/// thread of its own that ends when the pod or the fake goes away.
pub(crate) fn pull_refused_detached(
    shared: &Arc<Shared>,
    pod: &Value,
    host_ip: &str,
    pod_ip: &str,
) -> bool {
    let image = ps::containers(pod)
        .first()
        .map(|(_, i)| i.clone())
        .unwrap_or_default();
    if !is_refused(shared, &image) {
        return false;
    }
    let (shared, pod, host_ip, pod_ip) = (
        shared.clone(),
        pod.clone(),
        host_ip.to_string(),
        pod_ip.to_string(),
    );
    let _ = std::thread::Builder::new()
        .name("kubelet-pull".into())
        .spawn(move || {
            let ctx = Ctx::new(&shared, &pod, "node", host_ip, pod_ip, None);
            if ctx.set(ps::waiting(&pod, &ctx.run, "ContainerCreating", None)) {
                pull_refused(&ctx, &image);
            }
        });
    true
}

/// ErrImagePull, then ImagePullBackOff, again and again with the kubelet's wording.
fn pull_refused(ctx: &Ctx, image: &str) {
    let full = ps::normalize_image(image);
    let err = format!(
        "rpc error: code = NotFound desc = failed to pull and unpack image \"{full}\": failed to resolve reference \"{full}\": {full}: not found"
    );
    let back_off = format!("Back-off pulling image \"{image}\"");
    let mut delay = Duration::from_secs(10);
    let wait = |d: Duration| match ctx.sleep(d) {
        Wake::Timeout => true,
        Wake::Stop => false,
        Wake::Deadline => {
            ctx.deadline_exceeded(None, None);
            false
        }
    };
    loop {
        ctx.event("Normal", "Pulling", &format!("Pulling image \"{image}\""));
        if !wait(Duration::from_millis(100)) {
            return;
        }
        ctx.event(
            "Warning",
            "Failed",
            &format!("Failed to pull image \"{image}\": {err}"),
        );
        ctx.event("Warning", "Failed", "Error: ErrImagePull");
        if !ctx.set(ps::waiting(ctx.pod, &ctx.run, "ErrImagePull", Some(&err)))
            || !wait(Duration::from_secs(1))
        {
            return;
        }
        ctx.event("Normal", "BackOff", &back_off);
        ctx.event("Warning", "Failed", "Error: ImagePullBackOff");
        if !ctx.set(ps::waiting(
            ctx.pod,
            &ctx.run,
            "ImagePullBackOff",
            Some(&back_off),
        )) || !wait(delay)
        {
            return;
        }
        delay = (delay * 2).min(Duration::from_secs(300));
    }
}

/// `command` + `args` of the first container (args alone when there is no command: the image's
/// entrypoint is unknown to the fake, so it must be in args).
fn argv(pod: &Value) -> Vec<String> {
    let c = &pod["spec"]["containers"][0];
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let mut a = strs(&c["command"]);
    a.extend(strs(&c["args"]));
    a
}

/// The capabilities a container runtime gives a container that asks for none (containerd's
/// and CRI-O's default set, `oci.WithDefaultCapabilities` / `DefaultCapabilities`).
const DEFAULT_CAPABILITIES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
];

/// `argv` run with the capabilities the container's `securityContext` keeps, as a runtime
/// runs it: the default set, less `drop` (`ALL`: every one), plus `add`; all of them for a
/// privileged container. The lab starts pods as root with every capability, so without this a
/// probe pod missing one (nft needs NET_ADMIN) would work in the lab and fail on a node. As
/// the bounding set (`setpriv`), so that nothing the command runs gets any other.
fn with_capabilities(pod: &Value, argv: &[String]) -> Vec<String> {
    let sc = &pod["spec"]["containers"][0]["securityContext"];
    if sc["privileged"].as_bool() == Some(true) {
        return argv.to_vec();
    }
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|c| c.trim_start_matches("CAP_").to_ascii_uppercase())
            .collect()
    };
    let (drop, add) = (
        list(&sc["capabilities"]["drop"]),
        list(&sc["capabilities"]["add"]),
    );
    let mut keep: Vec<String> = if drop.iter().any(|d| d == "ALL") {
        vec![]
    } else {
        DEFAULT_CAPABILITIES
            .iter()
            .map(|c| c.to_string())
            .filter(|c| !drop.contains(c))
            .collect()
    };
    for a in add {
        // Only names setpriv knows (letters and _): anything else is no capability.
        if !keep.contains(&a) && a.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            keep.push(a);
        }
    }
    let mut set = String::from("-all");
    for c in &keep {
        set.push_str(",+");
        set.push_str(&c.to_ascii_lowercase());
    }
    let mut out: Vec<String> = [
        "setpriv",
        "--bounding-set",
        &set,
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.extend(argv.iter().cloned());
    out
}

/// The container's environment: literal values and the common downward-API fields.
fn env(pod: &Value, run: &RunInfo, hostname: &str, place: &Place) -> Vec<(String, String)> {
    let mut out = vec![
        ("PATH".to_string(), NODE_PATH.to_string()),
        ("HOSTNAME".to_string(), hostname.to_string()),
    ];
    if matches!(place, Place::Vsphere) {
        // runc sets HOME from the image's passwd when the spec has none (root: /root); ssh in
        // a jumpbox pod wants it. Node pods keep the environment they always had.
        out.push(("HOME".to_string(), "/root".to_string()));
    }
    for e in pod["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let value = match (
            e["value"].as_str(),
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        ) {
            (Some(v), _) => v.to_string(),
            (None, Some("metadata.name")) => store::name(pod),
            (None, Some("metadata.namespace")) => store::namespace(pod),
            (None, Some("spec.nodeName")) => {
                pod["spec"]["nodeName"].as_str().unwrap_or("").to_string()
            }
            (None, Some("status.hostIP")) => run.host_ip.clone(),
            (None, Some("status.podIP")) => run.pod_ip.clone(),
            _ => continue,
        };
        out.push((name.to_string(), value));
    }
    out
}

/// A made-up address from the fixture cluster's pod CIDR for a pod without hostNetwork.
fn pod_ip(pod: &Value) -> String {
    let n = store::meta_str(pod, "uid")
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32));
    format!("192.168.{}.{}", 156 + (n >> 8) % 16, 2 + n % 250)
}

/// The pod's hostname as the kubelet sets it: its name, cut to a DNS label.
fn pod_hostname(name: &str) -> String {
    let h: String = name
        .chars()
        .take(63)
        .map(|c| if c == '.' { '-' } else { c })
        .collect();
    h.trim_end_matches('-').to_string()
}

/// Runs one pod to its end (see the module docs). Never panics on a vanished pod.
pub(super) fn run_pod(
    k: &Kubelet,
    shared: &Arc<Shared>,
    pod: &Value,
    place: &Place,
    rx: mpsc::Receiver<Stop>,
) {
    let host_net = pod["spec"]["hostNetwork"].as_bool() == Some(true);
    let (ip, pip) = match place {
        Place::Node(node) => {
            let ip = node.ip.to_string();
            let pip = if host_net { ip.clone() } else { pod_ip(pod) };
            (ip, pip)
        }
        // What the VMs see as the pod's source address is the switch's: report that.
        Place::Vsphere => {
            let ip = k.lab().jumpbox_ip().to_string();
            (ip.clone(), ip)
        }
    };
    let ctx = Ctx::new(shared, pod, place.host(), ip, pip, Some(rx));
    // The kubelet's sync loop picks the pod up.
    if !matches!(ctx.sleep(TICK), Wake::Timeout) {
        return;
    }
    if !ctx.set(ps::waiting(pod, &ctx.run, "ContainerCreating", None)) {
        return;
    }
    let Some((cname, image)) = ps::containers(pod).into_iter().next() else {
        return;
    };
    // Volumes come before the image, as in the kubelet's SyncPod. The guard removes the
    // written secrets when this function returns, whichever way the pod ends.
    let mounted = match place {
        Place::Node(_) => volumes::Mounted::none(),
        Place::Vsphere => match volumes::mount(k, &ctx, pod) {
            Some(m) => m,
            None => return,
        },
    };
    if is_refused(shared, &image) {
        return pull_refused(&ctx, &image);
    }
    // A vSphere Pod's start: the host pulls the image and boots the pod's VM
    // (FakeApi::delay_vsphere_pod_starts); the pod stays ContainerCreating meanwhile.
    let start = *shared.vsphere_pod_start.lock().unwrap();
    if let (Place::Vsphere, Some(d)) = (place, start) {
        match ctx.sleep(d) {
            Wake::Timeout => {}
            Wake::Stop => return,
            Wake::Deadline => return ctx.deadline_exceeded(None, None),
        }
    }
    ctx.event(
        "Normal",
        "Pulled",
        &format!("Container image \"{image}\" already present on machine"),
    );
    let argv = argv(pod);
    let check = match argv.first() {
        Some(a0) => process::check_executable(a0),
        None => Err(
            "etcdnet-fakeapi does not know the image's entrypoint: give the container a command"
                .to_string(),
        ),
    };
    let started = check.and_then(|()| {
        let (cmd, hostname) = match place {
            Place::Node(node) => (
                k.lab().pod_command_with(
                    &node.name,
                    &with_capabilities(pod, &argv),
                    host_read_only(pod),
                ),
                if host_net {
                    node.name.clone()
                } else {
                    ctx.name.clone()
                },
            ),
            Place::Vsphere => {
                let h = pod_hostname(&ctx.name);
                let cmd = k.lab().jumpbox_pod_command_as(
                    &h,
                    &argv,
                    &mounted.mounts(),
                    &volumes::security(pod),
                );
                (cmd, h)
            }
        };
        let mut cmd = cmd.map_err(|e| e.to_string())?;
        cmd.env_clear().envs(env(pod, &ctx.run, &hostname, place));
        let key = (ctx.ns.clone(), ctx.name.clone());
        let (sh, uid) = (shared.clone(), ctx.uid.clone());
        let mut pending = Vec::new();
        process::spawn(cmd, move |chunk| {
            pending.extend_from_slice(chunk);
            let text = process::take_text(&mut pending, false);
            Ctx::append_log(&sh, &key, &uid, &text);
        })
        .map_err(|e| format!("{e:#}"))
    });
    let (mut child, log_done) = match started {
        Ok(c) => c,
        Err(msg) => {
            ctx.event("Warning", "Failed", &format!("Error: {msg}"));
            return ctx.end(Ending {
                exit_code: 128,
                reason: "StartError".into(),
                message: Some(msg),
                started_at: Some("1970-01-01T00:00:00Z".into()),
                finished_at: now_rfc3339(),
                pod_reason: None,
            });
        }
    };
    k.record(PodProcess {
        namespace: ctx.ns.clone(),
        pod: ctx.name.clone(),
        node: place.host().to_string(),
        pid: child.id(),
    });
    process::wait_started(&child, Duration::from_secs(10));
    let started_at = now_rfc3339();
    ctx.event("Normal", "Created", &format!("Created container {cname}"));
    ctx.event("Normal", "Started", &format!("Started container {cname}"));
    ctx.set(ps::running(pod, &ctx.run, &started_at));

    // Timeout here means "the command exited by itself".
    let wake = loop {
        if process::exited(&child) {
            break Wake::Timeout;
        }
        match ctx.sleep(TICK) {
            Wake::Timeout => {}
            other => break other,
        }
    };
    // Every path drains the log before the final status, so a client that sees the pod end
    // reads all of its output.
    let drain = || {
        let _ = log_done.recv_timeout(Duration::from_secs(2));
    };
    match wake {
        Wake::Stop => {
            // Deleted, or the fake stops: the kubelet's kill, SIGTERM and SIGKILL after the
            // pod's grace period (0: at once), as for a delete without gracePeriodSeconds. No
            // status to write: the object is gone.
            let grace = pod["spec"]["terminationGracePeriodSeconds"]
                .as_u64()
                .unwrap_or(30)
                .min(MAX_GRACE);
            if grace > 0 {
                process::signal_group(&child, libc::SIGTERM);
                let until = Instant::now() + Duration::from_secs(grace);
                while !process::exited(&child) && Instant::now() < until {
                    std::thread::sleep(TICK);
                }
            }
            process::finish(&mut child);
            drain();
        }
        Wake::Deadline => {
            ctx.event("Normal", "Killing", &format!("Stopping container {cname}"));
            // The kubelet's kill: SIGTERM, then SIGKILL after the grace period (at least 2 s).
            let grace = pod["spec"]["terminationGracePeriodSeconds"]
                .as_u64()
                .unwrap_or(30);
            let grace = Duration::from_secs(grace.clamp(MIN_GRACE, MAX_GRACE));
            process::signal_group(&child, libc::SIGTERM);
            let until = Instant::now() + grace;
            while !process::exited(&child) && Instant::now() < until {
                if matches!(ctx.pause(TICK), Wake::Stop) {
                    break;
                }
            }
            let code = process::exit_code(process::finish(&mut child));
            drain();
            ctx.deadline_exceeded(Some(started_at), Some(code));
        }
        Wake::Timeout => {
            // The command exited; what it left running in its group dies with it (as runc kills
            // the container's cgroup).
            let code = process::exit_code(process::finish(&mut child));
            drain();
            ctx.end(Ending {
                exit_code: code,
                reason: if code == 0 { "Completed" } else { "Error" }.into(),
                message: None,
                started_at: Some(started_at),
                finished_at: now_rfc3339(),
                pod_reason: None,
            });
        }
    }
}

#[cfg(test)]
mod capability_tests {
    use super::with_capabilities;
    use serde_json::json;

    fn pod(sc: serde_json::Value) -> serde_json::Value {
        json!({"spec": {"containers": [{"securityContext": sc}]}})
    }

    #[test]
    fn the_command_keeps_only_the_capabilities_of_its_spec() {
        let argv = vec!["chroot".to_string(), "/host".to_string()];
        let probe =
            pod(json!({"capabilities": {"drop": ["ALL"], "add": ["SYS_CHROOT", "NET_ADMIN"]}}));
        assert_eq!(
            with_capabilities(&probe, &argv)[..3],
            ["setpriv", "--bounding-set", "-all,+sys_chroot,+net_admin"]
        );
        assert_eq!(with_capabilities(&probe, &argv)[6..], argv[..]);
        // No securityContext: the runtime's default set; a privileged container: everything.
        let default = with_capabilities(&pod(json!({})), &argv);
        assert!(default[2].contains("+net_raw") && !default[2].contains("net_admin"));
        assert_eq!(
            with_capabilities(&pod(json!({"privileged": true})), &argv),
            argv
        );
        // A name that is no capability never reaches setpriv.
        let odd = pod(json!({"capabilities": {"drop": ["ALL"], "add": ["X,+SYS_ADMIN"]}}));
        assert_eq!(with_capabilities(&odd, &argv)[2], "-all");
    }
}
