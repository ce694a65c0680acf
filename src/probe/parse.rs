//! Reading a node probe's output back into [`ProbeOutput`].
//!
//! Total: whatever a node, a shell or a route printed, [`parse`] returns a value or a
//! [`ParseError`] that names the node and what was wrong; it never panics. What it copes with:
//! noise before the document (ssh banners, sudo lectures, `set -x` traces), a kubelet/CRI log
//! prefix on each line (`<time> stdout F ...`, partial `P` lines joined), `kubectl logs
//! --timestamps` prefixes, invalid UTF-8 (replaced), trailing noise, unknown fields (ignored) and
//! missing optional ones (defaults). Input over [`MAX_OUTPUT_BYTES`] is refused before parsing;
//! a document is cut to the probe's own caps as it is read ([`bounds`]), each cut said in
//! [`ProbeOutput::document_problems`].

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::probe::output::{ProbeOutput, RawDocument, PROBE_SCHEMA_VERSION};

/// The most a probe output may be. The probe's own caps keep it far below (the log sample is
/// 256 KiB by default): more is not a probe.
pub const MAX_OUTPUT_BYTES: usize = 16 * 1024 * 1024;

/// How the document starts: the probe prints `schemaVersion` first.
const MARKER: &str = "{\"schemaVersion\"";

/// Characters of the node's output quoted in an error (shown to users; kept short).
const EXCERPT_CHARS: usize = 160;

/// How many times the output's length the attempts at its document starts may read together.
/// A failed attempt can read to the end of the output (a start nested in another's array is
/// read by both), so without a bound an output of many nested starts costs starts × length:
/// minutes for a few MiB. A real output fails a few short attempts (noise lines) at most.
const READ_BUDGET_FACTOR: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("node {node}: the probe printed nothing")]
    Empty { node: String },
    /// Neither a framed output's start line nor a format-1 JSON document.
    #[error("node {node}: the probe did not print its output; it printed: {excerpt}")]
    NotJson { node: String, excerpt: String },
    /// A framed output without its `@end N` (or counting other sections), or a format-1
    /// document that stops before its end.
    #[error("node {node}: the probe's output is cut short after {bytes} bytes")]
    Truncated { node: String, bytes: usize },
    #[error(
        "node {node}: the probe speaks schema version {found}; this build reads version {PROBE_SCHEMA_VERSION}"
    )]
    UnsupportedSchema { node: String, found: String },
    /// A framed output whose start line names another format than this build's (format 1 is
    /// the JSON document, read by its `schemaVersion`).
    #[error(
        "node {node}: the probe printed output format {found}; this build reads format {} (and format 1's JSON document)",
        crate::probe::frame::FORMAT
    )]
    UnsupportedFormat { node: String, found: String },
    #[error("node {node}: the probe printed {bytes} bytes, more than the {MAX_OUTPUT_BYTES} read")]
    TooLarge { node: String, bytes: usize },
    /// JSON of schema v1, but a field has the wrong type or a required one is missing.
    #[error("node {node}: the probe's document does not match schema v1: {detail}")]
    Invalid { node: String, detail: String },
}

impl ParseError {
    /// The node the output came from.
    pub fn node(&self) -> &str {
        match self {
            ParseError::Empty { node }
            | ParseError::NotJson { node, .. }
            | ParseError::Truncated { node, .. }
            | ParseError::UnsupportedFormat { node, .. }
            | ParseError::UnsupportedSchema { node, .. }
            | ParseError::TooLarge { node, .. }
            | ParseError::Invalid { node, .. } => node,
        }
    }
}

