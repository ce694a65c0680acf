//! The real embedded probe (`etcdnet::probe::script`) run under `sh`, `dash` and `busybox sh`
//! (each one present; a missing one is skipped loudly), in a controlled node: fake `crictl` and
//! `systemctl` first on PATH, certificates made with openssl in a temp pki dir (the script's
//! `ETCDNET_PKI_DIR` / `ETCDNET_MANIFEST` test hooks), its output read back through `parse`.
//!
//! The network outcomes run in private network + PID namespaces (root, `unshare`, `ip`, `nft`,
//! `openssl s_server`; skipped loudly without them): nothing listening (Refused), nftables drop
//! (Timeout), ICMP reject (NoRoute), large packets dropped (TLS Stalled), bad certificates
//! (Rejected), good ones (Completed), and a real etcd when Debian's etcd-server is installed.

use crate::common::probe as probe_support;

use std::process::{Command, Stdio};

use etcdnet::probe::output::{RuntimeQuery, TcpOutcome, TlsOutcome};
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
        // Nothing listens: the member list is an error, the alarm list not asked.
        use etcdnet::probe::output::QueryOutcome;
        let m = &out.members;
        assert_eq!(m.outcome, QueryOutcome::Error, "{what}: {m:?}");
        assert!(m
            .detail
            .as_deref()
            .unwrap()
            .starts_with("https://127.77.0.1:2380/members: "));
        let a = (out.alarms.outcome, out.alarms.detail.as_deref());
        let want = (
            QueryOutcome::Skipped,
            Some("not asked: /health got no answer"),
        );
        assert_eq!(a, want, "{what}");
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
        // Decimal with leading zeros (200 bytes; read as octal it would be 128), in the = form.
        "--log-bytes=0200",
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
            logs.truncated && (129..=200).contains(&logs.text.len()),
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

/// An `openssl` shim that notes each command (`x509`, `crl2pkcs7`, ...) before running the real one.
fn counting_openssl(node: &Node) -> std::path::PathBuf {
    let real = which("openssl").expect("openssl installed (apt-get install openssl)");
    let calls = node.path("openssl.calls");
    let shim = format!(
        "#!/bin/sh\necho \"$1\" >>\"{calls}\"\nexec {real} \"$@\"\n",
        calls = calls.display(),
        real = real.display()
    );
    node.shim("openssl", &shim);
    calls
}

/// What the probe says of each certificate file, without the seconds-to-expiry that moves on.
fn cert_facts(out: &etcdnet::probe::output::ProbeOutput) -> Vec<String> {
    out.certs
        .iter()
        .map(|c| {
            format!(
                "{} {:?} {:?} {:?} {:?} {:?}",
                c.file, c.not_before, c.not_after, c.sans, c.has_node_ip, c.error
            )
        })
        .collect()
}

#[test]
fn certificates_are_read_in_one_go_and_an_odd_file_alone() {
    let node = Node::new().with_pki();
    let calls = counting_openssl(&node);
    let run = |what: &str| {
        let _ = std::fs::remove_file(&calls);
        let argv = script::argv_with_shell(&["sh"], &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, what);
        let calls = std::fs::read_to_string(&calls).unwrap_or_default();
        // Sorted: the two sides of a pipe start in either order.
        let mut calls: Vec<String> = calls.lines().map(String::from).collect();
        calls.sort();
        (cert_facts(&out), calls)
    };
    let (plain, used) = run("plain");
    assert_eq!(
        used,
        ["crl2pkcs7", "pkcs7"],
        "one pair of openssl runs for all"
    );
    assert_eq!(plain.len(), 4, "{plain:?}");
    // The CA (ten years, no SANs) and the node's server certificate (one year, the node's SANs):
    // each file's own certificate, not its neighbour's.
    assert!(
        plain[0].starts_with("ca.crt ") && plain[0].ends_with(" [] None None"),
        "{plain:?}"
    );
    let not_after = |c: &str| c.split(' ').nth(2).map(String::from);
    assert_ne!(not_after(&plain[0]), not_after(&plain[1]), "{plain:?}");
    assert!(
        plain[1].starts_with("server.crt ")
            && plain[1].contains("[\"localhost\", \"198.18.0.1\", \"127.0.0.1\"]"),
        "{plain:?}"
    );
    assert!(
        plain.iter().all(|c| c.ends_with(" None")),
        "no errors: {plain:?}"
    );

    // A CA bundle: ca.crt holds a second certificate (as during a CA rotation). Each file still
    // stands for its first certificate, so nothing else moves.
    let pki = node.path("pki/etcd");
    let other = std::fs::read_to_string(pki.join("other-ca.crt")).unwrap();
    let mut bundle = std::fs::OpenOptions::new()
        .append(true)
        .open(pki.join("ca.crt"))
        .unwrap();
    std::io::Write::write_all(&mut bundle, other.as_bytes()).unwrap();
    let (bundled, used) = run("bundle");
    assert_eq!(used, ["crl2pkcs7", "pkcs7"]);
    assert_eq!(bundled, plain, "a bundle changes no file's entry");

    // A file that is no certificate: read file by file; that file has its error, the others
    // are what they were.
    std::fs::write(pki.join("healthcheck-client.crt"), "not a certificate\n").unwrap();
    let (odd, used) = run("odd file");
    assert_eq!(used, ["x509"; 4], "the fallback: one x509 per file");
    assert_eq!(odd[..3], plain[..3]);
    assert!(
        odd[3]
            .starts_with("healthcheck-client.crt None None [] None Some(\"openssl x509 failed on "),
        "{odd:?}"
    );
}

