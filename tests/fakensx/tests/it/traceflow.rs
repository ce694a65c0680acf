//! Traceflow's lifecycle (create, status IN_PROGRESS then FINISHED, observations, delete) and
//! its answers: the fake's own first-match DFW evaluation on each world, and an oracle the
//! harness gives.

use std::time::{Duration, Instant};

use etcdnet_fakensx::{FakeNsx, RuleRef, Side, TraceflowOutcome};
use serde_json::{json, Value};

use crate::common::{Client, PORT_4RZ8M, TRACER};

const TF: &str = "/policy/api/v1/infra/traceflows";

fn syn(from_port: &str, to: &str, port: u16) -> Value {
    json!({
        "segment_port_path": from_port,
        "packet": {
            "resource_type": "FieldsPacketData",
            "frame_size": 128,
            "ip_header": {"dst_ip": to, "protocol": 6, "ttl": 64},
            "transport_header": {"tcp_header": {"src_port": 40000, "dst_port": port, "tcp_flags": 2}}
        },
        "timeout": 10000
    })
}

/// Runs one traceflow to its end and deletes it: (its status, its observations).
fn run(c: &Client, prefix: &str, id: &str, config: &Value) -> (Value, Vec<Value>) {
    let path = format!("{prefix}/{id}");
    let r = c.put_json(&path, config);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let t = Instant::now();
    let status = loop {
        let s = c.get(&format!("{path}/status")).json();
        if s["operation_state"] != "IN_PROGRESS" {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "never finished: {s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let obs = c.get(&format!("{path}/observations")).json();
    assert_eq!(c.delete(&path).status, 200);
    (
        status,
        obs["results"].as_array().cloned().unwrap_or_default(),
    )
}

fn of_kind<'a>(obs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    obs.iter().filter(|o| o["resource_type"] == kind).collect()
}

#[test]
fn lifecycle_and_the_infrastructure_drop() {
    let nsx = FakeNsx::start_world("infra-drop-2380").unwrap();
    nsx.set_observation_delay(Duration::from_millis(300));
    let c = Client::basic(&nsx, TRACER);
    let path = format!("{TF}/etcd-1");
    let created = c
        .put_json(&path, &syn(PORT_4RZ8M, "198.18.0.12", 2380))
        .json();
    assert_eq!(created["resource_type"], "TraceflowConfig");
    assert_eq!(created["path"], "/infra/traceflows/etcd-1");
    // Observations appear after a while, as on a real manager.
    let early = c.get(&format!("{path}/status")).json();
    assert_eq!(early["operation_state"], "IN_PROGRESS");
    assert_eq!(
        c.get(&format!("{path}/observations")).json()["result_count"],
        0
    );
    assert_eq!(c.get(&path).json()["segment_port_path"], PORT_4RZ8M);
    assert_eq!(c.get(TF).json()["result_count"], 1);
    std::thread::sleep(Duration::from_millis(350));
    let status = c.get(&format!("{path}/status")).json();
    assert_eq!(status["operation_state"], "FINISHED");
    assert_eq!(status["request_status"], "SUCCESS");
    assert_eq!(status["logical_counters"]["dropped_count"], 1);
    assert_eq!(status["logical_counters"]["delivered_count"], 0);
    let obs = c.get(&format!("{path}/observations")).json();
    let obs = obs["results"].as_array().unwrap();
    let dropped = of_kind(obs, "TraceflowObservationDropped");
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0]["component_type"], "DFW");
    assert_eq!(dropped[0]["reason"], "FW_RULE");
    assert_eq!(dropped[0]["acl_rule_id"], 3042);
    assert_eq!(
        dropped[0]["acl_rule_path"],
        "/infra/domains/default/security-policies/infra-hardening/rules/drop-etcd-peer"
    );
    assert!(of_kind(obs, "TraceflowObservationDelivered").is_empty());
    assert_eq!(nsx.traceflows_live().len(), 1);
    assert_eq!(c.delete(&path).status, 200);
    assert!(nsx.traceflows_live().is_empty());
    let deleted = nsx.traceflows_deleted();
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].user, "tracer");
    assert_eq!(
        deleted[0].outcome,
        Some(TraceflowOutcome::Dropped {
            rule: RuleRef {
                rule_id: 3042,
                path:
                    "/infra/domains/default/security-policies/infra-hardening/rules/drop-etcd-peer"
                        .into()
            },
            side: Side::Source
        })
    );
    assert_eq!(c.get(&format!("{path}/status")).status, 404);
    // etcd's client port is not the rule's: delivered, by the default rule.
    nsx.set_observation_delay(Duration::ZERO);
    let (status, obs) = run(&c, TF, "etcd-2379", &syn(PORT_4RZ8M, "198.18.0.13", 2379));
    assert_eq!(status["logical_counters"]["delivered_count"], 1);
    let delivered = of_kind(&obs, "TraceflowObservationDelivered");
    assert_eq!(delivered[0]["lport_name"], "tkc-prod-7xk2p-bx2lk-eth0");
    let fw: Vec<_> = of_kind(&obs, "TraceflowObservationForwarded")
        .into_iter()
        .filter(|o| o["component_type"] == "DFW")
        .collect();
    assert_eq!(fw[0]["acl_rule_id"], 2);
}

