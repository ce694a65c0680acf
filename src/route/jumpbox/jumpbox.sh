#!/bin/sh
# etcdnet-jumpbox: runs in one short-lived pod in the vSphere Namespace (the Supervisor), the
# documented VMware way into a workload cluster's VMs when its API is down. For every VM it is
# given, at most PARALLEL at once, it
#  1. says whether the Supervisor side reaches the VM's 22, 2379, 2380 and 6443 (so "the VMs
#     cannot reach each other" can be told from "nothing reaches the VMs"), using ssh itself as
#     the TCP client: an image with an ssh client is all this needs (22: see state_of_22);
#  2. runs the node probe over ssh as the node user, with sudo, the script on stdin.
# Each VM's work goes into its own file (its section), and once every VM is done the sections are
# printed one after another, each framed as
#     ETCDNET-NODE <nonce> <index> <bytes>
#     <exactly <bytes> bytes: the section>ETCDNET-NODE-END <nonce> <index>
# The nonce is the plugin's, new for every run, and never sent to a node (it is in no remote
# command): a node cannot print a frame, so what it prints stays inside its own section, which
# the plugin reads by its length. A section is: `ETCDNET-REACH <port> <state>` lines and
# `ETCDNET-REACH-END`, then what ssh to the node printed (the probe's framed output; ssh's and
# the node's errors, merged into the same ordered stream; at most OUTPUT_CAP bytes), then
# `ETCDNET-HOSTKEY <type> <base64>` (or `none`) and `ETCDNET-SSH-EXIT <code>`. Within a section
# the plugin takes the ETCDNET lines only from where the node cannot write: the block before ssh
# to the node starts, and the last two lines.
# Arguments: NONCE USER CONNECT_TIMEOUT KEY_FILES SSH_OPTIONS PARALLEL OUTPUT_CAP PROBE_SCRIPT
# KEY_OF_VMS, then one IP REMOTE_COMMAND pair per VM (the VM's index is its pair's position,
# from 0). SSH_OPTIONS: the `-o KEY=VALUE` words every ssh here starts with (what ssh may do; see
# ssh/options.rs). KEY_FILES: the mounted key of each cluster the pod is for, their paths
# (the plugin's own, no blanks) separated by blanks: one for a cluster's jumpbox, one per
# cluster for `-A`'s jumpbox of a vSphere Namespace. KEY_OF_VMS: for each VM, in order, the
# number (from 0) of its cluster's key in KEY_FILES: a VM is only ever offered its own
# cluster's key, never another's (a cluster's key opens its own VMs, and a VM that is not
# what it claims would otherwise be handed a way into another cluster's).
nonce=$1 user=$2 ct=$3 keys=$4 locked=$5 par=$6 cap=$7 script=$8 keyof=$9
shift 9
vms=$(($# / 2))
# $locked is split into words on purpose; no word is a glob, and none is ever expanded as one.
set -f

if ! command -v ssh >/dev/null 2>&1; then
    echo "ETCDNET-JUMPBOX $nonce no-ssh-client"
    exit 127
fi
# Every VM's section and known_hosts file: the pod's own /tmp (an emptyDir in memory; the
# image is read-only, so nothing can be written anywhere else). mktemp -d makes it 0700.
if ! dir=$(mktemp -d 2>/dev/null); then
    echo "ETCDNET-JUMPBOX $nonce no-tmp"
    exit 1
fi
# The key, copied into that directory as a file of our own at 0600 (umask 077), as VMware's
# jumpbox recipe copies it: the secret volume's file is readable by the pod (no runtime is
# relied on to give it to our user), and ssh refuses a key of its own user that others may read
# (OpenSSH authfile.c, sshkey_perm_ok). In the pod's memory only, never printed; removed with
# the directory at the end, and with the pod's memory if the pod is killed first.
# One copy per cluster: $dir/key.<n>, n its number in KEY_FILES.
nkeys=0
for k in $keys; do
    if ! (umask 077 && cat "$k" >"$dir/key.$nkeys") 2>/dev/null || [ ! -s "$dir/key.$nkeys" ]; then
        rm -rf "$dir"
        echo "ETCDNET-JUMPBOX $nonce no-key"
        exit 1
    fi
    nkeys=$((nkeys + 1))
done

# KEY_OF_VMS has one number per VM, each one of a key copied above; anything else (the plugin
# never sends it) stops the script before any VM is contacted.
keys_fit() {
    [ "$#" -eq "$vms" ] || return 1
    for k in "$@"; do
        case $k in '' | *[!0-9]*) return 1 ;; esac
        [ "$k" -lt "$nkeys" ] || return 1
    done
}
# The key number of VM $1 (from 0): the $1-th word of the rest (checked by keys_fit first).
key_of() {
    n=$1
    shift
    shift "$n"
    echo "$1"
}
if [ "$nkeys" -lt 1 ] || ! keys_fit $keyof; then
    rm -rf "$dir"
    echo "ETCDNET-JUMPBOX $nonce bad-keys"
    exit 1
fi

# The port checks yield the CPU (nice 10) to the probes' connections: the pod has half a CPU
# for every VM's key exchange, and a connect's outcome does not depend on when it is read.
yield=
if command -v nice >/dev/null 2>&1; then yield="nice -n 10"; fi

# How ssh's output $2 (a connection to port $1) says the port is: ssh's connect tells
# timeout/refused/no-route; what ssh says only after the TCP connection was made (a banner error
# from a TLS port, an auth failure) means open. Anything else is not understood: Unknown, never
# open.
port_state() {
    case $2 in
        *"port $1: Connection timed out"*|*"port $1: Operation timed out"*) echo Timeout ;;
        *"port $1: Connection refused"*) echo Refused ;;
        *"port $1: No route to host"*|*"port $1: Network is unreachable"*|*"port $1: Host is unreachable"*) echo NoRoute ;;
        *kex_exchange_identification*|*ssh_exchange_identification*|*"banner exchange"*|\
        *"Connection closed by"*|*"Permission denied"*|*"Host key verification failed"*|\
        *"Unable to negotiate"*|*"Received disconnect"*|*"Disconnected from"*|\
        *"No supported authentication methods"*|*"Too many authentication failures"*|\
        *"Bad packet length"*|*"Protocol major versions differ"*|*ssh_dispatch_run_fatal*) echo Open ;;
        *) echo Unknown ;;
    esac
}

