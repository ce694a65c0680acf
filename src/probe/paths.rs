//! The path checks' raw sections judged: TCP and TLS outcomes from each check's `curl -v
//! --trace-time` transcript, its exit code, its `-w` line and the watchdog's word
//! (probe.sh's `start_group`, `watchdog`, `finish_check`).
//!
//! Section `paths`: `checks CT TT TRIED` (the connect and TLS timeouts in seconds, 1 when TLS was
//! tried with the node's peer certificate), then `path I TARGET PORT OWN` per check, or `nocurl`.
//! Section `check.I`: `check RC ELAPSED_MS`, `w HTTP_CODE TIME_CONNECT TIME_APPCONNECT`,
//! `killed MS` when the watchdog ended it, `--` and curl's transcript (capped on the node): the
//! one shape of every section ([`crate::probe::frame::Head`]).
//!
//! Total: whatever the sections hold gives one [`PathCheck`] per check named in `paths`.

use crate::probe::cap;
use crate::probe::frame::{Frames, Head};
use crate::probe::output::{PathCheck, TcpOutcome, TlsOutcome};

/// Bytes of a detail (curl's words), as probe.sh's `cap(s, 300)` cut it.
const DETAIL: usize = 300;

/// Bytes of one check's section the script sends (`CHECK_BYTES`, handed by
/// [`crate::probe::script::CAPS`]), whole lines: `curl -v` of one /version request is a few dozen
/// lines; a peer's huge headers are cut.
pub(crate) const CHECK_BYTES: usize = 8192;

/// A transcript line that says the connect is done ([`connected`]) or curl has ended
/// ([`final_word`]), `--trace-time` stamp or not, as one `grep -E` pattern: probe.sh's watchdog
/// (`CONNECTED`, handed by [`crate::probe::script::CAPS`]) ends the checks none of whose lines
/// match once the connect timeout is over.
pub(crate) const CONNECTED_PATTERN: &str = concat!(
    r"^([0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]+ )?",
    r"(\* +(Connected to |Established (2nd )?connection|ALPN[:,] |TLSv1\.[0-3] \(OUT\)|SSLv3 \(OUT\)|SSL connection using )",
    r"|curl: \([0-9]+\) )"
);

/// The checks of a framed output, in the order the probe ran them.
pub(crate) fn read(frames: &Frames) -> Vec<PathCheck> {
    let Some(list) = frames.head("paths") else {
        return Vec::new();
    };
    let mut checks = list.get("checks").unwrap_or_default().split_whitespace();
    let ct = checks.next().and_then(|c| c.parse().ok()).unwrap_or(3u64);
    let tt = checks.next().and_then(|t| t.parse().ok()).unwrap_or(2u64);
    let tried = checks.next() == Some("1");
    let why = if list.has("nocurl") {
        "curl not found"
    } else {
        "probe job gave no result"
    };
    let mut out = Vec::new();
    for path in list.all("path") {
        let w: Vec<&str> = path.split_whitespace().collect();
        let [i, target, port, own] = w.as_slice() else {
            continue;
        };
        let Ok(port) = port.parse::<u16>() else {
            continue;
        };
        let own = *own == "true";
        out.push(match frames.get(&format!("check.{i}")) {
            Some(text) if text.starts_with("check ") => {
                judge(target, port, own, text, ct, tt, tried)
            }
            _ => no_result(target, port, own, why),
        });
    }
    out
}

fn no_result(target: &str, port: u16, own: bool, why: &str) -> PathCheck {
    PathCheck {
        target: target.into(),
        port,
        own,
        tcp: TcpOutcome::Error,
        tcp_ms: None,
        tcp_detail: Some(why.into()),
        tls: TlsOutcome::NotTried,
        tls_ms: None,
        tls_detail: None,
        http_status: None,
    }
}

/// A line of curl's transcript without its `--trace-time` stamp, and the stamp in seconds of
/// the day.
fn stamped(line: &str) -> (&str, Option<f64>) {
    let b = line.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() > 9
        && digits(0..2)
        && b[2] == b':'
        && digits(3..5)
        && b[5] == b':'
        && digits(6..8)
        && b[8] == b'.'
    {
        if let Some(sp) = line.find(' ') {
            let frac = &line[9..sp];
            if !frac.is_empty() && frac.bytes().all(|c| c.is_ascii_digit()) {
                let secs = line[..2].parse::<f64>().unwrap_or(0.0) * 3600.0
                    + line[3..5].parse::<f64>().unwrap_or(0.0) * 60.0
                    + line[6..sp].parse::<f64>().unwrap_or(0.0);
                return (&line[sp + 1..], Some(secs));
            }
        }
    }
    (line, None)
}

