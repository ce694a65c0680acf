//! The command line, in kubectl's conventions, with clap derive: this module turns argv into
//! validated values and never talks to a cluster. Names are checked here, before any request
//! is made, so a typo never reaches the API server. The `*_options` methods hand the commands
//! typed values; the routes' flags are their own `Args` structs ([`RouteArgs`]), flattened here.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

use crate::commands::analyse::AnalyseOptions;
use crate::commands::cleanup::CleanupOptions;
use crate::commands::diagnose::DiagnoseRun;
use crate::commands::many::{Selection, Which};
use crate::commands::status::StatusOptions;
use crate::connect::ConnectOptions;
use crate::names::{parse_namespace, validate_dns1123_subdomain};
use crate::nsxmanager::client::{self as nsx, ManagerUrl};
use crate::plan::DiagnoseConfig;
use crate::render::Format;
use crate::route::RouteArgs;
use crate::workload::Tls;

/// Appended to `--help`: scripts depend on these, so they are part of the interface.
pub(crate) const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  all fine
  1  the run completed and found a problem (see the report)
  2  usage or configuration error (flag, name, kubeconfig, context, unknown cluster)
  3  could not complete (API error, permission denied, timeout)
  130  interrupted by Ctrl-C (SIGINT); probe pods created so far were deleted
  143  stopped by SIGTERM, 129 by SIGHUP (128 + the signal's number); pods deleted as for 130";

/// Every command's help in kubectl's order: what it does, the examples, then usage and flags
/// (clap's default puts `before_help`, where the examples are, above the description).
/// The global options other than -n and -o are listed once, by `kubectl etcdnet options`
/// ([`options_help`]), not in every command's help: the line that says so is kubectl's
/// (k8s.io/kubectl/pkg/util/templates/templates.go, `usageTemplate`).
const HELP_TEMPLATE: &str = "\
{about-with-newline}
{before-help}{usage-heading} {usage}

{all-args}{after-help}

Use \"kubectl etcdnet options\" for a list of global command-line options (applies to all commands).";

/// `kubectl etcdnet options`' first line, kubectl's (`kubectl options`: templates.go,
/// `optionsUsageTemplate`).
const OPTIONS_ABOUT: &str = "The following options can be passed to any command:";

const ABOUT: &str = "Diagnose etcd quorum loss in vSphere Supervisor (TKG/VKS) workload clusters";

const LONG_ABOUT: &str = "\
Diagnose etcd quorum loss in vSphere Supervisor (TKG/VKS) workload clusters.

Run it in the Supervisor context. It walks from the vSphere Namespace to the cluster's
control-plane Machines and VirtualMachines, checks the workload cluster's API, and (diagnose)
checks etcd and the 2379/2380 paths between the control-plane VMs.";

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-etcdnet",
    // Users run us as `kubectl etcdnet`; usage lines and errors say so.
    bin_name = "kubectl etcdnet",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXIT_CODES_HELP,
    help_template = HELP_TEMPLATE,
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags every subcommand takes, before or after its name (as kubectl's do). Each names its
/// help heading: the one a subcommand's `--help` lists it under. Those that say how to connect
/// and log are hidden from each command's help (not from completion) and listed once, by
/// `kubectl etcdnet options`, as kubectl's are by `kubectl options`; -n and -o stay in each
/// command's help, where they are typed.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (else $KUBECONFIG, else ~/.kube/config)
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        help_heading = "Global options",
        hide_short_help = true,
        hide_long_help = true
    )]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (must be the Supervisor's)
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        help_heading = "Global options",
        hide_short_help = true,
        hide_long_help = true
    )]
    pub context: Option<String>,

    /// The vSphere Namespace (else the context's namespace)
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", value_parser = parse_namespace,
          help_heading = "Selection")]
    pub namespace: Option<String>,

    /// Output format
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table,
          help_heading = "Output")]
    pub output: Format,

    /// More detail on stderr (-v info, -vv debug, -vvv trace; kubectl's -v=N too: 1-3 info,
    /// 4-5 debug, 6 and up trace)
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count,
          help_heading = "Global options", hide_short_help = true, hide_long_help = true)]
    pub verbose: u8,

    /// Bound on each request to the Supervisor API, from sending it to the answer's last byte
    /// (e.g. 10s, 1m)
    #[arg(long, global = true, value_name = "DURATION", default_value = "30s", value_parser = parse_duration,
          help_heading = "Timeouts", hide_short_help = true, hide_long_help = true)]
    pub request_timeout: Duration,

    /// Do not check the workload API server's certificate (the <cluster>-kubeconfig secret's)
    ///
    /// The secret's CA is not used, and its admin credentials go to whoever answers at the
    /// Cluster's endpoint (over plain http, unencrypted, when the secret's server is http://).
    /// Without it, such a secret, or one with insecure-skip-tls-verify or without
    /// certificate-authority-data, is refused. The Supervisor connection is your kubeconfig's,
    /// as kubectl makes it: this flag never applies to it.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        hide_short_help = true,
        hide_long_help = true
    )]
    pub workload_insecure_skip_tls_verify: bool,

    /// Deprecated spelling of --workload-insecure-skip-tls-verify: it looked like kubectl's
    /// flag, which is about the kubeconfig's own server (here the Supervisor's), not the
    /// workload API. Accepted for one release, with a deprecation line.
    #[arg(long = "insecure-skip-tls-verify", global = true, hide = true)]
    pub deprecated_insecure_skip_tls_verify: bool,
}

// Parsed once per run: the size of the largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show a cluster's control plane as the Supervisor sees it, and whether its API answers
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Examples:\n  kubectl etcdnet status tkc-prod -n ns-prod\n  kubectl etcdnet status tkc-prod -n ns-prod -o json | jq .controlPlane\n  kubectl etcdnet status -A",
        after_help = format!("{EXIT_CODES_HELP}\n\nWith --all or -A the exit code is the worst of the clusters'.")
    )]
    Status(StatusArgs),

    /// Diagnose etcd and its 2379/2380 network between the control-plane VMs
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Examples:\n  kubectl etcdnet diagnose tkc-prod -n ns-prod\n  kubectl etcdnet diagnose tkc-prod -n ns-prod -o json | jq -r .verdict.code\n  kubectl etcdnet diagnose tkc-prod -n ns-prod --dry-run\n  kubectl etcdnet diagnose --all -n ns-prod --summary\n  kubectl etcdnet diagnose -A --max-concurrent 8 -o json | jq -r '.items[].verdict.code'\n  kubectl etcdnet diagnose tkc-prod -n ns-prod --watch --interval 10s\n  kubectl etcdnet diagnose tkc-prod -n ns-prod --bundle tkc-prod.tar.gz\n  kubectl etcdnet diagnose tkc-prod -n ns-prod --report html tkc-prod.html",
        after_help = format!("{EXIT_CODES_HELP}\n\nWith --all or -A the exit code is the worst of the clusters'; --watch ends 0 once Healthy.")
    )]
    Diagnose(DiagnoseArgs),

    /// Judge an evidence bundle (diagnose --bundle) again, offline, and print the report
    #[command(
        visible_alias = "analyze",
        help_template = HELP_TEMPLATE,
        before_help = "Reads the bundle in memory and contacts no cluster (no kubeconfig needed). The report and the\nexit code are the ones diagnose gave, judged again by this plugin's rules: a newer plugin\nre-judges an old bundle. A file that is not a readable bundle is exit 2.\n\nExamples:\n  kubectl etcdnet analyse tkc-prod.tar.gz\n  kubectl etcdnet analyse tkc-prod.tar.gz -o json | jq -r .verdict.code\n  kubectl etcdnet analyse all-clusters.tar.gz --summary\n  kubectl etcdnet analyse tkc-prod.tar.gz --report html > tkc-prod.html\n  kubectl etcdnet analyse new.tar.gz --against good.tar.gz --report html changes.html",
        after_help = format!("{EXIT_CODES_HELP}\n\nWith several clusters in the bundle the exit code is the worst of the clusters'.")
    )]
    Analyse(AnalyseArgs),

    /// Delete pods this plugin left behind (label app.kubernetes.io/managed-by=kubectl-etcdnet)
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Only pods that have finished or are past their deadline are deleted: one still running may be\nanother admin's run in progress (--include-running deletes it too).\n\nExamples:\n  kubectl etcdnet cleanup -n ns-prod\n  kubectl etcdnet cleanup -A --older-than 1h --dry-run\n  kubectl etcdnet cleanup tkc-prod -n ns-prod --include-running",
        after_help = EXIT_CODES_HELP
    )]
    Cleanup(CleanupArgs),

    /// Print the plugin's version
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Examples:\n  kubectl etcdnet version\n  kubectl etcdnet version -o json"
    )]
    Version,

    /// Print the options every command takes (kubeconfig, context, verbosity, ...)
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Examples:\n  kubectl etcdnet options"
    )]
    Options,

    /// Print a shell completion script (see the README for kubectl's plugin completion)
    #[command(
        help_template = HELP_TEMPLATE,
        before_help = "Examples:\n  kubectl etcdnet completion bash > ~/.local/share/bash-completion/completions/kubectl-etcdnet\n  kubectl etcdnet completion zsh > \"${fpath[1]}/_kubectl-etcdnet\"\n  kubectl etcdnet completion fish > ~/.config/fish/completions/kubectl-etcdnet.fish"
    )]
    Completion {
        /// The shell
        #[arg(value_enum)]
        shell: CompletionShell,
    },
}

