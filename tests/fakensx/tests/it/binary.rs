//! The `etcdnet-fakensx` binary: serves a world until killed, printing its URL and the file
//! with its CA.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn serves_a_world_and_names_its_url_and_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let log = dir.path().join("requests.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .args(["--world"])
        .arg(etcdnet_fakensx::world_dir("infra-drop-2380"))
        .args(["--addr", "127.0.0.1:0", "--ca-out"])
        .arg(&ca)
        .arg("--log")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    let ca_line = lines.next().unwrap().unwrap();
    // One request, trusting only the CA file the binary wrote.
    let status = ask(&url, &ca);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 403, "no credentials");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        logged,
        "403 - none GET /policy/api/v1/infra/domains/default/security-policies\n"
    );
    assert!(url.starts_with("url=https://127.0.0.1:"), "{url}");
    assert_eq!(ca_line, format!("ca={}", ca.display()));
    let pem = std::fs::read_to_string(&ca).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
}

/// GET the policies at `url` trusting the CA in `ca`: the status.
fn ask(url: &str, ca: &std::path::Path) -> u16 {
    use etcdnet_fakensx::tls::rustls;
    use rustls::pki_types::pem::PemObject;
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("url=https://");
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(std::sync::Arc::new(config), "localhost".try_into().unwrap())
            .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, std::net::TcpStream::connect(addr).unwrap());
    tls.write_all(
        b"GET /policy/api/v1/infra/domains/default/security-policies HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn refuses_a_world_it_cannot_read() {
    let out = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .args(["--world", "/nonexistent-world"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--world DIR is required"));
}
