//! A huge manager: thousands of policies, rules and groups, walked page by page with cursors
//! as NSX pages them (`result_count` the whole list's, no `cursor` on the last page).

use etcdnet_fakensx::{FakeNsx, World};
use serde_json::Value;

use crate::common::{walk, Client, AUDITOR, BASE};

#[test]
fn thousands_of_policies_rules_and_groups_in_pages() {
    let world = World::from_dir(etcdnet_fakensx::world_dir("infra-drop-2380"))
        .unwrap()
        .with_filler(2500, 3, 1200);
    let nsx = FakeNsx::start(world).unwrap();
    let c = Client::basic(&nsx, AUDITOR);
    let first = c.get(&format!("{BASE}/security-policies")).json();
    assert_eq!(first["result_count"], 2502);
    assert_eq!(
        first["results"].as_array().unwrap().len(),
        1000,
        "NSX's default page"
    );
    assert!(first["cursor"].is_string());
    let (all, pages) = walk(&c, &format!("{BASE}/security-policies"), 1000);
    assert_eq!((all.len(), pages), (2502, 3));
    let mut ids: Vec<&str> = all.iter().map(|p| p["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2502, "no policy twice, none missed");
    let (groups, pages) = walk(&c, &format!("{BASE}/groups"), 500);
    assert_eq!((groups.len(), pages), (1202, 3));
    let (rules, _) = walk(&c, &format!("{BASE}/security-policies/filler-7/rules"), 2);
    assert_eq!(rules.len(), 3);
    // Sorted as asked, across pages.
    let (sorted, _) = walk(
        &c,
        &format!("{BASE}/security-policies?sort_by=sequence_number&sort_ascending=false"),
        1000,
    );
    let seqs: Vec<i64> = sorted
        .iter()
        .map(|p| p["sequence_number"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] >= w[1]));
    assert_eq!(c.get(&format!("{BASE}/groups?cursor=forged")).status, 400);
    assert_eq!(c.get(&format!("{BASE}/groups?page_size=5000")).status, 400);
    // The filler changes no verdict: the world's own DROP still decides.
    let rule: Value = c
        .get(&format!(
            "{BASE}/security-policies/infra-hardening/rules/drop-etcd-peer"
        ))
        .json();
    assert_eq!(rule["rule_id"], 3042);
}
