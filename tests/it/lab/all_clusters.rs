//! `--all` and `-A` in the lab: every cluster its own lab, one run for all of them (the fake-API
//! side is `all_clusters`).

use crate::common;
use common::*;
use etcdnet::report::{ListItem, ListReport};
use etcdnet::supervisor::kinds::{KindId, KINDS};

/// `diagnose --all` in the lab: three clusters, each in its own lab, a fault in one; one run
/// gives all three verdicts, the faulted cluster first, the exit code its; the Supervisor is
/// listed once per kind; every cluster's pods went through its own API and none is left.
// Long: three labs (one per cluster), polled until etcd notices the fault in one, then two
// --all runs, each probing every node of the three labs.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn diagnose_all_in_the_lab_one_run_every_cluster() {
    use etcdnet::report::v1alpha2::VerdictCode;
    let f = LabFleet::start(
        "all_clusters diagnose --all",
        fleet::SET,
        Supervisor::PodsOnly,
    );
    f.lab("tkc-db")
        .inject(etcdnet_lab::Fault::DropAllPeers)
        .unwrap();
    // etcd takes seconds to notice: wait on the one cluster first.
    super::wait_no_leader(f.lab("tkc-db"), &[]);
    f.supervisor.clear_requests();
    let before: Vec<usize> = fleet::CLUSTERS
        .iter()
        .map(|c| f.cluster(c).workload.api().unwrap().created_pods().len())
        .collect();
    let run = f.kubectl(&[
        "diagnose",
        "--all",
        "-n",
        fleet::NS,
        "--connect-timeout",
        "2s",
        "-o",
        "json",
    ]);
    run.expect_code(1);
    let list: ListReport<etcdnet::report::DiagnoseReport> = run.report();
    let reports: Vec<&etcdnet::report::DiagnoseReport> = list
        .items
        .iter()
        .map(|i| match i {
            ListItem::Report(r) => r,
            ListItem::Failed(e) => panic!("{e:?}"),
        })
        .collect();
    // The faulted cluster first; the two others reach every peer. (Their verdict is not
    // asserted Healthy: nine etcd members on two loaded cores may log slow applies, which the
    // analysis rightly reports as EtcdSlowDisk.)
    assert_eq!(reports[0].header.cluster.name, "tkc-db");
    assert_eq!(reports[0].verdict.code, VerdictCode::EtcdPeerNetworkBlocked);
    for r in &reports[1..] {
        assert_eq!(r.result.nodes_reached, 3, "{}", r.header.cluster.name);
        assert!(
            r.matrices
                .iter()
                .all(|m| m.peer_cells().all(|c| c.state.is_ok())),
            "{}: {:#?}",
            r.header.cluster.name,
            r.verdict
        );
    }
    let requests = f.supervisor_requests();
    // One list of each kind of the table per namespace (the NSX kinds aside: the lab's
    // Supervisor serves no NSX group), so a new kind needs no count here.
    let kinds: Vec<&str> = KINDS
        .iter()
        .filter(|k| !matches!(k.id, KindId::Net(_)))
        // Rows read by name for one caller (the secrets, the VPC's objects) are not listed.
        .filter(|k| k.walked())
        // The referenced control plane is a KubeadmControlPlane in the lab.
        .map(|k| k.resource.unwrap_or("kubeadmcontrolplanes"))
        .collect();
    for kind in &kinds {
        assert_eq!(
            requests
                .iter()
                .filter(|r| r.contains(&format!("/{kind}")))
                .count(),
            1,
            "{kind}: {requests:#?}"
        );
    }
    // Per cluster: its kubeconfig secret, once; nothing else of the Supervisor's.
    assert_eq!(requests.len(), 1 + kinds.len() + 3, "{requests:#?}");
    for (c, before) in fleet::CLUSTERS.iter().zip(before) {
        let api = f.cluster(c).workload.api().unwrap();
        assert_eq!(api.created_pods().len() - before, 3, "{c}");
        assert!(api.existing_pods().is_empty(), "{c}");
    }

    // The table: the summary, then only the unhealthy cluster's detail.
    let table = f.kubectl(&[
        "diagnose",
        "--all",
        "-n",
        fleet::NS,
        "--connect-timeout",
        "2s",
    ]);
    table.expect_code(1);
    assert!(
        table.stdout.contains(" of 3 clusters healthy"),
        "{}",
        table.stdout
    );
    // Each cluster's detail follows exactly when its row is not Healthy.
    for row in table.stdout.lines().skip(1).take(3) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        let detail = format!("=== ns-fleet/{} ===", cols[1]);
        assert_eq!(
            table.stdout.contains(&detail),
            cols[2] != "Healthy",
            "{row}\n{}",
            table.stdout
        );
    }
    assert!(
        table.stdout.contains("=== ns-fleet/tkc-db ==="),
        "{}",
        table.stdout
    );
    let summary = f.kubectl(&[
        "diagnose",
        "--all",
        "-n",
        fleet::NS,
        "--connect-timeout",
        "2s",
        "--summary",
    ]);
    assert!(!summary.stdout.contains("==="), "{}", summary.stdout);
}

/// `--watch --all`: the fault of one cluster healed mid-watch ends the watch with exit 0, its
/// transition line naming the cluster.
// Long: three labs, polled until etcd notices the fault in one, then --watch --all rounds
// until, after the heal, its etcd has elected again.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn watch_all_ends_once_every_cluster_is_healthy() {
    use std::time::Duration;
    let f = LabFleet::start("all_clusters watch --all", fleet::SET, Supervisor::PodsOnly);
    f.lab("tkc-web")
        .inject(etcdnet_lab::Fault::DropAllPeers)
        .unwrap();
    super::wait_no_leader(f.lab("tkc-web"), &[]);
    let mut child = f
        .kubectl_command(&[
            "diagnose",
            "--all",
            "-n",
            fleet::NS,
            "--connect-timeout",
            "2s",
            "--watch",
            "--interval=1s",
            "--summary",
        ])
        .spawn()
        .unwrap();
    let out = stdout_of(&mut child);
    wait_for("the first round", Duration::from_secs(60), || {
        out.now().contains("clusters healthy")
    });
    f.lab("tkc-web").heal().unwrap();
    // The usual bound, plus what TCP's backoff on the streams the cut stalled may add.
    let code = exit_within(
        &mut child,
        Duration::from_secs(120) + f.lab("tkc-web").stall_after_heal(),
    );
    let text = out.all();
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("1 of 3 clusters healthy") || text.contains("2 of 3 clusters healthy"),
        "{text}"
    );
    // With many clusters each line names its cluster. (Another cluster may change too: nine
    // etcd members on two loaded cores can log a slow apply, an EtcdSlowDisk round.)
    let changes: Vec<&str> = text.lines().filter(|l| l.contains(" → ")).collect();
    assert!(changes.iter().all(|l| l.contains("ns-fleet/")), "{text}");
    let web: Vec<&&str> = changes
        .iter()
        .filter(|l| l.contains("ns-fleet/tkc-web: "))
        .collect();
    assert!(!web.is_empty(), "{text}");
    assert!(web.last().unwrap().contains("→ Healthy"), "{text}");
    for c in fleet::CLUSTERS {
        assert!(
            f.cluster(c)
                .workload
                .api()
                .unwrap()
                .existing_pods()
                .is_empty(),
            "{c}"
        );
    }
}
