//! The library's layering, as `src/lib.rs` draws it: each module imports only modules below it,
//! so stages never call back up (into a command, the command line or an earlier stage's logic).
//!
//! The checker walks the module tree from `src/lib.rs` (`mod x;`, `#[path]`, inline `mod x {`),
//! reads every `crate::`, `super::` and `self::` path (in `use` trees and in code), resolves it
//! to the module it names, and lifts each import to the two sibling modules it runs between
//! (`route::ssh::options` → `route::jumpbox` is `route::ssh` → `route::jumpbox` in the folder
//! `route`). Three checks on that graph:
//! - no cycle anywhere (the failure prints the cycle's path and the lines that make it);
//! - the top-level modules follow [`LAYERS`], the drawing in `src/lib.rs`;
//! - the submodules of each folder follow that folder's order in [`FOLDERS`].
//!
//! A new module must be placed (in [`LAYERS`] or its folder's line in [`FOLDERS`]); an import
//! against the order fails here with the file and the line.

use std::collections::{BTreeMap, BTreeSet};
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
    &["nsxmanager"],
    &["supervisor"],
    &["connect"],
    &["probe"],
    &["command"],
    &["names", "labels", "progress", "selector", "error", "when"],
    &["signal"],
    &["bounds"],
];

/// The order inside each folder, top to bottom, as [`LAYERS`] is for the crate: a submodule
/// imports only siblings below it. Modules on one line are one layer and may not import each
/// other. Test modules (`tests`, `*_tests`) are outside the order: they may import any sibling,
/// and only test modules import them.
const FOLDERS: &[(&str, &[&[&str]])] = &[
    (
        "commands",
        &[
            &["analyse", "cleanup", "status"],
            &["diagnose"],
            &["watch"],
            &["round"],
            &["many"],
            &["nsx"],
        ],
    ),
    (
        "route",
        &[
            &["via"],
            &["pod"],
            &["jumpbox"],
            &["ssh"],
            &["leftovers", "lifecycle"],
        ],
    ),
    (
        "route::jumpbox",
        &[
            &["session"],
            &["shared"],
            &["keeper"],
            &["framing"],
            &["spec"],
        ],
    ),
    (
        "route::ssh",
        &[
            &["session"],
            &["client", "ports", "run_dir", "secret"],
            &["options"],
        ],
    ),
    (
        "route::lifecycle",
        &[&["run"], &["wait"], &["log"], &["tracker"], &["failure"]],
    ),
    ("bundle", &[&["read", "write"]]),
    (
        "render",
        &[
            &["watch"],
            &["summary"],
            &["case", "cleanup", "compare", "diagnose", "list", "status"],
            &[
                "network",
                "location",
                "metrics",
                "nsx_manager",
                "timeline",
                "html",
                "markdown",
            ],
            &["guard", "sheet", "firewall"],
        ],
    ),
    (
        "report",
        &[
            &["schema"],
            &["watch"],
            &["compare", "evidence", "list"],
            &["v1alpha2"],
        ],
    ),
    (
        "report::v1alpha2",
        &[
            &["guard", "location", "nsx_manager"],
            &["analysis", "metrics", "network", "timeline"],
            &["cluster"],
            &["node"],
            &["firewall"],
        ],
    ),
    (
        "analyse",
        &[
            &["status"],
            &["manager"],
            &["network"],
            &["verdict"],
            &["location"],
            &["guard"],
            &["metrics"],
            &["timeline"],
            &["traceflow"],
            &["dfw"],
            &["matrix", "policy", "clock", "realization"],
            &["firewall"],
        ],
    ),
    (
        "nsxmanager",
        &[
            &["bound"],
            &["enforce"],
            &["read", "traceflow"],
            &["client"],
            &["identify"],
            &["model"],
            &["raw"],
        ],
    ),
    ("analyse::dfw", &[&["enforce"]]),
    (
        "analyse::policy",
        &[&["evaluate"], &["validate"], &["model"]],
    ),
    (
        "analyse::verdict",
        &[
            &["api_server"],
            &[
                "network",
                "seen",
                "crash_looping",
                "not_running",
                "certificate_problem",
            ],
            &[
                "node",
                "machines_missing",
                "nodes_unreachable",
                "member_mismatch",
                "no_space",
                "client_port_blocked",
            ],
            &["notes"],
            &["slow_disk"],
            &["evidence"],
            &["members"],
            &["placement"],
        ],
    ),
    (
        "supervisor",
        &[
            &["read"],
            &["inventory"],
            &["remediation"],
            &["network"],
            &["targets"],
            &["join"],
            &["rollout"],
            &["stack"],
            &["extract"],
            &["discovery"],
            &["kinds"],
            &["facts"],
            &["address"],
        ],
    ),
    (
        "probe",
        &[
            &["script"],
            &["parse"],
            &["paths", "etcdask"],
            &["apiserver", "identity", "metrics"],
            &["output"],
            &["etcdlog", "firewall"],
            &["hostkey", "frame"],
        ],
    ),
    ("probe::parse", &[&["framed"], &["raw"], &["bounds"]]),
    ("probe::firewall", &[&["read"]]),
    (
        "probe::etcdlog",
        &[&["episode", "leader", "window"], &["line"], &["time"]],
    ),
];

