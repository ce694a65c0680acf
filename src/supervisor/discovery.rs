//! Is this a Supervisor, and which versions does it serve: one request.
//!
//! `GET /apis` asks for aggregated discovery (apidiscovery.k8s.io v2, then v2beta1) and accepts
//! the plain `APIGroupList` of servers without it, as kubectl's Accept header does. Either answer
//! names every group and its preferred version, so nothing is asked per group version (kube's
//! `Discovery::run` asks each version of each group: 8 of the 14 requests a diagnosis made, 5 of
//! them vm-operator's). An aggregated answer also names each kind's resource (its plural); from a
//! plain list the plural is derived from the kind, as kube's `ApiResource::from_gvk` does, which
//! holds for every kind we read (virtualmachines, clusters, machines, kubeadmcontrolplanes).
//!
//! The result is a value ([`SupervisorApis`]) that the evidence bundle carries, so an offline
//! `analyse` resolves references exactly as the run did.

use std::collections::BTreeMap;

use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

#[cfg(test)]
pub(crate) use super::kinds::CONTROLPLANE_GROUP;
use super::kinds::{Group, Kind, KindId, Versions};

/// kubectl's order: aggregated v2, v2beta1 (Kubernetes 1.26–1.29), then the plain answer.
const ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// One served group: its preferred version and, when the server listed them (aggregated
/// discovery), the kinds it serves there with their resource names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServedGroup {
    pub version: String,
    /// kind → plural. None: the server gave no resource lists (plain discovery).
    pub kinds: Option<BTreeMap<String, String>>,
}

/// The groups the Supervisor serves, at their preferred versions, and the three resources every
/// walk reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SupervisorApis {
    pub virtual_machine: ApiResource,
    pub cluster: ApiResource,
    pub machine: ApiResource,
    /// CAPV's VSphereMachine, when the Supervisor serves it: the join goes Machine →
    /// VSphereMachine (uid) → VM. None: not served, or a bundle written before it was read
    /// (the join then goes by the Machine's reference alone, see [`super::join`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsphere_machine: Option<ApiResource>,
    /// Every group the answer named (a `controlPlaneRef` may point into any of them).
    pub groups: BTreeMap<String, ServedGroup>,
}

impl SupervisorApis {
    /// The resource for `kind` in `group` at the group's preferred version; None when the group
    /// is not served, or the server listed the group's kinds and `kind` is not among them.
    pub fn kind_in(&self, group: &str, kind: &str) -> Option<ApiResource> {
        let g = self.groups.get(group)?;
        let gvk = GroupVersionKind::gvk(group, &g.version, kind);
        match &g.kinds {
            Some(kinds) => kinds
                .get(kind)
                .map(|plural| ApiResource::from_gvk_with_plural(&gvk, plural)),
            None => Some(ApiResource::from_gvk(&gvk)),
        }
    }

    /// The resource a row of [`super::kinds::KINDS`] is read as: the one discovery chose for the
    /// kinds every walk reads (a bundle's word, as written), else the version the row says;
    /// None when not served (or the row's group is a Cluster's reference).
    pub fn resource(&self, id: KindId) -> Option<ApiResource> {
        match id {
            KindId::Cluster => Some(self.cluster.clone()),
            KindId::Machine => Some(self.machine.clone()),
            KindId::VirtualMachine => Some(self.virtual_machine.clone()),
            KindId::VSphereMachine => self.vsphere_machine.clone(),
            _ => self.served(id.row()),
        }
    }

    /// What discovery serves of a row: its group at the row's version, with the plural the
    /// answer lists (or the row's, from a plain answer).
    fn served(&self, kind: &Kind) -> Option<ApiResource> {
        let (Group::Named(group), Some(name)) = (kind.group, kind.name) else {
            return None;
        };
        let with_plural = |gvk: &GroupVersionKind, plural: Option<&str>| match plural {
            Some(p) => ApiResource::from_gvk_with_plural(gvk, p),
            None => ApiResource::from_gvk(gvk),
        };
        match kind.versions {
            Versions::Only(v) => Some(with_plural(
                &GroupVersionKind::gvk(group, v, name),
                kind.resource,
            )),
            Versions::Preferred => {
                let g = self.groups.get(group)?;
                let gvk = GroupVersionKind::gvk(group, &g.version, name);
                match &g.kinds {
                    Some(kinds) => kinds
                        .get(name)
                        .map(|plural| ApiResource::from_gvk_with_plural(&gvk, plural)),
                    None => Some(with_plural(&gvk, kind.resource)),
                }
            }
        }
    }
}

