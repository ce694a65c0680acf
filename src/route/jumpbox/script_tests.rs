//! Tests of `jumpbox.sh` itself, run under sh with a fake `ssh` first on its PATH: what the
//! plugin reads back from it.

use super::tests::*;
use super::*;
use crate::probe::ReachErrorKind;
use crate::route::ssh::locked_option_words;
use crate::route::Reached;

/// The probe document the fake ssh prints for a node that ran the probe.
const HEALTHY_DOC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/probe-output/healthy-node.json"
);

/// Writes `script` (a `#!/bin/sh` one) as an executable `ssh` in `dir` (put first on the
/// script's PATH).
fn install_ssh(dir: &std::path::Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    assert!(
        script.starts_with("#!/bin/sh\n"),
        "a fake ssh is a #!/bin/sh script"
    );
    let fake = dir.join("ssh");
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// What the test's secret volume holds as the key (the fake ssh never reads it as a key).
const MOUNTED_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n";

/// The key as the pod's secret volume shows it: `dir`/mounted-key at [`KEY_MODE`], owned by
/// whoever runs the test (as a runtime might give it to the pod's user).
fn mount_key(dir: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let at = dir.join("mounted-key");
    std::fs::write(&at, MOUNTED_KEY).unwrap();
    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(KEY_MODE as u32)).unwrap();
    at.display().to_string()
}

/// Runs the jumpbox pod's command with the fake ssh in `dir` first on PATH, `dir` as its
/// TMPDIR and the key mounted in `dir` ([`mount_key`]).
fn run_script(argv: &[String], dir: &std::path::Path) -> std::process::Output {
    let mut argv = argv.to_vec();
    argv[7] = mount_key(dir);
    run_script_as_is(&argv, dir)
}

/// [`run_script`] with the key path the command has.
fn run_script_as_is(argv: &[String], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("TMPDIR", dir)
        .output()
        .unwrap()
}

/// A fake `ssh` that answers as the real one does for each port of 198.18.0.11 (and one
/// way it never does), runs the probe there (its document: the fixture's) and, at
/// 198.18.0.12, prints forged frames around the document; 198.18.0.13 does not answer.
fn fake_ssh(dir: &std::path::Path) -> std::path::PathBuf {
    let calls = dir.join("calls");
    install_ssh(
        dir,
        &format!(
            r#"#!/bin/sh
echo "$*" >>{calls}
port=22 kh= probe= host=
while [ $# -gt 0 ]; do
case $1 in
    -p) port=$2; shift ;;
    -i) probe=yes
        # The key ssh is given: its mode, and whether it is the mounted one's copy.
        echo "$(stat -c %a "$2") $(cmp -s "$2" {mounted} && echo copy)" >>{calls}.keys
        shift ;;
    -o) case $2 in UserKnownHostsFile=*) kh=${{2#UserKnownHostsFile=}} ;; esac; shift ;;
    -l) shift ;;
    -*) ;;
    *) [ -n "$host" ] || host=${{1#*@}} ;;
esac
shift
done
echo "$host" >>{calls}.hosts
if [ "$host" = 198.18.0.13 ]; then
sleep 0.2
echo "ssh: connect to host $host port $port: Connection timed out" >&2; exit 255
fi
# accept-new: the key is recorded on first contact with 22.
if [ "$port" = 22 ] && [ ! -s "$kh" ]; then echo "$host {KEY}" >>"$kh"; fi
case $port in
2379) echo "kex_exchange_identification: Connection closed by remote host" >&2; exit 255 ;;
2380) echo "ssh: something nobody has seen before" >&2; exit 255 ;;
6443) echo "ssh: connect to host $host port 6443: Connection refused" >&2; exit 255 ;;
esac
if [ -n "$probe" ]; then
cat >/dev/null
if [ "$host" = 198.18.0.12 ]; then
    printf 'ETCDNET-NODE-END x 1\nETCDNET-NODE x 2 3\nabc\nETCDNET-NODE-END x 2\n'
    printf 'ETCDNET-REACH 6443 Open\nETCDNET-HOSTKEY none\nETCDNET-SSH-EXIT 0\n'
