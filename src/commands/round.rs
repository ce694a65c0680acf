//! One diagnosis round over a selection of clusters: what a one-shot `diagnose` runs once and
//! `--watch` runs again and again ([`super::diagnose`] and [`super::watch`] both call
//! [`round_with_cleanup`]; this module calls neither).
//!
//! find (Supervisor walk) → workload (API check) → plan (route, targets, bounds) → reach (the
//! route's session on every node, bounded fan-out) → [`Evidence`] → analyse ([`Evidence::judge`]:
//! matrices, verdict) → report. Nothing here knows a particular route: they all come through
//! [`crate::route`]. Many clusters (`--all`, `-A`) go through [`super::many`].
//!
//! Every pod created on the way is tracked by a [`PodTracker`]; the round may be cancelled at
//! any await (Ctrl-C, SIGTERM, SIGHUP) and [`round_with_cleanup`] still deletes every pod before
//! it returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::many::{self, Selection, Which};
use super::nsx::NsxRun;
use crate::analyse::{self, FindingCode};
use crate::command::{self, Kubectl};
use crate::connect::Connection;
use crate::error::{Error, Result};
use crate::plan::{self, DiagnoseConfig, DiagnosePlan};
use crate::progress::Progress;
use crate::report::{DiagnoseReport, Evidence, ListItem, ListReport};
use crate::route::lifecycle::{Host, Kept};
use crate::route::{self, Env, PodTracker};
use crate::supervisor::{self, ClusterFacts, Inventory};
use crate::{render, signal, workload};

/// What one cluster's diagnosis produced.
pub(crate) enum Diagnosed {
    Report(Box<DiagnoseReport>, Box<Evidence>),
    /// `--dry-run`: the pods it would have created.
    DryRun(DryRun),
}

/// `--dry-run`'s output: the pods, and the warnings a dry run still owes the admin (the
/// labelled Machines that would not be probed).
#[derive(Default)]
pub(crate) struct DryRun {
    pub pods: Vec<Pod>,
    pub notes: Vec<String>,
}

/// What one round produced: one cluster's diagnosis, or a list of many.
pub(crate) enum Round {
    One(Diagnosed),
    Many(ListReport<DiagnoseReport>, Vec<Evidence>, DryRun),
}

/// One round over the selection, cancelled by a signal, then every pod it created deleted
/// (unless `--keep-pods`). Returns the round and the notes about the pods.
pub(crate) async fn round_with_cleanup(
    conn: &Connection,
    selection: &Selection,
    opts: &DiagnoseConfig,
) -> (Result<Round>, Vec<String>) {
    let tracker = PodTracker::default();
    let progress = Progress::for_stderr();
    // NSX Manager (`--nsx-manager`): the run's one login (made by its first round, shared by
    // the rest), outside the signal's select so that the round's traceflows are deleted
    // whatever ends the round.
    let nsx = match (&opts.nsx, opts.dry_run) {
        (Some(config), false) => {
            let login = NsxRun::start(config);
            tokio::select! {
                n = login => Some(n),
                s = signal::shutdown() => return (Err(Error::Interrupted(s)), Vec::new()),
            }
        }
        _ => None,
    };
    let result = tokio::select! {
        r = round(conn, selection, opts, &tracker, nsx.as_ref(), &progress) => r,
        s = signal::shutdown() => Err(Error::Interrupted(s)),
    };
    progress.finish();
    // Every way out passes here: delete what is left, unless asked to keep it.
    let mut notes = Vec::new();
    if let Some(n) = &nsx {
        // Each delete is bounded; a further signal ends the wait at once (the first one, if it
        // came, ended the round above), saying what is left on NSX Manager.
        let seen = signal::count();
        tokio::select! {
            failed = n.finish() => notes.extend(failed),
            _ = signal::after(seen) => notes.extend(n.pending().into_iter().map(|path| format!(
                "warning: traceflow {path} was not deleted from NSX Manager (interrupted again); it is transient (NSX removes it after two idle hours), or delete it there"
            ))),
        }
    }
    let ns = command::namespace(&conn.namespace);
    let where_ = match &selection.which {
        Which::One(c) => format!("{} -n {ns}", command::name(c)),
        Which::Namespace => format!("<cluster> -n {ns}"),
        Which::AllNamespaces => "<cluster> -n <namespace>".to_string(),
    };
    if opts.keep_pods {
        notes.extend(kept_notes(&tracker.kept(), &conn.kubectl));
    } else {
        for failed in tracker.delete_all(Duration::from_secs(15)).await {
            notes.push(format!(
                "warning: could not delete probe pod {failed}; run: {}",
                conn.kubectl.run(&format!("etcdnet cleanup {where_}"))
            ));
        }
    }
    (result, notes)
}

