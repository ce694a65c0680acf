//! Shared by the integration tests: a fake Supervisor (and workload API) on loopback, a real
//! kubeconfig pointing at it, and helpers that run the built plugin, directly or through the real
//! `kubectl` with the plugin on PATH.

pub mod cpu;
pub mod members;
pub mod nsx;
pub mod past;
pub mod probe;
pub mod tarball;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use etcdnet::report::v1alpha2::{DiagnosedNode, ReachError, VerdictCode};
use etcdnet::report::{CleanupReport, DiagnoseReport, StatusReport};
pub use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-etcdnet");

/// The support article's cluster (fixture set `quorum-lost`): its namespace, name and the
/// control-plane nodes, which the lab builds with the same names and IPs (198.18.0.11-13).
pub mod article {
    pub const SET: &str = "quorum-lost";
    pub const NS: &str = "ns-prod";
    pub const CLUSTER: &str = "tkc-prod";
    pub const CP: [&str; 3] = [
        "tkc-prod-7xk2p-4rz8m",
        "tkc-prod-7xk2p-9qtvw",
        "tkc-prod-7xk2p-bx2lk",
    ];

    /// A VirtualMachine an editor made: labelled as one of the cluster's control-plane VMs (the
    /// capv labels, the cluster-name label), with an address, and owned by nothing.
    pub fn rogue_vm(name: &str, ip: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "vmoperator.vmware.com/v1alpha3",
            "kind": "VirtualMachine",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {
                    "capv.vmware.com/cluster.name": CLUSTER,
                    "capv.vmware.com/cluster.role": "controlplane",
                    "cluster.x-k8s.io/cluster-name": CLUSTER
                }
            },
            "spec": {"className": "best-effort-small", "powerState": "PoweredOn"},
            "status": {"powerState": "PoweredOn", "network": {"primaryIP4": ip}}
        })
    }

    /// A lab whose nodes are the set's control-plane VMs (same names and IPs). Panics, naming
    /// what is missing, when the lab cannot run here (`etcdnet_lab::require`).
    pub fn start_lab(test: &str) -> std::sync::Arc<etcdnet_lab::Lab> {
        start_lab_with(test, false)
    }

    /// [`start_lab`], with a kube-apiserver stand-in on every node when `apiserver`
    /// (`LabConfig::apiserver`; `Workload::lab` then puts the lab's VIP in front of them).
    pub fn start_lab_with(test: &str, apiserver: bool) -> std::sync::Arc<etcdnet_lab::Lab> {
        use etcdnet_fakeapi::labplan;
        etcdnet_lab::require(test);
        let set = super::FakeConfig::from_dir(super::fixture(SET)).unwrap();
        let plan = labplan::plan(&set, Some(CLUSTER)).unwrap();
        let mut config = labplan::lab_config(&plan).unwrap();
        config.apiserver = apiserver;
        std::sync::Arc::new(etcdnet_lab::Lab::start(config).expect("lab starts"))
    }
}
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// Secret material planted in the fixtures: it must never appear in any output.
pub const SECRET_MARKERS: &[&str] = &["FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT", "FAKEKEYMATERIAL"];

/// A file of this repository, by its path from the root.
pub fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn fixture(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/supervisor")
        .join(set)
}

/// One test's world: a fake Supervisor serving a fixture set, the workload API fake its
/// kubeconfig secret points at, and a kubeconfig file for the plugin.
pub struct Env {
    pub supervisor: FakeApi,
    pub workload: Option<Workload>,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub const CONTEXT: &str = "supervisor";

/// Fixture set `set` with its workload endpoint `workload` filled in (`{{WORKLOAD_URL}}`,
/// `{{WORKLOAD_CA}}`): the one reading of a set that [`Env::new`] and [`Env::stamped`] share.
fn workload_config(set: &str, workload: &Workload) -> FakeConfig {
    FakeConfig::from_dir(fixture(set))
        .expect("fixture set loads")
        .var("WORKLOAD_URL", workload.url())
        .var("WORKLOAD_CA", workload.ca_data())
}

/// Fixture set `set` with `objects` added and `forbid` refused, its kubeconfig secret at
/// `workload_url`: what [`Env::with_config`] serves.
pub fn fixture_config(
    set: &str,
    objects: Vec<serde_json::Value>,
    forbid: &[etcdnet_fakeapi::Forbid],
    workload_url: &str,
) -> FakeConfig {
    let mut cfg = FakeConfig::from_dir(fixture(set))
        .expect("fixture set loads")
        .var("WORKLOAD_URL", workload_url);
    for o in objects {
        cfg = cfg.object(o);
    }
    for f in forbid {
        cfg = cfg.forbid(f.clone());
    }
    cfg
}

impl Env {
    /// `workload`: the fake the `<cluster>-kubeconfig` secret points at (`{{WORKLOAD_URL}}`).
    /// Its `{{WORKLOAD_CA}}` is the one `workload` is served with (the lab's cluster CA when
    /// the endpoint is the lab's VIP in front of its API servers: `Workload::lab`).
    pub fn new(set: &str, workload: Workload) -> Env {
        let cfg = workload_config(set, &workload);
        Env::with_config(cfg, Some(workload))
    }

