//! `kubectl etcdnet status` against the fake Supervisor, over HTTP, with a real kubeconfig.
//! One test per fixture set and per error case; the kubectl-dispatch tests run the real kubectl.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use etcdnet::report::v1alpha2::ApiState;
use etcdnet::report::v1alpha2::FindingCode;
use etcdnet::report::v1alpha2::{
    ControlPlaneNode, PowerState, ProvisioningStep, RolloutPhase, VmLabelScheme,
};
use etcdnet::report::StatusReport;
use serde_json::Value;

fn status_json(env: &Env, cluster: &str, ns: &str) -> (Run, StatusReport) {
    let run = env.plugin(&["status", cluster, "-n", ns, "-o", "json"]);
    let report = run.status_report();
    (run, report)
}

fn node_ips(report: &StatusReport) -> Vec<String> {
    report
        .nodes
        .iter()
        .map(|n| n.ip().map_or("<none>".to_string(), |ip| ip.to_string()))
        .collect()
}

fn finding_codes(report: &StatusReport) -> Vec<FindingCode> {
    report.findings.iter().map(|f| f.code).collect()
}

fn power(n: &ControlPlaneNode) -> Option<PowerState> {
    n.vm.as_ref().map(|vm| vm.power)
}

#[test]
fn healthy_cluster_table_json_yaml() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());

    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(0);
    // The schema's name as scripts match it: checked on the wire, not through the type.
    let json = run.json();
    assert_eq!(json["apiVersion"], "etcdnet.kubectl.io/v1alpha2");
    assert_eq!(json["kind"], "StatusReport");
    let apis = &report.header.apis;
    assert_eq!(apis.virtual_machine, "vmoperator.vmware.com/v1alpha3");
    assert_eq!(apis.vm_labels, Some(VmLabelScheme::Capv));
    assert_eq!(
        node_ips(&report),
        ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    );
    assert_eq!(report.header.control_plane.desired, Some(3));
    assert_eq!(report.header.control_plane.machines, 3);
    assert_eq!(report.workload_api.state, ApiState::Reachable);
    assert_eq!(report.workload_api.http_status, Some(200));
    assert_eq!(report.result.exit_code, 0);
    assert!(finding_codes(&report).is_empty());
    for n in &report.nodes {
        assert_eq!(power(n), Some(PowerState::PoweredOn));
        let phase = n.machine.as_ref().and_then(|m| m.phase.as_deref());
        assert_eq!(phase, Some("Running"));
    }

    let table = env.plugin(&["status", "tkc-prod", "-n", "ns-prod"]);
    table.expect_code(0);
    assert!(table.stdout.contains("NODE"), "{}", table.stdout);
    for ip in ["198.18.0.11", "198.18.0.12", "198.18.0.13"] {
        assert!(table.stdout.contains(ip), "{ip} missing:\n{}", table.stdout);
    }
    assert!(
        table.stdout.contains("3 machines, 3 ready"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("No problems found."),
        "{}",
        table.stdout
    );

    let yaml = env.plugin(&["status", "tkc-prod", "-n", "ns-prod", "-o", "yaml"]);
    yaml.expect_code(0);
    // Compared as documents, not as typed reports: a key missing from (or added to) one of
    // them would still deserialize to the same report.
    let mut from_yaml: Value = serde_yaml_ng::from_str(&yaml.stdout).unwrap();
    // Timings differ between two runs; everything else is the same report.
    let mut json = json;
    from_yaml["workloadApi"]["elapsedMs"] = Value::Null;
    json["workloadApi"]["elapsedMs"] = Value::Null;
    // Two runs: their timings and the times of their checks differ.
    from_yaml["result"]["durationMs"] = Value::Null;
    json["result"]["durationMs"] = Value::Null;
    from_yaml["workloadApi"]["checkedAt"] = Value::Null;
    json["workloadApi"]["checkedAt"] = Value::Null;
    assert_eq!(from_yaml, json, "yaml and json carry the same report");

    let wide = env.plugin(&["status", "tkc-prod", "-n", "ns-prod", "-o", "wide"]);
    wide.expect_code(0);
    assert!(wide.stdout.contains("CLASS"), "{}", wide.stdout);
    assert!(
        wide.stdout.contains("vmoperator.vmware.com/v1alpha3"),
        "{}",
        wide.stdout
    );
}

