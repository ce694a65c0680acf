//! `analyse`'s bounds ([`Caps`]): the largest bundle the caps allow is read with every entry
//! parsed once and judged in bounded time; a manifest naming something twice is refused before
//! it is parsed twice; and, as property tests, any archive within the caps is a bundle or a
//! one-line refusal, never a panic, its work bounded by its bytes.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::json;

use super::read::*;
use super::write::*;
use super::*;
use crate::probe::NodeReport;
use crate::probe::{PortState, ProbeOutput};
use crate::report::DiagnoseReport;
use crate::testing::cpu_time;
use serde_json::Value;
use std::io::Write;

const HEALTHY: &str = include_str!("../../tests/fixtures/probe-output/healthy-node.json");
/// The template node of fixture set `quorum-lost`, and its IP.
const CP: &str = "tkc-prod-7xk2p-4rz8m";
const CP_IP: &str = "198.18.0.11";

/// The article's cluster (fixture set `quorum-lost`) as objects: Cluster, KCP, Machines, VMs.
fn fixture_objects() -> Vec<Value> {
    crate::testing::fixture_objects("quorum-lost")
}

fn ip(c: usize, i: usize) -> String {
    format!("10.{}.{}.{}", c / 200, c % 200, 10 + i)
}

fn node_name(i: usize) -> String {
    format!("tkc-prod-7xk2p-n{i:02}")
}

/// A copy of `template` with the template node's name and IP replaced, in namespace `ns`.
fn renamed(template: &Value, name: &str, ip: &str, ns: &str) -> Value {
    let text = serde_json::to_string(template)
        .unwrap()
        .replace(CP, name)
        .replace(CP_IP, ip)
        .replace("\"ns-prod\"", &format!("{ns:?}"));
    serde_json::from_str(&text).unwrap()
}

