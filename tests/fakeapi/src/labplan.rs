//! The lab a Supervisor fixture set describes: one lab node per control-plane Machine (but a
//! Machine with no nodeRef and no address yet, which is no node anywhere), named
//! as the Machine's `status.nodeRef.name` (the Kubernetes Node the plugin pins its pod to) and at
//! the Machine's VM address (`status.network.primaryIP4`, or v1alpha1's `status.vmIp`).
//!
//! The Machines and VMs are joined as the plugin joins them (its `supervisor::join`): a Machine
//! controller-owned by its cluster's KCP (by uid), and the VM controller-owned by the uid of the
//! Machine's VSphereMachine; so a set's forged objects are no lab node either.
//!
//! A lab gives node i (1-based, in order) the address `<subnet>.(10 + i)`, so the VMs' addresses
//! must be `x.y.z.11`, `.12`, ... in one /24 inside 198.18.0.0/15: the fixture sets are written
//! that way (198.18.0.11-13), and [`plan`] says what is wrong when a set is not.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use anyhow::{bail, Context, Result};
use etcdnet_lab::LabConfig;
use serde_json::Value;

use crate::config::FakeConfig;
use crate::store;

/// One control-plane node of the set, as the lab must build it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedNode {
    /// The Kubernetes Node name (Machine nodeRef, else the Machine's name): the lab node's name.
    pub name: String,
    pub machine: String,
    pub ip: Ipv4Addr,
}

fn vm_ip(vm: &Value) -> Option<String> {
    vm["status"]["network"]["primaryIP4"]
        .as_str()
        .or_else(|| vm["status"]["vmIp"].as_str())
        // A running guest reports nothing: the network provider's configured address, as the
        // plugin takes it (vm-operator `status.network.config`, with its prefix).
        .or_else(|| {
            if vm["status"]["powerState"] != "PoweredOn" {
                return None;
            }
            vm["status"]["network"]["config"]["interfaces"][0]["ip"]["addresses"][0]
                .as_str()
                .map(|a| a.split('/').next().unwrap_or(a))
        })
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The control-plane nodes of `cluster` (or of the set's only cluster) in address order.
pub fn plan(cfg: &FakeConfig, cluster: Option<&str>) -> Result<Vec<PlannedNode>> {
    let builtin: BTreeMap<String, String> =
        [("FAKEAPI_URL".to_string(), "http://127.0.0.1:0".to_string())].into();
    let objects = cfg.load_objects(&builtin)?;
    let group = |o: &Value| store::split_api_version(&store::api_version(o)).0;
    let machines: Vec<&Value> = objects
        .iter()
        .filter(|o| store::kind(o) == "Machine" && group(o) == "cluster.x-k8s.io")
        .filter(|o| store::labels(o).contains_key("cluster.x-k8s.io/control-plane"))
        .collect();
    let cluster_of = |m: &Value| {
        m["spec"]["clusterName"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                store::labels(m)
                    .get("cluster.x-k8s.io/cluster-name")
                    .cloned()
            })
            .unwrap_or_default()
    };
    let mut clusters: Vec<String> = machines.iter().map(|m| cluster_of(m)).collect();
    clusters.sort();
    clusters.dedup();
    let want = match (cluster, clusters.as_slice()) {
        (Some(c), _) if clusters.iter().any(|x| x == c) => c.to_string(),
        (Some(c), _) => {
            bail!("no control-plane Machines of cluster {c:?} (clusters: {clusters:?})")
        }
        (None, [one]) => one.clone(),
        (None, []) => bail!("the fixture set has no control-plane Machines"),
        (None, _) => bail!("the fixture set has several clusters {clusters:?}: name one"),
    };
    let kcp_uids: Vec<&str> = objects
        .iter()
        .filter(|o| store::kind(o) == "KubeadmControlPlane")
        .filter(|o| store::labels(o).get("cluster.x-k8s.io/cluster-name") == Some(&want))
        .filter_map(|o| o["metadata"]["uid"].as_str())
        .collect();
    let mut nodes = Vec::new();
    for m in machines
        .into_iter()
        .filter(|m| cluster_of(m) == want)
        .filter(|m| controllers(m).any(|uid| kcp_uids.contains(&uid)))
    {
        let machine = store::name(m);
        let vm = vm_of(&objects, m);
        let addr = vm.and_then(vm_ip).or_else(|| {
            m["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str().map(str::to_string))
        });
        let joined = m["status"]["nodeRef"]["name"].as_str().is_some();
        let addr = match addr {
            Some(a) => a,
            // A Machine still provisioning with no address yet (a rollout's new one) is no node
            // a lab could build: the lab is the nodes that exist.
            None if !joined => continue,
            None => bail!("Machine {machine} has no VM with an IPv4 address"),
        };
        let ip: Ipv4Addr = addr.parse().with_context(|| {
            format!("Machine {machine}: {addr:?} is not an IPv4 address (the lab is IPv4 only)")
        })?;
        let name = m["status"]["nodeRef"]["name"]
            .as_str()
            .unwrap_or(&machine)
            .to_string();
        nodes.push(PlannedNode { name, machine, ip });
    }
    nodes.sort_by_key(|n| n.ip);
    for (i, n) in nodes.iter().enumerate() {
        let o = n.ip.octets();
        let first = nodes[0].ip.octets();
        if o[..3] != first[..3] || o[3] as usize != 11 + i {
            bail!(
                "control-plane addresses must be x.y.z.11, .12, ... in one /24 for a lab (node i gets .10+i); {} ({}) is {}",
                n.name,
                n.machine,
                n.ip
            );
        }
    }
    Ok(nodes)
}

/// The uids of an object's controller ownerReferences (at most one, as the API server keeps it).
fn controllers(o: &Value) -> impl Iterator<Item = &str> {
    o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["controller"] == true)
        .filter_map(|r| r["uid"].as_str())
}

/// A Machine's VM: the one VirtualMachine controller-owned by the uid of its VSphereMachine (the
/// object's, else the one in `spec.infrastructureRef`); None when there is not exactly one.
pub fn vm_of<'a>(objects: &'a [Value], machine: &Value) -> Option<&'a Value> {
    let infra = &machine["spec"]["infrastructureRef"];
    let ns = store::namespace(machine);
    let vsm_uid = objects
        .iter()
        .find(|o| {
            store::kind(o) == "VSphereMachine"
                && store::namespace(o) == ns
                && Some(store::name(o).as_str()) == infra["name"].as_str()
        })
        .and_then(|o| o["metadata"]["uid"].as_str())
        .or_else(|| infra["uid"].as_str())?;
    let mut vms = objects.iter().filter(|o| {
        store::kind(o) == "VirtualMachine"
            && store::namespace(o) == ns
            && controllers(o).any(|uid| uid == vsm_uid)
    });
    match (vms.next(), vms.next()) {
        (Some(vm), None) => Some(vm),
        _ => None,
    }
}

