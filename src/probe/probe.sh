#!/bin/sh
# etcdnet-probe: the on-node half of `kubectl etcdnet diagnose`.
#
# It automates the support article's checks on one control-plane node: is the etcd container
# running and stable (crictl ps), what its log says (crictl logs), whether kubelet is active, whether
# this node reaches its own and every peer's etcd on 2379/2380 (curl with the node's peer
# certificate), whether the certificates are valid, what the static-pod manifest says, and whether
# etcd's /health answers. From etcd's own view besides: its member list (the peer listener's,
# answered without quorum), its alarm list, and the previous container's log after a restart.
#
# Contract: exactly one framed output on stdout (format 2, `emit`: raw sections, each as the tools
# printed it, bounded; src/probe/frame.rs reads it and src/probe/parse/ judges it), nothing on
# stderr, exit 0 once it is printed. A missing tool or a failing step is data in a section. Read-only:
# nothing writes to etcd or changes the node (temp files only, removed on exit). Portable: POSIX sh
# (bash, dash, busybox ash), GNU or busybox tools, any awk (mawk, gawk, busybox); jq not needed.
#
# Usage: sh -c "$PROBE_SH" etcdnet-probe --self IP [--peer IP]... [--connect-timeout S]
#          [--tls-timeout S] [--log-lines N] [--log-bytes N] [--parallel N]
#    or: sh -s -- --self IP ... < probe.sh
# Timeouts are whole seconds: --connect-timeout (default 3) bounds each TCP connect, --tls-timeout
# (default 2) is the extra time a handshake gets. Up to --parallel (default 16) paths run at once,
# so with up to 7 peers the probe ends within connect-timeout + tls-timeout + about a second.
# Temp files live in one folder, removed on exit and on HUP/INT/TERM; a folder left by a probe
# killed outright (SIGKILL) is removed by the next probe on the node once it is 10 minutes old.
# Every cap (bytes, seconds, the flags' defaults, the metric families kept) is set by the plugin
# right after the `#!` line (src/probe/script.rs, CAPS): none is written here.
# Test hooks (environment): ETCDNET_PKI_DIR (default /etc/kubernetes/pki/etcd), ETCDNET_MANIFEST
# (default /etc/kubernetes/manifests/etcd.yaml) and ETCDNET_POD_LOGS (default /var/log/pods).

have() { command -v "$1" >/dev/null 2>&1; }

# A failed step, recorded for errors[] (one line: step TAB message).
err() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n\r' '   ')" >>"$T/errors"; }

# Monotonic milliseconds from /proc/uptime (10 ms steps) into NOW; the wall clock when that is
# missing. It sets a variable rather than printing so that reading the clock costs no fork.
now_ms() {
  up=
  [ -r /proc/uptime ] && read -r up _ </proc/uptime
  case $up in
  [0-9]*.[0-9][0-9]) NOW=$((${up%.*} * 1000 + 1${up#*.} * 10 - 1000)) ;;
  *) NOW=$(($(date +%s) * 1000)) ;;
  esac
}

# --- arguments: bad values are reported and replaced by defaults, never fatal ------------------
parse_args() {
  SELF= PEERS=
  while [ $# -gt 0 ]; do
    case $1 in
    --self | --peer | --connect-timeout | --tls-timeout | --log-lines | --log-bytes | --parallel)
      if [ $# -lt 2 ]; then err args "$1 needs a value" && break; fi
      set_opt "$1" "$2"
      shift 2 ;;
    --*=*)
      set_opt "${1%%=*}" "${1#*=}"
      shift ;;
    *)
      err args "unknown argument: $1"
      shift ;;
    esac
  done
  [ -n "$SELF" ] || err args "no --self IP: this node's own 2379/2380 not checked"
  LOCAL=127.0.0.1
  case $SELF in *:*) LOCAL='[::1]' ;; esac
  [ "$CT" -ge 1 ] || { err args "--connect-timeout 0 raised to 1" && CT=1; }
  [ "$PAR" -ge 1 ] || { err args "--parallel 0 raised to 1" && PAR=1; }
}

set_opt() {
  case $1 in
  --self | --peer)
    case $2 in -* | '' | *[!0-9A-Za-z.:-]*) err args "ignored $1 '$2': not an address" && return ;; esac
    if [ "$1" = --self ]; then SELF=$2; else PEERS="$PEERS $2"; fi ;;
  --connect-timeout | --tls-timeout | --log-lines | --log-bytes | --parallel)
    case $2 in '' | *[!0-9]* | ??????????*) err args "ignored $1 '$2': not a whole number" && return ;; esac
    # Leading zeros off by hand ($((...)) would read 010 as octal): no process per option.
    n=$2
    while :; do case $n in 0?*) n=${n#0} ;; *) break ;; esac; done
    case $1 in --connect-timeout) CT=$n ;; --tls-timeout) TT=$n ;; --log-lines) LOG_LINES=$n ;;
    --parallel) PAR=$n ;; *) LOG_BYTES=$n ;; esac ;;
  *) err args "unknown argument: $1" ;;
  esac
}

# --- host: name, addresses (as `ip -o addr show` or `hostname -I` prints them), clock -------
probe_host() {
  HOST=$(uname -n 2>/dev/null)
  CLOCK=$(date +%s%3N 2>/dev/null)
  # GNU date prints 13 digits; busybox prints "%3N" literally.
  case $CLOCK in *[!0-9]* | '') CLOCK=$(($(date +%s) * 1000)) ;; esac
  if have ip; then
    ip -o addr show >"$T/ips.raw" 2>/dev/null
    raw_section "$T/s.ips" head "$IPS_BYTES" "$T/ips.raw" '' 'tool ip'
  elif hostname -I >"$T/ips.raw" 2>/dev/null; then
    raw_section "$T/s.ips" head "$IPS_BYTES" "$T/ips.raw" '' 'tool hostname'
  else err host "neither 'ip' nor 'hostname -I' to list the node's addresses"; fi
}

