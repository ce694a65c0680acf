# etcdnet-lab: give a command the filesystem a jumpbox pod on the Supervisor sees, then exec it.
#
#   pod.sh SCRATCH HOSTNAME SECURITY N [SRC DST]... CMD [ARG...]
#
# Runs as root in the lab's switch netns, already inside a fresh UTS namespace and a fresh mount
# namespace with private propagation, so nothing here is visible on the host or to any other
# command. SCRATCH is an empty directory the lab owns; the N pairs are volumes: host path SRC
# appears read-only at DST (a secret volume, e.g. the `<cluster>-ssh` secret at /etc/ssh-key).
#
# The root is the host's programs (/usr, /bin, /lib... bound as they are: the "image") with what a
# container has of its own: /tmp, /root, /home and /run start empty, /etc and /var are
# copy-on-write overlays of the host's (ssh needs /etc/passwd; writes vanish with the command).
#
# SECURITY is the pod's security context, one word per setting: uid=U gid=G (the command runs as
# U:G), groups=A,B (supplementary: fsGroup, supplementalGroups), ro=1 (readOnlyRootFilesystem:
# every mount but the volumes is read-only), empty=/path (an emptyDir volume: an empty writable
# tmpfs there; repeated).
set -eu
S=$1 H=$2 SEC=$3 N=$4
shift 4
RUN_UID=0 RUN_GID=0 RUN_GROUPS= RO=0 EMPTY=
for w in $SEC; do
    case $w in
    uid=*) RUN_UID=${w#uid=} ;;
    gid=*) RUN_GID=${w#gid=} ;;
    groups=*) RUN_GROUPS=${w#groups=} ;;
    ro=*) RO=${w#ro=} ;;
    empty=*) EMPTY="$EMPTY ${w#empty=}" ;;
    *) echo "pod.sh: unknown security setting $w" >&2 && exit 2 ;;
    esac
done

printf '%s' "$H" >/proc/sys/kernel/hostname

# Everything new lives on a tmpfs only this mount namespace sees.
mount -t tmpfs -o mode=0755,size=64m etcdnet-pod "$S"
mkdir "$S/root" "$S/up"
# The root a mount of its own, so that it can be made read-only on its own.
mount --bind "$S/root" "$S/root"

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

# emptyDir volumes: empty, writable by anyone (as the kubelet makes them, 0777).
for dst in $EMPTY; do
    mkdir -p "$S/root$dst"
    mount -t tmpfs -o mode=1777,size=16m etcdnet-emptydir "$S/root$dst"
done

# readOnlyRootFilesystem: the root and everything under it read-only, but the volumes.
if [ "$RO" = 1 ]; then
    for m in $(awk -v r="$S/root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo); do
        # A runtime leaves /proc, /sys and /dev as they are: they are not the image.
        case ${m#"$S/root"} in /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) continue ;; esac
        case " $EMPTY " in *" ${m#"$S/root"} "*) continue ;; esac
        printf '%s' "$VOLS" | grep -qx -- "${m#"$S/root"}" && continue
        mount -o remount,bind,ro "$m" 2>/dev/null || mount -o remount,ro "$m"
    done
fi

# coreutils chroot also changes the working directory to the new /, and drops to the pod's user.
if [ -n "$RUN_GROUPS" ]; then
    exec chroot --userspec="$RUN_UID:$RUN_GID" --groups="$RUN_GROUPS" "$S/root" "$@"
fi
exec chroot --userspec="$RUN_UID:$RUN_GID" "$S/root" "$@"