/// A `curl` shim that counts how many 2379/2380 checks (`/version`; the health check is not one)
/// run at once (one directory entry each while it runs) before handing over to the real curl.
/// Every call, the health check's too, notes its GNUTLS_NO_IMPLICIT_INIT in `running.env`.
fn counting_curl(node: &Node) -> std::path::PathBuf {
    let real = which("curl").expect("curl installed (apt-get install curl)");
    let dir = node.path("running");
    std::fs::create_dir_all(&dir).unwrap();
    let shim = format!(
        "#!/bin/sh\necho \"${{GNUTLS_NO_IMPLICIT_INIT:-unset}}\" >>\"{d}.env\"\ncase \"$*\" in *version*) ;; *) exec {real} \"$@\" ;; esac\nmkdir \"{d}/$$\"\nls \"{d}\" | wc -l >>\"{d}.max\"\nsleep 0.4\nrmdir \"{d}/$$\"\nexec {real} \"$@\"\n",
        d = dir.display(),
        real = real.display()
    );
    node.shim("curl", &shim);
    node.path("running.max")
}

#[test]
fn the_probe_runs_at_most_parallel_checks_at_once() {
    let node = Node::new();
    let seen = counting_curl(&node);
    // Four peers and self: ten 2379/2380 checks; at most three at a time.
    let peers = ["127.77.0.2", "127.77.0.3", "127.77.0.4", "127.77.0.5"];
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        tls_timeout_s: 1,
        parallel: 3,
        ..ProbeArgs::new("127.77.0.1", peers)
    };
    let Run { out, .. } = check(
        node.command(&script::argv(&opts), &["sh"], "bin"),
        &node,
        "parallel 3",
    );
    assert_eq!(out.paths.len(), 10, "every check still made");
    let counts: Vec<usize> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 10);
    let most = counts.iter().max().copied().unwrap();
    assert_eq!(most, 3, "bounded, and the bound is used: {counts:?}");
    // Every curl (ten checks, the health check, the metrics before and after the checks, the
    // kube-apiserver's /readyz) skips GnuTLS's implicit start-up.
    let env = std::fs::read_to_string(node.path("running.env")).unwrap();
    assert_eq!(env.lines().collect::<Vec<_>>(), ["1"; 14], "{env}");
}

/// A check the watchdog ends is judged at the connect timeout: no TCP answer by then. A curl
/// that connects in the instant between the watchdog's look and its signal (a peer answering
/// right at the timeout) must not read as a TLS rejection, which the verdict would take for a
/// certificate problem. Before, it was `Connected` (and with the node's certificates `Rejected`,
/// "curl exited 143").
#[test]
fn a_check_the_watchdog_ends_as_it_connects_is_a_timeout() {
    let node = Node::new();
    let real = which("curl").expect("curl installed (apt-get install curl)");
    // The path checks wait past the connect timeout, then, told to stop, say they connected
    // (as curl -v --trace-time would) and end by the signal; the health check is the real curl.
    node.shim(
        "curl",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *version*) ;; *) exec {real} \"$@\" ;; esac\n\
             trap 'echo \"$(date +%H:%M:%S.%6N) * Connected to peer (127.77.0.2) port 2380 (#0)\" >&2; exit 143' TERM\n\
             echo \"$(date +%H:%M:%S.%6N) *   Trying 127.77.0.2:2380...\" >&2\n\
             sleep 5 &\nwait $!\n",
            real = real.display()
        ),
    );
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        tls_timeout_s: 1,
        ..ProbeArgs::new("127.77.0.1", ["127.77.0.2"])
    };
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, .. } = check(
            node.command(&script::argv(&opts), &shell, "bin"),
            &node,
            &what,
        );
        assert_eq!(out.paths.len(), 4, "{what}");
        for p in &out.paths {
            assert_eq!(
                (p.tcp, p.tls),
                (TcpOutcome::Timeout, TlsOutcome::NotTried),
                "{what}: {p:?}"
            );
            assert_eq!(
                p.tcp_detail.as_deref(),
                Some("no TCP answer within 1 s"),
                "{what}"
            );
        }
    }
}

/// The probe's own temp folders under TMPDIR.
fn probe_dirs(node: &Node) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(node.path("tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("etcdnet-probe."))
        .collect();
    names.sort();
    names
}

#[test]
fn an_interrupted_probe_removes_its_temp_folder() {
    for signal in ["TERM", "HUP", "INT"] {
        let node = Node::new();
        // crictl hangs, as on a node whose runtime does not answer: the probe is mid-run.
        std::fs::write(node.path("bin/crictl"), "#!/bin/sh\nexec sleep 5\n").unwrap();
        let opts = ProbeArgs::new("127.77.0.1", Vec::<String>::new());
        let mut cmd = node.command(&script::argv(&opts), &["sh"], "bin");
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while probe_dirs(&node).is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(probe_dirs(&node).len(), 1, "{signal}: the probe started");
        std::thread::sleep(std::time::Duration::from_millis(300));
        sh(&format!("kill -{signal} {}", child.id()), node.dir.path());
        child.wait().unwrap();
        assert_eq!(probe_dirs(&node), Vec::<String>::new(), "{signal}");
    }
}

#[test]
fn a_killed_probes_folder_is_swept_by_the_next_probe_once_stale() {
    let node = Node::new();
    let tmp = node.path("tmp");
    let outside = node.path("outside");
    std::fs::create_dir_all(outside.join("keep")).unwrap();
    for d in ["etcdnet-probe.killed1", "etcdnet-probe.fresh", "not-ours"] {
        std::fs::create_dir_all(tmp.join(d).join("p.1.v")).unwrap();
    }
    std::os::unix::fs::symlink(&outside, tmp.join("etcdnet-probe.link")).unwrap();
    // Untouched for 20 minutes: what a SIGKILLed probe leaves.
    sh(
        "touch -d '20 minutes ago' tmp/etcdnet-probe.killed1 tmp/not-ours outside && \
         touch -h -d '20 minutes ago' tmp/etcdnet-probe.link",
        node.dir.path(),
    );
    let opts = ProbeArgs::new("127.77.0.1", Vec::<String>::new());
    let out = node
        .command(&script::argv(&opts), &["sh"], "bin")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        probe_dirs(&node),
        ["etcdnet-probe.fresh", "etcdnet-probe.link"],
        "the stale folder is gone, a fresh one (a probe still running) and a link are kept"
    );
    assert!(tmp.join("not-ours").exists());
    assert!(
        outside.join("keep").exists(),
        "nothing followed through the link"
    );
}

