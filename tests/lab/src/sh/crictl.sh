#!/bin/sh
# crictl stand-in of etcdnet-lab (the lab's only fake of a node tool besides systemctl).
#
# It answers for this node's etcd "container", which is a REAL etcd process the lab started: the
# state comes from that process (alive -> Running, gone -> Exited), the logs from its real log file.
# Output follows cri-tools' crictl 1.26 (table columns, tabwriter padding, -q, -o json, logs on
# the container's own stream: etcd writes to stderr, so `crictl logs` does too, as the real one).
# The lab writes one env file per container attempt under @STATE@/containers; with the lab's
# kube-apiserver stand-in (LabConfig::apiserver), also under @STATE@/apiserver: that container
# is no process of its own (threads of the lab), so its record says RUNNING=1 while it runs, and
# its log is the CRI-format file under /var/log/pods that the kubelet's runtime would write
# (CRI=1: crictl logs prints the text of each "<time> <stream> <P|F> <text>" line).
STATE='@STATE@'
. "$STATE/node.env"

fatal() {
    printf 'FATA[0000] %s\n' "$*" >&2
    exit 1
}

# Sets ID ATTEMPT PID CREATED STARTED FINISHED EXIT_CODE LOG PAST MARKER and STATE_NAME.
load() {
    ID='' ATTEMPT=0 PID=0 CREATED=0 STARTED=0 FINISHED=0 EXIT_CODE=0 LOG='' PAST='' MARKER='' STARTTIME=''
    NAME=etcd CRI='' RUNNING='' LOG_PATH=/var/log/etcd.log
    # The pod's variables (etcd's; an apiserver record sets its own).
    . "$STATE/node.env"
    . "$1"
    STATE_NAME=CONTAINER_EXITED
    if [ -n "$CRI" ]; then
        [ -n "$RUNNING" ] && STATE_NAME=CONTAINER_RUNNING
        return 0
    fi
    # Running only while the recorded pid is still the etcd process the lab started for this
    # attempt: the same start time (a reused pid has another) and not a zombie. From its stat,
    # which anyone may read: a probe pod keeps only the capabilities of its spec, and without
    # CAP_SYS_PTRACE the process's environment is not readable to it.
    if [ "$FINISHED" = 0 ] && [ -n "$STARTTIME" ] && [ -r "/proc/$PID/stat" ] &&
        [ "$(awk '{ sub(/^.*\) /, ""); if ($1 != "Z") print $20 }' "/proc/$PID/stat" 2>/dev/null)" = "$STARTTIME" ]; then
        STATE_NAME=CONTAINER_RUNNING
    elif [ "$FINISHED" = 0 ]; then
        # Died without the lab noticing yet: the log's last write is the best finish time.
        FINISHED=$(stat -c %Y "$LOG" 2>/dev/null || echo 0)000000000
    fi
}

# Container files, newest attempt first. Like the kubelet, keep one dead container besides the
# current one (older attempts are garbage-collected).
containers() {
    for d in containers apiserver; do
        ls "$STATE/$d" 2>/dev/null | sed -n 's/^\([0-9][0-9]*\)\.env$/\1/p' | sort -rn | head -n 2 |
            while read -r a; do echo "$STATE/$d/$a.env"; done
    done
}

