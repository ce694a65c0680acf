//! Unit tests of `parse`.

use super::*;
use crate::probe::output::{HealthOutcome, RuntimeQuery, TcpOutcome, TlsOutcome};
use crate::probe::parse::raw::{
    tests::{frames, PS},
    MAX_IPS,
};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            "../../../tests/fixtures/probe-output/",
            $name,
            ".json"
        ))
    };
}

const FIXTURES: &[(&str, &str)] = &[
    ("healthy-node", fixture!("healthy-node")),
    ("peer-timeouts", fixture!("peer-timeouts")),
    ("one-peer-timeout", fixture!("one-peer-timeout")),
    ("peers-refused", fixture!("peers-refused")),
    ("peers-no-route", fixture!("peers-no-route")),
    ("tls-stalled", fixture!("tls-stalled")),
    ("expired-peer-cert", fixture!("expired-peer-cert")),
    ("peer-cert-wrong-san", fixture!("peer-cert-wrong-san")),
    (
        "peer-cert-not-yet-valid",
        fixture!("peer-cert-not-yet-valid"),
    ),
    ("crictl-missing", fixture!("crictl-missing")),
    ("crictl-runtime-error", fixture!("crictl-runtime-error")),
    ("etcd-exited-attempt-5", fixture!("etcd-exited-attempt-5")),
    ("minimal-busybox-node", fixture!("minimal-busybox-node")),
    ("no-quorum-own-view", fixture!("no-quorum-own-view")),
    ("nospace-alarm", fixture!("nospace-alarm")),
];

fn get(name: &str) -> ProbeOutput {
    let (_, text) = FIXTURES.iter().find(|(n, _)| *n == name).unwrap();
    parse("cp1", text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (tcp, tls) of every path to a peer (not own).
fn peer_outcomes(out: &ProbeOutput) -> Vec<(TcpOutcome, TlsOutcome)> {
    out.paths
        .iter()
        .filter(|p| !p.own)
        .map(|p| (p.tcp, p.tls))
        .collect()
}

fn cert<'a>(out: &'a ProbeOutput, file: &str) -> &'a crate::probe::output::CertInfo {
    out.certs.iter().find(|c| c.file == file).unwrap()
}

#[test]
fn every_fixture_parses_as_a_whole_node() {
    for (name, text) in FIXTURES {
        let out = parse(name, text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.schema_version, 1, "{name}");
        assert_eq!(out.node_ip, "198.18.0.11", "{name}");
        assert_eq!(out.ips, ["198.18.0.11"], "{name}");
        assert_eq!(
            out.paths.len(),
            6,
            "{name}: own and two peers, 2379 and 2380"
        );
        assert!(
            out.paths[..2].iter().all(|p| p.own),
            "{name}: own paths first"
        );
        assert!(out.manifest.is_some(), "{name}");
        assert!(out.errors.is_empty(), "{name}: {:?}", out.errors);
    }
}

#[test]
fn healthy_node() {
    let out = get("healthy-node");
    assert_eq!(out.hostname.as_deref(), Some("tkc-1-control-plane-node1"));
    assert_eq!(out.etcd.query, RuntimeQuery::Ok);
    assert!(out.etcd.containers[0].is_running());
    assert_eq!(out.etcd.containers[0].attempt, Some(0));
    let logs = out.etcd.logs.as_ref().unwrap();
    assert_eq!(logs.container_id, out.etcd.containers[0].id);
    assert!(logs.lines > 10 && !logs.truncated && logs.text.contains("\"level\""));
    assert!(
        !logs.text.contains("WARN[0000]"),
        "crictl's own warning is not etcd's log"
    );
    for p in &out.paths {
        assert_eq!(
            (p.tcp, p.tls, p.http_status),
            (TcpOutcome::Connected, TlsOutcome::Completed, Some(200))
        );
    }
    assert_eq!(out.health.outcome, HealthOutcome::Healthy);
    assert_eq!(out.kubelet.active.as_deref(), Some("active"));
    assert!(cert(&out, "peer.crt").has_node_ip == Some(true));
    assert!(cert(&out, "peer.crt").expires_in_s.unwrap() > 0);
    assert!(cert(&out, "peer.crt")
        .sans
        .iter()
        .any(|s| s == "198.18.0.11"));
    assert_eq!(cert(&out, "ca.crt").has_node_ip, None);
    assert!(out
        .certs
        .iter()
        .any(|c| c.file == "apiserver-etcd-client.crt"));
    let m = out.manifest.unwrap();
    assert_eq!(m.name.as_deref(), Some("tkc-1-control-plane-node1"));
    assert_eq!(
        m.listen_client_urls,
        ["https://127.0.0.1:2379", "https://198.18.0.11:2379"]
    );
    assert!(m
        .initial_cluster
        .unwrap()
        .contains("node3=https://198.18.0.13:2380"));
}

