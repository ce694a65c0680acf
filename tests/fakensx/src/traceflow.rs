//! Traceflow as the Policy API serves it. Paths (vmware/vsphere-automation-sdk-go
//! `services/nsxt/infra/TraceflowsTypes.go`, `services/nsxt/infra/traceflows/StatusTypes.go`,
//! `…/ObservationsTypes.go`): `PUT|GET|DELETE /policy/api/v1/infra/traceflows/{id}` with a
//! `TraceflowConfig`, `GET …/{id}/status` answering a `Traceflow` (`operation_state`,
//! `logical_counters`, `counters`, `analysis`, `request_status`; its fields as the API
//! reference's `Traceflow` schema), `GET …/{id}/observations` answering a
//! `TraceflowObservationListResult`. The same under `/orgs/<org>/projects/<p>/infra/traceflows`
//! (the API reference's UpdateTraceflowConfig lists both).
//!
//! The config (the reference's example for UpdateTraceflowConfig): `segment_port_path` (newer
//! managers also take `source_element_path`; both read here), `packet` a `FieldsPacketData`
//! (`ip_header {src_ip, dst_ip, protocol}`, `transport_header {tcp_header {src_port, dst_port,
//! tcp_flags}}`, `resource_type`), `timeout`. Observations: `resource_type`
//! `TraceflowObservationReceived|Forwarded|Dropped|Delivered`, `component_type` (`DFW`, `LS`,
//! `PHYSICAL`), a drop by the DFW with `reason: FW_RULE`, `acl_rule_id` and (Policy API)
//! `acl_rule_path` (schema PolicyTraceflowObservationDropped).
//!
//! The packet's headers as the API reference's schemas have them, checked no further than they
//! say: `EthernetHeader` (`additionalProperties: false`; `src_mac`/`dst_mac` of the form
//! `^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$`; `eth_type` 1..65535, "defaults to IPv4", 2048),
//! `Ipv4Header` (`ip_header`) and `Ipv6Header` (`ipv6_header`: `src_ip`, `dst_ip`, `next_header`,
//! `hop_limit`). The frame is what `eth_type` says: IPv4 reads `ip_header`, 34525 (0x86DD)
//! `ipv6_header`; an IPv6 header in a frame left at the IPv4 default has no IPv4 destination
//! (400), as the least a manager may make of it.

use std::net::IpAddr;

use serde_json::{json, Value};

use crate::dfw::{Protocol, RuleRef, Side, TraceflowOutcome, TraceflowQuery};
use crate::world::World;

/// Why a TraceflowConfig cannot be run: the 400's message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("TraceflowConfig needs segment_port_path (or source_element_path)")]
    NoSource,
    #[error("TraceflowConfig needs packet.resource_type FieldsPacketData with the dst_ip of its frame's IP header (ip_header, or ipv6_header when eth_header.eth_type is 34525)")]
    NoDestination,
    #[error("packet.ip_header.{0} is not an IP address")]
    BadIp(&'static str),
    #[error("packet.transport_header needs tcp_header or udp_header with dst_port, or icmp_echo_request_header")]
    NoTransport,
    #[error("tcp_header.tcp_flags {0} has no SYN bit: the fake traces connection attempts only")]
    NotSyn(u64),
    #[error("packet.eth_header: {0}")]
    Ethernet(String),
}

/// `EthernetHeader` as its schema takes it; the frame's `eth_type` (2048 when absent).
fn eth_type(packet: &Value) -> Result<u64, ConfigError> {
    let Some(eth) = packet.get("eth_header") else {
        return Ok(2048);
    };
    let bad = |why: &str| ConfigError::Ethernet(why.to_string());
    let eth = eth.as_object().ok_or_else(|| bad("not an object"))?;
    if let Some(k) = eth
        .keys()
        .find(|k| !matches!(k.as_str(), "src_mac" | "dst_mac" | "eth_type"))
    {
        return Err(bad(&format!("unknown property {k}")));
    }
    for k in ["src_mac", "dst_mac"] {
        if let Some(m) = eth.get(k) {
            if !m.as_str().is_some_and(is_mac) {
                return Err(bad(&format!("{k} is not a MAC address")));
            }
        }
    }
    match eth.get("eth_type") {
        None => Ok(2048),
        Some(t) => t
            .as_u64()
            .filter(|t| (1..=65535).contains(t))
            .ok_or_else(|| bad("eth_type is not an integer in 1..65535")),
    }
}

