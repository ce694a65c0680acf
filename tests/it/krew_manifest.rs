//! This plugin's krew manifest (plugin.yaml) and its release template (krew/.krew.yaml): the
//! fields krew reads, our five platforms, each archive's URI, the sha256 shape, the version in
//! step with Cargo.toml, and the template rendering to the same manifest. krew-index's own CI
//! validates a manifest against krew's rules when it is submitted; this checks ours.
//!
//! `rendered_release_manifest` (ignored; `scripts/release.sh check` runs it, and CI's
//! `release-archive` job through it) renders the template with the real archives' sha256 and
//! checks the archives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

// ---------------------------------------------------------------------------------------------
// The manifest's shape (krew's pkg/index types, the fields this plugin uses). Unknown fields are
// refused: krew ignores them, which would silently drop a misspelt key.

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
// The checks.

fn problems(p: &Plugin) -> Vec<String> {
    problems_for(p, &OUR_PLATFORMS)
}

/// Everything checked of a manifest that carries the platforms `want` (all of ours, or the ones
/// whose archives a local build made): krew's fixed header, then our fields.
fn problems_for(p: &Plugin, want: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    if p.api_version != "krew.googlecontainertools.github.com/v1alpha2" {
        out.push(format!("apiVersion is {:?}", p.api_version));
    }
    if p.kind != "Plugin" {
        out.push(format!("kind is {:?}, krew reads \"Plugin\"", p.kind));
    }
    if p.spec.short_description.trim().is_empty() || p.spec.short_description.contains('\n') {
        out.push("shortDescription must be one non-empty line".into());
    }
    // krew-index's CI warns past 80 characters a line.
    for (field, text) in [
        ("description", &p.spec.description),
        ("caveats", &p.spec.caveats),
    ] {
        if let Some(l) = text.lines().find(|l| l.chars().count() > 80) {
            out.push(format!("{field} has a line over 80 characters: {l:?}"));
        }
    }
    for (i, pl) in p.spec.platforms.iter().enumerate() {
        let hex = pl.sha256.len() == 64
            && pl
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !hex {
            out.push(format!(
                "platforms[{i}]: sha256 {:?} is not 64 lower-case hex digits",
                pl.sha256
            ));
        }
    }
    out.extend(project_problems_for(p, want));
    out
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
// this tree, and the archives themselves. `scripts/release.sh check` runs it (locally, in CI's
// release-archive job for linux/amd64, in the release workflow for all five platforms); it
// needs archives, so the plain test run leaves it ignored.

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
    let mut problems = problems_for(&manifest, &present);
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
fn plugin_yaml_is_our_manifest() {
    let p = plugin_yaml();
    assert_no_problems("plugin.yaml", problems(&p));
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
    assert_no_problems("krew/.krew.yaml (rendered)", problems(&rendered));
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

/// The checks must fail on a broken manifest: break plugin.yaml in one way at a time and look
/// for the complaint.
#[test]
fn broken_manifests_are_rejected() {
    type Breakage = (&'static str, fn(&mut Plugin), &'static str);
    let cases: Vec<Breakage> = vec![
        (
            "old apiVersion",
            |p| p.api_version = "krew.googlecontainertools.github.com/v1alpha1".into(),
            "apiVersion",
        ),
        ("kind", |p| p.kind = "Plugins".into(), "kind"),
        (
            "another name",
            |p| p.metadata.name = "etcd-net".into(),
            "the plugin is",
        ),
        (
            "two-line shortDescription",
            |p| p.spec.short_description = "a\nb".into(),
            "one non-empty line",
        ),
        (
            "long description line",
            |p| p.spec.description.push_str(&"x".repeat(81)),
            "over 80",
        ),
        (
            "version not Cargo's",
            |p| p.spec.version = "v9.9.9".into(),
            "Cargo.toml's version",
        ),
        (
            "homepage elsewhere",
            |p| p.spec.homepage = "https://example.com/etcdnet".into(),
            "homepage",
        ),
        (
            "no platforms",
            |p| p.spec.platforms.clear(),
            "platforms are",
        ),
        (
            "a platform twice",
            |p| {
                let first = p.spec.platforms[0].clone();
                p.spec.platforms[1] = first;
            },
            "platforms are",
        ),
        (
            "uri of another version",
            |p| p.spec.platforms[0].uri = p.spec.platforms[0].uri.replace("v0.", "v9."),
            "uri is",
        ),
        (
            "upper-case sha256",
            |p| p.spec.platforms[0].sha256 = "AB".repeat(32),
            "64 lower-case hex",
        ),
        (
            "short sha256",
            |p| p.spec.platforms[0].sha256 = "ab".repeat(31),
            "64 lower-case hex",
        ),
        (
            "mixed placeholder sha256",
            |p| {
                for (i, pl) in p.spec.platforms.iter_mut().enumerate() {
                    pl.sha256 = if i == 0 {
                        "ab".repeat(32)
                    } else {
                        PLACEHOLDER_SHA.into()
                    };
                }
            },
            "placeholder",
        ),
        (
            "other bin",
            |p| p.spec.platforms[0].bin = "etcdnet".into(),
            "bin is",
        ),
        (
            "no LICENSE",
            |p| {
                if let Some(f) = p.spec.platforms[0].files.as_mut() {
                    f.pop();
                }
            },
            "files are",
        ),
        (
            "selector on more than os and arch",
            |p| {
                if let Some(l) = p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .and_then(|s| s.match_labels.as_mut())
                {
                    l.insert("libc".into(), "musl".into());
                }
            },
            "exactly matchLabels os and arch",
        ),
        (
            "caveats lose an RBAC rule",
            |p| p.spec.caveats = p.spec.caveats.replace("pods/log", "pods"),
            "pods/log",
        ),
    ];
    let good = plugin_yaml();
    assert_no_problems("the unbroken manifest", problems(&good));
    let mut missed = Vec::new();
    for (what, breakage, expect) in cases {
        let mut p = good.clone();
        breakage(&mut p);
        let found = problems(&p);
        if !found.iter().any(|m| m.contains(expect)) {
            missed.push(format!(
                "{what}: expected a problem containing {expect:?}, got {found:?}"
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
