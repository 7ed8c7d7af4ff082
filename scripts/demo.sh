#!/usr/bin/env bash
# `make demo`: the main job on the simulated fleet. Lists the simulated 4xA40-tp2 host (a
# tensor-parallel-2 job on GPUs 0 and 1 of four), then samples it for a few ticks, showing that
# GPUs 2 and 3 sit idle, and finally a fault scenario where readings go missing and a GPU is lost.
set -euo pipefail
gpulse=${1:-build/bin/gpulse}

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$gpulse" devices --simulate 4xA40-tp2
step "$gpulse" dmon --simulate 4xA40-tp2 -c 5 -d 200
step "$gpulse" dmon --simulate faults -c 4 -d 600 -e POWER,POWINST,TMPTR,MMTMP,GPUTL,FBUSD,XIDER,ESVTL,DVCCTR
