//! The ssh host key a node presented, as a report shows it: its type and SHA256 fingerprint in
//! `ssh-keygen -l`'s spelling (`ED25519`, `SHA256:<unpadded base64>`), so an admin can compare it
//! with what the VM's console shows (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`).
//!
//! Both ssh routes record the key on first contact (`StrictHostKeyChecking=accept-new` into a
//! known_hosts file of the run); the fingerprint is computed here from the key itself, not by
//! running `ssh-keygen`, so the jumpbox image needs no more than an ssh client.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};

/// A public key blob larger than this is not a host key (an RSA key of 16384 bits, OpenSSH's
/// limit, is about 2 KiB).
const MAX_BLOB_BYTES: usize = 16 * 1024;

/// The ssh host key a node presented, as `ssh-keygen -l` shows it.
// The contract's `nodes[].hostKey`: the doc comments are the schema's descriptions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostKey {
    /// As `ssh-keygen -l` names it: `ED25519`, `ECDSA`, `RSA`, ...
    #[serde(rename = "type")]
    pub key_type: String,
    /// `SHA256:` and the unpadded base64 of the SHA-256 of the key blob.
    // As `ssh-keygen -l` prints it.
    pub sha256: String,
}

impl HostKey {
    /// The key whose OpenSSH text form is `type_name blob` (as in a known_hosts line or a
    /// `.pub` file). None when the blob is not base64 of a key of that type: whatever the text,
    /// nothing is reported that ssh did not record.
    pub fn from_openssh(type_name: &str, blob: &str) -> Option<HostKey> {
        let key_type = display_type(type_name)?;
        if blob.len() > MAX_BLOB_BYTES * 4 / 3 + 4 {
            return None;
        }
        let bytes = STANDARD.decode(blob).ok()?;
        // The blob starts with its own type name (RFC 4253 6.6: a uint32 length, then the name).
        let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        if bytes.get(4..4usize.checked_add(len)?)? != type_name.as_bytes() {
            return None;
        }
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        Some(HostKey {
            key_type: key_type.into(),
            sha256: format!("SHA256:{}", STANDARD_NO_PAD.encode(digest.as_ref())),
        })
    }

    /// The first key of a known_hosts file (`host type blob [comment]` lines). The file is the
    /// run's own, written by ssh for one node: its first key is the one that node presented.
    pub fn from_known_hosts(text: &str) -> Option<HostKey> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('@'))
            .find_map(|l| {
                let mut fields = l.split_whitespace();
                let (_host, type_name, blob) = (fields.next()?, fields.next()?, fields.next()?);
                HostKey::from_openssh(type_name, blob)
            })
    }
}

/// ssh-keygen's name for a key type (sshkey.c's `shortname`); None for a type it would not
/// name either.
fn display_type(type_name: &str) -> Option<&'static str> {
    Some(match type_name {
        "ssh-ed25519" => "ED25519",
        "ssh-rsa" => "RSA",
        "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp521" => "ECDSA",
        "ssh-dss" => "DSA",
        "sk-ssh-ed25519@openssh.com" => "ED25519-SK",
        "sk-ecdsa-sha2-nistp256@openssh.com" => "ECDSA-SK",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real ed25519 host key and the fingerprint `ssh-keygen -lf` prints for it.
    const ED25519: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY";
    const ED25519_SHA256: &str = "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4";

    #[test]
    fn the_fingerprint_is_ssh_keygens() {
        let k = HostKey::from_openssh("ssh-ed25519", ED25519).unwrap();
        assert_eq!(k.key_type, "ED25519");
        assert_eq!(k.sha256, ED25519_SHA256);
        assert_eq!(
            serde_json::to_value(&k).unwrap(),
            serde_json::json!({"type": "ED25519", "sha256": ED25519_SHA256})
        );
    }

    #[test]
    fn known_hosts_gives_its_first_key() {
        let text =
            format!("# comment\n\n198.18.0.11 ssh-ed25519 {ED25519}\n198.18.0.11 ssh-rsa AAAA\n");
        assert_eq!(
            HostKey::from_known_hosts(&text).unwrap().sha256,
            ED25519_SHA256
        );
        // Hashed host names are fine: the host field is not read.
        let hashed = format!("|1|c2FsdA==|aGFzaA== ssh-ed25519 {ED25519}\n");
        assert!(HostKey::from_known_hosts(&hashed).is_some());
        assert_eq!(HostKey::from_known_hosts(""), None);
    }

    #[test]
    fn anything_that_is_not_a_key_of_its_type_is_none() {
        // The blob says ssh-ed25519: it is not an RSA key.
        assert_eq!(HostKey::from_openssh("ssh-rsa", ED25519), None);
        assert_eq!(HostKey::from_openssh("ssh-ed25519", "not base64!"), None);
        assert_eq!(HostKey::from_openssh("ssh-ed25519", ""), None);
        assert_eq!(HostKey::from_openssh("ssh-ed25519", "AAAA"), None);
        // A length prefix pointing past the end.
        assert_eq!(HostKey::from_openssh("ssh-ed25519", "/////w=="), None);
        assert_eq!(HostKey::from_openssh("x-unknown", ED25519), None);
        let huge = "A".repeat(64 * 1024);
        assert_eq!(HostKey::from_openssh("ssh-ed25519", &huge), None);
    }
}
