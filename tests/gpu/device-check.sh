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
# the cost of one gpulse tick through the real driver next to one `nvidia-smi --query-gpu` call.
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
ours = {r["gpu"]: r["fields"] for r in rows}
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
