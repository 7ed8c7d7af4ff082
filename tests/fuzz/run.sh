#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (docs/fuzzing.md): for each target, first every file of
# tests/fuzz/regressions/<target>/ once, then fuzzing for SECONDS from its seed corpus
# (tests/fuzz/corpus/<target>/) plus what earlier runs found (build-fuzz/fuzz/<target>/corpus/).
# Prints each target's executions per second and total executions; exits 1 naming every target
# that crashed and its reproducer (build-fuzz/fuzz/<target>/artifacts/).
#
# Usage: tests/fuzz/run.sh [--build] [--seconds N] [--runs N] [--only T1,T2,...] [--out DIR]
#                         [--timeout S] [--fork N]
#   --build     configure (cmake --preset fuzz) when needed and build build-fuzz/ first
#   --seconds   fuzzing time per target (default $FUZZ_SECONDS, else 60); 0 runs the regressions only
#   --runs      also stop a target after N executions (the long runs of bench/RESULTS.md)
#   --only      these targets (names without fuzz_), default all of them
#   --out       logs and reproducers under DIR/<target>/ and summary.tsv in DIR instead of
#               build-fuzz/fuzz/ (the corpus stays shared): a long run beside `make test`, whose
#               fuzz_smoke runs every target briefly, then keeps its own log
#   --timeout   seconds one input may run before it counts as a hang (default 10). libFuzzer's
#               clock is the wall clock: a long run at nice 19 beside builds on every core can be
#               starved past 10 s on an input that takes milliseconds, so give such runs more
#   --fork      run each target as N worker processes under one libFuzzer parent (its -fork=N:
#               one run, one corpus, the executions of every worker counted together) for a long
#               run on N cores; the run stops at the first crash, timeout or out-of-memory as
#               without it
# Exit 77 (ctest "skipped") when clang++ or libFuzzer is not installed.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$SRC/build-fuzz"
OUT="$BUILD/fuzz"
CORPORA="$BUILD/fuzz"
SECONDS_EACH=${FUZZ_SECONDS:-60}
BUILD_FIRST=0
ONLY=""
RUNS=-1
TIMEOUT=10
FORK=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD_FIRST=1 ;;
    --seconds) SECONDS_EACH=$2; shift ;;
    --runs) RUNS=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --out) OUT=$(mkdir -p "$2" && cd "$2" && pwd) || exit 2; shift ;;
    --timeout) TIMEOUT=$2; shift ;;
    --fork) FORK=$2; shift ;;
    *) echo "usage: $0 [--build] [--seconds N] [--runs N] [--only T1,T2,...] [--out DIR] [--timeout S] [--fork N]" >&2; exit 2 ;;
  esac
  shift
done

# The anchor first: every other rate is read against it (bench/RESULTS.md).
TARGETS=(anchor exposition exposition_chunks scrape http_request http_response http_util basic_auth
         counters web_config collect_config scenario visible cgroup procfs run_json journal field_list
         power_parsers series_image agent_query pod_resources request_body clock_sync drm_readers
         live_frame process_stat device_selection agent_reply agent_rows kernel_log)
declare -A MAX_LEN=([exposition]=16384 [exposition_chunks]=16384 [scrape]=16384 [http_request]=65536
                    [http_response]=8192 [run_json]=16384 [journal]=16384 [power_parsers]=65536 [web_config]=8192
                    [collect_config]=8192 [scenario]=8192)
if [[ -n "$ONLY" ]]; then IFS=, read -r -a TARGETS <<< "$ONLY"; fi

if [[ $BUILD_FIRST == 1 ]]; then
  probe=$(mktemp -d)
  trap 'rm -rf "$probe"' EXIT
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/p.cc"
  if ! command -v clang++ > /dev/null || ! clang++ -fsanitize=fuzzer "$probe/p.cc" -o "$probe/p" 2> /dev/null; then
    echo "clang++ with libFuzzer (libclang-rt-14-dev) is not installed: skipping"
    exit 77
  fi
  cd "$SRC" || exit 1
  if [[ ! -f "$BUILD/build.ninja" ]]; then cmake --preset fuzz > /dev/null || exit 1; fi
  cmake --build --preset fuzz -j "${FUZZ_JOBS:-$(nproc)}" || exit 1
fi

