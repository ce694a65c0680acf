//! What one node's member list can make the verdict say. Each list is its node's
//! word: a claim about a member (a stray to remove, a learner that never caught up, a Machine
//! whose node is no member) needs a majority of the lists read, and the own list of the node it
//! is about where that node answered; a list that departs from them is a note about that list.
//! IDs are numbers: `0<id>` is no other member. Output bounded whatever the lists hold.

use super::tests::*;
use super::*;
use crate::probe::output::*;
use crate::supervisor::*;
use crate::testing::facts_with_vms;

/// The members of the three nodes as etcd lists them (IDs of the lab's fixture
/// no-quorum-own-view), at 198.18.0.11-13.
const IDS: [&str; 3] = ["71ea0ea03f1cc0b1", "a0efed2619cd10db", "14569749fa01776e"];

fn member(id: &str, name: &str, ip: &str, learner: bool) -> Member {
    Member {
        id: Some(id.parse().unwrap()),
        name: Some(name.into()),
        peer_urls: vec![format!("https://{ip}:2380")],
        client_urls: vec![format!("https://{ip}:2379")],
        is_learner: learner,
    }
}

/// The three real members, as every honest list has them.
fn real() -> Vec<Member> {
    (0..3)
        .map(|i| member(IDS[i], NAMES[i], IPS[i], false))
        .collect()
}

fn list(members: Vec<Member>) -> Members {
    Members {
        outcome: QueryOutcome::Ok,
        http_status: Some(200),
        cluster_id: Some("e3fee805b34935c9".into()),
        members,
        truncated: false,
        ms: Some(2),
        detail: None,
    }
}

/// Three healthy nodes, each with its own list as `lists` gives it (None: not asked).
fn probes(lists: [Option<Vec<Member>>; 3]) -> Vec<ProbeOutput> {
    let mut p = healthy3();
    for (x, l) in p.iter_mut().zip(lists) {
        if let Some(l) = l {
            x.members = list(l);
        }
    }
    p
}

fn judge(p: Vec<ProbeOutput>) -> Verdict {
    diagnose(&facts_with_vms(3), &cluster(p), DEFAULT_SINCE).verdict
}

/// No step removes a member, and no healthy node is what the verdict is about (the node whose
/// own document is wrong may be).
fn assert_names_no_healthy_node(v: &Verdict) {
    assert!(
        !v.next_steps.iter().any(|s| s.contains("member remove")),
        "{v:#?}"
    );
    assert!(v.nodes.iter().all(|n| n == "cp1"), "{v:#?}");
    assert!(
        !v.evidence.iter().any(
            |l| ["cp2", "cp3", IDS[1], IDS[2]].iter().any(|h| l.contains(h))
                && !l.starts_with("cp1's probe document")
        ),
        "{v:#?}"
    );
}

fn note_with(v: &Verdict, parts: &[&str]) -> bool {
    v.notes.iter().any(|n| parts.iter().all(|p| n.contains(p)))
}