/// Test-only support, free to use what it builds.
const EXEMPT: &[&str] = &["testing"];

/// A module's path from the crate root: `route::ssh` is `["route", "ssh"]`; the crate is `[]`.
type ModPath = Vec<String>;

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// One import, as read: the module whose code holds it, the module it names, and where.
#[derive(Clone, Debug)]
struct Import {
    from: ModPath,
    to: ModPath,
    file: String,
    line: usize,
    text: String,
}

/// The crate as the checker reads it: every module, and every import between modules.
#[derive(Debug, Default)]
struct Crate {
    modules: BTreeSet<ModPath>,
    /// The files the walk reached, relative to `src/`.
    files: BTreeSet<String>,
    imports: Vec<Import>,
}

/// Reads the crate from its root file `lib.rs`; `read` returns a file's text by its path
/// relative to `src/` (the test of the test passes a synthetic crate).
fn read_crate(read: &dyn Fn(&str) -> Option<String>) -> Crate {
    let mut krate = Crate::default();
    krate.modules.insert(Vec::new());
    // (file, its module, the folder its `mod x;` children live in)
    let mut todo = vec![("lib.rs".to_string(), Vec::new(), String::new())];
    let mut sources = Vec::new();
    while let Some((file, module, dir)) = todo.pop() {
        let text = read(&file).unwrap_or_else(|| panic!("src/{file}: declared but not found"));
        krate.files.insert(file.clone());
        let lines = code_lines(&text);
        let contexts = inline_modules(&lines, &module);
        for m in &contexts {
            krate.modules.insert(m.clone());
        }
        for (n, line) in lines.iter().enumerate() {
            let Some(name) = declared_file_module(line) else {
                continue;
            };
            if contexts[n] != module {
                continue; // `mod x;` inside an inline module: none in this crate
            }
            let mut child = module.clone();
            child.push(name.clone());
            let path_attr = n
                .checked_sub(1)
                .and_then(|p| path_attribute(lines[p]))
                .or_else(|| n.checked_sub(2).and_then(|p| path_attribute(lines[p])));
            let (child_file, child_dir) = match path_attr {
                // Relative to the declaring file's directory, as rustc reads `#[path]`.
                Some(p) => {
                    let parent = Path::new(&file).parent().unwrap_or(Path::new(""));
                    let f = parent.join(p).to_string_lossy().into_owned();
                    let d = f.trim_end_matches(".rs").to_string();
                    (f, d)
                }
                None => {
                    let d = join(&dir, &name);
                    let flat = format!("{d}.rs");
                    if read(&flat).is_some() {
                        (flat, d)
                    } else {
                        (format!("{d}/mod.rs"), d)
                    }
                }
            };
            krate.modules.insert(child.clone());
            todo.push((child_file, child, child_dir));
        }
        sources.push((file, contexts, text));
    }
    for (file, contexts, text) in sources {
        let lines = code_lines(&text);
        for n in 0..lines.len() {
            for path in paths_at(&lines, n) {
                let Some(to) = resolve(&contexts[n], &path, &krate.modules) else {
                    continue;
                };
                krate.imports.push(Import {
                    from: contexts[n].clone(),
                    to,
                    file: file.clone(),
                    line: n + 1,
                    text: lines[n].trim().to_string(),
                });
            }
        }
    }
    krate
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The file's lines with comment lines blanked (doc links such as ``[`super::x`]`` are no
/// imports), so line numbers stay the file's.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect()
}

/// `mod x;` (with any visibility) → `x`.
fn declared_file_module(line: &str) -> Option<String> {
    let rest = strip_visibility(line.trim()).strip_prefix("mod ")?;
    let name = rest.strip_suffix(';')?;
    is_ident(name).then(|| name.to_string())
}

/// `mod x {` (with any visibility) → `x`.
fn declared_inline_module(line: &str) -> Option<String> {
    let rest = strip_visibility(line.trim()).strip_prefix("mod ")?;
    let name = rest.strip_suffix(" {")?;
    is_ident(name).then(|| name.to_string())
}

fn strip_visibility(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix("pub(") {
        return rest.split_once(") ").map_or(line, |(_, r)| r);
    }
    line.strip_prefix("pub ").unwrap_or(line)
}

