//! What one run read from NSX Manager, as NSX Manager answered it: the contract between the
//! reader (`client`, `read`, `traceflow`: I/O) and the evaluation (`model` parses these values,
//! `analyse::dfw` judges them). Objects are kept as the API's own JSON (`serde_json::Value`),
//! already bounded by the reader (pages, objects, bytes), so a bundle can keep them and
//! `analyse` re-judge offline; nothing here holds a credential, a cookie or a token.
//!
//! Every list says whether it is whole: a part the reader could not read (a 403, a bound, a
//! timeout) is a [`Gap`], and the evaluation turns a gap that could matter into "cannot decide",
//! never into a guess.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which Policy API tree the Supervisor's networking uses: T1/NCP
/// (`/policy/api/v1/infra/domains/default/…`) or VPC (`/policy/api/v1/orgs/<org>/projects/<p>/vpcs/<v>/…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum Layout {
    /// `/policy/api/v1/infra/domains/<domain>` (NCP on T1 routers: `default`).
    Infra { domain: String },
    /// `/policy/api/v1/orgs/<org>/projects/<project>/vpcs/<vpc>`.
    Vpc {
        org: String,
        project: String,
        vpc: String,
    },
}

/// Something the reader could not read, and why (our words, bounded; an HTTP status when there
/// was one). `privilege` names the NSX privilege a 401/403 needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Gap {
    /// The API path asked (no query string with anything secret: the reader asks none).
    pub path: String,
    pub status: Option<u16>,
    pub why: String,
    pub privilege: Option<String>,
}

/// One list the reader walked (every page, cursor by cursor, up to its bounds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listed {
    /// The `results` of every page read, in order.
    pub results: Vec<serde_json::Value>,
    /// `result_count` of the first page, when the manager said it.
    pub result_count: Option<u64>,
    /// Why the list is not whole (a bound, an error on a later page); `None`: every page read.
    pub incomplete: Option<Gap>,
}

/// A group's effective members, as NSX realized them (`…/groups/<id>/members/ip-addresses`,
/// `/virtual-machines`, `/segment-ports`): what the group *is* now, not its definition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Members {
    pub ip_addresses: Option<Listed>,
    pub virtual_machines: Option<Listed>,
    pub segment_ports: Option<Listed>,
    /// Member kinds that could not be read.
    pub gaps: Vec<Gap>,
}

/// One DFW security policy and its rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyRead {
    /// The `SecurityPolicy` object as listed.
    pub policy: serde_json::Value,
    /// Its `Rule`s (`…/security-policies/<id>/rules`, or the policy's own `rules` when listed
    /// with them).
    pub rules: Listed,
}

/// A control-plane VM as NSX Manager knows it: found from what the Supervisor says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VmLookup {
    /// The Kubernetes node / VirtualMachine name the Supervisor gives.
    pub node: String,
    /// What it was looked up by (`display_name`, `external_id`/bios uuid, IP), as asked.
    pub asked: Vec<String>,
    /// The NSX objects found (fabric `VirtualMachine`s, `SegmentPort`s / VIFs), as answered.
    pub found: Vec<serde_json::Value>,
    pub gaps: Vec<Gap>,
    /// The groups NSX says the VM (by its external id) and its ports (by their policy paths)
    /// are members of, asked per tree (`…/virtual-machine-group-associations`,
    /// `…/group-associations`): membership as NSX computes it for every group type.
    #[serde(default)]
    pub associations: Vec<Association>,
}

/// One association question and NSX's answer (`PolicyResourceReferenceForEPListResult`:
/// `target_id` a group's path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Association {
    /// The tree asked (`/infra`, `/orgs/<o>/projects/<p>/infra`, `/orgs/<o>/projects/<p>/vpcs/<v>`).
    pub root: String,
    /// `vm_external_id` or `intent_path`.
    pub by: String,
    /// The VM's external id or the port's path.
    pub key: String,
    pub listed: Listed,
}

