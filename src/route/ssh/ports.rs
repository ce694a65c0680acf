//! The ssh route's look at each VM's ports from this machine: the same four ports and states as
//! the jumpbox's look from the Supervisor (`jumpbox.sh`'s `ETCDNET-REACH` lines), read by the
//! same judgement (`NodeReport::reach`, its vantage `ThisMachine`).
//!
//! On this route the plugin's own process is what reaches the VMs, so a TCP connect from it to
//! 2379, 2380 and 6443 is the route's own view: bounded ([`PORT_CHECK`]), the three at once and
//! beside the probe's ssh, nothing sent, closed at once. Port 22 comes from the probe's own ssh
//! connection (as on the jumpbox: a connection of its own would cost the VM an sshd session and
//! a line in its auth log each run). None of it is checked when the route's ssh does not start
//! its connections here: a `ProxyJump` or `ProxyCommand` (from `--ssh-option` or the admin's
//! ssh config, read as ssh itself settles it: `ssh -G`) makes the proxy the one that connects,
//! and this machine's view of the VMs would say nothing of the route. A port that does not open
//! from here is evidence about the path from here, never against what runs on the VM.

use std::net::IpAddr;
use std::time::Duration;

use crate::probe::{PortReach, PortState};

/// The longest a port check waits (each port, all at once; `--via auto`'s TCP 22 check too): a
/// VM on a routed network answers a SYN within milliseconds; 2 s covers a slow path without
/// making an admin wait for a route that is not there.
pub(crate) const PORT_CHECK: Duration = Duration::from_secs(2);

/// The ports checked by a TCP connect; 22 is the probe's own connection's.
pub(crate) const TCP_PORTS: [u16; 3] = [2379, 2380, 6443];

/// How ssh would connect to a VM, as `ssh -G` prints it (its effective configuration: the
/// command line's options over the admin's config files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Connects {
    /// Through a `ProxyJump` or `ProxyCommand`: not from this machine.
    pub proxied: bool,
    /// The port ssh connects to.
    pub port: u16,
}

