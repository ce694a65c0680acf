//! Why a probe pod gave no usable log: the failures of one pod's run, how a failed request is
//! read (a refusal, worth resuming, or neither), and each failure as the line a report shows.

use crate::error::KubeErrorExt;
use crate::probe::{ReachError, ReachErrorKind};

/// Why a probe pod gave no usable log. The messages are one line and say what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodFailure {
    /// Pod Security admission (or another admission webhook) refused the pod.
    Rejected(String),
    /// RBAC: 403 on create, watch or log.
    Forbidden(String),
    ImagePull {
        image: String,
        reason: String,
        message: String,
    },
    /// Pending with a scheduling or kubelet reason.
    Pending(String),
    /// Still as created after this long: no node, no scheduling condition
    /// (`wait::unplaced`): no scheduler takes it.
    NoHost(std::time::Duration),
    /// Did not finish within the bound.
    Timeout(String),
    /// Deleted by someone else while we waited.
    Gone,
    /// The log is larger than its limit ([`MAX_LOG_BYTES`] for one probe): not read.
    LogTooLarge {
        limit_bytes: u64,
    },
    Api(String),
}

/// Whether the API server definitely did not create the pod: it answered this very create
/// with a 4xx `Status` (a refusal: RBAC's 403, Pod Security's 403, an invalid spec's 422,
/// 429, or 409 AlreadyExists). Anything else — no answer (a timeout, a broken connection) or a
/// 5xx (a 504 may still be processed) — leaves the pod possibly created, so it stays tracked
/// and the final `delete_all` tries it (a 404 there is fine).
///
/// 409 counts as a refusal on purpose: it says that *this* create made nothing. The pod that
/// holds the name is not this run's: pod names are unique per node within a run (the node
/// name, hashed when it is cut, and the run id) and a create is never retried (kube sends each
/// POST once). So it is someone else's, or an earlier run's with the same 5-character run id;
/// deleting it could kill another admin's run in progress, which is worse than leaving it
/// (`cleanup` removes it once it has finished or passed its deadline).
pub(super) fn definitely_refused(err: &kube::Error) -> bool {
    matches!(err.status_code(), Some(400..=499))
}

/// Whether a failed watch (or the read that resumes one) is worth trying again until the
/// run's bound: the connection broke or stayed quiet past the client's read timeout (kube
/// reports that as `ReadEvents`), or the server was briefly overloaded (429, 5xx: an API
/// server whose etcd is struggling answers so). Not a refusal (403), not an answer that
/// cannot be read.
///
/// A watch line or a body past its size cap (`bounds`) is not resumed: the same server would
/// send it again. A watch past its deadline (`timeoutSeconds` plus the client's bound) is.
pub(super) fn resumable(err: &kube::Error) -> bool {
    if let Some(bound) = crate::bounds::exceeded(err) {
        return matches!(bound, crate::bounds::Exceeded::Slow { .. });
    }
    match err {
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => false,
    }
}

/// Which pod-based route a failure is told for: each has its own remedies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PodRoute {
    /// Probe pods in the workload cluster (`--image`, `--pod-namespace`).
    Pod,
    /// The jumpbox, a vSphere Pod in the vSphere Namespace (`--jumpbox-image`); where it cannot
    /// be admitted or scheduled, `--via ssh` reaches the VMs without a pod.
    Jumpbox,
}

