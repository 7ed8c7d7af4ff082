#!/usr/bin/env bash
# Collector benchmark (issues 7, 14), `bench/run.sh collector`: `gpulse collect` polling 4,096 and
# 1,024 simulated endpoints x 8 GPUs at 1 s, side by side with a real Prometheus server scraping the
# same targets at 1 s (power only, and stock), 3 rounds each; prints its bench/RESULTS.md table
# (bench/collector/bench.py says what it measures). About 11 minutes; loopback only; every process
# stops by itself. Not part of CI.
# Usage: bench/collector/run.sh [BUILD_DIR] [bench.py options...] (e.g. --endpoints 1024 --rounds 3)
set -euo pipefail
build=${1:-build}
shift || true
if ! command -v prometheus >/dev/null; then
  echo "bench/collector: prometheus is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
exec /usr/bin/python3 "$(dirname "$0")/bench.py" --gpulse "$build/bin/gpulse" "$@"
