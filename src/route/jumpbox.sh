#!/bin/sh
# etcdnet-jumpbox: runs in a short-lived pod in the vSphere Namespace (the Supervisor), the
# documented VMware way into a workload cluster's VMs when its API is down. It
#  1. says whether the Supervisor side reaches the VM's 22, 2379, 2380 and 6443 (so "the VMs
#     cannot reach each other" can be told from "nothing reaches the VMs"), using ssh itself as
#     the TCP client: an image with an ssh client is all this needs;
#  2. runs the node probe over ssh as the node user, with sudo, the script on stdin.
# Output (the pod's log): `ETCDNET-REACH <port> <state>` lines, the probe's JSON document, and
# `ETCDNET-SSH-EXIT <code>`; ssh's own errors (stderr) are interleaved and read by the plugin.
# Arguments: IP USER CONNECT_TIMEOUT KEY_FILE REMOTE_COMMAND PROBE_SCRIPT
ip=$1 user=$2 ct=$3 key=$4 remote=$5 script=$6

if ! command -v ssh >/dev/null 2>&1; then
    echo "ETCDNET-JUMPBOX no-ssh-client"
    exit 127
fi

opts="-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=$ct"

# One port: ssh's connect tells timeout/refused/no-route; anything after the connect (a banner
# error, a stalled TLS port, an auth failure) means the TCP connection was made.
reach() {
    out=$(ssh $opts -o PasswordAuthentication=no -o PubkeyAuthentication=no -p "$1" "etcdnet@$ip" true 2>&1 </dev/null)
    case $out in
        *"port $1: Connection timed out"*|*"port $1: Operation timed out"*) state=Timeout ;;
        *"Connection refused"*) state=Refused ;;
        *"No route to host"*|*"Network is unreachable"*) state=NoRoute ;;
        *) state=Open ;;
    esac
    echo "ETCDNET-REACH $1 $state"
}
for port in 22 2379 2380 6443; do
    reach "$port" &
done
wait

printf '%s' "$script" | ssh $opts -i "$key" -o IdentitiesOnly=yes -l "$user" "$ip" "$remote"
rc=$?
echo
echo "ETCDNET-SSH-EXIT $rc"
exit 0
