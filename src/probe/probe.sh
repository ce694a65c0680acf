#!/bin/sh
# etcdnet-probe, the on-node half of `kubectl etcdnet diagnose`: it collects, the plugin judges.
# POSIX sh, read-only. What it reads, its output, flags, caps, and every part's WHY: src/probe/script.rs.

have() { command -v "$1" >/dev/null 2>&1; }
# A failed step for errors[]: one line, step TAB message.
err() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n\r' '   ')" >>"$T/errors"; }
# A section of one head line (`missing`, `skipped WHY`).
note() { printf '%s\n' "$2" >"$T/s.$1"; }
# Monotonic milliseconds into NOW (/proc/uptime, no fork), else the wall clock.
now_ms() {
  up=
  [ -r /proc/uptime ] && read -r up _ </proc/uptime
  case $up in
  [0-9]*.[0-9][0-9]) NOW=$((${up%.*} * 1000 + 1${up#*.} * 10 - 1000)) ;;
  *) NOW=$(($(date +%s) * 1000)) ;;
  esac
}
# The arguments: a bad one is reported and replaced by its default, never fatal.
parse_args() {
  SELF= PEERS=
  while [ $# -gt 0 ]; do
    case $1 in
    --self | --peer | --connect-timeout | --tls-timeout | --log-lines | --log-bytes | --parallel)
      [ $# -ge 2 ] || { err args "$1 needs a value" && break; }
      set_opt "$1" "$2"; shift ;;
    --*=*) set_opt "${1%%=*}" "${1#*=}" ;;
    *) err args "unknown argument: $1" ;;
    esac
    shift
  done
  [ -n "$SELF" ] || err args "no --self IP: this node's own 2379/2380 not checked"
  LOCAL=127.0.0.1
  case $SELF in *:*) LOCAL='[::1]' ;; esac
  [ "$CT" -ge 1 ] || { err args "--connect-timeout 0 raised to 1" && CT=1; }
  [ "$PAR" -ge 1 ] || { err args "--parallel 0 raised to 1" && PAR=1; }
}
# One option's value, checked (leading zeros off by hand: $((010)) is octal).
set_opt() {
  case $1 in
  --self | --peer)
    case $2 in -* | '' | *[!0-9A-Za-z.:-]*) err args "ignored $1 '$2': not an address" && return ;; esac
    if [ "$1" = --self ]; then SELF=$2; else PEERS="$PEERS $2"; fi ;;
  --connect-timeout | --tls-timeout | --log-lines | --log-bytes | --parallel)
    case $2 in '' | *[!0-9]* | ??????????*) err args "ignored $1 '$2': not a whole number" && return ;; esac
    n=$2
    while :; do case $n in 0?*) n=${n#0} ;; *) break ;; esac; done
    case $1 in --connect-timeout) CT=$n ;; --tls-timeout) TT=$n ;; --log-lines) LOG_LINES=$n ;;
    --parallel) PAR=$n ;; *) LOG_BYTES=$n ;; esac ;;
  *) err args "unknown argument: $1" ;;
  esac
}
# The host: its name, its clock, its addresses as `ip -o addr show` or `hostname -I` prints them.
probe_host() {
  HOST=$(uname -n 2>/dev/null) CLOCK=$(date +%s%3N 2>/dev/null)
  case $CLOCK in *[!0-9]* | '') CLOCK=$(($(date +%s) * 1000)) ;; esac
  if have ip; then ip -o addr show >"$T/ips.raw" 2>/dev/null; set -- 'tool ip'
  elif hostname -I >"$T/ips.raw" 2>/dev/null; then set -- 'tool hostname'
  else err host "neither 'ip' nor 'hostname -I' to list the node's addresses" && return; fi
  raw_section "$T/s.ips" head "$IPS_BYTES" "$T/ips.raw" '' "$@"
}
# A section's file in frame.rs's Head shape: head lines, size, err and hdr lines, `--`, OUT's bytes.
raw_section() { # file head|tail max out err [head-line]...
  rs_f=$1 rs_how=$2 rs_max=$3 rs_o=$4 rs_e=$5
  shift 5
  {
    [ $# -eq 0 ] || printf '%s\n' "$@"
    [ ! -s "$rs_o" ] || printf 'size %s\n' "$(wc -c <"$rs_o")"
    [ ! -s "$rs_e" ] || { tail -c "$STDERR_BYTES" "$rs_e"; echo; } | sed 's/^/err /'
    [ ! -s "${HDR:-}" ] || { head -c "$ASK_HEADERS" "$HDR" | tr -d '\000'; echo; } | sed 's/^/hdr /'
    [ -z "$rs_o" ] || echo --
    [ ! -s "$rs_o" ] || "$rs_how" -c "$rs_max" "$rs_o" | tr -d '\000'
  } >"$rs_f"
}
# $1's containers as crictl lists them ($2.ps), the newest's log ($2.log); ID1 ID2: the two newest.
containers() { # name prefix ps-max log-lines log-max
  crictl ps -a --name "$1" -o json >"$T/$2.out" 2>"$T/$2.err"
  rc=$?
  raw_section "$T/s.$2.ps" head "$3" "$T/$2.out" "$T/$2.err" "rc $rc"
  [ $rc -eq 0 ] || return 1
  set -- "$@" $(crictl ps -a --name "^$1\$" -q 2>/dev/null | grep -x '[0-9A-Za-z][0-9A-Za-z]*')
  ID1=$6 ID2=$7
  [ -n "$ID1" ] || return 1
  crictl logs --tail "$4" "$ID1" >"$T/$2.log" 2>&1
  raw_section "$T/s.$2.log" tail "$5" "$T/$2.log" '' "id $ID1" "rc $?" "max $5"
}
# etcd's containers, the newest's log tail and, when it says little, the previous one's.
probe_etcd() {
  have crictl || { note etcd.ps missing && return; }
  containers etcd etcd "$CRICTL_PS_BYTES" "$LOG_LINES" "$LOG_BYTES" && previous_logs
}
# The previous etcd container's log, when the newest is not running or its log is short.
previous_logs() {
  got=$(wc -l <"$T/etcd.log") used=$(wc -c <"$T/etcd.log")
  [ "$used" -le "$LOG_BYTES" ] || used=$LOG_BYTES
  if [ "$got" -ge "$LOG_LINES" ] && crictl ps --name '^etcd$' -q 2>/dev/null | grep -qx "$ID1"; then return 0; fi
  left=$((LOG_BYTES - used)) rc=
  [ "$left" -gt 1 ] || return 0
  set -- "$T/s.etcd.prev" tail "$left"
  if [ -n "$ID2" ]; then
    crictl logs --tail "$LOG_LINES" "$ID2" >"$T/prev.raw" 2>&1
    rc=$?
    [ $rc -ne 0 ] || { raw_section "$@" "$T/prev.raw" '' "id $ID2" "rc 0" "max $left" && return 0; }
  fi
  at=$(crictl inspect "$ID1" 2>/dev/null | sed -n 's/^ *"attempt": *\([0-9][0-9]*\).*/\1/p' | head -n 1)
  pat=
  case $at in '' | 0*) ;; *) pat=$((at - 1)) ;; esac
  if [ -n "$pat" ] && pod_log_file "$pat"; then
    raw_section "$@" "$LOGFILE" '' "id $ID2" "rc 0" "max $left" "lines $LOG_LINES" "file $LOGFILE"
  elif [ -n "$rc" ]; then
    raw_section "$@" "$T/prev.raw" '' "id $ID2" "rc $rc" "nofile $pat $POD_LOGS"
  fi
}
# LOGFILE: the kubelet's file of etcd's attempt $1, this host's pod first; no symbolic link.
pod_log_file() { # attempt
  LOGFILE=
  for d in "$POD_LOGS"/kube-system_etcd-*_*; do
    f=$d/etcd/$1.log
    [ -d "$d" ] && [ ! -L "$d" ] && [ ! -L "$d/etcd" ] && [ -f "$f" ] && [ ! -L "$f" ] || continue
    case ${d##*/} in "kube-system_etcd-${HOST}_"*) LOGFILE=$f && return 0 ;; esac
    if [ -z "$LOGFILE" ] || [ "$f" -nt "$LOGFILE" ]; then LOGFILE=$f; fi
  done
  [ -n "$LOGFILE" ]
}
# The kube-apiserver, raw: its containers, the newest's log, its own /readyz, its certificate.
probe_apiserver() {
  if have crictl; then containers kube-apiserver apiserver "$APISERVER_PS" "$APISERVER_LOG_LINES" "$APISERVER_LOG_BYTES"
  else note apiserver.ps missing; fi
  if ! have curl; then note apiserver.readyz missing
  else
    url="https://$LOCAL:6443/readyz?verbose"
    GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -k -sS --noproxy '*' --connect-timeout "$CT" --max-time $((CT + TT)) -o "$T/rz.body" \
      -w '%{http_code} %{time_total}' "$url" >"$T/rz.w" 2>"$T/rz.err"
    rc=$?
    raw_section "$T/s.apiserver.readyz" head "$APISERVER_READYZ" "$T/rz.body" "$T/rz.err" "url $url" "rc $rc" "w $(cat "$T/rz.w" 2>/dev/null)"
  fi
  crt=$ETC/apiserver.crt
  if [ -r "$crt" ] && [ -f "$crt" ]; then raw_section "$T/s.apiserver.cert" head "$APISERVER_CERT" "$crt" '' "path $crt"
  else note apiserver.cert "unreadable $crt"; fi
}
# The kubelet: what `systemctl status kubelet` shows in the support article.
probe_kubelet() {
  have systemctl || { note kubelet missing && return; }
  a=$(systemctl is-active kubelet 2>"$T/k.err" | head -n 1)
  s=$(systemctl show kubelet -p ActiveEnterTimestamp 2>>"$T/k.err")
  raw_section "$T/s.kubelet" head 0 '' "$T/k.err" "active $a" "show $s"
}
# After --connect-timeout, ends the checks first..last whose curl has neither connected nor ended.
watchdog() { # first last
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep "$CT" & s=$!
  wait "$s"
  now_ms
  conn=$(grep -l -s -E "$CONNECTED" "$T"/p.*.v) j=$1
  while [ "$j" -le "$2" ]; do
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
# Checks first..last started back to back (one curl each, nothing else forked), one watchdog.
start_group() { # first last
  G_FIRST=$1 G_LAST=$2
  if [ -n "$PEER_TLS" ]; then set -- --cacert "$PKI/ca.crt" --cert "$PKI/peer.crt" --key "$PKI/peer.key"; else set -- -k; fi
  j=$G_FIRST
  while [ "$j" -le "$G_LAST" ]; do
    eval "host=\$IP_$j port=\$PORT_$j"
    case $host in *:*) host="[$host]" ;; esac
    now_ms && eval "T0_$j=\$NOW"
    GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -sS -v --trace-time --http1.1 --noproxy '*' --connect-timeout $((CT + TT)) --max-time $((CT + TT)) "$@" \
      -o /dev/null -w 'w %{http_code} %{time_connect} %{time_appconnect}\n' "https://$host:$port/version" >"$T/p.$j.w" 2>"$T/p.$j.v" &
    eval "PID_$j=\$! GROUP_$j=\$G_FIRST"
    j=$((j + 1))
  done
  watchdog "$G_FIRST" "$G_LAST" &
  eval "WD_$G_FIRST=\$! LAST_$G_FIRST=\$G_LAST"
}
# Waits for check $1, notes its exit code and ms (p.$1.m), stops its group's watchdog after the last.
finish_check() { # index
  eval "pid=\$PID_$1 g=\$GROUP_$1 t0=\$T0_$1"
  wait "$pid"
  rc=$?
  : >"$T/p.$1.done"
  now_ms
  printf 'check %s %s\n' "$rc" $((NOW - t0)) >"$T/p.$1.m"
  eval "wd=\$WD_$g last=\$LAST_$g"
  [ "$1" -ne "$last" ] || { kill "$wd" 2>/dev/null; wait "$wd"; }
}
# All checks, at most --parallel at once: each next one starts as the oldest ends.
run_paths() {
  next=$N && [ "$PAR" -ge "$N" ] || next=$PAR
  start_group 1 "$next"
  next=$((next + 1)) i=1
  while [ "$i" -le "$N" ]; do
    finish_check "$i"
    i=$((i + 1))
    if [ "$next" -le "$N" ]; then start_group "$next" "$next" && next=$((next + 1)); fi
  done
}
# The checks (IP_i PORT_i, own node first, each address once), in the background.
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
      eval "IP_$N=\$ip PORT_$N=\$port"
      printf 'path %s %s %s %s\n' "$N" "$ip" "$port" "$own" >>"$T/paths.list"
    done
  done
  if have curl; then { run_paths; reads_after; } >/dev/null 2>&1 &
  else { err paths "curl not found: 2379/2380 not checked"; reads_after; } >/dev/null 2>&1 & fi
}
# Right after the last check ends (the checks' job): etcd's metrics beside the firewall.
reads_after() { metrics_fetch after "$METRICS_AFTER_S" & firewall_read after; wait; }
# One firewall tool's read: rc, stderr, or the lines FW_KEEP and FW_ACCEPT pick, each list bounded.
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
  grep -n -i -E "$FW_KEEP" "$T/fw.out" | head -c "$FW_MAX" && echo && echo accept
  grep -n -i -E "$FW_ACCEPT" "$T/fw.out" | head -c "$FW_MAX" && echo
  [ "$kind" = ipt ] || return 0
  echo runs && sed -n 's/^\(\[[0-9]*:[0-9]*\] \)\{0,1\}-A \([[:graph:]]*\).*/\2/p' "$T/fw.out" | uniq -c | head -c "$FW_MAX" && echo
}
# $T/fw.before or $T/fw.after: nft's ruleset, and the legacy back-end's where it is in use.
firewall_read() { # before|after
  fw=$T/fw.$1
  {
    fw_one nft nft nft -a list ruleset
    if have iptables-legacy-save || have ip6tables-legacy-save; then set -- iptables-legacy ip6tables-legacy
    elif have iptables-save && { ! have nft || iptables -V 2>/dev/null | grep -q legacy; }; then set -- iptables ip6tables
    elif ! have nft; then set -- iptables
    else set --; fi
    for v in "$@"; do fw_one "$v" ipt "$v-save" -c; done
  } >"$fw.tmp" 2>/dev/null
  mv "$fw.tmp" "$fw"
}
# One metrics read into s.metrics.WHEN (whole, by mv): the kept families' lines, bounded.
metrics_fetch() { # when max-seconds [nice -n N]
  f=$T/metrics.$1
  have curl || { note "metrics.$1" 'skipped curl not found' && return; }
  url=http://$LOCAL:2381/metrics
  now_ms
  t0=$NOW
  { GNUTLS_NO_IMPLICIT_INIT=1 $3 curl -q -g -sS --noproxy '*' --connect-timeout "$2" --max-time "$2" -D "$f.hdr" \
    -o - "$url" 2>"$f.err"; echo $? >"$f.rc"; } | head -c "$METRICS_RAW" | tr -d '\000' >"$f.body"
  now_ms
  read -r rc <"$f.rc" 2>/dev/null || rc=1
  size=0 && { [ ! -s "$f.body" ] || size=$(wc -c <"$f.body"); }
  [ "$size" = 0 ] && : >"$f.kept" || $3 grep -E "^(# TYPE ($METRICS_FAMILIES)[[:blank:]]|($METRICS_FAMILIES)(_bucket|_sum|_count)?([[:blank:]{]|\$))" "$f.body" >"$f.kept"
  HDR=$f.hdr
  raw_section "$f.tmp" head $((METRICS_KEEP + 1)) "$f.kept" "$f.err" "rc $rc" "url $url" "time $((t0 - START)) $((NOW - t0))" "raw $size"
  mv "$f.tmp" "$T/s.metrics.$1"
}
# Waits (at most METRICS_BEFORE_S and a second) for the before read: the alarm list reads it.
metrics_wait_before() {
  i=0
  while [ ! -e "$T/s.metrics.before" ] && [ "$i" -lt $(((METRICS_BEFORE_S + 1) * 10)) ]; do
    sleep 0.1 2>/dev/null || { sleep 1 && i=$((i + 9)); }
    i=$((i + 1))
  done
}
# One request to this node's etcd into s.NAME (its answer as sent, bounded); returns curl's code.
etcd_ask() { # name max-bytes url option...
  n=$1 max=$2 url=$3
  shift 3
  GNUTLS_NO_IMPLICIT_INIT=1 curl -q -g -sS --http1.1 --noproxy '*' --connect-timeout "$CT" --max-time "${ASK_MAX:-$((CT + TT))}" \
    --max-filesize "$max" "$@" -D "$T/$n.hdr" -o "$T/$n.body" -w '%{http_code} %{time_total}' "$url" >"$T/$n.w" 2>"$T/$n.err"
  rc=$?
  read -r w <"$T/$n.w"
  HDR=$T/$n.hdr
  raw_section "$T/$n.tmp" head "$max" "$T/$n.body" "$T/$n.err" "rc $rc" "url $url" "w $w"
  HDR=
  mv "$T/$n.tmp" "$T/s.$n"
  return $rc
}
# True when the health check's client certificate is readable (as etcdctl would use it).
hc_tls() { [ -r "$PKI/ca.crt" ] && [ -r "$PKI/healthcheck-client.crt" ] && [ -r "$PKI/healthcheck-client.key" ]; }
# etcd_ask with that certificate.
hc_ask() { etcd_ask "$@" --cacert "$PKI/ca.crt" --cert "$PKI/healthcheck-client.crt" --key "$PKI/healthcheck-client.key"; }
# etcd's /health with the client certificate, else on the metrics listener; returns curl's code.
health_check() {
  have curl || { note health 'skipped curl not found' && return 1; }
  if hc_tls; then hc_ask health "$HEALTH_BODY" "https://$LOCAL:2379/health"
  else etcd_ask health "$HEALTH_BODY" "http://$LOCAL:2381/health"; fi
}
# The member list from this node's peer listener (answered without quorum), with the peer certificate.
members_check() {
  if ! have curl; then note members 'skipped curl not found'
  elif [ -z "$SELF" ]; then note members 'skipped no --self address to ask'
  elif [ -z "$PEER_TLS" ]; then note members 'skipped no readable ca.crt/peer.crt/peer.key'
  else
    host=$SELF
    case $host in *:*) host="[$host]" ;; esac
    etcd_ask members "$MEMBERS_BODY" "https://$host:2380/members" --cacert "$PKI/ca.crt" --cert "$PKI/peer.crt" --key "$PKI/peer.key"
  fi
}
# The alarm list (needs quorum): asked only once /health answered ($1: 0) with a leader, in the time left.
alarms_check() { # health-rc
  if ! have curl; then note alarms 'skipped curl not found' && return; fi
  hc_tls || { note alarms 'skipped no readable ca.crt/healthcheck-client.crt/healthcheck-client.key' && return; }
  [ "$1" = 0 ] || { note alarms 'skipped not asked: /health got no answer' && return; }
  ! grep -q 'RAFT NO LEADER' "$T/health.body" 2>/dev/null ||
    { note alarms 'skipped not asked: /health says RAFT NO LEADER (the list needs quorum)' && return; }
  metrics_wait_before
  ! grep -qx 'etcd_server_has_leader 0' "$T/s.metrics.before" 2>/dev/null ||
    { note alarms 'skipped not asked: etcd_server_has_leader is 0 (the list needs quorum)' && return; }
  now_ms
  left=$(((CT + TT) * 1000 - (NOW - START)))
  [ "$left" -ge 1000 ] || left=1000
  ASK_MAX=$((left / 1000)).$((left % 1000 / 100))
  hc_ask alarms "$ALARMS_BODY" "https://$LOCAL:2379/v3/maintenance/alarm" -H 'Content-Type: application/json' --data '{"action":"GET"}'
}
# One certificate file on its own (the fallback): `file NAME K PATH`, `error NAME WHY` or `failed`.
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
# All certificate files by one openssl pair; 1 on anything unexpected (then each file alone).
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
# The etcd certificates as openssl's text (the plugin reads dates and SANs).
probe_certs() {
  set -- "$PKI/ca.crt" "$PKI/server.crt" "$PKI/peer.crt" "$PKI/healthcheck-client.crt"
  [ -e "$ETC/apiserver-etcd-client.crt" ] && set -- "$@" "$ETC/apiserver-etcd-client.crt"
  if ! certs_at_once "$@"; then
    : >"$T/c.txt" && K=0
    for f in "$@"; do cert_info "$f"; done >"$T/c.head"
  fi
  raw_section "$T/s.certs" head "$CERTS_BYTES" "$T/c.txt" '' "$(cat "$T/c.head")"
}
# The static pod's manifest as the file holds it.
probe_manifest() {
  if [ -r "$MANIFEST" ]; then raw_section "$T/s.manifest" head "$MANIFEST_BYTES" "$MANIFEST" ''
  else err manifest "not readable: $MANIFEST"; fi
}
# The output, once: format 2 (frame.rs), each section NAME:MAX:FILE... copied line by line behind `|`.
emit() {
  [ -s "$T/stderr" ] && err probe "unexpected stderr: $(head -c "$STDERR_NOTE" "$T/stderr")"
  now_ms
  printf 'self %s\nhost %s\nclock %s\nms %s\n' "$SELF" "$HOST" "$CLOCK" "$((NOW - START))" >"$T/s.node"
  [ -e "$T/s.apiserver.readyz" ] || note apiserver.readyz nojob
  echo -- >"$T/sep"
  set -- paths:0:"$T/paths.list" firewall.before:0:"$T/fw.before" firewall.after:0:"$T/fw.after" errors:0:"$T/errors"
  for p in node health members alarms metrics.before metrics.after ips etcd.ps etcd.log etcd.prev kubelet manifest \
    certs apiserver.ps apiserver.log apiserver.readyz apiserver.cert; do set -- "$@" "$p:0:$T/s.$p"; done
  i=1
  while [ "$i" -le "$N" ]; do
    [ -e "$T/p.$i.m" ] && set -- "$@" "check.$i:$CHECK_BYTES:$T/p.$i.m:$T/p.$i.killed:$T/p.$i.w:$T/sep:$T/p.$i.v"
    i=$((i + 1))
  done
  awk 'BEGIN { print "etcdnet-probe 2"; for (i = 1; i < ARGC; i++) { n = split(ARGV[i], a, ":"); print "@" a[1]; used = 0
      for (k = 3; k <= n; k++) { while ((getline l < a[k]) > 0 && (a[2] == 0 || (used += length(l) + 1) <= a[2])) print "|" l
        close(a[k]) } }
    print "@end " (ARGC - 1); exit }' "$@" >"$T/out"
  cat "$T/out"
}
# Removes our temp folders nobody touched for 10 minutes (a probe killed by SIGKILL left them).
sweep_stale() {
  have find && me=$(id -u 2>/dev/null) || return 0
  set -- /dev/shm /tmp /var/tmp /run
  case " $* " in *" ${TMPDIR:-/tmp} "*) ;; *) set -- "$TMPDIR" "$@" ;; esac
  find "$@" -maxdepth 1 -type d -name 'etcdnet-probe.*' -user "$me" -mmin +10 -exec rm -rf {} + 2>/dev/null
}
# T: the probe's temp folder, in memory (/dev/shm) first unless TMPDIR says otherwise.
make_tmp() {
  for d in ${TMPDIR:+"$TMPDIR"} /dev/shm /tmp /var/tmp /run; do
    T=$(mktemp -d "$d/etcdnet-probe.XXXXXX" 2>/dev/null) && [ -d "$T" ] && return 0
    T=$d/etcdnet-probe.$$ && mkdir -m 700 "$T" 2>/dev/null && return 0
  done
  return 1
}
# The order matters: the paths' timers first, then the rest at nice 10, then one output.
main() {
  LC_ALL=C && export LC_ALL
  for d in /opt/bin /usr/local/sbin /usr/local/bin; do case :$PATH: in *:"$d":*) ;; *) PATH=$d${PATH:+:$PATH} ;; esac; done
  export PATH
  PKI=${ETCDNET_PKI_DIR:-/etc/kubernetes/pki/etcd} POD_LOGS=${ETCDNET_POD_LOGS:-/var/log/pods}
  MANIFEST=${ETCDNET_MANIFEST:-/etc/kubernetes/manifests/etcd.yaml} ETC=${PKI%/}
  ETC=${ETC%/*}
  if ! make_tmp && ! { sweep_stale; make_tmp; }; then
    printf 'etcdnet-probe 2\n@errors\n|probe\tno writable temp directory\n@end 1\n'
    return 0
  fi
  trap 'rm -rf "$T" 2>/dev/null || { sleep 1; rm -rf "$T" 2>/dev/null; } || { sleep 2; rm -rf "$T"; }' EXIT
  trap 'exit 1' HUP INT TERM
  exec 2>"$T/stderr"
  now_ms && START=$NOW
  : >"$T/errors"
  parse_args "$@"
  NICE=
  have nice && NICE='nice -n 10'
  metrics_fetch before "$METRICS_BEFORE_S" "$NICE" >/dev/null 2>&1 &
  firewall_read before
  start_paths
  if have renice; then renice -n 10 -p $$ >/dev/null 2>&1; fi
  sweep_stale
  probe_host
  { health_check; alarms_check $?; } >/dev/null 2>&1 &
  members_check >/dev/null 2>&1 &
  probe_apiserver >/dev/null 2>&1 &
  probe_etcd
  probe_kubelet
  probe_certs
  probe_manifest
  wait
  emit
}
# stdin closed: under `sh -s` no tool may read the rest of the script as its input.
main "$@" </dev/null
exit 0
