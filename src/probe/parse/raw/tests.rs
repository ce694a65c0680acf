//! Unit tests of the raw sections' readers.

use super::*;
use crate::probe::firewall::ReadOutcome;
use crate::probe::frame;

/// A framed output of these sections, as probe.sh prints one.
pub(crate) fn frames(sections: &[(&str, &str)]) -> Frames {
    let mut out = String::from("etcdnet-probe 2\n");
    for (name, text) in sections {
        out.push_str(&format!("@{name}\n"));
        for l in text.lines() {
            out.push_str(&format!("|{l}\n"));
        }
    }
    out.push_str(&format!("@end {}\n", sections.len()));
    frame::read(&out).unwrap()
}

#[test]
fn the_nodes_addresses_from_either_tool_without_loopback_or_link_local() {
    let ip = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
              2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever\n\
              2: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever\n\
              3: eth1@if7    inet6 fd00::5/64 scope global \\       valid_lft forever\n\
              4: cni0    inet 10.0.0.5/24 scope global cni0\n\
              5: lo    inet 10.9.9.9/32 scope global lo\n";
    let f = frames(&[("ips", &format!("tool ip\n--\n{ip}"))]);
    assert_eq!(ips(&f), ["10.0.0.5", "fd00::5"]);
    let f = frames(&[(
        "ips",
        "tool hostname\n--\n10.0.0.5 127.0.0.1 ::1 fd00::5 not-an-ip \n",
    )]);
    assert_eq!(ips(&f), ["10.0.0.5", "fd00::5"]);
    assert!(ips(&frames(&[])).is_empty());
}

pub(crate) const PS: &str = r#"{"containers": [
  {"id": "1111aaaa", "metadata": {"name": "etcd", "attempt": 1}, "state": "CONTAINER_EXITED", "createdAt": "1700000000000000000"},
  {"id": "3333cccc", "metadata": {"name": "etcd-defrag", "attempt": 0}, "state": "CONTAINER_RUNNING", "createdAt": "1700000900000000000"},
  {"id": "bad id", "metadata": {"name": "etcd"}, "state": "X", "createdAt": "1"},
  {"id": "2222bbbb", "metadata": {"name": "etcd", "attempt": 2}, "state": "CONTAINER_RUNNING\u001b", "createdAt": "1700000500000000000"}
]}"#;

#[test]
fn crictls_list_is_read_here_newest_first_named_exactly_etcd() {
    let f = frames(&[
        ("etcd.ps", &format!("rc 0\nsize 400\n--\n{PS}")),
        (
            "etcd.log",
            "id 2222bbbb\nrc 0\nmax 30\nsize 64\n--\nrt of a line\nWARN[0000] crictl's own\nnewest one\nand two\n",
        ),
    ]);
    let mut errors = Vec::new();
    let e = etcd(&f, &mut errors).unwrap();
    assert_eq!(e.query, RuntimeQuery::Ok);
    let ids: Vec<_> = e
        .containers
        .iter()
        .map(|c| (c.id.as_str(), c.state.as_str()))
        .collect();
    assert_eq!(
        ids,
        [("2222bbbb", "UNKNOWN"), ("1111aaaa", "CONTAINER_EXITED")]
    );
    assert_eq!(e.containers[0].attempt, Some(2));
    // The cut first line and crictl's own line dropped, the newest whole lines kept.
    let log = e.logs.unwrap();
    assert_eq!(
        (log.text.as_str(), log.lines, log.truncated),
        ("newest one\nand two\n", 2, true)
    );
    assert_eq!(log.container_id, "2222bbbb");
    assert!(errors.is_empty());
}

#[test]
fn crictl_missing_or_failing_is_the_runtime_query() {
    let mut errors = Vec::new();
    let e = etcd(&frames(&[("etcd.ps", "missing\n")]), &mut errors).unwrap();
    assert_eq!(e.query, RuntimeQuery::CrictlMissing);
    let failing = "rc 1\nerr time=\"x\" level=fatal msg=\"validate service connection: \\\"dial\\\" refused\"\n--\n";
    let e = etcd(&frames(&[("etcd.ps", failing)]), &mut errors).unwrap();
    assert_eq!(e.query, RuntimeQuery::RuntimeError);
    assert_eq!(
        e.error.as_deref(),
        Some("validate service connection: \"dial\" refused")
    );
    let e = etcd(
        &frames(&[("etcd.ps", "rc 0\n--\nnot json at all\n")]),
        &mut errors,
    )
    .unwrap();
    assert_eq!(
        e.error.as_deref(),
        Some("crictl ps exited 0 with no container list: not json at all\n")
    );
    assert!(etcd(&frames(&[]), &mut errors).is_none());
}

