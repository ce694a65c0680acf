//! One choke point for text: every string a report holds (what the Supervisor, a node, its
//! logs, ssh or NSX said) reaches the screen through [`visible`], whichever renderer prints it
//! and whichever way the run printed it: one cluster's tables, wide tables, first screen and
//! details; `-A`'s summary and each cluster's detail under it; `--watch`'s first round and its
//! change lines; `analyse --against`'s comparison; the NSX MANAGER section.
//!
//! Each free-text string of each fixture report (`tests/fixtures/reports`, the real plugin's
//! `-o json`, each given the NSX MANAGER section of a run that read a DROP of 2380, which no
//! captured report has) is given a tail that acts on a terminal (OSC retitle, BEL, the C1 CSI,
//! a bidi override, a carriage return); the outputs must show it as escapes only. The strings
//! that are an enum's value in the generated schema (a code, a state) are left: they are the
//! plugin's own words and would not read back. (A unit test, not one of tests/: the list, the
//! watch and the comparison are the crate's own.)

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::*;
use crate::error::Error;
use crate::report::compare::{Comparison, Judged};
use crate::report::{ClusterFailure, DiagnoseReport, ListItem, ListReport, StatusReport};

/// What acts on a terminal, appended to every string.
const TAIL: &str = "\u{1b}]0;owned\u{7}\u{9b}2J\u{202e}\r";
/// [`TAIL`] as [`visible`] writes it.
const SHOWN: &str = "\\x1b]0;owned\\x07\\u{9b}2J\\u{202e}\\r";
const RAW: [char; 5] = ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\r'];
const OFF: Paint = Paint { on: false };

fn enums(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("enum", Value::Array(a)) => {
                        out.extend(a.iter().filter_map(|x| x.as_str()).map(str::to_string))
                    }
                    ("const", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => enums(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| enums(v, out)),
        _ => {}
    }
}

fn poison(v: &mut Value, keep: &BTreeSet<String>, n: &mut usize) {
    match v {
        Value::String(s) if !keep.contains(s.as_str()) => {
            s.push_str(TAIL);
            *n += 1;
        }
        Value::Object(m) => m.values_mut().for_each(|v| poison(v, keep, n)),
        Value::Array(a) => a.iter_mut().for_each(|v| poison(v, keep, n)),
        _ => {}
    }
}

