//! Authentication and roles: basic, sessions with their XSRF token, refusals as NSX answers them
//! (403 with `error_code` 403 for credentials, 98 for a session gone), the lockout after 5
//! failures, sessions that expire, the request log's view of who asked (never a secret), and
//! passwords sent where they must not be.

use etcdnet_fakensx::{AuthUsed, FakeNsx};
use serde_json::json;

use crate::common::{basic, Client, ADMIN, AUDITOR, BASE, NOBODY, PORT_4RZ8M, TRACER};

fn tf_config() -> serde_json::Value {
    json!({"segment_port_path": PORT_4RZ8M,
           "packet": {"resource_type": "FieldsPacketData",
                      "ip_header": {"dst_ip": "198.18.0.12"},
                      "transport_header": {"tcp_header": {"dst_port": 2380, "tcp_flags": 2}}}})
}

#[test]
fn missing_or_bad_credentials_are_403_with_error_code_403() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let anon = Client::new(&nsx);
    let r = anon.get(&format!("{BASE}/security-policies"));
    assert_eq!(r.status, 403);
    let body = r.json();
    for k in ["httpStatus", "error_code", "module_name", "error_message"] {
        assert!(body.get(k).is_some(), "{k} missing from {body}");
    }
    assert_eq!(body["httpStatus"], "FORBIDDEN");
    assert_eq!(body["error_code"], 403);
    let wrong = Client::basic(&nsx, ("auditor", "not-the-password"));
    assert_eq!(wrong.get(&format!("{BASE}/groups")).status, 403);
    let unknown = Client::basic(&nsx, ("mallory", "x"));
    assert_eq!(unknown.get(&format!("{BASE}/groups")).status, 403);
    let log = nsx.requests();
    assert_eq!(log[0].auth, AuthUsed::None);
    assert_eq!(log[1].auth, AuthUsed::Refused(Some("auditor".into())));
    assert!(log.iter().all(|r| r.status == 403));
    assert_eq!(
        nsx.failed_logins(),
        2,
        "the two passwords, not the anonymous request"
    );
}

/// Five failed logins within 900 s lock the user out of the API: its right password is then
/// refused too, with the same answer (a guesser learns nothing), and no session is granted.
#[test]
fn five_failed_logins_lock_the_account_out() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let login = |password: &str| {
        let form = format!("j_username=auditor&j_password={password}");
        Client::new(&nsx).send(
            "POST",
            "/api/session/create",
            &[],
            Some(("application/x-www-form-urlencoded", form.as_bytes())),
        )
    };
    for i in 0..4 {
        let r = login("nope");
        assert_eq!(r.status, 403, "failure {i}");
        assert_eq!(r.json()["error_code"], 403);
        assert!(!nsx.is_locked_out("auditor"), "after {} failures", i + 1);
    }
    // Four failures: the right password still works.
    assert_eq!(login(AUDITOR.1).status, 200);
    let r = login("nope");
    assert_eq!(r.status, 403);
    assert!(nsx.is_locked_out("auditor"));
    let locked = login(AUDITOR.1);
    assert_eq!(locked.status, 403);
    assert_eq!(
        locked.json(),
        r.json(),
        "the same answer as a wrong password"
    );
    assert!(locked.header("set-cookie").is_none());
    assert_eq!(
        Client::basic(&nsx, AUDITOR)
            .get(&format!("{BASE}/groups"))
            .status,
        403,
        "basic too"
    );
    // Another user is not locked.
    assert_eq!(
        Client::basic(&nsx, TRACER)
            .get(&format!("{BASE}/groups"))
            .status,
        200
    );
    assert_eq!(nsx.logins(), 1);
}

/// A session that expires (here after 2 requests in it) answers 403 with error_code 98, as a
/// destroyed one does; a new login gives a new session.
#[test]
fn an_expired_session_is_403_with_error_code_98() {
    let nsx = FakeNsx::start_world("article").unwrap();
    nsx.expire_sessions(Some(2), None);
    let s = Client::session(&nsx, AUDITOR);
    assert_eq!(s.get(&format!("{BASE}/groups")).status, 200);
    assert_eq!(s.get(&format!("{BASE}/groups")).status, 200);
    let r = s.get(&format!("{BASE}/groups"));
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error_code"], 98);
    assert_eq!(nsx.sessions_expired(), 1);
    assert_eq!(nsx.sessions_alive(), 0);
    assert_eq!(
        nsx.failed_logins(),
        0,
        "an expired session is no failed login"
    );
    let again = Client::session(&nsx, AUDITOR);
    assert_eq!(again.get(&format!("{BASE}/groups")).status, 200);
    assert_eq!(nsx.logins(), 2);
}