/// `#[path = "join_tests.rs"]` → `join_tests.rs`.
fn path_attribute(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("#[path = \"")?;
    rest.strip_suffix("\"]")
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The module each line's code is in: the file's module, or an inline `mod x {` inside it
/// (rustfmt's layout: the block closes at the `}` with the `mod` line's indent).
fn inline_modules(lines: &[&str], module: &ModPath) -> Vec<ModPath> {
    let mut stack: Vec<(String, String)> = Vec::new(); // (closing line, name)
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let current = |stack: &[(String, String)]| {
            let mut m = module.clone();
            m.extend(stack.iter().map(|(_, n)| n.clone()));
            m
        };
        if stack.last().is_some_and(|(close, _)| line == close) {
            out.push(current(&stack));
            stack.pop();
            continue;
        }
        if let Some(name) = declared_inline_module(line) {
            let indent = &line[..line.len() - line.trim_start().len()];
            stack.push((format!("{indent}}}"), name));
        }
        out.push(current(&stack));
    }
    out
}

/// Every `crate::`, `super::` and `self::` path that starts on line `n`, as segments (a `use`
/// tree spanning lines is read to its end): `use super::{a, b::{self, C}};` gives
/// `super::a`, `super::b` and `super::b::C`.
fn paths_at(lines: &[&str], n: usize) -> Vec<Vec<String>> {
    // A `use` tree ends within a few dozen lines.
    let rest: String = lines[n..lines.len().min(n + 40)].join("\n");
    let s: Vec<char> = rest.chars().collect();
    let first_len = lines[n].chars().count();
    if !lines[n].contains("crate::")
        && !lines[n].contains("super::")
        && !lines[n].contains("self::")
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < first_len {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|k| s[i..].starts_with(&k.chars().collect::<Vec<_>>()));
        let boundary = i == 0 || !(s[i - 1].is_alphanumeric() || "_$:".contains(s[i - 1]));
        match starts {
            Some(_) if boundary => {
                let mut paths = Vec::new();
                let end = tree(&s, i, &[], &mut paths);
                out.extend(paths);
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out
}

/// Reads one path tree at `i` (`a::b`, `a::{b, c::d}`, `a::*`, `a as b`), pushing the full paths
/// it names (after `prefix`) to `out`; returns where it stopped.
fn tree(s: &[char], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |mut i: usize| {
        while s.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        i
    };
    let mut path = prefix.to_vec();
    loop {
        i = skip_ws(i);
        match s.get(i) {
            Some('{') => {
                i += 1;
                loop {
                    i = skip_ws(i);
                    match s.get(i) {
                        None => return i,
                        Some('}') => return i + 1,
                        _ => {}
                    }
                    i = tree(s, i, &path, out);
                    // `as alias`, then the separator.
                    while s.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                        i += 1;
                    }
                    if s.get(i) == Some(&',') {
                        i += 1;
                    }
                }
            }
            Some('*') => {
                out.push(path);
                return i + 1;
            }
            _ => {}
        }
        let ident: String = s[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if ident.is_empty() {
            out.push(path);
            return i;
        }
        i += ident.chars().count();
        // `super::diagnose(..)` calls a function: functions and modules may share a name.
        if matches!(s.get(i), Some('(' | '!')) {
            out.push(path);
            return i;
        }
        // `{self, X}` names the prefix itself.
        if ident != "self" || path.is_empty() {
            path.push(ident);
        }
        if s.get(i) == Some(&':') && s.get(i + 1) == Some(&':') {
            i += 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// The module a path names, from the code of module `here`: `crate`, `super` and `self` taken
/// as rustc does, then the longest prefix that is a module (`super::pod::reach_error` from
/// `route::jumpbox` is `route::pod`). None for a path that leaves the crate.
fn resolve(here: &[String], path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut base: ModPath = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {}
        _ => return None,
    }
    while rest.first().map(String::as_str) == Some("super") {
        base.pop()?;
        rest = &rest[1..];
    }
    let mut found = base.clone();
    let mut m = base;
    for seg in rest {
        m.push(seg.clone());
        if modules.contains(&m) {
            found = m.clone();
        } else {
            break;
        }
    }
    Some(found)
}

/// An import lifted to the two sibling modules it runs between, under their common folder;
/// None when one module contains the other (a folder declares and re-exports its children, a
/// child uses what its folder shares).
fn lift(from: &[String], to: &[String]) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The lifted graph: (from, to) → the imports that make that edge. Imports from or into an
/// [`EXEMPT`] module (test-only support) are not in it.
fn edges(krate: &Crate) -> BTreeMap<(ModPath, ModPath), Vec<Import>> {
    let mut out: BTreeMap<_, Vec<Import>> = BTreeMap::new();
    for import in &krate.imports {
        let exempt = |m: &ModPath| m.first().is_some_and(|t| EXEMPT.contains(&t.as_str()));
        if exempt(&import.from) || exempt(&import.to) {
            continue;
        }
        if let Some(edge) = lift(&import.from, &import.to) {
            out.entry(edge).or_default().push(import.clone());
        }
    }
    out
}

/// Every cycle of the graph, one per strongly connected set of modules, each as a path that
/// returns to its start (`a → b → a`); sorted.
fn cycles(edges: &BTreeMap<(ModPath, ModPath), Vec<Import>>) -> Vec<Vec<ModPath>> {
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
    }
    let reach = |start: &ModPath| -> BTreeSet<ModPath> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.clone()];
        while let Some(m) = todo.pop() {
            for n in &next[&m] {
                if seen.insert((*n).clone()) {
                    todo.push((*n).clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&ModPath, BTreeSet<ModPath>> =
        next.keys().map(|m| (*m, reach(m))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for m in next.keys() {
        if done.contains(*m) || !reachable[m].contains(*m) {
            continue;
        }
        // The set: every module m reaches that reaches m back.
        let set: BTreeSet<&ModPath> = reachable[m]
            .iter()
            .filter(|n| reachable[n].contains(*m))
            .map(|n| *next.get_key_value(n).unwrap().0)
            .collect();
        done.extend(set.iter().map(|n| (*n).clone()));
        // One shortest way round, breadth first from m back to m inside the set.
        let mut back: BTreeMap<ModPath, ModPath> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*m).clone()]);
        'search: while let Some(at) = queue.pop_front() {
            for n in &next[&at] {
                if !set.contains(n) || back.contains_key(*n) {
                    continue;
                }
                back.insert((*n).clone(), at.clone());
                if n == m {
                    break 'search;
                }
                queue.push_back((*n).clone());
            }
        }
        let mut path = vec![(*m).clone()];
        let mut at = back[*m].clone();
        while &at != *m {
            path.push(at.clone());
            at = back[&at].clone();
        }
        path.push((*m).clone());
        path.reverse();
        out.push(path);
    }
    out.sort();
    out
}

/// A cycle with the lines that make each step.
fn explain(cycle: &[ModPath], edges: &BTreeMap<(ModPath, ModPath), Vec<Import>>) -> String {
    let names: Vec<String> = cycle.iter().map(|m| show(m)).collect();
    let mut out = names.join(" → ");
    for step in cycle.windows(2) {
        let first = &edges[&(step[0].clone(), step[1].clone())][0];
        out.push_str(&format!(
            "\n    src/{}:{}: {}",
            first.file, first.line, first.text
        ));
    }
    out
}

/// The position of `child` in its folder's order: Some(None) for a test module (outside the
/// order), None for a module not placed.
fn rank(folder: &[String], child: &str) -> Option<Option<usize>> {
    if child == "tests" || child.ends_with("_tests") {
        return Some(None);
    }
    let order = if folder.is_empty() {
        LAYERS
    } else {
        FOLDERS.iter().find(|(f, _)| *f == show(folder))?.1
    };
    order.iter().position(|l| l.contains(&child)).map(Some)
}

/// Imports against the orders of [`LAYERS`] and [`FOLDERS`], and the modules not placed in them.
fn order_violations(
    krate: &Crate,
    edges: &BTreeMap<(ModPath, ModPath), Vec<Import>>,
) -> (Vec<String>, Vec<String>) {
    let mut unplaced = BTreeSet::new();
    for m in &krate.modules {
        let Some((child, folder)) = m.split_last() else {
            continue;
        };
        // Everything under an exempt module is free; test modules are outside the orders.
        if !EXEMPT.contains(&m[0].as_str()) && rank(folder, child).is_none() {
            unplaced.insert(show(m));
        }
    }
    let mut violations = Vec::new();
    for ((from, to), imports) in edges {
        let (folder, a) = from.split_last().map(|(a, f)| (f, a)).unwrap();
        let b = to.last().unwrap();
        let (Some(ra), Some(rb)) = (rank(folder, a), rank(folder, b)) else {
            continue; // reported as unplaced
        };
        let fine = match (ra, rb) {
            (None, _) => true, // a test module imports a sibling
            (Some(x), Some(y)) => y > x,
            (Some(_), None) => false, // only a test module imports a test module
        };
        if !fine {
            for i in imports {
                violations.push(format!(
                    "src/{}:{}: `{}` imports `{}`, which is not below it in {}'s order: {}",
                    i.file,
                    i.line,
                    show(from),
                    show(to),
                    show(folder),
                    i.text
                ));
            }
        }
    }
    (unplaced.into_iter().collect(), violations)
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read_src(rel: &str) -> Option<String> {
    std::fs::read_to_string(src_dir().join(rel)).ok()
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

#[test]
fn every_module_imports_only_modules_below_it() {
    let krate = read_crate(&read_src);
    let edges = edges(&krate);
    let (unplaced, violations) = order_violations(&krate, &edges);
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (and from the drawing in src/lib.rs) or from their \
         folder's line in FOLDERS: {unplaced:?}"
    );
    assert!(
        violations.is_empty(),
        "imports against the layering:\n{}",
        violations.join("\n")
    );
}

#[test]
fn no_module_import_cycle() {
    let krate = read_crate(&read_src);
    let edges = edges(&krate);
    let found: Vec<String> = cycles(&edges).iter().map(|c| explain(c, &edges)).collect();
    assert!(
        found.is_empty(),
        "module import cycles:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_walk_reaches_every_file() {
    let krate = read_crate(&read_src);
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let missed: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_string_lossy().into_owned())
        // The binaries are crates of their own, on top of the library.
        .filter(|f| f != "main.rs" && !f.starts_with("bin/") && !krate.files.contains(f))
        .collect();
    assert!(
        missed.is_empty(),
        "files the module walk from src/lib.rs did not reach: {missed:?}"
    );
}

#[test]
fn the_layer_list_is_the_one_lib_rs_draws() {
    let lib = read_src("lib.rs").unwrap();
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

/// The paths one line names, resolved from module `here` of a crate with `modules`.
fn names(line: &str, here: &str, modules: &[&str]) -> Vec<String> {
    let split = |m: &str| -> ModPath {
        m.split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let modules: BTreeSet<ModPath> = modules.iter().map(|m| split(m)).collect();
    paths_at(&[line], 0)
        .into_iter()
        .filter_map(|p| resolve(&split(here), &p, &modules))
        .map(|m| show(&m))
        .collect()
}

#[test]
fn the_checker_sees_imports() {
    let modules = [
        "",
        "cli",
        "error",
        "route",
        "route::pod",
        "route::ssh",
        "analyse",
    ];
    assert_eq!(names("use crate::cli::Cli;", "route", &modules), ["cli"]);
    assert_eq!(
        names("use crate::{analyse, cli::{self, Cli}};", "route", &modules),
        ["analyse", "cli", "cli"]
    );
    assert_eq!(
        names("let x = crate::error::chain(&e);", "cli", &modules),
        ["error"]
    );
    assert_eq!(
        names("use super::pod::reach_error as r;", "route::ssh", &modules),
        ["route::pod"]
    );
    assert_eq!(
        names("super::super::pod::f()", "route::ssh::tests", &modules),
        ["route::pod"]
    );
    assert_eq!(
        names("use self::ssh::*;", "route", &modules),
        ["route::ssh"]
    );
    assert!(names("use etcdnet::cli; $crate::x", "route", &modules).is_empty());
    let lines = ["use super::{", "    pod::{self, X},", "    Env,", "};"];
    let found: Vec<Vec<String>> = paths_at(&lines, 0);
    assert_eq!(
        found,
        [
            vec!["super", "pod"],
            vec!["super", "pod", "X"],
            vec!["super", "Env"]
        ]
    );
}

/// A synthetic crate of `(file, text)`s, read as the real one is.
fn synthetic(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    read_crate(&|f: &str| files.get(f).cloned())
}

#[test]
fn the_checker_finds_a_cycle_and_its_path() {
    let lib = "mod a;\nmod b;\nmod c;\n";
    // a → b → c → a, through a folder's child and an inline test module.
    let with_cycle = synthetic(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::X;\n"),
        ("b/mod.rs", "mod inner;\n"),
        ("b/inner.rs", "use super::super::c;\n"),
        (
            "c.rs",
            "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use super::super::a::Y;\n}\n",
        ),
    ]);
    let e = edges(&with_cycle);
    let found = cycles(&e);
    assert_eq!(found.len(), 1, "{found:?}");
    let text = explain(&found[0], &e);
    assert!(text.starts_with("a → b → c → a"), "{text}");
    assert!(
        text.contains("src/b/inner.rs:1: use super::super::c;"),
        "{text}"
    );
    assert!(
        text.contains("src/c.rs:5: use super::super::a::Y;"),
        "{text}"
    );

    // The same crate with c's test importing b instead: no cycle.
    let without = synthetic(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::X;\n"),
        ("b/mod.rs", "mod inner;\n"),
        ("b/inner.rs", "use super::super::c;\n"),
        (
            "c.rs",
            "#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::c::f;\n}\n",
        ),
    ]);
    assert!(cycles(&edges(&without)).is_empty());
    // A folder and its children import each other freely: no cycle.
    let parent_child = synthetic(&[
        ("lib.rs", "mod r;\n"),
        ("r/mod.rs", "mod s;\npub use s::S;\npub struct T;\n"),
        ("r/s.rs", "use super::T;\npub struct S;\n"),
    ]);
    assert!(cycles(&edges(&parent_child)).is_empty());
}

#[test]
fn the_checker_follows_path_attributes() {
    let krate = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "#[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;\n",
        ),
        ("a_tests.rs", "use super::super::b;\n"),
        ("b.rs", ""),
    ]);
    let from: Vec<String> = krate.imports.iter().map(|i| show(&i.from)).collect();
    assert_eq!(from, ["a::tests"]);
    assert!(krate.files.contains("a_tests.rs"));
}

/// The library's own code of a file: test-only files skipped (None), and each `#[cfg(test)]`
/// inline module blanked (its lines kept empty, so line numbers stay the file's).
fn product_code(rel: &str, text: &str) -> Option<Vec<String>> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel == "testing.rs"
        || rel.starts_with("testing/")
    {
        return None;
    }
    let mut out = Vec::new();
    let mut skipping = false;
    let mut after_cfg_test = false;
    for line in code_lines(text) {
        if skipping {
            skipping = line != "}";
            out.push(String::new());
            continue;
        }
        if line.trim() == "#[cfg(test)]" {
            after_cfg_test = true;
            out.push(String::new());
            continue;
        }
        if after_cfg_test && line.starts_with("mod ") && line.ends_with('{') {
            skipping = true;
            out.push(String::new());
            continue;
        }
        after_cfg_test = false;
        out.push(line.to_string());
    }
    Some(out)
}

