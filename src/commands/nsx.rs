//! NSX Manager for one round (`--nsx-manager`): the run's one client (one login however many
//! clusters and `--watch` rounds: [`NsxConfig::login`]), each cluster's DFW read after its
//! probes, and with `--nsx-traceflow` a few traceflows for its failing paths. Every traceflow
//! is tracked from before its creation, by its own cluster: the cluster's diagnosis deletes
//! its own as soon as they are read (never another cluster's), and [`NsxRun::finish`], which
//! the round runs on every way out (Ctrl-C included: the signal drops the diagnosis, not
//! this), deletes whatever is left. [`end`] ends the session when the run ends.

use std::sync::Arc;
use std::time::Duration;

use crate::analyse::matrix::{self, CellState};
use crate::nsxmanager::client::{Client, CLEANUP_BOUND};
use crate::nsxmanager::enforce;
use crate::nsxmanager::model::{self, SupervisorVm};
use crate::nsxmanager::raw::{Gap, Layout, NsxRead, StatisticsRead};
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

/// The longest the rule statistics before the checks may hold the probes back.
const COUNTERS_BOUND: Duration = Duration::from_secs(10);
/// The least time worth a reading: less is said as not read (the cluster's bound was spent).
const MIN_READING: Duration = Duration::from_secs(1);

/// The ports whose failing paths a traceflow proves, the peer port first (quorum's).
const TRACED_PORTS: [u16; 2] = [2380, 2379];

/// NSX Manager for the run: the client (or why there is none), the traceflows not yet deleted.
pub(crate) struct NsxRun {
    config: NsxConfig,
    client: Result<Arc<Client>, Gap>,
    /// Every traceflow of the round; each cluster's reading tracks its own in a scope of it.
    tracker: TraceflowTracker,
}

/// Ends the run's NSX Manager session (the run is over: every round's traceflows are deleted).
pub(crate) async fn end(config: &NsxConfig) {
    config.login.close().await;
}

impl NsxRun {
    /// The run's login: made by the run's first round, taken as it came out by the others (a
    /// refusal is kept and said in every cluster's reading, never a failed run, and never
    /// tried again: NSX locks an account after a few failed logins).
    /// The round's byte budget starts here, shared by every cluster's reading of the round.
    pub async fn start(config: &NsxConfig) -> NsxRun {
        let client = config.login.client(&config.options).await;
        if let Ok(c) = &client {
            c.renew_budget();
        }
        NsxRun {
            config: config.clone(),
            client,
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
        let vms = crate::nsxmanager::identify::supervisor_vms(
            facts,
            &inventory.verified_vms(&facts.cluster.name),
        );
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
        client: &Arc<Client>,
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
                // This cluster's own tracker: its cleanup deletes its traceflows only, never
                // another cluster's still being polled.
                let own = self.tracker.scoped();
                read.traceflows =
                    traceflow::run_and_delete(client, layout, &classes, &own, left).await;
            }
        }
        read
    }

    /// The rules' hit counters before the cluster's path checks (issue 37), read as the DFW
    /// reading reads (same layout, same privileges), within `within` and at most
    /// [`COUNTERS_BOUND`]; run beside the route and the probes (`round.rs`), never before
    /// them. `None` when there is no client or no layout (the reading says why).
    pub async fn counters_before(
        &self,
        supervisor: &kube::Client,
        facts: &ClusterFacts,
        inventory: &Inventory,
        within: Duration,
    ) -> Option<StatisticsRead> {
        let client = self.client.as_ref().ok()?;
        if client.credentials_refused() {
            return None;
        }
        let layout = layout(supervisor, facts, inventory).await.ok()?;
        let bound = within
            .min(self.config.options.limits.total)
            .min(COUNTERS_BOUND);
        client.renew_deadline(bound);
        let before = enforce::read_statistics_before(client, &layout);
        match tokio::time::timeout(bound + ASSEMBLY_GRACE, before).await {
            Ok(s) => Some(s),
            Err(_) => Some(StatisticsRead {
                gaps: vec![Gap {
                    path: "/policy/api/v1".into(),
                    status: None,
                    why: format!(
                        "the rule statistics were not read within {} before the checks",
                        crate::nsxmanager::client::shown(bound)
                    ),
                    privilege: None,
                }],
                ..StatisticsRead::default()
            }),
        }
    }

    /// After the cluster's reading (and its traceflows): the DFW's switch and exclusion list,
    /// and the counters of `before` read again, into `read`. Bounded as the reading is (the
    /// client's deadline) and by what is left of `within`.
    pub async fn enforcement_after(
        &self,
        read: &mut NsxRead,
        before: Option<StatisticsRead>,
        within: Duration,
    ) {
        let Ok(client) = &self.client else { return };
        if client.credentials_refused() || read.auth.is_none() {
            return;
        }
        let bound = within.min(self.config.options.limits.total);
        let layout = read.layout.clone();
        let work = async {
            let enforcement = enforce::read_enforcement(client, &layout).await;
            let mut stats = before;
            if let Some(s) = stats.as_mut() {
                enforce::read_statistics_after(client, s).await;
            }
            (enforcement, stats)
        };
        if let Ok((e, s)) = tokio::time::timeout(bound + ASSEMBLY_GRACE, work).await {
            read.enforcement = Some(e);
            read.statistics = s;
        }
    }

    /// On every way out of the round: deletes the traceflows still tracked (a run cut by a
    /// signal, a deletion that failed), each within its bound. Returns a warning per
    /// traceflow that could not be deleted. The session stays: `--watch`'s next round uses it
    /// ([`end`] closes it).
    pub async fn finish(&self) -> Vec<String> {
        let Ok(client) = &self.client else {
            return Vec::new();
        };
        let failed = self.tracker.delete_all(client).await;
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

impl NsxRun {
    /// The traceflows not yet deleted (for the warning when a second signal ends the wait).
    pub fn pending(&self) -> Vec<String> {
        self.tracker.pending()
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
        supervisor::read::read_vpc_objects(supervisor, &inventory.apis, &facts.namespace, &config)
            .await;
    let vnc = vnc.ok_or_else(|| gap(notes.join("; ")))?;
    let vpc_name = info.as_ref().and_then(nsx_read::networkinfo_vpc);
    nsx_read::vpc_layout(&vnc, vpc_name).map_err(|e| gap(e.to_string()))
}

/// The traceflows to run: each failing (timed out or refused) path between two probed nodes,
/// one direction per pair, 2380 first, at most [`MAX_TRACEFLOWS`]; only from a VM whose NSX
/// port was confirmed as its own. Each names the nodes it goes between.
fn classes(read: &NsxRead, vms: &[SupervisorVm], reports: &[NodeReport]) -> Vec<TraceflowClass> {
    // Only the VMs' identities: the DFW itself is judged once, with the evidence.
    let identified = crate::nsxmanager::identify::identified_vms(read, vms, &mut Vec::new());
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
            // The source's address of the peer's family: the packet's `src_ip`.
            let from_ip = to_ip.and_then(|to| {
                vms.iter()
                    .find(|v| v.node == c.from)
                    .and_then(|v| v.ips.iter().find(|ip| ip.is_ipv6() == to.is_ipv6()))
            });
            if let (Some(from_port), Some(to_ip)) = (from_port, to_ip) {
                out.push(TraceflowClass {
                    from: c.from.clone(),
                    to: c.to.clone(),
                    from_port,
                    to_ip: to_ip.to_string(),
                    port,
                    from_ip: from_ip.map(|ip| ip.to_string()),
                    from_mac: mac(read, &identified, &c.from),
                    to_mac: mac(read, &identified, &c.to),
                });
            }
            if out.len() >= MAX_TRACEFLOWS {
                return out;
            }
        }
    }
    out
}