failures=()
summary="$OUT/summary.tsv"
mkdir -p "$OUT"
printf 'target\texecs_per_s\ttotal_execs\tseconds\n' > "$summary"
anchor_rate=""
for t in "${TARGETS[@]}"; do
  bin="$BUILD/bin/fuzz_$t"
  [[ -x "$bin" ]] || { echo "no $bin: build with --build (or make fuzz)" >&2; exit 1; }
  work="$OUT/$t"
  corpus="$CORPORA/$t/corpus"
  mkdir -p "$corpus" "$work/artifacts"
  flags=(-rss_limit_mb=2048 -timeout="$TIMEOUT" -error_exitcode=1 -timeout_exitcode=1
         -max_len="${MAX_LEN[$t]:-4096}" -artifact_prefix="$work/artifacts/")

  regressions=("$SRC/tests/fuzz/regressions/$t"/*)
  if [[ -e "${regressions[0]}" ]]; then
    # Every check of a target on every regression file (a target may sample its costly checks).
    if ! GPULSE_FUZZ_EVERY_CHECK=1 "$bin" "${flags[@]}" "${regressions[@]}" > "$work/regressions.log" 2>&1; then
      tail -n 40 "$work/regressions.log"
      failures+=("$t: a regression file fails again (log: $work/regressions.log)")
    fi
  fi
  [[ "$SECONDS_EACH" == 0 ]] && continue

  before=$(ls "$work/artifacts" | wc -l)
  fork=()
  [[ "$FORK" != 0 ]] && fork=(-fork="$FORK" -ignore_timeouts=0 -ignore_ooms=0 -ignore_crashes=0)
  "$bin" "${flags[@]}" "${fork[@]}" -max_total_time="$SECONDS_EACH" -runs="$RUNS" -print_final_stats=1 \
    "$corpus" "$SRC/tests/fuzz/corpus/$t" > "$work/fuzz.log" 2>&1
  rc=$?
  if [[ "$FORK" == 0 ]]; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -n 1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/fuzz.log" | tail -n 1)
  else
    # The parent's status lines: "#EXECS: cov: ... time: Ss job: ...", every worker's executions.
    # -o: a worker's NEW_FUNC lines can leave the parent's last status line without its newline.
    last=$(grep -a -o '#[0-9]*: cov: [^#]* time: [0-9]*s' "$work/fuzz.log" | tail -n 1)
    execs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<< "$last")
    took=$(sed -n 's/.* time: \([0-9]*\)s.*/\1/p' <<< "$last")
    rate=""
    if [[ -n "$execs" && -n "$took" && "$took" != 0 ]]; then rate=$(( execs / took )); fi
  fi
  if [[ -z "$took" && -n "$rate" && -n "$execs" && "$rate" != 0 ]]; then took=$(( execs / rate )); fi
  [[ $t == anchor ]] && anchor_rate=$rate
  ratio=""
  if [[ -n "$anchor_rate" && -n "$rate" && "$anchor_rate" != 0 ]]; then
    ratio=$(awk -v r="$rate" -v a="$anchor_rate" 'BEGIN { printf " (%.4f of the anchor)", r / a }')
  fi
  printf '%s\t%s\t%s\t%s\n' "$t" "${rate:-?}" "${execs:-?}" "${took:-?}" >> "$summary"
  printf 'fuzz_%-18s %8s exec/s %12s execs in %ss%s\n' "$t" "${rate:-?}" "${execs:-?}" "${took:-?}" "$ratio"
  if [[ $rc != 0 ]]; then
    tail -n 60 "$work/fuzz.log"
    new=$(ls -t "$work/artifacts" | head -n $(( $(ls "$work/artifacts" | wc -l) - before )))
    failures+=("$t: exit $rc, reproducer: $(for f in $new; do printf '%s ' "$work/artifacts/$f"; done)(log: $work/fuzz.log)")
  fi
done

if [[ ${#failures[@]} -gt 0 ]]; then
  echo
  echo "FAILED:"
  printf '  %s\n' "${failures[@]}"
  echo "Reproduce: build-fuzz/bin/fuzz_TARGET REPRODUCER; add it to tests/fuzz/regressions/TARGET/ (docs/fuzzing.md)"
  exit 1
fi
echo "summary: $summary"