/// `^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$`
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 17
        && b.iter().enumerate().all(|(i, c)| {
            if i % 3 == 2 {
                *c == b':' || *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// Reads a TraceflowConfig into a query; the port found in the world when it is there
/// (`Ok(None)` source VM for a port the world does not know).
pub fn query(world: &World, config: &Value) -> Result<TraceflowQuery, ConfigError> {
    let source = config
        .get("segment_port_path")
        .or_else(|| config.get("source_element_path"))
        .and_then(Value::as_str)
        .ok_or(ConfigError::NoSource)?
        .to_string();
    let packet = config.get("packet").ok_or(ConfigError::NoDestination)?;
    if packet
        .get("resource_type")
        .and_then(Value::as_str)
        .unwrap_or("FieldsPacketData")
        != "FieldsPacketData"
    {
        return Err(ConfigError::NoDestination);
    }
    let ip_header = match eth_type(packet)? {
        34525 => "ipv6_header",
        _ => "ip_header",
    };
    let dst_ip: IpAddr = packet
        .get(ip_header)
        .and_then(|h| h.get("dst_ip"))
        .and_then(Value::as_str)
        .ok_or(ConfigError::NoDestination)?
        .parse()
        .map_err(|_| ConfigError::BadIp("dst_ip"))?;
    let port = world.port(&source);
    let vm = port.and_then(|p| world.vm_of_port(p));
    let vm_id = vm
        .and_then(|v| v.get("external_id").and_then(Value::as_str))
        .map(str::to_string);
    let src_ip = match packet
        .get(ip_header)
        .and_then(|h| h.get("src_ip"))
        .and_then(Value::as_str)
    {
        Some(s) => s.parse().map_err(|_| ConfigError::BadIp("src_ip"))?,
        // Absent: the port's VIF's address of the frame's family.
        None => port
            .and_then(|p| world.vif_of_port(p))
            .and_then(|v| {
                World::vif_ips(v)
                    .into_iter()
                    .find(|ip| ip.is_ipv6() == dst_ip.is_ipv6())
            })
            .unwrap_or(if dst_ip.is_ipv6() {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0, 0, 0, 0])
            }),
    };
    let th = packet
        .get("transport_header")
        .ok_or(ConfigError::NoTransport)?;
    // A port beyond 65535 is no port: refused as missing, never wrapped.
    let port_of = |h: &Value, k: &str| {
        h.get(k)
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
    };
    let (protocol, src_port, dst_port) = if let Some(t) = th.get("tcp_header") {
        let flags = t.get("tcp_flags").and_then(Value::as_u64).unwrap_or(2);
        if flags & 2 == 0 {
            return Err(ConfigError::NotSyn(flags));
        }
        (
            Protocol::Tcp,
            port_of(t, "src_port").unwrap_or(49152),
            port_of(t, "dst_port").ok_or(ConfigError::NoTransport)?,
        )
    } else if let Some(u) = th.get("udp_header") {
        (
            Protocol::Udp,
            port_of(u, "src_port").unwrap_or(49152),
            port_of(u, "dst_port").ok_or(ConfigError::NoTransport)?,
        )
    } else if th.get("icmp_echo_request_header").is_some() {
        (Protocol::Icmp, 0, 0)
    } else {
        return Err(ConfigError::NoTransport);
    };
    let dest_vm = world.vm_by_ip(dst_ip);
    let dest_port_path = dest_vm.and_then(|v| {
        let id = v.get("external_id")?.as_str()?;
        world
            .ports_of(id)
            .into_iter()
            .find(|p| {
                world
                    .vif_of_port(p)
                    .is_some_and(|vif| World::vif_ips(vif).contains(&dst_ip))
            })
            .and_then(|p| p.get("path").and_then(Value::as_str))
            .map(str::to_string)
    });
    Ok(TraceflowQuery {
        source_port_path: source,
        source_vm: vm_id,
        source_vm_name: vm
            .and_then(|v| v.get("display_name").and_then(Value::as_str))
            .map(str::to_string),
        src_ip,
        dst_ip,
        protocol,
        src_port,
        dst_port,
        dest_vm: dest_vm
            .and_then(|v| v.get("external_id").and_then(Value::as_str))
            .map(str::to_string),
        dest_port_path,
    })
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The observations of an outcome, in hop order, as a manager lists them.
pub fn observations(q: &TraceflowQuery, outcome: &TraceflowOutcome, now_ms: u64) -> Vec<Value> {
    let src_node = "esx-01.fake";
    let dst_node = "esx-02.fake";
    let mut out = Vec::new();
    let mut push = |mut o: Value, node: &str, seq: u64| {
        o["transport_node_name"] = json!(node);
        o["transport_node_id"] = json!(format!("tn-{node}"));
        o["transport_node_type"] = json!("ESX");
        o["sequence_no"] = json!(seq);
        o["timestamp"] = json!(now_ms);
        o["timestamp_micro"] = json!(now_ms * 1000);
        out.push(o);
    };
    let src_port = q.source_port_path.as_str();
    push(
        json!({"resource_type": "TraceflowObservationReceived", "component_type": "PHYSICAL",
               "component_name": "Physical", "component_sub_type": "UNKNOWN"}),
        src_node,
        0,
    );
    let dfw = |r: &RuleRef, port: &str| {
        json!({"component_type": "DFW", "component_name": "Distributed Firewall",
               "component_sub_type": "UNKNOWN", "acl_rule_id": r.rule_id,
               "acl_rule_path": r.path, "lport_id": last_segment(port),
               "lport_name": last_segment(port), "component_path": port})
    };
    let allowed = match outcome {
        TraceflowOutcome::Delivered { allowed_by } | TraceflowOutcome::Forwarded { allowed_by } => {
            allowed_by.clone()
        }
        TraceflowOutcome::Dropped { .. } => vec![],
    };
    let dropped = |r: &RuleRef, port: &str| {
        let mut o = dfw(r, port);
        o["resource_type"] = json!("TraceflowObservationDropped");
        o["reason"] = json!("FW_RULE");
        o
    };
    if let TraceflowOutcome::Dropped {
        rule,
        side: Side::Source,
    } = outcome
    {
        push(dropped(rule, src_port), src_node, 0);
        return out;
    }
    let mut fwd = json!({"resource_type": "TraceflowObservationForwarded", "component_type": "DFW",
                         "component_name": "Distributed Firewall", "component_sub_type": "UNKNOWN",
                         "lport_id": last_segment(src_port), "lport_name": last_segment(src_port)});
    if let Some(r) = allowed.first() {
        fwd["acl_rule_id"] = json!(r.rule_id);
        fwd["acl_rule_path"] = json!(r.path);
    }
    push(fwd, src_node, 0);
    push(
        json!({"resource_type": "TraceflowObservationForwarded", "component_type": "PHYSICAL",
               "component_name": "Physical", "component_sub_type": "UNKNOWN",
               "remote_ip_address": "192.0.2.2", "local_ip_address": "192.0.2.1"}),
        src_node,
        0,
    );
    if let TraceflowOutcome::Forwarded { .. } = outcome {
        return out;
    }
    let dst_port = q.dest_port_path.as_deref().unwrap_or("");
    push(
        json!({"resource_type": "TraceflowObservationReceived", "component_type": "PHYSICAL",
               "component_name": "Physical", "component_sub_type": "UNKNOWN",
               "remote_ip_address": "192.0.2.1", "local_ip_address": "192.0.2.2"}),
        dst_node,
        1,
    );
    if let TraceflowOutcome::Dropped {
        rule,
        side: Side::Destination,
    } = outcome
    {
        push(dropped(rule, dst_port), dst_node, 1);
        return out;
    }
    let mut fwd = json!({"resource_type": "TraceflowObservationForwarded", "component_type": "DFW",
                         "component_name": "Distributed Firewall", "component_sub_type": "UNKNOWN",
                         "lport_id": last_segment(dst_port), "lport_name": last_segment(dst_port)});
    if let Some(r) = allowed.get(1).or(allowed.first()) {
        fwd["acl_rule_id"] = json!(r.rule_id);
        fwd["acl_rule_path"] = json!(r.path);
    }
    push(fwd, dst_node, 1);
    push(
        json!({"resource_type": "TraceflowObservationDelivered", "component_type": "LS",
               "component_name": "segment", "component_sub_type": "UNKNOWN",
               "lport_id": last_segment(dst_port), "lport_name": last_segment(dst_port),
               "component_path": dst_port, "resolution_type": "UNKNOWN"}),
        dst_node,
        1,
    );
    out
}

/// Which `resource_type` names the observations carry. The API reference has three families
/// and which one a manager sends for a DFW hop is not settled here, so a client is tested
/// against each: the base types (`TraceflowObservationDropped`, the default), the logical
/// components' (`TraceflowObservationDroppedLogical`, `…ForwardedLogical`, `…ReceivedLogical`
/// for the DFW and segment hops), and the Policy API's (`PolicyTraceflowObservationDroppedLogical`,
/// `PolicyTraceflowObservationForwardedLogical`; schemas of the API reference, module
/// PolicyConnectivity).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ObservationFlavour {
    #[default]
    Base,
    Logical,
    Policy,
}

/// Renames the observations' `resource_type` for `flavour`.
pub fn flavoured(mut obs: Vec<Value>, flavour: ObservationFlavour) -> Vec<Value> {
    if flavour == ObservationFlavour::Base {
        return obs;
    }
    for o in &mut obs {
        let logical_hop = matches!(
            o.get("component_type").and_then(Value::as_str),
            Some("DFW" | "LS")
        );
        let kind = o
            .get("resource_type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !logical_hop || kind.ends_with("Delivered") {
            continue;
        }
        let mut renamed = format!("{kind}Logical");
        if flavour == ObservationFlavour::Policy && !renamed.ends_with("ReceivedLogical") {
            renamed = format!("Policy{renamed}");
        }
        o["resource_type"] = json!(renamed);
    }
    obs
}

/// The `logical_counters`/`counters` of a list of observations (any flavour).
pub fn counters(obs: &[Value]) -> Value {
    let count = |kind: &str| {
        obs.iter()
            .filter(|o| {
                o.get("resource_type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.contains(kind))
            })
            .count()
    };
    json!({
        "dropped_count": count("ObservationDropped"),
        "delivered_count": count("ObservationDelivered"),
        "forwarded_count": count("ObservationForwarded"),
        "received_count": count("ObservationReceived"),
        // TraceflowObservationCounters of newer managers (the API reference's Traceflow).
        "protected_count": 0,
    })
}
