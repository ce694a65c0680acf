//! The render stage: reports in, strings out. Nothing here writes to a terminal; `main`
//! prints what these return. Tables follow kubectl's look: upper-case headers, no borders,
//! columns three spaces apart, `<none>` for an empty cell.
//!
//! One dispatch: every report implements [`Tabular`] (its table and its wide table), and
//! [`output`] is the one place an output [`Format`] is switched; JSON and YAML are each
//! report's serialization, the same for all. `--watch`'s rounds and change lines are
//! [`Watch`]'s. A new format is a variant of [`Format`] (its doc is the `-o` help), its arm in
//! the switch behind [`output`] and its answer to [`Format::is_tables`].
//!
//! Text for a terminal is never built by pushing strings onto a `String`: every cell goes
//! through [`table`] and every other line through [`Lines`], and both pass what they are given
//! through [`visible`]. The reports hold what the API server, the nodes, their logs and ssh
//! said, verbatim; a namespace editor or a broken node can put escape sequences there (retitle
//! the window, clear the screen, fake a verdict in colour). The only escape sequences that reach
//! a terminal are [`Paint`]'s own, added after. `main` passes its stderr lines through
//! [`visible`] too, and every log event through [`visible_log`]. JSON and YAML keep every string as it was, escaped as their formats escape.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::{Padding, Style};

use crate::error::{Error, Result};
use crate::report::VersionReport;

mod case;
mod cleanup;
pub(crate) mod compare;
mod diagnose;
mod firewall;
mod guard;
pub(crate) mod html;
mod list;
mod location;
pub(crate) mod markdown;
mod metrics;
mod network;
mod nsx_manager;
pub(crate) mod sheet;
mod status;
mod summary;
mod timeline;
mod watch;

pub(crate) use diagnose::dry_run;
pub(crate) use list::Listed;
pub(crate) use watch::Watch;

/// How `-o table` and `-o wide` show a diagnosis to a person: its first screen (the default:
/// the verdict first, what is alike said once, [`summary`]) or every section (`--details`, and
/// what every other report prints). The first screen's header and commands need what the
/// report does not hold: when, the plugin's version, the run's `--kubeconfig`, the width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Every section, as before the first screen existed (`--details`).
    pub details: bool,
    /// The widest the first screen's lines are (the terminal's; 100 when stdout is not one).
    pub width: usize,
    /// When the run ended: the header's time and the age of the onset.
    pub at: std::time::SystemTime,
    /// `kubectl` as the run reached the Supervisor (its `--context`, its `--kubeconfig`), which
    /// every command the first screen prints carries; else the report's own context.
    pub kubectl: Option<crate::command::Kubectl>,
}

impl Default for View {
    /// Every section: what a report printed before `--details` existed.
    fn default() -> View {
        View {
            details: true,
            width: View::NOT_A_TERMINAL,
            at: std::time::SystemTime::now(),
            kubectl: None,
        }
    }
}

impl View {
    /// The width when stdout is not a terminal (a pipe, a file, a CI log).
    pub const NOT_A_TERMINAL: usize = 100;

    /// The view a run asks for: the first screen unless `details`, as wide as stdout's
    /// terminal, at this moment.
    pub fn new(details: bool, kubectl: Option<crate::command::Kubectl>) -> View {
        let width = terminal_size::terminal_size_of(std::io::stdout())
            .map(|(w, _)| usize::from(w.0))
            .filter(|w| *w >= 40)
            .unwrap_or(View::NOT_A_TERMINAL);
        View {
            details,
            width,
            at: std::time::SystemTime::now(),
            kubectl,
        }
    }
}

/// How a report is printed: the `-o` flag's values, whose docs here are its help. It derives
/// clap's `ValueEnum` so that `cli` parses the flag straight into it (one enum, not a copy per
/// layer); nothing in `render` calls clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable tables
    Table,
    /// Tables with more columns
    Wide,
    /// The full report as JSON (versioned schema)
    Json,
    /// The full report as YAML (versioned schema)
    Yaml,
}

impl Format {
    /// Whether this format prints tables (for people) rather than documents (for scripts):
    /// `--watch` prints tables' rounds as change lines.
    pub fn is_tables(self) -> bool {
        match self {
            Format::Table | Format::Wide => true,
            Format::Json | Format::Yaml => false,
        }
    }
}

/// What `-o table` and `-o wide` print of a report; JSON and YAML are its document's
/// serialization.
pub trait Tabular {
    /// What `-o json|yaml` print: a report type of `report` (the report itself, or the list a
    /// summary shows).
    type Document: Serialize;

    fn document(&self) -> &Self::Document;

    /// The report as tables and lines (`-o table`).
    fn table(&self, paint: Paint) -> String;

    /// The tables with more columns (`-o wide`); the same as [`Tabular::table`] by default, for
    /// a report with none to add.
    fn wide(&self, paint: Paint) -> String {
        self.table(paint)
    }

