//! The binary's edge: parse, run, print, exit. Everything else lives in the library.

use std::io::Write;
use std::process::ExitCode;

use etcdnet::cli::Cli;
use etcdnet::error::{EXIT_INCOMPLETE, EXIT_OK};
use etcdnet::render::{visible, visible_log};

fn init_tracing(verbose: u8) {
    // -v: our info; -vv: our debug; -vvv: also kube's debug. Logs go to stderr only.
    let filter = match verbose {
        0 => "off,etcdnet=warn",
        1 => "off,etcdnet=info",
        2 => "off,etcdnet=debug",
        _ => "info,etcdnet=trace,kube=debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(|| VisibleStderr)
        // Plain: the writer shows every escape sequence as text, the level's colours too.
        .with_ansi(false)
        .with_target(false)
        .init();
}

/// stderr for log events, each made visible (`render::visible_log`): a warning quotes API error
/// text (`kube::Error`'s Display carries the server's message; -vvv logs kube's own lines), and
/// what a server or a proxy wrote there must not act on the terminal (escape sequences, bidi
/// overrides and other format characters) nor break the event's line. tracing-subscriber's own
/// sanitizing leaves newlines, carriage returns and format characters as they are.
struct VisibleStderr;

impl Write for VisibleStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // One event per write (the fmt layer writes its formatted event at once); a cut inside
        // a character would show as U+FFFD, never as raw bytes.
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(visible_log(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Makes the process non-dumpable (Linux): no core dump, and no other process of the same user
/// may ptrace it or read its memory through /proc. Done first thing, for every command: the
/// commands that talk to a cluster hold the admin's kubeconfig from their first step (and
/// `diagnose`/`cleanup` the workload cluster's admin kubeconfig, the ssh route the nodes' key),
/// and the ones that do not (`version`, `completion`) lose nothing by it. One place at the
/// start is simpler to trust than a call before every read of a secret. Children (`ssh`) are
/// dumpable again after their exec, as any program is; OpenSSH protects itself.
fn deny_dumps() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and changes only this process's
        // flag. It cannot fail with these arguments; if it did, the run would go on as before,
        // so the result is not checked.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
    }
}

fn main() -> ExitCode {
    deny_dumps();
    // clap prints usage errors itself and exits 2, our documented usage code.
    let (cli, deprecations) =
        Cli::parse_kubectl_style(std::env::args_os()).unwrap_or_else(|e| e.exit());
    init_tracing(cli.global.verbose);
    // Old spellings that still work this release, said once each.
    for line in deprecations {
        say(&line);
    }
    // Before the run, so that an admin reading a long run's output knows from the start.
    for warning in cli.warnings() {
        say(&warning);
    }
    match real_main(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            say(&format!("error: {}", visible(&format!("{e:#}"))));
            ExitCode::from(EXIT_INCOMPLETE as u8)
        }
    }
}

/// One line to stderr. After a SIGHUP the terminal may be gone: a failed write is dropped
/// rather than panicking (as `eprintln!` does), so the exit code stays the documented one.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn real_main(cli: Cli) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // `--watch` prints each round as it ends; a closed pipe ends nothing (the run goes on to
    // delete its pods and exit as documented).
    let emit = |text: &str| {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|_| stdout.flush());
    };
    match runtime.block_on(etcdnet::run(cli, &emit)) {
        Ok(outcome) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            if let Err(e) = stdout
                .write_all(outcome.stdout.as_bytes())
                .and_then(|_| stdout.flush())
            {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(e.into());
                }
            }
            // Notes and errors quote names and API servers' messages: one visible line each.
            for note in &outcome.notes {
                say(&visible(note));
            }
            Ok(outcome.exit_code)
        }
        Err(e) => {
            say(&format!("error: {}", visible(&e.to_string())));
            Ok(e.exit_code())
        }
    }
    .map(|code| if code < 0 { EXIT_OK } else { code })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_process_is_not_dumpable() {
        super::deny_dumps();
        // SAFETY: PR_GET_DUMPABLE only reads this process's flag.
        let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
        assert_eq!(dumpable, 0);
    }
}