/// The node's own view, as etcd 3.4 gave it: the member list without quorum,
/// the alarm list only with it, NOSPACE listed while 3.4's /health does not name it.
#[test]
fn own_view_members_and_alarms() {
    use crate::probe::output::QueryOutcome;
    let members = |out: &ProbeOutput| -> Vec<String> {
        (out.members.members.iter())
            .map(|m| {
                let id = m.id.map_or_else(|| "?".to_string(), |id| id.to_string());
                let name = m.name.as_deref().unwrap_or("?");
                format!("{id} {name} {}", m.peer_urls.join(","))
            })
            .collect()
    };
    let want = [
        "14569749fa01776e tkc-1-control-plane-node3 https://198.18.0.13:2380",
        "71ea0ea03f1cc0b1 tkc-1-control-plane-node1 https://198.18.0.11:2380",
        "a0efed2619cd10db tkc-1-control-plane-node2 https://198.18.0.12:2380",
    ];
    let cut = get("no-quorum-own-view");
    assert_eq!(cut.members.outcome, QueryOutcome::Ok);
    assert_eq!(cut.members.cluster_id.as_deref(), Some("e3fee805b34935c9"));
    assert_eq!(members(&cut), want);
    assert_eq!(cut.alarms.outcome, QueryOutcome::Error);
    assert!(cut.alarms.detail.as_deref().unwrap().contains("timed out"));
    let full = get("nospace-alarm");
    assert_eq!(members(&full), want);
    let alarms: Vec<_> = (full.alarms.alarms.iter())
        .map(|a| (a.member_id.map(|id| id.to_string()), a.alarm.as_str()))
        .collect();
    assert_eq!(alarms, [(Some("71ea0ea03f1cc0b1".to_string()), "NOSPACE")]);
    assert_eq!(full.health.outcome, HealthOutcome::Unhealthy);
    assert_eq!(full.health.body.as_deref(), Some("{\"health\":\"false\"}"));
    // A document from before these fields: not asked, never read as fine.
    let old = get("healthy-node");
    assert_eq!(old.members.outcome, QueryOutcome::Skipped);
    assert_eq!(old.alarms.outcome, QueryOutcome::Skipped);
    assert_eq!(old.etcd.previous_logs, None);
}

#[test]
fn peer_faults_show_in_the_paths() {
    use TcpOutcome::*;
    use TlsOutcome::*;
    let cases: &[(&str, &[(TcpOutcome, TlsOutcome)])] = &[
        ("peer-timeouts", &[(Timeout, NotTried); 4]),
        ("peers-refused", &[(Refused, NotTried); 4]),
        ("peers-no-route", &[(NoRoute, NotTried); 4]),
        ("tls-stalled", &[(Connected, Stalled); 4]),
        ("expired-peer-cert", &[(Connected, Rejected); 4]),
        ("peer-cert-not-yet-valid", &[(Connected, Rejected); 4]),
        (
            "one-peer-timeout",
            &[
                (Timeout, NotTried),
                (Timeout, NotTried),
                (Connected, Completed),
                (Connected, Completed),
            ],
        ),
        (
            "peer-cert-wrong-san",
            &[
                (Connected, Completed),
                (Connected, Rejected),
                (Connected, Completed),
                (Connected, Rejected),
            ],
        ),
    ];
    for (name, want) in cases {
        assert_eq!(peer_outcomes(&get(name)), *want, "{name}");
    }
    let t = get("peer-timeouts");
    assert!(t
        .paths
        .iter()
        .filter(|p| p.tcp == Timeout)
        .all(|p| p.tcp_ms.unwrap() >= 3000));
    assert_eq!(t.health.outcome, HealthOutcome::Unhealthy);
    assert!(t.etcd.logs.unwrap().text.contains("i/o timeout"));
    let s = get("tls-stalled");
    assert!(s
        .paths
        .iter()
        .filter(|p| p.tls == Stalled)
        .all(|p| p.tls_ms.unwrap() >= 2000));
    let e = get("expired-peer-cert");
    assert!(cert(&e, "peer.crt").expires_in_s.unwrap() < 0);
    assert!(e
        .paths
        .iter()
        .all(|p| p.tls_detail.as_deref().unwrap().contains("bad certificate")));
    assert_eq!(
        cert(&get("peer-cert-wrong-san"), "peer.crt").has_node_ip,
        Some(false)
    );
    assert_eq!(
        cert(&get("peer-cert-not-yet-valid"), "peer.crt").not_yet_valid,
        Some(true)
    );
}

#[test]
fn node_side_failures() {
    let m = get("crictl-missing");
    assert_eq!(
        (m.etcd.query, m.etcd.containers.len()),
        (RuntimeQuery::CrictlMissing, 0)
    );
    let r = get("crictl-runtime-error");
    assert_eq!(r.etcd.query, RuntimeQuery::RuntimeError);
    assert!(r.etcd.error.unwrap().contains("containerd.sock"));
    let x = get("etcd-exited-attempt-5");
    assert_eq!(x.etcd.containers[0].state, "CONTAINER_EXITED");
    assert_eq!(x.etcd.containers[0].attempt, Some(5));
    assert!(!x.etcd.containers.iter().any(|c| c.is_running()));
    assert!(x
        .paths
        .iter()
        .filter(|p| p.own)
        .all(|p| p.tcp == TcpOutcome::Refused));
    assert_eq!(x.health.outcome, HealthOutcome::Error);
    let b = get("minimal-busybox-node");
    assert!(b
        .certs
        .iter()
        .all(|c| c.error.as_deref() == Some("openssl not found")));
    assert_eq!(b.kubelet.error.as_deref(), Some("systemctl not found"));
    assert_eq!(b.clock_ms.unwrap() % 1000, 0, "busybox date has no %N");
}

#[test]
fn noise_before_and_after_the_document_is_skipped() {
    let doc = fixture!("crictl-missing").trim_end();
    let noisy = format!(
        "Welcome to Photon 5.0\r\nWe trust you have received the usual lecture from the local System\n\
         + printf '{{\"schemaVersion\":1,\"nodeIp\":%s'\n{doc}\nlogout\n"
    );
    assert_eq!(
        parse("cp1", noisy.as_bytes()).unwrap(),
        parse("cp1", doc.as_bytes()).unwrap()
    );
}