    /// What a person reads first ([`View`] without `details`): a diagnosis's summary; every
    /// table by default, for a report that has no shorter form.
    fn first_screen(&self, paint: Paint, wide: bool, _view: &View) -> String {
        if wide {
            self.wide(paint)
        } else {
            self.table(paint)
        }
    }
}

/// The tables of `report` as `view` shows them.
fn tables<R: Tabular>(report: &R, wide: bool, paint: Paint, view: &View) -> String {
    match (view.details, wide) {
        (false, _) => report.first_screen(paint, wide, view),
        (true, false) => report.table(paint),
        (true, true) => report.wide(paint),
    }
}

/// How JSON and YAML documents are laid out: one for a run, or one per round of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Pretty JSON, or a YAML document.
    Document,
    /// `--watch`: JSON on one line (JSON lines), or a YAML document started with `---`.
    Stream,
}

/// A report as `format` prints it, every section of its tables.
pub fn output<R: Tabular>(report: &R, format: Format, paint: Paint) -> Result<String> {
    switch(report, format, paint, Layout::Document, &View::default())
}

/// A report as `format` prints it, its tables as `view` shows them (JSON and YAML are the
/// same whatever the view).
pub fn output_as<R: Tabular>(
    report: &R,
    format: Format,
    paint: Paint,
    view: &View,
) -> Result<String> {
    switch(report, format, paint, Layout::Document, view)
}

/// The one switch on the output format, for a run's report and for a watch's rounds.
fn switch<R: Tabular>(
    report: &R,
    format: Format,
    paint: Paint,
    layout: Layout,
    view: &View,
) -> Result<String> {
    match (format, layout) {
        (Format::Table, _) => Ok(tables(report, false, paint, view)),
        (Format::Wide, _) => Ok(tables(report, true, paint, view)),
        (Format::Json, Layout::Document) => structured(report.document(), Format::Json),
        (Format::Json, Layout::Stream) => json_line(report.document()),
        (Format::Yaml, Layout::Document) => structured(report.document(), Format::Yaml),
        (Format::Yaml, Layout::Stream) => Ok(format!(
            "---\n{}",
            structured(report.document(), Format::Yaml)?
        )),
    }
}

/// `version`: one line, `kubectl-etcdnet 0.1.0`.
impl Tabular for VersionReport {
    type Document = Self;

    fn document(&self) -> &Self {
        self
    }

    fn table(&self, paint: Paint) -> String {
        let mut out = Lines::new(paint);
        out.line(format!("kubectl-etcdnet {}", self.version));
        out.finish()
    }
}

/// `--report`'s formats: a case report to attach to a support case or paste into a ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CaseFormat {
    /// One self-contained HTML page (inline CSS and SVG, no script, nothing fetched)
    Html,
    /// Markdown for a ticket's text field (GitHub tables)
    Md,
}

impl CaseFormat {
    /// The file name's usual ending.
    pub fn extension(self) -> &'static str {
        match self {
            CaseFormat::Html => "html",
            CaseFormat::Md => "md",
        }
    }
}

/// A page of `sections` under `title` in `format`: the one switch on the case format. Another
/// report (what changed between two bundles) gives its own sections here.
pub(crate) fn case_page(format: CaseFormat, title: &str, sections: &[sheet::Section]) -> String {
    match format {
        CaseFormat::Html => html::page(title, sections),
        CaseFormat::Md => markdown::page(title, sections),
    }
}

pub(crate) use case::Run;

/// The case report of a run's or a bundle's clusters (one, or several with a summary first).
/// `run` says when the run was and which plugin made it; `provenance` where the report came
/// from (time, Supervisor context, command), as plain text.
pub(crate) fn case_report(
    format: CaseFormat,
    items: &[crate::report::ListItem<crate::report::DiagnoseReport>],
    run: &Run,
    provenance: &[(String, String)],
) -> String {
    let (title, sections) = case::page(items, run, provenance);
    case_page(format, &title, &sections)
}

pub(crate) const NONE: &str = "<none>";

/// [`visible`] line by line: the newlines of a text laid out in lines are kept, and each line's
/// own controls written visibly (a `\r` cannot overwrite a line either).
pub(crate) fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && hidden(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split('\n').map(visible).collect::<Vec<_>>().join("\n"))
}