#[test]
fn workers_are_not_control_plane() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    let (_, report) = status_json(&env, "tkc-prod", "ns-prod");
    for n in &report.nodes {
        let name = &n.name;
        assert!(
            !name.contains("worker") && !name.contains("md-"),
            "worker listed: {name}"
        );
    }
    assert_eq!(report.nodes.len(), 3);
}

#[test]
fn old_supervisor_v1alpha1_with_capw_labels() {
    let env = Env::new("v1alpha1-capw", Workload::ok());
    let ns = namespace_of(&env);
    let cluster = cluster_of(&env);
    let (run, report) = status_json(&env, &cluster, &ns);
    run.expect_code(0);
    let apis = &report.header.apis;
    assert_eq!(apis.virtual_machine, "vmoperator.vmware.com/v1alpha1");
    assert_eq!(apis.vm_labels, Some(VmLabelScheme::Capw));
    let ips = node_ips(&report);
    assert_eq!(ips.len(), 3);
    assert!(ips.iter().all(|ip| ip.starts_with("198.1")), "{ips:?}");
    for n in &report.nodes {
        assert_eq!(
            power(n),
            Some(PowerState::PoweredOn),
            "poweredOn is normalised"
        );
    }
}

#[test]
fn v1alpha2_primary_ip4() {
    let env = Env::new("v1alpha2", Workload::ok());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let (run, report) = status_json(&env, &cluster, &ns);
    run.expect_code(0);
    assert_eq!(
        report.header.apis.virtual_machine,
        "vmoperator.vmware.com/v1alpha2"
    );
    assert_eq!(node_ips(&report).len(), 3);
    assert!(node_ips(&report).iter().all(|ip| ip != "<none>"));
}

#[test]
fn capi_v1beta2_and_vm_v1alpha5() {
    let env = Env::new("kcp-v1beta2", Workload::ok());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let (_, report) = status_json(&env, &cluster, &ns);
    let apis = &report.header.apis;
    assert_eq!(apis.cluster, "cluster.x-k8s.io/v1beta2");
    assert_eq!(apis.virtual_machine, "vmoperator.vmware.com/v1alpha5");
    let control_plane = &report.header.control_plane;
    let kcp = control_plane.kcp.as_ref().expect("a KCP");
    assert_eq!(kcp.api_version, "controlplane.cluster.x-k8s.io/v1beta2");
    assert_eq!(control_plane.desired, Some(3));
    assert!(kcp.ready.is_some(), "{kcp:#?}");
    assert!(kcp.available.is_some(), "{kcp:#?}");
    let ips = node_ips(&report);
    assert!(
        ips.iter().any(|ip| ip.contains(':')),
        "one VM has only an IPv6 address: {ips:?}"
    );
}

/// vm-operator v1alpha6, its storage version: discovery takes it as any other preferred
/// version, and its fields read as v1alpha5's.
#[test]
fn vm_v1alpha6_and_three_zones() {
    let env = Env::new("three-zones", Workload::ok());
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(0);
    assert_eq!(
        report.header.apis.virtual_machine,
        "vmoperator.vmware.com/v1alpha6"
    );
    let places: Vec<(Option<String>, Option<String>, Option<String>)> = report
        .nodes
        .iter()
        .map(|n| {
            let vm = n.vm.as_ref().unwrap();
            (
                n.machine.as_ref().unwrap().failure_domain.clone(),
                vm.zone.clone(),
                vm.host.clone(),
            )
        })
        .collect();
    let want = |z: &str, h: &str| {
        (
            Some(z.to_string()),
            Some(z.to_string()),
            Some(h.to_string()),
        )
    };
    assert_eq!(
        places,
        [
            want("zone-a", "esx-a1.vsphere.local"),
            want("zone-b", "esx-b1.vsphere.local"),
            want("zone-c", "esx-c1.vsphere.local"),
        ]
    );
    // -o wide shows each node's failure domain and host.
    let wide = env.plugin(&["status", "tkc-prod", "-n", "ns-prod", "-o", "wide"]);
    wide.expect_code(0);
    for (zone, host) in [("zone-a", "esx-a1"), ("zone-c", "esx-c1")] {
        let row = wide
            .stdout
            .lines()
            .find(|l| l.contains(zone))
            .unwrap_or_else(|| panic!("no row with {zone}: {}", wide.stdout));
        assert!(row.contains(host), "{row}");
    }
    assert!(wide.stdout.contains("HOST"), "{}", wide.stdout);
}

