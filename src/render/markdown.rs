//! The case report as Markdown for a ticket's text field (`--report md`): the same sections as
//! the HTML page, tables as GitHub's, the matrix as a table of `✓`/`✗` parts, the chart as a
//! table of onsets.
//!
//! Every text goes through [`text`] (inline) or, in a code block, through [`pre`]'s fence, which
//! no line of the text can close: nothing read from a cluster or a bundle becomes Markdown or
//! HTML (GitHub renders HTML in Markdown).

use std::fmt::Write as _;

use super::sheet::{Block, Chart, Grid, Mark, Section};

/// The one escape of inline text: made [`super::visible`] (one line: a newline cannot start a
/// new block), `&`, `<` and `>` as entities (no HTML tag, no autolink), and a backslash before
/// each character that makes inline Markdown or splits a table cell (`\ ` * _ [ ] | ~`), and
/// before what would start a block at the start of a text (`#`, `-`, `+`, `=`, `>`, a number
/// and a dot).
pub(crate) fn text(s: &str) -> String {
    let v = super::visible(s);
    let mut out = String::with_capacity(v.len() + 8);
    for (i, c) in v.chars().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '#' | '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    // `1. ` at the start is an ordered list: its dot escaped.
    let digits = out.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && matches!(out.as_bytes().get(digits), Some(b'.' | b')')) {
        out.insert(digits, '\\');
    }
    out
}

/// A code block whose fence is longer than any run of backticks in `t`, so no line of it ends
/// the block (CommonMark 4.5); its lines are [`super::visible`] already (a text section's).
fn pre(o: &mut String, t: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in t.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let _ = writeln!(o, "{fence}text\n{}\n{fence}\n", super::visible_lines(t));
}

/// The page: a title and its sections.
pub(crate) fn page(title: &str, sections: &[Section]) -> String {
    let mut o = String::with_capacity(32 * 1024);
    let _ = writeln!(o, "# {}\n", text(title));
    for s in sections {
        let _ = writeln!(o, "## {}\n", text(&s.title));
        for b in &s.blocks {
            block(&mut o, b);
        }
    }
    let _ = writeln!(o, "_kubectl-etcdnet {}_", text(env!("CARGO_PKG_VERSION")));
    o
}

fn block(o: &mut String, b: &Block) {
    match b {
        Block::Facts(facts) => {
            for (k, v) in facts {
                let _ = writeln!(o, "- **{}:** {}", text(k), text(v));
            }
            o.push('\n');
        }
        Block::Verdict {
            code,
            healthy,
            summary,
        } => {
            let sign = if *healthy { "✓" } else { "✗" };
            let _ = writeln!(o, "**{sign} {}**: {}\n", text(code), text(summary));
        }
        Block::Text(t) => {
            let _ = writeln!(o, "{}\n", text(t));
        }
        Block::List(items) => {
            for i in items {
                let _ = writeln!(o, "- {}", text(i));
            }
            o.push('\n');
        }
        Block::Steps(items) => {
            for (n, i) in items.iter().enumerate() {
                let _ = writeln!(o, "{}. {}", n + 1, text(i));
            }
            o.push('\n');
        }
        Block::Table { header, rows } => table(o, header, rows),
        Block::Pre(t) => pre(o, t),
        Block::Grid(g) => grid(o, g),
        Block::Chart(c) => chart(o, c),
    }
}

fn table(o: &mut String, header: &[String], rows: &[Vec<String>]) {
    let cells = |r: &[String]| {
        (0..header.len())
            .map(|i| text(r.get(i).map(String::as_str).unwrap_or("")))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let _ = writeln!(o, "| {} |", cells(header));
    let _ = writeln!(o, "|{}", " --- |".repeat(header.len()));
    for r in rows {
        let _ = writeln!(o, "| {} |", cells(r));
    }
    o.push('\n');
}

fn sign(m: Mark) -> &'static str {
    match m {
        Mark::Open => "✓",
        Mark::Failing => "✗",
        Mark::Unknown => "?",
    }
}

fn grid(o: &mut String, g: &Grid) {
    let mut header = vec!["FROM ↓ TO →".to_string()];
    header.extend(g.nodes.iter().cloned());
    let rows: Vec<Vec<String>> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, from)| {
            let mut row = vec![from.clone()];
            row.extend(
                g.cells
                    .iter()
                    .skip(i * g.nodes.len())
                    .take(g.nodes.len())
                    .map(|c| {
                        c.parts
                            .iter()
                            .map(|p| format!("{} {} {}", sign(p.mark), p.port, p.text))
                            .collect::<Vec<_>>()
                            .join(" / ")
                    }),
            );
            row
        })
        .collect();
    table(o, &header, &rows);
    let legend: Vec<String> = [Mark::Open, Mark::Failing, Mark::Unknown]
        .iter()
        .map(|m| format!("{} {}", sign(*m), m.legend()))
        .collect();
    let _ = writeln!(o, "{}\n", text(&legend.join("; ")));
}

fn chart(o: &mut String, c: &Chart) {
    let instant = |ms: i64| {
        crate::when::instant(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64),
        )
    };
    let header = ["FROM", "TO", "SINCE"].map(String::from);
    let rows: Vec<Vec<String>> = c
        .bars
        .iter()
        .map(|b| vec![b.from.clone(), b.to.clone(), b.detail.clone()])
        .collect();
    table(o, &header, &rows);
    for m in &c.marks {
        let _ = writeln!(
            o,
            "- {}",
            text(&format!("{} at {}", m.label, instant(m.at_ms)))
        );
    }
    let _ = writeln!(
        o,
        "- {}\n",
        text(&format!("probes at {}", instant(c.end_ms)))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing from outside becomes Markdown or HTML: tags as entities, inline markup and the
    /// table's pipe behind a backslash, a block start at the start escaped, one line.
    #[test]
    fn text_is_never_markup() {
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            text("a|b `c` *d* _e_ [f](g) ~h~ \\"),
            "a\\|b \\`c\\` \\*d\\* \\_e\\_ \\[f\\](g) \\~h\\~ \\\\"
        );
        assert_eq!(text("# title"), "\\# title");
        assert_eq!(text("- item"), "\\- item");
        assert_eq!(text("12. item"), "12\\. item");
        // The newline made visible (`\n`), its backslash escaped: it reads `one\ntwo`.
        assert_eq!(text("one\ntwo"), "one\\\\ntwo");
        assert_eq!(text("a & b"), "a &amp; b");
    }

    /// A code block's fence is longer than any backtick run of its text, so no line closes it.
    #[test]
    fn a_code_block_cannot_be_closed_from_inside() {
        let mut o = String::new();
        pre(&mut o, "line\n````\n<b>x</b>");
        assert!(o.starts_with("`````text\n"), "{o}");
        assert!(o.trim_end().ends_with("\n`````"), "{o}");
    }

    /// A table's cells cannot add a column or a row.
    #[test]
    fn a_cell_stays_one_cell() {
        let mut o = String::new();
        table(
            &mut o,
            &["A".into(), "B".into()],
            &[vec!["x|y\nz".into(), "w".into()]],
        );
        assert_eq!(o, "| A | B |\n| --- | --- |\n| x\\|y\\\\nz | w |\n\n");
    }
}