/// The clusters of the set that have control-plane Machines, sorted (what [`plan`] accepts).
pub fn clusters(cfg: &FakeConfig) -> Result<Vec<String>> {
    let builtin: BTreeMap<String, String> =
        [("FAKEAPI_URL".to_string(), "http://127.0.0.1:0".to_string())].into();
    let objects = cfg.load_objects(&builtin)?;
    let mut out: Vec<String> = objects
        .iter()
        .filter(|o| {
            store::kind(o) == "Machine"
                && store::split_api_version(&store::api_version(o)).0 == "cluster.x-k8s.io"
                && store::labels(o).contains_key("cluster.x-k8s.io/control-plane")
        })
        .filter_map(|m| {
            m["spec"]["clusterName"]
                .as_str()
                .map(str::to_string)
                .or_else(|| {
                    store::labels(m)
                        .get("cluster.x-k8s.io/cluster-name")
                        .cloned()
                })
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// A lab configuration with these nodes' names and subnet (everything else default).
pub fn lab_config(nodes: &[PlannedNode]) -> Result<LabConfig> {
    let Some(first) = nodes.first() else {
        bail!("no nodes to build a lab of");
    };
    let [a, b, c, _] = first.ip.octets();
    Ok(LabConfig {
        nodes: nodes.len(),
        node_names: nodes.iter().map(|n| n.name.clone()).collect(),
        subnet: [a, b, c],
        ..LabConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor_set;

    #[test]
    fn the_fixture_sets_line_up_with_a_lab() {
        // v1alpha1 VMs carry the address in status.vmIp, and that set's KCP is named
        // tkc-prod-control-plane.
        for (set, kcp) in [
            ("healthy-v1alpha3", "tkc-prod-7xk2p"),
            ("quorum-lost", "tkc-prod-7xk2p"),
            ("v1alpha1-capw", "tkc-prod-control-plane"),
        ] {
            let cfg = FakeConfig::from_dir(supervisor_set(set)).unwrap();
            let nodes = plan(&cfg, None).unwrap();
            let got: Vec<(String, String)> = nodes
                .iter()
                .map(|n| (n.name.clone(), n.ip.to_string()))
                .collect();
            assert_eq!(
                got,
                [
                    ("4rz8m", "198.18.0.11"),
                    ("9qtvw", "198.18.0.12"),
                    ("bx2lk", "198.18.0.13")
                ]
                .map(|(a, b)| (format!("{kcp}-{a}"), b.to_string())),
                "{set}"
            );
            let lab = lab_config(&nodes).unwrap();
            assert_eq!((lab.nodes, lab.subnet), (3, [198, 18, 0]));
        }
    }

    /// A rollout's sets: the 4th node is planned once it has an address (by its Machine's name
    /// until it has a nodeRef); a Machine not yet addressed is left out.
    #[test]
    fn rollout_sets_line_up_with_a_lab() {
        for (set, nodes) in [
            ("rollout-scale-up", 3),
            ("rollout-scale-up-joining", 4),
            ("rollout-scale-down", 4),
        ] {
            let cfg = FakeConfig::from_dir(supervisor_set(set)).unwrap();
            let plan = plan(&cfg, None).unwrap();
            let lab = lab_config(&plan).unwrap();
            assert_eq!((lab.nodes, lab.subnet), (nodes, [198, 18, 0]), "{set}");
            if nodes == 4 {
                assert_eq!(plan[3].name, "tkc-prod-7xk2p-k8d5n", "{set}");
                assert_eq!(plan[3].ip.to_string(), "198.18.0.14", "{set}");
            }
        }
    }

    /// The uids and ownerReferences of every set line up as CAPI, CAPV and vm-operator write
    /// them: each control-plane Machine of the KCP has exactly one VM by uid, and it is the VM
    /// bearing the Machine's name (how the sets were written before the join went by uid).
    #[test]
    fn every_set_joins_by_uid() {
        let root = crate::fixtures_dir().join("supervisor");
        let mut checked = 0;
        for entry in std::fs::read_dir(&root).unwrap() {
            let dir = entry.unwrap().path();
            let set = dir.file_name().unwrap().to_string_lossy().to_string();
            if !dir.is_dir() || set.starts_with("hostile-identity") {
                continue;
            }
            let cfg = FakeConfig::from_dir(&dir).unwrap();
            let builtin: BTreeMap<String, String> =
                [("FAKEAPI_URL".to_string(), "http://127.0.0.1:0".to_string())].into();
            let Ok(objects) = cfg
                .var("WORKLOAD_URL", "http://127.0.0.1:9")
                .load_objects(&builtin)
            else {
                continue;
            };
            for m in objects.iter().filter(|o| {
                store::kind(o) == "Machine"
                    && store::labels(o).contains_key("cluster.x-k8s.io/control-plane")
            }) {
                let vm = vm_of(&objects, m)
                    .unwrap_or_else(|| panic!("{set}: {}: no VM by uid", store::name(m)));
                // CAPV names the VM after the Machine unless the VSphereMachine's
                // `spec.naming.template` says otherwise (vm-naming-template: `<machine>-vm`).
                let want = match set.as_str() {
                    "vm-naming-template" => format!("{}-vm", store::name(m)),
                    _ => store::name(m),
                };
                assert_eq!(store::name(vm), want, "{set}");
                assert!(
                    controllers(m).next().is_some(),
                    "{set}: {} has no controller",
                    store::name(m)
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked}");
    }

    #[test]
    fn sets_that_cannot_be_a_lab_say_why() {
        let two = FakeConfig::from_dir(supervisor_set("two-clusters")).unwrap();
        assert!(plan(&two, None)
            .unwrap_err()
            .to_string()
            .contains("several clusters"));
        assert_eq!(plan(&two, Some("tkc-a")).unwrap().len(), 3);
        assert_eq!(clusters(&two).unwrap(), ["tkc-a", "tkc-b"]);
        let v6 = FakeConfig::from_dir(supervisor_set("kcp-v1beta2")).unwrap();
        assert!(plan(&v6, None).is_err());
    }
}

#[cfg(test)]
mod many {
    use super::*;
    use crate::supervisor_set;

    /// Each cluster of three-clusters is a lab of its own subnet; seven-nodes is one of 7.
    #[test]
    fn the_generated_sets_line_up_with_labs() {
        let three = FakeConfig::from_dir(supervisor_set("three-clusters")).unwrap();
        assert_eq!(clusters(&three).unwrap(), ["tkc-api", "tkc-db", "tkc-web"]);
        for spec in crate::generate::three_clusters() {
            let nodes = plan(&three, Some(&spec.name)).unwrap();
            let got: Vec<(String, Ipv4Addr)> =
                nodes.iter().map(|n| (n.name.clone(), n.ip)).collect();
            assert_eq!(got, spec.nodes());
            let lab = lab_config(&nodes).unwrap();
            assert_eq!((lab.nodes, lab.subnet), (3, spec.subnet));
        }
        let seven = FakeConfig::from_dir(supervisor_set("seven-nodes")).unwrap();
        let nodes = plan(&seven, None).unwrap();
        assert_eq!(lab_config(&nodes).unwrap().nodes, 7);
        assert_eq!(
            nodes.iter().map(|n| n.ip.to_string()).collect::<Vec<_>>(),
            (11..=17)
                .map(|i| format!("198.18.7.{i}"))
                .collect::<Vec<_>>()
        );
    }
}