#[test]
fn a_failed_log_read_is_a_step_error_and_the_kubelets_file_is_unwrapped() {
    let f = frames(&[
        ("etcd.ps", &format!("rc 0\n--\n{PS}")),
        ("etcd.log", "id 2222bbbb\nrc 1\nmax 100\n--\nFATA[0000] rpc error: NotFound\n"),
        (
            "etcd.prev",
            "id 1111aaaa\nrc 0\nmax 4096\nlines 500\nfile /var/log/pods/x/etcd/1.log\nsize 300\n--\n\
             2026-12-04T10:00:00Z stderr F first\n\
             2026-12-04T10:00:01Z stderr P {\"a\":\n\
             2026-12-04T10:00:02Z stderr F 1}\n",
        ),
    ]);
    let mut errors = Vec::new();
    let e = etcd(&f, &mut errors).unwrap();
    assert_eq!(e.logs, None);
    assert_eq!(errors[0].step, "etcd-logs");
    assert_eq!(
        errors[0].message,
        "crictl logs 2222bbbb exited 1: FATA[0000] rpc error: NotFound"
    );
    let prev = e.previous_logs.unwrap();
    assert_eq!(prev.text, "first\n{\"a\":1}\n");
    assert_eq!(
        e.previous_logs_file.as_deref(),
        Some("/var/log/pods/x/etcd/1.log")
    );
    let f = frames(&[
        ("etcd.ps", &format!("rc 0\n--\n{PS}")),
        (
            "etcd.prev",
            "id 1111aaaa\nrc 1\nnofile 1 /var/log/pods\n--\nFATA[0000] gone\n",
        ),
    ]);
    let mut errors = Vec::new();
    etcd(&f, &mut errors).unwrap();
    assert_eq!(
        errors[0].message,
        "crictl logs 1111aaaa exited 1: FATA[0000] gone; no kubelet log file of attempt 1 under /var/log/pods"
    );
}

#[test]
fn the_kubelet_as_systemctl_said_it() {
    let k = kubelet(&frames(&[(
        "kubelet",
        "active active\nshow ActiveEnterTimestamp=Mon 2026-12-07 10:00:00 UTC\n",
    )]))
    .unwrap();
    assert_eq!(k.active.as_deref(), Some("active"));
    assert_eq!(k.since.as_deref(), Some("Mon 2026-12-07 10:00:00 UTC"));
    assert_eq!(k.error, None);
    let k = kubelet(&frames(&[(
        "kubelet",
        "active \nshow \nerr Failed to connect to bus\n\n",
    )]))
    .unwrap();
    assert_eq!((k.active, k.since), (None, None));
    assert_eq!(k.error.as_deref(), Some("Failed to connect to bus"));
    let k = kubelet(&frames(&[("kubelet", "missing\n")])).unwrap();
    assert_eq!(k.error.as_deref(), Some("systemctl not found"));
}

#[test]
fn the_manifests_flags_the_last_one_counting() {
    let yaml = "spec:\n  containers:\n  - command:\n    - etcd\n    - --name=cp1\n    - \"--listen-peer-urls=https://10.0.0.5:2380\"\n\
                \t- '--advertise-client-urls=https://10.0.0.5:2379,,https://[fd00::5]:2379'\r\n    - --initial-cluster=cp1=https://10.0.0.5:2380\n\
                    - --name=cp1b\n    - --no-value\n    # - --listen-client-urls=commented\n";
    let m = manifest(&frames(&[("manifest", &format!("size 300\n--\n{yaml}"))])).unwrap();
    assert_eq!(m.name.as_deref(), Some("cp1b"));
    assert_eq!(m.listen_peer_urls, ["https://10.0.0.5:2380"]);
    assert_eq!(
        m.advertise_client_urls,
        ["https://10.0.0.5:2379", "https://[fd00::5]:2379"]
    );
    assert!(m.listen_client_urls.is_empty());
    assert_eq!(
        m.initial_cluster.as_deref(),
        Some("cp1=https://10.0.0.5:2380")
    );
    assert!(manifest(&frames(&[])).is_none());
}

