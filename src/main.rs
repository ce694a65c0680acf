//! The binary's edge: parse, run, print, exit. Everything else lives in the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use etcdnet::cli::Cli;
use etcdnet::error::{EXIT_INCOMPLETE, EXIT_OK};

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
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    // clap prints usage errors itself and exits 2, our documented usage code.
    let cli = Cli::parse();
    init_tracing(cli.global.verbose);
    match real_main(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_INCOMPLETE as u8)
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(etcdnet::run(cli)) {
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
            for note in &outcome.notes {
                eprintln!("{note}");
            }
            Ok(outcome.exit_code)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(e.exit_code())
        }
    }
    .map(|code| if code < 0 { EXIT_OK } else { code })
}
