//! `cleanup` as a table: one row per pod found, then where it could not look.

use super::{Lines, Paint, Tabular};
use crate::report::{CleanupAction, CleanupReport};

/// The same table for `-o table` and `-o wide`, never coloured.
impl Tabular for CleanupReport {
    type Document = Self;

    fn document(&self) -> &Self {
        self
    }

    fn table(&self, _paint: Paint) -> String {
        cleanup_table(self)
    }
}

fn cleanup_table(report: &CleanupReport) -> String {
    // Nothing in this table carries a judgement: no colour.
    let mut out = Lines::new(Paint::default());
    if report.items.is_empty() {
        out.line("No kubectl-etcdnet pods found.");
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
                        .map(|s| crate::when::span(std::time::Duration::from_secs(s)))
                        .unwrap_or_else(|| "<unknown>".into()),
                    i.action.to_string(),
                ]
            })
            .collect();
        out.table(&["CLUSTER", "NAMESPACE", "POD", "AGE", "ACTION"], &rows);
    }
    // Says why a pod the admin may have come to delete is still there, and how to delete it.
    let running = report
        .items
        .iter()
        .filter(|i| i.action == CleanupAction::KeptRunning)
        .count();
    if running > 0 {
        out.line(format!(
            "{running} pod(s) kept: not finished and not past a deadline, so perhaps another run's in progress; --include-running deletes them too"
        ));
    }
    for s in &report.skipped {
        out.line(format!("skipped: {s}"));
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_kept_running_say_how_to_delete_them() {
        use crate::report::CleanupItem;
        let item = |name: &str, action| CleanupItem {
            cluster: "supervisor".into(),
            namespace: "ns-prod".into(),
            name: name.into(),
            age_seconds: Some(30),
            action,
        };
        let report = CleanupReport::new(
            vec![
                item("etcdnet-jumpbox-a-k3x9q", CleanupAction::KeptRunning),
                item("etcdnet-jumpbox-b-k3x9q", CleanupAction::Deleted),
            ],
            vec![],
        );
        let out = cleanup_table(&report);
        assert!(out.contains("kept (running; --all to delete)"), "{out}");
        assert!(out.contains("1 pod(s) kept: "), "{out}");
        let none = CleanupReport::new(vec![item("x", CleanupAction::Deleted)], vec![]);
        assert!(out.contains("--include-running deletes them too"), "{out}");
        assert!(!cleanup_table(&none).contains("--include-running"));
    }

    #[test]
    fn ages_like_kubectl() {
        let age = |s| crate::when::span(std::time::Duration::from_secs(s));
        assert_eq!(age(5), "5s");
        assert_eq!(age(119), "119s");
        assert_eq!(age(600), "10m");
        assert_eq!(age(3 * 3600), "3h");
        assert_eq!(age(5 * 86400), "5d");
    }
}