# One port of VM $ip, by a connection of its own (on 22 it never authenticates: it carries
# nothing).
reach() {
    out=$($yield ssh $reach_opts -o PasswordAuthentication=no -o PubkeyAuthentication=no \
        -p "$1" "etcdnet@$ip" true 2>&1 </dev/null)
    echo "ETCDNET-REACH $1 $(port_state "$1" "$out")"
}

# Port 22, from the probe's own connection where that tells (a connection of its own only where
# it does not): a separate one would cost the VM an sshd session per diagnosis and leave an
# "Invalid user etcdnet" line in its auth log each time, which a fail2ban or SIEM watching the VM
# counts against the Supervisor (every 30 s under --watch). ssh's exit code is the remote
# command's unless ssh itself failed (255): anything else means the node ran our command, so 22
# is open. On 255, ssh's own first line names a failed TCP connect (it prints nothing before
# it); anything else is asked on a connection of its own. A node that ran our command could
# print such a line and exit 255: it would only misreport its own 22, which it can do anyway by
# answering that port as it likes.
state_of_22() { # rc output-file
    if [ -n "$1" ] && [ "$1" != 255 ]; then
        echo "ETCDNET-REACH 22 Open"
        return
    fi
    first=$(head -n 1 "$2" 2>/dev/null)
    case $first in
        "ssh: connect to host "*" port 22: "*)
            state=$(port_state 22 "$first")
            if [ "$state" != Unknown ]; then
                echo "ETCDNET-REACH 22 $state"
                return
            fi ;;
    esac
    reach 22
}

