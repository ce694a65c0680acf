//! The whole pipeline under arbitrary input: what a node prints (its framed output, a format-1
//! document of an older bundle, its etcd
//! log, any bytes at all) and what the API serves (Cluster, KCP, Machine, VM objects) go
//! through parse → extract → analyse → report → every renderer, and none of it may panic,
//! overflow, or let a control character reach a table. Property tests (proptest), seeded: the
//! same cases every run unless `PROPTEST_RNG_SEED` (and `PROPTEST_CASES`) say otherwise, so a
//! failure here is reproducible as it is printed.
//!
//! The inputs are shaped like the real ones (the probe's schema, etcd's log forms and phrases,
//! the nodes' own IPs as path targets) so the rules behind them run, with leaves drawn from
//! hostile values: control characters and escape sequences, multi-byte characters, integers at
//! their extremes, now and then a leaf of the wrong type.

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use serde_json::{json, Value};
use strum::VariantArray;

use crate::analyse::{status_findings, verdict};
use crate::probe::etcdlog;
use crate::probe::output::{HealthOutcome, RuntimeQuery, TcpOutcome, TlsOutcome};
use crate::probe::parse::parse;
use crate::probe::{NodeReport, PortReach, PortState, ReachError, ReachErrorKind};
use crate::render::{self, Format, Paint};
use crate::report::{
    CleanupAction, CleanupItem, CleanupReport, DiagnoseReport, RouteInfo, StatusReport,
};
use crate::supervisor::{self, extract, join, ClusterFacts, PowerState};
use crate::testing;
use crate::workload::{ApiState, WorkloadApi};

/// The seed of every run that does not set `PROPTEST_RNG_SEED`.
const SEED: u64 = 0x6574_6364_6e65_7400;

/// `cases` per property (unless `PROPTEST_CASES`), a fixed seed (unless `PROPTEST_RNG_SEED`), no
/// regression files written into the source tree.
fn config(cases: u32) -> ProptestConfig {
    // `default()` is proptest's, with the PROPTEST_* variables of the environment applied.
    let env = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            env.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
            env.rng_seed
        } else {
            RngSeed::Fixed(SEED)
        },
        failure_persistence: None,
        ..env
    }
}

// ---- leaves ----------------------------------------------------------------------------------

/// Characters, hostile ones often: C0, DEL, C1, multi-byte, bidi, JSON and YAML syntax.
fn any_char() -> BoxedStrategy<char> {
    prop_oneof![
        4 => proptest::char::range(' ', '~'),
        2 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => proptest::char::range('\u{7f}', '\u{9f}'),
        2 => select(vec![
            'é', '日', '本', '🎉', 'Ω', '\u{202e}', '\u{2066}', '\u{2028}', '\u{feff}',
            '\u{200b}',
            '\u{fffd}', '\u{a0}', '\\', '"', '\'', '{', '}', '[', ':', ',', '#', '&', '*', '-',
            '\n', '\r', '\t', '\u{1b}',
        ]),
        1 => any::<char>(),
    ]
    .boxed()
}

fn chars(max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(any_char(), 0..max)
        .prop_map(|v| v.into_iter().collect())
        .boxed()
}

/// Escape sequences that would act on a terminal, and text the code matches on.
const NASTY: &[&str] = &[
    "\u{1b}]0;owned\u{7}",
    "\u{1b}[2J\u{1b}[H",
    "\u{1b}[1;32mHealthy\u{1b}[0m",
    "\u{9b}31m",
    "\u{9d}0;t\u{9c}",
    "\u{1b}P+q\u{1b}\\",
    "line\nbreak",
    "CR\roverwrite",
    "CONTAINER_RUNNING",
    "CONTAINER_EXITED",
    "running",
    "true",
    "null",
    "~",
    "- item",
    "key: value",
    "0123456789abcdef0123456789abcdef",
    "日本語のコンテナ",
    "é",
    "🎉",
    "",
    " ",
    "198.18.0.11",
    "198.18.0.12:2380",
    "[2001:db8::1]:2380",
    "https://198.18.0.13:2380",
];

/// Text from outside: hostile characters, known-nasty strings, or both.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => chars(24),
        2 => select(NASTY).prop_map(str::to_string),
        1 => (select(NASTY), chars(8), select(NASTY)).prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]
    .boxed()
}

fn i64_edge() -> BoxedStrategy<i64> {
    prop_oneof![
        select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1,
            3,
            i64::MAX - 1,
            i64::MAX
        ]),
        -100_000i64..100_000,
        any::<i64>(),
    ]
    .boxed()
}

fn u64_edge() -> BoxedStrategy<u64> {
    prop_oneof![
        select(vec![
            0,
            1,
            2379,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX
        ]),
        0u64..100_000,
        any::<u64>(),
    ]
    .boxed()
}

fn u32_edge() -> BoxedStrategy<u32> {
    prop_oneof![select(vec![0, 1, 3, 5, u32::MAX]), any::<u32>()].boxed()
}

/// `common` three times in four, else `rare`: the rules need ordinary values to get past their
/// first checks (a healthy member, a connected path) as much as they need extremes.
fn usually<T: std::fmt::Debug + 'static>(
    common: impl Strategy<Value = T> + 'static,
    rare: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<T> {
    prop_oneof![3 => common, 1 => rare].boxed()
}

fn port() -> BoxedStrategy<u16> {
    prop_oneof![
        3 => select(vec![2379u16, 2380]),
        1 => select(vec![0u16, 22, 6443, u16::MAX]),
        1 => any::<u16>(),
    ]
    .boxed()
}

/// The nodes' addresses (so probe paths name them and the matrices fill), and others.
const IPS: &[&str] = &[
    "198.18.0.11",
    "198.18.0.12",
    "198.18.0.13",
    "2001:db8:0:3::13",
    "127.0.0.1",
];

