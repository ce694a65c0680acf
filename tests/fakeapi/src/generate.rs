//! Generated Supervisor fixture sets. Two generators, one staleness test:
//!
//! - the builder ([`build`], the sets in [`sets`]): a set is a hand-kept base in its upstream
//!   shapes (healthy-v1alpha3, ...) or another definition, renamed, with its odd one out as
//!   edits on the objects (remove an object, set a field, replace a condition, copy an object);
//! - the many-cluster template, below: any number of TKG clusters, in any vSphere Namespaces,
//!   with any number of control-plane nodes each.
//!
//! The template is cluster `tkc-a` of `two-clusters` as the builder makes it (Cluster +
//! VSphereCluster, KCP, Machines + MachineDeployment, VSphereMachines, VirtualMachines at
//! v1alpha3, the five Secrets). For each [`ClusterSpec`] its text is rewritten: names (cluster,
//! KCP `<cluster>-<5 chars>`, nodes `<kcp>-<5 chars>`, as CAPI's random suffixes, derived from
//! the names so a set is the same on every run), namespace, addresses (`<subnet>.11..` for the
//! control plane, `.21..` workers), every uid (derived, so owner references still match their
//! owners), MACs, machine IDs, and the workload URL placeholder (`{{WORKLOAD_URL}}`, or one per
//! cluster, [`crate::workload_url_var`]). The template's first control-plane node is copied once
//! per wanted node and the KCP's replica counts follow.
//!
//! [`write_set`] writes a set directory (`fake.yaml` and six files per cluster) for
//! [`crate::FakeConfig::from_dir`] or `etcdnet-fakeapi --fixtures`. The committed sets
//! `three-clusters` and `seven-nodes` are written by it ([`three_clusters`], [`seven_nodes`]),
//! the builder's beside them; a unit test checks they are all up to date
//! (`ETCDNET_WRITE_FIXTURES=1 cargo test -p etcdnet-fakeapi --lib generate` rewrites them).
//! [`many_clusters`] is the big one made at test time.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{bail, Context, Result};

pub mod build;
pub mod sets;

/// The template's file prefixes, each `<prefix>-tkc-a.yaml` in `two-clusters`.
const PREFIXES: [&str; 6] = [
    "10-cluster",
    "20-kcp",
    "30-machines",
    "40-vspheremachines",
    "50-virtualmachines",
    "60-secrets",
];

/// The template files, (file prefix, text): cluster tkc-a of `two-clusters` as the builder
/// makes it (from healthy-v1alpha3), so a generated set follows its base in one run.
fn template() -> Result<Vec<(&'static str, String)>> {
    let defs = sets::defs();
    let def = defs
        .iter()
        .find(|d| d.name == "two-clusters")
        .context("no set two-clusters")?;
    let mut files = build::render(def, &defs)?;
    PREFIXES
        .iter()
        .map(|p| {
            let text = files
                .remove(&format!("{p}-tkc-a.yaml"))
                .with_context(|| format!("two-clusters has no {p}-tkc-a.yaml"))?;
            Ok((*p, text))
        })
        .collect()
}
const T_CLUSTER: &str = "tkc-a";
const T_NAMESPACE: &str = "ns-shared";
const T_KCP: &str = "tkc-a-m2c8r";
/// The template node copied for every control-plane node.
const T_NODE: &str = "tkc-a-m2c8r-4rz8m";
const T_NODE_IP: &str = "198.18.0.11";
/// The template's other control-plane nodes, dropped.
const T_OTHER_NODES: [&str; 2] = ["tkc-a-m2c8r-9qtvw", "tkc-a-m2c8r-bx2lk"];
const T_SUBNET: &str = "198.18.0.";

/// The most control-plane nodes a cluster may have here (a lab has at most 9).
pub const MAX_CONTROL_PLANE: usize = 9;

/// One TKG cluster of a generated set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    /// The vSphere Namespace.
    pub namespace: String,
    pub name: String,
    /// The /24 of its VMs: control plane `.11`, `.12`, ... (as a lab builds them), workers `.21`, `.22`.
    pub subnet: [u8; 3],
    /// Control-plane nodes (1..=9).
    pub control_plane: usize,
    /// The placeholder its kubeconfig secret's server is (`WORKLOAD_URL`, or
    /// [`crate::workload_url_var`] for a workload API of its own); its Cluster's
    /// controlPlaneEndpoint is the matching `WORKLOAD_HOST…`/`WORKLOAD_PORT…`.
    pub url_var: String,
}

