//! The lab's etcd PKI, made the way kubeadm makes it (cmd/kubeadm/app/phases/certs, kubeadm
//! 1.2x): an `etcd-ca` valid 10 years, leaf certificates valid 1 year from the CA's notBefore,
//! RSA 2048 keys written as PKCS#1 `RSA PRIVATE KEY`, SHA256-RSA signatures,
//! KeyUsage digitalSignature+keyEncipherment, BasicConstraints CA:FALSE.
//!
//! ring cannot generate RSA keys, so keys come from `openssl genrsa` and are cached on disk
//! (`$TMPDIR/etcdnet-lab-keys`, shared by every lab on the machine): about 0.3 s per key on this
//! machine's cores is most of a cold start otherwise. Reusing test keys across labs changes nothing
//! a probe can observe.

use std::fs;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber, PKCS_RSA_SHA256,
};
use time::OffsetDateTime;

/// One RSA key: PKCS#8 for signing here, PKCS#1 PEM for the files (as kubeadm writes them).
#[derive(Clone)]
pub(crate) struct RsaKey {
    pkcs8_pem: String,
    pkcs1_pem: String,
}

impl RsaKey {
    fn from_pkcs8_pem(pkcs8_pem: String) -> Result<Self> {
        let der = pem::parse(&pkcs8_pem).context("parsing a cached key")?;
        let pkcs1 = pkcs8_to_pkcs1(der.contents())?;
        let pkcs1_pem = pem::encode(&pem::Pem::new("RSA PRIVATE KEY", pkcs1));
        Ok(RsaKey {
            pkcs8_pem,
            pkcs1_pem,
        })
    }

    fn key_pair(&self) -> Result<KeyPair> {
        KeyPair::from_pkcs8_pem_and_sign_algo(&self.pkcs8_pem, &PKCS_RSA_SHA256)
            .context("loading an RSA key")
    }
}

/// Reads one DER TLV: (tag, contents, rest).
fn tlv(b: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    ensure!(b.len() >= 2, "truncated DER");
    let (len, head) = match b[1] {
        n if n < 0x80 => (n as usize, 2),
        n => {
            let k = (n & 0x7f) as usize;
            ensure!((1..=4).contains(&k) && b.len() >= 2 + k, "bad DER length");
            (
                b[2..2 + k].iter().fold(0usize, |a, &x| a << 8 | x as usize),
                2 + k,
            )
        }
    };
    ensure!(b.len() >= head + len, "truncated DER");
    Ok((b[0], &b[head..head + len], &b[head + len..]))
}

/// PKCS#8 PrivateKeyInfo = SEQUENCE { version, AlgorithmIdentifier, OCTET STRING { RSAPrivateKey } }.
fn pkcs8_to_pkcs1(der: &[u8]) -> Result<Vec<u8>> {
    let (tag, body, _) = tlv(der)?;
    ensure!(tag == 0x30, "not a PKCS#8 key");
    let (_, _, rest) = tlv(body)?;
    let (_, _, rest) = tlv(rest)?;
    let (tag, key, _) = tlv(rest)?;
    ensure!(tag == 0x04, "not a PKCS#8 key");
    Ok(key.to_vec())
}

static KEY_CACHE: Mutex<Vec<RsaKey>> = Mutex::new(Vec::new());

fn key_cache_dir() -> PathBuf {
    std::env::temp_dir().join("etcdnet-lab-keys")
}

fn generate_key(path: &Path) -> Result<RsaKey> {
    let out = crate::exec::run(
        {
            let mut c = Command::new("openssl");
            c.args(["genrsa", "2048"]).stderr(Stdio::null());
            c
        },
        None,
        Duration::from_secs(60),
    )?;
    ensure!(out.status.success(), "openssl genrsa failed");
    let pkcs8_pem = String::from_utf8(out.stdout)?;
    let key = RsaKey::from_pkcs8_pem(pkcs8_pem.clone())?;
    // Written under a unique name and renamed, so a concurrent process never reads half a key.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?
        .write_all(pkcs8_pem.as_bytes())?;
    fs::rename(&tmp, path)?;
    Ok(key)
}

/// `n` distinct RSA 2048 keys, from the process cache, the disk cache or `openssl genrsa`
/// (missing ones generated in parallel).
pub(crate) fn rsa_keys(n: usize) -> Result<Vec<RsaKey>> {
    let mut cache = KEY_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() < n {
        let dir = key_cache_dir();
        fs::create_dir_all(&dir)?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        let mut missing = Vec::new();
        for i in cache.len()..n {
            let path = dir.join(format!("rsa2048-{i:02}.pem"));
            match fs::read_to_string(&path).ok().map(RsaKey::from_pkcs8_pem) {
                Some(Ok(key)) => cache.push(key),
                _ => {
                    missing.push((i, path));
                    cache.push(RsaKey {
                        pkcs8_pem: String::new(),
                        pkcs1_pem: String::new(),
                    });
                }
            }
        }
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(2);
        for chunk in missing.chunks(workers) {
            let made: Vec<Result<(usize, RsaKey)>> = std::thread::scope(|s| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|(i, path)| s.spawn(move || generate_key(path).map(|k| (*i, k))))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| bail!("key generation panicked"))
                    })
                    .collect()
            });
            for r in made {
                let (i, key) = r?;
                cache[i] = key;
            }
        }
    }
    Ok(cache[..n].to_vec())
}