/// A `crictl` that lists no container and appends `line` (expanded by its shell) to `seen`.
/// The line is expanded before the redirection (dash may redirect in the shell itself around
/// an external command, so a `readlink /proc/$$/fd/1 >>seen` would read `seen`).
fn crictl_noting(node: &Node, seen: &std::path::Path, line: &str) {
    node.shim(
        "crictl",
        &format!(
            "#!/bin/sh\necho \"{line}\" >>{}\necho '{{\"containers\":[]}}'\n",
            seen.display()
        ),
    );
}

/// Without TMPDIR (sudo clears it on a node) the probe's scratch is in memory, /dev/shm, not on
/// the disk where etcd fsyncs its WAL; and it is gone when the probe is.
#[test]
fn without_tmpdir_the_scratch_is_in_memory() {
    if !std::path::Path::new("/dev/shm").is_dir() {
        eprintln!("SKIP without_tmpdir_the_scratch_is_in_memory: no /dev/shm here");
        return;
    }
    let node = Node::new();
    // crictl notes where the probe sends its output (a file in the probe's folder).
    let seen = node.path("seen");
    crictl_noting(&node, &seen, "$(readlink /proc/$$/fd/1)");
    let opts = ProbeArgs::new("127.77.0.1", Vec::<String>::new());
    let mut cmd = node.command(&script::argv(&opts), &["sh"], "bin");
    cmd.env_remove("TMPDIR");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let seen = std::fs::read_to_string(&seen).unwrap();
    let dir = seen
        .lines()
        .next()
        .unwrap()
        .rsplit_once('/')
        .unwrap()
        .0
        .to_string();
    assert!(dir.starts_with("/dev/shm/etcdnet-probe."), "{seen}");
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left behind");
}

/// The path checks keep the priority the probe started with, and so does the metrics read after
/// them (the one before them yields, as it runs beside their start); the rest of the probe (the health check and crictl here) runs at nice 10, behind etcd,
/// the kubelet and the checks' timers.
#[test]
fn the_rest_of_the_probe_yields_the_cpu_to_the_checks() {
    let node = Node::new();
    let real = which("curl").expect("curl installed (apt-get install curl)");
    let seen = node.path("nice");
    node.shim(
        "curl",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *version*) t=path ;; */metrics*) t=metrics ;; *) t=health ;; esac\necho \"$t $(awk '{{print $19}}' /proc/$$/stat)\" >>{s}\nexec {real} \"$@\"\n",
            s = seen.display(),
            real = real.display()
        ),
    );
    crictl_noting(&node, &seen, "crictl $(awk '{print $19}' /proc/$$/stat)");
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        ..ProbeArgs::new("127.77.0.1", ["127.77.0.2"])
    };
    for shell in shells() {
        let _ = std::fs::remove_file(&seen);
        let what = shell.join(" ");
        check(
            node.command(&script::argv(&opts), &shell, "bin"),
            &node,
            &what,
        );
        let lines = std::fs::read_to_string(&seen).unwrap();
        let of = |tool: &str| -> Vec<i32> {
            let mut v: Vec<i32> = (lines.lines())
                .filter_map(|l| l.strip_prefix(tool))
                .map(|n| n.trim().parse().unwrap())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        // Four path checks at the probe's priority; the health check and crictl behind them.
        let paths = of("path ");
        assert_eq!(paths.len(), 1, "{what}: {lines}");
        assert_eq!(lines.matches("path ").count(), 4, "{what}: {lines}");
        let yielded = [(paths[0] + 10).min(19)];
        // etcd's metrics: the read before the checks yields to them as it starts beside them;
        // the read after them, which ends the probe's wait, keeps their priority.
        // (Without `nice` on the node, as under Debian's busybox, both at the checks' priority.)
        let nice = if shell[0] == "busybox" {
            node.path("busybox-bin/nice").exists()
        } else {
            which("nice").is_some()
        };
        let mut want = vec![paths[0], if nice { yielded[0] } else { paths[0] }];
        want.dedup();
        assert_eq!(of("metrics "), want, "{what}: {lines}");
        assert_eq!(lines.matches("metrics ").count(), 2, "{what}: {lines}");
        assert_eq!(of("health "), yielded, "{what}: {lines}");
        assert_eq!(of("crictl "), yielded, "{what}: {lines}");
    }
}

