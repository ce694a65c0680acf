//! The sections `firewall.before` and `firewall.after` as probe.sh prints them (`fw_one`), read
//! into [`FirewallRead`]s: which lines of a tool's dump can drop a packet of a path is decided
//! here, not on the node.
//!
//! Each tool's part starts `tool NAME`, then `missing CMD` (not on the node), or `rc N` and its
//! stderr (`err LINE`) when it failed, or `rc 0`, `lines N` (the dump's lines) and the dump's
//! lines that may matter, each behind its line number (`grep -n`) so no rule's text can start
//! another part: after `keep` the lines of [`KEEP_PATTERN`] (everything but a plain rule, and the
//! rules that drop, reject or name etcd's ports), after `accept` those of [`ACCEPT_PATTERN`],
//! each list at most [`FIREWALL_READ`] bytes on the node (a kube-proxy or Antrea node has
//! thousands of rules that cannot drop: the dump is megabytes there), the accepts apart so that
//! they never crowd out a drop. For iptables-save, `runs` and `uniq -c` of the chains of its
//! rules in order: with the line numbers, each rule's position in its chain.
//!
//! Probes before this one filtered on the node: `counts LINES KEPT CUT` and the kept lines behind
//! `= ` (with `@N` positions), read as they were.
//!
//! Total: whatever the section holds gives at most [`MAX_FIREWALL_READS`] + 1 reads (the bounds
//! say the cut), each text within [`FIREWALL_READ`] bytes of lines.

use std::collections::BTreeMap;

use super::{FirewallRead, ReadOutcome};
use crate::probe::frame::Head;
use crate::probe::{cap, last_msg, STDERR_BYTES};

/// Firewall reads of one moment: `firewall_read` in probe.sh reads nft and at most two legacy
/// tools.
pub const MAX_FIREWALL_READS: usize = 3;
/// Each list of a firewall read's lines the node sends, in bytes (`FW_MAX`, handed to the script
/// by [`crate::probe::script::CAPS`]), and the most of them one read keeps.
pub const FIREWALL_READ: usize = 49152;
/// A read's kept text: `FW_MAX` bytes of lines, each line's cut adding `...`; the plugin's bound
/// is twice that.
pub const MAX_FIREWALL_TEXT: usize = 2 * FIREWALL_READ;

/// The dump's lines sent after `keep` (`grep -n -i -E`, handed to the script as `FW_KEEP`): every
/// line that is no plain rule (nft's table, chain, `type ... hook` and closing lines; iptables-save's
/// `*table`, `:CHAIN POLICY`, `COMMIT` and comments: a rule's position counts them out) and every
/// rule that names a drop, a reject or etcd's ports. A superset of what [`Keeper`] keeps.
pub(crate) const KEEP_PATTERN: &str =
    "^([^[:blank:][-]|[[:blank:]][^[:blank:]]|[[:blank:]]+type |$)|drop|reject|2379|2380";
/// The dump's lines sent after `accept` (`FW_ACCEPT`): an accept counts in a chain whose policy
/// drops.
pub(crate) const ACCEPT_PATTERN: &str = "accept";

/// A kept line's bytes (longer ones cut, with `...`).
const LINE: usize = 512;
/// Chain runs read (`uniq -c` lines).
const MAX_RUNS: usize = FIREWALL_READ / 8;

/// One section's reads, each tool's in turn: the section is all head lines
/// ([`crate::probe::frame::Head`]), each tool's part from its `tool` line on.
pub(crate) fn section<'a>(section: &Head<'a>) -> Vec<FirewallRead> {
    let mut parts: Vec<Part> = Vec::new();
    for &line in &section.lines {
        if let Some(tool) = line.strip_prefix("tool ") {
            if parts.len() == MAX_FIREWALL_READS + 1 {
                break;
            }
            parts.push(Part::new(tool));
        } else if let Some(part) = parts.last_mut() {
            part.line(line);
        }
    }
    parts.into_iter().map(Part::read).collect()
}

/// Where a part's lines go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    Head,
    Keep,
    Accept,
    Runs,
}

