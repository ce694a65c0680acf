//! `kubectl etcdnet analyse FILE.tar.gz`: the verdict again, offline, from an evidence bundle
//! (`diagnose --bundle`). No cluster is contacted and no kubeconfig is read: the bundle is read
//! in memory ([`crate::bundle::read`]) and each cluster's [`Evidence`] judged with this plugin's
//! rules ([`Evidence::judge`], what a live `diagnose` runs), so the report is the one `diagnose`
//! printed, and a newer plugin's verdict on an old bundle. The `report.json` files the bundle
//! holds are for people; they are not replayed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Outcome;
use crate::bundle;
use crate::command::Kubectl;
use crate::error::{Error, Result};
use crate::render::{self, Format, Listed, Paint};
use crate::report::compare::Judged;
use crate::report::{ClusterFailure, Comparison, Evidence, ListItem, ListReport};
use crate::when;

#[derive(Debug, Clone)]
pub(crate) struct AnalyseOptions {
    /// The bundle.
    pub path: PathBuf,
    /// With several clusters: only the summary table.
    pub summary: bool,
    /// `--details`: every section of the tables, not the first screen (as `diagnose`).
    pub details: bool,
    /// `--since`: judge with this log window instead of the bundle's.
    pub since: Option<std::time::Duration>,
    /// `--report`: the case report, printed or written to a file.
    pub report: Option<super::CaseReport>,
    /// `--context` and `--kubeconfig`, read by nothing here: the commands the report prints
    /// carry them ([`Kubectl`]). Without `--context`, the context the bundle's run used (a
    /// pasted command then reaches that Supervisor or fails, never the current context's).
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    /// `--against GOOD`: compare with this older bundle of the same cluster instead.
    pub against: Option<PathBuf>,
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
pub(crate) fn run(opts: &AnalyseOptions, format: Format) -> Result<Outcome> {
    if let Some(c) = &opts.report {
        c.check_target()?;
        // The bundles are read before the report is written: a report over one would replace
        // the evidence with its picture.
        if let Some(file) = &c.file {
            let same = |a: &std::path::Path, b: &std::path::Path| {
                a.canonicalize()
                    .ok()
                    .is_some_and(|a| b.canonicalize().ok() == Some(a))
            };
            if let Some(bundle) = std::iter::once(&opts.path)
                .chain(&opts.against)
                .find(|b| same(file, b))
            {
                return Err(crate::error::Error::Usage(format!(
                    "cannot write report {}: it is the bundle being analysed ({}); name another file",
                    file.display(),
                    bundle.display()
                )));
            }
        }
    }
    if let Some(good) = &opts.against {
        return against(opts, good, format);
    }
    let bundle = read(opts, &opts.path)?;
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
    // As `diagnose` printed it: the first screen unless --details, its header's time the run's
    // (the bundle's), so the ages it prints are those the run saw.
    let view = |kubectl: Option<Kubectl>| render::View {
        at: crate::when::parse(&m.created).unwrap_or_else(std::time::SystemTime::now),
        ..render::View::new(opts.details, kubectl)
    };
    let (stdout, mut exit_code, items) = match bundle.evidence.as_slice() {
        [one] => {
            let report = one.judge(&opts.kubectl(one))?;
            (
                render::output_as(
                    &report,
                    format,
                    Paint::detect(),
                    &view(Some(opts.kubectl(one))),
                )?,
                report.result.exit_code,
                vec![ListItem::Report(report)],
            )
        }
        many => {
            let items = many.iter().map(|e| item(e, &opts.kubectl(e))).collect();
            // The clusters ran concurrently: the run took about as long as the slowest.
            let took = many.iter().map(|e| e.duration_ms).max().unwrap_or(0);
            let list = ListReport::new(items, Duration::from_millis(took));
            // One run wrote them all, with one context: its (or --context, --kubeconfig).
            let kubectl = many.first().map(|e| opts.kubectl(e));
            (
                render::output_as(
                    &Listed {
                        list: &list,
                        detail: !opts.summary,
                    },
                    format,
                    Paint::detect(),
                    &view(kubectl),
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

/// The bundle at `path`, with `--since`'s log window when given.
fn read(opts: &AnalyseOptions, path: &Path) -> Result<bundle::Bundle> {
    let mut bundle = bundle::read(path)?;
    if let Some(since) = opts.since {
        for e in &mut bundle.evidence {
            e.since_s = since.as_secs();
        }
    }
    Ok(bundle)
}

/// `analyse NEW --against GOOD`: both bundles judged by this plugin's rules, as `analyse` judges
/// one, and what changed from GOOD to NEW ([`Comparison`]). Refused in one line (exit 2, a
/// usage error) when they are not one cluster's, or when GOOD was written after NEW (the
/// remedy: swap them). The exit code is NEW's, as `analyse NEW` gives it.
fn against(opts: &AnalyseOptions, good_path: &Path, format: Format) -> Result<Outcome> {
    let new = read(opts, &opts.path)?;
    let good = read(opts, good_path)?;
    let (n, g) = pair(&new, &opts.path, &good, good_path)?;
    let (created_new, created_good) = (&new.manifest.created, &good.manifest.created);
    if let (Some(t_new), Some(t_good)) = (when::parse(created_new), when::parse(created_good)) {
        if t_good > t_new {
            return Err(Error::Usage(format!(
                "{} (written {}) is newer than {} (written {}): --against takes the older bundle; swap them: kubectl etcdnet analyse {} --against {}",
                good_path.display(),
                when::instant(t_good),
                opts.path.display(),
                when::instant(t_new),
                crate::command::quote(&good_path.display().to_string()),
                crate::command::quote(&opts.path.display().to_string()),
            )));
        }
    }
    let report_new = n.judge(&opts.kubectl(n))?;
    let report_good = g.judge(&opts.kubectl(g))?;
    let judged = |b: &bundle::Bundle, path: &Path, report| Judged {
        bundle: path.display().to_string(),
        created: b.manifest.created.clone(),
        plugin_version: b.manifest.plugin_version.clone(),
        report,
    };
    let comparison = Comparison::of(
        &judged(&good, good_path, &report_good),
        &judged(&new, &opts.path, &report_new),
    );
    let mut notes = vec![format!(
        "compared {}/{} in {} (written {}) against {} (written {})",
        n.namespace,
        n.cluster,
        opts.path.display(),
        created_new,
        good_path.display(),
        created_good
    )];
    notes.extend(good.left_out_notes());
    notes.extend(new.left_out_notes());
    let mut exit_code = comparison.exit_code;
    let mut stdout = render::output(&comparison, format, Paint::detect())?;
    // `--report`: the same sections as a page or Markdown, printed or written to its file.
    if let Some(c) = &opts.report {
        let (title, sections) = render::compare::page(&comparison);
        let page = render::case_page(c.format, &title, &sections);
        stdout = super::put_report(c, page, stdout, &mut notes, &mut exit_code);
    }
    Ok(Outcome {
        stdout,
        notes,
        exit_code,
    })
}

/// The cluster `--against` compares, in each bundle: both of one cluster, or the one cluster of
/// one bundle found in the other (a bundle of `--all`/`-A` compared with one cluster's).
/// Refused in one line, with what each holds: two clusters, a cluster the other bundle lacks,
/// or two bundles of several clusters.
fn pair<'a>(
    new: &'a bundle::Bundle,
    new_path: &Path,
    good: &'a bundle::Bundle,
    good_path: &Path,
) -> Result<(&'a Evidence, &'a Evidence)> {
    let name = |e: &Evidence| format!("{}/{}", e.namespace, e.cluster);
    let same = |a: &Evidence, b: &Evidence| a.namespace == b.namespace && a.cluster == b.cluster;
    // The clusters of a bundle of several, the first few named.
    let holds = |b: &bundle::Bundle| {
        const NAMED: usize = 5;
        let mut names: Vec<String> = b.evidence.iter().take(NAMED).map(name).collect();
        if b.evidence.len() > NAMED {
            names.push(format!("and {} more", b.evidence.len() - NAMED));
        }
        names.join(", ")
    };
    let lacks = |one: &Evidence, path: &Path, b: &bundle::Bundle| {
        Error::Usage(format!(
            "--against compares two bundles of one cluster: {} holds no cluster {} (it holds {})",
            path.display(),
            name(one),
            holds(b)
        ))
    };
    match (new.evidence.as_slice(), good.evidence.as_slice()) {
        ([n], [g]) if same(n, g) => Ok((n, g)),
        ([n], [g]) => Err(Error::Usage(format!(
            "--against compares two bundles of one cluster: {} is of {} and {} of {}",
            new_path.display(),
            name(n),
            good_path.display(),
            name(g)
        ))),
        ([n], _) => match good.evidence.iter().find(|g| same(n, g)) {
            Some(g) => Ok((n, g)),
            None => Err(lacks(n, good_path, good)),
        },
        (_, [g]) => match new.evidence.iter().find(|n| same(n, g)) {
            Some(n) => Ok((n, g)),
            None => Err(lacks(g, new_path, new)),
        },
        _ => Err(Error::Usage(format!(
            "--against compares one cluster, and {} and {} each hold several: write one cluster's bundle (kubectl etcdnet diagnose CLUSTER -n NAMESPACE --bundle FILE) for one of them",
            new_path.display(),
            good_path.display()
        ))),
    }
}
