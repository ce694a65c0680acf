//! Unit tests of `extract`.

use super::*;
use serde_json::json;

#[test]
fn ip_per_version() {
    let v1a1 = json!({"status": {"vmIp": "198.18.0.11", "powerState": "poweredOn"}});
    let v1a3 =
        json!({"status": {"network": {"primaryIP4": "198.18.0.12"}, "powerState": "PoweredOn"}});
    let v6 = json!({"status": {"network": {"primaryIP4": "", "primaryIP6": "2001:db8::13"}}});
    let none = json!({"status": {"network": {}}});
    let garbage =
        json!({"status": {"network": {"primaryIP4": "not-an-ip"}, "vmIp": "198.18.0.14"}});
    assert_eq!(vm_ip(&v1a1), Some("198.18.0.11".parse().unwrap()));
    assert_eq!(vm_ip(&v1a3), Some("198.18.0.12".parse().unwrap()));
    assert_eq!(vm_ip(&v6), Some("2001:db8::13".parse().unwrap()));
    assert_eq!(vm_ip(&none), None);
    assert_eq!(vm_ip(&json!({})), None);
    assert_eq!(vm_ip(&garbage), Some("198.18.0.14".parse().unwrap()));
}

#[test]
fn ip4_wins_over_ip6() {
    let both =
        json!({"status": {"network": {"primaryIP4": "198.18.0.12", "primaryIP6": "2001:db8::12"}}});
    assert_eq!(vm_ip(&both), Some("198.18.0.12".parse().unwrap()));
}

#[test]
fn power_is_normalised() {
    for (raw, want) in [
        ("poweredOn", PowerState::PoweredOn),
        ("PoweredOn", PowerState::PoweredOn),
        ("poweredOff", PowerState::PoweredOff),
        ("PoweredOff", PowerState::PoweredOff),
        ("suspended", PowerState::Suspended),
        ("Suspended", PowerState::Suspended),
        ("weird", PowerState::Unknown),
    ] {
        assert_eq!(
            vm_power(&json!({"status": {"powerState": raw}})),
            want,
            "{raw}"
        );
    }
    assert_eq!(vm_power(&json!({})), PowerState::Unknown);
}

