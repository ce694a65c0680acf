//! The node probe, embedded in the binary, and the command lines that run it.
//!
//! `probe.sh` is one POSIX `sh` script (bash, dash, busybox ash). A route runs it as root on a
//! control-plane node either as `sh -c "$PROBE_SH" etcdnet-probe ARGS...` (a pod's command, an exec)
//! or as `sh -s -- ARGS...` with the script on stdin (ssh, where the remote command line is one
//! string). It prints framed raw sections ([`crate::probe::frame`]) read back by
//! [`crate::probe::parse::parse`].
//!
//! The caps exist once, here: every bound the script applies (bytes of a body, of a transcript,
//! a read's time, the metric families it keeps, the defaults of its flags) is a Rust constant in
//! [`CAPS`], written into the script as shell assignments right after its `#!` line
//! ([`PROBE_SH`]). probe.sh itself holds no cap (a test fails on a cap's literal there), and the
//! parsers read the same constants, so the script and its reader cannot drift apart. The
//! rendered script is the same on every run (nothing per run in it): the jumpbox route keeps its
//! pod across runs by the shape of its command.
//!
//! # probe.sh, part by part
//!
//! The script keeps one short line per function; the reasons are here, by the name of the
//! function they explain.
//!
//! **What it does.** It automates the support article's checks on one control-plane node: is the
//! etcd container running and stable (crictl ps), what its log says (crictl logs), whether
//! kubelet is active, whether this node reaches its own and every peer's etcd on 2379/2380 (curl
//! with the node's peer certificate), whether the certificates are valid, what the static-pod
//! manifest says, and whether etcd's /health answers. From etcd's own view besides: its member
//! list (the peer listener's, answered without quorum), its alarm list, and the previous
//! container's log after a restart. It collects; the plugin judges: no section is classified on
//! the node.
//!
//! **Contract.** Exactly one framed output on stdout (format 2, `emit`: raw sections, each as the
//! tools printed it, bounded; [`crate::probe::frame`] reads it and [`crate::probe::parse`] judges
//! it), nothing on stderr, exit 0 once it is printed. A missing tool or a failing step is data in
//! a section. Read-only: nothing writes to etcd or changes the node (temp files only, removed on
//! exit). Portable: POSIX sh (bash, dash, busybox ash), GNU or busybox tools, any awk (mawk,
//! gawk, busybox); jq not needed.
//!
//! **Usage.** `sh -c "$PROBE_SH" etcdnet-probe --self IP [--peer IP]... [--connect-timeout S]
//! [--tls-timeout S] [--log-lines N] [--log-bytes N] [--parallel N]`, or `sh -s -- --self IP ...
//! < probe.sh`. Timeouts are whole seconds: `--connect-timeout` (default 3) bounds each TCP
//! connect, `--tls-timeout` (default 2) is the extra time a handshake gets. Up to `--parallel`
//! (default 16) paths run at once, so with up to 7 peers the probe ends within connect-timeout +
//! tls-timeout + about a second. Arguments (`parse_args`, `set_opt`): a bad value is reported
//! (error step `args`) and replaced by the default, never fatal; leading zeros are taken off by
//! hand (`$((...))` would read 010 as octal): no process per option. Test hooks (environment):
//! [`ENV_PKI_DIR`] (default /etc/kubernetes/pki/etcd), [`ENV_MANIFEST`] (default
//! /etc/kubernetes/manifests/etcd.yaml) and [`ENV_POD_LOGS`] (default /var/log/pods).
//!
//! **`main`, in this order.** `LC_ALL=C`. sudo's secure_path leaves out /usr/local/bin and
//! /usr/local/sbin on some distributions (Photon among them), and image-builder installs crictl
//! in /usr/local/bin (Flatcar: /opt/bin): each that is missing is put in front of PATH, in that
//! order, before any tool is looked up. The paths first: their timers are what the probe waits
//! for, and on a busy node every process started before them delays them all. The rest reads the
//! node for the report; none of it is timed. It yields the CPU (`renice -n 10` of the script, so
//! of it and every process it starts; the path checks started before keep theirs): on a control
//! plane in trouble etcd and the kubelet come first, and so do the path checks' timers.
//! Everything above `main "$@" </dev/null` is definitions; stdin is closed so that under `sh -s`
//! no tool can read the rest of the script as its input.
//!
//! **Temp files** (`make_tmp`, `sweep_stale`, main's traps). One folder, in memory first
//! (/dev/shm) unless TMPDIR says otherwise: the probe's ~5 files per path would otherwise be
//! made and removed on the disk where etcd fsyncs its WAL, and its scratch must not outlive a
//! reboot anyway. Removed on exit and on HUP/INT/TERM; a job still running (the metrics read
//! before the checks, the checks' own job) may create a file while rm walks the folder: then rm
//! fails and is tried again once the jobs had time to end. A probe killed outright (SIGKILL: the
//! pod's deadline after its grace period, the OOM killer) cannot remove its folder: the next
//! probe on the node removes ours that nobody has touched for 10 minutes (no probe runs that
//! long). By age, not by PID: probes in other PID namespaces share the node's /tmp. `find -type
//! d` matches no symlink, and `rm -rf` follows none. One find over all the temp folders there
//! are (TMPDIR once, when it is not one of the usual ones): a process each added up on a busy
//! node. No writable temp folder may mean stale ones filling it: sweep, then try once more.
//!
//! **Clocks** (`now_ms`, `probe_host`). Monotonic milliseconds from /proc/uptime (10 ms steps),
//! the wall clock when that is missing; `now_ms` sets NOW rather than printing so that reading
//! the clock costs no fork. The node's clock: GNU `date +%s%3N` prints 13 digits; busybox prints
//! "%3N" literally (then seconds × 1000). The host's addresses as `ip -o addr show` or
//! `hostname -I` prints them.
//!
//! **Sections** (`raw_section`, `note`). Every section has one shape
//! ([`crate::probe::frame::Head`] reads it): head lines `KEY VALUE` (those given; `size N`, the
//! bytes OUT holds; `err LINE` for each line of ERR's last STDERR_BYTES; `hdr LINE` for each of
//! the first ASK_HEADERS bytes of the file HDR names, when set), then, with an OUT, a line `--`
//! and the first (head) or last (tail) MAX bytes of OUT, NULs removed. A section of a head alone
//! (`missing`, `skipped WHY`) is one line (`note`). Nothing there reads the text, and an empty
//! file costs no process (the metrics read after the checks ends the probe's wait). Its
//! variables are its own (`rs_`: sh has no `local`), so a caller's `f` is still the caller's.
//!
//! **Containers** (`containers`, `probe_etcd`). crictl's list (`crictl ps -a --name NAME -o
//! json`) is sent as printed: the plugin reads it, the script reads none of it. Whose log to read
//! is crictl's own answer: `crictl ps -a --name '^NAME$' -q` prints the IDs of the containers
//! named exactly NAME, newest created first (cri-tools cmd/crictl/container.go:
//! getContainersList matches the name's regular expression and sorts by createdAt descending;
//! OutputContainers prints each `GetId()` under `--quiet`); an ID is used only when it is
//! alphanumeric. etcd's log tails (sections etcd.log and etcd.prev) keep their last bytes within
//! `--log-bytes` together.
//!
//! **The previous etcd container's log** (`previous_logs`, `pod_log_file`; section etcd.prev).
//! Read when the newest's log says little: the newest is not running (`crictl ps --name '^etcd$'
//! -q`: without `-a` crictl lists the running ones only, ListContainers' default filter), or its
//! log has fewer lines than `--log-lines` (a member the kubelet restarted, e.g. killed by
//! kubeadm's startupProbe while it had no leader, starts a new log). The kubelet keeps one dead
//! container per container besides the current one (MaxPerPodContainerCount 1 in
//! cmd/kubelet/app/options/options.go, enforced by pkg/kubelet/kuberuntime/kuberuntime_gc.go):
//! crictl logs it; when that fails (the container already removed) or none is listed, the
//! kubelet's own file of the attempt before the newest's (the newest's attempt is
//! `status.metadata.attempt` of `crictl inspect`, marshalContainerStatus in the same file of
//! cri-tools). What the newest's log left of `--log-bytes` is the cap. The file is the static
//! pod's `$POD_LOGS/kube-system_etcd-<node>_<uid>/etcd/<attempt>.log` (BuildPodLogsDirectory,
//! BuildContainerLogsDirectory and buildContainerLogsPath in
//! pkg/kubelet/kuberuntime/helpers.go; the kubelet's podLogsDirectory, /var/log/pods unless
//! configured otherwise): the pod named after this host first, else the newest such file. Only
//! directories and regular files, no symbolic link: what the node holds is not trusted to point
//! anywhere.
//!
//! **The kube-apiserver** (`probe_apiserver`, judged by [`crate::probe::apiserver`]). Raw text
//! only, each part bounded here (its APISERVER_* caps, and again by the plugin's parser): its
//! container list as crictl prints it; the newest container's log tail (picked as etcd's is);
//! `/readyz?verbose` on the node's loopback (kube-apiserver binds 0.0.0.0:6443 unless
//! --bind-address says otherwise, and kubeadm and CABPK set none): no credentials are sent and
//! the serving certificate is not checked (`-k`), because its dates are what is read, from the
//! file; the body names each check, `[-]etcd failed: reason withheld` (handleRootHealth in
//! staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go); and
//! /etc/kubernetes/pki/apiserver.crt as PEM text. Runs in the background beside the rest; a job
//! that never wrote its readyz section leaves `nojob` there (`emit`).
//!
//! **The kubelet** (`probe_kubelet`): what `systemctl status kubelet` shows in the article
//! (`is-active`, `ActiveEnterTimestamp`).
//!
//! **The path checks** (`start_paths`, `run_paths`, `start_group`, `watchdog`, `finish_check`;
//! judged by [`crate::probe::paths`]): own and peers' 2379/2380, all at once, own node first,
//! each address once, in the background while the rest of the probe reads the node. One curl per
//! path, with the peer certificate when there is one (/version answers on both the client and
//! the peer listener). curl's `--connect-timeout` also covers the handshake, so curl gets
//! connect+TLS seconds and a watchdog ends it after `--connect-timeout` if TCP has not connected
//! by then. "Connected" is read from `curl -v` (`--trace-time` stamps every line): curl <= 8.15
//! prints "Connected to"; 8.16+ prints nothing until the handshake is done, but its ALPN offer
//! and ClientHello lines only come after the TCP connect. curl's time_connect is 0 on failed
//! transfers. HTTP/1.1: etcd's peer listener offers h2, and /version over h2 there ends in curl
//! error 18.
//!
//! Cost matters here: on a node whose peers are dropped every check waits the whole connect
//! timeout, and a check's timer only starts when its curl does. So the curls are started back to
//! back with nothing else forked per path, one watchdog serves all that start together (so each
//! curl gets at least `--connect-timeout`), and one grep reads the transcripts when it fires (the
//! lab measured ~1 s between the first and the last of 14 checks starting when each had its own
//! subshell, watchdog, sleep and awk). The watchdog ends the checks of its group whose curl has
//! neither connected nor ended: one `grep -l` over the transcripts by the plugin's reading of
//! curl's words (CONNECTED: [`crate::probe::paths::CONNECTED_PATTERN`]), noting how long each had
//! run (`killed MS`); a check whose curl has ended is left alone (its pid may be gone).
//! `finish_check` waits for a check, notes how it ended (`check RC MS`), and stops its group's
//! watchdog once the group is over (checks end in the order they started: they all have the
//! same bounds). At most `--parallel` at once: that bounds the processes and connections a long
//! `--peer` list can make the probe open on the node; the first `--parallel` start together,
//! past that each next check starts as the oldest ends, with a watchdog of its own.
//!
//! `GNUTLS_NO_IMPLICIT_INIT=1` (every curl): Debian's and Ubuntu's curl use OpenSSL but load
//! GnuTLS through librtmp/libldap, whose constructor then initialises it for nothing: ~10 ms of
//! CPU per curl, about half of one. A curl built on GnuTLS initialises it itself (libcurl calls
//! gnutls_global_init), and nothing else sees the variable.
//!
//! **Around the checks** (the before reads in `main`, `reads_after`). The before reads run right
//! before the checks start and `reads_after` right after the last one ends (in the checks' own
//! job), so that a counter read by both counts what happened during the checks. Both must stay
//! short: the before reads delay the checks' start, and `reads_after` ends the probe's wait for
//! them. etcd's metrics are read beside the firewall (the before read in the background); the
//! firewall's before read is the one the checks wait for.
//!
//! **The node's own firewall** (`firewall_read`, `fw_one`; read by [`crate::probe::firewall`]).
//! `nft -a list ruleset` (every family: iptables-nft's tables too), and the legacy back-end's
//! tables where there are any: `iptables-legacy-save -c` / `ip6tables-legacy-save -c`, else
//! `iptables-save -c` / `ip6tables-save -c` when `iptables -V` says legacy or nft is missing. A
//! missing tool, or one refused (no CAP_NET_ADMIN, CAP_NET_RAW), is data. Each read is bounded in
//! time (timeout 2 s where the node has `timeout`) and in bytes: a kube-proxy or Antrea node has
//! thousands of rules that cannot drop (the dump is megabytes there), so only the lines the
//! plugin's patterns pick are sent (FW_KEEP, then the accepts apart, FW_ACCEPT: they never crowd
//! out a drop), each list at most FW_MAX bytes, with their line numbers; for iptables-save also
//! the chains of its rules in order (`uniq -c`), for each rule's position. The `echo` after each
//! list ends a line `head -c` cut short: an empty last line says the list is whole. The plugin
//! judges which rules can drop a path's packet.
//!
//! **etcd's metrics** (`metrics_fetch`, `metrics_wait_before`; judged by
//! [`crate::probe::etcdask`], parsed by [`crate::probe::metrics`]). kubeadm's etcd serves its
//! Prometheus metrics without a certificate on http://LOCAL:2381/metrics
//! (--listen-metrics-urls), without quorum. Read twice: before the checks (in the background, so
//! the checks start at once, its curl and grep at nice 10 as it runs beside their start; the
//! alarm list waits for it, at most METRICS_BEFORE_S and a second: `etcd_server_has_leader 0`
//! says the member has no leader, which 3.4's /health body does not) and after the last check
//! ends (in the checks' job: it ends the probe's wait, so at most METRICS_AFTER_S, at the checks'
//! priority). The probe only fetches: at most METRICS_RAW bytes of the body, of which only the
//! lines of the families the plugin reads (METRICS_FAMILIES, [`crate::probe::metrics::FAMILIES`])
//! and their `# TYPE` lines are sent, at most METRICS_KEEP bytes and one more (so the plugin sees
//! the cut). A section appears whole (`mv`: the alarm list's job waits for the before read's);
//! what is empty (a refused connect's body) costs no process.
//!
//! **etcd's own view** (`etcd_ask`, `hc_ask`, `health_check`, `members_check`, `alarms_check`;
//! judged by [`crate::probe::etcdask`]). Each is one bounded request (connect timeout, then
//! connect + TLS timeouts in all; ASK_MAX, when set, is its whole time instead), run in the
//! background beside the rest; none of them is a path check (those are the /version checks).
//! LOCAL is this node's loopback in the family of `--self`: kubeadm's etcd listens for clients on
//! 127.0.0.1:2379 on IPv4 nodes and on [::1]:2379 on IPv6 ones (and its metrics on the same
//! loopback's 2381). Each answer is its section as etcd sent it: `rc RC`, `url URL`, `w STATUS
//! SECONDS`, curl's stderr (`err` lines), the headers (`hdr` lines), `--` and the body. A
//! question not asked is `skipped WHY`.
//! - `/health` with the health check's client certificate (as etcdctl would), else on the
//!   metrics listener. Its body names an alarm from etcd 3.5 on
//!   (`{"health":"false","reason":"ALARM NOSPACE"}`: checkAlarms in
//!   server/etcdserver/api/etcdhttp/health.go, 3.5 and 3.6); 3.4's says `{"health":"false"}`
//!   only (etcdserver/api/etcdhttp/metrics.go), hence the alarm list.
//! - The member list from this node's peer listener, with its peer certificate: etcd serves it
//!   there without quorum, from the member's own copy (GET /members, peerMembersHandler in
//!   server/etcdserver/api/etcdhttp/peer.go, 3.4 to 3.6), as a JSON array of {id, name, peerURLs,
//!   clientURLs, isLearner}, with the X-Etcd-Cluster-ID header. etcd 3.4 and 3.5 print the id as
//!   a decimal number (a uint64, over 2^53) and leave out an empty name (a member added but not
//!   started yet) and isLearner when false.
//! - The alarm list through etcd's grpc-gateway on the client port (POST /v3/maintenance/alarm,
//!   `{"action":"GET"}`: Maintenance.Alarm, google.api.http post "/v3/maintenance/alarm" in
//!   api/etcdserverpb/rpc.proto of 3.5 and 3.6; 3.4.23 and 3.5.1 answer it in the lab), with the
//!   health check's client certificate. It goes through raft, so without quorum it fails or
//!   times out: that is data, not an error of the probe. grpc-gateway prints the member ID as a
//!   decimal string and the alarm by its name (AlarmType: NONE 0, NOSPACE 1, CORRUPT 2; the
//!   number is read too). Asked once /health has answered, in what is left of connect + TLS
//!   timeouts since the probe started (at least a second): the alarm list never makes the probe
//!   longer than its path checks may take. A member that does not answer /health, or says it
//!   has no leader (3.5 and 3.6: "RAFT NO LEADER", checkLeader in health.go), or whose metrics
//!   read before the checks says `etcd_server_has_leader 0` (3.4's /health body does not say why
//!   it is false), is not asked (Skipped), and the two requests never queue behind each other at
//!   a busy member.
//!
//! **Certificates** (`probe_certs`, `certs_at_once`, `cert_info`): openssl's text of the etcd
//! certificates (1.0 to 3.x, and apiserver-etcd-client.crt from the PKI folder's parent when it
//! exists); the plugin reads dates and SANs. Section certs: per file `file NAME K PATH` (its
//! certificate is the K-th of the text, 0: none), `error NAME WHY` or `failed NAME PATH` and
//! openssl's stderr; then `--` and the text. All files are read by one openssl pair: OpenSSL 3's
//! `x509` command spends ~40 ms of CPU starting (its decoders), so one per file was the most
//! expensive part of a probe, and on a busy node that CPU delays the path checks; `crl2pkcs7 |
//! pkcs7 -print_certs` reads them all for ~15 ms and keeps their order. A file counts by its
//! first certificate, as `x509 -in` reads it (one grep counts the PEM blocks each file holds,
//! `FILE:N` a line). On anything unexpected (a file missing or without a certificate, openssl
//! failing, counts that do not add up) each file is read on its own (`cert_info`, the fallback,
//! and the one that names a file's own error).
//!
//! **The manifest** (`probe_manifest`): the static pod's file, read by the plugin (kubeadm's
//! `- --flag=value` lines).
//!
//! **The output** (`emit`; [`crate::probe::frame`] reads it). A line `etcdnet-probe 2`, then per
//! section a header line `@NAME` and each line of its text behind a `|`, then `@end N` (N: the
//! sections printed). Every line of text has its `|`, so nothing a section holds can print a
//! header or the end: only `emit` frames. Each section as NAME:MAX:FILE[:FILE]... (its files'
//! lines, at most MAX bytes of whole lines when MAX is not 0; a file missing adds nothing, a
//! section of none is empty). One awk copies every line behind its `|` and reads none: a sed per
//! section would be twenty processes where the probe's end is waited for, and sed alone cannot
//! put a header between files; framing each section where it is written instead would add a
//! process to every section, the after reads' among them (they end the probe's wait), and could
//! not cut a check's transcript at a whole line. A check's section: its head (p.I.m, p.I.killed,
//! p.I.w), `--` and curl's transcript, at most [`crate::probe::paths::CHECK_BYTES`]. Anything the
//! script itself printed on stderr becomes an error `probe` with its first
//! [`STRAY_STDERR_BYTES`].

