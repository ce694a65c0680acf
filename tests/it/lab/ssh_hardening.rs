//! SSH does only what the probe needs, whatever the admin's `~/.ssh/config` says: both ssh routes
//! against the lab's real sshd. A hostile config (agent and X11 forwarding, a control master, a
//! LocalCommand, port forwardings, its own known_hosts) changes nothing; each node's host key
//! fingerprint in the report is the node's real one; a node that answers as another (an ssh
//! alias leading to the wrong VM) is not counted; the jumpbox's port check knows what it saw.
//!
//! The admin's config is read from the account's home directory (`getpwuid`, not `$HOME`), so
//! each `--via ssh` run gets the test's directory bound over /root in a mount namespace of its
//! own: nothing of the host's /root is read or written.
//! Needs root and the lab's packages; skips loudly otherwise.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::article::*;
use common::*;
use etcdnet::report::v1alpha2::{HostKey, PortState, ReachErrorKind, VerdictCode};
use etcdnet::report::DiagnoseReport;
use etcdnet_lab::{Fault, Lab};

/// The nodes' addresses in the lab (the fixture's VMs).
const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];

/// Every way a config could make ssh do more than run the probe, and its own host-key files.
fn hostile_config(home: &Path) -> String {
    let h = home.display();
    format!(
        "Host *\n\
         \x20   ForwardAgent yes\n\
         \x20   ForwardX11 yes\n\
         \x20   ControlMaster auto\n\
         \x20   ControlPath {h}/cm-%C\n\
         \x20   ControlPersist 60\n\
         \x20   PermitLocalCommand yes\n\
         \x20   LocalCommand touch {h}/local-command-ran\n\
         \x20   RemoteForward 127.0.0.1:25999 127.0.0.1:22\n\
         \x20   LocalForward 127.0.0.1:25998 127.0.0.1:22\n\
         \x20   DynamicForward 127.0.0.1:25997\n\
         \x20   Tunnel yes\n\
         \x20   RequestTTY force\n\
         \x20   UpdateHostKeys yes\n\
         \x20   BatchMode no\n\
         \x20   StrictHostKeyChecking no\n\
         \x20   UserKnownHostsFile {h}/hostile_known_hosts\n\
         \x20   GlobalKnownHostsFile {h}/hostile_global_known_hosts\n"
    )
}

/// Where `program` is on PATH.
fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .find(|f| f.is_file())
        })
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// `ssh-keygen -lf` of the node's host key: (type, SHA256 fingerprint).
fn lab_host_key(lab: &Lab, node: &str) -> (String, String) {
    let public = lab
        .node(node)
        .unwrap()
        .sshd_dir()
        .join("ssh_host_ed25519_key.pub");
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(&public)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "256 SHA256:... root@<node> (ED25519)"
    let text = String::from_utf8(out.stdout).unwrap();
    let sha = text.split_whitespace().nth(1).unwrap().to_string();
    let kind = text.trim().rsplit(' ').next().unwrap();
    (kind.trim_matches(['(', ')']).to_string(), sha)
}