/// A VM whose guest reports nothing keeps only `status.network.config`: its address is taken
/// from there and said so (JSON `ipSource`, the table's "(config)").
#[test]
fn a_vm_with_only_its_network_config_is_addressed_by_it() {
    let env = Env::new("vm-network-config-only", Workload::ok());
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(0);
    assert_eq!(
        node_ips(&report),
        ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    );
    let sources: Vec<Value> = run.json()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["vm"]["ipSource"].clone())
        .collect();
    assert_eq!(sources, [Value::Null, Value::Null, "NetworkConfig".into()]);
    assert!(!finding_codes(&report).contains(&FindingCode::VirtualMachineNoIP));
    let table = env.plugin(&["status", "tkc-prod", "-n", "ns-prod"]);
    assert!(
        table.stdout.contains("198.18.0.13 (config)"),
        "{}",
        table.stdout
    );
}

/// VSphereMachines refused (403): the run goes on, the VMs joined to the Machines by the
/// VSphereMachine's name in their owner (CAPI v1beta2 references carry no uid), and one
/// finding names the permission and what the run did instead; not counted in the exit code.
#[test]
fn vspheremachines_forbidden_is_a_finding_not_a_failure() {
    let env = Env::new("vspheremachines-forbidden", Workload::ok());
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(0);
    assert_eq!(report.nodes.len(), 3);
    let json = run.json();
    for n in json["nodes"].as_array().unwrap() {
        assert_eq!(n["join"]["by"], "OwnerName", "{n}");
    }
    let f = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::PermissionMissing)
        .expect("a PermissionMissing finding");
    assert_eq!(
        f.message,
        "forbidden: list vspheremachines.vmware.infrastructure.cluster.x-k8s.io in namespace ns-prod (403); the VMs were joined to the Machines without the VSphereMachines' uids (3 by the VSphereMachine's name in the VM's owner); grant it for the full check (docs/rbac.yaml)"
    );
    // The same Supervisor with the permission: joined by uid, no finding.
    let env = Env::new("v1alpha6", Workload::ok());
    let (_, report) = status_json(&env, "tkc-prod", "ns-prod");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

