#!/usr/bin/env bash
# `make bench`: runs the micro-benchmarks and prints the tables for bench/RESULTS.md.
# Usage: bench/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== tick cost (bench/tick_bench.cc)"
"$build/bin/tick_bench" --benchmark_filter='BM_Tick/(null|sim)|BM_TickEntities|BM_TickProfiling|BM_SimCallsOnly|BM_ProcessSpawnAnchor' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out/tick.json" --benchmark_out_format=json >/dev/null
/usr/bin/python3 bench/tick_report.py "$out/tick.json"

echo
echo "== gpulse record (bench/record_bench.cc)"
"$build/bin/record_bench"
echo
echo "== identity (bench/identity_bench.cc)"
"$build/bin/identity_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out/identity.json" --benchmark_out_format=json >/dev/null
/usr/bin/python3 bench/identity_report.py "$out/identity.json"
echo
echo "== exporter vs node_exporter (bench/exporter/run.sh)"
bash bench/exporter/run.sh "$build"
echo
echo "== exporter scrape on a MIG node, 8 GPUs x 7 instances (bench/exporter/mig.py)"
/usr/bin/python3 bench/exporter/mig.py "$build"
echo
echo "== exporter in Kubernetes mode with 5,000 pods at the kubelet vs without (bench/exporter/kubernetes.py)"
/usr/bin/python3 bench/exporter/kubernetes.py "$build"
echo
echo "== exporter in Kubernetes mode: the work per process list, kept holders vs every list (bench/exporter/attribution_bench.cc)"
"$build/bin/attribution_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
echo
echo "== exporter in Kubernetes mode: each scrape timed, read-starting or kept body (bench/exporter/kubernetes_scrapes.py)"
/usr/bin/python3 bench/exporter/kubernetes_scrapes.py "$build"
echo
echo "== exporter: a gzip answer against a plain one (bench/exporter/gzip_scrape.py)"
/usr/bin/python3 bench/exporter/gzip_scrape.py "$build" --rounds 3 --duration 5
echo
echo "== exporter with TLS and basic auth under hostile clients (bench/exporter/hostile.py)"
/usr/bin/python3 -W ignore::DeprecationWarning bench/exporter/hostile.py "$build"
echo
echo "== exporter under each network attack, side by side with its quiet self (bench/exporter/network.py, ~5 min)"
/usr/bin/python3 -W ignore::DeprecationWarning bench/exporter/network.py "$build" --duration 8 --rounds 3
echo
echo "== agent soak: 10^6 scrapes with pods churning and hostile clients (bench/agent/soak.py, ~2 min)"
/usr/bin/python3 bench/agent/soak.py "$build"
echo
echo "== collector vs Prometheus, 1,024 endpoints x 8 GPUs at 1 s (bench/collector, ~5 min)"
bash bench/collector/run.sh "$build"
echo
echo "== collector vs Prometheus, 4,096 endpoints x 8 GPUs at 1 s (bench/collector, ~5 min)"
bash bench/collector/run.sh "$build" --endpoints 4096
echo
echo "== health and policy on the agent: condition to listener and Alertmanager, CPU (bench/health, ~2.5 min)"
bash bench/health/run.sh "$build"

echo "== AMD and Intel: one device's tick from sysfs beside one rocm-smi call (bench/vendors, ~1 min)"
bash bench/vendors/run.sh "$build"
