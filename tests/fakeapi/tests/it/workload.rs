//! The workload-endpoint fakes: answering, failing, black hole, refused.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use etcdnet_fakeapi::Workload;

fn addr(w: &Workload) -> String {
    w.url().trim_start_matches("https://").to_string()
}

#[test]
fn ok_answers_like_kube_apiserver() {
    let w = Workload::ok();
    let (code, head, body) = common::get(&w.url(), "/readyz", None);
    assert_eq!((code, body.as_str()), (200, "ok"));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain"),
        "{head}"
    );
    let (code, _, body) = common::get(&w.url(), "/version", None);
    assert_eq!(code, 200);
    assert!(common::json(&body)["gitVersion"]
        .as_str()
        .unwrap()
        .starts_with("v1."));
    let (code, _, body) = common::get(&w.url(), "/api/v1", None);
    assert_eq!(code, 200);
    assert_eq!(common::json(&body)["kind"], "APIResourceList");
    assert_eq!(w.requests().len(), 3);
}

#[test]
fn failing_endpoints() {
    let w = Workload::status(503);
    let (code, _, _) = common::get(&w.url(), "/readyz", None);
    assert_eq!(code, 503);
    let (code, _, body) = common::get(&w.url(), "/api/v1/nodes", None);
    assert_eq!(code, 503);
    assert_eq!(common::json(&body)["kind"], "Status");

    let e = Workload::etcd_unhealthy();
    let (code, _, body) = common::get(&e.url(), "/readyz", None);
    assert_eq!(code, 500);
    assert!(body.contains("[-]etcd failed: reason withheld"), "{body}");
    assert_eq!(common::get(&e.url(), "/version", None).0, 200);
}

#[test]
fn black_hole_accepts_and_never_answers() {
    let w = Workload::black_hole();
    let mut s = TcpStream::connect_timeout(&addr(&w).parse().unwrap(), Duration::from_secs(2))
        .expect("the connection is accepted");
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 16];
    let err = s.read(&mut buf).expect_err("no byte ever comes");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(start.elapsed() >= Duration::from_millis(250));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(w.connections(), 1);
}

#[test]
fn refused_refuses_at_once() {
    let w = Workload::refused();
    let start = Instant::now();
    let err = TcpStream::connect(addr(&w)).expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    assert!(start.elapsed() < Duration::from_secs(1));
}