/// VMs named by `VSphereMachine.spec.naming.template` (`<machine>-vm`): each Machine still
/// joins its VM by the VSphereMachine's uid.
#[test]
fn vms_named_by_a_naming_template_join_by_uid() {
    let env = Env::new("vm-naming-template", Workload::ok());
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(0);
    let json = run.json();
    for n in json["nodes"].as_array().unwrap() {
        let machine = n["machine"]["name"].as_str().unwrap();
        assert_eq!(n["vm"]["name"], format!("{machine}-vm"), "{n}");
        assert_eq!(n["join"]["by"], "Uid", "{n}");
    }
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[test]
fn missing_control_plane_machine() {
    let env = Env::new("missing-machine", Workload::black_hole());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let run = env.plugin(&[
        "status",
        &cluster,
        "-n",
        &ns,
        "-o",
        "json",
        "--api-timeout",
        "1s",
    ]);
    run.expect_code(1);
    let report = run.status_report();
    assert_eq!(report.header.control_plane.desired, Some(3));
    assert_eq!(report.header.control_plane.machines, 2);
    let codes = finding_codes(&report);
    assert_eq!(
        codes[0],
        FindingCode::ControlPlaneMachinesMissing,
        "{codes:?}"
    );

    let table = env.plugin(&["status", &cluster, "-n", &ns, "--api-timeout", "1s"]);
    table.expect_code(1);
    assert!(
        table.stdout.contains("2 of 3 machines, 0 ready"),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("1 of 3 control-plane Machines missing"),
        "{}",
        table.stdout
    );
}

#[test]
fn vm_without_ip_is_shown_not_dropped() {
    let env = Env::new("vm-no-ip", Workload::ok());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let (run, report) = status_json(&env, &cluster, &ns);
    run.expect_code(1);
    assert_eq!(report.nodes.len(), 3);
    assert_eq!(
        node_ips(&report)
            .iter()
            .filter(|ip| *ip == "<none>")
            .count(),
        1
    );
    // Provisioning without a nodeRef: a Machine on its way, waiting for its address (its age
    // in the table tells a stuck one), not a VM fault.
    let pending = report.nodes.iter().find(|n| n.ip().is_none()).unwrap();
    assert!(
        matches!(
            pending.rollout(),
            Some(RolloutPhase::Provisioning {
                waiting_for: ProvisioningStep::IpAddress,
                ..
            })
        ),
        "{pending:?}"
    );
    assert!(finding_codes(&report).contains(&FindingCode::RolloutInProgress));
    assert!(!finding_codes(&report).contains(&FindingCode::VirtualMachineNoIP));
    let table = env.plugin(&["status", &cluster, "-n", &ns]);
    assert!(table.stdout.contains("<pending>"), "{}", table.stdout);
    assert!(
        table
            .stdout
            .contains(": Provisioning (Machine phase Provisioning), waiting for an IP address"),
        "{}",
        table.stdout
    );
}

/// The JSON of `kubectl etcdnet status -o json` through the real kubectl, raw and parsed.
fn kubectl_status_json(env: &Env) -> (StatusReport, Value) {
    assert!(
        std::path::Path::new(KUBECTL).exists(),
        "{KUBECTL} is not installed: this test needs the real kubectl (apt-get install kubectl, as .ci/run does)"
    );
    let (ns, cluster) = (namespace_of(env), cluster_of(env));
    let run = env.kubectl(&["status", &cluster, "-n", &ns, "-o", "json"]);
    // Warnings only: exit 1 says there is something to read, as for any finding.
    run.expect_code(1);
    let raw: Value = serde_json::from_str(&run.stdout).unwrap();
    (run.status_report(), raw)
}

fn kubectl_status_table(env: &Env) -> String {
    let (ns, cluster) = (namespace_of(env), cluster_of(env));
    let run = env.kubectl(&["status", &cluster, "-n", &ns]);
    run.expect_code(1);
    run.stdout
}

fn rollout_json(raw: &Value, node: &str) -> Value {
    raw["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap_or_else(|| panic!("no node {node}: {raw}"))["machine"]["rollout"]
        .clone()
}

/// A KCP rollout's scale-up (fixture rollout-scale-up): the 4th Machine, provisioning with its VM
/// off, is under "rollout in progress" with its phase and age, not a powered-off VM or a missing
/// address; the KCP's 4 for 3 is said once; nothing else is flagged.
#[test]
fn rollout_scale_up_through_the_real_kubectl() {
    let env = Env::new("rollout-scale-up", Workload::ok());
    let (report, raw) = kubectl_status_json(&env);
    assert_eq!(report.nodes.len(), 4);
    assert_eq!(
        finding_codes(&report),
        [
            FindingCode::RolloutInProgress,
            FindingCode::RolloutInProgress
        ],
        "{:?}",
        report.findings
    );
    assert_eq!(report.findings[0].node, None);
    assert!(report.findings[0]
        .message
        .contains("has 4 replicas for 3 desired"));
    assert_eq!(
        report.findings[1].node.as_deref(),
        Some("tkc-prod-7xk2p-k8d5n")
    );
    assert_eq!(
        rollout_json(&raw, "tkc-prod-7xk2p-k8d5n"),
        serde_json::json!({"phase": "Provisioning", "since": "2025-06-03T08:30:00Z",
            "machinePhase": "Provisioning", "waitingFor": "PowerOn"})
    );
    assert_eq!(rollout_json(&raw, "tkc-prod-7xk2p-4rz8m"), Value::Null);
    let table = kubectl_status_table(&env);
    assert!(
        table.contains("Rollout in progress (these Machines are shown, not judged):\n  KubeadmControlPlane tkc-prod-7xk2p has 4 replicas for 3 desired\n  tkc-prod-7xk2p-k8d5n: Provisioning (Machine phase Provisioning), waiting for its VM to power on, since 2025-06-03T08:30:00Z, "),
        "{table}"
    );
    assert!(table.contains(" ago\n"), "the age: {table}");

    let joining = Env::new("rollout-scale-up-joining", Workload::ok());
    let (report, raw) = kubectl_status_json(&joining);
    assert_eq!(node_ips(&report)[3], "198.18.0.14");
    assert_eq!(
        rollout_json(&raw, "tkc-prod-7xk2p-k8d5n")["waitingFor"],
        "NodeJoin"
    );
}

/// A KCP rollout's scale-down (fixture rollout-scale-down): the Machine being deleted (served
/// with its deletionTimestamp and finalizer, as a real API server serves it) is under "rollout in
/// progress" since its deletionTimestamp, and is not counted against the KCP's 3; conditions
/// carry their lastTransitionTime in the JSON.
#[test]
fn rollout_scale_down_through_the_real_kubectl() {
    let env = Env::new("rollout-scale-down", Workload::ok());
    let (report, raw) = kubectl_status_json(&env);
    assert_eq!(report.nodes.len(), 4);
    assert_eq!(
        finding_codes(&report),
        [
            FindingCode::RolloutInProgress,
            FindingCode::RolloutInProgress
        ],
        "{:?}",
        report.findings
    );
    assert_eq!(
        report.findings[1].node.as_deref(),
        Some("tkc-prod-7xk2p-4rz8m")
    );
    assert_eq!(
        rollout_json(&raw, "tkc-prod-7xk2p-4rz8m"),
        serde_json::json!({"phase": "Deleting", "since": "2025-06-03T09:02:00Z",
            "machinePhase": "Deleting"})
    );
    assert_eq!(rollout_json(&raw, "tkc-prod-7xk2p-k8d5n"), Value::Null);
    let ready = raw["controlPlane"]["kcp"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(
        (ready["type"].as_str(), ready["lastTransitionTime"].as_str()),
        (Some("Ready"), Some("2025-06-03T08:30:00Z")),
        "{ready}"
    );
    let table = kubectl_status_table(&env);
    assert!(
        table.contains("  tkc-prod-7xk2p-4rz8m: Deleting (Machine phase Deleting), since 2025-06-03T09:02:00Z, "),
        "{table}"
    );
}

#[test]
fn powered_off_vm() {
    let env = Env::new("vm-powered-off", Workload::ok());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let (run, report) = status_json(&env, &cluster, &ns);
    run.expect_code(1);
    let off: Vec<_> = report
        .nodes
        .iter()
        .filter(|n| power(n) == Some(PowerState::PoweredOff))
        .collect();
    assert_eq!(off.len(), 1);
    assert!(finding_codes(&report).contains(&FindingCode::VirtualMachineNotPoweredOn));
}

#[test]
fn two_clusters_in_one_namespace() {
    let env = Env::new("two-clusters", Workload::ok());
    let (_, a) = status_json(&env, "tkc-a", "ns-shared");
    let (_, b) = status_json(&env, "tkc-b", "ns-shared");
    let (ips_a, ips_b) = (node_ips(&a), node_ips(&b));
    assert_eq!(ips_a.len(), 3);
    assert_eq!(ips_b.len(), 3);
    assert!(
        ips_a.iter().all(|ip| !ips_b.contains(ip)),
        "{ips_a:?} vs {ips_b:?}"
    );

    let unknown = env.plugin(&["status", "tkc-c", "-n", "ns-shared"]);
    unknown.expect_code(2);
    let line = unknown.one_line_error();
    assert!(line.contains("\"tkc-c\" not found"), "{line}");
    assert!(
        line.contains("tkc-a, tkc-b"),
        "lists the clusters that exist: {line}"
    );
}

#[test]
fn not_a_supervisor() {
    let env = Env::with_url("not-supervisor", None, "http://127.0.0.1:9");
    let run = env.plugin(&["status", "tkc-prod", "-n", "default"]);
    run.expect_code(2);
    let line = run.one_line_error();
    assert!(line.contains(&format!("context {CONTEXT:?}")), "{line}");
    assert!(line.contains("Supervisor"), "{line}");
}

#[test]
fn forbidden_list_is_exit_3_with_the_servers_words() {
    let env = Env::new("forbidden", Workload::ok());
    let (ns, cluster) = (namespace_of(&env), cluster_of(&env));
    let run = env.plugin(&["status", &cluster, "-n", &ns]);
    run.expect_code(3);
    let line = run.one_line_error();
    assert!(line.contains("forbidden"), "{line}");
    assert!(line.contains("cannot list resource \"machines\""), "{line}");
    // Said once, with the command that shows the refusal (the run's context in it, so it asks
    // the same Supervisor) and the page of the permissions.
    assert!(
        line.contains(
            "; the permissions the plugin needs: https://github.com/etcdnet/kubectl-etcdnet/blob/main/docs/rbac.yaml;"
        ),
        "points to the documented Role: {line}"
    );
    assert!(
        line.contains(&format!(
            "; check with: kubectl auth can-i list machines.cluster.x-k8s.io -n {ns} --context={CONTEXT}"
        )),
        "{line}"
    );
    assert_eq!(line.matches("cannot list").count(), 1, "{line}");
}

#[test]
fn invalid_names_are_rejected_before_any_request() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    for args in [
        &["status", "TKC_Prod", "-n", "ns-prod"][..],
        &["status", "tkc-prod", "-n", "ns_prod"][..],
        &["status", "-tkc", "-n", "ns-prod"][..],
        &[
            "status",
            "tkc-prod",
            "-n",
            "ns-prod",
            "--api-timeout",
            "soon",
        ][..],
        &["status", "tkc-prod", "-n", "ns-prod", "-o", "xml"][..],
    ] {
        let run = env.plugin(args);
        run.expect_code(2);
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"));
    }
    assert!(
        env.supervisor.requests().is_empty(),
        "no request may be made for invalid input: {:?}",
        env.supervisor.requests()
    );
}

#[test]
fn workload_api_black_hole_times_out_within_the_bound() {
    let env = Env::new("healthy-v1alpha3", Workload::black_hole());
    let started = Instant::now();
    let run = env.plugin(&[
        "status",
        "tkc-prod",
        "-n",
        "ns-prod",
        "-o",
        "json",
        "--api-timeout",
        "1s",
    ]);
    let took = started.elapsed();
    run.expect_code(1);
    let report = run.status_report();
    assert_eq!(report.workload_api.state, ApiState::Timeout);
    assert!(finding_codes(&report).contains(&FindingCode::WorkloadAPIUnreachable));
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn workload_api_refused() {
    let env = Env::new("healthy-v1alpha3", Workload::refused());
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(1);
    assert_eq!(report.workload_api.state, ApiState::Refused);
}

#[test]
fn workload_api_tls_error() {
    // The secret's CA did not sign the server's certificate: the handshake fails.
    let workload = Workload::ok();
    let cfg = FakeConfig::from_dir(fixture("healthy-v1alpha3"))
        .unwrap()
        .var("WORKLOAD_URL", workload.url())
        .var("WORKLOAD_CA", etcdnet_fakeapi::tls::other_ca_data());
    let env = Env::with_config(cfg, Some(workload));
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(1);
    assert_eq!(report.workload_api.state, ApiState::TlsError, "{report:#?}");
}

#[test]
fn workload_api_not_ready() {
    let env = Env::new("healthy-v1alpha3", Workload::status(500));
    let (run, report) = status_json(&env, "tkc-prod", "ns-prod");
    run.expect_code(1);
    assert_eq!(report.workload_api.state, ApiState::HttpError);
    assert_eq!(report.workload_api.http_status, Some(500));
    assert!(finding_codes(&report).contains(&FindingCode::WorkloadAPINotReady));
}

#[test]
fn secret_material_never_printed() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    for args in [
        &["status", "tkc-prod", "-n", "ns-prod", "-vvv"][..],
        &["status", "tkc-prod", "-n", "ns-prod", "-o", "json", "-vvv"][..],
        &["status", "tkc-prod", "-n", "ns-prod", "-o", "yaml", "-vvv"][..],
        &["status", "tkc-prod", "-n", "ns-prod", "-o", "wide", "-vvv"][..],
    ] {
        let run = env.plugin(args);
        for marker in SECRET_MARKERS {
            assert!(
                !run.stdout.contains(marker),
                "{marker} in stdout of {args:?}"
            );
            assert!(
                !run.stderr.contains(marker),
                "{marker} in stderr of {args:?}"
            );
        }
    }
}

#[test]
fn namespace_defaults_to_the_contexts() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    env.supervisor
        .write_kubeconfig(&env.kubeconfig, CONTEXT, Some("ns-prod"))
        .unwrap();
    let run = env.plugin(&["status", "tkc-prod", "-o", "json"]);
    run.expect_code(0);
    assert_eq!(run.status_report().header.namespace, "ns-prod");
}

#[test]
fn unknown_context_is_a_config_error() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    let run = env.plugin(&["status", "tkc-prod", "-n", "ns-prod", "--context", "nope"]);
    run.expect_code(2);
    let line = run.one_line_error();
    assert!(line.contains("\"nope\" not found"), "{line}");
    assert!(line.contains(CONTEXT), "lists the contexts: {line}");
}