# Resolves a full or unique prefix container ID to its env file.
resolve() {
    [ -n "$1" ] || fatal 'ID cannot be empty'
    for f in $(ls "$STATE/containers"/*.env "$STATE/apiserver"/*.env 2>/dev/null); do
        load "$f"
        case $ID in "$1"*)
            echo "$f"
            return 0
            ;;
        esac
    done
    fatal "rpc error: code = NotFound desc = an error occurred when try to find container \"$1\": not found"
}

short_state() {
    case $1 in
    CONTAINER_RUNNING) echo Running ;;
    CONTAINER_EXITED) echo Exited ;;
    *) echo Unknown ;;
    esac
}

# docker/go-units HumanDuration of now - $1 (nanoseconds since the epoch), plus " ago".
ago() {
    awk -v t="$1" -v now="$(date +%s)" 'BEGIN {
        s = int(now - t / 1e9)
        if (s < 1) d = "Less than a second"
        else if (s == 1) d = "1 second"
        else if (s < 60) d = s " seconds"
        else if (int(s / 60) == 1) d = "About a minute"
        else if (s < 3600) d = int(s / 60) " minutes"
        else {
            h = int(s / 3600 + 0.5)
            if (h == 1) d = "About an hour"
            else if (h < 48) d = h " hours"
            else if (h < 24 * 14) d = int(h / 24) " days"
            else if (h < 24 * 60) d = int(h / 24 / 7) " weeks"
            else if (h < 24 * 730) d = int(h / 24 / 30) " months"
            else d = int(s / 3600 / 24 / 365) " years"
        }
        print d " ago"
    }'
}

# RFC 3339 with nanoseconds, as crictl inspect prints times.
rfc3339() {
    if [ "$1" = 0 ]; then
        echo 0001-01-01T00:00:00Z
    else
        s=${1%?????????}
        date -u -d "@$s" +"%Y-%m-%dT%H:%M:%S.${1#"$s"}Z"
    fi
}

# Go text/tabwriter(minwidth 20, tabwidth 1, padding 3, ' '): every cell but the last of a line
# is padded to max(20, widest + 3).
table() {
    awk -F '\t' '{ row[NR] = $0; n = split($0, c, "\t"); for (i = 1; i < n; i++) if (length(c[i]) + 3 > w[i]) w[i] = length(c[i]) + 3 }
        END { for (r = 1; r <= NR; r++) { n = split(row[r], c, "\t"); line = ""
            for (i = 1; i < n; i++) { x = w[i] < 20 ? 20 : w[i]; line = line sprintf("%-" x "s", c[i]) }
            print line c[n] } }'
}

labels_json() {
    cat <<EOF
{
        "io.kubernetes.container.name": "$NAME",
        "io.kubernetes.pod.name": "$POD_NAME",
        "io.kubernetes.pod.namespace": "kube-system",
        "io.kubernetes.pod.uid": "$POD_UID"
      }
EOF
}

annotations_json() {
    cat <<EOF
{
        "io.kubernetes.container.hash": "$CONTAINER_HASH",
        "io.kubernetes.container.restartCount": "$ATTEMPT",
        "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
        "io.kubernetes.container.terminationMessagePolicy": "File",
        "io.kubernetes.pod.terminationGracePeriod": "30"
      }
EOF
}

cmd_ps() {
    all='' name='' quiet='' output=table state='' notrunc='' last=0 pod='' id=''
    while [ $# -gt 0 ]; do
        case $1 in
        -a | --all) all=1 ;;
        -q | --quiet) quiet=1 ;;
        --no-trunc) notrunc=1 ;;
        -l | --latest) last=1 ;;
        --name | -o | --output | -s | --state | -n | --last | -p | --pod | --id | --label | --image)
            [ $# -ge 2 ] || fatal "flag needs an argument: $1"
            case $1 in
            --name) name=$2 ;;
            -o | --output) output=$2 ;;
            -s | --state) state=$2 ;;
            -n | --last) last=$2 ;;
            -p | --pod) pod=$2 ;;
            --id) id=$2 ;;
            esac
            shift
            ;;
        --name=*) name=${1#*=} ;;
        --output=* | -o=*) output=${1#*=} ;;
        --state=*) state=${1#*=} ;;
        --last=*) last=${1#*=} ;;
        --pod=*) pod=${1#*=} ;;
        --id=*) id=${1#*=} ;;
        *) fatal "flag provided but not defined: $1" ;;
        esac
        shift
    done
    case $output in json | yaml | table) ;; *) fatal "unsupported output format \"$output\"" ;; esac
    want=''
    case $(echo "$state" | tr '[:upper:]' '[:lower:]') in
    '') [ -n "$all" ] || [ "$last" != 0 ] || want=CONTAINER_RUNNING ;;
    running) want=CONTAINER_RUNNING ;;
    exited) want=CONTAINER_EXITED ;;
    created) want=CONTAINER_CREATED ;;
    unknown) want=CONTAINER_UNKNOWN ;;
    *) fatal '--state should be one of created, running, exited or unknown' ;;
    esac
    # --latest / --last list regardless of state, as crictl does.
    [ "$last" != 0 ] && want=''

    matched=''
    count=0
    for f in $(containers); do
        load "$f"
        [ -z "$want" ] || [ "$STATE_NAME" = "$want" ] || continue
        [ -z "$name" ] || printf '%s' "$NAME" | grep -Eq -- "$name" || continue
        case $ID in "$id"*) ;; *) continue ;; esac
        case $POD_ID in "$pod"*) ;; *) continue ;; esac
        count=$((count + 1))
        [ "$last" = 0 ] || [ "$count" -le "$last" ] || continue
        matched="$matched $f"
    done

    if [ -n "$quiet" ]; then
        for f in $matched; do
            load "$f"
            echo "$ID"
        done
        return 0
    fi
    case $output in
    json) ps_json $matched ;;
    yaml) ps_yaml $matched ;;
    table) ps_table "$notrunc" $matched | table ;;
    esac
}

ps_table() {
    notrunc=$1
    shift
    printf 'CONTAINER\tIMAGE\tCREATED\tSTATE\tNAME\tATTEMPT\tPOD ID\tPOD\n'
    for f in "$@"; do
        load "$f"
        cid=$ID pid=$POD_ID img=$IMAGE_ID
        if [ -z "$notrunc" ]; then
            # crictl truncates IDs to 13 characters, and a digest to 13 after "sha256:".
            img=${IMAGE_ID#sha256:}
            cid=$(printf '%.13s' "$ID") pid=$(printf '%.13s' "$POD_ID") img=$(printf '%.13s' "$img")
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cid" "$img" "$(ago "$CREATED")" \
            "$(short_state "$STATE_NAME")" "$NAME" "$ATTEMPT" "$pid" "$POD_NAME"
    done
}

# protojson with EmitDefaults and a two-space indent, as `crictl ps -o json` prints it.
ps_json() {
    printf '{\n  "containers": ['
    sep=''
    for f in "$@"; do
        load "$f"
        printf '%s\n    {\n      "id": "%s",\n      "podSandboxId": "%s",\n      "metadata": {\n        "name": "%s",\n        "attempt": %s\n      },\n      "image": {\n        "image": "%s",\n        "annotations": {}\n      },\n      "imageRef": "%s",\n      "state": "%s",\n      "createdAt": "%s",\n      "labels": %s,\n      "annotations": %s\n    }' \
            "$sep" "$ID" "$POD_ID" "$NAME" "$ATTEMPT" "$IMAGE_ID" "$IMAGE_ID" "$STATE_NAME" "$CREATED" "$(labels_json)" "$(annotations_json)"
        sep=','
    done
    if [ -n "$sep" ]; then printf '\n  ]\n}\n'; else printf ']\n}\n'; fi
}

ps_yaml() {
    [ $# -gt 0 ] || {
        printf 'containers: []\n'
        return 0
    }
    printf 'containers:\n'
    for f in "$@"; do
        load "$f"
        printf -- '- annotations:\n    io.kubernetes.container.restartCount: "%s"\n  createdAt: "%s"\n  id: %s\n  image:\n    image: %s\n  imageRef: %s\n  labels:\n    io.kubernetes.container.name: %s\n    io.kubernetes.pod.name: %s\n    io.kubernetes.pod.namespace: kube-system\n    io.kubernetes.pod.uid: %s\n  metadata:\n    attempt: %s\n    name: %s\n  podSandboxId: %s\n  state: %s\n' \
            "$ATTEMPT" "$CREATED" "$ID" "$IMAGE_ID" "$IMAGE_ID" "$NAME" "$POD_NAME" "$POD_UID" "$ATTEMPT" "$NAME" "$POD_ID" "$STATE_NAME"
    done
}

cmd_logs() {
    tail=-1 follow='' previous='' limit='' id=''
    while [ $# -gt 0 ]; do
        case $1 in
        --tail) [ $# -ge 2 ] || fatal 'flag needs an argument: --tail'
            tail=$2
            shift ;;
        --tail=*) tail=${1#*=} ;;
        --limit-bytes) [ $# -ge 2 ] || fatal 'flag needs an argument: --limit-bytes'
            limit=$2
            shift ;;
        --limit-bytes=*) limit=${1#*=} ;;
        -f | --follow) follow=1 ;;
        -p | --previous) previous=1 ;;
        -t | --timestamps | --since | --since=*)
            fatal "etcdnet-lab crictl stand-in: $1 is not supported (the log file holds the raw stream)" ;;
        -*) fatal "flag provided but not defined: $1" ;;
        *) id=$1 ;;
        esac
        shift
    done
    [ -n "$id" ] || fatal 'ID cannot be empty'
    f=$(resolve "$id") || exit 1
    load "$f"
    if [ -n "$previous" ]; then
        p="${f%/*}/$((ATTEMPT - 1)).env"
        [ "$ATTEMPT" -gt 0 ] && [ -r "$p" ] || fatal "previous terminated container \"$NAME\" in pod \"$POD_NAME\" not found"
        load "$p"
    fi
    [ -r "$LOG" ] || fatal "failed to open log file \"$LOG\": no such file or directory"
    case $tail in -1) n=+1 ;; *[!0-9]*) fatal "invalid value \"$tail\" for flag -tail" ;; *) n=$tail ;; esac
    # etcd logs on stderr, and crictl replays each line on the stream it came from. A container
    # the lab aged (Lab::age) has lines from before its process started in $PAST: they come
    # first, as they would in a log that began hours ago.
    size=$(stat -c %s "$LOG")
    if [ -n "$CRI" ]; then
        # The runtime's file: "<RFC3339Nano> <stream> <P|F> <text>" per line (kubelet
        # pkg/kubelet/kuberuntime/logs/logs.go parseCRILog); crictl prints the text (every line
        # of this container is stderr, klog's stream).
        if [ -n "$follow" ]; then
            tail -n "$n" -f "$LOG" | sed -u 's/^[^ ]* [^ ]* [^ ]* //' >&2
        elif [ -n "$limit" ]; then
            tail -n "$n" "$LOG" | sed 's/^[^ ]* [^ ]* [^ ]* //' | head -c "$limit" >&2
        else
            tail -n "$n" "$LOG" | sed 's/^[^ ]* [^ ]* [^ ]* //' >&2
        fi
        return 0
    fi
    if [ -n "$follow" ]; then
        { [ -z "$PAST" ] || [ ! -r "$PAST" ] || cat "$PAST"; head -c "$size" "$LOG"; } | tail -n "$n" >&2
        tail -c +"$((size + 1))" -f "$LOG" >&2
    elif [ -n "$limit" ]; then
        { [ -z "$PAST" ] || [ ! -r "$PAST" ] || cat "$PAST"; cat "$LOG"; } | tail -n "$n" | head -c "$limit" >&2
    else
        { [ -z "$PAST" ] || [ ! -r "$PAST" ] || cat "$PAST"; cat "$LOG"; } | tail -n "$n" >&2
    fi
}

cmd_inspect() {
    ids=''
    while [ $# -gt 0 ]; do
        case $1 in
        -o | --output) shift ;;
        -o=* | --output=*) ;;
        -*) fatal "flag provided but not defined: $1" ;;
        *) ids="$ids $1" ;;
        esac
        shift
    done
    [ -n "$ids" ] || fatal 'ID cannot be empty'
    for i in $ids; do
        f=$(resolve "$i") || exit 1
        load "$f"
        reason='' pid=$PID
        [ "$STATE_NAME" = CONTAINER_EXITED ] && pid=0 && reason=Error
        [ "$STATE_NAME" = CONTAINER_EXITED ] && [ "$EXIT_CODE" = 0 ] && reason=Completed
        cat <<EOF
{
  "status": {
    "id": "$ID",
    "metadata": {
      "attempt": $ATTEMPT,
      "name": "$NAME"
    },
    "state": "$STATE_NAME",
    "createdAt": "$(rfc3339 "$CREATED")",
    "startedAt": "$(rfc3339 "$STARTED")",
    "finishedAt": "$(rfc3339 "$FINISHED")",
    "exitCode": $EXIT_CODE,
    "image": {
      "annotations": {},
      "image": "$IMAGE"
    },
    "imageRef": "$IMAGE_ID",
    "reason": "$reason",
    "message": "",
    "labels": $(labels_json),
    "annotations": $(annotations_json),
    "mounts": [],
    "logPath": "$LOG_PATH"
  },
  "info": {
    "sandboxID": "$POD_ID",
    "pid": $pid
  }
}
EOF
    done
}

cmd_pods() {
    quiet=''
    while [ $# -gt 0 ]; do
        case $1 in
        -q | --quiet) quiet=1 ;;
        --name | --namespace | -s | --state | --label | -o | --output) shift ;;
        *=*) ;;
        *) fatal "flag provided but not defined: $1" ;;
        esac
        shift
    done
    if [ -n "$quiet" ]; then
        echo "$POD_ID"
    else
        printf 'POD ID\tCREATED\tSTATE\tNAME\tNAMESPACE\tATTEMPT\tRUNTIME\n%.13s\t%s\tReady\t%s\tkube-system\t0\t(default)\n' \
            "$POD_ID" "$(ago "$POD_CREATED")" "$POD_NAME" | table
    fi
}

while [ $# -gt 0 ]; do
    case $1 in
    -r | --runtime-endpoint | -i | --image-endpoint | -t | --timeout | -c | --config) shift 2 || fatal "flag needs an argument: $1" ;;
    --*=*) shift ;;
    -D | --debug) shift ;;
    -v | --version)
        echo 'crictl version v1.26.0'
        exit 0
        ;;
    -*) fatal "flag provided but not defined: $1" ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || {
    echo 'usage: crictl [global options] command [command options] [arguments...] (etcdnet-lab stand-in: ps, logs, inspect, pods, version)'
    exit 0
}
cmd=$1
shift
case $cmd in
ps) cmd_ps "$@" ;;
logs) cmd_logs "$@" ;;
inspect) cmd_inspect "$@" ;;
pods) cmd_pods "$@" ;;
version) printf 'Version:  0.1.0\nRuntimeName:  containerd\nRuntimeVersion:  v1.6.18\nRuntimeApiVersion:  v1\n' ;;
*)
    echo "No help topic for '$cmd'" >&2
    exit 3
    ;;
esac
