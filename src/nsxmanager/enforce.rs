//! What NSX Manager enforces, beside what its rules say (issue 37): the DFW's own switch, its
//! exclusion list, and the rules' hit counters read before and after the path checks.
//!
//! - **The DFW switch.** `GET /policy/api/v1/infra/settings/firewall/security` answers a
//!   `DfwFirewallConfiguration` whose `enable_firewall` ("If set to true, Firewall is enabled")
//!   says whether the distributed firewall enforces anything (vmware/vsphere-automation-sdk-go
//!   `services/nsxt/infra/settings/firewall/SecurityTypes.go`; the model's fields in
//!   phspies/nsxtsdk `nsxtsdk/Policy/Models/NSXTFirewallConfigurationType.cs`,
//!   `NSXTDfwFirewallConfigurationType.cs`).
//! - **The exclusion list.** `GET /policy/api/v1/infra/settings/firewall/security/exclude-list`
//!   answers a `PolicyExcludeList` whose `members` are policy paths ("List of the members in the
//!   exclude list", `NSXTPolicyExcludeListType.cs`; terraform-provider-nsxt
//!   `nsxt/resource_nsxt_policy_firewall_exclude_list_member.go` adds group paths to it).
//!   `?system_owned=true` is the same list "including system and user excluded members"
//!   (sdk-go `services/nsxt/infra/settings/firewall/security/ExcludeListTypes.go`, `Get0`):
//!   asked first; a manager that refuses it (400, an older one) is asked the plain list, and
//!   the system members are then not known (said). A group member excludes the VMs and ports it
//!   holds: its effective `members/virtual-machines` and `members/segment-ports`
//!   (`subnet-ports` for a VPC group) are read as the DFW reading reads a rule's groups.
//! - **A project's exclusion list** (VPC, a project other than `default`): `GET
//!   /policy/api/v1/orgs/<org>/projects/<project>/infra/settings/firewall/security/exclude-list`,
//!   the same `PolicyExcludeList`; the SDK's only read of it is "including system and user
//!   excluded members", the query `system_owned=true` fixed (vsphere-automation-sdk-go
//!   `services/nsxt/orgs/projects/infra/settings/firewall/security/ExcludeListClient.go` and
//!   `ExcludeListTypes.go`, `excludeListGetRestMetadata`, as mirrored in TaoZou1/vsphere-automation-sdk-go;
//!   terraform-provider-nsxt's `nsxt_policy_firewall_exclude_list_member` takes a `context {
//!   project_id }` for it, `website/docs/r/policy_firewall_exclude_list_member.html.markdown`).
//!   Which rules it takes off its members' vNICs is not documented (the provider's own list
//!   takes off every rule; a Local Manager's two lists in Federation, "All members of both
//!   lists are excluded", NSX 4.0 administration GUID-3B3C278D): the plugin takes the least,
//!   the project's and its VPCs' own rules (`analyse::dfw::enforce`).
//! - **Hit counters.** `GET …/security-policies/<id>/statistics` answers a
//!   `SecurityPolicyStatisticsListResult`: per enforcement point (`enforcement_point`), a
//!   `SecurityPolicyStatistics` whose `results` are `RuleStatistics` (`rule`: the rule's path,
//!   `hit_count`, `packet_count`; sdk-go `services/nsxt/infra/domains/security_policies/StatisticsTypes.go`,
//!   `orgs/projects/vpcs/security_policies/StatisticsTypes.go`; nsxtsdk
//!   `NSXTSecurityPolicyStatisticsListResultType.cs`, `NSXTSecurityPolicyStatisticsForEnforcementPointType.cs`,
//!   `NSXTRuleStatisticsType.cs`). The counters are "aggregated" by the manager from the hosts,
//!   and some of them "may have a computation delay up to 15 minutes" (the model's own words):
//!   a counter that did not grow during the checks proves nothing, one that grew proves the
//!   rule hit packets then.
//!
//! The reads are I/O through [`Client`]; what they mean is pure ([`dfw_state`], [`excluded`],
//! [`rule_hits`]) so a bundle is re-judged the same way.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use serde_json::Value;

use super::client::{gap, ApiPath, Client, Privilege};
use super::model::{clip, DfwVm, Identity};
use super::raw::{
    EnforcementRead, Gap, Layout, Members, PolicyStatistics, ProjectExcludeList, StatisticsRead,
};
use super::read::{member_kinds, policy_roots};

