//! What a compromised node can do: one node's probe document is its own word,
//! and its member list must not steer the verdict. Through the real kubectl on scripted vSphere
//! Pods (the jumpbox route, no lab): VM 1's document carries the attack, VMs 2 and 3 the
//! healthy probe document with the real member list.
//!
//! - A healthy peer's ID behind a leading zero at a foreign URL: compared as text, it would be
//!   "another" member, `EtcdMemberMismatch` with the step `etcdctl member remove 0<id>`, which etcdctl
//!   reads (`strconv.ParseUint(arg, 16, 64)`, etcdctl/ctlv3/command/member_command.go) as the
//!   healthy peer's own ID.
//! - 40,000 members under the jumpbox's 4 MiB read cap: without a bound on the list, ~40 s of
//!   CPU and 31.7 MB of `-o json` with 40,000 removal steps.

use crate::common;

use std::time::Duration;

use common::article::CP;
use common::*;
use etcdnet::report::v1alpha2::VerdictCode;
use serde_json::{json, Value};

/// The healthy set: every Machine with its VM at 198.18.0.11-13, names as the article's.
const SET: &str = "healthy-v1alpha3";
const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];
/// The members' IDs (as the lab's etcd gave them in fixture no-quorum-own-view).
const IDS: [&str; 3] = ["71ea0ea03f1cc0b1", "a0efed2619cd10db", "14569749fa01776e"];

fn member(id: &str, name: &str, ip: &str) -> Value {
    json!({
        "id": id,
        "name": name,
        "peerUrls": [format!("https://{ip}:2380")],
        "clientUrls": [format!("https://{ip}:2379")],
    })
}

/// The three real members.
fn real() -> Vec<Value> {
    (0..3).map(|i| member(IDS[i], CP[i], IPS[i])).collect()
}