use std::sync::LazyLock;
use std::time::Duration;

use crate::probe::{etcdask, firewall, metrics, parse, parse::bounds, paths};

/// probe.sh as written, without its caps.
const SOURCE: &str = include_str!("probe.sh");

/// One cap handed to the script: its shell variable and its value.
pub(crate) enum Cap {
    Num(u64),
    Text(&'static str),
}

/// Every cap the script uses, by the shell variable that holds it.
pub(crate) static CAPS: LazyLock<Vec<(&'static str, Cap)>> = LazyLock::new(|| {
    let d = ProbeArgs::default();
    let n = |v: usize| Cap::Num(v as u64);
    vec![
        // The flags' defaults (a flag the plugin always passes; the script's own use).
        ("CT", Cap::Num(d.connect_timeout_s.into())),
        ("TT", Cap::Num(d.tls_timeout_s.into())),
        ("LOG_LINES", Cap::Num(d.log_lines.into())),
        ("LOG_BYTES", Cap::Num(d.log_bytes)),
        ("PAR", Cap::Num(d.parallel.into())),
        // The path checks' watchdog: what says a connect is done (src/probe/paths.rs).
        ("CONNECTED", Cap::Text(paths::CONNECTED_PATTERN)),
        ("CHECK_BYTES", n(paths::CHECK_BYTES)),
        // etcd's own answers (src/probe/etcdask.rs).
        ("HEALTH_BODY", n(etcdask::HEALTH_BODY)),
        ("MEMBERS_BODY", n(etcdask::MEMBERS_BODY)),
        ("ALARMS_BODY", n(etcdask::ALARMS_BODY)),
        ("ASK_HEADERS", n(etcdask::HEADERS)),
        ("METRICS_RAW", n(etcdask::METRICS_RAW)),
        ("METRICS_KEEP", n(metrics::MAX_TEXT_BYTES)),
        ("METRICS_BEFORE_S", Cap::Num(etcdask::METRICS_BEFORE_S)),
        ("METRICS_AFTER_S", Cap::Num(etcdask::METRICS_AFTER_S)),
        ("METRICS_FAMILIES", Cap::Text(&METRICS_PATTERN)),
        // The kube-apiserver reads (src/probe/apiserver.rs).
        ("APISERVER_PS", n(bounds::MAX_APISERVER_PS)),
        ("APISERVER_LOG_LINES", n(bounds::APISERVER_LOG_LINES)),
        ("APISERVER_LOG_BYTES", n(bounds::MAX_APISERVER_LOG)),
        ("APISERVER_READYZ", n(bounds::MAX_APISERVER_READYZ)),
        ("APISERVER_CERT", n(bounds::MAX_APISERVER_CERT)),
        // One firewall read: each list of its lines sent, and what picks them
        // (src/probe/firewall/read.rs).
        ("FW_MAX", n(bounds::FIREWALL_READ)),
        ("FW_KEEP", Cap::Text(firewall::KEEP_PATTERN)),
        ("FW_ACCEPT", Cap::Text(firewall::ACCEPT_PATTERN)),
        // The node's own raw sections (src/probe/parse/raw.rs).
        ("STDERR_BYTES", n(crate::probe::STDERR_BYTES)),
        ("STDERR_NOTE", n(STRAY_STDERR_BYTES)),
        ("IPS_BYTES", n(parse::raw::IPS_BYTES)),
        ("CRICTL_PS_BYTES", n(parse::raw::CRICTL_PS_BYTES)),
        ("MANIFEST_BYTES", n(parse::raw::MANIFEST_BYTES)),
        ("CERTS_BYTES", n(parse::raw::CERTS_BYTES)),
    ]
});

