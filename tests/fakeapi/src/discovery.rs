//! Discovery documents: `/api`, `/api/v1`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}`
//! in the legacy form every client understands, and optionally aggregated
//! discovery (apidiscovery.k8s.io/v2) for clients that ask for it.

use serde_json::{json, Value};

use crate::resources::{GroupInfo, Registry, ResourceDef};

/// (kind, group, version, verbs) of a subresource's response, as upstream serves it.
fn subresource_shape(
    def: &ResourceDef,
    sub: &str,
) -> (
    String,
    Option<(&'static str, &'static str)>,
    Vec<&'static str>,
) {
    match sub {
        "status" => (def.kind.clone(), None, vec!["get", "patch", "update"]),
        "scale" => (
            "Scale".into(),
            Some(("autoscaling", "v1")),
            vec!["get", "patch", "update"],
        ),
        "log" => ("Pod".into(), None, vec!["get"]),
        "exec" => ("PodExecOptions".into(), None, vec!["create", "get"]),
        "eviction" => ("Eviction".into(), Some(("policy", "v1")), vec!["create"]),
        "finalize" => (def.kind.clone(), None, vec!["update"]),
        _ => (def.kind.clone(), None, vec!["get"]),
    }
}

fn verbs(def: &ResourceDef) -> Vec<&'static str> {
    let mut v = def.verbs();
    // Namespaces cannot be deleted as a collection.
    if def.group.is_empty() && def.plural == "namespaces" {
        v.retain(|x| *x != "deletecollection");
    }
    v
}

fn resource_entries(g: &GroupInfo) -> Vec<Value> {
    let mut out = Vec::new();
    for def in g.resources.values() {
        let mut e = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": verbs(def),
        });
        if !def.short_names.is_empty() {
            e["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            e["categories"] = json!(def.categories);
        }
        out.push(e);
        for sub in &def.subresources {
            let (kind, gv, verbs) = subresource_shape(def, sub);
            let mut s = json!({
                "name": format!("{}/{}", def.plural, sub),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if let Some((group, version)) = gv {
                s["group"] = json!(group);
                s["version"] = json!(version);
            }
            out.push(s);
        }
    }
    out
}

/// `/api/v1` or `/apis/{g}/{v}`; None when the group/version is not served.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let g = reg.groups.get(group)?;
    if !g.versions.iter().any(|v| v == version) {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut v = json!({
        "kind": "APIResourceList",
        "groupVersion": gv,
        "resources": resource_entries(g),
    });
    // The core list carries no apiVersion; group lists do ("v1").
    if !group.is_empty() {
        v["apiVersion"] = json!("v1");
    }
    Some(v)
}

/// `/api`
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, g: &GroupInfo) -> Value {
    let versions: Vec<Value> = g
        .versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": versions,
        "preferredVersion": {"groupVersion": format!("{name}/{}", g.preferred), "version": g.preferred},
    })
}

/// Groups in the order a real server lists them: built-in groups first, then
/// the CRD groups by name.
fn ordered_groups(reg: &Registry) -> Vec<(&String, &GroupInfo)> {
    let mut gs: Vec<_> = reg.groups.iter().filter(|(n, _)| !n.is_empty()).collect();
    gs.sort_by_key(|(n, g)| (!g.resources.values().any(|r| r.builtin), n.to_string()));
    gs
}

/// `/apis`
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = ordered_groups(reg)
        .into_iter()
        .map(|(n, g)| group_entry(n, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{g}`
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let g = reg.groups.get(name).filter(|_| !name.is_empty())?;
    let mut v = group_entry(name, g);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// Content type of an aggregated discovery answer.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an Accept header asks for aggregated discovery v2.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let p: Vec<&str> = part.split(';').map(str::trim).collect();
        p.contains(&"g=apidiscovery.k8s.io")
            && p.contains(&"v=v2")
            && p.contains(&"as=APIGroupDiscoveryList")
    })
}

fn aggregated_group(name: &str, g: &GroupInfo) -> Value {
    // The first version listed is the preferred one.
    let mut versions: Vec<&String> = g.versions.iter().collect();
    versions.sort_by_key(|v| **v != g.preferred);
    let versions: Vec<Value> = versions
        .into_iter()
        .map(|ver| {
            let resources: Vec<Value> = g
                .resources
                .values()
                .map(|def| {
                    let mut r = json!({
                        "resource": def.plural,
                        "responseKind": {"group": name, "version": ver, "kind": def.kind},
                        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": def.singular,
                        "verbs": verbs(def),
                    });
                    if !def.short_names.is_empty() {
                        r["shortNames"] = json!(def.short_names);
                    }
                    if !def.categories.is_empty() {
                        r["categories"] = json!(def.categories);
                    }
                    let subs: Vec<Value> = def
                        .subresources
                        .iter()
                        .map(|s| {
                            let (kind, gv, verbs) = subresource_shape(def, s);
                            let (sg, sv) = gv.unwrap_or((name, ver));
                            json!({"subresource": s, "responseKind": {"group": sg, "version": sv, "kind": kind}, "verbs": verbs})
                        })
                        .collect();
                    if !subs.is_empty() {
                        r["subresources"] = json!(subs);
                    }
                    r
                })
                .collect();
            json!({"version": ver, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": {"name": name, "creationTimestamp": null}, "versions": versions})
}

/// Aggregated `/api` (core only) or `/apis` (every other group).
pub fn aggregated(reg: &Registry, core: bool) -> Value {
    let items: Vec<Value> = if core {
        reg.groups
            .get("")
            .map(|g| vec![aggregated_group("", g)])
            .unwrap_or_default()
    } else {
        ordered_groups(reg)
            .into_iter()
            .map(|(n, g)| aggregated_group(n, g))
            .collect()
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_aggregated_accept() {
        assert!(wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json, */*"));
        assert!(!wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
    }
}
