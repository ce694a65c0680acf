//! Bundles read and written with the tar and gzip crates, not the plugin's own reader and
//! writer: what a test checks in an archive, or plants in one, does not go through the code
//! under test.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use flate2::write::GzEncoder;

/// The archive's entries, by path, in the order they were written.
pub fn entries(bundle: &Path) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(File::open(bundle).unwrap());
    tar::Archive::new(gz)
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let path = e.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (path, bytes)
        })
        .collect()
}

/// A .tar.gz at `bundle` holding what `fill` appends (a raw header may carry a name the
/// builder's own path checks would refuse).
pub fn write_with(bundle: &Path, fill: impl FnOnce(&mut tar::Builder<GzEncoder<File>>)) {
    let file = File::create(bundle).unwrap();
    let mut b = tar::Builder::new(GzEncoder::new(file, flate2::Compression::default()));
    fill(&mut b);
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// A .tar.gz at `bundle` holding `entries` as regular files, mode 0644.
pub fn write_entries(bundle: &Path, entries: &[(String, Vec<u8>)]) {
    write_with(bundle, |b| {
        for (path, bytes) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, path, bytes.as_slice()).unwrap();
        }
    });
}

/// The bundle at `path` with its manifest changed by `edit`, written to `out` (`path` itself
/// for an edit in place): a bundle written at another time, by another command, or doctored.
pub fn edit_manifest(path: &Path, out: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut files = entries(path);
    let m = files
        .iter_mut()
        .find(|(p, _)| p == "manifest.json")
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&m.1).unwrap();
    edit(&mut v);
    m.1 = serde_json::to_vec(&v).unwrap();
    write_entries(out, &files);
}
