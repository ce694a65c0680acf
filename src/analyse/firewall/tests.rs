//! The engine alone, on rule sets written here: the order, the three answers, the bounds.

use super::*;

/// A rule of a test source: its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct R(Action);

impl Verdict for R {
    fn effect(&self) -> Action {
        self.0
    }
}

fn unknown(w: &str) -> Tri {
    Tri::Unknown(w.to_string())
}

#[test]
fn tri_and_or_not_keep_cannot_tell() {
    assert_eq!(Tri::Yes.and(|| Tri::Yes), Tri::Yes);
    assert_eq!(Tri::Yes.and(|| Tri::No), Tri::No);
    assert_eq!(unknown("a").and(|| Tri::No), Tri::No);
    assert_eq!(unknown("a").and(|| unknown("b")), unknown("a"));
    assert_eq!(Tri::Yes.and(|| unknown("b")), unknown("b"));
    assert_eq!(Tri::No.and(|| panic!("not asked")), Tri::No);
    assert_eq!(Tri::any([Tri::No, unknown("a"), Tri::Yes]), Tri::Yes);
    assert_eq!(
        Tri::any([Tri::No, unknown("a"), unknown("b")]),
        unknown("a")
    );
    assert_eq!(Tri::any(Vec::new()), Tri::No);
    assert_eq!(!Tri::Yes, Tri::No);
    assert_eq!(!Tri::No, Tri::Yes);
    assert_eq!(!unknown("a"), unknown("a"));
}

#[test]
fn a_sections_first_hit_follows_its_order() {
    let matches = [Tri::No, Tri::Yes, Tri::Yes];
    let actions = [Action::Drop, Action::Allow, Action::Drop];
    let hit = first_hit(
        [[0], [1], [2]],
        |r| matches[r].clone(),
        |r| Some(actions[r]),
        None,
    );
    assert_eq!(hit, Some(Hit::Rule(1, Action::Allow)));
    // Cannot tell before any match: the check cannot be decided there.
    let matches = [Tri::No, unknown("why"), Tri::Yes];
    let hit = first_hit(
        [[0], [1], [2]],
        |r| matches[r].clone(),
        |r| Some(actions[r]),
        None,
    );
    assert_eq!(hit, Some(Hit::Unknown(1, "why".into())));
    // No match, but rules were not read: any of them could be first.
    let hit = first_hit(
        [[0]],
        |_| Tri::No,
        |_| Some(Action::Drop),
        Some((5, "rules past the 64th were not read")),
    );
    assert_eq!(
        hit,
        Some(Hit::Unknown(5, "rules past the 64th were not read".into()))
    );
    assert_eq!(
        first_hit([[0, 1]], |_| Tri::No, |_| Some(Action::Drop), None),
        None
    );
}

#[test]
fn tied_rules_that_disagree_split_and_agreeing_ones_name_the_first() {
    let actions = [Action::Allow, Action::Drop, Action::Allow];
    let hit = first_hit([vec![0, 1]], |_| Tri::Yes, |r| Some(actions[r]), None);
    assert_eq!(hit, Some(Hit::Split(0, 1)));
    let hit = first_hit([vec![0, 2]], |_| Tri::Yes, |r| Some(actions[r]), None);
    assert_eq!(hit, Some(Hit::Rule(0, Action::Allow)));
    // A tied rule that cannot be told, even after a match in its group.
    let m = [Tri::Yes, unknown("w")];
    let hit = first_hit([vec![0, 1]], |r| m[r].clone(), |r| Some(actions[r]), None);
    assert_eq!(hit, Some(Hit::Unknown(1, "w".into())));
}

#[test]
fn a_tier_decides_only_when_its_sections_agree() {
    let t = tier_hit([
        (0, None),
        (1, Some(Hit::Rule(3, Action::Drop))),
        (2, Some(Hit::Rule(0, Action::Drop))),
    ]);
    assert_eq!(t, Some(TierHit::Rule(1, 3, Action::Drop)));
    let t = tier_hit([
        (1, Some(Hit::Rule(3, Action::Drop))),
        (2, Some(Hit::Rule(0, Action::Allow))),
    ]);
    assert_eq!(
        t,
        Some(TierHit::Split {
            first: (1, 3),
            other: 2
        })
    );
    // A section that cannot be told, even after one that matches.
    let t = tier_hit([
        (1, Some(Hit::Rule(3, Action::Drop))),
        (2, Some(Hit::Unknown(4, "w".into()))),
    ]);
    assert_eq!(
        t,
        Some(TierHit::Cannot {
            first: (1, 3),
            at: 2,
            hit: Hit::Unknown(4, "w".into())
        })
    );
    assert_eq!(t.unwrap().first(), (1, 3));
    let t: Option<TierHit<Action>> = tier_hit([(0, None), (1, None)]);
    assert_eq!(t, None);
}