# VM number $1 (from 0) at IP $2, probed with remote command $3 and key number $4 (its own
# cluster's): its section into $dir/s.$1.
vm() {
    i=$1 ip=$2 remote=$3 key=$dir/key.$4
    # The VM's host key is learnt on first contact into its own file (accept-new) by the probe's
    # ssh, and reported. The port checks learn theirs into another file: they run beside the
    # probe, and only the probe's connection is trusted with anything.
    kh=$dir/kh.$i
    : >"$kh"
    : >"$dir/khr.$i"
    # LogLevel=ERROR also keeps OpenSSH 10.1's warning about a VM's sshd without a post-quantum
    # key exchange out of the section.
    base="$locked -o LogLevel=ERROR -o ConnectTimeout=$ct"
    opts="$base -o UserKnownHostsFile=$kh"
    reach_opts="$base -o UserKnownHostsFile=$dir/khr.$i"
    f=$dir/s.$i
    r=$dir/r.$i
    : >"$r"
    # The port checks of 2379, 2380 and 6443 run while the probe does (they are TCP connects,
    # and waiting for them first put a round of ssh handshakes before every probe); 22's comes
    # from the probe's own connection. Their lines head the section once all are done.
    # Appended (O_APPEND): the three write their lines at once.
    for port in 2379 2380 6443; do
        reach "$port" >>"$r" 2>&1 &
    done
    # 2>&1: one ordered stream, so nothing the node prints can come after the trailer below
    # (the probe sends its own stderr to a file: nothing of it lands inside the document).
    # head: a node that prints without end fills neither the pod's memory nor its log; one
    # byte over the cap tells the plugin it was cut.
    {
        printf '%s' "$script" | ssh $opts -i "$key" -o IdentitiesOnly=yes -l "$user" "$ip" "$remote" 2>&1
        echo "$?" >"$dir/rc.$i"
    } | head -c "$cap" >"$dir/o.$i"
    rc=$(cat "$dir/rc.$i" 2>/dev/null)
    state_of_22 "$rc" "$dir/o.$i" >>"$r" 2>&1
    wait
    # The first key recorded is the one the VM presented on first contact.
    hostkey=none
    if read -r _ ktype kblob _ <"$kh" 2>/dev/null && [ -n "$kblob" ]; then
        hostkey="$ktype $kblob"
    fi
    # ETCDNET-REACH-END ends the block: whatever the node printed comes after it, so it cannot
    # extend the block, and the trailer comes after the node's output.
    {
        cat "$r"
        echo "ETCDNET-REACH-END"
        cat "$dir/o.$i"
        printf '\nETCDNET-HOSTKEY %s\nETCDNET-SSH-EXIT %s\n' "$hostkey" "${rc:-255}"
    } >"$f"
}

# --watch keeps one jumpbox across its rounds (ETCDNET_ROUNDS_EVERY, whole seconds): it then
# probes every VM again EVERY seconds after each round ends, each round's sections framed with
# the nonce and the round's number ("<nonce>r<round>", still never sent to a node) and followed
# by `ETCDNET-ROUND-END <nonce> <round>`, until the pod is deleted or its deadline passes.
# Without it, one round framed with the nonce alone, and the script ends.
every=${ETCDNET_ROUNDS_EVERY:-}
case $every in *[!0-9]*) every= ;; esac
case $par in '' | *[!0-9]*) par=1 ;; esac
[ "$par" -ge 1 ] || par=1
round=0
while :; do
    fn=$nonce
    if [ -n "$every" ]; then fn="${nonce}r$round"; fi
    # No section of an earlier round is printed again (a lane that died leaves none).
    i=0
    while [ "$i" -lt "$vms" ]; do
        rm -f "$dir/s.$i"
        i=$((i + 1))
    done
    # PARALLEL lanes, lane l working on VMs l, l+PARALLEL, l+2*PARALLEL, ... one after another:
    # never more than PARALLEL VMs at once, without anything POSIX sh lacks.
    lane=0
    while [ "$lane" -lt "$par" ] && [ "$lane" -lt "$vms" ]; do
        (
            i=$lane
            while [ "$i" -lt "$vms" ]; do
                # The pair's position is a number computed here: eval sees no text from outside.
                eval "ip=\${$((2 * i + 1))} remote=\${$((2 * i + 2))}"
                vm "$i" "$ip" "$remote" "$(key_of "$i" $keyof)" </dev/null >/dev/null 2>&1
                i=$((i + par))
            done
        ) &
        lane=$((lane + 1))
    done
    wait

    i=0
    while [ "$i" -lt "$vms" ]; do
        f=$dir/s.$i
        # The length is what is in the file now: every lane has ended, nothing writes to it. A
        # VM without a file (its lane died) has no section: the plugin says so in its row.
        if [ -f "$f" ] && bytes=$(wc -c <"$f"); then
            # $((...)): some wc pad the count with blanks.
            printf 'ETCDNET-NODE %s %s %s\n' "$fn" "$i" "$((bytes))"
            cat "$f"
            printf 'ETCDNET-NODE-END %s %s\n' "$fn" "$i"
        fi
        i=$((i + 1))
    done
    [ -n "$every" ] || break
    echo "ETCDNET-ROUND-END $nonce $round"
    round=$((round + 1))
    sleep "$every"
done
rm -rf "$dir"
exit 0
