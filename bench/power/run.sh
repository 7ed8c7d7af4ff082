#!/usr/bin/env bash
# bench/run.sh power: validate-power on a generated package beside `wc -l` and the SHA-256 of the same
# file (`openssl dgst -sha256`), in the same run, and the in-memory pass (power_scan_bench); prints the
# table "validate-power" of bench/RESULTS.md (bench/power/report.py, through bench/results.py).
# Usage: bench/power/run.sh BIN [SIZE_MB] [WORKDIR]
#   BIN      a binary with the validate-power subcommand (build/bin/gpulse)
#   SIZE_MB  samples.csv size (default 2048); the package is generated, never committed
#   WORKDIR  where to generate (default: a temp dir, removed afterwards); an existing package there is
#            reused
#   RUNS     environment: rounds (default 5, at least 3); each round runs every command once, in turn,
#            so load from other processes falls on all of them alike. The table gives each figure's
#            median with the min–max of the rounds, and each ratio per round.
# What is taken of each command (/usr/bin/time -v): wall seconds, CPU seconds (user + system), peak RSS
# (ru_maxrss: samples.csv is read with pread, so its page cache is not mapped and not counted), exit
# code. The page cache is warmed first: every contender reads from memory. When BIN's folder holds
# power_scan_bench, its in-memory benchmarks (64 MiB of the same shape) run RUNS repetitions.
# Time: about 3 minutes with 2048 MB (generating the package: about 1 minute). Not part of CI.
set -euo pipefail
BIN=$1
SIZE_MB=${2:-2048}
WORK=${3:-}
RUNS=${RUNS:-5}
(( RUNS >= 3 )) || RUNS=3
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-power-out.XXXXXX")
OWN_WORK=
if [[ -z "$WORK" ]]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-power-bench.XXXXXX")
  OWN_WORK=1
fi
cleanup() {
  rm -rf "$OUT"
  if [[ -n "$OWN_WORK" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
if [[ ! -f "$WORK/logs/power/manifest.json" ]]; then
  /usr/bin/python3 "$HERE/gen_package.py" "$WORK" --size-mb "$SIZE_MB" >&2
fi
CSV="$WORK/logs/power/samples.csv"
NPROC=$(nproc)
cat "$CSV" > /dev/null  # warm the page cache so every contender reads from memory

measure() {  # measure CMD... -> "wall_s rss_kb rc cpu_s"
  local log; log=$(mktemp)
  local rc=0 t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -v "$@" > /dev/null 2> "$log" || rc=$?
  t1=$(date +%s.%N)
  local rss cpu
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")
  cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$log")
  rm -f "$log"
  awk -v a="$t0" -v b="$t1" -v r="$rss" -v rc="$rc" -v c="$cpu" 'BEGIN { printf "%.4f %s %s %s\n", b - a, r, rc, c }'
}

NAMES=(wc sha vp1 vpN)
run_cmd() {  # run_cmd INDEX
  local args=(validate-power --power-dir "$WORK/logs/power" --result-root "$WORK/logs")
  case $1 in
    0) measure wc -l "$CSV" ;;
    1) measure openssl dgst -sha256 "$CSV" ;;
    2) measure "$BIN" "${args[@]}" --threads 1 ;;
    3) measure "$BIN" "${args[@]}" --threads "$NPROC" ;;
  esac
}

TIMINGS="$OUT/timings.tsv"  # round, command, wall_s, rss_kb, rc, cpu_s
for ((round = 0; round < RUNS; round++)); do
  for ((i = 0; i < ${#NAMES[@]}; i++)); do
    read -r wall rss rc cpu <<< "$(run_cmd "$i")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "${NAMES[$i]}" "$wall" "$rss" "$rc" "$cpu" >> "$TIMINGS"
  done
done

SCAN=()
MICRO="$(dirname "$BIN")/power_scan_bench"
if [[ -x "$MICRO" ]]; then
  "$MICRO" --benchmark_repetitions="$RUNS" --benchmark_format=json --benchmark_out="$OUT/scan.json" \
    --benchmark_out_format=json > /dev/null 2>&1
  SCAN=(--scan "$OUT/scan.json")
fi
COMMAND="bash bench/run.sh power"
if [[ "$RUNS" != 5 || "$SIZE_MB" != 2048 ]]; then COMMAND="RUNS=$RUNS bash bench/power/run.sh BIN $SIZE_MB"; fi
/usr/bin/python3 "$HERE/report.py" --timings "$TIMINGS" --csv "$CSV" --manifest "$WORK/logs/power/manifest.json" \
  --threads "$NPROC" --command "$COMMAND" "${SCAN[@]}"
