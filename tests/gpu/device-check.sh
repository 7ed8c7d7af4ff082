#!/usr/bin/env bash
# Prepared check for a machine with a real NVIDIA GPU (no internet, nothing installed there).
# Read-only: it changes no GPU setting (no clocks, power limit, compute mode, MIG or persistence).
#
# Usage: tests/gpu/device-check.sh [BUILD_BIN_DIR]     (default build/bin)
# The folder holds the gpulse binary built elsewhere (and tick_bench); shared libraries it needs that
# the machine lacks may be copied beside it (LD_LIBRARY_PATH includes the folder).
#
# Prints: gpulse devices next to nvidia-smi -L; a table comparing every catalogue field gpulse reads
# with `nvidia-smi --query-gpu` (and pynvml when importable) on the same card at the same moment;
# the cost of one gpulse tick through the real driver next to one `nvidia-smi --query-gpu` call;
# then starts a small CUDA process (cuda_hold, pinned by UUID to the last GPU) and checks that
# `gpulse ps` finds it on that GPU, that `gpulse devices --visible --env-from PID` maps its CUDA
# device 0 to that GPU, and that both agree with `nvidia-smi --query-compute-apps`.
# Profiling (issue 15): the GPM fields next to `nvidia-smi dmon --gpm-metrics` at the same moment,
# PCIe throughput next to `nvidia-smi -q -d PCI`'s Tx/Rx throughput, violation time and NVLink
# counters next to `nvidia-smi -q -d PERFORMANCE` and `nvidia-smi nvlink -s` (printed side by side;
# only the GPM ratios get a verdict), and the tick cost with and without the profiling fields.
# Finishes in well under 3 minutes.
set -uo pipefail
bin=${1:-build/bin}
gpulse="$bin/gpulse"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$gpulse" ] || { echo "device-check: $gpulse not found or not executable"; exit 1; }
command -v nvidia-smi >/dev/null || { echo "device-check: nvidia-smi not found"; exit 1; }
command -v python3 >/dev/null || { echo "device-check: python3 not found"; exit 1; }

echo "== gpulse devices"; timeout 60 "$gpulse" devices
echo "== nvidia-smi -L"; timeout 60 nvidia-smi -L
echo
GPULSE="$gpulse" BIN="$bin" timeout 150 python3 - <<'PY'
import csv, io, json, os, subprocess, time

gpulse = os.environ["GPULSE"]

def sh(args, timeout=30):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)

def smi(field):
    p = sh(["nvidia-smi", f"--query-gpu=index,{field}", "--format=csv,noheader,nounits"])
    if p.returncode != 0:
        return {}
    out = {}
    for line in p.stdout.strip().splitlines():
        idx, _, val = line.partition(",")
        out[int(idx)] = val.strip()
    return out

# gpulse field -> (nvidia-smi query field, tolerance as (absolute, relative))
PAIRS = [
    ("DCGM_FI_DEV_POWER_USAGE", "power.draw.average", (5.0, 0.10)),
    ("DCGM_FI_DEV_POWER_USAGE_INSTANT", "power.draw.instant", (15.0, 0.15)),
    ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "enforced.power.limit", (0.5, 0.0)),
    ("DCGM_FI_DEV_GPU_TEMP", "temperature.gpu", (2, 0)),
    ("DCGM_FI_DEV_MEMORY_TEMP", "temperature.memory", (2, 0)),
    ("DCGM_FI_DEV_GPU_UTIL", "utilization.gpu", (10, 0)),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "utilization.memory", (10, 0)),
    ("DCGM_FI_DEV_FB_TOTAL", "memory.total", (1, 0)),
    ("DCGM_FI_DEV_FB_USED", "memory.used", (16, 0)),
    ("DCGM_FI_DEV_FB_FREE", "memory.free", (16, 0)),
    ("DCGM_FI_DEV_FB_RESERVED", "memory.reserved", (1, 0)),
    ("DCGM_FI_DEV_SM_CLOCK", "clocks.sm", (50, 0.05)),
    ("DCGM_FI_DEV_MEM_CLOCK", "clocks.mem", (50, 0.05)),
    ("DCGM_FI_DEV_PSTATE", "pstate", (0, 0)),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "clocks_event_reasons.active", (0, 0)),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ecc.errors.corrected.volatile.total", (0, 0)),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc.errors.uncorrected.volatile.total", (0, 0)),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "ecc.errors.corrected.aggregate.total", (0, 0)),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "ecc.errors.uncorrected.aggregate.total", (0, 0)),
    ("DCGM_FI_DEV_RETIRED_SBE", "retired_pages.single_bit_ecc.count", (0, 0)),
    ("DCGM_FI_DEV_RETIRED_DBE", "retired_pages.double_bit.count", (0, 0)),
    ("DCGM_FI_DEV_RETIRED_PENDING", "retired_pages.pending", (0, 0)),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", None, None),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", None, None),
    ("DCGM_FI_DEV_ENC_UTIL", None, None),
    ("DCGM_FI_DEV_DEC_UTIL", None, None),
    ("DCGM_FI_DEV_XID_ERRORS", None, None),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", None, None),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", None, None),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", None, None),
]

