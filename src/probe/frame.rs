//! The probe's output on the wire (format 2): framed, bounded raw sections.
//!
//! ```text
//! etcdnet-probe 2          the start, with the format's version
//! @NAME                    a section's header: its name ([a-z0-9.-]+)
//! |a line of its text      each line of the section's text, behind one `|`
//! |...
//! @end N                   the end: N sections were printed
//! ```
//!
//! Why lines with a prefix rather than a length-prefixed body or a boundary: what the node
//! prints reaches us through transports that keep lines but not bytes (the pod route's log is
//! read as UTF-8 with invalid bytes replaced, the kubelet splits long lines into `P` pieces the
//! parser joins again, the jumpbox route re-joins the lines of its own section), so a byte
//! count would break on a line of etcd's log with one invalid byte; and a per-run boundary
//! would change the jumpbox pod's command every run (it is kept across runs by its command's
//! shape). With every line of text behind `|`, nothing a section holds (an etcd log line, a
//! peer's answer, a firewall rule's comment) can start a header or end the output: a frame
//! can only be printed by the script itself. Truncation is detectable: an output without its
//! `@end N` line, or with another count than the sections read, is cut short, and refused
//! ([`crate::probe::parse::ParseError::Truncated`]).
//!
//! Everything here is total: whatever a node printed gives frames or a [`FrameError`].

/// The first word of the start line.
pub(crate) const MAGIC: &str = "etcdnet-probe";

/// The format version this build reads (the start line's second word).
pub(crate) const FORMAT: u32 = 2;

/// The most sections one output may hold: the script prints about twenty; more is not a probe
/// (and each costs a parse).
pub(crate) const MAX_SECTIONS: usize = 64;

/// One section: its name and its text (each line as the node printed it, `\n` after each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub(crate) name: String,
    pub(crate) text: String,
}

/// A whole framed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frames {
    pub(crate) sections: Vec<Section>,
    /// Byte offsets of the output in the text it was read from: from its start line to the end
    /// of its `@end` line (the evidence bundle's copy).
    pub(crate) span: (usize, usize),
    /// What was wrong with the framing without making it unreadable: lines neither a header
    /// nor text, a second section of one name, sections past the cap.
    pub(crate) problems: Vec<String>,
}

impl Frames {
    /// The first section of that name.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.text.as_str())
    }

    /// The first section of that name, read as a [`Head`] and its output; None when it is
    /// absent or empty (a job that never wrote it).
    pub(crate) fn head(&self, name: &str) -> Option<Head<'_>> {
        self.get(name).filter(|t| !t.is_empty()).map(Head::of)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// No start line.
    NotFramed,
    /// A start line of another version.
    Version(String),
    /// The end line missing or counting other sections than were read.
    Truncated { bytes: usize },
}

