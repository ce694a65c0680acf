//! One run's reading of NSX Manager into [`NsxRead`]: the DFW's security policies of every
//! category and their rules, every group a rule names with its effective members, every service
//! a rule names, and the control-plane VMs as NSX knows them. I/O through [`Client`]; which
//! paths to read is pure ([`policy_roots`], [`group_refs`], [`service_refs`], [`member_kinds`]).
//!
//! Paths checked in vmware/vsphere-automation-sdk-go (`services/nsxt/…/*Types.go`, each
//! operation's REST metadata):
//! - `infra/domains/SecurityPoliciesTypes.go`, `…/security_policies/RulesTypes.go`:
//!   `/policy/api/v1/infra/domains/{domainId}/security-policies[/{id}/rules]` (`cursor`,
//!   `page_size`); `orgs/projects/vpcs/SecurityPoliciesTypes.go`: the same under
//!   `/orgs/{org}/projects/{project}/vpcs/{vpc}`;
//! - `infra/domains/groups/members/*Types.go`: `…/groups/{groupId}/members/{ip-addresses,
//!   virtual-machines,segment-ports}`; `orgs/projects/vpcs/groups/members/*Types.go`: a VPC
//!   group's ports are `members/subnet-ports` (there is no `segment-ports` there);
//! - `nsxt-mp/nsx/fabric/VirtualMachinesTypes.go` (`GET /api/v1/fabric/virtual-machines`,
//!   `display_name`, `external_id`), `nsxt-mp/nsx/fabric/VifsTypes.go` (`GET /api/v1/fabric/vifs`,
//!   `owner_vm_id`), `search/QueryTypes.go` (`GET /policy/api/v1/search/query`, `query`).
//!
//! Which layout: [`vpc_layout`] from two Supervisor objects the lead reads (crd.nsx.vmware.com
//! v1alpha1), as vmware-tanzu/nsx-operator writes them:
//! - the `VPCNetworkConfiguration` (cluster-scoped) named by the Namespace's
//!   `nsx.vmware.com/vpc_network_config` annotation (`pkg/nsx/services/common/types.go`;
//!   `pkg/nsx/services/vpc/vpc.go` `GetVPCNetworkConfigByNamespace`):
//!   `pkg/controllers/networkinfo/networkinfo_utils.go` `setVPCNetworkConfigurationStatusWithLBS`
//!   puts `{name, vpcPath}` in its `status.vpcs`, `vpcnetworkconfiguration_types.go` `spec.vpc`
//!   names a pre-created VPC;
//! - the `NetworkInfo` named as the namespace, in it (`pkg/controllers/namespace/namespace_controller.go`),
//!   whose `vpcs[0].name` ([`networkinfo_vpc`]) picks the entry.
//!
//! T1/NCP is [`infra_layout`].

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};
use serde_json::Value;

use super::client::{clean, gap, policy_segments, ApiPath, Client, Privilege};
use super::model::AddrSpec;
use super::raw::{
    Association, Gap, Layout, Listed, Members, NsxRead, PolicyRead, VmLookup, VpcSecurity,
};

/// The most groups read (definition and members) for one run; more are a gap.
pub(crate) const MAX_GROUPS: usize = 300;
/// The most services read for one run; more are a gap.
pub(crate) const MAX_SERVICES: usize = 300;
/// The most fabric VMs, and VIFs per VM, followed for one hint.
pub(crate) const MAX_VMS_PER_HINT: usize = 4;
pub(crate) const MAX_VIFS_PER_VM: usize = 8;
/// The most gaps [`NsxRead::gaps`] keeps (a manager that stops answering mid-reading would
/// otherwise give one per request left); the rest are counted in one more.
pub(crate) const MAX_GAPS: usize = 100;
/// The longest id of ours put into a search query or an identifier filter.
const MAX_ID: usize = 128;
/// The most domains read under one tree (`/infra/domains`, a project's, Federation's): more
/// are a gap of the policy list (a policy in a domain not read might come first).
pub(crate) const MAX_DOMAINS: usize = 32;
/// The most ports of one VM whose group associations are asked.
pub(crate) const MAX_PORTS_PER_VM: usize = 4;

