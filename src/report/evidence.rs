//! What a verdict is made from, as a value: the Supervisor's objects as they were read, the
//! workload API check, the route, and what every node's probe said. A live `diagnose` and an
//! offline `analyse` of an evidence bundle both make their report with [`Evidence::judge`], so
//! the two cannot disagree, and a newer plugin re-judges an old bundle with its own rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{is_zero, DiagnoseReport, RouteInfo};
use crate::analyse;
use crate::error::Result;
use crate::probe::NodeReport;
use crate::supervisor::{Inventory, SupervisorApis};
use crate::workload::WorkloadApi;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Evidence {
    pub context: String,
    pub namespace: String,
    pub cluster: String,
    /// What discovery said (which versions; how a `controlPlaneRef` resolves).
    pub apis: SupervisorApis,
    /// The cluster's objects as read ([`Inventory::objects_of`]): no Secret, no managedFields.
    pub objects: Vec<Value>,
    pub workload_api: WorkloadApi,
    pub route: RouteInfo,
    /// Every control-plane node's probe (or why it could not be probed).
    pub nodes: Vec<NodeReport>,
    pub duration_ms: u64,
    /// The log window the verdict counted (`--since`), in seconds: `analyse` re-judges with the
    /// same unless told otherwise. Bundles from before it had none: the default then.
    #[serde(default = "default_since_s")]
    pub since_s: u64,
    /// What the read left out, and when it was.
    #[serde(flatten)]
    pub notes: ReadNotes,
    /// How many of `objects`, first, the verdict uses ([`Inventory::objects_ranked`]); the rest
    /// only add to what the report counts. An evidence bundle keeps those first, every one
    /// within its cap; a bundle read back counts them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub essential_objects: usize,
    /// The objects a bundle had to leave out (`Kind namespace/name`, bounded, with a count of
    /// the rest): a verdict judged from it may differ from the live one. Empty for a live run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// What NSX Manager answered (`--nsx-manager`), as it answered it: the DFW, the VMs'
    /// ports, the traceflows. Never a credential (the reader keeps none). Absent without the
    /// flag, so a bundle without it reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_manager: Option<crate::nsxmanager::raw::NsxRead>,
    /// The report's note about NSX Manager's reading (its certificate not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsx_note: Option<String>,
}

/// What the run could not read of the cluster, and when it read the rest: what a re-judged
/// bundle needs to join as the live run did. One type for the evidence and for the bundle
/// manifest's `clusters[]`, flattened into each (so the two cannot name a field apart).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadNotes {
    /// What could not be read of the cluster's network (one note per failed request; see
    /// `supervisor::network`). Not in the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_unread: Vec<String>,
    /// Why the MachineHealthChecks could not be read (the remediation guard's note). Not in
    /// the JSON when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation_unread: Option<String>,
    /// The kinds the walk can do without that the Supervisor refused to list (403): the
    /// permissions missing, so a re-judged bundle joins as the live run did (without
    /// VSphereMachines: by the Machines' references and names). Not in the JSON when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden: Vec<crate::supervisor::MissingPermission>,
    /// When the run read the Supervisor's objects (`diagnose`: as its diagnosis of the cluster
    /// starts, right after the read), RFC 3339 UTC, by the plugin's own clock: "now" for the
    /// ages of the Supervisor's conditions (never a node's clock, which the node writes). A
    /// bundle keeps it (`clusters[].readAt`; older bundles: absent, the manifest's `created`
    /// then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
}

fn default_since_s() -> u64 {
    analyse::verdict::DEFAULT_SINCE.as_secs()
}

impl Evidence {
    /// The cluster's slice of `inventory`, with what the run found.
    pub fn new(
        context: &str,
        cluster: &str,
        inventory: &Inventory,
        workload_api: WorkloadApi,
        route: RouteInfo,
        nodes: Vec<NodeReport>,
        duration_ms: u64,
    ) -> Evidence {
        let (objects, essential_objects) = inventory.objects_ranked(cluster);
        Evidence {
            context: context.to_string(),
            namespace: inventory.namespace.clone(),
            cluster: cluster.to_string(),
            apis: inventory.apis.clone(),
            objects,
            essential_objects,
            workload_api,
            route,
            nodes,
            duration_ms,
            since_s: default_since_s(),
            notes: ReadNotes {
                network_unread: inventory
                    .network_of(cluster)
                    .map(|n| n.unread)
                    .unwrap_or_default(),
                remediation_unread: inventory.remediation_note(),
                forbidden: inventory.forbidden.clone(),
                read_at: Some(
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
                ),
            },
            left_out: Vec::new(),
            nsx_manager: None,
            nsx_note: None,
        }
    }

