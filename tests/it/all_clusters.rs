//! `--all` and `-A` through the real kubectl against the fake Supervisor: one summary, a
//! `List`-style report, the worst exit code, and the Supervisor read once per namespace (or once
//! for all of them), not once per cluster. Lab runs of many clusters are in tests/many_*.rs.

use crate::common;

use common::*;
use etcdnet::report::{ListItem, ListReport, StatusReport};
use etcdnet::supervisor::kinds::{KindId, KINDS};

const NS: &str = "ns-shared";

fn status_list(run: &Run) -> ListReport<StatusReport> {
    run.report()
}

#[test]
fn status_all_lists_every_cluster_of_the_namespace() {
    let env = Env::new("two-clusters", Workload::ok());
    let run = env.kubectl(&["status", "--all", "-n", NS, "-o", "json"]);
    run.expect_code(0);
    let list = status_list(&run);
    assert_eq!(list.kind, "StatusReportList");
    assert_eq!(list.result.clusters, 2);
    assert_eq!(list.result.healthy, 2);
    let names: Vec<String> = list
        .items
        .iter()
        .map(|i| match i {
            ListItem::Report(r) => r.header.cluster.name.clone(),
            ListItem::Failed(f) => panic!("{f:?}"),
        })
        .collect();
    assert_eq!(names, ["tkc-a", "tkc-b"]);
    // Each cluster's report is the one `status <cluster>` gives (timings aside).
    for item in &list.items {
        let ListItem::Report(r) = item else {
            unreachable!()
        };
        let one = env.kubectl(&["status", &r.header.cluster.name, "-n", NS, "-o", "json"]);
        let mut alone = one.status_report();
        alone.result.duration_ms = r.result.duration_ms;
        alone.workload_api.elapsed_ms = r.workload_api.elapsed_ms;
        alone.workload_api.checked_at = r.workload_api.checked_at.clone();
        assert_eq!(&alone, r);
    }

    let table = env.kubectl(&["status", "--all", "-n", NS]);
    table.expect_code(0);
    let first = table.stdout.lines().next().unwrap();
    for column in ["NAMESPACE", "CLUSTER", "STATUS", "MACHINES", "SECONDS"] {
        assert!(first.contains(column), "{first}");
    }
    assert!(
        table.stdout.contains("2 of 2 clusters healthy"),
        "{}",
        table.stdout
    );
}

/// The plural of every kind the table reads for a cluster (the NSX kinds aside: this set serves
/// no NSX group), so the request budgets follow the table: one list of each per namespace.
fn cluster_kinds() -> Vec<&'static str> {
    KINDS
        .iter()
        .filter(|k| !matches!(k.id, KindId::Net(_)))
        // Rows read by name for one caller (the secrets, the VPC's objects) are not listed.
        .filter(|k| k.walked())
        // The referenced control plane is a KubeadmControlPlane in every set.
        .map(|k| k.resource.unwrap_or("kubeadmcontrolplanes"))
        .collect()
}

#[test]
fn one_list_of_each_kind_per_namespace_not_per_cluster() {
    let env = Env::new("two-clusters", Workload::ok());
    let requests = env.requests_of_kubectl(&["status", "--all", "-n", NS, "-o", "json"], 0);
    let count = |needle: &str| count_requests(&requests, needle);
    assert_eq!(
        count("GET /apis?") + count("GET /apis "),
        0,
        "{requests:#?}"
    );
    assert_eq!(
        requests.iter().filter(|r| *r == "GET /apis").count(),
        1,
        "discovery is one request: {requests:#?}"
    );
    let kinds = cluster_kinds();
    for kind in &kinds {
        assert_eq!(count(&format!("/{kind}")), 1, "{kind}: {requests:#?}");
    }
    // The kubeconfig secret of each cluster, once each.
    assert_eq!(count("/secrets/tkc-a-kubeconfig"), 1, "{requests:#?}");
    assert_eq!(count("/secrets/tkc-b-kubeconfig"), 1, "{requests:#?}");
    // Discovery, each kind once, two secrets.
    assert_eq!(requests.len(), 1 + kinds.len() + 2, "{requests:#?}");
}

#[test]
fn one_cluster_is_one_request_a_kind() {
    let env = Env::new("two-clusters", Workload::ok());
    let requests = env.requests_of_kubectl(&["status", "tkc-a", "-n", NS, "-o", "json"], 0);
    let kinds = cluster_kinds().len();
    // Discovery, each kind, the kubeconfig secret.
    assert!(requests.len() <= 1 + kinds + 1, "{requests:#?}");
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.starts_with("GET /apis"))
            .count(),
        1 + kinds,
        "{requests:#?}"
    );
}

