//! The `<cluster>-kubeconfig` secret is written by whoever can edit Secrets in the vSphere
//! Namespace: it may carry credentials and an address, never instructions. Through the real
//! kubectl, a secret that names a local token file, or a server other than the Cluster's
//! `spec.controlPlaneEndpoint`, is refused with one line naming the field or both addresses, and
//! servers run by the test record that nothing (not the file's content, not a token, not even a
//! connection) ever arrives.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use etcdnet::analyse::FindingCode;
use etcdnet::report::StatusReport;
use etcdnet::workload::ApiState;

const SET: &str = "healthy-v1alpha3";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";
const SECRET: &str = "tkc-prod-kubeconfig";
/// What the admin's token file holds: it must never leave this machine.
const FILE_TOKEN: &str = "ADMINS-OWN-TOKEN-FROM-A-LOCAL-FILE";

/// A server that answers every request with 200 `{}` and keeps every byte it was sent, and how
/// many connections it accepted.
struct Recorder {
    url: String,
    seen: Arc<Mutex<(usize, Vec<u8>)>>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new((0, Vec::new())));
        let keep = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                keep.lock().unwrap().0 += 1;
                stream
                    .set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buf) {
                    keep.lock().unwrap().1.extend_from_slice(&buf[..n]);
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
                );
            }
        });
        Recorder { url, seen }
    }

    fn connections(&self) -> usize {
        self.seen.lock().unwrap().0
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap().1).into_owned()
    }
}

fn kubeconfig(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: tkc-prod
  cluster:
    server: {server}
contexts:
- name: admin@tkc-prod
  context: {{cluster: tkc-prod, user: admin}}
current-context: admin@tkc-prod
users:
- name: admin
  user:
{user}
"
    )
}

fn status(env: &Env) -> (Run, StatusReport) {
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    let report: StatusReport = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, report)
}

#[test]
fn a_token_file_in_the_secret_is_never_read_and_nothing_is_sent() {
    // The Cluster's endpoint is the recorder: only the token file is wrong.
    let server = Recorder::start();
    let env = Env::with_url(SET, None, &server.url);
    let token_file = env.dir.path().join("token");
    std::fs::write(&token_file, FILE_TOKEN).unwrap();
    let user = format!("    tokenFile: {}", token_file.display());
    env.supervisor
        .set_secret_data(NS, SECRET, "value", kubeconfig(&server.url, &user))
        .unwrap();

    let (run, report) = status(&env);
    assert_eq!(run.code, 1, "a refused secret is a finding: {}", run.stderr);
    assert_eq!(report.workload_api.state, ApiState::Untrusted);
    let finding = report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::WorkloadKubeconfigUntrusted)
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        finding
            .message
            .contains("sets tokenFile (a file on this machine)"),
        "{}",
        finding.message
    );
    // The table says it too, on one line.
    let table = env.kubectl(&["status", CLUSTER, "-n", NS]);
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.contains("tokenFile") && l.contains("inline")),
        "{}",
        table.stdout
    );
    // `cleanup <cluster>` uses the same secret: refused, and says where it could not look.
    let cleanup = env.kubectl(&["cleanup", CLUSTER, "-n", NS, "-o", "json"]);
    assert_eq!(cleanup.code, 3, "{}", cleanup.stderr);
    assert!(cleanup.stdout.contains("tokenFile"), "{}", cleanup.stdout);

    assert_eq!(server.connections(), 0, "{}", server.received());
    for out in [&run.stdout, &run.stderr, &table.stdout, &cleanup.stdout] {
        assert!(!out.contains(FILE_TOKEN));
        assert!(!out.contains(&token_file.display().to_string()), "{out}");
    }
}

#[test]
fn a_server_other_than_the_clusters_endpoint_gets_no_request_and_no_token() {
    let endpoint = Recorder::start();
    let elsewhere = Recorder::start();
    let env = Env::with_url(SET, None, &endpoint.url);
    let user = "    token: FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT";
    env.supervisor
        .set_secret_data(NS, SECRET, "value", kubeconfig(&elsewhere.url, user))
        .unwrap();

    let (run, report) = status(&env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(report.workload_api.state, ApiState::Untrusted);
    let message = &report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::WorkloadKubeconfigUntrusted)
        .unwrap()
        .message;
    let host_port = |url: &str| url.trim_start_matches("http://").to_string();
    assert!(
        message.contains(&elsewhere.url),
        "names the kubeconfig's server: {message}"
    );
    assert!(
        message.contains(&host_port(&endpoint.url)),
        "names the endpoint: {message}"
    );

    // Not through the pod route either.
    let diagnose = env.kubectl(&[
        "diagnose",
        CLUSTER,
        "-n",
        NS,
        "--via",
        "pod",
        "-o",
        "json",
        "--timeout",
        "20s",
    ]);
    assert_ne!(diagnose.code, 0, "{}", diagnose.stderr);

    assert_eq!(elsewhere.connections(), 0, "{}", elsewhere.received());
    assert_eq!(endpoint.connections(), 0, "{}", endpoint.received());
    for out in [&run.stdout, &run.stderr, &diagnose.stdout, &diagnose.stderr] {
        assert!(!out.contains("FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT"));
    }
}

#[test]
fn the_clusters_own_endpoint_with_an_inline_token_is_used() {
    // The control case: the same recorder, a kubeconfig as CAPI writes it, and the request
    // arrives with its token. Without it the two tests above could pass on a plugin that never
    // connects to anything.
    let server = Recorder::start();
    let env = Env::with_url(SET, None, &server.url);
    let user = "    token: INLINE-TOKEN-FOR-THE-ENDPOINT";
    env.supervisor
        .set_secret_data(NS, SECRET, "value", kubeconfig(&server.url, user))
        .unwrap();
    let (_, report) = status(&env);
    assert_eq!(
        report.workload_api.state,
        ApiState::Reachable,
        "{:?}",
        report.workload_api
    );
    assert!(server.connections() > 0);
    assert!(server
        .received()
        .to_ascii_lowercase()
        .contains("authorization: bearer inline-token-for-the-endpoint"));
}
