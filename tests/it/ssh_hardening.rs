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

/// The `ssh` children get a clean environment: an `ssh` on PATH that records its environment
/// sees `PATH` and `HOME`, and neither `NSXT_PASSWORD`/`NSXT_USERNAME` (the NSX credentials the
/// admin exported) nor anything else of the plugin's.
#[test]
fn ssh_children_get_no_nsx_credentials() {
    let env = Env::new(SET, Workload::black_hole());
    let bin = tempfile::tempdir().unwrap();
    let seen = bin.path().join("seen");
    std::fs::create_dir(&seen).unwrap();
    let ssh = bin.path().join("ssh");
    // Each child writes its whole environment, NUL-separated, then fails as an unreachable
    // host does (255).
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\nenv -0 > '{}/env.'$$\nexit 255\n",
            seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = env.plugin_command(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "ssh",
        "--timeout",
        "20s",
        "-o",
        "json",
    ]);
    cmd.env("PATH", path)
        .env("NSXT_PASSWORD", "planted-nsx-password")
        .env("NSXT_USERNAME", "planted-nsx-user")
        .env("ETCDNET_TEST_OTHER_SECRET", "planted-other");
    let run = Run::from(cmd.output().unwrap());
    let envs: Vec<String> = std::fs::read_dir(&seen)
        .unwrap()
        .map(|e| String::from_utf8(std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert!(!envs.is_empty(), "no ssh child ran: {}", run.stderr);
    for e in &envs {
        let names: Vec<&str> = e
            .split('\0')
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
            .collect();
        assert!(
            names.contains(&"PATH") && names.contains(&"HOME"),
            "{names:?}"
        );
        for planted in ["planted-nsx-password", "planted-nsx-user", "planted-other"] {
            assert!(!e.contains(planted), "{planted} reached ssh: {names:?}");
        }
        assert!(names.iter().all(|k| !k.starts_with("NSXT_")), "{names:?}");
    }
}
