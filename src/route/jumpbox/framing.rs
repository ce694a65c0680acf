//! The framing of the jumpbox pod's log: one section per VM, framed with a nonce of the run that
//! the nodes never see, cut out by its length ([`split_log`]) and read as that VM's result
//! ([`read_log`]).

use super::spec::{DEFAULT_IMAGE, KEY_DIR};
use crate::probe::{HostKey, PortReach, PortState, ReachError, ReachErrorKind};
use crate::route::lifecycle::MAX_LOG_BYTES;
use crate::route::ssh::classify_failure;
use crate::route::Reached;

/// One VM's section as the script prints it: the frame `ETCDNET-NODE <nonce> <index> <bytes>`,
/// exactly `<bytes>` bytes of `section`, and `ETCDNET-NODE-END <nonce> <index>`. (The script
/// writes it; here for the tests and the fakes that stand in for it.)
pub fn frame(nonce: &str, index: usize, section: &str) -> String {
    format!(
        "ETCDNET-NODE {nonce} {index} {}\n{section}ETCDNET-NODE-END {nonce} {index}\n",
        section.len()
    )
}

/// Cuts the pod's log into its `vms` VMs' sections, by index: each VM's section's text, or why
/// that VM has none that can be used (a `BadOutput`). Or, when the script could not work at all
/// (no ssh client, no writable /tmp), why, for every VM.
///
/// A section is read by its length, never by looking for a marker inside it: whatever a node
/// prints stays within its own section, framed lines and all. A frame is taken only with this
/// run's `nonce`, which no node has seen, so none can print one; a section whose length does
/// not lead exactly to its end line (the log was cut, or text in it was altered on the way, as
/// invalid UTF-8 is) is garbled, and the next frame is then looked for by its nonce. A VM with
/// no section, or with two, gets no result; the others keep theirs.
pub fn split_log<'l>(
    log: &'l str,
    nonce: &str,
    vms: usize,
) -> std::result::Result<Vec<std::result::Result<&'l str, ReachError>>, ReachError> {
    let bad = |message: String| ReachError {
        kind: ReachErrorKind::BadOutput,
        message,
    };
    // Printed first, before any node is contacted: nothing of a node's can come before it.
    if let Some(why) = log
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("ETCDNET-JUMPBOX "))
        .and_then(|l| l.strip_prefix(nonce))
        .map(str::trim)
    {
        let message = match why {
            "no-ssh-client" => format!("the jumpbox image has no ssh client; use --jumpbox-image with one (e.g. {DEFAULT_IMAGE})"),
            "bad-keys" => "the jumpbox pod was given a key number for a VM that is none of its keys (a bug of the plugin's): no VM was contacted".to_string(),
            "no-tmp" => "the jumpbox pod could not write to its /tmp volume".to_string(),
            "no-key" => format!("the jumpbox pod could not read the SSH key from its secret volume ({KEY_DIR}): the runtime did not make it readable by the pod's user; use --via ssh"),
            other => format!("the jumpbox script stopped: {}", crate::probe::head(other, 80)),
        };
        return Err(ReachError {
            kind: ReachErrorKind::Other,
            message,
        });
    }
    let mut found: Vec<Option<std::result::Result<&str, ReachError>>> = vec![None; vms];
    let header = format!("ETCDNET-NODE {nonce} ");
    let mut pos = 0;
    while let Some(at) = find_line_start(log, pos, &header) {
        let fields_at = at + header.len();
        let Some(eol) = log[fields_at..].find('\n').map(|n| fields_at + n) else {
            break;
        };
        let mut fields = log[fields_at..eol].split(' ');
        let (Some(index), Some(bytes), None) = (
            fields.next().and_then(parse_decimal),
            fields.next().and_then(parse_decimal),
            fields.next(),
        ) else {
            // A frame line the script did not write whole: no index to blame; go on after it.
            pos = eol + 1;
            continue;
        };
        let start = eol + 1;
        let end_line = format!("ETCDNET-NODE-END {nonce} {index}\n");
        let whole = start.checked_add(bytes).filter(|end| {
            log.get(*end..)
                .is_some_and(|rest| rest.starts_with(&end_line))
        });
        let section = match whole {
            Some(end) => {
                pos = end + end_line.len();
                Ok(&log[start..end])
            }
            None => {
                pos = start;
                Err(bad(format!(
                    "the jumpbox's section for this VM is not the {bytes} bytes it announced (cut short, or altered on the way): not read"
                )))
            }
        };
        let Some(slot) = found.get_mut(index) else {
            // An index the pod was not given: the script never prints one; nothing to blame.
            continue;
        };
        *slot = match slot.take() {
            None => Some(section),
            Some(_) => Some(Err(bad(
                "the jumpbox's log holds two sections for this VM: neither is used".into(),
            ))),
        };
    }
    Ok(found
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| {
                Err(bad(
                    "the jumpbox's log has no section for this VM (the pod ended before printing it, or its log was cut)".into(),
                ))
            })
        })
        .collect())
}

