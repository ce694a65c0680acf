//! Snapshot tests of the command line (trycmd, as kube-rs/kopium does): `--help` of every
//! subcommand, `version`, and usage errors. Regenerate after an intended change with
//! `TRYCMD=overwrite cargo test --test it cli::` and review the diff.

#[test]
fn cli_snapshots() {
    trycmd::TestCases::new().case("tests/cmd/*.trycmd");
}
