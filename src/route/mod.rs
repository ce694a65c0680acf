//! The reach stage: how the probe gets onto each control-plane node.
//!
//! A route is one file here with its flags (a clap `Args` struct, flattened into [`RouteArgs`]),
//! its settings (a variant of [`RouteSettings`]: what it would create, for `--dry-run`; how to
//! open it) and a [`Session`] (reach one node and run the probe there). [`Via`] is what `--via`
//! accepts, [`Route`] the route it names or `auto` resolves to ([`auto`]).
//! One driver, [`probe_all`], runs a session over every target with a bounded fan-out and the
//! progress line, and builds each node's [`NodeReport`]; no route repeats that.
//!
//! - [`pod`]: a privileged pod pinned to each node, through the workload cluster's API;
//! - [`jumpbox`]: one pod in the vSphere Namespace that SSHes to every VM (the API is down);
//! - [`ssh`]: the admin's own ssh to every VM;
//! - [`lifecycle`]: one pod's create → wait → log → delete, and the tracker that guarantees no
//!   pod is left behind; [`leftovers`]: finding and deleting what a killed run left (`cleanup`).
//!
//! Adding a route: its file (flags, settings, session), here a variant in [`Via`], [`Route`],
//! [`RouteSettings`] and [`Session`] (the compiler then names every `match` to extend, `plan`'s
//! that makes the settings too) and a flattened field in [`RouteArgs`]; the help snapshot gains
//! its lines.

pub mod jumpbox;
pub(crate) mod leftovers;
pub(crate) mod lifecycle;
pub mod pod;
pub mod ssh;
pub(crate) mod via;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi_ext::{PodExt, PodSpecExt, ResourceBuilder};

use crate::error::Result;
use crate::labels;
use crate::probe::script::ProbeArgs;
use crate::probe::{identity, HostKey, NodeReport, PortReach, ProbeOutput, ReachError, Vantage};
use crate::progress::Progress;
use crate::workload::{WorkloadApi, WorkloadCheck};

pub(crate) use lifecycle::PodTracker;
pub(crate) use via::{auto, AUTO_HELP};

/// A route, resolved: what `--via` named or `auto` chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Pod,
    Jumpbox,
    Ssh,
}

impl Route {
    /// The name `--via` takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            Route::Pod => "pod",
            Route::Jumpbox => "jumpbox",
            Route::Ssh => "ssh",
        }
    }
}

/// `--via`: a route, or `auto` (pod when the workload API answers, else jumpbox, or ssh on a
/// VDS Supervisor: [`via`]). Its values
/// and their help lines are `--help`'s, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Via {
    #[value(help = AUTO_HELP)]
    Auto,
    #[value(help = pod::HELP)]
    Pod,
    #[value(help = jumpbox::HELP)]
    Jumpbox,
    #[value(help = ssh::HELP)]
    Ssh,
}

impl Via {
    /// The route to take for a cluster whose workload API is `api` on a Supervisor whose
    /// networking stack is `stack`, and why, as the report says it; `ssh` is the TCP 22 check
    /// `auto` needs on a VDS Supervisor ([`via::needs_ssh_check`]). Err: `auto` found no route
    /// that can work, before anything was created.
    pub fn resolve(
        self,
        api: &WorkloadApi,
        stack: &crate::supervisor::StackFact,
        ssh: Option<&via::SshPortCheck>,
    ) -> std::result::Result<(Route, String), via::NoRoute> {
        let named = |r: Route| Ok((r, via::named_reason(r, stack)));
        match self {
            Via::Auto => auto(api, stack, ssh),
            Via::Pod => named(Route::Pod),
            Via::Jumpbox => named(Route::Jumpbox),
            Via::Ssh => named(Route::Ssh),
        }
    }
}

/// How many nodes are probed at once. Above it, a large control plane waits its turn instead
/// of opening hundreds of pods or ssh sessions together.
pub(crate) const DEFAULT_PARALLEL: usize = 16;

