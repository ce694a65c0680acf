#!/bin/sh
# systemctl stand-in of etcdnet-lab (the lab's second fake, after crictl): a lab node has no
# systemd and no kubelet, so this answers for the kubelet unit only, from a state file the lab
# writes (Lab::set_kubelet_active). Any other unit goes to the host's real systemctl, if any.
STATE='@STATE@'

real() {
    [ -x /usr/bin/systemctl ] && exec /usr/bin/systemctl "$@"
    echo 'System has not been booted with systemd as init system (PID 1). Can'"'"'t operate.' >&2
    exit 1
}

ACTIVE=active SINCE=0
[ -r "$STATE/kubelet.env" ] && . "$STATE/kubelet.env"
SUB=running
[ "$ACTIVE" = active ] || SUB=dead
since_text() { date -u -d "@$SINCE" '+%a %Y-%m-%d %H:%M:%S UTC'; }

verb='' quiet='' value='' props='' units='' next_is_prop=''
for a in "$@"; do
    if [ -n "$next_is_prop" ]; then
        props="$props,$a" next_is_prop=''
        continue
    fi
    case $a in
    -q | --quiet) quiet=1 ;;
    --value) value=1 ;;
    --no-pager | --no-legend | --full | --plain | -l) ;;
    -p | --property) next_is_prop=1 ;;
    --property=*) props="$props,${a#*=}" ;;
    -p*) props="$props,${a#-p}" ;;
    -*) real "$@" ;;
    *) if [ -z "$verb" ]; then verb=$a; else units="$units $a"; fi ;;
    esac
done
# Only `<verb> kubelet` is answered here.
case $units in " kubelet" | " kubelet.service") ;; *) real "$@" ;; esac

case $verb in
is-active)
    [ -n "$quiet" ] || echo "$ACTIVE"
    [ "$ACTIVE" = active ] && exit 0 || exit 3
    ;;
show)
    [ -n "$props" ] || props=',ActiveState,SubState,LoadState,UnitFileState,ActiveEnterTimestamp'
    for p in $(echo "${props#,}" | tr ',' ' '); do
        case $p in
        ActiveState) v=$ACTIVE ;;
        SubState) v=$SUB ;;
        LoadState) v=loaded ;;
        UnitFileState) v=enabled ;;
        Id) v=kubelet.service ;;
        ActiveEnterTimestamp) [ "$ACTIVE" = active ] && v=$(since_text) || v='' ;;
        *) v='' ;;
        esac
        if [ -n "$value" ]; then echo "$v"; else echo "$p=$v"; fi
    done
    ;;
status)
    echo '● kubelet.service - kubelet: The Kubernetes Node Agent'
    echo '     Loaded: loaded (/etc/systemd/system/kubelet.service; enabled; vendor preset: enabled)'
    echo '    Drop-In: /etc/systemd/system/kubelet.service.d'
    echo '             └─10-kubeadm.conf'
    if [ "$ACTIVE" = active ]; then
        echo "     Active: active (running) since $(since_text);"
        exit 0
    fi
    echo '     Active: inactive (dead)'
    exit 3
    ;;
*) real "$@" ;;
esac
