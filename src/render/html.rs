//! The case report as one self-contained HTML page (`--report html`): inline CSS, the chart as
//! inline SVG, no script, and a Content-Security-Policy that lets nothing load (no fetch, no
//! image but `data:`, no frame, no form), so the page reads the same offline, attached to a
//! case, opened by anyone.
//!
//! Every text in a page, element or attribute, is ours (literals of this file) or passes through
//! [`text`], the one function that turns text into HTML: a node name, a log line, a path from a
//! bundle cannot become markup here, whatever it holds.

use std::fmt::Write as _;

use super::sheet::{Bar, Block, Chart, Grid, Mark, Section};

/// `default-src 'none'`: nothing is fetched (scripts, styles, fonts, frames, connections);
/// only the page's own `<style>` applies and only a `data:` image could show. `base-uri` and
/// `form-action` are not covered by `default-src`, so they are closed too.
pub(crate) const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// The one escape: `text` as HTML text or as the value of a double-quoted attribute. The
/// characters a terminal would act on or hide are first written visibly, line by line
/// ([`super::visible_lines`]: a bidirectional override cannot reorder a name on the page
/// either; a newline is only white space in HTML), then html-escape's `encode_safe` writes
/// `& < > " ' /` as entities, which covers both places.
pub(crate) fn text(s: &str) -> String {
    html_escape::encode_safe(&super::visible_lines(s)).into_owned()
}

/// The page: a title and its sections.
pub(crate) fn page(title: &str, sections: &[Section]) -> String {
    let mut o = String::with_capacity(64 * 1024);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        o,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        text(CSP)
    );
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(o, "<title>{}</title>", text(title));
    let _ = writeln!(o, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(o, "<h1>{}</h1>", text(title));
    o.push_str("<nav><ul>");
    for s in sections {
        let _ = write!(
            o,
            "<li><a href=\"#{}\">{}</a></li>",
            text(&s.id),
            text(&s.title)
        );
    }
    o.push_str("</ul></nav>\n");
    for s in sections {
        let _ = writeln!(
            o,
            "<section id=\"{}\">\n<h2>{}</h2>",
            text(&s.id),
            text(&s.title)
        );
        for b in &s.blocks {
            block(&mut o, b);
        }
        o.push_str("</section>\n");
    }
    let _ = writeln!(
        o,
        "<footer>kubectl-etcdnet {}</footer>\n</body>\n</html>",
        text(env!("CARGO_PKG_VERSION"))
    );
    o
}

fn block(o: &mut String, b: &Block) {
    match b {
        Block::Facts(facts) => {
            o.push_str("<dl class=\"facts\">");
            for (k, v) in facts {
                let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", text(k), text(v));
            }
            o.push_str("</dl>\n");
        }
        Block::Verdict {
            code,
            healthy,
            summary,
        } => {
            let class = if *healthy { "healthy" } else { "problem" };
            let _ = writeln!(
                o,
                "<p class=\"verdict {class}\"><span class=\"code\">{}</span> {}</p>",
                text(code),
                text(summary)
            );
        }
        Block::Text(t) => {
            let _ = writeln!(o, "<p>{}</p>", text(t));
        }
        Block::List(items) => list(o, "ul", items),
        Block::Steps(items) => list(o, "ol", items),
        Block::Table { header, rows } => {
            o.push_str("<table class=\"rows\"><thead><tr>");
            for h in header {
                let _ = write!(o, "<th>{}</th>", text(h));
            }
            o.push_str("</tr></thead><tbody>");
            for r in rows {
                o.push_str("<tr>");
                for i in 0..header.len() {
                    let _ = write!(
                        o,
                        "<td>{}</td>",
                        text(r.get(i).map(String::as_str).unwrap_or(""))
                    );
                }
                o.push_str("</tr>");
            }
            o.push_str("</tbody></table>\n");
        }
        Block::Pre(t) => {
            let _ = writeln!(o, "<pre>{}</pre>", text(t));
        }
        Block::Grid(g) => grid(o, g),
        Block::Chart(c) => chart(o, c),
    }
}