/// `text` as it may be shown on a terminal: every character that a terminal would act on
/// instead of print is written as an escape a reader can see, and everything else (any script,
/// emoji) is kept as it is.
///
/// - C0 controls and DEL (`char::is_control` below U+0080): `\n`, `\r`, `\t` for the three
///   everyone knows, else `\x1b`, `\x07`, ...: ESC starts every escape sequence (CSI, OSC,
///   DCS), so with it visible the rest of a sequence is harmless text; a newline or a carriage
///   return in a cell would break the table's layout or overwrite what was printed before.
/// - C1 controls (U+0080..U+009F): `\u{9b}`. Terminals that read them act on them as on ESC
///   sequences (U+009B is CSI, U+009D is OSC).
/// - Every format character (Unicode general category Cf, from `unicode-general-category`'s
///   tables rather than a list of our own): `\u{202e}`. They are invisible or act on the text
///   around them: the bidirectional controls (overrides and isolates U+202A..U+202E,
///   U+2066..U+2069, and the marks LRM U+200E, RLM U+200F, ALM U+061C) reorder what is
///   displayed, so a name could read as another name or a cell as another cell; the zero-width
///   space, non-joiner and joiner (U+200B..U+200D), the word joiner (U+2060), the byte order
///   mark (U+FEFF), the soft hyphen (U+00AD) and the tag characters hide text, so two names
///   that look the same differ, or a message carries words nobody sees. (A zero-width joiner
///   inside an emoji sequence is escaped too: what the sequence shows is not worth what a
///   hidden one can do.)
/// - The whole tag block U+E0000..U+E007F, the unassigned ones included (not Cf, as invisible),
///   and the line and paragraph separators (U+2028, U+2029): they split a line.
///
/// A backslash is kept as it is: kubectl does so too, and our own text has them.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Writing to a String cannot fail.
            c if (c as u32) < 0x80 && hidden(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A log event as `tracing` formatted it (one event, its newline last) made [`visible`]: the
/// event stays one line, whatever its message quoted (an API server's error text, which a
/// `kube::Error` displays, carries what the server or a proxy in front of it wrote). Only the
/// one newline that ends the text is kept as it is.
pub fn visible_log(text: &str) -> Cow<'_, str> {
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (text, ""),
    };
    match visible(body) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(mut out) => {
            out.push_str(end);
            Cow::Owned(out)
        }
    }
}

/// A character [`visible`] writes as an escape.
fn hidden(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory};
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{e0000}'..='\u{e007f}')
        || get_general_category(c) == GeneralCategory::Format
}

/// The tone of the one painted word of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Good,
    Warn,
    Bad,
}

/// Table-format output, line by line: what goes in is made [`visible`] (a line cannot hold a
/// line break from outside, so it cannot be split or overwritten), and only [`Paint`] adds
/// escape sequences, around text that is already visible.
pub(crate) struct Lines {
    out: String,
    paint: Paint,
}

impl Lines {
    pub fn new(paint: Paint) -> Lines {
        Lines {
            out: String::new(),
            paint,
        }
    }

    /// One line; its newline is added here.
    pub fn line(&mut self, text: impl AsRef<str>) {
        self.out.push_str(&visible(text.as_ref()));
        self.out.push('\n');
    }

    /// An empty line between sections.
    pub fn blank(&mut self) {
        self.out.push('\n');
    }

    /// One line with one word painted: `before`, `word` in `tone`, `after`.
    pub fn marked(&mut self, before: &str, tone: Tone, word: &str, after: &str) {
        self.out.push_str(&visible(before));
        self.out.push_str(&self.paint.tone(tone, word));
        self.out.push_str(&visible(after));
        self.out.push('\n');
    }

    /// A table (see [`table`]).
    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) {
        self.out.push_str(&table(header, rows));
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// Colour for the few lines that carry a judgement (verdict, ERROR/WARN). Tables stay plain so
/// their columns line up. Off unless stdout is a terminal, and always off with `NO_COLOR`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paint {
    pub on: bool,
}

impl Paint {
    /// <https://no-color.org>: a non-empty `NO_COLOR` turns colour off; so does a dumb terminal.
    pub fn detect() -> Paint {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Paint {
            on: std::io::stdout().is_terminal() && !no_color && !dumb,
        }
    }

    /// `text`, made [`visible`] first, in the colour of `tone` when painting is on: the text
    /// cannot end our colour early or start its own.
    fn tone(self, tone: Tone, text: &str) -> String {
        let text = visible(text);
        if !self.on {
            return text.into_owned();
        }
        let style = match tone {
            Tone::Good => anstyle::AnsiColor::Green,
            Tone::Warn => anstyle::AnsiColor::Yellow,
            Tone::Bad => anstyle::AnsiColor::Red,
        }
        .on_default()
        .bold();
        format!("{style}{text}{style:#}")
    }
}

/// A kubectl-style table. Rows shorter than the header are padded. Every cell, the header's
/// too, is made [`visible`]: a cell is one line, whatever the API server put in it.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut b = Builder::default();
    b.push_record(header.iter().map(|h| visible(h).into_owned()));
    for r in rows {
        let mut r: Vec<String> = r.iter().map(|c| visible(c).into_owned()).collect();
        r.resize(header.len(), String::new());
        b.push_record(r);
    }
    let mut t = b.build();
    t.with(Style::empty()).with(Padding::new(0, 3, 0, 0));
    let mut out = String::new();
    for line in t.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// JSON (pretty, newline-terminated) or YAML of any report, every string as it was but with no