/// The DFW's settings (`enable_firewall`).
pub(crate) const SETTINGS_PATH: &str = "/policy/api/v1/infra/settings/firewall/security";
/// The DFW's exclusion list.
pub(crate) const EXCLUDE_LIST_PATH: &str =
    "/policy/api/v1/infra/settings/firewall/security/exclude-list";

/// The exclusion list's place under a project (`/orgs/<org>/projects/<project>` + these).
pub(crate) const PROJECT_EXCLUDE_LIST: [&str; 5] =
    ["infra", "settings", "firewall", "security", "exclude-list"];

/// The VPC's project whose own exclusion list applies (`/orgs/<org>/projects/<project>`):
/// none on T1, nor for the `default` project, whose infra is `/infra` (its list is the one
/// read above).
pub(crate) fn project_of(layout: &Layout) -> Option<String> {
    match layout {
        Layout::Vpc { org, project, .. } if project != "default" => {
            Some(format!("/orgs/{org}/projects/{project}"))
        }
        _ => None,
    }
}
/// At most this many members of the exclusion list are followed (groups' members read).
pub(crate) const MAX_EXCLUDE_MEMBERS: usize = 64;
/// At most this many policies' statistics are read, before and after (the rest: not proven).
pub(crate) const MAX_STATISTICS_POLICIES: usize = 200;

/// The DFW's switch and exclusion list (on VPC, the project's own too), and the members of
/// the exclusion lists' groups. Never fails: what cannot be read is its gap.
pub(crate) async fn read_enforcement(client: &Client, layout: &Layout) -> EnforcementRead {
    let mut out = EnforcementRead::default();
    let settings = ApiPath::fixed(SETTINGS_PATH);
    match client.get(&settings).await {
        Ok(v) => out.settings = Some(v),
        Err(e) => out.settings_gap = Some(e.gap(settings.path(), Privilege::ReadSecurity)),
    }
    let list = ApiPath::fixed(EXCLUDE_LIST_PATH);
    match client
        .get(&list.with_query(&[("system_owned", "true")]))
        .await
    {
        Ok(v) => {
            out.exclude_list = Some(v);
            out.system_members = true;
        }
        // An older manager that does not know `system_owned`: the user members alone.
        Err(e) if e.status() == Some(400) => match client.get(&list).await {
            Ok(v) => out.exclude_list = Some(v),
            Err(e) => out.exclude_list_gap = Some(e.gap(list.path(), Privilege::ReadSecurity)),
        },
        Err(e) => out.exclude_list_gap = Some(e.gap(list.path(), Privilege::ReadSecurity)),
    }
    if let Some(project) = project_of(layout) {
        // The org and project are the Supervisor's words: checked as any policy path.
        let (got, gap) = match ApiPath::policy(&project, &PROJECT_EXCLUDE_LIST) {
            // The SDK reads it with `system_owned=true` only (above).
            Ok(list) => match client
                .get(&list.with_query(&[("system_owned", "true")]))
                .await
            {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e.gap(list.path(), Privilege::ReadSecurity))),
            },
            Err(why) => (None, Some(gap(&project, why))),
        };
        out.project = Some(ProjectExcludeList {
            project,
            list: got,
            gap,
        });
    }
    let project_list = out.project.as_ref().and_then(|p| p.list.as_ref());
    let mut members = exclude_members(out.exclude_list.as_ref());
    members.extend(exclude_members(project_list));
    let groups: Vec<String> = members
        .into_iter()
        .filter(|m| m.contains("/groups/"))
        .take(MAX_EXCLUDE_MEMBERS)
        .collect();
    let read: Vec<(String, Members)> = stream::iter(groups)
        .map(|path| async move {
            let mut m = Members::default();
            let [_, vms, ports] = member_kinds(&path);
            for (kind, slot) in [
                (vms, &mut m.virtual_machines),
                (ports, &mut m.segment_ports),
            ] {
                match ApiPath::policy(&path, &["members", kind]) {
                    Ok(p) => {
                        let l = client.list(&p, &[], Privilege::ReadSecurity).await;
                        if let Some(g) = &l.incomplete {
                            m.gaps.push(g.clone());
                        }
                        *slot = Some(l);
                    }
                    Err(why) => m.gaps.push(gap(&path, why)),
                }
            }
            (path, m)
        })
        .buffered(client.limits().max_concurrent.max(1))
        .collect()
        .await;
    out.groups = read.into_iter().collect();
    out
}

