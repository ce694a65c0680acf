//! Membership changes through the real etcdctl: what `kubeadm join`, KubeadmControlPlane's
//! scale-down and rolling update, and an admin's hand do to the member list.

use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::exec;
use crate::lab::{Lab, CA_CRT, HEALTHCHECK_CRT, HEALTHCHECK_KEY};
use crate::member::now_ns;
use crate::node;

/// One member as `etcdctl member list -w json` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberInfo {
    pub id: u64,
    /// Empty for a member added but never started.
    pub name: String,
    pub peer_urls: Vec<String>,
    /// Empty for a member added but never started.
    pub client_urls: Vec<String>,
    pub is_learner: bool,
}

/// Holds a node's kubelet stand-in off its pod while the pod is replaced.
struct KubeletPause<'a> {
    lab: &'a Lab,
    i: usize,
}

impl<'a> KubeletPause<'a> {
    fn new(lab: &'a Lab, i: usize) -> Self {
        lab.pods.members()[i].kubelet_paused = true;
        KubeletPause { lab, i }
    }
}

impl Drop for KubeletPause<'_> {
    fn drop(&mut self) {
        self.lab.pods.members()[self.i].kubelet_paused = false;
    }
}

/// A peer URL for a member that stands for no lab node: `https://<ip>:2380` with `ip` inside
/// 198.18.0.0/15, so whatever etcd dials for it stays inside the lab's networks.
fn check_peer_url(peer_url: &str) -> Result<()> {
    let host = peer_url
        .strip_prefix("https://")
        .and_then(|r| r.strip_suffix(":2380"))
        .ok_or_else(|| anyhow!("peer URL {peer_url:?} is not https://<ipv4>:2380"))?;
    let ip: Ipv4Addr = host
        .parse()
        .with_context(|| format!("peer URL {peer_url:?}: {host:?} is no IPv4 address"))?;
    let [a, b, _, _] = ip.octets();
    if a != 198 || !(18..=19).contains(&b) {
        bail!("peer URL {peer_url:?} must be inside 198.18.0.0/15");
    }
    Ok(())
}

