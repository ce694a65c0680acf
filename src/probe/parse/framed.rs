//! A framed output's sections (format 2, [`crate::probe::frame`]) read into the document's
//! types, which the caps ([`super::bounds`]) then bound as they bound a document of format 1.
//! Every section is read through the one reader of its shape ([`crate::probe::frame::Head`]).
//! Each section's reader is total: a section missing or not as the probe prints it leaves its
//! part at its default (what an older probe without it gives) and says so in the document's
//! problems.

use super::bounds;
use super::raw;
use crate::probe::etcdask;
use crate::probe::etcdask::Problems;
use crate::probe::firewall::Firewall;
use crate::probe::frame::Frames;
use crate::probe::output::{MetricsReads, ProbeOutput, StepError, PROBE_SCHEMA_VERSION};

/// The document from the sections; what was wrong with them is said in `p` (the framing's own
/// problems are the caller's, [`Frames::problems`]).
pub(super) fn document(frames: &Frames, p: &mut Problems) -> ProbeOutput {
    // `node`: `self IP` (this node's address as the probe was told it), `host NAME`, `clock MS`
    // (its clock, epoch ms) and `ms MS` (how long the probe took).
    let node = frames.head("node").unwrap_or_default();
    let node_ip = node.get("self").unwrap_or_default().trim().to_string();
    let clock_ms = node.num("clock");
    // The node's own sections, read from the tools' raw output (src/probe/parse/raw.rs); the
    // steps that failed there join the script's errors.
    let mut steps = Vec::new();
    let etcd = raw::etcd(frames, &mut steps).unwrap_or_default();
    let certs = raw::certs(frames, &node_ip, clock_ms.map(|ms| ms / 1000));
    let api_server = raw::api_server(frames, &mut steps);
    let mut errors = errors(frames);
    errors.extend(steps);
    let metrics = ["metrics.before", "metrics.after"]
        .map(|name| (frames.get(name)).map(|text| etcdask::metrics_read(name, text)));
    ProbeOutput {
        schema_version: PROBE_SCHEMA_VERSION,
        hostname: Some(node.get("host").unwrap_or_default().trim())
            .filter(|h| !h.is_empty())
            .map(str::to_string),
        ips: raw::ips(frames),
        clock_ms,
        duration_ms: node.num("ms").and_then(|ms| u64::try_from(ms).ok()),
        node_ip,
        etcd,
        kubelet: raw::kubelet(frames).unwrap_or_default(),
        // The path checks: each one's raw transcript judged here (src/probe/paths.rs).
        paths: crate::probe::paths::read(frames),
        certs: certs.unwrap_or_default(),
        manifest: raw::manifest(frames),
        // etcd's own answers, as it sent them, judged here (src/probe/etcdask.rs).
        health: frames
            .get("health")
            .map(etcdask::health)
            .unwrap_or_default(),
        members: (frames.get("members"))
            .map(|t| etcdask::members(t, p))
            .unwrap_or_default(),
        alarms: (frames.get("alarms"))
            .map(|t| etcdask::alarms(t, p))
            .unwrap_or_default(),
        firewall: Firewall {
            before: raw::firewall(frames, "firewall.before"),
            after: raw::firewall(frames, "firewall.after"),
        },
        metrics: match metrics {
            [None, None] => None,
            [before, after] => Some(MetricsReads {
                before: before.unwrap_or_default(),
                after: after.unwrap_or_default(),
            }),
        },
        api_server,
        errors,
        document_problems: Vec::new(),
        raw: Default::default(),
    }
}

/// `errors`: all head, one failed step a line, `step<TAB>message`.
fn errors(frames: &Frames) -> Vec<StepError> {
    let Some(h) = frames.head("errors") else {
        return Vec::new();
    };
    (h.lines.iter())
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (step, message) = l.split_once('\t').unwrap_or((l, ""));
            StepError {
                step: crate::probe::head(step, 64).to_string(),
                // The script's `cap(message, 500)` of format 1, made here.
                message: crate::probe::cap(message, bounds::MAX_ERROR_TEXT),
            }
        })
        .collect()
}
