// Decides, once per build, whether the lab tests run here. They need root (network namespaces,
// nftables, mounts): built as root they run, and fail loudly if a lab package is missing
// (`etcdnet_lab::require`); built as anyone else they are compiled as `#[ignore]`, so the test
// summary counts them as ignored, never as passed. `ETCDNET_LAB=0` ignores them as root too,
// `ETCDNET_LAB=1` runs them as anyone (to see why they cannot run).
//
// The browser test (`etcdnet_browser`, tests/it/case_report.rs) runs where Chromium is
// installed (Debian's `chromium`, at /usr/bin/chromium) and always in CI (`CI=true`: .ci/run
// installs it, and a missing browser fails there rather than skipping); elsewhere it is compiled
// as `#[ignore]`. `ETCDNET_BROWSER=0` or `=1` decides instead.
//
// Test-only: the plugin itself does not read the cfg. `tests/fakeapi` includes this file.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(etcdnet_lab)");
    println!("cargo::rustc-check-cfg=cfg(etcdnet_browser)");
    println!("cargo::rerun-if-changed=build.rs");
    // `sudo cargo test` after `cargo test` (or the other way) must decide again.
    for var in ["ETCDNET_LAB", "USER", "SUDO_USER", "ETCDNET_BROWSER", "CI"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let lab = match std::env::var("ETCDNET_LAB").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => effective_uid() == Some(0),
    };
    if lab {
        println!("cargo::rustc-cfg=etcdnet_lab");
    }
    let browser = match std::env::var("ETCDNET_BROWSER").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => {
            std::env::var("CI").is_ok_and(|v| v == "true")
                || std::path::Path::new("/usr/bin/chromium").exists()
        }
    };
    if browser {
        println!("cargo::rustc-cfg=etcdnet_browser");
    }
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective saved fs`); None where that
/// file does not exist (not Linux: the lab cannot run there either).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}