/// Through the real parser: cp1's document lists cp2's ID behind a leading zero at a foreign
/// URL. Read as "another" member it would give `EtcdMemberMismatch` and the step `etcdctl member
/// remove 0a0efed2619cd10db`, which etcdctl reads (strconv.ParseUint(arg, 16, 64)) as cp2's own
/// ID: it would remove the healthy member.
#[test]
fn a_healthy_peers_id_behind_a_leading_zero_is_no_member_and_no_removal() {
    let mut docs = Vec::new();
    for (i, mut p) in probes([Some(real()), Some(real()), Some(real())])
        .into_iter()
        .enumerate()
    {
        if i == 0 {
            let mut evil = member(IDS[1], "tkc-prod-evil", "203.0.113.9", false);
            evil.id = None;
            p.members.members.push(evil);
        }
        // As the node prints it (schemaVersion first), the entry's ID written by hand.
        let text = serde_json::to_string(&p).unwrap().replace(
            r#""id":null,"name":"tkc-prod-evil""#,
            &format!(r#""id":"0{}","name":"tkc-prod-evil""#, IDS[1]),
        );
        docs.push(crate::probe::parse::parse(NAMES[i], text.as_bytes()).unwrap());
    }
    assert_eq!(docs[0].members.members[3].id, None);
    let v = judge(docs);
    assert_names_no_healthy_node(&v);
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    // Never Healthy on such a document: it is a finding about cp1's document.
    assert_eq!(v.code, VerdictCode::Inconclusive, "{v:#?}");
    assert!(
        v.evidence.iter().any(|e| e
            .starts_with("cp1's probe document: member ID \"0a0efed2619cd10db\"")
            && e.contains("etcdctl would read it as a0efed2619cd10db")),
        "{v:#?}"
    );
    assert!(
        v.summary
            .contains("the probe document of cp1 is not what the probe prints"),
        "{v:#?}"
    );
    // The same entry with a canonical ID of its own is cp1's word alone: a note, no removal.
    let mut p = probes([Some(real()), Some(real()), Some(real())]);
    p[0].members
        .members
        .push(member("5ca1ab1e", "tkc-prod-evil", "203.0.113.9", false));
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert_names_no_healthy_node(&v);
    assert!(
        note_with(
            &v,
            &[
                "cp1's member list disagrees with the majority (2 of 3 lists read do not list it)",
                "member 5ca1ab1e (tkc-prod-evil, peer URL https://203.0.113.9:2380)"
            ]
        ),
        "{v:#?}"
    );
}

/// One list's word about another node: cp2 a learner, cp3's real ID at a foreign URL, cp2 no
/// member at all. Before, the first named cp2 as the problem (EtcdMemberMismatch, nodes [cp2]):
/// the merge took the first list's entry for each ID; the second proposed removing cp3's
/// member (its first-seen URL was no VM's).
#[test]
fn one_list_alone_names_no_other_node() {
    type Edit = Box<dyn Fn(&mut Vec<Member>)>;
    let cases: [(&str, Edit, &str); 3] = [
        (
            "cp2 a learner",
            Box::new(|l: &mut Vec<Member>| l[1].is_learner = true),
            "about member a0efed2619cd10db (cp2, peer URL https://198.18.0.12:2380): it lists it at https://198.18.0.12:2380 as a learner",
        ),
        (
            "cp3's ID at a foreign URL",
            Box::new(|l: &mut Vec<Member>| {
                l[2].peer_urls = vec!["https://203.0.113.9:2380".into()]
            }),
            "about member 14569749fa01776e (cp3, peer URL https://198.18.0.13:2380): it lists it at https://203.0.113.9:2380 as a voting member",
        ),
        (
            "cp2 left out",
            Box::new(|l: &mut Vec<Member>| {
                l.remove(1);
            }),
            "about member a0efed2619cd10db (cp2, peer URL https://198.18.0.12:2380): it does not list it",
        ),
    ];
    for (what, edit, about) in cases {
        let mut own = real();
        edit(&mut own);
        let v = judge(probes([Some(own), Some(real()), Some(real())]));
        assert_eq!(v.code, VerdictCode::Healthy, "{what}: {v:#?}");
        assert_names_no_healthy_node(&v);
        assert!(
            note_with(
                &v,
                &["cp1's member list disagrees with the majority", about]
            ),
            "{what}: {v:#?}"
        );
    }
}

/// With two lists read, one is no majority: neither list alone proposes a removal; both do.
#[test]
fn two_lists_read_both_must_agree() {
    let stray = || member("5ca1ab1e", "cp4", "198.18.0.14", false);
    let mut one = real();
    one.push(stray());
    let v = judge(probes([Some(one.clone()), Some(real()), None]));
    assert_names_no_healthy_node(&v);
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    let v = judge(probes([Some(one.clone()), Some(one), None]));
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.next_steps[0].contains("etcdctl member remove 5ca1ab1e"),
        "{v:#?}"
    );
}

