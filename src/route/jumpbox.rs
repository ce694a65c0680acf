//! Route 2: from the Supervisor, when the workload cluster's API is down (the support article's
//! case). One short-lived pod per control-plane VM in the vSphere Namespace mounts the cluster's
//! `<cluster>-ssh` secret read-only (mode 0400) and SSHes to the VM as the node user, running the
//! probe with sudo (`jumpbox.sh`). The key never leaves the secret volume: it is in no env var,
//! argument, pod spec field or output.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod, PodSecurityContext,
    PodSpec, SeccompProfile, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi_ext::{ContainerExt, PodSpecExt};
use kube::api::Api;

use super::lifecycle;
use super::ssh::{classify_failure, locked_option_words, remote_probe_command, SshSettings};
use super::{Address, Env, PodBasics, Reached, Route, RouteSettings, Run, Session, Target};
use crate::error::Result;
use crate::probe::script::{self, ProbeArgs};
use crate::probe::{HostKey, ProbeOutput, ReachError, ReachErrorKind};
pub use crate::probe::{PortReach, PortState};

pub const JUMPBOX_SH: &str = include_str!("jumpbox.sh");
/// An image with an OpenSSH client and a POSIX sh (alpine/git ships both).
pub const DEFAULT_IMAGE: &str = "docker.io/alpine/git:2.47.2";
pub const KEY_DIR: &str = "/etc/etcdnet/ssh";
pub const KEY_FILE: &str = "ssh-privatekey";
/// The user and group the jumpbox runs as (`nobody`, in every image's /etc/passwd: ssh refuses
/// to run as a user it cannot look up).
pub const NOBODY: i64 = 65534;

pub fn ssh_secret_name(cluster: &str) -> String {
    format!("{cluster}-ssh")
}

#[derive(Debug, Clone)]
pub struct JumpboxSettings {
    /// The vSphere Namespace (where the secret is).
    pub namespace: String,
    pub cluster: String,
    pub image: String,
    pub basics: PodBasics,
    pub ssh: SshSettings,
}

pub fn pod_name(node: &str, run_id: &str) -> String {
    super::pod_name("etcdnet-jumpbox-", node, run_id)
}

/// The jumpbox pod for one VM.
pub fn jumpbox_pod(node: &str, ip: &str, probe: &ProbeArgs, s: &JumpboxSettings) -> Pod {
    let key = Volume {
        name: "ssh-key".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(ssh_secret_name(&s.cluster)),
            default_mode: Some(0o400),
            items: Some(vec![KeyToPath {
                key: KEY_FILE.into(),
                path: KEY_FILE.into(),
                mode: Some(0o400),
            }]),
            optional: Some(false),
        }),
        ..Default::default()
    };
    let argv = vec![
        "sh".to_string(),
        "-c".into(),
        JUMPBOX_SH.into(),
        "etcdnet-jumpbox".into(),
        ip.to_string(),
        s.ssh.user.clone(),
        s.ssh.connect_timeout.as_secs().max(1).to_string(),
        format!("{KEY_DIR}/{KEY_FILE}"),
        remote_probe_command(probe),
        // The same options the ssh route locks, before the script's own (see `ssh.rs`).
        locked_option_words(),
        script::PROBE_SH.into(),
    ];
    // ssh's known_hosts for the run (and nothing else) is written here: the image is read-only.
    let tmp = Volume {
        name: "tmp".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(Quantity("1Mi".into())),
        }),
        ..Default::default()
    };
    let container = Container {
        resources: Some(super::small_resources("128Mi")),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "ssh-key".into(),
                mount_path: KEY_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            VolumeMount {
                name: "tmp".into(),
                mount_path: "/tmp".into(),
                ..Default::default()
            },
        ]),
        // ssh looks for ~/.ssh; the user's home in the image may not exist.
        env: Some(vec![EnvVar {
            name: "HOME".into(),
            value: Some("/tmp".into()),
            ..Default::default()
        }]),
        // The Pod Security `restricted` level, and nothing an ssh client does not need.
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Container::new("jumpbox")
            .image(&s.image)
            .image_pull_policy("IfNotPresent")
            .command(argv)
    };
    let mut spec = PodSpec::container(container).volumes([key, tmp]);
    // Not root: `nobody`, which every image has. The key stays 0400 and owned by root; the
    // kubelet gives a read-only volume's files to the fsGroup with g+r, so ssh (which only
    // refuses a key that is its own user's and readable by others) reads it.
    spec.security_context = Some(PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        fs_group: Some(NOBODY),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    s.basics.pod(
        pod_name(node, &s.basics.run_id),
        &s.namespace,
        "etcdnet-jumpbox",
        spec,
    )
}