#[test]
fn unreachable_supervisor_is_exit_3() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    let dead = Workload::refused();
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    std::fs::write(
        &env.kubeconfig,
        text.replace(&env.supervisor.url(), &dead.url()),
    )
    .unwrap();
    let run = env.plugin(&["status", "tkc-prod", "-n", "ns-prod"]);
    run.expect_code(3);
    let line = run.one_line_error();
    assert!(
        line.contains(&dead.url()) || line.contains("refused"),
        "{line}"
    );
}

#[test]
fn missing_kubeconfig_file_is_exit_2() {
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    let mut cmd = std::process::Command::new(PLUGIN);
    cmd.args(["status", "tkc-prod", "-n", "ns-prod", "--kubeconfig"])
        .arg(env.dir.path().join("absent"))
        .env("HOME", env.dir.path());
    let run = Run::from(cmd.output().unwrap());
    run.expect_code(2);
    assert!(run.one_line_error().contains("absent"));
}

#[test]
fn through_the_real_kubectl() {
    assert!(
        std::path::Path::new(KUBECTL).exists(),
        "{KUBECTL} is not installed: this test needs the real kubectl (apt-get install kubectl, as .ci/run does)"
    );
    let env = Env::new("healthy-v1alpha3", Workload::ok());
    let run = env.kubectl(&["status", "tkc-prod", "-n", "ns-prod", "-o", "json"]);
    run.expect_code(0);
    assert_eq!(
        node_ips(&run.status_report()),
        ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    );

    let missing = Env::new("missing-machine", Workload::ok());
    let (ns, cluster) = (namespace_of(&missing), cluster_of(&missing));
    let run = missing.kubectl(&["status", &cluster, "-n", &ns]);
    run.expect_code(1);
    assert!(
        run.stdout.contains("ControlPlaneMachinesMissing"),
        "{}",
        run.stdout
    );

    let bad = env.kubectl(&["status", "Bad_Name"]);
    bad.expect_code(2);
    assert!(
        bad.stderr.contains("not a valid cluster name"),
        "{}",
        bad.stderr
    );
    let usage = env.kubectl(&["status"]);
    usage.expect_code(2);
    assert!(
        usage.stderr.contains("Usage: kubectl etcdnet status"),
        "usage names the plugin as run: {}",
        usage.stderr
    );
}