/// Cluster `c` of a bundle: `n` nodes (the KCP wants `n - 1`, so all are within its replicas
/// plus the surplus), each probed, its document dialling every node on both ports; and
/// `objects` Supervisor objects, the ones past the cluster's own being labelled Machines the
/// KCP seems to control (beyond the replicas: a flood, never probed).
fn evidence(c: usize, n: usize, objects: usize) -> Evidence {
    let ns = format!("ns-{c:03}");
    let fixture = fixture_objects();
    let kind = |k: &'static str| fixture.iter().filter(move |o| o["kind"] == k);
    let machine = kind("Machine")
        .find(|o| o["metadata"]["name"] == CP)
        .unwrap();
    let vm = kind("VirtualMachine")
        .find(|o| o["metadata"]["name"] == CP)
        .unwrap();
    let mut out: Vec<Value> = ["Cluster", "KubeadmControlPlane"]
        .iter()
        .map(|k| renamed(kind(k).next().unwrap(), CP, CP_IP, &ns))
        .collect();
    out[1]["spec"]["replicas"] = json!(n - 1);
    for i in 0..n {
        out.push(renamed(machine, &node_name(i), &ip(c, i), &ns));
        out.push(renamed(vm, &node_name(i), &ip(c, i), &ns));
    }
    for k in 0..objects.saturating_sub(out.len()) {
        // Controlled by the KCP as the real ones are (its uid is readable, so forgeable): only
        // the replicas' bound keeps these out of the nodes.
        out.push(renamed(
            machine,
            &format!("tkc-prod-rogue-{k:03}"),
            "192.0.2.1",
            &ns,
        ));
    }
    let ips: Vec<String> = (0..n).map(|i| ip(c, i)).collect();
    let nodes = (0..n)
        .map(|i| {
            let mut doc: Value = serde_json::from_str(HEALTHY.trim()).unwrap();
            doc["nodeIp"] = json!(ips[i]);
            doc["ips"] = json!([ips[i]]);
            doc["hostname"] = json!(node_name(i));
            let template = doc["paths"][0].clone();
            doc["paths"] = ips
                .iter()
                .flat_map(|to| {
                    [2379, 2380].map(|port| {
                        let mut p = template.clone();
                        p["target"] = json!(to);
                        p["port"] = json!(port);
                        p["own"] = json!(*to == ips[i]);
                        p
                    })
                })
                .collect();
            // As the probe prints it: `schemaVersion` first.
            let version = doc
                .as_object_mut()
                .unwrap()
                .remove("schemaVersion")
                .unwrap();
            let rest = serde_json::to_string(&doc).unwrap();
            let text = format!("{{\"schemaVersion\":{version},{}", &rest[1..]);
            let out: ProbeOutput = crate::probe::parse::parse(&node_name(i), text.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
            NodeReport {
                name: node_name(i),
                ip: Some(ips[i].parse().unwrap()),
                outcome: Ok(out),
                reach_from: None,
                reach: vec![PortReach {
                    port: 22,
                    state: PortState::Open,
                }],
                host_key: None,
            }
        })
        .collect();
    // The flood of labelled Machines is part of the facts: all used.
    let mut e = Evidence::by_jumpbox(&ns, "tkc-prod", out, nodes);
    e.duration_ms = 1234;
    e
}

/// `files` as a .tar.gz, every entry written as it is.
fn archive(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, data) in files {
        let mut h = tar::Header::new_gnu();
        // A path tar will not write (`..`, absolute) is left out: the reader's own tests
        // cover those.
        if h.set_path(path).is_err() {
            continue;
        }
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, data.as_slice()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

/// The objects per cluster that fill the entry cap once every cluster has its nodes.
fn objects_filling(caps: Caps) -> usize {
    let per_cluster = (caps.count - 1) / caps.clusters;
    // report, discovery, workload-api, route; a probe.out, etcd.log and reach.json per node.
    (per_cluster - 4 - 3 * caps.nodes).min(caps.objects)
}

/// Analyses `bytes` as `analyse` does (read, then judge and render every cluster); returns
/// the bytes parsed and the clusters' reports (`None` for one that could not be judged).
fn analyse(
    bytes: &[u8],
    caps: Caps,
) -> std::result::Result<(u64, Vec<Option<DiagnoseReport>>), String> {
    let files = entries(bytes, caps)?;
    let (bundle, parsed) = read_entries(&files, caps)?;
    let stored: u64 = files.values().map(|b| b.len() as u64).sum();
    assert!(parsed <= stored, "parsed {parsed} of {stored} bytes");
    let reports = (bundle.evidence.iter())
        .map(|e| {
            let r = e.judge(&Default::default()).ok()?;
            crate::render::output(
                &r,
                crate::render::Format::Wide,
                crate::render::Paint::default(),
            )
            .unwrap();
            Some(r)
        })
        .collect();
    Ok((parsed, reports))
}

/// The largest bundle within the caps, by count (the most clusters, each with the most nodes,
/// each node dialling every node on both ports, and objects up to the entry cap, the extra ones a
/// flood of labelled Machines), is analysed in bounded time with every entry parsed once: the
/// bytes parsed are at most the bytes stored (a manifest listing one node's document many times
/// must not have it parsed again each time).
// Long: CPU, in a debug build: the largest bundle every cap allows, built, written and analysed.
#[test]
fn the_largest_bundle_within_the_caps_is_read_once_in_bounded_time() {
    let objects = objects_filling(CAPS);
    assert!(objects > 2 + 2 * CAPS.nodes, "room for a flood: {objects}");
    let one = evidence(0, CAPS.nodes, objects);
    // Every cluster alike but for its namespace and IPs; made once, the rest renamed.
    let files_of_one = files(std::slice::from_ref(&one), vec![]).unwrap();
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    let mut manifest: Manifest = serde_json::from_slice(&files_of_one[0].1).unwrap();
    let template = manifest.clusters[0].clone();
    manifest.clusters.clear();
    for c in 0..CAPS.clusters {
        let ns = format!("ns-{c:03}");
        let mut entry = template.clone();
        entry.namespace = ns.clone();
        entry.dir = format!("{ns}/tkc-prod");
        manifest.clusters.push(entry);
        for (path, bytes) in &files_of_one[1..] {
            let text = String::from_utf8_lossy(bytes)
                .replace("ns-000", &ns)
                .replace(
                    "10.0.0.",
                    &format!("{}.", ip(c, 0).rsplit_once('.').unwrap().0),
                );
            all.push((
                path.replace("ns-000/", &format!("{ns}/")),
                text.into_bytes(),
            ));
        }
    }
    all.insert(0, (MANIFEST.into(), pretty(&manifest).unwrap()));
    assert!(all.len() <= CAPS.count, "{} entries", all.len());
    let bytes = archive(&all);

    let started = cpu_time();
    let (parsed, reports) = analyse(&bytes, CAPS).unwrap();
    let took = cpu_time() - started;
    assert_eq!(reports.len(), CAPS.clusters);
    // Every entry parsed exactly once, but the reports and logs (for people; the log is
    // also inside probe.out), which are never parsed.
    let unread = |p: &str| p.ends_with("/report.json") || p.ends_with("/etcd.log");
    let read: u64 = all
        .iter()
        .filter(|(p, _)| !unread(p))
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert_eq!(parsed, read);
    eprintln!(
        "analysed {} entries, {read} bytes parsed, in {took:?}",
        all.len()
    );
    // About 100 MB of JSON parsed and 100 clusters judged: measured 51 s in a debug build on two
    // cores busy with other builds (a few seconds in release). Generous, and still a bound; CPU
    // time, so what else runs on the cores does not count.
    assert!(took < Duration::from_secs(300), "took {took:?}");
    // The flood is a finding, and no node past the cap is a node (the analysis's own report:
    // reading the 100 MB again would double the test's time).
    let r = reports[0].as_ref().expect("the first cluster judged");
    assert_eq!(r.nodes.len(), CAPS.nodes);
    assert!(r.findings.iter().any(
        |f| f.code == crate::report::v1alpha2::FindingCode::ControlPlaneMachinesBeyondReplicas
    ));
}

fn small() -> (Vec<(String, Vec<u8>)>, Manifest) {
    let files = files(&[evidence(0, 3, 12), evidence(1, 3, 8)], vec![]).unwrap();
    let m: Manifest = serde_json::from_slice(&files[0].1).unwrap();
    (files, m)
}

fn with_manifest(files: &[(String, Vec<u8>)], m: &Manifest) -> Vec<u8> {
    let mut files = files.to_vec();
    files[0].1 = pretty(m).unwrap();
    archive(&files)
}

fn refused(bytes: &[u8]) -> String {
    let e = analyse(bytes, CAPS).unwrap_err();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

/// A manifest naming a node, an object, a cluster or a folder twice is refused in one line
/// naming it, before anything is parsed twice; a manifest over a cap likewise (else a node listed
/// 10 000 times is parsed and analysed 10 000 times).
#[test]
fn a_manifest_naming_anything_twice_is_refused_naming_it() {
    let (files, m) = small();
    assert!(analyse(&archive(&files), CAPS).is_ok());

    let mut twice = m.clone();
    let node = twice.clusters[0].nodes[0].clone();
    twice.clusters[0].nodes = vec![node.clone(); 10_000];
    let started = cpu_time();
    let e = refused(&with_manifest(&files, &twice));
    assert!(cpu_time() - started < Duration::from_secs(5));
    assert!(
        e.contains("10000 nodes for cluster \"ns-000/tkc-prod\", more than the 16"),
        "{e}"
    );

    let mut twice = m.clone();
    twice.clusters[0].nodes.push(node.clone());
    let e = refused(&with_manifest(&files, &twice));
    assert!(
        e.contains(&format!(
            "lists node {:?} of cluster \"ns-000/tkc-prod\" twice",
            node.name
        )),
        "{e}"
    );

    // The same folder under another name: the entry itself is named.
    let mut twice = m.clone();
    let mut alias = node.clone();
    alias.name = "another".into();
    alias.dir = format!("./{}", node.dir);
    twice.clusters[0].nodes.push(alias);
    let e = refused(&with_manifest(&files, &twice));
    assert!(
        e.contains(&format!(
            "names entry \"ns-000/tkc-prod/{}/reach.json\" twice",
            node.dir
        )),
        "{e}"
    );

    let mut twice = m.clone();
    let o = twice.clusters[0].objects[0].clone();
    twice.clusters[0].objects.push(o.clone());
    let e = refused(&with_manifest(&files, &twice));
    assert!(
        e.contains(&format!("names entry \"ns-000/tkc-prod/{o}\" twice")),
        "{e}"
    );
    let mut twice = m.clone();
    twice.clusters[0].objects.push("../../manifest.json".into());
    twice.clusters[0]
        .objects
        .push("x/../../../manifest.json".into());
    assert!(refused(&with_manifest(&files, &twice)).contains("`..` in path refused"));

    let mut twice = m.clone();
    twice.clusters.push(twice.clusters[0].clone());
    assert!(
        refused(&with_manifest(&files, &twice)).contains("lists cluster \"ns-000/tkc-prod\" twice")
    );
    let mut twice = m.clone();
    twice.clusters[1].dir = twice.clusters[0].dir.clone();
    assert!(refused(&with_manifest(&files, &twice))
        .contains("names entry \"ns-000/tkc-prod/discovery.json\" twice"));

    let mut many = m.clone();
    many.clusters = (0..=CAPS.clusters)
        .map(|i| ClusterEntry {
            cluster: format!("c{i}"),
            ..m.clusters[0].clone()
        })
        .collect();
    assert!(
        refused(&with_manifest(&files, &many)).contains("lists 101 clusters, more than the 100")
    );
    let mut many = m.clone();
    many.clusters[0].objects = vec!["x".into(); CAPS.objects + 1];
    assert!(
        refused(&with_manifest(&files, &many)).contains(&format!("{} objects", CAPS.objects + 1))
    );
}

/// What the writer would write past the caps it does not: an error, or the objects cut.
#[test]
fn the_writer_keeps_to_the_caps() {
    let e = files(&vec![evidence(0, 1, 0); CAPS.clusters + 1], vec![]).unwrap_err();
    assert!(
        e.to_string()
            .contains("101 clusters: an evidence bundle holds at most 100"),
        "{e}"
    );
    let mut big = evidence(0, 3, 0);
    big.nodes = vec![big.nodes[0].clone(); CAPS.nodes + 1];
    assert!(files(&[big], vec![]).is_err());
    let flood = evidence(0, 3, CAPS.objects + 50);
    let written = files(&[flood], vec![]).unwrap();
    let m: Manifest = serde_json::from_slice(&written[0].1).unwrap();
    assert_eq!(m.clusters[0].objects.len(), CAPS.objects);
    assert!(analyse(&archive(&written), CAPS).is_ok());
}

fn config(cases: u32) -> Config {
    let env = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            env.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
            env.rng_seed
        } else {
            RngSeed::Fixed(0x6275_6e64_6c65)
        },
        failure_persistence: None,
        ..env
    }
}

/// One change to a good bundle's entries, as a hostile or broken tool would make it.
#[derive(Debug, Clone)]
enum Change {
    /// An entry's bytes replaced (by index into the entries).
    Bytes(usize, Vec<u8>),
    /// An entry dropped.
    Drop(usize),
    /// An entry added under a path of its own.
    Add(String, Vec<u8>),
    /// A JSON entry's value at some depth replaced by another JSON value.
    Json(usize, Vec<String>, Value),
    /// The manifest's lists repeated: a node `k` times, an object `k` times.
    Repeat(usize, usize),
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,20}".prop_map(Value::from),
        Just(json!("../../etc/passwd")),
        Just(json!("nodes/tkc-prod-7xk2p-n00")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("name".to_string()),
                    Just("dir".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn change() -> impl Strategy<Value = Change> {
    let key = prop_oneof![
        Just("clusters".to_string()),
        Just("nodes".to_string()),
        Just("objects".to_string()),
        Just("0".to_string()),
        Just("dir".to_string()),
        Just("paths".to_string()),
        Just("metadata".to_string()),
        Just("spec".to_string()),
        "[a-z]{1,8}",
    ];
    prop_oneof![
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(i, b)| Change::Bytes(i, b)),
        any::<usize>().prop_map(Change::Drop),
        (
            "[a-z./_-]{1,30}",
            proptest::collection::vec(any::<u8>(), 0..32)
        )
            .prop_map(|(p, b)| Change::Add(p, b)),
        (
            any::<usize>(),
            proptest::collection::vec(key, 1..4),
            any_json()
        )
            .prop_map(|(i, k, v)| Change::Json(i, k, v)),
        (0usize..40, 0usize..40).prop_map(|(a, b)| Change::Repeat(a, b)),
    ]
}

/// `v` at `keys` (array indices as numbers), made if absent, set to `to`.
fn set(v: &mut Value, keys: &[String], to: Value) {
    let Some((first, rest)) = keys.split_first() else {
        *v = to;
        return;
    };
    let next = match v {
        Value::Array(a) if !a.is_empty() => {
            let i = first.parse::<usize>().unwrap_or(0) % a.len();
            &mut a[i]
        }
        Value::Object(o) => o.entry(first.clone()).or_insert(Value::Null),
        _ => {
            *v = to;
            return;
        }
    };
    set(next, rest, to)
}

fn apply(files: &mut Vec<(String, Vec<u8>)>, c: Change) {
    let n = files.len();
    match c {
        Change::Bytes(i, b) => files[i % n].1 = b,
        Change::Drop(i) => {
            files.remove(i % n);
        }
        Change::Add(p, b) => files.push((p, b)),
        Change::Json(i, keys, to) => {
            let e = &mut files[i % n];
            if let Ok(mut v) = serde_json::from_slice::<Value>(&e.1) {
                set(&mut v, &keys, to);
                e.1 = serde_json::to_vec(&v).unwrap();
            }
        }
        Change::Repeat(nodes, objects) => {
            if let Ok(mut m) = serde_json::from_slice::<Manifest>(&files[0].1) {
                if let Some(c) = m.clusters.first_mut() {
                    if let Some(node) = c.nodes.first().cloned() {
                        c.nodes.extend(std::iter::repeat_n(node, nodes));
                    }
                    if let Some(o) = c.objects.first().cloned() {
                        c.objects.extend(std::iter::repeat_n(o, objects));
                    }
                }
                files[0].1 = pretty(&m).unwrap();
            }
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Any archive made from a good bundle by a few hostile changes: `analyse` reports or
    /// refuses in one line, never panics, parses at most what is stored (each entry once),
    /// and takes bounded time.
    #[test]
    fn any_archive_within_the_caps_is_a_report_or_one_line(
        changes in proptest::collection::vec(change(), 0..6)
    ) {
        let (mut files, _) = small();
        for c in changes {
            if !files.is_empty() {
                apply(&mut files, c);
            }
        }
        let bytes = archive(&files);
        let started = cpu_time();
        match analyse(&bytes, CAPS) {
            Ok(_) => {}
            Err(e) => prop_assert!(!e.contains('\n'), "{e}"),
        }
        prop_assert!(cpu_time() - started < Duration::from_secs(20));
    }

    /// Arbitrary bytes, gzipped or not: a refusal in one line.
    #[test]
    fn any_bytes_are_refused_in_one_line(raw in proptest::collection::vec(any::<u8>(), 0..600), gz in any::<bool>()) {
        let bytes = if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&raw).unwrap();
            e.finish().unwrap()
        } else {
            raw
        };
        if let Err(e) = analyse(&bytes, CAPS) {
            prop_assert!(!e.contains('\n'), "{e}");
        }
    }
}

/// The cluster's evidence (3 nodes) with NSX Manager's reading `read`.
fn with_nsx(read: crate::nsxmanager::raw::NsxRead) -> Evidence {
    let mut e = evidence(0, 3, 0);
    e.nsx_manager = Some(read);
    e
}

/// A doctored bundle whose `nsx-manager.json` lists 20,000 policies without a path, each also
/// "read" with a rule (what a live reader never keeps: its object cap cuts the list at 5,000):
/// `analyse` cuts it to the live caps before judging it, within bounded time, and says the
/// cut. Compared pairwise, as they were, the judging alone took hours.
#[test]
fn twenty_thousand_pathless_policies_in_a_bundle_are_bounded_and_said() {
    let read = crate::nsxmanager::bound::tests::flooded(20_000);
    let mut written = files(&[evidence(0, 3, 0)], vec![]).unwrap();
    // The manifest names the reading, the entry holds it whole (not as the writer cuts it).
    let mut m: Manifest = serde_json::from_slice(&written[0].1).unwrap();
    m.clusters[0].nsx_manager = Some("nsx-manager.json".into());
    written[0].1 = pretty(&m).unwrap();
    let dir = m.clusters[0].dir.clone();
    written.push((
        format!("{dir}/nsx-manager.json"),
        serde_json::to_vec(&read).unwrap(),
    ));
    let started = cpu_time();
    let (_, reports) = analyse(&archive(&written), CAPS).unwrap();
    let took = cpu_time() - started;
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let r = reports[0].as_ref().unwrap();
    assert!(
        r.verdict.notes.iter().any(|n| n
            .starts_with("NSX Manager: not read: nsx-manager.json: security-policies")
            && n.contains("more than 5000")),
        "{:#?}",
        r.verdict.notes
    );
}

/// The plugin's own bundle of a reading larger than an entry may be (5,000 policies, each with
/// an 8,000-character description, listed and read: about 80 MiB): written within the
/// per-entry cap, the cut said, and `analyse` accepts it.
#[test]
fn the_plugins_own_bundle_of_a_huge_reading_is_accepted() {
    let mut read = crate::nsxmanager::bound::tests::flooded(0);
    let text = "x".repeat(8000);
    for n in 0..5000 {
        let p = json!({"path": format!("/infra/domains/default/security-policies/big-{n}"), "description": text, "category": "Application", "sequence_number": 1000 + n});
        read.policies.results.push(p.clone());
        read.rules.push(crate::nsxmanager::raw::PolicyRead {
            policy: p,
            rules: crate::nsxmanager::raw::Listed::default(),
        });
    }
    let written = files(&[with_nsx(read)], vec![]).unwrap();
    let (_, entry) = written
        .iter()
        .find(|(p, _)| p.ends_with("/nsx-manager.json"))
        .unwrap();
    assert!(entry.len() as u64 <= CAPS.entry, "{} bytes", entry.len());
    let (_, reports) = analyse(&archive(&written), CAPS).unwrap();
    let r = reports[0].as_ref().unwrap();
    assert!(
        r.verdict
            .notes
            .iter()
            .any(|n| n.contains("cut to fit the bundle's 32 MiB per entry")),
        "{:#?}",
        r.verdict.notes
    );
}
