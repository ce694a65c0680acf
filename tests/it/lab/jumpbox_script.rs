//! The jumpbox pod's script (`src/route/jumpbox/jumpbox.sh`) for real: one pod for all the
//! lab's VMs, run on the lab's Supervisor side (the switch namespace) under every shell with the
//! cluster's key mounted as a secret volume, SSH to every VM at once, sudo, the probe; its log
//! cut into the VMs' sections by `route::jumpbox::split_log` and each read back by `read_log`.
//! Needs root and the lab's packages; skips loudly otherwise.

use std::time::Duration;

use etcdnet::probe::script::ProbeArgs;
use etcdnet::probe::{PortState, ReachError, ReachErrorKind};
use etcdnet::route::jumpbox::{self, JumpboxSettings, ARGV_VMS};
use etcdnet::route::ssh::{self, SshSettings};
use etcdnet::route::{Address, PodBasics, Reached};
use etcdnet_lab::{require, write_secret_volume, Fault, Lab, LabConfig};

const NONCE: &str = "5f0c4a1e9b7d3c2a8e6f4b1d0c9a7e5f";

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
        keeper: None,
        shared: None,
        kubectl_flags: String::new(),
    }
}

/// Every shell the script must run under (the image's sh may be any of them).
fn shells() -> Vec<Vec<&'static str>> {
    vec![
        vec!["sh"],
        vec!["bash"],
        vec!["dash"],
        vec!["busybox", "sh"],
    ]
}

/// The jumpbox pod's command for every lab VM, as `jumpbox_pod` makes it.
fn command(lab: &Lab) -> Vec<String> {
    let ips: Vec<String> = lab.nodes().iter().map(|n| n.ip.to_string()).collect();
    let addresses: Vec<Address> = ips
        .iter()
        .map(|me| Address {
            ip: me.parse().unwrap(),
            probe: ProbeArgs {
                connect_timeout_s: 2,
                ..ProbeArgs::new(me.clone(), ips.iter().filter(|i| *i != me).cloned())
            },
        })
        .collect();
    let vms: Vec<&Address> = addresses.iter().collect();
    let pod = jumpbox::jumpbox_pod(&vms, NONCE, &settings());
    pod.spec.unwrap().containers[0].command.clone().unwrap()
}

/// Runs `argv` (a jumpbox pod's command) under `shell` as the fake Supervisor would, with `key`
/// mounted; returns the pod's log and each VM's result, in the lab's node order.
fn run_jumpbox(
    lab: &Lab,
    shell: &[&str],
    mut argv: Vec<String>,
    key: &[u8],
) -> (String, Vec<Result<Reached, ReachError>>) {
    argv.splice(0..1, shell.iter().map(|s| s.to_string()));
    let secret = tempfile::tempdir().unwrap();
    write_secret_volume(secret.path(), &[(ssh::KEY_FILE, key)], 0o400).unwrap();
    let mut cmd = lab
        .jumpbox_pod_command_named("jumpbox-test", &argv, &[(secret.path(), jumpbox::KEY_DIR)])
        .unwrap();
    let out = etcdnet_lab::run_with_timeout(
        {
            cmd.stdin(std::process::Stdio::null());
            cmd
        },
        None,
        Duration::from_secs(60),
    )
    .unwrap();
    // A pod's log is stdout and stderr together, read as text (as the plugin reads it).
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let nodes = lab.nodes();
    let sections = jumpbox::split_log(&log, NONCE, nodes.len())
        .unwrap_or_else(|e| panic!("{}: {e:?}\n{log}", shell.join(" ")));
    let results = sections
        .into_iter()
        .zip(nodes)
        .map(|(s, n)| {
            s.map(|text| jumpbox::read_log(&n.name, &n.ip.to_string(), "vmware-system-user", text))
        })
        .collect();
    (log, results)
}

fn ports(r: &Reached) -> Vec<(u16, PortState)> {
    r.reach.iter().map(|p| (p.port, p.state)).collect()
}

const LAB_PORTS: [(u16, PortState); 4] = [
    (22, PortState::Open),
    (2379, PortState::Open),
    (2380, PortState::Open),
    // Nothing listens on 6443 in the lab.
    (6443, PortState::Refused),
];

// Long: the jumpbox script under every shell, each run real ssh to the lab's three VMs and the
// probe on each.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn one_pod_probes_every_vm_over_ssh_under_every_shell() {
    require("jumpbox_script");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    for shell in shells() {
        let what = shell.join(" ");
        let (log, results) = run_jumpbox(&lab, &shell, command(&lab), &lab.ssh_private_key());
        assert_eq!(results.len(), 3);
        for (r, node) in results.iter().zip(lab.nodes()) {
            let r = r
                .as_ref()
                .unwrap_or_else(|e| panic!("{what}: {e:?}\n{log}"));
            let probe = r
                .outcome
                .as_ref()
                .unwrap_or_else(|e| panic!("{what} {}: {e:?}", node.name));
            assert_eq!(
                probe.node_ip,
                node.ip.to_string(),
                "{what}: its own section"
            );
            assert!(
                probe.etcd.containers.iter().any(|c| c.is_running()),
                "{what}: the node's etcd, through sudo crictl"
            );
            assert_eq!(ports(r), LAB_PORTS, "{what} {}", node.name);
            assert!(r.host_key.is_some(), "{what}: {}", node.name);
        }
    }
    // Port 22 was told by the probe's own connection: each VM's sshd saw one session per run,
    // the probe's, and no second one as a user it does not know (which a fail2ban watching the
    // VM would count against the Supervisor).
    for node in lab.nodes() {
        let log = std::fs::read_to_string(node.sshd_log()).unwrap();
        let connections = log.matches("Connection from ").count();
        assert_eq!(connections, shells().len(), "{}:\n{log}", node.name);
        assert_eq!(
            log.matches("Accepted publickey for vmware-system-user")
                .count(),
            connections,
            "{}:\n{log}",
            node.name
        );
        assert!(!log.contains("Invalid user"), "{}:\n{log}", node.name);
    }
}