/// The MAC of `node`'s confirmed VM's port, from what its lookup found ([`traceflow::mac_of`]).
fn mac(read: &NsxRead, identified: &[model::DfwVm], node: &str) -> Option<String> {
    let vm = identified
        .iter()
        .find(|v| v.node == node && v.identity == model::Identity::Confirmed)?;
    let port = vm.port.as_ref()?;
    let found = &read.vms.iter().find(|l| l.node == node)?.found;
    traceflow::mac_of(
        found,
        vm.nsx_vm.as_ref().and_then(|v| v.external_id.as_deref()),
        port.path.as_deref()?,
        port.attachment_id.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    /// The budget is a round's: the run's one client (one login) serves every `--watch` round, and
    /// each round's readings are held to the budget anew, so two rounds each within it both read
    /// (counted on the one client, a long `--watch` stopped reading NSX Manager after a few).
    /// Within a round it still holds every cluster's reading together.
    #[tokio::test]
    async fn each_rounds_readings_within_the_budget_are_read() {
        use crate::nsxmanager::client::tests::{options, serve, session_granted, Canned};
        use crate::nsxmanager::client::{ApiPath, Client, RequestError};
        let (url, _seen) = serve(|_, path| match path {
            "/api/session/create" => session_granted(),
            _ => Canned::json(200, &format!(r#"{{"x":"{}"}}"#, "y".repeat(4000))),
        });
        let mut o = options(url);
        o.limits.max_total_bytes = 10_000;
        let client = Client::connect(&o).await.unwrap();
        let path = ApiPath::policy("/infra/services/etcd", &[]).unwrap();
        for round in 0..3 {
            client.renew_budget();
            // Two clusters' readings of the round, ~8 KB together: within it.
            assert!(client.get(&path).await.is_ok(), "round {round}");
            assert!(client.get(&path).await.is_ok(), "round {round}");
            // A third answer in the same round is past it.
            let e = client.get(&path).await.unwrap_err();
            assert!(
                matches!(e, RequestError::Budget { .. }),
                "round {round}: {e:?}"
            );
        }
        assert_eq!(client.logins(), 1, "one login for every round");

        // Where a round starts (`commands::nsx::NsxRun::start`, each `--watch` round's), the run's
        // one client gets the round's budget anew.
        let config = crate::nsxmanager::NsxConfig {
            options: o.clone(),
            traceflow: false,
            note: None,
            login: std::sync::Arc::default(),
        };
        let _first = super::NsxRun::start(&config).await;
        let shared = config.login.client(&config.options).await.unwrap();
        assert!(shared.get(&path).await.is_ok());
        assert!(shared.get(&path).await.is_ok());
        assert!(
            shared.get(&path).await.is_err(),
            "the first round's budget is spent"
        );
        let _second = super::NsxRun::start(&config).await;
        assert!(shared.get(&path).await.is_ok(), "the second round reads");
        assert_eq!(shared.logins(), 1, "the run's one login");
    }
}
