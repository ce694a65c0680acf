//! A world: what the fake manager knows, read from a directory of YAML/JSON files
//! (`tests/fixtures/nsx-manager/worlds/<name>/`), every object in the Policy API's own shape.
//!
//! Each file is a mapping with any of these keys; files are merged in name order:
//!
//! | key | objects | shape checked in |
//! | --- | --- | --- |
//! | `layout` | `{kind: infra, domain: default}` or `{kind: vpc, org, project, vpc}` | paths: vmware/vsphere-automation-sdk-go `services/nsxt/infra/domains/SecurityPoliciesTypes.go`, `services/nsxt/orgs/projects/vpcs/SecurityPoliciesTypes.go` |
//! | `users` | `{username, password, role, privileges?}` | roles: NSX RBAC role ids (`enterprise_admin`, `auditor`, …) |
//! | `security_policies` | `SecurityPolicy` with its `rules` (`Rule`) inline | terraform-provider-nsxt `nsxt/resource_nsxt_policy_security_policy.go` (category, sequence_number, scope, rules) |
//! | `groups` | `Group` with `expression` (`Condition`, `IPAddressExpression`, `PathExpression`, `ExternalIDExpression`, `ConjunctionOperator`, `NestedExpression`) | terraform-provider-nsxt `nsxt/resource_nsxt_policy_group.go` |
//! | `services` | `Service` with `service_entries` (`L4PortSetServiceEntry`, …) | terraform-provider-nsxt `nsxt/resource_nsxt_policy_service.go` |
//! | `virtual_machines` | fabric `VirtualMachine` (`external_id`, `display_name`, `tags`) | sdk-go `services/nsxt-mp/nsx/fabric/VirtualMachinesTypes.go` |
//! | `vifs` | `VirtualNetworkInterface` (`owner_vm_id`, `lport_attachment_id`, `ip_address_info`) | sdk-go `services/nsxt-mp/nsx/fabric/VifsTypes.go` |
//! | `segment_ports` | `SegmentPort` / `VpcSubnetPort` (`path`, `attachment.id`) | sdk-go `services/nsxt/infra/segments/PortsTypes.go` |
//! | `enforcement` | `{enable_firewall, exclude_list, system_exclude_list, statistics}` | `crate::enforce` (sdk-go `services/nsxt/infra/settings/firewall/…`, `…/security_policies/StatisticsTypes.go`) |
//! | `members` | by group path: `{ip_addresses, virtual_machines (external ids), segment_ports (paths)}`: effective members given, not computed | — |
//!
//! Missing `id`/`path`/`parent_path`/`resource_type`/`rule_id` are filled in as the manager
//! would (paths under the layout's tree), so a world stays short.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Which Policy tree the world's DFW lives in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Layout {
    /// `/infra/domains/<domain>` (T1/NCP).
    Infra {
        #[serde(default = "default_domain")]
        domain: String,
    },
    /// `/orgs/<org>/projects/<project>/vpcs/<vpc>`.
    Vpc {
        org: String,
        project: String,
        vpc: String,
    },
}

fn default_domain() -> String {
    "default".into()
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Infra {
            domain: default_domain(),
        }
    }
}

impl Layout {
    /// The policy path of the tree that holds security policies and groups
    /// (`/infra/domains/default`, `/orgs/default/projects/p/vpcs/v`).
    pub fn base(&self) -> String {
        match self {
            Layout::Infra { domain } => format!("/infra/domains/{domain}"),
            Layout::Vpc { org, project, vpc } => {
                format!("/orgs/{org}/projects/{project}/vpcs/{vpc}")
            }
        }
    }

    /// Where services are defined: `/infra` (T1), the project's `/orgs/o/projects/p/infra` (VPC).
    pub fn services_base(&self) -> String {
        match self {
            Layout::Infra { .. } => "/infra".into(),
            Layout::Vpc { org, project, .. } => format!("/orgs/{org}/projects/{project}/infra"),
        }
    }

