//! Is the probe's document from the node it was sent to? A route reaches an address; what
//! answers there may be another machine (a duplicate IP, a stale ARP entry, an ssh config alias
//! or ProxyJump into the wrong network). Its document would then be read as this node's, and a
//! healthy neighbour could make a dead node look healthy. The driver (`route::probe_all`) checks
//! every document with [`confirm`], for every route; one that fails is an unreached node
//! ([`ReachErrorKind::IdentityMismatch`]), so no rule counts it.
//!
//! This catches a wrong machine answering, not a lying one: a node that controls its probe's
//! output can print whatever it is expected to. What is compared:
//! - the addresses: the probe lists the node's own (every interface but loopback); the address
//!   the route reached must be among them. This is the reliable part: the VM's IP is what every
//!   route reaches, and it is on the VM's interface (NSX and the vSphere networking stacks give
//!   VMs their addresses directly; SNAT only rewrites what leaves the namespace).
//! - the host name, which TKG makes the same as the Machine, the VirtualMachine and the Node
//!   (cloud-init sets the VM's name as host name, kubeadm registers the Node under it; the lab
//!   does the same). Compared without case (the kubelet lowercases it) and on the first DNS
//!   label when one side is a FQDN, against the Node name and the report name; a document
//!   without a host name is judged on its addresses alone.
//!
//! A document listing no address at all (the node has neither `ip` nor `hostname -I`) is
//! accepted on a matching host name only: with neither, nothing says whose it is.

use std::net::IpAddr;

use super::{head, ProbeOutput, ReachError, ReachErrorKind};

/// Longest host name (Linux's HOST_NAME_MAX) and most addresses quoted in a message: the
/// document is the node's word.
const NAME_CHARS: usize = 64;
const QUOTED_IPS: usize = 4;

/// `outcome` as it was when its probe ran on the node at `ip` called one of `names`; else its
/// document is dropped for an [`ReachErrorKind::IdentityMismatch`] naming what answered.
pub fn confirm(
    outcome: Result<ProbeOutput, ReachError>,
    ip: IpAddr,
    names: &[&str],
) -> Result<ProbeOutput, ReachError> {
    let probe = outcome?;
    check(&probe, ip, names)?;
    Ok(probe)
}

/// Whether `probe` comes from the node at `ip` called one of `names` (see the module).
pub fn check(probe: &ProbeOutput, ip: IpAddr, names: &[&str]) -> Result<(), ReachError> {
    let addresses: Vec<IpAddr> = probe
        .ips
        .iter()
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    let hostname = probe
        .hostname
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let name_matches = hostname.map(|h| names.iter().any(|n| same_host(h, n)));
    let expected = format!("{} at {ip}", names.first().copied().unwrap_or("the node"));
    // Only parsed addresses are quoted (they are clean text), the host name in Debug quotes.
    let answered = || {
        let quoted: Vec<String> = addresses
            .iter()
            .take(QUOTED_IPS)
            .map(IpAddr::to_string)
            .collect();
        format!(
            "host name {}, addresses {}{}",
            hostname.map_or_else(
                || "(none)".to_string(),
                |h| format!("{:?}", head(h, NAME_CHARS))
            ),
            if quoted.is_empty() {
                "(none)".to_string()
            } else {
                quoted.join(", ")
            },
            if addresses.len() > QUOTED_IPS {
                ", ..."
            } else {
                ""
            }
        )
    };
    let mismatch = |why: &str| {
        ReachError {
        kind: ReachErrorKind::IdentityMismatch,
        message: format!(
            "sent to {expected}, but the machine that answered is another one ({}): {why}; its probe is not used",
            answered()
        ),
    }
    };
    if addresses.is_empty() {
        return match name_matches {
            Some(true) => Ok(()),
            Some(false) => Err(mismatch("another host name, and no address to compare")),
            None => Err(ReachError {
                kind: ReachErrorKind::IdentityMismatch,
                message: format!(
                    "sent to {expected}, but the probe listed neither the node's host name nor its addresses, so nothing says it ran there; its probe is not used"
                ),
            }),
        };
    }
    if !addresses.contains(&ip) {
        return Err(mismatch(&format!(
            "{ip} is none of its addresses (a duplicate IP, or an ssh HostName, ProxyJump or route leading elsewhere)"
        )));
    }
    if name_matches == Some(false) {
        return Err(mismatch(
            "it has the address but another host name (two machines with one IP?)",
        ));
    }
    Ok(())
}

