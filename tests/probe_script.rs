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
        .args(["-c", cmd])
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
        let files = [
            ("bin/crictl", CRICTL),
            ("bin/systemctl", SYSTEMCTL),
            ("nocrictl/systemctl", SYSTEMCTL),
        ];
        for (name, text) in files.into_iter().chain([("etcd.yaml", MANIFEST)]) {
            std::fs::write(d.join(name), text).unwrap();
        }
        sh("chmod +x bin/crictl bin/systemctl nocrictl/systemctl", d);
        node
    }

    /// ca.crt, the node's server/peer/healthcheck certs (for 198.18.0.1 and 127.0.0.1), and for
    /// the network tests: peers.crt (198.18.0.2-9), expired.crt, wrongsan.crt, other-ca.crt.
    fn with_pki(self) -> Node {
        if which("openssl").is_none() {
            return self;
        }
        sh(
            include_str!("fixtures/probe-output/harness/pki.sh"),
            &self.path("pki/etcd"),
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
            let links = r#"mkdir "$0" && cd "$0" && b=$(command -v busybox)
              for a in busybox $($b --list); do ln -s "$b" "$a"; done
              for t in curl openssl; do p=$(command -v $t) && ln -sf "$p" $t || true; done"#;
            sh(
                links.replace("$0", &bb.display().to_string()).as_str(),
                self.dir.path(),
            );
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{what}: {:?}, stderr: {stderr}",
        out.status
    );
    let one_document = stdout.lines().count() == 1 && stdout.starts_with("{\"schemaVersion\":1,");
    assert!(one_document, "{what}: stdout is one JSON line: {stdout}");
    let left: Vec<_> = std::fs::read_dir(node.path("tmp")).unwrap().collect();
    assert!(left.is_empty(), "{what}: temp files left: {left:?}");
    let out = parse("cp1", &out.stdout).unwrap_or_else(|e| panic!("{what}: {e}\n{stdout}"));
    Run { out, wall }
}

fn loopback_args() -> ProbeArgs {
    // Loopback addresses nothing listens on: every path is Refused at once. Self and a
    // duplicate among the peers are dropped by the probe.
    let peers = ["127.77.0.2", "127.77.0.3", "127.77.0.2", "127.77.0.1"];
    ProbeArgs {
        connect_timeout_s: 2,
        tls_timeout_s: 1,
        ..ProbeArgs::new("127.77.0.1", peers)
    }
}

/// One line per fact, to compare with an expected text (diffs read better than asserts).
fn facts(out: &ProbeOutput) -> String {
    let mut lines = vec![format!("etcd {:?} {:?}", out.etcd.query, out.etcd.error)];
    for c in &out.etcd.containers {
        lines.push(format!(
            "container {} {} {:?} {:?}",
            c.id, c.state, c.attempt, c.created_at
        ));
    }
    if let Some(l) = &out.etcd.logs {
        lines.push(format!(
            "logs {} lines={} truncated={}",
            l.container_id, l.lines, l.truncated
        ));
    }
    for p in &out.paths {
        let detail = p
            .tls_detail
            .as_deref()
            .or(p.tcp_detail.as_deref())
            .unwrap_or("");
        let detail: String = detail.chars().take(60).collect();
        lines.push(format!(
            "path {}:{} own={} {:?} {:?} {detail}",
            p.target, p.port, p.own, p.tcp, p.tls
        ));
    }
    let k = &out.kubelet;
    lines.push(format!(
        "kubelet {:?} {:?} {:?}",
        k.active, k.since, k.error
    ));
    for c in &out.certs {
        lines.push(format!(
            "cert {} sans={:?} node_ip={:?} {:?}",
            c.file, c.sans, c.has_node_ip, c.error
        ));
    }
    if let Some(m) = &out.manifest {
        lines.push(format!(
            "manifest {:?} {:?} {:?}",
            m.name, m.listen_client_urls, m.initial_cluster
        ));
    }
    lines.extend(
        out.errors
            .iter()
            .map(|e| format!("error {}: {}", e.step, e.message)),
    );
    lines.join("\n")
}