/// `--keep-pods`: one note per place the kept pods are in (a workload cluster's namespace, or a
/// vSphere Namespace on the Supervisor for the jumpbox), each with the command that removes
/// them there: `cleanup` reaches a workload cluster only when named, the Supervisor always.
fn kept_notes(kept: &[Kept], kubectl: &Kubectl) -> Vec<String> {
    // A vSphere Namespace is one place whichever clusters' jumpboxes are in it.
    let place = |k: &Kept| {
        let cluster = (k.host == Host::Workload).then_some(&k.cluster);
        (k.host, k.namespace.clone(), cluster.cloned())
    };
    let mut places: Vec<(&Kept, Vec<&str>)> = Vec::new();
    for k in kept {
        match places.iter_mut().find(|p| place(p.0) == place(k)) {
            Some((_, names)) => names.push(&k.name),
            None => places.push((k, vec![&k.name])),
        }
    }
    places
        .into_iter()
        .map(|(k, names)| {
            let ns = render::visible(&k.namespace);
            let (place, command) = match (k.host, &k.cluster) {
                (Host::Supervisor, _) => (
                    format!("vSphere Namespace {ns} of the Supervisor"),
                    format!("cleanup -n {}", command::namespace(&k.namespace)),
                ),
                (Host::Workload, Some(c)) => (
                    format!("namespace {ns} of workload cluster {}", c.name),
                    format!(
                        "cleanup {} -n {}",
                        command::name(&c.name),
                        command::namespace(&c.namespace)
                    ),
                ),
                (Host::Workload, None) => (
                    format!("namespace {ns} of a workload cluster"),
                    "cleanup <cluster> -n <namespace>".to_string(),
                ),
            };
            format!(
                "kept {} probe pod(s) in {place}: {}; remove them with: {}",
                names.len(),
                names.join(", "),
                kubectl.run(&format!("etcdnet {command}"))
            )
        })
        .collect()
}

