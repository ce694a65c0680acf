// Decides, once per build, whether the lab tests run here. They need root (network namespaces,
// nftables, mounts): built as root they run, and fail loudly if a lab package is missing
// (`etcdnet_lab::require`); built as anyone else they are compiled as `#[ignore]`, so the test
// summary counts them as ignored, never as passed. `ETCDNET_LAB=0` ignores them as root too,
// `ETCDNET_LAB=1` runs them as anyone (to see why they cannot run).
//
// Test-only: the plugin itself does not read the cfg. `tests/fakeapi` includes this file.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(etcdnet_lab)");
    println!("cargo::rerun-if-changed=build.rs");
    // `sudo cargo test` after `cargo test` (or the other way) must decide again.
    for var in ["ETCDNET_LAB", "USER", "SUDO_USER"] {
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
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective saved fs`); None where that
/// file does not exist (not Linux: the lab cannot run there either).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}