/// What the Supervisor says of one control-plane VM: what NSX Manager is asked by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmHint {
    /// The Kubernetes node / VirtualMachine name.
    pub node: String,
    /// The VM's name in vSphere (the VirtualMachine's name: vm-operator names the vSphere VM
    /// after it), as NSX's fabric inventory shows it in `display_name`.
    pub vm_name: String,
    /// `status.instanceUUID` of the VirtualMachine: NSX's fabric `external_id`.
    pub instance_uuid: Option<String>,
    /// `status.biosUUID`: NSX's `compute_ids` carry it (`biosUuid:…`), for the check both ways.
    pub bios_uuid: Option<String>,
    /// The VM's IPs as the Supervisor shows them.
    pub ips: Vec<String>,
    /// The VIF attachment ids the Supervisor shows (VPC: the VM's SubnetPort
    /// `status.attachment.id`, vmware-tanzu/nsx-operator `pkg/apis/vpc/v1alpha1/subnetport_types.go`):
    /// the port is searched by it directly, besides the path through the fabric VM's VIFs.
    pub attachment_ids: Vec<String>,
}

/// Why no layout could be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LayoutError {
    #[error("{0:?} is not an NSX VPC path (/orgs/<org>/projects/<project>/vpcs/<vpc>)")]
    NotVpcPath(String),
    #[error("the VPCNetworkConfiguration shows no VPC path for this namespace ({0})")]
    NoVpcPath(String),
}

/// T1/NCP: `/infra/domains/default` (NCP's domain).
pub(crate) fn infra_layout() -> Layout {
    Layout::Infra {
        domain: "default".into(),
    }
}

/// `/orgs/<org>/projects/<project>/vpcs/<vpc>` as a [`Layout::Vpc`]; nothing more, nothing less.
pub(crate) fn parse_vpc_path(path: &str) -> Result<Layout, LayoutError> {
    let bad = || LayoutError::NotVpcPath(clean(path, 200));
    let parts: Vec<&str> = path.strip_prefix('/').ok_or_else(bad)?.split('/').collect();
    match parts.as_slice() {
        ["orgs", org, "projects", project, "vpcs", vpc]
            if [org, project, vpc].iter().all(|s| id_ok(s)) =>
        {
            Ok(Layout::Vpc {
                org: org.to_string(),
                project: project.to_string(),
                vpc: vpc.to_string(),
            })
        }
        _ => Err(bad()),
    }
}

fn id_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s != "."
        && s != ".."
        && !s.chars().any(|c| c.is_control() || c == '/')
}

/// The VPC layout of a namespace from its `VPCNetworkConfiguration` (the object, as JSON) and
/// its `NetworkInfo`'s VPC name (`vpcs[0].name`), the objects the lead reads in the Supervisor:
/// - `spec.vpc` (a pre-created VPC's path) when set;
/// - else the `status.vpcs` entry whose `name` is the NetworkInfo's VPC: a configuration shared
///   by many namespaces (the default one) holds one entry, the last namespace's, so an entry
///   of another VPC is never taken;
/// - without the NetworkInfo's name, the only entry, unless the configuration is the shared
///   default (`nsx.vmware.com/default: "true"`).
pub(crate) fn vpc_layout(
    vpc_network_configuration: &Value,
    networkinfo_vpc: Option<&str>,
) -> Result<Layout, LayoutError> {
    let nc = vpc_network_configuration;
    if let Some(p) = nc
        .pointer("/spec/vpc")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        return parse_vpc_path(p);
    }
    let entries: Vec<&Value> = nc
        .pointer("/status/vpcs")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let path_of = |e: &Value| {
        e.get("vpcPath")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
    };
    let chosen = match networkinfo_vpc {
        Some(name) => entries
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|e| path_of(e))
            .ok_or_else(|| {
                LayoutError::NoVpcPath(format!("no status.vpcs entry named {:?}", clean(name, 100)))
            })?,
        None => {
            let shared = nc
                .pointer("/metadata/annotations/nsx.vmware.com~1default")
                .and_then(Value::as_str)
                == Some("true");
            match entries.as_slice() {
                [only] if !shared => path_of(only).ok_or_else(|| {
                    LayoutError::NoVpcPath("its status.vpcs entry has no vpcPath".into())
                })?,
                _ => {
                    return Err(LayoutError::NoVpcPath(
                        "the NetworkInfo's VPC name is needed to pick the entry".into(),
                    ))
                }
            }
        }
    };
    parse_vpc_path(&chosen)
}

