//! Network namespaces: one switch namespace holding the bridge, one namespace per node.
//!
//! Nothing touches the host's own network: every interface, address and nftables rule is created
//! inside a namespace the lab owns (`ip -n`, `ip netns exec`), and interface names only need to
//! be unique within their namespace, so parallel labs can all use 198.18.0.11.

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::exec::checked;
use crate::Node;

const STEP: Duration = Duration::from_secs(20);

/// `ip netns exec <netns> argv...` (host filesystem, node network).
pub(crate) fn in_netns<S: AsRef<std::ffi::OsStr>>(netns: &str, argv: &[S]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", netns]).args(argv);
    // Its own session and process group, at the machines' priority.
    crate::exec::as_machine(&mut c);
    c
}

/// `ip -n <netns> -batch -` fed with `lines`.
fn ip_batch(netns: &str, lines: &[String]) -> Result<()> {
    let mut c = Command::new("ip");
    c.args(["-n", netns, "-batch", "-"]);
    checked(c, Some(lines.join("\n").as_bytes()), STEP)
        .with_context(|| format!("configuring netns {netns}"))?;
    Ok(())
}

pub(crate) fn add_netns(name: &str) -> Result<()> {
    let mut c = Command::new("ip");
    c.args(["netns", "add", name]);
    checked(c, None, STEP)?;
    Ok(())
}

/// Names under /run/netns (what `ip netns list` shows).
pub(crate) fn list_netns() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills every process inside `netns` (SIGKILL) and deletes it. Errors are reported, not fatal:
/// teardown goes on with the next namespace.
pub(crate) fn destroy_netns(name: &str) -> Result<()> {
    for _ in 0..3 {
        let pids = netns_pids(name);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) on pids the kernel reports inside our own namespace.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut c = Command::new("ip");
    c.args(["netns", "del", name]);
    checked(c, None, STEP).with_context(|| format!("deleting netns {name}"))?;
    Ok(())
}

