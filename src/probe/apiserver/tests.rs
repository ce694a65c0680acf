use super::*;
use crate::probe::output::LogSample;

/// `crictl ps -a --name kube-apiserver -o json` as cri-tools prints it (protojson of the CRI's
/// ListContainersResponse, two-space indent, int64 as strings): a crash looping apiserver (the
/// newest exited at attempt 7, the one before it too) and a decoy whose name only contains it.
const PS_CRASHLOOP: &str = r#"{
  "containers": [
    {
      "id": "6f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0",
      "podSandboxId": "0a1b2c3d4e5f",
      "metadata": {
        "name": "kube-apiserver",
        "attempt": 6
      },
      "image": {
        "image": "sha256:3b2f0e1d",
        "annotations": {},
        "userSpecifiedImage": "",
        "runtimeHandler": ""
      },
      "imageRef": "sha256:3b2f0e1d",
      "state": "CONTAINER_EXITED",
      "createdAt": "1765079400000000000",
      "labels": {
        "io.kubernetes.container.name": "kube-apiserver",
        "io.kubernetes.pod.name": "kube-apiserver-tkc-prod-7xk2p-4rz8m",
        "io.kubernetes.pod.namespace": "kube-system"
      },
      "annotations": {
        "io.kubernetes.container.restartCount": "6"
      }
    },
    {
      "id": "a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8",
      "podSandboxId": "0a1b2c3d4e5f",
      "metadata": {
        "name": "kube-apiserver",
        "attempt": 7
      },
      "image": {
        "image": "sha256:3b2f0e1d"
      },
      "imageRef": "sha256:3b2f0e1d",
      "state": "CONTAINER_EXITED",
      "createdAt": "1765079700000000000",
      "labels": {},
      "annotations": {}
    },
    {
      "id": "decoy01",
      "metadata": {
        "name": "kube-apiserver-proxy",
        "attempt": 0
      },
      "state": "CONTAINER_RUNNING",
      "createdAt": "1765079800000000000"
    }
  ]
}
"#;

/// `/readyz?verbose` of a kube-apiserver whose etcd has no leader (500): the check list as
/// handleRootHealth writes it, ending "readyz check failed".
const READYZ_ETCD_FAILED: &str = "[+]ping ok
[+]log ok
[-]etcd failed: reason withheld
[+]etcd-readiness ok
[+]informer-sync ok
[+]poststarthook/start-apiserver-admission-initializer ok
[+]poststarthook/generic-apiserver-start-informers ok
[-]poststarthook/rbac/bootstrap-roles failed: reason withheld
[+]shutdown ok
readyz check failed
";

const READYZ_PASSED: &str = "[+]ping ok
[+]log ok
[+]etcd ok
[+]etcd-readiness ok
[+]informer-sync ok
[+]shutdown ok
readyz check passed
";

/// kube-apiserver's log lines, in klog's format, with the texts of their sources (see
/// [`ApiLogKind`]'s docs for each).
const LOG: &str = r#"I1207 03:49:58.001234       1 options.go:228] external host was not specified, using 198.18.0.11
W1207 03:50:18.123456       1 logging.go:55] [core] [Channel #1 SubChannel #2]grpc: addrConn.createTransport failed to connect to {Addr: "127.0.0.1:2379", ServerName: "127.0.0.1:2379", }. Err: connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused"
E1207 03:50:19.200000       1 status.go:71] apiserver received an error that is not an metav1.Status: &errors.errorString{s:"etcdserver: request timed out"}: etcdserver: request timed out
E1207 03:50:38.000001       1 run.go:72] "command failed" err="context deadline exceeded"
"#;

#[test]
fn containers_newest_first_only_the_apiserver() {
    let list = containers(PS_CRASHLOOP).unwrap();
    assert_eq!(list.len(), 2, "the decoy is not the apiserver: {list:?}");
    assert_eq!(list[0].attempt, Some(7));
    assert_eq!(list[0].state, "CONTAINER_EXITED");
    assert_eq!(list[0].created_s, Some(1_765_079_700));
    assert!(!list[0].is_running());
    assert_eq!(list[1].attempt, Some(6));
}

#[test]
fn containers_of_what_is_not_crictls_json() {
    assert_eq!(containers(""), None);
    assert_eq!(containers(&PS_CRASHLOOP[..400]), None, "cut short");
    assert_eq!(containers("{\"containers\": 3}"), None);
    assert_eq!(containers("{\"containers\": []}"), Some(vec![]));
    // Hostile entries: an id that is no ID, a state with a terminal sequence.
    let odd = r#"{"containers":[{"id":"../../x","metadata":{"name":"kube-apiserver"}},
        {"id":"abc","metadata":{"name":"kube-apiserver","attempt":"99999999999"},"state":"\u001b[2J"}]}"#;
    let list = containers(odd).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].state, "UNKNOWN");
    assert_eq!(list[0].attempt, None, "not a u32");
}

