//! `docs/rbac.yaml` grants what each command asks of the Supervisor, and no command
//! asks for more. Every command runs through the real kubectl against the Supervisor fake, which
//! logs each request on a resource as RBAC sees it (verb, group, resource, namespace or none);
//! each must be granted by the Role (commands on one namespace) or the ClusterRole (`-A`).
//! Requests to a workload cluster's API are not the admin's: they are made with the cluster's
//! own kubeconfig secret, and docs/rbac.yaml says so.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::article::*;
use common::*;
use etcdnet_fakeapi::{Access, PodScript};
use serde_json::Value;

/// One rule of a Role or ClusterRole.
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
}

impl Rule {
    fn grants(&self, a: &Access) -> bool {
        let has = |list: &[String], v: &str| list.iter().any(|x| x == v || x == "*");
        has(&self.groups, &a.group)
            && has(&self.resources, &a.resource)
            && has(&self.verbs, &a.verb)
    }
}

/// The rules of the document of `kind` in docs/rbac.yaml.
fn rules(kind: &str) -> Vec<Rule> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rbac.yaml"))
        .expect("docs/rbac.yaml");
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .collect();
    let doc = docs
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("docs/rbac.yaml has no {kind}"));
    assert_eq!(doc["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(doc["metadata"]["name"], "kubectl-etcdnet");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    };
    doc["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| Rule {
            groups: strings(&r["apiGroups"]),
            resources: strings(&r["resources"]),
            verbs: strings(&r["verbs"]),
        })
        .collect()
}

fn describe(a: &Access) -> String {
    format!(
        "{} {}/{} in {}",
        a.verb,
        if a.group.is_empty() { "core" } else { &a.group },
        a.resource,
        a.namespace
            .as_deref()
            .unwrap_or("all namespaces / cluster scope")
    )
}

/// Every access of `api` is granted by `kind`'s rules; a Role grants nothing outside its
/// namespace (`ns`). Returns the accesses, for the checks that they were asked at all.
fn assert_granted(what: &str, api: &FakeApi, kind: &str, ns: Option<&str>) -> BTreeSet<Access> {
    let rules = rules(kind);
    let seen: BTreeSet<Access> = api.accesses().into_iter().collect();
    assert!(!seen.is_empty(), "{what}: no request");
    let mut missing = Vec::new();
    for a in &seen {
        let in_scope = match ns {
            Some(ns) => a.namespace.as_deref() == Some(ns),
            None => true,
        };
        if !in_scope || !rules.iter().any(|r| r.grants(a)) {
            missing.push(describe(a));
        }
    }
    assert!(
        missing.is_empty(),
        "{what}: docs/rbac.yaml's {kind} does not grant: {missing:#?}"
    );
    assert_through_kinds(what, api);
    seen
}

fn asked(seen: &BTreeSet<Access>, verb: &str, resource: &str) -> bool {
    seen.iter()
        .any(|a| a.verb == verb && a.resource == resource)
}