impl ClusterSpec {
    /// A cluster with a workload API of its own (`{{WORKLOAD_URL_<NAME>}}`).
    pub fn new(namespace: &str, name: &str, subnet: [u8; 3], control_plane: usize) -> Self {
        ClusterSpec {
            namespace: namespace.into(),
            name: name.into(),
            subnet,
            control_plane,
            url_var: crate::workload_url_var(name),
        }
    }

    /// The same cluster pointing at the set's one `{{WORKLOAD_URL}}`.
    pub fn shared_url(mut self) -> Self {
        self.url_var = "WORKLOAD_URL".into();
        self
    }

    /// The KubeadmControlPlane's name: `<cluster>-<5 chars>`.
    pub fn kcp(&self) -> String {
        format!(
            "{}-{}",
            self.name,
            suffix(&format!("{}/{}/kcp", self.namespace, self.name))
        )
    }

    /// The control-plane nodes, (name, address) in address order: the Machine, VSphereMachine,
    /// VirtualMachine and Kubernetes Node all carry this name (what a lab of this cluster needs).
    pub fn nodes(&self) -> Vec<(String, Ipv4Addr)> {
        let kcp = self.kcp();
        let [a, b, c] = self.subnet;
        (1..=self.control_plane)
            .map(|i| {
                let name = format!(
                    "{kcp}-{}",
                    suffix(&format!("{}/{}/node{i}", self.namespace, self.name))
                );
                (name, Ipv4Addr::new(a, b, c, 10 + i as u8))
            })
            .collect()
    }

    fn subnet_prefix(&self) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.")
    }

    fn endpoint_var(&self, what: &str) -> String {
        self.url_var.replacen("URL", what, 1)
    }
}

/// `three-clusters`: three clusters in vSphere Namespace `ns-fleet`, 3 control-plane nodes each,
/// each on its own lab subnet (198.18.1-3.x) and with its own workload API.
pub fn three_clusters() -> Vec<ClusterSpec> {
    [("tkc-web", 1), ("tkc-api", 2), ("tkc-db", 3)]
        .into_iter()
        .map(|(name, net)| ClusterSpec::new("ns-fleet", name, [198, 18, net], 3))
        .collect()
}

/// `seven-nodes`: one cluster, `tkc-big` in `ns-prod`, with 7 control-plane nodes at
/// 198.18.7.11-17, its kubeconfig at `{{WORKLOAD_URL}}`.
pub fn seven_nodes() -> Vec<ClusterSpec> {
    vec![ClusterSpec::new("ns-prod", "tkc-big", [198, 18, 7], 7).shared_url()]
}

/// `namespaces` × `per_namespace` clusters of 3 control-plane nodes: namespaces `ns-team-1`, ...,
/// clusters `tkc-<n>-<m>` (n the namespace's number, m the cluster's within it), the k-th cluster
/// (from 1) at 198.19.k.x, every kubeconfig at the one `{{WORKLOAD_URL}}`.
pub fn many_clusters(namespaces: usize, per_namespace: usize) -> Vec<ClusterSpec> {
    let mut out = Vec::new();
    for n in 1..=namespaces {
        for m in 1..=per_namespace {
            let k = out.len() + 1;
            out.push(
                ClusterSpec::new(
                    &format!("ns-team-{n}"),
                    &format!("tkc-{n}-{m}"),
                    [198, 19, k.min(255) as u8],
                    3,
                )
                .shared_url(),
            );
        }
    }
    out
}

