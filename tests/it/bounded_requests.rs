//! Work is bounded by time and bytes, whatever a server does (docs/security.md, "Bounds").
//! Through the real kubectl, against servers run by the test: a workload API that answers
//! `/readyz` and then trickles every other answer a byte a second, a Supervisor (the fake behind
//! a relay) that trickles or floods one answer. Each run ends within its stated bound with exit
//! 3 and says which API was too slow or too large.
//!
//! Without the plugin's own bounds every one of these fails: kube's read timeout restarts with
//! each byte and it collects a body whole, so the trickled runs are still going when the test
//! kills them (at the bound), and the flooded answer (80 MiB) is read and parsed (the run
//! "succeeds").

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use etcdnet::report::ListReport;
use etcdnet::report::{DiagnoseReport, ListItem};

const SET: &str = "healthy-v1alpha3";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";

/// How long a diagnosis may go past `--timeout` (`DIAGNOSIS_GRACE`), plus the deletes after it
/// (`delete_all`'s 15 s), plus the time a process takes to start and stop here.
const DIAGNOSE_MARGIN: Duration = Duration::from_secs(30 + 15 + 5);

/// What a [`Server`] does with a request.
#[derive(Clone, Copy)]
enum Answer {
    /// Headers at once, then one byte of the body a second, forever.
    Trickle,
    /// An 80 MiB body (blanks, then an empty list): valid JSON, too large to read.
    Flood,
    /// Relay to the upstream server.
    Relay,
}

/// A hand-rolled HTTP/1.1 server: `/readyz` answers 200 at once; a request whose path contains
/// one of `slow` is answered with `how`; any other is relayed to `upstream` (or, without one,
/// trickled).
struct Server {
    url: String,
    /// Request lines seen.
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// `tls`: speak HTTPS with the workload fakes' certificate ([`etcdnet_fakeapi::tls`]), as a
    /// workload API must for the plugin to send it the secret's credentials at all.
    fn start(
        upstream: Option<String>,
        slow: &'static [&'static str],
        how: Answer,
        tls: bool,
    ) -> Server {
        use etcdnet_fakeapi::tls::rustls::{ServerConnection, StreamOwned};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let scheme = if tls { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (upstream, keep) = (upstream.clone(), keep.clone());
                std::thread::spawn(move || {
                    if tls {
                        let conn =
                            ServerConnection::new(etcdnet_fakeapi::tls::server_config()).unwrap();
                        serve(StreamOwned::new(conn, stream), upstream, slow, how, keep)
                    } else {
                        serve(stream, upstream, slow, how, keep)
                    }
                });
            }
        });
        Server { url, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// One request's head and body, or None when the client closed.
fn read_request(stream: &mut impl Read) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    Some((head, body))
}

fn serve(
    mut stream: impl Read + Write,
    upstream: Option<String>,
    slow: &[&str],
    how: Answer,
    seen: Arc<Mutex<Vec<String>>>,
) {
    while let Some((head, body)) = read_request(&mut stream) {
        let line = head.lines().next().unwrap_or_default().to_string();
        seen.lock().unwrap().push(line.clone());
        let path = line.split(' ').nth(1).unwrap_or_default();
        if path.starts_with("/readyz") {
            let ok = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok";
            if stream.write_all(ok).and_then(|_| stream.flush()).is_err() {
                return;
            }
            continue;
        }
        let how = match (&upstream, slow.iter().any(|s| path.contains(s))) {
            (Some(_), false) => Answer::Relay,
            (None, false) => Answer::Trickle,
            (_, true) => how,
        };
        match how {
            Answer::Trickle => {
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{\r\n",
                );
                // JSON allows any number of blanks: the body is never wrong, only never done.
                while stream.write_all(b"1\r\n \r\n").is_ok() && stream.flush().is_ok() {
                    std::thread::sleep(Duration::from_secs(1));
                }
                return;
            }
            Answer::Flood => {
                let tail = br#"{"apiVersion":"v1","kind":"List","metadata":{},"items":[]}"#;
                let blanks = vec![b' '; 1 << 20];
                let length = 80 * blanks.len() + tail.len();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes());
                for _ in 0..80 {
                    if stream.write_all(&blanks).is_err() {
                        return;
                    }
                }
                let _ = stream.write_all(tail).and_then(|_| stream.flush());
            }
            Answer::Relay => {
                let answer = relay(upstream.as_deref().unwrap(), &head, &body);
                let _ = stream.write_all(&answer).and_then(|_| stream.flush());
                // One request per relayed connection (the answer says `connection: close`).
                return;
            }
        }
    }
}

