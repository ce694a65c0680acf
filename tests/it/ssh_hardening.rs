//! `--ssh-option` cannot set the options the ssh routes lock (the lab side is
//! `lab::ssh_hardening`).

use crate::common;
use common::article::*;
use common::*;
use std::process::Command;

/// A `--ssh-option` that would change what is locked is a usage error before anything is
/// contacted; the admin's ProxyJump still passes.
#[test]
fn a_locked_ssh_option_is_a_usage_error() {
    for option in [
        "ForwardAgent=yes",
        "controlmaster auto",
        "ControlPath=/tmp/cm-%C",
        "PermitLocalCommand=yes",
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/tmp/kh",
    ] {
        let out = Command::new(PLUGIN)
            .args([
                "diagnose",
                CLUSTER,
                "-n",
                NS,
                "--via",
                "ssh",
                "--ssh-option",
                option,
            ])
            .env("HOME", "/nonexistent")
            .env("KUBECONFIG", "/nonexistent")
            .output()
            .unwrap();
        let run = Run::from(out);
        run.expect_code(2);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: "), "{}", run.stderr);
        let keyword = option.split([' ', '=']).next().unwrap();
        assert!(
            first.to_lowercase().contains(&keyword.to_lowercase()) && first.contains("cannot"),
            "{first}"
        );
    }
    let env = Env::new(SET, Workload::black_hole());
    env.plugin(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "ssh",
        "--ssh-option",
        "ProxyJump=admin@bastion",
        "--dry-run",
    ])
    .expect_code(0);
}
