//! The network objects are read through the real kubectl only when the Supervisor
//! serves an NSX group, with one request per resource, and never change what a Supervisor without
//! one is asked; a refused list is a note, not a failure (what the output makes of them is
//! network_policy.rs).

use crate::common;

use common::*;
use etcdnet::report::v1alpha2::FindingCode;

const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";

/// The network requests among `requests`.
fn network(requests: &[String]) -> Vec<&String> {
    requests
        .iter()
        .filter(|r| {
            let path = r.split('?').next().unwrap();
            // The Namespace itself (by name, or the list with -A), not what is in it.
            let namespace = path
                .strip_prefix("GET /api/v1/namespaces")
                .is_some_and(|rest| rest.is_empty() || !rest[1..].contains('/'));
            namespace
                || [
                    "securitypolicies",
                    "subnetsets",
                    "subnets",
                    "subnetports",
                    "virtualnetworks",
                    "networkpolicies",
                    "vsphereclusters",
                ]
                .iter()
                .any(|k| path.ends_with(&format!("/{k}")))
        })
        .collect()
}

/// `status` on a Supervisor that serves crd.nsx.vmware.com: the same report as on
/// healthy-v1alpha3 (the objects it includes) but for the network's findings and
/// `networkPolicy`, and one request per network resource.
#[test]
fn status_on_a_vpc_supervisor_reads_the_network_once() {
    let plain = Env::new("healthy-v1alpha3", Workload::ok());
    plain.supervisor.clear_requests();
    let before = plain.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    before.expect_code(0);
    assert!(
        network(&plain.supervisor_requests()).is_empty(),
        "no NSX group, no network request: {:#?}",
        plain.supervisor_requests()
    );

    let env = Env::new("nsx-vpc", Workload::ok());
    env.supervisor.clear_requests();
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    let mut report = run.status_report();
    let expected = before.status_report();
    assert!(report.network_policy.take().is_some());
    report.findings.retain(|f| {
        !matches!(
            f.code,
            FindingCode::NetworkNotRealized
                | FindingCode::SecurityPolicyBlocksEtcd
                | FindingCode::SecurityPolicyWouldBlockEtcd
        )
    });
    report.result = expected.result.clone();
    report.result.duration_ms = expected.result.duration_ms;
    report.workload_api.elapsed_ms = expected.workload_api.elapsed_ms;
    report.workload_api.checked_at = expected.workload_api.checked_at.clone();
    // Each Env runs its own workload fake: its port differs.
    report.workload_api.server = expected.workload_api.server.clone();
    report.header.cluster.control_plane_endpoint =
        expected.header.cluster.control_plane_endpoint.clone();
    // The stack is the one thing of the header the NSX groups change: VPC here, unknown without.
    assert_eq!(
        report.header.apis.network_stack.stack,
        etcdnet::report::v1alpha2::NetworkStack::Vpc
    );
    report.header.apis.network_stack = expected.header.apis.network_stack.clone();
    assert_eq!(report, expected);

    let requests = env.supervisor_requests();
    let mut asked: Vec<&str> = network(&requests)
        .into_iter()
        .map(|r| r.split('?').next().unwrap())
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        [
            "GET /api/v1/namespaces/ns-prod",
            "GET /apis/crd.nsx.vmware.com/v1alpha1/namespaces/ns-prod/securitypolicies",
            "GET /apis/crd.nsx.vmware.com/v1alpha1/namespaces/ns-prod/subnetports",
            "GET /apis/crd.nsx.vmware.com/v1alpha1/namespaces/ns-prod/subnets",
            "GET /apis/crd.nsx.vmware.com/v1alpha1/namespaces/ns-prod/subnetsets",
            "GET /apis/networking.k8s.io/v1/namespaces/ns-prod/networkpolicies",
            "GET /apis/vmware.infrastructure.cluster.x-k8s.io/v1beta1/namespaces/ns-prod/vsphereclusters",
        ],
        "{requests:#?}"
    );
}