/// The probe's own questions to etcd (member list, alarm list) answered with what a hostile or
/// broken node could send: every value escaped, IDs converted exactly (uint64 past 2^53), the
/// counts capped, anything not of the expected shape an `Error` with the start of the body.
#[test]
fn member_and_alarm_lists_are_read_exactly_and_hostile_ones_capped() {
    use etcdnet::probe::output::QueryOutcome;
    let node = Node::new().with_pki();
    let ok = |headers: &str, body: String| Answer {
        rc: 0,
        w: "200 0.004".into(),
        headers: headers.into(),
        body: body.into_bytes(),
    };
    // 3 members as etcd 3.5 prints them (ids are decimal uint64), a hostile name, an id past
    // uint64, then 70 more: 64 kept.
    let mut members = vec![
        r#"{"id":13195394291058371180,"name":"na\"me\\ \u001b","peerURLs":["https://198.18.0.11:2380","https://[fd00::11]:2380"],"clientURLs":["https://198.18.0.11:2379"],"isLearner":true}"#.to_string(),
        r#"{"id":1,"peerURLs":["https://198.18.0.12:2380"]}"#.to_string(),
        r#"{"id":18446744073709551616,"name":"too big","peerURLs":[]}"#.to_string(),
    ];
    members
        .extend((0..70).map(|i| format!(r#"{{"id":{},"name":"m{i}","peerURLs":[]}}"#, 1000 + i)));
    let members = ok(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Etcd-Cluster-Id: 0C45A069F3A1D796\r\n\r\n",
        format!("[{}]\n", members.join(",")),
    );
    // etcd 3.6's gateway (grpc-gateway v2, protojson: server/embed/serve.go registerGateway)
    // may put a space after any comma (google.golang.org/protobuf internal/encoding/json
    // encode.go prepareNext, "to make output unstable"); 3.4 and 3.5 never do.
    let alarms = ok(
        "HTTP/1.1 200 OK\r\n\r\n",
        r#"{"header":{"cluster_id":"2037210783374497686"}, "alarms":[{"memberID":"13195394291058371180", "alarm":"NOSPACE"},{"memberID":"2","alarm":2}, {"alarm":"X\"Y"}]}"#.into(),
    );
    node.curl_answering(Some(&members), Some(&alarms), false);
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let m = &out.members;
        assert_eq!(
            (
                m.outcome,
                m.http_status,
                m.cluster_id.as_deref(),
                m.truncated
            ),
            (QueryOutcome::Ok, Some(200), Some("c45a069f3a1d796"), true),
            "{what}: {m:?}"
        );
        assert_eq!(
            m.detail.as_deref(),
            Some("https://127.77.0.1:2380/members"),
            "{what}"
        );
        assert_eq!(m.members.len(), 64, "{what}");
        let first = &m.members[0];
        assert_eq!(
            first.id.map(|i| i.to_string()).as_deref(),
            Some("b71f75320dc06a6c"),
            "{what}"
        );
        // The name as etcd holds it: its JSON escapes decoded, the control character one.
        assert_eq!(first.name.as_deref(), Some("na\"me\\ \u{1b}"), "{what}");
        assert_eq!(
            first.peer_urls,
            ["https://198.18.0.11:2380", "https://[fd00::11]:2380"]
        );
        assert_eq!(first.client_urls, ["https://198.18.0.11:2379"]);
        assert!(first.is_learner);
        let second = &m.members[1];
        assert_eq!(
            (
                second.id.map(|i| i.to_string()).as_deref(),
                second.name.as_deref(),
                second.is_learner
            ),
            (Some("1"), None, false),
            "{what}: a member added but never started has no name"
        );
        assert_eq!(m.members[2].id, None, "{what}: 2^64 is no member ID");
        assert_eq!(
            m.members[3].id.map(|i| i.to_string()).as_deref(),
            Some("3e8"),
            "{what}"
        );
        let a = &out.alarms;
        assert_eq!(
            (a.outcome, a.truncated),
            (QueryOutcome::Ok, false),
            "{what}"
        );
        let got: Vec<(Option<String>, &str)> = (a.alarms.iter())
            .map(|x| (x.member_id.map(|i| i.to_string()), x.alarm.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("b71f75320dc06a6c".to_string()), "NOSPACE"),
                (Some("2".to_string()), "CORRUPT"),
                (None, "X\"Y")
            ],
            "{what}"
        );
        assert!(out.errors.is_empty(), "{what}: {:?}", out.errors);
    }

    // Not what was asked for: a body cut by the 64 KiB cap, an error status, a curl failure.
    let big = format!("[{}]", r#"{"id":1,"name":"x"},"#.repeat(20_000));
    let cut = ok("HTTP/1.1 200 OK\r\n\r\n", big);
    let unavailable = Answer {
        rc: 0,
        w: "503 2.001".into(),
        headers: "HTTP/1.1 503 Service Unavailable\r\n\r\n".into(),
        body: br#"{"error":"etcdserver: request timed out","code":14}"#.to_vec(),
    };
    node.curl_answering(Some(&cut), Some(&unavailable), false);
    let argv = script::argv_with_shell(&["sh"], &loopback_args());
    let started = crate::common::cpu::children_cpu_time();
    let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, "cut");
    let took = crate::common::cpu::children_cpu_time() - started;
    let m = &out.members;
    assert_eq!((m.outcome, m.members.len()), (QueryOutcome::Error, 0));
    let detail = m.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("https://127.77.0.1:2380/members: not a member list: [{\"id\":1,"),
        "{detail}"
    );
    // The cut body's cost is bounded: CPU time (the shell's and its tools'), not wall time,
    // which a loaded machine stretches (CI failed this at load 15-78); 5 s of CPU is far past
    // what reading 64 KiB and its first bytes takes.
    assert!(
        took < std::time::Duration::from_secs(5),
        "took {took:?} of CPU"
    );
    let a = &out.alarms;
    assert_eq!((a.outcome, a.http_status), (QueryOutcome::Error, Some(503)));
    assert!(
        a.detail.as_deref().unwrap().ends_with(
            "/v3/maintenance/alarm: HTTP 503: {\"error\":\"etcdserver: request timed out\",\"code\":14}"
        ),
        "{a:?}"
    );
    let nested = ok("HTTP/1.1 200 OK\r\n\r\n", "[".repeat(40) + &"]".repeat(40));
    let timeout = Answer {
        rc: 28,
        w: "000 5.001".into(),
        headers: String::new(),
        body: vec![],
    };
    node.curl_answering(Some(&nested), Some(&timeout), false);
    let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, "nested");
    assert_eq!(
        out.members.outcome,
        QueryOutcome::Error,
        "{:?}",
        out.members
    );
    assert_eq!(out.alarms.outcome, QueryOutcome::Error);
    assert_eq!(out.alarms.http_status, None);
    assert!(
        out.alarms
            .detail
            .as_deref()
            .unwrap()
            .ends_with(": curl: (28) fake failure"),
        "{:?}",
        out.alarms
    );
}

