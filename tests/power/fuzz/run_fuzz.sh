#!/usr/bin/env bash
# Builds the power-parser fuzz target with Debian's clang (libFuzzer + ASan + UBSan) and runs it.
# Usage: run_fuzz.sh SECONDS [BUILD_DIR]   CI runs 10 s; run longer on demand, e.g. run_fuzz.sh 3600
# Exit 77 (ctest "skipped") when clang++ or libFuzzer is not installed.
set -euo pipefail
SECONDS_TO_RUN=${1:-10}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
OUT=${2:-${TMPDIR:-/tmp}/gpulse-power-fuzz}
CXX=$(command -v clang++ || true)
[[ -n "$CXX" ]] || { echo "clang++ not installed: skipping"; exit 77; }
mkdir -p "$OUT/corpus" "$OUT/obj"
FLAGS=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -I"$SRC/src")
LAUNCH=()
command -v ccache > /dev/null && LAUNCH=(ccache)
objs=()
for f in byte_source contract coverage json_io line_cutter range_parser samples_row samples_scan topology windows wire_contract; do
  obj="$OUT/obj/$f.o"
  if [[ ! -f "$obj" || "$SRC/src/power/$f.cc" -nt "$obj" ]]; then
    "${LAUNCH[@]}" "$CXX" "${FLAGS[@]}" -c "$SRC/src/power/$f.cc" -o "$obj" &
  fi
  objs+=("$obj")
done
wait
"${LAUNCH[@]}" "$CXX" "${FLAGS[@]}" -c "$HERE/fuzz_parsers.cc" -o "$OUT/obj/fuzz_parsers.o"
"$CXX" -fsanitize=fuzzer,address,undefined "$OUT/obj/fuzz_parsers.o" "${objs[@]}" -lcrypto -lfmt -lpthread \
  -o "$OUT/fuzz_power_parsers"
cp -n "$HERE"/corpus/* "$OUT/corpus/" 2> /dev/null || true
cd "$OUT"  # crash-* reproducers land here
"$OUT/fuzz_power_parsers" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -rss_limit_mb=2048 \
  -error_exitcode=1 -print_final_stats=1 "$OUT/corpus" "$HERE/corpus"
