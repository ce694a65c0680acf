//! `kubectl_complete-etcdnet`: completes `kubectl etcdnet ...` for kubectl's own shell completion.
//!
//! kubectl 1.26+ (k8s.io/kubectl/pkg/cmd/plugin/plugin_completion.go, `pluginCompletion`) runs
//! this executable from PATH with the words after `kubectl etcdnet`, the last one being the word
//! under completion (empty when a new word starts), and reads Cobra's `__complete` format back:
//! one candidate per line, optionally followed by a tab and a description, then `:<directive>`.
//!
//! Candidates come from clap_complete's engine over `etcdnet::cli::Cli`, so they follow the CLI as
//! it is defined; as in kubectl, flags are offered once the word starts with `-`. The directive is ShellCompDirectiveNoFileComp (4), except where a path is
//! wanted (the value of `--kubeconfig`): there we offer nothing and answer
//! ShellCompDirectiveDefault (0), so the shell completes file names itself.

use std::ffi::OsString;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Arg, Command, CommandFactory, ValueHint};
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

/// Cobra's ShellCompDirectiveDefault: the shell may fall back to completing file names.
const DIRECTIVE_DEFAULT: u8 = 0;
/// Cobra's ShellCompDirectiveNoFileComp: no file names.
const DIRECTIVE_NO_FILE_COMP: u8 = 4;

/// Set when the engine asks for the value of a path argument.
static PATH_WANTED: AtomicBool = AtomicBool::new(false);

fn path_wanted(_current: &std::ffi::OsStr) -> Vec<CompletionCandidate> {
    PATH_WANTED.store(true, Ordering::Relaxed);
    Vec::new()
}

/// Hands every path-valued argument's completion to the shell, in the whole command tree.
fn defer_paths_to_shell(cmd: Command) -> Command {
    cmd.mut_args(|arg: Arg| {
        let is_path = matches!(
            arg.get_value_hint(),
            ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
        );
        if is_path {
            arg.add(ArgValueCompleter::new(path_wanted))
        } else {
            arg
        }
    })
    .mut_subcommands(defer_paths_to_shell)
}

/// One line of Cobra's format: the value, then a tab and the first line of its help, if any.
fn cobra_line(candidate: &CompletionCandidate) -> Option<String> {
    let value = candidate.get_value().to_str()?;
    if value.is_empty() || value.contains(['\n', '\t']) {
        return None;
    }
    let help = candidate
        .get_help()
        .map(|h| h.to_string())
        .and_then(|h| h.lines().next().map(str::trim).map(str::to_owned))
        .filter(|h| !h.is_empty());
    Some(match help {
        Some(help) => format!("{value}\t{help}"),
        None => value.to_owned(),
    })
}

fn main() {
    let mut words: Vec<OsString> = std::env::args_os().skip(1).collect();
    if words.is_empty() {
        // Called without a word: complete a new one.
        words.push(OsString::new());
    }
    let mut argv = vec![OsString::from("kubectl-etcdnet")];
    argv.extend(words);
    let index = argv.len() - 1;
    // As kubectl does, offer flags only once the word starts with '-'.
    let flags_wanted = argv[index].to_string_lossy().starts_with('-');

    let mut cmd = defer_paths_to_shell(etcdnet::cli::Cli::command());
    let cwd = std::env::current_dir().ok();
    // An error means there is nothing to offer at this position: an empty answer, not a failure.
    let candidates =
        clap_complete::engine::complete(&mut cmd, argv, index, cwd.as_deref()).unwrap_or_default();

    let directive = if PATH_WANTED.load(Ordering::Relaxed) {
        DIRECTIVE_DEFAULT
    } else {
        DIRECTIVE_NO_FILE_COMP
    };
    let mut out = String::new();
    let offered = candidates
        .iter()
        .filter(|c| flags_wanted || !c.get_value().to_string_lossy().starts_with('-'));
    for line in offered.filter_map(cobra_line) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    // A closed pipe is the shell's business, not an error to report mid-completion.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}