fn ip() -> BoxedStrategy<Option<std::net::IpAddr>> {
    prop_oneof![
        4 => select(IPS).prop_map(|s| s.parse().ok()),
        1 => Just(None),
    ]
    .boxed()
}

fn ip_text() -> BoxedStrategy<String> {
    prop_oneof![3 => select(IPS).prop_map(str::to_string), 1 => text()].boxed()
}

fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    proptest::option::weighted(0.8, s).boxed()
}

fn variant<T: VariantArray + std::fmt::Display + std::fmt::Debug + Clone + 'static>(
) -> BoxedStrategy<String> {
    select(T::VARIANTS).prop_map(|v| v.to_string()).boxed()
}

/// Any JSON value, a few levels deep.
fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        i64_edge().prop_map(Value::from),
        u64_edge().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A leaf as `good` makes it, or rarely any JSON value in its place (a wrong type). Rarely: a
/// document has a hundred leaves, and one wrong leaf makes it a parse error, which is tested,
/// but the rules behind the parser only see documents that parse.
fn leaf(good: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![1500 => good, 1 => any_json()].boxed()
}

fn s_leaf(s: impl Strategy<Value = String> + 'static) -> BoxedStrategy<Value> {
    leaf(s.prop_map(Value::from))
}

// ---- etcd logs -------------------------------------------------------------------------------

/// What the classifier's patterns look for, and what its scanners pick addresses and IDs from.
const PHRASES: &[&str] = &[
    "peer 8e9e05c52164694d became inactive (message send to peer failed)",
    "peer became active",
    "prober detected unhealthy status",
    "lost TCP streaming connection with remote peer",
    "failed to reach the peer URL",
    "dial tcp 198.18.0.12:2380: i/o timeout",
    "dial tcp 198.18.0.13:2380: connect: connection refused",
    "read tcp 198.18.0.11:38242->198.18.0.12:2380: connection reset by peer",
    "no route to host",
    "net/http: TLS handshake timeout",
    "remote error: tls: bad certificate",
    "rejected connection from \"198.18.0.12:41234\"",
    "x509: certificate has expired or is not yet valid: current time X is after Y",
    "x509: certificate has expired or is not yet valid: current time X is before Y",
    "x509: certificate is valid for 198.18.0.11, not 198.18.0.99",
    "certificate signed by unknown authority",
    "request cluster ID mismatch",
    "removed member 8e9e05c52164694d",
    "raft.node: 8e9e05c52164694d lost leader 91bc3c398fb3c146 at term 5",
    "8e9e05c52164694d is starting a new election at term 6",
    "stepped down to follower since quorum is not active",
    "failed to send out heartbeat on time (exceeded the 100ms timeout for 2s, to 91bc3c398fb3c146)",
    "slow fdatasync",
    "sync duration of 2s, expected less than 1s",
    "apply request took too long",
    "alarm NOSPACE raised by peer 8e9e05c52164694d",
    "etcdserver: mvcc: database space exceeded",
    "prober found high clock drift",
    "starting member 8e9e05c52164694d in cluster 1b1d2d3a4f5e6a7b",
    "etcd Version: 3.4.23",
    "failed to dial 91bc3c398fb3c146 on stream Message",
    "https://198.18.0.12:2380/version",
];

fn phrase() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(PHRASES).prop_map(str::to_string),
        1 => (select(PHRASES), text()).prop_map(|(p, t)| format!("{p}{t}")),
        1 => text(),
    ]
    .boxed()
}

fn timestamp() -> BoxedStrategy<String> {
    prop_oneof![
        select(vec![
            "2026-12-02T08:26:30.123456Z",
            "2026-12-02 08:26:30.123456",
            "9999-12-31T23:59:59.999999Z",
            "0000-01-01T00:00:00Z",
            "-009999-01-01T00:00:00Z",
            "2026-02-30T25:61:61Z",
            "2026/12/02 08:26:30",
        ])
        .prop_map(str::to_string),
        text(),
    ]
    .boxed()
}

/// One etcd log line in one of the forms the classifier reads (or none of them).
fn log_line() -> BoxedStrategy<String> {
    let zap_ts = prop_oneof![
        timestamp().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        i64_edge().prop_map(Value::from),
    ];
    let zap = (
        select(vec!["warn", "info", "error", "WARN", "panic"]),
        zap_ts,
        phrase(),
        opt(phrase()),
        opt(select(vec![
            "8e9e05c52164694d",
            "91bc3c398fb3c146",
            "zz",
            "",
        ])),
        opt(ip_text()),
        opt(any_json()),
    )
        .prop_map(|(level, ts, msg, error, peer, addr, extra)| {
            let mut v = json!({"level": level, "ts": ts, "msg": msg});
            let o = v.as_object_mut().expect("an object");
            if let Some(e) = error {
                o.insert("error".into(), e.into());
            }
            if let Some(p) = peer {
                o.insert("remote-peer-id".into(), p.into());
                o.insert("local-member-id".into(), p.into());
            }
            if let Some(a) = addr {
                o.insert("remote-addr".into(), a.clone().into());
                o.insert("remote-peer-urls".into(), json!([format!("https://{a}")]));
            }
            if let Some(x) = extra {
                o.insert("alarm".into(), x);
            }
            v.to_string()
        });
    let capnslog = (
        timestamp(),
        select(vec!["W", "E", "I", "N", "C", "D", "T", "X"]),
        select(vec!["rafthttp", "etcdserver", "raft", "", "a b"]),
        phrase(),
    )
        .prop_map(|(ts, l, pkg, msg)| format!("{ts} {l} | {pkg}: {msg}"));
    let golog = (timestamp(), phrase()).prop_map(|(ts, msg)| format!("WARNING: {ts} {msg}"));
    let raft = (timestamp(), phrase()).prop_map(|(ts, msg)| format!("raft{ts} INFO: {msg}"));
    prop_oneof![
        4 => zap,
        3 => capnslog,
        1 => golog,
        1 => raft,
        1 => phrase(),
    ]
    .boxed()
}