/// Bytes of the script's own unexpected stderr put into its error `probe` (`STDERR_NOTE`): a
/// line or two says what went wrong; the error's detail is capped again by the parser.
pub(crate) const STRAY_STDERR_BYTES: usize = 300;

/// The metric families the script keeps, as one `grep -E` alternation.
static METRICS_PATTERN: LazyLock<String> = LazyLock::new(|| metrics::FAMILIES.join("|"));

/// The probe script itself: probe.sh with its caps set after the `#!` line.
pub static PROBE_SH: LazyLock<String> = LazyLock::new(|| render(SOURCE));

fn render(source: &str) -> String {
    let (shebang, rest) = source.split_once('\n').unwrap_or((source, ""));
    let mut out = format!("{shebang}\n# The caps, set by the plugin (src/probe/script.rs).\n");
    for (name, cap) in CAPS.iter() {
        let value = match cap {
            Cap::Num(v) => v.to_string(),
            Cap::Text(t) => shell_quote(t),
        };
        out.push_str(&format!("{name}={value}\n"));
    }
    out.push_str(rest);
    out
}

/// `$0` of the script under `sh -c` (what `ps` shows on the node).
pub const PROBE_NAME: &str = "etcdnet-probe";

/// Test hook: the directory holding ca.crt, server.crt, peer.crt, healthcheck-client.crt and their
/// keys (default `/etc/kubernetes/pki/etcd`). `apiserver-etcd-client.crt` is read from its parent.
pub const ENV_PKI_DIR: &str = "ETCDNET_PKI_DIR";