/// One round: one cluster, or each of many at most `max_concurrent` at once.
async fn round(
    conn: &Connection,
    selection: &Selection,
    opts: &DiagnoseConfig,
    tracker: &PodTracker,
    nsx: Option<&NsxRun>,
    progress: &Progress,
) -> Result<Round> {
    let started = Instant::now();
    if let Which::One(cluster) = &selection.which {
        progress.stage(format!(
            "reading cluster {} in namespace {} (context {})",
            render::visible(cluster),
            render::visible(&conn.namespace),
            render::visible(&conn.context)
        ));
        // The Supervisor walk is inside the cluster's bound: `--timeout` is the whole run's.
        let d = within(opts.timeout, cluster, async {
            let (facts, inventory) = supervisor::walk(conn, cluster).await?;
            diagnose(
                conn,
                facts,
                &Arc::new(inventory),
                opts,
                tracker,
                nsx,
                progress,
            )
            .await
        })
        .await?;
        return Ok(Round::One(d));
    }
    progress.stage(match &selection.which {
        Which::AllNamespaces => format!(
            "reading the clusters of every namespace (context {})",
            render::visible(&conn.context)
        ),
        _ => format!(
            "reading the clusters of namespace {} (context {})",
            render::visible(&conn.namespace),
            render::visible(&conn.context)
        ),
    });
    let found = many::find(conn, &selection.which).await?;
    // Every cluster is planned first (workload check, route, targets), so that the clusters of
    // one vSphere Namespace that take the jumpbox share one pod ([`share_jumpboxes`]); then
    // each is reached and judged. `--max-concurrent` bounds the clusters in each step; no
    // cluster waits for another (the first of a namespace to probe runs its jumpbox for all).
    let steps = progress.steps(format!("diagnosing {} clusters", found.len()), found.len());
    let planned = many::each(
        found,
        selection.max_concurrent,
        |facts, inventory| async move {
            // Each cluster's own stages would fight over one line: only the count is shown.
            let name = facts.cluster.name.clone();
            within(
                opts.timeout,
                &name,
                prepare(conn, facts, inventory, opts, &Progress::hidden()),
            )
            .await
            .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()))
        },
    )
    .await?;
    let planned = share_jumpboxes(planned);
    let diagnosed = many::each_planned(
        planned,
        selection.max_concurrent,
        |p| {
            (
                p.facts.namespace.clone(),
                p.facts.cluster.name.clone(),
                p.planning,
            )
        },
        |p| {
            let steps = &steps;
            async move {
                let name = p.facts.cluster.name.clone();
                let left = opts.timeout.saturating_sub(p.planning);
                let d = within(
                    left,
                    &name,
                    conclude(conn, p, opts, tracker, nsx, &Progress::hidden()),
                )
                .await
                .map_err(|e| e.with_kubectl_flags(conn.kubectl.flags()));
                steps.one_done();
                d
            }
        },
    )
    .await?;
    // Each cluster's report to the list, its evidence to the bundle, its pods (dry run) to
    // the dry run's output.
    let (mut items, mut evidence, mut dry) = (Vec::new(), Vec::new(), DryRun::default());
    for item in diagnosed {
        match item {
            ListItem::Report(Diagnosed::Report(report, e)) => {
                items.push(ListItem::Report(*report));
                evidence.push(*e);
            }
            ListItem::Report(Diagnosed::DryRun(d)) => {
                dry.pods.extend(d.pods);
                dry.notes.extend(d.notes);
            }
            ListItem::Failed(f) => items.push(ListItem::Failed(f)),
        }
    }
    evidence.sort_by(|a, b| (&a.namespace, &a.cluster).cmp(&(&b.namespace, &b.cluster)));
    Ok(Round::Many(
        ListReport::new(items, started.elapsed()),
        evidence,
        dry,
    ))
}

/// How long past `--timeout` one cluster's diagnosis may go on before it is cut: a probe pod
/// that finishes at the deadline still has its log read (at least `lifecycle`'s 10 s floor) and
/// is deleted (one request, within the workload client's bound), and the analysis runs. Only a
/// server that answers every request slowly, each within its own bound, reaches it.
pub(crate) const DIAGNOSIS_GRACE: Duration = Duration::from_secs(30);

/// What a cluster's diagnosis keeps for judging after NSX Manager's reading, inside its outer
/// bound ([`within`]): the reading ends this much before the bound, so that a reading cut at its
/// deadline still leaves the verdict, the report and the bundle (never the whole diagnosis
/// lost to the bound, and the Supervisor blamed for it).
pub(crate) const JUDGING_RESERVE: Duration = Duration::from_secs(3);

tokio::task_local! {
    /// When the cluster's outer bound ([`within`]) cuts the diagnosis that runs in it.
    static CLUSTER_DEADLINE: tokio::time::Instant;
}

/// What is left of the outer bound of the cluster whose diagnosis calls this; `None` outside
/// one.
fn left_of_cluster_bound() -> Option<Duration> {
    CLUSTER_DEADLINE
        .try_with(|d| d.saturating_duration_since(tokio::time::Instant::now()))
        .ok()
}

