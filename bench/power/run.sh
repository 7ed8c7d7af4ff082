#!/usr/bin/env bash
# validate-power throughput on a generated package, against `wc -l` and the SHA-256 of the same file
# in the same run.
# Usage: bench/power/run.sh BIN [SIZE_MB] [WORKDIR]
#   BIN      a binary with the validate-power subcommand (build/bin/gpulse)
#   SIZE_MB  samples.csv size (default 2048); the package is generated, never committed
#   WORKDIR  where to generate (default: a temp dir, removed afterwards)
#   RUNS     environment: rounds (default 5); each round runs every command once, in turn, so load
#            from other processes falls on all of them alike; the table keeps each command's best.
#   BASELINE environment, optional: another gpulse binary (an older build) measured alongside.
# Prints markdown tables: wall seconds, MB/s (MiB), speed relative to `wc -l` and to the digest alone,
# CPU seconds of that best run, peak RSS (ru_maxrss from /usr/bin/time: the process's resident memory; samples.csv is read with
# pread, so the file's page cache is not mapped and not counted). When BIN's folder holds
# power_scan_bench, its in-memory micro-benchmarks follow (parser alone, digest alone, both).
set -euo pipefail
BIN=$1
SIZE_MB=${2:-2048}
WORK=${3:-}
RUNS=${RUNS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ -z "$WORK" ]]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-power-bench.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
fi
if [[ ! -f "$WORK/logs/power/manifest.json" ]]; then
  /usr/bin/python3 "$HERE/gen_package.py" "$WORK" --size-mb "$SIZE_MB" >&2
fi
CSV="$WORK/logs/power/samples.csv"
BYTES=$(stat -c %s "$CSV")
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
NPROC=$(nproc)
cat "$CSV" > /dev/null  # warm the page cache so every contender reads from memory
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)  # other processes' load makes wall times noisy: recorded

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

NAMES=("wc -l" "openssl dgst -sha256" "validate-power --threads 1" "validate-power --threads $NPROC")
COUNT=4
if [[ -n "${BASELINE:-}" ]]; then
  NAMES+=("baseline validate-power --threads 1" "baseline validate-power --threads $NPROC")
  COUNT=6
fi
run_cmd() {  # run_cmd INDEX
  local args=(validate-power --power-dir "$WORK/logs/power" --result-root "$WORK/logs")
  case $1 in
    0) measure wc -l "$CSV" ;;
    1) measure openssl dgst -sha256 "$CSV" ;;
    2) measure "$BIN" "${args[@]}" --threads 1 ;;
    3) measure "$BIN" "${args[@]}" --threads "$NPROC" ;;
    4) measure "$BASELINE" "${args[@]}" --threads 1 ;;
    5) measure "$BASELINE" "${args[@]}" --threads "$NPROC" ;;
  esac
}

declare -a BEST
for ((round = 0; round < RUNS; round++)); do
  for ((i = 0; i < COUNT; i++)); do
    line=$(run_cmd "$i")
    if [[ -z "${BEST[$i]:-}" ]] || awk -v a="${line%% *}" -v b="${BEST[$i]%% *}" 'BEGIN { exit !(a < b) }'; then
      BEST[$i]=$line
    fi
  done
done

WC_S=${BEST[0]%% *}
SHA_S=${BEST[1]%% *}
echo
echo "samples.csv: $MB MiB ($BYTES bytes), $NPROC cores, $(uname -m); best of $RUNS interleaved rounds, page cache warm"
echo "load average at the start: $LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| command | wall s | MB/s | speed vs wc -l | speed vs digest alone | CPU s (user+sys) | peak RSS MiB | exit |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for ((i = 0; i < COUNT; i++)); do
  read -r wall rss rc cpu <<< "${BEST[$i]}"
  awk -v n="${NAMES[$i]}" -v w="$wall" -v r="$rss" -v rc="$rc" -v c="$cpu" -v b="$BYTES" -v wc="$WC_S" -v sha="$SHA_S" 'BEGIN {
    printf "| `%s` | %.2f | %.0f | %.2fx | %.2fx | %.2f | %.1f | %s |\n", n, w, b / 1048576 / w, wc / w, sha / w, c, r / 1024, rc }'
done

MICRO="$(dirname "$BIN")/power_scan_bench"
if [[ -x "$MICRO" ]]; then
  echo
  echo "In memory (bench/power/scan_bench.cc, 64 MiB of the same shape, CPU time, median of $RUNS):"
  echo
  "$MICRO" --benchmark_repetitions="$RUNS" --benchmark_report_aggregates_only=true \
    --benchmark_format=json 2> /dev/null | /usr/bin/python3 "$HERE/micro_report.py"
fi
