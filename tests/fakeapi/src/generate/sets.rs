//! Every generated Supervisor fixture set, one definition each: the base it is made from (a
//! hand-kept set in upstream shapes, or another definition), renames, and its odd one out as
//! edits. `ETCDNET_WRITE_FIXTURES=1 cargo test -p etcdnet-fakeapi --lib generate` writes them
//! into tests/fixtures/supervisor; a unit test fails while a committed set differs.
//!
//! Hand-kept bases: healthy-v1alpha3 (CAPI v1beta1, vm-operator v1alpha3), v1alpha1-capw,
//! v1alpha2, kcp-v1beta2 (CAPI v1beta2, vm-operator v1alpha5), not-supervisor and the nsx-* sets.
//! A new variation is one more function here, listed in [`defs`].

use serde_json::{json, Value};

use super::build::{Edit, Obj, Part, SetDef};

/// healthy-v1alpha3's settings: the workload API a port where nothing listens, vm-operator
/// served up to v1alpha3.
const V1ALPHA3_REFUSED: &str = r#"vars:
  WORKLOAD_URL: https://127.0.0.1:1
groups:
  vmoperator.vmware.com:
    versions: [v1alpha1, v1alpha2, v1alpha3]
    preferredVersion: v1alpha3
"#;

const CLUSTER: &str = "Cluster";
const KCP: &str = "KubeadmControlPlane";
const MACHINE: &str = "Machine";
const MD: &str = "MachineDeployment";
const VSM: &str = "VSphereMachine";
const VM: &str = "VirtualMachine";
const SECRET: &str = "Secret";

/// healthy-v1alpha3's names: the cluster, its KCP, the control-plane nodes (Machine,
/// VSphereMachine and VM share the name), and the node a rollout adds.
const TKC: &str = "tkc-prod";
const CP: &str = "tkc-prod-7xk2p";
const CP1: &str = "tkc-prod-7xk2p-4rz8m";
const CP2: &str = "tkc-prod-7xk2p-9qtvw";
const CP3: &str = "tkc-prod-7xk2p-bx2lk";
const CP4: &str = "tkc-prod-7xk2p-k8d5n";

fn set(obj: Obj, path: &'static str, value: Value) -> Edit {
    Edit::Set(obj, path, value)
}

fn unset(obj: Obj, path: &'static str) -> Edit {
    Edit::Unset(obj, path)
}

fn remove(obj: Obj) -> Edit {
    Edit::Remove(obj)
}

fn copy(obj: Obj, to: &'static str) -> Edit {
    Edit::Copy(obj, to)
}

fn drop_condition(obj: Obj, list: &'static str, kind: &'static str) -> Edit {
    Edit::DropCondition(obj, list, kind)
}

/// A Machine kubeadm has not joined yet: no providerID, node or addresses, its infrastructure
/// not ready, phase Provisioning, and none of the health conditions KCP writes of a joined node.
fn not_joined(machine: Obj) -> Vec<Edit> {
    let mut edits = vec![
        unset(machine, "/spec/providerID"),
        set(machine, "/status/infrastructureReady", json!(false)),
        set(machine, "/status/phase", json!("Provisioning")),
        unset(machine, "/status/nodeRef"),
        unset(machine, "/status/nodeInfo"),
        unset(machine, "/status/addresses"),
    ];
    for condition in [
        "APIServerPodHealthy",
        "ControllerManagerPodHealthy",
        "EtcdMemberHealthy",
        "EtcdPodHealthy",
        "SchedulerPodHealthy",
    ] {
        edits.push(drop_condition(machine, "/status/conditions", condition));
    }
    edits
}

/// A CAPI v1beta1 condition (or vm-operator's), `what` as "Type Status [Reason [Severity]]":
/// with a reason the message is written too, as CAPI writes it (empty or not).
fn v1beta1(obj: Obj, list: &'static str, what: &str, message: &str, time: &str) -> Edit {
    let w: Vec<&str> = what.split(' ').collect();
    let mut c = json!({"type": w[0], "status": w[1], "lastTransitionTime": time});
    if let Some(reason) = w.get(2) {
        c["reason"] = json!(reason);
        c["message"] = json!(message);
    }
    if let Some(severity) = w.get(3) {
        c["severity"] = json!(severity);
    }
    Edit::Condition(obj, list, c)
}

/// A metav1 condition (CAPI v1beta2), `what` as "Type Status Reason"; an empty message is left
/// out (omitempty).
fn v1beta2(
    obj: Obj,
    list: &'static str,
    what: &str,
    generation: i64,
    message: &str,
    time: &str,
) -> Edit {
    let w: Vec<&str> = what.split(' ').collect();
    let mut c = json!({"type": w[0], "status": w[1], "reason": w[2],
        "observedGeneration": generation, "lastTransitionTime": time});
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    Edit::Condition(obj, list, c)
}

/// The generated sets, each after the sets it is made from.
pub fn defs() -> Vec<SetDef> {
    vec![
        hostile_escapes(),
        hostile_identity(),
        quorum_lost(),
        long_names(),
        missing_machine(),
        vm_no_ip(),
        vm_powered_off(),
        rollout_scale_up(),
        rollout_scale_up_joining(),
        rollout_scale_down(),
        two_clusters(),
        remediation_armed(),
        remediation_paused(),
        v1alpha6(),
        three_zones(),
        vm_network_config_only(),
        vm_naming_template(),
    ]
}

/// kcp-v1beta2's settings with vm-operator served up to v1alpha6 (its storage version since
/// vmware-tanzu/vm-operator commit 3ec7f039 "v1alpha6": `+kubebuilder:storageversion` in
/// api/v1alpha6/virtualmachine_types.go).
const V1ALPHA6: &str = r#"aggregatedDiscovery: true
vars:
  WORKLOAD_URL: https://127.0.0.1:1
version:
  gitVersion: v1.33.1+vmware.wcp.1
  minor: "33"
groups:
  vmoperator.vmware.com:
    versions: [v1alpha1, v1alpha2, v1alpha3, v1alpha4, v1alpha5, v1alpha6]
    preferredVersion: v1alpha6
  cluster.x-k8s.io:
    versions: [v1beta1, v1beta2]
    preferredVersion: v1beta2
  controlplane.cluster.x-k8s.io:
    versions: [v1beta1, v1beta2]
    preferredVersion: v1beta2
  vmware.infrastructure.cluster.x-k8s.io:
    versions: [v1beta1, v1beta2]
    preferredVersion: v1beta2
resources:
  - {apiVersion: bootstrap.cluster.x-k8s.io/v1beta2, kind: KubeadmConfig}
"#;

/// A VM's `status.network` as vm-operator writes it for a guest with one IPv4 address on
/// eth0 (api/v1alpha3..v1alpha6 `VirtualMachineNetworkStatus`: `config` from the network
/// provider, the rest from the guest).
fn ipv4_network(ip: &str, mac: &str) -> Value {
    json!({
        "config": {"interfaces": [{"name": "eth0", "ip": {"addresses": [format!("{ip}/24")]}}]},
        "hostName": CP3,
        "interfaces": [{"name": "eth0", "deviceKey": 4000, "ip": {"macAddr": mac, "addresses": [
            {"address": format!("{ip}/24"), "origin": "dhcp", "state": "preferred"}]}}],
        "primaryIP4": ip
    })
}

