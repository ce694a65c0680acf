//! The bundle written and read back; hostile archives refused in one line.

use super::read::*;
use super::write::keep;
use super::write::*;
use super::*;
use crate::probe::{NodeReport, ReachErrorKind};
use crate::probe::{PortState, ProbeOutput};
use crate::supervisor::Inventory;
use serde_json::json;
use serde_json::Value;
use std::io::Write;

const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";
const CP: [&str; 3] = [
    "tkc-prod-7xk2p-4rz8m",
    "tkc-prod-7xk2p-9qtvw",
    "tkc-prod-7xk2p-bx2lk",
];
const HEALTHY: &str = include_str!("../../tests/fixtures/probe-output/healthy-node.json");

/// The article's cluster as the fake Supervisor serves it (fixture set `quorum-lost`).
fn objects() -> Vec<Value> {
    let all = crate::testing::fixture_objects("quorum-lost");
    Inventory::from_objects(NS, crate::testing::supervisor_apis(), &all).objects_of(CLUSTER)
}

/// Node `i`'s healthy document, as a node would print it between noise.
fn printed(i: usize) -> (String, ProbeOutput) {
    let ip = format!("198.18.0.1{}", i + 1);
    let doc = HEALTHY
        .trim()
        .replace(
            "\"nodeIp\":\"198.18.0.11\"",
            &format!("\"nodeIp\":\"{ip}\""),
        )
        .replace("\"ips\":[\"198.18.0.11\"]", &format!("\"ips\":[\"{ip}\"]"))
        .replace(
            "\"hostname\":\"tkc-1-control-plane-node1\"",
            &format!("\"hostname\":\"{}\"", CP[i]),
        );
    let noisy = format!("Welcome to the VM\n{doc}\nlogout\n");
    let out = crate::probe::parse::parse(CP[i], noisy.as_bytes()).unwrap();
    (doc, out)
}

/// Two nodes probed, the third unreached with the Supervisor's view of its ports.
fn evidence() -> Evidence {
    let mut nodes: Vec<NodeReport> = (0..2)
        .map(|i| NodeReport {
            name: CP[i].into(),
            ip: Some(format!("198.18.0.1{}", i + 1).parse().unwrap()),
            outcome: Ok(printed(i).1),
            reach_from: None,
            reach: vec![PortReach {
                port: 22,
                state: PortState::Open,
            }],
            host_key: Some(HostKey {
                key_type: "ED25519".into(),
                sha256: "SHA256:abc".into(),
            }),
        })
        .collect();
    nodes.push(NodeReport {
        name: CP[2].into(),
        ip: Some("198.18.0.13".parse().unwrap()),
        outcome: Err(ReachError {
            kind: ReachErrorKind::Unreachable,
            message: "ssh: connect to host 198.18.0.13 port 22: Connection timed out".into(),
        }),
        reach_from: None,
        reach: vec![PortReach {
            port: 22,
            state: PortState::Timeout,
        }],
        host_key: None,
    });
    let mut e = Evidence::by_jumpbox(NS, CLUSTER, objects(), nodes);
    e.duration_ms = 1234;
    e.notes.read_at = Some("2026-12-04T08:00:00Z".into());
    e
}

fn write_bytes(evidence: &[Evidence]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.tar.gz");
    write(&path, evidence).unwrap();
    std::fs::read(path).unwrap()
}

fn read_bytes(bytes: &[u8]) -> std::result::Result<Bundle, String> {
    from_entries(&entries(bytes, CAPS)?, CAPS)
}

