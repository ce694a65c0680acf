//! The `<cluster>-kubeconfig` secret is written by whoever can edit Secrets in the vSphere
//! Namespace: it may carry credentials and an address, never instructions. Through the real
//! kubectl, a secret that names a local token file, or a server other than the Cluster's
//! `spec.controlPlaneEndpoint`, is refused with one line naming the field or both addresses, and
//! servers run by the test record that nothing (not the file's content, not a token, not even a
//! connection) ever arrives. Its credentials travel only over TLS verified against its CA
//! (`certificate-authority-data`): `http://`, `insecure-skip-tls-verify` and a missing CA are
//! refused before any connection (the last two unless the admin passes
//! `--workload-insecure-skip-tls-verify`), and a CA that did not sign the server's certificate ends the
//! handshake before a byte of the request is sent.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use etcdnet::report::v1alpha2::ApiState;
use etcdnet::report::v1alpha2::FindingCode;
use etcdnet::report::StatusReport;

const SET: &str = "healthy-v1alpha3";
const NS: &str = "ns-prod";
const CLUSTER: &str = "tkc-prod";
const SECRET: &str = "tkc-prod-kubeconfig";
/// What the admin's token file holds: it must never leave this machine.
const FILE_TOKEN: &str = "ADMINS-OWN-TOKEN-FROM-A-LOCAL-FILE";

/// An HTTPS server (the workload fakes' certificate, [`etcdnet_fakeapi::tls`]) that answers
/// every request with 200 `{}` and keeps every byte it was sent (decrypted: what a client sent
/// once the handshake succeeded), and how many TCP connections it accepted (handshake or not).
struct Recorder {
    url: String,
    seen: Arc<Mutex<(usize, Vec<u8>)>>,
}

impl Recorder {
    fn start() -> Recorder {
        use etcdnet_fakeapi::tls::rustls::{ServerConnection, StreamOwned};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new((0, Vec::new())));
        let keep = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                keep.lock().unwrap().0 += 1;
                stream
                    .set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                let conn = ServerConnection::new(etcdnet_fakeapi::tls::server_config()).unwrap();
                let mut tls = StreamOwned::new(conn, stream);
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = tls.read(&mut buf) {
                    keep.lock().unwrap().1.extend_from_slice(&buf[..n]);
                }
                let _ = tls.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
                );
                let _ = tls.flush();
            }
        });
        Recorder { url, seen }
    }

    /// The same `host:port` as `http://`.
    fn http_url(&self) -> String {
        self.url.replace("https://", "http://")
    }

    fn connections(&self) -> usize {
        self.seen.lock().unwrap().0
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap().1).into_owned()
    }
}

/// A kubeconfig as CAPI writes it (the cluster's CA inline: the fakes' per-run CA), with
/// `cluster` lines added under the cluster and `user` under the user.
fn kubeconfig(server: &str, user: &str) -> String {
    kubeconfig_with(server, &ca_line(&etcdnet_fakeapi::tls::ca_data()), user)
}

fn ca_line(data: &str) -> String {
    format!("    certificate-authority-data: {data}")
}