    /// The collection of a group's port members: `segment-ports` (T1), `subnet-ports` (VPC;
    /// sdk-go `services/nsxt/orgs/projects/vpcs/groups/members/SubnetPortsTypes.go`).
    pub fn port_members(&self) -> &'static str {
        match self {
            Layout::Infra { .. } => "segment-ports",
            Layout::Vpc { .. } => "subnet-ports",
        }
    }
}

/// What a user may do. NSX's roles bundle feature permissions; the fake needs three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privilege {
    /// Any GET.
    Read,
    /// Create, read and delete traceflows (feature `policy_traceflow`, "crud" in the API
    /// reference's UpdateTraceflowConfig).
    Traceflow,
    /// Any other write (the fake implements none: answered 400 when allowed).
    Write,
}

/// A user of the manager. The password is only compared, never logged or shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub role: String,
    /// Overrides the role's privileges when given.
    #[serde(default)]
    pub privileges: Option<Vec<Privilege>>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("username", &self.username)
            .field("role", &self.role)
            .field("privileges", &self.privileges)
            .finish_non_exhaustive()
    }
}

impl User {
    pub fn new(username: &str, password: &str, role: &str) -> User {
        User {
            username: username.into(),
            password: password.into(),
            role: role.into(),
            privileges: None,
        }
    }

    /// The privileges of the user's role. Read-only roles: `auditor` and the operators; roles
    /// that may run Traceflow: the engineers and `enterprise_admin` (the fake's reading of
    /// NSX's role table; a world can say `privileges:` instead).
    pub fn privileges(&self) -> Vec<Privilege> {
        if let Some(p) = &self.privileges {
            return p.clone();
        }
        match self.role.as_str() {
            "enterprise_admin" => vec![Privilege::Read, Privilege::Traceflow, Privilege::Write],
            "network_engineer" | "security_engineer" | "vpc_admin" | "project_admin" => {
                vec![Privilege::Read, Privilege::Traceflow]
            }
            "auditor" | "network_operator" | "security_operator" | "lb_auditor" => {
                vec![Privilege::Read]
            }
            _ => vec![],
        }
    }
}

/// Effective members given explicitly for a group (instead of computed from its expression).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplicitMembers {
    #[serde(default)]
    pub ip_addresses: Vec<String>,
    /// External ids (bios/instance uuid) of fabric VMs.
    #[serde(default)]
    pub virtual_machines: Vec<String>,
    /// Segment (or VPC subnet) port paths.
    #[serde(default)]
    pub segment_ports: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldFile {
    /// Other world directories (relative to this file's) read before this one.
    #[serde(default)]
    include: Vec<String>,
    layout: Option<Layout>,
    #[serde(default)]
    users: Vec<User>,
    #[serde(default)]
    security_policies: Vec<Value>,
    #[serde(default)]
    groups: Vec<Value>,
    #[serde(default)]
    services: Vec<Value>,
    #[serde(default)]
    virtual_machines: Vec<Value>,
    #[serde(default)]
    vifs: Vec<Value>,
    #[serde(default)]
    segment_ports: Vec<Value>,
    #[serde(default)]
    members: BTreeMap<String, ExplicitMembers>,
    /// The DFW's switch, exclusion list and counters (`crate::enforce`).
    enforcement: Option<crate::enforce::Enforcement>,
}

/// Everything the fake manager serves, normalized (ids, paths, rule ids filled in).
#[derive(Debug, Clone, Default)]
pub struct World {
    pub layout: Layout,
    pub users: Vec<User>,
    /// `SecurityPolicy` objects, each with its `rules` inline.
    pub policies: Vec<Value>,
    pub groups: Vec<Value>,
    pub services: Vec<Value>,
    pub vms: Vec<Value>,
    pub vifs: Vec<Value>,
    pub ports: Vec<Value>,
    pub members: BTreeMap<String, ExplicitMembers>,
    /// The DFW's switch, exclusion list and counters (`crate::enforce`).
    pub enforcement: crate::enforce::Enforcement,
    /// Policies listed without a `path` ([`World::with_pathless`]): a hostile manager's.
    pub pathless_policies: Vec<Value>,
}