fn raw(status: Option<u16>, body: &str) -> RawRead {
    RawRead {
        outcome: if status.is_some() {
            QueryOutcome::Ok
        } else {
            QueryOutcome::Error
        },
        http_status: status,
        ms: Some(4),
        text: Some(body.to_string()),
        truncated: false,
        detail: Some("https://127.0.0.1:6443/readyz?verbose".into()),
    }
}

#[test]
fn readyz_names_the_failed_checks() {
    assert_eq!(
        readyz(&raw(Some(500), READYZ_ETCD_FAILED)),
        Readyz::NotReady {
            status: 500,
            failed: vec!["etcd".into(), "poststarthook/rbac/bootstrap-roles".into()]
        }
    );
    assert_eq!(readyz(&raw(Some(200), READYZ_PASSED)), Readyz::Ready);
    assert_eq!(readyz(&raw(Some(200), "ok")), Readyz::Ready);
    assert_eq!(
        readyz(&raw(Some(403), "{\"kind\":\"Status\"}")),
        Readyz::Answered(403)
    );
    let mut refused = raw(None, "");
    refused.detail = Some(
        "https://127.0.0.1:6443/readyz?verbose: curl: (7) Failed to connect to 127.0.0.1 port 6443 after 0 ms: Couldn't connect to server".into(),
    );
    assert!(matches!(readyz(&refused), Readyz::NoAnswer(d) if d.contains("port 6443")));
    let skipped = RawRead {
        outcome: QueryOutcome::Skipped,
        ..RawRead::default()
    };
    assert_eq!(readyz(&skipped), Readyz::NotAsked);
    // A hostile body: names that are not check names are left out, the list is capped.
    let body = format!(
        "[-]\u{1b}[31m failed: x\n[-] failed\n{}",
        "[-]x failed: reason withheld\n".repeat(1000)
    );
    assert_eq!(failed_checks(&body).len(), MAX_CHECKS);
    assert!(failed_checks(&body).iter().all(|c| c == "x"));
}

#[test]
fn log_lines_classified_with_the_newest_quoted() {
    let f = classify_log(LOG);
    let kinds: Vec<(ApiLogKind, usize)> = f.iter().map(|f| (f.kind, f.count)).collect();
    assert_eq!(
        kinds,
        vec![(ApiLogKind::Fatal, 1), (ApiLogKind::EtcdUnreachable, 2)]
    );
    let etcd = &f[1];
    assert!(etcd.line.contains("etcdserver: request timed out"));
    assert_eq!(etcd.at.as_deref(), Some("1207 03:50:19.200000"));
    let bind = "E1207 04:00:01.000000       1 run.go:72] \"command failed\" err=\"failed to create listener: failed to listen on 0.0.0.0:6443: listen tcp 0.0.0.0:6443: bind: address already in use\"";
    assert_eq!(line_kind(bind), Some(ApiLogKind::BindFailed));
    let expired = "W1207 04:00:02.000000       1 logging.go:55] [core] grpc: addrConn.createTransport failed to connect to {Addr: \"127.0.0.1:2379\"}. Err: connection error: desc = \"transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-07T04:00:02Z is after 2026-12-01T00:00:00Z\"";
    assert_eq!(line_kind(expired), Some(ApiLogKind::CertificateInvalid));
    let fatal = "F1207 04:00:03.000000       1 instance.go:290] Error creating leases: error creating storage factory: context deadline exceeded";
    // Fatal by its severity: the storage it could not create is not named as etcd.
    assert_eq!(line_kind(fatal), Some(ApiLogKind::Fatal));
    assert_eq!(
        line_kind("F1207 04:00:03.000000       1 server.go:1] unknown flag"),
        Some(ApiLogKind::Fatal)
    );
    assert_eq!(
        line_kind("I1207 04:00:04.000000       1 controller.go:1] all good"),
        None
    );
    // A very long line is quoted capped.
    let long = format!("F1207 04:00:03.000000 1 x.go:1] {}", "é".repeat(5000));
    assert_eq!(classify_log(&long)[0].line.chars().count(), MAX_QUOTE + 3);
}

/// Epoch seconds as the time rcgen takes.
fn at(secs: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(secs).unwrap()
}

