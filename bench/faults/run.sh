#!/usr/bin/env bash
# Faults benchmark (docs/faults.md): the time from an Xid line in the kernel log to the recommended
# action in /metrics, beside the same Xid through NVML's event; and the agent's CPU while it tails a
# kernel log growing by 100 Xid lines a second, beside the same agent on a quiet log. Prints the
# table of bench/RESULTS.md (faults_bench.py, through bench/results.py); bench/run.sh faults.
# About 3 minutes; loopback only; everything stops by itself.
# Usage: bench/faults/run.sh [BUILD_DIR] [--events N] [--seconds S] [--rounds N]. Not part of CI.
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
gpulse="$(cd "$build" && pwd)/bin/gpulse"
[ -x "$gpulse" ] || { echo "bench/faults: $gpulse is not built" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-faults-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
timeout -s TERM 900 /usr/bin/python3 "$here/faults_bench.py" --gpulse "$gpulse" --work "$work" "$@"