/// A log as the probe returns it: lines, some behind the CRI file format's prefix (`P` pieces
/// joined to the next), some behind `crictl logs --timestamps`.
fn etcd_log() -> BoxedStrategy<String> {
    let prefixed = (
        select(vec![
            "",
            "2026-12-02T08:26:30.123456789Z stderr F ",
            "2026-12-02T08:26:30.123456789Z stderr P ",
            "2026-12-02T08:26:30.123456789Z ",
            "\r",
        ]),
        log_line(),
    )
        .prop_map(|(p, l)| format!("{p}{l}"));
    proptest::collection::vec(prefixed, 0..40)
        .prop_map(|lines| lines.join("\n"))
        .boxed()
}

// ---- the probe's document --------------------------------------------------------------------

fn container() -> BoxedStrategy<Value> {
    let created = prop_oneof![i64_edge().prop_map(|n| n.to_string()), timestamp(),];
    (
        s_leaf(text()),
        s_leaf(prop_oneof![
            select(vec!["CONTAINER_RUNNING", "CONTAINER_RUNNING", "CONTAINER_EXITED", "Running", "Exited"])
                .prop_map(str::to_string),
            text(),
        ]),
        leaf(opt(usually(0u32..3, u32_edge())).prop_map(|a| json!(a))),
        leaf(opt(created).prop_map(|c| json!(c))),
    )
        .prop_map(|(id, state, attempt, created)| {
            json!({"id": id, "state": state, "attempt": attempt, "createdAt": created})
        }).boxed()
}

fn path_check() -> BoxedStrategy<Value> {
    (
        (
            s_leaf(ip_text()),
            leaf(port().prop_map(Value::from)),
            leaf(any::<bool>().prop_map(Value::from)),
            s_leaf(usually(
                Just("Connected".to_string()),
                variant::<TcpOutcome>(),
            )),
            leaf(opt(u64_edge()).prop_map(|v| json!(v))),
        ),
        (
            leaf(opt(text()).prop_map(|v| json!(v))),
            s_leaf(usually(
                Just("Completed".to_string()),
                variant::<TlsOutcome>(),
            )),
            leaf(opt(u64_edge()).prop_map(|v| json!(v))),
            leaf(opt(phrase()).prop_map(|v| json!(v))),
            leaf(opt(any::<u16>()).prop_map(|v| json!(v))),
        ),
    )
        .prop_map(
            |((target, port, own, tcp, tcp_ms), (tcp_d, tls, tls_ms, tls_d, http))| {
                json!({
                    "target": target, "port": port, "own": own, "tcp": tcp, "tcpMs": tcp_ms,
                    "tcpDetail": tcp_d, "tls": tls, "tlsMs": tls_ms, "tlsDetail": tls_d,
                    "httpStatus": http,
                })
            },
        )
        .boxed()
}

fn cert() -> BoxedStrategy<Value> {
    (
        s_leaf(prop_oneof![
            select(vec!["peer.crt", "server.crt", "ca.crt"]).prop_map(str::to_string),
            text()
        ]),
        opt(timestamp()),
        opt(timestamp()),
        leaf(opt(usually(1i64..100_000_000, i64_edge())).prop_map(|v| json!(v))),
        usually(Just(Some(false)), opt(any::<bool>())),
        proptest::collection::vec(ip_text(), 0..4),
        usually(Just(Some(true)), opt(any::<bool>())),
        opt(text()),
    )
        .prop_map(|(file, nb, na, exp, nyv, sans, has_ip, error)| {
            json!({
                "file": file, "notBefore": nb, "notAfter": na, "expiresInS": exp,
                "notYetValid": nyv, "sans": sans, "hasNodeIp": has_ip, "error": error,
            })
        })
        .boxed()
}

/// A probe document of format 1 (a bundle's `probe.json`) shaped like schema v1, leaves
/// arbitrary.
fn probe_document() -> BoxedStrategy<Value> {
    let etcd = (
        s_leaf(variant::<RuntimeQuery>()),
        opt(text()),
        proptest::collection::vec(container(), 0..3),
        opt((text(), etcd_log(), u32_edge(), any::<bool>())),
    )
        .prop_map(|(query, error, containers, logs)| {
            json!({
                "query": query, "error": error, "containers": containers,
                "logs": logs.map(|(id, text, lines, truncated)| json!({
                    "containerId": id, "text": text, "lines": lines, "truncated": truncated,
                })),
            })
        });
    let health = (
        s_leaf(usually(
            Just("Healthy".to_string()),
            variant::<HealthOutcome>(),
        )),
        opt(any::<u16>()),
        opt(prop_oneof![
            select(vec![
                r#"{"health":"false","reason":"RAFT NO LEADER"}"#,
                r#"{"health":"false","reason":"NOSPACE"}"#,
            ])
            .prop_map(str::to_string),
            text()
        ]),
        leaf(opt(u64_edge()).prop_map(|v| json!(v))),
        opt(text()),
    )
        .prop_map(|(outcome, http, body, ms, detail)| {
            json!({
                "outcome": outcome, "httpStatus": http, "body": body, "ms": ms, "detail": detail,
            })
        });
    (
        (
            leaf(prop_oneof![8 => Just(json!(1)), 1 => any_json()]),
            s_leaf(ip_text()),
            opt(text()),
            proptest::collection::vec(ip_text(), 0..4),
            leaf(opt(i64_edge()).prop_map(|v| json!(v))),
            leaf(opt(u64_edge()).prop_map(|v| json!(v))),
        ),
        (
            etcd,
            (opt(text()), opt(timestamp()), opt(text())),
            proptest::collection::vec(path_check(), 0..10),
            proptest::collection::vec(cert(), 0..4),
            opt(proptest::collection::vec(text(), 0..3)),
            health,
            proptest::collection::vec((text(), text()), 0..3),
        ),
    )
        .prop_map(
            |(
                (schema, node_ip, hostname, ips, clock, duration),
                (etcd, kubelet, paths, certs, manifest, health, errors),
            )| {
                json!({
                    "schemaVersion": schema, "nodeIp": node_ip, "hostname": hostname,
                    "ips": ips, "clockMs": clock, "durationMs": duration, "etcd": etcd,
                    "kubelet": {"active": kubelet.0, "since": kubelet.1, "error": kubelet.2},
                    "paths": paths, "certs": certs,
                    "manifest": manifest.map(|urls| json!({
                        "name": urls.first(), "advertiseClientUrls": urls,
                        "initialCluster": urls.join(","),
                    })),
                    "health": health,
                    "errors": errors.into_iter()
                        .map(|(step, message)| json!({"step": step, "message": message}))
                        .collect::<Vec<_>>(),
                })
            },
        )
        .boxed()
}

