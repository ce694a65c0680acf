#!/usr/bin/env bash
# Time to verdict in the lab: 3 control-plane VMs with peers dropped, `kubectl etcdnet diagnose`
# through the real kubectl and the pod route. Runs it N times (default 5) and prints each wall
# time and the verdict. Root and the lab's packages; build first: cargo build --workspace --bins.
# Usage: bash tests/bench/time-to-verdict.sh [N] [CONNECT_TIMEOUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
ct=${2:-3s}
export PATH="$PWD/target/debug:$PATH"
work=$(mktemp -d)
etcdnet-fakeapi --fixtures tests/fixtures/supervisor/quorum-lost --workload lab \
    --workload-fixtures tests/fixtures/workload/lab-3 --fault drop-all-peers \
    --kubeconfig-out "$work/kubeconfig" --context supervisor --namespace ns-prod >"$work/out" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null; wait $fake 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 300); do grep -q '^LAB_ID=' "$work/out" 2>/dev/null && break; sleep 0.1; done
export KUBECONFIG="$work/kubeconfig"
sleep 5 # let etcd notice the fault
echo "connect timeout $ct, $runs runs"
for i in $(seq "$runs"); do
    start=$(date +%s%N)
    code=$(kubectl etcdnet diagnose tkc-prod --connect-timeout "$ct" -o json | sed -n 's/.*"code": "\([A-Za-z]*\)".*/\1/p' | tail -1 || true)
    end=$(date +%s%N)
    echo "run $i: $(( (end - start) / 1000000 )) ms  verdict $code"
done