/// Route `jumpbox`: one pod per VM in the vSphere Namespace, from the Supervisor.
pub struct JumpboxRoute;

impl Route for JumpboxRoute {
    fn name(&self) -> &'static str {
        "jumpbox"
    }

    fn help(&self) -> &'static str {
        "A pod per VM in the vSphere Namespace that SSHes to the VM with the <cluster>-ssh key"
    }

    fn would_create(&self, s: &RouteSettings, target: &Target, at: &Address) -> Option<Pod> {
        Some(jumpbox_pod(
            &target.name,
            &at.ip.to_string(),
            &at.probe,
            &s.jumpbox,
        ))
    }

    fn open<'a>(
        &'a self,
        s: &'a RouteSettings,
        env: Env<'a>,
    ) -> BoxFuture<'a, Result<Box<dyn Session + 'a>>> {
        Box::pin(async move {
            Ok(Box::new(JumpboxSession {
                api: Api::namespaced(env.supervisor.clone(), &s.jumpbox.namespace),
                settings: &s.jumpbox,
            }) as Box<dyn Session>)
        })
    }
}

struct JumpboxSession<'a> {
    api: Api<Pod>,
    settings: &'a JumpboxSettings,
}

impl Session for JumpboxSession<'_> {
    fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane VMs through jumpbox pods in the Supervisor")
    }

    fn probe<'a>(
        &'a self,
        t: &'a Target,
        at: &'a Address,
        run: &'a Run<'a>,
    ) -> BoxFuture<'a, Reached> {
        Box::pin(async move {
            let s = self.settings;
            let ip = at.ip.to_string();
            let pod = jumpbox_pod(&t.name, &ip, &at.probe, s);
            match lifecycle::run(&self.api, &pod, run.tracker, run.bound, run.keep).await {
                Ok(done) => {
                    let r = read_log(&t.name, &ip, &s.ssh.user, &done.log);
                    Reached {
                        outcome: r.outcome,
                        reach: r.reach,
                        host_key: r.host_key,
                    }
                }
                Err(f) => {
                    let mut e = super::pod::reach_error(f, &s.namespace, "--jumpbox-image");
                    // vSphere Pods exist only on Supervisors with NSX networking.
                    if matches!(
                        e.kind,
                        ReachErrorKind::Unschedulable
                            | ReachErrorKind::Timeout
                            | ReachErrorKind::Other
                    ) {
                        e.message.push_str("; the Supervisor may not run vSphere Pods (they need NSX networking): try --via ssh");
                    }
                    Err(e).into()
                }
            }
        })
    }
}

/// What one jumpbox pod's log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpboxResult {
    pub reach: Vec<PortReach>,
    pub outcome: Result<ProbeOutput, ReachError>,
    /// The host key the VM presented, as the pod's ssh recorded it (None: no contact, or no
    /// trailer in the log).
    pub host_key: Option<HostKey>,
}