impl Cli {
    /// [`GlobalArgs::warnings`], for the commands that may contact a workload API, and
    /// diagnose's [`NsxArgs::warnings`].
    pub fn warnings(&self) -> Vec<String> {
        match &self.command {
            Command::Diagnose(d) => {
                let mut w = self.global.warnings();
                w.extend(d.nsx.warnings());
                w
            }
            Command::Status(_) | Command::Cleanup(_) => self.global.warnings(),
            Command::Analyse(_)
            | Command::Version
            | Command::Options
            | Command::Completion { .. } => Vec::new(),
        }
    }
}

impl Command {
    /// The `--report` flags of the commands that take them.
    fn report_args(&self) -> Option<&ReportArgs> {
        match self {
            Command::Diagnose(d) => Some(&d.report),
            Command::Analyse(a) => Some(&a.report),
            _ => None,
        }
    }
}

impl Cli {
    /// Parses `argv` as kubectl users type it: [`kubectl_habits`] first, then clap. Returns the
    /// command line and the deprecation lines to print on stderr (one each, kubectl's wording),
    /// or clap's usage error (exit 2) for a habit that would otherwise be misread.
    pub fn parse_kubectl_style<I, T>(argv: I) -> Result<(Cli, Vec<String>), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
        // One line, then clap's pointer to --help, as clap's own usage errors end (without
        // the usage line clap adds to a formatted error: the line says what to write).
        let usage = |why: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{why}\n\nFor more information, try '--help'.\n"),
            )
        };
        let (argv, mut notes) = kubectl_habits(argv).map_err(usage)?;
        let cli = Cli::try_parse_from(argv)?;
        cli.check_report().map_err(usage)?;
        notes.extend(cli.deprecations());
        Ok((cli, notes))
    }

    /// `--report FORMAT [FILE]`'s words: FORMAT one of the formats, FILE given once (not
    /// also as `--report-file`).
    fn check_report(&self) -> Result<(), String> {
        let Some(r) = self.command.report_args() else {
            return Ok(());
        };
        let Some(words) = &r.report else {
            return Ok(());
        };
        let format = words[0].to_string_lossy();
        if <crate::render::CaseFormat as clap::ValueEnum>::from_str(&format, true).is_err() {
            return Err(format!(
                "--report {format}: the format is html or md (e.g. --report html case.html)"
            ));
        }
        if words.len() > 1 && r.deprecated_report_file.is_some() {
            return Err(
                "--report FORMAT FILE and --report-file both name the file: give FILE once, after the format"
                    .into(),
            );
        }
        Ok(())
    }

    /// One line for each deprecated spelling given, kubectl's (`Flag --x has been deprecated,
    /// use --y instead`): the old spellings work for one release.
    pub fn deprecations(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.global.deprecated_insecure_skip_tls_verify {
            lines.push(deprecated(
                "--insecure-skip-tls-verify",
                "--workload-insecure-skip-tls-verify (it applies to the workload API only)",
            ));
        }
        if self
            .command
            .report_args()
            .is_some_and(|r| r.deprecated_report_file.is_some())
        {
            lines.push(deprecated("--report-file FILE", "--report FORMAT FILE"));
        }
        if let Command::Cleanup(c) = &self.command {
            if c.deprecated_all {
                lines.push(deprecated("--all", "--include-running"));
            }
        }
        lines
    }
}

/// kubectl's deprecation line, as spf13/pflag prints it for a flag marked deprecated
/// (flag.go, `FlagSet.Set`: "Flag --%s has been deprecated, %s").
fn deprecated(old: &str, new: &str) -> String {
    format!("Flag {old} has been deprecated, use {new} instead")
}

/// kubectl's habits that clap alone would misread, before clap sees `argv` (only the words
/// before a `--`, which ends the flags):
/// - `--watch=DURATION` (this plugin's old spelling) is `--watch --interval DURATION`, with a
///   deprecation line;
/// - `--watch 10s` / `-w 10s` is an error: `--watch` takes no value, and the duration would be
///   read as the cluster's name;
/// - `-v=N`, `-vN`, `-v N`, `--v=N` and `--v N` (klog's levels, as kubectl takes them) become
///   our `-v` count: 0 nothing more, 1-3 info, 4-5 debug, 6 and up trace. kubectl's levels
///   (https://kubernetes.io/docs/reference/kubectl/quick-reference/, "Kubectl output verbosity
///   and debugging"): 2 steady state, 3 extended, 4 debug, 5 trace, 6 and up the requests; our
///   trace (-vvv) adds kube's own debug lines, the nearest we have to those.
pub(crate) fn kubectl_habits(argv: Vec<OsString>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut notes = Vec::new();
    let mut words = argv.into_iter().peekable();
    // The program's name is not a flag.
    out.extend(words.next());
    while let Some(word) = words.next() {
        let Some(text) = word.to_str() else {
            out.push(word);
            continue;
        };
        if text == "--" {
            out.push(word);
            out.extend(words);
            break;
        }
        if let Some(value) = text.strip_prefix("--watch=") {
            notes.push(deprecated(
                "--watch=DURATION",
                "--watch --interval DURATION",
            ));
            out.push("--watch".into());
            out.push(format!("--interval={value}").into());
            continue;
        }
        // `--report FORMAT [FILE]`: the word after FORMAT is FILE only when it reads as one;
        // otherwise FORMAT's values end there (`--report=FORMAT`: clap takes no more after
        // an attached value) and the word is the command's own (`diagnose --report html
        // tkc-prod`: the cluster).
        let attached = text.strip_prefix("--report=");
        if attached.is_some() || text == "--report" {
            let format: OsString = match attached {
                Some(format) => format.into(),
                None => match words.peek().and_then(|w| w.to_str()) {
                    Some(f) if !f.starts_with('-') => words.next().unwrap_or_default(),
                    // No format: clap's to say.
                    _ => {
                        out.push(word);
                        continue;
                    }
                },
            };
            match words
                .peek()
                .and_then(|w| w.to_str())
                .filter(|w| !w.starts_with('-') && is_report_file(w))
            {
                Some(file) => {
                    let file = OsString::from(file);
                    words.next();
                    out.extend(["--report".into(), format, file]);
                }
                None => {
                    let mut joined = OsString::from("--report=");
                    joined.push(&format);
                    out.push(joined);
                }
            }
            continue;
        }
        if text == "--watch" || text == "-w" {
            let next = words.peek().and_then(|w| w.to_str());
            if let Some(next) = next.filter(|n| !n.starts_with('-') && parse_duration(n).is_ok()) {
                return Err(format!(
                    "{text} takes no value: '{next}' would be read as the cluster's name; write {text} --interval {next}"
                ));
            }
            out.push(word);
            continue;
        }
        let level = match text {
            "-v" | "--v" => match words.peek().and_then(|w| w.to_str()).map(klog_level) {
                Some(Some(n)) => {
                    words.next();
                    Some(n)
                }
                // `-v` alone is our count; `--v` alone is clap's to refuse.
                _ => None,
            },
            _ => text
                .strip_prefix("--v=")
                .or_else(|| text.strip_prefix("-v="))
                .or_else(|| {
                    text.strip_prefix("-v")
                        .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()))
                })
                .map(|n| {
                    klog_level(n).ok_or_else(|| {
                        format!(
                            "-v={n}: a verbosity level is a number from 0 to 10 (as kubectl's -v)"
                        )
                    })
                })
                .transpose()?,
        };
        match level {
            Some(n) => out.extend((0..n).map(|_| OsString::from("-v"))),
            None => out.push(word),
        }
    }
    Ok((out, notes))
}