/// Writes a set of `clusters` into `dir` (created if needed): `fake.yaml` (what the set is,
/// `title` first, every placeholder with a default, vm-operator v1alpha1-3 served, v1alpha3
/// preferred) and for each cluster `10-cluster-<name>.yaml` ... `60-secrets-<name>.yaml`.
pub fn write_set(dir: &Path, title: &str, clusters: &[ClusterSpec]) -> Result<()> {
    check(clusters)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("fake.yaml"), fake_yaml(title, clusters))?;
    let template = template()?;
    for c in clusters {
        for (prefix, text) in &template {
            let path = dir.join(format!("{prefix}-{}.yaml", c.name));
            std::fs::write(&path, render(prefix, text, c, &template))
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

fn check(clusters: &[ClusterSpec]) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    let mut nets = std::collections::BTreeSet::new();
    for c in clusters {
        if !(1..=MAX_CONTROL_PLANE).contains(&c.control_plane) {
            bail!(
                "{}: {} control-plane nodes (1..={MAX_CONTROL_PLANE})",
                c.name,
                c.control_plane
            );
        }
        let [a, b, _] = c.subnet;
        if a != 198 || !(18..=19).contains(&b) {
            bail!("{}: subnet {:?} is not in 198.18.0.0/15", c.name, c.subnet);
        }
        if !seen.insert((c.namespace.clone(), c.name.clone())) {
            bail!("cluster {}/{} twice", c.namespace, c.name);
        }
        if !nets.insert(c.subnet) {
            bail!("{}: subnet {:?} used twice", c.name, c.subnet);
        }
    }
    Ok(())
}

fn fake_yaml(title: &str, clusters: &[ClusterSpec]) -> String {
    let mut s = format!(
        "{} (tests/fakeapi/src/generate.rs) from cluster tkc-a of two-clusters: do not edit; {}\n",
        build::GENERATED,
        build::REWRITE
    );
    for line in title.lines() {
        let _ = writeln!(s, "# {line}");
    }
    s.push_str("#\n");
    let mut ns = "";
    for c in clusters {
        if c.namespace != ns {
            ns = &c.namespace;
            let _ = writeln!(s, "#   namespace {ns}");
        }
        let _ = writeln!(
            s,
            "#   cluster {}, KCP {} (desired {n}, ready {n}), kubeconfig at {{{{{}}}}}:",
            c.name,
            c.kcp(),
            c.url_var,
            n = c.control_plane
        );
        let nodes: Vec<String> = c
            .nodes()
            .iter()
            .map(|(n, ip)| format!("{n} {ip}"))
            .collect();
        for chunk in nodes.chunks(3) {
            let _ = writeln!(s, "#     {}", chunk.join(" | "));
        }
    }
    s.push_str(
        "#   each cluster: 2 workers (.21-22), secrets <cluster>-{kubeconfig,ssh,ssh-password,ca,etcd}\n",
    );
    let mut vars: Vec<&str> = clusters.iter().map(|c| c.url_var.as_str()).collect();
    vars.sort();
    vars.dedup();
    s.push_str("vars:\n");
    for v in vars {
        let _ = writeln!(s, "  {v}: https://127.0.0.1:1");
    }
    s.push_str(
        "groups:\n  vmoperator.vmware.com:\n    versions: [v1alpha1, v1alpha2, v1alpha3]\n    preferredVersion: v1alpha3\n",
    );
    s
}

/// One template file made `c`'s.
fn render(prefix: &str, text: &str, c: &ClusterSpec, template: &[(&str, String)]) -> String {
    let (header, docs) = split(text);
    // A uid some cluster-wide object has keeps one value in the whole cluster (the nodes' owner
    // references to the KCP); the others are the node's own (its Machine, VSphereMachine, VM).
    let shared_uuids: Vec<String> = template
        .iter()
        .flat_map(|(_, t)| split(t).1)
        .filter(|d| !d.contains(T_NODE) && !T_OTHER_NODES.iter().any(|o| d.contains(o)))
        .flat_map(|d| uuids(&d))
        .collect();
    let cluster_seed = format!("{}/{}", c.namespace, c.name);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} from two-clusters/{prefix}-tkc-a.yaml: do not edit; {}",
        build::GENERATED,
        build::REWRITE
    );
    out.push_str(&header);
    let mut first = true;
    let mut emit = |doc: String| {
        if !first {
            out.push_str("---\n");
        }
        first = false;
        out.push_str(&doc);
    };
    for doc in docs {
        if T_OTHER_NODES.iter().any(|o| doc.contains(o)) {
            continue;
        }
        if doc.contains(T_NODE) {
            for (i, (name, ip)) in c.nodes().into_iter().enumerate() {
                let seed = format!("{cluster_seed}/{name}");
                // Sentinels first: a new name may contain the template's (tkc-api has tkc-a).
                let doc = doc
                    .replace(T_NODE, "\u{1}NODE\u{1}")
                    .replace(T_NODE_IP, "\u{1}IP\u{1}")
                    .replace(
                        "esx-02.vsphere.local",
                        &format!("esx-0{}.vsphere.local", i % 3 + 1),
                    );
                let doc = rewrite(&doc, c, &seed, |u| {
                    if shared_uuids.iter().any(|s| s == u) {
                        uuid(&format!("{cluster_seed}/{u}"))
                    } else {
                        uuid(&format!("{seed}/{u}"))
                    }
                });
                emit(
                    doc.replace("\u{1}NODE\u{1}", &name)
                        .replace("\u{1}IP\u{1}", &ip.to_string()),
                );
            }
        } else {
            let mut doc = rewrite(&doc, c, &cluster_seed, |u| {
                uuid(&format!("{cluster_seed}/{u}"))
            });
            if prefix == "20-kcp" {
                doc = replicas(&doc, c.control_plane);
            }
            emit(doc);
        }
    }
    out
}