/// An IPv6 node: `/health` and the alarm list on `[::1]`, the member list and every path on a
/// bracketed URL, the targets in the document without brackets, and the matrix fills from them.
#[test]
fn ipv6_nodes_are_asked_on_bracketed_urls() {
    use etcdnet::analyse::matrix::{self, CellState};
    use etcdnet::probe::NodeReport;
    let node = Node::new().with_pki();
    let urls = node.curl_answering(None, None, true);
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        ..ProbeArgs::new("fd00:db8::11", ["fd00:db8::12", "FD00:DB8:0::13"])
    };
    for shell in shells() {
        let what = shell.join(" ");
        let _ = std::fs::remove_file(&urls);
        let argv = script::argv_with_shell(&shell, &opts);
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let mut asked: Vec<String> = std::fs::read_to_string(&urls)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        asked.sort();
        let want = [
            "http://[::1]:2381/metrics",
            "http://[::1]:2381/metrics",
            "https://[::1]:2379/health",
            "https://[::1]:2379/v3/maintenance/alarm",
            "https://[::1]:6443/readyz?verbose",
            "https://[FD00:DB8:0::13]:2379/version",
            "https://[FD00:DB8:0::13]:2380/version",
            "https://[fd00:db8::11]:2379/version",
            "https://[fd00:db8::11]:2380/members",
            "https://[fd00:db8::11]:2380/version",
            "https://[fd00:db8::12]:2379/version",
            "https://[fd00:db8::12]:2380/version",
        ];
        assert_eq!(asked, want, "{what}: one curl per check");
        let targets: Vec<&str> = out.paths.iter().map(|p| p.target.as_str()).collect();
        let want = [
            "fd00:db8::11",
            "fd00:db8::11",
            "fd00:db8::12",
            "fd00:db8::12",
        ];
        assert_eq!(targets[..4], want, "{what}");
        assert_eq!(targets[4..], ["FD00:DB8:0::13"; 2], "{what}");
        // The matrix matches targets to the nodes' addresses as addresses.
        let report = |name: &str, ip: &str| NodeReport {
            name: name.into(),
            ip: Some(ip.parse().unwrap()),
            outcome: Err(etcdnet::probe::ReachError::no_address()),
            reach_from: None,
            reach: vec![],
            host_key: None,
        };
        let mut cp1 = report("cp1", "fd00:db8::11");
        cp1.outcome = Ok(out.clone());
        let nodes = [
            cp1,
            report("cp2", "fd00:db8::12"),
            report("cp3", "fd00:db8::13"),
        ];
        let m = matrix::build(&nodes, 2380);
        for to in ["cp1", "cp2", "cp3"] {
            let cell = m.cell("cp1", to).unwrap();
            assert!(
                cell.state != CellState::NotProbed && !cell.state.is_ok(),
                "{what}: cp1 → {to}: {cell:?}"
            );
        }
    }
}

/// sudo's secure_path may leave out /usr/local/bin (where image-builder puts crictl): the probe
/// puts /usr/local/bin, /usr/local/sbin and /opt/bin in front, each only when missing, before it
/// looks for crictl.
#[test]
fn path_gains_the_local_bin_directories_before_crictl_is_looked_up() {
    let node = Node::new();
    let seen = node.path("seen");
    crictl_noting(&node, &seen, "$PATH");
    let opts = ProbeArgs::new("127.77.0.1", Vec::<String>::new());
    let bin = node.path("bin").display().to_string();
    let system = "/usr/sbin:/usr/bin:/sbin:/bin";
    let cases = [
        (
            format!("{bin}:{system}"),
            format!("/usr/local/bin:/usr/local/sbin:/opt/bin:{bin}:{system}"),
        ),
        (
            format!("{bin}:{system}:/usr/local/bin"),
            format!("/usr/local/sbin:/opt/bin:{bin}:{system}:/usr/local/bin"),
        ),
    ];
    for (given, want) in cases {
        let _ = std::fs::remove_file(&seen);
        let mut cmd = node.command(&script::argv(&opts), &["sh"], "bin");
        cmd.env("PATH", &given);
        let Run { out, .. } = check(cmd, &node, &given);
        assert_eq!(out.etcd.query, RuntimeQuery::Ok, "crictl found");
        // crictl runs twice for etcd and twice for the kube-apiserver (the list, then the IDs
        // by name): the same PATH each time.
        let path = std::fs::read_to_string(&seen).unwrap();
        let lines: Vec<&str> = path.lines().collect();
        assert_eq!(lines, [want.as_str(); 4], "{given}");
    }
}

