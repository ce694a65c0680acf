//! The committed worlds are whole: every path a rule names exists, every VM has its VIF and
//! port, and the article's VMs are the `quorum-lost` set's (names, IPs, UUIDs).

use std::collections::BTreeSet;

use etcdnet_fakensx::members::IpSpec;
use etcdnet_fakensx::{world_dir, World};
use serde_json::Value;

fn worlds() -> Vec<(String, World)> {
    let root = world_dir("");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let w = World::from_dir(&p).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            out.push((name, w));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 5, "{out:?}");
    out
}

fn strs(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_a_rule_names_exists() {
    for (name, w) in worlds() {
        let groups: BTreeSet<String> = w
            .groups
            .iter()
            .filter_map(|g| g["path"].as_str().map(str::to_string))
            .collect();
        let services: BTreeSet<String> = w
            .services
            .iter()
            .filter_map(|s| s["path"].as_str().map(str::to_string))
            .collect();
        for (p, r) in w.rules() {
            let at = format!("{name}: {}", r["path"]);
            for k in ["source_groups", "destination_groups", "scope"] {
                for e in strs(r, k) {
                    assert!(
                        e == "ANY" || groups.contains(&e) || IpSpec::parse(&e).is_some(),
                        "{at}: {k} names {e}, which the world does not have"
                    );
                }
            }
            for s in strs(r, "services") {
                assert!(
                    s == "ANY" || services.contains(&s),
                    "{at}: service {s} missing"
                );
            }
            for e in strs(p, "scope") {
                assert!(
                    e == "ANY" || groups.contains(&e),
                    "{name}: policy scope {e} missing"
                );
            }
        }
        let mut ids: Vec<u64> = w
            .rules()
            .filter_map(|(_, r)| r["rule_id"].as_u64())
            .collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "{name}: two rules with one rule_id");
    }
}

#[test]
fn every_vm_has_its_vif_and_port() {
    for (name, w) in worlds() {
        for vm in &w.vms {
            let id = vm["external_id"].as_str().unwrap();
            assert_eq!(w.vifs_of(id).count(), 1, "{name}: {id}");
            assert_eq!(w.ports_of(id).len(), 1, "{name}: {id}");
            assert_eq!(w.vm_ips(id).len(), 1, "{name}: {id}");
        }
        for u in ["admin", "auditor", "tracer", "nobody"] {
            assert!(w.user(u).is_some(), "{name}: user {u}");
        }
    }
}

#[test]
fn the_article_vms_are_the_quorum_lost_sets() {
    let set = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/supervisor/quorum-lost/50-virtualmachines.yaml");
    let text = std::fs::read_to_string(set).unwrap();
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let w = World::from_dir(world_dir("article")).unwrap();
    let cp: Vec<&Value> = docs
        .iter()
        .filter(|d| {
            d.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with("tkc-prod-7xk2p-"))
        })
        .collect();
    assert_eq!(cp.len(), 3);
    for d in cp {
        let name = d.pointer("/metadata/name").and_then(Value::as_str).unwrap();
        let vm = w
            .vms
            .iter()
            .find(|v| v["display_name"] == name)
            .unwrap_or_else(|| panic!("{name} not in the article world"));
        let ext = vm["external_id"].as_str().unwrap();
        assert_eq!(
            Some(ext),
            d.pointer("/status/instanceUUID").and_then(Value::as_str),
            "{name}"
        );
        let bios = d
            .pointer("/status/biosUUID")
            .and_then(Value::as_str)
            .unwrap();
        assert!(
            strs(vm, "compute_ids").contains(&format!("biosUuid:{bios}")),
            "{name}"
        );
        let ip = d
            .pointer("/status/network/primaryIP4")
            .and_then(Value::as_str)
            .unwrap();
        assert_eq!(
            w.vm_ips(ext),
            [ip.parse::<std::net::IpAddr>().unwrap()],
            "{name}"
        );
    }
}