    /// What NSX Manager answered for this cluster, and the note to report with it.
    pub fn with_nsx_manager(
        mut self,
        nsx: Option<(crate::nsxmanager::raw::NsxRead, Option<String>)>,
    ) -> Evidence {
        if let Some((read, note)) = nsx {
            self.nsx_manager = Some(read);
            self.nsx_note = note;
        }
        self
    }

    /// The log window the verdict counts (`--since`).
    pub fn with_since(mut self, since: std::time::Duration) -> Evidence {
        self.since_s = since.as_secs();
        self
    }

    /// When the Supervisor's objects were read (the plugin's clock), for the conditions' ages:
    /// closer to what they say than the end of the run, which [`Evidence::new`] takes.
    pub fn with_read_at(mut self, at: std::time::SystemTime) -> Evidence {
        self.notes.read_at = Some(humantime::format_rfc3339_seconds(at).to_string());
        self
    }

    /// The facts again from the objects, the findings, the matrices and the verdict; every
    /// command the report prints starts with `kubectl` (the run's context and kubeconfig).
    pub fn judge(&self, kubectl: &crate::command::Kubectl) -> Result<DiagnoseReport> {
        let inventory = Inventory::from_objects(&self.namespace, self.apis.clone(), &self.objects)
            .with_network_notes(&self.notes.network_unread)
            .with_remediation_note(self.notes.remediation_unread.as_deref())
            .with_forbidden(&self.notes.forbidden);
        let mut facts = inventory.facts(&self.context, &self.cluster)?;
        facts.kubectl = kubectl.clone();
        let since = std::time::Duration::from_secs(self.since_s);
        let read_at = self
            .notes
            .read_at
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok());
        let mut diagnosis = analyse::verdict::diagnose_at(
            &facts,
            &self.nodes,
            since,
            read_at,
            Some(&self.workload_api),
        );
        let findings = analyse::status_findings(&facts, &self.workload_api);
        let network = self.network(&inventory);
        if let Some(a) = &network {
            analyse::network::join(&mut diagnosis, &facts, a);
        }
        // After the Supervisor's: NSX Manager's lines go first (a rule there is the cause).
        let manager = self.nsx_manager.as_ref().map(|read| {
            let vms = crate::nsxmanager::identify::supervisor_vms(
                &facts,
                &inventory.verified_vms(&self.cluster),
            );
            (read, analyse::manager::assess(read, &vms))
        });
        if let Some((_, m)) = &manager {
            analyse::manager::join(&mut diagnosis, m);
        }
        Ok(DiagnoseReport::new(
            facts,
            self.workload_api.clone(),
            findings,
            self.route.clone(),
            self.nodes.clone(),
            diagnosis,
            self.duration_ms,
        )
        .with_network(network, kubectl)
        .with_nsx_manager(manager.map(|(read, m)| {
            super::v1alpha2::NsxManager::new(
                read,
                &m.input,
                &m.evaluation,
                &m.traceflows,
                self.nsx_note.clone(),
            )
            .with_enforcement(&m.enforcement)
        })))
    }

    /// The cluster's network assessed, when the Supervisor serves an NSX group (the objects
    /// kept, with the notes of what could not be read: [`Inventory::with_network_notes`]).
    fn network(&self, inventory: &Inventory) -> Option<analyse::NetworkAssessment> {
        Some(analyse::assess(&inventory.network_of(&self.cluster)?))
    }
}