#[test]
fn all_namespaces_reads_each_kind_once_across_the_supervisor() {
    let env = Env::new("two-clusters", Workload::ok());
    env.supervisor.clear_requests();
    let run = env.kubectl(&["status", "-A", "-o", "json"]);
    run.expect_code(0);
    assert_eq!(status_list(&run).result.clusters, 2);
    let requests = env.supervisor_requests();
    for kind in cluster_kinds() {
        let lists: Vec<&String> = requests
            .iter()
            .filter(|r| r.contains(&format!("/{kind}")))
            .collect();
        assert_eq!(lists.len(), 1, "{requests:#?}");
        assert!(
            !lists[0].contains("/namespaces/"),
            "cluster-wide: {lists:?}"
        );
    }
}

#[test]
fn all_namespaces_without_cluster_wide_rights_goes_namespace_by_namespace() {
    let env = Env::new("two-clusters", Workload::ok());
    env.supervisor.forbid(etcdnet_fakeapi::Forbid {
        verb: Some("list".into()),
        group: Some("cluster.x-k8s.io".into()),
        resource: Some("clusters".into()),
        cluster_scope: true,
        ..Default::default()
    });
    let run = env.kubectl(&["status", "-A", "-o", "json"]);
    run.expect_code(0);
    let list = status_list(&run);
    assert_eq!(list.result.clusters, 2, "{}", run.stdout);
    let requests = env.supervisor_requests();
    assert!(
        requests.iter().any(|r| r == "GET /api/v1/namespaces"),
        "{requests:#?}"
    );
}

#[test]
fn a_cluster_name_and_all_do_not_mix() {
    let env = Env::new("two-clusters", Workload::ok());
    let run = env.kubectl(&["status", "tkc-a", "--all", "-n", NS]);
    run.expect_code(2);
    assert!(run.stderr.contains("--all"), "{}", run.stderr);
    let run = env.kubectl(&["diagnose", "-n", NS]);
    run.expect_code(2);
    assert!(run.stderr.contains("CLUSTER"), "{}", run.stderr);
}

#[test]
fn the_exit_code_is_the_worst_clusters() {
    let env = Env::new("two-clusters", Workload::ok());
    // tkc-b's kubeconfig cannot be read: its API is not checked (exit 3 alone), tkc-a is fine.
    env.supervisor.forbid(etcdnet_fakeapi::Forbid {
        verb: Some("get".into()),
        resource: Some("secrets".into()),
        name: Some("tkc-b-kubeconfig".into()),
        group: Some(String::new()),
        ..Default::default()
    });
    let run = env.kubectl(&["status", "--all", "-n", NS, "-o", "json"]);
    let list = status_list(&run);
    let worst = list.items.iter().map(|i| i.exit_code()).max().unwrap();
    assert_ne!(worst, 0, "{}", run.stdout);
    run.expect_code(worst);
    // Worst first.
    let ListItem::Report(first) = &list.items[0] else {
        panic!("{:?}", list.items[0])
    };
    assert_eq!(first.header.cluster.name, "tkc-b");
}

#[test]
fn diagnose_all_dry_run_shows_every_clusters_pods() {
    let env = Env::new("two-clusters", Workload::ok());
    let run = env.kubectl(&["diagnose", "--all", "-n", NS, "--dry-run", "-o", "json"]);
    run.expect_code(0);
    assert!(run.stderr.contains("6 pod(s) shown"), "{}", run.stderr);
    for node in ["tkc-a-m2c8r-4rz8m", "tkc-b-j5t9w-bx2lk"] {
        assert!(run.stdout.contains(node), "{node}: {}", run.stdout);
    }
}

