//! Tests of the jumpbox pod's spec and of reading its framed log; the script itself under sh is
//! in `script_tests.rs`, which shares the set-up here.

use std::time::Duration;

use super::*;
use crate::probe::script::{self, ProbeArgs};
use crate::probe::ReachError;
use crate::route::ssh::locked_option_words;

pub(super) fn settings() -> JumpboxSettings {
    JumpboxSettings {
        namespace: "ns-prod".into(),
        cluster: "tkc-prod".into(),
        image: DEFAULT_IMAGE.into(),
        basics: PodBasics {
            image_pull_secret: None,
            run_id: "k3x9q".into(),
            deadline: Duration::from_secs(60),
        },
        ssh: SshSettings {
            user: "vmware-system-user".into(),
            connect_timeout: Duration::from_secs(3),
            options: vec![],
        },
        keeper: None,
        shared: None,
        kubectl_flags: String::new(),
    }
}

pub(super) const IPS: [&str; 3] = ["198.18.0.11", "198.18.0.12", "198.18.0.13"];

/// The article's three VMs, each the others' peer.
pub(super) fn addresses() -> Vec<Address> {
    addresses_of(&IPS)
}

/// VMs at `ips`, each the others' peer.
pub(super) fn addresses_of(ips: &[&str]) -> Vec<Address> {
    ips.iter()
        .map(|me| Address {
            ip: me.parse().unwrap(),
            probe: ProbeArgs::new(*me, ips.iter().filter(|p| *p != me).copied()),
        })
        .collect()
}

pub(super) fn targets() -> Vec<Target> {
    addresses()
        .into_iter()
        .enumerate()
        .map(|(i, a)| Target {
            name: format!("cp{}", i + 1),
            node_name: format!("cp{}", i + 1),
            address: Some(a),
        })
        .collect()
}

pub(super) fn pod_for(addresses: &[Address], nonce: &str) -> Pod {
    let vms: Vec<&Address> = addresses.iter().collect();
    jumpbox_pod(&vms, nonce, &settings())
}

pub(super) fn command_of(pod: &Pod) -> Vec<String> {
    pod.spec.as_ref().unwrap().containers[0]
        .command
        .clone()
        .unwrap()
}

pub(super) const NONCE: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

#[test]
fn one_pod_reaches_every_vm() {
    let pod = pod_for(&addresses(), NONCE);
    assert_eq!(
        pod.metadata.name.as_deref(),
        Some("etcdnet-jumpbox-tkc-prod-k3x9q"),
        "named after the cluster: one per diagnosis"
    );
    let argv = command_of(&pod);
    assert_eq!(argv[4], NONCE);
    assert_eq!(argv[9], "16", "--parallel bounds the VMs at once");
    assert_eq!(argv[10], NODE_OUTPUT_CAP.to_string());
    assert_eq!(argv[11], *script::PROBE_SH);
    assert_eq!(
        argv[ARGV_KEY_OF_VMS], "0 0 0",
        "every VM offered the one key"
    );
    let pairs: Vec<(&str, &str)> = argv[ARGV_VMS..]
        .chunks(2)
        .map(|p| (p[0].as_str(), p[1].as_str()))
        .collect();
    assert_eq!(pairs.len(), 3);
    for ((ip, remote), want) in pairs.iter().zip(IPS) {
        assert_eq!(*ip, want);
        assert!(
            remote.starts_with(&format!("sudo -n sh -s -- --self {want}")),
            "{remote}"
        );
        assert!(!remote.contains(NONCE), "the node never sees the nonce");
    }
    // A `parallel` of 2 reaches the script.
    let mut two = addresses();
    for a in &mut two {
        a.probe.parallel = 2;
    }
    assert_eq!(command_of(&pod_for(&two, NONCE))[9], "2");

    // --dry-run: one pod for all three, and none when no VM has an address.
    let s = settings();
    let pods = s.would_create(&targets());
    assert_eq!(pods.len(), 1);
    assert_eq!(command_of(&pods[0])[4], DRY_RUN_NONCE);
    assert_eq!(command_of(&pods[0]).len(), ARGV_VMS + 2 * 3);
    let mut none = targets();
    for t in &mut none {
        t.address = None;
    }
    assert!(s.would_create(&none).is_empty());
}

#[test]
fn nonces_are_new_and_long() {
    let a = new_nonce().unwrap();
    let b = new_nonce().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
}

