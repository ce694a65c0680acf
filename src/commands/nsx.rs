//! NSX Manager for one run (`--nsx-manager`): one client for the whole run (one login, however
//! many clusters), each cluster's DFW read after its probes, and with `--nsx-traceflow` a few
//! traceflows for its failing paths. Every traceflow is tracked from before its creation: the
//! cluster's own diagnosis deletes them as soon as they are read, and [`NsxRun::finish`], which
//! the round runs on every way out (Ctrl-C included: the signal drops the diagnosis, not this),
//! deletes whatever is left and ends the session.

use std::time::Duration;

use crate::analyse::matrix::{self, CellState};
use crate::nsxmanager::client::{Client, CLEANUP_BOUND};
use crate::nsxmanager::model::{self, SupervisorVm};
use crate::nsxmanager::raw::{Gap, Layout, NsxRead};
use crate::nsxmanager::read::{self as nsx_read, VmHint};
use crate::nsxmanager::traceflow::{self, TraceflowClass, TraceflowTracker, MAX_TRACEFLOWS};
use crate::nsxmanager::NsxConfig;
use crate::probe::NodeReport;
use crate::supervisor;
use crate::supervisor::network::{NetKind, VPC_NETWORK_CONFIG_ANNOTATION};
use crate::supervisor::{ClusterFacts, Inventory};

/// How long a reading may take past its deadline to put together what it read (no request
/// runs then: the client's deadline cut them) before the backstop drops it whole.
const ASSEMBLY_GRACE: Duration = Duration::from_secs(1);

/// The least time worth a reading: less is said as not read (the cluster's bound was spent).
const MIN_READING: Duration = Duration::from_secs(1);

/// The ports whose failing paths a traceflow proves, the peer port first (quorum's).
const TRACED_PORTS: [u16; 2] = [2380, 2379];

/// NSX Manager for the run: the client (or why there is none), the traceflows not yet deleted.
pub struct NsxRun {
    config: NsxConfig,
    client: Result<Client, Gap>,
    tracker: TraceflowTracker,
}

impl NsxRun {
    /// Logs in once (session, else basic); a refusal is kept and said in every cluster's
    /// reading, never a failed run.
    pub async fn start(config: &NsxConfig) -> NsxRun {
        NsxRun {
            config: config.clone(),
            client: Client::connect(&config.options).await,
            tracker: TraceflowTracker::default(),
        }
    }

    /// The report's note (the certificate not checked), for every cluster's evidence.
    pub fn note(&self) -> Option<String> {
        self.config.note.clone()
    }

    /// One cluster's reading: its layout from the Supervisor's networking, its DFW and VMs,
    /// and (`--nsx-traceflow`) the traceflows of its failing paths, deleted before returning.
    /// Bounded by `within` (what is left of the cluster's `--timeout`) and by `--nsx-timeout`.
    pub async fn read(
        &self,
        supervisor: &kube::Client,
        facts: &ClusterFacts,
        inventory: &Inventory,
        reports: &[NodeReport],
        within: Duration,
    ) -> NsxRead {
        let manager = self.config.options.manager.as_str().to_string();
        let layout = match layout(supervisor, facts, inventory).await {
            Ok(l) => l,
            Err(gap) => return nsx_read::unread(&manager, &nsx_read::infra_layout(), gap),
        };
        let client = match &self.client {
            Ok(c) => c,
            Err(gap) => return nsx_read::unread(&manager, &layout, gap.clone()),
        };
        let vms = model::supervisor_vms(facts, &inventory.verified_vms(&facts.cluster.name));
        let hints: Vec<VmHint> = vms.iter().map(VmHint::from).collect();
        // `within` is all the reading may take: its requests end early enough to leave the
        // putting together and, with traceflows, their deletes (each within CLEANUP_BOUND).
        let tidy = ASSEMBLY_GRACE
            + if self.config.traceflow {
                CLEANUP_BOUND
            } else {
                Duration::ZERO
            };
        let total = self.config.options.limits.total;
        let bound = within.saturating_sub(tidy).min(total);
        let shown = crate::nsxmanager::client::shown;
        let cut_by_cluster = |why: String| Gap {
            path: "/policy/api/v1".into(),
            status: None,
            why,
            privilege: None,
        };
        if bound < MIN_READING {
            return nsx_read::unread(
                &manager,
                &layout,
                cut_by_cluster(format!(
                    "not read: the cluster's --timeout (plus its grace) left {} after the probes, too little for a reading",
                    shown(within)
                )),
            );
        }
        // The reading, its traceflows and their deletes, bounded as a whole by `within` (a
        // backstop: the deadlines inside end it first); a traceflow it leaves is still tracked
        // and deleted by [`NsxRun::finish`].
        let backstop = within;
        let whole = async {
            let started = tokio::time::Instant::now();
            let mut read = self
                .read_within(client, &layout, &hints, &vms, reports, bound)
                .await;
            if bound < total && started.elapsed() >= bound {
                // Cut by the cluster's bound, not --nsx-timeout: said, with the manager's
                // own gaps (the requests the deadline stopped).
                read.gaps.push(cut_by_cluster(format!(
                    "the reading was given {} (what the cluster's --timeout plus its grace left after the probes), not --nsx-timeout's {}",
                    shown(bound),
                    shown(total)
                )));
            }
            read
        };
        match tokio::time::timeout(backstop, whole).await {
            Ok(r) => r,
            Err(_) => nsx_read::unread(
                &manager,
                &layout,
                cut_by_cluster(format!(
                    "the reading did not finish within {} (what the cluster's bound left it)",
                    shown(backstop)
                )),
            ),
        }
    }

