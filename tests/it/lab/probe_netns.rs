//! The real embedded probe in private network + PID namespaces (root, `unshare`, `ip`, `nft`,
//! `openssl s_server`; ignored unless built as root, see build.rs): nothing listening (Refused),
//! nftables drop (Timeout), ICMP reject (NoRoute), large packets dropped (TLS Stalled), bad
//! certificates (Rejected), good ones (Completed), and a real etcd (Debian's etcd-server).

use crate::common::probe as probe_support;

use std::process::Command;
use std::time::Duration;

use etcdnet::probe::output::{HealthOutcome, TcpOutcome, TlsOutcome};
use etcdnet::probe::script::{self, ProbeArgs};
use probe_support::*;

// --- in private network and PID namespaces ----------------------------------------------------

/// Sets up the namespace, then runs the probe (the argv after the dir) with the test's own
/// stdout and stderr. Everything in the PID namespace dies with it (--kill-child, PID 1 exits).
const WRAPPER: &str = include_str!("../../fixtures/probe-output/harness/netns-wrapper.sh");

const UNSHARE: [&str; 5] = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"];

struct Lab {
    servers: Vec<String>,
    addrs: Vec<String>,
    rules: String,
    extra: String,
}

impl Lab {
    /// Panics, naming what is missing, where namespaces or the tools are not available: these
    /// tests are compiled as ignored unless built as root (see build.rs).
    fn require(what: &str) {
        for tool in ["unshare", "ip", "ss", "nft", "openssl", "curl"] {
            assert!(
                which(tool).is_some(),
                "{what}: {tool} not installed (install .ci/lab-packages)"
            );
        }
        let ok = Command::new(which("unshare").unwrap())
            .args(UNSHARE)
            .arg("true")
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "{what}: cannot create network and PID namespaces (needs root; ETCDNET_LAB=0 counts these tests as ignored)"
        );
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
        // The namespace is a node: its listeners (the peers' etcd) and the probe run at the lab's
        // machine priority, ahead of the test processes, as every lab node's commands do
        // (tests/lab/README.md, "CPU"): a VM has CPUs of its own, and on the shared test
        // machine an openssl server starved past the TLS timeout would be a stall we made.
        etcdnet_lab::as_machine(&mut cmd);
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

// Long: the stalled, dropped and unreachable paths each wait out the probe's connect and TLS
// timeouts, against real listeners in private namespaces.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn every_outcome_against_real_listeners() {
    Lab::require("network outcomes");
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
    // 20 checks, one curl each, at most 16 at once.
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
    // A curl that notes every call making checks before it runs.
    let calls = node.path("curl-calls");
    node.curl_noting_checks(&calls);
    for shell in shells() {
        let _ = std::fs::remove_file(&calls);
        let what = shell.join(" ");
        let Run { out, wall } = lab.run(&node, &shell, &opts);
        assert_eq!(out.paths.len(), 20, "{what}");
        let made = std::fs::read_to_string(&calls).unwrap();
        assert_eq!(
            made.lines().count(),
            20,
            "{what}: curls for the checks\n{made}"
        );
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
        // The probe keeps its own bound (ProbeArgs::expected_duration: the checks 16 at a time,
        // each ended by its connect or TLS timeout, and a second for the rest; 7 s here), not
        // TCP's: a dropped SYN is retried for ~127 s (tcp_syn_retries 6,
        // Documentation/networking/ip-sysctl.rst), and the 20 checks one after another would
        // take a minute. Read on the probe's own clock (its document's duration): the wall
        // adds the namespace's set-up (nftables, fifteen openssl servers), which a busy machine
        // stretches (6.5 s under a load of 18, the probe 3.4 s of it) and which is no bound of
        // the probe's.
        let probe_ms = out.duration_ms.unwrap();
        let bound = opts.expected_duration();
        assert!(
            probe_ms <= bound.as_millis() as u64,
            "{what}: the probe took {probe_ms} ms (wall {wall:?}), more than {bound:?}"
        );
        eprintln!("{what}: all outcomes in {wall:?} (probe {probe_ms} ms)");
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn six_unreachable_peers_end_within_the_timeouts() {
    Lab::require("timing");
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
    // The 12 checks run at once, each ended at the connect timeout by the probe's watchdog:
    // less than two checks' bounds in all, where one after another they would take 24 s and
    // on TCP's own timeouts minutes (a dropped SYN is retried for ~127 s, tcp_syn_retries 6,
    // Documentation/networking/ip-sysctl.rst). Read on the probe's own clock (its document's
    // duration), not the wall, which adds the namespace's set-up that a busy machine stretches.
    let bound = Duration::from_secs(2 * u64::from(connect + tls));
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, wall } = lab.run(&node, &shell, &opts);
        let timeouts = out.paths.iter().filter(|p| p.tcp == TcpOutcome::Timeout);
        assert_eq!(timeouts.count(), 12, "{what}: {:?}", out.paths);
        let probe_ms = out.duration_ms.unwrap();
        assert!(
            probe_ms < bound.as_millis() as u64,
            "{what}: 6 unreachable peers took {probe_ms} ms (wall {wall:?}), more than {bound:?}"
        );
        eprintln!("{what}: 6 unreachable peers (12 paths) in {wall:?} wall, probe {probe_ms} ms; bound {bound:?}");
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn real_etcd_on_its_own_node() {
    Lab::require("real etcd");
    assert!(
        which("etcd").is_some(),
        "real etcd: etcd not installed (apt-get install etcd-server)"
    );
    // No health check client certificate: /health is read from the metrics listener instead.
    let node = Node::new().with_pki();
    for f in ["healthcheck-client.crt", "healthcheck-client.key"] {
        std::fs::remove_file(node.path("pki/etcd").join(f)).unwrap();
    }
    let extra = include_str!("../../fixtures/probe-output/harness/etcd.sh");
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

/// A listener that completes the TLS handshake and never answers the request (something that is
/// not etcd, or one too busy to serve): `NoHttpAnswer`, never `Completed`, whether the checks run
/// one after another or at once.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_handshake_without_an_http_answer_is_no_http_answer() {
    Lab::require("no HTTP answer");
    let node = Node::new().with_pki();
    let lab = Lab {
        servers: [
            servers(&[("198.18.0.1", "server", "ca")]),
            servers(&[("198.18.0.10", "v6", "-")])
                .into_iter()
                .map(|s| s + " silent")
                .collect(),
            vec!["127.0.0.1 2379 server ca".into()],
        ]
        .concat(),
        addrs: vec!["198.18.0.1".into(), "198.18.0.10".into()],
        rules: String::new(),
        extra: String::new(),
    };
    let per_path = ProbeArgs {
        connect_timeout_s: 1,
        tls_timeout_s: 1,
        parallel: 1,
        ..ProbeArgs::new("198.18.0.1", ["198.18.0.10"])
    };
    let at_once = ProbeArgs {
        parallel: 16,
        ..per_path.clone()
    };
    for opts in [&per_path, &at_once] {
        let what = format!("--parallel {}", opts.parallel);
        let Run { out, .. } = lab.run(&node, &["sh"], opts);
        let got: Vec<String> = (out.paths.iter())
            .map(|p| {
                let d = p.tls_detail.as_deref().unwrap_or("");
                let d = d.split(':').next().unwrap_or("");
                format!("{}:{} {:?} {:?} {d}", p.target, p.port, p.tcp, p.tls)
            })
            .collect();
        let want = [
            "198.18.0.1:2379 Connected Completed ",
            "198.18.0.1:2380 Connected Completed ",
            "198.18.0.10:2379 Connected NoHttpAnswer no HTTP answer after the handshake",
            "198.18.0.10:2380 Connected NoHttpAnswer no HTTP answer after the handshake",
        ];
        assert_eq!(got, want, "{what}");
    }
}

/// An IPv6 node against real TLS listeners: its own paths and /health on `[::1]` complete, the
/// member list is read from `https://[self]:2380/members`, the targets carry no brackets.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn an_ipv6_node_against_real_listeners() {
    use etcdnet::probe::output::QueryOutcome;
    Lab::require("IPv6");
    let node = Node::new().with_pki();
    std::fs::create_dir_all(node.path("www")).unwrap();
    let members = r#"[{"id":10501334649042878790,"name":"cp1","peerURLs":["https://[fd00:db8::1]:2380"],"clientURLs":["https://[fd00:db8::1]:2379"]}]"#;
    std::fs::write(node.path("www/members"), members).unwrap();
    let lab = Lab {
        servers: [
            servers(&[("fd00:db8::1", "v6", "ca"), ("fd00:db8::2", "v6", "ca")]),
            vec!["::1 2379 v6 ca".into()],
        ]
        .concat(),
        addrs: vec!["fd00:db8::1".into(), "fd00:db8::2".into()],
        rules: "chain input { type filter hook input priority 0;
          ip6 daddr fd00:db8::2 tcp dport 2379 reject with tcp reset; }"
            .into(),
        extra: String::new(),
    };
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        tls_timeout_s: 1,
        ..ProbeArgs::new("fd00:db8::1", ["fd00:db8::2"])
    };
    for shell in shells() {
        let what = shell.join(" ");
        let Run { out, .. } = lab.run(&node, &shell, &opts);
        let got: Vec<String> = (out.paths.iter())
            .map(|p| {
                format!(
                    "{}:{} {:?} {:?} {:?}",
                    p.target, p.port, p.tcp, p.tls, p.http_status
                )
            })
            .collect();
        let want = [
            "fd00:db8::1:2379 Connected Completed Some(200)",
            "fd00:db8::1:2380 Connected Completed Some(200)",
            "fd00:db8::2:2379 Refused NotTried None",
            "fd00:db8::2:2380 Connected Completed Some(200)",
        ];
        assert_eq!(got, want, "{what}");
        let health = (out.health.outcome, out.health.detail.as_deref());
        assert_eq!(
            health,
            (HealthOutcome::Healthy, Some("https://[::1]:2379/health")),
            "{what}"
        );
        let m = &out.members;
        assert_eq!(m.outcome, QueryOutcome::Ok, "{what}: {m:?}");
        assert_eq!(
            m.detail.as_deref(),
            Some("https://[fd00:db8::1]:2380/members")
        );
        let first = &m.members[0];
        assert_eq!(
            first.id.map(|i| i.to_string()).as_deref(),
            Some("91bc3c398fb3c146"),
            "{what}"
        );
        assert_eq!(first.peer_urls, ["https://[fd00:db8::1]:2380"]);
    }
}