def norm(field, v):
    if v is None or v in ("", "N/A", "[N/A]", "[Not Supported]", "Not Supported"):
        return None
    if field == "pstate":
        return float(v.lstrip("P"))
    if field == "clocks_event_reasons.active" or (isinstance(v, str) and v.startswith("0x")):
        return float(int(v, 16))
    if field == "retired_pages.pending":
        return 1.0 if v.lower() in ("yes", "1") else 0.0
    return float(v)

p = sh([gpulse, "dmon", "-c", "1", "-d", "10", "--format", "json", "-e",
        ",".join(f for f, _, _ in PAIRS)], timeout=60)
if p.returncode != 0:
    print("gpulse dmon failed:", p.stderr)
    raise SystemExit(1)
rows = [json.loads(l) for l in p.stdout.strip().splitlines()]
ours = {r["gpu"]: r["fields"] for r in rows if "gpu_instance_id" not in r}  # GPU rows, not MIG instance rows
theirs = {q: smi(q) for _, q, _ in PAIRS if q}

pyn = {}
try:
    import pynvml
    pynvml.nvmlInit()
    for i in ours:
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        d = {}
        for name, fn in [("DCGM_FI_DEV_POWER_USAGE", lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000),
                         ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)),
                         ("DCGM_FI_DEV_GPU_TEMP", lambda: pynvml.nvmlDeviceGetTemperature(h, 0)),
                         ("DCGM_FI_DEV_FB_TOTAL", lambda: pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**20),
                         ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", lambda: pynvml.nvmlDeviceGetPcieReplayCounter(h)),
                         ("DCGM_FI_DEV_ENC_UTIL", lambda: pynvml.nvmlDeviceGetEncoderUtilization(h)[0]),
                         ("DCGM_FI_DEV_DEC_UTIL", lambda: pynvml.nvmlDeviceGetDecoderUtilization(h)[0])]:
            try:
                d[name] = float(fn())
            except Exception:
                d[name] = None
        pyn[i] = d
except Exception as e:
    print(f"(pynvml not available: {type(e).__name__})")

print(f"| gpu | field | gpulse | nvidia-smi field | nvidia-smi | pynvml | verdict |")
print("|---|---|---|---|---|---|---|")
bad = 0
for gpu, fields in sorted(ours.items()):
    for f, q, tol in PAIRS:
        g = fields.get(f)
        s = norm(q, theirs[q].get(gpu)) if q else None
        y = pyn.get(gpu, {}).get(f)
        ref = s if s is not None else y
        if g is None and ref is None:
            verdict = "both n/a"
        elif g is None or ref is None:
            verdict = "gpulse n/a only" if g is None else ("no reference" if ref is None else "?")
        else:
            a, r = tol if tol else (max(1.0, abs(ref) * 0.05), 0)
            ok = abs(g - ref) <= max(a, r * abs(ref))
            verdict = "match" if ok else "DIFFERS"
            bad += not ok
        fmt = lambda v: "n/a" if v is None else (f"{v:.3f}".rstrip("0").rstrip("."))
        print(f"| {gpu} | {f} | {fmt(g)} | {q or '-'} | {fmt(s)} | {fmt(y)} | {verdict} |")