/// Reads `ssh -G`'s output (`key value` lines, keys in lower case): a `proxyjump` or
/// `proxycommand` other than `none` is a proxy; `port`, else 22. None when it is not such
/// output.
pub(crate) fn read_effective(text: &str) -> Option<Connects> {
    let mut port = None;
    let mut proxied = false;
    for line in text.lines() {
        let mut words = line.splitn(2, ' ');
        let (Some(key), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        match key {
            "port" => port = value.trim().parse().ok(),
            "proxyjump" | "proxycommand" => {
                proxied |= !value.trim().is_empty() && value.trim() != "none"
            }
            _ => {}
        }
    }
    Some(Connects {
        proxied,
        port: port?,
    })
}

/// `ssh -G` with the probe's own arguments (`args`, as `ssh_args` made them) and its clean
/// environment (`env`; `ssh -G` runs a config's `Match exec` too): how that ssh would connect.
/// None when ssh cannot say (not run, an error, within a second): then nothing is checked from
/// here, rather than a view that may not be the route's.
pub(crate) async fn effective(
    args: &[String],
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Option<Connects> {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.env_clear().envs(env);
    cmd.arg("-G")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(1), cmd.output())
        .await
        .ok()?
        .ok()?;
    if !out.status.success() {
        return None;
    }
    read_effective(&String::from_utf8_lossy(&out.stdout))
}

/// One TCP connect to `ip`:`port` within `bound`: `Open` once connected (closed at once, nothing
/// sent), else what the connect said. An error it does not know is `Unknown`, never open.
pub(crate) async fn dial(ip: IpAddr, port: u16, bound: Duration) -> PortState {
    use std::io::ErrorKind;
    match tokio::time::timeout(bound, tokio::net::TcpStream::connect((ip, port))).await {
        Err(_) => PortState::Timeout,
        Ok(Ok(_)) => PortState::Open,
        Ok(Err(e)) => match e.kind() {
            ErrorKind::ConnectionRefused => PortState::Refused,
            ErrorKind::TimedOut => PortState::Timeout,
            ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => PortState::NoRoute,
            _ => PortState::Unknown,
        },
    }
}

/// [`TCP_PORTS`] of `ip`, all at once, each within `bound`.
pub(crate) async fn tcp_ports(ip: IpAddr, bound: Duration) -> Vec<PortReach> {
    let dials = TCP_PORTS.map(|port| async move {
        PortReach {
            port,
            state: dial(ip, port, bound).await,
        }
    });
    futures::future::join_all(dials).await
}

/// Port 22 as the probe's ssh saw it (ssh connects to it directly): open when the node ran the
/// command (any exit but ssh's own 255) or its document was read; on 255, ssh's first line names
/// a failed TCP connect (`ssh: connect to host H port 22: Connection timed out`, as OpenSSH's
/// `ssh_connect_direct` prints it); what ssh says only after connecting (an authentication or key
/// exchange failure) means open; anything else, or no answer at all, is `Unknown`. The same
/// reading as `jumpbox.sh`'s `port_state` for the same ssh's words.
pub(crate) fn port_22(exit: Option<i32>, document: bool, stderr: &str) -> PortState {
    if document || exit.is_some_and(|c| c != 255) {
        return PortState::Open;
    }
    if exit.is_none() {
        return PortState::Unknown;
    }
    let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.starts_with("ssh: connect to host ") && first.contains(" port 22: ") {
        if first.contains("Connection timed out") || first.contains("Operation timed out") {
            return PortState::Timeout;
        }
        if first.contains("Connection refused") {
            return PortState::Refused;
        }
        if first.contains("No route to host")
            || first.contains("Network is unreachable")
            || first.contains("Host is unreachable")
        {
            return PortState::NoRoute;
        }
        return PortState::Unknown;
    }
    const AFTER_CONNECT: &[&str] = &[
        "kex_exchange_identification",
        "ssh_exchange_identification",
        "banner exchange",
        "Connection closed by",
        "Permission denied",
        "Host key verification failed",
        "Unable to negotiate",
        "Received disconnect",
        "Disconnected from",
        "No supported authentication methods",
        "Too many authentication failures",
        "Bad packet length",
        "Protocol major versions differ",
        "ssh_dispatch_run_fatal",
    ];
    if AFTER_CONNECT.iter().any(|w| stderr.contains(w)) {
        PortState::Open
    } else {
        PortState::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_g_says_how_ssh_connects() {
        let direct = "user vmware-system-user\nhostname 198.18.0.11\nport 22\naddressfamily any\n";
        assert_eq!(
            read_effective(direct),
            Some(Connects {
                proxied: false,
                port: 22
            })
        );
        let jump = "hostname 198.18.0.11\nport 2222\nproxyjump admin@bastion\n";
        assert_eq!(
            read_effective(jump),
            Some(Connects {
                proxied: true,
                port: 2222
            })
        );
        let command = "port 22\nproxycommand nc -X connect -x proxy:3128 %h %p\n";
        assert!(read_effective(command).unwrap().proxied);
        assert!(
            !read_effective("port 22\nproxycommand none\n")
                .unwrap()
                .proxied
        );
        // Not ssh -G's output: nothing is known, nothing is checked.
        assert_eq!(read_effective("usage: ssh ..."), None);
    }

    #[test]
    fn port_22_is_read_from_the_probes_own_ssh() {
        assert_eq!(port_22(Some(0), true, ""), PortState::Open);
        assert_eq!(
            port_22(Some(1), false, "sudo: a password is required"),
            PortState::Open
        );
        for (stderr, state) in [
            (
                "ssh: connect to host 198.18.0.11 port 22: Connection timed out\n",
                PortState::Timeout,
            ),
            (
                "ssh: connect to host 198.18.0.11 port 22: Connection refused\n",
                PortState::Refused,
            ),
            (
                "ssh: connect to host 198.18.0.11 port 22: No route to host\n",
                PortState::NoRoute,
            ),
            (
                "vmware-system-user@198.18.0.11: Permission denied (publickey).\n",
                PortState::Open,
            ),
            (
                "kex_exchange_identification: read: Connection reset by peer\n",
                PortState::Open,
            ),
            ("something else entirely\n", PortState::Unknown),
        ] {
            assert_eq!(port_22(Some(255), false, stderr), state, "{stderr}");
        }
        // No exit at all (the bound ended ssh): not known.
        assert_eq!(port_22(None, false, ""), PortState::Unknown);
    }

    /// A refusing port and an open one on loopback (the host's own namespace: no VM address is
    /// dialled here).
    #[tokio::test]
    async fn a_dial_tells_open_from_refused() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = open.local_addr().unwrap().port();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(dial(ip, port, PORT_CHECK).await, PortState::Open);
        drop(open);
        // Bound, then closed: nothing listens there now.
        assert_eq!(dial(ip, port, PORT_CHECK).await, PortState::Refused);
    }
}
