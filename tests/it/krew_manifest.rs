//! The krew manifest (plugin.yaml) and its release template (krew/.krew.yaml), held to krew's own
//! validation rules and to ours.
//!
//! krew's rules, as its code has them (kubernetes-sigs/krew):
//! - `internal/index/validation/validate.go` (`ValidatePlugin`, `validatePlatform`, `validateFiles`,
//!   `validateSelector`, `IsSafePluginName`): apiVersion, kind, a safe name equal to the manifest's
//!   file name, a one-line non-empty shortDescription, a version, a platform; per platform uri,
//!   sha256 `^[a-f0-9]{64}$`, bin, `files` unset or non-empty with `from` and `to`, and a non-empty
//!   selector keyed on `os`/`arch` only.
//! - `pkg/constants/constants.go`: the apiVersion, the kind, the `.yaml` manifest extension.
//! - `internal/installation/semver/version.go`: the version is semver with a leading `v`
//!   (k8s.io/apimachinery `ParseSemantic`).
//! - `internal/index/indexscanner/scanner.go`: manifests are read non-strictly and then validated
//!   under the name their file gives (`plugins/<name>.yaml` in krew-index).
//! - `cmd/validate-krew-manifest/main.go` (krew-index's CI): every platform's selector matches a
//!   supported os/arch, no os/arch is matched by two platforms, a LICENSE-like file is installed,
//!   and (warnings) lines of at most 80 characters in description and caveats, 70 in
//!   shortDescription.
//! - `internal/installation/install.go` and `move.go`: `bin` must resolve inside the install
//!   directory, `files[].to` must be a clean path, and moves may not leave their directories.
//!
//! krew-release-bot (rajatjindal/krew-release-bot, `pkg/krew/validations.go`) adds: the homepage
//! is under `https://github.com/<repository owner>/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