#[test]
fn evidence_round_trips() {
    let e = evidence();
    assert!(objects().len() >= 7, "the cluster, KCP, 3 Machines, 3 VMs");
    let bytes = write_bytes(std::slice::from_ref(&e));
    let b = read_bytes(&bytes).unwrap();
    assert_eq!(b.evidence, vec![e.clone()]);
    assert_eq!(
        b.evidence[0].judge(&Default::default()).unwrap(),
        e.judge(&Default::default()).unwrap()
    );
    // The notes of what could not be read of the network go in the manifest and come back.
    let mut noted = e.clone();
    noted.notes.network_unread =
        vec!["list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden".into()];
    let b = read_bytes(&write_bytes(std::slice::from_ref(&noted))).unwrap();
    assert_eq!(b.evidence, vec![noted]);
    // So do the kinds the Supervisor refused: a re-judged bundle joins as the live run did and
    // names the permission.
    let mut refused = e.clone();
    refused.notes.forbidden = vec![crate::supervisor::MissingPermission {
        kind: "VSphereMachine".into(),
        verb: "list".into(),
        group: "vmware.infrastructure.cluster.x-k8s.io".into(),
        resource: "vspheremachines".into(),
        namespace: Some("ns-prod".into()),
    }];
    let b = read_bytes(&write_bytes(std::slice::from_ref(&refused))).unwrap();
    assert_eq!(b.evidence, vec![refused.clone()]);
    assert!(b.evidence[0]
        .judge(&Default::default())
        .unwrap()
        .findings
        .iter()
        .any(|f| f.code == crate::report::v1alpha2::FindingCode::PermissionMissing));
    // The document as printed, not our reading of it: byte for byte, without the noise.
    for i in 0..2 {
        let raw = b.evidence[0].nodes[i]
            .probe()
            .unwrap()
            .raw
            .as_str()
            .unwrap();
        assert_eq!(raw, printed(i).0);
    }
    assert_eq!(b.manifest.format_version, FORMAT_VERSION);
    assert_eq!(b.manifest.clusters[0].dir, "ns-prod/tkc-prod");
    let files = entries(bytes.as_slice(), CAPS).unwrap();
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    for want in [
        "manifest.json",
        "ns-prod/tkc-prod/report.json",
        "ns-prod/tkc-prod/discovery.json",
        "ns-prod/tkc-prod/workload-api.json",
        "ns-prod/tkc-prod/route.json",
        "ns-prod/tkc-prod/supervisor/Cluster-tkc-prod.json",
        "ns-prod/tkc-prod/supervisor/KubeadmControlPlane-tkc-prod-7xk2p.json",
        "ns-prod/tkc-prod/supervisor/Machine-tkc-prod-7xk2p-4rz8m.json",
        "ns-prod/tkc-prod/supervisor/VirtualMachine-tkc-prod-7xk2p-4rz8m.json",
        "ns-prod/tkc-prod/nodes/tkc-prod-7xk2p-4rz8m/probe.out",
        "ns-prod/tkc-prod/nodes/tkc-prod-7xk2p-4rz8m/etcd.log",
        "ns-prod/tkc-prod/nodes/tkc-prod-7xk2p-4rz8m/reach.json",
        "ns-prod/tkc-prod/nodes/tkc-prod-7xk2p-bx2lk/reach.json",
    ] {
        assert!(names.contains(&want), "{want} not in {names:#?}");
    }
    assert!(!names.contains(&"ns-prod/tkc-prod/nodes/tkc-prod-7xk2p-bx2lk/probe.out"));
    assert!(!String::from_utf8_lossy(
        &files["ns-prod/tkc-prod/supervisor/Machine-tkc-prod-7xk2p-4rz8m.json"]
    )
    .contains("managedFields"));
}

#[test]
fn a_newer_bundles_extra_entries_are_ignored_and_reports_are_judged_again() {
    let e = evidence();
    let mut files = entries(write_bytes(std::slice::from_ref(&e)).as_slice(), CAPS).unwrap();
    files.insert("ns-prod/tkc-prod/future.json".into(), b"{\"x\":1}".to_vec());
    files.insert(
        "ns-prod/tkc-prod/report.json".into(),
        b"{\"verdict\":{\"code\":\"Healthy\"}}".to_vec(),
    );
    let b = from_entries(&files, CAPS).unwrap();
    assert_eq!(
        b.evidence[0].judge(&Default::default()).unwrap(),
        e.judge(&Default::default()).unwrap()
    );
}

