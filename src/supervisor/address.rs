//! Which VM addresses the plugin may send anything to.
//!
//! A VM's IP comes from its guest (VMware Tools, through vm-operator's `status`): whoever controls
//! the guest, or can write the VM's status, chooses it. The probes send the cluster's SSH key
//! (jumpbox, ssh routes) and the peers' etcd mTLS requests to it, so an address that is not
//! another host's is refused: it is the node's finding ("VM reports 127.0.0.1"), never a target
//! nor a peer. Refused:
//!
//! - unspecified (`0.0.0.0`, `::`) and IPv4 "this network" `0.0.0.0/8`: the prober itself;
//! - loopback (`127.0.0.0/8`, `::1`): the pod's or jumpbox's own host, its own services;
//! - link-local (`169.254.0.0/16`, `fe80::/10`): the local link, where hypervisor and cloud
//!   metadata services answer;
//! - multicast (`224.0.0.0/4`, `ff00::/8`), broadcast `255.255.255.255` and the rest of the
//!   reserved `240.0.0.0/4`: many hosts, or none;
//! - IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`) IPv6 addresses are judged
//!   as the IPv4 address they carry (`::ffff:127.0.0.1` is loopback).
//!
//! Kept: every other unicast address, global or private (RFC 1918, `fc00::/7`, `100.64.0.0/10`).
//! The documentation ranges (`192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`,
//! `2001:db8::/32`) and the benchmarking `198.18.0.0/15` are unicast addresses a private network
//! may use (the lab and the fixtures use `198.18.0.0/15` and `2001:db8::/32`): refusing them would
//! protect nothing, since they reach no host of ours that another unicast address could not.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is no address of another host (the words a finding uses), or None when it may be
/// probed.
pub(crate) fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refusal_v4(v4);
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // IPv4-compatible (`::a.b.c.d`, deprecated by RFC 4291): the IPv4 address it carries.
    if ip.segments()[..6] == [0; 6] {
        return refusal_v4(ip.to_ipv4().unwrap_or(Ipv4Addr::UNSPECIFIED));
    }
    if ip.is_unicast_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(s: &str) -> Option<&'static str> {
        refusal(s.parse().unwrap())
    }

    #[test]
    fn not_another_host_is_refused() {
        for (ip, want) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("169.254.169.254", "link-local"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::250:56ff:fea1:6ff", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.1.1", "link-local"),
            ("::127.0.0.1", "loopback"),
        ] {
            assert_eq!(why(ip), Some(want), "{ip}");
        }
    }

    /// Private, global, documentation and benchmarking unicast addresses stay usable: the lab
    /// and the fixtures live in 198.18.0.0/15 and 2001:db8::/32.
    #[test]
    fn unicast_addresses_are_kept() {
        for ip in [
            "198.18.0.11",
            "198.19.255.254",
            "10.0.0.5",
            "172.16.3.4",
            "192.168.1.1",
            "100.64.0.1",
            "8.8.8.8",
            "192.0.2.10",
            "2001:db8:0:3::13",
            "fd00::1",
            "2606:4700::1111",
            "::ffff:198.18.0.11",
        ] {
            assert_eq!(why(ip), None, "{ip}");
        }
    }
}