/// The requests (a vSphere Pod's reservations) stay whatever the number of VMs; the in-memory
/// /tmp and the log limit grow with it, so every VM's section fits, and the VM's memory (its
/// limit) holds its own kernel and ssh clients besides /tmp.
#[test]
fn requests_stay_and_room_grows_with_the_vms() {
    let q = |pod: &Pod| {
        let v = serde_json::to_value(pod).unwrap();
        (
            v["spec"]["containers"][0]["resources"]["requests"].clone(),
            v["spec"]["containers"][0]["resources"]["limits"]["memory"].clone(),
            v["spec"]["volumes"][1]["emptyDir"]["sizeLimit"].clone(),
        )
    };
    let one = q(&pod_for(&addresses()[..1], NONCE));
    let three = q(&pod_for(&addresses(), NONCE));
    let seven: Vec<Address> = (0..7).map(|_| addresses()[0].clone()).collect();
    let seven = q(&pod_for(&seven, NONCE));
    assert_eq!(one.0, three.0);
    assert_eq!(one.0, seven.0);
    assert_eq!(one.0["memory"], "256Mi");
    assert_eq!(one.0["cpu"], "250m");
    assert_eq!(three.2, "14Mi", "3 sections of up to 4 MiB and a bit");
    assert_eq!(three.1, "270Mi");
    assert_eq!(seven.2, "30Mi");
    assert!(log_limit(3) >= 3 * NODE_OUTPUT_CAP);
    assert!(log_limit(7) > log_limit(3));
    assert_eq!(log_limit(0), log_limit(1));
    // The /tmp volume holds the whole log before it is printed.
    assert!(14 * 1024 * 1024 >= log_limit(3));
}

#[test]
fn the_key_stays_in_the_secret_volume() {
    let pod = pod_for(&addresses(), NONCE);
    let v = serde_json::to_value(&pod).unwrap();
    let vol = &v["spec"]["volumes"][0]["secret"];
    assert_eq!(vol["secretName"], "tkc-prod-ssh");
    // Readable by the pod's user with no fsGroup (a vSphere Pod's runtime is no kubelet);
    // ssh reads the script's 0600 copy in memory (script_tests).
    assert_eq!(vol["defaultMode"], 0o444);
    assert_eq!(vol["items"][0]["mode"], 0o444);
    let c = &v["spec"]["containers"][0];
    assert_eq!(c["volumeMounts"][0]["readOnly"], true);
    assert_eq!(
        c["env"],
        serde_json::json!([{"name": "HOME", "value": "/tmp"}]),
        "no env var but HOME: nothing of the key"
    );
    assert_eq!(v["metadata"]["namespace"], "ns-prod");
    assert_eq!(
        v["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "kubectl-etcdnet"
    );
    assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
    let argv = command_of(&pod);
    assert_eq!(
        argv[7], "/etc/etcdnet/ssh/ssh-privatekey",
        "a path, never the key"
    );
    assert_eq!(
        argv[8],
        locked_option_words(),
        "ssh's options, as the ssh route's"
    );
    assert!(argv[8].contains("-o ForwardAgent=no") && argv[8].contains("-o ControlPath=none"));
}

#[test]
fn the_jumpbox_is_restricted_and_not_root() {
    let pod = pod_for(&addresses(), NONCE);
    let v = serde_json::to_value(&pod).unwrap();
    let psc = &v["spec"]["securityContext"];
    assert_eq!(psc["runAsNonRoot"], true);
    assert_eq!(psc["runAsUser"], 65534);
    assert!(
        psc["fsGroup"].is_null(),
        "nothing relies on the kubelet's fsGroup: {psc}"
    );
    assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault");
    let c = &v["spec"]["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(sc["capabilities"]["add"].is_null());
    let tmp = &v["spec"]["volumes"][1];
    assert_eq!(tmp["emptyDir"]["medium"], "Memory");
    assert_eq!(c["volumeMounts"][1]["mountPath"], "/tmp");
    for v in v["spec"]["volumes"].as_array().unwrap() {
        assert!(
            v["secret"].is_object() || v["emptyDir"].is_object(),
            "restricted volume types only: {v}"
        );
    }
}

pub(super) const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY";
pub(super) const KEY_SHA256: &str = "SHA256:ty81B6nhE5K1O8wnrBKNdHkXNNiAoIkfpBzYPgaOUG4";

pub(super) fn healthy_document() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/probe-output/healthy-node.json"
    ))
    .unwrap()
    .trim()
    .to_string()
}

