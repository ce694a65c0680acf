//! The real embedded probe (`etcdnet::probe::script`) run under `sh`, `dash` and `busybox sh`
//! (each one present; a missing one is skipped loudly), in a controlled node: fake `crictl` and
//! `systemctl` first on PATH, certificates made with openssl in a temp pki dir (the script's
//! `ETCDNET_PKI_DIR` / `ETCDNET_MANIFEST` test hooks), its output read back through `parse`.
//!
//! The network outcomes run in private network + PID namespaces (root, `unshare`, `ip`, `nft`,
//! `openssl s_server`; skipped loudly without them): nothing listening (Refused), nftables drop
//! (Timeout), ICMP reject (NoRoute), large packets dropped (TLS Stalled), bad certificates
//! (Rejected), good ones (Completed), and a real etcd when Debian's etcd-server is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdnet::probe::output::{HealthOutcome, ProbeOutput, RuntimeQuery, TcpOutcome, TlsOutcome};
use etcdnet::probe::parse::parse;
use etcdnet::probe::script::{self, ProbeArgs, ENV_MANIFEST, ENV_PKI_DIR};

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file());
    found
}

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

fn sh(cmd: &str, dir: &Path) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One fake control-plane node on disk.
struct Node {
    dir: tempfile::TempDir,
}

const CRICTL: &str = include_str!("fixtures/probe-output/harness/crictl");

const SYSTEMCTL: &str = include_str!("fixtures/probe-output/harness/systemctl");

const MANIFEST: &str = include_str!("fixtures/probe-output/harness/etcd.yaml");

