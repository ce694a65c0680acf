//! The node probe, embedded in the binary, and the command lines that run it.
//!
//! `probe.sh` is one POSIX `sh` script (bash, dash, busybox ash). A route runs it as root on a
//! control-plane node either as `sh -c "$PROBE_SH" etcdnet-probe ARGS...` (a pod's command, an exec)
//! or as `sh -s -- ARGS...` with the script on stdin (ssh, where the remote command line is one
//! string). It prints framed raw sections ([`crate::probe::frame`]) read back by
//! [`crate::probe::parse::parse`].
//!
//! The caps exist once, here: every bound the script applies (bytes of a body, of a transcript,
//! a read's time, the metric families it keeps, the defaults of its flags) is a Rust constant in
//! [`CAPS`], written into the script as shell assignments right after its `#!` line
//! ([`PROBE_SH`]). probe.sh itself holds no cap (a test fails on a cap's literal there), and the
//! parsers read the same constants, so the script and its reader cannot drift apart. The
//! rendered script is the same on every run (nothing per run in it): the jumpbox route keeps its
//! pod across runs by the shape of its command.

use std::sync::LazyLock;
use std::time::Duration;

use crate::probe::{etcdask, firewall, metrics, parse, parse::bounds, paths};

/// probe.sh as written, without its caps.
const SOURCE: &str = include_str!("probe.sh");

/// One cap handed to the script: its shell variable and its value.
pub(crate) enum Cap {
    Num(u64),
    Text(&'static str),
}

/// Every cap the script uses, by the shell variable that holds it.
pub(crate) static CAPS: LazyLock<Vec<(&'static str, Cap)>> = LazyLock::new(|| {
    let d = ProbeArgs::default();
    let n = |v: usize| Cap::Num(v as u64);
    vec![
        // The flags' defaults (a flag the plugin always passes; the script's own use).
        ("CT", Cap::Num(d.connect_timeout_s.into())),
        ("TT", Cap::Num(d.tls_timeout_s.into())),
        ("LOG_LINES", Cap::Num(d.log_lines.into())),
        ("LOG_BYTES", Cap::Num(d.log_bytes)),
        ("PAR", Cap::Num(d.parallel.into())),
        // The path checks' watchdog: what says a connect is done (src/probe/paths.rs).
        ("CONNECTED", Cap::Text(paths::CONNECTED_PATTERN)),
        // etcd's own answers (src/probe/etcdask.rs).
        ("HEALTH_BODY", n(etcdask::HEALTH_BODY)),
        ("MEMBERS_BODY", n(etcdask::MEMBERS_BODY)),
        ("ALARMS_BODY", n(etcdask::ALARMS_BODY)),
        ("ASK_HEADERS", n(etcdask::HEADERS)),
        ("METRICS_RAW", n(etcdask::METRICS_RAW)),
        ("METRICS_KEEP", n(metrics::MAX_TEXT_BYTES)),
        ("METRICS_BEFORE_S", Cap::Num(etcdask::METRICS_BEFORE_S)),
        ("METRICS_AFTER_S", Cap::Num(etcdask::METRICS_AFTER_S)),
        ("METRICS_FAMILIES", Cap::Text(&METRICS_PATTERN)),
        // The kube-apiserver reads (src/probe/apiserver.rs).
        ("APISERVER_PS", n(bounds::MAX_APISERVER_PS)),
        ("APISERVER_LOG_LINES", n(bounds::APISERVER_LOG_LINES)),
        ("APISERVER_LOG_BYTES", n(bounds::MAX_APISERVER_LOG)),
        ("APISERVER_READYZ", n(bounds::MAX_APISERVER_READYZ)),
        ("APISERVER_CERT", n(bounds::MAX_APISERVER_CERT)),
        // One firewall read: each list of its lines sent, and what picks them
        // (src/probe/firewall/read.rs).
        ("FW_MAX", n(bounds::FIREWALL_READ)),
        ("FW_KEEP", Cap::Text(firewall::KEEP_PATTERN)),
        ("FW_ACCEPT", Cap::Text(firewall::ACCEPT_PATTERN)),
        // The node's own raw sections (src/probe/parse/raw.rs).
        ("STDERR_BYTES", n(crate::probe::STDERR_BYTES)),
        ("IPS_BYTES", n(parse::raw::IPS_BYTES)),
        ("CRICTL_PS_BYTES", n(parse::raw::CRICTL_PS_BYTES)),
        ("MANIFEST_BYTES", n(parse::raw::MANIFEST_BYTES)),
        ("CERTS_BYTES", n(parse::raw::CERTS_BYTES)),
    ]
});

