//! `etcdnet-fakeapi`: the fake API server from the command line, for demos.
//!
//! ```text
//! etcdnet-fakeapi --fixtures DIR [--listen 127.0.0.1:0] [--var K=V ...]
//!                 [--kubeconfig-out PATH [--context NAME] [--namespace NS]]
//!                 [--workload ok|black-hole|refused|etcd-unhealthy|lab]
//!                 [--workload-fixtures DIR] [--workload-down] [--cluster NAME]
//!                 [--refuse-image IMAGE ...] [--fault F ...] [--logger zap|text|mixed]
//! ```
//!
//! Prints `FAKEAPI_URL=...` (and `WORKLOAD_URL=...`, `KUBECONFIG=...`, and in lab mode
//! `JUMPBOX_SECRET=...`, `LAB_ID=...`, `LAB_DIR=...`, `LAB_NODES=name=ip,...`) on stdout, then serves until SIGINT or
//! SIGTERM, and tears everything down.
//!
//! `--workload lab` starts a lab (tests/lab) whose node names and addresses are the Supervisor
//! set's control-plane Machines' nodeRefs and VM addresses, and a workload API (serving
//! `--workload-fixtures`) whose pods pinned to those nodes run in the lab. `--workload-down`
//! keeps the lab but makes the workload API a black hole (etcd without quorum: nothing answers).
//! In lab mode the Supervisor fake also runs the pods created without a node (the plugin's
//! jumpbox pods) in the lab's switch namespace, the Supervisor side, and `<cluster>-ssh` holds the
//! lab's real key (`JUMPBOX_SECRET=ns/name` is printed; the key never is).
//! The lab listens on `<LAB_DIR>/control.sock`, so `etcdnet-lab fault drop-all-peers --lab ID`
//! and `etcdnet-lab heal --lab ID` work against it.

mod labmode;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};
use tokio::signal::unix::{signal, SignalKind};

const USAGE: &str = "usage: etcdnet-fakeapi --fixtures DIR [--listen 127.0.0.1:0] [--var K=V ...]
                       [--kubeconfig-out PATH [--context NAME] [--namespace NS]]
                       [--workload ok|black-hole|refused|etcd-unhealthy|lab]
                       [--workload-fixtures DIR] [--workload-down] [--cluster NAME]
                       [--refuse-image IMAGE ...] [--fault F ...] [--logger zap|text|mixed]
  --workload lab         a lab of real etcd nodes named and addressed as the set's control plane;
                         the workload API runs the pods pinned to them
  --workload-fixtures    objects of the workload API (e.g. tests/fixtures/workload/lab-3)
  --workload-down        lab mode, but the workload API never answers (quorum lost): the
                         Supervisor's jumpbox pods still reach the nodes over SSH
  --cluster NAME         the cluster whose control plane the lab is (when the set has several)
  --refuse-image IMAGE   the workload's nodes cannot pull IMAGE (ErrImagePull, ImagePullBackOff)
  --fault F              inject an etcdnet-lab fault once the lab is up (drop-all-peers, ...)
  --logger L             the lab's etcd log format";

#[derive(Default)]
struct Args {
    fixtures: Option<PathBuf>,
    listen: Option<SocketAddr>,
    vars: Vec<(String, String)>,
    kubeconfig_out: Option<PathBuf>,
    context: Option<String>,
    namespace: Option<String>,
    workload: Option<String>,
    workload_fixtures: Option<PathBuf>,
    workload_down: bool,
    cluster: Option<String>,
    refuse_images: Vec<String>,
    faults: Vec<String>,
    logger: Option<String>,
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
        if flag == "--workload-down" {
            a.workload_down = true;
            continue;
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
            "--workload-fixtures" => a.workload_fixtures = Some(value()?.into()),
            "--cluster" => a.cluster = Some(value()?),
            "--refuse-image" => a.refuse_images.push(value()?),
            "--fault" => a.faults.push(value()?),
            "--logger" => a.logger = Some(value()?),
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let lab = a.workload.as_deref() == Some("lab");
    if a.workload_down && !lab {
        if a.workload.is_some() {
            bail!("--workload-down goes with --workload lab");
        }
        a.workload = Some("lab".into());
    }
    let lab = lab || a.workload_down;
    if !lab
        && (a.workload_fixtures.is_some()
            || !a.faults.is_empty()
            || a.logger.is_some()
            || a.cluster.is_some()
            || !a.refuse_images.is_empty())
    {
        bail!("--workload-fixtures, --refuse-image, --fault, --logger and --cluster need --workload lab");
    }
    Ok(a)
}

fn main() {
    // One line on stderr, as the lab's binary does (anyhow's Debug form dumps a backtrace).
    if let Err(e) = run() {
        eprintln!("etcdnet-fakeapi: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = parse_args(std::env::args().skip(1))?;
    let Some(fixtures) = args.fixtures.clone() else {
        bail!("--fixtures is required\n{USAGE}")
    };
    // Signals are caught from the start: a Ctrl-C while the lab starts must still tear it down.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut int, mut term) = rt.block_on(async {
        anyhow::Ok((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    })?;

    let mut cfg = FakeConfig::from_dir(&fixtures)?;
    let mut lab = None;
    let mut planned = Vec::new();
    let workload = match args.workload.as_deref() {
        None => None,
        Some("ok") => Some(Workload::ok()),
        Some("black-hole") => Some(Workload::black_hole()),
        Some("refused") => Some(Workload::refused()),
        Some("etcd-unhealthy") => Some(Workload::etcd_unhealthy()),
        Some("lab") => {
            let (l, w, nodes) = labmode::start(&cfg, &args)?;
            lab = Some(l);
            planned = nodes;
            Some(w)
        }
        Some(other) => {
            bail!("--workload {other:?}: expected ok, black-hole, refused, etcd-unhealthy or lab")
        }
    };
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
    let jumpbox_secret = match &lab {
        Some(l) => Some(labmode::jumpbox(&api, l, &planned)?),
        None => None,
    };
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
    if let Some(s) = &jumpbox_secret {
        writeln!(out, "JUMPBOX_SECRET={s}")?;
    }
    if let Some(l) = &lab {
        labmode::print(&mut out, l)?;
    }
    out.flush()?;
    drop(out);

    rt.block_on(async {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    });
    eprintln!(
        "etcdnet-fakeapi: served {} requests, stopping",
        api.requests().len()
    );
    // Pods first (their processes run in the lab's namespaces), then the lab itself.
    drop(workload);
    drop(api);
    if let Some(l) = lab {
        labmode::stop(l);
    }
    Ok(())
}
