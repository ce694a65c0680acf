use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/etcd-metrics/{name}.prom",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn id(s: &str) -> MemberId {
    MemberId::parse(s).unwrap()
}

const M1: &str = "ddd67b312462fd7b";
const M2: &str = "9e737febb6b99eee";
const M3: &str = "628170c800dbcee";

#[test]
fn both_etcd_lines_read_alike() {
    for v in ["v3.4", "v3.5"] {
        let c = Counters::parse(&fixture(&format!("{v}-no-leader")));
        assert_eq!(c.server_id, Some(id(M1)), "{v}");
        assert_eq!(c.has_leader, Some(false), "{v}");
        assert!(c.leader_changes.is_some_and(|n| n >= 2.0), "{v}: {c:?}");
        assert_eq!(
            c.peers.keys().copied().collect::<Vec<_>>(),
            {
                let mut ids = vec![id(M2), id(M3)];
                ids.sort();
                ids
            },
            "{v}"
        );
        for (peer, p) in &c.peers {
            assert!(
                p.sent_failures.is_some_and(|n| n > 0.0),
                "{v}: {peer}: {p:?}"
            );
            assert_eq!(p.disconnected, Some(1.0), "{v}: {peer}");
            assert!(p.round_trip.is_some(), "{v}: {peer}");
        }
        assert_eq!(c.db_size, Some(20480.0), "{v}");
        assert_eq!(c.quota, Some(2147483648.0), "{v}");
        let fsync = c.wal_fsync.as_ref().unwrap();
        assert!(fsync.count() > 0.0, "{v}");
        assert_eq!(fsync.above(1.0), 0.0, "{v}: the host's disk is fast");
        assert!(fsync.quantile(0.99).unwrap() < 0.1, "{v}");
        assert!(c.backend_commit.is_some(), "{v}");

        let healthy = Counters::parse(&fixture(&format!("{v}-healthy")));
        assert_eq!(healthy.has_leader, Some(true), "{v}");
        assert!(
            healthy.peers.values().all(|p| p.sent_failures.is_none()),
            "{v}: no failed send yet: {healthy:?}"
        );
    }
}

/// etcd 3.6 (v3.6-no-leader.prom, synthesized from v3.6.0's source: the same family names,
/// labels and buckets as 3.5's, no `etcd_debugging_mvcc_db_total_size_in_bytes`): read as the
/// 3.5 capture is.
#[test]
fn etcd_3_6_reads_as_3_5() {
    let c = Counters::parse(&fixture("v3.6-no-leader"));
    assert_eq!(c.server_id, Some(id(M1)));
    assert_eq!(c.has_leader, Some(false));
    assert_eq!(c.leader_changes, Some(2.0));
    assert_eq!(c.peers.len(), 2);
    assert_eq!(c.peers[&id(M3)].sent_failures, Some(9.0));
    assert_eq!(c.peers[&id(M2)].sent_failures, Some(4.0));
    for p in c.peers.values() {
        assert_eq!(p.disconnected, Some(1.0));
        assert!(
            p.round_trip.as_ref().is_some_and(|h| h.count() > 0.0),
            "{p:?}"
        );
        assert!(
            p.sent_bytes.is_some() && p.received_bytes.is_some(),
            "{p:?}"
        );
    }
    assert_eq!(c.db_size, Some(20480.0));
    assert_eq!(c.quota, Some(2147483648.0));
    let fsync = c.wal_fsync.as_ref().unwrap();
    assert_eq!(fsync.count(), 75.0);
    assert_eq!(fsync.buckets.len(), 15, "14 bounds and +Inf");
    assert!(c.backend_commit.is_some());
    // The same buckets as the 3.5.1 capture's, bound for bound.
    let v35 = Counters::parse(&fixture("v3.5-no-leader"));
    let bounds = |h: &Histogram| h.buckets.iter().map(|b| b.0).collect::<Vec<_>>();
    assert_eq!(bounds(fsync), bounds(v35.wal_fsync.as_ref().unwrap()));
    assert_eq!(
        bounds(c.peers[&id(M2)].round_trip.as_ref().unwrap()),
        bounds(v35.peers[&id(M2)].round_trip.as_ref().unwrap())
    );
}

#[test]
fn the_database_size_of_3_5_and_3_6_or_of_3_4() {
    let only_old = "# TYPE etcd_debugging_mvcc_db_total_size_in_bytes gauge\n\
                    etcd_debugging_mvcc_db_total_size_in_bytes 4096\n";
    assert_eq!(Counters::parse(only_old).db_size, Some(4096.0));
    let both = format!("{only_old}# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes 8192\n");
    assert_eq!(Counters::parse(&both).db_size, Some(8192.0));
}

fn hist(buckets: &[(f64, f64)]) -> Histogram {
    Histogram {
        buckets: buckets.to_vec(),
    }
}

