//! The readers of etcd's answers, on sections as probe.sh prints them (the bodies as etcd 3.4 to
//! 3.6 send them: peerMembersHandler's array with decimal IDs, grpc-gateway's AlarmResponse,
//! checkAlarms/checkLeader's /health) and on what a hostile node prints instead.

use super::*;
use crate::probe::output::MemberId;
use proptest::prelude::*;
use serde_json::json;

/// Section `name` read by its reader, as its JSON, and the problems it said.
fn judged(name: &str, text: &str) -> (Value, Vec<String>) {
    let mut p = Problems::default();
    let v = match name {
        "health" => serde_json::to_value(health(text)),
        "members" => serde_json::to_value(members(text, &mut p)),
        "alarms" => serde_json::to_value(alarms(text, &mut p)),
        _ => serde_json::to_value(metrics_read(name, text)),
    };
    (v.unwrap(), p.finish())
}

fn judge(name: &str, text: &str) -> Value {
    judged(name, text).0
}

/// An answer's section as `etcd_ask` writes it (`raw_section`'s shape).
pub(crate) fn asked(rc: i64, url: &str, w: &str, err: &str, hdr: &str, body: &str) -> String {
    let mut s = format!("rc {rc}\nurl {url}\nw {w}\nsize {}\n", body.len());
    for l in err.lines() {
        s.push_str(&format!("err {l}\n"));
    }
    s.push_str("err \n");
    for l in hdr.lines() {
        s.push_str(&format!("hdr {l}\n"));
    }
    s.push_str(&format!("hdr \n--\n{body}\n"));
    s
}

pub(crate) const HEALTH: &str = "https://127.0.0.1:2379/health";
pub(crate) const MEMBERS: &str = "https://10.0.0.11:2380/members";
const ALARMS: &str = "https://127.0.0.1:2379/v3/maintenance/alarm";
const METRICS: &str = "http://127.0.0.1:2381/metrics";