#[test]
fn names_never_make_paths() {
    for (name, want) in [
        ("tkc-prod", "tkc-prod"),
        ("..", "_.."),
        (".", "_."),
        ("", "_"),
        ("../../etc", "_.._.._etc"),
        ("/abs", "_abs"),
        ("a/b\\c", "a_b_c"),
        ("é\u{1b}[0m", "___0m"),
    ] {
        let got = component(name);
        assert_eq!(got, want, "{name:?}");
        assert!(normalise(&got).is_ok_and(|p| p == got), "{got:?}");
    }
    assert_eq!(component(&"x".repeat(300)).len(), MAX_COMPONENT_CHARS);

    // A hostile namespace and node names: every path stays inside, the names come back as they were.
    let mut e = evidence();
    e.namespace = "../../etc".into();
    e.nodes[0].name = "/root/.ssh".into();
    e.nodes[1].name = "..".into();
    e.nodes[2].name = "..".into();
    let files = files(std::slice::from_ref(&e), vec![]).unwrap();
    for (path, _) in &files {
        assert_eq!(normalise(path).as_deref(), Ok(path.as_str()), "{path}");
        assert!(
            !path.split('/').any(|c| c == ".." || c.is_empty()),
            "{path}"
        );
    }
    let m: Manifest = serde_json::from_slice(&files[0].1).unwrap();
    let dirs: Vec<&str> = m.clusters[0].nodes.iter().map(|n| n.dir.as_str()).collect();
    assert_eq!(dirs, ["nodes/_root_.ssh", "nodes/_..", "nodes/_..-2"]);
    assert_eq!(m.clusters[0].nodes[1].name, "..");
}