#[test]
fn cri_and_timestamp_prefixes_are_unwrapped() {
    let doc = fixture!("crictl-missing").trim_end();
    let want = parse("cp1", doc.as_bytes()).unwrap();
    let stamped = format!("2026-03-04T10:00:00.123456789Z {doc}\n");
    assert_eq!(parse("cp1", stamped.as_bytes()).unwrap(), want);
    // Kubelet's CRI log splits long lines into partial (P) records.
    let (a, b) = doc.split_at(1000);
    let (b, c) = b.split_at(900);
    let cri = format!(
        "2026-03-04T10:00:00.1Z stdout P {a}\n2026-03-04T10:00:00.1Z stdout P {b}\n2026-03-04T10:00:00.1Z stdout F {c}\n"
    );
    assert_eq!(parse("cp1", cri.as_bytes()).unwrap(), want);
}

#[test]
fn garbage_gives_the_named_errors() {
    let err = |raw: &[u8]| parse("cp2", raw).unwrap_err();
    assert_eq!(err(b""), ParseError::Empty { node: "cp2".into() });
    assert_eq!(err(b" \n\t\r\n"), ParseError::Empty { node: "cp2".into() });
    let e = err(b"sh: 1: curl: not found\n");
    assert_eq!(
        e,
        ParseError::NotJson {
            node: "cp2".into(),
            excerpt: "sh: 1: curl: not found".into()
        }
    );
    assert!(e.to_string().starts_with("node cp2: "), "{e}");
    assert!(matches!(
        err(b"{\"schemaVersion\":1,\"nodeIp\":\"x\",\"paths\":["),
        ParseError::Truncated { .. }
    ));
    assert!(matches!(
        err(b"{\"schemaVersion\":1 oops}"),
        ParseError::NotJson { .. }
    ));
    assert_eq!(
        err(b"{\"schemaVersion\":2,\"nodeIp\":\"x\"}"),
        ParseError::UnsupportedSchema {
            node: "cp2".into(),
            found: "2".into()
        }
    );
    assert!(matches!(
        err(b"{\"schemaVersion\":\"1\"}"),
        ParseError::UnsupportedSchema { .. }
    ));
    // A framed output of another format is named as a format, not as schema version.
    let third = format!("{} 3\n@end 0\n", crate::probe::frame::MAGIC);
    let e = err(third.as_bytes());
    assert_eq!(
        e,
        ParseError::UnsupportedFormat {
            node: "cp2".into(),
            found: "3".into()
        }
    );
    assert!(e.to_string().contains("output format 3"), "{e}");
    // Wrong types and a missing required field: errors, not panics.
    assert!(matches!(
        err(b"{\"schemaVersion\":1,\"nodeIp\":7}"),
        ParseError::Invalid { .. }
    ));
    assert!(matches!(
        err(b"{\"schemaVersion\":1}"),
        ParseError::Invalid { .. }
    ));
    let bad_port = br#"{"schemaVersion":1,"nodeIp":"x","paths":[{"target":"y","port":99999,"tcp":"Connected","tls":"Completed"}]}"#;
    assert!(matches!(err(bad_port), ParseError::Invalid { .. }));
    let bad_enum = br#"{"schemaVersion":1,"nodeIp":"x","etcd":{"query":"Sideways"}}"#;
    assert!(matches!(err(bad_enum), ParseError::Invalid { .. }));
    let deep = format!(
        "{{\"schemaVersion\":1,\"nodeIp\":{}1{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(parse("cp2", deep.as_bytes()).is_err());
    let huge = vec![b' '; MAX_OUTPUT_BYTES + 1];
    assert_eq!(
        err(&huge),
        ParseError::TooLarge {
            node: "cp2".into(),
            bytes: MAX_OUTPUT_BYTES + 1
        }
    );
    assert_eq!(err(&huge).node(), "cp2");
}

// Long: CPU, in a debug build: 4 MiB of document starts read a few times each (bound: 20 s).
#[test]
fn nested_document_starts_are_read_a_few_times_not_once_each() {
    // 1024 lines of 4 KiB, each a document start that opens an array the next one lands
    // in: an attempt that read on to serde_json's nesting limit (128 lines ahead) would read
    // the whole output 128 times over (a minute for these 4 MiB in a debug build).
    let line = format!("{{\"schemaVersion\":[{}\n", "1,".repeat(2048));
    let text = line.repeat(1024);
    let started = crate::testing::cpu_time();
    assert!(parse("cp1", text.as_bytes()).is_err());
    // Generous for a debug build: the budget is four reads of the output. CPU time, so other
    // tests and builds on the same cores do not count.
    let took = crate::testing::cpu_time() - started;
    assert!(
        took < std::time::Duration::from_secs(20),
        "took {took:?} of CPU"
    );
}

#[test]
fn the_budget_leaves_real_outputs_alone() {
    // Noise that mentions the marker, cut documents, then the real one: all still found.
    let doc = fixture!("healthy-node").trim();
    let noisy = format!(
        "{{\"schemaVersion\":1,\"nodeIp\":%s'\n{}\n{{\"schemaVersion\": garbage\n{doc}\nlogout\n",
        &doc[..doc.len() / 2]
    );
    assert_eq!(parse("cp1", noisy.as_bytes()).unwrap(), get("healthy-node"));
}

#[test]
fn excerpts_stay_short_and_on_one_line() {
    let long = format!("Permission denied\n{}\n", "x\u{7}y ".repeat(500));
    let ParseError::NotJson { excerpt, .. } = parse("cp1", long.as_bytes()).unwrap_err() else {
        panic!("not NotJson");
    };
    assert!(
        excerpt.chars().count() <= 200 && !excerpt.contains(['\n', '\u{7}']),
        "{excerpt}"
    );
    let wide = "é".repeat(400);
    let ParseError::NotJson { excerpt, .. } = parse("cp1", wide.as_bytes()).unwrap_err() else {
        panic!("not NotJson");
    };
    assert!(excerpt.chars().count() <= 200);
}

#[test]
fn an_older_probes_completed_handshake_without_an_answer_reads_as_no_http_answer() {
    let doc = |tls: &str, status: &str, detail: &str| {
        format!(
            r#"{{"schemaVersion":1,"nodeIp":"x","paths":[{{"target":"y","port":2380,"tcp":"Connected","tls":"{tls}","httpStatus":{status},"tlsDetail":"{detail}"}}]}}"#
        )
    };
    let tls = |text: String| parse("cp1", text.as_bytes()).unwrap().paths[0].tls;
    let old = "no HTTP answer after the handshake: curl: (28) Operation timed out";
    assert_eq!(tls(doc("Completed", "null", old)), TlsOutcome::NoHttpAnswer);
    assert_eq!(
        tls(doc("NoHttpAnswer", "null", old)),
        TlsOutcome::NoHttpAnswer
    );
    assert_eq!(tls(doc("Completed", "200", "")), TlsOutcome::Completed);
    assert_eq!(tls(doc("Completed", "null", "")), TlsOutcome::Completed);
}

#[test]
fn unknown_fields_accepted_missing_optional_fields_defaulted() {
    let doc = br#"{"schemaVersion":1,"nodeIp":"10.0.0.1","futureField":{"a":[1,2]},"etcd":{"query":"Ok","newThing":true}}"#;
    let out = parse("cp1", doc).unwrap();
    assert_eq!(out.node_ip, "10.0.0.1");
    assert_eq!(out.etcd.query, RuntimeQuery::Ok);
    assert!(out.paths.is_empty() && out.certs.is_empty() && out.manifest.is_none());
    assert_eq!(out.health.outcome, HealthOutcome::Skipped);
    assert_eq!(out.kubelet, Default::default());
}

#[test]
fn invalid_utf8_is_replaced_not_refused() {
    let mut doc = br#"{"schemaVersion":1,"nodeIp":"10.0.0.1","hostname":"cp"#.to_vec();
    doc.extend_from_slice(&[0xff, 0xfe]);
    doc.extend_from_slice(br#"1"}"#);
    let out = parse("cp1", &doc).unwrap();
    assert_eq!(out.hostname.as_deref(), Some("cp\u{fffd}\u{fffd}1"));
}

#[test]
fn never_panics_on_random_bytes() {
    // A small LCG: the same bytes every run. Some inputs start with the marker so that the
    // JSON parser, not only the search for it, sees garbage.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as u8
    };
    let alphabet = b"{}[]\":,0123456789.-eE truefalsnul\\\n\xff\xc3";
    for round in 0..3000 {
        let len = usize::from(next()) * 4;
        let mut raw: Vec<u8> = if round % 2 == 0 {
            MARKER.as_bytes().to_vec()
        } else {
            Vec::new()
        };
        for _ in 0..len {
            let b = next();
            raw.push(if round % 3 == 0 {
                b
            } else {
                alphabet[usize::from(b) % alphabet.len()]
            });
        }
        let _ = parse("fuzz", &raw);
    }
}

#[test]
fn every_truncation_of_a_real_output_is_an_error_not_a_panic() {
    let doc = fixture!("crictl-missing").trim_end().as_bytes();
    for end in 0..doc.len() {
        assert!(parse("cp1", &doc[..end]).is_err(), "cut at {end} parsed");
    }
    assert!(parse("cp1", doc).is_ok());
    // The larger ones, every 97th byte (all of them would take long in a debug build).
    for (name, text) in FIXTURES {
        for end in (0..text.len()).step_by(97) {
            assert!(
                parse(name, &text.as_bytes()[..end]).is_err(),
                "{name} cut at {end}"
            );
        }
    }
}

// ---- a compromised node's document, read within the probe's own caps -------------------------

use crate::probe::output::{IdProblem, MemberId, QueryOutcome};
use bounds::*;

/// A member entry as the probe prints it.
fn member_json(id: &str, ip: &str) -> String {
    format!(
        r#"{{"id":"{id}","name":"n-{ip}","peerUrls":["https://{ip}:2380"],"clientUrls":["https://{ip}:2379"],"isLearner":false}}"#
    )
}

/// A document of schema v1 whose member list is `members` (JSON entries, comma-joined).
fn doc_with_members(members: &str) -> String {
    format!(
        r#"{{"schemaVersion":1,"nodeIp":"198.18.0.11","members":{{"outcome":"Ok","httpStatus":200,"clusterId":"e3fee805b34935c9","members":[{members}],"truncated":false}}}}"#
    )
}

#[test]
fn member_ids_are_read_only_as_etcd_writes_them() {
    // types.ID.String() is strconv.FormatUint(id, 16): lower case, no leading zero.
    let ok = MemberId::parse("a0efed2619cd10db").unwrap();
    assert_eq!(ok.get(), 0xa0ef_ed26_19cd_10db);
    assert_eq!(ok.to_string(), "a0efed2619cd10db");
    assert_eq!(MemberId::parse("1").unwrap().get(), 1);
    assert_eq!(MemberId::parse("ffffffffffffffff").unwrap().get(), u64::MAX);
    for (text, why) in [
        ("0a0efed2619cd10db", IdProblem::LeadingZero),
        (
            "00000000000000000000a0efed2619cd10db",
            IdProblem::LeadingZero,
        ),
        ("A0EFED2619CD10DB", IdProblem::UpperCase),
        ("a0efed2619cd10dB", IdProblem::UpperCase),
        ("1a0efed2619cd10db", IdProblem::TooLong),
        ("0x1f", IdProblem::NotHex),
        ("+1f", IdProblem::NotHex),
        ("1f ", IdProblem::NotHex),
        ("１", IdProblem::NotHex),
        ("", IdProblem::Empty),
        ("0", IdProblem::Zero),
    ] {
        assert_eq!(MemberId::parse(text), Err(why), "{text:?}");
    }
    // What etcdctl's strconv.ParseUint(arg, 16, 64) makes of them: the same member for a
    // leading zero or upper case (why a string compare would be wrong).
    for text in [
        "0a0efed2619cd10db",
        "A0EFED2619CD10DB",
        "000a0efed2619cd10db",
    ] {
        assert_eq!(MemberId::as_etcdctl_reads(text), Some(ok), "{text}");
    }
    assert_eq!(MemberId::as_etcdctl_reads("1a0efed2619cd10db"), None);
    assert_eq!(MemberId::as_etcdctl_reads("-1"), None);
    // JSON carries the canonical string, and reads only it.
    assert_eq!(serde_json::to_string(&ok).unwrap(), "\"a0efed2619cd10db\"");
    assert_eq!(
        serde_json::from_str::<MemberId>("\"a0efed2619cd10db\"").unwrap(),
        ok
    );
    assert!(serde_json::from_str::<MemberId>("\"0a0efed2619cd10db\"").is_err());
    assert!(serde_json::from_str::<MemberId>("11596543977014497499").is_err());
}

#[test]
fn a_member_id_not_as_etcd_writes_it_is_a_document_problem_and_no_member() {
    let members = [
        member_json("71ea0ea03f1cc0b1", "198.18.0.11"),
        member_json("a0efed2619cd10db", "198.18.0.12"),
        // The healthy peer's ID behind a leading zero, at a foreign URL.
        member_json("0a0efed2619cd10db", "203.0.113.9"),
        member_json("A0EFED2619CD10DB", "203.0.113.10"),
        member_json("zz", "203.0.113.11"),
        // The same member twice: etcd lists each once (a map by ID, membership/cluster.go).
        member_json("71ea0ea03f1cc0b1", "203.0.113.12"),
    ]
    .join(",");
    let out = parse("cp1", doc_with_members(&members).as_bytes()).unwrap();
    let m = &out.members;
    assert_eq!(m.outcome, QueryOutcome::Ok);
    let ids: Vec<Option<String>> = m
        .members
        .iter()
        .map(|x| x.id.map(|i| i.to_string()))
        .collect();
    assert_eq!(
        ids,
        [
            Some("71ea0ea03f1cc0b1".into()),
            Some("a0efed2619cd10db".into()),
            None,
            None,
            None
        ],
        "the repeat dropped, the others shown without an ID"
    );
    let p = &out.document_problems;
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(
        p[0].starts_with("member ID \"0a0efed2619cd10db\" (peer URL \"https://203.0.113.9:2380\") is not one as etcd writes it (a leading zero")
            && p[0].contains("etcdctl would read it as a0efed2619cd10db")
            && p[0].ends_with("never taken for a member"),
        "{p:#?}"
    );
    assert!(p[1].contains("upper-case hex"), "{p:#?}");
    assert!(p[2].contains("not hexadecimal"), "{p:#?}");
    assert!(p[3].contains("1 member IDs more than once"), "{p:#?}");
    // The report's JSON keeps the canonical strings, and null for the others.
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["members"]["members"][1]["id"], "a0efed2619cd10db");
    assert!(json["members"]["members"][2]["id"].is_null());
    assert_eq!(json["documentProblems"].as_array().unwrap().len(), 4);
}

