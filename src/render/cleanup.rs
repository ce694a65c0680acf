//! `cleanup` as a table: one row per pod found, then where it could not look.

use super::{structured, table, Format};
use crate::error::Result;
use crate::report::CleanupReport;

pub fn cleanup(report: &CleanupReport, format: Format) -> Result<String> {
    match format {
        Format::Json | Format::Yaml => structured(report, format),
        Format::Table | Format::Wide => Ok(cleanup_table(report)),
    }
}

fn cleanup_table(report: &CleanupReport) -> String {
    let mut out = String::new();
    if report.items.is_empty() {
        out.push_str("No kubectl-etcdnet pods found.\n");
    } else {
        let rows: Vec<Vec<String>> = report
            .items
            .iter()
            .map(|i| {
                vec![
                    i.cluster.clone(),
                    i.namespace.clone(),
                    i.name.clone(),
                    i.age_seconds
                        .map(human_age)
                        .unwrap_or_else(|| "<unknown>".into()),
                    i.action.to_string(),
                ]
            })
            .collect();
        out.push_str(&table(
            &["CLUSTER", "NAMESPACE", "POD", "AGE", "ACTION"],
            &rows,
        ));
    }
    for s in &report.skipped {
        out.push_str(&format!("skipped: {s}\n"));
    }
    out
}

/// kubectl's compact age: 45s, 12m, 5h, 3d.
pub fn human_age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_like_kubectl() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(119), "119s");
        assert_eq!(human_age(600), "10m");
        assert_eq!(human_age(3 * 3600), "3h");
        assert_eq!(human_age(5 * 86400), "5d");
    }
}
