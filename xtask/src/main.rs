//! `cargo xtask <command>` (the alias is in .cargo/config.toml): the project's tools that are
//! not tests, so that the test suite holds tests only. tests/README.md lists every tool.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage:
  cargo xtask krew-manifest TAG DIST [--all]
      krew/.krew.yaml rendered for TAG as krew-release-bot will, with the sha256 of the release
      archives in DIST, each archive checked (its sum, its .sha256, its files), written to
      DIST/etcdnet.yaml. --all: every platform's archive must be there (the release); without
      it, the manifest offers the platforms whose archives are there. scripts/release.sh check
      runs it.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args[..] {
        ["krew-manifest", tag, dist] => krew_manifest(tag, dist, false),
        ["krew-manifest", tag, dist, "--all"] => krew_manifest(tag, dist, true),
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The repository: this crate's parent directory.
fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

fn krew_manifest(tag: &str, dist: &str, all: bool) -> Result<(), String> {
    let path = root().join("krew/.krew.yaml");
    let template = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let archives = xtask::release::manifest(&template, tag, Path::new(dist), all)?;
    println!("{dist}/etcdnet.yaml: krew/.krew.yaml rendered for {tag}, the archives checked:");
    archives.iter().for_each(|a| println!("  {a}"));
    Ok(())
}