/// Parse one node's probe output (its stdout, or a pod log that merged stdout and stderr).
pub fn parse(node: &str, raw: &[u8]) -> Result<ProbeOutput, ParseError> {
    if raw.len() > MAX_OUTPUT_BYTES {
        return Err(ParseError::TooLarge {
            node: node.into(),
            bytes: raw.len(),
        });
    }
    let lossy = String::from_utf8_lossy(raw);
    let text = unwrap_cri(&lossy);
    if text.trim().is_empty() {
        return Err(ParseError::Empty { node: node.into() });
    }
    // Format 2 (framed sections) where its start line is; else a document of format 1 (a probe
    // before it, a bundle written then).
    if crate::probe::frame::start(&text).is_some() {
        return parse_frames(node, &text);
    }
    // Every place a document may start, tried in order; the last failure is the one reported
    // (the real document comes after any noise that merely mentions the marker), or the one
    // before the read budget ran out.
    let mut last = None;
    let mut budget = text.len().saturating_mul(READ_BUDGET_FACTOR);
    for start in document_starts(&text) {
        if budget == 0 {
            break;
        }
        match parse_document(node, &text[start..]) {
            Ok(out) => return Ok(out),
            Err((e, read)) => {
                budget = budget.saturating_sub(read);
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| ParseError::NotJson {
        node: node.into(),
        excerpt: excerpt(text.trim_start()),
    }))
}

/// A framed output (format 2): its sections read into the document's types, then the caps as
/// for format 1.
fn parse_frames(node: &str, text: &str) -> Result<ProbeOutput, ParseError> {
    use crate::probe::frame::{self, FrameError};
    let frames = frame::read(text).map_err(|e| match e {
        FrameError::NotFramed => ParseError::NotJson {
            node: node.into(),
            excerpt: excerpt(text.trim_start()),
        },
        FrameError::Version(found) => ParseError::UnsupportedFormat {
            node: node.into(),
            found,
        },
        FrameError::Truncated { bytes } => ParseError::Truncated {
            node: node.into(),
            bytes,
        },
    })?;
    let mut p = crate::probe::etcdask::Problems::default();
    let mut out = framed::document(&frames, &mut p);
    bounds::bound(&mut out, &mut p);
    // The framing's own problems first (at most three lines), then the sections'.
    out.document_problems = frames.problems.clone();
    out.document_problems.extend(p.finish());
    out.raw = RawDocument::new(&text[frames.span.0..frames.span.1]);
    Ok(out)
}

/// One attempt at a document starting at `doc`; a failure comes with how many bytes it read.
fn parse_document(node: &str, doc: &str) -> Result<ProbeOutput, (ParseError, usize)> {
    // The first JSON value from here; whatever follows it (a logout message) is ignored.
    let mut values = serde_json::Deserializer::from_str(doc).into_iter::<Value>();
    let value = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) if !e.is_eof() => {
            return Err((
                ParseError::NotJson {
                    node: node.into(),
                    excerpt: excerpt(doc),
                },
                offset_of(doc, e.line(), e.column()),
            ))
        }
        _ => {
            return Err((
                ParseError::Truncated {
                    node: node.into(),
                    bytes: doc.len(),
                },
                doc.len(),
            ))
        }
    };
    let read = values.byte_offset();
    let mut out = parse_value(node, value).map_err(|e| (e, read))?;
    // Exactly the document's bytes, without the noise around it (the evidence bundle's copy).
    out.raw = RawDocument::new(&doc[..read]);
    Ok(out)
}

/// The byte offset of serde_json's 1-based `line` and `column` in `doc`.
fn offset_of(doc: &str, line: usize, column: usize) -> usize {
    let before: usize = doc
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    before.saturating_add(column).min(doc.len())
}