# Cost: one nvidia-smi --query-gpu call vs one gpulse tick of the full catalogue through the driver.
q = "index,power.draw,temperature.gpu,utilization.gpu,memory.used,clocks.sm"
n = 10
t0 = time.perf_counter()
for _ in range(n):
    sh(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"])
smi_ms = (time.perf_counter() - t0) / n * 1000
print(f"\nnvidia-smi --query-gpu ({q}): {smi_ms:.1f} ms per call (mean of {n})")
bench = os.path.join(os.environ["BIN"], "tick_bench")
if os.access(bench, os.X_OK):
    p = sh([bench, "--benchmark_filter=BM_Tick/nvml", "--benchmark_format=json", "--benchmark_min_time=0.5"],
           timeout=60)
    try:
        b = json.loads(p.stdout)["benchmarks"][0]
        per_dev_ns = b["ns_per_device_tick"]
        print(f"gpulse tick, full catalogue, real driver: {per_dev_ns/1000:.1f} us per device "
              f"({smi_ms*1e6/per_dev_ns:.0f}x cheaper than one nvidia-smi call)")
    except Exception:
        print("tick_bench failed:", p.stderr[-500:])
print(f"\n{bad} field(s) differ beyond tolerance")
PY
field_rc=$?

echo
echo "== profiling (GPM), PCIe and NVLink throughput, violation time"
GPULSE="$gpulse" BIN="$bin" timeout 120 python3 - <<'PY'
import json, os, re, subprocess

gpulse = os.environ["GPULSE"]

def sh(args, timeout=40):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except Exception as e:
        return subprocess.CompletedProcess(args, 1, "", str(e))

# gpulse field -> NVML GPM metric id (nvidia-smi dmon --gpm-metrics takes the same ids)
GPM = [("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1), ("DCGM_FI_PROF_SM_ACTIVE", 2), ("DCGM_FI_PROF_SM_OCCUPANCY", 3),
       ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 5), ("DCGM_FI_PROF_DRAM_ACTIVE", 10),
       ("DCGM_FI_PROF_PCIE_TX_BYTES", 20), ("DCGM_FI_PROF_PCIE_RX_BYTES", 21)]
OTHER = ["DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_FI_DEV_POWER_VIOLATION",
         "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
         "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
         "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_FAN_SPEED"]
fields = [f for f, _ in GPM] + OTHER
p = sh([gpulse, "dmon", "-c", "2", "-d", "1000", "--format", "json", "-e", ",".join(fields)], timeout=60)
ours = {}
for line in p.stdout.strip().splitlines():
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if "gpu_instance_id" not in r:
        ours[r["gpu"]] = r["fields"]  # the second line wins: the NVLink rate needs two reads
if p.returncode != 0:
    print("gpulse dmon failed:", p.stderr[-500:])
q = sh(["nvidia-smi", "dmon", "-c", "1", "--gpm-metrics", ",".join(str(m) for _, m in GPM)])
theirs, header = {}, []
for line in q.stdout.splitlines():
    if line.startswith("#") and not header:
        header = line.lstrip("#").split()
    elif line.strip() and not line.startswith("#"):
        cols = line.split()
        if cols and cols[0].isdigit():
            theirs[int(cols[0])] = cols[1:]
if q.returncode != 0:
    print("nvidia-smi dmon --gpm-metrics:", (q.stderr or q.stdout).strip()[-300:])
print("nvidia-smi dmon --gpm-metrics columns:", header)
print("| gpu | field | gpulse | nvidia-smi dmon --gpm-metrics | verdict |")
print("|---|---|---|---|---|")
bad = 0
for gpu, f in sorted(ours.items()):
    # nvidia-smi prints the GPM metrics after its own gpu column, in the order asked for: percent
    # for the utilizations, MiB/s for PCIe (its header line says; check it in the output).
    row = theirs.get(gpu, [])
    extra = len(row) - len(GPM)
    for k, (name, metric) in enumerate(GPM):
        g = f.get(name)
        s = row[extra + k] if 0 <= extra and extra + k < len(row) else None
        try:
            sv = float(s)
        except (TypeError, ValueError):
            sv = None
        if g is not None and sv is not None:
            if metric < 20:
                ok = abs(g * 100 - sv) <= 10  # one second apart on a live GPU: 10 points
            else:  # gpulse says bytes per second; GPM (and nvidia-smi's column) MiB/s
                ok = abs(g / 2**20 - sv) <= max(50.0, 0.25 * sv)
            verdict = "match" if ok else "DIFFERS"
            bad += not ok
        else:
            verdict = "both n/a" if g is None and sv is None else "shown"
        gs = "n/a" if g is None else (f"{g:.3f}" if metric < 20 else f"{g:.0f}")
        print(f"| {gpu} | {name} | {gs} | {s if s is not None else 'n/a'} | {verdict} |")
    for name in OTHER:
        v = f.get(name)
        print(f"| {gpu} | {name} | {'n/a' if v is None else f'{v:.0f}'} | | |")

pci = sh(["nvidia-smi", "-q", "-d", "PCI"]).stdout
print("\n-- nvidia-smi -q -d PCI (throughput lines)")
for line in pci.splitlines():
    if re.search(r"(Tx|Rx) Throughput", line):
        print(line.strip())
perf = sh(["nvidia-smi", "-q", "-d", "PERFORMANCE"]).stdout
print("-- nvidia-smi -q -d PERFORMANCE (event reason counters)")
for line in perf.splitlines():
    if re.search(r"Capping|Slowdown|Braking|Sync Boost|Counters", line):
        print(line.strip())
links = sh(["nvidia-smi", "nvlink", "-s"]).stdout
print("-- nvidia-smi nvlink -s:", sum(1 for l in links.splitlines() if re.search(r"Link \d+:", l)), "link lines")

bench = os.path.join(os.environ["BIN"], "tick_bench")
if os.access(bench, os.X_OK):
    r = sh([bench, "--benchmark_filter=BM_TickProfiling", "--benchmark_format=json",
            "--benchmark_min_time=0.3"], timeout=60)
    try:
        for b in json.loads(r.stdout)["benchmarks"]:
            print(f"{b['name']}: {b['ns_per_device_tick']/1000:.2f} us per device tick ({b['fields']:.0f} fields)")
    except Exception:
        print("tick_bench BM_TickProfiling failed:", r.stderr[-300:])
print(f"\n{bad} profiling ratio(s) differ beyond tolerance")
PY
prof_rc=$?

echo
echo "== identity: a CUDA process found by gpulse ps and devices --visible --env-from"
hold="$bin/cuda_hold"
if [ ! -x "$hold" ]; then
  echo "identity: $hold not found; skipped"
  [ "$field_rc" -eq 0 ] && [ "$prof_rc" -eq 0 ]
  exit
fi
target_uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | tail -n 1 | tr -d ' ')
target_index=$(nvidia-smi --query-gpu=index --format=csv,noheader | tail -n 1 | tr -d ' ')
out=$(mktemp)
CUDA_VISIBLE_DEVICES="$target_uuid" CUDA_DEVICE_ORDER=FASTEST_FIRST "$hold" 40 256 >"$out" 2>&1 &
hold_pid=$!
for _ in $(seq 1 100); do grep -q '^ready' "$out" && break; kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.2; done
if ! grep -q '^ready' "$out"; then
  echo "identity: cuda_hold did not start: $(cat "$out")"
  kill "$hold_pid" 2>/dev/null; rm -f "$out"
  exit 1
