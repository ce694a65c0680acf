//! The ssh route's private files on the admin's machine: the key and one known_hosts file per
//! node, in a directory of the run that is removed with it.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::probe::HostKey;

/// The run's private files on the admin's machine: a 0700 temporary directory with the key (a
/// 0600 file, when it comes from the cluster's secret) and one known_hosts file per node (one
/// file per node, not one shared: what ssh records there is that node's key and nothing else,
/// whatever HostKeyAlias or HashKnownHosts the admin's config sets). Removed when dropped: every
/// exit path of the run, Ctrl-C included, since the session owns it until the run ends. On
/// Windows, where there are no modes, the directory's access list is what keeps it private
/// (see [`RunDir::create`]).
pub(crate) struct RunDir {
    dir: tempfile::TempDir,
    key: Option<PathBuf>,
}

impl RunDir {
    pub fn create() -> std::io::Result<RunDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("etcdnet-ssh-");
        // Only we may look inside: the directory is created 0700, not with the umask's 0755.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        // Windows has no mode bits: what protects the directory is its ACL, inherited from the
        // temp directory it is created in. The default one (%TEMP%, GetTempPath2) lies in the
        // user's profile, whose ACL grants only the user, SYSTEM and Administrators, which is
        // also what Windows' OpenSSH demands of a private key before it uses it. A TMP/TEMP
        // pointing at a shared directory would share the key: docs/install.md says so.
        Ok(RunDir {
            dir: builder.tempdir()?,
            key: None,
        })
    }

    /// Writes the private key as `id`, 0600; returns its path.
    pub fn write_key(&mut self, key: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.dir.path().join("id");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        // On Windows the file inherits the private directory's ACL (see `create`). It is opened
        // without FILE_SHARE_READ/WRITE, so no other process can open the key while it is written.
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            options.share_mode(0);
        }
        let mut f = options.open(&path)?;
        f.write_all(key)?;
        // OpenSSH refuses a key whose last line has no newline.
        if !key.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        self.key = Some(path.clone());
        Ok(path)
    }

    /// The key written by [`RunDir::write_key`].
    #[cfg(test)]
    pub fn key(&self) -> Option<&Path> {
        self.key.as_deref()
    }

    /// The known_hosts file of the node at `ip` (ssh creates it on first contact).
    pub fn known_hosts(&self, ip: IpAddr) -> PathBuf {
        self.dir.path().join(format!("known_hosts-{ip}"))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The host key ssh recorded in `known_hosts` (None before any contact). Read with a cap: the
/// file holds one line.
pub(super) fn recorded_host_key(known_hosts: &Path) -> Option<HostKey> {
    let mut text = Vec::new();
    std::fs::File::open(known_hosts)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut text)
        .ok()?;
    HostKey::from_known_hosts(&String::from_utf8_lossy(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_files_are_private_and_removed() {
        let dir;
        {
            let mut files = RunDir::create().unwrap();
            let key = files
                .write_key(
                    b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
                )
                .unwrap();
            assert_eq!(files.key(), Some(key.as_path()));
            dir = files.path().to_path_buf();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(
                    std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                    0o600
                );
                assert_eq!(
                    std::fs::metadata(files.path())
                        .unwrap()
                        .permissions()
                        .mode()
                        & 0o777,
                    0o700
                );
            }
            assert!(std::fs::read(&key).unwrap().ends_with(b"-----\n"));
            // One known_hosts file per node, next to the key.
            let kh = files.known_hosts("198.18.0.11".parse().unwrap());
            assert_eq!(kh.parent(), Some(files.path()));
            assert_ne!(kh, files.known_hosts("198.18.0.12".parse().unwrap()));
            assert_eq!(recorded_host_key(&kh), None, "no contact yet");
            std::fs::write(
                &kh,
                "198.18.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY\n",
            )
            .unwrap();
            assert_eq!(
                recorded_host_key(&kh).unwrap().sha256,
                "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4"
            );
        }
        assert!(!dir.exists(), "removed on drop");
    }
}