/// `--via`, the flags the routes share and each route's own, typed and parsed once by clap as
/// part of `diagnose`'s options. The fields' order is `--help`'s.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RouteArgs {
    /// How to reach the nodes (auto: pod when the workload API answers, else jumpbox on NSX/VPC,
    /// ssh on VDS when the VMs answer on TCP 22)
    #[arg(long, value_name = "VIA", value_enum, default_value_t = Via::Auto)]
    pub via: Via,

    // Each route's flags under its own help heading, in --via's order.
    #[command(flatten)]
    pub pod: pod::PodArgs,

    #[command(flatten)]
    pub jumpbox: jumpbox::JumpboxArgs,

    /// The node user for the jumpbox and ssh routes (has passwordless sudo)
    #[arg(long, value_name = "USER", default_value = ssh::DEFAULT_USER, help_heading = "Route: ssh")]
    pub ssh_user: String,

    #[command(flatten)]
    pub ssh: ssh::SshArgs,
}

#[cfg(test)]
impl RouteArgs {
    /// The routes' flags parsed from `argv` alone, for tests (the defaults with none given).
    pub fn parse(argv: &[&str]) -> RouteArgs {
        #[derive(clap::Parser)]
        #[command(no_binary_name = true)]
        struct Routes {
            #[command(flatten)]
            args: RouteArgs,
        }
        <Routes as clap::Parser>::try_parse_from(argv).unwrap().args
    }
}

/// The chosen route with its settings for one cluster: what it would create and how to open it.
#[derive(Debug, Clone)]
pub(crate) enum RouteSettings {
    Pod(pod::PodSettings),
    Jumpbox(jumpbox::JumpboxSettings),
    Ssh(ssh::SshRouteSettings),
}

impl RouteSettings {
    /// `--dry-run`: the pods this route would create to reach `targets` (those with an
    /// address): one per node (`pod`), one for them all (`jumpbox`), or none (`ssh`).
    pub fn would_create(&self, targets: &[Target]) -> Vec<Pod> {
        match self {
            RouteSettings::Pod(s) => s.would_create(targets),
            RouteSettings::Jumpbox(s) => s.would_create(targets),
            RouteSettings::Ssh(_) => Vec::new(),
        }
    }

    /// Does what needs I/O once, before the first node (a client, a key file). An error here
    /// ends the run; a route that cannot work for any node returns [`Session::Unavailable`] instead, so
    /// that every node reports why. `targets` are the nodes the session will be asked to probe
    /// (a route that reaches them all at once, as the jumpbox's one pod does, needs them).
    pub async fn open<'a>(&'a self, env: Env<'a>, targets: &'a [Target]) -> Result<Session<'a>> {
        match self {
            RouteSettings::Pod(s) => s.open(env),
            RouteSettings::Jumpbox(s) => Ok(s.open(env, targets)),
            RouteSettings::Ssh(s) => s.open(env).await,
        }
    }
}

/// An opened route: reaches one node at a time (the driver runs many at once).
pub(crate) enum Session<'a> {
    Pod(pod::PodSession<'a>),
    Jumpbox(jumpbox::JumpboxSession<'a>),
    Ssh(ssh::SshSession<'a>),
    /// The route cannot reach any node, and says why for each (also one without an address).
    Unavailable(ReachError),
}

impl Session<'_> {
    /// The progress line while it runs, e.g. "probing 3 control-plane nodes with pods".
    pub fn doing(&self, nodes: usize) -> String {
        match self {
            Session::Pod(s) => s.doing(nodes),
            Session::Jumpbox(s) => s.doing(nodes),
            Session::Ssh(s) => s.doing(nodes),
            Session::Unavailable(_) => format!("{nodes} control-plane nodes cannot be reached"),
        }
    }

    /// Where this route checks the VMs' ports from ([`Reached::reach`]): the jumpbox's pod in the
    /// Supervisor, the ssh route's own process on this machine; the pod route checks none.
    pub fn vantage(&self) -> Option<Vantage> {
        match self {
            Session::Jumpbox(_) => Some(Vantage::Supervisor),
            Session::Ssh(_) => Some(Vantage::ThisMachine),
            Session::Pod(_) | Session::Unavailable(_) => None,
        }
    }

    /// Reaches `target` at `at` and runs the probe there.
    pub async fn probe(&self, target: &Target, at: &Address, run: &Run<'_>) -> Reached {
        match self {
            Session::Pod(s) => s.probe(target, at, run).await,
            Session::Jumpbox(s) => s.probe(target, at, run).await,
            Session::Ssh(s) => s.probe(target, at, run).await,
            Session::Unavailable(why) => Err(why.clone()).into(),
        }
    }
}

/// What a route is opened with, besides its settings.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    /// The Supervisor's client (the vSphere Namespace's pods and secrets).
    pub supervisor: &'a kube::Client,
    /// The workload API as checked, with its kubeconfig.
    pub workload: &'a WorkloadCheck,
}

