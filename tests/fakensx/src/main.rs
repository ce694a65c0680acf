//! `etcdnet-fakensx --world DIR [--addr 127.0.0.1:0] [--ca-out FILE] [--log FILE]`: serves a
//! world until killed (the lab demo). Prints `url=https://…` and `ca=<file>` (the CA PEM
//! written there: `--ca-out`, or a file in the temp directory named after the process);
//! `--log` writes one line per request (`STATUS USER AUTH METHOD path?query`).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use etcdnet_fakensx::{FakeNsx, Options, World};

fn main() -> Result<()> {
    let mut world = None;
    let mut addr: SocketAddr = "127.0.0.1:0".parse()?;
    let mut ca_out = None;
    let mut log = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--world" => world = Some(PathBuf::from(value("--world")?)),
            "--addr" => addr = value("--addr")?.parse().context("--addr: not an address")?,
            "--ca-out" => ca_out = Some(PathBuf::from(value("--ca-out")?)),
            "--log" => log = Some(PathBuf::from(value("--log")?)),
            "-h" | "--help" => {
                println!(
                    "etcdnet-fakensx --world DIR [--addr 127.0.0.1:0] [--ca-out FILE] [--log FILE]"
                );
                return Ok(());
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    let Some(dir) = world else {
        bail!("--world DIR is required");
    };
    let world = World::from_dir(&dir)?;
    let nsx = FakeNsx::start_with(
        world,
        Options {
            addr,
            ..Options::default()
        },
    )?;
    let ca = ca_out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("etcdnet-fakensx-{}-ca.pem", std::process::id()))
    });
    nsx.write_ca(&ca)?;
    if let Some(log) = &log {
        nsx.log_requests_to(log)?;
    }
    println!("url={}", nsx.url());
    println!("ca={}", ca.display());
    loop {
        std::thread::park();
    }
}