/// `work` (one cluster's diagnosis), cut at `timeout` + [`DIAGNOSIS_GRACE`]: a run ends within
/// its `--timeout` plus a stated margin whatever the servers do (docs/security.md, "Bounds").
/// What it created is still tracked, and deleted by the caller. The work knows when that is
/// ([`left_of_cluster_bound`]): NSX Manager's reading ends before it.
async fn within<T>(
    timeout: Duration,
    cluster: &str,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let bound = timeout + DIAGNOSIS_GRACE;
    let deadline = tokio::time::Instant::now() + bound;
    let work = CLUSTER_DEADLINE.scope(deadline, work);
    tokio::time::timeout(bound, work).await.unwrap_or_else(|_| {
        Err(Error::Timeout(format!(
            "the diagnosis of cluster {cluster:?} did not finish within --timeout {} plus {}s: the Supervisor or workload API answers too slowly",
            humantime::format_duration(timeout),
            DIAGNOSIS_GRACE.as_secs()
        )))
    })
}

/// One cluster's diagnosis, from its facts; every pod it creates goes into `tracker`.
pub(crate) async fn diagnose(
    conn: &Connection,
    facts: ClusterFacts,
    inventory: &Arc<Inventory>,
    opts: &DiagnoseConfig,
    tracker: &PodTracker,
    nsx: Option<&NsxRun>,
    progress: &Progress,
) -> Result<Diagnosed> {
    let planned = prepare(conn, facts, inventory.clone(), opts, progress).await?;
    conclude(conn, planned, opts, tracker, nsx, progress).await
}

/// One cluster planned: its workload API checked, its route and targets chosen, nothing
/// created yet.
pub(crate) struct Planned {
    pub facts: ClusterFacts,
    inventory: Arc<Inventory>,
    workload: workload::WorkloadCheck,
    plan: DiagnosePlan,
    /// How long its planning took: its `--timeout` counts that and its conclusion, not the
    /// time it waited for its turn between the two (`--max-concurrent`).
    pub planning: Duration,
    read_at: std::time::SystemTime,
}

/// The first half of a cluster's diagnosis: the workload check and the plan.
async fn prepare(
    conn: &Connection,
    facts: ClusterFacts,
    inventory: Arc<Inventory>,
    opts: &DiagnoseConfig,
    progress: &Progress,
) -> Result<Planned> {
    let started = Instant::now();
    // The Supervisor's objects were read just before: "now" for their conditions' ages.
    let read_at = std::time::SystemTime::now();
    // The workload API decides `auto`, and is part of every report.
    progress.stage("checking the workload cluster's API");
    let workload = workload::check(
        &conn.client,
        &facts.namespace,
        &facts.cluster.name,
        facts.endpoint.as_ref(),
        opts.workload_tls,
        opts.api_timeout,
    )
    .await;
    // `--via auto` with the workload API dark on a VDS Supervisor: a bounded TCP 22 check of
    // the VMs decides between ssh and no route, before anything is created.
    let ssh_check =
        if route::via::needs_ssh_check(opts.reach.via, &workload.api, &facts.apis.network_stack) {
            progress.stage("checking the VMs' TCP 22 (VDS Supervisor: no vSphere Pods)");
            let wait = route::via::SSH_PORT_CHECK.min(opts.connect_timeout);
            Some(route::via::check_ssh_port(&plan::ssh_check_addresses(&facts), wait).await)
        } else {
            None
        };
    let mut plan = plan::plan(
        opts,
        &facts,
        &workload.api,
        ssh_check.as_ref(),
        route::run_id(),
    )?;
    // The jumpbox is made on the Supervisor with the run's kubeconfig: a 403's `kubectl auth
    // can-i` carries the run's flags. (The pod route's pods are made with the workload
    // cluster's kubeconfig secret: the run's --context would ask the wrong cluster.)
    if let route::RouteSettings::Jumpbox(s) = &mut plan.route {
        s.kubectl_flags = conn.kubectl.flags().to_string();
    }
    Ok(Planned {
        facts,
        inventory,
        workload,
        plan,
        planning: started.elapsed(),
        read_at,
    })
}