/// character a terminal would act on or hide left raw ([`escape_json_hidden`],
/// [`escape_yaml_hidden`]).
fn structured<T: Serialize>(value: &T, format: Format) -> Result<String> {
    let failed = |e: Box<dyn std::error::Error + Send + Sync>| Error::Output { source: e };
    match format {
        Format::Yaml => {
            let yaml = serde_yaml_ng::to_string(value).map_err(|e| failed(Box::new(e)))?;
            escape_yaml_hidden(yaml, value).map_err(|e| failed(Box::new(e)))
        }
        _ => serde_json::to_string_pretty(value)
            .map(|s| escape_json_hidden(s) + "\n")
            .map_err(|e| failed(Box::new(e))),
    }
}

/// One JSON document on one line (JSON lines, for `--watch -o json`), escaped as
/// [`structured`]'s.
fn json_line<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map(|s| escape_json_hidden(s) + "\n")
        .map_err(|e| Error::Output {
            source: Box::new(e),
        })
}

/// A character JSON and YAML output write as an escape although their emitters would not: DEL
/// and the C1 controls (U+009B is CSI to some terminals), and every character [`visible`]
/// shows as an escape on a terminal beyond ASCII: the format characters (Unicode Cf: bidi
/// overrides, isolates and marks, zero-width characters, BOM, soft hyphen), the tag block and
/// the line and paragraph separators. serde_json escapes only C0; libyaml writes what it deems
/// printable as it is, U+202E among it. Raw, `-o json` on a terminal (or a script's output
/// shown by a reviewer) would reorder or hide what is shown; escaped, every parser reads the
/// same string back.
fn hidden_in_output(c: char) -> bool {
    c == '\u{7f}' || (!c.is_ascii() && hidden(c))
}

