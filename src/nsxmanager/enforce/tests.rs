//! The pure parts: the DFW's switch and the exclusion list's members, on answers in the API's
//! shapes and on hostile ones.

use serde_json::json;

use super::*;

#[test]
fn the_switch_is_enable_firewall_and_nothing_else() {
    let with = |v: Value| EnforcementRead {
        settings: Some(v),
        ..EnforcementRead::default()
    };
    assert_eq!(
        dfw_state(&with(json!({"enable_firewall": true}))),
        DfwState::Enabled
    );
    assert_eq!(
        dfw_state(&with(json!({"enable_firewall": false}))),
        DfwState::Disabled
    );
    for v in [json!({}), json!({"enable_firewall": "false"}), json!([])] {
        assert!(matches!(dfw_state(&with(v)), DfwState::Unknown(_)));
    }
    assert!(matches!(
        dfw_state(&EnforcementRead::default()),
        DfwState::Unknown(_)
    ));
}

#[test]
fn members_are_strings_once_and_bounded() {
    let l = json!({"members": ["/a", "/a", 3, null, "/b"], "system_members": ["/c", "/b"]});
    assert_eq!(exclude_members(Some(&l)), vec!["/a", "/b", "/c"]);
    let many: Vec<String> = (0..10_000).map(|i| format!("/g{i}")).collect();
    let l = json!({ "members": many });
    assert_eq!(exclude_members(Some(&l)).len(), 4 * MAX_EXCLUDE_MEMBERS);
    assert!(exclude_members(None).is_empty());
}
