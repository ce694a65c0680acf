//! The output contract, byte for byte where it is read whole: `-o json`, `-o yaml` and the
//! tables of a few cases (a healthy control plane, the support article's, the NSX VPC set, a
//! workload API that never answers, the dry runs, cleanup, version) and the error lines on
//! stderr, compared with the snapshots in `tests/snapshots/contract/`; every other fixture set's
//! report in brief. The schema (`schema::`) holds every field's type. A refactor must leave these
//! files untouched; a change of the contract shows up as a diff of them in review.
//!
//! Only what differs between two runs of the same case is masked: timings, the fake servers'
//! loopback ports, the random run id and the age of a pod. Regenerate after an intended change
//! with `SNAPSHOTS=overwrite cargo test --test it json_contract::`.

use crate::common;

use common::*;
use etcdnet_fakeapi::FakeConfig;
use serde_json::json;
use snapbox::IntoData;

/// Every snapshot is: the exit code, stdout, then stderr.
fn snapshot(name: &str, run: &Run) {
    let text = format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        run.code,
        mask(&run.stdout),
        mask(&run.stderr)
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/contract")
        .join(format!("{name}.txt"));
    // Raw: no line-ending or path normalization, every byte counts.
    snapbox::assert_data_eq!(text.raw(), snapbox::Data::read_from(&path, None).raw());
}

/// Masks the values that change from run to run, keeping every byte around them.
pub(crate) fn mask(text: &str) -> String {
    let mut out = String::new();
    let run_id = run_id_in(text);
    for line in text.split_inclusive('\n') {
        let mut line = mask_number_after(line, &["elapsedMs", "durationMs", "ageSeconds"]);
        line = mask_string_after(&line, &["checkedAt"]);
        line = mask_loopback_ports(&line);
        line = mask_ages(&line);
        line = mask_millis(&line);
        line = mask_spans(&line);
        line = mask_kubeconfig(&line);
        line = collapse_padding(&line);
        if let Some(id) = &run_id {
            line = line.replace(id.as_str(), "RUNID");
        }
        out.push_str(&line);
    }
    out
}

