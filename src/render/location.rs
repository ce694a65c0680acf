//! `packetLocation` as a table under the verdict: each failing path, where its packets die
//! (the contract's words), and the rule that says so; then the nodes whose firewall was not
//! read, with why.

use super::Lines;
use crate::report::v1alpha2::{FirewallReadState, PacketLocation, Place};

/// The contract's words for a place (`undecided` for the rest).
pub(crate) fn place_words(p: Place) -> &'static str {
    match p {
        Place::InsideGuest => "inside the guest",
        Place::MayBeInsideGuest => "may be inside the guest",
        Place::OutsideGuests => "outside the guests",
        Place::Undecided => "undecided",
    }
}

/// The section; nothing when no path failed.
pub(crate) fn section(out: &mut Lines, l: &PacketLocation, wide: bool) {
    if l.paths.is_empty() {
        return;
    }
    out.blank();
    out.line("Where the packets die (each node's own firewall, read before and after the checks):");
    let rows: Vec<Vec<String>> = l
        .paths
        .iter()
        .map(|p| {
            let shown = if wide { p.rules.len() } else { 1 };
            let mut rules: Vec<String> = p
                .rules
                .iter()
                .take(shown)
                .map(|r| {
                    let counted = match r.packets {
                        Some(n) => format!(", +{n} packets"),
                        None => ", no counter".to_string(),
                    };
                    format!(
                        "{}: {} {} {} {}{counted}",
                        r.node, r.tool, r.table, r.chain, r.rule
                    )
                })
                .collect();
            if p.rules.len() > shown {
                rules.push(format!("+{} more", p.rules.len() - shown));
            }
            vec![
                p.from.clone(),
                p.to.clone(),
                p.port.to_string(),
                p.state.label().to_string(),
                place_words(p.place).to_string(),
                if rules.is_empty() {
                    "-".to_string()
                } else {
                    rules.join("; ")
                },
            ]
        })
        .collect();
    out.table(&["FROM", "TO", "PORT", "STATE", "PLACE", "RULE"], &rows);
    for n in l.nodes.iter().filter(|n| n.read != FirewallReadState::Read) {
        out.line(format!(
            "  {}: firewall {}{}",
            n.node,
            n.read,
            n.detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Paint;
    use crate::report::v1alpha2::{CellState, FirewallRule, NodeFirewall, PathPlace};

    #[test]
    fn the_table_names_the_place_and_the_rule_escaped() {
        let l = PacketLocation {
            summary: vec![],
            paths: vec![PathPlace {
                from: "a".into(),
                to: "b".into(),
                port: 2380,
                state: CellState::Timeout,
                place: Place::InsideGuest,
                rules: vec![FirewallRule {
                    node: "b".into(),
                    tool: "nft".into(),
                    table: "inet filter".into(),
                    chain: "in\u{1b}[2Jput".into(),
                    rule: "handle 8".into(),
                    text: "tcp dport 2380 drop".into(),
                    packets: Some(4),
                }],
                why: None,
            }],
            nodes: vec![NodeFirewall {
                node: "c".into(),
                read: FirewallReadState::NotRead,
                detail: Some("nft Denied".into()),
            }],
        };
        let mut out = Lines::new(Paint { on: false });
        section(&mut out, &l, false);
        let text = out.finish();
        assert!(text.contains("inside the guest"), "{text}");
        assert!(text.contains("+4 packets"), "{text}");
        assert!(text.contains("c: firewall NotRead: nft Denied"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