/// `* ` and then `what`, any number of spaces between.
fn info(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('*')?;
    let trimmed = rest.trim_start_matches(' ');
    (trimmed.len() < rest.len()).then_some(trimmed)
}

/// The TCP connect done: curl <= 8.15 says "Connected to"; 8.16+ says nothing until the
/// handshake, but its ALPN offer and ClientHello lines come only after the connect.
fn connected(line: &str) -> bool {
    info(line).is_some_and(|l| {
        l.starts_with("Connected to ")
            || established(l)
            || l.starts_with("ALPN: ")
            || l.starts_with("ALPN, ")
            || [
                "TLSv1.0 (OUT)",
                "TLSv1.1 (OUT)",
                "TLSv1.2 (OUT)",
                "TLSv1.3 (OUT)",
                "SSLv3 (OUT)",
            ]
            .iter()
            .any(|p| l.starts_with(p))
            || l.starts_with("SSL connection using ")
    })
}

fn established(l: &str) -> bool {
    l.starts_with("Established connection") || l.starts_with("Established 2nd connection")
}

/// The handshake done.
fn handshaken(line: &str) -> bool {
    info(line).is_some_and(|l| l.starts_with("SSL connection using ") || established(l))
}

/// curl's own words for a connect that failed.
fn failed_connect(line: &str) -> Option<&str> {
    let l = info(line)?;
    let hit = (l.starts_with("connect to ") && l.contains(" failed: "))
        || l.starts_with("Immediate connect fail for ");
    // probe.sh kept the line from its third byte (after "* ").
    hit.then(|| line.get(2..).unwrap_or(l))
}

/// curl's last word: `curl: (N) ...`.
fn final_word(line: &str) -> bool {
    line.strip_prefix("curl: (").is_some_and(|r| {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        n > 0 && r[n..].starts_with(") ")
    })
}

fn ms(secs: f64) -> u64 {
    (secs * 1000.0 + 0.5) as u64
}

fn span(a: Option<f64>, b: Option<f64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(ms(b - a)),
        _ => None,
    }
}

