//! The NSX reading's caps, held by every reading whatever made it. The live reader holds them
//! as it reads ([`super::client::Limits`], [`super::read`]'s `MAX_*`); a bundle's
//! `nsx-manager.json` is anyone's file, so `analyse` cuts it to the same caps before judging it
//! ([`rebound`]), and the writer cuts a reading to the bundle's per-entry cap before writing it
//! ([`fit`]), so that `analyse` accepts the plugin's own bundle. Every cut is a [`Gap`] in the
//! reading: the evaluation turns it into "cannot decide" and says it, never a guess.

use super::client::{bound_strings, Limits, MAX_STRING_CHARS};
use super::raw::{Gap, Listed, NsxRead};
use super::read::{
    policy_roots, MAX_GAPS, MAX_GROUPS, MAX_SERVICES, MAX_VIFS_PER_VM, MAX_VMS_PER_HINT,
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
pub fn rebound(read: &mut NsxRead, limits: &Limits) {
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

/// The parts of a reading [`fit`] cuts, each a list of entries whose sizes it measures once.
const PARTS: usize = 7;

/// Each entry's size (pretty JSON) of each part: the policies listed, the rules read, the
/// groups, their members, the services, the VMs, the traceflows.
fn entry_sizes(r: &NsxRead) -> [Vec<usize>; PARTS] {
    fn each<T: serde::Serialize>(it: impl Iterator<Item = T>) -> Vec<usize> {
        it.map(|v| serde_json::to_vec_pretty(&v).map_or(usize::MAX / 8, |b| b.len() + 8))
            .collect()
    }
    [
        each(r.policies.results.iter()),
        each(r.rules.iter()),
        each(r.groups.iter()),
        each(r.members.iter()),
        each(r.services.iter()),
        each(r.vms.iter()),
        each(r.traceflows.iter()),
    ]
}

/// `read` with only the first `keep[p]` entries of each part (only those copied), each cut
/// said after `gaps`.
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
    ];
    let names = [
        "security-policies",
        "rules",
        "groups",
        "members",
        "services",
        "vms",
        "traceflows",
    ];
    for p in 0..PARTS {
        if keep[p] < lens[p] {
            out_gaps.push(cut_gap(
                names[p],
                format!("{} kept as {}: {why}", lens[p], keep[p]),
            ));
        }
    }
    let mut policies = Listed {
        results: read.policies.results[..keep[0].min(lens[0])].to_vec(),
        result_count: read.policies.result_count,
        incomplete: read.policies.incomplete.clone(),
    };
    if keep[0] < lens[0] {
        policies
            .incomplete
            .get_or_insert_with(|| cut_gap("security-policies", why.to_string()));
    }
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
        vpc_security: read.vpc_security.clone(),
        gaps: out_gaps,
        enforcement: read.enforcement.clone(),
        statistics: read.statistics.clone(),
    }
}

/// `read` as the bundle's `nsx-manager.json` (pretty JSON and a newline), at most `max` bytes:
/// while it is larger, the largest of its parts (the policies, the rules, the groups, their
/// members, the services, the VMs, the traceflows) is cut by half, each cut said as a gap, so
/// the plugin's own bundle always passes `analyse`'s per-entry cap. What was cut is what
/// `analyse` cannot decide on (the live report was judged on the whole reading). At worst
/// nothing but the gaps is kept. Each entry is measured once; the result is checked, and cut
/// further should the measure have been short. `None` only when even the gaps alone are over
/// `max` (a `max` of a few bytes).
pub fn fit(read: &NsxRead, max: usize) -> Option<Vec<u8>> {
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