/// The node's own firewall, for real: a rule with a counter drops the peer's 2379 and 2380 in
/// the namespace's nftables; the probe reads the ruleset before and after its checks (real
/// `nft`), the counter grows between the two reads, and the plugin places the failing paths
/// `inside the guest`, naming the rule. The same document without the rule's counter growing
/// (a second node with an empty ruleset at the other end) would be `outside the guests`.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_counting_drop_rule_in_the_namespace_is_inside_the_guest() {
    use etcdnet::analyse::location::{self, Place};
    use etcdnet::analyse::matrix;
    use etcdnet::probe::firewall::ReadOutcome;
    use etcdnet::probe::NodeReport;

    Lab::require("firewall reads");
    let node = Node::new();
    let lab = Lab {
        servers: vec![],
        addrs: vec!["198.18.0.1".into(), "198.18.0.2".into()],
        rules: "chain input { type filter hook input priority 0; policy accept;
          ip daddr 198.18.0.2 tcp dport { 2379, 2380 } counter drop; }"
            .into(),
        extra: String::new(),
    };
    let opts = ProbeArgs {
        connect_timeout_s: 1,
        tls_timeout_s: 1,
        ..ProbeArgs::new("198.18.0.1", ["198.18.0.2"])
    };
    let Run { out, .. } = lab.run(&node, &["sh"], &opts);
    let fw = &out.firewall;
    let nft = |reads: &[etcdnet::probe::firewall::FirewallRead]| {
        reads.iter().find(|r| r.tool == "nft").cloned().unwrap()
    };
    let (before, after) = (nft(&fw.before), nft(&fw.after));
    assert_eq!(
        (before.outcome, after.outcome),
        (ReadOutcome::Ok, ReadOutcome::Ok),
        "{fw:?}"
    );
    assert!(
        before
            .text
            .as_deref()
            .unwrap_or_default()
            .contains("counter packets 0 bytes 0 drop"),
        "read before the checks: {before:?}"
    );
    assert!(
        !after
            .text
            .as_deref()
            .unwrap_or_default()
            .contains("counter packets 0 bytes 0 drop"),
        "read after the checks, the SYNs counted: {after:?}"
    );
    // Node a is the probed namespace; node b, the peer, read the same ruleset (the namespace
    // is both ends here).
    let a = NodeReport {
        name: "a".into(),
        ip: Some("198.18.0.1".parse().unwrap()),
        outcome: Ok(out.clone()),
        reach_from: None,
        reach: vec![],
        host_key: None,
    };
    let mut b_doc = out.clone();
    b_doc.node_ip = "198.18.0.2".into();
    b_doc.paths.clear();
    let b = NodeReport {
        name: "b".into(),
        ip: Some("198.18.0.2".parse().unwrap()),
        outcome: Ok(b_doc),
        reach_from: None,
        reach: vec![],
        host_key: None,
    };
    let nodes = [a, b];
    let m = [matrix::build(&nodes, 2379), matrix::build(&nodes, 2380)];
    let loc =
        location::locate(&nodes, &m, etcdnet::supervisor::NetworkStack::Unknown).expect("read");
    assert_eq!(loc.paths.len(), 2, "{loc:?}");
    for p in &loc.paths {
        assert_eq!(p.place, Place::InsideGuest, "{loc:?}");
        assert!(
            p.rules.iter().any(|r| r.table == "inet probetest"
                && r.chain == "input"
                && r.packets.is_some_and(|n| n >= 1)),
            "{loc:?}"
        );
    }
    let ev = location::evidence(&loc).join("\n");
    assert!(
        ev.contains("own firewall drops it, inside the guest: nft inet probetest input handle"),
        "{ev}"
    );
}
