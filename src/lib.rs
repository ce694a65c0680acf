//! kubectl-etcdnet: diagnose etcd quorum loss in vSphere Supervisor workload clusters.
//!
//! One run is a pipeline of plain values, one module a stage (`diagnose`; `status` stops after
//! the findings):
//!
//! ```text
//! cli ──► connect ──► supervisor ──► workload ──► plan ──► route ──► report::Evidence ──► analyse ──► report ──► render
//! Options  Connection  Inventory,     WorkloadCheck  DiagnosePlan  Vec<NodeReport>  (what the verdict  Diagnosis  DiagnoseReport  String
//!                      ClusterFacts                              (reach; runs probe)  is made from)
//!                      (find)
//! ```
//!
//! `Evidence::judge` runs the analysis for a live `diagnose` and for `analyse` of an evidence
//! bundle alike ([`bundle`] writes and reads them); `analyse NEW --against GOOD` judges both and
//! sets the two reports side by side (`report::compare`, rendered by `render::compare`). `--all`/`-A` run the same pipeline per cluster
//! after one Supervisor read per namespace (`commands::many`); one diagnosis round is
//! `commands::round`, which `--watch` repeats (`commands::watch`).
//!
//! - `cli` turns argv into options; `commands::{status, diagnose, analyse, cleanup}` wire the stages,
//!   one module per command; `main` prints the [`Outcome`] and exits with its code. Nothing
//!   below `run` writes to stdout.
//! - Each stage takes the values of the stages before it and the `kube::Client` from `connect`
//!   (made there and only there), and returns a value; none calls back into a command or into
//!   an earlier stage's logic. `probe` (the node script, its schema and parser, the log
//!   classifier) is what the routes run and `analyse` reads.
//! - Every `kube::Client` (the Supervisor's in `connect`, a workload API's in `workload`) is
//!   built by [`bounds::client`]: one deadline per request, headers and body, and a size cap
//!   on every body and watch line (docs/security.md, "Bounds").
//!
//! Layers, from the top: each module imports only modules below it (checked by
//! `tests/it/architecture.rs`, which also fails on any module import cycle and checks the order
//! inside each folder):
//!
//! ```text
//! lib · cli · commands · bundle · plan · route · render · report · analyse · workload · nsxmanager ·
//! supervisor · connect · probe · command · {names, labels, progress, selector, error, when} ·
//! signal · bounds
//! ```

pub mod analyse;
pub(crate) mod bounds;
pub(crate) mod bundle;
pub mod cli;
pub mod command;
pub(crate) mod commands;
pub(crate) mod connect;
pub mod error;
pub(crate) mod labels;
pub mod names;
pub(crate) mod nsxmanager;
pub(crate) mod plan;
pub mod probe;
pub(crate) mod progress;
pub mod render;
pub mod report;
pub mod route;
pub(crate) mod selector;
pub(crate) mod signal;
pub mod supervisor;
pub mod when;
pub(crate) mod workload;

#[cfg(test)]
mod testing;

use clap::CommandFactory;

use crate::cli::{Cli, Command};
use crate::error::Result;

pub use commands::Outcome;

/// Dispatches one command line. `emit` takes what a command prints as it goes (`--watch`);
/// everything else is in the [`Outcome`].
pub async fn run(cli: Cli, emit: commands::Emit<'_>) -> Result<Outcome> {
    // Every signal from here on is counted, whether or not the run waits for one just then.
    signal::listen();
    let g = &cli.global;
    let format = g.output;
    match &cli.command {
        Command::Version => Ok(Outcome::ok(render::output(
            &report::VersionReport::current(),
            format,
            render::Paint::detect(),
        )?)),
        Command::Options => Ok(Outcome::ok(cli::options_help())),
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
        // A refused Supervisor request's `kubectl auth can-i` carries the run's flags.
        Command::Status(args) => {
            let conn = connect::connect(&g.connect_options()).await?;
            commands::status::run(&conn, &args.options(g), format)
                .await
                .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()))
        }
        Command::Diagnose(args) => {
            // NSX Manager's credentials and CA are read before anything is contacted.
            let nsx = args.nsx_config().map_err(error::Error::Usage)?;
            let conn = connect::connect(&g.connect_options()).await?;
            let opts = plan::DiagnoseConfig {
                nsx,
                ..args.options(g)
            };
            commands::diagnose::run(&conn, &args.run_options(), &opts, format, emit)
                .await
                .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()))
        }
        // Offline: the bundle is all it reads; no kubeconfig, no connection.
        Command::Analyse(args) => commands::analyse::run(&args.options(g), format),
        Command::Cleanup(args) => {
            let conn = connect::connect(&g.connect_options()).await?;
            commands::cleanup::run(&conn, &args.options(g), format)
                .await
                .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use strum::VariantArray;

    /// Every enum a user sees as text says what its JSON says: no `Debug` form, no drift.
    fn display_is_json<T: VariantArray + Serialize + std::fmt::Display>() {
        for v in T::VARIANTS {
            assert_eq!(
                serde_json::to_value(v).unwrap(),
                serde_json::Value::String(v.to_string()),
                "{}",
                std::any::type_name::<T>()
            );
        }
    }

    #[test]
    fn enums_shown_to_users_read_as_their_json() {
        use crate::report::v1alpha2::{
            ApiState, CellState, FindingCode, HealthOutcome, JoinedBy, LeaderState, LogFormat,
            LogKind, PortState, PowerState, ProvisioningStep, QueryOutcome, ReachErrorKind,
            RuntimeQuery, Severity, TcpOutcome, TlsOutcome, VerdictCode, VmLabelScheme, WindowEnd,
        };
        display_is_json::<CellState>();
        display_is_json::<VerdictCode>();
        display_is_json::<FindingCode>();
        display_is_json::<Severity>();
        display_is_json::<LogFormat>();
        display_is_json::<LogKind>();
        display_is_json::<WindowEnd>();
        display_is_json::<LeaderState>();
        display_is_json::<QueryOutcome>();
        display_is_json::<HealthOutcome>();
        display_is_json::<RuntimeQuery>();
        display_is_json::<TcpOutcome>();
        display_is_json::<TlsOutcome>();
        display_is_json::<PortState>();
        display_is_json::<ReachErrorKind>();
        display_is_json::<PowerState>();
        display_is_json::<VmLabelScheme>();
        display_is_json::<ApiState>();
        display_is_json::<ProvisioningStep>();
        display_is_json::<JoinedBy>();
    }
}