/// A .tar.gz of `entries`, each a raw header (path bytes written as they are, bypassing the
/// tar crate's own checks, as a hostile tool would) and its data.
fn hostile(entries: &[(&[u8], tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..path.len()].copy_from_slice(path);
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        if kind.is_symlink() || kind.is_hard_link() {
            h.set_link_name("/etc/shadow").unwrap();
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn refused(bytes: &[u8]) -> String {
    let e = read_bytes(bytes).unwrap_err();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn hostile_archives_are_refused_naming_the_entry() {
    use tar::EntryType::*;
    let cases: &[(&[u8], tar::EntryType, &str)] = &[
        (
            b"../escape.json",
            Regular,
            "\"../escape.json\": `..` in path refused",
        ),
        (b"a/../../b", Regular, "`..` in path refused"),
        (
            b"/etc/passwd",
            Regular,
            "\"/etc/passwd\": absolute path refused",
        ),
        (b"link", Symlink, "entry \"link\" is a symbolic link"),
        (b"hard", Link, "entry \"hard\" is a hard link"),
        (b"dev", Char, "is a device"),
        (b"blk", Block, "is a device"),
        (b"fifo", Fifo, "is a FIFO"),
    ];
    for (path, kind, want) in cases {
        let e = refused(&hostile(&[(*path, *kind, b"{}")]));
        assert!(e.contains(want), "{e}");
    }
    // Twice the same file: which one is meant?
    let e = refused(&hostile(&[
        (b"manifest.json", Regular, b"{}"),
        (b"./manifest.json", Regular, b"{}"),
    ]));
    assert!(e.contains("appears twice"), "{e}");
}

#[test]
fn caps_hold() {
    let bytes = write_bytes(&[evidence()]);
    let small = |c: Caps| entries(bytes.as_slice(), c).unwrap_err();
    let e = small(Caps { entry: 100, ..CAPS });
    assert!(e.contains("more than the 100 an entry may be"), "{e}");
    let e = small(Caps {
        total: 4096,
        ..CAPS
    });
    assert!(e.contains("more than 4096 bytes once decompressed"), "{e}");
    let e = small(Caps { count: 3, ..CAPS });
    assert!(e.contains("more than 3 entries"), "{e}");
    // A header that claims more than the cap is refused before anything is read.
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut h = tar::Header::new_gnu();
    h.set_path("huge.json").unwrap();
    h.set_size(CAPS.entry + 1);
    h.set_cksum();
    b.get_mut().write_all(h.as_bytes()).unwrap();
    let bytes = b.into_inner().unwrap().finish().unwrap();
    let e = refused(&bytes);
    assert!(e.contains("entry \"huge.json\" is 33554433 bytes"), "{e}");
}

#[test]
fn garbage_is_refused_in_one_line() {
    let good = write_bytes(&[evidence()]);
    for cut in [10, good.len() / 2, good.len() - 4] {
        let e = refused(&good[..cut]);
        assert!(
            e.contains("truncated") || e.contains("damaged"),
            "{cut}: {e}"
        );
    }
    for text in [&b"just some text, not gzip at all"[..], b"x", b"\x1f"] {
        let e = refused(text);
        assert!(e.contains("not a .tar.gz"), "{e}");
    }
    assert!(refused(b"").contains("empty file"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&[b'x'; 2000]).unwrap();
    let e = refused(&gz.finish().unwrap());
    assert!(e.contains("not a tar archive"), "{e}");
    let e = refused(&hostile(&[(b"other.txt", tar::EntryType::Regular, b"hi")]));
    assert!(e.contains("no manifest.json"), "{e}");
    let e = refused(&hostile(&[(
        b"manifest.json",
        tar::EntryType::Regular,
        br#"{"kind":"EvidenceBundle","formatVersion":99}"#,
    )]));
    assert!(e.contains("format version 99 is newer"), "{e}");
    let e = refused(&hostile(&[(
        b"manifest.json",
        tar::EntryType::Regular,
        b"{",
    )]));
    assert!(
        e.contains("manifest.json: not what this file should hold"),
        "{e}"
    );
}

#[test]
fn read_names_the_file_and_write_leaves_nothing_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.tar.gz");
    std::fs::write(&path, b"nope").unwrap();
    let e = read(&path).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("bundle {}: ", path.display())),
        "{e}"
    );
    assert_eq!(read(&path).unwrap_err().exit_code(), 2);

    // The target is a folder: nothing replaces it, no temporary file is left.
    let target = dir.path().join("a-folder");
    std::fs::create_dir(&target).unwrap();
    let e = write(&target, &[evidence()]).unwrap_err();
    assert!(e.to_string().starts_with("cannot write bundle"), "{e}");
    let e = write(&dir.path().join("no/such/dir/b.tar.gz"), &[evidence()]).unwrap_err();
    assert!(
        e.to_string()
            .contains("no such file or folder (--bundle needs a folder")
            && !e.to_string().contains("os error"),
        "{e}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// A live run's notes of what it could not read of the network (fixture nsx-vpc-forbidden,
/// served by the fake) go into the evidence, through a bundle, and back into the inventory
/// `analyse` judges from, with the network objects.
#[tokio::test]
async fn the_network_notes_and_objects_go_through_a_bundle() {
    use crate::supervisor::{discovery, Inventory, Scope};
    let api = etcdnet_fakeapi::FakeApi::start_with(
        etcdnet_fakeapi::FakeConfig::from_dir(etcdnet_fakeapi::supervisor_set("nsx-vpc-forbidden"))
            .unwrap()
            .var("WORKLOAD_URL", "https://127.0.0.1:1"),
    )
    .unwrap();
    let client = kube::Client::try_from(kube::Config::new(api.url().parse().unwrap())).unwrap();
    let apis = discovery::discover(&client, "sv").await.unwrap();
    let scope = Scope {
        context: "sv".into(),
        namespace: NS.into(),
        kubectl: Default::default(),
    };
    let inv = Inventory::of_cluster(&client, &apis, &scope, CLUSTER)
        .await
        .unwrap();
    let mut e = evidence();
    e.apis = apis.clone();
    (e.objects, e.essential_objects) = inv.objects_ranked(CLUSTER);
    e.notes.network_unread = Evidence::new(
        "sv",
        CLUSTER,
        &inv,
        e.workload_api.clone(),
        e.route.clone(),
        Vec::new(),
        1,
    )
    .notes
    .network_unread;
    let note = "list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden";
    assert_eq!(e.notes.network_unread, [note]);
    let b = read_bytes(&write_bytes(std::slice::from_ref(&e))).unwrap();
    let back = &b.evidence[0];
    assert_eq!(back, &e);
    let net = Inventory::from_objects(NS, back.apis.clone(), &back.objects)
        .with_network_notes(&back.notes.network_unread)
        .network_of(CLUSTER)
        .unwrap();
    assert_eq!(net.unread, [note]);
    assert_eq!(net.subnet_ports.len(), 3);
    assert!(net.security_policies.is_empty());
}

/// The time of the run goes through a bundle (`clusters[].readAt`): `analyse` measures the
/// Supervisor's conditions' ages against it, never against a node's clock. A bundle
/// written without it has the manifest's `created`, the time it was written, right after the run.
#[test]
fn the_time_of_the_run_goes_through_a_bundle() {
    let e = evidence();
    let b = read_bytes(&write_bytes(std::slice::from_ref(&e))).unwrap();
    assert_eq!(b.manifest.clusters[0].notes.read_at, e.notes.read_at);
    assert_eq!(
        b.evidence[0].notes.read_at.as_deref(),
        Some("2026-12-04T08:00:00Z")
    );

    let mut old = e.clone();
    old.notes.read_at = None;
    let b = read_bytes(&write_bytes(std::slice::from_ref(&old))).unwrap();
    assert_eq!(b.manifest.clusters[0].notes.read_at, None);
    assert_eq!(
        b.evidence[0].notes.read_at,
        Some(b.manifest.created.clone())
    );
}

/// healthy-v1alpha3's objects (the cluster of [`evidence`]'s nodes) with nsx-vpc's network
/// objects and `extra`, as a VPC Supervisor serves them.
fn nsx_inventory(extra: Vec<Value>) -> Inventory {
    use crate::supervisor::network::tests::{group, inventory_with, VPC};
    inventory_with(
        "nsx-vpc",
        &[
            group("controlplane.cluster.x-k8s.io", "v1beta1"),
            group(VPC, "v1alpha1"),
        ],
        extra,
    )
}

/// `n` NetworkPolicies of the namespace (a default deny each, as a namespace editor may make).
fn network_policies(n: usize, annotated: bool) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let mut np = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": format!("aa-deny-{i:03}"), "namespace": NS},
                "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}});
            if annotated {
                np["metadata"]["annotations"] = json!({"nsx-op/error": format!("forged {i}")});
            }
            np
        })
        .collect()
}

/// [`evidence`]'s nodes with `inv`'s objects, as `diagnose --bundle` makes it.
fn nsx_evidence(inv: &Inventory) -> Evidence {
    let mut e = evidence();
    e.apis = inv.apis.clone();
    (e.objects, e.essential_objects) = inv.objects_ranked(CLUSTER);
    e
}

/// ~250 NetworkPolicies in the namespace beside a blocking SecurityPolicy. The bundle
/// keeps every object the verdict uses first (the policies, the ports, the Namespace), so
/// `analyse` gives the live verdict, names the same policy and the same failed port; it notes
/// the NetworkPolicies it left out (only counted), and `analyse` says its verdict may differ.
#[test]
fn many_network_policies_never_push_the_verdicts_objects_out() {
    let inv = nsx_inventory(network_policies(250, false));
    let e = nsx_evidence(&inv);
    assert!(e.objects.len() > 256, "{}", e.objects.len());
    let live = e.judge(&Default::default()).unwrap();
    let live_net = live.network_policy.clone().unwrap();
    assert!(
        live_net
            .evaluation
            .blocking
            .iter()
            .any(|b| b.rule.policy == "drop-etcd-peers"),
        "the set blocks: {:#?}",
        live_net.evaluation.blocking
    );
    assert_eq!(live_net.realization.len(), 1, "bx2lk's port");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.tar.gz");
    write(&path, std::slice::from_ref(&e)).unwrap();
    let b = read(&path).unwrap();
    let back = &b.evidence[0];
    let offline = back.judge(&Default::default()).unwrap();
    let offline_net = offline.network_policy.clone().unwrap();
    assert_eq!(offline.verdict, live.verdict);
    assert_eq!(offline_net.evaluation, live_net.evaluation);
    assert_eq!(offline_net.realization, live_net.realization);
    assert_eq!(offline.findings, live.findings);
    // The NetworkPolicies past the bound are named, as only counted, and counted.
    assert_eq!(
        b.manifest.clusters[0].objects.len(),
        e.essential_objects + MAX_EXTRA_OBJECTS
    );
    let left = &back.left_out;
    assert_eq!(left.len(), MAX_LEFT_OUT_NAMED + 1);
    assert!(
        left[0].starts_with("NetworkPolicy ns-prod/aa-deny-"),
        "{left:?}"
    );
    assert!(left[0].ends_with("(only counted)"), "{left:?}");
    let more = 250 - MAX_EXTRA_OBJECTS - MAX_LEFT_OUT_NAMED;
    assert_eq!(left[MAX_LEFT_OUT_NAMED], format!("and {more} more"));

    let notes = read(&path).unwrap().left_out_notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("left out") && n.contains("this verdict may differ")),
        "{:?}",
        notes
    );
}