fn pem(not_before: time::OffsetDateTime, not_after: time::OffsetDateTime) -> String {
    let mut params = rcgen::CertificateParams::new(vec!["kubernetes".into()]).unwrap();
    params.not_before = not_before;
    params.not_after = not_after;
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

#[test]
fn cert_validity_from_the_pem() {
    let v = cert_validity(&pem(at(1764547200), at(1796083200))).unwrap();
    assert_eq!(rfc3339(v.not_before), "2025-12-01T00:00:00Z");
    assert_eq!(rfc3339(v.not_after), "2026-12-01T00:00:00Z");
    // GeneralizedTime past 2049 (RFC 5280 4.1.2.5).
    let v = cert_validity(&pem(at(1764547200), at(2556241445))).unwrap();
    assert_eq!(rfc3339(v.not_after), "2051-01-02T03:04:05Z");
    // What is not a certificate says so; never a panic.
    assert!(cert_validity("").is_err());
    assert!(cert_validity("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----").is_err());
    assert!(cert_validity("-----BEGIN CERTIFICATE-----\nMIIB\n").is_err());
    assert!(
        cert_validity("-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----").is_err()
    );
}

/// Any bytes as DER: a value or none, never a panic (lengths past the end, huge lengths).
#[test]
fn der_of_any_bytes_is_total() {
    use proptest::prelude::*;
    proptest!(|(bytes in proptest::collection::vec(any::<u8>(), 0..256))| {
        let _ = der_validity(&bytes);
    });
    assert_eq!(der_validity(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    assert_eq!(der_validity(&[0x30, 0x80]), None);
}

fn read_of(ps: &str, readyz: RawRead, cert: Option<String>, log: &str) -> ApiServerRead {
    ApiServerRead {
        containers: RawRead {
            outcome: QueryOutcome::Ok,
            text: Some(ps.into()),
            ..RawRead::default()
        },
        logs: Some(LogSample {
            container_id: "a9b8".into(),
            text: log.into(),
            lines: log.lines().count() as u32,
            truncated: false,
        }),
        readyz,
        cert: match cert {
            Some(pem) => RawRead {
                outcome: QueryOutcome::Ok,
                text: Some(pem),
                ..RawRead::default()
            },
            None => RawRead {
                outcome: QueryOutcome::Error,
                detail: Some("not readable: /etc/kubernetes/pki/apiserver.crt".into()),
                ..RawRead::default()
            },
        },
    }
}

const RUNNING: &str = r#"{"containers":[{"id":"abc1","metadata":{"name":"kube-apiserver","attempt":0},"state":"CONTAINER_RUNNING","createdAt":"1765079700000000000"}]}"#;

#[test]
fn the_node_judged() {
    // 2026-12-07T03:51:00Z.
    let clock = Some(1_796_615_460_000);
    let valid = pem(at(1764547200), at(1798675200));
    let expired = pem(at(1764547200), at(1796083200));
    let future = pem(at(1798761600), at(1830297600));
    let ready = raw(Some(200), READYZ_PASSED);
    let state = |r: ApiServerRead| read(&r, clock).state;
    assert_eq!(
        state(read_of(RUNNING, ready.clone(), Some(valid.clone()), "")),
        ApiServerState::Ready
    );
    let a = read(&read_of(RUNNING, ready.clone(), Some(expired), ""), clock);
    assert_eq!(a.state, ApiServerState::CertificateExpired);
    assert_eq!(rfc3339(a.cert.unwrap().not_after), "2026-12-01T00:00:00Z");
    assert_eq!(
        state(read_of(RUNNING, ready.clone(), Some(future), "")),
        ApiServerState::CertificateNotYetValid
    );
    assert_eq!(
        state(read_of(
            RUNNING,
            raw(Some(500), READYZ_ETCD_FAILED),
            Some(valid.clone()),
            ""
        )),
        ApiServerState::NotReady
    );
    let refused = raw(None, "");
    let a = read(
        &read_of(PS_CRASHLOOP, refused.clone(), Some(valid.clone()), LOG),
        clock,
    );
    assert_eq!(a.state, ApiServerState::CrashLooping);
    assert_eq!(a.newest().unwrap().attempt, Some(7));
    assert_eq!(a.telling_line().unwrap().kind, ApiLogKind::Fatal);
    assert_eq!(
        state(read_of(RUNNING, refused.clone(), Some(valid.clone()), "")),
        ApiServerState::NoAnswer
    );
    assert_eq!(
        state(read_of(
            r#"{"containers":[]}"#,
            refused.clone(),
            Some(valid.clone()),
            ""
        )),
        ApiServerState::NotRunning
    );
    // The certificate unread: judged on the rest (a ready server is ready).
    assert_eq!(
        state(read_of(RUNNING, ready, None, "")),
        ApiServerState::Ready
    );
    // Nothing read at all: unknown, never ready.
    assert_eq!(state(ApiServerRead::default()), ApiServerState::Unknown);
}