/// The statistics of every policy of the layout's trees (at most
/// [`MAX_STATISTICS_POLICIES`]), as they are before the path checks.
pub(crate) async fn read_statistics_before(client: &Client, layout: &Layout) -> StatisticsRead {
    let mut out = StatisticsRead::default();
    let mut paths: Vec<String> = Vec::new();
    for root in policy_roots(layout) {
        let Ok(p) = ApiPath::policy(&root, &["security-policies"]) else {
            continue;
        };
        let l = client.list(&p, &[], Privilege::ReadSecurity).await;
        // A tree that does not exist holds no policy (as the DFW reading takes it).
        if let Some(g) = l.incomplete.filter(|g| g.status != Some(404)) {
            out.gaps.push(g);
        }
        paths.extend(
            l.results
                .iter()
                .filter_map(|v| v.get("path").and_then(Value::as_str))
                .map(str::to_string),
        );
    }
    if paths.len() > MAX_STATISTICS_POLICIES {
        out.gaps.push(gap(
            "",
            format!(
                "{} security policies: the statistics of the first {MAX_STATISTICS_POLICIES} read",
                paths.len()
            ),
        ));
        paths.truncate(MAX_STATISTICS_POLICIES);
    }
    let read = read_each(client, &paths).await;
    out.policies = read
        .into_iter()
        .map(|(path, r)| {
            let (before, before_gap) = split(r);
            PolicyStatistics {
                path,
                before,
                before_gap,
                ..PolicyStatistics::default()
            }
        })
        .collect();
    out
}

/// The same policies' statistics again, after the path checks (and the traceflows).
pub(crate) async fn read_statistics_after(client: &Client, stats: &mut StatisticsRead) {
    let paths: Vec<String> = stats.policies.iter().map(|p| p.path.clone()).collect();
    let read = read_each(client, &paths).await;
    for (p, (_, r)) in stats.policies.iter_mut().zip(read) {
        (p.after, p.after_gap) = split(r);
    }
}

fn split(r: Result<Value, Gap>) -> (Option<Value>, Option<Gap>) {
    match r {
        Ok(v) => (Some(v), None),
        Err(g) => (None, Some(g)),
    }
}

async fn read_each(client: &Client, paths: &[String]) -> Vec<(String, Result<Value, Gap>)> {
    stream::iter(paths.iter())
        .map(|path| async move {
            let r = match ApiPath::policy(path, &["statistics"]) {
                Ok(p) => client
                    .get(&p)
                    .await
                    .map_err(|e| e.gap(p.path(), Privilege::ReadSecurity)),
                Err(why) => Err(gap(path, why)),
            };
            (path.clone(), r)
        })
        .buffered(client.limits().max_concurrent.max(1))
        .collect()
        .await
}

// ---- what they mean (pure) ----

/// Whether the DFW enforces anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DfwState {
    Enabled,
    /// `enable_firewall: false`.
    Disabled,
    /// The settings were not read, or say nothing (why).
    Unknown(String),
}

fn gap_words(g: &Gap) -> String {
    let mut s = clip(&g.why, 300);
    if let Some(p) = &g.privilege {
        s.push_str(&format!("; needs {}", clip(p, 256)));
    }
    s
}

/// The DFW's switch as read. An answer without `enable_firewall` (a boolean) is unknown: the
/// API's default is not documented in the model.
pub(crate) fn dfw_state(read: &EnforcementRead) -> DfwState {
    if let Some(g) = &read.settings_gap {
        return DfwState::Unknown(format!(
            "{} could not be read: {}",
            SETTINGS_PATH,
            gap_words(g)
        ));
    }
    match read
        .settings
        .as_ref()
        .and_then(|s| s.get("enable_firewall"))
    {
        Some(Value::Bool(true)) => DfwState::Enabled,
        Some(Value::Bool(false)) => DfwState::Disabled,
        _ => DfwState::Unknown(format!("{SETTINGS_PATH} does not say enable_firewall")),
    }
}

/// The exclusion list's member paths, as listed (at most a bounded number, strings only).
pub(crate) fn exclude_members(list: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for field in ["members", "system_members"] {
        let items = list
            .and_then(|l| l.get(field))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        for m in items.take(4 * MAX_EXCLUDE_MEMBERS) {
            if !out.iter().any(|o| o == m) {
                out.push(m.to_string());
            }
        }
    }
    out
}

