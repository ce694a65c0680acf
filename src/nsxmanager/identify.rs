//! Which NSX VM and port each control-plane VM is, checked both ways, and the groups NSX says
//! they are in: the Supervisor's VMs ([`supervisor_vms`]) looked up in what one run read
//! ([`identified_vms`]); the DFW engine's input with them ([`input`]), and all a traceflow
//! needs (the confirmed ports) without reading the DFW. Pure.
//!
//! [`Found`], a VM lookup's fabric objects: the NSX Manager API's `VirtualMachine`
//! (`external_id`, `display_name`, `compute_ids`), `SegmentPort` (`attachment.id`,
//! `address_bindings`), `VirtualNetworkInterface` (`owner_vm_id`, `lport_attachment_id`,
//! `ip_address_info`) (phspies/nsxtsdk `NSXTVirtualMachineType.cs`, `NSXTSegmentPortType.cs`,
//! `NSXTPortAttachmentType.cs`, `NSXTVirtualNetworkInterfaceType.cs`; the paths in
//! vsphere-automation-sdk-go `nsxt-mp/nsx/fabric/VirtualMachinesTypes.go`, `VifsTypes.go`);
//! `compute_ids` `biosUuid:`/`instanceUuid:` as vmware/terraform-provider-nsxt
//! `nsxt/resource_nsxt_policy_vm_tags.go` reads them.

use std::net::IpAddr;

use serde_json::Value;

use super::model::{
    clip, compute_id, gap_text, name, path_of, path_str, DfwInput, DfwVm, Identity, Memberships,
    NsxPort, NsxVm, SupervisorVm, MAX_ENTRIES, MAX_FINDINGS, MAX_MEMBERS, MAX_NAME_CHARS,
    MAX_WHY_CHARS,
};
use super::raw::{NsxRead, VmLookup};

/// The DFW engine's input from what one run read, the Supervisor's VMs identified in it.
pub(crate) fn input(read: &NsxRead, vms: &[SupervisorVm]) -> DfwInput {
    let mut findings = Vec::new();
    let vms = identified_vms(read, vms, &mut findings);
    super::model::input(read, vms, findings)
}

/// A VirtualNetworkInterface (a VM's vNIC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NsxVif {
    /// The owning VM's `external_id`.
    pub owner_vm_id: Option<String>,
    pub lport_attachment_id: Option<String>,
    pub ips: Vec<IpAddr>,
}

/// One object a VM lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    Vm(NsxVm),
    Port(NsxPort),
    Vif(NsxVif),
    /// Something else: not used.
    Other,
}

fn ips_in(v: Option<&Value>, key: &str) -> Vec<IpAddr> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .take(MAX_ENTRIES)
                .filter_map(|e| match e {
                    Value::String(s) => s.parse().ok(),
                    o => o.get(key).and_then(Value::as_str)?.parse().ok(),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Found {
    /// Reads one object by its `resource_type` (a search answers several kinds).
    pub(crate) fn read(v: &Value) -> Found {
        match v.get("resource_type").and_then(Value::as_str) {
            Some("VirtualMachine") => Found::Vm(NsxVm {
                external_id: name(v, "external_id"),
                display_name: name(v, "display_name"),
                bios_uuid: compute_id(v, "biosUuid:"),
                instance_uuid: compute_id(v, "instanceUuid:"),
            }),
            // A T1/NCP segment's port, or a VPC subnet's (`VpcSubnetPort`: the search index's
            // type of `/orgs/<o>/projects/<p>/vpcs/<v>/subnets/<s>/ports/<id>`,
            // vmware-tanzu/nsx-operator `pkg/nsx/services/common/types.go`
            // `ResourceTypeSubnetPort`; the same `attachment.id` and `address_bindings`,
            // vsphere-automation-sdk-go `services/nsxt/orgs/projects/vpcs/subnets/PortsTypes.go`).
            Some("SegmentPort" | "VpcSubnetPort") => Found::Port(NsxPort {
                path: path_of(v).ok(),
                id: name(v, "id"),
                display_name: name(v, "display_name"),
                attachment_id: v.get("attachment").and_then(|a| name(a, "id")),
                ips: ips_in(v.get("address_bindings"), "ip_address"),
            }),
            Some("VirtualNetworkInterface") => Found::Vif(NsxVif {
                owner_vm_id: name(v, "owner_vm_id"),
                lport_attachment_id: name(v, "lport_attachment_id"),
                ips: v
                    .get("ip_address_info")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .take(MAX_ENTRIES)
                            .flat_map(|i| ips_in(i.get("ip_addresses"), ""))
                            .collect()
                    })
                    .unwrap_or_default(),
            }),
            _ => Found::Other,
        }
    }
}