pub(super) fn healthy_section() -> String {
    format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Open\nETCDNET-REACH 2380 Open\nETCDNET-REACH 6443 Refused\nETCDNET-REACH-END\n{}\n\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
        healthy_document()
    )
}

#[test]
fn reads_a_section() {
    let ok = format!(
        "ETCDNET-REACH 2379 Open\nETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Timeout\nETCDNET-REACH 2380 Refused\nETCDNET-REACH-END\n{}\n\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
        healthy_document()
    );
    let r = read_log("cp1", "198.18.0.11", "u", &ok);
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    assert_eq!(
        r.reach.iter().map(|p| p.port).collect::<Vec<_>>(),
        [22, 2379, 2380, 6443]
    );
    assert_eq!(r.reach[3].state, PortState::Timeout);
    let key = r.host_key.unwrap();
    assert_eq!(
        (key.key_type.as_str(), key.sha256.as_str()),
        ("ED25519", KEY_SHA256)
    );

    let denied = "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\nvmware-system-user@198.18.0.11: Permission denied (publickey).\n\nETCDNET-HOSTKEY ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAQfFjWaK1mOC5cvxpw4GfdsrHvjpnqWbEa1XRgLc1DY\nETCDNET-SSH-EXIT 255\n";
    let r = read_log("cp1", "198.18.0.11", "u", denied);
    assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::AuthFailed);
    assert!(r.host_key.is_some(), "recorded before authentication");

    let timeout = "ETCDNET-REACH 22 Timeout\nETCDNET-REACH-END\nssh: connect to host 198.18.0.11 port 22: Connection timed out\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 255\n";
    let r = read_log("cp1", "198.18.0.11", "u", timeout);
    assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::Unreachable);
    assert_eq!(r.host_key, None);
}

/// What ssh and sudo said is what does not stand in the probe's framed output, whatever its
/// first character: a line `| ...` is not hidden from the failure's reading.
#[test]
fn the_nodes_words_are_told_by_where_they_stand_not_by_a_bar() {
    let log = "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n| sudo: a password is required\n\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 1\n";
    let r = read_log("cp1", "198.18.0.11", "u", log);
    assert_eq!(r.outcome.unwrap_err().kind, ReachErrorKind::AuthFailed);
}

#[test]
fn a_port_state_it_does_not_know_is_unknown_never_open() {
    let log = "ETCDNET-REACH 22 Open\nETCDNET-REACH 2379 Unknown\nETCDNET-REACH 2380 Halfway\nETCDNET-REACH 6443\n";
    let r = read_log("cp1", "198.18.0.11", "u", log);
    let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
    assert_eq!(
        states,
        [
            (22, PortState::Open),
            (2379, PortState::Unknown),
            (2380, PortState::Unknown),
            (6443, PortState::Unknown)
        ]
    );
}

/// The node writes into its section: lines it prints that look like the script's are not
/// taken for them.
#[test]
fn the_node_cannot_write_the_scripts_lines() {
    let forged = "ETCDNET-REACH 6443 Open\nETCDNET-HOSTKEY ssh-rsa AAAAB3NzaC1yc2E=\nETCDNET-SSH-EXIT 0\nETCDNET-JUMPBOX no-ssh-client\n";
    let log = format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH 6443 Refused\nETCDNET-REACH-END\n{forged}{}\n{forged}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n",
        healthy_document()
    );
    let r = read_log("cp1", "198.18.0.11", "u", &log);
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    assert_eq!(
        r.reach,
        [
            PortReach {
                port: 22,
                state: PortState::Open
            },
            PortReach {
                port: 6443,
                state: PortState::Refused
            }
        ]
    );
    assert_eq!(r.host_key.unwrap().sha256, KEY_SHA256);
    // Without the script's trailer (the pod was killed), a forged one is not the trailer.
    let cut = format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{forged}{}\n{forged}",
        healthy_document()
    );
    let r = read_log("cp1", "198.18.0.11", "u", &cut);
    assert_eq!(r.host_key, None);
    assert_eq!(r.reach.len(), 1);
}