    /// The reading itself, its requests bounded by `bound`, then the traceflows.
    async fn read_within(
        &self,
        client: &Client,
        layout: &Layout,
        hints: &[VmHint],
        vms: &[SupervisorVm],
        reports: &[NodeReport],
        bound: Duration,
    ) -> NsxRead {
        let manager = self.config.options.manager.as_str().to_string();
        // `--nsx-timeout` is this reading's, whatever the probes before it took. The client's
        // deadline is what cuts the reading (what was read before it still counts); the
        // timeout around it only catches a reading that outlives that deadline by more than
        // putting together what was read takes, and then nothing of it is kept.
        client.renew_deadline(bound);
        let started = tokio::time::Instant::now();
        let backstop = bound + ASSEMBLY_GRACE;
        let mut read =
            match tokio::time::timeout(backstop, nsx_read::read(client, layout, hints)).await {
                Ok(r) => r,
                Err(_) => nsx_read::unread(
                    &manager,
                    layout,
                    Gap {
                        path: "/policy/api/v1".into(),
                        status: None,
                        why: format!(
                            "the reading did not finish within {}",
                            crate::nsxmanager::client::shown(bound)
                        ),
                        privilege: None,
                    },
                ),
            };
        if self.config.traceflow {
            let classes = classes(&read, vms, reports);
            let left = bound.saturating_sub(started.elapsed());
            if !classes.is_empty() && !left.is_zero() {
                read.traceflows =
                    traceflow::run_and_delete(client, layout, &classes, &self.tracker, left).await;
            }
        }
        read
    }

    /// On every way out of the round: deletes the traceflows still tracked (a run cut by a
    /// signal, a deletion that failed) and ends the session. Returns a warning per traceflow
    /// that could not be deleted.
    pub async fn finish(&self) -> Vec<String> {
        let Ok(client) = &self.client else {
            return Vec::new();
        };
        let failed = self.tracker.delete_all(client).await;
        client.close().await;
        failed
            .into_iter()
            .map(|(path, why)| {
                format!(
                    "warning: could not delete traceflow {path} on NSX Manager ({why}); it is transient (NSX removes it after two idle hours), or delete it there"
                )
            })
            .collect()
    }
}

/// The Policy API tree of the cluster's networking, as the Supervisor shows it: T1/NCP's
/// `infra/domains/default`; on VPC networking (the Namespace's `vpc_network_config`
/// annotation) the VPC of the namespace's `VPCNetworkConfiguration` and `NetworkInfo`, read now
/// (only with `--nsx-manager`). A VPC whose path cannot be told is a gap, never a guess.
async fn layout(
    supervisor: &kube::Client,
    facts: &ClusterFacts,
    inventory: &Inventory,
) -> Result<Layout, Gap> {
    let network = inventory.network_of(&facts.cluster.name);
    let vpc = network.as_ref().and_then(|n| n.live_policy_kind) == Some(NetKind::VpcSecurityPolicy);
    if !vpc {
        return Ok(nsx_read::infra_layout());
    }
    let gap = |why: String| {
        Gap {
        path: "/policy/api/v1/orgs".into(),
        status: None,
        why: format!("the namespace is on VPC networking and its VPC's NSX path could not be told ({why}), so NSX Manager was not asked"),
        privilege: None,
    }
    };
    let config = network
        .as_ref()
        .and_then(|n| n.namespace_object.as_ref())
        .and_then(|ns| ns.metadata.annotations.as_ref())
        .and_then(|a| a.get(VPC_NETWORK_CONFIG_ANNOTATION))
        .filter(|c| !c.is_empty() && c.len() <= 253)
        .cloned()
        .ok_or_else(|| {
            gap(format!(
                "the Namespace has no {VPC_NETWORK_CONFIG_ANNOTATION} annotation"
            ))
        })?;
    let (vnc, info, notes) =
        supervisor::read::read_vpc_objects(supervisor, &facts.namespace, &config).await;
    let vnc = vnc.ok_or_else(|| gap(notes.join("; ")))?;
    let vpc_name = info.as_ref().and_then(nsx_read::networkinfo_vpc);
    nsx_read::vpc_layout(&vnc, vpc_name).map_err(|e| gap(e.to_string()))
}

/// The traceflows to run: each failing (timed out or refused) path between two probed nodes,
/// one direction per pair, 2380 first, at most [`MAX_TRACEFLOWS`]; only from a VM whose NSX
/// port was confirmed as its own. Each names the nodes it goes between.
fn classes(read: &NsxRead, vms: &[SupervisorVm], reports: &[NodeReport]) -> Vec<TraceflowClass> {
    // Only the VMs' identities: the DFW itself is judged once, with the evidence.
    let identified = model::identified_vms(read, vms, &mut Vec::new());
    let mut out: Vec<TraceflowClass> = Vec::new();
    for port in TRACED_PORTS {
        let m = matrix::build(reports, port);
        for c in m.peer_cells() {
            if !matches!(c.state, CellState::Timeout | CellState::Refused) {
                continue;
            }
            if out
                .iter()
                .any(|k| k.port == port && k.from == c.to && k.to == c.from)
            {
                continue;
            }
            let from_port = identified
                .iter()
                .find(|v| v.node == c.from && v.identity == model::Identity::Confirmed)
                .and_then(|v| v.port.as_ref()?.path.clone());
            let to_ip = vms
                .iter()
                .find(|v| v.node == c.to)
                .and_then(|v| v.ips.first());
            if let (Some(from_port), Some(to_ip)) = (from_port, to_ip) {
                out.push(TraceflowClass {
                    from: c.from.clone(),
                    to: c.to.clone(),
                    from_port,
                    to_ip: to_ip.to_string(),
                    port,
                });
            }
            if out.len() >= MAX_TRACEFLOWS {
                return out;
            }
        }
    }
    out
}