/// The memberships of the confirmed VM (`vm`) and port (`port`) from what `lookup` asked.
fn memberships(
    lookup: Option<&VmLookup>,
    vm: Option<&NsxVm>,
    port: Option<&NsxPort>,
) -> Memberships {
    let mut m = Memberships::default();
    let Some(lookup) = lookup else {
        m.why_not.push("the VM was not looked up".into());
        return m;
    };
    let Some(ext) = vm.and_then(|v| v.external_id.clone()) else {
        m.why_not
            .push("the VM is not identified in NSX Manager".into());
        return m;
    };
    let port_path = port.and_then(|p| p.path.clone());
    let roots: std::collections::BTreeSet<&str> = lookup
        .associations
        .iter()
        .map(|a| a.root.as_str())
        .collect();
    for root in roots {
        let mut whole = true;
        let mut asked = |by: &str, key: &str| {
            let found: Vec<&super::raw::Association> = lookup
                .associations
                .iter()
                .filter(|a| a.root == root && a.by == by && a.key.eq_ignore_ascii_case(key))
                .collect();
            if found.is_empty() {
                m.why_not.push(format!(
                    "{root}: the groups of {by} {} were not asked",
                    clip(key, 128)
                ));
                whole = false;
            }
            for a in found {
                for r in a.listed.results.iter().take(MAX_MEMBERS) {
                    match r.get("target_id").and_then(Value::as_str).map(path_str) {
                        Some(Ok(g)) => {
                            m.groups.insert(g);
                        }
                        _ => {
                            if whole {
                                m.why_not.push(format!(
                                    "{root}: an association without a readable target_id"
                                ));
                            }
                            whole = false;
                        }
                    }
                }
                if let Some(g) = &a.listed.incomplete {
                    m.why_not.push(format!(
                        "{root}: the groups of {by} {} not read whole: {}",
                        clip(key, 128),
                        clip(&g.why, MAX_WHY_CHARS)
                    ));
                    whole = false;
                } else if a.listed.results.len() > MAX_MEMBERS {
                    whole = false;
                }
            }
        };
        asked("vm_external_id", &ext);
        if let Some(p) = &port_path {
            asked("intent_path", p);
        }
        if whole {
            m.whole.push(root.to_string());
        }
    }
    if port_path.is_none() {
        // Groups defined on ports (nsx-operator's) hold the port, not the VM: without the
        // port, no tree's answer is whole.
        m.why_not
            .push("the VM's port is not identified: its port's groups are not known".into());
        m.whole.clear();
    }
    m.why_not.truncate(8);
    m
}

fn same(a: &Option<String>, b: &Option<String>) -> Option<bool> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.eq_ignore_ascii_case(b)),
        _ => None,
    }
}

fn push_finding(findings: &mut Vec<String>, f: String) {
    if findings.len() < MAX_FINDINGS && !findings.contains(&f) {
        findings.push(f);
    }
}

