#!/usr/bin/env bash
# Agent history benchmark (bench/agent/README.md): `gpulse agent` watching the full catalogue on 8
# simulated GPUs at 1 Hz for 4 simulated hours, side by side with a real Prometheus server holding the
# same series: RSS, bytes per stored value, and a 1-hour range query of one field on one GPU.
# RUNS whole runs (default 3), about 2 minutes each; loopback and a unix socket only; every process
# stops by itself. Not part of CI.
# Usage: bench/agent/run.sh [BUILD_DIR] [report.py measure options: --hours H --rounds N --malloc-probe ...]
# Prints the table of bench/RESULTS.md (report.py write, through bench/results.py) and writes it with
# the first run's figures in detail to $OUT (default: a new file under ${TMPDIR:-/tmp}, named at the
# end), each run's raw figures next to it as .N.json. KEEP=1 keeps the work directory (logs, state, TSDBs).
set -euo pipefail
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
gpulse="$build/bin/gpulse"
[ -x "$gpulse" ] || { echo "bench/agent: $gpulse is not built" >&2; exit 2; }
command -v prometheus >/dev/null || { echo "bench/agent: prometheus is not installed (scripts/install-deps.sh installs it)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-agent-bench.XXXXXX")
child=
cleanup() {
  local f pid
  # report.py stops what it started and removes each pid file; whatever is left is stopped here.
  for f in "$work"/run*/*.pid; do
    [ -e "$f" ] || continue
    kill -TERM "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$work"/run*/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "${KEEP:-}" ]; then echo "bench/agent: work directory kept: $work" >&2; else rm -rf "$work"; fi
}
on_signal() {
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  exit 130
}
trap cleanup EXIT
trap on_signal INT TERM

out=${OUT:-$(mktemp --suffix=.md "${TMPDIR:-/tmp}/gpulse-agent-bench-results.XXXXXX")}
json=${out%.md}.json
# The hard stop: timeout sends SIGTERM, on which report.py stops its processes; the trap above kills
# any that are left. In the background so that a signal to this script is handled at once.
# RUNS (default 3) whole runs, each in a fresh work directory: memory and bytes per value come with
# their spread; the detail tables are the first run's.
runs=${RUNS:-3}
jsons=()
for i in $(seq "$runs"); do
  j=${json%.json}.$i.json
  timeout -s TERM 1200 /usr/bin/python3 "$here/report.py" measure --gpulse "$gpulse" --work "$work/run$i" \
    --json "$j" "$@" &
  child=$!
  wait "$child"
  child=
  jsons+=(--json "$j")
done
/usr/bin/python3 "$here/report.py" write "${jsons[@]}" --out "$out"
echo "bench/agent: the table and every figure in detail in $out, the raw figures in ${json%.json}.N.json" >&2
