//! `etcdnet-fakeapi`: the fake API server from the command line, for demos.
//!
//! ```text
//! etcdnet-fakeapi --fixtures DIR | --many-clusters NxM [--listen 127.0.0.1:0] [--var K=V ...]
//!                 [--kubeconfig-out PATH [--context NAME] [--namespace NS]] [--requests-out FILE]
//!                 [--workload ok|black-hole|refused|etcd-unhealthy|lab]
//!                 [--workload-fixtures DIR] [--workload-down] [--apiserver] [--cluster NAME]
//!                 [--refuse-image IMAGE ...] [--fault F ...] [--logger zap|text|mixed]
//!                 [--etcd 3.4|3.5] [--stamp-at-start]
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
//! `--apiserver` runs the lab's kube-apiserver stand-ins and makes the endpoint their VIP
//! (`Workload::lab`; the secret carries the lab's cluster CA): it answers only while etcd has a
//! quorum; with `--workload-down`, the VIP is dark (`vip-down`) until a heal.
//! In lab mode the Supervisor fake also runs the pods created without a node (the plugin's
//! jumpbox pods) in the lab's switch namespace, the Supervisor side, and `<cluster>-ssh` holds the
//! lab's real key (`JUMPBOX_SECRET=ns/name` is printed; the key never is).
//! The lab listens on `<LAB_DIR>/control.sock`, so `etcdnet-lab fault drop-all-peers --lab ID`
//! and `etcdnet-lab heal --lab ID` work against it.
//!
//! `--cluster all` (lab mode) starts one lab per cluster of the set, side by side, each with its
//! own workload API (`{{WORKLOAD_URL_<NAME>}}`, e.g. the `three-clusters` set); the Supervisor
//! runs jumpbox pods in the first lab, linked to the others. It prints `LAB_ID=` (the first lab)
//! and per cluster `WORKLOAD_URL_<S>=`, `LAB_ID_<S>=`, `LAB_DIR_<S>=`, `LAB_NODES_<S>=`.
//!
//! `--many-clusters NxM` serves a generated Supervisor instead of `--fixtures`: N vSphere
//! Namespaces of M clusters (`etcdnet_fakeapi::generate::many_clusters`), every kubeconfig at the
//! one `WORKLOAD_URL`. `--requests-out FILE` writes every Supervisor request to FILE as it
//! arrives, one `METHOD path?query` line each (count a run's with `wc -l` before and after).
//!
//! `--stamp-at-start` moves every timestamp of the set so that the newest is a few minutes before
//! the fake starts (`FakeConfig::stamped_at_start`): the demo's conditions then read "3m ago",
//! not the fixture's year-old date beside a cut seconds old.

mod labmode;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};
use tokio::signal::unix::{signal, SignalKind};