/// What a session may use while it runs.
pub(crate) struct Run<'a> {
    /// Every pod created is tracked here, so the caller deletes it on every way out.
    pub tracker: &'a PodTracker,
    /// Time left for the whole probing.
    pub bound: Duration,
    /// `--keep-pods`.
    pub keep: bool,
}

/// One control-plane node to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The node's name in reports (its Machine's, else its VM's).
    pub name: String,
    /// The Kubernetes Node a pod would be pinned to (the Machine's nodeRef, else `name`).
    pub node_name: String,
    /// None: the VM has no IP yet, so no route can reach it.
    pub address: Option<Address>,
}

/// Where a node is and what its probe is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub ip: IpAddr,
    pub probe: ProbeArgs,
}

/// What reaching one node gave: the probe's document or why not, the VM's ports as the route
/// saw them ([`Session::vantage`]: the jumpbox from the Supervisor, the ssh route from this
/// machine) and (ssh routes) the host key it presented, both known even when the probe failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    pub outcome: std::result::Result<ProbeOutput, ReachError>,
    pub reach: Vec<PortReach>,
    pub host_key: Option<HostKey>,
}

impl From<std::result::Result<ProbeOutput, ReachError>> for Reached {
    fn from(outcome: std::result::Result<ProbeOutput, ReachError>) -> Reached {
        Reached {
            outcome,
            reach: Vec::new(),
            host_key: None,
        }
    }
}

/// Runs `session` on every target, at most `parallel` at once, each node's result a value (a
/// node that could not be reached is not an early return). The order is the targets'. Every
/// document is checked here, whatever the route, to come from the node it was sent to (its
/// addresses hold the target's IP, its host name is the node's: [`identity`]); one from another
/// machine is an `IdentityMismatch`, an unreached node.
pub(crate) async fn probe_all(
    session: &Session<'_>,
    targets: &[Target],
    run: &Run<'_>,
    parallel: usize,
    progress: &Progress,
) -> Vec<NodeReport> {
    let unavailable = match session {
        Session::Unavailable(why) => Some(why),
        _ => None,
    };
    let doing = session.doing(targets.len());
    let vantage = session.vantage();
    probe_each(
        doing,
        unavailable,
        vantage,
        targets,
        parallel,
        progress,
        |t, at| session.probe(t, at, run),
    )
    .await
}

/// [`probe_all`]'s fan-out, with `probe` reaching one node: `unavailable` explains every node
/// instead, when the route can reach none.
async fn probe_each<'t, F, R>(
    doing: String,
    unavailable: Option<&ReachError>,
    vantage: Option<Vantage>,
    targets: &'t [Target],
    parallel: usize,
    progress: &Progress,
    probe: F,
) -> Vec<NodeReport>
where
    F: Fn(&'t Target, &'t Address) -> R,
    R: std::future::Future<Output = Reached>,
{
    let steps = &progress.steps(doing, targets.len());
    let probe = &probe;
    futures::stream::iter(targets)
        .map(|t| async move {
            let reached = match (unavailable, &t.address) {
                (Some(why), _) => Err(why.clone()).into(),
                (None, None) => Err(ReachError::no_address()).into(),
                (None, Some(at)) => {
                    let r = probe(t, at).await;
                    Reached {
                        outcome: identity::confirm(r.outcome, at.ip, &[&t.node_name, &t.name]),
                        ..r
                    }
                }
            };
            steps.one_done();
            NodeReport {
                name: t.name.clone(),
                ip: t.address.as_ref().map(|a| a.ip),
                outcome: reached.outcome,
                reach_from: vantage.filter(|_| !reached.reach.is_empty()),
                reach: reached.reach,
                host_key: reached.host_key,
            }
        })
        .buffered(parallel.max(1))
        .collect()
        .await
}

