#!/usr/bin/env bash
# Captures `diagnose -o json` (and `status -o json`) from the lab for a set of faults, over the pod
# route (workload API up) and the jumpbox route (workload API down), into OUT_DIR, with the volatile
# values (timings, ports, timestamps, ids, log counts) masked by tests/bench/normalize-json.py.
# Used to prove a refactor keeps the output byte-identical apart from those:
#   bash tests/bench/capture-json.sh /tmp/before   # on the old commit
#   bash tests/bench/capture-json.sh /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after
# The raw documents are kept in OUT_DIR/raw, so that a better mask can be applied to both later
# (`python3 tests/bench/normalize-json.py < OUT_DIR/raw/NAME.json`).
# Needs root and the lab's packages (see .ci/lab-packages).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: capture-json.sh OUT_DIR}
mkdir -p "$out/raw"
cargo build --quiet --workspace --bins
export PATH="$PWD/target/debug:$PATH"
work=$(mktemp -d)
fake_pid=
stop() {
    if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; wait "$fake_pid" 2>/dev/null || true; fi
    fake_pid=
}
trap 'stop; rm -rf "$work"' EXIT

start() { # $@: extra fakeapi flags
    etcdnet-fakeapi --fixtures tests/fixtures/supervisor/quorum-lost "$@" \
        --kubeconfig-out "$work/kubeconfig" --context supervisor --namespace ns-prod >"$work/fake.out" 2>&1 &
    fake_pid=$!
    for _ in $(seq 300); do
        grep -q '^LAB_ID=' "$work/fake.out" 2>/dev/null && break
        sleep 0.1
    done
    lab=$(sed -n 's/^LAB_ID=//p' "$work/fake.out")
    [ -n "$lab" ] || { cat "$work/fake.out" >&2; exit 1; }
    export KUBECONFIG="$work/kubeconfig"
}

capture() { # name, args...
    local name=$1; shift
    set +e; kubectl etcdnet "$@" -o json >"$work/raw.json" 2>"$work/raw.err"; local rc=$?; set -e
    cp "$work/raw.json" "$out/raw/$name.json"
    python3 tests/bench/normalize-json.py <"$work/raw.json" >"$out/$name.json"
    echo "exit $rc" >>"$out/$name.json"
}

for route in pod jumpbox; do
    if [ $route = pod ]; then
        start --workload lab --workload-fixtures tests/fixtures/workload/lab-3
    else
        start --workload-down
    fi
    sleep 3
    capture "$route-status" status tkc-prod --api-timeout 2s
    capture "$route-healthy" diagnose tkc-prod --api-timeout 2s --connect-timeout 2s
    for fault in drop-all-peers reject-all-peers isolate:tkc-prod-7xk2p-bx2lk stop-etcd:tkc-prod-7xk2p-9qtvw drop-large-packets; do
        etcdnet-lab fault "$fault" --lab "$lab" >/dev/null 2>&1 || { echo "fault $fault unknown" >&2; continue; }
        sleep 8
        capture "$route-${fault%%:*}" diagnose tkc-prod --api-timeout 2s --connect-timeout 2s
        etcdnet-lab heal --lab "$lab" >/dev/null
        sleep 6
    done
    stop
done
ls "$out"