/// A klog verbosity level (0-10) as our `-v` count (0-3).
fn klog_level(n: &str) -> Option<usize> {
    match n.parse::<u8>().ok()? {
        0 => Some(0),
        1..=3 => Some(1),
        4..=5 => Some(2),
        6..=10 => Some(3),
        _ => None,
    }
}

/// `kubectl etcdnet options`: the global options, listed once (as `kubectl options`), with
/// their long help. The deprecated spellings stay hidden.
pub(crate) fn options_help() -> String {
    let cmd = GlobalArgs::augment_args(clap::Command::new("kubectl etcdnet options"))
        .disable_help_flag(true)
        .mut_args(|a| a.hide_short_help(false).hide_long_help(false))
        .help_template(format!("{OPTIONS_ABOUT}\n\n{{options}}"));
    let mut text = cmd.clone().render_long_help().to_string();
    // Each option ends with a blank line; one is enough at the end.
    text.truncate(text.trim_end().len());
    text.push('\n');
    text
}

/// `--dry-run`'s one mode: as kubectl's `client`, print what would be sent, send nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DryRun {
    Client,
}

/// `--dry-run[=client]`. kubectl's `server` would send the objects for the API server to
/// check; this plugin sends none, so it is refused rather than quietly taken as `client`.
pub(crate) fn parse_dry_run(s: &str) -> Result<DryRun, String> {
    match s {
        "client" => Ok(DryRun::Client),
        "server" => Err("server is not supported (nothing is sent to the API server to check); use --dry-run=client or --dry-run to print what would be done".into()),
        _ => Err("the only mode is client (--dry-run or --dry-run=client)".into()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

impl From<CompletionShell> for Shell {
    fn from(s: CompletionShell) -> Shell {
        match s {
            CompletionShell::Bash => Shell::Bash,
            CompletionShell::Zsh => Shell::Zsh,
            CompletionShell::Fish => Shell::Fish,
        }
    }
}

/// Which clusters a command works on, besides one by name.
#[derive(Debug, Clone, Args)]
pub(crate) struct ManyArgs {
    /// Every cluster of the namespace
    #[arg(long, conflicts_with = "cluster", help_heading = "Selection")]
    pub all: bool,

    /// Every cluster of every vSphere Namespace you can see
    #[arg(short = 'A', long, conflicts_with_all = ["cluster", "all"], help_heading = "Selection")]
    pub all_namespaces: bool,

    /// With --all or -A: how many clusters are worked on at once [default: diagnose 4 (each
    /// makes pods), status 16 (each is two requests)]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64),
          help_heading = "Selection")]
    pub max_concurrent: Option<u16>,

    /// With --all or -A: only the summary table, not each unhealthy cluster's detail
    #[arg(long, help_heading = "Output")]
    pub summary: bool,
}

impl ManyArgs {
    /// The selection, given the positional cluster name (clap made sure of one or the other)
    /// and the command's own default bound.
    pub fn selection(&self, cluster: Option<&str>, default_concurrent: u16) -> Selection {
        let which = match (cluster, self.all_namespaces) {
            (Some(c), _) => Which::One(c.to_string()),
            (None, true) => Which::AllNamespaces,
            (None, false) => Which::Namespace,
        };
        Selection {
            which,
            max_concurrent: usize::from(self.max_concurrent.unwrap_or(default_concurrent)),
            summary: self.summary,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct StatusArgs {
    /// The workload cluster's name (a CAPI Cluster in the vSphere Namespace)
    #[arg(value_parser = parse_cluster_name, required_unless_present_any = ["all", "all_namespaces"])]
    pub cluster: Option<String>,

    // First: `--help`'s headings come in the order of their first flag.
    #[command(flatten)]
    pub many: ManyArgs,

    /// Bound on the workload API check (both of its requests, together)
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration,
          help_heading = "Timeouts")]
    pub api_timeout: Duration,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct DiagnoseArgs {
    /// The workload cluster's name (a CAPI Cluster in the vSphere Namespace)
    #[arg(value_parser = parse_cluster_name, required_unless_present_any = ["all", "all_namespaces"])]
    pub cluster: Option<String>,

    // First: `--help`'s headings come in the order of their first flag.
    #[command(flatten)]
    pub many: ManyArgs,

    /// Diagnose again every --interval until the verdict is Healthy (or Ctrl-C), printing each
    /// change of verdict; -o json prints one document per round
    #[arg(short = 'w', long, conflicts_with_all = ["dry_run", "keep_pods", "bundle", "report"])]
    pub watch: bool,

    /// With --watch: the pause between two rounds
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration,
          requires = "watch")]
    pub interval: Duration,

    /// Also write the evidence the verdict was made from to FILE (a .tar.gz; no secrets), for
    /// `kubectl etcdnet analyse FILE` or a support case
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "dry_run",
        help_heading = "Output"
    )]
    pub bundle: Option<PathBuf>,

    #[command(flatten)]
    pub report: ReportArgs,

    // `--via`, the routes' shared flags and each route's own.
    #[command(flatten)]
    pub reach: RouteArgs,

    /// Bound of each TCP connect the probe makes (never the OS's two minutes)
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration,
          help_heading = "Timeouts")]
    pub connect_timeout: Duration,

    /// Bound of each cluster's diagnosis (cut at it plus 30s, exit 3); probe pods get it as
    /// activeDeadlineSeconds. The default covers a jumpbox's start: a vSphere Pod is a small VM
    /// whose image the ESXi host pulls, tens of seconds before it runs
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration,
          help_heading = "Timeouts")]
    pub timeout: Duration,

    /// How many of etcd's newest log lines to read on each node
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub log_lines: u32,

    /// Count etcd log lines of the last DURATION before each node's probe (the node's clock);
    /// older lines are history, shown with their times but never the reason for a verdict
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_since)]
    pub since: Duration,

    /// Keep the probe pods (and print how to remove them)
    #[arg(long)]
    pub keep_pods: bool,

    /// Print the pods it would create (-o yaml or json; else YAML), create nothing; as
    /// kubectl's --dry-run=client (server is refused: nothing is sent)
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "client", value_parser = parse_dry_run, conflicts_with = "report")]
    pub dry_run: Option<DryRun>,

    /// Print every section (each path's time, the etcd logs, the network policy, all the
    /// evidence, metrics, notes), not only the verdict's first screen
    #[arg(long, help_heading = "Output")]
    pub details: bool,

    /// Bound on the workload API check (both of its requests); the pod route's requests get
    /// it too, at least 10s and at most --timeout
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration,
          help_heading = "Timeouts")]
    pub api_timeout: Duration,

    #[command(flatten)]
    pub nsx: NsxArgs,
}