fn key_of(n: &etcdnet::report::v1alpha2::DiagnosedNode) -> (String, String) {
    let k: &HostKey = n
        .host_key
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no hostKey: {n:#?}", n.name));
    (k.key_type.clone(), k.sha256.clone())
}

struct World {
    env: Env,
    lab: Arc<Lab>,
    /// Bound over /root for `--via ssh`: `.ssh/config` here is the admin's config.
    home: tempfile::TempDir,
    /// An `ssh` wrapper that records ssh's own view of its options (`ssh -G`) before running.
    bin: tempfile::TempDir,
    /// The plugin's TMPDIR: its run directory (key, known_hosts) must be gone after.
    tmp: tempfile::TempDir,
}

fn world(test: &str) -> World {
    let lab = start_lab(test);
    // The workload API answers (`Healthy` needs it); the routes are asked for by --via.
    let env = Env::jumpbox_in_lab_with(SET, &lab, lab.ssh_private_key(), Workload::ok());
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("ssh-G");
    std::fs::create_dir(&log).unwrap();
    let wrapper = bin.path().join("ssh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{real} -G \"$@\" >{log}/$$ 2>&1 </dev/null\nexec {real} \"$@\"\n",
            real = which("ssh").display(),
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    World {
        env,
        lab,
        home: tempfile::tempdir().unwrap(),
        bin,
        tmp: tempfile::tempdir().unwrap(),
    }
}

impl World {
    /// Writes the admin's `~/.ssh/config` (0600: ssh refuses a config others may write).
    fn ssh_config(&self, text: &str) {
        let dir = self.home.path().join(".ssh");
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config");
        std::fs::write(&config, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn diagnose_jumpbox(&self) -> Run {
        self.env.kubectl(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "jumpbox",
            "--connect-timeout",
            "2s",
            "--api-timeout",
            "1s",
            "-o",
            "json",
        ])
    }

    /// `kubectl etcdnet diagnose --via ssh -o json` on the admin's side (the lab's switch
    /// namespace, which reaches the VMs and, relayed, the fake Supervisor), with the test's home
    /// bound over /root.
    fn diagnose_via_ssh(&self) -> Run {
        self.lab
            .forward_host_port(self.env.supervisor_port())
            .unwrap();
        // The workload API too: the admin's side checks it (`Healthy` needs it answering).
        let workload = self.env.workload.as_ref().unwrap().url();
        let port = workload.rsplit(':').next().unwrap().trim_end_matches('/');
        self.lab.forward_host_port(port.parse().unwrap()).unwrap();
        let home = self.home.path().to_str().unwrap();
        let argv = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            "mount --bind \"$1\" /root && shift && exec \"$@\"",
            "etcdnet-admin",
            home,
            KUBECTL,
            "etcdnet",
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "ssh",
            "--connect-timeout",
            "2s",
            "--api-timeout",
            "1s",
            "-o",
            "json",
        ];
        let mut cmd = self.lab.admin_command(&argv);
        let plugin_dir = Path::new(PLUGIN).parent().unwrap();
        let path = format!(
            "{}:{}:{}",
            self.bin.path().display(),
            plugin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path)
            .env("KUBECONFIG", &self.env.kubeconfig)
            .env("HOME", self.env.dir.path())
            .env("TMPDIR", self.tmp.path())
            .env("NO_COLOR", "1");
        Run::from(cmd.output().unwrap())
    }

    /// What `ssh -G` said of every ssh the plugin ran.
    fn ssh_views(&self) -> Vec<String> {
        std::fs::read_dir(self.bin.path().join("ssh-G"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    }

    fn home_entries(&self) -> Vec<String> {
        std::fs::read_dir(self.home.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// The options ssh itself settles on (`ssh -G`) for the plugin's command line under a hostile
/// config: ours, every one; none of the config's forwardings.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn ssh_itself_keeps_our_options_over_a_hostile_config() {
    etcdnet_lab::require("ssh_itself_keeps_our_options_over_a_hostile_config");
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config");
    std::fs::write(&config, hostile_config(home.path())).unwrap();
    let settings = etcdnet::route::ssh::SshSettings {
        user: "vmware-system-user".into(),
        connect_timeout: std::time::Duration::from_secs(2),
        options: vec!["ProxyJump=admin@bastion.example".into()],
    };
    let known_hosts = "/tmp/etcdnet-ssh-test/known_hosts-198.18.0.11";
    let args = etcdnet::route::ssh::ssh_args(
        &settings,
        Some(Path::new("/tmp/etcdnet-ssh-test/id")),
        known_hosts,
        "198.18.0.11",
        "true",
    );
    let out = Command::new("ssh")
        .arg("-F")
        .arg(&config)
        .arg("-G")
        .args(&args)
        .output()
        .unwrap();
    let view = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "batchmode yes",
        "forwardagent no",
        "forwardx11 no",
        "clearallforwardings yes",
        "controlmaster false",
        "permitlocalcommand no",
        "requesttty false",
        "tunnel false",
        "updatehostkeys false",
        "stricthostkeychecking accept-new",
        "globalknownhostsfile /dev/null",
        &format!("userknownhostsfile {known_hosts}"),
        // The admin's own options still apply.
        "proxyjump admin@bastion.example",
    ] {
        assert!(view.lines().any(|l| l == want), "{want}:\n{view}");
    }
    for never in [
        "controlpath ",
        "localforward ",
        "remoteforward ",
        "dynamicforward ",
    ] {
        assert!(
            !view.lines().any(|l| l.starts_with(never)),
            "{never}:\n{view}"
        );
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_hostile_ssh_config_changes_nothing() {
    etcdnet_lab::require("a_hostile_ssh_config_changes_nothing");
    let w = world("ssh_hardening hostile config");
    w.ssh_config(&hostile_config(w.home.path()));
    let (run, report) = diagnose_until(VerdictCode::Healthy, || w.diagnose_via_ssh());
    run.expect_code(0);
    assert_eq!(report.route.name, "ssh");
    assert_eq!(report.result.nodes_reached, 3);

    // Nothing the config asked for happened.
    let home = w.home_entries();
    assert!(
        !home.iter().any(|e| e == "local-command-ran"),
        "LocalCommand ran: {home:?}"
    );
    assert!(
        !home.iter().any(|e| e.starts_with("cm-")),
        "a control socket was made: {home:?}"
    );
    assert!(
        !home.iter().any(|e| e.contains("known_hosts")),
        "the config's known_hosts was used: {home:?}"
    );
    // ssh's own view of every connection it made.
    let views = w.ssh_views();
    assert!(views.len() >= 3, "{views:?}");
    for view in &views {
        // The hostile config was read (its inert LocalCommand shows): it was in effect, and lost.
        let local_command = format!(
            "localcommand touch {}/local-command-ran",
            w.home.path().display()
        );
        assert!(
            view.lines().any(|l| l == local_command),
            "the config was not read:\n{view}"
        );
        for want in [
            "forwardagent no",
            "forwardx11 no",
            "clearallforwardings yes",
            "controlmaster false",
            "permitlocalcommand no",
            "batchmode yes",
            "stricthostkeychecking accept-new",
        ] {
            assert!(view.lines().any(|l| l == want), "{want}:\n{view}");
        }
        let kh = view
            .lines()
            .find_map(|l| l.strip_prefix("userknownhostsfile "))
            .expect("a known_hosts file");
        assert!(
            kh.starts_with(w.tmp.path().to_str().unwrap()) && kh.contains("/known_hosts-"),
            "the run's own file: {kh}"
        );
        for never in [
            "controlpath ",
            "remoteforward ",
            "localforward ",
            "dynamicforward ",
        ] {
            assert!(
                !view.lines().any(|l| l.starts_with(never)),
                "{never}:\n{view}"
            );
        }
    }

    // Each node's host key is the one its sshd has.
    check_host_keys(&w.lab, &report);
    // The run's files (key, known_hosts) are gone.
    let left: Vec<_> = std::fs::read_dir(w.tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

fn check_host_keys(lab: &Lab, report: &DiagnoseReport) {
    for (i, node) in report.nodes.iter().enumerate() {
        assert_eq!(node.name, CP[i]);
        let (kind, sha) = lab_host_key(lab, CP[i]);
        assert_eq!(kind, "ED25519");
        assert_eq!(key_of(node), (kind, sha), "{}", node.name);
    }
    // Three nodes, three keys.
    let mut keys: Vec<String> = report.nodes.iter().map(|n| key_of(n).1).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3);
}

/// An admin's ssh alias sends the second node's address to the first VM: the document that
/// comes back is the first VM's, and is not taken for the second's.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_node_answering_as_another_is_not_counted() {
    etcdnet_lab::require("a_node_answering_as_another_is_not_counted");
    let w = world("ssh_hardening identity");
    w.ssh_config(&format!("Host {}\n    HostName {}\n", IPS[1], IPS[0]));
    let (run, report) = diagnose_until(VerdictCode::NodesUnreachable, || w.diagnose_via_ssh());
    run.expect_code(1);
    assert_eq!(
        report.verdict.code,
        VerdictCode::NodesUnreachable,
        "{:#?}",
        report.verdict
    );
    assert_eq!(report.verdict.nodes, [CP[1]]);
    assert_eq!(report.result.nodes_reached, 2);
    let cp2 = &report.nodes[1];
    assert!(!cp2.reached && cp2.probe.is_none(), "{cp2:#?}");
    let e = reach_error(cp2);
    assert_eq!(e.kind, ReachErrorKind::IdentityMismatch, "{e:?}");
    for want in [CP[1], IPS[1], CP[0], IPS[0]] {
        assert!(e.message.contains(want), "{want}: {}", e.message);
    }
    // What answered presented the first VM's host key: the report shows it.
    assert_eq!(key_of(cp2), lab_host_key(&w.lab, CP[0]));
    assert_eq!(key_of(&report.nodes[0]), lab_host_key(&w.lab, CP[0]));
    assert!(
        report.verdict.evidence[0].contains("another machine answered"),
        "{:#?}",
        report.verdict.evidence
    );
}

/// The jumpbox pods: each VM's host key as the pod's ssh recorded it, and the Supervisor's view
/// of the ports as real ssh reports it against real etcd (never Unknown for what it knows).
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn the_jumpbox_reports_host_keys_and_known_port_states() {
    etcdnet_lab::require("the_jumpbox_reports_host_keys_and_known_port_states");
    let w = world("ssh_hardening jumpbox");
    let (run, report) = diagnose_until(VerdictCode::Healthy, || w.diagnose_jumpbox());
    run.expect_code(0);
    assert_eq!(report.route.name, "jumpbox");
    check_host_keys(&w.lab, &report);
    for n in &report.nodes {
        let reach: Vec<(u16, PortState)> = n
            .supervisor_reach
            .iter()
            .map(|p| (p.port, p.state))
            .collect();
        assert_eq!(
            reach,
            [
                (22, PortState::Open),
                (2379, PortState::Open),
                (2380, PortState::Open),
                (6443, PortState::Refused)
            ],
            "{}: nothing listens on 6443 in the lab",
            n.name
        );
    }

    // A VM silent on 22: no contact, no key; the others keep theirs.
    w.lab.inject(Fault::BlockSsh(CP[2].into())).unwrap();
    let run = w.diagnose_jumpbox();
    run.expect_code(1);
    let report = run.diagnose_report();
    assert_eq!(report.nodes[2].host_key, None, "{:#?}", report.nodes[2]);
    assert_eq!(
        report.nodes[2]
            .supervisor_reach
            .iter()
            .find(|p| p.port == 22)
            .map(|p| p.state),
        Some(PortState::Timeout)
    );
    assert_eq!(key_of(&report.nodes[0]), lab_host_key(&w.lab, CP[0]));
}