/// The header comment lines, then the documents (each ending in a newline).
fn split(text: &str) -> (String, Vec<String>) {
    let mut header = String::new();
    let mut docs = vec![String::new()];
    let mut in_header = true;
    for line in text.lines() {
        if in_header && line.starts_with('#') {
            if line.starts_with(build::GENERATED) {
                continue;
            }
            header.push_str(line);
            header.push('\n');
            continue;
        }
        in_header = false;
        if line == "---" {
            docs.push(String::new());
        } else {
            let d = docs.last_mut().expect("one at least");
            d.push_str(line);
            d.push('\n');
        }
    }
    docs.retain(|d| !d.trim().is_empty());
    (header, docs)
}

/// Names, namespace, addresses, placeholders, uids and per-VM identifiers made `c`'s.
fn rewrite(doc: &str, c: &ClusterSpec, seed: &str, uid: impl Fn(&str) -> String) -> String {
    let kcp = c.kcp();
    // Through sentinels: a new name may contain a template's name (tkc-api has tkc-a).
    let pairs = [
        (T_KCP.to_string(), kcp),
        (T_CLUSTER.to_string(), c.name.clone()),
        (T_CLUSTER.to_uppercase(), c.name.to_uppercase()),
        (T_NAMESPACE.to_string(), c.namespace.clone()),
        (T_SUBNET.to_string(), c.subnet_prefix()),
        (
            "{{WORKLOAD_URL}}".to_string(),
            format!("{{{{{}}}}}", c.url_var),
        ),
        (
            "{{WORKLOAD_HOST}}".to_string(),
            format!("{{{{{}}}}}", c.endpoint_var("HOST")),
        ),
        (
            "{{WORKLOAD_PORT}}".to_string(),
            format!("{{{{{}}}}}", c.endpoint_var("PORT")),
        ),
    ];
    let mut doc = doc.to_string();
    for (i, (from, _)) in pairs.iter().enumerate() {
        doc = doc.replace(from.as_str(), &format!("\u{2}{i}\u{2}"));
    }
    for (i, (_, to)) in pairs.iter().enumerate() {
        doc = doc.replace(&format!("\u{2}{i}\u{2}"), to);
    }
    for u in uuids(&doc) {
        doc = doc.replace(&u, &uid(&u));
    }
    let mut out = String::new();
    // The VM's MAC, wherever its line is: the link-local address may come before it.
    let mac = doc
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("macAddr: "))
        .map(|v| mac_tail(seed, v));
    for line in doc.lines() {
        out.push_str(&per_vm(line, seed, mac));
        out.push('\n');
    }
    out
}

/// machineID, uniqueID, MAC and the link-local address derived from the line's own value (so
/// every copy of the template node differs, and the same value stays the same in one cluster);
/// the link-local address is the EUI-64 one of the document's MAC (`mac`, already derived).
fn per_vm(line: &str, seed: &str, mac: Option<[u8; 3]>) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let t = line.trim_start();
    if let Some(v) = t.strip_prefix("machineID: ") {
        let h = fnv(&format!("{seed}/machine/{v}"));
        let h2 = fnv(&format!("{seed}/machine/{v}#"));
        return format!("{indent}machineID: {h:016x}{h2:016x}");
    }
    if let Some(v) = t.strip_prefix("uniqueID: vm-") {
        let h = fnv(&format!("{seed}/vm/{v}")) % 9000 + 1000;
        return format!("{indent}uniqueID: vm-{h}");
    }
    if let Some(v) = t.strip_prefix("macAddr: ") {
        let [b3, b4, b5] = mac_tail(seed, v);
        return format!("{indent}macAddr: 00:50:56:{b3:02x}:{b4:02x}:{b5:02x}");
    }
    if let (Some(_), Some([b3, b4, b5])) = (t.strip_prefix("- address: fe80::"), mac) {
        return format!("{indent}- address: fe80::250:56ff:fe{b3:02x}:{b4:02x}{b5:02x}/64");
    }
    line.to_string()
}

