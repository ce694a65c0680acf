//! The evidence bundle from a lab run: `diagnose --bundle` through the jumpbox, then `analyse`
//! (the fake-API side is `bundle`).

use crate::bundle::{analyse, assert_no_secret, diagnose};
use crate::common;
use common::article::*;
use common::tarball::entries;
use common::*;
use etcdnet::report::v1alpha2::VerdictCode;

/// The lab: the workload API down, the jumpbox pod SSHes into every VM with the cluster's key,
/// the peers' 2379/2380 dropped. The bundle re-judges to the same `EtcdPeerNetworkBlocked`, and
/// neither the ssh key nor the workload token is in it.
#[test]
#[cfg_attr(not(etcdnet_lab), ignore = "needs root and the lab (see build.rs)")]
fn lab_jumpbox_peers_dropped_bundle_then_analyse() {
    let lab = start_lab("bundle jumpbox");
    let key = lab.ssh_private_key();
    let env = Env::jumpbox_in_lab(SET, &lab, key.clone());
    lab.inject(etcdnet_lab::Fault::DropAllPeers).unwrap();
    let bundle = env.dir.path().join("lab.tar.gz");
    let (live, report) = diagnose_until(VerdictCode::EtcdPeerNetworkBlocked, || {
        diagnose(&env, &bundle, &["--connect-timeout", "2s", "-o", "json"])
    });
    live.expect_code(1);
    assert_eq!(report.verdict.code, VerdictCode::EtcdPeerNetworkBlocked);
    assert_eq!(report.route.name, "jumpbox");
    // The nodes' own firewalls were read (the probe's documents keep the reads): the failing
    // paths are placed, and `analyse` must place them alike.
    assert!(
        report
            .packet_location
            .as_ref()
            .is_some_and(|l| !l.paths.is_empty() && !l.summary.is_empty()),
        "{:#?}",
        report.packet_location
    );

    let offline = analyse(&env, &bundle, &["-o", "json"]);
    offline.expect_code(1);
    assert_eq!(offline.json(), live.json(), "the same report");
    let table = analyse(&env, &bundle, &[]);
    assert!(
        table.stdout.contains("VERDICT: EtcdPeerNetworkBlocked"),
        "{}",
        table.stdout
    );

    // Each node's etcd log tail and raw document are there; the key is not, in any form: the
    // whole PEM, each of its base64 lines.
    let all = entries(&bundle);
    for node in CP {
        let log = all
            .iter()
            .find(|(p, _)| *p == format!("{NS}/{CLUSTER}/nodes/{node}/etcd.log"))
            .map(|(_, b)| b.len());
        assert!(log.is_some_and(|n| n > 0), "{node}: no etcd.log");
    }
    let mut material = vec![key.clone()];
    material.extend(
        String::from_utf8_lossy(&key)
            .lines()
            .filter(|l| !l.starts_with("-----") && l.len() >= 16)
            .map(|l| l.as_bytes().to_vec()),
    );
    assert!(material.len() > 1, "the key has base64 lines to look for");
    assert_no_secret(&bundle, &material);
}