/// The test's own kubeconfig (a temporary path) in the commands the report prints, which
/// carry the run's `--kubeconfig=…`.
fn mask_kubeconfig(line: &str) -> String {
    const FLAG: &str = "--kubeconfig=";
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(FLAG) {
        out.push_str(&rest[..at + FLAG.len()]);
        rest = &rest[at + FLAG.len()..];
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(rest.len());
        out.push_str("KUBECONFIG");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The run id of a dry run's pods: the value of their run-id label.
fn run_id_in(text: &str) -> Option<String> {
    let at = text.find("etcdnet.kubectl.io/run-id")?;
    let rest = &text[at + "etcdnet.kubectl.io/run-id".len()..];
    let rest = rest.trim_start_matches(['"', ':', ' ']);
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (id.len() == 5).then_some(id)
}

/// `"checkedAt": "2026-12-07T09:00:00Z"` (JSON) and `checkedAt: 2026-…` (YAML): the value
/// becomes `<time>`, quotes kept.
fn mask_string_after(line: &str, keys: &[&str]) -> String {
    for key in keys {
        for quoted in [format!("\"{key}\": "), format!("{key}: ")] {
            if let Some(at) = line.find(&quoted) {
                let start = at + quoted.len();
                let rest = &line[start..];
                let (open, body) = match rest.strip_prefix('"') {
                    Some(b) => ("\"", b),
                    None => ("", rest),
                };
                let len = body.find(['"', ',', '\n', '\r']).unwrap_or(body.len());
                return format!("{}{open}<time>{}", &line[..start], &body[len..]);
            }
        }
    }
    line.to_string()
}

/// `"elapsedMs": 12,` (JSON) and `elapsedMs: 12` (YAML) become `... <n>`.
fn mask_number_after(line: &str, keys: &[&str]) -> String {
    for key in keys {
        for quoted in [format!("\"{key}\": "), format!("{key}: ")] {
            if let Some(at) = line.find(&quoted) {
                let start = at + quoted.len();
                let digits = line[start..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits > 0 {
                    return format!("{}<n>{}", &line[..start], &line[start + digits..]);
                }
            }
        }
    }
    line.to_string()
}

/// Runs of two or more spaces inside a line become two: a table's column width follows its
/// widest cell, and a timing (`9ms`, `10ms`) changes the width of its column and of the header
/// above it from run to run. Indentation stays as it is.
fn collapse_padding(line: &str) -> String {
    let body = line.trim_start_matches(' ');
    let mut out = line[..line.len() - body.len()].to_string();
    let mut spaces = 0;
    for c in body.chars() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        out.push_str(&" ".repeat(spaces.min(2)));
        spaces = 0;
        out.push(c);
    }
    out.push_str(&" ".repeat(spaces.min(2)));
    out
}

/// `5 ms`, `2.0 s` (a timing as `crate::when` writes it for people: `ok 5 ms`, `after 2.0 s`,
/// `(/readyz 200, 5 ms)`, `(2.0 s)`) become `<n> ms`, `<n> s`. Only there: the probe script a
/// dry run prints says `~10 ms` in its comments, which is no timing of the run.
fn mask_spans(line: &str) -> String {
    let b: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let starts = i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '.');
        if b[i].is_ascii_digit() && starts {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == '.') {
                j += 1;
            }
            let rest: String = b[j..].iter().take(3).collect();
            let unit = if rest.starts_with(" ms") {
                Some(" ms")
            } else if rest.starts_with(" s") && b[i..j].contains(&'.') {
                Some(" s")
            } else {
                None
            };
            let closes = |u: &str| b.get(j + u.len()) == Some(&')');
            let timing = |u: &str| {
                ["ok ", ", ", "after "].iter().any(|p| out.ends_with(p))
                    || (out.ends_with('(') && closes(u))
            };
            if let Some(u) = unit.filter(|u| timing(u)) {
                let end = j + u.len();
                if end == b.len() || !b[end].is_alphanumeric() {
                    out.push_str("<n>");
                    out.push_str(u);
                    i = end;
                    continue;
                }
            }
            out.extend(&b[i..j]);
            i = j;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// `5ms`, `1002ms` (a timing in a table or a message) become `<n>ms`.
fn mask_millis(line: &str) -> String {
    let mut out = String::new();
    let mut digits = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let after_word = out.chars().last().is_some_and(|p| p.is_alphanumeric());
        if !digits.is_empty() && c == 'm' && chars.peek() == Some(&'s') && !after_word {
            out.push_str("<n>");
        } else {
            out.push_str(&digits);
        }
        digits.clear();
        out.push(c);
    }
    out.push_str(&digits);
    out
}

/// `(since 2025-06-03T08:14:07Z, 552d ago)` (the age of a fixture's timestamp, which grows by
/// the day) becomes `(since 2025-06-03T08:14:07Z, <age> ago)`.
fn mask_ages(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(end) = rest.find(" ago)") {
        let head = &rest[..end];
        match head.rfind(['(', ' ']) {
            Some(open)
                if head[open + 1..].len() > 1
                    && head[open + 1..end - 1].chars().all(|c| c.is_ascii_digit())
                    && head[open + 1..].ends_with(['s', 'm', 'h', 'd']) =>
            {
                out.push_str(&head[..=open]);
                out.push_str("<age>");
            }
            _ => out.push_str(head),
        }
        out.push_str(" ago)");
        rest = &rest[end + " ago)".len()..];
    }
    out.push_str(rest);
    out
}

/// `127.0.0.1:38213` (a fake server's ephemeral port) becomes `127.0.0.1:PORT`; fixed ports
/// (etcd's 2379, 2381) stay.
fn mask_loopback_ports(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("127.0.0.1:") {
        let end = at + "127.0.0.1:".len();
        out.push_str(&rest[..end]);
        rest = &rest[end..];
        let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits == 5 {
            out.push_str("PORT");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";

/// Whole documents of a healthy control plane and of the support article's case, in every
/// format; the other sets are asserted in brief (`status_of_each_set_in_brief`).
#[test]
fn status_of_every_fixture_set() {
    for (set, formats) in [
        ("healthy-v1alpha3", &["json", "table", "wide"][..]),
        ("quorum-lost", &["json", "yaml", "table", "wide"][..]),
    ] {
        let env = Env::new(set, Workload::ok());
        for format in formats {
            let run = env.plugin(&["status", CLUSTER, "-n", NS, "-o", format]);
            snapshot(&format!("status-{set}.{format}"), &run);
        }
    }
}

/// The NSX sets: `networkPolicy`, the network's finding codes and the NETWORK POLICY
/// section as a whole document for the VPC set, and `diagnose --dry-run`'s warnings on stderr
/// (the other NSX sets' reports are asserted in brief).
#[test]
fn status_of_the_nsx_sets() {
    let env = Env::new("nsx-vpc", Workload::ok());
    for format in ["json", "table", "wide"] {
        let run = env.plugin(&["status", CLUSTER, "-n", NS, "-o", format]);
        snapshot(&format!("status-nsx-vpc.{format}"), &run);
    }
    let run = env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run", "-o", "json"]);
    snapshot("diagnose-dry-run-nsx-vpc.json", &run);

    for (set, warnings) in [
        (
            "nsx-ncp",
            &["warning: cluster tkc-prod: SecurityPolicyBlocksEtcd: SecurityPolicy ns-prod/drop-etcd-peer (nsx.vmware.com, priority 10, rules[0] \"drop-etcd-peer-rule\"): Drop In on TCP 2380 blocks 6 path(s)"][..],
        ),
        (
            "nsx-vpc-forbidden",
            &[
                "warning: cluster tkc-prod: NetworkNotRealized: SubnetPort tkc-prod-7xk2p-bx2lk-tkc-prod-vnet-eth0: Ready False",
                "warning: cluster tkc-prod: network not read: list securitypolicies.crd.nsx.vmware.com in namespace ns-prod: forbidden\n",
            ][..],
        ),
    ] {
        let env = Env::new(set, Workload::ok());
        let run = env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run", "-o", "json"]);
        assert_eq!(run.code, 0, "{set}: {}", run.stderr);
        for warning in warnings {
            assert!(run.stderr.contains(warning), "{set}: {}", run.stderr);
        }
        assert!(
            run.stderr.ends_with("dry run: 3 pod(s) shown, nothing created\n"),
            "{set}: {}",
            run.stderr
        );
    }
}

#[test]
fn status_errors() {
    let env = Env::new("forbidden", Workload::ok());
    snapshot(
        "status-forbidden",
        &env.plugin(&["status", CLUSTER, "-n", NS, "-o", "json"]),
    );
    let env = Env::new("not-supervisor", Workload::ok());
    snapshot(
        "status-not-supervisor",
        &env.plugin(&["status", CLUSTER, "-n", NS, "-o", "json"]),
    );
    let env = Env::new("two-clusters", Workload::ok());
    snapshot(
        "status-unknown-cluster",
        &env.plugin(&["status", "tkc-c", "-n", "ns-shared", "-o", "json"]),
    );
}

/// A workload API that never answers, as a whole document; refused, HTTP 500 and etcd
/// unhealthy are asserted in brief (`status_of_each_set_in_brief`).
#[test]
fn status_with_the_workload_api_in_every_state() {
    let env = Env::new("quorum-lost", Workload::black_hole());
    for format in ["json", "table"] {
        let run = env.plugin(&[
            "status",
            CLUSTER,
            "-n",
            NS,
            "--api-timeout",
            "1s",
            "-o",
            format,
        ]);
        snapshot(&format!("status-workload-black-hole.{format}"), &run);
    }
}

#[test]
fn diagnose_without_a_lab() {
    // The workload API is down and the pod route is forced: one error line, no report, in
    // every format.
    let env = Env::new("quorum-lost", Workload::black_hole());
    for format in ["json", "table"] {
        let run = env.plugin(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "pod",
            "--api-timeout",
            "1s",
            "-o",
            format,
        ]);
        snapshot("diagnose-via-pod-api-down", &run);
    }

    // RBAC forbids creating pods in the workload cluster: every node unreachable, the report
    // in each format.
    let forbidding = || {
        Workload::serving(FakeConfig::empty().forbid(etcdnet_fakeapi::Forbid {
            verb: Some("create".into()),
            resource: Some("pods".into()),
            ..Default::default()
        }))
        .unwrap()
    };
    let env = Env::new("quorum-lost", forbidding());
    for format in ["json", "yaml", "table"] {
        // The table with every section (--details): the first screen has its own tests.
        let mut args = vec!["diagnose", CLUSTER, "-n", NS, "-o", format];
        if format == "table" {
            args.push("--details");
        }
        snapshot(
            &format!("diagnose-pod-create-forbidden.{format}"),
            &env.plugin(&args),
        );
    }

    // A VM without an IP, and one powered off: no address to probe.
    let env = Env::new("vm-no-ip", forbidding());
    snapshot(
        "diagnose-vm-no-ip-via-pod.json",
        &env.plugin(&["diagnose", CLUSTER, "-n", NS, "--via", "pod", "-o", "json"]),
    );
}

#[test]
fn diagnose_dry_runs() {
    let env = Env::new("quorum-lost", Workload::ok());
    snapshot(
        "diagnose-dry-run.yaml",
        &env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run"]),
    );
    snapshot(
        "diagnose-dry-run.json",
        &env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run", "-o", "json"]),
    );
    snapshot(
        "diagnose-dry-run-jumpbox.json",
        &env.plugin(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--dry-run",
            "--via",
            "jumpbox",
            "-o",
            "json",
        ]),
    );
    snapshot(
        "diagnose-dry-run-ssh",
        &env.plugin(&["diagnose", CLUSTER, "-n", NS, "--dry-run", "--via", "ssh"]),
    );
    let env = Env::new("vm-no-ip", Workload::black_hole());
    snapshot(
        "diagnose-dry-run-vm-no-ip.json",
        &env.plugin(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--dry-run",
            "--api-timeout",
            "1s",
            "-o",
            "json",
        ]),
    );
}

#[test]
fn cleanup_and_version() {
    // A hundred days and an hour old whenever the test runs, so that the AGE column reads "100d".
    let created = (k8s_openapi::jiff::Timestamp::now()
        - k8s_openapi::jiff::SignedDuration::from_hours(100 * 24 + 1))
    .to_string();
    // Running without a deadline (kept unless --all) and finished (deleted), in both clusters.
    let pod = |ns: &str, name: &str, phase: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "creationTimestamp": created,
                         "labels": {"app.kubernetes.io/managed-by": "kubectl-etcdnet"}},
            "spec": {"containers": [{"name": "probe", "image": "busybox"}]},
            "status": {"phase": phase}
        })
    };
    let workload = Workload::serving(
        FakeConfig::empty()
            .object(pod("kube-system", "etcdnet-probe-cp1-bcdfg", "Running"))
            .object(pod("kube-system", "etcdnet-probe-cp2-bcdfg", "Succeeded")),
    )
    .unwrap();
    let env = Env::new("healthy-v1alpha3", workload);
    for (name, phase) in [
        ("etcdnet-jumpbox-cp1-bcdfg", "Running"),
        ("etcdnet-jumpbox-cp2-bcdfg", "Failed"),
    ] {
        env.supervisor.insert(pod(NS, name, phase)).unwrap();
    }
    for format in ["json", "table"] {
        snapshot(
            &format!("cleanup-dry-run.{format}"),
            &env.plugin(&["cleanup", CLUSTER, "-n", NS, "--dry-run", "-o", format]),
        );
    }
    snapshot(
        "cleanup-all-dry-run.table",
        &env.plugin(&[
            "cleanup",
            CLUSTER,
            "-n",
            NS,
            "--include-running",
            "--dry-run",
        ]),
    );
    snapshot(
        "cleanup.json",
        &env.plugin(&["cleanup", CLUSTER, "-n", NS, "-o", "json"]),
    );
    let env = Env::new("healthy-v1alpha3", Workload::refused());
    snapshot(
        "cleanup-workload-refused.json",
        &env.plugin(&["cleanup", CLUSTER, "-n", NS, "-o", "json"]),
    );
    snapshot("version.json", &env.plugin(&["version", "-o", "json"]));
    snapshot("version.yaml", &env.plugin(&["version", "-o", "yaml"]));
}