fn obj(v: &mut Value) -> Result<&mut Map<String, Value>> {
    if !v.is_object() {
        bail!("an object expected, got {v}");
    }
    v.as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("an object expected"))
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Fills in what NSX fills in on every policy object: `id`, `path`, `parent_path`,
/// `relative_path`, `display_name`, `resource_type`, `_revision`, `marked_for_delete`.
fn fill(v: &mut Value, kind: &str, collection: &str, parent: &str) -> Result<String> {
    let o = obj(v)?;
    let id = match o.get("id").and_then(Value::as_str) {
        Some(id) => id.to_string(),
        None => match o.get("display_name").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => bail!("a {kind} without id or display_name"),
        },
    };
    let path = o
        .get("path")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{parent}/{collection}/{id}"));
    let parent_path = path
        .rsplit_once('/')
        .and_then(|(p, _)| p.rsplit_once('/'))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default();
    o.insert("id".into(), json!(id));
    o.insert("path".into(), json!(path));
    o.entry("parent_path").or_insert(json!(parent_path));
    o.entry("relative_path").or_insert(json!(id));
    o.entry("display_name").or_insert(json!(id));
    o.entry("resource_type").or_insert(json!(kind));
    o.entry("_revision").or_insert(json!(0));
    o.entry("marked_for_delete").or_insert(json!(false));
    o.entry("_system_owned").or_insert(json!(false));
    Ok(path)
}

