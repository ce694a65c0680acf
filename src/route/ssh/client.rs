//! The system's OpenSSH client as both ssh routes run it, and what its failures mean.
//!
//! The jumpbox runs it inside a pod in the vSphere Namespace (the documented VMware way in), the
//! ssh route on the admin's machine. Either way ssh may do only what the probe needs: the options
//! of [`LOCKED_OPTIONS`](super::LOCKED_OPTIONS) come first on its command line, so neither the
//! admin's `~/.ssh/config` nor `--ssh-option` can turn on agent or X11 forwarding, port
//! forwarding, connection sharing, a local command or a prompt
//! ([`user_option`](super::user_option) refuses an option that tries, as a usage error).
//!
//! Host keys are learnt on first contact (`StrictHostKeyChecking=accept-new`) into a known_hosts
//! file of the run alone, checked for the rest of the run, and their fingerprints go into the
//! report (`hostKey`), where the admin can compare them with the VMs': nobody knows the VMs' keys
//! beforehand (the Supervisor user never saw them), and the system's and the admin's files are
//! neither read nor written. The probe script goes over stdin to `sudo sh -s` on the node.

use crate::probe::{ReachError, ReachErrorKind};

/// Reads what ssh says when it fails (exit 255, message on stderr) as a reach error.
pub(crate) fn classify_failure(
    host: &str,
    user: &str,
    exit: Option<i32>,
    stderr: &str,
) -> ReachError {
    let text = stderr.trim();
    // The last line is quoted to the user; the node writes stderr too (up to a MiB): cut it.
    let last = crate::probe::head(
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim(),
        300,
    );
    let (kind, message) = if password_expired(text) {
        (
            ReachErrorKind::AuthFailed,
            format!(
                "ssh {user}@{host}: the account's password has expired ({last}): the key is \
                 accepted but the node refuses every session without a terminal until the \
                 password is changed; change it in one interactive login from where the VM \
                 routes: `ssh -t {user}@{host}` (the current password: `kubectl get secret \
                 <cluster>-ssh-password -n <namespace> -o jsonpath='{{.data.ssh-passwordkey}}' | \
                 base64 -d`), then `sudo chage -l {user}` shows when it expires again"
            ),
        )
    } else if text.contains("Permission denied") {
        (
            ReachErrorKind::AuthFailed,
            format!("ssh {user}@{host}: authentication failed ({last}); check that the key is the cluster's <cluster>-ssh key"),
        )
    } else if text.contains("a password is required") || text.contains("a terminal is required") {
        (
            ReachErrorKind::AuthFailed,
            format!("ssh {user}@{host}: sudo wants a password ({last})"),
        )
    } else if text.contains("Connection timed out") || text.contains("Operation timed out") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: port 22 does not answer (connection timed out)"),
        )
    } else if text.contains("Connection refused") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: port 22 refused the connection"),
        )
    } else if text.contains("No route to host") || text.contains("Network is unreachable") {
        (
            ReachErrorKind::Unreachable,
            format!("ssh {user}@{host}: no route to host"),
        )
    } else if text.contains("command not found") || exit == Some(127) {
        (ReachErrorKind::Other, format!("ssh {user}@{host}: {last}"))
    } else {
        (
            ReachErrorKind::Other,
            format!(
                "ssh {user}@{host} failed (exit {}){}",
                exit.map(|c| c.to_string()).unwrap_or_else(|| "?".into()),
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ),
        )
    };
    ReachError { kind, message }
}

/// The account's password has expired, so PAM's account check (pam_unix: PAM_NEW_AUTHTOK_REQD)
/// refuses a session after the key was accepted: OpenSSH's sshd then writes "WARNING: Your
/// password has expired." and, with no TTY to run passwd on, "Password change required but no
/// TTY available." and the session exits 1 (openssh-portable session.c `do_pwchange()`, set by
/// auth-pam.c `sshpam_password_change_required()`, V_9_9_P1); pam_unix may say "You are required
/// to change your password immediately (administrator enforced)" / "(password aged)" before it.
/// Where sshd lets the session through, sudo's own account check says "Account or password is
/// expired, reset your password and try again" (sudo plugins/sudoers/auth/pam.c).
fn password_expired(text: &str) -> bool {
    text.contains("Password change required but no TTY available")
        || text.contains("Account or password is expired")
        || text.contains("You are required to change your password immediately")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::ssh::options::DEFAULT_USER;

    #[test]
    fn failures_are_named() {
        let c =
            |stderr: &str| classify_failure("198.18.0.11", DEFAULT_USER, Some(255), stderr).kind;
        assert_eq!(
            c("vmware-system-user@198.18.0.11: Permission denied (publickey)."),
            ReachErrorKind::AuthFailed
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: Connection timed out"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: Connection refused"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("ssh: connect to host 198.18.0.11 port 22: No route to host"),
            ReachErrorKind::Unreachable
        );
        assert_eq!(
            c("sudo: a password is required"),
            ReachErrorKind::AuthFailed
        );
        assert_eq!(c("weird"), ReachErrorKind::Other);
        // The password expired: what sshd writes (exit 1, not ssh's 255), and what sudo writes
        // where sshd let the session through.
        for stderr in [
            "WARNING: Your password has expired.\nPassword change required but no TTY available.\n",
            "You are required to change your password immediately (administrator enforced)\n\
             WARNING: Your password has expired.\nPassword change required but no TTY available.\n",
            "sudo: Account or password is expired, reset your password and try again\n\
             sudo: a terminal is required to read the password; either use the -S option to read \
             from standard input or configure an askpass helper\n",
        ] {
            let e = classify_failure("198.18.0.11", DEFAULT_USER, Some(1), stderr);
            assert_eq!(e.kind, ReachErrorKind::AuthFailed, "{stderr}");
            for words in [
                "vmware-system-user@198.18.0.11: the account's password has expired",
                "`ssh -t vmware-system-user@198.18.0.11`",
                "<cluster>-ssh-password",
                "`sudo chage -l vmware-system-user`",
            ] {
                assert!(e.message.contains(words), "{words}: {}", e.message);
            }
            assert!(
                !e.message.contains("sudo wants a password"),
                "{}",
                e.message
            );
        }
        // What is quoted of a flood on stderr stays one short line.
        let flood = format!("{}\n", "\u{e9}".repeat(100_000));
        let e = classify_failure("198.18.0.11", DEFAULT_USER, Some(1), &flood);
        assert!(e.message.len() < 400, "{}", e.message.len());
    }
}