fi
cat {doc}
exit 0
fi
echo "etcdnet@$host: Permission denied (publickey)." >&2
exit 255
"#,
            calls = calls.display(),
            doc = HEALTHY_DOC,
            mounted = dir.join("mounted-key").display(),
        ),
    );
    calls
}

/// The script itself under sh, for three VMs at once: what the plugin reads back.
#[test]
fn the_script_reports_what_ssh_says() {
    let dir = tempfile::tempdir().unwrap();
    let calls = fake_ssh(dir.path());
    let pod = pod_for(&addresses(), NONCE);
    let argv = command_of(&pod);
    let out = run_script(&argv, dir.path());
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8(out.stdout).unwrap();
    let s = split_log(&log, NONCE, 3).unwrap();
    let read: Vec<Reached> = s
        .iter()
        .zip(IPS)
        .map(|(s, ip)| read_log("cp", ip, "vmware-system-user", s.as_ref().unwrap()))
        .collect();
    for r in &read[..2] {
        let states: Vec<(u16, PortState)> = r.reach.iter().map(|p| (p.port, p.state)).collect();
        assert_eq!(
            states,
            [
                (22, PortState::Open),
                (2379, PortState::Open),
                (2380, PortState::Unknown),
                (6443, PortState::Refused)
            ]
        );
        assert_eq!(
            r.host_key.as_ref().map(|k| k.sha256.as_str()),
            Some(KEY_SHA256)
        );
    }
    // The forged lines are the node's text, in its own section: its ports and host key are
    // the script's (above), and its document is still found among them.
    for r in &read[..2] {
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    }
    // The third VM does not answer: its own row.
    let e = read[2].outcome.as_ref().unwrap_err();
    assert_eq!(e.kind, ReachErrorKind::Unreachable, "{e:?}");
    assert!(log.len() < 3 * 32 * 1024, "{}", log.len());
    assert_eq!(read[2].host_key, None);
    assert!(read[2].reach.iter().all(|p| p.state == PortState::Timeout));
    // Every ssh started with the locked options, each VM's own known_hosts file after them.
    let calls = std::fs::read_to_string(&calls).unwrap();
    // Three port checks and the probe's connection per VM: 22 is known from the latter.
    assert_eq!(calls.lines().count(), 12, "{calls}");
    assert!(!calls.contains("-p 22 "), "{calls}");
    for call in calls.lines() {
        assert!(call.starts_with(&locked_option_words()), "{call}");
        assert!(call.contains("-o UserKnownHostsFile=/"), "{call}");
        // The key exchanges are ssh's own: the script neither sets them nor asks ssh for its
        // list (an `ssh -G` would be a 13th call).
        assert!(!call.contains("KexAlgorithms"), "{call}");
    }
    // ssh read the script's own copy of the key, 0600, never the mounted file (readable by
    // others, which ssh refuses for a key of its own user: authfile.c sshkey_perm_ok).
    let keys = std::fs::read_to_string(dir.path().join("calls.keys")).unwrap();
    assert_eq!(keys, "600 copy\n".repeat(3), "{keys}");
    assert!(!calls.contains("mounted-key"), "{calls}");
    assert!(!log.contains("not a real key"), "the key is never printed");
    // The pod's files (the key's copy among them) are removed with the run.
    assert_no_pod_files_left(dir.path());
}

