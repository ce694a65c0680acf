//! Which groups, versions and resources the fake serves.
//!
//! A real server learns them from its built-in types and from CRDs; the fake
//! derives them from the fixture objects (group, version, kind) through the
//! small table of known kinds below, plus whatever the set's `fake.yaml` adds.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One served resource at one group/version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Subresources served (e.g. "status", "log", "exec").
    pub subresources: Vec<String>,
    /// Built-in (compiled-in) types are encoded without kind/apiVersion on list
    /// items; CRD-backed (unstructured) ones carry them. The plugin must cope with both.
    pub builtin: bool,
}

impl ResourceDef {
    /// `virtualmachines.vmoperator.vmware.com`, or `pods` for the core group:
    /// the form real error messages use.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

/// (group, kind, plural, namespaced, shortNames, categories, subresources, builtin)
type KnownKind = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    bool,
);

/// Kinds the fixtures may use. Plural/scope/shortNames as upstream declares them
/// (kubebuilder markers in vm-operator, cluster-api and CAPV; k8s built-ins).
const KNOWN_KINDS: &[KnownKind] = &[
    (
        "",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        &[],
        &["status", "finalize"],
        true,
    ),
    (
        "",
        "Pod",
        "pods",
        true,
        &["po"],
        &["all"],
        &["status", "log", "exec", "eviction"],
        true,
    ),
    ("", "Secret", "secrets", true, &[], &[], &[], true),
    ("", "ConfigMap", "configmaps", true, &["cm"], &[], &[], true),
    ("", "Node", "nodes", false, &["no"], &[], &["status"], true),
    ("", "Event", "events", true, &["ev"], &[], &[], true),
    (
        "",
        "Service",
        "services",
        true,
        &["svc"],
        &["all"],
        &["status"],
        true,
    ),
    (
        "",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        &[],
        &[],
        true,
    ),
    ("", "Endpoints", "endpoints", true, &["ep"], &[], &[], true),
    (
        "apps",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        &["all"],
        &["status", "scale"],
        true,
    ),
    (
        "apps",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        &["all"],
        &["status"],
        true,
    ),
    (
        "apps",
        "ReplicaSet",
        "replicasets",
        true,
        &["rs"],
        &["all"],
        &["status", "scale"],
        true,
    ),
    (
        "apps",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        &["all"],
        &["status", "scale"],
        true,
    ),
    (
        "batch",
        "Job",
        "jobs",
        true,
        &[],
        &["all"],
        &["status"],
        true,
    ),
    (
        "cluster.x-k8s.io",
        "Cluster",
        "clusters",
        true,
        &["cl"],
        &["cluster-api"],
        &["status"],
        false,
    ),
    (
        "cluster.x-k8s.io",
        "Machine",
        "machines",
        true,
        &["ma"],
        &["cluster-api"],
        &["status"],
        false,
    ),
    (
        "cluster.x-k8s.io",
        "MachineSet",
        "machinesets",
        true,
        &["ms"],
        &["cluster-api"],
        &["status", "scale"],
        false,
    ),
    (
        "cluster.x-k8s.io",
        "MachineDeployment",
        "machinedeployments",
        true,
        &["md"],
        &["cluster-api"],
        &["status", "scale"],
        false,
    ),
    (
        "cluster.x-k8s.io",
        "MachineHealthCheck",
        "machinehealthchecks",
        true,
        &["mhc", "mhcs"],
        &["cluster-api"],
        &["status"],
        false,
    ),
    (
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlane",
        "kubeadmcontrolplanes",
        true,
        &["kcp"],
        &["cluster-api"],
        &["status", "scale"],
        false,
    ),
    (
        "bootstrap.cluster.x-k8s.io",
        "KubeadmConfig",
        "kubeadmconfigs",
        true,
        &[],
        &["cluster-api"],
        &["status"],
        false,
    ),
    (
        "vmware.infrastructure.cluster.x-k8s.io",
        "VSphereMachine",
        "vspheremachines",
        true,
        &[],
        &["cluster-api"],
        &["status"],
        false,
    ),
    (
        "vmware.infrastructure.cluster.x-k8s.io",
        "VSphereCluster",
        "vsphereclusters",
        true,
        &[],
        &["cluster-api"],
        &["status"],
        false,
    ),
    // nsx-operator's (vmware-tanzu/nsx-operator pkg/apis/vpc/v1alpha1): which VPC a namespace
    // is on. VPCNetworkConfiguration is cluster-scoped (`+kubebuilder:resource:scope="Cluster"`
    // in vpcnetworkconfiguration_types.go), NetworkInfo namespaced.
    (
        "crd.nsx.vmware.com",
        "VPCNetworkConfiguration",
        "vpcnetworkconfigurations",
        false,
        &[],
        &[],
        &["status"],
        false,
    ),
    (
        "crd.nsx.vmware.com",
        "NetworkInfo",
        "networkinfos",
        true,
        &[],
        &[],
        &[],
        false,
    ),
    (
        "vmware.infrastructure.cluster.x-k8s.io",
        "VSphereMachineTemplate",
        "vspheremachinetemplates",
        true,
        &[],
        &["cluster-api"],
        &[],
        false,
    ),
    (
        "vmoperator.vmware.com",
        "VirtualMachine",
        "virtualmachines",
        true,
        &["vm"],
        &[],
        &["status"],
        false,
    ),
    (
        "vmoperator.vmware.com",
        "VirtualMachineClass",
        "virtualmachineclasses",
        true,
        &["vmclass"],
        &[],
        &["status"],
        false,
    ),
    (
        "vmoperator.vmware.com",
        "VirtualMachineImage",
        "virtualmachineimages",
        true,
        &["vmi", "vmimage"],
        &[],
        &["status"],
        false,
    ),
    (
        "vmoperator.vmware.com",
        "VirtualMachineService",
        "virtualmachineservices",
        true,
        &["vmservice"],
        &[],
        &["status"],
        false,
    ),
    (
        "vmoperator.vmware.com",
        "VirtualMachineSetResourcePolicy",
        "virtualmachinesetresourcepolicies",
        true,
        &[],
        &[],
        &["status"],
        false,
    ),
    (
        "run.tanzu.vmware.com",
        "TanzuKubernetesCluster",
        "tanzukubernetesclusters",
        true,
        &["tkc"],
        &[],
        &["status"],
        false,
    ),
    (
        "run.tanzu.vmware.com",
        "TanzuKubernetesRelease",
        "tanzukubernetesreleases",
        false,
        &["tkr"],
        &[],
        &["status"],
        false,
    ),
];