    /// [`Env::new`] for a world in the lab: the set's timestamps moved to a few minutes before
    /// the fake starts (`stamped_at_start`), as the jumpbox's lab worlds and the demo's are.
    pub fn stamped(set: &str, workload: Workload) -> Env {
        let cfg = workload_config(set, &workload).stamped_at_start();
        Env::with_config(cfg, Some(workload))
    }

    /// A world over `set` plus `objects` (an editor's, a test's), `forbid` refused, its workload
    /// API `workload`.
    pub fn with_objects(
        set: &str,
        objects: Vec<serde_json::Value>,
        forbid: &[etcdnet_fakeapi::Forbid],
        workload: Workload,
    ) -> Env {
        let cfg = fixture_config(set, objects, forbid, &workload.url());
        Env::with_config(cfg, Some(workload))
    }

    /// Fixture set `set` whose Supervisor runs the jumpbox pod in `lab` (its switch namespace)
    /// with `key` as the cluster's `tkc-prod-ssh` secret; the workload API a black hole.
    pub fn jumpbox_in_lab(set: &str, lab: &std::sync::Arc<etcdnet_lab::Lab>, key: Vec<u8>) -> Env {
        Env::jumpbox_in_lab_with(set, lab, key, Workload::black_hole())
    }

    /// [`Env::jumpbox_in_lab`] with the workload API `workload`: a world whose verdict can be
    /// `Healthy` (which needs the workload API answering) runs the jumpbox with `--via jumpbox`
    /// or `--via ssh` beside an answering one.
    pub fn jumpbox_in_lab_with(
        set: &str,
        lab: &std::sync::Arc<etcdnet_lab::Lab>,
        key: Vec<u8>,
        workload: Workload,
    ) -> Env {
        // The lab runs now: the set's timestamps are moved to a few minutes before it starts
        // (`stamped_at_start`), as the demo's are, so no condition reads a year old beside a
        // cut the lab made seconds ago.
        let env = Env::stamped(set, workload);
        env.supervisor
            .execute_jumpbox_pods_in(lab.clone())
            .expect("the Supervisor runs jumpbox pods");
        env.supervisor
            .set_secret_data(article::NS, "tkc-prod-ssh", "ssh-privatekey", key)
            .unwrap();
        env
    }

    /// A world whose workload URL is given verbatim (e.g. https:// on a plain http fake).
    pub fn with_url(set: &str, workload: Option<Workload>, workload_url: &str) -> Env {
        let cfg = FakeConfig::from_dir(fixture(set))
            .expect("fixture set loads")
            .var("WORKLOAD_URL", workload_url);
        Env::with_config(cfg, workload)
    }

