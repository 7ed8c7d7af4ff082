#!/usr/bin/env bash
# Live-views benchmark (docs/live.md), bench/run.sh live: NVML reads per second and agent CPU with 0,
# 1, 10 and 100 stream viewers at 1 s; `gpulse top`'s CPU at 1 s on 8 GPUs beside `gpulse dmon -c 1`
# spawned each second (the `watch nvidia-smi` anchor), over --rounds windows (default 3). Prints the
# table of bench/RESULTS.md (live_bench.py, through bench/results.py). About 4 minutes; loopback only;
# everything stops by itself. Usage: bench/live/run.sh [BUILD_DIR] [--seconds S] [--rounds N]. Not
# part of CI.
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
gpulse="$(cd "$build" && pwd)/bin/gpulse"
[ -x "$gpulse" ] || { echo "bench/live: $gpulse is not built" >&2; exit 2; }
command -v tmux >/dev/null || { echo "bench/live: tmux is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-live-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
timeout -s TERM 900 /usr/bin/python3 "$here/live_bench.py" --gpulse "$gpulse" --work "$work" "$@"