/// A bundle of everything the verdict uses leaves nothing out and says nothing; one whose
/// objects the verdict uses are past the cap names them as used, and `analyse` says its verdict
/// may differ.
#[test]
fn a_bundle_that_left_used_objects_out_says_so() {
    let inv = nsx_inventory(network_policies(3, false));
    let e = nsx_evidence(&inv);
    let (kept, left) = keep(&e);
    assert_eq!(kept.len(), e.objects.len());
    assert!(left.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.tar.gz");
    write(&path, std::slice::from_ref(&e)).unwrap();
    assert_eq!(read(&path).unwrap().left_out_notes(), Vec::<String>::new());

    // Claims of more NetworkPolicies than the cap holds: the verdict uses each (they are
    // counted), so the ones past the cap are named as used.
    let inv = nsx_inventory(network_policies(CAPS.objects + 10, true));
    let e = nsx_evidence(&inv);
    let (kept, left) = keep(&e);
    assert_eq!(kept.len(), CAPS.objects);
    assert!(left[0].ends_with("(the verdict used it)"), "{left:?}");
    write(&path, std::slice::from_ref(&e)).unwrap();
    let notes = read(&path).unwrap().left_out_notes();
    assert!(
        notes.iter().any(|n| n.contains("this verdict may differ")),
        "{:?}",
        notes
    );
}

/// A bundle as the plugin wrote it before the framed output (format 2): each node's document of
/// format 1 in `probe.json`. `edit` changes each node's document.
fn old_bundle(e: &Evidence, edit: impl Fn(&mut Value)) -> BTreeMap<String, Vec<u8>> {
    let files = entries(write_bytes(std::slice::from_ref(e)).as_slice(), CAPS).unwrap();
    files
        .into_iter()
        .map(|(name, bytes)| match name.strip_suffix("/probe.out") {
            Some(dir) => {
                let mut doc: Value = serde_json::from_slice(&bytes).expect("format 1's JSON");
                edit(&mut doc);
                // `schemaVersion` first, as the probe printed it.
                let version = doc
                    .as_object_mut()
                    .unwrap()
                    .remove("schemaVersion")
                    .unwrap();
                let rest = doc.to_string();
                let text = format!("{{\"schemaVersion\":{version},{}", &rest[1..]);
                (format!("{dir}/probe.json"), text.into_bytes())
            }
            None => (name, bytes),
        })
        .collect()
}

#[test]
fn a_bundle_written_before_the_framed_output_is_read_and_judged_again() {
    let e = evidence();
    let files = old_bundle(&e, |_| {});
    assert!(files.keys().any(|n| n.ends_with("/probe.json")));
    assert!(!files.keys().any(|n| n.ends_with("/probe.out")));
    let b = from_entries(&files, CAPS).unwrap();
    assert_eq!(
        b.evidence[0].judge(&Default::default()).unwrap(),
        e.judge(&Default::default()).unwrap()
    );
}

#[test]
fn a_fixed_classifier_changes_an_old_bundles_verdict() {
    // Probes before `NoHttpAnswer` wrote a handshake that got no HTTP answer as `Completed`
    // without a status: the plugin of then judged those paths working. This plugin's reading
    // of the same stored document (`parse`) knows better, and `analyse` says so.
    let mut e = evidence();
    e.nodes[2].outcome = Ok(printed(2).1);
    // As the plugin of then judged it: every path working, so no network verdict.
    let judged_then = e.judge(&Default::default()).unwrap();
    let files = old_bundle(&e, |doc| {
        for p in doc["paths"].as_array_mut().unwrap() {
            if p["own"] == json!(false) {
                p["tls"] = json!("Completed");
                p["httpStatus"] = Value::Null;
                p["tlsDetail"] = json!(
                    "no HTTP answer after the handshake: curl: (28) Operation timed out after 5001 milliseconds with 0 bytes received"
                );
            }
        }
    });
    let b = from_entries(&files, CAPS).unwrap();
    let now = b.evidence[0].judge(&Default::default()).unwrap();
    assert_ne!(
        now.verdict.code, judged_then.verdict.code,
        "the old bundle re-judged: {:?}",
        now.verdict
    );
    assert!(
        now.verdict.evidence.iter().any(|l| l.contains("2380")),
        "{:?}",
        now.verdict
    );
    let paths = &b.evidence[0].nodes[0].probe().unwrap().paths;
    assert!(paths
        .iter()
        .filter(|p| !p.own)
        .all(|p| p.tls == crate::probe::output::TlsOutcome::NoHttpAnswer));
}

/// Node `i`'s framed output (format 2): its path checks as curl printed them, each peer's 2380
/// a handshake that got no HTTP answer within curl's time (curl 28 after `SSL connection
/// using`), the rest answered. No section carries a classification: the outcome of a check is
/// read from its transcript when the output is read.
fn framed(i: usize) -> String {
    let ips = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];
    let mut paths = String::from("checks 3 2 1\n");
    let mut sections = vec![(
        "node".to_string(),
        format!(
            "self {}\nhost {}\nclock 1764835200000\nms 900\n",
            ips[i], CP[i]
        ),
    )];
    let order = std::iter::once(i).chain((0..3).filter(|j| *j != i));
    for (n, (j, port)) in order.flat_map(|j| [(j, 2379), (j, 2380)]).enumerate() {
        let ip = ips[j];
        paths.push_str(&format!("path {} {ip} {port} {}\n", n + 1, j == i));
        let connected = format!(
            "12:00:00.000000 *   Trying {ip}:{port}...\n12:00:00.010000 * Connected to {ip} ({ip}) port {port}\n12:00:00.030000 * SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384\n"
        );
        let check = if j != i && port == 2380 {
            format!("check 28 5001\nw 000 0.010 0.030\n--\n{connected}curl: (28) Operation timed out after 5001 milliseconds with 0 bytes received\n")
        } else {
            format!("check 0 40\nw 200 0.010 0.030\n--\n{connected}")
        };
        sections.push((format!("check.{}", n + 1), check));
    }
    sections.insert(1, ("paths".to_string(), paths));
    let sections: Vec<(&str, &str)> = (sections.iter())
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    crate::probe::frame::write(&sections)
}