/// The node a claim is about has the last word on itself when it answered: two lists saying
/// cp3 is a learner while cp3's own says not is no claim; with cp3's list not read, it is.
#[test]
fn a_nodes_own_list_has_the_last_word_on_itself() {
    let mut learner = real();
    learner[2].is_learner = true;
    let v = judge(probes([
        Some(learner.clone()),
        Some(learner.clone()),
        Some(real()),
    ]));
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert!(
        note_with(
            &v,
            &[
                "member 14569749fa01776e",
                "is at cp3, whose own list lists it otherwise"
            ]
        ),
        "{v:#?}"
    );
    let v = judge(probes([Some(learner.clone()), Some(learner), None]));
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    // A Machine whose node is no member: the majority and its own list must agree.
    let mut without = real();
    without.remove(2);
    let v = judge(probes([
        Some(without.clone()),
        Some(without.clone()),
        Some(real()),
    ]));
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    let v = judge(probes([
        Some(without.clone()),
        Some(without.clone()),
        Some(without),
    ]));
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert!(
        v.evidence[0].starts_with(
            "cp3: its Machine's VM (198.18.0.13) is no etcd member in 3 of the 3 member lists read, its own included"
        ),
        "{v:#?}"
    );
}

/// Strays every list agrees on (61, to the probe's 64 a list): a few removal steps and "and N
/// more", evidence and notes bounded; never a real member's ID in a step.
#[test]
fn removal_steps_and_lines_are_bounded() {
    let mut all = real();
    for i in 0..61u32 {
        all.push(member(
            &format!("{:x}", 0x5ca1_ab1e_u64 + u64::from(i)),
            "stray",
            &format!("203.0.113.{i}"),
            false,
        ));
    }
    let v = judge(probes([Some(all.clone()), Some(all.clone()), Some(all)]));
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    let removals: Vec<&String> = v
        .next_steps
        .iter()
        .filter(|s| s.contains("etcdctl member remove"))
        .collect();
    assert_eq!(removals.len(), members::MAX_REMOVALS, "{v:#?}");
    assert!(removals
        .iter()
        .all(|s| !IDS.iter().any(|id| s.contains(id))));
    assert!(
        v.next_steps
            .iter()
            .any(|s| s.starts_with("and 56 more members without a Machine")),
        "{v:#?}"
    );
    assert!(v.evidence.len() <= members::MAX_LINES + 2, "{v:#?}");
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("and 50 more membership problems")),
        "{v:#?}"
    );
    assert!(v.notes.len() <= members::MAX_LINES + 4, "{v:#?}");
}

/// Each list full of members of its own (64 × 3, none agreed): notes bounded, no claim, and
/// judged at once (the lists are indexed by ID once per verdict).
#[test]
fn lists_of_their_own_are_notes_bounded() {
    let own = |k: u64| -> Vec<Member> {
        let mut l = real();
        for i in 0..61u64 {
            l.push(member(
                &format!("{:x}", (k << 32) + i + 1),
                "x",
                &format!("203.0.{k}.{i}"),
                false,
            ));
        }
        l
    };
    let started = crate::testing::cpu_time();
    let v = judge(probes([Some(own(1)), Some(own(2)), Some(own(3))]));
    assert!(crate::testing::cpu_time() - started < std::time::Duration::from_secs(5));
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert_names_no_healthy_node(&v);
    // One note per list, naming a few of its members and counting the rest.
    assert_eq!(v.notes.len(), 3, "{v:#?}");
    for (i, note) in v.notes.iter().enumerate() {
        assert!(
            note.starts_with(&format!(
                "cp{}'s member list disagrees with the majority (2 of 3 lists read do not list them) about member {}00000001 (x, peer URL https://203.0.{}.0:2380)",
                i + 1,
                i + 1,
                i + 1
            )) && note.ends_with("and 56 more members: not judged on its word"),
            "{note}"
        );
    }

    // The strays every list has, each a learner in cp1's list alone: one note per member
    // (the majority's entry and cp1's), bounded.
    let mut all = real();
    for i in 0..61u64 {
        all.push(member(
            &format!("{:x}", 0x5ca1_ab1e + i),
            "stray",
            &format!("203.0.113.{i}"),
            false,
        ));
    }
    let mut learners = all.clone();
    for m in &mut learners[3..] {
        m.is_learner = true;
    }
    let v = judge(probes([Some(learners), Some(all.clone()), Some(all)]));
    let about: Vec<&String> = v
        .notes
        .iter()
        .filter(|n| n.starts_with("cp1's member list disagrees"))
        .collect();
    assert_eq!(about.len(), members::MAX_LINES - 1, "{v:#?}");
    assert!(
        v.notes
            .iter()
            .any(|n| n == "and 50 more notes on the member lists"),
        "{v:#?}"
    );
}