/// A plain decimal number (what the script prints), nothing else.
fn parse_decimal(s: &str) -> Option<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Where `needle` next starts a line of `log`, at or after `from`.
fn find_line_start(log: &str, from: usize, needle: &str) -> Option<usize> {
    let mut from = from;
    loop {
        let at = from + log.get(from..)?.find(needle)?;
        if at == 0 || log.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + 1;
    }
}

/// Reads one VM's section of the jumpbox pod's log (see [`split_log`]): the reach lines, the
/// probe document, ssh's exit and errors, the VM's host key.
///
/// The node writes into this section too (the probe's output and its stderr, through ssh), so
/// the script's own lines are taken only where the node cannot write: the `ETCDNET-REACH` block
/// at the start (printed, and ended by `ETCDNET-REACH-END`, before ssh to the node starts: a
/// line of the node's can only come after the end) and the trailer at the end
/// (`ETCDNET-HOSTKEY`, `ETCDNET-SSH-EXIT`, printed after it ended; ssh's stderr goes into the
/// same ordered stream, so nothing of the node's comes after). The same lines anywhere else are
/// the node's, and are read as noise. The host key is the one the VM presented, as the pod's ssh
/// recorded it (None: no contact, or no trailer in the section).
pub fn read_log(node: &str, ip: &str, user: &str, log: &str) -> Reached {
    let lines: Vec<&str> = log.lines().collect();
    let mut reach = Vec::new();
    let mut body = &lines[..];
    while let Some((first, rest)) = body.split_first() {
        let mut words = first.split_whitespace();
        match words.next() {
            Some("ETCDNET-REACH") => {}
            Some("ETCDNET-REACH-END") => {
                body = rest;
                break;
            }
            _ => break,
        }
        if let Some(port) = words.next().and_then(|p| p.parse().ok()) {
            // What the script does not name (a newer script, a garbled line) is not known open.
            let state = match words.next() {
                Some("Open") => PortState::Open,
                Some("Timeout") => PortState::Timeout,
                Some("Refused") => PortState::Refused,
                Some("NoRoute") => PortState::NoRoute,
                _ => PortState::Unknown,
            };
            reach.push(PortReach { port, state });
        }
        body = rest;
    }
    reach.sort_by_key(|r| r.port);

    // The trailer: the last two lines that are not blank.
    let mut ssh_exit = None;
    let mut host_key = None;
    let last = body.iter().rposition(|l| !l.trim().is_empty());
    let before = last.and_then(|i| body[..i].iter().rposition(|l| !l.trim().is_empty()));
    if let (Some(i), Some(j)) = (last, before) {
        let exit = body[i].trim().strip_prefix("ETCDNET-SSH-EXIT ");
        let key = body[j].trim().strip_prefix("ETCDNET-HOSTKEY ");
        if let (Some(exit), Some(key)) = (exit, key) {
            ssh_exit = exit.trim().parse::<i32>().ok();
            let mut fields = key.split_whitespace();
            host_key = match (fields.next(), fields.next()) {
                (Some(type_name), Some(blob)) => HostKey::from_openssh(type_name, blob),
                _ => None,
            };
            body = &body[..j];
        }
    }
    // The script keeps at most `NODE_OUTPUT_CAP` bytes of the node's output: one more than the
    // most it reads. The body's lines are slices of `log`, so their span is its length.
    let node_bytes = match (body.first(), body.last()) {
        (Some(first), Some(last)) => {
            (last.as_ptr() as usize + last.len()).saturating_sub(first.as_ptr() as usize)
        }
        _ => 0,
    };
    if node_bytes as u64 > MAX_LOG_BYTES {
        return Reached {
            reach,
            outcome: Err(ReachError {
                kind: ReachErrorKind::BadOutput,
                message: format!(
                    "the node printed more than {} MiB, far more than the probe prints: it was cut and not read",
                    MAX_LOG_BYTES / (1024 * 1024)
                ),
            }),
            host_key,
        };
    }
    let output = body.join("\n");
    let other = crate::probe::parse::noise(&output);
    let outcome = match crate::probe::parse::parse(node, output.as_bytes()) {
        Ok(p) => Ok(p),
        Err(e) => match ssh_exit {
            Some(0) | None if other.trim().is_empty() => Err(ReachError {
                kind: ReachErrorKind::BadOutput,
                message: e.to_string(),
            }),
            code => Err(classify_failure(ip, user, code, &other)),
        },
    };
    Reached {
        reach,
        outcome,
        host_key,
    }
}