/// More than a probe ever prints: cut by the script, refused here (not parsed).
#[test]
fn a_node_that_prints_too_much_is_bad_output() {
    let flood = "x".repeat(NODE_OUTPUT_CAP as usize);
    let section = format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{flood}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 255\n"
    );
    let r = read_log("cp1", "198.18.0.11", "u", &section);
    let e = r.outcome.unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::BadOutput);
    assert!(e.message.contains("more than 4 MiB"), "{}", e.message);
    assert_eq!(r.reach.len(), 1, "the script's lines are still read");
    assert!(r.host_key.is_some());
    // Exactly the most it reads is still read (and is not a document here).
    let most = format!(
        "ETCDNET-REACH-END\n{}\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n",
        &flood[1..]
    );
    let e = read_log("cp1", "198.18.0.11", "u", &most)
        .outcome
        .unwrap_err();
    assert!(!e.message.contains("more than 4 MiB"), "{}", e.message);
}

pub(super) fn sections(log: &str, vms: usize) -> Vec<std::result::Result<String, ReachError>> {
    split_log(log, NONCE, vms)
        .unwrap()
        .into_iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

pub(super) fn bad(s: &std::result::Result<String, ReachError>) -> &str {
    let e = s.as_ref().unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::BadOutput, "{e:?}");
    &e.message
}

#[test]
fn sections_are_read_by_their_length_in_any_order() {
    let a = healthy_section();
    let b = "ETCDNET-REACH 22 Timeout\nETCDNET-REACH-END\nno newline at the end";
    let c = "";
    let log = format!(
        "{}{}{}",
        frame(NONCE, 2, c),
        frame(NONCE, 0, &a),
        frame(NONCE, 1, b)
    );
    let s = sections(&log, 3);
    assert_eq!(s[0].as_deref(), Ok(a.as_str()));
    assert_eq!(s[1].as_deref(), Ok(b));
    assert_eq!(s[2].as_deref(), Ok(c));
    // Text outside any frame (the script's own stderr, say) is not a VM's.
    let noisy = format!("sh: warning\n{}trailing noise\n", frame(NONCE, 0, &a));
    let s = sections(&noisy, 1);
    assert_eq!(s[0].as_deref(), Ok(a.as_str()));
}

#[test]
fn a_missing_short_duplicated_or_garbled_section_is_that_vms_bad_output() {
    let a = healthy_section();
    let ok0 = frame(NONCE, 0, &a);
    let ok2 = frame(NONCE, 2, &a);

    // Missing: VM 1 has no section; the others are read.
    let s = sections(&format!("{ok0}{ok2}"), 3);
    assert!(s[0].is_ok() && s[2].is_ok());
    assert!(bad(&s[1]).contains("no section"), "{}", bad(&s[1]));

    // Short: the log ends inside VM 1's section (the pod was cut off).
    let one = frame(NONCE, 1, &a);
    let s = sections(&format!("{ok0}{}", &one[..one.len() / 2]), 2);
    assert!(s[0].is_ok());
    assert!(bad(&s[1]).contains("not the"), "{}", bad(&s[1]));

    // Announced longer than it is: its end line is not where the length says.
    let lying = format!("ETCDNET-NODE {NONCE} 1 99999\n{a}ETCDNET-NODE-END {NONCE} 1\n");
    let s = sections(&format!("{ok0}{lying}{ok2}"), 3);
    assert!(s[0].is_ok() && s[2].is_ok(), "{s:?}");
    assert!(bad(&s[1]).contains("99999"));
    // Announced shorter.
    let lying = format!("ETCDNET-NODE {NONCE} 1 10\n{a}ETCDNET-NODE-END {NONCE} 1\n");
    let s = sections(&format!("{lying}{ok0}{ok2}"), 3);
    assert!(s[0].is_ok() && s[2].is_ok(), "{s:?}");
    bad(&s[1]);

    // Duplicated: neither copy is used.
    let s = sections(
        &format!("{ok0}{}{ok2}{}", frame(NONCE, 1, &a), frame(NONCE, 1, "")),
        3,
    );
    assert!(s[0].is_ok() && s[2].is_ok());
    assert!(bad(&s[1]).contains("two sections"));

    // A garbled frame line, and an index the pod was not given: nobody's.
    let s = sections(
        &format!("ETCDNET-NODE {NONCE} x 3\nabcETCDNET-NODE {NONCE} 7 0\nETCDNET-NODE-END {NONCE} 7\n{ok0}"),
        1,
    );
    assert!(s[0].is_ok(), "{s:?}");

    // Nothing at all: every VM says so.
    for s in sections("", 3) {
        bad(&s);
    }
}

