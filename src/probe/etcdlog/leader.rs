//! The leader view: from a member's raft lines, whether it knows a leader now, since when, and
//! its last leader change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{LogKind, LogLine};

/// What the member's last leader line says.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::Display,
    strum::VariantArray,
)]
pub enum LeaderState {
    /// The member follows (or is) a leader.
    // ("elected leader" / "changed leader".)
    Known,
    /// The member has no leader.
    // ("lost leader", "no leader", an election started or a leader stepping down.)
    NoLeader,
}

/// The leader as a member's raft lines tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderView {
    pub state: LeaderState,
    /// The leader's member ID when `Known` (it may be the member itself).
    pub leader_id: Option<String>,
    /// When the state began.
    // (The first line of the current run: `NoLeader` since the first no-leader line after the
    // last known leader.)
    pub since: Option<String>,
    /// The raft term of the last leader line that names one.
    pub term: Option<u64>,
    /// The time of the last "elected leader", "changed leader" or "lost leader" line.
    pub last_change: Option<String>,
    /// How often leadership moved ("elected leader" and "changed leader" lines).
    // (Flapping, when often.)
    pub changes: usize,
}

#[derive(Default)]
pub(super) struct LeaderAcc {
    view: Option<LeaderView>,
    /// The newest time seen: a line older than the state's is history, not news.
    newest: Option<String>,
}

impl LeaderAcc {
    pub(super) fn add(&mut self, line: &LogLine, kinds: &[LogKind]) {
        let has = |k: LogKind| kinds.contains(&k);
        let known = has(LogKind::LeaderElected) || has(LogKind::LeaderChanged);
        let lost = has(LogKind::LeaderLost);
        let none = lost
            || has(LogKind::NoLeader)
            || has(LogKind::ElectionStarted)
            || has(LogKind::LeaderSteppedDown);
        if !known && !none {
            return;
        }
        // Lines without a time (some text forms) follow the newest one seen.
        let ts = line.ts.clone().or_else(|| self.newest.clone());
        let stale = match (&ts, &self.newest) {
            (Some(t), Some(n)) => t < n,
            _ => false,
        };
        if ts.as_deref() > self.newest.as_deref() {
            self.newest.clone_from(&ts);
        }
        let term = after_num(&line.msg, " at term ");
        let v = self.view.get_or_insert(LeaderView {
            state: LeaderState::NoLeader,
            leader_id: None,
            since: None,
            term: None,
            last_change: None,
            changes: 0,
        });
        if known {
            v.changes += 1;
        }
        if (known || lost) && (v.last_change.is_none() || ts > v.last_change) {
            v.last_change.clone_from(&ts);
        }
        if stale {
            return;
        }
        if known {
            let leader = leader_of(&line.msg);
            if v.state != LeaderState::Known || v.leader_id != leader || v.since.is_none() {
                v.since.clone_from(&ts);
            }
            v.state = LeaderState::Known;
            v.leader_id = leader;
        } else if v.state != LeaderState::NoLeader || v.since.is_none() {
            v.state = LeaderState::NoLeader;
            v.leader_id = None;
            v.since.clone_from(&ts);
        }
        if term.is_some() {
            v.term = term;
        }
    }

    pub(super) fn finish(self) -> Option<LeaderView> {
        self.view
    }
}

/// "raft.node: X elected leader Y at term N" → Y; "… changed leader from X to Y at term N" → Y.
fn leader_of(msg: &str) -> Option<String> {
    let id = if let Some(i) = msg.find(" changed leader from ") {
        super::line::after(&msg[i..], " to ")?
    } else {
        super::line::after(msg, " elected leader ")?
    };
    super::line::is_id(&id, 1).then_some(id)
}

fn after_num(msg: &str, marker: &str) -> Option<u64> {
    super::line::after(msg, marker)?.parse().ok()
}

/// A member ID as the name of the node whose log says it is that member (`local-member-id`),
/// else the ID itself. `members` is (node, its log's `local_member_id`) of every log read.
pub fn member_name<'a, I>(members: I, id: &str) -> String
where
    I: IntoIterator<Item = (&'a str, Option<&'a str>)>,
{
    members
        .into_iter()
        .find(|(_, local)| *local == Some(id))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| id.to_string())
}