/// A short log of the current container (a member the kubelet restarted): the previous
/// container's log too, from crictl, else from the kubelet's file of that attempt, never
/// through a link, the two within one byte cap.
#[test]
fn the_previous_containers_log_when_the_current_one_is_short() {
    let node = Node::new().with_pki();
    let run = |opts: &ProbeArgs, what: &str| {
        let mut cmd = node.command(&script::argv(opts), &["sh"], "bin");
        cmd.env(script::ENV_POD_LOGS, node.path("pods"));
        check(cmd, &node, what).out
    };
    let opts = loopback_args();
    // The harness's crictl: 2222bbbb running (42 lines, fewer than 500), 1111aaaa exited.
    let out = run(&opts, "crictl");
    let prev = out.etcd.previous_logs.as_ref().expect("previous log read");
    assert_eq!((prev.container_id.as_str(), prev.lines), ("1111aaaa", 42));
    assert_eq!(out.etcd.previous_logs_file, None);
    // A full current log: nothing more.
    let full = run(
        &ProbeArgs {
            log_lines: 40,
            ..opts.clone()
        },
        "full",
    );
    assert_eq!(full.etcd.previous_logs, None);
    // One byte cap for both: the previous log gets what the current one left.
    let capped = run(
        &ProbeArgs {
            log_bytes: 2500,
            ..opts.clone()
        },
        "capped",
    );
    let (cur, prev) = (
        capped.etcd.logs.unwrap(),
        capped.etcd.previous_logs.unwrap(),
    );
    assert!(!cur.truncated && prev.truncated, "{cur:?} {prev:?}");
    assert!(cur.text.len() + prev.text.len() <= 2500);

    // crictl no longer has the old container: the kubelet's file of attempt 1, CRI lines
    // unwrapped (a partial line joined), the pod of this host first; never through a link.
    let host = String::from_utf8(Command::new("uname").arg("-n").output().unwrap().stdout).unwrap();
    let pods = node.path("pods");
    let ours = pods.join(format!("kube-system_etcd-{}_0123", host.trim()));
    let other = pods.join("kube-system_etcd-elsewhere_4567");
    let linked = pods.join("kube-system_etcd-linked_89ab");
    for d in [&ours, &other, &linked] {
        std::fs::create_dir_all(d.join("etcd")).unwrap();
    }
    let cri = "2026-12-04T10:00:00.000000001Z stderr F {\"level\":\"warn\",\"msg\":\"first\"}\n\
               2026-12-04T10:00:01.000000001Z stderr P {\"level\":\"info\",\n\
               2026-12-04T10:00:01.000000002Z stderr F \"msg\":\"joined\"}\n";
    std::fs::write(ours.join("etcd/1.log"), cri).unwrap();
    std::fs::write(
        other.join("etcd/1.log"),
        "2026-12-04T10:00:00Z stderr F other\n",
    )
    .unwrap();
    std::fs::write(node.path("secret"), "secret\n").unwrap();
    std::os::unix::fs::symlink(node.path("secret"), linked.join("etcd/1.log")).unwrap();
    // Newest, so it would win were it not for the host name and the link rule.
    sh(
        "touch -h -d '1 minute' pods/kube-system_etcd-linked_89ab/etcd/1.log",
        node.dir.path(),
    );
    let crictl = format!(
        "#!/bin/sh\ncase \"$*\" in *1111aaaa*) echo 'FATA[0000] rpc error: code = NotFound' >&2; exit 1 ;; esac\nexec {} \"$@\"\n",
        node.path("real-crictl").display()
    );
    std::fs::rename(node.path("bin/crictl"), node.path("real-crictl")).unwrap();
    node.shim("crictl", &crictl);
    let out = run(&opts, "kubelet file");
    let prev = out
        .etcd
        .previous_logs
        .expect("read from the kubelet's file");
    assert_eq!(
        prev.text,
        "{\"level\":\"warn\",\"msg\":\"first\"}\n{\"level\":\"info\",\"msg\":\"joined\"}\n"
    );
    assert_eq!(prev.container_id, "1111aaaa");
    let file = ours.join("etcd/1.log").display().to_string();
    assert_eq!(out.etcd.previous_logs_file.as_deref(), Some(file.as_str()));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    // Without the host's pod: the other regular file, not the newer link.
    std::fs::remove_dir_all(&ours).unwrap();
    let out = run(&opts, "other pod");
    assert_eq!(out.etcd.previous_logs.unwrap().text, "other\n");
    // Nothing to read at all: crictl's failure is reported.
    std::fs::remove_dir_all(&other).unwrap();
    let out = run(&opts, "nothing");
    assert_eq!(out.etcd.previous_logs, None);
    let e = &out.errors[0];
    assert!(
        e.step == "etcd-previous-logs" && e.message.contains("crictl logs 1111aaaa exited 1"),
        "{e:?}"
    );
}

/// The node's own firewall, read right before and right after the checks: `nft` and the legacy
/// `iptables-legacy-save` shims print real captures (tests/fixtures/firewall), the "before" one
/// on their first call and the "after" one (a counter grown) on their second; `ip6tables` is
/// refused as without CAP_NET_ADMIN. Each read sends the dump's lines that may matter, bounded;
/// the plugin keeps those that can drop a packet and parses them.
#[test]
fn the_firewall_is_read_before_and_after_the_checks_filtered_and_bounded() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/firewall");
    for shell in shells() {
        let what = shell.join(" ");
        let node = Node::new();
        let twice = |name: &str, before: &str, after: &str| {
            let state = node.path(&format!("{name}.calls"));
            node.shim(
                name,
                &format!(
                    "#!/bin/sh\necho x >>'{s}'\nif [ \"$(wc -l <'{s}')\" -le 1 ]; then cat '{fixtures}/{before}'; else cat '{fixtures}/{after}'; fi\n",
                    s = state.display()
                ),
            );
        };
        twice("nft", "nft-counter-before.txt", "nft-counter-after.txt");
        twice(
            "iptables-legacy-save",
            "iptables-legacy-before.txt",
            "iptables-legacy-after.txt",
        );
        node.shim(
            "ip6tables-legacy-save",
            "#!/bin/sh\necho 'ip6tables-save v1.8.9 (legacy): Cannot initialize: Permission denied (you must be root)' >&2\nexit 1\n",
        );
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let fw = &out.firewall;
        let tools = |reads: &[etcdnet::probe::firewall::FirewallRead]| -> Vec<String> {
            reads
                .iter()
                .map(|r| format!("{} {}", r.tool, r.outcome))
                .collect()
        };
        let want = ["nft Ok", "iptables-legacy Ok", "ip6tables-legacy Denied"];
        assert_eq!(tools(&fw.before), want, "{what}");
        assert_eq!(tools(&fw.after), want, "{what}");
        let text = |r: &etcdnet::probe::firewall::FirewallRead| r.text.clone().unwrap_or_default();
        assert!(
            text(&fw.before[0]).contains("counter packets 0 bytes 0 drop # handle 8")
                && text(&fw.after[0]).contains("counter packets 2 bytes 120 drop # handle 8"),
            "{what}: {fw:?}"
        );
        // Kept: headers and the drops; the accepts of a chain whose policy accepts are not.
        assert!(
            !text(&fw.after[0]).contains("accept # handle"),
            "{what}: {fw:?}"
        );
        assert_eq!(
            (fw.after[0].lines, fw.after[0].kept, fw.after[0].cut),
            (20, 12, 0),
            "{what}: {fw:?}"
        );
        // iptables: each kept rule with its position in its chain (the jump at 1 left out).
        assert!(
            text(&fw.after[1]).contains(
                "@2 [2:120] -A INPUT -s 10.0.0.2/32 -p tcp -m multiport --dports 2379,2380 -j DROP\n"
            ),
            "{what}: {fw:?}"
        );
        assert_eq!(
            fw.after[2].detail.as_deref(),
            Some("ip6tables-save v1.8.9 (legacy): Cannot initialize: Permission denied (you must be root)"),
            "{what}"
        );
        // The nft shim was called twice: once before the checks, once after.
        let calls = std::fs::read_to_string(node.path("nft.calls")).unwrap();
        assert_eq!(calls.lines().count(), 2, "{what}");
    }
}