/// Poisons the part at `at` of `doc` whole when the report still reads back, else each of its
/// parts apart: what is left is only the strings read into a type that is not text (an
/// address, an enum a schema does not list by value).
fn poison_where_it_reads(
    doc: &mut Value,
    at: &str,
    keep: &BTreeSet<String>,
    reads: &dyn Fn(&Value) -> bool,
    n: &mut usize,
) {
    let mut tried = doc.clone();
    let mut m = 0;
    poison(tried.pointer_mut(at).unwrap(), keep, &mut m);
    if m == 0 {
        return;
    }
    if reads(&tried) {
        *doc = tried;
        *n += m;
        return;
    }
    let children: Vec<String> = match doc.pointer(at).unwrap() {
        Value::Object(o) => o
            .keys()
            .map(|k| format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")))
            .collect(),
        Value::Array(a) => (0..a.len()).map(|i| format!("{at}/{i}")).collect(),
        _ => vec![],
    };
    for c in children {
        poison_where_it_reads(doc, &c, keep, reads, n);
    }
}

/// A fixture report, poisoned.
enum Poisoned {
    Diagnose(Box<DiagnoseReport>),
    Status(Box<StatusReport>),
}

/// Every fixture report by file name, every string that is text poisoned; each diagnosis with
/// the NSX MANAGER section of a run that read the Infrastructure DROP of 2380 and traced it.
fn poisoned() -> Vec<(String, Poisoned)> {
    let mut keep = BTreeSet::new();
    for (_, schema) in crate::report::schema::all() {
        enums(&schema, &mut keep);
    }
    let nsx =
        serde_json::to_value(crate::report::v1alpha2::nsx_manager::tests::infra_drop()).unwrap();
    let dir = format!("{}/tests/fixtures/reports", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let mut out = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let diagnose = doc["kind"] == "DiagnoseReport";
        if diagnose {
            doc["nsxManager"] = nsx.clone();
        }
        let reads = |v: &Value| match diagnose {
            true => serde_json::from_value::<DiagnoseReport>(v.clone()).is_ok(),
            false => serde_json::from_value::<StatusReport>(v.clone()).is_ok(),
        };
        let (mut poisoned, mut strings) = (0, 0);
        poison(&mut doc.clone(), &keep, &mut strings);
        poison_where_it_reads(&mut doc, "", &keep, &reads, &mut poisoned);
        // The strings that are not a schema's enum value are text, nearly all of them (the
        // others are addresses and etcd's member IDs, read into numbers).
        assert!(
            poisoned * 10 > strings * 9,
            "{name}: {poisoned} of {strings} strings"
        );
        let report = match diagnose {
            true => Poisoned::Diagnose(Box::new(
                serde_json::from_value(doc).unwrap_or_else(|e| panic!("{name}: {e}")),
            )),
            false => Poisoned::Status(Box::new(
                serde_json::from_value(doc).unwrap_or_else(|e| panic!("{name}: {e}")),
            )),
        };
        out.push((name, report));
    }
    out
}

/// `out` holds no character of [`TAIL`] raw, and shows it as escapes (so the check is not
/// empty).
fn assert_visible(what: &str, out: &str) {
    let raw: Vec<(usize, &str)> = out
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(RAW))
        .collect();
    assert!(
        raw.is_empty(),
        "{what}: lines with raw controls (print them through render::visible):\n{}",
        raw.iter()
            .map(|(n, l)| format!("{n}: {}", l.escape_debug()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        out.contains(SHOWN),
        "{what}: no poisoned string shown:\n{out}"
    );
}

/// The views a person gets: every section (`--details`), and the first screen.
fn views() -> [(&'static str, View); 2] {
    let first = View {
        details: false,
        width: 100,
        at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_644_007),
        kubectl: None,
    };
    [("details", View::default()), ("first screen", first)]
}

/// A cluster that could not be looked at, its names and its error poisoned.
fn failure(i: usize) -> ClusterFailure {
    ClusterFailure::new(
        &format!("ns-{i}{TAIL}"),
        &format!("tkc-gone-{i}{TAIL}"),
        &Error::config(format!("no such cluster{TAIL}")),
    )
}

/// The diagnoses, each its own cluster (the fixtures share names), the first `failed` of them
/// clusters that could not be looked at.
fn list(reports: &[(String, DiagnoseReport)], failed: usize) -> ListReport<DiagnoseReport> {
    let items = reports
        .iter()
        .enumerate()
        .map(|(i, (_, r))| match i < failed {
            true => ListItem::Failed(failure(i)),
            false => {
                let mut r = r.clone();
                r.header.cluster.name = format!("{i}-{}", r.header.cluster.name);
                ListItem::Report(r)
            }
        })
        .collect();
    ListReport::new(items, Duration::from_secs(1))
}

/// Every way a report is printed, from the fixtures poisoned once.
#[test]
fn every_string_of_a_report_reaches_the_screen_visible() {
    let reports = poisoned();
    one_cluster(&reports);
    let diagnoses: Vec<(String, DiagnoseReport)> = reports
        .into_iter()
        .filter_map(|(name, r)| match r {
            Poisoned::Diagnose(r) => Some((name, *r)),
            Poisoned::Status(_) => None,
        })
        .collect();
    all_clusters(&diagnoses);
    watch(&diagnoses);
    comparison(&diagnoses);
}

/// One cluster's `status` and `diagnose`: tables, wide tables, first screens, details.
fn one_cluster(reports: &[(String, Poisoned)]) {
    for (name, report) in reports {
        for (how, view) in views() {
            for format in [Format::Table, Format::Wide] {
                let out = match &report {
                    Poisoned::Diagnose(r) => output_as(&**r, format, OFF, &view),
                    Poisoned::Status(r) => output_as(&**r, format, OFF, &view),
                }
                .unwrap();
                let what = format!("{name} ({how}, {format:?})");
                assert_visible(&what, &out);
                // The NSX MANAGER section is there to be checked, a rule's name in it.
                if matches!(report, Poisoned::Diagnose(_)) && view.details {
                    let section = out
                        .split("\nNSX MANAGER (")
                        .nth(1)
                        .unwrap_or_else(|| panic!("{what}: no NSX MANAGER section:\n{out}"));
                    assert!(
                        section.contains(&format!("DROPS \"block etcd peer{SHOWN}\"")),
                        "{what}: {section}"
                    );
                }
            }
        }
    }
}

/// `-A`: the summary table, the lines of the clusters that could not be looked at, and each
/// unhealthy cluster's tables under it.
fn all_clusters(reports: &[(String, DiagnoseReport)]) {
    let list = list(reports, 1);
    for detail in [false, true] {
        let listed = Listed {
            list: &list,
            detail,
        };
        for (how, view) in views() {
            for format in [Format::Table, Format::Wide] {
                let out = output_as(&listed, format, OFF, &view).unwrap();
                let what = format!("-A (detail {detail}, {how}, {format:?})");
                assert_visible(&what, &out);
                // The failure's line: its names and its error, each escaped.
                assert!(
                    out.contains(&format!(
                        "ns-0{SHOWN}/tkc-gone-0{SHOWN}: no such cluster{SHOWN}"
                    )),
                    "{what}:\n{out}"
                );
            }
        }
    }
}

/// `--watch`: the first round whole, then the lines of what changed (a verdict that moved and
/// why, a pair that works again, a cluster new or now failing, the end), for one cluster and
/// for `-A`.
fn watch(reports: &[(String, DiagnoseReport)]) {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_644_007);
    for format in [Format::Table, Format::Wide] {
        // One cluster: each blocked fixture, then healed.
        for (name, r) in reports {
            let mut w = Watch::new(format, OFF, true);
            assert_visible(name, &w.one(Box::new(r.clone()), false, at).unwrap());
            let mut healed = crate::testing::healed(r.clone());
            healed.verdict.summary.push_str(TAIL);
            let changes = w.one(Box::new(healed), true, at).unwrap();
            let what = format!("--watch {name} ({format:?}), the change lines");
            if r.verdict.code != crate::report::v1alpha2::VerdictCode::Healthy {
                assert_visible(&what, &changes);
            } else {
                assert!(!changes.contains(RAW), "{what}: {changes:?}");
            }
        }
        // -A: a failing cluster now looked at, a cluster now failing, the others healed.
        let mut w = Watch::new(format, OFF, true);
        let first = w.many(list(reports, 1), false, at).unwrap();
        assert_visible(&format!("--watch -A ({format:?})"), &first);
        let mut next = list(reports, 0);
        let mut moved = 0;
        for item in &mut next.items {
            match item {
                ListItem::Report(r) if r.header.cluster.name.starts_with("1-") => {
                    let error = Error::config(format!("no such cluster{TAIL}"));
                    let (ns, cluster) = (&r.header.namespace, &r.header.cluster.name);
                    *item = ListItem::Failed(ClusterFailure::new(ns, cluster, &error));
                }
                ListItem::Report(r) => {
                    *r = crate::testing::healed(r.clone());
                    r.verdict.summary.push_str(TAIL);
                    moved += 1;
                }
                ListItem::Failed(_) => {}
            }
        }
        assert!(moved > 1);
        let changes = w.many(next, true, at).unwrap();
        let what = format!("--watch -A ({format:?}), the change lines");
        assert_visible(&what, &changes);
        // A cluster new since the first round, and the one now failing, by their names.
        assert!(
            changes.contains(&format!("{SHOWN}: new, ")),
            "{what}:\n{changes}"
        );
        assert!(
            changes.contains(&format!("(no such cluster{SHOWN})")),
            "{what}:\n{changes}"
        );
    }
}

/// `analyse NEW --against GOOD`: the bundles' names and versions as the manifests wrote them,
/// the paths, nodes, members, rules and metrics that changed.
fn comparison(reports: &[(String, DiagnoseReport)]) {
    for (name, r) in reports {
        // The good run healed and without NSX Manager's DROP, so its rule is a change.
        let mut good = crate::testing::healed(r.clone());
        good.nsx_manager = None;
        let judged = |report, bundle: &str| Judged {
            bundle: format!("{bundle}{TAIL}"),
            created: "2026-12-07T03:40:00Z".into(),
            plugin_version: format!("0.3.0{TAIL}"),
            report,
        };
        for (before, after) in [(&good, r), (r, &good)] {
            let c = Comparison::of(&judged(before, "good.tar.gz"), &judged(after, "new.tar.gz"));
            for format in [Format::Table, Format::Wide] {
                let out = output(&c, format, OFF).unwrap();
                let what = format!("--against {name} ({format:?})");
                assert_visible(&what, &out);
                assert!(
                    out.contains(&format!("new.tar.gz{SHOWN}")),
                    "{what}:\n{out}"
                );
            }
        }
    }
}