/// What one `status` run is about, asserted on its JSON: the VM API and labels discovery chose,
/// the findings (code, node), the nodes (name's last five characters, VM IP, power), the exit
/// code. The whole documents of a few sets are the snapshots above; the schema
/// (docs/schema/, `schema::`) holds every field's type.
struct Brief {
    set: &'static str,
    cluster: &'static str,
    namespace: &'static str,
    workload: fn() -> Workload,
    vm_api: &'static str,
    labels: &'static str,
    findings: &'static [(&'static str, Option<&'static str>)],
    nodes: &'static [(&'static str, Option<&'static str>, &'static str)],
    workload_state: &'static str,
    exit: i32,
}

const UP: [(&str, Option<&str>, &str); 3] = [
    ("4rz8m", Some("198.18.0.11"), "PoweredOn"),
    ("9qtvw", Some("198.18.0.12"), "PoweredOn"),
    ("bx2lk", Some("198.18.0.13"), "PoweredOn"),
];
const V3: &str = "vmoperator.vmware.com/v1alpha3";
const V6: &str = "vmoperator.vmware.com/v1alpha6";
const NOT_READY: (&str, Option<&str>) = ("ControlPlaneNotReady", None);
const ETCD_COND: (&str, Option<&str>) = ("EtcdConditionNotTrue", None);