#[test]
fn quantiles_as_histogram_quantile_estimates_them() {
    let inf = f64::INFINITY;
    // 100 fsyncs: 90 under 8 ms, 9 more under 1.024 s, 1 under 2.048 s.
    let h = hist(&[(0.008, 90.0), (1.024, 99.0), (2.048, 100.0), (inf, 100.0)]);
    let p99 = h.quantile(0.99).unwrap();
    assert!((p99 - 1.024).abs() < 1e-9, "{p99}");
    let p50 = h.quantile(0.5).unwrap();
    assert!((p50 - 0.008 * 50.0 / 90.0).abs() < 1e-9, "{p50}");
    assert_eq!(
        h.above(1.0),
        1.0,
        "over 1.024 s, the smallest bound at least 1 s"
    );
    assert_eq!(h.above(0.008), 10.0);
    assert_eq!(h.above(2.048), 0.0);
    // All in +Inf: the largest finite bound.
    assert_eq!(hist(&[(1.0, 0.0), (inf, 3.0)]).quantile(0.99), Some(1.0));
    assert_eq!(hist(&[(1.0, 0.0), (inf, 0.0)]).quantile(0.99), None);
    // Between two reads.
    let before = hist(&[(0.008, 80.0), (1.024, 80.0), (2.048, 80.0), (inf, 80.0)]);
    let during = h.since(&before).unwrap();
    assert_eq!(during.count(), 20.0);
    assert_eq!(during.above(0.008), 10.0);
    assert_eq!(during.above(1.0), 1.0);
    assert_eq!(
        before.since(&h),
        None,
        "a count that went down: etcd restarted"
    );
}

#[test]
fn hostile_text_gives_numbers_or_nothing() {
    let mut text = String::from(
        "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader NaN\n\
         # TYPE etcd_server_quota_backend_bytes gauge\netcd_server_quota_backend_bytes -5\n\
         # TYPE etcd_network_peer_sent_failures_total counter\n\
         etcd_network_peer_sent_failures_total{To=\"0ABC\"} 3\n\
         etcd_network_peer_sent_failures_total{To=\"\u{1b}[31m\"} 3\n\
         # TYPE etcd_disk_wal_fsync_duration_seconds histogram\n\
         etcd_disk_wal_fsync_duration_seconds_bucket{le=\"1\"} 5\n\
         etcd_disk_wal_fsync_duration_seconds_bucket{le=\"2\"} 4\n\
         etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 4\n",
    );
    for i in 1..200u64 {
        text.push_str(&format!(
            "etcd_network_peer_sent_failures_total{{To=\"{i:x}\"}} 1\n"
        ));
    }
    let c = Counters::parse(&text);
    assert_eq!(c.has_leader, None);
    assert_eq!(c.quota, None);
    assert_eq!(c.wal_fsync, None, "not cumulative: not etcd's");
    assert_eq!(
        c.peers.len(),
        MAX_PEERS,
        "IDs not as etcd writes them dropped, then capped"
    );
    assert!(!c.peers.contains_key(&id("abc")));
    // Past the byte cap nothing is read.
    let long = format!(
        "{}\n# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n",
        "#".repeat(MAX_TEXT_BYTES)
    );
    assert_eq!(Counters::parse(&long).has_leader, None);
}

#[test]
fn only_an_answered_read_has_counters() {
    let read = MetricsRead {
        outcome: QueryOutcome::Error,
        text: Some(fixture("v3.5-healthy")),
        ..Default::default()
    };
    assert_eq!(read.counters(), None);
    let read = MetricsRead {
        outcome: QueryOutcome::Ok,
        ..read
    };
    assert_eq!(read.counters().unwrap().has_leader, Some(true));
}

/// A family written as two series (labels differing): the same one is taken on every parse,
/// whatever order the crate's HashMap hands them out in.
#[test]
fn duplicate_series_are_read_in_one_fixed_order() {
    let series = |labels: &str, slow: u64| {
        let mut t = String::new();
        for (le, n) in [("0.008", 10), ("1.024", 10), ("+Inf", 10 + slow)] {
            t.push_str(&format!(
                "etcd_disk_wal_fsync_duration_seconds_bucket{{{labels}le=\"{le}\"}} {n}\n"
            ));
        }
        t
    };
    let text = format!(
        "# TYPE etcd_disk_wal_fsync_duration_seconds histogram\n{}{}{}",
        series("", 5),
        series("a=\"1\",", 0),
        series("z=\"1\",", 7)
    );
    let first = Counters::parse(&text);
    assert!(first.wal_fsync.is_some());
    for _ in 0..64 {
        assert_eq!(Counters::parse(&text), first);
    }
    // The series whose labels sort last (`z="1"`).
    assert_eq!(first.wal_fsync.unwrap().count(), 17.0);
}
