//! `--all` / `-A`: one summary table, worst first, then the detail of each cluster that is not
//! healthy (unless `--summary`), each as its single-cluster run would print it.

use serde::Serialize;

use super::{Lines, Paint, Tabular, Tone, View};
use crate::error::{EXIT_OK, EXIT_PROBLEM};
use crate::report::{ListItem, ListReport, Summarized};

/// A many-cluster list as printed: its JSON and YAML are the list's own; its tables are the
/// summary and, with `detail` (no `--summary`), each unhealthy cluster's own tables after it.
pub(crate) struct Listed<'a, T> {
    pub list: &'a ListReport<T>,
    pub detail: bool,
}

impl<T: Summarized + Tabular + Serialize> Tabular for Listed<'_, T> {
    type Document = ListReport<T>;

    fn document(&self) -> &ListReport<T> {
        self.list
    }

    fn table(&self, paint: Paint) -> String {
        list_table(self.list, false, paint, self.detail, &View::default())
    }

    fn wide(&self, paint: Paint) -> String {
        list_table(self.list, true, paint, self.detail, &View::default())
    }

    /// The summary table as always; each unhealthy cluster's first screen under it.
    fn first_screen(&self, paint: Paint, wide: bool, view: &View) -> String {
        list_table(self.list, wide, paint, self.detail, view)
    }
}

/// The summary table, a line per cluster that could not be looked at and the count; then, with
/// `detail`, the tables of each cluster that is not healthy, as `view` shows them.
fn list_table<T: Summarized + Tabular>(
    list: &ListReport<T>,
    wide: bool,
    paint: Paint,
    detail: bool,
    view: &View,
) -> String {
    let mut out = Lines::new(paint);
    if list.items.is_empty() {
        out.line("No clusters found.");
        return out.finish();
    }
    out.table(&summary_header::<T>(wide), &summary_rows(list, wide));
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
                text.push_str(&super::tables(report, wide, paint, view));
            }
        }
    }
    text
}

fn summary_header<T: Summarized>(wide: bool) -> Vec<&'static str> {
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
    if wide {
        h.push("DETAIL");
    }
    h
}

fn summary_rows<T: Summarized>(list: &ListReport<T>, wide: bool) -> Vec<Vec<String>> {
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
            if wide {
                row.push(r.detail);
            }
            row
        })
        .collect()
}
