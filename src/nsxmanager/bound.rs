//! The NSX reading's caps, held by every reading whatever made it. The live reader holds them
//! as it reads ([`super::client::Limits`], [`super::read`]'s `MAX_*`); a bundle's
//! `nsx-manager.json` is anyone's file, so `analyse` cuts it to the same caps before judging it
//! ([`rebound`]), and the writer cuts a reading to the bundle's per-entry cap before writing it
//! ([`fit`]), so that `analyse` accepts the plugin's own bundle. Every cut is a [`Gap`] in the
//! reading: the evaluation turns it into "cannot decide" and says it, never a guess.

use super::client::{bound_strings, Limits, MAX_STRING_CHARS};
use super::enforce::{MAX_EXCLUDE_MEMBERS, MAX_STATISTICS_POLICIES};
use super::model::clip;
use super::raw::{EnforcementRead, Gap, Listed, Members, NsxRead, StatisticsRead, VpcSecurity};
use super::read::{
    association_roots, policy_roots, MAX_GAPS, MAX_GROUPS, MAX_PORTS_PER_VM, MAX_SERVICES,
    MAX_VIFS_PER_VM, MAX_VMS_PER_HINT,
};
use super::traceflow::MAX_TRACEFLOWS;
use crate::supervisor::targets::MAX_TARGETS;

/// The path a cut of a bundle's reading is said at (no request was made).
const FILE: &str = "nsx-manager.json";

fn cut_gap(what: &str, why: String) -> Gap {
    Gap {
        path: format!("{FILE}: {what}"),
        status: None,
        why,
        privilege: None,
    }
}

/// Cuts `l` to `max` objects; the cut is its `incomplete` (unless it already has one) and
/// returned. Its strings bounded as the reader bounds every answer.
fn cap_listed(l: &mut Listed, max: usize, what: &str) -> Option<Gap> {
    l.results
        .iter_mut()
        .for_each(|v| bound_strings(v, MAX_STRING_CHARS));
    if l.results.len() <= max {
        return None;
    }
    let was = l.results.len();
    l.results.truncate(max);
    let g = cut_gap(
        what,
        format!(
            "{was} objects: more than {max} (only the first kept, as a live reading keeps them)"
        ),
    );
    l.incomplete.get_or_insert_with(|| g.clone());
    Some(g)
}

fn cap_map(m: &mut std::collections::BTreeMap<String, impl Sized>, max: usize) -> Option<usize> {
    let was = m.len();
    let key = m.keys().nth(max)?.clone();
    m.split_off(&key);
    Some(was)
}