#[test]
fn control_plane_ref_both_forms() {
    let b1 = json!({"spec": {"controlPlaneRef": {
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
        "name": "tkc-prod-cp", "namespace": "ns"}}});
    let b2 = json!({"spec": {"controlPlaneRef": {
        "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "tkc-prod-cp"}}});
    let r1 = control_plane_ref(&b1).unwrap();
    assert_eq!(r1.group, "controlplane.cluster.x-k8s.io");
    assert_eq!(r1.version.as_deref(), Some("v1beta1"));
    let r2 = control_plane_ref(&b2).unwrap();
    assert_eq!(r2.group, "controlplane.cluster.x-k8s.io");
    assert_eq!(r2.version, None);
    assert_eq!(r2.name, "tkc-prod-cp");
    assert_eq!(control_plane_ref(&json!({"spec": {}})), None);
}

#[test]
fn kcp_v1beta1_plain() {
    let d = json!({"spec": {"replicas": 3, "version": "v1.30.1"},
        "status": {"replicas": 3, "readyReplicas": 0, "updatedReplicas": 3, "unavailableReplicas": 3,
          "conditions": [
            {"type": "Ready", "status": "False", "severity": "Error", "reason": "x"},
            {"type": "EtcdClusterHealthy", "status": "False", "severity": "Error", "reason": "EtcdClusterUnhealthy", "message": "etcd members unhealthy"},
            {"type": "MachinesReady", "status": "False"}]}});
    let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta1", &d);
    assert_eq!(
        (k.desired, k.replicas, k.ready, k.available, k.up_to_date),
        (Some(3), Some(3), Some(0), Some(0), Some(3))
    );
    let kinds: Vec<_> = k.conditions.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["Ready", "EtcdClusterHealthy"]);
    assert_eq!(k.conditions[1].severity.as_deref(), Some("Error"));
}

#[test]
fn kcp_v1beta1_with_v1beta2_block() {
    let d = json!({"spec": {"replicas": 3},
        "status": {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "unavailableReplicas": 0,
          "v1beta2": {"readyReplicas": 3, "availableReplicas": 2, "upToDateReplicas": 3,
            "conditions": [{"type": "EtcdClusterHealthy", "status": "True", "reason": "Healthy"}]},
          "conditions": [{"type": "EtcdClusterHealthy", "status": "True"}, {"type": "Ready", "status": "True"}]}});
    let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta1", &d);
    assert_eq!(
        (k.ready, k.available, k.up_to_date),
        (Some(3), Some(2), Some(3))
    );
    assert_eq!(k.conditions.len(), 2);
    assert_eq!(k.conditions[0].reason.as_deref(), Some("Healthy"));
}

#[test]
fn kcp_v1beta2() {
    let d = json!({"spec": {"replicas": 3},
        "status": {"replicas": 3, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 3,
          "conditions": [{"type": "EtcdClusterHealthy", "status": "False", "reason": "NotHealthy", "message": "* Machine m1: etcd member is not healthy"}],
          "deprecated": {"v1beta1": {"readyReplicas": 1, "updatedReplicas": 3, "unavailableReplicas": 2}}}});
    let k = kcp("cp", "controlplane.cluster.x-k8s.io/v1beta2", &d);
    assert_eq!(
        (k.desired, k.ready, k.available, k.up_to_date),
        (Some(3), Some(1), Some(1), Some(3))
    );
    assert_eq!(k.conditions[0].status, "False");
}

#[test]
fn machine_fields() {
    let d = json!({"spec": {"infrastructureRef": {"name": "tkc-prod-abc-1"}, "version": "v1.30.1"},
        "status": {"phase": "Running", "nodeRef": {"name": "tkc-prod-abc-1"},
          "addresses": [{"type": "InternalIP", "address": "198.18.0.11"}, {"type": "Hostname"}]}});
    let m = machine("tkc-prod-abc-1", &d);
    assert_eq!(m.phase.as_deref(), Some("Running"));
    assert_eq!(m.node_name.as_deref(), Some("tkc-prod-abc-1"));
    assert_eq!(m.addresses.len(), 1);
    let empty = machine("m", &json!({}));
    assert_eq!(empty.phase, None);
    assert!(empty.addresses.is_empty());
    assert!(empty.etcd_conditions.is_empty());
}

fn kinds_and_status(c: &[Condition]) -> Vec<(&str, &str)> {
    c.iter()
        .map(|c| (c.kind.as_str(), c.status.as_str()))
        .collect()
}

/// CAPI v1beta1 (before 1.9): only `status.conditions[]`, CAPI's own type with a severity.
#[test]
fn machine_etcd_conditions_v1beta1() {
    let d = json!({"status": {"conditions": [
        {"type": "Ready", "status": "False", "severity": "Error", "reason": "EtcdMemberUnhealthy"},
        {"type": "EtcdPodHealthy", "status": "True", "lastTransitionTime": "2025-06-01T12:00:00Z"},
        {"type": "APIServerPodHealthy", "status": "True"},
        {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
         "reason": "EtcdMemberUnhealthy",
         "message": "Etcd member status reports errors: etcdserver: no leader"}]}});
    let m = machine("m1", &d);
    assert_eq!(
        kinds_and_status(&m.etcd_conditions),
        [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")],
        "etcd ones only, member first"
    );
    let member = &m.etcd_conditions[0];
    assert_eq!(member.severity.as_deref(), Some("Error"));
    assert_eq!(member.reason.as_deref(), Some("EtcdMemberUnhealthy"));
    assert_eq!(
        member.message.as_deref(),
        Some("Etcd member status reports errors: etcdserver: no leader")
    );
    assert_eq!(m.etcd_conditions[1].reason, None);
}

/// CAPI 1.9/1.10 serving v1beta1: the metav1 conditions under `status.v1beta2` win over the
/// v1beta1 ones of the same type; a type only in the old list is still read.
#[test]
fn machine_etcd_conditions_v1beta1_with_v1beta2_block() {
    let d = json!({"status": {
        "conditions": [
            {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
             "reason": "EtcdMemberUnhealthy", "message": "Etcd member reports alarms: NOSPACE"},
            {"type": "EtcdPodHealthy", "status": "True"}],
        "v1beta2": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "NotReady"},
            {"type": "EtcdMemberHealthy", "status": "False", "reason": "NotHealthy",
             "message": "Etcd reports alarms: NOSPACE", "observedGeneration": 2}]}}});
    let c = machine("m1", &d).etcd_conditions;
    assert_eq!(
        kinds_and_status(&c),
        [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")]
    );
    assert_eq!(c[0].reason.as_deref(), Some("NotHealthy"));
    assert_eq!(
        c[0].message.as_deref(),
        Some("Etcd reports alarms: NOSPACE")
    );
    assert_eq!(c[0].severity, None, "metav1 conditions have no severity");
}

/// CAPI 1.11+ serving v1beta2: metav1 `status.conditions[]`, the old ones under
/// `status.deprecated.v1beta1.conditions[]`.
#[test]
fn machine_etcd_conditions_v1beta2() {
    let d = json!({"status": {
        "conditions": [
            {"type": "EtcdPodHealthy", "status": "Unknown", "reason": "ConnectionDown",
             "message": "Last successful probe at 2025-06-03T08:13:52Z"},
            {"type": "Available", "status": "True", "reason": "Available"}],
        "deprecated": {"v1beta1": {"conditions": [
            {"type": "EtcdPodHealthy", "status": "True"},
            {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
             "reason": "EtcdMemberUnhealthy", "message": "Failed to get etcd members"}]}}}});
    let c = machine("m1", &d).etcd_conditions;
    assert_eq!(
        kinds_and_status(&c),
        [
            ("EtcdMemberHealthy", "False"),
            ("EtcdPodHealthy", "Unknown")
        ]
    );
    assert_eq!(c[0].severity.as_deref(), Some("Error"), "from the old list");
    assert_eq!(c[1].reason.as_deref(), Some("ConnectionDown"));
}

/// A served object may say anything: no list, a list of junk, a condition without a type or
/// status, the same type twice (the first is kept).
#[test]
fn machine_etcd_conditions_odd_shapes() {
    for d in [
        json!({}),
        json!({"status": {"conditions": "EtcdMemberHealthy"}}),
        json!({"status": {"conditions": [1, null, {"status": "False"}]}}),
    ] {
        assert!(machine_etcd_conditions(&d).is_empty(), "{d}");
    }
    let d = json!({"status": {"conditions": [
        {"type": "EtcdMemberHealthy"},
        {"type": "EtcdMemberHealthy", "status": "True"}]}});
    assert_eq!(
        kinds_and_status(&machine_etcd_conditions(&d)),
        [("EtcdMemberHealthy", "Unknown")]
    );
}

/// `lastTransitionTime` is kept as written, in both shapes; absent, it is None.
#[test]
fn conditions_keep_their_transition_time() {
    let d = json!({"status": {
        "conditions": [
            {"type": "EtcdMemberHealthy", "status": "False", "severity": "Error",
             "lastTransitionTime": "2025-06-03T08:14:07Z"},
            {"type": "EtcdPodHealthy", "status": "True"}],
        "v1beta2": {"conditions": [
            {"type": "EtcdMemberHealthy", "status": "False", "reason": "NotHealthy",
             "lastTransitionTime": "2025-06-03T08:14:09Z"}]}}});
    let c = machine_etcd_conditions(&d);
    assert_eq!(
        c[0].last_transition_time.as_deref(),
        Some("2025-06-03T08:14:09Z"),
        "the metav1 one wins, with its own time"
    );
    assert_eq!(c[1].last_transition_time, None);
    let k = kcp(
        "cp",
        "controlplane.cluster.x-k8s.io/v1beta1",
        &json!({"status": {"conditions": [{"type": "EtcdClusterHealthy", "status": "False",
            "lastTransitionTime": "2025-06-03T08:14:07Z"}]}}),
    );
    assert_eq!(
        k.conditions[0].last_transition_time.as_deref(),
        Some("2025-06-03T08:14:07Z")
    );
}

/// The fixture sets' Machines, as the fake API serves them: quorum-lost (v1beta1) says every
/// member is unhealthy, kcp-v1beta2 (v1beta2) that every member is healthy.
#[test]
fn machine_etcd_conditions_of_the_fixture_sets() {
    let machines = |set: &str| -> Vec<(String, Vec<Condition>)> {
        let path = format!(
            "{}/tests/fixtures/supervisor/{set}/30-machines.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        serde_yaml_ng::Deserializer::from_str(&text)
            .map(|doc| Value::deserialize(doc).unwrap())
            .filter(|o| {
                o["kind"] == "Machine"
                    && o.pointer("/metadata/labels/cluster.x-k8s.io~1control-plane")
                        .is_some()
            })
            .map(|o| {
                let name = o["metadata"]["name"].as_str().unwrap().to_string();
                (name, machine_etcd_conditions(&o))
            })
            .collect()
    };
    let lost = machines("quorum-lost");
    assert_eq!(lost.len(), 3);
    for (name, c) in &lost {
        assert_eq!(
            kinds_and_status(c),
            [("EtcdMemberHealthy", "False"), ("EtcdPodHealthy", "True")],
            "{name}"
        );
        assert_eq!(c[0].severity.as_deref(), Some("Error"), "{name}");
        assert!(
            c[0].message
                .as_deref()
                .is_some_and(|m| m.contains("etcdserver: no leader")),
            "{name}: {c:?}"
        );
    }
    let v1beta2 = machines("kcp-v1beta2");
    assert_eq!(v1beta2.len(), 3);
    for (name, c) in &v1beta2 {
        assert_eq!(
            kinds_and_status(c),
            [("EtcdMemberHealthy", "True"), ("EtcdPodHealthy", "True")],
            "{name}"
        );
        assert!(
            c.iter().all(|c| c.severity.is_none()),
            "{name}: metav1 shape"
        );
        assert_eq!(c[0].reason.as_deref(), Some("Healthy"), "{name}");
    }
}

/// vm-operator keeps only `status.network.config` when the guest reports nothing
/// (update_status.go): its first interface address is the VM's, said so; the guest's fields
/// still win; the address rule holds for both.
#[test]
fn network_config_when_the_guest_says_nothing() {
    let config_only = json!({"status": {"network": {"config": {"interfaces": [
        {"name": "eth0", "ip": {"addresses": ["garbage", "198.18.0.13/24"], "gateway4": "198.18.0.1/24"}},
        {"name": "eth1", "ip": {"addresses": ["198.19.0.13/24"]}}]}}}});
    assert_eq!(
        vm_config_ips(&config_only),
        [
            "198.18.0.13".parse::<IpAddr>().unwrap(),
            "198.19.0.13".parse().unwrap()
        ]
    );
    assert_eq!(vm_ip(&config_only), None);
    assert_eq!(
        vm_address_sourced(&config_only),
        (
            Some("198.18.0.13".parse().unwrap()),
            None,
            AddressSource::NetworkConfig
        )
    );
    let both = json!({"status": {"network": {"primaryIP4": "198.18.0.12",
        "config": {"interfaces": [{"name": "eth0", "ip": {"addresses": ["198.18.0.99/24"]}}]}}}});
    assert_eq!(
        vm_address_sourced(&both),
        (
            Some("198.18.0.12".parse().unwrap()),
            None,
            AddressSource::Guest
        )
    );
    let loopback = json!({"status": {"network": {"config": {"interfaces": [
        {"name": "eth0", "ip": {"addresses": ["127.0.0.1/8"]}}]}}}});
    assert_eq!(
        vm_address_sourced(&loopback),
        (
            None,
            Some("127.0.0.1".parse().unwrap()),
            AddressSource::NetworkConfig
        )
    );
    let v6 = json!({"status": {"network": {"config": {"interfaces": [
        {"name": "eth0", "ip": {"addresses": ["2001:db8:0:3::13/64"]}}]}}}});
    assert_eq!(vm_address(&v6).0, Some("2001:db8:0:3::13".parse().unwrap()));
    assert_eq!(
        vm_address_sourced(&json!({"status": {}})),
        (None, None, AddressSource::Guest)
    );
}

/// The ESXi host: `status.host` until v1alpha3, `status.nodeName` from v1alpha4; the zone.
#[test]
fn host_and_zone_per_version() {
    let v3 = json!({"status": {"host": "esx-01.vsphere.local", "zone": "zone-a"}});
    let v5 = json!({"status": {"nodeName": "esx-02.vsphere.local"}});
    assert_eq!(vm_host(&v3).as_deref(), Some("esx-01.vsphere.local"));
    assert_eq!(vm_zone(&v3).as_deref(), Some("zone-a"));
    assert_eq!(vm_host(&v5).as_deref(), Some("esx-02.vsphere.local"));
    assert_eq!(vm_zone(&v5), None);
    assert_eq!(vm_host(&json!({"status": {"host": ""}})), None);
}
