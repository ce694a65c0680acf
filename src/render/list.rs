//! `--all` / `-A`: one summary table, worst first, then the detail of each cluster that is not
//! healthy (unless `--summary`), each as its single-cluster run would print it.

use super::{structured, Format, Lines, Paint, Tone};
use crate::error::{Result, EXIT_OK, EXIT_PROBLEM};
use crate::report::{DiagnoseReport, ListItem, ListReport, StatusReport, Summarized};

pub fn diagnose_list(
    list: &ListReport<DiagnoseReport>,
    format: Format,
    paint: Paint,
    detail: bool,
) -> Result<String> {
    list_of(list, format, paint, detail, |r, f| {
        super::diagnose(r, f, paint)
    })
}

pub fn status_list(
    list: &ListReport<StatusReport>,
    format: Format,
    paint: Paint,
    detail: bool,
) -> Result<String> {
    list_of(list, format, paint, detail, |r, f| {
        super::status(r, f, paint)
    })
}

fn list_of<T: Summarized + serde::Serialize>(
    list: &ListReport<T>,
    format: Format,
    paint: Paint,
    detail: bool,
    one: impl Fn(&T, Format) -> Result<String>,
) -> Result<String> {
    if matches!(format, Format::Json | Format::Yaml) {
        return structured(list, format);
    }
    let mut out = Lines::new(paint);
    if list.items.is_empty() {
        out.line("No clusters found.");
        return Ok(out.finish());
    }
    out.table(&summary_header::<T>(format), &summary_rows(list, format));
    // A failure's reason is all there is to read about it: under the table, one line each.
    let failed: Vec<_> = list
        .items
        .iter()
        .filter(|i| matches!(i, ListItem::Failed(_)))
        .map(|i| i.row())
        .collect();
    if !failed.is_empty() {
        out.blank();
        for r in failed {
            out.line(format!("{}/{}: {}", r.namespace, r.cluster, r.detail));
        }
    }
    out.blank();
    let r = &list.result;
    let tone = match r.exit_code {
        EXIT_OK => Tone::Good,
        EXIT_PROBLEM => Tone::Warn,
        _ => Tone::Bad,
    };
    out.marked(
        "",
        tone,
        &format!("{} of {} clusters healthy", r.healthy, r.clusters),
        &format!(
            "{} ({:.1}s)",
            if r.failed > 0 {
                format!(", {} could not be looked at", r.failed)
            } else {
                String::new()
            },
            r.duration_ms as f64 / 1000.0
        ),
    );
    let mut text = out.finish();
    if detail {
        for item in list.items.iter().filter(|i| i.exit_code() != EXIT_OK) {
            if let ListItem::Report(report) = item {
                let row = item.row();
                let mut head = Lines::new(paint);
                head.blank();
                head.line(format!("=== {}/{} ===", row.namespace, row.cluster));
                text.push_str(&head.finish());
                text.push_str(&one(report, format)?);
            }
        }
    }
    Ok(text)
}

fn summary_header<T: Summarized>(format: Format) -> Vec<&'static str> {
    let mut h = if T::DIAGNOSIS {
        vec![
            "NAMESPACE",
            "CLUSTER",
            "VERDICT",
            "ROUTE",
            "NODES",
            "SECONDS",
        ]
    } else {
        vec!["NAMESPACE", "CLUSTER", "STATUS", "MACHINES", "SECONDS"]
    };
    if format == Format::Wide {
        h.push("DETAIL");
    }
    h
}

fn summary_rows<T: Summarized>(list: &ListReport<T>, format: Format) -> Vec<Vec<String>> {
    list.items
        .iter()
        .map(|i| {
            let r = i.row();
            let or_none = |s: String| if s.is_empty() { super::NONE.into() } else { s };
            let mut row = vec![r.namespace, r.cluster, r.verdict];
            if T::DIAGNOSIS {
                row.push(or_none(r.route));
            }
            row.push(or_none(r.nodes));
            row.push(format!("{:.1}", r.duration_ms as f64 / 1000.0));
            if format == Format::Wide {
                row.push(r.detail);
            }
            row
        })
        .collect()
}
