# etcdnet-lab: a control-plane VM's sshd, started inside the node's view (see view.sh).
#
#   sshd.sh ROOT UID
#
# Runs as root after view.sh's chroot, in the node's netns and in the view's private mount
# namespace, so every mount and every write below exists for this sshd and the sessions it starts
# only: /etc is the view's copy-on-write overlay (the host's /etc/passwd never changes), /run and
# /home are mounted over here. sshd resolves users, and sudo reads its rules, in this same view,
# so the account below is real to both of them while the host does not know it.
set -eu
R=$1 U=$2
USER=vmware-system-user

# sshd insists on its privilege-separation directory /run/sshd; a VM has its own /run, and
# creating it in the host's /run would leave a trace on the host.
mount -t tmpfs -o mode=0755,size=4m etcdnet-run /run
mkdir -m 0755 /run/sshd

# The account TKG nodes have: a normal user whose password is unusable ("*": no password login,
# yet not a *locked* account, which sshd would refuse even with a key) and who may sudo anything
# without a password.
printf '%s:x:%s:%s:VMware System User:/home/%s:/bin/bash\n' "$USER" "$U" "$U" "$USER" >>/etc/passwd
printf '%s:x:%s:\n' "$USER" "$U" >>/etc/group
printf '%s:*:19000:0:99999:7:::\n' "$USER" >>/etc/shadow
mkdir -p /etc/sudoers.d
printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$USER" >"/etc/sudoers.d/$USER"
chmod 0440 "/etc/sudoers.d/$USER"

# The home directory (and its .ssh/authorized_keys) lives in the node's directory; the lab made
# it with the owner and modes StrictModes demands.
mount --bind "$R/home" /home

# -D: stay in the foreground, the lab's own child (killed with it). -E: log to the node's file.
# An absolute path, as sshd re-executes itself for every connection.
exec /usr/sbin/sshd -D -f "$R/sshd/sshd_config" -E "$R/sshd/sshd.log"