/// A reading cut to the live reader's caps (`limits`'s object cap per list, the groups,
/// services, VMs, traceflows and gaps a live run reads at most, every string bounded): what
/// `analyse` judges of a bundle's `nsx-manager.json`, whose work is then bounded as a live
/// run's is. A reading within the caps is left as it is. Linear in the reading's size.
pub(crate) fn rebound(read: &mut NsxRead, limits: &Limits) {
    let max = limits.max_objects;
    let mut cuts: Vec<Gap> = Vec::new();
    // Each root's list holds at most `max`; they are read one after another into one list.
    let roots = policy_roots(&read.layout).len().max(1);
    cuts.extend(cap_listed(
        &mut read.policies,
        roots * max,
        "security-policies",
    ));
    // One rules list per listed policy, at most.
    if read.rules.len() > roots * max {
        cuts.push(cut_gap(
            "rules",
            format!(
                "the rules of {} policies: more than {} (the others' rules not read)",
                read.rules.len(),
                roots * max
            ),
        ));
        read.rules.truncate(roots * max);
    }
    for pr in &mut read.rules {
        bound_strings(&mut pr.policy, MAX_STRING_CHARS);
        cuts.extend(cap_listed(&mut pr.rules, max, "rules of a policy"));
    }
    if let Some(was) = cap_map(&mut read.groups, MAX_GROUPS) {
        cuts.push(cut_gap(
            "groups",
            format!("{was} groups: more than {MAX_GROUPS} (the others not read)"),
        ));
    }
    read.groups
        .values_mut()
        .for_each(|v| bound_strings(v, MAX_STRING_CHARS));
    if let Some(was) = cap_map(&mut read.members, MAX_GROUPS) {
        cuts.push(cut_gap(
            "members",
            format!("the members of {was} groups: more than {MAX_GROUPS} (the others not read)"),
        ));
    }
    for m in read.members.values_mut() {
        for l in [
            &mut m.ip_addresses,
            &mut m.virtual_machines,
            &mut m.segment_ports,
        ]
        .into_iter()
        .flatten()
        {
            cuts.extend(cap_listed(l, max, "members of a group"));
        }
        m.gaps.truncate(MAX_GAPS);
    }
    if let Some(was) = cap_map(&mut read.services, MAX_SERVICES) {
        cuts.push(cut_gap(
            "services",
            format!("{was} services: more than {MAX_SERVICES} (the others not read)"),
        ));
    }
    read.services
        .values_mut()
        .for_each(|v| bound_strings(v, MAX_STRING_CHARS));
    read.vms.truncate(MAX_TARGETS);
    for v in &mut read.vms {
        // The fabric VMs of a hint, their VIFs' ports, the ports found by attachment.
        let most = MAX_VMS_PER_HINT * (1 + MAX_VIFS_PER_VM) + MAX_VIFS_PER_VM;
        v.found.truncate(most);
        v.found
            .iter_mut()
            .for_each(|f| bound_strings(f, MAX_STRING_CHARS));
        v.asked.truncate(most);
        v.gaps.truncate(MAX_GAPS);
        // Per tree, the fabric VMs' external ids and the ports' paths asked at most.
        let asks = association_roots(&read.layout).len() * (MAX_VMS_PER_HINT + MAX_PORTS_PER_VM);
        if v.associations.len() > asks {
            // An association not kept is one not asked: its tree is not whole for the VM, so
            // no group of it is taken as not holding the VM (`model::Memberships`).
            cuts.push(cut_gap(
                "group associations",
                format!(
                    "{} asked for {}: more than {asks} (the others not read)",
                    v.associations.len(),
                    v.node
                ),
            ));
            v.associations.truncate(asks);
        }
        // Each list cut is its own `incomplete`; the reading's gaps say the first (one per VM,
        // not one per list: the gaps are few).
        let mut listed_cuts = Vec::new();
        for a in &mut v.associations {
            a.root = super::model::clip(&a.root, MAX_STRING_CHARS);
            a.by = super::model::clip(&a.by, MAX_STRING_CHARS);
            a.key = super::model::clip(&a.key, MAX_STRING_CHARS);
            listed_cuts.extend(cap_listed(&mut a.listed, max, "group associations of a VM"));
        }
        cuts.extend(listed_cuts.into_iter().next());
    }
    if let Some(e) = &mut read.enforcement {
        cuts.extend(rebound_enforcement(e, max));
    }
    if let Some(s) = &mut read.statistics {
        cuts.extend(rebound_statistics(s));
    }
    if let Some(v) = &mut read.vpc_security {
        rebound_vpc_security(v);
    }
    read.traceflows.truncate(MAX_TRACEFLOWS);
    for t in &mut read.traceflows {
        if let Some(s) = &mut t.status {
            bound_strings(s, MAX_STRING_CHARS);
        }
        cuts.extend(cap_listed(
            &mut t.observations,
            max,
            "traceflow observations",
        ));
        t.gaps.truncate(MAX_GAPS);
    }
    // The cuts first: they are what makes the rest incomplete.
    if !cuts.is_empty() {
        cuts.truncate(MAX_GAPS / 2);
        cuts.append(&mut read.gaps);
        read.gaps = cuts;
    }
    read.gaps.truncate(MAX_GAPS + 1);
}