const CERT: &str = "Certificate:\n    Data:\n        Validity\n            Not Before: Dec  2 14:20:53 2026 GMT\n            Not After : Dec  2 14:20:53 2027 GMT\n        X509v3 extensions:\n            X509v3 Subject Alternative Name: \n                DNS:cp1, DNS:localhost, IP Address:10.0.0.5, IP Address:127.0.0.1\n";

#[test]
fn certificates_from_openssls_text() {
    let now = 1_796_220_000; // 2026-12-02T14:40:00Z
    let text = format!(
        "file ca.crt 1 /pki/ca.crt\nfile peer.crt 2 /pki/peer.crt\nfile server.crt 0 /pki/server.crt\n\
         error healthcheck-client.crt not found: /pki/healthcheck-client.crt\nfailed x.crt /pki/x.crt\nerr unable to load\nerr bad PEM\n--\n{CERT}{}",
        CERT.replace("Dec  2 14:20:53 2027", "Jan  1 00:00:00 2026")
    );
    let c = certs(&frames(&[("certs", &text)]), "10.0.0.5", Some(now)).unwrap();
    assert_eq!(c.len(), 5);
    assert_eq!(c[0].file, "ca.crt");
    assert_eq!(c[0].not_before.as_deref(), Some("2026-12-02T14:20:53Z"));
    assert_eq!(c[0].not_after.as_deref(), Some("2027-12-02T14:20:53Z"));
    assert_eq!(c[0].not_yet_valid, Some(true));
    assert_eq!(c[0].has_node_ip, None, "only server.crt and peer.crt");
    assert_eq!(c[0].sans, ["cp1", "localhost", "10.0.0.5", "127.0.0.1"]);
    assert_eq!(c[1].has_node_ip, Some(true));
    assert!(c[1].expires_in_s.unwrap() < 0, "expired");
    assert_eq!(
        c[2].error.as_deref(),
        Some("openssl x509 printed no certificate for /pki/server.crt")
    );
    assert_eq!(
        c[3].error.as_deref(),
        Some("not found: /pki/healthcheck-client.crt")
    );
    assert_eq!(
        c[4].error.as_deref(),
        Some("openssl x509 failed on /pki/x.crt: bad PEM")
    );
    let no_dates = certs(
        &frames(&[(
            "certs",
            "file peer.crt 1 /p\n--\nCertificate:\n  Not Before: soon\n",
        )]),
        "10.0.0.5",
        Some(now),
    )
    .unwrap();
    assert_eq!(
        no_dates[0].error.as_deref(),
        Some("no validity dates in openssl output")
    );
    assert_eq!(no_dates[0].has_node_ip, Some(false));
}

#[test]
fn the_api_servers_reads_raw_and_bounded() {
    let body = "x".repeat(100) + "\n";
    let f = frames(&[
        ("apiserver.ps", "missing\n"),
        (
            "apiserver.readyz",
            &format!(
                "url https://127.0.0.1:6443/readyz?verbose\nrc 0\nw 500 0.0123\nsize {}\n--\n{}",
                MAX_APISERVER_READYZ + 1,
                body.repeat(MAX_APISERVER_READYZ / 101 + 1)
            ),
        ),
        (
            "apiserver.cert",
            "unreadable /etc/kubernetes/pki/apiserver.crt\n",
        ),
    ]);
    let mut errors = Vec::new();
    let a = api_server(&f, &mut errors).unwrap();
    assert_eq!(a.containers.outcome, QueryOutcome::Skipped);
    assert_eq!(
        (a.readyz.outcome, a.readyz.http_status, a.readyz.ms),
        (QueryOutcome::Ok, Some(500), Some(12))
    );
    let text = a.readyz.text.unwrap();
    assert!(a.readyz.truncated && text.len() <= MAX_APISERVER_READYZ && text.ends_with('\n'));
    assert_eq!(
        a.cert.detail.as_deref(),
        Some("not readable: /etc/kubernetes/pki/apiserver.crt")
    );
    let refused = frames(&[(
        "apiserver.readyz",
        "url https://127.0.0.1:6443/readyz?verbose\nrc 7\nw 000 0.001\nerr curl: (7) Failed to connect\n\n--\n",
    )]);
    let a = api_server(&refused, &mut errors).unwrap();
    assert_eq!(a.readyz.outcome, QueryOutcome::Error);
    assert_eq!(
        a.readyz.detail.as_deref(),
        Some("https://127.0.0.1:6443/readyz?verbose: curl: (7) Failed to connect")
    );
    let nojob = api_server(&frames(&[("apiserver.readyz", "nojob\n")]), &mut errors).unwrap();
    assert_eq!(
        nojob.readyz.detail.as_deref(),
        Some("apiserver job gave no result")
    );
    assert!(api_server(&frames(&[]), &mut errors).is_none());
}