/// Which certificate of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Server,
    Peer,
    HealthcheckClient,
    ApiserverEtcdClient,
}

impl Role {
    pub(crate) const ALL: [Role; 4] = [
        Role::Server,
        Role::Peer,
        Role::HealthcheckClient,
        Role::ApiserverEtcdClient,
    ];

    /// Path of the certificate (".crt") / key (".key") without extension, under etc/kubernetes/pki.
    pub(crate) fn base_name(self) -> &'static str {
        match self {
            Role::Server => "etcd/server",
            Role::Peer => "etcd/peer",
            Role::HealthcheckClient => "etcd/healthcheck-client",
            Role::ApiserverEtcdClient => "apiserver-etcd-client",
        }
    }
}

/// When `apiserver.crt` is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Validity {
    Valid,
    Expired,
    NotYetValid,
}

/// The lab's etcd-ca (or its cluster CA, [`Pki::new_cluster`]), able to issue (and re-issue) every node's certificates.
pub(crate) struct Pki {
    issuer: Issuer<'static, KeyPair>,
    ca_cert_pem: String,
    ca_key_pem: String,
    not_before: OffsetDateTime,
}

fn serial() -> Result<SerialNumber> {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| anyhow::anyhow!("no randomness"))?;
    // A positive, non-zero ASN.1 integer.
    b[0] = (b[0] & 0x7f) | 0x01;
    Ok(SerialNumber::from_slice(&b))
}

impl Pki {
    pub(crate) fn new(ca_key: &RsaKey) -> Result<Self> {
        Self::new_ca(ca_key, "etcd-ca")
    }

    /// kubeadm's cluster CA (`/etc/kubernetes/pki/ca.crt`, CN `kubernetes`: `KubeadmCertRootCA`
    /// in cmd/kubeadm/app/phases/certs/certlist.go), which signs `apiserver.crt` and which CAPI
    /// puts inline into the `<cluster>-kubeconfig` secret.
    pub(crate) fn new_cluster(ca_key: &RsaKey) -> Result<Self> {
        Self::new_ca(ca_key, "kubernetes")
    }

    /// The CA certificate, PEM.
    pub(crate) fn ca_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// Writes `ca.crt` and `ca.key` (the cluster CA) into a node's pki directory.
    pub(crate) fn write_cluster_ca(&self, pki_dir: &Path) -> Result<()> {
        write_file(&pki_dir.join("ca.crt"), &self.ca_cert_pem, 0o644)?;
        write_file(&pki_dir.join("ca.key"), &self.ca_key_pem, 0o600)
    }

