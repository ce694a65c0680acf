//! Builders shared by the unit tests of several stages: a cluster's facts as the Supervisor
//! would give them, and the workload API in a given state. Compiled for tests only.
//!
//! [`fuzz`] uses them for the property tests of the whole pipeline (parse → render), which no
//! single stage's tests can reach.

use crate::supervisor::*;
use crate::workload::{ApiState, WorkloadApi};

mod fuzz;

/// Discovery of a Supervisor serving vm-operator v1alpha3, CAPI v1beta1 and KCP v1beta1 (the
/// fixture sets' versions), as `supervisor::discovery` reads the API's group list.
pub(crate) fn supervisor_apis() -> SupervisorApis {
    use serde_json::json;
    let group = |name: &str, version: &str| {
        json!({"name": name, "versions": [{"groupVersion": format!("{name}/{version}"), "version": version}],
               "preferredVersion": {"groupVersion": format!("{name}/{version}"), "version": version}})
    };
    let answer = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        group("vmoperator.vmware.com", "v1alpha3"),
        group("cluster.x-k8s.io", "v1beta1"),
        group("controlplane.cluster.x-k8s.io", "v1beta1"),
    ]});
    crate::supervisor::discovery::from_answer(&answer, "supervisor").unwrap()
}

/// The article's case as the json contract holds it (tests/fixtures/reports/peers-dropped.json):
/// three nodes, the peers' paths between them dropped, seen through the jumpbox.
pub(crate) fn peers_dropped() -> crate::report::DiagnoseReport {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/reports/peers-dropped.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `r` healed: every path of its matrices open and the verdict Healthy (the other side of a
/// comparison, the round after a cut).
pub(crate) fn healed(mut r: crate::report::DiagnoseReport) -> crate::report::DiagnoseReport {
    use crate::report::v1alpha2::{CellState, VerdictCode};
    for m in &mut r.matrices {
        for c in &mut m.cells {
            c.state = CellState::Ok;
        }
    }
    r.verdict.code = VerdictCode::Healthy;
    r.verdict.summary = "etcd is healthy".into();
    r
}

/// The Cluster, KCP, Machines and VMs of Supervisor fixture set `set` as the fake serves them
/// (its workload endpoint filled in), one value per object.
pub(crate) fn fixture_objects(set: &str) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    let dir = format!(
        "{}/tests/fixtures/supervisor/{set}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut all = Vec::new();
    for f in [
        "10-cluster.yaml",
        "20-kcp.yaml",
        "30-machines.yaml",
        "50-virtualmachines.yaml",
    ] {
        let text = std::fs::read_to_string(format!("{dir}/{f}"))
            .unwrap()
            .replace("{{WORKLOAD_HOST}}", "198.18.0.10")
            .replace("{{WORKLOAD_PORT}}", "6443");
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v = serde_json::Value::deserialize(doc).unwrap();
            if !v.is_null() {
                all.push(v);
            }
        }
    }
    all
}

/// A cluster `tkc` in namespace `ns` whose KCP wants `desired` nodes and has `ready` ready
/// (and available), every Machine up to date, with these nodes.
pub(crate) fn facts(desired: i64, ready: i64, nodes: Vec<ControlPlaneNode>) -> ClusterFacts {
    ClusterFacts {
        context: "sv".into(),
        namespace: "ns".into(),
        cluster: ClusterInfo {
            name: "tkc".into(),
            ..Default::default()
        },
        apis: ApiVersions {
            virtual_machine: "vmoperator.vmware.com/v1alpha3".into(),
            cluster: "cluster.x-k8s.io/v1beta1".into(),
            machine: "cluster.x-k8s.io/v1beta1".into(),
            control_plane: None,
            vm_labels: Some(VmLabelScheme::Capv),
            ..Default::default()
        },
        kcp: Some(KcpInfo {
            name: "tkc-cp".into(),
            api_version: "controlplane.cluster.x-k8s.io/v1beta1".into(),
            desired: Some(desired),
            replicas: Some(nodes.len() as i64),
            ready: Some(ready),
            available: Some(ready),
            // Every Machine up to date: no rollout unless a test makes one.
            up_to_date: Some(nodes.len() as i64),
            ..Default::default()
        }),
        nodes,
        ..Default::default()
    }
}

/// cp1..cpN as Machines with VMs at 198.18.0.11.., the KCP wanting 3.
pub(crate) fn facts_with_vms(n: usize) -> ClusterFacts {
    let nodes = (1..=n)
        .map(|i| ControlPlaneNode {
            name: format!("cp{i}"),
            machine: Some(machine(&format!("cp{i}"), "Running")),
            vm: Some(VmInfo {
                name: format!("cp{i}"),
                ip: Some(format!("198.18.0.1{i}").parse().unwrap()),
                power: PowerState::PoweredOn,
                ..Default::default()
            }),
            join: Default::default(),
        })
        .collect();
    facts(3, 3, nodes)
}

/// A control-plane Machine in `phase`.
pub(crate) fn machine(name: &str, phase: &str) -> MachineInfo {
    MachineInfo {
        name: name.into(),
        phase: Some(phase.into()),
        ..Default::default()
    }
}

/// A condition as the KCP writes it on a Machine (metav1 shape: no severity).
pub(crate) fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        kind: kind.into(),
        status: status.into(),
        reason: (!reason.is_empty()).then(|| reason.into()),
        message: (!message.is_empty()).then(|| message.into()),
        severity: None,
        last_transition_time: None,
    }
}

/// Node `tkc-cp-<i>`: its Machine in `phase` and its VM, at 198.18.0.1<i> when `ip`.
pub(crate) fn node(i: u8, power: PowerState, ip: bool, phase: &str) -> ControlPlaneNode {
    let name = format!("tkc-cp-{i}");
    ControlPlaneNode {
        name: name.clone(),
        machine: Some(machine(&name, phase)),
        vm: Some(VmInfo {
            name,
            ip: ip.then(|| format!("198.18.0.1{i}").parse().unwrap()),
            power,
            ..Default::default()
        }),
        join: Default::default(),
    }
}

/// The workload API in `state`.
pub(crate) fn api(state: ApiState) -> WorkloadApi {
    WorkloadApi {
        state,
        server: None,
        path: None,
        http_status: None,
        elapsed_ms: None,
        detail: "d".into(),
        checked_at: None,
        before_probes: None,
    }
}

/// The CPU time this thread has used: what a test of "bounded work" (no quadratic parse, no
/// re-read) measures, so that its bound holds on busy cores (a test runner running other tests
/// beside it, a build at the same time), where wall time says more about the machine than the
/// code. Linux: `CLOCK_THREAD_CPUTIME_ID`; elsewhere wall time.
pub(crate) fn cpu_time() -> std::time::Duration {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec into the one we pass; this clock id always
        // exists on Linux.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed()
    }
}

/// A label map from pairs, as a test writes them.
pub(crate) fn labels(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
