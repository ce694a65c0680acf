use super::*;

fn object(v: serde_json::Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

fn machine(name: &str, labels: serde_json::Value, conditions: serde_json::Value) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "status": {"conditions": conditions}
    }))
}

fn cp(name: &str) -> DynamicObject {
    machine(
        name,
        serde_json::json!({"cluster.x-k8s.io/cluster-name": "tkc", "cluster.x-k8s.io/control-plane": ""}),
        serde_json::json!([]),
    )
}

fn cluster(spec: serde_json::Value) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "tkc", "namespace": "ns"}, "spec": spec
    }))
}

/// CAPI's own example of a control-plane MachineHealthCheck (v1beta1).
fn mhc_v1beta1(name: &str, cluster: &str, selector: serde_json::Value) -> DynamicObject {
    object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "clusterName": cluster, "maxUnhealthy": "100%", "nodeStartupTimeout": "15m",
            "selector": selector,
            "unhealthyConditions": [
                {"type": "Ready", "status": "Unknown", "timeout": "300s"},
                {"type": "Ready", "status": "False", "timeout": "300s"}
            ]
        },
        "status": {"expectedMachines": 3, "currentHealthy": 3, "remediationsAllowed": 3}
    }))
}

#[test]
fn selectors_take_what_kubernetes_takes() {
    let labels: BTreeMap<String, String> = [
        ("cluster.x-k8s.io/control-plane", ""),
        ("cluster.x-k8s.io/cluster-name", "tkc"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let yes = [
        serde_json::json!({}),
        serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": ""}}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/control-plane", "operator": "Exists"}]}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/cluster-name", "operator": "In", "values": ["a", "tkc"]}]}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/deployment-name", "operator": "DoesNotExist"}]}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/cluster-name", "operator": "NotIn", "values": ["a"]}]}),
    ];
    for s in yes {
        assert!(selects(&s, &labels), "{s}");
    }
    let no = [
        serde_json::json!({"matchLabels": {"cluster.x-k8s.io/deployment-name": "pool"}}),
        serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": "yes"}}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/control-plane", "operator": "DoesNotExist"}]}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/cluster-name", "operator": "NotIn", "values": ["tkc"]}]}),
        serde_json::json!({"matchExpressions": [{"key": "cluster.x-k8s.io/cluster-name", "operator": "Gt", "values": ["1"]}]}),
    ];
    for s in no {
        assert!(!selects(&s, &labels), "{s}");
    }
}

#[test]
fn a_control_plane_health_check_is_read_and_a_worker_one_is_not() {
    let machines = [cp("tkc-cp-1"), cp("tkc-cp-2")];
    let refs: Vec<&DynamicObject> = machines.iter().collect();
    let checks = [
        mhc_v1beta1(
            "tkc-control-plane",
            "tkc",
            serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": ""}}),
        ),
        mhc_v1beta1(
            "tkc-workers",
            "tkc",
            serde_json::json!({"matchLabels": {"cluster.x-k8s.io/deployment-name": "tkc-pool"}}),
        ),
        // Another cluster's, selecting by the same label.
        mhc_v1beta1(
            "other-control-plane",
            "other",
            serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": ""}}),
        ),
    ];
    let f = facts(&cluster(serde_json::json!({})), None, &refs, &checks, None);
    assert!(!f.cluster_paused);
    assert_eq!(f.health_checks.len(), 1, "{f:#?}");
    let h = &f.health_checks[0];
    assert_eq!(h.name, "tkc-control-plane");
    assert_eq!(h.machines, ["tkc-cp-1", "tkc-cp-2"]);
    assert_eq!(
        h.unhealthy_conditions,
        ["Ready=Unknown for 300s", "Ready=False for 300s"]
    );
    assert_eq!(h.node_startup_timeout.as_deref(), Some("15m"));
    assert_eq!(h.max_unhealthy.as_deref(), Some("100%"));
    assert_eq!(h.remediations_allowed, Some(3));
    assert!(f.marked.is_empty() && f.kcp.is_none() && f.unread.is_none());
}

#[test]
fn v1beta2_health_checks_and_kcp_strategy() {
    let machines = [cp("tkc-cp-1")];
    let refs: Vec<&DynamicObject> = machines.iter().collect();
    let mhc = object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
        "metadata": {"name": "cp", "namespace": "ns", "annotations": {"cluster.x-k8s.io/paused": ""}},
        "spec": {
            "clusterName": "tkc",
            "selector": {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}},
            "checks": {"nodeStartupTimeoutSeconds": 600, "unhealthyNodeConditions": [
                {"type": "Ready", "status": "Unknown", "timeoutSeconds": 300}]},
            "remediation": {"triggerIf": {"unhealthyInRange": "[1-2]"},
                "templateRef": {"kind": "Metal3RemediationTemplate", "name": "t", "apiVersion": "x/v1"}}
        }
    }));
    let kcp_object = object(serde_json::json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
        "metadata": {"name": "tkc-cp", "namespace": "ns", "annotations": {
            "controlplane.cluster.x-k8s.io/remediation-in-progress":
                "{\"machine\":\"tkc-cp-1\",\"timestamp\":\"2025-06-03T08:20:00Z\",\"retryCount\":0}"}},
        "spec": {"remediation": {"maxRetry": 3, "retryPeriodSeconds": 120, "minHealthyPeriodSeconds": 3600}},
        "status": {"lastRemediation": {"machine": "tkc-cp-0", "time": "2025-06-03T08:00:00Z", "retryCount": 1}}
    }));
    let f = facts(
        &cluster(serde_json::json!({"paused": true})),
        Some(&kcp_object),
        &refs,
        &[mhc],
        None,
    );
    assert!(f.cluster_paused);
    let h = &f.health_checks[0];
    assert_eq!(h.unhealthy_conditions, ["Ready=Unknown for 5m0s"]);
    assert_eq!(h.node_startup_timeout.as_deref(), Some("10m0s"));
    assert_eq!(h.unhealthy_range.as_deref(), Some("[1-2]"));
    assert_eq!(
        h.remediation_template.as_deref(),
        Some("Metal3RemediationTemplate/t")
    );
    assert!(h.paused);
    let k = f.kcp.unwrap();
    assert!(k.in_progress.unwrap().contains("tkc-cp-1"));
    assert_eq!(
        k.last_remediation.as_deref(),
        Some("tkc-cp-0 at 2025-06-03T08:00:00Z (retry 1)")
    );
    assert_eq!(k.max_retry, Some(3));
    assert_eq!(k.retry_period.as_deref(), Some("2m0s"));
    assert_eq!(k.min_healthy_period.as_deref(), Some("1h0m0s"));
}