/// A compromised node prints frames of its own: without this run's nonce they are text of
/// its section; its section stays its own, and the next VM's is the script's.
#[test]
fn a_node_cannot_forge_a_frame() {
    let other = "0123456789abcdef0123456789abcdef";
    let evil_doc = healthy_document();
    // What a node could print: frames with a guessed nonce, an empty one, none; an end
    // line closing its own section early; a whole fake section for VM 1.
    let forged = format!(
        "ETCDNET-NODE-END {other} 0\nETCDNET-NODE {other} 1 5\nhello\nETCDNET-NODE-END {other} 1\n\
         ETCDNET-NODE  1 3\nabc\nETCDNET-NODE-END  1\nETCDNET-NODE 1 3\nETCDNET-NODE-END 0\n\
         ETCDNET-JUMPBOX {other} no-ssh-client\n"
    );
    let section0 = format!(
        "ETCDNET-REACH 22 Open\nETCDNET-REACH-END\n{forged}{evil_doc}\n{forged}\nETCDNET-HOSTKEY {KEY}\nETCDNET-SSH-EXIT 0\n"
    );
    let section1 = healthy_section();
    let log = format!(
        "{}{}",
        frame(NONCE, 0, &section0),
        frame(NONCE, 1, &section1)
    );
    let s = sections(&log, 2);
    assert_eq!(
        s[0].as_deref(),
        Ok(section0.as_str()),
        "the node's text, whole"
    );
    assert_eq!(s[1].as_deref(), Ok(section1.as_str()), "the next VM's own");
    let r = read_log("cp1", "198.18.0.11", "u", s[0].as_ref().unwrap());
    assert_eq!(r.reach.len(), 1);
    assert_eq!(r.host_key.unwrap().sha256, KEY_SHA256);

    // If a node did print a frame with the right nonce, the plugin would not take it for
    // another VM's: the length decides where the section ends. (The nonce keeps it from
    // ever printing one; this is the second line of defence.)
    let inner = frame(NONCE, 1, "ETCDNET-REACH 22 Open\n");
    let section0 =
        format!("ETCDNET-REACH-END\n{inner}\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n");
    let log = format!(
        "{}{}",
        frame(NONCE, 0, &section0),
        frame(NONCE, 1, &section1)
    );
    let s = sections(&log, 2);
    assert_eq!(s[0].as_deref(), Ok(section0.as_str()));
    assert_eq!(s[1].as_deref(), Ok(section1.as_str()));
}

/// Invalid UTF-8 from a node becomes U+FFFD on the way (the log is read as text), which
/// changes its section's length: that section is garbled, and the next is still found.
#[test]
fn invalid_utf8_garbles_only_its_own_section() {
    let mut raw = Vec::new();
    let mut bytes_section = b"ETCDNET-REACH-END\n\xff\xfe{not utf-8}\xc3\n".to_vec();
    bytes_section.extend_from_slice(b"\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n");
    raw.extend_from_slice(format!("ETCDNET-NODE {NONCE} 0 {}\n", bytes_section.len()).as_bytes());
    raw.extend_from_slice(&bytes_section);
    raw.extend_from_slice(format!("ETCDNET-NODE-END {NONCE} 0\n").as_bytes());
    raw.extend_from_slice(frame(NONCE, 1, &healthy_section()).as_bytes());
    let log = String::from_utf8_lossy(&raw).into_owned();
    let s = sections(&log, 2);
    bad(&s[0]);
    assert_eq!(s[1].as_deref(), Ok(healthy_section().as_str()));
}

#[test]
fn a_script_that_cannot_work_fails_every_vm() {
    let log = format!("ETCDNET-JUMPBOX {NONCE} no-ssh-client\n");
    let e = split_log(&log, NONCE, 3).unwrap_err();
    assert!(e.message.contains("no ssh client"), "{}", e.message);
    let e = split_log(&format!("ETCDNET-JUMPBOX {NONCE} no-tmp\n"), NONCE, 3).unwrap_err();
    assert!(e.message.contains("/tmp"), "{}", e.message);
    // Another run's (or a forged) line is not this script's.
    let log = format!(
        "ETCDNET-JUMPBOX 0123 no-ssh-client\n{}",
        frame(NONCE, 0, &healthy_section())
    );
    assert!(split_log(&log, NONCE, 1).unwrap()[0].is_ok());
}

