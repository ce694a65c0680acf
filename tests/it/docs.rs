//! The Markdown pages stay true and small where they must: the README is an admin's page (at
//! most 160 lines, with the two set-up commands under their headings, every verdict and every
//! exit code), CONTRIBUTING.md has the test command `.ci/run` runs, and every relative link
//! between the pages (and its `#anchor`) resolves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use strum::VariantArray;

use crate::common::read;

/// The README is for the admin at 3 a.m.: contributor material goes to CONTRIBUTING.md and
/// docs/ (issue 38 item 7: "at most ~150 lines"; 160 leaves the demo's output room to grow).
const README_MAX_LINES: usize = 160;

/// The text under the heading that starts with `heading` (any level), up to the next heading.
fn section<'a>(md: &'a str, heading: &str) -> &'a str {
    let mut start = None;
    let mut offset = 0;
    for line in md.split_inclusive('\n') {
        let title = line.trim_start_matches('#');
        if line.starts_with('#') && title.starts_with(' ') {
            if let Some(start) = start {
                return &md[start..offset];
            }
            if title.trim().starts_with(heading) {
                start = Some(offset + line.len());
            }
        }
        offset += line.len();
    }
    let start = start.unwrap_or_else(|| panic!("no heading {heading:?}"));
    &md[start..]
}

#[test]
fn the_readme_is_an_admins_page_with_the_two_set_up_commands() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, at most {README_MAX_LINES}: move detail to docs/ or CONTRIBUTING.md"
    );
    for (heading, command, script) in [
        ("Try it in a lab", "bash .ci/demo", ".ci/demo"),
        ("Develop", "bash .ci/run", ".ci/run"),
    ] {
        assert!(
            section(&readme, heading).contains(command),
            "README.md's \"{heading}\" section must give `{command}`"
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
        assert!(
            path.is_file(),
            "{script}, named in the README, does not exist"
        );
    }
}

#[test]
fn the_readme_names_every_verdict_and_docs_output_too() {
    let readme = read("README.md");
    let verdicts = section(&readme, "Verdicts");
    let output = read("docs/output.md");
    let codes = section(&output, "Verdict codes");
    for code in etcdnet::analyse::verdict::VerdictCode::VARIANTS {
        let word = format!("`{code}`");
        assert!(
            verdicts.contains(&word),
            "README.md's verdict table lacks {word}"
        );
        assert!(
            codes.contains(&word),
            "docs/output.md's verdict codes lack {word}"
        );
    }
}

/// Every `pub const EXIT_…: i32 = N;` (or `pub(crate)`) of src/error.rs, the exit codes' one definition (a sum
/// such as `128 + 15` added up).
fn exit_codes() -> BTreeSet<String> {
    let source = read("src/error.rs");
    let codes = source.lines().filter_map(|l| {
        let l = l.trim();
        let rest = (l.strip_prefix("pub const EXIT_"))
            .or_else(|| l.strip_prefix("pub(crate) const EXIT_"))?;
        let value = rest.split_once("i32 =")?.1.trim().strip_suffix(';')?;
        let sum = value.split('+').map(|n| {
            n.trim()
                .parse::<i32>()
                .unwrap_or_else(|_| panic!("src/error.rs: {l:?}: not a number or a sum"))
        });
        Some(sum.sum::<i32>().to_string())
    });
    codes.collect()
}

#[test]
fn the_readme_documents_every_exit_code() {
    let codes = exit_codes();
    assert!(
        codes.is_superset(&["0", "1", "2", "3", "130"].map(String::from).into()),
        "src/error.rs's EXIT_ constants were not read: {codes:?}"
    );
    let readme = read("README.md");
    let table = section(&readme, "Exit codes");
    // The first cell of each row, e.g. `| 130 / 143 / 129 | …`.
    let documented: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix('|')?.split('|').next())
        .flat_map(|cell| cell.split('/').map(|c| c.trim().to_string()))
        .collect();
    let missing: Vec<_> = codes.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "README.md's exit-code table lacks {missing:?}"
    );
}

#[test]
fn contributing_gives_the_test_command_ci_runs() {
    // .ci/run's last command is the suite; CONTRIBUTING.md says it is the test command.
    let run = read(".ci/run");
    let command = "cargo nextest run --workspace";
    assert!(
        run.lines().any(|l| l.trim() == command),
        ".ci/run no longer runs `{command}`: update CONTRIBUTING.md and this test"
    );
    let contributing = read("CONTRIBUTING.md");
    let setup = section(&contributing, "Set up");
    assert!(setup.contains("bash .ci/demo") && setup.contains("bash .ci/run"));
    assert!(
        setup.contains(&format!("\n{command}\n")),
        "CONTRIBUTING.md's set-up section must give the test command `{command}` on its own line"
    );
}

/// Every Markdown file of the repository, outside build output and VCS data.
fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    todo.push(path);
                }
            } else if name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_` kept, spaces to `-`,
/// everything else dropped (github-slugger).
fn slug(heading: &str) -> String {
    let lower = heading.trim().to_lowercase();
    let kept = lower
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'));
    kept.map(|c| if c == ' ' { '-' } else { c }).collect()
}

/// The anchors of a Markdown page: its headings' slugs (a repeated one also with `-1`, `-2`, …),
/// outside fenced code.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let title = line.trim_start_matches('#');
        if fenced || !line.starts_with('#') || !title.starts_with(' ') {
            continue;
        }
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    seen
}

/// The targets of the inline links `[text](target)` of a page, outside fenced and inline code.
fn link_targets(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans: `[x](y)` inside backticks is text, not a link.
        let text: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_between_the_pages_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for page in markdown_files() {
        let text = std::fs::read_to_string(&page).unwrap();
        let rel = page.strip_prefix(root).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!("{rel}: ({target}): no such file"));
                continue;
            }
            let Some(anchor) = anchor.filter(|_| file.extension().is_some_and(|e| e == "md"))
            else {
                continue;
            };
            let md = std::fs::read_to_string(&file).unwrap();
            if !anchors(&md).contains(anchor) {
                broken.push(format!("{rel}: ({target}): no heading with that anchor"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_link_checker_finds_what_it_must() {
    // A checker that finds nothing proves nothing: its parts on known text.
    assert_eq!(
        slug(" Evidence bundle (`diagnose --bundle FILE`, `analyse FILE`)"),
        "evidence-bundle-diagnose---bundle-file-analyse-file"
    );
    assert_eq!(
        slug(" Before you run: login, context"),
        "before-you-run-login-context"
    );
    let md = "# A\n\n## A\n```\n# not a heading\n```\nsee [b](b.md#x) and `[c](c.md)` [d](#a-1)\n";
    assert_eq!(
        anchors(md),
        ["a", "a-1"].map(String::from).into_iter().collect()
    );
    assert_eq!(link_targets(md), ["b.md#x", "#a-1"]);
    assert_eq!(
        section("# T\n## Exit codes\nx\n## Next\ny\n", "Exit codes"),
        "x\n"
    );
}