fn list(o: &mut String, tag: &str, items: &[String]) {
    let _ = write!(o, "<{tag}>");
    for i in items {
        let _ = write!(o, "<li>{}</li>", text(i));
    }
    let _ = writeln!(o, "</{tag}>");
}

/// The matrix: a table, FROM rows and TO columns; each cell holds a coloured part per port
/// whose `data-*` say the pair, the port and the state as the json does (for a machine reading
/// the page: the browser test reads them back).
fn grid(o: &mut String, g: &Grid) {
    o.push_str("<table class=\"grid\"><thead><tr><th>FROM ↓ TO →</th>");
    for n in &g.nodes {
        let _ = write!(o, "<th>{}</th>", text(n));
    }
    o.push_str("</tr></thead><tbody>");
    for (i, from) in g.nodes.iter().enumerate() {
        let _ = write!(o, "<tr><th>{}</th>", text(from));
        for c in g.cells.iter().skip(i * g.nodes.len()).take(g.nodes.len()) {
            let own = if c.from == c.to { " own" } else { "" };
            let _ = write!(
                o,
                "<td class=\"cell{own}\" data-from=\"{}\" data-to=\"{}\">",
                text(&c.from),
                text(&c.to)
            );
            for p in &c.parts {
                let _ = write!(
                    o,
                    "<span class=\"part {}\" data-port=\"{}\" data-state=\"{}\" title=\"{} → {}:{} {}\">{} {}</span>",
                    p.mark.class(),
                    p.port,
                    text(&p.state),
                    text(&c.from),
                    text(&c.to),
                    p.port,
                    text(&p.text),
                    p.port,
                    text(&p.text),
                );
            }
            o.push_str("</td>");
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>\n<ul class=\"legend\">");
    for m in [Mark::Open, Mark::Failing, Mark::Unknown] {
        let _ = write!(
            o,
            "<li><span class=\"swatch {}\"></span>{}</li>",
            m.class(),
            text(m.legend())
        );
    }
    let _ = writeln!(
        o,
        "<li>ports: {}</li></ul>",
        text(
            &g.ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(" then ")
        )
    );
}

/// Chart geometry (SVG user units = CSS pixels).
const LABEL_W: f64 = 340.0;
const PLOT_W: f64 = 600.0;
const ROW_H: f64 = 22.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 36.0;

/// Where `ms` falls on the plot, in SVG units from the left edge.
pub(crate) fn x_of(c: &Chart, ms: i64) -> f64 {
    let span = (c.end_ms - c.start_ms).max(1) as f64;
    LABEL_W + ((ms.clamp(c.start_ms, c.end_ms) - c.start_ms) as f64 / span) * PLOT_W
}

/// The onset timeline: a bar a pair, from its onset (hatched from the chart's start when the
/// logs do not go back to it) to the probes' time, and a dashed line where etcd lost its leader.
fn chart(o: &mut String, c: &Chart) {
    let width = LABEL_W + PLOT_W + 20.0;
    let height = TOP + ROW_H * c.bars.len() as f64 + BOTTOM;
    let plot_bottom = TOP + ROW_H * c.bars.len() as f64;
    let _ = writeln!(
        o,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"since when each path fails\">"
    );
    o.push_str("<defs><pattern id=\"unknown-onset\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"8\" fill=\"#d32f2f\"/></pattern>");
    let _ = write!(
        o,
        "<clipPath id=\"labels\"><rect x=\"0\" y=\"0\" width=\"{}\" height=\"{height}\"/></clipPath></defs>",
        LABEL_W - 8.0
    );
    let _ = write!(
        o,
        "<rect class=\"plot\" x=\"{LABEL_W}\" y=\"{TOP}\" width=\"{PLOT_W}\" height=\"{}\" fill=\"#f5f5f5\"/>",
        plot_bottom - TOP
    );
    for (i, b) in c.bars.iter().enumerate() {
        bar(o, c, b, TOP + ROW_H * i as f64);
    }
    for m in &c.marks {
        let x = x_of(c, m.at_ms);
        let _ = write!(
            o,
            "<g class=\"leader-lost\" data-at-ms=\"{}\" data-nodes=\"{}\"><line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{plot_bottom}\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">{}</text><title>{}</title></g>",
            m.at_ms,
            text(&m.nodes.join(", ")),
            TOP - 14.0,
            TOP - 18.0,
            text(&m.label),
            text(&format!(
                "{} at {}",
                m.label,
                instant_ms(m.at_ms)
            )),
        );
    }
    // The axis: the chart's start and the probes' time.
    let axis_y = plot_bottom + 16.0;
    let _ = write!(
        o,
        "<text x=\"{LABEL_W}\" y=\"{axis_y}\" font-size=\"12\">{}</text><text x=\"{}\" y=\"{axis_y}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
        text(&instant_ms(c.start_ms)),
        LABEL_W + PLOT_W,
        text(&format!("probes: {}", instant_ms(c.end_ms)))
    );
    o.push_str("</svg>\n<ul class=\"legend\"><li><span class=\"swatch failing\"></span>failing since its onset</li><li><span class=\"swatch hatched\"></span>failing since before the logs read</li><li><span class=\"swatch window\"></span>the onset's window (etcd says it up to 34 s late)</li><li><span class=\"swatch recovered\"></span>working again at the probes' time</li><li>dashed line: etcd lost its leader</li></ul>\n");
}

fn bar(o: &mut String, c: &Chart, b: &Bar, y: f64) {
    let x = match b.onset_ms {
        Some(ms) => x_of(c, ms),
        None => LABEL_W,
    };
    let w = (LABEL_W + PLOT_W - x).max(2.0);
    let (class, fill) = match (b.onset_ms, b.failing_now) {
        (_, false) => ("bar recovered", "#ef9a9a"),
        (None, true) => ("bar hatched", "url(#unknown-onset)"),
        (Some(_), true) => ("bar failing", "#d32f2f"),
    };
    let label = format!("{} → {}", b.from, b.to);
    if let (Some(e), Some(_)) = (b.earliest_ms, b.onset_ms) {
        let ex = x_of(c, e);
        let _ = write!(
            o,
            "<rect class=\"window\" x=\"{ex:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ffb74d\"><title>{}</title></rect>",
            y + 3.0,
            (x - ex).max(0.0),
            ROW_H - 6.0,
            text(&format!("{label}: the onset's window (etcd's prober says it up to 34 s late)")),
        );
    }
    let _ = write!(
        o,
        "<text x=\"4\" y=\"{:.1}\" font-size=\"12\" font-family=\"monospace\" clip-path=\"url(#labels)\">{}</text>",
        y + ROW_H * 0.7,
        text(&label)
    );
    let _ = write!(
        o,
        "<rect class=\"{class}\" data-from=\"{}\" data-to=\"{}\" data-onset-ms=\"{}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}</title></rect>",
        text(&b.from),
        text(&b.to),
        b.onset_ms.map(|m| m.to_string()).unwrap_or_default(),
        y + 3.0,
        ROW_H - 6.0,
        text(&format!("{label}: {}", b.detail)),
    );
}

fn instant_ms(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    crate::when::instant(t)
}

/// The page's look: plain, readable printed, no font or image to fetch.
const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#212121;line-height:1.4}
h1{font-size:1.5em;margin-bottom:.3em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em 1em;font-size:.9em}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dl.facts dt{font-weight:600}dl.facts dd{margin:0;overflow-wrap:anywhere}
p.verdict{font-size:1.15em;padding:.5em .8em;border-left:6px solid}p.verdict.problem{border-color:#d32f2f;background:#ffebee}p.verdict.healthy{border-color:#388e3c;background:#e8f5e9}
p.verdict .code{font-weight:700}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
table.rows{font-size:.9em}
table.grid td.cell{padding:0;min-width:9em}table.grid td.own{outline:2px solid #616161;outline-offset:-2px}
span.part{display:block;padding:.25em .5em;font-family:monospace;white-space:nowrap}
.open{background:#a5d6a7}.failing{background:#ef5350;color:#fff}.unknown{background:#e0e0e0}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em 1.2em;font-size:.9em}
span.swatch{display:inline-block;width:1em;height:1em;vertical-align:middle;margin-right:.35em;border:1px solid #999}
span.swatch.hatched{background:repeating-linear-gradient(45deg,#d32f2f 0 3px,#fff 3px 6px)}span.swatch.recovered{background:#ef9a9a}
span.swatch.failing{background:#d32f2f}span.swatch.window{background:#ffb74d}
pre{background:#fafafa;border:1px solid #e0e0e0;padding:.6em;overflow-x:auto;font-size:.85em}
li{overflow-wrap:anywhere}
footer{margin-top:2em;color:#757575;font-size:.8em}
@media print{nav{display:none}}
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::sheet::{Bar, Chart, ChartMark, Section};

    /// Markup, attribute breakers and terminal controls from outside are text, in an element
    /// and in an attribute alike; a newline stays white space.
    #[test]
    fn text_is_never_markup() {
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;&#x2F;script&gt;"
        );
        assert_eq!(
            text("\" onmouseover='x' a=\""),
            "&quot; onmouseover=&#x27;x&#x27; a=&quot;"
        );
        assert_eq!(text("a & b"), "a &amp; b");
        assert_eq!(
            text("cp1\u{202e}gnp.exe\u{1b}[2J"),
            "cp1\\u{202e}gnp.exe\\x1b[2J"
        );
        assert_eq!(text("one\ntwo\r"), "one\ntwo\\r");
    }

    /// A page of hostile sections holds no tag but ours: every `<` in it starts a tag this file
    /// writes.
    #[test]
    fn a_page_holds_only_our_tags() {
        let evil = "<img src=x onerror=alert(1)><svg onload=alert(2)></svg>\"'";
        let bar = Bar {
            from: evil.into(),
            to: evil.into(),
            onset_ms: Some(2_000),
            earliest_ms: Some(1_000),
            detail: evil.into(),
            failing_now: true,
        };
        let sections = vec![Section::new(evil, evil)
            .with(Block::Facts(vec![(evil.into(), evil.into())]))
            .with(Block::Verdict {
                code: evil.into(),
                healthy: false,
                summary: evil.into(),
            })
            .with(Block::Text(evil.into()))
            .with(Block::List(vec![evil.into()]))
            .with(Block::Steps(vec![evil.into()]))
            .with(Block::Table {
                header: vec![evil.into()],
                rows: vec![vec![evil.into()]],
            })
            .with(Block::Pre(format!("{evil}\n{evil}")))
            .with(Block::Chart(Chart {
                start_ms: 0,
                end_ms: 10_000,
                bars: vec![bar],
                marks: vec![ChartMark {
                    at_ms: 3_000,
                    label: evil.into(),
                    nodes: vec![evil.into()],
                }],
            }))];
        let page = page(evil, &sections);
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<svg onload"), "{page}");
        assert!(!page.contains("<script"), "{page}");
        // Every attribute value ends where we end it: no quote from the text.
        assert!(!page.contains("\"'"), "{page}");
        assert!(
            page.contains(&format!("content=\"{}\"", text(CSP))),
            "{page}"
        );
    }

    /// The chart's scale: the start at the plot's left, the end at its right, times outside
    /// the chart at its edges.
    #[test]
    fn the_chart_scale() {
        let c = Chart {
            start_ms: 1_000,
            end_ms: 11_000,
            bars: Vec::new(),
            marks: Vec::new(),
        };
        assert_eq!(x_of(&c, 1_000), LABEL_W);
        assert_eq!(x_of(&c, 11_000), LABEL_W + PLOT_W);
        assert_eq!(x_of(&c, 6_000), LABEL_W + PLOT_W / 2.0);
        assert_eq!(x_of(&c, 0), LABEL_W);
        assert_eq!(x_of(&c, 99_000), LABEL_W + PLOT_W);
    }
}
