#!/usr/bin/env bash
# Exporter benchmark (bench/RESULTS.md, "Exporter"): gpulse exporter vs prometheus-node-exporter under
# wrk on loopback, plus idle-connection and start-up measurements. Usage: bench/exporter/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
for tool in wrk prometheus-node-exporter; do
  command -v "$tool" >/dev/null || { echo "bench/exporter: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "$build" "${@:2}"