/// `-A`, `--all`: the clusters of one vSphere Namespace that take the jumpbox get one pod for
/// them all ([`route::jumpbox::NamespaceJumpbox`]: each cluster's key mounted, each VM offered
/// only its own cluster's). A namespace with one such cluster keeps that cluster's own pod, but
/// under `--watch`, whose kept pod is the namespace's whichever clusters join it later.
fn share_jumpboxes(mut items: Vec<ListItem<Planned>>) -> Vec<ListItem<Planned>> {
    fn planned(i: &ListItem<Planned>) -> Option<&Planned> {
        match i {
            ListItem::Report(p) => Some(p),
            ListItem::Failed(_) => None,
        }
    }
    use route::jumpbox::{groups, NamespaceJumpbox};
    use route::RouteSettings;
    let mut jumpboxed: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| match i {
            ListItem::Report(p) => matches!(&p.plan.route, RouteSettings::Jumpbox(_)),
            ListItem::Failed(_) => false,
        })
        .map(|(n, _)| n)
        .collect();
    // The clusters were planned in whatever order they finished: the pod's keys and sections
    // go in the clusters' name order, so the same clusters give the same pod (and --dry-run).
    jumpboxed.sort_by_key(|n| planned(&items[*n]).map(|p| p.facts.cluster.name.clone()));
    let namespaces: Vec<&str> = jumpboxed
        .iter()
        .filter_map(|n| planned(&items[*n]))
        .map(|p| p.facts.namespace.as_str())
        .collect();
    let watched = jumpboxed.iter().any(|n| {
        planned(&items[*n]).is_some_and(
            |p| matches!(&p.plan.route, RouteSettings::Jumpbox(s) if s.keeper.is_some()),
        )
    });
    let mut shared = Vec::new();
    for group in groups(&namespaces, if watched { 1 } else { 2 }) {
        let members: Vec<usize> = group.iter().map(|g| jumpboxed[*g]).collect();
        // The pod's run is bounded by the longest time one of its clusters has left; each
        // cluster waits for it within its own.
        let bound = members
            .iter()
            .filter_map(|n| planned(&items[*n]))
            .map(|p| p.plan.timeout.saturating_sub(p.planning))
            .max()
            .unwrap_or_default();
        let settings: Vec<(&route::jumpbox::JumpboxSettings, &[route::Target])> = members
            .iter()
            .filter_map(|n| planned(&items[*n]))
            .filter_map(|p| match &p.plan.route {
                RouteSettings::Jumpbox(s) => Some((s, p.plan.targets.as_slice())),
                _ => None,
            })
            .collect();
        if let Some(ns) = NamespaceJumpbox::new(&settings, bound) {
            shared.push((ns, members));
        }
    }
    for (ns, members) in shared {
        for n in members {
            if let ListItem::Report(p) = &mut items[n] {
                if let RouteSettings::Jumpbox(s) = &mut p.plan.route {
                    s.shared = ns.member(&s.cluster).map(|k| (ns.clone(), k));
                }
            }
        }
    }
    items
}

