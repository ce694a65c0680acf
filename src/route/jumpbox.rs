//! Route 2: from the Supervisor, when the workload cluster's API is down (the support article's
//! case). One short-lived pod per control-plane VM in the vSphere Namespace mounts the cluster's
//! `<cluster>-ssh` secret read-only (mode 0400) and SSHes to the VM as the node user, running the
//! probe with sudo (`jumpbox.sh`). The key never leaves the secret volume: it is in no env var,
//! argument, pod spec field or output.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{
    Container, KeyToPath, Pod, PodSpec, SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi_ext::{ContainerExt, PodSpecExt};
use kube::api::Api;

use super::lifecycle;
use super::ssh::{classify_failure, remote_probe_command, SshSettings};
use super::{Address, Env, PodBasics, Reached, Route, RouteSettings, Run, Session, Target};
use crate::error::Result;
use crate::probe::script::{self, ProbeArgs};
pub use crate::probe::{PortReach, PortState};
use crate::probe::{ProbeOutput, ReachError, ReachErrorKind};

pub const JUMPBOX_SH: &str = include_str!("jumpbox.sh");
/// An image with an OpenSSH client and a POSIX sh (alpine/git ships both).
pub const DEFAULT_IMAGE: &str = "docker.io/alpine/git:2.47.2";
pub const KEY_DIR: &str = "/etc/etcdnet/ssh";
pub const KEY_FILE: &str = "ssh-privatekey";

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
        script::PROBE_SH.into(),
    ];
    let container = Container {
        resources: Some(super::small_resources("128Mi")),
        volume_mounts: Some(vec![VolumeMount {
            name: "ssh-key".into(),
            mount_path: KEY_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        }]),
        ..Container::new("jumpbox")
            .image(&s.image)
            .image_pull_policy("IfNotPresent")
            .command(argv)
    };
    let spec = PodSpec::container(container).volumes([key]);
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
}

/// Reads a jumpbox pod's log: the reach lines, the probe document, ssh's exit and errors.
pub fn read_log(node: &str, ip: &str, user: &str, log: &str) -> JumpboxResult {
    let mut reach = Vec::new();
    let mut ssh_exit = None;
    let mut no_client = false;
    let mut other = String::new();
    for line in log.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("ETCDNET-REACH") => {
                let port = words.next().and_then(|p| p.parse().ok());
                let state = match words.next() {
                    Some("Open") => Some(PortState::Open),
                    Some("Timeout") => Some(PortState::Timeout),
                    Some("Refused") => Some(PortState::Refused),
                    Some("NoRoute") => Some(PortState::NoRoute),
                    _ => None,
                };
                if let (Some(port), Some(state)) = (port, state) {
                    reach.push(PortReach { port, state });
                }
            }
            Some("ETCDNET-SSH-EXIT") => ssh_exit = words.next().and_then(|c| c.parse().ok()),
            Some("ETCDNET-JUMPBOX") => no_client = true,
            _ if !line.starts_with("{\"schemaVersion\"") => {
                other.push_str(line);
                other.push('\n');
            }
            _ => {}
        }
    }
    reach.sort_by_key(|r| r.port);
    let outcome = if no_client {
        Err(ReachError {
            kind: ReachErrorKind::Other,
            message: format!("the jumpbox image has no ssh client; use --jumpbox-image with one (e.g. {DEFAULT_IMAGE})"),
        })
    } else {
        match crate::probe::parse::parse(node, log.as_bytes()) {
            Ok(p) => Ok(p),
            Err(e) => match ssh_exit {
                Some(0) | None if other.trim().is_empty() => Err(ReachError {
                    kind: ReachErrorKind::BadOutput,
                    message: e.to_string(),
                }),
                code => Err(classify_failure(ip, user, code, &other)),
            },
        }
    };
    JumpboxResult { reach, outcome }
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
        assert!(c.get("env").is_none(), "no env vars");
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
    }

    #[test]
    fn reads_the_log() {
        let ok = format!(
            "ETCDNET-REACH 2379 Open\nETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Timeout\nETCDNET-REACH 2380 Refused\n{}\n\nETCDNET-SSH-EXIT 0\n",
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/probe-output/healthy-node.json")).unwrap().trim()
        );
        let r = read_log("cp1", "198.18.0.11", "u", &ok);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.reach.iter().map(|p| p.port).collect::<Vec<_>>(),
            [22, 2379, 2380, 6443]
        );
        assert_eq!(r.reach[3].state, PortState::Timeout);

        let denied = "ETCDNET-REACH 22 Open\nvmware-system-user@198.18.0.11: Permission denied (publickey).\n\nETCDNET-SSH-EXIT 255\n";
        assert_eq!(
            read_log("cp1", "198.18.0.11", "u", denied)
                .outcome
                .unwrap_err()
                .kind,
            ReachErrorKind::AuthFailed
        );

        let timeout = "ETCDNET-REACH 22 Timeout\nssh: connect to host 198.18.0.11 port 22: Connection timed out\n\nETCDNET-SSH-EXIT 255\n";
        assert_eq!(
            read_log("cp1", "198.18.0.11", "u", timeout)
                .outcome
                .unwrap_err()
                .kind,
            ReachErrorKind::Unreachable
        );

        let no_ssh = "ETCDNET-JUMPBOX no-ssh-client\n";
        assert!(read_log("cp1", "198.18.0.11", "u", no_ssh)
            .outcome
            .unwrap_err()
            .message
            .contains("no ssh client"));
    }
}