/// NSX Manager, past the Supervisor's edge: off unless `--nsx-manager` is given. No flag here
/// reads the environment by itself (an `NSXT_MANAGER_HOST` set for terraform never turns this
/// on); only the credentials come from `NSXT_USERNAME`/`NSXT_PASSWORD`, and only with the flag.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "NSX Manager (opt-in)")]
pub(crate) struct NsxArgs {
    /// Also read NSX Manager's distributed firewall (policies, rules, groups and their members)
    /// and find the control-plane VMs' ports there, read-only: https://HOST[:PORT] only
    ///
    /// The only switch that turns it on. Credentials from --nsx-credentials FILE, else
    /// NSXT_USERNAME and NSXT_PASSWORD (your own NSX account, never the Supervisor's); sent to
    /// this URL and nowhere else (redirects are not followed). A read-only role (Auditor) is
    /// enough; --nsx-traceflow needs a role that may run Traceflow.
    #[arg(long, value_name = "URL", value_parser = ManagerUrlParser)]
    pub nsx_manager: Option<ManagerUrl>,

    /// A file holding one line user:password for NSX Manager (else NSXT_USERNAME and
    /// NSXT_PASSWORD); never pass the password on the command line
    #[arg(long, value_name = "FILE", requires = "nsx_manager")]
    pub nsx_credentials: Option<PathBuf>,

    /// NSX Manager's CA certificate(s), PEM (else this machine's roots)
    #[arg(
        long,
        value_name = "FILE",
        requires = "nsx_manager",
        conflicts_with = "nsx_insecure_skip_tls_verify"
    )]
    pub nsx_ca: Option<PathBuf>,

    /// Do not check NSX Manager's certificate: your NSX credentials go to whoever answers at
    /// --nsx-manager (said on stderr and in the report)
    #[arg(long, requires = "nsx_manager")]
    pub nsx_insecure_skip_tls_verify: bool,

    /// Also prove the failing paths with Traceflow: a TCP SYN from each failing source VM's port
    /// to its peer's IP and port (a few at most), every traceflow deleted after the run, Ctrl-C
    /// included. Needs a role that may run Traceflow
    #[arg(long, requires = "nsx_manager", conflicts_with = "dry_run")]
    pub nsx_traceflow: bool,

    /// Bound on the whole NSX Manager reading, Traceflow included (each request at most 30s of
    /// it)
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_nsx_timeout,
          help_heading = "Timeouts")]
    pub nsx_timeout: Duration,
}

impl NsxArgs {
    /// The client's options, its credentials and CA file read now (before any cluster is
    /// contacted); None without --nsx-manager. A missing or unusable credential or CA is one
    /// line naming the flag or variables, never quoting what was read.
    pub fn client_options(&self) -> Result<Option<nsx::Options>, String> {
        let Some(manager) = self.nsx_manager.clone() else {
            return Ok(None);
        };
        let credentials =
            nsx::Credentials::load(self.nsx_credentials.as_deref()).map_err(|e| e.to_string())?;
        let trust =
            nsx::Trust::from_flags(self.nsx_ca.as_deref(), self.nsx_insecure_skip_tls_verify)?;
        Ok(Some(nsx::Options {
            manager,
            credentials,
            trust,
            limits: nsx::Limits::new(self.nsx_timeout),
        }))
    }

    /// What the run says on stderr before it starts: that NSX Manager's certificate is not
    /// checked.
    pub fn warnings(&self) -> Vec<String> {
        match (&self.nsx_manager, self.nsx_insecure_skip_tls_verify) {
            (Some(url), true) => vec![format!(
                "warning: --nsx-insecure-skip-tls-verify: NSX Manager's certificate is not checked; \
                 your NSX credentials go to whoever answers at {url}"
            )],
            _ => Vec::new(),
        }
    }

    /// The report's note when the certificate was not checked (None otherwise).
    pub fn report_note(&self) -> Option<String> {
        self.nsx_insecure_skip_tls_verify.then(|| {
            "NSX Manager's certificate was not checked (--nsx-insecure-skip-tls-verify)".to_string()
        })
    }
}

/// `--nsx-manager`'s parser: [`ManagerUrl::parse`], refusing without the value. clap's own
/// message for a rejected value quotes it ("invalid value 'https://user:pass@host' …"), and
/// this one may hold a password (userinfo) the admin pasted by mistake: stderr goes to
/// terminals, CI logs and tickets, so the line names the flag and what is wrong, never what
/// was given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ManagerUrlParser;

impl clap::builder::TypedValueParser for ManagerUrlParser {
    type Value = ManagerUrl;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<ManagerUrl, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map_or("--nsx-manager".to_string(), |l| format!("--{l}"));
        let why = match value.to_str() {
            Some(v) => match ManagerUrl::parse(v) {
                Ok(url) => return Ok(url),
                Err(why) => why,
            },
            None => "is not UTF-8".to_string(),
        };
        let mut cmd = cmd.clone();
        Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("invalid value for '{flag} <URL>' (not shown: it may hold a secret): {why}\n"),
        )
        .format(&mut cmd))
    }
}

/// `--nsx-timeout`: between 5s and 10m (a reading needs a few requests; more than ten minutes
/// is a hung manager, not a slow one).
pub(crate) fn parse_nsx_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(5) || d > Duration::from_secs(600) {
        return Err("must be between 5s and 10m (e.g. 1m)".into());
    }
    Ok(d)
}

#[derive(Debug, Clone, Args)]
pub(crate) struct AnalyseArgs {
    /// The bundle (a .tar.gz written by diagnose --bundle)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// With several clusters in the bundle: only the summary table
    #[arg(long, help_heading = "Output")]
    pub summary: bool,

    /// Print every section (each path's time, the etcd logs, the network policy, all the
    /// evidence, metrics, notes), not only the verdict's first screen (as diagnose --details)
    #[arg(long, help_heading = "Output")]
    pub details: bool,

    /// Judge with this log window instead of the one the bundle was written with
    #[arg(long, value_name = "DURATION", value_parser = parse_since)]
    pub since: Option<Duration>,

    #[command(flatten)]
    pub report: ReportArgs,
    /// Print what changed since GOOD, an older bundle of the same cluster: paths, members,
    /// leader, rules, metrics, conditions, verdict (with --report, as a page or Markdown)
    #[arg(
        long,
        value_name = "GOOD",
        conflicts_with = "summary",
        help_heading = "Output"
    )]
    pub against: Option<PathBuf>,
}