    /// The fake Supervisor's loopback port (to relay it into the lab's switch namespace).
    pub fn supervisor_port(&self) -> u16 {
        let url = self.supervisor.url();
        url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Runs the plugin binary directly with `--kubeconfig` added.
    pub fn plugin(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(PLUGIN);
        cmd.args(args).arg("--kubeconfig").arg(&self.kubeconfig);
        self.isolate(&mut cmd);
        Run::from(cmd.output().expect("plugin runs"))
    }

    /// The plugin as a command not yet started (for tests that signal it), output piped.
    pub fn plugin_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(PLUGIN);
        cmd.args(args).arg("--kubeconfig").arg(&self.kubeconfig);
        self.isolate(&mut cmd);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// Runs `kubectl etcdnet ...` through the real kubectl, with the plugin on PATH and the
    /// kubeconfig given through KUBECONFIG (as users have it).
    pub fn kubectl(&self, args: &[&str]) -> Run {
        Run::from(self.kubectl_base(args).output().expect("kubectl runs"))
    }

    /// `diagnose <cluster> -n <ns> --via <route> --dry-run --api-timeout 1s -o json` through
    /// kubectl, exit 0 asserted: the pods it would create, and the run.
    pub fn dry_run_pods(
        &self,
        cluster: &str,
        ns: &str,
        route: &str,
    ) -> (Vec<serde_json::Value>, Run) {
        let run = self.kubectl(&[
            "diagnose",
            cluster,
            "-n",
            ns,
            "--via",
            route,
            "--dry-run",
            "--api-timeout",
            "1s",
            "-o",
            "json",
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        (run.json_documents(), run)
    }

    /// `kubectl etcdnet <args>` with the plugin first on PATH and the kubeconfig in KUBECONFIG.
    fn kubectl_base(&self, args: &[&str]) -> Command {
        let bin_dir = Path::new(PLUGIN).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(KUBECTL);
        cmd.arg("etcdnet").args(args);
        self.isolate(&mut cmd);
        cmd.env("PATH", path).env("KUBECONFIG", &self.kubeconfig);
        cmd
    }

    /// The Supervisor's vSphere Pods (jumpbox pods) succeed at once, printing every VM's section
    /// with the healthy probe document made that VM's own ([`scripted_jumpbox_log`]).
    pub fn script_jumpbox_pods(&self, names: &'static [&'static str]) {
        self.supervisor.on_pod_created(move |pod| {
            Some(etcdnet_fakeapi::PodScript::succeeds(scripted_jumpbox_log(
                pod, names,
            )))
        });
    }

    /// `kubectl etcdnet diagnose` of the article's cluster as the lab tests run it (a lab node
    /// answers within 2 s or not at all), plus `extra`.
    pub fn diagnose_lab(&self, extra: &[&str]) -> Run {
        use article::{CLUSTER, NS};
        let mut args = vec!["diagnose", CLUSTER, "-n", NS, "--connect-timeout", "2s"];
        args.extend_from_slice(extra);
        self.kubectl(&args)
    }

    /// `kubectl etcdnet diagnose` of the article's cluster on the jumpbox route (the workload
    /// API not waited for past a second), plus `extra`.
    pub fn diagnose_via_jumpbox(&self, extra: &[&str]) -> Run {
        Run::from(
            self.diagnose_via_jumpbox_command(extra)
                .output()
                .expect("kubectl runs"),
        )
    }

    /// [`Env::diagnose_via_jumpbox`]'s command, not started (its environment the caller's to
    /// change).
    pub fn diagnose_via_jumpbox_command(&self, extra: &[&str]) -> Command {
        use article::{CLUSTER, NS};
        let mut args = vec![
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "jumpbox",
            "--api-timeout",
            "1s",
        ];
        args.extend_from_slice(extra);
        self.kubectl_command(&args)
    }

    /// Like [`Env::script_jumpbox_pods`], with `section(i, ip)` standing for VM `i`'s section
    /// where it gives one (`None`: the healthy section).
    pub fn script_jumpbox_pods_with(
        &self,
        names: &'static [&'static str],
        section: impl Fn(usize, &str) -> Option<String> + Send + Sync + 'static,
    ) {
        let section = std::sync::Arc::new(section);
        self.supervisor.on_pod_created(move |pod| {
            // `--watch`'s kept jumpbox runs rounds until it is deleted.
            if let Some(every) = rounds_every(pod) {
                let (pod, section) = (pod.clone(), section.clone());
                return Some(etcdnet_fakeapi::PodScript {
                    finish_after: None,
                    rounds: Some(etcdnet_fakeapi::Rounds {
                        every,
                        round: std::sync::Arc::new(move |n| {
                            scripted_jumpbox_round_with(&pod, names, &*section, n)
                        }),
                    }),
                    ..etcdnet_fakeapi::PodScript::default()
                });
            }
            Some(etcdnet_fakeapi::PodScript::succeeds(
                scripted_jumpbox_log_with(pod, names, &*section),
            ))
        });
    }

    /// No user config leaks in: a private HOME, no colours.
    fn isolate(&self, cmd: &mut Command) {
        cmd.env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .env("NO_COLOR", "1");
    }
}

/// Starts `cmd`, waits (at most `bound`) until `ready()` holds, sends it SIGINT (as Ctrl-C does)
/// and returns how it ended. Panics if it never got ready: the test would prove nothing.
pub fn interrupt_when(
    mut cmd: Command,
    ready: impl Fn() -> bool,
    bound: std::time::Duration,
) -> Run {
    let child = cmd.spawn().expect("starts");
    let deadline = std::time::Instant::now() + bound;
    while !ready() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ready(), "never got to the point of interrupting it");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    Run::from(child.wait_with_output().expect("it ends"))
}

/// What a run printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Stdout as a typed report (`-o json`); panics with the output when it is not one.
    pub fn report<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not a {} ({e}):\n{}\nstderr:\n{}",
                std::any::type_name::<T>(),
                self.stdout,
                self.stderr
            )
        })
    }

    pub fn diagnose_report(&self) -> DiagnoseReport {
        self.report()
    }

    pub fn status_report(&self) -> StatusReport {
        self.report()
    }

    pub fn cleanup_report(&self) -> CleanupReport {
        self.report()
    }

    /// Every JSON document of stdout, in order (`diagnose --dry-run -o json` prints one per
    /// pod, as `kubectl create --dry-run -o json` does).
    pub fn json_documents(&self) -> Vec<serde_json::Value> {
        serde_json::Deserializer::from_str(&self.stdout)
            .into_iter::<serde_json::Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{e}:\n{}", self.stdout))
    }

    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Errors are one line: `error: ...` and nothing else on stderr.
    pub fn one_line_error(&self) -> &str {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "one error line expected, got:\n{}",
            self.stderr
        );
        assert!(lines[0].starts_with("error: "), "{}", lines[0]);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        lines[0]
    }
}

