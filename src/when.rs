//! One way to write time for people (issue 38): an instant is RFC 3339 to the second with `Z`
//! (`2026-12-07T03:50:19Z`), an age or a span is one number and one unit (`45s`, `4m`, `3h`,
//! `2d`), and the two go together as `2026-12-07T03:50:19Z, 4m ago`. json keeps its own fields
//! (full RFC 3339, milliseconds); this module is only for text a person reads.
//!
//! Sub-second spans (a probe's latency, a connect timeout) keep `ms`/`s` with a decimal, because
//! there the fraction is the finding: see [`precise`].

use std::time::{Duration, SystemTime};

/// `2026-12-07T03:50:19Z`: the instant, to the second, in UTC.
/// Total: a time read from outside may be before 1970 or far ahead (humantime's formatter
/// panics before the epoch), so jiff writes it, and a time beyond its years reads as such.
pub(crate) fn instant(t: SystemTime) -> String {
    match k8s_openapi::jiff::Timestamp::try_from(t) {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => "a time out of range".into(),
    }
}

/// The same from an RFC 3339 text read from outside (a condition, a log line). Text that is not a
/// time is not echoed: `None`, and the caller says the time is unknown.
pub(crate) fn instant_of(rfc3339: &str) -> Option<String> {
    parse(rfc3339).map(instant)
}

/// Parses RFC 3339 as the API and etcd write it (fractions and offsets accepted).
pub fn parse(rfc3339: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(rfc3339.trim())
        .ok()
        .or_else(|| {
            rfc3339
                .trim()
                .parse::<k8s_openapi::jiff::Timestamp>()
                .ok()
                .map(SystemTime::from)
        })
}

/// `45s`, `4m`, `3h`, `2d`: how long, in the largest unit that keeps at least two of it (as
/// kubectl's AGE column does, so `90s` rather than `1m`).
pub(crate) fn span(d: Duration) -> String {
    match d.as_secs() {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// `4m ago`; a time in the future (a skewed clock) reads `in 4m`, never a negative age.
pub(crate) fn ago(t: SystemTime, now: SystemTime) -> String {
    match now.duration_since(t) {
        Ok(d) => format!("{} ago", span(d)),
        Err(e) => format!("in {}", span(e.duration())),
    }
}

/// `2026-12-07T03:50:19Z, 4m ago`: an instant and its age, the form for onsets and conditions.
pub(crate) fn since(t: SystemTime, now: SystemTime) -> String {
    format!("{}, {}", instant(t), ago(t, now))
}

/// A time read from a log or an object (RFC 3339, any fraction or offset), to the second:
/// `2026-12-07T03:50:19Z`. Text that is no time reads `an unreadable time`, never itself.
pub(crate) fn stamp(rfc3339: &str) -> String {
    instant_of(rfc3339).unwrap_or_else(|| "an unreadable time".into())
}

/// A first and a last time (a log finding's): `2026-12-07T03:50:19Z` when they fall in one
/// second, else `2026-12-07T03:50:19Z over 2s` (the first, and how long it went on).
pub(crate) fn during(first: &str, last: &str) -> String {
    match (parse(first), parse(last)) {
        (Some(a), Some(b)) if instant(a) != instant(b) => match whole(b).duration_since(whole(a)) {
            // On whole seconds, as the instant is written: 34.9 to 36.1 is "over 2s".
            Ok(d) => format!("{} over {}", instant(a), span(d)),
            // Out of order (the node's clock stepped back): both, as written.
            Err(_) => format!("{} and {}", instant(a), instant(b)),
        },
        (Some(a), _) => instant(a),
        (None, _) => stamp(last),
    }
}

fn whole(t: SystemTime) -> SystemTime {
    let s = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(s)
}

/// [`ago`] of a time read from outside (RFC 3339): `4m ago`; `None` when it is no time.
#[cfg(test)]
pub(crate) fn ago_of(rfc3339: &str, now: SystemTime) -> Option<String> {
    parse(rfc3339).map(|t| ago(t, now))
}

/// [`precise`] of a count of milliseconds, as the reports carry them: `0 ms`, `2.0 s`.
pub(crate) fn millis(ms: u64) -> String {
    precise(Duration::from_millis(ms))
}

/// `35 ms`, `1.2 s`: a short span where the fraction matters (latency, timeouts under a minute).
pub(crate) fn precise(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 1000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> SystemTime {
        parse(s).unwrap()
    }

    #[test]
    fn one_style() {
        let t = at("2026-12-07T03:50:19.363Z");
        assert_eq!(instant(t), "2026-12-07T03:50:19Z");
        assert_eq!(
            instant_of("2026-12-07T04:50:19+01:00").unwrap(),
            "2026-12-07T03:50:19Z"
        );
        assert_eq!(instant_of("$(reboot)"), None);
        // Before the epoch (a node's or a bundle's word): written, never a panic.
        assert_eq!(
            instant_of("0000-01-01T00:00:00Z").unwrap(),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            instant(SystemTime::UNIX_EPOCH - Duration::from_millis(1500)),
            "1969-12-31T23:59:58Z"
        );
        let now = at("2026-12-07T03:54:30Z");
        assert_eq!(since(t, now), "2026-12-07T03:50:19Z, 4m ago");
        assert_eq!(ago(now, t), "in 4m");
        assert_eq!(span(Duration::from_secs(90)), "90s");
        assert_eq!(span(Duration::from_secs(3 * 86400)), "3d");
        assert_eq!(precise(Duration::from_millis(35)), "35 ms");
        assert_eq!(precise(Duration::from_millis(1250)), "1.2 s");
        assert_eq!(millis(0), "0 ms");
        assert_eq!(millis(2001), "2.0 s");
        assert_eq!(stamp("2026-12-07T11:38:34.988000Z"), "2026-12-07T11:38:34Z");
        assert_eq!(stamp("\x1b[31m"), "an unreadable time");
        assert_eq!(
            during("2026-12-07T11:38:34.988000Z", "2026-12-07T11:38:36.958000Z"),
            "2026-12-07T11:38:34Z over 2s"
        );
        assert_eq!(
            during("2026-12-07T11:38:34.1Z", "2026-12-07T11:38:34.9Z"),
            "2026-12-07T11:38:34Z"
        );
        assert_eq!(
            during("2026-12-07T11:38:36Z", "2026-12-07T11:38:34Z"),
            "2026-12-07T11:38:36Z and 2026-12-07T11:38:34Z"
        );
        assert_eq!(ago_of("2026-12-07T03:50:19Z", now).unwrap(), "4m ago");
        assert_eq!(ago_of("soon", now), None);
    }
}