/// The metric families the script keeps, as one `grep -E` alternation.
static METRICS_PATTERN: LazyLock<String> = LazyLock::new(|| metrics::FAMILIES.join("|"));

/// The probe script itself: probe.sh with its caps set after the `#!` line.
pub static PROBE_SH: LazyLock<String> = LazyLock::new(|| render(SOURCE));

fn render(source: &str) -> String {
    let (shebang, rest) = source.split_once('\n').unwrap_or((source, ""));
    let mut out = format!("{shebang}\n# The caps, set by the plugin (src/probe/script.rs).\n");
    for (name, cap) in CAPS.iter() {
        let value = match cap {
            Cap::Num(v) => v.to_string(),
            Cap::Text(t) => shell_quote(t),
        };
        out.push_str(&format!("{name}={value}\n"));
    }
    out.push_str(rest);
    out
}

/// `$0` of the script under `sh -c` (what `ps` shows on the node).
pub const PROBE_NAME: &str = "etcdnet-probe";

/// Test hook: the directory holding ca.crt, server.crt, peer.crt, healthcheck-client.crt and their
/// keys (default `/etc/kubernetes/pki/etcd`). `apiserver-etcd-client.crt` is read from its parent.
pub const ENV_PKI_DIR: &str = "ETCDNET_PKI_DIR";

/// Test hook: the etcd static-pod manifest (default `/etc/kubernetes/manifests/etcd.yaml`).
pub const ENV_MANIFEST: &str = "ETCDNET_MANIFEST";

/// Test hook: the kubelet's pod log directory (default `/var/log/pods`), where the previous etcd
/// container's log is read from when crictl no longer has it.
pub const ENV_POD_LOGS: &str = "ETCDNET_POD_LOGS";

/// What the probe is told: who this node is, who its peers are, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArgs {
    /// This node's etcd IP (`--self`): its own 2379/2380 are checked and its certificates'
    /// SANs are matched against it.
    pub self_ip: String,
    /// The other control-plane nodes' IPs (`--peer`, repeated). The script skips duplicates and
    /// `self_ip`.
    pub peers: Vec<String>,
    /// Bound of each TCP connect, whole seconds (`--connect-timeout`, at least 1).
    pub connect_timeout_s: u32,
    /// Extra time a TLS handshake gets after its connect (`--tls-timeout`).
    pub tls_timeout_s: u32,
    /// How many of the newest etcd log lines to read (`--log-lines`).
    pub log_lines: u32,
    /// Byte cap of that log sample, the newest kept (`--log-bytes`).
    pub log_bytes: u64,
    /// How many of the node's 2379/2380 checks run at once (the script's `--parallel`); the plan
    /// sets it to the number of nodes probed at once (`route::DEFAULT_PARALLEL`).
    pub parallel: u32,
}

impl Default for ProbeArgs {
    fn default() -> Self {
        ProbeArgs {
            self_ip: String::new(),
            peers: Vec::new(),
            connect_timeout_s: 3,
            tls_timeout_s: 2,
            log_lines: 500,
            log_bytes: 256 * 1024,
            parallel: 16,
        }
    }
}

impl ProbeArgs {
    pub fn new(
        self_ip: impl Into<String>,
        peers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ProbeArgs {
            self_ip: self_ip.into(),
            peers: peers.into_iter().map(Into::into).collect(),
            ..ProbeArgs::default()
        }
    }

    /// How long the probe itself may take on the node: the paths (own and each peer's 2379 and
    /// 2380) run `parallel` at a time, each bounded by the connect timeout plus the handshake
    /// timeout, plus a second for the rest. A route adds its own overhead (pod start, ssh).
    pub fn expected_duration(&self) -> Duration {
        let paths = 2 * (self.peers.len() as u64 + 1);
        let rounds = paths.div_ceil(u64::from(self.parallel.max(1)));
        let one = u64::from(self.connect_timeout_s.max(1)) + u64::from(self.tls_timeout_s);
        Duration::from_secs(rounds.saturating_mul(one).saturating_add(1))
    }

