//! HTTPS as an NSX Manager serves it: a CA made once per process (a manager's certificate is
//! usually signed by the customer's CA, and the plugin is given that CA with `--nsx-ca`), and a
//! serving certificate signed by it for 127.0.0.1, ::1 and localhost. [`ca_pem`] is what a test
//! (or the binary, in a file) hands the plugin; [`other_ca_pem`] a CA that signed nothing here,
//! for the verification-failure cases.
//!
//! The certificates and the listener are the fake workload APIs' (`etcdnet_fakeapi::tls`), with
//! a CA of the manager's own: the workload clusters' CA signs nothing the manager serves.

use std::sync::OnceLock;

use anyhow::Result;
use etcdnet_fakeapi::tls::{unrelated_ca_pem, Pki};
use tokio_rustls::TlsAcceptor;

pub(crate) use etcdnet_fakeapi::tls::TlsListener;

static PKI: OnceLock<std::result::Result<Pki, String>> = OnceLock::new();

fn pki() -> Result<&'static Pki> {
    PKI.get_or_init(|| {
        Pki::new("etcdnet fake NSX Manager CA", "nsx-manager.fake").map_err(|e| format!("{e:#}"))
    })
    .as_ref()
    .map_err(|e| anyhow::anyhow!("making the fake NSX Manager's CA: {e}"))
}

/// The CA that signed every fake manager's certificate in this process, PEM.
pub fn ca_pem() -> Result<&'static str> {
    Ok(&pki()?.ca_pem)
}

/// A CA made now that signed nothing the fake serves: a client given it must refuse the fake.
pub fn other_ca_pem() -> Result<String> {
    unrelated_ca_pem("another CA")
}

pub(crate) fn acceptor() -> Result<TlsAcceptor> {
    Ok(TlsAcceptor::from(pki()?.server.clone()))
}

/// The rustls the fake serves with (a test's own client: `ClientConfig`, `RootCertStore`).
pub use tokio_rustls::rustls;