/// Port 22 is read from the probe's own connection: a node that ran the command (any exit
/// code but ssh's 255) is open on 22, a failed TCP connect names its state on ssh's first
/// line; only what neither tells (an authentication failure here) gets a connection of its
/// own, so a VM's sshd sees one session per diagnosis, not a second one as `etcdnet`.
#[test]
fn port_22_comes_from_the_probes_own_connection() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    install_ssh(
        dir.path(),
        &format!(
            r#"#!/bin/sh
port=22 probe= host=
while [ $# -gt 0 ]; do
case $1 in
    -p) port=$2; shift ;;
    -i) probe=yes; shift ;;
    -o | -l) shift ;;
    -*) ;;
    *) [ -n "$host" ] || host=${{1#*@}} ;;
esac
shift
done
echo "$host $port ${{probe:-reach}}" >>{calls}
echo "${{probe:-reach}} $(awk '{{print $19}}' /proc/$$/stat)" >>{calls}.nice
[ -n "$probe" ] && cat >/dev/null
case $host:$port:$probe in
*:2379:|*:2380:) echo "kex_exchange_identification: Connection closed by remote host" >&2; exit 255 ;;
*:6443:) echo "ssh: connect to host $host port 6443: Connection refused" >&2; exit 255 ;;
198.18.0.11:22:yes) cat {doc}; exit 0 ;;
198.18.0.12:22:yes) echo "vmware-system-user@$host: Permission denied (publickey)." >&2; exit 255 ;;
198.18.0.12:22:) echo "etcdnet@$host: Permission denied (publickey)." >&2; exit 255 ;;
198.18.0.13:22:yes) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255 ;;
198.18.0.14:22:yes) echo "sudo: a password is required" >&2; exit 1 ;;
esac
echo "ssh: unexpected $host $port" >&2
exit 255
"#,
            calls = calls.display(),
            doc = HEALTHY_DOC,
        ),
    );
    let ips = ["198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.14"];
    let argv = command_of(&pod_for(&addresses_of(&ips), NONCE));
    let out = run_script(&argv, dir.path());
    assert!(out.status.success(), "{out:?}");
    let log = String::from_utf8(out.stdout).unwrap();
    let sections = split_log(&log, NONCE, 4).unwrap();
    let state_of_22: Vec<PortState> = sections
        .iter()
        .zip(ips)
        .map(|(s, ip)| {
            let r = read_log("cp", ip, "vmware-system-user", s.as_ref().unwrap());
            assert_eq!(r.reach.len(), 4, "{ip}: {:?}", r.reach);
            r.reach.iter().find(|p| p.port == 22).unwrap().state
        })
        .collect();
    assert_eq!(
        state_of_22,
        [
            PortState::Open,
            PortState::Open,
            PortState::Refused,
            PortState::Open
        ]
    );
    let nice = std::fs::read_to_string(calls.with_extension("nice")).unwrap();
    let calls = std::fs::read_to_string(&calls).unwrap();
    let own_22: Vec<&str> = calls.lines().filter(|l| l.ends_with(" 22 reach")).collect();
    assert_eq!(own_22, ["198.18.0.12 22 reach"], "{calls}");
    // The port checks yield the CPU to the probes' connections.
    let of = |kind: &str| -> Vec<i32> {
        let mut v: Vec<i32> = (nice.lines())
            .filter_map(|l| l.strip_prefix(kind))
            .map(|n| n.trim().parse().unwrap())
            .collect();
        v.dedup();
        v
    };
    let probes = of("yes ");
    assert_eq!(probes.len(), 1, "{nice}");
    assert_eq!(of("reach "), [(probes[0] + 10).min(19)], "{nice}");
}

/// A `parallel` of 1: one VM after another, in the same sections.
#[test]
fn the_script_works_on_at_most_parallel_vms() {
    let dir = tempfile::tempdir().unwrap();
    let calls = fake_ssh(dir.path());
    let mut vms = addresses();
    for a in &mut vms {
        a.probe.parallel = 1;
    }
    let argv = command_of(&pod_for(&vms, NONCE));
    let out = run_script(&argv, dir.path());
    let log = String::from_utf8(out.stdout).unwrap();
    let s = split_log(&log, NONCE, 3).unwrap();
    assert!(s.iter().all(|s| s.is_ok()), "{s:?}");
    // One lane: every call to .11 comes before any to .12, and those before .13's.
    let hosts = std::fs::read_to_string(calls.with_extension("hosts")).unwrap();
    let hosts: Vec<&str> = hosts.lines().collect();
    assert_eq!(hosts.len(), 12);
    let mut sorted = hosts.clone();
    sorted.sort();
    assert_eq!(hosts, sorted, "one VM at a time");
}