/// A parsed JSON value as the probe's document: schema version first, then its lists cut and
/// its member IDs checked ([`bounds::format1`]), the fields read, and the probe's own caps
/// ([`bounds::bound`]).
fn parse_value(node: &str, mut value: Value) -> Result<ProbeOutput, ParseError> {
    match value.get("schemaVersion") {
        Some(v) if v.as_u64() == Some(u64::from(PROBE_SCHEMA_VERSION)) => {}
        found => {
            let found = found.map_or_else(|| "(none)".to_string(), Value::to_string);
            return Err(ParseError::UnsupportedSchema {
                node: node.into(),
                found: cap(&found),
            });
        }
    }
    let mut p = crate::probe::etcdask::Problems::default();
    bounds::format1(&mut value, &mut p);
    let mut out = ProbeOutput::deserialize(value).map_err(|e| ParseError::Invalid {
        node: node.into(),
        detail: cap(&e.to_string()),
    })?;
    bounds::bound(&mut out, &mut p);
    // Whatever the node wrote there: only the reader says what is wrong with the document.
    out.document_problems = p.finish();
    no_http_answer_of_older_probes(&mut out);
    Ok(out)
}

/// Probes before `NoHttpAnswer` wrote a completed handshake that got no HTTP answer
/// as `Completed` with this detail and no status: read it as what it is, so that a stored
/// document of then is never taken for a working path. The schema version stays 1: a reader of
/// then refuses the new value (an unknown variant) rather than misreading it.
fn no_http_answer_of_older_probes(out: &mut ProbeOutput) {
    use crate::probe::output::TlsOutcome;
    for p in &mut out.paths {
        let detail = p.tls_detail.as_deref().unwrap_or_default();
        if p.tls == TlsOutcome::Completed
            && p.http_status.is_none()
            && detail.starts_with("no HTTP answer after the handshake")
        {
            p.tls = TlsOutcome::NoHttpAnswer;
        }
    }
}

/// What a route read besides the probe's output (ssh's or sudo's words, when it reads the
/// node's stderr with the probe's stdout): all but the framed output's own lines
/// ([`crate::probe::frame::noise`]); with no framed output, all but a format-1 document's line.
pub(crate) fn noise(text: &str) -> String {
    if crate::probe::frame::start(text).is_some() {
        return crate::probe::frame::noise(text);
    }
    text.lines()
        .filter(|l| !l.starts_with(MARKER))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// Offsets where a document may start: the marker at the start of a line, or after a prefix
/// that holds no JSON (a timestamp, a CRI `stdout F`).
fn document_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let mut from = 0;
        while let Some(i) = line[from..].find(MARKER) {
            let at = from + i;
            if !line[..at].contains(['{', '"']) {
                starts.push(line_start + at);
            }
            from = at + MARKER.len();
        }
        line_start += line.len();
    }
    starts
}

/// Kubelet's CRI log format, `<time> <stream> <P|F> <text>`, when every line has it: the text
/// with partial (`P`) lines joined to the next. Anything else is returned as it was.
fn unwrap_cri(text: &str) -> Cow<'_, str> {
    let mut out = String::with_capacity(text.len());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(4, ' ');
        let (Some(time), Some(stream), Some(tag)) = (parts.next(), parts.next(), parts.next())
        else {
            return Cow::Borrowed(text);
        };
        let cri = time.len() >= 10
            && time.as_bytes()[0].is_ascii_digit()
            && matches!(stream, "stdout" | "stderr")
            && matches!(tag, "P" | "F");
        if !cri {
            return Cow::Borrowed(text);
        }
        out.push_str(parts.next().unwrap_or(""));
        if tag == "F" {
            out.push('\n');
        }
    }
    if out.is_empty() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// The start of what the node printed, on one line, short enough to show.
fn excerpt(text: &str) -> String {
    let flat: String = text
        .chars()
        .take(EXCERPT_CHARS + 1)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim_end();
    if flat.chars().count() > EXCERPT_CHARS {
        format!(
            "{}...",
            flat.chars().take(EXCERPT_CHARS).collect::<String>()
        )
    } else {
        flat.to_string()
    }
}

fn cap(s: &str) -> String {
    excerpt(s)
}

pub mod bounds;
mod framed;
pub(crate) mod raw;

#[cfg(test)]
mod tests;
