//! The contract types' JSON, where it is more than a field's name.

use serde_json::json;

use super::*;
use crate::supervisor::{ClusterFacts, Inventory};

/// Cluster tkc-prod of `set`, as the plugin reads it.
fn facts(set: &str) -> ClusterFacts {
    let all = crate::testing::fixture_objects(set);
    Inventory::from_objects("ns-prod", crate::testing::supervisor_apis(), &all)
        .facts("sv", "tkc-prod")
        .unwrap()
}

/// A rollout's phase is a tag beside its fields; a Machine at rest has no `rollout` key, and a
/// report written before the field reads back.
#[test]
fn rollout_json() {
    let nodes: Vec<ControlPlaneNode> = facts("rollout-scale-up").nodes;
    let v = serde_json::to_value(&nodes).unwrap();
    let k8d5n = v
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "tkc-prod-7xk2p-k8d5n")
        .unwrap();
    assert_eq!(
        k8d5n["machine"]["rollout"],
        json!({"phase": "Provisioning", "since": "2025-06-03T08:30:00Z",
               "machinePhase": "Provisioning", "waitingFor": "PowerOn"})
    );
    let first = &v[0]["machine"];
    assert!(first.get("rollout").is_none(), "{first}");
    assert_eq!(
        first["etcdConditions"][0]["lastTransitionTime"],
        "2025-06-01T12:00:00Z"
    );
    let back: Vec<ControlPlaneNode> = serde_json::from_value(v).unwrap();
    assert_eq!(back, nodes);
    let mut old = serde_json::to_value(&nodes[0]).unwrap();
    old["machine"]
        .as_object_mut()
        .unwrap()
        .remove("etcdConditions");
    let read: ControlPlaneNode = serde_json::from_value(old).unwrap();
    assert_eq!(read.rollout(), None);
}

/// The words a provisioning step is shown with are the domain's, for every step.
#[test]
fn provisioning_steps_are_described() {
    use strum::VariantArray;
    for step in ProvisioningStep::VARIANTS {
        assert!(!step.describe().is_empty(), "{step}");
    }
}

/// The schemas of the contract types generate, with their doc comments as descriptions.
#[test]
fn schemas_generate_with_descriptions() {
    use crate::report::{CleanupReport, VersionReport};
    for (name, schema) in [
        ("DiagnosedNode", schemars::schema_for!(DiagnosedNode)),
        ("ControlPlaneNode", schemars::schema_for!(ControlPlaneNode)),
        ("Finding", schemars::schema_for!(Finding)),
        ("CleanupReport", schemars::schema_for!(CleanupReport)),
        ("VersionReport", schemars::schema_for!(VersionReport)),
    ] {
        let v = schema.to_value();
        assert!(v["description"].is_string(), "{name}: {v:#}");
        assert!(v["properties"].is_object(), "{name}: {v:#}");
    }
    let cleanup = schemars::schema_for!(CleanupReport).to_value();
    assert_eq!(
        cleanup["$defs"]["CleanupAction"]["type"], "string",
        "{cleanup:#}"
    );
}