#[test]
fn health_as_etcd_answers_it() {
    let ok = judge(
        "health",
        &asked(
            0,
            HEALTH,
            "200 0.004210",
            "",
            "HTTP/1.1 200 OK",
            r#"{"health":"true","reason":""}"#,
        ),
    );
    assert_eq!(
        ok,
        json!({"outcome": "Healthy", "httpStatus": 200, "body": r#"{"health":"true","reason":""}"#,
            "ms": 4, "detail": HEALTH})
    );
    // 3.5's no-leader answer: 503 and false; 3.4's false with 200 is no better.
    for (w, body) in [
        ("503 0.1", r#"{"health":"false","reason":"RAFT NO LEADER"}"#),
        ("200 0.1", r#"{"health":"false"}"#),
        // "true" elsewhere than as the health's value.
        ("200 0.1", r#"{"health":"false","reason":"true"}"#),
    ] {
        let v = judge("health", &asked(0, HEALTH, w, "", "", body));
        assert_eq!(v["outcome"], "Unhealthy", "{body}");
        assert_eq!(v["body"], body);
    }
    // Spaced JSON still reads as etcd's.
    let spaced = judge(
        "health",
        &asked(0, HEALTH, "200 0", "", "", "{ \"health\" : \"true\" }"),
    );
    assert_eq!(spaced["outcome"], "Healthy");
    // No answer: curl's words, no status.
    let down = judge(
        "health",
        &asked(
            7,
            HEALTH,
            "000 3.001",
            "curl: (7) Failed to connect to 127.0.0.1 port 2379",
            "",
            "",
        ),
    );
    assert_eq!(down["outcome"], "Error");
    assert_eq!(down["httpStatus"], Value::Null);
    assert_eq!(
        down["detail"],
        format!("{HEALTH}: curl: (7) Failed to connect to 127.0.0.1 port 2379")
    );
    assert_eq!(down["body"], Value::Null);
    let silent = judge("health", &asked(28, HEALTH, "000 5", "", "", ""));
    assert_eq!(silent["detail"], format!("{HEALTH}: curl exited 28"));
}

#[test]
fn not_asked_and_never_written_are_said() {
    let said = |v: Value| (v["outcome"].clone(), v["detail"].clone());
    assert_eq!(
        said(judge(
            "alarms",
            "skipped not asked: /health got no answer\n"
        )),
        (json!("Skipped"), json!("not asked: /health got no answer"))
    );
    for name in [
        "health",
        "members",
        "alarms",
        "metrics.before",
        "metrics.after",
    ] {
        for text in ["", "\n", "garbage\n", "--\n{}\n"] {
            assert_eq!(
                said(judge(name, text)),
                (json!("Error"), json!(format!("{name} job gave no result"))),
                "{name} {text:?}"
            );
        }
    }
    // A job that said it wrote nothing (emit's `nojob`).
    assert_eq!(
        judge("metrics.before", "nojob\n")["detail"],
        "metrics.before job gave no result"
    );
}

/// peerMembersHandler's answer from the lab's etcd 3.5.1: IDs as decimal uint64s over 2^53,
/// the name left out of a member that never started.
const MEMBER_LIST: &str = r#"[{"id":8208389352252555441,"name":"cp1","peerURLs":["https://10.0.0.11:2380"],"clientURLs":["https://10.0.0.11:2379"]},{"id":11596748313399726299,"peerURLs":["https://10.0.0.12:2380"],"isLearner":true}]"#;

#[test]
fn the_member_list_as_etcd_sends_it() {
    let v = judge(
        "members",
        &asked(
            0,
            MEMBERS,
            "200 0.012",
            "",
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Etcd-Cluster-Id: E3FEE805B34935C9\r\n",
            MEMBER_LIST,
        ),
    );
    assert_eq!(
        v,
        json!({
            "outcome": "Ok", "httpStatus": 200, "clusterId": "e3fee805b34935c9",
            "members": [
                {"id": "71ea0ea03f1cc0b1", "name": "cp1", "peerUrls": ["https://10.0.0.11:2380"],
                 "clientUrls": ["https://10.0.0.11:2379"], "isLearner": false},
                {"id": "a0efed2619cd10db", "name": null, "peerUrls": ["https://10.0.0.12:2380"],
                 "clientUrls": [], "isLearner": true},
            ],
            "truncated": false, "ms": 12, "detail": MEMBERS,
        })
    );
    // The exact uint64, not a double's neighbour.
    assert_eq!(
        MemberId::parse("a0efed2619cd10db").unwrap().get(),
        11596748313399726299
    );
    // A header that is no hex ID is no cluster ID.
    let bad = judge(
        "members",
        &asked(0, MEMBERS, "200 0", "", "x-etcd-cluster-id: 12zz", "[]"),
    );
    assert_eq!(bad["clusterId"], Value::Null);
}

#[test]
fn a_member_list_that_is_none_is_an_error_that_quotes_it() {
    for (w, body, says) in [
        ("503 0", "no leader\tat all", "HTTP 503: no leader at all"),
        (
            "200 0",
            r#"{"members":[]}"#,
            "not a member list: {\"members\":[]}",
        ),
        ("200 0", "[{\"id\":1},", "not a member list: [{\"id\":1},"),
        ("200 0", "", "not a member list: "),
        ("200 0", "[[[]]]", "not a member list: [[[]]]"),
    ] {
        let v = judge("members", &asked(0, MEMBERS, w, "", "", body));
        assert_eq!(v["outcome"], "Error", "{body}");
        assert_eq!(v["detail"], format!("{MEMBERS}: {says}"));
        assert_eq!(v["members"], json!([]));
    }
    let long = judge(
        "members",
        &asked(0, MEMBERS, "500 0", "", "", &"y".repeat(5000)),
    );
    assert_eq!(
        long["detail"].as_str().unwrap().len(),
        MEMBERS.len() + ": HTTP 500: ".len() + EXCERPT + 3
    );
}

#[test]
fn members_past_the_caps_are_cut_and_ids_not_uint64s_are_none() {
    let url = |i: usize| format!("\"https://{}:2380\"", "h".repeat(i));
    let entries: Vec<String> = (1..=70)
        .map(|i| {
            format!(
                r#"{{"id":{i},"name":"{}","peerURLs":[{}]}}"#,
                "n".repeat(300),
                (0..20).map(|_| url(300)).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    let body = format!("[{}]", entries.join(","));
    // Over the probe's body cap: not a list the probe would send whole.
    let v = judge("members", &asked(0, MEMBERS, "200 0", "", "", &body));
    assert_eq!(v["outcome"], "Error");
    let short: Vec<String> = (1..=70)
        .map(|i| {
            format!(
                r#"{{"id":{i},"name":"{}","peerURLs":[{}]}}"#,
                "n".repeat(300),
                url(300)
            )
        })
        .collect();
    let v = judge(
        "members",
        &asked(
            0,
            MEMBERS,
            "200 0",
            "",
            "",
            &format!("[{}]", short.join(",")),
        ),
    );
    assert_eq!(v["outcome"], "Ok");
    assert_eq!(v["members"].as_array().unwrap().len(), MAX_MEMBERS);
    assert_eq!(v["truncated"], true);
    assert_eq!(
        v["members"][0]["name"].as_str().unwrap().len(),
        MAX_MEMBER_TEXT + 3
    );
    assert_eq!(
        v["members"][0]["peerUrls"][0].as_str().unwrap().len(),
        MAX_MEMBER_TEXT + 3
    );
    let many_urls = format!(
        r#"[{{"id":1,"peerURLs":[{}]}}]"#,
        (0..20).map(|_| url(3)).collect::<Vec<_>>().join(",")
    );
    let v = judge("members", &asked(0, MEMBERS, "200 0", "", "", &many_urls));
    assert_eq!(
        v["members"][0]["peerUrls"].as_array().unwrap().len(),
        MAX_MEMBER_URLS
    );
    // IDs: a decimal string reads as a number does; what is no uint64 is none; 0 is none too,
    // and said: raft's none is never a member.
    let ids = r#"[{"id":"8208389352252555441"},{"id":18446744073709551616},{"id":-1},{"id":"0x1f"},{"id":1.5},{"id":0,"peerURLs":["https://203.0.113.9:2380"]}]"#;
    let (v, problems) = judged("members", &asked(0, MEMBERS, "200 0", "", "", ids));
    let got: Vec<&Value> = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(
        got,
        [
            &json!("71ea0ea03f1cc0b1"),
            &Value::Null,
            &Value::Null,
            &Value::Null,
            &Value::Null,
            &Value::Null
        ]
    );
    assert_eq!(
        problems,
        ["member ID \"0\" (peer URL \"https://203.0.113.9:2380\") is not one as etcd writes it (0, raft's none, never a member): that entry is never taken for a member"]
    );
}

#[test]
fn the_alarm_list_by_name_or_number() {
    let body = r#"{"header":{"cluster_id":"16429072209546398153","member_id":"8208389352252555441","revision":"9","raft_term":"2"},"alarms":[{"memberID":"8208389352252555441","alarm":"NOSPACE"},{"memberID":"11596748313399726299","alarm":2},{"memberID":"1"},{"alarm":"SOMETHING_NEW"}]}"#;
    let v = judge("alarms", &asked(0, ALARMS, "200 0.02", "", "", body));
    assert_eq!(
        v,
        json!({
            "outcome": "Ok", "httpStatus": 200,
            "alarms": [
                {"memberId": "71ea0ea03f1cc0b1", "alarm": "NOSPACE"},
                {"memberId": "a0efed2619cd10db", "alarm": "CORRUPT"},
                {"memberId": "1", "alarm": "NONE"},
                {"memberId": null, "alarm": "SOMETHING_NEW"},
            ],
            "truncated": false, "ms": 20, "detail": ALARMS,
        })
    );
    // None raised: grpc-gateway leaves the list out.
    let none = judge(
        "alarms",
        &asked(0, ALARMS, "200 0", "", "", r#"{"header":{}}"#),
    );
    assert_eq!(
        (none["outcome"].as_str(), none["alarms"].clone()),
        (Some("Ok"), json!([]))
    );
    // Without quorum: a timeout, as curl says it.
    let t = judge(
        "alarms",
        &asked(
            28,
            ALARMS,
            "000 4.2",
            "curl: (28) Operation timed out after 4200 milliseconds with 0 bytes received",
            "",
            "",
        ),
    );
    assert_eq!(t["outcome"], "Error");
    assert!(t["detail"].as_str().unwrap().contains("timed out"));
    let many = format!(
        r#"{{"alarms":[{}]}}"#,
        vec![format!(r#"{{"memberID":"1","alarm":"{}"}}"#, "Z".repeat(100)); 70].join(",")
    );
    let v = judge("alarms", &asked(0, ALARMS, "200 0", "", "", &many));
    assert_eq!(v["alarms"].as_array().unwrap().len(), MAX_ALARMS);
    assert_eq!(v["truncated"], true);
    assert_eq!(
        v["alarms"][0]["alarm"].as_str().unwrap().len(),
        MAX_ALARM_TEXT + 3
    );
    let arr = judge("alarms", &asked(0, ALARMS, "200 0", "", "", "[]"));
    assert_eq!(arr["detail"], format!("{ALARMS}: not an alarm list: []"));
}

/// A metrics read as metrics_fetch writes it.
pub(crate) fn fetched(rc: i64, hdr: &str, raw: usize, body: &str) -> String {
    let mut s = format!("rc {rc}\nurl {METRICS}\ntime 12 34\nraw {raw}\nerr \n");
    for l in hdr.lines() {
        s.push_str(&format!("hdr {l}\n"));
    }
    s.push_str(&format!("--\n{body}"));
    s
}

#[test]
fn a_metrics_read_keeps_the_families_read() {
    let body = "# HELP etcd_server_has_leader Whether or not a leader exists.\n# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\netcd_server_id{server_id=\"71ea0ea03f1cc0b1\"} 1\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 10\netcd_server_has_leaderx 5\ngo_goroutines 99\n";
    let v = judge(
        "metrics.after",
        &fetched(0, "HTTP/1.1 200 OK\r\n", body.len(), body),
    );
    assert_eq!(
        v,
        json!({
            "outcome": "Ok", "httpStatus": 200, "atMs": 12, "ms": 34,
            "text": "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\netcd_server_id{server_id=\"71ea0ea03f1cc0b1\"} 1\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 10\n",
            "truncated": false, "detail": METRICS,
        })
    );
    // The status is the last status line's (a 100 Continue, a redirect before).
    let v = judge(
        "metrics.after",
        &fetched(
            0,
            "HTTP/1.1 100 Continue\nHTTP/1.1 503 Service Unavailable",
            3,
            "x",
        ),
    );
    assert_eq!(
        (v["outcome"].as_str(), v["httpStatus"].as_i64()),
        (Some("Error"), Some(503))
    );
    assert_eq!(v["detail"], format!("{METRICS}: HTTP 503"));
    assert_eq!(v["text"], Value::Null);
    let v = judge("metrics.before", &fetched(7, "", 0, ""));
    assert_eq!(v["detail"], format!("{METRICS}: curl exited 7"));
    let v = judge("metrics.before", &fetched(0, "", 0, ""));
    assert_eq!(v["detail"], format!("{METRICS}: HTTP status unknown"));
}

#[test]
fn a_metrics_read_past_its_caps_is_cut_on_a_line() {
    let line = "etcd_network_peer_sent_bytes_total{To=\"a0efed2619cd10db\"} 123456\n";
    let n = metrics::MAX_TEXT_BYTES / line.len() + 1;
    // What the probe sends: the wanted lines up to the cap and one byte more.
    let all = line.repeat(n);
    let sent = &all[..metrics::MAX_TEXT_BYTES + 1];
    let v = judge(
        "metrics.after",
        &fetched(0, "HTTP/1.1 200 OK", 300_000, sent),
    );
    assert_eq!(v["truncated"], true);
    let text = v["text"].as_str().unwrap();
    assert!(text.len() <= metrics::MAX_TEXT_BYTES && text.ends_with(" 123456\n"));
    assert_eq!(text.lines().count(), n - 1);
    // Exactly at the cap: whole, not cut.
    let whole = line.repeat(metrics::MAX_TEXT_BYTES / line.len());
    let v = judge(
        "metrics.after",
        &fetched(0, "HTTP/1.1 200 OK", 300_000, &whole),
    );
    assert_eq!(v["truncated"], false);
    // The raw cap reached: curl ended by its closed pipe (23), the read kept, as cut.
    let v = judge(
        "metrics.after",
        &fetched(23, "HTTP/1.1 200 OK", METRICS_RAW, line),
    );
    assert_eq!(
        (v["outcome"].as_str(), v["truncated"].as_bool()),
        (Some("Ok"), Some(true))
    );
}

/// A node that prints 16 MiB for one answer: read within the caps, in bounded CPU.
#[test]
fn huge_answers_are_read_within_the_caps_quickly() {
    let big = "[".repeat(1 << 20) + &"{\"id\":1},".repeat(1 << 20);
    let started = crate::testing::cpu_time();
    for name in ["members", "alarms", "health"] {
        let v = judge(
            name,
            &asked(
                0,
                "u",
                "200 0",
                &"e".repeat(1 << 20),
                &"h: v\n".repeat(1 << 18),
                &big,
            ),
        );
        assert!(v.to_string().len() < 4 * MEMBERS_BODY, "{name}");
    }
    let v = judge(
        "metrics.after",
        &fetched(
            0,
            "HTTP/1.1 200 OK",
            1 << 24,
            &"etcd_server_id 1\n".repeat(1 << 20),
        ),
    );
    assert_eq!(v["truncated"], true);
    let took = crate::testing::cpu_time() - started;
    assert!(
        took < std::time::Duration::from_secs(15),
        "took {took:?} of CPU"
    );
}

pub(crate) fn section() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("--".to_string()),
        "(rc|url|w|time|raw|size|err|hdr|skipped) [ -~]{0,30}",
        "[\\[\\]{}\":,0-9a-z \\\\]{0,60}",
        any::<String>(),
    ];
    proptest::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Each reader is total (the whole document's reading of them: `parse::tests`).
    #[test]
    fn the_readers_are_total(text in section(), name in prop::sample::select(vec!["health", "members", "alarms", "metrics.before", "metrics.after"])) {
        let _ = judged(name, &text);
    }
}
