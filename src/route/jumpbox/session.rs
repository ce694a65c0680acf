//! The jumpbox route's session: runs the one pod on the first node the driver asks for, and
//! hands every node its own section of the pod's log.

use tokio::sync::OnceCell;

use super::framing::{read_log, split_log};
use super::keeper::{PodLog, Shape};
use super::spec::{jumpbox_pod, log_limit, DRY_RUN_NONCE};
use super::JumpboxSettings;
use crate::probe::{ReachError, ReachErrorKind};
use crate::route::lifecycle::{self, PodApi};
use crate::route::{Address, Reached, Run, Target};

/// The opened jumpbox route: the one pod's run, shared by every VM.
pub(crate) struct JumpboxSession<'a> {
    api: PodApi,
    settings: &'a JumpboxSettings,
    /// The targets the session was opened for that have an address, with it: the pod's VMs,
    /// in the order of its sections.
    vms: Vec<(&'a Target, &'a Address)>,
    /// This run's framing nonce (see `jumpbox.sh`).
    nonce: String,
    /// The one pod's run, made by the first `probe` and shared by every other: each VM's
    /// result, in the order of `vms`, or the pod's failure (every VM's).
    results: OnceCell<std::result::Result<Vec<Reached>, ReachError>>,
}

impl<'a> JumpboxSession<'a> {
    /// A session for `vms` (the pod's VMs, in its sections' order), its log framed with `nonce`.
    pub(super) fn new(
        api: PodApi,
        settings: &'a JumpboxSettings,
        vms: Vec<(&'a Target, &'a Address)>,
        nonce: String,
    ) -> Self {
        JumpboxSession {
            api,
            settings,
            vms,
            nonce,
            results: OnceCell::new(),
        }
    }

    /// Runs the one pod for every VM and reads each VM's section of its log.
    async fn run_pod(&self, run: &Run<'_>) -> std::result::Result<Vec<Reached>, ReachError> {
        // A refusal's `kubectl auth can-i` (the Supervisor's 403) with the run's flags.
        self.run_pod_once(run).await.map_err(|e| ReachError {
            message: crate::error::with_can_i_flags(e.message, &self.settings.kubectl_flags),
            ..e
        })
    }

    async fn run_pod_once(&self, run: &Run<'_>) -> std::result::Result<Vec<Reached>, ReachError> {
        let s = self.settings;
        let addresses: Vec<&Address> = self.vms.iter().map(|(_, at)| *at).collect();
        if let Some((shared, _)) = &s.shared {
            // -A: the namespace's one jumpbox (kept, under --watch), this cluster's sections
            // of its log.
            let log = shared.log(&self.api, run).await?;
            return self.sections_of(&log, &s.cluster);
        }
        if let Some(keeper) = &s.keeper {
            let want = Shape::of(&[&s.cluster], &jumpbox_pod(&addresses, DRY_RUN_NONCE, s));
            let slot = (s.namespace.as_str(), s.cluster.as_str());
            let build = |nonce: &str| jumpbox_pod(&addresses, nonce, s);
            let log = keeper
                .round(&self.api, slot, want, build, run.bound)
                .await?;
            return self.sections_of(&log, &s.cluster);
        }
        let pod = jumpbox_pod(&addresses, &self.nonce, s);
        let limit = log_limit(addresses.len());
        match lifecycle::run_with_log_limit(
            &self.api,
            &pod,
            run.tracker,
            run.bound,
            run.keep,
            limit,
        )
        .await
        {
            Ok(done) => self.sections(&done.log, &self.nonce),
            Err(f) => Err(crate::route::lifecycle::reach_error(
                f,
                &s.namespace,
                crate::route::lifecycle::PodRoute::Jumpbox,
            )),
        }
    }
}

impl JumpboxSession<'_> {
    /// Each VM's result from cluster `cluster`'s sections of a (kept or shared) pod's `log`.
    fn sections_of(
        &self,
        log: &PodLog,
        cluster: &str,
    ) -> std::result::Result<Vec<Reached>, ReachError> {
        let all = split_log(&log.log, &log.nonce, log.shape.sections())?;
        match log.shape.sections_of(cluster) {
            Some(mine) if mine.len() == self.vms.len() => {
                Ok(self.read(mine.into_iter().map(|i| all[i].clone())))
            }
            _ => Err(ReachError {
                kind: ReachErrorKind::Other,
                message:
                    "the jumpbox was made for other VMs of this cluster (a bug of the plugin's)"
                        .into(),
            }),
        }
    }

    /// Each VM's result from its section of `log`, framed with `nonce`.
    fn sections(&self, log: &str, nonce: &str) -> std::result::Result<Vec<Reached>, ReachError> {
        let sections = split_log(log, nonce, self.vms.len())?;
        Ok(self.read(sections))
    }

    /// Each VM's result from its section (in the order of `vms`).
    fn read<'l>(
        &self,
        sections: impl IntoIterator<Item = std::result::Result<&'l str, ReachError>>,
    ) -> Vec<Reached> {
        self.vms
            .iter()
            .zip(sections)
            .map(|((t, at), section)| match section {
                Ok(text) => read_log(&t.name, &at.ip.to_string(), &self.settings.ssh.user, text),
                Err(e) => Err(e).into(),
            })
            .collect()
    }

    /// The progress line while it runs.
    pub fn doing(&self, nodes: usize) -> String {
        format!("probing {nodes} control-plane VMs through one jumpbox pod in the Supervisor")
    }

    /// Reaches the target at `at` and runs the probe there.
    pub async fn probe(&self, t: &Target, _: &Address, run: &Run<'_>) -> Reached {
        let Some(index) = self.vms.iter().position(|(v, _)| *v == t) else {
            return Err(ReachError {
                kind: ReachErrorKind::Other,
                message: format!(
                    "{} is not among the VMs the jumpbox pod was made for",
                    t.name
                ),
            })
            .into();
        };
        // The first node asked for runs the pod; the others wait for it and take their
        // own section.
        match self.results.get_or_init(|| self.run_pod(run)).await {
            Ok(all) => all[index].clone(),
            Err(e) => Err(e.clone()).into(),
        }
    }
}
