#!/bin/sh
# etcdnet-jumpbox: runs in a short-lived pod in the vSphere Namespace (the Supervisor), the
# documented VMware way into a workload cluster's VMs when its API is down. It
#  1. says whether the Supervisor side reaches the VM's 22, 2379, 2380 and 6443 (so "the VMs
#     cannot reach each other" can be told from "nothing reaches the VMs"), using ssh itself as
#     the TCP client: an image with an ssh client is all this needs;
#  2. runs the node probe over ssh as the node user, with sudo, the script on stdin.
# Output (the pod's log): `ETCDNET-REACH <port> <state>` lines and `ETCDNET-REACH-END`, then what
# ssh to the node prints
# (the probe's JSON document; ssh's and the node's errors, merged into the same ordered stream),
# then `ETCDNET-HOSTKEY <type> <base64>` (or `none`) and `ETCDNET-SSH-EXIT <code>`. The plugin
# takes the ETCDNET lines only from where the node cannot write: the block before ssh to the node
# starts, and the last two lines.
# Arguments: IP USER CONNECT_TIMEOUT KEY_FILE REMOTE_COMMAND SSH_OPTIONS PROBE_SCRIPT
# SSH_OPTIONS: the `-o KEY=VALUE` words every ssh here starts with (what ssh may do; see ssh.rs).
ip=$1 user=$2 ct=$3 key=$4 remote=$5 locked=$6 script=$7
# $locked is split into words on purpose; no word is a glob, and none is ever expanded as one.
set -f

if ! command -v ssh >/dev/null 2>&1; then
    echo "ETCDNET-JUMPBOX no-ssh-client"
    exit 127
fi

# The VM's host key is learnt on first contact into this pod's own file (accept-new), held to
# for the rest of the pod's life, and reported (no writable /tmp: nothing is recorded).
kh=$(mktemp 2>/dev/null) || kh=/dev/null
opts="$locked -o UserKnownHostsFile=$kh -o LogLevel=ERROR -o ConnectTimeout=$ct"

# One port: ssh's connect tells timeout/refused/no-route; what ssh says only after the TCP
# connection was made (a banner error from a TLS port, an auth failure) means open. Anything
# else is not understood: Unknown, never open.
reach() {
    out=$(ssh $opts -o PasswordAuthentication=no -o PubkeyAuthentication=no -p "$1" "etcdnet@$ip" true 2>&1 </dev/null)
    case $out in
        *"port $1: Connection timed out"*|*"port $1: Operation timed out"*) state=Timeout ;;
        *"port $1: Connection refused"*) state=Refused ;;
        *"port $1: No route to host"*|*"port $1: Network is unreachable"*|*"port $1: Host is unreachable"*) state=NoRoute ;;
        *kex_exchange_identification*|*ssh_exchange_identification*|*"banner exchange"*|\
        *"Connection closed by"*|*"Permission denied"*|*"Host key verification failed"*|\
        *"Unable to negotiate"*|*"Received disconnect"*|*"Disconnected from"*|\
        *"No supported authentication methods"*|*"Too many authentication failures"*|\
        *"Bad packet length"*|*"Protocol major versions differ"*|*ssh_dispatch_run_fatal*) state=Open ;;
        *) state=Unknown ;;
    esac
    echo "ETCDNET-REACH $1 $state"
}
for port in 22 2379 2380 6443; do
    reach "$port" &
done
wait
# Ends the block: whatever the node prints comes after this line, so it cannot extend the block.
echo "ETCDNET-REACH-END"

# 2>&1: one ordered stream, so nothing the node prints can come after the trailer below (the
# probe sends its own stderr to a file: nothing of it lands inside the document).
printf '%s' "$script" | ssh $opts -i "$key" -o IdentitiesOnly=yes -l "$user" "$ip" "$remote" 2>&1
rc=$?
echo
# The first key recorded is the one the VM presented on first contact.
hostkey=none
if read -r _ ktype kblob _ <"$kh" 2>/dev/null && [ -n "$kblob" ]; then
    hostkey="$ktype $kblob"
fi
[ "$kh" = /dev/null ] || rm -f "$kh"
echo "ETCDNET-HOSTKEY $hostkey"
echo "ETCDNET-SSH-EXIT $rc"
exit 0