/// What every pod this plugin creates has in common, whatever the route.
#[derive(Debug, Clone)]
pub struct PodBasics {
    /// Shared by all pods of one run (label and name suffix).
    pub run_id: String,
    /// `activeDeadlineSeconds`: the kubelet kills the pod after this, even if we are gone.
    pub deadline: Duration,
    pub image_pull_secret: Option<String>,
}

impl PodBasics {
    /// A pod named `name` in `namespace`, labelled as ours (`app` names its kind), with the
    /// parts every one of our pods has: never restarted, killed at the deadline, no service
    /// account token, no service links.
    pub fn pod(&self, name: String, namespace: &str, app: &str, spec: PodSpec) -> Pod {
        let mut spec = spec
            .restart_policy("Never")
            .active_deadline_seconds(self.deadline.as_secs().max(1) as i64)
            // A kill (our delete, the deadline) is a SIGTERM first, so the probe removes its
            // temp folder on the node; 2 s is also the least the kubelet gives at a deadline.
            .termination_grace_period_seconds(2)
            .automount_service_account_token(false)
            .enable_service_links(false);
        if let Some(secret) = &self.image_pull_secret {
            spec = spec.image_pull_secret(secret);
        }
        Pod::new(name)
            .namespace(namespace)
            .labels([
                (labels::MANAGED_BY, labels::MANAGED_BY_VALUE),
                (labels::NAME, app),
                (labels::RUN_ID, self.run_id.as_str()),
            ])
            .spec(spec)
    }
}

/// `<prefix><node>-<run>` when that is a valid DNS label (at most 63 characters of
/// `[a-z0-9-]`), as it is for every usual node name. Otherwise the node's name is cut to fit
/// (other characters, such as a subdomain's dots, become `-`) and a hash of the *whole* name
/// is added: `<prefix><cut node>-<hash>-<run>`. Without it, nodes whose names differ only past
/// the cut (a long cluster name) would all get one pod name: one create would win and the
/// others fail with 409. The hash is FNV-1a, stable across Rust versions and platforms (std's
/// hasher is not), so a name reads the same in every run's pods and in `--dry-run`.
pub(crate) fn pod_name(prefix: &str, node: &str, run_id: &str) -> String {
    let plain = format!("{prefix}{node}-{run_id}");
    if crate::names::validate_dns1123_label(&plain).is_ok() {
        return plain;
    }
    let hash = format!("{:08x}", fnv1a32(node.as_bytes()));
    let room = 63usize.saturating_sub(prefix.len() + 1 + hash.len() + 1 + run_id.len());
    let cut: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .take(room)
        .collect();
    format!("{prefix}{}-{hash}-{run_id}", cut.trim_end_matches('-'))
}

/// 32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193): small, well known, stable.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h: u32, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Small requests (the probe waits on the network, not the CPU) and a modest limit.
pub(crate) fn small_resources(memory_limit: &str) -> ResourceRequirements {
    let quantities = |cpu: &str, mem: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(mem.into())),
        ])
    };
    ResourceRequirements {
        requests: Some(quantities("10m", "32Mi")),
        limits: Some(quantities("500m", memory_limit)),
        ..Default::default()
    }
}