/// One check's section judged (`AWK_PATH` of probe.sh before the plugin judged it).
fn judge(
    target: &str,
    port: u16,
    own: bool,
    text: &str,
    ct: u64,
    tt: u64,
    tried: bool,
) -> PathCheck {
    let head = Head::of(text);
    let mut ended = head.get("check").unwrap_or_default().split_whitespace();
    let rc: i64 = ended.next().and_then(|r| r.parse().ok()).unwrap_or(-1);
    let elapsed: u64 = ended.next().and_then(|e| e.parse().ok()).unwrap_or(0);
    let mut w = head.get("w").unwrap_or_default().split_whitespace();
    let code: u64 = w.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let wc: f64 = w.next().and_then(|c| c.parse().ok()).unwrap_or(0.0);
    let wa: f64 = w.next().and_then(|c| c.parse().ok()).unwrap_or(0.0);
    let killed = head.get("killed");
    let elapsed = killed
        .and_then(|k| k.trim().parse().ok())
        .unwrap_or(elapsed);
    let killed = killed.is_some();
    let (mut t0, mut tc, mut th, mut last) = (None::<f64>, None::<f64>, None::<f64>, None::<f64>);
    let (mut conn, mut hs) = (false, false);
    let mut reason = String::new();
    let mut fin = String::new();
    for line in head.body.lines() {
        let (l, t) = stamped(line);
        let t = match (t, t0) {
            // Past midnight since the check started.
            (Some(t), Some(t0)) if t < t0 => Some(t + 86400.0),
            _ => t,
        };
        if t.is_some() {
            last = t;
        }
        if t0.is_none() && info(l).is_some_and(|i| i.starts_with("Trying ")) {
            t0 = t;
        }
        if !conn && connected(l) {
            conn = true;
            tc = t;
        }
        if !hs && handshaken(l) {
            hs = true;
            th = t;
        }
        if let Some(r) = failed_connect(l) {
            reason = r.to_string();
        }
        if final_word(l) {
            fin = l.to_string();
        }
    }
    let mut check = PathCheck {
        target: target.into(),
        port,
        own,
        tcp: TcpOutcome::Error,
        tcp_ms: None,
        tcp_detail: None,
        tls: TlsOutcome::NotTried,
        tls_ms: None,
        tls_detail: None,
        http_status: None,
    };
    let curl_exited = format!("curl exited {rc}");
    // Ended by the watchdog: not connected at the deadline, even if curl connected in the
    // instant before the signal (its handshake cut short by us is no TLS answer to judge).
    if !conn || killed {
        check.tcp_ms = if killed {
            Some(elapsed)
        } else {
            span(t0, last).or(Some(elapsed))
        };
        let mut detail = None;
        check.tcp = if killed {
            detail = Some(format!("no TCP answer within {ct} s"));
            TcpOutcome::Timeout
        } else if rc == 28 {
            TcpOutcome::Timeout
        } else if reason.contains("Connection refused") {
            TcpOutcome::Refused
        } else if [
            "No route to host",
            "Network is unreachable",
            "Host is unreachable",
        ]
        .iter()
        .any(|r| reason.contains(r))
        {
            TcpOutcome::NoRoute
        } else {
            TcpOutcome::Error
        };
        let detail = detail.unwrap_or_else(|| {
            if !reason.is_empty() {
                reason.clone()
            } else if !fin.is_empty() {
                fin.clone()
            } else {
                curl_exited.clone()
            }
        });
        check.tcp_detail = Some(cap(&detail, DETAIL));
        return check;
    }
    check.tcp = TcpOutcome::Connected;
    check.tcp_ms = if rc == 0 && wc > 0.0 {
        Some(ms(wc))
    } else {
        span(t0, tc)
    };
    let mut tls_detail = String::new();
    // A handshake that finished with nothing answering the request in time is NoHttpAnswer (not
    // etcd listening there, or one too busy to serve): never a working path.
    if !tried {
        if rc != 0 && !hs {
            tls_detail = fin.clone();
        }
    } else if rc == 0 || code > 0 {
        check.tls = TlsOutcome::Completed;
        check.http_status = u16::try_from(code).ok().filter(|c| *c > 0);
        if rc != 0 {
            tls_detail = fin.clone();
        }
        check.tls_ms = if wa > wc && wc > 0.0 {
            Some(ms(wa - wc))
        } else {
            span(tc, th)
        };
    } else if rc == 28 && hs {
        check.tls = TlsOutcome::NoHttpAnswer;
        check.tls_ms = span(tc, th);
        tls_detail = format!("no HTTP answer after the handshake: {fin}");
    } else if rc == 28 {
        check.tls = TlsOutcome::Stalled;
        check.tls_ms = span(tc, last);
        let after = check.tcp_ms.map_or("-1".to_string(), |m| m.to_string());
        tls_detail = format!(
            "no TLS handshake within {} s (connected after {after} ms): {fin}",
            ct + tt
        );
    } else {
        check.tls = TlsOutcome::Rejected;
        check.tls_ms = span(tc, last);
        tls_detail = fin.clone();
        // TLS 1.3: the client finishes first; a peer refusing its certificate may just close.
        if hs && !fin.contains("alert") && !fin.contains("certificate") {
            tls_detail = format!(
                "closed after the handshake, no HTTP answer (a refused client certificate under TLS 1.3): {fin}"
            );
        }
    }
    if check.tls != TlsOutcome::NotTried
        && check.tls != TlsOutcome::Completed
        && tls_detail.is_empty()
    {
        tls_detail = curl_exited;
    }
    if !tls_detail.is_empty() {
        check.tls_detail = Some(cap(&tls_detail, DETAIL));
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::frame;

    fn one(check: &str, tried: bool) -> PathCheck {
        let paths = format!(
            "checks 3 2 {}\npath 1 198.18.0.12 2380 false\n",
            u8::from(tried)
        );
        let text = frame::write(&[("paths", &paths), ("check.1", check)]);
        let mut all = read(&frame::read(&text).unwrap());
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    /// The watchdog's pattern (run by the node's grep) and the plugin's reading agree on every
    /// kind of line: stamped or not, each word curl says after a connect, and near misses.
    #[test]
    fn the_watchdogs_pattern_says_what_connected_and_final_word_say() {
        let lines = [
            "* Connected to 10.0.0.2 (10.0.0.2) port 2380",
            "*   Connected to x",
            "* Established connection to x",
            "* Established 2nd connection to x",
            "* ALPN: curl offers http/1.1",
            "* ALPN, offering http/1.1",
            "* TLSv1.3 (OUT), TLS handshake, Client hello (1):",
            "* TLSv1.0 (OUT), x",
            "* SSLv3 (OUT), x",
            "* SSL connection using TLSv1.3",
            "curl: (28) Connection timed out after 3001 milliseconds",
            "*   Trying 10.0.0.2:2380...",
            "* TLSv1.4 (OUT), x",
            "* TLSv1.3 (IN), TLS handshake",
            "*Connected to x",
            "curl: (x) no",
            "curl: (7)no",
            " * Connected to x",
            "** Connected to x",
            "",
        ];
        let dir = std::env::temp_dir().join(format!("etcdnet-connected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, line) in lines.iter().enumerate() {
            for stamp in ["", "12:00:00.123456 "] {
                let l = format!("{stamp}{line}");
                let f = dir.join(format!("{i}{}.v", stamp.len()));
                std::fs::write(&f, format!("{l}\n")).unwrap();
                let grep = std::process::Command::new("grep")
                    .args(["-q", "-E", CONNECTED_PATTERN])
                    .arg(&f)
                    .status()
                    .unwrap()
                    .success();
                let (untimed, _) = stamped(&l);
                let rust = connected(untimed) || final_word(untimed);
                assert_eq!(grep, rust, "{l:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_completed_check_reads_its_timings_from_the_w_line() {
        let c = one(
            "check 0 40\nw 200 0.012 0.050\n--\n12:00:00.000000 *   Trying 198.18.0.12:2380...\n12:00:00.012000 * Connected to 198.18.0.12 (198.18.0.12) port 2380\n12:00:00.050000 * SSL connection using TLSv1.3\n",
            true,
        );
        assert_eq!(
            (c.tcp, c.tls, c.http_status),
            (TcpOutcome::Connected, TlsOutcome::Completed, Some(200))
        );
        assert_eq!((c.tcp_ms, c.tls_ms), (Some(12), Some(38)));
    }

    #[test]
    fn refused_no_route_and_the_watchdogs_timeout() {
        let c = one(
            "check 7 3\nw 000 0 0\n--\n12:00:00.000000 *   Trying 198.18.0.12:2380...\n12:00:00.001000 * connect to 198.18.0.12 port 2380 from 198.18.0.11 port 4242 failed: Connection refused\ncurl: (7) Failed to connect\n",
            true,
        );
        assert_eq!((c.tcp, c.tls), (TcpOutcome::Refused, TlsOutcome::NotTried));
        assert!(c.tcp_detail.unwrap().starts_with("connect to "));
        let c = one(
            "check 7 3\nw 000 0 0\n--\n* Immediate connect fail for 198.18.0.12: No route to host\n",
            true,
        );
        assert_eq!(c.tcp, TcpOutcome::NoRoute);
        let c = one("check 143 3004\nkilled 3002\nw 000 0 0\n--\n12:00:00.000000 *   Trying 198.18.0.12:2380...\n", true);
        assert_eq!((c.tcp, c.tcp_ms), (TcpOutcome::Timeout, Some(3002)));
        assert_eq!(c.tcp_detail.as_deref(), Some("no TCP answer within 3 s"));
    }

    #[test]
    fn curl_8_16_connects_silently_and_a_stalled_or_unanswered_handshake_is_no_working_path() {
        // No "Connected to": the ClientHello line says the connect was done.
        let stalled = one(
            "check 28 5000\nw 000 0 0\n--\n12:00:00.000000 *   Trying 198.18.0.12:2380...\n12:00:00.010000 * TLSv1.3 (OUT), TLS handshake, Client hello (1):\n12:00:05.000000 * Operation timed out\ncurl: (28) Operation timed out after 5000 milliseconds\n",
            true,
        );
        assert_eq!(
            (stalled.tcp, stalled.tls),
            (TcpOutcome::Connected, TlsOutcome::Stalled)
        );
        assert_eq!(stalled.tcp_ms, Some(10));
        let silent = one(
            "check 28 5000\nw 000 0 0\n--\n12:00:00.000000 *   Trying 198.18.0.12:2380...\n12:00:00.010000 * Established connection to 198.18.0.12 (198.18.0.12 port 2380) from 198.18.0.11 port 4242\ncurl: (28) Operation timed out\n",
            true,
        );
        assert_eq!(silent.tls, TlsOutcome::NoHttpAnswer);
        let closed = one(
            "check 56 30\nw 000 0 0\n--\n* Connected to x\n* SSL connection using TLSv1.3\ncurl: (56) Recv failure: Connection reset by peer\n",
            true,
        );
        assert_eq!(closed.tls, TlsOutcome::Rejected);
        assert!(closed
            .tls_detail
            .unwrap()
            .starts_with("closed after the handshake"));
    }

    #[test]
    fn a_check_without_its_section_is_an_error_and_any_bytes_give_a_value() {
        let text = frame::write(&[(
            "paths",
            "checks 3 2 1\npath 1 10.0.0.1 2379 true\npath 2 10.0.0.1 2380 true\n",
        )]);
        let all = read(&frame::read(&text).unwrap());
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|c| c.tcp == TcpOutcome::Error));
        for junk in [
            "",
            "check",
            "check x y\nw a b c\nkilled z\n--\n99:99:99.x *\n* \ncurl: (",
            "\u{0}\u{fffd}é",
        ] {
            let _ = one(junk, true);
        }
    }
}
