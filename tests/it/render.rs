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

/// The ETCD METRICS section under the verdict: one row per node whose probe read etcd's
/// metrics, the peers etcd failed to send to during the checks by node, a read that failed said
/// with its reason (made visible); absent from reports without them.
#[test]
fn etcd_metrics_section_under_the_verdict() {
    let plain = table("peers-dropped", Format::Table);
    assert!(!plain.contains("ETCD METRICS"));
    let mut r = report("peers-dropped");
    r.etcd_metrics = serde_json::from_value(serde_json::json!([
        {
            "node": "cp1",
            "before": {"outcome": "Ok", "detail": "http://127.0.0.1:2381/metrics"},
            "after": {"outcome": "Ok", "detail": "http://127.0.0.1:2381/metrics"},
            "memberId": "ddd67b312462fd7b",
            "hasLeader": false,
            "leaderChanges": 3,
            "betweenReadsMs": 3100,
            "peers": [
                {"id": "628170c800dbcee", "node": "cp3", "sentFailures": 22, "sentFailuresDuringChecks": 22},
                {"id": "9e737febb6b99eee", "node": "cp2", "sentFailures": 17, "sentFailuresDuringChecks": 17}
            ],
            "walFsync": {"p99Ms": 1967, "count": 103, "overOneSecond": 13},
            "backendCommit": {"p99Ms": 4, "count": 8, "overOneSecond": 0},
            "dbSizeBytes": 20480,
            "quotaBytes": 2147483648u64
        },
        {
            "node": "cp2",
            "before": {"outcome": "Error", "detail": "http://127.0.0.1:2381/metrics: curl: (7) \u{1b}[31mrefused"},
            "after": {"outcome": "Skipped"},
            "peers": []
        }
    ]))
    .unwrap();
    let out = render::output(&r, Format::Table, Paint { on: false }).unwrap();
    let at = out.find("ETCD METRICS").expect("the section");
    assert!(
        out.find("VERDICT: ").is_some_and(|v| v < at),
        "under the verdict: {out}"
    );
    let section: Vec<&str> = out[at..].lines().collect();
    assert!(section[1].starts_with("NODE"), "{section:?}");
    let row: Vec<&str> = section[2]
        .split("   ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        row,
        [
            "cp1",
            "no",
            "3",
            "cp3 +22, cp2 +17",
            "2.0 s (13 of 103 > 1 s)",
            "4 ms",
            "0.0 MiB / 2048.0 MiB"
        ],
        "{out}"
    );
    assert!(section[3].starts_with("cp2 "), "{section:?}");
    let error = section
        .iter()
        .find(|l| l.contains("/metrics not read before the checks"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!error.contains('\u{1b}'), "made visible: {error}");
}