#[test]
fn a_path_is_blocked_by_either_check_the_egress_first() {
    let drop = SideOutcome::Matched {
        rule: R(Action::Drop),
    };
    let reject = SideOutcome::Matched {
        rule: R(Action::Reject),
    };
    let allow = SideOutcome::Matched {
        rule: R(Action::Allow),
    };
    let none = SideOutcome::NoVisibleRule;
    let cannot = SideOutcome::CannotDecide { why: "w".into() };
    assert_eq!(
        PathOutcome::of(&drop, &reject),
        PathOutcome::Dropped {
            rule: R(Action::Drop)
        }
    );
    assert_eq!(
        PathOutcome::of(&allow, &reject),
        PathOutcome::Rejected {
            rule: R(Action::Reject)
        }
    );
    assert_eq!(
        PathOutcome::of(&cannot, &drop),
        PathOutcome::Dropped {
            rule: R(Action::Drop)
        }
    );
    assert_eq!(
        PathOutcome::of(&allow, &cannot),
        PathOutcome::CannotDecide { why: "w".into() }
    );
    assert_eq!(
        PathOutcome::of(&none, &allow),
        PathOutcome::Allowed {
            egress: None,
            ingress: Some(R(Action::Allow))
        }
    );
    assert_eq!(
        PathOutcome::<R>::of(&none, &none),
        PathOutcome::NoVisibleRule
    );
    assert_eq!(
        PathOutcome::of(&drop, &none).blocking_rule(),
        Some(&R(Action::Drop))
    );
    assert_eq!(PathOutcome::of(&allow, &none).blocking_rule(), None);
}

#[test]
fn blocking_rules_are_listed_once_with_their_paths_in_order() {
    let p = |port, from: &str, to: &str| PathRef {
        port,
        from: from.into(),
        to: to.into(),
    };
    let d = PathOutcome::Dropped {
        rule: R(Action::Drop),
    };
    let r = PathOutcome::Rejected {
        rule: R(Action::Reject),
    };
    let a = PathOutcome::<R>::NoVisibleRule;
    let b = blocking_of([
        (p(2379, "a", "b"), &d),
        (p(2379, "b", "a"), &a),
        (p(2380, "a", "b"), &r),
        (p(2380, "b", "a"), &d),
    ]);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].rule, R(Action::Drop));
    assert_eq!(b[0].paths, vec![p(2379, "a", "b"), p(2380, "b", "a")]);
    assert_eq!(b[1].paths, vec![p(2380, "a", "b")]);
    assert_eq!(
        paths_text(&b[0].paths),
        "a → b:2379, b → a:2380".to_string()
    );
    let many: Vec<PathRef> = (0..8).map(|i| p(2379, "a", &i.to_string())).collect();
    assert!(paths_text(&many).ends_with(", 2 more"));
}

#[test]
fn the_vms_and_paths_are_bounded_and_ordered() {
    let names: Vec<String> = (0..MAX_VMS + 4)
        .rev()
        .map(|i| format!("vm-{i:02}"))
        .collect();
    let mut with_twin = names.clone();
    with_twin.insert(1, names[0].clone());
    let vms = bounded_vms(&with_twin, |s| s.as_str());
    assert_eq!(vms.len(), MAX_VMS - 1, "the first MAX_VMS, the twin once");
    assert!(vms.windows(2).all(|w| w[0] < w[1]));
    let pairs: Vec<_> = vm_pairs(3).collect();
    assert_eq!(pairs.len(), ETCD_PORTS.len() * 3 * 2);
    assert_eq!(pairs[0], (2379, 0, 1));
    assert_eq!(pairs[1], (2379, 0, 2));
    assert_eq!(pairs[2], (2379, 1, 0));
    assert_eq!(pairs[6], (2380, 0, 1));
    assert!(pairs.iter().all(|(_, f, t)| f != t));
    assert_eq!(vm_pairs(1).count(), 0);
}

#[test]
fn the_clip_bounds_and_leaves_hidden_characters_to_the_render_layer() {
    assert_eq!(clip("abc", 3), "abc");
    assert_eq!(clip("abcd", 3), "abc…");
    assert_eq!(
        clip("a\u{1b}[2Jb", 10),
        "a\u{1b}[2Jb",
        "left to render::visible"
    );
    assert_eq!(clip(&"é".repeat(300), 256).chars().count(), 257);
}