/// Where the output's start line is: a line that is `etcdnet-probe` and a version, at the start
/// of a line (noise before it, an ssh banner, is skipped).
pub(crate) fn start(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with(MAGIC) && line[MAGIC.len()..].starts_with(' ') {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Reads the frames of `text` from its start line on.
pub(crate) fn read(text: &str) -> Result<Frames, FrameError> {
    let begin = start(text).ok_or(FrameError::NotFramed)?;
    let rest = &text[begin..];
    let mut lines = rest.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    let version = first[MAGIC.len()..].trim();
    if version.is_empty() || !first.ends_with('\n') {
        // The start line itself cut short.
        return Err(FrameError::Truncated { bytes: first.len() });
    }
    if version != FORMAT.to_string() {
        return Err(FrameError::Version(
            crate::probe::head(version, 40).to_string(),
        ));
    }
    let mut at = begin + first.len();
    let mut sections: Vec<Section> = Vec::new();
    let mut current: Option<usize> = None;
    // In a section that is counted but not kept (a repeat, one past the cap).
    let mut skipping = false;
    let mut stray = 0usize;
    let mut dropped = 0usize;
    let mut repeated = 0usize;
    let mut problems = Vec::new();
    for raw in lines {
        at += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(body) = line.strip_prefix('|') {
            match current {
                Some(i) => {
                    let t = &mut sections[i].text;
                    t.push_str(body);
                    t.push('\n');
                }
                None if skipping => {}
                None => stray += 1,
            }
        } else if let Some(count) = line.strip_prefix("@end ") {
            if count.trim().parse::<usize>().ok() != Some(sections.len() + dropped + repeated) {
                return Err(FrameError::Truncated { bytes: at - begin });
            }
            if stray > 0 {
                problems.push(format!(
                    "{stray} lines of its output were neither a section's header nor its text (ignored)"
                ));
            }
            if dropped > 0 {
                problems.push(format!(
                    "it printed {} sections, more than the {MAX_SECTIONS} read (the rest ignored)",
                    sections.len() + dropped
                ));
            }
            return Ok(Frames {
                sections,
                span: (begin, at),
                problems,
            });
        } else if let Some(name) = line.strip_prefix('@').filter(|n| is_name(n)) {
            current = None;
            skipping = true;
            if sections.len() >= MAX_SECTIONS {
                dropped += 1;
            } else if sections.iter().any(|s| s.name == name) {
                // Counted as printed, its text not kept.
                if repeated == 0 {
                    problems.push(format!(
                        "it printed section {name} twice (the first one read)"
                    ));
                }
                repeated += 1;
            } else {
                skipping = false;
                sections.push(Section {
                    name: name.to_string(),
                    text: String::new(),
                });
                current = Some(sections.len() - 1);
            }
        } else if !line.trim().is_empty() {
            stray += 1;
        }
    }
    Err(FrameError::Truncated { bytes: at - begin })
}

/// The one shape of every section's text (probe.sh's `raw_section` writes it; the node's
/// `node`, `paths` and `errors` sections are heads only):
///
/// ```text
/// KEY VALUE        head lines: what the script says of the read (`rc N`, `size N`, `url U`...)
/// err LINE         a line of the tool's stderr (its tail), `hdr LINE` one of an answer's headers
/// --               then, when the read has an output, the separator
/// ...              and the output as the tool printed it (its first or last bytes, bounded)
/// ```
///
/// A section without `--` is all head (`missing`, `skipped WHY`). Every reader of a section
/// reads it through here; what a key means is the reader's.
#[derive(Debug, Default)]
pub(crate) struct Head<'a> {
    pub(crate) lines: Vec<&'a str>,
    /// The output: the text after `--`, NUL bytes dropped.
    pub(crate) body: String,
}

impl<'a> Head<'a> {
    pub(crate) fn of(text: &'a str) -> Head<'a> {
        let mut lines = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
            if line == "--" {
                return Head {
                    lines,
                    body: after.replace('\0', ""),
                };
            }
            lines.push(line);
            rest = after;
        }
        Head {
            lines,
            body: String::new(),
        }
    }

    /// The value of the first head line `KEY VALUE` (`KEY` alone: "").
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        self.lines.iter().find_map(|l| match l.split_once(' ') {
            Some((k, v)) if k == key => Some(v),
            None if *l == key => Some(""),
            _ => None,
        })
    }

    pub(crate) fn num(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The values of every head line `KEY VALUE` of that key, in order (`err`, `hdr`).
    pub(crate) fn all(&self, key: &'a str) -> impl Iterator<Item = &'a str> + '_ {
        self.lines
            .iter()
            .filter_map(move |l| l.strip_prefix(key)?.strip_prefix(' '))
    }

    /// The tool printed more than `max` bytes (its `size`): the output was cut on the node.
    pub(crate) fn cut(&self, max: usize) -> bool {
        self.num("size").is_some_and(|n| n > max as i64)
    }
}

/// What of `text` is not the framed output's own, line by line: the lines before its start line
/// and after its `@end` (or, cut short, the stray lines where it stops), and the lines inside it
/// that are neither a header nor a section's text. A route that reads the node's stderr with
/// the probe's stdout (the jumpbox's ssh, `2>&1`) finds ssh's and sudo's words here: a line is
/// the output's by where it stands, not by its first character, so a banner line `| ...` before
/// the output is the node's (not hidden), and nothing after `@end` passes for the output.
/// Without a start line, all of it.
pub(crate) fn noise(text: &str) -> String {
    let Some(begin) = start(text) else {
        return text.to_string();
    };
    let mut out = text[..begin].to_string();
    let mut lines = text[begin..].split_inclusive('\n');
    lines.next();
    let mut in_section = false;
    let mut ended = false;
    for raw in lines {
        let line = raw.trim_end_matches(['\n', '\r']);
        let own = !ended
            && ((in_section && line.starts_with('|'))
                || line.strip_prefix('@').is_some_and(is_name)
                || line.starts_with("@end "));
        if own {
            in_section = true;
            ended = line.starts_with("@end ");
        } else {
            out.push_str(raw);
        }
    }
    out
}

fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && name != "end"
}

