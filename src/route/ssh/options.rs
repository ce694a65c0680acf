//! The ssh command line both ssh routes build: the options that keep ssh to what the probe
//! needs ([`LOCKED_OPTIONS`], first on the line), the admin's `--ssh-option`s checked
//! ([`user_option`]), and the remote command that runs the probe under sudo.

use std::path::Path;
use std::time::Duration;

use crate::probe::script::{self, ProbeArgs};

pub(crate) const DEFAULT_USER: &str = "vmware-system-user";

#[derive(Debug, Clone)]
pub struct SshSettings {
    pub user: String,
    pub connect_timeout: Duration,
    /// `-o` options passed through (`--ssh-option ProxyJump=...`).
    pub options: Vec<String>,
}

/// The options every ssh to a node gets before any other, on both routes. ssh keeps the first
/// value it obtains for an option, and its command line comes before any config file, so these
/// hold whatever `~/.ssh/config` says; `--ssh-option`s come after them, and [`user_option`]
/// refuses one naming any of these keywords (ssh would ignore it silently).
pub(crate) const LOCKED_OPTIONS: &[(&str, &str)] = &[
    // Never a prompt (password, passphrase, host key): it would hang the run.
    ("BatchMode", "yes"),
    // A node gets nothing of the admin's machine: no agent, no display, no port, no tunnel.
    ("ForwardAgent", "no"),
    ("ForwardX11", "no"),
    ("ClearAllForwardings", "yes"),
    ("Tunnel", "no"),
    // Neither become a multiplexing master nor ride an existing one, whose options are not these.
    ("ControlMaster", "no"),
    ("ControlPath", "none"),
    // No LocalCommand runs on the admin's machine after the connection is made.
    ("PermitLocalCommand", "no"),
    // The script goes over stdin: a terminal would echo it back into the output.
    ("RequestTTY", "no"),
    // Host keys: learnt on first contact into the run's own file (`UserKnownHostsFile`, set per
    // node), then held to; the system's file neither decides nor hides a key from the report.
    ("StrictHostKeyChecking", "accept-new"),
    ("GlobalKnownHostsFile", "/dev/null"),
    // The file then holds the key the connection used, not every key the node offers after.
    ("UpdateHostKeys", "no"),
];

/// Keywords the plugin sets besides [`LOCKED_OPTIONS`], and forwardings `ClearAllForwardings`
/// cancels: a `--ssh-option` naming one is refused with what to do instead.
const SET_BY_THE_PLUGIN: &[(&str, &str)] = &[
    (
        "UserKnownHostsFile",
        "each node's host key goes into the run's own known_hosts file, and its fingerprint into the report",
    ),
    ("User", "use --ssh-user"),
    ("ConnectTimeout", "use --connect-timeout"),
    ("LogLevel", "the plugin reads ssh's errors at its own level"),
    ("ServerAliveInterval", "the plugin bounds the session itself"),
    ("ServerAliveCountMax", "the plugin bounds the session itself"),
    ("LocalCommand", "no local command runs (PermitLocalCommand=no)"),
    ("LocalForward", "no port is forwarded (ClearAllForwardings=yes)"),
    ("RemoteForward", "no port is forwarded (ClearAllForwardings=yes)"),
    ("DynamicForward", "no port is forwarded (ClearAllForwardings=yes)"),
];

/// `--ssh-option`: one `KEY=VALUE` (or `KEY VALUE`) for `ssh -o`. Refused, with why: a keyword
/// the plugin sets itself ([`LOCKED_OPTIONS`] and the others it sets), and anything that is not
/// a plain keyword and value (a quoted keyword or a line break would let ssh read another
/// keyword than the one checked). ProxyJump, Port, IdentityFile... pass.
pub(crate) fn user_option(option: &str) -> std::result::Result<String, String> {
    if option.chars().any(|c| c.is_control() && c != '\t') {
        return Err("an ssh option is one line without control characters".into());
    }
    // ssh's own reading: leading blanks skipped, the keyword ends at a blank or '='.
    let rest = option.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    let (keyword, after) = rest.split_at(end);
    if keyword.is_empty() || !(after.is_empty() || after.starts_with([' ', '\t', '='])) {
        return Err("expected KEY=VALUE, e.g. ProxyJump=admin@bastion".into());
    }
    if let Some((name, value)) = LOCKED_OPTIONS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(keyword))
    {
        return Err(format!(
            "{name} cannot be changed: every connection to a node has {name}={value}, so that ssh does only what the probe needs"
        ));
    }
    if let Some((name, why)) = SET_BY_THE_PLUGIN
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(keyword))
    {
        return Err(format!("{name} cannot be set here: {why}"));
    }
    Ok(option.to_string())
}

