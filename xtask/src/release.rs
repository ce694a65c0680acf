//! The release's krew manifest: krew/.krew.yaml rendered with the real sha256 of the archives
//! `scripts/release.sh pack` made, and each archive checked against it (krew/README.md,
//! "Release archives"). The manifest's other rules are the test suite's: rendered for any tag
//! the template is plugin.yaml but for the sums, and plugin.yaml passes krew's rules
//! (tests/it/krew_manifest.rs), so here only the sums and the archives are new.

use std::path::Path;

use serde_yaml_ng::Value;

use crate::krew;

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The files of an archive, with their unix mode where the archive keeps one.
fn archive_files(name: &str, bytes: &[u8]) -> Result<Vec<(String, Option<u32>)>, String> {
    if !name.ends_with(".zip") {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
        let entries = archive.entries().map_err(|e| e.to_string())?;
        return entries
            .map(|e| {
                let e = e.map_err(|e| e.to_string())?;
                let path = e.path().map_err(|e| e.to_string())?;
                Ok((path.to_string_lossy().into_owned(), e.header().mode().ok()))
            })
            .collect();
    }
    // A zip's central directory (APPNOTE.TXT 4.3.12, 4.3.16): the names (Windows needs no mode).
    let int = |o: usize, n: usize| -> Result<usize, String> {
        let b = bytes.get(o..o + n).ok_or("truncated zip")?;
        Ok(b.iter().rev().fold(0, |v, &x| v << 8 | x as usize))
    };
    let end = |o: &usize| bytes[*o..].starts_with(b"PK\x05\x06");
    let ends = (0..bytes.len().saturating_sub(21)).rev();
    let eocd = ends.into_iter().find(end).ok_or("not a zip")?;
    let mut at = int(eocd + 16, 4)?;
    (0..int(eocd + 10, 2)?)
        .map(|_| {
            let (n, skip) = (int(at + 28, 2)?, int(at + 30, 2)? + int(at + 32, 2)?);
            let name = bytes.get(at + 46..at + 46 + n).ok_or("truncated zip")?;
            at += 46 + n + skip;
            Ok((String::from_utf8_lossy(name).into_owned(), None))
        })
        .collect()
}

/// The archive behind one platform of the rendered manifest: the file its uri names, with the
/// manifest's sha256 and a `.sha256` file, holding the `bin` (executable) and LICENSE, no more.
fn platform_problems(dist: &Path, platform: &Value) -> Vec<String> {
    let field = |key: &str| {
        platform
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (uri, want_sha, bin) = (field("uri"), field("sha256"), field("bin"));
    let name = uri.rsplit('/').next().unwrap_or_default();
    let bytes = match std::fs::read(dist.join(name)) {
        Ok(b) => b,
        Err(e) => return vec![format!("{name:?} (uri {uri:?}): {e}")],
    };
    let (sha, mut out) = (sha256_hex(&bytes), Vec::new());
    if want_sha != sha {
        out.push(format!(
            "{name}: the manifest's sha256 is {want_sha:?}, the archive's {sha}"
        ));
    }
    let line = std::fs::read_to_string(dist.join(format!("{name}.sha256")));
    let (line, want) = (
        line.unwrap_or_else(|e| e.to_string()),
        format!("{sha}  {name}\n"),
    );
    if line != want {
        out.push(format!("{name}.sha256 is {line:?}, want {want:?}"));
    }
    let files = archive_files(name, &bytes).unwrap_or_else(|e| vec![(e, None)]);
    let mut names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let mut want = ["LICENSE", bin];
    want.sort_unstable();
    if names != want {
        out.push(format!("{name}: files {names:?}, want {want:?}"));
    }
    for (_, mode) in files.iter().filter(|(n, _)| n == bin) {
        if let Some(m) = mode.filter(|m| m & 0o111 == 0) {
            out.push(format!("{name}: {bin} is not executable: {m:o}"));
        }
    }
    out
}

/// The rendered text without the platforms whose archive was not built (sha256 `absent`): a
/// local build makes one platform's archive, and its manifest offers that one only.
fn without_absent(text: &str) -> String {
    let mut parts = text.split("\n  - selector:");
    let head = parts.next().unwrap_or_default().to_string();
    parts
        .filter(|p| !p.contains("\n    sha256: absent"))
        .fold(head, |acc, p| acc + "\n  - selector:" + p)
}

/// The template rendered for `tag` with the sums of the archives in `dist` (every platform's
/// when `all`, else those there), checked, and written to `dist/etcdnet.yaml`; the archives.
pub fn manifest(template: &str, tag: &str, dist: &Path, all: bool) -> Result<Vec<String>, String> {
    // The bot downloads each archive to hash it; here it is the file of that name in `dist`.
    let sha = |url: &str| {
        let name = url.rsplit('/').next().unwrap_or_default();
        match std::fs::read(dist.join(name)) {
            Ok(bytes) => Ok(sha256_hex(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !all => Ok("absent".into()),
            Err(e) => Err(format!("{name}: {e}")),
        }
    };
    let mut text = krew::render(template, tag, &sha)
        .map(|t| without_absent(&t))
        .map_err(|e| format!("krew/.krew.yaml does not render: {e}"))?;
    // Without the last platform, the text ends where its separator's newline was.
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let doc: Value =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("the rendered manifest: {e}"))?;
    let platforms = doc["spec"]["platforms"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    if platforms.is_empty() {
        return Err(format!("no archive for {tag} in {}", dist.display()));
    }
    let problems: Vec<String> = (platforms.iter())
        .flat_map(|pl| platform_problems(dist, pl))
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "krew/.krew.yaml for {tag}:\n  - {}",
            problems.join("\n  - ")
        ));
    }
    let out = dist.join("etcdnet.yaml");
    std::fs::write(&out, &text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let uris = platforms.iter().filter_map(|pl| pl["uri"].as_str());
    Ok(uris
        .map(|u| u.rsplit('/').next().unwrap_or(u).to_string())
        .collect())
}
