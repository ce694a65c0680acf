//! Health checks and curl from inside the nodes: how the lab (and its tests) look at etcd.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::exec;
use crate::lab::{Lab, CA_CRT, HEALTHCHECK_CRT, HEALTHCHECK_KEY};
use crate::member::log_tail;
use crate::net;
use crate::Node;

/// What one `curl` run on a node got. Exit codes worth knowing: 0 answered, 7 connection refused,
/// 28 timed out (connect or, after "Connected to", the TLS handshake), 35 TLS handshake failed,
/// 60 the server's certificate did not verify (e.g. "certificate has expired").
#[derive(Debug, Clone)]
pub struct Curl {
    pub code: i32,
    pub stdout: String,
    /// With `-v`: the connection log ("Trying", "Connected to", TLS steps) and curl's error.
    pub stderr: String,
}

impl Lab {
    /// Runs `curl -sS -v --http1.1 --connect-timeout 2 --max-time <max_time>` with the node's
    /// healthcheck-client certificate (as etcd's liveness probe would) against `url`, on node
    /// `from`, through its node view (so exactly what a probe on that node would get).
    pub fn curl(&self, from: &str, url: &str, max_time: Duration) -> Result<Curl> {
        let max = max_time.as_secs().max(1).to_string();
        let argv = [
            "curl",
            "-sS",
            "-v",
            "--http1.1",
            "--connect-timeout",
            "2",
            "--max-time",
            &max,
            "--cacert",
            CA_CRT,
            "--cert",
            HEALTHCHECK_CRT,
            "--key",
            HEALTHCHECK_KEY,
            url,
        ];
        let out = self.exec(from, &argv, None, max_time + Duration::from_secs(20))?;
        Ok(Curl {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Ok if this node's etcd answers `/health` true (through its own IP, from its netns, with
    /// the healthcheck-client certificate), else why not.
    fn health_of(&self, node: &Node) -> std::result::Result<(), String> {
        let pki = node.etcd_pki();
        let p = |f: &str| pki.join(f).to_string_lossy().into_owned();
        let url = format!("{}/health", node.client_url());
        let cmd = net::in_netns(
            &node.netns,
            &[
                "curl",
                "-sS",
                "--max-time",
                "2",
                "--cacert",
                &p("ca.crt"),
                "--cert",
                &p("healthcheck-client.crt"),
                "--key",
                &p("healthcheck-client.key"),
                &url,
            ],
        );
        let out = exec::run(cmd, None, Duration::from_secs(5)).map_err(|e| format!("{e:#}"))?;
        let body = String::from_utf8_lossy(&out.stdout);
        let healthy = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                v.get("health")
                    .and_then(|h| h.as_str().map(|s| s == "true"))
            })
            .unwrap_or(false);
        if healthy {
            Ok(())
        } else {
            Err(format!(
                "{}{}",
                body.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Whether this node's etcd reports `/health` true.
    pub fn health(&self, node: &str) -> Result<bool> {
        Ok(self.health_of(self.node(node)?).is_ok())
    }

    /// Waits until every member reports `/health` true, at most `timeout`; the error names the
    /// unhealthy members with the reason and the end of their logs.
    pub fn wait_healthy(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let results: Vec<std::result::Result<(), String>> = std::thread::scope(|s| {
                let handles: Vec<_> = self
                    .nodes()
                    .iter()
                    .map(|n| s.spawn(move || self.health_of(n)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("health check panicked".into()))
                    })
                    .collect()
            });
            if results.iter().all(|r| r.is_ok()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut msg = format!("not healthy within {timeout:?}:");
                for (n, r) in self.nodes().iter().zip(&results) {
                    if let Err(e) = r {
                        msg.push_str(&format!(
                            "\n  {} ({}): {e}\n    log: {}",
                            n.name,
                            n.ip,
                            log_tail(&n.log_file(), 5).replace('\n', "\n         ")
                        ));
                    }
                }
                bail!(msg);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