/// The document as the probe prints it: `schemaVersion` first (the parser looks for the
/// document by it), the rest as serde_json writes it.
fn printed(doc: &Value) -> String {
    let mut rest = doc.clone();
    let schema = rest
        .as_object_mut()
        .and_then(|o| o.remove("schemaVersion"))
        .unwrap_or(Value::Null);
    let rest = rest.to_string();
    match rest.strip_prefix('{') {
        Some("}") => format!("{{\"schemaVersion\":{schema}}}"),
        Some(fields) => format!("{{\"schemaVersion\":{schema},{fields}"),
        None => rest,
    }
}

// ---- the probe's framed output (format 2) -----------------------------------------------------

/// One of etcd's answers as `etcd_ask` writes it (`raw_section`'s shape), or not asked.
fn answer(url: &'static str, body: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![
        6 => (
            usually(Just(0i64), i64_edge()),
            usually(Just(200u32), u32_edge()),
            u64_edge(),
            opt(phrase()),
            body,
        )
            .prop_map(move |(rc, code, ms, err, body)| {
                let err = err.map(|e| format!("err {e}\n")).unwrap_or_default();
                format!(
                    "rc {rc}\nurl {url}\nw {code} 0.{ms}\nsize {}\n{err}hdr X-Etcd-Cluster-ID: cdf818194e3a8c32\n--\n{body}",
                    body.len()
                )
            }),
        1 => text().prop_map(|why| format!("skipped {why}")),
        1 => text(),
    ]
    .boxed()
}

/// A member as peerMembersHandler prints it, its leaves hostile: IDs as etcd 3.4/3.5 print them
/// (decimal uint64s), as strings, at their extremes, of the wrong type.
fn member() -> BoxedStrategy<Value> {
    (
        leaf(usually(
            u64_edge().prop_map(Value::from),
            u64_edge().prop_map(|n| Value::from(n.to_string())),
        )),
        s_leaf(text()),
        proptest::collection::vec(ip_text().prop_map(|ip| format!("https://{ip}:2380")), 0..3),
        leaf(any::<bool>().prop_map(Value::from)),
    )
        .prop_map(|(id, name, peers, learner)| {
            json!({"id": id, "name": name, "peerURLs": peers, "clientURLs": peers, "isLearner": learner})
        })
        .boxed()
}

/// A curl `-v --trace-time` transcript line of a path check, or any text.
fn transcript_line() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(vec![
            "12:00:00.000000 *   Trying 198.18.0.12:2380...",
            "12:00:00.001000 * Connected to 198.18.0.12 (198.18.0.12) port 2380",
            "12:00:00.002000 * TLSv1.3 (OUT), TLS handshake, Client hello (1):",
            "12:00:00.050000 * SSL connection using TLSv1.3",
            "12:00:03.000000 * connect to 198.18.0.12 port 2380 from 198.18.0.11 port 4242 failed: Connection refused",
            "* Immediate connect fail for 198.18.0.12: No route to host",
            "curl: (28) Operation timed out after 5000 milliseconds",
            "curl: (56) Recv failure: Connection reset by peer",
            "23:59:59.999999 * Established connection to x",
        ])
        .prop_map(str::to_string),
        1 => (timestamp(), phrase()).prop_map(|(t, p)| format!("{t} * {p}")),
        1 => text(),
    ]
    .boxed()
}