impl Node {
    fn new() -> Node {
        let node = Node {
            dir: tempfile::tempdir().unwrap(),
        };
        let d = node.dir.path();
        for sub in ["bin", "tmp", "pki/etcd", "nocrictl"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        for (name, text) in [
            ("bin/crictl", CRICTL),
            ("bin/systemctl", SYSTEMCTL),
            ("nocrictl/systemctl", SYSTEMCTL),
        ] {
            std::fs::write(d.join(name), text).unwrap();
            sh(&format!("chmod +x {name}"), d);
        }
        std::fs::write(d.join("etcd.yaml"), MANIFEST).unwrap();
        node
    }

    /// ca.crt, the node's server/peer/healthcheck certs (for 198.18.0.1 and 127.0.0.1), and for
    /// the network tests: peers.crt (198.18.0.2-9), expired.crt, wrongsan.crt, other-ca.crt.
    fn with_pki(self) -> Node {
        if which("openssl").is_none() {
            return self;
        }
        let script = include_str!("fixtures/probe-output/harness/pki.sh");
        let out = Command::new("sh")
            .args(["-c", script])
            .current_dir(self.dir.path().join("pki/etcd"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pki: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// PATH for a shell: the shims first; for busybox, busybox's own tools (plus curl and
    /// openssl) instead of the system's, as on a minimal node.
    fn search_path(&self, shell: &[&str], bin: &str) -> String {
        let shims = self.path(bin).display().to_string();
        if shell[0] != "busybox" {
            return format!("{shims}:{}", std::env::var("PATH").unwrap_or_default());
        }
        let bb = self.path("busybox-bin");
        if !bb.exists() {
            std::fs::create_dir_all(&bb).unwrap();
            let busybox = which("busybox").unwrap();
            let list = Command::new(&busybox)
                .arg("--list")
                .output()
                .unwrap()
                .stdout;
            for applet in String::from_utf8_lossy(&list)
                .split_whitespace()
                .chain(["busybox"])
            {
                let _ = std::os::unix::fs::symlink(&busybox, bb.join(applet));
            }
            for tool in ["curl", "openssl"] {
                if let Some(p) = which(tool) {
                    let _ = std::fs::remove_file(bb.join(tool));
                    std::os::unix::fs::symlink(p, bb.join(tool)).unwrap();
                }
            }
        }
        format!("{shims}:{}", bb.display())
    }

    fn command(&self, argv: &[String], shell: &[&str], bin: &str) -> Command {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", self.search_path(shell, bin))
            .env("TMPDIR", self.path("tmp"))
            .env(ENV_PKI_DIR, self.path("pki/etcd"))
            .env(ENV_MANIFEST, self.path("etcd.yaml"))
            .stdin(Stdio::null());
        cmd
    }
}

/// The shells present here, each a prefix of the argv (`sh` is dash on Debian, bash elsewhere).
fn shells() -> Vec<Vec<&'static str>> {
    let mut found = vec![vec!["sh"]];
    let candidates = [
        ("bash", vec!["bash"]),
        ("dash", vec!["dash"]),
        ("busybox", vec!["busybox", "sh"]),
    ];
    for (tool, argv) in candidates {
        if which(tool).is_some() {
            found.push(argv);
        } else {
            skip(&format!(
                "{tool} not installed: the probe is not run under it (apt-get install {tool})"
            ));
        }
    }
    found
}

struct Run {
    out: ProbeOutput,
    wall: Duration,
}

/// Run, then check the contract: exit 0, one JSON line on stdout, nothing on stderr, no temp
/// files left behind.
fn check(mut cmd: Command, node: &Node, what: &str) -> Run {
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{what}: exit {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{what}: stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().count(),
        1,
        "{what}: stdout is one line: {stdout}"
    );
    assert!(
        stdout.starts_with("{\"schemaVersion\":1,"),
        "{what}: {stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(node.path("tmp")).unwrap().collect();
    assert!(left.is_empty(), "{what}: temp files left: {left:?}");
    let out = parse("cp1", &out.stdout).unwrap_or_else(|e| panic!("{what}: {e}\n{stdout}"));
    Run { out, wall }
}

fn loopback_args() -> ProbeArgs {
    // Loopback addresses nothing listens on: every path is Refused at once.
    ProbeArgs {
        connect_timeout_s: 2,
        tls_timeout_s: 1,
        ..ProbeArgs::new(
            "127.77.0.1",
            ["127.77.0.2", "127.77.0.3", "127.77.0.2", "127.77.0.1"],
        )
    }
}

#[test]
fn probe_contract_under_every_shell() {
    let node = Node::new().with_pki();
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        assert_eq!(out.node_ip, "127.77.0.1");
        assert!(
            out.hostname.is_some() && out.clock_ms.unwrap() > 1_600_000_000_000,
            "{what}"
        );
        // crictl: only containers named exactly "etcd", newest first; the log of the newest.
        assert_eq!(out.etcd.query, RuntimeQuery::Ok, "{what}");
        let ids: Vec<_> = out
            .etcd
            .containers
            .iter()
            .map(|c| (c.id.as_str(), c.attempt))
            .collect();
        assert_eq!(
            ids,
            [("2222bbbb", Some(2)), ("1111aaaa", Some(1))],
            "{what}"
        );
        assert!(out.etcd.containers[0].is_running());
        assert_eq!(
            out.etcd.containers[0].created_at.as_deref(),
            Some("1700000500000000000")
        );
        let logs = out.etcd.logs.as_ref().unwrap();
        assert_eq!(
            (logs.container_id.as_str(), logs.lines, logs.truncated),
            ("2222bbbb", 42, false),
            "{what}"
        );
        assert!(
            logs.text.contains("i/o timeout") && !logs.text.contains("WARN[0000]"),
            "{what}"
        );
        let nasty = logs.text.lines().find(|l| l.starts_with("quote")).unwrap();
        assert_eq!(
            nasty, "quote\" back\\ tab\t cr\r esc\u{1b} nul bad\u{fffd}\u{fffd} ok-utf8 é €",
            "{what}: escaped and read back byte for byte"
        );
        // Duplicates and self among the peers are dropped: own 2379/2380, then 127.77.0.2, .3.
        let paths: Vec<_> = out
            .paths
            .iter()
            .map(|p| (p.target.as_str(), p.port, p.own, p.tcp, p.tls))
            .collect();
        let refused = |ip, port, own| (ip, port, own, TcpOutcome::Refused, TlsOutcome::NotTried);
        assert_eq!(
            paths,
            [
                refused("127.77.0.1", 2379, true),
                refused("127.77.0.1", 2380, true),
                refused("127.77.0.2", 2379, false),
                refused("127.77.0.2", 2380, false),
                refused("127.77.0.3", 2379, false),
                refused("127.77.0.3", 2380, false),
            ],
            "{what}"
        );
        assert!(
            out.paths[0]
                .tcp_detail
                .as_deref()
                .unwrap()
                .contains("Connection refused"),
            "{what}"
        );
        assert_eq!(out.kubelet.active.as_deref(), Some("active"));
        assert_eq!(
            out.kubelet.since.as_deref(),
            Some("Tue 2026-03-03 09:12:44 UTC")
        );
        let m = out.manifest.as_ref().unwrap();
        assert_eq!(m.name.as_deref(), Some("cp1"));
        assert_eq!(
            m.listen_client_urls,
            ["https://127.0.0.1:2379", "https://198.18.0.1:2379"],
            "{what}"
        );
        if which("openssl").is_some() {
            let files: Vec<_> = out.certs.iter().map(|c| c.file.as_str()).collect();
            assert_eq!(
                files,
                ["ca.crt", "server.crt", "peer.crt", "healthcheck-client.crt"],
                "{what}"
            );
            let peer = &out.certs[2];
            assert_eq!(
                peer.has_node_ip,
                Some(false),
                "{what}: 127.77.0.1 is not in its SANs"
            );
            assert_eq!(
                peer.sans,
                ["localhost", "198.18.0.1", "127.0.0.1"],
                "{what}"
            );
            let left = peer.expires_in_s.unwrap();
            assert!(
                (364 * 86400..=365 * 86400).contains(&left),
                "{what}: {left}"
            );
            assert_eq!(peer.not_yet_valid, Some(false));
            assert!(peer.not_after.as_deref().unwrap().ends_with('Z'));
            assert!(
                out.certs.iter().all(|c| c.error.is_none()),
                "{what}: {:?}",
                out.certs
            );
        } else {
            skip("openssl not installed: certificates not checked");
        }
        assert!(out.errors.is_empty(), "{what}: {:?}", out.errors);
    }
}

#[test]
fn script_on_stdin_as_over_ssh() {
    use std::io::Write;
    let node = Node::new().with_pki();
    for shell in shells() {
        let mut argv = script::stdin_argv(&loopback_args());
        argv.splice(0..1, shell.iter().map(|s| s.to_string()));
        let mut cmd = node.command(&argv, &shell, "bin");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script::PROBE_SH.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let what = format!("{} -s", shell.join(" "));
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let parsed = parse("cp1", &out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            (parsed.paths.len(), parsed.etcd.containers.len()),
            (6, 2),
            "{what}"
        );
    }
}

#[test]
fn missing_tools_and_files_are_reported_in_the_document() {
    let node = Node::new(); // no pki at all
    std::fs::remove_file(node.path("etcd.yaml")).unwrap();
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "nocrictl"), &node, &what);
        assert_eq!(
            (out.etcd.query, out.etcd.logs.is_none()),
            (RuntimeQuery::CrictlMissing, true),
            "{what}"
        );
        assert!(out.manifest.is_none());
        assert!(
            out.certs
                .iter()
                .all(|c| c.error.as_deref().unwrap().starts_with("not found: ")),
            "{what}"
        );
        assert!(out.paths.iter().all(|p| p.tls == TlsOutcome::NotTried));
        let steps: Vec<_> = out.errors.iter().map(|e| e.step.as_str()).collect();
        assert_eq!(steps, ["paths", "manifest"], "{what}: {:?}", out.errors);
        // crictl there but failing: its own message.
        let mut cmd = node.command(&argv, &shell, "bin");
        cmd.env("FAKE_CRICTL_FAIL", "1");
        let Run { out, .. } = check(cmd, &node, &what);
        assert_eq!(out.etcd.query, RuntimeQuery::RuntimeError);
        assert!(
            out.etcd
                .error
                .unwrap()
                .starts_with("validate service connection: dial unix"),
            "{what}"
        );
    }
}