/// A node with a huge ruleset (a kube-proxy or Antrea node) sends at most 48 KiB of the lines
/// that may drop a packet (the accepts apart, so they never crowd out a drop), and the plugin
/// keeps at most 48 KiB of what can and says the cut; a rule line of a hostile length is cut at
/// 512 bytes.
#[test]
fn a_huge_ruleset_is_bounded_and_the_cut_said() {
    let node = Node::new();
    let gen = node.path("gen.sh");
    // A hostile line first, then 3000 accepts of a chain whose policy accepts (never kept),
    // then 3000 drops (kept up to the cap).
    let script = r#"printf 'table ip filter { # handle 1\n\tchain input { # handle 1\n\t\ttype filter hook input priority filter; policy accept;\n'
printf '\t\tcomment "%s" drop # handle 9999\n' "$(printf '%3000s' | tr ' ' x)"
i=0; while [ $i -lt 3000 ]; do printf '\t\tip saddr 10.9.%d.%d accept # handle %d\n' $((i / 250)) $((i % 250)) $i; i=$((i + 1)); done
i=0; while [ $i -lt 3000 ]; do printf '\t\tip saddr 10.8.%d.%d counter packets 0 bytes 0 drop # handle %d\n' $((i / 250)) $((i % 250)) $((i + 5000)); i=$((i + 1)); done
printf '\t}\n}\n'
"#;
    std::fs::write(&gen, script).unwrap();
    node.shim("nft", &format!("#!/bin/sh\nexec sh '{}'\n", gen.display()));
    let argv = script::argv_with_shell(&["sh"], &loopback_args());
    let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, "huge");
    let r = &out.firewall.after[0];
    let text = r.text.as_deref().unwrap_or_default();
    let shape = (r.lines, r.kept, r.cut, text.len());
    assert_eq!(r.lines, 6006, "{shape:?}");
    // The drops past what was sent are cut, and said.
    assert!(r.cut > 0 && r.kept > 500 && r.kept < 3000, "{shape:?}");
    assert!(text.len() <= 49152, "{shape:?}");
    assert!(!text.contains(" accept # handle"), "{shape:?}");
    // What the node sent of its firewall: each read's lists within their caps (two reads).
    let fw_bytes: usize = out
        .raw
        .as_str()
        .unwrap_or_default()
        .lines()
        .skip_while(|l| !l.starts_with("@firewall."))
        .take_while(|l| !l.starts_with("@errors"))
        .map(|l| l.len() + 1)
        .sum();
    assert!(fw_bytes < 2 * (2 * 49152 + 4096), "{fw_bytes}");
    // The hostile line cut at 512 bytes.
    let long = text.lines().nth(3).unwrap_or_default();
    assert!(
        long.starts_with("\t\tcomment \"xxx") && long.ends_with("..."),
        "{shape:?}"
    );
    assert_eq!(long.len(), 512 + 3);
    // What was kept still reads as rules: every kept drop (the table, chain and type lines and
    // the closing braces that came are no rule).
    let braces = text.lines().filter(|l| l.trim() == "}").count() as u64;
    let set = etcdnet::probe::firewall::Ruleset::parse_nft("nft", text);
    assert_eq!(
        set.chains[0].rules.len() as u64,
        r.kept - 3 - braces,
        "{shape:?}"
    );
}

/// A `curl` shim for etcd's metrics listener and `/health` as etcd 3.4 answers without a leader
/// (`{"health":"false"}`, no reason): `/metrics` answers `metrics.body` (to stdout, as the probe
/// asks), the alarm list is noted in `urls` and fails, the path checks go to the real curl.
fn curl_with_metrics(node: &Node, body: &[u8]) -> std::path::PathBuf {
    let real = which("curl").expect("curl installed (apt-get install curl)");
    let answer = node.path("metrics.body");
    std::fs::write(&answer, body).unwrap();
    let urls = node.path("urls");
    let shim = format!(
        r#"#!/bin/sh
url=
for a in "$@"; do case $a in http://* | https://*) url=$a ;; esac; done
printf '%s\n' "$url" >>{urls}
case $url in
*/metrics)
  while [ $# -gt 0 ]; do case $1 in -D) printf 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n' >"$2" && shift ;; esac; shift; done
  cat {answer}; exit 0 ;;
*/health)
  while [ $# -gt 0 ]; do case $1 in -o) printf '{{"health":"false"}}' >"$2" && shift ;; esac; shift; done
  printf '503 0.001'; exit 0 ;;
*/v3/maintenance/alarm) sleep 3; echo 'curl: (28) Operation timed out' >&2; exit 28 ;;
*) exec {real} "$@" ;;
esac
"#,
        urls = urls.display(),
        answer = answer.display(),
        real = real.display(),
    );
    node.shim("curl", &shim);
    urls
}