/// Frames written by code (tests, the fixtures' builder): each text's lines behind `|`.
#[cfg(test)]
pub(crate) fn write(sections: &[(&str, &str)]) -> String {
    let mut out = format!("{MAGIC} {FORMAT}\n");
    for (name, text) in sections {
        out.push('@');
        out.push_str(name);
        out.push('\n');
        for line in text.lines() {
            out.push('|');
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&format!("@end {}\n", sections.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_read_with_their_text() {
        let text = format!(
            "banner\n{}trailing noise\n",
            write(&[("hostname", "cp1"), ("log", "a\n|b\n@end 0\n")])
        );
        let f = read(&text).unwrap();
        assert_eq!(f.get("hostname"), Some("cp1\n"));
        // The text's own `|`, `@end` lines are text: they cannot end the output or start one.
        assert_eq!(f.get("log"), Some("a\n|b\n@end 0\n"));
        assert_eq!(
            &text[f.span.0..f.span.1],
            write(&[("hostname", "cp1"), ("log", "a\n|b\n@end 0\n")])
        );
        assert!(f.problems.is_empty());
    }

    #[test]
    fn a_cut_output_is_truncated_and_another_version_refused() {
        let full = write(&[("a", "1"), ("b", "2")]);
        // Up to its last newline: without it the output is whole.
        for cut in 1..full.len() - 1 {
            let r = read(&full[..cut]);
            assert!(
                matches!(r, Err(FrameError::Truncated { .. } | FrameError::NotFramed)),
                "{cut}: {r:?}"
            );
        }
        // A section dropped in the middle: the count says so.
        let missing = full.replace("@b\n|2\n", "");
        assert!(matches!(read(&missing), Err(FrameError::Truncated { .. })));
        assert_eq!(
            read("etcdnet-probe 3\n@end 0\n"),
            Err(FrameError::Version("3".into()))
        );
        assert_eq!(read("{\"schemaVersion\":1}"), Err(FrameError::NotFramed));
    }

    #[test]
    fn stray_lines_and_repeated_sections_are_problems_not_failures() {
        let text = "etcdnet-probe 2\n|before\n@a\n|1\nnoise\n@a\n|2\n@end 2\n";
        let f = read(text).unwrap();
        assert_eq!(f.get("a"), Some("1\n"));
        assert_eq!(f.problems.len(), 2, "{:?}", f.problems);
    }

    #[test]
    fn noise_is_what_does_not_stand_in_the_output() {
        let out = write(&[("a", "1")]);
        // ssh's banner of `|` lines before the output, and anything after its end, are not the
        // output's; its own lines are, whatever they hold.
        let text = format!("| banner\n{out}stray after\n|after\n@end 1\n");
        assert_eq!(noise(&text), "| banner\nstray after\n|after\n@end 1\n");
        // Inside it: a `|` line before any header, a line neither header nor text.
        assert_eq!(
            noise("etcdnet-probe 2\n|before\n@a\n|1\nssh: closed\n"),
            "|before\nssh: closed\n"
        );
        assert_eq!(noise("no output\n"), "no output\n");
    }

    #[test]
    fn a_section_is_its_head_and_its_output() {
        let h = Head::of("rc 0\nerr a\nerr b\nmissing\n--\nerr c\n--\nx\0y\n");
        assert_eq!((h.num("rc"), h.get("missing")), (Some(0), Some("")));
        assert_eq!(h.all("err").collect::<Vec<_>>(), ["a", "b"]);
        // After `--`, all is output: its own `--` and `err` lines too.
        assert_eq!(h.body, "err c\n--\nxy\n");
        let h = Head::of("skipped not asked\n");
        assert_eq!((h.get("skipped"), h.body.as_str()), (Some("not asked"), ""));
    }

    #[test]
    fn crlf_lines_read_as_lines() {
        let f = read("etcdnet-probe 2\r\n@a\r\n|x\r\n@end 1\r\n").unwrap();
        assert_eq!(f.get("a"), Some("x\n"));
    }
}