#[test]
fn bad_arguments_are_reported_not_fatal_and_logs_are_capped() {
    let node = Node::new().with_pki();
    for shell in shells() {
        let what = shell.join(" ");
        let mut argv = script::argv_with_shell(
            &shell,
            &ProbeArgs {
                log_bytes: 300,
                ..loopback_args()
            },
        );
        argv.extend(
            [
                "--connect-timeout",
                "soon",
                "--peer",
                "x;rm -rf /",
                "--bogus",
                "--log-lines",
            ]
            .map(String::from),
        );
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let messages: Vec<_> = out
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.step, e.message))
            .collect();
        assert_eq!(
            messages,
            [
                "args: ignored --connect-timeout 'soon': not a whole number",
                "args: ignored --peer 'x;rm -rf /': not an address",
                "args: unknown argument: --bogus",
                "args: --log-lines needs a value",
            ],
            "{what}"
        );
        assert_eq!(out.paths.len(), 6, "{what}: the good arguments still count");
        let logs = out.etcd.logs.unwrap();
        assert!(
            logs.truncated && logs.text.len() <= 300,
            "{what}: {} bytes",
            logs.text.len()
        );
        assert!(
            logs.text
                .ends_with("line 39 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"),
            "{what}: newest kept"
        );
        assert!(logs.text.starts_with("line "), "{what}: whole lines only");
    }
}