/// The definition of a known kind at `version`, if the kind is in the table.
pub fn known(group: &str, version: &str, kind: &str) -> Option<ResourceDef> {
    KNOWN_KINDS
        .iter()
        .find(|k| k.0 == group && k.1 == kind)
        .map(|k| ResourceDef {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: k.2.to_string(),
            singular: kind.to_ascii_lowercase(),
            namespaced: k.3,
            short_names: k.4.iter().map(|s| s.to_string()).collect(),
            categories: k.5.iter().map(|s| s.to_string()).collect(),
            subresources: k.6.iter().map(|s| s.to_string()).collect(),
            builtin: k.7,
        })
}

/// A resource for a kind the table does not know: plural by the naive English
/// rule (what `kubebuilder` does by default), namespaced, no short names.
pub fn guessed(group: &str, version: &str, kind: &str) -> ResourceDef {
    let lower = kind.to_ascii_lowercase();
    let plural = if lower.ends_with('s') || lower.ends_with("ch") || lower.ends_with('x') {
        format!("{lower}es")
    } else if let Some(stem) = lower
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'i', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    };
    ResourceDef {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        plural,
        singular: lower,
        namespaced: true,
        short_names: vec![],
        categories: vec![],
        subresources: vec!["status".into()],
        builtin: false,
    }
}

/// Kubernetes version priority (apimachinery `CompareKubeAwareVersionStrings`):
/// GA > beta > alpha, higher numbers first, non-kube-like versions last.
pub fn version_priority(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u32, u8, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        // Higher priority sorts first.
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// One served group: its versions (highest priority first) and preferred version.
#[derive(Debug, Clone, Default)]
pub struct GroupInfo {
    pub versions: Vec<String>,
    pub preferred: String,
    /// Resources served at every version of the group, keyed by plural.
    pub resources: BTreeMap<String, ResourceDef>,
}

/// Everything the fake serves, keyed by group name ("" for core).
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub groups: BTreeMap<String, GroupInfo>,
}

impl Registry {
    /// Adds a resource; every version the group serves serves it (as a multi-version CRD does).
    pub fn add(&mut self, def: ResourceDef) {
        let g = self.groups.entry(def.group.clone()).or_default();
        if !g.versions.contains(&def.version) {
            g.versions.push(def.version.clone());
        }
        g.resources.entry(def.plural.clone()).or_insert(def);
    }

    /// Adds a served version with no objects (from fake.yaml).
    pub fn add_version(&mut self, group: &str, version: &str) {
        let g = self.groups.entry(group.to_string()).or_default();
        if !g.versions.contains(&version.to_string()) {
            g.versions.push(version.to_string());
        }
    }

    /// Sorts versions and fills in preferred versions not set explicitly.
    pub fn finish(&mut self, preferred: &BTreeMap<String, String>) {
        for (name, g) in self.groups.iter_mut() {
            g.versions.sort_by(|a, b| version_priority(a, b));
            g.preferred = preferred
                .get(name)
                .cloned()
                .unwrap_or_else(|| g.versions[0].clone());
        }
    }

    /// The resource `plural` at `group/version`, if served.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<ResourceDef> {
        let g = self.groups.get(group)?;
        if !g.versions.iter().any(|v| v == version) {
            return None;
        }
        let mut def = g.resources.get(plural)?.clone();
        def.version = version.to_string();
        Some(def)
    }

    /// The resource of `kind` in `group`, if served (any version).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&ResourceDef> {
        self.groups
            .get(group)?
            .resources
            .values()
            .find(|r| r.kind == kind)
    }

    pub fn serves_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .get(group)
            .is_some_and(|g| g.versions.iter().any(|v| v == version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_order_is_kube_aware() {
        let mut v = vec![
            "v1alpha1",
            "v1beta1",
            "v1",
            "v1alpha5",
            "v2beta2",
            "v1alpha10",
            "foo",
        ];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(
            v,
            vec![
                "v1",
                "v2beta2",
                "v1beta1",
                "v1alpha10",
                "v1alpha5",
                "v1alpha1",
                "foo"
            ]
        );
    }

    #[test]
    fn plural_rules() {
        assert_eq!(
            known("vmoperator.vmware.com", "v1alpha3", "VirtualMachine")
                .unwrap()
                .plural,
            "virtualmachines"
        );
        assert_eq!(guessed("x", "v1", "Policy").plural, "policies");
        assert_eq!(guessed("x", "v1", "Gateway").plural, "gateways");
        assert_eq!(guessed("x", "v1", "Address").plural, "addresses");
    }
}