/// Reads a jumpbox pod's log: the reach lines, the probe document, ssh's exit and errors, the
/// VM's host key.
///
/// The node writes into this log too (the probe's output and its stderr, through ssh), so the
/// script's own lines are taken only where the node cannot write: the `ETCDNET-REACH` block at
/// the start (printed, and ended by `ETCDNET-REACH-END`, before ssh to the node starts: a line
/// of the node's can only come after the end) and the trailer at the end
/// (`ETCDNET-HOSTKEY`, `ETCDNET-SSH-EXIT`, printed after it ended; ssh's stderr goes into the
/// same ordered stream, so nothing of the node's comes after). The same lines anywhere else are
/// the node's, and are read as noise.
pub fn read_log(node: &str, ip: &str, user: &str, log: &str) -> JumpboxResult {
    let lines: Vec<&str> = log.lines().collect();
    if lines.first().map(|l| l.trim()) == Some("ETCDNET-JUMPBOX no-ssh-client") {
        return JumpboxResult {
            reach: Vec::new(),
            outcome: Err(ReachError {
                kind: ReachErrorKind::Other,
                message: format!("the jumpbox image has no ssh client; use --jumpbox-image with one (e.g. {DEFAULT_IMAGE})"),
            }),
            host_key: None,
        };
    }
    let mut reach = Vec::new();
    let mut body = &lines[..];
    while let Some((first, rest)) = body.split_first() {
        let mut words = first.split_whitespace();
        match words.next() {
            Some("ETCDNET-REACH") => {}
            Some("ETCDNET-REACH-END") => {
                body = rest;
                break;
            }
            _ => break,
        }
        if let Some(port) = words.next().and_then(|p| p.parse().ok()) {
            // What the script does not name (a newer script, a garbled line) is not known open.
            let state = match words.next() {
                Some("Open") => PortState::Open,
                Some("Timeout") => PortState::Timeout,
                Some("Refused") => PortState::Refused,
                Some("NoRoute") => PortState::NoRoute,
                _ => PortState::Unknown,
            };
            reach.push(PortReach { port, state });
        }
        body = rest;
    }
    reach.sort_by_key(|r| r.port);

    // The trailer: the last two lines that are not blank.
    let mut ssh_exit = None;
    let mut host_key = None;
    let last = body.iter().rposition(|l| !l.trim().is_empty());
    let before = last.and_then(|i| body[..i].iter().rposition(|l| !l.trim().is_empty()));
    if let (Some(i), Some(j)) = (last, before) {
        let exit = body[i].trim().strip_prefix("ETCDNET-SSH-EXIT ");
        let key = body[j].trim().strip_prefix("ETCDNET-HOSTKEY ");
        if let (Some(exit), Some(key)) = (exit, key) {
            ssh_exit = exit.trim().parse::<i32>().ok();
            let mut fields = key.split_whitespace();
            host_key = match (fields.next(), fields.next()) {
                (Some(type_name), Some(blob)) => HostKey::from_openssh(type_name, blob),
                _ => None,
            };
            body = &body[..j];
        }
    }
    let other: String = body
        .iter()
        .filter(|l| !l.starts_with("{\"schemaVersion\""))
        .flat_map(|l| [*l, "\n"])
        .collect();
    let outcome = match crate::probe::parse::parse(node, body.join("\n").as_bytes()) {
        Ok(p) => Ok(p),
        Err(e) => match ssh_exit {
            Some(0) | None if other.trim().is_empty() => Err(ReachError {
                kind: ReachErrorKind::BadOutput,
                message: e.to_string(),
            }),
            code => Err(classify_failure(ip, user, code, &other)),
        },
    };
    JumpboxResult {
        reach,
        outcome,
        host_key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn settings() -> JumpboxSettings {
        JumpboxSettings {
            namespace: "ns-prod".into(),
            cluster: "tkc-prod".into(),
            image: DEFAULT_IMAGE.into(),
            basics: PodBasics {
                image_pull_secret: None,
                run_id: "k3x9q".into(),
                deadline: Duration::from_secs(60),
            },
            ssh: SshSettings {
                user: "vmware-system-user".into(),
                connect_timeout: Duration::from_secs(3),
                options: vec![],
            },
        }
    }

    #[test]
    fn the_key_stays_in_the_secret_volume() {
        let pod = jumpbox_pod(
            "tkc-cp-1",
            "198.18.0.11",
            &ProbeArgs::new("198.18.0.11", ["198.18.0.12"]),
            &settings(),
        );
        let v = serde_json::to_value(&pod).unwrap();
        let vol = &v["spec"]["volumes"][0]["secret"];
        assert_eq!(vol["secretName"], "tkc-prod-ssh");
        assert_eq!(vol["defaultMode"], 0o400);
        let c = &v["spec"]["containers"][0];
        assert_eq!(c["volumeMounts"][0]["readOnly"], true);
        assert_eq!(
            c["env"],
            serde_json::json!([{"name": "HOME", "value": "/tmp"}]),
            "no env var but HOME: nothing of the key"
        );
        assert_eq!(v["metadata"]["namespace"], "ns-prod");
        assert_eq!(
            v["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "kubectl-etcdnet"
        );
        assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
        let argv: Vec<&str> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[4], "198.18.0.11");
        assert_eq!(
            argv[7], "/etc/etcdnet/ssh/ssh-privatekey",
            "a path, never the key"
        );
        assert!(argv[8].starts_with("sudo -n sh -s -- --self 198.18.0.11"));
        assert_eq!(
            argv[9],
            locked_option_words(),
            "ssh's options, as the ssh route's"
        );
        assert!(argv[9].contains("-o ForwardAgent=no") && argv[9].contains("-o ControlPath=none"));
        assert_eq!(argv[10], script::PROBE_SH);
    }

    #[test]
    fn the_jumpbox_is_restricted_and_not_root() {
        let pod = jumpbox_pod(
            "tkc-cp-1",
            "198.18.0.11",
            &ProbeArgs::new("198.18.0.11", ["198.18.0.12"]),
            &settings(),
        );
        let v = serde_json::to_value(&pod).unwrap();
        let psc = &v["spec"]["securityContext"];
        assert_eq!(psc["runAsNonRoot"], true);
        assert_eq!(psc["runAsUser"], 65534);
        assert_eq!(
            psc["fsGroup"], 65534,
            "how a non-root user reads the 0400 key"
        );
        assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault");
        let c = &v["spec"]["containers"][0];
        let sc = &c["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
        assert!(sc["capabilities"]["add"].is_null());
        let tmp = &v["spec"]["volumes"][1];
        assert_eq!(tmp["emptyDir"]["medium"], "Memory");
        assert_eq!(c["volumeMounts"][1]["mountPath"], "/tmp");
        for v in v["spec"]["volumes"].as_array().unwrap() {
            assert!(
                v["secret"].is_object() || v["emptyDir"].is_object(),
                "restricted volume types only: {v}"
            );
        }
    }

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY";
    const KEY_SHA256: &str = "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4";

    fn healthy_document() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/probe-output/healthy-node.json"
        ))
        .unwrap()
        .trim()
        .to_string()
    }

    #[test]
    fn reads_the_log() {
        let ok = format!(
            "ETCDNET-REACH 2379 Open\nETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Timeout\nETCDNET-REACH 2380 Refused\nETCDNET-REACH-END\n{}\n\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &ok);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.reach.iter().map(|p| p.port).collect::<Vec<_>>(),
            [22, 2379, 2380, 6443]
        );
        assert_eq!(r.reach[3].state, PortState::Timeout);
        let key = r.host_key.unwrap();
        assert_eq!(
            (key.key_type.as_str(), key.sha256.as_str()),
            ("ED25519", KEY_SHA256)
        );

        let denied = "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\nvmware-system-user@198.18.0.11: Permission denied (publickey).\n\nETCDNET-HOSTKEY ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY\nETCDNET-SSH-EXIT 255\n";
        let r = read_log("cp1", "198.18.0.11", "u", denied);
        assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::AuthFailed);
        assert!(r.host_key.is_some(), "recorded before authentication");

        let timeout = "ETCDNET-REACH 22 Timeout\nETCDNET-REACH-END\nssh: connect to host 198.18.0.11 port 22: Connection timed out\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 255\n";
        let r = read_log("cp1", "198.18.0.11", "u", timeout);
        assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::Unreachable);
        assert_eq!(r.host_key, None);

        let no_ssh = "ETCDNET-JUMPBOX no-ssh-client\n";
        assert!(read_log("cp1", "198.18.0.11", "u", no_ssh)
            .outcome
            .unwrap_err()
            .message
            .contains("no ssh client"));
    }

    #[test]
    fn a_port_state_it_does_not_know_is_unknown_never_open() {
        let log = "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Unknown\nETCDNET-REACH 2380 Halfway\nETCDNET-REACH 6443\n";
        let r = read_log("cp1", "198.18.0.11", "u", log);
        let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
        assert_eq!(
            states,
            [
                (22, PortState::Open),
                (2379, PortState::Unknown),
                (2380, PortState::Unknown),
                (6443, PortState::Unknown)
            ]
        );
    }

    /// The node writes into the same log: lines it prints that look like the script's are not
    /// taken for them.
    #[test]
    fn the_node_cannot_write_the_scripts_lines() {
        let forged = "ETCDNET-REACH 6443 Open\nETCDNET-HOSTKEY ssh-rsa AAAAB3NzaC1yc2E=\nETCDNET-SSH-EXIT 0\nETCDNET-JUMPBOX no-ssh-client\n";
        let log = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Refused\nETCDNET-REACH-END\n{forged}{}\n{forged}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &log);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.reach,
            [
                PortReach {
                    port: 22,
                    state: PortState::Open
                },
                PortReach {
                    port: 6443,
                    state: PortState::Refused
                }
            ]
        );
        assert_eq!(r.host_key.unwrap().sha256, KEY_SHA256);
        // Without the script's trailer (the pod was killed), a forged one is not the trailer.
        let cut = format!(
            "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{forged}{}\n{forged}",
            healthy_document()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &cut);
        assert_eq!(r.host_key, None);
        assert_eq!(r.reach.len(), 1);
    }

    /// The script itself under sh, with an `ssh` that answers as the real one does for each
    /// port (and one way it never does): what the plugin reads back.
    #[test]
    fn the_script_reports_what_ssh_says() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("ssh");
        let calls = dir.path().join("calls");
        std::fs::write(
            &fake,
            format!(
                r#"#!/bin/sh
echo "$*" >>{calls}
port=22 kh= probe=
while [ $# -gt 0 ]; do
    case $1 in
        -p) port=$2; shift ;;
        -i) probe=yes; shift ;;
        -o) case $2 in UserKnownHostsFile=*) kh=${{2#UserKnownHostsFile=}} ;; esac; shift ;;
        -l) shift ;;
    esac
    shift
done
# accept-new: the key is recorded on first contact with 22.
if [ "$port" = 22 ] && [ ! -s "$kh" ]; then echo "198.18.0.11 {KEY}" >>"$kh"; fi
case $port in
    2379) echo "kex_exchange_identification: Connection closed by remote host" >&2; exit 255 ;;
    2380) echo "ssh: something nobody has seen before" >&2; exit 255 ;;
    6443) echo "ssh: connect to host 198.18.0.11 port 6443: Connection refused" >&2; exit 255 ;;
