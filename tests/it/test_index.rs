//! tests/README.md stays a true index: it names every test module of each crate's test binary,
//! every file of the workspace's crates that holds tests, and every bench script. And the suite
//! holds tests only: the one `#[ignore]`d kind is a lab test's helper process, never a tool;
//! and every lab test is under a module `lab`.

use std::path::Path;

use crate::common::read;

/// The `mod x;` lines of a module file.
fn modules(rel: &str) -> Vec<String> {
    let text = read(rel);
    let names = text
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'));
    names.map(String::from).collect()
}

/// The README's section under the `## ` heading that starts with `heading`.
fn section<'a>(readme: &'a str, heading: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {heading}"))
        .unwrap_or_else(|| panic!("tests/README.md has no section \"## {heading}\""));
    let rest = &readme[start + 1..];
    rest.find("\n## ").map_or(rest, |end| &rest[..end])
}

/// Every `.rs` file under `dir` (relative to the repository), as paths relative to `dir`.
fn rust_files(dir: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = Vec::new();
    let mut todo = vec![root.clone()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy();
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((rel.replace('\\', "/"), text));
            }
        }
    }
    out.sort();
    out
}

/// The files under `dir` that hold tests.
fn files_with_tests(dir: &str) -> Vec<String> {
    let has_tests = |t: &str| t.contains("#[test]") || t.contains("proptest!");
    let files = rust_files(dir).into_iter().filter(|(_, t)| has_tests(t));
    files.map(|(rel, _)| rel).collect()
}

fn missing(text: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    let absent = |n: &String| !text.contains(&format!("`{n}`"));
    names.into_iter().filter(absent).collect()
}

#[test]
fn the_readme_names_every_test_module_and_file() {
    let readme = read("tests/README.md");
    let mut found = Vec::new();
    let mut check = |what: &str, text: &str, names: Vec<String>| {
        found.extend(
            missing(text, names)
                .into_iter()
                .map(|n| format!("{what}: `{n}`")),
        );
    };
    let plugin = section(&readme, "The plugin's tests");
    let it = modules("tests/it/main.rs")
        .into_iter()
        .filter(|m| m != "lab");
    check("tests/it", plugin, it.collect());
    let lab = section(&readme, "The lab tests");
    let lab_modules = modules("tests/it/lab/mod.rs").into_iter();
    check(
        "tests/it/lab",
        lab,
        lab_modules.map(|m| format!("lab::{m}")).collect(),
    );

    let fake = section(&readme, "The fake API server's tests");
    let fake_it = modules("tests/fakeapi/tests/it/main.rs").into_iter();
    let fake_lab = modules("tests/fakeapi/tests/it/lab/mod.rs").into_iter();
    let fake_modules = fake_it.filter(|m| m != "lab");
    let all = fake_modules.chain(fake_lab.map(|m| format!("lab::{m}")));
    check("tests/fakeapi/tests/it", fake, all.collect());
    check(
        "tests/fakeapi/src",
        fake,
        files_with_tests("tests/fakeapi/src"),
    );
    let lab_crate = section(&readme, "The lab's own tests");
    check(
        "tests/lab/src",
        lab_crate,
        files_with_tests("tests/lab/src"),
    );

    let unit = [
        section(&readme, "Unit tests"),
        section(&readme, "Property tests"),
    ]
    .concat();
    check("src", &unit, files_with_tests("src"));

    let bench = section(&readme, "Benchmarks");
    let scripts = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bench"));
    let scripts = scripts
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap());
    check("tests/bench", bench, scripts.collect());

    let list = found.join("\n  ");
    let fix = "add each to its section of tests/README.md, one line";
    assert!(
        found.is_empty(),
        "tests/README.md does not name ({fix}):\n  {list}"
    );
}

/// What regenerates a fixture, measures or checks a release is a tool (tests/README.md, "Tools,
/// not tests"): an ignored test would be run by nobody and rot. Only a lab test's helper process
/// (a child the test starts with `--ignored --exact`) is ignored on purpose.
#[test]
fn no_tool_hides_in_the_suite_as_an_ignored_test() {
    let attribute = concat!("#[", "ignore");
    let mut found = Vec::new();
    for dir in ["src", "tests", "xtask/src"] {
        for (rel, text) in rust_files(dir) {
            for line in text
                .lines()
                .filter(|l| l.trim_start().starts_with(attribute))
            {
                if !line.contains("= \"helper process of ") {
                    found.push(format!("{dir}/{rel}: {}", line.trim()));
                }
            }
        }
    }
    let list = found.join("\n  ");
    assert!(
        found.is_empty(),
        "ignored tests that are not helper processes:\n  {list}"
    );
}

/// Every lab test is under a module `lab` (or in a test binary of the lab crate, each named in
/// the group's filter): the quick suite's filter and nextest's `lab` group
/// (`.config/nextest.toml`) find them by that path.
#[test]
fn every_lab_test_is_under_lab() {
    let gate = concat!("cfg_attr(not(", "etcdnet_lab)");
    let mut found = Vec::new();
    for dir in [
        "tests/it",
        "tests/fakeapi/tests/it",
        "tests/fakeapi/src",
        "src",
    ] {
        for (rel, text) in rust_files(dir) {
            if text.contains(gate) && !rel.starts_with("lab/") {
                found.push(format!("{dir}/{rel}"));
            }
        }
    }
    // The lab crate's own test binaries (tests/lab/tests/) are named one by one in the group's
    // filter: a new one left out would run beside five labs, uncapped.
    let nextest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".config/nextest.toml"))
            .unwrap();
    for (rel, text) in rust_files("tests/lab/tests") {
        let binary = format!("binary({})", rel.trim_end_matches(".rs"));
        if text.contains(gate) && !nextest.contains(&binary) {
            found.push(format!(
                "tests/lab/tests/{rel} (no {binary} in .config/nextest.toml)"
            ));
        }
    }
    let list = found.join("\n  ");
    assert!(
        found.is_empty(),
        "lab tests outside a module `lab`:\n  {list}"
    );
}