/// A key the pod's user cannot read (a runtime that kept it 0400 and root's, with no fsGroup):
/// the script stops before any ssh, and every VM says why with the way out.
#[test]
fn an_unreadable_key_stops_the_script_before_any_ssh() {
    let dir = tempfile::tempdir().unwrap();
    let calls = fake_ssh(dir.path());
    let mut argv = command_of(&pod_for(&addresses(), NONCE));
    argv[7] = dir.path().join("no-such-key").display().to_string();
    let out = run_script_as_is(&argv, dir.path());
    assert!(!out.status.success(), "{out:?}");
    let log = String::from_utf8(out.stdout).unwrap();
    let e = split_log(&log, NONCE, 3).unwrap_err();
    assert!(
        e.message.contains("could not read the SSH key") && e.message.contains("--via ssh"),
        "{}",
        e.message
    );
    assert!(!calls.exists(), "no ssh ran");
    assert_no_pod_files_left(dir.path());
}

/// `-A`'s jumpbox of a vSphere Namespace: two clusters' keys, each VM offered its own
/// cluster's key alone (never the other's), each key copied to 0600; a key number that is
/// none of the keys stops the script before any ssh.
#[test]
fn each_vm_is_offered_only_its_own_clusters_key() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    install_ssh(
        dir.path(),
        &format!(
            r#"#!/bin/sh
key= host=
while [ $# -gt 0 ]; do
case $1 in
    -i) key=$2; shift ;;
    -p | -o | -l) shift ;;
    -*) ;;
    *) [ -n "$host" ] || host=${{1#*@}} ;;
esac
shift
done
if [ -n "$key" ]; then
    echo "$host $(head -n 1 "$key") $(stat -c %a "$key")" >>{calls}
    cat >/dev/null
    cat {doc}
    exit 0
fi
echo "etcdnet@$host: Permission denied (publickey)." >&2
exit 255
"#,
            calls = calls.display(),
            doc = HEALTHY_DOC,
        ),
    );
    // Cluster a's VMs at .11 and .12, cluster b's at .21; each cluster's key says whose it is.
    let mut keys = Vec::new();
    for who in ["a", "b"] {
        let at = dir.path().join(format!("key-{who}"));
        std::fs::write(&at, format!("key-of-{who}\n")).unwrap();
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(KEY_MODE as u32)).unwrap();
        keys.push(at.display().to_string());
    }
    let a = addresses_of(&["198.18.0.11", "198.18.0.12"]);
    let b = addresses_of(&["198.18.0.21"]);
    let vms = [(0, &a[0]), (0, &a[1]), (1, &b[0])];
    let s = settings();
    let pod = keyed_pod("p".into(), &["tkc-a", "tkc-b"], &vms, NONCE, &s);
    let mut argv = command_of(&pod);
    assert_eq!(argv[ARGV_KEY_OF_VMS], "0 0 1");
    argv[ARGV_KEYS] = keys.join(" ");
    let out = run_script_as_is(&argv, dir.path());
    assert!(out.status.success(), "{out:?}");
    let log = String::from_utf8(out.stdout).unwrap();
    let sections = split_log(&log, NONCE, 3).unwrap();
    assert!(sections.iter().all(|s| s.is_ok()), "{sections:?}");
    let mut used: Vec<String> = std::fs::read_to_string(&calls)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    used.sort();
    assert_eq!(
        used,
        [
            "198.18.0.11 key-of-a 600",
            "198.18.0.12 key-of-a 600",
            "198.18.0.21 key-of-b 600"
        ]
    );
    assert!(!log.contains("key-of-"), "no key is ever printed");

    // A key number past the keys (the plugin never sends one): no VM is contacted.
    std::fs::remove_file(&calls).unwrap();
    for bad in ["0 0 2", "0 1", "0 x 1", "0 0 1 1"] {
        argv[ARGV_KEY_OF_VMS] = bad.into();
        let out = run_script_as_is(&argv, dir.path());
        assert!(!out.status.success(), "{bad}: {out:?}");
        let log = String::from_utf8(out.stdout).unwrap();
        let e = split_log(&log, NONCE, 3).unwrap_err();
        assert!(e.message.contains("key number"), "{bad}: {}", e.message);
    }
    assert!(!calls.exists(), "no ssh ran");
}

/// The script's own files (`mktemp`'s `tmp.*`: the key's copy among them) are gone after its
/// run.
fn assert_no_pod_files_left(dir: &std::path::Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tmp."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