fn brief(set: &'static str, exit: i32) -> Brief {
    Brief {
        set,
        cluster: CLUSTER,
        namespace: NS,
        workload: Workload::ok,
        vm_api: V3,
        labels: "capv",
        findings: &[],
        nodes: &UP,
        workload_state: "Reachable",
        exit,
    }
}

fn briefs() -> Vec<Brief> {
    vec![
        Brief {
            vm_api: "vmoperator.vmware.com/v1alpha1",
            labels: "capw",
            ..brief("v1alpha1-capw", 0)
        },
        Brief {
            vm_api: "vmoperator.vmware.com/v1alpha2",
            ..brief("v1alpha2", 0)
        },
        Brief {
            vm_api: "vmoperator.vmware.com/v1alpha5",
            nodes: &[
                ("4rz8m", Some("198.18.0.11"), "PoweredOn"),
                ("9qtvw", Some("198.18.0.12"), "PoweredOn"),
                ("bx2lk", Some("2001:db8:0:3::13"), "PoweredOn"),
            ],
            ..brief("kcp-v1beta2", 0)
        },
        Brief {
            findings: &[("ControlPlaneMachinesMissing", None), NOT_READY, ETCD_COND],
            nodes: &[
                ("4rz8m", Some("198.18.0.11"), "PoweredOn"),
                ("9qtvw", Some("198.18.0.12"), "PoweredOn"),
            ],
            ..brief("missing-machine", 1)
        },
        Brief {
            findings: &[
                NOT_READY,
                ETCD_COND,
                ("RolloutInProgress", Some("tkc-prod-7xk2p-bx2lk")),
            ],
            nodes: &[
                ("4rz8m", Some("198.18.0.11"), "PoweredOn"),
                ("9qtvw", Some("198.18.0.12"), "PoweredOn"),
                ("bx2lk", None, "PoweredOn"),
            ],
            ..brief("vm-no-ip", 1)
        },
        Brief {
            findings: &[
                NOT_READY,
                ETCD_COND,
                ("VirtualMachineNotPoweredOn", Some("tkc-prod-7xk2p-9qtvw")),
                ("VirtualMachineNoIP", Some("tkc-prod-7xk2p-9qtvw")),
            ],
            nodes: &[
                ("4rz8m", Some("198.18.0.11"), "PoweredOn"),
                ("9qtvw", None, "PoweredOff"),
                ("bx2lk", Some("198.18.0.13"), "PoweredOn"),
            ],
            ..brief("vm-powered-off", 1)
        },
        Brief {
            cluster: "tkc-a",
            namespace: "ns-shared",
            ..brief("two-clusters", 0)
        },
        Brief {
            cluster: "tkc-b",
            namespace: "ns-shared",
            nodes: &[
                ("4rz8m", Some("198.18.1.11"), "PoweredOn"),
                ("9qtvw", Some("198.18.1.12"), "PoweredOn"),
                ("bx2lk", Some("198.18.1.13"), "PoweredOn"),
            ],
            ..brief("two-clusters", 0)
        },
        Brief {
            vm_api: V6,
            ..brief("v1alpha6", 0)
        },
        Brief {
            vm_api: V6,
            ..brief("three-zones", 0)
        },
        Brief {
            vm_api: V6,
            ..brief("vm-naming-template", 0)
        },
        // The walk goes on without VSphereMachines: a finding that does not count.
        Brief {
            vm_api: V6,
            findings: &[("PermissionMissing", None)],
            ..brief("vspheremachines-forbidden", 0)
        },
        // bx2lk's address from its status.network.config (`ipSource` in `status::`).
        brief("vm-network-config-only", 0),
        Brief {
            findings: &[("SecurityPolicyBlocksEtcd", None)],
            ..brief("nsx-ncp", 1)
        },
        Brief {
            findings: &[("NetworkNotRealized", Some("tkc-prod-7xk2p-bx2lk"))],
            ..brief("nsx-vpc-forbidden", 1)
        },
        Brief {
            workload: Workload::refused,
            workload_state: "Refused",
            findings: &[NOT_READY, ETCD_COND, ("WorkloadAPIUnreachable", None)],
            ..brief("quorum-lost", 1)
        },
        // The article's case on a VDS Supervisor: the same walk, its stack `vds`
        // (`status::the_networking_stack_of_each_supervisor`).
        Brief {
            workload: Workload::refused,
            workload_state: "Refused",
            findings: &[NOT_READY, ETCD_COND, ("WorkloadAPIUnreachable", None)],
            ..brief("vds", 1)
        },
        Brief {
            workload: || Workload::status(500),
            workload_state: "HttpError",
            findings: &[NOT_READY, ETCD_COND, ("WorkloadAPINotReady", None)],
            ..brief("quorum-lost", 1)
        },
        Brief {
            workload: Workload::etcd_unhealthy,
            workload_state: "HttpError",
            findings: &[NOT_READY, ETCD_COND, ("WorkloadAPINotReady", None)],
            ..brief("quorum-lost", 1)
        },
    ]
}

