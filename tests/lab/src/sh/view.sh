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
# MODE "pod-ro": "pod" with /host read-only as runc mounts a readOnly volume: a read-only remount
#              of that one mount, not of those under it (Kubernetes' readOnly is not recursive).
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

# The rest of the view is mounted by one `mount -a` over a table of its own (util-linux reads
# fstab lines in order, X-mount.mkdir makes each mount point): one process instead of one per
# mount, which is most of a pod's start when several nodes start theirs at once. Fields are
# blank-separated, so a path with a blank or a backslash is mounted on its own instead.
TAB=$S/fstab
: >"$TAB"
# add SOURCE TARGET TYPE OPTIONS: one line of the table (or, for an odd path, mounted now).
add() {
    case "$1$2" in
    *[[:space:]\\]*) mkdir -p "$2" && mount -t "$3" -o "$4" "$1" "$2" ;;
    *) printf '%s %s %s %s,X-mount.mkdir 0 0\n' "$1" "$2" "$3" "$4" >>"$TAB" ;;
    esac
}

# /etc and /var become copy-on-write (writes land on the tmpfs and vanish with the namespace), so
# /etc/kubernetes and /var/lib/etcd can appear without touching the host's real /etc or /var.
mkdir "$S/up/etc" "$S/up/etc.work" "$S/up/var" "$S/up/var.work"
for d in etc var; do
    add "etcdnet-$d" "$S/root/$d" overlay "lowerdir=/$d,upperdir=$S/up/$d,workdir=$S/up/$d.work"
done
add "$R/etc/kubernetes" "$S/root/etc/kubernetes" none bind
add "$R/var/lib/etcd" "$S/root/var/lib/etcd" none bind
# The node's own logs replace the host's.
add "$R/var/log" "$S/root/var/log" none bind
# The crictl/systemctl stand-ins shadow anything of the same name in /usr/local/bin (read-only union).
add etcdnet-bin "$S/root/usr/local/bin" overlay "lowerdir=$R/usr/local/bin:/usr/local/bin"
mount -a -T "$TAB"
printf '%s\n' "$N" >"$S/root/etc/hostname"
printf '%s %s\n' "$IP" "$N" >>"$S/root/etc/hosts"

NEWROOT=$S/root
if [ "$MODE" = pod ] || [ "$MODE" = pod-ro ]; then
    # A new root needs a /host directory, which the host's / does not have: build the root from
    # bind mounts of every top-level entry of / (symlinks such as /bin -> usr/bin copied as such).
    # A /host the host has of its own is not one of them: the node view takes its place.
    : >"$TAB"
    for e in /*; do
        b=${e#/}
        if [ "$b" = host ]; then
            continue
        elif [ -L "$e" ]; then
            cp -P "$e" "$S/pod/$b"
        elif [ -d "$e" ]; then
            add "$e" "$S/pod/$b" none rbind
        fi
    done
    mount -a -T "$TAB"
    umount -l "$S/pod$S" 2>/dev/null || true
    mkdir "$S/pod/host"
    mount --rbind "$S/root" "$S/pod/host"
    [ "$MODE" = pod ] || mount -o remount,bind,ro "$S/pod/host"
    NEWROOT=$S/pod
fi

# A node's PATH, not the caller's (cargo's PATH has toolchains a node would not have).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root
export PATH HOME
# coreutils chroot also changes the working directory to the new /.
exec chroot "$NEWROOT" "$@"