/// Every product line of every file under `src/` (relative path, line number, text).
fn product_lines() -> Vec<(String, usize, String)> {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in product_code(&rel, &text).into_iter().flatten().enumerate() {
            out.push((rel.clone(), n + 1, line));
        }
    }
    out
}

/// What builds a request to an API server: a kube `Api` of any kind, or a raw request.
const REQUEST_BUILDERS: &[&str] = &[
    "Api::namespaced",
    "Api::all",
    "Api::default_namespaced",
    "Api::<",
    "Request::get(",
    "Request::post(",
    "Request::put(",
    "Request::patch(",
    "Request::delete(",
    "Request::builder(",
    "Request::new(",
    ".send(",
    ".request(",
    ".request::<",
    ".request_text(",
    ".request_status(",
    "Discovery::",
    "kube::discovery::",
    "discovery::oneshot",
    "pinned_kind(",
    "pinned_group(",
];

/// Where a request may be built outside the one reader, each with why: (file, a part of the
/// line, why). Every entry must still match a line (a stale one fails too).
const OTHER_REQUESTS: &[(&str, &str, &str)] = &[
    (
        "supervisor/discovery.rs",
        "http::Request::get(\"/apis\")",
        "discovery: GET /apis, no object",
    ),
    (
        "supervisor/discovery.rs",
        ".request(request)",
        "discovery's GET /apis, sent",
    ),
    (
        "workload.rs",
        "http::Request::get(path)",
        "the workload cluster's own API (its /readyz), not the Supervisor",
    ),
    (
        "workload.rs",
        "client.send(req.map(Into::into))",
        "the workload cluster's own API (its /readyz), sent",
    ),
    (
        "route/pod.rs",
        "PodApi::new(Api::namespaced(client, &self.namespace), Host::Workload)",
        "the probe pods, in the workload cluster",
    ),
    (
        "route/jumpbox/mod.rs",
        "Api::namespaced(env.supervisor.clone(), &self.namespace),",
        "the plugin's own jumpbox pod (PodApi): created, watched, deleted",
    ),
    (
        "route/leftovers.rs",
        "Some(ns) => Api::namespaced(client.clone(), ns),",
        "the plugin's own pods (Api<Pod>), swept by label",
    ),
    (
        "route/leftovers.rs",
        "None => Api::all(client.clone()),",
        "the plugin's own pods (Api<Pod>), swept by label",
    ),
    (
        "route/leftovers.rs",
        "let ns_api: Api<Pod> = Api::namespaced(client.clone(), &namespace);",
        "the plugin's own pods, deleted",
    ),
];