/// `--report FORMAT [FILE]`: a case report of the run (diagnose) or of the bundle (analyse),
/// instead of the tables or, with FILE, beside them. The word after FORMAT is FILE only when it
/// reads as a report's file ([`is_report_file`]); otherwise it is the command's own argument
/// (the cluster, the bundle): [`kubectl_habits`] decides before clap sees it.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReportArgs {
    /// A report for a support case: html (one self-contained page: the matrix as a coloured
    /// grid, the onset timeline as a chart; nothing fetched) or md (for a ticket's text field).
    /// Printed instead of the tables; with FILE (ending in .html or .md, or a path with a /),
    /// written there whole at the end of the run, whatever the verdict, and the tables printed
    /// as usual
    #[arg(long, value_names = ["FORMAT", "FILE"], num_args = 1..=2, help_heading = "Output")]
    pub report: Option<Vec<PathBuf>>,

    /// Deprecated spelling of --report FORMAT FILE's FILE. Accepted for one release, with a
    /// deprecation line.
    #[arg(
        long = "report-file",
        value_name = "FILE",
        requires = "report",
        hide = true
    )]
    pub deprecated_report_file: Option<PathBuf>,
}

/// Whether the word after `--report FORMAT` is the report's FILE: it ends in `.html`, `.htm`
/// or `.md`, or it holds a path separator. A cluster's name (a DNS-1123 name) holds no `/`, and
/// a bundle ends in `.tar.gz`, so `diagnose --report html tkc-prod -n ns` and
/// `analyse --report md tkc-prod.tar.gz` read as they mean; a file named otherwise is written
/// `./name`.
pub(crate) fn is_report_file(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    word.contains(std::path::MAIN_SEPARATOR)
        || word.contains('/')
        || [".html", ".htm", ".md"].iter().any(|e| lower.ends_with(e))
}

impl ReportArgs {
    pub fn options(&self) -> Option<crate::commands::CaseReport> {
        let words = self.report.as_ref()?;
        let format = words
            .first()?
            .to_str()
            .and_then(|f| <crate::render::CaseFormat as clap::ValueEnum>::from_str(f, true).ok())?;
        Some(crate::commands::CaseReport {
            format,
            file: words
                .get(1)
                .cloned()
                .or_else(|| self.deprecated_report_file.clone()),
        })
    }
}

impl AnalyseArgs {
    pub fn options(&self, g: &GlobalArgs) -> AnalyseOptions {
        AnalyseOptions {
            path: self.file.clone(),
            summary: self.summary,
            details: self.details,
            since: self.since,
            report: self.report.options(),
            context: g.context.clone(),
            kubeconfig: g.kubeconfig.clone(),
            against: self.against.clone(),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct CleanupArgs {
    /// Also clean up inside this workload cluster (through its <cluster>-kubeconfig secret)
    #[arg(value_parser = parse_cluster_name)]
    pub cluster: Option<String>,

    /// Look in every namespace of the Supervisor
    #[arg(short = 'A', long, help_heading = "Selection")]
    pub all_namespaces: bool,

    /// Only delete pods older than this (e.g. 30m, 2h)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<Duration>,

    /// List what would be deleted, delete nothing (as kubectl's --dry-run=client)
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "client", value_parser = parse_dry_run)]
    pub dry_run: Option<DryRun>,

    /// Also delete pods that have not finished and are not past their deadline (another run
    /// may be using them); by default those are kept
    #[arg(long)]
    pub include_running: bool,

    /// Deprecated spelling of --include-running: elsewhere --all means every cluster of the
    /// namespace, not pods still running. Accepted for one release, with a deprecation line.
    #[arg(long = "all", hide = true)]
    pub deprecated_all: bool,
}

impl GlobalArgs {
    pub(crate) fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            request_timeout: self.request_timeout,
        }
    }

    /// `--workload-insecure-skip-tls-verify` (or its deprecated spelling), for the commands
    /// that use a `<cluster>-kubeconfig` secret.
    pub(crate) fn workload_tls(&self) -> Tls {
        if self.workload_insecure_skip_tls_verify || self.deprecated_insecure_skip_tls_verify {
            Tls::SkipVerify
        } else {
            Tls::Verify
        }
    }

    /// What a run that may use a `<cluster>-kubeconfig` secret says on stderr before it starts,
    /// once: that it will not check the workload API's certificate.
    pub fn warnings(&self) -> Vec<String> {
        match self.workload_tls() {
            Tls::Verify => Vec::new(),
            Tls::SkipVerify => vec![
                "warning: --workload-insecure-skip-tls-verify: the workload API's certificate is not checked \
                 (and an http:// server in the secret is used, unencrypted); the <cluster>-kubeconfig \
                 secret's credentials go to whoever answers at the Cluster's endpoint"
                    .into(),
            ],
        }
    }
}

impl StatusArgs {
    pub fn options(&self, global: &GlobalArgs) -> StatusOptions {
        StatusOptions {
            selection: self.many.selection(self.cluster.as_deref(), 16),
            api_timeout: self.api_timeout,
            workload_tls: global.workload_tls(),
        }
    }
}

impl DiagnoseArgs {
    /// Which clusters, and what the command does besides diagnosing them.
    pub fn run_options(&self) -> DiagnoseRun {
        DiagnoseRun {
            selection: self.many.selection(self.cluster.as_deref(), 4),
            watch: self.watch.then_some(self.interval),
            bundle: self.bundle.clone(),
            report: self.report.options(),
            details: self.details,
        }
    }

    /// How each cluster is diagnosed: the same options for every cluster.
    pub fn options(&self, global: &GlobalArgs) -> DiagnoseConfig {
        DiagnoseConfig {
            reach: self.reach.clone(),
            connect_timeout: self.connect_timeout,
            timeout: self.timeout,
            log_lines: self.log_lines,
            since: self.since,
            keep_pods: self.keep_pods,
            dry_run: self.dry_run.is_some(),
            api_timeout: self.api_timeout,
            workload_tls: global.workload_tls(),
            parallel: crate::route::DEFAULT_PARALLEL,
            nsx: None,
            jumpbox_keeper: None,
        }
    }

    /// NSX Manager's part of the options, its credentials and CA read now (before any cluster
    /// is contacted); None without `--nsx-manager`. An unusable one is a usage error (exit 2).
    pub fn nsx_config(&self) -> Result<Option<crate::nsxmanager::NsxConfig>, String> {
        Ok(self
            .nsx
            .client_options()?
            .map(|options| crate::nsxmanager::NsxConfig {
                options,
                traceflow: self.nsx.nsx_traceflow,
                note: self.nsx.report_note(),
                login: Default::default(),
            }))
    }
}

impl CleanupArgs {
    pub fn options(&self, global: &GlobalArgs) -> CleanupOptions {
        CleanupOptions {
            cluster: self.cluster.clone(),
            all_namespaces: self.all_namespaces,
            older_than: self.older_than,
            dry_run: self.dry_run.is_some(),
            all: self.include_running || self.deprecated_all,
            request_timeout: global.request_timeout,
            workload_tls: global.workload_tls(),
        }
    }
}

/// CAPI Cluster names are RFC 1123 subdomains (and a label in practice, as they become host names).
fn parse_cluster_name(s: &str) -> Result<String, String> {
    validate_dns1123_subdomain(s)
        .map(|_| s.to_string())
        .map_err(|why| format!("not a valid cluster name: {why}"))
}

/// Accepts kubectl's forms: "5s", "1m30s", "500ms", or a bare number of seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    // humantime's own words ("expected number at 0") point into its parser; these name the
    // value's problem.
    humantime::parse_duration(s).map_err(|e| {
        let why = match e {
            humantime::DurationError::UnknownUnit { unit, .. } => {
                format!("unknown unit {unit:?}")
            }
            humantime::DurationError::NumberOverflow => "too long".to_string(),
            humantime::DurationError::Empty => "empty".to_string(),
            _ => "not a duration".to_string(),
        };
        format!("{why} (use a duration such as 5s, 1m or 500ms)")
    })
}

