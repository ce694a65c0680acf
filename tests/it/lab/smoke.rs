//! Smoke tests of the lab itself (tests/lab, crate etcdnet-lab): real etcd clusters in network
//! namespaces, the crictl/systemctl stand-ins, the node and pod views, every fault as a client
//! sees it, and teardown. They need root and the lab's packages (.ci/lab-packages); elsewhere
//! they are compiled as ignored (build.rs).
//!
//! Each test owns one lab; labs are isolated, so the tests run in parallel.

use super::ip;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdnet_lab::{require, Curl, Fault, Lab, LabConfig, Logger};

const EXEC: Duration = Duration::from_secs(30);
const HEAL: Duration = Duration::from_secs(30);

fn start(cfg: LabConfig) -> Lab {
    let cfg = LabConfig {
        start_timeout: Duration::from_secs(60),
        ..cfg
    };
    let nodes = cfg.nodes;
    let lab = Lab::start(cfg).expect("lab starts");
    eprintln!(
        "lab {} ({nodes} nodes) started in {:?}",
        lab.id(),
        lab.started_in()
    );
    lab
}

fn curl(lab: &Lab, from: &str, url: &str, max_time: u64) -> Curl {
    lab.curl(from, url, Duration::from_secs(max_time))
        .expect("curl runs")
}

/// Asserts curl's exit code from `from` to `to`:`port` (28 timeout, 7 refused, 60 bad cert, 0 ok).
fn expect(lab: &Lab, from: &str, to: &str, port: u16, code: i32) -> Curl {
    let url = format!("https://{}:{port}/version", ip(lab, to));
    let c = curl(lab, from, &url, 5);
    assert_eq!(
        c.code, code,
        "{from} -> {to}:{port}: expected curl exit {code}, got {}\n{}",
        c.code, c.stderr
    );
    c
}

