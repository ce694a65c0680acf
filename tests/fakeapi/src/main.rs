//! `etcdnet-fakeapi`: the fake API server from the command line, for demos.
//!
//! ```text
//! etcdnet-fakeapi --fixtures DIR [--listen 127.0.0.1:0] [--var K=V ...]
//!                 [--kubeconfig-out PATH [--context NAME] [--namespace NS]]
//!                 [--workload ok|black-hole|refused|etcd-unhealthy]
//! ```
//!
//! Prints `FAKEAPI_URL=...` (and `WORKLOAD_URL=...`, `KUBECONFIG=...`) on
//! stdout, then serves until SIGINT or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};

const USAGE: &str = "usage: etcdnet-fakeapi --fixtures DIR [--listen 127.0.0.1:0] [--var K=V ...]
                       [--kubeconfig-out PATH [--context NAME] [--namespace NS]]
                       [--workload ok|black-hole|refused|etcd-unhealthy]";

#[derive(Default)]
struct Args {
    fixtures: Option<PathBuf>,
    listen: Option<SocketAddr>,
    vars: Vec<(String, String)>,
    kubeconfig_out: Option<PathBuf>,
    context: Option<String>,
    namespace: Option<String>,
    workload: Option<String>,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args> {
    let mut a = Args::default();
    while let Some(flag) = it.next() {
        // Accept both "--flag value" and "--flag=value".
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (flag, None),
        };
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let mut value = || -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .with_context(|| format!("{flag} needs a value\n{USAGE}")),
            }
        };
        match flag.as_str() {
            "--fixtures" => a.fixtures = Some(value()?.into()),
            "--listen" => a.listen = Some(value()?.parse().context("--listen takes ADDRESS:PORT")?),
            "--var" => {
                let v = value()?;
                let (k, val) = v.split_once('=').context("--var takes NAME=VALUE")?;
                a.vars.push((k.to_string(), val.to_string()));
            }
            "--kubeconfig-out" => a.kubeconfig_out = Some(value()?.into()),
            "--context" => a.context = Some(value()?),
            "--namespace" => a.namespace = Some(value()?),
            "--workload" => a.workload = Some(value()?),
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    Ok(a)
}

fn main() -> Result<()> {
    let args = parse_args(std::env::args().skip(1))?;
    let Some(fixtures) = &args.fixtures else {
        bail!("--fixtures is required\n{USAGE}")
    };
    let workload = match args.workload.as_deref() {
        None => None,
        Some("ok") => Some(Workload::ok()),
        Some("black-hole") => Some(Workload::black_hole()),
        Some("refused") => Some(Workload::refused()),
        Some("etcd-unhealthy") => Some(Workload::etcd_unhealthy()),
        Some(other) => {
            bail!("--workload {other:?}: expected ok, black-hole, refused or etcd-unhealthy")
        }
    };
    let mut cfg = FakeConfig::from_dir(fixtures)?;
    if let Some(w) = &workload {
        cfg = cfg.var("WORKLOAD_URL", w.url());
    }
    for (k, v) in &args.vars {
        cfg = cfg.var(k, v);
    }
    if let Some(l) = args.listen {
        cfg = cfg.listen(l);
    }
    let api = FakeApi::start_with(cfg)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "FAKEAPI_URL={}", api.url())?;
    if let Some(w) = &workload {
        writeln!(out, "WORKLOAD_URL={}", w.url())?;
    }
    if let Some(path) = &args.kubeconfig_out {
        let context = args
            .context
            .clone()
            .or_else(|| args.namespace.clone())
            .unwrap_or_else(|| "fakeapi".into());
        api.write_kubeconfig(path, &context, args.namespace.as_deref())?;
        writeln!(out, "KUBECONFIG={}", path.display())?;
    }
    out.flush()?;
    drop(out);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r?,
            _ = term.recv() => {}
        }
        anyhow::Ok(())
    })?;
    eprintln!(
        "etcdnet-fakeapi: served {} requests, stopping",
        api.requests().len()
    );
    Ok(())
}
