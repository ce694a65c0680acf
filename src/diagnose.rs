//! `kubectl etcdnet diagnose`: the Supervisor walk, the workload API check, one probe per
//! control-plane node (all at once), the analysis, the report.
//!
//! Everything created on the way is tracked by the caller's [`PodTracker`]: this function may be
//! cancelled at any await (Ctrl-C) and the caller still deletes every pod.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::cli::{DiagnoseArgs, Via};
use crate::connect::Connection;
use crate::error::{Error, Result};
use crate::probe::script::{self, ProbeArgs};
use crate::probe::{NodeReport, ReachError, ReachErrorKind};
use crate::progress::Progress;
use crate::report::{DiagnoseReport, RouteInfo};
use crate::route::jumpbox::{self, JumpboxSettings};
use crate::route::lifecycle::{self, PodFailure, PodTracker};
use crate::route::pod::{self, PodSettings, PodTarget};
use crate::route::ssh::{self, KeyFile, SshSettings, SshTarget};
use crate::supervisor::ClusterFacts;
use crate::workload;

/// What a diagnose run produced.
pub enum Diagnosed {
    Report(Box<DiagnoseReport>),
    /// `--dry-run`: the pods it would have created.
    DryRun(Vec<Pod>),
}

/// A short random id shared by all pods of one run (label and name suffix).
pub fn run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = h.finish();
    (0..5)
        .map(|_| {
            let c = alphabet[(n % alphabet.len() as u64) as usize] as char;
            n /= alphabet.len() as u64;
            c
        })
        .collect()
}

pub async fn diagnose(
    conn: &Connection,
    args: &DiagnoseArgs,
    tracker: &PodTracker,
    progress: &Progress,
) -> Result<Diagnosed> {
    let started = Instant::now();
    progress.stage(format!(
        "reading cluster {} in namespace {} (context {})",
        args.cluster, conn.namespace, conn.context
    ));
    let facts = crate::supervisor_facts(conn, &args.cluster).await?;
    let run_id = run_id();
    let settings = PodSettings {
        namespace: args.pod_namespace.clone(),
        image: args.image.clone(),
        image_pull_secret: args.image_pull_secret.clone(),
        run_id: run_id.clone(),
        deadline: args.timeout,
    };
    let plans = plan(&facts, args);
    let jumpbox = JumpboxSettings {
        namespace: conn.namespace.clone(),
        cluster: args.cluster.clone(),
        image: args.jumpbox_image.clone(),
        image_pull_secret: args.image_pull_secret.clone(),
        run_id: run_id.clone(),
        deadline: args.timeout,
        ssh: SshSettings {
            user: args.ssh_user.clone(),
            connect_timeout: args.connect_timeout,
            options: args.ssh_option.clone(),
        },
    };

    // The workload API decides `auto`, and is part of every report.
    progress.stage("checking the workload cluster's API");
    let api = workload::check(
        &conn.client,
        &conn.namespace,
        &args.cluster,
        args.api_timeout,
    )
    .await;
    let (via, reason) = match args.via {
        Via::Auto if api.is_reachable() => (Via::Pod, "auto: the workload API answers".to_string()),
        Via::Auto => (
            Via::Jumpbox,
            format!(
                "auto: the workload API does not answer ({}), so through the Supervisor",
                api.state
            ),
        ),
        Via::Pod => (Via::Pod, "--via pod".into()),
        Via::Jumpbox => (Via::Jumpbox, "--via jumpbox".into()),
        Via::Ssh => (Via::Ssh, "--via ssh".into()),
    };

    if args.dry_run {
        let pods = match via {
            Via::Jumpbox => plans
                .iter()
                .filter_map(|p| {
                    Some(jumpbox::jumpbox_pod(
                        &p.target.name,
                        &p.ip?.to_string(),
                        p.probe.as_ref()?,
                        &jumpbox,
                    ))
                })
                .collect(),
            Via::Ssh => Vec::new(),
            _ => plans
                .iter()
                .filter_map(|p| {
                    p.probe
                        .as_ref()
                        .map(|probe| pod::debug_pod(&p.target, &settings, &script::argv(probe)))
                })
                .collect(),
        };
        return Ok(Diagnosed::DryRun(pods));
    }

    let left = args.timeout.saturating_sub(started.elapsed());
    let reports = match via {
        Via::Pod if !api.is_reachable() => {
            let why = format!(
                "the workload API does not answer ({}: {}), so no pod can run on the nodes; use --via jumpbox (through the Supervisor) or --via ssh",
                api.state, api.detail
            );
            unreachable_all(&plans, ReachErrorKind::Unreachable, &why)
        }
        Via::Pod => {
            let client = workload::client(
                &conn.client,
                &conn.namespace,
                &args.cluster,
                args.api_timeout.max(Duration::from_secs(10)),
            )
            .await?;
            let pods: Api<Pod> = Api::namespaced(client, &args.pod_namespace);
            probe_with_pods(
                &pods,
                &plans,
                &settings,
                tracker,
                left,
                args.keep_pods,
                progress,
            )
            .await
        }
        Via::Jumpbox => {
            let pods: Api<Pod> = Api::namespaced(conn.client.clone(), &conn.namespace);
            probe_with_jumpbox(
                &pods,
                &plans,
                &jumpbox,
                tracker,
                left,
                args.keep_pods,
                progress,
            )
            .await
        }
        Via::Ssh | Via::Auto => {
            probe_with_ssh(conn, args, &plans, &jumpbox.ssh, left, progress).await?
        }
    };
    let route = RouteInfo {
        name: match via {
            Via::Pod | Via::Auto => "pod",
            Via::Jumpbox => "jumpbox",
            Via::Ssh => "ssh",
        }
        .into(),
        reason,
    };
    let report = DiagnoseReport::new(
        facts,
        api,
        route,
        reports,
        started.elapsed().as_millis() as u64,
    );
    Ok(Diagnosed::Report(Box::new(report)))
}