/// The exclusion list's members a live run looks at (per field, `enforce::exclude_members`),
/// and the groups it follows: what a bundle's enforcement reading is cut to. A cut list still
/// has more than [`MAX_EXCLUDE_MEMBERS`] members, so the VMs stay "cannot be told" past them.
fn rebound_enforcement(e: &mut EnforcementRead, max: usize) -> Vec<Gap> {
    let mut cuts = Vec::new();
    // The VPC's project's own list is bounded as the provider's is.
    let project = e.project.as_mut();
    if let Some(p) = project {
        p.project = clip(&p.project, MAX_STRING_CHARS);
        if let Some(g) = p.gap.as_mut() {
            g.path = clip(&g.path, MAX_STRING_CHARS);
            g.why = clip(&g.why, MAX_STRING_CHARS);
            g.privilege = g.privilege.as_deref().map(|v| clip(v, MAX_STRING_CHARS));
        }
        if let Some(v) = p.list.as_mut() {
            bound_strings(v, MAX_STRING_CHARS);
            cuts.extend(bound_exclude_members(v, "project exclude-list"));
        }
    }
    for v in [&mut e.settings, &mut e.exclude_list].into_iter().flatten() {
        bound_strings(v, MAX_STRING_CHARS);
    }
    if let Some(v) = e.exclude_list.as_mut() {
        cuts.extend(bound_exclude_members(v, "exclude-list"));
    }
    if let Some(was) = cap_map(&mut e.groups, MAX_EXCLUDE_MEMBERS) {
        cuts.push(cut_gap(
            "exclude-list groups",
            format!(
                "the members of {was} excluded groups: more than {MAX_EXCLUDE_MEMBERS} (the others not read)"
            ),
        ));
    }
    // Each group's cut is its own gap; the reading's gaps say the first.
    let mut member_cuts = Vec::new();
    for m in e.groups.values_mut() {
        member_cuts.extend(cap_members(m, max, "members of an excluded group"));
    }
    cuts.extend(member_cuts.into_iter().next());
    cuts
}

/// An exclusion list's `members` and `system_members` cut to what a live run looks at.
fn bound_exclude_members(list: &mut serde_json::Value, what: &str) -> Vec<Gap> {
    let mut cuts = Vec::new();
    let most = 4 * MAX_EXCLUDE_MEMBERS;
    for field in ["members", "system_members"] {
        let Some(l) = list
            .get_mut(field)
            .and_then(serde_json::Value::as_array_mut)
        else {
            continue;
        };
        if l.len() > most {
            cuts.push(cut_gap(
                what,
                format!(
                    "{} {field}: more than {most} (the others not looked at)",
                    l.len()
                ),
            ));
            l.truncate(most);
        }
    }
    cuts
}

/// A group's member lists cut to `max` objects each; a cut is also the group's own gap (first),
/// as the live reader records a list it could not read whole, so the group's members are not
/// taken as whole.
fn cap_members(m: &mut Members, max: usize, what: &str) -> Vec<Gap> {
    let mut cuts = Vec::new();
    for l in [
        &mut m.ip_addresses,
        &mut m.virtual_machines,
        &mut m.segment_ports,
    ]
    .into_iter()
    .flatten()
    {
        cuts.extend(cap_listed(l, max, what));
    }
    m.gaps.truncate(MAX_GAPS);
    if let Some(g) = cuts.first() {
        m.gaps.insert(0, g.clone());
    }
    cuts
}

/// The statistics of at most [`MAX_STATISTICS_POLICIES`] policies, as a live run reads them; a
/// policy cut has its counters "not read" (said with the statistics' gaps).
fn rebound_statistics(s: &mut StatisticsRead) -> Option<Gap> {
    for p in &mut s.policies {
        p.path = super::model::clip(&p.path, MAX_STRING_CHARS);
        for v in [&mut p.before, &mut p.after].into_iter().flatten() {
            bound_strings(v, MAX_STRING_CHARS);
        }
    }
    s.gaps.truncate(MAX_GAPS);
    if s.policies.len() <= MAX_STATISTICS_POLICIES {
        return None;
    }
    let g = cut_gap(
        "statistics",
        format!(
            "the statistics of {} policies: more than {MAX_STATISTICS_POLICIES} (the others not read)",
            s.policies.len()
        ),
    );
    s.policies.truncate(MAX_STATISTICS_POLICIES);
    s.gaps.insert(0, g.clone());
    Some(g)
}

/// The VPC's security profile and strategy (evidence only), their strings bounded.
fn rebound_vpc_security(v: &mut VpcSecurity) {
    for o in [&mut v.profile, &mut v.strategy].into_iter().flatten() {
        bound_strings(o, MAX_STRING_CHARS);
    }
    v.gaps.truncate(MAX_GAPS);
}

/// The parts of a reading [`fit`] cuts, each a list of entries whose sizes it measures once.
const PARTS: usize = 11;