/// A framed output (format 2) shaped as probe.sh prints it, every section's leaves hostile, each
/// section now and then any text at all.
fn framed_output() -> BoxedStrategy<String> {
    let node = (ip_text(), text(), i64_edge(), u64_edge()).prop_map(|(ip, host, clock, ms)| {
        format!("self {ip}\nhost {host}\nclock {clock}\nms {ms}\n")
    });
    let check = (
        usually(Just(0i64), i64_edge()),
        u64_edge(),
        usually(Just(200u32), u32_edge()),
        opt(u64_edge()),
        proptest::collection::vec(transcript_line(), 0..6),
    )
        .prop_map(|(rc, ms, code, killed, lines)| {
            let killed = killed.map(|k| format!("killed {k}\n")).unwrap_or_default();
            format!(
                "check {rc} {ms}\n{killed}w {code} 0.001 0.05\n--\n{}\n",
                lines.join("\n")
            )
        });
    let checks = proptest::collection::vec((ip_text(), check), 0..4);
    let members = proptest::collection::vec(member(), 0..5)
        .prop_map(|m| Value::Array(m).to_string())
        .boxed();
    let alarms = proptest::collection::vec((leaf(u64_edge().prop_map(|n| Value::from(n.to_string()))), s_leaf(prop_oneof![select(vec!["NOSPACE", "CORRUPT", "NONE"]).prop_map(str::to_string), text()])), 0..3)
        .prop_map(|a| json!({"alarms": a.into_iter().map(|(id, alarm)| json!({"memberID": id, "alarm": alarm})).collect::<Vec<_>>()}).to_string())
        .boxed();
    let health = prop_oneof![
        select(vec![
            r#"{"health":"true","reason":""}"#,
            r#"{"health":"false","reason":"RAFT NO LEADER"}"#,
            r#"{"health":"false","reason":"ALARM NOSPACE"}"#,
        ])
        .prop_map(str::to_string),
        text(),
    ]
    .boxed();
    let ps = proptest::collection::vec(container(), 0..3).prop_map(|cs| {
        let cs: Vec<Value> = cs
            .into_iter()
            .map(|c| {
                json!({"id": c["id"], "state": c["state"], "createdAt": c["createdAt"],
                            "metadata": {"name": "etcd", "attempt": c["attempt"]}})
            })
            .collect();
        format!("rc 0\n--\n{}\n", json!({"containers": cs}))
    });
    let log = (text(), etcd_log())
        .prop_map(|(id, log)| format!("id {id}\nrc 0\nmax 262144\n--\n{log}\n"));
    let certs = (timestamp(), timestamp(), proptest::collection::vec(ip_text(), 0..4)).prop_map(
        |(nb, na, sans)| {
            let sans: Vec<String> = sans.iter().map(|s| format!("IP Address:{s}")).collect();
            format!(
                "file peer.crt 1 /p/peer.crt\nfile ca.crt 2 /p/ca.crt\n--\nCertificate:\n  Not Before: {nb}\n  Not After : {na}\n  X509v3 Subject Alternative Name: \n      {}\nCertificate:\n",
                sans.join(", ")
            )
        },
    );
    let errors = proptest::collection::vec((text(), text()), 0..3).prop_map(|e| {
        e.iter()
            .map(|(s, m)| format!("{s}\t{m}\n"))
            .collect::<String>()
    });
    let any = || prop_oneof![9 => Just(None), 1 => text().prop_map(Some)];
    (
        (node, checks, errors, any()),
        (
            answer("https://127.0.0.1:2379/health", health),
            answer("https://198.18.0.11:2380/members", members),
            answer("https://127.0.0.1:2379/v3/maintenance/alarm", alarms),
        ),
        (ps, log, certs, text(), any()),
    )
        .prop_map(
            |(
                (node, checks, errors, junk),
                (health, members, alarms),
                (ps, log, certs, kubelet, junk2),
            )| {
                let mut paths = String::from("checks 3 2 1\n");
                for (i, (ip, _)) in checks.iter().enumerate() {
                    paths.push_str(&format!("path {} {ip} {} {}\n", i + 1, 2379 + i % 2, i < 2));
                }
                let mut sections: Vec<(String, String)> = vec![
                    ("node".into(), junk.unwrap_or(node)),
                    ("paths".into(), paths),
                    ("errors".into(), errors),
                    ("health".into(), health),
                    ("members".into(), members),
                    ("alarms".into(), alarms),
                    ("etcd.ps".into(), junk2.unwrap_or(ps)),
                    ("etcd.log".into(), log),
                    ("certs".into(), certs),
                    (
                        "kubelet".into(),
                        format!("active {kubelet}\nshow ActiveEnterTimestamp={kubelet}\n"),
                    ),
                ];
                for (i, (_, check)) in checks.into_iter().enumerate() {
                    sections.push((format!("check.{}", i + 1), check));
                }
                let sections: Vec<(&str, &str)> = sections
                    .iter()
                    .map(|(n, t)| (n.as_str(), t.as_str()))
                    .collect();
                crate::probe::frame::write(&sections)
            },
        )
        .boxed()
}

/// What a route hands back for one node: the probe's framed output (format 2) or a document of
/// format 1 (a bundle's `probe.json`), with the noise routes see around it (banners, CRI
/// prefixes, a cut), or a failure to reach it.
fn node_output() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        16 => framed_output().prop_map(String::into_bytes),
        2 => (text(), framed_output(), text())
            .prop_map(|(a, f, b)| format!("{a}\n{f}{b}").into_bytes()),
        2 => (framed_output(), any::<prop::sample::Index>()).prop_map(|(f, at)| {
            let bytes = f.into_bytes();
            let end = at.index(bytes.len() + 1);
            bytes[..end].to_vec()
        }),
        8 => probe_document().prop_map(|d| printed(&d).into_bytes()),
        1 => (text(), probe_document(), text())
            .prop_map(|(a, d, b)| format!("{a}\n{}\n{b}", printed(&d)).into_bytes()),
        // A pod log: kubelet's CRI format, the long line in `P` pieces ended by an `F`.
        1 => probe_document().prop_map(|d| {
            let chars: Vec<char> = printed(&d).chars().collect();
            let pieces: Vec<String> = chars.chunks(64).map(|c| c.iter().collect()).collect();
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let tag = if i + 1 == pieces.len() { "F" } else { "P" };
                    format!("2026-12-02T08:26:30.1Z stdout {tag} {p}\n")
                })
                .collect::<String>()
                .into_bytes()
        }),
        1 => (probe_document(), any::<prop::sample::Index>()).prop_map(|(d, at)| {
            let bytes = printed(&d).into_bytes();
            let end = at.index(bytes.len() + 1);
            bytes[..end].to_vec()
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..300),
    ]
    .boxed()
}

fn node_report() -> BoxedStrategy<NodeReport> {
    let reach = proptest::collection::vec(
        (port(), select(PortState::VARIANTS)).prop_map(|(port, state)| PortReach { port, state }),
        0..5,
    );
    let failed = (select(ReachErrorKind::VARIANTS), text())
        .prop_map(|(kind, message)| Err(ReachError { kind, message }));
    let outcome = prop_oneof![
        19 => node_output().prop_map(Ok::<Vec<u8>, ReachError>),
        1 => failed,
    ];
    (
        prop_oneof![3 => select(vec!["cp1", "cp2", "cp3"]).prop_map(str::to_string), 1 => text()],
        ip(),
        outcome,
        reach,
    )
        .prop_map(|(name, ip, outcome, reach)| {
            // Parse as the routes do: a document that does not parse is the node's BadOutput.
            let outcome = outcome.and_then(|raw: Vec<u8>| {
                parse(&name, &raw).map_err(|e| ReachError {
                    kind: ReachErrorKind::BadOutput,
                    message: e.to_string(),
                })
            });
            NodeReport {
                name,
                ip,
                outcome,
                reach_from: None,
                reach,
                host_key: None,
            }
        })
        .boxed()
}