/// A pod failure as one line that says what to do (both pod-based routes: `pod`, `jumpbox`).
pub(crate) fn reach_error(f: PodFailure, ns: &str, route: PodRoute) -> ReachError {
    let image_flag = match route {
        PodRoute::Pod => "--image",
        PodRoute::Jumpbox => "--jumpbox-image",
    };
    let (kind, message) = match f {
        PodFailure::Rejected(m) if route == PodRoute::Jumpbox => (
            ReachErrorKind::Rejected,
            format!("the jumpbox pod was refused by admission in vSphere Namespace {ns}: {m}; use --via ssh (the VMs' TCP 22 from this machine), or ask the Supervisor's admin which policy refuses it"),
        ),
        PodFailure::Rejected(m) => (
            ReachErrorKind::Rejected,
            format!("the probe pod was rejected: {m}; use --pod-namespace with a namespace whose Pod Security level is privileged (kube-system usually is)"),
        ),
        PodFailure::ImagePull { image, reason, message } if route == PodRoute::Jumpbox => (
            ReachErrorKind::ImagePull,
            format!("cannot pull image {image:?} ({reason}: {message}); the ESXi hosts pull a vSphere Pod's image: mirror it to a registry they reach (docs/images.md) and use {image_flag}, with --image-pull-secret if it needs credentials, or use --via ssh"),
        ),
        PodFailure::Pending(why) if route == PodRoute::Jumpbox => (
            ReachErrorKind::Unschedulable,
            format!("the jumpbox pod cannot be scheduled: {why}; vSphere Pods need NSX or VPC networking and vSphere Pods enabled on the Supervisor: use --via ssh"),
        ),
        PodFailure::NoHost(after) if route == PodRoute::Jumpbox => (
            ReachErrorKind::Unschedulable,
            format!("no host took the jumpbox pod within {}s (still Pending: no node, no scheduling condition): vSphere Pods may be disabled on this Supervisor (the per-Supervisor vSphere Pods setting of vSphere 9.1, off by default, or a Supervisor on VDS networking, which runs none); use --via ssh", after.as_secs()),
        ),
        PodFailure::NoHost(after) => (
            ReachErrorKind::Unschedulable,
            format!("no node took the probe pod within {}s (still Pending: no node, no scheduling condition): is a scheduler running?", after.as_secs()),
        ),
        // RBAC's 403: the `kubectl auth can-i` that shows it, and where the permissions are
        // written. The probe pods are created with the workload cluster's own kubeconfig (its
        // `<cluster>-kubeconfig` secret), the jumpbox with the admin's on the Supervisor.
        PodFailure::Forbidden(m) => (
            ReachErrorKind::Rejected,
            format!(
                "{m}; creating, watching, reading the log of and deleting pods in {ns} is needed ({}); {}",
                match route {
                    PodRoute::Pod => "in the workload cluster, by the user of its kubeconfig secret",
                    PodRoute::Jumpbox => "on the Supervisor",
                },
                crate::error::forbidden_remedy(&m, "")
            ),
        ),
        PodFailure::ImagePull { image, reason, message } => (
            ReachErrorKind::ImagePull,
            format!("cannot pull image {image:?} ({reason}: {message}); use {image_flag} from a registry the nodes reach, and --image-pull-secret if it needs credentials"),
        ),
        PodFailure::Pending(why) => (ReachErrorKind::Unschedulable, format!("the probe pod cannot start: {why}")),
        PodFailure::Timeout(why) => (ReachErrorKind::Timeout, format!("the probe pod did not finish: {why}; raise --timeout")),
        PodFailure::Gone => (ReachErrorKind::Other, "the probe pod was deleted while it ran".into()),
        PodFailure::LogTooLarge { limit_bytes } => (
            ReachErrorKind::BadOutput,
            format!("the probe pod's log is larger than {} MiB, far more than the probe prints: it was not read", limit_bytes / (1024 * 1024)),
        ),
        PodFailure::Api(m) => (ReachErrorKind::Other, m),
    };
    let mut message = message;
    // vSphere Pods exist only on Supervisors with NSX networking: a jumpbox that timed out or
    // failed otherwise may be one no host runs (an unschedulable pod's line already says so).
    if route == PodRoute::Jumpbox && matches!(kind, ReachErrorKind::Timeout | ReachErrorKind::Other)
    {
        message.push_str(
            "; the Supervisor may not run vSphere Pods (they need NSX or VPC networking): try --via ssh",
        );
    }
    ReachError { kind, message }
}

/// Whether a 4xx answer to a create is admission's refusal (not RBAC's), from the messages the
/// API server writes for each: Pod Security (kubernetes staging/src/k8s.io/pod-security-admission
/// `admission/admission.go`: "violates PodSecurity"), a validating or mutating webhook
/// (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go `ToStatusErr`:
/// "admission webhook %q denied the request"), a ValidatingAdmissionPolicy
/// (apiserver `admission/plugin/policy/validating/dispatcher.go`: "ValidatingAdmissionPolicy
/// '%s' with binding '%s' denied request"), and the ResourceQuota plugin
/// (`plugin/pkg/admission/resourcequota`: "exceeded quota").
fn refused_by_admission(message: &str) -> bool {
    message.contains("violates PodSecurity")
        || (message.contains("admission webhook") && message.contains("denied the request"))
        || (message.contains("ValidatingAdmissionPolicy") && message.contains("denied request"))
        || message.contains("exceeded quota")
}

/// An admission refusal without the API server's `pods "<name>" is forbidden: ` lead
/// (apimachinery `NewForbidden`: `%s %q is forbidden: %v`): the name is this node's pod, which
/// never existed, and without it every node's refusal reads the same and is said once.
fn without_pod_name(message: &str) -> &str {
    match message.strip_prefix("pods \"") {
        Some(rest) => rest
            .split_once("\" is forbidden: ")
            .map_or(message, |(_, why)| why),
        None => message,
    }
}