#[test]
fn marked_machines_in_both_shapes_and_the_paused_annotation() {
    let v1beta1 = machine(
        "a",
        serde_json::json!({}),
        serde_json::json!([
            {"type": "HealthCheckSucceeded", "status": "False", "reason": "UnhealthyNode",
             "message": "Condition Ready on node a was Unknown for more than 5m0s", "severity": "Warning"},
            {"type": "OwnerRemediated", "status": "False", "reason": "WaitingForRemediation", "severity": "Warning"}
        ]),
    );
    let m = marked(&v1beta1).unwrap();
    assert_eq!(
        m.health_check_succeeded.unwrap().reason.as_deref(),
        Some("UnhealthyNode")
    );
    assert_eq!(
        m.owner_remediated.unwrap().reason.as_deref(),
        Some("WaitingForRemediation")
    );
    assert!(!m.skipped);
    let v1beta2 = object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": "b", "annotations": {"cluster.x-k8s.io/skip-remediation": ""}},
        "status": {"conditions": [
            {"type": "HealthCheckSucceeded", "status": "False", "reason": "UnhealthyNode"},
            {"type": "OwnerRemediated", "status": "True", "reason": "Remediated"}]}
    }));
    let m = marked(&v1beta2).unwrap();
    assert!(m.health_check_succeeded.is_some() && m.owner_remediated.is_none() && m.skipped);
    let healthy = machine(
        "c",
        serde_json::json!({}),
        serde_json::json!([{"type": "HealthCheckSucceeded", "status": "True"}]),
    );
    assert_eq!(marked(&healthy), None);
    let annotated = object(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "tkc", "annotations": {"cluster.x-k8s.io/paused": ""}},
        "spec": {"paused": false}
    }));
    // CAPI's IsPaused(cluster, o): spec.paused, or the annotation on o (the MHC, the KCP),
    // never the Cluster's own annotation.
    assert!(!cluster_paused(&annotated));
    assert!(cluster_annotated(&annotated));
    assert!(!cluster_paused(&cluster(
        serde_json::json!({"paused": false})
    )));
    assert!(cluster_paused(&cluster(
        serde_json::json!({"paused": true})
    )));
}

/// Eight paused decoys named `aaa-*` and one live MachineHealthCheck: every one is judged
/// before the cap, the live one is kept first, and the one left out is counted.
#[test]
fn paused_decoys_never_push_the_live_check_out() {
    let selector = serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": ""}});
    let mut all: Vec<DynamicObject> = (0..8)
        .map(|i| {
            let mut d = mhc_v1beta1(&format!("aaa-{i}"), "tkc", selector.clone());
            d.metadata.annotations = Some([(PAUSED_ANNOTATION.to_string(), String::new())].into());
            d
        })
        .collect();
    all.push(mhc_v1beta1("tkc-cp", "tkc", selector.clone()));
    let machines = [cp("m")];
    let refs: Vec<&DynamicObject> = machines.iter().collect();
    let kcp_obj = object(serde_json::json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
        "metadata": {"name": "tkc-cp", "namespace": "ns", "annotations": {PAUSED_ANNOTATION: ""}}
    }));
    let f = facts(
        &cluster(serde_json::json!({})),
        Some(&kcp_obj),
        &refs,
        &all,
        None,
    );
    assert_eq!(f.health_checks.len(), MAX_HEALTH_CHECKS);
    assert_eq!(f.health_checks[0].name, "tkc-cp");
    assert!(!f.health_checks[0].paused);
    assert!(f.health_checks[1..].iter().all(|h| h.paused));
    assert_eq!((f.health_checks_left_out, f.live_left_out), (1, 0));
    assert_eq!(f.kcp_paused.as_deref(), Some("tkc-cp"));
}

#[test]
fn hostile_values_are_bounded() {
    let long = "x".repeat(10_000);
    let mhc = mhc_v1beta1(
        &long,
        "tkc",
        serde_json::json!({"matchLabels": {"cluster.x-k8s.io/control-plane": ""}}),
    );
    let machines = [cp("m")];
    let refs: Vec<&DynamicObject> = machines.iter().collect();
    let many: Vec<DynamicObject> = (0..50).map(|_| mhc.clone()).collect();
    let f = facts(
        &cluster(serde_json::json!({})),
        None,
        &refs,
        &many,
        Some(&long),
    );
    assert_eq!(f.health_checks.len(), MAX_HEALTH_CHECKS);
    assert!(f.health_checks[0].name.len() <= 256);
    assert!(f.unread.unwrap().len() <= 256);
}
