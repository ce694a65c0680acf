//! The library's layering, as `src/lib.rs` draws it: each module imports only modules below it,
//! so stages never call back up (into a command, the command line or an earlier stage's logic).
//! A new module must be placed in [`LAYERS`]; an import against the order fails here with the
//! file and the line.

use std::path::{Path, PathBuf};

/// Top to bottom. Modules on one line are one layer (they may not import each other either:
/// they are leaves).
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["commands"],
    &["bundle"],
    &["plan"],
    &["route"],
    &["render"],
    &["report"],
    &["analyse"],
    &["workload"],
    &["supervisor"],
    &["connect"],
    &["probe"],
    &["names", "labels", "progress", "signal", "error"],
    &["bounds"],
];

/// Test-only support, free to use what it builds.
const EXEMPT: &[&str] = &["testing"];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/route/pod.rs` → `route`; `src/plan.rs` → `plan`.
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// Every `crate::<name>` a line mentions.
fn crate_refs(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        // `etcdnet_fakeapi::crate::` never occurs; `$crate::` and `super::crate` are not ours.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    // `use crate::{a, b::c}` names several.
    if let Some(group) = line.trim().strip_prefix("use crate::{") {
        for part in group.split(',') {
            let name: String = part
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn every_module_imports_only_modules_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    let mut unplaced = Vec::new();
    for file in &files {
        let module = top_module(&src, file);
        if ["lib", "main", "bin"].contains(&module.as_str()) || EXEMPT.contains(&module.as_str()) {
            continue;
        }
        let Some(own) = layer(&module) else {
            unplaced.push(module);
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for target in crate_refs(line) {
                if target == module || EXEMPT.contains(&target.as_str()) {
                    continue;
                }
                match layer(&target) {
                    Some(l) if l > own => {}
                    _ => violations.push(format!(
                        "{}:{}: `{module}` imports `{target}`, which is not below it: {}",
                        file.strip_prefix(&src).unwrap().display(),
                        n + 1,
                        line.trim()
                    )),
                }
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (and from the drawing in src/lib.rs): {unplaced:?}"
    );
    assert!(
        violations.is_empty(),
        "imports against the layering:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_layer_list_is_the_one_lib_rs_draws() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let drawn: String = LAYERS
        .iter()
        .map(|l| {
            if l.len() == 1 {
                l[0].to_string()
            } else {
                format!("{{{}}}", l.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(" · ");
    let flat: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains(&format!("lib · {drawn}")),
        "src/lib.rs should draw the layers as: lib · {drawn}"
    );
}

#[test]
fn the_checker_sees_imports() {
    assert_eq!(crate_refs("use crate::cli::Cli;"), ["cli"]);
    assert_eq!(
        crate_refs("use crate::{analyse, supervisor, workload};"),
        ["analyse", "supervisor", "workload"]
    );
    assert_eq!(crate_refs("let x = crate::error::chain(&e);"), ["error"]);
    assert!(crate_refs("use etcdnet::cli;").is_empty());
}