/// serde_json's text with every [`hidden_in_output`] character as a `\uXXXX` escape (a
/// surrogate pair beyond U+FFFF, as JSON writes those): `\u007f`, `\u009b`, `\u202e`,
/// `\udb40\udc01`. Outside its strings a JSON text is ASCII punctuation, digits, literals and
/// spaces, so every such character is inside a string, where the escape reads back as the same
/// character. Text without any is serde_json's, byte for byte.
fn escape_json_hidden(json: String) -> String {
    if !json.chars().any(hidden_in_output) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if hidden_in_output(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// serde_yaml_ng's text, or, when it holds a [`hidden_in_output`] character, the same document
/// with every string that holds one written as a double-quoted scalar of ours, where those
/// characters are `\uXXXX` (`\UXXXXXXXX` beyond U+FFFF) escapes: libyaml leaves them raw in
/// whatever style it picked (plain, single-quoted, a literal block), none of which has escapes.
/// Those strings are swapped for tokens in the document's YAML value before it is emitted, and
/// each token for its scalar after; the tokens' prefix is one the first text does not hold
/// ([`unused_prefix`]), so no string of the report can be taken for one. Text without any is serde_yaml_ng's, byte for
/// byte (the contract snapshots).
fn escape_yaml_hidden<T: Serialize>(
    yaml: String,
    value: &T,
) -> std::result::Result<String, serde_yaml_ng::Error> {
    if !yaml.chars().any(hidden_in_output) {
        return Ok(yaml);
    }
    let prefix = unused_prefix(&yaml);
    let mut doc = serde_yaml_ng::to_value(value)?;
    let mut swapped: Vec<String> = Vec::new();
    tokenize(&mut doc, &prefix, &mut swapped);
    let text = serde_yaml_ng::to_string(&doc)?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let index = after[..digits].parse::<usize>().ok();
        match (
            index.and_then(|i| swapped.get(i)),
            after[digits..].strip_prefix("-x"),
        ) {
            (Some(original), Some(tail)) => {
                out.push_str(&yaml_double_quoted(original));
                rest = tail;
            }
            // Not one of ours (cannot happen: the prefix is in no string): kept as it is.
            _ => {
                out.push_str(&prefix);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `etcdnet-hidden-<n>-` for the smallest `n` that `text` does not hold right after
/// `etcdnet-hidden-`: one pass over the text whatever it holds (trying numbers one by one, each
/// a search of the whole text, would let a report full of such strings cost quadratic time).
fn unused_prefix(text: &str) -> String {
    const STEM: &str = "etcdnet-hidden-";
    let mut used: Vec<u64> = text
        .match_indices(STEM)
        .filter_map(|(at, _)| {
            let after = &text[at + STEM.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            after[..digits].parse().ok()
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    // The first gap: `used` is sorted and distinct, so `n` is free where `used[n] != n`.
    let n = used
        .iter()
        .enumerate()
        .find(|(i, &u)| u != *i as u64)
        .map_or(used.len() as u64, |(i, _)| i as u64);
    format!("{STEM}{n}-")
}

/// Every string (mapping keys too) holding a [`hidden_in_output`] character, moved to
/// `swapped` and replaced by `<prefix><index>-x`.
fn tokenize(v: &mut serde_yaml_ng::Value, prefix: &str, swapped: &mut Vec<String>) {
    use serde_yaml_ng::Value;
    let token = |s: &mut String, swapped: &mut Vec<String>| {
        if s.chars().any(hidden_in_output) {
            let t = format!("{prefix}{}-x", swapped.len());
            swapped.push(std::mem::replace(s, t));
        }
    };
    match v {
        Value::String(s) => token(s, swapped),
        Value::Sequence(items) => {
            for item in items {
                tokenize(item, prefix, swapped);
            }
        }
        Value::Mapping(map) => {
            let entries = std::mem::take(map);
            for (mut k, mut val) in entries {
                tokenize(&mut k, prefix, swapped);
                tokenize(&mut val, prefix, swapped);
                map.insert(k, val);
            }
        }
        Value::Tagged(t) => tokenize(&mut t.value, prefix, swapped),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `s` as a YAML double-quoted scalar on one line: `\\` and `\"` escaped, `\n` and `\t`, every
/// other control, every [`hidden_in_output`] character and every character YAML does not allow
/// raw (U+FFFE, U+FFFF) as `\uXXXX` / `\UXXXXXXXX`; everything else as it is.
fn yaml_double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || hidden_in_output(c) || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                let n = c as u32;
                if n <= 0xffff {
                    let _ = write!(out, "\\u{n:04X}");
                } else {
                    let _ = write!(out, "\\U{n:08X}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `3 machines, 0 ready`: the Machines present (`2 of 3 machines` when KCP wants more), how
/// many KCP counts ready, and the VMs when their count differs (`, 2 VMs`).
pub(crate) fn control_plane_cell(cp: &crate::report::ControlPlaneSummary) -> String {
    // "3/3 machines" read as "3 of 3 ready" beside a KCP that says 0 ready (issue 38): the
    // Machines present, of how many when that is not all, how many KCP counts ready, and the
    // VMs only when they are not one a Machine.
    let machines = i64::try_from(cp.machines).unwrap_or(i64::MAX);
    let mut text = match cp.desired {
        Some(d) if d > machines => format!("{machines} of {d} machines"),
        Some(d) if d < machines => format!("{machines} machines ({d} desired)"),
        _ => format!("{machines} machines"),
    };
    if let Some(ready) = cp.kcp.as_ref().and_then(|k| k.ready) {
        text.push_str(&format!(", {ready} ready"));
    }
    if cp.virtual_machines != cp.machines {
        text.push_str(&format!(", {} VMs", cp.virtual_machines));
    }
    text
}

/// The workload API's state in words (issue 38: no internal names in human text; the JSON keeps
/// the code, `Timeout`, for scripts).
pub(crate) fn api_state(s: crate::report::v1alpha2::ApiState) -> &'static str {
    s.phrase()
}

pub(crate) fn or_none(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| NONE.to_string())
}

pub(crate) fn count(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".to_string())
}

/// The VM pairs of one rule (a SecurityPolicy's or NSX Manager's), per port: `all 6 paths`
/// when it covers every ordered pair of distinct VMs on that port (the matrix's N×N shape
/// without its diagonal), else the pairs.
pub(crate) fn pairs_lines(paths: &[crate::report::v1alpha2::PathRef], vms: usize) -> Vec<String> {
    let mut ports: Vec<u16> = paths.iter().map(|p| p.port).collect();
    ports.sort_unstable();
    ports.dedup();
    let all = vms * vms.saturating_sub(1);
    ports
        .into_iter()
        .map(|port| {
            let on: Vec<crate::report::v1alpha2::PathRef> =
                paths.iter().filter(|p| p.port == port).cloned().collect();
            if all > 0 && on.len() == all {
                format!("      {port}: every path between the {vms} VMs ({all} of {all})")
            } else {
                format!(
                    "      {port}: {} of {all}: {}",
                    on.len(),
                    crate::report::v1alpha2::PathRef::paths_text(&on)
                )
            }
        })
        .collect()
}

/// The ports a VM is checked on from outside the VMs ([`supervisor_reach_rows`]).
pub(crate) const REACH_PORTS: [u16; 4] = [22, 2379, 2380, 6443];

/// One row a node: its name, then each of [`REACH_PORTS`] as seen from the Supervisor (or from
/// this machine on the ssh route), `-` where it was not checked. The tables and the case report
/// print the same rows.
pub(crate) fn supervisor_reach_rows(r: &crate::report::DiagnoseReport) -> Vec<Vec<String>> {
    r.nodes
        .iter()
        .map(|n| {
            let mut row = vec![n.name.clone()];
            row.extend(REACH_PORTS.iter().map(|p| {
                n.supervisor_reach
                    .iter()
                    .find(|x| x.port == *p)
                    .map(|x| x.state.phrase().to_string())
                    .unwrap_or_else(|| "-".into())
            }));
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log event stays one line: only its final newline is kept, every other character a
    /// terminal would act on is shown (the bidi override and the zero-width space as well as
    /// ESC), and a plain event is passed on as it is.
    #[test]
    fn a_log_event_is_one_visible_line() {
        let plain = "2026-12-05T19:48:20Z  WARN delete failed: forbidden pod=p\n";
        assert!(matches!(visible_log(plain), Cow::Borrowed(_)));
        assert_eq!(
            visible_log("WARN a\u{1b}[2J\u{202e}b\u{200b}\nWARN forged\r\n"),
            "WARN a\\x1b[2J\\u{202e}b\\u{200b}\\nWARN forged\\r\n"
        );
        assert_eq!(visible_log("no newline\u{2066}"), "no newline\\u{2066}");
        assert_eq!(visible_log("\n\n"), "\\n\n");
        assert_eq!(visible_log(""), "");
    }

    #[test]
    fn table_looks_like_kubectl() {
        let t = table(
            &["NAME", "IP"],
            &[
                vec!["a".into(), "198.18.0.11".into()],
                vec!["longer-name".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME          IP\na             198.18.0.11\nlonger-name\n"
        );
    }

    /// A terminal acts on these: C0 and DEL, C1.
    fn is_terminal_control(c: char) -> bool {
        c.is_control()
    }

    #[test]
    fn visible_writes_every_c0_and_del_as_an_escape() {
        for b in (0u8..0x20).chain([0x7f]) {
            let c = char::from(b);
            let shown = visible(&format!("a{c}b")).into_owned();
            let want = match c {
                '\n' => "a\\nb".to_string(),
                '\r' => "a\\rb".to_string(),
                '\t' => "a\\tb".to_string(),
                _ => format!("a\\x{b:02x}b"),
            };
            assert_eq!(shown, want, "{b:#04x}");
        }
        assert_eq!(visible("\u{1b}"), "\\x1b");
        assert_eq!(visible("\u{7}"), "\\x07");
        assert_eq!(visible("\u{0}"), "\\x00");
        assert_eq!(visible("\u{7f}"), "\\x7f");
    }

    #[test]
    fn visible_writes_every_c1_as_an_escape() {
        for u in 0x80u32..=0x9f {
            let c = char::from_u32(u).unwrap();
            assert_eq!(visible(&c.to_string()), format!("\\u{{{u:x}}}"), "{u:#x}");
        }
        assert_eq!(visible("\u{9b}2J"), "\\u{9b}2J");
    }

    #[test]
    fn visible_defuses_whole_sequences() {
        let osc = "\u{1b}]0;pwned\u{7}";
        assert_eq!(visible(osc), "\\x1b]0;pwned\\x07");
        let osc_st = "\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\";
        assert_eq!(
            visible(osc_st),
            "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"
        );
        let csi = "\u{1b}[2J\u{1b}[1;31mHealthy\u{1b}[0m";
        assert_eq!(visible(csi), "\\x1b[2J\\x1b[1;31mHealthy\\x1b[0m");
        // Bidi overrides and the Unicode line separators reorder or split what is shown.
        assert_eq!(
            visible("a\u{202e}b\u{2066}c\u{2028}d"),
            "a\\u{202e}b\\u{2066}c\\u{2028}d"
        );
        for s in [osc, osc_st, csi] {
            assert!(!visible(s).chars().any(is_terminal_control), "{s:?}");
        }
    }

    /// The characters that hide or reorder text without being controls, not only the bidi
    /// overrides and isolates.
    #[test]
    fn visible_writes_every_format_and_invisible_character_as_an_escape() {
        for (c, name) in [
            ('\u{200e}', "LRM"),
            ('\u{200f}', "RLM"),
            ('\u{61c}', "ALM"),
            ('\u{200b}', "zero-width space"),
            ('\u{200c}', "zero-width non-joiner"),
            ('\u{200d}', "zero-width joiner"),
            ('\u{2060}', "word joiner"),
            ('\u{feff}', "byte order mark"),
            ('\u{ad}', "soft hyphen"),
            ('\u{e0000}', "tag block, unassigned"),
            ('\u{e0001}', "language tag"),
            ('\u{e0041}', "tag A"),
            ('\u{e007f}', "cancel tag"),
            ('\u{2062}', "invisible times"),
            ('\u{180e}', "Mongolian vowel separator"),
            ('\u{fff9}', "interlinear annotation anchor"),
            ('\u{1d173}', "musical begin beam"),
        ] {
            let text = format!("a{c}b");
            assert_eq!(
                visible(&text),
                format!("a\\u{{{:x}}}b", c as u32),
                "{name} U+{:04X}",
                c as u32
            );
        }
        // Every Cf character there is, whatever the Unicode version adds.
        use unicode_general_category::{get_general_category, GeneralCategory};
        let format = (0..=0x10ffffu32)
            .filter_map(char::from_u32)
            .filter(|&c| get_general_category(c) == GeneralCategory::Format);
        let mut n = 0;
        for c in format {
            n += 1;
            assert!(hidden(c), "U+{:04X}", c as u32);
        }
        assert!(n > 150, "the table knows the Cf category ({n})");
        // An emoji family is held together by zero-width joiners: shown apart, not hidden.
        assert_eq!(visible("👩\u{200d}👧"), "👩\\u{200d}👧");
    }

    #[test]
    fn visible_keeps_text_and_borrows_it() {
        for s in [
            "",
            "tkc-prod-7xk2p-4rz8m",
            "é",
            "日本",
            "🎉 emoji ❤\u{fe0f}",
            "e\u{301} combining",
            "a\\x1b stays as typed",
            "Ünïcödé and →",
            "\u{a0}nbsp",
        ] {
            assert!(matches!(visible(s), Cow::Borrowed(_)), "{s:?}");
            assert_eq!(visible(s), s);
        }
        // Mixed: the multi-byte characters around an escape are intact.
        assert_eq!(visible("é\u{1b}日本\n🎉"), "é\\x1b日本\\n🎉");
    }

    #[test]
    fn table_cells_cannot_break_the_layout() {
        let t = table(
            &["NAME", "PHASE"],
            &[vec!["cp\u{1b}[2J".into(), "Run\nning\tnow\r".into()]],
        );
        assert_eq!(t, "NAME        PHASE\ncp\\x1b[2J   Run\\nning\\tnow\\r\n");
    }

    #[test]
    fn paint_colours_only_visible_text() {
        let on = Paint { on: true };
        let painted = on.tone(Tone::Bad, "x\u{1b}[0m\u{1b}[32mHealthy");
        // Our style around the text, and no escape sequence but ours.
        let style = anstyle::AnsiColor::Red.on_default().bold();
        assert_eq!(
            painted,
            format!("{style}x\\x1b[0m\\x1b[32mHealthy{style:#}")
        );
        let off = Paint { on: false };
        assert_eq!(off.tone(Tone::Good, "ok\u{7}"), "ok\\x07");
    }

    #[test]
    fn lines_make_every_line_visible() {
        let mut out = Lines::new(Paint { on: false });
        out.line("a\nb");
        out.blank();
        out.marked("  ", Tone::Warn, "WARN\u{9b}", " c\u{1b}");
        assert_eq!(out.finish(), "a\\nb\n\n  WARN\\u{9b} c\\x1b\n");
    }

    /// Every C0 (but the newline), DEL and C1 character, in one string.
    fn all_controls() -> String {
        (0u32..0x20)
            .chain(0x7f..=0x9f)
            .filter_map(char::from_u32)
            .collect()
    }

    #[test]
    fn json_escapes_every_control_and_reads_back_the_same() {
        let s = format!("{}é日本🎉\u{1b}]0;t\u{7}", all_controls());
        let json = structured(&s, Format::Json).unwrap();
        assert!(
            !json.trim_end().chars().any(is_terminal_control),
            "{json:?}"
        );
        assert!(json.contains("\\u001b") && json.contains("\\u009b") && json.contains("\\u007f"));
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        // Nothing to escape: the text is serde_json's, byte for byte.
        let plain = serde_json::json!({"a": "é 日本 🎉", "b": [1, 2]});
        assert_eq!(
            structured(&plain, Format::Json).unwrap(),
            serde_json::to_string_pretty(&plain).unwrap() + "\n"
        );
    }

    /// Format and other invisible characters of every kind [`visible`] names: bidi overrides,
    /// isolates and marks, zero-width characters, BOM, soft hyphen, tags (beyond U+FFFF), a
    /// musical-notation format character, the separators.
    const HIDDEN: &str = "\u{202e}\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{ad}\u{e0001}\u{e0041}\u{e007f}\u{1d173}\u{2028}\u{2029}";

    /// `-o json|yaml` keep no bidi or other format character raw: each is an escape that reads
    /// back as the same character, in values and in keys, in every YAML style libyaml would
    /// have picked (plain, quoted, a literal block, a string that reads as a number or a bool);
    /// serde_json and libyaml on their own write them as they are.
    #[test]
    fn json_and_yaml_escape_format_characters_and_read_back_the_same() {
        use std::collections::BTreeMap;
        let strings = [
            format!("cp1{HIDDEN}"),
            HIDDEN.to_string(),
            format!("multi\nline\n{HIDDEN}\n"),
            format!("it's \"quoted\" \\ {HIDDEN} é日本🎉"),
            "123\u{200b}".to_string(),
            "true\u{202e}".to_string(),
            format!("- {HIDDEN}: #"),
            format!("{}\u{202e}", all_controls()),
            "etcdnet-hidden-0-0-x".to_string(),
        ];
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (i, s) in strings.iter().enumerate() {
            map.insert(format!("k{i}{s}"), vec![s.clone(), format!("plain {i}")]);
        }
        let hidden = |text: &str| -> Vec<char> {
            text.chars()
                .filter(|&c| c != '\n' && (c.is_control() || hidden(c)))
                .collect()
        };
        let json = structured(&map, Format::Json).unwrap();
        assert_eq!(hidden(&json), Vec::<char>::new(), "{json}");
        assert!(
            json.contains("\\u202e") && json.contains("\\udb40\\udc01"),
            "{json}"
        );
        let back: BTreeMap<String, Vec<String>> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, map);
        let line = json_line(&map).unwrap();
        assert_eq!(hidden(&line), Vec::<char>::new(), "{line}");
        assert_eq!(
            serde_json::from_str::<BTreeMap<String, Vec<String>>>(&line).unwrap(),
            map
        );

        let yaml = structured(&map, Format::Yaml).unwrap();
        assert_eq!(hidden(&yaml), Vec::<char>::new(), "{yaml}");
        assert!(
            yaml.contains("\\u202E")
                && yaml.contains("\\U000E0001")
                && yaml.contains("\"multi\\nline\\n"),
            "{yaml}"
        );
        let back: BTreeMap<String, Vec<String>> = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, map);
        // The strings without any stay as libyaml wrote them.
        assert!(yaml.contains("- plain 0\n"), "{yaml}");

        // A report's tagged enum value keeps its shape.
        use crate::report::v1alpha2::IdentityProblem;
        let v = vec![IdentityProblem::AmbiguousVm {
            machine: format!("a{HIDDEN}"),
            candidates: vec![HIDDEN.to_string()],
        }];
        let yaml = structured(&v, Format::Yaml).unwrap();
        assert_eq!(hidden(&yaml), Vec::<char>::new(), "{yaml}");
        assert_eq!(
            serde_yaml_ng::from_str::<Vec<IdentityProblem>>(&yaml).unwrap(),
            v
        );
    }

    /// The tokens' prefix is one no string of the report holds, found in one pass however many
    /// look like it.
    #[test]
    fn the_token_prefix_is_unused() {
        assert_eq!(unused_prefix("a"), "etcdnet-hidden-0-");
        assert_eq!(
            unused_prefix("etcdnet-hidden-0- etcdnet-hidden-1-x etcdnet-hidden-3-"),
            "etcdnet-hidden-2-"
        );
        assert_eq!(
            unused_prefix("etcdnet-hidden-99999999999999999999999 etcdnet-hidden-"),
            "etcdnet-hidden-0-"
        );
        let many: String = (0..20_000)
            .map(|i| format!("etcdnet-hidden-{i}- "))
            .collect();
        // Linear, not quadratic: this thread's CPU time, not wall time (a loaded machine's).
        let started = crate::testing::cpu_time();
        let p = unused_prefix(&many);
        let took = crate::testing::cpu_time() - started;
        assert_eq!(p, "etcdnet-hidden-20000-");
        assert!(!many.contains(&p));
        assert!(took < std::time::Duration::from_secs(2), "{took:?} of CPU");
    }

    /// Text without such characters is the emitters' own, byte for byte (the contract
    /// snapshots do not change).
    #[test]
    fn ordinary_text_is_the_emitters_own() {
        let plain = serde_json::json!({"a": "é 日本 🎉 \\ \"q\"", "b": [1, 2], "c": "x\ny"});
        assert_eq!(
            structured(&plain, Format::Json).unwrap(),
            serde_json::to_string_pretty(&plain).unwrap() + "\n"
        );
        assert_eq!(
            structured(&plain, Format::Yaml).unwrap(),
            serde_yaml_ng::to_string(&plain).unwrap()
        );
    }

    #[test]
    fn yaml_escapes_every_control_and_reads_back_the_same() {
        let s = format!("{}é日本🎉\u{1b}]0;t\u{7}", all_controls());
        for value in [s.clone(), format!("two\nlines{s}"), "multi\nline\n".into()] {
            let yaml = structured(&value, Format::Yaml).unwrap();
            assert!(
                !yaml.chars().any(|c| c != '\n' && is_terminal_control(c)),
                "{yaml:?}"
            );
            let back: String = serde_yaml_ng::from_str(&yaml).unwrap();
            assert_eq!(back, value);
        }
    }
}

#[cfg(test)]
#[path = "visible_tests.rs"]
mod visible_tests;