/// Test hook: the etcd static-pod manifest (default `/etc/kubernetes/manifests/etcd.yaml`).
pub const ENV_MANIFEST: &str = "ETCDNET_MANIFEST";

/// Test hook: the kubelet's pod log directory (default `/var/log/pods`), where the previous etcd
/// container's log is read from when crictl no longer has it.
pub const ENV_POD_LOGS: &str = "ETCDNET_POD_LOGS";

/// What the probe is told: who this node is, who its peers are, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArgs {
    /// This node's etcd IP (`--self`): its own 2379/2380 are checked and its certificates'
    /// SANs are matched against it.
    pub self_ip: String,
    /// The other control-plane nodes' IPs (`--peer`, repeated). The script skips duplicates and
    /// `self_ip`.
    pub peers: Vec<String>,
    /// Bound of each TCP connect, whole seconds (`--connect-timeout`, at least 1).
    pub connect_timeout_s: u32,
    /// Extra time a TLS handshake gets after its connect (`--tls-timeout`).
    pub tls_timeout_s: u32,
    /// How many of the newest etcd log lines to read (`--log-lines`).
    pub log_lines: u32,
    /// Byte cap of that log sample, the newest kept (`--log-bytes`).
    pub log_bytes: u64,
    /// How many of the node's 2379/2380 checks run at once (the script's `--parallel`); the plan
    /// sets it to the number of nodes probed at once (`route::DEFAULT_PARALLEL`).
    pub parallel: u32,
}