/// The requests built outside `supervisor/read.rs` that [`OTHER_REQUESTS`] does not name, and
/// the entries of it no line matched. NSX Manager's client (`nsxmanager/`) talks to another
/// server.
fn requests_outside_the_reader(
    lines: &[(String, usize, String)],
) -> (Vec<String>, Vec<&'static str>) {
    let mut used = BTreeSet::new();
    let mut outside = Vec::new();
    for (file, n, line) in lines {
        if file == "supervisor/read.rs" || file.starts_with("nsxmanager/") {
            continue;
        }
        if !REQUEST_BUILDERS.iter().any(|b| line.contains(b)) {
            continue;
        }
        match OTHER_REQUESTS
            .iter()
            .position(|(f, text, _)| f == file && line.contains(text))
        {
            Some(i) => {
                used.insert(i);
            }
            None => outside.push(format!("src/{file}:{n}: {}", line.trim())),
        }
    }
    let stale = (0..OTHER_REQUESTS.len())
        .filter(|i| !used.contains(i))
        .map(|i| OTHER_REQUESTS[i].1)
        .collect();
    (outside, stale)
}

/// Every read of the Supervisor's objects goes through the table of kinds
/// (`src/supervisor/kinds.rs`, `KINDS`): only `src/supervisor/read.rs` builds an `Api`, each from
/// a row's resource; the other requests are the plugin's own pods, discovery and the workload
/// cluster's API, each named in [`OTHER_REQUESTS`]. A typed `Api::<Secret>::namespaced` in
/// `workload.rs` (as it was) fails here. tests/it/rbac.rs's `assert_through_kinds` holds the
/// requests the fake Supervisor saw to the table's rows.
#[test]
fn only_the_reader_asks_the_supervisor_for_objects() {
    let (outside, stale) = requests_outside_the_reader(&product_lines());
    assert!(
        outside.is_empty(),
        "requests built outside src/supervisor/read.rs (read the Supervisor through a row of \
         KINDS and supervisor::read, or name the request in OTHER_REQUESTS with why):\n{}",
        outside.join("\n")
    );
    assert!(
        stale.is_empty(),
        "OTHER_REQUESTS entries no line matches: {stale:?}"
    );
    // The checker sees a bypass, and not one inside a test module.
    let line = |file: &str, text: &str| (file.to_string(), 1, text.to_string());
    let bypass = [
        line(
            "workload.rs",
            "    let secrets: Api<Secret> = Api::namespaced(supervisor.clone(), namespace);",
        ),
        line(
            "route/ssh/secret.rs",
            "let r = client.request::<Value>(req).await?;",
        ),
    ];
    assert_eq!(requests_outside_the_reader(&bypass).0.len(), 2);
    let tested = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    fn g() { Api::all(c); }\n}\n";
    let code = product_code("workload.rs", tested).unwrap();
    assert!(!code.iter().any(|l| l.contains("Api::all")), "{code:?}");
    assert!(product_code("supervisor/read_tests.rs", tested).is_none());
}