/// `--since`: a duration of at least a second and at most 30 days (etcd's log tail on a node
/// rarely reaches back further; a larger window would count every old line as the present).
pub(crate) fn parse_since(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(30 * 24 * 3600) {
        return Err("must be between 1s and 30d (e.g. 15m, 1h)".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Via;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn via_takes_auto_and_every_route() {
        let via = |v: &str| {
            Cli::try_parse_from(["kubectl-etcdnet", "diagnose", "tkc", "--via", v]).map(|c| match c
                .command
            {
                Command::Diagnose(d) => d.options(&c.global).reach.via,
                _ => unreachable!(),
            })
        };
        assert_eq!(via("auto").unwrap(), Via::Auto);
        assert_eq!(via("pod").unwrap(), Via::Pod);
        assert_eq!(via("jumpbox").unwrap(), Via::Jumpbox);
        assert_eq!(via("ssh").unwrap(), Via::Ssh);
        let e = via("telnet").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("possible values"), "{e}");
    }

    /// Every route flag reaches the typed options, and a wrong value is a usage error, never
    /// a panic later.
    #[test]
    fn the_routes_flags_are_typed_once() {
        let cli = Cli::try_parse_from([
            "kubectl-etcdnet",
            "diagnose",
            "tkc",
            "--via=ssh",
            "--ssh-user=admin",
            "--jumpbox-image=alpine",
            "--ssh-identity=/k",
            "--ssh-option=Port=2222",
            "--image=busybox",
            "--image-pull-secret=regcred",
            "--pod-namespace=etcdnet",
        ])
        .unwrap();
        let Command::Diagnose(d) = &cli.command else {
            unreachable!()
        };
        let r = d.options(&cli.global).reach;
        assert_eq!((r.via, r.ssh_user.as_str()), (Via::Ssh, "admin"));
        assert_eq!(r.jumpbox.jumpbox_image, "alpine");
        assert_eq!(r.ssh.ssh_identity, Some(PathBuf::from("/k")));
        assert!(!r.ssh.ssh_agent);
        assert_eq!(r.ssh.ssh_option, ["Port=2222"]);
        assert_eq!(
            (r.pod.image.as_str(), r.pod.pod_namespace.as_str()),
            ("busybox", "etcdnet")
        );
        assert_eq!(r.pod.image_pull_secret.as_deref(), Some("regcred"));
        for bad in [
            &["--ssh-identity=/k", "--ssh-agent"][..],
            &["--pod-namespace=Bad_NS"],
            &["--ssh-option=User=root"],
        ] {
            let argv = ["kubectl-etcdnet", "diagnose", "tkc"].iter().chain(bad);
            let e = Cli::try_parse_from(argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }

    fn diagnose(extra: &[&str]) -> Result<(DiagnoseArgs, Cli), clap::Error> {
        let argv = ["kubectl-etcdnet", "diagnose", "tkc"].iter().chain(extra);
        let cli = Cli::try_parse_from(argv)?;
        match &cli.command {
            Command::Diagnose(d) => Ok((d.clone(), cli)),
            _ => unreachable!(),
        }
    }

    #[test]
    fn nsx_manager_is_off_unless_its_flag_is_given() {
        let (d, cli) = diagnose(&[]).unwrap();
        assert!(d.nsx.nsx_manager.is_none());
        assert!(matches!(d.nsx.client_options(), Ok(None)));
        assert!(cli.warnings().is_empty());
        // No flag of the command line reads NSXT_* (or any NSX variable) by itself: an
        // NSXT_MANAGER_HOST set for terraform never turns NSX Manager on.
        let cmd = Cli::command();
        let diag = cmd.find_subcommand("diagnose").unwrap();
        for arg in diag.get_arguments() {
            assert!(
                arg.get_env().is_none(),
                "{:?} reads the environment",
                arg.get_id()
            );
        }
        let (d, _) = diagnose(&["--nsx-manager", "https://nsx.example:8443"]).unwrap();
        assert!(d.nsx.nsx_manager.is_some());
        assert_eq!(
            d.nsx.nsx_manager.unwrap().as_str(),
            "https://nsx.example:8443"
        );
        assert_eq!(d.nsx.nsx_timeout, Duration::from_secs(60));
    }

    #[test]
    fn nsx_flags_need_nsx_manager_and_refuse_http() {
        // A value that may hold a secret is never echoed, whatever is wrong with it.
        for bad in [
            "https://admin:planted-secret@nsx.example",
            "https://nsx.example/planted-secret",
            "http://admin:planted-secret@nsx.example",
            "planted-secret",
        ] {
            for args in [
                vec!["--nsx-manager", bad],
                vec![&*format!("--nsx-manager={bad}")],
            ] {
                let e = diagnose(&args).unwrap_err();
                assert_eq!(e.exit_code(), 2, "{args:?}");
                let text = e.render().to_string();
                assert!(!text.contains("planted-secret"), "{text}");
                assert!(text.contains("--nsx-manager"), "{text}");
            }
        }
        let e = diagnose(&["--nsx-manager", "http://nsx.example"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.contains("must be https://"), "{text}");
        for flag in [
            &["--nsx-traceflow"][..],
            &["--nsx-credentials", "/f"],
            &["--nsx-ca", "/ca.pem"],
            &["--nsx-insecure-skip-tls-verify"],
        ] {
            let e = diagnose(flag).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{flag:?}");
            assert!(e.to_string().contains("--nsx-manager"), "{flag:?}: {e}");
        }
        let e = diagnose(&[
            "--nsx-manager=https://nsx",
            "--nsx-ca=/ca.pem",
            "--nsx-insecure-skip-tls-verify",
        ])
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        for bad in ["1s", "11m", "soon"] {
            let e = diagnose(&["--nsx-manager=https://nsx", "--nsx-timeout", bad]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
        // --dry-run creates nothing, traceflows neither.
        let e =
            diagnose(&["--nsx-manager=https://nsx", "--nsx-traceflow", "--dry-run"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let (d, _) = diagnose(&[
            "--nsx-manager=https://nsx",
            "--nsx-timeout=2m",
            "--nsx-traceflow",
        ])
        .unwrap();
        assert_eq!(d.nsx.nsx_timeout, Duration::from_secs(120));
        assert!(d.nsx.nsx_traceflow);
    }

    #[test]
    fn skipping_nsx_managers_certificate_is_said_on_stderr_and_in_the_report() {
        let (d, cli) = diagnose(&[
            "--nsx-manager=https://nsx.example",
            "--nsx-insecure-skip-tls-verify",
        ])
        .unwrap();
        let w = cli.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("warning: --nsx-insecure-skip-tls-verify:"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("https://nsx.example"), "{}", w[0]);
        assert!(d.nsx.report_note().unwrap().contains("not checked"));
        let (d, _) = diagnose(&["--nsx-manager=https://nsx.example"]).unwrap();
        assert_eq!(d.nsx.report_note(), None);
    }

    #[test]
    fn nsx_client_options_read_the_credentials_file_and_ca() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("nsx-creds");
        std::fs::write(&creds, "auditor:pw\n").unwrap();
        let creds_arg = format!("--nsx-credentials={}", creds.display());
        let (d, _) = diagnose(&[
            "--nsx-manager=https://nsx",
            &creds_arg,
            "--nsx-insecure-skip-tls-verify",
        ])
        .unwrap();
        let o = d.nsx.client_options().unwrap().unwrap();
        assert_eq!(o.manager.as_str(), "https://nsx");
        assert!(matches!(o.trust, nsx::Trust::SkipVerify));
        assert_eq!(o.limits.total, Duration::from_secs(60));
        assert!(!format!("{o:?}").contains("pw"));
        let missing = format!("--nsx-credentials={}", dir.path().join("absent").display());
        let (d, _) = diagnose(&["--nsx-manager=https://nsx", &missing]).unwrap();
        let e = d.nsx.client_options().unwrap_err();
        assert!(
            e.starts_with("--nsx-credentials ") && !e.contains('\n'),
            "{e}"
        );
        let ca = format!("--nsx-ca={}", creds.display());
        let (d, _) = diagnose(&["--nsx-manager=https://nsx", &creds_arg, &ca]).unwrap();
        let e = d.nsx.client_options().unwrap_err();
        assert!(e.starts_with("--nsx-ca "), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("soon").is_err());
        // Our words, not the parser's ("expected number at 0").
        assert_eq!(
            parse_duration("soon").unwrap_err(),
            "not a duration (use a duration such as 5s, 1m or 500ms)"
        );
        assert!(parse_duration("5x")
            .unwrap_err()
            .starts_with("unknown unit \"x\""));
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn global_flags_go_anywhere() {
        let a = Cli::try_parse_from(["kubectl-etcdnet", "-n", "ns", "status", "tkc", "-o", "json"])
            .unwrap();
        assert_eq!(a.global.namespace.as_deref(), Some("ns"));
        assert_eq!(a.global.output, Format::Json);
        let b =
            Cli::try_parse_from(["kubectl-etcdnet", "status", "tkc", "--namespace=ns2"]).unwrap();
        assert_eq!(b.global.namespace.as_deref(), Some("ns2"));
    }

    /// Parses as the binary does: kubectl's habits, then clap.
    fn kubectl_style(argv: &[&str]) -> Result<(Cli, Vec<String>), clap::Error> {
        Cli::parse_kubectl_style(["kubectl-etcdnet"].iter().chain(argv))
    }

    /// `--report FORMAT [FILE]`: the word after FORMAT is FILE only when it reads as a file
    /// (.html, .md, a path), else it is the cluster or the bundle; `--report-file` works for a
    /// release with its deprecation line; a bad format or FILE given twice is one line.
    #[test]
    fn report_takes_its_file_and_leaves_the_cluster_alone() {
        use crate::commands::CaseReport;
        use crate::render::CaseFormat::{Html, Md};
        let report = |argv: &[&str]| {
            let (cli, notes) = kubectl_style(argv).unwrap();
            let (r, cluster) = match &cli.command {
                Command::Diagnose(d) => (d.report.options(), d.cluster.clone()),
                Command::Analyse(a) => (a.report.options(), Some(a.file.display().to_string())),
                other => panic!("{other:?}"),
            };
            (r, cluster, notes)
        };
        let case = |format, file: Option<&str>| {
            Some(CaseReport {
                format,
                file: file.map(PathBuf::from),
            })
        };
        for (argv, want, cluster) in [
            (
                &["diagnose", "--report", "html", "tkc", "-n", "ns"][..],
                case(Html, None),
                "tkc",
            ),
            (
                &["diagnose", "tkc", "--report", "html", "case.html"],
                case(Html, Some("case.html")),
                "tkc",
            ),
            (
                &["diagnose", "--report", "md", "out/case", "tkc"],
                case(Md, Some("out/case")),
                "tkc",
            ),
            (
                &["diagnose", "--report=md", "CASE.MD", "tkc"],
                case(Md, Some("CASE.MD")),
                "tkc",
            ),
            (
                &["diagnose", "--report", "html", "--", "tkc"],
                case(Html, None),
                "tkc",
            ),
            (
                &["analyse", "--report", "md", "b.tar.gz"],
                case(Md, None),
                "b.tar.gz",
            ),
            (
                &["analyse", "b.tar.gz", "--report", "html", "./page"],
                case(Html, Some("./page")),
                "b.tar.gz",
            ),
        ] {
            let (r, c, notes) = report(argv);
            assert_eq!(r, want, "{argv:?}");
            assert_eq!(c.as_deref(), Some(cluster), "{argv:?}");
            assert!(notes.is_empty(), "{argv:?}: {notes:?}");
        }
        // The old spelling, with kubectl's deprecation line.
        let (r, _, notes) = report(&["diagnose", "tkc", "--report", "html", "--report-file", "x"]);
        assert_eq!(r, case(Html, Some("x")));
        assert_eq!(
            notes,
            ["Flag --report-file FILE has been deprecated, use --report FORMAT FILE instead"]
        );
        // A word that is no file after the format is the command's own: a second bundle is
        // clap's "unexpected argument".
        let e = kubectl_style(&["analyse", "b.tar.gz", "--report", "html", "page"]).unwrap_err();
        assert!(e.to_string().contains("'page'"), "{e}");
        for (argv, says) in [
            (
                &["diagnose", "tkc", "--report", "pdf"][..],
                "the format is html or md",
            ),
            (
                &[
                    "diagnose",
                    "tkc",
                    "--report",
                    "md",
                    "a.md",
                    "--report-file",
                    "b.md",
                ],
                "give FILE once",
            ),
        ] {
            let e = kubectl_style(argv).unwrap_err().to_string();
            assert!(e.contains(says), "{argv:?}: {e}");
            assert_eq!(
                e.lines().next().map(|l| l.contains(says)),
                Some(true),
                "{e}"
            );
        }
    }

    #[test]
    fn watch_is_a_flag_with_its_interval_apart() {
        for (argv, every) in [
            (&["diagnose", "tkc", "--watch"][..], Some(30)),
            (&["diagnose", "tkc", "-w", "--interval", "10s"], Some(10)),
            (&["diagnose", "-w", "tkc", "--interval=1m"], Some(60)),
            (&["diagnose", "tkc"], None),
        ] {
            let (cli, notes) = kubectl_style(argv).unwrap();
            let Command::Diagnose(d) = &cli.command else {
                unreachable!()
            };
            assert_eq!(
                d.run_options().watch,
                every.map(Duration::from_secs),
                "{argv:?}"
            );
            assert_eq!(d.cluster.as_deref(), Some("tkc"), "{argv:?}");
            assert!(notes.is_empty(), "{argv:?}: {notes:?}");
        }
        // --interval alone would do nothing: refused.
        let e = kubectl_style(&["diagnose", "tkc", "--interval", "10s"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    /// The old `--watch=DURATION` still works this release, said once on stderr.
    #[test]
    fn the_old_watch_spelling_works_and_says_it_is_deprecated() {
        let (cli, notes) = kubectl_style(&["diagnose", "tkc", "--watch=10s"]).unwrap();
        let Command::Diagnose(d) = &cli.command else {
            unreachable!()
        };
        assert_eq!(d.run_options().watch, Some(Duration::from_secs(10)));
        assert_eq!(
            notes,
            ["Flag --watch=DURATION has been deprecated, use --watch --interval DURATION instead"]
        );
        // After `--`, words are not flags: left to clap as they are.
        let (argv, notes) = kubectl_habits(
            ["p", "--", "--watch=1s", "-v=6"]
                .map(OsString::from)
                .to_vec(),
        )
        .unwrap();
        assert_eq!(argv, ["p", "--", "--watch=1s", "-v=6"]);
        assert!(notes.is_empty());
    }

    /// `--watch 10s` used to diagnose a cluster named "10s": now one line that says what to
    /// write, before anything is contacted.
    #[test]
    fn a_duration_after_watch_is_a_clear_usage_error() {
        for argv in [
            &["diagnose", "--watch", "10s"][..],
            &["diagnose", "tkc", "-w", "1m"],
            &["diagnose", "tkc", "-n", "ns", "--watch", "30"],
        ] {
            let e = kubectl_style(argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            let text = e.to_string();
            let first = text.lines().next().unwrap();
            assert!(
                first.starts_with("error: --watch takes no value: '")
                    || first.starts_with("error: -w takes no value: '"),
                "{text}"
            );
            assert!(first.contains("--interval"), "{text}");
            assert!(!text.contains("Usage:"), "{text}");
        }
        // A cluster's name after --watch is a cluster's name.
        let (cli, _) = kubectl_style(&["diagnose", "--watch", "tkc-prod"]).unwrap();
        let Command::Diagnose(d) = &cli.command else {
            unreachable!()
        };
        assert_eq!(d.cluster.as_deref(), Some("tkc-prod"));
    }

    #[test]
    fn dry_run_takes_kubectls_client_and_refuses_server() {
        for argv in [
            &["diagnose", "tkc", "--dry-run"][..],
            &["diagnose", "tkc", "--dry-run=client"],
        ] {
            let (cli, _) = kubectl_style(argv).unwrap();
            let Command::Diagnose(d) = &cli.command else {
                unreachable!()
            };
            assert!(d.options(&cli.global).dry_run, "{argv:?}");
        }
        let (cli, _) = kubectl_style(&["diagnose", "tkc"]).unwrap();
        let Command::Diagnose(d) = &cli.command else {
            unreachable!()
        };
        assert!(!d.options(&cli.global).dry_run);
        let (cli, _) = kubectl_style(&["cleanup", "--dry-run=client"]).unwrap();
        let Command::Cleanup(c) = &cli.command else {
            unreachable!()
        };
        assert!(c.options(&cli.global).dry_run);
        for cmd in ["diagnose", "cleanup"] {
            let e = kubectl_style(&[cmd, "tkc", "--dry-run=server"]).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let text = e.to_string();
            assert!(text.contains("server is not supported"), "{text}");
            assert!(text.contains("--dry-run=client"), "{text}");
            let e = kubectl_style(&[cmd, "tkc", "--dry-run=maybe"]).unwrap_err();
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn verbosity_as_kubectl_users_type_it() {
        let level = |argv: &[&str]| {
            let argv: Vec<&str> = argv.iter().copied().chain(["version"]).collect();
            kubectl_style(&argv).map(|(c, _)| c.global.verbose)
        };
        assert_eq!(level(&[]).unwrap(), 0);
        assert_eq!(level(&["-v"]).unwrap(), 1);
        assert_eq!(level(&["-vv"]).unwrap(), 2);
        assert_eq!(level(&["-vvv"]).unwrap(), 3);
        assert_eq!(level(&["-v=0"]).unwrap(), 0);
        assert_eq!(level(&["-v=2"]).unwrap(), 1);
        assert_eq!(level(&["--v=4"]).unwrap(), 2);
        assert_eq!(level(&["-v6"]).unwrap(), 3);
        assert_eq!(level(&["-v", "6"]).unwrap(), 3);
        assert_eq!(level(&["--v", "9"]).unwrap(), 3);
        let e = level(&["-v=11"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("0 to 10"), "{e}");
        assert_eq!(level(&["-v=high"]).unwrap_err().exit_code(), 2);
    }

    /// Each renamed flag: the new name works; the old one works too, hidden, with kubectl's
    /// deprecation line.
    #[test]
    fn old_spellings_work_for_a_release_with_a_deprecation_line() {
        let (cli, notes) =
            kubectl_style(&["status", "tkc", "--workload-insecure-skip-tls-verify"]).unwrap();
        assert_eq!(cli.global.workload_tls(), Tls::SkipVerify);
        assert!(notes.is_empty(), "{notes:?}");
        let (cli, notes) = kubectl_style(&["status", "tkc", "--insecure-skip-tls-verify"]).unwrap();
        assert_eq!(cli.global.workload_tls(), Tls::SkipVerify);
        assert_eq!(notes, ["Flag --insecure-skip-tls-verify has been deprecated, use --workload-insecure-skip-tls-verify (it applies to the workload API only) instead"]);
        assert!(cli.warnings()[0].starts_with("warning: --workload-insecure-skip-tls-verify:"));

        let (cli, notes) = kubectl_style(&["cleanup", "--include-running"]).unwrap();
        let Command::Cleanup(c) = &cli.command else {
            unreachable!()
        };
        assert!(c.options(&cli.global).all);
        assert!(notes.is_empty(), "{notes:?}");
        let (cli, notes) = kubectl_style(&["cleanup", "--all"]).unwrap();
        let Command::Cleanup(c) = &cli.command else {
            unreachable!()
        };
        assert!(c.options(&cli.global).all);
        assert_eq!(
            notes,
            ["Flag --all has been deprecated, use --include-running instead"]
        );
        let (cli, _) = kubectl_style(&["cleanup"]).unwrap();
        let Command::Cleanup(c) = &cli.command else {
            unreachable!()
        };
        assert!(!c.options(&cli.global).all);

        // Hidden: the old spellings are in no help.
        let mut cmd = Cli::command();
        for sub in ["status", "diagnose", "cleanup"] {
            let help = cmd
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            assert!(!help.contains("  --insecure-skip-tls-verify"), "{sub}");
            if sub == "cleanup" {
                assert!(!help.contains("      --all\n"), "{help}");
                assert!(help.contains("      --include-running\n"), "{help}");
            }
        }
        assert!(!options_help().contains("  --insecure-skip-tls-verify"));
    }

    #[test]
    fn analyze_is_analyse() {
        let (cli, _) = kubectl_style(&["analyze", "b.tar.gz"]).unwrap();
        assert!(matches!(cli.command, Command::Analyse(_)));
    }

    /// `options` lists every global option once; each command's help lists only -n and -o of
    /// them, and points to `options`.
    #[test]
    fn global_options_are_listed_once() {
        let options = options_help();
        assert!(options.starts_with(OPTIONS_ABOUT), "{options}");
        let mut cmd = Cli::command();
        cmd.build();
        let globals: Vec<String> = cmd
            .get_arguments()
            .filter(|a| a.is_global_set() && !a.is_hide_set())
            .map(|a| format!("--{}", a.get_long().unwrap()))
            .collect();
        assert_eq!(globals.len(), 7, "{globals:?}");
        for flag in &globals {
            assert!(
                options.contains(&format!(" {flag}")),
                "{flag} not in:\n{options}"
            );
        }
        for sub in [
            "status",
            "diagnose",
            "analyse",
            "cleanup",
            "version",
            "completion",
        ] {
            let help = cmd
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            for flag in &globals {
                let shown =
                    help.contains(&format!(" {flag} ")) || help.contains(&format!(" {flag}\n"));
                let expected = flag == "--namespace" || flag == "--output";
                assert_eq!(shown, expected, "{sub}: {flag}");
            }
            assert!(
                help.trim_end().ends_with("Use \"kubectl etcdnet options\" for a list of global command-line options (applies to all commands)."),
                "{sub}"
            );
        }
    }

    #[test]
    fn bad_names_are_usage_errors() {
        let e = Cli::try_parse_from(["kubectl-etcdnet", "status", "TKC_1"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("not a valid cluster name"));
        let e =
            Cli::try_parse_from(["kubectl-etcdnet", "status", "tkc", "-n", "Bad_NS"]).unwrap_err();
        assert!(e.to_string().contains("not a valid namespace name"));
    }
}
