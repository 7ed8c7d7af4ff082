#!/usr/bin/env bash
# The exporter area of bench/RESULTS.md ("Exporter: gpulse exporter vs node_exporter, plain and gzip"):
# gpulse exporter vs prometheus-node-exporter under wrk on loopback (CPU per 1,000 scrapes, throughput,
# latency, idle connections, RSS, start-up) and the gzip answer against the plain one; 3 rounds,
# about 4.5 minutes (bench/exporter/bench.py says what and how).
# Usage: bench/exporter/run.sh [BUILD_DIR] [--duration SECONDS] [--rounds N]
set -euo pipefail
build=${1:-build}
for tool in wrk prometheus-node-exporter; do
  command -v "$tool" >/dev/null || { echo "bench/exporter: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "$build" "${@:2}"