/// The `{...:?}` placeholders (Rust's Debug format) of a line: `{:?}`, `{x:?}`, `{:#?}`, ...
fn debug_placeholders(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        if let Some(escaped) = after.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        if inner.ends_with('?') && !inner.contains(['{', ' ', '"']) {
            out.push(format!("{{{inner}}}"));
        }
        rest = &after[close + 1..];
    }
    out
}

/// One choke point for text: what render/ prints of a value goes through `render::visible` (by
/// `Lines`, `table`, or by hand), never through Rust's Debug format, whose escaping is another
/// (and whose quotes a value's own text can imitate). Test modules may debug-print.
#[test]
fn render_prints_no_value_with_debug() {
    let found: Vec<String> = product_lines()
        .into_iter()
        .filter(|(file, _, _)| file.starts_with("render/") || file == "render.rs")
        .flat_map(|(file, n, line)| {
            debug_placeholders(&line)
                .into_iter()
                .map(move |p| format!("src/{file}:{n}: {p} in {}", line.trim()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "Debug formatting in render/ (quote and escape with render::visible instead):\n{}",
        found.join("\n")
    );
    // The checker sees each form, and not an escaped brace or a plain placeholder.
    assert_eq!(
        debug_placeholders(r#"format!("{} {:?} {name:?} {:#?} {{x:?}} {x}", a, b, c)"#),
        ["{:?}", "{name:?}", "{:#?}"]
    );
}

/// The types that derive `Serialize` in each product file outside `src/report/` and
/// `src/bundle/` (relative path → names). An attribute may span lines; `Deserialize` alone is
/// not `Serialize`.
fn serialize_derives(lines: &[(String, usize, String)]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut attrs = String::new();
    for (file, _, line) in lines {
        if file.starts_with("report/") || file.starts_with("bundle/") {
            continue;
        }
        let s = line.trim();
        let open = attrs.matches(['(', '[']).count() > attrs.matches([')', ']']).count();
        if s.starts_with("#[") || (open && !s.is_empty()) {
            attrs.push_str(s);
            continue;
        }
        let item = strip_visibility(s);
        let name = item
            .strip_prefix("struct ")
            .or_else(|| item.strip_prefix("enum "))
            .map(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next());
        if let Some(Some(name)) = name {
            let derives = attrs
                .match_indices("Serialize")
                .any(|(i, _)| !attrs[..i].ends_with(|c: char| c.is_alphanumeric()));
            if derives {
                out.entry(file.clone()).or_default().push(name.to_string());
            }
        }
        // A blanked comment line between an item's attributes keeps them.
        if !s.is_empty() {
            attrs.clear();
        }
    }
    out
}

/// The text of `docs/architecture.md`'s section whose heading starts with `heading`, up to
/// the next heading of its level.
fn architecture_section(heading: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text
        .find(&format!("\n## {heading}"))
        .unwrap_or_else(|| panic!("docs/architecture.md has no section {heading:?}"));
    let rest = &text[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

/// The words inside the backtick spans of a text (`` `probe::{A, B}` `` gives probe, A, B);
/// a fenced block's lines are not spans.
fn quoted_words(text: &str) -> BTreeSet<String> {
    let prose: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect();
    prose
        .join("\n")
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| {
            span.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '/' && c != '.')
        })
        .map(|w| w.trim_matches('.').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// docs/architecture.md's list of what derives `Serialize` outside `report/` and `bundle/` is
/// whole and true: it names every file that derives it (as a path under `src/`:
/// `probe/output.rs`), and no file that derives nothing. A contract leaf or a part of the
/// bundle's format in a file the list does not name fails here until the map says why it is
/// serialized.
#[test]
fn the_serialize_list_names_every_file_that_derives_it() {
    let derives = serialize_derives(&product_lines());
    assert!(
        derives
            .get("probe/output.rs")
            .is_some_and(|t| t.iter().any(|t| t == "ProbeOutput")),
        "the reader found no ProbeOutput: {derives:?}"
    );
    let section = architecture_section("Serialization outside");
    let named = quoted_words(&section);
    let mut missing = Vec::new();
    for (file, types) in &derives {
        if !named.contains(file) {
            missing.push(format!("`{file}` ({})", types.join(", ")));
        }
    }
    let stale: Vec<&String> = named
        .iter()
        .filter(|w| w.ends_with(".rs") && !w.starts_with("tests/") && !derives.contains_key(*w))
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md, \"Serialization outside `report/` and `bundle/`\": \
         not named {missing:#?}; named but deriving no Serialize {stale:?}"
    );
    // The reader sees a derive over several lines, and not a Deserialize alone or a test's.
    let line = |file: &str, text: &str| (file.to_string(), 1, text.to_string());
    let lines = [
        line("a.rs", "#[derive("),
        line("a.rs", "    Debug,"),
        line("a.rs", "    serde::Serialize,"),
        line("a.rs", ")]"),
        line("a.rs", ""),
        line("a.rs", "pub(crate) struct Shown {"),
        line("a.rs", "#[derive(Deserialize)]"),
        line("a.rs", "enum Read {"),
        line("report/b.rs", "#[derive(Serialize)]"),
        line("report/b.rs", "struct Contract;"),
    ];
    assert_eq!(
        serialize_derives(&lines),
        BTreeMap::from([("a.rs".to_string(), vec!["Shown".to_string()])])
    );
}

/// What in the one reader's product lines would read a kind around its row: a typed `Api`
/// (its version fixed by k8s-openapi or a CRD type, not the row's), an `Api` not built from a
/// row's `ApiResource` (`Api::namespaced_with`/`Api::all_with`), a raw request, or a version
/// written out (a `"v1alpha1"`: the rows and discovery give the versions).
fn reads_around_the_rows(lines: &[(String, usize, String)]) -> Vec<String> {
    lines
        .iter()
        .filter(|(file, _, _)| file == "supervisor/read.rs")
        .filter(|(_, _, line)| {
            let typed = line.match_indices("Api<").any(|(i, _)| {
                !line[i..].starts_with("Api<DynamicObject>")
                    && !line[..i].ends_with(|c: char| c.is_alphanumeric())
            });
            let unbuilt = REQUEST_BUILDERS.iter().any(|b| line.contains(b))
                && !line.contains("Api::namespaced_with(")
                && !line.contains("Api::all_with(");
            let version = ["\"v1", "\"v2", "/v1", "/v2"]
                .iter()
                .any(|v| line.contains(v));
            typed || unbuilt || version
        })
        .map(|(file, n, line)| format!("src/{file}:{n}: {}", line.trim()))
        .collect()
}

/// The one reader reads each kind at its row's version: every `Api` it builds is an
/// `Api<DynamicObject>` from the `ApiResource` a row of `KINDS` gives (its fixed version, or the
/// one discovery prefers), never a typed `Api<Secret>` or a version of its own. The VPC objects
/// were read at a hard-coded `v1alpha1`, around the table; this fails on that.
#[test]
fn the_reader_reads_every_kind_at_its_rows_version() {
    let found = reads_around_the_rows(&product_lines());
    assert!(
        found.is_empty(),
        "src/supervisor/read.rs reads around KINDS (build an Api<DynamicObject> with a row's \
         ApiResource: Kind::fixed or SupervisorApis::resource):\n{}",
        found.join("\n")
    );
    // The checker sees each way around.
    let line = |text: &str| ("supervisor/read.rs".to_string(), 1, text.to_string());
    let around = [
        line("    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);"),
        line("    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(NSX_VPC_GROUP, \"v1alpha1\", k));"),
        line("    let r = client.request::<Value>(http::Request::get(path).body(vec![])?).await;"),
        line("    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);"),
    ];
    assert_eq!(reads_around_the_rows(&around).len(), 3);
}

/// The map draws the whole product: docs/architecture.md names every top-level module of
/// `src/lib.rs` (as `name/`, `name.rs`, `src/name…` or a path under it), so a new subsystem
/// (as NSX Manager's was, 6k lines the map did not mention) fails here until it is drawn.
#[test]
fn the_map_names_every_top_level_module() {
    let lib = read_src("lib.rs").unwrap();
    let modules: Vec<String> = code_lines(&lib)
        .into_iter()
        .filter_map(declared_file_module)
        .collect();
    assert!(modules.iter().any(|m| m == "nsxmanager"), "{modules:?}");
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md"))
            .unwrap();
    let named = quoted_words(&text);
    let is_named = |m: &str| {
        named.iter().any(|w| {
            let w = w.strip_prefix("src/").unwrap_or(w);
            w == format!("{m}/") || w == format!("{m}.rs") || w.starts_with(&format!("{m}/"))
        })
    };
    let missing: Vec<&String> = modules.iter().filter(|m| !is_named(m)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name these modules of src/lib.rs: {missing:?}"
    );
}
