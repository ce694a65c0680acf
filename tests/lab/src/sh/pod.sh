# etcdnet-lab: give a command the filesystem a jumpbox pod on the Supervisor sees, then exec it.
#
#   pod.sh SCRATCH HOSTNAME N [SRC DST]... CMD [ARG...]
#
# Runs as root in the lab's switch netns, already inside a fresh UTS namespace and a fresh mount
# namespace with private propagation, so nothing here is visible on the host or to any other
# command. SCRATCH is an empty directory the lab owns; the N pairs are volumes: host path SRC
# appears read-only at DST (a secret volume, e.g. the `<cluster>-ssh` secret at /etc/ssh-key).
#
# The root is the host's programs (/usr, /bin, /lib... bound as they are: the "image") with what a
# container has of its own: /tmp, /root, /home and /run start empty, /etc and /var are
# copy-on-write overlays of the host's (ssh needs /etc/passwd; writes vanish with the command).
set -eu
S=$1 H=$2 N=$3
shift 3

printf '%s' "$H" >/proc/sys/kernel/hostname

# Everything new lives on a tmpfs only this mount namespace sees.
mount -t tmpfs -o mode=0755,size=64m etcdnet-pod "$S"
mkdir "$S/root" "$S/up"

# The volumes' targets, and the top-level directories they fall in: those must be writable
# (overlay or empty) so their mount points can be made without touching the host.
VOLS=''
TOPS=' etc var '
i=0
while [ "$i" -lt "$N" ]; do
    src=$1 dst=$2
    shift 2
    VOLS="$VOLS$src
$dst
"
    top=${dst#/}
    top=${top%%/*}
    TOPS="$TOPS$top "
    i=$((i + 1))
done

for e in /*; do
    b=${e#/}
    case $b in
    tmp) mkdir -m 1777 "$S/root/tmp" ;;
    root) mkdir -m 0700 "$S/root/root" ;;
    home | run) mkdir -m 0755 "$S/root/$b" ;;
    *)
        if [ -L "$e" ]; then
            ln -s "$(readlink "$e")" "$S/root/$b"
        elif [ -d "$e" ]; then
            mkdir "$S/root/$b"
            case $TOPS in
            *" $b "*)
                mkdir "$S/up/$b" "$S/up/$b.work"
                mount -t overlay "etcdnet-pod-$b" -o "lowerdir=$e,upperdir=$S/up/$b,workdir=$S/up/$b.work" "$S/root/$b"
                ;;
            *) mount --rbind "$e" "$S/root/$b" ;;
            esac
        fi
        ;;
    esac
done
# A recursive bind of a directory holding SCRATCH would show this tmpfs inside the pod: detach it.
umount -l "$S/root$S" 2>/dev/null || true

# The volumes, read-only as Kubernetes mounts secrets and config maps.
printf '%s' "$VOLS" | while IFS= read -r src && IFS= read -r dst; do
    t=$S/root$dst
    if [ -d "$src" ]; then
        mkdir -p "$t"
    else
        mkdir -p "$(dirname "$t")"
        : >"$t"
    fi
    mount --bind "$src" "$t"
    mount -o remount,bind,ro "$t"
done

# coreutils chroot also changes the working directory to the new /.
exec chroot "$S/root" "$@"