    /// The script's own arguments, in order.
    pub fn script_args(&self) -> Vec<String> {
        let mut args = vec!["--self".to_string(), self.self_ip.clone()];
        for peer in &self.peers {
            args.push("--peer".into());
            args.push(peer.clone());
        }
        for (flag, value) in [
            ("--connect-timeout", u64::from(self.connect_timeout_s)),
            ("--tls-timeout", u64::from(self.tls_timeout_s)),
            ("--log-lines", u64::from(self.log_lines)),
            ("--log-bytes", self.log_bytes),
            ("--parallel", u64::from(self.parallel)),
        ] {
            args.push(flag.into());
            args.push(value.to_string());
        }
        args
    }
}

/// `sh -c "$PROBE_SH" etcdnet-probe ARGS...`: the argv of a pod's command or an exec.
pub fn argv(opts: &ProbeArgs) -> Vec<String> {
    argv_with_shell(&["sh"], opts)
}

/// The same with another shell, e.g. `["busybox", "sh"]` or `["dash"]` (the tests run all three).
pub fn argv_with_shell(shell: &[&str], opts: &ProbeArgs) -> Vec<String> {
    let mut argv: Vec<String> = shell.iter().map(|s| s.to_string()).collect();
    argv.push("-c".into());
    argv.push(PROBE_SH.to_string());
    argv.push(PROBE_NAME.into());
    argv.extend(opts.script_args());
    argv
}

/// `sh -s -- ARGS...`: the argv when the script is written to the shell's stdin.
pub fn stdin_argv(opts: &ProbeArgs) -> Vec<String> {
    let mut argv = vec!["sh".to_string(), "-s".into(), "--".into()];
    argv.extend(opts.script_args());
    argv
}

