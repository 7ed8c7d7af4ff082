"""bench/run.sh vendors (bench/vendors/run.sh): one AMD or Intel device's tick from sysfs beside one
rocm-smi call, as the table "AMD and Intel GPUs" of bench/RESULTS.md.

What it measures: vendor_tick_bench's JSON of the same run (one device's full tick through the amdgpu,
i915 and xe backends on the fixture trees, real pread calls on real files, and through the NVML
simulator: CPU time per device, one value per repetition), and here the anchor: one
`rocm-smi --showuse --showpower --showmeminfo vram` call on the RX 7900 fixture, run as
`unshare -m sh -c 'mount --bind TREE /sys && exec rocm-smi …'`. The same command with `true` instead
of rocm-smi runs between the calls and its median is subtracted, so the figure is rocm-smi's own
call: wall time and CPU time (user + system of the children).
Runs: --calls rocm-smi calls (default 5, at least 3); call k pairs with tick repetition k (cyclically
when the counts differ) for the ratios; medians with the min–max. Time: about 10 s here (each call
about 0.5 s), plus the benchmark (about 30 s). Needs root (unshare -m) and rocm-smi.
Usage: report.py --ticks TICK.json --fixtures tests/testdata/sysfs [--calls N]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gbench import load  # noqa: E402
from results import Table, judge, ratio, spread  # noqa: E402

ROCM = "rocm-smi --showuse --showpower --showmeminfo vram"
TICKS = (("BM_VendorTick/amdgpu-rx7900", "gpulse, amdgpu, RX 7900 fixture (every field amdgpu gives)", True),
         ("BM_VendorTick/amdgpu-mi300x", "gpulse, amdgpu, MI300X fixture", True),
         ("BM_VendorTick/intel-i915", "gpulse, i915, Arc A770 fixture", True),
         ("BM_VendorTick/intel-xe", "gpulse, xe, B580 fixture", True),
         ("BM_VendorTick/nvml-sim", "gpulse, NVML simulator, 1xH200 (full catalogue)", False))


def timed(tree, command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind "$0" /sys && exec {command}', tree],
                       capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if command != "true" and "GPU use" not in p.stdout:
        raise SystemExit(f"rocm-smi did not read {tree}: {p.stdout}{p.stderr}")
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--calls", type=int, default=5)
    a = ap.parse_args()
    calls = max(a.calls, 3)
    b = load(a.ticks)
    tree = os.path.join(os.path.abspath(a.fixtures), "rx7900")

    timed(tree, ROCM)  # warm-up: Python's and rocm-smi's files into the page cache
    setup, smi = [], []
    for _ in range(calls):  # interleaved: load from elsewhere falls on both alike
        setup.append(timed(tree, "true"))
        smi.append(timed(tree, ROCM))
    setup_wall = statistics.median(w for w, _ in setup)
    setup_cpu = statistics.median(c for _, c in setup)
    smi_wall_us = [(w - setup_wall) * 1e6 for w, _ in smi]
    smi_cpu_us = [(c - setup_cpu) * 1e6 for _, c in smi]

    def per_call(tick_us, anchor_us):  # call k beside tick repetition k
        return [anchor_us[k] / tick_us[k % len(tick_us)] for k in range(len(anchor_us))]

    ms = lambda v: spread([x / 1e3 for x in v], "{:,.1f}", " ms")
    t = Table("AMD and Intel GPUs: one device's tick from sysfs beside one rocm-smi call (issue 19)",
              "bash bench/run.sh vendors" if a.calls == 5 else f"bash bench/vendors/run.sh BUILD --calls {a.calls}",
              "One device's full tick through its backend, with its real `pread` calls on the fixture's files "
              "(CPU time per tick, medians of the benchmark's repetitions). The anchor is one `rocm-smi --showuse "
              f"--showpower --showmeminfo vram` call on the RX 7900 fixture ({calls} calls, interleaved with as "
              f"many of the same `unshare` + bind mount + `exec true`, whose median, {setup_wall * 1e3:.1f} ms "
              "wall, is subtracted); a ratio pairs call k with tick repetition k. Debian's rocm-smi, as root.")
    for k, (name, label, targets) in enumerate(TICKS):
        if not b.has(name):
            continue
        tick = b.values(name, "ns_per_device_tick", 1e6)  # CPU seconds per device -> µs
        wall_r, cpu_r = per_call(tick, smi_wall_us), per_call(tick, smi_cpu_us)
        target = ""
        if targets:
            target = (judge(cpu_r, ">=", 1000, "≥ 1,000× cheaper (CPU)") + "; " +
                      judge(tick, "<=", 20, "≤ 20 µs per device"))
        t.row(label, spread(tick, "{:.1f}", " µs"),
              "rocm-smi call, wall / CPU (user + system)" if k == 0 else "as above",
              f"{ms(smi_wall_us)} / {ms(smi_cpu_us)}",
              f"{ratio(wall_r, '{:,.0f}')} / {ratio(cpu_r, '{:,.0f}')}", target)
    t.print()


if __name__ == "__main__":
    main()