/// The second half of a cluster's diagnosis: reach its nodes as planned, judge; or, for
/// `--dry-run`, what it would create.
async fn conclude(
    conn: &Connection,
    planned: Planned,
    opts: &DiagnoseConfig,
    tracker: &PodTracker,
    nsx: Option<&NsxRun>,
    progress: &Progress,
) -> Result<Diagnosed> {
    let Planned {
        facts,
        inventory,
        mut workload,
        plan,
        planning,
        read_at,
    } = planned;
    let resumed = Instant::now();
    // The cluster's own time so far (its wait for its turn not counted).
    let spent = || planning + resumed.elapsed();
    let inventory = &inventory;
    let cluster = facts.cluster.name.clone();
    let namespace = facts.namespace.clone();
    if plan.dry_run {
        // The Supervisor-side finding a dry run can already tell: Machines never probed.
        let notes = analyse::status_findings(&facts, &workload.api)
            .into_iter()
            .filter(|f| f.code == FindingCode::ControlPlaneMachinesBeyondReplicas)
            .map(|f| format!("warning: cluster {cluster}: {}", f.message))
            .chain(network_notes(&cluster, inventory, &facts.kubectl))
            .collect();
        return Ok(Diagnosed::DryRun(DryRun {
            pods: would_create(&plan),
            notes,
        }));
    }

    let env = Env {
        supervisor: &conn.client,
        workload: &workload,
    };
    // NSX Manager's rule counters before the checks, read beside the route's opening and the
    // probes rather than before them: a slow manager must not spend the probes' time (the
    // cluster's --timeout). A before-read that ends after the first probe packets only makes
    // the growth smaller, never a false proof: whatever grew between the two reads grew
    // during the checks.
    let counters = async {
        match nsx {
            Some(n) => {
                let left = plan.timeout.saturating_sub(spent());
                n.counters_before(&conn.client, &facts, inventory, left)
                    .await
            }
            None => None,
        }
    };
    let tracker = tracker.for_cluster(&namespace, &cluster);
    let probes = async {
        let session = plan.route.open(env, &plan.targets).await?;
        let run = route::Run {
            tracker: &tracker,
            bound: plan.timeout.saturating_sub(spent()),
            keep: plan.keep_pods,
        };
        let reports =
            route::probe_all(&session, &plan.targets, &run, plan.parallel, progress).await;
        // The session (and any key file it holds) ends here, before the analysis.
        drop(session);
        Ok::<_, Error>(reports)
    };
    let (counters, reports) = tokio::join!(counters, probes);
    let reports = reports?;
    // The workload API again, now that etcd was seen: it may have healed (or broken) while the
    // probes ran, and `Healthy` needs it seen answering after etcd was seen healthy. Same
    // kubeconfig and code as the first check, within `--api-timeout` and what is left of the
    // cluster's bound (the analysis still to run); the first check is kept beside it.
    progress.stage("checking the workload cluster's API again");
    let left = (plan.timeout + DIAGNOSIS_GRACE).saturating_sub(spent());
    workload
        .recheck(recheck_bound(opts.api_timeout, left))
        .await;
    // NSX Manager after the probes: its traceflows prove the paths that failed.
    let nsx_read = match nsx {
        Some(n) => {
            progress.stage("reading NSX Manager's distributed firewall");
            // Within the cluster's outer bound (which also counts the Supervisor's walk),
            // less what judging needs: the reading is cut, never the diagnosis.
            let left = (plan.timeout + DIAGNOSIS_GRACE).saturating_sub(spent());
            let left = left_of_cluster_bound()
                .map_or(left, |l| l.min(left))
                .saturating_sub(JUDGING_RESERVE);
            let mut read = n
                .read(&conn.client, &facts, inventory, &reports, left)
                .await;
            // The rule statistics after the checks, within the same bound as the reading.
            let left = (plan.timeout + DIAGNOSIS_GRACE).saturating_sub(spent());
            let left = left_of_cluster_bound()
                .map_or(left, |l| l.min(left))
                .saturating_sub(JUDGING_RESERVE);
            n.enforcement_after(&mut read, counters, left).await;
            Some((read, n.note()))
        }
        None => None,
    };

    let evidence = Evidence::new(
        &conn.context,
        &cluster,
        inventory,
        workload.api,
        plan.route_info,
        reports,
        spent().as_millis() as u64,
    )
    .with_since(opts.since)
    .with_read_at(read_at)
    .with_nsx_manager(nsx_read);
    let report = evidence.judge(&conn.kubectl)?;
    Ok(Diagnosed::Report(Box::new(report), Box::new(evidence)))
}

/// The re-check's bound: `--api-timeout`, but leaving 10 s of what is left of the cluster's
/// `--timeout` plus grace for the analysis and the deletes, and never under a second.
fn recheck_bound(api_timeout: Duration, left: Duration) -> Duration {
    api_timeout
        .min(left.saturating_sub(Duration::from_secs(10)))
        .max(Duration::from_secs(1))
}

