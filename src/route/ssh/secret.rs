//! The cluster's `<cluster>-ssh` secret: its name, the key's entry in it, and reading the key.
//!
//! Both ssh routes take the key from there: the jumpbox mounts the secret into its pod, the ssh
//! route reads it into a private file of the run (unless `--ssh-identity` or `--ssh-agent`).

use crate::error::{Error, Result};

/// The secret's entry that holds the private key, also the key's file name in the jumpbox pod.
pub const KEY_FILE: &str = "ssh-privatekey";

/// The name of the secret with a cluster's ssh key.
pub(crate) fn secret_name(cluster: &str) -> String {
    format!("{cluster}-ssh")
}

/// The private key from `<cluster>-ssh` (entry [`KEY_FILE`]), kept in memory only.
pub(super) async fn read_key(
    client: &kube::Client,
    namespace: &str,
    cluster: &str,
) -> Result<Vec<u8>> {
    let name = secret_name(cluster);
    // Through the Secret row of the Supervisor's kinds, as every read of the Supervisor.
    let secret = crate::supervisor::read::secret(client, namespace, &name).await.map_err(|e| {
        Error::kube(
            format!(
                "reading secret {name:?} in namespace {namespace:?} (or use --ssh-identity / --ssh-agent)"
            ),
            e,
        )
    })?;
    secret
        .data
        .and_then(|mut d| d.remove(KEY_FILE))
        .map(|b| b.0)
        .ok_or_else(|| Error::config(format!("secret {name:?} has no key {KEY_FILE:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_is_the_clusters() {
        assert_eq!(secret_name("tkc-prod"), "tkc-prod-ssh");
    }
}