/// Every set's `status` as the brief says, its YAML the same document as its JSON, and its
/// tables (`-o table` and `wide`) naming every node with the same exit code.
#[test]
fn status_of_each_set_in_brief() {
    for b in briefs() {
        let env = Env::new(b.set, (b.workload)());
        // Every set's workload API answers at once (or refuses): the bound only has to outlast
        // a loaded CI machine. At 1s, one `-o wide` run in a clean-clone CI run ended with exit
        // 1 where its set's json, yaml and table runs said 0: status's findings come from the
        // Supervisor's objects and this one bounded check whatever the format, so the check
        // ran out of time (secret read, client built, TLS handshake in a debug build).
        let status = |format: &str| {
            env.plugin(&[
                "status",
                b.cluster,
                "-n",
                b.namespace,
                "--api-timeout",
                "10s",
                "-o",
                format,
            ])
        };
        let run = status("json");
        let what = format!("{} {}", b.set, b.cluster);
        assert_eq!(run.code, b.exit, "{what}: {}", run.stderr);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(doc["apis"]["virtualMachine"], b.vm_api, "{what}");
        assert_eq!(doc["apis"]["vmLabels"], b.labels, "{what}");
        assert_eq!(doc["workloadApi"]["state"], b.workload_state, "{what}");
        assert_eq!(doc["result"]["exitCode"], b.exit, "{what}");
        let findings: Vec<(String, Option<String>)> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_string(),
                    f["node"].as_str().map(str::to_string),
                )
            })
            .collect();
        let want: Vec<(String, Option<String>)> = b
            .findings
            .iter()
            .map(|(c, n)| (c.to_string(), n.map(str::to_string)))
            .collect();
        assert_eq!(findings, want, "{what}");
        let nodes = doc["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), b.nodes.len(), "{what}");
        for (node, (suffix, ip, power)) in nodes.iter().zip(b.nodes) {
            let name = node["name"].as_str().unwrap();
            assert!(name.ends_with(suffix), "{what}: {name}");
            assert_eq!(node["vm"]["ip"].as_str(), *ip, "{what}: {name}");
            assert_eq!(node["vm"]["power"], *power, "{what}: {name}");
        }

        let yaml = status("yaml");
        assert_eq!(yaml.code, b.exit, "{what}: {}", yaml.stderr);
        let from_yaml: serde_json::Value = serde_yaml_ng::from_str(&yaml.stdout).unwrap();
        assert_eq!(
            mask_volatile(from_yaml),
            mask_volatile(doc.clone()),
            "{what}: yaml"
        );
        for format in ["table", "wide"] {
            let table = status(format);
            assert_eq!(
                table.code, b.exit,
                "{what} -o {format}\n{}\n{}",
                table.stdout, table.stderr
            );
            for node in nodes {
                let name = node["name"].as_str().unwrap();
                assert!(table.stdout.contains(name), "{what} -o {format}: {name}");
            }
            for (code, _) in b.findings {
                assert!(
                    table.stdout.contains(code),
                    "{what} -o {format}: {code}\n{}",
                    table.stdout
                );
            }
        }
    }
}

/// A run's timings, set to zero: two runs of one case differ only there.
fn mask_volatile(mut doc: serde_json::Value) -> serde_json::Value {
    for pointer in ["/workloadApi/elapsedMs", "/result/durationMs"] {
        if let Some(v) = doc.pointer_mut(pointer) {
            *v = 0.into();
        }
    }
    // Two runs a second apart are two checks at two times.
    for pointer in [
        "/workloadApi/checkedAt",
        "/workloadApi/beforeProbes/checkedAt",
    ] {
        if let Some(v) = doc.pointer_mut(pointer) {
            *v = "<time>".into();
        }
    }
    doc
}