# Every section has one shape (src/probe/frame.rs's Head reads it): head lines `KEY VALUE` (those
# given; `size N`, the bytes OUT holds; `err LINE` for each line of ERR's last STDERR_BYTES;
# `hdr LINE` for each of the first ASK_HEADERS bytes of the file HDR names, when set), then, with
# an OUT, a line `--` and the first (head) or last (tail) MAX bytes of OUT, NULs removed. A
# section of a head alone (`missing`, `skipped WHY`) is an echo. Nothing here reads the text, and
# an empty file costs no process (the metrics read after the checks ends the probe's wait). Its
# variables are its own (rs_: sh has no `local`), so a caller's `f` is still the caller's.
raw_section() { # file head|tail max out err [head-line]...
  rs_f=$1 rs_how=$2 rs_max=$3 rs_o=$4 rs_e=$5
  shift 5
  {
    for rs_l in "$@"; do printf '%s\n' "$rs_l"; done
    [ ! -s "$rs_o" ] || printf 'size %s\n' "$(wc -c <"$rs_o")"
    [ ! -s "$rs_e" ] || { tail -c "$STDERR_BYTES" "$rs_e"; echo; } | sed 's/^/err /'
    [ ! -s "${HDR:-}" ] || { head -c "$ASK_HEADERS" "$HDR" | tr -d '\000'; echo; } | sed 's/^/hdr /'
    [ -z "$rs_o" ] || echo --
    [ ! -s "$rs_o" ] || "$rs_how" -c "$rs_max" "$rs_o" | tr -d '\000'
  } >"$rs_f"
}