#[test]
fn a_higher_category_allow_wins_over_an_application_drop() {
    let nsx = FakeNsx::start_world("allow-before-app-drop").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    let (status, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.12", 2380));
    assert_eq!(status["logical_counters"]["dropped_count"], 0);
    assert_eq!(of_kind(&obs, "TraceflowObservationDelivered").len(), 1);
    let dfw: Vec<_> = obs
        .iter()
        .filter(|o| o["component_type"] == "DFW")
        .collect();
    assert!(dfw.iter().all(|o| o["acl_rule_id"] == 4001), "{dfw:?}");
}

#[test]
fn no_rule_drops_and_the_default_allow_decides() {
    let nsx = FakeNsx::start_world("no-drop").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    for (to, port) in [("198.18.0.12", 2380), ("198.18.0.13", 2379)] {
        let (_, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, to, port));
        assert_eq!(
            of_kind(&obs, "TraceflowObservationDelivered").len(),
            1,
            "{to}:{port}"
        );
    }
    // The world's other drops do decide what they cover.
    let (_, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.12", 8080));
    assert_eq!(
        of_kind(&obs, "TraceflowObservationDropped")[0]["acl_rule_id"],
        5003
    );
    let (_, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.12", 22));
    assert_eq!(
        of_kind(&obs, "TraceflowObservationDropped")[0]["acl_rule_id"],
        5002
    );
    assert_eq!(nsx.traceflows_deleted().len(), 4);
    assert_eq!(nsx.max_traceflows_alive(), 1);
}

#[test]
fn the_vpc_drop_under_the_project_traceflows() {
    let nsx = FakeNsx::start_world("vpc-drop-2380").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    let port = "/orgs/default/projects/proj-tkg/vpcs/ns-prod/subnets/tkc-prod-vnet/ports/tkc-prod-7xk2p-9qtvw-tkc-prod-vnet-eth0";
    let (_, obs) = run(
        &c,
        "/policy/api/v1/orgs/default/projects/proj-tkg/infra/traceflows",
        "t",
        &syn(port, "198.18.0.11", 2380),
    );
    let d = of_kind(&obs, "TraceflowObservationDropped");
    assert_eq!(d[0]["acl_rule_id"], 6001);
    assert_eq!(
        nsx.traceflows_deleted()[0].path,
        "/orgs/default/projects/proj-tkg/infra/traceflows/t"
    );
}

#[test]
fn an_oracle_given_by_the_harness_answers_instead() {
    let nsx = FakeNsx::start_world("no-drop").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    // As a lab test would: the fabric's drop named as one of the world's rules.
    let rule = nsx
        .world()
        .rule_ref("/infra/domains/default/security-policies/app-hardening/rules/reject-8080")
        .unwrap();
    assert_eq!(rule.rule_id, 5003);
    nsx.set_oracle(move |q| {
        if q.dst_port == 2380 && q.dst_ip.to_string() == "198.18.0.13" {
            TraceflowOutcome::Dropped {
                rule: rule.clone(),
                side: Side::Destination,
            }
        } else {
            TraceflowOutcome::Delivered { allowed_by: vec![] }
        }
    });
    let c = Client::basic(&nsx, TRACER);
    let (_, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.13", 2380));
    let d = of_kind(&obs, "TraceflowObservationDropped");
    assert_eq!(
        (
            d[0]["acl_rule_id"].clone(),
            d[0]["transport_node_name"].clone()
        ),
        (json!(5003), json!("esx-02.fake"))
    );
    let (_, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.12", 2380));
    assert_eq!(of_kind(&obs, "TraceflowObservationDelivered").len(), 1);
    let q = nsx.traceflows_deleted()[0].query.clone().unwrap();
    assert_eq!(q.source_vm_name.as_deref(), Some("tkc-prod-7xk2p-4rz8m"));
    assert_eq!(q.src_ip.to_string(), "198.18.0.11");
    assert_eq!(
        q.dest_vm.as_deref(),
        Some("98b24591-15be-5032-b15a-2795e6de6418")
    );
}

#[test]
fn bad_configs_and_unknown_ports() {
    let nsx = FakeNsx::start_world("article").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    let r = c.put_json(&format!("{TF}/x"), &json!({"packet": {}}));
    assert_eq!(r.status, 400);
    let mut fin = syn(PORT_4RZ8M, "198.18.0.12", 2380);
    fin["packet"]["transport_header"]["tcp_header"]["tcp_flags"] = json!(1);
    assert_eq!(c.put_json(&format!("{TF}/x"), &fin).status, 400);
    let mut wide = syn(PORT_4RZ8M, "198.18.0.12", 2380);
    wide["packet"]["transport_header"]["tcp_header"]["dst_port"] = json!(65536 + 2380);
    assert_eq!(c.put_json(&format!("{TF}/x"), &wide).status, 400);
    assert!(nsx.traceflows_live().is_empty());
    let (status, obs) = run(
        &c,
        TF,
        "ghost",
        &syn("/infra/segments/s/ports/nope", "198.18.0.12", 2380),
    );
    assert_eq!(status["operation_state"], "FAILED");
    assert_eq!(status["request_status"], "SOURCE_PORT_NOT_FOUND");
    assert!(obs.is_empty());
    // A destination NSX does not know: forwarded out of its view, never delivered.
    let (_, obs) = run(&c, TF, "out", &syn(PORT_4RZ8M, "203.0.113.9", 2380));
    assert!(of_kind(&obs, "TraceflowObservationDelivered").is_empty());
    assert!(!of_kind(&obs, "TraceflowObservationForwarded").is_empty());
}

/// The Ethernet header as `EthernetHeader` takes it: well-formed MACs, an `eth_type` in range,
/// no other property; the frame's type picks its IP header (an IPv6 header in a frame left at
/// the IPv4 default has no destination); the documented packet (both MACs, `src_ip`) runs.
#[test]
fn the_ethernet_header_and_the_frames_ip_header() {
    let nsx = FakeNsx::start_world("article").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    let with_eth = |eth: Value| {
        let mut p = syn(PORT_4RZ8M, "198.18.0.12", 2380);
        p["packet"]["eth_header"] = eth;
        p
    };
    for bad in [
        json!({"src_mac": "00:50:56:a1:14"}),
        json!({"dst_mac": "00:50:56:a1:14:1c; x"}),
        json!({"eth_type": 0}),
        json!({"eth_type": 70000}),
        json!({"vlan": 5}),
    ] {
        let r = c.put_json(&format!("{TF}/x"), &with_eth(bad.clone()));
        assert_eq!(r.status, 400, "{bad}");
    }
    let v6_in_v4 = json!({"segment_port_path": PORT_4RZ8M, "packet": {
        "resource_type": "FieldsPacketData",
        "ipv6_header": {"dst_ip": "fd00::12"},
        "transport_header": {"tcp_header": {"dst_port": 2380, "tcp_flags": 2}}}});
    assert_eq!(c.put_json(&format!("{TF}/x"), &v6_in_v4).status, 400);
    let mut v6 = v6_in_v4.clone();
    v6["packet"]["eth_header"] = json!({"eth_type": 34525});
    assert_eq!(c.put_json(&format!("{TF}/v6"), &v6).status, 200);
    assert_eq!(c.delete(&format!("{TF}/v6")).status, 200);
    let mut documented =
        with_eth(json!({"src_mac": "00:50:56:a1:14:1b", "dst_mac": "00:50:56:a1:14:1c"}));
    documented["packet"]["ip_header"]["src_ip"] = json!("198.18.0.11");
    let (status, _) = run(&c, TF, "doc", &documented);
    assert_eq!(status["operation_state"], "FINISHED");
    // The creates and deletes in the order they took effect.
    let ops: Vec<(String, String, bool)> = nsx
        .traceflow_ops()
        .into_iter()
        .map(|o| (o.method, o.path, o.existed))
        .collect();
    assert_eq!(
        ops,
        [
            ("PUT".into(), "/infra/traceflows/v6".into(), true),
            ("DELETE".into(), "/infra/traceflows/v6".into(), true),
            ("PUT".into(), "/infra/traceflows/doc".into(), true),
            ("DELETE".into(), "/infra/traceflows/doc".into(), true),
        ]
    );
}

#[test]
fn observation_type_families() {
    use etcdnet_fakensx::ObservationFlavour;
    let nsx = FakeNsx::start_world("infra-drop-2380").unwrap();
    nsx.set_observation_delay(Duration::ZERO);
    let c = Client::basic(&nsx, TRACER);
    for (flavour, dropped) in [
        (ObservationFlavour::Base, "TraceflowObservationDropped"),
        (
            ObservationFlavour::Logical,
            "TraceflowObservationDroppedLogical",
        ),
        (
            ObservationFlavour::Policy,
            "PolicyTraceflowObservationDroppedLogical",
        ),
    ] {
        nsx.set_observation_flavour(flavour);
        let (status, obs) = run(&c, TF, "t", &syn(PORT_4RZ8M, "198.18.0.12", 2380));
        let d = of_kind(&obs, dropped);
        assert_eq!(d.len(), 1, "{flavour:?}: {obs:?}");
        assert_eq!(d[0]["acl_rule_id"], 3042);
        assert_eq!(
            status["logical_counters"]["dropped_count"], 1,
            "{flavour:?}"
        );
        // The physical hops keep their base names.
        assert_eq!(
            of_kind(&obs, "TraceflowObservationReceived").len(),
            1,
            "{flavour:?}"
        );
    }
}