impl World {
    /// Reads every `*.yaml`, `*.yml` and `*.json` file of `dir`, in name order, after the
    /// directories or files their `include:` names (relative to the including file).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<World> {
        let mut texts = Vec::new();
        read_dir_texts(dir.as_ref(), 0, &mut texts)?;
        World::from_texts(texts.iter().map(|(n, t)| (n.as_str(), t.as_str())))
    }

    /// A world from YAML (or JSON) texts, each named for the error messages.
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<World> {
        let mut w = World::default();
        let mut raw = WorldFile::default();
        for (name, text) in texts {
            let f: WorldFile =
                serde_yaml_ng::from_str(text).with_context(|| format!("parsing {name}"))?;
            if let Some(l) = f.layout {
                raw.layout = Some(l);
            }
            raw.users.extend(f.users);
            raw.security_policies.extend(f.security_policies);
            raw.groups.extend(f.groups);
            raw.services.extend(f.services);
            raw.virtual_machines.extend(f.virtual_machines);
            raw.vifs.extend(f.vifs);
            raw.segment_ports.extend(f.segment_ports);
            raw.members.extend(f.members);
            if let Some(e) = f.enforcement {
                w.enforcement.merge(e);
            }
        }
        w.layout = raw.layout.unwrap_or_default();
        w.users = raw.users;
        w.members = raw.members;
        w.policies = raw.security_policies;
        w.groups = raw.groups;
        w.services = raw.services;
        w.vms = raw.virtual_machines;
        w.vifs = raw.vifs;
        w.ports = raw.segment_ports;
        w.normalize()?;
        Ok(w)
    }

    /// Fills in ids, paths and rule ids, and checks what the fake relies on.
    fn normalize(&mut self) -> Result<()> {
        let base = self.layout.base();
        let services_base = self.layout.services_base();
        let mut next_rule_id = 1000
            + self
                .policies
                .iter()
                .flat_map(|p| {
                    p.get("rules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .filter_map(|r| r.get("rule_id").and_then(Value::as_u64))
                .max()
                .unwrap_or(0);
        for p in &mut self.policies {
            let path = fill(p, "SecurityPolicy", "security-policies", &base)?;
            let o = obj(p)?;
            // VPC policies carry no category (terraform-provider-nsxt
            // `getPolicySecurityPolicySchema` drops it for VPC): the fake adds none there. A
            // world may hold policies of several trees (a path given): by the policy's path.
            let vpc_policy = path.starts_with("/orgs/") && path.contains("/vpcs/");
            if !vpc_policy {
                o.entry("category").or_insert(json!("Application"));
            }
            // NSX's own default policies (`default-layer3-section`, `default-layer2-section`:
            // terraform-provider-nsxt `docs/resources/policy_predefined_security_policy.md`
            // names `/infra/domains/default/security-policies/default-layer3-section`) are
            // flagged `is_default` (`nsxt/data_source_nsxt_policy_security_policy.go`).
            let id = o.get("id").and_then(Value::as_str).unwrap_or("");
            let is_default = matches!(id, "default-layer3-section" | "default-layer2-section");
            o.entry("is_default").or_insert(json!(is_default));
            o.entry("sequence_number").or_insert(json!(0));
            o.entry("scope").or_insert(json!(["ANY"]));
            o.entry("stateful").or_insert(json!(true));
            let mut rules = match o.remove("rules") {
                Some(Value::Array(r)) => r,
                None | Some(Value::Null) => vec![],
                Some(other) => bail!("{path}: rules must be a list, got {other}"),
            };
            for r in &mut rules {
                fill(r, "Rule", "rules", &path)?;
                let ro = obj(r)?;
                ro.entry("action").or_insert(json!("ALLOW"));
                ro.entry("direction").or_insert(json!("IN_OUT"));
                ro.entry("ip_protocol").or_insert(json!("IPV4_IPV6"));
                ro.entry("sequence_number").or_insert(json!(0));
                ro.entry("disabled").or_insert(json!(false));
                ro.entry("logged").or_insert(json!(false));
                ro.entry("sources_excluded").or_insert(json!(false));
                ro.entry("destinations_excluded").or_insert(json!(false));
                ro.entry("source_groups").or_insert(json!(["ANY"]));
                ro.entry("destination_groups").or_insert(json!(["ANY"]));
                ro.entry("services").or_insert(json!(["ANY"]));
                ro.entry("profiles").or_insert(json!(["ANY"]));
                ro.entry("scope").or_insert(json!(["ANY"]));
                if !ro.contains_key("rule_id") {
                    next_rule_id += 1;
                    ro.insert("rule_id".into(), json!(next_rule_id));
                }
            }
            let count = rules.len();
            let o = obj(p)?;
            o.insert("rules".into(), Value::Array(rules));
            o.insert("rule_count".into(), json!(count));
        }
        for g in &mut self.groups {
            fill(g, "Group", "groups", &base)?;
            obj(g)?.entry("expression").or_insert(json!([]));
        }
        for s in &mut self.services {
            fill(s, "Service", "services", &services_base)?;
            obj(s)?.entry("service_entries").or_insert(json!([]));
        }
        for vm in &mut self.vms {
            let o = obj(vm)?;
            if !o.contains_key("external_id") {
                bail!(
                    "a virtual machine without external_id: {}",
                    Value::Object(o.clone())
                );
            }
            o.entry("resource_type").or_insert(json!("VirtualMachine"));
            o.entry("type").or_insert(json!("REGULAR"));
            o.entry("power_state").or_insert(json!("VM_RUNNING"));
            o.entry("tags").or_insert(json!([]));
            let ext = o["external_id"].clone();
            o.entry("display_name").or_insert(ext);
        }
        for vif in &mut self.vifs {
            let o = obj(vif)?;
            for k in ["external_id", "owner_vm_id"] {
                if !o.contains_key(k) {
                    bail!("a vif without {k}: {}", Value::Object(o.clone()));
                }
            }
            o.entry("resource_type")
                .or_insert(json!("VirtualNetworkInterface"));
            o.entry("ip_address_info").or_insert(json!([]));
        }
        let port_kind = match self.layout {
            Layout::Infra { .. } => "SegmentPort",
            Layout::Vpc { .. } => "VpcSubnetPort",
        };
        for port in &mut self.ports {
            let Some(path) = str_of(port, "path").map(str::to_string) else {
                bail!("a segment port without path: {port}");
            };
            let id = path.rsplit('/').next().unwrap_or_default().to_string();
            obj(port)?.entry("id").or_insert(json!(id));
            let parent = String::new();
            fill(port, port_kind, "ports", &parent)?;
        }
        Ok(())
    }

    /// Adds `n` security policies listed without a `path`, as no real manager lists one (every
    /// policy object has its readonly `path`, "Absolute path of this object": phspies/nsxtsdk
    /// `nsxtsdk/Policy/Models/NSXTPolicyConfigResourceType.cs`), but a hostile one, or a
    /// man in the middle, may: the reader can ask nothing more of them (no rules) and can only
    /// tell one from another by the whole object. Listed after the world's own, in its tree's
    /// `security-policies`; each an Application policy with a distinct sequence number.
    pub fn with_pathless(mut self, n: usize) -> World {
        self.pathless_policies.extend((0..n).map(|i| {
            json!({"resource_type": "SecurityPolicy", "display_name": format!("pathless-{i}"),
                   "category": "Application", "sequence_number": 100_000 + i})
        }));
        self
    }

    /// Adds filler as a huge manager has it: `policies` Application policies of
    /// `rules_per_policy` rules each, and `groups` groups, none touching the world's addresses
    /// (all in TEST-NET-3, 203.0.113.0/24) and all ordered after the world's own policies of
    /// that category, so no verdict changes.
    pub fn with_filler(mut self, policies: usize, rules_per_policy: usize, groups: usize) -> World {
        let base = self.layout.base();
        let after = self
            .policies
            .iter()
            .filter_map(|p| p.get("sequence_number").and_then(Value::as_i64))
            .max()
            .unwrap_or(0)
            + 1;
        let mut rule_id = 5_000_000u64;
        for i in 0..policies {
            let rules: Vec<Value> = (0..rules_per_policy)
                .map(|j| {
                    rule_id += 1;
                    let ip = format!("203.0.113.{}", (i * rules_per_policy + j) % 250 + 1);
                    json!({"id": format!("filler-{i}-rule-{j}"), "action": "DROP",
                           "sequence_number": j, "source_groups": [ip],
                           "destination_groups": [ip], "rule_id": rule_id})
                })
                .collect();
            let mut p = json!({"id": format!("filler-{i}"), "category": "Application",
                               "sequence_number": after + i as i64, "rules": rules});
            // Cannot fail: an object with an id.
            let _ = fill(&mut p, "SecurityPolicy", "security-policies", &base);
            let path = p["path"].as_str().unwrap_or_default().to_string();
            if let Some(rules) = p.get_mut("rules").and_then(Value::as_array_mut) {
                for r in rules.iter_mut() {
                    let _ = fill(r, "Rule", "rules", &path);
                    if let Some(o) = r.as_object_mut() {
                        for (k, v) in [
                            ("direction", json!("IN_OUT")),
                            ("disabled", json!(false)),
                            ("services", json!(["ANY"])),
                            ("profiles", json!(["ANY"])),
                            ("scope", json!(["ANY"])),
                            ("sources_excluded", json!(false)),
                            ("destinations_excluded", json!(false)),
                        ] {
                            o.entry(k).or_insert(v);
                        }
                    }
                }
            }
            p["rule_count"] = json!(rules_per_policy);
            p["scope"] = json!(["ANY"]);
            self.policies.push(p);
        }
        for i in 0..groups {
            let mut g = json!({"id": format!("filler-group-{i}"), "expression": [
                {"resource_type": "IPAddressExpression",
                 "ip_addresses": [format!("203.0.113.{}", i % 250 + 1)]}]});
            let _ = fill(&mut g, "Group", "groups", &base);
            self.groups.push(g);
        }
        self
    }

    /// The user named `name`.
    pub fn user(&self, name: &str) -> Option<&User> {
        self.users.iter().find(|u| u.username == name)
    }

    /// Every rule, with its policy: `(policy, rule)`.
    pub fn rules(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.policies.iter().flat_map(|p| {
            p.get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |r| (p, r))
        })
    }

    /// The rule whose path is `path`.
    pub fn rule(&self, path: &str) -> Option<&Value> {
        self.rules()
            .map(|(_, r)| r)
            .find(|r| str_of(r, "path") == Some(path))
    }

    /// The rule at `path` as Traceflow names it (for a harness oracle's answers).
    pub fn rule_ref(&self, path: &str) -> Option<crate::dfw::RuleRef> {
        let r = self.rule(path)?;
        Some(crate::dfw::RuleRef {
            rule_id: r.get("rule_id").and_then(Value::as_u64)?,
            path: path.to_string(),
        })
    }

    /// The fabric VM of `external_id`.
    pub fn vm(&self, external_id: &str) -> Option<&Value> {
        self.vms
            .iter()
            .find(|v| str_of(v, "external_id") == Some(external_id))
    }

    /// The port whose `path` is `path`.
    pub fn port(&self, path: &str) -> Option<&Value> {
        self.ports.iter().find(|p| str_of(p, "path") == Some(path))
    }

    /// The VIFs of a VM.
    pub fn vifs_of<'a>(&'a self, vm_external_id: &'a str) -> impl Iterator<Item = &'a Value> {
        self.vifs
            .iter()
            .filter(move |v| str_of(v, "owner_vm_id") == Some(vm_external_id))
    }

    /// The VIF a port is attached to (`attachment.id` = the VIF's `lport_attachment_id`).
    pub fn vif_of_port(&self, port: &Value) -> Option<&Value> {
        let att = port.pointer("/attachment/id").and_then(Value::as_str)?;
        self.vifs
            .iter()
            .find(|v| str_of(v, "lport_attachment_id") == Some(att))
    }

    /// The VM owning a port (through its VIF).
    pub fn vm_of_port(&self, port: &Value) -> Option<&Value> {
        let vif = self.vif_of_port(port)?;
        self.vm(str_of(vif, "owner_vm_id")?)
    }

    /// The ports of a VM (through its VIFs).
    pub fn ports_of<'a>(&'a self, vm_external_id: &'a str) -> Vec<&'a Value> {
        let atts: Vec<&str> = self
            .vifs_of(vm_external_id)
            .filter_map(|v| str_of(v, "lport_attachment_id"))
            .collect();
        self.ports
            .iter()
            .filter(|p| {
                p.pointer("/attachment/id")
                    .and_then(Value::as_str)
                    .is_some_and(|a| atts.contains(&a))
            })
            .collect()
    }

    /// The IP addresses a VIF reports (`ip_address_info[].ip_addresses`).
    pub fn vif_ips(vif: &Value) -> Vec<std::net::IpAddr> {
        vif.get("ip_address_info")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| i.get("ip_addresses").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|s| s.split('/').next().and_then(|s| s.parse().ok()))
            .collect()
    }

    /// The IPs of a VM (all its VIFs).
    pub fn vm_ips(&self, vm_external_id: &str) -> Vec<std::net::IpAddr> {
        self.vifs_of(vm_external_id)
            .flat_map(World::vif_ips)
            .collect()
    }

    /// The VM that holds `ip` on one of its VIFs.
    pub fn vm_by_ip(&self, ip: std::net::IpAddr) -> Option<&Value> {
        self.vifs
            .iter()
            .find(|v| World::vif_ips(v).contains(&ip))
            .and_then(|v| self.vm(str_of(v, "owner_vm_id")?))
    }
}

/// The texts of a world directory's files (or of one file), the includes first (at most 4
/// deep: a loop ends there).
fn read_dir_texts(path: &Path, depth: usize, texts: &mut Vec<(String, String)>) -> Result<()> {
    if depth > 4 {
        bail!("{}: includes nest deeper than 4", path.display());
    }
    let files: Vec<_> = if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
            })
            .collect();
        files.sort();
        files
    };
    if files.is_empty() {
        bail!("no world files in {}", path.display());
    }
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let head: WorldFile =
            serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
        let dir = f.parent().unwrap_or(Path::new("."));
        for inc in &head.include {
            read_dir_texts(&dir.join(inc), depth + 1, texts)?;
        }
        texts.push((f.display().to_string(), text));
    }
    Ok(())
}

/// `tests/fixtures/nsx-manager/worlds/<name>` of this repository.
pub fn world_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
        .join("nsx-manager")
        .join("worlds")
        .join(name)
}