const LOOPBACK_FACTS: &str = r#"etcd Ok None
container 2222bbbb CONTAINER_RUNNING Some(2) Some("1700000500000000000")
container 1111aaaa CONTAINER_EXITED Some(1) Some("1700000000000000000")
logs 2222bbbb lines=42 truncated=false
path 127.77.0.1:2379 own=true Refused NotTried connect to 127.77.0.1 port 2379 failed: Connection refused
path 127.77.0.1:2380 own=true Refused NotTried connect to 127.77.0.1 port 2380 failed: Connection refused
path 127.77.0.2:2379 own=false Refused NotTried connect to 127.77.0.2 port 2379 failed: Connection refused
path 127.77.0.2:2380 own=false Refused NotTried connect to 127.77.0.2 port 2380 failed: Connection refused
path 127.77.0.3:2379 own=false Refused NotTried connect to 127.77.0.3 port 2379 failed: Connection refused
path 127.77.0.3:2380 own=false Refused NotTried connect to 127.77.0.3 port 2380 failed: Connection refused
kubelet Some("active") Some("Tue 2026-03-03 09:12:44 UTC") None
cert ca.crt sans=[] node_ip=None None
cert server.crt sans=["localhost", "198.18.0.1", "127.0.0.1"] node_ip=Some(false) None
cert peer.crt sans=["localhost", "198.18.0.1", "127.0.0.1"] node_ip=Some(false) None
cert healthcheck-client.crt sans=["hc"] node_ip=None None
manifest Some("cp1") ["https://127.0.0.1:2379", "https://198.18.0.1:2379"] Some("cp1=https://198.18.0.1:2380,cp2=https://198.18.0.2:2380")"#;

#[test]
fn probe_contract_under_every_shell() {
    let node = Node::new().with_pki();
    if which("openssl").is_none() {
        return skip("openssl not installed: the probe's certificate checks are not run");
    }
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        // crictl: only containers named exactly "etcd", newest first; the log of the newest.
        assert_eq!(facts(&out), LOOPBACK_FACTS, "{what}");
        assert_eq!(out.node_ip, "127.77.0.1");
        assert!(
            out.hostname.is_some() && out.clock_ms.unwrap() > 1_600_000_000_000,
            "{what}"
        );
        let logs = out.etcd.logs.as_ref().unwrap();
        assert!(
            logs.text.contains("i/o timeout") && !logs.text.contains("WARN[0000]"),
            "{what}"
        );
        let nasty = logs.text.lines().find(|l| l.starts_with("quote")).unwrap();
        let want = "quote\" back\\ tab\t cr\r esc\u{1b} nul bad\u{fffd}\u{fffd} ok-utf8 é €";
        assert_eq!(nasty, want, "{what}: escaped and read back byte for byte");
        let peer = &out.certs[2];
        let left = peer.expires_in_s.unwrap();
        assert!(
            (364 * 86400..=365 * 86400).contains(&left),
            "{what}: {left}"
        );
        assert_eq!(peer.not_yet_valid, Some(false));
        assert!(peer.not_after.as_deref().unwrap().ends_with('Z'));
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
        let script = script::PROBE_SH.as_bytes();
        child.stdin.take().unwrap().write_all(script).unwrap();
        let out = child.wait_with_output().unwrap();
        let what = format!("{} -s", shell.join(" "));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{what}: {stderr}"
        );
        let parsed = parse("cp1", &out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
        let counts = (parsed.paths.len(), parsed.etcd.containers.len());
        assert_eq!(counts, (6, 2), "{what}");
    }
}