/// Confirms the context is a Supervisor (serves vm-operator and CAPI) and picks the versions,
/// in one request.
pub(crate) async fn discover(client: &Client, context: &str) -> Result<SupervisorApis> {
    let request = http::Request::get("/apis")
        .header(http::header::ACCEPT, ACCEPT)
        .body(Vec::new())
        .map_err(|e| Error::config_from("building the discovery request", e))?;
    let answer: Value = client
        .request(request)
        .await
        .map_err(|e| Error::kube(format!("API discovery in context {context:?}"), e))?;
    from_answer(&answer, context)
}

/// Reads a `/apis` answer, aggregated or plain (pure, for tests and offline use).
pub(crate) fn from_answer(answer: &Value, context: &str) -> Result<SupervisorApis> {
    let groups = match answer["kind"].as_str() {
        Some("APIGroupDiscoveryList") => aggregated_groups(answer),
        _ => plain_groups(answer),
    };
    let mut apis = SupervisorApis {
        virtual_machine: placeholder(),
        cluster: placeholder(),
        machine: placeholder(),
        vsphere_machine: None,
        groups,
    };
    let served = |id: KindId| apis.served(id.row());
    let vsphere_machine = served(KindId::VSphereMachine);
    let vm = served(KindId::VirtualMachine);
    let cluster = served(KindId::Cluster);
    let machine = served(KindId::Machine);
    apis.vsphere_machine = vsphere_machine;
    match (vm, cluster, machine) {
        (Some(virtual_machine), Some(cluster), Some(machine)) => Ok(SupervisorApis {
            virtual_machine,
            cluster,
            machine,
            ..apis
        }),
        (vm, cluster, machine) => {
            let mut missing = Vec::new();
            if vm.is_none() {
                missing.push("virtualmachines.vmoperator.vmware.com");
            }
            if cluster.is_none() || machine.is_none() {
                missing.push("clusters/machines.cluster.x-k8s.io");
            }
            Err(Error::NotSupervisor {
                context: context.to_string(),
                missing: missing.join(" or "),
            })
        }
    }
}

fn placeholder() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Placeholder"))
}

/// `APIGroupList`: `groups[].name`, `groups[].preferredVersion.version`.
fn plain_groups(answer: &Value) -> BTreeMap<String, ServedGroup> {
    answer["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| {
            let name = g["name"].as_str()?;
            let version = g["preferredVersion"]["version"]
                .as_str()
                .or_else(|| g["versions"][0]["version"].as_str())?;
            Some((
                name.to_string(),
                ServedGroup {
                    version: version.to_string(),
                    kinds: None,
                },
            ))
        })
        .collect()
}