/// Runs `diagnose` (with `-o json`) until the verdict is `want`, as etcd takes seconds to notice
/// a fault; gives up after 60 s and returns the last run and its report either way.
pub fn diagnose_until(want: VerdictCode, diagnose: impl Fn() -> Run) -> (Run, DiagnoseReport) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut rounds = 0;
    loop {
        let run = diagnose();
        let report = run.diagnose_report();
        rounds += 1;
        if report.verdict.code == want || Instant::now() > deadline {
            // How many whole diagnoses it took: each one is the suite's CPU (issue 39, item 5).
            eprintln!("  {} after {rounds} round(s)", report.verdict.code);
            return (run, report);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Why the node could not be probed; panics, showing the node, when it was probed.
pub fn reach_error(node: &DiagnosedNode) -> &ReachError {
    node.error
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no error: {node:#?}", node.name))
}

/// What the jumpbox pod prints when the probe ran on every VM it was given, for Supervisor fakes
/// that script their vSphere Pods: for each VM of the pod's command, in order, its section framed
/// with the pod's nonce (`route::jumpbox::frame`): the port lines, the captured healthy probe
/// document made this VM's own (its IP from the command, its host name the node `names[i]` of
/// the VM at 198.18.0.1<i+1>: the plugin checks both), and ssh's exit.
pub fn scripted_jumpbox_log(pod: &serde_json::Value, names: &[&str]) -> String {
    scripted_jumpbox_log_with(pod, names, |_, _| None)
}

/// [`scripted_jumpbox_log`], with `section(index, ip)` replacing a VM's section when it says so
/// (e.g. [`unreachable_jumpbox_section`]).
pub fn scripted_jumpbox_log_with(
    pod: &serde_json::Value,
    names: &[&str],
    section: impl Fn(usize, &str) -> Option<String>,
) -> String {
    use etcdnet::route::jumpbox::{frame, ARGV_NONCE, ARGV_VMS};
    let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let nonce = command.get(ARGV_NONCE).copied().unwrap_or_default();
    let ips: Vec<&str> = command
        .get(ARGV_VMS..)
        .unwrap_or_default()
        .iter()
        .step_by(2)
        .copied()
        .collect();
    ips.iter()
        .enumerate()
        .map(|(i, ip)| {
            let text = section(i, ip).unwrap_or_else(|| healthy_jumpbox_section(ip, names));
            frame(nonce, i, &text)
        })
        .collect()
}

/// The interval of a jumpbox pod that runs rounds (`--watch`'s kept pod: its container's env
/// `ETCDNET_ROUNDS_EVERY`, whole seconds, as `src/route/jumpbox/keeper.rs` sets it).
pub fn rounds_every(pod: &serde_json::Value) -> Option<std::time::Duration> {
    pod["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == "ETCDNET_ROUNDS_EVERY")?["value"]
        .as_str()?
        .parse()
        .ok()
        .map(std::time::Duration::from_secs)
}

/// Round `n` of a kept jumpbox pod, as `src/route/jumpbox/jumpbox.sh` prints it with
/// `ETCDNET_ROUNDS_EVERY`: [`scripted_jumpbox_log_with`]'s sections framed with
/// `<nonce>r<n>`, then `ETCDNET-ROUND-END <nonce> <n>`.
pub fn scripted_jumpbox_round_with(
    pod: &serde_json::Value,
    names: &[&str],
    section: impl Fn(usize, &str) -> Option<String>,
    n: u64,
) -> String {
    use etcdnet::route::jumpbox::{frame, ARGV_NONCE, ARGV_VMS};
    let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let nonce = command.get(ARGV_NONCE).copied().unwrap_or_default();
    let framed = format!("{nonce}r{n}");
    let ips = command
        .get(ARGV_VMS..)
        .unwrap_or_default()
        .iter()
        .step_by(2);
    let mut out: String = ips
        .enumerate()
        .map(|(i, ip)| {
            let text = section(i, ip).unwrap_or_else(|| healthy_jumpbox_section(ip, names));
            frame(&framed, i, &text)
        })
        .collect();
    out.push_str(&format!("ETCDNET-ROUND-END {nonce} {n}\n"));
    out
}

/// One VM's section when its probe ran: ports open, the healthy document made the VM's own.
fn healthy_jumpbox_section(ip: &str, names: &[&str]) -> String {
    jumpbox_section(&healthy_probe_doc(ip, names))
}

/// The healthy probe document (tests/fixtures/probe-output/healthy-node.json) made VM `ip`'s
/// own: its address, and its node's name from `names` in the order of 198.18.0.11-13.
pub fn healthy_probe_doc(ip: &str, names: &[&str]) -> String {
    let node = ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
        .iter()
        .position(|i| *i == ip)
        .and_then(|i| names.get(i))
        .copied()
        .unwrap_or("unknown");
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe-output/healthy-node.json"),
    )
    .unwrap()
    .trim()
    .replace(
        "\"nodeIp\":\"198.18.0.11\"",
        &format!("\"nodeIp\":\"{ip}\""),
    )
    .replace("\"ips\":[\"198.18.0.11\"]", &format!("\"ips\":[\"{ip}\"]"))
    .replace(
        "\"hostname\":\"tkc-1-control-plane-node1\"",
        &format!("\"hostname\":\"{node}\""),
    )
}

/// [`healthy_probe_doc`] with the node's kube-apiserver read as ready: its container running
/// (`crictl ps -a --name kube-apiserver -o json`'s shape, cri-tools `ps`) and
/// `/readyz?verbose` answering 200 with every check passed (k8s.io/apiserver
/// pkg/server/healthz/healthz.go: `[+]<check> ok` lines, then "readyz check passed"). No
/// certificate is read: its dates are then unknown, not expired.
pub fn ready_api_server_doc(ip: &str, names: &[&str]) -> String {
    let doc = healthy_probe_doc(ip, names);
    let containers = serde_json::json!({"containers": [{
        "id": "5e1f0c2a9b7d",
        "metadata": {"name": "kube-apiserver", "attempt": 0},
        "state": "CONTAINER_RUNNING",
        "createdAt": "1764662300000000000"
    }]});
    let api_server = serde_json::json!({
        "containers": {"outcome": "Ok", "text": containers.to_string()},
        "readyz": {
            "outcome": "Ok",
            "httpStatus": 200,
            "text": "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\nreadyz check passed\n"
        }
    });
    // Added at the end, as text: the document keeps its own order (schemaVersion first).
    let body = doc.trim_end().strip_suffix('}').expect("a JSON object");
    format!("{body},\"apiServer\":{api_server}}}")
}

/// One VM's jumpbox section around its probe document: ports open, no host key, ssh exit 0.
pub fn jumpbox_section(doc: &str) -> String {
    format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Open\nETCDNET-REACH 2380 Open\nETCDNET-REACH 6443 Open\nETCDNET-REACH-END\n{doc}\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n"
    )
}

/// One VM's jumpbox section: the captured healthy document made this VM's own, with its peers
/// on 2380 timing out (a dropping firewall).
pub fn section_2380_dropped(ip: &str) -> String {
    let text = healthy_probe_doc(ip, &article::CP);
    // The paths again, this VM's own: its peers' 2380 time out (as peer-timeouts.json says it).
    let paths: Vec<String> = ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
        .iter()
        .flat_map(|t| [(*t, 2379), (*t, 2380)])
        .map(|(t, port)| {
            let own = t == ip;
            if port == 2380 && !own {
                format!(r#"{{"target":"{t}","port":{port},"own":false,"tcp":"Timeout","tcpMs":3020,"tcpDetail":"no TCP answer within 3 s","tls":"NotTried","tlsMs":null,"tlsDetail":null,"httpStatus":null}}"#)
            } else {
                format!(r#"{{"target":"{t}","port":{port},"own":{own},"tcp":"Connected","tcpMs":1,"tcpDetail":null,"tls":"Completed","tlsMs":40,"tlsDetail":null,"httpStatus":200}}"#)
            }
        })
        .collect();
    let at = text.find("\"paths\":[").unwrap();
    let close = at + text[at..].find(']').unwrap();
    jumpbox_section(&format!(
        "{}\"paths\":[{}{}",
        &text[..at],
        paths.join(","),
        &text[close..]
    ))
}

/// One VM's section when nothing of it answers from the Supervisor (as the script prints it).
pub fn unreachable_jumpbox_section(ip: &str) -> String {
    format!(
        "ETCDNET-REACH 22 Timeout\nETCDNET-REACH 2379 Timeout\nETCDNET-REACH 2380 Timeout\nETCDNET-REACH 6443 Timeout\nETCDNET-REACH-END\nssh: connect to host {ip} port 22: Connection timed out\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 255\n"
    )
}

impl Env {
    /// `kubectl etcdnet ...` through the real kubectl as a command not yet started (for runs
    /// that are watched while they go, e.g. `--watch`), output piped.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut cmd = self.kubectl_base(args);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// The Supervisor requests that one `kubectl etcdnet <args>` exiting with `code` makes, as
    /// [`Env::supervisor_requests`] gives them (those before it are forgotten).
    pub fn requests_of_kubectl(&self, args: &[&str], code: i32) -> Vec<String> {
        self.supervisor.clear_requests();
        self.kubectl(args).expect_code(code);
        self.supervisor_requests()
    }

    /// The Supervisor requests made so far, as `METHOD path?query` lines.
    pub fn supervisor_requests(&self) -> Vec<String> {
        self.supervisor
            .requests()
            .iter()
            .map(|r| {
                if r.query.is_empty() {
                    format!("{} {}", r.method, r.path)
                } else {
                    format!("{} {}?{}", r.method, r.path, r.query)
                }
            })
            .collect()
    }
}

impl Env {
    /// A world over a configured Supervisor set (placeholders already given), e.g. a generated
    /// one; `workload` is kept alive with it.
    pub fn with_config(cfg: FakeConfig, workload: Option<Workload>) -> Env {
        let supervisor = FakeApi::start_with(cfg).expect("fake supervisor starts");
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        supervisor
            .write_kubeconfig(&kubeconfig, CONTEXT, None)
            .unwrap();
        Env {
            supervisor,
            workload,
            dir,
            kubeconfig,
        }
    }
}

/// The set `three-clusters`: three TKG clusters in one vSphere Namespace, each with its own
/// workload API (`{{WORKLOAD_URL_TKC_WEB}}`, ...) and its own lab subnet, for [`LabFleet`].
pub mod fleet {
    pub const SET: &str = "three-clusters";
    pub const NS: &str = "ns-fleet";
    /// In the set's order (198.18.1.x, .2.x, .3.x).
    pub const CLUSTERS: [&str; 3] = ["tkc-web", "tkc-api", "tkc-db"];

    /// A cluster's control-plane nodes, (name, IP) in address order: the Machines', VMs' and
    /// Nodes' names, and the lab's.
    pub fn nodes(cluster: &str) -> Vec<(String, std::net::Ipv4Addr)> {
        etcdnet_fakeapi::generate::three_clusters()
            .into_iter()
            .find(|c| c.name == cluster)
            .unwrap_or_else(|| panic!("{cluster} is not a cluster of {SET}"))
            .nodes()
    }
}

/// The set `seven-nodes`: one cluster with 7 control-plane nodes (198.18.7.11-17).
pub mod seven {
    pub const SET: &str = "seven-nodes";
    pub const NS: &str = "ns-prod";
    pub const CLUSTER: &str = "tkc-big";
}

/// How the fake Supervisor of a [`LabFleet`] reaches the VMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervisor {
    /// It runs no pods: the plugin goes through each cluster's workload API (pod route).
    PodsOnly,
    /// It also runs jumpbox pods (vSphere Pods) in the first cluster's lab (in name order:
    /// tkc-api's of `three-clusters`), whose switch is linked to the other labs (`Lab::route_jumpbox_to`), so it reaches every cluster's VMs;
    /// each `<cluster>-ssh` secret holds its own lab's key.
    Jumpbox,
}

/// One cluster of a [`LabFleet`]: its workload API (running the plugin's probe pods on its
/// lab's nodes) and its lab.
pub struct ClusterLab {
    pub cluster: String,
    pub workload: Workload,
    pub lab: std::sync::Arc<etcdnet_lab::Lab>,
}

/// A Supervisor set with a lab per cluster: the fake Supervisor ([`Env`], through `Deref`), and
/// for every cluster of the set (those with control-plane Machines) a lab of its nodes (names and
/// IPs of its VMs, `labplan::plan`) and a workload API over `workload/lab-any` whose pods pinned
/// to those nodes run there. Each cluster's kubeconfig secret points at its own workload API
/// (`{{WORKLOAD_URL_<NAME>}}`; a one-cluster set's `{{WORKLOAD_URL}}` too). Labs start side by
/// side; faults injected in one lab touch that cluster only.
pub struct LabFleet {
    pub env: Env,
    /// In cluster-name order.
    pub clusters: Vec<ClusterLab>,
}

impl std::ops::Deref for LabFleet {
    type Target = Env;
    fn deref(&self) -> &Env {
        &self.env
    }
}

impl LabFleet {
    /// Starts the labs of every cluster of `set` and the fakes. Panics, naming what is missing,
    /// when the lab cannot run here (`etcdnet_lab::require`).
    pub fn start(test: &str, set: &str, supervisor: Supervisor) -> LabFleet {
        use etcdnet_fakeapi::{labplan, workload_set, workload_url_var};
        etcdnet_lab::require(test);
        let mut cfg = FakeConfig::from_dir(fixture(set)).expect("fixture set loads");
        let names = labplan::clusters(&cfg).expect("the set's clusters");
        assert!(!names.is_empty(), "{set} has no cluster");
        let configs: Vec<etcdnet_lab::LabConfig> = names
            .iter()
            .map(|c| {
                let plan = labplan::plan(&cfg, Some(c)).expect("a lab plan");
                labplan::lab_config(&plan).expect("a lab config")
            })
            .collect();
        let labs: Vec<std::sync::Arc<etcdnet_lab::Lab>> = std::thread::scope(|s| {
            let handles: Vec<_> = configs
                .into_iter()
                .map(|lc| s.spawn(move || etcdnet_lab::Lab::start(lc)))
                .collect();
            handles
                .into_iter()
                .map(|h| std::sync::Arc::new(h.join().unwrap().expect("lab starts")))
                .collect()
        });
        let mut clusters = Vec::new();
        for (c, lab) in names.iter().zip(labs) {
            let w = FakeConfig::from_dir(workload_set("lab-any")).unwrap();
            let workload = Workload::lab(w, lab.clone()).expect("workload fake starts");
            cfg = cfg.var(workload_url_var(c), workload.url());
            if names.len() == 1 {
                cfg = cfg.var("WORKLOAD_URL", workload.url());
            }
            clusters.push(ClusterLab {
                cluster: c.clone(),
                workload,
                lab,
            });
        }
        let env = Env::with_config(cfg, None);
        if supervisor == Supervisor::Jumpbox {
            let first = &clusters[0].lab;
            env.supervisor
                .execute_jumpbox_pods_in(first.clone())
                .expect("the Supervisor runs jumpbox pods");
            for c in &clusters {
                if !std::sync::Arc::ptr_eq(&c.lab, first) {
                    first.route_jumpbox_to(&c.lab).expect("labs linked");
                }
                let secret = format!("{}-ssh", c.cluster);
                let ns = env
                    .supervisor
                    .objects("", "secrets")
                    .into_iter()
                    .find(|s| s["metadata"]["name"] == secret.as_str())
                    .and_then(|s| s["metadata"]["namespace"].as_str().map(str::to_string))
                    .unwrap_or_else(|| panic!("{set} has no secret {secret}"));
                env.supervisor
                    .set_secret_data(&ns, &secret, "ssh-privatekey", c.lab.ssh_private_key())
                    .unwrap();
            }
        }
        LabFleet { env, clusters }
    }

    pub fn cluster(&self, name: &str) -> &ClusterLab {
        self.clusters
            .iter()
            .find(|c| c.cluster == name)
            .unwrap_or_else(|| panic!("no cluster {name} in the fleet"))
    }

    /// The lab of cluster `name`.
    pub fn lab(&self, name: &str) -> &std::sync::Arc<etcdnet_lab::Lab> {
        &self.cluster(name).lab
    }
}

/// The generated Supervisor of many clusters (`etcdnet_fakeapi::generate::many_clusters`):
/// `namespaces` vSphere Namespaces `ns-team-<n>` of `per_namespace` clusters `tkc-<n>-<m>` each,
/// 3 control-plane VMs per cluster (198.19.k.11-13), every `<cluster>-kubeconfig` at `workload`
/// (a stand-in: the Supervisor side is what is measured). `many_clusters_env(4, 5, ..)` is a
/// 20-cluster Supervisor.
pub fn many_clusters_env(namespaces: usize, per_namespace: usize, workload: Workload) -> Env {
    use etcdnet_fakeapi::generate;
    let dir = tempfile::tempdir().unwrap();
    generate::write_set(
        dir.path(),
        &format!("{namespaces} x {per_namespace} clusters"),
        &generate::many_clusters(namespaces, per_namespace),
    )
    .expect("the set is written");
    let cfg = FakeConfig::from_dir(dir.path())
        .unwrap()
        .var("WORKLOAD_URL", workload.url());
    // The set is read when the fake starts: its directory may go then.
    Env::with_config(cfg, Some(workload))
}

/// (namespace, cluster) of every cluster [`many_clusters_env`] serves, in order.
pub fn many_clusters(namespaces: usize, per_namespace: usize) -> Vec<(String, String)> {
    etcdnet_fakeapi::generate::many_clusters(namespaces, per_namespace)
        .into_iter()
        .map(|c| (c.namespace, c.name))
        .collect()
}

/// A child's stdout collected as it comes (by a thread), so a test can wait for a line while
/// the child runs (`--watch`): [`LiveStdout::now`]; everything, once it exited:
/// [`LiveStdout::all`].
pub fn stdout_of(child: &mut std::process::Child) -> LiveStdout {
    use std::io::Read;
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut pipe = child.stdout.take().expect("stdout piped");
    let sink = text.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    LiveStdout { text, reader }
}

/// See [`stdout_of`].
pub struct LiveStdout {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl LiveStdout {
    /// What the child printed so far.
    pub fn now(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// All the child printed, to the end of the stream: call once it exited. Its last lines
    /// may still be in the pipe when `try_wait` sees the exit (a loaded machine runs the
    /// reader late), so this waits for the reader (10 s at most: nothing else holds the pipe).
    pub fn all(self) -> String {
        wait_for("the end of stdout", Duration::from_secs(10), || {
            self.reader.is_finished()
        });
        self.reader.join().unwrap();
        let text = self.text.lock().unwrap().clone();
        text
    }
}

/// Waits (at most `bound`) until `ready()`; fails naming `what` otherwise.
pub fn wait_for(what: &str, bound: Duration, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + bound;
    while !ready() {
        assert!(Instant::now() < deadline, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `ready` every half second until it holds (true) or `bound` has passed (false), without
/// failing: a wait for the lab's own cheap sign before a diagnosis, which then makes the
/// assertions (and polls on, bounded, should this wait end unseen).
pub fn settle(bound: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The child's exit code once it ends within `bound`; kills it and fails otherwise.
pub fn exit_within(child: &mut std::process::Child, bound: Duration) -> i32 {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("it did not end within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How many of `requests` contain `needle`.
pub fn count_requests(requests: &[String], needle: &str) -> usize {
    requests.iter().filter(|r| r.contains(needle)).count()
}
