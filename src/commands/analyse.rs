//! `kubectl etcdnet analyse FILE.tar.gz`: the verdict again, offline, from an evidence bundle
//! (`diagnose --bundle`). No cluster is contacted and no kubeconfig is read: the bundle is read
//! in memory ([`crate::bundle::read`]) and each cluster's [`Evidence`] judged with this plugin's
//! rules ([`Evidence::judge`], what a live `diagnose` runs), so the report is the one `diagnose`
//! printed, and a newer plugin's verdict on an old bundle. The `report.json` files the bundle
//! holds are for people; they are not replayed.

use std::path::PathBuf;
use std::time::Duration;

use super::Outcome;
use crate::bundle;
use crate::command::Kubectl;
use crate::error::Result;
use crate::render::{self, Format, Listed, Paint};
use crate::report::{ClusterFailure, Evidence, ListItem, ListReport};

#[derive(Debug, Clone)]
pub struct AnalyseOptions {
    /// The bundle.
    pub path: PathBuf,
    /// With several clusters: only the summary table.
    pub summary: bool,
    /// `--since`: judge with this log window instead of the bundle's.
    pub since: Option<std::time::Duration>,
    /// `--report`: the case report, printed or written to a file.
    pub report: Option<super::CaseReport>,
    /// `--context` and `--kubeconfig`, read by nothing here: the commands the report prints
    /// carry them ([`Kubectl`]). Without `--context`, the context the bundle's run used (a
    /// pasted command then reaches that Supervisor or fails, never the current context's).
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
}

impl AnalyseOptions {
    /// `kubectl` for the commands printed for one of the bundle's clusters.
    fn kubectl(&self, e: &Evidence) -> Kubectl {
        let context = self.context.as_deref().unwrap_or(&e.context);
        Kubectl::new(Some(context), self.kubeconfig.as_deref())
    }
}

/// Reads the bundle and prints what `diagnose` printed: one cluster's report, or the list of
/// several; the exit code is the one `diagnose` had (a bad bundle is a configuration error, 2).
pub fn run(opts: &AnalyseOptions, format: Format) -> Result<Outcome> {
    if let Some(c) = &opts.report {
        c.check_target()?;
        // The bundle is read before the report is written: a report over it would replace the
        // evidence with its picture.
        if let Some(file) = &c.file {
            let same = |a: &std::path::Path, b: &std::path::Path| {
                a.canonicalize()
                    .ok()
                    .is_some_and(|a| b.canonicalize().ok() == Some(a))
            };
            if same(file, &opts.path) {
                return Err(crate::error::Error::Usage(format!(
                    "cannot write report {}: it is the bundle being analysed; name another file",
                    file.display()
                )));
            }
        }
    }
    let mut bundle = bundle::read(&opts.path)?;
    if let Some(since) = opts.since {
        for e in &mut bundle.evidence {
            e.since_s = since.as_secs();
        }
    }
    let m = &bundle.manifest;
    let mut notes = vec![format!(
        "analysed {} cluster(s) from {}, written {} by kubectl-etcdnet {}: kubectl etcdnet {}",
        bundle.evidence.len(),
        opts.path.display(),
        m.created,
        m.plugin_version,
        // The bundle's words, each one shell word: a pasted line runs what ran, nothing more.
        m.args
            .iter()
            .map(|a| crate::command::quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    )];
    // A bundle that had to leave objects out (its caps) says so.
    notes.extend(bundle.left_out_notes());
    let (stdout, mut exit_code, items) = match bundle.evidence.as_slice() {
        [one] => {
            let report = one.judge(&opts.kubectl(one))?;
            (
                render::output(&report, format, Paint::detect())?,
                report.result.exit_code,
                vec![ListItem::Report(report)],
            )
        }
        many => {
            let items = many.iter().map(|e| item(e, &opts.kubectl(e))).collect();
            // The clusters ran concurrently: the run took about as long as the slowest.
            let took = many.iter().map(|e| e.duration_ms).max().unwrap_or(0);
            let list = ListReport::new(items, Duration::from_millis(took));
            (
                render::output(
                    &Listed {
                        list: &list,
                        detail: !opts.summary,
                    },
                    format,
                    Paint::detect(),
                )?,
                list.result.exit_code,
                list.items,
            )
        }
    };
    let stdout = match &opts.report {
        None => stdout,
        Some(c) => {
            let page = case_report(c, &bundle, &opts.path, &items);
            super::put_report(c, page, stdout, &mut notes, &mut exit_code)
        }
    };
    Ok(Outcome {
        stdout,
        notes,
        exit_code,
    })
}

/// The case report of the bundle's clusters, its provenance the bundle's: who wrote it when,
/// with which command, and that this plugin judged it again.
fn case_report(
    c: &super::CaseReport,
    bundle: &bundle::Bundle,
    path: &std::path::Path,
    items: &[ListItem<crate::report::DiagnoseReport>],
) -> String {
    let m = &bundle.manifest;
    let mut contexts: Vec<&str> = bundle.evidence.iter().map(|e| e.context.as_str()).collect();
    contexts.dedup();
    let provenance = vec![
        (
            "Source".to_string(),
            format!(
                "evidence bundle {}",
                path.file_name()
                    .unwrap_or(path.as_os_str())
                    .to_string_lossy()
            ),
        ),
        ("Bundle written".into(), m.created.clone()),
        (
            "Written by".into(),
            format!("kubectl-etcdnet {}", m.plugin_version),
        ),
        (
            "Bundle's command".into(),
            format!(
                "kubectl etcdnet {}",
                m.args
                    .iter()
                    .map(|a| crate::command::quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        ("Supervisor context".into(), contexts.join(", ")),
        (
            "Judged by".into(),
            format!(
                "kubectl-etcdnet {} (analyse, offline)",
                env!("CARGO_PKG_VERSION")
            ),
        ),
    ];
    let run = render::Run {
        at: crate::when::parse(&m.created).unwrap_or_else(std::time::SystemTime::now),
        plugin_version: m.plugin_version.clone(),
    };
    render::case_report(c.format, items, &run, &provenance)
}

/// One cluster's item: its report, or (its objects do not make a cluster) its own error row,
/// as in a live many-cluster run.
fn item(e: &Evidence, kubectl: &Kubectl) -> ListItem<crate::report::DiagnoseReport> {
    match e.judge(kubectl) {
        Ok(r) => ListItem::Report(r),
        Err(err) => ListItem::Failed(
            ClusterFailure::new(&e.namespace, &e.cluster, &err)
                .took(Duration::from_millis(e.duration_ms)),
        ),
    }
}