/// A 403 on the SecurityPolicies is a note: the run goes on and says what it says without them
/// (exit 1 for the failed SubnetPort the set holds, not for the 403).
#[test]
fn a_forbidden_policy_list_does_not_fail_the_run() {
    let env = Env::new("nsx-vpc-forbidden", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(1);
    assert_eq!(run.status_report().nodes.len(), 3);
    let dry = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    dry.expect_code(0);
    assert!(
        !dry.stderr.contains("error:"),
        "the note is a warning, not an error: {}",
        dry.stderr
    );
}

/// NCP: the legacy policies and the VirtualNetwork; `--all` and `-A` read them once per
/// namespace or once across the Supervisor.
#[test]
fn ncp_and_many_clusters_read_the_network_once() {
    let env = Env::new("nsx-ncp", Workload::ok());
    // Exit 1: drop-etcd-peer blocks 2380 between the VMs.
    let requests = env.requests_of_kubectl(&["status", "--all", "-n", NS, "-o", "json"], 1);
    let count = |needle: &str| count_requests(&requests, needle);
    assert_eq!(
        count("/apis/nsx.vmware.com/v1alpha1/namespaces/ns-prod/securitypolicies"),
        1
    );
    assert_eq!(
        count("/apis/vmware.com/v1alpha1/namespaces/ns-prod/virtualnetworks"),
        1
    );
    assert_eq!(count("crd.nsx.vmware.com"), 0, "{requests:#?}");

    let requests = env.requests_of_kubectl(&["status", "-A", "-o", "json"], 1);
    let lists: Vec<&String> = network(&requests);
    assert_eq!(lists.len(), 5, "{requests:#?}");
    assert!(
        lists.iter().all(|r| !r.contains("/namespaces/ns-prod")),
        "cross-namespace: {lists:#?}"
    );
}

/// On NCP (nsx.vmware.com the live group) a SecurityPolicy of another namespace with
/// `appliedTo: [{}]` can apply to these VMs: with `-n` one more request lists the group across
/// all namespaces, and the other namespace's policy is handed to the evaluation beside the
/// cluster namespace's; with `-A` the one list per resource serves both.
#[test]
fn ncp_reads_the_other_namespaces_policies_once() {
    let env = Env::new("nsx-ncp-other-namespace", Workload::ok());
    env.supervisor.clear_requests();
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    let requests = env.supervisor_requests();
    assert_eq!(
        count_requests(
            &requests,
            "GET /apis/nsx.vmware.com/v1alpha1/securitypolicies"
        ),
        1,
        "{requests:#?}"
    );
    assert_eq!(
        count_requests(
            &requests,
            "GET /apis/nsx.vmware.com/v1alpha1/namespaces/ns-prod/securitypolicies"
        ),
        1
    );
    let report = run.status_report();
    let net = report.network_policy.expect("an NSX group is served");
    assert!(net.unread.is_empty(), "{:?}", net.unread);
    let read: Vec<(String, usize)> = net
        .read
        .iter()
        .map(|r| (r.resource.clone(), r.count))
        .collect();
    assert!(
        read.contains(&("securitypolicies.nsx.vmware.com".into(), 2)),
        "ns-prod's and ns-platform's: {read:?}"
    );
    let json = serde_json::to_string(&net.evaluation).unwrap();
    assert!(json.contains("drop-all-peers"), "{json}");

    // -A: no request more than one per resource, and the same policies handed over.
    env.supervisor.clear_requests();
    let all = env.kubectl(&["status", "-A", "-o", "json"]);
    let requests = env.supervisor_requests();
    assert_eq!(
        count_requests(&requests, "/apis/nsx.vmware.com/v1alpha1/securitypolicies"),
        1,
        "{requests:#?}"
    );
    let text = all.json().to_string();
    assert!(text.contains("drop-all-peers"), "{text}");
}

/// A 403 on the cross-namespace list is a note that says what could not be seen; the cluster
/// namespace's policy is still read and evaluated, and the run does not fail for it.
#[test]
fn a_forbidden_cross_namespace_list_is_a_note() {
    let env = Env::new("nsx-ncp-other-namespace-forbidden", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    // Exit 1: ns-prod's drop-etcd-peer blocks 2380, as on nsx-ncp.
    run.expect_code(1);
    let net = run.status_report().network_policy.unwrap();
    assert_eq!(
        net.unread,
        ["the SecurityPolicies of other namespaces (a policy there with appliedTo [{}] can apply to these VMs): list securitypolicies.nsx.vmware.com in all namespaces: forbidden"]
    );
    let json = serde_json::to_string(&net.evaluation).unwrap();
    assert!(json.contains("drop-etcd-peer"), "{json}");
    assert!(!json.contains("drop-all-peers"), "{json}");
    let dry = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]);
    dry.expect_code(0);
    assert!(
        dry.stderr
            .contains("network not read: the SecurityPolicies of other namespaces"),
        "{}",
        dry.stderr
    );
}

