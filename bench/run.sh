#!/usr/bin/env bash
# `make bench` / `bench/run.sh [--build DIR] [AREA...]`: one benchmark per capability of
# bench/RESULTS.md. Each area measures gpulse beside its anchor in the same run, three runs (or more)
# of each, and prints its RESULTS.md table (bench/results.py): figure, value, anchor, anchor value,
# ratio with the spread of the runs, target, command, date, machine. No AREA: every area, in the
# order below (about an hour on the reference machine). Loopback only; every process stops by
# itself. Not part of CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build

areas=(tick identity vendors record exporter mig network kubernetes collector power history live health faults)
usage() {
  echo "usage: bench/run.sh [--build DIR] [AREA...]; areas: ${areas[*]}" >&2
  exit 2
}

chosen=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    -h|--help) usage ;;
    -*) echo "bench/run.sh: unknown option '$1'" >&2; usage ;;
    *) chosen+=("$1"); shift ;;
  esac
done
[ ${#chosen[@]} -gt 0 ] || chosen=("${areas[@]}")
for a in "${chosen[@]}"; do
  [[ " ${areas[*]} " == *" $a "* ]] || { echo "bench/run.sh: unknown area '$a'" >&2; usage; }
done
build=$(cd "$build" && pwd)
[ -x "$build/bin/gpulse" ] || { echo "bench/run.sh: $build/bin/gpulse is not built (make build)" >&2; exit 2; }
py=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Google Benchmark programs: each repetition is one run; the report takes the median and the spread.
gbench() {
  local name=$1 out=$2
  shift 2
  "$build/bin/$name" --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
    --benchmark_format=json --benchmark_out="$out" \
    --benchmark_out_format=json "$@" >/dev/null
}

area_tick() {
  gbench tick_bench "$work/tick.json" \
    --benchmark_filter='BM_Tick/(null|sim)|BM_TickEntities|BM_TickProfiling|BM_SimCallsOnly|BM_ProcessSpawnAnchor'
  $py "$here/tick_report.py" "$work/tick.json"
}
area_identity() {
  gbench identity_bench "$work/identity.json"
  $py "$here/identity_report.py" "$work/identity.json"
}
area_vendors() { bash "$here/vendors/run.sh" "$build"; }
area_record() { $py "$here/record_report.py" "$build"; }
area_exporter() { bash "$here/exporter/run.sh" "$build"; }
area_mig() { $py "$here/exporter/mig.py" "$build"; }
area_network() {
  $py -W ignore::DeprecationWarning "$here/exporter/network.py" "$build"
  $py -W ignore::DeprecationWarning "$here/exporter/hostile.py" "$build"
  $py "$here/agent/soak.py" "$build"
}
area_kubernetes() {
  $py "$here/exporter/kubernetes.py" "$build"
  gbench attribution_bench "$work/attribution.json"
  $py "$here/exporter/attribution_report.py" "$work/attribution.json"
}
area_collector() { bash "$here/collector/run.sh" "$build"; }
area_power() { bash "$here/power/run.sh" "$build/bin/gpulse" 2048; }
area_history() { bash "$here/agent/run.sh" "$build"; }
area_live() { bash "$here/live/run.sh" "$build"; }
area_health() { bash "$here/health/run.sh" "$build"; }
area_faults() { bash "$here/faults/run.sh" "$build"; }

for a in "${chosen[@]}"; do
  echo "<!-- bench/run.sh $a: $(date -u +%FT%TZ), gpulse at $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?') -->"
  "area_$a"
done
