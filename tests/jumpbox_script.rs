//! The jumpbox pod's script (`src/route/jumpbox.sh`) for real: run on the lab's Supervisor side
//! (the switch namespace) with the cluster's key mounted as a secret volume, SSH to the lab's
//! VMs, sudo, the probe; its log read back by `route::jumpbox::read_log`.
//! Needs root and the lab's packages; skips loudly otherwise.

use std::time::Duration;

use etcdnet::probe::script::ProbeArgs;
use etcdnet::probe::{PortState, ReachErrorKind};
use etcdnet::route::jumpbox::{self, JumpboxSettings};
use etcdnet::route::ssh::SshSettings;
use etcdnet::route::PodBasics;
use etcdnet_lab::{require, write_secret_volume, Fault, Lab, LabConfig};

fn settings() -> JumpboxSettings {
    JumpboxSettings {
        namespace: "ns-prod".into(),
        cluster: "tkc-prod".into(),
        image: jumpbox::DEFAULT_IMAGE.into(),
        basics: PodBasics {
            image_pull_secret: None,
            run_id: "t".into(),
            deadline: Duration::from_secs(60),
        },
        ssh: SshSettings {
            user: "vmware-system-user".into(),
            connect_timeout: Duration::from_secs(2),
            options: vec![],
        },
    }
}

/// Runs the jumpbox pod's command for `node` as the fake Supervisor would, with `key` mounted.
fn run_jumpbox(lab: &Lab, node: &str, key: &[u8]) -> jumpbox::JumpboxResult {
    let ips: Vec<String> = lab.nodes().iter().map(|n| n.ip.to_string()).collect();
    let me = lab.node(node).unwrap().ip.to_string();
    let probe = ProbeArgs {
        connect_timeout_s: 2,
        ..ProbeArgs::new(me.clone(), ips.iter().filter(|i| **i != me).cloned())
    };
    let pod = jumpbox::jumpbox_pod(node, &me, &probe, &settings());
    let argv: Vec<String> = pod.spec.unwrap().containers[0].command.clone().unwrap();
    let secret = tempfile::tempdir().unwrap();
    write_secret_volume(secret.path(), &[(jumpbox::KEY_FILE, key)], 0o400).unwrap();
    let mut cmd = lab
        .jumpbox_pod_command_named("jumpbox-test", &argv, &[(secret.path(), jumpbox::KEY_DIR)])
        .unwrap();
    let out = etcdnet_lab::run_with_timeout(
        {
            cmd.stdin(std::process::Stdio::null());
            cmd
        },
        None,
        Duration::from_secs(30),
    )
    .unwrap();
    // A pod's log is stdout and stderr together.
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    jumpbox::read_log(node, &me, "vmware-system-user", &log)
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn probes_a_vm_over_ssh_from_the_supervisor() {
    require("jumpbox_script");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    let r = run_jumpbox(&lab, "cp1", &lab.ssh_private_key());
    let probe = r.outcome.expect("the probe ran over ssh with sudo");
    assert_eq!(probe.node_ip, "198.18.0.11");
    assert!(
        probe.etcd.containers.iter().any(|c| c.is_running()),
        "the node's etcd, through sudo crictl"
    );
    let ports: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
    assert_eq!(
        ports,
        [
            (22, PortState::Open),
            (2379, PortState::Open),
            (2380, PortState::Open),
            (6443, PortState::Refused)
        ],
        "nothing listens on 6443 in the lab"
    );
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn wrong_key_is_an_authentication_error() {
    require("jumpbox_script wrong key");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    let e = run_jumpbox(&lab, "cp2", &lab.wrong_ssh_private_key())
        .outcome
        .unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::AuthFailed, "{e:?}");
    assert!(e.message.contains("authentication failed"), "{}", e.message);
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_vm_that_does_not_answer_on_22() {
    require("jumpbox_script blocked 22");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    lab.inject(Fault::BlockSsh("cp3".into())).unwrap();
    let r = run_jumpbox(&lab, "cp3", &lab.ssh_private_key());
    let e = r.outcome.unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::Unreachable, "{e:?}");
    assert!(
        e.message.contains("port 22 does not answer"),
        "{}",
        e.message
    );
    assert_eq!(
        r.reach.iter().find(|p| p.port == 22).unwrap().state,
        PortState::Timeout
    );
}