/// A NetworkPolicy's `nsx-op/error` written by a namespace editor is the object's own
/// claim: one Warning saying so, the text cut and made visible, never `NetworkNotRealized`, and
/// `status` exits as without it.
#[test]
fn a_forged_nsx_error_annotation_never_changes_the_exit_code() {
    let plain = Env::new("nsx-vpc-no-drop", Workload::ok());
    let before = plain.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    let env = Env::new("nsx-vpc-forged-claim", Workload::ok());
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    run.expect_code(before.code);
    let (report, expected) = (run.status_report(), before.status_report());
    assert_eq!(report.result.healthy, expected.result.healthy);
    assert_eq!(report.result.errors, expected.result.errors);
    assert!(report
        .findings
        .iter()
        .all(|f| f.code != FindingCode::NetworkNotRealized));
    let claims: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::NetworkPolicyErrorClaimed)
        .collect();
    assert_eq!(claims.len(), 1, "{:#?}", report.findings);
    let m = &claims[0].message;
    assert_eq!(
        claims[0].severity,
        etcdnet::report::v1alpha2::Severity::Warning
    );
    assert!(m.contains("the object's own claim"), "{m}");
    assert!(m.contains("NetworkPolicy forged"), "{m}");
    // JSON escapes the editor's controls (the renderers make the table's text visible).
    assert!(!run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'));
    assert!(m.len() < 600, "the text is cut: {}", m.len());
    // The table too: a WARN line, no ERROR.
    let table = env.kubectl(&["status", CLUSTER, "-n", NS]);
    table.expect_code(before.code);
    assert!(!table.stdout.contains('\u{1b}'), "{}", table.stdout);
}

/// `-A` by a user who may not list across namespaces (namespace by namespace): the other
/// namespaces' SecurityPolicies are still asked once for all of them, not once per namespace,
/// and the refusal is each cluster's note.
#[test]
fn all_namespaces_namespace_by_namespace_asks_the_others_once() {
    let env = Env::new("nsx-ncp-other-namespace", Workload::ok());
    for (group, resource) in [
        ("cluster.x-k8s.io", "clusters"),
        ("nsx.vmware.com", "securitypolicies"),
    ] {
        env.supervisor.forbid(etcdnet_fakeapi::Forbid {
            verb: Some("list".into()),
            group: Some(group.into()),
            resource: Some(resource.into()),
            cluster_scope: true,
            ..Default::default()
        });
    }
    env.supervisor.clear_requests();
    let run = env.kubectl(&["status", "-A", "-o", "json"]);
    let requests = env.supervisor_requests();
    assert!(
        requests.iter().any(|r| r == "GET /api/v1/namespaces"),
        "namespace by namespace: {requests:#?}"
    );
    let per_namespace = requests
        .iter()
        .filter(|r| r.contains("/clusters") && r.contains("/namespaces/"))
        .count();
    assert!(per_namespace >= 2, "ns-prod and ns-platform: {requests:#?}");
    assert_eq!(
        count_requests(
            &requests,
            "GET /apis/nsx.vmware.com/v1alpha1/securitypolicies"
        ),
        1,
        "{requests:#?}"
    );
    let text = run.json().to_string();
    assert!(
        text.contains("list securitypolicies.nsx.vmware.com in all namespaces: forbidden"),
        "{text}"
    );
}