#[test]
fn missing_tools_and_files_are_reported_in_the_document() {
    let node = Node::new(); // no pki at all
    std::fs::remove_file(node.path("etcd.yaml")).unwrap();
    let pki = node.path("pki/etcd").display().to_string();
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "nocrictl"), &node, &what);
        let f = facts(&out).replace(&pki, "PKI");
        assert!(
            f.starts_with("etcd CrictlMissing Some(\"crictl not found in PATH\")\npath"),
            "{what}: {f}"
        );
        assert!(
            f.contains("cert peer.crt sans=[] node_ip=None Some(\"not found: PKI/peer.crt\")"),
            "{what}: {f}"
        );
        let tail = "error paths: no readable ca.crt/peer.crt/peer.key in PKI: TCP checked, TLS not tried\n\
                    error manifest: not readable: ";
        assert!(f.contains(tail) && !f.contains("\nmanifest"), "{what}: {f}");
        assert!(out.paths.iter().all(|p| p.tls == TlsOutcome::NotTried));
        // crictl there but failing: its own message.
        let mut cmd = node.command(&argv, &shell, "bin");
        cmd.env("FAKE_CRICTL_FAIL", "1");
        let Run { out, .. } = check(cmd, &node, &what);
        let want = "validate service connection: dial unix /run/containerd/containerd.sock: connect: no such file or directory";
        assert_eq!(
            (out.etcd.query, out.etcd.error.as_deref()),
            (RuntimeQuery::RuntimeError, Some(want))
        );
    }
}

#[test]
fn bad_arguments_are_reported_not_fatal_and_logs_are_capped() {
    let node = Node::new().with_pki();
    let bad = [
        "--connect-timeout",
        "soon",
        "--peer",
        "x;rm -rf /",
        "--bogus",
        "--log-lines",
    ];
    for shell in shells() {
        let what = shell.join(" ");
        let opts = ProbeArgs {
            log_bytes: 300,
            ..loopback_args()
        };
        let mut argv = script::argv_with_shell(&shell, &opts);
        argv.extend(bad.map(String::from));
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let f = facts(&out);
        let errors = "error args: ignored --connect-timeout 'soon': not a whole number\n\
                      error args: ignored --peer 'x;rm -rf /': not an address\n\
                      error args: unknown argument: --bogus\n\
                      error args: --log-lines needs a value";
        assert!(f.ends_with(errors), "{what}: {f}");
        assert_eq!(out.paths.len(), 6, "{what}: the good arguments still count");
        let logs = out.etcd.logs.unwrap();
        assert!(
            logs.truncated && logs.text.len() <= 300,
            "{what}: {} bytes",
            logs.text.len()
        );
        let newest = "line 39 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
        assert!(
            logs.text.ends_with(newest) && logs.text.starts_with("line "),
            "{what}: whole newest lines"
        );
    }
}

// --- in private network and PID namespaces ----------------------------------------------------

/// Sets up the namespace, then runs the probe (the argv after the dir) with the test's own
/// stdout and stderr. Everything in the PID namespace dies with it (--kill-child, PID 1 exits).
const WRAPPER: &str = include_str!("fixtures/probe-output/harness/netns-wrapper.sh");

