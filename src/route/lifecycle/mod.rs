//! The life of one probe pod: create → wait (a bounded watch) → read its log → delete.
//!
//! This module owns the guarantee "never a pod left behind": every pod is recorded in the
//! [`PodTracker`] before its create goes out, and removed from it only once deleted or once the
//! API server definitely refused to create it. Whatever ends the run — success, an error, a
//! timeout, Ctrl-C — the caller deletes what the tracker still holds
//! ([`PodTracker::delete_all`]). A create still in flight when the run ends (Ctrl-C) may be
//! stored after that delete has found nothing: for those, one delete-collection by the run's
//! label follows, and once more after a short wait ([`SWEEP_AGAIN_AFTER`]).
//!
//! Waiting is bounded by the run's `--timeout`, but for a pod that no scheduler has taken at
//! all (no node, no `PodScheduled` condition) [`NO_HOST_AFTER`] its create: a Supervisor with
//! vSphere Pods off may leave the jumpbox so, saying nothing. It is kube-runtime's watcher of the one pod:
//! a watch that breaks or stays quiet past the client's read timeout (a slow image pull, a
//! vSphere Pod that takes 30 s to start) is resumed from the last resourceVersion, and 410 Gone
//! lists the pod afresh; neither is reported as a failure. Each request (create, list, watch,
//! log, delete) is also bounded by the client (`bounds`): a create, list, log or delete within
//! the client's bound, headers and body; a watch within its `timeoutSeconds` plus that bound,
//! each event line within `bounds::MAX_LINE_BYTES` (a longer one ends the wait with an error,
//! never resumed).
//!
//! - `tracker`: the [`PodTracker`] and its sweep;
//! - `run`: one pod's run ([`run`], [`run_with_log_limit`]): create, wait, read the log, delete;
//! - `wait`: what a pod's status says, and the watcher that waits for its next one;
//! - `log`: a finished pod's log read within its cap ([`MAX_LOG_BYTES`]), and the [`PodRun`]
//!   it ends in;
//! - `failure`: the [`PodFailure`]s, how a failed request is read, and [`reach_error`] (each
//!   failure as the line a report shows, for both pod-based routes).

mod failure;
mod log;
mod run;
mod tracker;
mod wait;

#[cfg(test)]
mod tests;

pub(crate) use failure::{reach_error, PodFailure, PodRoute};
#[cfg(test)]
pub(crate) use log::PodRun;
pub(crate) use log::{read_log, MAX_LOG_BYTES};
pub(crate) use run::{create, delete, run, run_with_log_limit};
#[cfg(test)]
pub(crate) use tracker::{Cluster, SWEEP_AGAIN_AFTER};
pub(crate) use tracker::{Host, Kept, PodApi, PodTracker, Ticket};
pub(crate) use wait::{first_image, pod_state, unplaced, PodState, NO_HOST_AFTER};