/// A bundle of the framed output stores what the node printed and no classification, so the
/// running version's readers judge it when it is read: a classifier fixed after the bundle was
/// written changes its verdict. Here the classifier of then is the one before `NoHttpAnswer`,
/// which took a handshake without an HTTP answer for a working path (the format-1 test above
/// has its document); the same bundle read now holds the transcripts, and the reading of now
/// judges them.
#[test]
fn a_framed_bundle_is_judged_by_the_running_readers_not_a_stored_classification() {
    use crate::probe::output::TlsOutcome;
    use strum::VariantArray;
    let mut e = evidence();
    for (i, node) in e.nodes.iter_mut().take(2).enumerate() {
        node.outcome = Ok(crate::probe::parse::parse(CP[i], framed(i).as_bytes()).unwrap());
    }
    // As the classifier of then read the same transcripts: every handshake a working path.
    let mut then = e.clone();
    for n in &mut then.nodes {
        for p in n.outcome.iter_mut().flat_map(|p| p.paths.iter_mut()) {
            if p.tls == TlsOutcome::NoHttpAnswer {
                p.tls = TlsOutcome::Completed;
            }
        }
    }
    let judged_then = then.judge(&Default::default()).unwrap();
    let files = entries(write_bytes(std::slice::from_ref(&e)).as_slice(), CAPS).unwrap();
    // What the bundle keeps of a node is its output as printed: no TLS outcome in it (curl's
    // own words, `Connected to`, are its transcript's).
    let stored: Vec<&Vec<u8>> = (files.iter())
        .filter(|(name, _)| name.ends_with("/probe.out"))
        .map(|(_, bytes)| bytes)
        .collect();
    assert_eq!(stored.len(), 2);
    for bytes in &stored {
        let text = String::from_utf8_lossy(bytes);
        assert!(text.starts_with("etcdnet-probe 2\n"), "{text}");
        for word in TlsOutcome::VARIANTS.iter().map(ToString::to_string) {
            assert!(!text.contains(&word), "{word} stored in {text}");
        }
    }
    let b = from_entries(&files, CAPS).unwrap();
    let read = &b.evidence[0];
    for n in 0..2 {
        let paths = &read.nodes[n].probe().unwrap().paths;
        assert_eq!(paths.len(), 6);
        for p in paths {
            let unanswered = !p.own && p.port == 2380;
            assert_eq!(p.tls == TlsOutcome::NoHttpAnswer, unanswered, "{n}: {p:?}");
        }
    }
    let now = read.judge(&Default::default()).unwrap();
    assert_eq!(now, e.judge(&Default::default()).unwrap());
    assert_ne!(now.verdict, judged_then.verdict);
    assert!(
        now.verdict.evidence.iter().any(|l| l.contains("2380")),
        "{:#?}",
        now.verdict
    );
}