/// `--dry-run`: the cluster's network findings (a policy that blocks or would block
/// 2379/2380 between the VMs, a network NSX did not realize), one note each, when the
/// Supervisor serves an NSX group; and what could not be read.
fn network_notes(
    cluster: &str,
    inventory: &Inventory,
    kubectl: &crate::command::Kubectl,
) -> Vec<String> {
    let Some(a) = inventory.network_of(cluster).map(|o| analyse::assess(&o)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = analyse::network_findings(&a, kubectl)
        .into_iter()
        .map(|f| format!("warning: cluster {cluster}: {}: {}", f.code, f.message))
        .collect();
    out.extend(
        a.unread
            .iter()
            .map(|n| format!("warning: cluster {cluster}: network not read: {n}")),
    );
    out
}

/// `--dry-run`: what the chosen route would create to reach the nodes it could reach.
fn would_create(plan: &DiagnosePlan) -> Vec<Pod> {
    plan.route.would_create(&plan.targets)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_recheck_is_bounded_by_api_timeout_and_the_time_left() {
        use super::recheck_bound;
        use std::time::Duration;
        let s = Duration::from_secs;
        assert_eq!(recheck_bound(s(5), s(300)), s(5));
        // 10 s are kept for the analysis and the deletes.
        assert_eq!(recheck_bound(s(5), s(13)), s(3));
        // Never under a second (the cluster's own bound cuts the run anyway).
        assert_eq!(recheck_bound(s(5), s(2)), s(1));
        assert_eq!(recheck_bound(s(5), s(0)), s(1));
    }

    use super::*;
    use crate::route::lifecycle::Cluster;

    fn kept(name: &str, namespace: &str, host: Host, cluster: Option<(&str, &str)>) -> Kept {
        Kept {
            name: name.into(),
            namespace: namespace.into(),
            host,
            cluster: cluster.map(|(namespace, name)| Cluster {
                namespace: namespace.into(),
                name: name.into(),
            }),
        }
    }

    /// Each place gets its own note, in the order first created, naming where the pods are and
    /// the cleanup that reaches them: a jumpbox pod is in the Supervisor's vSphere Namespace,
    /// one place for every cluster's jumpbox there.
    #[test]
    fn kept_pods_are_named_where_they_live() {
        let prod = Some(("ns-prod", "tkc-prod"));
        let pods = [
            kept(
                "etcdnet-probe-cp1-k3x9q",
                "kube-system",
                Host::Workload,
                prod,
            ),
            kept(
                "etcdnet-jumpbox-tkc-b-k3x9q",
                "ns-b",
                Host::Supervisor,
                Some(("ns-b", "tkc-b")),
            ),
            kept(
                "etcdnet-probe-cp2-k3x9q",
                "kube-system",
                Host::Workload,
                prod,
            ),
            kept(
                "etcdnet-probe-cp1-k3x9q",
                "kube-system",
                Host::Workload,
                Some(("ns-a", "tkc-a")),
            ),
            kept(
                "etcdnet-jumpbox-tkc-c-k3x9q",
                "ns-b",
                Host::Supervisor,
                Some(("ns-b", "tkc-c")),
            ),
        ];
        assert_eq!(
            kept_notes(&pods, &Kubectl::new(Some("sv admin"), None)),
            [
                "kept 2 probe pod(s) in namespace kube-system of workload cluster tkc-prod: etcdnet-probe-cp1-k3x9q, etcdnet-probe-cp2-k3x9q; remove them with: kubectl etcdnet cleanup tkc-prod -n ns-prod --context='sv admin'",
                "kept 2 probe pod(s) in vSphere Namespace ns-b of the Supervisor: etcdnet-jumpbox-tkc-b-k3x9q, etcdnet-jumpbox-tkc-c-k3x9q; remove them with: kubectl etcdnet cleanup -n ns-b --context='sv admin'",
                "kept 1 probe pod(s) in namespace kube-system of workload cluster tkc-a: etcdnet-probe-cp1-k3x9q; remove them with: kubectl etcdnet cleanup tkc-a -n ns-a --context='sv admin'",
            ]
        );
        assert!(kept_notes(&[], &Kubectl::default()).is_empty());
    }
}
