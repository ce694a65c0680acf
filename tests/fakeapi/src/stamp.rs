//! Fixtures stamped at start (issue 38): a fixture set's timestamps are fixed texts (a condition's
//! `lastTransitionTime` of 2025, KCP's "Last successful probe at 2025-06-03T08:13:52Z"), so a demo
//! or a lab run a year later shows "551d ago" beside a cut seconds old. [`restamp`] moves every
//! timestamp of the objects by one offset, so that the newest lands at a chosen instant (a few
//! minutes before the lab starts): the order of the times and the gaps between them stay as the
//! fixture writes them, only the date moves.
//!
//! A timestamp is what Kubernetes writes (`metav1.Time` marshals RFC 3339 in UTC, to the second:
//! apimachinery `pkg/apis/meta/v1/time.go` `MarshalJSON`; `MicroTime` with six fraction digits:
//! `micro_time.go`), as a whole string or inside a message (CAPI's KCP writes "Last successful
//! probe at %s" with the time in RFC 3339: controlplane/kubeadm/internal/workload_cluster_conditions.go).
//! Only that shape moves (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`); anything else is left as written.

use std::time::{Duration, SystemTime};

use serde_json::Value;

/// The offsets of every timestamp in `s`: (start, end of its `YYYY-MM-DDTHH:MM:SS`, end of
/// the whole, its time).
fn find(s: &str) -> Vec<(usize, usize, SystemTime)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 20 <= b.len() {
        let shape = b[i..i + 19].iter().enumerate().all(|(k, c)| match k {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        });
        // Not the tail of a longer number (a digit before the year).
        let starts = i == 0 || !b[i - 1].is_ascii_digit();
        if shape && starts {
            let mut end = i + 19;
            if b.get(end) == Some(&b'.') {
                end += 1;
                while b.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
            }
            if b.get(end) == Some(&b'Z') {
                if let Ok(t) = humantime::parse_rfc3339(&format!("{}Z", &s[i..i + 19])) {
                    out.push((i, i + 19, t));
                    i = end + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

fn each_string(v: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter_mut().for_each(|v| each_string(v, f)),
        Value::Object(o) => o.values_mut().for_each(|v| each_string(v, f)),
        _ => {}
    }
}

/// Moves every timestamp of `objects` by one whole-second offset so that the newest is `at`.
/// The fractions stay as written. Nothing to move: nothing changes.
pub fn restamp(objects: &mut [Value], at: SystemTime) {
    let mut newest: Option<SystemTime> = None;
    for o in objects.iter_mut() {
        each_string(o, &mut |s| {
            for (_, _, t) in find(s) {
                newest = Some(newest.map_or(t, |n| n.max(t)));
            }
        });
    }
    let Some(newest) = newest else { return };
    let whole = |d: Duration| Duration::from_secs(d.as_secs());
    let shift = |t: SystemTime| match at.duration_since(newest) {
        Ok(ahead) => t + whole(ahead),
        Err(e) => t - whole(e.duration()),
    };
    for o in objects.iter_mut() {
        each_string(o, &mut |s| {
            let found = find(s);
            if found.is_empty() {
                return;
            }
            let mut out = String::with_capacity(s.len());
            let mut from = 0;
            for (start, end, t) in found {
                out.push_str(&s[from..start]);
                let moved = humantime::format_rfc3339_seconds(shift(t)).to_string();
                // `YYYY-MM-DDTHH:MM:SSZ`: the part before the `Z`; the fraction and `Z` follow.
                out.push_str(&moved[..19]);
                from = end;
            }
            out.push_str(&s[from..]);
            *s = out;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_newest_lands_at_the_instant_and_the_gaps_stay() {
        let mut objs = vec![
            json!({"status": {"conditions": [
                {"lastTransitionTime": "2025-06-01T12:00:00Z", "message": "ok"},
                {"lastTransitionTime": "2025-06-03T08:14:07Z",
                 "message": "* EtcdClusterHealthy: Last successful probe at 2025-06-03T08:13:52Z"},
            ]}}),
            json!({"metadata": {"creationTimestamp": "2025-06-03T08:00:00.123456Z",
                                "name": "x12025-06-03T08:14:07Z"}}),
            json!({"spec": {"replicas": 3, "text": "no time here"}}),
        ];
        let at = humantime::parse_rfc3339("2026-12-07T11:35:00Z").unwrap();
        restamp(&mut objs, at);
        let c = &objs[0]["status"]["conditions"];
        assert_eq!(c[1]["lastTransitionTime"], "2026-12-07T11:35:00Z");
        assert_eq!(
            c[1]["message"],
            "* EtcdClusterHealthy: Last successful probe at 2026-12-07T11:34:45Z"
        );
        // 1 day 20:14:07 before the newest, as the fixture has it.
        assert_eq!(c[0]["lastTransitionTime"], "2026-12-05T15:20:53Z");
        assert_eq!(
            objs[1]["metadata"]["creationTimestamp"],
            "2026-12-07T11:20:53.123456Z"
        );
        // A digit before it: the tail of a longer number, no time.
        assert_eq!(objs[1]["metadata"]["name"], "x12025-06-03T08:14:07Z");
        assert_eq!(objs[2]["spec"]["text"], "no time here");
        // Backwards too: a fixture dated after the instant.
        let before = humantime::parse_rfc3339("2026-12-07T11:00:00Z").unwrap();
        restamp(&mut objs, before);
        assert_eq!(c_time(&objs), "2026-12-07T11:00:00Z");
        // Nothing dated: nothing changes.
        let mut none = vec![json!({"a": "b"})];
        restamp(&mut none, at);
        assert_eq!(none, vec![json!({"a": "b"})]);
    }

    fn c_time(objs: &[Value]) -> &str {
        objs[0]["status"]["conditions"][1]["lastTransitionTime"]
            .as_str()
            .unwrap()
    }
}