/// A list of another cluster (its node named for the cluster ID) does not vote on this
/// cluster's members.
#[test]
fn a_list_of_another_cluster_does_not_vote() {
    let mut p = probes([Some(real()), Some(real()), Some(real())]);
    p[2].members.cluster_id = Some("c2".into());
    p[2].members.members = vec![member("c0ffee", "cp3", IPS[2], false)];
    let v = judge(p);
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(v.nodes, ["cp3"]);
    assert!(v.evidence[0].starts_with("the members do not agree on the cluster"));
    assert!(
        !v.next_steps.iter().any(|s| s.contains("member remove")),
        "{v:#?}"
    );
}

/// One list read (the others' not asked): it never names another node nor proposes a removal
/// on its own. cp2's real ID at a foreign URL is a stray by that list alone: a warning note
/// asking for a second list; where cp2's own etcd log says that ID is its own, a note that says
/// so. A learner by that one list is a note, not cp2 named.
#[test]
fn the_only_list_read_names_no_other_node_and_removes_nothing() {
    let mut own = real();
    own[1].peer_urls = vec!["https://203.0.113.9:2380".into()];
    own[1].name = Some("tkc-prod-evil".into());
    let v = judge(probes([Some(own.clone()), None, None]));
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert_names_no_healthy_node(&v);
    assert!(
        note_with(
            &v,
            &[
                "warning: member a0efed2619cd10db (tkc-prod-evil, peer URL https://203.0.113.9:2380; listed by cp1): no control-plane Machine's VM has its address, by the only member list read: not judged on one list's word"
            ]
        ),
        "{v:#?}"
    );
    // cp2's log: etcd's own line naming its member ID (local-member-id).
    let line = format!(
        r#"{{"level":"info","ts":"2025-12-02T07:59:00.000Z","caller":"etcdserver/server.go:2000","msg":"published local member to cluster through raft","local-member-id":"{}","cluster-id":"e3fee805b34935c9"}}"#,
        IDS[1]
    );
    let mut p = probes([Some(own), None, None]);
    p[1] = with_log(p[1].clone(), &line);
    let v = judge(p);
    assert_ne!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_names_no_healthy_node(&v);
    assert!(
        note_with(
            &v,
            &[
                "member a0efed2619cd10db",
                "is cp2's own member ID by its etcd log"
            ]
        ),
        "{v:#?}"
    );
    // A learner by the only list read.
    let mut own = real();
    own[1].is_learner = true;
    let v = judge(probes([Some(own), None, None]));
    assert_eq!(v.code, VerdictCode::Healthy, "{v:#?}");
    assert_names_no_healthy_node(&v);
    assert!(
        note_with(&v, &["a learner on cp2 by this one list alone"]),
        "{v:#?}"
    );
}