// ---- the Supervisor's objects ----------------------------------------------------------------

fn condition() -> BoxedStrategy<Value> {
    (
        s_leaf(prop_oneof![
            select(vec![
                "EtcdClusterHealthy",
                "EtcdMemberHealthy",
                "EtcdPodHealthy",
                "Ready",
                "Available"
            ])
            .prop_map(str::to_string),
            text()
        ]),
        s_leaf(prop_oneof![
            select(vec!["True", "False", "Unknown"]).prop_map(str::to_string),
            text()
        ]),
        opt(text()),
        opt(text()),
    )
        .prop_map(|(t, s, reason, message)| {
            json!({"type": t, "status": s, "reason": reason, "message": message})
        }).boxed()
}

fn kcp_object() -> BoxedStrategy<Value> {
    let count = || leaf(opt(usually(0i64..4, i64_edge())).prop_map(|v| json!(v)));
    (
        (count(), count(), count(), count(), count(), count()),
        proptest::collection::vec(condition(), 0..4),
        proptest::collection::vec(condition(), 0..4),
        count(),
    )
        .prop_map(
            |((spec, replicas, ready, available, updated, unavailable), c1, c2, up)| {
                json!({
                    "spec": {"replicas": spec},
                    "status": {
                        "replicas": replicas, "readyReplicas": ready,
                        "availableReplicas": available, "updatedReplicas": updated,
                        "unavailableReplicas": unavailable, "conditions": c1,
                        "v1beta2": {"conditions": c2, "upToDateReplicas": up},
                    },
                })
            },
        )
        .boxed()
}

fn machine_object() -> BoxedStrategy<(String, Value)> {
    (
        text(),
        opt(text()),
        opt(text()),
        proptest::collection::vec((text(), ip_text()), 0..3),
        opt(text()),
        opt(text()),
        opt(text()),
        // The KCP's conditions in every place a Machine version keeps them.
        (
            proptest::collection::vec(condition(), 0..3),
            proptest::collection::vec(condition(), 0..3),
            proptest::collection::vec(condition(), 0..3),
        ),
    )
        .prop_map(|(name, phase, node, addrs, infra, version, fd, (c1, c2, c3))| {
            let v = json!({
                "spec": {
                    "infrastructureRef": {"name": infra}, "version": version, "failureDomain": fd,
                },
                "status": {
                    "phase": phase, "nodeRef": {"name": node},
                    "addresses": addrs.into_iter()
                        .map(|(t, a)| json!({"type": t, "address": a}))
                        .collect::<Vec<_>>(),
                    "conditions": c1, "v1beta2": {"conditions": c2},
                    "deprecated": {"v1beta1": {"conditions": c3}},
                },
            });
            (name, v)
        })
        .boxed()
}

fn vm_object() -> BoxedStrategy<(String, Value)> {
    (
        text(),
        s_leaf(ip_text()),
        s_leaf(prop_oneof![
            select(vec!["PoweredOn", "poweredOn", "PoweredOff", "Suspended"])
                .prop_map(str::to_string),
            text()
        ]),
        s_leaf(text()),
    )
        .prop_map(|(name, ip, power, class)| {
            let v = json!({
                "spec": {"className": class},
                "status": {"vmIp": ip, "powerState": power, "network": {"primaryIP4": ip}},
            });
            (name, v)
        })
        .boxed()
}