/// The parts' names, as a cut says them.
const NAMES: [&str; PARTS] = [
    "security-policies",
    "rules",
    "groups",
    "members",
    "services",
    "vms",
    "traceflows",
    "exclude-list groups",
    "statistics",
    "exclude-list and DFW settings",
    "vpc security",
];

/// The enforcement reading's own answers (the settings and the exclusion list), one entry.
fn enforcement_answers(r: &NsxRead) -> Option<[&serde_json::Value; 3]> {
    let e = r.enforcement.as_ref()?;
    let null = &serde_json::Value::Null;
    let project = e.project.as_ref().and_then(|p| p.list.as_ref());
    (e.settings.is_some() || e.exclude_list.is_some() || project.is_some()).then(|| {
        [
            e.settings.as_ref().unwrap_or(null),
            e.exclude_list.as_ref().unwrap_or(null),
            project.unwrap_or(null),
        ]
    })
}

/// Each entry's size (pretty JSON) of each part: the policies listed, the rules read, the
/// groups, their members, the services, the VMs (their associations with them), the
/// traceflows, the excluded groups' members, the statistics per policy, the settings and the
/// exclusion list (one entry), the VPC's security (one entry).
fn entry_sizes(r: &NsxRead) -> [Vec<usize>; PARTS] {
    fn each<T: serde::Serialize>(it: impl Iterator<Item = T>) -> Vec<usize> {
        it.map(|v| serde_json::to_vec_pretty(&v).map_or(usize::MAX / 8, |b| b.len() + 8))
            .collect()
    }
    let enforcement = r.enforcement.as_ref();
    [
        each(r.policies.results.iter()),
        each(r.rules.iter()),
        each(r.groups.iter()),
        each(r.members.iter()),
        each(r.services.iter()),
        each(r.vms.iter()),
        each(r.traceflows.iter()),
        each(enforcement.into_iter().flat_map(|e| e.groups.iter())),
        each(r.statistics.iter().flat_map(|s| s.policies.iter())),
        each(enforcement_answers(r).into_iter()),
        each(r.vpc_security.iter()),
    ]
}

