#!/usr/bin/env python3
"""bench/run.sh identity: device identity's costs, from identity_bench's JSON (bench/identity_bench.cc),
as the table "Device identity" of bench/RESULTS.md.

What it measures: one CUDA_VISIBLE_DEVICES resolution on 8 GPUs (BM_ResolveCuda); the attribution of
one PID to its name, uid, cgroup, container and pod from a procfs fixture (BM_AttributeProcess); one
device's process list and utilization as `gpulse ps` reads it through the simulator
(BM_ProcessList/gpulse) beside the same NVML calls alone (BM_ProcessList/calls): gpulse's share is the
difference. gpulse's figures are CPU time per call (or per device).
Anchors: spawn+reap `cat PID/cgroup` in the same run (BM_CatCgroupAnchor, wall), and the *published*
cost of one nvmlDeviceGetGraphicsRunningProcesses on a real driver (4,491 µs).
Runs: the benchmark's repetitions (bench/run.sh: 5): medians with the min–max; ratios pair repetition
k with repetition k. Time: about 30 s. Usage: identity_report.py IDENTITY.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gbench import load, pairs  # noqa: E402
from results import Table, ratio, spread  # noqa: E402

PUBLISHED_GRAPHICS_PROCESSES_US = 4491  # MangoHud#2104, research/vendors.md section 2


def main():
    b = load(sys.argv[1])
    resolve = b.time("BM_ResolveCuda", "cpu_time")
    attr = b.time("BM_AttributeProcess", "cpu_time")
    cat = b.time("BM_CatCgroupAnchor", "real_time")
    plist = b.values("BM_ProcessList/gpulse", "ns_per_device", 1e9)  # CPU seconds per device -> ns
    calls = b.values("BM_ProcessList/calls", "ns_per_device", 1e9)
    share = pairs(plist, calls, lambda p, c: max(p - c, 1.0))
    us = lambda v: spread([x / 1e3 for x in v], "{:,.1f}", " µs")

    t = Table("Device identity: mask resolution, process attribution, process lists (issue 3)",
              "bash bench/run.sh identity",
              "gpulse's figures are CPU time (medians of the repetitions, min–max in brackets); ratios pair "
              "repetition k with repetition k of the anchor.")
    t.row("resolve `CUDA_VISIBLE_DEVICES`, 8 GPUs, 4 entries, FASTEST_FIRST proof", us(resolve), "", "", "",
          "none stated")
    t.row("attribute one PID (comm, status, cgroup → container, pod)", us(attr), "spawn+reap `cat PID/cgroup`, wall",
          spread([c / 1e3 for c in cat], "{:,.0f}", " µs"), ratio(pairs(cat, attr, lambda c, a: c / a), "{:,.0f}"),
          "none stated")
    t.row(f"one device's process list + utilization, gpulse's share (gpulse + simulator "
          f"{spread(plist, '{:,.0f}', ' ns')}, the same NVML calls alone {spread(calls, '{:,.0f}', ' ns')})",
          spread(share, "{:,.0f}", " ns"), "*published*: one `nvmlDeviceGetGraphicsRunningProcesses` on a real driver",
          f"{PUBLISHED_GRAPHICS_PROCESSES_US:,} µs",
          ratio([PUBLISHED_GRAPHICS_PROCESSES_US * 1e3 / s for s in share], "{:,.0f}"), "none stated")
    t.print()


if __name__ == "__main__":
    main()