#[test]
fn roles_decide_what_a_user_may_read_or_run() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let auditor = Client::basic(&nsx, AUDITOR);
    assert_eq!(
        auditor.get(&format!("{BASE}/security-policies")).status,
        200
    );
    let r = auditor.put_json("/policy/api/v1/infra/traceflows/t1", &tf_config());
    assert_eq!(r.status, 403);
    let body = r.json();
    assert_eq!(body["httpStatus"], "FORBIDDEN");
    assert!(body["error_message"]
        .as_str()
        .unwrap()
        .contains("Traceflow"));
    assert!(nsx.traceflows_live().is_empty());
    let tracer = Client::basic(&nsx, TRACER);
    assert_eq!(
        tracer
            .put_json("/policy/api/v1/infra/traceflows/t1", &tf_config())
            .status,
        200
    );
    assert_eq!(
        tracer.delete("/policy/api/v1/infra/traceflows/t1").status,
        200
    );
    let nobody = Client::basic(&nsx, NOBODY);
    assert_eq!(nobody.get(&format!("{BASE}/groups")).status, 403);
    // No writes beyond Traceflow, whoever asks.
    let admin = Client::basic(&nsx, ADMIN);
    let w = admin.put_json(&format!("{BASE}/groups/g"), &json!({}));
    assert_eq!(w.status, 400);
    assert_eq!(
        auditor
            .put_json(&format!("{BASE}/groups/g"), &json!({}))
            .status,
        403
    );
}

#[test]
fn sessions_need_their_cookie_and_xsrf_token_and_end_on_destroy() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let s = Client::session(&nsx, AUDITOR);
    assert_eq!(nsx.sessions_alive(), 1);
    assert_eq!(s.get(&format!("{BASE}/groups")).status, 200);
    // The cookie without its token: 403.
    let mut no_xsrf = Client::new(&nsx);
    no_xsrf.auth = s
        .auth
        .iter()
        .filter(|(k, _)| k == "Cookie")
        .cloned()
        .collect();
    assert_eq!(no_xsrf.get(&format!("{BASE}/groups")).status, 403);
    let mut wrong_xsrf = Client::new(&nsx);
    wrong_xsrf.auth = no_xsrf.auth.clone();
    wrong_xsrf
        .auth
        .push(("X-XSRF-TOKEN".into(), "forged".into()));
    assert_eq!(wrong_xsrf.get(&format!("{BASE}/groups")).status, 403);
    assert_eq!(
        s.send("POST", "/api/session/destroy", &[], None).status,
        200
    );
    assert_eq!(nsx.sessions_alive(), 0);
    let gone = s.get(&format!("{BASE}/groups"));
    assert_eq!(gone.status, 403);
    assert_eq!(gone.json()["error_code"], 98);
    // A failed login.
    let bad = Client::new(&nsx).send(
        "POST",
        "/api/session/create",
        &[],
        Some((
            "application/x-www-form-urlencoded",
            b"j_username=auditor&j_password=nope",
        )),
    );
    assert_eq!(bad.status, 403);
    assert_eq!(bad.json()["error_code"], 403);
    assert!(bad.header("set-cookie").is_none());
    let kinds = nsx.auth_kinds();
    assert!(kinds.contains(&("auditor".into(), "login")));
    assert!(kinds.contains(&("auditor".into(), "session")));
    assert!(!kinds.iter().any(|(_, k)| *k == "basic"));
    // The log never holds a password, a cookie or a token.
    let log = format!("{:?}", nsx.requests());
    assert!(!log.contains(AUDITOR.1), "{log}");
    assert!(!log.contains("JSESSIONID"), "{log}");
    assert!(
        nsx.password_leaks().is_empty(),
        "{:?}",
        nsx.password_leaks()
    );
}

#[test]
fn a_password_anywhere_else_is_flagged_without_being_kept() {
    let nsx = FakeNsx::start_world("article").unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    assert_eq!(c.get(&format!("{BASE}/groups")).status, 200);
    assert!(nsx.password_leaks().is_empty());
    c.get(&format!(
        "{BASE}/groups?note={}",
        form_urlencoded::byte_serialize(TRACER.1.as_bytes()).collect::<String>()
    ));
    let anon = Client::new(&nsx);
    anon.send("GET", "/api/v1/fabric/vifs", &[("X-Debug", ADMIN.1)], None);
    anon.send(
        "GET",
        "/api/v1/fabric/vifs",
        &[("Authorization", &format!("Bearer {}", ADMIN.1))],
        None,
    );
    // The login form in a query string instead of the body.
    anon.send(
        "POST",
        &format!(
            "/api/session/create?j_username=admin&j_password={}",
            form_urlencoded::byte_serialize(ADMIN.1.as_bytes()).collect::<String>()
        ),
        &[],
        None,
    );
    let leaks = nsx.password_leaks();
    assert_eq!(leaks.len(), 4, "{leaks:?}");
    assert!(leaks[0].contains("query"), "{leaks:?}");
    assert!(leaks[1].contains("header x-debug"), "{leaks:?}");
    assert!(leaks[2].contains("header authorization"), "{leaks:?}");
    assert!(
        leaks[3].starts_with("POST /api/session/create"),
        "{leaks:?}"
    );
    let text = format!("{leaks:?}");
    for (_, p) in [ADMIN, TRACER] {
        assert!(!text.contains(p));
    }
    // A basic header is where a password belongs.
    let (k, v) = basic(ADMIN);
    anon.send("GET", "/api/v1/fabric/vifs", &[(&k, &v)], None);
    assert_eq!(nsx.password_leaks().len(), 4);
}
