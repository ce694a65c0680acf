//! The `etcdnet-fakensx` binary: serves a world until killed, printing its URL and the file
//! with its CA.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn serves_a_world_and_names_its_url_and_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let mut child = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .args(["--world"])
        .arg(etcdnet_fakensx::world_dir("infra-drop-2380"))
        .args(["--addr", "127.0.0.1:0", "--ca-out"])
        .arg(&ca)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    let ca_line = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(url.starts_with("url=https://127.0.0.1:"), "{url}");
    assert_eq!(ca_line, format!("ca={}", ca.display()));
    let pem = std::fs::read_to_string(&ca).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
}

#[test]
fn refuses_a_world_it_cannot_read() {
    let out = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .args(["--world", "/nonexistent-world"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_etcdnet-fakensx"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--world DIR is required"));
}