fn v1alpha6() -> SetDef {
    SetDef {
        name: "v1alpha6",
        about: r#"v1alpha6 — kcp-v1beta2 on a Supervisor whose vm-operator serves v1alpha6, its storage
version (vmware-tanzu/vm-operator api/v1alpha6/virtualmachine_types.go, +kubebuilder:storageversion):
the VirtualMachines at vmoperator.vmware.com/v1alpha6 (served v1alpha1..v1alpha6, preferred v1alpha6;
the fields the plugin reads kept their v1alpha5 names: status.network.primaryIP4/config,
status.nodeName, status.zone, status.powerState).

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p (CAPI v1beta2)
  control plane (desired 3, present 3, KCP ready 3), all IPv4:
    tkc-prod-7xk2p-4rz8m  198.18.0.11  esx-02
    tkc-prod-7xk2p-9qtvw  198.18.0.12  esx-02
    tkc-prod-7xk2p-bx2lk  198.18.0.13  esx-01
  secrets: as healthy-v1alpha3.

Expected: 3 nodes found at v1alpha6, exit 0 with a reachable workload API."#,
        settings: Some(V1ALPHA6),
        parts: vec![Part {
            from: "kcp-v1beta2",
            rename: vec![("v1alpha5", "v1alpha6")],
            ..Part::default()
        }],
        edits: vec![
            set(
                (VM, CP3),
                "/status/network",
                ipv4_network("198.18.0.13", "00:50:56:a1:14:1d"),
            ),
            set(
                (MACHINE, CP3),
                "/status/addresses",
                json!([{"type": "InternalIP", "address": "198.18.0.13"}]),
            ),
            set(
                (VSM, CP3),
                "/status/addresses",
                json!([{"type": "InternalIP", "address": "198.18.0.13"}]),
            ),
        ],
    }
}

/// The zone label vm-operator sets on a VM it placed (`reconcileStatusZone` in
/// pkg/providers/vsphere/vmlifecycle/update_status.go: `topology.kubernetes.io/zone`, and
/// `status.zone`).
const ZONE_LABEL: &str = "/metadata/labels/topology.kubernetes.io~1zone";

fn three_zones() -> SetDef {
    let place = |cp: &'static str, zone: &'static str, host: &'static str| {
        vec![
            // CAPI places a control-plane Machine in a failure domain (v1beta1 and v1beta2
            // `spec.failureDomain`; KCP spreads them over the Cluster's failure domains).
            set((MACHINE, cp), "/spec/failureDomain", json!(zone)),
            set((VM, cp), ZONE_LABEL, json!(zone)),
            set((VM, cp), "/status/zone", json!(zone)),
            set((VM, cp), "/status/nodeName", json!(host)),
        ]
    };
    SetDef {
        name: "three-zones",
        about: r#"three-zones — v1alpha6 with its control plane spread over three vSphere Zones, one
ESXi host each.

  namespace ns-prod, cluster tkc-prod (CAPI v1beta2, vm-operator v1alpha6)
  control plane (desired 3, present 3, KCP ready 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  zone-a  esx-a1.vsphere.local
    tkc-prod-7xk2p-9qtvw  198.18.0.12  zone-b  esx-b1.vsphere.local
    tkc-prod-7xk2p-bx2lk  198.18.0.13  zone-c  esx-c1.vsphere.local
  Machines: spec.failureDomain (CAPI api/core/v1beta2/machine_types.go); VMs: status.zone, the
  topology.kubernetes.io/zone label and status.nodeName (vm-operator update_status.go
  reconcileStatusZone, reconcileStatusNodeName).

Expected: 3 nodes, each with its zone and host (status -o wide, -o json)."#,
        settings: Some(V1ALPHA6),
        parts: vec![Part::of("v1alpha6")],
        edits: [
            place(CP1, "zone-a", "esx-a1.vsphere.local"),
            place(CP2, "zone-b", "esx-b1.vsphere.local"),
            place(CP3, "zone-c", "esx-c1.vsphere.local"),
        ]
        .concat(),
    }
}

fn vm_network_config_only() -> SetDef {
    SetDef {
        name: "vm-network-config-only",
        about: r#"vm-network-config-only — healthy-v1alpha3, but the third VM's guest reports nothing (VMware
Tools not running: a hung guest), so vm-operator keeps only the network provider's
status.network.config (vmware-tanzu/vm-operator pkg/providers/vsphere/vmlifecycle/update_status.go,
updateGuestNetworkStatus: "Config is the only field we need to preserve").

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p
  control plane (desired 3, present 3, KCP ready 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11
    tkc-prod-7xk2p-9qtvw  198.18.0.12
    tkc-prod-7xk2p-bx2lk  198.18.0.13 from status.network.config only (no primaryIP4, no
                          interfaces, VirtualMachineTools False VirtualMachineToolsNotRunning)
  The Machine keeps its status.addresses (CAPI copies them; nothing clears them).

Expected: 3 nodes, bx2lk at 198.18.0.13 with ipSource NetworkConfig, shown "(config)"."#,
        settings: Some(V1ALPHA3_REFUSED),
        parts: vec![Part::of("healthy-v1alpha3")],
        edits: vec![
            set(
                (VM, CP3),
                "/status/network",
                json!({"config": {"interfaces": [{"name": "eth0", "ip": {"addresses": ["198.18.0.13/24"]}}]}}),
            ),
            v1beta1(
                (VM, CP3),
                "/status/conditions",
                "VirtualMachineTools False VirtualMachineToolsNotRunning",
                "",
                "2025-06-03T08:10:00Z",
            ),
        ],
    }
}

/// CAPV's VM name for `{{ .machine.name }}-vm`.
const CP1_VM: &str = "tkc-prod-7xk2p-4rz8m-vm";
const CP2_VM: &str = "tkc-prod-7xk2p-9qtvw-vm";
const CP3_VM: &str = "tkc-prod-7xk2p-bx2lk-vm";

fn vm_naming_template() -> SetDef {
    let named = |cp: &'static str, vm: &'static str| {
        vec![
            // kubernetes-sigs/cluster-api-provider-vsphere api/supervisor/v1beta2
            // vspheremachine_types.go `VSphereMachineSpec.Naming` (`naming.template`), used by
            // pkg/services/vmoperator/vmopmachine.go GenerateVirtualMachineName.
            set(
                (VSM, cp),
                "/spec/naming",
                json!({"template": "{{ .machine.name }}-vm"}),
            ),
            set((VM, cp), "/metadata/name", json!(vm)),
            // The guest's host name, and so the Node's, is the VM's name.
            set((MACHINE, cp), "/status/nodeRef/name", json!(vm)),
        ]
    };
    SetDef {
        name: "vm-naming-template",
        about: r#"vm-naming-template — v1alpha6 with VSphereMachine.spec.naming.template
"{{ .machine.name }}-vm" (CAPV api/supervisor/v1beta2/vspheremachine_types.go, VirtualMachineNamingSpec;
pkg/services/vmoperator/vmopmachine.go GenerateVirtualMachineName): every VM's name differs from its
Machine's; the VM is still controller-owned by the VSphereMachine's uid.

  namespace ns-prod, cluster tkc-prod (CAPI v1beta2, vm-operator v1alpha6)
  control plane (desired 3, present 3, KCP ready 3):
    Machine tkc-prod-7xk2p-4rz8m  VM tkc-prod-7xk2p-4rz8m-vm  198.18.0.11
    Machine tkc-prod-7xk2p-9qtvw  VM tkc-prod-7xk2p-9qtvw-vm  198.18.0.12
    Machine tkc-prod-7xk2p-bx2lk  VM tkc-prod-7xk2p-bx2lk-vm  198.18.0.13
  each Machine's nodeRef names the VM (the guest's host name).

Expected: 3 nodes, each Machine joined to its -vm VM by uid."#,
        settings: Some(V1ALPHA6),
        parts: vec![Part::of("v1alpha6")],
        edits: [named(CP1, CP1_VM), named(CP2, CP2_VM), named(CP3, CP3_VM)].concat(),
    }
}

/// The file the MachineHealthChecks go in (between the KCP and the Machines).
const MHC_FILE: &str = "35-machinehealthchecks.yaml";

