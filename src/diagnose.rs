//! `kubectl etcdnet diagnose`: the Supervisor walk, the workload API check, one probe per
//! control-plane node (all at once), the analysis, the report.
//!
//! Everything created on the way is tracked by the caller's [`PodTracker`]: this function may be
//! cancelled at any await (Ctrl-C) and the caller still deletes every pod.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::cli::DiagnoseArgs;
use crate::connect::Connection;
use crate::error::{Error, Result};
use crate::probe::script::{self, ProbeArgs};
use crate::probe::{NodeReport, ReachError, ReachErrorKind};
use crate::progress::Progress;
use crate::report::{DiagnoseReport, RouteInfo};
use crate::route::lifecycle::{self, PodFailure, PodTracker};
use crate::route::pod::{self, PodSettings, PodTarget};
use crate::supervisor::{self, ClusterFacts};
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
    let apis = supervisor::discover(&conn.client, &conn.context).await?;
    let scope = supervisor::Scope {
        context: conn.context.clone(),
        namespace: conn.namespace.clone(),
    };
    let facts = supervisor::find(&conn.client, &apis, &scope, &args.cluster).await?;
    let run_id = run_id();
    let settings = PodSettings {
        namespace: args.pod_namespace.clone(),
        image: args.image.clone(),
        image_pull_secret: args.image_pull_secret.clone(),
        run_id: run_id.clone(),
        deadline: args.timeout,
    };
    let plans = plan(&facts, args);

    if args.dry_run {
        let pods = plans
            .iter()
            .filter_map(|p| {
                p.probe
                    .as_ref()
                    .map(|probe| pod::debug_pod(&p.target, &settings, &script::argv(probe)))
            })
            .collect();
        return Ok(Diagnosed::DryRun(pods));
    }

    progress.stage("checking the workload cluster's API");
    let api = workload::check(
        &conn.client,
        &conn.namespace,
        &args.cluster,
        args.api_timeout,
    )
    .await;
    let (route, reports) = if api.is_reachable() {
        let client = workload::client(
            &conn.client,
            &conn.namespace,
            &args.cluster,
            args.api_timeout.max(Duration::from_secs(10)),
        )
        .await?;
        let pods: Api<Pod> = Api::namespaced(client, &args.pod_namespace);
        let left = args.timeout.saturating_sub(started.elapsed());
        let reports = probe_with_pods(
            &pods,
            &plans,
            &settings,
            tracker,
            left,
            args.keep_pods,
            progress,
        )
        .await;
        (
            RouteInfo {
                name: "pod".into(),
                reason: "the workload API answers".into(),
            },
            reports,
        )
    } else {
        let why = format!(
            "the workload API does not answer ({}: {}), so no pod can run on the nodes; the jumpbox route through the Supervisor is needed",
            api.state, api.detail
        );
        let reports = plans
            .iter()
            .map(|p| NodeReport {
                name: p.target.name.clone(),
                ip: p.ip,
                outcome: Err(ReachError {
                    kind: ReachErrorKind::Unreachable,
                    message: why.clone(),
                }),
            })
            .collect();
        (
            RouteInfo {
                name: "pod".into(),
                reason: "--via pod (the workload API does not answer)".into(),
            },
            reports,
        )
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
    let done = std::sync::atomic::AtomicUsize::new(0);
    let total = plans.len();
    progress.stage(format!(
        "probing {total} control-plane nodes with pods (0/{total} done)"
    ));
    let done = &done;
    let runs = plans.iter().map(|p| async move {
        let outcome = match &p.probe {
            None => Err(ReachError {
                kind: ReachErrorKind::NoAddress,
                message: "the VirtualMachine has no IP address yet".into(),
            }),
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
                    Err(f) => Err(reach_error(f, settings)),
                }
            }
        };
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress.stage(format!(
            "probing {total} control-plane nodes with pods ({n}/{total} done)"
        ));
        NodeReport {
            name: p.target.name.clone(),
            ip: p.ip,
            outcome,
        }
    });
    futures::future::join_all(runs).await
}

/// A pod failure as one line that says what to do.
fn reach_error(f: PodFailure, settings: &PodSettings) -> ReachError {
    let ns = &settings.namespace;
    let (kind, message) = match f {
        PodFailure::Rejected(m) => (
            ReachErrorKind::Rejected,
            format!("the probe pod was rejected: {m}; use --pod-namespace with a namespace whose Pod Security level is privileged (kube-system usually is)"),
        ),
        PodFailure::Forbidden(m) => (
            ReachErrorKind::Rejected,
            format!("{m}; the workload cluster's kubeconfig must allow create/get/watch/delete pods and get pods/log in {ns}"),
        ),
        PodFailure::ImagePull { image, reason, message } => (
            ReachErrorKind::ImagePull,
            format!("cannot pull image {image:?} ({reason}: {message}); use --image from a registry the nodes reach, and --image-pull-secret if it needs credentials"),
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
