//! Shared by the probe script tests: a controlled "node" (fake crictl/systemctl, openssl certs, the
//! script's test hooks), the shells to run under, and the run-and-check helper.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdnet::probe::output::ProbeOutput;
use etcdnet::probe::parse::parse;
use etcdnet::probe::script::{ProbeArgs, ENV_MANIFEST, ENV_PKI_DIR};

pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file());
    found
}

pub fn sh(cmd: &str, dir: &Path) {
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
pub struct Node {
    pub dir: tempfile::TempDir,
}

pub const CRICTL: &str = include_str!("../../fixtures/probe-output/harness/crictl");

pub const SYSTEMCTL: &str = include_str!("../../fixtures/probe-output/harness/systemctl");

pub const MANIFEST: &str = include_str!("../../fixtures/probe-output/harness/etcd.yaml");

impl Node {
    pub fn new() -> Node {
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
    pub fn with_pki(self) -> Node {
        if which("openssl").is_none() {
            return self;
        }
        sh(
            include_str!("../../fixtures/probe-output/harness/pki.sh"),
            &self.path("pki/etcd"),
        );
        self
    }

    /// Puts an executable `name` with `script` in the node's `bin` (first on its PATH).
    pub fn shim(&self, name: &str, script: &str) {
        let path = self.path(&format!("bin/{name}"));
        std::fs::write(&path, script).unwrap();
        sh(&format!("chmod +x bin/{name}"), self.dir.path());
    }

    /// A `curl` shim that notes every call that makes a 2379/2380 check (its URLs end in
    /// `/version`), one line of its arguments each in `calls` (printf: dash's echo would turn the
    /// `\n` of a `-w` format into a second line), and hands over to the real curl.
    pub fn curl_noting_checks(&self, calls: &Path) {
        let real = which("curl").expect("curl installed (apt-get install curl)");
        self.shim(
            "curl",
            &format!(
                "#!/bin/sh\ncase \"$*\" in */version*) printf '%s\\n' \"$*\" >>{c} ;; esac\nexec {real} \"$@\"\n",
                c = calls.display(),
                real = real.display()
            ),
        );
    }

    pub fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// PATH for a shell: the shims first; for busybox, busybox's own tools (plus curl and
    /// openssl) instead of the system's, as on a minimal node.
    pub fn search_path(&self, shell: &[&str], bin: &str) -> String {
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

    pub fn command(&self, argv: &[String], shell: &[&str], bin: &str) -> Command {
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

/// Every shell the probe must run under, each a prefix of the argv (`sh` is dash on Debian, bash
/// elsewhere). A missing one fails the test: a shell not tried is not a shell that works.
pub fn shells() -> Vec<Vec<&'static str>> {
    let mut found = vec![vec!["sh"]];
    let candidates = [
        ("bash", vec!["bash"]),
        ("dash", vec!["dash"]),
        ("busybox", vec!["busybox", "sh"]),
    ];
    for (tool, argv) in candidates {
        assert!(
            which(tool).is_some(),
            "{tool} not installed: the probe must be tried under it (apt-get install {tool})"
        );
        found.push(argv);
    }
    found
}

pub struct Run {
    pub out: ProbeOutput,
    pub wall: Duration,
}

/// Run, then check the contract: exit 0, one framed output on stdout, nothing on stderr, no temp
/// files left behind.
pub fn check(mut cmd: Command, node: &Node, what: &str) -> Run {
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
    // Framed sections (src/probe/frame.rs): the start line, then only headers and text lines,
    // then the end line, and nothing else.
    let framed = stdout.starts_with("etcdnet-probe 2\n")
        && stdout.ends_with('\n')
        && stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("@end "))
        && stdout.lines().skip(1).all(|l| l.starts_with(['@', '|']));
    assert!(framed, "{what}: stdout is one framed output: {stdout}");
    let left: Vec<_> = std::fs::read_dir(node.path("tmp")).unwrap().collect();
    assert!(left.is_empty(), "{what}: temp files left: {left:?}");
    let out = parse("cp1", &out.stdout).unwrap_or_else(|e| panic!("{what}: {e}\n{stdout}"));
    Run { out, wall }
}

pub fn loopback_args() -> ProbeArgs {
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
pub fn facts(out: &ProbeOutput) -> String {
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

pub const LOOPBACK_FACTS: &str = r#"etcd Ok None
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

/// What a fake etcd answers one of the probe's own questions with: curl's exit code, the `-w`
/// text ("http_code time_total"), the response headers and the body.
pub struct Answer {
    pub rc: u8,
    pub w: String,
    pub headers: String,
    pub body: Vec<u8>,
}

impl Node {
    /// A `curl` shim: `/health` answers `{"health":"true"}` (the alarm list is asked only once it
    /// has answered), requests for `/members` and `/v3/maintenance/alarm` get the given answers
    /// (written where the probe's `-D` and `-o` point, as curl would), every call's URL is noted
    /// in `urls`, and anything else goes to the real curl, or, with `others_fail`, ends as a
    /// refused connect would (no network needed: IPv6 addresses nothing routes).
    pub fn curl_answering(
        &self,
        members: Option<&Answer>,
        alarms: Option<&Answer>,
        others_fail: bool,
    ) -> PathBuf {
        let real = which("curl").expect("curl installed (apt-get install curl)");
        let dir = self.path("answers");
        std::fs::create_dir_all(&dir).unwrap();
        for (kind, a) in [("members", members), ("alarms", alarms)] {
            let Some(a) = a else { continue };
            std::fs::write(dir.join(format!("{kind}.hdr")), &a.headers).unwrap();
            std::fs::write(dir.join(format!("{kind}.body")), &a.body).unwrap();
            std::fs::write(dir.join(format!("{kind}.w")), &a.w).unwrap();
            std::fs::write(dir.join(format!("{kind}.rc")), a.rc.to_string()).unwrap();
        }
        let urls = self.path("urls");
        let other = if others_fail {
            "echo 'curl: (7) Failed to connect: Connection refused' >&2; exit 7".to_string()
        } else {
            format!("exec {} \"$@\"", real.display())
        };
        let shim = format!(
            r#"#!/bin/sh
url=
for a in "$@"; do case $a in http://* | https://*) url=$a ;; esac; done
[ -n "$url" ] && printf '%s\n' "$url" >>{urls}
case $url in
*/health)
  while [ $# -gt 0 ]; do case $1 in -o) printf '{{"health":"true"}}' >"$2" && shift ;; esac; shift; done
  printf '200 0.001'; exit 0 ;;
*/members) k=members ;;
*/v3/maintenance/alarm) k=alarms ;;
*) {other} ;;
esac
[ -e {d}/$k.rc ] || {{ echo "curl: (7) no answer set for $k" >&2; exit 7; }}
while [ $# -gt 0 ]; do case $1 in -D) h=$2 && shift ;; -o) o=$2 && shift ;; esac; shift; done
cat {d}/$k.hdr >"$h"; cat {d}/$k.body >"$o"; cat {d}/$k.w
rc=$(cat {d}/$k.rc)
[ "$rc" = 0 ] || echo "curl: ($rc) fake failure" >&2
exit "$rc"
"#,
            urls = urls.display(),
            d = dir.display(),
        );
        self.shim("curl", &shim);
        urls
    }
}
