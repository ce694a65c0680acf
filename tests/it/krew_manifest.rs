//! This plugin's krew manifest (plugin.yaml) and its krew-release-bot template (krew/.krew.yaml).
//! krew's validation (kubernetes-sigs/krew: internal/index/validation/validate.go's
//! `ValidatePlugin`, and cmd/validate-krew-manifest/main.go, which krew-index's CI runs) is
//! generic; here are its rules as they apply to our one manifest, made exact:
//! - apiVersion `krew.googlecontainertools.github.com/v1alpha2`, kind `Plugin`;
//! - metadata.name is the index file's name, `etcdnet`; a one-line shortDescription;
//! - a semver version with its `v`: ours is Cargo.toml's;
//! - each platform: a uri, a sha256 matching `^[a-f0-9]{64}$`, a bin, `files` with from and to,
//!   a selector on os and arch only; no platform matched twice; a LICENSE installed.
//!
//! Ours on top: exactly our five platforms and our release's URIs, the binary's name, no
//! misspelt key (krew decodes leniently and would drop it), readable docs fields, the template
//! rendering to plugin.yaml. `broken_manifests_are_rejected` proves that each check can fail.
//!
//! The release renders the template with the archives' real sha256 and checks the archives
//! (`cargo xtask krew-manifest`, which `scripts/release.sh check` runs), with the renderer
//! checked here.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

use serde::Deserialize;
use xtask::krew::render;

// Every field is required and no other is allowed: a missing or misspelt key is a parse error.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Plugin {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    version: String,
    homepage: String,
    short_description: String,
    description: String,
    caveats: String,
    platforms: Vec<Platform>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Platform {
    selector: Selector,
    uri: String,
    sha256: String,
    files: Vec<FileOp>,
    bin: String,
}

// matchExpressions is an unknown field here: ours select by matchLabels alone.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOp {
    from: String,
    to: String,
}