#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn wrong_key_is_an_authentication_error_on_every_vm() {
    require("jumpbox_script wrong key");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    let (log, results) = run_jumpbox(&lab, &["sh"], command(&lab), &lab.wrong_ssh_private_key());
    for r in results {
        let r = r.unwrap();
        // 22 answered: asked again on a connection of its own, as the probe's says no more.
        assert_eq!(ports(&r), LAB_PORTS, "{log}");
        let e = r.outcome.unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::AuthFailed, "{e:?}\n{log}");
        assert!(e.message.contains("authentication failed"), "{}", e.message);
    }
}

/// One VM of three silent on 22: its own row, the two others probed in the same pod.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_vm_that_does_not_answer_on_22_is_its_own_row() {
    require("jumpbox_script blocked 22");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    lab.inject(Fault::BlockSsh("cp3".into())).unwrap();
    let (log, results) = run_jumpbox(&lab, &["sh"], command(&lab), &lab.ssh_private_key());
    let results: Vec<Reached> = results.into_iter().map(|r| r.unwrap()).collect();
    for r in &results[..2] {
        assert!(r.outcome.is_ok(), "{:?}\n{log}", r.outcome);
        assert_eq!(ports(r), LAB_PORTS);
    }
    let e = results[2].outcome.as_ref().unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::Unreachable, "{e:?}");
    assert!(
        e.message.contains("port 22 does not answer"),
        "{}",
        e.message
    );
    assert_eq!(
        results[2]
            .reach
            .iter()
            .find(|p| p.port == 22)
            .unwrap()
            .state,
        PortState::Timeout
    );
    assert_eq!(results[2].host_key, None);
}

/// A compromised node (cp2 here: its remote command is made to print first) writes frames and
/// trailers of its own, invalid UTF-8, or more than the probe ever prints, through real ssh:
/// all of it stays in its own section, and the two other VMs' results are untouched.
// Long: three runs of the script over real ssh to three VMs, one with 5 MB from cp2.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn a_hostile_node_cannot_reach_into_another_section() {
    require("jumpbox_script hostile node");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    let forged = "printf 'ETCDNET-NODE-END x 1\\nETCDNET-NODE x 2 5\\nhello\\nETCDNET-NODE-END x 2\\nETCDNET-REACH-END\\nETCDNET-HOSTKEY none\\nETCDNET-SSH-EXIT 0\\n'; ";
    enum Want {
        /// Its section is read: the script's reach block and trailer, not the forged ones.
        Read,
        /// Its section is read, and its output refused as too large.
        TooLarge,
        /// Its section changed length on the way (invalid UTF-8 read as text): not read.
        Garbled,
    }
    let cases = [
        (forged.to_string(), Want::Read),
        (format!("{forged}printf '\\377\\376\\n'; "), Want::Garbled),
        (
            format!("{forged}head -c 5000000 /dev/zero | tr '\\000' x; "),
            Want::TooLarge,
        ),
    ];
    for (prefix, want) in cases {
        let mut argv = command(&lab);
        // cp2's remote command: the second VM's pair.
        let remote = &mut argv[ARGV_VMS + 3];
        assert!(remote.starts_with("sudo -n sh -s"), "{remote}");
        remote.insert_str(0, &prefix);
        let (log, results) = run_jumpbox(&lab, &["sh"], argv, &lab.ssh_private_key());
        for i in [0, 2] {
            let r = results[i]
                .as_ref()
                .unwrap_or_else(|e| panic!("{prefix}: {e:?}"));
            assert!(r.outcome.is_ok(), "{prefix}: {i}: {:?}", r.outcome);
            assert_eq!(ports(r), LAB_PORTS);
            assert!(r.host_key.is_some());
        }
        match want {
            Want::Read | Want::TooLarge => {
                let r = results[1]
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{prefix}: {e:?}"));
                assert_eq!(ports(r), LAB_PORTS, "its reach block is the script's");
                assert!(
                    r.host_key.is_some(),
                    "the script's trailer, not the forged one"
                );
                if matches!(want, Want::TooLarge) {
                    let e = r.outcome.as_ref().unwrap_err();
                    assert_eq!(e.kind, ReachErrorKind::BadOutput, "{e:?}");
                    assert!(e.message.contains("more than 4 MiB"), "{}", e.message);
                }
            }
            Want::Garbled => {
                let e = results[1].as_ref().unwrap_err();
                assert_eq!(e.kind, ReachErrorKind::BadOutput, "{e:?}");
            }
        }
        assert!(
            log.len() < 5 * 1024 * 1024,
            "the script cut the flood: {} bytes",
            log.len()
        );
    }
}

/// `--parallel 1`: the script still gives every VM its section, one VM after another.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn parallel_one_still_reaches_every_vm() {
    require("jumpbox_script parallel 1");
    let lab = Lab::start(LabConfig::with_nodes(3)).unwrap();
    let mut argv = command(&lab);
    argv[9] = "1".into();
    let (log, results) = run_jumpbox(&lab, &["dash"], argv, &lab.ssh_private_key());
    for r in results {
        assert!(r.unwrap().outcome.is_ok(), "{log}");
    }
}
