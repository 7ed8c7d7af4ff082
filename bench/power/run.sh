#!/usr/bin/env bash
# validate-power throughput on a generated package, against `wc -l` on the same file in the same run.
# Usage: bench/power/run.sh BIN [SIZE_MB] [WORKDIR]
#   BIN      a binary with the validate-power subcommand (build/bin/gpulse, or the test driver)
#   SIZE_MB  samples.csv size (default 2048); the package is generated, never committed
#   WORKDIR  where to generate (default: a temp dir, removed afterwards)
# Prints a markdown table: wall seconds, MB/s, ratio to wc -l, peak RSS.
set -euo pipefail
BIN=$1
SIZE_MB=${2:-2048}
WORK=${3:-}
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

measure() {  # measure NAME CMD... -> "NAME wall_s rss_kb rc"
  local name=$1; shift
  local log; log=$(mktemp)
  local rc=0 t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -v "$@" > /dev/null 2> "$log" || rc=$?
  t1=$(date +%s.%N)
  local wall rss
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")
  rm -f "$log"
  echo "$name $wall $rss $rc"
}

best() {  # best of 3 runs by wall time
  local out="" line
  for _ in 1 2 3; do
    line=$(measure "$@")
    if [[ -z "$out" ]] || awk -v a="$(echo "$line" | cut -d' ' -f2)" -v b="$(echo "$out" | cut -d' ' -f2)" 'BEGIN { exit !(a < b) }'; then
      out=$line
    fi
  done
  echo "$out"
}

WC=$(best "wc -l" wc -l "$CSV")
V1=$(best "validate-power --threads 1" "$BIN" validate-power --power-dir "$WORK/logs/power" --result-root "$WORK/logs" --threads 1)
VN=$(best "validate-power --threads $NPROC" "$BIN" validate-power --power-dir "$WORK/logs/power" --result-root "$WORK/logs" --threads "$NPROC")
WC_S=$(echo "$WC" | awk '{ print $(NF-2) }')

echo
echo "samples.csv: $MB MiB ($BYTES bytes), $(nproc) cores, $(uname -m); best of 3, page cache warm"
echo
echo "| command | wall s | MB/s | speed vs wc -l | peak RSS MiB | exit |"
echo "|---|---:|---:|---:|---:|---:|"
for line in "$WC" "$V1" "$VN"; do
  name=${line% * * *}
  read -r wall rss rc <<< "${line##"$name" }"
  awk -v n="$name" -v w="$wall" -v r="$rss" -v rc="$rc" -v b="$BYTES" -v wc="$WC_S" 'BEGIN {
    printf "| `%s` | %.2f | %.0f | %.2fx | %.1f | %s |\n", n, w, b / 1048576 / w, wc / w, r / 1024, rc }'
done