/// A failed request of the run (`doing` says which) as the failure it means.
pub(super) fn api_failure(doing: &str, err: kube::Error) -> PodFailure {
    match (err.status_code(), err.status_message()) {
        (Some(409), Some(m)) => PodFailure::Api(format!(
            "{doing}: {m} (409); this run did not create it and leaves it alone (if it is a leftover of an earlier run, kubectl etcdnet cleanup removes it once it has finished)"
        )),
        (Some(400..=499), Some(m)) if refused_by_admission(m) => {
            PodFailure::Rejected(without_pod_name(m).to_string())
        }
        (Some(403), Some(m)) => PodFailure::Forbidden(format!("{doing}: {m}")),
        (Some(code), Some(m)) => PodFailure::Api(format!("{doing}: {m} ({code})")),
        _ => PodFailure::Api(format!("{doing}: {}", crate::error::chain(&err))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A webhook's, a policy's and a quota's refusals are admission's, whatever their code; the
    /// jumpbox's line names `--via ssh`.
    #[test]
    fn admission_refusals_are_told_apart_from_rbac() {
        for (code, m) in [
            (403, "admission webhook \"default.validating.pod.vmware.com\" denied the request: vSphere Pods are not supported on this Supervisor"),
            (400, "admission webhook \"x\" denied the request without explanation"),
            (422, "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'deny-pods' with binding 'b' denied request: no"),
            (403, "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10"),
        ] {
            let status = kube::core::Status::failure(m, "Forbidden").with_code(code);
            let f = api_failure("creating", kube::Error::Api(Box::new(status)));
            assert!(matches!(f, PodFailure::Rejected(_)), "{code} {m}: {f:?}");
            let e = reach_error(f, "ns-prod", PodRoute::Jumpbox);
            assert_eq!(e.kind, ReachErrorKind::Rejected);
            assert!(e.message.contains("--via ssh") && !e.message.contains('\n'), "{}", e.message);
        }
        let e = reach_error(
            PodFailure::Pending("Unschedulable: 0/3 nodes are available".into()),
            "ns-prod",
            PodRoute::Jumpbox,
        );
        assert_eq!(e.kind, ReachErrorKind::Unschedulable);
        assert!(
            e.message.contains("0/3 nodes") && e.message.contains("--via ssh"),
            "{}",
            e.message
        );
    }

    /// RBAC's 403 is said with the `kubectl auth can-i` that shows it and the permissions'
    /// page, and where it was refused.
    #[test]
    fn a_forbidden_create_says_how_to_check_it() {
        let rbac = kube::core::Status::failure(
            "pods is forbidden: User \"kubernetes-admin\" cannot create resource \"pods\" in API group \"\" in the namespace \"kube-system\"",
            "Forbidden",
        )
        .with_code(403);
        let f = api_failure("creating pod p", kube::Error::Api(Box::new(rbac)));
        let e = reach_error(f.clone(), "kube-system", PodRoute::Pod);
        assert_eq!(e.kind, ReachErrorKind::Rejected);
        assert!(
            e.message.ends_with("is needed (in the workload cluster, by the user of its kubeconfig secret); the permissions the plugin needs: https://github.com/etcdnet/kubectl-etcdnet/blob/main/docs/rbac.yaml; check with: kubectl auth can-i create pods -n kube-system"),
            "{}",
            e.message
        );
        let e = reach_error(f, "ns-prod", PodRoute::Jumpbox);
        assert!(
            e.message.contains("(on the Supervisor); the permissions")
                && e.message
                    .ends_with("; check with: kubectl auth can-i create pods -n kube-system"),
            "{}",
            e.message
        );
    }

    #[test]
    fn psa_rejection_is_told_apart_from_rbac() {
        let psa = kube::core::Status::failure(
            "pods \"x\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)",
            "Forbidden",
        )
        .with_code(403);
        // The pod's name goes: every node's refusal is then the same line.
        assert_eq!(
            api_failure("creating", kube::Error::Api(Box::new(psa))),
            PodFailure::Rejected(
                "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"
                    .into()
            )
        );
        let rbac = kube::core::Status::failure(
            "pods is forbidden: User \"u\" cannot create resource \"pods\"",
            "Forbidden",
        )
        .with_code(403);
        assert!(matches!(
            api_failure("creating", kube::Error::Api(Box::new(rbac))),
            PodFailure::Forbidden(_)
        ));
    }
}