/// One cluster's failure is its row: tkc-b's VMs are unreachable from the jumpbox, tkc-a's
/// probes come back; the run completes, both clusters are in the list, tkc-b (could not
/// complete) first. Both clusters are in one vSphere Namespace, so they share ONE jumpbox pod
/// (each cluster's key mounted, each VM given its own cluster's key), and each cluster's report
/// is read from its own sections of that pod's log. Also with `-A --max-concurrent 1`: the first
/// cluster runs the pod for both, the second is not waited for (no deadlock).
#[test]
fn one_clusters_failure_is_its_row_not_the_end_of_the_run() {
    const TKC_A: [&str; 3] = [
        "tkc-a-m2c8r-4rz8m",
        "tkc-a-m2c8r-9qtvw",
        "tkc-a-m2c8r-bx2lk",
    ];
    let env = Env::new("two-clusters", Workload::ok());
    env.script_jumpbox_pods_with(&TKC_A, |_, ip| {
        ip.starts_with("198.18.1.")
            .then(|| unreachable_jumpbox_section(ip))
    });
    let run = env.kubectl(&[
        "diagnose", "--all", "-n", NS, "--via", "jumpbox", "-o", "json",
    ]);
    let check = |run: &Run| {
        let list: ListReport<etcdnet::report::DiagnoseReport> = run.report();
        assert_eq!(list.kind, "DiagnoseReportList");
        assert_eq!(list.result.clusters, 2, "{}", run.stdout);
        let reports: Vec<&etcdnet::report::DiagnoseReport> = list
            .items
            .iter()
            .map(|i| match i {
                ListItem::Report(r) => r,
                ListItem::Failed(f) => panic!("{f:?}"),
            })
            .collect();
        assert_eq!(reports[0].header.cluster.name, "tkc-b", "worst first");
        assert_eq!(reports[0].result.exit_code, 3);
        assert_eq!(reports[0].result.nodes_reached, 0);
        assert!(
            reports[0].nodes.iter().all(|n| n
                .ip
                .is_some_and(|ip| ip.to_string().starts_with("198.18.1."))),
            "{:#?}",
            reports[0].nodes
        );
        assert_eq!(reports[1].header.cluster.name, "tkc-a");
        assert_eq!(
            reports[1].result.nodes_reached, 3,
            "{:#?}",
            reports[1].nodes
        );
        run.expect_code(3);
    };
    check(&run);
    // ONE jumpbox pod for the namespace's two clusters, and none left.
    let created = env.supervisor.created_pods();
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(
        created[0].1.starts_with("etcdnet-jumpbox-ns-ns-shared-"),
        "{created:?}"
    );
    let bodies: Vec<serde_json::Value> = env
        .supervisor
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .map(|r| serde_json::from_str(&r.body.unwrap()).unwrap())
        .collect();
    let pod = &bodies[0];
    let secrets: Vec<&str> = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["secret"]["secretName"].as_str())
        .collect();
    assert_eq!(secrets, ["tkc-a-ssh", "tkc-b-ssh"]);
    let command = &pod["spec"]["containers"][0]["command"];
    assert_eq!(
        command[etcdnet::route::jumpbox::ARGV_KEY_OF_VMS],
        "0 0 0 1 1 1",
        "each VM its own cluster's key"
    );
    assert_eq!(
        pod["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "kubectl-etcdnet"
    );
    assert!(pod["spec"]["activeDeadlineSeconds"].as_i64().unwrap() > 0);
    assert!(env.supervisor.existing_pods().is_empty());

    // -A, one cluster at a time: still one pod, both clusters diagnosed.
    let run = env.kubectl(&[
        "diagnose",
        "-A",
        "--max-concurrent",
        "1",
        "--via",
        "jumpbox",
        "-o",
        "json",
    ]);
    check(&run);
    assert_eq!(
        env.supervisor.created_pods().len(),
        2,
        "one more pod, not two"
    );
    assert!(env.supervisor.existing_pods().is_empty());

    // --dry-run shows that one pod, once.
    let dry = env.kubectl(&[
        "diagnose",
        "--all",
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--dry-run",
        "-o",
        "json",
    ]);
    dry.expect_code(0);
    assert!(dry.stderr.contains("1 pod(s) shown"), "{}", dry.stderr);
    assert!(
        dry.stdout.contains("etcdnet-jumpbox-ns-ns-shared-"),
        "{}",
        dry.stdout
    );

    let table = env.kubectl(&["diagnose", "--all", "-n", NS, "--via", "jumpbox"]);
    table.expect_code(3);
    let rows: Vec<&str> = table.stdout.lines().take(3).collect();
    assert!(
        rows[1].contains("tkc-b") && rows[1].contains("0/3"),
        "{}",
        table.stdout
    );
    assert!(
        rows[2].contains("tkc-a") && rows[2].contains("3/3"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("=== ns-shared/tkc-b ==="),
        "the unhealthy cluster's detail follows:\n{}",
        table.stdout
    );
}
