//! The lab's SSH route, for real: every node runs OpenSSH's sshd with a `vmware-system-user` that
//! may sudo, the jumpbox (a pod on the Supervisor side) and the admin's machine reach port 22,
//! and the faults of this route (a VM silent on 22, a stopped sshd, a wrong key) look as they do
//! to a real ssh client. The embedded probe runs over ssh with sudo, as the plugin will run it.
//!
//! Needs root and the lab's packages (`.ci/lab-packages`); skips loudly otherwise.

use super::ip;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdnet::probe::output::{RuntimeQuery, TcpOutcome};
use etcdnet::probe::parse::parse;
use etcdnet::probe::script::{self, ProbeArgs};
use etcdnet_lab::{
    require, run_with_timeout, write_secret_volume, Fault, Lab, LabConfig, NO_MOUNTS,
};

const RUN: Duration = Duration::from_secs(30);
/// Where the jumpbox pod mounts the `<cluster>-ssh` secret.
const SECRET_MOUNT: &str = "/etc/ssh-key";

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(cmd: Command, stdin: Option<&[u8]>) -> Ran {
    let started = Instant::now();
    let out = run_with_timeout(cmd, stdin, RUN).expect("the command runs");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// The ssh command line an admin types (host keys not checked), from the support article's
/// manual route: `ssh -i key vmware-system-user@<ip> <remote>`.
fn ssh_argv(key: &Path, ip: &str, remote: &str) -> Vec<String> {
    let mut argv = vec!["ssh".to_string(), "-i".into(), key.display().to_string()];
    for o in [
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "BatchMode=yes",
        "ConnectTimeout=3",
        // Keeps "Permanently added ... to the list of known hosts" off stderr; errors still show.
        "LogLevel=ERROR",
    ] {
        argv.push("-o".into());
        argv.push(o.into());
    }
    argv.push(format!("vmware-system-user@{ip}"));
    argv.push(remote.into());
    argv
}

/// `remote` on `node` from the jumpbox with the lab's key.
fn jumpbox_ssh(lab: &Lab, node: &str, remote: &str) -> Ran {
    let argv = ssh_argv(lab.ssh_private_key_path(), &ip(lab, node), remote);
    run(lab.jumpbox_command(&argv), None)
}

fn start(test: &str, nodes: usize) -> Lab {
    require(test);
    let lab = Lab::start(LabConfig {
        start_timeout: Duration::from_secs(60),
        ..LabConfig::with_nodes(nodes)
    })
    .expect("the lab starts");
    eprintln!("{test}: lab {} started in {:?}", lab.id(), lab.started_in());
    lab
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn jumpbox_reaches_every_node_as_vmware_system_user() {
    let lab = start("jumpbox_reaches_every_node_as_vmware_system_user", 3);
    for node in lab.nodes() {
        let r = jumpbox_ssh(&lab, &node.name, "sudo crictl ps --name etcd");
        assert_eq!(r.code, 0, "{}: {}", node.name, r.stderr);
        let id = lab.container_id(&node.name).unwrap();
        assert!(
            r.stdout.contains(&id[..13])
                && r.stdout.contains("Running")
                && r.stdout.contains(&format!("etcd-{}", node.name)),
            "{}: {}",
            node.name,
            r.stdout
        );
        eprintln!("ssh {} sudo crictl ps --name etcd: {:?}", node.name, r.took);
        let r = jumpbox_ssh(&lab, &node.name, "hostname");
        assert_eq!(
            (r.code, r.stdout.trim()),
            (0, node.name.as_str()),
            "{}",
            r.stderr
        );
        eprintln!("ssh {} hostname: {:?}", node.name, r.took);
    }

    // Host keys are checkable; the login is the account, sudo makes it root without a password.
    let argv = lab
        .ssh_argv(
            "cp2",
            lab.ssh_private_key_path(),
            "id -un; sudo -n id -u; echo $PATH",
        )
        .unwrap();
    let r = run(lab.jumpbox_command(&argv), None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[..2], ["vmware-system-user", "0"], "{}", r.stdout);
    let log = std::fs::read_to_string(lab.node("cp2").unwrap().sshd_log()).unwrap();
    assert!(
        log.contains("Accepted publickey for vmware-system-user from 198.18.0.1"),
        "{log}"
    );

    // The wrong key: refused by every node as ssh says it.
    for node in ["cp1", "cp3"] {
        let argv = ssh_argv(lab.wrong_ssh_private_key_path(), &ip(&lab, node), "true");
        let r = run(lab.jumpbox_command(&argv), None);
        assert_eq!(r.code, 255, "{node}: {}", r.stderr);
        assert!(
            r.stderr.contains("Permission denied (publickey)"),
            "{node}: {}",
            r.stderr
        );
    }

    // Isolating a node from its peers leaves the Supervisor's path to it alone.
    lab.inject(Fault::Isolate("cp3".into())).unwrap();
    let r = jumpbox_ssh(&lab, "cp3", "hostname");
    assert_eq!((r.code, r.stdout.trim()), (0, "cp3"), "{}", r.stderr);
    // ... while its peers cannot reach it, on 22 or anything else.
    let from_peer = lab
        .exec(
            "cp1",
            &[
                "curl",
                "-s",
                "--connect-timeout",
                "2",
                "--max-time",
                "3",
                "telnet://198.18.0.13:22",
            ],
            None,
            RUN,
        )
        .unwrap();
    assert_eq!(from_peer.status.code(), Some(28));

    // Nothing of the account reached the host.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    assert!(
        !passwd.contains("vmware-system-user:"),
        "host /etc/passwd changed"
    );
    assert!(!Path::new("/etc/sudoers.d/vmware-system-user").exists());
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn block_ssh_and_stop_sshd_look_like_a_dead_port_and_a_stopped_service() {
    let lab = start("block_ssh_and_stop_sshd", 3);
    lab.inject("block-ssh:cp2".parse().unwrap()).unwrap();
    let r = jumpbox_ssh(&lab, "cp2", "true");
    eprintln!(
        "BlockSsh: ssh exit {} after {:?}: {}",
        r.code,
        r.took,
        r.stderr.trim()
    );
    assert_eq!(r.code, 255);
    assert!(
        r.stderr
            .contains("connect to host 198.18.0.12 port 22: Connection timed out"),
        "{}",
        r.stderr
    );
    assert!(
        r.took >= Duration::from_millis(2900) && r.took < Duration::from_secs(6),
        "ConnectTimeout=3 bounds it: {:?}",
        r.took
    );
    // The others answer, and etcd does not care.
    assert_eq!(jumpbox_ssh(&lab, "cp1", "true").code, 0);
    lab.wait_healthy(Duration::from_secs(10)).unwrap();

    lab.stop_sshd("cp3").unwrap();
    assert_eq!(lab.sshd_pid("cp3"), None);
    let r = jumpbox_ssh(&lab, "cp3", "true");
    eprintln!(
        "stop_sshd: ssh exit {} after {:?}: {}",
        r.code,
        r.took,
        r.stderr.trim()
    );
    assert_eq!(r.code, 255);
    assert!(
        r.stderr
            .contains("connect to host 198.18.0.13 port 22: Connection refused"),
        "{}",
        r.stderr
    );
    assert!(
        r.took < Duration::from_secs(1),
        "refused at once: {:?}",
        r.took
    );

    let t = Instant::now();
    lab.start_sshd("cp3").unwrap();
    eprintln!("start_sshd: listening after {:?}", t.elapsed());
    assert!(lab.sshd_pid("cp3").is_some());
    assert_eq!(jumpbox_ssh(&lab, "cp3", "hostname").stdout.trim(), "cp3");

    // heal lifts BlockSsh and starts stopped sshds again.
    lab.stop_sshd("cp3").unwrap();
    lab.heal().unwrap();
    for node in ["cp2", "cp3"] {
        let r = jumpbox_ssh(&lab, node, "hostname");
        assert_eq!((r.code, r.stdout.trim()), (0, node), "{}", r.stderr);
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn probe_runs_over_ssh_with_sudo_from_a_jumpbox_pod() {
    let lab = start("probe_runs_over_ssh_with_sudo_from_a_jumpbox_pod", 3);
    // The `<cluster>-ssh` secret as the kubelet lays it out, key mode 0400.
    let secret = tempfile::tempdir().unwrap();
    write_secret_volume(
        secret.path(),
        &[("ssh-privatekey", &lab.ssh_private_key())],
        0o400,
    )
    .unwrap();
    let mounts = [(secret.path(), SECRET_MOUNT)];
    let key = Path::new(SECRET_MOUNT).join("ssh-privatekey");

    // The pod's own view: its hostname, the key read-only at 0400, writes that stay in the pod.
    let check = "hostname; stat -L -c %a /etc/ssh-key/ssh-privatekey; \
                 touch /etc/ssh-key/x 2>/dev/null || echo read-only; \
                 echo pod >/etc/etcdnet-pod-marker && cat /etc/etcdnet-pod-marker";
    let r = run(
        lab.jumpbox_pod_command(&["sh", "-c", check], &mounts)
            .unwrap(),
        None,
    );
    assert_eq!(r.stdout, "jumpbox\n400\nread-only\npod\n", "{}", r.stderr);
    eprintln!("jumpbox pod (a few shell commands): {:?}", r.took);
    assert!(!Path::new("/etc/etcdnet-pod-marker").exists());

    let ips: Vec<String> = lab.nodes().iter().map(|n| n.ip.to_string()).collect();
    for node in lab.nodes() {
        let me = node.ip.to_string();
        let args = ProbeArgs {
            connect_timeout_s: 2,
            ..ProbeArgs::new(me.clone(), ips.iter().filter(|i| **i != me).cloned())
        };
        let remote = format!("sudo {}", script::stdin_command_line(&args));
        let argv = ssh_argv(&key, &me, &remote);
        let r = run(
            lab.jumpbox_pod_command(&argv, &mounts).unwrap(),
            Some(script::PROBE_SH.as_bytes()),
        );
        eprintln!("probe over ssh on {}: {:?}", node.name, r.took);
        assert_eq!(r.code, 0, "{}: {}", node.name, r.stderr);
        assert!(r.stderr.is_empty(), "{}: {}", node.name, r.stderr);
        let out = parse(&node.name, r.stdout.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.hostname.as_deref(), Some(node.name.as_str()));
        assert_eq!(out.node_ip, me);
        assert_eq!(out.etcd.query, RuntimeQuery::Ok, "{:#?}", out.etcd);
        let running: Vec<_> = out
            .etcd
            .containers
            .iter()
            .filter(|c| c.is_running())
            .collect();
        assert_eq!(running.len(), 1, "{:#?}", out.etcd.containers);
        assert_eq!(running[0].id, lab.container_id(&node.name).unwrap());
        assert!(out.etcd.logs.is_some_and(|l| !l.text.is_empty()));
        assert!(
            out.paths.iter().all(|p| p.tcp == TcpOutcome::Connected),
            "{:#?}",
            out.paths
        );
    }

    // The same pod with the wrong key in its secret.
    let wrong = tempfile::tempdir().unwrap();
    write_secret_volume(
        wrong.path(),
        &[("ssh-privatekey", &lab.wrong_ssh_private_key())],
        0o400,
    )
    .unwrap();
    let argv = ssh_argv(&key, &ip(&lab, "cp1"), "true");
    let r = run(
        lab.jumpbox_pod_command(&argv, &[(wrong.path(), SECRET_MOUNT)])
            .unwrap(),
        None,
    );
    assert_eq!(r.code, 255);
    assert!(
        r.stderr.contains("Permission denied (publickey)"),
        "{}",
        r.stderr
    );

    // No volume at all: the pod has no key.
    let r = run(
        lab.jumpbox_pod_command(&["ls", SECRET_MOUNT], NO_MOUNTS)
            .unwrap(),
        None,
    );
    assert_ne!(r.code, 0);
}

/// A one-response-per-connection HTTP server on the host's 127.0.0.1 (a stand-in for the fake
/// Supervisor API).
fn host_http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhost says hi",
            );
        }
    });
    port
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn admin_machine_reaches_nodes_and_the_host_loopback() {
    let lab = start("admin_machine_reaches_nodes_and_the_host_loopback", 2);
    let port = host_http_server();
    let url = format!("http://127.0.0.1:{port}/");
    let curl = |url: &str| {
        run(
            lab.admin_command(&["curl", "-sS", "--max-time", "3", url]),
            None,
        )
    };

    // The switch namespace has its own loopback: not relayed yet, refused.
    assert_eq!(curl(&url).code, 7);
    let addr = lab.forward_host_port(port).unwrap();
    assert_eq!(addr.to_string(), format!("127.0.0.1:{port}"));
    assert_eq!(lab.forward_host_port(port).unwrap(), addr, "idempotent");
    for _ in 0..3 {
        let r = curl(&url);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "host says hi"),
            "{}",
            r.stderr
        );
    }

    // The same process reaches the nodes' 22 (the plugin's `--via ssh` with `--ssh-identity`).
    let argv = lab
        .ssh_argv(
            "cp2",
            lab.ssh_private_key_path(),
            "sudo crictl ps -q --name etcd",
        )
        .unwrap();
    let r = run(lab.admin_command(&argv), None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), lab.container_id("cp2").unwrap());

    // One process doing both, as the plugin will.
    let both = format!(
        "curl -sS --max-time 3 {url} && {}",
        lab.ssh_argv("cp1", lab.ssh_private_key_path(), "hostname")
            .unwrap()
            .iter()
            .map(|a| script::shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let r = run(lab.admin_command(&["sh", "-c", &both]), None);
    assert_eq!(r.stdout, "host says hicp1\n", "{}", r.stderr);
}

fn host_links() -> BTreeSet<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|s| s.trim().to_string()))
        .collect()
}

