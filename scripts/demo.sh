#!/usr/bin/env bash
# `make demo`: the main job on the simulated fleet. Lists the simulated 4xA40-tp2 host (a
# tensor-parallel-2 job on GPUs 0 and 1 of four), samples it for a few ticks, then records a
# workload on it with `gpulse record` and prints the run report, whose per-device block shows that
# GPUs 2 and 3 sat idle. The run's files land in build/demo-run/.
set -euo pipefail
gpulse=${1:-build/bin/gpulse}
out=$(dirname "$(dirname "$gpulse")")/demo-run

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$gpulse" devices --simulate 4xA40-tp2
step "$gpulse" dmon --simulate 4xA40-tp2 -c 3 -d 200
rm -rf "$out"
step "$gpulse" record --simulate 4xA40-tp2 -o "$out" -- sleep 3
echo
echo "Open $out/report.html in a browser for the plots; \`$gpulse report $out/run.json\` re-renders the report."