/// One Traceflow run from a source VM's port towards a peer's IP and port (TCP SYN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TraceflowRead {
    pub from: String,
    pub to: String,
    pub port: u16,
    /// The traceflow's path on the manager (deleted after the run).
    pub path: String,
    /// The traceflow object / its status as last read.
    pub status: Option<serde_json::Value>,
    /// Its observations, as listed.
    pub observations: Listed,
    /// Whether the run saw the traceflow deleted (the manager answered the DELETE, or 404).
    pub deleted: bool,
    pub gaps: Vec<Gap>,
}

/// Everything one run read from NSX Manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NsxRead {
    /// The manager's URL as given (`https://host[:port]`), no credentials.
    pub(crate) manager: String,
    pub(crate) layout: Layout,
    /// How the run authenticated (`session` or `basic`), never with what.
    pub(crate) auth: Option<String>,
    /// The DFW's security policies with their rules, every category.
    pub(crate) policies: Listed,
    pub(crate) rules: Vec<PolicyRead>,
    /// Every group a rule names (sources, destinations, scope), by path: its definition.
    pub(crate) groups: BTreeMap<String, serde_json::Value>,
    /// Their effective members, by group path.
    pub(crate) members: BTreeMap<String, Members>,
    /// Every service a rule names, by path.
    pub(crate) services: BTreeMap<String, serde_json::Value>,
    /// The control-plane VMs in NSX.
    pub(crate) vms: Vec<VmLookup>,
    /// The traceflows run (`--nsx-traceflow`), empty without.
    pub(crate) traceflows: Vec<TraceflowRead>,
    /// On VPC: the VPC's security profile and its east-west security strategy (NSX 9).
    #[serde(default)]
    pub(crate) vpc_security: Option<VpcSecurity>,
    /// What could not be read, anywhere (a 401/403 first: the whole reading may hang on it).
    pub(crate) gaps: Vec<Gap>,
    /// The DFW's switch and exclusion list (`nsxmanager::enforce`); absent when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) enforcement: Option<EnforcementRead>,
    /// The rules' hit counters before and after the path checks (`nsxmanager::enforce`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) statistics: Option<StatisticsRead>,
}

// ---- what NSX Manager enforces (`nsxmanager::enforce` reads and judges these) ----

/// What the run read of the DFW's switch and exclusion list (kept in a bundle).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnforcementRead {
    /// The `DfwFirewallConfiguration`, as answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_gap: Option<Gap>,
    /// The `PolicyExcludeList`, as answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_list: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_list_gap: Option<Gap>,
    /// Whether the list read includes the system members (`system_owned=true` answered).
    #[serde(default)]
    pub system_members: bool,
    /// The effective members of each group in the list, by path (the project's list's groups
    /// too: their paths are the project's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, Members>,
    /// On VPC (a project other than `default`, whose infra is `/infra`): the VPC's project's own
    /// exclusion list (`nsxmanager::enforce::PROJECT_EXCLUDE_LIST`); absent when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectExcludeList>,
}

/// A project's own DFW exclusion list, as answered (`PolicyExcludeList`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProjectExcludeList {
    /// The project's path (`/orgs/<org>/projects/<project>`).
    pub project: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<Gap>,
}

/// One policy's statistics, read before and after the path checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyStatistics {
    /// The policy's path.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_gap: Option<Gap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_gap: Option<Gap>,
}

/// The rules' hit counters around the checks (kept in a bundle).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatisticsRead {
    pub policies: Vec<PolicyStatistics>,
    /// Why the statistics were not read (whole) before the checks: the policy list's gap, a
    /// bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
}

/// A VPC's security posture as NSX 9 keeps it: the `VpcSecurityProfile` attached to the VPC
/// (`…/security-profile-attachments`, else the project's `default` profile) and the
/// `SecurityStrategy` its `east_west_firewall.security_strategies` names, as answered. Read for
/// the evidence only: the rules NSX instantiates from the strategy are read with the VPC's
/// policies. Its gaps stay here (an NSX before 9 has none of these: 404, no gap).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VpcSecurity {
    pub profile: Option<serde_json::Value>,
    pub strategy: Option<serde_json::Value>,
    pub gaps: Vec<Gap>,
}