/// `-A`'s jumpbox of a vSphere Namespace: each cluster's secret its own volume, mounted at its
/// own path (numbered, no cluster's name in a path or the command), every VM with its
/// cluster's number; named after the namespace.
#[test]
fn a_namespace_jumpbox_mounts_each_clusters_key_at_its_own_path() {
    let a = addresses_of(&["198.18.0.11", "198.18.0.12"]);
    let b = addresses_of(&["198.18.0.21"]);
    let vms = [(0, &a[0]), (0, &a[1]), (1, &b[0])];
    let name = namespace_pod_name("ns-prod", "k3x9q");
    assert_eq!(name, "etcdnet-jumpbox-ns-ns-prod-k3x9q");
    let pod = keyed_pod(name, &["tkc-a", "tkc-b"], &vms, NONCE, &settings());
    let v = serde_json::to_value(&pod).unwrap();
    let secrets: Vec<(&str, &str)> = v["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["secret"].is_object())
        .map(|v| {
            (
                v["name"].as_str().unwrap(),
                v["secret"]["secretName"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        secrets,
        [("ssh-key", "tkc-a-ssh"), ("ssh-key-1", "tkc-b-ssh")]
    );
    let mounts = &v["spec"]["containers"][0]["volumeMounts"];
    assert_eq!(mounts[0]["mountPath"], "/etc/etcdnet/ssh");
    assert_eq!(mounts[1]["mountPath"], "/etc/etcdnet/ssh-1");
    assert_eq!(mounts[1]["readOnly"], true);
    let argv = command_of(&pod);
    assert_eq!(
        argv[ARGV_KEYS],
        "/etc/etcdnet/ssh/ssh-privatekey /etc/etcdnet/ssh-1/ssh-privatekey"
    );
    assert_eq!(argv[ARGV_KEY_OF_VMS], "0 0 1");
    assert_eq!(argv[ARGV_VMS..].len(), 6);
    assert!(
        !argv.iter().any(|a| a.contains("tkc-")),
        "no cluster's name in the command"
    );
    assert_eq!(
        v["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "kubectl-etcdnet"
    );
    assert_eq!(v["spec"]["activeDeadlineSeconds"], 60);
}

/// The namespace's jumpbox is shared only by clusters with VMs to reach; each cluster's
/// sections are its own range of the pod's.
#[test]
fn a_namespace_jumpbox_is_shared_by_clusters_with_addresses() {
    let (mut a, mut b, mut c) = (settings(), settings(), settings());
    a.cluster = "tkc-a".into();
    b.cluster = "tkc-b".into();
    c.cluster = "tkc-c".into();
    b.basics.deadline = Duration::from_secs(90);
    let ts = targets();
    let one = &ts[..1];
    let none: Vec<Target> = ts
        .iter()
        .cloned()
        .map(|mut t| {
            t.address = None;
            t
        })
        .collect();
    let bound = Duration::from_secs(60);
    let shared =
        NamespaceJumpbox::new(&[(&a, &ts[..]), (&c, &none[..]), (&b, one)], bound).unwrap();
    assert_eq!(shared.member("tkc-a"), Some(0));
    assert_eq!(shared.member("tkc-b"), Some(1));
    assert_eq!(
        shared.member("tkc-c"),
        None,
        "no VM with an address: not in it"
    );
    assert_eq!(shared.vm_count(), 4);
    let shape = shared.shape();
    assert_eq!(shape.sections(), 4);
    assert_eq!(shape.sections_of("tkc-a"), Some(vec![0, 1, 2]));
    assert_eq!(shape.sections_of("tkc-b"), Some(vec![3]));
    assert_eq!(shape.sections_of("tkc-c"), None);
    let pod = shared.would_create();
    assert_eq!(
        pod.spec.as_ref().unwrap().active_deadline_seconds,
        Some(90),
        "the longest deadline of its clusters"
    );
    assert_eq!(command_of(&pod)[ARGV_KEY_OF_VMS], "0 0 0 1");
    // One cluster with VMs: nothing to share.
    assert!(NamespaceJumpbox::new(&[(&a, &ts[..]), (&c, &none[..])], bound).is_none());
    // Under --watch, one is enough: the kept pod is the namespace's.
    a.keeper = Some(std::sync::Arc::new(JumpboxKeeper::new(
        Duration::from_secs(5),
    )));
    assert!(NamespaceJumpbox::new(&[(&a, &ts[..]), (&c, &none[..])], bound).is_some());
}