/// Which found VM is the Machine's. A VM is the Machine's when every uuid both sides know is
/// equal and at least one is known; with no uuid on either side, by its name alone (said).
/// The name is checked the other way: a VM with the Machine's uuid but another name is the
/// Machine's (a rename), noted; a VM with the Machine's name but another uuid is a finding.
fn identify(
    sv: &SupervisorVm,
    lookup: Option<&VmLookup>,
    findings: &mut Vec<String>,
) -> (Identity, Option<NsxVm>, Option<NsxPort>) {
    let Some(lookup) = lookup else {
        return (
            Identity::NotFound(format!(
                "VM {} was not looked up in NSX Manager",
                sv.vm_name
            )),
            None,
            None,
        );
    };
    let found: Vec<Found> = lookup
        .found
        .iter()
        .take(MAX_ENTRIES)
        .map(Found::read)
        .collect();
    let vm_name = clip(&sv.vm_name, MAX_NAME_CHARS);
    let mut candidates: Vec<NsxVm> = Vec::new();
    for f in &found {
        let Found::Vm(vm) = f else { continue };
        let bios = same(&sv.bios_uuid, &vm.bios_uuid);
        let inst = same(&sv.instance_uuid, &vm.instance_uuid)
            .or_else(|| same(&sv.instance_uuid, &vm.external_id));
        let by_name = vm.display_name.as_deref() == Some(vm_name.as_str());
        match (bios, inst) {
            (Some(false), _) | (_, Some(false)) => {
                if by_name {
                    push_finding(
                        findings,
                        format!(
                            "NSX VM {} has the name of node {}'s VM but not its uuid: not used",
                            vm_name, sv.node
                        ),
                    );
                }
            }
            (Some(true), _) | (_, Some(true)) => {
                if !by_name {
                    push_finding(
                        findings,
                        format!(
                            "node {}'s VM is {} in NSX Manager (same uuid, another name)",
                            sv.node,
                            vm.display_name.as_deref().unwrap_or("(unnamed)")
                        ),
                    );
                }
                candidates.push(vm.clone());
            }
            (None, None) => {
                if by_name && sv.bios_uuid.is_none() && sv.instance_uuid.is_none() {
                    candidates.push(vm.clone());
                }
            }
        }
    }
    candidates.dedup();
    let vm = match candidates.len() {
        0 => {
            let why = if found.iter().any(|f| matches!(f, Found::Vm(_))) {
                format!("no VM NSX Manager answered is {}'s", sv.node)
            } else if lookup.gaps.is_empty() {
                format!("NSX Manager knows no VM for {}", sv.node)
            } else {
                format!("VM of {} not read: {}", sv.node, gap_text(&lookup.gaps[0]))
            };
            return (Identity::NotFound(why), None, None);
        }
        1 => candidates.remove(0),
        n => {
            return (
                Identity::Ambiguous(format!(
                    "{n} VMs in NSX Manager could be {}'s: none is used",
                    sv.node
                )),
                None,
                None,
            )
        }
    };
    // The port: tied by a VIF of this VM (owner_vm_id is its external_id), both ways.
    let vifs: Vec<&NsxVif> = found
        .iter()
        .filter_map(|f| match f {
            Found::Vif(v) => Some(v),
            _ => None,
        })
        .collect();
    let mut port = None;
    for f in &found {
        let Found::Port(p) = f else { continue };
        let tied: Vec<&&NsxVif> = vifs
            .iter()
            .filter(|v| v.lport_attachment_id.is_some() && v.lport_attachment_id == p.attachment_id)
            .collect();
        let label = p
            .path
            .as_deref()
            .or(p.id.as_deref())
            .map(|s| clip(s, 256))
            .unwrap_or_else(|| "(unnamed)".into());
        match tied.as_slice() {
            [] => push_finding(
                findings,
                format!(
                    "segment port {label} found for {} is tied to no VIF of its VM: not used",
                    sv.node
                ),
            ),
            [v] if v.owner_vm_id.is_some() && v.owner_vm_id == vm.external_id => {
                if port.is_none() {
                    port = Some(p.clone());
                } else {
                    push_finding(
                        findings,
                        format!(
                            "VM of {} has more than one segment port: the first is used",
                            sv.node
                        ),
                    );
                }
            }
            _ => push_finding(
                findings,
                format!(
                    "segment port {label} found for {} belongs to another VM: not used",
                    sv.node
                ),
            ),
        }
    }
    // The addresses NSX learned against the Supervisor's.
    let nsx_ips: Vec<IpAddr> = vifs
        .iter()
        .filter(|v| v.owner_vm_id.is_some() && v.owner_vm_id == vm.external_id)
        .flat_map(|v| v.ips.iter().copied())
        .chain(port.iter().flat_map(|p| p.ips.iter().copied()))
        .collect();
    if !nsx_ips.is_empty() {
        for ip in &sv.ips {
            if !nsx_ips.contains(ip) {
                push_finding(
                    findings,
                    format!(
                        "NSX Manager does not list {ip} for {}'s VM (groups are realized from what NSX learned)",
                        sv.node
                    ),
                );
            }
        }
    }
    (Identity::Confirmed, Some(vm), port)
}

/// Each of the Supervisor's VMs with its NSX identity as `read` found it (checked both ways,
/// [`identify`]); what does not add up goes to `findings`. Part of [`input`], and all a
/// traceflow needs (the confirmed ports), without reading the DFW.
pub(crate) fn identified_vms(
    read: &NsxRead,
    vms: &[SupervisorVm],
    findings: &mut Vec<String>,
) -> Vec<DfwVm> {
    vms.iter()
        .map(|sv| {
            let lookup = read.vms.iter().find(|l| l.node == sv.node);
            let (identity, nsx_vm, port) = identify(sv, lookup, findings);
            if let Identity::NotFound(w) | Identity::Ambiguous(w) = &identity {
                push_finding(findings, w.clone());
            }
            let memberships = memberships(lookup, nsx_vm.as_ref(), port.as_ref());
            DfwVm {
                memberships,
                node: clip(&sv.node, MAX_NAME_CHARS),
                vm_name: clip(&sv.vm_name, MAX_NAME_CHARS),
                ips: sv.ips.clone(),
                identity,
                nsx_vm,
                port,
            }
        })
        .collect()
}

/// The control-plane VMs as the Supervisor shows them, for NSX Manager: each target node with
/// its VirtualMachine's name, its `status.biosUUID` / `status.instanceUUID` (vm-operator
/// `api/v1alpha3/virtualmachine_types.go`; read from the verified VM objects `vms`, never from
/// one whose join was in doubt) and the address etcd uses (the VM's primary IP).
pub(crate) fn supervisor_vms(
    facts: &crate::supervisor::ClusterFacts,
    vms: &[&kube::api::DynamicObject],
) -> Vec<SupervisorVm> {
    facts
        .nodes
        .iter()
        .filter(|n| n.is_target())
        .filter_map(|n| {
            let vm = n.vm.as_ref()?;
            let object = vms
                .iter()
                .find(|o| o.metadata.name.as_deref() == Some(vm.name.as_str()));
            let status = |key: &str| {
                object
                    .and_then(|o| o.data.get("status")?.get(key)?.as_str())
                    .filter(|s| !s.is_empty() && s.len() <= 64)
                    .map(str::to_string)
            };
            Some(SupervisorVm {
                node: n.name.clone(),
                vm_name: vm.name.clone(),
                bios_uuid: status("biosUUID"),
                instance_uuid: status("instanceUUID"),
                ips: n.ip().into_iter().collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
