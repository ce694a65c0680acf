use super::*;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::nsxmanager::client::tests::{options, serve, session_granted, Canned};

fn infra() -> Layout {
    Layout::Infra {
        domain: "default".into(),
    }
}

fn class(to: &str) -> TraceflowClass {
    TraceflowClass {
        from: "cp1".into(),
        to: "cp2".into(),
        from_port: "/infra/segments/seg-1/ports/port-a".into(),
        to_ip: to.into(),
        port: 2380,
        from_ip: None,
        from_mac: None,
        to_mac: None,
    }
}

#[test]
fn the_config_is_a_transient_tcp_syn_from_the_port() {
    let c = config(&class("10.0.0.12"), "etcdnet-0011223344556677");
    assert_eq!(c["segment_port_path"], "/infra/segments/seg-1/ports/port-a");
    assert_eq!(c["is_transient"], true);
    assert_eq!(
        c["display_name"],
        "kubectl-etcdnet etcdnet-0011223344556677"
    );
    assert!(c.get("id").is_none(), "the id is the URL's");
    let p = &c["packet"];
    assert_eq!(p["resource_type"], "FieldsPacketData");
    assert_eq!(p["ip_header"]["dst_ip"], "10.0.0.12");
    assert_eq!(p["ip_header"]["protocol"], 6);
    assert!(p.get("ipv6_header").is_none());
    let tcp = &p["transport_header"]["tcp_header"];
    assert_eq!(
        (tcp["dst_port"].as_u64(), tcp["tcp_flags"].as_u64()),
        (Some(2380), Some(2))
    );
    assert!(
        p.get("eth_header").is_none(),
        "no MAC known, IPv4: NSX's defaults"
    );
    let c6 = config(&class("fd00::12"), "etcdnet-0011223344556677");
    assert_eq!(c6["packet"]["ipv6_header"]["dst_ip"], "fd00::12");
    assert!(c6["packet"].get("ip_header").is_none());
    // IPv6 in an IPv6 frame: EthernetHeader.eth_type defaults to IPv4 (2048).
    assert_eq!(c6["packet"]["eth_header"]["eth_type"], 34525);
}

/// As NSX's documented policy traceflow example sets them: both MACs, the source address.
#[test]
fn the_packet_carries_the_macs_and_the_source_address() {
    let mut c = class("10.0.0.12");
    c.from_ip = Some("10.0.0.11".into());
    c.from_mac = Some("00:50:56:a1:14:1b".into());
    c.to_mac = Some("00:50:56:a1:14:1c".into());
    let p = &config(&c, "etcdnet-0011223344556677")["packet"];
    assert_eq!(p["ip_header"]["src_ip"], "10.0.0.11");
    assert_eq!(
        p["eth_header"],
        json!({"src_mac": "00:50:56:a1:14:1b", "dst_mac": "00:50:56:a1:14:1c"})
    );
    let mut c6 = class("fd00::12");
    c6.from_ip = Some("fd00::11".into());
    c6.from_mac = c.from_mac.clone();
    let p6 = &config(&c6, "etcdnet-0011223344556677")["packet"];
    assert_eq!(p6["ipv6_header"]["src_ip"], "fd00::11");
    assert_eq!(
        p6["eth_header"],
        json!({"src_mac": "00:50:56:a1:14:1b", "eth_type": 34525})
    );
}

/// The MAC is the VM's own VIF's (owned by it, attached to its port), else the port's one
/// bound MAC; never a malformed one, another VM's VIF's, nor one of two bound MACs.
#[test]
fn the_mac_is_the_vms_own_vifs_or_its_ports_binding() {
    let port = "/infra/segments/s/ports/p1";
    let vif = |owner: &str, att: &str, mac: &str| {
        json!({"resource_type": "VirtualNetworkInterface", "owner_vm_id": owner,
               "lport_attachment_id": att, "mac_address": mac})
    };
    let seg = |macs: &[&str]| {
        json!({"resource_type": "SegmentPort", "path": port, "attachment": {"id": "att-1"},
               "address_bindings": macs.iter().map(|m| json!({"ip_address": "10.0.0.11", "mac_address": m})).collect::<Vec<_>>()})
    };
    let mac = |found: &[Value]| mac_of(found, Some("vm-1"), port, Some("att-1"));
    assert_eq!(
        mac(&[
            vif("vm-1", "att-1", "00:50:56:A1:14:1B"),
            seg(&["00:50:56:00:00:99"])
        ])
        .as_deref(),
        Some("00:50:56:a1:14:1b")
    );
    assert_eq!(
        mac(&[
            vif("vm-2", "att-1", "00:50:56:a1:14:1b"),
            seg(&["00:50:56:00:00:99"])
        ])
        .as_deref(),
        Some("00:50:56:00:00:99"),
        "another VM's VIF is not this VM's"
    );
    assert_eq!(
        mac(&[seg(&["00:50:56:00:00:99", "00:50:56:00:00:98"])]),
        None
    );
    assert_eq!(mac(&[vif("vm-1", "att-1", "00:50:56:a1:14:1b; rm")]), None);
    assert_eq!(mac(&[]), None);
    assert!(is_mac("00-50-56-a1-14-1b") && !is_mac("0050.56a1.141b"));
}