const NAME: &str = "etcdnet";
const PLACEHOLDER_SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const PLATFORMS: [(&str, &str); 5] = [
    ("linux", "amd64"),
    ("linux", "arm64"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
    ("windows", "amd64"),
];
/// What the caveats must name: the context, and the permissions the plugin cannot work without.
const CAVEATS: &str = "Supervisor clusters machines cluster.x-k8s.io kubeadmcontrolplanes \
    controlplane.cluster.x-k8s.io virtualmachines vmoperator.vmware.com vspheremachines \
    vmware.infrastructure.cluster.x-k8s.io secrets <cluster>-kubeconfig <cluster>-ssh pods \
    pods/log create watch delete deletecollection discovery ClusterRole";

/// Windows runs executables by their extension.
fn bin_of(os: &str) -> String {
    let exe = if os == "windows" { ".exe" } else { "" };
    format!("kubectl-etcdnet{exe}")
}

/// The release archive of a platform (krew/README.md, "Release archives").
fn archive_name(tag: &str, os: &str, arch: &str) -> String {
    let ext = if os == "windows" { "zip" } else { "tar.gz" };
    format!("kubectl-etcdnet_{tag}_{os}_{arch}.{ext}")
}

fn our_tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

fn read(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Plugin, String> {
    serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
}

fn assert_none(what: &str, problems: Vec<String>) {
    let list = problems.join("\n  - ");
    assert!(problems.is_empty(), "{what}:\n  - {list}");
}

fn eq<T: PartialEq + Debug + ?Sized>(out: &mut Vec<String>, what: &str, got: &T, want: &T) {
    if got != want {
        out.push(format!("{what} is {got:?}, want {want:?}"));
    }
}

/// The problems of a manifest that offers the platforms `want`: all of ours, or those whose
/// archives a local build made.
fn problems(p: &Plugin, want: &[(&str, &str)]) -> Vec<String> {
    let (s, tag, repo) = (&p.spec, our_tag(), env!("CARGO_PKG_REPOSITORY"));
    let mut out = Vec::new();
    let api = "krew.googlecontainertools.github.com/v1alpha2";
    eq(&mut out, "apiVersion", p.api_version.as_str(), api);
    eq(&mut out, "kind", p.kind.as_str(), "Plugin");
    // krew wants the name of the index's file, plugins/etcdnet.yaml.
    eq(&mut out, "metadata.name", p.metadata.name.as_str(), NAME);
    eq(&mut out, "spec.version", &s.version, &tag);
    eq(&mut out, "spec.homepage", s.homepage.as_str(), repo);
    // krew refuses an empty or multi-line one; its guide asks for a few words (`krew search`).
    let short = &s.short_description;
    if short.trim().is_empty() || short.contains(['\r', '\n']) || short.chars().count() >= 50 {
        out.push(format!("shortDescription {short:?}: not one short line"));
    }
    // `kubectl krew info` and the install print these as written: no line a terminal wraps.
    let description = "2379 2380 Supervisor control-plane";
    let docs = [
        ("description", &s.description, description),
        ("caveats", &s.caveats, CAVEATS),
    ];
    for (field, text, needles) in docs {
        if let Some(long) = text.lines().find(|l| l.chars().count() > 80) {
            out.push(format!("{field} has a line over 80: {long:?}"));
        }
        let missing = needles.split_whitespace().filter(|n| !text.contains(n));
        out.extend(missing.map(|n| format!("{field} does not mention {n:?}")));
    }
    let mut seen = Vec::new();
    for (i, pl) in s.platforms.iter().enumerate() {
        let labels = &pl.selector.match_labels;
        let (Some(os), Some(arch), 2) = (labels.get("os"), labels.get("arch"), labels.len()) else {
            out.push(format!("platforms[{i}].selector: {labels:?}"));
            continue;
        };
        seen.push((os.as_str(), arch.as_str()));
        let at = |field: &str| format!("platforms[{i}] ({os}/{arch}) {field}");
        let archive = archive_name(&tag, os, arch);
        let uri = format!("{repo}/releases/download/{tag}/{archive}");
        eq(&mut out, &at("uri"), &pl.uri, &uri);
        let hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
        if pl.sha256.len() != 64 || !pl.sha256.bytes().all(hex) {
            let (field, sha) = (at("sha256"), &pl.sha256);
            out.push(format!("{field} {sha:?} is not ^[a-f0-9]{{64}}$"));
        }
        let bin = bin_of(os);
        eq(&mut out, &at("bin"), &pl.bin, &bin);
        let to = String::from(".");
        let (from, license) = (bin, "LICENSE".into());
        let files = [from, license].map(|from| FileOp {
            from,
            to: to.clone(),
        });
        eq(&mut out, &at("files"), &pl.files[..], &files);
    }
    // krew-index refuses two platforms matching one os/arch; ours are exact.
    let (mut sorted, mut want) = (seen.clone(), want.to_vec());
    sorted.sort();
    want.sort();
    if sorted != want {
        out.push(format!("platforms are {seen:?}, want {want:?}"));
    }
    // Before the first release every sha256 is the placeholder; after it, none is.
    let placeholders = s.platforms.iter().filter(|pl| pl.sha256 == PLACEHOLDER_SHA);
    let (n, all) = (placeholders.count(), s.platforms.len());
    if n != 0 && n != all {
        out.push(format!("{n} of {all} sha256 values are the placeholder"));
    }
    out
}

/// The template's problems: rendered for our tag it is plugin.yaml but for the sha256 values,
/// every sha256 is addURIAndSha's, and for another tag only the tag changes.
fn template_problems(template: &str, plugin: &Plugin) -> Vec<String> {
    let stand_in = "ab".repeat(32);
    let (tag, other) = (our_tag(), "v12.34.5");
    let rendered = |tag: &str| render(template, tag, &|_| Ok(stand_in.clone()));
    let ours = match rendered(&tag).and_then(|t| parse(&t).map(|p| (t, p))) {
        Ok(ours) => ours,
        Err(e) => return vec![format!("krew/.krew.yaml for {tag}: {e}")],
    };
    let at = format!("krew/.krew.yaml for {tag}");
    let ours_problems = problems(&ours.1, &PLATFORMS).into_iter();
    let mut out: Vec<String> = ours_problems.map(|m| format!("{at}: {m}")).collect();
    if ours.1.spec.platforms.iter().any(|pl| pl.sha256 != stand_in) {
        out.push(format!("{at}: a sha256 not addURIAndSha's"));
    }
    let [a, b] = [ours.1, plugin.clone()].map(|mut p| {
        p.spec.platforms.iter_mut().for_each(|pl| pl.sha256.clear());
        format!("{p:#?}")
    });
    if a != b {
        let first = a.lines().zip(b.lines()).find(|(x, y)| x != y);
        out.push(format!("{at} differs from plugin.yaml: {first:?}"));
    }
    if rendered(other) != Ok(ours.0.replace(&tag, other)) {
        let what = "more than the tag changes (a fixed version?)";
        out.push(format!("krew/.krew.yaml for {other}: {what}"));
    }
    out
}

/// Everything checked of a plugin.yaml and a krew/.krew.yaml.
fn all_problems(plugin: &str, template: &str) -> Vec<String> {
    match parse(plugin) {
        Ok(p) => [problems(&p, &PLATFORMS), template_problems(template, &p)].concat(),
        Err(e) => vec![format!("plugin.yaml: {e}")],
    }
}

#[test]
fn plugin_yaml_and_its_template_pass() {
    let found = all_problems(&read("plugin.yaml"), &read("krew/.krew.yaml"));
    assert_none("plugin.yaml and krew/.krew.yaml", found);
}

#[test]
fn license_is_apache_2() {
    // Cargo.toml's license, the LICENSE every platform installs: whole, with our copyright.
    let text = read("LICENSE");
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
    let parts = "Apache License|Version 2.0, January 2004|END OF TERMS AND CONDITIONS|\
        Copyright 2026 The kubectl-etcdnet Authors";
    for needle in parts.split('|') {
        assert!(text.contains(needle), "LICENSE lacks {needle:?}");
    }
}

/// Each check fails on the manifest broken its way: (file, what, replaced by, a problem with).
#[test]
fn broken_manifests_are_rejected() {
    let (tag, tpl, r) = (our_tag(), "{{ .TagName }}", env!("CARGO_PKG_REPOSITORY"));
    let sha = |s: &str| format!("linux_amd64.tar.gz\n    sha256: \"{s}\"");
    let url = format!("{r}/releases/download/{tpl}/kubectl-etcdnet_{tpl}_linux_amd64.tar.gz");
    let (p, k) = ("plugin.yaml", "krew/.krew.yaml");
    #[rustfmt::skip]
    let cases: [(&str, &str, String, &str); 26] = [
        (p, "shortDescription:", "shortDescripton:".into(), "unknown field"),
        (p, "matchLabels:", "matchExpressions:".into(), "unknown field"),
        (p, "/v1alpha2", "/v1alpha1".into(), "apiVersion"),
        (p, "kind: Plugin", "kind: Plugins".into(), "kind"),
        (p, "name: etcdnet", "name: etcd-net".into(), "metadata.name"),
        (p, "version: v", "version: v9".into(), "spec.version"),
        (p, "homepage: https://github.com/", "homepage: https://gitlab.com/".into(), "homepage"),
        (p, "shortDescription: ", "shortDescription: |\n    ".into(), "shortDescription"),
        (p, "VKS clusters\n", "VKS clusters on vSphere Supervisors\n".into(), "shortDescription"),
        (p, "probe pods.", "probe pods, each one deleted when its checks are done.".into(), "over 80"),
        (p, "2379", "the client port".into(), "description does not mention \"2379\""),
        (p, "pods/log", "pods".into(), "caveats does not mention \"pods/log\""),
        (p, "arch: arm64\n", "arch: arm64\n        libc: musl\n".into(), "selector"),
        (p, "darwin\n        arch: arm64", "darwin\n        arch: amd64".into(), "platforms are"),
        (p, "_windows_amd64.zip", "_windows_amd64.tar.gz".into(), "uri is"),
        (p, &sha(PLACEHOLDER_SHA), sha(&"AB".repeat(32)), "sha256"),
        (p, &sha(PLACEHOLDER_SHA), sha(&"ab".repeat(31)), "sha256"),
        (p, &sha(PLACEHOLDER_SHA), sha(&"ab".repeat(32)), "placeholder"),
        (p, "bin: kubectl-etcdnet.exe", "bin: kubectl-etcdnet".into(), "bin is"),
        (p, "from: kubectl-etcdnet.exe", "from: kubectl-etcdnet".into(), "files is"),
        (p, "    - from: LICENSE\n      to: .\n", "".into(), "files is"),
        (k, &format!("version: {tpl}"), format!("version: {tag}"), "more than the tag"),
        (k, &format!("_{tpl}_linux_arm64"), format!("_{tag}_linux_arm64"), "more than the tag"),
        (k, tpl, "{{ .Tag }}".into(), "not an action"),
        (k, "probe pods.", "pods.".into(), "differs from plugin.yaml"),
        (k, &format!("{{{{addURIAndSha \"{url}\" .TagName }}}}"),
            format!("uri: {url}\n    sha256: \"{}\"", "cd".repeat(32)), "not addURIAndSha's"),
    ];
    let (plugin, template) = (read(p), read(k));
    assert_none("the unbroken manifest", all_problems(&plugin, &template));
    let mut missed = Vec::new();
    for (file, from, to, expect) in cases {
        let (mut p, mut t) = (plugin.clone(), template.clone());
        let text = if file == k { &mut t } else { &mut p };
        assert!(text.contains(from), "{file} no longer has {from:?}");
        *text = text.replace(from, &to);
        let found = all_problems(&p, &t);
        // A template's breakage must show in the template's problems.
        let theirs = |m: &String| file == "plugin.yaml" || m.starts_with("krew/.krew.yaml for");
        if !found.iter().any(|m| m.contains(expect) && theirs(m)) {
            let m = format!("{file}: {from:?} -> {to:?}: no {expect:?} in {found:?}");
            missed.push(m);
        }
    }
    assert_none("breakages no check caught", missed);
}