fn lab_processes(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn teardown_leaves_no_sshd_namespace_or_link() {
    let links_before = host_links();
    let lab = start("teardown_leaves_no_sshd_namespace_or_link", 2);
    let id = lab.id().to_string();
    let dir = lab.dir().to_path_buf();
    let pids: Vec<u32> = ["cp1", "cp2"]
        .iter()
        .map(|n| lab.sshd_pid(n).expect("sshd runs"))
        .collect();
    lab.forward_host_port(host_http_server()).unwrap();
    // An open session (its own processes on the node) and a client in the switch namespace.
    let argv = ssh_argv(lab.ssh_private_key_path(), &ip(&lab, "cp1"), "sleep 60");
    let mut session = lab.jumpbox_command(&argv);
    session.stdout(Stdio::null()).stderr(Stdio::null());
    let mut session = session.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !lab_processes("sleep 60").iter().any(|c| !c.contains("ssh")) {
        assert!(Instant::now() < deadline, "the session did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!lab_processes(dir.to_str().unwrap()).is_empty());

    drop(lab);

    let status = session.wait().unwrap();
    assert!(!status.success(), "the session died with the lab");
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "sshd {pid} survived"
        );
    }
    let left = lab_processes(dir.to_str().unwrap());
    assert!(left.is_empty(), "processes of the lab left: {left:?}");
    let netns = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("{id}-")))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert!(netns.is_empty(), "namespaces left: {netns:?}");
    assert_eq!(host_links(), links_before, "the host's interfaces changed");
    assert!(!dir.exists());
}

