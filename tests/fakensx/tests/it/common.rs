//! What the modules share: a small blocking HTTPS client that trusts only the fake's CA (so
//! the tests see exactly the bytes and headers the manager sends), the worlds' users.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use etcdnet_fakensx::tls::rustls;
use etcdnet_fakensx::FakeNsx;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

pub const ADMIN: (&str, &str) = ("admin", "Adm1n!fake-nsx-pass");
pub const AUDITOR: (&str, &str) = ("auditor", "Aud1t!fake-nsx-pass");
pub const TRACER: (&str, &str) = ("tracer", "Tr4ce!fake-nsx-pass");
pub const NOBODY: (&str, &str) = ("nobody", "N0body!fake-nsx-pass");

pub const BASE: &str = "/policy/api/v1/infra/domains/default";
pub const PORT_4RZ8M: &str =
    "/infra/segments/vnet-ns-prod-tkc-prod-vnet-0/ports/tkc-prod-7xk2p-4rz8m-eth0";

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Client {
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    /// Extra headers on every request (a basic header, a session's cookie and token).
    pub auth: Vec<(String, String)>,
}

pub fn basic((user, pass): (&str, &str)) -> (String, String) {
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    ("Authorization".into(), format!("Basic {b}"))
}

impl Client {
    /// A client of `nsx` that trusts its CA only, without credentials.
    pub fn new(nsx: &FakeNsx) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        let pem = nsx.ca_pem().expect("the fake's CA");
        for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(c.expect("a PEM certificate")).expect("a CA");
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Client {
            addr: nsx.addr(),
            config: Arc::new(config),
            auth: vec![],
        }
    }

    /// A client with `user`'s basic header on every request.
    pub fn basic(nsx: &FakeNsx, user: (&str, &str)) -> Client {
        let mut c = Client::new(nsx);
        c.auth.push(basic(user));
        c
    }

    /// A client that signed in with a session: its cookie and XSRF token on every request.
    pub fn session(nsx: &FakeNsx, (user, pass): (&str, &str)) -> Client {
        let mut c = Client::new(nsx);
        let form = format!(
            "j_username={}&j_password={}",
            form_urlencoded::byte_serialize(user.as_bytes()).collect::<String>(),
            form_urlencoded::byte_serialize(pass.as_bytes()).collect::<String>()
        );
        let r = c.send(
            "POST",
            "/api/session/create",
            &[],
            Some(("application/x-www-form-urlencoded", form.as_bytes())),
        );
        assert_eq!(r.status, 200, "login: {}", String::from_utf8_lossy(&r.body));
        let cookie = r.header("set-cookie").expect("a session cookie");
        let jsession = cookie.split(';').next().unwrap().to_string();
        assert!(jsession.starts_with("JSESSIONID="), "{cookie}");
        let xsrf = r.header("x-xsrf-token").expect("an XSRF token").to_string();
        c.auth.push(("Cookie".into(), jsession));
        c.auth.push(("X-XSRF-TOKEN".into(), xsrf));
        c
    }

    pub fn get(&self, path: &str) -> Resp {
        self.send("GET", path, &[], None)
    }

    pub fn put_json(&self, path: &str, body: &Value) -> Resp {
        let b = serde_json::to_vec(body).unwrap();
        self.send("PUT", path, &[], Some(("application/json", &b)))
    }

    pub fn delete(&self, path: &str) -> Resp {
        self.send("DELETE", path, &[], None)
    }

    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &[u8])>,
    ) -> Resp {
        let tcp = TcpStream::connect(self.addr).expect("connecting to the fake");
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let conn = rustls::ClientConnection::new(
            self.config.clone(),
            ServerName::try_from("localhost").unwrap(),
        )
        .expect("a TLS client");
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        for (k, v) in self
            .auth
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(headers.iter().copied())
        {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        let body = body.map(|(ct, b)| {
            req.push_str(&format!(
                "Content-Type: {ct}\r\nContent-Length: {}\r\n",
                b.len()
            ));
            b
        });
        if body.is_none() && method != "GET" {
            req.push_str("Content-Length: 0\r\n");
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        tls.write_all(&bytes).expect("sending");
        let mut raw = Vec::new();
        match tls.read_to_end(&mut raw) {
            Ok(_) => {}
            // A server that closes without close_notify: what was read is the answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
            Err(e) => panic!("reading: {e}"),
        }
        parse(&raw)
    }
}

fn parse(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[..eol])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .expect("a chunk size");
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest = &rest[eol + 2 + size + 2..];
        }
        body = out;
    }
    Resp {
        status,
        headers,
        body,
    }
}

/// A fixture of this crate's tests: `tests/it/expected/<name>`.
pub fn expected(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/expected")
        .join(name);
    serde_json::from_str(
        &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

/// Every page of a list, cursor by cursor (`page_size` each): the items and the pages read.
pub fn walk(c: &Client, path: &str, page_size: usize) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}page_size={page_size}");
        if let Some(c) = &cursor {
            url.push_str(&format!(
                "&cursor={}",
                form_urlencoded::byte_serialize(c.as_bytes()).collect::<String>()
            ));
        }
        let r = c.get(&url);
        assert_eq!(r.status, 200, "{url}: {}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        pages += 1;
        items.extend(v["results"].as_array().unwrap().iter().cloned());
        match v.get("cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => return (items, pages),
        }
        assert!(pages < 100, "a list that never ends");
    }
}