/// VM `i`'s document: the healthy probe document with `entries` (JSON, comma-joined) as its
/// own member list, as the probe prints it.
fn doc(i: usize, entries: &str) -> String {
    let members = format!(
        r#""members":{{"outcome":"Ok","httpStatus":200,"clusterId":"e3fee805b34935c9","members":[{entries}],"truncated":false,"ms":3,"detail":"https://{}:2380/members"}},"errors":[]}}"#,
        IPS[i]
    );
    let healthy = healthy_probe_doc(IPS[i], &CP);
    let head = healthy
        .strip_suffix(r#""errors":[]}"#)
        .expect("the healthy document ends with its errors");
    format!("{head}{members}")
}

fn joined(entries: &[Value]) -> String {
    entries
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The set on scripted jumpbox pods: VM 1 prints `first` (its member list's entries), the
/// others the real list.
fn scripted(first: String) -> Env {
    let env = Env::new(SET, Workload::black_hole());
    let docs: Vec<String> = (0..3)
        .map(|i| {
            if i == 0 {
                doc(0, &first)
            } else {
                doc(i, &joined(&real()))
            }
        })
        .collect();
    env.script_jumpbox_pods_with(&CP, move |i, _| docs.get(i).map(|d| jumpbox_section(d)));
    env
}

/// The diagnosis, and the CPU time of its processes (kubectl, the plugin): the bounds below
/// stand for bounded work, which a loaded machine does not change where it stretches wall time
/// (tests/it/common/cpu.rs).
fn diagnose(env: &Env, extra: &[&str]) -> (Run, Duration) {
    let started = cpu::children_cpu_time();
    let run = env.diagnose_via_jumpbox(extra);
    (run, cpu::children_cpu_time() - started)
}

/// Nothing in the verdict removes a member or names a healthy node (VMs 2 and 3) as the
/// problem; a line about VM 1's own document may.
fn assert_steers_nothing(v: &etcdnet::report::v1alpha2::Verdict) {
    assert!(
        !v.next_steps.iter().any(|s| s.contains("member remove")),
        "{v:#?}"
    );
    assert!(v.nodes.iter().all(|n| n == CP[0]), "{v:#?}");
    assert!(
        !v.evidence.iter().any(
            |l| [CP[1], CP[2], IDS[1], IDS[2]].iter().any(|h| l.contains(h))
                && !l.starts_with(&format!("{}'s probe document", CP[0]))
        ),
        "{v:#?}"
    );
}

#[test]
fn a_healthy_peers_id_behind_a_leading_zero_is_no_member_to_remove() {
    let mut list = real();
    list.push(member(
        &format!("0{}", IDS[1]),
        "tkc-prod-evil",
        "203.0.113.9",
    ));
    let env = scripted(joined(&list));
    let (run, _) = diagnose(&env, &["-o", "json"]);
    let r = run.diagnose_report();
    assert_eq!(r.result.nodes_reached, 3, "{:#?}", r.nodes);
    let v = &r.verdict;
    assert_steers_nothing(v);
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    // Never Healthy: a finding about VM 1's document, saying what etcdctl would make of it.
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    run.expect_code(1);
    assert!(
        v.evidence.iter().any(|e| e.starts_with(&format!(
            "{}'s probe document: member ID \"0{}\"",
            CP[0], IDS[1]
        )) && e
            .contains(&format!("etcdctl would read it as {}", IDS[1]))),
        "{v:#?}"
    );
    // The report keeps VM 1's entry, with no ID: shown, never a member; the JSON's IDs are
    // etcd's strings.
    let p = r.nodes[0].probe.as_ref().unwrap();
    assert_eq!(p.members.members.len(), 4);
    assert_eq!(p.members.members[3].id, None);
    let json = run.json();
    assert_eq!(
        json["nodes"][1]["probe"]["members"]["members"][1]["id"],
        IDS[1]
    );

    // The same entry with a canonical ID of its own: VM 1's word alone, a note, no removal.
    let mut list = real();
    list.push(member("5ca1ab1e", "tkc-prod-evil", "203.0.113.9"));
    let env = scripted(joined(&list));
    let (run, _) = diagnose(&env, &["-o", "json"]);
    let v = run.diagnose_report().verdict;
    assert_steers_nothing(&v);
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.notes.iter().any(|n| n.starts_with(&format!(
            "{}'s member list disagrees with the majority",
            CP[0]
        )) && n.contains("member 5ca1ab1e")),
        "{v:#?}"
    );
}

/// 40,000 members, each at a foreign address, in VM 1's document (about 2.6 MB, under the 4 MiB
/// the jumpbox route reads of a VM): `status`-sized output in a few seconds.
#[test]
fn forty_thousand_members_are_read_as_the_probes_64() {
    let mut list = real();
    for i in 0..40_000u32 {
        list.push(json!({
            "id": format!("{:x}", 0x1_0000_0000_u64 + u64::from(i)),
            "peerUrls": [format!("https://10.{}.{}.{}:2380", i >> 16, (i >> 8) & 255, i & 255)],
        }));
    }
    let entries = joined(&list);
    assert!(
        entries.len() < 4 * 1024 * 1024 - 64 * 1024,
        "{}",
        entries.len()
    );
    let env = scripted(entries);

    let (run, took) = diagnose(&env, &["-o", "json"]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(
        run.stdout.len() < 1024 * 1024,
        "{} bytes of -o json",
        run.stdout.len()
    );
    let r = run.diagnose_report();
    assert_eq!(r.result.nodes_reached, 3, "{:#?}", r.nodes);
    let p = r.nodes[0].probe.as_ref().unwrap();
    assert_eq!(p.members.members.len(), 64);
    assert!(p.members.truncated);
    let v = &r.verdict;
    assert_steers_nothing(v);
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| {
            e.contains(
            "its member list: 40003 entries, more than the probe ever prints (64): the rest dropped"
        )
        }),
        "{v:#?}"
    );
    assert!(
        v.evidence.len() + v.notes.len() + v.next_steps.len() < 60,
        "{v:#?}"
    );

    // The evidence bundle keeps VM 1's document as it printed it; `analyse` reads it within the
    // same caps, and judges it the same way.
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("b.tar.gz");
    let (run, took) = diagnose(&env, &["--bundle", bundle.to_str().unwrap(), "-o", "json"]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(run.stderr.contains("written to"), "{}", run.stderr);
    let started = cpu::children_cpu_time();
    let run = env.kubectl(&["analyse", bundle.to_str().unwrap(), "-o", "json"]);
    let took = cpu::children_cpu_time() - started;
    assert!(
        took < Duration::from_secs(20),
        "analyse took {took:?} of CPU"
    );
    assert!(run.stdout.len() < 1024 * 1024, "{} bytes", run.stdout.len());
    let again = run.diagnose_report();
    assert_eq!(
        again.verdict.code,
        VerdictCode::Inconclusive,
        "{:#?}",
        again.verdict
    );
    assert_steers_nothing(&again.verdict);
    assert_eq!(
        again.nodes[0].probe.as_ref().unwrap().members.members.len(),
        64
    );

    // The tables too: -o wide lists every node's members (64 of VM 1's at most).
    for format in ["table", "wide"] {
        let (run, took) = diagnose(&env, &["-o", format]);
        assert!(took < Duration::from_secs(20), "-o {format}: took {took:?}");
        let lines = run.stdout.lines().count();
        assert!(lines < 200, "-o {format}: {lines} lines:\n{}", run.stdout);
        assert!(!run.stdout.contains("member remove"), "{}", run.stdout);
    }
}