// --- in private network and PID namespaces ----------------------------------------------------

/// Sets up the namespace, then runs the probe (the argv after the dir) with the test's own
/// stdout and stderr. Everything in the PID namespace dies with it (--kill-child, PID 1 exits).
const WRAPPER: &str = include_str!("fixtures/probe-output/harness/netns-wrapper.sh");

struct Lab {
    servers: Vec<String>,
    addrs: Vec<String>,
    rules: String,
    extra: String,
}

impl Lab {
    /// None (and a loud skip) where namespaces or the tools are missing.
    fn available(what: &str) -> Option<()> {
        for tool in ["unshare", "ip", "ss", "nft", "openssl", "curl"] {
            if which(tool).is_none() {
                skip(&format!("{what}: {tool} not installed"));
                return None;
            }
        }
        let ok = Command::new(which("unshare").unwrap())
            .args([
                "--net",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "true",
            ])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip(&format!(
                "{what}: cannot create network and PID namespaces (needs root)"
            ));
        }
        ok.then_some(())
    }

    fn run(&self, node: &Node, shell: &[&str], opts: &ProbeArgs) -> Run {
        let d = node.dir.path();
        std::fs::create_dir_all(d.join("www")).unwrap();
        std::fs::write(
            d.join("www/version"),
            "{\"etcdserver\":\"3.5.12\",\"etcdcluster\":\"3.5.0\"}",
        )
        .unwrap();
        std::fs::write(
            d.join("www/health"),
            "{\"health\":\"true\",\"reason\":\"\"}",
        )
        .unwrap();
        std::fs::write(d.join("wrapper.sh"), WRAPPER).unwrap();
        std::fs::write(d.join("servers"), self.servers.join("\n") + "\n").unwrap();
        std::fs::write(d.join("addrs"), self.addrs.join("\n") + "\n").unwrap();
        std::fs::write(
            d.join("rules.nft"),
            format!("table inet probetest {{\n{}\n}}\n", self.rules),
        )
        .unwrap();
        std::fs::write(d.join("extra.sh"), &self.extra).unwrap();
        let mut argv: Vec<String> = [
            "unshare",
            "--net",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--",
            "sh",
        ]
        .map(String::from)
        .to_vec();
        argv.push(d.join("wrapper.sh").display().to_string());
        argv.push(d.display().to_string());
        argv.extend(script::argv_with_shell(shell, opts));
        // The set-up runs with the system's tools, the probe with the shell's PATH.
        let mut cmd = node.command(&argv, shell, "bin");
        cmd.env("PROBE_PATH", node.search_path(shell, "bin"));
        let system = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{system}:/usr/sbin:/sbin:/usr/bin:/bin"));
        let what = format!("{} in a namespace", shell.join(" "));
        let run = check(cmd, node, &what);
        if std::env::var_os("ETCDNET_TEST_VERBOSE").is_some() {
            eprintln!(
                "{}",
                std::fs::read_to_string(d.join("wrapper.log")).unwrap_or_default()
            );
        }
        run
    }
}