/// [`LOCKED_OPTIONS`] as `-o KEY=VALUE` words, for the jumpbox pod's script (one argument, split
/// by its shell: no value holds a blank or a glob character).
pub(crate) fn locked_option_words() -> String {
    LOCKED_OPTIONS
        .iter()
        .map(|(k, v)| format!("-o {k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// ssh's arguments (not the program): the options that hold ([`LOCKED_OPTIONS`], this node's
/// `known_hosts` file, the bounds), the identity, then the admin's `--ssh-option`s, which can add
/// to these but not change them; then user, host and the remote command. `identity: None` leaves
/// the choice to ssh (an agent, ~/.ssh). `known_hosts` is a path already fit for an ssh option
/// ([`option_path`]).
pub fn ssh_args(
    settings: &SshSettings,
    identity: Option<&Path>,
    known_hosts: &str,
    host: &str,
    remote: &str,
) -> Vec<String> {
    let mut args = Vec::new();
    let mut ours: Vec<String> = LOCKED_OPTIONS
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    ours.extend([
        format!("UserKnownHostsFile={known_hosts}"),
        "LogLevel=ERROR".into(),
        format!(
            "ConnectTimeout={}",
            settings.connect_timeout.as_secs().max(1)
        ),
        "ServerAliveInterval=5".into(),
        "ServerAliveCountMax=3".into(),
    ]);
    for opt in ours {
        args.push("-o".into());
        args.push(opt);
    }
    if let Some(id) = identity {
        args.extend([
            "-i".to_string(),
            id.display().to_string(),
            "-o".into(),
            "IdentitiesOnly=yes".into(),
        ]);
    }
    // The command line refuses these already (a usage error); one that gets here some other
    // way is left out rather than handed to ssh.
    for opt in settings.options.iter().filter(|o| user_option(o).is_ok()) {
        args.push("-o".into());
        args.push(opt.clone());
    }
    args.extend([
        "-l".to_string(),
        settings.user.clone(),
        host.to_string(),
        remote.to_string(),
    ]);
    args
}

/// `path` as an ssh option's value, when it can be one: ssh splits option values at blanks,
/// reads quotes and expands `%` tokens and a leading `~`, so only plain characters pass. On
/// Windows an absolute path starts with a drive (`C:\Users\...\Temp`): Windows' OpenSSH takes
/// it with `/` for `\` (`C:/Users/.../Temp`), which is what is given, with the same check.
pub(crate) fn option_path(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    let s = if cfg!(windows) {
        s.replace('\\', "/")
    } else {
        s.to_string()
    };
    plain_absolute(&s, cfg!(windows)).then_some(s)
}

/// `/...` (or, where `drive` is allowed, `X:/...`) of plain characters only.
fn plain_absolute(s: &str, drive: bool) -> bool {
    let rooted = s.starts_with('/')
        || (drive && {
            let b = s.as_bytes();
            b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/'
        });
    rooted
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
}

/// The remote command: the probe under sudo, its script on stdin. `-n` makes sudo fail instead
/// of prompting when it wants a password.
pub(crate) fn remote_probe_command(probe: &ProbeArgs) -> String {
    format!("sudo -n {}", script::stdin_command_line(probe))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> SshSettings {
        SshSettings {
            user: DEFAULT_USER.into(),
            connect_timeout: Duration::from_secs(3),
            options: vec!["ProxyJump=admin@bastion".into()],
        }
    }

    #[test]
    fn args_are_non_interactive_and_bounded() {
        let a = ssh_args(
            &settings(),
            Some(Path::new("/tmp/k/id")),
            "/tmp/k/known_hosts-198.18.0.11",
            "198.18.0.11",
            "true",
        );
        let joined = a.join(" ");
        for want in [
            "-i /tmp/k/id",
            "BatchMode=yes",
            "StrictHostKeyChecking=accept-new",
            "UserKnownHostsFile=/tmp/k/known_hosts-198.18.0.11",
            "GlobalKnownHostsFile=/dev/null",
            "ConnectTimeout=3",
            "ProxyJump=admin@bastion",
            "-l vmware-system-user 198.18.0.11 true",
        ] {
            assert!(joined.contains(want), "{want} in {joined}");
        }
        let remote = remote_probe_command(&ProbeArgs::new("198.18.0.11", ["198.18.0.12"]));
        assert!(
            remote.starts_with("sudo -n sh -s -- --self 198.18.0.11 --peer 198.18.0.12"),
            "{remote}"
        );
    }

    /// ssh keeps an option's first value: every one of ours must come before the admin's.
    #[test]
    fn our_options_come_before_the_admins() {
        let s = SshSettings {
            options: vec![
                "ProxyJump=admin@bastion".into(),
                "Port=2222".into(),
                // Not through the command line (refused there): left out here too.
                "ForwardAgent=yes".into(),
                "controlpath /tmp/cm-%C".into(),
            ],
            ..settings()
        };
        let a = ssh_args(&s, None, "/tmp/k/kh", "198.18.0.11", "true");
        let at = |opt: &str| {
            a.windows(2)
                .position(|w| w[0] == "-o" && w[1] == opt)
                .unwrap_or_else(|| panic!("{opt} not in {a:?}"))
        };
        let first_users = at("ProxyJump=admin@bastion");
        assert!(first_users < at("Port=2222"));
        for (k, v) in LOCKED_OPTIONS {
            assert!(at(&format!("{k}={v}")) < first_users, "{k}");
        }
        for ours in [
            "UserKnownHostsFile=/tmp/k/kh",
            "LogLevel=ERROR",
            "ConnectTimeout=3",
        ] {
            assert!(at(ours) < first_users, "{ours}");
        }
        assert!(!a.iter().any(|x| x == "ForwardAgent=yes"), "{a:?}");
        assert!(!a.iter().any(|x| x.starts_with("controlpath")), "{a:?}");
        // The seven of the brief, at least.
        for k in [
            "BatchMode",
            "ForwardAgent",
            "ForwardX11",
            "ClearAllForwardings",
            "ControlMaster",
            "ControlPath",
            "PermitLocalCommand",
        ] {
            assert!(LOCKED_OPTIONS.iter().any(|(l, _)| *l == k), "{k}");
        }
        assert!(locked_option_words().starts_with("-o BatchMode=yes -o ForwardAgent=no"));
    }

    #[test]
    fn the_admin_cannot_change_what_is_locked() {
        for refused in [
            "ForwardAgent=yes",
            "forwardagent yes",
            "  ForwardAgent = yes",
            "ForwardAgent\tyes",
            "ControlMaster=auto",
            "ControlPath=/tmp/cm-%C",
            "ClearAllForwardings=no",
            "PermitLocalCommand=yes",
            "ForwardX11=yes",
            "BatchMode=no",
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/tmp/x",
            "GlobalKnownHostsFile=/etc/ssh/ssh_known_hosts",
            "LocalCommand=touch /tmp/x",
            "RemoteForward=8080 localhost:80",
            "User=root",
            "ConnectTimeout=60",
        ] {
            let e = user_option(refused).unwrap_err();
            let keyword = refused.trim_start().split([' ', '=', '\t']).next().unwrap();
            assert!(
                e.to_lowercase().contains(&keyword.to_lowercase()),
                "{refused}: {e}"
            );
            assert!(!e.contains('\n'), "one line: {e}");
        }
        // Not a plain keyword: ssh might read another one than the one checked.
        for malformed in [
            "",
            "=yes",
            "\"ForwardAgent\" yes",
            "ProxyJump=a\nForwardAgent yes",
            "Forward-Agent=yes",
        ] {
            assert!(user_option(malformed).is_err(), "{malformed:?}");
        }
        for allowed in [
            "ProxyJump=admin@bastion",
            "ProxyJump admin@bastion:2222",
            "Port=2222",
            "IdentityFile=~/.ssh/tkc",
            "HostKeyAlgorithms=+ssh-rsa",
        ] {
            assert_eq!(user_option(allowed).unwrap(), allowed);
        }
    }

    #[test]
    fn only_plain_paths_go_into_an_option() {
        assert_eq!(
            option_path(Path::new("/tmp/etcdnet-ssh-Ab1/known_hosts-fd00::12")).as_deref(),
            Some("/tmp/etcdnet-ssh-Ab1/known_hosts-fd00::12")
        );
        for bad in [
            "/tmp/with space/kh",
            "/tmp/%h/kh",
            "/tmp/\"q/kh",
            "~/kh",
            "relative/kh",
        ] {
            assert_eq!(option_path(Path::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn option_paths_are_plain_and_absolute() {
        assert!(plain_absolute("/tmp/etcdnet-ssh.Ab12/key", false));
        assert!(!plain_absolute("tmp/key", false));
        assert!(!plain_absolute("/tmp/my key", false));
        assert!(!plain_absolute("/tmp/%h", false));
        assert!(!plain_absolute(
            "C:/Users/admin/AppData/Local/Temp/key",
            false
        ));
        assert!(plain_absolute(
            "C:/Users/admin/AppData/Local/Temp/key",
            true
        ));
        assert!(!plain_absolute("C:Users/key", true));
        assert!(!plain_absolute("C:/Program Files/key", true));
        assert!(!plain_absolute("~/key", true));
    }
}