/// etcd's metrics, read before and after the checks: only the families the plugin reads (and
/// their `# TYPE` lines) are kept, escaped; `etcd_server_has_leader 0` before the checks skips
/// the alarm list on 3.4, whose `/health` body does not say why it is false (issue 30 item 7: it
/// used to wait its whole time for a quorum that is not there); the kept text is capped.
#[test]
fn metrics_are_kept_by_family_and_a_member_without_leader_is_not_asked_for_alarms() {
    use etcdnet::probe::metrics::Counters;
    use etcdnet::probe::output::QueryOutcome;
    let node = Node::new().with_pki();
    let real = crate::common::read("tests/fixtures/etcd-metrics/v3.4-no-leader.prom");
    let body = format!(
        "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 91\n\
         {real}etcd_server_has_leader_not 7\nprocess_open_fds{{x=\"\u{1b}[2J\"}} 3\r\n"
    );
    let urls = curl_with_metrics(&node, body.as_bytes());
    for shell in shells() {
        let what = shell.join(" ");
        let _ = std::fs::remove_file(&urls);
        let argv = script::argv_with_shell(&shell, &loopback_args());
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let m = out.metrics.as_ref().expect("metrics read");
        for (when, r) in [("before", &m.before), ("after", &m.after)] {
            assert_eq!(r.outcome, QueryOutcome::Ok, "{what}: {when}: {r:?}");
            assert_eq!(r.http_status, Some(200), "{what}: {when}");
            assert_eq!(r.detail.as_deref(), Some("http://127.0.0.1:2381/metrics"));
            assert!(!r.truncated, "{what}: {when}");
            let text = r.text.as_deref().unwrap();
            assert_eq!(
                text, real,
                "{what}: {when}: only the families read, as etcd wrote them"
            );
        }
        assert!(
            m.before.at_ms.unwrap() < m.after.at_ms.unwrap(),
            "{what}: {m:?}"
        );
        let c = Counters::parse(m.after.text.as_deref().unwrap());
        assert_eq!(c.has_leader, Some(false), "{what}");
        assert_eq!(c.peers.len(), 2, "{what}");
        assert_eq!(out.alarms.outcome, QueryOutcome::Skipped, "{what}");
        assert_eq!(
            out.alarms.detail.as_deref(),
            Some("not asked: etcd_server_has_leader is 0 (the list needs quorum)"),
            "{what}"
        );
        let asked = std::fs::read_to_string(&urls).unwrap();
        assert!(!asked.contains("/v3/maintenance/alarm"), "{what}: {asked}");
        assert_eq!(asked.matches("/metrics").count(), 2, "{what}: {asked}");
        assert!(out.errors.is_empty(), "{what}: {:?}", out.errors);
    }

    // With a leader the list is asked (and its timeout is data).
    let with_leader = real.replace("etcd_server_has_leader 0", "etcd_server_has_leader 1");
    let urls = curl_with_metrics(&node, with_leader.as_bytes());
    let argv = script::argv_with_shell(&["sh"], &loopback_args());
    let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, "leader");
    assert!(std::fs::read_to_string(&urls)
        .unwrap()
        .contains("/v3/maintenance/alarm"));
    assert_eq!(out.alarms.outcome, QueryOutcome::Error, "{:?}", out.alarms);

    // A body of the right families past the 64 KiB the probe keeps: cut, and said.
    let mut big = String::from("# TYPE etcd_network_peer_sent_failures_total counter\n");
    for i in 1..5000u64 {
        big.push_str(&format!(
            "etcd_network_peer_sent_failures_total{{To=\"{i:x}\"}} {i}\n"
        ));
    }
    curl_with_metrics(&node, big.as_bytes());
    let Run { out, .. } = check(node.command(&argv, &["sh"], "bin"), &node, "big");
    let r = &out.metrics.as_ref().unwrap().after;
    assert_eq!((r.outcome, r.truncated), (QueryOutcome::Ok, true));
    let kept = r.text.as_deref().unwrap();
    assert!(kept.len() <= 65536 && kept.len() > 60000, "{}", kept.len());
    assert!(kept.ends_with('\n'), "whole lines only");
}

/// The kube-apiserver: the probe fetches its container list, its newest container's log, its own
/// `/readyz?verbose` and `apiserver.crt` as raw text (bounded), and the plugin reads them: the
/// container crash looping at attempt 3 (the harness's crictl), `/readyz` 500 naming `etcd`, the
/// certificate expired (by the node's clock).
#[test]
fn the_api_server_is_fetched_raw_and_read_by_the_plugin() {
    use etcdnet::probe::apiserver::{self, ApiServerState, Readyz};
    use etcdnet::probe::output::QueryOutcome;
    let node = Node::new();
    let mut params = rcgen::CertificateParams::new(vec!["kubernetes".into()]).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(400);
    params.not_after = now - time::Duration::days(2);
    let key = rcgen::KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    std::fs::write(node.path("pki/apiserver.crt"), &pem).unwrap();
    let real = which("curl").expect("curl installed (apt-get install curl)");
    // /readyz?verbose answers as a kube-apiserver whose etcd has no leader (handleRootHealth).
    node.shim(
        "curl",
        &format!(
            r#"#!/bin/sh
case "$*" in *6443/readyz*) ;; *) exec {real} "$@" ;; esac
while [ $# -gt 0 ]; do case $1 in -o) o=$2 && shift ;; esac; shift; done
printf '[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n' >"$o"
printf '500 0.004'
exit 0
"#,
            real = real.display()
        ),
    );
    let opts = ProbeArgs::new("127.77.0.1", Vec::<String>::new());
    for shell in shells() {
        let what = shell.join(" ");
        let argv = script::argv_with_shell(&shell, &opts);
        let Run { out, .. } = check(node.command(&argv, &shell, "bin"), &node, &what);
        let read = out
            .api_server
            .as_ref()
            .expect("the probe reads the API server");
        assert_eq!(read.containers.outcome, QueryOutcome::Ok, "{what}");
        assert!(read
            .containers
            .text
            .as_deref()
            .unwrap()
            .contains("\"kube-apiserver\""));
        assert_eq!(
            read.logs.as_ref().unwrap().container_id,
            "4444dddd",
            "{what}"
        );
        assert_eq!(read.readyz.http_status, Some(500), "{what}");
        assert_eq!(
            read.cert.outcome,
            QueryOutcome::Ok,
            "{what}: {:?}",
            read.cert
        );
        assert_eq!(read.cert.text.as_deref().map(str::trim), Some(pem.trim()));
        let a = apiserver::read(read, out.clock_ms);
        assert_eq!(a.containers.len(), 1, "{what}: {:?}", a.containers);
        assert_eq!(a.containers[0].attempt, Some(3));
        assert_eq!(
            a.readyz,
            Readyz::NotReady {
                status: 500,
                failed: vec!["etcd".into()]
            }
        );
        assert_eq!(a.state, ApiServerState::CertificateExpired, "{what}");
    }
}