/// Whether one VM's vNIC is out of the DFW's reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excluded {
    /// In the exclusion list (how, in words: directly, or through which group).
    Yes(String),
    No,
    /// Cannot be told (why): never taken as excluded.
    Unknown(String),
}

fn listed_ids(l: Option<&super::raw::Listed>, field: &str) -> Vec<String> {
    l.map(|l| {
        l.results
            .iter()
            .filter_map(|v| v.get(field).and_then(Value::as_str))
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// Whether `vm` is in the exclusion list: its port's path listed, or a listed group that holds
/// it. A group holds it as NSX's group associations of the VM and its port say
/// ([`DfwVm::memberships`], `…/virtual-machine-group-associations`, `…/group-associations`:
/// membership as NSX computes it for any group type) where they were read whole for the
/// group's tree; else as its effective member lists say: a list holding the VM (`id`: its
/// external id) or its port (`path`) always counts, a list not holding it only where
/// `lists_tell(group)` (the group's member type is one the lists answer for: the API reference
/// of `members/virtual-machines`, "for Groups containing other member types, an empty list is
/// returned"; `analyse::dfw`'s `lists_tell`). A group neither tells, whose members were not read
/// whole, a member of another kind, or a VM NSX did not confirm: unknown, never "not excluded".
pub(crate) fn excluded(
    read: &EnforcementRead,
    vm: &DfwVm,
    lists_tell: &dyn Fn(&str) -> bool,
) -> Excluded {
    let list = List {
        name: "the DFW exclusion list".into(),
        list: read.exclude_list.as_ref(),
        gap: read.exclude_list_gap.as_ref(),
    };
    excluded_by(&list, read, vm, lists_tell)
}

/// As [`excluded`], by the VPC's project's own exclusion list: `None` when there is none to
/// read (T1, the `default` project) or an older bundle's reading has none.
pub(crate) fn excluded_by_project(
    read: &EnforcementRead,
    vm: &DfwVm,
    lists_tell: &dyn Fn(&str) -> bool,
) -> Option<Excluded> {
    let p = read.project.as_ref()?;
    let list = List {
        name: format!(
            "project {}'s DFW exclusion list",
            clip(p.project.rsplit('/').next().unwrap_or_default(), 256)
        ),
        list: p.list.as_ref(),
        gap: p.gap.as_ref(),
    };
    Some(excluded_by(&list, read, vm, lists_tell))
}

/// One exclusion list as read: its name in the evidence's words, its answer or its gap.
struct List<'a> {
    name: String,
    list: Option<&'a Value>,
    gap: Option<&'a Gap>,
}

fn excluded_by(
    l: &List,
    read: &EnforcementRead,
    vm: &DfwVm,
    lists_tell: &dyn Fn(&str) -> bool,
) -> Excluded {
    let name = &l.name;
    if let Some(g) = l.gap {
        return Excluded::Unknown(format!("{name} could not be read: {}", gap_words(g)));
    }
    let Some(list) = l.list else {
        return Excluded::Unknown(format!("{name} was not read"));
    };
    let members = exclude_members(Some(list));
    if members.is_empty() {
        return Excluded::No;
    }
    if vm.identity != Identity::Confirmed {
        return Excluded::Unknown(format!(
            "{} is not identified in NSX Manager, and {name} has {} members",
            vm.vm_name,
            members.len()
        ));
    }
    let external = vm.nsx_vm.as_ref().and_then(|v| v.external_id.clone());
    let port = vm.port.as_ref().and_then(|p| p.path.clone());
    let mut unknown: Vec<String> = Vec::new();
    for m in members.iter().take(MAX_EXCLUDE_MEMBERS) {
        if port.as_deref() == Some(m.as_str()) {
            return Excluded::Yes(format!(
                "{} is in {name} (its port {})",
                vm.vm_name,
                clip(m, 256)
            ));
        }
        if !m.contains("/groups/") {
            // A member that is no group and not the VM's port (a segment, another kind):
            // whether it covers the VM is not modeled, so it is never taken as excluding it.
            unknown.push(format!("{} (neither a group nor its port)", clip(m, 256)));
            continue;
        }
        // NSX's own answer first, for any group type.
        match vm.memberships.holds(m) {
            Some(true) => {
                return Excluded::Yes(format!(
                    "{} is in {name} (through group {}), as NSX's group associations say",
                    vm.vm_name,
                    clip(m, 256)
                ))
            }
            Some(false) => continue,
            None => {}
        }
        let Some(g) = read.groups.get(m) else {
            unknown.push(format!("{} (its members not read)", clip(m, 256)));
            continue;
        };
        let vms = listed_ids(g.virtual_machines.as_ref(), "id");
        let ports = listed_ids(g.segment_ports.as_ref(), "path");
        let by_vm = external
            .as_ref()
            .is_some_and(|e| vms.iter().any(|v| v == e));
        let by_port = port.as_ref().is_some_and(|p| ports.iter().any(|q| q == p));
        if by_vm || by_port {
            return Excluded::Yes(format!(
                "{} is in {name} (through group {})",
                vm.vm_name,
                clip(m, 256)
            ));
        }
        if !lists_tell(m) {
            // Not holding it in lists that answer empty for other member types proves nothing.
            unknown.push(format!(
                "{} (its group associations not read whole{}, and its member lists do not tell for its member type)",
                clip(m, 256),
                vm.memberships
                    .why_not
                    .first()
                    .map(|w| format!(": {}", clip(w, 300)))
                    .unwrap_or_default()
            ));
            continue;
        }
        if let Some(gap) = g.gaps.first() {
            unknown.push(format!(
                "{} (its members not read whole: {})",
                clip(m, 256),
                gap_words(gap)
            ));
        }
    }
    if members.len() > MAX_EXCLUDE_MEMBERS {
        unknown.push(format!(
            "{} more members not followed",
            members.len() - MAX_EXCLUDE_MEMBERS
        ));
    }
    match unknown.first() {
        None => Excluded::No,
        Some(first) => Excluded::Unknown(format!(
            "whether {} is in {name} cannot be told: {first}{}",
            vm.vm_name,
            match unknown.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            }
        )),
    }
}

/// A rule's hit counter around the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hits {
    /// It grew by this many hits during the checks.
    Grew(u64),
    /// Read before and after, the same.
    Same,
    /// Not comparable (why): a counter not read, a rule the statistics do not list, a counter
    /// that went down (reset).
    NotRead(String),
}

