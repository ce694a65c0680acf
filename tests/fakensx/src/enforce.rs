//! What the fake manager enforces beside its rules: the DFW's switch, its exclusion list, and
//! the rules' hit counters (issue 37). A world says them under one key, `enforcement:`:
//!
//! ```yaml
//! enforcement:
//!   enable_firewall: false            # default true
//!   exclude_list: [/infra/domains/default/groups/excluded]   # the user's members
//!   system_exclude_list: []           # members NSX itself keeps (only with system_owned=true)
//!   project_exclude_list: []          # VPC: the VPC's project's own list (its members)
//!   statistics:                       # hit counters by rule path (default 0)
//!     /infra/domains/default/security-policies/p/rules/r: {hit_count: 12, packet_count: 30}
//! ```
//!
//! Served as the Policy API does:
//! - `GET /policy/api/v1/infra/settings/firewall/security`: a `DfwFirewallConfiguration`
//!   (`resource_type`, `enable_firewall`; vmware/vsphere-automation-sdk-go
//!   `services/nsxt/infra/settings/firewall/SecurityTypes.go`; fields in phspies/nsxtsdk
//!   `nsxtsdk/Policy/Models/NSXTFirewallConfigurationType.cs`,
//!   `NSXTDfwFirewallConfigurationType.cs`). NSX's distributed firewall is on unless an admin
//!   turns it off: the default `true`.
//! - `GET /policy/api/v1/infra/settings/firewall/security/exclude-list`: a `PolicyExcludeList`
//!   (`members`: policy paths; `NSXTPolicyExcludeListType.cs`), the user's members; with
//!   `system_owned=true` "including system and user excluded members" (sdk-go
//!   `services/nsxt/infra/settings/firewall/security/ExcludeListTypes.go`, `Get0`: the query
//!   `system_owned=true`). The fake's choice, unconfirmed: both in `members`, system first.
//! - `GET /policy/api/v1/orgs/<org>/projects/<project>/infra/settings/firewall/security/exclude-list`
//!   (VPC worlds, their layout's project): the project's own `PolicyExcludeList`, read "including
//!   system and user excluded members" with the query `system_owned=true` fixed, the only read
//!   the SDK has of it (vsphere-automation-sdk-go
//!   `services/nsxt/orgs/projects/infra/settings/firewall/security/ExcludeListTypes.go`,
//!   `excludeListGetRestMetadata`; mirrored in TaoZou1/vsphere-automation-sdk-go). Its members
//!   in `members`; NSX keeps no system member in a project's list that any source names, so
//!   the fake keeps none. Another project's, or on a T1 world: 404.
//! - `GET <security policy path>/statistics`: a `SecurityPolicyStatisticsListResult` (sdk-go
//!   `services/nsxt/infra/domains/security_policies/StatisticsTypes.go` and the VPC one): one
//!   entry for the default enforcement point, its `statistics` a `SecurityPolicyStatistics`
//!   whose `results` are one `RuleStatistics` per rule (`rule`: its path, `internal_rule_id`,
//!   `hit_count`, `packet_count`, `byte_count`, `session_count`; nsxtsdk
//!   `NSXTSecurityPolicyStatisticsListResultType.cs`,
//!   `NSXTSecurityPolicyStatisticsForEnforcementPointType.cs`, `NSXTRuleStatisticsType.cs`).
//!
//! **Counters.** Real NSX aggregates the hosts' counters and publishes them when it refreshes
//! (the model: "aggregated", some fields "may have a computation delay up to 15 minutes"), and
//! the fake cannot see the packets of a test (scripted probes) or of the lab: the counters do
//! not move by themselves. The test drives them ([`Counters::publish_later`]): hits it says
//! were counted are published at the fake's next refresh, which it places after the first
//! read of the policy's statistics, so a reader that reads before and after the checks sees
//! them grow, and one that reads only once never does. That is the least NSX may do: a
//! counter that lags; nothing here makes a counter grow on its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The default enforcement point of a local manager's statistics.
pub const ENFORCEMENT_POINT: &str = "/infra/sites/default/enforcement-points/default";

/// A rule's counters as a world gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleCounters {
    #[serde(default)]
    pub hit_count: u64,
    #[serde(default)]
    pub packet_count: u64,
}

/// The `enforcement:` key of a world.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enforcement {
    #[serde(default = "enabled")]
    pub enable_firewall: bool,
    #[serde(default)]
    pub exclude_list: Vec<String>,
    #[serde(default)]
    pub system_exclude_list: Vec<String>,
    #[serde(default)]
    pub statistics: BTreeMap<String, RuleCounters>,
    #[serde(default)]
    pub project_exclude_list: Vec<String>,
}

fn enabled() -> bool {
    true
}

impl Default for Enforcement {
    fn default() -> Self {
        Enforcement {
            enable_firewall: true,
            exclude_list: Vec::new(),
            system_exclude_list: Vec::new(),
            statistics: BTreeMap::new(),
            project_exclude_list: Vec::new(),
        }
    }
}