const USAGE: &str =
    "usage: etcdnet-fakeapi --fixtures DIR | --many-clusters NxM [--listen 127.0.0.1:0]
                       [--var K=V ...] [--kubeconfig-out PATH [--context NAME] [--namespace NS]]
                       [--requests-out FILE]
                       [--workload ok|black-hole|refused|etcd-unhealthy|lab]
                       [--workload-fixtures DIR] [--workload-down] [--apiserver] [--cluster NAME]
                       [--refuse-image IMAGE ...] [--fault F ...] [--logger zap|text|mixed]
                       [--etcd 3.4|3.5] [--stamp-at-start]
  --workload lab         a lab of real etcd nodes named and addressed as the set's control plane;
                         the workload API runs the pods pinned to them
  --workload-fixtures    objects of the workload API (e.g. tests/fixtures/workload/lab-3)
  --workload-down        lab mode, but the workload API never answers (quorum lost): the
                         Supervisor's jumpbox pods still reach the nodes over SSH
  --apiserver            lab mode: a kube-apiserver stand-in on every node and the endpoint a
                         VIP in front of them (answers only while etcd has a quorum);
                         with --workload-down, the VIP is dark (vip-down) until a heal
  --cluster NAME         the cluster whose control plane the lab is (when the set has several);
                         `all`: one lab and one workload API per cluster ({{WORKLOAD_URL_<NAME>}})
  --many-clusters NxM    a generated Supervisor: N vSphere Namespaces of M clusters each
  --requests-out FILE    every Supervisor request, one line each, written as it arrives
  --refuse-image IMAGE   the workload's nodes cannot pull IMAGE (ErrImagePull, ImagePullBackOff)
  --fault F              inject an etcdnet-lab fault once the lab is up (drop-all-peers, ...)
  --logger L             the lab's etcd log format
  --etcd V               the lab's etcd line (3.4, the default, or 3.5)
  --stamp-at-start       move the set's timestamps so that the newest is 3 minutes before the
                         start (conditions read 3m ago, not the fixture's date)
  --vsphere-pod-start S  each jumpbox (vSphere Pod) takes S seconds to start, as a real one's
                         image pull and VM boot do (docs/benchmarks.md uses 20)";

#[derive(Default, Clone)]
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
    apiserver: bool,
    cluster: Option<String>,
    refuse_images: Vec<String>,
    faults: Vec<String>,
    logger: Option<String>,
    etcd: Option<String>,
    requests_out: Option<PathBuf>,
    many_clusters: Option<(usize, usize)>,
    vsphere_pod_start: Option<std::time::Duration>,
    stamp_at_start: bool,
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
        if flag == "--apiserver" {
            a.apiserver = true;
            continue;
        }
        if flag == "--stamp-at-start" {
            a.stamp_at_start = true;
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
            "--etcd" => a.etcd = Some(value()?),
            "--requests-out" => a.requests_out = Some(value()?.into()),
            "--vsphere-pod-start" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s <= 600.0)
                    .with_context(|| {
                        format!("--vsphere-pod-start takes seconds (0 to 600), not {v:?}")
                    })?;
                a.vsphere_pod_start = Some(std::time::Duration::from_secs_f64(secs));
            }
            "--many-clusters" => {
                let v = value()?;
                let parsed = v
                    .split_once('x')
                    .and_then(|(n, m)| Some((n.parse().ok()?, m.parse().ok()?)))
                    .filter(|&(n, m): &(usize, usize)| n > 0 && m > 0 && n * m <= 255);
                a.many_clusters = Some(parsed.with_context(|| {
                    format!("--many-clusters takes NxM (namespaces x clusters each, at most 255 clusters), not {v:?}")
                })?);
            }
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
            || a.etcd.is_some()
            || a.cluster.is_some()
            || !a.refuse_images.is_empty())
    {
        bail!("--workload-fixtures, --refuse-image, --fault, --logger, --etcd and --cluster need --workload lab");
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
    // A generated set lives in a directory of this run, removed at the end.
    let generated = match (&args.fixtures, args.many_clusters) {
        (Some(_), Some(_)) => bail!("--fixtures and --many-clusters do not mix"),
        (None, None) => bail!("--fixtures (or --many-clusters) is required\n{USAGE}"),
        (Some(_), None) => None,
        (None, Some((n, m))) => Some(Generated::new(n, m)?),
    };
    let fixtures = match &generated {
        Some(g) => g.0.clone(),
        None => args.fixtures.clone().expect("checked above"),
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
    if args.stamp_at_start {
        cfg = cfg.stamped_at_start();
    }
    let mut lab = None;
    let mut planned = Vec::new();
    let mut labs = Vec::new();
    let all = args.cluster.as_deref() == Some("all");
    if args.apiserver && args.workload.as_deref() != Some("lab") {
        bail!("--apiserver needs --workload lab (the API servers run on the lab's nodes)");
    }
    let workload = match args.workload.as_deref() {
        Some("lab") if all && args.apiserver => {
            // One WORKLOAD_CA for every cluster's secret: each lab has its own cluster CA.
            bail!("--apiserver takes one cluster (--cluster NAME), not --cluster all")
        }
        Some("lab") if all => {
            labs = labmode::start_all(&cfg, &args)?;
            for c in &labs {
                cfg = cfg.var(
                    etcdnet_fakeapi::workload_url_var(&c.cluster),
                    c.workload.url(),
                );
            }
            None
        }
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
        // The CA the kubeconfig secret carries: the lab's cluster CA behind its VIP.
        cfg = cfg.var("WORKLOAD_CA", w.ca_data());
    }
    for (k, v) in &args.vars {
        cfg = cfg.var(k, v);
    }
    if let Some(l) = args.listen {
        cfg = cfg.listen(l);
    }
    let api = FakeApi::start_with(cfg)?;
    if let Some(path) = &args.requests_out {
        api.log_requests_to(path)?;
    }
    if let Some(d) = args.vsphere_pod_start {
        api.delay_vsphere_pod_starts(d);
    }
    let jumpbox_secret = match &lab {
        Some(l) => Some(labmode::jumpbox(&api, l, &planned)?),
        None if !labs.is_empty() => Some(labmode::jumpbox_all(&api, &labs)?.join(",")),
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
    if !labs.is_empty() {
        labmode::print_all(&mut out, &labs)?;
    }
    if let Some(path) = &args.requests_out {
        writeln!(out, "REQUESTS_OUT={}", path.display())?;
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
    for c in labs {
        drop(c.workload);
        labmode::stop(c.lab);
    }
    drop(generated);
    Ok(())
}

/// The directory of a `--many-clusters` set, removed on drop.
struct Generated(PathBuf);

impl Generated {
    fn new(namespaces: usize, per_namespace: usize) -> Result<Generated> {
        let dir = std::env::temp_dir().join(format!(
            "etcdnet-fakeapi-{}-many-{namespaces}x{per_namespace}",
            std::process::id()
        ));
        let g = Generated(dir);
        etcdnet_fakeapi::generate::write_set(
            &g.0,
            &format!("many clusters: {namespaces} vSphere Namespaces of {per_namespace} clusters (etcdnet-fakeapi --many-clusters)"),
            &etcdnet_fakeapi::generate::many_clusters(namespaces, per_namespace),
        )?;
        Ok(g)
    }
}

impl Drop for Generated {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
