#!/usr/bin/env bash
# Many clusters, many nodes: wall time and Supervisor requests of `kubectl etcdnet` through the real
# kubectl against the fake Supervisor (tests/fakeapi) and the lab (tests/lab), for issue 11.
#
#   a  diagnose <one cluster>  vs  diagnose --all -n ns-fleet   three-clusters: 3 labs, peers dropped
#                                                               in every one, pod route
#   b  status <one cluster>    vs  status -A                    a generated Supervisor of 20 clusters
#                                                               in 4 vSphere Namespaces (no lab)
#   c  diagnose, 3 nodes vs 7 nodes, pod route and --via jumpbox   quorum-lost (3) and seven-nodes (7),
#                                                               peers dropped
#
# Every row: the median/min/max wall time of RUNS runs, the exit code, the Supervisor requests the
# fake counted for one run (etcdnet-fakeapi --requests-out), and the outcome (verdicts, or how many
# reports). A flag the plugin does not have yet (exit 2, a usage error) shows as "unsupported".
# Root and the lab's packages; build first: cargo build --workspace --bins && cargo build
# --release --bin kubectl-etcdnet. The plugin timed is the release build (what users run: the
# debug build spends tens of ms of CPU per cluster making TLS clients); the fakes are taken from
# target/release when built there (cargo build --release --workspace --bins), else the debug ones.
#
# Usage: bash tests/bench/many-clusters.sh [-n RUNS] [-t CONNECT_TIMEOUT] [-k] [a] [b] [c]
#   -n RUNS             runs per row (default 5)
#   -t CONNECT_TIMEOUT  the probe's --connect-timeout (default 3s)
#   -k                  keep the work directory (kubeconfigs, request logs, each run's output)
#   a b c               the parts to run (default all)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5
ct=3s
keep=
while getopts n:t:k opt; do
    case $opt in
    n) runs=$OPTARG ;;
    t) ct=$OPTARG ;;
    k) keep=1 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
parts=${*:-a b c}
export PATH="$PWD/target/release:$PWD/target/debug:$PATH"
[[ -x target/release/kubectl-etcdnet ]] || {
    echo "no target/release/kubectl-etcdnet: cargo build --release --bin kubectl-etcdnet first" >&2
    exit 1
}
for bin in kubectl-etcdnet etcdnet-fakeapi; do
    command -v "$bin" >/dev/null || { echo "no $bin: cargo build --workspace --bins first" >&2; exit 1; }
