#!/usr/bin/env bash
# Health and policy benchmark (docs/health.md): the time from a simulated condition to a `gpulse
# policy --reg` listener and to a real Alertmanager, and the agent's CPU with 8 GPUs watched for
# health and policy at 1 Hz beside the same agent without them, over --rounds rounds (default 3).
# Prints the table of bench/RESULTS.md (health_bench.py, through bench/results.py); bench/run.sh health.
# About 2.5 minutes; loopback only; everything stops by itself.
# Usage: bench/health/run.sh [BUILD_DIR] [--seconds S] [--rounds N] [--json FILE]. Not part of CI.
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
gpulse="$(cd "$build" && pwd)/bin/gpulse"
[ -x "$gpulse" ] || { echo "bench/health: $gpulse is not built" >&2; exit 2; }
[ -x /usr/bin/prometheus-alertmanager ] || { echo "bench/health: prometheus-alertmanager is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-health-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
timeout -s TERM 900 /usr/bin/python3 "$here/health_bench.py" --gpulse "$gpulse" --work "$work" "$@"