/// `head` and `body` sent to `upstream` on a connection of their own; its whole answer, marked
/// `connection: close`.
fn relay(upstream: &str, head: &str, body: &[u8]) -> Vec<u8> {
    let mut up = TcpStream::connect(upstream.trim_start_matches("http://")).unwrap();
    let head: String = head
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    up.write_all(format!("{head}connection: close\r\n\r\n").as_bytes())
        .unwrap();
    up.write_all(body).unwrap();
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    if !head.contains("connection: close") {
        answer.splice(end..end, b"\r\nconnection: close".iter().copied());
    }
    answer
}

/// A world whose workload API is a server that trickles every answer but `/readyz`.
fn trickling_workload() -> (Env, Server) {
    let workload = Server::start(None, &[], Answer::Trickle, true);
    let env = Env::with_url(SET, None, &workload.url);
    (env, workload)
}

/// A world whose Supervisor is the fake behind a relay that answers the requests whose path
/// contains one of `slow` with `how` (the kubeconfig points at the relay).
fn hostile_supervisor(slow: &'static [&'static str], how: Answer) -> (Env, Server) {
    let env = Env::with_url(SET, None, "https://198.18.0.10:6443");
    let relay = Server::start(Some(env.supervisor.url()), slow, how, false);
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    let fake = env
        .supervisor
        .url()
        .trim_start_matches("http://")
        .to_string();
    let via = relay.url.trim_start_matches("http://").to_string();
    std::fs::write(&env.kubeconfig, text.replace(&fake, &via)).unwrap();
    (env, relay)
}

/// Runs `cmd` to its end and how long it took; kills it and fails if it is not done within
/// `bound`.
fn within(mut cmd: Command, bound: Duration) -> (Run, Duration) {
    let started = Instant::now();
    let mut child = cmd.spawn().expect("starts");
    let stdout = stdout_of(&mut child);
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = exit_within(&mut child, bound);
    let took = started.elapsed();
    let run = Run {
        code,
        stdout: stdout.all(),
        stderr: stderr.join().unwrap(),
    };
    (run, took)
}

/// Every node's reach error, from a diagnosis.
fn reach_errors(report: &DiagnoseReport) -> Vec<String> {
    report
        .nodes
        .iter()
        .map(|n| reach_error(n).message.clone())
        .collect()
}

// Long on purpose: waits out --timeout 8s against a workload API trickling a byte a second,
// then the 15 s bound on deleting the pods whose creates it never answered.
#[test]
fn diagnose_through_a_trickling_workload_api_ends_within_its_timeout() {
    let (env, workload) = trickling_workload();
    let timeout = Duration::from_secs(8);
    let cmd = env.kubectl_command(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "pod",
        "--timeout",
        "8s",
        "-o",
        "json",
    ]);
    let (run, took) = within(cmd, timeout + DIAGNOSE_MARGIN);
    // Every node unreached: the run could not complete its checks.
    run.expect_code(3);
    let report = run.diagnose_report();
    let errors = reach_errors(&report);
    assert!(!errors.is_empty());
    for e in &errors {
        assert!(
            e.contains(&format!(
                "the workload API at {}/ did not finish answering within 8s",
                workload.url
            )),
            "{e}"
        );
    }
    // The creates went out (and were cut), and so did the deletes after them.
    let seen = workload.seen();
    assert!(seen.iter().any(|l| l.starts_with("POST ")), "{seen:?}");
    assert!(seen.iter().any(|l| l.starts_with("DELETE ")), "{seen:?}");
    eprintln!("diagnose --timeout 8s took {took:?}");
}