/// The remote command line for ssh (one string, parsed by the remote login shell), with the
/// script sent on stdin: `sh -s -- '--self' '10.0.0.11' ...`. Prefix it with `sudo ` where needed.
pub fn stdin_command_line(opts: &ProbeArgs) -> String {
    stdin_argv(opts)
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quote one word for a POSIX shell: single quotes, with `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ProbeArgs {
        ProbeArgs::new("10.0.0.11", ["10.0.0.12", "10.0.0.13"])
    }

    #[test]
    fn script_args_are_the_documented_flags() {
        assert_eq!(
            opts().script_args(),
            [
                "--self",
                "10.0.0.11",
                "--peer",
                "10.0.0.12",
                "--peer",
                "10.0.0.13",
                "--connect-timeout",
                "3",
                "--tls-timeout",
                "2",
                "--log-lines",
                "500",
                "--log-bytes",
                "262144",
                "--parallel",
                "16",
            ]
        );
    }

    #[test]
    fn argv_runs_the_embedded_script_with_a_name() {
        let argv = argv(&opts());
        assert_eq!(argv[..2], ["sh", "-c"]);
        assert_eq!(argv[2], *PROBE_SH);
        assert_eq!(argv[3], PROBE_NAME);
        assert_eq!(argv[4..6], ["--self", "10.0.0.11"]);
        let bb = argv_with_shell(&["busybox", "sh"], &opts());
        assert_eq!(bb[..3], ["busybox", "sh", "-c"]);
    }

    #[test]
    fn stdin_forms_for_ssh() {
        assert_eq!(
            stdin_argv(&opts())[..5],
            ["sh", "-s", "--", "--self", "10.0.0.11"]
        );
        let line = stdin_command_line(&ProbeArgs::new("fd00::1", ["it's"]));
        assert!(
            line.starts_with("sh -s -- --self fd00::1 --peer 'it'\\''s' "),
            "{line}"
        );
    }

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("10.0.0.1"), "10.0.0.1");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$(x)"), "'$(x)'");
    }

    #[test]
    fn expected_duration_is_connect_plus_tls_plus_one() {
        assert_eq!(opts().expected_duration(), Duration::from_secs(6));
    }

    #[test]
    fn script_is_posix_shaped() {
        // Cheap guards against the bashisms that would break dash or busybox; the tests in
        // tests/it/probe_script.rs runs the script under each shell for real.
        for bad in [
            "[[ ",
            "$'\\",
            "/dev/tcp",
            "echo -e",
            "function ",
            "local ",
            "<<<",
            "${!",
        ] {
            let hit = PROBE_SH
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find(|l| l.contains(bad) && !l.contains("function esc") && !is_awk_function(l));
            assert!(hit.is_none(), "{bad:?} in probe.sh: {hit:?}");
        }
        assert!(PROBE_SH.starts_with("#!/bin/sh\n"));
        assert!(PROBE_SH
            .trim_end()
            .ends_with("main \"$@\" </dev/null\nexit 0"));
    }

    /// The caps that are the flags' defaults.
    const FLAGS: &[&str] = &["CT", "TT", "LOG_LINES", "LOG_BYTES", "PAR"];

    /// Numbers ≥ 64 probe.sh may write that are no cap: ports, units, a mode, an exit code.
    const NOT_CAPS: &[&str] = &[
        "100",  // tenths of a second in ms
        "124",  // timeout(1)'s exit code
        "127",  // the loopback prefix 127.
        "700",  // mkdir's mode
        "1000", // ms in a second
        "2379", // etcd's client port
        "2380", // etcd's peer port
        "2381", // etcd's metrics port
        "6443", // the kube-apiserver's port
    ];

    /// Literals still in the framing (issue 39, probe.sh's `emit`: the unexpected stderr's and a
    /// check transcript's byte caps); each goes with its code, or into [`CAPS`].
    const NOT_YET_HANDED: &[&str] = &["300", "8192"];

    /// The script's code: its lines without comments (a `#` at a word's start, outside the awk
    /// programs' strings this is close enough: a cap in a comment is no cap).
    fn code_lines() -> impl Iterator<Item = &'static str> {
        SOURCE
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| match l.find(" # ") {
                Some(i) => &l[..i],
                None => l,
            })
    }

    #[test]
    fn every_cap_is_handed_by_rust_and_used() {
        let code: Vec<&str> = code_lines().collect();
        for (name, _) in CAPS.iter() {
            // As a word (`$NAME`, `${NAME}`, `$((NAME + 1))`), not the start of a longer one.
            let used = code.iter().any(|l| {
                l.match_indices(name).any(|(i, _)| {
                    let before = l[..i].chars().next_back();
                    let after = l[i + name.len()..].chars().next();
                    let word =
                        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                    !word(before) && !word(after) && after != Some('=')
                })
            });
            assert!(used, "cap {name} handed to probe.sh but never used there");
            // The flags' values are the script's to set (from its arguments); the rest never.
            if FLAGS.contains(name) {
                continue;
            }
            let set = code.iter().find(|l| {
                l.split([' ', ';', '{', '('])
                    .any(|w| w.starts_with(&format!("{name}=")))
            });
            assert!(
                set.is_none(),
                "probe.sh sets the cap {name} itself: {set:?}"
            );
        }
        // Each cap once in the rendered script, after the `#!` line, as a plain assignment.
        let rendered: Vec<&str> = PROBE_SH.lines().collect();
        assert_eq!(rendered[0], "#!/bin/sh");
        for (name, cap) in CAPS.iter() {
            let want = match cap {
                Cap::Num(v) => format!("{name}={v}"),
                Cap::Text(t) => format!("{name}={}", shell_quote(t)),
            };
            assert_eq!(rendered.iter().filter(|l| **l == want).count(), 1, "{want}");
        }
        assert_eq!(render(SOURCE), *PROBE_SH, "the same script every run");
    }

    #[test]
    fn no_cap_is_written_in_the_script() {
        let mut found = Vec::new();
        for line in code_lines() {
            let b = line.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i].is_ascii_digit()
                    && (i == 0
                        || !(b[i - 1].is_ascii_alphanumeric() || b"_.\\".contains(&b[i - 1])))
                {
                    let end = (i..b.len())
                        .find(|&j| !b[j].is_ascii_digit())
                        .unwrap_or(b.len());
                    let n = &line[i..end];
                    if n.parse::<u64>().is_ok_and(|v| v >= 64)
                        && !NOT_CAPS.contains(&n)
                        && !NOT_YET_HANDED.contains(&n)
                    {
                        found.push(format!("{n} in {line:?}"));
                    }
                    i = end;
                } else {
                    i += 1;
                }
            }
        }
        assert!(
            found.is_empty(),
            "a cap written in probe.sh: hand it from Rust (script::CAPS) instead: {found:#?}"
        );
        // The allowance for numbers that are no cap hides none.
        for (name, cap) in CAPS.iter() {
            if let Cap::Num(v) = cap {
                assert!(!NOT_CAPS.contains(&v.to_string().as_str()), "{name}");
            }
        }
    }

    // `function name(` inside the awk programs is awk, not shell.
    fn is_awk_function(line: &str) -> bool {
        line.trim_start().starts_with("function ") && line.contains('(')
    }
}