const UNSHARE: [&str; 5] = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"];

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
            .args(UNSHARE)
            .arg("true")
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
        let rules = format!("table inet probetest {{\n{}\n}}\n", self.rules);
        for (name, text) in [
            (
                "www/version",
                r#"{"etcdserver":"3.5.12","etcdcluster":"3.5.0"}"#.to_string(),
            ),
            ("www/health", r#"{"health":"true","reason":""}"#.to_string()),
            ("wrapper.sh", WRAPPER.to_string()),
            ("servers", self.servers.join("\n") + "\n"),
            ("addrs", self.addrs.join("\n") + "\n"),
            ("rules.nft", rules),
            ("extra.sh", self.extra.clone()),
        ] {
            std::fs::write(d.join(name), text).unwrap();
        }
        let mut argv: Vec<String> = ["unshare"]
            .iter()
            .chain(&UNSHARE)
            .chain(&["--", "sh"])
            .map(|s| s.to_string())
            .collect();
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
    // Per peer: TCP, TLS, HTTP status, and what the detail says (curl's words).
    let want = "198.18.0.1 Connected Completed Some(200) \n\
                198.18.0.2 Refused NotTried None Connection refused\n\
                198.18.0.3 Connected Stalled None no TLS handshake within 3 s\n\
                198.18.0.4 Connected Rejected None certificate has expired\n\
                198.18.0.5 Connected Rejected None alert unknown ca\n\
                198.18.0.6 Connected Completed Some(200) \n\
                198.18.0.7 Connected Rejected None no alternative certificate subject name matches\n\
                198.18.0.8 Connected Rejected None unable to get local issuer certificate\n\
                198.18.0.9 NoRoute NotTried None No route to host\n\
                198.18.0.20 Timeout NotTried None no TCP answer within 2 s";
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, wall } = lab.run(&node, &shell, &opts);
        assert_eq!(out.paths.len(), 20, "{what}");
        for line in want.lines() {
            let (head, detail) = line.split_at(line.match_indices(' ').nth(3).unwrap().0 + 1);
            for p in out
                .paths
                .iter()
                .filter(|p| head.starts_with(&format!("{} ", p.target)))
            {
                let got_detail = p
                    .tls_detail
                    .as_deref()
                    .or(p.tcp_detail.as_deref())
                    .unwrap_or("");
                let got = format!("{} {:?} {:?} {:?} ", p.target, p.tcp, p.tls, p.http_status);
                assert!(
                    got == head && got_detail.contains(detail),
                    "{what}: {got}{got_detail}"
                );
                let ms = if p.tcp == TcpOutcome::Connected {
                    0..1000
                } else {
                    0..3000
                };
                assert!(
                    ms.contains(&p.tcp_ms.unwrap()),
                    "{what}: {got}{:?}",
                    p.tcp_ms
                );
            }
        }
        let stalled = out.paths.iter().filter(|p| p.tls == TlsOutcome::Stalled);
        assert!(stalled.clone().all(|p| p.tls_ms.unwrap() >= 2000), "{what}");
        let timeouts = out.paths.iter().filter(|p| p.tcp == TcpOutcome::Timeout);
        assert!(
            timeouts.clone().all(|p| p.tcp_ms.unwrap() >= 1900),
            "{what}"
        );
        let health = (out.health.outcome, out.health.detail.as_deref());
        assert_eq!(
            health,
            (
                HealthOutcome::Healthy,
                Some("https://127.0.0.1:2379/health")
            ),
            "{what}"
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
        let timeouts = out.paths.iter().filter(|p| p.tcp == TcpOutcome::Timeout);
        assert_eq!(timeouts.count(), 12, "{what}: {:?}", out.paths);
        let probe_ms = out.duration_ms.unwrap();
        let in_time = wall < bound && probe_ms < bound.as_millis() as u64;
        assert!(
            in_time,
            "{what}: 6 unreachable peers took {wall:?} (probe {probe_ms} ms), more than {bound:?}"
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
    let Run { out, .. } = lab.run(&node, &["sh"], &opts);
    let paths: Vec<_> = (out.paths.iter())
        .map(|p| {
            format!(
                "{}:{} {:?} {:?} {:?}",
                p.target, p.port, p.tcp, p.tls, p.http_status
            )
        })
        .collect();
    let want = [
        "198.18.0.1:2379 Connected Completed Some(200)",
        "198.18.0.1:2380 Connected Completed Some(200)",
        "198.18.0.2:2379 Refused NotTried None",
        "198.18.0.2:2380 Refused NotTried None",
    ];
    assert_eq!(paths, want);
    let health = (
        out.health.outcome,
        out.health.detail.as_deref(),
        out.health.body.as_deref(),
    );
    let want = (
        HealthOutcome::Healthy,
        Some("http://127.0.0.1:2381/health"),
        Some("{\"health\":\"true\"}"),
    );
    assert_eq!(health, want, "{:?}", out.health);
}