#[test]
fn the_node_cannot_write_the_readers_findings() {
    let doc = r#"{"schemaVersion":1,"nodeIp":"x","documentProblems":["cp2 is compromised"]}"#;
    let out = parse("cp1", doc.as_bytes()).unwrap();
    assert!(out.document_problems.is_empty(), "{out:#?}");
    // A real probe's output has none.
    for (name, text) in FIXTURES {
        let out = parse(name, text.as_bytes()).unwrap();
        assert!(out.document_problems.is_empty(), "{name}: {out:#?}");
        assert!(serde_json::to_value(&out)
            .unwrap()
            .get("documentProblems")
            .is_none());
    }
}

#[test]
fn cluster_and_alarm_ids_not_as_etcd_writes_them_are_not_used() {
    let doc = r#"{"schemaVersion":1,"nodeIp":"x","members":{"outcome":"Ok","clusterId":"0E3FEE805B34935C9","members":[]},"alarms":{"outcome":"Ok","alarms":[{"memberId":"071ea0ea03f1cc0b1","alarm":"NOSPACE"},{"memberId":"71ea0ea03f1cc0b1","alarm":"NOSPACE"}]}}"#;
    let out = parse("cp1", doc.as_bytes()).unwrap();
    assert_eq!(out.members.cluster_id, None);
    let ids: Vec<Option<MemberId>> = out.alarms.alarms.iter().map(|a| a.member_id).collect();
    assert_eq!(ids, [None, MemberId::parse("71ea0ea03f1cc0b1").ok()]);
    assert_eq!(
        out.document_problems.len(),
        2,
        "{:#?}",
        out.document_problems
    );
}

