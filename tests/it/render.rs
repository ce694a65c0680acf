//! Snapshot tests of the table renderers from fixed inputs: reports captured once from the lab
//! (`tests/fixtures/reports/*.json`, the real plugin's `-o json`) rendered as `table` and `wide`.
//! After an intended change of the layout: `SNAPSHOTS=overwrite cargo test --test it render::`, then
//! review the diff of `tests/snapshots/`.

use etcdnet::render::{self, Format, Paint};
use etcdnet::report::DiagnoseReport;

fn report(name: &str) -> DiagnoseReport {
    let path = format!(
        "{}/tests/fixtures/reports/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn table(name: &str, format: Format) -> String {
    render::output(&report(name), format, Paint { on: false }).unwrap()
}

#[test]
fn peers_dropped_table() {
    snapbox::assert_data_eq!(
        table("peers-dropped", Format::Table),
        snapbox::file!["../snapshots/peers-dropped.table.txt"]
    );
}

#[test]
fn peers_dropped_wide() {
    snapbox::assert_data_eq!(
        table("peers-dropped", Format::Wide),
        snapbox::file!["../snapshots/peers-dropped.wide.txt"]
    );
}

#[test]
fn psa_rejected_table() {
    snapbox::assert_data_eq!(
        table("psa-rejected", Format::Table),
        snapbox::file!["../snapshots/psa-rejected.table.txt"]
    );
}

#[test]
fn json_round_trips() {
    // The JSON contract reads back into the same report (nothing lost, nothing renamed).
    let r = report("peers-dropped");
    let again: DiagnoseReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(again, r);
    assert_eq!(
        r.verdict.code,
        etcdnet::report::v1alpha2::VerdictCode::EtcdPeerNetworkBlocked
    );
}

#[test]
fn colour_only_when_asked() {
    let plain = table("peers-dropped", Format::Table);
    assert!(!plain.contains('\u{1b}'));
    let coloured =
        render::output(&report("peers-dropped"), Format::Table, Paint { on: true }).unwrap();
    assert!(
        coloured.contains("\u{1b}["),
        "the verdict is coloured on a terminal"
    );
}

fn status_table(name: &str, format: Format) -> String {
    let path = format!(
        "{}/tests/fixtures/reports/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let r: etcdnet::report::StatusReport =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    render::output(&r, format, Paint { on: false }).unwrap()
}

/// nsx-vpc, its peers' 2380 timing out: the NETWORK POLICY section, the verdict's
/// evidence naming drop-etcd-peers and its first next step. Captured from
/// `network_policy::a_diagnosis_names_the_dropping_policy_and_its_bundle_keeps_it`'s `-o json`.
#[test]
fn nsx_vpc_dropped_table() {
    snapbox::assert_data_eq!(
        table("nsx-vpc-2380-dropped", Format::Table),
        snapbox::file!["../snapshots/nsx-vpc-2380-dropped.table.txt"]
    );
}

#[test]
fn nsx_vpc_dropped_wide() {
    snapbox::assert_data_eq!(
        table("nsx-vpc-2380-dropped", Format::Wide),
        snapbox::file!["../snapshots/nsx-vpc-2380-dropped.wide.txt"]
    );
}

/// nsx-vpc's `status` (captured from `network_policy::status_on_nsx_vpc_shows_the_evaluation`):
/// the section, and with `-o wide` the policies that select the VMs.
#[test]
fn nsx_vpc_status_table() {
    snapbox::assert_data_eq!(
        status_table("nsx-vpc-status", Format::Table),
        snapbox::file!["../snapshots/nsx-vpc-status.table.txt"]
    );
}

#[test]
fn nsx_vpc_status_wide() {
    snapbox::assert_data_eq!(
        status_table("nsx-vpc-status", Format::Wide),
        snapbox::file!["../snapshots/nsx-vpc-status.wide.txt"]
    );
}
