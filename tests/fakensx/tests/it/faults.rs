//! Faults and bounds a client is tested against: injected statuses with Retry-After, N times
//! or always; a slow manager; a trickling body; the cap on traceflows alive at once.

use std::time::{Duration, Instant};

use etcdnet_fakensx::{FakeNsx, Fault};
use serde_json::json;

use crate::common::{Client, AUDITOR, BASE, PORT_4RZ8M, TRACER};

#[test]
fn injected_statuses_n_times_then_the_real_answer() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    nsx.inject(
        Fault::new(&format!("{BASE}/security-policies"), 429)
            .times(2)
            .retry_after(3),
    );
    nsx.inject(Fault::new("/api/v1/fabric", 503).method("GET"));
    let p = format!("{BASE}/security-policies");
    for _ in 0..2 {
        let r = c.get(&p);
        assert_eq!(r.status, 429);
        assert_eq!(r.header("retry-after"), Some("3"));
        assert_eq!(r.json()["httpStatus"], "TOO_MANY_REQUESTS");
    }
    assert_eq!(c.get(&p).status, 200);
    for _ in 0..3 {
        assert_eq!(c.get("/api/v1/fabric/virtual-machines").status, 503);
    }
    nsx.clear_faults();
    assert_eq!(c.get("/api/v1/fabric/virtual-machines").status, 200);
    nsx.inject(Fault::new(&format!("{BASE}/groups"), 403).times(1));
    let r = c.get(&format!("{BASE}/groups"));
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["httpStatus"], "FORBIDDEN");
    nsx.inject(Fault::new("/", 401).times(1));
    assert_eq!(c.get(&format!("{BASE}/groups")).status, 401);
    assert_eq!(c.get(&format!("{BASE}/groups")).status, 200);
}

#[test]
fn a_slow_and_a_trickling_manager() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    nsx.set_delay(Duration::from_millis(400));
    let t = Instant::now();
    assert_eq!(c.get(&format!("{BASE}/groups")).status, 200);
    assert!(t.elapsed() >= Duration::from_millis(400));
    nsx.set_delay(Duration::ZERO);
    nsx.set_trickle(Some((64, Duration::from_millis(20))));
    let t = Instant::now();
    let r = c.get(&format!("{BASE}/groups"));
    let took = t.elapsed();
    // The body still arrives whole, chunk by chunk.
    assert_eq!(r.json()["result_count"], 2);
    let chunks = r.body.len().div_ceil(64) as u32;
    assert!(chunks > 5, "{} bytes", r.body.len());
    assert!(
        took >= Duration::from_millis(20) * chunks,
        "{took:?} for {chunks} chunks"
    );
}

#[test]
fn at_most_so_many_traceflows_alive() {
    let nsx = FakeNsx::start_world("article").unwrap();
    nsx.set_max_traceflows(2);
    let c = Client::basic(&nsx, TRACER);
    let cfg = json!({"segment_port_path": PORT_4RZ8M,
                     "packet": {"resource_type": "FieldsPacketData", "ip_header": {"dst_ip": "198.18.0.12"},
                                "transport_header": {"tcp_header": {"dst_port": 2380}}}});
    let tf = |id: &str| format!("/policy/api/v1/infra/traceflows/{id}");
    assert_eq!(c.put_json(&tf("a"), &cfg).status, 200);
    assert_eq!(c.put_json(&tf("b"), &cfg).status, 200);
    // Replacing one that exists is not one more.
    assert_eq!(c.put_json(&tf("b"), &cfg).status, 200);
    let r = c.put_json(&tf("c"), &cfg);
    assert_eq!(r.status, 400);
    assert!(r.json()["error_message"]
        .as_str()
        .unwrap()
        .contains("limit of 2"));
    assert_eq!(c.delete(&tf("a")).status, 200);
    assert_eq!(c.put_json(&tf("c"), &cfg).status, 200);
    assert_eq!(nsx.max_traceflows_alive(), 2);
    assert_eq!(nsx.traceflows_created(), 4);
}