impl Default for ProbeArgs {
    fn default() -> Self {
        ProbeArgs {
            self_ip: String::new(),
            peers: Vec::new(),
            connect_timeout_s: 3,
            tls_timeout_s: 2,
            log_lines: 500,
            log_bytes: 256 * 1024,
            parallel: 16,
        }
    }
}

impl ProbeArgs {
    pub fn new(
        self_ip: impl Into<String>,
        peers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ProbeArgs {
            self_ip: self_ip.into(),
            peers: peers.into_iter().map(Into::into).collect(),
            ..ProbeArgs::default()
        }
    }

    /// How long the probe itself may take on the node: the paths (own and each peer's 2379 and
    /// 2380) run `parallel` at a time, each bounded by the connect timeout plus the handshake
    /// timeout, plus a second for the rest. A route adds its own overhead (pod start, ssh).
    pub fn expected_duration(&self) -> Duration {
        let paths = 2 * (self.peers.len() as u64 + 1);
        let rounds = paths.div_ceil(u64::from(self.parallel.max(1)));
        let one = u64::from(self.connect_timeout_s.max(1)) + u64::from(self.tls_timeout_s);
        Duration::from_secs(rounds.saturating_mul(one).saturating_add(1))
    }

    /// The script's own arguments, in order.
    pub fn script_args(&self) -> Vec<String> {
        let mut args = vec!["--self".to_string(), self.self_ip.clone()];
        for peer in &self.peers {
            args.push("--peer".into());
            args.push(peer.clone());
        }
        for (flag, value) in [
            ("--connect-timeout", u64::from(self.connect_timeout_s)),
            ("--tls-timeout", u64::from(self.tls_timeout_s)),
            ("--log-lines", u64::from(self.log_lines)),
            ("--log-bytes", self.log_bytes),
            ("--parallel", u64::from(self.parallel)),
        ] {
            args.push(flag.into());
            args.push(value.to_string());
        }
        args
    }
}