fn servers(list: &[(&str, &str, &str)]) -> Vec<String> {
    list.iter()
        .flat_map(|(ip, cert, verify)| {
            [2379, 2380].map(|port| format!("{ip} {port} {cert} {verify}"))
        })
        .collect()
}

#[test]
fn every_outcome_against_real_listeners() {
    if Lab::available("network outcomes").is_none() {
        return;
    }
    let node = Node::new().with_pki();
    let lab = Lab {
        servers: [
            servers(&[
                ("198.18.0.1", "server", "ca"),      // own: Completed
                ("198.18.0.3", "peers", "-"),        // large packets dropped: Stalled
                ("198.18.0.4", "expired", "-"),      // Rejected: certificate has expired
                ("198.18.0.5", "peers", "other-ca"), // Rejected: our cert from an unknown CA
                ("198.18.0.6", "peers", "ca"),       // Completed
                ("198.18.0.7", "wrongsan", "-"),     // Rejected: not valid for this IP
                ("198.18.0.8", "stranger", "-"),     // Rejected: issuer unknown to us
            ]),
            vec!["127.0.0.1 2379 server ca".into()], // /health
        ]
        .concat(),
        addrs: (1..=9)
            .chain([20])
            .map(|i| format!("198.18.0.{i}"))
            .collect(),
        rules: "chain input { type filter hook input priority 0;
          ip daddr 198.18.0.20 tcp dport { 2379, 2380 } drop
          ip daddr 198.18.0.9 tcp dport { 2379, 2380 } reject with icmp type host-unreachable; }
        chain output { type filter hook output priority 0;
          ip saddr 198.18.0.3 tcp sport { 2379, 2380 } meta length > 300 drop; }"
            .into(),
        extra: String::new(),
    };
    let peers = [2, 3, 4, 5, 6, 7, 8, 9, 20].map(|i| format!("198.18.0.{i}"));
    let opts = ProbeArgs {
        connect_timeout_s: 2,
        tls_timeout_s: 1,
        ..ProbeArgs::new("198.18.0.1", peers)
    };
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, wall } = lab.run(&node, &shell, &opts);
        use TcpOutcome::*;
        use TlsOutcome::*;
        let want: &[(&str, TcpOutcome, TlsOutcome, &str)] = &[
            ("198.18.0.1", Connected, Completed, ""),
            ("198.18.0.2", Refused, NotTried, "Connection refused"),
            (
                "198.18.0.3",
                Connected,
                Stalled,
                "no TLS handshake within 3 s",
            ),
            ("198.18.0.4", Connected, Rejected, "certificate has expired"),
            ("198.18.0.5", Connected, Rejected, "alert unknown ca"),
            ("198.18.0.6", Connected, Completed, ""),
            (
                "198.18.0.7",
                Connected,
                Rejected,
                "no alternative certificate subject name matches",
            ),
            (
                "198.18.0.8",
                Connected,
                Rejected,
                "unable to get local issuer certificate",
            ),
            ("198.18.0.9", NoRoute, NotTried, "No route to host"),
            ("198.18.0.20", Timeout, NotTried, "no TCP answer within 2 s"),
        ];
        for (ip, tcp, tls, detail) in want {
            for p in out.paths.iter().filter(|p| p.target == *ip) {
                let got = p
                    .tls_detail
                    .clone()
                    .or(p.tcp_detail.clone())
                    .unwrap_or_default();
                assert_eq!(
                    (p.tcp, p.tls),
                    (*tcp, *tls),
                    "{what}: {ip}:{} {got}",
                    p.port
                );
                assert!(
                    got.contains(detail),
                    "{what}: {ip}:{}: {got:?} lacks {detail:?}",
                    p.port
                );
                if p.tls == Completed {
                    assert_eq!(p.http_status, Some(200), "{what}: {ip}");
                }
                if p.tcp == Connected {
                    assert!(p.tcp_ms.unwrap() < 1000, "{what}: {ip}: {:?}", p.tcp_ms);
                }
            }
        }
        assert_eq!(out.paths.len(), 20, "{what}");
        assert!(
            out.paths
                .iter()
                .filter(|p| p.tls == Stalled)
                .all(|p| p.tls_ms.unwrap() >= 2000),
            "{what}"
        );
        assert!(
            out.paths
                .iter()
                .filter(|p| p.tcp == Timeout)
                .all(|p| p.tcp_ms.unwrap() >= 1900),
            "{what}"
        );
        assert_eq!(
            out.health.outcome,
            HealthOutcome::Healthy,
            "{what}: {:?}",
            out.health
        );
        assert_eq!(
            out.health.detail.as_deref(),
            Some("https://127.0.0.1:2379/health")
        );
        // The stall bounds the run: connect + tls timeouts, plus a little.
        assert!(wall < Duration::from_secs(5), "{what}: took {wall:?}");
        eprintln!(
            "{what}: all outcomes in {wall:?} (probe {} ms)",
            out.duration_ms.unwrap()
        );
    }
}

