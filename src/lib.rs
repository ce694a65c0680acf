//! kubectl-etcdnet: diagnose etcd quorum loss in vSphere Supervisor workload clusters.
//!
//! One run is a pipeline of plain values, one module a stage:
//!
//! ```text
//! cli ─► connect ─► supervisor (find) ─► workload ─► analyse ─► report ─► render ─► String
//! ```
//!
//! `main` is thin: it parses the command line, calls [`run`], prints the string it returns and
//! exits with its code. Nothing below `run` writes to stdout.

pub mod analyse;
pub mod cleanup;
pub mod cli;
pub mod connect;
pub mod diagnose;
pub mod error;
pub mod labels;
pub mod probe;
pub mod progress;
pub mod render;
pub mod report;
pub mod route;
pub mod supervisor;
pub mod workload;

use clap::CommandFactory;

use crate::cli::{Cli, Command, OutputFormat};
use crate::error::{Error, Result, EXIT_INCOMPLETE, EXIT_OK};
use crate::report::StatusReport;

/// What a run prints and how it exits. Notes go to stderr after the output.
#[derive(Debug)]
pub struct Outcome {
    pub stdout: String,
    pub notes: Vec<String>,
    pub exit_code: i32,
}

impl Outcome {
    fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            notes: Vec::new(),
            exit_code: EXIT_OK,
        }
    }
}

pub async fn run(cli: Cli) -> Result<Outcome> {
    let g = &cli.global;
    match &cli.command {
        Command::Version => Ok(Outcome::ok(match g.output {
            OutputFormat::Json | OutputFormat::Yaml => {
                render::structured(&report::VersionReport::current(), g.output)?
            }
            _ => format!("kubectl-etcdnet {}\n", env!("CARGO_PKG_VERSION")),
        })),
        Command::Completion { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(
                clap_complete::Shell::from(*shell),
                &mut Cli::command(),
                "kubectl-etcdnet",
                &mut buf,
            );
            Ok(Outcome::ok(String::from_utf8_lossy(&buf).into_owned()))
        }
        Command::Status(args) => {
            let conn = connect::connect(g).await?;
            let report = status_report(&conn, &args.cluster, args.api_timeout).await?;
            Ok(Outcome {
                stdout: render::status(&report, g.output, render::Paint::detect())?,
                notes: Vec::new(),
                exit_code: report.result.exit_code,
            })
        }
        Command::Diagnose(args) => run_diagnose(g, args).await,
        Command::Cleanup(args) => {
            let conn = connect::connect(g).await?;
            let scope = cleanup::CleanupScope {
                namespace: (!args.all_namespaces).then_some(conn.namespace.as_str()),
                older_than: args.older_than,
                dry_run: args.dry_run,
            };
            let mut items = cleanup::clean(&conn.client, "supervisor", &scope).await?;
            let mut skipped = Vec::new();
            if let Some(cluster) = &args.cluster {
                let workload_scope = cleanup::CleanupScope {
                    namespace: None,
                    ..scope
                };
                let found = async {
                    let client =
                        workload::client(&conn.client, &conn.namespace, cluster, g.request_timeout)
                            .await?;
                    cleanup::clean(&client, cluster, &workload_scope).await
                };
                match found.await {
                    Ok(more) => items.extend(more),
                    Err(e) => skipped.push(format!("workload cluster {cluster:?}: {e}")),
                }
            }
            let failed = items.iter().any(|i| i.action.starts_with("error"));
            let report = cleanup::CleanupReport::new(items, skipped);
            let stdout = match g.output {
                OutputFormat::Json | OutputFormat::Yaml => render::structured(&report, g.output)?,
                _ => cleanup::render_table(&report),
            };
            Ok(Outcome {
                stdout,
                notes: Vec::new(),
                exit_code: if failed || !report.skipped.is_empty() {
                    EXIT_INCOMPLETE
                } else {
                    EXIT_OK
                },
            })
        }
    }
}

async fn run_diagnose(g: &cli::GlobalArgs, args: &cli::DiagnoseArgs) -> Result<Outcome> {
    let conn = connect::connect(g).await?;
    let tracker = route::lifecycle::PodTracker::default();
    let progress = progress::Progress::for_stderr();
    let result = tokio::select! {
        r = diagnose::diagnose(&conn, args, &tracker, &progress) => r,
        _ = shutdown_signal() => Err(diagnose::interrupted()),
    };
    progress.finish();
    // Every way out passes here: delete what is left, unless asked to keep it.
    let mut notes = Vec::new();
    if args.keep_pods {
        let kept = tracker.names();
        if !kept.is_empty() {
            notes.push(format!(
                "kept {} probe pod(s) in namespace {} of the workload cluster: {}; remove them with: kubectl etcdnet cleanup {} -n {}",
                kept.len(), args.pod_namespace, kept.join(", "), args.cluster, conn.namespace
            ));
        }
    } else {
        for failed in tracker.delete_all(std::time::Duration::from_secs(15)).await {
            notes.push(format!("warning: could not delete probe pod {failed}; run: kubectl etcdnet cleanup {} -n {}", args.cluster, conn.namespace));
        }
    }
    match result? {
        diagnose::Diagnosed::DryRun(pods) => {
            let format = if g.output == OutputFormat::Json {
                OutputFormat::Json
            } else {
                OutputFormat::Yaml
            };
            let mut out = String::new();
            for pod in &pods {
                if format == OutputFormat::Yaml {
                    out.push_str("---\n");
                }
                out.push_str(&render::structured(pod, format)?);
            }
            notes.push(format!(
                "dry run: {} pod(s) shown, nothing created",
                pods.len()
            ));
            Ok(Outcome {
                stdout: out,
                notes,
                exit_code: EXIT_OK,
            })
        }
        diagnose::Diagnosed::Report(report) => Ok(Outcome {
            stdout: render::diagnose(&report, g.output, render::Paint::detect())?,
            notes,
            exit_code: report.result.exit_code,
        }),
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The Supervisor walk plus the workload API check, analysed.
pub async fn status_report(
    conn: &connect::Connection,
    cluster: &str,
    api_timeout: std::time::Duration,
) -> Result<StatusReport> {
    let facts = supervisor_facts(conn, cluster).await?;
    let api = workload::check(&conn.client, &conn.namespace, cluster, api_timeout).await;
    let findings = analyse::status_findings(&facts, &api);
    Ok(StatusReport::new(facts, api, findings))
}

/// Discovery (is this a Supervisor, which versions) and the walk to the cluster's control plane.
pub async fn supervisor_facts(
    conn: &connect::Connection,
    cluster: &str,
) -> Result<supervisor::ClusterFacts> {
    let apis = supervisor::discover(&conn.client, &conn.context)
        .await
        .map_err(|e| unreachable_hint(e, conn))?;
    let scope = supervisor::Scope {
        context: conn.context.clone(),
        namespace: conn.namespace.clone(),
    };
    supervisor::find(&conn.client, &apis, &scope, cluster).await
}

/// The first request is where an unreachable Supervisor shows; say which server it was.
fn unreachable_hint(e: Error, conn: &connect::Connection) -> Error {
    match e {
        Error::Api(msg) => Error::Api(format!(
            "{msg} (is the Supervisor API at {} reachable, and the login still valid? try: kubectl --context {} get ns)",
            conn.server, conn.context
        )),
        other => other,
    }
}