/// One node's plan: where its pod goes and what its probe is told (None: it cannot be probed).
struct Plan {
    target: PodTarget,
    ip: Option<std::net::IpAddr>,
    probe: Option<ProbeArgs>,
}

fn plan(facts: &ClusterFacts, args: &DiagnoseArgs) -> Vec<Plan> {
    let ips: Vec<String> = facts
        .nodes
        .iter()
        .filter_map(|n| n.ip())
        .map(|ip| ip.to_string())
        .collect();
    facts
        .nodes
        .iter()
        .map(|n| {
            let node_name = n
                .machine
                .as_ref()
                .and_then(|m| m.node_name.clone())
                .unwrap_or_else(|| n.name.clone());
            let probe = n.ip().map(|ip| {
                let me = ip.to_string();
                ProbeArgs {
                    connect_timeout_s: args.connect_timeout.as_secs().max(1) as u32,
                    log_lines: args.log_lines,
                    ..ProbeArgs::new(me.clone(), ips.iter().filter(|p| **p != me).cloned())
                }
            });
            Plan {
                target: PodTarget {
                    name: n.name.clone(),
                    node_name,
                },
                ip: n.ip(),
                probe,
            }
        })
        .collect()
}

async fn probe_with_pods(
    api: &Api<Pod>,
    plans: &[Plan],
    settings: &PodSettings,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
    progress: &Progress,
) -> Vec<NodeReport> {
    let steps = &progress.steps(
        format!("probing {} control-plane nodes with pods", plans.len()),
        plans.len(),
    );
    let runs = plans.iter().map(|p| async move {
        let outcome = match &p.probe {
            None => Err(ReachError::no_address()),
            Some(probe) => {
                let pod = pod::debug_pod(&p.target, settings, &script::argv(probe));
                match lifecycle::run(api, &pod, tracker, bound, keep).await {
                    Ok(run) => crate::probe::parse::parse(&p.target.name, run.log.as_bytes())
                        .map_err(|e| ReachError {
                            kind: ReachErrorKind::BadOutput,
                            message: format!(
                                "{e} (pod exit code {})",
                                run.exit_code
                                    .map(|c| c.to_string())
                                    .unwrap_or_else(|| "?".into())
                            ),
                        }),
                    Err(f) => Err(reach_error(f, &settings.namespace, "--image")),
                }
            }
        };
        steps.one_done();
        NodeReport {
            name: p.target.name.clone(),
            ip: p.ip,
            outcome,
            reach: vec![],
        }
    });
    futures::future::join_all(runs).await
}

fn unreachable_all(plans: &[Plan], kind: ReachErrorKind, why: &str) -> Vec<NodeReport> {
    let error = ReachError {
        kind,
        message: why.to_string(),
    };
    plans.iter().map(|p| p.failed(error.clone())).collect()
}

impl Plan {
    /// This node's report when it could not be probed.
    fn failed(&self, error: ReachError) -> NodeReport {
        NodeReport {
            name: self.target.name.clone(),
            ip: self.ip,
            outcome: Err(error),
            reach: vec![],
        }
    }
}