/// The MachineHealthChecks a ClusterClass-based TKG cluster carries (CAPI v1beta1, checked
/// against kubernetes-sigs/cluster-api api/core/v1beta1/machinehealthcheck_types.go): the
/// topology controller names the control plane's after the KCP and selects its Machines by the
/// control-plane label; the workers' after the MachineDeployment. `healthy` of 3 Machines.
fn health_checks(healthy: i64) -> Vec<Edit> {
    let owner = json!([{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "name": TKC,
        "uid": "f3678f9e-4c8e-5505-bc73-56b244530f60"}]);
    let status = |targets: Value, healthy: i64| {
        json!({"expectedMachines": 3, "currentHealthy": healthy, "remediationsAllowed": healthy,
            "observedGeneration": 1, "targets": targets,
            "conditions": [{"type": "RemediationAllowed", "status": "True",
                "lastTransitionTime": "2025-06-01T12:00:00Z"}]})
    };
    let unhealthy = json!([
        {"type": "Ready", "status": "Unknown", "timeout": "5m0s"},
        {"type": "Ready", "status": "False", "timeout": "5m0s"}
    ]);
    vec![
        Edit::Add(
            MHC_FILE,
            json!({
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
                "metadata": {"name": CP, "namespace": "ns-prod",
                    "uid": "5b0f9a51-8f1e-5c3a-9d0e-0c1b2d3e4f51",
                    "labels": {"cluster.x-k8s.io/cluster-name": TKC,
                        "topology.cluster.x-k8s.io/owned": ""},
                    "ownerReferences": owner},
                "spec": {"clusterName": TKC, "maxUnhealthy": "100%", "nodeStartupTimeout": "20m0s",
                    "selector": {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}},
                    "unhealthyConditions": unhealthy},
                "status": status(json!([CP1, CP2, CP3]), healthy)
            }),
        ),
        Edit::Add(
            MHC_FILE,
            json!({
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck",
                "metadata": {"name": "tkc-prod-node-pool-1-6kq2v", "namespace": "ns-prod",
                    "uid": "5b0f9a51-8f1e-5c3a-9d0e-0c1b2d3e4f52",
                    "labels": {"cluster.x-k8s.io/cluster-name": TKC,
                        "topology.cluster.x-k8s.io/owned": ""},
                    "ownerReferences": owner},
                "spec": {"clusterName": TKC, "maxUnhealthy": "100%", "nodeStartupTimeout": "20m0s",
                    "selector": {"matchLabels":
                        {"cluster.x-k8s.io/deployment-name": "tkc-prod-node-pool-1-6kq2v"}},
                    "unhealthyConditions": unhealthy},
                "status": status(json!(["tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-5dftw",
                    "tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-hq7mz"]), 2)
            }),
        ),
    ]
}

fn remediation_armed() -> SetDef {
    SetDef {
        name: "remediation-armed",
        about: r#"remediation-armed — quorum-lost with the MachineHealthChecks of a ClusterClass-based cluster
(35-machinehealthchecks.yaml), the Cluster not paused: the remediation guard's case.

  MachineHealthCheck tkc-prod-7xk2p            the control plane (selector cluster.x-k8s.io/control-plane),
                                               Ready Unknown/False for 5m0s, nodeStartupTimeout 20m0s,
                                               maxUnhealthy 100%; status: 3 expected, 0 healthy
  MachineHealthCheck tkc-prod-node-pool-1-6kq2v  the workers (cluster.x-k8s.io/deployment-name): not the
                                               control plane's, never named by the guard
  Cluster tkc-prod                             spec.paused unset

Expected: with a network verdict the guard is Armed, names tkc-prod-7xk2p and gives the pause
and unpause commands; everything else is quorum-lost's."#,
        settings: None,
        parts: vec![Part::of("quorum-lost")],
        edits: health_checks(0),
    }
}

fn remediation_paused() -> SetDef {
    let mut edits = health_checks(3);
    edits.push(set((CLUSTER, TKC), "/spec/paused", json!(true)));
    SetDef {
        name: "remediation-paused",
        about: r#"remediation-paused — healthy-v1alpha3 with remediation-armed's MachineHealthChecks and the
Cluster paused (spec.paused: true), as an admin leaves it after pausing it during a cut.

Expected: with a Healthy verdict the guard is Paused and the verdict reminds to unpause
(kubectl patch cluster tkc-prod -n ns-prod --type merge -p '{"spec":{"paused":false}}');
everything else is healthy-v1alpha3's."#,
        settings: None,
        parts: vec![Part::of("healthy-v1alpha3")],
        edits,
    }
}