/// Polls `ok` for up to 20 s (an election after losing the leader takes a few seconds).
fn eventually(what: &str, ok: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "not within 20 s: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`expect`], retried for a restarted member that is not listening (7) or not serving (28) yet.
fn expect_soon(lab: &Lab, from: &str, to: &str, port: u16, code: i32) -> Curl {
    let url = format!("https://{}:{port}/version", ip(lab, to));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = curl(lab, from, &url, 3);
        if c.code == code || ![7, 28].contains(&c.code) || Instant::now() > deadline {
            assert_eq!(c.code, code, "{from} -> {to}:{port}: {}", c.stderr);
            return c;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn sh(lab: &Lab, node: &str, script: &str) -> (i32, String, String) {
    let out = lab
        .exec(node, &["sh", "-c", script], None, EXEC)
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The cells of a crictl table row (cells are separated by at least three spaces).
fn columns(row: &str) -> Vec<&str> {
    row.split("   ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

fn heal(lab: &Lab) {
    lab.heal().expect("heal");
    lab.wait_recovered(HEAL).expect("healthy again after heal");
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn three_node_lab_is_healthy_and_looks_like_kubeadm_nodes() {
    require("three_node_lab_is_healthy_and_looks_like_kubeadm_nodes");
    let host_hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let host_had_kubernetes = Path::new("/etc/kubernetes").exists();
    let lab = start(LabConfig {
        logger: Logger::Mixed,
        ..LabConfig::default()
    });
    // /health through each member's own IP and through a peer's, from inside the nodes.
    for (from, to) in [
        ("cp1", "cp1"),
        ("cp2", "cp1"),
        ("cp3", "cp2"),
        ("cp1", "cp3"),
    ] {
        let c = curl(
            &lab,
            from,
            &format!("https://{}:2379/health", ip(&lab, to)),
            5,
        );
        assert_eq!(c.code, 0, "{from} -> {to}: {}", c.stderr);
        assert!(
            c.stdout.contains(r#""health":"true""#),
            "{from} -> {to}: {}",
            c.stdout
        );
    }

    // crictl ps --name etcd: the real etcd, Running, attempt 0, in crictl's table layout.
    let (code, out, err) = sh(&lab, "cp1", "crictl ps --name etcd");
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("CONTAINER           IMAGE               CREATED"),
        "{out}"
    );
    assert!(
        lines[0].ends_with("ATTEMPT             POD ID              POD"),
        "{out}"
    );
    let id = lab.container_id("cp1").unwrap();
    assert!(lines[1].starts_with(&id[..13]), "{out}");
    assert!(
        lines[1].contains("Running") && lines[1].contains("etcd-cp1"),
        "{out}"
    );
    let (_, json, _) = sh(&lab, "cp1", "crictl ps -a -o json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("crictl -o json is JSON");
    assert_eq!(v["containers"][0]["state"], "CONTAINER_RUNNING");
    assert_eq!(v["containers"][0]["metadata"]["attempt"], 0);
    assert_eq!(v["containers"][0]["id"], id.as_str());

    // crictl logs: the real log, on stderr like crictl, zap JSON on cp1 and capnslog on cp2.
    let (code, out, err) = sh(
        &lab,
        "cp1",
        "crictl logs --tail 5 $(crictl ps -q --name etcd)",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "etcd's stream is stderr: {out}");
    let zap: Vec<&str> = err.lines().collect();
    assert_eq!(zap.len(), 5, "{err}");
    for l in zap {
        let v: serde_json::Value = serde_json::from_str(l).expect("zap JSON line");
        assert!(v["level"].is_string() && v["caller"].is_string(), "{l}");
    }
    let (_, _, text) = sh(&lab, "cp2", "crictl logs --tail 5 $(crictl ps -q)");
    // `2026-11-30 09:12:44.123456 W | pkg: msg`, or raft's own `raft2026/11/30 09:12:44 INFO: msg`.
    let capnslog = |l: &str| {
        let b = l.as_bytes();
        (b.len() > 31
            && b[4] == b'-'
            && b[10] == b' '
            && b[19] == b'.'
            && b[26] == b' '
            && &l[28..31] == " | ")
            || l.starts_with("raft20")
    };
    assert!(
        text.lines().count() == 5 && text.lines().all(capnslog),
        "{text}"
    );

    // The node view: hostname, kubeadm's files at kubeadm's paths, etcd's real command line.
    let pid = lab.etcd_pid("cp2").expect("cp2's etcd runs");
    let (_, out, _) = sh(
        &lab,
        "cp2",
        &format!(
            "hostname; cat /etc/hostname; ls /var/lib/etcd; grep -c -- '- --' /etc/kubernetes/manifests/etcd.yaml; \
             ls /etc/kubernetes/pki/etcd | tr '\\n' ' '; echo; tr '\\0' ' ' </proc/{pid}/cmdline"
        ),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..3], ["cp2", "cp2", "member"], "{out}");
    assert_eq!(
        lines[3], "19",
        "kubeadm's 19 flags (text logger: no --logger): {out}"
    );
    assert_eq!(
        lines[4].trim(),
        "ca.crt ca.key healthcheck-client.crt healthcheck-client.key peer.crt peer.key server.crt server.key"
    );
    assert!(
        lines[5].starts_with("etcd --advertise-client-urls=https://198.18.0.12:2379 "),
        "{out}"
    );
    assert!(lines[5].contains(" --initial-cluster=cp1=https://198.18.0.11:2380,cp2=https://198.18.0.12:2380,cp3=https://198.18.0.13:2380 "));
    // Certificates as kubeadm makes them.
    let (_, out, _) = sh(
        &lab,
        "cp1",
        "openssl x509 -in /etc/kubernetes/pki/etcd/peer.crt -noout -text",
    );
    for want in [
        "Subject: CN = cp1",
        "Issuer: CN = etcd-ca",
        "DNS:cp1, DNS:localhost, IP Address:198.18.0.11, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1",
        "TLS Web Server Authentication, TLS Web Client Authentication",
        "Public-Key: (2048 bit)",
    ] {
        assert!(out.contains(want), "peer.crt lacks {want:?}:\n{out}");
    }
    let (_, out, _) = sh(
        &lab,
        "cp1",
        "openssl x509 -in /etc/kubernetes/pki/etcd/healthcheck-client.crt -noout -subject",
    );
    assert!(out.contains("CN = kube-etcd-healthcheck-client"), "{out}");
    assert!(
        sh(&lab, "cp1", "head -1 /etc/kubernetes/pki/etcd/server.key")
            .1
            .contains("BEGIN RSA PRIVATE KEY")
    );

    // systemctl: the kubelet stand-in.
    assert_eq!(sh(&lab, "cp3", "systemctl is-active kubelet").1, "active\n");
    assert!(sh(
        &lab,
        "cp3",
        "systemctl show kubelet -p ActiveEnterTimestamp"
    )
    .1
    .starts_with("ActiveEnterTimestamp="));
    lab.set_kubelet_active("cp3", false).unwrap();
    let (code, out, _) = sh(&lab, "cp3", "systemctl is-active kubelet");
    assert_eq!((code, out.as_str()), (3, "inactive\n"));

    // The pod view: the host's / with the node at /host.
    let cmd = lab
        .pod_command(
            "cp1",
            &[
                "sh",
                "-c",
                "test ! -e /host/.view && hostname && chroot /host crictl ps --name etcd",
            ],
        )
        .unwrap();
    let out = etcdnet_lab::run_with_timeout(cmd, None, EXEC).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("cp1\nCONTAINER") && text.contains("Running"),
        "{text}"
    );

    // None of it reached the host.
    assert_eq!(
        std::fs::read_to_string("/etc/hostname").unwrap_or_default(),
        host_hostname
    );
    assert_eq!(Path::new("/etc/kubernetes").exists(), host_had_kubernetes);
}

/// The lab never assumes a pristine host: on one with a `/host` directory of its own, a pod view
/// still starts, and its `/host` is the node, not the host's directory.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_host_with_its_own_host_directory_still_gets_pod_views() {
    require("a_host_with_its_own_host_directory_still_gets_pod_views");
    /// `/host`, made for this test when the host has none, and removed again (also on a panic).
    struct Made(bool);
    impl Drop for Made {
        fn drop(&mut self) {
            if self.0 {
                let _ = std::fs::remove_dir_all("/host");
            }
        }
    }
    let made = Made(!Path::new("/host").exists() && std::fs::create_dir("/host").is_ok());
    if made.0 {
        std::fs::write("/host/etcdnet-lab-marker", "the host's own /host\n").unwrap();
    }
    assert!(Path::new("/host").is_dir(), "no /host to test with");
    let lab = start(LabConfig {
        nodes: 1,
        ..LabConfig::default()
    });
    let script =
        "test ! -e /host/etcdnet-lab-marker && test -e /host/etc/kubernetes/pki/etcd/ca.crt \
                  && chroot /host crictl ps --name etcd";
    let cmd = lab.pod_command("cp1", &["sh", "-c", script]).unwrap();
    let out = etcdnet_lab::run_with_timeout(cmd, None, EXEC).unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Running"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(lab);
    if made.0 {
        assert!(
            Path::new("/host/etcdnet-lab-marker").exists(),
            "the host's /host is untouched"
        );
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn faults_drop_reject_and_one_port() {
    require("faults_drop_reject_and_one_port");
    let lab = start(LabConfig::default());

    lab.inject(Fault::DropAllPeers).unwrap();
    let c = expect(&lab, "cp1", "cp2", 2379, 28);
    assert!(
        c.stderr.contains("Timeout was reached") || c.stderr.contains("timed out"),
        "{}",
        c.stderr
    );
    expect(&lab, "cp2", "cp3", 2380, 28);
    expect(&lab, "cp1", "cp1", 2379, 0); // own IP untouched
                                         // The jumpbox (admin / Supervisor side) is no member: it still gets through.
    let pki = lab.node("cp2").unwrap().etcd_pki();
    let p = |f: &str| pki.join(f).to_string_lossy().into_owned();
    let out = etcdnet_lab::run_with_timeout(
        lab.jumpbox_command(&[
            "curl",
            "-sS",
            "--connect-timeout",
            "2",
            "--cacert",
            &p("ca.crt"),
            "--cert",
            &p("healthcheck-client.crt"),
            "--key",
            &p("healthcheck-client.key"),
            "https://198.18.0.12:2379/version",
        ]),
        None,
        EXEC,
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    heal(&lab);

    lab.inject(Fault::RejectAllPeers).unwrap();
    let c = expect(&lab, "cp1", "cp2", 2379, 7);
    assert!(c.stderr.contains("Connection refused"), "{}", c.stderr);
    expect(&lab, "cp3", "cp1", 2380, 7);
    expect(&lab, "cp2", "cp2", 2380, 0);
    heal(&lab);

    lab.inject(Fault::BlockPort(2380)).unwrap();
    expect(&lab, "cp1", "cp2", 2380, 28);
    expect(&lab, "cp1", "cp2", 2379, 0);
    lab.heal().unwrap();
    lab.inject(Fault::BlockPort(2379)).unwrap();
    expect(&lab, "cp1", "cp2", 2379, 28);
    expect(&lab, "cp1", "cp2", 2380, 0);
    assert_eq!(lab.faults(), vec![Fault::BlockPort(2379)]);
    heal(&lab);
    assert!(lab.faults().is_empty());
}

// Long: three faults in turn, each checked with real connections (the dropped ones waiting out
// their timeouts) and healed until etcd has a quorum again.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn faults_isolate_one_way_and_large_packets() {
    require("faults_isolate_one_way_and_large_packets");
    let lab = start(LabConfig::default());

    lab.inject(Fault::Isolate("cp3".into())).unwrap();
    expect(&lab, "cp3", "cp1", 2379, 28);
    expect(&lab, "cp1", "cp3", 2380, 28);
    expect(&lab, "cp1", "cp2", 2380, 0);
    expect(&lab, "cp3", "cp3", 2379, 0);
    // cp1 and cp2 keep quorum (after an election if cp3 led); cp3 alone has none.
    eventually("cp1 and cp2 healthy, cp3 not", || {
        lab.health("cp1").unwrap() && lab.health("cp2").unwrap() && !lab.health("cp3").unwrap()
    });
    heal(&lab);

    lab.inject(Fault::DropOneWay {
        from: "cp1".into(),
        to: "cp2".into(),
    })
    .unwrap();
    expect(&lab, "cp1", "cp2", 2379, 28);
    expect(&lab, "cp2", "cp1", 2379, 0);
    expect(&lab, "cp1", "cp3", 2379, 0);
    heal(&lab);

    lab.inject(Fault::DropLargePackets).unwrap();
    let c = curl(&lab, "cp1", "https://198.18.0.12:2379/version", 4);
    assert_eq!(c.code, 28, "{}", c.stderr);
    assert!(
        c.stderr.contains("Connected to 198.18.0.12"),
        "TCP connects: {}",
        c.stderr
    );
    assert!(
        c.stderr.contains("Client hello") && !c.stderr.contains("Server finished"),
        "TLS stalls: {}",
        c.stderr
    );
    expect(&lab, "cp1", "cp1", 2379, 0);
    heal(&lab);
}

/// `nft list ruleset` in a node's own namespace (what its firewall holds) or in the switch's.
fn ruleset(netns: &str) -> String {
    let out = etcdnet_lab::run_with_timeout(
        {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", netns, "nft", "list", "ruleset"]);
            c
        },
        None,
        EXEC,
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every node's own ruleset is empty: nothing inside the guests.
fn guests_empty(lab: &Lab) {
    for n in lab.nodes() {
        assert_eq!(ruleset(&n.netns).trim(), "", "{}'s own ruleset", n.name);
    }
}

// Long: four faults in turn (the dropped paths waiting out their timeouts), and a disk whose
// fdatasyncs each wait 1.2 s; healed until etcd has a quorum again.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn faults_in_the_fabric_in_a_guest_and_on_a_disk() {
    require("faults_in_the_fabric_in_a_guest_and_on_a_disk");
    let lab = start(LabConfig::default());
    guests_empty(&lab);

    // The NSX stand-ins live in the switch: a node's own firewall has nothing to show.
    lab.inject(Fault::DropAllPeers).unwrap();
    expect(&lab, "cp1", "cp2", 2380, 28);
    guests_empty(&lab);
    let fabric = ruleset(lab.switch_netns());
    assert!(
        fabric.contains("hook ingress device \"v1\"")
            && fabric.contains("tcp dport { 2379, 2380 } drop"),
        "{fabric}"
    );
    heal(&lab);
    assert!(!ruleset(lab.switch_netns()).contains("drop"), "healed");

    // One pair cut, both ways; the others talk.
    let before = std::time::SystemTime::now();
    let at = lab
        .inject_at(
            Fault::CutPair {
                a: "cp1".into(),
                b: "cp2".into(),
            },
            Instant::now() + Duration::from_millis(300),
        )
        .unwrap();
    let waited = at.duration_since(before).unwrap();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    expect(&lab, "cp1", "cp2", 2380, 28);
    expect(&lab, "cp2", "cp1", 2379, 28);
    expect(&lab, "cp1", "cp3", 2380, 0);
    expect(&lab, "cp3", "cp2", 2379, 0);
    guests_empty(&lab);
    heal(&lab);

    // The one fault inside a guest: cp2's own nftables, counting what it drops.
    lab.inject(Fault::GuestFirewall("cp2".into())).unwrap();
    expect(&lab, "cp1", "cp2", 2380, 28);
    expect(&lab, "cp2", "cp1", 2380, 0);
    let own = ruleset(&lab.node("cp2").unwrap().netns);
    let rule = own
        .lines()
        .find(|l| l.contains("ip saddr"))
        .unwrap_or_else(|| panic!("{own}"));
    assert!(own.contains("table inet filter"), "{own}");
    assert!(
        rule.contains(&ip(&lab, "cp1")) && rule.contains(&ip(&lab, "cp3")),
        "{rule}"
    );
    let packets: u64 = rule
        .split("counter packets ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter: {rule}"));
    assert!(packets > 0, "the dropped SYNs counted: {rule}");
    assert!(
        !ruleset(lab.switch_netns()).contains("drop"),
        "nothing in the fabric"
    );
    assert_eq!(ruleset(&lab.node("cp1").unwrap().netns).trim(), "");
    heal(&lab);
    guests_empty(&lab);

    lab.inject(Fault::GuestFirewallUncounted("cp3".into()))
        .unwrap();
    expect(&lab, "cp1", "cp3", 2379, 28);
    let own = ruleset(&lab.node("cp3").unwrap().netns);
    assert!(
        own.contains("tcp dport { 2379, 2380 } drop") && !own.contains("counter"),
        "{own}"
    );
    heal(&lab);
    guests_empty(&lab);

    // A slow disk: cp2's fdatasyncs wait, etcd says so in its log, and heal leaves the same
    // process running untraced.
    let pid = lab.etcd_pid("cp2").unwrap();
    lab.inject(Fault::SlowDisk("cp2".into())).unwrap();
    let tracer = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .map(|v| v.trim().to_string())
    };
    assert_ne!(tracer(pid).as_deref(), Some("0"), "traced");
    let log = lab.node("cp2").unwrap().log_file();
    let slow = || {
        let log = std::fs::read_to_string(&log).unwrap();
        log.contains("slow fdatasync") || log.contains("wal: sync duration of")
    };
    assert!(!slow(), "not slow before the fault");
    for i in 0..3 {
        lab.etcdctl("cp1", &["put", &format!("slow-disk-{i}"), "x"])
            .unwrap();
    }
    eventually("cp2's etcd logs a slow fdatasync", slow);
    heal(&lab);
    assert_eq!(lab.etcd_pid("cp2"), Some(pid), "the same etcd");
    assert_eq!(tracer(pid).as_deref(), Some("0"), "untraced after heal");
    lab.etcdctl("cp2", &["put", "after-heal", "x"]).unwrap();
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn faults_expired_certificates_and_stopped_etcd() {
    require("faults_expired_certificates_and_stopped_etcd");
    let lab = start(LabConfig::default());

    lab.inject(Fault::ExpiredPeerCert("cp2".into())).unwrap();
    assert_eq!(
        lab.attempt("cp2").unwrap(),
        1,
        "restarted with the expired certificate"
    );
    let c = expect_soon(&lab, "cp1", "cp2", 2380, 60);
    assert_eq!(c.code, 60, "{}", c.stderr);
    assert!(c.stderr.contains("certificate has expired"), "{}", c.stderr);
    // The server certificate is still valid, but a restarted etcd serves clients only once it
    // has rejoined its cluster: its listener accepts TCP, the TLS handshake waits (real etcd).
    let c = expect(&lab, "cp1", "cp2", 2379, 28);
    assert!(
        c.stderr.contains("Connected to 198.18.0.12"),
        "{}",
        c.stderr
    );
    heal(&lab);
    assert_eq!(lab.attempt("cp2").unwrap(), 2);

    lab.inject(Fault::ExpiredServerCert("cp3".into())).unwrap();
    let c = expect_soon(&lab, "cp1", "cp3", 2379, 60);
    assert!(c.stderr.contains("certificate has expired"), "{}", c.stderr);
    heal(&lab);

    lab.inject(Fault::StopEtcd("cp2".into())).unwrap();
    assert_eq!(lab.etcd_pid("cp2"), None);
    expect(&lab, "cp1", "cp2", 2379, 7);
    expect(&lab, "cp2", "cp2", 2379, 7);
    let (_, out, _) = sh(
        &lab,
        "cp2",
        "crictl ps --name etcd; echo ---; crictl ps -a --name etcd",
    );
    let (running, all) = out.split_once("---\n").unwrap();
    assert_eq!(running.lines().count(), 1, "only the header: {out}");
    let exited = columns(all.lines().nth(1).unwrap_or_default());
    assert_eq!((exited[3], exited[5]), ("Exited", "2"), "{out}");
    let (_, out, _) = sh(&lab, "cp2", "crictl inspect $(crictl ps -a -q | head -1)");
    let v: serde_json::Value = serde_json::from_str(&out).expect("inspect JSON");
    assert_eq!(v["status"]["exitCode"], 137, "{out}");
    assert_eq!(v["status"]["state"], "CONTAINER_EXITED");
    heal(&lab);
    let (_, out, _) = sh(&lab, "cp2", "crictl ps -a");
    let rows: Vec<Vec<&str>> = out.lines().skip(1).map(columns).collect();
    assert_eq!(
        rows.len(),
        2,
        "the current container and the last dead one: {out}"
    );
    assert_eq!((rows[0][3], rows[0][5]), ("Running", "3"), "{out}");
    assert_eq!((rows[1][3], rows[1][5]), ("Exited", "2"), "{out}");
    // The previous container's log is still there, the current one starts fresh.
    let (code, _, err) = sh(
        &lab,
        "cp2",
        "crictl logs --previous --tail 1 $(crictl ps -q)",
    );
    assert!(code == 0 && !err.is_empty(), "{err}");
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn five_node_lab_starts() {
    require("five_node_lab_starts");
    let lab = start(LabConfig::with_nodes(5));
    assert_eq!(lab.nodes().len(), 5);
    assert_eq!(lab.node("cp5").unwrap().ip.to_string(), "198.18.0.15");
    for n in lab.nodes() {
        assert!(lab.health(&n.name).unwrap(), "{}", n.name);
    }
    // Losing two of five keeps quorum.
    lab.inject(Fault::StopEtcd("cp4".into())).unwrap();
    lab.inject(Fault::Isolate("cp5".into())).unwrap();
    eventually("cp1 healthy with three of five", || {
        lab.health("cp1").unwrap()
    });
    heal(&lab);
}

/// What must be gone once a lab is torn down.
fn assert_gone(id: &str, dir: &Path, pids: &[u32]) {
    let ns: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !ns.iter().any(|n| n.starts_with(&format!("{id}-"))),
        "netns left: {ns:?}"
    );
    assert!(!dir.exists(), "{} left", dir.display());
    for pid in pids {
        let alive = std::fs::read(format!("/proc/{pid}/environ"))
            .map(|e| String::from_utf8_lossy(&e).contains(&format!("ETCDNET_LAB_MEMBER={id}/")))
            .unwrap_or(false);
        assert!(!alive, "etcd {pid} of {id} still alive");
    }
}

fn etcd_pids(lab: &Lab) -> Vec<u32> {
    lab.nodes()
        .iter()
        .filter_map(|n| lab.etcd_pid(&n.name))
        .collect()
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn teardown_leaves_nothing_also_after_a_panic() {
    require("teardown_leaves_nothing_also_after_a_panic");
    let lab = start(LabConfig::with_nodes(1));
    let (id, dir, pids) = (
        lab.id().to_string(),
        lab.dir().to_path_buf(),
        etcd_pids(&lab),
    );
    assert_eq!(pids.len(), 1);
    drop(lab);
    assert_gone(&id, &dir, &pids);

    let seen = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let lab = start(LabConfig::with_nodes(1));
        *seen.lock().unwrap() = Some((
            lab.id().to_string(),
            lab.dir().to_path_buf(),
            etcd_pids(&lab),
        ));
        panic!("a test fails with its lab up");
    }));
    assert!(result.is_err());
    let (id, dir, pids) = seen.lock().unwrap().take().expect("the lab had started");
    assert_gone(&id, &dir, &pids);
}

/// Runs in a child process for `sweeper_removes_a_killed_run`: starts a lab, prints its id,
/// and waits to be killed.
#[test]
#[ignore = "helper process of sweeper_removes_a_killed_run"]
fn lab_holder_child() {
    if std::env::var_os("ETCDNET_LAB_HOLDER").is_none() {
        return;
    }
    let lab = start(LabConfig::with_nodes(1));
    println!(
        "LAB {} {} {}",
        lab.id(),
        lab.dir().display(),
        etcd_pids(&lab)[0]
    );
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn sweeper_removes_a_killed_run() {
    require("sweeper_removes_a_killed_run");
    // The child's full name in this binary (`lab::smoke::lab_holder_child`), whatever the module.
    let holder = format!(
        "{}::lab_holder_child",
        module_path!().split_once("::").unwrap().1
    );
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &holder, "--ignored", "--nocapture"])
        .env("ETCDNET_LAB_HOLDER", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("LAB ") {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(90));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let line = line.expect("the child started a lab");
    let mut parts = line.split(' ');
    let (id, dir, pid) = (
        parts.next().unwrap(),
        Path::new(parts.next().unwrap()),
        parts.next().unwrap(),
    );
    let pids = [pid.parse::<u32>().unwrap()];
    // The namespaces and files outlive a killed owner; its etcd dies with it (parent-death signal).
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{}", pids[0])).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let swept = Lab::sweep_stale().unwrap();
    // Another test's Lab::start may have swept it first: then its record is gone too.
    let record = format!("/run/etcdnet-lab/{id}.json");
    assert!(
        swept.iter().any(|s| s == id) || !Path::new(&record).exists(),
        "{swept:?}"
    );
    assert_gone(id, dir, &pids);
}
