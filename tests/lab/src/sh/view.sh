# etcdnet-lab: give a command the filesystem view of a control-plane node, then exec it.
#
# Runs as root inside the node's network namespace, already inside a fresh UTS namespace and a
# fresh mount namespace whose propagation is private (`unshare --mount --uts --propagation
# private`), so nothing mounted here is visible on the host or to any other command.
#
#   view.sh ROOT NAME IP MODE CMD [ARG...]
#
# ROOT is the node's root directory on the host (ROOT/etc/kubernetes, ROOT/var/lib/etcd, ...).
# MODE "node": / is the host's / with the node's files where a kubeadm node has them.
# MODE "pod":  / is the host's / untouched, and /host is the node view (what a privileged pod
#              with a hostPath volume of / sees), so `chroot /host crictl ps` works.
set -eu
R=$1 N=$2 IP=$3 MODE=$4
shift 4

# The node's hostname, in this UTS namespace only.
printf '%s' "$N" >/proc/sys/kernel/hostname

# Scratch space lives on a tmpfs that only this mount namespace sees; it disappears with it.
S=$R/.view
mount -t tmpfs -o mode=0755,size=16m etcdnet-view "$S"
mkdir "$S/root" "$S/pod" "$S/up"

# The node view starts as a recursive copy of the host's mount tree. That copy contains this very
# tmpfs again (it sits under /), which would show the scratch space inside the view: detach it.
mount --rbind / "$S/root"
umount -l "$S/root$S" 2>/dev/null || true

# /etc and /var become copy-on-write (writes land on the tmpfs and vanish with the namespace), so
# /etc/kubernetes and /var/lib/etcd can appear without touching the host's real /etc or /var.
for d in etc var; do
    mkdir "$S/up/$d" "$S/up/$d.work"
    mount -t overlay "etcdnet-$d" -o "lowerdir=/$d,upperdir=$S/up/$d,workdir=$S/up/$d.work" "$S/root/$d"
done
mkdir -p "$S/root/etc/kubernetes" "$S/root/var/lib/etcd"
mount --bind "$R/etc/kubernetes" "$S/root/etc/kubernetes"
mount --bind "$R/var/lib/etcd" "$S/root/var/lib/etcd"
# The node's own logs replace the host's.
mount --bind "$R/var/log" "$S/root/var/log"
# The crictl/systemctl stand-ins shadow anything of the same name in /usr/local/bin (read-only union).
mount -t overlay etcdnet-bin -o "lowerdir=$R/usr/local/bin:/usr/local/bin" "$S/root/usr/local/bin"
printf '%s\n' "$N" >"$S/root/etc/hostname"
printf '%s %s\n' "$IP" "$N" >>"$S/root/etc/hosts"

NEWROOT=$S/root
if [ "$MODE" = pod ]; then
    # A new root needs a /host directory, which the host's / does not have: build the root from
    # bind mounts of every top-level entry of / (symlinks such as /bin -> usr/bin copied as such).
    for e in /*; do
        b=${e#/}
        if [ -L "$e" ]; then
            ln -s "$(readlink "$e")" "$S/pod/$b"
        elif [ -d "$e" ]; then
            mkdir "$S/pod/$b"
            mount --rbind "$e" "$S/pod/$b"
        fi
    done
    umount -l "$S/pod$S" 2>/dev/null || true
    mkdir "$S/pod/host"
    mount --rbind "$S/root" "$S/pod/host"
    NEWROOT=$S/pod
fi

# A node's PATH, not the caller's (cargo's PATH has toolchains a node would not have).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root
export PATH HOME
# coreutils chroot also changes the working directory to the new /.
exec chroot "$NEWROOT" "$@"