/// Route `jumpbox`: one pod per VM in the vSphere Namespace, all at once.
async fn probe_with_jumpbox(
    api: &Api<Pod>,
    plans: &[Plan],
    s: &JumpboxSettings,
    tracker: &PodTracker,
    bound: Duration,
    keep: bool,
    progress: &Progress,
) -> Vec<NodeReport> {
    let steps = &progress.steps(
        format!(
            "probing {} control-plane VMs through jumpbox pods in the Supervisor",
            plans.len()
        ),
        plans.len(),
    );
    let runs = plans.iter().map(|p| async move {
        let (Some(ip), Some(probe)) = (p.ip, p.probe.as_ref()) else {
            return p.failed(ReachError::no_address());
        };
        let ip = ip.to_string();
        let pod = jumpbox::jumpbox_pod(&p.target.name, &ip, probe, s);
        let report = match lifecycle::run(api, &pod, tracker, bound, keep).await {
            Ok(run) => {
                let r = jumpbox::read_log(&p.target.name, &ip, &s.ssh.user, &run.log);
                NodeReport { name: p.target.name.clone(), ip: p.ip, outcome: r.outcome, reach: r.reach }
            }
            Err(f) => {
                let mut e = reach_error(f, &s.namespace, "--jumpbox-image");
                // vSphere Pods exist only on Supervisors with NSX networking.
                if matches!(e.kind, ReachErrorKind::Unschedulable | ReachErrorKind::Timeout | ReachErrorKind::Other) {
                    e.message.push_str("; the Supervisor may not run vSphere Pods (they need NSX networking): try --via ssh");
                }
                NodeReport { name: p.target.name.clone(), ip: p.ip, outcome: Err(e), reach: vec![] }
            }
        };
        steps.one_done();
        report
    });
    futures::future::join_all(runs).await
}

/// Route `ssh`: the admin's own ssh. The key comes from --ssh-identity, the agent, or the
/// cluster's secret written to a private temporary file that is gone when this returns (or is
/// cancelled: the file is owned by this future).
async fn probe_with_ssh(
    conn: &Connection,
    args: &DiagnoseArgs,
    plans: &[Plan],
    settings: &SshSettings,
    bound: Duration,
    progress: &Progress,
) -> Result<Vec<NodeReport>> {
    let key_file;
    let identity: Option<&std::path::Path> = if let Some(path) = &args.ssh_identity {
        Some(path.as_path())
    } else if args.ssh_agent {
        None
    } else {
        let key = read_ssh_key(conn, &args.cluster).await?;
        key_file = KeyFile::write(&key)
            .map_err(|e| Error::Config(format!("cannot write a temporary key file: {e}")))?;
        Some(key_file.path())
    };
    progress.stage(format!(
        "probing {} control-plane VMs over ssh",
        plans.len()
    ));
    let targets: Vec<SshTarget> = plans
        .iter()
        .map(|p| SshTarget {
            name: p.target.name.clone(),
            ip: p.ip,
            probe: p.probe.clone(),
        })
        .collect();
    Ok(ssh::probe_all(&targets, settings, identity, bound).await)
}

/// The private key from `<cluster>-ssh` (key `ssh-privatekey`), kept in memory only.
async fn read_ssh_key(conn: &Connection, cluster: &str) -> Result<Vec<u8>> {
    use k8s_openapi::api::core::v1::Secret;
    let name = jumpbox::ssh_secret_name(cluster);
    let secrets: Api<Secret> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let secret = secrets.get(&name).await.map_err(|e| {
        Error::from_kube(
            format!(
                "reading secret {name:?} in namespace {:?} (or use --ssh-identity / --ssh-agent)",
                conn.namespace
            ),
            e,
        )
    })?;
    secret
        .data
        .and_then(|mut d| d.remove(jumpbox::KEY_FILE))
        .map(|b| b.0)
        .ok_or_else(|| {
            Error::Config(format!(
                "secret {name:?} has no key {:?}",
                jumpbox::KEY_FILE
            ))
        })
}

/// A pod failure as one line that says what to do.
fn reach_error(f: PodFailure, ns: &str, image_flag: &str) -> ReachError {
    let (kind, message) = match f {
        PodFailure::Rejected(m) => (
            ReachErrorKind::Rejected,
            format!("the probe pod was rejected: {m}; use --pod-namespace with a namespace whose Pod Security level is privileged (kube-system usually is)"),
        ),
        PodFailure::Forbidden(m) => (
            ReachErrorKind::Rejected,
            format!("{m}; creating, watching, reading the log of and deleting pods in {ns} is needed (docs/rbac.yaml)"),
        ),
        PodFailure::ImagePull { image, reason, message } => (
            ReachErrorKind::ImagePull,
            format!("cannot pull image {image:?} ({reason}: {message}); use {image_flag} from a registry the nodes reach, and --image-pull-secret if it needs credentials"),
        ),
        PodFailure::Pending(why) => (ReachErrorKind::Unschedulable, format!("the probe pod cannot start: {why}")),
        PodFailure::Timeout(why) => (ReachErrorKind::Timeout, format!("the probe pod did not finish: {why}; raise --timeout")),
        PodFailure::Gone => (ReachErrorKind::Other, "the probe pod was deleted while it ran".into()),
        PodFailure::Api(m) => (ReachErrorKind::Other, m),
    };
    ReachError { kind, message }
}

/// Errors that end the whole run keep their exit code; this only names the run.
pub fn interrupted() -> Error {
    Error::Interrupted("interrupted; every probe pod created was deleted".into())
}
