//! TLS for the fake workload APIs, as a workload cluster's kube-apiserver serves it: a CA made
//! once per process (kubeadm makes the cluster's CA), a serving certificate signed by it for
//! 127.0.0.1, ::1 and localhost, and the CA as CAPI writes it into `<cluster>-kubeconfig`:
//! `certificate-authority-data`, the PEM base64-encoded ([`ca_data`], the `{{WORKLOAD_CA}}` of
//! every fixture set). The Supervisor fake stays plain HTTP: the plugin reaches it with the
//! admin's own kubeconfig, not with a secret's.
//!
//! [`Pki`] and [`TlsListener`] serve the fake NSX Manager too (`etcdnet-fakensx`), with a CA of
//! its own: a manager's certificate is never signed by a workload cluster's CA.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// A CA and a serving certificate it signed for 127.0.0.1, ::1 and localhost.
pub struct Pki {
    /// The CA, PEM.
    pub ca_pem: String,
    /// The serving side, with the certificate.
    pub server: Arc<ServerConfig>,
}

static PKI: OnceLock<Pki> = OnceLock::new();

fn pki() -> &'static Pki {
    PKI.get_or_init(|| {
        Pki::new("kubernetes", "kube-apiserver").expect("making the fake workload API's CA")
    })
}

/// A self-signed CA named `cn` (as kubeadm's `kubernetes` CA), with its issuer.
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

/// A CA named `cn` made now, PEM: one that signed nothing a fake serves.
pub fn unrelated_ca_pem(cn: &str) -> Result<String> {
    Ok(ca(cn)?.0)
}

impl Pki {
    /// A CA named `ca_cn` and a serving certificate named `server_cn` it signed.
    pub fn new(ca_cn: &str, server_cn: &str) -> Result<Pki> {
        let (ca_pem, issuer) = ca(ca_cn)?;
        let key = KeyPair::generate().context("a serving key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, server_cn);
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
        let server =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
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

/// The CA that signed every fake workload API's certificate in this process, PEM.
pub fn ca_pem() -> &'static str {
    &pki().ca_pem
}

/// [`ca_pem`] as a kubeconfig's `certificate-authority-data` (base64 of the PEM), as CAPI
/// writes it: the value of `{{WORKLOAD_CA}}`.
pub fn ca_data() -> String {
    base64::engine::general_purpose::STANDARD.encode(ca_pem())
}

/// A `certificate-authority-data` of a CA made now, that signed nothing the fakes serve: a
/// secret carrying it does not verify any fake workload API.
pub fn other_ca_data() -> String {
    let pem = unrelated_ca_pem("kubernetes").expect("making a CA");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// Accepts TLS connections with the serving certificate.
pub(crate) fn acceptor() -> TlsAcceptor {
    TlsAcceptor::from(pki().server.clone())
}

/// The TLS side of a listener for `axum::serve`: TCP connections are accepted and their
/// handshakes made in tasks of their own (a client that never finishes its handshake holds up
/// no one else), and the ones that complete are served.
pub struct TlsListener {
    connections: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        std::net::SocketAddr,
    )>,
    addr: std::net::SocketAddr,
}

impl TlsListener {
    /// Serves with `acceptor` (a [`Pki`]'s `server`). Must be called inside the runtime that
    /// serves.
    pub fn new(
        tcp: tokio::net::TcpListener,
        acceptor: TlsAcceptor,
    ) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, rx) = tokio::sync::mpsc::channel(64);
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
            // The accepting task is gone only when the runtime stops.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

/// The serving side for a test's own TLS server (e.g. one that records what arrives): the same
/// certificate as the fakes', so a secret with [`ca_data`] verifies it.
pub fn server_config() -> Arc<ServerConfig> {
    pki().server.clone()
}

/// The rustls the fakes serve with (sync API for a test's own server: `ServerConnection`,
/// `StreamOwned`).
pub use tokio_rustls::rustls;