done
command -v kubectl >/dev/null || { echo "no kubectl on PATH" >&2; exit 1; }
work=$(mktemp -d)
results="$work/results.tsv"
: >"$results"
# shellcheck source=tests/bench/fake.sh
source tests/bench/fake.sh
cleanup() {
    stop_fake
    if [[ -n $keep ]]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_fake NAME ARGS...: serves a Supervisor (and labs) until stop_fake; KUBECONFIG and REQUESTS
# point at its kubeconfig and request log.
start_fake() {
    local name=$1
    shift
    stop_fake
    KUBECONFIG="$work/$name.kubeconfig"
    REQUESTS="$work/$name.requests"
    export KUBECONFIG
    etcdnet-fakeapi "$@" --kubeconfig-out "$KUBECONFIG" --context supervisor \
        --requests-out "$REQUESTS" >"$work/$name.out" 2>"$work/$name.err" &
    fake=$!
    for _ in $(seq 1200); do
        grep -q '^REQUESTS_OUT=' "$work/$name.out" 2>/dev/null && return 0
        if ! kill -0 "$fake" 2>/dev/null; then
            echo "etcdnet-fakeapi $* did not start:" >&2
            cat "$work/$name.err" >&2
            fake=
            exit 1
        fi
        sleep 0.1
    done
    echo "etcdnet-fakeapi $* not ready after 120 s" >&2
    exit 1
}

# outcome FILE: the verdicts of a diagnosis (or of each cluster of a list), or how many reports.
outcome() {
    python3 - "$1" <<'EOF'
import collections, json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception:
    print("-")
    sys.exit()
items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
codes = collections.Counter()
for item in items:
    if not isinstance(item, dict):
        codes["?"] += 1
    elif "verdict" in item:
        codes[item["verdict"].get("code", "?")] += 1
    elif "nodes" in item:
        codes["report"] += 1
    else:
        codes["failed"] += 1
print(", ".join(f"{n}x {c}" if n > 1 else c for c, n in sorted(codes.items())))
EOF
}

# bench PART LABEL ARGS...: `kubectl etcdnet ARGS... -o json` RUNS times.
bench() {
    local part=$1 label=$2
    shift 2
    local i out err code start end before after
    for i in $(seq "$runs"); do
        out="$work/run-$part-$(echo "$label" | tr -c 'A-Za-z0-9' '_')-$i"
        before=$(wc -l <"$REQUESTS")
        start=$(date +%s%N)
        code=0
        kubectl etcdnet "$@" -o json >"$out.json" 2>"$out.err" || code=$?
        end=$(date +%s%N)
        sleep 0.2 # the deletes of the run's pods are its requests too
        after=$(wc -l <"$REQUESTS")
        local result
        if [[ $code == 2 ]]; then
            result="unsupported: $(head -1 "$out.err" | cut -c1-70)"
        else
            result=$(outcome "$out.json")
        fi
        printf '%s\t%s\t%d\t%d\t%d\t%s\n' "$part" "$label" $(((end - start) / 1000000)) "$code" \
            $((after - before)) "$result" >>"$results"
        printf '  %-44s run %d: %6d ms  exit %d  %3d requests  %s\n' "$label" "$i" \
            $(((end - start) / 1000000)) "$code" $((after - before)) "$result" >&2
        [[ $code == 2 ]] && break
    done
    return 0
}

wait_for_fault() { sleep 5; } # let etcd notice the fault, as time-to-verdict.sh does

if [[ $parts == *a* ]]; then
    echo "a: three-clusters, 3 labs side by side, peers dropped in each (pod route)" >&2
    start_fake a --fixtures tests/fixtures/supervisor/three-clusters --workload lab --cluster all \
        --workload-fixtures tests/fixtures/workload/lab-any --fault drop-all-peers --namespace ns-fleet
    wait_for_fault
    bench a "diagnose tkc-web (1 of 3 clusters)" diagnose tkc-web -n ns-fleet --connect-timeout "$ct"
    bench a "diagnose --all -n ns-fleet (3 clusters)" diagnose --all -n ns-fleet --connect-timeout "$ct"
    stop_fake
fi

if [[ $parts == *b* ]]; then
    echo "b: a generated Supervisor of 20 clusters in 4 namespaces, one stand-in workload API" >&2
    start_fake b --many-clusters 4x5 --workload ok
    bench b "status tkc-1-1 (1 of 20 clusters)" status tkc-1-1 -n ns-team-1
    bench b "status -A (20 clusters, 4 namespaces)" status -A
    stop_fake
fi

if [[ $parts == *c* ]]; then
    echo "c: 3 vs 7 control-plane nodes, peers dropped, pod route and jumpbox route" >&2
    start_fake c3 --fixtures tests/fixtures/supervisor/quorum-lost --workload lab \
        --workload-fixtures tests/fixtures/workload/lab-3 --fault drop-all-peers --namespace ns-prod
    wait_for_fault
    bench c "diagnose, 3 nodes, pod route" diagnose tkc-prod -n ns-prod --connect-timeout "$ct"
    bench c "diagnose, 3 nodes, --via jumpbox" diagnose tkc-prod -n ns-prod --via jumpbox \
        --connect-timeout "$ct"
    start_fake c7 --fixtures tests/fixtures/supervisor/seven-nodes --workload lab \
        --workload-fixtures tests/fixtures/workload/lab-any --fault drop-all-peers --namespace ns-prod
    wait_for_fault
    bench c "diagnose, 7 nodes, pod route" diagnose tkc-big -n ns-prod --connect-timeout "$ct"
    bench c "diagnose, 7 nodes, --via jumpbox" diagnose tkc-big -n ns-prod --via jumpbox \
        --connect-timeout "$ct"
    stop_fake
fi

echo
echo "connect timeout $ct, $runs runs per row, $(nproc) cores, $(date -u +%Y-%m-%d)"
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    part, label, ms, code, requests, result = line.rstrip("\n").split("\t")
    if (part, label) not in rows:
        order.append((part, label))
        rows[(part, label)] = []
    rows[(part, label)].append((int(ms), int(code), int(requests), result))
def cell(values):
    values = sorted(set(values))
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"
medians = {}
print("| part | case | runs | median ms | min ms | max ms | exit | Supervisor requests | outcome |")
print("|---|---|---|---|---|---|---|---|---|")
for key in order:
    r = rows[key]
    ms = [x[0] for x in r]
    unsupported = any(x[1] == 2 for x in r)
    medians[key] = None if unsupported else statistics.median(ms)
    outcomes = sorted(set(x[3] for x in r))
    print(f"| {key[0]} | {key[1]} | {len(r)} | {statistics.median(ms):.0f} | {min(ms)} | {max(ms)} | "
          f"{cell(x[1] for x in r)} | {cell(x[2] for x in r)} | {'; '.join(outcomes)} |")
def ratio(part, a, b, what):
    ka = next((k for k in order if k[0] == part and a in k[1]), None)
    kb = next((k for k in order if k[0] == part and b in k[1]), None)
    if ka and kb and medians.get(ka) and medians.get(kb):
        print(f"{what}: {medians[kb] / medians[ka]:.2f}x")
    elif ka or kb:
        print(f"{what}: n/a")
print()
ratio("a", "diagnose tkc-web", "--all", "a: diagnose --all / one cluster (target <= 1.5x)")
ratio("b", "status tkc-1-1", "status -A", "b: status -A / one cluster (target <= 3x)")
ratio("c", "3 nodes, pod", "7 nodes, pod", "c: 7 / 3 nodes, pod route (target <= 1.2x)")
ratio("c", "3 nodes, --via", "7 nodes, --via", "c: 7 / 3 nodes, jumpbox route (target <= 1.2x)")
EOF