/// The namespace's VPC name in its `NetworkInfo` (`vpcs[0].name`), for [`vpc_layout`].
pub(crate) fn networkinfo_vpc(networkinfo: &Value) -> Option<&str> {
    networkinfo
        .pointer("/vpcs/0/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// The policy paths whose `security-policies` apply to the VMs, in the order read:
/// - T1/NCP: the domain (`/infra/domains/default`);
/// - VPC: the provider's default domain, the project's default domain (but for the default
///   project, whose infra *is* `/infra`) and the VPC itself: a VPC's VMs are under all of them
///   (NSX evaluates the provider's and the project's policies too).
pub(crate) fn policy_roots(layout: &Layout) -> Vec<String> {
    match layout {
        Layout::Infra { domain } => vec![format!("/infra/domains/{domain}")],
        Layout::Vpc { org, project, vpc } => {
            let mut roots = vec!["/infra/domains/default".to_string()];
            if project != "default" {
                roots.push(format!(
                    "/orgs/{org}/projects/{project}/infra/domains/default"
                ));
            }
            roots.push(format!("/orgs/{org}/projects/{project}/vpcs/{vpc}"));
            roots
        }
    }
}

/// The trees whose `domains` hold security policies that can apply to the VMs, besides the
/// VPC itself ([`policy_roots`]' last entry on VPC): `/infra` (the provider's; on T1/NCP the
/// only one), Federation's `/global-infra` (a Local Manager serves the Global Manager's
/// policies there; a manager outside Federation answers 404, which is no gap: vsphere-automation-sdk-go
/// `services/nsxt/global_infra/DomainsTypes.go`), and a VPC's project's own infra (but for the
/// default project, whose infra *is* `/infra`).
///
/// Every domain of each is read, not only `default`: vmware-tanzu/nsx-operator writes its T1
/// security policies and groups under `/infra/domains/<cluster>` (`pkg/nsx/services/securitypolicy/parse.go`
/// `getDomain` is `NSXConfig.Cluster`; `builder.go` builds group paths with it), and an admin
/// may make more (vsphere-automation-sdk-go `services/nsxt/infra/DomainsTypes.go`, `GET
/// /policy/api/v1/infra/domains`).
pub(crate) fn domain_parents(layout: &Layout) -> Vec<String> {
    let mut out = vec!["/infra".to_string(), "/global-infra".to_string()];
    if let Layout::Vpc { org, project, .. } = layout {
        if project != "default" {
            out.push(format!("/orgs/{org}/projects/{project}/infra"));
        }
    }
    out
}

/// The trees whose group associations are asked for a VM and its ports: `/infra` (whose answer
/// covers its every domain), and on VPC the project's infra (but for the default project) and
/// the VPC (vsphere-automation-sdk-go `services/nsxt/infra/VirtualMachineGroupAssociationsTypes.go`,
/// `GroupAssociationsTypes.go`; `services/nsxt/orgs/projects/infra/…`,
/// `services/nsxt/orgs/projects/vpcs/VirtualMachineGroupAssociationsTypes.go`,
/// `GroupAssociationsTypes.go`).
pub(crate) fn association_roots(layout: &Layout) -> Vec<String> {
    let mut out = vec!["/infra".to_string()];
    if let Layout::Vpc { org, project, vpc } = layout {
        if project != "default" {
            out.push(format!("/orgs/{org}/projects/{project}/infra"));
        }
        out.push(format!("/orgs/{org}/projects/{project}/vpcs/{vpc}"));
    }
    out
}

/// The effective-member lists read for a group at `group_path`: a VPC group's ports are
/// `subnet-ports`, every other group's `segment-ports` (kept in [`Members::segment_ports`]).
pub(crate) fn member_kinds(group_path: &str) -> [&'static str; 3] {
    let vpc = group_path.starts_with("/orgs/") && group_path.contains("/vpcs/");
    [
        "ip-addresses",
        "virtual-machines",
        if vpc { "subnet-ports" } else { "segment-ports" },
    ]
}

/// Strings of a JSON array field (`["ANY"]`, group paths), ANY left out.
fn paths<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|s| !s.eq_ignore_ascii_case("ANY") && !s.is_empty())
}

/// Every group a policy (`scope`) or its rules (`source_groups`, `destination_groups`,
/// `scope`) name, in a stable order. A rule's sources and destinations may also be addresses
/// (an IP, a CIDR, a range: the API reference's `Rule.source_groups`); the model reads those
/// itself ([`AddrSpec`]), they are no group to ask for.
pub(crate) fn group_refs(policies: &[PolicyRead]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let group = |s: &&str| AddrSpec::parse(s).is_none();
    for p in policies {
        out.extend(paths(&p.policy, "scope").filter(group).map(str::to_string));
        for r in &p.rules.results {
            for field in ["source_groups", "destination_groups", "scope"] {
                out.extend(paths(r, field).filter(group).map(str::to_string));
            }
        }
    }
    out
}