// ---------------------------------------------------------------------------------------------
// The manifest's shape (krew's pkg/index types). Missing strings default to "" as Go's zero values
// do, so that krew's rules, not the parser, report them. Unknown fields are refused: krew ignores
// them, which would silently drop a misspelt key.

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Plugin {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    #[serde(default)]
    name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    version: String,
    #[serde(default)]
    homepage: String,
    #[serde(default)]
    short_description: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    caveats: String,
    #[serde(default)]
    platforms: Vec<Platform>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Platform {
    selector: Option<Selector>,
    #[serde(default)]
    uri: String,
    #[serde(default)]
    sha256: String,
    #[serde(default)]
    bin: String,
    files: Option<Vec<FileOperation>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    match_labels: Option<BTreeMap<String, String>>,
    match_expressions: Option<Vec<SelectorRequirement>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectorRequirement {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOperation {
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// The name krew-index gives the manifest's file (`plugins/etcdnet.yaml`), which krew validates
/// `metadata.name` against.
const INDEX_NAME: &str = "etcdnet";
const BIN: &str = "kubectl-etcdnet";
/// Windows runs executables by their extension: there the binary is `kubectl-etcdnet.exe`.
const BIN_WINDOWS: &str = "kubectl-etcdnet.exe";
const PLACEHOLDER_SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The platforms we ship, as (os, arch).
const OUR_PLATFORMS: [(&str, &str); 5] = [
    ("linux", "amd64"),
    ("linux", "arm64"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
    ("windows", "amd64"),
];

/// What a platform's archive is called and holds (krew/README.md, "Release archives"): a
/// .tar.gz with `kubectl-etcdnet`, or on Windows a .zip with `kubectl-etcdnet.exe`, and LICENSE.
fn archive_name(version: &str, os: &str, arch: &str) -> String {
    let ext = if os == "windows" { "zip" } else { "tar.gz" };
    format!("kubectl-etcdnet_{version}_{os}_{arch}.{ext}")
}

fn bin_of(os: &str) -> &'static str {
    if os == "windows" {
        BIN_WINDOWS
    } else {
        BIN
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn parse(what: &str, text: &str) -> Plugin {
    serde_yaml_ng::from_str(text)
        .unwrap_or_else(|e| panic!("{what} is not a krew plugin manifest krew could read: {e}"))
}

fn plugin_yaml() -> Plugin {
    parse("plugin.yaml", &read("plugin.yaml"))
}

fn our_version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

fn assert_no_problems(what: &str, problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{what}: {} problem(s):\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    );
}

// ---------------------------------------------------------------------------------------------
// krew's rules.

/// `IsSafePluginName`: `^[\w-]+$` (Go's `\w` is ASCII `[0-9A-Za-z_]`) and not a reserved Windows
/// device name.
fn is_safe_plugin_name(name: &str) -> bool {
    const WINDOWS_FORBIDDEN: [&str; 22] = [
        "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
        "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
    ];
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !WINDOWS_FORBIDDEN
            .iter()
            .any(|f| f.eq_ignore_ascii_case(name))
}

/// krew's `semver.Parse`: a leading `v`, then k8s.io/apimachinery's `ParseSemantic`: exactly three
/// numeric components without leading zeros, then an optional `-pre.release` and `+build`.
fn parse_krew_semver(s: &str) -> Result<(), String> {
    let Some(rest) = s.strip_prefix('v') else {
        return Err(format!("version string {s:?} not starting with 'v'"));
    };
    // versionMatchRE: ^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)*$
    let bytes = rest.as_bytes();
    let mut end = 0;
    loop {
        let start = end;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end == start {
            if start == 0 {
                return Err(format!("could not parse {s:?} as version"));
            }
            end = start - 1; // the '.' we took belongs to the extra part
            break;
        }
        if end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
            end += 1;
        } else {
            break;
        }
    }
    let (numbers, extra) = rest.split_at(end);
    let components: Vec<&str> = numbers.split('.').collect();
    if components.len() != 3 {
        return Err(format!("illegal version string {s:?}"));
    }
    for c in &components {
        if c.starts_with('0') && *c != "0" {
            return Err(format!(
                "illegal zero-prefixed version component {c:?} in {s:?}"
            ));
        }
        c.parse::<u64>()
            .map_err(|e| format!("illegal non-numeric version component {c:?} in {s:?}: {e}"))?;
    }
    // extraMatchRE: ^(?:-(ids))?(?:\+(ids))?\s*$ with ids = [0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*
    let extra = extra.trim_end();
    let ids_ok = |ids: &str| {
        !ids.is_empty()
            && ids.split('.').all(|id| {
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
    };
    let (pre, build) = match extra.split_once('+') {
        Some((pre, build)) => (pre, Some(build)),
        None => (extra, None),
    };
    let pre = if pre.is_empty() {
        None
    } else {
        match pre.strip_prefix('-') {
            Some(p) => Some(p),
            None => {
                return Err(format!(
                    "could not parse pre-release/metadata ({extra}) in version {s:?}"
                ))
            }
        }
    };
    if pre.is_some_and(|p| !ids_ok(p)) || build.is_some_and(|b| !ids_ok(b)) {
        return Err(format!(
            "could not parse pre-release/metadata ({extra}) in version {s:?}"
        ));
    }
    for id in pre.unwrap_or_default().split('.') {
        if id.len() > 1 && id.starts_with('0') && id.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!(
                "illegal zero-prefixed version component {id:?} in {s:?}"
            ));
        }
    }
    Ok(())
}

/// Go's `filepath.Clean` on a slash-separated path.
fn go_clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Whether a path from the manifest stays inside the directory it is joined to (krew's
/// `pathutil.IsSubPath` after `filepath.Join` and `filepath.Abs`): relative, and no `..` that
/// climbs out. Backslashes are refused too: on Windows they are separators.
fn stays_inside(p: &str) -> bool {
    if p.starts_with('/') || p.contains('\\') || p.contains(':') {
        return false;
    }
    let cleaned = go_clean(p);
    cleaned != ".." && !cleaned.starts_with("../")
}

/// krew's `validateSelector`.
fn validate_selector(sel: Option<&Selector>) -> Result<(), String> {
    let Some(sel) = sel else {
        return Err("nil selector is not supported".into());
    };
    let exprs_empty = sel.match_expressions.as_ref().is_none_or(|e| e.is_empty());
    if sel.match_labels.is_none() && exprs_empty {
        return Err("empty selector is not supported".into());
    }
    let keys = sel
        .match_labels
        .iter()
        .flat_map(|m| m.keys())
        .chain(sel.match_expressions.iter().flatten().map(|e| &e.key));
    for key in keys {
        if key != "os" && key != "arch" {
            return Err(format!("key {key:?} not supported"));
        }
    }
    if sel.match_labels.as_ref().is_some_and(|m| m.is_empty()) {
        return Err("`matchLabels` specified but empty".into());
    }
    if sel.match_expressions.as_ref().is_some_and(|e| e.is_empty()) {
        return Err("`matchExpressions` specified but empty".into());
    }
    Ok(())
}

/// krew's `validateFiles`, plus what `move.go` refuses at install time.
fn validate_files(files: Option<&Vec<FileOperation>>) -> Result<(), String> {
    let Some(files) = files else {
        return Ok(());
    };
    if files.is_empty() {
        return Err("`files` has to be unspecified or non-empty".into());
    }
    for op in files {
        if op.from.is_empty() {
            return Err("`from` field has to be set".into());
        }
        if op.to.is_empty() {
            return Err("`to` field has to be set".into());
        }
        if op.to != go_clean(&op.to) {
            return Err(format!(
                "the provided path is not clean, {:?} should be {:?}",
                op.to,
                go_clean(&op.to)
            ));
        }
        if !stays_inside(&op.from) || !stays_inside(&op.to) {
            return Err(format!(
                "can't move, {:?} -> {:?} leaves the archive or the install directory",
                op.from, op.to
            ));
        }
    }
    Ok(())
}

/// krew's `validatePlatform`, plus install.go's check that `bin` resolves inside the install dir.
fn validate_platform(p: &Platform) -> Result<(), String> {
    if p.uri.is_empty() {
        return Err("`uri` has to be set".into());
    }
    if p.sha256.is_empty() {
        return Err("`sha256` sum has to be set".into());
    }
    let sha_ok = p.sha256.len() == 64
        && p.sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !sha_ok {
        return Err(format!(
            "`sha256` value {} is not valid, must match pattern ^[a-f0-9]{{64}}$",
            p.sha256
        ));
    }
    if p.bin.is_empty() {
        return Err("`bin` has to be set".into());
    }
    if !stays_inside(&p.bin) || go_clean(&p.bin) == "." {
        return Err(format!(
            "`bin` {:?} does not resolve to a file inside the installation directory",
            p.bin
        ));
    }
    validate_files(p.files.as_ref()).map_err(|e| format!("`files` is invalid: {e}"))?;
    validate_selector(p.selector.as_ref()).map_err(|e| format!("invalid platform selector: {e}"))
}

/// The os/arch pairs krew-index's validator knows (`allPlatforms` in validate-krew-manifest).
const KREW_PLATFORMS: [(&str, &str); 11] = [
    ("windows", "386"),
    ("windows", "amd64"),
    ("windows", "arm64"),
    ("linux", "386"),
    ("linux", "amd64"),
    ("linux", "arm"),
    ("linux", "arm64"),
    ("linux", "ppc64le"),
    ("darwin", "386"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
];

/// metav1.LabelSelector semantics over the labels {os, arch}.
fn selector_matches(sel: &Selector, os: &str, arch: &str) -> bool {
    let label = |k: &str| match k {
        "os" => Some(os),
        "arch" => Some(arch),
        _ => None,
    };
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| label(k) == Some(v.as_str()));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let v = label(&e.key);
        match e.operator.as_str() {
            "In" => v.is_some_and(|v| e.values.iter().any(|x| x == v)),
            "NotIn" => v.is_none_or(|v| !e.values.iter().any(|x| x == v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            _ => false, // LabelSelectorAsSelector fails: matches nothing
        }
    });
    labels_ok && exprs_ok
}

/// Every rule krew and krew-index's CI apply, as errors (the line lengths are warnings there).
fn krew_problems(name: &str, p: &Plugin) -> Vec<String> {
    let mut out = Vec::new();
    // ValidatePlugin stops at the first failure; we report them all.
    if p.api_version != "krew.googlecontainertools.github.com/v1alpha2" {
        out.push(format!(
            "plugin manifest has apiVersion={:?}, not supported in this version of krew",
            p.api_version
        ));
    }
    if p.kind != "Plugin" {
        out.push(format!(
            "plugin manifest has kind={:?}, but only \"Plugin\" is supported",
            p.kind
        ));
    }
    if !is_safe_plugin_name(name) {
        out.push(format!(
            "the plugin name {name:?} is not allowed, must match \"^[\\w-]+$\""
        ));
    }
    if p.metadata.name != name {
        out.push(format!(
            "plugin should be named {name:?}, not {:?}",
            p.metadata.name
        ));
    }
    if p.spec.short_description.is_empty() {
        out.push("should have a short description".into());
    }
    if p.spec.short_description.contains(['\r', '\n']) {
        out.push("should not have line breaks in short description".into());
    }
    if p.spec.platforms.is_empty() {
        out.push("should have a platform specified".into());
    }
    if p.spec.version.is_empty() {
        out.push("should have a version specified".into());
    } else if let Err(e) = parse_krew_semver(&p.spec.version) {
        out.push(format!("failed to parse plugin version: {e}"));
    }
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        if let Err(e) = validate_platform(pl) {
            out.push(format!("platforms[{i}] is badly constructed: {e}"));
        }
    }

    // validate-krew-manifest: each platform is used, and none overlap.
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        if let Some(sel) = &pl.selector {
            if !KREW_PLATFORMS
                .iter()
                .any(|(os, arch)| selector_matches(sel, os, arch))
            {
                out.push(format!(
                    "spec.platform[{i}]'s selector ({sel:?}) doesn't match any supported platforms"
                ));
            }
        }
    }
    for (os, arch) in KREW_PLATFORMS {
        let matching: Vec<usize> = p
            .spec
            .platforms
            .iter()
            .enumerate()
            .filter(|(_, pl)| {
                pl.selector
                    .as_ref()
                    .is_some_and(|s| selector_matches(s, os, arch))
            })
            .map(|(i, _)| i)
            .collect();
        if matching.len() > 1 {
            out.push(format!(
                "multiple spec.platforms (at indexes {matching:?}) have overlapping selectors that select os={os}/arch={arch}"
            ));
        }
    }
    // validate-krew-manifest: a LICENSE (or alike) file must be installed.
    const LICENSE_FILES: [&str; 8] = [
        "license",
        "license.txt",
        "license.md",
        "licenses",
        "licenses.txt",
        "licenses.md",
        "copying",
        "copying.txt",
    ];
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        let installs_license = match &pl.files {
            None => true, // the default {from: "*", to: "."} takes everything
            Some(ops) => ops.iter().any(|op| {
                let base = op.from.rsplit('/').next().unwrap_or_default();
                op.from == "*" || LICENSE_FILES.contains(&base.to_ascii_lowercase().as_str())
            }),
        };
        if !installs_license {
            out.push(format!(
                "platforms[{i}]: no LICENSE (or alike) file is extracted from the archive"
            ));
        }
    }
    // validate-krew-manifest's line-length warnings, held as errors here.
    for (field, text, max) in [
        ("description", &p.spec.description, 80),
        ("shortDescription", &p.spec.short_description, 70),
        ("caveats", &p.spec.caveats, 80),
    ] {
        for line in text.lines() {
            if line.len() > max && line.trim().contains(' ') {
                out.push(format!(
                    "line length in `{field}` exceeds {max} characters: {line:?}"
                ));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Our rules.

fn project_problems(p: &Plugin) -> Vec<String> {
    project_problems_for(p, &OUR_PLATFORMS)
}

/// Our rules, for a manifest that carries the platforms `want` (all of ours, or the ones whose
/// archives a local build made).
fn project_problems_for(p: &Plugin, want: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let version = our_version();
    let name = &p.metadata.name;
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !name_ok {
        out.push(format!(
            "metadata.name {name:?} must match ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
        ));
    }
    if name == "kubectl" || name.starts_with("kubectl-") || name.starts_with("kube-") {
        out.push(format!(
            "metadata.name {name:?}: krew's naming guide rules out kubectl itself and kube-/kubectl- prefixes"
        ));
    }
    if name != INDEX_NAME {
        out.push(format!(
            "metadata.name is {name:?}, the plugin is {INDEX_NAME:?}"
        ));
    }
    if p.spec.version != version {
        out.push(format!(
            "spec.version is {:?}, Cargo.toml's version says {version:?}",
            p.spec.version
        ));
    }
    let repo = env!("CARGO_PKG_REPOSITORY");
    if p.spec.homepage != repo {
        out.push(format!(
            "spec.homepage is {:?}, Cargo.toml's repository is {repo:?}",
            p.spec.homepage
        ));
    }
    // krew-release-bot's ValidateOwnership: the homepage must be under the releasing owner.
    let owner = repo
        .strip_prefix("https://github.com/")
        .and_then(|r| r.split('/').next())
        .unwrap_or_default();
    if owner.is_empty()
        || !p
            .spec
            .homepage
            .starts_with(&format!("https://github.com/{owner}/"))
    {
        out.push(format!(
            "spec.homepage {:?} is not under https://github.com/{owner}/ (krew-release-bot refuses it)",
            p.spec.homepage
        ));
    }
    let short = p.spec.short_description.chars().count();
    if short >= 50 {
        out.push(format!(
            "shortDescription has {short} characters: keep it under 50 (krew's guidance: a few words)"
        ));
    }
    if p.spec.description.trim().is_empty() {
        out.push("spec.description is empty".into());
    }
    for needle in ["2379", "2380", "Supervisor", "control-plane"] {
        if !p.spec.description.contains(needle) {
            out.push(format!("spec.description should mention {needle:?}"));
        }
    }
    // The caveats name every permission docs/rbac.yaml grants.
    for needle in [
        "clusters",
        "machines",
        "cluster.x-k8s.io",
        "kubeadmcontrolplanes",
        "controlplane.cluster.x-k8s.io",
        "virtualmachines",
        "vmoperator.vmware.com",
        "vspheremachines",
        "vmware.infrastructure.cluster.x-k8s.io",
        "deletecollection",
        "ClusterRole",
        "secrets",
        "<cluster>-kubeconfig",
        "<cluster>-ssh",
        "pods",
        "pods/log",
        "create",
        "watch",
        "delete",
        "discovery",
        "Supervisor",
    ] {
        if !p.spec.caveats.contains(needle) {
            out.push(format!(
                "spec.caveats should name the RBAC it needs: {needle:?} is missing"
            ));
        }
    }

    let mut seen = Vec::new();
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        let labels = pl.selector.as_ref().and_then(|s| s.match_labels.as_ref());
        let (Some(os), Some(arch)) = (
            labels.and_then(|l| l.get("os")),
            labels.and_then(|l| l.get("arch")),
        ) else {
            out.push(format!(
                "platforms[{i}]: select with matchLabels os and arch"
            ));
            continue;
        };
        if pl
            .selector
            .as_ref()
            .is_some_and(|s| s.match_expressions.is_some() || labels.is_some_and(|l| l.len() != 2))
        {
            out.push(format!(
                "platforms[{i}]: select with exactly matchLabels os and arch"
            ));
        }
        seen.push((os.clone(), arch.clone()));
        let bin = bin_of(os);
        if pl.bin != bin {
            out.push(format!("platforms[{i}]: bin is {:?}, want {bin:?}", pl.bin));
        }
        let want_uri = format!(
            "https://github.com/etcdnet/kubectl-etcdnet/releases/download/{version}/{}",
            archive_name(&version, os, arch)
        );
        if pl.uri != want_uri {
            out.push(format!(
                "platforms[{i}] ({os}/{arch}): uri is {:?}, want {want_uri:?}",
                pl.uri
            ));
        }
        let want_files = vec![
            FileOperation {
                from: bin.into(),
                to: ".".into(),
            },
            FileOperation {
                from: "LICENSE".into(),
                to: ".".into(),
            },
        ];
        if pl.files.as_ref() != Some(&want_files) {
            out.push(format!(
                "platforms[{i}] ({os}/{arch}): files are {:?}, want {want_files:?} (the archive holds the binary and LICENSE at its root)",
                pl.files
            ));
        }
    }
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(o, a)| (o.to_string(), a.to_string()))
        .collect();
    let mut sorted_seen = seen.clone();
    sorted_seen.sort();
    let mut sorted_want = want.clone();
    sorted_want.sort();
    if sorted_seen != sorted_want {
        out.push(format!("platforms are {seen:?}, want {want:?}"));
    }
    // Before the first release every sha256 is the placeholder; after it, none is.
    let placeholders = p
        .spec
        .platforms
        .iter()
        .filter(|pl| pl.sha256 == PLACEHOLDER_SHA)
        .count();
    if placeholders != 0 && placeholders != p.spec.platforms.len() {
        out.push(format!(
            "{placeholders} of {} platforms still have the placeholder sha256: fill them all from the release (krew/README.md)",
            p.spec.platforms.len()
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The release template: rendered as krew-release-bot does (Go text/template with the release's
// tag as .TagName and its `addURIAndSha` function). `sha` gives the sha256 of the archive at a
// URL, as the bot computes it from the download: a stand-in in the tests, the real archive's in
// `rendered_release_manifest`.

type ShaOf<'a> = &'a dyn Fn(&str) -> Result<String, String>;

fn render_template(src: &str, tag: &str, sha: ShaOf) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = src;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let mut action = &rest[start + 2..];
        if let Some(a) = action.strip_prefix("- ") {
            out.truncate(out.trim_end().len());
            action = a;
        }
        // A comment ends at "*/", with an optional trim marker before the "}}".
        if action.starts_with("/*") {
            let close = action
                .find("*/")
                .ok_or_else(|| format!("unclosed comment at {:?}", &rest[start..]))?;
            let after = &action[close + 2..];
            rest = if let Some(r) = after.strip_prefix(" -}}") {
                r.trim_start()
            } else if let Some(r) = after.strip_prefix("}}") {
                r
            } else {
                return Err(format!(
                    "a comment must end with */}} or */ -}}, at {after:?}"
                ));
            };
            continue;
        }
        // The action ends at the first "}}" outside a quoted string.
        let mut in_string = false;
        let mut escaped = false;
        let mut end = None;
        for (i, c) in action.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_string => escaped = true,
                '"' => in_string = !in_string,
                '}' if !in_string && action[i..].starts_with("}}") => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or_else(|| format!("unclosed action at {:?}", &rest[start..]))?;
        let mut inner = &action[..end];
        rest = &action[end + 2..];
        if let Some(i) = inner.strip_suffix(" -") {
            inner = i;
            rest = rest.trim_start();
        }
        let inner = inner.trim();
        if inner == ".TagName" {
            out.push_str(tag);
            continue;
        }
        let Some(call) = inner.strip_prefix("addURIAndSha ") else {
            return Err(format!(
                "template action {{{{{inner}}}}} is not one krew-release-bot provides"
            ));
        };
        let call = call.trim_start();
        let url_tpl = call
            .strip_prefix('"')
            .and_then(|c| c.find('"').map(|q| (&c[..q], c[q + 1..].trim())))
            .filter(|(_, arg)| *arg == ".TagName")
            .map(|(url, _)| url)
            .ok_or_else(|| format!("expected addURIAndSha \"<url>\" .TagName, got {inner:?}"))?;
        let url = render_template(url_tpl, tag, sha)?;
        // The bot's output assumes the platform's keys are indented by four spaces.
        out.push_str(&format!("uri: {url}\n    sha256: {}", sha(&url)?));
    }
    out.push_str(rest);
    Ok(out)
}

fn rendered_template(tag: &str) -> Plugin {
    // A sha the YAML reads as a string, as real ones are in practice.
    let sha = |_: &str| Ok("ab".repeat(32));
    let text = render_template(&read("krew/.krew.yaml"), tag, &sha)
        .unwrap_or_else(|e| panic!("krew/.krew.yaml does not render: {e}"));
    parse(&format!("krew/.krew.yaml rendered for {tag}"), &text)
}

fn without_shas(mut p: Plugin) -> Plugin {
    for pl in &mut p.spec.platforms {
        pl.sha256.clear();
    }
    p
}

// ---------------------------------------------------------------------------------------------
// The release's own manifest: krew/.krew.yaml rendered with the sha256 of archives built from
// this tree, and the archives themselves. `scripts/release.sh check` runs it (locally and in
// .ci/run for linux/amd64, in the release workflow for all five platforms); it needs archives,
// so the plain test run leaves it ignored.

/// The sha256 of a file, in the lower-case hex krew wants.
fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One file in an archive: its name, its unix mode where the format keeps one, its bytes.
struct Entry {
    name: String,
    mode: Option<u32>,
    data: Vec<u8>,
}

fn tar_gz_entries(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    use std::io::Read;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = Vec::new();
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        let name = entry
            .path()
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let mode = entry.header().mode().ok();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(|e| e.to_string())?;
        out.push(Entry { name, mode, data });
    }
    Ok(out)
}

/// A zip's files from its central directory (APPNOTE.TXT 4.3.12, 4.3.16), each read through its
/// local header: stored or deflated, the two methods `zip` and Python's zipfile write.
fn zip_entries(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    use std::io::Read;
    let u16_at = |o: usize| -> Result<usize, String> {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
            .ok_or_else(|| "truncated zip".to_string())
    };
    let u32_at = |o: usize| -> Result<usize, String> {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| "truncated zip".to_string())
    };
    let eocd = (0..bytes.len().saturating_sub(21))
        .rev()
        .find(|&o| bytes[o..].starts_with(&[0x50, 0x4b, 0x05, 0x06]))
        .ok_or("no end of central directory: not a zip")?;
    let count = u16_at(eocd + 10)?;
    let mut at = u32_at(eocd + 16)?;
    let mut out = Vec::new();
    for _ in 0..count {
        if !bytes[at..].starts_with(&[0x50, 0x4b, 0x01, 0x02]) {
            return Err(format!("bad central directory entry at {at}"));
        }
        let method = u16_at(at + 10)?;
        let size = u32_at(at + 20)?;
        let (name_len, extra_len, comment_len) =
            (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let local = u32_at(at + 42)?;
        let name = String::from_utf8_lossy(
            bytes
                .get(at + 46..at + 46 + name_len)
                .ok_or("truncated zip")?,
        )
        .into_owned();
        // A zip made on unix keeps the mode in the upper half of the external attributes.
        let mode = (u16_at(at + 4)? >> 8 == 3).then(|| (u32_at(at + 38).unwrap_or(0) >> 16) as u32);
        let start = local + 30 + u16_at(local + 26)? + u16_at(local + 28)?;
        let raw = bytes.get(start..start + size).ok_or("truncated zip")?;
        let data = match method {
            0 => raw.to_vec(),
            8 => {
                let mut d = Vec::new();
                flate2::read::DeflateDecoder::new(raw)
                    .read_to_end(&mut d)
                    .map_err(|e| format!("{name}: {e}"))?;
                d
            }
            m => {
                return Err(format!(
                    "{name}: compression method {m} is neither stored nor deflate"
                ))
            }
        };
        out.push(Entry { name, mode, data });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// What the archive behind one platform must be: the file the uri names, with the manifest's
/// sha256 and its `.sha256` file, holding exactly the binary and LICENSE at its root.
fn archive_problems(dist: &Path, os: &str, arch: &str, pl: &Platform) -> Vec<String> {
    let name = archive_name(&our_version(), os, arch);
    let path = dist.join(&name);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => return vec![format!("{os}/{arch}: cannot read {}: {e}", path.display())],
    };
    let mut out = Vec::new();
    let sha = sha256_hex(&bytes);
    if pl.sha256 != sha {
        out.push(format!(
            "{os}/{arch}: sha256 is {}, the archive's is {sha}",
            pl.sha256
        ));
    }
    match std::fs::read_to_string(dist.join(format!("{name}.sha256"))) {
        Ok(line) if line == format!("{sha}  {name}\n") => {}
        Ok(line) => out.push(format!(
            "{name}.sha256 says {line:?}, want \"{sha}  {name}\\n\""
        )),
        Err(e) => out.push(format!("{name}.sha256: {e}")),
    }
    let entries = if os == "windows" {
        zip_entries(&bytes)
    } else {
        tar_gz_entries(&bytes)
    };
    let entries = match entries {
        Ok(e) => e,
        Err(e) => {
            out.push(format!("{name}: unreadable: {e}"));
            return out;
        }
    };
    let bin = bin_of(os);
    let mut names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    let mut want = vec![bin, "LICENSE"];
    want.sort_unstable();
    if names != want {
        out.push(format!(
            "{name} holds {names:?}, want exactly {want:?} at its root (krew/README.md)"
        ));
    }
    for e in &entries {
        if e.name == "LICENSE" && e.data != read("LICENSE").as_bytes() {
            out.push(format!("{name}: LICENSE is not the repository's"));
        }
        if e.name == bin {
            if e.data.len() < 100_000 {
                out.push(format!("{name}: {bin} is {} bytes", e.data.len()));
            }
            if e.mode.is_some_and(|m| m & 0o111 == 0) {
                out.push(format!(
                    "{name}: {bin} is not executable (mode {:o})",
                    e.mode.unwrap_or(0)
                ));
            }
        }
    }
    out
}

/// Drops the platforms whose archive was not built (their sha256 is `absent`) from the rendered
/// text: a local build makes one platform's archive, and its manifest offers only that one.
fn without_absent_platforms(text: &str) -> String {
    let Some(at) = text.find("\n  platforms:\n") else {
        return text.to_string();
    };
    let (head, platforms) = text.split_at(at + "\n  platforms:\n".len());
    let mut blocks: Vec<String> = Vec::new();
    for line in platforms.split_inclusive('\n') {
        if line.starts_with("  - ") || blocks.is_empty() {
            blocks.push(String::new());
        }
        blocks.last_mut().unwrap().push_str(line);
    }
    let kept: String = blocks
        .into_iter()
        .filter(|b| !b.contains("\n    sha256: absent"))
        .collect();
    format!("{head}{kept}")
}

#[test]
#[ignore = "needs release archives: scripts/release.sh check runs it"]
fn rendered_release_manifest() {
    let dist = PathBuf::from(std::env::var("ETCDNET_RELEASE_DIST").expect(
        "ETCDNET_RELEASE_DIST must name the directory of the release archives (scripts/release.sh check)",
    ));
    let all = std::env::var("ETCDNET_RELEASE_ALL").is_ok_and(|v| v == "1");
    let tag = our_version();
    // The bot downloads each archive to hash it; here it is the file of that name in `dist`.
    let sha = |url: &str| -> Result<String, String> {
        let name = url.rsplit('/').next().unwrap_or_default();
        match std::fs::read(dist.join(name)) {
            Ok(bytes) => Ok(sha256_hex(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !all => Ok("absent".into()),
            Err(e) => Err(format!("{name}: {e}")),
        }
    };
    let text = render_template(&read("krew/.krew.yaml"), &tag, &sha)
        .unwrap_or_else(|e| panic!("krew/.krew.yaml does not render: {e}"));
    let text = without_absent_platforms(&text);
    let manifest = parse("the rendered release manifest", &text);
    let present: Vec<(&str, &str)> = OUR_PLATFORMS
        .iter()
        .copied()
        .filter(|(os, arch)| dist.join(archive_name(&tag, os, arch)).exists())
        .collect();
    assert!(
        !present.is_empty(),
        "no archive for {tag} in {}",
        dist.display()
    );
    let mut problems = krew_problems(INDEX_NAME, &manifest);
    problems.extend(project_problems_for(&manifest, &present));
    if manifest
        .spec
        .platforms
        .iter()
        .any(|pl| pl.sha256 == PLACEHOLDER_SHA)
    {
        problems.push("a release manifest carries the placeholder sha256".into());
    }
    for pl in &manifest.spec.platforms {
        let labels = pl.selector.as_ref().and_then(|s| s.match_labels.as_ref());
        if let (Some(os), Some(arch)) = (
            labels.and_then(|l| l.get("os")),
            labels.and_then(|l| l.get("arch")),
        ) {
            problems.extend(archive_problems(&dist, os, arch, pl));
        }
    }
    assert_no_problems(
        &format!(
            "krew/.krew.yaml rendered for {tag} with the archives in {}",
            dist.display()
        ),
        problems,
    );
    let out = dist.join("etcdnet.yaml");
    std::fs::write(&out, &text).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    eprintln!(
        "{}: {} platform(s): {}",
        out.display(),
        present.len(),
        present
            .iter()
            .map(|(os, arch)| format!("{os}/{arch}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn plugin_yaml_passes_krew_validation() {
    assert_no_problems(
        "plugin.yaml against krew's validation",
        krew_problems(INDEX_NAME, &plugin_yaml()),
    );
}

#[test]
fn plugin_yaml_follows_project_rules() {
    let p = plugin_yaml();
    assert_no_problems("plugin.yaml against our rules", project_problems(&p));
    if p.spec
        .platforms
        .iter()
        .any(|pl| pl.sha256 == PLACEHOLDER_SHA)
    {
        eprintln!(
            "note: plugin.yaml carries placeholder sha256 values until the first release (krew/README.md)"
        );
    }
}

#[test]
fn release_template_renders_to_plugin_yaml() {
    let rendered = rendered_template(&our_version());
    assert_no_problems(
        "krew/.krew.yaml (rendered) against krew's validation",
        krew_problems(INDEX_NAME, &rendered),
    );
    let ours = plugin_yaml();
    // Field by field first, for a readable failure.
    for (field, a, b) in [
        (
            "metadata.name",
            &rendered.metadata.name,
            &ours.metadata.name,
        ),
        ("spec.version", &rendered.spec.version, &ours.spec.version),
        (
            "spec.homepage",
            &rendered.spec.homepage,
            &ours.spec.homepage,
        ),
        (
            "spec.shortDescription",
            &rendered.spec.short_description,
            &ours.spec.short_description,
        ),
        (
            "spec.description",
            &rendered.spec.description,
            &ours.spec.description,
        ),
        ("spec.caveats", &rendered.spec.caveats, &ours.spec.caveats),
    ] {
        assert_eq!(
            a, b,
            "{field} differs between krew/.krew.yaml (rendered, left) and plugin.yaml (right)"
        );
    }
    assert_eq!(
        without_shas(rendered),
        without_shas(ours),
        "krew/.krew.yaml rendered for {} (left) differs from plugin.yaml (right) beyond the sha256 values",
        our_version()
    );
}

#[test]
fn release_template_follows_the_tag() {
    // A tag unlike ours: a version written into the template instead of {{ .TagName }} shows.
    let tag = "v12.34.5";
    let p = rendered_template(tag);
    assert_eq!(
        p.spec.version, tag,
        "spec.version must be {{{{ .TagName }}}}"
    );
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        assert!(
            pl.uri.contains(&format!("/download/{tag}/kubectl-etcdnet_{tag}_")),
            "platforms[{i}].uri must use {{{{ .TagName }}}} for the release and the archive name: {}",
            pl.uri
        );
        assert!(
            !pl.uri.contains(env!("CARGO_PKG_VERSION")),
            "platforms[{i}].uri has a fixed version: {}",
            pl.uri
        );
        assert_eq!(
            pl.sha256,
            "ab".repeat(32),
            "platforms[{i}].sha256 must come from addURIAndSha"
        );
    }
}

#[test]
fn license_is_apache_2() {
    let text = read("LICENSE");
    assert!(
        text.contains("Apache License") && text.contains("Version 2.0, January 2004"),
        "LICENSE must be the Apache-2.0 text (Cargo.toml says {})",
        env!("CARGO_PKG_LICENSE")
    );
    assert!(
        text.contains("END OF TERMS AND CONDITIONS"),
        "LICENSE is cut short"
    );
    assert!(
        text.contains("Copyright 2026 The kubectl-etcdnet Authors"),
        "LICENSE lacks the copyright line"
    );
}

/// The checks above must fail on a broken manifest: break plugin.yaml in one way at a time and
/// look for krew's (or our) complaint.
#[test]
fn broken_manifests_are_rejected() {
    type Breakage = (&'static str, fn(&mut Plugin), &'static str);
    let cases: Vec<Breakage> = vec![
        (
            "old apiVersion",
            |p| p.api_version = "krew.googlecontainertools.github.com/v1alpha1".into(),
            "apiVersion",
        ),
        ("kind", |p| p.kind = "Plugins".into(), "kind="),
        (
            "name differs from the index file",
            |p| p.metadata.name = "etcd-net".into(),
            "plugin should be named",
        ),
        (
            "name is kubectl",
            |p| p.metadata.name = "kubectl".into(),
            "rules out kubectl",
        ),
        (
            "upper-case name",
            |p| p.metadata.name = "EtcdNet".into(),
            "must match ^[a-z0-9]",
        ),
        (
            "no shortDescription",
            |p| p.spec.short_description.clear(),
            "should have a short description",
        ),
        (
            "two-line shortDescription",
            |p| p.spec.short_description = "a\nb".into(),
            "line breaks",
        ),
        (
            "long shortDescription",
            |p| p.spec.short_description = "x ".repeat(30),
            "under 50",
        ),
        (
            "no version",
            |p| p.spec.version.clear(),
            "should have a version",
        ),
        (
            "version without v",
            |p| p.spec.version = "0.1.0".into(),
            "not starting with 'v'",
        ),
        (
            "two-part version",
            |p| p.spec.version = "v0.1".into(),
            "illegal version string",
        ),
        (
            "zero-prefixed version",
            |p| p.spec.version = "v0.01.0".into(),
            "zero-prefixed",
        ),
        (
            "bad pre-release",
            |p| p.spec.version = "v0.1.0_rc1".into(),
            "pre-release",
        ),
        (
            "version not Cargo's",
            |p| p.spec.version = "v0.2.0".into(),
            "Cargo.toml's version",
        ),
        (
            "no platforms",
            |p| p.spec.platforms.clear(),
            "should have a platform",
        ),
        (
            "no uri",
            |p| p.spec.platforms[0].uri.clear(),
            "`uri` has to be set",
        ),
        (
            "no sha256",
            |p| p.spec.platforms[0].sha256.clear(),
            "`sha256` sum has to be set",
        ),
        (
            "upper-case sha256",
            |p| p.spec.platforms[0].sha256 = "AB".repeat(32),
            "is not valid",
        ),
        (
            "short sha256",
            |p| p.spec.platforms[0].sha256 = "ab".repeat(31),
            "is not valid",
        ),
        (
            "mixed placeholder sha256",
            |p| {
                let sha = &mut p.spec.platforms[0].sha256;
                *sha = if sha == PLACEHOLDER_SHA {
                    "ab".repeat(32)
                } else {
                    PLACEHOLDER_SHA.into()
                };
            },
            "placeholder",
        ),
        (
            "no bin",
            |p| p.spec.platforms[0].bin.clear(),
            "`bin` has to be set",
        ),
        (
            "bin climbs out",
            |p| p.spec.platforms[0].bin = "../kubectl-etcdnet".into(),
            "inside the installation",
        ),
        (
            "bin climbs out deeper",
            |p| p.spec.platforms[0].bin = "a/../../x".into(),
            "inside the installation",
        ),
        (
            "absolute bin",
            |p| p.spec.platforms[0].bin = "/usr/bin/kubectl-etcdnet".into(),
            "inside the installation",
        ),
        (
            "other bin",
            |p| p.spec.platforms[0].bin = "etcdnet".into(),
            "bin is",
        ),
        (
            "empty files",
            |p| p.spec.platforms[0].files = Some(vec![]),
            "unspecified or non-empty",
        ),
        (
            "files without from",
            |p| p.spec.platforms[0].files.as_mut().unwrap()[0].from.clear(),
            "`from` field has to be set",
        ),
        (
            "files without to",
            |p| p.spec.platforms[0].files.as_mut().unwrap()[0].to.clear(),
            "`to` field has to be set",
        ),
        (
            "unclean to",
            |p| p.spec.platforms[0].files.as_mut().unwrap()[0].to = "./bin/".into(),
            "not clean",
        ),
        (
            "to climbs out",
            |p| p.spec.platforms[0].files.as_mut().unwrap()[0].to = "../x".into(),
            "leaves the archive",
        ),
        (
            "no LICENSE installed",
            |p| {
                p.spec.platforms[0].files.as_mut().unwrap().pop();
            },
            "LICENSE",
        ),
        (
            "no selector",
            |p| p.spec.platforms[0].selector = None,
            "nil selector",
        ),
        (
            "empty selector",
            |p| {
                p.spec.platforms[0].selector = Some(Selector {
                    match_labels: None,
                    match_expressions: None,
                })
            },
            "empty selector",
        ),
        (
            "selector on an unknown key",
            |p| {
                p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .unwrap()
                    .match_labels
                    .as_mut()
                    .unwrap()
                    .insert("libc".into(), "musl".into());
            },
            "not supported",
        ),
        (
            "empty matchLabels",
            |p| p.spec.platforms[0].selector.as_mut().unwrap().match_labels = Some(BTreeMap::new()),
            "empty",
        ),
        (
            "unknown platform",
            |p| {
                p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .unwrap()
                    .match_labels
                    .as_mut()
                    .unwrap()
                    .insert("os".into(), "plan9".into());
            },
            "doesn't match any supported platforms",
        ),
        (
            "duplicate selector",
            |p| p.spec.platforms[1].selector = p.spec.platforms[0].selector.clone(),
            "overlapping selectors",
        ),
        (
            "overlapping expression",
            |p| {
                p.spec.platforms[3].selector = Some(Selector {
                    match_labels: None,
                    match_expressions: Some(vec![SelectorRequirement {
                        key: "os".into(),
                        operator: "In".into(),
                        values: vec!["linux".into(), "darwin".into()],
                    }]),
                });
            },
            "overlapping selectors",
        ),
        (
            "platform missing",
            |p| {
                p.spec.platforms.pop();
            },
            "platforms are",
        ),
        (
            "uri of another version",
            |p| p.spec.platforms[0].uri = p.spec.platforms[0].uri.replace("v0.", "v9."),
            "uri is",
        ),
        (
            "long caveats line",
            |p| p.spec.caveats.push_str(&"word ".repeat(20)),
            "exceeds 80",
        ),
        (
            "caveats without RBAC",
            |p| p.spec.caveats = "Run it in the Supervisor context.".into(),
            "caveats should name the RBAC",
        ),
        (
            "homepage elsewhere",
            |p| p.spec.homepage = "https://example.com/etcdnet".into(),
            "homepage",
        ),
    ];
    let good = plugin_yaml();
    assert_no_problems("the unbroken manifest", {
        let mut all = krew_problems(INDEX_NAME, &good);
        all.extend(project_problems(&good));
        all
    });
    let mut missed = Vec::new();
    for (what, breakage, expect) in cases {
        let mut p = good.clone();
        breakage(&mut p);
        let mut problems = krew_problems(INDEX_NAME, &p);
        problems.extend(project_problems(&p));
        if !problems.iter().any(|m| m.contains(expect)) {
            missed.push(format!(
                "{what}: expected a problem containing {expect:?}, got {problems:?}"
            ));
        }
    }
    assert_no_problems("breakages the checks did not catch", missed);

    // A misspelt key must not pass silently either.
    let misspelt = read("plugin.yaml").replace("shortDescription:", "shortDescripton:");
    let err = serde_yaml_ng::from_str::<Plugin>(&misspelt)
        .unwrap_err()
        .to_string();
    assert!(err.contains("shortDescripton"), "unexpected error: {err}");
}

#[test]
fn krew_semver_matches_apimachinery() {
    for ok in [
        "v0.1.0",
        "v1.2.3",
        "v10.20.30",
        "v1.0.0-rc.1",
        "v1.0.0-alpha-1",
        "v1.0.0+build.5",
        "v1.0.0-rc.1+sha.abc",
    ] {
        assert_eq!(parse_krew_semver(ok), Ok(()), "{ok}");
    }
    for bad in [
        "",
        "1.0.0",
        "v1",
        "v1.0",
        "v1.0.0.0",
        "v01.0.0",
        "v1.0.0-",
        "v1.0.0-rc.01",
        "v1.0.0.",
        "vx.y.z",
        "v1.0.0_1",
        "v1.0.0-rc..1",
    ] {
        assert!(parse_krew_semver(bad).is_err(), "{bad:?} should be refused");
    }
}

#[test]
fn go_clean_matches_filepath_clean() {
    for (input, want) in [
        (".", "."),
        ("", "."),
        ("./", "."),
        ("a/", "a"),
        ("a//b", "a/b"),
        ("a/./b", "a/b"),
        ("a/../b", "b"),
        ("../a", "../a"),
        ("a/../..", ".."),
        ("/../a", "/a"),
    ] {
        assert_eq!(go_clean(input), want, "{input:?}");
    }
    assert!(stays_inside("kubectl-etcdnet") && stays_inside("bin/x") && stays_inside("."));
    assert!(!stays_inside("..") && !stays_inside("a/../../b") && !stays_inside("/x"));
    assert!(Path::new(&root().join("plugin.yaml")).exists());
}