fn mac_tail(seed: &str, mac: &str) -> [u8; 3] {
    let h = fnv(&format!("{seed}/mac/{mac}")).to_be_bytes();
    [h[0] & 0x3f, h[1], h[2]]
}

/// The UUIDs (8-4-4-4-12 lower-case hex) in `text`, each once, in order.
fn uuids(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i + 36 <= b.len() {
        let s = &b[i..i + 36];
        let ok = s.iter().enumerate().all(|(j, ch)| match j {
            8 | 13 | 18 | 23 => *ch == b'-',
            _ => ch.is_ascii_digit() || (b'a'..=b'f').contains(ch),
        });
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if ok && boundary {
            let u = String::from_utf8_lossy(s).into_owned();
            if !out.contains(&u) {
                out.push(u);
            }
            i += 36;
        } else {
            i += 1;
        }
    }
    out
}

/// The KCP's replica counts (spec and status, v1beta1 and v1beta2) made `n`.
fn replicas(doc: &str, n: usize) -> String {
    doc.lines()
        .map(|line| {
            let t = line.trim_start();
            let indent = &line[..line.len() - t.len()];
            for key in [
                "replicas",
                "readyReplicas",
                "updatedReplicas",
                "availableReplicas",
                "upToDateReplicas",
            ] {
                if t == format!("{key}: 3") {
                    return format!("{indent}{key}: {n}\n");
                }
            }
            format!("{line}\n")
        })
        .collect()
}