impl Lab {
    /// `etcdctl <args>` of the lab's etcd line ([`EtcdVersion::etcdctl`]) run on `node` (its
    /// view and network), against that node's own member (`--endpoints=https://<ip>:2379`) with
    /// the healthcheck client certificate, as an admin on the VM would. Fails, quoting etcdctl's
    /// stderr, when it exits non-zero; otherwise its stdout.
    pub fn etcdctl(&self, node: &str, args: &[&str]) -> Result<String> {
        let n = self.node(node)?;
        let etcdctl = self.etcd().etcdctl();
        if !etcdctl.is_file() {
            bail!(
                "no etcdctl at {} (etcd 3.4: apt-get install etcd-client; etcd 3.5: `bash                  .ci/run` installs it beside etcd)",
                etcdctl.display()
            );
        }
        let mut argv = vec![
            etcdctl.to_string_lossy().into_owned(),
            format!("--endpoints={}", n.client_url()),
            format!("--cacert={CA_CRT}"),
            format!("--cert={HEALTHCHECK_CRT}"),
            format!("--key={HEALTHCHECK_KEY}"),
            "--command-timeout=10s".into(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut cmd = self.command(node, &argv)?;
        // etcdctl 3.4 reads ETCDCTL_* variables: none of the test's, API 3.
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("ETCDCTL_API", "3");
        let out = exec::run(cmd, None, Duration::from_secs(30))?;
        if !out.status.success() {
            bail!(
                "{node}: etcdctl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// [`Lab::etcdctl`] for a membership change, retried for up to 60 s, as Cluster API's
    /// controllers retry: while etcd refuses it with "unhealthy cluster" (the strict
    /// reconfiguration check wants the members that stay connected for 5 s, `HealthInterval`,
    /// which a lab just started or a member just joined are not), and when the proposal was lost
    /// ("request timed out", e.g. forwarded to a leader that was just removed) unless `applied()`
    /// says it took effect after all. `Ok(None)`: applied, though etcdctl did not say so.
    fn etcdctl_reconfig(
        &self,
        node: &str,
        args: &[&str],
        applied: impl Fn() -> bool,
    ) -> Result<Option<String>> {
        // etcdctl 3.4 reports a proposal that found no leader in time as its own client's
        // "context deadline exceeded" (seen in CI just after the removed member had led).
        const RETRY: [&str; 6] = [
            "unhealthy cluster",
            "request timed out",
            "leader changed",
            "no leader",
            "context deadline exceeded",
            "DeadlineExceeded",
        ];
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.etcdctl(node, args) {
                Ok(out) => return Ok(Some(out)),
                Err(e) => {
                    let why = format!("{e:#}");
                    if applied() {
                        return Ok(None);
                    }
                    if Instant::now() > deadline || !RETRY.iter().any(|r| why.contains(r)) {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
    }

    /// A node other than `node` whose etcd runs, to ask about the cluster.
    /// Prefers a healthy one: a removed member that a kubelet stand-in restarted runs too,
    /// until it learns it was removed.
    pub(crate) fn other_running(&self, node: &str) -> Result<String> {
        let running: Vec<String> = self
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .filter(|n| n != node && self.etcd_pid(n).is_some())
            .collect();
        running
            .iter()
            .find(|n| self.health(n).unwrap_or(false))
            .or(running.first())
            .cloned()
            .ok_or_else(|| anyhow!("no running member besides {node}"))
    }

    /// The cluster's members as `etcdctl member list` on a running node sees them:
    /// (member id, name, peer URLs). A member added but not started yet has no name.
    pub fn member_list(&self) -> Result<Vec<(u64, String, Vec<String>)>> {
        Ok(self
            .members()?
            .into_iter()
            .map(|m| (m.id, m.name, m.peer_urls))
            .collect())
    }

    /// The cluster's members, learners included, as `etcdctl member list -w json` on a running
    /// node reports them.
    pub fn members(&self) -> Result<Vec<MemberInfo>> {
        let asked = self.other_running("").context("no member runs")?;
        let out = self.etcdctl(&asked, &["member", "list", "-w", "json"])?;
        let v: serde_json::Value = serde_json::from_str(&out)
            .with_context(|| format!("etcdctl member list -w json: {out}"))?;
        let strings = |x: &serde_json::Value| -> Vec<String> {
            x.as_array()
                .into_iter()
                .flatten()
                .filter_map(|u| u.as_str().map(str::to_string))
                .collect()
        };
        Ok(v["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| MemberInfo {
                id: m["ID"].as_u64().unwrap_or_default(),
                name: m["name"].as_str().unwrap_or_default().to_string(),
                peer_urls: strings(&m["peerURLs"]),
                client_urls: strings(&m["clientURLs"]),
                is_learner: m["isLearner"].as_bool().unwrap_or(false),
            })
            .collect())
    }

    /// The member id of the node's member (found by its peer URL), if it is one.
    pub fn member_id(&self, node: &str) -> Result<Option<u64>> {
        let url = self.node(node)?.peer_url();
        self.member_id_by_url(&url)
    }

    /// The member id of the member with this peer URL, if there is one.
    pub fn member_id_by_url(&self, peer_url: &str) -> Result<Option<u64>> {
        Ok(self
            .members()?
            .into_iter()
            .find(|m| m.peer_urls.iter().any(|u| u == peer_url))
            .map(|m| m.id))
    }

    /// `etcdctl member remove` of the node's member, run on another running member, as Cluster
    /// API's KubeadmControlPlane does before it deletes a machine. The node's etcd is left as it
    /// is: etcd 3.4 and 3.5 stop by themselves once they learn they were removed ("the member
    /// has been permanently removed from the cluster"), and a restart on the same data dir
    /// ([`Lab::restart_etcd`]) meets the same end. Returns the removed member's id.
    pub fn remove_member(&self, node: &str) -> Result<u64> {
        let id = self
            .member_id(node)?
            .ok_or_else(|| anyhow!("{node} is no member of the cluster"))?;
        let asked = self.other_running(node)?;
        let gone = || matches!(self.member_id(node), Ok(None));
        self.etcdctl_reconfig(&asked, &["member", "remove", &format!("{id:x}")], gone)?;
        Ok(id)
    }

    /// `etcdctl member add <node> --peer-urls=<its peer URL>`, run on another running member,
    /// as `kubeadm join --control-plane` does before it starts the joiner's etcd. Returns the
    /// new member's id.
    pub fn add_member(&self, node: &str) -> Result<u64> {
        let url = self.node(node)?.peer_url();
        self.add_member_as(node, node, &url, false)
    }

    /// `etcdctl member add <name> --peer-urls=<peer_url> [--learner]` run on a running member
    /// other than `exclude` (a node name, or "" for none).
    fn add_member_as(
        &self,
        exclude: &str,
        name: &str,
        peer_url: &str,
        learner: bool,
    ) -> Result<u64> {
        let url = format!("--peer-urls={peer_url}");
        let asked = self.other_running(exclude)?;
        let there = || matches!(self.member_id_by_url(peer_url), Ok(Some(_)));
        let mut args = vec!["member", "add", name, &url, "-w", "json"];
        if learner {
            args.push("--learner");
        }
        let Some(out) = self.etcdctl_reconfig(&asked, &args, there)? else {
            return self
                .member_id_by_url(peer_url)?
                .ok_or_else(|| anyhow!("{name}: added, then gone"));
        };
        let v: serde_json::Value = serde_json::from_str(&out)
            .with_context(|| format!("etcdctl member add -w json: {out}"))?;
        v["member"]["ID"]
            .as_u64()
            .ok_or_else(|| anyhow!("etcdctl member add -w json: no member ID in {out}"))
    }

    /// Replaces the node's member as a KubeadmControlPlane rolling update does (a new machine at
    /// the same name and address): [`Lab::remove_member`], the node's etcd stopped, its data dir
    /// emptied and its etcd logs and container records deleted (a new VM has none),
    /// [`Lab::add_member`], then etcd started as a new pod's container — a new manifest
    /// (`--initial-cluster-state=existing`, kubeadm's join), a new pod sandbox id and UID, a new
    /// container id, attempt 0 — which joins the running cluster with an empty data dir. Does
    /// not wait for it to catch up ([`Lab::wait_healthy`]). Returns (removed id, added id).
    pub fn replace_member(&self, node: &str) -> Result<(u64, u64)> {
        self.replace(node, false)
    }

    /// [`Lab::replace_member`] as kubeadm 1.29+ joins (`etcdctl member add --learner`, kubeadm's
    /// `AddMemberAsLearner` in cmd/kubeadm/app/phases/etcd/local.go) but never promoted: the
    /// join that stopped between the two steps. The node's etcd starts as a learner, catches up
    /// if it can (see [`Lab::promote_member`]) and stays a learner. Returns (removed id, added id).
    pub fn replace_member_as_learner(&self, node: &str) -> Result<(u64, u64)> {
        self.replace(node, true)
    }

    fn replace(&self, node: &str, learner: bool) -> Result<(u64, u64)> {
        let i = self.index(node)?;
        // The old VM's kubelet goes with it; the new VM's starts with the new pod.
        let _paused = KubeletPause::new(self, i);
        let removed = self.remove_member(node)?;
        self.pods.stop(i)?;
        let n = &self.nodes[i];
        let data = n.data_dir();
        for entry in fs::read_dir(&data)? {
            let path = entry?.path();
            if path.is_dir() {
                fs::remove_dir_all(&path)?;
            } else {
                fs::remove_file(&path)?;
            }
        }
        // etcd.log, etcd.log.<attempt>; containers/<attempt>.env.
        let log = n.log_file();
        let log_name = log.file_name().unwrap_or_default().to_string_lossy();
        let records = n.state_dir().join("containers");
        let logs_dir = log.parent().unwrap_or(Path::new("/"));
        for (dir, prefix, suffix) in [(logs_dir, &*log_name, ""), (&*records, "", ".env")] {
            for entry in fs::read_dir(dir)? {
                let path = entry?.path();
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                if name.starts_with(prefix) && name.ends_with(suffix) {
                    fs::remove_file(&path)?;
                }
            }
        }
        let added = if learner {
            self.add_member_as(node, &n.name.clone(), &n.peer_url(), true)?
        } else {
            self.add_member(node)?
        };
        let generation = {
            let mut members = self.pods.members();
            let m = &mut members[i];
            m.generation += 1;
            m.existing = true;
            m.attempt = None;
            m.kubelet_restarts = 0;
            m.generation
        };
        node::write_pod(n, &self.nodes, &self.image, generation, true, now_ns())?;
        self.pods.start(i)?;
        Ok((removed, added))
    }

    /// `etcdctl member add <name> --peer-urls=<peer_url>`, run on a running member, for a member
    /// that is never started: a control plane VM added by hand (or a join that died after
    /// `member add`) and then deleted. The cluster keeps quorum while the started members are a
    /// majority of the new size (3 of 4). `peer_url` is `https://<ip>:2380` with `ip` inside
    /// 198.18.0.0/15 and no lab node there (etcd's dials to it then stay in the lab and fail).
    /// Returns the new member's id.
    pub fn add_unstarted_member(&self, name: &str, peer_url: &str) -> Result<u64> {
        self.check_foreign_peer_url(peer_url)?;
        self.add_member_as("", name, peer_url, false)
    }

    /// `etcdctl member add <name> --peer-urls=<peer_url> --learner` for a learner that is never
    /// started (kubeadm's `AddMemberAsLearner` before a join that never came up); the same rules
    /// as [`Lab::add_unstarted_member`]. A learner does not count for quorum. For a learner that
    /// runs, see [`Lab::replace_member_as_learner`]. Returns the new member's id.
    pub fn add_learner(&self, name: &str, peer_url: &str) -> Result<u64> {
        self.check_foreign_peer_url(peer_url)?;
        self.add_member_as("", name, peer_url, true)
    }

    /// `etcdctl member promote` of the node's member (a learner), run on another running
    /// member; etcd refuses while the learner has not caught up with the leader.
    pub fn promote_member(&self, node: &str) -> Result<()> {
        let id = self
            .member_id(node)?
            .ok_or_else(|| anyhow!("{node} is no member of the cluster"))?;
        let asked = self.other_running(node)?;
        let promoted = || {
            self.members()
                .is_ok_and(|ms| ms.iter().any(|m| m.id == id && !m.is_learner))
        };
        self.etcdctl_reconfig(&asked, &["member", "promote", &format!("{id:x}")], promoted)?;
        Ok(())
    }

    /// `etcdctl member remove <id>` of any member (e.g. one [`Lab::add_unstarted_member`] added),
    /// run on a running member.
    pub fn remove_member_id(&self, id: u64) -> Result<()> {
        let asked = self.other_running("")?;
        let gone = || self.members().is_ok_and(|ms| ms.iter().all(|m| m.id != id));
        self.etcdctl_reconfig(&asked, &["member", "remove", &format!("{id:x}")], gone)?;
        Ok(())
    }

    fn check_foreign_peer_url(&self, peer_url: &str) -> Result<()> {
        check_peer_url(peer_url)?;
        if let Some(n) = self.nodes.iter().find(|n| n.peer_url() == peer_url) {
            bail!("{peer_url} is lab node {}'s peer URL", n.name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::check_peer_url;

    #[test]
    fn a_foreign_peer_url_stays_inside_the_lab_networks() {
        assert!(check_peer_url("https://198.18.0.20:2380").is_ok());
        assert!(check_peer_url("https://198.19.4.9:2380").is_ok());
        for bad in [
            "https://10.0.0.5:2380",
            "http://198.18.0.20:2380",
            "https://198.18.0.20:2379",
            "https://cp9:2380",
            "https://198.20.0.1:2380",
        ] {
            assert!(check_peer_url(bad).is_err(), "{bad}");
        }
    }
}