/// Every service the rules name (`services`).
pub(crate) fn service_refs(policies: &[PolicyRead]) -> BTreeSet<String> {
    policies
        .iter()
        .flat_map(|p| p.rules.results.iter())
        .flat_map(|r| paths(r, "services").map(str::to_string))
        .collect()
}

/// Concatenates lists read from several roots into one: every result, the count when each
/// root said one, the first gap (the others go to `more_gaps`).
fn merge(lists: Vec<Listed>, more_gaps: &mut Vec<Gap>) -> Listed {
    let mut out = Listed::default();
    let mut count = Some(0u64);
    for l in lists {
        out.results.extend(l.results);
        count = count.zip(l.result_count).map(|(a, b)| a + b);
        if let Some(g) = l.incomplete {
            if out.incomplete.is_none() {
                out.incomplete = Some(g);
            } else {
                more_gaps.push(g);
            }
        }
    }
    out.result_count = count;
    out
}

/// Reads one run's DFW and VMs. Never fails: what cannot be read is a gap (401/403 first).
pub(crate) async fn read(client: &Client, layout: &Layout, vms: &[VmHint]) -> NsxRead {
    let limits = *client.limits();
    let mut gaps: Vec<Gap> = client.session_refused().into_iter().cloned().collect();

    // 0. The VMs first: a few requests every path's evaluation needs, not left to whatever
    // time a huge manager's rules leave.
    let vms: Vec<VmLookup> = stream::iter(vms.iter())
        .map(|h| find_vm(client, layout, h))
        .buffered(limits.max_concurrent.max(1))
        .collect()
        .await;

    // 1. Every category's policies of every root: every domain of each tree, then the VPC.
    let mut lists = Vec::new();
    let mut roots = Vec::new();
    for parent in domain_parents(layout) {
        let (domains, listed) = read_domains(client, layout, &parent).await;
        roots.extend(domains);
        lists.extend(listed);
    }
    roots.extend(
        policy_roots(layout)
            .into_iter()
            .filter(|r| !r.contains("/domains/")),
    );
    for root in roots {
        match ApiPath::policy(&root, &["security-policies"]) {
            Ok(p) => {
                let mut l = client.list(&p, &[], Privilege::ReadSecurity).await;
                // A tree that does not exist (404 on its first page) holds no policy: whole.
                if l.results.is_empty()
                    && l.incomplete.as_ref().is_some_and(|g| g.status == Some(404))
                {
                    l.incomplete = None;
                    l.result_count = Some(0);
                }
                lists.push(l);
            }
            Err(why) => gaps.push(gap(&root, why)),
        }
    }
    let policies = merge(lists, &mut gaps);
    gaps.extend(policies.incomplete.clone());

    // 2. Each policy's rules, a few at once.
    let rules: Vec<PolicyRead> = stream::iter(policies.results.iter().cloned())
        .map(|policy| async move {
            let path = policy
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let rules = match ApiPath::policy(path, &["rules"]) {
                Ok(p) => client.list(&p, &[], Privilege::ReadSecurity).await,
                Err(why) => Listed {
                    incomplete: Some(gap(path, why)),
                    ..Listed::default()
                },
            };
            PolicyRead { policy, rules }
        })
        .buffered(limits.max_concurrent.max(1))
        .collect()
        .await;
    for r in &rules {
        if let Some(g) = &r.rules.incomplete {
            gaps.push(g.clone());
        }
    }

    // 3. Groups, their members; services.
    let (groups, members) = read_groups(client, &group_refs(&rules), &mut gaps).await;
    let services = read_objects(
        client,
        &service_refs(&rules),
        MAX_SERVICES,
        "services",
        &mut gaps,
    )
    .await;

    let vpc_security = match layout {
        Layout::Vpc { org, project, vpc } => {
            Some(read_vpc_security(client, org, project, vpc).await)
        }
        Layout::Infra { .. } => None,
    };

    // Every gap, anywhere, also in one list; 401/403 first: the whole reading may hang on them.
    for m in members.values() {
        gaps.extend(m.gaps.iter().cloned());
    }
    for v in &vms {
        gaps.extend(v.gaps.iter().cloned());
    }
    gaps.sort_by_key(|g| !matches!(g.status, Some(401 | 403)));
    if gaps.len() > MAX_GAPS {
        let more = gaps.len() - MAX_GAPS;
        gaps.truncate(MAX_GAPS);
        gaps.push(Gap {
            path: String::new(),
            status: None,
            why: format!("{more} more parts could not be read (not listed)"),
            privilege: None,
        });
    }
    NsxRead {
        manager: client.manager().to_string(),
        layout: layout.clone(),
        // Refused credentials authenticated nothing.
        auth: (!client.credentials_refused()).then(|| client.auth_kind().to_string()),
        policies,
        rules,
        groups,
        members,
        services,
        vms,
        traceflows: Vec::new(),
        vpc_security,
        gaps,
        enforcement: None,
        statistics: None,
    }
}

