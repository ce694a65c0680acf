#!/usr/bin/env bash
# Time to verdict in the lab, and what the plugin adds to it, for 3 and 7 control-plane nodes.
#
# Each run is `kubectl etcdnet diagnose ... -o json` through the real kubectl and the pod route,
# against a fake Supervisor and a lab whose nodes run real etcd with 2379/2380 dropped between
# them. Per run it prints the wall time, the slowest node's own probe duration (the largest
# `nodes[].probe.durationMs` of the report: the probe's clock from its start to its document) and
# their difference, "adds": what the plugin, kubectl and the pods cost around the probes. "adds"
# is the flatness figure: its medians for 3 and 7 nodes (target: each <= 1 s, 7 <= 1.3x 3). The
# whole run's 7 / 3 ratio is printed beside it as a lab figure: the lab's nodes share this
# machine's CPUs, so more nodes make every probe slower, which real VMs do not.
#
# Root and the lab's packages; build first: cargo build --workspace --bins. The plugin timed is
# target/release's when built there (cargo build --release --bin kubectl-etcdnet), else the
# debug one (BENCH_PATH=DIR puts DIR's first, to time another build); the script says which, and
# the machine's load before and after. Part of where "adds" goes, from the probes' clockMs (the
# lab's nodes share this machine's clock; real nodes' clocks differ): "first" is the run's start
# to the first probe's clock, "spread" the first probe's clock to the last one's. A probe reads
# its clock once its path checks have started, so each is a little late (tens of ms idle, some
# hundreds on a loaded machine).
# Usage: [BENCH_ETCD=3.5] bash tests/bench/time-to-verdict.sh [RUNS] [CONNECT_TIMEOUT] [NODES...]
#   RUNS (default 5) per node count, CONNECT_TIMEOUT (default 3s), NODES: 3 and/or 7 (default both);
#   BENCH_ETCD: the lab's etcd line (3.4, the default, or 3.5)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
ct=${2:-3s}
shift $(($# < 2 ? $# : 2))
sizes=${*:-3 7}
export PATH="${BENCH_PATH:+$BENCH_PATH:}$PWD/target/release:$PWD/target/debug:$PATH"
for bin in kubectl-etcdnet etcdnet-fakeapi kubectl; do
    command -v "$bin" >/dev/null || { echo "no $bin on PATH: cargo build --workspace --bins first" >&2; exit 1; }
done
work=$(mktemp -d)
# shellcheck source=tests/bench/fake.sh
source tests/bench/fake.sh
trap 'stop_fake; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# start_lab NODES: the fake Supervisor and a lab of that many nodes, peers dropped; sets CLUSTER.
start_lab() {
    local fixtures workload
    case $1 in
    3) fixtures=quorum-lost workload=lab-3 CLUSTER=tkc-prod ;;
    7) fixtures=seven-nodes workload=lab-any CLUSTER=tkc-big ;;
    *) echo "no lab of $1 nodes (3 or 7)" >&2; exit 2 ;;
    esac
    stop_fake
    export KUBECONFIG="$work/kubeconfig-$1"
    etcdnet-fakeapi --fixtures "tests/fixtures/supervisor/$fixtures" --workload lab \
        --workload-fixtures "tests/fixtures/workload/$workload" --fault drop-all-peers \
        --kubeconfig-out "$KUBECONFIG" --context supervisor --namespace ns-prod --etcd "${BENCH_ETCD:-3.4}" >"$work/out-$1" 2>&1 &
    fake=$!
    for _ in $(seq 1200); do
        grep -q '^LAB_ID=' "$work/out-$1" 2>/dev/null && break
        kill -0 "$fake" 2>/dev/null || { cat "$work/out-$1" >&2; exit 1; }
        sleep 0.1
    done
    sleep 5 # let etcd notice the fault
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "plugin $(command -v kubectl-etcdnet), etcd ${BENCH_ETCD:-3.4}, connect timeout $ct, $runs runs per size, $(nproc) cores, load $(load)"
: >"$work/results"
for n in $sizes; do
    start_lab "$n"
    for i in $(seq "$runs"); do
        start=$(date +%s%N)
        kubectl etcdnet diagnose "$CLUSTER" -n ns-prod --connect-timeout "$ct" -o json >"$work/run.json" || true
        end=$(date +%s%N)
        wall=$(((end - start) / 1000000))
        read -r code probe reached first spread < <(python3 - "$work/run.json" "$start" <<'EOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception:
    print("- -1 0 -1 -1")
    sys.exit()
start = int(sys.argv[2]) // 1000000
probes = [n.get("probe") or {} for n in doc.get("nodes", [])]
probes = [p for p in probes if isinstance(p.get("durationMs"), int) and isinstance(p.get("clockMs"), int)]
slowest = max((p["durationMs"] for p in probes), default=-1)
if probes:
    first = min(p["clockMs"] for p in probes)
    times = (first - start, max(p["clockMs"] for p in probes) - first)
else:
    times = (-1, -1)
print(doc.get("verdict", {}).get("code", "-"), slowest, len(probes), *times)
EOF
        )
        adds=$((probe < 0 ? -1 : wall - probe))
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$wall" "$probe" "$adds" "$reached" "$code" \
            "$first" "$spread" >>"$work/results"
        printf '%d nodes, run %d: %5d ms, slowest probe %5d ms, adds %5d ms (first %d, spread %d), %d probed, verdict %s\n' \
            "$n" "$i" "$wall" "$probe" "$adds" "$first" "$spread" "$reached" "$code"
    done
    stop_fake
done
echo "load after: $(load)"
python3 - "$work/results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, wall, probe, adds, reached, code, first, spread = line.rstrip("\n").split("\t")
    rows.setdefault(int(n), []).append((int(wall), int(probe), int(adds), code, int(first), int(spread)))
med = {}
print()
print("| nodes | runs | wall ms, median (min-max) | slowest probe ms, median | adds ms, median (min-max) | first / spread ms, medians | verdict |")
print("|---|---|---|---|---|---|---|")
for n in sorted(rows):
    r = rows[n]
    wall = [x[0] for x in r]
    probe = [x[1] for x in r if x[1] >= 0]
    adds = [x[2] for x in r if x[1] >= 0]
    med[n] = (statistics.median(wall), statistics.median(adds) if adds else None)
    verdicts = ", ".join(sorted(set(x[3] for x in r)))
    print(f"| {n} | {len(r)} | {med[n][0]:.0f} ({min(wall)}-{max(wall)}) | "
          f"{statistics.median(probe) if probe else 0:.0f} | "
          + (f"{med[n][1]:.0f} ({min(adds)}-{max(adds)})" if adds else "-") + " | "
          + " / ".join(f"{statistics.median([x[k] for x in r if x[1] >= 0] or [0]):.0f}" for k in (4, 5))
          + f" | {verdicts} |")
if 3 in med and 7 in med and med[3][1] and med[7][1] is not None:
    print()
    print(f"adds, 7 / 3 nodes: {med[7][1] / med[3][1]:.2f}x (target <= 1.3x; each median <= 1000 ms)")
    print(f"whole run, 7 / 3 nodes (lab figure): {med[7][0] / med[3][0]:.2f}x")
EOF
