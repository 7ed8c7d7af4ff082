#!/usr/bin/env bash
# End-to-end test of `validate-power` and `energy` through a binary that has them (the private
# driver, or gpulse once wired): exit codes, text and JSON output, and the JSON against the schemas.
# Usage: cli_e2e.sh BIN MAKE_PACKAGE PYTHON3 SOURCE_DIR
set -uo pipefail
BIN=$1 MAKE=$2 PY=$3 SRC=$4
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-power-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {  # check NAME WANT_RC GOT_RC
  if [[ "$2" != "$3" ]]; then echo "FAIL $1: exit $3, want $2"; fails=$((fails + 1)); else echo "ok   $1"; fi
}
{ read -r PD; read -r RR; } < <("$MAKE" "$TMP/valid")
{ read -r GPD; read -r GRR; } < <("$MAKE" "$TMP/gap" gap)

"$BIN" validate-power --power-dir "$PD" --result-root "$RR" --expect-role prefill=4 --expect-role decode=4 \
  --require-distinct-het-groups > "$TMP/ok.txt"; check valid_package_exits_0 0 $?
grep -q '^validation_ok: True$' "$TMP/ok.txt" || { echo "FAIL text report"; fails=$((fails + 1)); }
"$BIN" validate-power --power-dir "$PD" --result-root "$RR" --json > "$TMP/ok.json"; check valid_json_exits_0 0 $?
"$BIN" validate-power --power-dir "$GPD" --result-root "$GRR" --json > "$TMP/gap.json"; check gap_exits_1 1 $?
"$BIN" validate-power --power-dir "$GPD" --result-root "$GRR" > "$TMP/gap.txt"; check gap_text_exits_1 1 $?
grep -q 'FAIL sample_gap_exceeded (window sa-bench/4)' "$TMP/gap.txt" || { echo "FAIL gap line"; fails=$((fails + 1)); }
"$BIN" validate-power --power-dir "$PD" --result-root "$RR" --expect-role prefill=2 > /dev/null; check canary_fail_exits_1 1 $?
"$BIN" validate-power --power-dir "$TMP/nowhere" --result-root "$RR" > "$TMP/none.txt"; check missing_manifest_exits_1 1 $?
grep -q 'FAIL manifest missing' "$TMP/none.txt" || { echo "FAIL missing manifest line"; fails=$((fails + 1)); }
for bad in prefill prefill=x =4 prefill=-1 bogus=0; do
  "$BIN" validate-power --power-dir "$PD" --result-root "$RR" --expect-role "$bad" 2> /dev/null; check "usage_$bad" 2 $?
done
"$BIN" validate-power --power-dir "$PD" --result-root "$RR" --expect-role prefill=4 --expect-role prefill=4 2> /dev/null
check usage_duplicate_role 2 $?
"$BIN" validate-power --power-dir "$PD" 2> /dev/null; check usage_missing_result_root 2 $?
echo '[1,2]' > "$TMP/gap/logs/power/manifest.json"
"$BIN" validate-power --power-dir "$GPD" --result-root "$GRR" > "$TMP/damaged.txt"; check damaged_manifest_exits_1 1 $?
grep -q 'manifest malformed: not an object (list)' "$TMP/damaged.txt" || { echo "FAIL damaged line"; fails=$((fails + 1)); }

"$BIN" energy --power-dir "$PD" --result-root "$RR" --format json > "$TMP/energy.json"; check energy_json_exits_0 0 $?
"$BIN" energy --power-dir "$PD" --format csv > "$TMP/energy.csv"; check energy_csv_exits_0 0 $?
"$BIN" energy --power-dir "$PD" > "$TMP/energy.txt"; check energy_text_exits_0 0 $?
"$BIN" energy --power-dir "$PD" --format yaml 2> /dev/null; check energy_bad_format_exits_2 2 $?
"$BIN" energy --power-dir "$TMP/nowhere" 2> /dev/null; check energy_missing_dir_exits_2 2 $?

# One power_w changed after the fact (issue 40): validate-power and energy both refuse the package.
{ read -r TPD; read -r TRR; } < <("$MAKE" "$TMP/tampered")
"$PY" - "$TPD/samples.csv" <<'PYEOF'
import sys
path = sys.argv[1]
lines = open(path).read().split("\n")
cells = lines[5].split(",")
cells[-1] = str(float(cells[-1]) + 1.0)
lines[5] = ",".join(cells)
open(path, "w").write("\n".join(lines))
PYEOF
"$BIN" validate-power --power-dir "$TPD" --result-root "$TRR" > /dev/null; check tampered_validate_exits_1 1 $?
"$BIN" energy --power-dir "$TPD" --result-root "$TRR" --format json > "$TMP/tampered.json"; check tampered_energy_exits_1 1 $?
"$PY" - "$SRC/docs/schema/energy.schema.json" "$TMP/tampered.json" <<'PYEOF' || fails=$((fails + 1))
import json, sys, jsonschema
doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, json.load(open(sys.argv[1])))
assert doc["all_valid"] is False and doc["samples_verified"] is False, doc
assert doc["total_j"] is None and all(not w["verified"] and w["total_j"] is None for w in doc["windows"])
assert "samples_sha256 mismatch" in doc["integrity_failures"][0], doc["integrity_failures"]
print("ok   a tampered samples.csv is unverified in energy, every figure withheld")
PYEOF

"$PY" - "$SRC/docs/schema/validate-power.schema.json" "$TMP/ok.json" "$TMP/gap.json" <<'PYEOF' || fails=$((fails + 1))
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    jsonschema.validate(json.load(open(path)), schema)
print("ok   validate-power JSON matches its schema")
PYEOF
"$PY" - "$SRC/docs/schema/energy.schema.json" "$TMP/energy.json" <<'PYEOF' || fails=$((fails + 1))
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
assert doc["all_valid"] is True and abs(doc["total_j"] - 60 * (4 * 115 + 4 * 165)) < 1e-6, doc["total_j"]
print("ok   energy JSON matches its schema and the known integral")
PYEOF
[[ $fails -eq 0 ]] && echo "all e2e checks passed" || echo "$fails e2e check(s) failed"
exit $((fails > 0))
