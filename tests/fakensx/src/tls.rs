//! HTTPS as an NSX Manager serves it: a CA made once per process (a manager's certificate is
//! usually signed by the customer's CA, and the plugin is given that CA with `--nsx-ca`), and a
//! serving certificate signed by it for 127.0.0.1, ::1 and localhost. [`ca_pem`] is what a test
//! (or the binary, in a file) hands the plugin; [`other_ca_pem`] a CA that signed nothing here,
//! for the verification-failure cases.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

struct Pki {
    ca_pem: String,
    server: Arc<ServerConfig>,
}

static PKI: OnceLock<std::result::Result<Pki, String>> = OnceLock::new();

fn pki() -> Result<&'static Pki> {
    PKI.get_or_init(|| Pki::new().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("making the fake NSX Manager's CA: {e}"))
}

fn ca(cn: &str) -> Result<(String, Issuer<'static, KeyPair>)> {
    let key = KeyPair::generate().context("a CA key")?;
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    let cert = params.self_signed(&key).context("self-signing the CA")?;
    Ok((cert.pem(), Issuer::new(params, key)))
}

impl Pki {
    fn new() -> Result<Pki> {
        let (ca_pem, issuer) = ca("etcdnet fake NSX Manager CA")?;
        let key = KeyPair::generate().context("a serving key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "nsx-manager.fake");
        params.subject_alt_names = vec![
            SanType::DnsName("localhost".try_into()?),
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &issuer)
            .context("issuing the serving certificate")?;
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let server = ServerConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .context("the serving certificate")?;
        Ok(Pki {
            ca_pem,
            server: Arc::new(server),
        })
    }
}

/// The CA that signed every fake manager's certificate in this process, PEM.
pub fn ca_pem() -> Result<&'static str> {
    Ok(&pki()?.ca_pem)
}

/// A CA made now that signed nothing the fake serves: a client given it must refuse the fake.
pub fn other_ca_pem() -> Result<String> {
    Ok(ca("another CA")?.0)
}

pub(crate) fn acceptor() -> Result<TlsAcceptor> {
    Ok(TlsAcceptor::from(pki()?.server.clone()))
}

/// The TLS side of a listener for `axum::serve`: each handshake in a task of its own (a client
/// that never finishes one holds up no one else), the completed ones served.
pub(crate) struct TlsListener {
    connections: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        std::net::SocketAddr,
    )>,
    addr: std::net::SocketAddr,
}

impl TlsListener {
    /// Must be called inside the runtime that serves.
    pub(crate) fn new(tcp: tokio::net::TcpListener) -> Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let acceptor = acceptor()?;
        tokio::spawn(async move {
            loop {
                let Ok((stream, peer)) = tcp.accept().await else {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(
                        std::time::Duration::from_secs(30),
                        acceptor.accept(stream),
                    );
                    if let Ok(Ok(tls)) = handshake.await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(TlsListener {
            connections: rx,
            addr,
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// The rustls the fake serves with (a test's own client: `ClientConfig`, `RootCertStore`).
pub use tokio_rustls::rustls;