/// `read` with only the first `keep[p]` entries of each part (only those copied), each cut
/// said after `gaps`, and where the part has its own gaps there too (what reads it then says
/// "not read", never "no").
fn kept(read: &NsxRead, gaps: &[Gap], keep: &[usize; PARTS], why: &str) -> NsxRead {
    fn first<V: Clone>(
        m: &std::collections::BTreeMap<String, V>,
        n: usize,
    ) -> std::collections::BTreeMap<String, V> {
        m.iter()
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
    let mut out_gaps = gaps.to_vec();
    let lens = [
        read.policies.results.len(),
        read.rules.len(),
        read.groups.len(),
        read.members.len(),
        read.services.len(),
        read.vms.len(),
        read.traceflows.len(),
        read.enforcement.as_ref().map_or(0, |e| e.groups.len()),
        read.statistics.as_ref().map_or(0, |s| s.policies.len()),
        usize::from(enforcement_answers(read).is_some()),
        usize::from(read.vpc_security.is_some()),
    ];
    let cut = |p: usize| keep[p] < lens[p];
    let said = |p: usize| cut_gap(NAMES[p], format!("{} kept as {}: {why}", lens[p], keep[p]));
    for p in 0..PARTS {
        if cut(p) {
            out_gaps.push(said(p));
        }
    }
    let mut policies = Listed {
        results: read.policies.results[..keep[0].min(lens[0])].to_vec(),
        result_count: read.policies.result_count,
        incomplete: read.policies.incomplete.clone(),
    };
    if cut(0) {
        policies
            .incomplete
            .get_or_insert_with(|| cut_gap("security-policies", why.to_string()));
    }
    let enforcement = read.enforcement.as_ref().map(|e| {
        // A group not kept is one whose members were not read ("cannot be told").
        let mut e = EnforcementRead {
            groups: first(&e.groups, keep[7]),
            ..e.clone()
        };
        if cut(9) {
            // Not read is unknown, never "enabled" or "not excluded" (`enforce::dfw_state`,
            // `enforce::excluded`).
            if e.settings.take().is_some() {
                e.settings_gap = Some(said(9));
            }
            if e.exclude_list.take().is_some() {
                e.exclude_list_gap = Some(said(9));
                e.groups.clear();
            }
            if let Some(p) = e.project.as_mut().filter(|p| p.list.is_some()) {
                p.list = None;
                p.gap = Some(said(9));
                e.groups.clear();
            }
        }
        e
    });
    let statistics = read.statistics.as_ref().map(|s| {
        let mut s = StatisticsRead {
            policies: s.policies[..keep[8].min(lens[8])].to_vec(),
            gaps: s.gaps.clone(),
        };
        if cut(8) {
            s.gaps.insert(0, said(8));
        }
        s
    });
    let vpc_security = read.vpc_security.as_ref().map(|v| {
        if cut(10) {
            VpcSecurity {
                profile: None,
                strategy: None,
                gaps: vec![said(10)],
            }
        } else {
            v.clone()
        }
    });
    NsxRead {
        manager: read.manager.clone(),
        layout: read.layout.clone(),
        auth: read.auth.clone(),
        policies,
        rules: read.rules[..keep[1].min(lens[1])].to_vec(),
        groups: first(&read.groups, keep[2]),
        members: first(&read.members, keep[3]),
        services: first(&read.services, keep[4]),
        vms: read.vms[..keep[5].min(lens[5])].to_vec(),
        traceflows: read.traceflows[..keep[6].min(lens[6])].to_vec(),
        vpc_security,
        gaps: out_gaps,
        enforcement,
        statistics,
    }
}

/// `read` as the bundle's `nsx-manager.json` (pretty JSON and a newline), at most `max` bytes:
/// while it is larger, the largest of its parts (the policies, the rules, the groups, their
/// members, the services, the VMs, the traceflows, the excluded groups' members, the
/// statistics, the exclusion list and settings, the VPC's security) is cut by half, each cut said as a gap, so
/// the plugin's own bundle always passes `analyse`'s per-entry cap. What was cut is what
/// `analyse` cannot decide on (the live report was judged on the whole reading). At worst
/// nothing but the gaps is kept. Each entry is measured once; the result is checked, and cut
/// further should the measure have been short. `None` only when even the gaps alone are over
/// `max` (a `max` of a few bytes).
pub(crate) fn fit(read: &NsxRead, max: usize) -> Option<Vec<u8>> {
    let encode = |r: &NsxRead| {
        let mut b = serde_json::to_vec_pretty(r).ok()?;
        b.push(b'\n');
        Some(b)
    };
    let bytes = encode(read)?;
    if bytes.len() <= max {
        return Some(bytes);
    }
    let why = format!(
        "cut to fit the bundle's {} MiB per entry (the live run judged the whole reading)",
        max / (1024 * 1024)
    );
    let mut gaps = vec![cut_gap("the reading", why.clone())];
    gaps.extend(read.gaps.iter().take(MAX_GAPS / 2).cloned());
    let sizes = entry_sizes(read);
    let empty = kept(read, &gaps, &[0; PARTS], &why);
    let fixed = encode(&empty)?.len();
    let mut target = max;
    for _ in 0..16 {
        let mut keep: [usize; PARTS] = std::array::from_fn(|p| sizes[p].len());
        let total = |keep: &[usize; PARTS]| -> usize {
            fixed
                + (0..PARTS)
                    .map(|p| sizes[p][..keep[p]].iter().sum::<usize>())
                    .sum::<usize>()
        };
        while total(&keep) > target {
            let largest = (0..PARTS)
                .filter(|p| keep[*p] > 0)
                .max_by_key(|p| sizes[*p][..keep[*p]].iter().sum::<usize>());
            match largest {
                Some(p) => keep[p] /= 2,
                None => break,
            }
        }
        let r = kept(read, &gaps, &keep, &why);
        let bytes = encode(&r)?;
        if bytes.len() <= max {
            return Some(bytes);
        }
        if keep.iter().all(|k| *k == 0) {
            break;
        }
        target = target / 4 * 3;
    }
    // Nothing but the gaps.
    let mut bare = super::read::unread(&read.manager, &read.layout, cut_gap("the reading", why));
    bare.gaps.extend(read.gaps.iter().take(MAX_GAPS).cloned());
    while encode(&bare)?.len() > max {
        if bare.gaps.len() <= 1 {
            return None;
        }
        bare.gaps.pop();
    }
    encode(&bare)
}

#[cfg(test)]
pub(crate) mod tests;