fn hostile_escapes() -> SetDef {
    SetDef {
            name: "hostile-escapes",
            about: r#"hostile-escapes — healthy-v1alpha3 whose free-text fields carry terminal escape sequences, as a
namespace editor (or a broken controller) can write them into status fields the plugin shows:

  Cluster status.phase            OSC 0 (window title) ended by BEL, then CSI 2J (clear screen)
  KCP v1beta2 EtcdClusterHealthy  False; reason with a C1 CSI (U+009B) colour, message with SGR
                                  colours, a newline, a CR and an OSC 8 hyperlink ended by ST
  Machine tkc-prod-7xk2p-4rz8m    status.phase with blink + C1 CSI reverse video; nodeRef.name
                                  with CSI 2J; spec.failureDomain with a C1 OSC (U+009D)
  VM tkc-prod-7xk2p-4rz8m         spec.className with OSC 52 (write the clipboard) ended by BEL
  KCP v1beta2 Available           True; message with invisible characters: zero-width space,
                                  non-joiner, joiner, word joiner, BOM, soft hyphen, the bidi
                                  marks LRM, RLM, ALM, tag characters (U+E0000..U+E007F) and
                                  other format (Cf) characters

Expected: tables and stderr show every one as visible escapes (\x1b, \x07, \u{9b}, \n);
-o json/yaml keep the exact strings (escaped as JSON/YAML escape them). Findings: the etcd
condition and the Machine's phase. Everything else is healthy-v1alpha3's."#,
            settings: None,
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: vec![
                set((CLUSTER, TKC), "/status/phase", json!("Provisioned\u{1b}]0;pwned-title\u{7}\u{1b}[2J\u{1b}[H")),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "Available True Available", 2, "3\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{ad} of 3 \u{200e}\u{200f}\u{61c}ready\u{e0001}\u{e0041}\u{e007f}\u{e0000}\u{2062}\u{180e}\u{fff9}\u{1d173}", "2025-06-01T12:00:00Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "EtcdClusterHealthy False EtcdClusterUnhealthy\u{9b}1;31m", 2, "Etcd member \u{1b}[1;32mhealthy\u{1b}[0m\nsecond line\rover \u{1b}]8;;http://evil.example/\u{1b}\\click\u{1b}]8;;\u{1b}\\", "2025-06-01T12:00:00Z"),
                set((MACHINE, CP1), "/spec/failureDomain", json!("zone-a\u{9d}0;zone-title\u{9c}")),
                set((MACHINE, CP1), "/status/phase", json!("Running\u{1b}[5m\u{9b}7m")),
                set((MACHINE, CP1), "/status/nodeRef/name", json!("tkc-prod-7xk2p-4rz8m\u{1b}[2J")),
                set((VM, CP1), "/spec/className", json!("best-effort-medium\u{1b}]52;c;ZXZpbA==\u{7}")),
            ],
    }
}

fn hostile_identity() -> SetDef {
    SetDef {
            name: "hostile-identity",
            about: r#"hostile-identity — healthy-v1alpha3 plus what a namespace editor can write to take a node's place
(issue 19, identity by uid; objects in 70-forged.yaml):

  VM tkc-prod-7xk2p-0forged  198.18.0.66  names VSphereMachine tkc-prod-7xk2p-4rz8m as its controller
                                          with a forged uid (lists before the real VM)
  VM tkc-prod-7xk2p-9qtvw    127.0.0.1    the real cp2's VM reports loopback as status.network.primaryIP4
  Machine tkc-prod-7xk2p-x9rog            control-plane labels, controller ownerReference to the KCP's
                                          name with another uid; its own VSphereMachine and VM at 198.18.0.77

Expected: cp1 joined to its real VM (198.18.0.11) by uid; findings VirtualMachineOwnerMismatch (0forged),
VirtualMachineAddressRefused (9qtvw), MachineNotOwnedByKCP (x9rog); nothing is ever sent to
198.18.0.66, 127.0.0.1 or 198.18.0.77. Everything else is healthy-v1alpha3's."#,
            settings: Some(r#"vars:
  # A port where nothing listens (connection refused) when the test passes no WORKLOAD_URL.
  WORKLOAD_URL: http://127.0.0.1:1
groups:
  vmoperator.vmware.com:
    versions: [v1alpha1, v1alpha2, v1alpha3]
    preferredVersion: v1alpha3
resources:
  - {apiVersion: run.tanzu.vmware.com/v1alpha3, kind: TanzuKubernetesCluster}
  - {apiVersion: vmoperator.vmware.com/v1alpha3, kind: VirtualMachineClass}
  - {apiVersion: vmoperator.vmware.com/v1alpha3, kind: VirtualMachineService}
  - {apiVersion: bootstrap.cluster.x-k8s.io/v1beta1, kind: KubeadmConfig}
"#),
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: vec![
                set((VM, CP2), "/status/network/primaryIP4", json!("127.0.0.1")),
                set((SECRET, "tkc-prod-kubeconfig"), "/stringData/value", json!("apiVersion: v1\nkind: Config\nclusters:\n- name: tkc-prod\n  cluster:\n    server: {{WORKLOAD_URL}}\ncontexts:\n- name: tkc-prod-admin@tkc-prod\n  context:\n    cluster: tkc-prod\n    user: tkc-prod-admin\ncurrent-context: tkc-prod-admin@tkc-prod\nusers:\n- name: tkc-prod-admin\n  user:\n    token: FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT\n")),
            ],
    }
}

// The Machines' EtcdMemberHealthy is what KCP (CAPI up to 1.8) writes when each member's Status
// answers without a leader: controlplane/kubeadm/internal/workload_cluster_conditions.go, "Etcd
// member status reports errors: %s", severity Error, reason EtcdMemberUnhealthy.
fn quorum_lost() -> SetDef {
    SetDef {
            name: "quorum-lost",
            about: r#"quorum-lost — the support article's picture from the Supervisor side: every control-plane
Machine and VM present and Running/PoweredOn, but KCP counts 0 ready (etcd has no quorum,
kube-apiserver is down, so CAPI cannot reach the workload cluster).

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3, labels as healthy-v1alpha3.

  control plane (desired 3, present 3, KCP readyReplicas 0, unavailableReplicas 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running  PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running  PoweredOn
    tkc-prod-7xk2p-bx2lk  198.18.0.13  Running  PoweredOn
  KCP conditions: Ready/EtcdClusterHealthy/ControlPlaneComponentsHealthy False (EtcdClusterUnhealthy);
  v1beta2 EtcdClusterHealthy/ControlPlaneComponentsHealthy Unknown ConnectionDown
  "Last successful probe at 2025-06-03T08:13:52Z"; Cluster Ready False.
  Machine conditions: EtcdMemberHealthy False on each (EtcdMemberUnhealthy, severity Error,
  "Etcd member status reports errors: etcdserver: no leader"), EtcdPodHealthy True.
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.

Expected: nothing missing on the Supervisor side; pair with Workload::etcd_unhealthy() or
Workload::black_hole() and node probes to reach a network verdict."#,
            settings: Some(V1ALPHA3_REFUSED),
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: vec![
                v1beta1((CLUSTER, TKC), "/status/conditions", "Ready False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                v1beta1((CLUSTER, TKC), "/status/conditions", "ControlPlaneReady False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                set((KCP, CP), "/status/readyReplicas", json!(0)),
                set((KCP, CP), "/status/unavailableReplicas", json!(3)),
                set((KCP, CP), "/status/ready", json!(false)),
                v1beta1((KCP, CP), "/status/conditions", "Ready False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "ControlPlaneComponentsHealthy False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "EtcdClusterHealthy False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "Available False NotAvailable", 2, "* EtcdClusterHealthy: Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "ControlPlaneComponentsHealthy Unknown ConnectionDown", 2, "Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "EtcdClusterHealthy Unknown ConnectionDown", 2, "Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "MachinesReady False NotReady", 2, "* Machine tkc-prod-7xk2p-4rz8m: NodeHealthy: Last successful probe at 2025-06-03T08:13:52Z\n* Machine tkc-prod-7xk2p-9qtvw: NodeHealthy: Last successful probe at 2025-06-03T08:13:52Z\n* Machine tkc-prod-7xk2p-bx2lk: NodeHealthy: Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                set((KCP, CP), "/status/v1beta2/readyReplicas", json!(0)),
                set((KCP, CP), "/status/v1beta2/availableReplicas", json!(0)),
                v1beta1((MACHINE, CP1), "/status/conditions", "EtcdMemberHealthy False EtcdMemberUnhealthy Error", "Etcd member status reports errors: etcdserver: no leader", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "EtcdMemberHealthy False EtcdMemberUnhealthy Error", "Etcd member status reports errors: etcdserver: no leader", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP3), "/status/conditions", "EtcdMemberHealthy False EtcdMemberUnhealthy Error", "Etcd member status reports errors: etcdserver: no leader", "2025-06-03T08:14:07Z"),
            ],
    }
}

fn long_names() -> SetDef {
    SetDef {
        name: "long-names",
        about: r#"long-names — quorum-lost with a 45-character cluster name (the longest CAPI allows is 63):
the control-plane node names are 57 characters and differ only in their last 5, past the
63-character cut of a probe or jumpbox pod's name, so only a hash of the whole node name
keeps the three pods' names apart (src/route/mod.rs, pod_name).

  namespace ns-prod, cluster tkc-payments-eu-central-1-prod-blue-green-v02
  KubeadmControlPlane tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p
  control plane (desired 3, present 3, KCP readyReplicas 0), as quorum-lost:
    tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-4rz8m  198.18.0.11
    tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-9qtvw  198.18.0.12
    tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-bx2lk  198.18.0.13
  workers: tkc-payments-eu-central-1-prod-blue-green-v02-np-5b8c7-{5dftw,hq7mz} (names kept
  within 63 characters: the node pool is "np", its MachineSet "np-5b8c7")
  secrets: as quorum-lost, under the long name.

Made from quorum-lost with: sed -e 's/tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x/tkc-prod-np-5b8c7/g'
  -e 's/tkc-prod-node-pool-1-6kq2v/tkc-prod-np/g'
  -e 's/tkc-prod/tkc-payments-eu-central-1-prod-blue-green-v02/g'"#,
        settings: None,
        parts: vec![Part {
            from: "quorum-lost",
            rename: vec![
                ("tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x", "tkc-prod-np-5b8c7"),
                ("tkc-prod-node-pool-1-6kq2v", "tkc-prod-np"),
                ("tkc-prod", "tkc-payments-eu-central-1-prod-blue-green-v02"),
            ],
            ..Part::default()
        }],
        edits: vec![
            v1beta1(
                (
                    MACHINE,
                    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-4rz8m",
                ),
                "/status/conditions",
                "EtcdMemberHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (
                    MACHINE,
                    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-9qtvw",
                ),
                "/status/conditions",
                "EtcdMemberHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (
                    MACHINE,
                    "tkc-payments-eu-central-1-prod-blue-green-v02-7xk2p-bx2lk",
                ),
                "/status/conditions",
                "EtcdMemberHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
        ],
    }
}

fn missing_machine() -> SetDef {
    SetDef {
            name: "missing-machine",
            about: r#"missing-machine — a control-plane Machine (and its VM) is gone: desired 3, present 2.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3, labels as healthy-v1alpha3.

  control plane (spec.replicas 3; status.replicas 2, readyReplicas 0, unavailableReplicas 2):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running  PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running  PoweredOn
    (tkc-prod-7xk2p-bx2lk  absent: no Machine, no VSphereMachine, no VM)
  KCP conditions: Ready/EtcdClusterHealthy/ControlPlaneComponentsHealthy False (EtcdClusterUnhealthy,
  "Following Machines are reporting etcd member errors: ..."), Resized False ScalingUp
  "Scaling up control plane to 3 replicas (actual 2)"; v1beta2: EtcdClusterHealthy Unknown ConnectionDown.
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.

Expected: the plugin reports the missing control-plane Machine first (the article calls this
"a separate issue") rather than a network verdict."#,
            settings: Some(V1ALPHA3_REFUSED),
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: vec![
                remove((MACHINE, CP3)),
                remove((VSM, CP3)),
                remove((VM, CP3)),
                v1beta1((CLUSTER, TKC), "/status/conditions", "Ready False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((CLUSTER, TKC), "/status/conditions", "ControlPlaneReady False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                set((KCP, CP), "/status/replicas", json!(2)),
                set((KCP, CP), "/status/updatedReplicas", json!(2)),
                set((KCP, CP), "/status/readyReplicas", json!(0)),
                set((KCP, CP), "/status/unavailableReplicas", json!(2)),
                set((KCP, CP), "/status/ready", json!(false)),
                v1beta1((KCP, CP), "/status/conditions", "Ready False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "ControlPlaneComponentsHealthy False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "EtcdClusterHealthy False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "Resized False ScalingUp Warning", "Scaling up control plane to 3 replicas (actual 2)", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "Available False NotAvailable", 2, "* EtcdClusterHealthy: Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "ControlPlaneComponentsHealthy Unknown ConnectionDown", 2, "Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "EtcdClusterHealthy Unknown ConnectionDown", 2, "Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "MachinesReady False NotReady", 2, "* Machine tkc-prod-7xk2p-4rz8m: NodeHealthy: Last successful probe at 2025-06-03T08:13:52Z\n* Machine tkc-prod-7xk2p-9qtvw: NodeHealthy: Last successful probe at 2025-06-03T08:13:52Z", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "ScalingUp True ScalingUp", 2, "Scaling up from 2 to 3 replicas is blocked because:\n* waiting for etcd cluster to become healthy", "2025-06-01T12:00:00Z"),
                set((KCP, CP), "/status/v1beta2/readyReplicas", json!(0)),
                set((KCP, CP), "/status/v1beta2/availableReplicas", json!(0)),
                set((KCP, CP), "/status/v1beta2/upToDateReplicas", json!(2)),
            ],
    }
}

fn vm_no_ip() -> SetDef {
    SetDef {
            name: "vm-no-ip",
            about: r#"vm-no-ip — the third control-plane VM has no IP yet.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3.

  control plane (desired 3, present 3, KCP ready 2, unavailable 1):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running       PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running       PoweredOn
    tkc-prod-7xk2p-bx2lk  (no IP)      Provisioning  PoweredOn  <- odd one: VM has no status.network,
                                       Machine has no nodeRef, no addresses, no providerID
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.

Expected: 3 nodes listed, one without an IP (shown, not dropped)."#,
            settings: Some(V1ALPHA3_REFUSED),
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: [
                vec![
                    set((KCP, CP), "/status/readyReplicas", json!(2)),
                    set((KCP, CP), "/status/unavailableReplicas", json!(1)),
                    v1beta1((KCP, CP), "/status/conditions", "Ready False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                    v1beta1((KCP, CP), "/status/conditions", "ControlPlaneComponentsHealthy False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                    v1beta1((KCP, CP), "/status/conditions", "EtcdClusterHealthy False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                    v1beta1((KCP, CP), "/status/conditions", "MachinesReady False WaitingForInfrastructure Info", "", "2025-06-03T08:14:07Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "ControlPlaneComponentsHealthy False NotHealthy", 2, "* Machine tkc-prod-7xk2p-bx2lk:\n  * Control plane components: Waiting for a Node with spec.providerID vsphere://... to exist", "2025-06-03T08:14:07Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "EtcdClusterHealthy False NotHealthy", 2, "* Machine tkc-prod-7xk2p-bx2lk:\n  * EtcdMemberHealthy: Etcd doesn't have an etcd member for Node tkc-prod-7xk2p-bx2lk", "2025-06-03T08:14:07Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "MachinesReady False NotReady", 2, "* Machine tkc-prod-7xk2p-bx2lk: NodeHealthy: Waiting for a Node with spec.providerID to exist", "2025-06-03T08:14:07Z"),
                    set((KCP, CP), "/status/v1beta2/readyReplicas", json!(2)),
                    set((KCP, CP), "/status/v1beta2/availableReplicas", json!(2)),
                ],
                not_joined((MACHINE, CP3)),
                vec![
                    v1beta1((MACHINE, CP3), "/status/conditions", "Ready False WaitingForInfrastructure Info", "", "2025-06-03T08:14:07Z"),
                    v1beta1((MACHINE, CP3), "/status/conditions", "InfrastructureReady False WaitingForNetworkAddress Info", "", "2025-06-03T08:14:07Z"),
                    v1beta1((MACHINE, CP3), "/status/conditions", "NodeHealthy False NodeProvisioning Info", "", "2025-06-03T08:14:07Z"),
                    v1beta2((MACHINE, CP3), "/status/v1beta2/conditions", "Available False NotReady", 2, "", "2025-06-01T12:00:00Z"),
                    v1beta2((MACHINE, CP3), "/status/v1beta2/conditions", "Ready False NotReady", 2, "", "2025-06-01T12:00:00Z"),
                    unset((VSM, CP3), "/spec/providerID"),
                    set((VSM, CP3), "/status/ready", json!(false)),
                    set((VSM, CP3), "/status/vmstatus", json!("pending")),
                    unset((VSM, CP3), "/status/vmIp"),
                    unset((VSM, CP3), "/status/addresses"),
                    unset((VSM, CP3), "/status/vmID"),
                    drop_condition((VM, CP3), "/status/conditions", "VirtualMachineTools"),
                    v1beta1((VM, CP3), "/status/conditions", "GuestCustomization False Pending", "", "2025-06-01T12:20:00Z"),
                    unset((VM, CP3), "/status/network"),
                ],
            ]
            .concat(),
    }
}

fn vm_powered_off() -> SetDef {
    SetDef {
            name: "vm-powered-off",
            about: r#"vm-powered-off — the second control-plane VM is powered off.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3.

  control plane (desired 3, present 3, KCP ready 2, unavailable 1):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running  PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running  PoweredOff  <- odd one. As vm-operator does for a VM
                          without guest info, its status.network keeps only .config (the assigned
                          198.18.0.12/24): no primaryIP4. The Machine still lists 198.18.0.12 in
                          status.addresses and keeps its nodeRef (the Node is NotReady).
    tkc-prod-7xk2p-bx2lk  198.18.0.13  Running  PoweredOn
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.

Expected: one node reported powered off."#,
            settings: Some(V1ALPHA3_REFUSED),
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: vec![
                set((KCP, CP), "/status/readyReplicas", json!(2)),
                set((KCP, CP), "/status/unavailableReplicas", json!(1)),
                v1beta1((KCP, CP), "/status/conditions", "Ready False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "ControlPlaneComponentsHealthy False ControlPlaneComponentsUnhealthy Error", "Following Machines are reporting control plane errors: tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "EtcdClusterHealthy False EtcdClusterUnhealthy Error", "Following Machines are reporting etcd member errors: tkc-prod-7xk2p-9qtvw", "2025-06-03T08:14:07Z"),
                v1beta1((KCP, CP), "/status/conditions", "MachinesReady False NodeConditionsFailed Warning", "", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "ControlPlaneComponentsHealthy False NotHealthy", 2, "* Machine tkc-prod-7xk2p-9qtvw:\n  * Control plane components: Node tkc-prod-7xk2p-9qtvw is not ready", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "EtcdClusterHealthy False NotHealthy", 2, "* Machine tkc-prod-7xk2p-9qtvw:\n  * EtcdMemberHealthy: Failed to connect to etcd: context deadline exceeded", "2025-06-03T08:14:07Z"),
                v1beta2((KCP, CP), "/status/v1beta2/conditions", "MachinesReady False NotReady", 2, "* Machine tkc-prod-7xk2p-9qtvw: NodeHealthy: Node is not ready", "2025-06-03T08:14:07Z"),
                set((KCP, CP), "/status/v1beta2/readyReplicas", json!(2)),
                set((KCP, CP), "/status/v1beta2/availableReplicas", json!(2)),
                v1beta1((MACHINE, CP2), "/status/conditions", "Ready False NodeNotFound Warning", "", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "NodeHealthy False NodeConditionsFailed Warning", "", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "APIServerPodHealthy Unknown PodInspectionFailed Info", "Failed to get pod status", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "ControllerManagerPodHealthy Unknown PodInspectionFailed Info", "Failed to get pod status", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "EtcdMemberHealthy Unknown MemberInspectionFailed Info", "Failed to connect to the etcd pod on the tkc-prod-7xk2p-9qtvw node: could not establish a connection to any etcd node: unable to create etcd client: context deadline exceeded", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "EtcdPodHealthy Unknown PodInspectionFailed Info", "Failed to get pod status", "2025-06-03T08:14:07Z"),
                v1beta1((MACHINE, CP2), "/status/conditions", "SchedulerPodHealthy Unknown PodInspectionFailed Info", "Failed to get pod status", "2025-06-03T08:14:07Z"),
                v1beta2((MACHINE, CP2), "/status/v1beta2/conditions", "Available False NotReady", 2, "", "2025-06-01T12:00:00Z"),
                v1beta2((MACHINE, CP2), "/status/v1beta2/conditions", "Ready False NotReady", 2, "", "2025-06-01T12:00:00Z"),
                set((VSM, CP2), "/status/ready", json!(false)),
                set((VSM, CP2), "/status/vmstatus", json!("pending")),
                set((VM, CP2), "/status/powerState", json!("PoweredOff")),
                set((VM, CP2), "/status/network/config/interfaces/0/ip/gateway4", json!("198.18.0.1")),
                unset((VM, CP2), "/status/network/hostName"),
                unset((VM, CP2), "/status/network/interfaces"),
                unset((VM, CP2), "/status/network/primaryIP4"),
                drop_condition((VM, CP2), "/status/conditions", "GuestCustomization"),
                drop_condition((VM, CP2), "/status/conditions", "VirtualMachineTools"),
            ],
    }
}

// Mid-rollout (CAPI 1.9/1.10): KCP status.replicas 4 for spec.replicas 3, one up to date;
// ScalingDown, RollingOut True.
fn rollout_scale_up() -> SetDef {
    SetDef {
            name: "rollout-scale-up",
            about: r#"rollout-scale-up — a KCP rollout's scale-up: a 4th control-plane Machine still provisioning.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p (spec.replicas 3,
  status.replicas 4, updatedReplicas 1, readyReplicas 3): objects of healthy-v1alpha3 plus the 4th.
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3.

  control plane (desired 3, present 4, KCP ready 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running       PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running       PoweredOn
    tkc-prod-7xk2p-bx2lk  198.18.0.13  Running       PoweredOn
    tkc-prod-7xk2p-k8d5n  (no IP)      Provisioning  PoweredOff <- the new one: created 2025-06-03T08:30:00Z,
                                       no nodeRef, no providerID, VSphereMachine not ready, VM created
                                       (VirtualMachineCreated False) and not yet powered on
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.
  New VM class best-effort-large (VSphereMachineTemplate tkc-prod-7xk2p-infra-large): KCP rolls
  every Machine, one at a time (rolloutStrategy RollingUpdate, maxSurge 1: up to 4, then down to 3).

Expected: 4 nodes listed; k8d5n under "rollout in progress" (Provisioning, waiting for its VM to
power on), not a fault; the three others as healthy-v1alpha3. A lab plans the three with an IP."#,
            settings: None,
            parts: vec![Part::of("healthy-v1alpha3")],
            edits: [
                vec![
                    set((KCP, CP), "/spec/machineTemplate/infrastructureRef/name", json!("tkc-prod-7xk2p-infra-large")),
                    set((KCP, CP), "/status/replicas", json!(4)),
                    set((KCP, CP), "/status/updatedReplicas", json!(1)),
                    set((KCP, CP), "/status/unavailableReplicas", json!(1)),
                    v1beta1((KCP, CP), "/status/conditions", "Ready False RollingUpdateInProgress Warning", "Rolling 4 replicas with outdated spec (1 replicas up to date)", "2025-06-03T08:30:00Z"),
                    v1beta1((KCP, CP), "/status/conditions", "MachinesSpecUpToDate False RollingUpdateInProgress Warning", "Rolling 4 replicas with outdated spec (1 replicas up to date)", "2025-06-03T08:30:00Z"),
                    v1beta1((KCP, CP), "/status/conditions", "Resized False ScalingDown Warning", "Scaling down control plane to 3 replicas (actual 4)", "2025-06-03T08:30:00Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "MachinesUpToDate False NotUpToDate", 3, "* Machines tkc-prod-7xk2p-4rz8m, tkc-prod-7xk2p-9qtvw, tkc-prod-7xk2p-bx2lk:\n  * VSphereMachineTemplate is not up-to-date", "2025-06-03T08:30:00Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "RollingOut True RollingOut", 3, "Rolling out 3 not up-to-date replicas\n* VSphereMachineTemplate is not up-to-date", "2025-06-03T08:30:00Z"),
                    v1beta2((KCP, CP), "/status/v1beta2/conditions", "ScalingDown True ScalingDown", 3, "Scaling down from 4 to 3 replicas", "2025-06-03T08:30:00Z"),
                    set((KCP, CP), "/status/v1beta2/upToDateReplicas", json!(1)),
                    copy((MACHINE, CP3), "tkc-prod-7xk2p-k8d5n"),
                    set((MACHINE, CP4), "/metadata/creationTimestamp", json!("2025-06-03T08:30:00Z")),
                    set((MACHINE, CP4), "/metadata/uid", json!("b157c120-ab1a-50bd-b422-a72dc2c3d78c")),
                    set((MACHINE, CP4), "/spec/bootstrap/configRef/name", json!("tkc-prod-7xk2p-k8d5n")),
                    set((MACHINE, CP4), "/spec/bootstrap/configRef/uid", json!("521b39f8-761b-5add-9796-59357a5603c6")),
                    set((MACHINE, CP4), "/spec/bootstrap/dataSecretName", json!("tkc-prod-7xk2p-k8d5n")),
                    set((MACHINE, CP4), "/spec/infrastructureRef/name", json!("tkc-prod-7xk2p-k8d5n")),
                    set((MACHINE, CP4), "/spec/infrastructureRef/uid", json!("d4bee014-93de-5d50-a15f-92e8ca9ab111")),
                ],
                not_joined((MACHINE, CP4)),
                vec![
                    set((MACHINE, CP4), "/status/lastUpdated", json!("2025-06-03T08:31:12Z")),
                    v1beta1((MACHINE, CP4), "/status/conditions", "Ready False WaitingForInfrastructure Info", "", "2025-06-03T08:30:00Z"),
                    v1beta1((MACHINE, CP4), "/status/conditions", "BootstrapReady True", "", "2025-06-03T08:30:00Z"),
                    v1beta1((MACHINE, CP4), "/status/conditions", "InfrastructureReady False WaitingForInfrastructure Info", "", "2025-06-03T08:30:00Z"),
                    v1beta1((MACHINE, CP4), "/status/conditions", "NodeHealthy False WaitingForNodeRef Info", "", "2025-06-03T08:30:00Z"),
                    v1beta2((MACHINE, CP4), "/status/v1beta2/conditions", "Available False NotReady", 2, "", "2025-06-03T08:30:00Z"),
                    v1beta2((MACHINE, CP4), "/status/v1beta2/conditions", "Ready False NotReady", 2, "* NodeHealthy: Waiting for a Node with spec.providerID vsphere://... to exist", "2025-06-03T08:30:00Z"),
                    copy((VSM, CP3), "tkc-prod-7xk2p-k8d5n"),
                    set((VSM, CP4), "/metadata/uid", json!("d4bee014-93de-5d50-a15f-92e8ca9ab111")),
                    set((VSM, CP4), "/metadata/ownerReferences/0/name", json!("tkc-prod-7xk2p-k8d5n")),
                    set((VSM, CP4), "/metadata/ownerReferences/0/uid", json!("b157c120-ab1a-50bd-b422-a72dc2c3d78c")),
                    set((VSM, CP4), "/spec/className", json!("best-effort-large")),
                    unset((VSM, CP4), "/spec/providerID"),
                    set((VSM, CP4), "/status/ready", json!(false)),
                    set((VSM, CP4), "/status/vmstatus", json!("pending")),
                    unset((VSM, CP4), "/status/vmIp"),
                    unset((VSM, CP4), "/status/addresses"),
                    unset((VSM, CP4), "/status/vmID"),
                    copy((VM, CP3), "tkc-prod-7xk2p-k8d5n"),
                    set((VM, CP4), "/metadata/creationTimestamp", json!("2025-06-03T08:30:40Z")),
                    set((VM, CP4), "/metadata/uid", json!("909f9bd2-c12d-5e1b-9745-f1e98b59e0e8")),
                    set((VM, CP4), "/metadata/ownerReferences/0/name", json!("tkc-prod-7xk2p-k8d5n")),
                    set((VM, CP4), "/metadata/ownerReferences/0/uid", json!("d4bee014-93de-5d50-a15f-92e8ca9ab111")),
                    set((VM, CP4), "/spec/className", json!("best-effort-large")),
                    set((VM, CP4), "/spec/bootstrap/cloudInit/rawCloudConfig/name", json!("tkc-prod-7xk2p-k8d5n-cloud-init")),
                    set((VM, CP4), "/status/powerState", json!("PoweredOff")),
                    set((VM, CP4), "/status/uniqueID", json!("vm-9301")),
                    drop_condition((VM, CP4), "/status/conditions", "VirtualMachineStorageReady"),
                    drop_condition((VM, CP4), "/status/conditions", "VirtualMachineBootstrapReady"),
                    drop_condition((VM, CP4), "/status/conditions", "VirtualMachineNetworkReady"),
                    drop_condition((VM, CP4), "/status/conditions", "GuestCustomization"),
                    drop_condition((VM, CP4), "/status/conditions", "VirtualMachineTools"),
                    v1beta1((VM, CP4), "/status/conditions", "VirtualMachineClassReady True True", "", "2025-06-03T08:30:40Z"),
                    v1beta1((VM, CP4), "/status/conditions", "VirtualMachineImageReady True True", "", "2025-06-03T08:30:40Z"),
                    v1beta1((VM, CP4), "/status/conditions", "VirtualMachineCreated False NotCreated", "", "2025-06-03T08:30:40Z"),
                    set((VM, CP4), "/status/class/name", json!("best-effort-large")),
                    unset((VM, CP4), "/status/host"),
                    unset((VM, CP4), "/status/biosUUID"),
                    unset((VM, CP4), "/status/instanceUUID"),
                    unset((VM, CP4), "/status/network"),
                ],
            ]
            .concat(),
    }
}

fn rollout_scale_up_joining() -> SetDef {
    SetDef {
        name: "rollout-scale-up-joining",
        about: r#"rollout-scale-up-joining — a KCP rollout's scale-up: the 4th VM is up, its Node has not joined.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p (spec.replicas 3,
  status.replicas 4, updatedReplicas 1, readyReplicas 3): objects of healthy-v1alpha3 plus the 4th.
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3.

  control plane (desired 3, present 4, KCP ready 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Running      PoweredOn
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running      PoweredOn
    tkc-prod-7xk2p-bx2lk  198.18.0.13  Running      PoweredOn
    tkc-prod-7xk2p-k8d5n  198.18.0.14  Provisioned  PoweredOn  <- the new one: created 2025-06-03T08:30:00Z,
                                      infrastructure ready, providerID and address set, no nodeRef
                                      (kubeadm join still running: its etcd member may be joining)
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.
  New VM class best-effort-large (VSphereMachineTemplate tkc-prod-7xk2p-infra-large): KCP rolls
  every Machine, one at a time (rolloutStrategy RollingUpdate, maxSurge 1: up to 4, then down to 3).

Expected: 4 nodes listed; k8d5n under "rollout in progress" (Provisioning, Machine phase
Provisioned, waiting for its Node to join). A lab plans 4 nodes, .11-.14 (k8d5n by its Machine name)."#,
        settings: None,
        parts: vec![Part::of("rollout-scale-up")],
        edits: vec![
            set(
                (MACHINE, CP4),
                "/spec/providerID",
                json!("vsphere://334e6a23-1fda-5375-ac42-2fc64e187993"),
            ),
            set((MACHINE, CP4), "/status/infrastructureReady", json!(true)),
            set((MACHINE, CP4), "/status/phase", json!("Provisioned")),
            set(
                (MACHINE, CP4),
                "/status/addresses",
                json!([{"type": "InternalIP", "address": "198.18.0.14"}]),
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "Ready False WaitingForNodeRef Info",
                "",
                "2025-06-03T08:30:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "InfrastructureReady True",
                "",
                "2025-06-03T08:30:00Z",
            ),
            set(
                (VSM, CP4),
                "/spec/providerID",
                json!("vsphere://334e6a23-1fda-5375-ac42-2fc64e187993"),
            ),
            set((VSM, CP4), "/status/ready", json!(true)),
            set((VSM, CP4), "/status/vmstatus", json!("ready")),
            set((VSM, CP4), "/status/vmIp", json!("198.18.0.14")),
            set(
                (VSM, CP4),
                "/status/addresses",
                json!([{"type": "InternalIP", "address": "198.18.0.14"}]),
            ),
            set(
                (VSM, CP4),
                "/status/vmID",
                json!("334e6a23-1fda-5375-ac42-2fc64e187993"),
            ),
            set((VM, CP4), "/status/host", json!("esx-01.vsphere.local")),
            set((VM, CP4), "/status/powerState", json!("PoweredOn")),
            set(
                (VM, CP4),
                "/status/biosUUID",
                json!("334e6a23-1fda-5375-ac42-2fc64e187993"),
            ),
            set(
                (VM, CP4),
                "/status/instanceUUID",
                json!("2c46e9f3-007a-5558-a546-d4c4d011e5b9"),
            ),
            set(
                (VM, CP4),
                "/status/network",
                json!({"config": {"interfaces": [{"name": "eth0", "ip": {"addresses": ["198.18.0.14/24"]}}]}, "hostName": "tkc-prod-7xk2p-k8d5n", "interfaces": [{"name": "eth0", "deviceKey": 4000, "ip": {"macAddr": "00:50:56:a1:14:2e", "addresses": [{"address": "198.18.0.14/24", "origin": "dhcp", "state": "preferred"}, {"address": "fe80::250:56ff:fea1:142e/64", "origin": "other", "state": "preferred"}]}}], "primaryIP4": "198.18.0.14"}),
            ),
            set(
                (VM, CP4),
                "/status/conditions",
                json!([{"type": "VirtualMachineClassReady", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineImageReady", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineStorageReady", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineBootstrapReady", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineNetworkReady", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineCreated", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "GuestCustomization", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}, {"type": "VirtualMachineTools", "status": "True", "reason": "True", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z"}]),
            ),
        ],
    }
}

// KCP status.replicas 4: the deleting Machine is still counted.
fn rollout_scale_down() -> SetDef {
    SetDef {
        name: "rollout-scale-down",
        about: r#"rollout-scale-down — a KCP rollout's scale-down: the oldest Machine is being deleted.

  namespace ns-prod, cluster tkc-prod, KubeadmControlPlane tkc-prod-7xk2p (spec.replicas 3,
  status.replicas 4, updatedReplicas 1, readyReplicas 3): objects of healthy-v1alpha3 plus the 4th.
  CAPI v1beta1 (with status.v1beta2 block), vm-operator v1alpha3.

  control plane (desired 3, present 4, KCP ready 3):
    tkc-prod-7xk2p-4rz8m  198.18.0.11  Deleting  PoweredOn  <- deletionTimestamp 2025-06-03T09:02:00Z,
                                       finalizer machine.cluster.x-k8s.io, KCP's pre-terminate hook
                                       (kcp-cleanup: KCP removes the etcd member before the VM goes,
                                       CAPI 1.8.2+); still listed, as a real API server lists it,
                                       nodeRef and VM still there
    tkc-prod-7xk2p-9qtvw  198.18.0.12  Running   PoweredOn
    tkc-prod-7xk2p-bx2lk  198.18.0.13  Running   PoweredOn
    tkc-prod-7xk2p-k8d5n  198.18.0.14  Running   PoweredOn  <- the new one (created 2025-06-03T08:30:00Z), joined
  workers: tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  secrets: as healthy-v1alpha3.
  New VM class best-effort-large (VSphereMachineTemplate tkc-prod-7xk2p-infra-large): KCP rolls
  every Machine, one at a time (rolloutStrategy RollingUpdate, maxSurge 1: up to 4, then down to 3).

Expected: 4 nodes listed; 4rz8m under "rollout in progress" (Deleting since 2025-06-03T09:02:00Z),
not a fault, and not counted against the KCP's 3. A lab plans 4 nodes, .11-.14."#,
        settings: None,
        parts: vec![Part::of("rollout-scale-up-joining")],
        edits: vec![
            set(
                (MACHINE, CP1),
                "/metadata/deletionTimestamp",
                json!("2025-06-03T09:02:00Z"),
            ),
            set(
                (MACHINE, CP1),
                "/metadata/deletionGracePeriodSeconds",
                json!(0),
            ),
            set(
                (MACHINE, CP1),
                "/metadata/finalizers",
                json!(["machine.cluster.x-k8s.io"]),
            ),
            set(
                (MACHINE, CP1),
                "/metadata/annotations",
                json!({"pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup": ""}),
            ),
            set((MACHINE, CP1), "/status/phase", json!("Deleting")),
            set(
                (MACHINE, CP1),
                "/status/lastUpdated",
                json!("2025-06-03T09:02:00Z"),
            ),
            set((MACHINE, CP4), "/status/phase", json!("Running")),
            set(
                (MACHINE, CP4),
                "/status/lastUpdated",
                json!("2025-06-01T12:00:00Z"),
            ),
            set(
                (MACHINE, CP4),
                "/status/nodeRef",
                json!({"apiVersion": "v1", "kind": "Node", "name": "tkc-prod-7xk2p-k8d5n", "uid": "79e7030d-c7ab-5e68-bfd2-543d4f5e9f2d"}),
            ),
            set(
                (MACHINE, CP4),
                "/status/nodeInfo",
                json!({"architecture": "amd64", "bootID": "fcc9a48d-0128-52e1-9daa-2040453aaa51", "containerRuntimeVersion": "containerd://1.6.28+vmware.2", "kernelVersion": "5.10.216-1.ph4", "kubeProxyVersion": "v1.30.1+vmware.1-fips", "kubeletVersion": "v1.30.1+vmware.1-fips", "machineID": "e76bed2a258458f581420ccccc4cbb6c", "operatingSystem": "linux", "osImage": "VMware Photon OS/Linux", "systemUUID": "334e6a23-1fda-5375-ac42-2fc64e187993"}),
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "Ready True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "BootstrapReady True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "InfrastructureReady True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "NodeHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "APIServerPodHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "ControllerManagerPodHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "EtcdMemberHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "EtcdPodHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta1(
                (MACHINE, CP4),
                "/status/conditions",
                "SchedulerPodHealthy True",
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta2(
                (MACHINE, CP4),
                "/status/v1beta2/conditions",
                "Available True Available",
                2,
                "",
                "2025-06-01T12:00:00Z",
            ),
            v1beta2(
                (MACHINE, CP4),
                "/status/v1beta2/conditions",
                "Ready True Ready",
                2,
                "",
                "2025-06-01T12:00:00Z",
            ),
        ],
    }
}

fn two_clusters() -> SetDef {
    SetDef {
        name: "two-clusters",
        about: r#"two-clusters — one vSphere Namespace, two TKG clusters, plus VM Service VMs whose names
share a prefix with a cluster.

  namespace ns-shared
  cluster tkc-a, KCP tkc-a-m2c8r (desired 3, ready 3):
    tkc-a-m2c8r-4rz8m  198.18.0.11 | tkc-a-m2c8r-9qtvw  198.18.0.12 | tkc-a-m2c8r-bx2lk  198.18.0.13
    workers tkc-a-node-pool-1-6kq2v-5b8c7d9f4x-{5dftw,hq7mz}  198.18.0.21-22
  cluster tkc-b, KCP tkc-b-j5t9w (desired 3, ready 3):
    tkc-b-j5t9w-4rz8m  198.18.1.11 | tkc-b-j5t9w-9qtvw  198.18.1.12 | tkc-b-j5t9w-bx2lk  198.18.1.13
    worker  tkc-b-node-pool-1-r8n4d-6f9d8c7b5z-5dftw  198.18.1.21
  standalone VMs (no cluster, no capv/capw labels): tkc-a-jumpbox 198.18.2.50, tkc-ab-db-0 198.18.2.51
  secrets: tkc-a-{kubeconfig,ssh,ssh-password,ca,etcd}, tkc-b-{...}; both kubeconfigs point at {{WORKLOAD_URL}}.

Expected: tkc-a and tkc-b each have exactly their 3 control-plane nodes, with disjoint IPs;
neither standalone VM is ever a node; an unknown cluster name lists "tkc-a, tkc-b"."#,
        settings: Some(
            r#"vars:
  WORKLOAD_URL: https://127.0.0.1:1
groups:
  vmoperator.vmware.com:
    versions: [v1alpha1, v1alpha2, v1alpha3]
    preferredVersion: v1alpha3
"#,
        ),
        parts: vec![
            Part {
                from: "healthy-v1alpha3",
                rename: vec![
                    ("tkc-prod-7xk2p", "tkc-a-m2c8r"),
                    ("tkc-prod", "tkc-a"),
                    ("TKC-PROD", "TKC-A"),
                    ("ns-prod", "ns-shared"),
                ],
                uids: Some("tkc-a"),
                suffix: Some("tkc-a"),
            },
            Part {
                from: "healthy-v1alpha3",
                rename: vec![
                    (
                        "tkc-prod-node-pool-1-6kq2v-5b8c7d9f4x",
                        "tkc-b-node-pool-1-r8n4d-6f9d8c7b5z",
                    ),
                    ("tkc-prod-node-pool-1-6kq2v", "tkc-b-node-pool-1-r8n4d"),
                    ("tkc-prod-7xk2p", "tkc-b-j5t9w"),
                    ("tkc-prod-x7p2n", "tkc-b-q4z8k"),
                    ("tkc-prod", "tkc-b"),
                    ("TKC-PROD", "TKC-B"),
                    ("ns-prod", "ns-shared"),
                    ("198.18.0.", "198.18.1."),
                ],
                uids: Some("tkc-b"),
                suffix: Some("tkc-b"),
            },
        ],
        edits: vec![
            remove((MACHINE, "tkc-b-node-pool-1-r8n4d-6f9d8c7b5z-hq7mz")),
            remove((VSM, "tkc-b-node-pool-1-r8n4d-6f9d8c7b5z-hq7mz")),
            remove((VM, "tkc-b-node-pool-1-r8n4d-6f9d8c7b5z-hq7mz")),
            set(
                (MACHINE, "tkc-b-node-pool-1-r8n4d-6f9d8c7b5z-5dftw"),
                "/metadata/labels/machine-template-hash",
                json!("6f9d8c7b5z"),
            ),
            set((MD, "tkc-b-node-pool-1-r8n4d"), "/spec/replicas", json!(1)),
            set(
                (MD, "tkc-b-node-pool-1-r8n4d"),
                "/status/replicas",
                json!(1),
            ),
            set(
                (MD, "tkc-b-node-pool-1-r8n4d"),
                "/status/readyReplicas",
                json!(1),
            ),
            set(
                (MD, "tkc-b-node-pool-1-r8n4d"),
                "/status/availableReplicas",
                json!(1),
            ),
            set(
                (MD, "tkc-b-node-pool-1-r8n4d"),
                "/status/updatedReplicas",
                json!(1),
            ),
        ],
    }
}