/// Helper process for `sshd_dies_with_a_killed_owner` (runs only with ETCDNET_LAB_SSH_HOLDER).
#[test]
#[ignore = "helper process of sshd_dies_with_a_killed_owner"]
fn ssh_lab_holder_child() {
    if std::env::var_os("ETCDNET_LAB_SSH_HOLDER").is_none() {
        return;
    }
    let lab = start("ssh_lab_holder_child", 1);
    println!("LAB {} {}", lab.id(), lab.sshd_pid("cp1").unwrap());
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn sshd_dies_with_a_killed_owner() {
    require("sshd_dies_with_a_killed_owner");
    // The child's full name in this binary (`lab::ssh::ssh_lab_holder_child`), whatever the module.
    let holder = format!(
        "{}::ssh_lab_holder_child",
        module_path!().split_once("::").unwrap().1
    );
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &holder, "--ignored", "--nocapture"])
        .env("ETCDNET_LAB_SSH_HOLDER", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(90);
    while !out.lines().any(|l| l.starts_with("LAB ")) && Instant::now() < deadline {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("LAB "))
        .expect("the child started a lab")
        .to_string();
    let (id, pid) = line.split_once(' ').unwrap();
    // The parent-death signal takes sshd down with its owner, before any sweep.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "sshd {pid} outlived its owner");
        std::thread::sleep(Duration::from_millis(50));
    }
    Lab::sweep_stale().unwrap();
    let left: Vec<_> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("{id}-")))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