fn cluster_object() -> BoxedStrategy<Value> {
    (
        opt(text()),
        s_leaf(text()),
        leaf(opt(i64_edge()).prop_map(|v| json!(v))),
    )
        .prop_map(|(phase, host, port)| {
            json!({
                "spec": {"controlPlaneEndpoint": {"host": host, "port": port},
                         "controlPlaneRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                                             "kind": "KubeadmControlPlane", "name": "tkc-cp"}},
                "status": {"phase": phase},
            })
        })
        .boxed()
}

/// The facts a walk would build from these objects, through the same extraction and join.
fn cluster_facts() -> BoxedStrategy<ClusterFacts> {
    (
        (text(), text(), text()),
        cluster_object(),
        opt((text(), kcp_object())),
        opt(text()),
        proptest::collection::vec(machine_object(), 0..6),
        proptest::collection::vec((vm_object(), opt(text())), 0..6),
        (text(), text(), text()),
    )
        .prop_map(
            |((ctx, ns, name), cluster, kcp, missing, machines, vms, apis)| {
                let mut facts = testing::facts(3, 3, vec![]);
                facts.context = ctx;
                facts.namespace = ns;
                facts.cluster.name = name;
                facts.cluster.phase = extract::phase(&cluster);
                facts.cluster.control_plane_endpoint = extract::cluster_endpoint(&cluster);
                facts.endpoint = extract::endpoint(&cluster);
                let _ = extract::control_plane_ref(&cluster);
                facts.kcp = kcp.map(|(name, obj)| {
                    extract::kcp(&name, "controlplane.cluster.x-k8s.io/v1beta1", &obj)
                });
                facts.kcp_missing_reason = missing;
                facts.apis.virtual_machine = apis.0;
                facts.apis.cluster = apis.1;
                facts.apis.control_plane = Some(apis.2);
                // Every Machine the KCP's, so that the join's other rules are reached; the
                // VMs name their owner (or none), with or without the uid.
                let machines = machines
                    .iter()
                    .map(|(name, m)| join::MachineObject {
                        info: extract::machine(name, m),
                        owners: vec![join::Owner {
                            kind: "KubeadmControlPlane".into(),
                            name: "tkc-cp".into(),
                            uid: Some("kcp".into()),
                            controller: true,
                        }],
                        infra: extract::infrastructure_ref(m),
                    })
                    .collect();
                let vms = vms
                    .into_iter()
                    .map(|((name, v), owner)| {
                        let (ip, refused_ip) = extract::vm_address(&v);
                        join::VmObject {
                            owners: owner
                                .iter()
                                .map(|o| join::Owner {
                                    kind: "VSphereMachine".into(),
                                    name: o.clone(),
                                    uid: Some(o.clone()),
                                    controller: true,
                                })
                                .collect(),
                            info: supervisor::VmInfo {
                                ip,
                                power: extract::vm_power(&v),
                                class: extract::vm_class(&v),
                                owner,
                                refused_ip,
                                name,
                                ..Default::default()
                            },
                        }
                    })
                    .collect();
                let anchors = join::Anchors {
                    kcp_uid: Some("kcp".into()),
                    vsphere_machines: None,
                };
                facts.nodes = join::join(&anchors, machines, vms);
                facts
            },
        )
        .boxed()
}

fn workload_api() -> BoxedStrategy<WorkloadApi> {
    (
        select(ApiState::VARIANTS),
        opt(text()),
        opt(text()),
        opt(any::<u16>()),
        opt(u64_edge()),
        text(),
    )
        .prop_map(|(state, server, path, http_status, elapsed_ms, detail)| {
            let mut api = testing::api(state);
            api.server = server;
            api.path = path;
            api.http_status = http_status;
            api.elapsed_ms = elapsed_ms;
            api.detail = detail;
            api
        })
        .boxed()
}

// ---- what must hold --------------------------------------------------------------------------

/// The escape sequences [`Paint`] writes: the only ones a table may hold.
fn our_styles() -> Vec<String> {
    use anstyle::AnsiColor::{Green, Red, Yellow};
    [Green, Yellow, Red]
        .into_iter()
        .flat_map(|c| {
            let s = c.on_default().bold();
            [format!("{s}"), format!("{s:#}")]
        })
        .collect()
}

/// Table output: nothing a terminal acts on but the line breaks and our colours.
fn assert_visible(what: &str, out: &str) {
    let mut rest = out.to_string();
    for s in our_styles() {
        rest = rest.replace(&s, "");
    }
    let reorders = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let raw = |c: char| {
        c != '\n' && (c.is_control() || reorders(c) || c == '\u{2028}' || c == '\u{2029}')
    };
    if let Some(c) = rest.chars().find(|&c| raw(c)) {
        panic!("{what}: {c:?} reaches the terminal in:\n{out}");
    }
}

/// JSON output: no raw control character; YAML: none but its line breaks; both read back as
/// the same report.
fn assert_structured<T>(what: &str, report: &T, json: &str, yaml: &str)
where
    T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert!(
        !json.chars().any(|c| c != '\n' && c.is_control()),
        "{what}: raw control character in JSON:\n{json}"
    );
    assert!(
        !yaml.chars().any(|c| c != '\n' && c.is_control()),
        "{what}: raw control character in YAML:\n{yaml}"
    );
    let from_json: T = serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: {e}\n{json}"));
    assert_eq!(&from_json, report, "{what}: JSON reads back differently");
    let from_yaml: T =
        serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("{what}: {e}\n{yaml}"));
    assert_eq!(&from_yaml, report, "{what}: YAML reads back differently");
}

/// Every renderer of both reports made from these facts, API state and node reports.
fn render_everything(
    facts: ClusterFacts,
    api: WorkloadApi,
    nodes: Vec<NodeReport>,
    route: RouteInfo,
    ms: u64,
) {
    let diagnosis = verdict::diagnose(&facts, &nodes, verdict::DEFAULT_SINCE);
    let findings = status_findings(&facts, &api);
    let report = DiagnoseReport::new(
        facts.clone(),
        api.clone(),
        findings.clone(),
        route,
        nodes,
        diagnosis,
        ms,
    );
    for format in [Format::Table, Format::Wide] {
        for on in [false, true] {
            let out = render::output(&report, format, Paint { on }).expect("renders");
            assert_visible("diagnose table", &out);
        }
    }
    let json = render::output(&report, Format::Json, Paint::default()).expect("JSON");
    let yaml = render::output(&report, Format::Yaml, Paint::default()).expect("YAML");
    assert_structured("diagnose", &report, &json, &yaml);

    let status = StatusReport::new(facts, api, findings, 0);
    for format in [Format::Table, Format::Wide] {
        for on in [false, true] {
            let out = render::output(&status, format, Paint { on }).expect("renders");
            assert_visible("status table", &out);
        }
    }
    let json = render::output(&status, Format::Json, Paint::default()).expect("JSON");
    let yaml = render::output(&status, Format::Yaml, Paint::default()).expect("YAML");
    assert_structured("status", &status, &json, &yaml);
}