/// `APIGroupDiscoveryList`: `items[].metadata.name`, `items[].versions[]` (the first is the
/// preferred one), each with `resources[].resource` and `.responseKind.kind`.
fn aggregated_groups(answer: &Value) -> BTreeMap<String, ServedGroup> {
    answer["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| {
            let name = g["metadata"]["name"].as_str()?;
            let preferred = g["versions"].as_array()?.first()?;
            let version = preferred["version"].as_str()?;
            let kinds = preferred["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| {
                    let plural = r["resource"].as_str()?;
                    let kind = r["responseKind"]["kind"].as_str()?;
                    Some((kind.to_string(), plural.to_string()))
                })
                .collect();
            Some((
                name.to_string(),
                ServedGroup {
                    version: version.to_string(),
                    kinds: Some(kinds),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain() -> Value {
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
            {"name": "vmoperator.vmware.com", "versions": [
                {"groupVersion": "vmoperator.vmware.com/v1alpha5", "version": "v1alpha5"},
                {"groupVersion": "vmoperator.vmware.com/v1alpha1", "version": "v1alpha1"}],
             "preferredVersion": {"groupVersion": "vmoperator.vmware.com/v1alpha5", "version": "v1alpha5"}},
            {"name": "cluster.x-k8s.io", "versions": [{"groupVersion": "cluster.x-k8s.io/v1beta1", "version": "v1beta1"}],
             "preferredVersion": {"groupVersion": "cluster.x-k8s.io/v1beta1", "version": "v1beta1"}},
            {"name": "controlplane.cluster.x-k8s.io", "versions": [{"groupVersion": "controlplane.cluster.x-k8s.io/v1beta2", "version": "v1beta2"}],
             "preferredVersion": {"groupVersion": "controlplane.cluster.x-k8s.io/v1beta2", "version": "v1beta2"}}
        ]})
    }

    fn aggregated() -> Value {
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
            {"metadata": {"name": "vmoperator.vmware.com"}, "versions": [
                {"version": "v1alpha3", "resources": [
                    {"resource": "virtualmachines", "responseKind": {"group": "vmoperator.vmware.com", "version": "v1alpha3", "kind": "VirtualMachine"}, "scope": "Namespaced"},
                    {"resource": "virtualmachines/status", "responseKind": {"kind": "VirtualMachine"}}]},
                {"version": "v1alpha1", "resources": []}]},
            {"metadata": {"name": "cluster.x-k8s.io"}, "versions": [
                {"version": "v1beta2", "resources": [
                    {"resource": "clusters", "responseKind": {"kind": "Cluster"}},
                    {"resource": "machines", "responseKind": {"kind": "Machine"}}]}]},
            {"metadata": {"name": "controlplane.cluster.x-k8s.io"}, "versions": [
                {"version": "v1beta2", "resources": [
                    {"resource": "kubeadmcontrolplanes", "responseKind": {"kind": "KubeadmControlPlane"}}]}]}
        ]})
    }

    #[test]
    fn plain_answer_gives_preferred_versions_and_derived_plurals() {
        let apis = from_answer(&plain(), "sv").unwrap();
        assert_eq!(
            apis.virtual_machine.api_version,
            "vmoperator.vmware.com/v1alpha5"
        );
        assert_eq!(apis.virtual_machine.plural, "virtualmachines");
        assert_eq!(apis.cluster.plural, "clusters");
        assert_eq!(apis.machine.api_version, "cluster.x-k8s.io/v1beta1");
        let kcp = apis
            .kind_in(CONTROLPLANE_GROUP, "KubeadmControlPlane")
            .unwrap();
        assert_eq!(kcp.plural, "kubeadmcontrolplanes");
        assert_eq!(kcp.api_version, "controlplane.cluster.x-k8s.io/v1beta2");
        assert!(apis.kind_in("nope.example.com", "Thing").is_none());
    }

    #[test]
    fn aggregated_answer_uses_the_first_version_and_the_listed_resources() {
        let apis = from_answer(&aggregated(), "sv").unwrap();
        assert_eq!(
            apis.virtual_machine.api_version,
            "vmoperator.vmware.com/v1alpha3"
        );
        assert_eq!(apis.cluster.api_version, "cluster.x-k8s.io/v1beta2");
        assert!(apis
            .kind_in(CONTROLPLANE_GROUP, "KubeadmControlPlane")
            .is_some());
        // The group is served, but it does not list this kind: not served.
        assert!(apis
            .kind_in(CONTROLPLANE_GROUP, "TalosControlPlane")
            .is_none());
    }

    #[test]
    fn a_server_without_vm_operator_or_capi_is_not_a_supervisor() {
        let mut answer = plain();
        answer["groups"]
            .as_array_mut()
            .unwrap()
            .retain(|g| g["name"] != "vmoperator.vmware.com");
        let e = from_answer(&answer, "kind-kind").unwrap_err();
        assert!(matches!(e, Error::NotSupervisor { .. }), "{e}");
        assert!(e.to_string().contains("virtualmachines"), "{e}");
        // Garbage is not a Supervisor either, and no panic.
        assert!(from_answer(&json!({"kind": 7, "groups": "x"}), "c").is_err());
    }
}
