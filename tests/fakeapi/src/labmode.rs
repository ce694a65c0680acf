//! `--workload lab`: the lab behind the workload fake, for demos.
//!
//! The Supervisor fake runs the plugin's jumpbox pods (pods without a node) in the same lab's
//! switch namespace, and the cluster's `<cluster>-ssh` secret holds the lab's real key, so with
//! `--workload-down` the support article's case is diagnosed through the jumpbox route.
//!
//! The lab's nodes are named and addressed as the Supervisor set's control plane
//! ([`etcdnet_fakeapi::labplan`]), so the plugin's walk of the Supervisor leads it to pods pinned
//! to Nodes that really exist in the lab. The lab answers `etcdnet-lab fault|heal --lab ID` on
//! `<lab dir>/control.sock` with the same one-line protocol as `etcdnet-lab up`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use etcdnet_fakeapi::labplan::{self, PlannedNode};
use etcdnet_fakeapi::{FakeApi, FakeConfig, Workload};
use etcdnet_lab::{EtcdVersion, Fault, Lab, Logger};

use crate::Args;

/// Starts the lab the Supervisor set `cfg` describes and the workload fake in front of it;
/// also returns the planned nodes, for [`jumpbox`].
pub fn start(cfg: &FakeConfig, args: &Args) -> Result<(Arc<Lab>, Workload, Vec<PlannedNode>)> {
    let nodes = labplan::plan(cfg, args.cluster.as_deref())
        .context("finding the control-plane nodes the lab must have")?;
    let mut lab_cfg = labplan::lab_config(&nodes)?;
    if let Some(l) = &args.logger {
        lab_cfg.logger = l.parse::<Logger>()?;
    }
    if let Some(v) = &args.etcd {
        lab_cfg.etcd = v.parse::<EtcdVersion>()?;
    }
    lab_cfg.apiserver = args.apiserver;
    let faults: Vec<Fault> = args
        .faults
        .iter()
        .map(|f| f.parse::<Fault>())
        .collect::<Result<_>>()?;
    eprintln!(
        "etcdnet-fakeapi: starting a lab of {} nodes: {}",
        nodes.len(),
        nodes
            .iter()
            .map(|n| format!("{} {}", n.name, n.ip))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let lab = Arc::new(Lab::start(lab_cfg)?);
    for f in faults {
        lab.inject(f)?;
    }
    serve_control(&lab)?;
    let workload = if args.workload_down && !args.apiserver {
        Workload::black_hole()
    } else {
        let mut wcfg = match &args.workload_fixtures {
            Some(dir) => FakeConfig::from_dir(dir)?,
            None => FakeConfig::empty(),
        };
        for image in &args.refuse_images {
            wcfg = wcfg.refuse_image(image);
        }
        let w = if args.apiserver {
            // Behind the lab's API servers and its VIP (Workload::lab): the endpoint answers
            // only while etcd has a quorum; the pods run in the lab.
            Workload::lab(wcfg, lab.clone())?
        } else {
            let w = Workload::serving(wcfg)?;
            w.api()
                .expect("a serving workload is an API server")
                .execute_pods_in(lab.clone())?;
            w
        };
        if args.apiserver && args.workload_down {
            // The endpoint dark: the VIP takes connections and never answers, until a heal.
            lab.inject(Fault::VipDown)?;
        }
        let api = w.api().expect("a serving workload is an API server");
        // A fixture set without these Nodes is likely a mistake (the lab kubelet registers
        // them anyway): say so.
        let missing: Vec<&str> = nodes
            .iter()
            .filter(|n| api.object("v1", "Node", "", &n.name).is_none())
            .map(|n| n.name.as_str())
            .collect();
        // (A set with no Node at all, such as lab-any, leaves them to the kubelet on purpose.)
        if args.workload_fixtures.is_some() && !missing.is_empty() && missing.len() < nodes.len() {
            eprintln!(
                "etcdnet-fakeapi: the workload fixtures have no Node {missing:?}; registering them as their kubelet would"
            );
        }
        w
    };
    Ok((lab, workload, nodes))
}

/// Makes the Supervisor fake run jumpbox pods in the lab and puts the lab's private key into
/// the cluster's `<cluster>-ssh` secret (key `ssh-privatekey`; the fixture's is a fake). Returns
/// `namespace/name` of that secret. The key itself is never printed.
pub fn jumpbox(api: &FakeApi, lab: &Arc<Lab>, nodes: &[PlannedNode]) -> Result<String> {
    api.execute_jumpbox_pods_in(lab.clone())?;
    let first = nodes.first().context("the lab has no nodes")?;
    let machine = api
        .objects("cluster.x-k8s.io", "machines")
        .into_iter()
        .find(|m| m["metadata"]["name"].as_str() == Some(first.machine.as_str()))
        .with_context(|| format!("Machine {} is not served", first.machine))?;
    let ns = machine["metadata"]["namespace"].as_str().unwrap_or("");
    let cluster = machine["spec"]["clusterName"]
        .as_str()
        .or_else(|| machine["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"].as_str())
        .context("the Machine names no cluster")?;
    let secret = format!("{cluster}-ssh");
    if api.object("v1", "Secret", ns, &secret).is_none() {
        // As on a Supervisor that lost it: the jumpbox pods will wait in FailedMount.
        eprintln!(
            "etcdnet-fakeapi: the set has no Secret {ns}/{secret}: jumpbox pods will stay Pending (FailedMount)"
        );
    } else {
        api.set_secret_data(ns, &secret, "ssh-privatekey", lab.ssh_private_key())?;
    }
    eprintln!(
        "etcdnet-fakeapi: the Supervisor runs pods without a node (jumpbox pods) in lab {} at {}; {ns}/{secret} holds the lab's SSH key",
        lab.id(),
        lab.jumpbox_ip()
    );
    Ok(format!("{ns}/{secret}"))
}

/// `LAB_ID=`, `LAB_DIR=`, `LAB_NODES=` lines, and how to inject a fault, on stderr.
pub fn print(out: &mut impl Write, lab: &Lab) -> Result<()> {
    writeln!(out, "LAB_ID={}", lab.id())?;
    writeln!(out, "LAB_DIR={}", lab.dir().display())?;
    let nodes: Vec<String> = lab
        .nodes()
        .iter()
        .map(|n| format!("{}={}", n.name, n.ip))
        .collect();
    writeln!(out, "LAB_NODES={}", nodes.join(","))?;
    eprintln!(
        "etcdnet-fakeapi: faults: etcdnet-lab fault drop-all-peers --lab {id}; etcdnet-lab heal --lab {id}",
        id = lab.id()
    );
    Ok(())
}

/// Tears the lab down (etcd, namespaces, files), saying so.
pub fn stop(lab: Arc<Lab>) {
    eprintln!("etcdnet-fakeapi: tearing down lab {}", lab.id());
    drop(lab);
}

/// The control socket `etcdnet-lab fault|heal` finds through the lab's record.
fn serve_control(lab: &Arc<Lab>) -> Result<()> {
    let sock = lab.dir().join("control.sock");
    let listener =
        UnixListener::bind(&sock).with_context(|| format!("binding {}", sock.display()))?;
    // A weak handle: main drops (tears down) the lab; this thread must not keep it alive.
    let weak = Arc::downgrade(lab);
    std::thread::Builder::new()
        .name("lab-control".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let Some(lab) = weak.upgrade() else { break };
                let _ = answer(&lab, conn);
            }
        })?;
    Ok(())
}