/// The namespace and cluster a set is about, read from its objects (each set documents them in
/// its fake.yaml; reading them keeps the tests honest if a set is renamed).
fn namespace_of(env: &Env) -> String {
    first_cluster(env).0
}

fn cluster_of(env: &Env) -> String {
    first_cluster(env).1
}

fn first_cluster(env: &Env) -> (String, String) {
    let c = env
        .supervisor
        .objects("cluster.x-k8s.io", "clusters")
        .into_iter()
        .next()
        .expect("the set has a Cluster");
    (
        c["metadata"]["namespace"].as_str().unwrap().to_string(),
        c["metadata"]["name"].as_str().unwrap().to_string(),
    )
}

/// The Supervisor's networking stack is a fact of `status`, from discovery: VDS (net-operator,
/// no NSX group), NSX T1 of vSphere 8 (NCP's vmware.com VirtualNetwork), VPC of vSphere 9
/// (crd.nsx.vmware.com), unknown when none is served; `-o wide` shows it.
#[test]
fn the_networking_stack_of_each_supervisor() {
    use etcdnet::report::v1alpha2::NetworkStack;
    for (set, stack, words) in [
        ("vds", NetworkStack::Vds, "netoperator.vmware.com"),
        ("nsx-ncp", NetworkStack::Nsx, "virtualnetworks.vmware.com"),
        // .ci/demo's set: the article's cluster on NSX.
        (
            "nsx-quorum-lost",
            NetworkStack::Nsx,
            "virtualnetworks.vmware.com",
        ),
        ("nsx-vpc", NetworkStack::Vpc, "crd.nsx.vmware.com"),
        ("healthy-v1alpha3", NetworkStack::Unknown, "serves none of"),
    ] {
        let env = Env::new(set, Workload::refused());
        let (_, report) = status_json(&env, "tkc-prod", "ns-prod");
        let s = &report.header.apis.network_stack;
        assert_eq!(s.stack, stack, "{set}: {s:?}");
        assert!(s.evidence.contains(words), "{set}: {s:?}");
        let wide = env.plugin(&["status", "tkc-prod", "-n", "ns-prod", "-o", "wide"]);
        assert!(
            wide.stdout.contains("NETWORK") && wide.stdout.contains(&format!(" {stack}")),
            "{set}: {}",
            wide.stdout
        );
    }
}