/// ~250 NetworkPolicies beside the blocking SecurityPolicy (nsx-vpc). The bundle
/// keeps every object the verdict uses first, so `analyse` gives the live verdict and names the
/// same policy and the same failed port; the NetworkPolicies past its bound (only counted) are
/// noted in the bundle, and `analyse` says its verdict may differ.
#[test]
fn many_network_policies_give_the_same_verdict_offline() {
    const CP: [&str; 3] = [
        "tkc-prod-7xk2p-4rz8m",
        "tkc-prod-7xk2p-9qtvw",
        "tkc-prod-7xk2p-bx2lk",
    ];
    let env = Env::new("nsx-vpc", Workload::black_hole());
    for i in 0..250 {
        env.supervisor
            .insert(serde_json::json!({"apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": format!("aa-deny-{i:03}"), "namespace": NS},
                "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}))
            .unwrap();
    }
    env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
    let bundle = env.dir.path().join("tkc-prod.tar.gz");
    let live = crate::bundle::diagnose(&env, &bundle, &["-o", "json"]);
    live.expect_code(1);
    let live_report = live.diagnose_report();
    assert!(
        live_report.verdict.evidence[0].starts_with("SecurityPolicy ns-prod/drop-etcd-peers"),
        "{:#?}",
        live_report.verdict.evidence
    );
    let offline = crate::bundle::analyse_offline(&env, &bundle, &["-o", "json"]);
    offline.expect_code(1);
    let offline_report = offline.diagnose_report();
    assert_eq!(offline_report.verdict, live_report.verdict);
    assert_eq!(offline_report.findings, live_report.findings);
    let (a, b) = (
        offline_report.network_policy.unwrap(),
        live_report.network_policy.unwrap(),
    );
    assert_eq!(a.evaluation, b.evaluation);
    assert_eq!(a.realization, b.realization);
    assert!(
        offline.stderr.contains(
            "the bundle left out Supervisor objects the run read (NetworkPolicy ns-prod/aa-deny-"
        ),
        "{}",
        offline.stderr
    );
    assert!(
        offline
            .stderr
            .contains("this verdict may differ from the live one"),
        "{}",
        offline.stderr
    );
}

/// 16 VMs carrying the cluster's control-plane labels, ahead of the real ones in the
/// API's order, change nothing the evaluation sees: its VMs are the uid chain's three, and the
/// blocking policy is still named.
#[test]
fn labelled_rogue_vms_are_not_evaluated() {
    let env = Env::new("nsx-vpc", Workload::ok());
    let before = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    for i in 0..16 {
        env.supervisor
            .insert(serde_json::json!({"apiVersion": "vmoperator.vmware.com/v1alpha3",
                "kind": "VirtualMachine",
                "metadata": {"name": format!("aaa-rogue-{i:02}"), "namespace": NS,
                    "labels": {"capv.vmware.com/cluster.name": CLUSTER,
                        "capv.vmware.com/cluster.role": "controlplane",
                        "cluster.x-k8s.io/cluster-name": CLUSTER}},
                "spec": {"className": "best-effort-small", "imageName": "x", "powerState": "PoweredOn"},
                "status": {"powerState": "PoweredOn",
                    "network": {"primaryIP4": format!("198.18.0.{}", 100 + i)}}}))
            .unwrap();
    }
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    let (a, b) = (
        run.status_report().network_policy.unwrap(),
        before.status_report().network_policy.unwrap(),
    );
    let mut vms = a.evaluation.vms.clone();
    vms.sort();
    assert_eq!(
        vms,
        [
            "tkc-prod-7xk2p-4rz8m",
            "tkc-prod-7xk2p-9qtvw",
            "tkc-prod-7xk2p-bx2lk"
        ]
    );
    assert_eq!(a.evaluation, b.evaluation);
    assert!(run
        .status_report()
        .findings
        .iter()
        .any(|f| f.code == FindingCode::SecurityPolicyBlocksEtcd
            && f.message.contains("ns-prod/drop-etcd-peers")));
}