/// Each rule's summed `hit_count` over the enforcement points of one statistics answer.
fn counts(v: &Value) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    let per_ep = v.get("results").and_then(Value::as_array);
    for ep in per_ep.into_iter().flatten() {
        let rules = ep
            .pointer("/statistics/results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for r in rules {
            let (Some(path), Some(hits)) = (
                r.get("rule").and_then(Value::as_str),
                r.get("hit_count").and_then(Value::as_u64),
            ) else {
                continue;
            };
            let e = out.entry(path.to_string()).or_default();
            *e = e.saturating_add(hits);
        }
    }
    out
}

/// What the counters say of the rule at `rule_path` of the policy at `policy_path`.
pub(crate) fn rule_hits(
    stats: Option<&StatisticsRead>,
    policy_path: &str,
    rule_path: &str,
) -> Hits {
    let Some(stats) = stats else {
        return Hits::NotRead("the rule statistics were not read".into());
    };
    let Some(p) = stats.policies.iter().find(|p| p.path == policy_path) else {
        return Hits::NotRead(match stats.gaps.first() {
            Some(g) => format!(
                "its policy's statistics were not read before the checks: {}",
                gap_words(g)
            ),
            None => "its policy's statistics were not read before the checks".into(),
        });
    };
    let (before, after) = match (&p.before, &p.after, &p.before_gap, &p.after_gap) {
        (Some(b), Some(a), _, _) => (counts(b), counts(a)),
        (_, _, Some(g), _) | (_, _, _, Some(g)) => {
            return Hits::NotRead(format!(
                "its rule statistics could not be read: {}",
                gap_words(g)
            ))
        }
        _ => return Hits::NotRead("its rule statistics were not read after the checks".into()),
    };
    match (before.get(rule_path), after.get(rule_path)) {
        (Some(b), Some(a)) if a > b => Hits::Grew(a - b),
        (Some(b), Some(a)) if a == b => Hits::Same,
        (Some(_), Some(_)) => {
            Hits::NotRead("its hit count went down (reset) during the checks".into())
        }
        _ => Hits::NotRead("the statistics list no counter for this rule".into()),
    }
}

#[cfg(test)]
mod tests;
