#!/usr/bin/env bash
# AMD and Intel benchmark (docs/vendors.md): one device's full tick through the sysfs backends
# (gpulse's own work and its syscalls) side by side, in one run, with one
# `rocm-smi --showuse --showpower --showmeminfo vram` call on the same fixture tree (Debian's
# rocm-smi 5.2, in a private mount namespace with the tree bind-mounted on /sys) and with the same
# tick on the NVML simulator. Needs root (unshare -m) and rocm-smi. About a minute. Prints the table
# of bench/RESULTS.md through bench/results.py (report.py: medians and min–max of the runs).
# Usage: bench/vendors/run.sh [BUILD_DIR] [--calls N]. Not part of CI.
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
bench="$(cd "$build" && pwd)/bin/vendor_tick_bench"
[ -x "$bench" ] || { echo "bench/vendors: $bench is not built" >&2; exit 2; }
command -v rocm-smi >/dev/null || { echo "bench/vendors: rocm-smi is not installed" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  echo "bench/vendors: skipped: rocm-smi reads the fixture as /sys in a private mount namespace (unshare -m), which needs root"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-vendor-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bench" --benchmark_repetitions=5 --benchmark_min_time=0.5 --benchmark_format=json \
  --benchmark_out="$work/tick.json" --benchmark_out_format=json >/dev/null
timeout -s TERM 600 /usr/bin/python3 "$here/report.py" --ticks "$work/tick.json" \
  --fixtures "$here/../../tests/testdata/sysfs" "$@"