fn kubeconfig_with(server: &str, cluster: &str, user: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: tkc-prod
  cluster:
    server: {server}
{cluster}
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
    let host_port = |url: &str| url.trim_start_matches("https://").to_string();
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

const TOKEN: &str = "    token: FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT";
const FLAG: &str = "--workload-insecure-skip-tls-verify";

/// The one `WorkloadKubeconfigUntrusted` finding of a status report.
fn untrusted(report: &StatusReport) -> &str {
    assert_eq!(
        report.workload_api.state,
        ApiState::Untrusted,
        "{:?}",
        report.workload_api
    );
    &report
        .findings
        .iter()
        .find(|f| f.code == FindingCode::WorkloadKubeconfigUntrusted)
        .unwrap_or_else(|| panic!("{:?}", report.findings))
        .message
}

/// A secret whose server is `http://` (the Cluster's own endpoint): the token would cross the
/// network readable. Refused before any connection, naming the secret and the field, by status
/// (exit 1: a finding), `-A`, diagnose through the pod route (exit 3: one error line says why
/// no pod can run) and `cleanup <cluster>` (exit 3: the workload cluster
/// skipped). Only the admin's explicit `--workload-insecure-skip-tls-verify` lets the run go to it (as
/// kubectl would, but never silently): the report then says the credentials went unencrypted.
/// Without the refusal the plugin would send its request and the token in clear without any
/// flag: the recorder would see connections and `authorization: Bearer ...`.
#[test]
fn cleartext_http_in_the_secret_gets_no_connection_without_the_flag() {
    let server = Recorder::start();
    let env = Env::with_url(SET, None, &server.http_url());
    env.supervisor
        .set_secret_data(NS, SECRET, "value", kubeconfig(&server.http_url(), TOKEN))
        .unwrap();

    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
    assert_eq!(run.code, 1, "a refused secret is a finding: {}", run.stderr);
    let report: StatusReport = run.report();
    let message = untrusted(&report);
    assert!(
        message.starts_with(&format!("secret \"{SECRET}\": cluster \"tkc-prod\" in the kubeconfig sets server \"{}\" (not https", server.http_url())),
        "{message}"
    );
    assert!(
        message.contains(
            "; pass --workload-insecure-skip-tls-verify to send the credentials anyway, in clear;"
        ),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    let all = env.kubectl(&["status", "-A", "-o", "json"]);
    assert!(all.stdout.contains("(not https"), "{}", all.stdout);
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
    // The pod route needs the workload API, which was not contacted: one error line says why
    // (exit 3), before anything is created.
    assert_eq!(diagnose.code, 3, "{}\n{}", diagnose.stdout, diagnose.stderr);
    assert!(
        diagnose.stderr.contains("(not https"),
        "{}",
        diagnose.stderr
    );
    let cleanup = env.kubectl(&["cleanup", CLUSTER, "-n", NS, "-o", "json"]);
    assert_eq!(cleanup.code, 3, "{}", cleanup.stderr);
    assert!(cleanup.stdout.contains("sets server"), "{}", cleanup.stdout);

    assert_eq!(server.connections(), 0, "{}", server.received());
    for out in [
        &all.stdout,
        &diagnose.stdout,
        &diagnose.stderr,
        &cleanup.stdout,
    ] {
        assert!(!out.contains("FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT"));
    }

    // With the flag the admin has said so: the request goes (here to a server that speaks TLS,
    // so it gets no answer), the warning is on stderr and the report says it went unencrypted.
    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json", FLAG]);
    assert!(server.connections() > 0, "the flag lets the request go");
    assert!(
        run.stderr
            .contains("an http:// server in the secret is used, unencrypted"),
        "{}",
        run.stderr
    );
    let report: StatusReport = run.report();
    assert_ne!(report.workload_api.state, ApiState::Untrusted);
    assert!(
        report.workload_api.detail.ends_with(
            "(plain http, credentials sent unencrypted: --workload-insecure-skip-tls-verify)"
        ),
        "{}",
        report.workload_api.detail
    );
}

/// A secret that turns the server's certificate check off (`insecure-skip-tls-verify: true`) or
/// gives no CA to check it with: refused before any connection, naming the secret and the
/// field; with `--workload-insecure-skip-tls-verify` the run proceeds (the token arrives), says so on
/// stderr and in the report. Were the secrets used as they are, the first would send the
/// token to an unchecked server (the recorder would see it) and the second would check the
/// server against this machine's roots.
#[test]
fn an_unverified_server_gets_no_token_unless_the_admin_says_so() {
    for (cluster, field) in [
        (
            "    insecure-skip-tls-verify: true",
            "sets insecure-skip-tls-verify (",
        ),
        ("", "has no certificate-authority-data ("),
    ] {
        let server = Recorder::start();
        let env = Env::with_url(SET, None, &server.url);
        env.supervisor
            .set_secret_data(
                NS,
                SECRET,
                "value",
                kubeconfig_with(&server.url, cluster, TOKEN),
            )
            .unwrap();

        let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let report: StatusReport = run.report();
        let message = untrusted(&report);
        assert!(
            message.starts_with(&format!(
                "secret \"{SECRET}\": cluster \"tkc-prod\" in the kubeconfig {field}"
            )),
            "{message}"
        );
        assert!(
            message.contains(
                "; pass --workload-insecure-skip-tls-verify to send the credentials anyway"
            ),
            "{message}"
        );
        let cleanup = env.kubectl(&["cleanup", CLUSTER, "-n", NS, "-o", "json"]);
        assert_eq!(cleanup.code, 3, "{}", cleanup.stderr);
        assert!(cleanup.stdout.contains(field), "{}", cleanup.stdout);
        assert_eq!(server.connections(), 0, "{field}: {}", server.received());

        let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json", FLAG]);
        let report: StatusReport = run.report();
        assert_eq!(
            report.workload_api.state,
            ApiState::Reachable,
            "{field}: {:?}",
            report.workload_api
        );
        assert!(
            report
                .workload_api
                .detail
                .ends_with("(certificate not verified: --workload-insecure-skip-tls-verify)"),
            "{}",
            report.workload_api.detail
        );
        assert!(
            run.stderr
                .starts_with("warning: --workload-insecure-skip-tls-verify: the workload API's certificate is not checked"),
            "{}",
            run.stderr
        );
        assert!(server
            .received()
            .to_ascii_lowercase()
            .contains("authorization: bearer fake-workload-token-do-not-print"));
        for out in [&run.stdout, &run.stderr, &cleanup.stdout] {
            assert!(!out.contains("FAKE-WORKLOAD-TOKEN-DO-NOT-PRINT"));
        }

        // The old spelling (it looked like kubectl's own flag, which is about the Supervisor
        // here) still works this release, through kubectl too, and says so first.
        let old = env.kubectl(&[
            "status",
            CLUSTER,
            "-n",
            NS,
            "-o",
            "json",
            "--insecure-skip-tls-verify",
        ]);
        let report: StatusReport = old.report();
        assert_eq!(report.workload_api.state, ApiState::Reachable, "{field}");
        let mut lines = old.stderr.lines();
        assert_eq!(
            lines.next(),
            Some(
                "Flag --insecure-skip-tls-verify has been deprecated, use \
                 --workload-insecure-skip-tls-verify (it applies to the workload API only) instead"
            ),
            "{}",
            old.stderr
        );
        assert!(
            lines.next().is_some_and(|l| l
                .starts_with("warning: --workload-insecure-skip-tls-verify: the workload API's")),
            "{}",
            old.stderr
        );
    }
}

/// A secret whose CA did not sign the server's certificate (someone else answers at the
/// endpoint): the handshake fails, `TlsError`, and not a byte of the request (nor the token)
/// is sent; `--workload-insecure-skip-tls-verify` (kubectl's meaning: the CA is not used) proceeds. The
/// first half is kube's own check of a CA it is given; the second is the plugin's flag.
#[test]
fn a_ca_that_did_not_sign_the_servers_certificate_gets_no_token() {
    let server = Recorder::start();
    let env = Env::with_url(SET, None, &server.url);
    let other = ca_line(&etcdnet_fakeapi::tls::other_ca_data());
    env.supervisor
        .set_secret_data(
            NS,
            SECRET,
            "value",
            kubeconfig_with(&server.url, &other, TOKEN),
        )
        .unwrap();

    let (run, report) = status(&env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        report.workload_api.state,
        ApiState::TlsError,
        "{:?}",
        report.workload_api
    );
    assert!(server.connections() > 0, "it tried");
    assert_eq!(server.received(), "", "nothing readable arrived");

    let run = env.kubectl(&["status", CLUSTER, "-n", NS, "-o", "json", FLAG]);
    let report: StatusReport = run.report();
    assert_eq!(
        report.workload_api.state,
        ApiState::Reachable,
        "{}",
        run.stderr
    );
    assert!(server
        .received()
        .to_ascii_lowercase()
        .contains("authorization: bearer fake-workload-token-do-not-print"));
}