// Long on purpose: --timeout 6s against the trickling workload API, then the 15 s delete bound.
#[test]
fn diagnose_all_namespaces_through_a_trickling_workload_api_ends() {
    let (env, workload) = trickling_workload();
    let cmd = env.kubectl_command(&["diagnose", "-A", "--timeout", "6s", "-o", "json"]);
    let (run, _) = within(cmd, Duration::from_secs(6) + DIAGNOSE_MARGIN);
    run.expect_code(3);
    let list: ListReport<DiagnoseReport> = run.report();
    assert!(!list.items.is_empty());
    for item in &list.items {
        let ListItem::Report(report) = item else {
            panic!("a cluster failed instead of being reported: {}", run.stdout)
        };
        for e in reach_errors(report) {
            assert!(e.contains("did not finish answering within 6s"), "{e}");
        }
    }
    assert!(workload.seen().iter().any(|l| l.starts_with("POST ")));
}

// Long on purpose: two --watch rounds against the trickling workload API, each waiting out
// --timeout 5s and then the 15 s bound on deleting the pods it never answered for.
#[test]
fn watch_rounds_through_a_trickling_workload_api_each_end() {
    let (env, _workload) = trickling_workload();
    let mut child = env
        .kubectl_command(&[
            "diagnose",
            CLUSTER,
            "-n",
            NS,
            "--via",
            "pod",
            "--timeout",
            "5s",
            "--watch",
            "--interval=1s",
            "-o",
            "json",
        ])
        .spawn()
        .unwrap();
    let stdout = stdout_of(&mut child);
    // One JSON document a round: two rounds, each within its bound.
    let round = Duration::from_secs(5) + DIAGNOSE_MARGIN + Duration::from_secs(1);
    let rounds = || stdout.now().lines().count();
    let started = Instant::now();
    // (Unwind-safe: the closure only reads the text so far.)
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("two --watch rounds", 2 * round, || rounds() >= 2)
    }));
    let _ = child.kill();
    let _ = child.wait();
    let text = stdout.all();
    assert!(waited.is_ok(), "after {:?}: {text}", started.elapsed());
    for line in text.lines().take(2) {
        let report: DiagnoseReport = serde_json::from_str(line).unwrap();
        for e in reach_errors(&report) {
            assert!(e.contains("did not finish answering within 5s"), "{e}");
        }
    }
}

#[test]
fn cleanup_of_a_cluster_through_a_trickling_workload_api_ends() {
    let (env, _workload) = trickling_workload();
    let cmd = env.kubectl_command(&[
        "cleanup",
        CLUSTER,
        "-n",
        NS,
        "--request-timeout",
        "3s",
        "-o",
        "json",
    ]);
    // The Supervisor's reads, then one list in the workload cluster cut at 3 s.
    let (run, _) = within(cmd, Duration::from_secs(3 + 10));
    run.expect_code(3);
    assert!(
        run.stdout.contains("did not finish answering within 3s"),
        "{}",
        run.stdout
    );
}

#[test]
fn status_against_a_trickling_supervisor_ends_within_the_request_timeout() {
    let (env, relay) = hostile_supervisor(&["/machines"], Answer::Trickle);
    let cmd = env.kubectl_command(&["status", CLUSTER, "-n", NS, "--request-timeout", "3s"]);
    let (run, took) = within(cmd, Duration::from_secs(3 + 10));
    run.expect_code(3);
    let line = run.one_line_error();
    assert!(
        line.contains(&format!(
            "the Supervisor API at {}/ did not finish answering within 3s",
            relay.url
        )),
        "{line}"
    );
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert!(relay.seen().iter().any(|l| l.contains("/machines")));
}

#[test]
fn an_oversized_supervisor_answer_is_refused_unread() {
    let (env, relay) = hostile_supervisor(&["/machines"], Answer::Flood);
    let cmd = env.kubectl_command(&["status", CLUSTER, "-n", NS]);
    let (run, _) = within(cmd, Duration::from_secs(60));
    run.expect_code(3);
    let line = run.one_line_error();
    assert!(
        line.contains(&format!(
            "the Supervisor API at {}/ sent more than 64 MiB (refused unread)",
            relay.url
        )),
        "{line}"
    );
}
