//! The output contract's JSON Schemas: docs/schema/*.json are what the report types generate
//! (`report::schema::all`), and docs/output.md names every field they have. After an intended
//! change of the contract: `SNAPSHOTS=overwrite cargo test --test it schema::`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use etcdnet::report::schema;
use serde_json::Value;
use snapbox::IntoData;

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema")
}

fn output_md() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/output.md")).unwrap()
}

#[test]
fn the_committed_schemas_are_what_the_types_generate() {
    for (name, schema) in schema::all() {
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path = schema_dir().join(format!("{name}.json"));
        snapbox::assert_data_eq!(text.raw(), snapbox::Data::read_from(&path, None).raw());
    }
}

/// A schema file of a kind that no longer exists is stale too.
#[test]
fn every_committed_schema_is_an_output_kind() {
    let kinds: BTreeSet<String> = schema::all()
        .into_iter()
        .map(|(n, _)| format!("{n}.json"))
        .collect();
    for entry in std::fs::read_dir(schema_dir()).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            kinds.contains(&file),
            "docs/schema/{file} is no output kind's"
        );
    }
}

/// The sections of docs/output.md that document a kind: the page's introduction, the kind's
/// own section and those it shares fields with.
fn sections_of(kind: &str) -> Vec<&'static str> {
    match kind {
        "CleanupReport" => vec!["## `kind: CleanupReport`"],
        "Version" => vec!["## `kind: Version`"],
        "DiagnoseComparison" => vec!["## `kind: DiagnoseComparison`"],
        "StatusReport" => vec!["## `kind: StatusReport`", "## `networkPolicy`"],
        "DiagnoseReport" => vec![
            "## `kind: DiagnoseReport`",
            "## `kind: StatusReport`",
            "## `networkPolicy`",
            "## The probe's document",
        ],
        "StatusReportList" | "DiagnoseReportList" => vec![
            "## `kind: DiagnoseReportList`",
            "## `kind: DiagnoseReport`",
            "## `kind: StatusReport`",
            "## `networkPolicy`",
            "## The probe's document",
        ],
        other => panic!("no docs/output.md sections listed for {other}: add them here"),
    }
}

/// The text of the page's introduction plus the named `## ` sections (each to the next `## `).
fn doc_text(md: &str, headings: &[&str]) -> String {
    let mut text = md[..md.find("\n## ").unwrap()].to_string();
    for heading in headings {
        let start = md
            .find(heading)
            .unwrap_or_else(|| panic!("docs/output.md has no section {heading:?}"));
        let end = md[start + 3..]
            .find("\n## ")
            .map_or(md.len(), |i| start + 3 + i);
        text.push_str(&md[start..end]);
    }
    text
}

/// Every identifier written in backticks: `a.b[].c`, `.phase` and `kind: X` give theirs.
fn backticked_names(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|code| {
            code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Follows `$ref` into the root's `$defs`.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap();
            resolve(root, &root["$defs"][name])
        }
        None => node,
    }
}

/// The schemas a value of `node` may take: through `anyOf`/`oneOf`/`allOf` and `$ref`.
fn alternatives<'a>(root: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    let node = resolve(root, node);
    let mut out = vec![node];
    for key in ["anyOf", "oneOf", "allOf"] {
        for alt in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(alternatives(root, alt));
        }
    }
    out
}

/// Every property name of the schema, at any depth.
fn property_names(root: &Value) -> BTreeSet<String> {
    fn walk(root: &Value, node: &Value, seen: &mut BTreeSet<String>, out: &mut BTreeSet<String>) {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            if !seen.insert(r.to_string()) {
                return;
            }
        }
        for alt in alternatives(root, node) {
            if let Some(props) = alt.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    out.insert(name.clone());
                    walk(root, sub, seen, out);
                }
            }
            for key in ["items", "additionalProperties"] {
                if let Some(sub) = alt.get(key).filter(|v| v.is_object()) {
                    walk(root, sub, seen, out);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut BTreeSet::new(), &mut out);
    out
}

#[test]
fn docs_output_names_every_field_of_every_kind() {
    let md = output_md();
    for (kind, schema) in schema::all() {
        let documented = backticked_names(&doc_text(&md, &sections_of(kind)));
        let missing: Vec<String> = property_names(&schema)
            .into_iter()
            .filter(|name| !documented.contains(name))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/output.md does not name these fields of {kind}: {missing:?}"
        );
    }
}

/// The paths in the `field` column of docs/output.md's tables (`a.b`, `.c` for a sibling of
/// the previous path's last part, `x[]` for a list's items).
fn documented_paths(section: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut in_field_table = false;
    for line in section.lines() {
        if !line.starts_with('|') {
            in_field_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "field" {
            in_field_table = true;
            continue;
        }
        if !in_field_table {
            continue;
        }
        let mut previous: Option<String> = None;
        for code in first.split('`').skip(1).step_by(2) {
            // `a.kind: Value` names a value of the field `a.kind`.
            let code = code.split(": ").next().unwrap_or(code);
            let path = match (code.strip_prefix('.'), &previous) {
                (Some(leaf), Some(prev)) => match prev.rsplit_once('.') {
                    Some((parent, _)) => format!("{parent}.{leaf}"),
                    None => leaf.to_string(),
                },
                _ => code.to_string(),
            };
            previous = Some(path.clone());
            paths.push(path);
        }
    }
    paths
}

/// Whether `path` names a field of the schema.
fn resolves(root: &Value, path: &str) -> bool {
    let mut nodes = vec![root];
    for part in path.split('.') {
        let (name, list) = match part.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (part, false),
        };
        let mut next = Vec::new();
        for node in nodes {
            for alt in alternatives(root, node) {
                if let Some(sub) = alt.get("properties").and_then(|p| p.get(name)) {
                    if list {
                        for a in alternatives(root, sub) {
                            next.extend(a.get("items"));
                        }
                    } else {
                        next.push(sub);
                    }
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        nodes = next;
    }
    true
}

#[test]
fn every_field_docs_output_lists_is_in_the_schema() {
    let md = output_md();
    for (kind, schema) in schema::all() {
        let own = doc_text(&md, &sections_of(kind)[..1]);
        // A list's section also tables its items' own kind (`ClusterError`), field by field.
        let known = |p: &str| {
            resolves(&schema, p)
                || (kind.ends_with("List") && resolves(&schema, &format!("items[].{p}")))
        };
        let unknown: Vec<String> = documented_paths(&own)
            .into_iter()
            .filter(|p| !known(p))
            .collect();
        assert!(
            unknown.is_empty(),
            "docs/output.md lists fields {kind} does not have: {unknown:?}"
        );
    }
}
