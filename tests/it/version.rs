//! The version lives in one place, Cargo.toml. Everything else that states it must say the same:
//! `kubectl etcdnet version` (text and JSON), plugin.yaml (spec.version and every archive's
//! uri), the release template (its template form: only `{{ .TagName }}`, never a written
//! version), scripts/release.sh (reads Cargo.toml, writes no version) and CHANGELOG.md (Keep a
//! Changelog: an Unreleased section, and no section for a version newer than Cargo.toml's).

use crate::common::read;

use std::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn plugin(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-etcdnet"))
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run kubectl-etcdnet");
    assert!(
        out.status.success(),
        "kubectl-etcdnet {args:?} failed: {out:?}"
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Cargo.toml's [package] version, read from the file rather than from Cargo's environment, so
/// that a stale build cannot agree with itself.
fn cargo_toml_version() -> String {
    let text = read("Cargo.toml");
    let mut in_package = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("version = \"") {
                return v.trim_end_matches('"').to_string();
            }
        }
    }
    panic!("Cargo.toml has no [package] version");
}

#[test]
fn the_binary_reports_cargo_tomls_version() {
    assert_eq!(cargo_toml_version(), VERSION);
    assert_eq!(plugin(&["version"]), format!("kubectl-etcdnet {VERSION}\n"));
    let json: serde_json::Value =
        serde_json::from_str(&plugin(&["version", "-o", "json"])).expect("version -o json");
    assert_eq!(json["version"], VERSION);
}

#[test]
fn plugin_yaml_states_cargo_tomls_version() {
    let manifest: serde_yaml_ng::Value = serde_yaml_ng::from_str(&read("plugin.yaml")).unwrap();
    let tag = format!("v{VERSION}");
    assert_eq!(manifest["spec"]["version"].as_str(), Some(tag.as_str()));
    let platforms = manifest["spec"]["platforms"].as_sequence().unwrap();
    assert_eq!(
        platforms.len(),
        5,
        "linux, darwin × amd64, arm64 and windows/amd64"
    );
    for p in platforms {
        let uri = p["uri"].as_str().unwrap();
        assert!(
            uri.contains(&format!("/download/{tag}/kubectl-etcdnet_{tag}_")),
            "{uri} is not the {tag} release's archive"
        );
    }
}

#[test]
fn the_release_template_takes_the_version_from_the_tag() {
    let template = read("krew/.krew.yaml");
    assert!(
        template.contains("  version: {{ .TagName }}\n"),
        "krew/.krew.yaml: spec.version must be {{{{ .TagName }}}}"
    );
    // No version written anywhere in it: not Cargo's, and no other v<digits>.<digits>.
    let bytes = template.as_bytes();
    for (i, _) in template.match_indices('v') {
        let rest = &bytes[i + 1..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        assert!(
            !(digits > 0 && rest.get(digits) == Some(&b'.')),
            "krew/.krew.yaml states a version ({:?}); it must use {{{{ .TagName }}}}",
            &template[i..(i + 12).min(template.len())]
        );
    }
    assert_eq!(template.matches("addURIAndSha").count(), 5);
}

#[test]
fn the_release_script_reads_the_version_from_cargo_toml() {
    let script = read("scripts/release.sh");
    assert!(
        script.contains("Cargo.toml") && !script.contains(VERSION),
        "scripts/release.sh must read the version from Cargo.toml, not state it"
    );
}

#[test]
fn the_changelog_follows_keep_a_changelog() {
    let log = read("CHANGELOG.md");
    assert!(
        log.starts_with("# Changelog\n"),
        "CHANGELOG.md starts with '# Changelog'"
    );
    assert!(log.contains("https://keepachangelog.com/en/1.1.0/"));
    let sections: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("## ["))
        .map(|l| l.split(']').next().unwrap_or_default())
        .collect();
    assert_eq!(
        sections.first(),
        Some(&"Unreleased"),
        "the first section is Unreleased"
    );
    let parse =
        |v: &str| -> Vec<u64> { v.split(['.', '-']).filter_map(|p| p.parse().ok()).collect() };
    for v in &sections[1..] {
        assert!(
            parse(v) <= parse(VERSION),
            "CHANGELOG.md has a section for {v}, newer than Cargo.toml's {VERSION}"
        );
    }
    // The section heads Keep a Changelog allows, and nothing else at that level.
    for l in log.lines().filter(|l| l.starts_with("### ")) {
        assert!(
            [
                "Added",
                "Changed",
                "Deprecated",
                "Removed",
                "Fixed",
                "Security"
            ]
            .contains(&&l[4..]),
            "CHANGELOG.md: {l:?} is not a Keep a Changelog change type"
        );
    }
}