/// One tool's part as read.
struct Part<'a> {
    read: FirewallRead,
    rc: Option<i64>,
    stderr: Vec<&'a str>,
    list: List,
    /// The dump's lines received, by line number, and each list's bytes and last line.
    dump: BTreeMap<u64, &'a str>,
    bytes: [usize; 2],
    last: [&'a str; 2],
    /// Up to which line the `keep` list is whole (it was cut on the node after it).
    keep_whole: Option<u64>,
    runs: Vec<(u64, &'a str)>,
    /// The format before this one: `counts` and `= ` lines.
    old: bool,
    /// A `runs` list: iptables-save's dump (whatever the tool's name).
    iptables: bool,
    old_text: String,
}

impl<'a> Part<'a> {
    fn new(tool: &str) -> Self {
        Part {
            read: FirewallRead {
                tool: cap(tool, 64),
                ..FirewallRead::default()
            },
            rc: None,
            stderr: Vec::new(),
            list: List::Head,
            dump: BTreeMap::new(),
            bytes: [0; 2],
            last: [""; 2],
            keep_whole: None,
            runs: Vec::new(),
            old: false,
            iptables: false,
            old_text: String::new(),
        }
    }

    fn line(&mut self, line: &'a str) {
        let i = match self.list {
            List::Keep => 0,
            List::Accept => 1,
            List::Runs => {
                if line == "keep" || line == "accept" {
                    self.list = if line == "keep" {
                        List::Keep
                    } else {
                        List::Accept
                    };
                } else if self.runs.len() < MAX_RUNS {
                    let mut w = line.split_whitespace();
                    if let (Some(n), Some(chain), None) = (w.next(), w.next(), w.next()) {
                        if let Ok(n) = n.parse::<u64>() {
                            self.runs.push((n, chain));
                        }
                    }
                }
                return;
            }
            List::Head => return self.head(line),
        };
        match line {
            "keep" => return self.list = List::Keep,
            "accept" => return self.list = List::Accept,
            "runs" => {
                self.iptables = true;
                return self.list = List::Runs;
            }
            _ => {}
        }
        // A list's bytes past the cap are no reason to read more.
        self.bytes[i] = self.bytes[i].saturating_add(line.len() + 1);
        self.last[i] = line;
        // `head -c FW_MAX` and the `echo` after it.
        if self.bytes[i] > FIREWALL_READ + 1 {
            return;
        }
        if let Some((n, text)) = line.split_once(':') {
            if let Ok(n) = n.parse::<u64>() {
                // Both lists may send a line; a whole one over one cut short.
                let e = self.dump.entry(n).or_insert(text);
                if e.len() < text.len() {
                    *e = text;
                }
            }
        }
    }

    fn head(&mut self, line: &'a str) {
        if let Some(l) = line.strip_prefix("= ") {
            self.old = true;
            if self.old_text.len() + l.len() < MAX_FIREWALL_TEXT {
                self.old_text.push_str(l);
                self.old_text.push('\n');
            }
        } else if let Some(cmd) = line.strip_prefix("missing ") {
            self.read.outcome = ReadOutcome::Missing;
            self.read.detail = Some(format!("{} not found", cap(cmd, 64)));
        } else if let Some(n) = line.strip_prefix("rc ") {
            self.rc = n.trim().parse().ok();
        } else if let Some(e) = line.strip_prefix("err ") {
            if self.stderr.len() < 16 + STDERR_BYTES {
                self.stderr.push(e);
            }
        } else if let Some(c) = line.strip_prefix("counts ") {
            self.old = true;
            let mut n = c.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
            let mut next = || n.next().unwrap_or(0);
            (self.read.lines, self.read.kept, self.read.cut) = (next(), next(), next());
        } else if let Some(n) = line.strip_prefix("lines ") {
            self.read.lines = n.trim().parse().unwrap_or(0);
        } else if line == "keep" {
            self.list = List::Keep;
        } else if line == "accept" {
            self.list = List::Accept;
        } else if line == "runs" {
            self.iptables = true;
            self.list = List::Runs;
        }
    }

    fn read(mut self) -> FirewallRead {
        let mut read = std::mem::take(&mut self.read);
        match self.rc {
            _ if read.outcome == ReadOutcome::Missing => {}
            Some(0) => {
                read.outcome = ReadOutcome::Ok;
                read.text = Some(if self.old {
                    std::mem::take(&mut self.old_text)
                } else {
                    let iptables = self.iptables || read.is_iptables();
                    let (text, kept, cut) = self.judge(iptables);
                    (read.kept, read.cut) = (kept, cut);
                    text
                });
            }
            rc => {
                let mut msg = last_msg(self.stderr.into_iter());
                read.outcome = if ["not permitted", "Permission denied", "must be root"]
                    .iter()
                    .any(|w| msg.contains(w))
                {
                    ReadOutcome::Denied
                } else {
                    ReadOutcome::Error
                };
                // `timeout 2`'s exit code: the tool did not answer.
                if rc == Some(124) {
                    msg = "no answer within 2 s".into();
                }
                if msg.is_empty() {
                    msg = match rc {
                        Some(rc) => format!("exited {rc}"),
                        None => "gave no result".into(),
                    };
                }
                read.text = None;
                read.detail = Some(msg);
            }
        }
        read
    }

    /// The lines that can drop a packet, in the dump's order: the kept text, how many lines
    /// were kept and how many cut (past the byte cap here, or a list cut on the node: one more).
    fn judge(&mut self, iptables: bool) -> (String, u64, u64) {
        // A list cut on the node ends in a line cut short (the script's `echo` after `head -c`
        // leaves an empty last line otherwise): that line is no line of the dump.
        let mut node_cut = 0;
        for i in 0..2 {
            let cut = !self.last[i].is_empty() || self.bytes[i] > FIREWALL_READ + 1;
            if cut {
                node_cut += 1;
                if let Some((n, text)) = self.last[i].split_once(':') {
                    if let Ok(n) = n.parse::<u64>() {
                        if self.dump.get(&n) == Some(&text) {
                            self.dump.remove(&n);
                        }
                    }
                }
                if i == 0 {
                    self.keep_whole = Some(self.dump.keys().next_back().copied().unwrap_or(0));
                }
            }
        }
        let mut k = Keeper::default();
        if iptables {
            self.iptables(&mut k);
        } else {
            self.nft(&mut k);
        }
        (k.text, k.kept, k.cut + node_cut)
    }

    /// nft's chains: their headers and closing lines, and the rules that drop, reject or name
    /// 2379/2380, and the accepts of a chain whose policy drops.
    fn nft(&self, k: &mut Keeper) {
        let (mut in_chain, mut drops) = (false, false);
        for l in self.dump.values() {
            let l = l.strip_suffix('\r').unwrap_or(l);
            if l.starts_with("table ") || l.starts_with('}') {
                in_chain = false;
                k.keep(l);
            } else if l.starts_with("\tchain ") {
                (in_chain, drops) = (true, false);
                k.keep(l);
            } else if in_chain && l.starts_with("\t}") {
                in_chain = false;
                k.keep(l);
            } else if !in_chain {
                continue;
            } else if l.starts_with("\t\ttype ") && l.contains(" hook ") {
                drops = l.contains("policy drop");
                k.keep(l);
            } else {
                let r = strip_handle(l);
                if word(r, &["drop", "reject"])
                    || r.contains("2379")
                    || r.contains("2380")
                    || (drops && word(r, &["accept"]))
                {
                    k.keep(l);
                }
            }
        }
    }

    /// iptables-save's tables and chains, and the rules that drop, reject or name 2379/2380, and
    /// the accepts of a chain whose policy is DROP; each rule behind `@N`, its position in its
    /// chain (`--line-numbers`), where the lists say it.
    fn iptables(&self, k: &mut Keeper) {
        let mut policy: BTreeMap<&str, &str> = BTreeMap::new();
        // Lines before the current one that are no rule: a rule's index among the dump's rules
        // is its line number less them, while the `keep` list (which has them all) is whole.
        let mut others = 0u64;
        for (&n, l) in &self.dump {
            let l = l.strip_suffix('\r').unwrap_or(l);
            let rule = l
                .strip_prefix('[')
                .and_then(|r| r.split_once("] "))
                .filter(|(c, _)| counter(c))
                .map_or(l, |(_, r)| r);
            let rest = rule.strip_prefix("-A ");
            others += u64::from(rest.is_none());
            let Some(rest) = rest else {
                if l.starts_with('*') {
                    policy.clear();
                    k.keep(l);
                } else if let Some(h) = l.strip_prefix(':') {
                    let mut w = h.split_whitespace();
                    if let Some(chain) = w.next() {
                        policy.insert(chain, w.next().unwrap_or(""));
                    }
                    k.keep(l);
                } else if l.starts_with("COMMIT") {
                    k.keep(l);
                }
                continue;
            };
            let chain = rest.split_whitespace().next().unwrap_or("");
            if !(word_j(rule, &["DROP", "REJECT"])
                || rule.contains("2379")
                || rule.contains("2380")
                || (policy.get(chain) == Some(&"DROP") && word_j(rule, &["ACCEPT"])))
            {
                continue;
            }
            let whole = self.keep_whole.is_none_or(|w| n <= w);
            match whole.then(|| self.position(n - others, chain)).flatten() {
                Some(pos) => k.keep(&format!("@{pos} {l}")),
                None => k.keep(l),
            }
        }
    }

    /// The position in its chain of the dump's `index`-th rule (1-based), by the chains' runs.
    fn position(&self, index: u64, chain: &str) -> Option<u64> {
        let mut start = 0u64;
        for (n, c) in &self.runs {
            let end = start.checked_add(*n)?;
            if index <= end {
                // A chain's rules are printed together: one run each (iptables-save).
                return (index > start && *c == chain).then_some(index - start);
            }
            start = end;
        }
        None
    }
}

/// `[p:b]`'s inside.
fn counter(c: &str) -> bool {
    c.split_once(':').is_some_and(|(p, b)| {
        [p, b]
            .iter()
            .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A rule without nft's ` # handle N` at its end.
fn strip_handle(l: &str) -> &str {
    match l.rsplit_once(" # handle ") {
        Some((r, h)) if !h.is_empty() && h.bytes().all(|b| b.is_ascii_digit()) => r,
        _ => l,
    }
}

/// One of `words` as a word of nft's rule (after a blank or at the start, before a space or
/// at the end).
fn word(r: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        r.match_indices(w).any(|(i, _)| {
            let before = r[..i].chars().next_back();
            let after = r[i + w.len()..].chars().next();
            matches!(before, None | Some(' ' | '\t')) && matches!(after, None | Some(' '))
        })
    })
}

/// ` -j TARGET` in an iptables rule, the target a word.
fn word_j(r: &str, targets: &[&str]) -> bool {
    targets.iter().any(|t| {
        let j = format!(" -j {t}");
        r.match_indices(&j)
            .any(|(i, _)| matches!(r[i + j.len()..].chars().next(), None | Some(' ')))
    })
}

/// The kept lines within [`FIREWALL_READ`] bytes, each cut at [`LINE`].
#[derive(Default)]
struct Keeper {
    text: String,
    used: usize,
    kept: u64,
    cut: u64,
}

impl Keeper {
    fn keep(&mut self, l: &str) {
        let l = cap(l, LINE);
        if self.used + l.len() + 1 > FIREWALL_READ {
            self.cut += 1;
            return;
        }
        self.used += l.len() + 1;
        self.text.push_str(&l);
        self.text.push('\n');
        self.kept += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/firewall/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// What `fw_one` prints for a dump: grep's lists by the same patterns (lines matched here
    /// by hand: the test patterns' words), capped as the node caps them, and the runs.
    fn part(tool: &str, dump: &str, max: usize) -> String {
        let lines: Vec<&str> = dump.lines().collect();
        let list = |pick: &dyn Fn(&str) -> bool| {
            let all: String = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| pick(l))
                .map(|(i, l)| format!("{}:{l}\n", i + 1))
                .collect();
            format!("{}\n", crate::probe::head(&all, max))
        };
        let keep = list(&|l: &str| {
            let low = l.to_ascii_lowercase();
            !(l.starts_with("\t\t") || l.starts_with('[') || l.starts_with('-'))
                || l.starts_with("\t\ttype ")
                || ["drop", "reject", "2379", "2380"]
                    .iter()
                    .any(|w| low.contains(w))
        });
        let accept = list(&|l: &str| l.to_ascii_lowercase().contains("accept"));
        let mut out = format!(
            "tool {tool}\nrc 0\nlines {}\nkeep\n{keep}accept\n{accept}",
            lines.len()
        );
        if tool.contains("tables") {
            out.push_str("runs\n");
            let mut runs: Vec<(u64, String)> = Vec::new();
            for l in &lines {
                let r = l
                    .split_once("] ")
                    .filter(|_| l.starts_with('['))
                    .map_or(*l, |p| p.1);
                if let Some(rest) = r.strip_prefix("-A ") {
                    let c = rest.split(' ').next().unwrap_or("").to_string();
                    match runs.last_mut() {
                        Some((n, last)) if *last == c => *n += 1,
                        _ => runs.push((1, c)),
                    }
                }
            }
            for (n, c) in runs {
                out.push_str(&format!("{n:7} {c}\n"));
            }
        }
        out
    }

    #[test]
    fn nft_keeps_what_can_drop() {
        let r = &section(&Head::of(&part(
            "nft",
            &fixture("nft-counter-after.txt"),
            FIREWALL_READ,
        )))[0];
        assert_eq!(
            (r.outcome, r.lines, r.kept, r.cut),
            (ReadOutcome::Ok, 20, 12, 0)
        );
        let text = r.text.as_deref().unwrap();
        assert!(
            text.contains("counter packets 2 bytes 120 drop # handle 8\n"),
            "{text}"
        );
        assert!(!text.contains("accept # handle"), "{text}");
        assert!(!text.contains("set peers"), "{text}");
    }

    #[test]
    fn nft_keeps_the_accepts_of_a_chain_whose_policy_drops() {
        let dump = fixture("nft-policy-drop.txt");
        let r = &section(&Head::of(&part("nft", &dump, FIREWALL_READ)))[0];
        let text = r.text.as_deref().unwrap();
        assert!(text.contains("policy drop"), "{text}");
        assert!(text.contains(" accept"), "{text}");
    }

    #[test]
    fn iptables_rules_carry_their_position_in_their_chain() {
        let r = &section(&Head::of(&part(
            "iptables-legacy",
            &fixture("iptables-legacy-after.txt"),
            FIREWALL_READ,
        )))[0];
        let text = r.text.as_deref().unwrap();
        assert!(
            text.contains(
                "@2 [2:120] -A INPUT -s 10.0.0.2/32 -p tcp -m multiport --dports 2379,2380 -j DROP\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("@3 [0:0] -A INPUT -p tcp -m tcp --dport 2380 -j REJECT"),
            "{text}"
        );
        assert!(text.contains("@1 [0:0] -A OUTPUT -d 10.0.0.3/32"), "{text}");
        assert!(text.contains("@1 [0:0] -A KUBE-FIREWALL "), "{text}");
        // The DNAT (nat) and the jump are no drop.
        assert!(
            !text.contains("-j DNAT") && !text.contains("-j KUBE-FIREWALL"),
            "{text}"
        );
        let set = super::super::Ruleset::parse_iptables("iptables-legacy", text);
        assert!(set
            .chains
            .iter()
            .any(|c| c.name == "INPUT" && c.rules.len() == 2));
    }

    #[test]
    fn a_list_cut_on_the_node_is_said_and_its_cut_line_dropped() {
        let mut dump = String::from("table ip filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n");
        for i in 0..3000 {
            dump.push_str(&format!(
                "\t\tip saddr 10.8.{}.{} counter packets 0 bytes 0 drop # handle {i}\n",
                i / 250,
                i % 250
            ));
        }
        dump.push_str("\t}\n}\n");
        let r = &section(&Head::of(&part("nft", &dump, FIREWALL_READ)))[0];
        let text = r.text.as_deref().unwrap();
        assert!(r.cut >= 1 && r.kept < 3000, "{:?}", (r.kept, r.cut));
        assert!(text.len() <= FIREWALL_READ);
        assert!(text.lines().all(|l| !l.contains("drop")
            || l.ends_with(&format!("# handle {}", l.rsplit(' ').next().unwrap()))));
        let set = super::super::Ruleset::parse_nft("nft", text);
        assert_eq!(set.chains[0].rules.len() as u64, r.kept - 3);
    }

    #[test]
    fn older_probes_kept_lines_are_read_as_they_were() {
        let text = "tool nft\nrc 0\ncounts 10 3 1\n= table inet filter {\n= \tchain input {\n";
        let r = &section(&Head::of(text))[0];
        assert_eq!((r.lines, r.kept, r.cut), (10, 3, 1));
        assert_eq!(
            r.text.as_deref(),
            Some("table inet filter {\n\tchain input {\n")
        );
    }

    #[test]
    fn hostile_sections_give_values() {
        for text in [
            "tool x\nrc 0\nkeep\n99999999999999999999:x\n:\n1:\n",
            "tool x\nrc 0\nlines -1\nruns\n 18446744073709551615 A\n 5 A\nkeep\n1:[0:0] -A A -j DROP\n",
            "tool iptables\nrc 0\nruns\n18446744073709551615 A\n18446744073709551615 A\nkeep\n3:-A A -j DROP\n\n",
            "tool a\ntool b\ntool c\ntool d\ntool e\n",
            "keep\naccept\nruns\n",
        ] {
            let reads = section(&Head::of(text));
            assert!(reads.len() <= MAX_FIREWALL_READS + 1);
            for r in reads {
                let _ = r.ruleset();
            }
        }
    }
}