fn answer(lab: &Lab, conn: UnixStream) -> Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line)?;
    let line = line.trim();
    let result = if let Some(f) = line.strip_prefix("fault ") {
        f.parse::<Fault>().and_then(|f| lab.inject(f))
    } else if line == "heal" {
        lab.heal()
    } else {
        Err(anyhow::anyhow!("unknown request {line:?}"))
    };
    let mut w = &conn;
    match result {
        Ok(()) => writeln!(w, "ok")?,
        Err(e) => writeln!(w, "error: {e:#}")?,
    }
    Ok(())
}

/// One cluster of `--cluster all`: its lab and the workload API in front of it.
pub struct ClusterLab {
    pub cluster: String,
    pub lab: Arc<Lab>,
    pub workload: Workload,
    pub nodes: Vec<PlannedNode>,
}

impl ClusterLab {
    /// The suffix of its variables: `WORKLOAD_URL_<S>`, `LAB_ID_<S>`, ...
    pub fn suffix(&self) -> String {
        etcdnet_fakeapi::workload_url_var(&self.cluster)["WORKLOAD_URL_".len()..].to_string()
    }
}

/// `--cluster all`: one lab per cluster of the set (each cluster's control plane on its own
/// /24), started side by side, each behind a workload API of its own (what [`start`] makes for
/// one cluster, faults included). The set must give each cluster's kubeconfig its own
/// `{{WORKLOAD_URL_<NAME>}}` (`etcdnet_fakeapi::workload_url_var`), as `three-clusters` does.
pub fn start_all(cfg: &FakeConfig, args: &Args) -> Result<Vec<ClusterLab>> {
    let clusters = labplan::clusters(cfg)?;
    if clusters.is_empty() {
        anyhow::bail!("the fixture set has no control-plane Machines");
    }
    let results: Vec<Result<ClusterLab>> = std::thread::scope(|s| {
        let handles: Vec<_> = clusters
            .iter()
            .map(|c| {
                s.spawn(move || {
                    let mut one = args.clone();
                    one.cluster = Some(c.clone());
                    let (lab, workload, nodes) =
                        start(cfg, &one).with_context(|| format!("cluster {c}"))?;
                    Ok(ClusterLab {
                        cluster: c.clone(),
                        lab,
                        workload,
                        nodes,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a lab start panicked")))
            })
            .collect()
    });
    // On an error the labs already started are dropped (torn down) here.
    results.into_iter().collect()
}

/// `--cluster all`: the Supervisor runs jumpbox pods in the first cluster's lab ([`jumpbox`]),
/// whose switch is linked to every other lab (`Lab::route_jumpbox_to`), so one Supervisor reaches
/// the VMs of all its clusters; each `<cluster>-ssh` holds its own lab's key. Returns the
/// secrets, `namespace/name` each.
pub fn jumpbox_all(api: &FakeApi, labs: &[ClusterLab]) -> Result<Vec<String>> {
    let Some((first, rest)) = labs.split_first() else {
        return Ok(Vec::new());
    };
    let mut secrets = vec![jumpbox(api, &first.lab, &first.nodes)?];
    for other in rest {
        first.lab.route_jumpbox_to(&other.lab)?;
        secrets.push(ssh_secret(api, other)?);
    }
    Ok(secrets)
}

/// Puts `c`'s lab key into its `<cluster>-ssh` secret; `namespace/name` of the secret.
fn ssh_secret(api: &FakeApi, c: &ClusterLab) -> Result<String> {
    let first = c.nodes.first().context("the lab has no nodes")?;
    let machine = api
        .objects("cluster.x-k8s.io", "machines")
        .into_iter()
        .find(|m| m["metadata"]["name"].as_str() == Some(first.machine.as_str()))
        .with_context(|| format!("Machine {} is not served", first.machine))?;
    let ns = machine["metadata"]["namespace"].as_str().unwrap_or("");
    let secret = format!("{}-ssh", c.cluster);
    if api.object("v1", "Secret", ns, &secret).is_none() {
        eprintln!(
            "etcdnet-fakeapi: the set has no Secret {ns}/{secret}: jumpbox pods will stay Pending (FailedMount)"
        );
    } else {
        api.set_secret_data(ns, &secret, "ssh-privatekey", c.lab.ssh_private_key())?;
    }
    eprintln!(
        "etcdnet-fakeapi: the Supervisor's jumpbox pods reach lab {} ({}) through lab {}'s switch",
        c.lab.id(),
        c.cluster,
        api.lab().map(|l| l.id().to_string()).unwrap_or_default()
    );
    Ok(format!("{ns}/{secret}"))
}

/// `LAB_ID=` (the first lab, as with one cluster), then per cluster `WORKLOAD_URL_<S>=`,
/// `LAB_ID_<S>=`, `LAB_DIR_<S>=`, `LAB_NODES_<S>=` (S from `etcdnet_fakeapi::workload_url_var`).
pub fn print_all(out: &mut impl Write, labs: &[ClusterLab]) -> Result<()> {
    if let Some(first) = labs.first() {
        writeln!(out, "LAB_ID={}", first.lab.id())?;
    }
    for c in labs {
        let s = c.suffix();
        writeln!(out, "WORKLOAD_URL_{s}={}", c.workload.url())?;
        writeln!(out, "LAB_ID_{s}={}", c.lab.id())?;
        writeln!(out, "LAB_DIR_{s}={}", c.lab.dir().display())?;
        let nodes: Vec<String> = c
            .lab
            .nodes()
            .iter()
            .map(|n| format!("{}={}", n.name, n.ip))
            .collect();
        writeln!(out, "LAB_NODES_{s}={}", nodes.join(","))?;
    }
    eprintln!(
        "etcdnet-fakeapi: faults: etcdnet-lab fault drop-all-peers --lab <LAB_ID_...>; etcdnet-lab heal --lab <LAB_ID_...>"
    );
    Ok(())
}