/// `sh -c "$PROBE_SH" etcdnet-probe ARGS...`: the argv of a pod's command or an exec.
pub fn argv(opts: &ProbeArgs) -> Vec<String> {
    argv_with_shell(&["sh"], opts)
}

/// The same with another shell, e.g. `["busybox", "sh"]` or `["dash"]` (the tests run all three).
pub fn argv_with_shell(shell: &[&str], opts: &ProbeArgs) -> Vec<String> {
    let mut argv: Vec<String> = shell.iter().map(|s| s.to_string()).collect();
    argv.push("-c".into());
    argv.push(PROBE_SH.to_string());
    argv.push(PROBE_NAME.into());
    argv.extend(opts.script_args());
    argv
}

/// `sh -s -- ARGS...`: the argv when the script is written to the shell's stdin.
pub fn stdin_argv(opts: &ProbeArgs) -> Vec<String> {
    let mut argv = vec!["sh".to_string(), "-s".into(), "--".into()];
    argv.extend(opts.script_args());
    argv
}

/// The remote command line for ssh (one string, parsed by the remote login shell), with the
/// script sent on stdin: `sh -s -- '--self' '10.0.0.11' ...`. Prefix it with `sudo ` where needed.
pub fn stdin_command_line(opts: &ProbeArgs) -> String {
    stdin_argv(opts)
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quote one word for a POSIX shell: single quotes, with `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+".contains(&b))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ProbeArgs {
        ProbeArgs::new("10.0.0.11", ["10.0.0.12", "10.0.0.13"])
    }

    #[test]
    fn script_args_are_the_documented_flags() {
        assert_eq!(
            opts().script_args(),
            [
                "--self",
                "10.0.0.11",
                "--peer",
                "10.0.0.12",
                "--peer",
                "10.0.0.13",
                "--connect-timeout",
                "3",
                "--tls-timeout",
                "2",
                "--log-lines",
                "500",
                "--log-bytes",
                "262144",
                "--parallel",
                "16",
            ]
        );
    }

    #[test]
    fn argv_runs_the_embedded_script_with_a_name() {
        let argv = argv(&opts());
        assert_eq!(argv[..2], ["sh", "-c"]);
        assert_eq!(argv[2], *PROBE_SH);
        assert_eq!(argv[3], PROBE_NAME);
        assert_eq!(argv[4..6], ["--self", "10.0.0.11"]);
        let bb = argv_with_shell(&["busybox", "sh"], &opts());
        assert_eq!(bb[..3], ["busybox", "sh", "-c"]);
    }

    #[test]
    fn stdin_forms_for_ssh() {
        assert_eq!(
            stdin_argv(&opts())[..5],
            ["sh", "-s", "--", "--self", "10.0.0.11"]
        );
        let line = stdin_command_line(&ProbeArgs::new("fd00::1", ["it's"]));
        assert!(
            line.starts_with("sh -s -- --self fd00::1 --peer 'it'\\''s' "),
            "{line}"
        );
    }

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("10.0.0.1"), "10.0.0.1");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("$(x)"), "'$(x)'");
    }

    #[test]
    fn expected_duration_is_connect_plus_tls_plus_one() {
        assert_eq!(opts().expected_duration(), Duration::from_secs(6));
    }

    #[test]
    fn script_is_posix_shaped() {
        // Cheap guards against the bashisms that would break dash or busybox; the tests in
        // tests/it/probe_script.rs runs the script under each shell for real.
        for bad in [
            "[[ ",
            "$'\\",
            "/dev/tcp",
            "echo -e",
            "function ",
            "local ",
            "<<<",
            "${!",
        ] {
            let hit = PROBE_SH
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find(|l| l.contains(bad));
            assert!(hit.is_none(), "{bad:?} in probe.sh: {hit:?}");
        }
        assert!(PROBE_SH.starts_with("#!/bin/sh\n"));
        assert!(PROBE_SH
            .trim_end()
            .ends_with("main \"$@\" </dev/null\nexit 0"));
    }

    /// The caps that are the flags' defaults.
    const FLAGS: &[&str] = &["CT", "TT", "LOG_LINES", "LOG_BYTES", "PAR"];

    /// Numbers ≥ 64 probe.sh may write that are no cap: ports, units, a mode, an exit code.
    const NOT_CAPS: &[&str] = &[
        "100",  // tenths of a second in ms
        "124",  // timeout(1)'s exit code
        "127",  // the loopback prefix 127.
        "700",  // mkdir's mode
        "1000", // ms in a second
        "2379", // etcd's client port
        "2380", // etcd's peer port
        "2381", // etcd's metrics port
        "6443", // the kube-apiserver's port
    ];

    /// The script's code: its lines without comments (a `#` at a word's start, outside the awk
    /// programs' strings this is close enough: a cap in a comment is no cap).
    fn code_lines() -> impl Iterator<Item = &'static str> {
        SOURCE
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| match l.find(" # ") {
                Some(i) => &l[..i],
                None => l,
            })
    }

    #[test]
    fn every_cap_is_handed_by_rust_and_used() {
        let code: Vec<&str> = code_lines().collect();
        for (name, _) in CAPS.iter() {
            // As a word (`$NAME`, `${NAME}`, `$((NAME + 1))`), not the start of a longer one.
            let used = code.iter().any(|l| {
                l.match_indices(name).any(|(i, _)| {
                    let before = l[..i].chars().next_back();
                    let after = l[i + name.len()..].chars().next();
                    let word =
                        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                    !word(before) && !word(after) && after != Some('=')
                })
            });
            assert!(used, "cap {name} handed to probe.sh but never used there");
            // The flags' values are the script's to set (from its arguments); the rest never.
            if FLAGS.contains(name) {
                continue;
            }
            let set = code.iter().find(|l| {
                l.split([' ', ';', '{', '('])
                    .any(|w| w.starts_with(&format!("{name}=")))
            });
            assert!(
                set.is_none(),
                "probe.sh sets the cap {name} itself: {set:?}"
            );
        }
        // Each cap once in the rendered script, after the `#!` line, as a plain assignment.
        let rendered: Vec<&str> = PROBE_SH.lines().collect();
        assert_eq!(rendered[0], "#!/bin/sh");
        for (name, cap) in CAPS.iter() {
            let want = match cap {
                Cap::Num(v) => format!("{name}={v}"),
                Cap::Text(t) => format!("{name}={}", shell_quote(t)),
            };
            assert_eq!(rendered.iter().filter(|l| **l == want).count(), 1, "{want}");
        }
        assert_eq!(render(SOURCE), *PROBE_SH, "the same script every run");
    }

    #[test]
    fn no_cap_is_written_in_the_script() {
        let mut found = Vec::new();
        for line in code_lines() {
            let b = line.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i].is_ascii_digit()
                    && (i == 0
                        || !(b[i - 1].is_ascii_alphanumeric() || b"_.\\".contains(&b[i - 1])))
                {
                    let end = (i..b.len())
                        .find(|&j| !b[j].is_ascii_digit())
                        .unwrap_or(b.len());
                    let n = &line[i..end];
                    if n.parse::<u64>().is_ok_and(|v| v >= 64) && !NOT_CAPS.contains(&n) {
                        found.push(format!("{n} in {line:?}"));
                    }
                    i = end;
                } else {
                    i += 1;
                }
            }
        }
        assert!(
            found.is_empty(),
            "a cap written in probe.sh: hand it from Rust (script::CAPS) instead: {found:#?}"
        );
        // The allowance for numbers that are no cap hides none.
        for (name, cap) in CAPS.iter() {
            if let Cap::Num(v) = cap {
                assert!(!NOT_CAPS.contains(&v.to_string().as_str()), "{name}");
            }
        }
    }

    /// The script collects and the plugin judges (issue 39): one awk, `emit`'s, which copies
    /// lines behind their `|` and reads none; no JSON written by the script.
    #[test]
    fn the_script_only_collects() {
        let code: Vec<&str> = code_lines().collect();
        let awk: Vec<&&str> = code
            .iter()
            .filter(|l| {
                l.split(|c: char| !c.is_ascii_alphanumeric())
                    .any(|w| w == "awk")
            })
            .collect();
        assert_eq!(awk.len(), 1, "{awk:#?}");
        assert!(awk[0].contains("print \"etcdnet-probe 2\""), "{awk:?}");
        let json = code
            .iter()
            .find(|l| l.contains("printf") && (l.contains("{\"") || l.contains("\":")));
        assert!(json.is_none(), "JSON written by the script: {json:?}");
    }
}