/// The lists are read and judged once per verdict, however many rules, notes and nodes'
/// `MemberRemoved` findings ask: each reading is a linear merge of every list.
#[test]
fn the_lists_are_read_and_judged_once_per_verdict() {
    // Every node's log rejects a removed member (MemberRemoved on each), with a rollout deleting
    // a fourth Machine: each node's check asks the lists for that member's address.
    let rejected = r#"{"level":"warn","ts":"2025-12-02T07:59:00.000Z","caller":"rafthttp/http.go:500","msg":"rejected stream from remote peer because it was removed","local-member-id":"aaaa1","remote-peer-id-stream-handler":"aaaa1","remote-peer-id-from":"5ca1ab1e"}"#;
    let mut p = probes([Some(real()), Some(real()), Some(real())]);
    for x in p.iter_mut() {
        *x = with_log(x.clone(), rejected);
    }
    let mut facts = facts_with_vms(4);
    facts.nodes[3].machine.as_mut().unwrap().rollout = Some(RolloutPhase::Deleting {
        since: Some("2026-12-04T07:58:00Z".into()),
        machine_phase: Some("Deleting".into()),
    });
    members::RUNS.with(|r| r.set((0, 0)));
    let v = diagnose(&facts, &cluster(p), DEFAULT_SINCE).verdict;
    assert_eq!(v.code, VerdictCode::EtcdMemberMismatch, "{v:#?}");
    assert_eq!(members::RUNS.with(|r| r.get()), (1, 1));
}

/// One view of membership: cp1's member list forges cp3's ID at cp1's own address, and cp1's
/// list comes first. The majority (cp2's and cp3's lists) puts that ID at cp3, so cp2's
/// episodes about it stay on cp2↔cp3, the pair that fails: never moved onto cp2↔cp1, which
/// does not fail (the verdict, the metrics and the timeline share the majority's view).
#[test]
fn a_forged_member_entry_moves_no_episode() {
    use crate::analyse::timeline::tests as tl;
    let fails = |i: usize| -> Vec<usize> {
        match i {
            2 => vec![0, 1],
            _ => vec![2],
        }
    };
    let list = |forged: bool| Members {
        outcome: QueryOutcome::Ok,
        http_status: Some(200),
        cluster_id: Some("73841b4a9097c907".into()),
        members: (0..3)
            .map(|j| Member {
                id: Some(tl::IDS[j].parse().unwrap()),
                name: Some(tl::NAMES[j].into()),
                // The forger says cp3's member is at its own address.
                peer_urls: vec![format!(
                    "https://{}:2380",
                    if forged && j == 2 {
                        tl::IPS[0]
                    } else {
                        tl::IPS[j]
                    }
                )],
                client_urls: vec![],
                is_learner: false,
            })
            .collect(),
        truncated: false,
        ms: Some(2),
        detail: None,
    };
    let nodes: Vec<NodeReport> = (0..3)
        .map(|i| {
            let mut n = tl::node(
                i,
                Some(0),
                &tl::fixture(&format!("cp3-isolated-cp{}.log", i + 1)),
                &fails(i),
            );
            if let Ok(p) = &mut n.outcome {
                p.members = list(i == 0);
            }
            n
        })
        .collect();
    let d = diagnose(
        &crate::testing::facts(3, 3, vec![]),
        &nodes,
        std::time::Duration::from_secs(24 * 3600),
    );
    let t = &d.timeline;
    let pairs: Vec<(&str, &str)> = t
        .pairs
        .iter()
        .map(|p| (p.from.as_str(), p.to.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("cp1", "cp3"),
            ("cp2", "cp3"),
            ("cp3", "cp1"),
            ("cp3", "cp2")
        ],
        "{t:#?}"
    );
    // cp2's own log saw cp3 go: its onset is on cp2↔cp3.
    let cp2_cp3 = t
        .pairs
        .iter()
        .find(|p| p.from == "cp2" && p.to == "cp3")
        .unwrap();
    assert!(cp2_cp3.seen_by_from.is_some(), "{t:#?}");
}
