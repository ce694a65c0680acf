//! What a verdict is made from, as a value: the Supervisor's objects as they were read, the
//! workload API check, the route, and what every node's probe said. A live `diagnose` and an
//! offline `analyse` of an evidence bundle both make their report with [`Evidence::judge`], so
//! the two cannot disagree, and a newer plugin re-judges an old bundle with its own rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DiagnoseReport, RouteInfo};
use crate::analyse;
use crate::error::Result;
use crate::probe::NodeReport;
use crate::supervisor::{Inventory, SupervisorApis};
use crate::workload::WorkloadApi;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
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
    /// What could not be read of the cluster's network (one note per failed request; see
    /// `supervisor::network`). Not in the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_unread: Vec<String>,
    /// How many of `objects`, first, the verdict uses ([`Inventory::objects_ranked`]); the rest
    /// only add to what the report counts. An evidence bundle keeps those first, every one
    /// within its cap; a bundle read back counts them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub essential_objects: usize,
    /// The objects a bundle had to leave out (`Kind namespace/name`, bounded, with a count of
    /// the rest): a verdict judged from it may differ from the live one. Empty for a live run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
            network_unread: inventory
                .network_of(cluster)
                .map(|n| n.unread)
                .unwrap_or_default(),
            left_out: Vec::new(),
        }
    }

    /// The log window the verdict counts (`--since`).
    pub fn with_since(mut self, since: std::time::Duration) -> Evidence {
        self.since_s = since.as_secs();
        self
    }

    /// The facts again from the objects, the findings, the matrices and the verdict.
    pub fn judge(&self) -> Result<DiagnoseReport> {
        let inventory = Inventory::from_objects(&self.namespace, self.apis.clone(), &self.objects)
            .with_network_notes(&self.network_unread);
        let facts = inventory.facts(&self.context, &self.cluster)?;
        let since = std::time::Duration::from_secs(self.since_s);
        let mut diagnosis = analyse::verdict::diagnose(&facts, &self.nodes, since);
        let findings = analyse::status_findings(&facts, &self.workload_api);
        let network = self.network(&inventory);
        if let Some(a) = &network {
            analyse::network::join(&mut diagnosis, &facts, a);
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
        .with_network(network))
    }

    /// The cluster's network assessed, when the Supervisor serves an NSX group (the objects
    /// kept, with the notes of what could not be read: [`Inventory::with_network_notes`]).
    fn network(&self, inventory: &Inventory) -> Option<analyse::NetworkAssessment> {
        Some(analyse::assess(&inventory.network_of(&self.cluster)?))
    }
}
