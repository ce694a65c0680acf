//! Rule 1, ControlPlaneMachinesMissing: fewer control-plane Machines than the KCP wants.

use super::{verdict, Ctx, Verdict, VerdictCode};

pub(super) fn machines_missing(ctx: &Ctx) -> Option<Verdict> {
    let desired = ctx.facts.desired()?;
    // A Machine being deleted is on its way out (a scale-down, a remediation): it does not count
    // towards the replicas; a provisioning one does (KCP is making it).
    let present = ctx.facts.machines_staying() as i64;
    if present >= desired {
        return None;
    }
    let kcp = ctx
        .facts
        .kcp
        .as_ref()
        .map(|k| k.name.as_str())
        .unwrap_or("?");
    // Names as the API server accepts them, else a placeholder; the run's flags last.
    let k = &ctx.facts.kubectl;
    let ns = crate::command::namespace(&ctx.facts.namespace);
    let kcp_word = crate::command::name(kcp);
    verdict(
        VerdictCode::ControlPlaneMachinesMissing,
        format!("{} of {desired} control-plane Machines are missing: a separate issue from etcd networking", desired - present),
        vec![],
        vec![format!("KubeadmControlPlane {kcp} wants {desired} replicas; {present} control-plane Machines exist")],
        vec![
            format!(
                "{}; {} (why it cannot create the missing Machines)",
                k.run(&format!("get kcp,machines -n {ns}")),
                k.run(&format!("describe kcp {kcp_word} -n {ns}"))
            ),
            format!(
                "{} | grep -i -e {kcp_word} -e virtualmachine",
                k.run(&format!("get events -n {ns} --sort-by=.lastTimestamp"))
            ),
        ],
    )
}