/// `hostname` names the node `name`: equal without case, or equal first DNS labels (one side a
/// FQDN, the other short).
fn same_host(hostname: &str, name: &str) -> bool {
    let first = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    !name.is_empty()
        && (hostname.eq_ignore_ascii_case(name)
            || first(hostname).eq_ignore_ascii_case(&first(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::output::PROBE_SCHEMA_VERSION;

    fn probe(hostname: Option<&str>, ips: &[&str]) -> ProbeOutput {
        let doc = serde_json::json!({
            "schemaVersion": PROBE_SCHEMA_VERSION,
            "nodeIp": "198.18.0.12",
            "hostname": hostname,
            "ips": ips,
        });
        serde_json::from_value(doc).unwrap()
    }

    const IP: &str = "198.18.0.12";
    const NAME: &str = "tkc-prod-7xk2p-9qtvw";

    fn check_one(p: &ProbeOutput) -> Result<(), ReachError> {
        check(p, IP.parse().unwrap(), &[NAME, NAME])
    }

    #[test]
    fn the_node_itself_is_confirmed() {
        check_one(&probe(Some(NAME), &[IP])).unwrap();
        // Other interfaces, a FQDN or another case, an IPv6 address written another way.
        check_one(&probe(
            Some("TKC-prod-7xk2p-9qtvw.corp.example"),
            &["10.0.0.5", IP, "fd00::1"],
        ))
        .unwrap();
        check(
            &probe(Some(NAME), &["fd00:0:0::12"]),
            "fd00::12".parse().unwrap(),
            &[NAME],
        )
        .unwrap();
        // No host name: the addresses decide.
        check_one(&probe(None, &[IP])).unwrap();
        check_one(&probe(Some(""), &[IP])).unwrap();
        // No addresses (no `ip`, no `hostname -I`): the host name decides.
        check_one(&probe(Some(NAME), &[])).unwrap();
    }

    #[test]
    fn another_machine_is_a_mismatch_naming_both() {
        // cp1 answered where cp2 was expected.
        let e = check_one(&probe(Some("tkc-prod-7xk2p-4rz8m"), &["198.18.0.11"])).unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::IdentityMismatch);
        for want in [NAME, IP, "tkc-prod-7xk2p-4rz8m", "198.18.0.11", "not used"] {
            assert!(e.message.contains(want), "{want}: {}", e.message);
        }
        // The right address, another host name: two machines with one IP.
        let e = check_one(&probe(Some("tkc-prod-7xk2p-4rz8m"), &[IP])).unwrap_err();
        assert!(e.message.contains("another host name"), "{}", e.message);
        // The right name, not the address.
        let e = check_one(&probe(Some(NAME), &["198.18.0.11"])).unwrap_err();
        assert!(e.message.contains("none of its addresses"), "{}", e.message);
        // Nothing to go by.
        let e = check_one(&probe(None, &[])).unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::IdentityMismatch);
        let e = check_one(&probe(Some("other"), &["not an address"])).unwrap_err();
        assert_eq!(e.kind, ReachErrorKind::IdentityMismatch);
    }

    #[test]
    fn what_the_node_says_is_quoted_short() {
        let long = "h".repeat(10_000);
        let many: Vec<String> = (0..1000)
            .map(|i| format!("10.0.{}.{}", i / 250, i % 250))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let e = check_one(&probe(Some(&long), &many)).unwrap_err();
        assert!(e.message.len() < 600, "{}", e.message.len());
        assert!(e.message.contains(", ..."), "{}", e.message);
    }

    #[test]
    fn errors_pass_through() {
        let e = ReachError::no_address();
        assert_eq!(
            confirm(Err(e.clone()), IP.parse().unwrap(), &[NAME]).unwrap_err(),
            e
        );
    }
}