pub(crate) fn netns_pids(name: &str) -> Vec<u32> {
    let mut c = Command::new("ip");
    c.args(["netns", "pids", name]);
    checked(c, None, STEP)
        .map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Creates the switch and node namespaces, the bridge, one veth per node (named `eth0` inside the
/// node, `v<i>` on the bridge), the addresses, and the fabric's nftables table (empty chains; a
/// node's own ruleset stays empty).
pub(crate) fn build(switch: &str, jumpbox_ip: Ipv4Addr, nodes: &[Node]) -> Result<()> {
    add_netns(switch)?;
    for n in nodes {
        add_netns(&n.netns)?;
    }
    let mut sw = vec![
        "link set lo up".to_string(),
        "link add br0 type bridge".to_string(),
        format!("addr add {jumpbox_ip}/24 dev br0"),
        "link set br0 up".to_string(),
    ];
    for n in nodes {
        let port = format!("v{}", n.index);
        sw.push(format!(
            "link add {port} type veth peer name eth0 netns {}",
            n.netns
        ));
        sw.push(format!("link set {port} master br0"));
        sw.push(format!("link set {port} up"));
    }
    ip_batch(switch, &sw)?;
    for n in nodes {
        ip_batch(
            &n.netns,
            &[
                "link set lo up".to_string(),
                format!("addr add {}/24 dev eth0", n.ip),
                "link set eth0 up".to_string(),
                // A VM has a default gateway (etcd warns "could not find default route" without
                // one). The switch namespace forwards nothing, so this leads nowhere else.
                format!("route add default via {jumpbox_ip}"),
            ],
        )?;
    }
    nft(switch, &fabric_table(nodes))?;
    Ok(())
}

/// Feeds an nft script to `nft -f -` inside `netns`.
pub(crate) fn nft(netns: &str, script: &str) -> Result<()> {
    checked(
        in_netns(netns, &["nft", "-f", "-"]),
        Some(script.as_bytes()),
        STEP,
    )
    .with_context(|| format!("nft in {netns}: {script}"))?;
    Ok(())
}

/// The fabric's table in the switch namespace: the members' addresses, and per node veth `v<i>`
/// an ingress chain `in<i>` (what node i sends) and an egress chain `out<i>` (what the bridge
/// delivers to node i), all empty and accepting.
pub(crate) fn fabric_table(nodes: &[Node]) -> String {
    let members: Vec<String> = nodes.iter().map(|n| n.ip.to_string()).collect();
    // With no node the set is empty, which nft writes without `elements`.
    let elements = if members.is_empty() {
        String::new()
    } else {
        format!("elements = {{ {} }}", members.join(", "))
    };
    let mut t =
        format!("table netdev etcdnet {{\n  set members {{ type ipv4_addr; {elements} }}\n");
    for n in nodes {
        let i = n.index;
        t.push_str(&format!(
            "  chain in{i} {{ type filter hook ingress device \"v{i}\" priority filter; policy accept; }}\n  \
             chain out{i} {{ type filter hook egress device \"v{i}\" priority filter; policy accept; }}\n"
        ));
    }
    t.push_str("}\n");
    t
}

/// Removes every fault rule from the fabric (chains and set stay).
pub(crate) fn flush_fabric(switch: &str) -> Result<()> {
    nft(switch, "flush table netdev etcdnet\n")
}

/// The guest firewall a fault puts in a node: `table inet filter`, chain `input` (policy
/// accept), as a hardening script writes it; several rules add up.
pub(crate) fn guest_rule(netns: &str, rule: &str) -> Result<()> {
    nft(
        netns,
        &format!(
            "add table inet filter\n\
             add chain inet filter input {{ type filter hook input priority filter; policy accept; }}\n\
             add rule inet filter input {rule}\n"
        ),
    )
}

/// Removes the guest firewall of a node (the lab's nodes start with an empty ruleset, so
/// whatever is there is the lab's), if it has one.
pub(crate) fn flush_guest(netns: &str) -> Result<()> {
    nft(netns, "add table inet filter\ndelete table inet filter\n")
}

/// Links two labs' switch namespaces with a veth pair so that `from`'s jumpbox address reaches
/// the nodes of `to` (and they answer it), as one Supervisor reaches the networks of all its
/// clusters. Only `to`'s switch forwards (from the link onto its bridge): `from`'s nodes still
/// reach nothing outside their own /24, and `to`'s nodes reach only `from`'s jumpbox address.
/// Both subnets are /24s of 198.18.0.0/15 and must differ. The pair lives in the two namespaces
/// only (no host interface, route or address) and disappears with either of them.
pub(crate) fn link_switches(
    from_switch: &str,
    from_jumpbox: Ipv4Addr,
    to_switch: &str,
    to_jumpbox: Ipv4Addr,
) -> Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static LINKS: AtomicUsize = AtomicUsize::new(0);
    let n = LINKS.fetch_add(1, Ordering::SeqCst);
    let net = |ip: Ipv4Addr| {
        let [a, b, c, _] = ip.octets();
        format!("{a}.{b}.{c}.0/24")
    };
    if net(from_jumpbox) == net(to_jumpbox) {
        anyhow::bail!(
            "labs on the same subnet {} cannot be linked (give them different LabConfig::subnet)",
            net(from_jumpbox)
        );
    }
    // Interface names need only be unique within their namespace; a process-wide counter is.
    let (here, there) = (format!("up{n}"), format!("dn{n}"));
    ip_batch(
        from_switch,
        &[
            format!("link add {here} type veth peer name {there} netns {to_switch}"),
            format!("link set {here} up"),
            // The next hop is the other switch's bridge address, answered by ARP on the link.
            format!(
                "route add {} via {to_jumpbox} dev {here} onlink src {from_jumpbox}",
                net(to_jumpbox)
            ),
        ],
    )?;
    ip_batch(
        to_switch,
        &[
            format!("link set {there} up"),
            format!(
                "route add {}/32 via {from_jumpbox} dev {there} onlink",
                from_jumpbox
            ),
        ],
    )?;
    checked(
        in_netns(to_switch, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]),
        None,
        STEP,
    )
    .with_context(|| format!("enabling forwarding in {to_switch}"))?;
    Ok(())
}