/// The domains of one tree (`<parent>/domains`), as policy roots (`<parent>/domains/<id>`);
/// and, when the list is not whole, a list holding only its gap (merged into the policy list:
/// a policy of a domain not read might come first). A 404 is a tree this manager does not
/// serve (`/global-infra` outside Federation): nothing, no gap. When the list cannot be read,
/// `default` (every manager has it) is still read.
async fn read_domains(
    client: &Client,
    layout: &Layout,
    parent: &str,
) -> (Vec<String>, Option<Listed>) {
    let mut out: Vec<String> = Vec::new();
    if let (Layout::Infra { domain }, "/infra") = (layout, parent) {
        out.push(format!("/infra/domains/{domain}"));
    }
    let path = match ApiPath::policy(parent, &["domains"]) {
        Ok(p) => p,
        Err(why) => {
            let gap = gap(parent, why);
            return (
                out,
                Some(Listed {
                    incomplete: Some(gap),
                    ..Listed::default()
                }),
            );
        }
    };
    let l = client.list(&path, &[], Privilege::ReadSecurity).await;
    if l.results.is_empty() && l.incomplete.as_ref().is_some_and(|g| g.status == Some(404)) {
        return (out, None);
    }
    let mut gap = l.incomplete.clone();
    if l.results.len() > MAX_DOMAINS {
        gap.get_or_insert(Gap {
            path: path.path().to_string(),
            status: None,
            why: format!(
                "{} domains: only the first {MAX_DOMAINS} read",
                l.results.len()
            ),
            privilege: None,
        });
    }
    if gap.is_some() && parent != "/global-infra" {
        out.push(format!("{parent}/domains/default"));
    }
    for d in l.results.iter().take(MAX_DOMAINS) {
        // The domain's own id, as a path segment of ours (no slash, no control character).
        let Some(id) = d.get("id").and_then(Value::as_str).filter(|i| id_ok(i)) else {
            continue;
        };
        out.push(format!("{parent}/domains/{id}"));
    }
    out.sort();
    out.dedup();
    (
        out,
        gap.map(|g| Listed {
            incomplete: Some(g),
            ..Listed::default()
        }),
    )
}