fi
sleep 2  # give the driver a utilization sample
echo "cuda_hold pid $hold_pid, CUDA_VISIBLE_DEVICES=$target_uuid (GPU $target_index)"
echo "-- nvidia-smi --query-compute-apps"; nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv
echo "-- gpulse ps"; timeout 60 "$gpulse" ps -l
timeout 60 "$gpulse" ps --json >"$out.ps" 2>"$out.ps.err"; ps_rc=$?
timeout 60 "$gpulse" devices --visible --env-from "$hold_pid" --json >"$out.vis"; vis_rc=$?
echo "-- gpulse devices --visible --env-from $hold_pid"; timeout 60 "$gpulse" devices --visible --env-from "$hold_pid"
HOLD_PID="$hold_pid" TARGET_UUID="$target_uuid" TARGET_INDEX="$target_index" PS_JSON="$out.ps" \
VIS_JSON="$out.vis" PS_RC="$ps_rc" VIS_RC="$vis_rc" timeout 60 python3 - <<'PY'
import json, os, subprocess
pid, uuid, index = int(os.environ["HOLD_PID"]), os.environ["TARGET_UUID"], int(os.environ["TARGET_INDEX"])
bad = 0
def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad += not ok
check(os.environ["PS_RC"] == "0", "gpulse ps exits 0")
ps = json.load(open(os.environ["PS_JSON"]))
rows = [p for p in ps["processes"] if p["pid"] == pid]
check(len(rows) == 1, f"gpulse ps lists pid {pid} once")
if rows:
    r = rows[0]
    check(r["gpu"]["uuid"] == uuid and r["gpu"]["index"] == index, f"on GPU {index} ({r['gpu']})")
    check(r["name"] == "cuda_hold", f"named cuda_hold ({r['name']})")
    mem = r["used_memory_bytes"]
    check(mem is not None and mem >= 256 * 2**20, f"with at least 256 MiB ({mem})")
    smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    smi_mem = {int(a): int(b) for a, b in (l.split(",") for l in smi.strip().splitlines() if l.strip())}
    check(pid in smi_mem and mem is not None and abs(smi_mem[pid] - mem / 2**20) <= 2,
          f"memory matches nvidia-smi ({smi_mem.get(pid)} MiB)")
    print("     source:", [d["source"] for d in ps["devices"] if d["index"] == index])
    print("     sm_util:", r["sm_util"], "container:", r["container"], "pod:", r["pod"])
check(os.environ["VIS_RC"] == "0", "gpulse devices --visible --env-from exits 0")
vis = json.load(open(os.environ["VIS_JSON"]))
check(vis["environment"]["CUDA_VISIBLE_DEVICES"] == uuid, "reads the process's CUDA_VISIBLE_DEVICES")
check([o["index"] for o in vis["ordinals"]] == [index], f"CUDA device 0 is GPU {index} ({vis['ordinals']})")
print(f"{bad} identity check(s) failed")
raise SystemExit(1 if bad else 0)
PY
id_rc=$?
kill "$hold_pid" 2>/dev/null; wait "$hold_pid" 2>/dev/null
rm -f "$out" "$out.ps" "$out.ps.err" "$out.vis"
[ "$field_rc" -eq 0 ] && [ "$prof_rc" -eq 0 ] && [ "$id_rc" -eq 0 ]