# --- etcd container: crictl ps -a (JSON read with awk: jq may be absent), newest first ---------
# The tokenizer follows crictl's {"containers":[{"id","metadata":{"name","attempt"},"state",
# "createdAt"}]} whatever the spacing; `--name` is a regex, so only the name `want` is kept.
AWK_CRICTL='
{ gsub(/\t|\r/, " "); gsub(/\\\\/, "\001"); gsub(/\\"/, "\002"); buf = buf " " $0 }
function value(v) {
  if (d == 3 && key[1] == "containers") { if (key[3] == "id") id = v; if (key[3] == "state") st = v
    if (key[3] == "createdAt") ca = v }
  if (d == 4 && key[1] == "containers" && key[3] == "metadata") { if (key[4] == "name") nm = v
    if (key[4] == "attempt") at = v }
}
END {
  s = buf; d = 0
  while (s != "") {
    c = substr(s, 1, 1)
    if (c == " ") { match(s, /^ +/); s = substr(s, RLENGTH + 1); continue }
    if (c == "{" || c == "[") { d++; kind[d] = c; key[d] = ""; iskey[d] = (c == "{")
      if (d == 3) id = st = ca = nm = at = ""; s = substr(s, 2); continue }
    if (c == "}" || c == "]") {
      if (d == 3 && c == "}" && key[1] == "containers" && nm == want && id ~ /^[0-9A-Za-z]+$/) {
        if (ca !~ /^[0-9]+$/) ca = ""; if (at !~ /^[0-9]+$/) at = ""; if (st !~ /^[A-Za-z_]+$/) st = "UNKNOWN"
        p = ca; while (length(p) < 24) p = "0" p
        printf "%s\t%s\t%s\t%s\t%s\n", p, id, st, at, ca
      }
      d--; s = substr(s, 2); continue }
    if (c == ":") { s = substr(s, 2); continue }
    if (c == ",") { if (kind[d] == "{") iskey[d] = 1; s = substr(s, 2); continue }
    if (c == "\"") { if (!match(s, /^"[^"]*"/)) break; tok = substr(s, 2, RLENGTH - 2) }
    else { if (!match(s, /^[^] ,:{}[]+/)) break; tok = substr(s, 1, RLENGTH) }
    s = substr(s, RLENGTH + 1)
    if (kind[d] == "{" && iskey[d]) { key[d] = tok; iskey[d] = 0 } else value(tok)
  }
}'

# Sections etcd.ps (crictl's list as printed), etcd.log and etcd.prev (the log tails: their last
# bytes within --log-bytes together). AWK_CRICTL only picks whose log to read; the plugin reads
# the list itself.
probe_etcd() {
  if ! have crictl; then echo missing >"$T/s.etcd.ps" && return; fi
  crictl ps -a --name etcd -o json >"$T/ps.out" 2>"$T/ps.err"
  rc=$?
  raw_section "$T/s.etcd.ps" head "$CRICTL_PS_BYTES" "$T/ps.out" "$T/ps.err" "rc $rc"
  [ $rc -eq 0 ] || return 0
  awk -v want=etcd "$AWK_CRICTL" "$T/ps.out" | sort -r >"$T/ctrs"
  id=$(awk -F '\t' 'NR == 1 { print $2 }' "$T/ctrs")
  [ -n "$id" ] || return 0
  crictl logs --tail "$LOG_LINES" "$id" >"$T/log.raw" 2>&1
  raw_section "$T/s.etcd.log" tail "$LOG_BYTES" "$T/log.raw" '' "id $id" "rc $?" "max $LOG_BYTES"
  previous_logs
}

# The previous etcd container's log (PREV, PREV_FILE), when the newest one's says little: it is
# not running, or its log has fewer lines than --log-lines (a member the kubelet restarted, e.g.
# killed by kubeadm's startupProbe while it had no leader, starts a new log). The kubelet keeps one
# dead container per container besides the current one (MaxPerPodContainerCount 1 in
# cmd/kubelet/app/options/options.go, enforced by pkg/kubelet/kuberuntime/kuberuntime_gc.go):
# crictl logs it; when that fails (the container already removed), the kubelet's own file of that
# attempt.
# What the newest's log left of --log-bytes is the cap.
previous_logs() {
  got=$(wc -l <"$T/log.raw") used=$(wc -c <"$T/log.raw")
  [ "$used" -le "$LOG_BYTES" ] || used=$LOG_BYTES
  running=$(awk -F '\t' 'NR == 1 { print $3 }' "$T/ctrs")
  case $running in CONTAINER_RUNNING | Running | RUNNING | running) [ "$got" -lt "$LOG_LINES" ] || return 0 ;; esac
  left=$((LOG_BYTES - used))
  [ "$left" -gt 1 ] || return 0
  # The second newest container; or, none listed, the attempt before the newest.
  prev_id=$(awk -F '\t' 'NR == 2 { print $2 }' "$T/ctrs")
  pat=$(awk -F '\t' 'NR == 2 { print $4 }' "$T/ctrs")
  if [ -z "$prev_id" ]; then
    at=$(awk -F '\t' 'NR == 1 { print $4 }' "$T/ctrs")
    case $at in '' | 0) return 0 ;; esac
    pat=$((at - 1))
  fi
  set -- "$T/s.etcd.prev" tail "$left"
  if [ -n "$prev_id" ]; then
    crictl logs --tail "$LOG_LINES" "$prev_id" >"$T/prev.raw" 2>&1
    rc=$?
    [ $rc -eq 0 ] && raw_section "$@" "$T/prev.raw" '' "id $prev_id" "rc 0" "max $left" && return 0
  fi
  [ -n "$pat" ] && pod_log_file "$pat" || {
    [ -z "$prev_id" ] || raw_section "$@" "$T/prev.raw" '' "id $prev_id" "rc $rc" "nofile $pat $POD_LOGS"
    return 0
  }
  raw_section "$@" "$LOGFILE" '' "id $prev_id" "rc 0" "max $left" "lines $LOG_LINES" "file $LOGFILE"
}

# LOGFILE: the kubelet's log file of etcd's attempt $1, the static pod's
# ($POD_LOGS/kube-system_etcd-<node>_<uid>/etcd/<attempt>.log: BuildPodLogsDirectory,
# BuildContainerLogsDirectory and buildContainerLogsPath in pkg/kubelet/kuberuntime/helpers.go; the
# kubelet's podLogsDirectory, /var/log/pods unless configured otherwise). The pod named after this host
# first, else the newest such file. Only directories and regular files, no symbolic link: what
# the node holds is not trusted to point anywhere.
pod_log_file() { # attempt
  LOGFILE=
  case $1 in '' | *[!0-9]*) return 1 ;; esac
  for d in "$POD_LOGS"/kube-system_etcd-*_*; do
    f=$d/etcd/$1.log
    [ -d "$d" ] && [ ! -L "$d" ] && [ ! -L "$d/etcd" ] && [ -f "$f" ] && [ ! -L "$f" ] || continue
    case ${d##*/} in "kube-system_etcd-${HOST}_"*) LOGFILE=$f && return 0 ;; esac
    if [ -z "$LOGFILE" ] || [ "$f" -nt "$LOGFILE" ]; then LOGFILE=$f; fi
  done
  [ -n "$LOGFILE" ]
}

# --- the kube-apiserver: its containers, its log's tail, its own /readyz, its serving certificate
# Raw text only, each part bounded here (and again by the plugin's parser); the plugin reads and
# judges all of it (src/probe/apiserver.rs): nothing here decides what the text means. crictl's
# container list as it prints it; the newest container's log tail (the newest is picked with the
# same reading of crictl's JSON as etcd's, AWK_CRICTL); `/readyz?verbose` on the node's loopback
# (kube-apiserver binds 0.0.0.0:6443 unless --bind-address says otherwise, and kubeadm and CABPK
# set none): no credentials are sent and the serving certificate is not checked (-k), because its
# dates are what is read, from the file; the body names each check, `[-]etcd failed: reason
# withheld` (handleRootHealth in staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go); and
# /etc/kubernetes/pki/apiserver.crt as PEM text. Runs in the background beside the rest.
# Its caps (APISERVER_*) are set by the plugin (src/probe/script.rs).
probe_apiserver() {
  if ! have crictl; then echo missing >"$T/s.apiserver.ps"
  else
    crictl ps -a --name kube-apiserver -o json >"$T/aps.out" 2>"$T/aps.err"
    raw_section "$T/s.apiserver.ps" head "$APISERVER_PS" "$T/aps.out" "$T/aps.err" "rc $?"
    id=$(awk -v want=kube-apiserver "$AWK_CRICTL" "$T/aps.out" | sort -r | awk -F '\t' 'NR == 1 { print $2 }')
    if [ -n "$id" ]; then
      crictl logs --tail "$APISERVER_LOG_LINES" "$id" >"$T/apl.raw" 2>&1
      raw_section "$T/s.apiserver.log" tail "$APISERVER_LOG_BYTES" "$T/apl.raw" '' "id $id" "rc $?" "max $APISERVER_LOG_BYTES"
    fi
  fi
  if ! have curl; then echo missing >"$T/s.apiserver.readyz"
  else
    url="https://$LOCAL:6443/readyz?verbose"
    GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -k -sS --noproxy '*' --connect-timeout "$CT" --max-time $((CT + TT)) -o "$T/rz.body" \
      -w '%{http_code} %{time_total}' "$url" >"$T/rz.w" 2>"$T/rz.err"
    rc=$?
    raw_section "$T/s.apiserver.readyz" head "$APISERVER_READYZ" "$T/rz.body" "$T/rz.err" "url $url" "rc $rc" "w $(cat "$T/rz.w" 2>/dev/null)"
  fi
  crt=${PKI%/}
  crt=${crt%/*}/apiserver.crt
  if [ -r "$crt" ] && [ -f "$crt" ]; then raw_section "$T/s.apiserver.cert" head "$APISERVER_CERT" "$crt" '' "path $crt"
  else printf 'unreadable %s\n' "$crt" >"$T/s.apiserver.cert"; fi
}

# --- kubelet: what `systemctl status kubelet` shows in the article ----------------------------
probe_kubelet() {
  if ! have systemctl; then echo missing >"$T/s.kubelet" && return; fi
  a=$(systemctl is-active kubelet 2>"$T/k.err" | head -n 1)
  s=$(systemctl show kubelet -p ActiveEnterTimestamp 2>>"$T/k.err")
  raw_section "$T/s.kubelet" head 0 '' "$T/k.err" "active $a" "show $s"
}

# --- paths: own and peers' 2379/2380, all at once ---------------------------------------------
# One curl per path, with the peer certificate when there is one (/version answers on both the
# client and the peer listener). curl's --connect-timeout also covers the handshake, so curl gets
# connect+tls seconds and a watchdog ends it after --connect-timeout if TCP has not connected by
# then. "Connected" is read from curl -v (--trace-time stamps every line): curl <= 8.15 prints
# "Connected to"; 8.16+ prints nothing until the handshake is done, but its ALPN offer and
# ClientHello lines only come after the TCP connect. curl's time_connect is 0 on failed transfers.
# HTTP/1.1: etcd's peer listener offers h2, and /version over h2 there ends in curl error 18.
#
# Cost matters here: on a node whose peers are dropped every check waits the whole connect
# timeout, and a check's timer only starts when its curl does. So the curls are started back to
# back with nothing else forked per path, one watchdog serves all that start together, one grep
# reads every path's log at the end (the lab measured ~1 s between the first and the last of 14
# checks starting when each had its own subshell, watchdog, sleep and awk).
# GNUTLS_NO_IMPLICIT_INIT=1 (every curl here): Debian's and Ubuntu's curl use OpenSSL but load
# GnuTLS through librtmp/libldap, whose constructor then initialises it for nothing: ~10 ms of
# CPU per curl, about half of one. A curl built on GnuTLS initialises it itself (libcurl calls
# gnutls_global_init), and nothing else here sees the variable.

# After --connect-timeout, ends the checks of a group (first..last) whose curl has neither
# connected nor ended: one grep -l over their transcripts by the plugin's reading of curl's words
# (CONNECTED: src/probe/paths.rs), noting how long each had run. A check whose curl has ended is
# left alone (its pid may be gone).
watchdog() { # first last
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep "$CT" &
  s=$!
  wait "$s"
  now_ms
  first=$1 last=$2
  set --
  j=$first
  while [ "$j" -le "$last" ]; do set -- "$@" "$T/p.$j.v" && j=$((j + 1)); done
  conn=$(grep -l -s -E "$CONNECTED" "$@")
  j=$first
  while [ "$j" -le "$last" ]; do
    case $conn in *"/p.$j.v"*) ;; *)
      if [ ! -e "$T/p.$j.done" ]; then
        eval "t0=\$T0_$j pid=\$PID_$j"
        echo "killed $((NOW - t0))" >"$T/p.$j.killed"
        kill "$pid"
      fi ;;
    esac
    j=$((j + 1))
  done
}

# A group of checks (first..last) started back to back, then one watchdog for them all (so each
# curl gets at least --connect-timeout).
start_group() { # first last
  G_FIRST=$1 G_LAST=$2
  if [ -n "$PEER_TLS" ]; then set -- --cacert "$PKI/ca.crt" --cert "$PKI/peer.crt" --key "$PKI/peer.key"; else set -- -k; fi
  j=$G_FIRST
  while [ "$j" -le "$G_LAST" ]; do
    eval "host=\$IP_$j port=\$PORT_$j"
    case $host in *:*) host="[$host]" ;; esac
    now_ms
    eval "T0_$j=\$NOW"
    GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -sS -v --trace-time --http1.1 --noproxy '*' --connect-timeout $((CT + TT)) --max-time $((CT + TT)) "$@" \
      -o /dev/null -w 'w %{http_code} %{time_connect} %{time_appconnect}\n' "https://$host:$port/version" >"$T/p.$j.w" 2>"$T/p.$j.v" &
    eval "PID_$j=\$! GROUP_$j=\$G_FIRST"
    j=$((j + 1))
  done
  watchdog "$G_FIRST" "$G_LAST" &
  eval "WD_$G_FIRST=\$! LAST_$G_FIRST=\$G_LAST"
}

# Waits for check $1, notes how it ended (p.$1.m: curl's exit code and ms), and stops its group's watchdog once the
# group is over (checks end in the order they started: they all have the same bounds).
finish_check() { # index
  eval "pid=\$PID_$1 g=\$GROUP_$1"
  wait "$pid"
  rc=$?
  : >"$T/p.$1.done"
  now_ms
  eval "t0=\$T0_$1 wd=\$WD_$g last=\$LAST_$g"
  printf 'check %s %s\n' "$rc" $((NOW - t0)) >"$T/p.$1.m"
  if [ "$1" -eq "$last" ]; then
    kill "$wd" 2>/dev/null
    wait "$wd"
  fi
}

# All checks, at most --parallel at once: that bounds the processes and connections a long --peer
# list can make the probe open on the node. The first --parallel start together; past that, each
# next check starts as the oldest ends, with a watchdog of its own. Each check's section
# (check.I: p.I.m, p.I.killed, p.I.w, p.I.v) is judged by the plugin (src/probe/paths.rs).
run_paths() {
  next=$N
  [ "$PAR" -lt "$N" ] && next=$PAR
  start_group 1 "$next"
  next=$((next + 1))
  i=1
  while [ "$i" -le "$N" ]; do
    finish_check "$i"
    i=$((i + 1))
    if [ "$next" -le "$N" ]; then
      start_group "$next" "$next"
      next=$((next + 1))
    fi
  done
}

# The checks (IP_i PORT_i OWN_i, i = 1..N: own node first, each address once), run in the
# background while the rest of the probe reads the node.
start_paths() {
  N=0 seen=' ' PEER_TLS=
  [ -r "$PKI/ca.crt" ] && [ -r "$PKI/peer.crt" ] && [ -r "$PKI/peer.key" ] && PEER_TLS=1
  printf 'checks %s %s %s\n' "$CT" "$TT" "${PEER_TLS:-0}" >"$T/paths.list"
  have curl || echo nocurl >>"$T/paths.list"
  [ -n "$PEER_TLS" ] || err paths "no readable ca.crt/peer.crt/peer.key in $PKI: TCP checked, TLS not tried"
  for ip in $SELF $PEERS; do
    case $seen in *" $ip "*) continue ;; esac
    own=false && [ "$ip" = "$SELF" ] && own=true
    seen="$seen$ip "
    for port in 2379 2380; do
      N=$((N + 1))
      eval "IP_$N=\$ip PORT_$N=\$port OWN_$N=\$own"
      printf 'path %s %s %s %s\n' "$N" "$ip" "$port" "$own" >>"$T/paths.list"
    done
  done
  if have curl; then
    { run_paths; reads_after; } >/dev/null 2>&1 &
  else
    err paths "curl not found: 2379/2380 not checked"
    reads_after >/dev/null 2>&1 &
  fi
}

# --- what is read around the path checks ------------------------------------------------------
# reads_before runs right before the checks start and reads_after right after the last one ends
# (in the checks' own job), so that a counter read by both counts what happened during the
# checks. Both must stay short: reads_before delays the checks' start, and reads_after ends the
# probe's wait for them.
# etcd's metrics are read beside the firewall (metrics_read puts its before read in the
# background itself); the firewall's before read is the one the checks wait for.
reads_before() {
  metrics_read before
  firewall_read before
}
reads_after() {
  metrics_read after &
  m=$!
  firewall_read after
  wait "$m"
}

# --- the node's own firewall: its rules and their counters, read before and after the checks ---
# `nft -a list ruleset` (every family: iptables-nft's tables too), and the legacy back-end's
# tables where there are any: `iptables-legacy-save -c` / `ip6tables-legacy-save -c`, else
# `iptables-save -c` / `ip6tables-save -c` when `iptables -V` says legacy or nft is missing. A
# missing tool, or one refused (no CAP_NET_ADMIN, CAP_NET_RAW), is data. Each read is bounded in
# time (timeout 2 s where the node has `timeout`) and in bytes: a kube-proxy or Antrea node has
# thousands of rules that cannot drop (the dump is megabytes there), so only the lines the
# plugin's patterns pick are sent (FW_KEEP, then the accepts apart, FW_ACCEPT: they never crowd
# out a drop), each list at most FW_MAX bytes, with their line numbers; for iptables-save also
# the chains of its rules in order (uniq -c), for each rule's position. The plugin judges which
# rules can drop a path's packet (src/probe/firewall/read.rs reads this part).
fw_one() { # tool nft|ipt command...
  printf 'tool %s\n' "$1"
  kind=$2
  shift 2
  have "$1" || { printf 'missing %s\n' "$1" && return; }
  have timeout && set -- timeout 2 "$@"
  "$@" >"$T/fw.out" 2>"$T/fw.err" </dev/null
  rc=$?
  printf 'rc %s\n' "$rc"
  [ $rc -eq 0 ] || { tail -c "$STDERR_BYTES" "$T/fw.err" | sed 's/^/err /' && echo && return; }
  printf 'lines ' && wc -l <"$T/fw.out" && echo keep
  # The `echo` ends a line `head -c` cut short: an empty last line says the list is whole.
  grep -n -i -E "$FW_KEEP" "$T/fw.out" | head -c "$FW_MAX" && echo && echo accept
  grep -n -i -E "$FW_ACCEPT" "$T/fw.out" | head -c "$FW_MAX" && echo
  [ "$kind" = ipt ] || return 0
  echo runs
  sed -n 's/^\(\[[0-9]*:[0-9]*\] \)\{0,1\}-A \([[:graph:]]*\).*/\2/p' "$T/fw.out" | uniq -c | head -c "$FW_MAX" && echo
}

# Writes $T/fw.before or $T/fw.after: every tool's read, one after the other.
firewall_read() { # before|after
  {
    fw_one nft nft nft -a list ruleset
    if have iptables-legacy-save || have ip6tables-legacy-save; then
      fw_one iptables-legacy ipt iptables-legacy-save -c
      fw_one ip6tables-legacy ipt ip6tables-legacy-save -c
    elif have iptables-save && { ! have nft || iptables -V 2>/dev/null | grep -q legacy; }; then
      fw_one iptables ipt iptables-save -c
      fw_one ip6tables ipt ip6tables-save -c
    elif ! have nft; then
      fw_one iptables ipt iptables-save -c
    fi
  } >"$T/fw.$1.tmp" 2>/dev/null
  mv "$T/fw.$1.tmp" "$T/fw.$1"
}

# --- etcd's own metrics, read before and after the path checks ----------------------------------
# kubeadm's etcd serves its Prometheus metrics without a certificate on http://LOCAL:2381/metrics
# (--listen-metrics-urls), without quorum. Read twice: before the checks (in the background, so
# the checks start at once; the alarm list waits for it: `etcd_server_has_leader 0` says the
# member has no leader, which 3.4's /health body does not) and after the last check ends (in the
# checks' job: it ends the probe's wait, so at most METRICS_AFTER_S). The probe only fetches: at
# most METRICS_RAW bytes of the body, of which only the lines of the families the plugin reads
# (METRICS_FAMILIES, src/probe/metrics.rs) and their `# TYPE` lines are sent, at most
# METRICS_KEEP bytes and one more (so the plugin sees the cut). The plugin judges the read
# (src/probe/etcdask.rs) and parses the lines.

# One read (before or after), into its section $T/s.metrics.WHEN. The before read runs in the background
# and yields the CPU to the checks starting beside it (its curl and grep at nice 10); the after
# read ends the probe's wait, at the checks' priority.
metrics_read() { # before|after
  if [ "$1" = before ]; then
    yield=
    have nice && yield='nice -n 10'
    metrics_fetch before "$METRICS_BEFORE_S" "$yield" >/dev/null 2>&1 &
  else metrics_fetch after "$METRICS_AFTER_S"; fi
}

# The section appears whole (mv: the alarm list's job waits for the before read's).
metrics_fetch() { # when max-seconds [nice -n N]
  f=$T/metrics.$1
  if ! have curl; then echo 'skipped curl not found' >"$T/s.metrics.$1" && return; fi
  url=http://$LOCAL:2381/metrics
  now_ms
  t0=$NOW
  # $3 unquoted: the nice command and its arguments, or nothing.
  { GNUTLS_NO_IMPLICIT_INIT=1 $3 curl -q -g -sS --noproxy '*' --connect-timeout "$2" --max-time "$2" -D "$f.hdr" \
    -o - "$url" 2>"$f.err"; echo $? >"$f.rc"; } | head -c "$METRICS_RAW" | tr -d '\000' >"$f.body"
  now_ms
  read -r rc <"$f.rc" 2>/dev/null || rc=1
  # This read ends the probe's wait: no process for what is empty (a refused connect's body).
  size=0
  [ ! -s "$f.body" ] || size=$(wc -c <"$f.body")
  : >"$f.kept"
  [ "$size" = 0 ] || $3 grep -E "^(# TYPE ($METRICS_FAMILIES)[[:blank:]]|($METRICS_FAMILIES)(_bucket|_sum|_count)?([[:blank:]{]|\$))" "$f.body" >"$f.kept"
  HDR=$f.hdr
  raw_section "$f.tmp" head $((METRICS_KEEP + 1)) "$f.kept" "$f.err" "rc $rc" "url $url" "time $((t0 - START)) $((NOW - t0))" "raw $size"
  mv "$f.tmp" "$T/s.metrics.$1"
}

# Waits (at most METRICS_BEFORE_S and a second) for the before read: the alarm list's job reads it.
metrics_wait_before() {
  i=0
  while [ ! -e "$T/s.metrics.before" ] && [ "$i" -lt $(((METRICS_BEFORE_S + 1) * 10)) ]; do
    sleep 0.1 2>/dev/null || { sleep 1 && i=$((i + 9)); }
    i=$((i + 1))
  done
}

# --- etcd's own view: /health, the member list, the alarm list --------------------------------
# Each is one bounded request (connect timeout, then connect + TLS timeouts in all), run in the
# background beside the rest; none of them is a path check (those are the /version checks above).
# LOCAL is this node's loopback in the family of --self: kubeadm's etcd listens for clients on
# 127.0.0.1:2379 on IPv4 nodes and on [::1]:2379 on IPv6 ones (and its metrics on the same
# loopback's 2381). Each answer is its section as etcd sent it, judged by the plugin
# (src/probe/etcdask.rs): `rc RC`, `url URL`, `w STATUS SECONDS`, curl's stderr (`err` lines), the
# headers (`hdr` lines), `--` and the body. A question not asked is `skipped WHY`.

# One request to the node's own etcd: name (of the $T files), byte cap, URL, curl options. Writes
# its section $T/s.NAME; returns curl's exit code. ASK_MAX, when set, is its whole time instead
# of connect + TLS.
etcd_ask() { # name max-bytes url option...
  n=$1 max=$2 url=$3
  shift 3
  GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -sS --http1.1 --noproxy '*' --connect-timeout "$CT" --max-time "${ASK_MAX:-$((CT + TT))}" \
    --max-filesize "$max" "$@" -D "$T/$n.hdr" -o "$T/$n.body" -w '%{http_code} %{time_total}' "$url" >"$T/$n.w" 2>"$T/$n.err"
  rc=$?
  w=
  read -r w <"$T/$n.w"
  HDR=$T/$n.hdr
  raw_section "$T/$n.tmp" head "$max" "$T/$n.body" "$T/$n.err" "rc $rc" "url $url" "w $w"
  HDR=
  mv "$T/$n.tmp" "$T/s.$n"
  return $rc
}

# etcd's /health (client certificate, as etcdctl would), else the metrics listener. Its body names
# an alarm from etcd 3.5 on ({"health":"false","reason":"ALARM NOSPACE"}: checkAlarms in
# server/etcdserver/api/etcdhttp/health.go, 3.5 and 3.6); 3.4's says {"health":"false"} only
# (etcdserver/api/etcdhttp/metrics.go), hence the alarm list below. HEALTH_RC: curl's exit code.
health_check() {
  HEALTH_RC=1
  if ! have curl; then echo 'skipped curl not found' >"$T/s.health" && return; fi
  if [ -r "$PKI/ca.crt" ] && [ -r "$PKI/healthcheck-client.crt" ] && [ -r "$PKI/healthcheck-client.key" ]; then
    url=https://$LOCAL:2379/health
    set -- --cacert "$PKI/ca.crt" --cert "$PKI/healthcheck-client.crt" --key "$PKI/healthcheck-client.key"
  else url=http://$LOCAL:2381/health && set --; fi
  etcd_ask health "$HEALTH_BODY" "$url" "$@"
  HEALTH_RC=$?
}

# The member list from this node's peer listener, with its peer certificate: etcd serves it there
# without quorum, from the member's own copy (GET /members, peerMembersHandler in
# server/etcdserver/api/etcdhttp/peer.go, 3.4 to 3.6), as a JSON array of {id, name, peerURLs,
# clientURLs, isLearner}, with the X-Etcd-Cluster-ID header. etcd 3.4 and 3.5 print the id as a
# decimal number (a uint64, over 2^53) and leave out an empty name (a member added but not
# started yet) and isLearner when false.
members_check() {
  f=$T/s.members
  if ! have curl; then echo 'skipped curl not found' >"$f" && return; fi
  if [ -z "$SELF" ]; then echo 'skipped no --self address to ask' >"$f" && return; fi
  if [ -z "$PEER_TLS" ]; then echo 'skipped no readable ca.crt/peer.crt/peer.key' >"$f" && return; fi
  host=$SELF
  case $host in *:*) host="[$host]" ;; esac
  etcd_ask members "$MEMBERS_BODY" "https://$host:2380/members" --cacert "$PKI/ca.crt" --cert "$PKI/peer.crt" --key "$PKI/peer.key"
}

# The alarm list through etcd's grpc-gateway on the client port (POST /v3/maintenance/alarm,
# {"action":"GET"}: Maintenance.Alarm, google.api.http post "/v3/maintenance/alarm" in
# api/etcdserverpb/rpc.proto of 3.5 and 3.6; 3.4.23 and 3.5.1 answer it in the lab), with the health
# check's client certificate. It goes through raft, so without quorum it
# fails or times out: that is data, not an error of the probe. grpc-gateway prints the member ID
# as a decimal string and the alarm by its name (AlarmType: NONE 0, NOSPACE 1, CORRUPT 2; the
# number is read too). Asked once /health has answered, in what is left of
# connect + TLS timeouts since the probe started (at least a second): a member that does not
# answer /health, or says it has no leader (3.5 and 3.6: "RAFT NO LEADER", checkLeader in
# health.go), is not asked (Skipped), and the two requests never queue behind each other at a
# busy member.
alarms_check() {
  f=$T/s.alarms
  if ! have curl; then echo 'skipped curl not found' >"$f" && return; fi
  if ! { [ -r "$PKI/ca.crt" ] && [ -r "$PKI/healthcheck-client.crt" ] && [ -r "$PKI/healthcheck-client.key" ]; }; then
    echo 'skipped no readable ca.crt/healthcheck-client.crt/healthcheck-client.key' >"$f" && return
  fi
  [ "$HEALTH_RC" = 0 ] || { echo 'skipped not asked: /health got no answer' >"$f" && return; }
  if grep -q 'RAFT NO LEADER' "$T/health.body" 2>/dev/null; then
    echo 'skipped not asked: /health says RAFT NO LEADER (the list needs quorum)' >"$f" && return
  fi
  # 3.4's /health body does not say why it is false: the metrics read before the checks do.
  metrics_wait_before
  if grep -qx 'etcd_server_has_leader 0' "$T/s.metrics.before" 2>/dev/null; then
    echo 'skipped not asked: etcd_server_has_leader is 0 (the list needs quorum)' >"$f" && return
  fi
  # What is left of connect + TLS timeouts since the probe started (at least a second): the
  # alarm list never makes the probe longer than its path checks may take.
  now_ms
  left=$(((CT + TT) * 1000 - (NOW - START)))
  [ "$left" -ge 1000 ] || left=1000
  ASK_MAX=$((left / 1000)).$((left % 1000 / 100))
  etcd_ask alarms "$ALARMS_BODY" "https://$LOCAL:2379/v3/maintenance/alarm" --cacert "$PKI/ca.crt" \
    --cert "$PKI/healthcheck-client.crt" --key "$PKI/healthcheck-client.key" -H 'Content-Type: application/json' --data '{"action":"GET"}'
}

# --- certs: openssl's text of the etcd certificates (1.0 to 3.x); the plugin reads dates and SANs
# Section certs: per file `file NAME K PATH` (its certificate is the K-th of the text, 0: none),
# `error NAME WHY` or `failed NAME PATH` and openssl's stderr; then `--` and the text.
# One certificate file on its own: the fallback, and the one that names a file's own error.
cert_info() { # path
  name=${1##*/}
  if [ ! -e "$1" ]; then printf 'error %s not found: %s\n' "$name" "$1"
  elif ! have openssl; then printf 'error %s openssl not found\n' "$name"
  elif ! openssl x509 -in "$1" -noout -text >"$T/c.one" 2>"$T/c.err"; then
    printf 'failed %s %s\n' "$name" "$1" && sed 's/^/err /' "$T/c.err" && echo
  elif grep -q '^Certificate:' "$T/c.one"; then
    K=$((K + 1)) && printf 'file %s %s %s\n' "$name" "$K" "$1" && cat "$T/c.one" >>"$T/c.txt"
  else printf 'file %s 0 %s\n' "$name" "$1"; fi
}

# All certificate files read by one openssl pair: OpenSSL 3's `x509` command spends ~40 ms of CPU
# starting (its decoders), so one per file was the most expensive part of a probe, and on a busy
# node that CPU delays the path checks; `crl2pkcs7 | pkcs7 -print_certs` reads them all for ~15 ms
# and keeps their order. A file counts by its first certificate, as `x509 -in` reads it (one grep
# counts the PEM blocks each file holds, `FILE:N` a line). Returns 1 on anything unexpected (a file
# missing or without a certificate, openssl failing, counts that do not add up): the caller then
# reads each file on its own.
certs_at_once() { # path...
  have openssl || return 1
  for f in "$@"; do [ -f "$f" ] && [ -r "$f" ] || return 1; done
  grep -c -e '^-----BEGIN CERTIFICATE-----' -e '^-----BEGIN X509 CERTIFICATE-----' \
    -e '^-----BEGIN TRUSTED CERTIFICATE-----' "$@" >"$T/c.n" 2>/dev/null || return 1
  K=1
  for f in "$@"; do
    read -r n || return 1
    n=${n##*:}
    [ "$n" -gt 0 ] || return 1
    printf 'file %s %s %s\n' "${f##*/}" "$K" "$f" && K=$((K + n))
  done <"$T/c.n" >"$T/c.head"
  for f in "$@"; do set -- "$@" -certfile "$f" && shift; done
  openssl crl2pkcs7 -nocrl "$@" 2>/dev/null | openssl pkcs7 -print_certs -text -noout >"$T/c.txt" 2>/dev/null || return 1
  [ "$(grep -c '^Certificate:' "$T/c.txt")" -eq $((K - 1)) ]
}

probe_certs() {
  api=${PKI%/}
  api=${api%/*}/apiserver-etcd-client.crt
  set -- "$PKI/ca.crt" "$PKI/server.crt" "$PKI/peer.crt" "$PKI/healthcheck-client.crt"
  [ -e "$api" ] && set -- "$@" "$api"
  if ! certs_at_once "$@"; then
    : >"$T/c.txt" && K=0
    for f in "$@"; do cert_info "$f"; done >"$T/c.head"
  fi
  raw_section "$T/s.certs" head "$CERTS_BYTES" "$T/c.txt" '' "$(cat "$T/c.head")"
}

# --- manifest: the static pod's file, read by the plugin (kubeadm's `- --flag=value` lines) -----
probe_manifest() {
  if [ -r "$MANIFEST" ]; then raw_section "$T/s.manifest" head "$MANIFEST_BYTES" "$MANIFEST" ''
  else err manifest "not readable: $MANIFEST"; fi
}

# --- the output: framed sections, printed once -----------------------------------------------
# Format 2 (src/probe/frame.rs reads it): a line `etcdnet-probe 2`, then per section a header
# line `@NAME` and each line of its text behind a `|`, then `@end N` (N: the sections printed).
# Every line of text has its `|`, so nothing a section holds can print a header or the end:
# only this function frames. Each section as NAME:MAX:FILE[:FILE]... (its files' lines, at most
# MAX bytes of them when MAX is not 0; a file missing adds nothing, a section of none is empty).
# One awk copies every line behind its `|` and reads none (a sed per section would be twenty
# processes where the probe's end is waited for; sed alone cannot put a header between files).
# A check's section: its head (p.I.m, p.I.killed, p.I.w), `--` and curl's transcript, at most
# 8 KiB (curl -v of one /version request is a few dozen lines; a peer's huge headers are cut).
emit() {
  [ -s "$T/stderr" ] && err probe "unexpected stderr: $(head -c 300 "$T/stderr")"
  now_ms
  printf 'self %s\nhost %s\nclock %s\nms %s\n' "$SELF" "$HOST" "$CLOCK" "$((NOW - START))" >"$T/s.node"
  [ -e "$T/s.apiserver.readyz" ] || echo nojob >"$T/s.apiserver.readyz"
  echo -- >"$T/sep"
  set -- paths:0:"$T/paths.list" firewall.before:0:"$T/fw.before" firewall.after:0:"$T/fw.after" errors:0:"$T/errors"
  for p in node health members alarms metrics.before metrics.after ips etcd.ps etcd.log etcd.prev kubelet manifest \
    certs apiserver.ps apiserver.log apiserver.readyz apiserver.cert; do set -- "$@" "$p:0:$T/s.$p"; done
  i=1
  while [ "$i" -le "$N" ]; do
    [ -e "$T/p.$i.m" ] && set -- "$@" "check.$i:8192:$T/p.$i.m:$T/p.$i.killed:$T/p.$i.w:$T/sep:$T/p.$i.v"
    i=$((i + 1))
  done
  awk 'BEGIN { print "etcdnet-probe 2"; for (i = 1; i < ARGC; i++) { n = split(ARGV[i], a, ":"); print "@" a[1]; used = 0
      for (k = 3; k <= n; k++) { while ((getline l < a[k]) > 0 && (a[2] == 0 || (used += length(l) + 1) <= a[2])) print "|" l
        close(a[k]) } }
    print "@end " (ARGC - 1); exit }' "$@" >"$T/out"
  cat "$T/out"
}

# A probe killed outright (SIGKILL: the pod's deadline after its grace period, the OOM killer)
# cannot remove its folder: the next probe on the node removes ours that nobody has touched for
# 10 minutes (no probe runs that long). By age, not by PID: probes in other PID namespaces share
# the node's /tmp. find -type d matches no symlink, and rm -rf follows none.
sweep_stale() {
  have find || return 0
  me=$(id -u 2>/dev/null) || return 0
  # One find over all the temp folders there are (each once): a process each added up on a busy node.
  set --
  for d in ${TMPDIR:+"$TMPDIR"} /dev/shm /tmp /var/tmp /run; do
    [ -d "$d" ] || continue
    for seen in "$@"; do [ "$seen" = "$d" ] && continue 2; done
    set -- "$@" "$d"
  done
  [ $# -gt 0 ] || return 0
  find "$@" -maxdepth 1 -type d -name 'etcdnet-probe.*' -user "$me" -mmin +10 -exec rm -rf {} + 2>/dev/null
}

# Memory first (/dev/shm) unless TMPDIR says otherwise: the probe's ~5 files per path would
# otherwise be made and removed on the disk where etcd fsyncs its WAL, and its scratch must not
# outlive a reboot anyway.
make_tmp() {
  for d in ${TMPDIR:+"$TMPDIR"} /dev/shm /tmp /var/tmp /run; do
    T=$(mktemp -d "$d/etcdnet-probe.XXXXXX" 2>/dev/null) && [ -d "$T" ] && return 0
    T=$d/etcdnet-probe.$$ && mkdir -m 700 "$T" 2>/dev/null && return 0
  done
  return 1
}

main() {
  LC_ALL=C && export LC_ALL
  # sudo's secure_path leaves out /usr/local/bin and /usr/local/sbin on some distributions (Photon
  # among them), and image-builder installs crictl in /usr/local/bin (Flatcar: /opt/bin): put each
  # that is missing in front, in that order, before any tool is looked up.
  for d in /opt/bin /usr/local/sbin /usr/local/bin; do
    case :$PATH: in *:"$d":*) ;; *) PATH=$d${PATH:+:$PATH} ;; esac
  done
  export PATH
  PKI=${ETCDNET_PKI_DIR:-/etc/kubernetes/pki/etcd}
  MANIFEST=${ETCDNET_MANIFEST:-/etc/kubernetes/manifests/etcd.yaml}
  POD_LOGS=${ETCDNET_POD_LOGS:-/var/log/pods}
  # No writable temp folder may mean stale ones filling it: sweep, then try once more.
  if ! make_tmp && ! { sweep_stale; make_tmp; }; then
    printf 'etcdnet-probe 2\n@errors\n|probe\tno writable temp directory\n@end 1\n'
    return 0
  fi
  # A job still running (the metrics read before the checks, the checks' own job) may create a
  # file while rm walks the folder: then rm fails and is tried again once the jobs had time to end.
  trap 'rm -rf "$T" 2>/dev/null || { sleep 1; rm -rf "$T" 2>/dev/null; } || { sleep 2; rm -rf "$T"; }' EXIT
  trap 'exit 1' HUP INT TERM
  exec 2>"$T/stderr"
  now_ms
  START=$NOW
  : >"$T/errors"
  parse_args "$@"
  # The paths first: their timers are what the probe waits for, and on a busy node every process
  # started before them delays them all.
  reads_before
  start_paths
  # The rest reads the node for the report; none of it is timed. It yields the CPU (nice 10, it
  # and every process it starts; the path checks started above keep theirs): on a control plane
  # in trouble etcd and the kubelet come first, and so do the path checks' timers.
  if have renice; then renice -n 10 -p $$ >/dev/null 2>&1; fi
  sweep_stale
  probe_host
  { health_check; alarms_check; } >/dev/null 2>&1 &
  members_check >/dev/null 2>&1 &
  probe_apiserver >/dev/null 2>&1 &
  probe_etcd
  probe_kubelet
  probe_certs
  probe_manifest
  wait
  emit
}

# Everything above is definitions; stdin is closed so that under `sh -s` no tool can read the
# rest of the script as its input.
main "$@" </dev/null
exit 0