#[test]
fn six_unreachable_peers_end_within_the_timeouts() {
    if Lab::available("timing").is_none() {
        return;
    }
    let node = Node::new().with_pki();
    let lab = Lab {
        servers: servers(&[("198.18.0.1", "server", "ca")]),
        addrs: (1..=1)
            .chain(21..=26)
            .map(|i| format!("198.18.0.{i}"))
            .collect(),
        rules: "chain input { type filter hook input priority 0;
          ip daddr 198.18.0.21-198.18.0.26 tcp dport { 2379, 2380 } drop; }"
            .into(),
        extra: String::new(),
    };
    let (connect, tls) = (2, 1);
    let peers = (21..=26).map(|i| format!("198.18.0.{i}"));
    let opts = ProbeArgs {
        connect_timeout_s: connect,
        tls_timeout_s: tls,
        ..ProbeArgs::new("198.18.0.1", peers)
    };
    let bound = Duration::from_secs(u64::from(connect + tls) + 2);
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, wall } = lab.run(&node, &shell, &opts);
        let timeouts = out
            .paths
            .iter()
            .filter(|p| p.tcp == TcpOutcome::Timeout)
            .count();
        assert_eq!(timeouts, 12, "{what}: {:?}", out.paths);
        assert!(
            wall < bound,
            "{what}: 6 unreachable peers took {wall:?}, more than {bound:?}"
        );
        let probe_ms = out.duration_ms.unwrap();
        assert!(
            probe_ms < bound.as_millis() as u64,
            "{what}: probe says {probe_ms} ms"
        );
        eprintln!("{what}: 6 unreachable peers (12 paths) in {wall:?} wall, probe {probe_ms} ms; bound {bound:?}");
    }
}

#[test]
fn real_etcd_on_its_own_node() {
    if Lab::available("real etcd").is_none() {
        return;
    }
    if which("etcd").is_none() {
        skip("real etcd: etcd not installed (apt-get install etcd-server)");
        return;
    }
    // No health check client certificate: /health is read from the metrics listener instead.
    let node = Node::new().with_pki();
    for f in ["healthcheck-client.crt", "healthcheck-client.key"] {
        std::fs::remove_file(node.path("pki/etcd").join(f)).unwrap();
    }
    let extra = include_str!("fixtures/probe-output/harness/etcd.sh");
    let lab = Lab {
        servers: vec![],
        addrs: vec!["198.18.0.1".into(), "198.18.0.2".into()],
        rules: String::new(),
        extra: extra.into(),
    };
    let opts = ProbeArgs::new("198.18.0.1", ["198.18.0.2"]);
    let shell = ["dash"];
    let shell: &[&str] = if which("dash").is_some() {
        &shell
    } else {
        &["sh"]
    };
    let Run { out, .. } = lab.run(&node, shell, &opts);
    for p in out.paths.iter().filter(|p| p.own) {
        assert_eq!(
            (p.tcp, p.tls, p.http_status),
            (TcpOutcome::Connected, TlsOutcome::Completed, Some(200)),
            "{p:?}"
        );
    }
    assert!(out
        .paths
        .iter()
        .filter(|p| !p.own)
        .all(|p| p.tcp == TcpOutcome::Refused));
    assert_eq!(
        out.health.outcome,
        HealthOutcome::Healthy,
        "{:?}",
        out.health
    );
    assert_eq!(
        out.health.detail.as_deref(),
        Some("http://127.0.0.1:2381/health")
    );
}