proptest! {
    #![proptest_config(config(160))]

    /// Probe documents (shaped, cut, wrapped in noise, or any bytes) and the Supervisor's
    /// objects through parse → extract → analyse → report → every renderer of diagnose and
    /// status.
    // Long: CPU, in a debug build: 160 generated clusters, each through parse, extract, analyse,
    // report and every renderer of diagnose and status.
    #[test]
    fn no_input_breaks_the_pipeline(
        facts in cluster_facts(),
        api in workload_api(),
        nodes in proptest::collection::vec(node_report(), 0..5),
        route in (text(), text()).prop_map(|(name, reason)| RouteInfo { name, reason }),
        ms in u64_edge(),
    ) {
        render_everything(facts, api, nodes, route, ms);
    }

    /// The parser is total on any bytes.
    #[test]
    fn parse_is_total(raw in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let _ = parse("cp1", &raw);
    }

    /// The log classifier is total on any text, and what it reports stays within the input.
    #[test]
    fn classify_is_total(
        log in prop_oneof![etcd_log(), chars(400)],
        raw in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let summary = etcdlog::classify(&log);
        prop_assert!(summary.parsed_lines <= summary.lines);
        for f in &summary.findings {
            prop_assert!(f.count <= summary.parsed_lines);
        }
        let _ = etcdlog::classify_bytes(&raw);
        for line in log.lines() {
            let _ = etcdlog::parse_line(line);
        }
    }

    /// The extractors read any JSON at all (a served object may be anything).
    #[test]
    fn extract_is_total(v in any_json(), name in text()) {
        let _ = extract::kcp(&name, "v", &v);
        let _ = extract::machine(&name, &v);
        let _ = extract::vm_ip(&v);
        let _ = extract::vm_power(&v);
        let _ = extract::vm_class(&v);
        let _ = extract::control_plane_ref(&v);
        let _ = extract::cluster_endpoint(&v);
        let _ = extract::endpoint(&v);
        let _ = extract::phase(&v);
    }

    /// `cleanup`'s table, from any pod names, ages and failures.
    #[test]
    fn cleanup_renders_anything(
        items in proptest::collection::vec(
            (text(), text(), text(), opt(u64_edge()), prop_oneof![
                Just(CleanupAction::Deleted), Just(CleanupAction::Kept),
                text().prop_map(CleanupAction::Failed),
            ]).prop_map(|(cluster, namespace, name, age_seconds, action)| CleanupItem {
                cluster, namespace, name, age_seconds, action,
            }),
            0..4,
        ),
        skipped in proptest::collection::vec(text(), 0..3),
    ) {
        let report = CleanupReport::new(items, skipped);
        for format in [Format::Table, Format::Wide] {
            let out = render::output(&report, format, Paint::default()).expect("renders");
            assert_visible("cleanup table", &out);
        }
        let json = render::output(&report, Format::Json, Paint::default()).expect("JSON");
        prop_assert!(!json.chars().any(|c| c != '\n' && c.is_control()));
    }
}

/// A container ID of multi-byte characters, cut to at most 13 bytes in the evidence of a
/// crash-looping or stopped etcd, is cut on a character (slicing at byte 13 would panic).
#[test]
fn a_multi_byte_container_id_is_cut_on_a_character() {
    let doc = json!({
        "schemaVersion": 1, "nodeIp": "198.18.0.11", "clockMs": i64::MIN,
        "etcd": {"query": "Ok", "containers": [{
            "id": "日本語のコンテナ日本語", "state": "CONTAINER_EXITED", "attempt": 7,
            "createdAt": i64::MAX.to_string(),
        }]},
    });
    let node = NodeReport {
        name: "cp1".into(),
        ip: "198.18.0.11".parse().ok(),
        outcome: Ok(parse("cp1", printed(&doc).as_bytes()).expect("parses")),
        reach_from: None,
        reach: vec![],
        host_key: None,
    };
    let facts = testing::facts(
        1,
        1,
        vec![testing::node(1, PowerState::PoweredOn, true, "Running")],
    );
    let d = verdict::diagnose(&facts, std::slice::from_ref(&node), verdict::DEFAULT_SINCE);
    assert_eq!(d.verdict.code, verdict::VerdictCode::EtcdCrashLooping);
    assert!(
        d.verdict.evidence.iter().any(|e| e.contains("日本語の")),
        "{:?}",
        d.verdict.evidence
    );
}

/// Big inputs within the probe's own caps finish in bounded time: every node with hundreds of
/// paths, certificates and containers, and a long log.
#[test]
fn big_documents_stay_bounded() {
    let started = super::cpu_time();
    let log: String = (0..5000)
        .map(|i| {
            format!(
                "{}\n",
                json!({
                    "level": "warn",
                    "ts": format!("2026-12-02T08:26:{:02}.000000Z", i % 60),
                    "msg": "lost TCP streaming connection with remote peer",
                    "error": format!(
                        "read tcp 198.18.0.11:{}->198.18.0.{}:2380: i/o timeout",
                        30000 + i,
                        i % 250
                    ),
                    "remote-peer-id": format!("{i:016x}"),
                })
            )
        })
        .collect();
    let paths: Vec<Value> = (0..600)
        .map(|i| {
            json!({"target": format!("198.18.{}.{}", i / 250, i % 250), "port": 2379 + (i % 2),
                   "tcp": "Timeout", "tcpMs": u64::MAX, "tls": "NotTried",
                   "tcpDetail": "x".repeat(200)})
        })
        .collect();
    let containers: Vec<Value> = (0..200)
        .map(|i| json!({"id": format!("{i:064x}"), "state": "CONTAINER_EXITED", "attempt": i}))
        .collect();
    let nodes: Vec<NodeReport> = (1..=5u8)
        .map(|i| {
            let doc = json!({
                "schemaVersion": 1, "nodeIp": format!("198.18.0.1{i}"),
                "clockMs": i64::MAX - i64::from(i), "durationMs": u64::MAX,
                "etcd": {"query": "Ok", "containers": containers,
                         "logs": {"containerId": "c", "text": log, "lines": 5000}},
                "paths": paths, "health": {"outcome": "Error", "ms": u64::MAX},
            });
            NodeReport {
                name: format!("cp{i}"),
                ip: format!("198.18.0.1{i}").parse().ok(),
                outcome: Ok(parse("cp", printed(&doc).as_bytes()).expect("parses")),
                reach_from: None,
                reach: vec![],
                host_key: None,
            }
        })
        .collect();
    let facts = testing::facts(i64::MAX, i64::MIN, vec![]);
    render_everything(
        facts,
        testing::api(ApiState::Timeout),
        nodes,
        RouteInfo {
            name: "pod".into(),
            reason: "r".into(),
        },
        u64::MAX,
    );
    // Generous for a debug build; quadratic work would take minutes. CPU time: other tests and
    // builds on the same cores do not count.
    let took = super::cpu_time() - started;
    assert!(
        took < std::time::Duration::from_secs(60),
        "took {took:?} of CPU"
    );
}