/// A short random id shared by all pods of one run (label and name suffix).
pub(crate) fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = h.finish();
    (0..5)
        .map(|_| {
            let c = alphabet[(n % alphabet.len() as u64) as usize] as char;
            n /= alphabet.len() as u64;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver over `targets` with `probe` reaching each, `parallel` at once.
    async fn drive<'t, F, R>(targets: &'t [Target], parallel: usize, probe: F) -> Vec<NodeReport>
    where
        F: Fn(&'t Target, &'t Address) -> R,
        R: std::future::Future<Output = Reached>,
    {
        let doing = "probing".to_string();
        probe_each(
            doing,
            None,
            None,
            targets,
            parallel,
            &Progress::hidden(),
            probe,
        )
        .await
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // Test vectors of the FNV reference (draft-eastlake-fnv).
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn pod_names_that_fit_are_unchanged() {
        assert_eq!(
            pod_name("etcdnet-probe-", "tkc-prod-7xk2p-4rz8m", "k3x9q"),
            "etcdnet-probe-tkc-prod-7xk2p-4rz8m-k3x9q"
        );
        // Exactly 63 characters: still the plain form.
        let node = "n".repeat(63 - "etcdnet-probe-".len() - "-k3x9q".len());
        let name = pod_name("etcdnet-probe-", &node, "k3x9q");
        assert_eq!(name, format!("etcdnet-probe-{node}-k3x9q"));
        assert_eq!(name.len(), 63);
    }

    #[test]
    fn pod_names_stay_unique_past_the_cut() {
        // A 45-character cluster name: its nodes differ only after the 63-character cut.
        let cluster = "tkc-payments-eu-central-1-prod-blue-green-v02";
        assert_eq!(cluster.len(), 45);
        let nodes: Vec<String> = ["4rz8m", "9qtvw", "bx2lk"]
            .iter()
            .map(|s| format!("{cluster}-7xk2p-{s}"))
            .collect();
        for prefix in ["etcdnet-probe-", "etcdnet-jumpbox-"] {
            let names: Vec<String> = nodes.iter().map(|n| pod_name(prefix, n, "k3x9q")).collect();
            for n in &names {
                assert!(n.len() <= 63, "{n}");
                crate::names::validate_dns1123_label(n).unwrap();
                assert!(n.starts_with(prefix) && n.ends_with("-k3x9q"), "{n}");
            }
            let mut distinct = names.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), 3, "{names:?}");
            // Stable: the same node gives the same name in every run of the same id.
            assert_eq!(pod_name(prefix, &nodes[0], "k3x9q"), names[0]);
        }
        // Characters a label cannot hold are replaced, and the hash keeps "a.b" and "a-b" apart.
        let dotted = pod_name("etcdnet-probe-", "cp-1.example.com", "k3x9q");
        crate::names::validate_dns1123_label(&dotted).unwrap();
        assert_ne!(
            dotted,
            pod_name("etcdnet-probe-", "cp-1-example-com", "k3x9q")
        );
        // Whatever the name, never more than 63 and never an invalid label.
        for node in [
            "-",
            &"-".repeat(80),
            &"a-".repeat(60),
            "\u{e9}t\u{e9}",
            &"z".repeat(300),
        ] {
            let n = pod_name("etcdnet-jumpbox-", node, "k3x9q");
            crate::names::validate_dns1123_label(&n).unwrap_or_else(|e| panic!("{n}: {e}"));
        }
    }

    #[test]
    fn run_ids_are_short_and_label_safe() {
        let id = run_id();
        assert_eq!(id.len(), 5);
        crate::names::validate_dns1123_label(&id).unwrap();
    }

    #[tokio::test]
    async fn the_driver_never_runs_more_than_parallel_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let counting = |_, _| async {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            Err(ReachError::no_address()).into()
        };
        let targets: Vec<Target> = (0..50)
            .map(|i| Target {
                name: format!("n{i}"),
                node_name: format!("n{i}"),
                address: Some(Address {
                    ip: "198.18.0.11".parse().unwrap(),
                    probe: ProbeArgs::default(),
                }),
            })
            .collect();
        let reports = drive(&targets, 7, counting).await;
        assert_eq!(reports.len(), 50);
        assert_eq!(
            most.load(Ordering::SeqCst),
            7,
            "bounded, and the bound is used"
        );
    }

    /// Whatever the route, a document from another machine than the target is not the target's.
    #[tokio::test]
    async fn the_driver_refuses_a_document_from_another_node() {
        // Every address answers with cp1's document (one VM behind every IP).
        let all_cp1 = |_, _| async {
            let doc = std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/probe-output/healthy-node.json"
            ))
            .unwrap();
            Reached {
                outcome: Ok(crate::probe::parse::parse("cp", &doc).unwrap()),
                reach: Vec::new(),
                host_key: crate::probe::HostKey::from_openssh(
                    "ssh-ed25519",
                    "AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY",
                ),
            }
        };
        // The fixture's node: host name tkc-1-control-plane-node1, address 198.18.0.11.
        let target = |name: &str, ip: &str| Target {
            name: name.into(),
            node_name: name.into(),
            address: Some(Address {
                ip: ip.parse().unwrap(),
                probe: ProbeArgs::new(ip, Vec::<String>::new()),
            }),
        };
        let targets = [
            target("tkc-1-control-plane-node1", "198.18.0.11"),
            target("tkc-1-control-plane-node2", "198.18.0.12"),
            // The right address, another host name: two machines with one IP.
            target("tkc-1-control-plane-node3", "198.18.0.11"),
        ];
        let reports = drive(&targets, 2, all_cp1).await;
        assert!(reports[0].outcome.is_ok(), "{:?}", reports[0].outcome);
        for r in &reports[1..] {
            let e = r.outcome.as_ref().unwrap_err();
            assert_eq!(
                e.kind,
                crate::probe::ReachErrorKind::IdentityMismatch,
                "{e:?}"
            );
            assert!(
                e.message.contains(&r.name),
                "names the target: {}",
                e.message
            );
            assert!(
                e.message.contains("tkc-1-control-plane-node1"),
                "names what answered: {}",
                e.message
            );
        }
        assert!(reports[1]
            .outcome
            .as_ref()
            .unwrap_err()
            .message
            .contains("198.18.0.12"));
        // The host key of what answered is kept: it is evidence of who that was.
        assert!(reports.iter().all(|r| r.host_key.is_some()));
    }

    #[tokio::test]
    async fn the_driver_keeps_order_and_reports_nodes_without_an_address() {
        let echo = |t: &Target, _| {
            let name = t.name.clone();
            async move {
                Err(ReachError {
                    kind: crate::probe::ReachErrorKind::Other,
                    message: name,
                })
                .into()
            }
        };
        let target = |name: &str, ip: Option<&str>| Target {
            name: name.into(),
            node_name: name.into(),
            address: ip.map(|ip| Address {
                ip: ip.parse().unwrap(),
                probe: ProbeArgs::new(ip, Vec::<String>::new()),
            }),
        };
        let targets: Vec<Target> = (0..40)
            .map(|i| target(&format!("n{i}"), (i != 7).then_some("198.18.0.11")))
            .collect();
        let reports = drive(&targets, 4, echo).await;
        assert_eq!(reports.len(), 40);
        for (i, r) in reports.iter().enumerate() {
            assert_eq!(r.name, format!("n{i}"));
            let e = r.outcome.as_ref().unwrap_err();
            if i == 7 {
                assert_eq!(e.kind, crate::probe::ReachErrorKind::NoAddress);
                assert_eq!(r.ip, None);
            } else {
                assert_eq!(e.message, r.name, "the session saw its own target");
            }
        }
    }

    /// A route that can reach no node says why for every node, one without an address too.
    #[tokio::test]
    async fn an_unavailable_route_explains_every_node() {
        let why = ReachError {
            kind: crate::probe::ReachErrorKind::Unreachable,
            message: "the workload API does not answer".into(),
        };
        let targets: Vec<Target> = (0..3)
            .map(|i| Target {
                name: format!("n{i}"),
                node_name: format!("n{i}"),
                address: (i != 1).then(|| Address {
                    ip: "198.18.0.11".parse().unwrap(),
                    probe: ProbeArgs::default(),
                }),
            })
            .collect();
        let tracker = PodTracker::default();
        let run = Run {
            tracker: &tracker,
            bound: Duration::from_secs(1),
            keep: false,
        };
        let session = Session::Unavailable(why.clone());
        assert_eq!(session.doing(3), "3 control-plane nodes cannot be reached");
        let reports = probe_all(&session, &targets, &run, 2, &Progress::hidden()).await;
        assert_eq!(reports.len(), 3);
        for r in &reports {
            assert_eq!(r.outcome.as_ref().unwrap_err(), &why, "{}", r.name);
        }
    }
}
