//! Whose clock is "now". A node's `clockMs` is that node's word (a compromised node writes any
//! number), so no single node's clock may be the time every other fact is measured against:
//! the ages of the Supervisor's conditions are measured against the time the plugin
//! read the Supervisor (its own clock, recorded in the evidence), each node's own facts (its log
//! window, its container's restarts) against that node's own clock, and the nodes' clocks
//! against their median, so a node that lies about its clock can only make itself look skewed.

/// The median of the nodes' clocks (epoch ms), None without any. With an even count the mean of
/// the two middle clocks (rounded down): with two nodes neither can be told to be the one that
/// is off, so each is shown half the difference away.
pub(crate) fn median(clocks: impl IntoIterator<Item = i64>) -> Option<i64> {
    let mut all: Vec<i64> = clocks.into_iter().collect();
    if all.is_empty() {
        return None;
    }
    all.sort_unstable();
    let mid = all.len() / 2;
    if all.len() % 2 == 1 {
        return Some(all[mid]);
    }
    // In i128: two i64 (any number a node wrote) may not add up within i64.
    let sum = i128::from(all[mid - 1]) + i128::from(all[mid]);
    Some(sum.div_euclid(2) as i64)
}

/// An epoch-ms clock as a `SystemTime`; None before 1970 (no real run is).
pub(crate) fn system_time(ms: i64) -> Option<std::time::SystemTime> {
    let ms = u64::try_from(ms).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms))
}

/// `clock` against `base` as the CLOCK column says it: `+12ms`, `-3ms`, `+0ms` (saturating: both
/// are the nodes' word, any i64).
pub(crate) fn offset_text(clock: i64, base: i64) -> String {
    let d = clock.saturating_sub(base);
    if d < 0 {
        format!("{d}ms")
    } else {
        format!("+{d}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One clock far off in either direction does not move the median past the honest ones.
    #[test]
    fn one_clock_cannot_move_the_median() {
        let honest = [1_000_000, 1_000_012, 1_000_011];
        assert_eq!(median(honest), Some(1_000_011));
        for liar in [i64::MAX, i64::MIN, 0, 9_999_999_999_999] {
            let mut four = honest.to_vec();
            four.push(liar);
            let m = median(four.clone()).unwrap();
            assert!((1_000_000..=1_000_012).contains(&m), "{four:?} → {m}");
            let mut three = honest[..2].to_vec();
            three.push(liar);
            let m = median(three.clone()).unwrap();
            assert!((1_000_000..=1_000_012).contains(&m), "{three:?} → {m}");
        }
        assert_eq!(median([]), None);
        assert_eq!(median([i64::MAX, i64::MAX]), Some(i64::MAX));
        assert_eq!(median([i64::MIN, i64::MAX]), Some(-1));
    }

    #[test]
    fn offsets_are_signed_and_saturate() {
        assert_eq!(offset_text(12, 0), "+12ms");
        assert_eq!(offset_text(0, 0), "+0ms");
        assert_eq!(offset_text(-3, 0), "-3ms");
        assert_eq!(offset_text(i64::MIN, i64::MAX), format!("{}ms", i64::MIN));
        assert_eq!(offset_text(i64::MAX, -1), format!("+{}ms", i64::MAX));
        assert_eq!(system_time(-1), None);
        assert_eq!(
            system_time(1_500),
            Some(std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_500))
        );
    }
}