/// FNV-1a, 64 bits: stable across Rust releases (the committed sets depend on it).
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A name-based (version 5 layout) UUID from `seed`.
fn uuid(seed: &str) -> String {
    let a = fnv(seed);
    let b = fnv(&format!("{seed}#uuid"));
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x50;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h: String = bytes.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Five characters of the alphabet Kubernetes' generated names use (`utilrand.String`).
fn suffix(seed: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = fnv(seed);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(h % ALPHABET.len() as u64) as usize] as char;
            h /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::{supervisor_set, FakeApi, FakeConfig};

    /// The committed generated sets are what the generators write now: the builder's
    /// ([`sets::defs`]) and the many-cluster ones ([`three_clusters`], [`seven_nodes`]).
    #[test]
    fn committed_sets_are_up_to_date() {
        let write = std::env::var_os("ETCDNET_WRITE_FIXTURES").is_some_and(|v| v == "1");
        let defs = sets::defs();
        let mut wanted: Vec<(String, BTreeMap<String, String>)> = Vec::new();
        for def in &defs {
            wanted.push((def.name.to_string(), build::render(def, &defs).unwrap()));
        }
        let many = [
            (
                "three-clusters",
                "three-clusters — one vSphere Namespace, three TKG clusters of 3 control-plane nodes, each on\nits own lab subnet (198.18.1-3.x) and with its own workload API ({{WORKLOAD_URL_TKC_WEB}}, ...).\nExpected: each cluster has exactly its 3 nodes; three labs (one per cluster) run side by side.",
                three_clusters(),
            ),
            (
                "seven-nodes",
                "seven-nodes — one TKG cluster with 7 control-plane nodes (198.18.7.11-17), all healthy.\nExpected: 7 nodes, every one a lab node of labplan::plan(&set, None).",
                seven_nodes(),
            ),
        ];
        for (set, title, clusters) in many {
            let fresh = tempfile::tempdir().unwrap();
            write_set(fresh.path(), title, &clusters).unwrap();
            let files = std::fs::read_dir(fresh.path())
                .unwrap()
                .map(|e| {
                    let p = e.unwrap().path();
                    let name = p.file_name().unwrap().to_str().unwrap().to_string();
                    (name, std::fs::read_to_string(&p).unwrap())
                })
                .collect();
            wanted.push((set.to_string(), files));
        }
        for (set, files) in wanted {
            let committed = supervisor_set(&set);
            if write {
                build::write(&committed, &files).unwrap();
                continue;
            }
            // Every generated file there is one it writes, and says the same.
            let generated: Vec<String> = std::fs::read_dir(&committed)
                .unwrap_or_else(|e| panic!("{}: {e}", committed.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    std::fs::read_to_string(p).is_ok_and(|t| t.starts_with(build::GENERATED))
                })
                .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
                .collect();
            for f in generated {
                assert!(
                    files.contains_key(&f),
                    "{set}/{f}: generated, but no longer: {}",
                    build::REWRITE
                );
            }
            for (f, text) in &files {
                assert_eq!(
                    std::fs::read_to_string(committed.join(f)).ok().as_ref(),
                    Some(text),
                    "{set}/{f} is not what the generator writes: {}",
                    build::REWRITE
                );
            }
        }
    }

    #[test]
    fn a_generated_set_serves_every_cluster_with_its_own_names_and_uids() {
        let dir = tempfile::tempdir().unwrap();
        let clusters = many_clusters(2, 3);
        write_set(dir.path(), "test", &clusters).unwrap();
        let text: String = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .flat_map(|t| {
                t.lines()
                    .filter(|l| !l.trim_start().starts_with('#'))
                    .map(|l| format!("{l}\n"))
                    .collect::<Vec<_>>()
            })
            .collect();
        for left in ["tkc-a", "ns-shared", "m2c8r", "4rz8m", "198.18.0."] {
            assert!(!text.contains(left), "{left} left over");
        }
        let api = FakeApi::start(dir.path()).unwrap();
        let machines = api.objects("cluster.x-k8s.io", "machines");
        assert_eq!(machines.len(), 6 * 5, "3 control plane + 2 workers each");
        let mut uids: Vec<String> = api
            .all_objects()
            .iter()
            .map(|o| o["metadata"]["uid"].as_str().unwrap().to_string())
            .collect();
        let n = uids.len();
        uids.sort();
        uids.dedup();
        assert_eq!(uids.len(), n, "every uid is unique");
        // Owner references still point at their owners (workers' MachineSets are not served).
        for m in machines
            .iter()
            .filter(|m| m["metadata"]["labels"]["cluster.x-k8s.io/control-plane"].is_string())
        {
            let owner = &m["metadata"]["ownerReferences"][0];
            let (kind, name) = (
                owner["kind"].as_str().unwrap(),
                owner["name"].as_str().unwrap(),
            );
            let ns = m["metadata"]["namespace"].as_str().unwrap();
            let found = api
                .all_objects()
                .into_iter()
                .find(|o| {
                    o["kind"] == kind
                        && o["metadata"]["name"] == name
                        && o["metadata"]["namespace"] == ns
                })
                .unwrap_or_else(|| panic!("no owner {kind} {name}"));
            assert_eq!(
                found["metadata"]["uid"], owner["uid"],
                "{}",
                m["metadata"]["name"]
            );
        }
        for c in &clusters {
            let cfg = FakeConfig::from_dir(dir.path()).unwrap();
            let plan = crate::labplan::plan(&cfg, Some(&c.name)).unwrap();
            let got: Vec<(String, Ipv4Addr)> =
                plan.iter().map(|n| (n.name.clone(), n.ip)).collect();
            assert_eq!(got, c.nodes(), "{}", c.name);
        }
    }

    #[test]
    fn seven_nodes_has_seven_distinct_vms() {
        let c = &seven_nodes()[0];
        let nodes = c.nodes();
        assert_eq!(nodes.len(), 7);
        let mut names: Vec<&str> = nodes.iter().map(|(n, _)| n.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), 7);
        assert_eq!(nodes[6].1, Ipv4Addr::new(198, 18, 7, 17));
    }

    #[test]
    fn bad_specs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = seven_nodes();
        c[0].control_plane = 10;
        assert!(write_set(dir.path(), "x", &c).is_err());
        let mut two = three_clusters();
        two[1].subnet = two[0].subnet;
        assert!(write_set(dir.path(), "x", &two).is_err());
        let mut far = seven_nodes();
        far[0].subnet = [10, 0, 0];
        assert!(write_set(dir.path(), "x", &far).is_err());
    }
}
