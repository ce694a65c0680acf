//! The node probe, embedded in the binary, and the command lines that run it.
//!
//! `probe.sh` is one POSIX `sh` script (bash, dash, busybox ash). A route runs it as root on a
//! control-plane node either as `sh -c "$PROBE_SH" etcdnet-probe ARGS...` (a pod's command, an exec)
//! or as `sh -s -- ARGS...` with the script on stdin (ssh, where the remote command line is one
//! string). It prints one JSON document ([`crate::probe::output::ProbeOutput`]) read back by
//! [`crate::probe::parse::parse`].

use std::time::Duration;

/// The probe script itself.
pub const PROBE_SH: &str = include_str!("probe.sh");

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
    argv.push(PROBE_SH.into());
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
        assert_eq!(argv[2], PROBE_SH);
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

    // `function name(` inside the awk programs is awk, not shell.
    fn is_awk_function(line: &str) -> bool {
        line.trim_start().starts_with("function ") && line.contains('(')
    }
}
