//! The onset timeline under the verdict: its one-line shape, each failing pair's onset, the
//! nodes without a leader since when, KCP's last successful probes and the clocks not to trust.

use super::Lines;
use crate::report::v1alpha2::Timeline;

/// `2026-12-01T10:00:00.123456Z` → `2026-12-01T10:00:00Z` (the table's precision, as
/// [`crate::when`] writes every time; the JSON keeps the fraction).
fn to_second(ts: &str) -> String {
    crate::when::stamp(ts)
}

fn or_dash(ts: Option<&str>) -> String {
    ts.map(to_second).unwrap_or_else(|| "-".into())
}

/// The section; nothing when there is no timeline. `wide` adds each end's own onset.
pub(super) fn section(out: &mut Lines, t: Option<&Timeline>, wide: bool) {
    let Some(t) = t else { return };
    out.blank();
    out.line("SINCE WHEN (etcd logs of both ends, on the nodes' median clock):");
    match &t.summary {
        Some(s) => out.line(format!("  {s}")),
        None if !t.pairs.is_empty() => {
            out.line("  no log tells when the failing paths began (their lines are older than the logs read)")
        }
        None => {}
    }
    if !t.pairs.is_empty() {
        let mut header = vec!["FROM", "TO", "ONSET", "FIRST SIGN", "FAILING NOW"];
        if wide {
            header.extend(["SEEN BY FROM", "SEEN BY TO"]);
        }
        let rows: Vec<Vec<String>> = t
            .pairs
            .iter()
            .map(|p| {
                let mut row = vec![
                    p.from.clone(),
                    p.to.clone(),
                    // The onset the summary line names, never another: a cut said late (etcd's
                    // prober) or by a log that begins inside it was at or before it; the legend
                    // under the table says how much earlier it can be.
                    match (p.onset.as_deref(), p.at_or_before || p.earliest.is_some()) {
                        (Some(t), true) => format!("≤{}", to_second(t)),
                        (t, _) => or_dash(t),
                    },
                    p.first_sign
                        .map(|k| k.phrase().to_string())
                        .unwrap_or_else(|| "-".into()),
                    match p.failing_now {
                        Some(true) => "yes".into(),
                        Some(false) => "no".into(),
                        None => "-".into(),
                    },
                ];
                if wide {
                    row.push(or_dash(p.seen_by_from.as_deref()));
                    row.push(or_dash(p.seen_by_to.as_deref()));
                }
                row
            })
            .collect();
        out.table(&header, &rows);
        if t.pairs.iter().any(|p| p.onset.is_some() && p.at_or_before) {
            out.line("  ≤: the log read begins inside the failure: it may have begun earlier");
        }
        if let Some(e) = t
            .pairs
            .iter()
            .filter(|p| p.onset.is_some() && !p.at_or_before)
            .filter_map(|p| p.earliest.as_deref())
            .min()
        {
            out.line(format!(
                "  ≤: first said by etcd's prober, which says it up to {} s late: the cut may be as early as {}",
                crate::analyse::timeline::PROBER_LAG_S,
                to_second(e)
            ));
        }
    }
    for n in &t.no_leader {
        out.line(format!(
            "  {}: no leader since {}",
            n.node,
            or_dash(n.since.as_deref())
        ));
    }
    for p in &t.last_successful_probes {
        out.line(format!(
            "  {}: KCP's {}: last successful probe at {}",
            p.node, p.condition, p.at
        ));
    }
    for c in t.clocks.iter().filter(|c| !c.trusted) {
        out.line(format!(
            "  {}'s clock cannot be trusted: {}",
            c.node,
            c.note.as_deref().unwrap_or("?")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::v1alpha2::{LogKind, NodeClock, PairOnset, TimelineShape};

    fn render(t: Option<&Timeline>, wide: bool) -> String {
        let mut out = Lines::new(super::super::Paint::default());
        section(&mut out, t, wide);
        out.finish()
    }

    #[test]
    fn the_section_says_the_shape_each_pair_and_the_untrusted_clocks() {
        assert_eq!(render(None, false), "");
        let t = Timeline {
            summary: Some(
                "staggered: cp1↔cp2 at 2026-12-01T10:00:00Z, cp3 at 2026-12-01T10:01:30Z (+90 s)"
                    .into(),
            ),
            shape: Some(TimelineShape::Staggered),
            pairs: vec![PairOnset {
                from: "cp1".into(),
                to: "cp2".into(),
                onset: Some("2026-12-01T10:00:00.250000Z".into()),
                seen_by_from: Some("2026-12-01T10:00:00.250000Z".into()),
                seen_by_to: None,
                first_sign: Some(LogKind::LostStream),
                at_or_before: false,
                earliest: None,
                failing_now: Some(true),
            }],
            no_leader: vec![],
            clocks: vec![NodeClock {
                node: "cp2\x1b[31m".into(),
                offset_ms: None,
                trusted: false,
                note: Some("no clock reading".into()),
            }],
            last_successful_probes: vec![],
        };
        let text = render(Some(&t), false);
        assert!(
            text.contains("  staggered: cp1↔cp2 at 2026-12-01T10:00:00Z, cp3 at"),
            "{text}"
        );
        let row = text.lines().find(|l| l.starts_with("cp1")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "cp1",
                "cp2",
                "2026-12-01T10:00:00Z",
                "stream",
                "to",
                "a",
                "peer",
                "lost",
                "yes"
            ],
            "{text}"
        );
        // A node's name is escaped, never a terminal sequence.
        assert!(
            text.contains("cp2\\x1b[31m's clock cannot be trusted: no clock reading"),
            "{text}"
        );
        assert!(!text.contains('\x1b'));
        // An onset whose log begins inside the episode is only an upper bound.
        let mut open = t.clone();
        open.pairs[0].at_or_before = true;
        let text = render(Some(&open), false);
        assert!(text.contains("   ≤2026-12-01T10:00:00Z   "), "{text}");
        assert!(
            text.contains("  ≤: the log read begins inside the failure"),
            "{text}"
        );
        // etcd's prober says a cut up to 34 s late: the column keeps the onset the summary
        // names (never a range beside "within 1 s of"), and the legend says how early it may be.
        let mut late = t.clone();
        late.pairs[0].first_sign = Some(LogKind::PeerUnhealthy);
        late.pairs[0].earliest = Some("2026-12-01T09:59:26.250000Z".into());
        let text = render(Some(&late), false);
        let row = text.lines().find(|l| l.starts_with("cp1")).unwrap();
        assert!(row.contains("   ≤2026-12-01T10:00:00Z   "), "{text}");
        assert!(!text.contains(".."), "{text}");
        assert!(
            text.contains("up to 34 s late: the cut may be as early as 2026-12-01T09:59:26Z"),
            "{text}"
        );
        let wide = render(Some(&t), true);
        assert!(wide.contains("SEEN BY FROM"), "{wide}");
        let row = wide.lines().find(|l| l.starts_with("cp1")).unwrap();
        assert!(
            row.trim_end().ends_with("2026-12-01T10:00:00Z   -"),
            "{wide}"
        );
    }
}