/// Whatever a node prints in these sections: a value, never a panic, within the caps.
#[test]
fn hostile_sections_are_read_within_the_caps() {
    let huge = "é\0\u{1b}[31m".repeat(200_000);
    let junk = [
        String::new(),
        "--".into(),
        "--\n--\n--".into(),
        "rc\nsize -5\nmax 99999999999999999999\nid ../../x\nfile\n--\n".into(),
        format!("rc 0\nmax 10\nsize 99999999\n--\n{huge}"),
        format!("file peer.crt 18446744073709551615 /p\nfile a\nfailed\nerr\n--\n{huge}Certificate:\nNot After : Dec 99 99:99:99 99999 GMT\n"),
        format!("tool ip\n--\n{}", "1: e inet 10.0.0.1/8\n".repeat(10_000)),
    ];
    let names = [
        "ips",
        "etcd.ps",
        "etcd.log",
        "etcd.prev",
        "kubelet",
        "manifest",
        "certs",
        "apiserver.ps",
        "apiserver.log",
        "apiserver.readyz",
        "apiserver.cert",
    ];
    for j in &junk {
        let sections: Vec<(&str, &str)> = names.iter().map(|n| (*n, j.as_str())).collect();
        let f = frames(&sections);
        let mut errors = Vec::new();
        assert!(ips(&f).len() <= MAX_IPS);
        if let Some(e) = etcd(&f, &mut errors) {
            for l in [e.logs, e.previous_logs].into_iter().flatten() {
                assert!(l.text.len() <= 10 + 1, "{}", l.text.len());
            }
        }
        kubelet(&f);
        if let Some(m) = manifest(&f) {
            assert!(m.advertise_client_urls.len() <= 64);
        }
        if let Some(c) = certs(&f, "10.0.0.1", Some(0)) {
            assert!(c.len() <= 4);
        }
        if let Some(a) = api_server(&f, &mut errors) {
            for r in [&a.containers, &a.readyz, &a.cert] {
                assert!(r.text.as_ref().map_or(0, String::len) <= MAX_APISERVER_PS);
            }
        }
        assert!(errors.len() <= 3);
    }
}

#[test]
fn each_firewall_tools_read_and_how_it_went() {
    let text = "tool nft\nrc 0\ncounts 10 3 1\n= table inet filter {\n= \tchain input {\n= tool forged by a rule's comment\n\
                tool iptables-legacy\nrc 4\nerr iptables-legacy-save v1.8.9: Permission denied (you must be root)\n\n\
                tool ip6tables-legacy\nmissing ip6tables-legacy-save\n\
                tool iptables\nrc 124\n";
    let r = firewall(&frames(&[("firewall.before", text)]), "firewall.before");
    assert_eq!(r.len(), 4);
    assert_eq!(
        (r[0].outcome, r[0].lines, r[0].kept, r[0].cut),
        (ReadOutcome::Ok, 10, 3, 1)
    );
    assert_eq!(
        r[0].text.as_deref(),
        Some("table inet filter {\n\tchain input {\ntool forged by a rule's comment\n")
    );
    assert_eq!(r[1].outcome, ReadOutcome::Denied);
    assert_eq!(
        r[1].detail.as_deref(),
        Some("iptables-legacy-save v1.8.9: Permission denied (you must be root)")
    );
    assert_eq!(
        (r[2].outcome, r[2].detail.as_deref()),
        (
            ReadOutcome::Missing,
            Some("ip6tables-legacy-save not found")
        )
    );
    assert_eq!(
        (r[3].outcome, r[3].detail.as_deref()),
        (ReadOutcome::Error, Some("no answer within 2 s"))
    );
    assert!(firewall(&frames(&[]), "firewall.after").is_empty());
}