#[test]
fn ids_are_ours_and_their_paths_the_policy_apis() {
    let a = new_id();
    let b = new_id();
    assert_ne!(a, b);
    assert!(
        a.starts_with(ID_PREFIX) && a.len() == ID_PREFIX.len() + 16,
        "{a}"
    );
    let root = traceflow_root(&infra());
    let path = ApiPath::policy(&policy_path(&root, &a), &["status"]).unwrap();
    assert_eq!(
        path.as_str(),
        format!("/policy/api/v1/infra/traceflows/{a}/status")
    );
    let obs = ApiPath::policy(&policy_path(&root, &a), &["observations"]).unwrap();
    assert_eq!(
        obs.as_str(),
        format!("/policy/api/v1/infra/traceflows/{a}/observations")
    );
    let vpc = |project: &str| Layout::Vpc {
        org: "default".into(),
        project: project.into(),
        vpc: "v1".into(),
    };
    assert_eq!(traceflow_root(&vpc("default")), "/infra");
    let p1 = traceflow_root(&vpc("p1"));
    assert_eq!(
        ApiPath::policy(&policy_path(&p1, &a), &[])
            .unwrap()
            .as_str(),
        format!("/policy/api/v1/orgs/default/projects/p1/infra/traceflows/{a}")
    );
}

#[test]
fn the_state_is_the_statuss_operation_state() {
    assert_eq!(
        state(&json!({"operation_state": "IN_PROGRESS"})),
        State::InProgress
    );
    assert_eq!(
        state(&json!({"operation_state": "FINISHED"})),
        State::Finished
    );
    assert_eq!(
        state(&json!({"operation_state": "FAILED", "failure_reason": "port\u{1b}gone"})),
        State::Failed(Some("port?gone".into()))
    );
    assert_eq!(
        state(&json!({"operation_state": "FAILED", "request_status": "TIMEOUT"})),
        State::Failed(Some("TIMEOUT".into()))
    );
    assert_eq!(
        state(&json!({"operation_state": "FAILED", "request_status": "SUCCESS"})),
        State::Failed(None)
    );
    assert_eq!(
        state(&json!({"operation_state": "FAILED"})),
        State::Failed(None)
    );
    assert_eq!(state(&json!({})), State::Unknown);
}

#[test]
fn a_read_is_deleted_unless_its_delete_failed() {
    let mut reads = vec![
        read_of(
            &class("10.0.0.1"),
            "/infra/traceflows/etcdnet-aaaaaaaaaaaaaaaa",
        ),
        read_of(
            &class("10.0.0.2"),
            "/infra/traceflows/etcdnet-bbbbbbbbbbbbbbbb",
        ),
    ];
    let failed = BTreeMap::from([(
        "/infra/traceflows/etcdnet-bbbbbbbbbbbbbbbb".to_string(),
        "answered 500".to_string(),
    )]);
    mark_deleted(&mut reads, &failed);
    assert!(reads[0].deleted && reads[0].gaps.is_empty());
    assert!(!reads[1].deleted);
    assert!(reads[1].gaps[0].why.contains("two idle hours"));
}

#[test]
fn the_tracker_holds_an_id_from_before_its_put() {
    let t = TraceflowTracker::default();
    t.track("etcdnet-1", None);
    t.track("etcdnet-2", None);
    t.track("etcdnet-1", None);
    assert_eq!(t.pending(), ["etcdnet-1", "etcdnet-2"]);
    t.untrack("etcdnet-1");
    assert_eq!(t.pending(), ["etcdnet-2"]);
}

/// Each cluster's tracker is its own: it sees and deletes its traceflows only, while the run's
/// tracker sees them all (what a signal leaves, it deletes).
#[test]
fn a_clusters_tracker_is_its_own() {
    let run = TraceflowTracker::default();
    let (a, b) = (run.scoped(), run.scoped());
    a.track("etcdnet-a", None);
    b.track("etcdnet-b", None);
    assert_eq!(a.pending(), ["etcdnet-a"]);
    assert_eq!(b.pending(), ["etcdnet-b"]);
    assert_eq!(run.pending(), ["etcdnet-a", "etcdnet-b"]);
    a.untrack("etcdnet-b");
    assert_eq!(b.pending(), ["etcdnet-b"], "a cannot untrack b's");
}