impl Enforcement {
    /// A later file's key over an earlier one's: its fields replace, its statistics add.
    pub fn merge(&mut self, later: Enforcement) {
        self.enable_firewall = later.enable_firewall;
        if !later.exclude_list.is_empty() {
            self.exclude_list = later.exclude_list;
        }
        if !later.system_exclude_list.is_empty() {
            self.system_exclude_list = later.system_exclude_list;
        }
        self.statistics.extend(later.statistics);
        if !later.project_exclude_list.is_empty() {
            self.project_exclude_list = later.project_exclude_list;
        }
    }

    /// `DfwFirewallConfiguration`.
    pub fn settings(&self) -> Value {
        json!({
            "resource_type": "DfwFirewallConfiguration",
            "id": "security",
            "path": "/infra/settings/firewall/security",
            "enable_firewall": self.enable_firewall,
            "_revision": 0,
        })
    }

    /// `PolicyExcludeList`, with the system members when `system_owned`.
    pub fn exclude_list(&self, system_owned: bool) -> Value {
        let mut members: Vec<&String> = Vec::new();
        if system_owned {
            members.extend(self.system_exclude_list.iter());
        }
        members.extend(self.exclude_list.iter());
        json!({
            "resource_type": "PolicyExcludeList",
            "id": "exclude-list",
            "path": "/infra/settings/firewall/security/exclude-list",
            "members": members,
            "_revision": 0,
        })
    }
}

impl Enforcement {
    /// The project's own `PolicyExcludeList` (`project`: `/orgs/<org>/projects/<project>`).
    pub fn project_exclude_list(&self, project: &str) -> Value {
        json!({
            "resource_type": "PolicyExcludeList",
            "id": "exclude-list",
            "path": format!("{project}/infra/settings/firewall/security/exclude-list"),
            "parent_path": format!("{project}/infra/settings/firewall/security"),
            "members": self.project_exclude_list,
            "_revision": 0,
        })
    }
}

/// Hits the test said were counted, published at a later refresh.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// (rule path, hits, published from this read of its policy's statistics on).
    pending: Vec<(String, u64, u32)>,
    /// Reads of each policy's statistics so far.
    reads: BTreeMap<String, u32>,
}

impl Counters {
    /// `hits` more on the rule at `rule_path`, published at the refresh after the next read
    /// of its policy's statistics (the first read, if none yet).
    pub fn publish_later(&mut self, rule_path: &str, hits: u64) {
        let policy = policy_of(rule_path);
        let after = self.reads.get(&policy).copied().unwrap_or(0) + 1;
        self.pending.push((rule_path.to_string(), hits, after));
    }

    /// The `SecurityPolicyStatisticsListResult` of `policy` (with its `rules`), one read more.
    pub fn answer(&mut self, policy: &Value, base: &BTreeMap<String, RuleCounters>) -> Value {
        let path = policy
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let n = self.reads.entry(path.clone()).or_default();
        *n += 1;
        let read = *n;
        let rules = policy
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let results: Vec<Value> = rules
            .iter()
            .map(|r| {
                let rule = r.get("path").and_then(Value::as_str).unwrap_or_default();
                let c = base.get(rule).cloned().unwrap_or_default();
                let grown: u64 = self
                    .pending
                    .iter()
                    .filter(|(p, _, after)| p == rule && read > *after)
                    .map(|(_, h, _)| *h)
                    .sum();
                json!({
                    "rule": rule,
                    "internal_rule_id": r.get("rule_id").map(|i| i.to_string()),
                    "hit_count": c.hit_count + grown,
                    "packet_count": c.packet_count + grown,
                    "byte_count": (c.packet_count + grown) * 74,
                    "session_count": 0,
                })
            })
            .collect();
        json!({
            "results": [{
                "enforcement_point": ENFORCEMENT_POINT,
                "statistics": {
                    "internal_section_id": policy.get("id"),
                    "result_count": results.len(),
                    "results": results,
                },
            }],
            "result_count": 1,
        })
    }
}

/// `…/security-policies/<p>` of `…/security-policies/<p>/rules/<r>`.
fn policy_of(rule_path: &str) -> String {
    rule_path
        .rsplit_once("/rules/")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_hits_show_from_the_read_after_the_next_one() {
        let policy = json!({
            "path": "/infra/domains/default/security-policies/p",
            "id": "p",
            "rules": [{"path": "/infra/domains/default/security-policies/p/rules/r", "rule_id": 7}],
        });
        let base = BTreeMap::new();
        let mut c = Counters::default();
        let hits = |v: &Value| v["results"][0]["statistics"]["results"][0]["hit_count"].as_u64();
        c.publish_later("/infra/domains/default/security-policies/p/rules/r", 6);
        assert_eq!(hits(&c.answer(&policy, &base)), Some(0), "the first read");
        assert_eq!(hits(&c.answer(&policy, &base)), Some(6), "after a refresh");
        assert_eq!(hits(&c.answer(&policy, &base)), Some(6), "published once");
    }
}
