//! The real embedded probe (`etcdnet::probe::script`) run under `sh`, `dash` and `busybox sh`
//! (each one present; a missing one is skipped loudly), in a controlled node: fake `crictl` and
//! `systemctl` first on PATH, certificates made with openssl in a temp pki dir (the script's
//! `ETCDNET_PKI_DIR` / `ETCDNET_MANIFEST` test hooks), its output read back through `parse`.
//!
//! The network outcomes run in private network + PID namespaces (root, `unshare`, `ip`, `nft`,
//! `openssl s_server`; skipped loudly without them): nothing listening (Refused), nftables drop
//! (Timeout), ICMP reject (NoRoute), large packets dropped (TLS Stalled), bad certificates
//! (Rejected), good ones (Completed), and a real etcd when Debian's etcd-server is installed.

mod probe_support;

use std::process::Stdio;

use etcdnet::probe::output::{RuntimeQuery, TlsOutcome};
use etcdnet::probe::parse::parse;
use etcdnet::probe::script::{self, ProbeArgs};
use probe_support::*;

#[test]
fn probe_contract_under_every_shell() {
    let node = Node::new().with_pki();
    assert!(
        which("openssl").is_some(),
        "openssl not installed: the probe's certificate checks cannot run (apt-get install openssl)"
    );
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