/// A run for the tests: through the jumpbox because the workload API did not answer, in a
/// second, every object used, nothing left unread or out, no time of the read.
#[cfg(test)]
impl Evidence {
    pub(crate) fn by_jumpbox(
        namespace: &str,
        cluster: &str,
        objects: Vec<Value>,
        nodes: Vec<NodeReport>,
    ) -> Evidence {
        Evidence {
            context: "supervisor".into(),
            namespace: namespace.into(),
            cluster: cluster.into(),
            apis: crate::testing::supervisor_apis(),
            essential_objects: objects.len(),
            objects,
            workload_api: serde_json::from_value(serde_json::json!({
                "state": "Timeout", "server": "https://198.18.0.10:6443", "path": null,
                "httpStatus": null, "elapsedMs": 1000, "detail": "no answer within 1s"
            }))
            .unwrap(),
            route: RouteInfo {
                name: "jumpbox".into(),
                reason: "auto: the workload API does not answer".into(),
            },
            nodes,
            duration_ms: 1,
            since_s: 900,
            notes: ReadNotes::default(),
            left_out: vec![],
            nsx_manager: None,
            nsx_note: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::NodeReport;

    const CP: [&str; 3] = [
        "tkc-prod-7xk2p-4rz8m",
        "tkc-prod-7xk2p-9qtvw",
        "tkc-prod-7xk2p-bx2lk",
    ];

    /// The article's cluster (fixture set `quorum-lost`: each Machine's EtcdMemberHealthy False
    /// since 2025-06-03T08:14:07Z), every node probed healthy, each node's clock `clocks[i]`.
    fn evidence(clocks: [i64; 3], read_at: Option<&str>) -> Evidence {
        let all = crate::testing::fixture_objects("quorum-lost");
        let objects = Inventory::from_objects("ns-prod", crate::testing::supervisor_apis(), &all)
            .objects_of("tkc-prod");
        let healthy = include_str!("../../tests/fixtures/probe-output/healthy-node.json");
        let nodes = (0..3)
            .map(|i| {
                let ip = format!("198.18.0.1{}", i + 1);
                let doc = healthy
                    .replace(
                        "\"nodeIp\":\"198.18.0.11\"",
                        &format!("\"nodeIp\":\"{ip}\""),
                    )
                    .replace("\"ips\":[\"198.18.0.11\"]", &format!("\"ips\":[\"{ip}\"]"));
                let mut p = crate::probe::parse::parse(CP[i], doc.as_bytes()).unwrap();
                p.clock_ms = Some(clocks[i]);
                NodeReport {
                    name: CP[i].into(),
                    ip: Some(ip.parse().unwrap()),
                    outcome: Ok(p),
                    reach_from: None,
                    reach: vec![],
                    host_key: None,
                }
            })
            .collect();
        let mut e = Evidence::by_jumpbox("ns-prod", "tkc-prod", objects, nodes);
        e.notes.read_at = read_at.map(str::to_string);
        e
    }

    /// The ages of the Machines' conditions in the verdict's evidence.
    fn ages(e: &Evidence) -> Vec<String> {
        let r = e.judge(&Default::default()).unwrap();
        let lines: Vec<String> = r
            .verdict
            .evidence
            .iter()
            .filter(|l| l.contains("Machine condition EtcdMemberHealthy"))
            .map(|l| {
                let end = l.find(" ago)").map_or(0, |i| i + " ago)".len());
                let start = l[..end].rfind(" (").unwrap_or(0);
                l[start..end].to_string()
            })
            .collect();
        assert!(!lines.is_empty(), "{:#?}", r.verdict);
        lines
    }

    /// Neither log tail's text reaches the report (the schema says "empty in reports"): the
    /// running container's was cleared, the attempt before it was printed whole in `-o json`.
    #[test]
    fn no_log_text_in_the_report() {
        let mut e = evidence([0; 3], None);
        for n in &mut e.nodes {
            let p = n.outcome.as_mut().unwrap();
            for l in [&mut p.etcd.logs, &mut p.etcd.previous_logs] {
                *l = Some(crate::probe::output::LogSample {
                    container_id: "c0ffee".into(),
                    text: "raft.node: lost leader 8e9e05c52164694d".into(),
                    lines: 1,
                    truncated: false,
                });
            }
        }
        let json = serde_json::to_string(&e.judge(&Default::default()).unwrap()).unwrap();
        assert!(!json.contains("lost leader"), "{json}");
        assert!(
            json.contains("c0ffee"),
            "the samples are kept, without their text"
        );
    }

    /// `judge` measures the conditions' ages against the time of the run, not the nodes'
    /// clocks (here all three read 2040): 4 minutes after 08:14:07 is "4m ago". Without it, the
    /// median of the nodes' clocks, which one node alone cannot move.
    #[test]
    fn conditions_age_against_the_time_of_the_run() {
        let later = 2_222_222_222_000; // 2040-06-02
        let e = evidence([later; 3], Some("2025-06-03T08:18:07Z"));
        assert!(
            ages(&e)
                .iter()
                .all(|a| a == " (since 2025-06-03T08:14:07Z, 4m ago)"),
            "{:?}",
            ages(&e)
        );

        let at = humantime::parse_rfc3339("2025-06-03T08:19:07Z").unwrap();
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        for lie in [later, 0, i64::MIN, i64::MAX] {
            let e = evidence([ms, ms + 1_000, lie], None);
            assert!(
                ages(&e).iter().all(|a| a.ends_with(", 5m ago)")),
                "{lie}: {:?}",
                ages(&e)
            );
        }
    }
}