    /// Issues `apiserver.{crt,key}` of node `name` at `ip` as kubeadm's certs phase does
    /// (`KubeadmCertAPIServer` in cmd/kubeadm/app/phases/certs/certlist.go: CN `kube-apiserver`,
    /// server auth; SANs from `GetAPIServerAltNames` in cmd/kubeadm/app/util/pkiutil/
    /// pki_helpers.go: the node name, `kubernetes`, `kubernetes.default`,
    /// `kubernetes.default.svc`, `kubernetes.default.svc.cluster.local`, the service IP
    /// `10.96.0.1` (the first address of kubeadm's default service CIDR 10.96.0.0/12), the
    /// advertise address (the node's IP) and the control-plane endpoint's host (`endpoint`: the
    /// lab's VIP, reached at 127.0.0.1). `validity`: kubeadm's 1 year from the CA's start, or a
    /// window a day past (expired) or a day ahead (not yet valid).
    pub(crate) fn issue_apiserver(
        &self,
        pki_dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        endpoint: IpAddr,
        key: &RsaKey,
        validity: Validity,
    ) -> Result<()> {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.subject_alt_names = vec![
            SanType::DnsName(name.try_into()?),
            SanType::DnsName("kubernetes".try_into()?),
            SanType::DnsName("kubernetes.default".try_into()?),
            SanType::DnsName("kubernetes.default.svc".try_into()?),
            SanType::DnsName("kubernetes.default.svc.cluster.local".try_into()?),
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::new(10, 96, 0, 1))),
            SanType::IpAddress(IpAddr::V4(ip)),
            SanType::IpAddress(endpoint),
        ];
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        let now = OffsetDateTime::now_utc();
        match validity {
            Validity::Valid => {
                params.not_before = self.not_before;
                params.not_after = self.not_before + time::Duration::days(365);
            }
            Validity::Expired => {
                params.not_before = now - time::Duration::days(366);
                params.not_after = now - time::Duration::days(1);
            }
            Validity::NotYetValid => {
                params.not_before = now + time::Duration::days(1);
                params.not_after = now + time::Duration::days(366);
            }
        }
        let cert = params
            .signed_by(&key.key_pair()?, &self.issuer)
            .with_context(|| format!("issuing apiserver.crt for {name}"))?;
        write_file(&pki_dir.join("apiserver.crt"), &cert.pem(), 0o644)?;
        write_file(&pki_dir.join("apiserver.key"), &key.pkcs1_pem, 0o600)
    }

    fn new_ca(ca_key: &RsaKey, cn: &str) -> Result<Self> {
        let now = OffsetDateTime::now_utc();
        let not_before = now - time::Duration::minutes(5);
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        params.not_before = not_before;
        params.not_after = now + time::Duration::days(3650);
        params.serial_number = Some(serial()?);
        let key = ca_key.key_pair()?;
        let cert = params
            .self_signed(&key)
            .with_context(|| format!("self-signing {cn}"))?;
        Ok(Pki {
            ca_cert_pem: cert.pem(),
            ca_key_pem: ca_key.pkcs1_pem.clone(),
            issuer: Issuer::new(params, key),
            not_before,
        })
    }

    /// Writes `ca.crt` and `ca.key` into a node's pki/etcd directory (kubeadm copies both to
    /// every control-plane node).
    pub(crate) fn write_ca(&self, pki_dir: &Path) -> Result<()> {
        write_file(&pki_dir.join("etcd/ca.crt"), &self.ca_cert_pem, 0o644)?;
        write_file(&pki_dir.join("etcd/ca.key"), &self.ca_key_pem, 0o600)
    }

    /// Issues one certificate of node `name` at `ip` and writes it with its key under `pki_dir`
    /// (the node's etc/kubernetes/pki). `expired`: notAfter a day in the past.
    pub(crate) fn issue(
        &self,
        pki_dir: &Path,
        role: Role,
        name: &str,
        ip: Ipv4Addr,
        key: &RsaKey,
        expired: bool,
    ) -> Result<()> {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let (org, cn, eku) = match role {
            // kubeadm: CN = node name, SANs = node name, localhost, node IP, 127.0.0.1, ::1.
            Role::Server | Role::Peer => (
                None,
                name,
                vec![
                    ExtendedKeyUsagePurpose::ServerAuth,
                    ExtendedKeyUsagePurpose::ClientAuth,
                ],
            ),
            Role::HealthcheckClient => (
                Some("system:masters"),
                "kube-etcd-healthcheck-client",
                vec![ExtendedKeyUsagePurpose::ClientAuth],
            ),
            Role::ApiserverEtcdClient => (
                Some("system:masters"),
                "kube-apiserver-etcd-client",
                vec![ExtendedKeyUsagePurpose::ClientAuth],
            ),
        };
        if let Some(org) = org {
            params
                .distinguished_name
                .push(DnType::OrganizationName, org);
        }
        params.distinguished_name.push(DnType::CommonName, cn);
        if matches!(role, Role::Server | Role::Peer) {
            params.subject_alt_names = vec![
                SanType::DnsName(name.try_into()?),
                SanType::DnsName("localhost".try_into()?),
                SanType::IpAddress(IpAddr::V4(ip)),
                SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
                SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            ];
        }
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = eku;
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        if expired {
            let now = OffsetDateTime::now_utc();
            params.not_before = now - time::Duration::days(366);
            params.not_after = now - time::Duration::days(1);
        } else {
            params.not_before = self.not_before;
            params.not_after = self.not_before + time::Duration::days(365);
        }
        let cert = params
            .signed_by(&key.key_pair()?, &self.issuer)
            .with_context(|| format!("issuing {} for {name}", role.base_name()))?;
        let base = pki_dir.join(role.base_name());
        write_file(&base.with_extension("crt"), &cert.pem(), 0o644)?;
        write_file(&base.with_extension("key"), &key.pkcs1_pem, 0o600)
    }
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    // Replaced by rename so that a member restarting concurrently reads a whole file.
    let tmp = path.with_extension("tmp");
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?
        .write_all(contents.as_bytes())?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))?;
    fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_walk_extracts_the_inner_key() {
        // SEQUENCE { INTEGER 0, SEQUENCE { NULL }, OCTET STRING { 01 02 03 } }
        let der = [
            0x30, 0x0c, 0x02, 0x01, 0x00, 0x30, 0x02, 0x05, 0x00, 0x04, 0x03, 1, 2, 3,
        ];
        assert_eq!(pkcs8_to_pkcs1(&der).unwrap(), vec![1, 2, 3]);
        assert!(pkcs8_to_pkcs1(&der[..5]).is_err());
    }
}