/// The commands on one vSphere Namespace: the Role bound there is enough. It fails when the
/// Role lacks a verb a command asks, e.g. `list` on kubeadmcontrolplanes (`--all`) or
/// `deletecollection` on pods (the Ctrl-C sweep).
#[test]
fn the_role_grants_every_command_on_one_namespace() {
    let runs: [(&str, &[&str]); 4] = [
        ("status", &["status", CLUSTER, "-n", NS]),
        (
            "diagnose --dry-run",
            &["diagnose", CLUSTER, "-n", NS, "--dry-run"],
        ),
        ("cleanup", &["cleanup", CLUSTER, "-n", NS]),
        ("cleanup (namespace)", &["cleanup", "-n", NS]),
    ];
    for (what, args) in runs {
        let env = Env::new(SET, Workload::ok());
        env.kubectl(args);
        assert_granted(what, &env.supervisor, "Role", Some(NS));
    }

    // diagnose for real, through the Supervisor (the jumpbox pod).
    let env = Env::new(SET, Workload::ok());
    env.supervisor
        .on_pod_created(|pod| Some(PodScript::succeeds(scripted_jumpbox_log(pod, &CP))));
    let run = env.kubectl(&["diagnose", CLUSTER, "-n", NS, "--via", "jumpbox"]);
    assert_eq!(env.supervisor.created_pods().len(), 1, "{}", run.stderr);
    let seen = assert_granted("diagnose --via jumpbox", &env.supervisor, "Role", Some(NS));
    for (verb, resource) in [("create", "pods"), ("get", "pods/log"), ("delete", "pods")] {
        assert!(asked(&seen, verb, resource), "{verb} {resource}");
    }

    // --all: every cluster of the namespace (fixture set two-clusters).
    const SHARED: &str = "ns-shared";
    for args in [
        &["status", "--all", "-n", SHARED][..],
        &["diagnose", "--all", "-n", SHARED, "--dry-run"][..],
    ] {
        let env = Env::new("two-clusters", Workload::ok());
        env.kubectl(args);
        let seen = assert_granted(&args.join(" "), &env.supervisor, "Role", Some(SHARED));
        assert!(asked(&seen, "list", "kubeadmcontrolplanes"), "{seen:?}");
    }

    // Ctrl-C while the jumpbox pod's create is in flight: the sweep by the run's label.
    let env = Env::new(SET, Workload::ok());
    env.supervisor.delay_pod_creates(Duration::from_millis(300));
    let mut child = env
        .kubectl_command(&["diagnose", CLUSTER, "-n", NS, "--via", "jumpbox"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !env.supervisor.accesses().iter().any(|a| a.verb == "create")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();
    let seen = assert_granted("diagnose, Ctrl-C", &env.supervisor, "Role", Some(NS));
    assert!(asked(&seen, "deletecollection", "pods"), "{seen:?}");
}

/// `-A`: the ClusterRole (bound with a ClusterRoleBinding) grants it all; it fails when
/// docs/rbac.yaml has no ClusterRole or it lacks a verb a command asks.
#[test]
fn the_cluster_role_grants_every_command_on_all_namespaces() {
    for args in [
        &["status", "-A"][..],
        &["diagnose", "-A", "--dry-run"][..],
        &["cleanup", "-A"][..],
    ] {
        let env = Env::new("two-clusters", Workload::ok());
        env.kubectl(args);
        let seen = assert_granted(&args.join(" "), &env.supervisor, "ClusterRole", None);
        assert!(
            seen.iter().any(|a| a.namespace.is_none()),
            "{}: -A lists across namespaces: {seen:?}",
            args.join(" ")
        );
    }
}

/// What the Role and the ClusterRole grant is the same list: the ClusterRole is the Role for
/// every namespace, nothing more.
#[test]
fn the_role_and_the_cluster_role_grant_the_same() {
    let flat = |kind: &str| -> BTreeSet<(String, String, String)> {
        rules(kind)
            .iter()
            .flat_map(|r| {
                r.groups.iter().flat_map(move |g| {
                    r.resources.iter().flat_map(move |res| {
                        r.verbs
                            .iter()
                            .map(move |v| (g.clone(), res.clone(), v.clone()))
                    })
                })
            })
            .collect()
    };
    assert_eq!(flat("Role"), flat("ClusterRole"));
}

/// On a Supervisor that serves NSX (fixture nsx-vpc), the network reads are granted
/// too, by the Role in the namespace (its own Namespace included) and by the ClusterRole for `-A`.
#[test]
fn the_network_reads_are_granted() {
    let env = Env::new("nsx-vpc", Workload::ok());
    env.kubectl(&["status", CLUSTER, "-n", NS]);
    let seen = assert_granted("status (nsx-vpc)", &env.supervisor, "Role", Some(NS));
    for (verb, resource) in [
        ("list", "securitypolicies"),
        ("list", "subnetports"),
        ("list", "networkpolicies"),
        ("list", "vsphereclusters"),
        ("get", "namespaces"),
    ] {
        assert!(asked(&seen, verb, resource), "{verb} {resource}: {seen:?}");
    }
    let env = Env::new("nsx-vpc", Workload::ok());
    env.kubectl(&["diagnose", "-A", "--dry-run"]);
    let seen = assert_granted(
        "diagnose -A (nsx-vpc)",
        &env.supervisor,
        "ClusterRole",
        None,
    );
    assert!(asked(&seen, "list", "namespaces"), "{seen:?}");
}

/// Every (group, resource, verb) a document of docs/rbac.yaml grants.
fn granted(kind: &str) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for r in rules(kind) {
        for g in &r.groups {
            for res in &r.resources {
                for v in &r.verbs {
                    out.insert((g.clone(), res.clone(), v.clone()));
                }
            }
        }
    }
    out
}

/// The permission list of a krew manifest's caveats, read as an admin reads it: between the
/// line that says what "the user needs" and the line on API discovery, an entry is a line
/// indented 6 spaces, `verbs   resources (group; notes)`, continued by the lines indented
/// deeper; no group in parentheses (a first word without a dot) is the core group. The lines
/// indented 4 spaces between are prose.
fn caveat_grants(manifest: &str) -> BTreeSet<(String, String, String)> {
    let lines: Vec<&str> = manifest
        .lines()
        .skip_while(|l| l.trim() != "caveats: |")
        .skip(1)
        .take_while(|l| l.starts_with("   ") || l.trim().is_empty())
        .skip_while(|l| !l.contains("the user needs"))
        .skip(1)
        .take_while(|l| !l.contains("API discovery"))
        .collect();
    assert!(!lines.is_empty(), "no permission list in the caveats");
    let mut entries: Vec<String> = Vec::new();
    for l in lines {
        let indent = l.len() - l.trim_start().len();
        match indent {
            4 => continue,
            6 => entries.push(l.trim().to_string()),
            _ => {
                let last = entries
                    .last_mut()
                    .unwrap_or_else(|| panic!("{l:?}: no entry"));
                last.push(' ');
                last.push_str(l.trim());
            }
        }
    }
    let mut out = BTreeSet::new();
    for e in entries {
        let (verbs, rest) = e
            .split_once("   ")
            .unwrap_or_else(|| panic!("{e:?}: verbs, 3 spaces, resources"));
        let (resources, paren) = rest.trim().split_once(" (").unwrap_or((rest.trim(), ""));
        let first = paren
            .split(|c: char| c == ';' || c == ')' || c.is_whitespace())
            .next()
            .unwrap_or("");
        let group = if first.contains('.') { first } else { "" };
        for v in verbs.split(',').map(str::trim) {
            for r in resources.split(',').map(str::trim) {
                out.insert((group.to_string(), r.to_string(), v.to_string()));
            }
        }
    }
    out
}

fn repo_file(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// What plugin.yaml's and krew/.krew.yaml's caveats tell an admin to grant is what docs/rbac.yaml
/// grants, no less and no more: a kind added to the Role without its caveat line (or the other
/// way round) fails here, naming it.
#[test]
fn the_krew_caveats_name_what_docs_rbac_yaml_grants() {
    let role = granted("Role");
    for file in ["plugin.yaml", "krew/.krew.yaml"] {
        let caveats = caveat_grants(&repo_file(file));
        let missing: Vec<_> = role.difference(&caveats).collect();
        let extra: Vec<_> = caveats.difference(&role).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{file}'s caveats against docs/rbac.yaml's Role (group, resource, verb): \
             not named {missing:#?}, not granted {extra:#?}"
        );
    }
    // The reader sees a line taken out: the test can fail.
    let plugin = repo_file("plugin.yaml");
    let cut = plugin.replace("      get, list   namespaces\n", "");
    assert_ne!(
        caveat_grants(&cut),
        role,
        "the namespaces line was not read"
    );
}

/// The accesses in `seen` that no row of the table of kinds (`etcdnet::supervisor::kinds::KINDS`)
/// names by group and resource, the plugin's own pods (and their logs) aside.
fn outside_kinds(seen: &BTreeSet<Access>) -> Vec<String> {
    use etcdnet::supervisor::kinds::{Group, KINDS};
    let in_table = |a: &Access| {
        KINDS.iter().any(|k| match k.group {
            Group::Named(g) => g == a.group && k.resource == Some(a.resource.as_str()),
            // The control plane a Cluster references: the fixtures' are KubeadmControlPlanes.
            Group::Referenced => {
                a.group == "controlplane.cluster.x-k8s.io" && a.resource == "kubeadmcontrolplanes"
            }
        })
    };
    let own_pods =
        |a: &Access| a.group.is_empty() && matches!(a.resource.as_str(), "pods" | "pods/log");
    seen.iter()
        .filter(|a| !own_pods(a) && !in_table(a))
        .map(describe)
        .collect()
}

/// Every request the fake Supervisor saw on a resource is one a row of `KINDS` names (or the
/// plugin's own pods): a read that goes around the table, of a kind it does not list, fails.
pub(crate) fn assert_through_kinds(what: &str, api: &FakeApi) {
    let seen: BTreeSet<Access> = api.accesses().into_iter().collect();
    let outside = outside_kinds(&seen);
    assert!(
        outside.is_empty(),
        "{what}: requests on kinds src/supervisor/kinds.rs's KINDS does not list: {outside:#?}"
    );
}

/// On the NSX (NCP/T1), VPC and VDS Supervisors, `status` and `diagnose --dry-run` ask only for
/// kinds the table lists (the VPC objects of `--nsx-manager`: tests/it/nsx_manager.rs; the
/// jumpbox's pods and the other commands: the runs above, through `assert_granted`).
#[test]
fn every_supervisor_read_is_a_row_of_kinds() {
    for set in ["nsx-ncp", "nsx-vpc", "vds", "v1alpha1-capw"] {
        for args in [
            &["status", CLUSTER, "-n", NS][..],
            &["diagnose", CLUSTER, "-n", NS, "--dry-run"][..],
        ] {
            let env = Env::new(set, Workload::ok());
            env.kubectl(args);
            let what = format!("{set}: {}", args.join(" "));
            assert!(!env.supervisor.accesses().is_empty(), "{what}: no request");
            assert_through_kinds(&what, &env.supervisor);
        }
    }
    // The check sees a kind the table does not list.
    let configmaps = Access {
        verb: "get".into(),
        group: String::new(),
        resource: "configmaps".into(),
        namespace: Some(NS.into()),
    };
    assert_eq!(outside_kinds(&[configmaps].into_iter().collect()).len(), 1);
}