/// Two clusters at once, as `-A --nsx-traceflow` runs them: the first to finish deletes its
/// own traceflow only, never the other's still polled; and a delete waits for its create's
/// answer (the manager here answers the PUT late), so it never lands before it.
#[tokio::test]
async fn clusters_delete_their_own_and_never_before_the_create() {
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let o = order.clone();
    let (url, _seen) = serve(move |method, path| {
        let answer = match (method, path) {
            ("POST", "/api/session/create") => return session_granted(),
            ("PUT", _) => {
                std::thread::sleep(Duration::from_millis(400));
                Canned::json(200, "{}")
            }
            ("GET", p) if p.ends_with("/status") => {
                Canned::json(200, r#"{"operation_state":"FINISHED"}"#)
            }
            ("GET", _) => Canned::json(200, r#"{"results":[]}"#),
            ("DELETE", _) => Canned::json(200, ""),
            _ => Canned::json(404, "{}"),
        };
        o.lock().unwrap().push(format!("{method} {path}"));
        answer
    });
    let client = Arc::new(Client::connect(&options(url)).await.unwrap());
    let run = TraceflowTracker::default();
    let (a, b) = (run.scoped(), run.scoped());
    let layout = infra();
    let (to_a, to_b) = ([class("10.0.0.12")], [class("10.0.0.13")]);
    let (reads_a, reads_b) = tokio::join!(
        run_and_delete(&client, &layout, &to_a, &a, Duration::from_secs(10)),
        run_and_delete(&client, &layout, &to_b, &b, Duration::from_secs(10)),
    );
    assert!(reads_a[0].deleted && reads_b[0].deleted);
    assert!(run.pending().is_empty(), "{:?}", run.pending());
    let seen = order.lock().unwrap().clone();
    for r in [&reads_a[0], &reads_b[0]] {
        let id = r.path.rsplit('/').next().unwrap();
        let at = |m: &str| {
            seen.iter()
                .position(|l| l.starts_with(m) && l.ends_with(id))
        };
        let (put, delete) = (at("PUT"), at("DELETE"));
        assert!(put.is_some() && put < delete, "{seen:#?}");
    }
    assert_eq!(seen.iter().filter(|l| l.starts_with("DELETE")).count(), 2);

    // A signal drops the run while its PUT is still on its way: the run's tracker deletes it
    // after the PUT's answer, not before.
    order.lock().unwrap().clear();
    let c = a.clone();
    let work = run_and_delete(&client, &layout, &to_a, &c, Duration::from_secs(10));
    tokio::select! {
        _ = work => panic!("the PUT takes 400 ms"),
        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
    }
    assert_eq!(run.pending().len(), 1);
    assert!(run.delete_all(&client).await.is_empty());
    let order = order.lock().unwrap().clone();
    assert_eq!(order.len(), 2, "{order:#?}");
    assert!(
        order[0].starts_with("PUT ") && order[1].starts_with("DELETE "),
        "{order:#?}"
    );
}

/// The mechanics (the NSX Manager fake is tests/fakensx): created, polled, observed, deleted.
#[tokio::test]
async fn a_finished_traceflow_is_read_and_deleted() {
    let (url, seen) = serve(|method, path| match (method, path) {
        ("POST", "/api/session/create") => session_granted(),
        ("PUT", _) => Canned::json(200, "{}"),
        ("GET", p) if p.ends_with("/status") => {
            Canned::json(200, r#"{"operation_state":"FINISHED"}"#)
        }
        ("GET", p) if p.contains("/observations") => Canned::json(
            200,
            r#"{"results":[{"resource_type":"TraceflowObservationDropped","reason":"FW_RULE","acl_rule_id":1042}],"result_count":1}"#,
        ),
        ("DELETE", _) => Canned::json(200, ""),
        _ => Canned::json(404, "{}"),
    });
    let client = Arc::new(Client::connect(&options(url)).await.unwrap());
    let tracker = TraceflowTracker::default();
    let reads = run_and_delete(
        &client,
        &infra(),
        &[class("10.0.0.12")],
        &tracker,
        Duration::from_secs(10),
    )
    .await;
    assert!(tracker.pending().is_empty(), "{:?}", tracker.pending());
    assert_eq!(reads.len(), 1);
    let r = &reads[0];
    assert!(r.deleted, "{r:?}");
    assert_eq!((r.from.as_str(), r.to.as_str()), ("cp1", "cp2"), "{r:?}");
    assert!(r.gaps.is_empty(), "{:?}", r.gaps);
    assert_eq!(r.observations.results[0]["reason"], "FW_RULE");
    let lines: Vec<String> = seen.try_iter().map(|s| s.line().to_string()).collect();
    let id = r.path.rsplit('/').next().unwrap();
    assert_eq!(
        lines[1..],
        [
            format!("PUT /policy/api/v1/infra/traceflows/{id} HTTP/1.1"),
            format!("GET /policy/api/v1/infra/traceflows/{id}/status HTTP/1.1"),
            format!(
                "GET /policy/api/v1/infra/traceflows/{id}/observations?page_size=1000 HTTP/1.1"
            ),
            format!("DELETE /policy/api/v1/infra/traceflows/{id} HTTP/1.1"),
        ]
    );
}

/// Ctrl-C while the traceflow runs, as the round meets it: the signal drops the run, and the
/// tracker that outlives it deletes the traceflow the run had created.
#[tokio::test]
async fn an_interrupted_run_still_deletes_its_traceflows() {
    let put = Arc::new(AtomicBool::new(false));
    let p = put.clone();
    let (url, seen) = serve(move |method, path| match (method, path) {
        ("POST", "/api/session/create") => session_granted(),
        ("PUT", _) => {
            p.store(true, Ordering::SeqCst);
            Canned::json(200, "{}")
        }
        ("GET", _) => Canned::json(200, r#"{"operation_state":"IN_PROGRESS"}"#),
        ("DELETE", _) => Canned::json(200, ""),
        _ => Canned::json(404, "{}"),
    });
    let client = Arc::new(Client::connect(&options(url)).await.unwrap());
    let shutdown = async {
        while !put.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let tracker = TraceflowTracker::default();
    let (layout, classes) = (infra(), [class("10.0.0.12")]);
    let work = run_and_delete(
        &client,
        &layout,
        &classes,
        &tracker,
        Duration::from_secs(30),
    );
    let interrupted = tokio::select! {
        _ = work => false,
        _ = shutdown => true,
    };
    assert!(interrupted);
    assert_eq!(tracker.pending().len(), 1, "created, then cut off");
    let failed = tracker.delete_all(&client).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert!(tracker.pending().is_empty(), "{:?}", tracker.pending());
    let lines: Vec<String> = seen.try_iter().map(|s| s.line().to_string()).collect();
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("DELETE /policy/api/v1/infra/traceflows/etcdnet-"),
        "{lines:?}"
    );
}

/// A create the manager refuses (403: the role may not run Traceflow) made nothing: no delete.
#[tokio::test]
async fn a_refused_create_is_a_gap_and_nothing_to_delete() {
    let (url, seen) = serve(|method, path| match (method, path) {
        ("POST", "/api/session/create") => session_granted(),
        ("PUT", _) => Canned::json(403, r#"{"error_message":"no Traceflow for you"}"#),
        _ => Canned::json(500, "{}"),
    });
    let client = Arc::new(Client::connect(&options(url)).await.unwrap());
    let tracker = TraceflowTracker::default();
    let reads = run_and_delete(
        &client,
        &infra(),
        &[class("10.0.0.12")],
        &tracker,
        Duration::from_secs(10),
    )
    .await;
    assert!(tracker.pending().is_empty(), "{:?}", tracker.pending());
    assert!(reads[0].deleted, "nothing left: {:?}", reads[0]);
    assert_eq!(reads[0].gaps.len(), 1, "{:?}", reads[0].gaps);
    assert!(reads[0].gaps[0]
        .privilege
        .as_deref()
        .unwrap()
        .contains("Traceflow"));
    let lines: Vec<String> = seen.try_iter().map(|s| s.line().to_string()).collect();
    assert!(!lines.iter().any(|l| l.starts_with("DELETE")), "{lines:?}");
}

/// A delete the manager refuses leaves the traceflow tracked and says so.
#[tokio::test]
async fn a_refused_delete_is_said_and_kept_tracked() {
    let (url, _seen) = serve(|method, path| match (method, path) {
        ("POST", "/api/session/create") => session_granted(),
        ("PUT", _) => Canned::json(200, "{}"),
        ("GET", p) if p.ends_with("/status") => {
            Canned::json(200, r#"{"operation_state":"FINISHED"}"#)
        }
        ("GET", _) => Canned::json(200, r#"{"results":[]}"#),
        ("DELETE", _) => Canned::json(403, r#"{"error_message":"no"}"#),
        _ => Canned::json(404, "{}"),
    });
    let client = Arc::new(Client::connect(&options(url)).await.unwrap());
    let tracker = TraceflowTracker::default();
    let planned = vec![(class("10.0.0.12"), policy_path("/infra", &new_id()))];
    let mut reads = run(&client, &planned, &tracker, Duration::from_secs(10)).await;
    let failed = tracker.delete_all(&client).await;
    assert_eq!(tracker.pending(), [planned[0].1.clone()]);
    mark_deleted(&mut reads, &failed);
    assert!(!reads[0].deleted);
    assert!(reads[0].gaps[0].why.contains("403"), "{:?}", reads[0].gaps);
}
