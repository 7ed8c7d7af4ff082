#!/usr/bin/env bash
# Collector benchmark (issues 7, 14): `gpulse collect` polling 1,024 (or --endpoints N) simulated endpoints x 8 GPUs at 1 s,
# side by side with a real Prometheus server scraping the same targets at 1 s. About 5 minutes;
# loopback only; every process stops by itself. Not part of CI.
# Usage: bench/collector/run.sh [BUILD_DIR] [bench.py options...]
set -euo pipefail
build=${1:-build}
shift || true
if ! command -v prometheus >/dev/null; then
  echo "bench/collector: prometheus is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
exec /usr/bin/python3 "$(dirname "$0")/bench.py" --gpulse "$build/bin/gpulse" "$@"