esac
if [ -n "$probe" ]; then cat >/dev/null; cat {doc}; exit 0; fi
echo "etcdnet@198.18.0.11: Permission denied (publickey)." >&2
exit 255
"#,
                calls = calls.display(),
                doc = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/probe-output/healthy-node.json"
                ),
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pod = jumpbox_pod(
            "cp1",
            "198.18.0.11",
            &ProbeArgs::new("198.18.0.11", ["198.18.0.12"]),
            &settings(),
        );
        let argv = pod.spec.unwrap().containers[0].command.clone().unwrap();
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
            .env("TMPDIR", dir.path())
            .output()
            .unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let r = read_log("cp1", "198.18.0.11", "vmware-system-user", &log);
        let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
        assert_eq!(
            states,
            [
                (22, PortState::Open),
                (2379, PortState::Open),
                (2380, PortState::Unknown),
                (6443, PortState::Refused)
            ],
            "{log}"
        );
        assert!(r.outcome.is_ok(), "{:?}\n{log}", r.outcome);
        assert_eq!(
            r.host_key.map(|k| k.sha256).as_deref(),
            Some(KEY_SHA256),
            "{log}"
        );
        // Every ssh started with the locked options, the pod's own known_hosts file after them.
        let calls = std::fs::read_to_string(&calls).unwrap();
        assert_eq!(calls.lines().count(), 5, "{calls}");
        for call in calls.lines() {
            assert!(call.starts_with(&locked_option_words()), "{call}");
            assert!(call.contains("-o UserKnownHostsFile=/"), "{call}");
        }
        // The pod's known_hosts file is removed with the run.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
