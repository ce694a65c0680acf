//! Helpers for the fake's own tests: a real kube client on a written kubeconfig, and raw HTTP.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use etcdnet_fakeapi::FakeApi;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A kube client built the way the plugin builds one: from a kubeconfig file.
pub async fn client(api: &FakeApi, dir: &Path) -> kube::Client {
    let path = dir.join("kubeconfig");
    api.write_kubeconfig(&path, "supervisor", Some("ns-prod"))
        .unwrap();
    let kc = Kubeconfig::read_from(&path).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(cfg).unwrap()
}

/// A byte stream to `url`'s host and port: TLS verified against the workload fakes' CA for an
/// `https://` URL, plain TCP for `http://`.
pub fn connect(url: &str) -> (String, Box<dyn ReadWrite>) {
    use etcdnet_fakeapi::tls::rustls::{self, pki_types::pem::PemObject};
    let (tls, addr) = match url.strip_prefix("https://") {
        Some(addr) => (true, addr),
        None => (false, url.trim_start_matches("http://")),
    };
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if !tls {
        return (addr.to_string(), Box::new(s));
    }
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls::pki_types::CertificateDer::from_pem_slice(
        etcdnet_fakeapi::tls::ca_pem().as_bytes(),
    )
    .unwrap();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let host = addr.rsplit_once(':').unwrap().0.trim_matches(['[', ']']);
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    (
        addr.to_string(),
        Box::new(rustls::StreamOwned::new(conn, s)),
    )
}

pub trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One HTTP/1.1 GET (over TLS for an `https://` URL); returns (status code, headers, body).
pub fn get(url: &str, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let (addr, mut s) = connect(url);
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    // A TLS peer that closes without close_notify is an error after the whole answer came.
    if let Err(e) = s.read_to_end(&mut raw) {
        assert!(!raw.is_empty(), "{e}");
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (code, head.to_string(), body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

pub fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}
