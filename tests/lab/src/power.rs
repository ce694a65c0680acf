//! A node's VM powered off and on: a Machine whose VM is not powered on yet (still provisioning),
//! a VM that is down, and its return.

use std::time::Duration;

use anyhow::Result;

use crate::exec;
use crate::lab::Lab;
use crate::net;

impl Lab {
    /// The node's VM powered off (or not powered on yet: a Machine still provisioning). Its
    /// kubelet stand-in is held, its etcd and sshd are killed and its `eth0` goes down, so
    /// nothing answers at its address: the peers' and the jumpbox's packets find no host (TCP
    /// timeouts, then "no route to host" once ARP has failed). `heal` leaves a powered-off node
    /// alone; [`Lab::power_on`] brings it back.
    pub fn power_off(&self, node: &str) -> Result<()> {
        let i = self.index(node)?;
        {
            let mut members = self.pods.members();
            members[i].kubelet_paused = true;
            members[i].powered_off = true;
        }
        self.pods.stop(i)?;
        self.stop_sshd(node)?;
        let n = &self.nodes[i];
        exec::checked(
            net::in_netns(&n.netns, &["ip", "link", "set", "eth0", "down"]),
            None,
            Duration::from_secs(10),
        )?;
        Ok(())
    }

    /// The node's VM powered on again: `eth0` up, sshd started, and etcd started as the
    /// kubelet does at boot (a new container of the same pod: attempt + 1); the kubelet
    /// stand-in, if any, takes over again. Does not wait for etcd's health.
    pub fn power_on(&self, node: &str) -> Result<()> {
        let i = self.index(node)?;
        let n = &self.nodes[i];
        exec::checked(
            net::in_netns(&n.netns, &["ip", "link", "set", "eth0", "up"]),
            None,
            Duration::from_secs(10),
        )?;
        self.start_sshd(node)?;
        self.pods.start_if_stopped(i)?;
        let mut members = self.pods.members();
        members[i].powered_off = false;
        members[i].kubelet_paused = false;
        Ok(())
    }

    /// Whether [`Lab::power_off`] turned the node off (and no [`Lab::power_on`] since).
    pub fn powered_off(&self, node: &str) -> Result<bool> {
        let i = self.index(node)?;
        Ok(self.pods.members()[i].powered_off)
    }
}