/// The VPC's security profile and its east-west strategy (NSX 9): the attachment that names
/// this VPC in `/orgs/<o>/projects/<p>/security-profile-attachments` (`attached_to`,
/// `security_profile`: the API reference's `SecurityProfileAttachment`, NSX 9.1), else the
/// project's `vpc-security-profiles/default`, which every VPC of the project has
/// (terraform-provider-nsxt `nsxt/resource_nsxt_policy_project.go` reads `default`;
/// `VpcSecurityProfile`: "All VPCs within a project are automatically associated with a
/// pre-created default security profile"); then the `SecurityStrategy` its
/// `east_west_firewall.security_strategies[0]` names. A 404 is an NSX without them: no gap.
///
/// Read for the evidence, not evaluated: the model has no default east-west action to place
/// (`VpcSecurityProfile`: `east_west_firewall.security_strategies`, at most one, and
/// `north_south_firewall.enabled`; the strategy is "a collection of distributed firewall rule
/// templates that are automatically instantiated" into the VPC's rules, each `RuleTemplate`
/// an action and groups with placeholders such as `{VPC_DEFAULT_GROUP}`: API reference 9.1.0),
/// and where and in what order NSX instantiates those rules is not documented; the rules it
/// made are evaluated where they are read (docs/nsx-policy.md).
async fn read_vpc_security(client: &Client, org: &str, project: &str, vpc: &str) -> VpcSecurity {
    let mut out = VpcSecurity::default();
    let project_root = format!("/orgs/{org}/projects/{project}");
    let vpc_path = format!("{project_root}/vpcs/{vpc}");
    let mut profile_path = format!("{project_root}/vpc-security-profiles/default");
    if let Ok(p) = ApiPath::policy(&project_root, &["security-profile-attachments"]) {
        let l = client.list(&p, &[], Privilege::ReadSecurity).await;
        match l.incomplete {
            Some(g) if g.status != Some(404) => out.gaps.push(g),
            _ => {}
        }
        let named = l
            .results
            .iter()
            .find(|a| a.get("attached_to").and_then(Value::as_str) == Some(vpc_path.as_str()));
        if let Some(p) = named
            .and_then(|a| a.get("security_profile"))
            .and_then(Value::as_str)
            .filter(|p| policy_segments(p).is_ok())
        {
            profile_path = p.to_string();
        }
    }
    let get = |path: String| async move {
        match ApiPath::policy(&path, &[]) {
            Ok(p) => client
                .get(&p)
                .await
                .map_err(|e| e.gap(p.path(), Privilege::ReadSecurity)),
            Err(why) => Err(gap(&path, why)),
        }
    };
    match get(profile_path).await {
        Ok(v) => out.profile = Some(v),
        Err(g) if g.status == Some(404) => return out,
        Err(g) => {
            out.gaps.push(g);
            return out;
        }
    }
    let strategy = out
        .profile
        .as_ref()
        .and_then(|p| p.pointer("/east_west_firewall/security_strategies/0"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(s) = strategy {
        match get(s).await {
            Ok(v) => out.strategy = Some(v),
            Err(g) => out.gaps.push(g),
        }
    }
    out
}

/// The reading that could not start (the manager unreachable): what the caller records.
pub(crate) fn unread(manager: &str, layout: &Layout, gap: Gap) -> NsxRead {
    NsxRead {
        manager: manager.to_string(),
        layout: layout.clone(),
        auth: None,
        policies: Listed {
            incomplete: Some(gap.clone()),
            ..Listed::default()
        },
        rules: Vec::new(),
        groups: BTreeMap::new(),
        members: BTreeMap::new(),
        services: BTreeMap::new(),
        vms: Vec::new(),
        traceflows: Vec::new(),
        vpc_security: None,
        gaps: vec![gap],
        enforcement: None,
        statistics: None,
    }
}

/// GETs each path (at most `max`), a few at once.
async fn read_objects(
    client: &Client,
    refs: &BTreeSet<String>,
    max: usize,
    what: &str,
    gaps: &mut Vec<Gap>,
) -> BTreeMap<String, Value> {
    if refs.len() > max {
        gaps.push(Gap {
            path: String::new(),
            status: None,
            why: format!(
                "the rules name {} {what}: only the first {max} read",
                refs.len()
            ),
            privilege: None,
        });
    }
    let results: Vec<(String, Result<Value, Gap>)> = stream::iter(refs.iter().take(max))
        .map(|path| async move {
            let r = match ApiPath::policy(path, &[]) {
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
        .await;
    let mut out = BTreeMap::new();
    for (path, r) in results {
        match r {
            Ok(v) => {
                out.insert(path, v);
            }
            Err(g) => gaps.push(g),
        }
    }
    out
}

async fn read_groups(
    client: &Client,
    refs: &BTreeSet<String>,
    gaps: &mut Vec<Gap>,
) -> (BTreeMap<String, Value>, BTreeMap<String, Members>) {
    let groups = read_objects(client, refs, MAX_GROUPS, "groups", gaps).await;
    let members: Vec<(String, Members)> = stream::iter(refs.iter().take(MAX_GROUPS))
        .map(|path| async move {
            let mut m = Members::default();
            let [ips, vms, ports] = member_kinds(path);
            for (kind, slot) in [
                (ips, &mut m.ip_addresses),
                (vms, &mut m.virtual_machines),
                (ports, &mut m.segment_ports),
            ] {
                match ApiPath::policy(path, &["members", kind]) {
                    Ok(p) => {
                        let l = client.list(&p, &[], Privilege::ReadSecurity).await;
                        *slot = Some(l);
                    }
                    Err(why) => {
                        m.gaps.push(gap(path, why));
                        break;
                    }
                }
            }
            // A member list that is not whole is also a gap of the group's.
            let listed_gaps: Vec<Gap> = [&m.ip_addresses, &m.virtual_machines, &m.segment_ports]
                .into_iter()
                .flatten()
                .filter_map(|l| l.incomplete.clone())
                .collect();
            m.gaps.extend(listed_gaps);
            (path.clone(), m)
        })
        .buffered(client.limits().max_concurrent.max(1))
        .collect()
        .await;
    (groups, members.into_iter().collect())
}

/// An id we may put in a filter or a search query: letters, digits, `-`, `_`, `.`, `:` only
/// (UUIDs, NSX ids), so no query syntax of its own.
pub(crate) fn plain_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The `resource_type` of a layout's ports in the search index: `SegmentPort` (T1/NCP),
/// `VpcSubnetPort` (VPC; vmware-tanzu/nsx-operator `pkg/nsx/services/common/types.go`
/// `ResourceTypeSubnetPort`).
pub(crate) fn port_type(layout: &Layout) -> &'static str {
    match layout {
        Layout::Infra { .. } => "SegmentPort",
        Layout::Vpc { .. } => "VpcSubnetPort",
    }
}

/// A value escaped for the search API's query syntax as terraform-provider-nsxt escapes the
/// ids it searches by (`nsxt/policy_search.go` `escapeSpecialCharacters`: each of
/// `()[]+-=&|><!{}^~*?:/` behind a backslash; `data_source_nsxt_policy_segment_port.go` escapes
/// `attachment.id` so).
pub(crate) fn escape_query_value(s: &str) -> String {
    const SPECIALS: &str = "()[]+-=&|><!{}^~*?:/";
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if SPECIALS.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The search query for the ports of `port_type` attached to a VIF (`attachment.id`): plain
/// `field:value` terms joined by AND, the value escaped ([`escape_query_value`]), and
/// `marked_for_delete:false` as terraform-provider-nsxt's searches have it (`nsxt/policy_search.go`,
/// `nsxt/cache.go`): a port being deleted is not the VM's port.
pub(crate) fn port_query(port_type: &str, attachment_id: &str) -> Option<String> {
    plain_id(attachment_id).then(|| {
        format!(
            "resource_type:{port_type} AND attachment.id:{} AND marked_for_delete:false",
            escape_query_value(attachment_id)
        )
    })
}

/// One VM: fabric VMs by display name (else by instance uuid), their VIFs, each VIF's port
/// (`search/query` by `attachment.id`), and the ports of the Supervisor's attachment ids.
/// Everything found is kept as answered, in that order; the model checks it both ways.
async fn find_vm(client: &Client, layout: &Layout, hint: &VmHint) -> VmLookup {
    let port_type = port_type(layout);
    let mut lookup = VmLookup {
        node: hint.node.clone(),
        asked: Vec::new(),
        found: Vec::new(),
        gaps: Vec::new(),
        associations: Vec::new(),
    };
    let fabric = ApiPath::fixed("/api/v1/fabric/virtual-machines");
    let mut vms: Vec<Value> = Vec::new();
    if !hint.vm_name.is_empty() {
        lookup
            .asked
            .push(format!("display_name={}", clean(&hint.vm_name, 253)));
        let l = client
            .list(
                &fabric,
                &[("display_name", hint.vm_name.as_str())],
                Privilege::ReadInventory,
            )
            .await;
        lookup.gaps.extend(l.incomplete);
        vms.extend(l.results);
    }
    if vms.is_empty() {
        if let Some(uuid) = hint.instance_uuid.as_deref().filter(|u| plain_id(u)) {
            lookup.asked.push(format!("external_id={uuid}"));
            let l = client
                .list(&fabric, &[("external_id", uuid)], Privilege::ReadInventory)
                .await;
            lookup.gaps.extend(l.incomplete);
            vms.extend(l.results);
        }
    }
    if let Some(b) = hint.bios_uuid.as_deref().filter(|u| plain_id(u)) {
        lookup.asked.push(format!("bios_uuid={b}"));
    }
    for ip in &hint.ips {
        lookup.asked.push(format!("ip={}", clean(ip, 64)));
    }
    if vms.len() > MAX_VMS_PER_HINT {
        lookup.gaps.push(Gap {
            path: fabric.path().into(),
            status: None,
            why: format!(
                "{} virtual machines answer to this name: only the first {MAX_VMS_PER_HINT} followed",
                vms.len()
            ),
            privilege: None,
        });
        vms.truncate(MAX_VMS_PER_HINT);
    }
    let vifs_path = ApiPath::fixed("/api/v1/fabric/vifs");
    let search = ApiPath::fixed("/policy/api/v1/search/query");
    let mut found = Vec::new();
    for vm in vms {
        let external = vm
            .get("external_id")
            .and_then(Value::as_str)
            .filter(|s| plain_id(s))
            .map(str::to_string);
        found.push(vm);
        let Some(external) = external else { continue };
        let vifs = client
            .list(
                &vifs_path,
                &[("owner_vm_id", external.as_str())],
                Privilege::ReadInventory,
            )
            .await;
        lookup.gaps.extend(vifs.incomplete);
        for vif in vifs.results.into_iter().take(MAX_VIFS_PER_VM) {
            let attachment = vif
                .get("lport_attachment_id")
                .and_then(Value::as_str)
                .and_then(|id| port_query(port_type, id));
            found.push(vif);
            let Some(query) = attachment else { continue };
            let ports = client
                .list(
                    &search,
                    &[("query", query.as_str())],
                    Privilege::ReadInventory,
                )
                .await;
            lookup.gaps.extend(ports.incomplete);
            found.extend(ports.results);
        }
    }
    // The ports the Supervisor's own SubnetPorts name (VPC), unless already found above.
    for attachment in hint.attachment_ids.iter().take(MAX_VIFS_PER_VM) {
        let Some(query) = port_query(port_type, attachment) else {
            continue;
        };
        lookup.asked.push(format!("attachment.id={attachment}"));
        let ports = client
            .list(
                &search,
                &[("query", query.as_str())],
                Privilege::ReadInventory,
            )
            .await;
        lookup.gaps.extend(ports.incomplete);
        for p in ports.results {
            if !found.contains(&p) {
                found.push(p);
            }
        }
    }
    lookup.associations = associations(client, layout, &found).await;
    lookup.found = found;
    lookup
}

/// The groups of every tree ([`association_roots`]) that the found fabric VMs (by
/// `external_id`) and ports (by `path`) are members of, as NSX answers it for any group type:
/// `GET <root>/virtual-machine-group-associations?vm_external_id=`, `GET
/// <root>/group-associations?intent_path=<port path>` (vsphere-automation-sdk-go, the files
/// [`association_roots`] names; the answer is a `PolicyResourceReferenceForEPListResult`, each
/// result's `target_id` a group path: terraform-provider-nsxt
/// `nsxt/data_source_nsxt_policy_baremetal_server_group_associations.go` reads it so).
async fn associations(client: &Client, layout: &Layout, found: &[Value]) -> Vec<Association> {
    let kind = |v: &Value| {
        v.get("resource_type")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let mut keys: Vec<(&'static str, &'static str, String)> = Vec::new();
    for v in found {
        match kind(v).as_deref() {
            Some("VirtualMachine") => {
                if let Some(id) = v
                    .get("external_id")
                    .and_then(Value::as_str)
                    .filter(|s| plain_id(s))
                {
                    keys.push((
                        "virtual-machine-group-associations",
                        "vm_external_id",
                        id.to_string(),
                    ));
                }
            }
            Some("SegmentPort" | "VpcSubnetPort") => {
                if let Some(p) = v
                    .get("path")
                    .and_then(Value::as_str)
                    .filter(|p| policy_segments(p).is_ok())
                {
                    keys.push(("group-associations", "intent_path", p.to_string()));
                }
            }
            _ => {}
        }
    }
    keys.dedup();
    let ports = keys.iter().filter(|k| k.1 == "intent_path").count();
    if ports > MAX_PORTS_PER_VM {
        let mut n = 0;
        keys.retain(|k| {
            n += usize::from(k.1 == "intent_path");
            k.1 != "intent_path" || n <= MAX_PORTS_PER_VM
        });
    }
    let mut asks = Vec::new();
    for root in association_roots(layout) {
        for (collection, by, key) in &keys {
            asks.push((root.clone(), *collection, *by, key.clone()));
        }
    }
    stream::iter(asks)
        .map(|(root, collection, by, key)| async move {
            let listed = match ApiPath::policy(&root, &[collection]) {
                Ok(p) => {
                    client
                        .list(&p, &[(by, key.as_str())], Privilege::ReadSecurity)
                        .await
                }
                Err(why) => Listed {
                    incomplete: Some(gap(&root, why)),
                    ..Listed::default()
                },
            };
            Association {
                root,
                by: by.to_string(),
                key,
                listed,
            }
        })
        .buffered(client.limits().max_concurrent.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests;

impl From<&super::model::SupervisorVm> for VmHint {
    fn from(v: &super::model::SupervisorVm) -> VmHint {
        VmHint {
            node: v.node.clone(),
            vm_name: v.vm_name.clone(),
            instance_uuid: v.instance_uuid.clone(),
            bios_uuid: v.bios_uuid.clone(),
            ips: v.ips.iter().map(|ip| ip.to_string()).collect(),
            attachment_ids: Vec::new(),
        }
    }
}
