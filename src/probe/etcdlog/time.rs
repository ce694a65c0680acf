//! etcd's timestamps, normalised to RFC 3339 UTC with six fraction digits so that they sort as
//! strings. Parsing is jiff's; only the forms' quirks are handled here.

use k8s_openapi::jiff::{civil::DateTime, tz::TimeZone, Timestamp};

/// `YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±hh[:]mm]`, or Go's log package's `YYYY/MM/DD HH:MM:SS`, to
/// microseconds since the epoch. A missing zone (capnslog, Go's log) is UTC.
pub(super) fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let dashed;
    let s = if s.as_bytes().get(4) == Some(&b'/') {
        dashed = s.replacen('/', "-", 2);
        dashed.as_str()
    } else {
        s
    };
    if let Ok(ts) = s.parse::<Timestamp>() {
        return Some(ts.as_microsecond());
    }
    let civil: DateTime = s.parse().ok()?;
    civil
        .to_zoned(TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp().as_microsecond())
}

/// RFC 3339 UTC, six fraction digits.
pub(super) fn format_time(micros: i64) -> String {
    Timestamp::from_microsecond(micros)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_default()
}