/// Every list at most the probe's cap, and the texts a verdict quotes as long as the probe
/// prints them: each cut said once.
#[test]
fn lists_and_texts_are_cut_at_the_probes_caps() {
    let long = "x".repeat(5000);
    let member = format!(
        r#"{{"id":"1","name":"{long}","peerUrls":[{urls}],"clientUrls":[],"isLearner":false}}"#,
        urls = vec![format!("\"https://{long}\""); 20].join(",")
    );
    let path = r#"{"target":"y","port":2380,"tcp":"Connected","tls":"Completed"}"#;
    let err = format!(r#"{{"step":"s","message":"{long}"}}"#);
    let cert = r#"{"file":"peer.crt","sans":["a","b"]}"#;
    let alarm = format!(r#"{{"memberId":"1","alarm":"{long}"}}"#);
    let doc = format!(
        r#"{{"schemaVersion":1,"nodeIp":"x","paths":[{paths}],"certs":[{certs}],"errors":[{errs}],"health":{{"outcome":"Unhealthy","body":"{long}"}},"members":{{"outcome":"Ok","members":[{member}]}},"alarms":{{"outcome":"Ok","alarms":[{alarms}]}}}}"#,
        paths = vec![path; 100].join(","),
        certs = [cert; 9].join(","),
        errs = vec![err.as_str(); 100].join(","),
        alarms = vec![alarm.as_str(); 100].join(","),
    );
    let out = parse("cp1", doc.as_bytes()).unwrap();
    assert_eq!(out.paths.len(), MAX_PATHS);
    assert_eq!(out.certs.len(), MAX_CERTS);
    assert_eq!(out.errors.len(), MAX_ERRORS);
    assert_eq!(out.alarms.alarms.len(), MAX_ALARMS);
    assert!(out.alarms.truncated);
    assert!(!out.members.truncated, "one member: not cut");
    let m = &out.members.members[0];
    assert_eq!(m.peer_urls.len(), MAX_MEMBER_URLS);
    assert_eq!(
        m.name.as_deref().unwrap().chars().count(),
        MAX_MEMBER_TEXT + 3
    );
    assert!(m
        .peer_urls
        .iter()
        .all(|u| u.chars().count() == MAX_MEMBER_TEXT + 3));
    assert!(out
        .errors
        .iter()
        .all(|e| e.message.chars().count() == MAX_ERROR_TEXT + 3));
    assert!(out
        .alarms
        .alarms
        .iter()
        .all(|a| a.alarm.chars().count() == MAX_ALARM_TEXT + 3));
    assert_eq!(
        out.health.body.as_deref().unwrap().chars().count(),
        1024 + 3
    );
    let p = &out.document_problems;
    for said in [
        "its path checks: 100 entries, more than the probe ever prints (32)",
        "its certificates: 9 entries",
        "its step errors: 100 entries",
        "its alarm list: 100 entries",
        "64 alarm names longer",
        "32 step errors longer",
        "1 /health answers longer",
        "member names, URLs or URL lists longer",
    ] {
        assert!(p.iter().any(|l| l.contains(said)), "{said}: {p:#?}");
    }
    assert!(p.len() <= 13, "{p:#?}");
    // What the probe prints at its caps is no problem: 64 members and `truncated` from it.
    let members: Vec<String> = (1..=64)
        .map(|i| member_json(&format!("{i:x}"), "198.18.0.11"))
        .collect();
    let at_cap =
        doc_with_members(&members.join(",")).replace("\"truncated\":false", "\"truncated\":true");
    let out = parse("cp1", at_cap.as_bytes()).unwrap();
    assert_eq!(out.members.members.len(), 64);
    assert!(out.members.truncated);
    assert!(
        out.document_problems.is_empty(),
        "{:#?}",
        out.document_problems
    );
}

/// A compromised node's ~400,000 members in a document just under the 16 MiB read cap. Read, it
/// holds the probe's 64, marked truncated, with one line saying so; in bounded CPU (one JSON
/// parse; uncut, the members' merge is a linear search per member: minutes per verdict).
#[test]
fn a_16_mib_member_list_is_read_as_64_members_quickly() {
    let mut members = String::with_capacity(MAX_OUTPUT_BYTES);
    let mut count = 0u64;
    // Each entry distinct (a new ID), as an attacker would write them.
    loop {
        let entry = format!(
            r#"{{"id":"{:x}","peerUrls":["https://10.0.0.1:2380"]}},"#,
            count + 1
        );
        if members.len() + entry.len() + 400 > MAX_OUTPUT_BYTES {
            break;
        }
        members.push_str(&entry);
        count += 1;
    }
    members.pop();
    let doc = doc_with_members(&members);
    assert!(doc.len() <= MAX_OUTPUT_BYTES && count > 300_000, "{count}");
    let started = crate::testing::cpu_time();
    let out = parse("cp1", doc.as_bytes()).unwrap();
    let took = crate::testing::cpu_time() - started;
    assert_eq!(out.members.members.len(), MAX_MEMBERS);
    assert!(out.members.truncated);
    assert_eq!(
        out.document_problems,
        [format!(
            "its member list: {count} entries, more than the probe ever prints (64): the rest dropped"
        )]
    );
    // Generous for a debug build on a shared machine (measured: about a second).
    assert!(
        took < std::time::Duration::from_secs(15),
        "took {took:?} of CPU"
    );
}

/// The other lists a node writes, each filling a share of 16 MiB: paths (each a matrix cell and
/// a gap line), step errors (each a gap line), alarms, certificates with many SANs. Read, each
/// is at most the probe's cap, in bounded CPU.
#[test]
fn a_16_mib_document_of_every_list_is_read_within_the_caps_quickly() {
    let share = MAX_OUTPUT_BYTES / 5;
    let fill = |entry: &dyn Fn(usize) -> String| {
        let mut out = String::new();
        let mut i = 0;
        while out.len() + 200 < share {
            out.push_str(&entry(i));
            out.push(',');
            i += 1;
        }
        out.pop();
        (out, i)
    };
    let (paths, np) = fill(&|i| {
        format!(
            r#"{{"target":"10.{}.{}.{}","port":2380,"tcp":"Timeout","tls":"NotTried"}}"#,
            i >> 16,
            (i >> 8) & 255,
            i & 255
        )
    });
    let (errors, ne) = fill(&|i| format!(r#"{{"step":"s{i}","message":"m"}}"#));
    let (alarms, na) = fill(&|i| format!(r#"{{"memberId":"{:x}","alarm":"NOSPACE"}}"#, i + 1));
    let (sans, ns) = fill(&|i| format!("\"san-{i}\""));
    let (certs, nc) = fill(&|i| format!(r#"{{"file":"f{i}.crt","sans":[]}}"#));
    let doc = format!(
        r#"{{"schemaVersion":1,"nodeIp":"x","paths":[{paths}],"certs":[{{"file":"peer.crt","sans":[{sans}]}},{certs}],"errors":[{errors}],"alarms":{{"outcome":"Ok","alarms":[{alarms}]}}}}"#
    );
    assert!(doc.len() <= MAX_OUTPUT_BYTES, "{}", doc.len());
    let started = crate::testing::cpu_time();
    let out = parse("cp1", doc.as_bytes()).unwrap();
    let took = crate::testing::cpu_time() - started;
    assert_eq!(
        (
            out.paths.len(),
            out.errors.len(),
            out.alarms.alarms.len(),
            out.certs.len(),
            out.certs[0].sans.len()
        ),
        (MAX_PATHS, MAX_ERRORS, MAX_ALARMS, MAX_CERTS, MAX_SANS)
    );
    assert!(out.alarms.truncated);
    for said in [
        format!("its path checks: {np} entries"),
        format!("its step errors: {ne} entries"),
        format!("its alarm list: {na} entries"),
        format!("its certificates: {} entries", nc + 1),
        format!("a certificate's SANs: {ns} entries"),
    ] {
        assert!(
            out.document_problems.iter().any(|l| l.starts_with(&said)),
            "{said}: {:#?}",
            out.document_problems
        );
    }
    assert!(
        took < std::time::Duration::from_secs(15),
        "took {took:?} of CPU"
    );
}

mod etcdask_tests {
    use super::*;
    use crate::probe::etcdask::tests::{asked, fetched, section, HEALTH, MEMBERS};
    use crate::probe::frame;
    use proptest::prelude::*;

    /// A whole framed output with etcd's raw answers (`probe::etcdask`) reads into the document's typed parts, the caps and
    /// the ID checks applied as to a document of format 1.
    #[test]
    fn raw_answers_read_into_the_document() {
        let ids = r#"[{"id":8208389352252555441,"name":"cp1","peerURLs":["https://10.0.0.11:2380"]},{"id":0,"peerURLs":["https://203.0.113.9:2380"]},{"id":8208389352252555441,"peerURLs":["https://203.0.113.10:2380"]}]"#;
        let out = parse(
            "cp1",
            frame::write(&[
                (
                    "node",
                    "self 10.0.0.11\nhost cp1\nclock 1765000000000\nms 900",
                ),
                (
                    "health",
                    &asked(
                        0,
                        HEALTH,
                        "503 0.003",
                        "",
                        "",
                        r#"{"health":"false","reason":"RAFT NO LEADER"}"#,
                    ),
                ),
                (
                    "members",
                    &asked(0, MEMBERS, "200 0.01", "", "X-Etcd-Cluster-ID: 0", ids),
                ),
                (
                    "alarms",
                    "skipped not asked: /health says RAFT NO LEADER (the list needs quorum)",
                ),
                (
                    "metrics.before",
                    &fetched(0, "HTTP/1.1 200 OK", 40, "etcd_server_has_leader 0\n"),
                ),
                ("metrics.after", ""),
            ])
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(out.health.outcome, HealthOutcome::Unhealthy);
        assert_eq!(out.health.http_status, Some(503));
        assert_eq!(out.members.outcome, QueryOutcome::Ok);
        assert_eq!(out.members.cluster_id, None, "0 is no cluster ID");
        let ids: Vec<Option<String>> = (out.members.members.iter())
            .map(|m| m.id.map(|i| i.to_string()))
            .collect();
        assert_eq!(
            ids,
            [Some("71ea0ea03f1cc0b1".into()), None],
            "0 none, the repeat dropped"
        );
        let p = &out.document_problems;
        assert!(p.iter().any(|l| l.contains("cluster ID \"0\"")), "{p:#?}");
        assert!(p.iter().any(|l| l.starts_with("member ID \"0\"")), "{p:#?}");
        assert!(p.iter().any(|l| l.contains("more than once")), "{p:#?}");
        assert_eq!(out.alarms.outcome, QueryOutcome::Skipped);
        let m = out.metrics.as_ref().unwrap();
        assert_eq!(m.before.outcome, QueryOutcome::Ok);
        assert_eq!(m.before.text.as_deref(), Some("etcd_server_has_leader 0\n"));
        assert_eq!(m.after.outcome, QueryOutcome::Error);
        assert_eq!(
            m.after.detail.as_deref(),
            Some("metrics.after job gave no result")
        );
    }

    /// The bounds tests of format 1 above, on the raw answers a compromised node sends: a
    /// member list and an alarm list far past the caps are read as the probe's 64 each, marked
    /// truncated; 16 MiB in one answer is no answer etcd sends (more than the probe's cap of its
    /// body) and reads as an error that quotes its start; each in bounded CPU.
    #[test]
    fn raw_answers_past_the_caps_are_read_within_them_quickly() {
        let list = |max: usize, entry: &dyn Fn(u64) -> String| {
            let mut body = String::from("[");
            let mut n = 0;
            while body.len() + 200 < max {
                body.push_str(&entry(n + 1));
                body.push(',');
                n += 1;
            }
            body.pop();
            body.push(']');
            (body, n)
        };
        let member = |i: u64| format!(r#"{{"id":{i},"peerURLs":["https://10.0.0.1:2380"]}}"#);
        let (members, nm) = list(crate::probe::etcdask::MEMBERS_BODY, &member);
        let (alarms, na) = list(crate::probe::etcdask::ALARMS_BODY, &|i| {
            format!(r#"{{"memberID":"{i}","alarm":"NOSPACE"}}"#)
        });
        let alarms = format!(r#"{{"alarms":{alarms}}}"#);
        let (huge, _) = list(MAX_OUTPUT_BYTES - 65536, &member);
        let started = crate::testing::cpu_time();
        let read = |members: &str| {
            parse(
                "cp1",
                frame::write(&[
                    ("members", &asked(0, MEMBERS, "200 0.01", "", "", members)),
                    (
                        "alarms",
                        &asked(
                            0,
                            "https://127.0.0.1:2379/v3/maintenance/alarm",
                            "200 0.01",
                            "",
                            "",
                            &alarms,
                        ),
                    ),
                ])
                .as_bytes(),
            )
            .unwrap()
        };
        let out = read(&members);
        assert!(
            nm > MAX_MEMBERS as u64 && na > MAX_ALARMS as u64,
            "{nm} {na}"
        );
        assert_eq!(out.members.members.len(), MAX_MEMBERS);
        assert!(out.members.truncated);
        assert_eq!(out.alarms.alarms.len(), MAX_ALARMS);
        assert!(out.alarms.truncated);
        assert!(
            out.document_problems.is_empty(),
            "{:#?}",
            out.document_problems
        );
        let out = read(&huge);
        assert_eq!(out.members.outcome, QueryOutcome::Error);
        assert!(out.members.members.is_empty());
        let detail = out.members.detail.unwrap();
        assert!(detail.contains("not a member list"), "{detail}");
        assert!(detail.len() <= crate::probe::DETAIL + 3, "{}", detail.len());
        let took = crate::testing::cpu_time() - started;
        assert!(
            took < std::time::Duration::from_secs(15),
            "took {took:?} of CPU"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever a node prints in one of etcd's answers, the document reads.
        #[test]
        fn any_raw_answer_reads(text in section(), name in prop::sample::select(vec!["health", "members", "alarms", "metrics.before", "metrics.after"])) {
            let out = parse("cp1", frame::write(&[(name, text.as_str())]).as_bytes());
            prop_assert!(out.is_ok(), "{out:?}");
        }
    }
}

// The raw sections read through the whole framed document (here, above `framed` and `raw`: a
// reader's own tests cannot use the module that calls it).

/// A 16 MiB framed output of huge node sections (the bounds test of format 1, on the raw
/// sections): every list is read at the probe's caps, each cut said, within seconds of CPU.
#[test]
fn a_16_mib_output_of_huge_node_sections_is_read_within_the_caps_quickly() {
    use crate::probe::parse::bounds::{MAX_CERTS, MAX_FIREWALL_READS, MAX_SANS};
    let share = crate::probe::parse::MAX_OUTPUT_BYTES / 8;
    let many = |line: &dyn Fn(usize) -> String| {
        let mut out = String::new();
        let mut i = 0;
        while out.len() + 200 < share {
            out.push_str(&line(i));
            out.push('\n');
            i += 1;
        }
        out
    };
    let certs = format!(
    "file peer.crt 1 /p\n{}--\nCertificate:\n  Not Before: Dec  2 14:20:53 2026 GMT\n  Not After : Dec  2 14:20:53 2027 GMT\n  X509v3 Subject Alternative Name: \n      {}\n",
    many(&|i| format!("file f{i}.crt 1 /p/f{i}.crt")),
    (0..share / 20).map(|i| format!("DNS:s{i}")).collect::<Vec<_>>().join(", ")
);
    let firewall = many(&|i| format!("tool nft{i}\nrc 0\ncounts 1 1 0\n= table inet t{i} {{"));
    let log = format!(
        "id 2222bbbb\nrc 0\nmax 262144\nsize 99999999\n--\n{}",
        many(&|i| format!("{{\"level\":\"warn\",\"msg\":\"line {i}\"}}"))
    );
    let ips = format!(
        "tool hostname\n--\n{}",
        many(&|i| format!("10.{}.{}.1", i >> 8 & 255, i & 255))
    );
    let manifest = format!(
        "--\n{}",
        many(&|i| format!("    - --advertise-client-urls={}", "u,".repeat(i % 64)))
    );
    let text = {
        let f = frames(&[
            (
                "node",
                "self 10.0.0.5\nhost cp1\nclock 1796220000000\nms 900\n",
            ),
            ("certs", &certs),
            ("firewall.before", &firewall),
            ("etcd.ps", &format!("rc 0\n--\n{PS}")),
            ("etcd.log", &log),
            ("ips", &ips),
            ("manifest", &manifest),
        ]);
        // Printed again as a node would (the frames' text, each line behind `|`).
        let mut out = String::from("etcdnet-probe 2\n");
        for s in &f.sections {
            out.push_str(&format!("@{}\n", s.name));
            for l in s.text.lines() {
                out.push_str(&format!("|{l}\n"));
            }
        }
        out.push_str(&format!("@end {}\n", f.sections.len()));
        out
    };
    assert!(
        text.len() <= crate::probe::parse::MAX_OUTPUT_BYTES,
        "{}",
        text.len()
    );
    let started = crate::testing::cpu_time();
    let out = crate::probe::parse::parse("cp1", text.as_bytes()).unwrap();
    let took = crate::testing::cpu_time() - started;
    assert_eq!(out.certs.len(), MAX_CERTS);
    assert_eq!(out.certs[0].sans.len(), MAX_SANS);
    assert_eq!(out.firewall.before.len(), MAX_FIREWALL_READS);
    assert!(out.ips.len() <= MAX_IPS);
    let log = out.etcd.logs.unwrap();
    assert!(
        log.truncated && log.text.len() <= 262144,
        "{}",
        log.text.len()
    );
    assert!(out.manifest.unwrap().advertise_client_urls.len() <= 64);
    for said in ["its certificates: ", "a certificate's SANs: "] {
        assert!(
            out.document_problems.iter().any(|l| l.starts_with(said)),
            "{said}: {:#?}",
            out.document_problems
        );
    }
    assert!(
        took < std::time::Duration::from_secs(15),
        "took {took:?} of CPU"
    );
}
