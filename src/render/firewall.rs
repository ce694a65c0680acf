//! What both firewall sections say alike (NETWORK POLICY, the SecurityPolicies'; NSX MANAGER, the
//! DFW's): the one engine's evaluation read the same way whatever its source.

use crate::analyse::firewall::{self, PathEvaluation};
use crate::report::v1alpha2::PathRef;

/// One line per reason paths cannot be decided (each reason names its rule or policy), the
/// first `shown`, then one that counts the rest (`json` says where they are).
pub(crate) fn undecided_lines<R>(
    paths: &[PathEvaluation<R>],
    shown: usize,
    json: &str,
) -> Vec<String> {
    let reasons = firewall::undecided(paths);
    let mut out: Vec<String> = reasons
        .iter()
        .take(shown)
        .map(|(why, paths)| {
            format!(
                "  cannot decide {} path(s) ({}): {why}",
                paths.len(),
                PathRef::paths_text(paths)
            )
        })
        .collect();
    if reasons.len() > shown {
        out.push(format!(
            "  and {} more reasons paths cannot be decided{json}",
            reasons.len() - shown
        ));
    }
    out
}
